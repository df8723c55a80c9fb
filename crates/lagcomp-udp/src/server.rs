//! The game server of `lagcomp serve`: the simulator's server ([`ServerCore`]) on a fixed
//! tick over real UDP, with renet and netcode carrying the wire protocol.
//!
//! One thread. It waits on the socket with `ppoll(2)` until a datagram arrives or the next
//! tick is due (or, with [`ServeConfig::busy_poll`], polls without sleeping), so every
//! input is timestamped when it arrives (by the kernel's receive stamp where there is
//! one, not when it is read, nor at the next tick) and a clock-sync ping is answered at
//! once. Each tick at its deadline: every body moves, the
//! frame is recorded in the history (and the recording), the shots that arrived since the
//! last tick are validated in arrival order on this thread (or, with
//! [`ServeConfig::parallel_validation`], together on rayon's threads:
//! [`lagcomp_service::batch::validate_batch`], the same verdicts), each verdict goes to the
//! audit log and back to its shooter as a [`ShotResult`] (numbered, and repeated with each
//! of the shooter's snapshots until its inputs acknowledge it: `lagcomp_wire::verdicts`),
//! and the snapshot goes out to the
//! clients whose turn it is (every client every tick at the full send rate; below it, the
//! clients' turns are spread over the ticks), with a round-trip probe four times a second.
//! Each client is sent its own body and the bodies near it ([`ServeConfig::interest`]:
//! interest management, [`lagcomp_game::interest`]), each encoded once a tick and packed
//! into every client's parts, all in one buffer. A client's tick (its snapshot part, its
//! verdicts, the probe, its shot acknowledgement, and with every eighth snapshot or so
//! renet's acknowledgement of its inputs) goes as one datagram of records
//! (`lagcomp_wire::datagram`), encrypted by netcode beside renet rather than packed by it;
//! renet keeps the connection, the welcome and the inputs. Everything goes out once a
//! tick, through this crate's own netcode transport; only a clock-sync answer goes out at
//! once, to its client alone. How long each tick's work took is measured, from the
//! deadline's wake-up to the last packet handed to the socket. A server that stalled runs
//! the ticks it missed (up to [`MAX_STALL_REPLAY`]), each with the inputs that arrived
//! before it; one more than [`MAX_CATCH_UP`] ticks behind because its ticks are slow
//! skips ticks rather than fall ever further behind, and counts them.
//!
//! Where a tick's time goes with 200 clients (perf, 20 m view, one datagram per client
//! per tick): about 42 % in the kernel sending datagrams (loopback delivery included),
//! 25 % encrypting them (netcode's ChaCha20-Poly1305), 8 % interest management, 6 %
//! moving and recording, 5 % validating, 2.5 % encoding snapshots, under 5 % renet. So
//! the cost is still per datagram, and there is now one per client per tick: each body
//! goes as the stance its bones are computed from (61 bytes, not 247 for its bones), so a
//! client's snapshot is one part for up to 16 bodies in view, and its verdicts and
//! renet's acknowledgements ride in the same datagram.
//!
//! A client that connects gets a body and a [`Welcome`] naming it; one that leaves is
//! despawned. Undecodable messages are dropped and counted per client by a
//! [`MalformedGuard`]; a client past its threshold (or speaking another protocol version)
//! is disconnected.
//!
//! A claim sent again unchanged after it was answered (a replay whose sequence number the
//! shot receiver no longer remembers) is answered again from a per-client memory of the
//! last shots validated, not validated or written again; a client's new claims past
//! [`ServeConfig::max_verdicts_per_second`] are dropped, each a strike for the guard. The
//! recording and the audit log are flushed once a tick, before its verdicts go out, so a
//! server killed outright has told no one a verdict that is not in them.
//!
//! What is not here: the world's rules (that is `lagcomp_game`), argument parsing and
//! printing (`lagcomp-cli`'s `serve.rs`).

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::net::{SocketAddr, UdpSocket};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use lagcomp::{BoneTransform, EntityId, EntityState, HistoryConfig, Tick};
use lagcomp_game::body::{ArenaError, ArenaSpec, BONES};
use lagcomp_game::interest::{Interest, InterestConfig};
use lagcomp_game::server::{CoreConfig, CoreError, QueuedShot, ServerCore};
use lagcomp_game::traffic::{ClientInput, fingerprint};
use lagcomp_game::weapon::rules;
use lagcomp_service::batch::validate_batch;
use lagcomp_validate::recording::RecordingWriter;
use lagcomp_validate::{AuditLog, ClientTiming, ShotClaim, Verdict};
use lagcomp_wire::{
    ClientMessage, EncodeError, EncodedEntities, EntityFrame, EntityPose, GuardConfig,
    GuardConfigError, MalformedGuard, Penalty, Probe, ServerMessage, ShotOutcome, ShotResult,
    SnapshotEncoder, VerdictOutbox, Welcome,
    datagram::{DatagramWriter, Record},
};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use renet::{ClientId, RenetServer, ServerEvent};
use renet_netcode::{ServerAuthentication, ServerConfig};
use renetcode::NETCODE_MAX_PAYLOAD_BYTES;

use crate::answered::{AnsweredShots, Recall};
use crate::arrival::ArrivalClock;
use crate::channel::{
    NetcodeKey, PROTOCOL_ID, TightTimers, UNRELIABLE, WELCOME, connection_config, wait_readable,
    widen_receive_buffer,
};
use crate::stats::{TickTimes, thread_cpu_time};
use crate::transport::{Acks, Route, ServerTransport};

/// The highest tick rate accepted, Hz.
pub const MAX_TICK_RATE: f64 = 128.0;

/// Netcode's own limit on connected clients.
pub const MAX_CLIENTS: usize = 1024;

/// The most overdue ticks run back to back; beyond that they are skipped (unless the
/// server only stalled: [`MAX_STALL_REPLAY`]).
pub const MAX_CATCH_UP: usize = 4;

/// The longest stall whose ticks are all run afterwards, seconds. A server that stopped
/// (a swap, a virtual machine losing its core, a debugger) while its ticks are cheap runs
/// every tick it missed, with the inputs that arrived meanwhile, each shot judged at the
/// first tick at or after its arrival, so the stall costs no honest shot; a longer
/// stall, or ticks that cost more than [`REPLAY_LOAD`] of their interval (an overloaded
/// server), skip ticks past [`MAX_CATCH_UP`] instead.
pub const MAX_STALL_REPLAY: f64 = 3.0;

/// A tick replaying a stall sends its snapshot if its time is at most this far behind
/// the present, seconds: as far back as clients draw (a client's interpolation delay is
/// taken up to 0.3 s).
const REPLAY_SNAPSHOTS: f64 = 0.3;

/// The share of a tick interval the ticks of a catch-up may take each, on average (the
/// thread's CPU time where it has a clock), for the catch-up to go on past
/// [`MAX_CATCH_UP`]: above it the server is overloaded, not stalled, and running every
/// missed tick would put it further behind.
pub const REPLAY_LOAD: f64 = 0.5;

/// How often a client is sent renet's acknowledgement of what it sent (about; see
/// `transport.rs`): it sends nothing reliable, so they only keep renet's statistics.
const ACKS_PER_SECOND: f64 = 8.0;

/// Who each client is sent by default: the bodies within 70 m, kept until 75 m. That is
/// all of the standard arena (46 m square, 65 m corner to corner), so a match there plays
/// as it did before interest management; a bigger arena's clients get their part of it.
///
/// A rifle reaches 200 m, further than that: a shot that misses what its shooter drew
/// can hit a body the shooter was never sent, and the server confirms it (the body was
/// there; validation uses everyone). Bots count such a hit as a false confirmation.
pub const DEFAULT_INTEREST: InterestConfig = InterestConfig {
    radius: 70.0,
    hysteresis: 5.0,
};

/// [`ServeConfig::max_verdicts_per_second`] by default: five times the rifle's 10 shots a
/// second, so an honest client's shots held up by a stall of a few seconds and arriving
/// together still pass, while a client sending new claims as fast as it can writes at most
/// this many verdicts a second until the guard disconnects it.
pub const DEFAULT_MAX_VERDICTS_PER_SECOND: u32 = 50;

