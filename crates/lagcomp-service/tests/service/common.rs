//! A deterministic world every service test plays in, and the synchronous answers the
//! service's are checked against.
//!
//! Humanoids from the benchmark scenes walk an arena; everything recorded at a tick is a
//! pure function of the tick (poses from `lagcomp_fixtures::Scene`'s motions, and a state
//! cycle that kills, respawns by teleport, switches lag compensation off, leaves entities
//! out of frames and moves them between layers), so a history in the state of any tick
//! can be rebuilt from nothing ([`World::history_at`]). Two walls on different layers
//! stand in the arena. Queries and claims come from seeded generators that mix good input
//! with bad: non-finite lines, zero directions, bad radii and boxes, targets outside the
//! window, ticks never recorded, unknown entities.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Obb, Pose, Quat, QueryError, Ray,
    RewindTarget, Shape, Tick, Vec3, WindowPolicy,
};
use lagcomp_fixtures::{Scene, SceneSpec};
use lagcomp_service::{Found, Line, Probe, RewoundRequest, SharedHistory};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RenderTime, RuleSet, ShotClaim, Validator, Verdict,
    WeaponId,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Server ticks per second.
pub(crate) const RATE: f64 = 64.0;
/// How far back the history reaches, seconds.
pub(crate) const WINDOW: f64 = 0.5;
/// The head bone of the benchmark humanoid: its origin is the shooter's eye, its
/// rotation (facing) the view, forward +Z.
pub(crate) const HEAD_BONE: u16 = 3;

/// The rifle the claims use.
pub(crate) const RIFLE: WeaponId = WeaponId(1);

/// Rules loose enough that many claims reach the trace (any direction is within the
/// view; timing within a second of the expected rewind), strict on sequence numbers and
/// fire rate.
const RULES: &str = r#"
[policy]
time_mismatch = "reject"
rewind_tolerance = 1.0
sequence_window = 16

[weapons.rifle]
id = 1
max_range = 200.0
min_interval = 0.005
aim_tolerance_deg = 180.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.5
friendly_fire = false
damage = { head = 4.0, torso = 1.0, limb = 0.75 }

[weapons.launcher]
id = 2
radius = 0.2
max_range = 100.0
min_interval = 0.004
aim_tolerance_deg = 180.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.5
"#;

/// The world: the scene whose motions pose everyone, and the entity handles.
#[derive(Debug, Clone)]
pub(crate) struct World {
    scene: Scene,
    pub(crate) ids: Vec<EntityId>,
}

impl World {
    /// `entities` humanoids of 16 bones at [`RATE`].
    pub(crate) fn new(entities: usize) -> Self {
        let scene = Scene::build(SceneSpec {
            name: "service",
            entities,
            bones: 16,
            tick_rate: RATE,
            seed: 0x5e41_1ce5,
        });
        let ids = scene.ids.clone();
        Self { scene, ids }
    }

    /// Side of the square arena, metres.
    pub(crate) fn arena(&self) -> f32 {
        self.scene.arena
    }

    /// Server time of `tick`.
    pub(crate) fn time_of(&self, tick: u32) -> f64 {
        f64::from(tick) / RATE
    }

    /// An empty history with every entity spawned and the walls built: the state before
    /// tick 1.
    pub(crate) fn empty_history(&self) -> History {
        let mut history = History::new(HistoryConfig {
            tick_rate: RATE,
            max_rewind: WINDOW,
        })
        .expect("valid config");
        for &id in &self.ids {
            assert_eq!(history.spawn(Arc::clone(&self.scene.rig)), id);
        }
        let half = self.arena() / 2.0;
        history
            .add_static(
                Shape::cuboid(Vec3::new(half * 0.6, 1.0, 0.2)),
                Pose::from_translation(Vec3::new(0.0, 1.0, half * 0.3)),
                1,
            )
            .expect("valid wall");
        history
            .add_static(
                Shape::cuboid(Vec3::new(0.2, 1.5, half * 0.5)),
                Pose::new(Vec3::new(-half * 0.4, 1.5, 0.0), Quat::from_rotation_y(0.3)),
                2,
            )
            .expect("valid wall");
        history
    }

    /// What entity `e` is at `tick`: `None` when it is left out of the frame.
    pub(crate) fn state(&self, e: usize, tick: u32) -> Option<EntityState> {
        let phase = (tick as usize + e * 37) % 400;
        if (300..303).contains(&phase) {
            return None;
        }
        Some(EntityState {
            alive: phase >= 12,
            lag_compensated: !(100..112).contains(&phase),
            teleported: phase == 12,
            invulnerable: false,
            evasive: false,
            layers: 1 << (e % 3),
            user: e as u16,
        })
    }

