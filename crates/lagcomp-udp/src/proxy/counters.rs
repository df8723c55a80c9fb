//! What a proxy run counts: per direction ([`DirectionStats`]), how late packets left
//! ([`Lateness`]), the whole run ([`ProxyStats`]), and the shared atomic counters the loop
//! writes and a [`StatsHandle`] reads from another thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{LATENESS_BUCKET, LATENESS_BUCKETS};

/// A direction of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// What one direction of a proxy has done.
///
/// Every datagram read is accounted for: `packets_in + duplicated` equals
/// `dropped + overflowed + packets_out + send_failed` plus those still in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirectionStats {
    /// Datagrams read (within the size limit, from a client with a session or granted one).
    pub packets_in: u64,
    /// Their payload bytes.
    pub bytes_in: u64,
    /// Datagrams written, copies included.
    pub packets_out: u64,
    /// Their payload bytes.
    pub bytes_out: u64,
    /// Datagrams the conditioner lost.
    pub dropped: u64,
    /// Extra copies the conditioner made.
    pub duplicated: u64,
    /// Datagrams the conditioner held back to be overtaken.
    pub reordered: u64,
    /// Datagrams dropped on arrival because the proxy held
    /// [`ProxyConfig::queue_limit`](super::ProxyConfig::queue_limit).
    pub overflowed: u64,
    /// Datagrams due but refused by the system (a full send buffer, an unreachable peer).
    pub send_failed: u64,
    /// Sum over written datagrams of the time from reading to writing, nanoseconds.
    pub added_delay_ns: u64,
}

impl DirectionStats {
    /// The mean time a written datagram spent in the proxy (the delay it added, as
    /// measured), if any was written.
    #[must_use]
    pub fn mean_added_delay(&self) -> Option<Duration> {
        (self.packets_out > 0).then(|| Duration::from_nanos(self.added_delay_ns / self.packets_out))
    }

    /// Datagrams (and copies) held, waiting to be due.
    #[must_use]
    pub fn in_flight(&self) -> u64 {
        (self.packets_in + self.duplicated)
            .saturating_sub(self.dropped + self.overflowed + self.packets_out + self.send_failed)
    }

    /// The counts accumulated since `earlier` (a snapshot of the same proxy taken before).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            packets_in: self.packets_in.saturating_sub(earlier.packets_in),
            bytes_in: self.bytes_in.saturating_sub(earlier.bytes_in),
            packets_out: self.packets_out.saturating_sub(earlier.packets_out),
            bytes_out: self.bytes_out.saturating_sub(earlier.bytes_out),
            dropped: self.dropped.saturating_sub(earlier.dropped),
            duplicated: self.duplicated.saturating_sub(earlier.duplicated),
            reordered: self.reordered.saturating_sub(earlier.reordered),
            overflowed: self.overflowed.saturating_sub(earlier.overflowed),
            send_failed: self.send_failed.saturating_sub(earlier.send_failed),
            added_delay_ns: self.added_delay_ns.saturating_sub(earlier.added_delay_ns),
        }
    }
}

/// How late datagrams left compared with the time their conditioner made them due: the
/// proxy's scheduling error, on top of the delay it was asked to add. A histogram of
/// [`LATENESS_BUCKET`]-wide buckets up to 10 ms, and one beyond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lateness {
    /// Datagrams per bucket; the last bucket holds everything 10 ms late or more.
    counts: Vec<u64>,
    total_ns: u64,
    max_ns: u64,
}

impl Default for Lateness {
    /// Nothing measured yet.
    fn default() -> Self {
        Self {
            counts: vec![0; LATENESS_BUCKETS + 1],
            total_ns: 0,
            max_ns: 0,
        }
    }
}

impl Lateness {
    /// Datagrams measured.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The mean lateness, if any datagram was sent.
    #[must_use]
    pub fn mean(&self) -> Option<Duration> {
        let n = self.count();
        (n > 0).then(|| Duration::from_nanos(self.total_ns / n))
    }

