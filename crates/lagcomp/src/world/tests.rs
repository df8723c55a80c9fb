//! The level's geometry: meshes and heightfields against parry3d's own casts, bulk loads,
//! bad pieces, lifetimes, and a server's own world blocking rewound traces.

use std::sync::Arc;

use glam::{Quat, Vec3};
use parry3d::math::Pose as ParryPose;
use parry3d::query::{Ray as ParryRay, RayCast, ShapeCastOptions, cast_shapes};
use parry3d::shape::{Ball, HeightField, TriMesh};
use parry3d::utils::Array2;
use proptest::prelude::*;

use super::{LevelError, LevelPiece, PieceError, StaticError, StaticId, StaticWorld, WorldHit};
use crate::history::{EntityId, EntityState, History, HistoryConfig};
use crate::math::{BoneTransform, Pose};
use crate::query::{Ray, StaticHit};
use crate::rig::{Hitbox, Rig, Shape, Zone};
use crate::time::{RewindTarget, Tick};

const RATE: f64 = 64.0;

/// `actual` within `relative` of `expected` (relative to `expected`, at least 1 m).
#[track_caller]
fn assert_close(actual: f32, expected: f32, relative: f32) {
    let allowed = relative * expected.abs().max(1.0);
    let difference = (actual - expected).abs();
    assert!(
        difference <= allowed,
        "{actual} vs {expected}: off by {difference}, allowed {allowed}"
    );
}

/// A history with one head-sized target standing at `at` for ticks 0..40.
fn history_with_target(at: Vec3) -> (History, EntityId) {
    let mut history = History::new(HistoryConfig {
        tick_rate: RATE,
        max_rewind: 0.5,
    })
    .unwrap();
    let rig = Rig::rigid(vec![Hitbox::new(
        0,
        "head",
        Zone::Head,
        0,
        Shape::sphere(0.15),
    )])
    .unwrap();
    let target = history.spawn(Arc::new(rig));
    for tick in 0..40_u32 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / RATE)
            .unwrap();
        frame
            .record_rigid(
                target,
                BoneTransform::from_translation(at),
                EntityState::default(),
            )
            .unwrap();
    }
    (history, target)
}

/// A square wall of two triangles, `half` metres either way from its centre, facing z.
fn quad(center: Vec3, half: f32, layers: u32) -> LevelPiece {
    let corner = |x: f32, y: f32| center + Vec3::new(x * half, y * half, 0.0);
    LevelPiece::Mesh {
        vertices: vec![
            corner(-1.0, -1.0),
            corner(1.0, -1.0),
            corner(1.0, 1.0),
            corner(-1.0, 1.0),
        ],
        triangles: vec![[0, 1, 2], [0, 2, 3]],
        layers,
    }
}

/// The time of tick `tick`.
fn at(tick: u32) -> RewindTarget {
    RewindTarget::Time(f64::from(tick) / RATE)
}

#[test]
fn a_mesh_wall_blocks_a_rewound_ray_and_a_target_in_front_of_it_is_hit() {
    let (mut history, target) = history_with_target(Vec3::new(0.0, 0.0, -20.0));
    let ids = history
        .load_level([quad(Vec3::new(0.0, 0.0, -10.0), 5.0, 1)])
        .unwrap();
    assert_eq!(ids, StaticId(0)..StaticId(1));
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z, 100.0).unwrap();
    let trace = history.query(at(30)).ray(&ray).unwrap();
    assert!(trace.hit.is_none(), "the target stands behind the wall");
    let wall = trace.blocker.expect("the mesh blocks");
    assert_eq!(wall.id, StaticId(0));
    assert_close(wall.distance, 10.0, 1e-6);
    assert_eq!(wall.normal, Vec3::Z, "the face the shot met");
    assert_close(wall.point.z, -10.0, 1e-6);
    // A sweep stops a radius early.
    let swept = history.query(at(30)).sweep(&ray, 0.25).unwrap();
    assert_close(swept.blocker.unwrap().distance, 9.75, 1e-5);
    // Another layer passes through, and the target is hit.
    let other = history.query(at(30)).layers(2).ray(&ray).unwrap();
    assert!(other.blocker.is_none());
    let (mut open, _) = history_with_target(Vec3::new(0.0, 0.0, -5.0));
    open.load_level([quad(Vec3::new(0.0, 0.0, -10.0), 5.0, 1)])
        .unwrap();
    let trace = open.query(at(30)).ray(&ray).unwrap();
    assert_eq!(trace.hit.expect("in front of the wall").entity, target);
    assert!(
        trace.blocker.is_some(),
        "the wall behind it is still reported"
    );
}

