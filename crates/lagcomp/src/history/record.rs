//! Writing one tick into the history.

use std::sync::Arc;

use glam::{Vec3, Vec3A};

use super::bone_pass::{BonePassFn, Kernel};
use super::{
    EntityFrame, EntityId, EntitySlot, EntityState, FrameMeta, History, Lanes, Life, RecordError,
};
use crate::bvh::{FrameLeaves, NodeBox};
use crate::math::{BoneTransform, padded_corners};
use crate::time::Tick;

/// Server times beyond this many seconds are treated as corrupt.
const MAX_TIME: f64 = 1.0e12;

impl History {
    /// Starts recording the frame of `tick` at server `time`. Record each entity into the
    /// returned [`FrameRecorder`]; the frame is complete when it is dropped or
    /// [`FrameRecorder::finish`]ed (do not `mem::forget` it: the broadphase is refitted
    /// then). Entities not recorded are absent from this frame.
    ///
    /// # Errors
    /// [`RecordError`] if the time is not finite, or the tick or time does not increase.
    /// Nothing is changed on error.
    pub fn begin_frame(&mut self, tick: Tick, time: f64) -> Result<FrameRecorder<'_>, RecordError> {
        if !time.is_finite() || time.abs() > MAX_TIME {
            return Err(RecordError::InvalidTime(time));
        }
        if self.newest_seq != 0 {
            let newest = *self.meta(self.newest_seq);
            if tick <= newest.tick {
                return Err(RecordError::TickNotIncreasing {
                    newest: newest.tick,
                    got: tick,
                });
            }
            if time <= newest.time {
                return Err(RecordError::TimeNotIncreasing {
                    newest: newest.time,
                    got: time,
                });
            }
        }
        let seq = self.newest_seq + 1;
        self.newest_seq = seq;
        self.newest_ring = if self.newest_ring + 1 == self.capacity {
            0
        } else {
            self.newest_ring + 1
        };
        let ring = self.newest_ring;
        self.frames[ring] = FrameMeta { seq, tick, time };
        // The slot held the frame that just aged out; records grow its leaves from empty.
        self.tree.clear_frame(ring);
        self.retire_aged_out();
        self.fit_lanes();
        Ok(FrameRecorder {
            history: self,
            seq,
            fresh: true,
        })
    }

    /// Frees despawned slots whose newest frame is no longer in the ring, and forgets
    /// lag-compensation-off marks that have aged out.
    fn retire_aged_out(&mut self) {
        let oldest = self.oldest_seq();
        let mut i = 0;
        while i < self.retiring.len() {
            let index = self.retiring[i] as usize;
            if self.slots[index].last_seq < oldest {
                self.retiring.swap_remove(i);
                self.free_slot(index);
            } else {
                i += 1;
            }
        }
        self.uncompensated.retain(|&(_, seq)| seq >= oldest);
    }

    /// Brings the broadphase up to date with the frame just recorded.
    fn end_frame(&mut self) {
        self.frames_since_build += 1;
        // PERF: a flat broadphase is rebuilt only when entities come: rebuilding it
        // once a window gave the same boxes bit for bit (test
        // `a_flat_broadphase_rebuilt_once_a_window_would_change_nothing`) for about 2,400
        // instructions a tick at 64x16 (a fifth of the tick outside the bone groups).
        let rebuild = (self.frames_since_build >= self.capacity && !self.tree.keeps_its_shape())
            || !self.insert_spawned();
        self.spawned.clear();
        if rebuild {
            self.rebuild_tree();
        } else {
            // The leaves were grown as entities were recorded.
            let newest = self.newest_seq;
            let previous = (newest > self.oldest_seq()).then(|| self.ring(newest - 1));
            self.tree.finish_frame(self.ring(newest), previous);
        }
    }

    /// Places the entities spawned since the last frame in the current tree, each beside
    /// its nearest neighbour (`TemporalBvh::insert`); `false` if one could not be (the
    /// flat form, or no spare node left), and then the tree must be rebuilt, which places
    /// them all. Entities despawned before their first frame are skipped.
    fn insert_spawned(&mut self) -> bool {
        let (seq, ring) = (self.newest_seq, self.newest_ring);
        for k in 0..self.spawned.len() {
            let index = self.spawned[k] as usize;
            if self.slots[index].life == Life::Free {
                continue;
            }
            let (centroid, node_box) = if self.recorded_at(index, seq, ring) {
                let frame = self.entity_frame(index, ring);
                (
                    frame.bounds().center(),
                    NodeBox::new(frame.bounds_min, frame.bounds_max),
                )
            } else {
                (Vec3::ZERO, NodeBox::EMPTY)
            };
            if !self.tree.insert(index as u32, centroid, ring, node_box) {
                return false;
            }
        }
        true
    }

    /// A new tree over the active entities, placed where they are now (once a window,
    /// and when a spawned entity could not be inserted); completes the newest frame.
    fn rebuild_tree(&mut self) {
        let newest = self.newest_seq;
        let oldest = self.oldest_seq();
        // New topology (entities came or went, or everyone has moved a whole window since
        // the last build): entities placed where they are now.
        // PERF: versioned, not the whole ring. Frames already recorded keep the tree they
        // were recorded under, which answers for them until they age out; the new tree
        // gets boxes only for the frames from `from` on. Refilling and refitting every
        // frame of the ring was 1.9 of a 5,000-entity rebuild's 2.5 ms (BENCHMARKS.md,
        // Record, seventh round).
        let from = if self.tree_from > oldest {
            // The tree before the current one still answers for frames before
            // `tree_from`: keep it, and give the current tree's frames the new shape.
            self.tree_from
        } else {
            // The current tree holds every frame in the ring: it becomes the older tree,
            // complete up to the frame before the newest (whose span it widened last
            // tick). The new tree starts one frame earlier than the newest so that a
            // query between those two (one span) finds both in one tree, entities
            // spawned this tick included.
            std::mem::swap(&mut self.tree, &mut self.old_tree);
            newest.saturating_sub(1).max(oldest)
        };
        let mut tree = std::mem::take(&mut self.tree);
        let slots = &self.slots;
        tree.reshape(
            self.capacity,
            (0..slots.len() as u32).filter(|&i| slots[i as usize].life != Life::Free),
            |i| {
                let slot = &slots[i as usize];
                if slot.last_seq >= oldest {
                    let b = self
                        .entity_frame(i as usize, self.ring(slot.last_seq))
                        .bounds();
                    b.center()
                } else {
                    Vec3::ZERO
                }
            },
        );
        // Leaves frame by frame, each frame's records in slot order (one sequential read of
        // the frame lane; each frame's leaves stay in cache while it is filled), then each
        // frame's internal nodes and spans, oldest first.
        // PERF: entity by entity, the refill read one record per ring slot per entity (as
        // many streams as ring slots, a frame lane's block apart) and scattered its writes
        // over every frame's nodes: see BENCHMARKS.md, Record, sixth round.
        let stride = self.lanes.frame_stride;
        debug_assert!(slots.len() <= stride);
        for seq in from..=newest {
            let ring = self.ring(seq);
            // Every box of the frame from empty: the new shape's unused lanes, and the
            // leaves of entities not recorded in it, stay so.
            tree.clear_frame(ring);
            let mut leaves = tree.frame_leaves(ring);
            let block = &self.lanes.frames[ring * stride..][..slots.len()];
            for ((index, slot), frame) in slots.iter().enumerate().zip(block) {
                if slot.life == Life::Free {
                    continue;
                }
                // `recorded_at`.
                let recorded = seq <= slot.last_seq && frame.seq == seq as u32;
                // Both computed, one kept: a select rather than branches.
                let recorded_box = NodeBox::new(frame.bounds_min, frame.bounds_max);
                leaves.refill(
                    index,
                    if recorded {
                        recorded_box
                    } else {
                        NodeBox::EMPTY
                    },
                );
            }
        }
        for seq in from..=newest {
            let previous = (seq > from).then(|| self.ring(seq - 1));
            tree.finish_frame(self.ring(seq), previous);
        }
        // The next build goes into the older tree's memory (or this one's): sized now, so
        // that rebuilding at a steady size allocates nothing.
        self.old_tree.reserve_like(&tree);
        self.tree = tree;
        self.tree_from = from;
        self.frames_since_build = 0;
    }
}

/// The last batch [`FrameRecorder::record_all`] recorded whole, kept so that the same batch
/// at the next tick skips the per-entity handle checks and runs the bone pass over the
/// batch's rows: a game server records every entity every tick, in the same order.
///
/// A plan is made only from a batch in which every entity was recorded, whose rigs all
/// have a multiple of four bones, and none of whose entities has a scale lane; it holds
/// while `History::layout_epoch` does not change (nothing spawned, despawned, freed, laid
/// out again, or given a scale lane) and is used only in a frame nothing was recorded
/// into yet. Its handles are then active and distinct, and their rows where the plan
/// says.
#[derive(Debug, Clone, Default)]
pub(super) struct BatchPlan {
    /// `History::layout_epoch` when it was made, or last found impossible.
    epoch: u64,
    /// Whether the fields below are a plan (`false`: none, or the last batch made under
    /// `epoch` could not have one; then none is tried again until the epoch changes).
    ready: bool,
    /// The batch's handles, in order.
    ids: Vec<EntityId>,
    /// The batch's transforms, all entities together.
    bones: usize,
    /// Consecutive entities of one rig whose rows follow one another, in batch order.
    segments: Vec<Segment>,
    /// Each entity's unpadded bounds, from the bone pass to the frame records.
    bounds: Vec<[Vec3A; 2]>,
    /// `Some(first)` if the batch's entities are the slots `first, first + 1, ...` in
    /// order: their frame records are then one run of the frame lane (see
    /// `stamp_dense_streaming`).
    dense: Option<usize>,
    /// Tests: batches recorded by the plan, and batches it gave back to the general way.
    #[cfg(test)]
    used: (usize, usize),
}

/// A run of a batch plan's entities: consecutive in the batch, one rig, rows back to back.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// How many entities.
    count: u32,
    /// Groups of four bones per entity (the rig's bone count over four).
    groups: u32,
    /// Bone place of the first entity's row (`EntitySlot::bones_at`).
    place: u32,
    /// The first entity's slot (for the rig).
    slot: u32,
    /// Whether the translation after the segment's rows must be put back after the pass
    /// (which spills onto it): it does not start the next segment.
    restore: bool,
}

impl History {
    /// Whether the batch plan holds and is for this batch: the same handles in the same
    /// order, and the same bone total.
    ///
    /// PERF: one comparison per handle, where `check_batch` looks each slot up (about 15
    /// instructions an entity).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline]
    fn plan_fits(&self, entities: &[(EntityId, EntityState)], bones: usize) -> bool {
        let plan = &self.plan;
        plan.ready
            && plan.epoch == self.layout_epoch
            && plan.bones == bones
            && plan.ids.len() == entities.len()
            && entities
                .iter()
                .zip(&plan.ids)
                .fold(0, |differ, ((id, _), planned)| {
                    differ | (id.to_bits() ^ planned.to_bits())
                })
                == 0
    }

    /// Makes the batch plan from a batch just recorded whole (every entity of it recorded
    /// in the newest frame), if the batch can have one (see [`BatchPlan`]); otherwise
    /// notes that none is to be tried until the epoch changes.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[cold]
    #[inline(never)]
    fn make_plan(&mut self, entities: &[(EntityId, EntityState)], bones: usize) {
        if !self.plan.ready && self.plan.epoch == self.layout_epoch {
            return;
        }
        // Taken out and put back (its vectors keep their room).
        let mut plan = std::mem::take(&mut self.plan);
        plan.epoch = self.layout_epoch;
        plan.ready = self.plan_batch(&mut plan, entities, bones);
        self.plan = plan;
    }

