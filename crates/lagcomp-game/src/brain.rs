//! A bot's client: what it does with what the server sends and what it sends back, with
//! no clock and no transport of its own.
//!
//! [`BotBrain`] syncs its clock to the server's, interpolates the snapshots it is given,
//! picks a target, aims at it as drawn with a human-sized error, decides hit or miss with
//! the same geometry the server uses, and builds claims stamped with the ticks it drew
//! between; a cheating brain bends that its way ([`Cheat`]). Every method takes the time:
//! `now`, seconds since the match (or the bot) started, paces targeting and the warm-up;
//! `local`, the client's own clock, drives clock sync, the interpolation delay and the
//! fire rate. The simulator passes a skewed virtual clock for both; `lagcomp bots` passes
//! the machine's monotonic clock.
//!
//! Given the map's scenery ([`BotBrain::furnish`]), a brain draws the doors and the tram
//! from the snapshots as it draws the players, and its shots' line of sight stops at them,
//! at the level's triangles and at the breakable wall while the server's news has it
//! standing: the geometry the server's rewound trace meets.
//!
//! Entities are known by [`EntityId`] in the order they were first seen. An entity whose
//! snapshots stop while newer ones of the world arrive (it left the server, or left this
//! client's view on a server that sends each client only the entities near it) is no
//! longer drawn once its last snapshot is older than the moment drawn; one that comes
//! back into view after such a gap starts afresh ([`EntityUpdate::in_view_since`]), never
//! blended from where it was before. In the simulator every entity is in every snapshot.
//!
//! With [`BrainConfig::arsenal`] an honest brain carries every weapon of
//! [`crate::weapon`] and picks the one that fits each target; each kind's claim is built
//! from what it draws (`arsenal.rs`: pellets from the seed the server draws from, the
//! knife's thrust, a rocket flown step by step through the bodies drawn at each step's
//! moment, then its projectile and blast claims), and every shot keeps the server's
//! fire-rate rule across weapons. The cheats that bend those weapons are in
//! `armed_cheats.rs`, the sniper's penetration claim in `sniper.rs`, what a client sees
//! along a line in `sight.rs`, and whom it picks as a target in `targets.rs`.
//!
//! A brain plays as a person does by default: it fires at a target it has had in view for
//! a moment, with a pause between shots. For load tests [`BrainConfig::fire_rate`] makes
//! an honest brain fire at a steady rate instead, at the nearest opponent drawn or along
//! its view when none is ([`BotBrain::next_shot`] says when the next shot is due).

#[path = "armed_cheats.rs"]
mod armed_cheats;
#[path = "arsenal.rs"]
mod arsenal;
#[path = "sight.rs"]
mod sight;
#[path = "sniper.rs"]
mod sniper;
#[path = "targets.rs"]
mod targets;

use std::collections::{HashMap, VecDeque};

use glam::{Quat, Vec3};
use lagcomp::{BoneTransform, EntityId, HitboxId, Rig, Tick};
use lagcomp_net::clock::{ClockConfig, ClockSync, Pong};
use lagcomp_net::interp::{
    InterpolationConfig, InterpolationDelay, Snapshot, SnapshotBuffer, View,
};
use lagcomp_net::shot::{ShotSender, stamp};
use lagcomp_validate::{ClaimedHit, RenderTime, ShotClaim, WeaponClaim};
use rand::Rng;
use rand_pcg::Pcg64Mcg;

use crate::body::{self, Arena, BONES, EYE, look_along};
use crate::cheat::{Cheat, FAKE_LATENCY};
use crate::scenery::SceneryView;
use crate::traffic::{BotFrame, ClientInput, EntityUpdate, FiredShot, fingerprint};
use crate::weapon::{Arm, RIFLE_INTERVAL};

/// How far past its newest snapshot a client draws the world (extrapolating each body
/// along its velocity), seconds; past that it holds the world and holds fire.
const MAX_EXTRAPOLATION: f64 = 0.25;

/// Seconds before any shot is fired: clocks sync and snapshot buffers fill.
pub const WARM_UP: f64 = 2.0;

/// The least time an honest brain lets pass between the times two of its shots claim (a
/// shot that would claim a closer time waits a frame): 97 % of the rifle's interval. The
/// server allows 95 % (`Policy::fire_rate_slack`, 5 % by default); the two points between
/// are margin for the claim's `f32` fraction. Holding shots to the full interval instead
/// held a third of them for a frame (the drawn time runs a little slower than the local
/// clock while the round-trip estimate grows) and cost 5 % of the fire rate.
pub const CLAIM_SPACING: f64 = 0.97 * RIFLE_INTERVAL;

