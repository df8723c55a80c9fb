//! One simulated match under one network condition: a server, bots behind conditioned
//! links, and every shot judged three ways.
//!
//! Time is virtual and advances in 1 ms steps; everything random comes from seeded
//! generators, so the same configuration gives the same numbers on every run. The server
//! simulates every body, records a lagcomp [`History`] each tick, and sends snapshots; each
//! bot's client syncs its clock, interpolates the snapshots, aims at what it draws with a
//! human-sized error, decides hit or miss with the same geometry code, and sends claims
//! stamped with the ticks it drew between. The server judges each arriving shot with no
//! compensation, with its own latency guess, and with the full validator.

use std::collections::BTreeMap;
use std::sync::Arc;

use glam::{Quat, Vec3};
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, HitboxId, PlacedShape, Ray,
    RewindTarget, Rig, Tick, WindowPolicy,
};
use lagcomp_net::clock::{ClockConfig, ClockSync, Ping, Pong, RttEstimator};
use lagcomp_net::conditioner::{LinkConditioner, Preset};
use lagcomp_net::interp::{
    InterpolationConfig, InterpolationDelay, Snapshot, SnapshotBuffer, View,
};
use lagcomp_net::shot::{Delivery, Fingerprint, ShotReceiver, ShotSender, Stamp, stamp};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Outcome, Participant, RenderTime, RuleSet, ShotClaim, Validator,
    WeaponId,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::body::{self, Arena, BONES, Body, EYE, look_along};
use crate::cheat::Cheat;
use crate::result::{Mode, ModeResult, Outline, ShotPicture};

/// The weapon every bot carries.
pub const RIFLE: WeaponId = WeaponId(1);

/// The rules the simulated server validates with.
#[must_use]
pub fn rules(max_rewind: f64) -> RuleSet {
    RuleSet::from_toml(&format!(
        r#"
        [weapons.rifle]
        id = 1
        max_range = 200.0
        min_interval = 0.1
        aim_tolerance_deg = 45.0
        origin_tolerance = 0.35
        hit_leeway = 1.05
        hit_leeway_min = 0.02
        max_rewind = {max_rewind}
        damage = {{ head = 4.0, torso = 1.0, limb = 0.75 }}
        "#
    ))
    .map(|mut rules| {
        // The server records each bot's view from its latest input, which also carries
        // its shots: judge the angle against that, not against the view a round trip ago.
        rules.policy.view_reference = lagcomp_validate::ShooterReference::Arrival;
        // Shots are resent in every input until acknowledged, so a burst of lost inputs
        // (Gilbert-Elliott, several in a row at the 2-6 % presets) holds one back by a
        // send interval per packet lost: up to about 130 ms seen at 100/25/2 %, where
        // the default 50 ms rejected 1 honest shot in 4,000 as backtracking. A backtrack
        // of a quarter second is still caught at every preset.
        rules.policy.rewind_late_slack = 0.1;
        rules
    })
    .expect("the simulator's rules are valid")
}

/// Everything one match is configured with.
#[derive(Debug, Clone)]
pub struct SkirmishConfig {
    /// Seed of everything random.
    pub seed: u64,
    /// Simulated seconds (after a warm-up of [`WARM_UP`]).
    pub duration: f64,
    /// Bots.
    pub bots: usize,
    /// Server tick rate, Hz.
    pub tick_rate: f64,
    /// Snapshot send rate, Hz (at most the tick rate).
    pub send_rate: f64,
    /// Client frame rate, Hz.
    pub client_fps: f64,
    /// The history's window, seconds.
    pub max_rewind: f64,
    /// The network.
    pub preset: Preset,
    /// Respawns (teleports) per bot per second.
    pub respawn_rate: f64,
    /// Bot 0 cheats this way, if any.
    pub cheat: Option<Cheat>,
}

/// Seconds before any shot counts: clocks sync and snapshot buffers fill.
pub const WARM_UP: f64 = 2.0;

/// What one match measured.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Per mode, honest shots only.
    pub modes: BTreeMap<Mode, ModeResult>,
    /// Reconstruction error per honest shot that claimed a hit, metres (teleport and
    /// extrapolated views excluded).
    pub reconstruction: Vec<f64>,
    /// Cheating shots that reached the server.
    pub cheat_attempts: u64,
    /// Of those, confirmed.
    pub cheat_accepted: u64,
    /// Their outcomes by label.
    pub cheat_outcomes: BTreeMap<String, u64>,
    /// A confirmed shot worth drawing.
    pub picture: Option<ShotPicture>,
}

/// A snapshot message: every entity at one tick (shared by all clients).
#[derive(Debug)]
struct WorldSnapshot {
    tick: Tick,
    time: f64,
    entities: Vec<EntitySnapshot>,
}

#[derive(Debug)]
struct EntitySnapshot {
    bones: Vec<BoneTransform>,
    velocity: Vec3,
    /// The tick of the entity's latest teleport. Each client compares it with the newest
    /// snapshot it has: a teleport in frames it never received (a lost snapshot) still
    /// forbids the blend, as the core's rebuild does.
    last_teleport: Option<Tick>,
    invulnerable: bool,
}

