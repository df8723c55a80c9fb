//! The loop's state between wake-ups: sessions (one upstream socket and two conditioners
//! per client address), the pooled datagram buffers the conditioners carry by index, and
//! reading, conditioning and delivering datagrams.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::time::Instant;

use lagcomp_net::LinkConditioner;

use super::counters::{Counters, Direction, add};
use super::{ProxyConfig, READ_BATCH, RECEIVE_BUFFER};

/// A pooled datagram, as the conditioner carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PayloadId(u32);

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
    pub(super) fn store(&mut self, data: &[u8], read_at: f64) -> PayloadId {
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
pub(super) struct Relay<'a> {
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
    pub(super) fn new(config: &'a ProxyConfig, counters: &'a Counters, start: Instant) -> Self {
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
    pub(super) fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    pub(super) fn has_fresh(&self) -> bool {
        !self.fresh.is_empty()
    }

    /// The earliest time any packet is due.
    pub(super) fn next_due(&self) -> Option<f64> {
        self.sessions
            .iter()
            .flat_map(|s| [s.up.next_delivery(), s.down.next_delivery()])
            .flatten()
            .reduce(f64::min)
    }

    pub(super) fn next_sweep(&self) -> Option<f64> {
        self.next_sweep.is_finite().then_some(self.next_sweep)
    }

    fn sweep_interval(&self) -> f64 {
        self.config.idle_timeout.as_secs_f64() / 4.0
    }

    /// Looks for idle sessions if it is time to; true if some are to be closed.
    pub(super) fn sweep(&mut self, now: f64) -> bool {
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
    pub(super) fn close_expired(&mut self, upstream: &mut Vec<UdpSocket>) {
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
    pub(super) fn open_fresh(&mut self, upstream: &mut Vec<UdpSocket>) {
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
    pub(super) fn store(&mut self, direction: Direction, len: usize, at: f64) -> Option<PayloadId> {
        if self.payloads.in_use() >= self.config.queue_limit {
            add(&self.counters.direction(direction).overflowed, 1);
            return None;
        }
        Some(self.payloads.store(&self.scratch[..len], at))
    }

    /// Reads what clients sent to the listening socket.
    pub(super) fn read_clients(&mut self, listen: &UdpSocket) {
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
    pub(super) fn read_server(&mut self, session: usize, socket: &UdpSocket) {
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
    pub(super) fn deliver(&mut self, listen: &UdpSocket, upstream: &[UdpSocket]) {
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
pub(super) fn widen_receive_buffer(socket: &UdpSocket) {
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
    fn sessions_and_directions_get_distinct_seeds() {
        let mut seeds: Vec<u64> = (0..100)
            .flat_map(|s| [session_seed(7, s, 0), session_seed(7, s, 1)])
            .collect();
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), 200);
        assert_ne!(session_seed(7, 0, 0), session_seed(8, 0, 0));
    }
}
