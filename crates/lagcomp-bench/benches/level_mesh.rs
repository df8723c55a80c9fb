//! A rewound ray against a 100,000-triangle level plus the 200 x 20 scene's entities,
//! against what it replaces: parry3d's own cast of the same mesh plus today's entity-only
//! rewound query, on the same rays. And loading that level.
//!
//! - `level_load`: `History::load_level` of the one 100,000-triangle mesh piece (checks
//!   every vertex, index and triangle, builds parry's tree over it and the level's tree).
//! - `ray_with_level`: `history.query(Time(t)).ray(&ray)` with the level loaded.
//! - `parry_mesh_plus_entities`: `TriMesh::cast_local_ray` on the same mesh, then the same
//!   query on the history without the level, clipped to the mesh hit (as a server doing
//!   the two by hand would); `parry_mesh_normal_plus_entities`: the same with the wall's
//!   normal (`cast_local_ray_and_get_normal`), which `ray_with_level` also reports.
//!
//! The level: a bumpy floor (a 200 x 200 grid, 80,000 triangles) and 1,700 box-shaped
//! walls (12 triangles each, 2 x 3 x 0.3 m) scattered over the arena, one mesh of 100,400
//! triangles. `parry_trimesh_new` (parry's own `TriMesh::new` of it) is what the load
//! costs without checking and the level's tree; `parry_mesh_only` (with the normal) and
//! `entities_only` split the baseline. Every
//! input is generated before the timed loops; the loops cycle through the scene's shots.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use glam::Vec3;
use lagcomp::{LevelPiece, Ray, RewindTarget};
use lagcomp_fixtures::{SCENES, Scene};
use parry3d::query::{Ray as ParryRay, RayCast};
use parry3d::shape::TriMesh;
use rand::{Rng, SeedableRng};

/// Floor cells per side; two triangles each.
const FLOOR_CELLS: u32 = 200;
/// Box walls, twelve triangles each.
const WALLS: usize = 1_700;

/// The level: a bumpy floor over the arena and walls scattered on it.
fn level(arena: f32, seed: u64) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let mut vertices = Vec::new();
    let mut triangles = Vec::new();
    let side = FLOOR_CELLS + 1;
    let step = arena / FLOOR_CELLS as f32;
    for row in 0..side {
        for column in 0..side {
            let x = -arena / 2.0 + column as f32 * step;
            let z = -arena / 2.0 + row as f32 * step;
            vertices.push(Vec3::new(x, rng.random_range(-0.3..-0.05), z));
        }
    }
    for row in 0..FLOOR_CELLS {
        for column in 0..FLOOR_CELLS {
            let at = row * side + column;
            triangles.push([at, at + side, at + 1]);
            triangles.push([at + 1, at + side, at + side + 1]);
        }
    }
    for _ in 0..WALLS {
        let center = Vec3::new(
            rng.random_range(-arena / 2.0..arena / 2.0),
            1.5,
            rng.random_range(-arena / 2.0..arena / 2.0),
        );
        let yaw = rng.random_range(0.0..std::f32::consts::TAU);
        let half = glam::Quat::from_rotation_y(yaw) * Vec3::new(1.0, 0.0, 0.15);
        let across = glam::Quat::from_rotation_y(yaw) * Vec3::new(0.0, 0.0, 0.15);
        let along = half - across;
        let first = vertices.len() as u32;
        for corner in 0..8 {
            let sx = if corner & 1 == 0 { -1.0 } else { 1.0 };
            let sy = if corner & 2 == 0 { -1.5 } else { 1.5 };
            let sz = if corner & 4 == 0 { -1.0 } else { 1.0 };
            vertices.push(center + along * sx + Vec3::Y * sy + across * sz);
        }
        // The six faces of the box, two triangles each.
        for [a, b, c, d] in [
            [0, 1, 3, 2],
            [4, 6, 7, 5],
            [0, 4, 5, 1],
            [2, 3, 7, 6],
            [0, 2, 6, 4],
            [1, 5, 7, 3],
        ] {
            triangles.push([first + a, first + b, first + c]);
            triangles.push([first + a, first + c, first + d]);
        }
    }
    (vertices, triangles)
}

