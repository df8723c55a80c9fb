//! Line against capsule.

use glam::Vec3;

use super::{Crossing, PARALLEL_EPSILON, line_sphere};

/// Where the line crosses the capsule around segment `a`-`b` with `radius`, if it does.
///
/// The capsule lies inside the infinite cylinder around its axis, so a line that misses
/// that cylinder misses it (the common case, decided by one 2D circle test). Otherwise the
/// line enters the cylinder at some position along the axis: between the ends, that is the
/// capsule's side and the entry; beyond an end, the capsule can only be entered through
/// that end's sphere (a line crosses the cylinder once and moves monotonically along the
/// axis, and the cylinder's cross-section at the end lies inside the sphere). The exit is
/// found the same way, so at most the spheres actually needed are tested.
#[must_use]
#[inline]
pub fn line_capsule(origin: Vec3, dir: Vec3, a: Vec3, b: Vec3, radius: f32) -> Option<Crossing> {
    let ab = b - a;
    let length_sq = ab.length_squared();
    if length_sq == 0.0 {
        return line_sphere(origin, dir, a, radius);
    }
    let length = length_sq.sqrt();
    let axis = ab / length;
    let m = origin - a;
    // Project out the axis: a 2D ray-circle problem in the plane across the axis.
    let d_axial = dir.dot(axis);
    let m_axial = m.dot(axis);
    let dp = dir - axis * d_axial;
    let mp = m - axis * m_axial;
    let qa = dp.length_squared();
    if qa < PARALLEL_EPSILON {
        // Along the axis: inside the radius it passes through both end spheres.
        if mp.length_squared() > radius * radius {
            return None;
        }
        let ca = line_sphere(origin, dir, a, radius)?;
        let cb = line_sphere(origin, dir, b, radius)?;
        return Some(ca.union(cb));
    }
    let t_closest = -mp.dot(dp) / qa;
    let closest = mp + dp * t_closest;
    let half_chord_sq = (radius * radius - closest.length_squared()) / qa;
    if half_chord_sq < 0.0 {
        return None;
    }
    let half_chord = half_chord_sq.sqrt();
    let inv_r = 1.0 / radius;
    let radial = |t: f32| (mp + dp * t) * inv_r;
    // Which part of the capsule a point of the cylinder at line parameter `t` belongs to:
    // the side, or the sphere of the end it is beyond.
    let end_sphere = |t: f32| {
        let s = m_axial + t * d_axial;
        if s < 0.0 {
            Some(a)
        } else if s > length {
            Some(b)
        } else {
            None
        }
    };
    let (t_in, t_out) = (t_closest - half_chord, t_closest + half_chord);
    let (enter, enter_normal) = match end_sphere(t_in) {
        None => (t_in, radial(t_in)),
        Some(center) => {
            let c = line_sphere(origin, dir, center, radius)?;
            (c.enter, c.enter_normal)
        }
    };
    let (exit, exit_normal) = match end_sphere(t_out) {
        None => (t_out, radial(t_out)),
        Some(center) => {
            let c = line_sphere(origin, dir, center, radius)?;
            (c.exit, c.exit_normal)
        }
    };
    Some(Crossing {
        enter,
        enter_normal,
        exit,
        exit_normal,
    })
}
