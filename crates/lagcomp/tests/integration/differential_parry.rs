//! Differential tests against parry3d: random skeletal rigs recorded over random ticks,
//! queried at random rewind times, every ray (and sweep, and overlap) answered by lagcomp
//! and, independently, by parry3d on shapes built from the interpolated poses.
//!
//! The poses are rebuilt here from the frames as recorded (`lerp` of translation and
//! scale, `slerp` of rotation, with the alpha the history computes from the frame times);
//! only `Hitbox::placed` (the documented scale rules) is shared with the crate. Each
//! placed shape becomes a parry `Ball`, `Cuboid` or `Capsule` (two endpoints and a radius)
//! at a parry pose, and parry casts against every one of them: the closest wins.

use crate::common;
use std::sync::Arc;

use crate::common::{random_bone, random_in_ball, random_rig, random_rotation, random_unit, rng};
use lagcomp::math::{lerp, slerp};
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HitboxId, Obb, PlacedShape, Quat, Ray,
    RewindTarget, Rig, Shape, Tick, Vec3,
};
use parry3d::math::Pose as PPose;
use parry3d::query::{self, Ray as PRay, ShapeCastOptions};
use parry3d::shape::{Ball, Capsule, Cuboid, Shape as PShape};
use rand::Rng;
use rand_pcg::Pcg64;

/// Relative tolerance on distances: `|a - b| <= REL * max(1, b)`.
const REL: f32 = 1.0e-4;

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= REL * b.abs().max(1.0)
}

/// One recorded frame: its time, and per entity its bone transforms.
struct Frame {
    time: f64,
    bones: Vec<Vec<BoneTransform>>,
}

/// A history and, next to it, everything that was recorded into it.
struct World {
    history: History,
    entities: Vec<(EntityId, Arc<Rig>)>,
    frames: Vec<Frame>,
}

/// A small random rotation, sometimes a large one (beyond slerp's nlerp shortcut).
fn turn(rng: &mut Pcg64) -> Quat {
    let angle = if rng.random_bool(0.2) {
        rng.random_range(-1.5..1.5)
    } else {
        rng.random_range(-0.2..0.2)
    };
    Quat::from_axis_angle(random_unit(rng), angle)
}

/// 2 to 8 entities with random rigs, moving for 10 to 30 frames at random ticks.
fn world(rng: &mut Pcg64) -> World {
    let mut history = common::history();
    let count = rng.random_range(2..=8);
    let mut entities = Vec::new();
    let mut current = Vec::new();
    let mut velocity = Vec::new();
    // Scale is switched on for some entities only after a few frames, so their scale
    // lane is allocated mid-history.
    let mut scale_from = Vec::new();
    for _ in 0..count {
        let rig = Arc::new(random_rig(rng));
        let id = history.spawn(rig.clone());
        let center = Vec3::new(
            rng.random_range(-5.0..5.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-5.0..5.0),
        );
        let bones: Vec<BoneTransform> = (0..rig.bone_count())
            .map(|_| random_bone(rng, center, 1.0))
            .collect();
        velocity.push(random_in_ball(rng, 0.15));
        scale_from.push(if rng.random_bool(0.2) {
            Some(rng.random_range(1..8))
        } else {
            None
        });
        current.push(bones);
        entities.push((id, rig));
    }
    let mut frames = Vec::new();
    let mut tick = rng.random_range(0..1000_u32);
    let n_frames = rng.random_range(10..=30);
    for f in 0..n_frames {
        tick += rng.random_range(1..=3);
        let jitter = rng.random_range(-0.2..0.2) / common::TICK_RATE;
        let time = common::time_of(tick) + jitter;
        if f > 0 {
            for (e, bones) in current.iter_mut().enumerate() {
                for bone in bones.iter_mut() {
                    bone.translation += velocity[e] + random_in_ball(rng, 0.05);
                    bone.rotation = (turn(rng) * bone.rotation).normalize();
                    if bone.scale != Vec3::ONE {
                        let wobble = Vec3::new(
                            rng.random_range(0.9..1.1),
                            rng.random_range(0.9..1.1),
                            rng.random_range(0.9..1.1),
                        );
                        bone.scale =
                            (bone.scale * wobble).clamp(Vec3::splat(0.5), Vec3::splat(2.0));
                    } else if scale_from[e] == Some(f) {
                        bone.scale = Vec3::new(1.5, 0.75, 1.25);
                    }
                }
            }
        }
        let mut recorder = history.begin_frame(Tick(tick), time).expect("increasing");
        for ((id, _), bones) in entities.iter().zip(&current) {
            recorder
                .record(*id, bones, EntityState::default())
                .expect("valid bones");
        }
        drop(recorder);
        frames.push(Frame {
            time,
            bones: current.clone(),
        });
    }
    World {
        history,
        entities,
        frames,
    }
}

