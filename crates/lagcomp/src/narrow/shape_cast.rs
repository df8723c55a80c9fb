//! A shape moved along a line without turning (a blade's box, a fist's capsule) against a
//! hitbox: when it first touches, where, and the hitbox's normal there.
//!
//! Where the pair reduces to a line against a grown shape it is answered by the exact line
//! kernels of this module (a sphere on either side: the Minkowski sum of a shape and a
//! sphere is the shape grown by the radius, and moving one is the same as moving the other
//! the opposite way). The four pairs of boxes and capsules have no such closed form; they go
//! to parry3d's GJK shape cast on their cores (a box, a capsule's segment) grown by the
//! radii, then a few Newton steps on the exact gap between the cores (see `cast_cores`), with
//! no allocation (no penetration depth is ever asked for).
//!
//! PERF: against a sphere hitbox, 4,096 seeded pairs (`cargo bench -p lagcomp-bench --bench
//! melee -- shape_cast`, on the shared 2-core host): a 60 cm blade 212 ns a cast through the
//! line kernels, 2,267 ns through parry3d's GJK cast on the same concrete shapes; a fist
//! (capsule) 109 ns against 2,049 ns. Heads are spheres, so those pairs keep the kernels.

use glam::Vec3;
use parry3d::math::Pose as ParryPose;
use parry3d::query::details::cast_shapes_support_map_support_map;
use parry3d::query::gjk::{CsoPoint, GJKResult, VoronoiSimplex, closest_points};
use parry3d::query::{ShapeCastOptions, ShapeCastStatus};
use parry3d::shape::{Cuboid, Segment, SupportMap};

use super::PlacedShape;
use crate::rig::Shape;

/// Where a moving shape first touches a hitbox: from [`PlacedShape::cast_shape`] and, for
/// swings, [`PlacedShape::cast_swing`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SweepContact {
    /// How far the moving shape travelled before touching, metres along its line (for a
    /// swing, the fraction of the swing done, 0 to 1). 0 when it started touching.
    pub distance: f32,
    /// The point of the hitbox touched, in world space. When the shape started inside or
    /// touching: the hitbox point nearest the moving shape's centre.
    pub point: Vec3,
    /// The hitbox's outward unit normal at `point` (facing the moving shape); facing back
    /// along the motion when the shape started inside.
    pub normal: Vec3,
    /// Whether the two already overlapped where the motion starts.
    pub started_inside: bool,
}

