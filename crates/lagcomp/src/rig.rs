//! Hitbox rigs: which shapes ride on which bones of an entity.
//!
//! A [`Rig`] is built once per kind of entity (a player model, a door) and shared by every
//! entity of that kind through an `Arc`. It holds the hitboxes and precomputes the bounding
//! radii the broadphase uses, so recording a tick only has to copy bone transforms.
//! The per-tick bone transforms themselves live in [`crate::history`].

use glam::{Quat, Vec3};

use crate::math::{
    BoneTransform, MAX_COORDINATE, MAX_EXTENT, MIN_EXTENT, Pose, ROTATION_NORM_TOLERANCE,
    TransformError,
};
use crate::narrow::PlacedShape;

/// A hitbox's stable identifier within its rig, chosen by the game (it survives rig edits
/// that reorder hitboxes, and it is what clients put on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HitboxId(pub u16);

/// A bone's index in its rig's skeleton.
pub type BoneIndex = u16;

/// The body zone a hitbox belongs to; weapons map zones to damage multipliers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Zone {
    /// Head and neck.
    Head,
    /// Chest, stomach, pelvis.
    Torso,
    /// Arms and legs.
    Limb,
    /// A game-defined zone (vehicle armour, a weak spot).
    Custom(u16),
}

/// One of the three local axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Axis {
    /// Local X.
    X,
    /// Local Y (the default: capsules usually stand up).
    #[default]
    Y,
    /// Local Z.
    Z,
}

impl Axis {
    /// The component index (0, 1, 2).
    #[must_use]
    pub const fn index(self) -> usize {
        match self {
            Self::X => 0,
            Self::Y => 1,
            Self::Z => 2,
        }
    }

    /// The unit vector along this axis.
    #[must_use]
    pub const fn unit(self) -> Vec3 {
        match self {
            Self::X => Vec3::X,
            Self::Y => Vec3::Y,
            Self::Z => Vec3::Z,
        }
    }
}

/// The geometry of a hitbox, in its own local space, centred on its origin.
///
/// # Example
/// ```
/// use lagcomp::{Axis, Shape, Vec3};
///
/// let head = Shape::sphere(0.12); // radius, metres
/// let torso = Shape::cuboid(Vec3::new(0.2, 0.3, 0.12)); // half extents
/// let arm = Shape::capsule(0.05, 0.15, Axis::X); // radius, half the inner segment's length
/// assert!((arm.bounding_radius() - 0.2).abs() < 1e-6);
/// assert!(head.validate().is_ok() && torso.validate().is_ok());
/// assert!(Shape::sphere(-1.0).validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Shape {
    /// A ball.
    Sphere {
        /// Radius.
        radius: f32,
    },
    /// An oriented box.
    Box {
        /// Half the size along each local axis.
        half_extents: Vec3,
    },
    /// A segment of length `2 * half_height` along `axis`, grown by `radius`.
    Capsule {
        /// Radius of the rounded body.
        radius: f32,
        /// Half the length of the inner segment (the full height is
        /// `2 * (half_height + radius)`).
        half_height: f32,
        /// The local axis the segment lies on.
        axis: Axis,
    },
}

impl Shape {
    /// A sphere.
    #[must_use]
    pub const fn sphere(radius: f32) -> Self {
        Self::Sphere { radius }
    }

    /// A box from its half extents.
    #[must_use]
    pub const fn cuboid(half_extents: Vec3) -> Self {
        Self::Box { half_extents }
    }

    /// A capsule along `axis`.
    #[must_use]
    pub const fn capsule(radius: f32, half_height: f32, axis: Axis) -> Self {
        Self::Capsule {
            radius,
            half_height,
            axis,
        }
    }

    /// The shape after its bone is scaled by `scale` (components in the hitbox's local
    /// axes).
    ///
    /// Shapes stay shapes of the same kind, never shear: a sphere's radius grows by the
    /// largest component; a box's half extents by each component; a capsule's half height
    /// by the component along its axis and its radius by the larger of the other two.
    #[must_use]
    #[inline]
    pub fn scaled(&self, scale: Vec3) -> Self {
        match *self {
            Self::Sphere { radius } => Self::Sphere {
                radius: radius * scale.max_element(),
            },
            Self::Box { half_extents } => Self::Box {
                half_extents: half_extents * scale,
            },
            Self::Capsule {
                radius,
                half_height,
                axis,
            } => {
                let (along, across) = match axis {
                    Axis::X => (scale.x, scale.y.max(scale.z)),
                    Axis::Y => (scale.y, scale.x.max(scale.z)),
                    Axis::Z => (scale.z, scale.x.max(scale.y)),
                };
                Self::Capsule {
                    radius: radius * across,
                    half_height: half_height * along,
                    axis,
                }
            }
        }
    }

