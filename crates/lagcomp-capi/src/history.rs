//! The history: creating one, spawning rigs, static walls, recording a tick, and the match
//! recording that mirrors every change into a file.
//!
//! Thread safety: each history sits behind its own mutex. Calls on one history from
//! several threads are serialized (a second caller blocks until the first returns);
//! calls on different histories run in parallel.

use std::fs::File;
use std::io::BufWriter;
use std::sync::{Arc, Mutex, MutexGuard};

use lagcomp::{
    BoneTransform, EntityId, EntityRole, EntityState, History, HistoryConfig, Hit, Overlap,
    RecordError, Rig, Tick,
};
use lagcomp_validate::recording::RecordingWriter;

use crate::args::{input, output, slice};
use crate::handle::{Kind, Registry};
use crate::status::{
    Failure, LAGCOMP_BAD_LENGTH, LAGCOMP_INVALID_ARGUMENT, LAGCOMP_INVALID_STATE, LAGCOMP_IO,
    LAGCOMP_NOT_FINITE, LAGCOMP_OUT_OF_ORDER, LAGCOMP_PANIC, LAGCOMP_UNKNOWN_ENTITY, LagcompStatus,
    fail, guard,
};
use crate::types::{
    LagcompBoneTransform, LagcompEntityState, LagcompHitbox, LagcompPose, LagcompShape, bone,
    entity, finite_pose, required_text,
};

/// A history of every entity's hitboxes over the rewind window, and the static world.
/// Opaque: created by `lagcomp_history_new`, freed by `lagcomp_history_free`.
pub struct LagcompHistory {
    _private: (),
}

/// How a history is sized. Fill with `lagcomp_history_config_default`, then change what
/// you need.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompHistoryConfig {
    /// `sizeof(LagcompHistoryConfig)` as the caller compiled it: later versions only
    /// append fields, and a library accepts any size from the first version's up (fields
    /// past the caller's size take their defaults; fields it does not know are ignored).
    pub struct_size: u32,
    /// Must be 0.
    pub reserved: u32,
    /// Server ticks per second, in (0, 1000].
    pub tick_rate: f64,
    /// The furthest back a query may rewind, seconds, in (0, 10].
    pub max_rewind: f64,
}

/// A history and what its calls reuse from tick to tick.
pub(crate) struct HistoryState {
    pub(crate) history: History,
    /// The batch of the tick being recorded, converted.
    batch: Vec<(EntityId, EntityState)>,
    /// Bones copied when the caller's array cannot be read in place.
    bones: Vec<BoneTransform>,
    /// The last batch converted into `batch` and checked (handles, bone total), under
    /// `checked_epoch`: its ids, its states (`None`: the caller passed none), its bones.
    checked: Vec<u64>,
    checked_states: Option<Vec<LagcompEntityState>>,
    checked_bones: usize,
    checked_epoch: u64,
    /// Bumped by every spawn and despawn: a checked batch no longer holds.
    epoch: u64,
    /// The distinct rigs spawned so far: entities spawned with equal hitboxes share one
    /// (see `lagcomp_history_spawn`).
    rigs: Vec<Arc<Rig>>,
    /// Query results before they are copied out.
    pub(crate) hits: Vec<Hit>,
    pub(crate) overlaps: Vec<Overlap>,
    pub(crate) ignore: Vec<EntityId>,
    /// The match recording, if one was started.
    pub(crate) recording: Option<RecordingWriter<BufWriter<File>>>,
    /// Whether anything was spawned, added or recorded, or a validator bound: a match
    /// recording must start before.
    pub(crate) used: bool,
    /// Whether a validator was bound to it (a recorded match takes one).
    pub(crate) validator_bound: bool,
}

pub(crate) type HistoryCell = Mutex<HistoryState>;

pub(crate) static HISTORIES: Registry<HistoryCell> = Registry::new(Kind::History);

