//! Client-claimed projectile hits: a rocket, arrow or bullet with travel time that the
//! client says struck something during a given step of its flight.
//!
//! What lives here: the claim ([`ProjectileHitClaim`]), its verdict
//! ([`ProjectileVerdict`], [`ProjectileOutcome`]), the reasons only a projectile claim can
//! be refused for ([`ProjectileReason`]), and [`Validator::validate_projectile`]. The
//! shot's own checks (numbers, weapon, shooter, sequence, fire rate, time, origin, angle)
//! are the hitscan checks of [`crate::validator`]; the flight and its re-flown path are
//! [`lagcomp::projectile`]'s. Server-simulated projectiles need no claim: the server
//! flies them itself with [`lagcomp::projectile::ProjectileSet`].

use std::fmt;

use lagcomp::math::MAX_COORDINATE;
use lagcomp::projectile::{
    ClaimOutcome, ClaimTolerance, ClaimedTarget, ProjectileClaim, ProjectileImpact, ProjectileShot,
    Struck,
};
use lagcomp::{Blocker, EntityId, History, RewindTarget, StaticWorld, Vec3};
use serde::{Deserialize, Serialize};

use crate::claim::{RenderTime, ShotClaim, WeaponId};
use crate::evasion::Refusal;
use crate::rules::{WeaponKind, WeaponRules};
use crate::validator::Validator;
use crate::verdict::{Basis, Confirmed, RejectReason};

/// A client's "my projectile struck this": the shot as fired, and the step of its flight
/// during which it struck, what, and where the projectile's centre was. World space,
/// metres; step `k` covers flight times `k * step` to `(k + 1) * step` of the weapon's
/// [`Flight`](lagcomp::projectile::Flight).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProjectileHitClaim {
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
    /// Which way it was fired; need not be unit length.
    pub direction: Vec3,
    /// The step of the flight during which it struck.
    pub step: u32,
    /// What it struck.
    pub target: ClaimedTarget,
    /// The projectile's centre at contact, world space.
    pub position: Vec3,
}

impl ProjectileHitClaim {
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

/// Why a projectile claim was refused after the shot's own checks passed. Stable across
/// versions, as [`RejectReason`]: variants are only added, each keeps its code and name.
///
/// ```
/// use lagcomp_validate::projectile::ProjectileReason;
///
/// let reason = ProjectileReason::ProjectileTooEarly;
/// assert_eq!((reason.name(), reason.code()), ("projectile_too_early", 812));
/// assert_eq!(reason.to_string(), "projectile_too_early");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProjectileReason {
    /// The re-flown projectile never strikes the claimed target: it strikes something
    /// else first, flies on, or meets the target at a step or point far from the claimed
    /// ones.
    ProjectileOffPath,
    /// The claim names a step before the one at which the projectile reaches its target,
    /// or an impact that lies after the present: the projectile could not have arrived.
    ProjectileTooEarly,
}

impl ProjectileReason {
    /// Every reason, in code order.
    pub const ALL: [Self; 2] = [Self::ProjectileOffPath, Self::ProjectileTooEarly];

    /// A stable number, in [`RejectReason`]'s claim range (8xx) and after its codes.
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::ProjectileOffPath => 811,
            Self::ProjectileTooEarly => 812,
        }
    }

    /// The stable snake_case name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::ProjectileOffPath => "projectile_off_path",
            Self::ProjectileTooEarly => "projectile_too_early",
        }
    }
}

impl fmt::Display for ProjectileReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The same reason among every kind's, with the same code and name: what the audit log,
/// the stats and [`crate::Rejection`] read.
impl From<ProjectileReason> for RejectReason {
    fn from(reason: ProjectileReason) -> Self {
        match reason {
            ProjectileReason::ProjectileOffPath => Self::ProjectileOffPath,
            ProjectileReason::ProjectileTooEarly => Self::ProjectileTooEarly,
        }
    }
}

