//! The recorded past: entities, their rigs, and a ring buffer of per-tick bone transforms.
//!
//! What lives here: [`History`] (its fields and the ring's bookkeeping here, static
//! geometry in `crate::world`; its [`HistoryConfig`] in `config`; the entity table, spawning and despawning in
//! `entities`, the handles and per-tick facts in `entity`; where rows lie in the lanes in
//! `layout`), [`FrameRecorder`] (writing one tick, `recorder`; its per-bone
//! copy-check-bound pass is `bone_pass`, whose kernels live in `crate::simd`), resolving a
//! [`RewindTarget`] to the frames that bracket it, and rebuilding an entity's bones at that
//! moment (`sample`).
//! Queries over the rebuilt past live in [`crate::query`].
//!
//! Layout, and why:
//! - One global ring of frame headers (tick, time). Every entity's storage is indexed by the
//!   same ring slot, so finding the bracketing frames is one binary search for all entities.
//! - Per entity, a ring of compact bone poses (a 12-byte translation and a 16-byte rotation
//!   per bone: no scale) with a separate scale lane that is only allocated the first time a
//!   bone is recorded with a non-unit scale, and a ring of per-frame records (`EntityFrame`:
//!   flags, layers, user bits and the entity's bounds in that frame).
//! - Every entity's rings share one allocation per lane (`lane`: translations, rotations,
//!   frame records; the rare scale lanes stay per entity), laid out frame-major (`Lanes`):
//!   a tick's rows of every entity are one block, written front to back, and an entity's
//!   slot holds where its bones sit in each block. Large lanes sit on 2 MiB pages on
//!   Linux. (Per-entity vectors made a 5,000-entity tick touch three or four 4 KiB pages
//!   per entity and wait on page walks and cold lines.)
//! - The broadphase is a BVH over entities (`TemporalBvh`, in the private `bvh` module;
//!   up to 512 entities it is flat, one SIMD-scanned box per entity, see `bvh::flat`)
//!   whose boxes are kept per ring frame, each spanning that frame and the next. After
//!   each frame the new frame's boxes are refitted from the entities' bounds in it. A query
//!   between two adjacent frames tests each node with one span box, which bounds every
//!   pose interpolated between them: entities are culled with their bounds at the target
//!   time before any pose is touched.
//! - The tree's shape is rebuilt once a window (entities walk away from where it placed
//!   them) and when entities come or go, and the frames already recorded keep the shape
//!   they were recorded under: two trees are kept, the current one (every frame from
//!   `tree_from` on) and the one before it (the older frames, until they age out). A
//!   rebuild boxes only the newest frame and the one before it under the new shape, not
//!   the whole ring, and a query walks the tree that holds both of its frames
//!   (`History::entity_tree`).
//! - Entities whose lag compensation is off at some frame are tested at their present pose
//!   when rewound to it, which the per-frame boxes do not cover; they are listed separately
//!   (`uncompensated`) and visited after the tree.
//! - Nothing is ever cleared when a frame ages out: each stored frame carries the sequence
//!   number it was written at, so a stale slot is recognised instead of erased.

mod bone_pass;
mod config;
mod cull;
mod entities;
mod entity;
mod frame;
mod lane;
mod layout;
mod plan;
#[cfg(test)]
mod record_tests;
mod recorder;
mod sample;
mod stamp;
mod velocity;

pub(crate) use bone_pass::{BonePass, assert_one_length};
pub use config::{ConfigError, DEFAULT_MAX_REWIND, HistoryConfig};
pub(crate) use cull::{LineLanes, cull4};
use entity::{ALIVE, LAG_COMPENSATED, TELEPORTED};
pub use entity::{EntityError, EntityId, EntityRole, EntityState};
use layout::Lanes;
pub use recorder::{FrameRecorder, RecordError};
pub(crate) use sample::{Bracket, EntitySample, EntityView};
pub use sample::{NearestReason, Sample, SampleKind};

use std::sync::Arc;

use glam::{Quat, Vec3};

use crate::bvh::TemporalBvh;
use crate::math::{Aabb, BoneTransform};
use crate::rig::Rig;
use crate::simd::Kernels;
use crate::time::{RewindError, RewindTarget, Tick, WindowPolicy};
use crate::world::Level;

