//! Culling never changes an answer: every query's result equals a brute-force pass that
//! places every hitbox of every entity at the target time and runs the exact test on it.
//!
//! The rays are aimed at points around a random hitbox's placed centre, from just inside
//! to just outside its bounding ball, so many of them graze the culls' spheres. The rig has
//! offset and rotated hitboxes, two hitboxes on one bone and a bare bone; some entities are
//! recorded with rotations as far from unit length as validation accepts (which stretches
//! the placed shapes the exact tests see), and one with scaled bones.

use std::sync::Arc;

use crate::support::{at, history, tick_time};
use lagcomp::{
    Axis, BoneTransform, EntityId, EntityState, History, Hit, Hitbox, Quat, Ray, RewindTarget, Rig,
    Shape, Tick, Vec3, WindowPolicy, Zone,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

const RATE: f64 = 64.0;
const BONES: usize = 6;

fn rig() -> Arc<Rig> {
    let tilt = Quat::from_rotation_z(0.4) * Quat::from_rotation_x(-0.2);
    let hitboxes = vec![
        Hitbox::new(
            0,
            "chest",
            Zone::Torso,
            0,
            Shape::cuboid(Vec3::new(0.2, 0.25, 0.12)),
        )
        .offset_by(Vec3::new(0.0, 0.3, 0.0))
        .rotated(tilt),
        Hitbox::new(
            1,
            "thigh",
            Zone::Limb,
            1,
            Shape::capsule(0.08, 0.17, Axis::Y),
        )
        .offset_by(Vec3::new(0.0, -0.25, 0.0)),
        Hitbox::new(2, "knee pad", Zone::Custom(3), 1, Shape::sphere(0.06))
            .offset_by(Vec3::new(0.1, -0.5, 0.05)),
        // Bone 2 carries nothing.
        Hitbox::new(3, "arm", Zone::Limb, 3, Shape::capsule(0.05, 0.14, Axis::X))
            .offset_by(Vec3::new(0.2, 0.0, 0.0))
            .rotated(Quat::from_rotation_y(0.3)),
        Hitbox::new(4, "head", Zone::Head, 4, Shape::sphere(0.11))
            .offset_by(Vec3::new(0.0, 0.15, 0.0)),
        Hitbox::new(
            5,
            "hand",
            Zone::Limb,
            5,
            Shape::cuboid(Vec3::new(0.05, 0.09, 0.03)),
        )
        .offset_by(Vec3::new(0.05, -0.1, 0.12)),
    ];
    Arc::new(Rig::new(BONES as u16, hitboxes).expect("valid rig"))
}

/// [`rig`] without the knee pad: no bone carries two hitboxes, which a trace's per-bone
/// loop takes a path of its own for.
fn rig_one_per_bone() -> Arc<Rig> {
    let hitboxes = rig()
        .hitboxes()
        .iter()
        .filter(|hb| hb.id.0 != 2)
        .cloned()
        .collect();
    Arc::new(Rig::new(BONES as u16, hitboxes).expect("valid rig"))
}

/// How an entity is recorded.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    /// Every rotation stored with a squared length of `1 + stretch`.
    Stretched(f32),
    /// Every bone scaled.
    Scaled,
}

/// The bones of entity `e` at `tick`: a body standing at its place, turning and swinging.
fn pose(e: usize, kind: Kind, tick: u32, out: &mut [BoneTransform]) {
    let t = tick as f32 / RATE as f32;
    let root = Vec3::new((e % 4) as f32 * 1.3, 0.0, (e / 4) as f32 * 1.1);
    let yaw = Quat::from_rotation_y(0.9 * e as f32 + 1.7 * t);
    let chain = [
        Vec3::new(0.0, 1.0, 0.0),
        Vec3::new(0.1, 0.9, 0.0),
        Vec3::new(-0.1, 0.9, 0.0),
        Vec3::new(0.2, 1.35, 0.0),
        Vec3::new(0.0, 1.55, 0.0),
        Vec3::new(0.45, 1.3, 0.05),
    ];
    for (k, (bone, offset)) in out.iter_mut().zip(chain).enumerate() {
        // Limbs swing fast enough that neighbouring frames often leave slerp's nlerp shortcut.
        let swing = Quat::from_rotation_x((11.0 * t + k as f32 * 0.9 + e as f32).sin() * 0.9);
        let mut rotation = yaw * swing;
        if let Kind::Stretched(stretch) = kind {
            let q = rotation.normalize() * (1.0 + stretch).sqrt();
            rotation = q;
        }
        *bone = BoneTransform::new(root + yaw * offset, rotation);
        if kind == Kind::Scaled {
            bone.scale = Vec3::new(1.0 + 0.1 * k as f32, 0.9, 1.2);
        }
    }
}

