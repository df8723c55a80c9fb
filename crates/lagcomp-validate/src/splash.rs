//! Splash claims: a rocket or grenade that went off where the thrower saw it, and the
//! client's word on whom the blast caught.
//!
//! What lives here: the claim ([`SplashClaim`]), the weapon's blast parameters
//! ([`SplashWeapon`]), the verdict with its per-victim breakdown ([`SplashVerdict`],
//! [`SplashOutcome`], [`SplashResult`]), the reasons only a splash claim can be refused for
//! ([`SplashReason`]), and [`Validator::validate_splash`]. The blast itself (hitboxes in
//! the radius, line of sight, falloff) is [`lagcomp::Query::splash`]'s. Where the
//! projectile went off is the projectile claim's to prove
//! ([`Validator::validate_projectile`]); this claim takes the blast point as given, within
//! the weapon's range of the muzzle.

use std::cell::RefCell;
use std::fmt;

use lagcomp::math::MAX_COORDINATE;
use lagcomp::query::splash::{Blast, Cover, SplashHit};
use lagcomp::spread::Falloff;
use lagcomp::{EntityId, History, HitboxId, Overlap, RewindTarget, StaticWorld, Vec3, Zone};
use serde::{Deserialize, Serialize};

use crate::claim::{RenderTime, ShotClaim, WeaponId};
use crate::rules::WeaponKind;
use crate::validator::Validator;
use crate::verdict::{Basis, RejectReason};

/// The most victims one splash claim may name.
pub const MAX_VICTIMS: usize = 16;

/// A client's "my blast caught these": the shot as fired, where it went off (at the
/// moment the shooter saw when it fired), and whom it caught. World space, metres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SplashClaim {
    /// Who fired (the server knows this from the connection, not from the packet).
    pub shooter: EntityId,
    /// With what.
    pub weapon: WeaponId,
    /// The client's sequence number for this shot.
    pub seq: u32,
    /// What the shooter's screen showed when the blast went off.
    pub render_time: RenderTime,
    /// The muzzle, world space.
    pub origin: Vec3,
    /// The aim; need not be unit length.
    pub direction: Vec3,
    /// The blast's centre.
    pub blast: Vec3,
    /// Whom it caught, any order; `None` entries are ignored.
    pub victims: [Option<EntityId>; MAX_VICTIMS],
}

impl SplashClaim {
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

/// A weapon's blast, the server's own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplashWeapon {
    /// Radius, metres.
    pub radius: f32,
    /// Damage multiplier by distance from the blast to the hitbox.
    pub falloff: Falloff,
    /// Whether bodies shield those behind them (walls always do).
    pub bodies_block: bool,
}

/// Why a splash claim was refused after the shot's own checks passed. Stable across
/// versions: variants are only added, each keeps its code and name.
///
/// ```
/// use lagcomp_validate::splash::SplashReason;
///
/// let reason = SplashReason::SplashThroughWall;
/// assert_eq!((reason.name(), reason.code()), ("splash_through_wall", 841));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SplashReason {
    /// A victim is within the radius, but every hitbox of it is hidden from the blast.
    SplashThroughWall,
    /// A victim has no hitbox within the radius.
    SplashOutOfRadius,
    /// The blast lies beyond the weapon's range from the muzzle.
    SplashBeyondRange,
}

impl SplashReason {
    /// Every reason, in code order.
    pub const ALL: [Self; 3] = [
        Self::SplashThroughWall,
        Self::SplashOutOfRadius,
        Self::SplashBeyondRange,
    ];

    /// A stable number, in the claim range (8xx).
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::SplashThroughWall => 841,
            Self::SplashOutOfRadius => 842,
            Self::SplashBeyondRange => 843,
        }
    }

    /// The stable snake_case name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::SplashThroughWall => "splash_through_wall",
            Self::SplashOutOfRadius => "splash_out_of_radius",
            Self::SplashBeyondRange => "splash_beyond_range",
        }
    }
}

impl fmt::Display for SplashReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The same reason among every kind's, with the same code and name: what the audit log,
/// the stats and [`crate::Rejection`] read.
impl From<SplashReason> for RejectReason {
    fn from(reason: SplashReason) -> Self {
        match reason {
            SplashReason::SplashThroughWall => Self::SplashThroughWall,
            SplashReason::SplashOutOfRadius => Self::SplashOutOfRadius,
            SplashReason::SplashBeyondRange => Self::SplashBeyondRange,
        }
    }
}

