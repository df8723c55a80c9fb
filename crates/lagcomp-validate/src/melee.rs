//! Melee claims: a blade or fist (a box or capsule) swept along a line or swung about a
//! pivot at the moment the attacker saw, judged with rewind.
//!
//! A [`MeleeClaim`] is judged by [`Validator::validate_melee`] in the shot pipeline's order:
//! the claim's numbers, the weapon, the shooter (check 1), its sequence number and fire rate
//! (2, 3, shared with its shots), the claimed time (4), the claimed eye against the
//! shooter's aim bone (5) and the claimed aim against its view (6), all under the weapon's
//! [`WeaponRules`] in the validator's [`crate::RuleSet`]. Then the melee checks, under the
//! weapon's [`MeleeWeapon`] rules: the swing's size ([`MeleeReason::SwingTooLarge`]), the
//! rewound [`lagcomp::Query::sweep_shape`] against every entity and the static world, and
//! the point struck: within the weapon's reach of the eye ([`MeleeReason::OutOfReach`]),
//! within its angle of the shooter's view ([`MeleeReason::OutsideArc`]), and in the eye's
//! line of sight (a wall between them: [`MeleeOutcome::Blocked`]). The target's state then
//! (alive, lag-compensated, not a teammate) and agreement with the claimed target come last.

use std::collections::BTreeMap;
use std::fmt;

use lagcomp::{
    EntityId, History, QueryError, Ray, RewindTarget, ShapeSweep, StaticWorld, SweepPath, Swing,
    Vec3, WindowPolicy,
};
use serde::{Deserialize, Serialize};

use super::{Screened, Validator, counts_as_fired};
use crate::claim::{ClaimedHit, RenderTime, ShotClaim, WeaponId};
use crate::measurement::Measurement;
use crate::rules::{MeleeLimits, RuleSet, RulesError, ShooterReference, WeaponKind, WeaponRules};
use crate::screening::{ClaimedMoment, time_reason};
use crate::verdict::{Basis, Confirmed, RejectReason};

/// A client's claim that it struck with a melee weapon.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeleeClaim {
    /// Who attacked.
    pub shooter: EntityId,
    /// With which weapon (its rules are in both the [`crate::RuleSet`] and the
    /// [`MeleeRules`]).
    pub weapon: WeaponId,
    /// Sequence number, shared with the shooter's shots.
    pub seq: u32,
    /// The moment the attacker's screen showed.
    pub render_time: RenderTime,
    /// The attacker's eye, world space, metres.
    pub eye: Vec3,
    /// Where the attacker looked (any length but zero).
    pub aim: Vec3,
    /// The blade or fist and how it moved, world space at the render time.
    pub sweep: ShapeSweep,
    /// The target it claims to have struck, and optionally the hitbox (the point is not
    /// used: the server's sweep finds it).
    pub hit: Option<ClaimedHit>,
}

/// Reach and angle limits of one melee weapon.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeleeWeapon {
    /// The weapon's id: the same as its [`WeaponRules::id`].
    pub id: WeaponId,
    /// How far from the eye a struck point may be, metres.
    pub reach: f32,
    /// How far off the attacker's view (from the eye to the struck point) a strike may
    /// land, degrees.
    pub angle_deg: f32,
    /// The largest the swept shape may be: its bounding radius, metres.
    pub max_blade: f32,
    /// The largest angle a swing may turn through, degrees.
    pub max_swing_deg: f32,
}

/// Every melee weapon's limits, from TOML (`[melee.<name>]` tables) or built in code.
///
/// ```
/// use lagcomp_validate::{MeleeRules, WeaponId};
///
/// let rules = MeleeRules::from_toml(
///     r#"
///     [melee.knife]
///     id = 7
///     reach = 2.0          # metres from the eye
///     angle_deg = 60.0     # off the view
///     max_blade = 0.4      # metres, the blade's bounding radius
///     max_swing_deg = 150.0
///     "#,
/// )?;
/// assert_eq!(rules.weapon(WeaponId(7)).map(|w| w.reach), Some(2.0));
/// // Every number is range-checked, the field named; unknown fields are refused.
/// let error = MeleeRules::from_toml("[melee.knife]\nid = 7\nreach = -1.0\nangle_deg = 60.0\nmax_blade = 0.4\nmax_swing_deg = 150.0").unwrap_err();
/// assert!(error.to_string().contains("reach"));
/// assert!(MeleeRules::from_toml("[melee.knife]\nid = 7\nreach = 2.0\nangle_deg = 60.0\nmax_blade = 0.4\nmax_swing_deg = 150.0\nsharp = true").is_err());
/// # Ok::<(), lagcomp_validate::MeleeRulesError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeleeRules {
    /// The weapons by name.
    #[serde(default)]
    pub melee: BTreeMap<String, MeleeWeapon>,
}