    /// Radius of the smallest origin-centred sphere containing the shape.
    #[must_use]
    #[inline]
    pub fn bounding_radius(&self) -> f32 {
        match *self {
            Self::Sphere { radius } => radius,
            Self::Box { half_extents } => half_extents.length(),
            Self::Capsule {
                radius,
                half_height,
                ..
            } => radius + half_height,
        }
    }

    /// Checks that every dimension is finite and within [`MIN_EXTENT`]`..=`[`MAX_EXTENT`]
    /// (a capsule's half height may also be 0: a sphere).
    ///
    /// # Errors
    /// [`ShapeError`] naming the bad dimension.
    pub fn validate(&self) -> Result<(), ShapeError> {
        let ok = |x: f32| (MIN_EXTENT..=MAX_EXTENT).contains(&x);
        match *self {
            Self::Sphere { radius } if !ok(radius) => Err(ShapeError::Radius(radius)),
            Self::Box { half_extents }
                if !(ok(half_extents.x) && ok(half_extents.y) && ok(half_extents.z)) =>
            {
                Err(ShapeError::HalfExtents(half_extents))
            }
            Self::Capsule { radius, .. } if !ok(radius) => Err(ShapeError::Radius(radius)),
            Self::Capsule { half_height, .. }
                if !(half_height.is_finite() && (0.0..=MAX_EXTENT).contains(&half_height)) =>
            {
                Err(ShapeError::HalfHeight(half_height))
            }
            _ => Ok(()),
        }
    }
}

/// A shape dimension that makes no sense.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// A radius outside [`MIN_EXTENT`]`..=`[`MAX_EXTENT`] or not finite.
    #[error("radius {0} must be in [{MIN_EXTENT}, {MAX_EXTENT}]")]
    Radius(f32),
    /// Half extents not all within [`MIN_EXTENT`]`..=`[`MAX_EXTENT`].
    #[error("half extents {0} must be in [{MIN_EXTENT}, {MAX_EXTENT}]")]
    HalfExtents(Vec3),
    /// A capsule half height that is negative or not finite.
    #[error("half height {0} must be finite, non-negative and at most {MAX_EXTENT}")]
    HalfHeight(f32),
}

/// One hit volume riding on a bone.
///
/// # Example
/// ```
/// use lagcomp::{BoneTransform, Hitbox, HitboxId, Shape, Vec3, Zone};
///
/// // A head sphere (12 cm radius) 10 cm above bone 2, named by claims as hitbox 7.
/// let head = Hitbox::on_bone(2, HitboxId(7), "head", Zone::Head, Shape::sphere(0.12))
///     .offset_by(Vec3::Y * 0.1);
/// // Where it is when the bone stands 1.6 m up (world space, metres).
/// let placed = head.placed(&BoneTransform::from_translation(Vec3::new(0.0, 1.6, 0.0)));
/// assert!(placed.pose.translation.distance(Vec3::new(0.0, 1.7, 0.0)) < 1e-6);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Hitbox {
    /// Stable identifier, unique within the rig.
    pub id: HitboxId,
    /// Human-readable name ("head", "upper_arm_l") for logs and debug drawing.
    pub name: String,
    /// Body zone, for damage multipliers.
    pub zone: Zone,
    /// The bone it rides on.
    pub bone: BoneIndex,
    /// Placement relative to the bone (before the bone's scale is applied to the offset).
    pub offset: Pose,
    /// The volume.
    pub shape: Shape,
}

impl Hitbox {
    /// A hitbox centred on its bone's origin. The id and the bone are both `u16` here and
    /// swapping them compiles: [`Hitbox::on_bone`] takes the same arguments with types
    /// that cannot be swapped.
    #[must_use]
    pub fn new(
        id: u16,
        name: impl Into<String>,
        zone: Zone,
        bone: BoneIndex,
        shape: Shape,
    ) -> Self {
        Self {
            id: HitboxId(id),
            name: name.into(),
            zone,
            bone,
            offset: Pose::IDENTITY,
            shape,
        }
    }