impl PlacedShape {
    /// Where `moving`, carried along unit `dir` without turning for up to `max` metres,
    /// first touches this shape (a hitbox, standing still). `None` when it never does within
    /// `max`; a contact at distance 0 with `started_inside` when they overlap at the start.
    ///
    /// Any pair of sphere, box and capsule; a sphere on either side is exact to f32
    /// rounding, the box and capsule pairs touch to within 1e-5 m, or GJK's own precision
    /// (about 1e-4 m where a box face and a capsule's segment are nearly parallel). `dir` must be unit length and `max` finite and non-negative (the
    /// answer is unspecified otherwise; [`crate::ShapeSweep`] checks both).
    ///
    /// # Example
    /// ```
    /// use lagcomp::{Axis, PlacedShape, Pose, Shape, Vec3};
    ///
    /// // A head (12 cm sphere) 1 m ahead along -z; a knife blade, a box 2 cm thick, 4 cm
    /// // wide and 30 cm long, held along -z with its centre at the origin, thrust forward
    /// // 1 m (metres throughout).
    /// let head = PlacedShape::new(Pose::from_translation(Vec3::new(0.0, 0.0, -1.0)), Shape::sphere(0.12));
    /// let blade = PlacedShape::new(Pose::IDENTITY, Shape::cuboid(Vec3::new(0.01, 0.02, 0.15)));
    /// let contact = head.cast_shape(&blade, Vec3::NEG_Z, 1.0).expect("the thrust reaches the head");
    /// // The blade's tip (0.15 m ahead of its centre) meets the sphere's near side.
    /// assert!((contact.distance - (1.0 - 0.12 - 0.15)).abs() < 1e-5);
    /// assert!((contact.point - Vec3::new(0.0, 0.0, -0.88)).length() < 1e-5);
    /// assert!((contact.normal - Vec3::Z).length() < 1e-5);
    /// // Thrust 20 cm to the side, it passes.
    /// let aside = PlacedShape::new(Pose::from_translation(Vec3::X * 0.2), blade.shape);
    /// assert!(head.cast_shape(&aside, Vec3::NEG_Z, 1.0).is_none());
    /// // A fist (capsule) against the head works the same way.
    /// let fist = PlacedShape::new(Pose::IDENTITY, Shape::capsule(0.05, 0.03, Axis::X));
    /// assert!(head.cast_shape(&fist, Vec3::NEG_Z, 1.0).is_some());
    /// ```
    #[must_use]
    pub fn cast_shape(&self, moving: &Self, dir: Vec3, max: f32) -> Option<SweepContact> {
        match (moving.shape, self.shape) {
            (Shape::Sphere { radius }, _) => {
                let c = self
                    .cast_sphere_line(moving.pose.translation, dir, radius)?
                    .clip(max)?;
                Some(if c.enter < 0.0 {
                    self.inside_contact(moving.pose.translation, dir)
                } else {
                    SweepContact {
                        distance: c.enter,
                        point: moving.pose.translation + dir * c.enter - c.enter_normal * radius,
                        normal: c.enter_normal,
                        started_inside: false,
                    }
                })
            }
            (_, Shape::Sphere { radius }) => {
                // The hitbox's centre moving the other way against the moving shape grown by
                // the radius: the same contact, seen from the other side.
                let center = self.pose.translation;
                let c = moving.cast_sphere_line(center, -dir, radius)?.clip(max)?;
                Some(if c.enter < 0.0 {
                    self.inside_contact(moving.pose.translation, dir)
                } else {
                    SweepContact {
                        distance: c.enter,
                        point: center - c.enter_normal * radius,
                        normal: -c.enter_normal,
                        started_inside: false,
                    }
                })
            }
            (moving_shape, target_shape) => {
                let to_local = self.pose.rotation.conjugate();
                let pos12 = ParryPose::from_parts(
                    to_local * (moving.pose.translation - self.pose.translation),
                    to_local * moving.pose.rotation,
                );
                let vel12 = to_local * dir;
                let (target_core, moving_core) = (core(target_shape), core(moving_shape));
                let found = cast_cores(&pos12, vel12, &target_core, &moving_core, max)?;
                Some(match found {
                    Found::Inside => self.inside_contact(moving.pose.translation, dir),
                    Found::Touch {
                        distance,
                        point,
                        normal,
                    } => SweepContact {
                        distance,
                        // From the target's core out to its surface.
                        point: self
                            .pose
                            .transform_point(point + normal * target_core.radius()),
                        normal: (self.pose.rotation * normal).normalize_or(-dir),
                        started_inside: false,
                    },
                })
            }
        }
    }

    /// The contact reported when the moving shape starts inside or touching.
    pub(super) fn inside_contact(&self, moving_center: Vec3, dir: Vec3) -> SweepContact {
        SweepContact {
            distance: 0.0,
            point: self.closest_point(moving_center),
            normal: -dir,
            started_inside: true,
        }
    }
}

/// What [`cast_cores`] found, in the target's local axes.
enum Found {
    /// Overlapping at the start.
    Inside,
    /// Touching after `distance`: the point of the target's core nearest the moving shape,
    /// and the target's outward normal there.
    Touch {
        distance: f32,
        point: Vec3,
        normal: Vec3,
    },
}

/// How close (metres) the shapes must be at a reported contact.
const CONTACT_TOLERANCE: f32 = 1.0e-5;

/// Newton steps after parry3d's cast; one or two are taken in practice.
const REFINE_STEPS: usize = 4;

