//! Verdicts, their reasons, and what each was decided on.

use std::fmt;

use lagcomp::{Blocker, EntityId, HitboxId, SampleKind, Vec3, Zone};
use serde::{Deserialize, Serialize};

use crate::claim::WeaponId;
use crate::evasion::Refusal;
use crate::measurement::Measurement;

/// Why a claim was rejected. Stable across versions: variants are only ever added, each
/// keeps its [`RejectReason::code`] and [`RejectReason::name`], and recordings store the
/// name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RejectReason {
    /// A number in the claim is NaN, infinite or absurd (beyond the world's range), or a
    /// fraction is outside 0..=1.
    NonFinite,
    /// The direction has zero length.
    ZeroDirection,
    /// No weapon with the claimed id.
    UnknownWeapon,
    /// The shooter is not registered with the validator or not known to the history.
    UnknownShooter,
    /// The shooter was dead (or not recorded) at the moment it was looked up.
    ShooterNotAlive,
    /// The sequence number was used before.
    Replayed,
    /// The sequence number is further behind the highest seen than the window allows.
    SequenceTooOld,
    /// The shot came sooner after the previous ones than the weapon allows.
    FireRate,
    /// The server has no timing measurement for this client yet.
    NoTiming,
    /// The claimed time lies after the shot arrived, or names a tick the server never
    /// recorded (newer than its newest, or one it skipped: no client can have drawn it).
    TimeInFuture,
    /// The claimed time is older than the weapon's (or the history's) maximum rewind,
    /// names a tick older than the oldest frame held, or the history holds no frame yet.
    TimeTooOld,
    /// The claimed time does not match the rewind measured for this client
    /// (backtracking: a client claiming an older moment than it could have seen).
    Backtrack,
    /// The claim says its client extrapolated further past its newest snapshot than the
    /// policy's `max_extrapolation` allows (a client drawing targets where they were
    /// going, not where they were).
    ExtrapolatedTooFar,
    /// The claimed muzzle is too far from the shooter's aim bone.
    OriginTooFar,
    /// The direction is outside the shooter's view plus the weapon's tolerance.
    AngleTooFar,
    /// The claimed target, hitbox or point disagrees with the server's trace and is not
    /// within the leeway.
    TamperedClaim,
    /// The target was not alive at the rewound time.
    TargetNotAlive,
    /// The target's lag compensation was off at the rewound time (invulnerable, dodging).
    TargetNotCompensated,
    /// The target is on the shooter's team and the weapon has no friendly fire.
    FriendlyFire,
    /// The claimed target can never be hit: an entity spawned as a blocker only (a door,
    /// a lift; see [`lagcomp::EntityRole`]).
    NotATarget,
    /// The weapon fires another kind of shot than the claim's (a hitscan claim for a
    /// shotgun, a pellet claim for a rifle): see [`crate::WeaponKind`].
    WrongWeaponKind,
    /// A projectile claim: the re-flown projectile never strikes the claimed target (see
    /// [`crate::projectile::ProjectileReason::ProjectileOffPath`]).
    ProjectileOffPath,
    /// A projectile claim: the projectile could not have arrived by the claimed step.
    ProjectileTooEarly,
    /// A pellet claim fires another number of pellets than the weapon does.
    PelletCountMismatch,
    /// A pellet claim's seed is not the one the shot's pellets come from.
    PelletSeedMismatch,
    /// A pellet is claimed on a target its regenerated ray does not strike first.
    PelletOffTarget,
    /// A splash victim is within the radius but hidden from the blast.
    SplashThroughWall,
    /// A splash victim has no hitbox within the radius.
    SplashOutOfRadius,
    /// The blast lies beyond the weapon's range from the muzzle.
    SplashBeyondRange,
    /// A melee claim for a weapon that is not a melee one.
    MeleeNotMelee,
    /// A melee sweep larger, or turning further, than the weapon allows.
    MeleeSwingTooLarge,
    /// A melee strike beyond the weapon's reach from the eye.
    MeleeOutOfReach,
    /// A melee strike further off the attacker's view than the weapon's angle.
    MeleeOutsideArc,
    /// A penetration claim: a layer claimed beyond where the server's shot ran out of
    /// power or was stopped (see
    /// [`crate::penetration::PenetrationReason::PenetrationBeyondPower`]).
    PenetrationBeyondPower,
    /// A penetration claim: a layer the server's shot never met where the claim puts it.
    PenetrationOffChain,
}