/// Locks a history; a mutex poisoned by a panic refuses every later call.
pub(crate) fn lock(cell: &HistoryCell) -> Result<MutexGuard<'_, HistoryState>, Failure> {
    cell.lock().map_err(|_| {
        Failure::new(
            LAGCOMP_PANIC,
            "an earlier call panicked while using this history; it may be inconsistent: free it",
        )
    })
}

/// Looks a handle up and runs `body` on its locked state.
pub(crate) fn with_history(
    handle: *const LagcompHistory,
    body: impl FnOnce(&mut HistoryState) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let cell = HISTORIES.get(handle)?;
    let mut state = lock(&cell)?;
    body(&mut state)
}

pub(crate) fn cell_of(handle: *const LagcompHistory) -> Result<Arc<HistoryCell>, Failure> {
    HISTORIES.get(handle)
}

impl HistoryState {
    /// The rig equal to `rig` that earlier spawns share, or `rig` itself, kept for the
    /// next spawns. Rigs no entity uses any more are dropped here.
    ///
    /// PERF: recording reads each entity's rig (its bones' reaches); 200 entities with a
    /// rig each instead of one shared made a 200 x 20 tick 12 % slower (the bench's
    /// alternating rounds: capi/rust 1.120 with a rig per entity, see the commit).
    fn shared_rig(&mut self, rig: Rig) -> Arc<Rig> {
        self.rigs.retain(|kept| Arc::strong_count(kept) > 1);
        if let Some(kept) = self.rigs.iter().find(|kept| ***kept == rig) {
            return Arc::clone(kept);
        }
        let rig = Arc::new(rig);
        self.rigs.push(Arc::clone(&rig));
        rig
    }

    /// Writes a line to the match recording, if any; a failure closes the recording.
    pub(crate) fn record_line(
        &mut self,
        line: impl FnOnce(&mut RecordingWriter<BufWriter<File>>) -> std::io::Result<()>,
    ) -> Result<(), Failure> {
        let Some(writer) = self.recording.as_mut() else {
            return Ok(());
        };
        match line(writer) {
            Ok(()) => Ok(()),
            Err(error) => {
                self.recording = None;
                let status = if error.kind() == std::io::ErrorKind::InvalidInput {
                    LAGCOMP_INVALID_STATE
                } else {
                    LAGCOMP_IO
                };
                fail(
                    status,
                    format!(
                        "the call took effect, but the match recording refused it and was \
                         closed: {error}"
                    ),
                )
            }
        }
    }
}

/// Fills `out` with the defaults: 64 ticks per second, a 1 s window.
///
/// # Safety
/// `out` is null or points to a writable `LagcompHistoryConfig`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_config_default(
    out: *mut LagcompHistoryConfig,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { output("out", out) }?;
        let d = HistoryConfig::default();
        *out = LagcompHistoryConfig {
            struct_size: size_of::<LagcompHistoryConfig>() as u32,
            reserved: 0,
            tick_rate: d.tick_rate,
            max_rewind: d.max_rewind,
        };
        Ok(())
    })
}

