//! The bot clients of `lagcomp bots`: many clients in one process, each with its own
//! socket and renet connection, each running the simulator's client logic
//! ([`BotBrain`]) against the machine's clock, and an agreement tally built from the
//! verdicts the server sends back.
//!
//! Bots are spread over a few threads; each thread waits on all its bots' sockets with
//! `ppoll(2)` until a datagram arrives or a bot's next frame is due, so arrivals are
//! timestamped as they happen (clock sync depends on it), or its next steady shot is due
//! ([`BotsConfig::fire_rate`]: a load test's bots fire on time, not at the next frame). A
//! bot connects, waits for its [`lagcomp_wire::Welcome`], builds the arena the welcome
//! names (so it traces shots against the server's walls), plays for the configured time
//! after it, then stops firing and waits (a few seconds at most) for the verdicts of the
//! shots still in flight before it disconnects. A server sending each client only the
//! bodies near it is fine: a body whose snapshots stop is no longer drawn, one that comes
//! back is not blended across its absence (`lagcomp_game::brain`).
//!
//! The tally is the simulator's for its full mode: every shot whose verdict came back
//! counts as arrived; an honest one is a client hit when the bot drew a hit, agreed when
//! the server confirmed it on the same entity (or refused it there: a spawn-protected or
//! dodging target, the hit agreed on and denied damage), a false confirmation when the server
//! confirmed a shot the bot saw miss. Cheating shots (per [`Cheat`], the first bots of
//! the process) are counted apart, with how many were accepted.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lagcomp::Rig;
use lagcomp_game::body::{self, Arena, ArenaSpec, BONES};
use lagcomp_game::brain::{BotBrain, BrainConfig, HUMAN_PAUSE};
use lagcomp_game::cheat::Cheat;
use lagcomp_game::scorecard::{CheatResult, ModeResult};
use lagcomp_game::traffic::{EntityUpdate, FiredShot};
use lagcomp_validate::WeaponClaim;
use lagcomp_wire::{
    ClientMessage, EntityPose, Input, MAX_SHOTS_PER_INPUT, ProbeReply, ServerMessage, VerdictInbox,
    WireOutcome, WireVerdict,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use renet::RenetClient;
use renet_netcode::ClientAuthentication;
use serde::Serialize;

use crate::channel::{
    NetcodeKey, TightTimers, UNRELIABLE, WELCOME, connect_token, connection_config, unsecure_token,
    wait_readable, widen_receive_buffer,
};
use crate::client::{ClientTransport, Messages};
use crate::stance;

/// How the bots are set up.
#[derive(Debug, Clone, PartialEq)]
pub struct BotsConfig {
    /// The server (or a proxy in front of it).
    pub server: SocketAddr,
    /// How many bots.
    pub count: usize,
    /// Bot `i` cheats with `cheats[i]`; bots past the list play fair.
    pub cheats: Vec<Cheat>,
    /// Seconds each bot plays after its welcome (the first 2 s are its warm-up, without
    /// shots).
    pub duration: f64,
    /// The longest a bot waits, after it stops firing, for its last verdicts, seconds.
    pub linger: f64,
    /// The longest a bot waits for its welcome, seconds.
    pub connect_timeout: f64,
    /// Frames per second of each bot.
    pub fps: f64,
    /// Threads the bots are spread over.
    pub threads: usize,
    /// Each bot's pause between shots beyond the weapon's 0.1 s, seconds (uniform in the
    /// range): [`HUMAN_PAUSE`] plays like the simulator; a tiny one fires as fast as the
    /// weapon allows, for load tests.
    pub pause: (f64, f64),
    /// Shots a second each honest bot fires from the end of its warm-up, whatever it has
    /// in view ([`BrainConfig::fire_rate`]), for load tests; `None` plays as a person
    /// does (and as `pause` says).
    pub fire_rate: Option<f64>,
    /// Seed of the bots' aim and pacing.
    pub seed: u64,
    /// The server's netcode key, if it runs secure mode: each bot then mints its own
    /// connect token with it, standing in for a matchmaker ([`crate::channel`]).
    pub private_key: Option<NetcodeKey>,
}

impl BotsConfig {
    /// `count` honest bots against `server` for `duration` seconds at 60 frames per second,
    /// on up to two threads.
    #[must_use]
    pub fn new(server: SocketAddr, count: usize, duration: f64) -> Self {
        Self {
            server,
            count,
            cheats: Vec::new(),
            duration,
            linger: 3.0,
            connect_timeout: 10.0,
            fps: 60.0,
            threads: count.clamp(1, 2),
            pause: HUMAN_PAUSE,
            fire_rate: None,
            seed: 1,
            private_key: None,
        }
    }
}

/// Why the bots could not run.
#[derive(Debug, thiserror::Error)]
pub enum BotsError {
    /// No bots, or more cheats than bots.
    #[error(
        "{count} bots cannot play {cheats} cheat classes (need at least one bot and one per class)"
    )]
    Count {
        /// Bots asked for.
        count: usize,
        /// Cheat classes asked for.
        cheats: usize,
    },
    /// A pause range that is empty, negative or not finite.
    #[error("pause between shots {0:?} s is not a range of seconds from 0 up")]
    Pause((f64, f64)),
    /// A fire rate that is not a positive number up to the rifle's 10 shots a second.
    #[error("fire rate {0} shots a second is not more than 0 and at most 10 (the rifle's rate)")]
    FireRate(f64),
    /// A duration, frame rate or timeout that is not a positive number.
    #[error("{what} must be a positive number of seconds or frames, not {value}")]
    NotPositive {
        /// Which setting.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// A socket could not be opened or waited on.
    #[error("socket: {0}")]
    Socket(#[from] io::Error),
    /// Netcode refused to start a client.
    #[error("netcode: {0}")]
    Netcode(String),
    /// A bots thread panicked.
    #[error("a bots thread panicked")]
    Panicked,
}

/// What the bots measured, together.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BotsReport {
    /// Bots started.
    pub bots: usize,
    /// Bots that got their welcome.
    pub connected: usize,
    /// Bots whose connection ended before they were done, with why.
    pub dropped: Vec<String>,
    /// Seconds each bot played.
    pub duration: f64,
    /// Honest bots' shots, tallied as the simulator's full mode (`agreement` is
    /// `agreed / client_hits`, NaN, written `null`, without hits).
    pub honest: ModeResult,
    /// Per cheat class played, its cheating shots' verdicts (`honest_rejected` counts the
    /// honest shots of the same process, as in the simulator).
    pub cheats: Vec<CheatResult>,
    /// Shots fired whose verdict never came back.
    pub unanswered: u64,
    /// Verdicts for shots the bot had no record of.
    pub unexpected: u64,
    /// Verdicts the server gave up on before the bot got them (gaps in their numbers;
    /// see `lagcomp_wire::verdicts`).
    pub verdicts_skipped: u64,
    /// Verdicts that arrived again after the bot had them (the repetition's cost).
    pub verdicts_repeated: u64,
    /// Server messages that did not decode.
    pub malformed: u64,
}

