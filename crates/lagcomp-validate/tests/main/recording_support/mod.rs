//! The live side of the recording tests: a server that keeps a history and a validator
//! and records every call it makes to them, a scripted mini match played on it, and the
//! small example recording that `docs/FORMAT.md` shows.

use std::sync::Arc;

use lagcomp::{
    Axis, BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, HitboxId, Pose,
    Quat, Rig, Shape, Tick, Vec3, Zone,
};
use lagcomp_validate::recording::RecordingWriter;
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RenderTime, RuleSet, ShotClaim, Validator, Verdict,
    WeaponId,
};

/// A game server: the history and validator it runs, and the recording of every call it
/// makes to them, written next to each call.
pub(crate) struct Server {
    pub(crate) history: History,
    pub(crate) validator: Validator,
    pub(crate) out: RecordingWriter<Vec<u8>>,
    /// Every claim as it was judged live: (arrival, claim, verdict).
    pub(crate) judged: Vec<(f64, ShotClaim, Verdict)>,
}

impl Server {
    pub(crate) fn new(config: HistoryConfig, rules: &RuleSet) -> Self {
        let mut out = RecordingWriter::new(Vec::new(), &config).expect("header");
        out.rules(rules).expect("rules");
        Self {
            history: History::new(config).expect("valid config"),
            validator: Validator::new(rules.clone()),
            out,
            judged: Vec::new(),
        }
    }

    pub(crate) fn wall(&mut self, shape: Shape, pose: Pose) {
        self.history.add_static(shape, pose, 1).expect("valid wall");
        self.out.static_collider(shape, pose, 1).expect("recorded");
    }

    pub(crate) fn spawn(&mut self, rig: &Arc<Rig>, participant: Option<Participant>) -> EntityId {
        let id = self.history.spawn(Arc::clone(rig));
        match participant {
            Some(p) => {
                self.validator.register(id, p);
                self.out.spawn(id, rig, &p).expect("recorded");
            }
            None => self.out.spawn_unregistered(id, rig).expect("recorded"),
        }
        id
    }

    pub(crate) fn register(&mut self, id: EntityId, participant: Participant) {
        self.validator.register(id, participant);
        self.out.register(id, &participant).expect("recorded");
    }

    pub(crate) fn forget(&mut self, id: EntityId) {
        self.validator.forget(id);
        self.out.forget(id).expect("recorded");
    }

    pub(crate) fn despawn(&mut self, id: EntityId) {
        self.history.despawn(id).expect("active");
        self.out.despawn(id).expect("recorded");
    }

    pub(crate) fn timing(&mut self, id: EntityId, timing: ClientTiming) {
        self.validator
            .set_timing(id, timing)
            .expect("a valid timing");
        self.out.timing(id, &timing).expect("recorded");
    }

    pub(crate) fn frame(
        &mut self,
        tick: u32,
        time: f64,
        entities: &[(EntityId, EntityState, Vec<BoneTransform>)],
    ) {
        let mut frame = self
            .history
            .begin_frame(Tick(tick), time)
            .expect("in order");
        for (id, state, bones) in entities {
            frame.record(*id, bones, *state).expect("valid record");
        }
        frame.finish();
        let borrowed: Vec<(EntityId, EntityState, &[BoneTransform])> = entities
            .iter()
            .map(|(id, state, bones)| (*id, *state, &bones[..]))
            .collect();
        self.out
            .frame(Tick(tick), time, &borrowed)
            .expect("recorded");
    }

    pub(crate) fn shot(&mut self, received_at: f64, claim: ShotClaim) -> Verdict {
        self.out.claim(received_at, &claim).expect("recorded");
        let verdict = self.validator.validate(&self.history, &claim, received_at);
        self.out.verdict(&verdict).expect("recorded");
        self.judged.push((received_at, claim, verdict));
        verdict
    }

    pub(crate) fn finish(self) -> (Vec<u8>, Vec<(f64, ShotClaim, Verdict)>) {
        (self.out.finish().expect("flushed"), self.judged)
    }
}

pub(crate) const RATE: f64 = 64.0;
pub(crate) const TICKS: u32 = 215;

pub(crate) const HEAD: HitboxId = HitboxId(1);
pub(crate) const CHEST: HitboxId = HitboxId(2);
pub(crate) const RIFLE: WeaponId = WeaponId(1);
pub(crate) const SMG: WeaponId = WeaponId(2);

