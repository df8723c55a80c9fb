//! Line against box (in the box's local space).

use glam::Vec3;

use super::{Crossing, PARALLEL_EPSILON};

/// Where the line crosses the box `[-half, half]` (slab method), if it does.
///
/// Works in the box's own space: callers rotate the line in and the normals back out.
/// A line parallel to a pair of faces and outside them misses; on them, it counts as inside.
#[must_use]
#[inline]
pub fn line_box(origin: Vec3, dir: Vec3, half: Vec3) -> Option<Crossing> {
    let mut enter = f32::NEG_INFINITY;
    let mut exit = f32::INFINITY;
    let mut enter_normal = Vec3::ZERO;
    let mut exit_normal = Vec3::ZERO;
    for axis in 0..3 {
        let (o, d, h) = (origin[axis], dir[axis], half[axis]);
        if d * d < PARALLEL_EPSILON {
            if o.abs() > h {
                return None;
            }
            continue;
        }
        let inv = 1.0 / d;
        // The face the line meets first is the one facing against its direction.
        let face = if d > 0.0 { -1.0 } else { 1.0 };
        let near = (face * h - o) * inv;
        let far = (-face * h - o) * inv;
        if near > enter {
            enter = near;
            enter_normal = Vec3::ZERO;
            enter_normal[axis] = face;
        }
        if far < exit {
            exit = far;
            exit_normal = Vec3::ZERO;
            exit_normal[axis] = -face;
        }
    }
    (enter <= exit).then_some(Crossing {
        enter,
        enter_normal,
        exit,
        exit_normal,
    })
}