/// What the server found for one claimed victim.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "victim")]
pub enum SplashResult {
    /// No victim in this slot, or the verdict was decided before victims.
    Empty,
    /// Caught: its nearest hitbox the blast could see.
    Caught {
        /// The victim.
        target: EntityId,
        /// Its nearest visible hitbox.
        hitbox: HitboxId,
        /// That hitbox's zone.
        zone: Zone,
        /// The point of that hitbox nearest the blast, world space at the blast's moment.
        point: Vec3,
        /// From the blast to that hitbox, metres.
        distance: f32,
        /// The falloff at that distance.
        damage_multiplier: f32,
    },
    /// Caught, but takes no damage: spawn-protected, or dodging with the policy's dodge
    /// winning (as a hitscan hit would be [`crate::VerdictOutcome::Refused`]). Honest, not
    /// a cheat; not counted in `victims`.
    Spared {
        /// The victim.
        target: EntityId,
        /// Why it takes no damage.
        refusal: crate::Refusal,
        /// From the blast to its nearest visible hitbox, metres.
        distance: f32,
    },
    /// Within the radius but hidden.
    Covered {
        /// The victim.
        target: EntityId,
        /// What hid its nearest hitbox.
        cover: Cover,
    },
    /// Nowhere within the radius.
    OutOfRadius {
        /// The victim.
        target: EntityId,
    },
}

/// What a splash claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum SplashOutcome {
    /// Every claimed victim was caught.
    Confirmed {
        /// How many.
        victims: u8,
    },
    /// The shot's own checks refused it.
    Rejected {
        /// Why.
        reason: RejectReason,
    },
    /// The blast disagrees with the claim.
    ///
    /// A cheat-class rejection, folded to [`crate::VerdictOutcome::Rejected`]; not to be
    /// confused with [`crate::VerdictOutcome::Refused`] (an honest hit that does no damage).
    Disproved {
        /// Why.
        reason: SplashReason,
    },
}

impl SplashOutcome {
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

/// The validator's answer to a [`SplashClaim`], per victim in the claim's order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SplashVerdict {
    /// Who fired.
    pub shooter: EntityId,
    /// The claim's sequence number.
    pub seq: u32,
    /// The claimed weapon.
    pub weapon: WeaponId,
    /// The outcome.
    pub outcome: SplashOutcome,
    /// What the shot's checks decided on; `time_used` is the moment of the blast.
    pub basis: Basis,
    /// Per claimed victim, in the claim's slots.
    pub victims: [SplashResult; MAX_VICTIMS],
}

