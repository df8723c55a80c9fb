//! The hit leeway never reaches behind a wall: a claimed point a centimetre past a wall's
//! face is blocked, however close to the face, while the same target one centimetre in
//! front of the face is confirmed.

use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityState, History, HistoryConfig, Hitbox, Pose, Quat, Rig, Shape, Tick, Vec3,
    Zone,
};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RenderTime, RuleSet, ShotClaim, Validator,
    VerdictOutcome, WeaponId,
};

const RATE: f64 = 64.0;
const HEAD: f32 = 0.12;
/// Where the wall's face is, metres along -Z from the shooter.
const FACE: f32 = 20.0;

/// A shooter at the origin looking down -Z, a head-sized target on that line whose near
/// surface is `gap` metres past the wall's face (negative: in front of it), a wall, and a
/// claim of the point where the line enters the head.
fn judge(gap: f32) -> VerdictOutcome {
    let mut history = History::new(HistoryConfig {
        tick_rate: RATE,
        max_rewind: 0.5,
    })
    .unwrap();
    let ball = |id| {
        Arc::new(
            Rig::rigid(vec![Hitbox::new(
                id,
                "head",
                Zone::Head,
                0,
                Shape::sphere(HEAD),
            )])
            .unwrap(),
        )
    };
    let shooter = history.spawn(ball(0));
    let target = history.spawn(ball(0));
    // 40 cm thick, so the head (24 cm across) sits inside it when it pokes through.
    let wall = history.add_static(
        Shape::cuboid(Vec3::new(5.0, 5.0, 0.2)),
        Pose::from_translation(Vec3::new(0.0, 0.0, -(FACE + 0.2))),
        u32::MAX,
    );
    wall.unwrap();
    let head = Vec3::new(0.0, 0.0, -(FACE + gap + HEAD));
    for tick in 0..40u32 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / RATE)
            .unwrap();
        let at = |p: Vec3| BoneTransform {
            translation: p,
            rotation: Quat::IDENTITY,
            scale: Vec3::ONE,
        };
        frame
            .record_rigid(shooter, at(Vec3::ZERO), EntityState::default())
            .unwrap();
        frame
            .record_rigid(target, at(head), EntityState::default())
            .unwrap();
    }
    let rules = RuleSet::from_toml(
        r#"
        [weapons.rifle]
        id = 1
        max_range = 100.0
        min_interval = 0.1
        aim_tolerance_deg = 10.0
        origin_tolerance = 0.5
        hit_leeway = 1.25
        hit_leeway_min = 0.05
        max_rewind = 0.5
        "#,
    )
    .unwrap();
    let mut validator = Validator::new(rules);
    validator.register(
        shooter,
        Participant {
            team: 1,
            aim_bone: 0,
            aim_forward: Vec3::NEG_Z,
        },
    );
    validator.register(
        target,
        Participant {
            team: 2,
            aim_bone: 0,
            aim_forward: Vec3::NEG_Z,
        },
    );
    let timing = ClientTiming {
        srtt: 0.1,
        rttvar: 0.005,
        interp_delay: 0.1,
    };
    validator
        .set_timing(shooter, timing)
        .expect("a valid timing");
    let render = 30.0 / RATE;
    let claim = ShotClaim {
        shooter,
        weapon: WeaponId(1),
        seq: 1,
        render_time: RenderTime::Time(render),
        origin: Vec3::ZERO,
        direction: Vec3::NEG_Z,
        hit: Some(ClaimedHit {
            target,
            hitbox: None,
            point: Some(head + Vec3::Z * HEAD),
        }),
    };
    validator
        .validate(&history, &claim, render + timing.expected_rewind())
        .outcome
}

#[test]
fn a_claimed_point_just_behind_a_wall_is_blocked_and_one_just_in_front_is_confirmed() {
    // The leeway for this head is 5 cm: before walls ignored it, 1 cm past the face was
    // confirmed.
    for gap in [0.01, 0.04] {
        let outcome = judge(gap);
        assert!(
            matches!(outcome, VerdictOutcome::Blocked { .. }),
            "{gap} m past the face: {outcome:?}"
        );
    }
    let outcome = judge(-0.01);
    assert!(
        matches!(&outcome, VerdictOutcome::Confirmed(hit) if !hit.by_leeway),
        "1 cm in front of the face: {outcome:?}"
    );
}