impl World {
    /// A query time inside the window: half of them exactly on a frame, half between.
    fn random_time(&self, rng: &mut Pcg64) -> (f64, bool) {
        let (lo, hi) = self.history.window().expect("recorded");
        if rng.random_bool(0.5) {
            let in_window: Vec<&Frame> = self
                .frames
                .iter()
                .filter(|f| f.time >= lo && f.time <= hi)
                .collect();
            let frame = in_window[rng.random_range(0..in_window.len())];
            (frame.time, true)
        } else {
            (rng.random_range(lo..=hi), false)
        }
    }

    /// Bone `bone` of entity `e` at `time`, interpolated from the recorded frames the way
    /// the documentation says: the stored frame on an exact time, else lerp/slerp between
    /// the frames around it.
    fn bone_at(&self, e: usize, bone: usize, time: f64) -> BoneTransform {
        let i = self
            .frames
            .iter()
            .rposition(|f| f.time <= time)
            .expect("time inside the recorded span");
        let a = &self.frames[i];
        if a.time == time {
            return a.bones[e][bone];
        }
        let b = &self.frames[i + 1];
        let alpha = ((time - a.time) / (b.time - a.time)) as f32;
        let (pa, pb) = (&a.bones[e][bone], &b.bones[e][bone]);
        BoneTransform {
            translation: lerp(pa.translation, pb.translation, alpha),
            rotation: slerp(pa.rotation, pb.rotation, alpha),
            scale: lerp(pa.scale, pb.scale, alpha),
        }
    }

    /// Every hitbox of every entity, placed at `time`.
    fn placed_at(&self, time: f64) -> Vec<Target> {
        let mut out = Vec::new();
        for (e, (_, rig)) in self.entities.iter().enumerate() {
            for hb in rig.hitboxes() {
                let bone = self.bone_at(e, usize::from(hb.bone), time);
                let placed = hb.placed(&bone);
                out.push(Target {
                    entity: e,
                    hitbox: hb.id,
                    placed,
                    parry: ParryShape::of(&placed),
                });
            }
        }
        out
    }

    fn entity_index(&self, id: EntityId) -> usize {
        self.entities
            .iter()
            .position(|(e, _)| *e == id)
            .expect("known entity")
    }
}

/// A parry shape and its pose, built from a placed lagcomp shape.
struct ParryShape {
    pose: PPose,
    shape: Box<dyn PShape>,
}

impl ParryShape {
    fn of(placed: &PlacedShape) -> Self {
        let pose = PPose::from_parts(placed.pose.translation, placed.pose.rotation);
        let shape: Box<dyn PShape> = match placed.shape {
            Shape::Sphere { radius } => Box::new(Ball::new(radius)),
            Shape::Box { half_extents } => Box::new(Cuboid::new(half_extents)),
            Shape::Capsule {
                radius,
                half_height,
                axis,
            } => {
                let tip = axis.unit() * half_height;
                Box::new(Capsule::new(-tip, tip, radius))
            }
        };
        Self { pose, shape }
    }

    /// Parry's time of impact of the solid ray, and its normal.
    fn cast(&self, ray: &PRay, max: f32) -> Option<(f32, Vec3)> {
        self.shape
            .cast_ray_and_get_normal(&self.pose, ray, max, true)
            .map(|hit| (hit.time_of_impact, hit.normal))
    }
}

/// A hitbox at the query time, in both libraries' terms.
struct Target {
    entity: usize,
    hitbox: HitboxId,
    placed: PlacedShape,
    parry: ParryShape,
}