    /// The plan of [`History::make_plan`] into `plan`: `false` if the batch cannot have one.
    fn plan_batch(
        &self,
        plan: &mut BatchPlan,
        entities: &[(EntityId, EntityState)],
        bones: usize,
    ) -> bool {
        plan.ids.clear();
        plan.segments.clear();
        if entities.is_empty() {
            return false;
        }
        for (k, &(id, _)) in entities.iter().enumerate() {
            let Ok(index) = self.active_index(id) else {
                return false;
            };
            let slot = &self.slots[index];
            let n = slot.bone_count;
            let Some(rig) = slot.rig.as_ref() else {
                return false;
            };
            if !n.is_multiple_of(4) || !slot.scales.is_empty() || slot.last_seq != self.newest_seq {
                return false;
            }
            let extends = plan.segments.last().is_some_and(|segment| {
                let first = &self.slots[segment.slot as usize];
                first.rig.as_ref().is_some_and(|r| Arc::ptr_eq(r, rig))
                    && segment.place as usize + segment.count as usize * n == slot.bones_at
            });
            match plan.segments.last_mut() {
                Some(segment) if extends => segment.count += 1,
                _ => plan.segments.push(Segment {
                    count: 1,
                    groups: (n / 4) as u32,
                    place: slot.bones_at as u32,
                    slot: index as u32,
                    restore: true,
                }),
            }
            debug_assert_eq!(plan.ids.len(), k);
            plan.ids.push(id);
        }
        for k in 1..plan.segments.len() {
            let (before, next) = (plan.segments[k - 1], plan.segments[k]);
            let end = before.place + before.count * before.groups * 4;
            plan.segments[k - 1].restore = next.place != end;
        }
        plan.bones = bones;
        plan.bounds.resize(entities.len(), [Vec3A::ZERO; 2]);
        let first = entities[0].0.index() as usize;
        plan.dense = entities
            .iter()
            .enumerate()
            .all(|(k, (id, _))| id.index() as usize == first + k)
            .then_some(first);
        true
    }
}

/// Where a frame is being recorded: its sequence number, its ring slot, the ring's length
/// and where the slot's blocks start in the lanes, read once per frame.
#[derive(Debug, Clone, Copy)]
struct FrameSlot {
    seq: u64,
    ring: usize,
    capacity: usize,
    /// `Lanes::row` of bone place 0 in this ring slot.
    rows: usize,
    /// `Lanes::frame` of entity slot 0 in this ring slot.
    frames: usize,
}

impl FrameSlot {
    #[inline]
    fn of(history: &History, seq: u64) -> Self {
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
const ANY_FORM: u8 = 0;
const FLAT_FORM: u8 = 1;
const TREE_FORM: u8 = 2;

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
fn record_entity<const FORM: u8>(
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
#[cfg(target_arch = "x86_64")]
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
/// leaves are written as the block's six planes, one 32-byte store each, instead of 48
/// 4-byte stores and their address checks; the lag-compensation marks are made after the
/// loop, so that no call sits in it. The pass ran at about six instructions a cycle (62
/// an entity at 200x20); the block form is about 50 an entity (AVX-512 build, static
/// count; callgrind, AVX2 build: -1.3 to -1.5 an entity). Funnel `FUNNEL_RECORD=1` on
/// the stop-19 machine, three sets of 8 alternated pinned pairs: 200x20 -1.3 to -3.4 %
/// at the minimum, -1.9 to -3.9 % at the median; 64x16 about -1.5 %. Without the leaf
/// stores at all the tick was about 4.5 % faster. Such a block's padding is computed for
/// its eight entities at once, from their unpadded bounds transposed into planes: callgrind
/// (AVX2 build) -9.8 instructions an entity at 200x20; in wall time not measurable (three
/// sets of 8-10 pairs, minima -0.3 to +1.8 %, medians 0 to -2.9 %). BENCHMARKS.md,
/// Record, twelfth round.
///
/// # Safety
/// Every handle of `entities` names an active slot, and `at` is the frame being recorded
/// (as for [`stamp`]); the CPU supports AVX2 and the caller is compiled with it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the borrowed parts of the history and the batch, and the plan's density"
)]
unsafe fn stamp_batch<const FORM: u8>(
    slots: &mut [EntitySlot],
    lanes: &mut Lanes,
    leaves: &mut FrameLeaves<'_>,
    uncompensated: &mut Vec<(u32, u64)>,
    at: FrameSlot,
    entities: &[(EntityId, EntityState)],
    bounds: &[[Vec3A; 2]],
    dense: Option<usize>,
) {
    use crate::math::{PADDING_BASE, PADDING_SLOPE};
    use std::arch::x86_64::{
        __m128, _mm256_add_ps, _mm256_andnot_ps, _mm256_castps256_ps128, _mm256_max_ps,
        _mm256_mul_ps, _mm256_permutevar8x32_ps, _mm256_set1_epi32, _mm256_set1_ps,
        _mm256_storeu_ps, _mm256_sub_ps, _mm256_xor_ps,
    };
    const LANES: usize = 8;
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
            // SAFETY: `k + LANES <= entities.len() == bounds.len()`; the caller's
            // contract gives AVX2; the six stores are the block's six planes of eight
            // floats (`flat_block`).
            unsafe {
                let corner = |c: usize| {
                    std::array::from_fn(|j| __m128::from(bounds.get_unchecked(k + j)[c]))
                };
                let [lo_x, lo_y, lo_z] = x_y_z_planes(corner(0));
                let [hi_x, hi_y, hi_z] = x_y_z_planes(corner(1));
                // `padded_corners` for the eight at once: the same maximums of magnitudes
                // (in any order: they are neither NaN nor of either zero's sign) and the
                // same product and sum.
                let sign = _mm256_set1_ps(-0.0);
                let abs = |v| _mm256_andnot_ps(sign, v);
                let magnitude = _mm256_max_ps(
                    _mm256_max_ps(_mm256_max_ps(abs(lo_x), abs(lo_y)), abs(lo_z)),
                    _mm256_max_ps(_mm256_max_ps(abs(hi_x), abs(hi_y)), abs(hi_z)),
                );
                let margin = _mm256_add_ps(
                    _mm256_set1_ps(PADDING_BASE),
                    _mm256_mul_ps(magnitude, _mm256_set1_ps(PADDING_SLOPE)),
                );
                for j in 0..LANES {
                    let splat = _mm256_permutevar8x32_ps(margin, _mm256_set1_epi32(j as i32));
                    stamp_record(k + j, Some(Vec3A::from(_mm256_castps256_ps128(splat))));
                }
                let negate = |v| _mm256_xor_ps(v, sign);
                let planes = [
                    _mm256_sub_ps(lo_x, margin),
                    _mm256_sub_ps(lo_y, margin),
                    _mm256_sub_ps(lo_z, margin),
                    negate(_mm256_add_ps(hi_x, margin)),
                    negate(_mm256_add_ps(hi_y, margin)),
                    negate(_mm256_add_ps(hi_z, margin)),
                ];
                let out = block.as_mut_ptr();
                for (p, plane) in planes.into_iter().enumerate() {
                    _mm256_storeu_ps(out.add(p * LANES), plane);
                }
            }
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

/// Eight vectors' x, y and z lanes as three vectors of eight (a transpose; the fourth
/// lanes are dropped): plane `p`'s lane `j` is lane `p` of `v[j]`.
///
/// # Safety
/// The CPU supports AVX and the caller is compiled with it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn x_y_z_planes(v: [std::arch::x86_64::__m128; 8]) -> [std::arch::x86_64::__m256; 3] {
    use std::arch::x86_64::{
        _mm256_set_m128, _mm256_shuffle_ps, _mm256_unpackhi_ps, _mm256_unpacklo_ps,
    };
    // SAFETY: register-only intrinsics; the caller's contract gives AVX.
    unsafe {
        // Vectors `j` and `j + 4` side by side: 128-bit half `h` holds lanes `4h..4h + 4`.
        let a0 = _mm256_set_m128(v[4], v[0]);
        let a1 = _mm256_set_m128(v[5], v[1]);
        let a2 = _mm256_set_m128(v[6], v[2]);
        let a3 = _mm256_set_m128(v[7], v[3]);
        let xy01 = _mm256_unpacklo_ps(a0, a1); // x0 x1 y0 y1 | x4 x5 y4 y5
        let xy23 = _mm256_unpacklo_ps(a2, a3); // x2 x3 y2 y3 | x6 x7 y6 y7
        let zw01 = _mm256_unpackhi_ps(a0, a1); // z0 z1 w0 w1 | z4 z5 w4 w5
        let zw23 = _mm256_unpackhi_ps(a2, a3); // z2 z3 w2 w3 | z6 z7 w6 w7
        [
            _mm256_shuffle_ps::<0b01_00_01_00>(xy01, xy23),
            _mm256_shuffle_ps::<0b11_10_11_10>(xy01, xy23),
            _mm256_shuffle_ps::<0b01_00_01_00>(zw01, zw23),
        ]
    }
}

/// Frame records staged before [`stamp_dense_streaming`] streams them out: 576 bytes, a
/// multiple of 16 (so that every chunk after the first starts as aligned as the first).
#[cfg(target_arch = "x86_64")]
const STAGED_RECORDS: usize = 16;

/// `EntityFrame` is laid out as [`record_words`] spells it: nine 32-bit words, `user` and
/// `flags` sharing the third (its fourth byte padding). Its fields are `repr(Rust)`, so
/// this is checked, not promised: with another layout the records take plain stores.
#[cfg(target_arch = "x86_64")]
const RECORD_WORDS_LAYOUT: bool = {
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
#[cfg(target_arch = "x86_64")]
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
/// frame lane with non-temporal stores, 32 bytes at a time when the records start 32-byte
/// aligned, else 16 (the bytes before the block's first 16-byte boundary and after its
/// last with plain stores). The caller fences.
///
/// PERF: a frame lane larger than the caches is rewritten once per window, so a plain
/// store first reads its line back. At 5000x20, `record_all` 3-8 µs faster a tick (four
/// sets of 8-12 pinned runs alternated with `main`'s, 3,000 ticks each; 118.3 -> 114.1 µs
/// in the last set's medians) for about 9 instructions an entity more (callgrind);
/// without writing the records at all it was about 11 µs faster (BENCHMARKS.md, Record,
/// tenth round). `movnti` per 32-bit word instead of the staging was 22 instructions an
/// entity more (one `lea` per store: the streaming intrinsics are inline assembly) and
/// about 4 µs faster. Out of line (compiled for AVX2 on its own), so that the recorder's
/// planned path for smaller histories, which never streams, is compiled as before:
/// inlined beside it, this path cost 64x16 about 450 instructions a tick (callgrind).
///
/// # Safety
/// Every handle of `entities` names an active slot, the `k`-th slot `first + k`, and `at`
/// is the frame being recorded; [`RECORD_WORDS_LAYOUT`] holds; the CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[expect(
    clippy::too_many_arguments,
    reason = "the borrowed parts of the history and the batch, as for `stamp_batch`"
)]
unsafe fn stamp_dense_streaming(
    slots: &mut [EntitySlot],
    lanes: &mut Lanes,
    leaves: &mut FrameLeaves<'_>,
    uncompensated: &mut Vec<(u32, u64)>,
    at: FrameSlot,
    first: usize,
    entities: &[(EntityId, EntityState)],
    bounds: &[[Vec3A; 2]],
) {
    // SAFETY: the caller's contract.
    unsafe {
        if leaves.is_flat() {
            stamp_dense_streaming_in::<FLAT_FORM>(
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
            stamp_dense_streaming_in::<TREE_FORM>(
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

/// [`stamp_dense_streaming`] for leaves in the form `FORM`.
///
/// # Safety
/// As [`stamp_dense_streaming`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the borrowed parts of the history and the batch, as for `stamp_batch`"
)]
unsafe fn stamp_dense_streaming_in<const FORM: u8>(
    slots: &mut [EntitySlot],
    lanes: &mut Lanes,
    leaves: &mut FrameLeaves<'_>,
    uncompensated: &mut Vec<(u32, u64)>,
    at: FrameSlot,
    first: usize,
    entities: &[(EntityId, EntityState)],
    bounds: &[[Vec3A; 2]],
) {
    use std::arch::x86_64::{
        _mm_loadu_ps, _mm_storeu_ps, _mm_stream_ps, _mm256_loadu_ps, _mm256_stream_ps,
    };
    debug_assert!(first + entities.len() <= slots.len());
    // SAFETY: the caller's contract: `at` is the frame being recorded, and slots `first..
    // first + entities.len()` exist, so their records are in its block.
    let out = unsafe { frame_block(lanes, at).as_mut_ptr().add(first) }.cast::<u8>();
    // Bytes before the first 16-byte boundary of the records (the same in every chunk).
    let head = out
        .align_offset(16)
        .min(STAGED_RECORDS * size_of::<EntityFrame>());
    // Every chunk starts 32-byte aligned when the first does (576 is a multiple of 32).
    // PERF: 32-byte pieces, half the loads, stores and address computations of 16-byte
    // ones (about 3.5 instructions an entity).
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
            // The record's words in order, the corners as 16-byte stores: each corner's
            // fourth lane lands on the word after it, which the next store writes (the
            // spare word after the last record takes the last).
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
                _mm_storeu_ps(words.add(3).cast(), min.into());
                _mm_storeu_ps(words.add(6).cast(), max.into());
            }
            if !state.lag_compensated {
                mark_uncompensated(uncompensated, index, at.seq);
            }
        }
        let bytes = entities.len() * size_of::<EntityFrame>();
        let src = staged.as_ptr().cast::<u8>();
        // SAFETY: `out + base` holds this chunk's `bytes` (the records of its slots, in
        // the block); `src` as many; `head` and the whole 16-byte pieces after it stay
        // inside both, and the stores at `dst + head + 16i` are 16-byte aligned (with
        // `wide`, `dst` is 32-byte aligned); this function is compiled with AVX2.
        unsafe {
            let dst = out.add(base * size_of::<EntityFrame>());
            if wide && entities.len() == STAGED_RECORDS {
                // The common chunk: whole and 32-byte aligned, 18 pieces of 32 bytes (a
                // constant count).
                for piece in 0..STAGED_RECORDS * size_of::<EntityFrame>() / 32 {
                    let v = _mm256_loadu_ps(src.add(32 * piece).cast());
                    _mm256_stream_ps(dst.add(32 * piece).cast(), v);
                }
            } else if head == 0 && entities.len() == STAGED_RECORDS {
                // Whole and 16-byte aligned: 36 pieces.
                for piece in 0..STAGED_RECORDS * size_of::<EntityFrame>() / 16 {
                    let v = _mm_loadu_ps(src.add(16 * piece).cast());
                    _mm_stream_ps(dst.add(16 * piece).cast(), v);
                }
            } else {
                let head = head.min(bytes);
                std::ptr::copy_nonoverlapping(src, dst, head);
                let mut at = head;
                while at + 16 <= bytes {
                    let v = _mm_loadu_ps(src.add(at).cast());
                    _mm_stream_ps(dst.add(at).cast(), v);
                    at += 16;
                }
                std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), bytes - at);
            }
        }
    }
}