/// What a projectile claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum ProjectileOutcome {
    /// The projectile struck the claimed hitbox. `distance` is the straight line from the
    /// muzzle to the projectile's centre at contact, `point` the contact on the hitbox.
    Confirmed(Confirmed),
    /// The projectile struck the claimed piece of static geometry (a rocket on a wall) or
    /// the claimed blocker entity (a door).
    Blocked {
        /// What it struck: in JSON, `"wall": id` or `"entity": {..}`.
        #[serde(flatten)]
        by: Blocker,
        /// Straight-line distance from the muzzle to the contact, metres.
        distance: f32,
    },
    /// The shot's own checks refused it.
    Rejected {
        /// Why.
        reason: RejectReason,
    },
    /// The re-flown path disagrees with the claim.
    ///
    /// A cheat-class rejection, folded to [`crate::VerdictOutcome::Rejected`]; not to be
    /// confused with [`crate::VerdictOutcome::Refused`] (an honest hit that does no damage).
    Disproved {
        /// Why.
        reason: ProjectileReason,
    },
    /// The projectile struck the claimed target, which takes no damage: spawn-protected,
    /// or dodging with the policy's dodge winning (as a hitscan hit would be
    /// [`crate::VerdictOutcome::Refused`]). Honest, not a cheat.
    Spared {
        /// The entity struck.
        target: EntityId,
        /// Why it takes no damage.
        refusal: Refusal,
        /// Straight-line distance from the muzzle to the contact, metres.
        distance: f32,
    },
}

impl ProjectileOutcome {
    /// A short stable label: `confirmed`, `blocked`, or the reason's name.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Confirmed(_) => "confirmed",
            Self::Blocked { .. } => "blocked",
            Self::Rejected { reason } => reason.name(),
            Self::Disproved { reason } => reason.name(),
            Self::Spared { refusal, .. } => refusal.name(),
        }
    }
}

/// The validator's answer to a [`ProjectileHitClaim`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProjectileVerdict {
    /// Who fired.
    pub shooter: EntityId,
    /// The claim's sequence number.
    pub seq: u32,
    /// The claimed weapon.
    pub weapon: WeaponId,
    /// The outcome.
    pub outcome: ProjectileOutcome,
    /// What the shot's checks decided on; `time_used` is the fire moment the path was
    /// flown from.
    pub basis: Basis,
    /// Where the server's flight ended, when it flew one.
    pub flown: Option<ProjectileImpact>,
}

