//! `Validator::examine` then `Validator::settle` against `Validator::validate`: the same
//! verdicts for thousands of seeded claims (honest, nudged, replayed, too fast, and
//! malformed), however far ahead of settling the claims were examined, and a shot examined
//! under another configuration is refused as stale with nothing changed.

use crate::fixture;
use crate::fixture::{HEAD, Role, Scene, Script, Shot};
use lagcomp::{EntityId, HitboxId, Tick, Vec3};
use lagcomp_validate::validator::StaleShot;
use lagcomp_validate::{
    ClaimedHit, ClientTiming, RenderTime, ShooterReference, ShotClaim, TimeMismatch, Validator,
    WeaponId,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The skirmish with a dodge and a death, so that claims also meet targets that cannot
/// be hit.
fn skirmish() -> Scene {
    Scene::with(
        Script::default()
            .dodges(Role::Alpha, 44..=47)
            .dies(Role::Bravo, 58),
    )
}

/// A value that breaks arithmetic.
fn broken(rng: &mut Pcg64Mcg) -> f32 {
    [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e20, 0.0][rng.random_range(0..5)]
}

/// One claim: an honest shot, nudged, with a sequence number from a small range (so
/// some are replays), arriving early or late (so some break the fire rate), and now and
/// then one field spoiled.
fn claim(rng: &mut Pcg64Mcg, honest: &[Shot], ids: &[EntityId]) -> (ShotClaim, f64) {
    let shot = honest[rng.random_range(0..honest.len())];
    let mut claim = shot.claim;
    let nudge = Vec3::new(
        rng.random_range(-0.3..0.3),
        rng.random_range(-0.3..0.3),
        0.0,
    );
    claim.direction = shot.aim_point + nudge - claim.origin;
    claim.origin.y += rng.random_range(-0.1..0.1);
    claim.seq = rng.random_range(0..24);
    if rng.random_bool(0.2) {
        claim.hit = None;
    }
    let mut received_at = shot.received_at + rng.random_range(-0.08..0.08);
    match rng.random_range(0..14) {
        0 => claim.direction = Vec3::new(broken(rng), 0.0, -1.0),
        1 => claim.origin.x = broken(rng),
        2 => claim.direction = Vec3::ZERO,
        3 => claim.shooter = EntityId::from_bits(rng.random()),
        4 => {
            if let Some(hit) = &mut claim.hit {
                hit.target = EntityId::from_bits(rng.random());
            }
        }
        5 => claim.weapon = WeaponId(rng.random_range(0..5)),
        // Outside the window on either side, or a tick never recorded.
        6 => claim.render_time = RenderTime::Time(rng.random_range(-1.0..3.0)),
        7 => {
            let from = Tick(rng.random_range(0..200));
            claim.render_time = RenderTime::Ticks {
                from,
                to: Tick(from.0 + rng.random_range(0..3)),
                fraction: rng.random_range(-0.2..1.2),
            };
        }
        8 => received_at = f64::from(broken(rng)),
        9 => {
            if let Some(hit) = &mut claim.hit {
                hit.hitbox = Some(HitboxId(rng.random_range(0..10)));
                hit.point = hit.point.map(|p| p + nudge);
            }
        }
        10 => {
            claim.hit = Some(ClaimedHit {
                target: ids[rng.random_range(0..ids.len())],
                hitbox: None,
                point: Some(shot.aim_point + nudge),
            });
        }
        _ => {}
    }
    (claim, received_at)
}

/// The scene's validator, with the shooter's timing and the policy varied by `variant`.
fn validator(scene: &Scene, variant: u8) -> Validator {
    let mut v = scene.validator();
    let mut rules = v.rules().clone();
    if variant & 1 != 0 {
        rules.policy.time_mismatch = TimeMismatch::UseServerEstimate;
    }
    if variant & 2 != 0 {
        rules.policy.shooter_reference = ShooterReference::Arrival;
    }
    v.set_rules(rules);
    if variant & 4 != 0 {
        v.set_timing(
            scene.id(Role::Alpha),
            ClientTiming {
                srtt: 0.2,
                rttvar: 0.02,
                interp_delay: 0.05,
            },
        )
        .expect("a valid timing");
    }
    v
}

/// Debug text, so that NaN fields compare equal to themselves.
fn text<T: std::fmt::Debug>(value: &T) -> String {
    format!("{value:?}")
}

#[test]
fn examined_ahead_and_settled_in_order_gives_the_verdicts_of_validate() {
    let mut rng = Pcg64Mcg::seed_from_u64(0x5e771e);
    let early = skirmish();
    let honest = early.honest_shots(&[0.55, 0.66, 0.75, 0.82, 0.9]);
    let ids: Vec<EntityId> = Role::ALL.map(|r| early.id(r)).to_vec();
    let mut later = early.clone();
    later.advance_to(early.newest() + 0.1);
    let mut outcomes = std::collections::BTreeMap::new();
    for variant in 0..8 {
        let mut one_by_one = validator(&early, variant);
        let mut in_halves = validator(&early, variant);
        // Half of the claims against the history as it was, half against it a few ticks
        // later, each examined long before it is settled.
        let claims: Vec<(ShotClaim, f64, &Scene)> = (0..600)
            .map(|i| {
                let (claim, at) = claim(&mut rng, &honest, &ids);
                (claim, at, if i % 2 == 0 { &early } else { &later })
            })
            .collect();
        let examined: Vec<_> = claims
            .iter()
            .rev()
            .map(|(claim, at, scene)| in_halves.examine(&scene.history, claim, *at))
            .collect();
        for ((claim, at, scene), shot) in claims.iter().zip(examined.into_iter().rev()) {
            assert_eq!(text(shot.claim()), text(claim));
            let expected = one_by_one.validate(&scene.history, claim, *at);
            let settled = in_halves.settle(shot).expect("same configuration");
            assert_eq!(text(&settled), text(&expected), "claim {claim:?} at {at}");
            *outcomes.entry(expected.outcome.label()).or_insert(0) += 1;
        }
    }
    // The claims reached every stage: confirmed hits, misses, and rejections from the
    // first checks to the last.
    for label in [
        "confirmed",
        "miss",
        "non_finite",
        "unknown_shooter",
        "replayed",
        "fire_rate",
        "time_too_old",
        "time_in_future",
        "tampered_claim",
    ] {
        assert!(
            outcomes.get(label).copied().unwrap_or(0) > 0,
            "no {label} among {outcomes:?}"
        );
    }
}

#[test]
fn a_shot_examined_under_another_configuration_is_stale_and_changes_nothing() {
    let scene = skirmish();
    let shot = scene.shoot(Role::Alpha, HEAD, 0.8);
    let fresh = || scene.validator();

    // Timing changed between examining and settling.
    let mut v = fresh();
    let examined = v.examine(&scene.history, &shot.claim, shot.received_at);
    v.set_timing(scene.id(Role::Shooter), fixture::timing())
        .expect("a valid timing");
    assert_eq!(
        v.settle(examined.clone()),
        Err(StaleShot {
            claim: shot.claim,
            received_at: shot.received_at
        })
    );
    // The refused settle used up nothing: the claim is confirmed, not a replay.
    let verdict = scene.judge(&mut v, &shot);
    fixture::confirmed(
        &verdict,
        scene.id(Role::Alpha),
        HEAD,
        lagcomp::Zone::Head,
        4.0,
    );

    // Another validator with equal rules and players is still another configuration...
    let mut other = fresh();
    assert!(other.settle(examined).is_err());
    // ...and every change counts, even one that leaves the values as they were.
    for change in 0..3 {
        let mut v = fresh();
        let examined = v.examine(&scene.history, &shot.claim, shot.received_at);
        match change {
            0 => v.set_rules(v.rules().clone()),
            1 => v.register(scene.id(Role::Bravo), fixture::participant(Role::Bravo)),
            _ => v.forget(scene.id(Role::Bravo)),
        }
        assert!(v.settle(examined).is_err(), "change {change}");
    }
    // Invalid timing is refused, so it changes nothing.
    let mut v = fresh();
    let examined = v.examine(&scene.history, &shot.claim, shot.received_at);
    let refused = v.set_timing(
        scene.id(Role::Shooter),
        ClientTiming {
            srtt: f64::NAN,
            rttvar: 0.0,
            interp_delay: 0.0,
        },
    );
    assert!(refused.is_err());
    assert!(v.settle(examined).is_ok());

    // A clone has the same configuration: it settles what the original examined.
    let v = fresh();
    let examined = v.examine(&scene.history, &shot.claim, shot.received_at);
    let mut twin = v.clone();
    let verdict = twin.settle(examined).expect("same configuration");
    assert_eq!(
        verdict,
        fresh().validate(&scene.history, &shot.claim, shot.received_at)
    );
}
