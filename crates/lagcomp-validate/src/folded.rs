//! Every kind's verdict folded into the one [`Verdict`]: what the audit log
//! ([`crate::AuditLog`]), the stats, [`crate::Rejection`] and the JSON Lines tools read.
//!
//! A projectile or melee claim names one target, so its verdict folds into one
//! [`Verdict`]. A pellet or splash claim may strike several: it folds into one [`Verdict`]
//! per target struck (its pellets' damage added up, or the victim's falloff), or one
//! [`VerdictOutcome::Miss`] when it struck none, or one rejection. The per-pellet and
//! per-victim breakdown stays in the kind's own verdict. Every reason a kind can be
//! refused for is a [`RejectReason`] with the kind's code and name. A penetration claim
//! folds as a pellet claim does: one [`Verdict`] per body its round struck.

use lagcomp::EntityId;

use crate::pellets::{PelletOutcome, PelletResult, PelletVerdict};
use crate::penetration::{PenetrationLayerResult, PenetrationOutcome, PenetrationVerdict};
use crate::projectile::{ProjectileOutcome, ProjectileVerdict};
use crate::splash::{SplashOutcome, SplashResult, SplashVerdict};
use crate::validator::melee::{MeleeOutcome, MeleeVerdict};
use crate::verdict::{Confirmed, RejectReason, Verdict, VerdictOutcome};

impl ProjectileVerdict {
    /// This verdict as a [`Verdict`]: the same outcome, the kind's reasons as
    /// [`crate::RejectReason`]s (`projectile_off_path`, 811; `projectile_too_early`, 812).
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        let outcome = match self.outcome {
            ProjectileOutcome::Confirmed(hit) => VerdictOutcome::Confirmed(hit),
            ProjectileOutcome::Blocked { by, distance } => VerdictOutcome::Blocked { by, distance },
            ProjectileOutcome::Rejected { reason } => VerdictOutcome::Rejected { reason },
            ProjectileOutcome::Disproved { reason } => VerdictOutcome::Rejected {
                reason: reason.into(),
            },
            ProjectileOutcome::Spared {
                target,
                refusal,
                distance,
            } => VerdictOutcome::Refused {
                target,
                refusal,
                distance,
            },
        };
        folded(self.shooter, self.seq, self.weapon, outcome, self.basis)
    }
}

impl MeleeVerdict {
    /// This verdict as a [`Verdict`]: the same outcome, the melee reasons as
    /// [`crate::RejectReason`]s with their codes (11xx).
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        let outcome = match self.outcome {
            MeleeOutcome::Confirmed(hit) => VerdictOutcome::Confirmed(hit),
            MeleeOutcome::Miss => VerdictOutcome::Miss,
            MeleeOutcome::Blocked { by, distance } => VerdictOutcome::Blocked { by, distance },
            MeleeOutcome::Rejected { reason } => VerdictOutcome::Rejected {
                reason: reason.into(),
            },
            MeleeOutcome::Spared {
                target,
                refusal,
                distance,
            } => VerdictOutcome::Refused {
                target,
                refusal,
                distance,
            },
        };
        folded(self.shooter, self.seq, self.weapon, outcome, self.basis)
    }
}

impl PelletVerdict {
    /// This verdict as [`Verdict`]s: one confirmed per target the pellets struck, in the
    /// order of the first pellet on each (its hitbox, zone, point and distance), with the
    /// damage multipliers of every pellet on that target added up, or one refused for a
    /// target spared (protected or dodging); or one miss when no pellet struck anything;
    /// or one rejection (pellet reasons 831 to 833). Allocates nothing.
    pub fn verdicts(&self) -> impl Iterator<Item = Verdict> + '_ {
        let alone = alone(match self.outcome {
            PelletOutcome::Confirmed { .. } => {
                Ok(self.pellets.iter().any(|p| pellet_target(p).is_some()))
            }
            PelletOutcome::Rejected { reason } => Err(reason),
            PelletOutcome::Disproved { reason } => Err(reason.into()),
        });
        let struck = self
            .pellets
            .iter()
            .enumerate()
            .filter_map(move |(i, pellet)| {
                let target = pellet_target(pellet)?;
                // The first pellet on each target speaks for all of them (every pellet on
                // a spared target is spared: one state, one moment).
                if self.pellets[..i]
                    .iter()
                    .any(|p| pellet_target(p) == Some(target))
                {
                    return None;
                }
                match *pellet {
                    PelletResult::Spared {
                        refusal, distance, ..
                    } => Some(VerdictOutcome::Refused {
                        target,
                        refusal,
                        distance,
                    }),
                    PelletResult::Hit {
                        hitbox,
                        zone,
                        distance,
                        point,
                        ..
                    } => Some(VerdictOutcome::Confirmed(Confirmed {
                        target,
                        hitbox,
                        zone,
                        damage_multiplier: self.pellets[i..]
                            .iter()
                            .filter(|p| pellet_target(p) == Some(target))
                            .map(|p| match p {
                                PelletResult::Hit {
                                    damage_multiplier, ..
                                } => *damage_multiplier,
                                _ => 0.0,
                            })
                            .sum(),
                        distance,
                        point,
                        by_leeway: false,
                    })),
                    _ => None,
                }
            });
        let parts = (self.shooter, self.seq, self.weapon, self.basis);
        one_or_each(alone, struck, parts)
    }
}

/// The target a pellet struck (spared or not), if it did.
fn pellet_target(pellet: &PelletResult) -> Option<EntityId> {
    match pellet {
        PelletResult::Hit { target, .. } | PelletResult::Spared { target, .. } => Some(*target),
        _ => None,
    }
}