/// The pause a player takes between shots beyond the weapon's 0.1 s, seconds: uniform in
/// this range.
pub const HUMAN_PAUSE: (f64, f64) = (0.02, 0.5);

/// How a brain is set up.
#[derive(Debug, Clone, Copy)]
pub struct BrainConfig {
    /// The server's tick rate, Hz.
    pub tick_rate: f64,
    /// How this bot cheats, if it does.
    pub cheat: Option<Cheat>,
    /// Its pause between shots beyond the weapon's 0.1 s, seconds, uniform in `(min,
    /// max)`; [`HUMAN_PAUSE`] unless a load test wants shots as fast as the weapon allows.
    /// A range that is empty, negative or not finite means [`HUMAN_PAUSE`].
    pub pause: (f64, f64),
    /// Shots a second for a load test, `None` to play as a person does. With a rate, an
    /// honest brain fires every `1 / rate` seconds (never faster than the rifle's
    /// interval) from the end of its warm-up: at the nearest opponent it draws (shown
    /// unprotected, no protected body near the line), or along its view when there is
    /// none (a miss is still a shot the server validates). A cheating brain ignores it;
    /// a rate that is not a positive number means `None`.
    pub fire_rate: Option<f64>,
    /// The server's rewind window, seconds ([`lagcomp::HistoryConfig::max_rewind`]): a
    /// [`Cheat::TooOld`] brain claims moments [`TOO_OLD_MARGIN`] older than that. A window
    /// that is not a positive number means [`lagcomp::DEFAULT_MAX_REWIND`].
    pub window: f64,
    /// Whether an honest brain carries the whole arsenal ([`crate::weapon::Arm`]) and
    /// picks the weapon that fits each target: the knife within reach, the shotgun close,
    /// a rocket at mid range, the sniper rifle far, the rifle otherwise. `false`: the
    /// rifle only (what `lagcomp bots` plays, whose wire carries hitscan claims). A
    /// cheating brain and a load test's steady fire use the rifle either way.
    pub arsenal: bool,
}

/// How much older than the server's window a [`Cheat::TooOld`] brain claims, seconds.
pub const TOO_OLD_MARGIN: f64 = 0.2;

impl BrainConfig {
    /// A brain for a server ticking at `tick_rate`, cheating as `cheat`, pausing as a
    /// player does.
    #[must_use]
    pub fn new(tick_rate: f64, cheat: Option<Cheat>) -> Self {
        Self {
            tick_rate,
            cheat,
            pause: HUMAN_PAUSE,
            fire_rate: None,
            window: lagcomp::DEFAULT_MAX_REWIND,
            arsenal: false,
        }
    }
}

/// One entity as the brain draws it.
#[derive(Debug, Clone)]
struct Remote {
    id: EntityId,
    buffer: SnapshotBuffer,
    /// The newest snapshot tick received.
    newest_tick: Option<Tick>,
    /// Server time of that snapshot.
    newest_time: f64,
    /// (tick, protected) of recent snapshots.
    flags: VecDeque<(Tick, bool)>,
    /// The bones drawn this frame.
    scratch: Vec<BoneTransform>,
    /// How they were drawn, `None` when not drawn.
    view: Option<View>,
}

impl Remote {
    fn new(id: EntityId) -> Self {
        Self {
            id,
            buffer: SnapshotBuffer::new(192),
            newest_tick: None,
            newest_time: f64::NEG_INFINITY,
            flags: VecDeque::new(),
            scratch: Vec::new(),
            view: None,
        }
    }
}

/// A bot's client logic (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct BotBrain {
    me: EntityId,
    remotes: Vec<Remote>,
    index: HashMap<EntityId, usize>,
    clock: ClockSync,
    delay: InterpolationDelay,
    sender: ShotSender<WeaponClaim>,
    frame: u32,
    newest_tick: Option<Tick>,
    newest_time: f64,
    next_seq: u32,
    next_fire: f64,
    target: usize,
    target_since: f64,
    aim: Quat,
    probe: Option<u32>,
    /// Probes a fake-latency cheat holds back: the id and the local time it first saw it.
    late_probes: VecDeque<(u32, f64)>,
    rng: Pcg64Mcg,
    cheat: Option<Cheat>,
    /// How far back a [`Cheat::TooOld`] brain claims, behind what it draws, seconds.
    too_old: f64,
    /// When a rapid-fire cheat fired the first shot of a pair (local time).
    tapped: Option<f64>,
    /// Local time until which the view stays on the last shot's direction.
    hold_aim_until: f64,
    /// Whether it may fire (until [`BotBrain::cease_fire`]).
    firing: bool,
    /// The pause between shots (a valid range).
    pause: (f64, f64),
    /// Seconds between shots when firing at a steady rate for a load test.
    steady: Option<f64>,
    /// The server time the last shot claimed (`NEG_INFINITY` before the first).
    last_claimed: f64,
    /// Set when an honest shot was held back for the weapon's spacing
    /// ([`BotBrain::spaced`]): the caller tries again next frame.
    held: bool,
    /// The map's doors, tram, breakable wall and level as this client knows them.
    scenery: Option<SceneryView>,
    /// The server time drawn this frame (what the breakable wall is looked at with).
    drawn_at: f64,
    /// The weapons besides the rifle, when it carries them ([`BrainConfig::arsenal`]).
    arsenal: Option<arsenal::Arsenal>,
    /// The hitscan weapon the shot being built is fired with: the rifle, or the sniper
    /// rifle while [`BotBrain::fire_arm`] fires it.
    arm: Arm,
}

