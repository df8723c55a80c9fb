//! Reads criterion's `estimates.json` files back and renders the tables of
//! `BENCHMARKS.md`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lagcomp_fixtures::SceneSpec;

/// Benchmark function names inside each scene's criterion group.
pub mod bench {
    /// Recording one tick with `lagcomp`.
    pub const RECORD: &str = "record_lagcomp";
    /// `copy_from_slice` of the same bone transforms.
    pub const MEMCPY: &str = "record_memcpy";
    /// `copy_from_slice` of the same bone transforms into the next slot of a ring of the
    /// history's capacity (the naive way to keep the last N ticks: a cold destination).
    pub const MEMCPY_RING: &str = "record_memcpy_ring";
    /// Each bone's translation and rotation copied field by field into the next row of
    /// two lanes as long as the history (`row_copy`: the bytes a tick stores, nothing
    /// checked or bounded).
    pub const COPY_ROWS: &str = "record_copy_rows";
    /// One rewound closest-hit ray query with `lagcomp`.
    pub const QUERY: &str = "query_lagcomp";
    /// parry3d `Bvh::cast_ray` over concrete shapes, in the present.
    pub const PARRY_BVH: &str = "query_parry_bvh";
    /// parry3d `Compound::cast_ray`, in the present.
    pub const PARRY_COMPOUND: &str = "query_parry_compound";
    /// rapier3d: move every collider, `BroadPhaseBvh::update`, cast, move back, update.
    pub const RAPIER: &str = "rapier_rewind";
    /// rapier3d, refreshing the broad phase with one `set_aabb` per collider instead.
    pub const RAPIER_SET_AABB: &str = "rapier_rewind_set_aabb";
    /// All of them, in table order.
    pub const ALL: [&str; 9] = [
        RECORD,
        MEMCPY,
        MEMCPY_RING,
        COPY_ROWS,
        QUERY,
        PARRY_BVH,
        PARRY_COMPOUND,
        RAPIER,
        RAPIER_SET_AABB,
    ];
}

/// Floors the ratios are held to.
pub mod floor {
    /// `record/memcpy` at most this.
    pub const RECORD_OVER_MEMCPY: f64 = 2.0;
    /// `query/parry` at most this.
    pub const QUERY_OVER_PARRY: f64 = 1.5;
    /// `rapier/query` at least this.
    pub const RAPIER_OVER_QUERY: f64 = 50.0;
    /// `bytes/hitbox-frame` at most this.
    pub const BYTES_PER_HITBOX_FRAME: f64 = 32.0;
    /// Query time growth from 200 to 5,000 entities under this.
    pub const GROWTH_200_TO_5000: f64 = 3.0;
}

/// One benchmark's estimates, in nanoseconds per iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Median of the per-iteration sample times.
    pub median: f64,
    /// Mean.
    pub mean: f64,
    /// Lower bound of the mean's 95 % confidence interval.
    pub mean_lo: f64,
    /// Upper bound of the mean's 95 % confidence interval.
    pub mean_hi: f64,
}

/// Criterion's output directory: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else the workspace's `target/criterion`.
#[must_use]
pub fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/criterion")
        .components()
        .collect()
}

/// Reads `<dir>/<group>/<bench>/new/estimates.json`.
///
/// # Errors
/// A message naming the file when it is missing or not criterion's format.
pub fn read_estimate(dir: &Path, group: &str, bench: &str) -> Result<Estimate, String> {
    let path = dir.join(group).join(bench).join("new/estimates.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run `cargo bench -p lagcomp-bench` first)",
            path.display()
        )
    })?;
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let field = |object: &str, key: &str| -> Result<f64, String> {
        let start = compact
            .find(&format!("\"{object}\":{{"))
            .ok_or_else(|| format!("{}: no {object}", path.display()))?;
        let rest = &compact[start..];
        let at = rest
            .find(&format!("\"{key}\":"))
            .ok_or_else(|| format!("{}: no {object}.{key}", path.display()))?;
        let number = &rest[at + key.len() + 3..];
        let end = number
            .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
            .unwrap_or(number.len());
        number[..end]
            .parse()
            .map_err(|e| format!("{}: {object}.{key}: {e}", path.display()))
    };
    Ok(Estimate {
        median: field("median", "point_estimate")?,
        mean: field("mean", "point_estimate")?,
        mean_lo: field("mean", "lower_bound")?,
        mean_hi: field("mean", "upper_bound")?,
    })
}

