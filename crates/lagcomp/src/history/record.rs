//! Writing one tick into the history.

use glam::Vec3;

use super::{
    EntityFrame, EntityId, EntityState, FrameMeta, History, Life, RecordError, StoredPose,
    WINDOW_BUCKETS,
};
use crate::math::{Aabb, BoneTransform};
use crate::time::Tick;

/// Server times beyond this many seconds are treated as corrupt.
const MAX_TIME: f64 = 1.0e12;

impl History {
    /// Starts recording the frame of `tick` at server `time`. Record each entity into the
    /// returned [`FrameRecorder`]; the frame is complete when it is dropped or
    /// [`FrameRecorder::finish`]ed. Entities not recorded are absent from this frame.
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
        let ring = self.ring(seq);
        self.frames[ring] = FrameMeta { seq, tick, time };
        self.newest_seq = seq;
        self.retire_aged_out();
        Ok(FrameRecorder { history: self, seq })
    }

    /// Frees despawned slots whose newest frame is no longer in the ring.
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
    }

    /// Rebuilds or refits the broadphase after a frame.
    fn end_frame(&mut self) {
        self.frames_since_build += 1;
        // Refitting keeps the topology of the last build; once every entity has moved a
        // whole window since, a rebuild restores tight subtrees.
        if self.bvh_stale || self.frames_since_build >= self.capacity {
            let slots = &self.slots;
            self.bvh.build(
                (0..slots.len() as u32).filter(|&i| slots[i as usize].life != Life::Free),
                &self.window_bounds,
            );
            self.bvh_stale = false;
            self.frames_since_build = 0;
        } else {
            self.bvh.refit(&self.window_bounds);
        }
    }
}

/// One frame being recorded. Finishing it (drop, or [`FrameRecorder::finish`]) updates the
/// broadphase.
#[derive(Debug)]
pub struct FrameRecorder<'h> {
    history: &'h mut History,
    seq: u64,
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
    /// All transforms are checked before anything is written, so a rejected record leaves
    /// the entity's history exactly as it was.
    ///
    /// # Errors
    /// [`RecordError`] for a bad handle, a despawned entity, a second record in the same
    /// frame, a wrong bone count, or an invalid transform.
    pub fn record(
        &mut self,
        id: EntityId,
        bones: &[BoneTransform],
        state: EntityState,
    ) -> Result<(), RecordError> {
        let history = &mut *self.history;
        let index = history.active_index(id)?;
        let seq = self.seq;
        let ring = history.ring(seq);
        let capacity = history.capacity;
        let epoch_len = history.epoch_len;
        let slot = &mut history.slots[index];
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
        let mut unit_scale = true;
        for (bone, transform) in bones.iter().enumerate() {
            transform
                .validate()
                .map_err(|error| RecordError::Transform {
                    entity: id,
                    bone: bone as u16,
                    error,
                })?;
            unit_scale &= transform.scale == Vec3::ONE;
        }

        if !unit_scale && slot.scales.is_empty() {
            // First non-unit scale for this entity: give it a scale lane. Earlier frames
            // were all unit scale, which is what the lane starts with.
            slot.scales.resize(capacity * slot.bone_count, [1.0; 3]);
        }
        let rig = slot.rig.as_deref().expect("active slots have a rig");
        let reach = rig.bone_reach();
        let base = ring * slot.bone_count;
        let poses = &mut slot.poses[base..base + slot.bone_count];
        let mut lo = Vec3::INFINITY;
        let mut hi = Vec3::NEG_INFINITY;
        for ((stored, transform), &reach) in poses.iter_mut().zip(bones).zip(reach) {
            *stored = StoredPose {
                translation: transform.translation.to_array(),
                rotation: transform.rotation.to_array(),
            };
            let r = Vec3::splat(reach * transform.scale.max_element());
            lo = lo.min(transform.translation - r);
            hi = hi.max(transform.translation + r);
        }
        if !slot.scales.is_empty() {
            let scales = &mut slot.scales[base..base + slot.bone_count];
            for (stored, transform) in scales.iter_mut().zip(bones) {
                *stored = transform.scale.to_array();
            }
        }
        let bounds = Aabb::new(lo, hi).padded();
        let (lo, hi) = (bounds.min, bounds.max);
        slot.frames[ring] = EntityFrame {
            seq: seq as u32,
            layers: state.layers,
            user: state.user,
            flags: state.to_flags(),
            bounds_min: lo.to_array(),
            bounds_max: hi.to_array(),
        };
        slot.last_seq = seq;
        if slot.first_seq == 0 {
            slot.first_seq = seq;
        }

        // Rolling window bounds: bucket `epoch % WINDOW_BUCKETS` collects the frames of
        // one epoch; the union of the last WINDOW_BUCKETS epochs covers the whole ring.
        let epoch = seq / epoch_len;
        let bucket = (epoch % WINDOW_BUCKETS as u64) as usize;
        if slot.bucket_epochs[bucket] == epoch {
            slot.buckets[bucket] = slot.buckets[bucket].union(&bounds);
        } else {
            slot.buckets[bucket] = bounds;
            slot.bucket_epochs[bucket] = epoch;
        }
        let mut window = Aabb::EMPTY;
        for (aabb, &e) in slot.buckets.iter().zip(&slot.bucket_epochs) {
            if e + WINDOW_BUCKETS as u64 > epoch {
                window = window.union(aabb);
            }
        }
        history.window_bounds[index] = window;
        Ok(())
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
