//! Rewound queries from any system, answering in Bevy entities.

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;
use lagcomp::{
    EntityAt, EntityBlock, EntityId, History, Hit, Obb, Overlap, QueryError, Ray, Rewind,
    RewindTarget, StaticHit, Trace, Vec3, WindowPolicy,
};

use crate::entities::HitboxEntities;
use crate::plugin::LagCompHistory;

/// Rewound rays, sweeps and overlaps against every entity with [`crate::Hitboxes`], as it
/// was at a past moment, and any one entity as it was then.
///
/// ```
/// use bevy_ecs::prelude::*;
/// use lagcomp::{Ray, RewindTarget, Vec3};
/// use lagcomp_bevy::RewoundHitboxes;
///
/// fn hitscan(rewound: RewoundHitboxes, shooter: Single<Entity, With<Name>>) {
///     let ray = Ray::new(Vec3::ZERO, Vec3::X, 100.0).expect("a valid ray");
///     // What the shooter saw 120 ms before the newest frame, not hitting itself.
///     let Some(now) = rewound.newest_time() else { return };
///     if let Ok(trace) = rewound.at(RewindTarget::at(now - 0.12)).ignore(*shooter).ray(&ray) {
///         if let Some(hit) = trace.hit {
///             println!("{:?} hit in the {:?}", hit.entity, hit.hit.zone);
///         }
///     }
/// }
/// # bevy_ecs::system::assert_is_system(hitscan);
/// ```
#[derive(SystemParam)]
pub struct RewoundHitboxes<'w, 's> {
    history: Res<'w, LagCompHistory>,
    entities: Res<'w, HitboxEntities>,
    overlaps: Local<'s, Vec<Overlap>>,
}

/// How many entities one rewound query can ignore.
pub const MAX_IGNORED: usize = 8;

/// Why a rewound query gave no answer.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum RewoundQueryError {
    /// The core refused it (a bad ray or volume, a target outside the window).
    #[error(transparent)]
    Query(#[from] QueryError),
    /// More than [`MAX_IGNORED`] entities were ignored.
    #[error("a rewound query ignores at most {MAX_IGNORED} entities")]
    TooManyIgnored,
    /// The entity has no [`crate::Hitboxes`] (and had none within the window).
    #[error("{0} has no hitboxes")]
    NoHitboxes(Entity),
}

/// A hit on an entity's hitbox in the past.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewoundHit {
    /// The Bevy entity hit (perhaps despawned since). [`Entity::PLACEHOLDER`] for an
    /// entity spawned into [`LagCompHistory`] directly rather than through
    /// [`crate::Hitboxes`].
    pub entity: Entity,
    /// The hit: hitbox, zone, distance, entry and exit, the state then.
    pub hit: Hit,
}

/// The outcome of a rewound ray or sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewoundTrace {
    /// The closest hit in front of any wall.
    pub hit: Option<RewoundHit>,
    /// The first static wall along the trace.
    pub blocker: Option<StaticHit>,
    /// The blocker entity (a door, a lift: [`crate::Hitboxes::with_role`]) the trace
    /// stopped at, as it stood at the rewound time, when one came before every hit and
    /// wall.
    pub blocking_entity: Option<RewoundBlock>,
    /// The moment looked at.
    pub rewind: Rewind,
}

/// Where a trace stopped at a blocker entity in the past.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewoundBlock {
    /// The Bevy entity (as in [`RewoundHit::entity`]).
    pub entity: Entity,
    /// The core's answer: the lagcomp entity, its hitbox met, the distance in metres.
    pub block: EntityBlock,
}

/// A hitbox overlapping a volume in the past.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewoundOverlap {
    /// The Bevy entity (as in [`RewoundHit::entity`]).
    pub entity: Entity,
    /// The overlap: hitbox, zone, closest point, distance.
    pub overlap: Overlap,
}