    /// A hitbox centred on `bone`'s origin, with the id claims name it by: the same as
    /// [`Hitbox::new`], but the id is a [`HitboxId`] and every argument has its own type,
    /// so the bone and the id cannot be swapped by mistake. Prefer it to `new`.
    ///
    /// ```
    /// use lagcomp::{Hitbox, HitboxId, Shape, Zone};
    ///
    /// const HEAD_BONE: u16 = 1;
    /// const HEAD: HitboxId = HitboxId(7);
    /// let head = Hitbox::on_bone(HEAD_BONE, HEAD, "head", Zone::Head, Shape::sphere(0.12));
    /// assert_eq!((head.bone, head.id), (1, HitboxId(7)));
    /// assert_eq!(head, Hitbox::new(7, "head", Zone::Head, 1, Shape::sphere(0.12)));
    /// ```
    ///
    /// The id where the bone goes does not compile:
    ///
    /// ```compile_fail
    /// use lagcomp::{Hitbox, HitboxId, Shape, Zone};
    ///
    /// let head = Hitbox::on_bone(HitboxId(7), 1, "head", Zone::Head, Shape::sphere(0.12));
    /// ```
    #[must_use]
    pub fn on_bone(
        bone: BoneIndex,
        id: HitboxId,
        name: impl Into<String>,
        zone: Zone,
        shape: Shape,
    ) -> Self {
        Self::new(id.0, name, zone, bone, shape)
    }

    /// The same hitbox placed at `offset` from its bone.
    #[must_use]
    pub fn with_offset(mut self, offset: Pose) -> Self {
        self.offset = offset;
        self
    }

    /// The same hitbox offset by `translation` from its bone.
    #[must_use]
    pub fn offset_by(mut self, translation: Vec3) -> Self {
        self.offset.translation = translation;
        self
    }

    /// Where this hitbox is, and how big, when its bone has `bone`'s world transform.
    ///
    /// The bone's scale stretches the offset and grows the shape (see [`Shape::scaled`]);
    /// a non-uniform scale is applied along the hitbox's own axes, which is exact when its
    /// offset has no rotation or the scale is uniform.
    #[must_use]
    #[inline]
    pub fn placed(&self, bone: &BoneTransform) -> PlacedShape {
        let translation = self.placed_center(bone);
        let rotation = bone.rotation * self.offset.rotation;
        let shape = if bone.scale == Vec3::ONE {
            self.shape
        } else {
            self.shape.scaled(bone.scale)
        };
        PlacedShape::new(Pose::new(translation, rotation), shape)
    }

    /// Where [`Hitbox::placed`] puts this hitbox's centre, bit for bit (a query culls by
    /// it before placing the whole shape).
    #[must_use]
    #[inline]
    pub(crate) fn placed_center(&self, bone: &BoneTransform) -> Vec3 {
        bone.translation + bone.rotation * (bone.scale * self.offset.translation)
    }

    /// The same hitbox rotated by `rotation` relative to its bone.
    #[must_use]
    pub fn rotated(mut self, rotation: Quat) -> Self {
        self.offset.rotation = rotation;
        self
    }
}

/// Why a rig was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RigError {
    /// A rig needs at least one bone.
    #[error("a rig needs at least one bone")]
    NoBones,
    /// A rig needs at least one hitbox.
    #[error("a rig needs at least one hitbox")]
    NoHitboxes,
    /// Two hitboxes share an id.
    #[error("hitbox id {0:?} is used twice")]
    DuplicateId(HitboxId),
    /// A hitbox names a bone the rig does not have.
    #[error("hitbox {hitbox:?} rides on bone {bone}, but the rig has {bones} bones")]
    BoneOutOfRange {
        /// The hitbox.
        hitbox: HitboxId,
        /// The bone it named.
        bone: BoneIndex,
        /// How many bones the rig has.
        bones: u16,
    },
    /// A hitbox's shape is invalid.
    #[error("hitbox {hitbox:?}: {error}")]
    Shape {
        /// The hitbox.
        hitbox: HitboxId,
        /// What is wrong with its shape.
        error: ShapeError,
    },
    /// A hitbox's offset is not finite or its rotation not unit length.
    #[error("hitbox {hitbox:?} offset: {error}")]
    Offset {
        /// The hitbox.
        hitbox: HitboxId,
        /// What is wrong with its offset.
        error: TransformError,
    },
}

