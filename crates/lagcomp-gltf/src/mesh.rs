//! Triangle meshes of lagcomp's shapes (sphere, box, capsule), placed in world space with
//! per-vertex normals, and of the shot (a capsule along its segment).
//!
//! Spheres and capsules are lathed around their axis: a pole vertex at each end, rings
//! between, so no triangle is degenerate (the Khronos validator reports degenerate
//! triangles). Boxes have a vertex per face corner, so each face keeps its flat normal.

use std::f32::consts::{FRAC_PI_2, PI, TAU};

use lagcomp::{Axis, PlacedShape, Quat, Shape, Vec3};

/// Vertices around each ring of a sphere or capsule.
const SEGMENTS: u32 = 24;
/// Rings from a pole to the equator (exclusive of the pole, inclusive of the equator).
const RINGS_PER_HEMISPHERE: u32 = 8;

/// A triangle list with one normal per vertex, counter-clockwise seen from outside
/// (glTF's front faces).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Mesh {
    pub(crate) positions: Vec<Vec3>,
    pub(crate) normals: Vec<Vec3>,
    pub(crate) indices: Vec<u32>,
}

impl Mesh {
    /// `shape` where `placed` puts it: vertices in world space.
    pub(crate) fn of_placed(placed: &PlacedShape) -> Self {
        let mut mesh = match placed.shape {
            Shape::Sphere { radius } => lathed(radius, 0.0),
            Shape::Box { half_extents } => cuboid(half_extents),
            Shape::Capsule {
                radius,
                half_height,
                axis,
            } => {
                let mut capsule = lathed(radius, half_height);
                capsule.rotate(axis_rotation(axis));
                capsule
            }
        };
        mesh.rotate(placed.pose.rotation);
        mesh.translate(placed.pose.translation);
        mesh
    }

    /// A capsule of `radius` around the segment from `start` along unit `direction` for
    /// `length` metres.
    pub(crate) fn segment(start: Vec3, direction: Vec3, length: f32, radius: f32) -> Self {
        let mut mesh = lathed(radius, length / 2.0);
        mesh.rotate(Quat::from_rotation_arc(Vec3::Y, direction));
        mesh.translate(start + direction * (length / 2.0));
        mesh
    }

    fn rotate(&mut self, rotation: Quat) {
        for p in &mut self.positions {
            *p = rotation * *p;
        }
        for n in &mut self.normals {
            // Renormalised: the validator holds normals to unit length.
            *n = (rotation * *n).normalize();
        }
    }

    fn translate(&mut self, by: Vec3) {
        for p in &mut self.positions {
            *p += by;
        }
    }

    fn vertex(&mut self, position: Vec3, normal: Vec3) -> u32 {
        self.positions.push(position);
        self.normals.push(normal);
        (self.positions.len() - 1) as u32
    }

    /// Adds triangle `a b c`, turned so that it faces the way its vertices' normals do.
    fn triangle(&mut self, a: u32, b: u32, c: u32) {
        let [pa, pb, pc] = [a, b, c].map(|i| self.positions[i as usize]);
        let facing = (pb - pa).cross(pc - pa);
        let outward: Vec3 = [a, b, c].iter().map(|&i| self.normals[i as usize]).sum();
        if facing.dot(outward) >= 0.0 {
            self.indices.extend([a, b, c]);
        } else {
            self.indices.extend([a, c, b]);
        }
    }
}

/// The rotation that takes a capsule built along Y onto `axis`.
fn axis_rotation(axis: Axis) -> Quat {
    match axis {
        Axis::X => Quat::from_rotation_z(-FRAC_PI_2),
        Axis::Y => Quat::IDENTITY,
        Axis::Z => Quat::from_rotation_x(FRAC_PI_2),
    }
}

/// A capsule along local Y (a sphere when `half_height` is 0), centred on the origin.
fn lathed(radius: f32, half_height: f32) -> Mesh {
    // The profile from the top pole to the bottom one: (polar angle, centre height). The
    // equator ring appears once per hemisphere when the capsule has a straight part.
    let mut profile: Vec<(f32, f32)> = Vec::new();
    for k in 1..=RINGS_PER_HEMISPHERE {
        profile.push((
            FRAC_PI_2 * k as f32 / RINGS_PER_HEMISPHERE as f32,
            half_height,
        ));
    }
    let first_below = if half_height > 0.0 { 0 } else { 1 };
    for k in first_below..RINGS_PER_HEMISPHERE {
        profile.push((
            FRAC_PI_2 + FRAC_PI_2 * k as f32 / RINGS_PER_HEMISPHERE as f32,
            -half_height,
        ));
    }

    let mut mesh = Mesh::default();
    let top = mesh.vertex(Vec3::Y * (half_height + radius), Vec3::Y);
    let mut rings = Vec::with_capacity(profile.len());
    for &(theta, centre) in &profile {
        let first = mesh.positions.len() as u32;
        for j in 0..SEGMENTS {
            let phi = TAU * j as f32 / SEGMENTS as f32;
            let normal = Vec3::new(
                theta.sin() * phi.cos(),
                theta.cos(),
                theta.sin() * phi.sin(),
            );
            mesh.vertex(Vec3::Y * centre + normal * radius, normal);
        }
        rings.push(first);
    }
    let bottom = mesh.vertex(-Vec3::Y * (half_height + radius), -Vec3::Y);

    let next = |j: u32| (j + 1) % SEGMENTS;
    let first_ring = rings[0];
    let last_ring = rings[rings.len() - 1];
    for j in 0..SEGMENTS {
        mesh.triangle(top, first_ring + j, first_ring + next(j));
        mesh.triangle(bottom, last_ring + next(j), last_ring + j);
    }
    for pair in rings.windows(2) {
        let (upper, lower) = (pair[0], pair[1]);
        for j in 0..SEGMENTS {
            mesh.triangle(upper + j, lower + j, lower + next(j));
            mesh.triangle(upper + j, lower + next(j), upper + next(j));
        }
    }
    debug_assert!(profile.iter().all(|&(theta, _)| theta > 0.0 && theta < PI));
    mesh
}