impl RejectReason {
    /// Every reason, in code order.
    pub const ALL: [Self; 35] = [
        Self::NonFinite,
        Self::ZeroDirection,
        Self::UnknownWeapon,
        Self::UnknownShooter,
        Self::ShooterNotAlive,
        Self::WrongWeaponKind,
        Self::Replayed,
        Self::SequenceTooOld,
        Self::FireRate,
        Self::NoTiming,
        Self::TimeInFuture,
        Self::TimeTooOld,
        Self::Backtrack,
        Self::ExtrapolatedTooFar,
        Self::OriginTooFar,
        Self::AngleTooFar,
        Self::TamperedClaim,
        Self::ProjectileOffPath,
        Self::ProjectileTooEarly,
        Self::PelletCountMismatch,
        Self::PelletSeedMismatch,
        Self::PelletOffTarget,
        Self::SplashThroughWall,
        Self::SplashOutOfRadius,
        Self::SplashBeyondRange,
        Self::TargetNotAlive,
        Self::TargetNotCompensated,
        Self::FriendlyFire,
        Self::NotATarget,
        Self::MeleeNotMelee,
        Self::MeleeSwingTooLarge,
        Self::MeleeOutOfReach,
        Self::MeleeOutsideArc,
        Self::PenetrationBeyondPower,
        Self::PenetrationOffChain,
    ];

    /// A stable number: the check's number times 100 plus the reason within it
    /// (1xx malformed, 2xx replay, 3xx fire rate, 4xx time, 5xx origin, 6xx angle,
    /// 8xx claim: 801 hitscan, 81x projectile, 83x pellets, 84x splash; 9xx target;
    /// 11xx melee; 12xx penetration).
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::NonFinite => 101,
            Self::ZeroDirection => 102,
            Self::UnknownWeapon => 103,
            Self::UnknownShooter => 104,
            Self::ShooterNotAlive => 105,
            Self::Replayed => 201,
            Self::SequenceTooOld => 202,
            Self::FireRate => 301,
            Self::NoTiming => 401,
            Self::TimeInFuture => 402,
            Self::TimeTooOld => 403,
            Self::Backtrack => 404,
            Self::ExtrapolatedTooFar => 405,
            Self::OriginTooFar => 501,
            Self::AngleTooFar => 601,
            Self::TamperedClaim => 801,
            Self::TargetNotAlive => 901,
            Self::TargetNotCompensated => 902,
            Self::FriendlyFire => 903,
            Self::NotATarget => 904,
            Self::WrongWeaponKind => 106,
            Self::ProjectileOffPath => 811,
            Self::ProjectileTooEarly => 812,
            Self::PelletCountMismatch => 831,
            Self::PelletSeedMismatch => 832,
            Self::PelletOffTarget => 833,
            Self::SplashThroughWall => 841,
            Self::SplashOutOfRadius => 842,
            Self::SplashBeyondRange => 843,
            Self::MeleeNotMelee => 1101,
            Self::MeleeSwingTooLarge => 1102,
            Self::MeleeOutOfReach => 1103,
            Self::MeleeOutsideArc => 1104,
            Self::PenetrationBeyondPower => 1201,
            Self::PenetrationOffChain => 1202,
        }
    }

    /// The stable snake_case name (as in recordings and JSON output).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::NonFinite => "non_finite",
            Self::ZeroDirection => "zero_direction",
            Self::UnknownWeapon => "unknown_weapon",
            Self::UnknownShooter => "unknown_shooter",
            Self::ShooterNotAlive => "shooter_not_alive",
            Self::Replayed => "replayed",
            Self::SequenceTooOld => "sequence_too_old",
            Self::FireRate => "fire_rate",
            Self::NoTiming => "no_timing",
            Self::TimeInFuture => "time_in_future",
            Self::TimeTooOld => "time_too_old",
            Self::Backtrack => "backtrack",
            Self::ExtrapolatedTooFar => "extrapolated_too_far",
            Self::OriginTooFar => "origin_too_far",
            Self::AngleTooFar => "angle_too_far",
            Self::TamperedClaim => "tampered_claim",
            Self::TargetNotAlive => "target_not_alive",
            Self::TargetNotCompensated => "target_not_compensated",
            Self::FriendlyFire => "friendly_fire",
            Self::NotATarget => "not_a_target",
            Self::WrongWeaponKind => "wrong_weapon_kind",
            Self::ProjectileOffPath => "projectile_off_path",
            Self::ProjectileTooEarly => "projectile_too_early",
            Self::PelletCountMismatch => "pellet_count_mismatch",
            Self::PelletSeedMismatch => "pellet_seed_mismatch",
            Self::PelletOffTarget => "pellet_off_target",
            Self::SplashThroughWall => "splash_through_wall",
            Self::SplashOutOfRadius => "splash_out_of_radius",
            Self::SplashBeyondRange => "splash_beyond_range",
            Self::MeleeNotMelee => "melee_not_melee",
            Self::MeleeSwingTooLarge => "melee_swing_too_large",
            Self::MeleeOutOfReach => "melee_out_of_reach",
            Self::MeleeOutsideArc => "melee_outside_arc",
            Self::PenetrationBeyondPower => "penetration_beyond_power",
            Self::PenetrationOffChain => "penetration_off_chain",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A confirmed hit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Confirmed {
    /// The entity hit.
    pub target: EntityId,
    /// The hitbox hit.
    pub hitbox: HitboxId,
    /// Its zone.
    pub zone: Zone,
    /// The weapon's damage multiplier for that zone.
    pub damage_multiplier: f32,
    /// Distance from the muzzle, metres.
    pub distance: f32,
    /// Where it was hit, world space at the rewound time.
    pub point: Vec3,
    /// True when the server's trace did not confirm the claim on its own and the claimed
    /// point was accepted within the weapon's leeway.
    pub by_leeway: bool,
}

