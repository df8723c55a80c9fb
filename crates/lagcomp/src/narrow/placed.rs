//! A shape placed in the world: a rewound hitbox or a wall.

use glam::Vec3;

use super::ray_box::line_box_rotated;
use super::{
    Crossing, Obb, line_capsule, line_rounded_box, line_sphere, obb_overlaps_obb,
    segment_overlaps_box,
};
use crate::math::{Aabb, Pose};
use crate::rig::Shape;

/// A shape at a world pose. For hitboxes the shape is already scaled by its bone.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PlacedShape {
    /// Where the shape's centre and axes are.
    pub pose: Pose,
    /// The shape, in its local axes.
    pub shape: Shape,
}

impl PlacedShape {
    /// A shape at a pose.
    #[must_use]
    pub const fn new(pose: Pose, shape: Shape) -> Self {
        Self { pose, shape }
    }

    /// World-space endpoints of a capsule's inner segment.
    #[inline]
    fn segment(&self, half_height: f32, axis: crate::rig::Axis) -> (Vec3, Vec3) {
        let along = self.pose.rotation * (axis.unit() * half_height);
        (self.pose.translation - along, self.pose.translation + along)
    }

    /// Where the line `origin + t * dir` (unit `dir`) crosses the shape, normals in world
    /// space.
    #[must_use]
    #[inline]
    pub fn cast_line(&self, origin: Vec3, dir: Vec3) -> Option<Crossing> {
        self.cast_sphere_line(origin, dir, 0.0)
    }

    /// Where a sphere of `radius` whose centre moves along the line first and last touches
    /// the shape. The crossing is of the centre; the touching point on the shape is
    /// `centre - normal * radius`. With `radius` 0 this is [`PlacedShape::cast_line`].
    #[must_use]
    #[inline]
    pub fn cast_sphere_line(&self, origin: Vec3, dir: Vec3, radius: f32) -> Option<Crossing> {
        self.cast_sphere_line_inline(origin, dir, radius)
    }

    /// [`PlacedShape::cast_sphere_line`], always inlined: for a query's exact test, whose
    /// shape is built in registers.
    ///
    /// PERF: called out of line, the shape went through the stack, stored as the caller
    /// built it (the centre as 8 + 4 bytes) and loaded as the callee reads it (the centre's
    /// last two floats as 8 bytes across both stores), which the store buffer cannot
    /// forward: every exact test waited for its own argument to reach the cache.
    #[must_use]
    #[inline(always)]
    pub(crate) fn cast_sphere_line_inline(
        &self,
        origin: Vec3,
        dir: Vec3,
        radius: f32,
    ) -> Option<Crossing> {
        match self.shape {
            Shape::Sphere { radius: r } => {
                line_sphere(origin, dir, self.pose.translation, r + radius)
            }
            Shape::Capsule {
                radius: r,
                half_height,
                axis,
            } => {
                let (a, b) = self.segment(half_height, axis);
                line_capsule(origin, dir, a, b, r + radius)
            }
            Shape::Box { half_extents } => {
                let local_origin = self.pose.inverse_transform_point(origin);
                let local_dir = self.pose.inverse_transform_vector(dir);
                if radius > 0.0 {
                    line_rounded_box(local_origin, local_dir, half_extents, radius)
                        .map(|c| c.rotate_normals(self.pose.rotation))
                } else {
                    line_box_rotated(local_origin, local_dir, half_extents, self.pose.rotation)
                }
            }
        }
    }

    /// The point of the shape nearest to `point` (the point itself when inside).
    #[must_use]
    pub fn closest_point(&self, point: Vec3) -> Vec3 {
        match self.shape {
            Shape::Sphere { radius } => {
                let offset = point - self.pose.translation;
                let dist = offset.length();
                if dist <= radius {
                    point
                } else {
                    self.pose.translation + offset * (radius / dist)
                }
            }
            Shape::Box { half_extents } => {
                Obb::new(self.pose.translation, self.pose.rotation, half_extents)
                    .closest_point(point)
            }
            Shape::Capsule {
                radius,
                half_height,
                axis,
            } => {
                let (a, b) = self.segment(half_height, axis);
                let on_axis = closest_on_segment(a, b, point);
                let offset = point - on_axis;
                let dist = offset.length();
                if dist <= radius {
                    point
                } else {
                    on_axis + offset * (radius / dist)
                }
            }
        }
    }