/// How much the radii that cull hitboxes are grown: a few ulps, and twice the rotation
/// norm tolerance (see [`Rig::new`]).
pub(crate) const REACH_PAD: f32 = 1.0 + 1.0e-5 + 2.0 * ROTATION_NORM_TOLERANCE * 1.25;

/// The hitboxes of one kind of entity, and what the broadphase needs to know about them.
///
/// Hitboxes are kept sorted by bone so a query interpolates each bone at most once.
///
/// # Example
/// ```
/// use lagcomp::{Axis, Hitbox, HitboxId, Rig, RigError, Shape, Vec3, Zone};
///
/// # fn main() -> Result<(), RigError> {
/// // Bones: 0 pelvis, 1 chest, 2 head, 3 eye (where the weapon aims from: no hitbox).
/// // Sizes in metres.
/// let humanoid = Rig::new(4, vec![
///     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
///     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
///     // The head sphere sits 5 cm in front of the head bone.
///     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)).offset_by(Vec3::Z * 0.05),
/// ])?;
/// assert_eq!(humanoid.bone_count(), 4);
/// assert_eq!(humanoid.hitbox(HitboxId(2)).map(|head| head.zone), Some(Zone::Head));
///
/// // A hitbox on a bone the rig does not have is refused.
/// let head_only = vec![Hitbox::new(0, "head", Zone::Head, 2, Shape::sphere(0.12))];
/// let refused = Rig::new(2, head_only).unwrap_err();
/// assert!(matches!(refused, RigError::BoneOutOfRange { bone: 2, bones: 2, .. }));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Rig {
    bone_count: u16,
    hitboxes: Vec<Hitbox>,
    /// Per hitbox: radius around its bone's origin that contains it (unscaled).
    hitbox_reach: Vec<f32>,
    /// Per bone: the largest `hitbox_reach` of the hitboxes on it (0 for a bare bone).
    bone_reach: Vec<f32>,
    /// `bone_reach`, each repeated four times: recording loads two bones' reaches as one
    /// 32-byte vector.
    bone_reach_splat: Vec<[f32; 4]>,
    /// Per hitbox: radius around its placed centre that contains it (unscaled).
    hitbox_ball: Vec<f32>,
    /// The hitboxes of bone `b` are `hitboxes[bone_hitboxes[b]..bone_hitboxes[b + 1]]`
    /// (they are sorted by bone).
    bone_hitboxes: Vec<u32>,
    /// Per group of four bones (`4 * g..4 * g + 4`): bit `k` set when bone `4 * g + k`
    /// carries a hitbox.
    carrying: Vec<u8>,
    /// Whether every bone carries at most one hitbox (a query's per-bone loop then needs
    /// no inner loop over the bone's hitboxes).
    one_per_bone: bool,
}