    /// The largest lateness seen, if any datagram was sent.
    #[must_use]
    pub fn max(&self) -> Option<Duration> {
        (self.count() > 0).then(|| Duration::from_nanos(self.max_ns))
    }

    /// A bound on the `q` quantile (`q` in `[0, 1]`, clamped; NaN reads as 0): the upper
    /// edge of the bucket holding it, so at most one bucket width above the truth, or the
    /// maximum for the overflow bucket. `None` if nothing was sent.
    #[must_use]
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        // The rank of the quantile sample, 1-based; float to int saturates.
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                if bucket == LATENESS_BUCKETS {
                    return self.max();
                }
                let edge = LATENESS_BUCKET * (bucket as u32 + 1);
                return Some(edge.min(Duration::from_nanos(self.max_ns)));
            }
        }
        self.max()
    }

    /// The histogram accumulated since `earlier` (a snapshot of the same proxy taken
    /// before); its maximum stays the whole run's.
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            counts: self
                .counts
                .iter()
                .zip(&earlier.counts)
                .map(|(now, then)| now.saturating_sub(*then))
                .collect(),
            total_ns: self.total_ns.saturating_sub(earlier.total_ns),
            max_ns: self.max_ns,
        }
    }
}

/// What a proxy has done so far, from [`StatsHandle::snapshot`] or the end of a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxyStats {
    /// Client to server.
    pub up: DirectionStats,
    /// Server to client.
    pub down: DirectionStats,
    /// Sessions opened (one per new client address).
    pub sessions_opened: u64,
    /// Sessions closed for being idle.
    pub sessions_expired: u64,
    /// Datagrams from new clients refused: the session limit was reached or their upstream
    /// socket could not be opened.
    pub refused: u64,
    /// Datagrams longer than
    /// [`ProxyConfig::max_datagram`](super::ProxyConfig::max_datagram), dropped.
    pub oversized: u64,
    /// Errors reading sockets, including the "port unreachable" reports a session's
    /// socket gets while nothing listens upstream.
    pub socket_errors: u64,
    /// How late datagrams left, both directions.
    pub lateness: Lateness,
}

impl ProxyStats {
    /// Sessions open now (while running; at the end of a run, those open when it ended).
    #[must_use]
    pub fn sessions_open(&self) -> u64 {
        self.sessions_opened.saturating_sub(self.sessions_expired)
    }
}

#[derive(Debug, Default)]
pub(super) struct DirectionCounters {
    pub(super) packets_in: AtomicU64,
    pub(super) bytes_in: AtomicU64,
    pub(super) packets_out: AtomicU64,
    pub(super) bytes_out: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) duplicated: AtomicU64,
    pub(super) reordered: AtomicU64,
    pub(super) overflowed: AtomicU64,
    pub(super) send_failed: AtomicU64,
    pub(super) added_delay_ns: AtomicU64,
}

impl DirectionCounters {
    pub(super) fn snapshot(&self) -> DirectionStats {
        DirectionStats {
            packets_in: read(&self.packets_in),
            bytes_in: read(&self.bytes_in),
            packets_out: read(&self.packets_out),
            bytes_out: read(&self.bytes_out),
            dropped: read(&self.dropped),
            duplicated: read(&self.duplicated),
            reordered: read(&self.reordered),
            overflowed: read(&self.overflowed),
            send_failed: read(&self.send_failed),
            added_delay_ns: read(&self.added_delay_ns),
        }
    }
}

/// The counters the loop writes and anyone may read while it runs. Only the loop's thread
/// writes, so relaxed ordering suffices: a reader sees each counter's latest value soon,
/// and a snapshot is consistent to within the packets being handled as it is taken.
#[derive(Debug)]
pub(super) struct Counters {
    pub(super) up: DirectionCounters,
    pub(super) down: DirectionCounters,
    pub(super) sessions_opened: AtomicU64,
    pub(super) sessions_expired: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) oversized: AtomicU64,
    pub(super) socket_errors: AtomicU64,
    pub(super) lateness: Box<[AtomicU64]>,
    pub(super) lateness_total_ns: AtomicU64,
    pub(super) lateness_max_ns: AtomicU64,
}