/// Creates a history. `*out` receives its handle.
///
/// # Errors
/// `LAGCOMP_BAD_LENGTH` for a `struct_size` smaller than this version's first
/// `LagcompHistoryConfig`; `LAGCOMP_NOT_FINITE` or `LAGCOMP_INVALID_ARGUMENT` for a tick
/// rate or window out of range.
///
/// # Safety
/// `config` is null or points to a `LagcompHistoryConfig` of at least its `struct_size`
/// bytes; `out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_new(
    config: *const LagcompHistoryConfig,
    out: *mut *mut LagcompHistory,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (config, out) = unsafe { (input("config", config)?, output("out", out)?) };
        // Version 1 is the whole struct; a later version reads the fields past
        // `struct_size` as their defaults instead of refusing a version 1 caller.
        if (config.struct_size as usize) < size_of::<LagcompHistoryConfig>() {
            return fail(
                LAGCOMP_BAD_LENGTH,
                format!(
                    "config struct_size {} is smaller than LagcompHistoryConfig ({})",
                    config.struct_size,
                    size_of::<LagcompHistoryConfig>()
                ),
            );
        }
        if !(config.tick_rate.is_finite() && config.max_rewind.is_finite()) {
            return fail(
                LAGCOMP_NOT_FINITE,
                "tick_rate and max_rewind must be finite",
            );
        }
        let history = History::new(HistoryConfig {
            tick_rate: config.tick_rate,
            max_rewind: config.max_rewind,
        })
        .map_err(|e| Failure::new(LAGCOMP_INVALID_ARGUMENT, e))?;
        *out = HISTORIES.insert(Mutex::new(HistoryState {
            history,
            batch: Vec::new(),
            bones: Vec::new(),
            rigs: Vec::new(),
            checked: Vec::new(),
            checked_states: None,
            checked_bones: 0,
            checked_epoch: 0,
            epoch: 1,
            hits: Vec::new(),
            overlaps: Vec::new(),
            ignore: Vec::new(),
            recording: None,
            used: false,
            validator_bound: false,
        }));
        Ok(())
    })
}

/// Frees a history: its handle is stale from now on (every call with it returns
/// `LAGCOMP_STALE_HANDLE`, a second free included). A match recording still open is
/// flushed and closed; validators bound to it keep what they need and go on working.
///
/// # Safety
/// None beyond passing a value: the handle is looked up, never dereferenced.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_history_free(history: *mut LagcompHistory) -> LagcompStatus {
    guard(|| {
        let cell = HISTORIES.remove(history)?;
        let mut state = lock(&cell)?;
        close_recording(&mut state)
    })
}

/// Makes room for `entities` more entities with `bones` bones between them, so spawning
/// them does not copy the history when the next tick is recorded. Call before the match.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_history_reserve(
    history: *mut LagcompHistory,
    entities: u32,
    bones: u32,
) -> LagcompStatus {
    guard(|| {
        with_history(history, |state| {
            state.history.reserve(entities as usize, bones as usize);
            Ok(())
        })
    })
}

/// Builds a rig from the caller's hitboxes.
///
/// # Safety
/// As `lagcomp_history_spawn`.
unsafe fn rig(
    bone_count: u16,
    hitboxes: *const LagcompHitbox,
    count: usize,
) -> Result<Rig, Failure> {
    // SAFETY: the caller's contract.
    let hitboxes = unsafe { slice("hitboxes", hitboxes, count) }?;
    let hitboxes = hitboxes
        .iter()
        // SAFETY: the caller's contract covers each hitbox's name.
        .map(|hb| unsafe { hb.to_rust() })
        .collect::<Result<Vec<_>, _>>()?;
    Rig::new(bone_count, hitboxes).map_err(|e| Failure::new(LAGCOMP_INVALID_ARGUMENT, e))
}

/// `lagcomp_history_spawn_as` `role`: can be hit and damaged (what
/// `lagcomp_history_spawn` spawns).
pub const LAGCOMP_ROLE_TARGET: u32 = 1;
/// `lagcomp_history_spawn_as` `role`: a door, lift or moving wall: stops traces where it
/// stood at the rewound time and is never hit.
pub const LAGCOMP_ROLE_BLOCKER: u32 = 2;
/// `lagcomp_history_spawn_as` `role`: a vehicle: can be hit and stops every trace.
pub const LAGCOMP_ROLE_TARGET_AND_BLOCKER: u32 = 3;