/// How a server is set up.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// Where to listen (port 0 picks a free one).
    pub listen: SocketAddr,
    /// Ticks per second, 1 to [`MAX_TICK_RATE`].
    pub tick_rate: f64,
    /// Snapshots per second, up to the tick rate (rounded to a whole number of ticks).
    pub send_rate: f64,
    /// The history's window, seconds.
    pub max_rewind: f64,
    /// Respawns per player per second.
    pub respawn_rate: f64,
    /// Seed of the bodies' movement.
    pub seed: u64,
    /// The most players at once, up to [`MAX_CLIENTS`].
    pub max_clients: usize,
    /// The largest snapshot part, bytes.
    pub snapshot_budget: usize,
    /// When a client is disconnected for malformed messages.
    pub guard: GuardConfig,
    /// The arena, sent to every client in its welcome.
    pub arena: ArenaSpec,
    /// Which entities each client is sent: those near it ([`InterestConfig`]), or
    /// everyone (`None`).
    pub interest: Option<InterestConfig>,
    /// Validate a tick's shots on rayon's threads instead of this one. Off by default: a
    /// tick's shots take about 4 µs each on this thread, while a batch handed to a pool
    /// whose threads share two cores with the bots waits for them (9 ms at the 99th
    /// percentile with 200 bots, against 0.2 ms on this thread).
    pub parallel_validation: bool,
    /// Hand the tick's datagrams to the socket on a second thread while this one packs
    /// and encrypts the next (see `transport.rs`); the tick still ends when the last is
    /// handed to the socket, and its CPU time counts both threads'. Off by default: on
    /// this 2-core machine, shared with other builds and the bots, it made the tick slower
    /// (200 bots, 40 s back to back: p50 4.1 against 3.6 ms, p99 19.8 against 11.5 ms),
    /// since the second thread waits for a core and the hand-over costs CPU of its own
    /// (tick CPU p50 3.9 against 3.5 ms). Not measured on a quiet machine.
    pub send_thread: bool,
    /// Wait for datagrams and for the next tick by polling the socket in a loop instead of
    /// sleeping in `ppoll(2)`: the thread never leaves its core. It costs that core, and
    /// buys a tick that starts on a running CPU: on a virtual machine a CPU that goes idle
    /// is handed to others by the hypervisor, and the work after it wakes is what suffers
    /// (`steady_work` example, BENCHMARKS.md "Server under load"). Off by default.
    pub busy_poll: bool,
    /// netcode's private key: with one, clients join only with connect tokens minted with
    /// it (secure mode, see [`crate::channel`]); without, anyone who reaches the port may
    /// join (unsecure mode, the default).
    pub private_key: Option<NetcodeKey>,
    /// The addresses a connect token may name for this server (where clients reach it);
    /// empty means the address it is bound to. A server listening on `0.0.0.0` needs the
    /// address its players are given here.
    pub public_addresses: Vec<SocketAddr>,
    /// The most shots validated (and written to the recording and the audit log) for one
    /// client in a second, at least 1. A shot past it is dropped unanswered, counted
    /// ([`Status::verdicts_capped`]) and a strike for the malformed-message guard
    /// ([`ServeConfig::guard`]), so a client that keeps it up is disconnected. Copies of
    /// shots already answered do not count: they are answered again from memory.
    pub max_verdicts_per_second: u32,
}

impl ServeConfig {
    /// The defaults (64 Hz ticks and snapshots, a 0.5 s window, the simulator's respawn
    /// rate, 256 players, the standard arena, each client sent the bodies within
    /// [`DEFAULT_INTEREST`]) on `listen`.
    #[must_use]
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            tick_rate: 64.0,
            send_rate: 64.0,
            max_rewind: 0.5,
            respawn_rate: 0.05,
            seed: 1,
            max_clients: 256,
            snapshot_budget: SnapshotEncoder::DEFAULT_BUDGET,
            guard: GuardConfig::default(),
            arena: ArenaSpec::STANDARD,
            interest: Some(DEFAULT_INTEREST),
            parallel_validation: false,
            send_thread: false,
            busy_poll: false,
            private_key: None,
            public_addresses: Vec::new(),
            max_verdicts_per_second: DEFAULT_MAX_VERDICTS_PER_SECOND,
        }
    }

    /// Ticks between snapshots.
    #[must_use]
    pub fn send_every(&self) -> u32 {
        (self.tick_rate / self.send_rate)
            .round()
            .clamp(1.0, f64::from(u32::MAX)) as u32
    }
}

