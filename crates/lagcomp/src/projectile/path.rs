//! A projectile's path traced step by step against the world as its shooter saw it,
//! advanced by the flight time.

use glam::Vec3;

use super::flight::{Flight, FlightState};
use crate::history::{EntityId, History};
use crate::query::{EntityBlock, Hit, QueryError, Ray, RayError, StaticHit};
use crate::time::{RewindError, RewindTarget, WindowPolicy};
use crate::world::StaticWorld;

/// A projectile as fired: the moment its shooter saw, where it left the muzzle, which way,
/// and how it flies.
///
/// `fired_at` is the shooter's render time R (a tick pair or a server time, as for a
/// hitscan shot). Step `k` of the flight, covering flight times `t_k` to `t_k+1`, is
/// traced against the world at R + `t_k`: rewound while that moment is in the past, and
/// against the present (the history's newest frame) once it reaches it. A fast bullet
/// thus hits what its shooter saw, and a slow rocket meets targets where they stood when
/// it got there, never where they stood half a second ago.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProjectileShot {
    /// The moment the shooter saw when firing.
    pub fired_at: RewindTarget,
    /// The muzzle, in metres.
    pub origin: Vec3,
    /// Which way it was fired; any length but zero.
    pub direction: Vec3,
    /// The weapon's flight model.
    pub flight: Flight,
    /// The shooter, whose own hitboxes never stop the projectile.
    pub shooter: Option<EntityId>,
    /// Which layers of entities and static geometry it can strike (`u32::MAX`: all).
    pub layers: u32,
}

/// What ended a projectile's flight.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Struck {
    /// A hitbox of an entity, as it stood at the moment the step was traced.
    Entity(Hit),
    /// A piece of static geometry: the history's level or the server's world.
    Static(StaticHit),
    /// An entity that blocks (a door, a lift; a vehicle seen only as a blocker), as it
    /// stood at the moment the step was traced.
    Blocker(EntityBlock),
    /// It flew its whole max flight time without striking anything.
    Expired,
    /// It left the accepted coordinate range ([`crate::math::MAX_COORDINATE`]), or the
    /// history it was traced against was emptied.
    Lost,
}

/// Where and when a flight ended.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProjectileImpact {
    /// The step during which it ended (for [`Struck::Expired`], the number of steps flown).
    pub step: u32,
    /// The flight time at the start of that step, in seconds.
    pub flight_time: f64,
    /// The server time that step was traced at: R + `flight_time`, or the newest frame's
    /// time once that moment was in the present.
    pub time: f64,
    /// The projectile's centre at contact (at the end of its flight when nothing was
    /// struck), in metres.
    pub position: Vec3,
    /// Its velocity during that step, in m/s.
    pub velocity: Vec3,
    /// What it struck.
    pub struck: Struck,
}

/// Why a projectile could not be fired or re-flown. Nothing is changed by a refusal.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ProjectileError {
    /// The muzzle is not finite or out of range, or the direction is zero or not finite.
    #[error("projectile aim: {0}")]
    Aim(#[from] RayError),
    /// The fire moment is malformed, or outside the history's window.
    #[error(transparent)]
    Rewind(#[from] RewindError),
    /// A step's trace was refused.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The projectile set holds as many projectiles as it was built for.
    #[error("the projectile set is full ({0} projectiles)")]
    Full(usize),
}

/// A projectile in flight on the history's clock: the state the stepping carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct InFlight {
    /// The shooter's render time R, resolved to server seconds.
    pub(super) fired: f64,
    pub(super) state: FlightState,
    pub(super) flight: Flight,
    pub(super) shooter: Option<EntityId>,
    pub(super) layers: u32,
}

impl InFlight {
    /// Resolves the shot's fire moment and launches it.
    pub(super) fn launch(
        history: &History,
        shot: &ProjectileShot,
    ) -> Result<Self, ProjectileError> {
        let state = shot.flight.launch(shot.origin, shot.direction)?;
        let fired = history.resolve(shot.fired_at, WindowPolicy::Reject)?;
        Ok(Self {
            fired,
            state,
            flight: shot.flight,
            shooter: shot.shooter,
            layers: shot.layers,
        })
    }

    /// The server time step `step` starts at.
    pub(super) fn start_of(&self, step: u32) -> f64 {
        self.fired + self.flight.time_of_step(step)
    }

