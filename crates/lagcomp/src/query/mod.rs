//! Rewound queries: "what would this trace have hit at time T?"
//!
//! What lives here: [`Query`] (a target time, filters and an optional observer, built with
//! [`History::query`]), the inputs ([`Ray`]) and results ([`Trace`], [`Hit`], [`Overlap`],
//! [`StaticHit`], [`Rewind`]), and the mapping of a historical hit into present space.
//! The traversals are in `trace.rs` (rays and sphere sweeps), `overlap.rs` (spheres and
//! boxes) and `shape_sweep.rs` (boxes and capsules moved or swung: [`ShapeSweep`]); debug
//! reporting in [`observer`].
//!
//! Every query follows the same pipeline: resolve the target to bracketing frames; stop
//! the trace at the first static wall; walk the entity BVH (node boxes per frame); for each
//! candidate check its flags and its bounds at the target time; then cull its bones by the
//! reach around each bone's lerped origin (four or eight at a time), interpolate only the
//! bones that pass, and, for traces, cull each of their hitboxes by the ball around its
//! placed centre before the exact test. A traced query with an observer keeps the
//! per-hitbox reach test instead of the ball, so debug output shows every hitbox near the
//! trace. Nothing is written: queries take `&History`.

mod extrapolated;
mod fan;
pub mod observer;
mod overlap;
pub mod penetration;
mod shape_sweep;
pub mod splash;
mod trace;

pub use shape_sweep::{SWING_CHORD_TOLERANCE, ShapeSweep, ShapeSweepError, SweepPath};

use glam::Vec3;

use crate::history::{
    Bracket, EntityError, EntityId, EntityRole, EntitySample, EntityState, History, Sample,
};
use crate::math::BoneTransform;
use crate::math::{MAX_COORDINATE, MAX_EXTENT, TransformError, check_translation};
use crate::narrow::PlacedShape;
use crate::rig::{HitboxId, Zone};
use crate::time::{RewindError, RewindTarget, WindowPolicy};
use crate::world::{StaticId, StaticWorld};
use observer::{NoObserver, QueryObserver};

/// A ray: origin, unit direction and how far it reaches.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Ray {
    origin: Vec3,
    dir: Vec3,
    max_distance: f32,
}

impl Ray {
    /// The longest reach a ray may have: across the whole accepted coordinate range.
    pub const MAX_DISTANCE: f32 = 4.0 * MAX_COORDINATE;

    /// A ray from `origin` along `direction` (normalized here) up to `max_distance`.
    ///
    /// # Errors
    /// [`RayError`] for a non-finite or out-of-range origin, a zero or non-finite
    /// direction, or a max distance that is negative, NaN or above [`Ray::MAX_DISTANCE`].
    pub fn new(origin: Vec3, direction: Vec3, max_distance: f32) -> Result<Self, RayError> {
        check_translation(origin).map_err(RayError::Origin)?;
        if !direction.is_finite() {
            return Err(RayError::NonFiniteDirection);
        }
        // Divide by the largest component first: the squared length of a tiny direction
        // (1e-22) is subnormal and of a huge one overflows, and either would normalize badly.
        let largest = direction.abs().max_element();
        if largest == 0.0 {
            return Err(RayError::ZeroDirection);
        }
        let dir = (direction / largest).normalize();
        if !(0.0..=Self::MAX_DISTANCE).contains(&max_distance) {
            return Err(RayError::MaxDistance(max_distance));
        }
        Ok(Self {
            origin,
            dir,
            max_distance,
        })
    }

    /// The ray from `start` to `end`.
    ///
    /// # Errors
    /// As [`Ray::new`]; [`RayError::ZeroDirection`] when the points coincide.
    pub fn between(start: Vec3, end: Vec3) -> Result<Self, RayError> {
        check_translation(end).map_err(RayError::Origin)?;
        Self::new(start, end - start, start.distance(end))
    }

    /// Where it starts.
    #[must_use]
    pub const fn origin(&self) -> Vec3 {
        self.origin
    }

    /// Unit direction.
    #[must_use]
    pub const fn dir(&self) -> Vec3 {
        self.dir
    }

    /// How far it reaches.
    #[must_use]
    pub const fn max_distance(&self) -> f32 {
        self.max_distance
    }

    /// The point `distance` along the ray.
    #[must_use]
    pub fn at(&self, distance: f32) -> Vec3 {
        self.origin + self.dir * distance
    }
}