/// The match's rules: a long rifle with a tight aim cone, a short-range SMG.
pub(crate) const MATCH_RULES: &str = r#"
[weapons.rifle]
id = 1
max_range = 60.0
min_interval = 0.1
aim_tolerance_deg = 4.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
damage = { head = 4.0, torso = 1.0, limb = 0.75 }

[weapons.smg]
id = 2
max_range = 25.0
min_interval = 0.08
aim_tolerance_deg = 6.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.35
damage = { head = 2.0 }
"#;

pub(crate) fn match_rules() -> RuleSet {
    RuleSet::from_toml(MATCH_RULES).expect("valid rules")
}

/// Three bones: pelvis (the root), chest 0.45 m and head (the eye, the aim bone) 0.8 m
/// above it; legs hang from the pelvis.
pub(crate) fn soldier_rig() -> Arc<Rig> {
    Arc::new(
        Rig::new(
            3,
            vec![
                Hitbox::new(1, "head", Zone::Head, 2, Shape::sphere(0.14)),
                Hitbox::new(
                    2,
                    "chest",
                    Zone::Torso,
                    1,
                    Shape::capsule(0.2, 0.15, Axis::Y),
                ),
                Hitbox::new(
                    3,
                    "pelvis",
                    Zone::Torso,
                    0,
                    Shape::cuboid(Vec3::new(0.18, 0.12, 0.12)),
                ),
                Hitbox::new(4, "legs", Zone::Limb, 0, Shape::capsule(0.12, 0.3, Axis::Y))
                    .offset_by(Vec3::new(0.0, -0.5, 0.0)),
            ],
        )
        .expect("valid rig"),
    )
}

/// A crate nobody registers with the validator.
pub(crate) fn crate_rig() -> Arc<Rig> {
    Arc::new(
        Rig::rigid(vec![Hitbox::new(
            0,
            "crate",
            Zone::Custom(9),
            0,
            Shape::cuboid(Vec3::splat(0.5)),
        )])
        .expect("valid rig"),
    )
}

pub(crate) const EYE_HEIGHT: f32 = 0.8;
const CHEST_HEIGHT: f32 = 0.45;
/// A player's aim bone looks along its local +Z.
pub(crate) const FORWARD: Vec3 = Vec3::Z;

/// A soldier's bones with its pelvis at `root`, its head turned to `view`.
pub(crate) fn soldier_bones(root: Vec3, view: Quat) -> Vec<BoneTransform> {
    vec![
        BoneTransform::from_translation(root),
        BoneTransform::from_translation(root + Vec3::Y * CHEST_HEIGHT),
        BoneTransform::new(root + Vec3::Y * EYE_HEIGHT, view),
    ]
}

/// Who is in the scripted match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Who {
    /// Shooter, team 1, at the south end, watching the runner (and the dodger for a while).
    Alpha,
    /// Shooter, team 2, watching the flanker behind the wall.
    Bravo,
    /// Shooter, team 1, who never reports timing.
    Charlie,
    /// Team 2, runs east across the middle; dies at tick 175.
    Runner,
    /// Team 2, runs east behind the wall and out of it.
    Flanker,
    /// Team 2, stands west; teleports at tick 90, dodges (no lag compensation) for ticks
    /// 100 to 140, leaves at tick 145.
    Dodger,
}

pub(crate) fn time_of(tick: u32) -> f64 {
    f64::from(tick) / RATE
}

/// Where each one's pelvis is at server time `t`. The runners move in straight lines, so
/// the server's interpolation between ticks rebuilds them exactly where clients drew them.
pub(crate) fn root(who: Who, t: f64) -> Vec3 {
    let t = t as f32;
    match who {
        Who::Alpha => Vec3::new(0.0, 0.9, -20.0),
        Who::Bravo => Vec3::new(6.0, 0.9, -20.0),
        Who::Charlie => Vec3::new(-3.0, 0.9, -18.0),
        Who::Runner => Vec3::new(-4.0 + 2.5 * t, 0.9, 0.0),
        Who::Flanker => Vec3::new(10.0 + 4.0 * t, 0.9, 4.0),
        Who::Dodger => {
            if t < 90.0 / RATE as f32 {
                Vec3::new(-6.0, 0.9, 0.0)
            } else {
                Vec3::new(-6.0, 0.9, 1.0)
            }
        }
    }
}

pub(crate) fn eye(who: Who, t: f64) -> Vec3 {
    root(who, t) + Vec3::Y * EYE_HEIGHT
}

