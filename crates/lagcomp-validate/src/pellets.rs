//! Shotgun claims: one shot, N pellets drawn from the weapon's spread and a seed, and the
//! client's word on what each pellet struck.
//!
//! What lives here: the claim ([`PelletClaim`], [`PelletTarget`]), the weapon's pellet
//! parameters ([`PelletWeapon`]), the verdict with its per-pellet breakdown
//! ([`PelletVerdict`], [`PelletOutcome`], [`PelletResult`]), the reasons only a pellet
//! claim can be refused for ([`PelletReason`]), and [`Validator::validate_pellets`]. The
//! shot's own checks are the hitscan checks of [`crate::validator`]; the pellet directions
//! and the fan of rewound rays are [`lagcomp::spread`]'s and [`lagcomp::Query::ray_fan`]'s.

use std::cell::RefCell;
use std::fmt;

use lagcomp::spread::{Falloff, MAX_PELLETS, Pellets, Spread, pellet_seed};
use lagcomp::{
    EntityId, History, HitboxId, Ray, RewindTarget, StaticId, StaticWorld, Trace, Vec3, Zone,
};
use serde::{Deserialize, Serialize};

use crate::claim::{RenderTime, ShotClaim, WeaponId};
use crate::rules::WeaponKind;
use crate::validator::Validator;
use crate::verdict::{Basis, RejectReason};

/// What one pellet is claimed to have struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PelletTarget {
    /// The entity.
    pub target: EntityId,
    /// The hitbox, when the client names one; any hitbox of the entity otherwise.
    pub hitbox: Option<HitboxId>,
}

/// A client's "my shotgun shot hit these": the shot as fired, the seed and pellet count it
/// drew its pellets with, and per pellet (in the order [`Pellets::new`] draws them) what
/// it struck. World space, metres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PelletClaim {
    /// Who fired (the server knows this from the connection, not from the packet).
    pub shooter: EntityId,
    /// With what.
    pub weapon: WeaponId,
    /// The client's sequence number for this shot.
    pub seq: u32,
    /// What the shooter's screen showed when it fired.
    pub render_time: RenderTime,
    /// The muzzle, world space.
    pub origin: Vec3,
    /// The aim, the axis of the cone; need not be unit length.
    pub direction: Vec3,
    /// The seed the client drew its pellets with: must be
    /// [`pellet_seed`]`(shooter.to_bits(), seq)`.
    pub seed: u64,
    /// How many pellets the client fired: must be the weapon's.
    pub pellets: u8,
    /// What each pellet struck; `None` for a pellet claimed to have hit nothing.
    pub hits: [Option<PelletTarget>; MAX_PELLETS],
}

impl PelletClaim {
    /// The same shot as a hitscan claim with no hit: what the shot's own checks judge.
    fn as_shot(&self) -> ShotClaim {
        ShotClaim {
            shooter: self.shooter,
            weapon: self.weapon,
            seq: self.seq,
            render_time: self.render_time,
            origin: self.origin,
            direction: self.direction,
            hit: None,
        }
    }
}

/// A shotgun's pellet parameters, the server's own: how pellets spread, and how their
/// damage falls off with the distance from the muzzle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PelletWeapon {
    /// Pellet count, cone and pattern.
    pub spread: Spread,
    /// Damage multiplier by the distance a pellet travelled.
    pub falloff: Falloff,
}

/// Why a pellet claim was refused after the shot's own checks passed. Stable across
/// versions, as [`RejectReason`]: variants are only added, each keeps its code and name.
///
/// ```
/// use lagcomp_validate::pellets::PelletReason;
///
/// let reason = PelletReason::PelletSeedMismatch;
/// assert_eq!((reason.name(), reason.code()), ("pellet_seed_mismatch", 832));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PelletReason {
    /// The claim fires another number of pellets than the weapon does, or claims a hit for
    /// a pellet beyond them.
    PelletCountMismatch,
    /// The claim's seed is not the one the shot's pellets come from.
    PelletSeedMismatch,
    /// A pellet is claimed on a target its regenerated ray does not strike first.
    PelletOffTarget,
}

