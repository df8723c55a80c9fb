//! The authoritative server's game state, with no clock and no transport of its own:
//! players' bodies, the lagcomp [`History`] recorded each tick, the [`Validator`], and
//! what the server keeps per connection (its [`LatencyTracker`], shot receiver).
//!
//! [`ServerCore`] is driven from outside: [`ServerCore::receive`] each client input as it
//! arrives, [`ServerCore::tick`] once per tick (it moves and records every body and hands
//! back the shots queued since the last tick, to validate), [`ServerCore::snapshot`] and
//! [`ServerCore::probe`] when sending. The simulator drives it from a virtual clock;
//! `lagcomp serve` from the machine's clock and real sockets.

use std::sync::Arc;

use glam::Vec3;
use lagcomp::{
    BoneTransform, ConfigError, EntityId, EntityState, History, RecordError, Rig, StaticError, Tick,
};
use lagcomp_net::clock::Pong;
use lagcomp_net::shot::{Delivery, ShotReceiver};
use lagcomp_validate::{
    ClientTiming, LatencyTracker, Participant, RulesError, ShotClaim, Validator, WeaponClaim,
    WeaponVerdict,
};
use rand_pcg::Pcg64Mcg;

use crate::body::{self, Arena, BONES, Body, EYE, Stance};
use crate::scenery::{Scenery, SceneryError, Stage, WallNews};
use crate::traffic::{ClientInput, claim_fingerprint};
use crate::weapon::rules;

/// How a server is set up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreConfig {
    /// Ticks per second.
    pub tick_rate: f64,
    /// The rewind window, seconds: both the history's
    /// ([`HistoryConfig::max_rewind`](lagcomp::HistoryConfig::max_rewind)) and
    /// the rifle's ([`WeaponRules::max_rewind`](lagcomp_validate::WeaponRules::max_rewind)),
    /// one setting so the two cannot disagree. It must hold the longest round trip plus
    /// interpolation delay served (see [`lagcomp::HistoryConfig`]'s "Choosing `max_rewind`").
    pub max_rewind: f64,
    /// Respawns (teleports) per body per second.
    pub respawn_rate: f64,
    /// Dodges per body per second (each 0.3 to 0.5 s, recorded `evasive`).
    pub dodge_rate: f64,
    /// The rifle's no-rewind threshold
    /// ([`WeaponRules::no_rewind_above_rtt`](lagcomp_validate::WeaponRules::no_rewind_above_rtt)),
    /// seconds of round trip: above it a player's shots are judged against the present,
    /// not rewound. `None`: everyone is rewound, up to the window.
    pub no_rewind_above_rtt: Option<f64>,
}

impl Default for CoreConfig {
    /// 64 Hz, the history's default window ([`lagcomp::DEFAULT_MAX_REWIND`]), a respawn
    /// per body every 20 s and a dodge every 10 s on average, rewind for every round
    /// trip.
    fn default() -> Self {
        Self {
            tick_rate: 64.0,
            max_rewind: lagcomp::DEFAULT_MAX_REWIND,
            respawn_rate: 0.05,
            dodge_rate: 0.1,
            no_rewind_above_rtt: None,
        }
    }
}

/// Why a server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The history refused the tick rate or window.
    #[error("history configuration: {0}")]
    Config(#[from] ConfigError),
    /// The history refused a wall.
    #[error("arena wall: {0}")]
    Wall(#[from] StaticError),
    /// The rifle's rules refused the window or the no-rewind threshold.
    #[error("rifle rules: {0}")]
    Rules(#[from] RulesError),
}

/// One entity in a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct EntitySnapshot {
    /// The entity.
    pub id: EntityId,
    /// Its bones' world transforms at the tick.
    pub bones: Vec<BoneTransform>,
    /// Its velocity.
    pub velocity: Vec3,
    /// The tick of its latest teleport (respawn).
    pub last_teleport: Option<Tick>,
    /// Whether it is spawn-protected (invulnerable after a respawn).
    pub protected: bool,
}

/// One player as of the latest tick, borrowed from the core.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyView<'a> {
    /// The entity.
    pub id: EntityId,
    /// Where its feet are.
    pub position: Vec3,
    /// Its bones' world transforms at the tick.
    pub bones: &'a [BoneTransform],
    /// What those bones were computed from ([`Stance::pose`] of it is `bones`, bit for
    /// bit): what a server sends instead of the bones.
    pub stance: Stance,
    /// Its velocity.
    pub velocity: Vec3,
    /// The tick of its latest teleport (respawn).
    pub last_teleport: Option<Tick>,
    /// Whether it is spawn-protected (invulnerable after a respawn).
    pub protected: bool,
}

