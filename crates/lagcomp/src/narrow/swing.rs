//! A shape turned about a pivot (a blade swing, a punch's hook) against a hitbox: the
//! "trace rotation".
//!
//! The swing is a rigid turn by a fixed angle about a fixed axis through a pivot (the
//! shoulder, the wrist), at a steady rate, the shape turning with it. It is cast by
//! conservative advancement: at each step the gap between the two shapes (parry3d's
//! closest points, by GJK on their cores: a box, or a capsule's segment) is divided by the fastest any point of the swung shape moves (the
//! angle times its farthest reach from the axis), and the swing advances by that much, which
//! can never carry it past a contact. It stops within 0.1 mm of touching.
//!
//! Not a chain of straight substeps: a substep of a shape that also turns carries a
//! first-order error (a point 30 cm from the blade's centre strays `0.3 * step / 2` metres
//! from its arc), which for 1 cm over a 90 degree swing would take 40 linear casts per
//! hitbox. Nor parry3d's nonlinear shape cast: in the sampled-oracle test it missed a swing
//! that sank 3.5 mm into a sphere (its end-of-motion separation test gave up early).

use glam::{Quat, Vec3};
use parry3d::math::Pose as ParryPose;

use super::shape_cast::{core, core_gap};
use super::{PlacedShape, SweepContact};
use crate::math::{Pose, TransformError, check_translation};
use crate::rig::Shape;

/// A turn about an axis through a pivot: `angle` radians about `axis` (right-handed: a
/// positive angle about +y turns +x towards -z), done at a steady rate over the swing.
///
/// # Example
/// ```
/// use lagcomp::{Pose, Swing, Vec3};
///
/// // A 90 degree swing from right to left about the shoulder, 1.5 m up, seen from above.
/// let swing = Swing::new(Vec3::new(0.0, 1.5, 0.0), Vec3::Y, 90f32.to_radians())?;
/// // A blade held 60 cm out to the right ends up 60 cm ahead (-z).
/// let start = Pose::from_translation(Vec3::new(0.6, 1.5, 0.0));
/// let end = swing.pose_at(&start, 1.0);
/// assert!((end.translation - Vec3::new(0.0, 1.5, -0.6)).length() < 1e-5);
/// // Half way, it is 45 degrees round.
/// let half = swing.pose_at(&start, 0.5).translation;
/// assert!((half - Vec3::new(0.6 * 0.5f32.sqrt(), 1.5, -0.6 * 0.5f32.sqrt())).length() < 1e-5);
/// // A zero axis or a swing of more than a full turn is refused.
/// assert!(Swing::new(Vec3::ZERO, Vec3::ZERO, 1.0).is_err());
/// assert!(Swing::new(Vec3::ZERO, Vec3::Y, 7.0).is_err());
/// # Ok::<(), lagcomp::SwingError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Swing {
    pivot: Vec3,
    axis: Vec3,
    angle: f32,
}

/// Why a swing was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum SwingError {
    /// The pivot is not finite or out of range.
    #[error("swing pivot: {0}")]
    Pivot(TransformError),
    /// The axis is zero, NaN or infinite.
    #[error("swing axis must be a finite, non-zero vector")]
    Axis,
    /// The angle is NaN, infinite or more than a full turn either way.
    #[error("swing angle {0} rad must be finite and within one turn (2 pi) either way")]
    Angle(f32),
}

impl Swing {
    /// A swing of `angle` radians (at most a full turn, 2 pi, either way) about `axis`
    /// (normalized here) through `pivot` (world space, metres).
    ///
    /// # Errors
    /// [`SwingError`] for a bad pivot, a zero or non-finite axis, or a bad angle.
    pub fn new(pivot: Vec3, axis: Vec3, angle: f32) -> Result<Self, SwingError> {
        check_translation(pivot).map_err(SwingError::Pivot)?;
        if !axis.is_finite() {
            return Err(SwingError::Axis);
        }
        let largest = axis.abs().max_element();
        if largest == 0.0 {
            return Err(SwingError::Axis);
        }
        if !(angle.is_finite() && angle.abs() <= std::f32::consts::TAU) {
            return Err(SwingError::Angle(angle));
        }
        Ok(Self {
            pivot,
            axis: (axis / largest).normalize(),
            angle,
        })
    }

