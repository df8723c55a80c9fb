//! Where a rewound query spends its time, stage by stage, on the benchmark scenes.
//!
//! Run: `cargo run --release -p lagcomp-bench --example funnel`. `FUNNEL_SCENE=<name>`
//! runs one scene; `FUNNEL_FULL_ONLY=1` only the full query (for callgrind);
//! `FUNNEL_PARRY=1` parry3d's BVH cast over the same rays instead; `FUNNEL_SHORT=1` takes
//! the minimum over many short passes (see `per_shot`; steadier on a shared machine);
//! `FUNNEL_SORTED=1` runs the shots in time order (the history mostly in cache, the same
//! instructions); `FUNNEL_RECORD=1` recording against a memcpy (`FUNNEL_RECORD_EACH=1`: one
//! `record` per entity instead of `record_all`). `FUNNEL_SERVER=1` alternates as a server does: one
//! recorded tick, then `FUNNEL_SERVER_SHOTS` (default 32) of the scene's shots at the same
//! ages behind the newest frame, timing each side (what a shot costs right after the rows it
//! reads were written). `FUNNEL_TICKS=1` times ticks one by one: the
//! median, and the slowest tick of each window (where the entity tree is rebuilt);
//! `FUNNEL_CHURN=<k>` with it replaces one entity every `k` ticks (a despawn and a spawn,
//! which rebuild the tree) and also prints the mean tick and the mean of the spawn ticks.
//! `FUNNEL_ENTITIES=<n>` gives the chosen
//! scenes `n` entities (same seed, bones and tick rate), to find where a size-dependent
//! choice (the entity broadphase's flat mode) pays. `FUNNEL_HASH=1` prints, per scene, a
//! hash of every answer (rays, jittered rays, sweeps, `ray_all`) over the shots, to check
//! that a change to the query leaves every answer the same bit for bit. `FUNNEL_SPREAD=1`
//! also prints the spread of the timed passes (minimum, deciles, median, maximum).
//! `FUNNEL_KIND=exact` (or `blend`) keeps only the shots at a recorded frame's time (or
//! between two frames).

use std::hint::black_box;
use std::time::Instant;

use lagcomp::Tick;
use lagcomp::{BroadphaseDecision, QueryLog, RewindTarget, WindowPolicy};
use lagcomp_bench::ParryWorld;
use lagcomp_bench::copy_target::CopyTarget;
use lagcomp_bench::parry_world::parry_ray;
use lagcomp_fixtures::scene::{SHOT_RANGE, record_frame, record_frame_each};
use lagcomp_fixtures::{SCENES, Scene};

fn per_shot(scene: &Scene, mut f: impl FnMut(&lagcomp_fixtures::Shot)) -> f64 {
    // `FUNNEL_SHORT=1`: the minimum over 2,000 passes of the shots instead of 5 runs of 200
    // passes, so that on a shared machine some passes run without a neighbour's
    // interference (same shots, same instructions).
    let (reps, rounds) = if std::env::var_os("FUNNEL_SHORT").is_some() {
        (2000, 1)
    } else {
        (5, 200)
    };
    let mut passes = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        for _ in 0..rounds {
            for shot in &scene.shots {
                f(shot);
            }
        }
        passes.push(start.elapsed().as_nanos() as f64 / (rounds * scene.shots.len()) as f64);
    }
    passes.sort_by(f64::total_cmp);
    if std::env::var_os("FUNNEL_SPREAD").is_some() {
        // The passes' spread, to compare with criterion's median of longer samples: on a
        // shared host the minimum keeps only the quietest passes.
        let at = |q: f64| passes[((passes.len() - 1) as f64 * q) as usize];
        eprintln!(
            "passes: min {:.0}, 10 % {:.0}, median {:.0}, 90 % {:.0}, max {:.0} ns a shot",
            at(0.0),
            at(0.1),
            at(0.5),
            at(0.9),
            at(1.0)
        );
    }
    passes[0]
}

/// The benchmark scenes, with `FUNNEL_ENTITIES` entities each when it is set.
fn scenes() -> impl Iterator<Item = lagcomp_fixtures::SceneSpec> {
    let entities = std::env::var("FUNNEL_ENTITIES")
        .ok()
        .and_then(|n| n.parse::<usize>().ok());
    SCENES
        .into_iter()
        .map(move |spec| lagcomp_fixtures::SceneSpec {
            entities: entities.unwrap_or(spec.entities),
            ..spec
        })
}

