//! Skeletal rigs whose bones are joint entities found by name under the entity.

use std::sync::Arc;

use bevy_ecs::prelude::*;
use bevy_transform::components::{GlobalTransform, Transform};
use lagcomp::{Hitbox, Quat, RewindTarget, Rig, Shape, Vec3, WindowPolicy, Zone};
use lagcomp_bevy::{
    HitboxEntities, Hitboxes, HitboxesError, LagCompHistory, RecordReport, SkeletonJoints,
};

use crate::support::{self, assert_near, time_of};

/// Three bones: head, hips, left hand (not the order the hierarchy has them in).
fn rig() -> Arc<Rig> {
    Arc::new(
        Rig::new(
            3,
            vec![
                Hitbox::new(0, "head", Zone::Head, 0, Shape::sphere(0.12)),
                Hitbox::new(
                    1,
                    "pelvis",
                    Zone::Torso,
                    1,
                    Shape::cuboid(Vec3::splat(0.15)),
                ),
                Hitbox::new(2, "hand", Zone::Limb, 2, Shape::sphere(0.06)),
            ],
        )
        .expect("a valid rig"),
    )
}

pub(crate) fn skeleton() -> Hitboxes {
    Hitboxes::skeletal(rig(), ["head", "hips", "hand_l"]).expect("one name per bone")
}

#[derive(Component)]
struct Spine;

#[derive(Component)]
struct Root;

/// The root walks along +z, the spine bends.
fn animate(
    mut roots: Query<&mut Transform, (With<Root>, Without<Spine>)>,
    mut spines: Query<&mut Transform, With<Spine>>,
) {
    for mut root in &mut roots {
        root.translation.z += 0.5;
    }
    for mut spine in &mut spines {
        spine.rotation *= Quat::from_rotation_x(0.2);
    }
}

/// Spawns the joints under `root` as a glTF scene would: an armature, hips, a spine that
/// is no bone, the head above it and a hand off the hips. Returns head, hips, hand.
pub(crate) fn spawn_joints(world: &mut World, root: Entity) -> [Entity; 3] {
    let armature = world
        .spawn((Name::new("Armature"), Transform::default(), ChildOf(root)))
        .id();
    let hips = world
        .spawn((
            Name::new("hips"),
            Transform::from_xyz(0.0, 1.0, 0.0),
            ChildOf(armature),
        ))
        .id();
    let spine = world
        .spawn((
            Spine,
            Name::new("spine"),
            Transform::from_xyz(0.0, 0.3, 0.0),
            ChildOf(hips),
        ))
        .id();
    let head = world
        .spawn((
            Name::new("head"),
            Transform::from_xyz(0.0, 0.4, 0.0),
            ChildOf(spine),
        ))
        .id();
    let hand = world
        .spawn((
            Name::new("hand_l"),
            Transform::from_xyz(-0.4, 0.1, 0.0).with_rotation(Quat::from_rotation_z(0.5)),
            ChildOf(hips),
        ))
        .id();
    [head, hips, hand]
}

#[test]
fn bones_are_the_named_joints_as_the_tick_left_them() {
    let mut app = support::app();
    support::moving(&mut app, animate);
    let root = app
        .world_mut()
        .spawn((Root, Transform::from_xyz(1.0, 0.0, 0.0), skeleton()))
        .id();
    let joints = spawn_joints(app.world_mut(), root);
    for tick in 0..6 {
        support::tick(&mut app);
        let found: Vec<Entity> = app
            .world()
            .get::<SkeletonJoints>(root)
            .expect("joints found")
            .joints()
            .collect();
        assert_eq!(found, joints);
        let id = app
            .world()
            .resource::<HitboxEntities>()
            .core_id(root)
            .expect("registered");
        let bones: Vec<_> = {
            let history = app.world().resource::<LagCompHistory>();
            let then = history
                .entity_at(id, RewindTarget::at(time_of(tick)), WindowPolicy::Reject)
                .expect("a valid target")
                .expect("recorded");
            (0..3).map(|b| then.bone(b).expect("a bone")).collect()
        };
        support::propagate(&mut app);
        for (b, joint) in joints.iter().enumerate() {
            let (_, rotation, translation) = app
                .world()
                .get::<GlobalTransform>(*joint)
                .expect("a global transform")
                .to_scale_rotation_translation();
            assert_near(bones[b].translation, translation, 1e-4);
            assert!(
                bones[b].rotation.dot(rotation).abs() > 1.0 - 1e-6,
                "bone {b}"
            );
        }
    }
}