/// A bone's stored translation and rotation. They live in separate lanes: a query culls
/// hitboxes by their bone's translation alone and reads rotations only for the few it then
/// tests exactly.
pub(crate) type StoredTranslation = [f32; 3];
pub(crate) type StoredRotation = [f32; 4];

// PERF: 28 bytes per bone per frame is the bulk of the history; keeping scale out of it
// (almost every game records unit scale) holds a hitbox-frame under 32 bytes.
const _: () =
    assert!(std::mem::size_of::<StoredTranslation>() + std::mem::size_of::<StoredRotation>() == 28);

/// One entity's record of one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
struct EntityFrame {
    /// Low bits of the frame sequence number this was written at; a mismatch means the
    /// entity was not recorded in the frame now occupying this slot.
    seq: u32,
    layers: u32,
    user: u16,
    flags: u8,
    bounds_min: [f32; 3],
    bounds_max: [f32; 3],
}

// PERF: one per entity per frame, amortised over its hitboxes (about 2 bytes each for a
// 16-hitbox rig).
const _: () = assert!(std::mem::size_of::<EntityFrame>() == 36);

impl EntityFrame {
    const NEVER: Self = Self {
        seq: 0,
        layers: 0,
        user: 0,
        flags: 0,
        bounds_min: [0.0; 3],
        bounds_max: [0.0; 3],
    };

    fn bounds(&self) -> Aabb {
        Aabb::new(
            Vec3::from_array(self.bounds_min),
            Vec3::from_array(self.bounds_max),
        )
    }
}

/// One entity's linear velocity in one frame, as the server sent it in that tick's
/// snapshot: what a client extrapolates with ([`History::entity_extrapolated`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
struct EntityVelocity {
    /// Low bits of the frame sequence number this was written at, as
    /// [`EntityFrame::seq`]: a mismatch means no velocity was recorded in the frame now
    /// occupying this slot.
    seq: u32,
    /// Units per second.
    velocity: [f32; 3],
}

// PERF: its own lane, not a field of `EntityFrame`: a trace never reads it, so the frame
// records it scans stay 36 bytes; 16 bytes per entity per frame (one byte per hitbox-frame
// for a 16-hitbox rig).
const _: () = assert!(std::mem::size_of::<EntityVelocity>() == 16);

impl EntityVelocity {
    const NEVER: Self = Self {
        seq: 0,
        velocity: [0.0; 3],
    };
}

/// A frame header, shared by all entities.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FrameMeta {
    seq: u64,
    tick: Tick,
    time: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    Free,
    Active,
    Despawned,
}

#[derive(Debug, Clone)]
struct EntitySlot {
    generation: u32,
    life: Life,
    /// Set at spawn; kept while the slot is despawned (its past still blocks or is hit).
    role: EntityRole,
    rig: Option<Arc<Rig>>,
    bone_count: usize,
    /// First of the `bone_count` places the entity holds in each ring slot's block of the
    /// bone lanes ([`BoneRanges`](lane::BoneRanges), [`Lanes::row`]); kept while the slot is free, to give
    /// them back once.
    bones_at: usize,
    /// Empty while every recorded scale has been one; then `capacity * bone_count`,
    /// frame-major.
    scales: Vec<[f32; 3]>,
    /// Sequence number of the newest frame this entity was recorded in (0: never).
    last_seq: u64,
    /// Sequence number of the first frame this entity was recorded in (0: never).
    first_seq: u64,
}

