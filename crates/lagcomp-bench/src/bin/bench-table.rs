//! Prints the tables of `BENCHMARKS.md` from criterion's last run of the `rewind` suite.
//!
//! ```text
//! cargo bench -p lagcomp-bench --bench rewind
//! cargo run --release -p lagcomp-bench --bin bench-table
//! ```
//!
//! Timings come from `target/criterion/<scene>/<bench>/new/estimates.json` (or
//! `$CRITERION_HOME`, or `$CARGO_TARGET_DIR/criterion`; a directory given as the first
//! argument wins). The bytes per hitbox-frame and hit rates are recomputed by rebuilding
//! the same seeded scenes.

use lagcomp_bench::report::{SceneFacts, criterion_dir, render};
use lagcomp_bench::{SCENES, Scene};

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(criterion_dir, std::path::PathBuf::from);
    let facts: Vec<SceneFacts> = SCENES
        .iter()
        .map(|&spec| {
            let scene = Scene::build(spec);
            let hits = scene.shots_that_hit();
            SceneFacts {
                spec,
                bytes_per_hitbox_frame: scene.bytes_per_hitbox_frame(),
                capacity: scene.history.capacity(),
                hit_rate: hits as f64 / scene.shots.len() as f64,
            }
        })
        .collect();
    match render(&dir, &facts) {
        Ok(table) => {
            print!("{table}");
            println!("\nMachine: {}", machine());
        }
        Err(e) => {
            eprintln!("bench-table: {e}");
            std::process::exit(1);
        }
    }
}

/// Cores available and the CPU model, as `nproc` and `/proc/cpuinfo` report them.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cores} cores available, CPU model \"{model}\"")
}
