//! `lagcomp serve`: the authoritative game server over real UDP.
//!
//! This file turns the command line into a [`ServeConfig`] and the output files, prints
//! the bound address first (`lagcomp serve: listening on ADDR`, so a script or test can
//! pass port 0 and read the port), a short status line every second (the full one with
//! `--verbose-status`), and the run's totals when
//! it stops: on Ctrl-C, SIGTERM or SIGHUP, or after `--duration`. The recording (if
//! `--record`) is complete then, and `lagcomp validate` re-runs it to the same verdicts.
//! Both files are flushed once a tick as well: a server killed outright loses at most the
//! tick it was in, and the readers use every line before a torn last one.
//! The server itself is `lagcomp_udp::server`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use lagcomp_game::body::ArenaSpec;
use lagcomp_game::interest::InterestConfig;
use lagcomp_udp::server::{GameServer, MAX_TICK_RATE, Outputs, ServeConfig, Status};
use lagcomp_validate::AuditLog;

/// Arguments of `lagcomp serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address to listen on, e.g. 127.0.0.1:7777 (port 0 picks a free one; the first line
    /// printed names it).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// Server ticks per second (1 to 128).
    #[arg(long, value_name = "HZ", default_value_t = 64.0, value_parser = tick_rate)]
    tick_rate: f64,
    /// Snapshots per second (default: the tick rate).
    #[arg(long, value_name = "HZ", value_parser = positive)]
    send_rate: Option<f64>,
    /// The rewind window, seconds: how long the history keeps and how far back the rifle's
    /// shots may reach (one setting); hold the longest round trip plus interpolation delay
    /// you serve.
    #[arg(long, value_name = "SECS", default_value_t = lagcomp::DEFAULT_MAX_REWIND, value_parser = positive)]
    max_rewind: f64,
    /// Write every verdict as a line of JSON to this file.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Write the match recording (docs/FORMAT.md) to this file, for `lagcomp validate`.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Stop after this many seconds (default: run until Ctrl-C or SIGTERM).
    #[arg(long, value_name = "SECS", value_parser = positive)]
    duration: Option<f64>,
    /// Seed of the players' movement.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The most players at once (up to 1024).
    #[arg(long, default_value_t = 256)]
    max_clients: usize,
    /// Size the arena for this many players: the standard arena's floor per player and
    /// walls in proportion (default: the standard arena, 46 m square, sized for 8). Sent
    /// to every client in its welcome.
    #[arg(long, value_name = "PLAYERS")]
    arena_for: Option<usize>,
    /// Seed of the arena's walls (default: the standard arena's).
    #[arg(long, value_name = "SEED")]
    arena_seed: Option<u64>,
    /// Send each client only the bodies within this many metres of its own (interest
    /// management), or "all" to send everyone to everyone. The default covers the whole
    /// standard arena.
    #[arg(long, value_name = "METRES|all", default_value = "70", value_parser = view_radius)]
    view_radius: ViewRadius,
    /// A body in a client's view leaves it only this many metres past the view radius.
    #[arg(long, value_name = "METRES", default_value_t = 5.0, value_parser = distance)]
    view_hysteresis: f32,
    /// Validate each tick's shots on a thread pool instead of the tick's thread (faster
    /// only with cores to spare).
    #[arg(long)]
    parallel_validation: bool,
    /// Hand each tick's datagrams to the socket on a second thread while the tick's
    /// thread encrypts the next ones (only worth it with a core to spare: slower on a
    /// machine whose cores are busy).
    #[arg(long)]
    send_thread: bool,
    /// Wait for datagrams and ticks by polling without sleeping: costs a core, and keeps
    /// it (on a virtual machine, ticks that start on a CPU that was idle are slower).
    #[arg(long)]
    busy_poll: bool,
    /// netcode private key (a file as `lagcomp key` writes it): clients then join only with
    /// connect tokens minted with it. Without one the server runs netcode's unsecure mode,
    /// for tests and lab networks only: anyone who reaches the port may join and send
    /// whatever a client may send, and anyone who sees the traffic can read and forge it
    /// (the keys travel in the clear). In either mode, connection requests are limited per
    /// source address and for everyone; in unsecure mode a client's token must expire
    /// within 45 s (renet's own unsecure clients make 300 s ones and are refused).
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// An address connect tokens may name for this server, where clients reach it
    /// (repeatable; default: the listen address). Needed with --key-file when listening on
    /// 0.0.0.0 or behind a proxy.
    #[arg(long, value_name = "ADDR")]
    public_addr: Vec<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics (port 0 picks a free one; the
    /// lines printed at the start name it): verdicts by outcome and reason, shots, tick
    /// work times, players, malformed messages, bytes sent and received. Anyone who
    /// reaches the address can read them (default: no metrics endpoint).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Print the full status line each second (tick work by part, CPU times, verdicts by
    /// outcome, snapshots, every kind of drop) instead of the short one (tick, players,
    /// shots a second, the 99th percentile of the tick's work in ms, everything dropped).
    #[arg(long)]
    verbose_status: bool,
}

