//! The entity table: spawning (a slot and places in the lanes), reserving room, despawning
//! and freeing a slot once its history has aged out, and checking handles.

use std::sync::Arc;

use super::layout::IDENTITY_ROTATION;
use super::{
    EntityError, EntityFrame, EntityId, EntityRole, EntitySlot, EntityState, EntityVelocity,
    History, Life, RecordError,
};
use crate::rig::Rig;

impl History {
    /// Registers an entity with its rig. It becomes visible to queries from the first
    /// frame it is recorded in. Its ring is placed in the history's lanes (in places a
    /// retired entity held when they fit); the lanes grow, if they must, when the next
    /// frame begins, so spawning many entities between two frames copies the history at
    /// most once. That copy is slow for a large history (see [`History::reserve`]):
    /// entities spawned before the first frame, or into reserved room, cost nothing.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use lagcomp::{History, HistoryConfig, Hitbox, Rig, Shape, Vec3, Zone};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut history = History::new(HistoryConfig::default())?;
    /// // One rig per kind of entity, shared by every entity of that kind.
    /// let player = Arc::new(Rig::rigid(vec![
    ///     Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3))),
    /// ])?);
    /// let (alice, bob) = (history.spawn(player.clone()), history.spawn(player));
    /// assert_ne!(alice, bob);
    /// assert!(history.is_active(alice));
    /// assert_eq!(history.entity_count(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn spawn(&mut self, rig: Arc<Rig>) -> EntityId {
        self.spawn_as(rig, EntityRole::Target)
    }

    /// [`History::spawn`] with a role other than a target: a door or lift that stops
    /// traces where it was at the rewound time ([`EntityRole::Blocker`]), or a vehicle
    /// that can be hit and stops every trace ([`EntityRole::TargetAndBlocker`]). The role
    /// holds for the entity's whole life.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use lagcomp::{EntityRole, History, HistoryConfig, Hitbox, Rig, Shape, Vec3, Zone};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut history = History::new(HistoryConfig::default())?;
    /// // A sliding door: one box, 2 m wide, 2.5 m high, 10 cm thick; moved by its bone.
    /// let door = Arc::new(Rig::rigid(vec![
    ///     Hitbox::new(0, "panel", Zone::Custom(1), 0, Shape::cuboid(Vec3::new(1.0, 1.25, 0.05))),
    /// ])?);
    /// let door = history.spawn_as(door, EntityRole::Blocker);
    /// assert_eq!(history.role(door)?, EntityRole::Blocker);
    /// # Ok(())
    /// # }
    /// ```
    pub fn spawn_as(&mut self, rig: Arc<Rig>, role: EntityRole) -> EntityId {
        let bone_count = usize::from(rig.bone_count());
        let index = match self.free.pop() {
            Some(index) => index as usize,
            None => {
                self.slots.push(EntitySlot {
                    generation: 0,
                    life: Life::Free,
                    role: EntityRole::Target,
                    rig: None,
                    bone_count: 0,
                    bones_at: 0,
                    scales: Vec::new(),
                    last_seq: 0,
                    first_seq: 0,
                });
                self.slots.len() - 1
            }
        };
        let bones_at = self.lanes.ranges.take(bone_count);
        let slot = &mut self.slots[index];
        slot.life = Life::Active;
        slot.role = role;
        slot.rig = Some(rig);
        slot.bone_count = bone_count;
        slot.bones_at = bones_at;
        slot.scales.clear();
        slot.last_seq = 0;
        slot.first_seq = 0;
        self.lanes.pending.push(index as u32);
        self.spawned.push(index as u32);
        self.layout_epoch += 1;
        slot.id(index)
    }

    /// Makes the lanes hold every spawned entity's ring, and resets the rings of entities
    /// spawned since the last call. Called when a frame begins: between a spawn and the
    /// next frame nothing reads a new entity's rows (it has no recorded frame).
    ///
    /// Growing lays every lane out again with longer blocks (a copy): each time by at
    /// least a quarter, so that spawning one entity per tick copies each row a bounded
    /// number of times, and to exactly what is needed when the lanes were empty (all of a
    /// match's entities spawned before its first frame hold no slack).
    ///
    /// PERF: out of line: it runs once per frame and returns at once but after spawns.
    #[inline(never)]
    pub(super) fn fit_lanes(&mut self) {
        if self.lanes.pending.is_empty() {
            return;
        }
        self.layout_epoch += 1;
        let capacity = self.capacity;
        let lanes = &mut self.lanes;
        let places = lanes.ranges.end();
        lanes.fit(capacity, places, self.slots.len(), |stride, needed| {
            needed.max(stride + stride / 4)
        });
        for &index in &lanes.pending {
            let index = index as usize;
            let slot = &self.slots[index];
            if slot.life == Life::Free {
                // Despawned before its first frame: its places went back to the ranges.
                continue;
            }
            for ring in 0..capacity {
                let row = lanes.row(slot, ring);
                lanes.translations[row..row + slot.bone_count].fill([0.0; 3]);
                lanes.rotations[row..row + slot.bone_count].fill(IDENTITY_ROTATION);
                let frame = lanes.frame(index, ring);
                lanes.frames[frame] = EntityFrame::NEVER;
                lanes.velocities[frame] = EntityVelocity::NEVER;
            }
        }
        lanes.pending.clear();
    }

    /// Makes room for `entities` more entities with `bones` bones between them, so that
    /// spawning them does not lay the history's lanes out again when the next frame begins.
    /// Growing copies the whole history into new memory (57 MB for 5,000 twenty-bone
    /// entities at 30 Hz and a 0.5 s window), which can take several ticks of a game
    /// server. A server that knows how many players it takes reserves them before the
    /// match; like `Vec::reserve`, this may hold more than asked.
    ///
    /// # Panics
    /// As `Vec::reserve` does: if the room asked for does not fit in the address space.
    pub fn reserve(&mut self, entities: usize, bones: usize) {
        // A spawn takes a free slot before a new one, and a free range of places before
        // new places at the end: room past both ends is enough for any order of spawns.
        let slots = self.slots.len().saturating_add(entities);
        let places = self.lanes.ranges.end().saturating_add(bones);
        self.slots.reserve(entities);
        self.spawned.reserve(entities);
        self.layout_epoch += 1;
        self.lanes
            .fit(self.capacity, places, slots, |_, needed| needed);
    }

    /// Stops recording an entity. Its history stays queryable until its last frame ages
    /// out of the window (a shot at a player who died this tick still validates); then its
    /// slot is reused under a new generation.
    ///
    /// # Errors
    /// [`EntityError`] if the handle is unknown, stale or already despawned.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3, Zone};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let humanoid = Arc::new(Rig::new(4, vec![
    /// #     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
    /// #     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
    /// #     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)),
    /// # ])?);
    /// # // Pelvis, chest, head and eye bones of a player standing at `feet`, in metres.
    /// # let pose = |feet: Vec3| [0.95, 1.35, 1.7, 1.68].map(|y| BoneTransform::from_translation(feet + Vec3::Y * y));
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// let victim = history.spawn(humanoid);
    /// let mut frame = history.begin_frame(Tick(1), 1.0 / 64.0)?;
    /// frame.record(victim, &pose(Vec3::ZERO), EntityState::default())?;
    /// frame.finish();
    ///
    /// // Killed and removed this tick: it records no more...
    /// history.despawn(victim)?;
    /// assert!(!history.is_active(victim));
    /// assert!(history.despawn(victim).is_err());
    /// // ...but a shot fired before the kill can still be checked against it.
    /// assert!(history.rig(victim).is_ok());
    /// # Ok(())
    /// # }
    /// ```
    pub fn despawn(&mut self, id: EntityId) -> Result<(), EntityError> {
        let index = self.active_index(id)?;
        self.layout_epoch += 1;
        let slot = &mut self.slots[index];
        if slot.last_seq == 0 {
            self.free_slot(index);
        } else {
            slot.life = Life::Despawned;
            self.retiring.push(index as u32);
        }
        Ok(())
    }

    pub(super) fn free_slot(&mut self, index: usize) {
        self.layout_epoch += 1;
        let slot = &mut self.slots[index];
        slot.life = Life::Free;
        slot.generation = slot.generation.wrapping_add(1);
        slot.rig = None;
        self.lanes.ranges.give_back(slot.bones_at, slot.bone_count);
        self.free.push(index as u32);
        self.uncompensated.retain(|&(i, _)| i as usize != index);
        // The tree is not rebuilt for this: a slot is freed once its last frame has aged
        // out, so its leaf is empty in every frame the trees still answer for, and stays
        // so (nothing records a free slot) until the next build drops it or a spawn into
        // the slot rebuilds anyway.
    }

    /// The rig of an entity (despawned entities keep theirs until they age out).
    ///
    /// # Errors
    /// [`EntityError::Unknown`] or [`EntityError::Stale`].
    pub fn rig(&self, id: EntityId) -> Result<&Arc<Rig>, EntityError> {
        let index = self.known_index(id)?;
        self.slots[index].rig.as_ref().ok_or(EntityError::Stale(id))
    }

    /// The role the entity was spawned with (despawned entities keep theirs until they
    /// age out).
    ///
    /// # Errors
    /// [`EntityError::Unknown`] or [`EntityError::Stale`].
    pub fn role(&self, id: EntityId) -> Result<EntityRole, EntityError> {
        Ok(self.slots[self.known_index(id)?].role)
    }

    /// Whether the entity is registered and not despawned.
    #[must_use]
    pub fn is_active(&self, id: EntityId) -> bool {
        self.active_index(id).is_ok()
    }

    /// How many entities are registered or despawned but still in the window.
    #[must_use]
    pub fn entity_count(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Index of a handle that names a live or despawned-but-remembered entity.
    pub(crate) fn known_index(&self, id: EntityId) -> Result<usize, EntityError> {
        let index = id.index() as usize;
        let slot = self.slots.get(index).ok_or(EntityError::Unknown(id))?;
        if slot.generation != id.generation() {
            return Err(if id.generation() > slot.generation {
                EntityError::Unknown(id)
            } else {
                EntityError::Stale(id)
            });
        }
        match slot.life {
            // A free slot's current generation has not been handed out yet.
            Life::Free => Err(EntityError::Unknown(id)),
            Life::Active | Life::Despawned => Ok(index),
        }
    }

    pub(super) fn active_index(&self, id: EntityId) -> Result<usize, EntityError> {
        let index = self.known_index(id)?;
        match self.slots[index].life {
            Life::Active => Ok(index),
            _ => Err(EntityError::Despawned(id)),
        }
    }

    /// Checks a batch for [`FrameRecorder::record_all`](super::FrameRecorder::record_all): every handle active, and as many
    /// transforms as the entities have bones together.
    pub(super) fn check_batch(
        &self,
        entities: &[(EntityId, EntityState)],
        transforms: usize,
    ) -> Result<(), RecordError> {
        let mut expected = 0;
        for &(id, _) in entities {
            expected += self.slots[self.active_index(id)?].bone_count;
        }
        if expected != transforms {
            return Err(RecordError::BatchBones {
                expected,
                got: transforms,
            });
        }
        Ok(())
    }
}
