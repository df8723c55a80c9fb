//! A humanoid skeleton with one hitbox per bone, and its animation.
//!
//! The skeleton is a small forward-kinematics chain: every bone has a parent (earlier in
//! the list), an offset from it in the parent's frame and a swing axis; a walk cycle
//! swings the limbs a few tenths of a radian and the torso a few hundredths. World
//! transforms are what a game server hands to `lagcomp` every tick.

use std::f32::consts::{PI, TAU};

use lagcomp::{Axis, BoneTransform, Hitbox, Quat, Rig, Shape, Vec3, Zone};

/// One bone of the skeleton and the hitbox riding on it.
#[derive(Debug, Clone, Copy)]
struct BoneDef {
    name: &'static str,
    parent: Option<usize>,
    /// From the parent bone's origin, in the parent's frame.
    offset: Vec3,
    /// Local axis the walk cycle swings the bone about.
    swing_axis: Vec3,
    /// Peak swing angle in radians.
    swing_amp: f32,
    /// Phase within the walk cycle (left and right limbs are opposite).
    swing_phase: f32,
    zone: Zone,
    shape: Shape,
    /// Where the hitbox sits on its bone.
    hitbox_offset: Vec3,
}

const fn bone(
    name: &'static str,
    parent: Option<usize>,
    offset: Vec3,
    swing: (Vec3, f32, f32),
    zone: Zone,
    shape: Shape,
    hitbox_offset: Vec3,
) -> BoneDef {
    BoneDef {
        name,
        parent,
        offset,
        swing_axis: swing.0,
        swing_amp: swing.1,
        swing_phase: swing.2,
        zone,
        shape,
        hitbox_offset,
    }
}

/// Index of the chest bone (the shots aim at its hitbox).
pub const CHEST_BONE: usize = 2;

/// Offset of the chest hitbox from the chest bone.
const CHEST_HITBOX_OFFSET: Vec3 = Vec3::new(0.0, 0.12, 0.0);

/// Height of the pelvis above the ground.
const PELVIS_HEIGHT: f32 = 0.95;

const fn v(x: f32, y: f32, z: f32) -> Vec3 {
    Vec3::new(x, y, z)
}

/// The 16-bone base skeleton: pelvis, abdomen, chest, head, three bones per arm and three
/// per leg. Parents always come before their children.
const BASE: [BoneDef; 16] = [
    bone(
        "pelvis",
        None,
        v(0.0, 0.0, 0.0),
        (Vec3::Y, 0.08, 0.0),
        Zone::Torso,
        Shape::cuboid(v(0.16, 0.10, 0.11)),
        v(0.0, 0.0, 0.0),
    ),
    bone(
        "abdomen",
        Some(0),
        v(0.0, 0.12, 0.0),
        (Vec3::Y, 0.05, PI),
        Zone::Torso,
        Shape::cuboid(v(0.15, 0.10, 0.10)),
        v(0.0, 0.08, 0.0),
    ),
    bone(
        "chest",
        Some(1),
        v(0.0, 0.20, 0.0),
        (Vec3::Y, 0.06, PI),
        Zone::Torso,
        Shape::cuboid(v(0.18, 0.15, 0.11)),
        CHEST_HITBOX_OFFSET,
    ),
    bone(
        "head",
        Some(2),
        v(0.0, 0.38, 0.0),
        (Vec3::X, 0.04, 0.5),
        Zone::Head,
        Shape::sphere(0.11),
        v(0.0, 0.08, 0.02),
    ),
    bone(
        "upper_arm_l",
        Some(2),
        v(-0.21, 0.25, 0.0),
        (Vec3::X, 0.35, PI),
        Zone::Limb,
        Shape::capsule(0.05, 0.10, Axis::Y),
        v(0.0, -0.14, 0.0),
    ),
    bone(
        "forearm_l",
        Some(4),
        v(0.0, -0.28, 0.0),
        (Vec3::X, 0.25, PI + 0.6),
        Zone::Limb,
        Shape::capsule(0.045, 0.09, Axis::Y),
        v(0.0, -0.13, 0.0),
    ),
    bone(
        "hand_l",
        Some(5),
        v(0.0, -0.26, 0.0),
        (Vec3::Z, 0.10, PI),
        Zone::Limb,
        Shape::cuboid(v(0.025, 0.08, 0.045)),
        v(0.0, -0.08, 0.0),
    ),
    bone(
        "upper_arm_r",
        Some(2),
        v(0.21, 0.25, 0.0),
        (Vec3::X, 0.35, 0.0),
        Zone::Limb,
        Shape::capsule(0.05, 0.10, Axis::Y),
        v(0.0, -0.14, 0.0),
    ),
    bone(
        "forearm_r",
        Some(7),
        v(0.0, -0.28, 0.0),
        (Vec3::X, 0.25, 0.6),
        Zone::Limb,
        Shape::capsule(0.045, 0.09, Axis::Y),
        v(0.0, -0.13, 0.0),
    ),
    bone(
        "hand_r",
        Some(8),
        v(0.0, -0.26, 0.0),
        (Vec3::Z, 0.10, 0.0),
        Zone::Limb,
        Shape::cuboid(v(0.025, 0.08, 0.045)),
        v(0.0, -0.08, 0.0),
    ),
    bone(
        "thigh_l",
        Some(0),
        v(-0.10, -0.06, 0.0),
        (Vec3::X, 0.45, 0.0),
        Zone::Limb,
        Shape::capsule(0.075, 0.14, Axis::Y),
        v(0.0, -0.21, 0.0),
    ),
    bone(
        "shin_l",
        Some(10),
        v(0.0, -0.43, 0.0),
        (Vec3::X, 0.35, -0.9),
        Zone::Limb,
        Shape::capsule(0.06, 0.15, Axis::Y),
        v(0.0, -0.20, 0.0),
    ),
    bone(
        "foot_l",
        Some(11),
        v(0.0, -0.42, 0.0),
        (Vec3::X, 0.20, -1.4),
        Zone::Limb,
        Shape::cuboid(v(0.05, 0.04, 0.12)),
        v(0.0, -0.03, 0.05),
    ),
    bone(
        "thigh_r",
        Some(0),
        v(0.10, -0.06, 0.0),
        (Vec3::X, 0.45, PI),
        Zone::Limb,
        Shape::capsule(0.075, 0.14, Axis::Y),
        v(0.0, -0.21, 0.0),
    ),
    bone(
        "shin_r",
        Some(13),
        v(0.0, -0.43, 0.0),
        (Vec3::X, 0.35, PI - 0.9),
        Zone::Limb,
        Shape::capsule(0.06, 0.15, Axis::Y),
        v(0.0, -0.20, 0.0),
    ),
    bone(
        "foot_r",
        Some(14),
        v(0.0, -0.42, 0.0),
        (Vec3::X, 0.20, PI - 1.4),
        Zone::Limb,
        Shape::cuboid(v(0.05, 0.04, 0.12)),
        v(0.0, -0.03, 0.05),
    ),
];