/// Server to client.
#[derive(Debug, Clone, Default)]
struct Down {
    snapshot: Option<Arc<WorldSnapshot>>,
    pong: Option<Pong>,
    server_ping: Option<(u32, f64)>,
    shot_ack: Option<u32>,
}

/// Client to server.
#[derive(Debug, Clone)]
struct Up {
    aim: Quat,
    ping: Option<Ping>,
    server_pong: Option<(u32, f64)>,
    shots: Vec<(u32, ShotClaim)>,
    /// A replaying cheat's extra claim (not through the redundant sender).
    replayed: Option<(u32, ShotClaim)>,
    interp_delay: f64,
}

/// What the simulator (not the server) remembers about a fired shot, to judge agreement.
#[derive(Debug, Clone)]
struct Fired {
    /// The entity index and hitbox the client saw hit.
    client_hit: Option<(usize, HitboxId)>,
    /// The target's bones as the client drew them (for the reconstruction error).
    drawn: Vec<BoneTransform>,
    /// Whether the view was a plain blend or exact frame (not teleport, not extrapolated).
    clean_view: bool,
    /// Whether this shot is the cheat's.
    cheat: bool,
}

struct Client {
    clock: ClockSync,
    buffers: Vec<SnapshotBuffer>,
    /// Per entity, the newest snapshot tick received.
    newest_tick: Vec<Option<Tick>>,
    /// Per entity, (tick, invulnerable) of recent snapshots.
    flags: Vec<std::collections::VecDeque<(Tick, bool)>>,
    delay: InterpolationDelay,
    sender: ShotSender<ShotClaim>,
    next_seq: u32,
    next_fire: f64,
    next_frame: f64,
    target: usize,
    target_since: f64,
    aim: Quat,
    server_pong: Option<(u32, f64)>,
    clock_offset: f64,
    clock_rate: f64,
    rng: Pcg64Mcg,
    scratch: Vec<Vec<BoneTransform>>,
    views: Vec<Option<View>>,
    cheat: Option<Cheat>,
    /// When a rapid-fire cheat fired the first shot of a pair (local time).
    tapped: Option<f64>,
    /// Local time until which the view stays on the last shot's direction.
    hold_aim_until: f64,
}

struct Server {
    history: History,
    validator: Validator,
    ids: Vec<EntityId>,
    bodies: Vec<Body>,
    rtt: Vec<RttEstimator>,
    receivers: Vec<ShotReceiver>,
    reported_delay: Vec<f64>,
    queue: Vec<(usize, f64, ShotClaim)>,
    ping_id: u32,
    pings_out: Vec<BTreeMap<u32, f64>>,
    /// Per body: the tick of its latest teleport (respawn).
    last_teleport: Vec<Option<Tick>>,
}