impl Counters {
    pub(super) fn new() -> Self {
        Self {
            up: DirectionCounters::default(),
            down: DirectionCounters::default(),
            sessions_opened: AtomicU64::new(0),
            sessions_expired: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            oversized: AtomicU64::new(0),
            socket_errors: AtomicU64::new(0),
            lateness: (0..=LATENESS_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            lateness_total_ns: AtomicU64::new(0),
            lateness_max_ns: AtomicU64::new(0),
        }
    }

    pub(super) fn direction(&self, direction: Direction) -> &DirectionCounters {
        match direction {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }

    pub(super) fn record_lateness(&self, late_ns: u64) {
        let bucket = (late_ns / LATENESS_BUCKET.as_nanos() as u64).min(LATENESS_BUCKETS as u64);
        add(&self.lateness[bucket as usize], 1);
        add(&self.lateness_total_ns, late_ns);
        self.lateness_max_ns.fetch_max(late_ns, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> ProxyStats {
        ProxyStats {
            up: self.up.snapshot(),
            down: self.down.snapshot(),
            sessions_opened: read(&self.sessions_opened),
            sessions_expired: read(&self.sessions_expired),
            refused: read(&self.refused),
            oversized: read(&self.oversized),
            socket_errors: read(&self.socket_errors),
            lateness: Lateness {
                counts: self.lateness.iter().map(read).collect(),
                total_ns: read(&self.lateness_total_ns),
                max_ns: read(&self.lateness_max_ns),
            },
        }
    }
}

pub(super) fn add(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

pub(super) fn read(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// Reads a running (or finished) proxy's counters from any thread.
#[derive(Debug, Clone)]
pub struct StatsHandle(pub(super) Arc<Counters>);

impl StatsHandle {
    /// The counters now.
    #[must_use]
    pub fn snapshot(&self) -> ProxyStats {
        self.0.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lateness(samples_us: &[u64]) -> Lateness {
        let counters = Counters::new();
        for &us in samples_us {
            counters.record_lateness(us * 1000);
        }
        counters.snapshot().lateness
    }

    #[test]
    fn lateness_quantiles_bound_the_samples_by_a_bucket() {
        // 90 samples at 15 µs, 9 at 105 µs, 1 at 20 ms (overflow).
        let mut samples = vec![15; 90];
        samples.extend([105; 9]);
        samples.push(20_000);
        let l = lateness(&samples);
        assert_eq!(l.count(), 100);
        assert_eq!(l.quantile(0.5), Some(Duration::from_micros(20)));
        assert_eq!(l.quantile(0.9), Some(Duration::from_micros(20)));
        assert_eq!(l.quantile(0.95), Some(Duration::from_micros(110)));
        assert_eq!(l.quantile(1.0), Some(Duration::from_millis(20)));
        assert_eq!(l.max(), Some(Duration::from_millis(20)));
        assert_eq!(l.quantile(f64::NAN), Some(Duration::from_micros(20)));
        // The bucket edge never exceeds the largest sample.
        assert_eq!(lateness(&[3]).quantile(0.5), Some(Duration::from_micros(3)));
        assert_eq!(lateness(&[]).quantile(0.5), None);
        assert_eq!(lateness(&[]).mean(), None);
    }

    #[test]
    fn lateness_since_subtracts_the_earlier_snapshot() {
        let counters = Counters::new();
        counters.record_lateness(5_000);
        let earlier = counters.snapshot().lateness;
        counters.record_lateness(50_000);
        let later = counters.snapshot().lateness.since(&earlier);
        assert_eq!(later.count(), 1);
        assert_eq!(later.mean(), Some(Duration::from_micros(50)));
    }
}