    /// The pivot, world space.
    #[must_use]
    pub const fn pivot(&self) -> Vec3 {
        self.pivot
    }

    /// The unit axis.
    #[must_use]
    pub const fn axis(&self) -> Vec3 {
        self.axis
    }

    /// The whole swing's angle, radians.
    #[must_use]
    pub const fn angle(&self) -> f32 {
        self.angle
    }

    /// The turn done by `fraction` of the swing (0: none, 1: all of it).
    #[must_use]
    pub fn turn_at(&self, fraction: f32) -> Quat {
        Quat::from_axis_angle(self.axis, self.angle * fraction)
    }

    /// Where a shape that starts the swing at `start` is after `fraction` of it.
    #[must_use]
    pub fn pose_at(&self, start: &Pose, fraction: f32) -> Pose {
        let turn = self.turn_at(fraction);
        Pose::new(
            self.pivot + turn * (start.translation - self.pivot),
            (turn * start.rotation).normalize(),
        )
    }

    /// How far the farthest point of `shape` (starting at `start`) from the axis travels
    /// over the whole swing, metres: the angle times that point's distance from the axis,
    /// bounded by the centre's distance plus the shape's bounding radius. A rewound swing
    /// reports its distances on this scale (the tip's path).
    #[must_use]
    pub fn tip_path(&self, start: &PlacedShape) -> f32 {
        self.angle.abs() * self.lever(start)
    }

    /// Whether the two shapes' bands along the axis (heights) and across it (distances
    /// from it) overlap, each grown by the contact tolerance: if either pair is apart, no
    /// turn about the axis brings them together.
    fn bands_meet(&self, a: &PlacedShape, b: &PlacedShape) -> bool {
        let band = |shape: &PlacedShape| {
            let offset = shape.pose.translation - self.pivot;
            let height = offset.dot(self.axis);
            let across = (offset - self.axis * height).length();
            let reach = shape.shape.bounding_radius();
            let half_height = match shape.shape {
                Shape::Sphere { radius } => radius,
                Shape::Box { half_extents } => {
                    let local = shape.pose.rotation.conjugate() * self.axis;
                    local.abs().dot(half_extents)
                }
                Shape::Capsule {
                    radius,
                    half_height,
                    axis,
                } => {
                    let along = shape.pose.rotation * axis.unit();
                    along.dot(self.axis).abs() * half_height + radius
                }
            };
            (
                (height - half_height, height + half_height),
                ((across - reach).max(0.0), across + reach),
            )
        };
        let ((a_low, a_high), (a_near, a_far)) = band(a);
        let ((b_low, b_high), (b_near, b_far)) = band(b);
        let slack = SWING_TOLERANCE;
        a_low <= b_high + slack
            && b_low <= a_high + slack
            && a_near <= b_far + slack
            && b_near <= a_far + slack
    }

    /// The distance from the axis of the shape's farthest point, bounded as in
    /// [`Swing::tip_path`].
    #[must_use]
    pub(crate) fn lever(&self, start: &PlacedShape) -> f32 {
        let offset = start.pose.translation - self.pivot;
        let off_axis = (offset - self.axis * offset.dot(self.axis)).length();
        off_axis + start.shape.bounding_radius()
    }
}