    /// Records frame `tick` (a pure function of it) into `history`.
    pub(crate) fn record(&self, history: &mut History, tick: u32, bones: &mut Vec<BoneTransform>) {
        self.scene.frame_bones(Tick(tick), bones);
        let mut frame = history
            .begin_frame(Tick(tick), self.time_of(tick))
            .expect("ticks increase");
        self.fill(&mut frame, tick, bones);
    }

    /// Records every entity of frame `tick` into `frame`, from `bones` (as
    /// `frame_bones` wrote them).
    pub(crate) fn fill(
        &self,
        frame: &mut lagcomp::FrameRecorder<'_>,
        tick: u32,
        bones: &[BoneTransform],
    ) {
        for (e, (&id, pose)) in self.ids.iter().zip(bones.chunks_exact(16)).enumerate() {
            if let Some(state) = self.state(e, tick) {
                frame.record(id, pose, state).expect("valid pose");
            }
        }
    }

    /// Every entity's bones at `tick`, entity-major.
    pub(crate) fn frame_bones(&self, tick: u32, out: &mut Vec<BoneTransform>) {
        self.scene.frame_bones(Tick(tick), out);
    }

    /// Records frame `tick` into a shared history.
    pub(crate) fn record_shared(
        &self,
        shared: &SharedHistory,
        tick: u32,
        bones: &mut Vec<BoneTransform>,
    ) {
        self.scene.frame_bones(Tick(tick), bones);
        shared
            .record(Tick(tick), self.time_of(tick), |frame| {
                self.fill(frame, tick, bones)
            })
            .expect("ticks increase");
    }

    /// A history in the state the recording thread left after recording ticks `1..=tick`:
    /// only the frames still in the ring matter (older ones have aged out), so it records
    /// a few more than the ring holds, ending at `tick`.
    pub(crate) fn history_at(&self, tick: u32) -> History {
        let mut history = self.empty_history();
        let keep = history.capacity() as u32 + 4;
        let mut bones = Vec::new();
        for t in tick.saturating_sub(keep).max(1)..=tick {
            self.record(&mut history, t, &mut bones);
        }
        history
    }

    /// The validator the service and the references judge with: every entity
    /// registered (two teams) and measured.
    pub(crate) fn validator(&self) -> Validator {
        let mut v = Validator::new(RuleSet::from_toml(RULES).expect("valid rules"));
        for (e, &id) in self.ids.iter().enumerate() {
            v.register(
                id,
                Participant {
                    team: (e % 2) as u16,
                    aim_bone: HEAD_BONE,
                    aim_forward: Vec3::Z,
                },
            );
            v.set_timing(id, timing()).expect("a valid timing");
        }
        v
    }

    /// Entity `e`'s head and chest at time `t`, as the motions have them (not
    /// interpolated between frames).
    pub(crate) fn head_and_chest(&self, e: usize, t: f64) -> (Vec3, Vec3) {
        let mut bones = vec![BoneTransform::IDENTITY; 16];
        self.scene.entity_bones(e, t, &mut bones);
        (
            bones[usize::from(HEAD_BONE)].translation,
            self.scene.skeleton.chest(&bones),
        )
    }
}

/// Every client's measured connection: 100 ms round trip, 100 ms interpolation delay.
pub(crate) fn timing() -> ClientTiming {
    ClientTiming {
        srtt: 0.1,
        rttvar: 0.005,
        interp_delay: 0.1,
    }
}

/// A value that breaks arithmetic.
fn broken(rng: &mut Pcg64Mcg) -> f32 {
    [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 2e6][rng.random_range(0..4)]
}

/// A rewind target around a history whose newest tick is `newest`: mostly inside the
/// window, as a time, a pair of ticks or a latency; sometimes outside it or malformed.
pub(crate) fn target(rng: &mut Pcg64Mcg, world: &World, newest: u32) -> RewindTarget {
    let now = world.time_of(newest);
    match rng.random_range(0..20) {
        0 => RewindTarget::Time(now - rng.random_range(0.6..2.0)),
        1 => RewindTarget::Time(now + rng.random_range(0.01..1.0)),
        2 => RewindTarget::Time(f64::from(broken(rng))),
        3 => RewindTarget::between(Tick(newest + rng.random_range(1..5)), Tick(newest + 6), 0.5),
        4 => RewindTarget::between(Tick(newest), Tick(newest.saturating_sub(2)), 0.5),
        5 => RewindTarget::between(Tick(newest), Tick(newest), rng.random_range(1.01..2.0)),
        6 => RewindTarget::latency(now, -0.1),
        7..=11 => {
            let from = newest.saturating_sub(rng.random_range(1..30));
            RewindTarget::between(
                Tick(from),
                Tick(from + rng.random_range(0..2)),
                rng.random_range(0.0..=1.0),
            )
        }
        12..=15 => RewindTarget::latency(now, rng.random_range(0.0..0.45)),
        _ => RewindTarget::Time(now - rng.random_range(0.0..0.45)),
    }
}

