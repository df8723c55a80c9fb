//! The level's static geometry: walls, floors, terrain and other pieces that never move
//! and block traces.
//!
//! What lives here: the [`StaticWorld`] trait every rewound trace consults (a server that
//! already has a physics world implements it, or uses the history's own [`Level`]), the
//! pieces a [`History`] holds (primitives, triangle meshes and heightfields, described by
//! [`LevelPiece`], named by [`StaticId`]), loading them in bulk
//! ([`History::load_level`], refused whole with a [`LevelError`]) and their lifetimes
//! ([`History::remove_static`]). Entities and their recorded past live in
//! [`crate::history`]; the traces that stop at the first wall in [`crate::query`].
//!
//! # What is rewound, what is current, what has a lifetime
//!
//! - **Entities are rewound, targets and blockers alike.** Their hitboxes are rebuilt at
//!   the moment the shooter saw. An entity's [`EntityRole`](crate::EntityRole), set at
//!   spawn, says what it is to a trace: a target (hit), a blocker (a door, a lift: stops
//!   the trace where it was then, like a wall, and is never hit; reported as
//!   [`Trace::blocking_entity`](crate::Trace::blocking_entity)) or both (a vehicle). A
//!   door that has opened since still blocks a shot rendered while it was closed; one
//!   that has closed since does not block a shot rendered while it was open. Only an
//!   entity whose lag compensation is off at that moment is taken at its present pose.
//! - **Static geometry is never rewound: it never moves.** A piece is where it was placed
//!   for as long as it exists; a moving thing (a door, a lift, a vehicle) is an entity.
//! - **Layers choose per trace** what it can hit ([`Query::layers`](crate::Query::layers))
//!   and what stops it ([`Query::blocked_by`](crate::Query::blocked_by)): static pieces
//!   and blocker entities on a layer outside the blocking mask are passed (a fence that
//!   stops players but not bullets).
//! - **A piece has a lifetime.** It exists from the time it was added (the start of time
//!   for a level loaded with [`History::load_level`] or [`History::add_static`]; `time` for
//!   [`History::add_pieces_at`]) until the time it was removed
//!   ([`History::remove_static`]), as times on the history's clock (the `time` given to
//!   [`History::begin_frame`]). A trace sees a piece when the moment it looks at lies in
//!   `[added, removed)`: a wall destroyed in the frame at time T still blocks shots
//!   rendered before T (the shooter saw it standing) and no longer blocks shots rendered
//!   at or after T. A barricade built at T does not block a shot rendered before T.
//!   Without rewind (a target at the newest frame) that moment is the present.
//! - **A [`StaticWorld`] of the server's own** is asked with the same moment
//!   ([`StaticWorld::cast_ray`]'s `time`); one that never changes ignores it. The history's
//!   own pieces and the server's world both block: the nearer one is the blocker.
//!
//! A removed piece keeps its id and its memory (ids never move), so a history that
//! destroys thousands of pieces over a match holds them all.

mod level;
mod material;
mod mesh;
#[cfg(feature = "rapier")]
pub mod rapier;

#[cfg(test)]
mod tests;

use glam::Vec3;

use crate::history::History;
use crate::math::{Pose, TransformError};
use crate::narrow::PlacedShape;
use crate::query::Ray;
use crate::rig::{Shape, ShapeError};

pub use level::Level;
pub use material::MaterialId;

/// Why static geometry was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum StaticError {
    /// The shape has a bad dimension.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// The pose is not finite or its rotation not unit length.
    #[error(transparent)]
    Pose(#[from] TransformError),
    /// No piece has this id.
    #[error("no static piece {0:?}")]
    UnknownPiece(StaticId),
    /// The piece was already removed.
    #[error("static piece {0:?} was already removed")]
    AlreadyRemoved(StaticId),
    /// The level already holds as many pieces as ids can name (`u32::MAX`).
    #[error("the level is full")]
    Full,
    /// A piece's change time is not finite, or a removal comes before the piece was added.
    #[error("time {0} is not finite or comes before the piece was added")]
    Time(f64),
}

/// A handle to a piece of static world geometry: the history's own pieces are numbered
/// from 0 in the order they were added; a [`StaticWorld`] of the server's own names its
/// pieces with ids it chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StaticId(pub u64);

/// A wall, floor or other primitive piece of geometry that never moves and blocks traces.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StaticCollider {
    /// The shape where it stands.
    pub placed: PlacedShape,
    /// Collision layers, matched against a query's mask like an entity's.
    pub layers: u32,
}