/// A box centred on the origin, four vertices per face.
fn cuboid(half: Vec3) -> Mesh {
    let mut mesh = Mesh::default();
    for axis in 0..3 {
        for sign in [1.0_f32, -1.0] {
            let mut normal = Vec3::ZERO;
            normal[axis] = sign;
            // The face's two in-plane axes.
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            let corner = |a: f32, b: f32| {
                let mut p = normal * half;
                p[u] = a * half[u];
                p[v] = b * half[v];
                p
            };
            let quad = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
                .map(|(a, b)| mesh.vertex(corner(a, b), normal));
            mesh.triangle(quad[0], quad[1], quad[2]);
            mesh.triangle(quad[0], quad[2], quad[3]);
        }
    }
    mesh
}

#[cfg(test)]
mod tests {
    use lagcomp::Pose;

    use super::*;

    fn shapes() -> [(&'static str, Shape); 6] {
        [
            ("sphere", Shape::sphere(0.15)),
            ("box", Shape::cuboid(Vec3::new(0.25, 0.6, 0.2))),
            ("capsule y", Shape::capsule(0.1, 0.3, Axis::Y)),
            ("capsule x", Shape::capsule(0.1, 0.3, Axis::X)),
            ("capsule z", Shape::capsule(0.1, 0.3, Axis::Z)),
            // A capsule with no straight part is a sphere: no zero-height band.
            ("flat capsule", Shape::capsule(0.2, 0.0, Axis::Y)),
        ]
    }

    fn placed(shape: Shape) -> PlacedShape {
        PlacedShape::new(
            Pose::new(
                Vec3::new(1.0, 2.0, -3.0),
                Quat::from_axis_angle(Vec3::new(0.3, -0.7, 1.1).normalize(), 0.9),
            ),
            shape,
        )
    }

    #[test]
    fn every_triangle_faces_out_and_has_an_area() {
        for (name, shape) in shapes() {
            let p = placed(shape);
            let mesh = Mesh::of_placed(&p);
            assert_eq!(mesh.indices.len() % 3, 0, "{name}");
            for tri in mesh.indices.chunks(3) {
                let [a, b, c] = [tri[0], tri[1], tri[2]].map(|i| mesh.positions[i as usize]);
                let facing = (b - a).cross(c - a);
                assert!(
                    facing.length() > 1e-7,
                    "{name}: degenerate triangle {tri:?}"
                );
                // Convex shapes: outward means away from the centre.
                let centroid = (a + b + c) / 3.0;
                assert!(
                    facing.dot(centroid - p.pose.translation) > 0.0,
                    "{name}: triangle {tri:?} faces inward"
                );
            }
        }
    }

    #[test]
    fn vertices_lie_on_the_shape_and_normals_are_unit() {
        for (name, shape) in shapes() {
            let p = placed(shape);
            let mesh = Mesh::of_placed(&p);
            let bound = shape.bounding_radius();
            for (position, normal) in mesh.positions.iter().zip(&mesh.normals) {
                assert!((normal.length() - 1.0).abs() < 1e-5, "{name}: {normal}");
                let from_centre = position.distance(p.pose.translation);
                assert!(
                    from_centre <= bound + 1e-5,
                    "{name}: {from_centre} > {bound}"
                );
                // The surface: the point stepped out along its normal leaves the shape,
                // stepped in it is inside (the same exact geometry the queries use).
                let outside = *position + *normal * 1e-3;
                // (Also pulled toward the centre: a box corner stepped in along one
                // face's normal still lies on the other faces.)
                let inside = *position - *normal * 1e-3 + (p.pose.translation - *position) * 1e-3;
                let crosses = |q: Vec3| {
                    p.cast_line(q, *normal)
                        .is_some_and(|c| c.enter <= 0.0 && c.exit >= 0.0)
                };
                assert!(crosses(inside), "{name}: {position} is not on the surface");
                assert!(!crosses(outside), "{name}: {position} is inside the shape");
            }
        }
    }

    #[test]
    fn a_segment_capsule_spans_its_segment() {
        let start = Vec3::new(0.0, 1.6, -10.0);
        let direction = Vec3::new(0.0, -0.6, 0.8);
        let mesh = Mesh::segment(start, direction, 10.0, 0.05);
        let along = |p: &Vec3| (*p - start).dot(direction);
        let first = mesh
            .positions
            .iter()
            .map(along)
            .fold(f32::INFINITY, f32::min);
        let last = mesh
            .positions
            .iter()
            .map(along)
            .fold(f32::NEG_INFINITY, f32::max);
        assert!((first + 0.05).abs() < 1e-4, "{first}");
        assert!((last - 10.05).abs() < 1e-3, "{last}");
    }
}