/// Runs the bots to the end and tallies what they saw (see the [module
/// documentation](self)).
///
/// # Errors
/// [`BotsError`]: a configuration out of range, sockets that cannot be opened. A bot that
/// cannot connect or loses its connection is reported in [`BotsReport::dropped`], not as
/// an error.
pub fn run(config: &BotsConfig) -> Result<BotsReport, BotsError> {
    if config.count == 0 || config.cheats.len() > config.count {
        return Err(BotsError::Count {
            count: config.count,
            cheats: config.cheats.len(),
        });
    }
    let (min, max) = config.pause;
    if !(min.is_finite() && max.is_finite() && 0.0 <= min && min < max) {
        return Err(BotsError::Pause(config.pause));
    }
    if let Some(rate) = config.fire_rate
        && !(rate > 0.0 && rate <= 1.0 / lagcomp_game::weapon::RIFLE_INTERVAL)
    {
        return Err(BotsError::FireRate(rate));
    }
    for (what, value) in [
        ("duration", config.duration),
        ("linger", config.linger),
        ("connect timeout", config.connect_timeout),
        ("fps", config.fps),
    ] {
        if !(value.is_finite() && value > 0.0) {
            return Err(BotsError::NotPositive { what, value });
        }
    }
    let start = Instant::now();
    let epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    // Netcode tells clients apart by the id each makes up: mix in the process and the
    // time so two bots processes with the same seed do not collide.
    let salt = u64::from(std::process::id()) << 32 ^ u64::from(epoch.subsec_nanos());
    let mut groups: Vec<Vec<Bot>> = (0..config.threads.clamp(1, config.count))
        .map(|_| Vec::new())
        .collect();
    let threads = groups.len();
    for index in 0..config.count {
        let bot = Bot::new(config, index, salt, epoch)?;
        groups[index % threads].push(bot);
    }
    let handles: Vec<_> = groups
        .into_iter()
        .enumerate()
        .map(|(i, bots)| {
            let config = config.clone();
            std::thread::Builder::new()
                .name(format!("lagcomp-bots-{i}"))
                .spawn(move || play(&config, bots, start))
        })
        .collect::<Result<_, _>>()?;
    let mut outcomes = Vec::new();
    for handle in handles {
        outcomes.extend(handle.join().map_err(|_| BotsError::Panicked)??);
    }
    outcomes.sort_by_key(|o| o.index);
    Ok(report(config, &outcomes))
}