/// Why melee rules were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeleeRulesError {
    /// The TOML did not parse, or has an unknown or missing field.
    #[error("melee rules: {0}")]
    Parse(String),
    /// A number is out of its range.
    #[error("melee weapon {weapon}: {field} = {value} is out of range ({range})")]
    Range {
        /// The weapon's name.
        weapon: String,
        /// The field.
        field: &'static str,
        /// Its value.
        value: f32,
        /// The range it must be in.
        range: &'static str,
    },
    /// Two weapons share an id.
    #[error("melee weapons {0} and {1} share an id")]
    DuplicateId(String, String),
}

impl MeleeRules {
    /// Parses and checks rules.
    ///
    /// # Errors
    /// [`MeleeRulesError`] for bad TOML, unknown fields, or a number out of range.
    pub fn from_toml(text: &str) -> Result<Self, MeleeRulesError> {
        let rules: Self =
            toml::from_str(text).map_err(|e| MeleeRulesError::Parse(e.to_string()))?;
        rules.check()?;
        Ok(rules)
    }

    /// Checks every number: reach above 0 to 100 m, angle above 0 to 180 degrees, blade
    /// above 0 to 10 m, swing 0 to 360 degrees (as a `melee` table in a [`RuleSet`]);
    /// ids unique.
    ///
    /// # Errors
    /// The first [`MeleeRulesError`] found.
    pub fn check(&self) -> Result<(), MeleeRulesError> {
        let mut ids: BTreeMap<WeaponId, &String> = BTreeMap::new();
        for (name, w) in &self.melee {
            if let Some((field, value, range)) = w.limits().out_of_range() {
                return Err(MeleeRulesError::Range {
                    weapon: name.clone(),
                    field,
                    value,
                    range,
                });
            }
            if let Some(other) = ids.insert(w.id, name) {
                return Err(MeleeRulesError::DuplicateId(other.clone(), name.clone()));
            }
        }
        Ok(())
    }

    /// The weapon with this id.
    #[must_use]
    pub fn weapon(&self, id: WeaponId) -> Option<&MeleeWeapon> {
        self.melee.values().find(|w| w.id == id)
    }
}

impl MeleeWeapon {
    /// The limits, as a melee weapon's `melee` table in a [`RuleSet`] holds them.
    #[must_use]
    pub fn limits(&self) -> MeleeLimits {
        MeleeLimits {
            reach: self.reach,
            angle_deg: self.angle_deg,
            max_blade: self.max_blade,
            max_swing_deg: self.max_swing_deg,
        }
    }
}

impl RuleSet {
    /// Folds `[melee.<name>]` tables (how melee limits were given before weapons had a
    /// kind) into the weapons they name by id: each becomes `kind = "melee"` with those
    /// limits, as if its rules said so. New rule files say it in the weapon's own table:
    ///
    /// ```toml
    /// [weapons.knife]
    /// kind = "melee"
    /// # ... id, timing, tolerances, damage ...
    /// melee = { reach = 2.0, angle_deg = 60.0, max_blade = 0.4, max_swing_deg = 150.0 }
    /// ```
    ///
    /// # Errors
    /// [`RulesError::MeleeWithoutWeapon`] for a melee table whose id no weapon has;
    /// [`RulesError::KindTable`] for a weapon of another kind than hitscan or melee;
    /// whatever [`RuleSet::check`] finds in the result.
    pub fn with_melee(mut self, melee: &MeleeRules) -> Result<Self, RulesError> {
        for (name, blade) in &melee.melee {
            let weapon = self
                .weapons
                .values_mut()
                .find(|w| w.id == blade.id)
                .ok_or_else(|| RulesError::MeleeWithoutWeapon {
                    name: name.clone(),
                    id: blade.id.0,
                })?;
            weapon.kind = WeaponKind::Melee;
            weapon.melee = Some(blade.limits());
        }
        self.check()?;
        Ok(self)
    }
}