/// A random ray: mostly aimed near a random hitbox, some along an axis, some anywhere.
fn random_ray(rng: &mut Pcg64, targets: &[Target]) -> Ray {
    let aimed = &targets[rng.random_range(0..targets.len())].placed;
    let target = aimed.pose.translation + random_in_ball(rng, 1.2 * aimed.shape.bounding_radius());
    let dir = match rng.random_range(0..10) {
        0 => [Vec3::X, -Vec3::X, Vec3::Y, -Vec3::Y, Vec3::Z, -Vec3::Z][rng.random_range(0..6)],
        _ => random_unit(rng),
    };
    let origin = if rng.random_range(0..10) == 0 {
        Vec3::new(
            rng.random_range(-15.0..15.0),
            rng.random_range(-5.0..5.0),
            rng.random_range(-15.0..15.0),
        )
    } else {
        target - dir * rng.random_range(0.2..15.0)
    };
    let max = if rng.random_bool(0.8) {
        100.0
    } else {
        rng.random_range(0.0..20.0)
    };
    Ray::new(origin, dir, max).expect("valid ray")
}

/// What parry says about one ray: all hits, nearest first.
fn parry_hits(targets: &[Target], ray: &Ray) -> Vec<(f32, usize, Vec3)> {
    let pray = PRay::new(ray.origin(), ray.dir());
    let mut hits: Vec<(f32, usize, Vec3)> = targets
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            t.parry
                .cast(&pray, ray.max_distance())
                .map(|(toi, n)| (toi, i, n))
        })
        .collect();
    hits.sort_by(|a, b| a.0.total_cmp(&b.0));
    hits
}

#[derive(Debug, Default)]
struct Tally {
    rays: usize,
    exact_frame_rays: usize,
    hits: usize,
    misses: usize,
    ties: usize,
    started_inside: usize,
    /// Hit/miss disagreements explained by the hit being within tolerance of the reach.
    at_reach: usize,
    /// Hit/miss disagreements where the exact crossing is a graze (under 1e-3 deep).
    grazes: usize,
    /// Largest relative difference of lagcomp's distance from parry's.
    max_parry_error: f32,
    /// Largest relative difference of lagcomp's entry and exit from the f64 oracle's
    /// (leaving out the grazing ones).
    max_exact_error: f64,
    /// Entries or exits at grazing incidence, where the distance is ill-conditioned:
    /// checked by the point being on the surface instead (see `matches_exact`).
    grazing_entries: usize,
    /// Hits where parry's own entry normal strays more than 1e-3 from the f64 oracle's
    /// (parry's ball ray cast loses precision on small far spheres); informational.
    parry_normal_strays: usize,
    /// Capsule normals within 2 mm of a cap junction that are off by 1e-3 to 1e-2.
    junction_normals: usize,
    failures: Vec<String>,
}

impl Tally {
    fn fail(&mut self, message: String) {
        if self.failures.len() < 20 {
            self.failures.push(message);
        } else if self.failures.len() == 20 {
            self.failures.push("...".into());
        }
    }
}

/// Relative tolerance of lagcomp's distances against the f64 oracle.
const EXACT_REL: f64 = 1.0e-5;

/// Tolerance of lagcomp's normals against the f64 oracle's (Euclidean, about radians).
const NORMAL_TOL: f64 = 1.0e-3;

/// Whether `p` is within 2 mm (along the axis) of the circle where a capsule's side meets
/// one of its end spheres.
fn near_cap_junction(placed: &PlacedShape, p: [f64; 3]) -> bool {
    let Shape::Capsule {
        half_height, axis, ..
    } = placed.shape
    else {
        return false;
    };
    let local =
        placed
            .pose
            .inverse_transform_point(Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32));
    (local.dot(axis.unit()).abs() - half_height).abs() < 2.0e-3
}

fn at(ray: &Ray, t: f64) -> [f64; 3] {
    let (o, d) = (common::d3(ray.origin()), common::d3(ray.dir()));
    [0, 1, 2].map(|i| o[i] + t * d[i])
}

fn angle_gap(a: Vec3, b: [f64; 3]) -> f64 {
    let a = common::d3(a);
    (0..3).map(|i| (a[i] - b[i]).powi(2)).sum::<f64>().sqrt()
}

