//! The conditioning UDP proxy: real datagrams between real processes, put through the link
//! conditioner on the way.
//!
//! What lives here: [`Proxy`] (bind, then [`Proxy::run`] on one thread, or
//! [`Proxy::spawn`]), its settings [`ProxyConfig`], the [`StopHandle`] that ends a run from
//! another thread, and what a run counts ([`StatsHandle`], [`ProxyStats`],
//! [`DirectionStats`], [`Lateness`]). What does not: the link model itself
//! ([`lagcomp_net::LinkConditioner`], driven here with seconds since the proxy started),
//! preset names and the command line (`lagcomp proxy` in `lagcomp-cli`).
//!
//! # How a datagram travels
//!
//! Clients send to the listening socket. Each client address gets a session: its own
//! upstream socket connected to the server, so that the server sees every client as a
//! distinct peer (as it would through a NAT), and two conditioners, "up" (client to server)
//! and "down" (server to client), seeded from the proxy's seed and the session's number. A
//! datagram is stamped with the time it was read, handed to its direction's conditioner,
//! and written out (upstream from the session's socket, downstream from the listening
//! socket) once the conditioner says it is due. A session with nothing in flight that has
//! heard nothing either way for [`ProxyConfig::idle_timeout`] is closed, its socket with it.
//!
//! # The loop
//!
//! One thread, nonblocking sockets, and `ppoll(2)` (through `rustix`) over all of them,
//! with a timeout that ends when the next packet is due. `ppoll` takes its timeout in
//! nanoseconds; epoll's, and so mio's, is in whole milliseconds and would hold a packet up
//! to a millisecond past its time, which is the error this proxy exists to control. The
//! price is a scan of every socket per wake-up, nothing for the tens of clients a test
//! puts behind a proxy; the list of sockets is rebuilt only when a session opens or
//! closes. Each socket asks for a 1 MiB receive buffer, so that datagrams wait in the
//! kernel rather than being dropped there while a busy machine keeps the thread off a
//! CPU. On Linux the loop's thread also runs with a timer slack of 1 ns
//! instead of 50 µs, so that the kernel does not postpone its wake-ups to batch them. How
//! late packets really leave is measured in [`Lateness`].
//!
//! # Memory
//!
//! Datagrams are read into one scratch buffer of [`ProxyConfig::max_datagram`] + 1 bytes
//! (one more than allowed, so a longer datagram shows as oversized instead of being cut
//! silently), then copied into a pooled buffer that the conditioner carries by index: a
//! duplicate shares its original's buffer, and a buffer goes back to the pool once every
//! copy has been sent or lost. Pooled buffers keep their capacity, so once the pool has
//! grown to the most packets ever in flight and each buffer to the longest datagram it has
//! held, forwarding allocates nothing (`tests/allocations.rs` counts the loop thread's
//! allocations to check it). The pool is bounded by [`ProxyConfig::queue_limit`].

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lagcomp_net::{LinkConditioner, LinkConfig};
use rustix::event::{PollFd, PollFlags, Timespec};

/// The largest datagram the proxy can carry, bytes: every UDP payload fits (65,507 bytes
/// over IPv4, 65,527 over IPv6 without jumbograms).
pub const MAX_DATAGRAM: usize = 65_535;

/// Width of a [`Lateness`] bucket.
pub const LATENESS_BUCKET: Duration = Duration::from_micros(10);

/// Buckets in a [`Lateness`] histogram below its overflow bucket: 10 ms of 10 µs steps.
const LATENESS_BUCKETS: usize = 1000;

/// Receive buffer asked of the system for each socket, bytes: room for over a thousand
/// small datagrams while the loop's thread is kept off a busy machine's CPUs, instead of
/// the couple of hundred a default buffer holds (Linux grants at most `net.core.rmem_max`).
const RECEIVE_BUFFER: usize = 1 << 20;

/// Datagrams read from one socket per wake-up before due packets get their turn, so that a
/// flood on one socket cannot hold back deliveries.
const READ_BATCH: usize = 64;

