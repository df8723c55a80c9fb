//! Penetrating shots on the 200 x 20 scene (`lagcomp_fixtures::scene::SCENES[1]`): what
//! a claim through a wall and bodies costs next to one hitscan verdict.
//!
//! - `hitscan_verdicts`: every scene shot as a hitscan claim (from a shooter's eye at a
//!   target's chest, 64 shooters), validated in order on a fresh validator, as in the
//!   pellets bench.
//! - `penetration_verdicts`: the same shots as penetration claims of the rules' sniper
//!   rifle (flesh crossed at 0.5 a metre), each claiming the chain the client's own walk
//!   met: the body, and any behind it the round reached.
//! - On the same scene with a 10 cm wooden wall (1 x 1 m) across a shot's line, 60 % of
//!   the way to its target, for the shots whose line meets no other such wall (200 of
//!   the 512; see `lone_walls`):
//!   - `penetrate_wall_body`: `Query::penetrate` alone for each shot with the marksman
//!     rifle's rules (flesh never crossed): through the wall into the first body.
//!   - `penetration_verdicts_wall_body`: the marksman's claims of the wall and the body.
//!   - `penetration_verdicts_wall_bodies`: the sniper's claims of the wall and every body
//!     behind it the round reached.
//!
//! Throughput is per claim (per walk), so the per-element times compare directly. The
//! verdict labels and the chains' lengths are printed to stderr.

#[path = "support/scene_shots.rs"]
mod scene_shots;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use lagcomp::query::penetration::{PenetrationChain, PenetrationRules};
use lagcomp::{EntityId, History, MaterialId, Pose, Quat, Ray, RewindTarget, Shape, Vec3};
use lagcomp_fixtures::{SCENES, Scene};
use lagcomp_validate::penetration::PenetrationClaim;
use lagcomp_validate::{RenderTime, ShotClaim, WeaponId, WeaponRules};
use scene_shots::{claims, validator};

/// Wood's material id in the sniper's cost table.
const WOOD: MaterialId = MaterialId(1);

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

[weapons.sniper]
id = 3
max_range = 200.0
min_interval = 0.001
aim_tolerance_deg = 180.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.5
penetration = { power = 1.0, costs = [1.0, 0.25, 0.5], layer_damage = 0.75, body_material = 2 }

[weapons.marksman]
id = 4
max_range = 200.0
min_interval = 0.001
aim_tolerance_deg = 180.0
origin_tolerance = 0.5
hit_leeway = 1.25
hit_leeway_min = 0.05
max_rewind = 0.5
penetration = { power = 1.0, costs = [1.0, 0.25, inf], layer_damage = 0.75, body_material = 2 }
"#;

/// The sniper's id in [`RULES`]: the same shots, fired through walls and bodies.
const SNIPER: WeaponId = WeaponId(3);
/// The marksman rifle's: through walls, stopped by the first body.
const MARKSMAN: WeaponId = WeaponId(4);

/// Where a shot's wall stands: its centre, 60 % of the way from the muzzle to the target's
/// chest, and its facing (towards the target).
fn wall_of(claim: &ShotClaim, chest: Vec3) -> (Vec3, Vec3) {
    let line = chest - claim.origin;
    (claim.origin + line * 0.6, line.normalize())
}

/// Whether the line from `claim`'s muzzle to `chest` passes through the wall at `wall`
/// (within 0.75 m of its centre on its plane: the 1 x 1 m wall's corners are 0.71 m out).
fn crosses(claim: &ShotClaim, chest: Vec3, (centre, facing): (Vec3, Vec3)) -> bool {
    let line = chest - claim.origin;
    let along = line.dot(facing);
    if along.abs() < 1e-6 {
        // Edge on: near enough is through.
        return (centre - claim.origin).cross(line).length() / line.length() < 0.75;
    }
    let t = (centre - claim.origin).dot(facing) / along;
    (0.0..=1.05).contains(&t) && (claim.origin + line * t).distance(centre) < 0.75
}

/// The shots whose walls stand alone: a shot is kept when its line passes through no wall
/// of a shot kept before it and its wall stands in no such shot's line, so each kept
/// shot meets exactly one wall (its own).
fn lone_walls(claims: &[(ShotClaim, Vec3, f64)]) -> Vec<(ShotClaim, Vec3, f64)> {
    let mut kept: Vec<(ShotClaim, Vec3, f64)> = Vec::new();
    for shot @ (claim, chest, _) in claims {
        let wall = wall_of(claim, *chest);
        let alone = kept.iter().all(|(other, other_chest, _)| {
            !crosses(claim, *chest, wall_of(other, *other_chest))
                && !crosses(other, *other_chest, wall)
        });
        if alone {
            kept.push(*shot);
        }
    }
    kept
}

/// A 10 cm wooden wall, 1 x 1 m, across each shot's line 60 % of the way to its target.
fn wall_every_shot(history: &mut History, claims: &[(ShotClaim, Vec3, f64)]) {
    for (claim, chest, _) in claims {
        let (centre, facing) = wall_of(claim, *chest);
        let pose = Pose::new(centre, Quat::from_rotation_arc(Vec3::Z, facing));
        let wall = history
            .add_static(Shape::cuboid(Vec3::new(0.5, 0.5, 0.05)), pose, u32::MAX)
            .expect("a valid wall");
        history
            .set_static_material(wall, WOOD)
            .expect("the wall just added");
    }
}

