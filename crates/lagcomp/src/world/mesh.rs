//! Triangle meshes and heightfields: checking them, and casting rays and spheres at them
//! through parry3d (whose vector and rotation types are glam's).

use glam::{Quat, Vec3};
use parry3d::math::Pose as ParryPose;
use parry3d::query::{Ray as ParryRay, ShapeCastOptions, cast_shapes};
use parry3d::shape::{Ball, CompositeShapeRef, HeightField, Shape, TriMesh};
use parry3d::utils::Array2;

use super::{LevelPiece, PieceError, StaticError};
use crate::math::{Aabb, MAX_COORDINATE, Pose};

/// Checks a mesh (every vertex, every index, every triangle's area) and builds it.
pub(super) fn build_mesh(
    vertices: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
) -> Result<(TriMesh, Aabb), PieceError> {
    let bounds = check_mesh(&vertices, &triangles)?;
    let mesh = TriMesh::new(vertices, triangles).map_err(|_| PieceError::Empty)?;
    Ok((mesh, bounds))
}

/// Checks a mesh as [`build_mesh`] does, without building it: its bounds.
pub(super) fn check_mesh(vertices: &[Vec3], triangles: &[[u32; 3]]) -> Result<Aabb, PieceError> {
    if triangles.is_empty() || vertices.is_empty() {
        return Err(PieceError::Empty);
    }
    if triangles.len() > LevelPiece::MAX_TRIANGLES {
        return Err(PieceError::TooLarge(triangles.len()));
    }
    let mut bounds = Aabb::new(Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    for (i, v) in vertices.iter().enumerate() {
        if !v.is_finite() {
            return Err(PieceError::NonFiniteVertex(i));
        }
        if v.abs().max_element() > MAX_COORDINATE {
            return Err(PieceError::VertexOutOfRange(i));
        }
        bounds = Aabb::new(bounds.min.min(*v), bounds.max.max(*v));
    }
    for (t, tri) in triangles.iter().enumerate() {
        let mut corners = [Vec3::ZERO; 3];
        for (corner, &index) in corners.iter_mut().zip(tri) {
            *corner = *vertices
                .get(index as usize)
                .ok_or(PieceError::IndexOutOfRange { triangle: t, index })?;
        }
        if degenerate(corners) {
            return Err(PieceError::DegenerateTriangle(t));
        }
    }
    Ok(bounds)
}

/// Whether a triangle has no area to speak of: the sine of its widest angle is below
/// f32's precision (a repeated vertex, or three in a line). The vertices are finite and
/// within the coordinate range, so nothing here overflows.
fn degenerate([a, b, c]: [Vec3; 3]) -> bool {
    let (ab, ac, bc) = (b - a, c - a, c - b);
    let longest = ab
        .length_squared()
        .max(ac.length_squared())
        .max(bc.length_squared());
    ab.cross(ac).length() <= f32::EPSILON * longest
}

/// The nearest point where a sphere of `radius` (0: a ray) from `origin` along unit `dir`
/// touches `shape` (at `pose`) within `max`: distance and outward normal, facing the trace.
fn cast_shape(
    shape: &dyn Shape,
    pose: &ParryPose,
    origin: Vec3,
    dir: Vec3,
    radius: f32,
    max: f32,
) -> Option<(f32, Vec3)> {
    let (distance, normal) = if radius == 0.0 {
        let local = ParryRay::new(
            pose.rotation.inverse() * (origin - pose.translation),
            pose.rotation.inverse() * dir,
        );
        let hit = shape.cast_local_ray_and_get_normal(&local, max, true)?;
        (hit.time_of_impact, pose.rotation * hit.normal)
    } else {
        let ball_at = ParryPose::from_translation(origin);
        let options = ShapeCastOptions {
            compute_impact_geometry_on_penetration: true,
            ..ShapeCastOptions::with_max_time_of_impact(max)
        };
        let hit = cast_shapes(
            &ball_at,
            dir,
            &Ball::new(radius),
            pose,
            Vec3::ZERO,
            shape,
            options,
        )
        .ok()??;
        // The ball's frame has no rotation, so its normals are the world's.
        (hit.time_of_impact, hit.normal2)
    };
    facing_hit(distance, normal, dir, max)
}

/// A hit as [`cast_shape`] answers it: within `max`, at 0 or beyond, with a unit normal
/// facing the trace.
fn facing_hit(distance: f32, normal: Vec3, dir: Vec3, max: f32) -> Option<(f32, Vec3)> {
    if !(distance.is_finite() && distance <= max) {
        return None;
    }
    let normal = normal.normalize_or(-dir);
    // Either side of a triangle blocks; the side the trace met faces it.
    let normal = if normal.dot(dir) > 0.0 {
        -normal
    } else {
        normal
    };
    Some((distance.max(0.0), normal))
}

/// [`cast_shape`] on a mesh whose vertices are in world space.
pub(super) fn cast_mesh(
    mesh: &TriMesh,
    origin: Vec3,
    dir: Vec3,
    radius: f32,
    max: f32,
) -> Option<(f32, Vec3)> {
    if radius != 0.0 {
        return cast_shape(mesh, &ParryPose::IDENTITY, origin, dir, radius, max);
    }
    // PERF: a ray searches the mesh for the nearest triangle by distance alone and takes
    // the normal of the one it hit: parry's distance-only cast tests the tree's boxes
    // with SIMD and names the triangle, its cast with normals tests them one axis at a
    // time (callgrind, level_mesh's 100,400-triangle level: 12,059 -> 7,092 instructions
    // a rewound ray). The normal is, to the bit, the one parry's triangle cast gives (its
    // face normal, turned below to face the trace).
    let (triangle, distance) =
        CompositeShapeRef(mesh).cast_local_ray(&ParryRay::new(origin, dir), max, true)?;
    let triangle = mesh.triangle(triangle);
    let normal = (triangle.b - triangle.a)
        .cross(triangle.c - triangle.a)
        .normalize();
    facing_hit(distance, normal, dir, max)
}

/// A heightfield where its pose puts it.
#[derive(Debug, Clone)]
pub(super) struct Terrain {
    field: HeightField,
    pose: ParryPose,
}

impl Terrain {
    /// Checks the grid, size and pose and builds the field.
    pub(super) fn build(
        heights: &[f32],
        rows: usize,
        columns: usize,
        size: Vec3,
        pose: Pose,
    ) -> Result<Self, PieceError> {
        Self::check(heights, rows, columns, size, pose)?;
        let grid = Array2::from_fn(rows, columns, |row, column| heights[row * columns + column]);
        Ok(Self {
            field: HeightField::new(grid, size),
            pose: ParryPose::from_parts(pose.translation, pose.rotation),
        })
    }

    /// Checks the grid, size and pose as [`Terrain::build`] does, without building.
    pub(super) fn check(
        heights: &[f32],
        rows: usize,
        columns: usize,
        size: Vec3,
        pose: Pose,
    ) -> Result<(), PieceError> {
        pose.validate().map_err(StaticError::from)?;
        if rows < 2 || columns < 2 || rows.checked_mul(columns) != Some(heights.len()) {
            return Err(PieceError::GridSize {
                rows,
                columns,
                heights: heights.len(),
            });
        }
        let cells = (rows - 1) * (columns - 1) * 2;
        if cells > LevelPiece::MAX_TRIANGLES {
            return Err(PieceError::TooLarge(cells));
        }
        if !(size.is_finite() && size.min_element() > 0.0 && size.max_element() <= MAX_COORDINATE) {
            return Err(PieceError::Size(size));
        }
        for (i, h) in heights.iter().enumerate() {
            if !h.is_finite() {
                return Err(PieceError::NonFiniteVertex(i));
            }
            if (h * size.y).abs() > MAX_COORDINATE {
                return Err(PieceError::VertexOutOfRange(i));
            }
        }
        Ok(())
    }

    /// World-space bounds: the field's box turned and moved by its pose.
    pub(super) fn bounds(&self) -> Aabb {
        let local = self.field.local_aabb();
        let (rotation, translation): (Quat, Vec3) = (self.pose.rotation, self.pose.translation);
        let mut bounds = Aabb::new(Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
        for corner in 0..8 {
            let pick = |bit: u32, lo: f32, hi: f32| if corner & bit == 0 { lo } else { hi };
            let p = Vec3::new(
                pick(1, local.mins.x, local.maxs.x),
                pick(2, local.mins.y, local.maxs.y),
                pick(4, local.mins.z, local.maxs.z),
            );
            let p = rotation * p + translation;
            bounds = Aabb::new(bounds.min.min(p), bounds.max.max(p));
        }
        bounds
    }

    /// [`cast_shape`] on the field.
    pub(super) fn cast(
        &self,
        origin: Vec3,
        dir: Vec3,
        radius: f32,
        max: f32,
    ) -> Option<(f32, Vec3)> {
        cast_shape(&self.field, &self.pose, origin, dir, radius, max)
    }
}