/// The recorded past of every entity, and static world geometry.
///
/// Record one frame per server tick with [`History::begin_frame`]; query any moment inside
/// the window with [`History::query`]. Queries take `&self` and never change anything.
#[derive(Debug, Clone)]
pub struct History {
    config: HistoryConfig,
    capacity: usize,
    frames: Vec<FrameMeta>,
    /// Sequence number of the newest frame (0: none yet). Frame `seq` lives in ring slot
    /// `seq % capacity`.
    newest_seq: u64,
    /// `newest_seq % capacity`, kept so ring lookups never divide.
    newest_ring: usize,
    slots: Vec<EntitySlot>,
    /// Every entity's rings.
    lanes: Lanes,
    free: Vec<u32>,
    /// Despawned slots waiting for their last frame to age out.
    retiring: Vec<u32>,
    /// Slots with lag compensation off in some frame still in the ring, and the newest
    /// such frame: rewound to one of those frames they are tested at their present pose.
    uncompensated: Vec<(u32, u64)>,
    /// The entity tree that new frames are recorded into: it holds every frame from
    /// `tree_from` on.
    tree: TemporalBvh,
    /// The tree before the last rebuild: it holds the frames before `tree_from` (and
    /// `tree_from` itself, which their spans reach), until they age out of the ring.
    old_tree: TemporalBvh,
    /// The oldest frame `tree` holds boxes for (0: every frame, nothing older is needed).
    tree_from: u64,
    /// Slots spawned since the last frame ended: placed in the tree when it ends.
    spawned: Vec<u32>,
    frames_since_build: usize,
    /// The level's static geometry (`crate::world`).
    pub(crate) level: Level,
    /// Which kernels record and query this history (chosen once, when it is created:
    /// the same algorithm on every CPU, only the kernels differ).
    kernels: Kernels,
    /// Changes whenever which entities are active, where their rows lie, or whether one
    /// has a scale lane changes (spawn, despawn, a freed slot, the lanes laid out, a first
    /// scale): a `plan::BatchPlan` made under another value no longer holds.
    layout_epoch: u64,
    /// The last batch recorded whole, for the next tick's same batch
    /// (`FrameRecorder::record_all`).
    plan: plan::BatchPlan,
}

