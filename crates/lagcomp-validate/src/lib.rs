//! Shot validation on top of [`lagcomp`]: what a game server calls when a client says
//! "I fired".
//!
//! A [`Validator`] turns a [`ShotClaim`] into a [`Verdict`]: confirmed (with zone and
//! damage multiplier), miss, blocked, or rejected with a stable [`RejectReason`]. Every
//! verdict carries its [`Basis`] (the times asked for and used, the window, how the target
//! was sampled, the shooter's measured latency) and is emitted as a `tracing` event.
//!
//! - [`rules`]: weapon rules and the timing policy, from TOML.
//! - [`claim`]: the claim a client sends and the timing the server measured.
//! - [`validator::melee`]: melee claims (a blade or fist swept or swung), judged with
//!   rewind: reach and angle per weapon.
//! - [`validator`]: the checks, in order (a claim's own numbers and times in `screening`,
//!   the shooter's sequence and fire-rate memory in `shot_memory`, checks 8 and 9 on what
//!   the trace found in `judging.rs`).
//! - [`verdict`]: outcomes, reasons and their basis.
//! - [`explain`]: verdicts a person can read: how far off a rejected claim was.
//! - [`projectile`]: client-claimed projectile hits, re-flown and checked.
//! - [`penetration`]: shots through walls and bodies (a weapon's `penetration` table),
//!   the claimed chain checked against the rewound walk.
//! - [`latency`]: [`LatencyTracker`], a client's timing measured on the server from its
//!   probe replies and snapshot acknowledgements.
//! - [`audit`]: the `tracing` event and a JSON Lines audit log, and its reader.
//! - [`recording`]: match recordings (JSON Lines, `docs/FORMAT.md`) and offline
//!   re-validation.
//!
//! # Example
//!
//! A server with two players: it records their bones every tick, makes a validator from
//! the rules, adds each player with [`Validator::add_player`] (its team, its aim bone and
//! the timing measured for its connection, all checked), and judges one head shot. The
//! shooter's eye is a bone of its rig, the *aim bone*: the origin and angle checks compare
//! the shot with it. Seconds and metres throughout; a view looks along its bone's -Z.
//!
//! ```
//! use std::sync::Arc;
//!
//! use lagcomp::{
//!     BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Rig, Shape, Tick, Vec3,
//!     Zone,
//! };
//! use lagcomp_validate::{
//!     ClaimedHit, ClientTiming, VerdictOutcome, Participant, RenderTime, RuleSet, ShotClaim, Validator,
//!     WeaponId,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A humanoid rig: bone 0 the pelvis (body box), 1 the head (head sphere), 2 the eye.
//! let rig = Arc::new(Rig::new(3, vec![
//!     Hitbox::on_bone(0, HitboxId(0), "body", Zone::Torso, Shape::cuboid(Vec3::new(0.25, 0.4, 0.15))),
//!     Hitbox::on_bone(1, HitboxId(1), "head", Zone::Head, Shape::sphere(0.12)),
//! ])?);
//! // Each player's bones, standing at `feet` and looking along -Z.
//! let bones = |feet: Vec3| {
//!     [1.0, 1.6, 1.65].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up))
//! };
//!
//! // 64 ticks a second, half a second of history.
//! let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
//! let shooter = history.spawn(Arc::clone(&rig));
//! let target = history.spawn(rig);
//! for tick in 0..=32 {
//!     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
//!     frame.record(shooter, &bones(Vec3::ZERO), EntityState::default())?;
//!     frame.record(target, &bones(Vec3::new(0.0, 0.0, -10.0)), EntityState::default())?;
//! }
//!
//! let rules = RuleSet::from_toml(
//!     r#"
//!     [weapons.rifle]
//!     id = 1
//!     max_range = 250.0        # metres
//!     min_interval = 0.1       # seconds between two shots
//!     aim_tolerance_deg = 5.0
//!     origin_tolerance = 0.5   # metres from the eye
//!     hit_leeway = 1.25
//!     hit_leeway_min = 0.05    # metres
//!     max_rewind = 0.35        # seconds
//!     damage = { head = 4.0 }
//!     "#,
//! )?;
//! let mut validator = Validator::new(rules);
//! let eye = Participant { team: 1, aim_bone: 2, aim_forward: Vec3::NEG_Z };
//! // Measured from each player's pings: 100 ms round trip; it draws others 100 ms late.
//! let timing = ClientTiming { srtt: 0.100, rttvar: 0.005, interp_delay: 0.100 };
//! validator.add_player(&history, shooter, eye, timing)?;
//! validator.add_player(&history, target, Participant { team: 2, ..eye }, timing)?;
//!
//! // The shot arrives at server time 0.5 s; the client saw the world as it was 0.15 s
//! // earlier and aimed from its eye at the target's head.
//! let received_at = 0.5;
//! let origin = Vec3::new(0.0, 1.65, 0.0);
//! let claim = ShotClaim {
//!     shooter,
//!     weapon: WeaponId(1),
//!     seq: 0,
//!     render_time: RenderTime::Time(received_at - timing.expected_rewind()),
//!     origin,
//!     direction: Vec3::new(0.0, 1.6, -10.0) - origin,
//!     hit: Some(ClaimedHit { target, hitbox: None, point: None }),
//! };
//! let verdict = validator.validate(&history, &claim, received_at);
//! let VerdictOutcome::Confirmed(hit) = verdict.outcome else { panic!("{}", verdict.outcome.label()) };
//! assert_eq!((hit.target, hit.zone, hit.damage_multiplier), (target, Zone::Head, 4.0));
//! // Judged at the moment the client saw: 0.35 s.
//! assert!((verdict.basis.time_used.unwrap() - 0.35).abs() < 1e-9);
//! # Ok(())
//! # }
//! ```

mod any;
pub mod audit;
pub mod claim;
pub mod evasion;
pub mod explain;
mod extrapolated;
mod fired;
mod folded;
mod jsonl;
pub mod latency;
mod measurement;
pub mod pellets;
pub mod penetration;
pub mod projectile;
pub mod recording;
pub mod rules;
mod screening;
mod shot_memory;
pub mod splash;
pub mod validator;
pub mod verdict;
mod window;

pub use any::{WeaponClaim, WeaponVerdict};
pub use audit::AuditLog;
pub use claim::{ClaimedHit, ClientTiming, RenderTime, ShotClaim, TimingError, WeaponId};
pub use evasion::{DodgeRule, Refusal};
pub use explain::Rejection;
pub use jsonl::TornTail;
pub use latency::{LatencyError, LatencyTracker};
pub use measurement::Measurement;
pub use rules::{
    AreaRules, DamageMultipliers, FalloffRules, FlightRules, MeleeLimits, PelletPattern,
    PelletRules, PenetrationTable, Policy, RuleSet, RulesError, ShooterReference, TimeMismatch,
    WeaponKind, WeaponRules,
};
pub use validator::AddPlayerError;
pub use validator::melee::{
    MeleeClaim, MeleeOutcome, MeleeReason, MeleeRejection, MeleeRules, MeleeRulesError,
    MeleeVerdict, MeleeWeapon,
};
pub use validator::{Participant, Validator};
pub use verdict::{Basis, Confirmed, RejectReason, Verdict, VerdictOutcome};