/// Where a static world stopped a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct WorldHit {
    /// The piece hit, as the world names it.
    pub id: u64,
    /// Distance along the ray in metres: of the point hit for a ray, of the sphere's
    /// centre when it first touches for a sweep (0 when the trace starts inside or
    /// touching).
    pub distance: f32,
    /// The piece's outward unit normal where it was touched.
    pub normal: Vec3,
}

/// The level geometry a rewound trace stops at: implemented by the history's own
/// [`Level`], and by a server for the physics world it already has, passed to
/// [`crate::Query::world`] and to the validator.
///
/// Static geometry never moves, so it is never rewound; `time` is the moment the trace
/// looks at (seconds on the history's clock), for geometry with a lifetime (see the
/// [module docs](self)). Implementations must not allocate per call in steady state, and
/// must answer the same inputs with the same hit (the client and the server agree on a
/// verdict by tracing the same geometry).
///
/// An answer with a distance that is NaN or beyond the ray's reach is ignored; a
/// negative one counts as 0.
pub trait StaticWorld {
    /// The nearest piece on a layer sharing a bit with `layers` that the ray meets within
    /// its reach.
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit>;

    /// The nearest piece on a matching layer that a sphere of `radius` metres moving
    /// along the ray touches within its reach.
    fn cast_sphere(&self, ray: &Ray, radius: f32, layers: u32, time: f64) -> Option<WorldHit>;

    /// What piece `id` is made of, for weapons that pass through walls
    /// ([`crate::Query::penetrate`]). Unless the world says otherwise, every piece is
    /// [`MaterialId::DEFAULT`].
    fn material(&self, id: u64) -> MaterialId {
        let _ = id;
        MaterialId::DEFAULT
    }

    /// Where a ray that entered piece `id` at `entry` metres along it leaves that piece
    /// again (metres along the ray), when that is at most `max_thickness` metres past the
    /// entry; `None` when it is not (the piece is too thick for the shot to cross, or has
    /// no far side).
    ///
    /// The provided answer casts back at this world from `entry + max_thickness` towards
    /// the entry: the exit is where that ray first meets a piece, if the piece is `id`. A
    /// back ray that starts inside `id` (it meets it at distance 0) means the piece is
    /// thicker than `max_thickness`: `None`. One that meets another piece first (a second
    /// wall within reach, or one it starts inside) is cast again from nearer, bisecting
    /// between the farthest start known to lie inside `id` (at first the entry) and the
    /// nearest known to lie in or behind another piece, up to [`BACK_CAST_TRIES`] casts in
    /// all, until one starts in the gap between them; a gap too narrow to land in (or
    /// none: a piece overlapping `id` where the shot leaves it) stops the shot in `id`,
    /// on the client and the server alike. A world that knows its
    /// pieces' shapes should answer exactly, in one cast (the history's [`Level`] does).
    fn exit_distance(
        &self,
        id: u64,
        ray: &Ray,
        entry: f32,
        max_thickness: f32,
        layers: u32,
        time: f64,
    ) -> Option<f32> {
        // Distances past the entry: `inside` lies in `id`, `beyond` in or behind another
        // piece; the exit is between them.
        let (mut inside, mut beyond) = (0.0_f32, max_thickness);
        let mut reach = max_thickness;
        for _ in 0..BACK_CAST_TRIES {
            let far = entry + reach;
            let back = Ray::new(ray.at(far), -ray.dir(), reach).ok()?;
            let hit = self.cast_ray(&back, layers, time)?;
            if hit.id != id {
                beyond = reach;
            } else if hit.distance > 0.0 && hit.distance <= reach {
                return Some(far - hit.distance);
            } else if reach == max_thickness {
                // The farthest start is inside `id` (or the answer is nonsense): thicker
                // than the shot can cross.
                return None;
            } else {
                inside = reach;
            }
            reach = 0.5 * (inside + beyond);
        }
        None
    }
}

/// How many back casts [`StaticWorld::exit_distance`]'s provided answer makes at most for
/// one wall: a gap behind it a 128th of the shot's reach into it wide is always found.
pub const BACK_CAST_TRIES: u32 = 8;

impl<W: StaticWorld + ?Sized> StaticWorld for &W {
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit> {
        (**self).cast_ray(ray, layers, time)
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, layers: u32, time: f64) -> Option<WorldHit> {
        (**self).cast_sphere(ray, radius, layers, time)
    }

    fn material(&self, id: u64) -> MaterialId {
        (**self).material(id)
    }

    fn exit_distance(
        &self,
        id: u64,
        ray: &Ray,
        entry: f32,
        max_thickness: f32,
        layers: u32,
        time: f64,
    ) -> Option<f32> {
        (**self).exit_distance(id, ray, entry, max_thickness, layers, time)
    }
}

