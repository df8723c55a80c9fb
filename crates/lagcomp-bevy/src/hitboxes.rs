//! The components a game puts on the entities that can be hit.

use std::borrow::Cow;
use std::sync::Arc;

use bevy_ecs::prelude::*;
use lagcomp::{EntityRole, EntityState, Hitbox, Rig, RigError};

use crate::entities::RecordedAs;

/// The hitboxes of an entity, which rewound queries and shot validation see.
///
/// - [`Hitboxes::rigid`]: every hitbox rides the entity's own transform (its global
///   transform, through its parents).
/// - [`Hitboxes::skeletal`]: bone `b` of the rig is the descendant entity named (with
///   Bevy's `Name`) `joints[b]`, as a glTF skeleton spawns them; the entity is recorded
///   from the first tick at which every joint is found.
///
/// Adding the component registers the entity with [`crate::LagCompHistory`]; replacing it
/// registers the new rig as a new lagcomp entity; removing it, or despawning the entity,
/// stops recording, and its past stays hittable until it leaves the rewind window. The
/// lagcomp entity it is recorded as is kept beside it in [`RecordedAs`] (a required
/// component the plugin fills in).
///
/// An entity is a target (hit and damaged) unless [`Hitboxes::with_role`] makes it a
/// blocker: a door or lift that stops rewound traces where it stood at the rewound time
/// and is never hit, or a vehicle that is both.
#[derive(Component, Debug, Clone)]
#[require(RecordedAs)]
pub struct Hitboxes {
    rig: Arc<Rig>,
    joints: Option<Arc<[Cow<'static, str>]>>,
    role: EntityRole,
}

/// Why a [`Hitboxes`] component could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HitboxesError {
    /// The hitboxes do not make a valid rig.
    #[error(transparent)]
    Rig(#[from] RigError),
    /// A rigid entity's rig must have exactly one bone (its own transform).
    #[error("a rigid entity's rig has one bone, this one has {0}")]
    NotRigid(u16),
    /// A skeletal rig needs one joint name per bone.
    #[error("the rig has {bones} bones but {names} joint names were given")]
    JointCount {
        /// Bones in the rig.
        bones: u16,
        /// Joint names given.
        names: usize,
    },
}

impl Hitboxes {
    /// Hitboxes riding the entity's own transform. Every hitbox's bone must be 0.
    ///
    /// # Errors
    /// [`HitboxesError::Rig`] for an empty list, duplicate ids, a bone other than 0 or a
    /// bad shape or offset.
    pub fn rigid(hitboxes: Vec<Hitbox>) -> Result<Self, HitboxesError> {
        Self::from_rig(Arc::new(Rig::rigid(hitboxes)?))
    }

    /// A one-bone `rig`, shared by every entity of its kind, riding the entity's own
    /// transform.
    ///
    /// # Errors
    /// [`HitboxesError::NotRigid`] if the rig has more than one bone.
    pub fn from_rig(rig: Arc<Rig>) -> Result<Self, HitboxesError> {
        if rig.bone_count() != 1 {
            return Err(HitboxesError::NotRigid(rig.bone_count()));
        }
        Ok(Self {
            rig,
            joints: None,
            role: EntityRole::Target,
        })
    }

    /// A skeletal `rig` whose bone `b` is the descendant entity named `joints[b]`.
    ///
    /// # Errors
    /// [`HitboxesError::JointCount`] unless there is one name per bone.
    pub fn skeletal<S: Into<Cow<'static, str>>>(
        rig: Arc<Rig>,
        joints: impl IntoIterator<Item = S>,
    ) -> Result<Self, HitboxesError> {
        let joints: Arc<[Cow<'static, str>]> = joints.into_iter().map(Into::into).collect();
        if joints.len() != usize::from(rig.bone_count()) {
            return Err(HitboxesError::JointCount {
                bones: rig.bone_count(),
                names: joints.len(),
            });
        }
        Ok(Self {
            rig,
            joints: Some(joints),
            role: EntityRole::Target,
        })
    }

    /// The same hitboxes with another role, held for the entity's whole life in the
    /// history (set it before inserting the component; replacing the component with
    /// another role records the entity afresh, as any replacement does).
    ///
    /// # Example
    /// ```
    /// use lagcomp::{EntityRole, Hitbox, Shape, Vec3, Zone};
    /// use lagcomp_bevy::Hitboxes;
    ///
    /// // A sliding door: a 2 m x 2.5 m panel, 10 cm thick, that stops shots.
    /// let panel = Hitbox::new(0, "panel", Zone::Custom(1), 0, Shape::cuboid(Vec3::new(1.0, 1.25, 0.05)));
    /// let door = Hitboxes::rigid(vec![panel])?.with_role(EntityRole::Blocker);
    /// assert_eq!(door.role(), EntityRole::Blocker);
    /// # Ok::<(), lagcomp_bevy::HitboxesError>(())
    /// ```
    #[must_use]
    pub fn with_role(mut self, role: EntityRole) -> Self {
        self.role = role;
        self
    }

    /// Whether the entity is a target, a blocker or both.
    #[must_use]
    pub fn role(&self) -> EntityRole {
        self.role
    }

    /// The rig.
    #[must_use]
    pub fn rig(&self) -> &Arc<Rig> {
        &self.rig
    }

    /// The joint names of a skeletal rig, in bone order; `None` for a rigid one.
    #[must_use]
    pub fn joint_names(&self) -> Option<&[Cow<'static, str>]> {
        self.joints.as_deref()
    }
}

/// What is recorded about an entity besides its pose, each tick. Without this component
/// an entity is recorded alive, lag compensated, neither invulnerable nor evasive, on
/// layer 1, with user bits 0.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct HitboxState {
    /// Alive and hittable.
    pub alive: bool,
    /// Lag compensation applies. Off: shots are tested against its present pose and shot
    /// validation rejects hits on it (`target_not_compensated`). For spawn protection or
    /// a dodge leave it on and set `invulnerable` or `evasive`.
    pub lag_compensated: bool,
    /// Spawn protection: rewound as usual, and shot validation refuses hits on it
    /// honestly (`invulnerable`), not as a cheat.
    pub invulnerable: bool,
    /// A dodge the server registered this tick: rewound as usual; under the validator's
    /// default policy (`dodge_wins`) hits on it are refused honestly (`dodged`).
    pub evasive: bool,
    /// Collision layers, matched against a query's mask.
    pub layers: u32,
    /// Game-defined bits (team, stance) carried through to hits.
    pub user: u16,
}

impl Default for HitboxState {
    fn default() -> Self {
        let state = EntityState::default();
        Self {
            alive: state.alive,
            lag_compensated: state.lag_compensated,
            invulnerable: state.invulnerable,
            evasive: state.evasive,
            layers: state.layers,
            user: state.user,
        }
    }
}

impl HitboxState {
    /// The state recorded, with the teleport flag.
    pub(crate) fn recorded(self, teleported: bool) -> EntityState {
        EntityState {
            alive: self.alive,
            lag_compensated: self.lag_compensated,
            teleported,
            invulnerable: self.invulnerable,
            evasive: self.evasive,
            layers: self.layers,
            user: self.user,
        }
    }
}

/// Insert on an entity that jumped (respawn, teleporter) this tick: the next frame is
/// recorded as a teleport, so a rewind between it and the frame before never
/// interpolates along the jump. Removed once that frame is recorded.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Teleported;
