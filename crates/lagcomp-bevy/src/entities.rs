//! Which lagcomp entity each Bevy entity is, kept in step with [`Hitboxes`] by observers.

use bevy_ecs::entity::EntityHashMap;
use bevy_ecs::lifecycle::{Discard, Insert};
use bevy_ecs::prelude::*;
use lagcomp::EntityId;

use crate::hitboxes::Hitboxes;
use crate::plugin::{LagCompHistory, LagCompValidator};
use crate::record::{AwaitingJoints, SkeletonJoints};
use crate::shots::{Shooter, register_shooter};

/// The two-way map between Bevy entities with [`Hitboxes`] and lagcomp [`EntityId`]s.
///
/// Both ids carry a generation, so neither side aliases when its index is reused: a Bevy
/// entity despawned and a new one given the same index are different keys, and the
/// lagcomp entity of the old one keeps answering for it (hits on its past name the old
/// Bevy entity) until its history ages out of the window; only then are both forgotten.
#[derive(Resource, Debug, Default)]
pub struct HitboxEntities {
    /// Live entities, and despawned ones whose history is still in the window.
    core: EntityHashMap<EntityId>,
    /// Indexed by [`EntityId::index`]: which Bevy entity that lagcomp slot answers for.
    bevy: Vec<Option<(EntityId, Entity)>>,
    /// Entities no longer recorded, until their history ages out.
    retiring: Vec<(EntityId, Entity)>,
}

impl HitboxEntities {
    /// The lagcomp entity of a Bevy entity: live, or despawned with its past still in the
    /// window.
    #[must_use]
    pub fn core_id(&self, entity: Entity) -> Option<EntityId> {
        self.core.get(&entity).copied()
    }

    /// The Bevy entity a lagcomp entity answers for (a despawned one's until its history
    /// ages out).
    #[must_use]
    pub fn entity(&self, id: EntityId) -> Option<Entity> {
        match self.bevy.get(id.index() as usize) {
            Some(Some((known, entity))) if *known == id => Some(*entity),
            _ => None,
        }
    }

    /// How many Bevy entities are mapped (live and retiring).
    #[must_use]
    pub fn len(&self) -> usize {
        self.core.len()
    }

    /// Whether none are.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.core.is_empty()
    }

    fn insert(&mut self, entity: Entity, id: EntityId) {
        self.core.insert(entity, id);
        let index = id.index() as usize;
        if self.bevy.len() <= index {
            self.bevy.resize(index + 1, None);
        }
        self.bevy[index] = Some((id, entity));
    }

    /// Forgets a pair whose history has aged out (unless either side was reused since).
    fn forget(&mut self, id: EntityId, entity: Entity) {
        if self.core.get(&entity) == Some(&id) {
            self.core.remove(&entity);
        }
        if let Some(slot) = self.bevy.get_mut(id.index() as usize)
            && matches!(slot, Some((known, _)) if *known == id)
        {
            *slot = None;
        }
    }
}

/// The lagcomp entity a Bevy entity with [`Hitboxes`] is recorded as, beside its
/// transform (a component `Hitboxes` requires, set when `Hitboxes` is inserted).
///
/// PERF: recording reads it in the same pass over the entities' table instead of looking
/// each entity up in [`HitboxEntities`]' hash map and reading its `Hitboxes` every tick
/// (about 25 instructions an entity under callgrind).
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedAs {
    id: EntityId,
    /// Its bones are joint entities ([`Hitboxes::skeletal`]).
    pub(crate) skeletal: bool,
}

impl RecordedAs {
    /// Not recorded: `Hitboxes` was inserted before the plugin was added, or removed.
    const NONE: Self = Self {
        id: EntityId::from_bits(u64::MAX),
        skeletal: false,
    };

    /// The lagcomp entity, unless not recorded.
    #[inline]
    #[must_use]
    pub fn id(self) -> Option<EntityId> {
        (self != Self::NONE).then_some(self.id)
    }
}

impl Default for RecordedAs {
    fn default() -> Self {
        Self::NONE
    }
}

/// A [`Hitboxes`] component was added or replaced: register its rig as a new lagcomp
/// entity (a replaced one's old entity was retired by [`on_hitboxes_discarded`] first).
pub(crate) fn on_hitboxes_inserted(
    insert: On<Insert<Hitboxes>>,
    mut rigs: Query<(&Hitboxes, Option<&Shooter>, &mut RecordedAs)>,
    mut history: ResMut<LagCompHistory>,
    mut validator: ResMut<LagCompValidator>,
    mut entities: ResMut<HitboxEntities>,
    mut commands: Commands,
) {
    let entity = insert.entity;
    let Ok((hitboxes, shooter, mut recorded)) = rigs.get_mut(entity) else {
        return;
    };
    let id = history.spawn_as(hitboxes.rig().clone(), hitboxes.role());
    entities.insert(entity, id);
    *recorded = RecordedAs {
        id,
        skeletal: hitboxes.joint_names().is_some(),
    };
    if let Some(shooter) = shooter {
        register_shooter(&mut validator, id, shooter);
    }
    // A new rig names its joints afresh.
    let mut rig = commands.entity(entity);
    rig.try_remove::<SkeletonJoints>();
    if hitboxes.joint_names().is_some() {
        rig.try_insert(AwaitingJoints);
    } else {
        rig.try_remove::<AwaitingJoints>();
    }
}

/// A [`Hitboxes`] component is being removed or replaced, or its entity despawned: stop
/// recording it. Its past stays queryable until it ages out.
pub(crate) fn on_hitboxes_discarded(
    discard: On<Discard<Hitboxes>>,
    mut history: ResMut<LagCompHistory>,
    mut entities: ResMut<HitboxEntities>,
    mut recorded: Query<&mut RecordedAs>,
) {
    let entity = discard.entity;
    if let Ok(mut recorded) = recorded.get_mut(entity) {
        *recorded = RecordedAs::NONE;
    }
    let Some(id) = entities.core_id(entity) else {
        return;
    };
    // The handle came from this history and is despawned once only: an error here means
    // it was despawned through the resource directly, which leaves nothing to undo.
    let _ = history.despawn(id);
    entities.retiring.push((id, entity));
}

/// Forgets the entities whose history has aged out of the window: their map entries and
/// their registration with the validator.
pub(crate) fn forget_aged_out(
    history: Res<LagCompHistory>,
    mut validator: ResMut<LagCompValidator>,
    mut entities: ResMut<HitboxEntities>,
) {
    let mut i = 0;
    while i < entities.retiring.len() {
        let (id, entity) = entities.retiring[i];
        if history.rig(id).is_ok() {
            i += 1;
            continue;
        }
        entities.retiring.swap_remove(i);
        entities.forget(id, entity);
        validator.forget(id);
    }
}
