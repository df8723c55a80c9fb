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
//! audit log and back to its shooter as a [`WireVerdict`] (numbered, and repeated with each
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
//! The cost of a tick is per datagram (the kernel's send and netcode's encryption
//! dominate it), so everything a client gets in a tick rides in one datagram: each body
//! goes as the stance its bones are computed from rather than as its bones, so a client's
//! snapshot is one part for up to 16 bodies in view, and its verdicts and renet's
//! acknowledgements ride with it.
//!
//! A client that connects gets a body and a [`Welcome`](lagcomp_wire::Welcome) naming it;
//! one that leaves is despawned. Undecodable messages are dropped and counted per client by
//! a [`MalformedGuard`]; a client past its threshold (or speaking another protocol version)
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

use lagcomp::EntityId;
use lagcomp_game::interest::Interest;
use lagcomp_game::server::{CoreConfig, ServerCore};
use lagcomp_validate::recording::RecordingWriter;
use lagcomp_validate::{AuditLog, ClientTiming, ShotClaim};
use lagcomp_wire::datagram::DatagramWriter;
use lagcomp_wire::{
    EncodedEntities, EntityFrame, MalformedGuard, SnapshotEncoder, VerdictOutbox, WireOutcome,
    WireVerdict,
};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use renet::{ClientId, RenetServer};
use renet_netcode::{ServerAuthentication, ServerConfig};
use renetcode::NETCODE_MAX_PAYLOAD_BYTES;

use self::metrics::ServerMetrics;
use self::scrape::ScrapeEndpoint;
use crate::answered::AnsweredShots;
use crate::channel::{
    PROTOCOL_ID, TightTimers, connection_config, wait_readable, widen_receive_buffer,
};
use crate::stats::TickTimes;
use crate::transport::ServerTransport;

mod config;
mod metrics;
mod receive;
mod scrape;
mod snapshot;
mod status;
mod tick;

pub use config::{
    DEFAULT_INTEREST, DEFAULT_MAX_VERDICTS_PER_SECOND, MAX_CATCH_UP, MAX_CLIENTS, MAX_STALL_REPLAY,
    MAX_TICK_RATE, Outputs, REPLAY_LOAD, ServeConfig, ServeError,
};
pub use status::{BriefStatus, Status, Summary};

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
    fn status(&self, elapsed: f64, tick: u32, players: usize, budget: f64) -> Status {
        Status {
            elapsed,
            tick,
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
    fn answer(&mut self, seq: u32, print: u64, outcome: WireOutcome) -> u64 {
        let outbox = &mut self.verdicts;
        let number = outbox.first().wrapping_add(outbox.len() as u32);
        let given_up = outbox.given_up();
        outbox.push(WireVerdict { seq, outcome });
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
    /// The live metrics and their endpoint, with [`ServeConfig::metrics`].
    metrics: Option<(ServerMetrics, ScrapeEndpoint)>,
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
                // Served bodies do not dodge: the server's settings have no knob for it.
                dodge_rate: 0.0,
                no_rewind_above_rtt: None,
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
                let mut writer = RecordingWriter::new(out, core.history().config())
                    .map_err(ServeError::Recording)?;
                // What the core validates with, so the recording replays to its verdicts.
                writer
                    .rules(core.validator().rules())
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
        let metrics = match config.metrics {
            Some(addr) => {
                let metrics = ServerMetrics::new();
                let endpoint = ScrapeEndpoint::spawn(addr, metrics.registry())
                    .map_err(|source| ServeError::Bind { addr, source })?;
                Some((metrics, endpoint))
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
            metrics,
        })
    }

    /// The address the server listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The address the metrics endpoint listens on, with [`ServeConfig::metrics`].
    #[must_use]
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics
            .as_ref()
            .map(|(_, endpoint)| endpoint.local_addr())
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
                status(
                    &self
                        .second
                        .status(now, self.next_tick, self.connections.len(), dt),
                );
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
            status: self.total.status(
                elapsed,
                self.next_tick,
                self.connections.len(),
                1.0 / self.config.tick_rate,
            ),
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