/// What a claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum VerdictOutcome {
    /// The shot hit.
    Confirmed(Confirmed),
    /// The shot hit nothing within range.
    Miss,
    /// Something that blocks was in the way, as it stood at the rewound time: a wall
    /// (static geometry) or a blocker entity (a door, a lift, a vehicle).
    Blocked {
        /// What blocked: in JSON, `"wall": id` or `"entity": {..}`.
        #[serde(flatten)]
        by: Blocker,
        /// Where along the shot, metres.
        distance: f32,
    },
    /// The claim was refused.
    Rejected {
        /// Why.
        reason: RejectReason,
    },
    /// The hit is good, but the game's rules on the target deny it damage (spawn
    /// protection, a registered dodge): a miss with a reason, not a cheat.
    Refused {
        /// The entity the shot hit.
        target: EntityId,
        /// Why it takes no damage.
        refusal: Refusal,
        /// Where along the shot it was hit, metres.
        distance: f32,
    },
}

impl VerdictOutcome {
    /// A short stable label: `confirmed`, `miss`, `blocked`, the rejection reason's name
    /// or the refusal's name.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Confirmed(_) => "confirmed",
            Self::Miss => "miss",
            Self::Blocked { .. } => "blocked",
            Self::Rejected { reason } => reason.name(),
            Self::Refused { refusal, .. } => refusal.name(),
        }
    }

    /// The refusal, if the hit was refused.
    #[must_use]
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Self::Refused { refusal, .. } => Some(*refusal),
            _ => None,
        }
    }

    /// The rejection reason, if rejected.
    #[must_use]
    pub fn reason(&self) -> Option<RejectReason> {
        match self {
            Self::Rejected { reason } => Some(*reason),
            _ => None,
        }
    }
}

/// What a verdict was decided on. Fields are `None` when the check that would fill them
/// was not reached.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Basis {
    /// When the claim arrived (server time).
    pub received_at: f64,
    /// The time the claim asked for.
    pub requested_time: Option<f64>,
    /// The time the trace used (differs when there was no rewind or a fallback).
    pub time_used: Option<f64>,
    /// Oldest time the history held then.
    pub oldest: Option<f64>,
    /// Newest time the history held then.
    pub newest: Option<f64>,
    /// How the hit entity (or the claimed target) was sampled: exact, interpolated,
    /// nearest, or present.
    pub sample: Option<SampleKind>,
    /// Whether the trace was rewound (false above the weapon's no-rewind latency).
    pub rewound: bool,
    /// Whether the claimed time was replaced by the server's estimate.
    pub fallback: bool,
    /// The shooter's measured one-way latency (half the smoothed RTT), seconds.
    pub shooter_latency: Option<f64>,
    /// The shooter's interpolation delay, seconds.
    pub interp_delay: Option<f64>,
    /// How far off a rejected claim was against the tolerance of the check that refused
    /// it (see [`crate::Rejection`]); `None` for other outcomes and for checks that
    /// measure nothing. Absent from JSON when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measurement>,
}