/// Plays one match and returns what it measured.
#[must_use]
pub fn play(config: &SkirmishConfig, mut progress: impl FnMut(f64)) -> Tally {
    let mut world_rng = Pcg64Mcg::seed_from_u64(config.seed);
    let arena = Arena::new(
        15.0 + config.bots as f32,
        3 + config.bots / 3,
        &mut world_rng,
    );
    let rig = body::humanoid();
    let history_config = HistoryConfig {
        tick_rate: config.tick_rate,
        max_rewind: config.max_rewind,
    };
    let mut history = History::new(history_config).expect("a valid history config");
    for (shape, pose) in &arena.walls {
        history
            .add_static(*shape, *pose, u32::MAX)
            .expect("walls are valid");
    }
    let mut validator = Validator::new(rules(config.max_rewind));
    let mut ids = Vec::new();
    let mut bodies = Vec::new();
    for bot in 0..config.bots {
        let id = history.spawn(Arc::clone(&rig));
        validator.register(
            id,
            Participant {
                team: bot as u16,
                aim_bone: EYE,
                aim_forward: Vec3::NEG_Z,
            },
        );
        ids.push(id);
        bodies.push(Body::spawn(&arena, &mut world_rng));
    }
    let (up_link, down_link) = config.preset.links();
    let mut ups: Vec<LinkConditioner<Up>> = (0..config.bots)
        .map(|b| LinkConditioner::new(up_link, config.seed ^ (0x5eed_0000 + b as u64)))
        .collect();
    let mut downs: Vec<LinkConditioner<Down>> = (0..config.bots)
        .map(|b| LinkConditioner::new(down_link, config.seed ^ (0xd0d0_0000 + b as u64)))
        .collect();
    let mut clients: Vec<Client> = (0..config.bots)
        .map(|b| {
            let mut rng = Pcg64Mcg::seed_from_u64(config.seed.wrapping_mul(31) + b as u64);
            Client {
                clock: ClockSync::new(ClockConfig::default()),
                buffers: (0..config.bots).map(|_| SnapshotBuffer::new(192)).collect(),
                flags: vec![std::collections::VecDeque::new(); config.bots],
                newest_tick: vec![None; config.bots],
                delay: InterpolationDelay::new(InterpolationConfig {
                    tick_interval: 1.0 / config.tick_rate,
                    // A floor that rides out a few lost snapshots (the one-way latency is taken
                    // off separately, below).
                    min_delay: 0.06,
                    jitter_factor: 2.0,
                    ..InterpolationConfig::default()
                }),
                sender: ShotSender::new(3),
                next_seq: 1,
                next_fire: f64::NEG_INFINITY,
                next_frame: rng.random_range(0.0..1.0 / config.client_fps),
                target: (b + 1) % config.bots,
                target_since: 0.0,
                aim: Quat::IDENTITY,
                server_pong: None,
                clock_offset: rng.random_range(-100.0..100.0),
                // A client clock up to 0.1 % fast or slow.
                clock_rate: 1.0 + rng.random_range(-0.001..0.001),
                rng,
                scratch: vec![Vec::new(); config.bots],
                views: vec![None; config.bots],
                cheat: (b == 0).then_some(config.cheat).flatten(),
                tapped: None,
                hold_aim_until: f64::NEG_INFINITY,
            }
        })
        .collect();
    let mut server = Server {
        history,
        validator,
        ids,
        bodies,
        rtt: (0..config.bots).map(|_| RttEstimator::new()).collect(),
        receivers: (0..config.bots).map(|_| ShotReceiver::new()).collect(),
        reported_delay: vec![0.1; config.bots],
        queue: Vec::new(),
        ping_id: 0,
        pings_out: vec![BTreeMap::new(); config.bots],
        last_teleport: vec![None; config.bots],
    };
    let mut fired: BTreeMap<(usize, u64), Fired> = BTreeMap::new();
    let mut tally = Tally::default();
    for mode in Mode::ALL {
        tally.modes.insert(mode, ModeResult::default());
    }

    let tick_dt = 1.0 / config.tick_rate;
    let send_every = (config.tick_rate / config.send_rate).round().max(1.0) as u32;
    let end = WARM_UP + config.duration;
    let steps = (end * 1000.0).ceil() as u64;
    let mut next_tick = 0_u32;
    let mut bones = vec![BoneTransform::IDENTITY; BONES];
    for step in 0..=steps {
        let now = step as f64 / 1000.0;
        if step % 1000 == 0 {
            progress(now / end);
        }
        // Client packets reach the server.
        for (bot, link) in ups.iter_mut().enumerate() {
            while let Some(packet) = link.poll(now) {
                server.receive(bot, packet, now, &mut downs[bot]);
            }
        }
        // Server ticks.
        while f64::from(next_tick) * tick_dt <= now {
            let tick = Tick(next_tick);
            let time = f64::from(next_tick) * tick_dt;
            next_tick += 1;
            let mut world_rng_tick = Pcg64Mcg::seed_from_u64(config.seed ^ u64::from(tick.0) << 20);
            server.tick(
                tick,
                time,
                tick_dt,
                config,
                &arena,
                &mut world_rng_tick,
                &mut bones,
                &mut fired,
                &mut tally,
            );
            if tick.0.is_multiple_of(send_every) {
                let snapshot = Arc::new(server.snapshot(tick, time, &mut bones));
                let ping = tick
                    .0
                    .is_multiple_of((config.tick_rate as u32 / 4).max(1))
                    .then(|| {
                        server.ping_id += 1;
                        server.ping_id
                    });
                for (bot, link) in downs.iter_mut().enumerate() {
                    let server_ping = ping.map(|id| {
                        server.pings_out[bot].insert(id, now);
                        if server.pings_out[bot].len() > 16 {
                            server.pings_out[bot].pop_first();
                        }
                        (id, now)
                    });
                    link.send(
                        now,
                        Down {
                            snapshot: Some(Arc::clone(&snapshot)),
                            server_ping,
                            shot_ack: Some(server.receivers[bot].ack()),
                            ..Down::default()
                        },
                    );
                }
            }
        }
        // Server packets reach the clients.
        for (bot, link) in downs.iter_mut().enumerate() {
            while let Some(packet) = link.poll(now) {
                clients[bot].receive(packet, now);
            }
        }
        // Client frames.
        for (bot, client) in clients.iter_mut().enumerate() {
            if now < client.next_frame {
                continue;
            }
            client.next_frame += 1.0 / config.client_fps;
            let up = client.frame(bot, now, &arena, &rig, &server.ids, &mut fired);
            ups[bot].send(now, up);
        }
    }
    progress(1.0);
    let sent = fired.values().filter(|f| !f.cheat).count() as u64;
    for m in tally.modes.values_mut() {
        m.shots_sent = sent;
    }
    tally
}

impl Client {
    fn local(&self, now: f64) -> f64 {
        now * self.clock_rate + self.clock_offset
    }

