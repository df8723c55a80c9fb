//! Debug output: what a query did, reported to a sink the caller passes in.
//!
//! Engines implement [`QueryObserver`] to draw the present and rewound hitboxes in
//! different colours, or use [`QueryLog`], which keeps everything in vectors. A query
//! without an observer uses [`NoObserver`], whose `ENABLED = false` removes every reporting
//! branch at compile time: zero cost.

use crate::history::{EntityId, Sample};
use crate::narrow::PlacedShape;
use crate::query::{Hit, Overlap, StaticHit};
use crate::rig::Hitbox;

/// What the broadphase decided for one entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum BroadphaseDecision {
    /// Excluded by the query's ignore list (the shooter).
    Ignored,
    /// Not recorded at the target time (not spawned yet, or a gap in its history).
    Absent,
    /// Not alive at the target time.
    NotAlive,
    /// Its layers at the target time share no bit with the query mask.
    OtherLayer,
    /// Its bounds at the target time (over the frames the sample uses) miss the query:
    /// culled before any interpolation.
    Culled,
    /// Passed: its hitboxes were tested.
    Passed,
}

/// Receives a report of each step of a query. Every method has an empty default.
pub trait QueryObserver {
    /// `false` only for [`NoObserver`]: lets the query skip reporting work entirely.
    const ENABLED: bool = true;

    /// The broadphase decision for an entity. With an observer, every entity registered or
    /// still in the window is reported once.
    fn broadphase(&mut self, entity: EntityId, decision: BroadphaseDecision) {
        let _ = (entity, decision);
    }

    /// How an entity that passed the broadphase was sampled.
    fn sample(&mut self, entity: EntityId, sample: &Sample) {
        let _ = (entity, sample);
    }

    /// A hitbox was tested: where it was at the target time, and where it is now (`None`
    /// when the entity has no present frame left).
    fn hitbox(
        &mut self,
        entity: EntityId,
        hitbox: &Hitbox,
        rewound: &PlacedShape,
        present: Option<&PlacedShape>,
    ) {
        let _ = (entity, hitbox, rewound, present);
    }

    /// A trace hit an entity: every hit of an all-hits trace, the final one of a
    /// closest-hit trace.
    fn hit(&mut self, hit: &Hit) {
        let _ = hit;
    }

    /// An overlap query found an entity's hitbox.
    fn overlap(&mut self, overlap: &Overlap) {
        let _ = overlap;
    }

    /// A trace was stopped by static geometry.
    fn blocked(&mut self, wall: &StaticHit) {
        let _ = wall;
    }
}

/// The observer of a query that reports nothing, at no cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl QueryObserver for NoObserver {
    const ENABLED: bool = false;
}

impl<O: QueryObserver + ?Sized> QueryObserver for &mut O {
    const ENABLED: bool = O::ENABLED;

    fn broadphase(&mut self, entity: EntityId, decision: BroadphaseDecision) {
        (**self).broadphase(entity, decision);
    }

    fn sample(&mut self, entity: EntityId, sample: &Sample) {
        (**self).sample(entity, sample);
    }

    fn hitbox(
        &mut self,
        entity: EntityId,
        hitbox: &Hitbox,
        rewound: &PlacedShape,
        present: Option<&PlacedShape>,
    ) {
        (**self).hitbox(entity, hitbox, rewound, present);
    }

    fn hit(&mut self, hit: &Hit) {
        (**self).hit(hit);
    }

    fn overlap(&mut self, overlap: &Overlap) {
        (**self).overlap(overlap);
    }

    fn blocked(&mut self, wall: &StaticHit) {
        (**self).blocked(wall);
    }
}

/// A tested hitbox, as [`QueryLog`] keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct TestedHitbox {
    /// The entity.
    pub entity: EntityId,
    /// The hitbox (its id, name and zone).
    pub hitbox: Hitbox,
    /// Where it was at the target time.
    pub rewound: PlacedShape,
    /// Where it is now.
    pub present: Option<PlacedShape>,
}

/// An observer that keeps every report, for drawing or for tests.
#[derive(Debug, Clone, Default)]
pub struct QueryLog {
    /// Broadphase decisions, in the order made.
    pub broadphase: Vec<(EntityId, BroadphaseDecision)>,
    /// Samples of the entities that passed.
    pub samples: Vec<(EntityId, Sample)>,
    /// Hitboxes tested.
    pub hitboxes: Vec<TestedHitbox>,
    /// Trace hits.
    pub hits: Vec<Hit>,
    /// Overlap results.
    pub overlaps: Vec<Overlap>,
    /// The wall that stopped the trace, if any.
    pub blocked: Option<StaticHit>,
}

impl QueryLog {
    /// The broadphase decision recorded for `entity`, if any.
    #[must_use]
    pub fn decision(&self, entity: EntityId) -> Option<BroadphaseDecision> {
        self.broadphase
            .iter()
            .find(|(e, _)| *e == entity)
            .map(|(_, d)| *d)
    }
}

impl QueryObserver for QueryLog {
    fn broadphase(&mut self, entity: EntityId, decision: BroadphaseDecision) {
        self.broadphase.push((entity, decision));
    }

    fn sample(&mut self, entity: EntityId, sample: &Sample) {
        self.samples.push((entity, *sample));
    }

    fn hitbox(
        &mut self,
        entity: EntityId,
        hitbox: &Hitbox,
        rewound: &PlacedShape,
        present: Option<&PlacedShape>,
    ) {
        self.hitboxes.push(TestedHitbox {
            entity,
            hitbox: hitbox.clone(),
            rewound: *rewound,
            present: present.copied(),
        });
    }

    fn hit(&mut self, hit: &Hit) {
        self.hits.push(*hit);
    }

    fn overlap(&mut self, overlap: &Overlap) {
        self.overlaps.push(*overlap);
    }

    fn blocked(&mut self, wall: &StaticHit) {
        self.blocked = Some(*wall);
    }
}