/// The validator's answer to one claim.
///
/// ```
/// # use std::sync::Arc;
/// # use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3, Zone};
/// # use lagcomp_validate::{ClaimedHit, ClientTiming, VerdictOutcome, Participant, RejectReason, RenderTime, RuleSet, ShotClaim, Validator, WeaponId};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # // A humanoid rig (bone 0 pelvis, 1 head, 2 eye); two players 10 m apart, recorded
/// # // for half a second at 64 Hz; the validator set up in its three steps.
/// # let rig = Arc::new(Rig::new(3, vec![
/// #     Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.25, 0.4, 0.15))),
/// #     Hitbox::new(1, "head", Zone::Head, 1, Shape::sphere(0.12)),
/// # ])?);
/// # let bones = |feet: Vec3| [1.0, 1.6, 1.65].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
/// # let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
/// # let (shooter, target) = (history.spawn(Arc::clone(&rig)), history.spawn(rig));
/// # for tick in 0..=32 {
/// #     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
/// #     frame.record(shooter, &bones(Vec3::ZERO), EntityState::default())?;
/// #     frame.record(target, &bones(Vec3::new(0.0, 0.0, -10.0)), EntityState::default())?;
/// # }
/// # let mut validator = Validator::new(RuleSet::from_toml("[weapons.rifle]\nid = 1\nmax_range = 250.0\nmin_interval = 0.1\naim_tolerance_deg = 5.0\norigin_tolerance = 0.5\nhit_leeway = 1.25\nhit_leeway_min = 0.05\nmax_rewind = 0.35")?);
/// # let eye = Participant { team: 1, aim_bone: 2, aim_forward: Vec3::NEG_Z };
/// # validator.register(shooter, eye);
/// # validator.register(target, Participant { team: 2, ..eye });
/// # validator.set_timing(shooter, ClientTiming { srtt: 0.1, rttvar: 0.005, interp_delay: 0.1 })?;
/// // A claim whose muzzle is 2 m above the shooter's eye.
/// let claim = ShotClaim {
///     shooter,
///     weapon: WeaponId(1),
///     seq: 0,
///     render_time: RenderTime::Time(0.35),
///     origin: Vec3::new(0.0, 3.65, 0.0),
///     direction: Vec3::NEG_Z,
///     hit: None,
/// };
/// let verdict = validator.validate(&history, &claim, 0.5);
/// match verdict.outcome {
///     VerdictOutcome::Confirmed(hit) => println!("hit {:?}, damage x{}", hit.zone, hit.damage_multiplier),
///     VerdictOutcome::Miss | VerdictOutcome::Blocked { .. } => println!("no damage"),
///     VerdictOutcome::Rejected { reason } => println!("rejected: {reason} (code {})", reason.code()),
///     // Spawn protection or a dodge: a good shot the game denies damage, not a cheat.
///     VerdictOutcome::Refused { refusal, .. } => println!("no damage: {refusal}"),
/// }
/// assert_eq!(verdict.outcome.reason(), Some(RejectReason::OriginTooFar));
/// // For a person: how far off, against what the weapon allows.
/// let rejection = verdict.rejection().unwrap();
/// assert_eq!(rejection.to_string(), "origin_too_far: 2.00 m from the aim bone, allowed 0.50 m");
/// // What it was decided on: the time claimed, the shooter's one-way latency (seconds).
/// assert_eq!(verdict.basis.requested_time, Some(0.35));
/// assert_eq!(verdict.basis.shooter_latency, Some(0.05));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Who fired.
    pub shooter: EntityId,
    /// The claim's sequence number.
    pub seq: u32,
    /// The claimed weapon.
    pub weapon: WeaponId,
    /// The outcome.
    #[serde(flatten)]
    pub outcome: VerdictOutcome,
    /// What it was decided on.
    pub basis: Basis,
}