fn kind_of(e: usize) -> Kind {
    match e % 5 {
        1 => Kind::Stretched(1.9e-4),
        3 => Kind::Stretched(-1.9e-4),
        4 if e == 9 => Kind::Scaled,
        _ => Kind::Plain,
    }
}

fn scene() -> (History, Vec<EntityId>) {
    let mut h = history(RATE, 0.5);
    let (rig, single) = (rig(), rig_one_per_bone());
    let ids: Vec<EntityId> = (0..12)
        .map(|e| h.spawn(if e % 2 == 0 { &rig } else { &single }.clone()))
        .collect();
    let mut bones = vec![BoneTransform::IDENTITY; BONES];
    for tick in 0..40 {
        let mut frame = h
            .begin_frame(Tick(tick), tick_time(tick, RATE))
            .expect("increasing");
        for (e, &id) in ids.iter().enumerate() {
            pose(e, kind_of(e), tick, &mut bones);
            frame
                .record(id, &bones, EntityState::default())
                .expect("valid bones");
        }
    }
    (h, ids)
}

/// Every (distance, entity, hitbox) the ray or sweep touches, by brute force: each hitbox
/// placed at the target time, the exact test, clipped to the ray's reach.
fn brute_force(
    h: &History,
    ids: &[EntityId],
    target: RewindTarget,
    ray: &Ray,
    radius: f32,
) -> Vec<(f32, EntityId, u16)> {
    let mut out = Vec::new();
    for &id in ids {
        let Some(entity) = h
            .entity_at(id, target, WindowPolicy::Reject)
            .expect("known entity in the window")
        else {
            continue;
        };
        for hitbox in h.rig(id).expect("rig").hitboxes() {
            let placed = entity.hitbox(hitbox.id).expect("hitbox of the rig");
            if let Some(c) = placed
                .cast_sphere_line(ray.origin(), ray.dir(), radius)
                .and_then(|c| c.clip(ray.max_distance()))
            {
                out.push((c.enter.max(0.0), id, hitbox.id.0));
            }
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    out
}

fn key(hit: &Hit) -> (f32, EntityId, u16) {
    (hit.distance, hit.entity, hit.hitbox.0)
}

#[test]
fn culling_never_changes_an_answer() {
    let (h, ids) = scene();
    let mut rng = Pcg64::seed_from_u64(0x0c01_11a6);
    let (lo, hi) = h.window().expect("frames");
    let mut all = Vec::new();
    let (mut hits, mut misses, mut sweeps_hit) = (0, 0, 0);
    for shot in 0..3000 {
        // Half the shots exactly on a frame, half between frames.
        let time = if shot % 2 == 0 {
            tick_time(rng.random_range(20..40), RATE).clamp(lo, hi)
        } else {
            rng.random_range(lo..=hi)
        };
        let target = at(time);
        let e = rng.random_range(0..ids.len());
        let rig = h.rig(ids[e]).expect("rig").clone();
        let hitbox = &rig.hitboxes()[rng.random_range(0..rig.hitboxes().len())];
        let placed = h
            .entity_at(ids[e], target, WindowPolicy::Reject)
            .expect("in the window")
            .expect("recorded")
            .hitbox(hitbox.id)
            .expect("hitbox");
        let reach = placed.shape.bounding_radius();
        let towards = Vec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        )
        .normalize_or(Vec3::X);
        let aim = placed.pose.translation + towards * reach * rng.random_range(0.3..1.25);
        let dir = Vec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-0.4..0.4),
            rng.random_range(-1.0..1.0),
        )
        .normalize_or(Vec3::Z);
        let back = rng.random_range(0.5..30.0);
        let ray = Ray::new(
            aim - dir * back,
            dir,
            rng.random_range(back * 0.9..back + 5.0),
        )
        .expect("valid ray");
        let radius = if shot % 3 == 0 {
            rng.random_range(0.0..0.2)
        } else {
            0.0
        };

        let expected = brute_force(&h, &ids, target, &ray, radius);
        let trace = if radius > 0.0 {
            h.query(target).sweep(&ray, radius)
        } else {
            h.query(target).ray(&ray)
        }
        .expect("query resolves");
        assert_eq!(
            trace.hit.as_ref().map(key),
            expected.first().copied(),
            "shot {shot}: closest hit"
        );
        if radius > 0.0 {
            h.query(target).sweep_all(&ray, radius, &mut all)
        } else {
            h.query(target).ray_all(&ray, &mut all)
        }
        .expect("query resolves");
        let found: Vec<_> = all.iter().map(key).collect();
        assert_eq!(found, expected, "shot {shot}: every hit");
        match (expected.is_empty(), radius > 0.0) {
            (true, _) => misses += 1,
            (false, false) => hits += 1,
            (false, true) => sweeps_hit += 1,
        }
    }
    // Both outcomes are well represented (aiming up to a quarter beyond the bounding ball).
    assert!(
        hits > 500 && sweeps_hit > 300 && misses > 300,
        "{hits} {sweeps_hit} {misses}"
    );
}

