//! Ray and sphere-sweep traces at a rewound time.

use glam::{Vec3, Vec3A};

use super::observer::QueryObserver;
use super::{
    EntityBlock, Hit, Query, QueryError, Ray, Rewind, RoleMasks, StaticHit, SurfacePoint, Trace,
    Walk, admit, check_radius,
};
use crate::history::{Bracket, EntityId, EntityRole, EntityView, History, LineLanes, Sample};
use crate::math::{BoneTransform, ray_recip};
use crate::narrow::{Crossing, PlacedShape};
use crate::rig::{Hitbox, HitboxId, Rig, Zone};
use crate::time::RewindTarget;
use crate::world::{StaticId, StaticWorld};

/// A hitbox the trace touched, before it is turned into a [`Hit`]. Closest-hit traces keep
/// only the best one and build its [`Hit`] once at the end.
#[derive(Clone, Copy)]
pub(super) struct Touch {
    entity: EntityId,
    /// The entity's slot, to resample it when the touch becomes a hit.
    index: usize,
    hitbox: HitboxId,
    zone: Zone,
    hitbox_index: usize,
    crossing: Crossing,
    placed: PlacedShape,
    bone_scale: Vec3,
}

impl Touch {
    /// Entry distance, 0 when the trace starts inside.
    #[inline]
    fn distance(&self) -> f32 {
        self.crossing.enter.max(0.0)
    }

    /// Whether a touch at `(distance, entity, hitbox)` comes before `other`: nearer, or as
    /// near with the lower (entity, hitbox), as `ray_all` orders them, so the answer never
    /// depends on traversal order. (A key, not a touch: see [`TraceContext::keep`].)
    #[inline]
    fn before_key(key: (f32, EntityId, HitboxId), other: &Self) -> bool {
        key < (other.distance(), other.entity, other.hitbox)
    }

    /// The hit, with the entity's sample at the trace's moment rebuilt: the one the trace
    /// admitted it with (the same inputs give the same sample), so `None` never happens.
    #[cold]
    fn into_hit(self, ctx: &TraceContext<'_>) -> Option<Hit> {
        let (origin, dir, radius) = (ctx.origin, ctx.dir, ctx.radius);
        let entity_sample = ctx.history.sample(self.index, ctx.bracket);
        debug_assert!(entity_sample.is_some(), "a touched entity has a sample");
        let entity_sample = entity_sample?;
        let c = self.crossing;
        let started_inside = c.enter < 0.0;
        let distance = self.distance();
        let entry = if started_inside {
            SurfacePoint {
                point: self.placed.closest_point(origin),
                normal: -dir,
            }
        } else {
            SurfacePoint {
                point: origin + dir * distance - c.enter_normal * radius,
                normal: c.enter_normal,
            }
        };
        Some(Hit {
            entity: self.entity,
            hitbox: self.hitbox,
            hitbox_index: self.hitbox_index as u16,
            zone: self.zone,
            distance,
            entry,
            exit_distance: c.exit,
            exit: SurfacePoint {
                point: origin + dir * c.exit - c.exit_normal * radius,
                normal: c.exit_normal,
            },
            penetration: c.exit - distance,
            started_inside,
            sample: Sample {
                time: ctx.bracket.time,
                kind: entity_sample.kind,
            },
            placement: self.placed,
            bone_scale: self.bone_scale,
            state: entity_sample.state,
        })
    }
}

/// Where a trace's touches go: the closest only, or all of them.
pub(super) enum Found<'o> {
    Closest(Option<Touch>),
    All(&'o mut Vec<Hit>),
}

