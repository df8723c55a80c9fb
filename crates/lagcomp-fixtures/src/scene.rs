//! Seeded benchmark scenes: entities walking an arena, a full recorded history, and shots.

use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, PlacedShape, Ray, Rig, Tick, Vec3,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::rig::{GAIT_PER_METRE, Skeleton};

/// What a scene holds: how many entities, how many bones each, how often it ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SceneSpec {
    /// Benchmark group name (also the criterion directory name).
    pub name: &'static str,
    /// Number of entities.
    pub entities: usize,
    /// Bones (and hitboxes) per entity: 16 or 20.
    pub bones: u16,
    /// Server ticks per second.
    pub tick_rate: f64,
    /// Seed of everything random in the scene.
    pub seed: u64,
}

/// The three benchmark scenes: a competitive shooter, a large match, a massive one.
pub const SCENES: [SceneSpec; 3] = [
    SceneSpec {
        name: "64x16_128hz",
        entities: 64,
        bones: 16,
        tick_rate: 128.0,
        seed: 0x5eed_0064,
    },
    SceneSpec {
        name: "200x20_60hz",
        entities: 200,
        bones: 20,
        tick_rate: 60.0,
        seed: 0x5eed_0200,
    },
    SceneSpec {
        name: "5000x20_30hz",
        entities: 5000,
        bones: 20,
        tick_rate: 30.0,
        seed: 0x5eed_5000,
    },
];

/// How far back the history reaches, in seconds.
pub const MAX_REWIND: f64 = 0.5;

/// Square metres of arena per entity (about one player per 10 m x 10 m).
pub const AREA_PER_ENTITY: f32 = 100.0;

/// How far every shot reaches, in metres.
pub const SHOT_RANGE: f32 = 200.0;

/// Shots generated per scene; benchmarks cycle through them.
pub const SHOTS: usize = 512;

/// Tick of the first recorded frame (so times are not near zero).
const FIRST_TICK: u32 = 10_000;

/// Ticks recorded beyond the ring's capacity, so the ring has wrapped.
const EXTRA_TICKS: usize = 16;

/// Shooters stand this far from their target, in metres.
const ENGAGEMENT: std::ops::RangeInclusive<f32> = 3.0..=150.0;

/// Eye height of a shooter above the ground.
const EYE_HEIGHT: f32 = 1.6;

/// Aim noise: standard deviation, per axis, of the aim point around the target's chest,
/// in metres: a fixed wobble plus a part that grows with distance (angular error).
const AIM_SIGMA_BASE: f32 = 0.12;
const AIM_SIGMA_PER_METRE: f32 = 0.004;

/// How one entity moves: a circular arc at constant speed, facing where it walks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Motion {
    /// Where it stands at time 0.
    pub start: Vec3,
    /// Facing at time 0, radians about +Y (0 faces +Z).
    pub heading: f32,
    /// Walking speed, m/s.
    pub speed: f32,
    /// Turn rate, rad/s (never zero).
    pub turn: f32,
    /// Walk-cycle phase at time 0.
    pub gait_phase: f32,
}

impl Motion {
    /// Ground position and facing at time `t`.
    #[must_use]
    pub fn at(&self, t: f64) -> (Vec3, f32) {
        let t = t as f32;
        let heading = self.heading + self.turn * t;
        let r = self.speed / self.turn;
        let offset = Vec3::new(
            r * (self.heading.cos() - heading.cos()),
            0.0,
            r * (heading.sin() - self.heading.sin()),
        );
        (self.start + offset, heading)
    }
}

/// One shot: a ray and the server time the shooter saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shot {
    /// The ray, from the shooter's eye towards the (noisy) aim point.
    pub ray: Ray,
    /// The rewind time: a recorded frame's time when `exact`, else between two frames.
    pub time: f64,
    /// Whether `time` is exactly a recorded frame's time.
    pub exact: bool,
    /// The entity aimed at (index into [`Scene::ids`]).
    pub target: usize,
}

/// A seeded scene with its full history recorded.
#[derive(Debug, Clone)]
pub struct Scene {
    /// What it was built from.
    pub spec: SceneSpec,
    /// The skeleton every entity shares.
    pub skeleton: Skeleton,
    /// Its `lagcomp` rig.
    pub rig: Arc<Rig>,
    /// The recorded history (more ticks than its capacity).
    pub history: History,
    /// Entity handles, in entity order.
    pub ids: Vec<EntityId>,
    /// The handles with the state every tick records them with (the default), the list
    /// [`record_frame`] takes.
    pub entities: Vec<(EntityId, EntityState)>,
    /// How each entity moves.
    pub motions: Vec<Motion>,
    /// Side of the square arena, metres (centred on the origin).
    pub arena: f32,
    /// Every recorded tick, oldest first.
    pub ticks: Vec<Tick>,
    /// Shots at random times inside the window.
    pub shots: Vec<Shot>,
}

