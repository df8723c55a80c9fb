//! The per-entity body of recording and its end: an entity's bone pass into its rows,
//! then its frame record, newest frame and broadphase leaf (one at a time, or a planned
//! batch's all at once).

use glam::{Vec3, Vec3A};

use super::bone_pass::BonePassFn;
use super::{EntityFrame, EntityId, EntitySlot, EntityState, History, Lanes, Life, RecordError};
use crate::bvh::{FLAT_LANE_STEP, FrameLeaves, NodeBox};
use crate::math::{BoneTransform, padded_corners};
use crate::simd::{Isa, KernelBody};

/// Where a frame is being recorded: its sequence number, its ring slot, the ring's length
/// and where the slot's blocks start in the lanes, read once per frame.
#[derive(Debug, Clone, Copy)]
pub(super) struct FrameSlot {
    pub(super) seq: u64,
    pub(super) ring: usize,
    capacity: usize,
    /// `Lanes::row` of bone place 0 in this ring slot.
    pub(super) rows: usize,
    /// `Lanes::frame` of entity slot 0 in this ring slot.
    frames: usize,
}

impl FrameSlot {
    #[inline]
    pub(super) fn of(history: &History, seq: u64) -> Self {
        let ring = history.newest_ring;
        Self {
            seq,
            ring,
            capacity: history.capacity,
            rows: ring * history.lanes.row_stride,
            frames: ring * history.lanes.frame_stride,
        }
    }
}

/// How a record writes its broadphase leaf: `ANY_FORM` asks the leaves which form they are
/// in; a batch, which asks once per tick, passes `FLAT_FORM` or `TREE_FORM`.
pub(super) const ANY_FORM: u8 = 0;
pub(super) const FLAT_FORM: u8 = 1;
pub(super) const TREE_FORM: u8 = 2;

/// Records an active entity's slot (handle `id`) into the frame `at`, and its box into its
/// leaf of `tree` (laid out as `FORM` says): the body of both ways of recording, once the
/// handle is known to be good. The caller updates the lag-compensation list.
///
/// PERF: the leaf is written here rather than returned: a `Result<NodeBox, _>` lived on
/// the stack across the batch loop (its box shuffled into place byte by byte), about ten
/// instructions per entity.
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the borrowed parts of the history, the record, and its bone pass"
)]
pub(super) fn record_entity<const FORM: u8>(
    slot: &mut EntitySlot,
    lanes: &mut Lanes,
    leaves: &mut FrameLeaves<'_>,
    at: FrameSlot,
    (id, state): (EntityId, EntityState),
    bones: &[BoneTransform],
    bone_pass: impl BonePassFn,
    layout_epoch: &mut u64,
) -> Result<(), RecordError> {
    let FrameSlot {
        seq,
        ring,
        capacity,
        rows,
        frames: _,
    } = at;
    if slot.last_seq == seq {
        return Err(RecordError::AlreadyRecorded(id));
    }
    if bones.len() != slot.bone_count {
        return Err(RecordError::BoneCount {
            entity: id,
            expected: slot.bone_count as u16,
            got: bones.len(),
        });
    }
    debug_assert!(slot.life == Life::Active && slot.rig.is_some());
    // SAFETY: an active slot has a rig (`spawn` gives it one, only `free_slot` takes it,
    // and a freed slot is not active); both callers found the slot active.
    // PERF: the checked `expect` cost three instructions an entity.
    let rig = unsafe { slot.rig.as_deref().unwrap_unchecked() };
    let n = slot.bone_count;
    debug_assert!(n > 0 && rig.bone_reach_splat().len() == n);
    // SAFETY: a rig has at least one bone (`Rig::new` refuses none) and one splatted reach
    // per bone, and the slot's `bone_count` is its rig's.
    // PERF: the bone pass asserts both (four instructions an entity): said here, the
    // compiler drops the checks.
    let reach = unsafe {
        std::hint::assert_unchecked(n > 0);
        rig.bone_reach_splat().get_unchecked(..n)
    };
    let row = rows + slot.bones_at;
    debug_assert!(
        ring < capacity
            && rows == lanes.row(slot, ring) - slot.bones_at
            && slot.bones_at + n <= lanes.row_stride
            && capacity * lanes.row_stride < lanes.translations.len()
            && capacity * lanes.row_stride <= lanes.rotations.len()
    );
    // PERF: unchecked, because the checked slices cost about 20 instructions per entity
    // (overflow and length checks of both ranges, which the compiler cannot fold).
    // SAFETY: `rows` is `ring * row_stride` with `ring < capacity`, and an active slot's
    // places `bones_at..bones_at + n` are below `ranges.end() <= row_stride`, so the row
    // is inside ring slot `ring`'s block; the lanes hold `capacity` blocks, and the
    // translations one spare after them (`History::fit_lanes`, run by `begin_frame` before
    // any recorder exists; spawning needs the history the recorder borrows). The
    // translation row comes with the element after it, which the pass may write and puts
    // back.
    let (translations, rotations) = unsafe {
        (
            lanes.translations.get_unchecked_mut(row..row + n + 1),
            lanes.rotations.get_unchecked_mut(row..row + n),
        )
    };

    // One pass: copy each pose into the ring, grow the frame's bounds, and check the
    // transform with fast conservative tests (`bone_pass`). The ring slot being written
    // belongs to a frame that has aged out, and the frame record below is only stamped
    // once everything is valid, so a bad transform found at the end leaves nothing
    // visible.
    let pass = bone_pass(bones, reach, translations, rotations);
    let (lo, hi) = if pass.clean && slot.scales.is_empty() {
        (pass.lo, pass.hi)
    } else {
        let had_scales = !slot.scales.is_empty();
        let bounds = settle_unclean(slot, ring * n, capacity, id, bones, pass.clean)?;
        if !had_scales && !slot.scales.is_empty() {
            // A first scale lane: batch plans made before no longer hold.
            *layout_epoch += 1;
        }
        bounds
    };
    if slot.first_seq == 0 {
        slot.first_seq = seq;
    }
    // SAFETY: `id` is the handle of `slot`, an active slot, and `at` the frame being
    // recorded (`FrameSlot::of`, after `History::fit_lanes`).
    unsafe {
        let frames = frame_block(lanes, at);
        stamp::<FORM>(
            slot,
            frames,
            leaves,
            at,
            (id.index() as usize, state),
            [lo, hi],
        );
    }
    Ok(())
}