/// A shot claim as it arrived, waiting for the next tick's validation.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedShot {
    /// The shooter (the connection's entity; the claim's own shooter field is set to it).
    pub shooter: EntityId,
    /// Server time it arrived.
    pub received: f64,
    /// The claim, of any weapon kind.
    pub claim: WeaponClaim,
}

/// One connected player.
#[derive(Debug, Clone)]
struct Player {
    id: EntityId,
    team: u16,
    body: Body,
    /// Its round trip (from probes, held to its snapshot acknowledgements') and reported
    /// interpolation delay.
    latency: LatencyTracker,
    receiver: ShotReceiver,
    /// The tick of its latest teleport (respawn).
    last_teleport: Option<Tick>,
    /// The newest input frame applied.
    last_frame: Option<u32>,
    /// Its bones, the stance they were computed from and its state as recorded at the
    /// latest tick.
    bones: Vec<BoneTransform>,
    stance: Stance,
    state: EntityState,
    /// The timing last handed to the validator: it is handed again only when it changes
    /// (a few times a second, with each probe), not every tick.
    timing: Option<ClientTiming>,
}

/// The server's game state (see the [module documentation](self)).
///
/// # Example
///
/// Two players join; each tick moves and records their bodies, hands back the shots that
/// arrived since the last tick to be validated, and gives the snapshot to send.
///
/// ```
/// use lagcomp::Tick;
/// use lagcomp_game::body::Arena;
/// use lagcomp_game::server::{CoreConfig, ServerCore};
/// use rand::SeedableRng;
/// use rand_pcg::Pcg64Mcg;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = CoreConfig {
///     respawn_rate: 0.0,
///     ..CoreConfig::default()
/// };
/// let mut core = ServerCore::new(config, Arena::standard())?;
/// let mut rng = Pcg64Mcg::seed_from_u64(1);
/// let (alice, bob) = (core.join(&mut rng), core.join(&mut rng));
/// let dt = 1.0 / config.tick_rate;
/// for tick in 0..3 {
///     let time = f64::from(tick) * dt;
///     // Inputs go in as they arrive, between ticks: `core.receive(player, input, now)`.
///     for queued in core.tick(Tick(tick), time, dt, &mut rng)? {
///         let verdict = core.validate_any(&queued.claim, queued.received);
///         println!("{:?}'s shot {}: {:?}", queued.shooter, queued.claim.seq(), verdict.kind());
///     }
///     let snapshot = core.snapshot(time);
///     assert_eq!(snapshot.len(), 2);
///     assert_eq!((snapshot[0].id, snapshot[1].id), (alice, bob));
/// }
/// assert_eq!(core.history().newest_tick(), Some(Tick(2)));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ServerCore {
    config: CoreConfig,
    history: History,
    validator: Validator,
    arena: Arena,
    rig: Arc<Rig>,
    players: Vec<Player>,
    /// Each entity slot's place in `players` (`u32::MAX`: none), so finding a player is
    /// one lookup instead of a scan (it is done for every input and every snapshot).
    seats: Vec<u32>,
    queue: Vec<QueuedShot>,
    ping_id: u32,
    next_team: u16,
    /// Whether the probes' round trip is held to the acknowledgement echo's (the
    /// fake-latency ceiling of [`lagcomp_validate::latency`]).
    echo_ceiling: bool,
    /// Doors, the tram and the breakable wall, once [`ServerCore::furnish`]ed.
    stage: Option<Stage>,
}