    fn receive(&mut self, packet: Down, now: f64) {
        let local = self.local(now);
        if let Some(pong) = packet.pong {
            self.clock.on_pong(pong, local);
        }
        if let Some(ping) = packet.server_ping {
            self.server_pong = Some(ping);
        }
        if let Some(ack) = packet.shot_ack {
            self.sender.ack(ack);
        }
        if let Some(snapshot) = packet.snapshot {
            self.delay.on_snapshot(local, snapshot.time);
            for (i, e) in snapshot.entities.iter().enumerate() {
                // Teleported since the newest snapshot this client holds, received or not.
                let newest = self.newest_tick[i];
                let teleport = e
                    .last_teleport
                    .is_some_and(|t| newest.is_none_or(|n| t > n));
                if newest.is_none_or(|n| snapshot.tick > n) {
                    self.newest_tick[i] = Some(snapshot.tick);
                }
                self.buffers[i].push(Snapshot {
                    tick: snapshot.tick,
                    time: snapshot.time,
                    bones: e.bones.clone(),
                    velocity: e.velocity,
                    teleport,
                });
                let flags = &mut self.flags[i];
                flags.push_back((snapshot.tick, e.invulnerable));
                if flags.len() > 64 {
                    flags.pop_front();
                }
            }
        }
    }

    fn frame(
        &mut self,
        me: usize,
        now: f64,
        arena: &Arena,
        rig: &Rig,
        ids: &[EntityId],
        fired: &mut BTreeMap<(usize, u64), Fired>,
    ) -> Up {
        let local = self.local(now);
        let ping = self.clock.ping_due(local).then(|| self.clock.ping(local));
        let mut up = Up {
            aim: self.reported_aim(),
            ping,
            server_pong: self.server_pong.take(),
            shots: Vec::new(),
            replayed: None,
            interp_delay: self.delay.delay(),
        };
        let Some(estimate) = self.clock.server_time(local) else {
            up.shots = self.sender.packet();
            return up;
        };
        // Snapshots are half a round trip old when they arrive; draw a buffer's worth
        // (the adaptive delay) behind the newest one expected. What the client reports as
        // its interpolation delay is the whole lag behind the server's present.
        let one_way = self.clock.rtt().srtt().unwrap_or(0.0) / 2.0;
        let lag = one_way + self.delay.delay();
        up.interp_delay = lag;
        let render = estimate - lag;
        for (i, buffer) in self.buffers.iter().enumerate() {
            self.views[i] = buffer.sample(render, 0.25, &mut self.scratch[i]);
        }
        let Some(_) = self.views[me] else {
            up.shots = self.sender.packet();
            return up;
        };
        let eye = self.scratch[me][EYE as usize].translation;
        self.choose_target(me, now, eye, arena);
        if self.views[self.target].is_none() {
            up.shots = self.sender.packet();
            return up;
        }
        let chest = self.scratch[self.target][body::CHEST as usize].translation;
        // Right after a shot the view stays where the shot went (as a player's does), so
        // the input that carries a resent shot still reports the view it was aimed with.
        if local >= self.hold_aim_until {
            self.aim = look_along(chest - eye);
        }
        up.aim = self.reported_aim();

        let settled = now - self.target_since > 0.4;
        let protected = self.shown_protected(self.target);
        let allowed = match self.cheat {
            Some(Cheat::ThroughWalls) => self.behind_wall(eye, chest, arena),
            Some(Cheat::Invulnerable) => protected == Some(true),
            // An honest player does not waste shots on a target shown as protected, nor
            // shoot past a protected player near the line: the server tests a protected
            // player where it is now (its lag compensation is off), which no client has
            // drawn yet, so such a shot could be stopped by a body the shooter never saw.
            _ => protected == Some(false) && !self.protected_near_line(me, eye, chest),
        };
        if now >= WARM_UP && settled && allowed && local >= self.next_fire {
            // The fast shot of a pair is the cheat only while it is faster than the weapon
            // allows; one held back longer (no target in view) starts a new pair.
            let fast = self.tapped.is_some_and(|first| local - first < 0.05);
            let double_tap = self.cheat == Some(Cheat::RapidFire) && !fast;
            self.next_fire = if double_tap {
                local + 0.025
            } else {
                local + 0.1 + self.rng.random_range(0.02..0.5)
            };
            let cheating = match self.cheat {
                None => false,
                // The first shot of each pair is within the weapon's rate.
                Some(Cheat::RapidFire) => fast,
                Some(Cheat::Replay) => self.next_seq > 1,
                Some(_) => true,
            };
            // A pair starts only with a shot that was really fired: otherwise the next
            // shot would be counted as the fast one while it is the first.
            self.tapped = None;
            if let Some((seq, claim)) = self.fire(me, eye, render, arena, rig, ids, fired, cheating)
            {
                self.tapped = double_tap.then_some(local);
                // The view this input reports is the one the shot was aimed with (a
                // snapping cheat's stays a quarter turn off it until the shot has arrived).
                self.aim = look_along(claim.direction);
                let hold = if self.cheat == Some(Cheat::Snap) {
                    0.5
                } else {
                    0.15
                };
                self.hold_aim_until = local + hold;
                up.aim = self.reported_aim();
                if cheating && self.cheat == Some(Cheat::Replay) {
                    up.replayed = Some((seq, claim));
                } else {
                    self.sender.fire(seq, claim);
                }
            }
        }
        up.shots = self.sender.packet();
        if let Some(replayed) = up.replayed.take() {
            up.shots.push(replayed);
        }
        up
    }