/// A duration in nanoseconds, with a readable unit.
#[must_use]
pub fn format_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.1} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} µs", ns / 1_000.0)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1_000_000.0)
    } else {
        format!("{:.2} s", ns / 1_000_000_000.0)
    }
}

/// What the tables need about one scene besides criterion's timings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SceneFacts {
    /// The scene.
    pub spec: SceneSpec,
    /// `history_bytes / (hitboxes * capacity)`.
    pub bytes_per_hitbox_frame: f64,
    /// Frames the history holds.
    pub capacity: usize,
    /// Fraction of the scene's shots that hit something (lagcomp, at the rewound time).
    pub hit_rate: f64,
}

/// The ratios of one scene.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratios {
    /// `record_lagcomp / record_memcpy`.
    pub record_over_memcpy: f64,
    /// `record_lagcomp / record_memcpy_ring`.
    pub record_over_ring_memcpy: f64,
    /// `record_copy_rows / record_memcpy`: what the machine allows a recorder of this
    /// layout against the floor's baseline.
    pub copy_rows_over_memcpy: f64,
    /// `record_lagcomp / record_copy_rows`: what the recorder adds to a bare copy.
    pub record_over_copy_rows: f64,
    /// `query_lagcomp / min(parry_bvh, parry_compound)`.
    pub query_over_parry: f64,
    /// `rapier_rewind / query_lagcomp`.
    pub rapier_over_query: f64,
    /// `rapier_rewind_set_aabb / query_lagcomp`.
    pub rapier_set_aabb_over_query: f64,
}

/// Computes the ratios from median times (estimates in [`bench::ALL`] order).
#[must_use]
pub fn ratios(est: &[Estimate; 9]) -> Ratios {
    let [
        record,
        memcpy,
        memcpy_ring,
        copy_rows,
        query,
        bvh,
        compound,
        rapier,
        rapier_set_aabb,
    ] = est.map(|e| e.median);
    Ratios {
        record_over_memcpy: record / memcpy,
        record_over_ring_memcpy: record / memcpy_ring,
        copy_rows_over_memcpy: copy_rows / memcpy,
        record_over_copy_rows: record / copy_rows,
        query_over_parry: query / bvh.min(compound),
        rapier_over_query: rapier / query,
        rapier_set_aabb_over_query: rapier_set_aabb / query,
    }
}

fn mark(ok: bool) -> &'static str {
    if ok { "" } else { " **(floor NOT met)**" }
}