/// Compares one ray.
fn compare_ray(world: &World, targets: &[Target], time: f64, ray: &Ray, tally: &mut Tally) {
    let trace = world
        .history
        .query(RewindTarget::Time(time))
        .ray(ray)
        .expect("time inside the window");
    let parry = parry_hits(targets, ray);
    tally.rays += 1;
    let exact = |t: &Target| common::exact_crossing(&t.placed, ray.origin(), ray.dir(), 0.0);
    match (trace.hit, parry.first()) {
        (None, None) => tally.misses += 1,
        (Some(hit), None) => {
            let e = world.entity_index(hit.entity);
            let t = targets
                .iter()
                .find(|t| t.entity == e && t.hitbox == hit.hitbox)
                .expect("hit target");
            if close(hit.distance, ray.max_distance()) {
                tally.at_reach += 1;
            } else if exact(t).is_some_and(|(enter, exit)| exit - enter < 1.0e-3) {
                tally.grazes += 1;
            } else {
                tally.fail(format!(
                    "lagcomp hits, parry misses: {ray:?} at {time}: {hit:#?}\nexact {:?}",
                    exact(t)
                ));
            }
        }
        (None, Some(&(toi, i, _))) => {
            let t = &targets[i];
            if close(toi, ray.max_distance()) {
                tally.at_reach += 1;
            } else if exact(t).is_some_and(|(enter, exit)| exit - enter < 1.0e-3) {
                tally.grazes += 1;
            } else {
                tally.fail(format!(
                    "parry hits at {toi} (entity {}, {:?}), lagcomp misses: {ray:?} at {time}\n\
                     shape {:?}\nexact {:?}, lagcomp's own narrowphase {:?}",
                    t.entity,
                    t.hitbox,
                    t.placed,
                    exact(t),
                    t.placed.cast_line(ray.origin(), ray.dir())
                ));
            }
        }
        (Some(hit), Some(&(toi, i, parry_normal))) => {
            tally.hits += 1;
            let e = world.entity_index(hit.entity);
            tally.max_parry_error = tally
                .max_parry_error
                .max((hit.distance - toi).abs() / toi.abs().max(1.0));
            if !close(hit.distance, toi) {
                tally.fail(format!(
                    "distance: lagcomp {} (entity {e}, {:?}), parry {toi} (entity {}, {:?}): \
                     {ray:?} at {time}",
                    hit.distance, hit.hitbox, targets[i].entity, targets[i].hitbox
                ));
                return;
            }
            let tied = parry
                .get(1)
                .is_some_and(|&(second, _, _)| close(second, toi));
            let is = |h: &(f32, usize, Vec3)| {
                targets[h.1].entity == e && targets[h.1].hitbox == hit.hitbox
            };
            if tied {
                tally.ties += 1;
                // Whatever lagcomp picked must be one of the tied hitboxes.
                if !parry.iter().take_while(|h| close(h.0, toi)).any(is) {
                    tally.fail(format!(
                        "tie broken outside the tied set: {ray:?} at {time}"
                    ));
                }
            } else if !is(&parry[0]) {
                tally.fail(format!(
                    "first hit: lagcomp entity {e} {:?} at {}, parry entity {} {:?} at {toi} \
                     (next {:?}): {ray:?} at {time}",
                    hit.hitbox,
                    hit.distance,
                    targets[i].entity,
                    targets[i].hitbox,
                    parry.get(1).map(|h| h.0)
                ));
                return;
            }
            if hit.started_inside {
                tally.started_inside += 1;
            }
            // Entry, exit and normals of lagcomp's hitbox against the f64 oracle.
            let target = targets
                .iter()
                .find(|t| t.entity == e && t.hitbox == hit.hitbox)
                .expect("hit target");
            let Some((enter, exit)) = exact(target) else {
                tally.fail(format!("the oracle finds no crossing: {ray:?} at {time}"));
                return;
            };
            for (what, ours, theirs) in [
                ("entry", hit.distance, enter.max(0.0)),
                ("exit", hit.exit_distance, exit),
            ] {
                let (ok, grazing) = matches_exact(target, ray, 0.0, ours, theirs);
                if grazing {
                    tally.grazing_entries += 1;
                } else {
                    let err = (f64::from(ours) - theirs).abs() / theirs.abs().max(1.0);
                    tally.max_exact_error = tally.max_exact_error.max(err);
                }
                if !ok {
                    tally.fail(format!(
                        "{what}: lagcomp {ours}, exact {theirs}: {ray:?} at {time}\nshape {:?}",
                        target.placed
                    ));
                }
            }
            let mut normals = vec![(hit.exit.normal, exit, "exit")];
            if !hit.started_inside {
                normals.push((hit.entry.normal, enter, "entry"));
            }
            for (ours, t, what) in normals {
                let Some(n) = common::exact_normal(&target.placed, at(ray, t)) else {
                    continue;
                };
                let gap = angle_gap(ours, n);
                if gap <= NORMAL_TOL {
                    continue;
                }
                if gap <= 1.0e-2 && near_cap_junction(&target.placed, at(ray, t)) {
                    // See `shapes::capsule_normal_near_the_cap_junction` (ignored, a bug).
                    tally.junction_normals += 1;
                } else {
                    tally.fail(format!(
                        "{what} normal: lagcomp {ours}, exact {n:?}: {ray:?} at {time}\nshape {:?}",
                        target.placed
                    ));
                }
            }
            let parry_off = |n| angle_gap(parry_normal, n) > NORMAL_TOL;
            if !hit.started_inside
                && !tied
                && common::exact_normal(&target.placed, at(ray, enter)).is_some_and(parry_off)
            {
                tally.parry_normal_strays += 1;
            }
            // The sample is of the time asked for.
            assert_eq!(hit.sample.time, time);
        }
    }
}