/// Why a ray was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum RayError {
    /// The origin (or end point) is not finite or out of range.
    #[error("ray origin: {0}")]
    Origin(TransformError),
    /// The direction has a NaN or infinite component.
    #[error("ray direction is not finite")]
    NonFiniteDirection,
    /// The direction has zero length.
    #[error("ray direction has zero length")]
    ZeroDirection,
    /// The max distance is negative, NaN or too large.
    #[error("ray max distance {0} is not in [0, {max}]", max = Ray::MAX_DISTANCE)]
    MaxDistance(f32),
}

/// Why a query was refused. Nothing is changed by a failed query.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// The target time could not be resolved (malformed, or outside the window).
    #[error(transparent)]
    Rewind(#[from] RewindError),
    /// The ray is malformed.
    #[error(transparent)]
    Ray(#[from] RayError),
    /// A sweep or overlap radius is negative, NaN or above the largest extent.
    #[error("radius {0} must be finite and in [0, {MAX_EXTENT}]")]
    Radius(f32),
    /// An overlap volume is malformed (non-finite centre, bad rotation or extents).
    #[error("overlap volume is malformed")]
    Volume,
    /// An entity handle is bad.
    #[error(transparent)]
    Entity(#[from] EntityError),
    /// The entity's rig has no hitbox with this id.
    #[error("no hitbox {0:?} on this entity")]
    UnknownHitbox(HitboxId),
}

/// The moment a query actually looked at.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Rewind {
    /// The time asked for (for a tick-pair target, the blend of the two frames' times).
    pub requested: f64,
    /// The time used: equal to `requested` unless the query clamped it to the window.
    pub time: f64,
    /// Whether the caller's [`WindowPolicy::Clamp`] moved the target.
    pub clamped: bool,
    /// The oldest time the window allowed.
    pub oldest: f64,
    /// The newest recorded time.
    pub newest: f64,
}

impl From<&Bracket> for Rewind {
    fn from(b: &Bracket) -> Self {
        Self {
            requested: b.requested,
            time: b.time,
            clamped: b.clamped,
            oldest: b.window.0,
            newest: b.window.1,
        }
    }
}

/// A point on a surface and the outward normal there.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SurfacePoint {
    /// The point, in world space at the rewound time.
    pub point: Vec3,
    /// Outward unit normal.
    pub normal: Vec3,
}

/// A trace's contact with one hitbox of one entity.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Hit {
    /// The entity hit.
    pub entity: EntityId,
    /// The hitbox hit.
    pub hitbox: HitboxId,
    /// Its index in the rig's [`crate::rig::Rig::hitboxes`] (for its name).
    pub hitbox_index: u16,
    /// Its zone.
    pub zone: Zone,
    /// Distance along the ray to the entry (0 when the trace started inside). For sweeps,
    /// how far the sphere's centre travelled before touching.
    pub distance: f32,
    /// Where the trace entered the hitbox. When it started inside: the point of the hitbox
    /// nearest the start (the start itself for a ray; for a sweep that began overlapping,
    /// the hitbox point nearest the sphere's centre), with the normal facing back along
    /// the trace.
    pub entry: SurfacePoint,
    /// Distance along the ray to where it leaves the hitbox (may exceed the ray's reach).
    pub exit_distance: f32,
    /// Where the trace leaves the hitbox.
    pub exit: SurfacePoint,
    /// Length of the trace inside the hitbox: `exit_distance - distance`.
    pub penetration: f32,
    /// Whether the trace started inside the hitbox.
    pub started_inside: bool,
    /// When and how the entity was sampled.
    pub sample: Sample,
    /// The hitbox as it was at that time (world pose and scaled shape).
    pub placement: PlacedShape,
    /// The scale of its bone at that time.
    pub bone_scale: Vec3,
    /// The entity's state at that time.
    pub state: EntityState,
}

/// A volume query's contact with one hitbox.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Overlap {
    /// The entity.
    pub entity: EntityId,
    /// The hitbox.
    pub hitbox: HitboxId,
    /// Its index in the rig's hitboxes.
    pub hitbox_index: u16,
    /// Its zone.
    pub zone: Zone,
    /// The point of the hitbox nearest to the query volume's centre (for damage falloff).
    pub closest_point: Vec3,
    /// Distance from the query volume's centre to the hitbox (0 when inside it).
    pub distance: f32,
    /// When and how the entity was sampled.
    pub sample: Sample,
    /// The hitbox as it was at that time.
    pub placement: PlacedShape,
    /// The scale of its bone at that time.
    pub bone_scale: Vec3,
    /// The entity's state at that time.
    pub state: EntityState,
}

