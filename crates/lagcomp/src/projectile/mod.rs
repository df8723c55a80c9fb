//! Projectiles: rockets, grenades, arrows and bullets with travel time, gravity and drag,
//! validated with rewind.
//!
//! What lives here: the flight model and its one deterministic integrator ([`Flight`],
//! [`FlightState`]: client and server fly the same path, bit for bit), a path traced step
//! by step against the world as its shooter saw it advanced by the flight time
//! ([`ProjectileShot::fly`]), server-simulated projectiles ([`ProjectileSet`], advanced
//! every tick, no allocation in steady state), and the check of a client's claimed hit
//! ([`ProjectileClaim::review`]). Hitscan shots are [`crate::query`]'s; the rules of a
//! weapon and the verdict on a shot are the validator's (`lagcomp-validate`).
//!
//! Units: metres, seconds, m/s, m/s^2.
//!
//! # How a projectile meets rewind
//!
//! A projectile fired at render time R (what the shooter saw) traces step `k` of its
//! flight, from flight time `t_k` to `t_k+1`, as a sphere of its radius swept against the
//! world at R + `t_k`: rewound while that moment lies in the past, against the present
//! (the newest recorded frame) once it reaches it. The shooter's own latency is thus
//! forgiven, as for a hitscan shot, but only for the early part of the flight: a slow
//! rocket that arrives after half a second meets its target where the target stood then,
//! not where the shooter saw it.
//!
//! # Example
//!
//! ```
//! # use std::sync::Arc;
//! use lagcomp::projectile::{Flight, ProjectileShot, Struck};
//! use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, RewindTarget, Rig, Shape, Tick, Vec3, Zone};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A target that stood 30 m down range until 0.5 s, then stepped 5 m aside.
//! let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 1.0 })?;
//! let rig = Arc::new(Rig::rigid(vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)))])?);
//! let target = history.spawn(rig);
//! for tick in 0..=64_u32 {
//!     let time = f64::from(tick) / 64.0;
//!     let x = if time < 0.5 { 0.0 } else { 5.0 };
//!     let mut frame = history.begin_frame(Tick(tick), time)?;
//!     frame.record_rigid(target, BoneTransform::from_translation(Vec3::new(x, 1.0, 30.0)), EntityState::default())?;
//! }
//! // Both fired at it as their shooters saw it at 0.4 s.
//! let gravity = Vec3::new(0.0, -9.81, 0.0);
//! let fire = |flight| ProjectileShot {
//!     fired_at: RewindTarget::at(0.4),
//!     origin: Vec3::Y,
//!     direction: Vec3::Z,
//!     flight,
//!     shooter: None,
//!     layers: u32::MAX,
//! };
//! // A bullet (600 m/s, drop, drag) arrives in 0.05 s, before the target moved: a hit.
//! let bullet = Flight::new(600.0, gravity, 0.0005, 0.005, 1.0 / 64.0, 1.0)?;
//! let impact = fire(bullet).fly(&history, None)?;
//! assert!(matches!(impact.struck, Struck::Entity(hit) if hit.entity == target));
//! // A rocket (20 m/s) arrives after 1.5 s, long after: it flies on past.
//! let rocket = Flight::new(20.0, Vec3::ZERO, 0.0, 0.15, 1.0 / 64.0, 3.0)?;
//! assert_eq!(fire(rocket).fly(&history, None)?.struck, Struck::Expired);
//! # Ok(())
//! # }
//! ```

mod claim;
mod flight;
mod path;
mod set;

#[cfg(test)]
mod tests;

pub use claim::{ClaimOutcome, ClaimReview, ClaimTolerance, ClaimedTarget, ProjectileClaim};
pub use flight::{Flight, FlightError, FlightState};
pub use path::{ProjectileError, ProjectileImpact, ProjectileShot, Struck};
pub use set::{Landed, ProjectileId, ProjectileSet};