/// Settings of a [`Proxy`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyConfig {
    /// Where clients send (port 0 picks a free port; see [`Proxy::local_addr`]).
    pub listen: SocketAddr,
    /// The server every client's datagrams go to.
    pub upstream: SocketAddr,
    /// Client-to-server conditions, for every session.
    pub up: LinkConfig,
    /// Server-to-client conditions, for every session.
    pub down: LinkConfig,
    /// Seed of every session's conditioners: the same seed and the same datagrams in the
    /// same order give the same losses, copies and delays.
    pub seed: u64,
    /// Longest datagram forwarded, bytes, at most [`MAX_DATAGRAM`]; longer ones are counted
    /// as [`ProxyStats::oversized`] and dropped, as a router drops what exceeds its MTU.
    pub max_datagram: usize,
    /// A session with nothing in flight that heard nothing in either direction for this
    /// long is closed (checked every quarter of it).
    pub idle_timeout: Duration,
    /// Most sessions open at once; datagrams from further clients are refused.
    pub max_sessions: usize,
    /// Most datagrams held in the proxy at once, both directions together; datagrams
    /// arriving while it is full are dropped, as a full router queue drops them.
    pub queue_limit: usize,
}

impl ProxyConfig {
    /// A proxy from `listen` to `upstream` over perfect links, seed 0, carrying any
    /// datagram, closing sessions after 60 s idle, at most 1024 sessions and 100,000
    /// datagrams held.
    #[must_use]
    pub fn new(listen: SocketAddr, upstream: SocketAddr) -> Self {
        Self {
            listen,
            upstream,
            up: LinkConfig::default(),
            down: LinkConfig::default(),
            seed: 0,
            max_datagram: MAX_DATAGRAM,
            idle_timeout: Duration::from_secs(60),
            max_sessions: 1024,
            queue_limit: 100_000,
        }
    }

    /// The same settings with `up` and `down` conditions.
    #[must_use]
    pub fn with_links(mut self, up: LinkConfig, down: LinkConfig) -> Self {
        self.up = up;
        self.down = down;
        self
    }
}