/// A capsule recorded with a rotation whose squared length is `1 + 1.9e-4` (accepted) is
/// tested with its segment stretched by that much; a ray grazing the stretched end, beyond
/// the capsule's unit-length extent, must still hit it: every cull (the entity's bounds,
/// the bone's reach, the hitbox's ball) allows for the stretch.
#[test]
fn a_stretched_rotation_is_allowed_for_by_every_cull() {
    let rig = Arc::new(
        Rig::rigid(vec![Hitbox::new(
            0,
            "pole",
            Zone::Torso,
            0,
            Shape::capsule(0.01, 1.0, Axis::Y),
        )])
        .expect("valid rig"),
    );
    let mut h = history(RATE, 0.5);
    let e = h.spawn(rig);
    let stretched = Quat::IDENTITY * (1.0_f32 + 1.9e-4).sqrt();
    for tick in 0..3 {
        let mut frame = h
            .begin_frame(Tick(tick), tick_time(tick, RATE))
            .expect("increasing");
        frame
            .record_rigid(
                e,
                BoneTransform::new(Vec3::ZERO, stretched),
                EntityState::default(),
            )
            .expect("within the norm tolerance");
    }
    let target = at(tick_time(2, RATE));
    // The segment's end is at 1.00019 and the capsule reaches 1.01019; unit length would
    // put its top at 1.01.
    let placed = h
        .entity_at(e, target, WindowPolicy::Reject)
        .expect("in the window")
        .expect("recorded")
        .hitbox(lagcomp::HitboxId(0))
        .expect("hitbox");
    for y in [1.0101_f32, 1.0098, 1.01015] {
        let ray = Ray::new(Vec3::new(-5.0, y, 0.0), Vec3::X, 10.0).expect("valid ray");
        let exact = placed.cast_line(ray.origin(), ray.dir());
        assert!(exact.is_some(), "the exact test hits at y = {y}");
        let trace = h.query(target).ray(&ray).expect("query resolves");
        assert_eq!(trace.hit.map(|hit| hit.entity), Some(e), "y = {y}");
    }
    // Above the stretched top: nothing.
    let ray = Ray::new(Vec3::new(-5.0, 1.0103, 0.0), Vec3::X, 10.0).expect("valid ray");
    assert!(
        h.query(target)
            .ray(&ray)
            .expect("query resolves")
            .hit
            .is_none()
    );
}

