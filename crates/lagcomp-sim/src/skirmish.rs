//! One simulated match under one network condition: a server, bots behind conditioned
//! links, and every shot judged three ways.
//!
//! Time is virtual and advances in 1 ms steps; everything random comes from seeded
//! generators, so the same configuration gives the same numbers on every run. The server
//! ([`ServerCore`]) simulates every body, records a lagcomp [`lagcomp::History`] each tick,
//! and sends snapshots; each bot's client ([`BotBrain`]) syncs its clock, interpolates the
//! snapshots, aims at what it draws with a human-sized error, decides hit or miss with the
//! same geometry code, and sends claims stamped with the ticks it drew between. The server
//! judges each arriving shot with no compensation, with its own latency guess, and with
//! the full validator. Only this file knows what every side did: which shots cheated and
//! what each client saw, to tally agreement.

use std::collections::BTreeMap;
use std::sync::Arc;

use glam::Vec3;
use lagcomp::{EntityId, PlacedShape, Ray, RewindTarget, Tick, WindowPolicy};
use lagcomp_game::body::{self, Arena, BONES};
use lagcomp_game::brain::{BotBrain, BrainConfig, WARM_UP};
use lagcomp_game::cheat::Cheat;
use lagcomp_game::scenery::{Scenery, WallNews};
use lagcomp_game::scorecard::ModeResult;
use lagcomp_game::server::{CoreConfig, EntitySnapshot, QueuedShot, ServerCore};
use lagcomp_game::traffic::{ClientInput, EntityUpdate, FiredShot, claim_fingerprint};
use lagcomp_game::weapon::Arm;
use lagcomp_net::clock::Pong;
use lagcomp_net::conditioner::{LinkConditioner, Preset};
use lagcomp_validate::{RenderTime, ShotClaim, VerdictOutcome, WeaponClaim};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::report::{ChosenShot, ShotScenes};
use crate::result::{Mode, Outline, ShotPicture};

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
    /// The rewind window, seconds: the history's and the rifle's
    /// ([`CoreConfig::max_rewind`]).
    pub max_rewind: f64,
    /// The rifle's no-rewind threshold, seconds of round trip
    /// ([`CoreConfig::no_rewind_above_rtt`]).
    pub no_rewind_above_rtt: Option<f64>,
    /// The network.
    pub preset: Preset,
    /// Respawns (teleports) per bot per second.
    pub respawn_rate: f64,
    /// Bot 0 cheats this way, if any.
    pub cheat: Option<Cheat>,
    /// Whether the server holds probed round trips to its players' snapshot
    /// acknowledgements ([`lagcomp_validate::latency`]; `true` unless measuring the defence).
    pub echo_ceiling: bool,
    /// Whether the arena has the scenery ([`Scenery::around`]): three sliding doors, a
    /// tram, a wall that falls a third of the way through the match and is rebuilt at
    /// two thirds, and a triangle-mesh level.
    pub scenery: bool,
    /// Whether honest bots carry every weapon and pick the one that fits each target
    /// ([`BrainConfig::arsenal`]; a cheat that bends a weapon other than the rifle needs
    /// it too), or the rifle only: the hitscan claims the three modes compare, at the
    /// rifle's rate.
    pub arsenal: bool,
}

/// What one match measured.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Per mode, honest shots only.
    pub modes: BTreeMap<Mode, ModeResult>,
    /// Reconstruction error per honest shot that claimed a hit, metres (teleport views
    /// excluded).
    pub reconstruction: Vec<f64>,
    /// How far back each honest shot reached (arrival minus claimed time), seconds.
    pub rewinds: Vec<f64>,
    /// Honest shots claiming an extrapolated view, and their rejections.
    pub extrapolated: crate::result::ExtrapolatedShots,
    /// Cheating shots that reached the server.
    pub cheat_attempts: u64,
    /// Of those, confirmed.
    pub cheat_accepted: u64,
    /// Their outcomes by label.
    pub cheat_outcomes: BTreeMap<String, u64>,
    /// Honest hits the full validator refused (spawn protection, dodges), by refusal name.
    pub refused: BTreeMap<String, u64>,
    /// A confirmed shot worth drawing.
    pub picture: Option<ShotPicture>,
    /// The first shot of each chosen kind, in 3D.
    pub scenes: ShotScenes,
    /// Honest shots the server judged `Blocked`, by what blocked them (`"wall"`: a wall
    /// or the level; `"entity"`: a door or the tram) and by whether the client had
    /// claimed a hit (`true`: the two saw the line differently) or a miss.
    pub honest_blocked: BTreeMap<(&'static str, bool), u64>,
    /// What the arena held besides its walls ([`Scenery::describe`]), if anything.
    pub scenery: Option<String>,
    /// Per weapon, honest claims only, the full validator's verdicts.
    pub arms: BTreeMap<Arm, ModeResult>,
}

