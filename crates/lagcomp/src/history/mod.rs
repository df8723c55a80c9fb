//! The recorded past: entities, their rigs, and a ring buffer of per-tick bone transforms.
//!
//! What lives here: [`History`] (configuration, spawning, despawning),
//! [`FrameRecorder`] (writing one tick; its per-bone copy-check-bound pass is `bone_pass`,
//! whose kernels live in `crate::simd`), resolving a [`RewindTarget`] to the
//! frames that bracket it (`bracket`), and rebuilding an entity's bones at that moment
//! (`sample`).
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
mod cull;
mod frame;
mod lane;
mod plan;
#[cfg(test)]
mod record_tests;
mod recorder;
mod sample;
mod stamp;

pub(crate) use bone_pass::{BonePass, assert_one_length};
pub(crate) use cull::{LineLanes, cull4};
pub use recorder::FrameRecorder;
pub(crate) use sample::{Bracket, EntitySample, EntityView};
pub use sample::{NearestReason, Sample, SampleKind};

use std::fmt;
use std::sync::Arc;

use glam::{Quat, Vec3};

use crate::bvh::TemporalBvh;
use crate::math::{Aabb, BoneTransform, TransformError};
use crate::rig::Rig;
use crate::simd::Kernels;
use crate::time::{RewindError, RewindTarget, Tick, WindowPolicy};
use crate::world::Level;
use lane::{BoneRanges, Lane};

/// How the history is sized.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HistoryConfig {
    /// Server ticks per second (frames recorded per second).
    pub tick_rate: f64,
    /// The furthest back a query may rewind, in seconds.
    pub max_rewind: f64,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            tick_rate: 64.0,
            max_rewind: 0.5,
        }
    }
}

impl HistoryConfig {
    /// Frames kept: enough to cover the window at a tick rate up to 10 % faster than
    /// configured (tick lengths vary), plus the frame just older than the window edge and
    /// the newest frame.
    fn capacity(&self) -> usize {
        ((self.max_rewind * self.tick_rate * 1.1).ceil() as usize).saturating_add(2)
    }
}

/// Why a configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The tick rate must be finite and in `(0, 1000]`.
    #[error("tick rate {0} must be finite and in (0, 1000] Hz")]
    TickRate(f64),
    /// The rewind window must be finite and in `(0, 10]` seconds.
    #[error("max rewind {0} must be finite and in (0, 10] seconds")]
    MaxRewind(f64),
}

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

const ALIVE: u8 = 1;
const LAG_COMPENSATED: u8 = 2;
const TELEPORTED: u8 = 4;

impl EntityState {
    fn to_flags(self) -> u8 {
        (u8::from(self.alive) * ALIVE)
            | (u8::from(self.lag_compensated) * LAG_COMPENSATED)
            | (u8::from(self.teleported) * TELEPORTED)
    }