thread_local! {
    /// The blast's overlaps and hits. PERF: one pair per thread, grown once, so a claim
    /// allocates nothing in steady state without a scratch argument in the API.
    static SCRATCH: RefCell<(Vec<Overlap>, Vec<SplashHit>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

impl Validator {
    /// Judges a splash claim. First the shot's own checks, exactly as
    /// [`Validator::validate`] makes them for a hitscan shot with no hit claimed; the
    /// weapon must be an area one, or a projectile one with an `area` table (a rocket's
    /// blast on impact), [`RejectReason::WrongWeaponKind`] otherwise, and its blast is
    /// that table's. Then the
    /// blast, at the moment those checks settled on (as the thrower saw it): it must lie
    /// within the weapon's range of the muzzle, and each claimed victim must have a hitbox
    /// within the blast's radius that the blast can see (walls, `world`, and bodies when the
    /// weapon says so stop it). Each caught victim takes the falloff at its nearest
    /// visible hitbox.
    ///
    /// A victim the blast reaches is checked as a hitscan shot's target is, and as a
    /// pellet's: lag-compensated, and not a teammate of the shooter unless the weapon has
    /// friendly fire; one that fails refuses the whole claim with that reason
    /// ([`RejectReason::TargetNotCompensated`], [`RejectReason::FriendlyFire`]). An honest
    /// client names only the victims its weapon can damage.
    pub fn validate_splash(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &SplashClaim,
        received_at: f64,
    ) -> SplashVerdict {
        let mut basis = Basis {
            received_at,
            ..Basis::default()
        };
        let mut victims = [SplashResult::Empty; MAX_VICTIMS];
        let outcome = self
            .judge_splash(history, world, claim, received_at, &mut basis, &mut victims)
            .unwrap_or_else(|reason| SplashOutcome::Rejected { reason });
        let verdict = SplashVerdict {
            shooter: claim.shooter,
            seq: claim.seq,
            weapon: claim.weapon,
            outcome,
            basis,
            victims,
        };
        emit(&verdict);
        verdict
    }

    fn judge_splash(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &SplashClaim,
        received_at: f64,
        basis: &mut Basis,
        victims: &mut [SplashResult; MAX_VICTIMS],
    ) -> Result<SplashOutcome, RejectReason> {
        if !(claim.blast.is_finite() && claim.blast.abs().max_element() <= MAX_COORDINATE) {
            return Err(RejectReason::NonFinite);
        }
        // A grenade's claim, or a rocket's blast on impact.
        let kind = match self.rules().weapon(claim.weapon) {
            Some(w) if w.kind == WeaponKind::Projectile && w.area.is_some() => w.kind,
            _ => WeaponKind::Area,
        };
        self.judge_fired(history, world, &claim.as_shot(), kind, received_at, basis)?;
        let rules = self
            .rules()
            .weapon(claim.weapon)
            .ok_or(RejectReason::UnknownWeapon)?;
        let weapon = rules.splash_weapon().ok_or(RejectReason::WrongWeaponKind)?;
        let fired = basis.time_used.ok_or(RejectReason::TimeTooOld)?;
        if claim.origin.distance(claim.blast) > rules.max_range {
            return Ok(SplashOutcome::Disproved {
                reason: SplashReason::SplashBeyondRange,
            });
        }
        let blast = Blast {
            center: claim.blast,
            radius: weapon.radius,
            falloff: weapon.falloff,
            bodies_block: weapon.bodies_block,
        };
        SCRATCH.with_borrow_mut(|(scratch, caught)| {
            let mut query = history.query(RewindTarget::at(fired));
            let splashed = match world {
                Some(world) => query.world(world).splash(&blast, scratch, caught),
                None => query.splash(&blast, scratch, caught),
            };
            // The radius is the server's own; the time came from the window.
            splashed.map_err(|_| RejectReason::TimeTooOld)?;
            let mut refused = None;
            let mut count = 0_u8;
            for (result, victim) in victims.iter_mut().zip(&claim.victims) {
                let Some(target) = *victim else { continue };
                // Nearest first: the first visible one is the nearest visible.
                let mut of_target = caught
                    .iter()
                    .filter(|s| s.overlap.entity == target && s.overlap.state.alive);
                let nearest = of_target.clone().next();
                *result = match (of_target.find(|s| s.cover.is_none()), nearest) {
                    (Some(seen), _) => {
                        // Check 9 on each victim the blast reached, as on what a pellet
                        // struck: a teammate (unless the weapon has friendly fire) or a
                        // target out of lag compensation refuses the whole claim.
                        self.check_struck(rules, claim.shooter, target, seen.overlap.state, true)?;
                        if let Some(refusal) = self.refusal(history, target, seen.overlap.state) {
                            *result = SplashResult::Spared {
                                target,
                                refusal,
                                distance: seen.overlap.distance,
                            };
                            continue;
                        }
                        count += 1;
                        SplashResult::Caught {
                            target,
                            hitbox: seen.overlap.hitbox,
                            zone: seen.overlap.zone,
                            point: seen.overlap.closest_point,
                            distance: seen.overlap.distance,
                            damage_multiplier: seen.multiplier,
                        }
                    }
                    (None, Some(hidden)) => {
                        refused.get_or_insert(SplashReason::SplashThroughWall);
                        SplashResult::Covered {
                            target,
                            cover: hidden.cover.unwrap_or(Cover::Body(target)),
                        }
                    }
                    (None, None) => {
                        refused.get_or_insert(SplashReason::SplashOutOfRadius);
                        SplashResult::OutOfRadius { target }
                    }
                };
            }
            Ok(match refused {
                Some(reason) => SplashOutcome::Disproved { reason },
                None => SplashOutcome::Confirmed { victims: count },
            })
        })
    }
}

/// Emits `verdict` as a `tracing` event with target `lagcomp::verdict`, as hitscan
/// verdicts are: INFO when the claim stood, WARN when refused.
fn emit(verdict: &SplashVerdict) {
    let shooter = verdict.shooter.to_bits();
    let label = verdict.outcome.label();
    let code = match verdict.outcome {
        SplashOutcome::Rejected { reason } => reason.code(),
        SplashOutcome::Disproved { reason } => reason.code(),
        SplashOutcome::Confirmed { .. } => 0,
    };
    if code == 0 {
        tracing::info!(target: "lagcomp::verdict", shooter, seq = verdict.seq, weapon = verdict.weapon.0, kind = "splash", outcome = label, "splash claim {label}");
    } else {
        tracing::warn!(target: "lagcomp::verdict", shooter, seq = verdict.seq, weapon = verdict.weapon.0, kind = "splash", outcome = "rejected", reason = label, code, "splash claim rejected: {label}");
    }
}

#[cfg(test)]
mod tests;
