//! Melee claims: every melee reason from a cheating claim next to its honest twin, the
//! shared checks a melee claim goes through, walls, and the reasons' stable codes.
//!
//! The scene: an attacker at the origin looking along -z, an enemy 0.9 m in front of it,
//! another enemy 0.9 m behind it, a teammate 0.9 m away to its front left, and (in the
//! walled scene) a wall between the attacker and the enemy in front. Every cheat changes one thing of the
//! honest slash at the enemy in front.

use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, PlacedShape, Pose, Rig,
    Shape, ShapeSweep, Swing, Tick, Vec3, Zone,
};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, MeleeClaim, MeleeOutcome, MeleeReason, MeleeRejection, MeleeRules,
    MeleeVerdict, Participant, RejectReason, RenderTime, RuleSet, Validator, WeaponId,
};

const KNIFE: WeaponId = WeaponId(7);
const RIFLE: WeaponId = WeaponId(1);
/// The shoulder the slashes turn about, metres.
const SHOULDER: Vec3 = Vec3::new(0.0, 1.3, 0.0);

struct Scene {
    history: History,
    validator: Validator,
    attacker: EntityId,
    front: EntityId,
    behind: EntityId,
    mate: EntityId,
}

fn scene(wall: bool) -> Scene {
    scene_with(wall, EntityState::default())
}

/// [`scene`], the enemy in front recorded with `front_state`.
fn scene_with(wall: bool, front_state: EntityState) -> Scene {
    let rig = Arc::new(
        Rig::new(
            3,
            vec![
                Hitbox::new(
                    0,
                    "body",
                    Zone::Torso,
                    0,
                    Shape::cuboid(Vec3::new(0.25, 0.4, 0.15)),
                ),
                Hitbox::new(1, "head", Zone::Head, 1, Shape::sphere(0.12)),
            ],
        )
        .unwrap(),
    );
    let bones = |feet: Vec3| {
        [1.0, 1.6, 1.65].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up))
    };
    let mut history = History::new(HistoryConfig {
        tick_rate: 64.0,
        max_rewind: 0.5,
    })
    .unwrap();
    let ids: Vec<EntityId> = (0..4).map(|_| history.spawn(Arc::clone(&rig))).collect();
    let feet = [
        Vec3::ZERO,
        Vec3::new(0.0, 0.0, -0.9),
        Vec3::new(0.0, 0.0, 0.9),
        Vec3::new(-0.64, 0.0, -0.64),
    ];
    if wall {
        history
            .add_static(
                Shape::cuboid(Vec3::new(1.0, 2.0, 0.05)),
                Pose::from_translation(Vec3::new(0.0, 1.0, -0.45)),
                u32::MAX,
            )
            .unwrap();
    }
    for tick in 0..=64 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .unwrap();
        for (i, (id, at)) in ids.iter().zip(feet).enumerate() {
            let state = if i == 1 {
                front_state
            } else {
                EntityState::default()
            };
            frame.record(*id, &bones(at), state).unwrap();
        }
    }
    let rules = RuleSet::from_toml(
        "[weapons.knife]\nid = 7\nmax_range = 3.0\nmin_interval = 0.4\naim_tolerance_deg = 10.0\n\
         origin_tolerance = 0.3\nhit_leeway = 1.0\nhit_leeway_min = 0.0\nmax_rewind = 0.35\n\
         damage = { torso = 1.0, head = 2.0 }\n\
         [weapons.rifle]\nid = 1\nmax_range = 250.0\nmin_interval = 0.1\naim_tolerance_deg = 5.0\n\
         origin_tolerance = 0.5\nhit_leeway = 1.25\nhit_leeway_min = 0.05\nmax_rewind = 0.35",
    )
    .unwrap();
    let melee = MeleeRules::from_toml(
        "[melee.knife]\nid = 7\nreach = 2.0\nangle_deg = 60.0\nmax_blade = 0.5\nmax_swing_deg = 150.0",
    )
    .unwrap();
    // The limits as a `[melee.<name>]` table, folded into the knife's rules.
    let mut validator = Validator::new(rules.with_melee(&melee).unwrap());
    let eye = Participant {
        team: 1,
        aim_bone: 2,
        aim_forward: Vec3::NEG_Z,
    };
    validator.register(ids[0], eye);
    validator.register(ids[1], Participant { team: 2, ..eye });
    validator.register(ids[2], Participant { team: 2, ..eye });
    validator.register(ids[3], eye);
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
    Scene {
        history,
        validator,
        attacker: ids[0],
        front: ids[1],
        behind: ids[2],
        mate: ids[3],
    }
}

/// A 60 cm blade (bounding radius about 0.3 m) held 50 cm from the shoulder towards
/// `held` (horizontal), swung by `degrees` about +y.
fn slash(held: Vec3, degrees: f32) -> ShapeSweep {
    let blade = PlacedShape::new(
        Pose::from_translation(SHOULDER + held.normalize() * 0.5),
        Shape::cuboid(Vec3::new(0.3, 0.02, 0.01)),
    );
    // The blade lies along the arm: turn the box's x axis onto `held`.
    let along = lagcomp::Quat::from_rotation_arc(Vec3::X, held.normalize());
    let blade = PlacedShape::new(
        lagcomp::Pose::new(blade.pose.translation, along),
        blade.shape,
    );
    ShapeSweep::arc(
        blade,
        Swing::new(SHOULDER, Vec3::Y, degrees.to_radians()).unwrap(),
    )
    .unwrap()
}