impl PlacedShape {
    /// Where `moving`, which starts the swing at its pose and turns with it, first touches
    /// this shape (a hitbox, standing still). The contact's `distance` is the fraction of
    /// the swing done (0 to 1); `point` and `normal` are on this shape, world space.
    /// `None` when the swing never touches it.
    ///
    /// # Example
    /// ```
    /// use lagcomp::{PlacedShape, Pose, Shape, Swing, Vec3};
    ///
    /// // A blade (a box 1 m long along x) held out to the right of the shoulder at the
    /// // origin (from 0.2 m to 1.2 m out); a head (12 cm sphere) 70 cm in front (-z). A
    /// // thrust forward misses it...
    /// let blade = PlacedShape::new(Pose::from_translation(Vec3::X * 0.7), Shape::cuboid(Vec3::new(0.5, 0.02, 0.01)));
    /// let head = PlacedShape::new(Pose::from_translation(Vec3::new(0.0, 0.0, -0.7)), Shape::sphere(0.12));
    /// assert!(head.cast_shape(&blade, Vec3::NEG_Z, 1.0).is_none());
    /// // ...a 90 degree swing to the left about the shoulder (+y) strikes it near the end.
    /// let swing = Swing::new(Vec3::ZERO, Vec3::Y, 90f32.to_radians())?;
    /// let contact = head.cast_swing(&blade, &swing).expect("the swing strikes the head");
    /// assert!(contact.distance > 0.8 && contact.distance < 1.0);
    /// assert!((head.pose.translation.distance(contact.point) - 0.12).abs() < 1e-3);
    /// # Ok::<(), lagcomp::SwingError>(())
    /// ```
    #[must_use]
    pub fn cast_swing(&self, moving: &Self, swing: &Swing) -> Option<SweepContact> {
        // Everything relative to this shape's centre: f32 keeps its precision near the
        // fight, wherever it is in the world.
        let here = self.pose.translation;
        let to_local = self.pose.rotation.conjugate();
        let start = Pose::new(moving.pose.translation - here, moving.pose.rotation);
        let local = Swing {
            pivot: swing.pivot - here,
            ..*swing
        };
        let (target, swung) = (core(self.shape), core(moving.shape));
        let radii = target.radius() + swung.radius();
        // Turning about the axis keeps each point's height along it and its distance from
        // it: a shape whose band of either never meets the target's cannot touch it (and
        // would otherwise take many small advances past it: a near miss). PERF: one
        // rewound swing on the 200x20 bench 43.5 -> 23.2 us.
        if !swing.bands_meet(moving, self) {
            return None;
        }
        // No point of the swung shape moves faster than this, metres per unit of swing.
        let speed = swing.angle.abs() * swing.lever(moving);
        let mut fraction = 0.0_f32;
        for _ in 0..MAX_ADVANCES {
            let at = local.pose_at(&start, fraction);
            let moved = ParryPose::from_parts(to_local * at.translation, to_local * at.rotation);
            let gap = core_gap(&moved, &target, &swung).map(|(dist, point, normal)| {
                // From the target's core out to its surface, back in world axes.
                let normal = self.pose.rotation * normal;
                let point = self.pose.rotation * point + normal * target.radius();
                (dist - radii, point, normal)
            });
            let started_inside = fraction == 0.0 && gap.is_none_or(|g| g.0 < 0.0);
            if started_inside {
                // Facing back along the way the shape's centre starts to move.
                let dir =
                    swing.axis.cross(moving.pose.translation - swing.pivot) * swing.angle.signum();
                return Some(
                    self.inside_contact(moving.pose.translation, dir.normalize_or(Vec3::Y)),
                );
            }
            // Cores overlapping later (rounding across a contact): touching there.
            let (gap, point, normal) = gap.unwrap_or_else(|| {
                let centre = self.pose.rotation * moved.translation;
                let point = self.closest_point(centre + here) - here;
                (0.0, point, (centre - point).normalize_or(Vec3::Y))
            });
            if gap <= SWING_TOLERANCE {
                return Some(SweepContact {
                    distance: fraction,
                    point: point + here,
                    normal: normal.normalize_or(Vec3::Y),
                    started_inside: false,
                });
            }
            if speed <= 0.0 {
                return None;
            }
            fraction += gap / speed;
            if fraction > 1.0 {
                return None;
            }
        }
        // Still apart after every advance: the swing passes within a hair of the shape
        // without reaching it (each advance covers at least the gap at the time, so only a
        // path that keeps closing in ever more slowly gets here).
        None
    }
}

/// How close (metres) the swung shape must come to count as touching: a tenth of a
/// millimetre.
const SWING_TOLERANCE: f32 = 1.0e-4;

/// The most conservative advances one swing cast takes.
const MAX_ADVANCES: usize = 256;