/// What stops a shot in a client's trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stops {
    /// Walls, the level and the movers: an honest trace.
    All,
    /// Nothing: the through-walls cheat.
    Nothing,
    /// Walls and the level, not the movers: the through-door cheat.
    CoverOnly,
}

impl BotBrain {
    /// The brain of the bot playing `me`, knowing `entities` already (in snapshot order;
    /// more are added as snapshots name them). It targets the entity after itself first.
    /// `rng` drives its aim error and fire pacing.
    #[must_use]
    pub fn new(config: BrainConfig, me: EntityId, entities: &[EntityId], rng: Pcg64Mcg) -> Self {
        let mut brain = Self {
            me,
            remotes: Vec::new(),
            index: HashMap::new(),
            clock: ClockSync::new(ClockConfig::default()),
            delay: InterpolationDelay::new(InterpolationConfig {
                tick_interval: 1.0 / config.tick_rate,
                // A floor that rides out a few lost snapshots (the one-way latency is taken
                // off separately, in `frame`).
                min_delay: 0.06,
                jitter_factor: 2.0,
                ..InterpolationConfig::default()
            }),
            sender: ShotSender::new(3),
            frame: 0,
            newest_tick: None,
            newest_time: f64::NEG_INFINITY,
            next_seq: 1,
            next_fire: f64::NEG_INFINITY,
            last_claimed: f64::NEG_INFINITY,
            held: false,
            scenery: None,
            drawn_at: f64::NEG_INFINITY,
            arsenal: if config.arsenal
                && config.cheat.is_none_or(Cheat::needs_arsenal)
                && config.fire_rate.is_none()
            {
                arsenal::Arsenal::new(config.window)
            } else {
                None
            },
            arm: Arm::Rifle,
            target: 0,
            target_since: 0.0,
            aim: Quat::IDENTITY,
            probe: None,
            late_probes: VecDeque::new(),
            rng,
            cheat: config.cheat,
            too_old: if config.window.is_finite() && config.window > 0.0 {
                config.window
            } else {
                lagcomp::DEFAULT_MAX_REWIND
            } + TOO_OLD_MARGIN,
            tapped: None,
            hold_aim_until: f64::NEG_INFINITY,
            firing: true,
            pause: match config.pause {
                (min, max) if min.is_finite() && max.is_finite() && 0.0 <= min && min < max => {
                    (min, max)
                }
                _ => HUMAN_PAUSE,
            },
            steady: config
                .fire_rate
                .filter(|rate| rate.is_finite() && *rate > 0.0 && config.cheat.is_none())
                .map(|rate| (1.0 / rate).max(RIFLE_INTERVAL)),
        };
        for &id in entities {
            brain.remote(id);
        }
        if let Some(me) = brain.index.get(&me) {
            brain.target = (me + 1) % brain.remotes.len();
        }
        brain
    }

    /// The entity this brain plays.
    #[must_use]
    pub fn me(&self) -> EntityId {
        self.me
    }

    /// How this brain cheats, if it does.
    #[must_use]
    pub fn cheat(&self) -> Option<Cheat> {
        self.cheat
    }

    /// The clock synchronisation (round trip, offset).
    #[must_use]
    pub fn clock(&self) -> &ClockSync {
        &self.clock
    }

    /// The newest snapshot tick received.
    #[must_use]
    pub fn newest_tick(&self) -> Option<Tick> {
        self.newest_tick
    }

    /// Shots fired and not yet acknowledged.
    #[must_use]
    pub fn unacknowledged(&self) -> usize {
        self.sender.pending().len()
    }

    /// Fires no more shots (it still resends unacknowledged ones and keeps aiming), so a
    /// bot can wait for every verdict before it leaves.
    pub fn cease_fire(&mut self) {
        self.firing = false;
    }