impl Scene {
    /// The honest slash: from the right round to the front, at the enemy in front.
    fn honest(&self) -> MeleeClaim {
        MeleeClaim {
            shooter: self.attacker,
            weapon: KNIFE,
            seq: 0,
            render_time: RenderTime::Time(0.8),
            eye: Vec3::new(0.0, 1.65, 0.0),
            aim: Vec3::NEG_Z,
            sweep: slash(Vec3::X, 90.0),
            hit: Some(ClaimedHit {
                target: self.front,
                hitbox: None,
                point: None,
            }),
        }
    }

    /// Judges `claim` on a fresh clone of the validator (so each claim is judged alone).
    fn judge(&self, claim: &MeleeClaim) -> MeleeVerdict {
        self.validator
            .clone()
            .validate_melee(&self.history, claim, 0.95)
    }
}

#[track_caller]
fn struck(verdict: &MeleeVerdict, target: EntityId) {
    match verdict.outcome {
        MeleeOutcome::Confirmed(hit) => {
            assert_eq!(hit.target, target, "{verdict:#?}");
            assert!(hit.distance > 0.0);
        }
        other => panic!(
            "expected a strike on {target:?}, got {}: {verdict:#?}",
            other.label()
        ),
    }
}

#[track_caller]
fn refused(verdict: &MeleeVerdict, reason: impl Into<MeleeRejection>) -> MeleeRejection {
    let reason = reason.into();
    assert_eq!(verdict.outcome.reason(), Some(reason), "{verdict:#?}");
    reason
}

/// A cheat refused for the melee `reason` next to its honest twin, struck; returns the
/// reason as one of every kind's ([`RejectReason`]), for `reasons.rs`.
pub(crate) fn melee_cheat_next_to_its_honest_twin(reason: MeleeReason) -> RejectReason {
    let s = scene(false);
    let honest = s.honest();
    struck(&s.judge(&honest), s.front);
    let verdicts: Vec<MeleeVerdict> = match reason {
        MeleeReason::SwingTooLarge => {
            // A blade the size of a door.
            let huge = PlacedShape::new(
                s.honest().sweep.start().pose,
                Shape::cuboid(Vec3::new(1.5, 0.02, 0.01)),
            );
            let door = MeleeClaim {
                sweep: ShapeSweep::arc(
                    huge,
                    Swing::new(SHOULDER, Vec3::Y, 90f32.to_radians()).unwrap(),
                )
                .unwrap(),
                ..honest
            };
            // A swing all the way round (200 degrees; the knife allows 150).
            let round = MeleeClaim {
                sweep: slash(Vec3::X, 200.0),
                ..honest
            };
            vec![s.judge(&door), s.judge(&round)]
        }
        MeleeReason::OutOfReach => {
            // The blade teleported next to a point 2.4 m away (the knife reaches 2 m): it
            // starts beyond the reach of the eye.
            let far = PlacedShape::new(
                Pose::from_translation(Vec3::new(0.5, 1.3, -2.4)),
                Shape::cuboid(Vec3::new(0.3, 0.02, 0.01)),
            );
            let teleported = MeleeClaim {
                sweep: ShapeSweep::arc(
                    far,
                    Swing::new(Vec3::new(0.0, 1.3, -2.4), Vec3::Y, 1.5).unwrap(),
                )
                .unwrap(),
                hit: None,
                ..honest
            };
            // The same slash, honest, by a knife of 70 cm reach: the blade starts within
            // it (0.61 m from the eye), the point struck (about 0.86 m off) is out.
            let short = MeleeRules::from_toml(
                "[melee.knife]\nid = 7\nreach = 0.7\nangle_deg = 60.0\nmax_blade = 0.5\nmax_swing_deg = 150.0",
            )
            .unwrap();
            let mut validator = s.validator.clone();
            validator.set_rules(validator.rules().clone().with_melee(&short).unwrap());
            vec![
                s.judge(&teleported),
                validator.validate_melee(&s.history, &honest, 0.95),
            ]
        }
        MeleeReason::OutsideArc => {
            // A slash behind the attacker's back, at the enemy behind: outside the 60
            // degrees.
            let behind = MeleeClaim {
                sweep: slash(Vec3::X, -90.0),
                hit: Some(ClaimedHit {
                    target: s.behind,
                    hitbox: None,
                    point: None,
                }),
                ..honest
            };
            vec![s.judge(&behind)]
        }
        // A rifle is not a melee weapon.
        _ => vec![s.judge(&MeleeClaim {
            weapon: RIFLE,
            ..honest
        })],
    };
    for verdict in &verdicts {
        refused(verdict, reason);
    }
    reason.into()
}

