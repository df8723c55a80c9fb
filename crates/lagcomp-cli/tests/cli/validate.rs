//! `lagcomp validate` end to end: the real binary on the documented example recording.

use std::path::PathBuf;

use lagcomp_validate::recording::Recording;

use crate::{lagcomp, text};

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lagcomp-validate/tests/data/example.jsonl")
}

#[test]
fn unchanged_rules_reproduce_every_recorded_verdict() {
    let out = lagcomp(&["validate", example().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("5 claims re-validated"), "{stdout}");
    assert!(
        stdout.contains("0 of 5 recorded verdicts differ"),
        "{stdout}"
    );
    for label in ["confirmed", "miss", "blocked", "replayed", "fire_rate"] {
        assert!(stdout.contains(label), "{label} missing from\n{stdout}");
    }
}

#[test]
fn json_prints_one_verdict_line_per_claim() {
    let out = lagcomp(&["validate", example().to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    for line in &lines {
        let value: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        assert_eq!(value["type"], "verdict", "{line}");
        assert!(value["outcome"].is_string(), "{line}");
    }
    // The summary went to stderr.
    assert!(text(&out.stderr).contains("claims re-validated"));
}

#[test]
fn diff_lists_the_claims_new_rules_change() {
    let file = std::fs::File::open(example()).unwrap();
    let recording = Recording::read(std::io::BufReader::new(file)).unwrap();
    let mut rules = recording.rules.clone().expect("the example has rules");
    for weapon in rules.weapons.values_mut() {
        weapon.max_range = 1.0;
    }
    let dir = std::env::temp_dir().join(format!("lagcomp-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("short.toml");
    std::fs::write(&path, rules.to_toml()).unwrap();

    let out = lagcomp(&[
        "validate",
        example().to_str().unwrap(),
        "--rules",
        path.to_str().unwrap(),
        "--diff",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // At 1 m range the blocked shot becomes a miss, and the claimed head shot lies beyond
    // the weapon's reach: a tampered claim.
    assert!(
        stdout.contains("2 of 5 recorded verdicts differ"),
        "{stdout}"
    );
    assert!(stdout.contains("confirmed -> tampered_claim"), "{stdout}");
    assert!(stdout.contains("blocked -> miss"), "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_input_fails_with_the_line_and_no_summary() {
    let dir = std::env::temp_dir().join(format!("lagcomp-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let example = std::fs::read_to_string(example()).unwrap();
    let mut lines: Vec<&str> = example.lines().collect();
    // Frames of ticks 1 and 2 swapped: tick 1 (line 9) comes after tick 2.
    lines.swap(7, 8);
    let shuffled = dir.join("shuffled.jsonl");
    std::fs::write(&shuffled, lines.join("\n") + "\n").unwrap();
    // Cut in the middle of a line that is followed by more: an error, not a torn tail.
    let cut = example[..example.len() / 2].lines().count();
    let broken = dir.join("broken.jsonl");
    let middle = example.len() / 2;
    std::fs::write(
        &broken,
        [&example[..middle], "\n", &example[middle..]].concat(),
    )
    .unwrap();
    for (path, line) in [(&shuffled, 9), (&broken, cut)] {
        let out = lagcomp(&["validate", path.to_str().unwrap()]);
        assert!(!out.status.success());
        assert!(text(&out.stdout).is_empty(), "no partial summary");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(&format!("line {line}:")), "{stderr}");
    }
    let missing = lagcomp(&["validate", "/nonexistent/recording.jsonl"]);
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("opening"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_recording_that_ends_mid_record_is_validated_up_to_its_last_complete_line() {
    let dir = std::env::temp_dir().join(format!("lagcomp-cli-torn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let example = std::fs::read_to_string(example()).unwrap();
    // The last line (the last verdict) cut in half, as a server killed mid-write leaves it.
    let last = example.trim_end().rfind('\n').unwrap() + 1;
    let cut = last + (example.len() - last) / 2;
    let torn = dir.join("torn.jsonl");
    std::fs::write(&torn, &example[..cut]).unwrap();
    let lines = example.lines().count();
    let out = lagcomp(&["validate", torn.to_str().unwrap(), "--diff"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("line {lines}: the file ends mid-record")),
        "{stderr}"
    );
    // Every claim is re-validated; the last one's verdict line was lost.
    assert!(stdout.contains("5 claims re-validated"), "{stdout}");
    assert!(
        stdout.contains("0 of 4 recorded verdicts differ"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn scene_writes_the_claims_picture_as_glb() {
    let dir = std::env::temp_dir().join(format!("lagcomp-cli-scene-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let recording = example();
    let scene = |extra: &[&str], path: &std::path::Path| {
        let mut args = vec!["validate", recording.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend(["--gltf", path.to_str().unwrap()]);
        lagcomp(&args)
    };
    let path = dir.join("seq1.glb");
    let out = scene(&["--scene", "1"], &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("seq 1: confirmed"),
        "{}",
        text(&out.stdout)
    );
    // The library's scene, byte for byte (lagcomp-gltf's tests run the Khronos
    // validator and a browser on it).
    let file = std::fs::File::open(&recording).unwrap();
    let read = Recording::read(std::io::BufReader::new(file)).unwrap();
    let expected = lagcomp_gltf::scene_of_shot(&read, None, 1, None)
        .unwrap()
        .to_glb()
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), expected);

    // A seq nobody sent, and a shooter that did not send it: errors, no file.
    let missing = dir.join("missing.glb");
    for (args, error) in [
        (&["--scene", "99"][..], "no claim with seq 99"),
        (
            &["--scene", "1", "--shooter", "1"][..],
            "no claim with seq 1 from entity 1v0",
        ),
    ] {
        let out = scene(args, &missing);
        assert!(!out.status.success(), "{args:?}");
        assert!(text(&out.stderr).contains(error), "{}", text(&out.stderr));
        assert!(!missing.exists());
    }
    // --scene without --gltf is refused by the argument parser.
    let out = lagcomp(&["validate", recording.to_str().unwrap(), "--scene", "1"]);
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A format 5 recording with a claim of every weapon kind (written by
/// `lagcomp-validate`'s `recording_kinds` tests).
fn kinds() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lagcomp-validate/tests/data/kinds.jsonl")
}

#[test]
fn every_weapon_kind_is_re_validated_and_tallied_per_kind() {
    let out = lagcomp(&["validate", kinds().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("6 claims re-validated"), "{stdout}");
    assert!(
        stdout.contains("0 of 6 recorded verdicts differ"),
        "{stdout}"
    );
    let row = |kind: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(kind))
            .unwrap_or_else(|| panic!("no {kind} row in\n{stdout}"))
            .split_whitespace()
            .take(6)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(stdout.contains("per weapon kind"), "{stdout}");
    assert_eq!(row("hitscan"), "hitscan 1 1 0 0 0");
    assert_eq!(row("pellets"), "pellets 2 1 0 0 1");
    for kind in ["projectile", "melee", "splash"] {
        assert_eq!(row(kind), format!("{kind} 1 1 0 0 0"));
    }
    // --json: each claim's verdict in its recording line's shape.
    let out = lagcomp(&["validate", kinds().to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let types: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON")["type"].to_string())
        .collect();
    assert_eq!(
        types,
        ["\"verdict\""]
            .into_iter()
            .chain(["\"weapon_verdict\""; 5])
            .collect::<Vec<_>>()
    );
}
