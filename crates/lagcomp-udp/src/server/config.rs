//! How a server is set up ([`ServeConfig`], its limits and defaults), what it writes
//! ([`Outputs`]), and what can go wrong ([`ServeError`]).

use std::io::{self, Write};
use std::net::SocketAddr;

use lagcomp_game::body::{ArenaError, ArenaSpec};
use lagcomp_game::interest::InterestConfig;
use lagcomp_game::server::CoreError;
use lagcomp_validate::AuditLog;
use lagcomp_wire::{EncodeError, GuardConfig, GuardConfigError, SnapshotEncoder};

use crate::channel::NetcodeKey;

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
pub(super) const REPLAY_SNAPSHOTS: f64 = 0.3;

/// The share of a tick interval the ticks of a catch-up may take each, on average (the
/// thread's CPU time where it has a clock), for the catch-up to go on past
/// [`MAX_CATCH_UP`]: above it the server is overloaded, not stalled, and running every
/// missed tick would put it further behind.
pub const REPLAY_LOAD: f64 = 0.5;

/// How often a client is sent renet's acknowledgement of what it sent (about; see
/// `transport.rs`): it sends nothing reliable, so they only keep renet's statistics.
pub(super) const ACKS_PER_SECOND: f64 = 8.0;

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
    /// The rewind window, seconds: the history's and the rifle's
    /// ([`CoreConfig::max_rewind`](lagcomp_game::server::CoreConfig::max_rewind)).
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
    /// tick's shots are cheap to validate on this thread, while a batch handed to a pool
    /// whose threads share the cores with other work waits for them.
    pub parallel_validation: bool,
    /// Hand the tick's datagrams to the socket on a second thread while this one packs
    /// and encrypts the next (see `transport.rs`); the tick still ends when the last is
    /// handed to the socket, and its CPU time counts both threads'. Off by default: where
    /// cores are scarce it makes the tick slower, since the second thread waits for a
    /// core and the hand-over costs CPU of its own.
    pub send_thread: bool,
    /// Wait for datagrams and for the next tick by polling the socket in a loop instead of
    /// sleeping in `ppoll(2)`: the thread never leaves its core. It costs that core, and
    /// buys a tick that starts on a running CPU: on a virtual machine a CPU that goes idle
    /// is handed to others by the hypervisor, and the work after it wakes is what suffers
    /// (the `steady_work` example measures this on a given machine). Off by default.
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
    /// ([`Status::verdicts_capped`](super::Status::verdicts_capped)) and a strike for the
    /// malformed-message guard ([`ServeConfig::guard`]), so a client that keeps it up is
    /// disconnected. Copies of shots already answered do not count: they are answered again
    /// from memory.
    pub max_verdicts_per_second: u32,
    /// Where to answer Prometheus' scrapes (`GET /metrics`, HTTP over TCP; port 0 picks
    /// a free one, [`GameServer::metrics_addr`](super::GameServer::metrics_addr) names
    /// it), or `None` for no metrics endpoint (the default). Verdicts by outcome and
    /// reason, shots, tick work times, players, malformed messages, bytes sent and
    /// received: the `metrics` module's table lists them. Anyone who reaches the address
    /// can read them: bind it where only the monitoring does.
    pub metrics: Option<SocketAddr>,
}

impl ServeConfig {
    /// The defaults (64 Hz ticks and snapshots, the history's default window
    /// ([`lagcomp::DEFAULT_MAX_REWIND`], 1 s), the simulator's respawn
    /// rate, 256 players, the standard arena, each client sent the bodies within
    /// [`DEFAULT_INTEREST`]) on `listen`.
    #[must_use]
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            tick_rate: 64.0,
            send_rate: 64.0,
            max_rewind: lagcomp::DEFAULT_MAX_REWIND,
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
            metrics: None,
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
