//! Projectile claims: each cheat next to its honest twin, and the reasons' stable names.

use std::sync::Arc;

use lagcomp::Blocker;
use lagcomp::projectile::{ClaimedTarget, Flight};
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, HitboxId, Pose, Rig,
    Shape, StaticId, Tick, Vec3, Zone,
};

use super::*;
use crate::{ClientTiming, Participant, RuleSet};

/// 64 Hz, one second of history (ticks 0..=64): a shooter at the origin (eye 1.6 m up,
/// looking along -z), its target 10 m ahead, a bystander 5 m to the side of the target.
fn scene() -> (History, Validator, [EntityId; 3]) {
    scene_with(EntityState::default())
}

/// [`scene`], the target recorded with `state`.
fn scene_with(target_state: EntityState) -> (History, Validator, [EntityId; 3]) {
    let rig = Arc::new(
        Rig::new(
            2,
            vec![Hitbox::new(
                0,
                "body",
                Zone::Torso,
                0,
                Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)),
            )],
        )
        .unwrap(),
    );
    let bones =
        |feet: Vec3| [1.0, 1.6].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
    let mut history = History::new(HistoryConfig {
        tick_rate: 64.0,
        max_rewind: 1.0,
    })
    .unwrap();
    let ids = [(); 3].map(|()| history.spawn(Arc::clone(&rig)));
    let feet = [
        Vec3::ZERO,
        Vec3::new(0.0, 0.0, -10.0),
        Vec3::new(5.0, 0.0, -10.0),
    ];
    for tick in 0..=64 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .unwrap();
        for (i, (id, feet)) in ids.iter().zip(feet).enumerate() {
            let state = if i == 1 {
                target_state
            } else {
                EntityState::default()
            };
            frame.record(*id, &bones(feet), state).unwrap();
        }
    }
    let rules = "[weapons.rocket]\nid = 7\nmax_range = 250.0\nmin_interval = 0.5\n\
                 aim_tolerance_deg = 5.0\norigin_tolerance = 0.5\nhit_leeway = 1.25\n\
                 hit_leeway_min = 0.05\nmax_rewind = 0.35\ndamage = { torso = 2.0 }\n\
                 kind = \"projectile\"\n\
                 flight = { speed = 25.0, radius = 0.1, step = 0.015625, max_time = 3.0 }";
    let mut validator = Validator::new(RuleSet::from_toml(rules).unwrap());
    let eye = Participant {
        team: 1,
        aim_bone: 1,
        aim_forward: Vec3::NEG_Z,
    };
    validator.register(ids[0], eye);
    validator.register(ids[1], Participant { team: 2, ..eye });
    validator.register(ids[2], Participant { team: 3, ..eye });
    let timing = ClientTiming {
        srtt: 0.1,
        rttvar: 0.005,
        interp_delay: 0.1,
    };
    validator.set_timing(ids[0], timing).unwrap();
    (history, validator, ids)
}

/// A 25 m/s rocket, 10 cm in radius: the target's front face (9.7 m) is reached with its
/// centre at 9.6 m, 0.384 s in: step 24 of 1/64 s.
fn rocket() -> Flight {
    Flight::new(25.0, Vec3::ZERO, 0.0, 0.1, 1.0 / 64.0, 3.0).unwrap()
}

/// The honest claim: fired at render time 0.5 s from the eye straight at the target.
fn honest(ids: [EntityId; 3]) -> ProjectileHitClaim {
    ProjectileHitClaim {
        shooter: ids[0],
        weapon: WeaponId(7),
        seq: 0,
        render_time: RenderTime::Time(0.5),
        origin: Vec3::new(0.0, 1.6, 0.0),
        direction: Vec3::NEG_Z,
        step: 24,
        target: ClaimedTarget::Entity {
            entity: ids[1],
            hitbox: HitboxId(0),
        },
        position: Vec3::new(0.0, 1.6, -9.6),
    }
}

/// When the claim of step `step` arrives: the fire's 150 ms after 0.5 s, plus the flight.
fn arrival(step: u32) -> f64 {
    0.65 + f64::from(step) / 64.0
}

fn judge(
    history: &History,
    validator: &Validator,
    claim: &ProjectileHitClaim,
) -> ProjectileVerdict {
    validator
        .clone()
        .validate_projectile(history, None, claim, arrival(claim.step))
}

#[test]
fn an_honest_claim_is_confirmed_at_the_fire_moment_with_the_weapon_damage() {
    let (history, validator, ids) = scene();
    let verdict = judge(&history, &validator, &honest(ids));
    let ProjectileOutcome::Confirmed(hit) = verdict.outcome else {
        panic!("{verdict:?}");
    };
    assert_eq!(
        (hit.target, hit.zone, hit.damage_multiplier),
        (ids[1], Zone::Torso, 2.0)
    );
    assert!((hit.distance - 9.6).abs() < 0.01, "{}", hit.distance);
    assert_eq!(verdict.basis.time_used, Some(0.5));
    assert_eq!(verdict.basis.received_at, arrival(24));
    assert_eq!(verdict.flown.map(|f| f.step), Some(24));
}

