//! Splash claims: splash through a wall and out of its radius, next to honest twins.

use std::sync::Arc;

use lagcomp::spread::Falloff;
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, Pose, Rig, Shape, Tick,
    Vec3, Zone,
};

use super::*;
use crate::{ClientTiming, Participant, RuleSet};

/// 64 Hz, one second: a shooter at the origin looking along -z; a grenade goes off at
/// (0, 1, -8). One victim 3 m to its left in the open, one 3 m to its right, behind a
/// wall at x = 1.5 when `walled`, and a bystander 20 m away.
fn scene(walled: bool) -> (History, Validator, [EntityId; 4]) {
    scene_with(walled, EntityState::default())
}

/// [`scene`], the open victim (`ids[1]`) recorded with `state`.
fn scene_with(walled: bool, state: EntityState) -> (History, Validator, [EntityId; 4]) {
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
    let ids = [(); 4].map(|()| history.spawn(Arc::clone(&rig)));
    if walled {
        history
            .add_static(
                Shape::cuboid(Vec3::new(0.1, 2.0, 2.0)),
                Pose::from_translation(Vec3::new(1.5, 1.0, -8.0)),
                u32::MAX,
            )
            .unwrap();
    }
    let feet = [
        Vec3::ZERO,
        Vec3::new(-3.0, 0.0, -8.0),
        Vec3::new(3.0, 0.0, -8.0),
        Vec3::new(20.0, 0.0, -8.0),
    ];
    for tick in 0..=64 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .unwrap();
        for (i, (id, feet)) in ids.iter().zip(feet).enumerate() {
            let recorded = if i == 1 {
                state
            } else {
                EntityState::default()
            };
            frame.record(*id, &bones(feet), recorded).unwrap();
        }
    }
    let rules = "[weapons.launcher]\nid = 5\nmax_range = 60.0\nmin_interval = 0.5\n\
                 aim_tolerance_deg = 10.0\norigin_tolerance = 0.5\nhit_leeway = 1.25\n\
                 hit_leeway_min = 0.05\nmax_rewind = 0.35\nkind = \"area\"\n\
                 area = { radius = 5.0, falloff = { start = 1.0, end = 5.0, min = 0.1 }, \
                 bodies_block = true }";
    let mut validator = Validator::new(RuleSet::from_toml(rules).unwrap());
    let eye = Participant {
        team: 1,
        aim_bone: 1,
        aim_forward: Vec3::NEG_Z,
    };
    for (team, id) in ids.iter().enumerate() {
        validator.register(
            *id,
            Participant {
                team: team as u16 + 1,
                ..eye
            },
        );
    }
    validator
        .set_timing(
            ids[0],
            ClientTiming {
                srtt: 0.1,
                rttvar: 0.005,
                interp_delay: 0.1,
            },
        )
        .unwrap();
    (history, validator, ids)
}

fn grenade() -> SplashWeapon {
    SplashWeapon {
        radius: 5.0,
        falloff: Falloff::new(1.0, 5.0, 0.1).unwrap(),
        bodies_block: true,
    }
}

fn claim(ids: [EntityId; 4], victims: &[EntityId]) -> SplashClaim {
    let origin = Vec3::new(0.0, 1.6, 0.0);
    let blast = Vec3::new(0.0, 1.0, -8.0);
    let mut slots = [None; MAX_VICTIMS];
    for (slot, victim) in slots.iter_mut().zip(victims) {
        *slot = Some(*victim);
    }
    SplashClaim {
        shooter: ids[0],
        weapon: WeaponId(5),
        seq: 0,
        render_time: RenderTime::Time(0.5),
        origin,
        direction: blast - origin,
        blast,
        victims: slots,
    }
}

fn judge(history: &History, validator: &Validator, claim: &SplashClaim) -> SplashVerdict {
    validator
        .clone()
        .validate_splash(history, None, claim, 0.65)
}