/// Two worlds as one: the nearer hit wins, the first world's on a tie. Their ids should
/// not collide.
impl<A: StaticWorld, B: StaticWorld> StaticWorld for (A, B) {
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit> {
        nearer(
            self.0.cast_ray(ray, layers, time),
            self.1.cast_ray(ray, layers, time),
        )
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, layers: u32, time: f64) -> Option<WorldHit> {
        nearer(
            self.0.cast_sphere(ray, radius, layers, time),
            self.1.cast_sphere(ray, radius, layers, time),
        )
    }

    /// The first world's material for `id`, or the second's when the first gives the
    /// default (ids should not collide, so at most one world knows the piece).
    fn material(&self, id: u64) -> MaterialId {
        match self.0.material(id) {
            MaterialId::DEFAULT => self.1.material(id),
            material => material,
        }
    }

    /// The first world's exit for `id`, or the second's (at most one world knows it).
    fn exit_distance(
        &self,
        id: u64,
        ray: &Ray,
        entry: f32,
        max_thickness: f32,
        layers: u32,
        time: f64,
    ) -> Option<f32> {
        self.0
            .exit_distance(id, ray, entry, max_thickness, layers, time)
            .or_else(|| {
                self.1
                    .exit_distance(id, ray, entry, max_thickness, layers, time)
            })
    }
}

