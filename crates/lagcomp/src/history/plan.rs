//! Batch plans: the batch a server records whole every tick, remembered so that the same
//! batch at the next tick is recorded without looking its slots up, its bone pass run
//! segment by segment over rows that follow one another, and its checks decided once.
//! The same plans run on every CPU; only the kernels differ.

use std::sync::Arc;

use glam::Vec3A;

use super::stamp::{
    DenseBatch, FLAT_FORM, FrameSlot, RECORD_WORDS_LAYOUT, StampDenseStreaming, TREE_FORM,
    stamp_batch,
};
use super::{EntityId, EntityState, History, Life};
use crate::math::BoneTransform;
use crate::simd::{Isa, KernelBody};

/// The last batch [`FrameRecorder::record_all`](super::FrameRecorder::record_all) recorded whole, kept so that the same batch
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
pub(crate) struct BatchPlan {
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
    /// `StampDenseStreaming`).
    pub(super) dense: Option<usize>,
    /// Tests: batches recorded by the plan, and batches it gave back to the general way.
    #[cfg(test)]
    pub(super) used: (usize, usize),
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

/// Proof that the history's batch plan holds for a batch: made only by
/// [`History::plan_fits`], from the same handles in the same order and the same bone total
/// as the plan's, under the plan's layout epoch. The plan's segments then name active
/// slots with rigs of `4 * groups` bones, rows inside the lanes' blocks (one translation
/// to spare after each), the batch's bones add up to `bones`, and `bounds` has one entry
/// per entity.
#[derive(Debug, Clone, Copy)]
pub(super) struct PlanHolds(());

impl History {
    /// Whether the batch plan holds and is for this batch: the same handles in the same
    /// order, and the same bone total (with the proof of it).
    ///
    /// PERF: one comparison per handle, where `check_batch` looks each slot up (about 15
    /// instructions an entity).
    #[inline]
    pub(super) fn plan_fits(
        &self,
        entities: &[(EntityId, EntityState)],
        bones: usize,
    ) -> Option<PlanHolds> {
        let plan = &self.plan;
        (plan.ready
            && plan.epoch == self.layout_epoch
            && plan.bones == bones
            && plan.ids.len() == entities.len()
            && entities
                .iter()
                .zip(&plan.ids)
                .fold(0, |differ, ((id, _), planned)| {
                    differ | (id.to_bits() ^ planned.to_bits())
                })
                == 0)
            .then_some(PlanHolds(()))
    }

    /// Makes the batch plan from a batch just recorded whole (every entity of it recorded
    /// in the newest frame), if the batch can have one (see [`BatchPlan`]); otherwise
    /// notes that none is to be tried until the epoch changes.
    #[cold]
    #[inline(never)]
    pub(super) fn make_plan(&mut self, entities: &[(EntityId, EntityState)], bones: usize) {
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

/// [`FrameRecorder::record_all`](super::FrameRecorder::record_all) of the batch the
/// history's plan was made from, in a fresh frame: the handles are the plan's, so each is
/// active, none is repeated, and the bones go to the plan's segments of rows. First every
/// bone (rows written, each entity's bounds kept, the checks accumulated over the batch);
/// then, if every bone passed, every entity's frame record and leaf. Returns `false` when
/// some bone failed a fast check: nothing is then stamped, and the caller records the
/// batch the general way, which writes the same rows again and finds the culprits.
///
/// Runs its AVX-512 build where the CPU has one ([`KernelBody::WIDE`]).
pub(super) struct RecordPlanned<'a> {
    pub(super) history: &'a mut History,
    pub(super) seq: u64,
    pub(super) entities: &'a [(EntityId, EntityState)],
    pub(super) bones: &'a [BoneTransform],
    /// Proof that the plan holds for `entities` and `bones`.
    pub(super) _holds: PlanHolds,
    /// Proof that nothing has been recorded into this frame yet.
    pub(super) _fresh: Fresh,
}

/// Proof that nothing has been recorded into the frame yet (made only by the recorder,
/// from its `fresh` flag).
#[derive(Debug, Clone, Copy)]
pub(super) struct Fresh(());

impl Fresh {
    /// # Safety
    /// Nothing has been recorded into the frame being recorded.
    pub(super) unsafe fn new() -> Self {
        Self(())
    }
}

impl KernelBody for RecordPlanned<'_> {
    type Output = bool;
    const WIDE: bool = true;