/// A trace's contact with static geometry: a piece of the history's own level, or of the
/// server's [`StaticWorld`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StaticHit {
    /// Which piece: its id in the history's level, or the id the server's world gave it.
    pub id: StaticId,
    /// Distance along the ray.
    pub distance: f32,
    /// Where it was touched (on the wall's surface).
    pub point: Vec3,
    /// The wall's outward normal there.
    pub normal: Vec3,
}

/// The outcome of a trace.
///
/// `hit` is the closest target hit before anything that blocks; `blocker` the first wall
/// within reach, if any; `blocking_entity` the blocker entity (a door, a lift: see
/// [`EntityRole`]) that stopped the trace before any target and before the wall. No hit
/// and a blocker or blocking entity: the shot was blocked ([`Trace::stopped_by`] says by
/// what). A hit and a blocker: the target was hit in front of the wall.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Trace {
    /// The closest hit on a target.
    pub hit: Option<Hit>,
    /// The first static geometry along the trace.
    pub blocker: Option<StaticHit>,
    /// The blocker entity the trace stopped at, as it was at the rewound time, when one
    /// stood before every target and wall. Never also a hit.
    #[cfg_attr(feature = "serde", serde(default))]
    pub blocking_entity: Option<EntityBlock>,
    /// The moment looked at.
    pub rewind: Rewind,
}

/// Where a trace stopped at a blocker entity (a door, a lift), as it stood at the rewound
/// time.
///
/// PERF: small on purpose (16 bytes, where a [`Hit`] is 176): a trace is returned by value
/// on every shot. The point met is [`Ray::at`] the distance (for a sweep, where the
/// sphere's centre was).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EntityBlock {
    /// The entity.
    pub entity: EntityId,
    /// Its hitbox the trace met.
    pub hitbox: HitboxId,
    /// Distance along the trace, metres (0 when it started inside).
    pub distance: f32,
}

impl From<&Hit> for EntityBlock {
    fn from(hit: &Hit) -> Self {
        Self {
            entity: hit.entity,
            hitbox: hit.hitbox,
            distance: hit.distance,
        }
    }
}

/// What stopped a trace before any target: a piece of static geometry or an entity that
/// blocks ([`EntityRole::Blocker`], or a [`EntityRole::TargetAndBlocker`] seen only through
/// [`Query::blocked_by`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Blocker {
    /// A piece of the level, or of the server's [`StaticWorld`].
    Wall(StaticId),
    /// An entity, rewound with the rest.
    Entity(EntityId),
}

impl From<StaticId> for Blocker {
    fn from(id: StaticId) -> Self {
        Self::Wall(id)
    }
}

impl Trace {
    /// What stopped the trace when it hit no target, and how far along it (metres): the
    /// blocking entity, or else the wall. `None` for a hit or a miss.
    #[must_use]
    pub fn stopped_by(&self) -> Option<(Blocker, f32)> {
        if self.hit.is_some() {
            return None;
        }
        match (self.blocking_entity, self.blocker) {
            (Some(entity), _) => Some((Blocker::Entity(entity.entity), entity.distance)),
            (None, Some(wall)) => Some((Blocker::Wall(wall.id), wall.distance)),
            (None, None) => None,
        }
    }
}

