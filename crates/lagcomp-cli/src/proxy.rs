//! `lagcomp proxy`: a UDP proxy that puts real datagrams between a client and a server
//! through the link conditioner, so that any client can be tried over a bad network on one
//! machine.
//!
//! This file turns the command line into [`ProxyConfig`] (a preset or explicit knobs for
//! both directions, then per-direction overrides), starts the proxy on its own thread, and
//! prints what it does: first the address it listens on and the conditions each way (a
//! script reads the address from the first line), then a status line every second, then
//! totals when it stops, on Ctrl-C, SIGTERM or SIGHUP, or after `--duration`. The proxy
//! itself is `lagcomp_udp::proxy`.

use std::io::{self, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;
use lagcomp_net::LinkConfig;
use lagcomp_sim::scenario::parse_preset;
use lagcomp_udp::proxy::{
    DirectionStats, MAX_DATAGRAM, Proxy, ProxyConfig, ProxyStats, StatsHandle,
};

/// Largest latency or jitter accepted, ms: a minute is no network's.
const MAX_MS: f64 = 60_000.0;

/// Arguments of `lagcomp proxy`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address the clients send to, e.g. 127.0.0.1:7000 (port 0 picks a free one; the
    /// first line printed names it).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// Address of the server every client's datagrams go to.
    #[arg(long, value_name = "ADDR")]
    upstream: String,
    /// Network preset for both directions: LAN, 40/10/0.2%, 100/25/2%, 200/50/4%,
    /// 300/75/6%, or RTT/JITTER/LOSS% in ms. Each direction gets half the round trip and
    /// its jitter, and the whole loss, half of it in bursts (default: none, a perfect link
    /// changed only by the options below).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["latency", "jitter", "loss"])]
    preset: Option<String>,
    /// One-way latency, both directions, ms (default: 0; not with --preset).
    #[arg(long, value_name = "MS", value_parser = millis)]
    latency: Option<f64>,
    /// Largest deviation from the latency, both directions, ms, uniform, keeping order
    /// (default: 0; not with --preset).
    #[arg(long, value_name = "MS", value_parser = millis)]
    jitter: Option<f64>,
    /// Independent loss, both directions, percent (default: 0; not with --preset).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    loss: Option<f64>,
    /// Share of datagrams delivered twice, both directions, percent (default: 0).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    duplicate: Option<f64>,
    /// Share of datagrams held back so that later ones overtake them, both directions,
    /// percent (default: 0).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    reorder: Option<f64>,
    /// Client-to-server latency, ms (default: --latency's, or the preset's).
    #[arg(long, value_name = "MS", value_parser = millis)]
    up_latency: Option<f64>,
    /// Client-to-server jitter, ms (default: --jitter's, or the preset's).
    #[arg(long, value_name = "MS", value_parser = millis)]
    up_jitter: Option<f64>,
    /// Client-to-server independent loss, percent, replacing a preset's loss, bursts too
    /// (default: --loss's, or the preset's).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    up_loss: Option<f64>,
    /// Client-to-server duplication, percent (default: --duplicate's).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    up_duplicate: Option<f64>,
    /// Client-to-server reordering, percent (default: --reorder's).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    up_reorder: Option<f64>,
    /// Server-to-client latency, ms (default: --latency's, or the preset's).
    #[arg(long, value_name = "MS", value_parser = millis)]
    down_latency: Option<f64>,
    /// Server-to-client jitter, ms (default: --jitter's, or the preset's).
    #[arg(long, value_name = "MS", value_parser = millis)]
    down_jitter: Option<f64>,
    /// Server-to-client independent loss, percent, replacing a preset's loss, bursts too
    /// (default: --loss's, or the preset's).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    down_loss: Option<f64>,
    /// Server-to-client duplication, percent (default: --duplicate's).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    down_duplicate: Option<f64>,
    /// Server-to-client reordering, percent (default: --reorder's).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    down_reorder: Option<f64>,
    /// Seed of the conditioners: the same seed and traffic give the same losses.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many seconds (default: run until Ctrl-C or SIGTERM).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    duration: Option<f64>,
    /// Longest datagram forwarded, bytes; longer ones are dropped and counted as oversized.
    #[arg(long, value_name = "BYTES", default_value_t = MAX_DATAGRAM)]
    max_datagram: usize,
    /// Close a client's session after this many seconds without traffic either way.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = seconds)]
    idle_timeout: f64,
}

