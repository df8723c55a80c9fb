//! Properties of the validator over arbitrary claims: it never panics, never changes the
//! history it reads, and gives the same verdicts to the same inputs from a clone.
//!
//! Claims mix three kinds so that every check is reached: honest shots from the fixture's
//! skirmish with some fields replaced by arbitrary values, honest shots nudged a little
//! (which reach the trace and the leeway), and claims made of arbitrary values throughout:
//! any `f64` and `f32` including NaN, infinities, zeros and extremes, any entity ids,
//! ticks, weapons and sequence numbers.

use crate::fixture;
use crate::fixture::{LAST_TICK, Role, Scene, Script, Shot};
use lagcomp::{EntityId, HitboxId, Ray, RewindTarget, Tick, Vec3, WindowPolicy};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, RenderTime, ShooterReference, ShotClaim, TimeMismatch, Validator,
    WeaponId,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn config() -> Config {
    Config {
        cases: 300,
        // Keep failures out of the source tree; the failing input is printed instead.
        failure_persistence: None,
        ..Config::default()
    }
}

/// Any `f64`, with the values that break arithmetic and times near the recorded second
/// well represented.
fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => proptest::num::f64::ANY,
        1 => prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            1e12,
            -1e12,
        ]),
        4 => -0.5..2.0_f64,
    ]
}

/// Any `f32`, likewise, with coordinates near the skirmish well represented.
fn coordinate() -> impl Strategy<Value = f32> {
    prop_oneof![
        2 => proptest::num::f32::ANY,
        1 => prop::sample::select(vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e6,
            -1e6,
            1e20,
            1e-25,
        ]),
        4 => -30.0..30.0_f32,
    ]
}

