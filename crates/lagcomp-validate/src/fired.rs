//! The shot's own checks for the kinds of shot whose damage does not travel along the aim
//! line (pellets, blasts): [`Validator::judge_fired`].

use lagcomp::{History, StaticWorld};

use crate::claim::ShotClaim;
use crate::validator::Validator;
use crate::verdict::{Basis, RejectReason};

impl Validator {
    /// The hitscan checks of `shot` (a claim with no hit), less the checks on what the aim
    /// line meets (friendly fire, not alive, not compensated): no pellet or blast follows
    /// that line, so those are the kind's own to check on what it did strike. The shot
    /// counts towards the fire rate as a hitscan shot does.
    pub(crate) fn judge_fired(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        shot: &ShotClaim,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<(), RejectReason> {
        match self.judge(history, world, shot, received_at, basis) {
            Ok(_)
            | Err(
                RejectReason::TargetNotAlive
                | RejectReason::TargetNotCompensated
                | RejectReason::FriendlyFire,
            ) => Ok(()),
            Err(reason) => Err(reason),
        }
    }
}