impl Rig {
    /// A rig with `bone_count` bones and these hitboxes.
    ///
    /// # Errors
    /// [`RigError`] for an empty rig, duplicate ids, a bone out of range, or a bad shape or
    /// offset.
    pub fn new(bone_count: u16, hitboxes: Vec<Hitbox>) -> Result<Self, RigError> {
        if bone_count == 0 {
            return Err(RigError::NoBones);
        }
        if hitboxes.is_empty() {
            return Err(RigError::NoHitboxes);
        }
        let mut hitboxes = hitboxes;
        for (i, hb) in hitboxes.iter().enumerate() {
            if hitboxes[..i].iter().any(|other| other.id == hb.id) {
                return Err(RigError::DuplicateId(hb.id));
            }
            if hb.bone >= bone_count {
                return Err(RigError::BoneOutOfRange {
                    hitbox: hb.id,
                    bone: hb.bone,
                    bones: bone_count,
                });
            }
            hb.shape.validate().map_err(|error| RigError::Shape {
                hitbox: hb.id,
                error,
            })?;
            hb.offset.validate().map_err(|error| RigError::Offset {
                hitbox: hb.id,
                error,
            })?;
            if hb.offset.translation.length() > MAX_EXTENT {
                return Err(RigError::Offset {
                    hitbox: hb.id,
                    error: TransformError::TranslationOutOfRange,
                });
            }
        }
        // Stable sort keeps the caller's order within a bone.
        hitboxes.sort_by_key(|hb| hb.bone);
        // Padded by a few ulps so a ray exactly tangent to a hitbox is not culled by rounding
        // in the reach test before the exact test sees it, and by twice the rotation norm
        // tolerance: a placed hitbox's rotation is the bone's times the offset's, each as far
        // from unit length as that tolerance allows (an exact-frame sample uses the stored
        // rotation as is), which moves the offset by up to |q|^2 and stretches a capsule's
        // segment by up to |q|^2 and a box (tested in its local space) by up to 1 / |q|^2.
        let pad = REACH_PAD;
        let hitbox_reach: Vec<f32> = hitboxes
            .iter()
            .map(|hb| (hb.offset.translation.length() + hb.shape.bounding_radius()) * pad)
            .collect();
        let mut bone_reach = vec![0.0_f32; usize::from(bone_count)];
        for (hb, reach) in hitboxes.iter().zip(&hitbox_reach) {
            let slot = &mut bone_reach[usize::from(hb.bone)];
            *slot = slot.max(*reach);
        }
        debug_assert!(bone_reach.iter().all(|r| *r < MAX_COORDINATE));
        let bone_reach_splat = bone_reach.iter().map(|&r| [r; 4]).collect();
        // The shape's own bounding radius around its placed centre, padded like the reach.
        let hitbox_ball: Vec<f32> = hitboxes
            .iter()
            .map(|hb| hb.shape.bounding_radius() * pad)
            .collect();
        let mut bone_hitboxes = Vec::with_capacity(usize::from(bone_count) + 1);
        let mut next = 0_usize;
        for bone in 0..=bone_count {
            while next < hitboxes.len() && hitboxes[next].bone < bone {
                next += 1;
            }
            bone_hitboxes.push(next as u32);
        }
        let mut carrying = vec![0_u8; usize::from(bone_count).div_ceil(4)];
        for hb in &hitboxes {
            let bone = usize::from(hb.bone);
            carrying[bone / 4] |= 1 << (bone % 4);
        }
        let one_per_bone = bone_hitboxes.windows(2).all(|w| w[1] - w[0] <= 1);
        Ok(Self {
            one_per_bone,
            bone_count,
            hitboxes,
            hitbox_reach,
            bone_reach,
            bone_reach_splat,
            hitbox_ball,
            bone_hitboxes,
            carrying,
        })
    }

    /// A rigid rig: one bone carrying every hitbox.
    ///
    /// # Errors
    /// As [`Rig::new`].
    pub fn rigid(hitboxes: Vec<Hitbox>) -> Result<Self, RigError> {
        Self::new(1, hitboxes)
    }

    /// How many bones an entity with this rig records each tick.
    #[must_use]
    pub fn bone_count(&self) -> u16 {
        self.bone_count
    }

    /// The hitboxes, sorted by bone.
    #[must_use]
    pub fn hitboxes(&self) -> &[Hitbox] {
        &self.hitboxes
    }

    /// The hitbox with this id.
    #[must_use]
    pub fn hitbox(&self, id: HitboxId) -> Option<&Hitbox> {
        self.hitboxes.iter().find(|hb| hb.id == id)
    }

    /// The index of the hitbox with this id in [`Rig::hitboxes`].
    #[must_use]
    pub fn hitbox_index(&self, id: HitboxId) -> Option<usize> {
        self.hitboxes.iter().position(|hb| hb.id == id)
    }

    /// Radius around the bone origin that contains hitbox `index` (unscaled).
    pub(crate) fn hitbox_reach(&self, index: usize) -> f32 {
        self.hitbox_reach[index]
    }

    /// Per bone, the radius around its origin that contains all its hitboxes (unscaled).
    pub(crate) fn bone_reach(&self) -> &[f32] {
        &self.bone_reach
    }

    /// [`Rig::bone_reach`] with each reach repeated in four lanes.
    pub(crate) fn bone_reach_splat(&self) -> &[[f32; 4]] {
        &self.bone_reach_splat
    }

    /// Radius around hitbox `index`'s placed centre that contains it (unscaled), however
    /// far from unit length the placing rotation is within the accepted tolerance.
    #[inline]
    pub(crate) fn hitbox_ball(&self, index: usize) -> f32 {
        self.hitbox_ball[index]
    }

