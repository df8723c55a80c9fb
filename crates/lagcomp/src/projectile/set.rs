//! Server-simulated projectiles: a fixed-capacity set the server advances every tick.

use super::flight::FlightState;
use super::path::{InFlight, ProjectileError, ProjectileImpact, ProjectileShot, Struck};
use crate::history::History;
use crate::time::RewindError;
use crate::world::StaticWorld;

/// A handle to a projectile in a [`ProjectileSet`]. Generational: once the projectile has
/// landed or been removed, its handle no longer finds anything, even when its place is
/// reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProjectileId {
    index: u32,
    generation: u32,
}

/// A projectile of a [`ProjectileSet`] that ended its flight during
/// [`ProjectileSet::advance`]; its handle is stale from then on.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Landed {
    /// The projectile.
    pub projectile: ProjectileId,
    /// What it struck, where and when.
    pub impact: ProjectileImpact,
}

/// One place in the set.
#[derive(Debug, Clone, Copy)]
struct Place {
    generation: u32,
    flying: Option<InFlight>,
}

/// The projectiles the server simulates: fired with [`ProjectileSet::fire`], advanced
/// every tick by [`ProjectileSet::advance`], which reports each landing.
///
/// The set holds at most the capacity it was built with, and allocates nothing after
/// construction: firing, advancing and removing reuse its places (give `advance` an
/// impact buffer with room for [`ProjectileSet::capacity`] landings and the whole tick
/// allocates nothing).
///
/// A projectile flies on the history's clock. After each frame is recorded, `advance`
/// flies every step whose end, R + `t_k+1` on the shooter's render time R, has been
/// reached by the newest frame: a projectile fired with latency catches up at once through
/// rewound steps (each traced at R + `t_k`, as its shooter saw the world then), and from
/// then on flies one step a tick against the present: still traced at R + `t_k`, which
/// now lies less than one step before the newest frame, the moment the step begins (so a
/// step is never traced against a world newer than the projectile). See
/// [`ProjectileShot`].
///
/// # Example
/// ```
/// # use std::sync::Arc;
/// use lagcomp::projectile::{Flight, ProjectileSet, ProjectileShot, Struck};
/// use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, RewindTarget, Rig, Shape, Tick, Vec3, Zone};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
/// let rig = Arc::new(Rig::rigid(vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)))])?);
/// let target = history.spawn(rig);
/// let stand = BoneTransform::from_translation(Vec3::new(0.0, 1.0, 20.0)); // 20 m away
/// let mut record = |history: &mut History, tick: u32| -> Result<(), Box<dyn std::error::Error>> {
///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
///     frame.record_rigid(target, stand, EntityState::default())?;
///     Ok(())
/// };
/// for tick in 0..=10 {
///     record(&mut history, tick)?;
/// }
/// let mut rockets = ProjectileSet::with_capacity(64);
/// let mut landed = Vec::with_capacity(rockets.capacity());
/// // A 25 m/s rocket fired at tick 10 as its shooter saw tick 6 (62.5 ms of latency).
/// let rocket = Flight::new(25.0, Vec3::ZERO, 0.0, 0.1, 1.0 / 64.0, 5.0)?;
/// let id = rockets.fire(&history, &ProjectileShot {
///     fired_at: RewindTarget::between(Tick(6), Tick(7), 0.0),
///     origin: Vec3::Y,
///     direction: Vec3::Z,
///     flight: rocket,
///     shooter: None,
///     layers: u32::MAX,
/// })?;
/// // Every tick: record the frame, then advance the projectiles.
/// for tick in 11..=80 {
///     record(&mut history, tick)?;
///     rockets.advance(&history, None, &mut landed)?;
///     if !landed.is_empty() {
///         break;
///     }
/// }
/// assert_eq!(landed.len(), 1);
/// assert_eq!(landed[0].projectile, id);
/// assert!(matches!(landed[0].impact.struck, Struck::Entity(hit) if hit.entity == target));
/// assert!(rockets.is_empty());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ProjectileSet {
    places: Vec<Place>,
    /// Places with no projectile, taken from the end.
    free: Vec<u32>,
}