impl PelletReason {
    /// Every reason, in code order.
    pub const ALL: [Self; 3] = [
        Self::PelletCountMismatch,
        Self::PelletSeedMismatch,
        Self::PelletOffTarget,
    ];

    /// A stable number, in [`RejectReason`]'s claim range (8xx).
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::PelletCountMismatch => 831,
            Self::PelletSeedMismatch => 832,
            Self::PelletOffTarget => 833,
        }
    }

    /// The stable snake_case name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::PelletCountMismatch => "pellet_count_mismatch",
            Self::PelletSeedMismatch => "pellet_seed_mismatch",
            Self::PelletOffTarget => "pellet_off_target",
        }
    }
}

impl fmt::Display for PelletReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The same reason among every kind's, with the same code and name: what the audit log,
/// the stats and [`crate::Rejection`] read.
impl From<PelletReason> for RejectReason {
    fn from(reason: PelletReason) -> Self {
        match reason {
            PelletReason::PelletCountMismatch => Self::PelletCountMismatch,
            PelletReason::PelletSeedMismatch => Self::PelletSeedMismatch,
            PelletReason::PelletOffTarget => Self::PelletOffTarget,
        }
    }
}

/// What the server found for one pellet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "pellet")]
pub enum PelletResult {
    /// Not fired (beyond the weapon's count), or the verdict was decided before pellets.
    NotTraced,
    /// No hit claimed for this pellet.
    Unclaimed,
    /// The pellet struck the claimed target.
    Hit {
        /// The entity struck.
        target: EntityId,
        /// The hitbox.
        hitbox: HitboxId,
        /// Its zone.
        zone: Zone,
        /// From the muzzle to the entry, metres.
        distance: f32,
        /// The entry point, world space at the rewound time.
        point: Vec3,
        /// The zone's multiplier times the falloff at that distance.
        damage_multiplier: f32,
    },
    /// The pellet struck the claimed target, which takes no damage: spawn-protected, or
    /// dodging with the policy's dodge winning (as a hitscan hit would be
    /// [`crate::VerdictOutcome::Refused`]). Honest, not a cheat; not counted in `hits`.
    Spared {
        /// The entity struck.
        target: EntityId,
        /// The hitbox.
        hitbox: HitboxId,
        /// Why it takes no damage.
        refusal: crate::Refusal,
        /// From the muzzle to the entry, metres.
        distance: f32,
    },
    /// The pellet was claimed on a target its ray does not strike first.
    Missed {
        /// What the ray struck first instead, if an entity.
        struck: Option<EntityId>,
        /// The wall that stopped it, if any.
        wall: Option<StaticId>,
    },
}

/// What a pellet claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum PelletOutcome {
    /// Every claimed pellet struck its target.
    Confirmed {
        /// How many pellets hit.
        hits: u8,
        /// The pellets' damage multipliers added up: the shot's damage is the weapon's
        /// per-pellet damage times this.
        damage_multiplier: f32,
    },
    /// The shot's own checks refused it.
    Rejected {
        /// Why.
        reason: RejectReason,
    },
    /// The pellets disagree with the claim.
    ///
    /// A cheat-class rejection, folded to [`crate::VerdictOutcome::Rejected`]; not to be
    /// confused with [`crate::VerdictOutcome::Refused`] (an honest hit that does no damage).
    Disproved {
        /// Why.
        reason: PelletReason,
    },
}

impl PelletOutcome {
    /// A short stable label: `confirmed`, or the reason's name.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Confirmed { .. } => "confirmed",
            Self::Rejected { reason } => reason.name(),
            Self::Disproved { reason } => reason.name(),
        }
    }
}