/// A snapshot message: every entity at one tick (shared by all clients).
#[derive(Debug)]
struct WorldSnapshot {
    tick: Tick,
    time: f64,
    entities: Vec<EntitySnapshot>,
    /// What has happened to the breakable wall.
    wall: WallNews,
}

/// Server to client.
#[derive(Debug, Clone, Default)]
struct Down {
    snapshot: Option<Arc<WorldSnapshot>>,
    pong: Option<Pong>,
    server_ping: Option<u32>,
    shot_ack: Option<u32>,
}

/// A bot's client: its brain and its clock, which runs at its own rate from its own
/// origin.
struct SimClient {
    brain: BotBrain,
    next_frame: f64,
    clock_offset: f64,
    clock_rate: f64,
}

impl SimClient {
    fn local(&self, now: f64) -> f64 {
        now * self.clock_rate + self.clock_offset
    }

    fn receive(&mut self, packet: Down, now: f64) {
        let local = self.local(now);
        if let Some(pong) = packet.pong {
            self.brain.on_pong(pong, local);
        }
        if let Some(id) = packet.server_ping {
            self.brain.on_probe(id);
        }
        if let Some(ack) = packet.shot_ack {
            self.brain.on_shot_ack(ack);
        }
        if let Some(snapshot) = packet.snapshot {
            if let Some(scenery) = self.brain.scenery_mut() {
                scenery.learn(snapshot.wall);
            }
            let entities = snapshot.entities.iter().map(|e| EntityUpdate {
                id: e.id,
                bones: e.bones.clone(),
                velocity: e.velocity,
                last_teleport: e.last_teleport,
                protected: e.protected,
                in_view_since: None,
            });
            self.brain
                .on_snapshot(local, snapshot.tick, snapshot.time, entities);
        }
    }
}

