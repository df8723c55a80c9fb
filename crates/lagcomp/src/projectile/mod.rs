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
