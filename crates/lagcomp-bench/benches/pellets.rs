//! Shotgun pellets and splash on the 200 x 20 scene (`lagcomp_fixtures::scene::SCENES[1]`).
//! The issue's floors: a 12-pellet claim costs at most 4x one hitscan verdict; a 10 m
//! splash with line-of-sight checks under 10 us.
//!
//! - `hitscan_verdicts`: every scene shot as a hitscan claim (from a shooter's eye at a
//!   target's chest, 64 shooters), validated in order on a fresh validator.
//! - `pellet_verdicts_12`: the same shots as 12-pellet claims of the rules' shotgun (uniform
//!   in a 3-degree cone), each pellet's hit claimed as the client's own fan saw it.
//! - `splash_10m`: a 10 m blast at each shot's target chest at the shot's moment, every
//!   hitbox in range with its line of sight (`Query::splash`), bodies shielding.
//!
//! Throughput is per claim (per blast), so the per-element times compare directly. The
//! verdict labels and the blasts' sizes are printed to stderr.

#[path = "support/scene_shots.rs"]
mod scene_shots;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use lagcomp::query::splash::{Blast, SplashHit};
use lagcomp::spread::{Falloff, MAX_PELLETS, Pellets, pellet_seed};
use lagcomp::{Overlap, Ray, RewindTarget, Trace};
use lagcomp_fixtures::{SCENES, Scene};
use lagcomp_validate::pellets::{PelletClaim, PelletTarget, PelletWeapon};
use lagcomp_validate::{RenderTime, ShotClaim, WeaponId, WeaponRules};
use scene_shots::{claims, validator};

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

[weapons.shotgun]
kind = "pellets"
id = 2
max_range = 200.0
min_interval = 0.001
aim_tolerance_deg = 180.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.5
pellets = { count = 12, half_angle_deg = 3.0, falloff = { start = 10.0, end = 40.0, min = 0.3 } }
"#;

/// The shotgun's id in [`RULES`]: the same shots, fired as pellets.
const SHOTGUN: WeaponId = WeaponId(2);

/// The shot as a pellet claim, each pellet's hit as the client's own fan saw it.
fn pellet_claim(scene: &Scene, shot: &ShotClaim, weapon: &PelletWeapon) -> PelletClaim {
    let seed = pellet_seed(shot.shooter.to_bits(), shot.seq);
    let drawn = Pellets::new(&weapon.spread, shot.direction, seed).expect("a valid aim");
    let rays: Vec<Ray> = drawn
        .directions()
        .iter()
        .map(|&d| Ray::new(shot.origin, d, 200.0).expect("a valid ray"))
        .collect();
    let RenderTime::Time(time) = shot.render_time else {
        unreachable!("the scene's shots are at times")
    };
    let mut traces: Vec<Trace> = Vec::new();
    scene
        .history
        .query(RewindTarget::at(time))
        .ignore(&[shot.shooter])
        .ray_fan(&rays, &mut traces)
        .expect("in the window");
    let mut hits = [None; MAX_PELLETS];
    for (slot, trace) in hits.iter_mut().zip(&traces) {
        *slot = trace.hit.map(|hit| PelletTarget {
            target: hit.entity,
            hitbox: Some(hit.hitbox),
        });
    }
    PelletClaim {
        shooter: shot.shooter,
        weapon: SHOTGUN,
        seq: shot.seq,
        render_time: shot.render_time,
        origin: shot.origin,
        direction: shot.direction,
        seed,
        pellets: 12,
        hits,
    }
}

fn pellet_benches(c: &mut Criterion) {
    let spec = SCENES[1];
    let scene = Scene::build(spec);
    let history = &scene.history;
    let claims = claims(&scene);
    let fresh = validator(&scene, RULES);
    let weapon = fresh
        .rules()
        .weapon(SHOTGUN)
        .and_then(WeaponRules::pellet_weapon)
        .expect("the shotgun fires pellets");
    let pellet_claims: Vec<(PelletClaim, f64)> = claims
        .iter()
        .map(|(claim, _, at)| (pellet_claim(&scene, claim, &weapon), *at))
        .collect();
    {
        let mut v = fresh.clone();
        let mut labels = std::collections::BTreeMap::new();
        for (claim, _, at) in &claims {
            *labels
                .entry(v.validate(history, claim, *at).outcome.label())
                .or_insert(0) += 1;
        }
        let mut v = fresh.clone();
        let mut pellet_labels = std::collections::BTreeMap::new();
        for (claim, at) in &pellet_claims {
            let verdict = v.validate_pellets(history, None, claim, *at);
            *pellet_labels.entry(verdict.outcome.label()).or_insert(0) += 1;
        }
        eprintln!(
            "{}: {} claims; hitscan {labels:?}; pellets {pellet_labels:?}",
            spec.name,
            claims.len()
        );
    }
    let blasts: Vec<(RewindTarget, Blast)> = claims
        .iter()
        .zip(&scene.shots)
        .map(|((_, chest, _), shot)| {
            let blast = Blast {
                center: *chest,
                radius: 10.0,
                falloff: Falloff::new(1.0, 10.0, 0.1).expect("a valid falloff"),
                bodies_block: true,
            };
            (RewindTarget::at(shot.time), blast)
        })
        .collect();
    let (mut scratch, mut caught): (Vec<Overlap>, Vec<SplashHit>) = (Vec::new(), Vec::new());
    let mut in_range = 0;
    for (at, blast) in &blasts {
        history
            .query(*at)
            .splash(blast, &mut scratch, &mut caught)
            .expect("in the window");
        in_range += caught.len();
    }
    eprintln!(
        "{}: {} blasts of 10 m, {:.1} hitboxes in range each",
        spec.name,
        blasts.len(),
        in_range as f64 / blasts.len() as f64
    );

    let mut group = c.benchmark_group(spec.name);
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .throughput(Throughput::Elements(claims.len() as u64));
    group.bench_function("hitscan_verdicts", |b| {
        b.iter_batched(
            || fresh.clone(),
            |mut v| {
                for (claim, _, at) in &claims {
                    black_box(v.validate(history, claim, *at));
                }
                v
            },
            BatchSize::SmallInput,
        );
    });
    group.bench_function("pellet_verdicts_12", |b| {
        b.iter_batched(
            || fresh.clone(),
            |mut v| {
                for (claim, at) in &pellet_claims {
                    black_box(v.validate_pellets(history, None, claim, *at));
                }
                v
            },
            BatchSize::SmallInput,
        );
    });
    group.bench_function("splash_10m", |b| {
        b.iter(|| {
            for (at, blast) in &blasts {
                black_box(history.query(*at).splash(blast, &mut scratch, &mut caught))
                    .expect("in the window");
            }
        });
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    pellet_benches(&mut c);
    c.final_summary();
}
