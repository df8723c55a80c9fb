//! A rapier3d world as the level geometry that blocks rewound traces (feature `rapier`).
//!
//! A server that already runs rapier passes its query pipeline, and every rewound trace
//! and verdict stops at the colliders it holds: no level geometry is loaded twice.
//!
//! ```
//! use lagcomp::world::rapier::{RapierWorld, piece_of};
//! use lagcomp::{History, HistoryConfig, Ray, RewindTarget, Tick, Vec3};
//! use rapier3d::prelude::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The server's physics world: a wall 10 m down -z.
//! let bodies = RigidBodySet::new();
//! let mut colliders = ColliderSet::new();
//! let wall = colliders.insert(
//!     ColliderBuilder::cuboid(5.0, 5.0, 0.1).translation(Vec3::new(0.0, 0.0, -10.1)),
//! );
//! let mut broad_phase = BroadPhaseBvh::new();
//! let modified = colliders.take_modified();
//! let params = IntegrationParameters::default();
//! broad_phase.update(&params, &colliders, &bodies, &modified, &[], &mut Vec::new());
//! let narrow_phase = NarrowPhase::new();
//! let pipeline = broad_phase.as_query_pipeline(
//!     narrow_phase.query_dispatcher(),
//!     &bodies,
//!     &colliders,
//!     QueryFilter::default(),
//! );
//!
//! let mut history = History::new(HistoryConfig::default())?;
//! history.begin_frame(Tick(0), 0.0)?;
//! let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z, 100.0)?;
//! let world = RapierWorld::new(pipeline);
//! let trace = history.query(RewindTarget::Time(0.0)).world(&world).ray(&ray)?;
//! let blocker = trace.blocker.expect("the wall");
//! assert_eq!(piece_of(blocker.id), Some(wall));
//! assert!((blocker.distance - 10.0).abs() < 1e-4);
//! # Ok(())
//! # }
//! ```

use glam::Vec3;
use rapier3d::geometry::{Group, InteractionGroups, InteractionTestMode};
use rapier3d::math::Pose;
use rapier3d::parry::query::{Ray as RapierRay, ShapeCastOptions};
use rapier3d::parry::shape::Ball;
use rapier3d::pipeline::QueryPipeline;
use rapier3d::prelude::ColliderHandle;

use super::{StaticId, StaticWorld, WorldHit};
use crate::query::Ray;

/// A rapier query pipeline as a [`StaticWorld`].
///
/// - Ids: a collider's handle, index in the low 32 bits and generation in the high ones
///   ([`id_of`], [`piece_of`]). They may coincide with the history's own piece ids; give
///   a server that uses both its level geometry in one of them only.
/// - Layers: a collider blocks a trace when its collision groups' memberships share a
///   bit with the trace's layer mask (and its filter is not empty); the pipeline's own
///   filter (sensors, excluded bodies, a predicate) applies as well.
/// - Time: a rapier world is the present. A collider removed from it stops blocking at
///   once, even for shots rendered before; for geometry that changes, keep those pieces
///   in the history ([`crate::History::remove_static`]), whose pieces have lifetimes.
#[derive(Clone, Copy)]
pub struct RapierWorld<'a> {
    pipeline: QueryPipeline<'a>,
}

impl std::fmt::Debug for RapierWorld<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RapierWorld")
            .field("colliders", &self.pipeline.colliders.len())
            .finish_non_exhaustive()
    }
}

impl<'a> RapierWorld<'a> {
    /// Traces against `pipeline` (see [`rapier3d::geometry::BroadPhaseBvh::as_query_pipeline`]).
    #[must_use]
    pub fn new(pipeline: QueryPipeline<'a>) -> Self {
        Self { pipeline }
    }

    /// The pipeline with its filter narrowed to colliders on one of `layers`.
    fn on_layers(&self, layers: u32) -> QueryPipeline<'a> {
        let mut pipeline = self.pipeline;
        pipeline.filter.groups = Some(InteractionGroups::new(
            Group::ALL,
            Group::from_bits_retain(layers),
            InteractionTestMode::And,
        ));
        pipeline
    }
}

