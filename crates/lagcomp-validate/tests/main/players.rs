//! Adding a player in one step: `Validator::add_player` checks the rig, the aim bone, the
//! view and the timing, and either does `register` and `set_timing` together or changes
//! nothing and names what is wrong.

use lagcomp::{EntityId, Vec3};
use lagcomp_validate::{
    AddPlayerError, ClientTiming, Participant, TimingError, Validator, VerdictOutcome,
};

use crate::fixture::{HEAD, Role, Scene, participant, rules, timing};

/// A validator with every player of `scene` added in one step each.
fn added(scene: &Scene) -> Validator {
    let mut v = Validator::new(rules());
    for role in Role::ALL {
        v.add_player(&scene.history, scene.id(role), participant(role), timing())
            .expect("a spawned player with an eye bone and a timing in seconds");
    }
    v
}

#[test]
fn an_added_player_is_judged_like_a_registered_and_timed_one() {
    let scene = Scene::new();
    let shot = scene.shoot(Role::Alpha, HEAD, 0.8);
    let one_step = scene.judge(&mut added(&scene), &shot);
    let two_steps = scene.judge(&mut scene.validator(), &shot);
    assert!(
        matches!(one_step.outcome, VerdictOutcome::Confirmed(_)),
        "{one_step:#?}"
    );
    assert_eq!(one_step.outcome, two_steps.outcome);
    assert_eq!(one_step.basis, two_steps.basis);
}

/// Each refusal names its problem and leaves the validator as it was: the shooter stays
/// unknown (its shots `unknown_shooter`), with no timing.
#[test]
fn a_player_that_cannot_be_judged_is_refused_with_nothing_changed() {
    let scene = Scene::new();
    let shooter = scene.id(Role::Shooter);
    let eye = participant(Role::Shooter);
    let cases: [(&str, EntityId, Participant, ClientTiming, AddPlayerError); 6] = [
        (
            "an id the history never spawned",
            EntityId::from_bits(0xdead_0000_0001),
            eye,
            timing(),
            AddPlayerError::NotSpawned {
                entity: EntityId::from_bits(0xdead_0000_0001),
            },
        ),
        (
            "an aim bone past the rig's 8 bones",
            shooter,
            Participant { aim_bone: 8, ..eye },
            timing(),
            AddPlayerError::AimBoneOutsideRig {
                aim_bone: 8,
                bones: 8,
            },
        ),
        (
            "no view direction",
            shooter,
            Participant {
                aim_forward: Vec3::ZERO,
                ..eye
            },
            timing(),
            AddPlayerError::NoAimDirection {
                aim_forward: Vec3::ZERO,
            },
        ),
        (
            "a NaN view direction",
            shooter,
            Participant {
                aim_forward: Vec3::new(f32::NAN, 0.0, -1.0),
                ..eye
            },
            timing(),
            AddPlayerError::NoAimDirection {
                aim_forward: Vec3::new(f32::NAN, 0.0, -1.0),
            },
        ),
        (
            "a round trip in milliseconds",
            shooter,
            eye,
            ClientTiming {
                srtt: 100.0,
                ..timing()
            },
            AddPlayerError::Timing(TimingError::TooLarge {
                field: "srtt",
                value: 100.0,
            }),
        ),
        (
            "a NaN interpolation delay",
            shooter,
            eye,
            ClientTiming {
                interp_delay: f64::NAN,
                ..timing()
            },
            AddPlayerError::Timing(TimingError::NotFinite {
                field: "interp_delay",
                value: f64::NAN,
            }),
        ),
    ];
    let shot = scene.shoot(Role::Alpha, HEAD, 0.8);
    for (case, entity, player, timing, expected) in cases {
        let mut v = Validator::new(rules());
        let error = v
            .add_player(&scene.history, entity, player, timing)
            .expect_err(case);
        // NaN never equals itself: compare the Display, which names field and value.
        assert_eq!(error.to_string(), expected.to_string(), "{case}");
        assert_eq!(
            std::mem::discriminant(&error),
            std::mem::discriminant(&expected),
            "{case}"
        );
        assert_eq!(v.timing(entity), None, "{case}: no timing was set");
        let verdict = scene.judge(&mut v, &shot);
        assert_eq!(
            verdict.outcome.label(),
            "unknown_shooter",
            "{case}: the shooter was not registered"
        );
    }
}

/// Adding a player again replaces its setup; a refused update keeps the old one.
#[test]
fn adding_a_player_again_updates_it_unless_refused() {
    let scene = Scene::new();
    let shooter = scene.id(Role::Shooter);
    let mut v = added(&scene);
    let slower = ClientTiming {
        srtt: 0.2,
        ..timing()
    };
    v.add_player(&scene.history, shooter, participant(Role::Shooter), slower)
        .expect("a valid update");
    assert_eq!(v.timing(shooter), Some(slower));
    let in_ms = ClientTiming {
        srtt: 200.0,
        ..timing()
    };
    v.add_player(&scene.history, shooter, participant(Role::Shooter), in_ms)
        .expect_err("milliseconds");
    assert_eq!(v.timing(shooter), Some(slower));
}

#[test]
fn every_refusal_says_what_to_do() {
    let not_spawned = AddPlayerError::NotSpawned {
        entity: EntityId::from_bits(7),
    }
    .to_string();
    assert!(not_spawned.contains("History::spawn"), "{not_spawned}");
    let bone = AddPlayerError::AimBoneOutsideRig {
        aim_bone: 9,
        bones: 3,
    }
    .to_string();
    assert!(bone.contains("3 bones (0 to 2)"), "{bone}");
    let forward = AddPlayerError::NoAimDirection {
        aim_forward: Vec3::ZERO,
    }
    .to_string();
    assert!(forward.contains("Vec3::NEG_Z"), "{forward}");
    let ms = AddPlayerError::Timing(TimingError::TooLarge {
        field: "srtt",
        value: 80.0,
    })
    .to_string();
    assert!(ms.contains("milliseconds"), "{ms}");
}