impl Validator {
    /// Judges a client's claim that its projectile struck something, in two parts.
    ///
    /// First the shot's own checks, exactly as [`Validator::validate`] makes them for a
    /// hitscan shot with no hit claimed (numbers, weapon, shooter, sequence, fire rate,
    /// time, origin, angle; the shot counts towards the fire rate), as if the fire had
    /// reached the server when the claimed step began: `received_at` less that step's
    /// flight time; the weapon must be a projectile one ([`WeaponKind::Projectile`],
    /// [`RejectReason::WrongWeaponKind`] otherwise). Then the path: the server flies the
    /// weapon's `flight` from its rules from the fire moment those checks settled on, each step traced
    /// at that moment plus its flight time (see [`ProjectileShot`]), and compares the
    /// first thing it strikes with the claim, within one step and the larger of the
    /// weapon's `hit_leeway_min` and 25 cm.
    ///
    /// The history must still hold the fire moment when the claim arrives: keep its
    /// window at least the longest latency plus the longest flight time of the weapons
    /// claimed this way, or such claims are refused as `time_too_old`.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    ///
    /// use lagcomp::projectile::ClaimedTarget;
    /// use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Rig, Shape, Tick, Vec3, Zone};
    /// use lagcomp_validate::projectile::{ProjectileHitClaim, ProjectileOutcome};
    /// use lagcomp_validate::{ClientTiming, Participant, RenderTime, RuleSet, Validator, WeaponId};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Two players 10 m apart (bone 0 the body, bone 1 the eye), a second of history.
    /// let rig = Arc::new(Rig::new(2, vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)))])?);
    /// let bones = |feet: Vec3| [1.0, 1.6].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 1.0 })?;
    /// let (shooter, target) = (history.spawn(Arc::clone(&rig)), history.spawn(rig));
    /// for tick in 0..=64 {
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     frame.record(shooter, &bones(Vec3::ZERO), EntityState::default())?;
    ///     frame.record(target, &bones(Vec3::new(0.0, 0.0, -10.0)), EntityState::default())?;
    /// }
    /// // A 50 m/s bolt with a 2 cm radius, traced in 1/64 s steps for 2 s.
    /// let mut validator = Validator::new(RuleSet::from_toml(
    ///     r#"
    ///     [weapons.crossbow]
    ///     kind = "projectile"
    ///     id = 4
    ///     max_range = 250.0
    ///     min_interval = 0.5
    ///     aim_tolerance_deg = 5.0
    ///     origin_tolerance = 0.5
    ///     hit_leeway = 1.25
    ///     hit_leeway_min = 0.05
    ///     max_rewind = 0.35
    ///     flight = { speed = 50.0, radius = 0.02, step = 0.015625, max_time = 2.0 }
    ///     "#,
    /// )?);
    /// let eye = Participant { team: 1, aim_bone: 1, aim_forward: Vec3::NEG_Z };
    /// validator.register(shooter, eye);
    /// validator.register(target, Participant { team: 2, ..eye });
    /// validator.set_timing(shooter, ClientTiming { srtt: 0.1, rttvar: 0.005, interp_delay: 0.1 })?;
    ///
    /// // The bolt fired from the eye as the client saw t = 0.5 s; the body's front face
    /// // is 9.7 m away: the bolt reaches it during step 12.
    /// let claim = ProjectileHitClaim {
    ///     shooter,
    ///     weapon: WeaponId(4),
    ///     seq: 0,
    ///     render_time: RenderTime::Time(0.5),
    ///     origin: Vec3::new(0.0, 1.6, 0.0),
    ///     direction: Vec3::NEG_Z,
    ///     step: 12,
    ///     target: ClaimedTarget::Entity { entity: target, hitbox: HitboxId(0) },
    ///     position: Vec3::new(0.0, 1.6, -9.68),
    /// };
    /// // It reaches the server at 0.85 s: the fire's 150 ms plus the flight.
    /// let received_at = 0.65 + 12.0 / 64.0;
    /// // The same bolt claimed (on a fresh validator) to have struck at step 3, 2 m out.
    /// let mut fresh = validator.clone();
    /// let early = ProjectileHitClaim { step: 3, position: Vec3::new(0.0, 1.6, -2.0), ..claim };
    /// let verdict = fresh.validate_projectile(&history, None, &early, 0.65 + 3.0 / 64.0);
    /// assert_eq!(verdict.outcome.label(), "projectile_too_early");
    /// // The honest claim.
    /// let verdict = validator.validate_projectile(&history, None, &claim, received_at);
    /// assert!(matches!(verdict.outcome, ProjectileOutcome::Confirmed(hit) if hit.target == target));
    /// # Ok(())
    /// # }
    /// ```
    pub fn validate_projectile(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &ProjectileHitClaim,
        received_at: f64,
    ) -> ProjectileVerdict {
        let mut basis = Basis {
            received_at,
            ..Basis::default()
        };
        let (outcome, flown) =
            match self.judge_projectile(history, world, claim, received_at, &mut basis) {
                Ok((outcome, flown)) => (outcome, Some(flown)),
                Err(reason) => (ProjectileOutcome::Rejected { reason }, None),
            };
        let verdict = ProjectileVerdict {
            shooter: claim.shooter,
            seq: claim.seq,
            weapon: claim.weapon,
            outcome,
            basis,
            flown,
        };
        emit(&verdict);
        verdict
    }