    /// The view this client reports in its inputs.
    fn reported_aim(&self) -> Quat {
        if self.cheat == Some(Cheat::Snap) {
            // In every input, the view looks a quarter turn away from where it shoots.
            self.aim * Quat::from_rotation_y(std::f32::consts::FRAC_PI_2)
        } else {
            self.aim
        }
    }

    /// Picks a new target now and then (never itself); a cheat picks the ones it cheats on.
    fn choose_target(&mut self, me: usize, now: f64, eye: Vec3, arena: &Arena) {
        let bots = self.buffers.len();
        let wanted = |c: &Self, i: usize| -> bool {
            if i == me || c.views[i].is_none() {
                return false;
            }
            match c.cheat {
                Some(Cheat::ThroughWalls) => {
                    c.behind_wall(eye, c.scratch[i][body::CHEST as usize].translation, arena)
                }
                Some(Cheat::Invulnerable) => c.flags[i].back().is_some_and(|f| f.1),
                _ => true,
            }
        };
        let stale = now - self.target_since > 3.0 || self.target == me;
        let cheat_needs_new = matches!(self.cheat, Some(Cheat::ThroughWalls | Cheat::Invulnerable))
            && !wanted(self, self.target);
        if stale || cheat_needs_new {
            let start = self.rng.random_range(0..bots);
            if let Some(next) = (0..bots)
                .map(|k| (start + k) % bots)
                .find(|&i| wanted(self, i))
            {
                if next != self.target {
                    self.target = next;
                    self.target_since = now;
                }
            } else if self.target == me {
                self.target = (me + 1) % bots;
                self.target_since = now;
            }
        }
    }

    /// Whether entity `i` is protected (lag compensation off) in the picture drawn, by
    /// the core's rule: the state of the frame shown, or of the older frame of a blend.
    /// `None` without a view or without that snapshot's flags.
    fn shown_protected(&self, i: usize) -> Option<bool> {
        let tick = match self.views[i]? {
            View::Interpolated { from, .. } => from,
            view => view.shown_tick()?,
        };
        self.flags[i]
            .iter()
            .rev()
            .find(|(t, _)| *t == tick)
            .map(|&(_, protected)| protected)
    }

    /// Whether any other entity shown protected (or not known to be unprotected) is drawn
    /// within reach of the line from `eye` through `point`: the server tests a protected
    /// entity where it is now, which may be a window's worth of running from where it is
    /// drawn.
    fn protected_near_line(&self, me: usize, eye: Vec3, point: Vec3) -> bool {
        /// A window (0.5 s) of running at full speed, plus a body's width.
        const REACH: f32 = 4.0;
        let along = (point - eye).normalize_or_zero();
        (0..self.buffers.len()).any(|i| {
            if i == me || self.views[i].is_none() || self.shown_protected(i) == Some(false) {
                return false;
            }
            let body = self.scratch[i][body::CHEST as usize].translation - eye;
            let ahead = body.dot(along).max(0.0);
            (body - along * ahead).length() < REACH
        })
    }

    /// Whether a wall stands between `eye` and `point`.
    fn behind_wall(&self, eye: Vec3, point: Vec3, arena: &Arena) -> bool {
        let to = point - eye;
        let (distance, direction) = (to.length(), to.normalize_or_zero());
        wall_distance(arena, eye, direction) < distance
    }