/// A query at one rewind target. Built by [`History::query`]; configure with the builder
/// methods, then run any number of traces and overlaps.
///
/// # Example
/// ```
/// # use std::sync::Arc;
/// # use lagcomp::{Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Obb, Quat, Ray, RewindTarget, Rig, Shape, Tick, Vec3, WindowPolicy, Zone};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let humanoid = Arc::new(Rig::new(4, vec![
/// #     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
/// #     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
/// #     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)),
/// # ])?);
/// # // Pelvis, chest, head and eye bones of a player standing at `feet`, in metres.
/// # let pose = |feet: Vec3| [0.95, 1.35, 1.7, 1.68].map(|y| BoneTransform::from_translation(feet + Vec3::Y * y));
/// # let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
/// # let target = history.spawn(humanoid);
/// # for tick in 1..=32_u32 {
/// #     let time = f64::from(tick) / 64.0;
/// #     let mut frame = history.begin_frame(Tick(tick), time)?;
/// #     frame.record(target, &pose(Vec3::X * 4.0 * time as f32), EntityState::default())?;
/// # }
/// // A humanoid walked along +x at 4 m/s, recorded at 64 Hz for half a second; a shot aims
/// // at where its head was 250 ms ago (1 m along x, 1.7 m up), from 10 m away.
/// let ray = Ray::new(Vec3::new(1.0, 1.7, -10.0), Vec3::Z, 100.0)?;
/// let then = RewindTarget::at(0.25); // server time, seconds
/// assert!(history.query(then).ray(&ray)?.hit.is_some());
/// // The shooter's own hitboxes never stop their shot; layers choose who can be hit
/// // (entities are on layer 1 unless their state says otherwise).
/// assert!(history.query(then).ignore(&[target]).ray(&ray)?.hit.is_none());
/// assert!(history.query(then).layers(0b10).ray(&ray)?.hit.is_none());
/// // A query is reused for many traces at the same moment.
/// let mut query = history.query(then);
/// let (high, low) = (Ray::new(Vec3::new(1.0, 2.5, -10.0), Vec3::Z, 100.0)?, ray);
/// assert!(query.ray(&high)?.hit.is_none() && query.ray(&low)?.hit.is_some());
/// # Ok(())
/// # }
/// ```
pub struct Query<'h, 'f, O = NoObserver> {
    history: &'h History,
    target: RewindTarget,
    policy: WindowPolicy,
    layers: u32,
    /// Which static pieces and blocker entities stop a trace; `layers` for a query that
    /// set no other.
    blocking: u32,
    ignore: &'f [EntityId],
    observer: O,
    /// The server's own level geometry, if it gave one; the history's own pieces block
    /// either way.
    world: Option<&'h dyn StaticWorld>,
}

impl<O: std::fmt::Debug> std::fmt::Debug for Query<'_, '_, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("history", &self.history)
            .field("target", &self.target)
            .field("policy", &self.policy)
            .field("layers", &self.layers)
            .field("blocking", &self.blocking)
            .field("ignore", &self.ignore)
            .field("observer", &self.observer)
            .field("world", &self.world.map(|_| "the server's"))
            .finish()
    }
}

impl History {
    /// A query at `target`: every layer, nothing ignored, targets outside the window
    /// rejected, no observer.
    #[must_use]
    pub fn query(&self, target: RewindTarget) -> Query<'_, 'static> {
        Query {
            history: self,
            target,
            policy: WindowPolicy::Reject,
            layers: u32::MAX,
            blocking: u32::MAX,
            ignore: &[],
            observer: NoObserver,
            world: None,
        }
    }

    /// Where hitbox `hitbox` of `entity` is now (in the newest frame the entity was
    /// recorded in).
    ///
    /// # Errors
    /// [`QueryError::Entity`] for a bad handle or an entity with no frame left;
    /// [`QueryError::UnknownHitbox`].
    pub fn present_placement(
        &self,
        entity: EntityId,
        hitbox: HitboxId,
    ) -> Result<(PlacedShape, Vec3), QueryError> {
        let index = self.known_index(entity)?;
        let rig = self.rig(entity)?;
        let hb_index = rig
            .hitbox_index(hitbox)
            .ok_or(QueryError::UnknownHitbox(hitbox))?;
        let hb = &rig.hitboxes()[hb_index];
        let present = self
            .sample_present(index)
            .ok_or(EntityError::NoFrames(entity))?;
        let bone = self.bone(index, &present, usize::from(hb.bone));
        Ok((hb.placed(&bone), bone.scale))
    }

    /// Maps a point given at the rewound time (say, `hit.entry.point`) to where that spot
    /// of the hitbox is now, for effects: blood on the target as it stands now.
    ///
    /// # Errors
    /// As [`History::present_placement`].
    pub fn map_to_present(&self, hit: &Hit, point: Vec3) -> Result<Vec3, QueryError> {
        let (now, _) = self.present_placement(hit.entity, hit.hitbox)?;
        Ok(hit.placement.corresponding_point(&now, point))
    }
}