    fn from_frame(frame: &EntityFrame) -> Self {
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

/// Why a frame or an entity's record in it was refused. The history is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum RecordError {
    /// The frame time is NaN, infinite or beyond ±1e12 seconds.
    #[error("frame time {0} is not a finite server time")]
    InvalidTime(f64),
    /// Ticks must increase from frame to frame.
    #[error("{got} does not follow the newest recorded {newest}")]
    TickNotIncreasing {
        /// The newest recorded tick.
        newest: Tick,
        /// The tick that was offered.
        got: Tick,
    },
    /// Frame times must increase from frame to frame.
    #[error("frame time {got} does not follow the newest recorded time {newest}")]
    TimeNotIncreasing {
        /// The newest recorded time.
        newest: f64,
        /// The time that was offered.
        got: f64,
    },
    /// The entity handle cannot record.
    #[error(transparent)]
    Entity(#[from] EntityError),
    /// The entity was already recorded in this frame.
    #[error("{0} was already recorded in this frame")]
    AlreadyRecorded(EntityId),
    /// The number of bone transforms does not match the rig.
    #[error("{entity} has {expected} bones, got {got} transforms")]
    BoneCount {
        /// The entity.
        entity: EntityId,
        /// Bones in its rig.
        expected: u16,
        /// Transforms offered.
        got: usize,
    },
    /// [`FrameRecorder::record_all`] was given a different number of transforms than its
    /// entities' rigs have bones together.
    #[error("the entities have {expected} bones together, got {got} transforms")]
    BatchBones {
        /// Bones of every listed entity's rig, summed.
        expected: usize,
        /// Transforms offered.
        got: usize,
    },
    /// A bone transform is invalid.
    #[error("{entity} bone {bone}: {error}")]
    Transform {
        /// The entity.
        entity: EntityId,
        /// The bone.
        bone: u16,
        /// What is wrong with it.
        error: TransformError,
    },
}

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
    rig: Option<Arc<Rig>>,
    bone_count: usize,
    /// First of the `bone_count` places the entity holds in each ring slot's block of the
    /// bone lanes ([`BoneRanges`], [`Lanes::row`]); kept while the slot is free, to give
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

/// The rings of every entity, one allocation per lane.
///
/// Layout (frame-major): each lane is `capacity` blocks, one per ring slot, of `row_stride`
/// bone places (bone lanes) or `frame_stride` records (frame lane). Entity slot `i` with
/// `n` bones has its row of ring slot `r` at `r * row_stride + bones_at` (`n` consecutive
/// bones) and its frame record at `r * frame_stride + i`. A tick writes one block of each
/// lane, front to back when entities are recorded in the order they were spawned: three
/// sequential streams, which the hardware prefetches, instead of a few lines in every
/// entity's ring.
#[derive(Debug, Clone, Default)]
struct Lanes {
    /// Bone translations, and one spare element after the last row: recording's 16-byte
    /// stores spill onto the element after a row and put it back (see `bone_pass`).
    translations: Lane<StoredTranslation>,
    /// Bone rotations, row for row with the translations.
    rotations: Lane<StoredRotation>,
    /// Per-entity frame records.
    frames: Lane<EntityFrame>,
    /// Bone places per ring slot block (at least `ranges.end()`).
    row_stride: usize,
    /// Frame records per ring slot block (at least the number of entity slots).
    frame_stride: usize,
    /// Which bone places belong to which entity.
    ranges: BoneRanges,
    /// Slots spawned since the lanes were last fitted (`History::fit_lanes`): their places
    /// may lie past the lanes' end, and their rows are reset there.
    pending: Vec<u32>,
    /// Whether a batch writes the rows with non-temporal (streaming) stores: the bone lanes
    /// hold at least [`STREAM_MIN_BYTES`] (see there).
    stream: bool,
    /// Tests: streaming on or off whatever the size.
    #[cfg(test)]
    force_stream: Option<bool>,
}

/// Bone lanes of at least this many bytes are written by [`FrameRecorder::record_all`]
/// with streaming stores (x86_64 with AVX2), which go to memory without first reading each
/// line. A ring slot is rewritten once per window, after every other slot: when the lanes
/// are larger than the last-level cache (32 MiB on the machine measured), the slot being
/// written has left the caches, and a plain store waits for its line to be read from
/// memory. Smaller lanes keep plain stores: their
/// rows are still cached when rewritten, and queries read the newest frames warm.
pub(super) const STREAM_MIN_BYTES: usize = 32 << 20;

/// The identity rotation, as stored.
const IDENTITY_ROTATION: StoredRotation = [0.0, 0.0, 0.0, 1.0];

impl Lanes {
    /// Index in the bone lanes of `slot`'s row of ring slot `ring`.
    #[inline(always)]
    fn row(&self, slot: &EntitySlot, ring: usize) -> usize {
        ring * self.row_stride + slot.bones_at
    }

    /// Index in the frame lane of slot `index`'s record of ring slot `ring`.
    #[inline(always)]
    fn frame(&self, index: usize, ring: usize) -> usize {
        ring * self.frame_stride + index
    }

    /// Lays the lanes out again (a copy of every row) if their blocks are shorter than
    /// `places` bone places or `slots` frame records, to the length `stride(old, needed)`
    /// gives.
    ///
    /// Bone blocks are a whole number of [`lane::GROUP`]s long, so that every aligned range
    /// of places is aligned in every block.
    fn fit(
        &mut self,
        capacity: usize,
        places: usize,
        slots: usize,
        stride: impl Fn(usize, usize) -> usize,
    ) {
        if self.row_stride < places {
            let new = stride(self.row_stride, places).next_multiple_of(lane::GROUP);
            let strides = (self.row_stride, new);
            // One spare translation after the last block: see `bone_pass`.
            self.translations = restrided(&self.translations, capacity, strides, 1, [0.0; 3]);
            self.rotations = restrided(&self.rotations, capacity, strides, 0, IDENTITY_ROTATION);
            self.row_stride = strides.1;
        }
        if self.frame_stride < slots {
            let strides = (self.frame_stride, stride(self.frame_stride, slots));
            self.frames = restrided(&self.frames, capacity, strides, 0, EntityFrame::NEVER);
            self.frame_stride = strides.1;
        }
        self.stream =
            self.translations.held_bytes() + self.rotations.held_bytes() >= STREAM_MIN_BYTES;
        #[cfg(test)]
        if let Some(forced) = self.force_stream {
            self.stream = forced;
        }
    }
}

/// `lane` (`capacity` blocks of `old` elements, then `extra`) laid out again as
/// `capacity` blocks of `new` elements, then `extra`: each block keeps its elements at the
/// front and is filled with `fill` after them.
fn restrided<T: Copy>(
    lane: &Lane<T>,
    capacity: usize,
    (old, new): (usize, usize),
    extra: usize,
    fill: T,
) -> Lane<T> {
    debug_assert!(new >= old && lane.len() == capacity * old + if old == 0 { 0 } else { extra });
    let mut grown = Lane::filled(capacity * new + extra, fill);
    for ring in 0..capacity {
        grown[ring * new..][..old].copy_from_slice(&lane[ring * old..][..old]);
    }
    grown
}

impl EntitySlot {
    fn id(&self, index: usize) -> EntityId {
        EntityId {
            index: index as u32,
            generation: self.generation,
        }
    }
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

    /// Registers an entity with its rig. It becomes visible to queries from the first
    /// frame it is recorded in. Its ring is placed in the history's lanes (in places a
    /// retired entity held when they fit); the lanes grow, if they must, when the next
    /// frame begins, so spawning many entities between two frames copies the history at
    /// most once. That copy is slow for a large history (see [`History::reserve`]):
    /// entities spawned before the first frame, or into reserved room, cost nothing.
    pub fn spawn(&mut self, rig: Arc<Rig>) -> EntityId {
        let bone_count = usize::from(rig.bone_count());
        let index = match self.free.pop() {
            Some(index) => index as usize,
            None => {
                self.slots.push(EntitySlot {
                    generation: 0,
                    life: Life::Free,
                    rig: None,
                    bone_count: 0,
                    bones_at: 0,
                    scales: Vec::new(),
                    last_seq: 0,
                    first_seq: 0,
                });
                self.slots.len() - 1
            }
        };
        let bones_at = self.lanes.ranges.take(bone_count);
        let slot = &mut self.slots[index];
        slot.life = Life::Active;
        slot.rig = Some(rig);
        slot.bone_count = bone_count;
        slot.bones_at = bones_at;
        slot.scales.clear();
        slot.last_seq = 0;
        slot.first_seq = 0;
        self.lanes.pending.push(index as u32);
        self.spawned.push(index as u32);
        self.layout_epoch += 1;
        slot.id(index)
    }

    /// Makes the lanes hold every spawned entity's ring, and resets the rings of entities
    /// spawned since the last call. Called when a frame begins: between a spawn and the
    /// next frame nothing reads a new entity's rows (it has no recorded frame).
    ///
    /// Growing lays every lane out again with longer blocks (a copy): each time by at
    /// least a quarter, so that spawning one entity per tick copies each row a bounded
    /// number of times, and to exactly what is needed when the lanes were empty (all of a
    /// match's entities spawned before its first frame hold no slack).
    ///
    /// PERF: out of line: it runs once per frame and returns at once but after spawns.
    #[inline(never)]
    fn fit_lanes(&mut self) {
        if self.lanes.pending.is_empty() {
            return;
        }
        self.layout_epoch += 1;
        let capacity = self.capacity;
        let lanes = &mut self.lanes;
        let places = lanes.ranges.end();
        lanes.fit(capacity, places, self.slots.len(), |stride, needed| {
            needed.max(stride + stride / 4)
        });
        for &index in &lanes.pending {
            let index = index as usize;
            let slot = &self.slots[index];
            if slot.life == Life::Free {
                // Despawned before its first frame: its places went back to the ranges.
                continue;
            }
            for ring in 0..capacity {
                let row = lanes.row(slot, ring);
                lanes.translations[row..row + slot.bone_count].fill([0.0; 3]);
                lanes.rotations[row..row + slot.bone_count].fill(IDENTITY_ROTATION);
                let frame = lanes.frame(index, ring);
                lanes.frames[frame] = EntityFrame::NEVER;
            }
        }
        lanes.pending.clear();
    }

    /// Makes room for `entities` more entities with `bones` bones between them, so that
    /// spawning them does not lay the history's lanes out again when the next frame begins.
    /// Growing copies the whole history into new memory (57 MB for 5,000 twenty-bone
    /// entities at 30 Hz and a 0.5 s window), which can take several ticks of a game
    /// server. A server that knows how many players it takes reserves them before the
    /// match; like `Vec::reserve`, this may hold more than asked.
    ///
    /// # Panics
    /// As `Vec::reserve` does: if the room asked for does not fit in the address space.
    pub fn reserve(&mut self, entities: usize, bones: usize) {
        // A spawn takes a free slot before a new one, and a free range of places before
        // new places at the end: room past both ends is enough for any order of spawns.
        let slots = self.slots.len().saturating_add(entities);
        let places = self.lanes.ranges.end().saturating_add(bones);
        self.slots.reserve(entities);
        self.spawned.reserve(entities);
        self.layout_epoch += 1;
        self.lanes
            .fit(self.capacity, places, slots, |_, needed| needed);
    }

    /// Stops recording an entity. Its history stays queryable until its last frame ages
    /// out of the window (a shot at a player who died this tick still validates); then its
    /// slot is reused under a new generation.
    ///
    /// # Errors
    /// [`EntityError`] if the handle is unknown, stale or already despawned.
    pub fn despawn(&mut self, id: EntityId) -> Result<(), EntityError> {
        let index = self.active_index(id)?;
        self.layout_epoch += 1;
        let slot = &mut self.slots[index];
        if slot.last_seq == 0 {
            self.free_slot(index);
        } else {
            slot.life = Life::Despawned;
            self.retiring.push(index as u32);
        }
        Ok(())
    }

    fn free_slot(&mut self, index: usize) {
        self.layout_epoch += 1;
        let slot = &mut self.slots[index];
        slot.life = Life::Free;
        slot.generation = slot.generation.wrapping_add(1);
        slot.rig = None;
        self.lanes.ranges.give_back(slot.bones_at, slot.bone_count);
        self.free.push(index as u32);
        self.uncompensated.retain(|&(i, _)| i as usize != index);
        // The tree is not rebuilt for this: a slot is freed once its last frame has aged
        // out, so its leaf is empty in every frame the trees still answer for, and stays
        // so (nothing records a free slot) until the next build drops it or a spawn into
        // the slot rebuilds anyway.
    }

    /// The rig of an entity (despawned entities keep theirs until they age out).
    ///
    /// # Errors
    /// [`EntityError::Unknown`] or [`EntityError::Stale`].
    pub fn rig(&self, id: EntityId) -> Result<&Arc<Rig>, EntityError> {
        let index = self.known_index(id)?;
        self.slots[index].rig.as_ref().ok_or(EntityError::Stale(id))
    }

    /// Whether the entity is registered and not despawned.
    #[must_use]
    pub fn is_active(&self, id: EntityId) -> bool {
        self.active_index(id).is_ok()
    }

    /// How many entities are registered or despawned but still in the window.
    #[must_use]
    pub fn entity_count(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Index of a handle that names a live or despawned-but-remembered entity.
    pub(crate) fn known_index(&self, id: EntityId) -> Result<usize, EntityError> {
        let index = id.index as usize;
        let slot = self.slots.get(index).ok_or(EntityError::Unknown(id))?;
        if slot.generation != id.generation {
            return Err(if id.generation > slot.generation {
                EntityError::Unknown(id)
            } else {
                EntityError::Stale(id)
            });
        }
        match slot.life {
            // A free slot's current generation has not been handed out yet.
            Life::Free => Err(EntityError::Unknown(id)),
            Life::Active | Life::Despawned => Ok(index),
        }
    }

    fn active_index(&self, id: EntityId) -> Result<usize, EntityError> {
        let index = self.known_index(id)?;
        match self.slots[index].life {
            Life::Active => Ok(index),
            _ => Err(EntityError::Despawned(id)),
        }
    }

    /// Checks a batch for [`FrameRecorder::record_all`]: every handle active, and as many
    /// transforms as the entities have bones together.
    fn check_batch(
        &self,
        entities: &[(EntityId, EntityState)],
        transforms: usize,
    ) -> Result<(), RecordError> {
        let mut expected = 0;
        for &(id, _) in entities {
            expected += self.slots[self.active_index(id)?].bone_count;
        }
        if expected != transforms {
            return Err(RecordError::BatchBones {
                expected,
                got: transforms,
            });
        }
        Ok(())
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