impl Scene {
    /// Builds the scene: spawns and records `capacity + 16` ticks, then generates
    /// [`SHOTS`] shots. Deterministic for a given spec.
    ///
    /// # Panics
    /// If `lagcomp` refuses the configuration or a record (it should not).
    #[must_use]
    pub fn build(spec: SceneSpec) -> Self {
        let mut rng = Pcg64Mcg::seed_from_u64(spec.seed);
        let skeleton = Skeleton::humanoid(spec.bones);
        let rig = Arc::new(skeleton.rig());
        let arena = (spec.entities as f32 * AREA_PER_ENTITY).sqrt();
        let half = arena * 0.5;
        let motions: Vec<Motion> = (0..spec.entities)
            .map(|_| {
                let turn_mag = rng.random_range(0.15_f32..0.8);
                Motion {
                    start: Vec3::new(
                        rng.random_range(-half..half),
                        0.0,
                        rng.random_range(-half..half),
                    ),
                    heading: rng.random_range(0.0..std::f32::consts::TAU),
                    speed: rng.random_range(2.0_f32..6.0),
                    turn: if rng.random_bool(0.5) {
                        turn_mag
                    } else {
                        -turn_mag
                    },
                    gait_phase: rng.random_range(0.0..std::f32::consts::TAU),
                }
            })
            .collect();
        let mut history = History::new(HistoryConfig {
            tick_rate: spec.tick_rate,
            max_rewind: MAX_REWIND,
        })
        .expect("valid history config");
        let ids: Vec<EntityId> = (0..spec.entities)
            .map(|_| history.spawn(Arc::clone(&rig)))
            .collect();
        let entities = ids.iter().map(|&id| (id, EntityState::default())).collect();
        let mut scene = Self {
            spec,
            skeleton,
            rig,
            history,
            ids,
            entities,
            motions,
            arena,
            ticks: Vec::new(),
            shots: Vec::new(),
        };
        let frames = scene.history.capacity() + EXTRA_TICKS;
        let mut bones = Vec::new();
        for k in 0..frames {
            let tick = Tick(FIRST_TICK + k as u32);
            scene.frame_bones(tick, &mut bones);
            scene.record(tick, &bones);
            scene.ticks.push(tick);
        }
        scene.shots = scene.make_shots(&mut rng);
        scene
    }

    /// Server time of a tick.
    #[must_use]
    pub fn time_of(&self, tick: Tick) -> f64 {
        f64::from(tick.0) / self.spec.tick_rate
    }

    /// The newest recorded tick.
    ///
    /// # Panics
    /// Never after [`Scene::build`].
    #[must_use]
    pub fn newest_tick(&self) -> Tick {
        *self.ticks.last().expect("built scenes have frames")
    }

    /// Bones per entity.
    #[must_use]
    pub fn bones(&self) -> usize {
        usize::from(self.spec.bones)
    }

    /// How many of the scene's shots hit something at their rewound time (a shot whose
    /// query fails counts as a miss).
    #[must_use]
    pub fn shots_that_hit(&self) -> usize {
        self.shots
            .iter()
            .filter(|s| {
                self.history
                    .query(lagcomp::RewindTarget::Time(s.time))
                    .ray(&s.ray)
                    .is_ok_and(|t| t.hit.is_some())
            })
            .count()
    }

    /// Hitboxes in the whole scene.
    #[must_use]
    pub fn hitboxes(&self) -> usize {
        self.spec.entities * self.rig.hitboxes().len()
    }

    /// Writes one entity's bone world transforms at time `t`.
    pub fn entity_bones(&self, entity: usize, t: f64, out: &mut [BoneTransform]) {
        let m = &self.motions[entity];
        let (root, yaw) = m.at(t);
        let gait = m.gait_phase + GAIT_PER_METRE * m.speed * t as f32;
        self.skeleton.pose(root, yaw, gait, out);
    }

    /// Every entity's bone world transforms at `tick`, entity-major, into `out` (resized
    /// to `entities * bones`). This is the input a server hands to `record`.
    pub fn frame_bones(&self, tick: Tick, out: &mut Vec<BoneTransform>) {
        let b = self.bones();
        out.resize(self.spec.entities * b, BoneTransform::IDENTITY);
        let t = self.time_of(tick);
        for (e, chunk) in out.chunks_exact_mut(b).enumerate() {
            self.entity_bones(e, t, chunk);
        }
    }

