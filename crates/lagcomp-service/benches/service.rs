//! Throughput of the query service and the batch API against the synchronous loop, and
//! what sharing the history costs the recorder, on the benchmark scene `200x20_60hz`
//! (`lagcomp_fixtures::SCENES[1]`: 200 humanoids of 20 bones, 60 Hz, 35 frames kept).
//!
//! - `queries/*`: the scene's 512 rewound rays (`Time` targets inside the window) per
//!   iteration: one by one on this thread (`sync_loop`), through a [`QueryService`] with
//!   one and two workers (submit all 512, then wait for each), and `batch::rays` on
//!   rayon's pool; `service_1_worker_overhead` submits 512 queries the core refuses at
//!   once (zero direction): what the service adds per job.
//! - `claims/*`: 512 shot claims by 64 shooters (8 each, in order) per iteration, judged
//!   from a fresh copy of the validator: `Validator::validate` one by one
//!   (`validate_loop`), `batch::validate_batch`, and through the service with two workers.
//! - `history/*`: recording one tick into the `History` directly, through the
//!   `SharedHistory` lock, and through it while another thread queries as fast as it
//!   can; and cloning the whole history (what publishing a snapshot per tick would cost).
//!
//! Throughput is in elements (queries or claims) per second. Every input is built before
//! the timed loops.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use lagcomp::{BoneTransform, Ray, RewindTarget, Tick, Vec3};
use lagcomp_fixtures::scene::record_frame;
use lagcomp_fixtures::{SCENES, Scene};
use lagcomp_service::{
    Line, Probe, QueryService, RewoundRequest, ServiceConfig, SharedHistory, batch,
};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RenderTime, RuleSet, ShotClaim, Validator, WeaponId,
};

/// The head bone: the shooters' eye.
const EYE: u16 = 3;

const RULES: &str = r#"
[policy]
rewind_tolerance = 1.0

[weapons.rifle]
id = 1
max_range = 200.0
min_interval = 0.001
aim_tolerance_deg = 180.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.5
"#;

fn service(shared: &Arc<SharedHistory>, validator: Validator, workers: usize) -> QueryService {
    QueryService::new(
        Arc::clone(shared),
        validator,
        ServiceConfig {
            workers,
            queue_capacity: 1024,
        },
    )
    .expect("the service starts")
}

/// Every entity registered (two teams) and measured.
fn validator(scene: &Scene) -> Validator {
    let mut v = Validator::new(RuleSet::from_toml(RULES).expect("valid rules"));
    for (e, &id) in scene.ids.iter().enumerate() {
        v.register(
            id,
            Participant {
                team: (e % 2) as u16,
                aim_bone: EYE,
                aim_forward: Vec3::Z,
            },
        );
        v.set_timing(
            id,
            ClientTiming {
                srtt: 0.1,
                rttvar: 0.005,
                interp_delay: 0.1,
            },
        )
        .expect("a valid timing");
    }
    v
}