impl<'w, 's> RewoundHitboxes<'w, 's> {
    /// A query at `target`: every layer, nothing ignored, targets outside the window
    /// refused.
    #[must_use]
    pub fn at(&self, target: RewindTarget) -> RewoundQuery<'_> {
        RewoundQuery {
            history: &self.history,
            entities: &self.entities,
            target,
            layers: u32::MAX,
            policy: WindowPolicy::Reject,
            ignore: [EntityId::from_bits(0); MAX_IGNORED],
            ignored: 0,
        }
    }

    /// Every hitbox overlapping the sphere at `target`, nearest first, into `out`
    /// (cleared first). Allocates nothing once `out` and an internal buffer have grown to
    /// the largest answer.
    ///
    /// # Errors
    /// As [`lagcomp::Query::overlap_sphere`].
    pub fn overlap_sphere(
        &mut self,
        target: RewindTarget,
        center: Vec3,
        radius: f32,
        out: &mut Vec<RewoundOverlap>,
    ) -> Result<Rewind, RewoundQueryError> {
        let rewind =
            self.history
                .query(target)
                .overlap_sphere(center, radius, &mut self.overlaps)?;
        self.name_overlaps(out);
        Ok(rewind)
    }

    /// Every hitbox overlapping the oriented box at `target`, nearest first, into `out`
    /// (cleared first).
    ///
    /// # Errors
    /// As [`lagcomp::Query::overlap_box`].
    pub fn overlap_box(
        &mut self,
        target: RewindTarget,
        obb: &Obb,
        out: &mut Vec<RewoundOverlap>,
    ) -> Result<Rewind, RewoundQueryError> {
        let rewind = self
            .history
            .query(target)
            .overlap_box(obb, &mut self.overlaps)?;
        self.name_overlaps(out);
        Ok(rewind)
    }

    fn name_overlaps(&self, out: &mut Vec<RewoundOverlap>) {
        out.clear();
        out.extend(self.overlaps.iter().map(|overlap| RewoundOverlap {
            entity: bevy_entity(&self.entities, overlap.entity),
            overlap: *overlap,
        }));
    }

    /// `entity` as it was at `target` (its bones, hitboxes and state then); `Ok(None)` if
    /// it was not recorded around that moment.
    ///
    /// # Errors
    /// [`RewoundQueryError::NoHitboxes`] for an entity never registered (or forgotten
    /// after its history aged out), or the core's refusal of the target.
    pub fn entity_at(
        &self,
        entity: Entity,
        target: RewindTarget,
    ) -> Result<Option<EntityAt<'_>>, RewoundQueryError> {
        let id = self
            .entities
            .core_id(entity)
            .ok_or(RewoundQueryError::NoHitboxes(entity))?;
        Ok(self.history.entity_at(id, target, WindowPolicy::Reject)?)
    }

    /// The newest recorded frame's server time.
    #[must_use]
    pub fn newest_time(&self) -> Option<f64> {
        self.history.window().map(|(_, newest)| newest)
    }

    /// The history, for what this does not wrap.
    #[must_use]
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The map between Bevy and lagcomp entities.
    #[must_use]
    pub fn entities(&self) -> &HitboxEntities {
        &self.entities
    }
}

fn bevy_entity(entities: &HitboxEntities, id: EntityId) -> Entity {
    entities.entity(id).unwrap_or(Entity::PLACEHOLDER)
}

/// A rewound query being set up: a target, layers, entities to ignore. From
/// [`RewoundHitboxes::at`].
#[derive(Debug, Clone, Copy)]
pub struct RewoundQuery<'a> {
    history: &'a History,
    entities: &'a HitboxEntities,
    target: RewindTarget,
    layers: u32,
    policy: WindowPolicy,
    ignore: [EntityId; MAX_IGNORED],
    /// How many of `ignore` are set; more than [`MAX_IGNORED`]: too many were asked for.
    ignored: usize,
}

impl RewoundQuery<'_> {
    /// Only see entities and walls whose layers share a bit with `mask`.
    #[must_use]
    pub fn layers(mut self, mask: u32) -> Self {
        self.layers = mask;
        self
    }

    /// What to do with a target outside the window (default: refuse).
    #[must_use]
    pub fn window_policy(mut self, policy: WindowPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Never report `entity` (the shooter, their vehicle). Up to [`MAX_IGNORED`]; a query
    /// told to ignore more is refused with [`RewoundQueryError::TooManyIgnored`]. An entity
    /// without hitboxes is nothing to ignore.
    #[must_use]
    pub fn ignore(mut self, entity: Entity) -> Self {
        if let Some(id) = self.entities.core_id(entity) {
            if let Some(slot) = self.ignore.get_mut(self.ignored) {
                *slot = id;
            }
            self.ignored += 1;
        }
        self
    }

    /// The closest hitbox along `ray`, unless a wall comes first.
    ///
    /// # Errors
    /// As [`lagcomp::Query::ray`], and [`RewoundQueryError::TooManyIgnored`].
    pub fn ray(&self, ray: &Ray) -> Result<RewoundTrace, RewoundQueryError> {
        let trace = self.core()?.ray(ray)?;
        Ok(self.named(trace))
    }

    /// The first hitbox a sphere of `radius` touches moving along `ray`.
    ///
    /// # Errors
    /// As [`lagcomp::Query::sweep`], and [`RewoundQueryError::TooManyIgnored`].
    pub fn sweep(&self, ray: &Ray, radius: f32) -> Result<RewoundTrace, RewoundQueryError> {
        let trace = self.core()?.sweep(ray, radius)?;
        Ok(self.named(trace))
    }

    fn core(&self) -> Result<lagcomp::Query<'_, '_>, RewoundQueryError> {
        let ignore = self
            .ignore
            .get(..self.ignored)
            .ok_or(RewoundQueryError::TooManyIgnored)?;
        Ok(self
            .history
            .query(self.target)
            .layers(self.layers)
            .window_policy(self.policy)
            .ignore(ignore))
    }

    fn named(&self, trace: Trace) -> RewoundTrace {
        RewoundTrace {
            hit: trace.hit.map(|hit| RewoundHit {
                entity: bevy_entity(self.entities, hit.entity),
                hit,
            }),
            blocker: trace.blocker,
            blocking_entity: trace.blocking_entity.map(|block| RewoundBlock {
                entity: bevy_entity(self.entities, block.entity),
                block,
            }),
            rewind: trace.rewind,
        }
    }
}