/// A line from somewhere in the arena towards an entity's chest (near where it was at
/// `t`), or a malformed one.
fn line(rng: &mut Pcg64Mcg, world: &World, t: f64) -> Line {
    let half = world.arena() / 2.0;
    let eye = Vec3::new(
        rng.random_range(-half..half),
        rng.random_range(0.5..2.0),
        rng.random_range(-half..half),
    );
    let e = rng.random_range(0..world.ids.len());
    let (_, chest) = world.head_and_chest(e, t);
    let aim = chest
        + Vec3::new(
            rng.random_range(-0.4..0.4),
            rng.random_range(-0.6..0.4),
            rng.random_range(-0.4..0.4),
        );
    let reach = rng.random_range(20.0..200.0);
    match rng.random_range(0..25) {
        0 => Line::new(Vec3::new(broken(rng), eye.y, eye.z), aim - eye, reach),
        1 => Line::new(eye, Vec3::new(broken(rng), 0.0, 1.0), reach),
        2 => Line::new(eye, Vec3::ZERO, reach),
        3 => Line::new(eye, aim - eye, -1.0),
        4 => Line::new(eye, aim - eye, f32::NAN),
        // A checked ray, passed as it is.
        5..=9 => Line::from(Ray::new(eye, aim - eye, reach).expect("a valid ray")),
        _ => Line::new(eye, aim - eye, reach),
    }
}

/// A rewound query around a history whose newest tick is `newest`: every probe kind,
/// layers and ignore lists (including unknown entities), good input and bad.
pub(crate) fn query(rng: &mut Pcg64Mcg, world: &World, newest: u32) -> RewoundRequest {
    let target = target(rng, world, newest);
    let t = world.time_of(newest) - 0.2;
    let radius = match rng.random_range(0..12) {
        0 => -0.5,
        1 => f32::NAN,
        2 => 2e4,
        _ => rng.random_range(0.0..1.5),
    };
    let probe = match rng.random_range(0..10) {
        0..=3 => Probe::Ray(line(rng, world, t)),
        4 | 5 => Probe::RayAll(line(rng, world, t)),
        6 | 7 => Probe::Sweep {
            line: line(rng, world, t),
            radius: radius.min(0.5),
        },
        8 => {
            let e = rng.random_range(0..world.ids.len());
            let (_, chest) = world.head_and_chest(e, t);
            Probe::Sphere {
                center: chest + Vec3::X * rng.random_range(-1.0..1.0),
                radius: radius * 2.0,
            }
        }
        _ => {
            let e = rng.random_range(0..world.ids.len());
            let (_, chest) = world.head_and_chest(e, t);
            let rotation = if rng.random_bool(0.1) {
                Quat::from_xyzw(0.0, 0.0, 0.0, 2.0)
            } else {
                Quat::from_rotation_y(rng.random_range(0.0..6.0))
            };
            Probe::Box(Obb::new(
                chest,
                rotation,
                Vec3::new(radius, 0.8, rng.random_range(0.1..1.0)),
            ))
        }
    };
    let mut query = RewoundRequest::new(target, probe);
    if rng.random_bool(0.3) {
        query = query.layers(rng.random_range(0..8));
    }
    if rng.random_bool(0.3) {
        query = query.window_policy(WindowPolicy::Clamp);
    }
    if rng.random_bool(0.4) {
        let known = world.ids[rng.random_range(0..world.ids.len())];
        query = query.ignore([known, EntityId::from_bits(rng.random())]);
    }
    query
}

/// What the core's own builder answers to `query` on `history`: the reference, written
/// against `lagcomp`'s API directly rather than through [`RewoundRequest::run`].
pub(crate) fn synchronous(history: &History, query: &RewoundRequest) -> Result<Found, QueryError> {
    let mut q = history
        .query(query.target)
        .ignore(&query.ignore)
        .layers(query.layers)
        .window_policy(query.policy);
    match query.probe {
        Probe::Ray(line) => Ok(Found::Trace(q.ray(&line.ray()?)?)),
        Probe::RayAll(line) => {
            let mut hits = Vec::new();
            let trace = q.ray_all(&line.ray()?, &mut hits)?;
            Ok(Found::Traces { trace, hits })
        }
        Probe::Sweep { line, radius } => Ok(Found::Trace(q.sweep(&line.ray()?, radius)?)),
        Probe::Sphere { center, radius } => {
            let mut overlaps = Vec::new();
            let rewind = q.overlap_sphere(center, radius, &mut overlaps)?;
            Ok(Found::Overlaps { rewind, overlaps })
        }
        Probe::Box(obb) => {
            let mut overlaps = Vec::new();
            let rewind = q.overlap_box(&obb, &mut overlaps)?;
            Ok(Found::Overlaps { rewind, overlaps })
        }
    }
}

