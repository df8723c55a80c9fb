//! Live metrics of a running server ([`ServeConfig::metrics`](super::ServeConfig::metrics)):
//! what the server counts, in Prometheus' terms.
//!
//! Every metric is registered, and every label set of the verdicts created, when the
//! server starts; the server's thread then only adds to atomic counters (and, once a
//! tick, takes the tick histogram's lock, which a scrape holds only while it copies the
//! buckets), so counting allocates nothing. The HTTP side is [`super::scrape`].
//!
//! The metrics, all prefixed `lagcomp_`:
//!
//! | name | type | what |
//! | --- | --- | --- |
//! | `verdicts_total{outcome, reason}` | counter | verdicts given: `outcome` is `confirmed`, `miss`, `blocked`, `rejected` or `refused`; `reason` is the rejection's reason (`RejectReason::name`) or the refusal's (`Refusal::name`: `invulnerable`, `dodged`), empty otherwise |
//! | `shots_total` | counter | shots validated (the sum of the verdicts; `rate()` of it is shots per second) |
//! | `ticks_total` | counter | ticks run |
//! | `tick_work_seconds` | histogram | each tick's work, from its deadline's wake-up to its last datagram handed to the socket, seconds |
//! | `players` | gauge | players connected (as of the latest tick) |
//! | `malformed_messages_total` | counter | client messages dropped as undecodable |
//! | `sent_bytes_total` | counter | UDP payload bytes handed to the socket (every datagram: the ticks', handshakes, keep-alives, clock-sync answers) |
//! | `received_bytes_total` | counter | UDP payload bytes read from the socket (every datagram, including those dropped) |

use std::sync::Arc;

use lagcomp_validate::{Refusal, RejectReason, VerdictOutcome};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The labels of `lagcomp_verdicts_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VerdictLabels {
    outcome: &'static str,
    reason: &'static str,
}

/// Verdicts that are not rejections, in the order of [`ServerMetrics::verdicts`]' first
/// slots.
const NOT_REJECTED: [&str; 3] = ["confirmed", "miss", "blocked"];

/// The tick work histogram's bucket bounds: 50 µs doubling to 51.2 ms (a 64 Hz tick's
/// budget is 15.6 ms; the last buckets are the stalls).
fn tick_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(50e-6, 2.0, 11)
}

/// What a server counts for Prometheus, and the registry that encodes it.
#[derive(Debug)]
pub(crate) struct ServerMetrics {
    registry: Arc<Registry>,
    /// One counter per verdict kind: [`NOT_REJECTED`], then [`RejectReason::ALL`]'s, then
    /// [`Refusal::ALL`]'s.
    verdicts: Vec<Counter>,
    shots: Counter,
    ticks: Counter,
    tick_work: Histogram,
    players: Gauge,
    malformed: Counter,
    sent_bytes: Counter,
    received_bytes: Counter,
    /// The transport's byte totals at the previous [`Self::tick`].
    sent_before: u64,
    received_before: u64,
}

impl ServerMetrics {
    /// Every metric registered and every verdict's label set created.
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("lagcomp");
        let verdict_family = Family::<VerdictLabels, Counter>::default();
        registry.register(
            "verdicts",
            "Verdicts given, by outcome and, for rejections, reason",
            verdict_family.clone(),
        );
        let labels = NOT_REJECTED
            .iter()
            .map(|outcome| (*outcome, ""))
            .chain(RejectReason::ALL.iter().map(|r| ("rejected", r.name())))
            .chain(Refusal::ALL.iter().map(|r| ("refused", r.name())));
        let verdicts = labels
            .map(|(outcome, reason)| {
                verdict_family
                    .get_or_create(&VerdictLabels { outcome, reason })
                    .clone()
            })
            .collect();
        let shots = Counter::default();
        registry.register(
            "shots",
            "Shots validated (rate() of it: shots per second)",
            shots.clone(),
        );
        let ticks = Counter::default();
        registry.register("ticks", "Ticks run", ticks.clone());
        let tick_work = Histogram::new(tick_buckets());
        registry.register(
            "tick_work_seconds",
            "Each tick's work, from its deadline's wake-up to its last datagram handed to the \
             socket, seconds",
            tick_work.clone(),
        );
        let players = Gauge::default();
        registry.register("players", "Players connected", players.clone());
        let malformed = Counter::default();
        registry.register(
            "malformed_messages",
            "Client messages dropped as undecodable",
            malformed.clone(),
        );
        let sent_bytes = Counter::default();
        registry.register(
            "sent_bytes",
            "UDP payload bytes handed to the socket",
            sent_bytes.clone(),
        );
        let received_bytes = Counter::default();
        registry.register(
            "received_bytes",
            "UDP payload bytes read from the socket, including datagrams dropped",
            received_bytes.clone(),
        );
        Self {
            registry: Arc::new(registry),
            verdicts,
            shots,
            ticks,
            tick_work,
            players,
            malformed,
            sent_bytes,
            received_bytes,
            sent_before: 0,
            received_before: 0,
        }
    }

    /// The registry, for the scrape endpoint's thread.
    pub(crate) fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    /// A shot validated to `outcome`.
    pub(crate) fn verdict(&self, outcome: &VerdictOutcome) {
        let slot = match outcome {
            VerdictOutcome::Confirmed(_) => Some(0),
            VerdictOutcome::Miss => Some(1),
            VerdictOutcome::Blocked { .. } => Some(2),
            VerdictOutcome::Rejected { reason } => RejectReason::ALL
                .iter()
                .position(|r| r == reason)
                .map(|i| NOT_REJECTED.len() + i),
            VerdictOutcome::Refused { refusal, .. } => Refusal::ALL
                .iter()
                .position(|r| r == refusal)
                .map(|i| NOT_REJECTED.len() + RejectReason::ALL.len() + i),
        };
        if let Some(counter) = slot.and_then(|i| self.verdicts.get(i)) {
            counter.inc();
        }
        self.shots.inc();
    }

    /// A malformed message dropped.
    pub(crate) fn malformed(&self) {
        self.malformed.inc();
    }

    /// A tick that took `work` seconds, with `players` connected after it; `sent` and
    /// `received` are the transport's byte totals so far.
    pub(crate) fn tick(&mut self, work: f64, players: usize, sent: u64, received: u64) {
        self.ticks.inc();
        self.tick_work.observe(work);
        self.players.set(i64::try_from(players).unwrap_or(i64::MAX));
        self.sent_bytes
            .inc_by(sent.saturating_sub(self.sent_before));
        self.received_bytes
            .inc_by(received.saturating_sub(self.received_before));
        self.sent_before = sent;
        self.received_before = received;
    }
}