/// Where a bot is in its run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Waiting for the welcome since this local time.
    Connecting { since: f64 },
    /// Playing until this local time.
    Playing { until: f64 },
    /// Not firing; waiting for verdicts until this local time.
    Draining { until: f64 },
    /// Disconnected.
    Done,
}

/// What one bot saw.
#[derive(Debug, Clone, Default)]
struct BotTally {
    index: usize,
    cheat: Option<Cheat>,
    connected: bool,
    dropped: Option<String>,
    honest: ModeResult,
    cheat_attempts: u64,
    cheat_accepted: u64,
    cheat_outcomes: BTreeMap<String, u64>,
    unanswered: u64,
    unexpected: u64,
    verdicts_skipped: u64,
    verdicts_repeated: u64,
    malformed: u64,
}

/// One bot: its connection, its brain once welcomed, and its shots awaiting verdicts.
struct Bot {
    cheat: Option<Cheat>,
    pause: (f64, f64),
    fire_rate: Option<f64>,
    client: RenetClient,
    transport: ClientTransport,
    /// The transport's socket, shared, to wait on.
    socket: UdpSocket,
    /// Until the welcome: the generator the brain will get.
    rng: Option<Pcg64Mcg>,
    brain: Option<BotBrain>,
    /// Local time of the welcome (the brain's time zero).
    welcomed_at: f64,
    /// The arena the welcome named.
    arena: Option<Arena>,
    /// Local time of its latest frame.
    last_frame: f64,
    phase: Phase,
    next_frame: f64,
    last_update: f64,
    /// Shots by claim sequence number, oldest first (a replaying cheat reuses one).
    shots: HashMap<u32, VecDeque<FiredShot>>,
    /// The server's verdicts, each handed on once.
    verdicts: VerdictInbox,
    /// The wire messages of the latest datagrams of records (kept for its memory).
    messages: Messages,
    /// Datagrams of records that did not decode, counted so far.
    malformed_datagrams: u64,
    outcome: BotTally,
    scratch: Vec<u8>,
}

