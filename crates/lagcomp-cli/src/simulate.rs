//! `lagcomp simulate`: the main job. Plays the scenario's matches (every network preset with
//! the three server modes side by side, then each cheat class), prints the table, and
//! writes the HTML report.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use lagcomp_game::scorecard::CheatResult;
use lagcomp_sim::report::write_report;
use lagcomp_sim::scenario::{Scenario, parse_latency, parse_preset};
use lagcomp_sim::{Mode, SimResult};

/// Arguments of `lagcomp simulate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The scenario: default, quick, cheats or high-latency.
    #[arg(long, default_value = "default")]
    scenario: String,
    /// Seed of everything random: the same seed gives the same numbers (default: the
    /// scenario's, 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Simulated seconds per match, after a 2 s warm-up (default: the scenario's, 30;
    /// quick: 8).
    #[arg(long)]
    duration: Option<f64>,
    /// Bots per match, 2 to 64 (default: the scenario's, 8).
    #[arg(long)]
    bots: Option<usize>,
    /// Server tick rate, Hz, 8 to 256 (default: the scenario's, 64).
    #[arg(long)]
    tick_rate: Option<f64>,
    /// Snapshot send rate, Hz, at most the tick rate (default: the scenario's, 64).
    #[arg(long)]
    send_rate: Option<f64>,
    /// Network presets, comma separated: names (LAN, 40/10/0.2%, 100/25/2%, 200/50/4%,
    /// 300/75/6%) or RTT/JITTER/LOSS% in ms (default: the scenario's: all five named;
    /// quick: LAN,100/25/2%; cheats: none; high-latency: 500/0/0%).
    #[arg(long, value_delimiter = ',', conflicts_with = "latencies")]
    presets: Option<Vec<String>>,
    /// Round trips to test, in ms, comma separated, each a network of its own with no
    /// jitter and no loss, instead of --presets: `--latencies 50,150,500` is the 50 / 150
    /// / 500 ms test Unity recommends (default: the scenario's presets).
    #[arg(long, value_name = "MS", value_delimiter = ',')]
    latencies: Option<Vec<String>>,
    /// The rewind window, seconds, 0.05 to 10: how long the server's history keeps and
    /// how far back the rifle's shots may reach (default: the scenario's, 1).
    #[arg(long, value_name = "SECS")]
    max_rewind: Option<f64>,
    /// The rifle's no-rewind threshold, seconds of round trip, 0 to 60: shooters measured
    /// above it are judged against the present, not rewound, and must lead their targets
    /// (default: none, everyone is rewound).
    #[arg(long, value_name = "SECS")]
    no_rewind_above_rtt: Option<f64>,
    /// Print the whole result as JSON on stdout (the table goes to stderr).
    #[arg(long)]
    json: bool,
    /// Trust the round trip measured from probes alone, without holding it to what the
    /// bots' snapshot acknowledgements show (the fake-latency defence): to measure what
    /// the defence changes.
    #[arg(long)]
    no_echo_ceiling: bool,
    /// Play on the bare arena, without the scenery (sliding doors, a tram, a wall blown
    /// down and rebuilt mid-match, a triangle-mesh level): to measure what it changes.
    /// The through_door cheat class is not played then.
    #[arg(long)]
    no_scenery: bool,
    /// Where the report goes.
    #[arg(long, default_value = "report")]
    out: PathBuf,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let mut scenario = Scenario::named(&args.scenario)?;
    scenario.echo_ceiling = !args.no_echo_ceiling;
    scenario.scenery = !args.no_scenery;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    if let Some(d) = args.duration {
        anyhow::ensure!(
            d.is_finite() && d > 0.0 && d <= 3600.0,
            "duration must be in (0, 3600] s"
        );
        scenario.duration = d;
    }
    if let Some(b) = args.bots {
        anyhow::ensure!((2..=64).contains(&b), "bots must be 2 to 64");
        scenario.bots = b;
    }
    if let Some(t) = args.tick_rate {
        anyhow::ensure!(
            t.is_finite() && (8.0..=256.0).contains(&t),
            "tick rate must be 8 to 256 Hz"
        );
        scenario.tick_rate = t;
    }
    if let Some(s) = args.send_rate {
        anyhow::ensure!(
            s.is_finite() && (1.0..=256.0).contains(&s),
            "send rate must be 1 to 256 Hz"
        );
        scenario.send_rate = s;
    }
    if let Some(presets) = &args.presets {
        scenario.presets = presets
            .iter()
            .map(|p| parse_preset(p))
            .collect::<Result<_, _>>()?;
    }
    if let Some(latencies) = &args.latencies {
        scenario.presets = latencies
            .iter()
            .map(|rtt| parse_latency(rtt))
            .collect::<Result<_, _>>()?;
    }
    if let Some(window) = args.max_rewind {
        anyhow::ensure!(
            window.is_finite() && (0.05..=10.0).contains(&window),
            "max rewind must be 0.05 to 10 s"
        );
        scenario.max_rewind = window;
    }
    if let Some(rtt) = args.no_rewind_above_rtt {
        anyhow::ensure!(
            rtt.is_finite() && (0.0..=60.0).contains(&rtt),
            "the no-rewind threshold must be 0 to 60 s of round trip"
        );
        scenario.no_rewind_above_rtt = Some(rtt);
    }

    let matches = scenario.matches().len() as u64;
    let bar = ProgressBar::new(matches * 100).with_style(
        ProgressStyle::with_template("{spinner} {msg:<22} {wide_bar} {percent:>3}% {eta}")
            .expect("a valid template"),
    );
    let result = scenario.run(|index, label, fraction| {
        bar.set_message(label.to_owned());
        bar.set_position(index as u64 * 100 + (fraction * 100.0) as u64);
    });
    bar.finish_and_clear();

    let page = write_report(&result, &args.out)
        .with_context(|| format!("writing the report into {}", args.out.display()))?;
    if args.json {
        let stdout = io::stdout();
        let mut out = stdout.lock();
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
        print_table(&mut io::stderr().lock(), &result, &page)?;
    } else {
        print_table(&mut io::stdout().lock(), &result, &page)?;
    }
    Ok(())
}

