//! The flight model and its one integrator: where a projectile is after each fixed step.

use glam::Vec3;

use crate::math::MAX_EXTENT;
use crate::query::{Ray, RayError};

/// How a weapon's projectile flies: launch speed, gravity, drag, size, and the fixed step
/// its path is integrated and traced with. Client and server fly the same model through
/// [`Flight::advance`] and get the same path, bit for bit.
///
/// Drag is quadratic in speed (air resistance at the speeds of bullets and rockets): the
/// acceleration is `gravity - drag * |v| * v`, so `drag` is in 1/m (for a body of mass `m`,
/// frontal area `A` and drag coefficient `Cd` in air of density `rho`,
/// `drag = rho * Cd * A / (2 m)`; about 0.001 /m for a rifle bullet, 0 for a rocket that
/// holds its speed).
///
/// # Example
/// ```
/// use lagcomp::Vec3;
/// use lagcomp::projectile::Flight;
///
/// // A rocket: 25 m/s, no gravity, no drag, 15 cm radius, traced at 64 Hz for 5 s.
/// let rocket = Flight::new(25.0, Vec3::ZERO, 0.0, 0.15, 1.0 / 64.0, 5.0)?;
/// assert_eq!(rocket.steps(), 320);
/// // Refused: a projectile that does not move.
/// assert!(Flight::new(0.0, Vec3::ZERO, 0.0, 0.15, 1.0 / 64.0, 5.0).is_err());
/// # Ok::<(), lagcomp::projectile::FlightError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
// Read through `Flight::new`, so a bad model in a file is refused as in code.
#[cfg_attr(feature = "serde", serde(try_from = "FlightSpec", into = "FlightSpec"))]
pub struct Flight {
    muzzle_speed: f32,
    gravity: Vec3,
    drag: f32,
    radius: f32,
    step: f32,
    max_time: f32,
    steps: u32,
}

/// Why a flight model was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum FlightError {
    /// The muzzle speed is not finite or not in `(0, MAX_SPEED]` m/s.
    #[error("muzzle speed {0} m/s is not in (0, {max}]", max = Flight::MAX_SPEED)]
    MuzzleSpeed(f32),
    /// Gravity has a non-finite component or is stronger than `MAX_ACCELERATION` m/s^2.
    #[error("gravity is not finite or exceeds {max} m/s^2", max = Flight::MAX_ACCELERATION)]
    Gravity,
    /// The drag factor is not finite or not in `[0, MAX_DRAG]` 1/m.
    #[error("drag {0} /m is not in [0, {max}]", max = Flight::MAX_DRAG)]
    Drag(f32),
    /// The radius is not finite or not in `[0, MAX_EXTENT]` m.
    #[error("projectile radius {0} m is not in [0, {MAX_EXTENT}]")]
    Radius(f32),
    /// The step is not finite or not in `(0, MAX_STEP]` s.
    #[error("flight step {0} s is not in (0, {max}]", max = Flight::MAX_STEP)]
    Step(f32),
    /// The max flight time is not finite, not positive, or needs more than `MAX_STEPS`
    /// steps.
    #[error("max flight time {0} s is not positive or needs more than {max} steps", max = Flight::MAX_STEPS)]
    MaxTime(f32),
}

/// A projectile in flight: where it is, how fast it goes, and how many steps it has flown.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FlightState {
    /// The centre of the projectile, in metres.
    pub position: Vec3,
    /// Its velocity, in m/s.
    pub velocity: Vec3,
    /// Steps flown since launch: the flight time is `step * flight.step()`.
    pub step: u32,
}

impl Flight {
    /// The fastest muzzle speed accepted, in m/s (a railgun slug, with room to spare).
    pub const MAX_SPEED: f32 = 1.0e4;
    /// The strongest gravity accepted, in m/s^2.
    pub const MAX_ACCELERATION: f32 = 1.0e3;
    /// The largest drag factor accepted, in 1/m.
    pub const MAX_DRAG: f32 = 10.0;
    /// The longest step accepted, in seconds.
    pub const MAX_STEP: f32 = 1.0;
    /// The most steps a flight may take (its max time over its step, rounded up).
    pub const MAX_STEPS: u32 = 100_000;

