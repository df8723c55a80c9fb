//! Line against capsule.

use glam::Vec3;

use super::placed::closest_on_segment;
use super::{Crossing, PARALLEL_EPSILON, line_sphere};

/// Where the line crosses the capsule around segment `a`-`b` with `radius`, if it does.
///
/// The capsule is the union of two end spheres and the cylinder between them. A line meets
/// a convex union in one interval, so the entry is the earliest component entry and the
/// exit the latest component exit. The flat ends of the cylinder lie inside the spheres, so
/// only its curved side is considered.
#[must_use]
#[inline]
pub fn line_capsule(origin: Vec3, dir: Vec3, a: Vec3, b: Vec3, radius: f32) -> Option<Crossing> {
    let mut best: Option<Crossing> = None;
    let mut take = |c: Crossing| {
        best = Some(best.map_or(c, |acc| acc.union(c)));
    };
    if let Some(c) = line_sphere(origin, dir, a, radius) {
        take(c);
    }
    if b != a {
        if let Some(c) = line_sphere(origin, dir, b, radius) {
            take(c);
        }
        if let Some(c) = line_cylinder_side(origin, dir, a, b, radius) {
            take(c);
        }
    }
    // A partial side crossing (one end on a flat end) is always completed by a sphere; the
    // guard only protects against rounding leaving it alone.
    let mut c = best.filter(|c| c.enter.is_finite() && c.exit.is_finite())?;
    // The normal at any surface point points away from the nearest point of the segment.
    // Deriving it from the point (rather than from whichever piece won the union) keeps it
    // right where the side meets an end sphere and the two entries round to the same value.
    let normal_at = |t: f32, fallback: Vec3| {
        let p = origin + dir * t;
        (p - closest_on_segment(a, b, p))
            .try_normalize()
            .unwrap_or(fallback)
    };
    c.enter_normal = normal_at(c.enter, c.enter_normal);
    c.exit_normal = normal_at(c.exit, c.exit_normal);
    Some(c)
}

/// The part of the line inside the finite cylinder whose entry and exit both lie on the
/// curved side; points that would be on the flat ends are left to the end spheres.
fn line_cylinder_side(origin: Vec3, dir: Vec3, a: Vec3, b: Vec3, radius: f32) -> Option<Crossing> {
    let ab = b - a;
    let length = ab.length();
    let axis = ab / length;
    let m = origin - a;
    // Project out the axis: a 2D ray-circle problem in the plane across the axis.
    let d_axial = dir.dot(axis);
    let m_axial = m.dot(axis);
    let dp = dir - axis * d_axial;
    let mp = m - axis * m_axial;
    let qa = dp.length_squared();
    if qa < PARALLEL_EPSILON {
        return None;
    }
    let t_closest = -mp.dot(dp) / qa;
    let closest = mp + dp * t_closest;
    let half_chord_sq = (radius * radius - closest.length_squared()) / qa;
    if half_chord_sq < 0.0 {
        return None;
    }
    let half_chord = half_chord_sq.sqrt();
    let enter = t_closest - half_chord;
    let exit = t_closest + half_chord;
    let on_side = |t: f32| (0.0..=length).contains(&(m_axial + t * d_axial));
    let inv_r = 1.0 / radius;
    let radial = |t: f32| (mp + dp * t) * inv_r;
    // When only one end of the chord is on the side, the other end is inside an end sphere
    // and that sphere supplies it; mark the missing end so `take` never picks it.
    let (enter, enter_normal) = if on_side(enter) {
        (enter, radial(enter))
    } else {
        (f32::INFINITY, Vec3::ZERO)
    };
    let (exit, exit_normal) = if on_side(exit) {
        (exit, radial(exit))
    } else {
        (f32::NEG_INFINITY, Vec3::ZERO)
    };
    if enter == f32::INFINITY && exit == f32::NEG_INFINITY {
        return None;
    }
    Some(Crossing {
        enter,
        enter_normal,
        exit,
        exit_normal,
    })
}
