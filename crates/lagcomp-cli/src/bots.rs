//! `lagcomp bots`: bot clients against a `lagcomp serve` (directly or through `lagcomp
//! proxy`), and the simulator's agreement table built from the verdicts the server sends
//! back.
//!
//! This file parses the command line, runs `lagcomp_udp::bots` and prints the table (or,
//! with `--json`, the whole report as JSON on stdout and the table on stderr). It fails
//! when no bot got connected.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Context;
use lagcomp_game::cheat::Cheat;
use lagcomp_udp::bots::{self, BotsConfig, BotsReport};

use crate::serve::{positive, resolve};
use crate::simulate::{AGREEMENT_LEGEND, percent, print_cheats};

/// Arguments of `lagcomp bots`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The server (or the proxy in front of it), HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    server: String,
    /// How many bots (each its own connection and socket).
    #[arg(long, default_value_t = 8)]
    count: usize,
    /// Cheat classes, comma separated, or "all": the first bot plays the first class, the
    /// second bot the second, and so on; the other bots play fair. Classes: too_old,
    /// backtrack, rapid_fire, snap, far_muzzle, through_walls, tampered_point, replay,
    /// invulnerable, fake_latency, through_door (default: none, every bot plays fair).
    /// "all" leaves out through_door: `lagcomp serve`'s arena has no doors, so that class
    /// would never fire there.
    #[arg(long, value_name = "CLASSES", value_parser = cheats)]
    cheat: Option<Cheats>,
    /// Seconds each bot plays after it is welcomed (the first 2 are its warm-up).
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = positive)]
    duration: f64,
    /// Seed of the bots' aim and pacing.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Frames per second of each bot.
    #[arg(long, value_name = "HZ", default_value_t = 60.0, value_parser = positive)]
    fps: f64,
    /// Threads to spread the bots over (default: up to 2).
    #[arg(long)]
    threads: Option<usize>,
    /// Each bot's pause between shots after the weapon's 100 ms, as MIN,MAX in ms
    /// (uniform): 20,500 plays like the simulator; 0,1 fires about ten shots a second
    /// while a target is in view (a load test).
    #[arg(long, value_name = "MIN,MAX", default_value = "20,500", value_parser = pause)]
    pause_ms: Pause,
    /// Fire this many shots a second (up to the rifle's 10) from the end of the warm-up,
    /// whatever is in view: at the nearest opponent drawn, or along the view when none is
    /// (a load test; cheating bots ignore it). Without it bots fire only at a target in
    /// view, pausing as --pause-ms says (default: off).
    #[arg(long, value_name = "HZ", value_parser = positive)]
    fire_rate: Option<f64>,
    /// Print the whole report as JSON on stdout (the table goes to stderr).
    #[arg(long)]
    json: bool,
    /// The server's netcode private key (as `lagcomp key` writes it): each bot mints its
    /// own connect token with it, as a matchmaker would (default: none, for a server in
    /// netcode's unsecure mode).
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let mut config = BotsConfig::new(resolve(&args.server)?, args.count, args.duration);
    config.cheats = args.cheat.clone().map(|c| c.0).unwrap_or_default();
    config.seed = args.seed;
    config.fps = args.fps;
    config.pause = (args.pause_ms.0 / 1000.0, args.pause_ms.1 / 1000.0);
    config.fire_rate = args.fire_rate;
    config.private_key = crate::key::read_key_file(args.key_file.as_deref())?;
    if let Some(threads) = args.threads {
        config.threads = threads.max(1);
    }
    let report = bots::run(&config)?;
    if args.json {
        let mut out = io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &report).context("writing the report")?;
        writeln!(out)?;
        out.flush()?;
        print_table(&mut io::stderr().lock(), &report)?;
    } else {
        print_table(&mut io::stdout().lock(), &report)?;
    }
    if report.connected == 0 {
        anyhow::bail!("no bot got connected to {}", config.server);
    }
    Ok(())
}

/// A pause range, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pause(f64, f64);