/// `moving` (at `pos12` in the target's axes) carried along `vel12` up to `max` against
/// `target`, each a core (a box or a segment) grown by its radius, `radii` the two radii
/// summed: parry3d's GJK cast, then Newton steps on the gap between the two.
///
/// Why the cores and the steps: parry3d's GJK on rounded shapes (capsules) stops when its
/// own estimate stops improving, which left contacts up to 2 mm short of touching in the
/// differential test, in its cast and in its closest points alike. On the cores (polytopes)
/// GJK is exact, and the gap between the grown shapes is the cores' distance less the radii.
/// That gap is a convex function of the distance travelled along a line, so a Newton step
/// (the gap over the speed at which the closest points close) never passes the true contact
/// when taken from before it, and lands before it when taken from after; a few steps bring
/// the gap under [`CONTACT_TOLERANCE`] or to the floor of GJK's own precision.
fn cast_cores(
    pos12: &ParryPose,
    vel12: Vec3,
    target: &Core,
    moving: &Core,
    max: f32,
) -> Option<Found> {
    let radii = target.radius() + moving.radius();
    let options = ShapeCastOptions {
        // A little beyond the reach: the steps below may move a contact the cast puts just
        // past it back inside.
        max_time_of_impact: max + 1.0e-3,
        target_distance: radii,
        stop_at_penetration: true,
        compute_impact_geometry_on_penetration: false,
    };
    let cast = |a: &dyn SupportMap, b: &dyn SupportMap| {
        cast_shapes_support_map_support_map(pos12, vel12, a, b, options)
    };
    // Overlapping at the start is decided here, by GJK alone: parry3d's cast, given shapes
    // that overlap, asks for their penetration depth (EPA), which allocates.
    if core_gap(pos12, target, moving).is_none_or(|(dist, ..)| dist < radii) {
        return Some(Found::Inside);
    }
    let hit = cast(target.support_map(), moving.support_map())?;
    let mut t = hit.time_of_impact.max(0.0);
    if radii == 0.0 {
        // Two boxes: polytopes, on which the cast is exact; and touching cores are where GJK
        // cannot tell a contact from an overlap, so the steps below would only be misled.
        if hit.status == ShapeCastStatus::PenetratingOrWithinTargetDist || t > max {
            return (t == 0.0).then_some(Found::Inside);
        }
        return Some(Found::Touch {
            distance: t,
            point: hit.witness1,
            normal: hit.normal1,
        });
    }
    // The latest distance known to come before the contact.
    let mut before = 0.0_f32;
    // The best step so far: |gap|, distance, and the target's point and normal there.
    let mut best: Option<(f32, f32, Vec3, Vec3)> = None;
    for _ in 0..=REFINE_STEPS {
        let at = ParryPose::from_parts(pos12.translation + vel12 * t, pos12.rotation);
        let Some((dist, point, normal)) = core_gap(&at, target, moving) else {
            // The cores overlap: the contact is well before.
            if t == 0.0 {
                return Some(Found::Inside);
            }
            t = 0.5 * (before + t);
            continue;
        };
        let gap = dist - radii;
        if t == 0.0 && gap < -CONTACT_TOLERANCE {
            return Some(Found::Inside);
        }
        if gap > 0.0 {
            before = before.max(t);
        }
        // GJK's distances carry their own noise (about 1e-4 m between a segment and a box
        // face nearly parallel to it): a step that does not shrink the gap is at that floor.
        if best.is_some_and(|(least, ..)| gap.abs() >= least) {
            break;
        }
        best = Some((gap.abs(), t, point, normal));
        let closing = -normal.dot(vel12);
        if gap.abs() <= CONTACT_TOLERANCE || closing <= 1.0e-6 {
            break;
        }
        // From after the contact a step may land before the start: they overlapped there.
        t = (t + gap / closing).max(0.0);
    }
    let (_, distance, point, normal) = best?;
    if distance > max {
        return None;
    }
    Some(Found::Touch {
        distance,
        point,
        normal,
    })
}

/// The distance between two cores (`pos12`: the second's pose in the first's axes), the
/// first's closest point and the unit direction from it to the second, in the first's
/// axes; `None` when they overlap. GJK alone: no penetration depth, so no allocation.
pub(super) fn core_gap(pos12: &ParryPose, a: &Core, b: &Core) -> Option<(f32, Vec3, Vec3)> {
    let (a, b) = (a.support_map(), b.support_map());
    let mut simplex = VoronoiSimplex::new();
    let towards = pos12.translation.try_normalize().unwrap_or(Vec3::X);
    simplex.reset(CsoPoint::from_shapes(pos12, a, b, towards));
    match closest_points(pos12, a, b, f32::MAX, true, &mut simplex) {
        GJKResult::ClosestPoints(p1, p2, normal) => Some(((p2 - p1).length(), p1, normal)),
        _ => None,
    }
}

/// A box, or a capsule's inner segment and radius: the polytope a shape grows from.
#[derive(Clone, Copy)]
pub(super) enum Core {
    Box(Cuboid),
    Segment(Segment, f32),
}

impl Core {
    /// How far the shape grows out of its core.
    pub(super) fn radius(&self) -> f32 {
        match self {
            Self::Box(_) => 0.0,
            Self::Segment(_, radius) => *radius,
        }
    }

    fn support_map(&self) -> &dyn SupportMap {
        match self {
            Self::Box(b) => b,
            Self::Segment(s, _) => s,
        }
    }
}

/// The core of a shape (a sphere's is a point, a segment of no length).
pub(super) fn core(shape: Shape) -> Core {
    match shape {
        Shape::Box { half_extents } => Core::Box(Cuboid::new(half_extents)),
        Shape::Capsule {
            radius,
            half_height,
            axis,
        } => {
            let tip = axis.unit() * half_height;
            Core::Segment(Segment::new(-tip, tip), radius)
        }
        Shape::Sphere { radius } => Core::Segment(Segment::new(Vec3::ZERO, Vec3::ZERO), radius),
    }
}