impl<O: QueryObserver> Query<'_, '_, O> {
    /// The closest entity the ray hits at the target time, and the first wall.
    ///
    /// # Errors
    /// [`QueryError`] when the target cannot be resolved.
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
    /// // The client drew the target as it was at tick 16 (1 m along x) and aimed at its head
    /// // from 10 m away; the server now holds tick 32, where the target stands 2 m along x.
    /// let ray = Ray::new(Vec3::new(1.0, 1.7, -10.0), Vec3::Z, 100.0)?; // metres
    /// let trace = history.query(RewindTarget::between(Tick(16), Tick(17), 0.0)).ray(&ray)?;
    /// let hit = trace.hit.expect("the head was there then");
    /// assert_eq!((hit.entity, hit.zone), (target, Zone::Head));
    /// assert!((hit.distance - 9.88).abs() < 1e-4); // to the surface of the 12 cm head sphere
    /// // Against the present, the same shot misses.
    /// assert!(history.query(RewindTarget::at(0.5)).ray(&ray)?.hit.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn ray(&mut self, ray: &Ray) -> Result<Trace, QueryError> {
        self.trace(ray, 0.0, Found::Closest(None))
    }

    /// Every hitbox the ray passes through before the first wall, one hit per (entity,
    /// hitbox), sorted by distance, written to `out` (cleared first; reuse it across
    /// queries to allocate nothing). Penetrating weapons use this. The returned trace's
    /// `hit` is the first of them.
    ///
    /// # Errors
    /// As [`Query::ray`].
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
    /// // A shot straight down through the target at tick 16: head, chest, then pelvis.
    /// let ray = Ray::between(Vec3::new(1.0, 3.0, 0.0), Vec3::new(1.0, 0.0, 0.0))?;
    /// let mut hits = Vec::new(); // reuse across shots
    /// history.query(RewindTarget::at(0.25)).ray_all(&ray, &mut hits)?;
    /// let ids: Vec<_> = hits.iter().map(|hit| hit.hitbox).collect();
    /// assert_eq!(ids, [HitboxId(2), HitboxId(1), HitboxId(0)]);
    /// assert!(hits.windows(2).all(|pair| pair[0].distance <= pair[1].distance));
    /// # Ok(())
    /// # }
    /// ```
    pub fn ray_all(&mut self, ray: &Ray, out: &mut Vec<Hit>) -> Result<Trace, QueryError> {
        self.trace(ray, 0.0, Found::All(out))
    }

    /// The closest entity a sphere of `radius` moving along the ray touches (a thick
    /// trace). Distances are of the sphere's centre; contact points are on the hitbox.
    ///
    /// # Errors
    /// As [`Query::ray`], and [`QueryError::Radius`].
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
    /// // A line passing 20 cm beside the head (radius 12 cm) at tick 16: a ray misses, a
    /// // projectile 10 cm in radius grazes it.
    /// let ray = Ray::new(Vec3::new(1.2, 1.75, -10.0), Vec3::Z, 100.0)?;
    /// let mut query = history.query(RewindTarget::at(0.25));
    /// assert!(query.ray(&ray)?.hit.is_none());
    /// let hit = query.sweep(&ray, 0.1)?.hit.expect("the sphere touches the head");
    /// assert_eq!(hit.zone, Zone::Head);
    /// # Ok(())
    /// # }
    /// ```
    pub fn sweep(&mut self, ray: &Ray, radius: f32) -> Result<Trace, QueryError> {
        check_radius(radius)?;
        self.trace(ray, radius, Found::Closest(None))
    }

    /// Every hitbox a sweep touches before the first wall, sorted, into `out`.
    ///
    /// # Errors
    /// As [`Query::sweep`].
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
    /// // A 30 cm-wide beam down through the target at tick 16 touches all three hitboxes.
    /// let ray = Ray::between(Vec3::new(1.0, 3.0, 0.0), Vec3::new(1.0, 0.0, 0.0))?;
    /// let mut touched = Vec::new();
    /// history.query(RewindTarget::at(0.25)).sweep_all(&ray, 0.15, &mut touched)?;
    /// assert_eq!(touched.len(), 3);
    /// assert_eq!(touched[0].zone, Zone::Head);
    /// # Ok(())
    /// # }
    /// ```
    pub fn sweep_all(
        &mut self,
        ray: &Ray,
        radius: f32,
        out: &mut Vec<Hit>,
    ) -> Result<Trace, QueryError> {
        check_radius(radius)?;
        self.trace(ray, radius, Found::All(out))
    }

    /// [`Query::trace`] walking every entity, without the tree.
    ///
    /// PERF: out of line, and only for a bracket no one tree holds: a walk that could
    /// fall back to every entity in line cost every shot about 20 instructions.
    #[cold]
    #[inline(never)]
    fn trace_every_entity(
        &mut self,
        ray: &Ray,
        radius: f32,
        found: Found<'_>,
    ) -> Result<Trace, QueryError> {
        self.every_entity().trace(ray, radius, found)
    }

    fn trace(&mut self, ray: &Ray, radius: f32, found: Found<'_>) -> Result<Trace, QueryError> {
        // PERF: a time target (every shot) is bracketed inline and the other targets on a
        // cold path of their own. Joined after one `bracket` call, the two paths met in
        // memory: the inline bracket was stored field by field where the out-of-line one
        // is returned, then read back 16 bytes at a time (a load the store buffer cannot
        // forward) and copied, on every shot.
        let bracket = match self.target {
            RewindTarget::Time(time) => self.history.bracket_at_time(time, self.policy)?,
            _ => return self.trace_other_target(ray, radius, found),
        };
        self.trace_at(bracket, ray, radius, found)
    }

    /// [`Query::trace`] for latency and tick-pair targets.
    #[cold]
    #[inline(never)]
    fn trace_other_target(
        &mut self,
        ray: &Ray,
        radius: f32,
        found: Found<'_>,
    ) -> Result<Trace, QueryError> {
        let bracket = self.bracket()?;
        self.trace_at(bracket, ray, radius, found)
    }

    /// [`Query::trace`] once the target is bracketed.
    #[inline(always)]
    pub(super) fn trace_at(
        &mut self,
        bracket: Bracket,
        ray: &Ray,
        radius: f32,
        mut found: Found<'_>,
    ) -> Result<Trace, QueryError> {
        if let Found::All(out) = &mut found {
            out.clear();
        }
        let history = self.history;
        let tree = match history.entity_tree(&bracket) {
            Some(tree) => tree,
            // Rare: no one tree holds the bracket's frames (across the last rebuild).
            None if !O::ENABLED => return self.trace_every_entity(ray, radius, found),
            None => history.current_entity_tree(),
        };
        if !O::ENABLED {
            tree.prefetch_root(bracket.spans);
        }
        let inv_dir = ray_recip(ray.dir());
        // PERF: a history without walls (the common case for a shooter's hitbox server)
        // does not call `first_wall`: the call alone (six saved registers, the answer
        // through memory) was about 40 instructions a shot.
        let blocker = if history.level().is_empty() && self.world.is_none() {
            None
        } else {
            first_wall(
                history,
                self.world,
                ray,
                inv_dir,
                radius,
                self.blocking,
                bracket.time,
            )
        };
        if let Some(wall) = blocker.as_ref().filter(|_| O::ENABLED) {
            self.observer.blocked(wall);
        }
        let reach = blocker.map_or(ray.max_distance(), |w| w.distance);
        let ctx = TraceContext {
            history,
            bracket: &bracket,
            origin: ray.origin(),
            dir: ray.dir(),
            inv_dir,
            radius,
            masks: self.role_masks(),
            ignore: self.ignore,
            lanes: LineLanes::new(ray.origin(), ray.dir(), radius, history.kernels()),
        };
        let observer = &mut self.observer;
        if O::ENABLED {
            // Debug mode walks every entity so each gets a reported decision.
            let mut t_max = reach;
            for index in 0..history.slot_count() {
                t_max = ctx.entity(index, Walk::Everyone, t_max, &mut found, &mut *observer);
            }
        } else {
            let mut t_max = reach;
            tree.cast(
                history.kernels(),
                bracket.spans,
                ctx.origin,
                inv_dir,
                radius,
                reach,
                // PERF: an entity's records and rows are asked for as its leaf passes, so
                // their misses overlap with the rest of the walk and with each other
                // (64x16 -9 %, 200x20 -9 % wall time in the funnel; prefetching as the
                // visit starts gave a third of that).
                |index| history.prefetch_rewound(index as usize, &bracket),
                |index, t| {
                    t_max = ctx.entity(index as usize, Walk::Tree, t, &mut found, &mut *observer);
                    t_max
                },
            );
            for index in history.uncompensated() {
                t_max = ctx.entity(
                    index,
                    Walk::Uncompensated,
                    t_max,
                    &mut found,
                    &mut *observer,
                );
            }
        }
        let rewind = (&bracket).into();
        let (hit, blocking_entity) = match found {
            // PERF: the hit is built in the result: built as `touch.and_then(..)` and moved
            // into it, the 168-byte `Option<Hit>` went through two `memcpy` calls on every
            // shot, hit or not.
            Found::Closest(None) => {
                return Ok(Trace {
                    hit: None,
                    blocker,
                    blocking_entity: None,
                    rewind,
                });
            }
            // PERF: a hit is built in the result, as above, and a stop at a blocker entity
            // out of line: with both built here, each hit's trace went through `memcpy`
            // twice more (about 2 % more instructions a shot, 64x16 funnel).
            Found::Closest(Some(touch)) if !O::ENABLED => {
                if ctx.history.slot_role(touch.index) != EntityRole::Target {
                    return Ok(ctx.closest(touch, blocker, rewind));
                }
                // PERF: the trace is made in the result first and its hit written into it:
                // built in one expression, with the blocking entity's field, each hit's
                // `memcpy` took 52 instructions instead of 29 (64x16 funnel under
                // callgrind: 2,599 million instructions for 1,024,000 shots, 2,574 now).
                let mut result = Ok(Trace {
                    hit: None,
                    blocker,
                    blocking_entity: None,
                    rewind,
                });
                if let Ok(trace) = &mut result {
                    trace.hit = touch.into_hit(&ctx);
                }
                return result;
            }
            Found::Closest(Some(touch)) => {
                let trace = ctx.closest(touch, blocker, rewind);
                if let Some(hit) = trace.hit.as_ref().filter(|_| O::ENABLED) {
                    self.observer.hit(hit);
                }
                return Ok(trace);
            }
            Found::All(out) => {
                out.sort_unstable_by(|a, b| {
                    a.distance
                        .total_cmp(&b.distance)
                        .then(a.entity.cmp(&b.entity))
                        .then(a.hitbox.cmp(&b.hitbox))
                });
                ctx.cut_at_blocker(out)
            }
        };
        Ok(Trace {
            hit,
            blocker,
            blocking_entity,
            rewind,
        })
    }
}