    /// A flight model: `muzzle_speed` in m/s, `gravity` in m/s^2 (say `-9.81 * Vec3::Y`),
    /// quadratic `drag` in 1/m (see the type's docs), projectile `radius` in metres (0 for
    /// a point), a fixed `step` in seconds (the server's tick interval is a good choice),
    /// and `max_time` in seconds after which the projectile expires.
    ///
    /// # Errors
    /// [`FlightError`] naming the first value that is not finite or out of range.
    pub fn new(
        muzzle_speed: f32,
        gravity: Vec3,
        drag: f32,
        radius: f32,
        step: f32,
        max_time: f32,
    ) -> Result<Self, FlightError> {
        if !(muzzle_speed > 0.0 && muzzle_speed <= Self::MAX_SPEED) {
            return Err(FlightError::MuzzleSpeed(muzzle_speed));
        }
        if !(gravity.is_finite() && gravity.abs().max_element() <= Self::MAX_ACCELERATION) {
            return Err(FlightError::Gravity);
        }
        if !(0.0..=Self::MAX_DRAG).contains(&drag) {
            return Err(FlightError::Drag(drag));
        }
        if !(0.0..=MAX_EXTENT).contains(&radius) {
            return Err(FlightError::Radius(radius));
        }
        if !(step > 0.0 && step <= Self::MAX_STEP) {
            return Err(FlightError::Step(step));
        }
        if !(max_time > 0.0 && max_time.is_finite()) {
            return Err(FlightError::MaxTime(max_time));
        }
        let steps = (f64::from(max_time) / f64::from(step)).ceil();
        if steps > f64::from(Self::MAX_STEPS) {
            return Err(FlightError::MaxTime(max_time));
        }
        Ok(Self {
            muzzle_speed,
            gravity,
            drag,
            radius,
            step,
            max_time,
            // In range by the check above, and at least 1 as both times are positive.
            steps: steps as u32,
        })
    }

    /// Launch speed, m/s.
    #[must_use]
    pub const fn muzzle_speed(&self) -> f32 {
        self.muzzle_speed
    }

    /// Gravity, m/s^2.
    #[must_use]
    pub const fn gravity(&self) -> Vec3 {
        self.gravity
    }

    /// Quadratic drag factor, 1/m.
    #[must_use]
    pub const fn drag(&self) -> f32 {
        self.drag
    }

    /// Projectile radius, metres.
    #[must_use]
    pub const fn radius(&self) -> f32 {
        self.radius
    }

    /// The fixed step, seconds.
    #[must_use]
    pub const fn step(&self) -> f32 {
        self.step
    }

    /// The max flight time, seconds.
    #[must_use]
    pub const fn max_time(&self) -> f32 {
        self.max_time
    }

    /// How many steps a flight takes before it expires: `max_time / step`, rounded up.
    #[must_use]
    pub const fn steps(&self) -> u32 {
        self.steps
    }

    /// The flight time at the start of step `step`, in seconds: `step * self.step()`,
    /// computed in `f64` so that it adds to a server time without rounding twice.
    #[must_use]
    pub fn time_of_step(&self, step: u32) -> f64 {
        f64::from(step) * f64::from(self.step)
    }

