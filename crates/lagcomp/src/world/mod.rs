//! The level's static geometry: walls, floors and other pieces that never move and block
//! traces.
//!
//! What lives here: the pieces a [`History`] holds ([`StaticCollider`], named by
//! [`StaticId`]), adding them ([`History::add_static`], refused with a [`StaticError`]),
//! and the tree over their bounds that a trace walks (`Level`). Entities and their
//! recorded past live in [`crate::history`]; the traces that stop at the first wall in
//! [`crate::query`].

use crate::bvh::Bvh;
use crate::history::History;
use crate::math::{Aabb, Pose, TransformError};
use crate::narrow::PlacedShape;
use crate::rig::{Shape, ShapeError};

/// Why static geometry was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum StaticError {
    /// The shape has a bad dimension.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// The pose is not finite or its rotation not unit length.
    #[error(transparent)]
    Pose(#[from] TransformError),
}

/// A handle to a piece of static world geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StaticId(pub u32);

/// A wall, floor or other geometry that never moves and blocks traces.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StaticCollider {
    /// The shape where it stands.
    pub placed: PlacedShape,
    /// Collision layers, matched against a query's mask like an entity's.
    pub layers: u32,
}

/// The level's static geometry held by a history, and the tree over its bounds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Level {
    statics: Vec<StaticCollider>,
    bounds: Vec<Aabb>,
    bvh: Bvh,
}

impl Level {
    /// The tree over the pieces and the pieces, indexed by [`StaticId`].
    pub(crate) fn bvh(&self) -> (&Bvh, &[StaticCollider]) {
        (&self.bvh, &self.statics)
    }
}

impl History {
    /// Adds a piece of static world geometry; it blocks every trace that reaches it on a
    /// matching layer. Rebuilds the static tree (meant for level load, not per tick).
    ///
    /// # Errors
    /// [`StaticError`] for a bad shape or pose.
    pub fn add_static(
        &mut self,
        shape: Shape,
        pose: Pose,
        layers: u32,
    ) -> Result<StaticId, StaticError> {
        shape.validate()?;
        pose.validate()?;
        let placed = PlacedShape::new(pose, shape);
        let level = &mut self.level;
        level.statics.push(StaticCollider { placed, layers });
        level.bounds.push(placed.aabb().padded());
        let n = level.statics.len() as u32;
        level.bvh.build(0..n, &level.bounds);
        Ok(StaticId(n - 1))
    }

    /// The static geometry, indexed by [`StaticId`].
    #[must_use]
    pub fn statics(&self) -> &[StaticCollider] {
        &self.level.statics
    }
}
