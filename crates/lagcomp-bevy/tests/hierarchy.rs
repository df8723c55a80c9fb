//! Recording reads the transform hierarchy as the tick left it: a moving parent with a
//! child bone records the pose of that tick, which Bevy's `GlobalTransform` only shows
//! after `PostUpdate`.

use bevy_ecs::prelude::*;
use bevy_transform::components::{GlobalTransform, Transform};
use lagcomp::{Quat, RewindTarget, Vec3, WindowPolicy};
use lagcomp_bevy::{HitboxEntities, LagCompHistory};

use crate::support::{self, assert_near, time_of};

#[derive(Component)]
struct Walker;

/// Each tick the walker steps a metre along +x and turns a tenth of a radian.
fn walk(mut walkers: Query<&mut Transform, With<Walker>>) {
    for mut transform in &mut walkers {
        transform.translation.x += 1.0;
        transform.rotation *= Quat::from_rotation_y(0.1);
    }
}

/// The recorded bone of `entity` at `tick`.
fn recorded(app: &bevy_app::App, entity: Entity, tick: u32) -> lagcomp::BoneTransform {
    let id = app
        .world()
        .resource::<HitboxEntities>()
        .core_id(entity)
        .expect("registered");
    app.world()
        .resource::<LagCompHistory>()
        .entity_at(id, RewindTarget::at(time_of(tick)), WindowPolicy::Reject)
        .expect("a valid target")
        .expect("recorded at that tick")
        .bone(0)
        .expect("a rigid rig has bone 0")
}

#[test]
fn a_child_of_a_moving_parent_records_the_pose_of_its_own_tick() {
    let mut app = support::app();
    support::moving(&mut app, walk);
    // A scaled, walking parent; a child offset and turned under it; its child, the bone.
    let parent = app
        .world_mut()
        .spawn((
            Walker,
            Transform::from_xyz(0.0, 0.0, 0.0).with_scale(Vec3::splat(2.0)),
        ))
        .id();
    let middle = app
        .world_mut()
        .spawn((
            Transform::from_xyz(0.0, 1.0, 0.5).with_rotation(Quat::from_rotation_x(0.3)),
            ChildOf(parent),
        ))
        .id();
    let bone = app
        .world_mut()
        .spawn((
            Transform::from_xyz(0.2, 0.4, 0.0),
            ChildOf(middle),
            support::player(),
        ))
        .id();
    for tick in 0..10 {
        support::tick(&mut app);
        let got = recorded(&app, bone, tick);
        // What the server had at this tick: the propagated pose, once PostUpdate has run.
        support::propagate(&mut app);
        let (scale, rotation, translation) = app
            .world()
            .get::<GlobalTransform>(bone)
            .expect("a global transform")
            .to_scale_rotation_translation();
        assert_near(got.translation, translation, 1e-4);
        assert_near(got.scale, scale, 1e-5);
        assert!(
            got.rotation.dot(rotation).abs() > 1.0 - 1e-6,
            "tick {tick}: recorded {:?}, propagated {rotation:?}",
            got.rotation
        );
    }
}

#[test]
fn recording_does_not_read_the_stale_global_transform() {
    // The naive recorder reads GlobalTransform in FixedPostUpdate, which still holds the
    // pose the last PostUpdate propagated: the previous tick's, a metre behind.
    let mut app = support::app();
    support::moving(&mut app, walk);
    let parent = app.world_mut().spawn((Walker, Transform::default())).id();
    let bone = app
        .world_mut()
        .spawn((
            Transform::from_xyz(0.0, 1.0, 0.0),
            ChildOf(parent),
            support::player(),
        ))
        .id();
    for tick in 0..5 {
        support::tick(&mut app);
        let stale = app
            .world()
            .get::<GlobalTransform>(bone)
            .expect("a global transform")
            .translation();
        let got = recorded(&app, bone, tick);
        // After tick `tick` the walker has stepped `tick + 1` times.
        let expected = (tick + 1) as f32;
        assert_near(got.translation, Vec3::new(expected, 1.0, 0.0), 1e-4);
        assert!(
            (stale.x - expected).abs() >= 0.99,
            "the stale global transform was {stale}: this test would not catch a stale read"
        );
        support::propagate(&mut app);
    }
}
