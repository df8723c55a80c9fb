//! Exact geometry of one shape against one query: ray casts, sphere sweeps and overlaps.
//!
//! What lives here: one file per pair of things that meet (`ray_sphere`, `ray_box`,
//! `ray_capsule`, `ray_rounded_box` for sweeps against boxes, `overlap` for the volume
//! tests) and [`PlacedShape`], a hitbox or wall placed in the world, which dispatches to
//! them; `shape_cast` and `swing` move a box or capsule (a blade, a fist) against a hitbox
//! along a line or about a pivot. Nothing here knows about time, entities or history.
//!
//! Why hand-written rather than parry3d's: these run in the inner loop of every rewound
//! query, and a ray against a sphere, box or capsule is a few dozen flops when it needs no
//! dynamic dispatch, no shape trait objects and no conversion into another math library.
//! The differential test in `tests/integration/differential_parry.rs` holds them to parry3d's answers.
//!
//! All functions work on the infinite line `origin + t * dir` and return the parameter
//! interval where it is inside the shape; callers clip to `[0, max_distance]`. `dir` must
//! be unit length, so `t` is a distance.

mod overlap;
mod placed;
mod ray_box;
mod ray_capsule;
mod ray_rounded_box;
mod ray_sphere;
mod shape_cast;
mod swing;

pub use overlap::{Obb, obb_overlaps_obb, segment_overlaps_box};
pub use placed::PlacedShape;
pub use ray_box::line_box;
pub use ray_capsule::line_capsule;
pub use ray_rounded_box::line_rounded_box;
pub use ray_sphere::line_sphere;
pub use shape_cast::SweepContact;
pub use swing::{Swing, SwingError};

use glam::Vec3;

/// Where a line enters and leaves a shape, with the outward surface normals there.
///
/// `enter <= exit`. Either may be negative: the shape lies (partly) behind the origin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Crossing {
    /// Line parameter where the line enters the shape.
    pub enter: f32,
    /// Outward unit normal at the entry point.
    pub enter_normal: Vec3,
    /// Line parameter where the line leaves the shape.
    pub exit: f32,
    /// Outward unit normal at the exit point.
    pub exit_normal: Vec3,
}

impl Crossing {
    /// The crossing as seen by a ray that starts at the origin and stops at `max`: `None`
    /// when the shape is behind the origin or entered only beyond `max`.
    #[must_use]
    #[inline]
    pub fn clip(self, max: f32) -> Option<Self> {
        (self.exit >= 0.0 && self.enter <= max).then_some(self)
    }

    /// The crossing of the union of two convex pieces the line crosses in overlapping
    /// intervals: the earlier entry and the later exit, each with its own normal.
    #[must_use]
    #[inline]
    pub(crate) fn union(self, other: Self) -> Self {
        let (enter, enter_normal) = if other.enter < self.enter {
            (other.enter, other.enter_normal)
        } else {
            (self.enter, self.enter_normal)
        };
        let (exit, exit_normal) = if other.exit > self.exit {
            (other.exit, other.exit_normal)
        } else {
            (self.exit, self.exit_normal)
        };
        Self {
            enter,
            enter_normal,
            exit,
            exit_normal,
        }
    }

    /// The same crossing for the line rotated into another frame (normals rotated).
    #[must_use]
    #[inline]
    pub(crate) fn rotate_normals(self, rotation: glam::Quat) -> Self {
        Self {
            enter_normal: rotation * self.enter_normal,
            exit_normal: rotation * self.exit_normal,
            ..self
        }
    }
}

/// Lines more parallel than this to an axis or plane are treated as exactly parallel.
///
/// Squared sine of the angle: 1e-12 is about a microradian, where the intersection
/// parameter would already be beyond any coordinate the crate accepts.
pub(crate) const PARALLEL_EPSILON: f32 = 1.0e-12;
