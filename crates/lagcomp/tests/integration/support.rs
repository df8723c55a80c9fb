//! Helpers shared by the `interpolation`, `bad_input`, `culling` and `entity_at` modules and
//! by the `alloc` test binary: rigs, scenes and bit-exact comparisons. Everything here is plain code (no allocation in the per-tick
//! helpers, so `alloc.rs` may call them inside its counted section).

#![allow(dead_code, reason = "the alloc binary uses a few of the helpers")]

use std::sync::Arc;

use lagcomp::{
    Axis, BoneTransform, EntityId, EntityState, History, HistoryConfig, Hit, Hitbox, Overlap,
    PlacedShape, Quat, Ray, RewindTarget, Rig, Shape, Tick, Trace, Vec3, Zone,
};

/// A history with the given tick rate and window, which must be valid.
pub(crate) fn history(tick_rate: f64, max_rewind: f64) -> History {
    History::new(HistoryConfig {
        tick_rate,
        max_rewind,
    })
    .expect("valid config")
}

/// One bone carrying a 1 x 2 x 1 box centred on it (hitbox 0, torso) and a head sphere of
/// radius 0.25 one and a half metres above it (hitbox 1).
pub(crate) fn box_rig() -> Arc<Rig> {
    Arc::new(
        Rig::rigid(vec![
            Hitbox::new(
                0,
                "body",
                Zone::Torso,
                0,
                Shape::cuboid(Vec3::new(0.5, 1.0, 0.5)),
            ),
            Hitbox::new(1, "head", Zone::Head, 0, Shape::sphere(0.25)).offset_by(Vec3::Y * 1.5),
        ])
        .expect("valid rig"),
    )
}

/// One bone carrying only a box of half extents 0.5 (hitbox 0). The hitbox has no offset,
/// so its placement is the bone's pose itself.
pub(crate) fn cube_rig() -> Arc<Rig> {
    Arc::new(
        Rig::rigid(vec![Hitbox::new(
            0,
            "cube",
            Zone::Torso,
            0,
            Shape::cuboid(Vec3::splat(0.5)),
        )])
        .expect("valid rig"),
    )
}

/// Bones of [`humanoid_rig`], in order: (name, offset of the bone from the root in the
/// root's frame, zone, shape).
pub(crate) const HUMANOID_BONES: usize = 16;

