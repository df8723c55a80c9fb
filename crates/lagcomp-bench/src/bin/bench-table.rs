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
use lagcomp_fixtures::{SCENES, Scene};

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

/// Cores available, the CPU model, its widest vector extension and its cache sizes, as
/// `nproc`, `/proc/cpuinfo`, the CPU's feature flags and `/sys` report them. Two hosts that
/// both call themselves "AMD EPYC" gave record/memcpy 1.89 and 2.83 at 64x16 with the same
/// code: the model name alone does not say
/// which one a table came from.
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
    let cache = |index: u8| {
        std::fs::read_to_string(format!(
            "/sys/devices/system/cpu/cpu0/cache/index{index}/size"
        ))
        .map_or_else(|_| "?".to_owned(), |size| size.trim().to_owned())
    };
    format!(
        "{cores} cores available, CPU model \"{model}\", {}, L2 {} a core, L3 {}",
        vector_extension(),
        cache(2),
        cache(3)
    )
}

/// The widest x86 vector extension the CPU reports (what `lagcomp`'s kernels could use).
fn vector_extension() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            "AVX-512F"
        } else if std::arch::is_x86_feature_detected!("avx2") {
            "AVX2"
        } else {
            "SSE2"
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        "no x86 vector extension"
    }
}