impl SplashVerdict {
    /// This verdict as [`Verdict`]s: one confirmed per victim the blast caught (its
    /// nearest visible hitbox, the falloff there as the damage multiplier, the distance
    /// from the blast), or one refused per victim spared (protected or dodging), in the
    /// claim's order; or one miss when the claim named nobody; or one rejection (splash
    /// reasons 841 to 843). Allocates nothing.
    pub fn verdicts(&self) -> impl Iterator<Item = Verdict> + '_ {
        let alone = alone(match self.outcome {
            SplashOutcome::Confirmed { .. } => {
                Ok(self.victims.iter().any(|v| victim_target(v).is_some()))
            }
            SplashOutcome::Rejected { reason } => Err(reason),
            SplashOutcome::Disproved { reason } => Err(reason.into()),
        });
        let caught = self
            .victims
            .iter()
            .enumerate()
            .filter_map(move |(i, victim)| {
                let target = victim_target(victim)?;
                // A victim named twice is caught (or spared) once.
                if self.victims[..i]
                    .iter()
                    .any(|v| victim_target(v) == Some(target))
                {
                    return None;
                }
                match *victim {
                    SplashResult::Spared {
                        refusal, distance, ..
                    } => Some(VerdictOutcome::Refused {
                        target,
                        refusal,
                        distance,
                    }),
                    SplashResult::Caught {
                        hitbox,
                        zone,
                        point,
                        distance,
                        damage_multiplier,
                        ..
                    } => Some(VerdictOutcome::Confirmed(Confirmed {
                        target,
                        hitbox,
                        zone,
                        damage_multiplier,
                        distance,
                        point,
                        by_leeway: false,
                    })),
                    _ => None,
                }
            });
        let parts = (self.shooter, self.seq, self.weapon, self.basis);
        one_or_each(alone, caught, parts)
    }
}

/// The victim a blast caught (spared or not), if it did.
fn victim_target(victim: &SplashResult) -> Option<EntityId> {
    match victim {
        SplashResult::Caught { target, .. } | SplashResult::Spared { target, .. } => Some(*target),
        _ => None,
    }
}

impl PenetrationVerdict {
    /// This verdict as [`Verdict`]s: one confirmed per claimed body hit (its first
    /// hitbox, zone, point and distance, the zone's multiplier times the layer damage as
    /// the damage multiplier), or one refused per body spared (protected or dodging), in
    /// the claim's order; or one miss when the claim named no body; or one rejection
    /// (penetration reasons 1201 and 1202). Allocates nothing.
    pub fn verdicts(&self) -> impl Iterator<Item = Verdict> + '_ {
        let alone = alone(match self.outcome {
            PenetrationOutcome::Confirmed { .. } => Ok(self.layers.iter().any(|l| {
                matches!(
                    l,
                    PenetrationLayerResult::Hit { .. } | PenetrationLayerResult::Spared { .. }
                )
            })),
            PenetrationOutcome::Rejected { reason } => Err(reason),
            PenetrationOutcome::Disproved { reason } => Err(reason.into()),
        });
        // A body is listed once (a claim naming one twice is refused), so each is its own.
        let struck = self.layers.iter().filter_map(|layer| match *layer {
            PenetrationLayerResult::Hit {
                target,
                hitbox,
                zone,
                distance,
                point,
                damage_multiplier,
                ..
            } => Some(VerdictOutcome::Confirmed(Confirmed {
                target,
                hitbox,
                zone,
                damage_multiplier,
                distance,
                point,
                by_leeway: false,
            })),
            PenetrationLayerResult::Spared {
                target,
                refusal,
                distance,
                ..
            } => Some(VerdictOutcome::Refused {
                target,
                refusal,
                distance,
            }),
            _ => None,
        });
        let parts = (self.shooter, self.seq, self.weapon, self.basis);
        one_or_each(alone, struck, parts)
    }
}

/// The one outcome a multi-target claim folds into when it struck nothing (a miss) or was
/// refused; `None` when it struck some (`result` says whether it did), one verdict each.
fn alone(result: Result<bool, RejectReason>) -> Option<VerdictOutcome> {
    match result {
        Ok(false) => Some(VerdictOutcome::Miss),
        Ok(true) => None,
        Err(reason) => Some(VerdictOutcome::Rejected { reason }),
    }
}

/// The verdicts of a multi-target claim: the `alone` outcome if there is one, every
/// `struck` outcome otherwise; `parts` are the claim's shooter, sequence number, weapon
/// and basis.
fn one_or_each<'a>(
    alone: Option<VerdictOutcome>,
    struck: impl Iterator<Item = VerdictOutcome> + 'a,
    parts: (EntityId, u32, crate::WeaponId, crate::Basis),
) -> impl Iterator<Item = Verdict> + 'a {
    let (shooter, seq, weapon, basis) = parts;
    let struck = struck.filter(move |_| alone.is_none());
    alone
        .into_iter()
        .chain(struck)
        .map(move |outcome| folded(shooter, seq, weapon, outcome, basis))
}

/// A [`Verdict`] from a kind's verdict's parts.
fn folded(
    shooter: EntityId,
    seq: u32,
    weapon: crate::WeaponId,
    outcome: VerdictOutcome,
    basis: crate::Basis,
) -> Verdict {
    Verdict {
        shooter,
        seq,
        weapon,
        outcome,
        basis,
    }
}