/// The [`StaticId`] a rapier world reports for `collider`.
#[must_use]
pub fn id_of(collider: ColliderHandle) -> StaticId {
    let (index, generation) = collider.into_raw_parts();
    StaticId((u64::from(generation) << 32) | u64::from(index))
}

/// The collider a [`StaticId`] from a rapier world names (`None` if it cannot be one).
#[must_use]
pub fn piece_of(id: StaticId) -> Option<ColliderHandle> {
    let index = u32::try_from(id.0 & u64::from(u32::MAX)).ok()?;
    let generation = u32::try_from(id.0 >> 32).ok()?;
    Some(ColliderHandle::from_raw_parts(index, generation))
}

impl StaticWorld for RapierWorld<'_> {
    fn cast_ray(&self, ray: &Ray, layers: u32, _time: f64) -> Option<WorldHit> {
        let cast = RapierRay::new(ray.origin(), ray.dir());
        let (handle, hit) =
            self.on_layers(layers)
                .cast_ray_and_get_normal(&cast, ray.max_distance(), true)?;
        Some(WorldHit {
            id: id_of(handle).0,
            distance: hit.time_of_impact,
            normal: facing(hit.normal, ray.dir()),
        })
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, layers: u32, _time: f64) -> Option<WorldHit> {
        let options = ShapeCastOptions {
            compute_impact_geometry_on_penetration: true,
            ..ShapeCastOptions::with_max_time_of_impact(ray.max_distance())
        };
        let (handle, hit) = self.on_layers(layers).cast_shape(
            &Pose::from_translation(ray.origin()),
            ray.dir(),
            &Ball::new(radius),
            options,
        )?;
        // The collider's side of the contact, in world space.
        Some(WorldHit {
            id: id_of(handle).0,
            distance: hit.time_of_impact,
            normal: facing(hit.normal1, ray.dir()),
        })
    }
}