pub(crate) fn head(who: Who, t: f64) -> Vec3 {
    eye(who, t)
}

pub(crate) fn chest(who: Who, t: f64) -> Vec3 {
    root(who, t) + Vec3::Y * CHEST_HEIGHT
}

/// Whom a shooter's view follows at tick `tick`.
fn focus(who: Who, tick: u32) -> Option<Who> {
    match who {
        Who::Alpha if (120..140).contains(&tick) => Some(Who::Dodger),
        Who::Alpha => Some(Who::Runner),
        Who::Bravo => Some(Who::Flanker),
        _ => None,
    }
}

fn view(who: Who, tick: u32) -> Quat {
    match focus(who, tick) {
        Some(other) => {
            let t = time_of(tick);
            Quat::from_rotation_arc(FORWARD, (head(other, t) - eye(who, t)).normalize())
        }
        None => Quat::IDENTITY,
    }
}

fn state(who: Who, tick: u32) -> EntityState {
    EntityState {
        alive: !(who == Who::Runner && tick >= 175),
        lag_compensated: !(who == Who::Dodger && (100..=140).contains(&tick)),
        teleported: who == Who::Dodger && tick == 90,
        ..EntityState::default()
    }
}

/// The claim a client makes: fired from its eye at what its screen showed at server time
/// `rendered` (as the pair of ticks it interpolated), towards `aim`, claiming `hit`.
fn claim(
    shooter: EntityId,
    weapon: WeaponId,
    seq: u32,
    rendered: f64,
    origin: Vec3,
    aim: Vec3,
    hit: Option<ClaimedHit>,
) -> ShotClaim {
    let ticks = rendered * RATE;
    let from = ticks.floor();
    ShotClaim {
        shooter,
        weapon,
        seq,
        render_time: RenderTime::Ticks {
            from: Tick(from as u32),
            to: Tick(from as u32 + 1),
            fraction: (ticks - from) as f32,
        },
        origin,
        direction: aim - origin,
        hit,
    }
}

/// What a match played live gives: the recording and every verdict as it was given.
pub(crate) struct Played {
    pub(crate) bytes: Vec<u8>,
    pub(crate) judged: Vec<(f64, ShotClaim, Verdict)>,
    /// The outcome label each claim was scripted to get, in order.
    pub(crate) expected: Vec<&'static str>,
    /// The entity nobody ever spawned that one claim names.
    pub(crate) ghost: EntityId,
}

/// Plays the scripted mini match: three shooters, three targets and a crate, a wall, 200
/// ticks at 64 Hz, and claims that end confirmed, missed, blocked and rejected for many
/// reasons, all recorded.
pub(crate) fn play_match() -> Played {
    let config = HistoryConfig {
        tick_rate: RATE,
        max_rewind: 0.5,
    };
    let rules = match_rules();
    let mut server = Server::new(config, &rules);
    // A spawn the server took back before the match: live ids then start at generation 1
    // in slot 0, while a replay's fresh history starts at generation 0, so the replay has
    // to map ids.
    let rig = soldier_rig();
    let ghost_slot = server.history.spawn(Arc::clone(&rig));
    server.history.despawn(ghost_slot).expect("active");

    server.wall(
        Shape::cuboid(Vec3::new(3.0, 1.5, 0.2)),
        Pose::from_translation(Vec3::new(9.0, 1.5, -6.0)),
    );
    let player = |team| Participant {
        team,
        aim_bone: 2,
        aim_forward: FORWARD,
    };
    let cast = [
        (Who::Alpha, 1),
        (Who::Bravo, 2),
        (Who::Charlie, 1),
        (Who::Runner, 2),
        (Who::Flanker, 2),
        (Who::Dodger, 2),
    ];
    let ids: Vec<(Who, EntityId)> = cast
        .iter()
        .map(|&(who, team)| (who, server.spawn(&rig, Some(player(team)))))
        .collect();
    let id = |who: Who| ids.iter().find(|(w, _)| *w == who).expect("cast").1;
    let crate_id = server.spawn(&crate_rig(), None);
    server.timing(
        id(Who::Alpha),
        ClientTiming {
            srtt: 0.08,
            rttvar: 0.004,
            interp_delay: 0.05,
        },
    );
    server.timing(
        id(Who::Bravo),
        ClientTiming {
            srtt: 0.12,
            rttvar: 0.006,
            interp_delay: 0.05,
        },
    );
    // What each shooter's client renders: the server's time less its measured rewind.
    let rewind = |who: Who| match who {
        Who::Alpha => 0.04 + 0.05,
        Who::Bravo => 0.06 + 0.05,
        _ => 0.1,
    };
    let ghost = EntityId::from_bits(999);
    let mut expected = Vec::new();
    let mut dodger_here = true;

    for tick in 0..TICKS {
        let t = time_of(tick);
        let mut entities = Vec::new();
        for &(who, eid) in &ids {
            if who == Who::Dodger && !dodger_here {
                continue;
            }
            entities.push((
                eid,
                state(who, tick),
                soldier_bones(root(who, t), view(who, tick)),
            ));
        }
        entities.push((
            crate_id,
            EntityState::default(),
            vec![BoneTransform::from_translation(Vec3::new(-10.0, 0.5, 10.0))],
        ));
        server.frame(tick, t, &entities);

        match tick {
            60 => server.register(id(Who::Charlie), player(2)),
            145 => {
                server.despawn(id(Who::Dodger));
                dodger_here = false;
            }
            180 => server.forget(id(Who::Charlie)),
            _ => {}
        }

        // Claims arriving during this tick, after its frame.
        let now = t + 0.003;
        let shots = scripted_shots(tick);
        for (shooter, label, make) in shots {
            let rendered = now - rewind(shooter);
            let origin = eye(shooter, rendered);
            let c = make(&Ctx {
                shooter: id(shooter),
                origin,
                rendered,
                runner: id(Who::Runner),
                flanker: id(Who::Flanker),
                dodger: id(Who::Dodger),
                ghost,
            });
            expected.push(label);
            server.shot(now, c);
        }
    }
    let (bytes, judged) = server.finish();
    Played {
        bytes,
        judged,
        expected,
        ghost,
    }
}