#[test]
fn a_rig_is_recorded_from_the_tick_its_joints_appear() {
    let mut app = support::app();
    let root = app
        .world_mut()
        .spawn((Transform::default(), skeleton()))
        .id();
    support::tick(&mut app);
    assert_eq!(app.world().resource::<RecordReport>().skipped, 1);
    assert_eq!(app.world().resource::<RecordReport>().entities, 0);
    spawn_joints(app.world_mut(), root);
    support::tick(&mut app);
    let report = app.world().resource::<RecordReport>();
    assert_eq!((report.entities, report.skipped), (1, 0));
    let id = app
        .world()
        .resource::<HitboxEntities>()
        .core_id(root)
        .expect("registered");
    let history = app.world().resource::<LagCompHistory>();
    assert!(
        history
            .entity_at(id, RewindTarget::at(time_of(1)), WindowPolicy::Reject)
            .expect("a valid target")
            .is_some()
    );
}

/// Every bone of `root`'s newest frame against its joints' propagated transforms.
fn assert_bones_match_joints(app: &mut bevy_app::App, root: Entity, joints: [Entity; 3]) {
    let id = app
        .world()
        .resource::<HitboxEntities>()
        .core_id(root)
        .expect("registered");
    let bones: Vec<_> = {
        let history = app.world().resource::<LagCompHistory>();
        let newest = history.newest_tick().expect("a frame");
        let then = history
            .entity_at(
                id,
                RewindTarget::between(newest, newest, 0.0),
                WindowPolicy::Reject,
            )
            .expect("a valid target")
            .expect("recorded in the newest frame");
        (0..3).map(|b| then.bone(b).expect("a bone")).collect()
    };
    support::propagate(app);
    for (b, joint) in joints.iter().enumerate() {
        let global = app
            .world()
            .get::<GlobalTransform>(*joint)
            .expect("a global transform");
        assert_near(bones[b].translation, global.translation(), 1e-4);
    }
}

#[test]
fn a_lost_joint_leaves_the_rig_out_until_it_is_back_and_slots_are_reused() {
    let mut app = support::app();
    support::moving(&mut app, animate);
    let first = app
        .world_mut()
        .spawn((Root, Transform::default(), skeleton()))
        .id();
    let [head, hips, hand] = spawn_joints(app.world_mut(), first);
    support::tick(&mut app);
    assert_bones_match_joints(&mut app, first, [head, hips, hand]);
    // The hand is cut off: the rig is left out rather than recorded with a stale hand.
    app.world_mut().despawn(hand);
    support::tick(&mut app);
    let report = app.world().resource::<RecordReport>();
    assert_eq!((report.entities, report.skipped), (0, 1));
    // It grows back under the hips: found again, recorded again.
    let hand = app
        .world_mut()
        .spawn((
            Name::new("hand_l"),
            Transform::from_xyz(-0.4, 0.0, 0.0),
            ChildOf(hips),
        ))
        .id();
    support::tick(&mut app);
    let report = app.world().resource::<RecordReport>();
    assert_eq!((report.entities, report.skipped), (1, 0));
    assert_bones_match_joints(&mut app, first, [head, hips, hand]);
    // The character despawns with its joints; the next one takes its slots.
    app.world_mut().despawn(first);
    let second = app
        .world_mut()
        .spawn((Root, Transform::from_xyz(3.0, 0.0, 0.0), skeleton()))
        .id();
    let joints = spawn_joints(app.world_mut(), second);
    for _ in 0..3 {
        support::tick(&mut app);
        assert_eq!(app.world().resource::<RecordReport>().entities, 1);
        assert_bones_match_joints(&mut app, second, joints);
    }
}

#[test]
fn malformed_rigs_are_refused_with_reasons() {
    assert_eq!(
        Hitboxes::skeletal(rig(), ["head", "hips"]).err(),
        Some(HitboxesError::JointCount { bones: 3, names: 2 })
    );
    assert_eq!(
        Hitboxes::from_rig(rig()).err(),
        Some(HitboxesError::NotRigid(3))
    );
    assert!(matches!(
        Hitboxes::rigid(Vec::new()),
        Err(HitboxesError::Rig(_))
    ));
}