    /// When firing at a steady rate ([`BrainConfig::fire_rate`]), the client time its
    /// next shot is due, so whoever drives the brain can run a frame then rather than at
    /// the next frame (at 60 frames a second, waiting for a frame would stretch a 100 ms
    /// interval to 117 ms half the time). `None` when not firing at a steady rate, not
    /// firing any more, or before its first shot.
    #[must_use]
    pub fn next_shot(&self) -> Option<f64> {
        self.steady?;
        (self.firing && self.next_fire.is_finite()).then_some(self.next_fire)
    }

    /// The slot of entity `id`, added when new.
    fn remote(&mut self, id: EntityId) -> usize {
        if let Some(&i) = self.index.get(&id) {
            return i;
        }
        let i = self.remotes.len();
        self.remotes.push(Remote::new(id));
        self.index.insert(id, i);
        i
    }

    /// Gives the brain the map's scenery (doors, tram, breakable wall, level): from then
    /// on it draws the movers from the snapshots and its shots' lines of sight stop where
    /// the server's do.
    pub fn furnish(&mut self, view: SceneryView) {
        self.scenery = Some(view);
    }

    /// The scenery it knows, to hand it news of the breakable wall
    /// ([`SceneryView::learn`]).
    pub fn scenery_mut(&mut self) -> Option<&mut SceneryView> {
        self.scenery.as_mut()
    }

    /// The answer to a clock-sync ping, received at `local`.
    pub fn on_pong(&mut self, pong: Pong, local: f64) {
        self.clock.on_pong(pong, local);
    }

    /// The server's round-trip probe `id`: answered in the next input.
    pub fn on_probe(&mut self, id: u32) {
        self.probe = Some(id);
    }

    /// Every shot up to `up_to` reached the server.
    pub fn on_shot_ack(&mut self, up_to: u32) {
        self.sender.ack(up_to);
    }

    /// A snapshot of tick `tick` taken at server time `time`, received at `local`: all
    /// of it or one part of it (each part is used on its own). Entities without one bone
    /// per bone of the humanoid rig are ignored.
    pub fn on_snapshot(
        &mut self,
        local: f64,
        tick: Tick,
        time: f64,
        entities: impl IntoIterator<Item = EntityUpdate>,
    ) {
        // Later parts of the same tick are not newer: the delay measures each tick once.
        self.delay.on_snapshot(local, time);
        if self.newest_tick.is_none_or(|n| tick > n) {
            self.newest_tick = Some(tick);
            self.newest_time = time;
        }
        for e in entities {
            // A door's or the tram's snapshot is drawn with the scenery, not aimed at.
            let e = match &mut self.scenery {
                Some(scenery) => match scenery.take(tick, time, e) {
                    Some(e) => e,
                    None => continue,
                },
                None => e,
            };
            if e.bones.len() != BONES {
                // Not the humanoid this brain aims at (a server it does not understand):
                // every pose it draws has one transform per bone of the rig.
                continue;
            }
            let i = self.remote(e.id);
            let remote = &mut self.remotes[i];
            if e.in_view_since
                .is_some_and(|since| remote.newest_tick.is_some_and(|n| since > n))
            {
                // Out of view since the newest snapshot held: where it was then says nothing
                // of where it went, so nothing is blended from it.
                remote.buffer.clear();
                remote.flags.clear();
                remote.newest_tick = None;
                remote.newest_time = f64::NEG_INFINITY;
            }
            // Teleported since the newest snapshot this client holds, received or not.
            let newest = remote.newest_tick;
            let teleport = lagcomp_net::teleported_since(e.last_teleport, newest);
            if newest.is_none_or(|n| tick > n) {
                remote.newest_tick = Some(tick);
                remote.newest_time = time;
            }
            remote.buffer.push(Snapshot {
                tick,
                time,
                bones: e.bones,
                velocity: e.velocity,
                teleport,
            });
            let flags = &mut remote.flags;
            flags.push_back((tick, e.protected));
            if flags.len() > 64 {
                flags.pop_front();
            }
        }
    }

    /// One client frame at `now` (seconds since the start, for pacing) and `local` (the
    /// client's clock): draws the world, maybe fires, and says what to send.
    pub fn frame(&mut self, now: f64, local: f64, arena: &Arena, rig: &Rig) -> BotFrame {
        let ping = self.clock.ping_due(local).then(|| self.clock.ping(local));
        self.frame = self.frame.wrapping_add(1);
        let probe_reply = self.probe_reply(local);
        let mut input = ClientInput {
            frame: self.frame,
            aim: self.reported_aim(),
            ping,
            probe_reply,
            shots: Vec::new(),
            interp_delay: self.delay.delay(),
            newest_tick: self.newest_tick,
        };
        let mut fired = None;
        let mut replayed = None;
        let mut blast = None;
        self.decide(
            now,
            local,
            arena,
            rig,
            &mut input,
            [&mut fired, &mut blast],
            &mut replayed,
        );
        input.shots = self.sender.packet();
        if let Some(replayed) = replayed {
            input.shots.push(replayed);
        }
        BotFrame {
            input,
            fired,
            blast,
        }
    }