/// What a scripted shot is built from.
struct Ctx {
    shooter: EntityId,
    origin: Vec3,
    rendered: f64,
    runner: EntityId,
    flanker: EntityId,
    dodger: EntityId,
    ghost: EntityId,
}

/// A scripted shot: who fires, the outcome label it is meant to get, and the claim.
type Shot = (Who, &'static str, fn(&Ctx) -> ShotClaim);

/// A head shot at `who` as the client drew it, claiming the head and the near point.
fn head_shot(c: &Ctx, weapon: WeaponId, seq: u32, who: Who, target: EntityId) -> ShotClaim {
    let aim = head(who, c.rendered);
    let point = aim - (aim - c.origin).normalize() * 0.14;
    claim(
        c.shooter,
        weapon,
        seq,
        c.rendered,
        c.origin,
        aim,
        Some(ClaimedHit {
            target,
            hitbox: Some(HEAD),
            point: Some(point),
        }),
    )
}

/// The shots fired during `tick`, in arrival order.
fn scripted_shots(tick: u32) -> Vec<Shot> {
    match tick {
        30 => vec![
            (Who::Alpha, "confirmed", |c| {
                head_shot(c, RIFLE, 1, Who::Runner, c.runner)
            }),
            (Who::Alpha, "replayed", |c| {
                head_shot(c, RIFLE, 1, Who::Runner, c.runner)
            }),
        ],
        32 => vec![(Who::Alpha, "fire_rate", |c| {
            head_shot(c, RIFLE, 2, Who::Runner, c.runner)
        })],
        45 => vec![(Who::Alpha, "confirmed", |c| {
            let aim = chest(Who::Runner, c.rendered);
            claim(
                c.shooter,
                RIFLE,
                3,
                c.rendered,
                c.origin,
                aim,
                Some(ClaimedHit {
                    target: c.runner,
                    hitbox: Some(CHEST),
                    point: None,
                }),
            )
        })],
        52 => vec![(Who::Alpha, "miss", |c| over_head(c, 4))],
        60 => vec![(Who::Bravo, "blocked", |c| {
            // No hit claimed: a claim naming the flanker, Bravo's teammate, would be
            // judged friendly fire before the trace.
            let mut shot = head_shot(c, RIFLE, 1, Who::Flanker, c.flanker);
            shot.hit = None;
            shot
        })],
        70 => vec![(Who::Alpha, "backtrack", |c| {
            let old = c.rendered - 0.16;
            let mut shot = head_shot(c, RIFLE, 5, Who::Runner, c.runner);
            let ticks = old * RATE;
            shot.render_time = RenderTime::Ticks {
                from: Tick(ticks.floor() as u32),
                to: Tick(ticks.floor() as u32 + 1),
                fraction: (ticks - ticks.floor()) as f32,
            };
            shot
        })],
        78 => vec![(Who::Alpha, "tampered_claim", |c| {
            let mut shot = head_shot(c, RIFLE, 6, Who::Runner, c.runner);
            if let Some(hit) = &mut shot.hit {
                hit.point = hit.point.map(|p| p + Vec3::new(1.0, 0.0, 0.0));
            }
            shot.direction = shot.hit.and_then(|h| h.point).expect("point") - c.origin;
            shot
        })],
        85 => vec![(Who::Charlie, "no_timing", |c| {
            head_shot(c, RIFLE, 1, Who::Runner, c.runner)
        })],
        88 => vec![(Who::Alpha, "unknown_weapon", |c| {
            head_shot(c, WeaponId(9), 7, Who::Runner, c.runner)
        })],
        95 => vec![(Who::Alpha, "non_finite", |c| {
            let mut shot = head_shot(c, RIFLE, 8, Who::Runner, c.runner);
            shot.origin.y = f32::NAN;
            shot.direction.x = f32::INFINITY;
            shot
        })],
        100 => vec![(Who::Alpha, "tampered_claim", |c| {
            head_shot(c, RIFLE, 9, Who::Runner, c.ghost)
        })],
        118 => vec![(Who::Alpha, "confirmed", |c| {
            head_shot(c, SMG, 10, Who::Runner, c.runner)
        })],
        120 => vec![(Who::Bravo, "friendly_fire", |c| {
            head_shot(c, RIFLE, 2, Who::Flanker, c.flanker)
        })],
        130 => vec![(Who::Alpha, "target_not_compensated", |c| {
            head_shot(c, RIFLE, 11, Who::Dodger, c.dodger)
        })],
        160 => vec![(Who::Alpha, "confirmed", |c| {
            let mut shot = head_shot(c, RIFLE, 12, Who::Runner, c.runner);
            shot.render_time = RenderTime::Time(c.rendered);
            shot
        })],
        185 => vec![
            (Who::Alpha, "target_not_alive", |c| {
                head_shot(c, RIFLE, 14, Who::Runner, c.runner)
            }),
            (Who::Charlie, "unknown_shooter", |c| {
                head_shot(c, RIFLE, 2, Who::Runner, c.runner)
            }),
        ],
        190 => vec![(Who::Alpha, "time_in_future", |c| {
            let mut shot = head_shot(c, RIFLE, 15, Who::Runner, c.runner);
            shot.render_time = RenderTime::Ticks {
                from: Tick(195),
                to: Tick(196),
                fraction: 0.5,
            };
            shot
        })],
        193 => vec![(Who::Alpha, "angle_too_far", |c| {
            let to = head(Who::Runner, c.rendered) - c.origin;
            let aside = Quat::from_rotation_y(20_f32.to_radians());
            claim(
                c.shooter,
                RIFLE,
                16,
                c.rendered,
                c.origin,
                c.origin + aside * to,
                None,
            )
        })],
        // Seven ticks apart (109 ms): every shot that passes the fire-rate check takes
        // its slot, whatever its verdict, and the rifle fires every 100 ms.
        200 => vec![(Who::Alpha, "origin_too_far", |c| {
            let mut shot = head_shot(c, RIFLE, 17, Who::Runner, c.runner);
            shot.origin += Vec3::new(0.0, 0.0, 3.0);
            shot
        })],
        207 => vec![(Who::Alpha, "miss", |c| over_head(c, 317))],
        208 => vec![(Who::Alpha, "sequence_too_old", |c| over_head(c, 18))],
        _ => Vec::new(),
    }
}

/// 2.5 degrees over the runner's head: inside the rifle's 4-degree cone, 0.87 m high.
fn over_head(c: &Ctx, seq: u32) -> ShotClaim {
    let to = head(Who::Runner, c.rendered) - c.origin;
    let up = Quat::from_axis_angle(to.cross(Vec3::Y).normalize(), 2.5_f32.to_radians());
    claim(
        c.shooter,
        RIFLE,
        seq,
        c.rendered,
        c.origin,
        c.origin + up * to,
        None,
    )
}

/// The rules of the example in `docs/FORMAT.md`.
pub(crate) const EXAMPLE_RULES: &str = r#"
[weapons.rifle]
id = 1
max_range = 50.0
min_interval = 0.1
aim_tolerance_deg = 10.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.5
damage = { head = 4.0 }
"#;

/// The example recording of `docs/FORMAT.md`, played live: at 10 Hz a shooter and a
/// target walking east behind a post; a head shot confirmed, its replay, a shot into the
/// post, one too soon after it, and a miss.
pub(crate) fn example_recording() -> Vec<u8> {
    let config = HistoryConfig {
        tick_rate: 10.0,
        max_rewind: 1.0,
    };
    let rules = RuleSet::from_toml(EXAMPLE_RULES).expect("valid rules");
    let mut server = Server::new(config, &rules);
    server.wall(
        Shape::cuboid(Vec3::new(0.2, 1.5, 0.1)),
        Pose::from_translation(Vec3::new(0.6, 1.5, 5.0)),
    );
    // The shooter's one bone is its eye; the target's stands at its feet.
    let shooter_rig = Arc::new(
        Rig::rigid(vec![
            Hitbox::new(
                0,
                "body",
                Zone::Torso,
                0,
                Shape::cuboid(Vec3::new(0.25, 0.8, 0.2)),
            )
            .offset_by(Vec3::new(0.0, -0.8, 0.0)),
        ])
        .expect("valid rig"),
    );
    let target_rig = Arc::new(
        Rig::rigid(vec![
            Hitbox::new(
                0,
                "body",
                Zone::Torso,
                0,
                Shape::cuboid(Vec3::new(0.25, 0.6, 0.2)),
            )
            .offset_by(Vec3::new(0.0, 0.8, 0.0)),
            Hitbox::new(1, "head", Zone::Head, 0, Shape::sphere(0.15))
                .offset_by(Vec3::new(0.0, 1.6, 0.0)),
        ])
        .expect("valid rig"),
    );
    let looking_north = |team| Participant {
        team,
        aim_bone: 0,
        aim_forward: Vec3::Z,
    };
    let shooter = server.spawn(&shooter_rig, Some(looking_north(1)));
    let target = server.spawn(&target_rig, Some(looking_north(2)));
    server.timing(
        shooter,
        ClientTiming {
            srtt: 0.1,
            rttvar: 0.01,
            interp_delay: 0.1,
        },
    );
    let frame = |server: &mut Server, tick: u32| {
        let target_at = Vec3::new(0.5 * tick as f32 - 1.0, 0.0, 10.0);
        server.frame(
            tick,
            f64::from(tick) / 10.0,
            &[
                (
                    shooter,
                    EntityState::default(),
                    vec![BoneTransform::from_translation(Vec3::new(0.0, 1.6, 0.0))],
                ),
                (
                    target,
                    EntityState::default(),
                    vec![BoneTransform::from_translation(target_at)],
                ),
            ],
        );
    };
    let shot =
        |seq: u32, from: u32, fraction: f32, direction: Vec3, hit: Option<ClaimedHit>| ShotClaim {
            shooter,
            weapon: RIFLE,
            seq,
            render_time: RenderTime::Ticks {
                from: Tick(from),
                to: Tick(from + 1),
                fraction,
            },
            origin: Vec3::new(0.0, 1.6, 0.0),
            direction,
            hit,
        };
    let head_hit = Some(ClaimedHit {
        target,
        hitbox: Some(HEAD),
        point: Some(Vec3::new(0.5, 1.6, 9.85)),
    });
    for tick in 0..=4 {
        frame(&mut server, tick);
    }
    // Drawn at tick 3 (0.3 s), 0.15 s before arriving: the shooter's measured rewind.
    server.shot(0.45, shot(1, 3, 0.0, Vec3::new(0.5, 0.0, 10.0), head_hit));
    server.shot(0.45, shot(1, 3, 0.0, Vec3::new(0.5, 0.0, 10.0), head_hit));
    frame(&mut server, 5);
    server.shot(0.55, shot(2, 4, 0.0, Vec3::new(1.0, 0.0, 10.0), None));
    server.shot(0.56, shot(3, 4, 0.5, Vec3::new(1.25, 0.0, 10.0), None));
    frame(&mut server, 6);
    frame(&mut server, 7);
    server.shot(0.75, shot(4, 6, 0.0, Vec3::new(0.0, 0.2, 10.0), None));
    server.finish().0
}