    fn judge_projectile(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &ProjectileHitClaim,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<(ProjectileOutcome, ProjectileImpact), RejectReason> {
        if !(claim.position.is_finite() && claim.position.abs().max_element() <= MAX_COORDINATE) {
            return Err(RejectReason::NonFinite);
        }
        // The shot's checks judge the fire as if it reached the server when the claimed
        // step began; a weapon without a flight is refused by them (wrong kind).
        let flight = self
            .rules()
            .weapon(claim.weapon)
            .and_then(WeaponRules::flight);
        let fire_received_at = received_at - flight.map_or(0.0, |f| f.time_of_step(claim.step));
        self.judge_fired(
            history,
            world,
            &claim.as_shot(),
            WeaponKind::Projectile,
            fire_received_at,
            basis,
        )?;
        basis.received_at = received_at;
        basis.measured = None;
        let weapon = self
            .rules()
            .weapon(claim.weapon)
            .ok_or(RejectReason::UnknownWeapon)?;
        let flight = flight.ok_or(RejectReason::WrongWeaponKind)?;
        let fired = basis.time_used.ok_or(RejectReason::TimeTooOld)?;
        let review = ProjectileClaim {
            shot: ProjectileShot {
                fired_at: RewindTarget::at(fired),
                origin: claim.origin,
                direction: claim.direction,
                flight,
                shooter: Some(claim.shooter),
                layers: u32::MAX,
            },
            step: claim.step,
            target: claim.target,
            position: claim.position,
        };
        let tolerance = ClaimTolerance {
            steps: 1,
            distance: weapon
                .hit_leeway_min
                .max(ClaimTolerance::default().distance),
        };
        // The aim passed check 1 and the fire moment came from the history's window.
        let review = review
            .review(history, world, tolerance)
            .map_err(|_| RejectReason::TimeTooOld)?;
        let flown = review.flown;
        let distance = claim.origin.distance(flown.position);
        let outcome = match (review.outcome, flown.struck) {
            (ClaimOutcome::Agree, Struck::Entity(hit)) => {
                basis.sample = Some(hit.sample.kind);
                // Check 9 on the target as the projectile met it. (A present-time step is
                // not a reason: only the target's own flag is.)
                self.check_struck(weapon, claim.shooter, hit.entity, hit.state, true)?;
                if let Some(refusal) = self.refusal(history, hit.entity, hit.state) {
                    return Ok((
                        ProjectileOutcome::Spared {
                            target: hit.entity,
                            refusal,
                            distance,
                        },
                        flown,
                    ));
                }
                ProjectileOutcome::Confirmed(Confirmed {
                    target: hit.entity,
                    hitbox: hit.hitbox,
                    zone: hit.zone,
                    damage_multiplier: weapon.damage.of(hit.zone),
                    distance,
                    point: hit.entry.point,
                    by_leeway: false,
                })
            }
            (ClaimOutcome::Agree, Struck::Static(wall)) => ProjectileOutcome::Blocked {
                by: Blocker::Wall(wall.id),
                distance,
            },
            (ClaimOutcome::Agree, Struck::Blocker(block)) => ProjectileOutcome::Blocked {
                by: Blocker::Entity(block.entity),
                distance,
            },
            (ClaimOutcome::TooEarly, _) => ProjectileOutcome::Disproved {
                reason: ProjectileReason::ProjectileTooEarly,
            },
            _ => ProjectileOutcome::Disproved {
                reason: ProjectileReason::ProjectileOffPath,
            },
        };
        Ok((outcome, flown))
    }
}

/// Emits `verdict` as a `tracing` event with target `lagcomp::verdict`, as hitscan
/// verdicts are: INFO when the claim stood, WARN when refused.
fn emit(verdict: &ProjectileVerdict) {
    let shooter = verdict.shooter.to_bits();
    let label = verdict.outcome.label();
    let code = match verdict.outcome {
        ProjectileOutcome::Rejected { reason } => reason.code(),
        ProjectileOutcome::Disproved { reason } => reason.code(),
        _ => 0,
    };
    if code == 0 {
        tracing::info!(target: "lagcomp::verdict", shooter, seq = verdict.seq, weapon = verdict.weapon.0, kind = "projectile", outcome = label, "projectile claim {label}");
    } else {
        tracing::warn!(target: "lagcomp::verdict", shooter, seq = verdict.seq, weapon = verdict.weapon.0, kind = "projectile", outcome = "rejected", reason = label, code, "projectile claim rejected: {label}");
    }
}

#[cfg(test)]
mod tests;
