//! Server-side projectiles: one tick of `ProjectileSet::advance` with 1,000 projectiles in
//! flight over the 200 x 20 scene (`lagcomp_fixtures::scene::SCENES[1]`, 60 Hz). The
//! issue's floor: under 1 ms.
//!
//! - `projectiles_advance_1000`: every projectile has exactly one step due (its fire
//!   moment lies between one and two ticks before the newest frame), so the tick sweeps
//!   each one's sphere along its 1/60 s step against the rewound entities: 1,000 sphere
//!   sweeps, the landings written to a reused buffer. Half are 300 m/s bullets with drop
//!   and drag (5 m a step, 1 cm radius), half 30 m/s rockets (0.5 m a step, 15 cm).
//!
//! The projectiles start mid-flight along the scene's own shots (from a shooter's eye
//! towards a target's chest), so about as many are near entities as in a fight. The set
//! is cloned before each timed tick (outside the timing), so every tick does the same
//! work. How many landed per tick is printed to stderr.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion};
use glam::Vec3;
use lagcomp::RewindTarget;
use lagcomp::projectile::{Flight, Landed, ProjectileSet, ProjectileShot, Struck};
use lagcomp_fixtures::{SCENES, Scene};
use rand::{Rng, SeedableRng};

/// Projectiles in flight.
const LIVE: usize = 1_000;

fn projectile_benches(c: &mut Criterion) {
    let spec = SCENES[1];
    let scene = Scene::build(spec);
    let history = &scene.history;
    let (_, newest) = history.window().expect("the scene is recorded");
    let step = (1.0 / spec.tick_rate) as f32;
    let gravity = Vec3::new(0.0, -9.81, 0.0);
    let flights = [
        Flight::new(300.0, gravity, 0.001, 0.01, step, 1.0).expect("a bullet"),
        Flight::new(30.0, Vec3::ZERO, 0.0, 0.15, step, 3.0).expect("a rocket"),
    ];
    let mut rng = rand_pcg::Pcg64::seed_from_u64(spec.seed ^ 0x0025);
    let mut set = ProjectileSet::with_capacity(LIVE);
    for k in 0..LIVE {
        let shot = &scene.shots[k % scene.shots.len()];
        let ray = shot.ray;
        // Somewhere along the first half of the shot, fired between one and two ticks
        // before the newest frame: one step is due.
        let along = rng.random_range(0.0..0.5) * ray.max_distance().min(150.0);
        let fired = newest - f64::from(step) * rng.random_range(1.0..1.99);
        set.fire(
            history,
            &ProjectileShot {
                fired_at: RewindTarget::at(fired),
                origin: ray.at(along),
                direction: ray.dir(),
                flight: flights[k % 2],
                shooter: None,
                layers: u32::MAX,
            },
        )
        .expect("a valid shot");
    }
    let mut landed: Vec<Landed> = Vec::with_capacity(LIVE);
    let mut once = set.clone();
    once.advance(history, None, &mut landed).expect("recorded");
    let entities = landed
        .iter()
        .filter(|l| matches!(l.impact.struck, Struck::Entity(_)))
        .count();
    eprintln!(
        "{}: {LIVE} projectiles, one step each: {} landed ({entities} on entities), {} fly on",
        spec.name,
        landed.len(),
        once.len(),
    );
    assert_eq!(
        once.iter().filter(|(_, state)| state.step == 1).count(),
        once.len(),
        "every projectile flew exactly one step"
    );

    let mut group = c.benchmark_group(spec.name);
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    group.bench_function("projectiles_advance_1000", |b| {
        b.iter_batched_ref(
            || (set.clone(), Vec::<Landed>::with_capacity(LIVE)),
            |(tick, landed)| {
                tick.advance(black_box(history), None, landed)
                    .expect("recorded");
                black_box(&landed);
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    projectile_benches(&mut c);
    c.final_summary();
}