/// One direction's knobs from the command line: `None` keeps what is there.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    latency: Option<f64>,
    jitter: Option<f64>,
    loss: Option<f64>,
    duplicate: Option<f64>,
    reorder: Option<f64>,
}

impl Knobs {
    /// `link` with these knobs (ms and percent) set.
    fn apply(self, mut link: LinkConfig) -> LinkConfig {
        if let Some(ms) = self.latency {
            link.latency = ms / 1000.0;
        }
        if let Some(ms) = self.jitter {
            link.jitter = ms / 1000.0;
        }
        if let Some(pct) = self.loss {
            // An explicit rate is the whole loss: a preset's bursts would add to it.
            link.loss = pct / 100.0;
            link.burst = None;
        }
        if let Some(pct) = self.duplicate {
            link.duplicate = pct / 100.0;
        }
        if let Some(pct) = self.reorder {
            link.reorder = pct / 100.0;
        }
        link
    }
}

impl Args {
    /// The conditions `(up, down)`: the preset (or a perfect link), then the knobs for
    /// both directions, then each direction's own.
    fn links(&self) -> anyhow::Result<(LinkConfig, LinkConfig)> {
        let (up, down) = match &self.preset {
            Some(name) => parse_preset(name)?.links(),
            None => (LinkConfig::default(), LinkConfig::default()),
        };
        let both = Knobs {
            latency: self.latency,
            jitter: self.jitter,
            loss: self.loss,
            duplicate: self.duplicate,
            reorder: self.reorder,
        };
        let up_only = Knobs {
            latency: self.up_latency,
            jitter: self.up_jitter,
            loss: self.up_loss,
            duplicate: self.up_duplicate,
            reorder: self.up_reorder,
        };
        let down_only = Knobs {
            latency: self.down_latency,
            jitter: self.down_jitter,
            loss: self.down_loss,
            duplicate: self.down_duplicate,
            reorder: self.down_reorder,
        };
        Ok((
            up_only.apply(both.apply(up)),
            down_only.apply(both.apply(down)),
        ))
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (up, down) = args.links()?;
    let mut config =
        ProxyConfig::new(resolve(&args.listen)?, resolve(&args.upstream)?).with_links(up, down);
    config.seed = args.seed;
    config.max_datagram = args.max_datagram;
    config.idle_timeout = Duration::from_secs_f64(args.idle_timeout);
    let duration = args.duration.map(Duration::from_secs_f64);

    let proxy = Proxy::bind(config)?;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "lagcomp proxy: listening on {}, forwarding to {}",
        proxy.local_addr(),
        proxy.config().upstream
    )?;
    writeln!(out, "  up   (client to server): {}", describe(&up))?;
    writeln!(out, "  down (server to client): {}", describe(&down))?;
    out.flush()?;
    drop(out);

    let stop = proxy.stop_handle();
    ctrlc::set_handler(move || stop.stop()).context("cannot catch Ctrl-C")?;
    let stats = proxy.stats();
    let started = Instant::now();
    let (finished, done) = mpsc::channel();
    let running = std::thread::Builder::new()
        .name("lagcomp-proxy".to_owned())
        .spawn(move || {
            let result = proxy.run(duration);
            // The receiver waits for this or the next status line, whichever comes first.
            let _ = finished.send(());
            result
        })
        .context("cannot start the proxy thread")?;
    report_every_second(&stats, started, &done)?;
    let totals = running
        .join()
        .map_err(|_| anyhow::anyhow!("the proxy thread panicked"))??;
    summarise(&totals, started.elapsed())?;
    Ok(())
}