    /// The projectile as it leaves the muzzle at `origin`, flying along `direction`
    /// (normalized here) at the muzzle speed; step 0.
    ///
    /// # Errors
    /// [`RayError`] for an origin that is not finite or out of range, or a direction that
    /// is zero or not finite (the checks of [`Ray::new`]).
    ///
    /// # Example
    /// ```
    /// use lagcomp::Vec3;
    /// use lagcomp::projectile::Flight;
    ///
    /// let flight = Flight::new(50.0, Vec3::ZERO, 0.0, 0.0, 0.01, 1.0)?;
    /// let state = flight.launch(Vec3::Y, Vec3::new(0.0, 0.0, 2.0))?;
    /// assert_eq!(state.velocity, Vec3::new(0.0, 0.0, 50.0)); // m/s
    /// assert!(flight.launch(Vec3::Y, Vec3::ZERO).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn launch(&self, origin: Vec3, direction: Vec3) -> Result<FlightState, RayError> {
        let aim = Ray::new(origin, direction, 0.0)?;
        Ok(FlightState {
            position: origin,
            velocity: aim.dir() * self.muzzle_speed,
            step: 0,
        })
    }

    /// The projectile one step later: the one integrator client and server share.
    ///
    /// With `a = gravity - drag * |v| * v` taken at the start of the step and `dt` the
    /// step, `position += v * dt + a * (dt * dt / 2)` and `velocity += a * dt`: exact (up
    /// to rounding) for a drag-free flight, where the path is the parabola
    /// `origin + v0 * t + gravity * t^2 / 2`. Plain `f32` operations in a fixed order, no
    /// fused multiply-add and no SIMD, so every build on every machine gets the same bits.
    ///
    /// # Example
    /// ```
    /// use lagcomp::Vec3;
    /// use lagcomp::projectile::Flight;
    ///
    /// // 64 m/s along x, 8 m/s^2 down, 1/8 s steps: after one second (8 steps) it is
    /// // 64 m out and has dropped 8 * 1^2 / 2 = 4 m.
    /// let flight = Flight::new(64.0, Vec3::new(0.0, -8.0, 0.0), 0.0, 0.0, 0.125, 2.0)?;
    /// let mut state = flight.launch(Vec3::ZERO, Vec3::X)?;
    /// for _ in 0..8 {
    ///     state = flight.advance(&state);
    /// }
    /// assert_eq!(state.position, Vec3::new(64.0, -4.0, 0.0));
    /// assert_eq!(state.velocity, Vec3::new(64.0, -8.0, 0.0));
    /// assert_eq!(state.step, 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn advance(&self, state: &FlightState) -> FlightState {
        let dt = self.step;
        let half_dt2 = dt * dt * 0.5;
        let [px, py, pz] = state.position.to_array();
        let [vx, vy, vz] = state.velocity.to_array();
        let [gx, gy, gz] = self.gravity.to_array();
        // Written out component by component so that no library change (a SIMD dot
        // product, a fused multiply-add) can reorder the arithmetic under either peer.
        let speed = (vx * vx + vy * vy + vz * vz).sqrt();
        let slow = self.drag * speed;
        let (ax, ay, az) = (gx - vx * slow, gy - vy * slow, gz - vz * slow);
        FlightState {
            position: Vec3::new(
                px + vx * dt + ax * half_dt2,
                py + vy * dt + ay * half_dt2,
                pz + vz * dt + az * half_dt2,
            ),
            velocity: Vec3::new(vx + ax * dt, vy + ay * dt, vz + az * dt),
            step: state.step.saturating_add(1),
        }
    }
}

/// A [`Flight`]'s fields as written in a file (its step count is derived).
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FlightSpec {
    muzzle_speed: f32,
    gravity: Vec3,
    drag: f32,
    radius: f32,
    step: f32,
    max_time: f32,
}

#[cfg(feature = "serde")]
impl From<Flight> for FlightSpec {
    fn from(flight: Flight) -> Self {
        Self {
            muzzle_speed: flight.muzzle_speed,
            gravity: flight.gravity,
            drag: flight.drag,
            radius: flight.radius,
            step: flight.step,
            max_time: flight.max_time,
        }
    }
}

#[cfg(feature = "serde")]
impl TryFrom<FlightSpec> for Flight {
    type Error = FlightError;

    fn try_from(spec: FlightSpec) -> Result<Self, FlightError> {
        Self::new(
            spec.muzzle_speed,
            spec.gravity,
            spec.drag,
            spec.radius,
            spec.step,
            spec.max_time,
        )
    }
}
