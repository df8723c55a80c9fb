//! The history's own level geometry: every piece by id, its lifetime, and the tree over
//! their bounds.

use std::ops::Range;
use std::sync::Arc;

use glam::Vec3;
use parry3d::shape::TriMesh;

use super::mesh::{self, Terrain};
use super::{LevelError, LevelPiece, PieceError, StaticCollider, StaticError, StaticId};
use super::{MaterialId, StaticWorld, WorldHit};
use crate::bvh::Bvh;
use crate::math::{Aabb, ray_recip};
use crate::narrow::PlacedShape;
use crate::query::{Ray, StaticHit};

/// The level geometry a history holds: primitives, triangle meshes and heightfields, each
/// with the time it was added and the time it was removed. Read it with
/// [`crate::History::level`]; it is a [`StaticWorld`] like any other.
#[derive(Debug, Clone, Default)]
pub struct Level {
    /// Every piece, by id.
    pieces: Vec<Piece>,
    /// The primitive pieces, in the order they were added ([`crate::History::statics`]).
    primitives: Vec<StaticCollider>,
    /// Every piece's padded bounds, by id (the tree's leaves).
    bounds: Vec<Aabb>,
    bvh: Bvh,
    /// Whether any piece has a finite lifetime: only then is a piece's lifetime looked at.
    changing: bool,
    /// What each piece is made of, by id, up to the highest piece given a material; the
    /// rest are [`MaterialId::DEFAULT`].
    pub(super) materials: Vec<MaterialId>,
}

#[derive(Debug, Clone)]
struct Piece {
    geometry: Geometry,
    layers: u32,
    /// Exists from this time (seconds on the history's clock)...
    added: f64,
    /// ...until this one.
    removed: f64,
}

#[derive(Debug, Clone)]
enum Geometry {
    Primitive(PlacedShape),
    Mesh(Arc<TriMesh>),
    Terrain(Arc<Terrain>),
}

impl Piece {
    #[inline]
    fn exists_at(&self, time: f64) -> bool {
        self.added <= time && time < self.removed
    }
}

impl Level {
    /// How many pieces were ever added (removed ones included: ids never move).
    #[must_use]
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Whether no piece was ever added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Whether piece `id` blocks traces that look at `time`; `None` for an unknown id.
    #[must_use]
    pub fn exists_at(&self, id: StaticId, time: f64) -> Option<bool> {
        let piece = self.pieces.get(usize::try_from(id.0).ok()?)?;
        Some(piece.exists_at(time))
    }

    /// The padded bounds of piece `id`; `None` for an unknown id.
    #[must_use]
    pub fn bounds(&self, id: StaticId) -> Option<Aabb> {
        self.bounds.get(usize::try_from(id.0).ok()?).copied()
    }

    pub(crate) fn primitives(&self) -> &[StaticCollider] {
        &self.primitives
    }

    /// Checks and builds every piece, then adds them all and builds the tree once; on an
    /// error nothing is added.
    pub(super) fn load(
        &mut self,
        pieces: impl IntoIterator<Item = LevelPiece>,
        added: f64,
    ) -> Result<Range<StaticId>, LevelError> {
        let mut built = Vec::new();
        for (index, piece) in pieces.into_iter().enumerate() {
            let fail = |error| LevelError {
                piece: index,
                error,
            };
            if self.pieces.len() + built.len() >= u32::MAX as usize {
                return Err(fail(PieceError::Static(StaticError::Full)));
            }
            built.push(build(piece).map_err(fail)?);
        }
        let first = self.pieces.len() as u64;
        for (geometry, layers, bounds) in built {
            if let Geometry::Primitive(placed) = geometry {
                self.primitives.push(StaticCollider { placed, layers });
            }
            self.pieces.push(Piece {
                geometry,
                layers,
                added,
                removed: f64::INFINITY,
            });
            self.bounds.push(bounds);
        }
        self.changing |= added > f64::NEG_INFINITY;
        let n = self.pieces.len() as u32;
        self.bvh.build(0..n, &self.bounds);
        Ok(StaticId(first)..StaticId(n.into()))
    }

    pub(super) fn remove(&mut self, id: StaticId, time: f64) -> Result<(), StaticError> {
        let piece = usize::try_from(id.0)
            .ok()
            .and_then(|i| self.pieces.get_mut(i))
            .ok_or(StaticError::UnknownPiece(id))?;
        if piece.removed != f64::INFINITY {
            return Err(StaticError::AlreadyRemoved(id));
        }
        if !time.is_finite() || time < piece.added {
            return Err(StaticError::Time(time));
        }
        piece.removed = time;
        self.changing = true;
        Ok(())
    }