    /// Aims (with a human-sized error) at the target as drawn, decides hit or miss with
    /// the same geometry the server uses, and builds the claim; a cheat bends it its way.
    #[expect(clippy::too_many_arguments, reason = "one step of the match loop")]
    fn fire(
        &mut self,
        me: usize,
        eye: Vec3,
        render: f64,
        arena: &Arena,
        rig: &Rig,
        ids: &[EntityId],
        fired: &mut BTreeMap<(usize, u64), Fired>,
        cheating: bool,
    ) -> Option<(u32, ShotClaim)> {
        let aimed = self.target;
        let cheat = self.cheat.filter(|_| cheating);
        // A backtracking cheat draws the target as it was further back.
        let past = match cheat {
            Some(Cheat::TooOld) => Some(render - 0.7),
            Some(Cheat::Backtrack) => Some(render - 0.25),
            _ => None,
        };
        if let Some(past) = past {
            let view = self.buffers[aimed].sample(past, 0.0, &mut self.scratch[aimed]);
            self.views[aimed] = view;
            view?;
        }
        let bones = &self.scratch[aimed];
        let head = self.rng.random_bool(0.3) || cheat == Some(Cheat::TamperedPoint);
        let point = if head {
            bones[body::HEAD as usize].translation
        } else {
            bones[body::CHEST as usize].translation
        };
        let noise = Vec3::new(
            gaussian(&mut self.rng),
            gaussian(&mut self.rng),
            gaussian(&mut self.rng),
        ) * 0.18;
        let mut aim_at = point + noise;
        if cheat == Some(Cheat::TamperedPoint) {
            let side = (point - eye).cross(Vec3::Y).normalize_or_zero();
            aim_at = point + side;
        }
        let direction = (aim_at - eye).normalize_or_zero();
        if direction == Vec3::ZERO {
            return None;
        }
        let origin = if cheat == Some(Cheat::FarMuzzle) {
            eye + direction * 4.0
        } else {
            eye
        };
        let walls = cheat != Some(Cheat::ThroughWalls);
        let only = past.map(|_| aimed);
        let mut hit = self.client_trace(me, origin, direction, arena, rig, walls, only);
        if cheat == Some(Cheat::TamperedPoint) {
            hit = Some((aimed, body::HEAD_BOX, point));
        }
        if cheat == Some(Cheat::ThroughWalls)
            && !hit.is_some_and(|(_, _, at)| {
                wall_distance(arena, origin, direction) < (at - origin).length()
            })
        {
            // Only shots whose line really crosses a wall before the hit are this cheat.
            return None;
        }
        if cheat == Some(Cheat::Invulnerable) && hit.is_some_and(|(i, _, _)| i != aimed) {
            // Someone unprotected stands in the line: hitting them is no exploit, so this
            // cheat holds fire (it would otherwise count a fair hit as a cheat let through).
            return None;
        }
        let shown = hit.map_or(aimed, |(i, _, _)| i);
        let view = self.views[shown]?;
        let render_time = match (past, stamp(&view)) {
            (Some(past), _) => RenderTime::Time(past),
            (None, Stamp::Ticks { from, to, fraction }) => RenderTime::Ticks { from, to, fraction },
            (None, Stamp::Extrapolated { .. }) => RenderTime::Time(render),
        };
        let clean_view = matches!(view, View::Exact { .. } | View::Interpolated { .. });
        let seq = if cheat == Some(Cheat::Replay) {
            1
        } else {
            let seq = self.next_seq;
            self.next_seq += 1;
            seq
        };
        let claim = ShotClaim {
            shooter: ids[me],
            weapon: RIFLE,
            seq,
            render_time,
            origin,
            direction,
            hit: hit.map(|(i, hitbox, at)| ClaimedHit {
                target: ids[i],
                hitbox: Some(hitbox),
                point: Some(at),
            }),
        };
        let record = Fired {
            client_hit: hit.map(|(i, h, _)| (i, h)),
            drawn: self.scratch[shown].clone(),
            clean_view,
            cheat: cheating,
        };
        // Keyed by content: a replaying cheat sends many claims under one number.
        fired.insert((me, fingerprint(&claim)), record);
        Some((seq, claim))
    }

    /// The nearest hitbox of any drawn entity (or only of `only`) along the shot, unless a
    /// wall comes first (when `walls`).
    #[expect(clippy::too_many_arguments, reason = "the cheats bend each of these")]
    fn client_trace(
        &self,
        me: usize,
        origin: Vec3,
        direction: Vec3,
        arena: &Arena,
        rig: &Rig,
        walls: bool,
        only: Option<usize>,
    ) -> Option<(usize, HitboxId, Vec3)> {
        let mut best: Option<(f32, usize, HitboxId)> = None;
        for (i, bones) in self.scratch.iter().enumerate() {
            if i == me || self.views[i].is_none() || bones.len() != BONES {
                continue;
            }
            if only.is_some_and(|o| o != i) {
                continue;
            }
            for hitbox in rig.hitboxes() {
                let placed = hitbox.placed(&bones[usize::from(hitbox.bone)]);
                if let Some(c) = placed
                    .cast_line(origin, direction)
                    .and_then(|c| c.clip(200.0))
                    && best.is_none_or(|b| c.enter < b.0)
                {
                    best = Some((c.enter, i, hitbox.id));
                }
            }
        }
        let (distance, i, hitbox) = best?;
        let wall = if walls {
            wall_distance(arena, origin, direction)
        } else {
            f32::INFINITY
        };
        (distance < wall).then(|| (i, hitbox, origin + direction * distance))
    }
}

/// How far along the line the first wall is (infinity when none).
fn wall_distance(arena: &Arena, origin: Vec3, direction: Vec3) -> f32 {
    arena
        .walls
        .iter()
        .filter_map(|(shape, pose)| {
            PlacedShape::new(*pose, *shape)
                .cast_line(origin, direction)
                .and_then(|c| c.clip(200.0))
                .map(|c| c.enter)
        })
        .fold(f32::INFINITY, f32::min)
}