impl Bot {
    fn new(
        config: &BotsConfig,
        index: usize,
        salt: u64,
        epoch: Duration,
    ) -> Result<Self, BotsError> {
        let any: SocketAddr = if config.server.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = UdpSocket::bind(any)?;
        widen_receive_buffer(&socket);
        let waiter = socket.try_clone()?;
        let client_id = splitmix(config.seed ^ salt).wrapping_add(index as u64);
        let authentication = match &config.private_key {
            Some(key) => ClientAuthentication::Secure {
                connect_token: connect_token(key, client_id, config.server, epoch)
                    .map_err(|e| BotsError::Netcode(format!("{e:?}")))?,
            },
            None => ClientAuthentication::Secure {
                connect_token: unsecure_token(client_id, config.server, epoch)
                    .map_err(|e| BotsError::Netcode(format!("{e:?}")))?,
            },
        };
        let transport = ClientTransport::new(epoch, authentication, socket)
            .map_err(|e| BotsError::Netcode(e.to_string()))?;
        let mut rng =
            Pcg64Mcg::seed_from_u64(config.seed.wrapping_mul(31).wrapping_add(index as u64));
        let next_frame = rng.random_range(0.0..1.0 / config.fps);
        let cheat = config.cheats.get(index).copied();
        Ok(Self {
            cheat,
            pause: config.pause,
            fire_rate: config.fire_rate,
            client: RenetClient::new(connection_config()),
            transport,
            socket: waiter,
            rng: Some(rng),
            brain: None,
            welcomed_at: 0.0,
            arena: None,
            last_frame: f64::NEG_INFINITY,
            phase: Phase::Connecting { since: 0.0 },
            next_frame,
            last_update: 0.0,
            shots: HashMap::new(),
            verdicts: VerdictInbox::new(),
            messages: Messages::default(),
            malformed_datagrams: 0,
            outcome: BotTally {
                index,
                cheat,
                ..BotTally::default()
            },
            scratch: Vec::new(),
        })
    }

    /// Reads the socket and everything the server sent.
    fn pump(&mut self, local: f64) {
        if self.phase == Phase::Done {
            return;
        }
        let delta = Duration::from_secs_f64((local - self.last_update).max(0.0));
        self.last_update = local;
        self.client.update(delta);
        if let Err(error) = self.transport.update(delta, &mut self.client) {
            self.drop_out(format!("transport: {error}"));
            return;
        }
        while let Some(bytes) = self.client.receive_message(WELCOME) {
            self.on_message(&bytes, local);
        }
        while let Some(bytes) = self.client.receive_message(UNRELIABLE) {
            self.on_message(&bytes, local);
        }
        // The server's datagrams of records: snapshots, verdicts, pongs, probes.
        let mut messages = std::mem::take(&mut self.messages);
        self.transport.take_messages(&mut messages);
        for bytes in messages.iter() {
            self.on_message(bytes, local);
        }
        self.messages = messages;
        let malformed = self.transport.malformed();
        self.outcome.malformed += malformed - self.malformed_datagrams;
        self.malformed_datagrams = malformed;
        if self.client.is_disconnected() {
            let reason = self
                .client
                .disconnect_reason()
                .map_or_else(|| "disconnected".to_owned(), |r| r.to_string());
            self.drop_out(reason);
        }
    }