/// Spawns an entity whose rig has `bone_count` bones and these hitboxes (copied; entities
/// spawned with equal rigs share one copy). It is seen by queries from the first tick it
/// is recorded in, with `bone_count` transforms
/// per tick in bone order. `*out_entity` receives its id (stable, generational: after
/// despawning and aging out, the id reports `LAGCOMP_UNKNOWN_ENTITY`).
///
/// # Errors
/// `LAGCOMP_INVALID_ARGUMENT` for no bones or hitboxes, duplicate hitbox ids, a bone out of
/// range, a bad shape, zone or offset (the message names the hitbox).
///
/// # Safety
/// `hitboxes` points to `hitbox_count` hitboxes whose names are null or NUL-terminated;
/// `out_entity` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_spawn(
    history: *mut LagcompHistory,
    bone_count: u16,
    hitboxes: *const LagcompHitbox,
    hitbox_count: usize,
    out_entity: *mut u64,
) -> LagcompStatus {
    // SAFETY: passed through.
    unsafe {
        lagcomp_history_spawn_as(
            history,
            bone_count,
            hitboxes,
            hitbox_count,
            LAGCOMP_ROLE_TARGET,
            out_entity,
        )
    }
}

/// As `lagcomp_history_spawn`, with a `role` (`LAGCOMP_ROLE_*`) held for the entity's
/// whole life: a blocker (a door) stops rewound traces where it stood when the shooter
/// saw it and is never hit; a shot it stops is judged blocked, naming it
/// (`LagcompTrace::has_blocking_entity`, `LagcompVerdict::target` with `wall` `UINT32_MAX`).
///
/// # Errors
/// As `lagcomp_history_spawn`; `LAGCOMP_INVALID_ARGUMENT` for an unknown `role`.
///
/// # Safety
/// As `lagcomp_history_spawn`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_spawn_as(
    history: *mut LagcompHistory,
    bone_count: u16,
    hitboxes: *const LagcompHitbox,
    hitbox_count: usize,
    role: u32,
    out_entity: *mut u64,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { output("out_entity", out_entity) }?;
        let role = match role {
            LAGCOMP_ROLE_TARGET => EntityRole::Target,
            LAGCOMP_ROLE_BLOCKER => EntityRole::Blocker,
            LAGCOMP_ROLE_TARGET_AND_BLOCKER => EntityRole::TargetAndBlocker,
            other => {
                return Err(Failure::new(
                    LAGCOMP_INVALID_ARGUMENT,
                    format!("role {other} is not one of the LAGCOMP_ROLE_* values (1 to 3)"),
                ));
            }
        };
        // SAFETY: the caller's contract.
        let rig = unsafe { rig(bone_count, hitboxes, hitbox_count) }?;
        with_history(history, |state| {
            let rig = state.shared_rig(rig);
            let id = state.history.spawn_as(Arc::clone(&rig), role);
            state.epoch += 1;
            state.used = true;
            *out = id.to_bits();
            state.record_line(|w| w.spawn_as(id, &rig, role, None))
        })
    })
}

/// Spawns a rigid entity: one bone carrying every hitbox (a prop, a vehicle, a capsule
/// player). As `lagcomp_history_spawn` with `bone_count` 1.
///
/// # Safety
/// As `lagcomp_history_spawn`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_spawn_rigid(
    history: *mut LagcompHistory,
    hitboxes: *const LagcompHitbox,
    hitbox_count: usize,
    out_entity: *mut u64,
) -> LagcompStatus {
    // SAFETY: passed through.
    unsafe { lagcomp_history_spawn(history, 1, hitboxes, hitbox_count, out_entity) }
}

/// Stops recording an entity. Its past stays queryable until it ages out of the window
/// (a shot at a player who died this tick still validates).
///
/// # Errors
/// `LAGCOMP_UNKNOWN_ENTITY` for an id that is unknown, stale or already despawned.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_history_despawn(
    history: *mut LagcompHistory,
    entity_id: u64,
) -> LagcompStatus {
    guard(|| {
        with_history(history, |state| {
            let id = entity(entity_id);
            state
                .history
                .despawn(id)
                .map_err(|e| Failure::new(LAGCOMP_UNKNOWN_ENTITY, e))?;
            state.epoch += 1;
            state.record_line(|w| w.despawn(id))
        })
    })
}