impl History {
    /// An empty history sized for `config`.
    ///
    /// # Errors
    /// [`ConfigError`] for a tick rate or window that is not finite and positive.
    ///
    /// # Example
    /// ```
    /// use lagcomp::{ConfigError, History, HistoryConfig};
    ///
    /// // A 60 Hz server that honours shots fired up to 250 ms in the past.
    /// let config = HistoryConfig { tick_rate: 60.0, max_rewind: 0.25 };
    /// let history = History::new(config)?;
    /// // 16.5 frames cover the window at a tick rate 10 % fast, plus two at its edges.
    /// assert_eq!(history.capacity(), 19);
    ///
    /// let too_long = HistoryConfig { max_rewind: 30.0, ..config };
    /// assert_eq!(History::new(too_long).unwrap_err(), ConfigError::MaxRewind(30.0));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(config: HistoryConfig) -> Result<Self, ConfigError> {
        if !(config.tick_rate.is_finite() && config.tick_rate > 0.0 && config.tick_rate <= 1000.0) {
            return Err(ConfigError::TickRate(config.tick_rate));
        }
        if !(config.max_rewind.is_finite() && config.max_rewind > 0.0 && config.max_rewind <= 10.0)
        {
            return Err(ConfigError::MaxRewind(config.max_rewind));
        }
        let capacity = config.capacity();
        Ok(Self {
            config,
            capacity,
            frames: vec![
                FrameMeta {
                    seq: 0,
                    tick: Tick(0),
                    time: 0.0,
                };
                capacity
            ],
            newest_seq: 0,
            newest_ring: 0,
            slots: Vec::new(),
            lanes: Lanes::default(),
            free: Vec::new(),
            retiring: Vec::new(),
            uncompensated: Vec::new(),
            tree: TemporalBvh::default(),
            old_tree: TemporalBvh::default(),
            tree_from: 0,
            spawned: Vec::new(),
            frames_since_build: 0,
            level: Level::default(),
            kernels: Kernels::detect(),
            layout_epoch: 0,
            plan: plan::BatchPlan::default(),
        })
    }

    /// The configuration it was built with.
    #[must_use]
    pub fn config(&self) -> &HistoryConfig {
        &self.config
    }

    /// How many frames the ring holds.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Tick and time of the oldest and newest frames held, if any.
    #[must_use]
    pub fn span(&self) -> Option<((Tick, f64), (Tick, f64))> {
        if self.newest_seq == 0 {
            return None;
        }
        let oldest = self.meta(self.oldest_seq());
        let newest = self.meta(self.newest_seq);
        Some(((oldest.tick, oldest.time), (newest.tick, newest.time)))
    }

    /// The range of times a query may rewind to: from the later of the window edge and the
    /// oldest frame, to the newest frame.
    ///
    /// PERF: always inlined, and the newest frame read by its ring slot: a trace resolves
    /// its time target through this, and a call returned the window through memory.
    #[must_use]
    #[inline(always)]
    pub fn window(&self) -> Option<(f64, f64)> {
        if self.newest_seq == 0 {
            return None;
        }
        let oldest = self.meta(self.oldest_seq()).time;
        let newest = self.frames[self.newest_ring].time;
        debug_assert_eq!(newest.to_bits(), self.meta(self.newest_seq).time.to_bits());
        Some(((newest - self.config.max_rewind).max(oldest), newest))
    }

    /// The newest recorded tick.
    #[must_use]
    pub fn newest_tick(&self) -> Option<Tick> {
        self.span().map(|(_, (tick, _))| tick)
    }

    /// Server time of a recorded tick still in the history.
    #[must_use]
    pub fn time_of(&self, tick: Tick) -> Option<f64> {
        self.seq_of_tick(tick).map(|seq| self.meta(seq).time)
    }

    /// The state (flags, layers, user bits) an entity had in the newest frame it was
    /// recorded in.
    ///
    /// # Errors
    /// [`EntityError`] for a bad handle or an entity never recorded.
    pub fn present_state(&self, id: EntityId) -> Result<EntityState, EntityError> {
        let index = self.known_index(id)?;
        let slot = &self.slots[index];
        if slot.last_seq == 0 || slot.last_seq < self.oldest_seq() {
            return Err(EntityError::NoFrames(id));
        }
        let ring = self.ring(slot.last_seq);
        Ok(EntityState::from_frame(self.entity_frame(index, ring)))
    }

    /// Resolves a rewind target to the time it names, without querying anything: the
    /// check a validator makes before tracing.
    ///
    /// # Errors
    /// [`RewindError`] when the target is malformed or outside the window (under
    /// [`WindowPolicy::Reject`]).
    pub fn resolve(&self, target: RewindTarget, policy: WindowPolicy) -> Result<f64, RewindError> {
        self.bracket(target, policy).map(|b| b.time)
    }

    /// Bytes that hold recorded history: the pose and per-frame lanes as allocated (free
    /// places and growth slack included), every slot's scale ring, and the frame headers.
    /// The broadphase tree is reported by [`History::broadphase_bytes`].
    #[must_use]
    pub fn history_bytes(&self) -> usize {
        let lanes = &self.lanes;
        let scales: usize = self
            .slots
            .iter()
            .map(|s| s.scales.capacity() * std::mem::size_of::<[f32; 3]>())
            .sum();
        lanes.translations.held_bytes()
            + lanes.rotations.held_bytes()
            + lanes.frames.held_bytes()
            + lanes.velocities.held_bytes()
            + scales
            + self.frames.capacity() * std::mem::size_of::<FrameMeta>()
    }

    /// Heap bytes of the broadphase (the entity trees with their per-frame boxes: the
    /// current one and the one the older frames were recorded under).
    #[must_use]
    pub fn broadphase_bytes(&self) -> usize {
        self.tree.heap_bytes() + self.old_tree.heap_bytes()
    }

    // --- ring helpers ---

    /// The frame record of slot `index` in ring slot `ring`.
    ///
    /// # Panics
    /// If slot `index` has no ring in the lanes (never for a slot with a recorded frame).
    #[inline(always)]
    fn entity_frame(&self, index: usize, ring: usize) -> &EntityFrame {
        &self.lanes.frames[self.lanes.frame(index, ring)]
    }

    /// Ring slot of frame `seq`, which must be in the ring (`oldest_seq..=newest_seq`).
    #[inline]
    fn ring(&self, seq: u64) -> usize {
        debug_assert!(seq <= self.newest_seq && self.newest_seq - seq < self.capacity as u64);
        let back = (self.newest_seq - seq) as usize;
        if back <= self.newest_ring {
            self.newest_ring - back
        } else {
            self.newest_ring + self.capacity - back
        }
    }

    #[inline]
    fn meta(&self, seq: u64) -> &FrameMeta {
        &self.frames[self.ring(seq)]
    }

    #[inline]
    fn oldest_seq(&self) -> u64 {
        (self.newest_seq + 1)
            .saturating_sub(self.capacity as u64)
            .max(1)
    }

    fn seq_of_tick(&self, tick: Tick) -> Option<u64> {
        if self.newest_seq == 0 {
            return None;
        }
        let (mut lo, mut hi) = (self.oldest_seq(), self.newest_seq);
        while lo <= hi {
            let mid = lo + (hi - lo) / 2;
            let t = self.meta(mid).tick;
            match t.cmp(&tick) {
                std::cmp::Ordering::Equal => return Some(mid),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => {
                    if mid == 0 {
                        return None;
                    }
                    hi = mid - 1;
                }
            }
        }
        None
    }

    /// The kernels chosen when the history was created.
    #[inline]
    pub(crate) fn kernels(&self) -> Kernels {
        self.kernels
    }

    /// The entity tree that holds the boxes of every frame of `bracket` (`older..=newer`):
    /// the current tree for brackets from `tree_from` on, the tree before it for brackets
    /// that end at or before `tree_from`. `None` for the rare bracket that straddles the
    /// last rebuild (a tick-pair target skipping frames across it): no one tree holds all
    /// of its frames, and the query tests every entity instead.
    ///
    /// PERF: the bracket's two frames by value: a reference made the query build its
    /// bracket in memory (22 instructions a shot at 64x16).
    #[inline(always)]
    pub(crate) fn entity_tree(&self, bracket: &Bracket) -> Option<&TemporalBvh> {
        let (older, newer) = (bracket.older, bracket.newer);
        debug_assert!(older <= newer && older >= self.oldest_seq());
        if older >= self.tree_from {
            Some(&self.tree)
        } else {
            self.older_entity_tree(newer)
        }
    }

    /// The tree new frames are recorded into (what a debug walk, which tests every
    /// entity, is given).
    pub(crate) fn current_entity_tree(&self) -> &TemporalBvh {
        &self.tree
    }

    /// [`History::entity_tree`] for a bracket from before the current tree's frames that
    /// ends at `newer`. Not rare with more than 512 entities: right after a rebuild nearly
    /// every frame is older than `tree_from`, and over a window about half the brackets
    /// land here.
    ///
    /// PERF: out of line so that the current-tree test inlined into every query stays
    /// short (in line, with the every-entity loop beside it, the choice of tree cost 21-22
    /// instructions a shot instead of 15-17 under callgrind).
    #[cold]
    #[inline(never)]
    fn older_entity_tree(&self, newer: u64) -> Option<&TemporalBvh> {
        (newer <= self.tree_from).then_some(&self.old_tree)
    }

    /// Slots that may be tested at their present pose (lag compensation off).
    pub(crate) fn uncompensated(&self) -> impl Iterator<Item = usize> + '_ {
        self.uncompensated.iter().map(|&(i, _)| i as usize)
    }

    /// Slots a debug observer walks to report every entity's broadphase decision.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn slot_rig(&self, index: usize) -> Option<(&Rig, EntityId)> {
        let slot = &self.slots[index];
        slot.rig.as_deref().map(|rig| (rig, slot.id(index)))
    }

    /// [`History::slot_rig`] and the entity's role, from one read of the slot.
    #[inline]
    pub(crate) fn slot_entry(&self, index: usize) -> Option<(&Rig, EntityId, EntityRole)> {
        let slot = &self.slots[index];
        slot.rig
            .as_deref()
            .map(|rig| (rig, slot.id(index), slot.role))
    }

    /// The role of the entity in slot `index` (of the last one, for a free slot).
    #[inline]
    pub(crate) fn slot_role(&self, index: usize) -> EntityRole {
        self.slots[index].role
    }
}

impl BoneTransform {
    fn from_stored(
        translation: &StoredTranslation,
        rotation: &StoredRotation,
        scale: Vec3,
    ) -> Self {
        Self {
            translation: Vec3::from_array(*translation),
            rotation: Quat::from_array(*rotation),
            scale,
        }
    }
}