#[test]
fn rays_match_parry() {
    let mut rng = rng(0x01a9_c0b9);
    let mut tally = Tally::default();
    let started = std::time::Instant::now();
    for _ in 0..60 {
        let world = world(&mut rng);
        for _ in 0..10 {
            let (time, exact) = world.random_time(&mut rng);
            let targets = world.placed_at(time);
            for _ in 0..40 {
                let ray = random_ray(&mut rng, &targets);
                if exact {
                    tally.exact_frame_rays += 1;
                }
                compare_ray(&world, &targets, time, &ray, &mut tally);
            }
        }
    }
    println!(
        "rays {} ({} at exact frame times), hits {}, misses {}, ties {}, started inside {}, \
         hit/miss disagreements at the reach {} and on grazes {}; largest relative distance \
         difference from parry {:e}, from the f64 oracle {:e} ({} grazing ones checked on the \
         surface instead); parry normals off the oracle \
         {}; capsule normals off near a cap junction {}; in {:?}",
        tally.rays,
        tally.exact_frame_rays,
        tally.hits,
        tally.misses,
        tally.ties,
        tally.started_inside,
        tally.at_reach,
        tally.grazes,
        tally.max_parry_error,
        tally.max_exact_error,
        tally.grazing_entries,
        tally.parry_normal_strays,
        tally.junction_normals,
        started.elapsed()
    );
    assert!(tally.failures.is_empty(), "{}", tally.failures.join("\n\n"));
    assert!(tally.rays >= 10_000);
    assert!(tally.exact_frame_rays > tally.rays / 4 && tally.exact_frame_rays < tally.rays * 3 / 4);
    // Enough of both outcomes to mean something.
    assert!(tally.hits > tally.rays / 4, "{tally:?}");
    assert!(tally.misses > tally.rays / 10, "{tally:?}");
    // Ties and borderline disagreements are legitimate but must stay rare.
    assert!(tally.ties * 50 < tally.hits, "{tally:?}");
    assert!(
        (tally.at_reach + tally.grazes) * 1000 < tally.rays,
        "{tally:?}"
    );
    assert!(tally.junction_normals * 100 < tally.hits, "{tally:?}");
}

/// Parry's time of impact of a ball of `radius` moving along the ray against one target
/// (0 when they already overlap).
fn parry_sweep(target: &Target, ray: &Ray, radius: f32) -> Option<f32> {
    let options = ShapeCastOptions {
        max_time_of_impact: ray.max_distance(),
        target_distance: 0.0,
        stop_at_penetration: true,
        compute_impact_geometry_on_penetration: false,
    };
    query::cast_shapes(
        &PPose::from_translation(ray.origin()),
        ray.dir(),
        &Ball::new(radius),
        &target.parry.pose,
        Vec3::ZERO,
        &*target.parry.shape,
        options,
    )
    .expect("supported pair")
    .map(|hit| hit.time_of_impact)
}