/// The frame lane's block of the frame being recorded (`at`): one record per entity slot.
///
/// # Safety
/// `at` is the frame being recorded in the history that owns `lanes` (`FrameSlot::of`,
/// after `History::fit_lanes`).
#[inline(always)]
unsafe fn frame_block(lanes: &mut Lanes, at: FrameSlot) -> &mut [EntityFrame] {
    debug_assert!(at.frames + lanes.frame_stride <= lanes.frames.len());
    // SAFETY: `frames` is `ring * frame_stride` with `ring < capacity`, and the lane holds
    // `capacity` blocks of `frame_stride` records.
    // PERF: the checked slice cost three instructions an entity.
    unsafe {
        lanes
            .frames
            .get_unchecked_mut(at.frames..at.frames + lanes.frame_stride)
    }
}

/// The end of a record once the bones are stored and found valid: the entity's frame
/// record (its padded bounds and state), its newest frame, and its broadphase leaf.
///
/// # Safety
/// `slot` is active slot `index`, `at` the frame being recorded, and `frames` its block
/// ([`frame_block`]).
#[inline(always)]
unsafe fn stamp<const FORM: u8>(
    slot: &mut EntitySlot,
    frames: &mut [EntityFrame],
    leaves: &mut FrameLeaves<'_>,
    at: FrameSlot,
    (index, state): (usize, EntityState),
    [lo, hi]: [Vec3A; 2],
) {
    let (min, max) = padded_corners(lo, hi);
    debug_assert!(index < frames.len());
    // SAFETY: `index` (this slot's) is below the number of slots `<= frame_stride`
    // (`History::fit_lanes`; slots are only added by spawning), the block's length.
    // PERF: the checked index cost three instructions an entity.
    unsafe { *frames.get_unchecked_mut(index) = frame_record(at, state, min, max) };
    slot.last_seq = at.seq;
    set_leaf::<FORM>(leaves, index, min, max);
}