/// `--view-radius`: metres, or everyone.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ViewRadius(Option<f32>);

fn view_radius(text: &str) -> Result<ViewRadius, String> {
    if text.trim() == "all" {
        return Ok(ViewRadius(None));
    }
    distance(text).map(|m| ViewRadius(Some(m)))
}

/// A finite number of metres, at least 0.
fn distance(text: &str) -> Result<f32, String> {
    let value: f32 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of metres"))?;
    if value.is_finite() && (0.0..=1.0e5).contains(&value) {
        Ok(value)
    } else {
        Err("must be 0 to 1e5 metres".to_owned())
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    // Errors the server logs (a contained panic, with its sender) go to stderr; RUST_LOG
    // asks for more.
    let _ = tracing_subscriber::fmt()
        .with_writer(io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .try_init();
    let mut config = ServeConfig::new(resolve(&args.listen)?);
    config.tick_rate = args.tick_rate;
    config.send_rate = args.send_rate.unwrap_or(args.tick_rate);
    config.max_rewind = args.max_rewind;
    config.seed = args.seed;
    config.max_clients = args.max_clients;
    if let Some(players) = args.arena_for {
        config.arena = ArenaSpec::for_players(players);
    }
    if let Some(seed) = args.arena_seed {
        config.arena.seed = seed;
    }
    config.parallel_validation = args.parallel_validation;
    config.send_thread = args.send_thread;
    config.busy_poll = args.busy_poll;
    config.private_key = crate::key::read_key_file(args.key_file.as_deref())?;
    config.public_addresses = args
        .public_addr
        .iter()
        .map(|a| resolve(a))
        .collect::<anyhow::Result<_>>()?;
    config.metrics = args.metrics.as_deref().map(resolve).transpose()?;
    config.interest = args.view_radius.0.map(|radius| InterestConfig {
        radius,
        hysteresis: args.view_hysteresis,
    });
    let mut outputs = Outputs::default();
    if let Some(path) = &args.audit {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        outputs.audit = Some(AuditLog::new(Box::new(BufWriter::new(file))));
    }
    if let Some(path) = &args.record {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        outputs.recording = Some(Box::new(BufWriter::new(file)));
    }
    let server = GameServer::bind(config, outputs)?;
    let mut out = io::stdout().lock();
    writeln!(out, "lagcomp serve: listening on {}", server.local_addr())?;
    let c = server.config();
    writeln!(
        out,
        "  tick {} Hz, snapshots every {} tick(s), rewind window {} s, up to {} players, seed {}; \
         {}",
        c.tick_rate,
        c.send_every(),
        c.max_rewind,
        c.max_clients,
        c.seed,
        if c.private_key.is_some() {
            "netcode secure mode (clients need a connect token minted with the key)"
        } else {
            "netcode unsecure mode (anyone who reaches the port may join)"
        }
    )?;
    writeln!(
        out,
        "  arena {} m square, {} walls (seed {}); {}",
        2.0 * c.arena.half_size,
        c.arena.walls,
        c.arena.seed,
        c.interest.map_or_else(
            || "every client sent every body".to_owned(),
            |i| format!(
                "each client sent the bodies within {} m (kept to {} m)",
                i.radius,
                i.radius + i.hysteresis
            )
        )
    )?;
    if let Some(addr) = server.metrics_addr() {
        writeln!(out, "  metrics: http://{addr}/metrics")?;
    }
    out.flush()?;
    drop(out);

    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::Release))
        .context("cannot catch Ctrl-C")?;
    let mut write_error = None;
    let summary = server.run(
        &stop,
        args.duration.map(Duration::from_secs_f64),
        |status| {
            let mut out = io::stdout().lock();
            let line = if args.verbose_status {
                writeln!(out, "[{:>5.0} s] {status}", status.elapsed)
            } else {
                writeln!(out, "[{:>5.0} s] {}", status.elapsed, status.brief())
            }
            .and_then(|()| out.flush());
            if let Err(error) = line {
                // Nobody reads the status any more (a closed pipe): stop cleanly.
                write_error.get_or_insert(error);
                stop.store(true, Ordering::Release);
            }
        },
    )?;
    let mut out = io::stdout().lock();
    print_summary(&mut out, &summary.status)?;
    if let (Some(lines), Some(path)) = (summary.recording_lines, &args.record) {
        writeln!(out, "  recording: {lines} lines in {}", path.display())?;
    }
    if let (Some(verdicts), Some(path)) = (summary.audited, &args.audit) {
        writeln!(
            out,
            "  audit log: {verdicts} verdicts in {}",
            path.display()
        )?;
    }
    out.flush()?;
    if let Some(error) = write_error {
        return Err(error).context("writing the status");
    }
    Ok(())
}