/// Adds static world geometry (a wall, a floor) that blocks traces on matching `layers`.
/// Rebuilds the static tree: for level load, not every tick. `*out_id` (may be null)
/// receives its id, as blocked verdicts and traces name it.
///
/// # Safety
/// `shape` and `pose` are null or valid; `out_id` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_add_static(
    history: *mut LagcompHistory,
    shape: *const LagcompShape,
    pose: *const LagcompPose,
    layers: u32,
    out_id: *mut u32,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (shape, pose) = unsafe { (input("shape", shape)?, input("pose", pose)?) };
        let shape = shape.to_rust()?;
        let pose = finite_pose("the pose", pose)?;
        // SAFETY: the caller's contract.
        let out = unsafe { crate::args::optional("out_id", out_id.cast_const()) }?.is_some();
        with_history(history, |state| {
            let id = state
                .history
                .add_static(shape, pose, layers)
                .map_err(|e| Failure::new(LAGCOMP_INVALID_ARGUMENT, e))?;
            state.used = true;
            if out {
                // The history numbers its pieces below u32::MAX (`StaticError::Full`).
                let id = u32::try_from(id.0).unwrap_or(u32::MAX);
                // SAFETY: checked non-null and aligned above; the caller's contract.
                unsafe { *out_id = id };
            }
            state.record_line(|w| w.static_collider(shape, pose, layers))
        })
    })
}

/// Whether `LagcompBoneTransform` has `BoneTransform`'s layout in this build, so an array
/// of one can be read as the other.
const SAME_BONE_LAYOUT: bool = size_of::<LagcompBoneTransform>() == size_of::<BoneTransform>()
    && std::mem::offset_of!(LagcompBoneTransform, rotation)
        == std::mem::offset_of!(BoneTransform, rotation)
    && std::mem::offset_of!(LagcompBoneTransform, translation)
        == std::mem::offset_of!(BoneTransform, translation)
    && std::mem::offset_of!(LagcompBoneTransform, scale)
        == std::mem::offset_of!(BoneTransform, scale)
    && size_of::<lagcomp::Quat>() == size_of::<crate::types::LagcompQuat>()
    && size_of::<lagcomp::Vec3>() == size_of::<crate::types::LagcompVec3>();

/// The caller's bones as `BoneTransform`s: in place when the layouts agree and the array
/// is aligned for `BoneTransform`, else copied into `scratch`.
///
/// PERF: read in place, a 200 entities x 20 bones tick through the C interface costs
/// what the Rust call costs (`cargo bench -p lagcomp-capi --bench record`, alternating
/// rounds on a loaded 2-core box: capi/rust medians 1.027 and 0.999); copying the 4,000
/// transforms first (an unaligned array) costs about 1.6x (criterion: 30.3 and 29.2 us
/// against 18.7 and 18.6 us for the Rust call).
fn bones_view<'a>(
    bones: &'a [LagcompBoneTransform],
    scratch: &'a mut Vec<BoneTransform>,
) -> &'a [BoneTransform] {
    if SAME_BONE_LAYOUT && bones.as_ptr().cast::<BoneTransform>().is_aligned() {
        // SAFETY: `SAME_BONE_LAYOUT` checked in this build that both types have the same
        // size and their translation, rotation and scale at the same offsets, each made
        // of the same number of `f32`s (glam's `Vec3` is three, its `Quat` four, in x, y,
        // z, w order like ours); any bits are a valid `f32`, the padding is never read as
        // a field, and the pointer is aligned for `BoneTransform`. The slice borrows
        // `bones` for as long.
        unsafe { std::slice::from_raw_parts(bones.as_ptr().cast(), bones.len()) }
    } else {
        scratch.clear();
        scratch.extend(bones.iter().map(bone));
        scratch
    }
}