    #[expect(clippy::too_many_arguments, reason = "one step of the frame")]
    fn decide(
        &mut self,
        now: f64,
        local: f64,
        arena: &Arena,
        rig: &Rig,
        input: &mut ClientInput,
        [fired, blast]: [&mut Option<FiredShot>; 2],
        replayed: &mut Option<(u32, WeaponClaim)>,
    ) {
        let Some(estimate) = self.clock.server_time(local) else {
            return;
        };
        // Snapshots are half a round trip old when they arrive; draw a buffer's worth
        // (the adaptive delay) behind the newest one expected. What the client reports as
        // its interpolation delay is the whole lag behind the server's present.
        let one_way = self.clock.rtt().srtt().unwrap_or(0.0) / 2.0;
        let lag = one_way + self.delay.delay();
        input.interp_delay = lag;
        let render = estimate - lag;
        let newest_time = self.newest_time;
        for remote in &mut self.remotes {
            remote.view = if remote.newest_time < render && newest_time >= render {
                // Its snapshots stopped while the world's go on: it left the server or this
                // client's view (or lost a lag's worth of parts in a row). It is not drawn
                // rather than drawn where it no longer is. Never so in the simulator, whose
                // every snapshot holds every entity.
                None
            } else {
                remote
                    .buffer
                    .sample(render, MAX_EXTRAPOLATION, &mut remote.scratch)
            };
        }
        self.drawn_at = render;
        if let Some(scenery) = &mut self.scenery {
            scenery.draw(render, MAX_EXTRAPOLATION);
        }
        if render - newest_time > MAX_EXTRAPOLATION {
            // No snapshot for longer than it extrapolates (a stalled server, a dead link):
            // what it draws is held where it was, not where the server has it, so an
            // honest client holds fire rather than claim a shot at it.
            return;
        }
        let Some(me) = self.index.get(&self.me).copied() else {
            return;
        };
        if self.remotes[me].view.is_none() {
            return;
        }
        let eye = self.remotes[me].scratch[EYE as usize].translation;
        if self.arsenal.as_ref().is_some_and(arsenal::Arsenal::flying) {
            // The rocket in flight is flown through what is drawn now; nothing else is
            // fired (nor the view turned) until it has struck.
            if let Some([(claim, shot), (blast_claim, blast_shot)]) =
                self.fly_rocket(me, render, local, arena, rig)
            {
                self.sender.fire(shot.seq, claim);
                self.sender.fire(blast_shot.seq, blast_claim);
                *blast = Some(blast_shot);
                *fired = Some(shot);
            }
            return;
        }
        if let Some(interval) = self.steady {
            self.decide_steady(
                interval, me, eye, now, local, render, arena, rig, input, fired,
            );
            return;
        }
        self.choose_target(me, now, eye, arena);
        if self.remotes[self.target].view.is_none() {
            return;
        }
        let chest = self.remotes[self.target].scratch[body::CHEST as usize].translation;
        // Right after a shot the view stays where the shot went (as a player's does), so
        // the input that carries a resent shot still reports the view it was aimed with.
        if local >= self.hold_aim_until {
            self.aim = look_along(chest - eye);
        }
        input.aim = self.reported_aim();
        if let Some(arsenal) = &mut self.arsenal {
            arsenal.viewed(local, self.aim * Vec3::NEG_Z);
        }

        let settled = now - self.target_since > 0.4;
        let protected = self.shown_protected(self.target);
        let allowed = match self.cheat {
            Some(Cheat::ThroughWalls) => self.behind_cover(eye, chest, arena),
            Some(Cheat::ThroughTheWallSniper) => {
                protected == Some(false) && self.behind_fixed_cover(eye, chest, arena)
            }
            // It picks the body its blast can claim when it fires.
            Some(Cheat::BlastThroughWall) => true,
            Some(Cheat::ThroughDoor) => {
                protected == Some(false) && self.behind_door(eye, chest, arena)
            }
            Some(Cheat::Invulnerable) => protected == Some(true),
            // An honest player does not waste shots on a target shown as protected, nor
            // shoot past a protected player near the line: the server tests a protected
            // player where it is now (its lag compensation is off), which no client has
            // drawn yet, so such a shot could be stopped by a body the shooter never saw.
            _ => protected == Some(false) && !self.protected_near_line(me, eye, chest),
        };
        if self.firing && now >= WARM_UP && settled && allowed && local >= self.next_fire {
            let due = self.next_fire;
            // The fast shot of a pair is the cheat only while it is faster than the weapon
            // allows; one held back longer (no target in view) starts a new pair.
            let fast = self.tapped.is_some_and(|first| local - first < 0.05);
            let double_tap = self.cheat == Some(Cheat::RapidFire) && !fast;
            self.next_fire = if double_tap {
                local + 0.025
            } else {
                local + 0.1 + self.rng.random_range(self.pause.0..self.pause.1)
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
            let shot = if self.cheat.is_some_and(Cheat::needs_arsenal) {
                self.cheat_arm(eye, arena)
            } else if self.arsenal.is_some() {
                self.fire_arm(me, eye, chest, render, local, arena, rig)
            } else {
                self.fire(me, eye, render, arena, rig, cheating)
                    .map(|(claim, shot)| (WeaponClaim::Hitscan(claim), shot))
            };
            if let Some((claim, shot)) = shot {
                self.tapped = double_tap.then_some(local);
                // A slower weapon than the rifle waits its own interval.
                self.next_fire += shot.arm.interval() - RIFLE_INTERVAL;
                // The view this input reports is the one the shot was aimed with (a
                // snapping cheat's stays a quarter turn off it until the shot has arrived).
                self.aim = look_along(aim_of(&claim));
                let hold = if self.cheat == Some(Cheat::Snap) {
                    0.5
                } else {
                    0.15
                };
                self.hold_aim_until = local + hold;
                input.aim = self.reported_aim();
                let seq = shot.seq;
                if cheating && self.cheat == Some(Cheat::Replay) {
                    *replayed = Some((seq, claim));
                } else {
                    self.sender.fire(seq, claim);
                }
                *fired = Some(shot);
            } else if std::mem::take(&mut self.held) {
                self.next_fire = due;
            }
        }
    }

    /// A frame of a brain firing at a steady rate: aims at the nearest opponent it may
    /// shoot, and fires when a shot is due, at it or along its view.
    #[expect(clippy::too_many_arguments, reason = "one step of the frame")]
    fn decide_steady(
        &mut self,
        interval: f64,
        me: usize,
        eye: Vec3,
        now: f64,
        local: f64,
        render: f64,
        arena: &Arena,
        rig: &Rig,
        input: &mut ClientInput,
        fired: &mut Option<FiredShot>,
    ) {
        let chest = |remote: &Remote| remote.scratch[body::CHEST as usize].translation;
        let target = (0..self.remotes.len())
            .filter(|&i| {
                i != me && self.remotes[i].view.is_some() && self.shown_protected(i) == Some(false)
            })
            .map(|i| ((chest(&self.remotes[i]) - eye).length_squared(), i))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, i)| i)
            .filter(|&i| !self.protected_near_line(me, eye, chest(&self.remotes[i])));
        if let Some(target) = target
            && local >= self.hold_aim_until
        {
            self.aim = look_along(chest(&self.remotes[target]) - eye);
        }
        input.aim = self.reported_aim();
        if !(self.firing && now >= WARM_UP && local >= self.next_fire) {
            return;
        }
        let due = self.next_fire;
        // From when the shot was due, not from now, so a late frame does not slow the rate;
        // never sooner than the weapon allows after this shot.
        self.next_fire = if self.next_fire.is_finite() {
            (self.next_fire + interval).max(local + RIFLE_INTERVAL)
        } else {
            local + interval
        };
        let shot = match target {
            Some(target) => {
                self.target = target;
                self.fire(me, eye, render, arena, rig, false)
            }
            None => self.fire_along_view(me, eye, arena, rig),
        };
        if let Some((claim, shot)) = shot {
            self.aim = look_along(claim.direction);
            self.hold_aim_until = local + 0.15;
            input.aim = self.reported_aim();
            self.sender.fire(shot.seq, WeaponClaim::Hitscan(claim));
            *fired = Some(shot);
        } else if std::mem::take(&mut self.held) {
            self.next_fire = due;
        }
    }

    /// A shot along the view with no target in it: stamped with the moment its own body
    /// is drawn at (its muzzle is its eye as drawn), traced against everyone drawn.
    fn fire_along_view(
        &mut self,
        me: usize,
        eye: Vec3,
        arena: &Arena,
        rig: &Rig,
    ) -> Option<(ShotClaim, FiredShot)> {
        let direction = (self.aim * Vec3::NEG_Z).normalize_or_zero();
        if direction == Vec3::ZERO {
            return None;
        }
        let hit = self.client_trace(me, eye, direction, arena, rig, Stops::All, None);
        let shown = hit.map_or(me, |(i, _, _)| i);
        let view = self.remotes[shown].view?;
        // An extrapolated view says so: the server rebuilds the picture it drew.
        let render_time = RenderTime::from(stamp(&view));
        let at = self.claimed_at(shown, render_time);
        if !self.spaced(at) {
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let claim = self.claim(seq, render_time, eye, direction, hit);
        let clean_view = matches!(
            view,
            View::Exact { .. } | View::Interpolated { .. } | View::Extrapolated { .. }
        );
        let shot = self.fired(&claim, hit, shown, clean_view, false);
        Some((claim, shot))
    }

    /// The server time `render_time` names, as this client can tell it from the snapshots
    /// of the remote in slot `shown` (whose view stamped the shot); `None` when a tick is
    /// no longer held.
    fn claimed_at(&self, shown: usize, render_time: RenderTime) -> Option<f64> {
        match render_time {
            RenderTime::Time(t) => Some(t),
            RenderTime::Ticks { from, to, fraction } => {
                let buffer = &self.remotes[shown].buffer;
                let (a, b) = (buffer.time_of(from)?, buffer.time_of(to)?);
                Some(a + (b - a) * f64::from(fraction))
            }
            RenderTime::Extrapolated { from, by } => {
                Some(self.remotes[shown].buffer.time_of(from)? + by)
            }
        }
    }

    /// Whether an honest shot claiming server time `at` comes [`CLAIM_SPACING`] or more
    /// after the last shot claimed; if not, it is held for a frame ([`BotBrain::held`])
    /// and `false` returned. The server spaces shots by their claimed times (its fire-rate check), and
    /// the render timeline those come from slews with the clock estimate and the
    /// interpolation delay (one late pong moves the round trip by milliseconds), so a shot
    /// fired a full interval after the last on the local clock could claim a time closer
    /// than the weapon allows and be rejected. A time this client cannot tell is let
    /// through: the server's time check judges it. Records `at` as the last claimed when
    /// the shot may go.
    fn spaced(&mut self, at: Option<f64>) -> bool {
        let Some(at) = at else {
            return true;
        };
        let arm = self.arm;
        if at < self.last_claimed + CLAIM_SPACING
            || self.arsenal.as_ref().is_some_and(|a| !a.may_fire(arm, at))
        {
            self.held = true;
            return false;
        }
        self.last_claimed = at;
        if let Some(arsenal) = &mut self.arsenal {
            arsenal.fired(at);
        }
        true
    }

    /// The claim of a rifle shot this client fires, naming what it hit (`hit`: the remote's
    /// slot, the hitbox and the point) as it saw it.
    fn claim(
        &self,
        seq: u32,
        render_time: RenderTime,
        origin: Vec3,
        direction: Vec3,
        hit: Option<(usize, HitboxId, Vec3)>,
    ) -> ShotClaim {
        ShotClaim {
            shooter: self.me,
            weapon: self.arm.id(),
            seq,
            render_time,
            origin,
            direction,
            hit: hit.map(|(i, hitbox, at)| ClaimedHit {
                target: self.remotes[i].id,
                hitbox: Some(hitbox),
                point: Some(at),
            }),
        }
    }

    /// What this client remembers of `claim` to compare with the verdict: what it hit, and
    /// what it drew of the remote in slot `shown`.
    fn fired(
        &self,
        claim: &ShotClaim,
        hit: Option<(usize, HitboxId, Vec3)>,
        shown: usize,
        clean_view: bool,
        cheat: bool,
    ) -> FiredShot {
        FiredShot {
            fingerprint: fingerprint(claim),
            arm: self.arm,
            seq: claim.seq,
            client_hit: hit.map(|(i, h, _)| (self.remotes[i].id, h)),
            drawn: self.remotes[shown].scratch.clone(),
            clean_view,
            cheat,
        }
    }

    /// The probe to answer in this frame's input: the latest one received, or for a
    /// fake-latency cheat the oldest one it has held for [`FAKE_LATENCY`].
    fn probe_reply(&mut self, local: f64) -> Option<u32> {
        if self.cheat != Some(Cheat::FakeLatency) {
            return self.probe.take();
        }
        if let Some(id) = self.probe.take() {
            self.late_probes.push_back((id, local));
            // The server remembers its last 16 probes; older answers would be ignored.
            if self.late_probes.len() > 16 {
                self.late_probes.pop_front();
            }
        }
        let due = self
            .late_probes
            .front()
            .is_some_and(|&(_, seen)| local - seen >= FAKE_LATENCY);
        due.then(|| self.late_probes.pop_front().map(|(id, _)| id))
            .flatten()
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

    /// Aims (with a human-sized error) at the target as drawn, decides hit or miss with
    /// the same geometry the server uses, and builds the claim; a cheat bends it its way.
    fn fire(
        &mut self,
        me: usize,
        eye: Vec3,
        render: f64,
        arena: &Arena,
        rig: &Rig,
        cheating: bool,
    ) -> Option<(ShotClaim, FiredShot)> {
        let aimed = self.target;
        let cheat = self.cheat.filter(|_| cheating);
        // A backtracking cheat draws the target as it was further back.
        let past = match cheat {
            Some(Cheat::TooOld) => Some(render - self.too_old),
            Some(Cheat::Backtrack) => Some(render - 0.25),
            // The extra one-way latency its late probe answers make the server believe in.
            Some(Cheat::FakeLatency) => Some(render - FAKE_LATENCY / 2.0),
            _ => None,
        };
        if let Some(past) = past {
            let remote = &mut self.remotes[aimed];
            let view = remote.buffer.sample(past, 0.0, &mut remote.scratch);
            remote.view = view;
            view?;
        }
        // A fake-latency cheat fires from where its own body was at the moment it claims,
        // as a client that far behind would have drawn itself (the server checks the
        // muzzle against the shooter's body at the claimed moment).
        let eye = match (cheat, past) {
            (Some(Cheat::FakeLatency), Some(past)) => {
                let remote = &mut self.remotes[me];
                remote.buffer.sample(past, 0.0, &mut remote.scratch)?;
                remote.scratch[EYE as usize].translation
            }
            _ => eye,
        };
        let bones = &self.remotes[aimed].scratch;
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
        let stops = match cheat {
            Some(Cheat::ThroughWalls) => Stops::Nothing,
            Some(Cheat::ThroughDoor) => Stops::CoverOnly,
            _ => Stops::All,
        };
        let only = past.map(|_| aimed);
        let mut hit = self.client_trace(me, origin, direction, arena, rig, stops, only);
        if cheat == Some(Cheat::TamperedPoint) {
            hit = Some((aimed, body::HEAD_BOX, point));
        }
        if cheat == Some(Cheat::ThroughWalls)
            && !hit.is_some_and(|(_, _, at)| {
                self.cover_distance(arena, origin, direction) < (at - origin).length()
            })
        {
            // Only shots whose line really crosses a wall before the hit are this cheat.
            return None;
        }
        if cheat == Some(Cheat::ThroughDoor)
            && !hit.is_some_and(|(_, _, at)| {
                self.mover_distance(origin, direction) < (at - origin).length()
            })
        {
            // Only shots whose line really crosses a door drawn shut before the hit are
            // this cheat.
            return None;
        }
        if cheat == Some(Cheat::Invulnerable) && hit.is_some_and(|(i, _, _)| i != aimed) {
            // Someone unprotected stands in the line: hitting them is no exploit, so this
            // cheat holds fire (it would otherwise count a fair hit as a cheat let through).
            return None;
        }
        let shown = hit.map_or(aimed, |(i, _, _)| i);
        let view = self.remotes[shown].view?;
        let render_time = match (past, stamp(&view)) {
            (Some(past), _) => RenderTime::Time(past),
            (None, stamp) => RenderTime::from(stamp),
        };
        let at = self.claimed_at(shown, render_time);
        if cheat.is_none() && !self.spaced(at) {
            return None;
        }
        let clean_view = matches!(
            view,
            View::Exact { .. } | View::Interpolated { .. } | View::Extrapolated { .. }
        );
        let seq = if cheat == Some(Cheat::Replay) {
            1
        } else {
            let seq = self.next_seq;
            self.next_seq += 1;
            seq
        };
        let claim = self.claim(seq, render_time, origin, direction, hit);
        let shot = self.fired(&claim, hit, shown, clean_view, cheating);
        Some((claim, shot))
    }
}

/// Which way a claim of any kind was aimed.
fn aim_of(claim: &WeaponClaim) -> Vec3 {
    match claim {
        WeaponClaim::Hitscan(shot) => shot.direction,
        WeaponClaim::Projectile(hit) => hit.direction,
        WeaponClaim::Pellets(pellets) => pellets.direction,
        WeaponClaim::Melee(strike) => strike.aim,
        WeaponClaim::Splash(blast) => blast.direction,
        WeaponClaim::Penetration(round) => round.direction,
    }
}

/// A standard normal sample (Box-Muller).
fn gaussian(rng: &mut Pcg64Mcg) -> f32 {
    let u1: f32 = rng.random_range(f32::EPSILON..1.0);
    let u2: f32 = rng.random_range(0.0..1.0);
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}