    /// The first piece on a matching layer, existing at `time`, that a sphere of `radius`
    /// (0: a ray) moving along `ray` touches within its reach (`inv_dir`: the reciprocal of
    /// its direction).
    pub(crate) fn first_hit(
        &self,
        ray: &Ray,
        inv_dir: Vec3,
        radius: f32,
        layers: u32,
        time: f64,
    ) -> Option<StaticHit> {
        let (origin, dir, max) = (ray.origin(), ray.dir(), ray.max_distance());
        let mut best: Option<StaticHit> = None;
        self.bvh.cast(origin, inv_dir, radius, max, |i, t_max| {
            let piece = &self.pieces[i as usize];
            if piece.layers & layers == 0 || (self.changing && !piece.exists_at(time)) {
                return t_max;
            }
            let (distance, point, normal) = match &piece.geometry {
                Geometry::Primitive(placed) => {
                    let Some(c) = placed
                        .cast_sphere_line(origin, dir, radius)
                        .and_then(|c| c.clip(t_max))
                    else {
                        return t_max;
                    };
                    let distance = c.enter.max(0.0);
                    if c.enter < 0.0 {
                        (distance, placed.closest_point(origin), -dir)
                    } else {
                        let point = origin + dir * distance - c.enter_normal * radius;
                        (distance, point, c.enter_normal)
                    }
                }
                Geometry::Mesh(mesh) => {
                    let Some((distance, normal)) =
                        mesh::cast_mesh(mesh, origin, dir, radius, t_max)
                    else {
                        return t_max;
                    };
                    (distance, origin + dir * distance - normal * radius, normal)
                }
                Geometry::Terrain(terrain) => {
                    let Some((distance, normal)) = terrain.cast(origin, dir, radius, t_max) else {
                        return t_max;
                    };
                    (distance, origin + dir * distance - normal * radius, normal)
                }
            };
            let id = u64::from(i);
            if best.is_none_or(|b| (distance, id) < (b.distance, b.id.0)) {
                best = Some(StaticHit {
                    id: StaticId(id),
                    distance,
                    point,
                    normal,
                });
            }
            distance
        });
        best
    }

    fn world_hit(&self, ray: &Ray, radius: f32, layers: u32, time: f64) -> Option<WorldHit> {
        if self.is_empty() {
            return None;
        }
        self.first_hit(ray, ray_recip(ray.dir()), radius, layers, time)
            .map(|hit| WorldHit {
                id: hit.id.0,
                distance: hit.distance,
                normal: hit.normal,
            })
    }
}

impl StaticWorld for Level {
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit> {
        self.world_hit(ray, 0.0, layers, time)
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, layers: u32, time: f64) -> Option<WorldHit> {
        self.world_hit(ray, radius, layers, time)
    }

    fn material(&self, id: u64) -> MaterialId {
        Level::material(self, StaticId(id)).unwrap_or_default()
    }

    /// Exact for primitives (the line's exit from the shape). A mesh is searched forward
    /// from just past the entry, within that one mesh: the next triangle is the exit face.
    /// (Casting back from `entry + max_thickness` would find the far face of whatever
    /// part of the same mesh lies nearest that point, and a level mesh with two walls in a
    /// row would count the air between them as wall.) Terrain is never crossed: below its
    /// surface counts as inside, so it has no exit face to find.
    fn exit_distance(
        &self,
        id: u64,
        ray: &Ray,
        entry: f32,
        max_thickness: f32,
        layers: u32,
        time: f64,
    ) -> Option<f32> {
        let piece = self.pieces.get(usize::try_from(id).ok()?)?;
        if piece.layers & layers == 0
            || !piece.exists_at(time)
            || max_thickness.is_nan()
            || max_thickness < 0.0
        {
            return None;
        }
        let (origin, dir) = (ray.origin(), ray.dir());
        let exit = match &piece.geometry {
            Geometry::Primitive(placed) => placed.cast_sphere_line(origin, dir, 0.0)?.exit,
            Geometry::Mesh(mesh) => {
                let start = entry + MESH_EXIT_NUDGE;
                let reach = (max_thickness - MESH_EXIT_NUDGE).max(0.0);
                let (distance, _) = mesh::cast_mesh(mesh, ray.at(start), dir, 0.0, reach)?;
                start + distance
            }
            Geometry::Terrain(_) => return None,
        };
        (exit.is_finite() && exit - entry <= max_thickness).then_some(exit.max(entry))
    }
}

/// How far past a mesh's entry face the search for its exit face starts, in metres: far
/// enough that rounding cannot put the start back on the entry face (a point 1 km out
/// is placed to about 0.06 mm), and thinner than any wall a game builds.
const MESH_EXIT_NUDGE: f32 = 1e-4;

/// A piece checked and built, with its layers and padded bounds.
fn build(piece: LevelPiece) -> Result<(Geometry, u32, Aabb), PieceError> {
    Ok(match piece {
        LevelPiece::Primitive {
            shape,
            pose,
            layers,
        } => {
            shape.validate().map_err(StaticError::from)?;
            pose.validate().map_err(StaticError::from)?;
            let placed = PlacedShape::new(pose, shape);
            (Geometry::Primitive(placed), layers, placed.aabb().padded())
        }
        LevelPiece::Mesh {
            vertices,
            triangles,
            layers,
        } => {
            let (mesh, bounds) = mesh::build_mesh(vertices, triangles)?;
            (Geometry::Mesh(Arc::new(mesh)), layers, bounds.padded())
        }
        LevelPiece::HeightField {
            heights,
            rows,
            columns,
            size,
            pose,
            layers,
        } => {
            let terrain = Terrain::build(&heights, rows, columns, size, pose)?;
            let bounds = terrain.bounds().padded();
            (Geometry::Terrain(Arc::new(terrain)), layers, bounds)
        }
    })
}