/// A server's own world: one infinite floor-like plane facing +z at `z`, on layer 1.
struct Plane {
    z: f32,
    id: u64,
}

impl StaticWorld for Plane {
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit> {
        self.cast_sphere(ray, 0.0, layers, time)
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, layers: u32, _time: f64) -> Option<WorldHit> {
        if layers & 1 == 0 || ray.dir().z >= 0.0 {
            return None;
        }
        let distance = (ray.origin().z - radius - self.z) / -ray.dir().z;
        (0.0..=ray.max_distance())
            .contains(&distance)
            .then_some(WorldHit {
                id: self.id,
                distance,
                normal: Vec3::Z,
            })
    }
}

#[test]
fn a_server_world_blocks_rewound_traces_under_its_own_ids() {
    let (history, target) = history_with_target(Vec3::new(0.0, 0.0, -20.0));
    let world = Plane {
        z: -12.0,
        id: 0xDEAD_BEEF_0000_0001,
    };
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z, 100.0).unwrap();
    let open = history.query(at(30)).ray(&ray).unwrap();
    assert_eq!(open.hit.unwrap().entity, target, "without the world: a hit");
    let trace = history.query(at(30)).world(&world).ray(&ray).unwrap();
    assert!(trace.hit.is_none());
    let wall = trace.blocker.unwrap();
    assert_eq!(wall.id, StaticId(0xDEAD_BEEF_0000_0001));
    assert_close(wall.distance, 12.0, 1e-6);
    let swept = history
        .query(at(30))
        .world(&world)
        .sweep(&ray, 0.5)
        .unwrap();
    assert_close(swept.blocker.unwrap().distance, 11.5, 1e-6);
    assert_close(swept.blocker.unwrap().point.z, -12.0, 1e-6);
    // The layer mask reaches the world.
    let masked = history
        .query(at(30))
        .world(&world)
        .layers(2)
        .ray(&ray)
        .unwrap();
    assert!(masked.blocker.is_none(), "the plane is on layer 1 only");
    // Every closest-hit and all-hits trace consults it.
    let mut all = Vec::new();
    let through = history
        .query(at(30))
        .world(&world)
        .ray_all(&ray, &mut all)
        .unwrap();
    assert!(all.is_empty() && through.blocker.is_some());
    history
        .query(at(30))
        .world(&world)
        .sweep_all(&ray, 0.1, &mut all)
        .unwrap();
    assert!(all.is_empty());
}

#[test]
fn the_nearer_of_the_history_level_and_the_server_world_blocks() {
    // Rows: the level's mesh wall, the server's plane, which blocker is reported.
    let cases = [
        (-8.0, -12.0, StaticId(0)),  // the level's wall is nearer
        (-12.0, -8.0, StaticId(77)), // the server's is nearer
        (-10.0, -10.0, StaticId(0)), // a tie goes to the level
    ];
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z, 100.0).unwrap();
    for (level_z, world_z, expected) in cases {
        let (mut history, _) = history_with_target(Vec3::new(0.0, 0.0, -20.0));
        history
            .load_level([quad(Vec3::new(0.0, 0.0, level_z), 5.0, 1)])
            .unwrap();
        let world = Plane { z: world_z, id: 77 };
        let trace = history.query(at(30)).world(&world).ray(&ray).unwrap();
        assert_eq!(
            trace.blocker.unwrap().id,
            expected,
            "{level_z} vs {world_z}"
        );
        // The pair of worlds answers the same.
        let pair = (history.level(), &world);
        let hit = pair.cast_ray(&ray, u32::MAX, 0.0).unwrap();
        assert_eq!(StaticId(hit.id), expected);
    }
}