/// Why a proxy could not start, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// [`ProxyConfig::max_datagram`] is 0 or above [`MAX_DATAGRAM`].
    #[error("the longest datagram must be 1 to {MAX_DATAGRAM} bytes, not {0}")]
    MaxDatagram(usize),
    /// [`ProxyConfig::max_sessions`] or [`ProxyConfig::queue_limit`] is 0, or the queue
    /// limit is beyond what the pool can index.
    #[error("the session and queue limits must be at least 1 (and the queue limit below 2^32)")]
    Limits,
    /// [`ProxyConfig::idle_timeout`] is zero.
    #[error("the idle timeout must be longer than zero")]
    IdleTimeout,
    /// The upstream address has port 0 or an unspecified IP (`0.0.0.0`, `::`): nothing can
    /// be sent there.
    #[error("cannot forward to {0}: not a destination")]
    Upstream(SocketAddr),
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The sockets of the stop handle, or the listening socket's options, could not be set
    /// up.
    #[error("cannot set up the proxy's sockets: {0}")]
    Setup(#[source] io::Error),
    /// Waiting on the sockets failed (not an interruption by a signal, which is retried).
    #[error("waiting for datagrams failed: {0}")]
    Wait(#[source] io::Error),
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
    /// Datagrams dropped on arrival because the proxy held [`ProxyConfig::queue_limit`].
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
    /// Datagrams longer than [`ProxyConfig::max_datagram`], dropped.
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
struct DirectionCounters {
    packets_in: AtomicU64,
    bytes_in: AtomicU64,
    packets_out: AtomicU64,
    bytes_out: AtomicU64,
    dropped: AtomicU64,
    duplicated: AtomicU64,
    reordered: AtomicU64,
    overflowed: AtomicU64,
    send_failed: AtomicU64,
    added_delay_ns: AtomicU64,
}

impl DirectionCounters {
    fn snapshot(&self) -> DirectionStats {
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
struct Counters {
    up: DirectionCounters,
    down: DirectionCounters,
    sessions_opened: AtomicU64,
    sessions_expired: AtomicU64,
    refused: AtomicU64,
    oversized: AtomicU64,
    socket_errors: AtomicU64,
    lateness: Box<[AtomicU64]>,
    lateness_total_ns: AtomicU64,
    lateness_max_ns: AtomicU64,
}

impl Counters {
    fn new() -> Self {
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

    fn direction(&self, direction: Direction) -> &DirectionCounters {
        match direction {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }

    fn record_lateness(&self, late_ns: u64) {
        let bucket = (late_ns / LATENESS_BUCKET.as_nanos() as u64).min(LATENESS_BUCKETS as u64);
        add(&self.lateness[bucket as usize], 1);
        add(&self.lateness_total_ns, late_ns);
        self.lateness_max_ns.fetch_max(late_ns, Ordering::Relaxed);
    }

    fn snapshot(&self) -> ProxyStats {
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

fn add(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

fn read(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// Reads a running (or finished) proxy's counters from any thread.
#[derive(Debug, Clone)]
pub struct StatsHandle(Arc<Counters>);

impl StatsHandle {
    /// The counters now.
    #[must_use]
    pub fn snapshot(&self) -> ProxyStats {
        self.0.snapshot()
    }
}

/// Ends a proxy's run from any thread (a Ctrl-C handler, a test): the loop wakes at once,
/// even while waiting for nothing, and returns.
#[derive(Debug, Clone)]
pub struct StopHandle(Arc<StopBell>);

#[derive(Debug)]
struct StopBell {
    requested: AtomicBool,
    /// Connected to the loop's wake socket: one datagram wakes the loop from `ppoll`.
    bell: UdpSocket,
}

impl StopHandle {
    /// Asks the proxy to stop; it returns from [`Proxy::run`] promptly. Datagrams still in
    /// flight are not sent. Calling it again does nothing more.
    pub fn stop(&self) {
        self.0.requested.store(true, Ordering::Release);
        // If the ring is lost (a full buffer), an earlier ring is already waiting.
        let _ = self.0.bell.send(&[1]);
    }

    /// Whether [`StopHandle::stop`] has been called.
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        self.0.requested.load(Ordering::Acquire)
    }
}

/// A UDP proxy that puts real datagrams through the link conditioner (see the
/// [module docs](self)).
///
/// ```
/// use std::net::UdpSocket;
/// use std::time::{Duration, Instant};
/// use lagcomp_net::LinkConfig;
/// use lagcomp_udp::proxy::{Proxy, ProxyConfig};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = UdpSocket::bind("127.0.0.1:0")?;
/// let link = LinkConfig::with_latency(0.020); // 20 ms each way
/// let config = ProxyConfig::new("127.0.0.1:0".parse()?, server.local_addr()?)
///     .with_links(link, link);
/// let proxy = Proxy::bind(config)?;
/// let (address, stop) = (proxy.local_addr(), proxy.stop_handle());
/// let running = proxy.spawn(None)?;
///
/// let client = UdpSocket::bind("127.0.0.1:0")?;
/// let sent = Instant::now();
/// client.send_to(b"hello", address)?;
/// let mut buffer = [0; 16];
/// let (len, _) = server.recv_from(&mut buffer)?;
/// assert_eq!(&buffer[..len], b"hello");
/// assert!(sent.elapsed() >= Duration::from_millis(20));
///
/// stop.stop();
/// let stats = running.join().expect("the proxy thread")?;
/// assert_eq!(stats.up.packets_out, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Proxy {
    config: ProxyConfig,
    listen: UdpSocket,
    local_addr: SocketAddr,
    wake: UdpSocket,
    stop: StopHandle,
    counters: Arc<Counters>,
}

impl Proxy {
    /// Checks `config` and binds the listening socket; nothing is forwarded until
    /// [`Proxy::run`].
    ///
    /// # Errors
    /// [`ProxyError::MaxDatagram`], [`ProxyError::Limits`], [`ProxyError::IdleTimeout`] and
    /// [`ProxyError::Upstream`] for settings that cannot work, [`ProxyError::Listen`] if the
    /// address cannot be bound, [`ProxyError::Setup`] if the loopback sockets of the stop
    /// handle cannot be made.
    pub fn bind(config: ProxyConfig) -> Result<Self, ProxyError> {
        if !(1..=MAX_DATAGRAM).contains(&config.max_datagram) {
            return Err(ProxyError::MaxDatagram(config.max_datagram));
        }
        if config.max_sessions == 0
            || config.queue_limit == 0
            || u32::try_from(config.queue_limit).is_err()
        {
            return Err(ProxyError::Limits);
        }
        if config.idle_timeout.is_zero() {
            return Err(ProxyError::IdleTimeout);
        }
        if config.upstream.port() == 0 || config.upstream.ip().is_unspecified() {
            return Err(ProxyError::Upstream(config.upstream));
        }
        let listen_error = |source| ProxyError::Listen {
            addr: config.listen,
            source,
        };
        let listen = UdpSocket::bind(config.listen).map_err(listen_error)?;
        listen.set_nonblocking(true).map_err(listen_error)?;
        widen_receive_buffer(&listen);
        let local_addr = listen.local_addr().map_err(listen_error)?;
        let (wake, bell) = socket_pair().map_err(ProxyError::Setup)?;
        Ok(Self {
            config,
            listen,
            local_addr,
            wake,
            stop: StopHandle(Arc::new(StopBell {
                requested: AtomicBool::new(false),
                bell,
            })),
            counters: Arc::new(Counters::new()),
        })
    }

    /// The address clients send to (with the port picked if the config asked for 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &ProxyConfig {
        &self.config
    }

    /// A handle that stops the run from another thread.
    #[must_use]
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// A handle that reads the counters from another thread, during and after the run.
    #[must_use]
    pub fn stats(&self) -> StatsHandle {
        StatsHandle(Arc::clone(&self.counters))
    }

    /// Runs [`Proxy::run`] on a new thread named `lagcomp-proxy`.
    ///
    /// # Errors
    /// The system's error if the thread cannot be started.
    pub fn spawn(
        self,
        duration: Option<Duration>,
    ) -> io::Result<JoinHandle<Result<ProxyStats, ProxyError>>> {
        std::thread::Builder::new()
            .name("lagcomp-proxy".to_owned())
            .spawn(move || self.run(duration))
    }

    /// Forwards datagrams on this thread until stopped (see [`Proxy::stop_handle`]) or, if
    /// given, until `duration` has passed; returns the final counters. Datagrams still in
    /// flight at the end are not sent. On Linux the calling thread's timer slack is 1 ns
    /// during the run (see the [module docs](self)), and put back after.
    ///
    /// # Errors
    /// [`ProxyError::Wait`] if waiting on the sockets fails. Failures of single datagrams
    /// or sessions are counted in [`ProxyStats`], never returned.
    pub fn run(self, duration: Option<Duration>) -> Result<ProxyStats, ProxyError> {
        #[cfg(target_os = "linux")]
        let _slack = TimerSlack::tighten();
        let start = Instant::now();
        let end = duration.map(|d| d.as_secs_f64());
        let mut relay = Relay::new(&self.config, &self.counters, start);
        // Kept apart from the relay's state: the poll set borrows them while the relay
        // changes, and only opening or closing a session touches this list.
        let mut upstream: Vec<UdpSocket> = Vec::new();
        loop {
            relay.close_expired(&mut upstream);
            relay.open_fresh(&mut upstream);
            let mut poll_set = Vec::with_capacity(2 + upstream.len());
            poll_set.push(PollFd::new(&self.wake, PollFlags::IN));
            poll_set.push(PollFd::new(&self.listen, PollFlags::IN));
            poll_set.extend(upstream.iter().map(|s| PollFd::new(s, PollFlags::IN)));
            loop {
                if self.stop.is_stopped() {
                    return Ok(self.counters.snapshot());
                }
                relay.deliver(&self.listen, &upstream);
                let now = relay.now();
                if end.is_some_and(|end| now >= end) {
                    return Ok(self.counters.snapshot());
                }
                if relay.sweep(now) {
                    break;
                }
                let wake_at = [relay.next_due(), end, relay.next_sweep()]
                    .into_iter()
                    .flatten()
                    .reduce(f64::min);
                let timeout = wake_at.map(|at| timeout_until(at, relay.now()));
                match rustix::event::poll(&mut poll_set, timeout.as_ref()) {
                    Ok(_) => {}
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(error) => return Err(ProxyError::Wait(error.into())),
                }
                if let [wake, listen, sessions @ ..] = poll_set.as_slice() {
                    if !wake.revents().is_empty() {
                        drain(&self.wake);
                    }
                    if !listen.revents().is_empty() {
                        relay.read_clients(&self.listen);
                    }
                    for ((session, fd), socket) in sessions.iter().enumerate().zip(&upstream) {
                        if !fd.revents().is_empty() {
                            relay.read_server(session, socket);
                        }
                    }
                }
                if relay.has_fresh() {
                    break;
                }
            }
        }
    }
}

/// The calling thread's timer slack set to 1 ns while this lives, then put back.
///
/// Linux lets a sleeping thread wake up to its slack (50 µs by default) late so that
/// wake-ups can be batched; the proxy's sleeps end when a packet is due, so that slack
/// would be added to every packet's delay. Measured on the test suite's 2,000-packet run:
/// median lateness 130 µs with the default slack, 80 µs with 1 ns.
#[cfg(target_os = "linux")]
struct TimerSlack(Option<u64>);

#[cfg(target_os = "linux")]
impl TimerSlack {
    fn tighten() -> Self {
        let old = rustix::thread::current_timer_slack().ok();
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        Self(old)
    }
}

#[cfg(target_os = "linux")]
impl Drop for TimerSlack {
    fn drop(&mut self) {
        if let Some(old) = self.0 {
            let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(old));
        }
    }
}

/// Two loopback sockets connected to each other: the loop's wake socket and the stop
/// handle's bell.
fn socket_pair() -> io::Result<(UdpSocket, UdpSocket)> {
    let loopback = |ip: std::net::IpAddr| -> io::Result<(UdpSocket, UdpSocket)> {
        let a = UdpSocket::bind((ip, 0))?;
        let b = UdpSocket::bind((ip, 0))?;
        a.connect(b.local_addr()?)?;
        b.connect(a.local_addr()?)?;
        a.set_nonblocking(true)?;
        b.set_nonblocking(true)?;
        Ok((a, b))
    };
    // A host may lack either loopback.
    loopback(Ipv4Addr::LOCALHOST.into()).or_else(|_| loopback(Ipv6Addr::LOCALHOST.into()))
}

/// Reads and discards everything waiting on `socket`.
fn drain(socket: &UdpSocket) {
    let mut ring = [0_u8; 8];
    for _ in 0..READ_BATCH {
        if socket.recv(&mut ring).is_err() {
            return;
        }
    }
}

/// The wait from `now` until `at`, rounded up to a whole microsecond: waking a hair before
/// a packet is due would only mean waiting again.
fn timeout_until(at: f64, now: f64) -> Timespec {
    // NaN and negative waits become 0; the cap (11 days) keeps the conversion exact.
    let micros = ((at - now) * 1e6).ceil().clamp(0.0, 1e12) as u64;
    Timespec::try_from(Duration::from_micros(micros)).unwrap_or(Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    })
}

/// A direction of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// A pooled datagram, as the conditioner carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PayloadId(u32);

/// Reusable datagram buffers, shared by the copies of a duplicated datagram.
#[derive(Debug, Default)]
struct Payloads {
    bytes: Vec<Vec<u8>>,
    /// When each datagram was read, seconds since the proxy started.
    read_at: Vec<f64>,
    /// Copies in flight that still need each buffer; 0 for free buffers.
    holders: Vec<u32>,
    free: Vec<u32>,
    in_use: usize,
}

impl Payloads {
    fn in_use(&self) -> usize {
        self.in_use
    }

    /// Copies `data` into a free buffer (a new one only if none is free). The caller keeps
    /// the pool below `u32::MAX` buffers ([`ProxyConfig::queue_limit`] is checked).
    fn store(&mut self, data: &[u8], read_at: f64) -> PayloadId {
        let index = self.free.pop().unwrap_or_else(|| {
            self.bytes.push(Vec::new());
            self.read_at.push(0.0);
            self.holders.push(0);
            (self.bytes.len() - 1) as u32
        });
        let slot = index as usize;
        self.bytes[slot].clear();
        self.bytes[slot].extend_from_slice(data);
        self.read_at[slot] = read_at;
        self.holders[slot] = 1;
        self.in_use += 1;
        PayloadId(index)
    }

    /// One more copy needs the buffer.
    fn hold(&mut self, id: PayloadId) {
        self.holders[id.0 as usize] += 1;
    }

    /// One copy is done with the buffer; the last one frees it.
    fn release(&mut self, id: PayloadId) {
        let holders = &mut self.holders[id.0 as usize];
        *holders = holders.saturating_sub(1);
        if *holders == 0 {
            self.free.push(id.0);
            self.in_use -= 1;
        }
    }

    fn get(&self, id: PayloadId) -> (&[u8], f64) {
        let slot = id.0 as usize;
        (&self.bytes[slot], self.read_at[slot])
    }
}

/// One client: its conditioners, both ways. Its upstream socket sits at the same index in
/// the loop's socket list.
#[derive(Debug)]
struct Session {
    client: SocketAddr,
    up: LinkConditioner<PayloadId>,
    down: LinkConditioner<PayloadId>,
    /// Last datagram read either way, seconds since the proxy started.
    last_heard: f64,
}

/// A datagram from a client that has no session yet.
#[derive(Debug)]
struct Fresh {
    client: SocketAddr,
    payload: PayloadId,
    len: usize,
    read_at: f64,
}

/// The loop's state, apart from the sockets.
#[derive(Debug)]
struct Relay<'a> {
    config: &'a ProxyConfig,
    counters: &'a Counters,
    start: Instant,
    scratch: Vec<u8>,
    payloads: Payloads,
    sessions: Vec<Session>,
    by_client: HashMap<SocketAddr, usize>,
    fresh: Vec<Fresh>,
    /// Sessions found idle by the last sweep, to close between poll sets.
    expired: Vec<usize>,
    next_sweep: f64,
}

impl<'a> Relay<'a> {
    fn new(config: &'a ProxyConfig, counters: &'a Counters, start: Instant) -> Self {
        Self {
            config,
            counters,
            start,
            scratch: vec![0; config.max_datagram + 1],
            payloads: Payloads::default(),
            sessions: Vec::new(),
            by_client: HashMap::new(),
            fresh: Vec::new(),
            expired: Vec::new(),
            next_sweep: f64::INFINITY,
        }
    }

    /// Seconds since the proxy started.
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn has_fresh(&self) -> bool {
        !self.fresh.is_empty()
    }

    /// The earliest time any packet is due.
    fn next_due(&self) -> Option<f64> {
        self.sessions
            .iter()
            .flat_map(|s| [s.up.next_delivery(), s.down.next_delivery()])
            .flatten()
            .reduce(f64::min)
    }

    fn next_sweep(&self) -> Option<f64> {
        self.next_sweep.is_finite().then_some(self.next_sweep)
    }

    fn sweep_interval(&self) -> f64 {
        self.config.idle_timeout.as_secs_f64() / 4.0
    }

    /// Looks for idle sessions if it is time to; true if some are to be closed.
    fn sweep(&mut self, now: f64) -> bool {
        if now < self.next_sweep {
            return false;
        }
        let idle = self.config.idle_timeout.as_secs_f64();
        self.expired.extend(
            self.sessions
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    now - s.last_heard >= idle && s.up.in_flight() == 0 && s.down.in_flight() == 0
                })
                .map(|(i, _)| i),
        );
        self.next_sweep = if self.sessions.is_empty() {
            f64::INFINITY
        } else {
            now + self.sweep_interval()
        };
        !self.expired.is_empty()
    }

    /// Closes the sessions the last sweep found idle, with their sockets.
    fn close_expired(&mut self, upstream: &mut Vec<UdpSocket>) {
        // Highest index first: each removal moves the last session, which is then never
        // one still to be removed.
        self.expired.sort_unstable_by(|a, b| b.cmp(a));
        for index in self.expired.drain(..) {
            let session = self.sessions.swap_remove(index);
            upstream.swap_remove(index);
            self.by_client.remove(&session.client);
            if let Some(moved) = self.sessions.get(index) {
                self.by_client.insert(moved.client, index);
            }
            add(&self.counters.sessions_expired, 1);
        }
    }

    /// Opens sessions for the clients heard from for the first time, and conditions their
    /// first datagrams.
    fn open_fresh(&mut self, upstream: &mut Vec<UdpSocket>) {
        for fresh in std::mem::take(&mut self.fresh) {
            let known = self.by_client.get(&fresh.client).copied();
            let session = match known {
                Some(index) => Some(index),
                None => match open_upstream(self.config.upstream) {
                    Ok(socket) => {
                        let number = self
                            .counters
                            .sessions_opened
                            .fetch_add(1, Ordering::Relaxed);
                        let seed = |direction| session_seed(self.config.seed, number, direction);
                        upstream.push(socket);
                        self.sessions.push(Session {
                            client: fresh.client,
                            up: LinkConditioner::new(self.config.up, seed(0)),
                            down: LinkConditioner::new(self.config.down, seed(1)),
                            last_heard: fresh.read_at,
                        });
                        let index = self.sessions.len() - 1;
                        self.by_client.insert(fresh.client, index);
                        if !self.next_sweep.is_finite() {
                            self.next_sweep = fresh.read_at + self.sweep_interval();
                        }
                        Some(index)
                    }
                    Err(_) => None,
                },
            };
            match session {
                Some(index) => {
                    self.count_in(Direction::Up, fresh.len);
                    self.condition(Direction::Up, index, fresh.payload, fresh.read_at);
                }
                None => {
                    add(&self.counters.refused, 1);
                    self.payloads.release(fresh.payload);
                }
            }
        }
    }

    fn count_in(&self, direction: Direction, len: usize) {
        let counters = self.counters.direction(direction);
        add(&counters.packets_in, 1);
        add(&counters.bytes_in, len as u64);
    }

    /// Hands a stored datagram to its session's conditioner, and keeps the pool in step with
    /// what the conditioner did with it (lost: freed; duplicated: held twice).
    fn condition(&mut self, direction: Direction, session: usize, payload: PayloadId, at: f64) {
        let counters = self.counters.direction(direction);
        let session = &mut self.sessions[session];
        session.last_heard = session.last_heard.max(at);
        let link = match direction {
            Direction::Up => &mut session.up,
            Direction::Down => &mut session.down,
        };
        let before = link.stats();
        link.send(at, payload);
        let after = link.stats();
        if after.duplicated > before.duplicated {
            self.payloads.hold(payload);
            add(&counters.duplicated, 1);
        }
        if after.reordered > before.reordered {
            add(&counters.reordered, 1);
        }
        if after.dropped > before.dropped {
            self.payloads.release(payload);
            add(&counters.dropped, 1);
        }
    }

    /// Stores the datagram in the scratch buffer, unless the pool is full.
    fn store(&mut self, direction: Direction, len: usize, at: f64) -> Option<PayloadId> {
        if self.payloads.in_use() >= self.config.queue_limit {
            add(&self.counters.direction(direction).overflowed, 1);
            return None;
        }
        Some(self.payloads.store(&self.scratch[..len], at))
    }

    /// Reads what clients sent to the listening socket.
    fn read_clients(&mut self, listen: &UdpSocket) {
        for _ in 0..READ_BATCH {
            let (len, client) = match listen.recv_from(&mut self.scratch) {
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    add(&self.counters.socket_errors, 1);
                    return;
                }
            };
            let now = self.now();
            if len > self.config.max_datagram {
                add(&self.counters.oversized, 1);
                continue;
            }
            if let Some(&session) = self.by_client.get(&client) {
                self.count_in(Direction::Up, len);
                if let Some(payload) = self.store(Direction::Up, len, now) {
                    self.condition(Direction::Up, session, payload, now);
                }
                continue;
            }
            let waiting = self.fresh.iter().any(|f| f.client == client);
            if !waiting && self.sessions.len() + self.fresh_clients() >= self.config.max_sessions {
                add(&self.counters.refused, 1);
                continue;
            }
            // Counted in when its session opens, or as refused if it cannot.
            if self.payloads.in_use() >= self.config.queue_limit {
                add(&self.counters.up.overflowed, 1);
                add(&self.counters.up.packets_in, 1);
                add(&self.counters.up.bytes_in, len as u64);
                continue;
            }
            let payload = self.payloads.store(&self.scratch[..len], now);
            self.fresh.push(Fresh {
                client,
                payload,
                len,
                read_at: now,
            });
        }
    }

    /// Distinct clients among the datagrams waiting for a session.
    fn fresh_clients(&self) -> usize {
        self.fresh
            .iter()
            .enumerate()
            .filter(|(i, f)| !self.fresh[..*i].iter().any(|g| g.client == f.client))
            .count()
    }

    /// Reads what the server sent to a session's socket.
    fn read_server(&mut self, session: usize, socket: &UdpSocket) {
        for _ in 0..READ_BATCH {
            let len = match socket.recv(&mut self.scratch) {
                Ok(len) => len,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                // The error is consumed; datagrams may still wait behind it.
                Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
                    add(&self.counters.socket_errors, 1);
                    continue;
                }
                Err(_) => {
                    add(&self.counters.socket_errors, 1);
                    return;
                }
            };
            let now = self.now();
            if len > self.config.max_datagram {
                add(&self.counters.oversized, 1);
                continue;
            }
            self.count_in(Direction::Down, len);
            if let Some(payload) = self.store(Direction::Down, len, now) {
                self.condition(Direction::Down, session, payload, now);
            }
        }
    }

    /// Writes every datagram that is due.
    fn deliver(&mut self, listen: &UdpSocket, upstream: &[UdpSocket]) {
        let now = self.now();
        for (session, socket) in self.sessions.iter_mut().zip(upstream) {
            let client = session.client;
            forward(
                &mut session.up,
                &mut self.payloads,
                self.counters,
                Direction::Up,
                self.start,
                now,
                |bytes| socket.send(bytes),
            );
            forward(
                &mut session.down,
                &mut self.payloads,
                self.counters,
                Direction::Down,
                self.start,
                now,
                |bytes| listen.send_to(bytes, client),
            );
        }
    }
}