/// Status of a refused record.
fn record_failure(error: RecordError) -> Failure {
    let status = match error {
        RecordError::InvalidTime(t) if !t.is_finite() => LAGCOMP_NOT_FINITE,
        RecordError::InvalidTime(_) => LAGCOMP_INVALID_ARGUMENT,
        RecordError::TickNotIncreasing { .. } | RecordError::TimeNotIncreasing { .. } => {
            LAGCOMP_OUT_OF_ORDER
        }
        RecordError::Entity(_) => LAGCOMP_UNKNOWN_ENTITY,
        RecordError::AlreadyRecorded(_) => LAGCOMP_INVALID_ARGUMENT,
        RecordError::BoneCount { .. } | RecordError::BatchBones { .. } => LAGCOMP_BAD_LENGTH,
        RecordError::Transform { error, .. } => match error {
            lagcomp::TransformError::NonFiniteTranslation
            | lagcomp::TransformError::NonFiniteRotation => LAGCOMP_NOT_FINITE,
            _ => LAGCOMP_INVALID_ARGUMENT,
        },
        RecordError::InvalidVelocity { velocity, .. } if !velocity.is_finite() => {
            LAGCOMP_NOT_FINITE
        }
        RecordError::InvalidVelocity { .. } => LAGCOMP_INVALID_ARGUMENT,
    };
    Failure::new(status, error)
}

impl HistoryState {
    /// Whether `entities`, `states` and `bone_count` are the batch converted and checked
    /// last, with no spawn or despawn since.
    fn same_batch(
        &self,
        entities: &[u64],
        states: Option<&[LagcompEntityState]>,
        bone_count: usize,
    ) -> bool {
        self.checked_epoch == self.epoch
            && self.checked_bones == bone_count
            && self.checked == entities
            && self.checked_states.as_deref() == states
    }

    /// Converts the batch into `self.batch` and checks its handles and bone total before
    /// a frame begins, so a bad batch changes nothing (the frame is not begun).
    fn convert_batch(
        &mut self,
        entities: &[u64],
        states: Option<&[LagcompEntityState]>,
        bone_count: usize,
    ) -> Result<(), Failure> {
        // Whatever happens below, `batch` no longer holds the batch last checked.
        self.checked_epoch = 0;
        self.batch.clear();
        let mut expected = 0_usize;
        for (i, &bits) in entities.iter().enumerate() {
            let state = match states {
                Some(states) => states[i].to_rust()?,
                None => EntityState::default(),
            };
            let id = entity(bits);
            if !self.history.is_active(id) {
                let why = self
                    .history
                    .rig(id)
                    .map_or_else(|e| e.to_string(), |_| format!("{id} was despawned"));
                return fail(LAGCOMP_UNKNOWN_ENTITY, why);
            }
            let rig = self
                .history
                .rig(id)
                .map_err(|e| Failure::new(LAGCOMP_UNKNOWN_ENTITY, e))?;
            expected += usize::from(rig.bone_count());
            self.batch.push((id, state));
        }
        if expected != bone_count {
            return fail(
                LAGCOMP_BAD_LENGTH,
                format!("the entities have {expected} bones together, got {bone_count} transforms"),
            );
        }
        self.checked.clear();
        self.checked.extend_from_slice(entities);
        match (states, &mut self.checked_states) {
            (Some(states), Some(kept)) => {
                kept.clear();
                kept.extend_from_slice(states);
            }
            (Some(states), kept) => *kept = Some(states.to_vec()),
            (None, kept) => *kept = None,
        }
        self.checked_bones = bone_count;
        self.checked_epoch = self.epoch;
        Ok(())
    }

    /// Records one tick. See `lagcomp_history_record_tick`.
    ///
    /// PERF: the same batch as the last tick (ids, states, bone total) is neither
    /// converted nor looked up again: two comparisons of the caller's arrays.
    pub(crate) fn record_tick(
        &mut self,
        tick: u32,
        time: f64,
        entities: &[u64],
        states: Option<&[LagcompEntityState]>,
        bones: &[LagcompBoneTransform],
    ) -> Result<(), Failure> {
        if let Some(states) = states
            && states.len() != entities.len()
        {
            return fail(LAGCOMP_BAD_LENGTH, "states and entities differ in length");
        }
        if !self.same_batch(entities, states, bones.len()) {
            self.convert_batch(entities, states, bones.len())?;
        }
        let bones = bones_view(bones, &mut self.bones);
        let mut frame = self
            .history
            .begin_frame(Tick(tick), time)
            .map_err(record_failure)?;
        let result = frame.record_all(&self.batch, bones);
        frame.finish();
        self.used = true;
        let written = match self.recording.as_mut() {
            Some(writer) => write_frame(
                writer,
                &self.history,
                (tick, time),
                &self.batch,
                bones,
                result.is_err(),
            ),
            None => Ok(()),
        };
        if let Err(error) = written {
            self.record_line(|_| Err(error))?;
        }
        result.map_err(record_failure)
    }
}