/// A fraction as a percentage with two decimals (`n/a` when there was nothing to divide).
pub(crate) fn percent(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2} %", 100.0 * x)
    } else {
        "n/a".to_owned()
    }
}

fn print_table(out: &mut impl Write, result: &SimResult, page: &std::path::Path) -> io::Result<()> {
    writeln!(
        out,
        "scenario {} · seed {} · {} s per match · {} bots · tick {} Hz · send {} Hz · window {} s{}",
        result.scenario,
        result.seed,
        result.duration,
        result.bots,
        result.tick_rate,
        result.send_rate,
        result.max_rewind,
        result
            .no_rewind_above_rtt
            .map(|rtt| format!(" · no rewind above {} ms round trip", rtt * 1000.0))
            .unwrap_or_default(),
    )?;
    if let Some(scenery) = &result.scenery {
        writeln!(out, "scenery: {scenery}")?;
    }
    if !result.runs.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{:<12} {:<24} {:>6} {:>7} {:>10} {:>10} {:>6} {:>9}",
            "network", "mode", "shots", "hits", "confirmed", "agreement", "false", "rejected"
        )?;
        for run in &result.runs {
            for mode in Mode::ALL {
                let Some(m) = run.modes.get(&mode) else {
                    continue;
                };
                let rejected: u64 = m.rejections.values().sum();
                writeln!(
                    out,
                    "{:<12} {:<24} {:>6} {:>7} {:>10} {:>10} {:>6} {:>9}",
                    run.preset,
                    mode.label(),
                    m.shots_arrived,
                    m.client_hits,
                    m.confirmed,
                    percent(m.agreement),
                    m.false_confirmations,
                    if mode == Mode::Full {
                        rejected.to_string()
                    } else {
                        "-".to_owned()
                    },
                )?;
            }
            let r = &run.reconstruction;
            writeln!(
                out,
                "{:<12} reconstruction error: mean {:.3} mm, p99 {:.3} mm, max {:.3} mm over {} shots",
                "", r.mean_mm, r.p99_mm, r.max_mm, r.samples
            )?;
            let w = &run.rewind;
            writeln!(
                out,
                "{:<12} rewind needed: median {:.0} ms, p99 {:.0} ms, max {:.0} ms; {} of {} shots beyond the window",
                "", w.median_ms, w.p99_ms, w.max_ms, w.beyond_window, w.shots
            )?;
            if run.blocked_by_movers > 0 {
                writeln!(
                    out,
                    "{:<12} doors and tram: {} honest shots blocked, {} of them seen as hits by their client",
                    "", run.blocked_by_movers, run.blocked_by_movers_disputed
                )?;
            }
            let count = |name: &str| run.refused.get(name).copied().unwrap_or(0);
            writeln!(
                out,
                "{:<12} refused honestly (agreed, no damage): {} spawn-protected, {} dodged",
                "",
                count("invulnerable"),
                count("dodged")
            )?;
        }
        writeln!(out)?;
        out.write_all(NETWORK_LEGEND.as_bytes())?;
        out.write_all(AGREEMENT_LEGEND.as_bytes())?;
        out.write_all(RECONSTRUCTION_LEGEND.as_bytes())?;
        print_weapons(out, result)?;
    }
    print_cheats(out, &result.cheats)?;
    writeln!(out)?;
    writeln!(out, "report: {}", page.display())?;
    Ok(())
}

