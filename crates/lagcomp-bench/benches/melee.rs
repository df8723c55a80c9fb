//! Melee: one rewound blade swing and thrust (`Query::sweep_shape`) on the 200 x 20 scene,
//! and the narrow phase's box and capsule casts against a sphere hitbox by the line kernels
//! next to parry3d's GJK cast on the same pairs (why the sphere pairs are hand-written).
//!
//! Per swing: an attacker stands 1.2 m from a scene entity (on the side its shot came from),
//! shoulder 1.4 m up, a 1 m blade (a box) held out 90 degrees to its right, swung 120
//! degrees round to the front about the shoulder, at the shot's rewind time; the thrust is
//! the blade held forward, pushed 1 m. Every input is generated before the timed loops;
//! the loops cycle through the 512 swings. The hit rates are printed to stderr.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use glam::{Quat, Vec3};
use lagcomp::{BoneTransform, PlacedShape, Pose, RewindTarget, Shape, ShapeSweep, Swing};
use lagcomp_fixtures::{SCENES, Scene};
use parry3d::math::Pose as ParryPose;
use parry3d::query::ShapeCastOptions;
use parry3d::query::details::cast_shapes_support_map_support_map;
use parry3d::shape::{Ball, Capsule, Cuboid};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The 1 m blade: half extents, metres.
const BLADE: Vec3 = Vec3::new(0.5, 0.02, 0.01);

/// One melee attack at one rewind time.
struct Attack {
    time: f64,
    swing: ShapeSweep,
    thrust: ShapeSweep,
}

fn attacks(scene: &Scene) -> Vec<Attack> {
    let mut bones = vec![BoneTransform::IDENTITY; scene.bones()];
    scene
        .shots
        .iter()
        .map(|shot| {
            scene.entity_bones(shot.target, shot.time, &mut bones);
            let chest = scene.skeleton.chest(&bones);
            // Facing the target from where its shooter stood, 1.2 m away.
            let mut towards = chest - shot.ray.origin();
            towards.y = 0.0;
            let forward = towards.normalize_or(Vec3::Z);
            let feet = Vec3::new(chest.x, 0.0, chest.z) - forward * 1.2;
            let shoulder = feet + Vec3::Y * 1.4;
            let right = forward.cross(Vec3::Y).normalize();
            let yaw = Quat::from_rotation_arc(Vec3::X, right);
            let held =
                PlacedShape::new(Pose::new(shoulder + right * 0.6, yaw), Shape::cuboid(BLADE));
            // Turning `right` towards `forward`: about their cross product.
            let axis = right.cross(forward).normalize();
            let swing = Swing::new(shoulder, axis, 120f32.to_radians()).expect("swing");
            let pointed = Quat::from_rotation_arc(Vec3::X, forward);
            let thrust_start = PlacedShape::new(
                Pose::new(shoulder + forward * 0.1, pointed),
                Shape::cuboid(BLADE),
            );
            Attack {
                time: shot.time,
                swing: ShapeSweep::arc(held, swing).expect("arc"),
                thrust: ShapeSweep::line(thrust_start, forward, 1.0).expect("line"),
            }
        })
        .collect()
}

/// Random sphere hitboxes and a box and a capsule moving at them: the narrow pairs.
struct Pairs {
    spheres: Vec<PlacedShape>,
    movers: Vec<(PlacedShape, PlacedShape, Vec3)>,
}

fn pairs() -> Pairs {
    let mut rng = Pcg64Mcg::seed_from_u64(0x00ee_1ee5);
    let mut unit = || {
        loop {
            let v = Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            if (0.01..=1.0).contains(&v.length_squared()) {
                return v.normalize();
            }
        }
    };
    let n = 4096;
    let dirs: Vec<Vec3> = (0..n).map(|_| unit()).collect();
    let axes: Vec<Vec3> = (0..n).map(|_| unit()).collect();
    let mut rng = Pcg64Mcg::seed_from_u64(0x00ee_1ee6);
    let mut spheres = Vec::with_capacity(n);
    let mut movers = Vec::with_capacity(n);
    for (dir, axis) in dirs.into_iter().zip(axes) {
        let centre = Vec3::new(
            rng.random_range(-0.3..0.3),
            rng.random_range(-0.3..0.3),
            rng.random_range(-0.3..0.3),
        );
        spheres.push(PlacedShape::new(
            Pose::from_translation(centre),
            Shape::sphere(rng.random_range(0.08..0.2)),
        ));
        let rotation = Quat::from_axis_angle(axis, rng.random_range(0.0..3.0));
        let start = -dir * rng.random_range(0.5..1.5)
            + Vec3::new(
                rng.random_range(-0.3..0.3),
                rng.random_range(-0.3..0.3),
                0.0,
            );
        let blade = PlacedShape::new(
            Pose::new(start, rotation),
            Shape::cuboid(Vec3::new(0.3, 0.02, 0.01)),
        );
        let fist = PlacedShape::new(
            Pose::new(start, rotation),
            Shape::capsule(0.05, 0.04, lagcomp::Axis::X),
        );
        movers.push((blade, fist, dir));
    }
    Pairs { spheres, movers }
}