/// Sphere sweeps. parry's shape cast (`cast_shapes`, iterative for boxes and capsules)
/// agrees with the exact answer only to a few millimetres, so here it is the coarse
/// cross-check (hit or miss, distance within 1 %) and picks the candidates; the f64
/// oracle on the shapes grown by the radius decides, among the candidates, which hitbox
/// is first and where.
#[test]
fn sweeps_match_parry_and_the_exact_answer() {
    /// Relative tolerance against parry's iterative shape cast.
    const PARRY_SWEEP_REL: f32 = 1.0e-2;
    let mut rng = rng(0x05ee_d5a1);
    let mut tally = SweepTally::default();
    for _ in 0..25 {
        let world = world(&mut rng);
        for _ in 0..8 {
            let (time, _) = world.random_time(&mut rng);
            let targets = world.placed_at(time);
            for _ in 0..25 {
                let ray = random_ray(&mut rng, &targets);
                let radius = rng.random_range(0.01..0.5);
                compare_sweep(
                    &world,
                    &targets,
                    time,
                    &ray,
                    radius,
                    PARRY_SWEEP_REL,
                    &mut tally,
                );
            }
        }
    }
    println!("{tally:?}");
    let SweepTally {
        sweeps,
        hits,
        misses,
        ties,
        borderline,
        parry_missed,
        ..
    } = tally;
    tally.failures.truncate(20);
    assert!(tally.failures.is_empty(), "{}", tally.failures.join("\n\n"));
    assert!(
        hits > sweeps / 3 && misses > sweeps / 20,
        "hits {hits}, misses {misses}"
    );
    assert!(
        parry_missed * 1000 <= sweeps,
        "parry missed {parry_missed} confirmed hits"
    );
    assert!(
        ties * 50 < hits && borderline * 200 < sweeps,
        "ties {ties}, borderline {borderline}"
    );
}

#[derive(Debug, Default)]
struct SweepTally {
    sweeps: usize,
    hits: usize,
    misses: usize,
    /// Sweeps starting already overlapping several hitboxes (all at distance 0).
    ties_at_start: usize,
    ties: usize,
    borderline: usize,
    /// Grazing entries where lagcomp's distance differs from the oracle's by more than
    /// the relative tolerance but its centre is on the grown surface (ill-conditioned).
    grazing: usize,
    /// Contacts parry reports where the swept sphere is more than 1e-4 away from the
    /// shape (its iterative shape cast stops early); informational.
    parry_false_contacts: usize,
    /// Non-grazing hits the exact oracle confirms but parry's shape cast misses.
    parry_missed: usize,
    max_parry_error: f32,
    max_exact_error: f64,
    failures: Vec<String>,
}

/// The oracle's entry of a trace of `radius` into a target, clipped to the ray: `None`
/// when it never gets within `radius` over `[0, max]`.
fn exact_entry(target: &Target, ray: &Ray, radius: f32) -> Option<(f64, f64)> {
    let (enter, exit) = common::exact_crossing(&target.placed, ray.origin(), ray.dir(), radius)?;
    (exit >= 0.0 && enter <= f64::from(ray.max_distance())).then_some((enter.max(0.0), exit))
}

/// Whether lagcomp's distance `ours` is the oracle's `exact`: within `EXACT_REL`, or, on a
/// grazing entry where the distance is ill-conditioned, with the trace's centre at `ours`
/// on the shape grown by `radius` (to 2e-6) and no farther than 1e-3 from `exact`.
fn matches_exact(target: &Target, ray: &Ray, radius: f32, ours: f32, exact: f64) -> (bool, bool) {
    let err = (f64::from(ours) - exact).abs() / exact.abs().max(1.0);
    if err <= EXACT_REL {
        return (true, false);
    }
    let sd = common::signed_distance(&target.placed, ray.at(ours)) - f64::from(radius);
    (
        sd.abs() <= 2.0e-6 && (f64::from(ours) - exact).abs() <= 1.0e-3,
        true,
    )
}