/// Sends everything `link` has due at `now`, measuring how late each leaves.
fn forward(
    link: &mut LinkConditioner<PayloadId>,
    payloads: &mut Payloads,
    counters: &Counters,
    direction: Direction,
    start: Instant,
    now: f64,
    mut send: impl FnMut(&[u8]) -> io::Result<usize>,
) {
    let counters_here = counters.direction(direction);
    while let Some(due) = link.next_delivery().filter(|&at| at <= now) {
        let Some(payload) = link.poll(now) else {
            break;
        };
        let (bytes, read_at) = payloads.get(payload);
        let result = send(bytes);
        let sent_at = start.elapsed().as_secs_f64();
        match result {
            Ok(_) => {
                add(&counters_here.packets_out, 1);
                add(&counters_here.bytes_out, bytes.len() as u64);
                add(&counters_here.added_delay_ns, nanos(sent_at - read_at));
                counters.record_lateness(nanos(sent_at - due));
            }
            Err(_) => add(&counters_here.send_failed, 1),
        }
        payloads.release(payload);
    }
}

/// Whole nanoseconds in `seconds` (0 for negative or NaN; float to int saturates).
fn nanos(seconds: f64) -> u64 {
    (seconds * 1e9).round().max(0.0) as u64
}

/// A socket for one session, connected to the server: the system then drops datagrams from
/// anyone else, and reports an unreachable server on it.
fn open_upstream(upstream: SocketAddr) -> io::Result<UdpSocket> {
    let any: SocketAddr = if upstream.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(any)?;
    socket.connect(upstream)?;
    socket.set_nonblocking(true)?;
    widen_receive_buffer(&socket);
    Ok(socket)
}