/// parry3d's GJK cast of `moving` along `dir` up to 2 m against the sphere, in the sphere's
/// frame, with concrete shapes (no dispatch): the alternative to the line kernel.
fn parry_cast(sphere: &PlacedShape, moving: &PlacedShape, dir: Vec3) -> Option<f32> {
    let Shape::Sphere { radius } = sphere.shape else {
        return None;
    };
    let pos12 = ParryPose::from_parts(
        moving.pose.translation - sphere.pose.translation,
        moving.pose.rotation,
    );
    let options = ShapeCastOptions::with_max_time_of_impact(2.0);
    let ball = Ball::new(radius);
    let hit = match moving.shape {
        Shape::Box { half_extents } => cast_shapes_support_map_support_map(
            &pos12,
            dir,
            &ball,
            &Cuboid::new(half_extents),
            options,
        ),
        Shape::Capsule {
            radius,
            half_height,
            axis,
        } => {
            let tip = axis.unit() * half_height;
            cast_shapes_support_map_support_map(
                &pos12,
                dir,
                &ball,
                &Capsule::new(-tip, tip, radius),
                options,
            )
        }
        Shape::Sphere { .. } => None,
    };
    hit.map(|h| h.time_of_impact)
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let spec = SCENES[1];
    let scene = Scene::build(spec);
    let attacks = attacks(&scene);
    let hit = |sweep: fn(&Attack) -> &ShapeSweep| {
        attacks
            .iter()
            .filter(|a| {
                scene
                    .history
                    .query(RewindTarget::Time(a.time))
                    .sweep_shape(sweep(a))
                    .expect("in the window")
                    .hit
                    .is_some()
            })
            .count()
    };
    eprintln!(
        "{}: swings that strike {}/{}, thrusts {}/{}",
        spec.name,
        hit(|a| &a.swing),
        attacks.len(),
        hit(|a| &a.thrust),
        attacks.len()
    );
    let mut group = c.benchmark_group(format!("melee_{}", spec.name));
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);
    let mut next = 0_usize;
    group.bench_function("swing_lagcomp", |b| {
        b.iter(|| {
            let a = &attacks[next % attacks.len()];
            next += 1;
            let trace = scene
                .history
                .query(RewindTarget::Time(a.time))
                .sweep_shape(black_box(&a.swing));
            black_box(&trace);
        });
    });
    group.bench_function("thrust_lagcomp", |b| {
        b.iter(|| {
            let a = &attacks[next % attacks.len()];
            next += 1;
            let trace = scene
                .history
                .query(RewindTarget::Time(a.time))
                .sweep_shape(black_box(&a.thrust));
            black_box(&trace);
        });
    });
    group.finish();

    let pairs = pairs();
    let hits = pairs
        .spheres
        .iter()
        .zip(&pairs.movers)
        .filter(|(s, (blade, _, dir))| s.cast_shape(blade, *dir, 2.0).is_some())
        .count();
    eprintln!("shape_cast: {hits}/{} blade casts hit", pairs.spheres.len());
    let mut group = c.benchmark_group("shape_cast");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    let n = pairs.spheres.len();
    let mut i = 0_usize;
    group.bench_function("box_vs_sphere_kernel", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            let (blade, _, dir) = &pairs.movers[i];
            black_box(pairs.spheres[i].cast_shape(black_box(blade), *dir, 2.0))
        });
    });
    group.bench_function("box_vs_sphere_parry", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            let (blade, _, dir) = &pairs.movers[i];
            black_box(parry_cast(&pairs.spheres[i], black_box(blade), *dir))
        });
    });
    group.bench_function("capsule_vs_sphere_kernel", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            let (_, fist, dir) = &pairs.movers[i];
            black_box(pairs.spheres[i].cast_shape(black_box(fist), *dir, 2.0))
        });
    });
    group.bench_function("capsule_vs_sphere_parry", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            let (_, fist, dir) = &pairs.movers[i];
            black_box(parry_cast(&pairs.spheres[i], black_box(fist), *dir))
        });
    });
    group.finish();
    c.final_summary();
}