#[test]
fn a_server_world_answering_nonsense_neither_panics_nor_blocks_out_of_reach() {
    struct Broken(f32);
    impl StaticWorld for Broken {
        fn cast_ray(&self, _: &Ray, _: u32, _: f64) -> Option<WorldHit> {
            Some(WorldHit {
                id: 1,
                distance: self.0,
                normal: Vec3::NAN,
            })
        }
        fn cast_sphere(&self, ray: &Ray, _: f32, layers: u32, time: f64) -> Option<WorldHit> {
            self.cast_ray(ray, layers, time)
        }
    }
    let (history, _) = history_with_target(Vec3::new(0.0, 0.0, -20.0));
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z, 100.0).unwrap();
    for distance in [f32::NAN, 1e9, f32::INFINITY] {
        let trace = history
            .query(at(30))
            .world(&Broken(distance))
            .ray(&ray)
            .unwrap();
        assert!(trace.blocker.is_none(), "{distance}");
        assert!(trace.hit.is_some());
    }
    let trace = history
        .query(at(30))
        .world(&Broken(-3.0))
        .ray(&ray)
        .unwrap();
    let wall = trace.blocker.unwrap();
    assert_eq!(wall.distance, 0.0);
    assert_eq!(
        wall.normal,
        Vec3::Z,
        "a bad normal faces back along the trace"
    );
}

#[test]
fn ten_thousand_pieces_load_in_one_batch_with_consecutive_ids_and_each_blocks() {
    let (mut history, _) = history_with_target(Vec3::new(0.0, 0.0, 50.0));
    history
        .add_static(
            Shape::sphere(0.5),
            Pose::from_translation(Vec3::Y * 500.0),
            1,
        )
        .unwrap();
    // A 100 x 100 grid of small mesh walls at z = -10, 1 m apart, and boxes at z = -30.
    let pieces = (0..10_000).map(|i| {
        let (x, y) = ((i % 100) as f32, (i / 100) as f32);
        if i % 2 == 0 {
            quad(Vec3::new(x, y, -10.0), 0.25, 1)
        } else {
            LevelPiece::Primitive {
                shape: Shape::cuboid(Vec3::splat(0.25)),
                pose: Pose::from_translation(Vec3::new(x, y, -30.0)),
                layers: 1,
            }
        }
    });
    let ids = history.load_level(pieces).unwrap();
    assert_eq!(ids, StaticId(1)..StaticId(10_001));
    assert_eq!(history.level().len(), 10_001);
    assert_eq!(
        history.statics().len(),
        1 + 5_000,
        "primitives in the order added"
    );
    for i in [0_u64, 1, 2, 4_321, 9_998, 9_999] {
        let (x, y) = ((i % 100) as f32, (i / 100) as f32);
        let ray = Ray::new(Vec3::new(x, y, 0.0), Vec3::NEG_Z, 100.0).unwrap();
        let wall = history.query(at(30)).ray(&ray).unwrap().blocker.unwrap();
        assert_eq!(wall.id, StaticId(1 + i), "piece {i}");
        let z = if i % 2 == 0 { 10.0 } else { 29.75 };
        assert_close(wall.distance, z, 1e-5);
    }
}

