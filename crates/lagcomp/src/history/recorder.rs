//! Recording a tick: [`History::begin_frame`], then one [`FrameRecorder::record`] per
//! entity or one [`FrameRecorder::record_all`] for the whole tick, then
//! [`FrameRecorder::finish`] (or drop). The per-entity work is in `stamp`, batch plans in
//! `plan`, the end of a frame in `frame`.

use super::bone_pass::BonePassFn;
use super::plan::{Fresh, RecordPlanned};
use super::stamp::{
    ANY_FORM, FLAT_FORM, FrameSlot, TREE_FORM, keep_first, mark_uncompensated, record_entity,
};
use super::{EntityError, EntityId, EntityState, FrameMeta, History};
use crate::math::{BoneTransform, TransformError};
use crate::simd::{Isa, KernelBody};
use crate::time::Tick;

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
    /// A velocity ([`FrameRecorder::record_velocity`]) with a component that is NaN,
    /// infinite or beyond [`MAX_COORDINATE`](crate::math::MAX_COORDINATE) units per second.
    #[error("{entity} velocity {velocity} is not a finite velocity")]
    InvalidVelocity {
        /// The entity.
        entity: EntityId,
        /// The velocity offered, units per second.
        velocity: glam::Vec3,
    },
}

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
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3, Zone};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// let hull = Shape::cuboid(Vec3::new(1.0, 0.5, 2.0)); // half extents, metres
    /// let drone = history.spawn(Arc::new(Rig::rigid(vec![Hitbox::new(0, "hull", Zone::Custom(1), 0, hull)])?));
    /// // Every server tick, at the server's clock in seconds: the drone climbs 5 cm a tick.
    /// for tick in 1..=3_u32 {
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     let transform = BoneTransform::from_translation(Vec3::Y * 0.05 * tick as f32);
    ///     frame.record_rigid(drone, transform, EntityState::default())?;
    ///     frame.finish(); // or drop it: the frame is then complete
    /// }
    /// assert_eq!(history.newest_tick(), Some(Tick(3)));
    /// // Ticks and times only go forward.
    /// assert!(history.begin_frame(Tick(3), 4.0 / 64.0).is_err());
    /// # Ok(())
    /// # }
    /// ```
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
}