    fn on_message(&mut self, bytes: &[u8], local: f64) {
        let message = match ServerMessage::decode(bytes) {
            Ok(message) => message,
            Err(_) => {
                self.outcome.malformed += 1;
                return;
            }
        };
        if let ServerMessage::Welcome(welcome) = message {
            if self.brain.is_none() {
                if usize::from(welcome.bones) != BONES
                    || !(welcome.tick_rate.is_finite() && welcome.tick_rate > 0.0)
                {
                    self.drop_out(format!(
                        "the server's world is not the humanoid arena ({} bones at {} Hz)",
                        welcome.bones, welcome.tick_rate
                    ));
                    return;
                }
                let spec = ArenaSpec {
                    half_size: welcome.arena_half_size,
                    walls: welcome.arena_walls,
                    seed: welcome.arena_seed,
                };
                match spec.build() {
                    Ok(arena) => self.arena = Some(arena),
                    Err(error) => {
                        self.drop_out(format!("the server's arena: {error}"));
                        return;
                    }
                }
                let rng = self
                    .rng
                    .take()
                    .unwrap_or_else(|| Pcg64Mcg::seed_from_u64(0));
                self.brain = Some(BotBrain::new(
                    BrainConfig {
                        pause: self.pause,
                        fire_rate: self.fire_rate,
                        ..BrainConfig::new(welcome.tick_rate, self.cheat)
                    },
                    welcome.you,
                    &[],
                    rng,
                ));
                self.welcomed_at = local;
                self.outcome.connected = true;
            }
            return;
        }
        if let ServerMessage::Verdicts(verdicts) = message {
            for result in self.verdicts.receive(&verdicts) {
                self.on_result(*result);
            }
            return;
        }
        let Some(brain) = &mut self.brain else {
            // Before the welcome nothing else can be placed.
            return;
        };
        match message {
            ServerMessage::Snapshot(part) => {
                let mut refused = 0;
                let entities = part.entities.into_iter().filter_map(|e| {
                    let bones = match e.pose {
                        EntityPose::Bones(bones) => bones,
                        // The server's own pose code on the numbers it recorded from.
                        EntityPose::Humanoid(stance) => match stance::rebuild(&stance) {
                            Some(bones) => bones,
                            None => {
                                refused += 1;
                                return None;
                            }
                        },
                    };
                    Some(EntityUpdate {
                        id: e.id,
                        bones,
                        velocity: e.velocity,
                        last_teleport: e.last_teleport,
                        protected: e.protected,
                        in_view_since: e.in_view_since,
                    })
                });
                brain.on_snapshot(local, part.tick, part.server_time, entities);
                // A stance that poses no valid bones is a malformed entity: dropped.
                self.outcome.malformed += refused;
            }
            ServerMessage::Pong(pong) => brain.on_pong(pong, local),
            ServerMessage::RttProbe(probe) => brain.on_probe(probe.id),
            ServerMessage::ShotAck { up_to } => brain.on_shot_ack(up_to),
            ServerMessage::Welcome(_) | ServerMessage::Verdicts(_) => {}
        }
    }

    /// A verdict: matched to the oldest shot fired under its number, and tallied.
    fn on_result(&mut self, result: WireVerdict) {
        let Some(shot) = self
            .shots
            .get_mut(&result.seq)
            .and_then(VecDeque::pop_front)
        else {
            self.outcome.unexpected += 1;
            return;
        };
        if self.shots.get(&result.seq).is_some_and(VecDeque::is_empty) {
            self.shots.remove(&result.seq);
        }
        tally(&mut self.outcome, &shot, &result.outcome);
    }

    /// One frame: the brain decides, the input goes out.
    fn frame(&mut self, local: f64, config: &BotsConfig, rig: &Rig) {
        self.last_frame = local;
        match self.phase {
            Phase::Done => return,
            Phase::Connecting { since } => {
                if self.brain.is_some() {
                    self.phase = Phase::Playing {
                        until: self.welcomed_at + config.duration,
                    };
                } else if local - since > config.connect_timeout {
                    self.drop_out(format!(
                        "no welcome from {} within {} s (connection {})",
                        config.server,
                        config.connect_timeout,
                        if self.client.is_connected() {
                            "made"
                        } else {
                            "not made"
                        }
                    ));
                    return;
                }
            }
            Phase::Playing { until } if local >= until => {
                if let Some(brain) = &mut self.brain {
                    brain.cease_fire();
                }
                self.phase = Phase::Draining {
                    until: local + config.linger,
                };
            }
            Phase::Draining { until } if local >= until || self.shots.is_empty() => {
                self.leave();
                return;
            }
            Phase::Playing { .. } | Phase::Draining { .. } => {}
        }
        if let (Some(brain), Some(arena)) = (&mut self.brain, &self.arena) {
            let frame = brain.frame(local - self.welcomed_at, local, arena, rig);
            if let Some(shot) = frame.fired {
                if !shot.cheat {
                    self.outcome.honest.shots_sent += 1;
                }
                self.shots.entry(shot.seq).or_default().push_back(shot);
            }
            // A rifle-only brain (`BrainConfig::arsenal` off) sends hitscan claims, all the
            // wire carries.
            let mut shots: Vec<_> = frame
                .input
                .shots
                .into_iter()
                .filter_map(|(seq, claim)| match claim {
                    WeaponClaim::Hitscan(shot) => Some((seq, shot)),
                    _ => None,
                })
                .collect();
            shots.truncate(MAX_SHOTS_PER_INPUT);
            let input = ClientMessage::Input(Input {
                frame: frame.input.frame,
                ping: frame.input.ping,
                probe_reply: frame.input.probe_reply.map(|id| ProbeReply {
                    id,
                    client_time: local,
                }),
                aim: frame.input.aim,
                interp_delay: frame.input.interp_delay,
                newest_tick: frame.input.newest_tick,
                verdicts_received: Some(self.verdicts.received()),
                shots,
                weapon_shots: Vec::new(),
            });
            // The brain's numbers are finite; a message that will not encode is not sent.
            if input.encode(&mut self.scratch).is_ok() {
                self.client.send_message(UNRELIABLE, self.scratch.clone());
            }
        }
        if let Err(error) = self.transport.send_packets(&mut self.client) {
            self.drop_out(format!("sending: {error}"));
        }
    }

