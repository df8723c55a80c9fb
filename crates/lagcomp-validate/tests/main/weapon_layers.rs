//! Per-weapon layers: which layers a weapon's shot can hit (`hit_layers`) and which stop it
//! (`blocked_by`), from the rule file. A fence (a static piece) that stops players but not
//! bullets, and a pane of glass (a blocker entity) that a sniper round passes.

use std::sync::Arc;

use lagcomp::{
    Blocker, BoneTransform, EntityId, EntityRole, EntityState, History, HistoryConfig, Hitbox,
    Pose, Rig, Shape, Tick, Vec3, Zone,
};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RejectReason, RenderTime, RuleSet, ShotClaim, Validator,
    VerdictOutcome, WeaponId,
};

const RATE: f64 = 64.0;
const HEAD: f32 = 0.12;
const GLASS: u32 = 2;
const FENCE: u32 = 4;
const TIMING: ClientTiming = ClientTiming {
    srtt: 0.1,
    rttvar: 0.005,
    interp_delay: 0.1,
};

/// A weapon's TOML table: hitscan, 100 m, ten shots a second, the usual tolerances and a
/// 0.5 s rewind, and `extra` lines (its layer masks).
pub(crate) fn weapon(name: &str, id: u16, extra: &str) -> String {
    format!(
        "[weapons.{name}]\nid = {id}\nmax_range = 100.0\nmin_interval = 0.1\n\
         aim_tolerance_deg = 10.0\norigin_tolerance = 0.5\nhit_leeway = 1.25\n\
         hit_leeway_min = 0.05\nmax_rewind = 0.5\n{extra}\n"
    )
}

/// The weapons: a rifle stopped by everything (no masks: an old rule file), an SMG whose
/// rounds pass the fence, a sniper rifle whose rounds pass the fence and the glass, and a
/// stun gun that only hits layer 8 (no player).
fn rules() -> String {
    [
        weapon("rifle", 1, ""),
        weapon("smg", 2, "blocked_by = 0xfffffffb"),
        weapon("sniper", 3, "blocked_by = 0xfffffff9"),
        weapon("stun", 4, "hit_layers = 8"),
    ]
    .concat()
}

/// What stands between the shooter (z = 10, looking -z) and the target (z = -10).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Between {
    /// A pane of glass: a blocker entity on layer [`GLASS`] at z = 0.
    Glass,
    /// A fence: a static piece on layer [`FENCE`] at z = -5.
    Fence,
}

struct Range {
    history: History,
    validator: Validator,
    shooter: EntityId,
    target: EntityId,
    glass: EntityId,
}

fn range(between: Between) -> Range {
    let mut history = History::new(HistoryConfig {
        tick_rate: RATE,
        max_rewind: 0.5,
    })
    .unwrap();
    let ball = || {
        Arc::new(
            Rig::rigid(vec![Hitbox::new(
                0,
                "head",
                Zone::Head,
                0,
                Shape::sphere(HEAD),
            )])
            .unwrap(),
        )
    };
    let pane = Rig::rigid(vec![Hitbox::new(
        0,
        "pane",
        Zone::Custom(1),
        0,
        Shape::cuboid(Vec3::new(2.0, 2.0, 0.01)),
    )])
    .unwrap();
    let shooter = history.spawn(ball());
    let target = history.spawn(ball());
    let glass = history.spawn_as(Arc::new(pane), EntityRole::Blocker);
    if between == Between::Fence {
        history
            .add_static(
                Shape::cuboid(Vec3::new(2.0, 2.0, 0.05)),
                Pose::from_translation(Vec3::new(0.0, 0.0, -5.0)),
                FENCE,
            )
            .unwrap();
    }
    for tick in 0..40 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / RATE)
            .unwrap();
        let at = |z: f32| BoneTransform::from_translation(Vec3::new(0.0, 0.0, z));
        frame
            .record_rigid(shooter, at(10.0), EntityState::default())
            .unwrap();
        frame
            .record_rigid(target, at(-10.0), EntityState::default())
            .unwrap();
        // The pane stands in the line only in the glass range (elsewhere, far aside).
        let pane_at = match between {
            Between::Glass => BoneTransform::from_translation(Vec3::ZERO),
            Between::Fence => BoneTransform::from_translation(Vec3::new(50.0, 0.0, 0.0)),
        };
        let on_glass = EntityState {
            layers: GLASS,
            ..EntityState::default()
        };
        frame.record_rigid(glass, pane_at, on_glass).unwrap();
    }
    let mut validator = Validator::new(RuleSet::from_toml(&rules()).unwrap());
    for (entity, team, forward) in [(shooter, 1, Vec3::NEG_Z), (target, 2, Vec3::Z)] {
        validator.register(
            entity,
            Participant {
                team,
                aim_bone: 0,
                aim_forward: forward,
            },
        );
    }
    validator.set_timing(shooter, TIMING).unwrap();
    Range {
        history,
        validator,
        shooter,
        target,
        glass,
    }
}