/// The nearer of two hits, `a` on a tie.
fn nearer(a: Option<WorldHit>, b: Option<WorldHit>) -> Option<WorldHit> {
    match (a, b) {
        (Some(a), Some(b)) if b.distance < a.distance => Some(b),
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// One piece of level geometry to load, with the collision layers it sits on.
#[derive(Debug, Clone, PartialEq)]
pub enum LevelPiece {
    /// A sphere, box or capsule where `pose` puts it.
    Primitive {
        /// The shape.
        shape: Shape,
        /// Where it stands.
        pose: Pose,
        /// Collision layers.
        layers: u32,
    },
    /// A triangle mesh with its vertices in world space (metres), each triangle three
    /// indices into `vertices`. Either side of a triangle blocks.
    Mesh {
        /// The vertices.
        vertices: Vec<Vec3>,
        /// The triangles.
        triangles: Vec<[u32; 3]>,
        /// Collision layers.
        layers: u32,
    },
    /// Terrain: a grid of heights, `rows` along z by `columns` along x, row-major
    /// (`heights[row * columns + column]`), spanning `size.x` by `size.z` metres centred
    /// on `pose`'s origin, each height multiplied by `size.y`. Below the surface counts
    /// as inside: a trace starting there is blocked at once.
    HeightField {
        /// The heights, row-major.
        heights: Vec<f32>,
        /// Rows (along z), at least 2.
        rows: usize,
        /// Columns (along x), at least 2.
        columns: usize,
        /// Extent in x and z, and the factor on heights, in metres.
        size: Vec3,
        /// Where the grid's centre is and how it is turned.
        pose: Pose,
        /// Collision layers.
        layers: u32,
    },
}

/// Why a piece of level geometry was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum PieceError {
    /// A primitive's shape or pose is bad.
    #[error(transparent)]
    Static(#[from] StaticError),
    /// A mesh with no triangles, or a heightfield with no cells.
    #[error("the piece is empty")]
    Empty,
    /// A vertex (or height) is NaN or infinite.
    #[error("vertex {0} is not finite")]
    NonFiniteVertex(usize),
    /// A vertex lies beyond [`crate::math::MAX_COORDINATE`] from the origin on some axis.
    #[error("vertex {0} is out of the coordinate range")]
    VertexOutOfRange(usize),
    /// A triangle names a vertex that does not exist.
    #[error("triangle {triangle} names vertex {index}, past the last one")]
    IndexOutOfRange {
        /// The triangle.
        triangle: usize,
        /// The index it holds.
        index: u32,
    },
    /// A triangle has no area (a repeated or collinear vertex).
    #[error("triangle {0} has no area")]
    DegenerateTriangle(usize),
    /// More triangles (or heightfield cells) than [`LevelPiece::MAX_TRIANGLES`].
    #[error("{0} triangles is more than a piece may hold")]
    TooLarge(usize),
    /// A heightfield's `heights` does not hold `rows * columns` values, or has fewer than
    /// two rows or columns.
    #[error("a {rows} x {columns} heightfield needs rows * columns heights, got {heights}")]
    GridSize {
        /// Rows.
        rows: usize,
        /// Columns.
        columns: usize,
        /// Heights given.
        heights: usize,
    },
    /// A heightfield's size is not finite and positive on every axis, or too large.
    #[error("heightfield size {0} must be finite, positive and within the coordinate range")]
    Size(Vec3),
}

/// Why a batch of level geometry was refused; nothing of the batch was loaded.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("level piece {piece}: {error}")]
pub struct LevelError {
    /// The refused piece's position in the batch.
    pub piece: usize,
    /// What is wrong with it.
    pub error: PieceError,
}

impl LevelPiece {
    /// The most triangles one mesh piece may hold (and cells one heightfield): 4 million,
    /// about 150 MB of mesh. Split larger levels into pieces.
    pub const MAX_TRIANGLES: usize = 1 << 22;

    /// Checks the piece as [`History::load_level`] would, without building it (no tree, no
    /// copy): what a tool reading level geometry from a file runs before it loads
    /// anything.
    ///
    /// # Errors
    /// The [`PieceError`] loading it would give.
    pub fn check(&self) -> Result<(), PieceError> {
        match self {
            Self::Primitive { shape, pose, .. } => {
                shape.validate().map_err(StaticError::from)?;
                pose.validate().map_err(StaticError::from)?;
            }
            Self::Mesh {
                vertices,
                triangles,
                ..
            } => {
                mesh::check_mesh(vertices, triangles)?;
            }
            Self::HeightField {
                heights,
                rows,
                columns,
                size,
                pose,
                ..
            } => mesh::Terrain::check(heights, *rows, *columns, *size, *pose)?,
        }
        Ok(())
    }
}

impl History {
    /// Adds a piece of static world geometry; it blocks every trace that reaches it on a
    /// matching layer. Rebuilds the static tree: to load many pieces, use
    /// [`History::load_level`], which builds it once.
    ///
    /// # Errors
    /// [`StaticError`] for a bad shape or pose.
    pub fn add_static(
        &mut self,
        shape: Shape,
        pose: Pose,
        layers: u32,
    ) -> Result<StaticId, StaticError> {
        let piece = LevelPiece::Primitive {
            shape,
            pose,
            layers,
        };
        match self.level.load([piece], f64::NEG_INFINITY) {
            Ok(ids) => Ok(ids.start),
            Err(LevelError {
                error: PieceError::Static(e),
                ..
            }) => Err(e),
            Err(_) => Err(StaticError::Full),
        }
    }

    /// Loads a batch of level geometry that exists from the start of time, building the
    /// static tree once for the whole batch. Returns the pieces' ids, consecutive, in the
    /// batch's order.
    ///
    /// # Errors
    /// [`LevelError`] naming the first bad piece; nothing of the batch is loaded.
    pub fn load_level(
        &mut self,
        pieces: impl IntoIterator<Item = LevelPiece>,
    ) -> Result<std::ops::Range<StaticId>, LevelError> {
        self.level.load(pieces, f64::NEG_INFINITY)
    }

    /// Loads pieces that appear at `time` (a barricade built, a door frame spawned): they
    /// block traces that look at `time` or later, not earlier ones.
    ///
    /// # Errors
    /// As [`History::load_level`]; [`StaticError::Time`] (as piece 0) for a time that is
    /// not finite.
    pub fn add_pieces_at(
        &mut self,
        pieces: impl IntoIterator<Item = LevelPiece>,
        time: f64,
    ) -> Result<std::ops::Range<StaticId>, LevelError> {
        if !time.is_finite() {
            return Err(LevelError {
                piece: 0,
                error: PieceError::Static(StaticError::Time(time)),
            });
        }
        self.level.load(pieces, time)
    }

    /// Removes piece `id` at `time` (a wall destroyed in the frame at `time`): traces that
    /// look at `time` or later pass where it stood, earlier ones are still blocked.
    ///
    /// # Errors
    /// [`StaticError::UnknownPiece`], [`StaticError::AlreadyRemoved`], or
    /// [`StaticError::Time`] for a time that is not finite or is before the piece was
    /// added. Nothing changes on an error.
    pub fn remove_static(&mut self, id: StaticId, time: f64) -> Result<(), StaticError> {
        self.level.remove(id, time)
    }

    /// The primitive pieces (spheres, boxes, capsules) in the order they were added. While
    /// only primitives are added their index is their [`StaticId`]; with meshes or
    /// heightfields among them, use [`History::level`].
    #[must_use]
    pub fn statics(&self) -> &[StaticCollider] {
        self.level.primitives()
    }

    /// The history's own level geometry: every piece, and a [`StaticWorld`] to trace.
    #[must_use]
    pub fn level(&self) -> &Level {
        &self.level
    }
}
