//! Where a rewound query spends its time, stage by stage, on the benchmark scenes.
//!
//! Run: `cargo run --release -p lagcomp-bench --example funnel`

use std::hint::black_box;
use std::time::Instant;

use lagcomp::{Broadphase, QueryLog, RewindTarget, WindowPolicy};
use lagcomp_bench::{SCENES, Scene};

fn per_shot(scene: &Scene, mut f: impl FnMut(&lagcomp_bench::Shot)) -> f64 {
    let rounds = 200;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..rounds {
            for shot in &scene.shots {
                f(shot);
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / (rounds * scene.shots.len()) as f64;
        best = best.min(ns);
    }
    best
}

fn main() {
    let only_full = std::env::var_os("FUNNEL_FULL_ONLY").is_some();
    for spec in SCENES {
        let scene = Scene::build(spec);
        if only_full {
            let full = per_shot(&scene, |s| {
                black_box(scene.history.query(RewindTarget::Time(s.time)).ray(&s.ray)).ok();
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
                .filter(|(_, d)| *d == Broadphase::Passed)
                .count();
            tested += log.hitboxes.len();
        }
        let n = scene.shots.len() as f64;
        println!(
            "{:<14} resolve {resolve:>6.0} ns | walk+admit (layers 0) {no_layers:>6.0} ns | full {full:>6.0} ns | passed {:.2} entities, {:.2} exact tests per shot",
            spec.name,
            passed as f64 / n,
            tested as f64 / n
        );
    }
}