#[test]
fn bad_pieces_are_refused_by_position_and_nothing_of_the_batch_is_loaded() {
    let good = || quad(Vec3::new(0.0, 0.0, -10.0), 5.0, 1);
    let triangle = |vertices: Vec<Vec3>, triangles: Vec<[u32; 3]>| LevelPiece::Mesh {
        vertices,
        triangles,
        layers: 1,
    };
    let unit = vec![Vec3::ZERO, Vec3::X, Vec3::Y];
    let field = |heights: Vec<f32>, rows, columns, size| LevelPiece::HeightField {
        heights,
        rows,
        columns,
        size,
        pose: Pose::IDENTITY,
        layers: 1,
    };
    let cases: Vec<(LevelPiece, PieceError)> = vec![
        // No triangles.
        (triangle(unit.clone(), vec![]), PieceError::Empty),
        // A NaN vertex.
        (
            triangle(
                vec![Vec3::ZERO, Vec3::X, Vec3::new(0.0, f32::NAN, 0.0)],
                vec![[0, 1, 2]],
            ),
            PieceError::NonFiniteVertex(2),
        ),
        // A vertex a light year away.
        (
            triangle(vec![Vec3::ZERO, Vec3::X * 1e16, Vec3::Y], vec![[0, 1, 2]]),
            PieceError::VertexOutOfRange(1),
        ),
        // An index past the last vertex.
        (
            triangle(unit.clone(), vec![[0, 1, 2], [0, 1, 3]]),
            PieceError::IndexOutOfRange {
                triangle: 1,
                index: 3,
            },
        ),
        // A repeated vertex.
        (
            triangle(unit.clone(), vec![[0, 1, 2], [1, 1, 2]]),
            PieceError::DegenerateTriangle(1),
        ),
        // Three vertices in a line.
        (
            triangle(vec![Vec3::ZERO, Vec3::X, Vec3::X * 2.0], vec![[0, 1, 2]]),
            PieceError::DegenerateTriangle(0),
        ),
        // More triangles than a piece may hold.
        (
            triangle(unit.clone(), vec![[0, 1, 2]; LevelPiece::MAX_TRIANGLES + 1]),
            PieceError::TooLarge(LevelPiece::MAX_TRIANGLES + 1),
        ),
        // A primitive with a bad pose.
        (
            LevelPiece::Primitive {
                shape: Shape::sphere(1.0),
                pose: Pose::new(Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 2.0)),
                layers: 1,
            },
            PieceError::Static(StaticError::Pose(
                Pose::new(Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 2.0))
                    .validate()
                    .unwrap_err(),
            )),
        ),
        // Heights that do not fill the grid.
        (
            field(vec![0.0; 5], 2, 3, Vec3::ONE),
            PieceError::GridSize {
                rows: 2,
                columns: 3,
                heights: 5,
            },
        ),
        // One row is no surface.
        (
            field(vec![0.0; 3], 1, 3, Vec3::ONE),
            PieceError::GridSize {
                rows: 1,
                columns: 3,
                heights: 3,
            },
        ),
        // An infinite height.
        (
            field(vec![0.0, 1.0, f32::INFINITY, 0.0], 2, 2, Vec3::ONE),
            PieceError::NonFiniteVertex(2),
        ),
        // A zero-sized field.
        (
            field(vec![0.0; 4], 2, 2, Vec3::new(1.0, 1.0, 0.0)),
            PieceError::Size(Vec3::new(1.0, 1.0, 0.0)),
        ),
    ];
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z, 100.0).unwrap();
    for (bad, error) in cases {
        let (mut history, _) = history_with_target(Vec3::new(0.0, 0.0, -20.0));
        let before = history.query(at(30)).ray(&ray).unwrap();
        let refused = history.load_level([good(), good(), bad]).unwrap_err();
        assert_eq!(refused, LevelError { piece: 2, error });
        assert!(history.level().is_empty(), "{refused}: half loaded");
        assert_eq!(history.query(at(30)).ray(&ray).unwrap(), before);
        // The same history then loads a good batch with ids from 0.
        assert_eq!(history.load_level([good()]).unwrap().start, StaticId(0));
    }
}