/// Prints a status line each second until the proxy's thread says it is done.
fn report_every_second(
    stats: &StatsHandle,
    started: Instant,
    done: &mpsc::Receiver<()>,
) -> io::Result<()> {
    let mut last = stats.snapshot();
    let mut second: u32 = 1;
    loop {
        let next = Duration::from_secs(u64::from(second));
        match done.recv_timeout(next.saturating_sub(started.elapsed())) {
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = stats.snapshot();
                let mut out = io::stdout().lock();
                writeln!(out, "{}", status_line(second, &now, &last))?;
                out.flush()?;
                last = now;
                second += 1;
            }
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

/// What happened in the last second.
fn status_line(second: u32, now: &ProxyStats, last: &ProxyStats) -> String {
    let way = |now: &DirectionStats, last: &DirectionStats| {
        let d = now.since(last);
        format!(
            "{} in, {} out, {} lost, {} copies, added {}",
            d.packets_in,
            d.packets_out,
            d.dropped + d.overflowed + d.send_failed,
            d.duplicated,
            d.mean_added_delay()
                .map_or_else(|| "-".to_owned(), |t| format!("{:.1} ms", millis_of(t))),
        )
    };
    let late = now
        .lateness
        .since(&last.lateness)
        .quantile(0.99)
        .map_or_else(|| "-".to_owned(), |t| format!("{:.2} ms", millis_of(t)));
    format!(
        "[{second:>4} s] up: {} | down: {} | sessions: {} | late p99 {late}",
        way(&now.up, &last.up),
        way(&now.down, &last.down),
        now.sessions_open(),
    )
}

/// The totals, when the proxy stops.
fn summarise(stats: &ProxyStats, elapsed: Duration) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "lagcomp proxy: stopped after {:.1} s",
        elapsed.as_secs_f64()
    )?;
    for (name, d) in [("up  ", &stats.up), ("down", &stats.down)] {
        writeln!(
            out,
            "  {name}: {} in ({} bytes), {} out, {} lost, {} copies, {} reordered, \
             {} over the queue limit, {} failed to send, {} left in flight, mean added delay {}",
            d.packets_in,
            d.bytes_in,
            d.packets_out,
            d.dropped,
            d.duplicated,
            d.reordered,
            d.overflowed,
            d.send_failed,
            d.in_flight(),
            d.mean_added_delay()
                .map_or_else(|| "-".to_owned(), |t| format!("{:.2} ms", millis_of(t))),
        )?;
    }
    writeln!(
        out,
        "  sessions: {} opened, {} expired, {} datagrams refused; {} oversized; {} socket errors",
        stats.sessions_opened,
        stats.sessions_expired,
        stats.refused,
        stats.oversized,
        stats.socket_errors,
    )?;
    let late = &stats.lateness;
    match (late.quantile(0.5), late.quantile(0.99), late.max()) {
        (Some(p50), Some(p99), Some(max)) => writeln!(
            out,
            "  scheduling: {} datagrams left p50 <= {:.3} ms, p99 <= {:.3} ms, at most {:.3} ms after due",
            late.count(),
            millis_of(p50),
            millis_of(p99),
            millis_of(max),
        )?,
        _ => writeln!(out, "  scheduling: nothing sent")?,
    }
    out.flush()
}

/// One direction's conditions, in the units of the command line.
fn describe(link: &LinkConfig) -> String {
    format!(
        "latency {:.1} ms +- {:.1} ms, loss {:.2}%{}, duplicate {:.2}%, reorder {:.2}%",
        link.latency * 1000.0,
        link.jitter * 1000.0,
        link.expected_loss() * 100.0,
        if link.burst.is_some() {
            " (partly in bursts)"
        } else {
            ""
        },
        link.duplicate * 100.0,
        link.reorder * 100.0,
    )
}

fn millis_of(t: Duration) -> f64 {
    t.as_secs_f64() * 1000.0
}

