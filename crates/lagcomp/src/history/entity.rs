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
/// at the rewound time; [`History::present_state`] gives them at the present.
///
/// Three facts say how hits on the entity are judged, and they do not overlap:
///
/// | Fact | Set while | Pose traced | A validated hit on it |
/// |---|---|---|---|
/// | `invulnerable` | spawn protection, a scripted immunity | rewound | refused honestly (a miss with a reason) |
/// | `evasive` | a dodge or defensive ability the server registered | rewound | refused honestly if the dodge wins (the policy decides) |
/// | `lag_compensated: false` | the game must not rewind the entity at all | present | rejected (`target_not_compensated`) |
///
/// `lag_compensated` keeps the meaning it had before `invulnerable` and `evasive`
/// existed, so recordings, C callers and Bevy apps that turn it off are judged as before;
/// new code marks spawn protection with `invulnerable` and a dodge with `evasive` and
/// leaves `lag_compensated` on.
///
/// [`History::present_state`]: super::History::present_state
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EntityState {
    /// Alive and hittable.
    pub alive: bool,
    /// Lag compensation applies. Off: the entity is never rewound (tested at its present
    /// pose, and the hit says so) and a validator rejects hits on it. For spawn protection
    /// or a dodge, leave it on and set `invulnerable` or `evasive` instead.
    pub lag_compensated: bool,
    /// The entity jumped to this frame's pose (respawn, teleporter): never interpolate into
    /// this frame from the previous one.
    pub teleported: bool,
    /// Hits on the entity are refused while this is set (spawn protection). Its pose is
    /// rewound as usual; a validator turns a hit on it into an honest refusal, not a cheat
    /// rejection. Absent in recordings made before it existed: `false`.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "std::ops::Not::not")
    )]
    pub invulnerable: bool,
    /// The server registered a dodge or defensive ability for the entity at this tick.
    /// Its pose is rewound as usual; a validator decides (by its policy) whether the dodge
    /// beats a shot aimed at a picture drawn before it. Absent in recordings made before it
    /// existed: `false`.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "std::ops::Not::not")
    )]
    pub evasive: bool,
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
            invulnerable: false,
            evasive: false,
            layers: 1,
            user: 0,
        }
    }
}

pub(super) const ALIVE: u8 = 1;
pub(super) const LAG_COMPENSATED: u8 = 2;
pub(super) const TELEPORTED: u8 = 4;
pub(super) const INVULNERABLE: u8 = 8;
pub(super) const EVASIVE: u8 = 16;

impl EntityState {
    pub(super) fn to_flags(self) -> u8 {
        (u8::from(self.alive) * ALIVE)
            | (u8::from(self.lag_compensated) * LAG_COMPENSATED)
            | (u8::from(self.teleported) * TELEPORTED)
            | (u8::from(self.invulnerable) * INVULNERABLE)
            | (u8::from(self.evasive) * EVASIVE)
    }

    pub(super) fn from_frame(frame: &EntityFrame) -> Self {
        Self {
            alive: frame.flags & ALIVE != 0,
            lag_compensated: frame.flags & LAG_COMPENSATED != 0,
            teleported: frame.flags & TELEPORTED != 0,
            invulnerable: frame.flags & INVULNERABLE != 0,
            evasive: frame.flags & EVASIVE != 0,
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