/// Asks for a [`RECEIVE_BUFFER`]-byte receive buffer; a refusal leaves the default, which
/// only makes overflow likelier under load.
fn widen_receive_buffer(socket: &UdpSocket) {
    let _ = rustix::net::sockopt::set_socket_recv_buffer_size(socket, RECEIVE_BUFFER);
}

/// The seed of session number `session`'s conditioner for `direction` (0 up, 1 down):
/// distinct streams for every session and direction from one proxy seed.
fn session_seed(seed: u64, session: u64, direction: u64) -> u64 {
    splitmix64(seed ^ splitmix64(session.wrapping_mul(2).wrapping_add(direction)))
}

/// SplitMix64's output function: spreads nearby inputs over all 64 bits.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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

    #[test]
    fn pooled_buffers_are_reused_once_every_copy_is_done() {
        let mut pool = Payloads::default();
        let a = pool.store(b"first", 1.0);
        pool.hold(a); // a duplicate
        pool.release(a);
        assert_eq!(pool.in_use(), 1);
        assert_eq!(pool.get(a), (&b"first"[..], 1.0));
        pool.release(a);
        assert_eq!(pool.in_use(), 0);
        let b = pool.store(b"second, longer", 2.0);
        assert_eq!(b, a, "the freed buffer is taken again");
        assert_eq!(pool.get(b), (&b"second, longer"[..], 2.0));
        assert_eq!(pool.bytes.len(), 1);
    }

    #[test]
    fn timeouts_round_up_to_microseconds_and_never_go_negative() {
        assert_eq!(
            timeout_until(1.000_001_5, 1.0),
            Timespec {
                tv_sec: 0,
                tv_nsec: 2_000
            }
        );
        assert_eq!(timeout_until(0.5, 1.0), Timespec::default());
        assert_eq!(timeout_until(f64::NAN, 1.0), Timespec::default());
        assert_eq!(timeout_until(3.25, 1.0).tv_sec, 2);
    }

    #[test]
    fn sessions_and_directions_get_distinct_seeds() {
        let mut seeds: Vec<u64> = (0..100)
            .flat_map(|s| [session_seed(7, s, 0), session_seed(7, s, 1)])
            .collect();
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), 200);
        assert_ne!(session_seed(7, 0, 0), session_seed(8, 0, 0));
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let upstream: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let base = ProxyConfig::new(listen, upstream);
        let refused = |config: ProxyConfig| Proxy::bind(config).err();
        assert!(matches!(
            refused(ProxyConfig {
                max_datagram: 0,
                ..base.clone()
            }),
            Some(ProxyError::MaxDatagram(0))
        ));
        assert!(matches!(
            refused(ProxyConfig {
                max_datagram: MAX_DATAGRAM + 1,
                ..base.clone()
            }),
            Some(ProxyError::MaxDatagram(_))
        ));
        assert!(matches!(
            refused(ProxyConfig {
                max_sessions: 0,
                ..base.clone()
            }),
            Some(ProxyError::Limits)
        ));
        assert!(matches!(
            refused(ProxyConfig {
                idle_timeout: Duration::ZERO,
                ..base.clone()
            }),
            Some(ProxyError::IdleTimeout)
        ));
        assert!(matches!(
            refused(ProxyConfig::new(listen, "0.0.0.0:9".parse().unwrap())),
            Some(ProxyError::Upstream(_))
        ));
        assert!(matches!(
            refused(ProxyConfig::new(listen, "127.0.0.1:0".parse().unwrap())),
            Some(ProxyError::Upstream(_))
        ));
        assert!(Proxy::bind(base).is_ok());
    }
}
