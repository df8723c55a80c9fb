//! Volume against volume: the tests behind overlap queries (melee, explosions).

use glam::{Mat3, Quat, Vec3};

use super::line_rounded_box;
use crate::math::Aabb;

/// An oriented box in world space: the volume of an overlap query (a melee swing).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Obb {
    /// Centre.
    pub center: Vec3,
    /// Orientation of the box's axes; unit length.
    pub rotation: Quat,
    /// Half the size along each of the box's axes; positive.
    pub half_extents: Vec3,
}

impl Obb {
    /// A box from its centre, orientation and half extents.
    #[must_use]
    pub const fn new(center: Vec3, rotation: Quat, half_extents: Vec3) -> Self {
        Self {
            center,
            rotation,
            half_extents,
        }
    }

    /// The world-space box around it.
    #[must_use]
    pub fn aabb(&self) -> Aabb {
        let m = Mat3::from_quat(self.rotation);
        let reach = m.x_axis.abs() * self.half_extents.x
            + m.y_axis.abs() * self.half_extents.y
            + m.z_axis.abs() * self.half_extents.z;
        Aabb::new(self.center - reach, self.center + reach)
    }

    /// The point of the box nearest to `point` (the point itself when inside).
    #[must_use]
    pub fn closest_point(&self, point: Vec3) -> Vec3 {
        let local = self.rotation.conjugate() * (point - self.center);
        self.center + self.rotation * local.clamp(-self.half_extents, self.half_extents)
    }
}

/// Whether two oriented boxes overlap (separating axis test over the 15 candidate axes).
#[must_use]
pub fn obb_overlaps_obb(a: &Obb, b: &Obb) -> bool {
    // Work in a's frame: `r[i][j]` is b's axis j expressed on a's axis i.
    let to_a = a.rotation.conjugate();
    let rot = Mat3::from_quat(to_a * b.rotation);
    let t = to_a * (b.center - a.center);
    let r = [
        [rot.x_axis.x, rot.y_axis.x, rot.z_axis.x],
        [rot.x_axis.y, rot.y_axis.y, rot.z_axis.y],
        [rot.x_axis.z, rot.y_axis.z, rot.z_axis.z],
    ];
    // Nearly parallel edges make the cross-product axes degenerate; a small epsilon on the
    // absolute values keeps them from separating boxes that touch.
    const EPS: f32 = 1.0e-6;
    let abs_r = r.map(|row| row.map(|x| x.abs() + EPS));
    let (ea, eb) = (a.half_extents, b.half_extents);
    for i in 0..3 {
        let rb = eb.x * abs_r[i][0] + eb.y * abs_r[i][1] + eb.z * abs_r[i][2];
        if t[i].abs() > ea[i] + rb {
            return false;
        }
    }
    for j in 0..3 {
        let ra = ea.x * abs_r[0][j] + ea.y * abs_r[1][j] + ea.z * abs_r[2][j];
        let tj = t.x * r[0][j] + t.y * r[1][j] + t.z * r[2][j];
        if tj.abs() > ra + eb[j] {
            return false;
        }
    }
    for i in 0..3 {
        let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
        for j in 0..3 {
            let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
            let ra = ea[i1] * abs_r[i2][j] + ea[i2] * abs_r[i1][j];
            let rb = eb[j1] * abs_r[i][j2] + eb[j2] * abs_r[i][j1];
            let dist = (t[i2] * r[i1][j] - t[i1] * r[i2][j]).abs();
            if dist > ra + rb {
                return false;
            }
        }
    }
    true
}

/// Whether the segment `a`-`b`, grown by `radius`, overlaps the box `[-half, half]`
/// (everything in the box's local space). A capsule against a box.
#[must_use]
pub fn segment_overlaps_box(a: Vec3, b: Vec3, radius: f32, half: Vec3) -> bool {
    let ab = b - a;
    let length = ab.length();
    if length <= f32::EPSILON * (1.0 + a.abs().max_element()) {
        let outside = a.abs() - half;
        return outside.max(Vec3::ZERO).length_squared() <= radius * radius;
    }
    // The segment is within `radius` of the box exactly when it crosses the box grown by
    // `radius`, which the sweep code already answers.
    line_rounded_box(a, ab / length, half, radius)
        .is_some_and(|c| c.exit >= 0.0 && c.enter <= length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_boxes_separate_on_an_edge_axis() {
        let a = Obb::new(Vec3::ZERO, Quat::IDENTITY, Vec3::ONE);
        // Rotated 45 degrees about two axes and pushed out along the diagonal: only a
        // cross-product axis separates them.
        let rot = Quat::from_rotation_y(std::f32::consts::FRAC_PI_4)
            * Quat::from_rotation_x(std::f32::consts::FRAC_PI_4);
        let far = Obb::new(Vec3::new(2.6, 2.6, 0.0), rot, Vec3::ONE);
        assert!(!obb_overlaps_obb(&a, &far));
        let near = Obb::new(Vec3::new(1.5, 1.5, 0.0), rot, Vec3::ONE);
        assert!(obb_overlaps_obb(&a, &near));
        assert!(obb_overlaps_obb(&a, &a));
    }

    #[test]
    fn capsule_against_box() {
        let half = Vec3::ONE;
        // Parallel to the +x face, 1.4 above the box top: overlaps only with radius > 0.4.
        let a = Vec3::new(-0.5, 2.4, 0.0);
        let b = Vec3::new(0.5, 2.4, 0.0);
        assert!(!segment_overlaps_box(a, b, 0.39, half));
        assert!(segment_overlaps_box(a, b, 1.41, half));
        // Diagonal off a corner: distance sqrt(3) * 0.5 from (1,1,1).
        let p = Vec3::splat(1.5);
        assert!(!segment_overlaps_box(p, p, 0.86, half));
        assert!(segment_overlaps_box(p, p, 0.87, half));
    }
}
