//! `lagcomp` side by side with a plain memcpy, parry3d's BVH and a rewound rapier3d world,
//! one criterion group per scene (see `lagcomp_fixtures::scene::SCENES`).
//!
//! Per scene:
//! - `record_lagcomp`: one full tick (`begin_frame`, `record_all` with every entity's
//!   bones, `finish`); `record_memcpy`: `copy_from_slice` of the same `BoneTransform`s into a
//!   preallocated buffer; `record_memcpy_ring`: the same into the next slot of a ring as
//!   long as the history; `record_copy_rows`: each bone's translation and rotation copied
//!   field by field into the next row of two such lanes (the bytes a tick stores, with no
//!   work: see `lagcomp_bench::row_copy`).
//! - `query_lagcomp`: one rewound closest-hit ray (`history.query(Time(t)).ray(&ray)`);
//!   `query_parry_bvh` / `query_parry_compound`: the same rays against the same hitboxes
//!   posed at the newest frame, through parry3d's `Bvh::cast_ray` with concrete shapes,
//!   and through a parry3d `Compound`.
//! - `rapier_rewind`: the whole per-shot cost of rewinding a rapier3d world (move every
//!   collider, `BroadPhaseBvh::update`, cast, move back, update);
//!   `rapier_rewind_set_aabb`: the same with one `BroadPhaseBvh::set_aabb` per collider
//!   instead of `update` (no pair search), the cheapest public refresh.
//!
//! Every input is generated before the timed loops; the loops cycle through the scene's
//! shots. `bytes/hitbox-frame` and the hit rate are printed to stderr.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, SamplingMode};
use lagcomp::{RewindTarget, Tick};
use lagcomp_bench::copy_target::CopyTarget;
use lagcomp_bench::parry_world::parry_ray;
use lagcomp_bench::report::bench;
use lagcomp_bench::row_copy::RowCopy;
use lagcomp_bench::{ParryWorld, RapierRewind};
use lagcomp_fixtures::scene::{SHOT_RANGE, record_frame};
use lagcomp_fixtures::{SCENES, Scene, SceneSpec};

/// Keeps a query's answer alive where the caller got it, as a server that reads its fields
/// does. Every query benchmark (ours, parry's, rapier's) ends with this, not with
/// criterion's by-value `black_box` of the closure's return: for `lagcomp`'s 256-byte
/// `Result<Trace, _>` that move compiled to a `memcpy` whose wide loads read the answer's
/// narrow stores straight back (store-to-load forwarding fails), about 30 ns a shot at
/// 64 entities, a copy no caller makes. parry's
/// 8-byte answer travelled in registers either way.
fn keep<T>(answer: T) {
    black_box(&answer);
}

fn scene_benches(c: &mut Criterion, spec: SceneSpec) {
    let scene = Scene::build(spec);
    let hits = scene.shots_that_hit();
    eprintln!(
        "{}: {} hitboxes, capacity {} frames, history {} bytes, bytes/hitbox-frame {:.2}, \
         {}/{} shots hit",
        spec.name,
        scene.hitboxes(),
        scene.history.capacity(),
        scene.history.history_bytes(),
        scene.bytes_per_hitbox_frame(),
        hits,
        scene.shots.len(),
    );

    let mut group = c.benchmark_group(spec.name);
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);

    // --- record ---
    let mut history = scene.history.clone();
    let entities = scene.entities.clone();
    let mut tick = scene.newest_tick();
    let mut input = Vec::new();
    scene.frame_bones(Tick(tick.0 + 1), &mut input);
    group.bench_function(bench::RECORD, |b| {
        b.iter(|| {
            tick.0 += 1;
            let time = scene.time_of(tick);
            record_frame(
                black_box(&mut history),
                black_box(&entities),
                black_box(tick),
                black_box(time),
                black_box(&input),
            );
        });
    });
    // Both destinations start half a page from `input` (see `copy_target`: at some
    // distances glibc's `rep movsb` copies 20x slower, which would flatter the ratio).
    let mut copy = CopyTarget::new(&input, 1);
    group.bench_function(bench::MEMCPY, |b| {
        b.iter(|| black_box(copy.slot(0)).copy_from_slice(black_box(&input)));
    });
    let mut ring = CopyTarget::new(&input, scene.history.capacity());
    let mut slot = 0_usize;
    group.bench_function(bench::MEMCPY_RING, |b| {
        b.iter(|| {
            slot = (slot + 1) % ring.slots();
            black_box(ring.slot(slot)).copy_from_slice(black_box(&input));
        });
    });
    let mut rows = RowCopy::new(input.len(), scene.history.capacity());
    let mut row = 0_usize;
    group.bench_function(bench::COPY_ROWS, |b| {
        b.iter(|| {
            row = (row + 1) % rows.slots();
            black_box(&mut rows).copy(row, black_box(&input));
        });
    });
    drop((history, copy, ring, rows));

    // --- query ---
    let shots = &scene.shots;
    let mut next = 0_usize;
    group.bench_function(bench::QUERY, |b| {
        b.iter(|| {
            let shot = &shots[next % shots.len()];
            next += 1;
            keep(
                scene
                    .history
                    .query(RewindTarget::Time(black_box(shot.time)))
                    .ray(black_box(&shot.ray)),
            );
        });
    });

    scene.frame_bones(scene.newest_tick(), &mut input);
    let parry = ParryWorld::new(&scene.placed_hitboxes(&input));
    let rays: Vec<_> = shots.iter().map(|s| parry_ray(&s.ray)).collect();
    group.bench_function(bench::PARRY_BVH, |b| {
        b.iter(|| {
            let ray = &rays[next % rays.len()];
            next += 1;
            keep(parry.cast_bvh(black_box(ray), SHOT_RANGE));
        });
    });
    group.bench_function(bench::PARRY_COMPOUND, |b| {
        b.iter(|| {
            let ray = &rays[next % rays.len()];
            next += 1;
            keep(parry.cast_compound(black_box(ray), SHOT_RANGE));
        });
    });
    drop(parry);

    // --- rapier ---
    let mut rapier = RapierRewind::new(&scene);
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    group.bench_function(bench::RAPIER, |b| {
        b.iter(|| {
            let k = next % rays.len();
            next += 1;
            keep(rapier.rewind_cast(black_box(&rays[k]), SHOT_RANGE, black_box(shots[k].time)));
        });
    });
    group.bench_function(bench::RAPIER_SET_AABB, |b| {
        b.iter(|| {
            let k = next % rays.len();
            next += 1;
            keep(rapier.rewind_cast_set_aabb(
                black_box(&rays[k]),
                SHOT_RANGE,
                black_box(shots[k].time),
            ));
        });
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    for spec in SCENES {
        scene_benches(&mut c, spec);
    }
    c.final_summary();
}