    /// Flies the steps that start before step `until`, each traced at R + its flight time
    /// (the present once that is past `present`); returns how the flight ended, if it did.
    /// The state is left at the start of the first step not flown.
    pub(super) fn fly(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        present: f64,
        until: u32,
    ) -> Result<Option<ProjectileImpact>, QueryError> {
        let flight = self.flight;
        let ignore = self.shooter.as_slice();
        while self.state.step < until {
            let step = self.state.step;
            if step >= flight.steps() {
                return Ok(Some(self.end(present, Struck::Expired)));
            }
            let next = flight.advance(&self.state);
            let ray = match Ray::between(self.state.position, next.position) {
                Ok(ray) => ray,
                Err(RayError::ZeroDirection) => {
                    // Hanging still for a step: the sphere where it is.
                    Ray::new(self.state.position, Vec3::Y, 0.0)?
                }
                Err(_) => return Ok(Some(self.end(present, Struck::Lost))),
            };
            // Clamped, not refused: the fire moment was in the window, and a projectile the
            // server did not advance for longer than the window is traced at its oldest
            // frame rather than dropped.
            let time = self.start_of(step).min(present);
            let query = history
                .query(RewindTarget::at(time))
                .window_policy(WindowPolicy::Clamp)
                .layers(self.layers)
                .ignore(ignore);
            let trace = match world {
                Some(world) => query.world(world).sweep(&ray, flight.radius()),
                None => {
                    let mut query = query;
                    query.sweep(&ray, flight.radius())
                }
            }?;
            let contact = |distance: f32| ProjectileImpact {
                step,
                flight_time: flight.time_of_step(step),
                time: trace.rewind.time,
                position: ray.at(distance),
                velocity: self.state.velocity,
                struck: Struck::Expired,
            };
            if let Some(hit) = trace.hit {
                return Ok(Some(ProjectileImpact {
                    struck: Struck::Entity(hit),
                    ..contact(hit.distance)
                }));
            }
            // A blocking entity is nearer than the wall: the wall ends the trace's reach.
            if let Some(block) = trace.blocking_entity {
                return Ok(Some(ProjectileImpact {
                    struck: Struck::Blocker(block),
                    ..contact(block.distance)
                }));
            }
            if let Some(wall) = trace.blocker {
                return Ok(Some(ProjectileImpact {
                    struck: Struck::Static(wall),
                    ..contact(wall.distance)
                }));
            }
            self.state = next;
        }
        Ok(None)
    }

    /// The end of a flight where it stands now, struck nothing.
    pub(super) fn end(&self, present: f64, struck: Struck) -> ProjectileImpact {
        let step = self.state.step;
        ProjectileImpact {
            step,
            flight_time: self.flight.time_of_step(step),
            time: self.start_of(step).min(present),
            position: self.state.position,
            velocity: self.state.velocity,
            struck,
        }
    }
}

impl ProjectileShot {
    /// Flies the whole path, from the fire moment to the first thing struck or the max
    /// flight time, each step traced as the type's docs say (the steps past the present
    /// against the present). `world` is the server's level geometry, as
    /// [`crate::Query::world`] takes it; the history's own level blocks either way. Along
    /// the path, the first contact wins: the earliest step, and within a step the nearest
    /// hitbox in front of the nearest wall.
    ///
    /// # Errors
    /// [`ProjectileError::Aim`] for a bad muzzle or direction, [`ProjectileError::Rewind`]
    /// for a fire moment that is malformed or outside the history's window.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// use lagcomp::projectile::{Flight, ProjectileShot, Struck};
    /// use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, RewindTarget, Rig, Shape, Tick, Vec3, Zone};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// let rig = Arc::new(Rig::rigid(vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)))])?);
    /// let target = history.spawn(rig);
    /// // A target standing 40 m down range for half a second, recorded at 64 Hz.
    /// for tick in 0..=32_u32 {
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     frame.record_rigid(target, BoneTransform::from_translation(Vec3::new(0.0, 1.0, 40.0)), EntityState::default())?;
    /// }
    /// // A 400 m/s bullet with drop, fired at it as the shooter saw tick 10.
    /// let bullet = Flight::new(400.0, Vec3::new(0.0, -9.81, 0.0), 0.0, 0.01, 1.0 / 64.0, 2.0)?;
    /// let shot = ProjectileShot {
    ///     fired_at: RewindTarget::between(Tick(10), Tick(11), 0.0),
    ///     origin: Vec3::new(0.0, 1.2, 0.0),
    ///     direction: Vec3::Z,
    ///     flight: bullet,
    ///     shooter: None,
    ///     layers: u32::MAX,
    /// };
    /// let impact = shot.fly(&history, None)?;
    /// assert!(matches!(impact.struck, Struck::Entity(hit) if hit.entity == target));
    /// assert_eq!(impact.step, 6); // 40 m at 400 m/s is 0.1 s: the 7th 1/64 s step
    /// assert!(impact.position.y < 1.2); // it dropped on the way
    /// # Ok(())
    /// # }
    /// ```
    pub fn fly(
        &self,
        history: &History,
        world: Option<&dyn StaticWorld>,
    ) -> Result<ProjectileImpact, ProjectileError> {
        self.fly_from(history, world).map(|(_, impact)| impact)
    }

    /// [`ProjectileShot::fly`], and the fire moment R it resolved, in server seconds.
    pub(super) fn fly_from(
        &self,
        history: &History,
        world: Option<&dyn StaticWorld>,
    ) -> Result<(f64, ProjectileImpact), ProjectileError> {
        let mut flying = InFlight::launch(history, self)?;
        let present = history.window().map_or(flying.fired, |(_, newest)| newest);
        let end = flying.fly(history, world, present, u32::MAX)?;
        // `fly` to `u32::MAX` ends by the max flight time at the latest.
        let end = end.unwrap_or_else(|| flying.end(present, Struck::Expired));
        Ok((flying.fired, end))
    }
}