    /// Every hitbox placed in the world from a frame's bone transforms (entity-major, in
    /// rig order): what parry and rapier are given.
    #[must_use]
    pub fn placed_hitboxes(&self, bones: &[BoneTransform]) -> Vec<PlacedShape> {
        let b = self.bones();
        bones
            .chunks_exact(b)
            .flat_map(|entity| {
                self.rig
                    .hitboxes()
                    .iter()
                    .map(move |hb| hb.placed(&entity[usize::from(hb.bone)]))
            })
            .collect()
    }

    /// Records one frame of every entity into the scene's history.
    ///
    /// # Panics
    /// If `lagcomp` refuses the frame.
    pub fn record(&mut self, tick: Tick, bones: &[BoneTransform]) {
        let time = self.time_of(tick);
        record_frame(&mut self.history, &self.entities, tick, time, bones);
    }

    /// `history.history_bytes() / (hitboxes * history.capacity())`.
    #[must_use]
    pub fn bytes_per_hitbox_frame(&self) -> f64 {
        self.history.history_bytes() as f64 / (self.hitboxes() * self.history.capacity()) as f64
    }

    fn make_shots(&self, rng: &mut Pcg64Mcg) -> Vec<Shot> {
        let (lo, hi) = self.history.window().expect("recorded");
        let in_window: Vec<Tick> = self
            .ticks
            .iter()
            .copied()
            .filter(|&t| {
                self.history
                    .time_of(t)
                    .is_some_and(|time| (lo..=hi).contains(&time))
            })
            .collect();
        let half = self.arena * 0.5;
        let mut bones = vec![BoneTransform::IDENTITY; self.bones()];
        (0..SHOTS)
            .map(|_| {
                let target = rng.random_range(0..self.spec.entities);
                let exact = rng.random_bool(0.5);
                let time = if exact {
                    let tick = in_window[rng.random_range(0..in_window.len())];
                    self.history.time_of(tick).expect("recorded tick")
                } else {
                    rng.random_range(lo..hi)
                };
                self.entity_bones(target, time, &mut bones);
                let chest = self.skeleton.chest(&bones);
                let eye = loop {
                    let eye = Vec3::new(
                        rng.random_range(-half..half),
                        EYE_HEIGHT,
                        rng.random_range(-half..half),
                    );
                    if ENGAGEMENT.contains(&eye.distance(chest)) {
                        break eye;
                    }
                };
                let sigma = AIM_SIGMA_BASE + AIM_SIGMA_PER_METRE * eye.distance(chest);
                let aim = chest + gaussian3(rng) * sigma;
                let ray = Ray::new(eye, aim - eye, SHOT_RANGE).expect("valid ray");
                Shot {
                    ray,
                    time,
                    exact,
                    target,
                }
            })
            .collect()
    }
}

/// Records one frame: `begin_frame`, one `record_all` with every entity and their bones
/// (`bones` holds each entity's transforms in turn), `finish`. Exactly the work a server
/// does per tick; the `record` benchmark times it.
///
/// # Panics
/// If `lagcomp` refuses the frame.
pub fn record_frame(
    history: &mut History,
    entities: &[(EntityId, EntityState)],
    tick: Tick,
    time: f64,
    bones: &[BoneTransform],
) {
    let mut frame = history.begin_frame(tick, time).expect("ticks increase");
    frame.record_all(entities, bones).expect("valid records");
    frame.finish();
}

/// [`record_frame`] with one `record` per entity (`bones_per_entity` transforms each)
/// instead of `record_all`: the same result, to compare the two ways.
///
/// # Panics
/// If `lagcomp` refuses the frame.
pub fn record_frame_each(
    history: &mut History,
    entities: &[(EntityId, EntityState)],
    bones_per_entity: usize,
    tick: Tick,
    time: f64,
    bones: &[BoneTransform],
) {
    let mut frame = history.begin_frame(tick, time).expect("ticks increase");
    for (&(id, state), own) in entities.iter().zip(bones.chunks_exact(bones_per_entity)) {
        frame.record(id, own, state).expect("valid record");
    }
    frame.finish();
}

/// Three independent standard normal samples (Box-Muller).
fn gaussian3(rng: &mut Pcg64Mcg) -> Vec3 {
    let mut normal = || {
        let u1: f32 = rng.random_range(f32::EPSILON..1.0);
        let u2: f32 = rng.random_range(0.0..1.0);
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    };
    Vec3::new(normal(), normal(), normal())
}