/// The first static geometry on a matching layer the trace touches within reach, at the
/// moment `time`: the history's own level and the server's world, the nearer one (the
/// level's on a tie). Out of line: only queries with walls call it.
#[inline(never)]
pub(super) fn first_wall(
    history: &History,
    world: Option<&dyn StaticWorld>,
    ray: &Ray,
    inv_dir: Vec3,
    radius: f32,
    layers: u32,
    time: f64,
) -> Option<StaticHit> {
    let (origin, dir) = (ray.origin(), ray.dir());
    let level = history.level();
    let own = if level.is_empty() {
        None
    } else {
        level.first_hit(ray, inv_dir, radius, layers, time)
    };
    let theirs = world
        .and_then(|world| {
            if radius == 0.0 {
                world.cast_ray(ray, layers, time)
            } else {
                world.cast_sphere(ray, radius, layers, time)
            }
        })
        // A NaN or out-of-reach answer is no hit; a negative one starts at the origin.
        .filter(|hit| hit.distance <= ray.max_distance())
        .map(|hit| {
            let distance = hit.distance.max(0.0);
            let normal = hit.normal.normalize_or(-dir);
            StaticHit {
                id: StaticId(hit.id),
                distance,
                point: origin + dir * distance - normal * radius,
                normal,
            }
        });
    match (own, theirs) {
        (Some(own), Some(theirs)) if theirs.distance < own.distance => Some(theirs),
        (Some(own), _) => Some(own),
        (None, theirs) => theirs,
    }
}