/// Why a server could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The tick rate is not in 1 to [`MAX_TICK_RATE`] Hz.
    #[error("tick rate {0} Hz is not between 1 and {MAX_TICK_RATE}")]
    TickRate(f64),
    /// The send rate is not positive or above the tick rate.
    #[error("send rate {send} Hz must be positive and at most the tick rate {tick} Hz")]
    SendRate {
        /// The send rate asked for.
        send: f64,
        /// The tick rate.
        tick: f64,
    },
    /// The respawn rate is not a rate.
    #[error("respawn rate {0} per second must be finite and at least 0")]
    RespawnRate(f64),
    /// Too many or no clients.
    #[error("max clients {0} is not between 1 and {MAX_CLIENTS}")]
    MaxClients(usize),
    /// A cap of no verdicts a second.
    #[error("max verdicts per second must be at least 1")]
    VerdictCap,
    /// The malformed-message guard's window is not a window.
    #[error(transparent)]
    Guard(#[from] GuardConfigError),
    /// The snapshot budget is outside what the encoder allows.
    #[error("snapshot budget: {0}")]
    Budget(EncodeError),
    /// The history refused the configuration.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The arena cannot be built.
    #[error(transparent)]
    Arena(#[from] ArenaError),
    /// The interest radius or hysteresis is not a distance.
    #[error(
        "interest radius {radius} m and hysteresis {hysteresis} m must be finite and at least 0"
    )]
    Interest {
        /// The radius.
        radius: f32,
        /// The hysteresis.
        hysteresis: f32,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// The socket failed.
    #[error("socket: {0}")]
    Socket(io::Error),
    /// Writing the recording failed (the file so far is valid up to its last line).
    #[error("writing the recording: {0}")]
    Recording(io::Error),
    /// Writing the audit log failed.
    #[error("writing the audit log: {0}")]
    Audit(io::Error),
    /// A server message could not be encoded (a non-finite number in the world).
    #[error("encoding: {0}")]
    Encode(#[from] EncodeError),
    /// The history refused a frame (ticks not increasing: a bug, not bad input).
    #[error("recording a tick: {0}")]
    Tick(#[from] lagcomp::RecordError),
}

/// Where the verdicts and the match go, besides the shooters.
#[derive(Default)]
pub struct Outputs {
    /// Every verdict as a JSON line.
    pub audit: Option<AuditLog<Box<dyn Write + Send>>>,
    /// The match recording, for `lagcomp validate`.
    pub recording: Option<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outputs")
            .field("audit", &self.audit.is_some())
            .field("recording", &self.recording.is_some())
            .finish()
    }
}

/// One second (or the whole run) of the server's work.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// Seconds since the start.
    pub elapsed: f64,
    /// Players connected now.
    pub players: usize,
    /// Ticks run.
    pub ticks: u64,
    /// Ticks that started more than a tick late.
    pub late_ticks: u64,
    /// Ticks skipped because the server was more than [`MAX_CATCH_UP`] ticks behind.
    pub skipped_ticks: u64,
    /// Tick work time, median, seconds (`None` without ticks).
    pub tick_p50: Option<f64>,
    /// Tick work time, 99th percentile, seconds.
    pub tick_p99: Option<f64>,
    /// Tick work time, the longest, seconds.
    pub tick_max: Option<f64>,
    /// Of the tick's work time, the CPU time the server's thread spent on it, median,
    /// seconds: what the work time would be with a core to itself (on a loaded machine
    /// the rest is time spent waiting for one). Not measured where the system has no
    /// thread CPU clock.
    pub cpu_p50: Option<f64>,
    /// The same, 99th percentile.
    pub cpu_p99: Option<f64>,
    /// Of that, the send thread's part (its CPU time for the tick's datagrams), median and
    /// 99th percentile (`None` without a send thread).
    pub send_cpu_p50: Option<f64>,
    /// The same, 99th percentile.
    pub send_cpu_p99: Option<f64>,
    /// Datagrams the ticks handed to the socket (snapshots with their verdicts, renet's
    /// acknowledgements and resends; not the answers to pings, sent at once between ticks).
    pub tick_datagrams: u64,
    /// Verdicts dropped before their shooter acknowledged them, because
    /// [`VerdictOutbox::CAPACITY`] of its verdicts were waiting (a client that stopped
    /// acknowledging).
    pub verdicts_given_up: u64,
    /// Of the tick's work, moving the bodies and recording the frame: 99th percentile.
    pub record_p99: Option<f64>,
    /// Validating the tick's shots and sending their results: 99th percentile.
    pub validate_p99: Option<f64>,
    /// Encoding and sending snapshots: 99th percentile.
    pub send_p99: Option<f64>,
    /// The tick budget (one tick interval), seconds.
    pub budget: f64,
    /// Shots validated.
    pub shots: u64,
    /// Copies of shots already answered (a replayed claim sent again unchanged), answered
    /// again from memory instead of validated and written again.
    pub copies_answered: u64,
    /// Shots dropped unvalidated because their client was past
    /// [`ServeConfig::max_verdicts_per_second`].
    pub verdicts_capped: u64,
    /// Verdicts by outcome label (`confirmed`, `miss`, `blocked`, or the rejection reason).
    pub verdicts: BTreeMap<&'static str, u64>,
    /// Malformed messages dropped.
    pub malformed: u64,
    /// Clients disconnected for them.
    pub kicked: u64,
    /// Datagrams dropped before netcode because they were not netcode's framing (a
    /// prefix byte naming no packet type or a sequence longer than 8 bytes, a length
    /// their packet type never has): noise, or an attack on the netcode library.
    pub framing_drops: u64,
    /// Connection requests dropped before netcode: over the rate limits (per source IP
    /// and for everyone), or, in unsecure mode, with a token that expires further ahead
    /// than [`crate::channel::UNSECURE_EXPIRY_LIMIT_SECS`].
    pub refused_requests: u64,
    /// Datagrams whose processing panicked inside netcode or renet and was contained
    /// (dropped, the sender disconnected if a client, logged at error level). No known
    /// input gets here; one that does is a bug to report.
    pub contained_panics: u64,
    /// Snapshots sent (one per client whose turn it was, in however many parts).
    pub snapshots: u64,
    /// Snapshot parts sent (messages).
    pub snapshot_parts: u64,
    /// Entities in the snapshots sent (with interest management, each client's view).
    pub snapshot_entities: u64,
    /// Players that joined.
    pub joined: u64,
    /// Players that left.
    pub left: u64,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |t: Option<f64>| t.map_or_else(|| "-".to_owned(), |t| format!("{:.3}", t * 1e3));
        write!(
            f,
            "players {} | tick p50 {} ms, p99 {} ms, max {} ms of {:.3} ms ({} ticks, {} late, \
             {} skipped)",
            self.players,
            ms(self.tick_p50),
            ms(self.tick_p99),
            ms(self.tick_max),
            self.budget * 1e3,
            self.ticks,
            self.late_ticks,
            self.skipped_ticks,
        )?;
        if self.ticks > 0 {
            write!(
                f,
                " | p99 record {} ms, validate {} ms, send {} ms | CPU p50 {} ms, p99 {} ms",
                ms(self.record_p99),
                ms(self.validate_p99),
                ms(self.send_p99),
                ms(self.cpu_p50),
                ms(self.cpu_p99)
            )?;
            if self.send_cpu_p50.is_some() {
                write!(
                    f,
                    " (send thread p50 {} ms, p99 {} ms)",
                    ms(self.send_cpu_p50),
                    ms(self.send_cpu_p99)
                )?;
            }
        }
        write!(f, " | shots {}", self.shots)?;
        if !self.verdicts.is_empty() {
            let verdicts: Vec<String> = self
                .verdicts
                .iter()
                .map(|(label, n)| format!("{label} {n}"))
                .collect();
            write!(f, " ({})", verdicts.join(", "))?;
        }
        if self.copies_answered > 0 || self.verdicts_capped > 0 {
            write!(
                f,
                " | copies answered from memory {}, shots over the verdict cap {}",
                self.copies_answered, self.verdicts_capped
            )?;
        }
        if self.snapshots > 0 {
            write!(
                f,
                " | snapshots {} ({:.1} parts, {:.1} entities each; {:.2} datagrams per \
                 snapshot)",
                self.snapshots,
                self.snapshot_parts as f64 / self.snapshots as f64,
                self.snapshot_entities as f64 / self.snapshots as f64,
                self.tick_datagrams as f64 / self.snapshots as f64
            )?;
        }
        write!(f, " | malformed {}", self.malformed)?;
        if self.kicked > 0 {
            write!(f, " ({} disconnected)", self.kicked)?;
        }
        if self.framing_drops + self.refused_requests + self.contained_panics > 0 {
            write!(
                f,
                " | dropped: {} not netcode, {} connection requests, {} panics contained",
                self.framing_drops, self.refused_requests, self.contained_panics
            )?;
        }
        Ok(())
    }
}

/// Counters over some stretch of time.
#[derive(Debug, Clone, Default)]
struct Counters {
    ticks: u64,
    late_ticks: u64,
    skipped: u64,
    times: TickTimes,
    /// The thread CPU time of each tick's work (with the send thread's).
    cpu: TickTimes,
    /// The send thread's share of it.
    send_cpu: TickTimes,
    tick_datagrams: u64,
    verdicts_given_up: u64,
    /// The parts of a tick's work: moving and recording, validating and answering,
    /// sending snapshots.
    record: TickTimes,
    validate: TickTimes,
    send: TickTimes,
    shots: u64,
    copies_answered: u64,
    verdicts_capped: u64,
    verdicts: BTreeMap<&'static str, u64>,
    malformed: u64,
    kicked: u64,
    framing_drops: u64,
    refused_requests: u64,
    contained_panics: u64,
    snapshots: u64,
    snapshot_parts: u64,
    snapshot_entities: u64,
    joined: u64,
    left: u64,
}

impl Counters {
    fn status(&self, elapsed: f64, players: usize, budget: f64) -> Status {
        Status {
            elapsed,
            players,
            ticks: self.ticks,
            late_ticks: self.late_ticks,
            skipped_ticks: self.skipped,
            tick_p50: self.times.quantile(0.5),
            tick_p99: self.times.quantile(0.99),
            tick_max: self.times.max(),
            cpu_p50: self.cpu.quantile(0.5),
            cpu_p99: self.cpu.quantile(0.99),
            send_cpu_p50: self.send_cpu.quantile(0.5),
            send_cpu_p99: self.send_cpu.quantile(0.99),
            tick_datagrams: self.tick_datagrams,
            verdicts_given_up: self.verdicts_given_up,
            record_p99: self.record.quantile(0.99),
            validate_p99: self.validate.quantile(0.99),
            send_p99: self.send.quantile(0.99),
            budget,
            shots: self.shots,
            copies_answered: self.copies_answered,
            verdicts_capped: self.verdicts_capped,
            verdicts: self.verdicts.clone(),
            malformed: self.malformed,
            kicked: self.kicked,
            framing_drops: self.framing_drops,
            refused_requests: self.refused_requests,
            contained_panics: self.contained_panics,
            snapshots: self.snapshots,
            snapshot_parts: self.snapshot_parts,
            snapshot_entities: self.snapshot_entities,
            joined: self.joined,
            left: self.left,
        }
    }
}

