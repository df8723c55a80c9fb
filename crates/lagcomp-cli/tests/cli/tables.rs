//! What the command prints for a person to read: the legends under `simulate`'s and
//! `bots`' tables, and a default named in every `--help` for every option that has one.

use std::net::UdpSocket;

use crate::{lagcomp, text};

/// The agreement table's columns, in `simulate` (after `network`) and in `bots`.
const AGREEMENT_COLUMNS: [&str; 7] = [
    "mode",
    "shots",
    "hits",
    "confirmed",
    "agreement",
    "false",
    "rejected",
];

/// Whether a legend line explains `word`: the word, a gap, then prose (single spaces,
/// which tells it from the table's own rows, whose columns are aligned with runs of them).
fn explains(table: &str, word: &str) -> bool {
    table.lines().any(|line| {
        line.strip_prefix(word).is_some_and(|rest| {
            let prose = rest.trim_start();
            rest.starts_with(' ') && prose.len() > 10 && !prose.contains("  ")
        })
    })
}

#[test]
fn simulate_explains_every_column_under_its_tables_and_keeps_stdout_json() {
    let out_dir = std::env::temp_dir().join(format!("lagcomp-cli-legend-{}", std::process::id()));
    // A short run of every cheat class behind a 40/10/0.2% network.
    let out = lagcomp(&[
        "simulate",
        "--scenario",
        "cheats",
        "--presets",
        "40/10/0.2%",
        "--duration",
        "1",
        "--bots",
        "2",
        "--json",
        "--out",
        out_dir.to_str().expect("a UTF-8 temporary directory"),
    ]);
    std::fs::remove_dir_all(&out_dir).ok();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Stdout is the JSON alone: the table and its legend went to stderr.
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(json["runs"][0]["preset"], "40/10/0.2%");
    let table = text(&out.stderr);
    let cheat_columns = ["attempts", "accepted", "outcomes"];
    for word in ["network"]
        .into_iter()
        .chain(AGREEMENT_COLUMNS)
        .chain(cheat_columns)
    {
        assert!(explains(&table, word), "no legend for {word:?} in\n{table}");
    }
    // The values a newcomer asked about: a preset's three numbers, `-`, confirmed above hits.
    assert!(table.contains("40 ms round trip"), "{table}");
    assert!(table.contains("0.2 % of packets lost each way"), "{table}");
    assert!(
        table.contains("- for\n           the modes without a validator"),
        "{table}"
    );
    assert!(
        table.contains("it exceeds\n           hits when"),
        "{table}"
    );
    assert!(table.contains("reconstruction error: how far"), "{table}");
}

#[test]
fn bots_explain_their_counters_even_when_no_bot_connects() {
    // A socket that never answers: the bot gives up after its 10 s wait for a welcome.
    let silent = UdpSocket::bind("127.0.0.1:0").expect("a free port");
    let server = silent.local_addr().expect("bound").to_string();
    let out = lagcomp(&[
        "bots",
        "--server",
        &server,
        "--count",
        "1",
        "--duration",
        "1",
    ]);
    assert!(!out.status.success(), "no bot could connect");
    assert!(text(&out.stderr).contains("no bot got connected"));
    let table = text(&out.stdout);
    assert!(table.contains("repeated 0"), "{table}");
    let counters = [
        "fired",
        "verdicts missing:",
        "unexpected",
        "repeated",
        "malformed messages:",
    ];
    for word in AGREEMENT_COLUMNS.into_iter().chain(counters) {
        assert!(explains(&table, word), "no legend for {word:?} in\n{table}");
    }
    assert!(table.contains("expected, not an error"), "{table}");
}

/// The subcommands whose options this crate's helpers document here (`serve`'s are
/// checked with `serve`).
const DOCUMENTED: [&str; 4] = ["simulate", "validate", "proxy", "bots"];

#[test]
fn every_optional_value_in_help_names_its_default() {
    for subcommand in DOCUMENTED {
        let out = lagcomp(&[subcommand, "--help"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let help = text(&out.stdout);
        let usage = help
            .lines()
            .find(|l| l.starts_with("Usage:"))
            .expect("a usage line");
        // One entry per option: its first line and the lines indented under it.
        let mut options: Vec<String> = Vec::new();
        for line in help.lines().skip_while(|l| *l != "Options:").skip(1) {
            let trimmed = line.trim_start();
            if trimmed.starts_with('-') {
                options.push(trimmed.to_owned());
            } else if let Some(last) = options.last_mut() {
                last.push(' ');
                last.push_str(trimmed);
            }
        }
        assert!(
            options.len() > 3,
            "{subcommand}: no options parsed from\n{help}"
        );
        for option in options {
            // `--name <VALUE>`: an option taking a value; flags have no default to name.
            let mut words = option.split_whitespace();
            let name = words.next().expect("an option");
            let takes_value = words.next().is_some_and(|w| w.starts_with('<'));
            let required = usage.contains(&format!("{name} <"));
            if takes_value && !required {
                assert!(
                    option.contains("default"),
                    "`lagcomp {subcommand} {name}` names no default: {option}"
                );
            }
        }
    }
}
