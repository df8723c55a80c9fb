//! The picture a client drew while extrapolating: [`History::entity_extrapolated`].

use super::{EntityAt, QueryError, Rewind};
use crate::EntityId;
use crate::history::History;
use crate::math::extrapolation_shift;
use crate::time::{RewindError, RewindTarget, Tick, WindowPolicy};

impl History {
    /// `entity` as a client drew it `by` seconds past the snapshot of tick `from` when no
    /// newer snapshot had arrived: every bone of its frame of `from` moved by its recorded
    /// velocity ([`FrameRecorder::record_velocity`](crate::FrameRecorder::record_velocity))
    /// times `by`, rotation and scale kept. The formula is
    /// [`crate::math::extrapolation_shift`] and [`crate::math::extrapolate`], the ones
    /// `lagcomp-net`'s snapshot buffer draws with, so the server gets the client's picture
    /// bit for bit. `Ok(None)` if the entity was not recorded in that frame.
    ///
    /// The [`Rewind`] it reports is at the frame's time plus `by`; its sample is the frame
    /// of `from` ([`SampleKind::Exact`](crate::SampleKind::Exact)), or the entity's present
    /// pose, not moved, when its lag compensation was off then (as
    /// [`History::entity_at`]). How far a client may extrapolate is the caller's rule
    /// (`lagcomp-validate`'s `max_extrapolation`): any finite `by` is rebuilt here.
    ///
    /// # Errors
    /// [`RewindError::InvalidExtrapolation`] for a `by` that is NaN, infinite or negative;
    /// [`RewindError::UnknownTick`] for a tick not held and
    /// [`RewindError::OutOfWindow`] for one older than the window; [`QueryError::Entity`]
    /// for an unknown or stale handle.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3, Zone};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rig = Arc::new(Rig::new(1, vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::sphere(0.5))])?);
    /// let mut history = History::new(HistoryConfig::default())?;
    /// let runner = history.spawn(rig);
    /// for tick in 1..=4_u32 {
    ///     let x = tick as f32 * 0.1; // 6.4 m/s at 64 Hz
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     frame.record_rigid(runner, BoneTransform::from_translation(Vec3::new(x, 1.0, 0.0)), EntityState::default())?;
    ///     frame.record_velocity(runner, Vec3::new(6.4, 0.0, 0.0))?;
    /// }
    /// // The client's last snapshot was tick 3; it drew the runner 50 ms past it.
    /// let drawn = history.entity_extrapolated(runner, Tick(3), 0.05)?.expect("recorded at tick 3");
    /// let moved = drawn.bone(0).expect("one bone").translation;
    /// assert_eq!(moved, Vec3::new(0.3, 1.0, 0.0) + Vec3::new(6.4, 0.0, 0.0) * 0.05_f32);
    /// assert_eq!(drawn.rewind().time, 3.0 / 64.0 + 0.05);
    /// assert!(history.entity_extrapolated(runner, Tick(3), -0.01).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn entity_extrapolated(
        &self,
        entity: EntityId,
        from: Tick,
        by: f64,
    ) -> Result<Option<EntityAt<'_>>, QueryError> {
        if !(by.is_finite() && by >= 0.0) {
            return Err(RewindError::InvalidExtrapolation(by).into());
        }
        let index = self.known_index(entity)?;
        let bracket = self.bracket(RewindTarget::between(from, from, 0.0), WindowPolicy::Reject)?;
        let Some(sample) = self.sample(index, &bracket) else {
            return Ok(None);
        };
        let shift = sample
            .rewound()
            .then(|| extrapolation_shift(self.recorded_velocity(index, bracket.older), by));
        let time = bracket.time + by;
        Ok(Some(EntityAt {
            history: self,
            index,
            entity,
            sample,
            rewind: Rewind {
                requested: time,
                time,
                ..Rewind::from(&bracket)
            },
            shift,
        }))
    }
}
