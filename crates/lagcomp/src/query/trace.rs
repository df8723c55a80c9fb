//! Ray and sphere-sweep traces at a rewound time.

use glam::Vec3;

use super::observer::{Broadphase, QueryObserver};
use super::{Hit, Query, QueryError, Ray, StaticHit, SurfacePoint, Trace, check_radius};
use crate::history::{Bracket, EntityId, History, Sample};
use crate::math::BoneTransform;

/// Where a trace's hits go: the closest only, or all of them.
enum Found<'o> {
    Closest(Option<Hit>),
    All(&'o mut Vec<Hit>),
}

impl<O: QueryObserver> Query<'_, '_, O> {
    /// The closest entity the ray hits at the target time, and the first wall.
    ///
    /// # Errors
    /// [`QueryError`] when the target cannot be resolved.
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
    pub fn ray_all(&mut self, ray: &Ray, out: &mut Vec<Hit>) -> Result<Trace, QueryError> {
        self.trace(ray, 0.0, Found::All(out))
    }

    /// The closest entity a sphere of `radius` moving along the ray touches (a thick
    /// trace). Distances are of the sphere's centre; contact points are on the hitbox.
    ///
    /// # Errors
    /// As [`Query::ray`], and [`QueryError::Radius`].
    pub fn sweep(&mut self, ray: &Ray, radius: f32) -> Result<Trace, QueryError> {
        check_radius(radius)?;
        self.trace(ray, radius, Found::Closest(None))
    }

    /// Every hitbox a sweep touches before the first wall, sorted, into `out`.
    ///
    /// # Errors
    /// As [`Query::sweep`].
    pub fn sweep_all(
        &mut self,
        ray: &Ray,
        radius: f32,
        out: &mut Vec<Hit>,
    ) -> Result<Trace, QueryError> {
        check_radius(radius)?;
        self.trace(ray, radius, Found::All(out))
    }

    fn trace(&mut self, ray: &Ray, radius: f32, mut found: Found<'_>) -> Result<Trace, QueryError> {
        if let Found::All(out) = &mut found {
            out.clear();
        }
        let bracket = self.bracket()?;
        let history = self.history;
        let blocker = first_wall(history, ray, radius, self.layers);
        if let Some(wall) = blocker.as_ref().filter(|_| O::ENABLED) {
            self.observer.blocked(wall);
        }
        let reach = blocker.map_or(ray.max_distance(), |w| w.distance);
        let ctx = TraceContext {
            history,
            bracket: &bracket,
            origin: ray.origin(),
            dir: ray.dir(),
            inv_dir: crate::math::ray_recip(ray.dir()),
            radius,
            layers: self.layers,
            ignore: self.ignore,
        };
        let observer = &mut self.observer;
        let (bvh, _) = history.entity_bvh();
        let mut visit =
            |index: u32, t_max: f32| ctx.entity(index as usize, t_max, &mut found, &mut *observer);
        if O::ENABLED {
            // Debug mode walks every entity so each gets a reported decision.
            let mut t_max = reach;
            for index in 0..history.slot_count() as u32 {
                t_max = visit(index, t_max);
            }
        } else {
            bvh.cast(ctx.origin, ctx.dir, radius, reach, visit);
        }
        let hit = match found {
            Found::Closest(hit) => hit,
            Found::All(out) => {
                // Ties broken by entity and hitbox so the order never depends on the
                // traversal.
                out.sort_unstable_by(|a, b| {
                    a.distance
                        .total_cmp(&b.distance)
                        .then(a.entity.cmp(&b.entity))
                        .then(a.hitbox.cmp(&b.hitbox))
                });
                out.first().copied()
            }
        };
        Ok(Trace {
            hit,
            blocker,
            rewind: (&bracket).into(),
        })
    }
}

/// The first static collider on a matching layer the trace touches within reach.
fn first_wall(history: &History, ray: &Ray, radius: f32, layers: u32) -> Option<StaticHit> {
    let (bvh, statics) = history.statics_bvh();
    let (origin, dir) = (ray.origin(), ray.dir());
    let mut best: Option<StaticHit> = None;
    bvh.cast(origin, dir, radius, ray.max_distance(), |i, t_max| {
        let wall = &statics[i as usize];
        if wall.layers & layers == 0 {
            return t_max;
        }
        let Some(c) = wall
            .placed
            .cast_sphere_line(origin, dir, radius)
            .and_then(|c| c.clip(t_max))
        else {
            return t_max;
        };
        let distance = c.enter.max(0.0);
        let (point, normal) = if c.enter < 0.0 {
            (wall.placed.closest_point(origin), -dir)
        } else {
            (
                origin + dir * distance - c.enter_normal * radius,
                c.enter_normal,
            )
        };
        best = Some(StaticHit {
            id: crate::history::StaticId(i),
            distance,
            point,
            normal,
        });
        distance
    });
    best
}

