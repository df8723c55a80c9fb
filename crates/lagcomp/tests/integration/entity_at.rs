//! `History::entity_at`: one entity's state, bones and hitboxes at a rewound moment, the
//! same as a query would rebuild them.

use crate::support::{box_rig, history, tick_time};
use lagcomp::{
    BoneTransform, EntityError, EntityState, HitboxId, Quat, QueryError, RewindError, RewindTarget,
    SampleKind, Tick, Vec3, WindowPolicy,
};

const RATE: f64 = 64.0;

#[test]
fn entity_at_rebuilds_bones_hitboxes_and_state() {
    let mut h = history(RATE, 0.5);
    let id = h.spawn(box_rig());
    let late = h.spawn(box_rig());
    for tick in 0..20_u32 {
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        let pose = BoneTransform::new(
            Vec3::new(tick as f32, 0.0, 0.0),
            Quat::from_rotation_y(0.05 * tick as f32),
        );
        let state = EntityState {
            alive: tick < 15,
            lag_compensated: tick != 12,
            ..EntityState::default()
        };
        frame.record_rigid(id, pose, state).unwrap();
        if tick >= 18 {
            frame
                .record_rigid(late, pose, EntityState::default())
                .unwrap();
        }
    }

    // Exactly on tick 10: the stored pose, bit for bit, and its flags.
    let at = h
        .entity_at(
            id,
            RewindTarget::Time(tick_time(10, RATE)),
            WindowPolicy::Reject,
        )
        .unwrap()
        .expect("recorded then");
    assert_eq!(at.entity(), id);
    assert_eq!(at.sample().kind, SampleKind::Exact { tick: Tick(10) });
    assert!(at.state().alive);
    let bone = at.bone(0).unwrap();
    assert_eq!(bone.translation, Vec3::new(10.0, 0.0, 0.0));
    assert_eq!(bone.rotation, Quat::from_rotation_y(0.5));
    assert!(at.bone(1).is_none(), "a rigid rig has one bone");
    let head = at.hitbox(HitboxId(1)).expect("the box rig has a head");
    assert_eq!(head.distance_to_point(Vec3::new(10.0, 1.5, 0.0)), 0.0);
    assert!((head.distance_to_point(Vec3::new(10.0, 2.0, 0.0)) - 0.25).abs() < 1e-5);
    assert!(at.hitbox(HitboxId(7)).is_none());

    // Halfway between ticks 16 and 17: lerped, and dead as it was then.
    let mid = (tick_time(16, RATE) + tick_time(17, RATE)) / 2.0;
    let at = h
        .entity_at(id, RewindTarget::Time(mid), WindowPolicy::Reject)
        .unwrap()
        .unwrap();
    assert!(matches!(
        at.sample().kind,
        SampleKind::Interpolated {
            from: Tick(16),
            to: Tick(17),
            ..
        }
    ));
    assert!(!at.state().alive);
    assert!((at.bone(0).unwrap().translation.x - 16.5).abs() < 1e-5);
    assert_eq!(at.rewind().time, mid);

    // Not recorded yet at tick 10: none; outside the window: the typed refusal.
    assert!(
        h.entity_at(
            late,
            RewindTarget::Time(tick_time(10, RATE)),
            WindowPolicy::Reject
        )
        .unwrap()
        .is_none()
    );
    assert!(matches!(
        h.entity_at(id, RewindTarget::Time(1e6), WindowPolicy::Reject),
        Err(QueryError::Rewind(RewindError::OutOfWindow { .. }))
    ));
    // Lag compensation off at tick 12: a target is seen at its present pose, but the
    // recorded pose is still there for the shooter's own checks.
    let t12 = RewindTarget::Time(tick_time(12, RATE));
    let as_target = h.entity_at(id, t12, WindowPolicy::Reject).unwrap().unwrap();
    assert_eq!(
        as_target.sample().kind,
        SampleKind::Present { tick: Tick(19) }
    );
    assert_eq!(as_target.bone(0).unwrap().translation.x, 19.0);
    let recorded = h
        .entity_as_recorded(id, t12, WindowPolicy::Reject)
        .unwrap()
        .unwrap();
    assert_eq!(recorded.sample().kind, SampleKind::Exact { tick: Tick(12) });
    assert_eq!(recorded.bone(0).unwrap().translation.x, 12.0);
    assert!(!recorded.state().lag_compensated);
    // A handle never issued.
    let bogus = lagcomp::EntityId::from_bits(0xdead_0000_0007);
    assert!(matches!(
        h.entity_at(bogus, RewindTarget::Time(mid), WindowPolicy::Reject),
        Err(QueryError::Entity(EntityError::Unknown(_)))
    ));
}
