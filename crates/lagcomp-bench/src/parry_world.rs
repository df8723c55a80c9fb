//! The same hitboxes in parry3d, in the present: a BVH over every hitbox, and a
//! `Compound` of them, for the `query` comparison.

use lagcomp::{PlacedShape, Shape};
use parry3d::bounding_volume::Aabb;
use parry3d::math::Pose;
use parry3d::partitioning::{Bvh, BvhBuildStrategy};
use parry3d::query::{Ray, RayCast};
use parry3d::shape::{Ball, Capsule, Compound, Cuboid, SharedShape};

/// A hitbox shape as a concrete parry3d shape (no trait object: the fastest leaf test).
#[derive(Debug, Clone, Copy)]
pub enum Part {
    /// A sphere.
    Ball(Ball),
    /// A box.
    Cuboid(Cuboid),
    /// A capsule.
    Capsule(Capsule),
}

impl Part {
    /// The parry shape equal to a `lagcomp` shape (in the shape's local frame).
    #[must_use]
    pub fn from_shape(shape: &Shape) -> Self {
        match *shape {
            Shape::Sphere { radius } => Self::Ball(Ball::new(radius)),
            Shape::Box { half_extents } => Self::Cuboid(Cuboid::new(half_extents)),
            Shape::Capsule {
                radius,
                half_height,
                axis,
            } => {
                let along = axis.unit() * half_height;
                Self::Capsule(Capsule::new(-along, along, radius))
            }
        }
    }

    /// The same shape behind parry's shared trait object (for `Compound` and rapier).
    #[must_use]
    pub fn shared(&self) -> SharedShape {
        match *self {
            Self::Ball(s) => SharedShape::new(s),
            Self::Cuboid(s) => SharedShape::new(s),
            Self::Capsule(s) => SharedShape::new(s),
        }
    }

    /// Time of impact of `ray` (solid) within `max`, with the part at `pose`.
    #[inline]
    #[must_use]
    pub fn cast_ray(&self, pose: &Pose, ray: &Ray, max: f32) -> Option<f32> {
        match self {
            Self::Ball(s) => s.cast_ray(pose, ray, max, true),
            Self::Cuboid(s) => s.cast_ray(pose, ray, max, true),
            Self::Capsule(s) => s.cast_ray(pose, ray, max, true),
        }
    }

    /// The world box of the part at `pose`.
    #[must_use]
    pub fn aabb(&self, pose: &Pose) -> Aabb {
        match self {
            Self::Ball(s) => s.aabb(pose),
            Self::Cuboid(s) => s.aabb(pose),
            Self::Capsule(s) => s.aabb(pose),
        }
    }
}

/// The pose of a placed `lagcomp` shape as a parry pose.
#[must_use]
pub fn pose_of(placed: &PlacedShape) -> Pose {
    Pose::from_parts(placed.pose.translation, placed.pose.rotation)
}

/// A ray in parry's type.
#[must_use]
pub fn parry_ray(ray: &lagcomp::Ray) -> Ray {
    Ray::new(ray.origin(), ray.dir())
}

/// Every hitbox of a frame in parry3d: a `Bvh` over all of them (leaf `i` = hitbox `i`)
/// and the same shapes as one `Compound`.
pub struct ParryWorld {
    parts: Vec<(Pose, Part)>,
    bvh: Bvh,
    compound: Compound,
}

impl std::fmt::Debug for ParryWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParryWorld")
            .field("parts", &self.parts.len())
            .finish_non_exhaustive()
    }
}

impl ParryWorld {
    /// Builds the BVH (binned SAH) and the compound over these placed hitboxes.
    #[must_use]
    pub fn new(hitboxes: &[PlacedShape]) -> Self {
        let parts: Vec<(Pose, Part)> = hitboxes
            .iter()
            .map(|p| (pose_of(p), Part::from_shape(&p.shape)))
            .collect();
        let aabbs: Vec<Aabb> = parts.iter().map(|(pose, part)| part.aabb(pose)).collect();
        let bvh = Bvh::from_leaves(BvhBuildStrategy::Binned, &aabbs);
        let compound = Compound::new(
            parts
                .iter()
                .map(|(pose, part)| (*pose, part.shared()))
                .collect(),
        );
        Self {
            parts,
            bvh,
            compound,
        }
    }

    /// Closest hit through the BVH, testing leaves with the concrete shapes: the hitbox
    /// index and the distance.
    #[inline]
    #[must_use]
    pub fn cast_bvh(&self, ray: &Ray, max: f32) -> Option<(u32, f32)> {
        self.bvh.cast_ray(ray, max, |leaf, best| {
            let (pose, part) = &self.parts[leaf as usize];
            part.cast_ray(pose, ray, best)
        })
    }

    /// Closest hit through `Compound::cast_ray` (its own BVH, parts behind trait objects).
    #[inline]
    #[must_use]
    pub fn cast_compound(&self, ray: &Ray, max: f32) -> Option<f32> {
        self.compound.cast_ray(&Pose::IDENTITY, ray, max, true)
    }
}