fn main() {
    let only_full = std::env::var_os("FUNNEL_FULL_ONLY").is_some();
    if std::env::var_os("FUNNEL_SERVER").is_some() {
        server_loop();
        return;
    }
    if std::env::var_os("FUNNEL_TICKS").is_some() {
        tick_spread();
        return;
    }
    if std::env::var_os("FUNNEL_HASH").is_some() {
        for spec in scenes().filter(|s| std::env::var("FUNNEL_SCENE").map_or(true, |n| n == s.name))
        {
            let scene = Scene::build(spec);
            let (hash, hits) = answers_hash(&scene);
            println!("{:<14} answers {hash:016x} ({hits} hits)", spec.name);
        }
        return;
    }
    if std::env::var_os("FUNNEL_RECORD").is_some() {
        let each = std::env::var_os("FUNNEL_RECORD_EACH").is_some();
        for spec in scenes().filter(|s| std::env::var("FUNNEL_SCENE").map_or(true, |n| n == s.name))
        {
            let scene = Scene::build(spec);
            let mut history = scene.history.clone();
            let mut input = Vec::new();
            let mut tick = scene.newest_tick();
            scene.frame_bones(Tick(tick.0 + 1), &mut input);
            // Half a page from `input`, as in the benchmark (`copy_target`).
            let mut copy = CopyTarget::new(&input, 1);
            // `FUNNEL_RECORD_TICKS=<n>`: about this many ticks per timed run (default about
            // 2,000,000 bones' worth).
            let ticks = std::env::var("FUNNEL_RECORD_TICKS")
                .ok()
                .and_then(|v| v.parse::<usize>().ok());
            let rounds = ticks.unwrap_or(2_000_000 / input.len().max(1) + 10);
            let (mut rec, mut cpy) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..5 {
                let start = Instant::now();
                for _ in 0..rounds {
                    tick.0 += 1;
                    let time = scene.time_of(tick);
                    if each {
                        record_frame_each(
                            &mut history,
                            &scene.entities,
                            scene.bones(),
                            tick,
                            time,
                            black_box(&input),
                        );
                    } else {
                        record_frame(&mut history, &scene.entities, tick, time, black_box(&input));
                    }
                }
                rec = rec.min(start.elapsed().as_nanos() as f64 / rounds as f64);
                let start = Instant::now();
                for _ in 0..rounds {
                    let to = copy.slot(0);
                    to.copy_from_slice(black_box(&input));
                    black_box(to);
                }
                cpy = cpy.min(start.elapsed().as_nanos() as f64 / rounds as f64);
            }
            println!(
                "{:<14} record {rec:>10.0} ns | memcpy {cpy:>9.0} ns | ratio {:.2}",
                spec.name,
                rec / cpy
            );
            if only_full {
                return;
            }
        }
        return;
    }
    for spec in scenes().filter(|s| std::env::var("FUNNEL_SCENE").map_or(true, |n| n == s.name)) {
        let mut scene = Scene::build(spec);
        // `FUNNEL_KIND=exact` or `blend`: only the shots at a recorded frame's time, or only
        // those between two frames (same order), to see what each kind costs and whether
        // mixing them at random costs more than their average.
        match std::env::var("FUNNEL_KIND").as_deref() {
            Ok("exact") => scene.shots.retain(|s| s.exact),
            Ok("blend") => scene.shots.retain(|s| !s.exact),
            _ => {}
        }
        if std::env::var_os("FUNNEL_SORTED").is_some() {
            // The same shots in time order: consecutive shots read the same frames, so
            // the history's rows are mostly in cache (the same instructions otherwise).
            scene.shots.sort_by(|a, b| a.time.total_cmp(&b.time));
        }
        if std::env::var_os("FUNNEL_PARRY").is_some() {
            // parry3d's BVH cast over the same hitboxes posed at the newest frame (the
            // benchmark's `query_parry_bvh`), for instruction counts side by side.
            let mut input = Vec::new();
            scene.frame_bones(scene.newest_tick(), &mut input);
            let parry = ParryWorld::new(&scene.placed_hitboxes(&input));
            let rays: Vec<_> = scene.shots.iter().map(|s| parry_ray(&s.ray)).collect();
            let mut k = 0;
            let bvh = per_shot(&scene, |_| {
                black_box(parry.cast_bvh(black_box(&rays[k % rays.len()]), SHOT_RANGE));
                k += 1;
            });
            println!("{} parry_bvh {bvh:.0} ns", spec.name);
            if only_full {
                return;
            }
            continue;
        }
        if only_full {
            let full = per_shot(&scene, |s| {
                black_box(
                    scene
                        .history
                        .query(RewindTarget::Time(black_box(s.time)))
                        .ray(black_box(&s.ray)),
                )
                .ok();
            });
            println!("{} full {full:.0} ns", spec.name);
            return;
        }
        let h = &scene.history;
        let resolve = per_shot(&scene, |s| {
            black_box(h.resolve(RewindTarget::Time(s.time), WindowPolicy::Reject)).ok();
        });
        let no_layers = per_shot(&scene, |s| {
            black_box(h.query(RewindTarget::Time(s.time)).layers(0).ray(&s.ray)).ok();
        });
        let full = per_shot(&scene, |s| {
            black_box(h.query(RewindTarget::Time(s.time)).ray(&s.ray)).ok();
        });
        let t0 = scene.shots[0].time;
        let hot = per_shot(&scene, |s| {
            black_box(h.query(RewindTarget::Time(t0)).ray(&s.ray)).ok();
        });
        let (mut passed, mut tested) = (0, 0);
        for s in &scene.shots {
            let mut log = QueryLog::default();
            h.query(RewindTarget::Time(s.time))
                .observe(&mut log)
                .ray(&s.ray)
                .ok();
            passed += log
                .broadphase
                .iter()
                .filter(|(_, d)| *d == BroadphaseDecision::Passed)
                .count();
            tested += log.hitboxes.len();
        }
        let n = scene.shots.len() as f64;
        println!(
            "{:<14} resolve {resolve:>6.0} ns | walk+admit (layers 0) {no_layers:>6.0} ns | full {full:>6.0} ns (one time for all shots: {hot:>5.0} ns) | passed {:.2} entities, {:.2} exact tests per shot",
            spec.name,
            passed as f64 / n,
            tested as f64 / n
        );
    }
}