/// [`stamp`] but for storing the frame record, which is returned (for
/// [`stamp_dense_streaming`], which streams the records): the entity's newest frame and
/// leaf are set.
#[inline(always)]
fn stamp_leaf<const FORM: u8>(
    slot: &mut EntitySlot,
    leaves: &mut FrameLeaves<'_>,
    at: FrameSlot,
    (index, state): (usize, EntityState),
    [lo, hi]: [Vec3A; 2],
) -> EntityFrame {
    let (min, max) = padded_corners(lo, hi);
    slot.last_seq = at.seq;
    set_leaf::<FORM>(leaves, index, min, max);
    frame_record(at, state, min, max)
}

/// An entity's frame record: its state and padded bounds in the frame `at`.
#[inline(always)]
fn frame_record(at: FrameSlot, state: EntityState, min: Vec3A, max: Vec3A) -> EntityFrame {
    EntityFrame {
        seq: at.seq as u32,
        layers: state.layers,
        user: state.user,
        flags: state.to_flags(),
        bounds_min: Vec3::from(min).to_array(),
        bounds_max: Vec3::from(max).to_array(),
    }
}

/// Sets the leaf of `index` in the frame being recorded to the padded bounds `min..max`.
/// The frame was cleared and the entity not recorded in it yet: its leaf is empty, and
/// growing it is setting it.
#[inline(always)]
fn set_leaf<const FORM: u8>(leaves: &mut FrameLeaves<'_>, index: usize, min: Vec3A, max: Vec3A) {
    let leaf = NodeBox::from_corners(min, max);
    match FORM {
        FLAT_FORM => leaves.set_in::<true>(index, leaf),
        TREE_FORM => leaves.set_in::<false>(index, leaf),
        _ => leaves.set(index, leaf),
    }
}

/// The rare end of a record, out of the recorder's loop: the fast checks failed (`!clean`:
/// find which bone and why, with the precise checks) or the entity has a scale lane (store
/// the scales). Returns the bounds: each bone by its reach times its largest scale.
///
/// A rotation whose norm is within rounding of the tolerance can fail the fast check and
/// pass the precise one: it is accepted, as it always was.
///
/// The bounds are computed again here rather than passed from the bone pass (so that the
/// pass's result need not be kept in memory for this call): for a clean pass (unit scales)
/// they are the same minimums and maximums of the same sums, but for the sign of a zero,
/// which the padding erases (see `bone_pass`).
#[cold]
#[inline(never)]
fn settle_unclean(
    slot: &mut EntitySlot,
    base: usize,
    capacity: usize,
    id: EntityId,
    bones: &[BoneTransform],
    clean: bool,
) -> Result<(Vec3A, Vec3A), RecordError> {
    let mut unit_scale = true;
    if !clean {
        for (bone, transform) in bones.iter().enumerate() {
            transform
                .validate()
                .map_err(|error| RecordError::Transform {
                    entity: id,
                    bone: bone as u16,
                    error,
                })?;
        }
        unit_scale = bones.iter().all(|b| b.scale == Vec3::ONE);
    }
    let reach = slot
        .rig
        .as_deref()
        .expect("active slots have a rig")
        .bone_reach();
    let mut lo = Vec3A::INFINITY;
    let mut hi = Vec3A::NEG_INFINITY;
    for (transform, reach) in bones.iter().zip(reach) {
        let t = Vec3A::from(transform.translation);
        let r = Vec3A::splat(reach * transform.scale.max_element());
        lo = lo.min(t - r);
        hi = hi.max(t + r);
    }
    if !unit_scale && slot.scales.is_empty() {
        // First non-unit scale for this entity: give it a scale lane. Earlier frames
        // were all unit scale, which is what the lane starts with.
        slot.scales.resize(capacity * slot.bone_count, [1.0; 3]);
    }
    if !slot.scales.is_empty() {
        let scales = &mut slot.scales[base..base + slot.bone_count];
        for (stored, transform) in scales.iter_mut().zip(bones) {
            *stored = transform.scale.to_array();
        }
    }
    Ok((lo, hi))
}