/// One entity as it was at a rewind target: its state then, and any of its bones or
/// hitboxes, rebuilt on demand. From [`History::entity_at`]. A shot validator uses it for
/// the shooter (where was the muzzle, where was it looking) and for a claimed target.
#[derive(Debug, Clone, Copy)]
pub struct EntityAt<'h> {
    history: &'h History,
    index: usize,
    entity: EntityId,
    sample: EntitySample,
    rewind: Rewind,
    /// Set when extrapolated ([`History::entity_extrapolated`]): every bone moved by it.
    shift: Option<Vec3>,
}

impl EntityAt<'_> {
    /// The entity.
    #[must_use]
    pub fn entity(&self) -> EntityId {
        self.entity
    }

    /// The moment looked at.
    #[must_use]
    pub fn rewind(&self) -> Rewind {
        self.rewind
    }

    /// How the entity was sampled (its present pose when lag compensation was off then).
    #[must_use]
    pub fn sample(&self) -> Sample {
        Sample {
            time: self.rewind.time,
            kind: self.sample.kind,
        }
    }

    /// Its flags at that moment.
    #[must_use]
    pub fn state(&self) -> EntityState {
        self.sample.state
    }

    /// Bone `bone`'s world transform then; `None` if the rig has no such bone.
    #[must_use]
    pub fn bone(&self, bone: u16) -> Option<BoneTransform> {
        let rig = self.history.rig(self.entity).ok()?;
        (bone < rig.bone_count()).then(|| self.bone_then(usize::from(bone)))
    }

    /// Bone `bone` as sampled, moved when extrapolated.
    fn bone_then(&self, bone: usize) -> BoneTransform {
        let sampled = self.history.bone(self.index, &self.sample, bone);
        match self.shift {
            Some(shift) => crate::math::extrapolate(&sampled, shift),
            None => sampled,
        }
    }

    /// What the entity's pose was moved by, when extrapolated
    /// ([`History::entity_extrapolated`]); `None` for a rewound or present pose.
    #[must_use]
    pub fn extrapolation_shift(&self) -> Option<Vec3> {
        self.shift
    }

    /// Hitbox `hitbox` as placed then; `None` if the rig has no such hitbox.
    #[must_use]
    pub fn hitbox(&self, hitbox: HitboxId) -> Option<PlacedShape> {
        let rig = self.history.rig(self.entity).ok()?;
        let hb = &rig.hitboxes()[rig.hitbox_index(hitbox)?];
        Some(hb.placed(&self.bone_then(usize::from(hb.bone))))
    }
}

impl History {
    /// `entity` as it was at `target`; `Ok(None)` if it was not recorded around that
    /// moment (not spawned yet, or missing from both bracketing frames).
    ///
    /// # Errors
    /// [`QueryError::Rewind`] for a target the policy refuses, [`QueryError::Entity`] for
    /// an unknown or stale handle. A despawned entity is still found while its frames last.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Obb, Quat, Ray, RewindTarget, Rig, Shape, Tick, Vec3, WindowPolicy, Zone};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let humanoid = Arc::new(Rig::new(4, vec![
    /// #     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
    /// #     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
    /// #     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)),
    /// # ])?);
    /// # // Pelvis, chest, head and eye bones of a player standing at `feet`, in metres.
    /// # let pose = |feet: Vec3| [0.95, 1.35, 1.7, 1.68].map(|y| BoneTransform::from_translation(feet + Vec3::Y * y));
    /// # let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// # let target = history.spawn(humanoid);
    /// # for tick in 1..=32_u32 {
    /// #     let time = f64::from(tick) / 64.0;
    /// #     let mut frame = history.begin_frame(Tick(tick), time)?;
    /// #     frame.record(target, &pose(Vec3::X * 4.0 * time as f32), EntityState::default())?;
    /// # }
    /// // Where was the player's eye (bone 3), and its head hitbox, 250 ms ago (tick 16)?
    /// let then = history.entity_at(target, RewindTarget::at(0.25), WindowPolicy::Reject)?;
    /// let then = then.expect("recorded around that moment");
    /// let eye = then.bone(3).expect("the rig has four bones");
    /// assert_eq!(eye.translation, Vec3::new(1.0, 1.68, 0.0)); // metres
    /// let head = then.hitbox(HitboxId(2)).expect("the rig has hitbox 2");
    /// assert_eq!(head.pose.translation, Vec3::new(1.0, 1.7, 0.0));
    /// // Before the window: refused, or moved to its edge when asked.
    /// assert!(history.entity_at(target, RewindTarget::at(-1.0), WindowPolicy::Reject).is_err());
    /// assert!(history.entity_at(target, RewindTarget::at(-1.0), WindowPolicy::Clamp)?.is_some());
    /// # Ok(())
    /// # }
    /// ```
    pub fn entity_at(
        &self,
        entity: EntityId,
        target: RewindTarget,
        policy: WindowPolicy,
    ) -> Result<Option<EntityAt<'_>>, QueryError> {
        self.entity_at_with(entity, target, policy, Self::sample)
    }

    /// [`History::entity_at`], but always the recorded pose at `target`, even when the
    /// entity's lag compensation was off then. For the shooter's own position and view:
    /// "off" is about being hit, not about where it was.
    ///
    /// # Errors
    /// As [`History::entity_at`].
    pub fn entity_as_recorded(
        &self,
        entity: EntityId,
        target: RewindTarget,
        policy: WindowPolicy,
    ) -> Result<Option<EntityAt<'_>>, QueryError> {
        self.entity_at_with(entity, target, policy, Self::sample_rewound)
    }

    fn entity_at_with(
        &self,
        entity: EntityId,
        target: RewindTarget,
        policy: WindowPolicy,
        sample: impl Fn(&Self, usize, &Bracket) -> Option<EntitySample>,
    ) -> Result<Option<EntityAt<'_>>, QueryError> {
        let index = self.known_index(entity)?;
        let bracket = self.bracket(target, policy)?;
        Ok(sample(self, index, &bracket).map(|sample| EntityAt {
            history: self,
            index,
            entity,
            sample,
            rewind: Rewind::from(&bracket),
            shift: None,
        }))
    }
}