/// `FUNNEL_SERVER=1`: a tick recorded, then a few shots at the same ages as the scene's
/// (so at frames written in the last window), over and over; the minimum over five runs of
/// the mean time per tick and per shot.
fn server_loop() {
    let shots_per_tick = std::env::var("FUNNEL_SERVER_SHOTS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(32);
    for spec in scenes().filter(|s| std::env::var("FUNNEL_SCENE").map_or(true, |n| n == s.name)) {
        let scene = Scene::build(spec);
        let mut history = scene.history.clone();
        let mut input = Vec::new();
        let mut tick = scene.newest_tick();
        let newest = scene.time_of(tick);
        scene.frame_bones(Tick(tick.0 + 1), &mut input);
        // How far behind the newest frame each shot aims.
        let ages: Vec<f64> = scene.shots.iter().map(|s| newest - s.time).collect();
        let ticks = 2 * history.capacity() + 40;
        let (mut rec, mut shot) = (f64::INFINITY, f64::INFINITY);
        let mut k = 0;
        for _ in 0..5 {
            let (mut rec_ns, mut shot_ns) = (0_u128, 0_u128);
            for _ in 0..ticks {
                tick.0 += 1;
                let time = scene.time_of(tick);
                let start = Instant::now();
                record_frame(&mut history, &scene.entities, tick, time, black_box(&input));
                rec_ns += start.elapsed().as_nanos();
                let start = Instant::now();
                for _ in 0..shots_per_tick {
                    let s = &scene.shots[k % scene.shots.len()];
                    let at = time - ages[k % ages.len()];
                    black_box(history.query(RewindTarget::Time(black_box(at))).ray(&s.ray)).ok();
                    k += 1;
                }
                shot_ns += start.elapsed().as_nanos();
            }
            rec = rec.min(rec_ns as f64 / ticks as f64);
            shot = shot.min(shot_ns as f64 / (ticks * shots_per_tick) as f64);
        }
        println!(
            "{:<14} server: record {rec:>10.0} ns a tick | query {shot:>6.0} ns a shot ({shots_per_tick} a tick)",
            spec.name
        );
    }
}

/// `FUNNEL_TICKS=1`: 40 windows of ticks timed one by one; the median tick, and the mean of
/// the slowest tick of each window (the tree's rebuild, once a window, lands there).
/// `FUNNEL_CHURN=<k>`: every `k` ticks one entity is despawned and a new one spawned in its
/// place in the batch (room reserved first, so the lanes never grow).
fn tick_spread() {
    let churn = std::env::var("FUNNEL_CHURN")
        .ok()
        .and_then(|k| k.parse::<u32>().ok())
        .filter(|&k| k > 0);
    for spec in scenes().filter(|s| std::env::var("FUNNEL_SCENE").map_or(true, |n| n == s.name)) {
        let scene = Scene::build(spec);
        let mut history = scene.history.clone();
        let mut entities = scene.entities.clone();
        if let Some(k) = churn {
            // Despawned slots come back once their frames age out: a window's worth.
            let extra = history.capacity() / k as usize + 2;
            history.reserve(extra, extra * usize::from(spec.bones));
        }
        let mut input = Vec::new();
        let mut tick = scene.newest_tick();
        scene.frame_bones(Tick(tick.0 + 1), &mut input);
        let window = history.capacity();
        let mut times = Vec::with_capacity(40 * window);
        let mut spawn_ticks = Vec::new();
        for n in 0..40 * window as u32 {
            tick.0 += 1;
            let time = scene.time_of(tick);
            let start = Instant::now();
            let spawning = churn.is_some_and(|k| n % k == k - 1);
            if spawning {
                let at = (n as usize * 7919) % entities.len();
                history.despawn(entities[at].0).expect("live");
                entities[at].0 = history.spawn(scene.rig.clone());
            }
            record_frame(&mut history, &entities, tick, time, black_box(&input));
            let ns = start.elapsed().as_nanos() as f64;
            times.push(ns);
            if spawning {
                spawn_ticks.push(ns);
            }
        }
        let slowest: f64 = times
            .chunks(window)
            .map(|w| w.iter().copied().fold(0.0, f64::max))
            .sum::<f64>()
            / 40.0;
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        times.sort_by(f64::total_cmp);
        print!(
            "{:<14} ticks: median {:>10.0} ns | slowest of each window, mean {slowest:>10.0} ns",
            spec.name,
            times[times.len() / 2]
        );
        if churn.is_some() {
            let spawn_mean = spawn_ticks.iter().sum::<f64>() / spawn_ticks.len().max(1) as f64;
            print!(" | mean {mean:>10.0} ns | spawn ticks, mean {spawn_mean:>10.0} ns");
        }
        println!();
    }
}

/// A hash of every answer the queries give over the scene's shots: each shot's ray, the
/// same ray with its direction nudged eight ways (grazing and missing hits), sweeps of two
/// radii and `ray_all`. Hashed through `Debug`, which prints every `f32` so that it reads
/// back to the same bits (and `-0.0` apart from `0.0`). Returns the hash and the number of
/// hits seen.
fn answers_hash(scene: &Scene) -> (u64, usize) {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut hits = 0;
    let mut all = Vec::new();
    let h = &scene.history;
    for s in &scene.shots {
        let target = RewindTarget::Time(s.time);
        let mut rays = vec![s.ray];
        for k in 0..8 {
            let angle = k as f32 * std::f32::consts::FRAC_PI_4;
            let nudge = lagcomp::Vec3::new(angle.cos(), angle.sin(), 0.5 * angle.sin())
                * (0.002 + 0.003 * k as f32);
            if let Ok(ray) =
                lagcomp::Ray::new(s.ray.origin(), s.ray.dir() + nudge, s.ray.max_distance())
            {
                rays.push(ray);
            }
        }
        for ray in &rays {
            let trace = h.query(target).ray(ray);
            hits += usize::from(matches!(&trace, Ok(t) if t.hit.is_some()));
            answer_text(&trace).hash(&mut hasher);
        }
        for radius in [0.05, 0.3] {
            answer_text(&h.query(target).sweep(&s.ray, radius)).hash(&mut hasher);
        }
        answer_text(&h.query(target).ray_all(&s.ray, &mut all)).hash(&mut hasher);
        answer_text(&all).hash(&mut hasher);
    }
    (hasher.finish(), hits)
}

/// A trace's answer as hashed: its debug text without an absent blocking entity (the
/// scenes have no blockers) and without the states' unset `invulnerable` and `evasive`
/// (the scenes set neither), so the hashes stay those of the answers before entity roles
/// and those flags.
fn answer_text<T: std::fmt::Debug>(trace: &T) -> String {
    format!("{trace:?}")
        .replace(", blocking_entity: None", "")
        .replace(", invulnerable: false, evasive: false", "")
}