#[test]
fn an_honest_blast_catches_the_open_victim_with_falloff() {
    let (history, validator, ids) = scene(true);
    let verdict = judge(&history, &validator, &claim(ids, &[ids[1]]));
    assert_eq!(verdict.outcome, SplashOutcome::Confirmed { victims: 1 });
    assert_eq!(verdict.basis.time_used, Some(0.5));
    let SplashResult::Caught {
        target,
        distance,
        damage_multiplier,
        ..
    } = verdict.victims[0]
    else {
        panic!("{verdict:?}");
    };
    // The body's near face is 2.7 m from the blast: 1 - 0.9 * 1.7 / 4.
    assert_eq!(target, ids[1]);
    assert!((distance - 2.7).abs() < 1e-4, "{distance}");
    assert!((damage_multiplier - (1.0 - 0.9 * 1.7 / 4.0)).abs() < 1e-4);
}

#[test]
fn splash_through_a_wall_is_refused_next_to_its_twin_without_the_wall() {
    let (open, validator, ids) = scene(false);
    let both = claim(ids, &[ids[1], ids[2]]);
    assert_eq!(
        judge(&open, &validator, &both).outcome,
        SplashOutcome::Confirmed { victims: 2 }
    );
    let (walled, validator, ids) = scene(true);
    let verdict = judge(&walled, &validator, &both);
    assert_eq!(
        verdict.outcome,
        SplashOutcome::Disproved {
            reason: SplashReason::SplashThroughWall
        }
    );
    assert!(matches!(verdict.victims[0], SplashResult::Caught { .. }));
    assert!(matches!(
        verdict.victims[1],
        SplashResult::Covered { target, cover: Cover::Wall(_) } if target == ids[2]
    ));
}

#[test]
fn a_victim_out_of_the_radius_and_a_blast_out_of_range_are_refused() {
    let (history, validator, ids) = scene(false);
    let far = judge(&history, &validator, &claim(ids, &[ids[1], ids[3]]));
    assert_eq!(far.outcome.label(), "splash_out_of_radius");
    assert_eq!(far.victims[1], SplashResult::OutOfRadius { target: ids[3] });
    let mut distant = claim(ids, &[ids[1]]);
    distant.blast = Vec3::new(0.0, 1.0, -80.0);
    distant.direction = distant.blast - distant.origin;
    assert_eq!(
        judge(&history, &validator, &distant).outcome.label(),
        "splash_beyond_range"
    );
    let mut broken = claim(ids, &[ids[1]]);
    broken.blast = Vec3::NAN;
    assert!(matches!(
        judge(&history, &validator, &broken).outcome,
        SplashOutcome::Rejected { .. }
    ));
}

#[test]
fn reasons_keep_their_names_and_codes() {
    let named: Vec<_> = SplashReason::ALL
        .iter()
        .map(|r| (r.name(), r.code()))
        .collect();
    assert_eq!(
        named,
        [
            ("splash_through_wall", 841),
            ("splash_out_of_radius", 842),
            ("splash_beyond_range", 843)
        ]
    );
}

#[test]
fn the_blast_comes_from_the_weapon_rules() {
    let (_, validator, _) = scene(false);
    let rules = validator.rules().weapon(WeaponId(5)).unwrap();
    assert_eq!(rules.splash_weapon(), Some(grenade()));
}

/// A blast that catches a dodging victim spares it (no damage, a refused verdict for it,
/// as a hitscan hit would be); with the policy's shooter winning it is caught.
#[test]
fn a_blast_spares_a_dodging_victim_unless_the_shooter_wins() {
    let (history, validator, ids) = scene_with(
        true,
        EntityState {
            evasive: true,
            ..EntityState::default()
        },
    );
    let claimed = claim(ids, &[ids[1]]);
    let verdict = judge(&history, &validator, &claimed);
    assert_eq!(verdict.outcome, SplashOutcome::Confirmed { victims: 0 });
    assert!(
        matches!(
            verdict.victims[0],
            SplashResult::Spared { target, refusal: crate::Refusal::Dodged, .. } if target == ids[1]
        ),
        "{verdict:?}"
    );
    let folded: Vec<_> = verdict.verdicts().map(|v| v.outcome).collect();
    assert!(
        matches!(
            folded[..],
            [crate::VerdictOutcome::Refused { target, .. }] if target == ids[1]
        ),
        "{folded:?}"
    );
    let mut rules = validator.rules().clone();
    rules.policy.dodge = crate::DodgeRule::ShooterWins;
    let mut validator = validator;
    validator.set_rules(rules);
    let verdict = judge(&history, &validator, &claimed);
    assert_eq!(verdict.outcome, SplashOutcome::Confirmed { victims: 1 });
}