impl Server {
    fn receive(&mut self, bot: usize, packet: Up, now: f64, down: &mut LinkConditioner<Down>) {
        if packet.aim.is_finite() && packet.aim.is_normalized() {
            self.bodies[bot].aim = packet.aim;
        }
        if let Some(ping) = packet.ping {
            down.send(
                now,
                Down {
                    pong: Some(Pong::answer(ping, now, now)),
                    ..Down::default()
                },
            );
        }
        if let Some((id, _)) = packet.server_pong
            && let Some(sent) = self.pings_out[bot].remove(&id)
        {
            self.rtt[bot].sample(now - sent);
        }
        if packet.interp_delay.is_finite() {
            self.reported_delay[bot] = packet.interp_delay.clamp(0.0, 0.3);
        }
        for (seq, claim) in packet.shots {
            match self.receivers[bot].accept(seq, fingerprint(&claim)) {
                Delivery::Copy => {}
                Delivery::New | Delivery::Conflict => self.queue.push((bot, now, claim)),
            }
        }
    }

    fn snapshot(&self, tick: Tick, time: f64, bones: &mut [BoneTransform]) -> WorldSnapshot {
        WorldSnapshot {
            tick,
            time,
            entities: self
                .bodies
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    b.pose(bones);
                    EntitySnapshot {
                        bones: bones.to_vec(),
                        velocity: b.velocity,
                        last_teleport: self.last_teleport[i],
                        invulnerable: b.invulnerable(time),
                    }
                })
                .collect(),
        }
    }

    #[expect(clippy::too_many_arguments, reason = "one step of the match loop")]
    fn tick(
        &mut self,
        tick: Tick,
        time: f64,
        dt: f64,
        config: &SkirmishConfig,
        arena: &Arena,
        rng: &mut Pcg64Mcg,
        bones: &mut [BoneTransform],
        fired: &mut BTreeMap<(usize, u64), Fired>,
        tally: &mut Tally,
    ) {
        {
            let mut frame = self
                .history
                .begin_frame(tick, time)
                .expect("ticks and times increase");
            for (index, (body, id)) in self.bodies.iter_mut().zip(&self.ids).enumerate() {
                if tick.0 > 0 {
                    body.step(arena, time, dt, config.respawn_rate, rng);
                }
                body.pose(bones);
                if body.teleported {
                    self.last_teleport[index] = Some(tick);
                }
                let state = EntityState {
                    lag_compensated: !body.invulnerable(time),
                    teleported: body.teleported,
                    ..EntityState::default()
                };
                frame.record(*id, bones, state).expect("poses are valid");
            }
        }
        for (bot, rtt) in self.rtt.iter().enumerate() {
            if let (Some(srtt), Some(rttvar)) = (rtt.srtt(), rtt.rttvar()) {
                self.validator.set_timing(
                    self.ids[bot],
                    ClientTiming {
                        srtt,
                        rttvar,
                        interp_delay: self.reported_delay[bot],
                    },
                );
            }
        }
        let queue = std::mem::take(&mut self.queue);
        for (bot, received, claim) in queue {
            self.judge(bot, received, &claim, fired, tally);
        }
    }

    fn judge(
        &mut self,
        bot: usize,
        received: f64,
        claim: &ShotClaim,
        fired: &mut BTreeMap<(usize, u64), Fired>,
        tally: &mut Tally,
    ) {
        let Some(shot) = fired.get(&(bot, fingerprint(claim))).cloned() else {
            return;
        };
        let verdict = self.validator.validate(&self.history, claim, received);
        if shot.cheat {
            tally.cheat_attempts += 1;
            if matches!(verdict.outcome, Outcome::Confirmed(_)) {
                tally.cheat_accepted += 1;
            }
            *tally
                .cheat_outcomes
                .entry(verdict.outcome.label().to_owned())
                .or_default() += 1;
            return;
        }
        let index_of = |id: EntityId| self.ids.iter().position(|&i| i == id);
        let client_hit = shot.client_hit.map(|(i, _)| i);
        let srtt = self.rtt[bot].srtt().unwrap_or(0.0);
        let newest = self.history.window().map_or(received, |w| w.1);
        let guess = received - srtt / 2.0 - self.reported_delay[bot];
        for mode in Mode::ALL {
            let server_hit = match mode {
                Mode::Full => match verdict.outcome {
                    Outcome::Confirmed(hit) => index_of(hit.target),
                    _ => None,
                },
                Mode::None => self.trace(bot, claim, RewindTarget::Time(newest)),
                Mode::ServerGuess => self.trace(bot, claim, RewindTarget::Time(guess)),
            };
            let m = tally.modes.get_mut(&mode).expect("every mode is tallied");
            m.shots_arrived += 1;
            if client_hit.is_some() {
                m.client_hits += 1;
            }
            if server_hit.is_some() {
                m.confirmed += 1;
            }
            if client_hit.is_some() && server_hit == client_hit {
                m.agreed += 1;
            }
            if client_hit.is_none() && server_hit.is_some() {
                m.false_confirmations += 1;
            }
            if mode == Mode::Full
                && let Some(reason) = verdict.outcome.reason()
            {
                *m.rejections.entry(reason.name().to_owned()).or_default() += 1;
            }
        }
        // How far the pose the server rebuilt is from the one the client drew.
        if let (Some((target, _)), true) = (shot.client_hit, shot.clean_view)
            && let Some(rebuilt) = rewind_target(claim).and_then(|t| {
                self.history
                    .entity_at(self.ids[target], t, WindowPolicy::Reject)
                    .ok()
                    .flatten()
            })
        {
            if !rebuilt.sample().rewound() {
                // Lag compensation was off then: the present pose was used on purpose.
                return;
            }
            let error = (0..BONES as u16)
                .filter_map(|b| {
                    let server = rebuilt.bone(b)?.translation;
                    Some(f64::from(
                        server.distance(shot.drawn[usize::from(b)].translation),
                    ))
                })
                .fold(0.0, f64::max);
            tally.reconstruction.push(error);
            if tally.picture.is_none()
                && let Outcome::Confirmed(hit) = verdict.outcome
            {
                tally.picture = self.picture(claim, target, hit.point, &rebuilt);
            }
        }
    }

    /// Which entity a plain rewound trace of the claim hits at `target` (baselines).
    fn trace(&self, bot: usize, claim: &ShotClaim, target: RewindTarget) -> Option<usize> {
        let ray = Ray::new(claim.origin, claim.direction, 200.0).ok()?;
        let ignore = [self.ids[bot]];
        let trace = self
            .history
            .query(target)
            .ignore(&ignore)
            .window_policy(WindowPolicy::Clamp)
            .ray(&ray)
            .ok()?;
        let hit = trace.hit?;
        self.ids.iter().position(|&i| i == hit.entity)
    }

    /// The top-down picture of a confirmed shot whose target has moved since.
    fn picture(
        &self,
        claim: &ShotClaim,
        target: usize,
        hit: Vec3,
        rebuilt: &lagcomp::EntityAt<'_>,
    ) -> Option<ShotPicture> {
        let id = self.ids[target];
        let rig = self.history.rig(id).ok()?;
        let newest = self.history.window()?.1;
        let now = self
            .history
            .entity_at(id, RewindTarget::Time(newest), WindowPolicy::Reject)
            .ok()
            .flatten()?;
        let moved = now
            .bone(body::CHEST)?
            .translation
            .distance(rebuilt.bone(body::CHEST)?.translation);
        if moved < 0.4 {
            return None;
        }
        let outlines = |at: &lagcomp::EntityAt<'_>| -> Vec<Outline> {
            rig.hitboxes()
                .iter()
                .filter_map(|h| at.hitbox(h.id))
                .map(|p| outline(&p))
                .collect()
        };
        let flat = |v: Vec3| [v.x, v.z];
        Some(ShotPicture {
            caption: format!(
                "A confirmed shot: the target has moved {moved:.2} m between the moment the \
                 shooter drew and the present"
            ),
            present: outlines(&now),
            rewound: outlines(rebuilt),
            ray_from: flat(claim.origin),
            ray_to: flat(hit),
            hit: Some(flat(hit)),
        })
    }
}