/// The whole run's figures.
fn print_summary(out: &mut impl Write, s: &Status) -> io::Result<()> {
    writeln!(out, "lagcomp serve: stopped after {:.1} s", s.elapsed)?;
    let ms = |t: Option<f64>| t.map_or_else(|| "-".to_owned(), |t| format!("{:.3} ms", t * 1e3));
    writeln!(
        out,
        "  ticks: {} ({} late, {} skipped), work p50 {}, p99 {}, max {} of a {:.3} ms budget",
        s.ticks,
        s.late_ticks,
        s.skipped_ticks,
        ms(s.tick_p50),
        ms(s.tick_p99),
        ms(s.tick_max),
        s.budget * 1e3
    )?;
    writeln!(
        out,
        "  of which p99: moving and recording {}, validating {}, sending snapshots {}",
        ms(s.record_p99),
        ms(s.validate_p99),
        ms(s.send_p99)
    )?;
    writeln!(
        out,
        "  tick CPU time (the server's threads' own, without waiting for a core): p50 {}, p99 {}{}",
        ms(s.cpu_p50),
        ms(s.cpu_p99),
        if s.send_cpu_p50.is_some() {
            format!(
                "; of which the send thread p50 {}, p99 {}",
                ms(s.send_cpu_p50),
                ms(s.send_cpu_p99)
            )
        } else {
            String::new()
        }
    )?;
    if s.snapshots > 0 {
        writeln!(
            out,
            "  snapshots: {} to clients, {:.2} parts and {:.2} entities each; {} datagrams \
             sent by the ticks, {:.2} per snapshot",
            s.snapshots,
            s.snapshot_parts as f64 / s.snapshots as f64,
            s.snapshot_entities as f64 / s.snapshots as f64,
            s.tick_datagrams,
            s.tick_datagrams as f64 / s.snapshots as f64
        )?;
    }
    writeln!(
        out,
        "  players: {} joined, {} left; malformed messages: {} ({} clients disconnected)",
        s.joined, s.left, s.malformed, s.kicked
    )?;
    writeln!(
        out,
        "  dropped before netcode: {} datagrams not netcode's framing; connection requests \
         refused: {} (rate limits, or unsecure tokens expiring too late); panics contained: {}",
        s.framing_drops, s.refused_requests, s.contained_panics
    )?;
    let verdicts: Vec<String> = s.verdicts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    writeln!(
        out,
        "  shots validated: {}{}; verdicts given up unacknowledged: {}",
        s.shots,
        if verdicts.is_empty() {
            String::new()
        } else {
            format!(" ({})", verdicts.join(", "))
        },
        s.verdicts_given_up
    )?;
    if s.copies_answered > 0 || s.verdicts_capped > 0 {
        writeln!(
            out,
            "  replayed copies answered from memory (not validated or written again): {}; \
             shots dropped over the cap of verdicts a second per client: {}",
            s.copies_answered, s.verdicts_capped
        )?;
    }
    Ok(())
}

/// The first address `text` (HOST:PORT) resolves to.
pub(crate) fn resolve(text: &str) -> anyhow::Result<SocketAddr> {
    text.to_socket_addrs()
        .with_context(|| format!("{text:?} is not an address (HOST:PORT)"))?
        .next()
        .with_context(|| format!("{text:?} has no address"))
}

/// A finite number above 0.
pub(crate) fn positive(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if value.is_finite() && value > 0.0 && value <= 1.0e7 {
        Ok(value)
    } else {
        Err("must be more than 0 (and at most 1e7)".to_owned())
    }
}

fn tick_rate(text: &str) -> Result<f64, String> {
    let value = positive(text)?;
    if (1.0..=MAX_TICK_RATE).contains(&value) {
        Ok(value)
    } else {
        Err(format!("must be 1 to {MAX_TICK_RATE} Hz"))
    }
}
