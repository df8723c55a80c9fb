//! Each entity's linear velocity per frame, as the server sent it in that tick's snapshot:
//! recording it ([`FrameRecorder::record_velocity`]) and reading it back
//! ([`History::velocity_in`]). A client that runs out of snapshots extrapolates its last one
//! with this velocity; the server rebuilds that picture from it
//! ([`History::entity_extrapolated`](crate::History::entity_extrapolated)).

use glam::Vec3;

use super::{EntityId, EntityVelocity, FrameRecorder, History, RecordError};
use crate::math::MAX_COORDINATE;
use crate::time::Tick;

impl FrameRecorder<'_> {
    /// Records the entity's linear velocity in this frame, units per second: the value the
    /// server sends in this tick's snapshot (what clients extrapolate with), bit for bit.
    /// Recording it again in the same frame replaces it. An entity whose velocity is not
    /// recorded in a frame is extrapolated from that frame as standing still.
    ///
    /// It may be recorded before or after the entity's bones; it is looked up only in
    /// frames the entity's bones were recorded in.
    ///
    /// # Errors
    /// [`RecordError::Entity`] for a bad or despawned handle;
    /// [`RecordError::InvalidVelocity`] for a component that is NaN, infinite or beyond
    /// [`MAX_COORDINATE`] per second. Nothing is changed.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3, Zone};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rig = Arc::new(Rig::new(1, vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::sphere(0.5))])?);
    /// let mut history = History::new(HistoryConfig::default())?;
    /// let runner = history.spawn(rig);
    /// let mut frame = history.begin_frame(Tick(1), 1.0 / 64.0)?;
    /// frame.record_rigid(runner, BoneTransform::IDENTITY, EntityState::default())?;
    /// // The velocity this tick's snapshot carries, metres per second.
    /// frame.record_velocity(runner, Vec3::new(6.0, 0.0, 0.0))?;
    /// assert!(frame.record_velocity(runner, Vec3::NAN).is_err());
    /// frame.finish();
    /// assert_eq!(history.velocity_in(runner, Tick(1))?, Some(Vec3::new(6.0, 0.0, 0.0)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn record_velocity(&mut self, id: EntityId, velocity: Vec3) -> Result<(), RecordError> {
        let history = &mut *self.history;
        let index = history.active_index(id)?;
        if !(velocity.is_finite() && velocity.abs().max_element() <= MAX_COORDINATE) {
            return Err(RecordError::InvalidVelocity {
                entity: id,
                velocity,
            });
        }
        let at = history.lanes.frame(index, history.newest_ring);
        history.lanes.velocities[at] = EntityVelocity {
            seq: history.newest_seq as u32,
            velocity: velocity.to_array(),
        };
        Ok(())
    }
}

impl History {
    /// The velocity recorded for `entity` in the frame of `tick`
    /// ([`FrameRecorder::record_velocity`]): `Some(Vec3::ZERO)` when its bones were
    /// recorded then but no velocity was, `None` when the entity was not recorded in that
    /// frame or the frame is not held.
    ///
    /// # Errors
    /// [`EntityError`](super::EntityError) for an unknown or stale handle.
    pub fn velocity_in(
        &self,
        entity: EntityId,
        tick: Tick,
    ) -> Result<Option<Vec3>, super::EntityError> {
        let index = self.known_index(entity)?;
        Ok(self
            .seq_of_tick(tick)
            .filter(|&seq| self.recorded_in(index, seq))
            .map(|seq| self.recorded_velocity(index, seq)))
    }

    /// The velocity of slot `index` in frame `seq`, which it was recorded in (zero when no
    /// velocity was recorded then).
    pub(crate) fn recorded_velocity(&self, index: usize, seq: u64) -> Vec3 {
        let stored = &self.lanes.velocities[self.lanes.frame(index, self.ring(seq))];
        if stored.seq == seq as u32 {
            Vec3::from_array(stored.velocity)
        } else {
            Vec3::ZERO
        }
    }
}