/// Keeps the first error of a batch.
#[cold]
#[inline(never)]
fn keep_first(first: &mut Option<RecordError>, error: RecordError) {
    first.get_or_insert(error);
}

/// Notes that entity `index` has lag compensation off in frame `seq`.
#[cold]
#[inline(never)]
fn mark_uncompensated(list: &mut Vec<(u32, u64)>, index: usize, seq: u64) {
    match list.iter_mut().find(|(i, _)| *i as usize == index) {
        Some(entry) => entry.1 = seq,
        None => list.push((index as u32, seq)),
    }
}

/// One frame being recorded. Finishing it (drop, or [`FrameRecorder::finish`]) updates the
/// broadphase.
#[derive(Debug)]
pub struct FrameRecorder<'h> {
    history: &'h mut History,
    seq: u64,
    /// Nothing has been recorded into this frame yet (no entity can be recorded twice by
    /// the next batch): what lets a batch plan skip the per-entity checks.
    fresh: bool,
}

impl FrameRecorder<'_> {
    /// The tick being recorded.
    #[must_use]
    pub fn tick(&self) -> Tick {
        self.history.meta(self.seq).tick
    }

    /// Records an entity's bone world transforms (one per bone of its rig, in bone order)
    /// and state for this frame.
    ///
    /// A rejected record leaves the entity's history exactly as it was: the entity counts
    /// as not recorded in this frame (and may be recorded again).
    ///
    /// # Errors
    /// [`RecordError`] for a bad handle, a despawned entity, a second record in the same
    /// frame, a wrong bone count, or an invalid transform.
    #[inline]
    pub fn record(
        &mut self,
        id: EntityId,
        bones: &[BoneTransform],
        state: EntityState,
    ) -> Result<(), RecordError> {
        self.fresh = false;
        // Small enough to inline into the caller's loop, which then calls the right body.
        #[cfg(target_arch = "x86_64")]
        if self.history.bone_pass == Kernel::Avx2 {
            // SAFETY: `Kernel::Avx2` is only chosen on a CPU with AVX2.
            return unsafe { self.record_avx2(id, bones, state) };
        }
        self.record_other(id, bones, state)
    }

    /// [`FrameRecorder::record`] with the portable or SSE2 bone pass.
    fn record_other(
        &mut self,
        id: EntityId,
        bones: &[BoneTransform],
        state: EntityState,
    ) -> Result<(), RecordError> {
        let kernel = self.history.bone_pass;
        self.record_with(id, bones, state, |bones, reach, translations, rotations| {
            kernel.run(bones, reach, translations, rotations)
        })
    }

    /// [`FrameRecorder::record`] compiled for AVX2, with the AVX2 bone pass inlined.
    ///
    /// PERF: one function per entity instead of a call into the pass, whose arguments,
    /// result and spilled registers cost about 40 instructions per entity.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn record_avx2(
        &mut self,
        id: EntityId,
        bones: &[BoneTransform],
        state: EntityState,
    ) -> Result<(), RecordError> {
        self.record_with(id, bones, state, |bones, reach, translations, rotations| {
            // SAFETY: the caller's contract: the CPU has AVX2.
            unsafe { Kernel::run_avx2::<false>(bones, reach, translations, rotations) }
        })
    }

    /// The body of [`FrameRecorder::record`], with the bone pass to use.
    #[inline(always)]
    fn record_with(
        &mut self,
        id: EntityId,
        bones: &[BoneTransform],
        state: EntityState,
        bone_pass: impl BonePassFn,
    ) -> Result<(), RecordError> {
        let history = &mut *self.history;
        let index = history.active_index(id)?;
        let at = FrameSlot::of(history, self.seq);
        record_entity::<ANY_FORM>(
            &mut history.slots[index],
            &mut history.lanes,
            &mut history.tree.frame_leaves(at.ring),
            at,
            (id, state),
            bones,
            bone_pass,
            &mut history.layout_epoch,
        )?;
        if !state.lag_compensated {
            mark_uncompensated(&mut history.uncompensated, index, at.seq);
        }
        Ok(())
    }

    /// Records every entity of `entities`, in order, each with its state and the next
    /// transforms of `bones` (as many as its rig has bones, in bone order): the whole tick
    /// in one call, which is what a server that keeps every entity's bones in one buffer
    /// calls instead of one [`FrameRecorder::record`] per entity. The result is the same
    /// as recording them one by one; the handles and the bone total are checked once, and
    /// the per-entity work runs in one loop (listing entities in the order they were
    /// spawned writes each lane front to back: see `Lanes`).
    ///
    /// # Errors
    /// - A bad handle (unknown, stale or despawned) or a number of transforms that is not
    ///   the entities' bone total ([`RecordError::BatchBones`]): nothing is recorded.
    /// - An entity already recorded in this frame, or one with an invalid transform: that
    ///   entity is left as it was (not recorded in this frame), every other entity is
    ///   recorded, and the first such error is returned.
    ///
    /// PERF: a batch recorded whole is remembered (a `BatchPlan`): the same handles in the
    /// same order at the next tick, with no entity spawned or despawned since, are recorded
    /// without looking their slots up, the bone pass runs over the batch's rows segment by
    /// segment, and the checks are decided once for the batch (BENCHMARKS.md, Record,
    /// eighth round). Same stored bits, same errors.
    pub fn record_all(
        &mut self,
        entities: &[(EntityId, EntityState)],
        bones: &[BoneTransform],
    ) -> Result<(), RecordError> {
        let fresh = std::mem::replace(&mut self.fresh, false);
        #[cfg(target_arch = "x86_64")]
        if self.history.bone_pass == Kernel::Avx2 {
            let planned = self.history.plan_fits(entities, bones.len());
            // SAFETY: `Kernel::Avx2` is only chosen on a CPU with AVX2, and the plan fits
            // this batch; a fresh frame holds no record of its entities.
            if planned && fresh && unsafe { self.record_planned(entities, bones) } {
                return Ok(());
            }
            self.history.check_batch(entities, bones.len())?;
            // SAFETY: `Kernel::Avx2` is only chosen on a CPU with AVX2, and the batch was
            // checked above.
            let result = unsafe { self.record_all_avx2(entities, bones) };
            if result.is_ok() && !planned {
                self.history.make_plan(entities, bones.len());
            }
            return result;
        }
        self.history.check_batch(entities, bones.len())?;
        let kernel = self.history.bone_pass;
        let pass = move |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
            kernel.run(bones, reach, translations, rotations)
        };
        // SAFETY: the batch was checked above.
        unsafe {
            if self.history.tree.keeps_its_shape() {
                self.record_all_with::<FLAT_FORM>(entities, bones, pass)
            } else {
                self.record_all_with::<TREE_FORM>(entities, bones, pass)
            }
        }
    }

    /// [`FrameRecorder::record_all`] compiled for AVX2, with the AVX2 bone pass inlined.
    ///
    /// # Safety
    /// The CPU supports AVX2, and `History::check_batch` accepted the batch.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn record_all_avx2(
        &mut self,
        entities: &[(EntityId, EntityState)],
        bones: &[BoneTransform],
    ) -> Result<(), RecordError> {
        // PERF: one closure per loop: a closure called from two loops was not inlined (a
        // call per entity, about 20 instructions more).
        let flat_pass = |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
            // SAFETY: the caller's contract: the CPU has AVX2.
            unsafe { Kernel::run_avx2::<false>(bones, reach, translations, rotations) }
        };
        let tree_pass = |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
            // SAFETY: as above.
            unsafe { Kernel::run_avx2::<false>(bones, reach, translations, rotations) }
        };
        // Streaming: rows of four bones or more start 16-byte aligned in the translations
        // and 64-byte aligned in the rotations (`BoneRanges` aligns their places to four,
        // `Lanes::fit` the blocks, and the lanes start on a cache line); the fence is below.
        let flat_streaming = |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
            // SAFETY: as above, with the alignments and the fence just said.
            unsafe { Kernel::run_avx2::<true>(bones, reach, translations, rotations) }
        };
        let tree_streaming = |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
            // SAFETY: as above.
            unsafe { Kernel::run_avx2::<true>(bones, reach, translations, rotations) }
        };
        let flat = self.history.tree.keeps_its_shape();
        let stream = self.history.lanes.stream;
        // SAFETY: the caller's contract: the batch was checked.
        let result = unsafe {
            match (flat, stream) {
                (true, false) => self.record_all_with::<FLAT_FORM>(entities, bones, flat_pass),
                (false, false) => self.record_all_with::<TREE_FORM>(entities, bones, tree_pass),
                (true, true) => self.record_all_with::<FLAT_FORM>(entities, bones, flat_streaming),
                (false, true) => self.record_all_with::<TREE_FORM>(entities, bones, tree_streaming),
            }
        };
        if stream {
            // Streaming stores are weakly ordered, even against the release of a lock: fence
            // them before the frame can be published (other threads query the history).
            std::arch::x86_64::_mm_sfence();
        }
        result
    }

    /// [`FrameRecorder::record_all`] of the batch the history's plan was made from, in a
    /// fresh frame: the handles are the plan's, so each is active, none is repeated, and
    /// the bones go to the plan's segments of rows. First every bone (rows written, each
    /// entity's bounds kept, the checks accumulated over the batch); then, if every bone
    /// passed, every entity's frame record and leaf. Returns `false` when some bone failed
    /// a fast check: nothing is then stamped, and the caller records the batch the
    /// general way, which writes the same rows again and finds the culprits.
    ///
    /// # Safety
    /// The CPU supports AVX2, `History::plan_fits` accepted the batch, and nothing has been
    /// recorded into this frame yet.
    #[cfg(target_arch = "x86_64")]
    unsafe fn record_planned(
        &mut self,
        entities: &[(EntityId, EntityState)],
        bones: &[BoneTransform],
    ) -> bool {
        // SAFETY: the caller's contract; `planned_avx512` is only set on a CPU with
        // AVX-512F and AVX-512VL (`detect_avx512vl`).
        unsafe {
            if self.history.planned_avx512 {
                self.record_planned_avx512(entities, bones)
            } else {
                self.record_planned_avx2(entities, bones)
            }
        }
    }

    /// [`FrameRecorder::record_planned`] compiled for AVX2.
    ///
    /// # Safety
    /// As [`FrameRecorder::record_planned`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn record_planned_avx2(
        &mut self,
        entities: &[(EntityId, EntityState)],
        bones: &[BoneTransform],
    ) -> bool {
        // SAFETY: the caller's contract, and this function is compiled with AVX2.
        unsafe { self.record_planned_in(entities, bones) }
    }

    /// [`FrameRecorder::record_planned`] compiled for AVX2 with AVX-512F and AVX-512VL
    /// enabled: the same AVX2 intrinsics, bit for bit the same rows and decisions, but the
    /// compiler may use 32 vector registers (and EVEX forms such as `vpternlogd`).
    ///
    /// PERF: with 16 registers the bone pass's written-out groups spilled accumulators
    /// and constants to the stack (13 stack accesses in the 64x16 entity loop, 4 in the
    /// 200x20 one); with 32, none (213 -> 202 and 256 -> 249 instructions an entity).
    /// On the AVX-512 machine of stop 18 (Zen 5-like), alternated pinned runs of the
    /// funnel's record tick (`FUNNEL_RECORD=1`), minimum and median: 64x16 -6 % and -9 %
    /// (8 pairs), 5000x20 -6 % and -8 % (6 pairs), 200x20 nothing measurable (its loop
    /// had little to spill). BENCHMARKS.md, Record, eleventh round.
    ///
    /// # Safety
    /// As [`FrameRecorder::record_planned`], and the CPU supports AVX-512F and AVX-512VL.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    unsafe fn record_planned_avx512(
        &mut self,
        entities: &[(EntityId, EntityState)],
        bones: &[BoneTransform],
    ) -> bool {
        // SAFETY: the caller's contract, and this function is compiled with AVX2 (and
        // AVX-512F/VL, which the body's AVX2 intrinsics do not need).
        unsafe { self.record_planned_in(entities, bones) }
    }

    /// The body of [`FrameRecorder::record_planned`], inlined into its two builds.
    ///
    /// # Safety
    /// As [`FrameRecorder::record_planned`], and the caller is compiled with AVX2.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn record_planned_in(
        &mut self,
        entities: &[(EntityId, EntityState)],
        bones: &[BoneTransform],
    ) -> bool {
        use super::bone_pass::x86;
        let history = &mut *self.history;
        let at = FrameSlot::of(history, self.seq);
        let History {
            slots,
            lanes,
            tree,
            uncompensated,
            plan,
            ..
        } = history;
        let stream = lanes.stream;
        debug_assert!(
            plan.bounds.len() == entities.len()
                && at.rows + lanes.row_stride <= lanes.rotations.len()
                && bones.len() == plan.bones
        );
        // SAFETY: `rows` is `ring * row_stride` with `ring < capacity`: the start of a block.
        let (t_base, r_base) = unsafe {
            (
                lanes.translations.as_mut_ptr().add(at.rows).cast::<f32>(),
                lanes.rotations.as_mut_ptr().add(at.rows).cast::<f32>(),
            )
        };
        // SAFETY: the caller is compiled with AVX2.
        let mut checks = unsafe { x86::batch_checks() };
        let mut src = bones.as_ptr().cast::<f32>();
        let mut first = 0;
        for segment in &plan.segments {
            let (count, groups) = (segment.count as usize, segment.groups as usize);
            let place = segment.place as usize;
            debug_assert!(slots[segment.slot as usize].life == Life::Active);
            // SAFETY: the plan holds (`plan_fits`: nothing spawned, despawned or laid out
            // since it was made), so its segments' slots are active, with rigs of `4 *
            // groups` bones (one splatted reach each); its segments' places are the
            // entities' rows (inside the block, one translation to spare after it, see
            // `record_entity`), its entities' bones add up to `bones.len()` in order, and
            // its bounds hold one entry per entity. Rows of four bones or more start
            // aligned for the streaming stores (`BoneRanges`, `Lanes::fit`).
            unsafe {
                let reach = slots
                    .get_unchecked(segment.slot as usize)
                    .rig
                    .as_deref()
                    .unwrap_unchecked()
                    .bone_reach_splat()
                    .as_ptr()
                    .cast::<f32>();
                let t_out = t_base.add(3 * place);
                let r_out = r_base.add(4 * place);
                let bounds = plan.bounds.get_unchecked_mut(first..first + count);
                let end = t_out.add(12 * groups * count);
                // Streamed rows do not spill (see `avx2_segment`).
                let restore = segment.restore && !stream;
                let spilled = if restore { end.read() } else { 0.0 };
                // PERF: the common rigs' group counts (16 and 20 bones) as constants: no
                // loop set up per entity (about 20 instructions an entity). Which form
                // (written out, or a loop of constant length that LLVM writes out itself)
                // is what callgrind found fewest: they spill differently. Five groups with
                // plain stores written out by hand: 65,266 -> 67,864 a tick at 200x20;
                // four as a constant loop: 18,501 -> 18,559 at 64x16; five streamed as a
                // constant loop: 2.387 M -> 2.407 M at 5000x20.
                let checks = &mut checks;
                match (stream, groups) {
                    (false, 4) => {
                        x86::avx2_segment::<false, 4>(src, reach, t_out, r_out, 4, bounds, checks)
                    }
                    (false, 5) => {
                        x86::avx2_segment::<false, 0>(src, reach, t_out, r_out, 5, bounds, checks)
                    }
                    (false, _) => x86::avx2_segment::<false, 0>(
                        src, reach, t_out, r_out, groups, bounds, checks,
                    ),
                    (true, 4) => {
                        x86::avx2_segment::<true, 4>(src, reach, t_out, r_out, 4, bounds, checks)
                    }
                    (true, 5) => {
                        x86::avx2_segment::<true, 5>(src, reach, t_out, r_out, 5, bounds, checks)
                    }
                    (true, _) => x86::avx2_segment::<true, 0>(
                        src, reach, t_out, r_out, groups, bounds, checks,
                    ),
                }
                if restore {
                    end.write(spilled);
                }
                src = src.add(count * groups * 4 * (size_of::<BoneTransform>() / 4));
            }
            first += count;
        }
        if stream {
            // As in `record_all_avx2`: fence the streaming stores before anything else.
            // SAFETY: SSE (`sfence`) is part of x86_64's baseline.
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
        // SAFETY: the caller is compiled with AVX2.
        if !unsafe { x86::batch_checks_pass(&checks) } {
            #[cfg(test)]
            {
                plan.used.1 += 1;
            }
            return false;
        }
        #[cfg(test)]
        {
            plan.used.0 += 1;
        }
        let mut leaves = tree.frame_leaves(at.ring);
        let bounds = &plan.bounds[..entities.len()];
        if let Some(first) = plan.dense
            && stream
            && RECORD_WORDS_LAYOUT
        {
            // SAFETY: as below, the plan holds: every handle names an active slot, the
            // `k`-th slot `first + k` (a dense plan); the layout was just checked, and the
            // CPU has AVX2 (the caller's contract).
            unsafe {
                stamp_dense_streaming(
                    slots,
                    lanes,
                    &mut leaves,
                    uncompensated,
                    at,
                    first,
                    entities,
                    bounds,
                );
            }
            // The frame records were streamed: fenced as the rows were.
            // SAFETY: SSE (`sfence`) is part of x86_64's baseline.
            unsafe { std::arch::x86_64::_mm_sfence() };
            return true;
        }
        // SAFETY: as above, the plan holds: every handle names an active slot.
        unsafe {
            if leaves.is_flat() {
                stamp_batch::<FLAT_FORM>(
                    slots,
                    lanes,
                    &mut leaves,
                    uncompensated,
                    at,
                    entities,
                    bounds,
                    plan.dense,
                );
            } else {
                stamp_batch::<TREE_FORM>(
                    slots,
                    lanes,
                    &mut leaves,
                    uncompensated,
                    at,
                    entities,
                    bounds,
                    None,
                );
            }
        }
        true
    }

    /// The body of [`FrameRecorder::record_all`] once the batch is checked, for a frame whose
    /// broadphase leaves are in the form `FORM`.
    ///
    /// # Safety
    /// `History::check_batch` accepted `entities` and `bones.len()`: every handle is
    /// active (its index is a slot) and the entities' bone counts add up to `bones.len()`.
    ///
    /// PERF: both are relied on without checking again (a slot index and a split checked
    /// per entity: about five instructions).
    #[inline(always)]
    unsafe fn record_all_with<const FORM: u8>(
        &mut self,
        entities: &[(EntityId, EntityState)],
        bones: &[BoneTransform],
        bone_pass: impl BonePassFn,
    ) -> Result<(), RecordError> {
        let history = &mut *self.history;
        let at = FrameSlot::of(history, self.seq);
        // Disjoint borrows, so that nothing written through one is reloaded from another.
        let History {
            slots,
            lanes,
            tree,
            uncompensated,
            layout_epoch,
            ..
        } = history;
        let mut leaves = tree.frame_leaves(at.ring);
        debug_assert_eq!(leaves.is_flat(), FORM == FLAT_FORM);
        let mut first_error = None;
        let mut rest = bones;
        for &(id, state) in entities {
            let index = id.index() as usize;
            debug_assert!(index < slots.len());
            // SAFETY: `check_batch` found every handle active, so `index` is a slot.
            let slot = unsafe { slots.get_unchecked_mut(index) };
            debug_assert!(slot.bone_count <= rest.len());
            // SAFETY: `check_batch` found the entities' bone counts to add up to the
            // transforms given: this entity's are among those left.
            let (own, next) = unsafe { rest.split_at_unchecked(slot.bone_count) };
            rest = next;
            let entity = (id, state);
            match record_entity::<FORM>(
                slot,
                lanes,
                &mut leaves,
                at,
                entity,
                own,
                bone_pass,
                layout_epoch,
            ) {
                Ok(()) => {
                    if !state.lag_compensated {
                        mark_uncompensated(uncompensated, index, at.seq);
                    }
                }
                Err(error) => keep_first(&mut first_error, error),
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Records a rigid (single-bone) entity.
    ///
    /// # Errors
    /// As [`FrameRecorder::record`].
    pub fn record_rigid(
        &mut self,
        id: EntityId,
        transform: BoneTransform,
        state: EntityState,
    ) -> Result<(), RecordError> {
        self.record(id, std::slice::from_ref(&transform), state)
    }

    /// Completes the frame (the same as dropping the recorder).
    pub fn finish(self) {}
}

impl Drop for FrameRecorder<'_> {
    fn drop(&mut self) {
        self.history.end_frame();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use glam::Vec3;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    use super::super::bone_pass::Kernel;
    use super::super::bone_pass::tests::random_bone;
    use super::super::{EntityState, History, HistoryConfig, RecordError};
    use crate::math::BoneTransform;
    use crate::rig::{Hitbox, Rig, Shape, Zone};
    use crate::time::Tick;

    /// A rig of `bones` bones, every third one bare (reach 0).
    fn rig(bones: u16) -> Arc<Rig> {
        let hitboxes = (0..bones)
            .filter(|b| b % 3 != 2 || bones == 1)
            .map(|b| {
                Hitbox::new(
                    b,
                    format!("b{b}"),
                    Zone::Torso,
                    b,
                    Shape::Sphere { radius: 0.1 },
                )
                .offset_by(Vec3::new(0.0, 0.05 * f32::from(b), 0.0))
            })
            .collect();
        Arc::new(Rig::new(bones, hitboxes).expect("valid rig"))
    }

    /// Records 3 windows of ticks with `kernel`: mostly valid bones, some adversarial ones,
    /// a few scaled. Returns every record's outcome and the history.
    fn record_with(kernel: Kernel) -> (Vec<Result<(), RecordError>>, History) {
        let mut history = History::new(HistoryConfig {
            tick_rate: 60.0,
            max_rewind: 0.2,
        })
        .expect("config");
        history.bone_pass = kernel;
        let rigs = [1, 3, 4, 5, 16, 20].map(rig);
        let ids: Vec<_> = (0..18)
            .map(|i| history.spawn(Arc::clone(&rigs[i % rigs.len()])))
            .collect();
        let mut rng = Pcg64Mcg::seed_from_u64(77);
        let mut outcomes = Vec::new();
        let mut bones = Vec::new();
        for tick in 1..=3 * history.capacity() as u32 {
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                .expect("frame");
            for (i, &id) in ids.iter().enumerate() {
                let n = rigs[i % rigs.len()].bone_count();
                let adversarial = rng.random_bool(0.3);
                bones.clear();
                bones.extend((0..n).map(|_| random_bone(&mut rng, adversarial)));
                outcomes.push(frame.record(id, &bones, EntityState::default()));
            }
        }
        (outcomes, history)
    }

    /// Everything recorded, as bits: every slot's ring, row by row.
    fn stored_bits(history: &History) -> Vec<u32> {
        let mut bits = Vec::new();
        let lanes = &history.lanes;
        for (index, slot) in history.slots.iter().enumerate() {
            bits.extend(slot.scales.iter().flatten().map(|v| v.to_bits()));
            for ring in 0..history.capacity {
                let at = history.lanes.row(slot, ring);
                let row = at..at + slot.bone_count;
                let translations = &lanes.translations[row.clone()];
                bits.extend(translations.iter().flatten().map(|v| v.to_bits()));
                let rotations = &lanes.rotations[row];
                bits.extend(rotations.iter().flatten().map(|v| v.to_bits()));
                let frame = history.entity_frame(index, ring);
                bits.extend([
                    frame.seq,
                    frame.layers,
                    u32::from(frame.user),
                    u32::from(frame.flags),
                ]);
                bits.extend(
                    frame
                        .bounds_min
                        .iter()
                        .chain(&frame.bounds_max)
                        .map(|v| v.to_bits()),
                );
            }
        }
        bits.extend(history.tree.span_bits().iter().flatten());
        bits.extend(history.old_tree.span_bits().iter().flatten());
        bits.extend([history.tree_from as u32]);
        bits
    }

    /// The bones entity `serial` is recorded with at `tick`: distinct in every bone, tick
    /// and entity, so a row read from the wrong place cannot match. Every fifth entity is
    /// scaled (a scale lane of its own).
    fn churn_bones(serial: u32, tick: u32, n: u16) -> Vec<crate::math::BoneTransform> {
        (0..n)
            .map(|b| {
                // Inside the accepted coordinate range (1e6).
                let f =
                    |k: u32| ((serial * 7919 + tick * 31 + u32::from(b) * 3 + k) % 900_000) as f32;
                let rotation = glam::Quat::from_rotation_y(f(0) * 0.01);
                let bone = crate::math::BoneTransform::new(Vec3::new(f(0), f(1), -f(2)), rotation);
                if serial.is_multiple_of(5) {
                    bone.with_scale(Vec3::splat(1.0 + f(3) * 1e-4))
                } else {
                    bone
                }
            })
            .collect()
    }

    /// Entities of four rigs spawn and despawn every few ticks (bursts of spawns that grow
    /// the lanes mid-match, single spawns, despawns whose places are reused once their
    /// last frame has aged out): every frame still in the window reads back exactly what
    /// was recorded, despawned entities stay readable until they age out, and then their
    /// handles are stale.
    #[test]
    fn entities_spawned_and_despawned_keep_their_own_rows() {
        use crate::history::EntityError;
        use crate::query::QueryError;
        use crate::time::{RewindTarget, WindowPolicy};

        let mut history = History::new(HistoryConfig {
            tick_rate: 60.0,
            max_rewind: 0.2,
        })
        .expect("config");
        let capacity = history.capacity() as u32;
        let rigs = [1, 3, 16, 20].map(rig);
        let mut rng = Pcg64Mcg::seed_from_u64(11);
        // serial -> (handle, rig, first tick, tick despawned after).
        let mut known: Vec<(crate::history::EntityId, usize, u32, Option<u32>)> = Vec::new();
        let mut grew = 0;
        for tick in 1..=12 * capacity {
            let bytes_before = history.history_bytes();
            let spawns = match tick % 40 {
                1 => 30,
                _ => usize::from(rng.random_bool(0.3)),
            };
            for _ in 0..spawns {
                let r = rng.random_range(0..rigs.len());
                known.push((history.spawn(Arc::clone(&rigs[r])), r, tick, None));
            }
            for entity in &mut known {
                if entity.3.is_none() && rng.random_bool(0.04) {
                    history.despawn(entity.0).expect("active");
                    entity.3 = Some(tick - 1);
                }
            }
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                .expect("frame");
            for (serial, &(id, r, _, gone)) in known.iter().enumerate() {
                if gone.is_none() {
                    let bones = churn_bones(serial as u32, tick, rigs[r].bone_count());
                    frame
                        .record(id, &bones, EntityState::default())
                        .expect("valid");
                }
            }
            frame.finish();
            grew += usize::from(history.history_bytes() > bytes_before);
            let oldest = tick.saturating_sub(capacity - 1).max(1);
            for (serial, &(id, r, first, gone)) in known.iter().enumerate() {
                let last = gone.unwrap_or(tick);
                if last < first {
                    continue; // despawned before it was ever recorded
                }
                if last < oldest {
                    // Aged out: the handle is stale once its slot has been freed.
                    let at = history.entity_at(id, RewindTarget::at(0.0), WindowPolicy::Clamp);
                    assert!(
                        matches!(at, Err(QueryError::Entity(EntityError::Stale(_)))),
                        "tick {tick}: entity {serial} aged out, got {:?}",
                        at.map(|a| a.is_some())
                    );
                    continue;
                }
                let n = rigs[r].bone_count();
                let (window_start, _) = history.window().expect("frames recorded");
                let readable = (oldest..=tick)
                    .find(|&t| f64::from(t) / 60.0 >= window_start)
                    .expect("the newest frame is in the window");
                for t in first.max(readable)..=last {
                    let target = RewindTarget::between(Tick(t), Tick(t), 0.0);
                    let at = history
                        .entity_at(id, target, WindowPolicy::Reject)
                        .expect("in the window")
                        .unwrap_or_else(|| panic!("tick {tick}: entity {serial} at {t}"));
                    let expected = churn_bones(serial as u32, t, n);
                    for (b, want) in expected.iter().enumerate() {
                        let got = at.bone(b as u16).expect("a bone of its rig");
                        assert!(
                            got.translation.to_array().map(f32::to_bits)
                                == want.translation.to_array().map(f32::to_bits)
                                && got.rotation.to_array().map(f32::to_bits)
                                    == want.rotation.to_array().map(f32::to_bits)
                                && got.scale.to_array().map(f32::to_bits)
                                    == want.scale.to_array().map(f32::to_bits),
                            "tick {tick}: entity {serial} bone {b} at {t}: {got:?} != {want:?}"
                        );
                    }
                }
            }
        }
        assert!(known.len() > 150, "{} entities", known.len());
        assert!(grew >= 3, "the lanes grew {grew} times");
        // Places are reused: far fewer than every entity ever spawned would need.
        let places: usize = known
            .iter()
            .map(|&(_, r, _, _)| usize::from(rigs[r].bone_count()))
            .sum();
        assert!(
            history.lanes.ranges.end() < places / 2,
            "{} places for {places} bones spawned",
            history.lanes.ranges.end()
        );
    }

    /// `history_bytes` counts the lanes as allocated: exactly what the entities spawned
    /// before the first frame need, then a quarter more when one more entity arrives, and
    /// nothing more while despawned entities' places are reused.
    #[test]
    fn the_lanes_are_sized_to_the_spawned_entities_and_counted() {
        use super::super::{EntityFrame, FrameMeta};
        let mut history = History::new(HistoryConfig::default()).expect("config");
        let capacity = history.capacity();
        let rig = rig(16);
        let mut ids: Vec<_> = (0..10).map(|_| history.spawn(Arc::clone(&rig))).collect();
        let expected = |places: usize, slots: usize| {
            (capacity * places + 1) * 12
                + capacity * places * 16
                + capacity * slots * size_of::<EntityFrame>()
                + capacity * size_of::<FrameMeta>()
        };
        let mut tick = 0;
        let mut frame_with = |history: &mut History, ids: &[crate::history::EntityId]| {
            tick += 1;
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 64.0)
                .expect("frame");
            let bones = vec![crate::math::BoneTransform::IDENTITY; 16];
            for &id in ids {
                frame
                    .record(id, &bones, EntityState::default())
                    .expect("valid");
            }
        };
        frame_with(&mut history, &ids);
        assert_eq!(history.history_bytes(), expected(160, 10));
        ids.push(history.spawn(Arc::clone(&rig)));
        frame_with(&mut history, &ids);
        // 176 places needed, 160 + 40 given; 11 slots needed, 10 + 2 given.
        assert_eq!(history.history_bytes(), expected(200, 12));
        // Despawned, aged out, respawned: the same places and slot, no growth.
        history.despawn(ids.remove(3)).expect("despawn");
        for _ in 0..capacity {
            frame_with(&mut history, &ids);
        }
        ids.push(history.spawn(Arc::clone(&rig)));
        frame_with(&mut history, &ids);
        assert_eq!(history.history_bytes(), expected(200, 12));
        assert_eq!(history.lanes.ranges.end(), 176);
    }

    #[test]
    fn a_flat_broadphase_rebuilt_once_a_window_would_change_nothing() {
        let mut history = History::new(HistoryConfig::default()).expect("config");
        let capacity = history.capacity();
        let rig = rig(16);
        let ids: Vec<_> = (0..40).map(|_| history.spawn(Arc::clone(&rig))).collect();
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        let mut bones = Vec::new();
        let ticks = 3 * capacity as u32 + 5;
        for tick in 1..=ticks {
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 64.0)
                .expect("frame");
            for (k, &id) in ids.iter().enumerate() {
                // Every entity wanders: where it ends up has nothing to do with where the
                // broadphase was built.
                bones.clear();
                let at = Vec3::new(
                    k as f32 * 3.0 + rng.random_range(-1.0..1.0) * tick as f32,
                    0.0,
                    rng.random_range(-50.0..50.0),
                );
                bones.extend((0..16).map(|b| {
                    let mut t = crate::math::BoneTransform::IDENTITY;
                    t.translation = at + Vec3::Y * (0.1 * b as f32);
                    t
                }));
                frame
                    .record(id, &bones, EntityState::default())
                    .expect("valid");
            }
        }
        assert!(history.tree.keeps_its_shape(), "40 entities: the flat form");
        assert!(
            history.frames_since_build > 2 * capacity,
            "not rebuilt since spawning"
        );
        let kept = history.tree.span_bits();
        let mut rebuilt = history.clone();
        rebuilt.rebuild_tree();
        assert_eq!(rebuilt.frames_since_build, 0, "rebuilt");
        // The rebuild boxes the newest two frames anew; the older frames keep the tree
        // they were recorded under.
        let newest = rebuilt.newest_seq;
        assert_eq!(rebuilt.tree_from, newest - 1);
        for ring in [rebuilt.ring(newest - 1), rebuilt.ring(newest)] {
            assert_eq!(
                rebuilt.tree.frame_span_bits(ring),
                history.tree.frame_span_bits(ring),
                "ring slot {ring}"
            );
        }
        assert_eq!(rebuilt.old_tree.span_bits(), kept);
    }

    /// Entities spawned mid-match into reserved room do not lay the lanes out again, and
    /// the ones recorded before keep their history.
    #[test]
    fn reserved_room_takes_later_spawns_without_growing() {
        let mut history = History::new(HistoryConfig::default()).expect("config");
        let rig = rig(16);
        let mut ids = vec![history.spawn(Arc::clone(&rig))];
        let bones = |k: usize| {
            let mut t = crate::math::BoneTransform::IDENTITY;
            t.translation = glam::Vec3::new(k as f32, 1.0, 2.0);
            vec![t; 16]
        };
        let record = |history: &mut History, ids: &[crate::history::EntityId], tick: u32| {
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 64.0)
                .expect("frame");
            for (k, &id) in ids.iter().enumerate() {
                frame
                    .record(id, &bones(k), EntityState::default())
                    .expect("valid");
            }
        };
        record(&mut history, &ids, 1);
        history.reserve(9, 9 * 16);
        let reserved = history.history_bytes();
        assert!(reserved > 0);
        for tick in 2..11 {
            ids.push(history.spawn(Arc::clone(&rig)));
            record(&mut history, &ids, tick);
            assert_eq!(history.history_bytes(), reserved, "grew at tick {tick}");
        }
        // The first entity's frame 1 survived the reservation's copy.
        let time = 1.0 / 64.0;
        let posed = history
            .entity_at(
                ids[0],
                crate::RewindTarget::Time(time),
                crate::WindowPolicy::Reject,
            )
            .expect("in the window")
            .expect("recorded then");
        let bone = posed.bone(3).expect("a bone");
        assert_eq!(bone.translation, glam::Vec3::new(0.0, 1.0, 2.0));
        // One entity past the reservation grows the lanes.
        ids.push(history.spawn(Arc::clone(&rig)));
        record(&mut history, &ids, 11);
        assert!(history.history_bytes() > reserved);
    }

    #[test]
    fn a_history_larger_than_the_caches_sits_on_huge_pages_and_records_the_same() {
        // 200 entities x 20 bones x 3 s at 60 Hz: about 24 MB of rings.
        let config = HistoryConfig {
            tick_rate: 60.0,
            max_rewind: 3.0,
        };
        let mut history = History::new(config).expect("config");
        let rig = rig(20);
        let mut ids: Vec<_> = (0..200).map(|_| history.spawn(Arc::clone(&rig))).collect();
        // A hole in the slot order, and an entity recorded out of spawn order.
        history.despawn(ids.remove(57)).expect("despawn");
        ids.swap(3, 150);
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let mut bones = Vec::new();
        for tick in 1..=3 {
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                .expect("frame");
            for &id in &ids {
                bones.clear();
                bones.extend((0..20).map(|_| random_bone(&mut rng, false)));
                frame
                    .record(id, &bones, EntityState::default())
                    .expect("valid");
            }
            drop(frame);
            let lanes = &history.lanes;
            for lane in [
                lanes.translations.held_bytes(),
                lanes.rotations.held_bytes(),
            ] {
                assert!(lane > 8 << 20, "{lane} bytes");
            }
            #[cfg(target_os = "linux")]
            assert!(lanes.translations.on_huge_pages() && lanes.rotations.on_huge_pages());
            // The last entity's newest pose is what was recorded.
            let slot = &history.slots[ids[ids.len() - 1].index() as usize];
            let at = history.lanes.row(slot, history.newest_ring);
            let row = &history.lanes.translations[at..at + 20];
            let sent: Vec<[f32; 3]> = bones.iter().map(|b| b.translation.to_array()).collect();
            assert_eq!(row, sent.as_slice());
        }
        let small = record_with(Kernel::detect()).1;
        assert!(
            !small.lanes.rotations.on_huge_pages(),
            "a small history is not"
        );
    }

    /// Records 3 windows of ticks like `record_with`, one `record_all` per tick with every
    /// entity (some with lag compensation off). Returns whether each entity was recorded in
    /// each tick, and the history; checks that the error returned is the first entity left
    /// out.
    fn record_all_with(kernel: Kernel, stream: bool) -> (Vec<bool>, History) {
        let mut history = History::new(HistoryConfig {
            tick_rate: 60.0,
            max_rewind: 0.2,
        })
        .expect("config");
        history.bone_pass = kernel;
        history.lanes.force_stream = Some(stream);
        let rigs = [1, 3, 4, 5, 16, 20].map(rig);
        let entities: Vec<_> = (0..18)
            .map(|i| {
                let state = EntityState {
                    lag_compensated: i % 5 != 0,
                    user: i as u16,
                    ..EntityState::default()
                };
                (history.spawn(Arc::clone(&rigs[i % rigs.len()])), state)
            })
            .collect();
        let mut rng = Pcg64Mcg::seed_from_u64(77);
        let mut recorded = Vec::new();
        let mut bones = Vec::new();
        for tick in 1..=3 * history.capacity() as u32 {
            bones.clear();
            for i in 0..entities.len() {
                let n = rigs[i % rigs.len()].bone_count();
                let adversarial = rng.random_bool(0.3);
                bones.extend((0..n).map(|_| random_bone(&mut rng, adversarial)));
            }
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                .expect("frame");
            let result = frame.record_all(&entities, &bones);
            drop(frame);
            let in_frame: Vec<bool> = entities
                .iter()
                .map(|(id, _)| history.slots[id.index() as usize].last_seq == history.newest_seq)
                .collect();
            for (&(id, state), &yes) in entities.iter().zip(&in_frame) {
                if yes {
                    assert_eq!(history.present_state(id), Ok(state));
                }
            }
            match (result, in_frame.iter().position(|yes| !yes)) {
                (Ok(()), None) => {}
                (Err(RecordError::Transform { entity, .. }), Some(first)) => {
                    assert_eq!(entity, entities[first].0, "the first entity left out");
                }
                (other, first) => panic!("tick {tick}: {other:?}, first left out {first:?}"),
            }
            recorded.extend(in_frame);
        }
        (recorded, history)
    }

    #[test]
    fn record_all_records_what_record_does() {
        // The same ticks recorded entity by entity (with each entity's state).
        let (reference_outcomes, reference) = {
            let mut history = History::new(HistoryConfig {
                tick_rate: 60.0,
                max_rewind: 0.2,
            })
            .expect("config");
            let rigs = [1, 3, 4, 5, 16, 20].map(rig);
            let ids: Vec<_> = (0..18)
                .map(|i| history.spawn(Arc::clone(&rigs[i % rigs.len()])))
                .collect();
            let mut rng = Pcg64Mcg::seed_from_u64(77);
            let mut outcomes = Vec::new();
            let mut bones = Vec::new();
            for tick in 1..=3 * history.capacity() as u32 {
                let mut all = Vec::new();
                for i in 0..ids.len() {
                    let n = rigs[i % rigs.len()].bone_count();
                    let adversarial = rng.random_bool(0.3);
                    bones.clear();
                    bones.extend((0..n).map(|_| random_bone(&mut rng, adversarial)));
                    all.push(bones.clone());
                }
                let mut frame = history
                    .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                    .expect("frame");
                for (i, (&id, bones)) in ids.iter().zip(&all).enumerate() {
                    let state = EntityState {
                        lag_compensated: i % 5 != 0,
                        user: i as u16,
                        ..EntityState::default()
                    };
                    outcomes.push(frame.record(id, bones, state).is_ok());
                }
            }
            (outcomes, history)
        };
        assert!(reference_outcomes.iter().filter(|ok| !**ok).count() > 100);
        // With and without streaming stores (only the AVX2 batch streams; the others must
        // ignore the setting).
        for kernel in Kernel::available() {
            for stream in [false, true] {
                let (recorded, history) = record_all_with(kernel, stream);
                assert_eq!(history.lanes.stream, stream);
                assert_eq!(
                    recorded, reference_outcomes,
                    "{kernel:?}, streaming {stream}: which entities were recorded"
                );
                assert!(
                    stored_bits(&history) == stored_bits(&reference),
                    "{kernel:?}, streaming {stream}: stored history differs"
                );
                assert_eq!(history.uncompensated, reference.uncompensated, "{kernel:?}");
            }
        }
    }

    #[test]
    fn record_all_refuses_a_bad_batch_whole() {
        let mut history = History::new(HistoryConfig::default()).expect("config");
        let (a, b) = (history.spawn(rig(4)), history.spawn(rig(3)));
        let gone = history.spawn(rig(3));
        history.despawn(gone).expect("despawn");
        let state = EntityState::default();
        let bones = vec![crate::math::BoneTransform::IDENTITY; 7];
        let mut frame = history.begin_frame(Tick(1), 0.1).expect("frame");
        assert_eq!(
            frame.record_all(&[(a, state), (b, state)], &bones[..6]),
            Err(RecordError::BatchBones {
                expected: 7,
                got: 6
            })
        );
        // Despawned before it was ever recorded: its slot is free, the handle stale.
        assert_eq!(
            frame.record_all(&[(a, state), (gone, state)], &bones),
            Err(RecordError::Entity(crate::history::EntityError::Stale(
                gone
            )))
        );
        // Nothing was recorded by the refused batches: both can still be recorded once.
        assert_eq!(frame.record_all(&[(a, state), (b, state)], &bones), Ok(()));
        assert_eq!(
            frame.record_all(&[(b, state)], &bones[..3]),
            Err(RecordError::AlreadyRecorded(b))
        );
        frame.finish();
        assert_eq!(history.present_state(a), Ok(state));
    }

    #[test]
    fn every_kernel_records_the_same_history_and_decisions() {
        let (outcomes, reference) = record_with(Kernel::Portable);
        let accepted = outcomes.iter().filter(|o| o.is_ok()).count();
        let rejected = outcomes.len() - accepted;
        assert!(
            accepted > 100 && rejected > 100,
            "{accepted} accepted, {rejected} rejected"
        );
        assert!(
            reference.slots.iter().any(|s| !s.scales.is_empty()),
            "some entity was recorded with a scale"
        );
        for kernel in Kernel::available() {
            let (got, history) = record_with(kernel);
            assert_eq!(got, outcomes, "{kernel:?}: accept/reject decisions");
            assert!(
                stored_bits(&history) == stored_bits(&reference),
                "{kernel:?}: stored history differs"
            );
        }
    }

    /// Records the same calls into two histories: `planned` with `record_all` (batch plans
    /// on), `reference` one `record` per entity in batch order (what `record_all` is
    /// documented to do once its batch is accepted). Both must hold the same bits after
    /// every tick.
    struct TwinHistories {
        planned: History,
        reference: History,
    }

    impl TwinHistories {
        /// `avx512`: whether `planned` may run the AVX-512 build of its planned batches
        /// (on a CPU without AVX-512F/VL it never does).
        fn new(stream: bool, flat: bool, avx512: bool) -> Self {
            let mut planned = History::new(HistoryConfig {
                tick_rate: 60.0,
                max_rewind: 0.15,
            })
            .expect("config");
            planned.lanes.force_stream = Some(stream);
            planned.planned_avx512 &= avx512;
            planned.tree = crate::bvh::TemporalBvh::shaped(flat);
            planned.old_tree = crate::bvh::TemporalBvh::shaped(flat);
            let reference = planned.clone();
            Self { planned, reference }
        }

        fn spawn(&mut self, rig: &Arc<Rig>) -> crate::history::EntityId {
            let id = self.planned.spawn(Arc::clone(rig));
            assert_eq!(self.reference.spawn(Arc::clone(rig)), id);
            id
        }

        fn despawn(&mut self, id: crate::history::EntityId) {
            self.planned.despawn(id).expect("active");
            self.reference.despawn(id).expect("active");
        }

        /// One tick: `refused` offered first (a batch with a despawned entity, which
        /// `record_all` must refuse whole), `before` recorded alone (with `record`), then
        /// the batch.
        fn tick(
            &mut self,
            tick: u32,
            refused: Option<(
                &[(crate::history::EntityId, EntityState)],
                crate::history::EntityId,
            )>,
            before: Option<(crate::history::EntityId, &[BoneTransform])>,
            batch: &[(crate::history::EntityId, EntityState)],
            bones: &[BoneTransform],
        ) -> Result<(), RecordError> {
            let time = f64::from(tick) / 60.0;
            let mut frame = self.planned.begin_frame(Tick(tick), time).expect("frame");
            let mut reference = self.reference.begin_frame(Tick(tick), time).expect("frame");
            if let Some((refused, gone)) = refused {
                let total = refused
                    .iter()
                    .map(|&(id, _)| usize::from(frame.history.rig(id).expect("known").bone_count()))
                    .sum();
                assert_eq!(
                    frame.record_all(refused, &vec![BoneTransform::IDENTITY; total]),
                    Err(RecordError::Entity(crate::history::EntityError::Despawned(
                        gone
                    )))
                );
            }
            if let Some((id, own)) = before {
                let state = EntityState::default();
                assert_eq!(
                    frame.record(id, own, state),
                    reference.record(id, own, state)
                );
            }
            let result = frame.record_all(batch, bones);
            let mut expected = Ok(());
            let mut rest = bones;
            for &(id, state) in batch {
                let n = usize::from(frame.history.rig(id).expect("known").bone_count());
                let (own, next) = rest.split_at(n);
                rest = next;
                if let Err(error) = reference.record(id, own, state) {
                    expected = expected.and(Err(error));
                }
            }
            assert_eq!(result, expected, "tick {tick}");
            drop((frame, reference));
            assert!(
                stored_bits(&self.planned) == stored_bits(&self.reference),
                "tick {tick}: stored history differs"
            );
            assert_eq!(self.planned.uncompensated, self.reference.uncompensated);
            result
        }
    }

    /// A dense plan's frame records, streamed through a staging buffer
    /// (`stamp_dense_streaming`), land where plain stores put them whatever the alignment
    /// of the batch's first record, in whole and partial chunks, and leave the records of
    /// slots outside the batch alone: bit for bit the history recorded entity by entity.
    #[test]
    fn dense_plans_stream_their_frame_records_at_any_alignment() {
        let four = rig(4);
        // Slot 4's record starts 16 bytes past a 32-byte boundary (36 * 4 = 144) when the
        // block is 32-byte aligned: the 16-byte pieces; slot 0's, the 32-byte ones.
        for (skip, count) in [(0, 32), (1, 37), (2, 16), (3, 21), (4, 40), (5, 3)] {
            for flat in [true, false] {
                let mut twins = TwinHistories::new(true, flat, true);
                let states = vec![EntityState::default(); count];
                record_dense_batch(&mut twins, &four, skip, states, 40);
                // The plan was made at the first tick and used at every later one.
                assert_eq!(twins.planned.plan.dense, Some(skip));
                assert_eq!(twins.planned.plan.used, (38, 0), "skip {skip}, flat {flat}");
            }
        }
    }

    /// Spawns `skip` slots that are never recorded, then one entity of `rig` per state (a
    /// dense batch starting at slot `skip`), and records ticks `1..end` of the batch
    /// (`wanderer_bones`, one record_all a tick) in both twins.
    fn record_dense_batch(
        twins: &mut TwinHistories,
        rig: &Arc<Rig>,
        skip: usize,
        states: Vec<EntityState>,
        end: u32,
    ) {
        for _ in 0..skip {
            twins.spawn(rig);
        }
        let batch: Vec<_> = states
            .into_iter()
            .map(|state| (twins.spawn(rig), state))
            .collect();
        for tick in 1..end {
            let bones: Vec<_> = (0..batch.len() as u32)
                .flat_map(|serial| wanderer_bones(serial, tick))
                .collect();
            twins
                .tick(tick, None, None, &batch, &bones)
                .expect("valid batch");
        }
    }

    /// A dense plan's leaves in the flat form, written a whole block of eight lanes at a
    /// time where eight entities of the batch are one block's lanes in order
    /// (`stamp_batch`), and one by one where they are not (slots before the batch take
    /// lanes, so its entities start mid-block) or the batch ends mid-block: bit for bit
    /// the history recorded entity by entity, lag-compensation marks included.
    #[test]
    fn dense_plans_write_whole_blocks_of_flat_leaves_only_where_the_lanes_line_up() {
        let four = rig(4);
        let builds: &[bool] = if super::super::detect_avx512vl() {
            &[false, true]
        } else {
            &[false]
        };
        for (skip, count) in [(0, 32), (3, 21), (8, 17), (5, 40), (1, 7), (16, 8)] {
            for (flat, &avx512) in [true, false]
                .into_iter()
                .flat_map(|flat| builds.iter().map(move |avx512| (flat, avx512)))
            {
                let mut twins = TwinHistories::new(false, flat, avx512);
                // In the flat form the batch starts at lane `skip`.
                let states = (0..count)
                    .map(|k| EntityState {
                        lag_compensated: k % 5 != 2,
                        user: k as u16,
                        ..EntityState::default()
                    })
                    .collect();
                record_dense_batch(&mut twins, &four, skip, states, 30);
                let context = format!("skip {skip}, count {count}, flat {flat}");
                assert_eq!(twins.planned.plan.dense, Some(skip), "{context}");
                assert_eq!(twins.planned.plan.used, (28, 0), "{context}");
            }
        }
    }

    /// A batch plan holds for the batch it was made from and nothing else: spawns,
    /// despawns, reordered and partial batches, an entity recorded before the batch or
    /// twice in it, a bad transform in the middle, a first scale: after every tick, the
    /// history is bit for bit the one recorded entity by entity.
    #[test]
    fn a_batch_plan_records_what_record_does_and_notices_every_change() {
        use crate::math::BoneTransform as Bone;
        let rigs = [16, 20, 4, 8].map(rig);
        // Both builds of the planned batch where the CPU runs both (see `planned_avx512`).
        let builds: &[bool] = if super::super::detect_avx512vl() {
            &[false, true]
        } else {
            &[false]
        };
        for (stream, flat, avx512) in [(false, true), (false, false), (true, true), (true, false)]
            .into_iter()
            .flat_map(|(stream, flat)| builds.iter().map(move |&avx512| (stream, flat, avx512)))
        {
            let mut twins = TwinHistories::new(stream, flat, avx512);
            assert_eq!(twins.planned.planned_avx512, avx512);
            let mut live: Vec<(crate::history::EntityId, usize)> = Vec::new();
            for k in 0..24 {
                // Rigs in runs (16, 16, 16, 20, 20, 4, 8, ...): segments of several entities.
                let r = [0, 0, 0, 1, 1, 2, 3][k % 7];
                live.push((twins.spawn(&rigs[r]), r));
            }
            let mut rng = Pcg64Mcg::seed_from_u64(0xba7c);
            let mut errors = 0;
            let mut previous = Vec::new();
            for tick in 1..=220_u32 {
                let phase = (tick / 10) % 10;
                // Which entities, in which order.
                let mut batch: Vec<(crate::history::EntityId, usize)> = live.clone();
                let mut refused = None;
                match phase {
                    2 => batch.swap(2, 17),
                    3 => batch.truncate(live.len() / 2),
                    4 => batch.reverse(),
                    _ => {}
                }
                if tick % 10 == 5 {
                    match phase {
                        5 => live.push((twins.spawn(&rigs[1]), 1)),
                        6 if live.len() > 12 => {
                            let (id, _) = live.remove(rng.random_range(0..live.len()));
                            twins.despawn(id);
                            batch = live.clone();
                            // The batch the plan was made from, despawned entity included.
                            refused = Some((id, previous.clone()));
                        }
                        _ => {}
                    }
                }
                let states: Vec<_> = batch
                    .iter()
                    .enumerate()
                    .map(|(k, &(id, _))| {
                        let state = EntityState {
                            lag_compensated: !(k + tick as usize).is_multiple_of(13),
                            user: k as u16,
                            ..EntityState::default()
                        };
                        (id, state)
                    })
                    .collect();
                let mut bones: Vec<Bone> = Vec::new();
                for &(_, r) in &batch {
                    for _ in 0..rigs[r].bone_count() {
                        bones.push(random_bone(&mut rng, false));
                    }
                }
                let mut batch_states = states;
                let mut before = None;
                match tick % 10 {
                    // A bad transform in the middle of the batch.
                    3 => {
                        let at = bones.len() / 2 + 1;
                        bones[at].translation.y = f32::NAN;
                    }
                    // A rotation the fast check doubts and the precise one accepts.
                    // (Unit scale: a scale lane would end the plans.)
                    4 => bones[7] = random_bone(&mut rng, true).with_scale(glam::Vec3::ONE),
                    // An entity recorded alone first.
                    6 => before = Some(batch_states[3].0),
                    // An entity twice in the batch (its bones twice too).
                    8 if batch_states.len() > 4 => {
                        let (id, state) = batch_states[4];
                        let n = usize::from(rigs[batch[4].1].bone_count());
                        let first: usize = batch[..4]
                            .iter()
                            .map(|&(_, r)| usize::from(rigs[r].bone_count()))
                            .sum();
                        let again: Vec<Bone> = bones[first..first + n].to_vec();
                        batch_states.push((id, state));
                        bones.extend(again);
                    }
                    _ => {}
                }
                // A first scale, late (no plan until the next spawn or despawn; the scale
                // lane's slot is written again a window later).
                if tick == 187 {
                    bones[20].scale = glam::Vec3::splat(1.5);
                }
                let alone: Vec<Bone>;
                let before = match before {
                    Some(id) => {
                        let r = live.iter().find(|(l, _)| *l == id).expect("live").1;
                        alone = (0..rigs[r].bone_count())
                            .map(|_| random_bone(&mut rng, false))
                            .collect();
                        Some((id, alone.as_slice()))
                    }
                    None => None,
                };
                let refused = refused
                    .as_ref()
                    .map(|(gone, batch)| (batch.as_slice(), *gone));
                errors += usize::from(
                    twins
                        .tick(tick, refused, before, &batch_states, &bones)
                        .is_err(),
                );
                previous = batch_states;
            }
            let (used, fell_back) = twins.planned.plan.used;
            if Kernel::detect() == Kernel::Avx2 {
                assert!(
                    used > 80 && fell_back > 10,
                    "{used} planned, {fell_back} given back"
                );
            }
            assert!(errors > 40, "{errors} batches with an error");
            assert!(
                twins.planned.slots.iter().any(|s| !s.scales.is_empty()),
                "a scale lane was made"
            );
        }
    }

    /// Where entity `serial` stands at `tick`: every entity crosses the arena at its own
    /// speed (up to 0.8 m a tick), so a tree built a few ticks ago is a poor fit for the
    /// newest frames and the two trees differ.
    fn wanderer(serial: u32, tick: u32) -> Vec3 {
        let s = serial as f32;
        let base = Vec3::new((s * 7.3) % 30.0, (s * 0.37) % 2.0, (s * 3.1) % 30.0);
        let velocity = Vec3::new((s * 1.7).sin(), 0.0, (s * 2.3).cos()) * 0.8;
        base + velocity * tick as f32
    }

    /// The four bones of entity `serial` at `tick`: stacked 0.3 m apart on its wanderer path.
    fn wanderer_bones(serial: u32, tick: u32) -> Vec<crate::math::BoneTransform> {
        let at = wanderer(serial, tick);
        (0..4)
            .map(|b| {
                let mut t = crate::math::BoneTransform::IDENTITY;
                t.translation = at + Vec3::Y * (0.3 * b as f32);
                t
            })
            .collect()
    }

    /// A 60 Hz history with a 0.1 s window whose entity trees take the `flat` form or the
    /// tree form whatever their size, and `count` entities of a four-bone rig spawned into
    /// it, each with its wanderer serial (0 up).
    fn wandering_history(
        flat: bool,
        count: u32,
    ) -> (History, Arc<Rig>, Vec<(super::super::EntityId, u32)>) {
        let mut history = History::new(HistoryConfig {
            tick_rate: 60.0,
            max_rewind: 0.1,
        })
        .expect("config");
        history.tree = crate::bvh::TemporalBvh::shaped(flat);
        history.old_tree = crate::bvh::TemporalBvh::shaped(flat);
        let rig = rig(4);
        let live = (0..count)
            .map(|serial| (history.spawn(Arc::clone(&rig)), serial))
            .collect();
        (history, rig, live)
    }

    /// The boxes a tick leaves in every frame the current tree answers for are the ones a
    /// refit from scratch gives (a cleared frame, each kept entity's recorded box or the
    /// empty box, the internal nodes from the leaves up, each span widened by the next
    /// frame), whatever the ring slot held before: with entities despawned (kept until the
    /// next rebuild), left out of a tick, spawned (inserted and into reused slots), and
    /// rebuilds (which give the new tree only its newest frames), in both forms.
    #[test]
    fn every_frame_a_tree_answers_for_is_its_refit_from_the_records() {
        use crate::bvh::NodeBox;
        for flat in [false, true] {
            let (mut history, rig, mut live) = wandering_history(flat, 40);
            let capacity = history.capacity() as u32;
            let mut serial = 40_u32;
            let mut rng = Pcg64Mcg::seed_from_u64(0xf1a7);
            for tick in 1..=12 * capacity {
                let (spawns, despawns) = match (tick / capacity) % 3 {
                    _ if tick == 1 => (0, 0),
                    0 => (0, 0),
                    1 => (2, 1),
                    _ if rng.random_range(0..4) != 0 => (0, 0),
                    _ if rng.random_bool(0.5) => (0, 1),
                    _ => (1, 0),
                };
                for _ in 0..despawns {
                    if live.len() > 24 {
                        let k = rng.random_range(0..live.len());
                        history.despawn(live.swap_remove(k).0).expect("live");
                    }
                }
                for _ in 0..spawns {
                    live.push((history.spawn(Arc::clone(&rig)), serial));
                    serial += 1;
                }
                let mut frame = history
                    .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                    .expect("frame");
                for &(id, serial) in &live {
                    // Now and then an entity is left out of a tick.
                    if rng.random_range(0..30) == 0 {
                        continue;
                    }
                    frame
                        .record(id, &wanderer_bones(serial, tick), EntityState::default())
                        .expect("valid");
                }
                drop(frame);
                let newest = history.newest_seq;
                let from = history.tree_from.max(history.oldest_seq());
                let mut reference = history.tree.clone();
                for seq in from..=newest {
                    let ring = history.ring(seq);
                    reference.clear_frame(ring);
                    let previous = (seq > from).then(|| history.ring(seq - 1));
                    reference.refit_frame(ring, previous, |i| {
                        let i = i as usize;
                        if history.recorded_at(i, seq, ring) {
                            let f = history.entity_frame(i, ring);
                            NodeBox::new(f.bounds_min, f.bounds_max)
                        } else {
                            NodeBox::EMPTY
                        }
                    });
                }
                for seq in from..=newest {
                    let ring = history.ring(seq);
                    assert_eq!(
                        history.tree.frame_span_bits(ring),
                        reference.frame_span_bits(ring),
                        "flat {flat}, tick {tick}, frame {seq} of {from}..={newest}"
                    );
                }
            }
        }
    }

    /// Every kind of query, at every bracket the ring holds (each frame, between adjacent
    /// frames, and tick pairs that skip up to three frames), answered through the entity
    /// trees the same as by walking every entity (debug mode, no tree): while entities
    /// spawn into reused slots, despawn, and the tree is rebuilt once a window, right after
    /// another rebuild, and on every tick for a while. Queries land on the current tree, on
    /// the older one (down to its oldest frame) and across the rebuild.
    #[test]
    fn versioned_trees_answer_every_bracket_as_walking_every_entity_does() {
        use crate::time::{RewindTarget, WindowPolicy};
        use crate::{QueryLog, Ray};
        for flat in [false, true] {
            let (mut history, rig, mut live) = wandering_history(flat, 24);
            let capacity = history.capacity() as u32;
            let mut serial = 24_u32;
            let mut rng = Pcg64Mcg::seed_from_u64(0x7ee5);
            // Queries through the current tree, the older one, across a rebuild; rebuilds
            // with the older tree still answering; handles that reused a slot.
            let (mut current, mut older, mut across, mut kept_older, mut reused) = (0, 0, 0, 0, 0);
            let mut inserted = 0;
            let (mut hits, mut overlaps) = (Vec::new(), Vec::new());
            let (mut all_hits, mut all_overlaps) = (0, 0);
            for tick in 1..=12 * capacity {
                // Churn: quiet for a window; then an entity replaced on every tick (more
                // spawns than a small tree has spare nodes: rebuilds while the older tree
                // still answers); then a spawn or a despawn every few ticks (inserted).
                let (spawns, despawns) = match (tick / capacity) % 4 {
                    _ if tick == 1 => (0, 0),
                    0 => (0, 0),
                    1 => (2, 1),
                    _ if rng.random_range(0..5) != 0 => (0, 0),
                    _ if rng.random_bool(0.5) => (0, 1),
                    _ => (1, 0),
                };
                for _ in 0..despawns {
                    if live.len() > 16 {
                        let k = rng.random_range(0..live.len());
                        history.despawn(live.swap_remove(k).0).expect("live");
                    }
                }
                for _ in 0..spawns {
                    let id = history.spawn(Arc::clone(&rig));
                    reused += usize::from(id.generation() > 0);
                    live.push((id, serial));
                    serial += 1;
                }
                let (tree_from, oldest) = (history.tree_from, history.oldest_seq());
                let linked = history.tree.linked();
                let mut frame = history
                    .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                    .expect("frame");
                for &(id, serial) in &live {
                    frame
                        .record(id, &wanderer_bones(serial, tick), EntityState::default())
                        .expect("valid");
                }
                drop(frame);
                if history.frames_since_build == 0 && history.tree_from == tree_from {
                    assert!(tree_from > oldest, "the older tree was still needed");
                    kept_older += 1;
                }
                inserted +=
                    usize::from(history.frames_since_build > 0 && history.tree.linked() > linked);
                let (first, newest) = (history.oldest_seq(), history.newest_seq);
                let time = |seq: u64| history.meta(seq).time;
                let mut targets = Vec::new();
                for seq in first..=newest {
                    targets.push(RewindTarget::Time(time(seq)));
                    if seq < newest {
                        targets.push(RewindTarget::Time(0.5 * (time(seq) + time(seq + 1))));
                    }
                    for skip in 2..=4 {
                        if seq + skip <= newest {
                            targets.push(RewindTarget::Ticks {
                                from: history.meta(seq).tick,
                                to: history.meta(seq + skip).tick,
                                fraction: rng.random_range(0.05..0.95),
                            });
                        }
                    }
                }
                for target in targets {
                    // The ring's oldest frame can be just outside the window.
                    let Ok(bracket) = history.bracket(target, WindowPolicy::Reject) else {
                        continue;
                    };
                    match history.entity_tree(&bracket) {
                        Some(tree) if std::ptr::eq(tree, &history.tree) => current += 1,
                        Some(_) => older += 1,
                        None => across += 1,
                    }
                    // A ray at a live entity (where it stands at the target, if it was
                    // recorded then), from up to 12 m away, and a sphere around it.
                    let (id, serial) = live[rng.random_range(0..live.len())];
                    let aim = match history
                        .entity_at(id, target, WindowPolicy::Reject)
                        .expect("known")
                    {
                        Some(at) => at.bone(1).expect("bone").translation,
                        None => wanderer(serial, tick),
                    };
                    let from = aim
                        + Vec3::new(
                            rng.random_range(-12.0..12.0),
                            rng.random_range(-1.0..1.0),
                            rng.random_range(-12.0..12.0),
                        );
                    let Ok(ray) = Ray::between(from, aim + (aim - from) * 0.5) else {
                        continue;
                    };
                    let radius = rng.random_range(0.0..0.4);
                    let log = || QueryLog::default();
                    let tree_ray = history.query(target).sweep(&ray, radius);
                    let walk_ray = history.query(target).observe(log()).sweep(&ray, radius);
                    assert_eq!(
                        format!("{tree_ray:?}"),
                        format!("{walk_ray:?}"),
                        "{target:?}"
                    );
                    history
                        .query(target)
                        .ray_all(&ray, &mut hits)
                        .expect("resolves");
                    let tree_all = format!("{hits:?}");
                    all_hits += hits.len();
                    history
                        .query(target)
                        .observe(log())
                        .ray_all(&ray, &mut hits)
                        .expect("resolves");
                    assert_eq!(tree_all, format!("{hits:?}"), "{target:?}");
                    history
                        .query(target)
                        .overlap_sphere(aim, 1.5, &mut overlaps)
                        .expect("resolves");
                    let tree_overlaps = format!("{overlaps:?}");
                    all_overlaps += overlaps.len();
                    history
                        .query(target)
                        .observe(log())
                        .overlap_sphere(aim, 1.5, &mut overlaps)
                        .expect("resolves");
                    assert_eq!(tree_overlaps, format!("{overlaps:?}"), "{target:?}");
                }
            }
            let counts = (current, older, across, kept_older, reused, inserted);
            assert!(
                current > 1000
                    && older > 100
                    && across > 20
                    && kept_older > 5
                    && reused > 3
                    && (flat || inserted > 5),
                "flat {flat}: {counts:?}"
            );
            assert!(
                all_hits > 500 && all_overlaps > 500,
                "{all_hits} {all_overlaps}"
            );
        }
    }
}