#[test]
fn each_cheat_is_refused_next_to_its_honest_twin() {
    let (mut history, validator, ids) = scene();
    let honest = honest(ids);
    let bystander = ClaimedTarget::Entity {
        entity: ids[2],
        hitbox: HitboxId(0),
    };
    let cases: [(&str, ProjectileHitClaim, &str); 7] = [
        ("the honest claim", honest, "confirmed"),
        // Arrived before a 25 m/s rocket could cover 9.6 m.
        (
            "claimed at step 4",
            ProjectileHitClaim { step: 4, ..honest },
            "projectile_too_early",
        ),
        // One step off is a view's difference; two are not.
        (
            "claimed at step 23",
            ProjectileHitClaim { step: 23, ..honest },
            "confirmed",
        ),
        (
            "claimed at step 30",
            ProjectileHitClaim { step: 30, ..honest },
            "projectile_off_path",
        ),
        // The bystander 5 m to the side was never on the path.
        (
            "claimed the bystander",
            ProjectileHitClaim {
                target: bystander,
                ..honest
            },
            "projectile_off_path",
        ),
        (
            "claimed a point a metre off",
            ProjectileHitClaim {
                position: Vec3::new(1.0, 1.6, -9.6),
                ..honest
            },
            "projectile_off_path",
        ),
        // The shot's own checks still apply: a muzzle 3 m above the eye.
        (
            "fired from above the eye",
            ProjectileHitClaim {
                origin: Vec3::new(0.0, 4.6, 0.0),
                ..honest
            },
            "origin_too_far",
        ),
    ];
    for (what, claim, label) in cases {
        assert_eq!(
            judge(&history, &validator, &claim).outcome.label(),
            label,
            "{what}"
        );
    }
    let nan = ProjectileHitClaim {
        position: Vec3::NAN,
        ..honest
    };
    assert_eq!(
        judge(&history, &validator, &nan).outcome.label(),
        "non_finite"
    );
    let unknown = ProjectileHitClaim {
        weapon: WeaponId(99),
        ..honest
    };
    assert_eq!(
        judge(&history, &validator, &unknown).outcome.label(),
        "unknown_weapon"
    );
    // A wall across the range at 5 m: the rocket stops there. Claiming the target
    // through it is off the path; claiming the wall stands.
    let wall = history
        .add_static(
            Shape::cuboid(Vec3::new(3.0, 3.0, 0.1)),
            Pose::from_translation(Vec3::new(0.0, 1.0, -5.0)),
            u32::MAX,
        )
        .unwrap();
    assert_eq!(
        judge(&history, &validator, &honest).outcome.label(),
        "projectile_off_path"
    );
    let at_wall = ProjectileHitClaim {
        step: 12,
        target: ClaimedTarget::Static(wall),
        position: Vec3::new(0.0, 1.6, -4.8),
        ..honest
    };
    let verdict = judge(&history, &validator, &at_wall);
    assert!(
        matches!(verdict.outcome, ProjectileOutcome::Blocked { by: Blocker::Wall(w), .. } if w == wall),
        "{verdict:?}"
    );
    let other_wall = ProjectileHitClaim {
        target: ClaimedTarget::Static(StaticId(9)),
        ..at_wall
    };
    assert_eq!(
        judge(&history, &validator, &other_wall).outcome.label(),
        "projectile_off_path"
    );
}

#[test]
fn a_projectile_claim_counts_towards_the_fire_rate() {
    let (history, mut validator, ids) = scene();
    let claim = honest(ids);
    let first = validator.validate_projectile(&history, None, &claim, arrival(24));
    assert_eq!(first.outcome.label(), "confirmed");
    // The same moment again, as the next shot: sooner than the weapon's 0.5 s allows.
    let again = ProjectileHitClaim { seq: 1, ..claim };
    let second = validator.validate_projectile(&history, None, &again, arrival(24));
    assert_eq!(second.outcome.label(), "fire_rate");
    // Replayed.
    let third = validator.validate_projectile(&history, None, &claim, arrival(24));
    assert_eq!(third.outcome.label(), "replayed");
}

#[test]
fn projectile_reasons_have_stable_names_and_codes_apart_from_the_hitscan_ones() {
    let names: Vec<_> = ProjectileReason::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["projectile_off_path", "projectile_too_early"]);
    let codes: Vec<_> = ProjectileReason::ALL.iter().map(|r| r.code()).collect();
    assert_eq!(codes, [811, 812]);
    for reason in ProjectileReason::ALL {
        // Folded into the reasons of every kind with its code and name.
        let folded = RejectReason::from(reason);
        assert_eq!(
            (folded.code(), folded.name()),
            (reason.code(), reason.name())
        );
        assert!(RejectReason::ALL.contains(&folded));
        let json = serde_json::to_string(&reason).unwrap();
        assert_eq!(json, format!("\"{}\"", reason.name()));
        assert_eq!(reason.to_string(), reason.name());
    }
}