/// Writes a recorded frame to the match recording: on a partly refused batch, only the
/// entities the history took (every transform valid, the first listing of each).
fn write_frame(
    writer: &mut RecordingWriter<BufWriter<File>>,
    history: &History,
    (tick, time): (u32, f64),
    batch: &[(EntityId, EntityState)],
    bones: &[BoneTransform],
    partial: bool,
) -> std::io::Result<()> {
    let mut lines: Vec<(EntityId, EntityState, &[BoneTransform])> = Vec::with_capacity(batch.len());
    let mut at = 0;
    for &(id, state) in batch {
        // The batch was checked before the frame began: every handle is active.
        let count = history
            .rig(id)
            .map_or(0, |rig| usize::from(rig.bone_count()));
        let own = &bones[at..at + count];
        at += count;
        let taken = !partial
            || (own.iter().all(|b| b.validate().is_ok())
                && !lines.iter().any(|&(seen, _, _)| seen == id));
        if taken {
            lines.push((id, state, own));
        }
    }
    writer.frame(Tick(tick), time, &lines)
}

/// Records one tick: `entity_count` entities, each with its state (or, when `states` is
/// null, alive, lag-compensated, layer 1) and its rig's bones, taken in order from `bones`
/// (entity-major: all of the first entity's bones in bone order, then the next's).
/// `tick` and `time` (server seconds) must increase from call to call.
///
/// Listing the same entities in the same order every tick is the fast path: the handles
/// are checked once and the per-entity work runs in one loop. An array of bones aligned
/// to 16 bytes is read in place.
///
/// # Errors
/// Nothing is recorded, and the history is unchanged, on `LAGCOMP_UNKNOWN_ENTITY` (an id
/// unknown, stale or despawned), `LAGCOMP_BAD_LENGTH` (`bone_count` is not the entities'
/// bone total), `LAGCOMP_OUT_OF_ORDER` (tick or time not increasing),
/// `LAGCOMP_NOT_FINITE` (time) or `LAGCOMP_INVALID_ARGUMENT` (unknown state flags).
/// An entity listed twice or with an invalid transform (`LAGCOMP_NOT_FINITE`,
/// `LAGCOMP_INVALID_ARGUMENT`: not finite, a rotation that is not unit length, a scale out
/// of range) is left out of this tick while every other entity is recorded, and the
/// first such problem is returned.
///
/// # Safety
/// `entities` points to `entity_count` ids; `states` is null or points to `entity_count`
/// states; `bones` points to `bone_count` transforms. Each may be null when its count
/// is 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_record_tick(
    history: *mut LagcompHistory,
    tick: u32,
    time: f64,
    entities: *const u64,
    states: *const LagcompEntityState,
    entity_count: usize,
    bones: *const LagcompBoneTransform,
    bone_count: usize,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (entities, bones) = unsafe {
            (
                slice("entities", entities, entity_count)?,
                slice("bones", bones, bone_count)?,
            )
        };
        let states = if states.is_null() {
            None
        } else {
            // SAFETY: the caller's contract.
            Some(unsafe { slice("states", states, entity_count) }?)
        };
        with_history(history, |state| {
            state.record_tick(tick, time, entities, states, bones)
        })
    })
}