/// A history whose wall (a mesh at z = -10) is removed in the frame of tick 20, and whose
/// barricade (a box at z = -5, layer 2) appears in the frame of tick 25.
fn changing_level() -> History {
    let (mut history, _) = history_with_target(Vec3::new(0.0, 0.0, -20.0));
    let wall = history
        .load_level([quad(Vec3::new(0.0, 0.0, -10.0), 5.0, 1)])
        .unwrap()
        .start;
    history.remove_static(wall, 20.0 / RATE).unwrap();
    let barricade = LevelPiece::Primitive {
        shape: Shape::cuboid(Vec3::new(2.0, 2.0, 0.1)),
        pose: Pose::from_translation(Vec3::new(0.0, 0.0, -5.0)),
        layers: 2,
    };
    history.add_pieces_at([barricade], 25.0 / RATE).unwrap();
    history
}

#[test]
fn a_wall_blocks_shots_rendered_while_it_stood_and_not_after() {
    let history = changing_level();
    let ray = Ray::new(Vec3::ZERO, Vec3::NEG_Z, 100.0).unwrap();
    // Rows: the moment the shooter saw (in ticks; fractions between frames), the layers
    // traced, and what stops the shot.
    let cases = [
        (10.0, 1, Some(StaticId(0))),   // long before the wall fell: the wall
        (19.0, 1, Some(StaticId(0))),   // the frame before it fell: the wall
        (19.999, 1, Some(StaticId(0))), // between the frames, before it fell: the wall
        (20.0, 1, None),                // the frame it fell in: through, the target is hit
        (24.0, 3, None),                // before the barricade stood: nothing
        (25.0, 3, Some(StaticId(1))),   // from the barricade's frame: the barricade
        (39.0, 3, Some(StaticId(1))),   // the present: the barricade
        (39.0, 1, None),                // the barricade is on another layer
    ];
    for (tick, layers, expected) in cases {
        let target = RewindTarget::Time(tick / RATE);
        let trace = history.query(target).layers(layers).ray(&ray).unwrap();
        assert_eq!(trace.blocker.map(|w| w.id), expected, "at tick {tick}");
        assert_eq!(trace.hit.is_some(), expected.is_none(), "at tick {tick}");
        // The level answers the same as a world of its own.
        let world = history.level().cast_ray(&ray, layers, tick / RATE);
        assert_eq!(world.map(|w| StaticId(w.id)), expected, "at tick {tick}");
    }
    // A tick-pair target looks at the blend of the two frames' times.
    let between = history
        .query(RewindTarget::between(Tick(19), Tick(20), 0.5))
        .ray(&ray)
        .unwrap();
    assert_eq!(between.blocker.map(|w| w.id), Some(StaticId(0)));
    assert_eq!(history.level().exists_at(StaticId(0), 0.0), Some(true));
    assert_eq!(history.level().exists_at(StaticId(0), 1.0), Some(false));
    assert_eq!(history.level().exists_at(StaticId(9), 1.0), None);
}

#[test]
fn bad_lifetime_changes_are_refused_and_change_nothing() {
    let mut history = changing_level();
    let cases = [
        (StaticId(5), 1.0, StaticError::UnknownPiece(StaticId(5))),
        (StaticId(0), 1.0, StaticError::AlreadyRemoved(StaticId(0))),
        (StaticId(1), f64::NAN, StaticError::Time(f64::NAN)),
        // Before the barricade was built.
        (StaticId(1), 0.1, StaticError::Time(0.1)),
    ];
    for (id, time, error) in cases {
        let refused = history.remove_static(id, time).unwrap_err();
        match (refused, error) {
            (StaticError::Time(a), StaticError::Time(b)) => {
                assert!(a.to_bits() == b.to_bits());
            }
            (refused, error) => assert_eq!(refused, error),
        }
    }
    assert_eq!(history.level().exists_at(StaticId(1), 1.0), Some(true));
    let refused = history
        .add_pieces_at([quad(Vec3::ZERO, 1.0, 1)], f64::INFINITY)
        .unwrap_err();
    assert_eq!(refused.piece, 0);
    assert_eq!(history.level().len(), 2);
}

