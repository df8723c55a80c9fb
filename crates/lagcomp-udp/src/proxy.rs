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

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lagcomp_net::LinkConfig;
use rustix::event::{PollFd, PollFlags, Timespec};

use counters::Counters;
use relay::{Relay, widen_receive_buffer};

mod counters;
mod relay;

pub use counters::{DirectionStats, Lateness, ProxyStats, StatsHandle};

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

#[cfg(test)]
mod tests {
    use super::*;

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