impl ProjectileSet {
    /// A set that holds up to `capacity` projectiles at once (at most `u32::MAX`),
    /// allocated here, once.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.min(u32::MAX as usize);
        Self {
            places: vec![
                Place {
                    generation: 0,
                    flying: None,
                };
                capacity
            ],
            // Reversed, so the first projectiles take the first places.
            free: (0..capacity as u32).rev().collect(),
        }
    }

    /// How many projectiles it can hold at once.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.places.len()
    }

    /// How many are in flight.
    #[must_use]
    pub fn len(&self) -> usize {
        self.places.len() - self.free.len()
    }

    /// Whether none is in flight.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Launches a projectile; it flies from the next [`ProjectileSet::advance`].
    ///
    /// # Errors
    /// [`ProjectileError::Aim`] for a bad muzzle or direction, [`ProjectileError::Rewind`]
    /// for a fire moment that is malformed or outside the history's window,
    /// [`ProjectileError::Full`] when the set is full. The set is unchanged by a refusal.
    pub fn fire(
        &mut self,
        history: &History,
        shot: &ProjectileShot,
    ) -> Result<ProjectileId, ProjectileError> {
        let flying = InFlight::launch(history, shot)?;
        let index = self
            .free
            .pop()
            .ok_or(ProjectileError::Full(self.places.len()))?;
        let place = &mut self.places[index as usize];
        place.flying = Some(flying);
        Ok(ProjectileId {
            index,
            generation: place.generation,
        })
    }

    /// Where a projectile is now (the start of its next step); `None` for a stale handle.
    #[must_use]
    pub fn get(&self, id: ProjectileId) -> Option<FlightState> {
        self.flying(id).map(|flying| flying.state)
    }

    /// Takes a projectile out of flight without a landing; `false` for a stale handle.
    pub fn remove(&mut self, id: ProjectileId) -> bool {
        if self.flying(id).is_none() {
            return false;
        }
        self.release(id.index);
        true
    }

    /// Every projectile in flight and where it is, in no fixed order.
    pub fn iter(&self) -> impl Iterator<Item = (ProjectileId, FlightState)> + '_ {
        self.places
            .iter()
            .zip(0_u32..)
            .filter_map(|(place, index)| {
                place.flying.map(|flying| {
                    (
                        ProjectileId {
                            index,
                            generation: place.generation,
                        },
                        flying.state,
                    )
                })
            })
    }

    /// Flies every projectile through the steps whose end the history's newest frame has
    /// reached, and appends each one that struck something, expired or was lost to
    /// `landed` (which is not cleared); those leave the set. Call it after recording each
    /// frame. `world` is the server's level geometry (the history's own level blocks
    /// either way).
    ///
    /// # Errors
    /// [`ProjectileError::Rewind`] ([`RewindError::Empty`]) when nothing is recorded; the
    /// set is unchanged then.
    pub fn advance(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        landed: &mut Vec<Landed>,
    ) -> Result<(), ProjectileError> {
        let (_, present) = history.window().ok_or(RewindError::Empty)?;
        // PERF: one rewound sphere sweep per due step and nothing else per projectile:
        // 1,000 projectiles one step each over the 200 x 20 scene take about 0.4 ms
        // (`cargo bench -p lagcomp-bench --bench projectiles`), against a 1 ms floor.
        for index in 0..self.places.len() {
            let place = &mut self.places[index];
            let Some(flying) = place.flying.as_mut() else {
                continue;
            };
            let until = flying.steps_ended_by(present);
            let end = match flying.fly(history, world, present, until) {
                Ok(end) => end,
                // Every input was checked at launch; a trace that is still refused (the
                // history was emptied and refilled) ends the flight rather than the tick.
                Err(_) => Some(flying.end(present, Struck::Lost)),
            };
            if let Some(impact) = end {
                landed.push(Landed {
                    projectile: ProjectileId {
                        index: index as u32,
                        generation: place.generation,
                    },
                    impact,
                });
                self.release(index as u32);
            }
        }
        Ok(())
    }

    /// Empties the set; every handle goes stale.
    pub fn clear(&mut self) {
        for index in 0..self.places.len() as u32 {
            if self.places[index as usize].flying.is_some() {
                self.release(index);
            }
        }
    }

    fn flying(&self, id: ProjectileId) -> Option<&InFlight> {
        let place = self.places.get(id.index as usize)?;
        (place.generation == id.generation)
            .then_some(place.flying.as_ref())
            .flatten()
    }

    /// Frees a place that holds a projectile.
    fn release(&mut self, index: u32) {
        let place = &mut self.places[index as usize];
        debug_assert!(place.flying.is_some());
        place.flying = None;
        place.generation = place.generation.wrapping_add(1);
        // Never beyond its capacity: a place is freed only while it holds a projectile.
        self.free.push(index);
    }
}

impl InFlight {
    /// The first step whose end lies after `present`: the steps before it are due.
    pub(super) fn steps_ended_by(&self, present: f64) -> u32 {
        let elapsed = present - self.fired;
        let step = f64::from(self.flight.step());
        // The steps whose end, R + (k + 1) * step, is at or before the present: the same
        // sum `start_of` makes, checked one step further so rounding cannot disagree.
        let mut until = (elapsed / step)
            .floor()
            .max(0.0)
            .min(f64::from(u32::MAX - 1)) as u32;
        if self.start_of(until.saturating_add(1)) <= present {
            until += 1;
        } else if until > 0 && self.start_of(until) > present {
            until -= 1;
        }
        until
    }
}