    #[inline(always)]
    fn run<K: Isa>(self, isa: K) -> bool {
        let Self {
            history,
            seq,
            entities,
            bones,
            _holds,
            _fresh,
        } = self;
        let at = FrameSlot::of(history, seq);
        let kernels = history.kernels;
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
                lanes.translations.as_mut_ptr().add(at.rows),
                lanes.rotations.as_mut_ptr().add(at.rows),
            )
        };
        let mut checks = isa.batch_checks();
        let mut src = bones.as_ptr();
        let mut first = 0;
        for segment in &plan.segments {
            let (count, groups) = (segment.count as usize, segment.groups as usize);
            let place = segment.place as usize;
            debug_assert!(slots[segment.slot as usize].life == Life::Active);
            // SAFETY: `_holds`: the plan holds (nothing spawned, despawned or laid out since
            // it was made), so its segments' slots are active, with rigs of `4 * groups`
            // bones (one splatted reach each); its segments' places are the entities' rows
            // (inside the block, one translation to spare after it, see `record_entity`),
            // its entities' bones add up to `bones.len()` in order, and its bounds hold one
            // entry per entity. Rows of four bones or more start aligned for the streaming
            // stores (`BoneRanges`, `Lanes::fit`), which are fenced below.
            unsafe {
                let reach = slots
                    .get_unchecked(segment.slot as usize)
                    .rig
                    .as_deref()
                    .unwrap_unchecked()
                    .bone_reach_splat()
                    .as_ptr();
                let t_out = t_base.add(place);
                let r_out = r_base.add(place);
                let bounds = plan.bounds.get_unchecked_mut(first..first + count);
                let end = t_out.add(4 * groups * count).cast::<f32>();
                // Streamed rows do not spill (see `Isa::bone_segment`).
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
                        isa.bone_segment::<false, 4>(src, reach, t_out, r_out, 4, bounds, checks)
                    }
                    (false, 5) => {
                        isa.bone_segment::<false, 0>(src, reach, t_out, r_out, 5, bounds, checks)
                    }
                    (false, _) => isa
                        .bone_segment::<false, 0>(src, reach, t_out, r_out, groups, bounds, checks),
                    (true, 4) => {
                        isa.bone_segment::<true, 4>(src, reach, t_out, r_out, 4, bounds, checks)
                    }
                    (true, 5) => {
                        isa.bone_segment::<true, 5>(src, reach, t_out, r_out, 5, bounds, checks)
                    }
                    (true, _) => isa
                        .bone_segment::<true, 0>(src, reach, t_out, r_out, groups, bounds, checks),
                }
                if restore {
                    end.write(spilled);
                }
                src = src.add(count * groups * 4);
            }
            first += count;
        }
        if stream {
            isa.fence();
        }
        if !isa.batch_checks_pass(&checks) {
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
            kernels.run(StampDenseStreaming {
                slots,
                lanes,
                leaves: &mut leaves,
                uncompensated,
                at,
                first,
                entities,
                bounds,
                // SAFETY: the plan holds (`_holds`) and is dense: every handle names an
                // active slot, the `k`-th slot `first + k`; `at` is the frame being
                // recorded; the layout was just checked.
                _holds: unsafe { DenseBatch::new() },
            });
            // The frame records were streamed: fenced as the rows were.
            isa.fence();
            return true;
        }
        // SAFETY: as above, the plan holds: every handle names an active slot.
        unsafe {
            if leaves.is_flat() {
                stamp_batch::<K, FLAT_FORM>(
                    isa,
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
                stamp_batch::<K, TREE_FORM>(
                    isa,
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
}