/// The four extra bones of the 20-bone skeleton: neck, both clavicles, upper spine.
const EXTRA: [BoneDef; 4] = [
    bone(
        "neck",
        Some(2),
        v(0.0, 0.30, 0.0),
        (Vec3::X, 0.03, 0.3),
        Zone::Head,
        Shape::capsule(0.05, 0.04, Axis::Y),
        v(0.0, 0.04, 0.0),
    ),
    bone(
        "clavicle_l",
        Some(2),
        v(-0.04, 0.26, 0.0),
        (Vec3::Z, 0.05, PI),
        Zone::Torso,
        Shape::capsule(0.04, 0.06, Axis::X),
        v(-0.08, 0.0, 0.0),
    ),
    bone(
        "clavicle_r",
        Some(2),
        v(0.04, 0.26, 0.0),
        (Vec3::Z, 0.05, 0.0),
        Zone::Torso,
        Shape::capsule(0.04, 0.06, Axis::X),
        v(0.08, 0.0, 0.0),
    ),
    bone(
        "spine_upper",
        Some(1),
        v(0.0, 0.16, 0.0),
        (Vec3::Y, 0.05, PI),
        Zone::Torso,
        Shape::cuboid(v(0.16, 0.06, 0.10)),
        v(0.0, 0.0, 0.0),
    ),
];

/// A humanoid skeleton with `bones` bones (16 or 20), one hitbox per bone.
#[derive(Debug, Clone)]
pub struct Skeleton {
    bones: Vec<BoneDef>,
}

impl Skeleton {
    /// The humanoid with 16 bones (torso, head, arms, legs) or 20 (adds neck, clavicles
    /// and upper spine).
    ///
    /// # Panics
    /// For any other bone count.
    #[must_use]
    pub fn humanoid(bones: u16) -> Self {
        let bones = match bones {
            16 => BASE.to_vec(),
            20 => BASE.iter().chain(EXTRA.iter()).copied().collect(),
            other => panic!("humanoid skeletons have 16 or 20 bones, not {other}"),
        };
        Self { bones }
    }

    /// How many bones (and hitboxes).
    #[must_use]
    pub fn bone_count(&self) -> usize {
        self.bones.len()
    }

    /// The `lagcomp` rig: hitbox `i` rides on bone `i`.
    ///
    /// # Panics
    /// Never for the built-in skeletons (their shapes are valid).
    #[must_use]
    pub fn rig(&self) -> Rig {
        let hitboxes = self
            .bones
            .iter()
            .enumerate()
            .map(|(i, b)| {
                Hitbox::new(i as u16, b.name, b.zone, i as u16, b.shape).offset_by(b.hitbox_offset)
            })
            .collect();
        Rig::new(self.bones.len() as u16, hitboxes).expect("the humanoid rig is valid")
    }

    /// Writes the world transform of every bone into `out` (one per bone) for an entity
    /// standing at `root` on the ground, facing `yaw` radians about +Y, `gait` radians
    /// into its walk cycle.
    pub fn pose(&self, root: Vec3, yaw: f32, gait: f32, out: &mut [BoneTransform]) {
        assert_eq!(out.len(), self.bones.len(), "one transform per bone");
        let facing = Quat::from_rotation_y(yaw);
        // The pelvis bobs twice per stride.
        let bob = 0.03 * (2.0 * gait).sin();
        for (i, b) in self.bones.iter().enumerate() {
            let swing =
                Quat::from_axis_angle(b.swing_axis, b.swing_amp * (gait + b.swing_phase).sin());
            let (translation, rotation) = match b.parent {
                None => (root + Vec3::Y * (PELVIS_HEIGHT + bob), facing * swing),
                Some(p) => {
                    let parent = &out[p];
                    (
                        parent.translation + parent.rotation * b.offset,
                        parent.rotation * swing,
                    )
                }
            };
            out[i] = BoneTransform::new(translation, rotation.normalize());
        }
    }

    /// World position of the chest hitbox's centre given the bone transforms.
    #[must_use]
    pub fn chest(&self, bones: &[BoneTransform]) -> Vec3 {
        let chest = &bones[CHEST_BONE];
        chest.translation + chest.rotation * CHEST_HITBOX_OFFSET
    }
}

/// Radians of walk cycle per metre walked (a stride of about 1.5 m per cycle).
pub const GAIT_PER_METRE: f32 = TAU / 1.5;