#[test]
fn the_same_level_and_shots_give_the_same_answers_bit_for_bit() {
    let build = || {
        let mut history = changing_level();
        history
            .load_level((0..50).map(|i| quad(Vec3::new(i as f32 * 0.3, 0.0, -7.0), 0.2, 1)))
            .unwrap();
        history
    };
    let (a, b) = (build(), build());
    for i in 0..200 {
        let angle = i as f32 * 0.01;
        let ray = Ray::new(Vec3::ZERO, Vec3::new(angle.sin(), 0.01, -angle.cos()), 50.0).unwrap();
        for radius in [0.0, 0.1] {
            let ta = a.query(at(30)).sweep(&ray, radius).unwrap();
            let tb = b.query(at(30)).sweep(&ray, radius).unwrap();
            assert_eq!(format!("{ta:?}"), format!("{tb:?}"));
        }
    }
}

/// A random triangle soup around the origin: `triangles` triangles within 10 m.
fn soup(seed: u64, triangles: usize) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let mut vertices = Vec::new();
    let mut indices = Vec::new();
    while indices.len() < triangles {
        let center = Vec3::new(
            rng.random_range(-10.0..10.0),
            rng.random_range(-10.0..10.0),
            rng.random_range(-10.0..10.0),
        );
        let mut corner = || {
            center
                + Vec3::new(
                    rng.random_range(-2.0..2.0),
                    rng.random_range(-2.0..2.0),
                    rng.random_range(-2.0..2.0),
                )
        };
        let tri = [corner(), corner(), corner()];
        if (tri[1] - tri[0]).cross(tri[2] - tri[0]).length() < 0.1 {
            continue;
        }
        let first = vertices.len() as u32;
        vertices.extend(tri);
        indices.push([first, first + 1, first + 2]);
    }
    (vertices, indices)
}