/// The second pass of a planned batch: every entity's frame record, newest frame, leaf
/// and lag-compensation mark, from the bounds its bone pass found.
///
/// PERF: where eight entities of a dense plan are the eight lanes of one block of the
/// flat form, in order (the common case: a flat tree over a batch in spawn order), their
/// leaves are written as one block ([`Isa::leaf_block`]: on AVX2, the block's six planes
/// as six 32-byte stores instead of 48 4-byte stores and their address checks); the
/// lag-compensation marks are made after the loop, so that no call sits in it. Without
/// the leaf stores at all a 200x20 tick was about 4.5 % faster.
///
/// # Safety
/// Every handle of `entities` names an active slot, and `at` is the frame being recorded
/// (as for [`stamp`]).
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the kernels, the borrowed parts of the history and the batch, and the plan's density"
)]
pub(super) unsafe fn stamp_batch<K: Isa, const FORM: u8>(
    isa: K,
    slots: &mut [EntitySlot],
    lanes: &mut Lanes,
    leaves: &mut FrameLeaves<'_>,
    uncompensated: &mut Vec<(u32, u64)>,
    at: FrameSlot,
    entities: &[(EntityId, EntityState)],
    bounds: &[[Vec3A; 2]],
    dense: Option<usize>,
) {
    const LANES: usize = FLAT_LANE_STEP;
    // SAFETY: the caller's contract: `at` is the frame being recorded.
    let frames = unsafe { frame_block(lanes, at) };
    debug_assert!(bounds.len() == entities.len());
    let mut uncompensated_any = false;
    // The frame record and newest frame of the `k`-th entity, padded by `margin` (or as
    // `padded_corners` pads, if none); its index and padded bounds back.
    let mut stamp_record = |k: usize, margin: Option<Vec3A>| {
        // SAFETY: `k` is below `entities.len() == bounds.len()`, and the caller's contract:
        // the handle names an active slot, whose index is below the frame block's length.
        unsafe {
            let (id, state) = *entities.get_unchecked(k);
            let [lo, hi] = *bounds.get_unchecked(k);
            let index = id.index() as usize;
            debug_assert!(index < slots.len() && slots[index].life == Life::Active);
            let (min, max) = match margin {
                Some(margin) => (lo - margin, hi + margin),
                None => padded_corners(lo, hi),
            };
            *frames.get_unchecked_mut(index) = frame_record(at, state, min, max);
            slots.get_unchecked_mut(index).last_seq = at.seq;
            uncompensated_any |= !state.lag_compensated;
            (index, min, max)
        }
    };
    let mut k = 0;
    if FORM == FLAT_FORM {
        while k + LANES <= entities.len() {
            // Past the first eight entities that are not a block's lanes, the rest go one
            // by one below: the flat form gives lanes to the live slots in slot order
            // (`rebuild_tree`; a spawn into a flat form always rebuilds it), so a dense
            // plan's entities hold consecutive lanes and one that starts mid-block never
            // lines up later.
            let Some(block) = dense.and_then(|first| leaves.flat_block(first + k)) else {
                break;
            };
            let eight: &[[Vec3A; 2]; LANES] = bounds[k..k + LANES]
                .try_into()
                .expect("k + LANES <= entities.len() == bounds.len()");
            isa.leaf_block(eight, block, |j, margin| {
                let (_, min, max) = stamp_record(k + j, margin);
                (min, max)
            });
            k += LANES;
        }
    }
    while k < entities.len() {
        let (index, min, max) = stamp_record(k, None);
        set_leaf::<FORM>(leaves, index, min, max);
        k += 1;
    }
    if uncompensated_any {
        for &(id, state) in entities {
            if !state.lag_compensated {
                mark_uncompensated(uncompensated, id.index() as usize, at.seq);
            }
        }
    }
}

/// Frame records staged before [`stamp_dense_streaming`] streams them out: 576 bytes, a
/// multiple of 32 (so that every chunk after the first starts as aligned as the first).
const STAGED_RECORDS: usize = 16;

/// `EntityFrame` is laid out as [`record_words`] spells it: nine 32-bit words, `user` and
/// `flags` sharing the third (its fourth byte padding). Its fields are `repr(Rust)`, so
/// this is checked, not promised: with another layout the records take plain stores.
pub(super) const RECORD_WORDS_LAYOUT: bool = {
    use std::mem::offset_of;
    offset_of!(EntityFrame, seq) == 0
        && offset_of!(EntityFrame, layers) == 4
        && offset_of!(EntityFrame, user) == 8
        && offset_of!(EntityFrame, flags) == 10
        && offset_of!(EntityFrame, bounds_min) == 12
        && offset_of!(EntityFrame, bounds_max) == 24
        && size_of::<EntityFrame>() == 36
        && cfg!(target_endian = "little")
};