fn level_benches(c: &mut Criterion) {
    let spec = SCENES[1];
    let scene = Scene::build(spec);
    let (vertices, triangles) = level(scene.arena, spec.seed);
    let piece = LevelPiece::Mesh {
        vertices: vertices.clone(),
        triangles: triangles.clone(),
        layers: u32::MAX,
    };
    let mut with_level = scene.history.clone();
    let started = Instant::now();
    with_level
        .load_level([piece.clone()])
        .expect("the level is valid");
    eprintln!(
        "{}: a {}-triangle level loaded in {:.1} ms",
        spec.name,
        triangles.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let mesh = TriMesh::new(vertices, triangles).expect("the level is valid");
    let shots: Vec<(Ray, f64)> = scene.shots.iter().map(|s| (s.ray, s.time)).collect();
    let mut blocked = 0;
    for (ray, time) in &shots {
        let trace = with_level
            .query(RewindTarget::Time(*time))
            .ray(ray)
            .unwrap();
        blocked += usize::from(trace.blocker.is_some() && trace.hit.is_none());
    }
    eprintln!(
        "{}: {blocked}/{} shots blocked by the level",
        spec.name,
        shots.len()
    );

    let mut group = c.benchmark_group(format!("level_{}", spec.name));
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    let mut i = 0_usize;
    group.bench_function("ray_with_level", |b| {
        b.iter(|| {
            i = (i + 1) % shots.len();
            let (ray, time) = &shots[i];
            let trace = with_level
                .query(RewindTarget::Time(black_box(*time)))
                .ray(black_box(ray));
            black_box(&trace);
        });
    });
    let entities_only = &scene.history;
    group.bench_function("parry_mesh_plus_entities", |b| {
        b.iter(|| {
            i = (i + 1) % shots.len();
            let (ray, time) = &shots[i];
            let ray = black_box(ray);
            let wall = mesh.cast_local_ray(
                &ParryRay::new(ray.origin(), ray.dir()),
                ray.max_distance(),
                true,
            );
            let clipped = match wall {
                Some(distance) => Ray::new(ray.origin(), ray.dir(), distance).unwrap(),
                None => *ray,
            };
            let trace = entities_only
                .query(RewindTarget::Time(black_box(*time)))
                .ray(&clipped);
            black_box(&(wall, trace));
        });
    });
    // The same with the wall's normal, which `ray_with_level` reports (`Trace::blocker`).
    group.bench_function("parry_mesh_normal_plus_entities", |b| {
        b.iter(|| {
            i = (i + 1) % shots.len();
            let (ray, time) = &shots[i];
            let ray = black_box(ray);
            let wall = mesh.cast_local_ray_and_get_normal(
                &ParryRay::new(ray.origin(), ray.dir()),
                ray.max_distance(),
                true,
            );
            let clipped = match wall {
                Some(hit) => Ray::new(ray.origin(), ray.dir(), hit.time_of_impact).unwrap(),
                None => *ray,
            };
            let trace = entities_only
                .query(RewindTarget::Time(black_box(*time)))
                .ray(&clipped);
            black_box(&(wall, trace));
        });
    });
    group.bench_function("parry_mesh_only", |b| {
        b.iter(|| {
            i = (i + 1) % shots.len();
            let ray = black_box(&shots[i].0);
            let wall = mesh.cast_local_ray_and_get_normal(
                &ParryRay::new(ray.origin(), ray.dir()),
                ray.max_distance(),
                true,
            );
            black_box(&wall);
        });
    });
    group.bench_function("entities_only", |b| {
        b.iter(|| {
            i = (i + 1) % shots.len();
            let (ray, time) = &shots[i];
            let trace = entities_only
                .query(RewindTarget::Time(black_box(*time)))
                .ray(black_box(ray));
            black_box(&trace);
        });
    });
    group.sample_size(10);
    group.bench_function("parry_trimesh_new", |b| {
        b.iter_batched(
            || (mesh.vertices().to_vec(), mesh.indices().to_vec()),
            |(vertices, triangles)| TriMesh::new(vertices, triangles).unwrap(),
            criterion::BatchSize::LargeInput,
        );
    });
    group.bench_function("level_load", |b| {
        b.iter_batched(
            || (scene.history.clone(), piece.clone()),
            |(mut history, piece)| {
                history.load_level([piece]).unwrap();
                history
            },
            criterion::BatchSize::LargeInput,
        );
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    level_benches(&mut c);
    c.final_summary();
}