impl<'h, 'f, O: QueryObserver> Query<'h, 'f, O> {
    /// Only see entities and static geometry whose layers share a bit with `mask`: the
    /// targets it can hit and what can stop it (set the latter apart with
    /// [`Query::blocked_by`], after this).
    #[must_use]
    pub fn layers(mut self, mask: u32) -> Self {
        self.layers = mask;
        self.blocking = mask;
        self
    }

    /// Only static geometry and blocker entities ([`EntityRole::blocks`]) whose layers
    /// share a bit with `mask` stop the trace; targets are still chosen by
    /// [`Query::layers`]. A weapon whose rounds pass a fence or a pane of glass leaves the
    /// fence's or the glass's layer out of `mask`. An entity that is both a target and a
    /// blocker is hit when one of its layers is in [`Query::layers`]; when only the
    /// blocking mask has one of its layers, it stops the trace without being hit.
    #[must_use]
    pub fn blocked_by(mut self, mask: u32) -> Self {
        self.blocking = mask;
        self
    }

    /// The layer mask each entity role is seen with, indexed by the role's number: a
    /// target through [`Query::layers`], a blocker through [`Query::blocked_by`], and one
    /// that is both through either.
    fn role_masks(&self) -> RoleMasks {
        RoleMasks([0, self.layers, self.blocking, self.layers | self.blocking])
    }

    /// Never report these entities (the shooter, their vehicle).
    #[must_use]
    pub fn ignore<'g>(self, entities: &'g [EntityId]) -> Query<'h, 'g, O> {
        Query {
            history: self.history,
            target: self.target,
            policy: self.policy,
            layers: self.layers,
            blocking: self.blocking,
            ignore: entities,
            observer: self.observer,
            world: self.world,
        }
    }

    /// Traces also stop at `world`: the level geometry the server already has (its physics
    /// engine's, say), consulted at the moment the query looks at. The history's own
    /// pieces still block; the nearer blocker is reported. Overlaps do not consult it.
    #[must_use]
    pub fn world<'w>(self, world: &'w dyn StaticWorld) -> Query<'w, 'f, O>
    where
        'h: 'w,
    {
        Query {
            history: self.history,
            target: self.target,
            policy: self.policy,
            layers: self.layers,
            blocking: self.blocking,
            ignore: self.ignore,
            observer: self.observer,
            world: Some(world),
        }
    }

    /// What to do with a target outside the window (default: reject).
    #[must_use]
    pub fn window_policy(mut self, policy: WindowPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Report every step to `observer`.
    #[must_use]
    pub fn observe<P: QueryObserver>(self, observer: P) -> Query<'h, 'f, P> {
        self.with_observer(observer)
    }

    /// This query's target, filters and window policy, reported to `observer`.
    fn with_observer<P: QueryObserver>(&self, observer: P) -> Query<'h, 'f, P> {
        Query {
            history: self.history,
            target: self.target,
            policy: self.policy,
            layers: self.layers,
            blocking: self.blocking,
            ignore: self.ignore,
            observer,
            world: self.world,
        }
    }

    /// Resolves the target against the frames held now.
    fn bracket(&self) -> Result<Bracket, QueryError> {
        Ok(self.history.bracket(self.target, self.policy)?)
    }
}