/// A frame record as the nine words of its bytes (see [`RECORD_WORDS_LAYOUT`]), the
/// padding byte zero: staged so, every byte copied is initialised.
#[inline(always)]
fn record_words(record: &EntityFrame) -> [u32; 9] {
    [
        record.seq,
        record.layers,
        u32::from(record.user) | (u32::from(record.flags) << 16),
        record.bounds_min[0].to_bits(),
        record.bounds_min[1].to_bits(),
        record.bounds_min[2].to_bits(),
        record.bounds_max[0].to_bits(),
        record.bounds_max[1].to_bits(),
        record.bounds_max[2].to_bits(),
    ]
}

/// [`stamp_batch`] of a batch whose entities are the consecutive slots `first..first +
/// entities.len()` in order (a dense plan), with the frame records streamed: each chunk of
/// [`STAGED_RECORDS`] records is written to a buffer on the stack and copied into the
/// frame lane with [`Isa::stream_copy`] (non-temporal stores where the kernels have them,
/// 32 bytes at a time when the records start 32-byte aligned, else 16; the bytes before
/// the block's first 16-byte boundary and after its last with plain stores). The caller
/// fences.
///
/// Run through [`Kernels::run`](crate::simd::Kernels::run), so that it is compiled out of
/// line for its kernels.
///
/// PERF: a frame lane larger than the caches is rewritten once per window, so a plain
/// store first reads its line back. At 5000x20, `record_all` 3-8 µs faster a tick
/// (118.3 -> 114.1 µs in the medians of pinned runs alternated with plain stores) for
/// about 9 instructions an entity more (callgrind); without writing the records at all it
/// was about 11 µs faster. `movnti` per 32-bit word instead of the staging was 22
/// instructions an entity more (one `lea` per store: the streaming intrinsics are inline
/// assembly) and about 4 µs faster. Out of line, so that the recorder's planned path for
/// smaller histories, which never streams, is compiled as before: inlined beside it, this
/// path cost 64x16 about 450 instructions a tick (callgrind).
pub(super) struct StampDenseStreaming<'a, 'l> {
    pub(super) slots: &'a mut [EntitySlot],
    pub(super) lanes: &'a mut Lanes,
    pub(super) leaves: &'a mut FrameLeaves<'l>,
    pub(super) uncompensated: &'a mut Vec<(u32, u64)>,
    pub(super) at: FrameSlot,
    pub(super) first: usize,
    pub(super) entities: &'a [(EntityId, EntityState)],
    pub(super) bounds: &'a [[Vec3A; 2]],
    /// Proof that every handle of `entities` names an active slot, the `k`-th slot
    /// `first + k`, that `at` is the frame being recorded, and that
    /// [`RECORD_WORDS_LAYOUT`] holds.
    pub(super) _holds: DenseBatch,
}

/// Made only by [`DenseBatch::new`]: see [`StampDenseStreaming::_holds`].
#[derive(Debug, Clone, Copy)]
pub(super) struct DenseBatch(());

impl DenseBatch {
    /// # Safety
    /// As [`StampDenseStreaming::_holds`] says.
    pub(super) unsafe fn new() -> Self {
        Self(())
    }
}

impl KernelBody for StampDenseStreaming<'_, '_> {
    type Output = ();

    // Inlined into the kernels' build (`Kernels::run`), whose instruction set it needs.
    #[inline(always)]
    fn run<K: Isa>(self, isa: K) {
        let Self {
            slots,
            lanes,
            leaves,
            uncompensated,
            at,
            first,
            entities,
            bounds,
            _holds,
        } = self;
        // SAFETY: `_holds`.
        unsafe {
            if leaves.is_flat() {
                stamp_dense_streaming::<K, FLAT_FORM>(
                    isa,
                    slots,
                    lanes,
                    leaves,
                    uncompensated,
                    at,
                    first,
                    entities,
                    bounds,
                );
            } else {
                stamp_dense_streaming::<K, TREE_FORM>(
                    isa,
                    slots,
                    lanes,
                    leaves,
                    uncompensated,
                    at,
                    first,
                    entities,
                    bounds,
                );
            }
        }
    }
}