#[test]
fn a_flight_model_read_from_json_is_checked_as_in_code() {
    let flight = rocket();
    let json = serde_json::to_string(&flight).unwrap();
    assert_eq!(serde_json::from_str::<Flight>(&json).unwrap(), flight);
    let stalled = json.replace("\"muzzle_speed\":25.0", "\"muzzle_speed\":0.0");
    assert_ne!(stalled, json);
    let error = serde_json::from_str::<Flight>(&stalled).unwrap_err();
    assert!(error.to_string().contains("muzzle speed 0"), "{error}");
    let extra = json.replace('}', ",\"steps\":4000000000}");
    assert!(serde_json::from_str::<Flight>(&extra).is_err());
}

#[test]
fn a_target_whose_compensation_was_off_is_refused_as_for_a_hitscan_shot() {
    let (history, validator, ids) = scene_with(EntityState {
        lag_compensated: false,
        ..EntityState::default()
    });
    let verdict = judge(&history, &validator, &honest(ids));
    assert_eq!(
        verdict.outcome.label(),
        "target_not_compensated",
        "{verdict:?}"
    );
    let (history, validator, ids) = scene();
    assert_eq!(
        judge(&history, &validator, &honest(ids)).outcome.label(),
        "confirmed"
    );
}

/// A rocket on a spawn-protected or dodging target is spared as a hitscan hit would be
/// refused (honest, no damage); with the policy's shooter winning, the dodge does not help.
#[test]
fn a_projectile_on_a_protected_or_dodging_target_spares_it_as_a_hitscan_shot_would() {
    for (state, label) in [
        (
            EntityState {
                invulnerable: true,
                ..EntityState::default()
            },
            "invulnerable",
        ),
        (
            EntityState {
                evasive: true,
                ..EntityState::default()
            },
            "dodged",
        ),
    ] {
        let (history, validator, ids) = scene_with(state);
        let verdict = judge(&history, &validator, &honest(ids));
        assert_eq!(verdict.outcome.label(), label, "{verdict:?}");
        assert!(
            matches!(
                verdict.verdict().outcome,
                crate::VerdictOutcome::Refused { target, .. } if target == ids[1]
            ),
            "{verdict:?}"
        );
    }
    let (history, validator, ids) = scene_with(EntityState {
        evasive: true,
        ..EntityState::default()
    });
    let mut rules = validator.rules().clone();
    rules.policy.dodge = crate::DodgeRule::ShooterWins;
    let mut validator = validator;
    validator.set_rules(rules);
    assert_eq!(
        judge(&history, &validator, &honest(ids)).outcome.label(),
        "confirmed"
    );
}

#[test]
fn the_flight_comes_from_the_weapon_rules() {
    let (_, validator, _) = scene();
    let rules = validator.rules().weapon(WeaponId(7)).unwrap();
    assert_eq!(rules.flight(), Some(rocket()));
}

#[test]
fn a_projectile_claim_for_a_hitscan_weapon_is_the_wrong_kind() {
    let (history, validator, ids) = scene();
    let mut rules = validator.rules().clone();
    let rocket = rules.weapons.get_mut("rocket").unwrap();
    rocket.kind = crate::WeaponKind::Hitscan;
    rocket.flight = None;
    let mut hitscan = validator.clone();
    hitscan.set_rules(rules);
    assert_eq!(
        judge(&history, &hitscan, &honest(ids)).outcome.label(),
        "wrong_weapon_kind"
    );
    // And a hitscan claim for the projectile weapon.
    let shot = crate::ShotClaim {
        shooter: ids[0],
        weapon: WeaponId(7),
        seq: 0,
        render_time: RenderTime::Time(0.5),
        origin: Vec3::new(0.0, 1.6, 0.0),
        direction: Vec3::NEG_Z,
        hit: None,
    };
    let verdict = validator.clone().validate(&history, &shot, arrival(0));
    assert_eq!(
        verdict.outcome.reason(),
        Some(RejectReason::WrongWeaponKind)
    );
}

#[test]
fn a_projectile_on_a_teammate_is_friendly_fire() {
    let (history, mut validator, ids) = scene();
    validator.register(
        ids[1],
        Participant {
            team: 1,
            aim_bone: 1,
            aim_forward: Vec3::NEG_Z,
        },
    );
    assert_eq!(
        judge(&history, &validator, &honest(ids)).outcome.label(),
        "friendly_fire"
    );
}