/// The range of server times a query may rewind to now: `*out_oldest` (the later of the
/// window's edge and the oldest frame kept) to `*out_newest` (the newest frame).
///
/// # Errors
/// `LAGCOMP_REWIND` when nothing has been recorded yet.
///
/// # Safety
/// The out-pointers are null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_window(
    history: *mut LagcompHistory,
    out_oldest: *mut f64,
    out_newest: *mut f64,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (oldest, newest) = unsafe {
            (
                output("out_oldest", out_oldest)?,
                output("out_newest", out_newest)?,
            )
        };
        with_history(history, |state| {
            let Some((o, n)) = state.history.window() else {
                return fail(
                    crate::status::LAGCOMP_REWIND,
                    "no frames have been recorded",
                );
            };
            (*oldest, *newest) = (o, n);
            Ok(())
        })
    })
}

/// Starts recording the match into the file at `path` (created or truncated): every
/// spawn, despawn, static wall and tick of this history, and every registration, timing,
/// claim and verdict of validators bound to it, as JSON Lines that `lagcomp replay` and
/// `lagcomp_validate::recording` re-validate offline. Start it right after creating the
/// history, before anything else.
///
/// # Errors
/// `LAGCOMP_INVALID_STATE` when the history was already used (something spawned, added,
/// recorded, or a validator bound) or is already recording; `LAGCOMP_IO` when the file
/// cannot be created.
///
/// # Safety
/// `path` is null or a NUL-terminated UTF-8 path.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_start_match_recording(
    history: *mut LagcompHistory,
    path: *const std::ffi::c_char,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let path = unsafe { required_text("path", path) }?;
        with_history(history, |state| {
            if state.recording.is_some() {
                return fail(
                    LAGCOMP_INVALID_STATE,
                    "this history is already recording a match",
                );
            }
            if state.used {
                return fail(
                    LAGCOMP_INVALID_STATE,
                    "start the match recording before spawning, adding walls, recording or \
                     binding a validator",
                );
            }
            let file =
                File::create(path).map_err(|e| Failure::new(LAGCOMP_IO, format!("{path}: {e}")))?;
            let writer = RecordingWriter::new(BufWriter::new(file), state.history.config())
                .map_err(|e| Failure::new(LAGCOMP_IO, format!("{path}: {e}")))?;
            state.recording = Some(writer);
            Ok(())
        })
    })
}

fn close_recording(state: &mut HistoryState) -> Result<(), Failure> {
    match state.recording.take() {
        Some(writer) => writer
            .finish()
            .map(drop)
            .map_err(|e| Failure::new(LAGCOMP_IO, format!("finishing the match recording: {e}"))),
        None => Ok(()),
    }
}

/// Flushes and closes the match recording (freeing the history does too, but cannot
/// report a failed write as plainly).
///
/// # Errors
/// `LAGCOMP_INVALID_STATE` when no recording is open; `LAGCOMP_IO` when flushing fails.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_history_finish_match_recording(
    history: *mut LagcompHistory,
) -> LagcompStatus {
    guard(|| {
        with_history(history, |state| {
            if state.recording.is_none() {
                return fail(LAGCOMP_INVALID_STATE, "no match recording is open");
            }
            close_recording(state)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn bones_are_read_in_place_on_x86_64() {
        // glam's SSE2 `Quat` is 16-byte aligned, so `BoneTransform` is rotation, then
        // translation and scale: the layout `LagcompBoneTransform` spells out. If a
        // compiler lays it out otherwise, recording still works (by copying), but this
        // says the fast path was lost.
        const { assert!(SAME_BONE_LAYOUT) };
        let bones = [crate::types::c_bone(BoneTransform::IDENTITY); 4];
        let mut scratch = Vec::new();
        let aligned = bones.as_ptr().cast::<BoneTransform>().is_aligned();
        assert_eq!(
            bones_view(&bones, &mut scratch),
            [BoneTransform::IDENTITY; 4]
        );
        if aligned {
            assert!(scratch.is_empty(), "an aligned array was copied");
        }
    }
}