/// A shooter's claims, numbered in order.
#[derive(Debug, Clone)]
pub(crate) struct Gunner {
    /// Index of the shooting entity.
    pub(crate) entity: usize,
    /// The next sequence number.
    pub(crate) seq: u32,
}

/// The next claim of `gunner` against a history whose newest tick is `newest`, arriving
/// now: mostly shots from its eye at someone's chest as drawn a moment ago, some replayed
/// or fired too soon, some malformed (non-finite numbers, zero direction, unknown
/// weapon, shooter or target, render times outside the window or never recorded).
pub(crate) fn claim(
    rng: &mut Pcg64Mcg,
    world: &World,
    gunner: &mut Gunner,
    newest: u32,
) -> (ShotClaim, f64) {
    let received_at = world.time_of(newest) + rng.random_range(0.0..0.01);
    let back = rng.random_range(4..20);
    let from = newest.saturating_sub(back).max(1);
    let fraction: f32 = rng.random_range(0.0..1.0);
    let seen = world.time_of(from) + f64::from(fraction) / RATE;
    let (eye, _) = world.head_and_chest(gunner.entity, seen);
    let mut aimed = rng.random_range(0..world.ids.len());
    if aimed == gunner.entity {
        aimed = (aimed + 1) % world.ids.len();
    }
    let (_, chest) = world.head_and_chest(aimed, seen);
    let aim = chest
        + Vec3::new(
            rng.random_range(-0.2..0.2),
            rng.random_range(-0.3..0.3),
            0.0,
        );
    gunner.seq += 1;
    let mut claim = ShotClaim {
        shooter: world.ids[gunner.entity],
        weapon: if rng.random_bool(0.8) {
            RIFLE
        } else {
            WeaponId(2)
        },
        seq: if rng.random_bool(0.05) {
            gunner.seq.saturating_sub(rng.random_range(1..20))
        } else {
            gunner.seq
        },
        render_time: if rng.random_bool(0.7) {
            RenderTime::Ticks {
                from: Tick(from),
                to: Tick(from + 1),
                fraction,
            }
        } else {
            RenderTime::Time(seen)
        },
        origin: eye,
        direction: aim - eye,
        hit: rng.random_bool(0.7).then_some(ClaimedHit {
            target: world.ids[aimed],
            hitbox: rng.random_bool(0.5).then_some(lagcomp::HitboxId(2)),
            point: Some(chest),
        }),
    };
    let mut received_at = received_at;
    match rng.random_range(0..30) {
        0 => claim.direction = Vec3::new(broken(rng), 1.0, 0.0),
        1 => claim.origin.y = broken(rng),
        2 => claim.direction = Vec3::ZERO,
        3 => claim.weapon = WeaponId(9),
        4 => claim.shooter = EntityId::from_bits(rng.random::<u64>() | 1 << 40),
        5 => {
            claim.hit = Some(ClaimedHit {
                target: EntityId::from_bits(rng.random::<u64>() | 1 << 40),
                hitbox: None,
                point: Some(chest),
            });
        }
        6 => claim.render_time = RenderTime::Time(seen - 2.0),
        7 => claim.render_time = RenderTime::Time(seen + 1.0),
        8 => {
            claim.render_time = RenderTime::Ticks {
                from: Tick(newest + 3),
                to: Tick(newest + 4),
                fraction,
            }
        }
        9 => received_at = f64::NAN,
        10 => claim.origin += Vec3::X * 2.0,
        _ => {}
    }
    (claim, received_at)
}

/// Debug text, so that NaN fields compare equal to themselves.
pub(crate) fn text<T: std::fmt::Debug>(value: &T) -> String {
    format!("{value:?}")
}

/// Asserts a verdict equals the synchronous one (NaN-safe).
#[track_caller]
pub(crate) fn assert_same_verdict(ours: &Verdict, expected: &Verdict) {
    assert_eq!(text(ours), text(expected));
}

/// A minimal executor: polls `future` on this thread, parking between polls until the
/// waker it handed out is woken. Enough to show the service's futures need no runtime.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            // A spurious unpark only costs another poll.
            Poll::Pending => std::thread::park(),
        }
    }
}

/// A seeded generator.
pub(crate) fn rng(seed: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed)
}