/// A hitbox seen from above.
fn outline(p: &PlacedShape) -> Outline {
    let flat = |v: Vec3| [v.x, v.z];
    match p.shape {
        lagcomp::Shape::Sphere { radius } => Outline::Circle {
            center: flat(p.pose.translation),
            radius,
        },
        lagcomp::Shape::Capsule {
            radius,
            half_height,
            axis,
        } => {
            let along = p.pose.rotation * axis.unit() * half_height;
            Outline::Stadium {
                a: flat(p.pose.translation - along),
                b: flat(p.pose.translation + along),
                radius,
            }
        }
        lagcomp::Shape::Box { half_extents } => {
            // The box's footprint: the hull of its corners from above (its top face for an
            // upright box).
            let h = half_extents;
            let corners = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)];
            Outline::Polygon {
                points: corners
                    .iter()
                    .map(|&(x, z)| {
                        flat(
                            p.pose.translation + p.pose.rotation * Vec3::new(x * h.x, 0.0, z * h.z),
                        )
                    })
                    .collect(),
            }
        }
    }
}

fn rewind_target(claim: &ShotClaim) -> Option<RewindTarget> {
    match claim.render_time {
        RenderTime::Ticks { from, to, fraction } => Some(RewindTarget::between(from, to, fraction)),
        RenderTime::Time(t) => Some(RewindTarget::Time(t)),
    }
}

/// A content hash of a claim, so redundant copies are told from replays.
fn fingerprint(claim: &ShotClaim) -> u64 {
    Fingerprint::new()
        .bytes(format!("{claim:?}").as_bytes())
        .finish()
}

/// A standard normal sample (Box-Muller).
fn gaussian(rng: &mut Pcg64Mcg) -> f32 {
    let u1: f32 = rng.random_range(f32::EPSILON..1.0);
    let u2: f32 = rng.random_range(0.0..1.0);
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}