/// What sending a tick's snapshots keeps from tick to tick, so it stops allocating once
/// grown (but for the one buffer a tick that every client's queue shares).
#[derive(Debug, Default)]
struct EntityScratch {
    /// Every body's entity and feet, for interest management.
    bodies: Vec<(EntityId, lagcomp::Vec3)>,
    /// Every body encoded once.
    entities: EncodedEntities,
    /// Each due client's parts: connection index, its range in `ranges`, entities in them.
    views: Vec<(usize, Range<usize>, u64)>,
    /// Parts, as ranges of the tick's buffer.
    ranges: Vec<Range<usize>>,
    /// Each due client's verdicts message, if it has verdicts waiting: connection index,
    /// range of the tick's buffer.
    verdicts: Vec<(usize, Range<usize>)>,
    /// The largest tick buffer so far, to allocate the next one at once.
    last_len: usize,
}

/// A connected client.
#[derive(Debug, Clone)]
struct Connection {
    client: ClientId,
    entity: EntityId,
    /// Whether a message from it has arrived: only then is it sent snapshots.
    ///
    /// Netcode's handshake ends when the client receives a keep-alive, which the server
    /// sends once on connecting and then only after 250 ms without other packets to that
    /// client. Snapshots at the tick rate would leave no such gap, so a client whose one
    /// keep-alive was lost would wait forever; its first message proves it got one. (The
    /// welcome, all it gets until then, is resent 400 ms apart: see
    /// [`crate::channel::connection_config`].)
    ready: bool,
    /// Which ticks it gets snapshots on (below the tick rate): those where tick plus
    /// phase is a multiple of the ticks between snapshots, so the clients' snapshots are
    /// spread over the ticks instead of all on one.
    phase: u32,
    /// The tick of the latest round-trip probe it was sent.
    probed: Option<u32>,
    /// Whether something was queued for it this tick (its packets go out at the tick's
    /// end; a client with nothing new is not sent renet's acknowledgement alone).
    outgoing: bool,
    /// Its shots' verdicts it has not acknowledged: they go with each of its snapshots.
    verdicts: VerdictOutbox,
    /// Snapshots sent since the last that carried renet's acknowledgement of its inputs.
    snapshots_since_acks: u32,
    /// Its shots validated lately, to answer copies of them from memory.
    answered: AnsweredShots,
    /// Server time the current second of its verdict cap began, and the shots validated
    /// in it.
    cap_since: f64,
    cap_used: u32,
    /// Whether it was disconnected for going on past the cap (its goodbye pending).
    capped_out: bool,
}

impl Connection {
    /// The verdict of shot `seq`, whose claim's fingerprint is `print`: it goes with the
    /// client's snapshots until acknowledged, and is remembered to answer copies of the
    /// claim. Returns how many older verdicts were given up to make room for it.
    fn answer(&mut self, seq: u32, print: u64, outcome: ShotOutcome) -> u64 {
        let outbox = &mut self.verdicts;
        let number = outbox.first().wrapping_add(outbox.len() as u32);
        let given_up = outbox.given_up();
        outbox.push(ShotResult { seq, outcome });
        self.answered.answer(seq, print, outcome, number);
        self.verdicts.given_up() - given_up
    }
}

/// The game server (see the [module documentation](self)).
pub struct GameServer {
    config: ServeConfig,
    core: ServerCore,
    renet: RenetServer,
    transport: ServerTransport,
    /// The transport's socket, shared, to wait on.
    socket: [UdpSocket; 1],
    local_addr: SocketAddr,
    connections: Vec<Connection>,
    by_client: HashMap<ClientId, EntityId>,
    guard: MalformedGuard<ClientId>,
    encoder: SnapshotEncoder,
    frames: Vec<EntityFrame>,
    /// Who each client is sent, when not everyone.
    interest: Option<Interest>,
    /// This tick's entities, each encoded once, for every client's view.
    encoded: EntityScratch,
    claims: Vec<(ShotClaim, f64)>,
    /// Each of `claims`' fingerprint (`lagcomp_game::traffic::fingerprint`).
    prints: Vec<u64>,
    scratch: Vec<u8>,
    /// The datagram of records being filled for a client.
    datagram: DatagramWriter,
    /// Scratch: renet's packets for a client.
    packets: Vec<Vec<u8>>,
    join_rng: Pcg64Mcg,
    audit: Option<AuditLog<Box<dyn Write + Send>>>,
    recording: Option<RecordingWriter<Box<dyn Write + Send>>>,
    timings: HashMap<EntityId, ClientTiming>,
    second: Counters,
    total: Counters,
    last_update: f64,
    /// Server time up to which every datagram has been read (see `pump`).
    read_until: f64,
    /// When renet's clock was last advanced.
    renet_updated: f64,
    /// The send thread's CPU time for the latest tick's datagrams, if it has a clock.
    send_cpu: Option<f64>,
    next_tick: u32,
    next_phase: u32,
}

impl std::fmt::Debug for GameServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GameServer")
            .field("config", &self.config)
            .field("local_addr", &self.local_addr)
            .field("players", &self.connections.len())
            .finish_non_exhaustive()
    }
}

/// What a run did, when it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Over the whole run.
    pub status: Status,
    /// Lines in the recording, if one was written.
    pub recording_lines: Option<usize>,
    /// Verdicts in the audit log, if one was written.
    pub audited: Option<u64>,
}

impl GameServer {
    /// Binds the socket and sets up the world (the configured arena), the history and the
    /// outputs (the recording's header, rules and walls are written now).
    ///
    /// # Errors
    /// A configuration out of range, an address that cannot be bound, a recording that
    /// cannot be written.
    pub fn bind(config: ServeConfig, outputs: Outputs) -> Result<Self, ServeError> {
        if !(1.0..=MAX_TICK_RATE).contains(&config.tick_rate) {
            return Err(ServeError::TickRate(config.tick_rate));
        }
        if !(config.send_rate > 0.0 && config.send_rate <= config.tick_rate) {
            return Err(ServeError::SendRate {
                send: config.send_rate,
                tick: config.tick_rate,
            });
        }
        if !(config.respawn_rate.is_finite() && config.respawn_rate >= 0.0) {
            return Err(ServeError::RespawnRate(config.respawn_rate));
        }
        if !(1..=MAX_CLIENTS).contains(&config.max_clients) {
            return Err(ServeError::MaxClients(config.max_clients));
        }
        if config.max_verdicts_per_second == 0 {
            return Err(ServeError::VerdictCap);
        }
        if let Some(interest) = config.interest
            && !interest.is_valid()
        {
            return Err(ServeError::Interest {
                radius: interest.radius,
                hysteresis: interest.hysteresis,
            });
        }
        let encoder = SnapshotEncoder::new(config.snapshot_budget).map_err(ServeError::Budget)?;
        let guard = MalformedGuard::new(config.guard)?;
        let mut core = ServerCore::new(
            CoreConfig {
                tick_rate: config.tick_rate,
                max_rewind: config.max_rewind,
                respawn_rate: config.respawn_rate,
            },
            config.arena.build()?,
        )?;
        // Room for every player it may take: a join never stalls a tick growing the
        // history.
        core.reserve(config.max_clients);
        let bind_error = |source| ServeError::Bind {
            addr: config.listen,
            source,
        };
        let socket = UdpSocket::bind(config.listen).map_err(bind_error)?;
        widen_receive_buffer(&socket);
        let local_addr = socket.local_addr().map_err(bind_error)?;
        let waiter = socket.try_clone().map_err(bind_error)?;
        let transport = ServerTransport::new(
            ServerConfig {
                current_time: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default(),
                max_clients: config.max_clients,
                protocol_id: PROTOCOL_ID,
                public_addresses: if config.public_addresses.is_empty() {
                    vec![local_addr]
                } else {
                    config.public_addresses.clone()
                },
                authentication: config
                    .private_key
                    .map_or(ServerAuthentication::Unsecure, |private_key| {
                        ServerAuthentication::Secure { private_key }
                    }),
            },
            socket,
        )
        .map_err(bind_error)?;
        let transport = if config.send_thread {
            transport.with_send_thread().map_err(bind_error)?
        } else {
            transport
        };
        let recording = match outputs.recording {
            Some(out) => {
                let mut writer = RecordingWriter::new(
                    out,
                    &HistoryConfig {
                        tick_rate: config.tick_rate,
                        max_rewind: config.max_rewind,
                    },
                )
                .map_err(ServeError::Recording)?;
                writer
                    .rules(&rules(config.max_rewind))
                    .map_err(ServeError::Recording)?;
                for (shape, pose) in &core.arena().walls {
                    writer
                        .static_collider(*shape, *pose, u32::MAX)
                        .map_err(ServeError::Recording)?;
                }
                Some(writer)
            }
            None => None,
        };
        let interest = config.interest.map(Interest::new);
        Ok(Self {
            join_rng: Pcg64Mcg::seed_from_u64(config.seed),
            config,
            core,
            renet: RenetServer::new(connection_config()),
            transport,
            socket: [waiter],
            local_addr,
            connections: Vec::new(),
            by_client: HashMap::new(),
            guard,
            encoder,
            frames: Vec::new(),
            interest,
            encoded: EntityScratch::default(),
            claims: Vec::new(),
            prints: Vec::new(),
            scratch: Vec::new(),
            datagram: DatagramWriter::new(NETCODE_MAX_PAYLOAD_BYTES),
            packets: Vec::new(),
            audit: outputs.audit,
            recording,
            timings: HashMap::new(),
            second: Counters::default(),
            total: Counters::default(),
            last_update: 0.0,
            read_until: 0.0,
            renet_updated: 0.0,
            send_cpu: None,
            next_tick: 0,
            next_phase: 0,
        })
    }

