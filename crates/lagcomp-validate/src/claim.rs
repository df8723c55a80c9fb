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
    /// Past the newest snapshot the client had (the ones after it were late or lost): the
    /// snapshot of tick `from` moved `by` seconds along the velocity it carried, the
    /// picture `lagcomp-net`'s snapshot buffer draws. The server rebuilds that picture
    /// ([`lagcomp::History::entity_extrapolated`]); the claimed moment is the tick's server
    /// time plus `by`, and `by` is bounded by the policy's
    /// [`max_extrapolation`](crate::Policy::max_extrapolation).
    Extrapolated {
        /// The newest snapshot's tick.
        from: Tick,
        /// How far past it, seconds.
        by: f64,
    },
}

/// What a shot fired while a `lagcomp-net` view was on screen claims
/// ([`lagcomp_net::stamp`]).
///
/// ```
/// use lagcomp::Tick;
/// use lagcomp_net::{Stamp, View, stamp};
/// use lagcomp_validate::RenderTime;
///
/// let view = View::Extrapolated { from: Tick(40), by: 0.05 };
/// assert_eq!(
///     RenderTime::from(stamp(&view)),
///     RenderTime::Extrapolated { from: Tick(40), by: 0.05 }
/// );
/// let blended = Stamp::Ticks { from: Tick(40), to: Tick(41), fraction: 0.5 };
/// assert_eq!(
///     RenderTime::from(blended),
///     RenderTime::Ticks { from: Tick(40), to: Tick(41), fraction: 0.5 }
/// );
/// ```
impl From<lagcomp_net::Stamp> for RenderTime {
    fn from(stamp: lagcomp_net::Stamp) -> Self {
        match stamp {
            lagcomp_net::Stamp::Ticks { from, to, fraction } => Self::Ticks { from, to, fraction },
            lagcomp_net::Stamp::Extrapolated { from, by } => Self::Extrapolated { from, by },
        }
    }
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
///
/// Built by the client from what its screen showed (usually sent over the wire and
/// decoded on the server), then judged by [`crate::Validator::validate`]. World space,
/// metres.
///
/// ```
/// use lagcomp::{EntityId, HitboxId, Tick, Vec3};
/// use lagcomp_validate::{ClaimedHit, RenderTime, ShotClaim, WeaponId};
///
/// # let (me, enemy) = (EntityId::from_bits(1), EntityId::from_bits(2));
/// // Fired while drawing 30 % of the way from tick 40 to tick 41, from the eye (1.65 m
/// // up) at an enemy's head 10 m ahead.
/// let eye = Vec3::new(0.0, 1.65, 0.0);
/// let claim = ShotClaim {
///     shooter: me,
///     weapon: WeaponId(1),
///     seq: 17,
///     render_time: RenderTime::Ticks { from: Tick(40), to: Tick(41), fraction: 0.3 },
///     origin: eye,
///     direction: Vec3::new(0.0, 1.6, -10.0) - eye,
///     hit: Some(ClaimedHit { target: enemy, hitbox: Some(HitboxId(1)), point: None }),
/// };
/// assert_eq!(claim.hit.map(|h| h.target), Some(enemy));
/// ```
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
/// Seconds, not milliseconds.
///
/// ```
/// use lagcomp_validate::ClientTiming;
///
/// // 80 ms round trip varying by 4 ms; the client draws others 100 ms in the past.
/// let timing = ClientTiming { srtt: 0.080, rttvar: 0.004, interp_delay: 0.100 };
/// assert!(timing.is_valid());
/// // A shot from this client should reach back 40 ms + 100 ms.
/// assert!((timing.expected_rewind() - 0.140).abs() < 1e-12);
/// ```
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

    /// Whether every field is finite, non-negative and below [`ClientTiming::MAX`]
    /// ([`ClientTiming::check`] says which is not).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.check().is_ok()
    }

    /// Every field must be below this, seconds. No playable connection has a smoothed
    /// round trip, a variation or an interpolation delay of 5 s; such a number is almost
    /// surely milliseconds passed as seconds (80 ms given as `80.0`), and taking it would
    /// reject every shot as `backtrack` or `time_too_old`.
    pub const MAX: f64 = 5.0;

    /// Checks every field: finite, non-negative and below [`ClientTiming::MAX`].
    ///
    /// # Errors
    /// [`TimingError`] naming the first field that is not.
    pub fn check(&self) -> Result<(), TimingError> {
        let fields = [
            ("srtt", self.srtt),
            ("rttvar", self.rttvar),
            ("interp_delay", self.interp_delay),
        ];
        for (field, value) in fields {
            if !value.is_finite() {
                return Err(TimingError::NotFinite { field, value });
            }
            if value < 0.0 {
                return Err(TimingError::Negative { field, value });
            }
            if value >= Self::MAX {
                return Err(TimingError::TooLarge { field, value });
            }
        }
        Ok(())
    }
}

/// Why a [`ClientTiming`] was refused (by [`crate::Validator::set_timing`]): the field and
/// its value, seconds.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum TimingError {
    /// NaN or infinite.
    #[error("client timing: {field} is {value}, not a finite number of seconds")]
    NotFinite {
        /// `srtt`, `rttvar` or `interp_delay`.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// Below zero.
    #[error("client timing: {field} is {value} s, below zero")]
    Negative {
        /// `srtt`, `rttvar` or `interp_delay`.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// At least [`ClientTiming::MAX`].
    #[error(
        "client timing: {field} is {value} s, longer than any playable connection \
         (5 s or more: milliseconds given as seconds? the timing is in seconds)"
    )]
    TooLarge {
        /// `srtt`, `rttvar` or `interp_delay`.
        field: &'static str,
        /// The value given.
        value: f64,
    },
}