/// Why a melee claim was rejected by a melee check. Stable like [`RejectReason`]:
/// variants are only ever added, each keeps its code and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum MeleeReason {
    /// The weapon is not a melee one (its kind is not [`WeaponKind::Melee`]).
    #[serde(rename = "melee_not_melee")]
    NotMelee,
    /// The swept shape is larger than the weapon's blade, or the swing turns further than
    /// it allows, or a thrust reaches further than its reach.
    #[serde(rename = "melee_swing_too_large")]
    SwingTooLarge,
    /// The struck point (or the swing's start) is beyond the weapon's reach from the eye.
    #[serde(rename = "melee_out_of_reach")]
    OutOfReach,
    /// The struck point is further off the attacker's view than the weapon's angle.
    #[serde(rename = "melee_outside_arc")]
    OutsideArc,
}

impl MeleeReason {
    /// Every reason, in code order.
    pub const ALL: [Self; 4] = [
        Self::NotMelee,
        Self::SwingTooLarge,
        Self::OutOfReach,
        Self::OutsideArc,
    ];

    /// A stable number, 11xx (melee), beside [`RejectReason::code`]'s.
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::NotMelee => 1101,
            Self::SwingTooLarge => 1102,
            Self::OutOfReach => 1103,
            Self::OutsideArc => 1104,
        }
    }

    /// The stable snake_case name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::NotMelee => "melee_not_melee",
            Self::SwingTooLarge => "melee_swing_too_large",
            Self::OutOfReach => "melee_out_of_reach",
            Self::OutsideArc => "melee_outside_arc",
        }
    }
}

impl fmt::Display for MeleeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The same reason among every kind's, with the same code and name: what the audit log,
/// the stats and [`crate::Rejection`] read.
impl From<MeleeReason> for RejectReason {
    fn from(reason: MeleeReason) -> Self {
        match reason {
            MeleeReason::NotMelee => Self::MeleeNotMelee,
            MeleeReason::SwingTooLarge => Self::MeleeSwingTooLarge,
            MeleeReason::OutOfReach => Self::MeleeOutOfReach,
            MeleeReason::OutsideArc => Self::MeleeOutsideArc,
        }
    }
}

/// A melee claim's rejection: by a check shared with shots, or by a melee check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeleeRejection {
    /// A check shared with shots (time, origin, angle, fire rate, the target's state...).
    Shot(RejectReason),
    /// A melee check.
    Melee(MeleeReason),
}

impl MeleeRejection {
    /// The reason's stable code.
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::Shot(r) => r.code(),
            Self::Melee(r) => r.code(),
        }
    }

    /// The reason's stable name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Shot(r) => r.name(),
            Self::Melee(r) => r.name(),
        }
    }
}

impl From<MeleeRejection> for RejectReason {
    fn from(rejection: MeleeRejection) -> Self {
        match rejection {
            MeleeRejection::Shot(reason) => reason,
            MeleeRejection::Melee(reason) => reason.into(),
        }
    }
}

impl From<RejectReason> for MeleeRejection {
    fn from(reason: RejectReason) -> Self {
        Self::Shot(reason)
    }
}

impl From<MeleeReason> for MeleeRejection {
    fn from(reason: MeleeReason) -> Self {
        Self::Melee(reason)
    }
}

/// What a melee claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum MeleeOutcome {
    /// It struck: `distance` is how far along the sweep (metres), `point` the point of the
    /// hitbox struck.
    Confirmed(Confirmed),
    /// It struck nothing.
    Miss,
    /// A wall or a blocker entity (a door) stopped the blade, or stood between the eye
    /// and the point struck.
    Blocked {
        /// What blocked: in JSON, `"wall": id` or `"entity": {..}`.
        #[serde(flatten)]
        by: lagcomp::Blocker,
        /// Metres along the sweep (or from the eye, for a wall in the line of sight).
        distance: f32,
    },
    /// Refused.
    Rejected {
        /// Why.
        reason: MeleeRejection,
    },
    /// It struck a target that takes no damage: spawn-protected, or dodging with the
    /// policy's dodge winning (as a hitscan hit would be [`crate::VerdictOutcome::Refused`]).
    /// Honest, not a cheat.
    Spared {
        /// The entity struck.
        target: EntityId,
        /// Why it takes no damage.
        refusal: crate::Refusal,
        /// Metres along the sweep.
        distance: f32,
    },
}