    /// Which bones carry hitboxes: byte `g` has bit `k` set when bone `4 * g + k` does.
    #[inline]
    pub(crate) fn carrying(&self) -> &[u8] {
        &self.carrying
    }

    /// Whether no bone carries more than one hitbox: then bone `b`'s hitbox, if any, is
    /// [`Rig::hitboxes_of`]`(b).start`.
    #[inline]
    pub(crate) fn one_per_bone(&self) -> bool {
        self.one_per_bone
    }

    /// The indices (into [`Rig::hitboxes`]) of the hitboxes riding on `bone`.
    #[inline]
    pub(crate) fn hitboxes_of(&self, bone: usize) -> std::ops::Range<usize> {
        self.bone_hitboxes[bone] as usize..self.bone_hitboxes[bone + 1] as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_rules() {
        let s = Vec3::new(2.0, 3.0, 0.5);
        assert_eq!(Shape::sphere(1.0).scaled(s), Shape::sphere(3.0));
        assert_eq!(
            Shape::cuboid(Vec3::ONE).scaled(s),
            Shape::cuboid(Vec3::new(2.0, 3.0, 0.5))
        );
        assert_eq!(
            Shape::capsule(1.0, 1.0, Axis::Y).scaled(s),
            Shape::capsule(2.0, 3.0, Axis::Y)
        );
        assert_eq!(
            Shape::capsule(1.0, 1.0, Axis::Z).scaled(s),
            Shape::capsule(3.0, 0.5, Axis::Z)
        );
    }

    #[test]
    fn rig_rejects_bad_input() {
        let hb = |id, bone| Hitbox::new(id, "x", Zone::Torso, bone, Shape::sphere(0.5));
        assert_eq!(Rig::new(0, vec![hb(0, 0)]), Err(RigError::NoBones));
        assert_eq!(Rig::new(1, vec![]), Err(RigError::NoHitboxes));
        assert_eq!(
            Rig::new(2, vec![hb(0, 0), hb(0, 1)]),
            Err(RigError::DuplicateId(HitboxId(0)))
        );
        assert!(matches!(
            Rig::new(2, vec![hb(0, 2)]),
            Err(RigError::BoneOutOfRange { bone: 2, .. })
        ));
        let nan = Hitbox::new(0, "x", Zone::Head, 0, Shape::sphere(f32::NAN));
        assert!(matches!(
            Rig::new(1, vec![nan]),
            Err(RigError::Shape { .. })
        ));
        let bad_offset = hb(0, 0).offset_by(Vec3::new(f32::INFINITY, 0.0, 0.0));
        assert!(matches!(
            Rig::new(1, vec![bad_offset]),
            Err(RigError::Offset { .. })
        ));
    }

    #[test]
    fn reach_covers_offset_hitboxes() {
        let rig = Rig::new(
            2,
            vec![
                Hitbox::new(7, "head", Zone::Head, 1, Shape::sphere(0.2)).offset_by(Vec3::Y),
                Hitbox::new(3, "body", Zone::Torso, 0, Shape::capsule(0.3, 0.5, Axis::Y)),
            ],
        )
        .expect("valid rig");
        // Sorted by bone.
        assert_eq!(rig.hitboxes()[0].id, HitboxId(3));
        let pad = REACH_PAD;
        assert_eq!(rig.bone_reach(), &[0.8 * pad, 1.2 * pad]);
        assert!(rig.one_per_bone());
    }

    #[test]
    fn one_per_bone_says_whether_a_bone_carries_several() {
        let hb = |id, bone| Hitbox::new(id, "x", Zone::Torso, bone, Shape::sphere(0.5));
        // Bare bones are fine; two hitboxes on bone 2 are not.
        let sparse = Rig::new(4, vec![hb(0, 3), hb(1, 1)]).expect("valid rig");
        assert!(sparse.one_per_bone());
        let shared = Rig::new(4, vec![hb(0, 2), hb(1, 0), hb(2, 2)]).expect("valid rig");
        assert!(!shared.one_per_bone());
        assert_eq!(shared.hitboxes_of(2), 1..3);
        assert!(
            !Rig::rigid(vec![hb(0, 0), hb(1, 0)])
                .expect("valid rig")
                .one_per_bone()
        );
    }
}