impl ServerCore {
    /// A server on `arena` with no players yet.
    ///
    /// # Errors
    /// [`CoreError`]: a tick rate or window the history refuses, a wall it refuses, a
    /// window or no-rewind threshold the rifle's rules refuse.
    pub fn new(config: CoreConfig, arena: Arena) -> Result<Self, CoreError> {
        // The history is sized from the rifle's reach: one setting, two uses.
        let rules = rules(config.max_rewind, config.no_rewind_above_rtt)?;
        let mut history = History::new(rules.history_config(config.tick_rate))?;
        for (shape, pose) in &arena.walls {
            history.add_static(*shape, *pose, u32::MAX)?;
        }
        Ok(Self {
            config,
            history,
            validator: Validator::new(rules),
            arena,
            rig: body::humanoid(),
            players: Vec::new(),
            seats: Vec::new(),
            queue: Vec::new(),
            ping_id: 0,
            next_team: 0,
            echo_ceiling: true,
            stage: None,
        })
    }

    /// Whether the round trip handed to the validator is held to what the player's
    /// snapshot acknowledgements show (on by default: the fake-latency defence,
    /// [`lagcomp_validate::latency`]). Off only to measure what the defence changes.
    pub fn set_echo_ceiling(&mut self, on: bool) {
        self.echo_ceiling = on;
        for player in &mut self.players {
            player.latency.set_echo_ceiling(on);
        }
    }

    /// Makes room in the history for `players` more bodies, so that players joining
    /// mid-match never make a tick lay the history out again (a copy of all of it:
    /// [`History::reserve`]). A server that knows its player limit calls this once.
    pub fn reserve(&mut self, players: usize) {
        let bones = usize::from(self.rig.bone_count());
        self.history.reserve(players, players.saturating_mul(bones));
    }

    /// A new player: a body at a random spot (from `rng`), spawned in the history and
    /// registered with the validator on a team of its own. Returns its entity.
    pub fn join(&mut self, rng: &mut Pcg64Mcg) -> EntityId {
        let id = self.history.spawn(Arc::clone(&self.rig));
        let team = self.next_team;
        self.next_team = self.next_team.wrapping_add(1);
        self.validator.register(id, participant(team));
        let body = Body::spawn(&self.arena, rng);
        let stance = body.stance();
        let mut latency = LatencyTracker::new();
        latency.set_echo_ceiling(self.echo_ceiling);
        self.players.push(Player {
            id,
            team,
            body,
            latency,
            receiver: ShotReceiver::new(),
            last_teleport: None,
            last_frame: None,
            bones: vec![BoneTransform::IDENTITY; BONES],
            stance,
            state: EntityState::default(),
            timing: None,
        });
        self.seat_players();
        id
    }

    /// The player `id` left: it is despawned from the history, forgotten by the
    /// validator, and its queued shots are dropped. `false` when it was not playing.
    pub fn leave(&mut self, id: EntityId) -> bool {
        let Some(i) = self.position(id) else {
            return false;
        };
        self.players.remove(i);
        self.seat_players();
        self.queue.retain(|q| q.shooter != id);
        self.validator.forget(id);
        // The entity was spawned by `join`; despawning it cannot fail.
        let _ = self.history.despawn(id);
        true
    }

    fn position(&self, id: EntityId) -> Option<usize> {
        let i = *self.seats.get(id.index() as usize)? as usize;
        // A reused slot's old handle finds the new player's seat: the generation decides.
        self.players.get(i).filter(|p| p.id == id).map(|_| i)
    }