fn compare_sweep(
    world: &World,
    targets: &[Target],
    time: f64,
    ray: &Ray,
    radius: f32,
    parry_rel: f32,
    tally: &mut SweepTally,
) {
    tally.sweeps += 1;
    let ours = world
        .history
        .query(RewindTarget::Time(time))
        .sweep(ray, radius)
        .expect("time inside the window")
        .hit;
    let mut theirs: Vec<(f32, usize)> = targets
        .iter()
        .enumerate()
        .filter_map(|(i, t)| parry_sweep(t, ray, radius).map(|toi| (toi, i)))
        .collect();
    theirs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let ours_index = ours.map(|hit| {
        let e = world.entity_index(hit.entity);
        targets
            .iter()
            .position(|t| t.entity == e && t.hitbox == hit.hitbox)
            .expect("hit target")
    });
    // Candidates: parry's hits within 2 % of its first, and lagcomp's hit.
    let mut candidates: Vec<usize> = theirs
        .iter()
        .take_while(|h| h.0 <= theirs[0].0 + 0.02 * theirs[0].0.max(1.0))
        .map(|h| h.1)
        .collect();
    candidates.extend(ours_index);
    candidates.sort_unstable();
    candidates.dedup();
    let mut exact: Vec<(f64, usize)> = candidates
        .iter()
        .filter_map(|&i| exact_entry(&targets[i], ray, radius).map(|(enter, _)| (enter, i)))
        .collect();
    exact.sort_by(|a, b| a.0.total_cmp(&b.0));
    let graze = |i: usize| {
        common::exact_crossing(&targets[i].placed, ray.origin(), ray.dir(), radius)
            .is_none_or(|(a, b)| b - a < 1.0e-3)
    };
    let at_reach = |d: f64| (d - f64::from(ray.max_distance())).abs() < 1.0e-4;
    match (ours, exact.first()) {
        (None, None) => {
            tally.misses += 1;
            if let Some(&(toi, i)) = theirs.first().filter(|h| !graze(h.1)) {
                tally.failures.push(format!(
                    "only parry hits ({toi}, target {i}): {ray:?} r {radius}"
                ));
            }
        }
        (Some(hit), None) => {
            if at_reach(f64::from(hit.distance)) || graze(ours_index.expect("hit")) {
                tally.borderline += 1;
            } else {
                tally
                    .failures
                    .push(format!("only lagcomp hits: {ray:?} r {radius}: {hit:?}"));
            }
        }
        (None, Some(&(enter, i))) => {
            if at_reach(enter) || graze(i) {
                tally.borderline += 1;
            } else {
                tally.failures.push(format!(
                    "lagcomp misses, the oracle enters {:?} at {enter}: {ray:?} r {radius}",
                    targets[i].placed
                ));
            }
        }
        (Some(hit), Some(&(enter, i))) => {
            tally.hits += 1;
            let mine = ours_index.expect("hit");
            let tied = exact
                .get(1)
                .is_some_and(|&(second, _)| (second - enter).abs() <= 1.0e-4 * enter.max(1.0));
            if tied && enter == 0.0 {
                tally.ties_at_start += 1;
            } else if tied {
                tally.ties += 1;
            } else if mine != i {
                tally.failures.push(format!(
                    "first hit: lagcomp {:?} at {}, exact {:?} at {enter}: {ray:?} r {radius}",
                    targets[mine].placed, hit.distance, targets[i].placed
                ));
                return;
            }
            // Entry and exit of lagcomp's own hitbox against the oracle.
            let (my_enter, my_exit) = exact_entry(&targets[mine], ray, radius)
                .expect("lagcomp's hitbox is a candidate the oracle hits");
            for (what, ours, exact) in [
                ("entry", hit.distance, my_enter),
                ("exit", hit.exit_distance, my_exit),
            ] {
                let (ok, grazing) = matches_exact(&targets[mine], ray, radius, ours, exact);
                if grazing {
                    tally.grazing += 1;
                } else {
                    tally.max_exact_error = tally
                        .max_exact_error
                        .max((f64::from(ours) - exact).abs() / exact.max(1.0));
                }
                if !ok {
                    tally.failures.push(format!(
                        "{what}: lagcomp {ours}, exact {exact}: {ray:?} r {radius}\nshape {:?}",
                        targets[mine].placed
                    ));
                }
            }
            // The contact point is on the hitbox's surface.
            let sd = common::signed_distance(&targets[mine].placed, hit.entry.point);
            if !hit.started_inside && sd.abs() > 1.0e-4 {
                tally
                    .failures
                    .push(format!("contact {sd} off the surface: {ray:?}"));
            }
            // parry, coarsely: its contact with the same hitbox ...
            match theirs.iter().find(|h| h.1 == mine) {
                Some(&(toi, _)) => {
                    let err = (hit.distance - toi).abs() / toi.max(1.0);
                    tally.max_parry_error = tally.max_parry_error.max(err);
                    if err > parry_rel {
                        tally.failures.push(format!(
                            "parry's contact {toi}, lagcomp's {}: {ray:?} r {radius}",
                            hit.distance
                        ));
                    }
                }
                None if graze(mine) => tally.borderline += 1,
                // The entry and exit were just checked against the exact f64 oracle and the
                // crossing is not grazing, so a miss here is parry's iterative shape cast
                // failing to converge (seen once in 5,000 sweeps, on a capsule).
                None => tally.parry_missed += 1,
            }
            // ... and any contact parry reports well before it must be a false one: the
            // swept sphere is not touching there.
            for &(toi, j) in theirs
                .iter()
                .take_while(|h| h.0 < hit.distance * 0.99 - 1.0e-3)
            {
                let sd = common::signed_distance(&targets[j].placed, ray.at(toi));
                if sd - f64::from(radius) > 1.0e-4 {
                    tally.parry_false_contacts += 1;
                } else {
                    tally.failures.push(format!(
                        "parry touches {:?} at {toi} (sd {sd}), before lagcomp's {}: {ray:?} \
                         r {radius}",
                        targets[j].placed, hit.distance
                    ));
                }
            }
            assert_eq!(hit.sample.time, time);
        }
    }
}