/// Everything a trace needs per entity, gathered once.
struct TraceContext<'a> {
    history: &'a History,
    bracket: &'a Bracket,
    origin: Vec3,
    dir: Vec3,
    inv_dir: Vec3,
    radius: f32,
    masks: RoleMasks,
    ignore: &'a [EntityId],
    lanes: LineLanes,
}

impl TraceContext<'_> {
    /// The trace whose nearest touch is `touch`: a hit on a target, or a stop at a
    /// blocker entity (a vehicle, both, is hit when its layers are among the hit ones).
    /// Out of line: a plain target's hit is built in the trace (see `trace_at`).
    #[cold]
    #[inline(never)]
    fn closest(&self, touch: Touch, blocker: Option<StaticHit>, rewind: Rewind) -> Trace {
        let role = self.history.slot_role(touch.index);
        let hit = touch.into_hit(self);
        let target = hit.is_some_and(|hit| self.masks.hits(role, hit.state.layers));
        Trace {
            hit: hit.filter(|_| target),
            blocker,
            blocking_entity: hit.filter(|_| !target).as_ref().map(EntityBlock::from),
            rewind,
        }
    }

    /// Ends a penetrating trace's sorted hits at the first entity that blocks it: a
    /// blocker is taken out and returned as the blocking entity; a target that also
    /// blocks (a vehicle) is the last hit kept. Returns the first hit and the blocking
    /// entity.
    fn cut_at_blocker(&self, out: &mut Vec<Hit>) -> (Option<Hit>, Option<EntityBlock>) {
        let blocking = self.masks.0[EntityRole::Blocker as usize];
        let stop = out.iter().position(|hit| {
            let role = self.history.slot_role(hit.entity.index() as usize);
            role.blocks() && hit.state.layers & blocking != 0
                || !self.masks.hits(role, hit.state.layers)
        });
        let Some(stop) = stop else {
            return (out.first().copied(), None);
        };
        let last = out[stop];
        let role = self.history.slot_role(last.entity.index() as usize);
        if self.masks.hits(role, last.state.layers) {
            out.truncate(stop + 1);
            (out.first().copied(), None)
        } else {
            out.truncate(stop);
            (out.first().copied(), Some(EntityBlock::from(&last)))
        }
    }

    /// Tests one entity; returns the new reach (shrunk by a closer hit in closest mode).
    fn entity<O: QueryObserver>(
        &self,
        index: usize,
        walk: Walk,
        mut t_max: f32,
        found: &mut Found<'_>,
        observer: &mut O,
    ) -> f32 {
        let history = self.history;
        // The walks that reach an entity without its leaf (debug, uncompensated) test its
        // bounds at the target time.
        let touches = |bounds: &crate::math::Aabb, _blended: bool| {
            bounds
                .inflated(self.radius)
                .ray_interval(self.origin, self.inv_dir, t_max)
                .is_some()
        };
        let (rig, id, view) = if O::ENABLED || walk != Walk::Tree {
            let Some((rig, id, sample)) = admit(
                history,
                index,
                self.bracket,
                walk,
                &self.masks,
                self.ignore,
                observer,
                touches,
            ) else {
                return t_max;
            };
            if O::ENABLED {
                let public_sample = Sample {
                    time: self.bracket.time,
                    kind: sample.kind,
                };
                observer.sample(id, &public_sample);
            }
            (rig, id, history.view(index, &sample))
        } else {
            // PERF: the tree walk without an observer decides exactly as `admit` does, but
            // builds no sample (kind, state, bounds) for the entities it reaches, most of
            // which the bone cull then rejects: the hit kept is resampled at the end.
            let Some((rig, id, role)) = history.slot_entry(index) else {
                return t_max;
            };
            if self.ignore.contains(&id) {
                return t_max;
            }
            let layers = self.masks.of(role);
            let Some(rewound) = history.rewound_for_tree(index, self.bracket, layers) else {
                return t_max;
            };
            // No test of the entity's bounds at the target time: the walk reached it through
            // its leaf, whose boxes span the bracket's frames (each frame's box reaches the
            // next), so they hold the bounds of every frame the entity is rewound from, and
            // the leaf passed. PERF: an exact frame's own bounds, tighter, turned away 0.007
            // entities a shot at 64x16 for about 55 instructions each of the 0.67 tested.
            (rig, id, history.rewound_view(index, &rewound))
        };
        let present = O::ENABLED.then(|| history.sample_present(index)).flatten();
        let hitboxes = rig.hitboxes();
        // Reports a hitbox placed at the target time, runs its exact test and keeps the
        // touch; returns the new reach.
        let report = |observer: &mut O, i: usize, placed: &PlacedShape| {
            let hitbox = &hitboxes[i];
            let now =
                present.map(|p| hitbox.placed(&history.bone(index, &p, usize::from(hitbox.bone))));
            observer.hitbox(id, hitbox, placed, now.as_ref());
        };
        // The touch of hitbox `i` for a crossing (see `TraceContext::keep`).
        let touch = |i: usize, crossing: Crossing, placed: PlacedShape, bone_scale: Vec3| {
            let hitbox = &hitboxes[i];
            Touch {
                entity: id,
                index,
                hitbox: hitbox.id,
                zone: hitbox.zone,
                hitbox_index: i,
                crossing,
                placed,
                bone_scale,
            }
        };
        if view.has_scale() {
            // Rare: some bone of this entity is scaled in one of the frames. One hitbox at
            // a time, culled by the sphere around its bone's origin that holds it (scaled
            // by the bone's largest scale), then interpolated and tested.
            let mut cached_bone = usize::MAX;
            let mut bone = BoneTransform::IDENTITY;
            for (i, hitbox) in hitboxes.iter().enumerate() {
                let bone_index = usize::from(hitbox.bone);
                let (bone_origin, max_scale) = view.bone_origin(bone_index);
                if !self.passes_near(bone_origin, rig.hitbox_reach(i) * max_scale, t_max) {
                    continue;
                }
                if bone_index != cached_bone {
                    bone = view.bone(bone_index);
                    cached_bone = bone_index;
                }
                let placed = hitbox.placed(&bone);
                if O::ENABLED {
                    report(observer, i, &placed);
                }
                if let Some(crossing) = self.crossing(&placed, t_max) {
                    let key = (crossing.enter.max(0.0), id, hitbox.id);
                    let touch = || touch(i, crossing, placed, bone.scale);
                    t_max = self.keep(found, observer, touch, key, t_max);
                }
            }
            return t_max;
        }
        // Bones four (or eight) at a time first, by the sphere around each bone's lerped
        // origin that holds its hitboxes (no slerp yet); only the bones that pass are
        // interpolated, and each of their hitboxes is then culled by the ball around its own
        // placed centre before the exact test. The ball is much tighter than the bone's
        // sphere for a limb whose capsule sits half a limb from the joint, and it is
        // computed exactly as the exact test places the shape, so it only skips hitboxes the
        // exact test would miss. With an observer, the per-hitbox test is the bone-origin
        // sphere instead, so debug output shows every hitbox near the trace.
        // PERF: whether the entity blends two frames is decided once, not per bone (a branch
        // per bone that callgrind's model mispredicted about one time in three).
        if view.single() {
            self.unscaled_hitboxes::<true, O>(
                &view, rig, t_max, found, id, observer, &report, &touch,
            )
        } else {
            self.unscaled_hitboxes::<false, O>(
                &view, rig, t_max, found, id, observer, &report, &touch,
            )
        }
    }

    /// The hitboxes of an unscaled entity (`SINGLE`: its view uses one frame); returns the
    /// new reach.
    #[expect(
        clippy::too_many_arguments,
        reason = "the entity's view, its reach, where touches go and the observer's hooks"
    )]
    #[inline(always)]
    fn unscaled_hitboxes<const SINGLE: bool, O: QueryObserver>(
        &self,
        view: &EntityView<'_>,
        rig: &Rig,
        t_max: f32,
        found: &mut Found<'_>,
        id: EntityId,
        observer: &mut O,
        report: &impl Fn(&mut O, usize, &PlacedShape),
        touch: &impl Fn(usize, Crossing, PlacedShape, Vec3) -> Touch,
    ) -> f32 {
        // PERF: a rig whose bones carry one hitbox each (every humanoid rig here) takes a
        // loop without the inner loop over a bone's hitboxes: with it, the compiler hoisted
        // each bone's rotation terms out of that inner loop and spilled them to the stack
        // (ten stores, and loads on the ball test's dependency chain, per passing bone).
        if !O::ENABLED && rig.one_per_bone() {
            self.unscaled_bones::<SINGLE, true, O>(
                view, rig, t_max, found, id, observer, report, touch,
            )
        } else {
            self.unscaled_bones::<SINGLE, false, O>(
                view, rig, t_max, found, id, observer, report, touch,
            )
        }
    }

    /// [`TraceContext::unscaled_hitboxes`]; `ONE`: no bone carries more than one hitbox.
    #[expect(
        clippy::too_many_arguments,
        reason = "the entity's view, its reach, where touches go and the observer's hooks"
    )]
    #[inline(always)]
    fn unscaled_bones<const SINGLE: bool, const ONE: bool, O: QueryObserver>(
        &self,
        view: &EntityView<'_>,
        rig: &Rig,
        mut t_max: f32,
        found: &mut Found<'_>,
        id: EntityId,
        observer: &mut O,
        report: &impl Fn(&mut O, usize, &PlacedShape),
        touch: &impl Fn(usize, Crossing, PlacedShape, Vec3) -> Touch,
    ) -> f32 {
        let hitboxes = rig.hitboxes();
        let bone_reach = rig.bone_reach();
        // A blended entity's passing bones are all interpolated first, then tested one by
        // one. PERF: a blended bone's ball test waits on its slerp (dot, lerp, norm, square
        // root, division) and then on the rotation of its hitbox's offset; interpolated in
        // the loop, bone after bone with an unpredictable branch on each ball test between
        // them, those chains ran one after another; in a pass of their own, with no branch
        // but the loop's, they overlap (64x16 funnel: blended shots 304-306 -> 284-290 ns).
        let first_pass = !SINGLE && !O::ENABLED;
        let mut blended = [std::mem::MaybeUninit::<(Vec3, glam::Quat)>::uninit(); 64];
        for first in (0..usize::from(rig.bone_count())).step_by(64) {
            let mut mask = view.cull_bones(first, rig.carrying(), bone_reach, &self.lanes, t_max);
            if first_pass {
                let mut rest = mask;
                while rest != 0 {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    let bone = view.bone_unscaled_as::<SINGLE>(first + bit);
                    blended[bit].write((bone.translation, bone.rotation));
                }
            }
            while mask != 0 {
                let bit = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let bone_index = first + bit;
                let bone = if first_pass {
                    // SAFETY: the first pass wrote entry `bit` for every bit of this mask.
                    let (translation, rotation) = unsafe { blended[bit].assume_init() };
                    BoneTransform::new(translation, rotation)
                } else {
                    view.bone_unscaled_as::<SINGLE>(bone_index)
                };
                let on_bone = rig.hitboxes_of(bone_index);
                // One hitbox, or each of the bone's hitboxes (a bone in the mask carries at
                // least one: `carrying`); returns the new reach.
                let mut hitbox_at = |i: usize, t_max: f32| {
                    if O::ENABLED {
                        let (bone_origin, _) = view.bone_origin(bone_index);
                        if !self.passes_near(bone_origin, rig.hitbox_reach(i), t_max) {
                            return t_max;
                        }
                    }
                    let hitbox = &hitboxes[i];
                    let placed = if O::ENABLED {
                        hitbox.placed(&bone)
                    } else {
                        let center = placed_center_a(hitbox, &bone);
                        if !self.passes_near_a(center, rig.hitbox_ball(i), t_max) {
                            return t_max;
                        }
                        placed_unscaled(hitbox, &bone, center)
                    };
                    if O::ENABLED {
                        report(observer, i, &placed);
                    }
                    match self.crossing(&placed, t_max) {
                        Some(crossing) => {
                            let key = (crossing.enter.max(0.0), id, hitbox.id);
                            let touch = || touch(i, crossing, placed, bone.scale);
                            self.keep(found, &mut *observer, touch, key, t_max)
                        }
                        None => t_max,
                    }
                };
                if ONE {
                    t_max = hitbox_at(on_bone.start, t_max);
                } else {
                    for i in on_bone {
                        t_max = hitbox_at(i, t_max);
                    }
                }
            }
        }
        t_max
    }

    /// Keeps a hitbox's touch (a crossing within the current reach); returns the new reach.
    ///
    /// PERF: always inline: as a closure called from every hitbox loop it was compiled out
    /// of line, and the crossing and placed shape went to it through the stack, stored in
    /// 4-byte pieces and read back 16 bytes at a time (loads the store buffer cannot
    /// forward).
    ///
    /// The touch is built (`touch`) only where it is kept: built first, it was stored on
    /// the stack field by field and copied into the best one 16 bytes at a time.
    #[inline(always)]
    fn keep<O: QueryObserver>(
        &self,
        found: &mut Found<'_>,
        observer: &mut O,
        touch: impl FnOnce() -> Touch,
        key: (f32, EntityId, HitboxId),
        t_max: f32,
    ) -> f32 {
        match found {
            Found::Closest(best) => {
                if best.as_ref().is_none_or(|b| Touch::before_key(key, b)) {
                    *best = Some(touch());
                    return key.0;
                }
            }
            Found::All(out) => {
                if let Some(hit) = touch().into_hit(self) {
                    if O::ENABLED {
                        observer.hit(&hit);
                    }
                    out.push(hit);
                }
            }
        }
        t_max
    }

    /// Where the trace crosses `placed` within `[0, t_max]`: a hitbox's exact test.
    #[inline(always)]
    fn crossing(&self, placed: &PlacedShape, t_max: f32) -> Option<Crossing> {
        placed
            .cast_sphere_line_inline(self.origin, self.dir, self.radius)
            .and_then(|c| c.clip(t_max))
    }

    /// [`TraceContext::passes_near`] on SIMD lanes, the same numbers: glam's `Vec3A` dot
    /// product sums `(x + y) + z` as `Vec3`'s does, and the other operations are lane-wise.
    ///
    /// PERF: the placed centre comes out of glam's rotation as a `Vec3A`; as a `Vec3` it
    /// was taken apart into scalars and put back together for each vector operation (a
    /// dozen shuffles per passing bone).
    #[inline]
    fn passes_near_a(&self, center: Vec3A, reach: f32, t_max: f32) -> bool {
        let (origin, dir) = (Vec3A::from(self.origin), Vec3A::from(self.dir));
        let reach = reach + self.radius;
        let to_center = center - origin;
        let along = to_center.dot(dir);
        !((along < -reach)
            | (along - reach > t_max)
            | ((to_center - dir * along).length_squared() > reach * reach))
    }

    /// Whether the trace passes within `reach` of `center` (grown by the trace's radius)
    /// somewhere in `[0, t_max]` along it: the per-hitbox cull before an exact test.
    ///
    /// PERF: the three comparisons are combined without short-circuiting, one branch
    /// rather than three: the first two rarely fail (so the distance off the line is
    /// almost always needed anyway), and each branch on them could be mispredicted.
    #[inline]
    fn passes_near(&self, center: Vec3, reach: f32, t_max: f32) -> bool {
        let reach = reach + self.radius;
        let to_center = center - self.origin;
        let along = to_center.dot(self.dir);
        !((along < -reach)
            | (along - reach > t_max)
            | ((to_center - self.dir * along).length_squared() > reach * reach))
    }
}