/// `MIN,MAX` in milliseconds, `0 <= MIN < MAX <= 60000`.
fn pause(text: &str) -> Result<Pause, String> {
    let bad = || format!("{text:?} is not MIN,MAX in ms with 0 <= MIN < MAX <= 60000");
    let (min, max) = text.split_once(',').ok_or_else(bad)?;
    let min: f64 = min.trim().parse().map_err(|_| bad())?;
    let max: f64 = max.trim().parse().map_err(|_| bad())?;
    if min.is_finite() && max.is_finite() && 0.0 <= min && min < max && max <= 60_000.0 {
        Ok(Pause(min, max))
    } else {
        Err(bad())
    }
}

/// Cheat classes, in the order the bots play them.
#[derive(Debug, Clone, PartialEq)]
struct Cheats(Vec<Cheat>);

/// `all`, or cheat class names separated by commas.
fn cheats(text: &str) -> Result<Cheats, String> {
    if text.trim() == "all" {
        // `lagcomp serve`'s arena has no doors, and its bots carry the rifle only (the
        // wire carries hitscan claims): a class that needs either would never fire.
        return Ok(Cheats(
            Cheat::ALL
                .into_iter()
                .filter(|c| !c.needs_doors() && !c.needs_arsenal())
                .collect(),
        ));
    }
    text.split(',')
        .map(|name| {
            let name = name.trim();
            Cheat::ALL
                .into_iter()
                .find(|c| c.name() == name)
                .ok_or_else(|| format!("unknown cheat class {name:?}"))
        })
        .collect::<Result<_, _>>()
        .map(Cheats)
}

/// The simulator's table for the full mode, then the cheats.
fn print_table(out: &mut impl Write, r: &BotsReport) -> io::Result<()> {
    writeln!(
        out,
        "{} bots ({} connected) · {} s each",
        r.bots, r.connected, r.duration
    )?;
    for why in &r.dropped {
        writeln!(out, "  dropped: {why}")?;
    }
    let h = &r.honest;
    let rejected: u64 = h.rejections.values().sum();
    writeln!(out)?;
    writeln!(
        out,
        "{:<24} {:>6} {:>7} {:>10} {:>10} {:>6} {:>9}",
        "mode", "shots", "hits", "confirmed", "agreement", "false", "rejected"
    )?;
    writeln!(
        out,
        "{:<24} {:>6} {:>7} {:>10} {:>10} {:>6} {:>9}",
        "full (client-stamped)",
        h.shots_arrived,
        h.client_hits,
        h.confirmed,
        percent(h.agreement),
        h.false_confirmations,
        rejected
    )?;
    if !h.rejections.is_empty() {
        let reasons: Vec<String> = h
            .rejections
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(out, "  rejected: {}", reasons.join(", "))?;
    }
    writeln!(
        out,
        "  fired {}, verdicts missing {} (given up by the server {}), unexpected {}, \
         repeated {}, malformed messages {}",
        h.shots_sent,
        r.unanswered,
        r.verdicts_skipped,
        r.unexpected,
        r.verdicts_repeated,
        r.malformed
    )?;
    writeln!(out)?;
    out.write_all(BOTS_MODE_LEGEND.as_bytes())?;
    out.write_all(AGREEMENT_LEGEND.as_bytes())?;
    out.write_all(VERDICT_DELIVERY_LEGEND.as_bytes())?;
    print_cheats(out, &r.cheats)
}

/// What the bots' one mode is (the simulator compares three).
const BOTS_MODE_LEGEND: &str = "\
mode       the server validates every shot in full: rewound to the moment the bot stamped
           on it, after every check of the validator
";

/// What the counters of the line under the bots' table mean.
const VERDICT_DELIVERY_LEGEND: &str = "\
fired      shots the honest bots fired (shots counts those that reached the server)
verdicts missing: shots whose verdict never came back, lost or still on the way when
           the bot stopped; given up by the server: verdicts it dropped because the bot
           left 256 unacknowledged
unexpected verdicts for shots the bot has no record of (0 unless something is wrong)
repeated   verdicts that arrived again after the bot had them: expected, not an error,
           as the server repeats each verdict in every datagram until the bot
           acknowledges it, so a lost datagram loses no verdict
malformed messages: server messages that did not decode (0 unless something is wrong)
";