/// A ray from a point on a 30 m sphere towards a point near the origin.
fn ray_between(from: [f32; 3], to: [f32; 3]) -> Option<Ray> {
    let start = Vec3::from(from).normalize_or(Vec3::X) * 30.0;
    Ray::between(start, Vec3::from(to)).ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn mesh_casts_agree_with_parry(
        seed in any::<u64>(),
        rays in proptest::collection::vec(
            (any::<[f32; 3]>().prop_map(|v| v.map(|c| if c.is_finite() { c % 1.0 } else { 1.0 })),
             prop::array::uniform3(-8.0_f32..8.0)),
            16,
        ),
        radius in prop_oneof![Just(0.0_f32), 0.05_f32..1.0],
    ) {
        let (vertices, triangles) = soup(seed, 40);
        let (mut history, _) = history_with_target(Vec3::new(0.0, 100.0, 0.0));
        history
            .load_level([LevelPiece::Mesh {
                vertices: vertices.clone(),
                triangles: triangles.clone(),
                layers: 1,
            }])
            .unwrap();
        let mesh = TriMesh::new(vertices, triangles).unwrap();
        for (from, to) in rays {
            let Some(ray) = ray_between(from, to) else { continue };
            let ours = history.query(at(30)).sweep(&ray, radius).unwrap().blocker;
            let theirs = parry_cast(&mesh, &ParryPose::IDENTITY, &ray, radius);
            match (ours, theirs) {
                (Some(ours), Some(theirs)) => assert_close(ours.distance, theirs, 1e-4),
                (None, None) => {}
                (ours, theirs) => panic!("{ray:?} r {radius}: ours {ours:?}, parry {theirs:?}"),
            }
            if radius == 0.0 {
                assert_ray_matches_parry_normal(&mesh, &ray, ours);
            }
        }
    }

    #[test]
    fn heightfield_casts_agree_with_parry(
        seed in any::<u64>(),
        yaw in -3.0_f32..3.0,
        rays in proptest::collection::vec(
            (any::<[f32; 3]>().prop_map(|v| v.map(|c| if c.is_finite() { c % 1.0 } else { 1.0 })),
             prop::array::uniform3(-8.0_f32..8.0)),
            16,
        ),
        radius in prop_oneof![Just(0.0_f32), 0.05_f32..1.0],
    ) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let (rows, columns) = (9, 7);
        let heights: Vec<f32> = (0..rows * columns).map(|_| rng.random_range(-1.0..1.0)).collect();
        let size = Vec3::new(16.0, 3.0, 12.0);
        let pose = Pose::new(Vec3::new(0.5, -1.0, 0.25), Quat::from_rotation_y(yaw));
        let (mut history, _) = history_with_target(Vec3::new(0.0, 100.0, 0.0));
        history
            .load_level([LevelPiece::HeightField {
                heights: heights.clone(),
                rows,
                columns,
                size,
                pose,
                layers: 1,
            }])
            .unwrap();
        let field = HeightField::new(
            Array2::from_fn(rows, columns, |r, c| heights[r * columns + c]),
            size,
        );
        let parry_pose = ParryPose::from_parts(pose.translation, pose.rotation);
        for (from, to) in rays {
            let Some(ray) = ray_between(from, to) else { continue };
            let ours = history.query(at(30)).sweep(&ray, radius).unwrap().blocker;
            let theirs = parry_cast(&field, &parry_pose, &ray, radius);
            match (ours, theirs) {
                (Some(ours), Some(theirs)) => assert_close(ours.distance, theirs, 1e-4),
                (None, None) => {}
                (ours, theirs) => panic!("{ray:?} r {radius}: ours {ours:?}, parry {theirs:?}"),
            }
        }
    }
}

/// A ray's wall is, to the bit, where parry's mesh cast with normals puts it, with its
/// normal renormalised and turned to face the trace as every wall's is: a ray searches
/// the mesh by distance alone and takes the normal of the triangle it hit.
fn assert_ray_matches_parry_normal(mesh: &TriMesh, ray: &Ray, ours: Option<StaticHit>) {
    let theirs = mesh.cast_local_ray_and_get_normal(
        &ParryRay::new(ray.origin(), ray.dir()),
        ray.max_distance(),
        true,
    );
    match (ours, theirs) {
        (Some(ours), Some(theirs)) => {
            let normal = theirs.normal.normalize_or(-ray.dir());
            let facing = if normal.dot(ray.dir()) > 0.0 {
                -normal
            } else {
                normal
            };
            assert_eq!(ours.distance, theirs.time_of_impact, "{ray:?}");
            assert_eq!(ours.normal, facing, "{ray:?}");
        }
        (None, None) => {}
        (ours, theirs) => panic!("{ray:?}: ours {ours:?}, parry {theirs:?}"),
    }
}

/// parry3d's own cast of `shape` at `pose`: a ray, or a ball of `radius` moving along it.
fn parry_cast(
    shape: &dyn parry3d::shape::Shape,
    pose: &ParryPose,
    ray: &Ray,
    radius: f32,
) -> Option<f32> {
    if radius == 0.0 {
        let r = ParryRay::new(ray.origin(), ray.dir());
        return shape.cast_ray(pose, &r, ray.max_distance(), true);
    }
    cast_shapes(
        &ParryPose::from_translation(ray.origin()),
        ray.dir(),
        &Ball::new(radius),
        pose,
        Vec3::ZERO,
        shape,
        ShapeCastOptions::with_max_time_of_impact(ray.max_distance()),
    )
    .unwrap()
    .map(|hit| hit.time_of_impact.max(0.0))
}