/// Sphere and box overlaps against parry's contact query, skipping pairs within 1e-4 of
/// touching (too close to call in f32).
#[test]
fn overlaps_match_parry() {
    let mut rng = rng(0x000b_e1a9);
    let (mut queries, mut found, mut borderline) = (0, 0, 0);
    let mut failures = Vec::new();
    for _ in 0..25 {
        let world = world(&mut rng);
        for _ in 0..8 {
            let (time, _) = world.random_time(&mut rng);
            let targets = world.placed_at(time);
            for _ in 0..20 {
                let aimed = &targets[rng.random_range(0..targets.len())].placed;
                let center = aimed.pose.translation + random_in_ball(&mut rng, 1.5);
                let mut query = world.history.query(RewindTarget::Time(time));
                let mut out = Vec::new();
                // The same volume for lagcomp and for parry.
                let (volume, pose): (Box<dyn PShape>, PPose) = if rng.random_bool(0.5) {
                    let radius = rng.random_range(0.0..1.0);
                    query
                        .overlap_sphere(center, radius, &mut out)
                        .expect("valid query");
                    (Box::new(Ball::new(radius)), PPose::from_translation(center))
                } else {
                    let half = Vec3::new(
                        rng.random_range(0.0..1.0),
                        rng.random_range(0.0..1.0),
                        rng.random_range(0.0..1.0),
                    );
                    let rotation = random_rotation(&mut rng);
                    query
                        .overlap_box(&Obb::new(center, rotation, half), &mut out)
                        .expect("valid query");
                    (
                        Box::new(Cuboid::new(half)),
                        PPose::from_parts(center, rotation),
                    )
                };
                queries += 1;
                found += out.len();
                for t in &targets {
                    let contact =
                        query::contact(&pose, &*volume, &t.parry.pose, &*t.parry.shape, 1.0e-3)
                            .expect("supported pair");
                    let ours = out
                        .iter()
                        .any(|o| world.entity_index(o.entity) == t.entity && o.hitbox == t.hitbox);
                    let theirs = match contact {
                        None => false,
                        Some(c) if c.dist.abs() < 1.0e-4 => {
                            borderline += 1;
                            continue;
                        }
                        Some(c) => c.dist < 0.0,
                    };
                    if ours != theirs {
                        failures.push(format!(
                            "overlap: lagcomp {ours}, parry {theirs} ({:?}) for {:?} against \
                             {:?} at {pose:?}",
                            contact.map(|c| c.dist),
                            t.placed,
                            volume.shape_type(),
                        ));
                    }
                }
            }
        }
    }
    println!(
        "overlap queries {queries}, overlaps found {found}, borderline pairs skipped {borderline}"
    );
    failures.truncate(20);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(found > queries, "found {found} in {queries}");
    assert!(borderline * 100 < queries);
}