/// The validator's answer to a [`PelletClaim`], with the breakdown per pellet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PelletVerdict {
    /// Who fired.
    pub shooter: EntityId,
    /// The claim's sequence number.
    pub seq: u32,
    /// The claimed weapon.
    pub weapon: WeaponId,
    /// The outcome.
    pub outcome: PelletOutcome,
    /// What the shot's checks decided on; `time_used` is the moment the pellets were traced.
    pub basis: Basis,
    /// Per pellet, in draw order; entries past the weapon's count are `NotTraced`.
    pub pellets: [PelletResult; MAX_PELLETS],
}

thread_local! {
    /// The fan's traces. PERF: one buffer per thread, grown once to the largest fan, so a
    /// claim allocates nothing in steady state without a scratch argument in the API.
    static TRACES: RefCell<Vec<Trace>> = const { RefCell::new(Vec::new()) };
}

impl Validator {
    /// Judges a shotgun shot. First the shot's own checks, exactly as
    /// [`Validator::validate`] makes them for a hitscan shot with no hit claimed (the shot
    /// counts towards the fire rate). Then the pellets: the count must be the weapon's
    /// ([`PelletReason::PelletCountMismatch`]) and the seed the shot's
    /// ([`PelletReason::PelletSeedMismatch`]); the server draws the pellets itself and
    /// traces them all at the moment the shot's checks settled on, within the weapon's
    /// range, stopped by walls (and `world`). Each pellet claimed on a target must strike
    /// it first ([`PelletReason::PelletOffTarget`] otherwise); each that does deals the
    /// zone's multiplier times the falloff at its distance.
    ///
    /// The weapon must be a pellet one ([`WeaponKind::Pellets`],
    /// [`RejectReason::WrongWeaponKind`] otherwise); its spread and falloff are its
    /// rules' `pellets` table. A pellet that strikes its claimed target is checked as a
    /// hitscan shot's target is (alive, lag-compensated, not a teammate unless the weapon
    /// has friendly fire): one that fails refuses the whole claim with that reason.
    pub fn validate_pellets(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &PelletClaim,
        received_at: f64,
    ) -> PelletVerdict {
        let mut basis = Basis {
            received_at,
            ..Basis::default()
        };
        let mut pellets = [PelletResult::NotTraced; MAX_PELLETS];
        let outcome = match self.judge_pellets(
            history,
            world,
            claim,
            received_at,
            &mut basis,
            &mut pellets,
        ) {
            Ok(outcome) => outcome,
            Err(reason) => PelletOutcome::Rejected { reason },
        };
        let verdict = PelletVerdict {
            shooter: claim.shooter,
            seq: claim.seq,
            weapon: claim.weapon,
            outcome,
            basis,
            pellets,
        };
        emit(&verdict);
        verdict
    }