fn humanoid_layout() -> [(&'static str, Vec3, Zone, Shape); HUMANOID_BONES] {
    let cap = |r: f32, h: f32| Shape::capsule(r, h, Axis::Y);
    [
        (
            "pelvis",
            Vec3::new(0.0, 0.95, 0.0),
            Zone::Torso,
            Shape::cuboid(Vec3::new(0.17, 0.1, 0.12)),
        ),
        (
            "spine",
            Vec3::new(0.0, 1.12, 0.0),
            Zone::Torso,
            Shape::cuboid(Vec3::new(0.16, 0.1, 0.11)),
        ),
        (
            "chest",
            Vec3::new(0.0, 1.33, 0.0),
            Zone::Torso,
            Shape::cuboid(Vec3::new(0.19, 0.13, 0.12)),
        ),
        (
            "neck",
            Vec3::new(0.0, 1.52, 0.0),
            Zone::Head,
            cap(0.06, 0.04),
        ),
        (
            "head",
            Vec3::new(0.0, 1.66, 0.0),
            Zone::Head,
            Shape::sphere(0.12),
        ),
        (
            "upper_arm_l",
            Vec3::new(-0.27, 1.3, 0.0),
            Zone::Limb,
            cap(0.055, 0.1),
        ),
        (
            "forearm_l",
            Vec3::new(-0.3, 1.02, 0.0),
            Zone::Limb,
            cap(0.045, 0.1),
        ),
        (
            "hand_l",
            Vec3::new(-0.31, 0.8, 0.0),
            Zone::Limb,
            Shape::cuboid(Vec3::new(0.03, 0.07, 0.045)),
        ),
        (
            "upper_arm_r",
            Vec3::new(0.27, 1.3, 0.0),
            Zone::Limb,
            cap(0.055, 0.1),
        ),
        (
            "forearm_r",
            Vec3::new(0.3, 1.02, 0.0),
            Zone::Limb,
            cap(0.045, 0.1),
        ),
        (
            "hand_r",
            Vec3::new(0.31, 0.8, 0.0),
            Zone::Limb,
            Shape::cuboid(Vec3::new(0.03, 0.07, 0.045)),
        ),
        (
            "thigh_l",
            Vec3::new(-0.1, 0.68, 0.0),
            Zone::Limb,
            cap(0.075, 0.16),
        ),
        (
            "shin_l",
            Vec3::new(-0.1, 0.3, 0.0),
            Zone::Limb,
            cap(0.06, 0.15),
        ),
        (
            "thigh_r",
            Vec3::new(0.1, 0.68, 0.0),
            Zone::Limb,
            cap(0.075, 0.16),
        ),
        (
            "shin_r",
            Vec3::new(0.1, 0.3, 0.0),
            Zone::Limb,
            cap(0.06, 0.15),
        ),
        (
            "feet",
            Vec3::new(0.0, 0.05, 0.04),
            Zone::Limb,
            Shape::cuboid(Vec3::new(0.2, 0.05, 0.12)),
        ),
    ]
}

/// A 16-bone humanoid with one hitbox on each bone (ids 0..16, in bone order).
pub(crate) fn humanoid_rig() -> Arc<Rig> {
    let hitboxes = humanoid_layout()
        .into_iter()
        .enumerate()
        .map(|(i, (name, _, zone, shape))| Hitbox::new(i as u16, name, zone, i as u16, shape))
        .collect();
    Arc::new(Rig::new(HUMANOID_BONES as u16, hitboxes).expect("valid rig"))
}

/// Fills `out` (length [`HUMANOID_BONES`]) with the world transforms of a humanoid whose
/// root stands at `root`, turned by `yaw` about +y, animated by `phase` (limbs swing).
/// Allocation free.
pub(crate) fn humanoid_pose(root: Vec3, yaw: f32, phase: f32, out: &mut [BoneTransform]) {
    let turn = Quat::from_rotation_y(yaw);
    for (i, (bone, (_, offset, _, _))) in out.iter_mut().zip(humanoid_layout()).enumerate() {
        let swing = (phase + i as f32 * 0.7).sin() * 0.4;
        let rotation = turn * Quat::from_rotation_x(swing);
        *bone = BoneTransform::new(root + turn * offset, rotation);
    }
}

/// The first tick-aligned time for `tick` at `rate`.
pub(crate) fn tick_time(tick: u32, rate: f64) -> f64 {
    f64::from(tick) / rate
}

/// A state with every default but the given layers.
pub(crate) fn state_on(layers: u32) -> EntityState {
    EntityState {
        layers,
        ..EntityState::default()
    }
}

/// Records one frame in which each `(entity, translation)` is recorded as a rigid entity
/// at that translation, unrotated, with the default state.
pub(crate) fn record_rigid_frame(
    history: &mut History,
    tick: u32,
    time: f64,
    entities: &[(EntityId, Vec3)],
) {
    let mut frame = history
        .begin_frame(Tick(tick), time)
        .expect("frame accepted");
    for &(id, at) in entities {
        frame
            .record_rigid(
                id,
                BoneTransform::from_translation(at),
                EntityState::default(),
            )
            .expect("record accepted");
    }
}

/// A ray from 10 m in front of `target` (along -z) towards it, reaching 100 m.
pub(crate) fn ray_at(target: Vec3) -> Ray {
    Ray::new(target - Vec3::Z * 10.0, Vec3::Z, 100.0).expect("valid ray")
}

/// The bits of a vector (for bit-exact comparisons that also tell -0.0 from 0.0).
pub(crate) fn vec_bits(v: Vec3) -> [u32; 3] {
    v.to_array().map(f32::to_bits)
}

/// The bits of a quaternion.
pub(crate) fn quat_bits(q: Quat) -> [u32; 4] {
    q.to_array().map(f32::to_bits)
}

/// Pose bits and shape of a placed shape, comparable bit for bit.
pub(crate) fn placed_bits(p: &PlacedShape) -> ([u32; 3], [u32; 4], String) {
    (
        vec_bits(p.pose.translation),
        quat_bits(p.pose.rotation),
        format!("{:?}", p.shape),
    )
}

/// Whether two rotations are the same rotation (q and -q are).
pub(crate) fn same_rotation(a: Quat, b: Quat, tolerance: f32) -> bool {
    a.dot(b).abs() >= 1.0 - tolerance
}

/// A fingerprint of a trace that ignores the window numbers (which move as frames are
/// added): the hit as Debug text, where equal text means equal bits.
pub(crate) fn hit_fingerprint(trace: &Trace) -> String {
    format!("{:?} / blocker {:?}", trace.hit, trace.blocker)
}

/// A fingerprint of a list of hits.
pub(crate) fn hits_fingerprint(hits: &[Hit]) -> String {
    format!("{hits:?}")
}

/// A fingerprint of a list of overlaps.
pub(crate) fn overlaps_fingerprint(overlaps: &[Overlap]) -> String {
    format!("{overlaps:?}")
}

/// A convenient `Time` target.
pub(crate) fn at(time: f64) -> RewindTarget {
    RewindTarget::at(time)
}