/// A unit normal facing back along the trace (either side of a triangle blocks).
fn facing(normal: Vec3, dir: Vec3) -> Vec3 {
    let normal = normal.normalize_or(-dir);
    if normal.dot(dir) > 0.0 {
        -normal
    } else {
        normal
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec3;
    use rand::{Rng, SeedableRng};
    use rapier3d::prelude::*;

    use super::{RapierWorld, id_of, piece_of};
    use crate::history::{History, HistoryConfig};
    use crate::query::Ray;
    use crate::time::{RewindTarget, Tick};
    use crate::world::StaticId;

    /// A rapier world of a triangle-mesh floor, boxes and balls on layers 1 and 2.
    struct Scene {
        bodies: RigidBodySet,
        colliders: ColliderSet,
        broad_phase: BroadPhaseBvh,
        narrow_phase: NarrowPhase,
    }

    impl Scene {
        fn new(seed: u64) -> Self {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
            let bodies = RigidBodySet::new();
            let mut colliders = ColliderSet::new();
            let floor = vec![
                Vec3::new(-30.0, -2.0, -30.0),
                Vec3::new(30.0, -2.0, -30.0),
                Vec3::new(30.0, -1.0, 30.0),
                Vec3::new(-30.0, -1.0, 30.0),
            ];
            colliders.insert(
                ColliderBuilder::trimesh(floor, vec![[0, 1, 2], [0, 2, 3]])
                    .unwrap()
                    .collision_groups(InteractionGroups::new(
                        Group::GROUP_1,
                        Group::ALL,
                        InteractionTestMode::And,
                    )),
            );
            for i in 0..40 {
                let at = Vec3::new(
                    rng.random_range(-20.0..20.0),
                    rng.random_range(-1.0..8.0),
                    rng.random_range(-20.0..20.0),
                );
                let builder = if i % 2 == 0 {
                    ColliderBuilder::cuboid(
                        rng.random_range(0.2..2.0),
                        rng.random_range(0.2..2.0),
                        rng.random_range(0.2..2.0),
                    )
                } else {
                    ColliderBuilder::ball(rng.random_range(0.2..1.5))
                };
                let group = if i % 3 == 0 {
                    Group::GROUP_2
                } else {
                    Group::GROUP_1
                };
                colliders.insert(
                    builder
                        .translation(at)
                        .collision_groups(InteractionGroups::new(
                            group,
                            Group::ALL,
                            InteractionTestMode::And,
                        )),
                );
            }
            let mut broad_phase = BroadPhaseBvh::new();
            let modified = colliders.take_modified();
            let params = IntegrationParameters::default();
            broad_phase.update(
                &params,
                &colliders,
                &bodies,
                &modified,
                &[],
                &mut Vec::new(),
            );
            Self {
                bodies,
                colliders,
                broad_phase,
                narrow_phase: NarrowPhase::new(),
            }
        }

        fn pipeline(&self, filter: QueryFilter<'static>) -> QueryPipeline<'_> {
            self.broad_phase.as_query_pipeline(
                self.narrow_phase.query_dispatcher(),
                &self.bodies,
                &self.colliders,
                filter,
            )
        }
    }

    #[test]
    fn rewound_traces_stop_where_rapier_casts_stop() {
        let scene = Scene::new(7);
        let mut history = History::new(HistoryConfig::default()).unwrap();
        history.begin_frame(Tick(0), 0.0).unwrap();
        let world = RapierWorld::new(scene.pipeline(QueryFilter::default()));
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        let (mut blocked, mut checked) = (0, 0);
        for _ in 0..500 {
            let from = Vec3::new(
                rng.random_range(-25.0..25.0),
                rng.random_range(0.0..10.0),
                rng.random_range(-25.0..25.0),
            );
            let to = Vec3::new(
                rng.random_range(-25.0..25.0),
                rng.random_range(-3.0..10.0),
                rng.random_range(-25.0..25.0),
            );
            let Ok(ray) = Ray::between(from, to) else {
                continue;
            };
            // Rows: the layer mask traced, and the groups rapier is asked with.
            for (layers, groups) in [
                (u32::MAX, Group::ALL),
                (1, Group::GROUP_1),
                (2, Group::GROUP_2),
            ] {
                let filter = QueryFilter::default().groups(InteractionGroups::new(
                    Group::ALL,
                    groups,
                    InteractionTestMode::And,
                ));
                let theirs_pipeline = scene.pipeline(filter);
                let cast = rapier3d::parry::query::Ray::new(ray.origin(), ray.dir());
                let theirs = theirs_pipeline.cast_ray(&cast, ray.max_distance(), true);
                let ours = history
                    .query(RewindTarget::Time(0.0))
                    .layers(layers)
                    .world(&world)
                    .ray(&ray)
                    .unwrap()
                    .blocker;
                checked += 1;
                match (ours, theirs) {
                    (Some(ours), Some((handle, toi))) => {
                        blocked += 1;
                        assert_eq!(ours.id, id_of(handle));
                        assert_eq!(piece_of(ours.id), Some(handle));
                        assert!((ours.distance - toi).abs() <= 1e-4 * toi.max(1.0));
                    }
                    (None, None) => {}
                    (ours, theirs) => panic!("{ray:?} on {layers}: {ours:?} vs {theirs:?}"),
                }
                // A sweep of a small ball: rapier's own shape cast.
                let ball = rapier3d::parry::shape::Ball::new(0.3);
                let theirs = theirs_pipeline.cast_shape(
                    &rapier3d::math::Pose::from_translation(ray.origin()),
                    ray.dir(),
                    &ball,
                    rapier3d::parry::query::ShapeCastOptions::with_max_time_of_impact(
                        ray.max_distance(),
                    ),
                );
                let ours = history
                    .query(RewindTarget::Time(0.0))
                    .layers(layers)
                    .world(&world)
                    .sweep(&ray, 0.3)
                    .unwrap()
                    .blocker;
                match (ours, theirs) {
                    (Some(ours), Some((handle, hit))) => {
                        assert_eq!(ours.id, id_of(handle));
                        let toi = hit.time_of_impact;
                        assert!((ours.distance - toi).abs() <= 1e-4 * toi.max(1.0));
                    }
                    (None, None) => {}
                    (ours, theirs) => panic!("sweep {ray:?} on {layers}: {ours:?} vs {theirs:?}"),
                }
            }
        }
        assert!(
            blocked > 300 && checked - blocked > 100,
            "{blocked} of {checked}"
        );
        assert_eq!(
            piece_of(StaticId(u64::MAX)).map(|h| h.into_raw_parts()),
            Some((u32::MAX, u32::MAX))
        );
    }
}
