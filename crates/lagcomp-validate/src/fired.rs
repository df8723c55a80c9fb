//! The shot checks every kind of shot shares, for the kinds whose damage does not travel
//! along the aim line (projectiles, pellets, blasts): [`Validator::judge_fired`], and
//! check 9 on what such a shot struck, [`Validator::check_struck`].

use lagcomp::{EntityId, EntityState, History, StaticWorld};

use crate::claim::ShotClaim;
use crate::rules::{WeaponKind, WeaponRules};
use crate::validator::Validator;
use crate::verdict::{Basis, RejectReason};

impl Validator {
    /// Checks 1 to 6 of `shot` (a claim with no hit) for a weapon of `kind`, and the
    /// trace along its aim line, less the checks on what that line meets (friendly fire,
    /// not alive, not compensated): no projectile, pellet or blast follows that line, so
    /// those are the kind's own to check on what it did strike
    /// ([`Validator::check_struck`]). The shot counts towards the fire rate as a hitscan
    /// shot does.
    pub(crate) fn judge_fired(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        shot: &ShotClaim,
        kind: WeaponKind,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<(), RejectReason> {
        match self.judge(history, world, shot, kind, received_at, basis) {
            Ok(_)
            | Err(
                RejectReason::TargetNotAlive
                | RejectReason::TargetNotCompensated
                | RejectReason::FriendlyFire,
            ) => Ok(()),
            Err(reason) => Err(reason),
        }
    }

    /// Check 9 on a target that `shooter`'s projectile or pellet struck: alive, lag
    /// compensated (and sampled in the past when `rewound` says it must be), and not a
    /// teammate unless `weapon` has friendly fire.
    pub(crate) fn check_struck(
        &self,
        weapon: &WeaponRules,
        shooter: EntityId,
        target: EntityId,
        state: EntityState,
        rewound: bool,
    ) -> Result<(), RejectReason> {
        let team = self
            .participant(shooter)
            .ok_or(RejectReason::UnknownShooter)?
            .team;
        self.check_target(weapon, team, target, state, rewound)
    }
}