/// Renders the ratio table, the growth line, the floor check and the absolute times.
///
/// # Errors
/// When an estimate is missing.
pub fn render(dir: &Path, scenes: &[SceneFacts]) -> Result<String, String> {
    let mut all = Vec::new();
    for facts in scenes {
        let mut est = [Estimate {
            median: 0.0,
            mean: 0.0,
            mean_lo: 0.0,
            mean_hi: 0.0,
        }; 9];
        for (slot, name) in est.iter_mut().zip(bench::ALL) {
            *slot = read_estimate(dir, facts.spec.name, name)?;
        }
        all.push((facts, est, ratios(&est)));
    }
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(
        w,
        "| scene | record/memcpy | query/parry | rapier/query | bytes/hitbox-frame |"
    );
    let _ = writeln!(w, "|---|---:|---:|---:|---:|");
    for (facts, _, r) in &all {
        let s = &facts.spec;
        let _ = writeln!(
            w,
            "| {} entities x {} hitboxes @ {} Hz | {:.2}{} | {:.2}{} | {:.0}{} | {:.2}{} |",
            s.entities,
            s.bones,
            s.tick_rate,
            r.record_over_memcpy,
            mark(r.record_over_memcpy <= floor::RECORD_OVER_MEMCPY),
            r.query_over_parry,
            mark(r.query_over_parry <= floor::QUERY_OVER_PARRY),
            r.rapier_over_query,
            mark(r.rapier_over_query >= floor::RAPIER_OVER_QUERY),
            facts.bytes_per_hitbox_frame,
            mark(facts.bytes_per_hitbox_frame <= floor::BYTES_PER_HITBOX_FRAME),
        );
    }
    let _ = writeln!(
        w,
        "| *floor* | *<= {}* | *<= {}* | *>= {}* | *<= {}* |",
        floor::RECORD_OVER_MEMCPY,
        floor::QUERY_OVER_PARRY,
        floor::RAPIER_OVER_QUERY,
        floor::BYTES_PER_HITBOX_FRAME
    );
    let query_at = bench::ALL
        .iter()
        .position(|&name| name == bench::QUERY)
        .unwrap_or_default();
    let query_of = |entities: usize| {
        all.iter()
            .find(|(f, _, _)| f.spec.entities == entities)
            .map(|(_, e, _)| e[query_at].median)
    };
    if let (Some(q200), Some(q5000)) = (query_of(200), query_of(5000)) {
        let growth = q5000 / q200;
        let _ = writeln!(
            w,
            "\nQuery growth 200 -> 5000 entities: **{growth:.2}x** ({} -> {}; floor < {}){}",
            format_ns(q200),
            format_ns(q5000),
            floor::GROWTH_200_TO_5000,
            mark(growth < floor::GROWTH_200_TO_5000),
        );
    }
    let _ = writeln!(
        w,
        "\nRecording against a memcpy of the same bytes into the next slot of a ring as long \
         as the history (a cold destination, as a ring of snapshots has): record/memcpy-ring \
         = {}.",
        all.iter()
            .map(|(f, _, r)| format!("{:.2} ({})", r.record_over_ring_memcpy, f.spec.name))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        w,
        "\nA bare copy of the bytes a tick stores (each bone's translation and rotation, \
         field by field, into the next row of a ring as long as the history; nothing checked \
         or bounded) against the memcpy: copy-rows/memcpy = {}; recording against that copy: \
         record/copy-rows = {}.",
        all.iter()
            .map(|(f, _, r)| format!("{:.2} ({})", r.copy_rows_over_memcpy, f.spec.name))
            .collect::<Vec<_>>()
            .join(", "),
        all.iter()
            .map(|(f, _, r)| format!("{:.2} ({})", r.record_over_copy_rows, f.spec.name))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        w,
        "\nThe same rapier rewind with the broad phase refreshed by one `set_aabb` per \
         collider instead of `update` (no pair search): rapier/query = {}.",
        all.iter()
            .map(|(f, _, r)| format!("{:.0} ({})", r.rapier_set_aabb_over_query, f.spec.name))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        w,
        "\nAbsolute times, median per iteration (the mean's 95 % confidence interval in \
         brackets):\n"
    );
    let _ = write!(w, "| benchmark |");
    for (f, _, _) in &all {
        let _ = write!(w, " {} |", f.spec.name);
    }
    let _ = writeln!(w, "\n|---|{}", "---:|".repeat(all.len()));
    for (k, name) in bench::ALL.iter().enumerate() {
        let _ = write!(w, "| `{name}` |");
        for (_, est, _) in &all {
            let e = &est[k];
            let _ = write!(
                w,
                " {} [{} .. {}] |",
                format_ns(e.median),
                format_ns(e.mean_lo),
                format_ns(e.mean_hi)
            );
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(
        w,
        "\nScene facts: {}",
        all.iter()
            .map(|(f, _, _)| format!(
                "{}: {} hitboxes, {} frames kept, {:.0} % of shots hit",
                f.spec.name,
                f.spec.entities * usize::from(f.spec.bones),
                f.capacity,
                f.hit_rate * 100.0
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    Ok(out)
}