/// The shot as a penetration claim of the chain the client's own walk met at its
/// moment.
fn penetration_claim(
    history: &History,
    shot: &ShotClaim,
    (weapon, rules): (WeaponId, &PenetrationRules),
    chain: &mut PenetrationChain,
) -> PenetrationClaim {
    let RenderTime::Time(time) = shot.render_time else {
        unreachable!("the scene's shots are at times")
    };
    let ray = Ray::new(shot.origin, shot.direction, 200.0).expect("a valid ray");
    history
        .query(RewindTarget::at(time))
        .ignore(&[shot.shooter])
        .penetrate(&ray, rules, chain)
        .expect("in the window");
    PenetrationClaim {
        shooter: shot.shooter,
        weapon,
        seq: shot.seq,
        render_time: shot.render_time,
        origin: shot.origin,
        direction: shot.direction,
        layers: PenetrationClaim::layers_walked(chain),
    }
}

fn penetration_benches(c: &mut Criterion) {
    let spec = SCENES[1];
    let scene = Scene::build(spec);
    let mut walled = Scene::build(spec);
    let claims = claims(&scene);
    let alone = lone_walls(&claims);
    wall_every_shot(&mut walled.history, &alone);
    let (history, walled) = (&scene.history, &walled.history);
    let fresh = validator(&scene, RULES);
    let rules_of = |id| {
        fresh
            .rules()
            .weapon(id)
            .and_then(WeaponRules::penetration_rules)
            .expect("the weapon penetrates")
    };
    let (sniper, marksman) = (rules_of(SNIPER), rules_of(MARKSMAN));
    let mut chain = PenetrationChain::new();
    let mut claimed = |history: &History, claims: &[(ShotClaim, Vec3, f64)], weapon| {
        claims
            .iter()
            .map(|(claim, _, at)| {
                let claim = penetration_claim(history, claim, weapon, &mut chain);
                (claim, *at)
            })
            .collect::<Vec<(PenetrationClaim, f64)>>()
    };
    let open = claimed(history, &claims, (SNIPER, &sniper));
    let wall_body = claimed(walled, &alone, (MARKSMAN, &marksman));
    let wall_bodies = claimed(walled, &alone, (SNIPER, &sniper));
    let walks: Vec<(RewindTarget, Ray, [EntityId; 1])> = alone
        .iter()
        .map(|(claim, _, _)| {
            let RenderTime::Time(time) = claim.render_time else {
                unreachable!("the scene's shots are at times")
            };
            let ray = Ray::new(claim.origin, claim.direction, 200.0).expect("a valid ray");
            (RewindTarget::at(time), ray, [claim.shooter])
        })
        .collect();
    {
        let mut v = fresh.clone();
        let mut labels = BTreeMap::new();
        for (claim, _, at) in &claims {
            *labels
                .entry(v.validate(history, claim, *at).outcome.label())
                .or_insert(0) += 1;
        }
        let summary = |name: &str, history: &History, claims: &[(PenetrationClaim, f64)]| {
            let mut v = fresh.clone();
            let mut labels = BTreeMap::new();
            let (mut layers, mut bodies) = (0, 0);
            for (claim, at) in claims {
                let verdict = v.validate_penetration(history, None, claim, *at);
                *labels.entry(verdict.outcome.label()).or_insert(0) += 1;
                layers += claim.layers.iter().flatten().count();
                bodies += verdict.verdicts().count();
            }
            eprintln!(
                "{name}: {labels:?}, {:.2} claimed layers and {:.2} folded verdicts a claim",
                layers as f64 / claims.len() as f64,
                bodies as f64 / claims.len() as f64
            );
        };
        eprintln!(
            "{}: {} claims; hitscan {labels:?}; {} shots with a wall of their own",
            spec.name,
            claims.len(),
            alone.len()
        );
        summary("sniper", history, &open);
        summary("marksman through a wall", walled, &wall_body);
        summary("sniper through a wall", walled, &wall_bodies);
    }
    let mut chain = PenetrationChain::new();

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
    group.bench_function("penetration_verdicts", |b| {
        b.iter_batched(
            || fresh.clone(),
            |mut v| {
                for (claim, at) in &open {
                    black_box(v.validate_penetration(history, None, claim, *at));
                }
                v
            },
            BatchSize::SmallInput,
        );
    });
    // The walled shots are fewer: per-element times still compare.
    group.throughput(Throughput::Elements(alone.len() as u64));
    group.bench_function("penetrate_wall_body", |b| {
        b.iter(|| {
            for (at, ray, shooter) in &walks {
                black_box(
                    walled
                        .query(*at)
                        .ignore(shooter)
                        .penetrate(ray, &marksman, &mut chain),
                )
                .expect("in the window");
            }
        });
    });
    for (name, history, claims) in [
        ("penetration_verdicts_wall_body", walled, &wall_body),
        ("penetration_verdicts_wall_bodies", walled, &wall_bodies),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || fresh.clone(),
                |mut v| {
                    for (claim, at) in claims {
                        black_box(v.validate_penetration(history, None, claim, *at));
                    }
                    v
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    penetration_benches(&mut c);
    c.final_summary();
}