/// One frame being recorded. Finishing it (drop, or [`FrameRecorder::finish`]) updates the
/// broadphase.
#[derive(Debug)]
pub struct FrameRecorder<'h> {
    pub(super) history: &'h mut History,
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
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, RewindTarget, Shape, Tick, Vec3, Zone};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let humanoid = Arc::new(Rig::new(4, vec![
    /// #     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
    /// #     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
    /// #     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)),
    /// # ])?);
    /// # // Pelvis, chest, head and eye bones of a player standing at `feet`, in metres.
    /// # let pose = |feet: Vec3| [0.95, 1.35, 1.7, 1.68].map(|y| BoneTransform::from_translation(feet + Vec3::Y * y));
    /// let mut history = History::new(HistoryConfig::default())?;
    /// let player = history.spawn(humanoid); // bones: pelvis, chest, head, eye
    /// let mut frame = history.begin_frame(Tick(1), 1.0 / 64.0)?;
    /// // One world transform per bone of the rig, in bone order.
    /// let bones: [BoneTransform; 4] = pose(Vec3::new(3.0, 0.0, -2.0));
    /// frame.record(player, &bones, EntityState::default())?;
    /// // A second record of the same entity in one frame, or a wrong bone count, is refused.
    /// assert!(frame.record(player, &bones, EntityState::default()).is_err());
    /// frame.finish();
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// PERF: one function per entity compiled for the history's kernels, the bone pass
    /// inlined into it, instead of a call into the pass, whose arguments, result and
    /// spilled registers cost about 40 instructions per entity.
    #[inline]
    pub fn record(
        &mut self,
        id: EntityId,
        bones: &[BoneTransform],
        state: EntityState,
    ) -> Result<(), RecordError> {
        self.fresh = false;
        let kernels = self.history.kernels;
        kernels.run(RecordOne {
            recorder: self,
            id,
            bones,
            state,
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
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Obb, Quat, Ray, RewindTarget, Rig, Shape, Tick, Vec3, WindowPolicy, Zone};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let humanoid = Arc::new(Rig::new(4, vec![
    /// #     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
    /// #     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
    /// #     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)),
    /// # ])?);
    /// # // Pelvis, chest, head and eye bones of a player standing at `feet`, in metres.
    /// # let pose = |feet: Vec3| [0.95, 1.35, 1.7, 1.68].map(|y| BoneTransform::from_translation(feet + Vec3::Y * y));
    /// use lagcomp::RecordError;
    ///
    /// let mut history = History::new(HistoryConfig::default())?;
    /// let players: Vec<_> = (0..3).map(|_| history.spawn(humanoid.clone())).collect();
    /// // The server keeps every player's bones in one buffer, player after player, 2 m apart.
    /// let entities: Vec<_> = players.iter().map(|&id| (id, EntityState::default())).collect();
    /// let bones: Vec<BoneTransform> = (0..3).flat_map(|k| pose(Vec3::X * 2.0 * k as f32)).collect();
    /// for tick in 1..=4_u32 {
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     frame.record_all(&entities, &bones)?;
    ///     frame.finish();
    /// }
    /// // A buffer that is not the rigs' bone total records nothing.
    /// let mut frame = history.begin_frame(Tick(5), 5.0 / 64.0)?;
    /// let short = frame.record_all(&entities, &bones[1..]);
    /// assert!(matches!(short, Err(RecordError::BatchBones { expected: 12, got: 11 })));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// PERF: a batch recorded whole is remembered (a batch plan): the same handles in the
    /// same order at the next tick, with no entity spawned or despawned since, are recorded
    /// without looking their slots up, the bone pass runs over the batch's rows segment by
    /// segment, and the checks are decided once for the batch. Same stored bits, same
    /// errors.
    pub fn record_all(
        &mut self,
        entities: &[(EntityId, EntityState)],
        bones: &[BoneTransform],
    ) -> Result<(), RecordError> {
        let fresh = std::mem::replace(&mut self.fresh, false);
        let kernels = self.history.kernels;
        let holds = self.history.plan_fits(entities, bones.len());
        if let Some(holds) = holds
            && fresh
        {
            let planned = kernels.run(RecordPlanned {
                history: self.history,
                seq: self.seq,
                entities,
                bones,
                _holds: holds,
                // SAFETY: `fresh`: nothing was recorded into this frame before this call.
                _fresh: unsafe { Fresh::new() },
            });
            if planned {
                return Ok(());
            }
        }
        self.history.check_batch(entities, bones.len())?;
        let result = kernels.run(RecordAll {
            recorder: self,
            entities,
            bones,
        });
        if result.is_ok() && holds.is_none() {
            self.history.make_plan(entities, bones.len());
        }
        result
    }

    /// The body of [`FrameRecorder::record_all`] once the batch is checked, for a frame whose
    /// broadphase leaves are in the form `FORM`.
    ///
    /// # Safety
    /// `History::check_batch` accepted `entities` and `bones.len()`: every handle's index is
    /// an active slot, and the entities' bone counts add up to `bones.len()`.
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

/// [`FrameRecorder::record`] compiled for the history's kernels.
struct RecordOne<'r, 'h, 'a> {
    recorder: &'r mut FrameRecorder<'h>,
    id: EntityId,
    bones: &'a [BoneTransform],
    state: EntityState,
}

impl KernelBody for RecordOne<'_, '_, '_> {
    type Output = Result<(), RecordError>;

    #[inline(always)]
    fn run<K: Isa>(self, isa: K) -> Self::Output {
        let pass = move |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
            // SAFETY: plain stores: nothing to promise.
            unsafe { isa.bone_pass::<false>(bones, reach, translations, rotations) }
        };
        self.recorder
            .record_with(self.id, self.bones, self.state, pass)
    }
}

/// [`FrameRecorder::record_all`] of a checked batch, compiled for the history's kernels.
struct RecordAll<'r, 'h, 'a> {
    recorder: &'r mut FrameRecorder<'h>,
    entities: &'a [(EntityId, EntityState)],
    bones: &'a [BoneTransform],
}

impl KernelBody for RecordAll<'_, '_, '_> {
    type Output = Result<(), RecordError>;

    #[inline(always)]
    fn run<K: Isa>(self, isa: K) -> Self::Output {
        let Self {
            recorder,
            entities,
            bones,
        } = self;
        // PERF: one closure per loop: a closure called from two loops was not inlined (a
        // call per entity, about 20 instructions more).
        let flat_pass = move |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
            // SAFETY: plain stores: nothing to promise.
            unsafe { isa.bone_pass::<false>(bones, reach, translations, rotations) }
        };
        let tree_pass = move |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
            // SAFETY: as above.
            unsafe { isa.bone_pass::<false>(bones, reach, translations, rotations) }
        };
        // Streaming: rows of four bones or more start 16-byte aligned in the translations
        // and 64-byte aligned in the rotations (`BoneRanges` aligns their places to four,
        // `Lanes::fit` the blocks, and the lanes start on a cache line); the fence is below.
        let flat_streaming =
            move |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
                // SAFETY: the alignments and the fence just said.
                unsafe { isa.bone_pass::<true>(bones, reach, translations, rotations) }
            };
        let tree_streaming =
            move |bones: &_, reach: &_, translations: &mut _, rotations: &mut _| {
                // SAFETY: as above.
                unsafe { isa.bone_pass::<true>(bones, reach, translations, rotations) }
            };
        let flat = recorder.history.tree.keeps_its_shape();
        let stream = recorder.history.lanes.stream;
        // SAFETY: `record_all` runs this only on a batch `check_batch` accepted.
        let result = unsafe {
            match (flat, stream) {
                (true, false) => recorder.record_all_with::<FLAT_FORM>(entities, bones, flat_pass),
                (false, false) => recorder.record_all_with::<TREE_FORM>(entities, bones, tree_pass),
                (true, true) => {
                    recorder.record_all_with::<FLAT_FORM>(entities, bones, flat_streaming)
                }
                (false, true) => {
                    recorder.record_all_with::<TREE_FORM>(entities, bones, tree_streaming)
                }
            }
        };
        if stream {
            isa.fence();
        }
        result
    }
}