    /// When its brain's next steady shot is due, if it fires at a steady rate and that
    /// shot is still ahead of its latest frame (one that came due and was not fired, for
    /// want of a view of itself, waits for the next frame rather than spin).
    fn next_shot(&self) -> Option<f64> {
        self.brain
            .as_ref()?
            .next_shot()
            .filter(|&at| at > self.last_frame)
    }

    /// Leaves at the end of the run.
    fn leave(&mut self) {
        self.transport.disconnect();
        self.finish();
    }

    /// Leaves because the connection failed.
    fn drop_out(&mut self, why: String) {
        if self.phase == Phase::Done {
            return;
        }
        self.outcome.dropped = Some(why);
        self.transport.disconnect();
        self.finish();
    }

    fn finish(&mut self) {
        self.phase = Phase::Done;
        self.outcome.unanswered = self.shots.values().map(|q| q.len() as u64).sum();
        self.outcome.verdicts_skipped = self.verdicts.skipped();
        self.outcome.verdicts_repeated = self.verdicts.repeated();
        self.shots.clear();
    }
}

/// One verdict into a bot's tally.
fn tally(outcome: &mut BotTally, shot: &FiredShot, verdict: &WireOutcome) {
    let server_hit = match *verdict {
        WireOutcome::Confirmed { target, .. } => Some(target),
        _ => None,
    };
    if shot.cheat {
        outcome.cheat_attempts += 1;
        if server_hit.is_some() {
            outcome.cheat_accepted += 1;
        }
        *outcome
            .cheat_outcomes
            .entry(verdict.label().to_owned())
            .or_default() += 1;
        return;
    }
    let m = &mut outcome.honest;
    let client_hit = shot.client_hit.map(|(id, _)| id);
    m.shots_arrived += 1;
    if client_hit.is_some() {
        m.client_hits += 1;
    }
    if server_hit.is_some() {
        m.confirmed += 1;
    }
    // A refused hit is one the server's trace agreed with and the game's rules denied
    // damage: agreement, not a confirmation and not a rejection.
    let refused_on = match *verdict {
        WireOutcome::Refused { target, .. } => Some(target),
        _ => None,
    };
    if client_hit.is_some() && (server_hit == client_hit || refused_on == client_hit) {
        m.agreed += 1;
    }
    if client_hit.is_none() && server_hit.is_some() {
        m.false_confirmations += 1;
    }
    if let WireOutcome::Rejected(reason) = verdict {
        *m.rejections.entry(reason.name().to_owned()).or_default() += 1;
    }
}