    fn judge_pellets(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &PelletClaim,
        received_at: f64,
        basis: &mut Basis,
        pellets: &mut [PelletResult; MAX_PELLETS],
    ) -> Result<PelletOutcome, RejectReason> {
        self.judge_fired(
            history,
            world,
            &claim.as_shot(),
            WeaponKind::Pellets,
            received_at,
            basis,
        )?;
        let rules = self
            .rules()
            .weapon(claim.weapon)
            .ok_or(RejectReason::UnknownWeapon)?;
        let weapon = rules.pellet_weapon().ok_or(RejectReason::WrongWeaponKind)?;
        let fired = basis.time_used.ok_or(RejectReason::TimeTooOld)?;
        let count = weapon.spread.pellets();
        if usize::from(claim.pellets) != count || claim.hits[count..].iter().any(Option::is_some) {
            return Ok(PelletOutcome::Disproved {
                reason: PelletReason::PelletCountMismatch,
            });
        }
        if claim.seed != pellet_seed(claim.shooter.to_bits(), claim.seq) {
            return Ok(PelletOutcome::Disproved {
                reason: PelletReason::PelletSeedMismatch,
            });
        }
        // The aim passed the shot's checks, so it is finite and not zero.
        let drawn = Pellets::new(&weapon.spread, claim.direction, claim.seed)
            .map_err(|_| RejectReason::NonFinite)?;
        let mut rays = [Ray::new(claim.origin, Vec3::Z, 0.0)
            .map_err(|_| RejectReason::NonFinite)?; MAX_PELLETS];
        for (ray, &dir) in rays.iter_mut().zip(drawn.directions()) {
            *ray = Ray::new(claim.origin, dir, rules.max_range)
                .map_err(|_| RejectReason::NonFinite)?;
        }
        let shooter = [claim.shooter];
        TRACES.with_borrow_mut(|traces| {
            // The weapon's layers, as for its hitscan shots: what a pellet can hit and
            // what stops it.
            let mut query = history
                .query(RewindTarget::at(fired))
                .ignore(&shooter)
                .layers(rules.hit_layers)
                .blocked_by(rules.blocked_by);
            let traced = match world {
                Some(world) => query.world(world).ray_fan(&rays[..count], traces),
                None => query.ray_fan(&rays[..count], traces),
            };
            traced.map_err(|_| RejectReason::TimeTooOld)?;
            let (mut hits, mut total, mut off) = (0_u8, 0.0_f32, false);
            for ((result, trace), claimed) in pellets.iter_mut().zip(traces.iter()).zip(&claim.hits)
            {
                let Some(claimed) = claimed else {
                    *result = PelletResult::Unclaimed;
                    continue;
                };
                *result = match trace.hit {
                    Some(hit)
                        if hit.entity == claimed.target
                            && claimed.hitbox.is_none_or(|h| h == hit.hitbox) =>
                    {
                        // Check 9 on the target the pellet struck, as for a hitscan hit.
                        self.check_struck(rules, claim.shooter, hit.entity, hit.state, true)?;
                        if let Some(refusal) = self.refusal(history, hit.entity, hit.state) {
                            *result = PelletResult::Spared {
                                target: hit.entity,
                                hitbox: hit.hitbox,
                                refusal,
                                distance: hit.distance,
                            };
                            continue;
                        }
                        let damage_multiplier =
                            rules.damage.of(hit.zone) * weapon.falloff.multiplier(hit.distance);
                        hits += 1;
                        total += damage_multiplier;
                        PelletResult::Hit {
                            target: hit.entity,
                            hitbox: hit.hitbox,
                            zone: hit.zone,
                            distance: hit.distance,
                            point: hit.entry.point,
                            damage_multiplier,
                        }
                    }
                    _ => {
                        off = true;
                        PelletResult::Missed {
                            struck: trace.hit.map(|hit| hit.entity),
                            wall: trace.blocker.map(|wall| wall.id),
                        }
                    }
                };
            }
            Ok(if off {
                PelletOutcome::Disproved {
                    reason: PelletReason::PelletOffTarget,
                }
            } else {
                PelletOutcome::Confirmed {
                    hits,
                    damage_multiplier: total,
                }
            })
        })
    }
}

/// Emits `verdict` as a `tracing` event with target `lagcomp::verdict`, as hitscan
/// verdicts are: INFO when the claim stood, WARN when refused.
fn emit(verdict: &PelletVerdict) {
    let shooter = verdict.shooter.to_bits();
    let label = verdict.outcome.label();
    let code = match verdict.outcome {
        PelletOutcome::Rejected { reason } => reason.code(),
        PelletOutcome::Disproved { reason } => reason.code(),
        PelletOutcome::Confirmed { .. } => 0,
    };
    if code == 0 {
        tracing::info!(target: "lagcomp::verdict", shooter, seq = verdict.seq, weapon = verdict.weapon.0, kind = "pellets", outcome = label, "pellet claim {label}");
    } else {
        tracing::warn!(target: "lagcomp::verdict", shooter, seq = verdict.seq, weapon = verdict.weapon.0, kind = "pellets", outcome = "rejected", reason = label, code, "pellet claim rejected: {label}");
    }
}

#[cfg(test)]
mod tests;