/// Entities that spawn (into reused slots), despawn and walk across a 70 m arena, enough of
/// them (520) that the broadphase is a tree, rebuilt once a window and whenever entities
/// come or go, with the frames recorded before a rebuild kept under the older tree: rays
/// and sweeps at times between frames, on frames, and at tick pairs that skip frames
/// (across a rebuild too) give exactly the brute-force answers.
#[test]
fn culling_across_tree_rebuilds_never_changes_an_answer() {
    const MANY: usize = 520;
    let mut h = history(RATE, 0.5);
    let capacity = h.capacity() as u32;
    let rig = rig();
    // Every handle ever spawned (the brute force skips those no longer known), and the live
    // ones with the walker each one is.
    let mut ever: Vec<EntityId> = Vec::new();
    let mut live: Vec<(EntityId, usize)> = Vec::new();
    for walker in 0..MANY {
        let id = h.spawn(rig.clone());
        ever.push(id);
        live.push((id, walker));
    }
    let mut next_walker = MANY;
    let mut rng = Pcg64::seed_from_u64(0x2eb0_11d5);
    let mut bones = vec![BoneTransform::IDENTITY; BONES];
    let mut all = Vec::new();
    let (mut checked, mut hits, mut reused) = (0, 0, 0);
    for tick in 0..3 * capacity + 6 {
        // A spawn or a despawn every few ticks, on every tick for a stretch of the second
        // window (rebuilds while the older tree still answers).
        let busy = (capacity + 3..capacity + 9).contains(&tick);
        if tick > 0 && (busy || rng.random_range(0..6) == 0) {
            if rng.random_bool(0.5) {
                let k = rng.random_range(0..live.len());
                h.despawn(live.swap_remove(k).0).expect("live");
            } else {
                let id = h.spawn(rig.clone());
                reused += usize::from(id.generation() > 0);
                ever.push(id);
                live.push((id, next_walker));
                next_walker += 1;
            }
        }
        let mut frame = h
            .begin_frame(Tick(tick), tick_time(tick, RATE))
            .expect("increasing");
        for &(id, walker) in &live {
            pose(walker, Kind::Plain, tick, &mut bones);
            // Walkers cross the arena at up to 6 m/s, each its own way.
            let w = walker as f32;
            let drift = Vec3::new((w % 26.0) * 2.6, 0.0, (w / 26.0).floor() * 2.6)
                + Vec3::new((w * 1.3).sin(), 0.0, (w * 0.7).cos()) * 6.0 * tick as f32
                    / RATE as f32;
            for bone in &mut bones {
                bone.translation += drift;
            }
            frame
                .record(id, &bones, EntityState::default())
                .expect("valid bones");
        }
        drop(frame);
        if tick < capacity || tick % 3 != 0 {
            continue;
        }
        let (lo, hi) = h.window().expect("frames");
        let newest = tick;
        // The oldest tick inside the window (the ring holds a little more).
        let first = (lo * RATE).ceil() as u32;
        for shot in 0..12 {
            let target = match shot % 3 {
                0 => at(tick_time(rng.random_range(first..=newest), RATE)),
                1 => at(rng.random_range(lo..=hi)),
                _ => {
                    let from = rng.random_range(first..newest - 1);
                    RewindTarget::Ticks {
                        from: Tick(from),
                        to: Tick((from + rng.random_range(2..=4)).min(newest)),
                        fraction: rng.random_range(0.05..0.95),
                    }
                }
            };
            let (id, _) = live[rng.random_range(0..live.len())];
            let Some(entity) = h
                .entity_at(id, target, WindowPolicy::Reject)
                .expect("live entity in the window")
            else {
                continue;
            };
            let aim = entity
                .hitbox(lagcomp::HitboxId(rng.random_range(0..6)))
                .expect("hitbox")
                .pose
                .translation
                + Vec3::new(
                    rng.random_range(-0.3..0.3),
                    rng.random_range(-0.3..0.3),
                    rng.random_range(-0.3..0.3),
                );
            let dir = Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-0.3..0.3),
                rng.random_range(-1.0..1.0),
            )
            .normalize_or(Vec3::X);
            let back = rng.random_range(2.0..40.0);
            let ray = Ray::new(aim - dir * back, dir, back + 20.0).expect("valid ray");
            let radius = if shot % 2 == 0 { 0.0 } else { 0.15 };
            let known: Vec<EntityId> = ever
                .iter()
                .copied()
                .filter(|&e| h.entity_at(e, target, WindowPolicy::Reject).is_ok())
                .collect();
            let expected = brute_force(&h, &known, target, &ray, radius);
            let trace = h.query(target).sweep(&ray, radius).expect("query resolves");
            assert_eq!(
                trace.hit.as_ref().map(key),
                expected.first().copied(),
                "tick {tick} shot {shot}: closest hit"
            );
            h.query(target)
                .sweep_all(&ray, radius, &mut all)
                .expect("query resolves");
            let found: Vec<_> = all.iter().map(key).collect();
            assert_eq!(found, expected, "tick {tick} shot {shot}: every hit");
            checked += 1;
            hits += usize::from(!expected.is_empty());
        }
    }
    assert!(
        checked > 200 && hits > 100 && reused > 0,
        "{checked} {hits} {reused}"
    );
}