/// `text` as a socket address; a host name is looked up and its first address taken.
fn resolve(text: &str) -> anyhow::Result<SocketAddr> {
    text.to_socket_addrs()
        .with_context(|| format!("{text:?} is not an address (HOST:PORT)"))?
        .next()
        .with_context(|| format!("{text:?} has no address"))
}

fn number(text: &str, what: &str, max: f64) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if value.is_finite() && (0.0..=max).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{what} must be 0 to {max}"))
    }
}

fn millis(text: &str) -> Result<f64, String> {
    number(text, "milliseconds", MAX_MS)
}

fn percent(text: &str) -> Result<f64, String> {
    number(text.trim_end_matches('%'), "a percentage", 100.0)
}

fn seconds(text: &str) -> Result<f64, String> {
    let value = number(text, "seconds", 1.0e7)?;
    if value > 0.0 {
        Ok(value)
    } else {
        Err("seconds must be more than 0".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn links(extra: &[&str]) -> Result<(LinkConfig, LinkConfig), String> {
        let mut argv = vec![
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:9",
        ];
        argv.extend_from_slice(extra);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        cli.args.links().map_err(|e| e.to_string())
    }

    #[test]
    fn a_preset_gives_both_directions_half_the_round_trip() {
        let (up, down) = links(&["--preset", "100/25/2"]).unwrap();
        assert_eq!(up, down);
        assert_eq!((up.latency, up.jitter), (0.05, 0.0125));
        assert!((up.expected_loss() - 0.02).abs() < 1e-12);
        assert!(up.burst.is_some());
    }

    #[test]
    fn knobs_apply_to_both_directions_and_overrides_to_one() {
        let (up, down) = links(&[
            "--latency",
            "40",
            "--jitter",
            "5",
            "--loss",
            "1",
            "--duplicate",
            "2%",
            "--reorder",
            "3",
            "--down-latency",
            "80",
            "--up-loss",
            "0",
        ])
        .unwrap();
        assert_eq!(
            (up.latency, up.jitter, up.loss, up.duplicate, up.reorder),
            (0.04, 0.005, 0.0, 0.02, 0.03)
        );
        assert_eq!(
            (
                down.latency,
                down.jitter,
                down.loss,
                down.duplicate,
                down.reorder
            ),
            (0.08, 0.005, 0.01, 0.02, 0.03)
        );
    }

    #[test]
    fn an_explicit_loss_replaces_a_presets_bursts() {
        let (up, down) = links(&["--preset", "300/75/6%", "--down-loss", "1"]).unwrap();
        assert!(up.burst.is_some());
        assert_eq!((down.burst, down.loss), (None, 0.01));
        assert_eq!(down.latency, 0.15);
    }

    #[test]
    fn bad_numbers_and_clashing_options_are_refused() {
        for bad in [
            &["--loss", "150"][..],
            &["--latency", "-5"],
            &["--jitter", "NaN"],
            &["--up-reorder", "x"],
            &["--preset", "LAN", "--latency", "5"],
            &["--duration", "0"],
        ] {
            assert!(links(bad).is_err(), "{bad:?}");
        }
        let unknown = links(&["--preset", "dial-up"]).unwrap_err();
        assert!(unknown.contains("unknown preset"), "{unknown}");
    }

    #[test]
    fn the_status_line_shows_the_last_second() {
        let mut last = ProxyStats::default();
        last.up.packets_in = 10;
        let mut now = last.clone();
        now.sessions_opened = 1;
        now.up.packets_in = 110;
        now.up.packets_out = 98;
        now.up.dropped = 2;
        now.up.added_delay_ns = 98 * 50_000_000;
        let line = status_line(7, &now, &last);
        assert!(
            line.starts_with("[   7 s] up: 100 in, 98 out, 2 lost, 0 copies, added 50.0 ms"),
            "{line}"
        );
        assert!(
            line.contains("down: 0 in, 0 out, 0 lost, 0 copies, added -"),
            "{line}"
        );
        assert!(line.contains("| sessions: 1 |"), "{line}");
    }
}
