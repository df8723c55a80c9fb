//! Rewind as it is commonly done with a physics engine: keep every hitbox as a rapier3d
//! collider, keep a ring of their past poses, and for each shot move every collider to
//! its past pose, update the broad phase, cast the ray, move them all back and update
//! again.

use rapier3d::math::Pose;
use rapier3d::prelude::{
    BroadPhaseBvh, BroadPhasePairEvent, ColliderBuilder, ColliderHandle, ColliderSet,
    IntegrationParameters, NarrowPhase, QueryFilter, Ray, RigidBodySet,
};

use crate::parry_world::{Part, pose_of};
use lagcomp_fixtures::Scene;

/// A rapier3d world holding one standalone collider per hitbox, plus the per-tick hitbox
/// poses a server would keep to rewind it.
pub struct RapierRewind {
    params: IntegrationParameters,
    bodies: RigidBodySet,
    colliders: ColliderSet,
    broad_phase: BroadPhaseBvh,
    narrow_phase: NarrowPhase,
    handles: Vec<ColliderHandle>,
    /// Frame times, oldest first.
    times: Vec<f64>,
    /// Per frame (same order as `times`), every collider's pose.
    poses: Vec<Vec<Pose>>,
    events: Vec<BroadPhasePairEvent>,
    scratch: Vec<Pose>,
}

impl std::fmt::Debug for RapierRewind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RapierRewind")
            .field("colliders", &self.handles.len())
            .field("frames", &self.times.len())
            .finish_non_exhaustive()
    }
}

impl RapierRewind {
    /// Builds the world from the scene: colliders at the newest frame's poses, and the
    /// hitbox poses of every frame the scene's history still holds.
    ///
    /// # Panics
    /// If the scene has no frames.
    #[must_use]
    pub fn new(scene: &Scene) -> Self {
        let capacity = scene.history.capacity();
        let ticks = &scene.ticks[scene.ticks.len().saturating_sub(capacity)..];
        let mut bones = Vec::new();
        let mut times = Vec::with_capacity(ticks.len());
        let mut poses = Vec::with_capacity(ticks.len());
        let mut present = Vec::new();
        for &tick in ticks {
            scene.frame_bones(tick, &mut bones);
            let placed = scene.placed_hitboxes(&bones);
            times.push(scene.time_of(tick));
            poses.push(placed.iter().map(pose_of).collect::<Vec<_>>());
            present = placed;
        }
        let mut colliders = ColliderSet::new();
        let handles: Vec<ColliderHandle> = present
            .iter()
            .map(|p| {
                let shape = Part::from_shape(&p.shape).shared();
                colliders.insert(ColliderBuilder::new(shape).position(pose_of(p)).build())
            })
            .collect();
        let params = IntegrationParameters::default();
        let bodies = RigidBodySet::new();
        let mut broad_phase = BroadPhaseBvh::new();
        let mut events = Vec::new();
        let modified = colliders.take_modified();
        broad_phase.update(&params, &colliders, &bodies, &modified, &[], &mut events);
        events.clear();
        Self {
            params,
            bodies,
            colliders,
            broad_phase,
            narrow_phase: NarrowPhase::new(),
            handles,
            times,
            poses,
            events,
            scratch: Vec::new(),
        }
    }

    /// Number of colliders.
    #[must_use]
    pub fn collider_count(&self) -> usize {
        self.handles.len()
    }

    /// The whole rewound shot: move every collider to its pose at `time` (interpolated
    /// between the two bracketing frames), update the broad phase with
    /// `BroadPhaseBvh::update`, cast the ray (solid, closest hit), move every collider back
    /// to the present and update again. Returns the collider index hit and the distance.
    ///
    /// # Panics
    /// If `time` is outside the recorded frames.
    pub fn rewind_cast(&mut self, ray: &Ray, max: f32, time: f64) -> Option<(usize, f32)> {
        self.rewind_cast_with(ray, max, time, Self::update_broad_phase)
    }

    /// As [`RapierRewind::rewind_cast`], but refreshing the broad phase with one
    /// `BroadPhaseBvh::set_aabb` per collider instead of `update` (no pair search): the
    /// cheapest public way to make rapier's query BVH follow the moved colliders.
    ///
    /// # Panics
    /// As [`RapierRewind::rewind_cast`].
    pub fn rewind_cast_set_aabb(&mut self, ray: &Ray, max: f32, time: f64) -> Option<(usize, f32)> {
        self.rewind_cast_with(ray, max, time, Self::set_aabbs)
    }

    fn rewind_cast_with(
        &mut self,
        ray: &Ray,
        max: f32,
        time: f64,
        refresh: fn(&mut Self),
    ) -> Option<(usize, f32)> {
        let newer = self.times.partition_point(|&t| t < time);
        assert!(
            newer < self.times.len(),
            "time {time} is after the newest frame"
        );
        self.scratch.clear();
        if self.times[newer] == time || newer == 0 {
            self.scratch.extend_from_slice(&self.poses[newer]);
        } else {
            let older = newer - 1;
            let (t0, t1) = (self.times[older], self.times[newer]);
            let alpha = ((time - t0) / (t1 - t0)) as f32;
            self.scratch.extend(
                self.poses[older]
                    .iter()
                    .zip(&self.poses[newer])
                    .map(|(a, b)| {
                        Pose::from_parts(
                            a.translation.lerp(b.translation, alpha),
                            a.rotation.slerp(b.rotation, alpha),
                        )
                    }),
            );
        }
        for (&handle, pose) in self.handles.iter().zip(&self.scratch) {
            if let Some(c) = self.colliders.get_mut(handle) {
                c.set_position(*pose);
            }
        }
        refresh(self);
        let hit = self
            .broad_phase
            .as_query_pipeline(
                self.narrow_phase.query_dispatcher(),
                &self.bodies,
                &self.colliders,
                QueryFilter::default(),
            )
            .cast_ray(ray, max, true)
            .map(|(handle, toi)| (handle.into_raw_parts().0 as usize, toi));
        let present = self.poses.last().expect("frames");
        for (&handle, pose) in self.handles.iter().zip(present) {
            if let Some(c) = self.colliders.get_mut(handle) {
                c.set_position(*pose);
            }
        }
        refresh(self);
        hit
    }

    fn set_aabbs(&mut self) {
        for &handle in &self.handles {
            let aabb = self.colliders[handle].compute_aabb();
            self.broad_phase.set_aabb(&self.params, handle, aabb);
        }
    }

    fn update_broad_phase(&mut self) {
        self.broad_phase.update(
            &self.params,
            &self.colliders,
            &self.bodies,
            &self.handles,
            &[],
            &mut self.events,
        );
        self.events.clear();
    }
}
