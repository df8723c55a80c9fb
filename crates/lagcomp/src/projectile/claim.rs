//! Client-claimed projectile hits: the server re-flies the claimed path and checks it.

use glam::Vec3;

use super::path::{ProjectileError, ProjectileImpact, ProjectileShot, Struck};
use crate::history::{EntityId, History};
use crate::rig::HitboxId;
use crate::world::{StaticId, StaticWorld};

/// What a client says its projectile struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ClaimedTarget {
    /// A hitbox of an entity.
    Entity {
        /// The entity.
        entity: EntityId,
        /// Its hitbox.
        hitbox: HitboxId,
    },
    /// A piece of static geometry (the history's level or the server's world).
    Static(StaticId),
}

/// A client's claim that its projectile struck something: the shot as fired, the step of
/// the flight during which it struck, what, and where the projectile's centre was.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProjectileClaim {
    /// The shot: fire moment, muzzle, direction, and the weapon's flight model (the
    /// server's, not one the client sent).
    pub shot: ProjectileShot,
    /// The step during which it struck (0 is the step that leaves the muzzle).
    pub step: u32,
    /// What it struck.
    pub target: ClaimedTarget,
    /// The projectile's centre at contact, in metres.
    pub position: Vec3,
}

/// How far a claim may stray from the server's flight and still agree: the client flies
/// the same path bit for bit, but may have drawn its targets a little differently.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClaimTolerance {
    /// Steps the claimed step may differ from the server's by.
    pub steps: u32,
    /// Metres the claimed contact point may lie from the server's.
    pub distance: f32,
}

impl Default for ClaimTolerance {
    /// One step either way, and 25 cm.
    fn default() -> Self {
        Self {
            steps: 1,
            distance: 0.25,
        }
    }
}

/// The server's answer to a [`ProjectileClaim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ClaimOutcome {
    /// The re-flown projectile strikes the claimed target at the claimed step and point
    /// (within the tolerance), in the past.
    Agree,
    /// The re-flown projectile never strikes the claimed target: it strikes something else
    /// first, expires, or meets it at a step or point far from the claimed ones.
    OffPath,
    /// The claim names a step before the one at which the projectile reaches the target,
    /// or the impact lies after the present: the projectile could not have arrived yet.
    TooEarly,
}

/// The server's answer to a claim, with the flight it re-flew.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClaimReview {
    /// The answer.
    pub outcome: ClaimOutcome,
    /// Where the server's flight ended.
    pub flown: ProjectileImpact,
    /// The server time at which it ended: R + the flight time of its last step (may be
    /// after the present).
    pub arrives: f64,
}

impl ProjectileClaim {
    /// Re-flies the claimed shot with [`ProjectileShot::fly`] and compares the first thing
    /// it strikes with the claim.
    ///
    /// # Errors
    /// As [`ProjectileShot::fly`]: a claim whose aim or fire moment is malformed or
    /// outside the window is refused, not judged.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// use lagcomp::projectile::{ClaimOutcome, ClaimTolerance, ClaimedTarget, Flight, ProjectileClaim, ProjectileShot};
    /// use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, HitboxId, Hitbox, RewindTarget, Rig, Shape, Tick, Vec3, Zone};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// let rig = Arc::new(Rig::rigid(vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)))])?);
    /// let target = history.spawn(rig);
    /// for tick in 0..=32_u32 {
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     frame.record_rigid(target, BoneTransform::from_translation(Vec3::new(0.0, 1.0, 10.0)), EntityState::default())?;
    /// }
    /// // A 100 m/s bolt fired at tick 2 strikes the body 10 m away (its front face is at
    /// // 9.7 m) during step 6, 1/64 s steps.
    /// let shot = ProjectileShot {
    ///     fired_at: RewindTarget::between(Tick(2), Tick(3), 0.0),
    ///     origin: Vec3::Y,
    ///     direction: Vec3::Z,
    ///     flight: Flight::new(100.0, Vec3::ZERO, 0.0, 0.0, 1.0 / 64.0, 2.0)?,
    ///     shooter: None,
    ///     layers: u32::MAX,
    /// };
    /// let body = ClaimedTarget::Entity { entity: target, hitbox: HitboxId(0) };
    /// let honest = ProjectileClaim { shot, step: 6, target: body, position: Vec3::new(0.0, 1.0, 9.7) };
    /// assert_eq!(honest.review(&history, None, ClaimTolerance::default())?.outcome, ClaimOutcome::Agree);
    /// // The same hit claimed at step 2: it could not have got there yet.
    /// let early = ProjectileClaim { step: 2, ..honest };
    /// assert_eq!(early.review(&history, None, ClaimTolerance::default())?.outcome, ClaimOutcome::TooEarly);
    /// # Ok(())
    /// # }
    /// ```
    pub fn review(
        &self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        tolerance: ClaimTolerance,
    ) -> Result<ClaimReview, ProjectileError> {
        let (fired, flown) = self.shot.fly_from(history, world)?;
        let arrives = fired + flown.flight_time;
        let present = history.window().map_or(fired, |(_, newest)| newest);
        let same_target = match (flown.struck, self.target) {
            (Struck::Entity(hit), ClaimedTarget::Entity { entity, hitbox }) => {
                hit.entity == entity && hit.hitbox == hitbox
            }
            (Struck::Blocker(block), ClaimedTarget::Entity { entity, hitbox }) => {
                block.entity == entity && block.hitbox == hitbox
            }
            (Struck::Static(wall), ClaimedTarget::Static(id)) => wall.id == id,
            _ => false,
        };
        let outcome = if !same_target || self.step > flown.step.saturating_add(tolerance.steps) {
            ClaimOutcome::OffPath
        } else if self.step.saturating_add(tolerance.steps) < flown.step || arrives > present {
            ClaimOutcome::TooEarly
        } else if self.position.distance(flown.position) <= tolerance.distance {
            ClaimOutcome::Agree
        } else {
            // Further than the tolerance, or a NaN point.
            ClaimOutcome::OffPath
        };
        Ok(ClaimReview {
            outcome,
            flown,
            arrives,
        })
    }
}