    /// The address the server listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &ServeConfig {
        &self.config
    }

    /// Runs until `stop` is set or, if given, `duration` has passed; calls `status` once a
    /// second with that second's figures. Then disconnects everyone, finishes the outputs
    /// and returns the whole run's figures.
    ///
    /// # Errors
    /// [`ServeError`]: the socket or an output failed (the outputs are flushed as far as
    /// they got).
    pub fn run(
        mut self,
        stop: &AtomicBool,
        duration: Option<Duration>,
        mut status: impl FnMut(&Status),
    ) -> Result<Summary, ServeError> {
        let _timers = TightTimers::new();
        let start = Instant::now();
        let dt = 1.0 / self.config.tick_rate;
        let end = duration.map(|d| d.as_secs_f64());
        let mut next_status = 1.0;
        let mut ready = Vec::with_capacity(1);
        let result = loop {
            let now = start.elapsed().as_secs_f64();
            if stop.load(Ordering::Acquire) || end.is_some_and(|end| now >= end) {
                break Ok(());
            }
            if let Err(error) = self.pump(now, dt) {
                break Err(error);
            }
            if let Err(error) = self.catch_up(&start, dt) {
                break Err(error);
            }
            let now = start.elapsed().as_secs_f64();
            if now >= next_status {
                status(&self.second.status(now, self.connections.len(), dt));
                self.second = Counters::default();
                // One line per second, and one only after a stall.
                next_status = now.floor() + 1.0;
            }
            let wake = [f64::from(self.next_tick) * dt, next_status]
                .into_iter()
                .chain(end)
                .fold(f64::INFINITY, f64::min);
            let timeout = Duration::from_secs_f64((wake - now).clamp(0.0, 1.0));
            let waited = if self.transport.has_kept() {
                // A datagram read early waits for the next tick, which is due.
                Ok(())
            } else if self.config.busy_poll {
                spin_until_readable(&self.socket[0], &start, wake)
            } else {
                wait_readable(&self.socket, timeout, &mut ready)
            };
            if let Err(error) = waited {
                break Err(ServeError::Socket(error));
            }
        };
        let elapsed = start.elapsed().as_secs_f64();
        self.transport.disconnect_all(&mut self.renet);
        let finished = self.finish();
        result?;
        let (recording_lines, audited) = finished?;
        Ok(Summary {
            status: self
                .total
                .status(elapsed, self.connections.len(), 1.0 / self.config.tick_rate),
            recording_lines,
            audited,
        })
    }

    /// Flushes the outputs: (recording lines, verdicts audited).
    fn finish(&mut self) -> Result<(Option<usize>, Option<u64>), ServeError> {
        let recording_lines = match self.recording.take() {
            Some(writer) => {
                let lines = writer.lines();
                writer.finish().map_err(ServeError::Recording)?;
                Some(lines)
            }
            None => None,
        };
        let audited = match self.audit.take() {
            Some(log) => {
                let written = log.written();
                log.finish().map_err(ServeError::Audit)?;
                Some(written)
            }
            None => None,
        };
        Ok((recording_lines, audited))
    }

    /// Runs the ticks whose deadlines have passed: more than one only after a stall, and
    /// at most [`MAX_CATCH_UP`], or every one of a stall up to [`MAX_STALL_REPLAY`] while
    /// they are cheap ([`REPLAY_LOAD`]; only the most recent of those send snapshots); a
    /// server
    /// further behind than that skips the rest (the next tick is the one due now), so an
    /// overloaded server falls behind by dropped ticks instead of sinking ever further
    /// behind the clock its clients sync to.
    fn catch_up(&mut self, start: &Instant, dt: f64) -> Result<(), ServeError> {
        let mut ran = 0_usize;
        let mut replay_began = None;
        loop {
            let deadline = f64::from(self.next_tick) * dt;
            let began = start.elapsed().as_secs_f64();
            if began < deadline {
                return Ok(());
            }
            let replaying = ran >= MAX_CATCH_UP;
            if replaying {
                // The replay's cost is measured from its own start, in the thread's CPU
                // time where there is a clock for it (on a busy machine the wall time
                // counts the waits for a core, which say nothing of the server's load),
                // with a few ticks' grace.
                let spent = thread_cpu_time().unwrap_or(began);
                let since = spent - *replay_began.get_or_insert(spent);
                let replayed = ran as f64;
                if began - deadline > MAX_STALL_REPLAY || since > replayed * dt * REPLAY_LOAD {
                    break;
                }
            }
            let cpu_began = thread_cpu_time();
            // Inputs that arrived before the tick are in before it.
            self.pump(began, dt)?;
            let tick = Tick(self.next_tick);
            self.next_tick += 1;
            let datagrams = self.transport.datagrams();
            // A tick replaying a stall sends its snapshot only if it is recent enough for
            // a client to draw (the rest are gone by the time they would arrive), so the
            // clients have snapshots to interpolate between on both sides of their
            // present again rather than one from before the stall and one after.
            let snapshot = !replaying || began - deadline <= REPLAY_SNAPSHOTS;
            self.tick(tick, deadline, began, snapshot)?;
            ran += 1;
            let took = start.elapsed().as_secs_f64() - began;
            let send_cpu = self.send_cpu.take();
            let cpu = thread_cpu_time()
                .map(|end| end - cpu_began.unwrap_or(end) + send_cpu.unwrap_or(0.0));
            let datagrams = self.transport.datagrams() - datagrams;
            for counters in [&mut self.second, &mut self.total] {
                counters.ticks += 1;
                counters.times.record(took);
                counters.tick_datagrams += datagrams;
                if let Some(cpu) = cpu {
                    counters.cpu.record(cpu);
                }
                if let Some(send_cpu) = send_cpu {
                    counters.send_cpu.record(send_cpu);
                }
                if began - deadline > dt {
                    counters.late_ticks += 1;
                }
            }
        }
        let due = (start.elapsed().as_secs_f64() / dt).floor();
        if due > f64::from(self.next_tick) {
            let due = due.min(f64::from(u32::MAX)) as u32;
            let skipped = u64::from(due - self.next_tick);
            for counters in [&mut self.second, &mut self.total] {
                counters.skipped += skipped;
            }
            self.next_tick = due;
        }
        Ok(())
    }

    /// Reads the socket: connections, disconnections and inputs (answering pings at
    /// once), then sends what is queued. Each datagram's messages are read before the
    /// next datagram, with the time it arrived ([`ArrivalClock`]): a burst queued while
    /// the server was busy keeps its spacing.
    fn pump(&mut self, now: f64, dt: f64) -> Result<(), ServeError> {
        let delta = Duration::from_secs_f64((now - self.last_update).max(0.0));
        self.last_update = now;
        // With a tick due, what arrived after its deadline waits for the tick after it:
        // after a stall, each tick replaying it reads what arrived before it
        // (`catch_up`), so its inputs and shots meet the world as it was.
        let deadline = f64::from(self.next_tick) * dt;
        let clock = ArrivalClock::at(now, self.read_until);
        let wall_until = if now < deadline {
            self.read_until = now;
            Duration::MAX
        } else {
            self.read_until = deadline;
            clock.wall_at(deadline)
        };
        self.transport.begin_receive(delta);
        loop {
            let heard = self
                .transport
                .next_payload(&mut self.renet, wall_until)
                .map_err(ServeError::Socket)?;
            self.handle_events()?;
            let Some((client, stamp)) = heard else { break };
            self.read_messages(client, clock.arrival(stamp), now)?;
        }
        self.transport.end_receive(&mut self.renet);
        let refused = self.transport.take_refused();
        for counters in [&mut self.second, &mut self.total] {
            counters.framing_drops += refused.framing;
            counters.refused_requests += refused.requests;
            counters.contained_panics += refused.panics;
        }
        self.handle_events()
    }

    /// Renet's connections and disconnections so far.
    fn handle_events(&mut self) -> Result<(), ServeError> {
        while let Some(event) = self.renet.get_event() {
            match event {
                ServerEvent::ClientConnected { client_id } => self.connect(client_id)?,
                ServerEvent::ClientDisconnected { client_id, .. } => {
                    self.disconnect(client_id)?;
                }
            }
        }
        Ok(())
    }

    /// Every message waiting from `heard`, which arrived at server time `arrival` (read
    /// at `now`): inputs into the core (a ping answered at once), malformed ones counted.
    fn read_messages(&mut self, heard: ClientId, arrival: f64, now: f64) -> Result<(), ServeError> {
        let Some(i) = self.connections.iter().position(|c| c.client == heard) else {
            return Ok(());
        };
        let Connection { client, entity, .. } = self.connections[i];
        while let Some(bytes) = self.renet.receive_message(client, UNRELIABLE) {
            self.connections[i].ready = true;
            match ClientMessage::decode(&bytes) {
                Ok(ClientMessage::Input(input)) => {
                    if let Some(received) = input.verdicts_received {
                        self.connections[i].verdicts.acknowledge(received);
                    }
                    let input = ClientInput {
                        frame: input.frame,
                        aim: input.aim,
                        ping: input.ping,
                        probe_reply: input.probe_reply.map(|r| r.id),
                        shots: input.shots,
                        interp_delay: input.interp_delay,
                        newest_tick: input.newest_tick,
                    };
                    if let Some(mut pong) = self.core.receive(entity, input, arrival) {
                        pong.server_send = now;
                        // At once, so its times are the ping's arrival and the answer's
                        // departure; to this client alone (everyone else's packets go
                        // out with the tick).
                        ServerMessage::Pong(pong).encode(&mut self.scratch)?;
                        self.datagram.clear();
                        if self.datagram.push(Record::Message(&self.scratch)) {
                            self.transport.send_payload(
                                client,
                                self.datagram.as_bytes(),
                                Route::Now,
                            );
                        }
                        self.datagram.clear();
                    }
                }
                Err(error) => {
                    self.second.malformed += 1;
                    self.total.malformed += 1;
                    let penalty = self.guard.record(client, now);
                    if error.is_incompatible() || penalty == Penalty::Disconnect {
                        self.second.kicked += 1;
                        self.total.kicked += 1;
                        self.renet.disconnect(client);
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// A client connected: its body, its registration, its welcome.
    fn connect(&mut self, client: ClientId) -> Result<(), ServeError> {
        let entity = self.core.join(&mut self.join_rng);
        if let Some(writer) = &mut self.recording {
            let participant = self
                .core
                .participant(entity)
                .expect("the player just joined");
            writer
                .spawn(entity, self.core.rig(), &participant)
                .map_err(ServeError::Recording)?;
        }
        let phase = self.next_phase;
        self.next_phase = (self.next_phase + 1) % self.config.send_every();
        self.connections.push(Connection {
            client,
            entity,
            ready: false,
            probed: None,
            outgoing: true,
            phase,
            verdicts: VerdictOutbox::new(),
            snapshots_since_acks: 0,
            answered: AnsweredShots::new(),
            cap_since: f64::NEG_INFINITY,
            cap_used: 0,
            capped_out: false,
        });
        self.by_client.insert(client, entity);
        self.second.joined += 1;
        self.total.joined += 1;
        let welcome = ServerMessage::Welcome(Welcome {
            you: entity,
            tick_rate: self.config.tick_rate,
            send_rate: self.config.tick_rate / f64::from(self.config.send_every()),
            max_rewind: self.config.max_rewind,
            bones: BONES as u16,
            arena_half_size: self.config.arena.half_size,
            arena_walls: self.config.arena.walls,
            arena_seed: self.config.arena.seed,
        });
        if let Some(interest) = &mut self.interest {
            interest.add_viewer(entity);
        }
        self.send(client, WELCOME, &welcome)
    }

    /// A client left: its body goes.
    fn disconnect(&mut self, client: ClientId) -> Result<(), ServeError> {
        self.guard.forget(&client);
        let Some(entity) = self.by_client.remove(&client) else {
            return Ok(());
        };
        self.connections.retain(|c| c.client != client);
        self.timings.remove(&entity);
        if let Some(interest) = &mut self.interest {
            interest.remove_viewer(entity);
        }
        if self.core.leave(entity) {
            self.second.left += 1;
            self.total.left += 1;
            if let Some(writer) = &mut self.recording {
                writer.forget(entity).map_err(ServeError::Recording)?;
                writer.despawn(entity).map_err(ServeError::Recording)?;
            }
        }
        Ok(())
    }

    /// Encodes `message` and queues it for `client` on `channel`.
    fn send(
        &mut self,
        client: ClientId,
        channel: u8,
        message: &ServerMessage,
    ) -> Result<(), ServeError> {
        message.encode(&mut self.scratch)?;
        self.renet
            .send_message(client, channel, self.scratch.clone());
        Ok(())
    }

    /// One tick: move and record, validate, answer shooters, send the snapshot.
    fn tick(&mut self, tick: Tick, time: f64, now: f64, snapshot: bool) -> Result<(), ServeError> {
        let dt = 1.0 / self.config.tick_rate;
        let began = Instant::now();
        let mut rng = Pcg64Mcg::seed_from_u64(self.config.seed ^ (u64::from(tick.0) << 20));
        let mut queue = self.core.tick(tick, time, dt, &mut rng)?;
        self.record_frame(tick, time)?;
        let recorded = Instant::now();
        self.claims.clear();
        self.prints.clear();
        for queued in queue.drain(..) {
            self.admit(queued, now);
        }
        self.core.recycle(queue);
        if !self.claims.is_empty() {
            let claims = std::mem::take(&mut self.claims);
            if self.config.parallel_validation {
                let (history, validator) = self.core.history_and_validator();
                let verdicts = validate_batch(history, validator, &claims);
                for (i, ((claim, received), verdict)) in claims.iter().zip(&verdicts).enumerate() {
                    self.settle(claim, *received, verdict, self.prints[i])?;
                }
            } else {
                for (i, (claim, received)) in claims.iter().enumerate() {
                    let verdict = self.core.validate(claim, *received);
                    self.settle(claim, *received, &verdict, self.prints[i])?;
                }
            }
            self.claims = claims;
        }
        self.flush_outputs()?;
        let validated = Instant::now();
        if snapshot {
            self.send_snapshot(tick, time, now)?;
        }
        // Renet's clock (reliable resends, its statistics) once a tick, not at every read:
        // it walks every connection.
        self.renet
            .update(Duration::from_secs_f64((now - self.renet_updated).max(0.0)));
        self.renet_updated = now;
        self.transport.maintain(&mut self.renet);
        // Renet's packets for those not yet playing (their welcome is resent until it
        // arrives; renet's acknowledgements with it) and for those renet was given a
        // message too big for a datagram this tick. Everyone else's renet packets went
        // in their snapshot's datagram.
        for connection in &mut self.connections {
            if connection.outgoing || !connection.ready {
                connection.outgoing = false;
                let acks = if connection.ready {
                    Acks::Hold
                } else {
                    Acks::Send
                };
                self.transport.send_to_client(
                    &mut self.renet,
                    connection.client,
                    acks,
                    Route::Tick,
                );
            }
        }
        // The tick ends when its last datagram is handed to the socket, on whichever thread.
        self.send_cpu = self.transport.flush();
        let sent = Instant::now();
        for counters in [&mut self.second, &mut self.total] {
            counters.record.record((recorded - began).as_secs_f64());
            counters
                .validate
                .record((validated - recorded).as_secs_f64());
            counters.send.record((sent - validated).as_secs_f64());
        }
        Ok(())
    }

    /// Hands the tick's lines (its frame, its claims and verdicts, and whatever joined or
    /// left since the last) to the files, once a tick rather than per line, and before
    /// the tick's verdicts go out: a server killed outright (SIGKILL, a crash, the power)
    /// has told no player a verdict that is not in the files, and loses at most the tick
    /// it was in. A kill in the middle of a write can still leave a torn last line; the
    /// readers use every complete line before it (`lagcomp_validate::TornTail`).
    fn flush_outputs(&mut self) -> Result<(), ServeError> {
        if let Some(writer) = &mut self.recording {
            writer.flush().map_err(ServeError::Recording)?;
        }
        if let Some(audit) = &mut self.audit {
            audit.flush().map_err(ServeError::Audit)?;
        }
        Ok(())
    }

    /// The frame and any changed timings into the recording.
    fn record_frame(&mut self, tick: Tick, time: f64) -> Result<(), ServeError> {
        let Some(writer) = &mut self.recording else {
            return Ok(());
        };
        let entities: Vec<(EntityId, EntityState, &[BoneTransform])> =
            self.core.recorded().collect();
        writer
            .frame(tick, time, &entities)
            .map_err(ServeError::Recording)?;
        // The core gives the validator every measured player's timing each tick; only
        // changes need a line, since setting the same timing again changes nothing.
        for entity in self.core.players() {
            if let Some(timing) = self.core.timing(entity)
                && self.timings.get(&entity) != Some(&timing)
            {
                writer
                    .timing(entity, &timing)
                    .map_err(ServeError::Recording)?;
                self.timings.insert(entity, timing);
            }
        }
        Ok(())
    }

    /// A shot the core queued this tick, at server time `now`: taken for validation (into
    /// `claims`), answered again from memory when it is an exact copy of one answered
    /// before, or dropped when its client is past the verdict cap (a strike for the
    /// guard).
    fn admit(&mut self, queued: QueuedShot, now: f64) {
        let print = fingerprint(&queued.claim);
        let Some(connection) = self
            .connections
            .iter_mut()
            .find(|c| c.entity == queued.shooter)
        else {
            // Not a connection's (the core drops a leaver's shots, so never): validated
            // as before, without memory or cap.
            self.claims.push((queued.claim, queued.received));
            self.prints.push(print);
            return;
        };
        let seq = queued.claim.seq;
        match connection.answered.recall(seq, print) {
            Recall::Unknown => {}
            Recall::Pending => {
                // A copy within the tick: the first's verdict goes out with this tick.
                for counters in [&mut self.second, &mut self.total] {
                    counters.copies_answered += 1;
                }
                return;
            }
            Recall::Answered { outcome, number } => {
                // The same verdict again, unless it is still waiting in the outbox (it
                // goes with every snapshot until acknowledged anyway).
                let outbox = &mut connection.verdicts;
                let waiting = number.wrapping_sub(outbox.first()) < outbox.len() as u32;
                if !waiting {
                    let given_up = connection.answer(seq, print, outcome);
                    for counters in [&mut self.second, &mut self.total] {
                        counters.verdicts_given_up += given_up;
                    }
                }
                for counters in [&mut self.second, &mut self.total] {
                    counters.copies_answered += 1;
                }
                return;
            }
        }
        if now - connection.cap_since >= 1.0 {
            connection.cap_since = now;
            connection.cap_used = 0;
        }
        if connection.cap_used >= self.config.max_verdicts_per_second {
            for counters in [&mut self.second, &mut self.total] {
                counters.verdicts_capped += 1;
            }
            let penalty = self.guard.record(connection.client, now);
            if penalty == Penalty::Disconnect && !connection.capped_out {
                connection.capped_out = true;
                self.renet.disconnect(connection.client);
                for counters in [&mut self.second, &mut self.total] {
                    counters.kicked += 1;
                }
            }
            return;
        }
        connection.cap_used += 1;
        connection.answered.take(seq, print);
        self.claims.push((queued.claim, queued.received));
        self.prints.push(print);
    }

    /// One verdict of a claim whose fingerprint is `print`: recorded, audited, counted,
    /// sent to the shooter and remembered, to answer copies of the claim.
    fn settle(
        &mut self,
        claim: &ShotClaim,
        received: f64,
        verdict: &Verdict,
        print: u64,
    ) -> Result<(), ServeError> {
        if let Some(writer) = &mut self.recording {
            writer
                .claim(received, claim)
                .map_err(ServeError::Recording)?;
            writer.verdict(verdict).map_err(ServeError::Recording)?;
        }
        if let Some(audit) = &mut self.audit {
            audit.write(verdict).map_err(ServeError::Audit)?;
        }
        let label = verdict.outcome.label();
        for counters in [&mut self.second, &mut self.total] {
            counters.shots += 1;
            *counters.verdicts.entry(label).or_default() += 1;
        }
        if let Some(connection) = self
            .connections
            .iter_mut()
            .find(|c| c.entity == verdict.shooter)
        {
            let outcome = ShotOutcome::from(&verdict.outcome);
            let given_up = connection.answer(verdict.seq, print, outcome);
            for counters in [&mut self.second, &mut self.total] {
                counters.verdicts_given_up += given_up;
            }
        }
        Ok(())
    }

    /// The world at `tick` in parts to every ready client due one (only what is in its
    /// view, with interest management; with its shot acknowledgement, and a round-trip
    /// probe when one is due).
    fn send_snapshot(&mut self, tick: Tick, time: f64, now: f64) -> Result<(), ServeError> {
        let every = self.config.send_every();
        let due = |c: &Connection| c.ready && tick.0.wrapping_add(c.phase).is_multiple_of(every);
        // Four probes a second to each client, as the simulator's server sends them, each
        // with a snapshot of its own (below the tick rate, a probe on a tick without one
        // would be a datagram of its own).
        let probe_every = ((self.config.tick_rate / 4.0) as u32).max(1);
        let probe_due = |c: &Connection| {
            due(c)
                && c.probed
                    .is_none_or(|at| tick.0.wrapping_sub(at) >= probe_every)
        };
        let probing = self.connections.iter().any(probe_due);
        let any_due = self.connections.iter().any(due);
        if !probing && !any_due {
            return Ok(());
        }
        // Every part of this tick, for every client, in one buffer shared by their queues:
        // a part is a slice of it, so no part is copied or allocated on its own.
        let mut buffer = Vec::with_capacity(self.encoded.last_len);
        let mut shared: Vec<Range<usize>> = Vec::new();
        if any_due {
            self.fill_frames(time);
            if let Some(interest) = &mut self.interest {
                self.encoded.bodies.clear();
                self.encoded
                    .bodies
                    .extend(self.core.bodies(time).map(|b| (b.id, b.position)));
                interest.update(tick, &self.encoded.bodies);
                self.encoded.entities.encode(tick, time, &self.frames)?;
            } else {
                for part in self.encoder.encode(tick, time, &self.frames)? {
                    let begin = buffer.len();
                    buffer.extend_from_slice(part);
                    shared.push(begin..buffer.len());
                }
            }
        }
        // Each due client's own parts (with interest management), as ranges of `buffer`.
        self.encoded.views.clear();
        self.encoded.ranges.clear();
        if let (true, Some(interest)) = (any_due, &self.interest) {
            for (c, connection) in self.connections.iter().enumerate() {
                if !due(connection) {
                    continue;
                }
                let view = interest.view(connection.entity);
                let entities = view.len() as u64;
                let view = view.iter().map(|e| (e.index, Some(e.since)));
                let first = self.encoded.ranges.len();
                for part in self.encoder.encode_view(&self.encoded.entities, view)? {
                    let begin = buffer.len();
                    buffer.extend_from_slice(part);
                    self.encoded.ranges.push(begin..buffer.len());
                }
                self.encoded
                    .views
                    .push((c, first..self.encoded.ranges.len(), entities));
            }
        }
        // Each due client's verdicts not yet acknowledged, in the same buffer: they go in
        // its snapshot's datagram.
        self.encoded.verdicts.clear();
        for (c, connection) in self.connections.iter().enumerate() {
            if due(connection) {
                let begin = buffer.len();
                if connection.verdicts.append_message(&mut buffer)? {
                    self.encoded.verdicts.push((c, begin..buffer.len()));
                }
            }
        }
        let probe = if probing {
            let id = self.core.probe(now);
            ServerMessage::Probe(Probe {
                id,
                server_time: now,
            })
            .encode(&mut self.scratch)?;
            let begin = buffer.len();
            buffer.extend_from_slice(&self.scratch);
            Some(begin..buffer.len())
        } else {
            None
        };
        self.encoded.last_len = self.encoded.last_len.max(buffer.len());
        let buffer = Bytes::from(buffer);
        let world = self.frames.len() as u64;
        let snapshots_per_ack = ((self.config.send_rate / ACKS_PER_SECOND) as u32).max(1);
        let (mut next_view, mut next_verdicts) = (0, 0);
        for i in 0..self.connections.len() {
            let connection = &mut self.connections[i];
            let (client, entity) = (connection.client, connection.entity);
            let is_due = due(connection);
            let probed = probe.is_some() && probe_due(connection);
            if probed {
                connection.probed = Some(tick.0);
            }
            if !is_due {
                continue;
            }
            // Renet's acknowledgement of its inputs with every few snapshots.
            connection.snapshots_since_acks += 1;
            let acks = connection.snapshots_since_acks >= snapshots_per_ack;
            if acks {
                connection.snapshots_since_acks = 0;
            }
            // Its own parts with interest management, or the world's shared ones.
            let (own, entities) = match self.encoded.views.get(next_view) {
                Some((c, parts, entities)) if *c == i => {
                    next_view += 1;
                    (parts.clone(), *entities)
                }
                _ => (0..0, world),
            };
            let parts = (shared.len() + own.len()) as u64;
            let verdicts = match self.encoded.verdicts.get(next_verdicts) {
                Some((c, range)) if *c == i => {
                    next_verdicts += 1;
                    Some(range.clone())
                }
                _ => None,
            };
            for counters in [&mut self.second, &mut self.total] {
                counters.snapshots += 1;
                counters.snapshot_parts += parts;
                counters.snapshot_entities += entities;
            }
            // The client's tick in as few datagrams as it fits: its parts, its verdicts,
            // the probe, its shot acknowledgement, and renet's acknowledgement now and
            // then (see `lagcomp_wire::datagram`).
            let mut out = Outgoing {
                datagram: &mut self.datagram,
                transport: &mut self.transport,
                renet: &mut self.renet,
                client,
                through_renet: false,
            };
            let probe = probe.clone().filter(|_| probed);
            for range in shared
                .iter()
                .chain(&self.encoded.ranges[own])
                .cloned()
                .chain(verdicts)
                .chain(probe)
            {
                out.message(&buffer, range);
            }
            if let Some(up_to) = self.core.shot_ack(entity) {
                ServerMessage::ShotAck { up_to }.encode(&mut self.scratch)?;
                out.message_bytes(&self.scratch);
            }
            if acks {
                ServerTransport::renet_packets(out.renet, client, Acks::Send, &mut self.packets);
                for packet in &self.packets {
                    out.packet(packet);
                }
            }
            out.finish();
            // What was too big for a datagram went to renet: out with the tick's end.
            self.connections[i].outgoing |= out.through_renet;
        }
        self.encoded.views.clear();
        self.encoded.ranges.clear();
        self.encoded.verdicts.clear();
        Ok(())
    }

    /// Every body as of the latest tick into `frames`, in place (no allocation once the
    /// frames have grown), each as its stance.
    fn fill_frames(&mut self, time: f64) {
        let bodies = self.core.bodies(time);
        self.frames.truncate(bodies.len());
        for (i, body) in bodies.enumerate() {
            if i == self.frames.len() {
                self.frames.push(EntityFrame {
                    id: body.id,
                    alive: true,
                    last_teleport: None,
                    protected: false,
                    in_view_since: None,
                    velocity: body.velocity,
                    pose: EntityPose::Bones(Vec::new()),
                });
            }
            let frame = &mut self.frames[i];
            frame.id = body.id;
            frame.alive = true;
            frame.last_teleport = body.last_teleport;
            frame.protected = body.protected;
            frame.velocity = body.velocity;
            // The stance the bones were recorded from, not the bones: 40 bytes instead of
            // 226, so a client's whole view fits one datagram (the client rebuilds the
            // bones with the same code).
            frame.pose = EntityPose::Humanoid(crate::stance::to_wire(&body.stance));
        }
    }
}

/// One client's datagrams of records as they fill: each goes when the next record does
/// not fit in it, the last at [`Outgoing::finish`].
struct Outgoing<'a> {
    datagram: &'a mut DatagramWriter,
    transport: &'a mut ServerTransport,
    renet: &'a mut RenetServer,
    client: ClientId,
    /// Whether a message too big for any datagram went to renet instead (it slices it;
    /// its packets go at the tick's end).
    through_renet: bool,
}

impl Outgoing<'_> {
    /// A message that is `range` of the tick's shared buffer.
    fn message(&mut self, buffer: &Bytes, range: Range<usize>) {
        if !self.put(Record::Message(&buffer[range.clone()])) {
            self.renet
                .send_message(self.client, UNRELIABLE, buffer.slice(range));
            self.through_renet = true;
        }
    }

    /// A message of its own.
    fn message_bytes(&mut self, bytes: &[u8]) {
        if !self.put(Record::Message(bytes)) {
            self.renet
                .send_message(self.client, UNRELIABLE, bytes.to_vec());
            self.through_renet = true;
        }
    }

    /// One of renet's packets.
    fn packet(&mut self, packet: &[u8]) {
        if !self.put(Record::Transport(packet)) {
            // Renet's packets are at most about 1,200 bytes, so this does not happen; if
            // it did, renet's packet goes as it is.
            self.transport
                .send_payload(self.client, packet, Route::Tick);
        }
    }

    /// Adds a record, sending the datagram first if the record does not fit; `false` if
    /// it fits no datagram.
    fn put(&mut self, record: Record<'_>) -> bool {
        if self.datagram.push(record) {
            return true;
        }
        if self.datagram.is_empty() {
            return false;
        }
        self.finish();
        self.datagram.push(record)
    }

    /// Sends what is in the datagram.
    fn finish(&mut self) {
        if !self.datagram.is_empty() {
            self.transport
                .send_payload(self.client, self.datagram.as_bytes(), Route::Tick);
            self.datagram.clear();
        }
    }
}

/// [`ServeConfig::busy_poll`]'s wait: polls `socket` without sleeping until it has a
/// datagram or `wake` (seconds since `start`) has come.
fn spin_until_readable(socket: &UdpSocket, start: &Instant, wake: f64) -> io::Result<()> {
    let mut set = [rustix::event::PollFd::new(
        socket,
        rustix::event::PollFlags::IN,
    )];
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    loop {
        match rustix::event::poll(&mut set, Some(&zero)) {
            Ok(n) if n > 0 => return Ok(()),
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
        if start.elapsed().as_secs_f64() >= wake {
            return Ok(());
        }
        std::hint::spin_loop();
    }
}