/// One claim per scene shot: shooter `i % 64` fires from its eye at the shot's target's
/// chest as it was at the shot's time, arriving just after the newest frame.
fn claims(scene: &Scene) -> Vec<(ShotClaim, f64)> {
    let newest = scene.time_of(scene.newest_tick());
    let mut bones = vec![BoneTransform::IDENTITY; scene.bones()];
    let mut seqs = vec![0_u32; 64];
    scene
        .shots
        .iter()
        .enumerate()
        .map(|(i, shot)| {
            let shooter = i % 64;
            let target = if shot.target == shooter {
                (shooter + 1) % scene.ids.len()
            } else {
                shot.target
            };
            scene.entity_bones(shooter, shot.time, &mut bones);
            let eye = bones[usize::from(EYE)].translation;
            scene.entity_bones(target, shot.time, &mut bones);
            let chest = scene.skeleton.chest(&bones);
            seqs[shooter] += 1;
            let claim = ShotClaim {
                shooter: scene.ids[shooter],
                weapon: WeaponId(1),
                seq: seqs[shooter],
                render_time: RenderTime::Time(shot.time),
                origin: eye,
                direction: chest - eye,
                hit: Some(ClaimedHit {
                    target: scene.ids[target],
                    hitbox: None,
                    point: Some(chest),
                }),
            };
            (claim, newest + 0.001)
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let scene = Scene::build(SCENES[1]);
    let history = &scene.history;
    let shots: Vec<(RewindTarget, Ray)> = scene
        .shots
        .iter()
        .map(|s| (RewindTarget::Time(s.time), s.ray))
        .collect();
    let queries: Vec<RewoundRequest> = shots
        .iter()
        .map(|&(target, ray)| RewoundRequest::new(target, Probe::Ray(Line::from(ray))))
        .collect();
    let shared = Arc::new(SharedHistory::new(history.clone()));
    let claims = claims(&scene);
    let fresh = validator(&scene);
    {
        let mut v = fresh.clone();
        let mut labels = std::collections::BTreeMap::new();
        for (claim, at) in &claims {
            *labels
                .entry(v.validate(history, claim, *at).outcome.label())
                .or_insert(0) += 1;
        }
        eprintln!(
            "{}: {} queries, {} claims per iteration; verdicts {labels:?}",
            SCENES[1].name,
            queries.len(),
            claims.len()
        );
    }

    let mut group = c.benchmark_group("queries");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .throughput(Throughput::Elements(queries.len() as u64));
    group.bench_function("sync_loop", |b| {
        b.iter(|| {
            for (target, ray) in &shots {
                black_box(history.query(*target).ray(ray)).ok();
            }
        });
    });
    for workers in [1, 2] {
        let service = service(&shared, fresh.clone(), workers);
        group.bench_function(format!("service_{workers}_workers"), |b| {
            b.iter(|| {
                let pending: Vec<_> = queries
                    .iter()
                    .map(|q| service.submit(q.clone()).expect("room"))
                    .collect();
                for p in pending {
                    black_box(p.wait().expect("answered"));
                }
            });
        });
    }
    // What the service adds per job: queries refused at once (a zero direction), so the
    // time is the submission, the hand-over and the answer.
    let refused: Vec<RewoundRequest> = shots
        .iter()
        .map(|&(target, ray)| {
            RewoundRequest::new(target, Probe::Ray(Line::new(ray.origin(), Vec3::ZERO, 1.0)))
        })
        .collect();
    let one = service(&shared, fresh.clone(), 1);
    group.bench_function("service_1_worker_overhead", |b| {
        b.iter(|| {
            let pending: Vec<_> = refused
                .iter()
                .map(|q| one.submit(q.clone()).expect("room"))
                .collect();
            for p in pending {
                black_box(p.wait().expect("answered"));
            }
        });
    });
    drop(one);
    group.bench_function("batch_rays", |b| {
        b.iter(|| black_box(batch::rays(history, black_box(&shots))));
    });
    group.finish();

    let mut group = c.benchmark_group("claims");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .throughput(Throughput::Elements(claims.len() as u64));
    group.bench_function("validate_loop", |b| {
        b.iter_batched(
            || fresh.clone(),
            |mut v| {
                for (claim, at) in &claims {
                    black_box(v.validate(history, claim, *at));
                }
                v
            },
            BatchSize::SmallInput,
        );
    });
    group.bench_function("validate_batch", |b| {
        b.iter_batched(
            || fresh.clone(),
            |mut v| {
                black_box(batch::validate_batch(history, &mut v, &claims));
                v
            },
            BatchSize::SmallInput,
        );
    });
    let two = service(&shared, fresh.clone(), 2);
    group.bench_function("service_2_workers", |b| {
        b.iter_batched(
            || two.with_validator(|v| *v = fresh.clone()),
            |()| {
                let pending: Vec<_> = claims
                    .iter()
                    .map(|&(claim, at)| two.submit_claim(claim, at).expect("room"))
                    .collect();
                for p in pending {
                    black_box(p.wait().expect("answered"));
                }
            },
            BatchSize::PerIteration,
        );
    });
    drop(two);
    group.finish();

    let mut group = c.benchmark_group("history");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    let mut input = Vec::new();
    scene.frame_bones(Tick(scene.newest_tick().0 + 1), &mut input);
    let mut own = history.clone();
    let mut tick = scene.newest_tick();
    group.bench_function("record", |b| {
        b.iter(|| {
            tick.0 += 1;
            record_frame(&mut own, &scene.entities, tick, scene.time_of(tick), &input);
        });
    });
    let record_shared = |tick: Tick| {
        let mut writer = shared.write();
        record_frame(
            &mut writer,
            &scene.entities,
            tick,
            scene.time_of(tick),
            &input,
        );
    };
    let mut tick = scene.newest_tick();
    group.bench_function("record_shared", |b| {
        b.iter(|| {
            tick.0 += 1;
            record_shared(tick);
        });
    });
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let reader = shared.read();
                let (_, newest) = reader.window().expect("recorded");
                let ray = shots[i % shots.len()].1;
                black_box(reader.query(RewindTarget::Time(newest - 0.1)).ray(&ray)).ok();
                i += 1;
            }
        });
        group.bench_function("record_shared_while_a_thread_queries", |b| {
            b.iter(|| {
                tick.0 += 1;
                record_shared(tick);
            });
        });
        stop.store(true, Ordering::Relaxed);
    });
    group.bench_function("clone", |b| b.iter(|| black_box(history.clone())));
    group.finish();
    eprintln!(
        "history: {} bytes of poses, {} of broadphase",
        history.history_bytes(),
        history.broadphase_bytes()
    );
}

criterion_group!(service_benches, benches);
criterion_main!(service_benches);