impl MeleeOutcome {
    /// `confirmed`, `miss`, `blocked`, or the rejection's name.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Confirmed(_) => "confirmed",
            Self::Miss => "miss",
            Self::Blocked { .. } => "blocked",
            Self::Rejected { reason } => reason.name(),
            Self::Spared { refusal, .. } => refusal.name(),
        }
    }

    /// The rejection, if rejected.
    #[must_use]
    pub fn reason(&self) -> Option<MeleeRejection> {
        match self {
            Self::Rejected { reason } => Some(*reason),
            _ => None,
        }
    }
}

/// The validator's answer to one melee claim.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeleeVerdict {
    /// Who attacked.
    pub shooter: EntityId,
    /// The claim's sequence number.
    pub seq: u32,
    /// The weapon.
    pub weapon: WeaponId,
    /// The outcome.
    #[serde(flatten)]
    pub outcome: MeleeOutcome,
    /// What it was decided on.
    pub basis: Basis,
}

impl MeleeClaim {
    /// The claim as a shot from the eye along the aim: what the shared checks read.
    fn as_shot(&self) -> ShotClaim {
        ShotClaim {
            shooter: self.shooter,
            weapon: self.weapon,
            seq: self.seq,
            render_time: self.render_time,
            origin: self.eye,
            direction: self.aim,
            hit: None,
        }
    }

    /// The sweep rebuilt through its checked constructors: a deserialized one may hold
    /// anything.
    fn checked_sweep(&self) -> Option<ShapeSweep> {
        let start = *self.sweep.start();
        match self.sweep.path() {
            SweepPath::Line {
                direction,
                distance,
            } => ShapeSweep::line(start, direction, distance).ok(),
            SweepPath::Arc(swing) => {
                let swing = Swing::new(swing.pivot(), swing.axis(), swing.angle()).ok()?;
                ShapeSweep::arc(start, swing).ok()
            }
        }
    }
}

