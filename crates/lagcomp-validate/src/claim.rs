//! What a client sends when it fires, and what the server measured about that client.

use lagcomp::{EntityId, HitboxId, Tick, Vec3};
use serde::{Deserialize, Serialize};

/// A weapon, as claims name it (see [`crate::WeaponRules::id`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WeaponId(pub u16);

/// The moment the shooter's screen showed when it fired.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenderTime {
    /// Between two snapshot ticks at a fraction: exactly what the client interpolated.
    Ticks {
        /// The older snapshot's tick.
        from: Tick,
        /// The newer snapshot's tick.
        to: Tick,
        /// How far from `from` to `to`, 0 to 1.
        fraction: f32,
    },
    /// A server time, seconds.
    Time(f64),
}

/// The hit a client believes it made.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClaimedHit {
    /// The entity hit.
    pub target: EntityId,
    /// The hitbox, if the client says.
    #[serde(default)]
    pub hitbox: Option<HitboxId>,
    /// The point on it, world space at the render time, if the client says. Without a
    /// point, a claim the server's trace does not confirm cannot be accepted on leeway.
    #[serde(default)]
    pub point: Option<Vec3>,
}

/// A client's "I fired".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShotClaim {
    /// Who fired (the server knows this from the connection, not from the packet).
    pub shooter: EntityId,
    /// With what.
    pub weapon: WeaponId,
    /// The client's sequence number for this shot, increasing by one per shot.
    pub seq: u32,
    /// What the shooter's screen showed.
    pub render_time: RenderTime,
    /// Where the shot started (the muzzle or the eye), world space.
    pub origin: Vec3,
    /// Where it went; need not be unit length.
    pub direction: Vec3,
    /// The hit the client saw, if any.
    #[serde(default)]
    pub hit: Option<ClaimedHit>,
}

/// What the server measured about a client's connection (from its clock-sync pings).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClientTiming {
    /// Smoothed round-trip time, seconds.
    pub srtt: f64,
    /// Round-trip time variation (mean deviation), seconds.
    pub rttvar: f64,
    /// How far in the past the client draws other entities (its interpolation delay),
    /// seconds.
    pub interp_delay: f64,
}

impl ClientTiming {
    /// How far back a shot from this client should reach: half the round trip plus the
    /// interpolation delay.
    #[must_use]
    pub fn expected_rewind(&self) -> f64 {
        self.srtt / 2.0 + self.interp_delay
    }

    /// Whether every field is finite and non-negative.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        [self.srtt, self.rttvar, self.interp_delay]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0 && *v < 1e6)
    }
}