/// One thread's bots, from connecting to leaving.
fn play(
    config: &BotsConfig,
    mut bots: Vec<Bot>,
    start: Instant,
) -> Result<Vec<BotTally>, BotsError> {
    let _timers = TightTimers::new();
    let rig: Arc<Rig> = body::humanoid();
    let interval = 1.0 / config.fps;
    let local = start.elapsed().as_secs_f64();
    for bot in &mut bots {
        bot.phase = Phase::Connecting { since: local };
        bot.next_frame += local;
        bot.last_update = local;
    }
    let sockets: Vec<UdpSocket> = bots
        .iter()
        .map(|b| b.socket.try_clone())
        .collect::<Result<_, _>>()?;
    let mut ready = Vec::with_capacity(bots.len());
    while bots.iter().any(|b| b.phase != Phase::Done) {
        let local = start.elapsed().as_secs_f64();
        for (bot, &readable) in bots.iter_mut().zip(&ready) {
            if readable {
                bot.pump(local);
            }
        }
        let local = start.elapsed().as_secs_f64();
        for bot in &mut bots {
            if bot.phase == Phase::Done {
                continue;
            }
            let shot_due = bot.next_shot().is_some_and(|at| local >= at);
            if local < bot.next_frame && !shot_due {
                continue;
            }
            bot.pump(local);
            bot.frame(local, config, &rig);
            if local >= bot.next_frame {
                bot.next_frame += interval;
                if bot.next_frame < local {
                    // Fell behind (a stall): skip the frames missed rather than burst them.
                    bot.next_frame = local + interval;
                }
            }
        }
        let next = bots
            .iter()
            .filter(|b| b.phase != Phase::Done)
            .map(|b| {
                b.next_shot()
                    .map_or(b.next_frame, |at| at.min(b.next_frame))
            })
            .fold(f64::INFINITY, f64::min);
        if !next.is_finite() {
            break;
        }
        let now = start.elapsed().as_secs_f64();
        let timeout = Duration::from_secs_f64((next - now).clamp(0.0, 1.0));
        wait_readable(&sockets, timeout, &mut ready)?;
    }
    Ok(bots.into_iter().map(|b| b.outcome).collect())
}

/// The bots' outcomes together.
fn report(config: &BotsConfig, outcomes: &[BotTally]) -> BotsReport {
    let mut report = BotsReport {
        bots: outcomes.len(),
        duration: config.duration,
        ..BotsReport::default()
    };
    let mut cheats: BTreeMap<Cheat, CheatResult> = BTreeMap::new();
    for o in outcomes {
        report.connected += usize::from(o.connected);
        if let Some(why) = &o.dropped {
            report.dropped.push(format!("bot {}: {why}", o.index));
        }
        report.unanswered += o.unanswered;
        report.unexpected += o.unexpected;
        report.verdicts_skipped += o.verdicts_skipped;
        report.verdicts_repeated += o.verdicts_repeated;
        report.malformed += o.malformed;
        let h = &mut report.honest;
        h.shots_sent += o.honest.shots_sent;
        h.shots_arrived += o.honest.shots_arrived;
        h.client_hits += o.honest.client_hits;
        h.confirmed += o.honest.confirmed;
        h.agreed += o.honest.agreed;
        h.false_confirmations += o.honest.false_confirmations;
        for (reason, n) in &o.honest.rejections {
            *h.rejections.entry(reason.clone()).or_default() += n;
        }
        if let Some(cheat) = o.cheat {
            let c = cheats.entry(cheat).or_insert_with(|| CheatResult {
                class: cheat.name().to_owned(),
                description: cheat.description().to_owned(),
                ..CheatResult::default()
            });
            c.attempts += o.cheat_attempts;
            c.accepted += o.cheat_accepted;
            for (label, n) in &o.cheat_outcomes {
                *c.outcomes.entry(label.clone()).or_default() += n;
            }
        }
    }
    let h = &mut report.honest;
    h.agreement = if h.client_hits == 0 {
        f64::NAN
    } else {
        h.agreed as f64 / h.client_hits as f64
    };
    let honest_rejected = h.rejections.values().sum();
    report.cheats = cheats
        .into_values()
        .map(|c| CheatResult {
            honest_rejected,
            ..c
        })
        .collect();
    report
}

/// SplitMix64: spreads a seed over all 64 bits.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
