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
//! - [`validator`]: the checks, in order.
//! - [`verdict`]: outcomes, reasons and their basis.
//! - [`audit`]: the `tracing` event and a JSON Lines audit log, and its reader.
//! - [`recording`]: match recordings (JSON Lines, `docs/FORMAT.md`) and offline
//!   re-validation.

pub mod audit;
pub mod claim;
mod jsonl;
pub mod recording;
pub mod rules;
mod shot_memory;
pub mod validator;
pub mod verdict;

pub use audit::AuditLog;
pub use claim::{ClaimedHit, ClientTiming, RenderTime, ShotClaim, WeaponId};
pub use jsonl::TornTail;
pub use rules::{
    DamageMultipliers, Policy, RuleSet, RulesError, ShooterReference, TimeMismatch, WeaponRules,
};
pub use validator::{Participant, Validator};
pub use verdict::{Basis, Confirmed, Outcome, RejectReason, Verdict};
