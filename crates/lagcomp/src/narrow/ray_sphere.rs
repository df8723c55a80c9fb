//! Line against sphere.

use glam::Vec3;

use super::Crossing;

/// Where the line `origin + t * dir` (unit `dir`) crosses the sphere, if it does.
///
/// Uses the closest-approach form (half chord from the squared distance between the
/// centre and the line) instead of the textbook discriminant, which cancels badly when the
/// sphere is far from the origin compared with its radius.
#[must_use]
#[inline]
pub fn line_sphere(origin: Vec3, dir: Vec3, center: Vec3, radius: f32) -> Option<Crossing> {
    let m = origin - center;
    let b = m.dot(dir);
    // Vector from the centre to the closest point of the line.
    let closest = m - dir * b;
    let half_chord_sq = radius * radius - closest.length_squared();
    if half_chord_sq < 0.0 {
        return None;
    }
    let half_chord = half_chord_sq.sqrt();
    let enter = -b - half_chord;
    let exit = -b + half_chord;
    let inv_r = 1.0 / radius;
    Some(Crossing {
        enter,
        enter_normal: (closest - dir * half_chord) * inv_r,
        exit,
        exit_normal: (closest + dir * half_chord) * inv_r,
    })
}