impl Validator {
    /// Judges a melee claim that arrived at server time `received_at` (seconds) against
    /// `history`, the weapon's limits in `melee`. Feed a shooter's claims (shots and melee)
    /// in the order they arrived: they share sequence numbers and the fire rate.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, PlacedShape, Pose, Rig, Shape, ShapeSweep, Swing, Tick, Vec3, Zone};
    /// use lagcomp_validate::{ClaimedHit, ClientTiming, MeleeClaim, MeleeOutcome, MeleeReason, MeleeRejection, MeleeRules, Participant, RenderTime, RuleSet, Validator, WeaponId};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Two players 0.9 m apart along -z (bone 0 body, 1 head, 2 eye), 64 Hz, 0.5 s kept.
    /// let rig = Arc::new(Rig::new(3, vec![
    ///     Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.25, 0.4, 0.15))),
    ///     Hitbox::new(1, "head", Zone::Head, 1, Shape::sphere(0.12)),
    /// ])?);
    /// let bones = |feet: Vec3| [1.0, 1.6, 1.65].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// let (attacker, target) = (history.spawn(Arc::clone(&rig)), history.spawn(rig));
    /// for tick in 0..=32 {
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     frame.record(attacker, &bones(Vec3::ZERO), EntityState::default())?;
    ///     frame.record(target, &bones(Vec3::new(0.0, 0.0, -0.9)), EntityState::default())?;
    /// }
    /// // The knife: timing and damage as any weapon's, reach and angle in its melee table.
    /// let knife = r#"
    ///     [weapons.knife]
    ///     kind = "melee"
    ///     id = 7
    ///     max_range = 3.0
    ///     min_interval = 0.4
    ///     aim_tolerance_deg = 10.0
    ///     origin_tolerance = 0.3
    ///     hit_leeway = 1.0
    ///     hit_leeway_min = 0.0
    ///     max_rewind = 0.35
    ///     melee = { reach = 2.0, angle_deg = 60.0, max_blade = 0.5, max_swing_deg = 150.0 }
    /// "#;
    /// let mut validator = Validator::new(RuleSet::from_toml(knife)?);
    /// let eye = Participant { team: 1, aim_bone: 2, aim_forward: Vec3::NEG_Z };
    /// validator.register(attacker, eye);
    /// validator.register(target, Participant { team: 2, ..eye });
    /// validator.set_timing(attacker, ClientTiming { srtt: 0.1, rttvar: 0.005, interp_delay: 0.1 })?;
    ///
    /// // A slash at chest height: a 60 cm blade held out to the right, swung 90 degrees
    /// // round to the front about the shoulder.
    /// let blade = PlacedShape::new(Pose::from_translation(Vec3::new(0.5, 1.3, 0.0)), Shape::cuboid(Vec3::new(0.3, 0.02, 0.01)));
    /// let swing = Swing::new(Vec3::new(0.0, 1.3, 0.0), Vec3::Y, 90f32.to_radians())?;
    /// let claim = MeleeClaim {
    ///     shooter: attacker,
    ///     weapon: WeaponId(7),
    ///     seq: 0,
    ///     render_time: RenderTime::Time(0.35),
    ///     eye: Vec3::new(0.0, 1.65, 0.0),
    ///     aim: Vec3::NEG_Z,
    ///     sweep: ShapeSweep::arc(blade, swing)?,
    ///     hit: Some(ClaimedHit { target, hitbox: None, point: None }),
    /// };
    /// let verdict = validator.validate_melee(&history, &claim, 0.5);
    /// let MeleeOutcome::Confirmed(hit) = verdict.outcome else { panic!("{}", verdict.outcome.label()) };
    /// assert_eq!((hit.target, hit.zone), (target, Zone::Torso));
    /// // The same slash with a knife of 50 cm reach (metres from the eye) is out of reach.
    /// // (Limits given the older way, as a `[melee.<name>]` table, fold into the rules.)
    /// let short = MeleeRules::from_toml("[melee.knife]\nid = 7\nreach = 0.5\nangle_deg = 60.0\nmax_blade = 0.5\nmax_swing_deg = 150.0")?;
    /// validator.set_rules(validator.rules().clone().with_melee(&short)?);
    /// let verdict = validator.validate_melee(&history, &MeleeClaim { seq: 1, render_time: RenderTime::Time(0.8), ..claim }, 0.95);
    /// assert_eq!(verdict.outcome.reason(), Some(MeleeRejection::Melee(MeleeReason::OutOfReach)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn validate_melee(
        &mut self,
        history: &History,
        claim: &MeleeClaim,
        received_at: f64,
    ) -> MeleeVerdict {
        self.validate_melee_with(history, None, claim, received_at)
    }

    /// [`Validator::validate_melee`], with the server's own level geometry blocking too.
    pub fn validate_melee_in_world(
        &mut self,
        history: &History,
        world: &dyn StaticWorld,
        claim: &MeleeClaim,
        received_at: f64,
    ) -> MeleeVerdict {
        self.validate_melee_with(history, Some(world), claim, received_at)
    }

    fn validate_melee_with(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &MeleeClaim,
        received_at: f64,
    ) -> MeleeVerdict {
        let mut basis = Basis {
            received_at,
            ..Basis::default()
        };
        let outcome = self.judge_melee(history, world, claim, received_at, &mut basis);
        let outcome = outcome.unwrap_or_else(|reason| MeleeOutcome::Rejected { reason });
        tracing::info!(
            target: "lagcomp::verdict",
            shooter = claim.shooter.to_bits(),
            seq = claim.seq,
            weapon = claim.weapon.0,
            outcome = outcome.label(),
            "melee verdict"
        );
        MeleeVerdict {
            shooter: claim.shooter,
            seq: claim.seq,
            weapon: claim.weapon,
            outcome,
            basis,
        }
    }

    fn judge_melee(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &MeleeClaim,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<MeleeOutcome, MeleeRejection> {
        // 1. Malformed: the shared numbers, weapon and shooter (a weapon of another kind
        //    is not a melee one), then the sweep's own.
        let shot = claim.as_shot();
        let screened = self
            .screen(history, &shot, WeaponKind::Melee, received_at, basis)
            .map_err(|reason| match reason {
                RejectReason::WrongWeaponKind => MeleeRejection::Melee(MeleeReason::NotMelee),
                other => MeleeRejection::Shot(other),
            })?;
        let sweep = claim.checked_sweep().ok_or(RejectReason::NonFinite)?;
        let blade = self
            .rules
            .weapon(claim.weapon)
            .and_then(WeaponRules::melee_limits)
            .ok_or(MeleeReason::NotMelee)?;
        // 2. and 3.: shared with shots.
        let policy = &self.rules.policy;
        let shooter = self
            .participants
            .get_mut(&claim.shooter)
            .ok_or(RejectReason::UnknownShooter)?;
        shooter.check_rate(policy, &shot, &screened, received_at, basis)?;
        let outcome = self.examine_melee(
            history,
            world,
            claim,
            &blade,
            &sweep,
            &screened,
            received_at,
            basis,
        );
        let fired = match &outcome {
            Err(MeleeRejection::Shot(reason)) => counts_as_fired(&Err(*reason)),
            _ => true,
        };
        if fired && let Some(shooter) = self.participants.get_mut(&claim.shooter) {
            shooter.count_shot(&screened, received_at);
        }
        outcome
    }

    /// Checks 4 to 6 as for a shot, then the melee checks. Reads, changes nothing.
    #[expect(
        clippy::too_many_arguments,
        reason = "one private step of `judge_melee`, which owns all of these"
    )]
    fn examine_melee(
        &self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &MeleeClaim,
        blade: &MeleeLimits,
        sweep: &ShapeSweep,
        screened: &Screened,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<MeleeOutcome, MeleeRejection> {
        let weapon = self
            .rules
            .weapon(claim.weapon)
            .ok_or(RejectReason::UnknownWeapon)?;
        let shooter = self
            .participants
            .get(&claim.shooter)
            .filter(|s| s.registered)
            .ok_or(RejectReason::UnknownShooter)?;
        let (target, window_policy) = self.melee_time(
            history,
            weapon,
            shooter.timing,
            screened,
            received_at,
            basis,
        )?;

        // 5. and 6.: the eye and the view, from the shooter's own history.
        let policy = &self.rules.policy;
        let moment = match policy.shooter_reference {
            ShooterReference::RenderTime => target,
            ShooterReference::Arrival => {
                RewindTarget::Time(basis.newest.ok_or(RejectReason::TimeTooOld)?)
            }
        };
        let me = history
            .entity_as_recorded(claim.shooter, moment, WindowPolicy::Clamp)
            .map_err(|e| match e {
                QueryError::Entity(_) => RejectReason::UnknownShooter,
                _ => RejectReason::TimeTooOld,
            })?
            .ok_or(RejectReason::ShooterNotAlive)?;
        if !me.state().alive {
            return Err(RejectReason::ShooterNotAlive.into());
        }
        let participant = shooter.participant;
        let aim = me
            .bone(participant.aim_bone)
            .ok_or(RejectReason::UnknownShooter)?;
        let off = claim.eye.distance(aim.translation);
        if off > weapon.origin_tolerance {
            basis.measured = Measurement::at_most(off.into(), weapon.origin_tolerance.into());
            return Err(RejectReason::OriginTooFar.into());
        }
        let forward = (aim.rotation * participant.aim_forward).normalize_or_zero();
        let aim_dir = claim.aim.normalize_or_zero();
        if forward == Vec3::ZERO
            || aim_dir.dot(forward) < weapon.aim_tolerance_deg.to_radians().cos()
        {
            return Err(RejectReason::AngleTooFar.into());
        }

        // The swing's size, against the weapon's blade and swing.
        let start = sweep.start();
        let too_large = start.shape.bounding_radius() > blade.max_blade
            || match sweep.path() {
                SweepPath::Line { distance, .. } => distance > blade.reach,
                SweepPath::Arc(swing) => swing.angle().abs().to_degrees() > blade.max_swing_deg,
            };
        if too_large {
            return Err(MeleeReason::SwingTooLarge.into());
        }
        // The blade starts in the hand, within reach of the eye.
        let start_off = start.pose.translation.distance(aim.translation);
        if start_off > blade.reach {
            basis.measured = Measurement::at_most(start_off.into(), blade.reach.into());
            return Err(MeleeReason::OutOfReach.into());
        }

        // The sweep at the rewound time.
        let ignore = [claim.shooter];
        let query = history
            .query(target)
            .ignore(&ignore)
            .window_policy(window_policy);
        let mut query = match world {
            Some(world) => query.world(world),
            None => query,
        };
        let traced = query.sweep_shape(sweep).map_err(|e| time_reason(&e))?;
        basis.time_used = Some(traced.rewind.time);
        basis.oldest = Some(traced.rewind.oldest);
        basis.newest = Some(traced.rewind.newest);
        let Some(hit) = traced.hit else {
            return Ok(match traced.stopped_by() {
                Some((by, distance)) => MeleeOutcome::Blocked { by, distance },
                None if claim.hit.is_some() => {
                    return Err(RejectReason::TamperedClaim.into());
                }
                None => MeleeOutcome::Miss,
            });
        };
        basis.sample = Some(hit.sample.kind);

        // The point struck: within reach and angle of the eye, and in its sight.
        let point = hit.entry.point;
        let from_eye = point - aim.translation;
        let reach = from_eye.length();
        if reach > blade.reach {
            basis.measured = Measurement::at_most(reach.into(), blade.reach.into());
            return Err(MeleeReason::OutOfReach.into());
        }
        let degrees = from_eye.angle_between(forward).to_degrees();
        if reach > 0.0 && degrees > blade.angle_deg {
            basis.measured = Measurement::at_most(degrees.into(), blade.angle_deg.into());
            return Err(MeleeReason::OutsideArc.into());
        }
        if reach > 0.0
            && let Ok(sight) = Ray::new(aim.translation, from_eye, reach)
        {
            // Only its blocker is read: the first wall, whatever entity stands before it.
            let mut look = history
                .query(target)
                .ignore(&ignore)
                .window_policy(window_policy);
            let seen = match world {
                Some(world) => look.world(world).ray(&sight),
                None => look.ray(&sight),
            }
            .map_err(|e| time_reason(&e))?;
            if let Some((by, distance)) = seen.stopped_by() {
                return Ok(MeleeOutcome::Blocked { by, distance });
            }
        }

        // The target's state then, and the claim.
        self.check_target(
            weapon,
            participant.team,
            hit.entity,
            hit.state,
            hit.sample.rewound(),
        )?;
        if let Some(claimed) = claim.hit
            && (claimed.target != hit.entity || claimed.hitbox.is_some_and(|h| h != hit.hitbox))
        {
            return Err(RejectReason::TamperedClaim.into());
        }
        if let Some(refusal) = self.refusal(history, hit.entity, hit.state) {
            return Ok(MeleeOutcome::Spared {
                target: hit.entity,
                refusal,
                distance: hit.distance,
            });
        }
        Ok(MeleeOutcome::Confirmed(Confirmed {
            target: hit.entity,
            hitbox: hit.hitbox,
            zone: hit.zone,
            damage_multiplier: weapon.damage.of(hit.zone),
            distance: hit.distance,
            point,
            by_leeway: false,
        }))
    }

    /// Check 4 for a melee claim: the rewind target and window policy its time gives.
    fn melee_time(
        &self,
        history: &History,
        weapon: &WeaponRules,
        timing: Option<crate::claim::ClientTiming>,
        screened: &Screened,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<(RewindTarget, WindowPolicy), RejectReason> {
        let policy = &self.rules.policy;
        let timing = timing.ok_or(RejectReason::NoTiming)?;
        let (t, target_of_claim) = screened.claimed?;
        let (oldest, newest) = history.window().ok_or(RejectReason::TimeTooOld)?;
        basis.requested_time = Some(t);
        basis.oldest = Some(oldest);
        basis.newest = Some(newest);
        if t > received_at + policy.future_tolerance {
            basis.measured = Measurement::at_most(t - received_at, policy.future_tolerance);
            return Err(RejectReason::TimeInFuture);
        }
        if weapon
            .no_rewind_above_rtt
            .is_some_and(|limit| timing.srtt > limit)
        {
            return Ok((RewindTarget::Time(newest), WindowPolicy::Reject));
        }
        basis.rewound = true;
        ClaimedMoment {
            time: t,
            target: target_of_claim,
            received_at,
            oldest,
            newest,
        }
        .rewind(weapon, policy, &timing, basis)
    }
}
