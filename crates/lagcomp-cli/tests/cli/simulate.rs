//! `lagcomp simulate`'s options: the 50 / 150 / 500 ms ladder in one command, the scenery, the
//! rewind window and the no-rewind threshold, and what it refuses.

use lagcomp_game::cheat::Cheat;

use crate::{lagcomp, text};

/// Runs `simulate` briefly (4 bots, 10 s unless `extra` says `--duration`, no cheats) with
/// `extra` options, into a temporary report directory; returns its JSON and its table.
fn simulate(name: &str, extra: &[&str]) -> (serde_json::Value, String) {
    let out_dir = std::env::temp_dir().join(format!("lagcomp-cli-{name}-{}", std::process::id()));
    let out_path = out_dir.to_str().expect("a UTF-8 temporary directory");
    let duration = if extra.contains(&"--duration") {
        &[][..]
    } else {
        &["--duration", "10"][..]
    };
    let mut args = vec!["simulate", "--scenario", "high-latency"];
    args.extend_from_slice(duration);
    args.extend_from_slice(&["--bots", "4", "--json", "--out", out_path]);
    args.extend_from_slice(extra);
    let out = lagcomp(&args);
    std::fs::remove_dir_all(&out_dir).ok();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    (json, text(&out.stderr))
}

#[test]
fn the_latency_ladder_runs_in_one_command_and_every_rewind_fits_the_window() {
    // 20 s: the modes judge hitscan claims only, and the sniper rifle's (which the far
    // targets of this scenario get) are penetration claims.
    let (json, table) = simulate("ladder", &["--latencies", "50,150,500", "--duration", "20"]);
    let runs = json["runs"].as_array().expect("runs");
    let names: Vec<&str> = runs.iter().map(|r| r["preset"].as_str().unwrap()).collect();
    assert_eq!(names, ["50/0/0%", "150/0/0%", "500/0/0%"]);
    assert_eq!(json["max_rewind"], 1.0);
    for run in runs {
        let preset = &run["preset"];
        // No jitter and no loss: the round trip and nothing else.
        assert_eq!(
            (run["jitter_ms"].as_f64(), run["loss"].as_f64()),
            (Some(0.0), Some(0.0))
        );
        let full = &run["modes"]["full"];
        assert!(
            full["client_hits"].as_u64().unwrap() >= 10,
            "{preset}: {full}"
        );
        assert_eq!(full["client_hits"], full["agreed"], "{preset}: {full}");
        assert_eq!(run["honest_rejected"], 0, "{preset}");
        // A shot reaches back about a round trip and the interpolation delay.
        let rewind = &run["rewind"];
        let rtt = run["rtt_ms"].as_f64().unwrap();
        let (median, max) = (
            rewind["median_ms"].as_f64().unwrap(),
            rewind["max_ms"].as_f64().unwrap(),
        );
        assert!(rtt < median && max < rtt + 150.0, "{preset}: {rewind}");
        assert_eq!(rewind["beyond_window"], 0, "{preset}");
    }
    assert!(table.contains("window 1 s"), "{table}");
    assert!(table.contains("rewind needed: median"), "{table}");
    assert!(table.contains("rewind needed: how far back"), "{table}");
}

#[test]
fn a_window_too_short_for_the_latency_shows_and_rejects_as_too_old() {
    let (json, table) = simulate("short", &["--latencies", "500", "--max-rewind", "0.5"]);
    let run = &json["runs"][0];
    let shots = run["modes"]["full"]["shots_arrived"].as_u64().unwrap();
    assert!(shots >= 10, "{run}");
    assert_eq!(run["modes"]["full"]["rejections"]["time_too_old"], shots);
    assert_eq!(run["rewind"]["beyond_window"], shots);
    assert!(table.contains("window 0.5 s"), "{table}");
}

#[test]
fn the_no_rewind_threshold_is_named_and_applies_above_it_only() {
    let (json, table) = simulate(
        "threshold",
        &["--latencies", "50,500", "--no-rewind-above-rtt", "0.3"],
    );
    assert_eq!(json["no_rewind_above_rtt"], 0.3);
    assert!(
        table.contains("no rewind above 300 ms round trip"),
        "{table}"
    );
    let full = |i: usize| &json["runs"][i]["modes"]["full"];
    assert_eq!(full(0)["client_hits"], full(0)["agreed"], "50 ms: rewound");
    let (hits, agreed) = (
        full(1)["client_hits"].as_u64().unwrap(),
        full(1)["agreed"].as_u64().unwrap(),
    );
    assert!(
        hits >= 10 && agreed * 5 < hits,
        "500 ms: judged against the present: {}",
        full(1)
    );
}

#[test]
fn bad_latency_options_are_refused_with_a_reason() {
    for (args, says) in [
        (&["--latencies", "fast"][..], "unknown preset \"fast\""),
        (&["--latencies", "100/25/2%"][..], "unknown preset"),
        (&["--latencies=-5"][..], "unknown preset"),
        (
            &["--latencies", "50", "--presets", "LAN"][..],
            "cannot be used with",
        ),
        (
            &["--max-rewind", "0"][..],
            "max rewind must be 0.05 to 10 s",
        ),
        (
            &["--max-rewind", "NaN"][..],
            "max rewind must be 0.05 to 10 s",
        ),
        (&["--no-rewind-above-rtt=-1"][..], "no-rewind threshold"),
    ] {
        let mut all = vec!["simulate", "--scenario", "high-latency", "--duration", "1"];
        all.extend_from_slice(args);
        let out = lagcomp(&all);
        assert!(!out.status.success(), "{args:?} was accepted");
        let err = text(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn the_scenery_is_named_and_no_scenery_plays_the_bare_arena() {
    // Every cheat class, briefly, behind one network.
    let with = |extra: &[&str]| {
        let name = if extra.is_empty() { "scenery" } else { "bare" };
        let out_dir =
            std::env::temp_dir().join(format!("lagcomp-cli-{name}-{}", std::process::id()));
        let mut args = vec![
            "simulate",
            "--scenario",
            "cheats",
            "--presets",
            "40/10/0.2%",
            "--duration",
            "2",
            "--bots",
            "4",
            "--json",
            "--out",
            out_dir.to_str().expect("a UTF-8 temporary directory"),
        ];
        args.extend_from_slice(extra);
        let out = lagcomp(&args);
        std::fs::remove_dir_all(&out_dir).ok();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
        (json, text(&out.stderr))
    };
    let classes = |json: &serde_json::Value| -> Vec<String> {
        json["cheats"]
            .as_array()
            .expect("cheats")
            .iter()
            .map(|c| c["class"].as_str().expect("a class").to_owned())
            .collect()
    };
    let (json, table) = with(&[]);
    let scenery = json["scenery"].as_str().expect("the scenery named");
    assert!(
        scenery.starts_with("3 sliding doors, 1 tram, a wall down from"),
        "{scenery}"
    );
    assert!(table.contains(&format!("scenery: {scenery}")), "{table}");
    assert!(classes(&json).contains(&"through_door".to_owned()));

    let (json, table) = with(&["--no-scenery"]);
    assert_eq!(json["scenery"], serde_json::Value::Null, "{json}");
    assert!(!table.contains("scenery:"), "{table}");
    // The door cheat needs doors: not played on the bare arena; every other class is.
    let bare = classes(&json);
    assert!(!bare.contains(&"through_door".to_owned()), "{bare:?}");
    assert_eq!(bare.len(), Cheat::ALL.len() - 1, "{bare:?}");
}