/// Which entities a walk visits. The tree holds every entity's bounds frame by frame; an
/// entity whose lag compensation was off at the target time is tested at its present pose,
/// which those boxes do not cover, so the tree walk leaves it to a second walk over the
/// short list of such entities. A debug walk visits everyone once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    Tree,
    Uncompensated,
    Everyone,
}

/// The observer of a query that no one entity tree can answer (a bracket across the last
/// tree rebuild, `History::entity_tree`): it reports nothing, but as an observer it
/// makes the query walk every entity, as debug mode does.
struct EveryEntity;

impl QueryObserver for EveryEntity {}

impl<O: QueryObserver> Query<'_, '_, O> {
    /// This query without its observer, walking every entity.
    fn every_entity(&self) -> Query<'_, '_, EveryEntity> {
        self.with_observer(EveryEntity)
    }
}

/// The per-entity checks every query makes before touching hitboxes: handle, ignore list,
/// presence at the target time, which walk owns it, alive, layers, and its bounds at the
/// target time (`touches`, told whether the sample blends two frames). Reports the decision
/// to the observer.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site per query kind; a struct would only rename them"
)]
#[inline]
fn admit<'h, O: QueryObserver>(
    history: &'h History,
    index: usize,
    bracket: &Bracket,
    walk: Walk,
    masks: &RoleMasks,
    ignore: &[EntityId],
    observer: &mut O,
    touches: impl Fn(&crate::math::Aabb, bool) -> bool,
) -> Option<(&'h crate::rig::Rig, EntityId, crate::history::EntitySample)> {
    use observer::BroadphaseDecision;
    let (rig, id) = history.slot_rig(index)?;
    let layers = masks.of(history.slot_role(index));
    let mut decide = |decision| {
        if O::ENABLED {
            observer.broadphase(id, decision);
        }
    };
    if ignore.contains(&id) {
        decide(BroadphaseDecision::Ignored);
        return None;
    }
    let Some(sample) = history.sample(index, bracket) else {
        if walk != Walk::Uncompensated {
            decide(BroadphaseDecision::Absent);
        }
        return None;
    };
    let present = !sample.rewound();
    match walk {
        Walk::Tree if present => return None,
        Walk::Uncompensated if !present => return None,
        _ => {}
    }
    if !sample.state.alive {
        decide(BroadphaseDecision::NotAlive);
        return None;
    }
    if sample.state.layers & layers == 0 {
        decide(BroadphaseDecision::OtherLayer);
        return None;
    }
    let blended = matches!(sample.kind, crate::history::SampleKind::Interpolated { .. });
    if !touches(&sample.bounds, blended) {
        decide(BroadphaseDecision::Culled);
        return None;
    }
    decide(BroadphaseDecision::Passed);
    Some((rig, id, sample))
}

/// The layers an entity of each role must share a bit with to be seen, indexed by
/// `EntityRole as usize` (0 unused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoleMasks(pub(crate) [u32; 4]);

impl RoleMasks {
    /// The mask for `role`.
    #[inline(always)]
    pub(crate) fn of(&self, role: EntityRole) -> u32 {
        self.0[role as usize & 3]
    }

    /// Whether an entity of `role` on `layers` is hit (rather than only stopping the
    /// trace).
    pub(crate) fn hits(&self, role: EntityRole, layers: u32) -> bool {
        role.is_target() && layers & self.0[EntityRole::Target as usize] != 0
    }
}

fn check_radius(radius: f32) -> Result<(), QueryError> {
    if (0.0..=MAX_EXTENT).contains(&radius) {
        Ok(())
    } else {
        Err(QueryError::Radius(radius))
    }
}