/// [`StampDenseStreaming`] for leaves in the form `FORM`.
///
/// # Safety
/// As [`StampDenseStreaming::_holds`].
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the kernels, the borrowed parts of the history and the batch, as for `stamp_batch`"
)]
unsafe fn stamp_dense_streaming<K: Isa, const FORM: u8>(
    isa: K,
    slots: &mut [EntitySlot],
    lanes: &mut Lanes,
    leaves: &mut FrameLeaves<'_>,
    uncompensated: &mut Vec<(u32, u64)>,
    at: FrameSlot,
    first: usize,
    entities: &[(EntityId, EntityState)],
    bounds: &[[Vec3A; 2]],
) {
    const CHUNK_BYTES: usize = STAGED_RECORDS * size_of::<EntityFrame>();
    debug_assert!(first + entities.len() <= slots.len());
    // SAFETY: the caller's contract: `at` is the frame being recorded, and slots `first..
    // first + entities.len()` exist, so their records are in its block.
    let out = unsafe { frame_block(lanes, at).as_mut_ptr().add(first) }.cast::<u8>();
    // Bytes before the first 16-byte boundary of the records (the same in every chunk).
    let head = out.align_offset(16).min(CHUNK_BYTES);
    // Every chunk starts 32-byte aligned when the first does (576 is a multiple of 32).
    let wide = out.align_offset(32) == 0;
    // Nine words a record and one spare at the end (see below); every word initialised.
    let mut staged = [0_u32; 9 * STAGED_RECORDS + 1];
    for (c, (entities, bounds)) in entities
        .chunks(STAGED_RECORDS)
        .zip(bounds.chunks(STAGED_RECORDS))
        .enumerate()
    {
        let base = c * STAGED_RECORDS;
        for (j, (&(id, state), &bounds)) in entities.iter().zip(bounds).enumerate() {
            let index = first + base + j;
            debug_assert!(id.index() as usize == index && slots[index].life == Life::Active);
            // SAFETY: the caller's contract: `index` is an active slot.
            let slot = unsafe { slots.get_unchecked_mut(index) };
            let record = stamp_leaf::<FORM>(slot, leaves, at, (index, state), bounds);
            // SAFETY: words `9j..9j + 10` are inside `staged` (`j < STAGED_RECORDS`).
            // The record's words in order, the corners as whole stores where the kernels
            // have them: each corner's fourth lane lands on the word after it, which the
            // next store writes (the spare word after the last record takes the last).
            unsafe {
                let words = staged.as_mut_ptr().add(9 * j);
                let [seq, layers, user_flags, ..] = record_words(&record);
                words.write(seq);
                words.add(1).write(layers);
                words.add(2).write(user_flags);
                let (min, max) = (
                    Vec3A::from(record.bounds_min),
                    Vec3A::from(record.bounds_max),
                );
                isa.store_corner(words.add(3).cast(), min);
                isa.store_corner(words.add(6).cast(), max);
            }
            if !state.lag_compensated {
                mark_uncompensated(uncompensated, index, at.seq);
            }
        }
        let bytes = entities.len() * size_of::<EntityFrame>();
        // SAFETY: `out + base` holds this chunk's `bytes` (the records of its slots, in
        // the block); `staged` as many; `head` is the distance to the first 16-byte
        // boundary of every chunk, and with `wide` each chunk starts 32-byte aligned.
        unsafe {
            let dst = out.add(base * size_of::<EntityFrame>());
            isa.stream_copy::<CHUNK_BYTES>(dst, staged.as_ptr().cast(), bytes, head, wide);
        }
    }
}

/// Keeps the first error of a batch.
#[cold]
#[inline(never)]
pub(super) fn keep_first(first: &mut Option<RecordError>, error: RecordError) {
    first.get_or_insert(error);
}

/// Notes that entity `index` has lag compensation off in frame `seq`.
#[cold]
#[inline(never)]
pub(super) fn mark_uncompensated(list: &mut Vec<(u32, u64)>, index: usize, seq: u64) {
    match list.iter_mut().find(|(i, _)| *i as usize == index) {
        Some(entry) => entry.1 = seq,
        None => list.push((index as u32, seq)),
    }
}