/// `hitbox.placed_center(bone)` on SIMD lanes, bit for bit: glam rotates a `Vec3` as a
/// `Vec3A` (`Quat::mul_vec3` is `mul_vec3a` of the converted vector), and adding the
/// translation is lane-wise either way.
#[inline(always)]
fn placed_center_a(hitbox: &Hitbox, bone: &BoneTransform) -> Vec3A {
    let center = Vec3A::from(bone.translation)
        + bone
            .rotation
            .mul_vec3a(Vec3A::from(bone.scale * hitbox.offset.translation));
    debug_assert_eq!(
        Vec3::from(center).to_array().map(f32::to_bits),
        hitbox.placed_center(bone).to_array().map(f32::to_bits)
    );
    center
}

/// `hitbox.placed(bone)` for an unscaled bone whose hitbox centre is `center`
/// ([`placed_center_a`]), bit for bit, without rotating the offset again.
#[inline(always)]
fn placed_unscaled(hitbox: &Hitbox, bone: &BoneTransform, center: Vec3A) -> PlacedShape {
    debug_assert!(bone.scale == Vec3::ONE);
    let placed = PlacedShape::new(
        crate::math::Pose::new(center.into(), bone.rotation * hitbox.offset.rotation),
        hitbox.shape,
    );
    debug_assert_eq!(placed, hitbox.placed(bone));
    placed
}