impl Range {
    fn fire(&self, weapon: u16, claim: bool) -> VerdictOutcome {
        let render = 20.0 / RATE;
        let shot = ShotClaim {
            shooter: self.shooter,
            weapon: WeaponId(weapon),
            seq: 1,
            render_time: RenderTime::Time(render),
            origin: Vec3::new(0.0, 0.0, 10.0),
            direction: Vec3::NEG_Z,
            hit: claim.then_some(ClaimedHit {
                target: self.target,
                hitbox: None,
                point: Some(Vec3::new(0.0, 0.0, -10.0 + HEAD)),
            }),
        };
        self.validator
            .clone()
            .validate(&self.history, &shot, render + TIMING.expected_rewind())
            .outcome
    }
}

#[test]
fn a_weapon_passes_what_its_rules_leave_out_of_blocked_by() {
    #[derive(Debug, Clone, Copy)]
    enum Expect {
        Hit,
        Glass,
        Fence,
    }
    // (what stands in the line, weapon, outcome).
    let rows = [
        // The rifle (no masks) is stopped by both.
        (Between::Glass, 1, Expect::Glass),
        (Between::Fence, 1, Expect::Fence),
        // The SMG passes the fence, not the glass.
        (Between::Fence, 2, Expect::Hit),
        (Between::Glass, 2, Expect::Glass),
        // The sniper rifle passes both.
        (Between::Fence, 3, Expect::Hit),
        (Between::Glass, 3, Expect::Hit),
    ];
    for (between, weapon, expect) in rows {
        let range = range(between);
        for claim in [true, false] {
            let what = format!("{between:?}, weapon {weapon}, claimed {claim}");
            match (expect, range.fire(weapon, claim)) {
                (Expect::Hit, VerdictOutcome::Confirmed(hit)) => {
                    assert_eq!(hit.target, range.target, "{what}");
                }
                (Expect::Glass, VerdictOutcome::Blocked { by, distance }) => {
                    assert_eq!(by, Blocker::Entity(range.glass), "{what}");
                    assert!((distance - 9.99).abs() < 1e-4, "{what}: {distance}");
                }
                (
                    Expect::Fence,
                    VerdictOutcome::Blocked {
                        by: Blocker::Wall(_),
                        distance,
                    },
                ) => assert!((distance - 14.95).abs() < 1e-4, "{what}: {distance}"),
                (expect, outcome) => panic!("{what}: expected {expect:?}, got {outcome:?}"),
            }
        }
    }
}

#[test]
fn a_weapon_hits_only_its_hit_layers() {
    let range = range(Between::Fence);
    // The stun gun sees no player: its traced shot misses (the fence, on layer 4, still
    // stops it), and a claim on the player is no hit.
    assert!(matches!(
        range.fire(4, false),
        VerdictOutcome::Blocked {
            by: Blocker::Wall(_),
            ..
        }
    ));
    assert_eq!(
        range.fire(4, true).reason(),
        Some(RejectReason::TamperedClaim)
    );
}

#[test]
fn rules_without_layer_masks_read_as_every_layer_and_write_as_before() {
    let rules = RuleSet::from_toml(&rules()).unwrap();
    let rifle = &rules.weapons["rifle"];
    assert_eq!((rifle.hit_layers, rifle.blocked_by), (u32::MAX, u32::MAX));
    let sniper = &rules.weapons["sniper"];
    assert_eq!(
        (sniper.hit_layers, sniper.blocked_by),
        (u32::MAX, !(GLASS | FENCE))
    );
    assert_eq!(rules.weapons["stun"].hit_layers, 8);
    // Written back: the masks appear only where they are not every layer.
    let written = rules.to_toml();
    assert_eq!(written.matches("blocked_by").count(), 2, "{written}");
    assert_eq!(written.matches("hit_layers").count(), 1, "{written}");
    assert_eq!(RuleSet::from_toml(&written).unwrap(), rules);
}
