//! Who is recorded: the handle of an entity ([`EntityId`]), the per-tick facts recorded
//! with its bones ([`EntityState`]), and why a handle cannot be used ([`EntityError`]).

use std::fmt;

use super::{EntityFrame, EntitySlot};

/// A handle to an entity. Generational: once an entity is despawned and its history has
/// aged out, its slot may be reused, and the old handle then reports
/// [`EntityError::Stale`] instead of seeing the new entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EntityId {
    index: u32,
    generation: u32,
}

impl EntityId {
    /// Slot index (dense, reused after the slot's history ages out).
    #[must_use]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// How many times the slot had been reused when this handle was issued.
    #[must_use]
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// The handle packed into 64 bits (generation high, index low), for the wire.
    #[must_use]
    pub const fn to_bits(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }

    /// A handle from [`EntityId::to_bits`]. Any value is accepted; an id that was never
    /// issued is reported as unknown or stale when used.
    #[must_use]
    pub const fn from_bits(bits: u64) -> Self {
        Self {
            index: bits as u32,
            generation: (bits >> 32) as u32,
        }
    }
}

impl fmt::Display for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "entity {}v{}", self.index, self.generation)
    }
}

/// What an entity is to a trace, set when it is spawned ([`History::spawn_as`]).
///
/// A target can be hit (its hits are reported, and damaged by the game); a blocker stops
/// traces like a wall does, but is rewound like every entity (a door, a lift, a
/// destructible crate: where the shooter saw it), and is never a target. A vehicle with
/// hitboxes is both. Every entity is rewound, whatever its role.
///
/// [`History::spawn_as`]: super::History::spawn_as
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[repr(u8)]
pub enum EntityRole {
    /// Can be hit. A closest-hit trace ends at it; a penetrating one
    /// ([`crate::Query::ray_all`]) goes on through it.
    #[default]
    Target = 1,
    /// Stops traces (reported as [`crate::Trace::blocking_entity`]) and is never hit.
    Blocker = 2,
    /// Can be hit, and stops every trace there, penetrating ones too (a vehicle).
    TargetAndBlocker = 3,
}

impl EntityRole {
    /// Whether a trace can hit it.
    #[must_use]
    pub const fn is_target(self) -> bool {
        self as u8 & 1 != 0
    }

    /// Whether it stops traces.
    #[must_use]
    pub const fn blocks(self) -> bool {
        self as u8 & 2 != 0
    }

    /// The role's stable name: `target`, `blocker` or `target_and_blocker`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Target => "target",
            Self::Blocker => "blocker",
            Self::TargetAndBlocker => "target_and_blocker",
        }
    }
}

/// Per-tick facts about an entity, recorded with its bones. Queries see them as they were
/// at the rewound time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EntityState {
    /// Alive and hittable.
    pub alive: bool,
    /// Lag compensation applies. Off while invulnerable, dodging or otherwise evasive: the
    /// entity is then tested at its present pose and the hit says so.
    pub lag_compensated: bool,
    /// The entity jumped to this frame's pose (respawn, teleporter): never interpolate into
    /// this frame from the previous one.
    pub teleported: bool,
    /// Collision layers; a query sees the entity when its mask shares a bit with these.
    pub layers: u32,
    /// Game-defined bits (team, stance), carried through to hits.
    pub user: u16,
}

impl Default for EntityState {
    fn default() -> Self {
        Self {
            alive: true,
            lag_compensated: true,
            teleported: false,
            layers: 1,
            user: 0,
        }
    }
}

pub(super) const ALIVE: u8 = 1;
pub(super) const LAG_COMPENSATED: u8 = 2;
pub(super) const TELEPORTED: u8 = 4;

impl EntityState {
    pub(super) fn to_flags(self) -> u8 {
        (u8::from(self.alive) * ALIVE)
            | (u8::from(self.lag_compensated) * LAG_COMPENSATED)
            | (u8::from(self.teleported) * TELEPORTED)
    }

    pub(super) fn from_frame(frame: &EntityFrame) -> Self {
        Self {
            alive: frame.flags & ALIVE != 0,
            lag_compensated: frame.flags & LAG_COMPENSATED != 0,
            teleported: frame.flags & TELEPORTED != 0,
            layers: frame.layers,
            user: frame.user,
        }
    }
}

/// Why an entity handle could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EntityError {
    /// No entity was ever issued this handle.
    #[error("{0} is unknown")]
    Unknown(EntityId),
    /// The entity's history aged out and its slot was reused.
    #[error("{0} is stale: its history has aged out")]
    Stale(EntityId),
    /// The entity was despawned; its history is still queryable but it records no more.
    #[error("{0} was despawned")]
    Despawned(EntityId),
    /// The entity has no recorded frame to answer from.
    #[error("{0} has no recorded frames")]
    NoFrames(EntityId),
}

impl EntitySlot {
    /// The handle of the entity this slot holds now (slot `index`).
    pub(super) fn id(&self, index: usize) -> EntityId {
        EntityId {
            index: index as u32,
            generation: self.generation,
        }
    }
}
