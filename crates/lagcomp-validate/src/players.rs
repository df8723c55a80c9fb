//! Setting up a player in one call: [`Validator::add_player`] checks everything the
//! validator will need from a shooter (its rig in the history, its aim bone and view, its
//! timing) and then registers it and sets its timing, or changes nothing and says which
//! part is wrong. [`Validator::register`] and [`Validator::set_timing`] stay for targets
//! that never shoot and for timings measured again later.

use lagcomp::{EntityId, History, Vec3};

use super::{Participant, Validator};
use crate::claim::{ClientTiming, TimingError};

/// Why [`Validator::add_player`] refused a player. Nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum AddPlayerError {
    /// The entity has no rig in the history: spawn it there first
    /// (`History::spawn(rig)` gives the id to pass here).
    #[error(
        "{entity} is not spawned in the history (or has aged out of it): \
         call History::spawn(rig) first and add the id it returns"
    )]
    NotSpawned {
        /// The entity given.
        entity: EntityId,
    },
    /// The participant's aim bone is not a bone of the entity's rig.
    #[error(
        "aim bone {aim_bone} is not a bone of the player's rig, which has {bones} bones \
         (0 to {last}): the aim bone is the eye or muzzle bone, recorded every tick",
        last = bones.saturating_sub(1)
    )]
    AimBoneOutsideRig {
        /// The aim bone given.
        aim_bone: u16,
        /// How many bones the rig has.
        bones: u16,
    },
    /// The participant's view direction is zero or not finite: no shot could be within
    /// any aim tolerance of it.
    #[error(
        "aim_forward {aim_forward} is not a direction: give the view's forward axis in the \
         aim bone's local axes, such as Vec3::NEG_Z"
    )]
    NoAimDirection {
        /// The direction given.
        aim_forward: Vec3,
    },
    /// The timing is not a plausible measurement in seconds.
    #[error(transparent)]
    Timing(#[from] TimingError),
}

impl Validator {
    /// Adds a player that shoots (and may be shot), in one step: checks that `entity` is
    /// spawned in `history`, that `participant`'s aim bone is a bone of its rig and its
    /// `aim_forward` a direction, and that `timing` (seconds) is plausible; then does what
    /// [`Validator::register`] and [`Validator::set_timing`] do. Adding a player again
    /// replaces its team, aim bone and timing and keeps its shot memory.
    ///
    /// Call [`Validator::set_timing`] whenever the measured timing changes afterwards.
    /// Targets that never shoot need only [`Validator::register`] (for their team).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use lagcomp::{History, HistoryConfig, Hitbox, HitboxId, Rig, Shape, Vec3, Zone};
    /// use lagcomp_validate::{AddPlayerError, ClientTiming, Participant, RuleSet, Validator};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Bone 0 carries the body, bone 1 is the eye.
    /// let body = Hitbox::on_bone(0, HitboxId(0), "body", Zone::Torso, Shape::sphere(0.4));
    /// let rig = Arc::new(Rig::new(2, vec![body])?);
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// let player = history.spawn(rig);
    ///
    /// let mut validator = Validator::new(RuleSet::from_toml("[weapons]")?);
    /// let eye = Participant { team: 1, aim_bone: 1, aim_forward: Vec3::NEG_Z };
    /// // Measured from the player's pings, in seconds.
    /// let timing = ClientTiming { srtt: 0.080, rttvar: 0.004, interp_delay: 0.1 };
    /// validator.add_player(&history, player, eye, timing)?;
    /// assert_eq!(validator.timing(player), Some(timing));
    ///
    /// // Milliseconds given as seconds are refused, and nothing changes.
    /// let in_ms = ClientTiming { srtt: 80.0, ..timing };
    /// let error = validator.add_player(&history, player, eye, in_ms).unwrap_err();
    /// assert!(matches!(error, AddPlayerError::Timing(_)));
    /// assert_eq!(validator.timing(player), Some(timing));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`AddPlayerError`] naming the first problem found, with nothing changed.
    pub fn add_player(
        &mut self,
        history: &History,
        entity: EntityId,
        participant: Participant,
        timing: ClientTiming,
    ) -> Result<(), AddPlayerError> {
        let rig = history
            .rig(entity)
            .map_err(|_| AddPlayerError::NotSpawned { entity })?;
        let bones = rig.bone_count();
        if participant.aim_bone >= bones {
            return Err(AddPlayerError::AimBoneOutsideRig {
                aim_bone: participant.aim_bone,
                bones,
            });
        }
        let forward = participant.aim_forward;
        if !forward.is_finite() || forward.length_squared() <= f32::EPSILON {
            return Err(AddPlayerError::NoAimDirection {
                aim_forward: forward,
            });
        }
        timing.check()?;
        self.register(entity, participant);
        self.set_timing(entity, timing)?;
        Ok(())
    }
}