#[test]
fn every_melee_reason_from_a_cheat_next_to_its_honest_twin() {
    for reason in MeleeReason::ALL {
        assert_eq!(
            melee_cheat_next_to_its_honest_twin(reason),
            RejectReason::from(reason)
        );
    }
}

#[test]
fn the_shared_checks_refuse_melee_cheats_too() {
    let s = scene(false);
    let honest = s.honest();
    struck(&s.judge(&honest), s.front);
    // Claiming the enemy behind while the blade struck the one in front.
    let cheat = MeleeClaim {
        hit: Some(ClaimedHit {
            target: s.behind,
            hitbox: None,
            point: None,
        }),
        ..honest
    };
    refused(&s.judge(&cheat), RejectReason::TamperedClaim);
    // A claimed hit on a swing that strikes nothing: a short one that ends before anyone.
    let cheat = MeleeClaim {
        sweep: slash(Vec3::X, 20.0),
        ..honest
    };
    refused(&s.judge(&cheat), RejectReason::TamperedClaim);
    // Honestly claimed nothing: a miss.
    let miss = MeleeClaim { hit: None, ..cheat };
    assert_eq!(s.judge(&miss).outcome, MeleeOutcome::Miss);
    // The eye claimed 1 m above the aim bone.
    let cheat = MeleeClaim {
        eye: honest.eye + Vec3::Y,
        ..honest
    };
    refused(&s.judge(&cheat), RejectReason::OriginTooFar);
    // Looking away from where the shooter's history says it looked.
    let cheat = MeleeClaim {
        aim: Vec3::X,
        ..honest
    };
    refused(&s.judge(&cheat), RejectReason::AngleTooFar);
    // A teammate: a slash from the left round to the front strikes it first.
    let at_mate = MeleeClaim {
        sweep: slash(Vec3::NEG_X, -90.0),
        aim: Vec3::NEG_Z,
        hit: Some(ClaimedHit {
            target: s.mate,
            hitbox: None,
            point: None,
        }),
        ..honest
    };
    refused(&s.judge(&at_mate), RejectReason::FriendlyFire);
    // A time older than the knife's rewind.
    let cheat = MeleeClaim {
        render_time: RenderTime::Time(0.4),
        ..honest
    };
    refused(&s.judge(&cheat), RejectReason::TimeTooOld);
    // Two slashes 0.1 s apart (the knife allows one per 0.4 s): the second is refused, and
    // a replayed sequence number too.
    let mut validator = s.validator.clone();
    struck(
        &validator.validate_melee(&s.history, &honest, 0.95),
        s.front,
    );
    let again = validator.validate_melee(&s.history, &honest, 0.96);
    refused(&again, RejectReason::Replayed);
    let soon = MeleeClaim {
        seq: 1,
        render_time: RenderTime::Time(0.9),
        ..honest
    };
    let soon = validator.validate_melee(&s.history, &soon, 1.05);
    refused(&soon, RejectReason::FireRate);
}

#[test]
fn a_slash_through_a_wall_is_blocked() {
    let open = scene(false);
    struck(&open.judge(&open.honest()), open.front);
    let walled = scene(true);
    let verdict = walled.judge(&walled.honest());
    assert!(
        matches!(verdict.outcome, MeleeOutcome::Blocked { .. }),
        "{verdict:#?}"
    );
}

#[test]
fn melee_reasons_keep_their_codes_and_names() {
    let codes: Vec<(u16, &str)> = MeleeReason::ALL
        .iter()
        .map(|r| (r.code(), r.name()))
        .collect();
    assert_eq!(
        codes,
        [
            (1101, "melee_not_melee"),
            (1102, "melee_swing_too_large"),
            (1103, "melee_out_of_reach"),
            (1104, "melee_outside_arc"),
        ]
    );
    // Each is folded into the reasons of every kind with its code and name.
    for r in MeleeReason::ALL {
        let folded = RejectReason::from(r);
        assert_eq!((folded.code(), folded.name()), (r.code(), r.name()));
        assert!(RejectReason::ALL.contains(&folded));
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, format!("\"{}\"", r.name()));
    }
}

/// A slash on a spawn-protected or dodging enemy spares it, as a hitscan hit would be
/// refused (honest, no damage).
#[test]
fn a_slash_on_a_protected_or_dodging_enemy_spares_it() {
    for (state, expected) in [
        (
            EntityState {
                invulnerable: true,
                ..EntityState::default()
            },
            lagcomp_validate::Refusal::Invulnerable,
        ),
        (
            EntityState {
                evasive: true,
                ..EntityState::default()
            },
            lagcomp_validate::Refusal::Dodged,
        ),
    ] {
        let s = scene_with(false, state);
        let verdict = s.judge(&s.honest());
        assert!(
            matches!(
                verdict.outcome,
                MeleeOutcome::Spared { target, refusal, .. } if target == s.front && refusal == expected
            ),
            "{verdict:#?}"
        );
        assert!(matches!(
            verdict.verdict().outcome,
            lagcomp_validate::VerdictOutcome::Refused { .. }
        ));
    }
    let s = scene(false);
    struck(&s.judge(&s.honest()), s.front);
}