/// The per-weapon table: each weapon's honest claims through the full validator, per
/// network (nothing when no run judged a claim per weapon).
fn print_weapons(out: &mut impl Write, result: &SimResult) -> io::Result<()> {
    if result.runs.iter().all(|run| run.weapons.is_empty()) {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<12} {:<16} {:<11} {:>6} {:>7} {:>10} {:>10} {:>6} {:>9}",
        "network",
        "weapon",
        "kind",
        "claims",
        "hits",
        "confirmed",
        "agreement",
        "false",
        "rejected"
    )?;
    for run in &result.runs {
        for (arm, m) in &run.weapons {
            writeln!(
                out,
                "{:<12} {:<16} {:<11} {:>6} {:>7} {:>10} {:>10} {:>6} {:>9}",
                run.preset,
                arm.name(),
                arm.kind(),
                m.shots_arrived,
                m.client_hits,
                m.confirmed,
                percent(m.agreement),
                m.false_confirmations,
                m.rejections.values().sum::<u64>(),
            )?;
        }
    }
    writeln!(out)?;
    out.write_all(WEAPON_LEGEND.as_bytes())
}

/// What the per-weapon table means, printed under it.
const WEAPON_LEGEND: &str = "\
weapon     what honest bots fired, each picking what fits the target: the knife within
           reach, the shotgun close, the rocket launcher at mid range (each rocket that
           strikes makes two claims: its flight's, rocket_launcher, and its blast's,
           rocket_blast), the sniper rifle far, the rifle otherwise; every claim judged
           by the full validator (the modes above judge the hitscan claims only)
kind       how the server judges the claim: hitscan (one ray), pellets (the shotgun's
           pellets regenerated from the seed), projectile (the flight re-flown step by
           step), splash (the blast's victims in radius and in sight), melee (the blade's
           sweep), penetration (the sniper round walked through players, walls stop it;
           its shots on an extrapolated picture are plain hitscan claims)
claims     honest claims that reached the server; hits: those whose shooter saw a hit
confirmed  hits the server confirmed as damage (a hit on a dodging or spawn-protected
           player is agreed but refused damage, so confirmed can be below hits)
agreement  share of the hits the server confirmed, or refused as dodged or protected, on
           the player the shooter saw first
false      claims whose shooter saw no hit but the server confirmed one
rejected   honest claims the validator refused (the JSON lists them by reason)
";

/// The cheat table (nothing when no cheat played), as `simulate` and `bots` print it.
pub(crate) fn print_cheats(out: &mut impl Write, cheats: &[CheatResult]) -> io::Result<()> {
    if cheats.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<23} {:>8} {:>9}  outcomes",
        "cheat", "attempts", "accepted"
    )?;
    for c in cheats {
        let outcomes: Vec<String> = c.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(
            out,
            "{:<23} {:>8} {:>9}  {}",
            c.class,
            c.attempts,
            c.accepted,
            outcomes.join(", ")
        )?;
    }
    writeln!(out)?;
    out.write_all(CHEAT_LEGEND.as_bytes())
}

/// What the `network` column of `simulate`'s table means, printed under the table.
const NETWORK_LEGEND: &str = "\
network    the emulated link: RTT/JITTER/LOSS%, e.g. 40/10/0.2% is a 40 ms round trip
           varying by up to 10 ms, with 0.2 % of packets lost each way; LAN is a 0.5 ms
           round trip with no jitter and no loss
mode       how the server judged the very same shots: with no compensation (against the
           targets as they are when the shot arrives), rewound by the server's own guess
           of the shooter's latency, or fully (rewound to the moment the client stamped
           on the shot, after every check of the validator)
";

/// What the agreement table's counters mean, printed under it by `simulate` and `bots`.
pub(crate) const AGREEMENT_LEGEND: &str = "\
shots      honest shots that reached the server
hits       of those, the shots the shooter saw hit someone on screen
confirmed  shots the server confirmed as a hit, whatever the shooter saw: it exceeds
           hits when the server confirms shots the shooter saw miss (see false)
agreement  share of the hits that the server confirmed on the target the shooter saw
           (100 % is perfect; n/a: no hits)
false      shots the shooter saw miss but the server confirmed: someone was hit by a shot
           that missed on the shooter's screen
rejected   honest shots the validator refused (the JSON lists them by reason); - for
           the modes without a validator, which only trace the shot
";

/// What the reconstruction and rewind lines under each network mean.
const RECONSTRUCTION_LEGEND: &str = "\
reconstruction error: how far (largest bone distance) the target the server rebuilt for
           full compensation lay from the one the shooter drew; 0 means exactly
rewind needed: how far back the honest shots reached, from the moment the shooter drew
           to the shot's arrival (a round trip, the interpolation delay, jitter, resends);
           shots beyond the window (the header's) are rejected as time_too_old
doors and tram: honest shots the server found stopped by a door or the tram where the
           shooter drew it: judged blocked (no damage), never rejected; seen as hits:
           the client drew the line clear, an honest hit lost
";

/// What the cheat table's columns mean, printed under it by `simulate` and `bots`.
const CHEAT_LEGEND: &str = "\
attempts   cheating shots that reached the server, the cheat playing against honest bots
accepted   of those, confirmed as hits on a player (anything above 0 is a cheat that got
           through)
outcomes   what became of the attempts: the validator's rejection reasons, or miss and
           blocked for shots it traced and found missing or stopped by a wall or door;
           confirmed_on_vehicle: a shot claimed as a miss that the server traced into
           the tram (a vehicle that can be hit), no player hurt
";