    /// Distance from `point` to the shape (0 inside).
    #[must_use]
    pub fn distance_to_point(&self, point: Vec3) -> f32 {
        self.closest_point(point).distance(point)
    }

    /// Whether the shape and the sphere share any point.
    #[must_use]
    pub fn overlaps_sphere(&self, center: Vec3, radius: f32) -> bool {
        self.closest_point(center).distance_squared(center) <= radius * radius
    }

    /// Whether the shape and the oriented box share any point.
    #[must_use]
    pub fn overlaps_obb(&self, obb: &Obb) -> bool {
        match self.shape {
            Shape::Sphere { radius } => {
                obb.closest_point(self.pose.translation)
                    .distance_squared(self.pose.translation)
                    <= radius * radius
            }
            Shape::Box { half_extents } => obb_overlaps_obb(
                &Obb::new(self.pose.translation, self.pose.rotation, half_extents),
                obb,
            ),
            Shape::Capsule {
                radius,
                half_height,
                axis,
            } => {
                let (a, b) = self.segment(half_height, axis);
                let to_box = Pose::new(obb.center, obb.rotation);
                segment_overlaps_box(
                    to_box.inverse_transform_point(a),
                    to_box.inverse_transform_point(b),
                    radius,
                    obb.half_extents,
                )
            }
        }
    }

    /// The point of `other` (the same hitbox at another time, perhaps scaled differently)
    /// that corresponds to `point` on this one: surface points map to surface points.
    ///
    /// Spheres scale about the centre by the radius ratio; boxes per axis by the half
    /// extent ratios; capsules keep the point's place along the segment (scaled by the
    /// half height ratio) and its offset from it (scaled by the radius ratio). Shapes of
    /// different kinds (never the case for one hitbox) map rigidly.
    #[must_use]
    pub fn corresponding_point(&self, other: &Self, point: Vec3) -> Vec3 {
        let local = self.pose.inverse_transform_point(point);
        let mapped = match (self.shape, other.shape) {
            (Shape::Sphere { radius: from }, Shape::Sphere { radius: to }) => local * (to / from),
            (Shape::Box { half_extents: from }, Shape::Box { half_extents: to }) => {
                local * (to / from)
            }
            (
                Shape::Capsule {
                    radius: r_from,
                    half_height: h_from,
                    axis,
                },
                Shape::Capsule {
                    radius: r_to,
                    half_height: h_to,
                    ..
                },
            ) => {
                let i = axis.index();
                let along = local[i].clamp(-h_from, h_from);
                let mut offset = local;
                offset[i] -= along;
                let mut out = offset * (r_to / r_from);
                if h_from > 0.0 {
                    out[i] += along * (h_to / h_from);
                }
                out
            }
            _ => local,
        };
        other.pose.transform_point(mapped)
    }

    /// The world-space box around the shape.
    #[must_use]
    pub fn aabb(&self) -> Aabb {
        match self.shape {
            Shape::Sphere { radius } => Aabb::around_sphere(self.pose.translation, radius),
            Shape::Box { half_extents } => {
                Obb::new(self.pose.translation, self.pose.rotation, half_extents).aabb()
            }
            Shape::Capsule {
                radius,
                half_height,
                axis,
            } => {
                let (a, b) = self.segment(half_height, axis);
                Aabb::new(a.min(b), a.max(b)).inflated(radius)
            }
        }
    }
}

/// The point of segment `a`-`b` nearest to `p`.
#[must_use]
#[inline]
pub(crate) fn closest_on_segment(a: Vec3, b: Vec3, p: Vec3) -> Vec3 {
    let ab = b - a;
    let len_sq = ab.length_squared();
    if len_sq == 0.0 {
        return a;
    }
    a + ab * ((p - a).dot(ab) / len_sq).clamp(0.0, 1.0)
}