/// Everything a trace needs per entity, gathered once.
struct TraceContext<'a> {
    history: &'a History,
    bracket: &'a Bracket,
    origin: Vec3,
    dir: Vec3,
    inv_dir: Vec3,
    radius: f32,
    layers: u32,
    ignore: &'a [EntityId],
}

impl TraceContext<'_> {
    /// Tests one entity; returns the new reach (shrunk by a closer hit in closest mode).
    fn entity<O: QueryObserver>(
        &self,
        index: usize,
        mut t_max: f32,
        found: &mut Found<'_>,
        observer: &mut O,
    ) -> f32 {
        let history = self.history;
        let Some((rig, id)) = history.slot_rig(index) else {
            return t_max;
        };
        let mut decide = |decision| {
            if O::ENABLED {
                observer.broadphase(id, decision);
            }
        };
        // The BVH leaf holds several entities; each one's own window box comes first.
        let window = history.entity_bvh().1[index];
        if window
            .inflated(self.radius)
            .ray_interval(self.origin, self.inv_dir, t_max)
            .is_none()
        {
            decide(Broadphase::CulledWindow);
            return t_max;
        }
        if self.ignore.contains(&id) {
            decide(Broadphase::Ignored);
            return t_max;
        }
        let Some(sample) = history.sample(index, self.bracket) else {
            decide(Broadphase::Absent);
            return t_max;
        };
        if !sample.state.alive {
            decide(Broadphase::NotAlive);
            return t_max;
        }
        if sample.state.layers & self.layers == 0 {
            decide(Broadphase::OtherLayer);
            return t_max;
        }
        if sample
            .bounds
            .inflated(self.radius)
            .ray_interval(self.origin, self.inv_dir, t_max)
            .is_none()
        {
            decide(Broadphase::CulledAtTarget);
            return t_max;
        }
        decide(Broadphase::Passed);
        let public_sample = Sample {
            time: self.bracket.time,
            kind: sample.kind,
        };
        if O::ENABLED {
            observer.sample(id, &public_sample);
        }
        let present = if O::ENABLED {
            history.sample_present(index)
        } else {
            None
        };

        let mut cached_bone = usize::MAX;
        let mut bone = BoneTransform::IDENTITY;
        for (i, hitbox) in rig.hitboxes().iter().enumerate() {
            let bone_index = usize::from(hitbox.bone);
            // Cull by the sphere around the bone's origin that holds the hitbox: only a
            // lerp so far, no slerp.
            let (bone_origin, max_scale) = history.bone_origin(index, &sample, bone_index);
            let reach = rig.hitbox_reach(i) * max_scale + self.radius;
            let to_bone = bone_origin - self.origin;
            let along = to_bone.dot(self.dir);
            if along < -reach
                || along - reach > t_max
                || (to_bone - self.dir * along).length_squared() > reach * reach
            {
                continue;
            }
            if bone_index != cached_bone {
                bone = history.bone(index, &sample, bone_index);
                cached_bone = bone_index;
            }
            let placed = hitbox.placed(&bone);
            if O::ENABLED {
                let now = present.map(|p| hitbox.placed(&history.bone(index, &p, bone_index)));
                observer.hitbox(id, hitbox, &placed, now.as_ref());
            }
            let Some(c) = placed
                .cast_sphere_line(self.origin, self.dir, self.radius)
                .and_then(|c| c.clip(t_max))
            else {
                continue;
            };
            let started_inside = c.enter < 0.0;
            let distance = c.enter.max(0.0);
            let entry = if started_inside {
                SurfacePoint {
                    point: placed.closest_point(self.origin),
                    normal: -self.dir,
                }
            } else {
                SurfacePoint {
                    point: self.origin + self.dir * distance - c.enter_normal * self.radius,
                    normal: c.enter_normal,
                }
            };
            let hit = Hit {
                entity: id,
                hitbox: hitbox.id,
                hitbox_index: i as u16,
                zone: hitbox.zone,
                distance,
                entry,
                exit_distance: c.exit,
                exit: SurfacePoint {
                    point: self.origin + self.dir * c.exit - c.exit_normal * self.radius,
                    normal: c.exit_normal,
                },
                penetration: c.exit - distance,
                started_inside,
                sample: public_sample,
                placement: placed,
                bone_scale: bone.scale,
                state: sample.state,
            };
            if O::ENABLED {
                observer.hit(&hit);
            }
            match found {
                Found::Closest(best) => {
                    // Equal distances go to the lower (entity, hitbox), as in `ray_all`'s
                    // order, so the answer never depends on the traversal order.
                    if best.is_none_or(|b| {
                        (distance, id, hitbox.id) < (b.distance, b.entity, b.hitbox)
                    }) {
                        *best = Some(hit);
                        t_max = distance;
                    }
                }
                Found::All(out) => out.push(hit),
            }
        }
        t_max
    }
}