/// Plays one match and returns what it measured.
///
/// # Panics
/// On a configuration the server refuses (tick rate, window or no-rewind threshold out of
/// range).
#[must_use]
pub fn play(config: &SkirmishConfig, mut progress: impl FnMut(f64)) -> Tally {
    let mut world_rng = Pcg64Mcg::seed_from_u64(config.seed);
    let arena = Arena::new(
        15.0 + config.bots as f32,
        3 + config.bots / 3,
        &mut world_rng,
    );
    let mut server = ServerCore::new(
        CoreConfig {
            tick_rate: config.tick_rate,
            max_rewind: config.max_rewind,
            respawn_rate: config.respawn_rate,
            no_rewind_above_rtt: config.no_rewind_above_rtt,
            ..CoreConfig::default()
        },
        arena.clone(),
    )
    .expect("a valid server config");
    server.set_echo_ceiling(config.echo_ceiling);
    let ids: Vec<EntityId> = (0..config.bots)
        .map(|_| server.join(&mut world_rng))
        .collect();
    let scenery = if config.scenery {
        Scenery::around(
            &arena,
            config.seed ^ 0x5ce4_e000,
            WARM_UP + config.duration / 3.0,
            WARM_UP + config.duration * 2.0 / 3.0,
        )
    } else {
        Scenery::empty()
    };
    let movers = server
        .furnish(&scenery)
        .expect("the scenery's level is valid");
    let rig = Arc::clone(server.rig());
    let (up_link, down_link) = config.preset.links();
    let mut ups: Vec<LinkConditioner<ClientInput>> = (0..config.bots)
        .map(|b| LinkConditioner::new(up_link, config.seed ^ (0x5eed_0000 + b as u64)))
        .collect();
    let mut downs: Vec<LinkConditioner<Down>> = (0..config.bots)
        .map(|b| LinkConditioner::new(down_link, config.seed ^ (0xd0d0_0000 + b as u64)))
        .collect();
    let mut clients: Vec<SimClient> = (0..config.bots)
        .map(|b| {
            let mut rng = Pcg64Mcg::seed_from_u64(config.seed.wrapping_mul(31) + b as u64);
            let next_frame = rng.random_range(0.0..1.0 / config.client_fps);
            let clock_offset = rng.random_range(-100.0..100.0);
            // A client clock up to 0.1 % fast or slow.
            let clock_rate = 1.0 + rng.random_range(-0.001..0.001);
            let mut brain = BotBrain::new(
                BrainConfig {
                    window: config.max_rewind,
                    arsenal: config.arsenal,
                    ..BrainConfig::new(config.tick_rate, (b == 0).then_some(config.cheat).flatten())
                },
                ids[b],
                &ids,
                rng,
            );
            if config.scenery {
                brain.furnish(scenery.view(&movers).expect("the server loaded this level"));
            }
            SimClient {
                brain,
                next_frame,
                clock_offset,
                clock_rate,
            }
        })
        .collect();
    let mut fired: BTreeMap<(usize, u64), FiredShot> = BTreeMap::new();
    let mut tally = Tally {
        scenery: config.scenery.then(|| scenery.describe()),
        ..Tally::default()
    };
    for mode in Mode::ALL {
        tally.modes.insert(mode, ModeResult::default());
    }

    let tick_dt = 1.0 / config.tick_rate;
    let send_every = (config.tick_rate / config.send_rate).round().max(1.0) as u32;
    let end = WARM_UP + config.duration;
    let steps = (end * 1000.0).ceil() as u64;
    let mut next_tick = 0_u32;
    for step in 0..=steps {
        let now = step as f64 / 1000.0;
        if step % 1000 == 0 {
            progress(now / end);
        }
        // Client packets reach the server.
        for (bot, link) in ups.iter_mut().enumerate() {
            while let Some(packet) = link.poll(now) {
                if let Some(pong) = server.receive(ids[bot], packet, now) {
                    downs[bot].send(
                        now,
                        Down {
                            pong: Some(pong),
                            ..Down::default()
                        },
                    );
                }
            }
        }
        // Server ticks.
        while f64::from(next_tick) * tick_dt <= now {
            let tick = Tick(next_tick);
            let time = f64::from(next_tick) * tick_dt;
            next_tick += 1;
            let mut world_rng_tick = Pcg64Mcg::seed_from_u64(config.seed ^ u64::from(tick.0) << 20);
            let queue = server
                .tick(tick, time, tick_dt, &mut world_rng_tick)
                .expect("ticks and times increase");
            for shot in &queue {
                judge(&mut server, &ids, shot, &fired, tick_dt, &mut tally);
            }
            if tick.0.is_multiple_of(send_every) {
                let snapshot = Arc::new(WorldSnapshot {
                    tick,
                    time,
                    entities: server
                        .snapshot(time)
                        .into_iter()
                        .chain(server.props())
                        .collect(),
                    wall: server.wall_news(),
                });
                let ping = tick
                    .0
                    .is_multiple_of((config.tick_rate as u32 / 4).max(1))
                    .then(|| server.probe(now));
                for (bot, link) in downs.iter_mut().enumerate() {
                    link.send(
                        now,
                        Down {
                            snapshot: Some(Arc::clone(&snapshot)),
                            server_ping: ping,
                            shot_ack: server.shot_ack(ids[bot]),
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
            let local = client.local(now);
            let frame = client.brain.frame(now, local, &arena, &rig);
            // Keyed by content: a replaying cheat sends many claims under one number.
            for shot in frame.fired.into_iter().chain(frame.blast) {
                fired.insert((bot, shot.fingerprint), shot);
            }
            ups[bot].send(now, frame.input);
        }
    }
    progress(1.0);
    // The modes judge hitscan claims only.
    let sent = fired
        .values()
        .filter(|f| !f.cheat && f.arm.kind() == "hitscan")
        .count() as u64;
    for m in tally.modes.values_mut() {
        m.shots_sent = sent;
    }
    tally
}

/// Validates one queued shot and tallies it three ways (or as a cheat).
fn judge(
    server: &mut ServerCore,
    ids: &[EntityId],
    queued: &QueuedShot,
    fired: &BTreeMap<(usize, u64), FiredShot>,
    tick_dt: f64,
    tally: &mut Tally,
) {
    let received = queued.received;
    let Some(bot) = ids.iter().position(|&i| i == queued.shooter) else {
        return;
    };
    let Some(shot) = fired.get(&(bot, claim_fingerprint(&queued.claim))) else {
        return;
    };
    let claim = match &queued.claim {
        WeaponClaim::Hitscan(claim) => claim,
        other => {
            judge_any(server, ids, other, shot, received, tally);
            return;
        }
    };
    if !shot.cheat {
        tally.rewinds.push(received - claimed_time(claim, tick_dt));
    }
    let verdict = server.validate(claim, received);
    if shot.cheat {
        tally.cheat_attempts += 1;
        // A claim of a miss the server traced into the tram (a vehicle, a target too) is
        // confirmed on the tram: the server's own finding, not the cheat's claim, and no
        // player hurt. Only a player confirmed is a cheat let through.
        let label = match verdict.outcome {
            VerdictOutcome::Confirmed(hit) if !ids.contains(&hit.target) => "confirmed_on_vehicle",
            VerdictOutcome::Confirmed(_) => {
                tally.cheat_accepted += 1;
                "confirmed"
            }
            ref outcome => outcome.label(),
        };
        *tally.cheat_outcomes.entry(label.to_owned()).or_default() += 1;
        if verdict.outcome.reason().is_some() {
            offer(
                tally,
                ChosenShot::CheatCaught,
                server,
                (claim, &verdict),
                ids,
            );
        }
        return;
    }
    if verdict.outcome.reason().is_some() {
        offer(
            tally,
            ChosenShot::HonestRejected,
            server,
            (claim, &verdict),
            ids,
        );
    }
    if let VerdictOutcome::Blocked { by, .. } = verdict.outcome {
        offer(tally, ChosenShot::Blocked, server, (claim, &verdict), ids);
        let by = match by {
            lagcomp::Blocker::Wall(_) => "wall",
            lagcomp::Blocker::Entity(_) => "entity",
        };
        *tally
            .honest_blocked
            .entry((by, shot.client_hit.is_some()))
            .or_default() += 1;
    }
    if matches!(claim.render_time, RenderTime::Extrapolated { .. }) {
        tally.extrapolated.shots += 1;
        if verdict.outcome.reason().is_some() {
            tally.extrapolated.rejected += 1;
        }
    }
    let history = server.history();
    let index_of = |id: EntityId| ids.iter().position(|&i| i == id);
    // A refused hit is one the server's trace agreed with and the game's rules denied
    // damage: agreement, not a confirmation and not a rejection.
    let refused_on = match verdict.outcome {
        VerdictOutcome::Refused {
            target, refusal, ..
        } => {
            *tally.refused.entry(refusal.name().to_owned()).or_default() += 1;
            index_of(target)
        }
        _ => None,
    };
    let client_hit = shot.client_hit.and_then(|(id, _)| index_of(id));
    let confirmed_on = match verdict.outcome {
        VerdictOutcome::Confirmed(hit) => index_of(hit.target),
        _ => None,
    };
    count_arm(
        tally,
        shot.arm,
        client_hit,
        confirmed_on,
        refused_on,
        verdict.outcome.reason().map(|r| r.name()),
    );
    let srtt = server.srtt(queued.shooter).unwrap_or(0.0);
    let reported_delay = server.reported_delay(queued.shooter).unwrap_or(0.0);
    let newest = history.window().map_or(received, |w| w.1);
    let guess = received - srtt / 2.0 - reported_delay;
    for mode in Mode::ALL {
        let server_hit = match mode {
            Mode::Full => match verdict.outcome {
                VerdictOutcome::Confirmed(hit) => index_of(hit.target),
                _ => None,
            },
            Mode::None => trace(server, ids, bot, claim, RewindTarget::Time(newest)),
            Mode::ServerGuess => trace(server, ids, bot, claim, RewindTarget::Time(guess)),
        };
        let m = tally.modes.get_mut(&mode).expect("every mode is tallied");
        m.shots_arrived += 1;
        if client_hit.is_some() {
            m.client_hits += 1;
        }
        if server_hit.is_some() {
            m.confirmed += 1;
        }
        let refused_agrees = mode == Mode::Full && refused_on.is_some() && refused_on == client_hit;
        if client_hit.is_some() && (server_hit == client_hit || refused_agrees) {
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
    if let Some((target, rebuilt)) = reconstruct(history, claim.render_time, shot, tally)
        && tally.picture.is_none()
        && let VerdictOutcome::Confirmed(hit) = verdict.outcome
    {
        tally.picture = picture(server, claim, target, hit.point, &rebuilt);
        if tally.picture.is_some() {
            offer(tally, ChosenShot::Confirmed, server, (claim, &verdict), ids);
        }
    }
}

/// How far (largest bone distance) the pose the server rebuilds for a claim stamped
/// `render_time` lies from the one the client drew of the target it saw hit, pushed to
/// the tally; the target and the rebuilt pose. Not for a teleport's view, nor when lag
/// compensation was off (the present pose used on purpose).
fn reconstruct<'h>(
    history: &'h lagcomp::History,
    render_time: RenderTime,
    shot: &FiredShot,
    tally: &mut Tally,
) -> Option<(EntityId, lagcomp::EntityAt<'h>)> {
    let (target, _) = shot.client_hit.filter(|_| shot.clean_view)?;
    let rebuilt = rebuilt_as_drawn(history, render_time, target)?;
    if !rebuilt.sample().rewound() {
        return None;
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
    Some((target, rebuilt))
}

/// One honest claim's verdict in its weapon's tally: `client_hit` is the player the
/// client saw hit, `confirmed_on` the player the server confirmed a hit on, `refused_on`
/// the one it agreed was hit and denied damage, `rejected` the rejection's reason.
fn count_arm(
    tally: &mut Tally,
    arm: Arm,
    client_hit: Option<usize>,
    confirmed_on: Option<usize>,
    refused_on: Option<usize>,
    rejected: Option<&str>,
) {
    let m = tally.arms.entry(arm).or_default();
    m.shots_arrived += 1;
    m.client_hits += u64::from(client_hit.is_some());
    m.confirmed += u64::from(confirmed_on.is_some());
    if client_hit.is_some() && (confirmed_on == client_hit || refused_on == client_hit) {
        m.agreed += 1;
    }
    if client_hit.is_none() && confirmed_on.is_some() {
        m.false_confirmations += 1;
    }
    if let Some(reason) = rejected {
        *m.rejections.entry(reason.to_owned()).or_default() += 1;
    }
}

/// Validates a claim of a kind other than hitscan (pellets, knife, rocket, blast) and
/// tallies it for its weapon (or as a cheat). A claim that names several players (pellets,
/// a blast) agrees when the server confirms the first the client saw hit; it is
/// rejected when any of its parts is.
fn judge_any(
    server: &mut ServerCore,
    ids: &[EntityId],
    claim: &WeaponClaim,
    shot: &FiredShot,
    received: f64,
    tally: &mut Tally,
) {
    let verdict = server.validate_any(claim, received);
    let index_of = |id: EntityId| ids.iter().position(|&i| i == id);
    let client_hit = shot.client_hit.and_then(|(id, _)| index_of(id));
    let (mut confirmed_on, mut refused_on, mut rejected) = (None, None, None);
    for part in verdict.verdicts() {
        match part.outcome {
            VerdictOutcome::Confirmed(hit) => {
                let on = index_of(hit.target);
                // The first the client saw hit, if confirmed; else any player confirmed.
                if confirmed_on.is_none() || on == client_hit {
                    confirmed_on = on.or(confirmed_on);
                }
            }
            VerdictOutcome::Refused {
                target, refusal, ..
            } => {
                *tally.refused.entry(refusal.name().to_owned()).or_default() += 1;
                if refused_on.is_none() || index_of(target) == client_hit {
                    refused_on = index_of(target);
                }
            }
            ref outcome => rejected = rejected.or(outcome.reason().map(|r| r.name())),
        }
    }
    if shot.cheat {
        tally.cheat_attempts += 1;
        let label = if confirmed_on.is_some() {
            tally.cheat_accepted += 1;
            "confirmed"
        } else {
            rejected.unwrap_or("miss")
        };
        *tally.cheat_outcomes.entry(label.to_owned()).or_default() += 1;
        return;
    }
    count_arm(
        tally,
        shot.arm,
        client_hit,
        confirmed_on,
        refused_on,
        rejected,
    );
    // The pellets and the knife were stamped with the moment drawn, as a rifle shot is
    // (a rocket's record holds what was drawn when it struck, not when it was fired).
    if matches!(shot.arm, Arm::Shotgun | Arm::Knife) {
        let _ = reconstruct(server.history(), claim.render_time(), shot, tally);
    }
}

/// Offers a judged shot to the tally's 3D pictures as `kind` (drawn only when the first
/// of its kind: the check is all other shots pay).
fn offer(
    tally: &mut Tally,
    kind: ChosenShot,
    server: &ServerCore,
    judged: (&ShotClaim, &lagcomp_validate::Verdict),
    players: &[EntityId],
) {
    if tally.scenes.wants(kind) {
        let rules = server.validator().rules();
        tally
            .scenes
            .offer(kind, server.history(), rules, judged, players);
    }
}

/// Which entity a plain rewound trace of the claim hits at `target` (baselines).
fn trace(
    server: &ServerCore,
    ids: &[EntityId],
    bot: usize,
    claim: &ShotClaim,
    target: RewindTarget,
) -> Option<usize> {
    let ray = Ray::new(claim.origin, claim.direction, 200.0).ok()?;
    let ignore = [ids[bot]];
    let trace = server
        .history()
        .query(target)
        .ignore(&ignore)
        .window_policy(WindowPolicy::Clamp)
        .ray(&ray)
        .ok()?;
    let hit = trace.hit?;
    ids.iter().position(|&i| i == hit.entity)
}

/// The top-down picture of a confirmed shot whose target has moved since.
fn picture(
    server: &ServerCore,
    claim: &ShotClaim,
    id: EntityId,
    hit: Vec3,
    rebuilt: &lagcomp::EntityAt<'_>,
) -> Option<ShotPicture> {
    let history = server.history();
    let rig = history.rig(id).ok()?;
    let newest = history.window()?.1;
    let now = history
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

/// The server time a claim names. Tick `n` is recorded at `n * tick_dt` here, so ticks
/// that have left the history still have a time.
fn claimed_time(claim: &ShotClaim, tick_dt: f64) -> f64 {
    match claim.render_time {
        RenderTime::Ticks { from, to, fraction } => {
            let (a, b) = (f64::from(from.0) * tick_dt, f64::from(to.0) * tick_dt);
            a + (b - a) * f64::from(fraction)
        }
        RenderTime::Time(t) => t,
        RenderTime::Extrapolated { from, by } => f64::from(from.0) * tick_dt + by,
    }
}

fn rewind_target(render_time: RenderTime) -> Option<RewindTarget> {
    match render_time {
        RenderTime::Ticks { from, to, fraction } => Some(RewindTarget::between(from, to, fraction)),
        RenderTime::Time(t) => Some(RewindTarget::Time(t)),
        // The frame extrapolated from; the picture is rebuilt by `rebuilt_as_drawn`.
        RenderTime::Extrapolated { from, .. } => Some(RewindTarget::between(from, from, 0.0)),
    }
}

/// The claimed target as the server rebuilds what the client drew.
fn rebuilt_as_drawn<'h>(
    history: &'h lagcomp::History,
    render_time: RenderTime,
    target: EntityId,
) -> Option<lagcomp::EntityAt<'h>> {
    let rebuilt = match render_time {
        RenderTime::Extrapolated { from, by } => history.entity_extrapolated(target, from, by),
        _ => history.entity_at(target, rewind_target(render_time)?, WindowPolicy::Reject),
    };
    rebuilt.ok().flatten()
}