fn vector() -> impl Strategy<Value = Vec3> {
    (coordinate(), coordinate(), coordinate()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

/// The skirmish's players, or any id at all.
fn entity(ids: Vec<EntityId>) -> impl Strategy<Value = EntityId> {
    prop_oneof![
        3 => prop::sample::select(ids),
        1 => any::<u64>().prop_map(EntityId::from_bits),
    ]
}

fn tick() -> impl Strategy<Value = Tick> {
    prop_oneof![
        3 => 0..LAST_TICK + 8,
        1 => any::<u32>(),
    ]
    .prop_map(Tick)
}

fn render_time() -> impl Strategy<Value = RenderTime> {
    prop_oneof![
        number().prop_map(RenderTime::Time),
        (
            tick(),
            tick(),
            prop_oneof![0.0..=1.0_f32, proptest::num::f32::ANY]
        )
            .prop_map(|(from, to, fraction)| RenderTime::Ticks { from, to, fraction }),
    ]
}

fn claimed_hit(ids: Vec<EntityId>) -> impl Strategy<Value = Option<ClaimedHit>> {
    proptest::option::of((
        entity(ids),
        proptest::option::of(prop_oneof![0..8_u16, any::<u16>()].prop_map(HitboxId)),
        proptest::option::of(vector()),
    ))
    .prop_map(|hit| {
        hit.map(|(target, hitbox, point)| ClaimedHit {
            target,
            hitbox,
            point,
        })
    })
}

/// A claim of arbitrary values.
fn any_claim(ids: Vec<EntityId>) -> impl Strategy<Value = ShotClaim> {
    (
        entity(ids.clone()),
        prop_oneof![0..4_u16, any::<u16>()].prop_map(WeaponId),
        prop_oneof![0..16_u32, any::<u32>()],
        render_time(),
        vector(),
        vector(),
        claimed_hit(ids),
    )
        .prop_map(
            |(shooter, weapon, seq, render_time, origin, direction, hit)| ShotClaim {
                shooter,
                weapon,
                seq,
                render_time,
                origin,
                direction,
                hit,
            },
        )
}

/// An honest shot with the fields picked by `mask` taken from `other`.
fn mixed(honest: &Shot, mask: u8, other: &ShotClaim, received_at: f64) -> (ShotClaim, f64) {
    let pick = |bit: u8| mask & (1 << bit) != 0;
    let mut claim = honest.claim;
    if pick(0) {
        claim.shooter = other.shooter;
    }
    if pick(1) {
        claim.weapon = other.weapon;
    }
    if pick(2) {
        claim.seq = other.seq;
    }
    if pick(3) {
        claim.render_time = other.render_time;
    }
    if pick(4) {
        claim.origin = other.origin;
    }
    if pick(5) {
        claim.direction = other.direction;
    }
    if pick(6) {
        claim.hit = other.hit;
    }
    let at = if pick(7) {
        received_at
    } else {
        honest.received_at
    };
    (claim, at)
}

/// One claim and when it arrived.
fn shot(scene: &Scene) -> impl Strategy<Value = (ShotClaim, f64)> {
    let ids: Vec<EntityId> = Role::ALL.map(|r| scene.id(r)).to_vec();
    let honest = scene.honest_shots(&[0.52, 0.64, 0.75, 0.8, 0.93]);
    let n = honest.len();
    let honest_nudged = honest.clone();
    let honest_mixed = honest;
    prop_oneof![
        // Honest, nudged in aim, muzzle, arrival and sequence number, with or without
        // the claimed hit.
        3 => (
            0..n,
            -0.3..0.3_f32,
            -0.3..0.3_f32,
            -0.1..0.1_f64,
            0..64_u32,
            any::<bool>(),
        )
            .prop_map(move |(i, across, up, late, seq, claimed)| {
                let s = &honest_nudged[i];
                let mut claim = s.claim;
                claim.direction = s.aim_point + Vec3::new(across, up, 0.0) - claim.origin;
                claim.origin.y += up / 4.0;
                claim.seq = seq;
                if !claimed {
                    claim.hit = None;
                }
                (claim, s.received_at + late)
            }),
        // Honest, with one field or any few arbitrary.
        3 => (
            0..n,
            prop_oneof![(0..8_u8).prop_map(|bit| 1 << bit), any::<u8>()],
            any_claim(ids.clone()),
            number(),
        )
            .prop_map(
            move |(i, mask, other, at)| mixed(&honest_mixed[i], mask, &other, at)
        ),
        // Arbitrary throughout.
        1 => (any_claim(ids), number()),
    ]
}

/// The skirmish, with alpha dodging for a few ticks and bravo killed near the end, so
/// that claims also meet targets that cannot be hit.
fn skirmish() -> Scene {
    Scene::with(
        Script::default()
            .dodges(Role::Alpha, 44..=47)
            .dies(Role::Bravo, 58),
    )
}

/// A run of claims against one validator, with its timing and policy varied.
#[derive(Debug, Clone)]
struct Case {
    /// No player's connection has been measured yet.
    unmeasured: bool,
    /// Replaces the shooter's measured timing (refused when invalid).
    timing: Option<ClientTiming>,
    estimate: bool,
    at_arrival: bool,
    shots: Vec<(ShotClaim, f64)>,
}

fn case(scene: &Scene) -> impl Strategy<Value = Case> {
    (
        prop::bool::weighted(0.1),
        proptest::option::of((number(), number(), number()).prop_map(
            |(srtt, rttvar, interp_delay)| ClientTiming {
                srtt,
                rttvar,
                interp_delay,
            },
        )),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(shot(scene), 1..8),
    )
        .prop_map(|(unmeasured, timing, estimate, at_arrival, shots)| Case {
            unmeasured,
            timing,
            estimate,
            at_arrival,
            shots,
        })
}

/// The scene's validator with the case's timing and policy.
fn validator(scene: &Scene, case: &Case) -> Validator {
    let mut v = if case.unmeasured {
        let mut v = Validator::new(fixture::rules());
        for role in Role::ALL {
            v.register(scene.id(role), fixture::participant(role));
        }
        v
    } else {
        scene.validator()
    };
    if let Some(timing) = case.timing {
        // An invalid one is refused and changes nothing, as before any was set.
        let _refused = v.set_timing(scene.id(Role::Shooter), timing);
    }
    let mut rules = v.rules().clone();
    if case.estimate {
        rules.policy.time_mismatch = TimeMismatch::UseServerEstimate;
    }
    if case.at_arrival {
        rules.policy.shooter_reference = ShooterReference::Arrival;
    }
    v.set_rules(rules);
    v
}

/// Everything observable about the history: its window, walls and entities, every
/// player's bones and hitboxes at several moments, and traces across the skirmish.
fn fingerprint(scene: &Scene) -> String {
    let h = &scene.history;
    let mut out = format!(
        "{:?} {:?} {:?} {} {:?}\n",
        h.span(),
        h.window(),
        h.newest_tick(),
        h.entity_count(),
        h.statics()
    );
    let moments = [
        RewindTarget::Time(0.5),
        RewindTarget::Time(0.77),
        RewindTarget::Time(1.0),
        RewindTarget::between(Tick(40), Tick(41), 0.3),
        RewindTarget::between(Tick(50), Tick(60), 0.9),
    ];
    for role in Role::ALL {
        let id = scene.id(role);
        out += &format!(
            "{:?} {:?}\n",
            h.present_state(id),
            h.rig(id).map(|r| r.hitboxes().len())
        );
        for moment in moments {
            let at = h
                .entity_at(id, moment, WindowPolicy::Reject)
                .expect("inside the window")
                .expect("recorded");
            out += &format!("{:?} {:?}", at.sample(), at.state());
            for bone in 0..8 {
                out += &format!(" {:?}", at.bone(bone));
            }
            for hitbox in 0..7 {
                out += &format!(" {:?}", at.hitbox(HitboxId(hitbox)));
            }
            out += "\n";
        }
    }
    for moment in moments {
        for x in [-3.0, -1.0, 0.0, 1.0, 2.5] {
            for y in [0.9, 1.3, 1.66] {
                let ray = Ray::new(
                    Vec3::new(0.0, 1.68, 0.0),
                    Vec3::new(x, y - 1.68, -25.0),
                    100.0,
                )
                .expect("valid ray");
                out += &format!("{:?}\n", h.query(moment).ray(&ray));
            }
        }
    }
    out
}

#[test]
fn never_panics_and_never_changes_the_history() {
    let scene = skirmish();
    let before = fingerprint(&scene);
    let whole = format!("{:?}", scene.history);
    let mut runner = TestRunner::new(config());
    runner
        .run(&case(&scene), |case| {
            let mut v = validator(&scene, &case);
            for (claim, received_at) in &case.shots {
                let verdict = v.validate(&scene.history, claim, *received_at);
                prop_assert_eq!(verdict.seq, claim.seq);
                prop_assert_eq!(verdict.basis.received_at.to_bits(), received_at.to_bits());
            }
            prop_assert!(
                fingerprint(&scene) == before,
                "the history's answers changed"
            );
            prop_assert!(
                format!("{:?}", scene.history) == whole,
                "the history changed"
            );
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_clone_gives_the_same_verdicts() {
    let scene = skirmish();
    let mut runner = TestRunner::new(config());
    runner
        .run(&(case(&scene), 0..4_usize), |(case, warm_up)| {
            // Some claims first, so the clone carries sequence numbers and recent shots.
            let mut v = validator(&scene, &case);
            let warm_up = warm_up.min(case.shots.len());
            for (claim, received_at) in &case.shots[..warm_up] {
                v.validate(&scene.history, claim, *received_at);
            }
            let mut twin = v.clone();
            for (claim, received_at) in &case.shots[warm_up..] {
                // Debug text, so that NaN fields compare equal to themselves.
                let ours = format!("{:?}", v.validate(&scene.history, claim, *received_at));
                let theirs = format!("{:?}", twin.validate(&scene.history, claim, *received_at));
                prop_assert_eq!(ours, theirs);
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