    /// Rebuilds `seats` after a player joined or left (rare: the order shifts on leave).
    fn seat_players(&mut self) {
        self.seats.clear();
        for (i, player) in self.players.iter().enumerate() {
            let slot = player.id.index() as usize;
            if self.seats.len() <= slot {
                self.seats.resize(slot + 1, u32::MAX);
            }
            self.seats[slot] = i as u32;
        }
    }

    /// Players' entities, in join order (the order frames and snapshots list them).
    pub fn players(&self) -> impl ExactSizeIterator<Item = EntityId> + '_ {
        self.players.iter().map(|p| p.id)
    }

    /// The arena.
    #[must_use]
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    /// The rig every player has.
    #[must_use]
    pub fn rig(&self) -> &Arc<Rig> {
        &self.rig
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &CoreConfig {
        &self.config
    }

    /// The history recorded so far.
    #[must_use]
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The validator.
    #[must_use]
    pub fn validator(&self) -> &Validator {
        &self.validator
    }

    /// The history and the validator together, to validate a batch of claims.
    pub fn history_and_validator(&mut self) -> (&History, &mut Validator) {
        (&self.history, &mut self.validator)
    }

    /// Validates one hitscan claim against the history as recorded so far.
    pub fn validate(&mut self, claim: &ShotClaim, received: f64) -> lagcomp_validate::Verdict {
        self.validator.validate(&self.history, claim, received)
    }

    /// Validates one claim of any weapon kind against the history as recorded so far
    /// (its level included: the server has no other world), with the kind's own
    /// validation ([`Validator::validate_any`]).
    pub fn validate_any(&mut self, claim: &WeaponClaim, received: f64) -> WeaponVerdict {
        self.validator
            .validate_any(&self.history, None, claim, received)
    }

    /// Player `id`'s registration with the validator.
    #[must_use]
    pub fn participant(&self, id: EntityId) -> Option<Participant> {
        self.position(id).map(|i| participant(self.players[i].team))
    }

    /// Player `id`'s smoothed round trip, once measured.
    #[must_use]
    pub fn srtt(&self, id: EntityId) -> Option<f64> {
        self.position(id)
            .and_then(|i| self.players[i].latency.probe_round_trip().srtt())
    }

    /// The timing the validator holds for player `id` (set each tick once its round trip
    /// is measured): the round trip held to the snapshot acknowledgements' when the echo
    /// ceiling is on, so a recording made from it replays to the same verdicts.
    #[must_use]
    pub fn timing(&self, id: EntityId) -> Option<ClientTiming> {
        self.players[self.position(id)?].timing
    }

    /// How far behind the present player `id` says it draws, seconds.
    #[must_use]
    pub fn reported_delay(&self, id: EntityId) -> Option<f64> {
        self.position(id)
            .map(|i| self.players[i].latency.interp_delay())
    }

    /// The cumulative shot acknowledgement for player `id`.
    #[must_use]
    pub fn shot_ack(&self, id: EntityId) -> Option<u32> {
        self.position(id).map(|i| self.players[i].receiver.ack())
    }

    /// Each player's entity, state and bones as recorded at the latest tick, in join
    /// order.
    pub fn recorded(&self) -> impl Iterator<Item = (EntityId, EntityState, &[BoneTransform])> {
        self.players
            .iter()
            .map(|p| (p.id, p.state, p.bones.as_slice()))
    }

    /// [`ServerCore::recorded`] with each player's velocity as recorded (and sent in the
    /// tick's snapshot), for a recording that re-validates extrapolated claims.
    pub fn recorded_moving(
        &self,
    ) -> impl Iterator<Item = (EntityId, EntityState, &[BoneTransform], Vec3)> {
        self.players
            .iter()
            .map(|p| (p.id, p.state, p.bones.as_slice(), p.body.velocity))
    }

    /// An input from player `id` that arrived at server time `now`: its view (unless an
    /// input with a later frame was applied), its probe reply (a round-trip sample), its
    /// interpolation delay, and its shots (new ones and conflicting copies are queued).
    /// Returns the answer to its clock-sync ping, to send back at once; `None` as well for
    /// a player not playing.
    pub fn receive(&mut self, id: EntityId, input: ClientInput, now: f64) -> Option<Pong> {
        let index = self.position(id)?;
        let player = &mut self.players[index];
        let follows = player.last_frame == Some(input.frame.wrapping_sub(1));
        let newer = player
            .last_frame
            .is_none_or(|last| input.frame.wrapping_sub(last).wrapping_sub(1) < u32::MAX / 2);
        if newer {
            player.last_frame = Some(input.frame);
            if input.aim.is_finite() && input.aim.is_normalized() {
                player.body.aim = input.aim;
            }
        }
        let pong = input.ping.map(|ping| Pong::answer(ping, now, now));
        // A reply to a forgotten or already answered probe, an acknowledgement of a tick
        // the history no longer holds, a delay that is no delay: each is refused by the
        // tracker, which keeps what it had; the input's other parts still count.
        if let Some(id) = input.probe_reply {
            let _refused = player.latency.reply_received(id, now);
        }
        if let Some(tick) = input.newest_tick {
            let _refused = player
                .latency
                .snapshot_acked(tick, follows, now, &self.history);
        }
        let _refused = player.latency.delay_reported(input.interp_delay);
        for (seq, mut claim) in input.shots {
            set_shooter(&mut claim, player.id);
            match player.receiver.accept(seq, claim_fingerprint(&claim)) {
                Delivery::Copy => {}
                Delivery::New | Delivery::Conflict => self.queue.push(QueuedShot {
                    shooter: player.id,
                    received: now,
                    claim,
                }),
            }
        }
        pong
    }

    /// Hands back a queue [`ServerCore::tick`] returned, once its shots are dealt with:
    /// its room is kept for the shots of the ticks to come, so a steady stream of shots
    /// (or a flood of copies) allocates nothing. Its shots are dropped.
    pub fn recycle(&mut self, mut spent: Vec<QueuedShot>) {
        spent.clear();
        if self.queue.is_empty() && spent.capacity() > self.queue.capacity() {
            self.queue = spent;
        }
    }

    /// A round-trip probe sent to every player at server time `now`: its id.
    pub fn probe(&mut self, now: f64) -> u32 {
        self.ping_id = self.ping_id.wrapping_add(1);
        for player in &mut self.players {
            // Refused only for a time before an input's or the previous probe's, or an
            // id still awaited after wrapping around: that player skips this probe.
            let _refused = player.latency.probe_sent(self.ping_id, now);
        }
        self.ping_id
    }

    /// One tick at server time `time`, `dt` after the previous one: every body moves
    /// (not on tick 0; `rng` decides their moves), the frame is recorded, each measured
    /// player's timing is given to the validator, and the shots queued since the last
    /// tick are handed back in arrival order, to validate now.
    ///
    /// # Errors
    /// A tick or time not after the previous one's.
    pub fn tick(
        &mut self,
        tick: Tick,
        time: f64,
        dt: f64,
        rng: &mut Pcg64Mcg,
    ) -> Result<Vec<QueuedShot>, RecordError> {
        if let Some(stage) = &mut self.stage {
            stage.advance(&mut self.history, time);
        }
        {
            let mut frame = self.history.begin_frame(tick, time)?;
            if let Some(stage) = &self.stage {
                for ((id, _), bones) in stage.movers.iter().zip(&stage.bones) {
                    frame.record(*id, bones, EntityState::default())?;
                }
            }
            for player in &mut self.players {
                let body = &mut player.body;
                if tick.0 > 0 {
                    let rates = (self.config.respawn_rate, self.config.dodge_rate);
                    body.step(&self.arena, time, dt, rates, rng);
                }
                // The stance is kept as well as the bones: an input between this tick and
                // the snapshot may change the body's aim, and what is sent must be what
                // was recorded.
                player.stance = body.stance();
                player.stance.pose(&mut player.bones);
                if body.teleported {
                    player.last_teleport = Some(tick);
                }
                // Spawn protection and dodges are the validator's to refuse; the body is
                // rewound like any other.
                player.state = EntityState {
                    teleported: body.teleported,
                    invulnerable: body.invulnerable(time),
                    evasive: body.evasive(time),
                    ..EntityState::default()
                };
                frame.record(player.id, &player.bones, player.state)?;
                // The velocity the snapshot of this tick carries: clients extrapolate with
                // it, and the validator rebuilds their extrapolated picture from it.
                frame.record_velocity(player.id, player.body.velocity)?;
            }
        }
        for player in &mut self.players {
            if let Some(timing) = player.latency.timing()
                && player.timing != Some(timing)
            {
                player.timing = Some(timing);
                // Refused only if not a timing (NaN, negative); the last one stays.
                let _refused = self.validator.set_timing(player.id, timing);
            }
        }
        Ok(std::mem::take(&mut self.queue))
    }

    /// Puts `scenery` on the arena: its level and breakable wall are loaded into the
    /// history, its doors and tram spawned (each with its role), moved and recorded from the next
    /// tick on. Returns the movers' entities, in [`Scenery::movers`]' order (what a client
    /// needs for [`Scenery::view`]). Call it once, before the first tick.
    ///
    /// # Errors
    /// [`SceneryError`] for a level piece or a mover the history refuses; nothing is
    /// added then.
    pub fn furnish(&mut self, scenery: &Scenery) -> Result<Vec<EntityId>, SceneryError> {
        let stage = Stage::build(&mut self.history, scenery)?;
        let ids = stage.movers.iter().map(|(id, _)| *id).collect();
        self.stage = Some(stage);
        Ok(ids)
    }

    /// The doors and the tram as of the latest tick (none without
    /// [`ServerCore::furnish`]): sent with the players' snapshot.
    pub fn props(&self) -> impl Iterator<Item = EntitySnapshot> + '_ {
        self.stage.iter().flat_map(|stage| {
            stage
                .movers
                .iter()
                .zip(stage.bones.iter().zip(&stage.velocities))
                .map(|((id, _), (bones, velocity))| EntitySnapshot {
                    id: *id,
                    bones: bones.to_vec(),
                    velocity: *velocity,
                    last_teleport: None,
                    protected: false,
                })
        })
    }

    /// What has happened to the breakable wall so far (nothing without one).
    #[must_use]
    pub fn wall_news(&self) -> WallNews {
        self.stage.as_ref().map(|s| s.news).unwrap_or_default()
    }

    /// Every player as of the latest tick, recorded at server time `time`.
    #[must_use]
    pub fn snapshot(&self, time: f64) -> Vec<EntitySnapshot> {
        self.bodies(time)
            .map(|b| EntitySnapshot {
                id: b.id,
                bones: b.bones.to_vec(),
                velocity: b.velocity,
                last_teleport: b.last_teleport,
                protected: b.protected,
            })
            .collect()
    }

    /// Every player as of the latest tick, recorded at server time `time`, borrowed (what
    /// [`ServerCore::snapshot`] copies), in join order.
    pub fn bodies(&self, time: f64) -> impl ExactSizeIterator<Item = BodyView<'_>> {
        self.players.iter().map(move |p| BodyView {
            id: p.id,
            position: p.body.position,
            bones: &p.bones,
            stance: p.stance,
            velocity: p.body.velocity,
            last_teleport: p.last_teleport,
            protected: p.body.invulnerable(time),
        })
    }
}

/// Puts the connection's entity in the claim: who fired is the server's to know, not the
/// packet's to say.
fn set_shooter(claim: &mut WeaponClaim, id: EntityId) {
    claim.set_shooter(id);
}

/// A player's registration: its own team, its eye as the aim bone, looking down -Z.
fn participant(team: u16) -> Participant {
    Participant {
        team,
        aim_bone: EYE,
        aim_forward: Vec3::NEG_Z,
    }
}
