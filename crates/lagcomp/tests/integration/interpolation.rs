//! History, time and interpolation: what a rewound query sees at a given moment.
//!
//! Exact frames come back bit for bit; blends are lerp/shortest-path slerp with the right
//! alpha; teleports are never blended across; the window edges, clamping, skipped ticks,
//! despawned and reused handles, per-frame flags and the mapping back to the present all
//! behave as documented; and everything is deterministic.

use std::sync::Arc;

use crate::support::{
    HUMANOID_BONES, at, box_rig, cube_rig, history, humanoid_pose, humanoid_rig, placed_bits,
    quat_bits, ray_at, record_rigid_frame, same_rotation, tick_time, vec_bits,
};
use lagcomp::{
    BoneTransform, BroadphaseDecision, EntityError, EntityId, EntityState, History, Hit, HitboxId,
    NearestReason, Obb, Quat, QueryError, QueryLog, Ray, RewindError, RewindTarget, Rig,
    SampleKind, Tick, Vec3, WindowPolicy, WindowSide,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

const RATE: f64 = 64.0;

/// The bone pose `box_rig` entities get at `tick` in the moving scene: an irregular path
/// and a turning, tilting orientation, so that no component has trivial bits.
fn moving_pose(tick: u32) -> BoneTransform {
    let t = tick as f32;
    BoneTransform::new(
        Vec3::new(0.37 * t + 0.013, 0.11 * t - 0.7, -0.3 + 0.017 * t * t),
        Quat::from_rotation_y(0.05 * t + 0.01) * Quat::from_rotation_x(0.03 * t),
    )
}

/// One `box_rig` entity recorded at `moving_pose` for ticks `0..ticks` at 64 Hz.
fn moving_scene(ticks: u32) -> (History, EntityId) {
    let mut h = history(RATE, 0.5);
    let e = h.spawn(box_rig());
    for tick in 0..ticks {
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        frame
            .record_rigid(e, moving_pose(tick), EntityState::default())
            .unwrap();
    }
    (h, e)
}

/// Shoots the body of entity `e` (along +z through `body_at`) at `target`; the hit must be
/// on `e`'s body box.
fn body_hit(h: &History, e: EntityId, target: RewindTarget, body_at: Vec3) -> Hit {
    let trace = h
        .query(target)
        .ray(&ray_at(body_at))
        .expect("query resolves");
    let hit = trace.hit.expect("the body is hit");
    assert_eq!(hit.entity, e);
    assert_eq!(hit.hitbox, HitboxId(0));
    hit
}

// --- (a) exact frames -------------------------------------------------------------------

#[test]
fn a_target_on_a_frame_returns_the_stored_pose_bit_for_bit() {
    let (h, e) = moving_scene(12);
    let rig = h.rig(e).unwrap().clone();
    for tick in 2..12 {
        let stored = moving_pose(tick);
        let time = tick_time(tick, RATE);
        let hit = body_hit(&h, e, at(time), stored.translation);
        assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(tick) });
        assert_eq!(hit.sample.time.to_bits(), time.to_bits());
        assert!(hit.sample.rewound());
        // The body has no offset: its placement is the stored bone pose itself.
        assert_eq!(
            vec_bits(hit.placement.pose.translation),
            vec_bits(stored.translation)
        );
        assert_eq!(
            quat_bits(hit.placement.pose.rotation),
            quat_bits(stored.rotation)
        );
        assert_eq!(
            placed_bits(&hit.placement),
            placed_bits(&rig.hitboxes()[0].placed(&stored))
        );
        assert_eq!(vec_bits(hit.bone_scale), vec_bits(Vec3::ONE));

        // The observer sees both hitboxes where they were, bit for bit.
        let mut log = QueryLog::default();
        h.query(at(time))
            .observe(&mut log)
            .ray(&ray_at(stored.translation))
            .unwrap();
        assert_eq!(log.samples.len(), 1);
        assert_eq!(
            log.samples[0].1.kind,
            SampleKind::Exact { tick: Tick(tick) }
        );
        assert_eq!(log.hitboxes.len(), 2, "both hitboxes tested");
        for tested in &log.hitboxes {
            assert_eq!(tested.entity, e);
            let hb = rig.hitbox(tested.hitbox.id).unwrap();
            assert_eq!(
                placed_bits(&tested.rewound),
                placed_bits(&hb.placed(&stored))
            );
            // And the present is the newest frame.
            let present = tested.present.expect("present frame");
            assert_eq!(
                placed_bits(&present),
                placed_bits(&hb.placed(&moving_pose(11)))
            );
        }

        // A held frame (from == to) is that frame too, whatever the fraction.
        for fraction in [0.0, 0.3, 1.0] {
            let held = body_hit(
                &h,
                e,
                RewindTarget::between(Tick(tick), Tick(tick), fraction),
                stored.translation,
            );
            assert_eq!(held.sample.kind, SampleKind::Exact { tick: Tick(tick) });
            assert_eq!(placed_bits(&held.placement), placed_bits(&hit.placement));
        }
    }
}

// --- (b) alpha 0 and 1 ------------------------------------------------------------------

#[test]
fn tick_fractions_zero_and_one_are_the_frames_exactly() {
    let (h, e) = moving_scene(12);
    for (from, to) in [(3, 4), (4, 5), (2, 7), (9, 11)] {
        let a = moving_pose(from);
        let b = moving_pose(to);
        let zero = body_hit(
            &h,
            e,
            RewindTarget::between(Tick(from), Tick(to), 0.0),
            a.translation,
        );
        assert_eq!(zero.sample.kind, SampleKind::Exact { tick: Tick(from) });
        assert_eq!(
            vec_bits(zero.placement.pose.translation),
            vec_bits(a.translation)
        );
        assert_eq!(
            quat_bits(zero.placement.pose.rotation),
            quat_bits(a.rotation)
        );
        assert_eq!(zero.sample.time.to_bits(), tick_time(from, RATE).to_bits());

        let one = body_hit(
            &h,
            e,
            RewindTarget::between(Tick(from), Tick(to), 1.0),
            b.translation,
        );
        assert_eq!(one.sample.kind, SampleKind::Exact { tick: Tick(to) });
        assert_eq!(
            vec_bits(one.placement.pose.translation),
            vec_bits(b.translation)
        );
        assert_eq!(
            quat_bits(one.placement.pose.rotation),
            quat_bits(b.rotation)
        );
        assert_eq!(one.sample.time.to_bits(), tick_time(to, RATE).to_bits());
    }
}

// --- (c) in between ---------------------------------------------------------------------

#[test]
fn in_between_times_are_interpolated_with_the_right_alpha() {
    let (h, e) = moving_scene(12);
    for tick in 3..10 {
        let (a, b) = (moving_pose(tick), moving_pose(tick + 1));
        let (t0, t1) = (tick_time(tick, RATE), tick_time(tick + 1, RATE));
        for f in [0.001_f64, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999] {
            let time = t0 + (t1 - t0) * f;
            let expected = a.translation * (1.0 - f as f32) + b.translation * f as f32;
            let hit = body_hit(&h, e, at(time), expected);
            let SampleKind::Interpolated { from, to, alpha } = hit.sample.kind else {
                panic!("{:?} at tick {tick} + {f}", hit.sample.kind);
            };
            assert_eq!((from, to), (Tick(tick), Tick(tick + 1)));
            assert!((f64::from(alpha) - f).abs() < 1e-6, "alpha {alpha} for {f}");
            assert_eq!(hit.sample.time.to_bits(), time.to_bits());
            let got = hit.placement.pose.translation;
            assert!(got.distance(expected) < 1e-5, "{got} vs {expected}");
            let rot = hit.placement.pose.rotation;
            assert!(same_rotation(
                rot,
                a.rotation.slerp(b.rotation, alpha),
                1e-6
            ));
            assert!(rot.is_normalized());
        }
        // The same blend named as a tick pair: alpha is the fraction itself.
        let hit = body_hit(
            &h,
            e,
            RewindTarget::between(Tick(tick), Tick(tick + 1), 0.25),
            a.translation.lerp(b.translation, 0.25),
        );
        assert_eq!(
            hit.sample.kind,
            SampleKind::Interpolated {
                from: Tick(tick),
                to: Tick(tick + 1),
                alpha: 0.25
            }
        );
        assert_eq!(hit.sample.time, t0 + (t1 - t0) * 0.25);
        let expected = a.translation * 0.75 + b.translation * 0.25;
        assert!(hit.placement.pose.translation.distance(expected) < 1e-5);
    }
}

// --- (d) shortest-path slerp ------------------------------------------------------------

#[test]
fn rotations_are_slerped_the_short_way() {
    // (older rotation, newer rotation as recorded, the true midpoint rotation)
    let cases = [
        // The newer rotation written in the opposite hemisphere: -q is the same rotation.
        (
            Quat::from_rotation_y(0.2),
            -Quat::from_rotation_y(1.4),
            Quat::from_rotation_y(0.8),
        ),
        // 2*pi - 0.2 about y is -0.2 about y, written the long way round.
        (
            Quat::from_rotation_y(0.2),
            Quat::from_rotation_y(std::f32::consts::TAU - 0.2),
            Quat::IDENTITY,
        ),
        // A small turn (the nlerp path) also flipped.
        (
            Quat::from_rotation_z(0.5),
            -Quat::from_rotation_z(0.52),
            Quat::from_rotation_z(0.51),
        ),
    ];
    for (q0, q1, mid) in cases {
        assert!(q0.dot(q1) < 0.0, "the case must cross hemispheres");
        let mut h = history(RATE, 0.5);
        let e = h.spawn(cube_rig());
        for (tick, q) in [(0, q0), (1, q1)] {
            let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
            frame
                .record_rigid(e, BoneTransform::new(Vec3::ZERO, q), EntityState::default())
                .unwrap();
        }
        let hit = body_hit(
            &h,
            e,
            RewindTarget::between(Tick(0), Tick(1), 0.5),
            Vec3::ZERO,
        );
        let rot = hit.placement.pose.rotation;
        assert!(same_rotation(rot, mid, 1e-5), "{rot:?} vs {mid:?}");
        // Geometrically too: the box's x axis points where the short-way midpoint puts it.
        assert!((rot * Vec3::X).distance(mid * Vec3::X) < 1e-3);
        assert!((rot * Vec3::Z).distance(mid * Vec3::Z) < 1e-3);
        // Every step of the way stays on the short arc: the angle to q0 grows linearly.
        let total = q0.angle_between(q1);
        for i in 1..10 {
            let f = i as f32 / 10.0;
            let hit = body_hit(
                &h,
                e,
                RewindTarget::between(Tick(0), Tick(1), f),
                Vec3::ZERO,
            );
            let angle = q0.angle_between(hit.placement.pose.rotation);
            assert!(
                (angle - total * f).abs() < 5e-3,
                "step {f}: {angle} vs {}",
                total * f
            );
        }
    }
}

// --- (e) teleports ------------------------------------------------------------------------

#[test]
fn nothing_is_interpolated_across_a_teleport() {
    let mut h = history(RATE, 0.5);
    let e = h.spawn(cube_rig());
    let before = Vec3::ZERO;
    let after = Vec3::new(10.0, 0.0, 0.0);
    let teleported = EntityState {
        teleported: true,
        ..EntityState::default()
    };
    for tick in 0..6 {
        let (pos, state) = match tick {
            0..=2 => (before, EntityState::default()),
            3 => (after, teleported),
            _ => (after, EntityState::default()),
        };
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        frame
            .record_rigid(e, BoneTransform::from_translation(pos), state)
            .unwrap();
    }
    let (t2, t3) = (tick_time(2, RATE), tick_time(3, RATE));
    for i in 1..20 {
        let f = f64::from(i) / 20.0;
        let mut log = QueryLog::default();
        // A wide sweep that would touch the cube wherever it was between the frames.
        let ray = Ray::new(Vec3::new(-5.0, 0.0, 0.0), Vec3::X, 30.0).unwrap();
        let trace = h
            .query(at(t2 + (t3 - t2) * f))
            .observe(&mut log)
            .ray(&ray)
            .unwrap();
        let hit = trace.hit.expect("the cube is somewhere on the line");
        let (tick, pos) = if f < 0.5 { (2, before) } else { (3, after) };
        assert_eq!(
            hit.sample.kind,
            SampleKind::Nearest {
                tick: Tick(tick),
                reason: NearestReason::Teleport
            },
            "fraction {f}"
        );
        assert_eq!(vec_bits(hit.placement.pose.translation), vec_bits(pos));
        for tested in &log.hitboxes {
            let x = tested.rewound.pose.translation.x;
            assert!(x == before.x || x == after.x, "blended to x = {x}");
        }
        // A shot at the midpoint never hits anything.
        let mid = h
            .query(at(t2 + (t3 - t2) * f))
            .ray(&ray_at(Vec3::new(5.0, 0.0, 0.0)))
            .unwrap();
        assert!(mid.hit.is_none(), "hit in between at fraction {f}");
    }
    // Tick-pair targets too, including pairs that span the teleport with frames between.
    for (from, to, fraction, tick) in [
        (2, 3, 0.5, 3),
        (2, 3, 0.49, 2),
        (1, 4, 0.3, 1),
        (0, 5, 0.6, 5),
    ] {
        let hit = h
            .query(RewindTarget::between(Tick(from), Tick(to), fraction))
            .ray(&Ray::new(Vec3::new(-5.0, 0.0, 0.0), Vec3::X, 30.0).unwrap())
            .unwrap()
            .hit
            .unwrap();
        assert_eq!(
            hit.sample.kind,
            SampleKind::Nearest {
                tick: Tick(tick),
                reason: NearestReason::Teleport
            }
        );
    }
    // On either side of the jump, blending is normal again.
    let hit = body_hit(&h, e, RewindTarget::between(Tick(3), Tick(4), 0.5), after);
    assert!(matches!(hit.sample.kind, SampleKind::Interpolated { .. }));
    let hit = body_hit(&h, e, RewindTarget::between(Tick(1), Tick(2), 0.5), before);
    assert!(matches!(hit.sample.kind, SampleKind::Interpolated { .. }));
}

#[test]
fn an_entity_appearing_with_a_teleport_did_not_exist_before() {
    let mut h = history(RATE, 0.5);
    let other = h.spawn(cube_rig());
    let e = h.spawn(cube_rig());
    let spawn_at = Vec3::new(3.0, 0.0, 0.0);
    for tick in 0..4_u32 {
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        frame
            .record_rigid(
                other,
                BoneTransform::from_translation(Vec3::new(-3.0, 0.0, 0.0)),
                EntityState::default(),
            )
            .unwrap();
        if tick >= 2 {
            let state = EntityState {
                teleported: tick == 2,
                ..EntityState::default()
            };
            frame
                .record_rigid(e, BoneTransform::from_translation(spawn_at), state)
                .unwrap();
        }
    }
    let (t1, t2) = (tick_time(1, RATE), tick_time(2, RATE));
    let trace = h
        .query(at(t1 + (t2 - t1) * 0.9))
        .ray(&ray_at(spawn_at))
        .unwrap();
    assert!(
        trace.hit.is_none(),
        "hit before it spawned: {:?}",
        trace.hit
    );
    let hit = body_hit(&h, e, at(t2), spawn_at);
    assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(2) });
}

#[test]
fn an_entity_is_never_pulled_back_before_its_first_frame() {
    // Spawned and first recorded at tick 2 without a teleport flag: between ticks 1 and 2
    // it did not exist yet, so nothing is there to hit.
    let mut h = history(RATE, 0.5);
    let other = h.spawn(cube_rig());
    let e = h.spawn(cube_rig());
    let spawn_at = Vec3::new(3.0, 0.0, 0.0);
    let away = Vec3::new(-3.0, 0.0, 0.0);
    for tick in 0..2_u32 {
        record_rigid_frame(&mut h, tick, tick_time(tick, RATE), &[(other, away)]);
    }
    record_rigid_frame(
        &mut h,
        2,
        tick_time(2, RATE),
        &[(other, away), (e, spawn_at)],
    );
    let (t1, t2) = (tick_time(1, RATE), tick_time(2, RATE));
    let before = h
        .query(at(t1 + (t2 - t1) * 0.9))
        .ray(&ray_at(spawn_at))
        .unwrap();
    assert!(
        before.hit.is_none(),
        "hit before its first frame: {:?}",
        before.hit
    );
    // A gap later in its life is still bridged by the nearest frame.
    record_rigid_frame(&mut h, 3, tick_time(3, RATE), &[(other, away)]);
    record_rigid_frame(
        &mut h,
        4,
        tick_time(4, RATE),
        &[(other, away), (e, spawn_at)],
    );
    let (t3, t4) = (tick_time(3, RATE), tick_time(4, RATE));
    let hit = body_hit(&h, e, at(t3 + (t4 - t3) * 0.5), spawn_at);
    assert_eq!(
        hit.sample.kind,
        SampleKind::Nearest {
            tick: Tick(4),
            reason: NearestReason::MissingNeighbour
        }
    );
}

#[test]
fn a_never_issued_generation_of_a_free_slot_is_unknown_not_stale() {
    let mut h = history(RATE, 0.5);
    let e = h.spawn(cube_rig());
    h.despawn(e).unwrap();
    // Despawned before any frame: freed at once, generation bumped to 1.
    assert_eq!(h.rig(e).unwrap_err(), EntityError::Stale(e));
    let next = EntityId::from_bits(1 << 32);
    assert_eq!(h.rig(next).unwrap_err(), EntityError::Unknown(next));
    // Spawning hands out exactly that handle.
    assert_eq!(h.spawn(cube_rig()), next);
}

// --- (f) window edges -----------------------------------------------------------------------

#[test]
fn window_edges_resolve_reject_and_clamp() {
    let max_rewind = 0.25;
    let mut h = history(RATE, max_rewind);
    // ceil(0.25 * 64 * 1.1) + 2
    assert_eq!(h.capacity(), 20);
    let e = h.spawn(cube_rig());
    let x = |tick: u32| Vec3::new(tick as f32, 0.0, 0.0);
    for tick in 0..40 {
        record_rigid_frame(&mut h, tick, tick_time(tick, RATE), &[(e, x(tick))]);
    }
    let newest = tick_time(39, RATE);
    let oldest = newest - max_rewind;
    assert_eq!(
        oldest,
        tick_time(23, RATE),
        "the window edge falls on tick 23"
    );
    assert_eq!(h.window(), Some((oldest, newest)));
    assert_eq!(
        h.span().map(|(o, n)| (o.0, n.0)),
        Some((Tick(20), Tick(39)))
    );

    // The oldest valid time resolves, exactly on its frame.
    let hit = body_hit(&h, e, at(oldest), x(23));
    assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(23) });
    assert_eq!(h.resolve(at(oldest), WindowPolicy::Reject), Ok(oldest));
    let hit = body_hit(&h, e, RewindTarget::latency(newest, max_rewind), x(23));
    assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(23) });

    // Slightly older: rejected with the numbers.
    let too_old = oldest - 1e-9;
    let expected = RewindError::OutOfWindow {
        requested: too_old,
        oldest,
        newest,
        side: WindowSide::TooOld,
    };
    assert_eq!(
        h.query(at(too_old)).ray(&ray_at(x(23))),
        Err(QueryError::Rewind(expected))
    );
    assert_eq!(h.resolve(at(too_old), WindowPolicy::Reject), Err(expected));
    // Even though tick 22 is still held in the ring, a blend reaching before the window
    // is refused.
    assert_eq!(h.time_of(Tick(22)), Some(tick_time(22, RATE)));
    assert!(matches!(
        h.query(RewindTarget::between(Tick(22), Tick(23), 0.5))
            .ray(&ray_at(x(23))),
        Err(QueryError::Rewind(RewindError::OutOfWindow {
            side: WindowSide::TooOld,
            ..
        }))
    ));

    // Newer than the newest frame: never extrapolated.
    let too_new = newest + 1e-9;
    assert_eq!(
        h.query(at(too_new)).ray(&ray_at(x(39))),
        Err(QueryError::Rewind(RewindError::OutOfWindow {
            requested: too_new,
            oldest,
            newest,
            side: WindowSide::TooNew,
        }))
    );
    assert!(matches!(
        h.resolve(RewindTarget::latency(newest, -0.0), WindowPolicy::Reject),
        Ok(t) if t == newest
    ));

    // Clamp moves to the edge and says so.
    for (requested, edge, tick) in [
        (too_old, oldest, 23),
        (0.0, oldest, 23),
        (too_new, newest, 39),
        (1e6, newest, 39),
    ] {
        let trace = h
            .query(at(requested))
            .window_policy(WindowPolicy::Clamp)
            .ray(&ray_at(x(tick)))
            .unwrap();
        assert!(trace.rewind.clamped);
        assert_eq!(trace.rewind.requested, requested);
        assert_eq!(trace.rewind.time, edge);
        assert_eq!((trace.rewind.oldest, trace.rewind.newest), (oldest, newest));
        let hit = trace.hit.expect("the cube at the edge");
        assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(tick) });
        assert_eq!(hit.sample.time, edge);
        assert_eq!(h.resolve(at(requested), WindowPolicy::Clamp), Ok(edge));
    }
    // Inside the window, Clamp changes nothing.
    let inside = h
        .query(at(tick_time(30, RATE)))
        .window_policy(WindowPolicy::Clamp)
        .ray(&ray_at(x(30)))
        .unwrap();
    assert!(!inside.rewind.clamped);
    assert_eq!(inside.rewind.time, inside.rewind.requested);

    // A tick that aged out of the ring is unknown, whatever the policy.
    assert_eq!(h.time_of(Tick(19)), None);
    assert_eq!(
        h.resolve(
            RewindTarget::between(Tick(19), Tick(25), 0.9),
            WindowPolicy::Clamp
        ),
        Err(RewindError::UnknownTick(Tick(19)))
    );
    for (from, to) in [(5, 6), (19, 30), (30, 45)] {
        let missing = if from < 20 { from } else { to };
        assert_eq!(
            h.query(RewindTarget::between(Tick(from), Tick(to), 0.5))
                .ray(&ray_at(x(30))),
            Err(QueryError::Rewind(RewindError::UnknownTick(Tick(missing))))
        );
    }
}

#[test]
fn the_window_shrinks_to_the_ring_when_ticks_come_too_fast() {
    // Configured for 64 Hz but ticking at 80 Hz: the ring (20 frames) covers less than
    // the 0.25 s window, and the oldest frame becomes the edge.
    let mut h = history(RATE, 0.25);
    let e = h.spawn(cube_rig());
    for tick in 0..60 {
        record_rigid_frame(&mut h, tick, tick_time(tick, 80.0), &[(e, Vec3::ZERO)]);
    }
    let newest = tick_time(59, 80.0);
    let oldest_frame = tick_time(40, 80.0);
    assert!(newest - 0.25 < oldest_frame);
    assert_eq!(h.window(), Some((oldest_frame, newest)));
    assert_eq!(
        h.resolve(at(newest - 0.25), WindowPolicy::Reject),
        Err(RewindError::OutOfWindow {
            requested: newest - 0.25,
            oldest: oldest_frame,
            newest,
            side: WindowSide::TooOld
        })
    );
    let hit = body_hit(&h, e, at(oldest_frame), Vec3::ZERO);
    assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(40) });
}

#[test]
fn an_empty_history_refuses_every_target() {
    let h = history(RATE, 0.5);
    for target in [
        at(0.0),
        RewindTarget::latency(1.0, 0.1),
        RewindTarget::between(Tick(0), Tick(0), 0.0),
    ] {
        assert_eq!(
            h.resolve(target, WindowPolicy::Clamp),
            Err(RewindError::Empty)
        );
        assert_eq!(
            h.query(target).ray(&ray_at(Vec3::ZERO)),
            Err(QueryError::Rewind(RewindError::Empty))
        );
    }
}

// --- (g) skipped ticks and uneven tick lengths ---------------------------------------------

/// Ticks 0, 1, 3, 4, 7 at uneven times, the cube at a different place in each.
fn skipping_scene() -> (History, EntityId, [(u32, f64, Vec3); 5]) {
    let frames = [
        (0, 100.0, Vec3::new(0.0, 0.0, 0.0)),
        (1, 100.0161, Vec3::new(1.0, 0.2, 0.0)),
        (3, 100.0489, Vec3::new(3.5, -0.1, 0.3)),
        (4, 100.0640, Vec3::new(4.0, 0.4, -0.2)),
        (7, 100.1101, Vec3::new(8.0, 0.0, 0.0)),
    ];
    let mut h = history(RATE, 0.5);
    let e = h.spawn(cube_rig());
    for &(tick, time, pos) in &frames {
        record_rigid_frame(&mut h, tick, time, &[(e, pos)]);
    }
    (h, e, frames)
}

#[test]
fn skipped_ticks_and_uneven_tick_lengths_resolve_correctly() {
    let (h, e, frames) = skipping_scene();
    for &(tick, time, pos) in &frames {
        let hit = body_hit(&h, e, at(time), pos);
        assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(tick) });
        assert_eq!(vec_bits(hit.placement.pose.translation), vec_bits(pos));
        assert_eq!(h.time_of(Tick(tick)), Some(time));
    }
    for pair in frames.windows(2) {
        let ((ta, t0, p0), (tb, t1, p1)) = (pair[0], pair[1]);
        for f in [0.2, 0.5, 0.8] {
            let time = t0 + (t1 - t0) * f;
            let expected = p0.lerp(p1, f as f32);
            let hit = body_hit(&h, e, at(time), expected);
            let SampleKind::Interpolated { from, to, alpha } = hit.sample.kind else {
                panic!("{:?}", hit.sample.kind);
            };
            assert_eq!((from, to), (Tick(ta), Tick(tb)));
            assert!((f64::from(alpha) - f).abs() < 1e-5, "{alpha} vs {f}");
            assert!(hit.placement.pose.translation.distance(expected) < 1e-4);
        }
    }

    // Tick 1 to tick 3 (2 was never recorded), a quarter of the way.
    let (t1, p1, t3, p3) = (frames[1].1, frames[1].2, frames[2].1, frames[2].2);
    let expected = p1 * 0.75 + p3 * 0.25;
    let hit = body_hit(
        &h,
        e,
        RewindTarget::between(Tick(1), Tick(3), 0.25),
        expected,
    );
    assert_eq!(
        hit.sample.kind,
        SampleKind::Interpolated {
            from: Tick(1),
            to: Tick(3),
            alpha: 0.25
        }
    );
    assert_eq!(hit.sample.time, t1 + (t3 - t1) * 0.25);
    assert!(hit.placement.pose.translation.distance(expected) < 1e-6);

    // Tick 1 to tick 4 blends those two frames directly, skipping frame 3 between them:
    // what the client drew, not what the server had at that time.
    let p4 = frames[3].2;
    let expected = p1.lerp(p4, 0.5);
    let hit = body_hit(
        &h,
        e,
        RewindTarget::between(Tick(1), Tick(4), 0.5),
        expected,
    );
    assert_eq!(
        hit.sample.kind,
        SampleKind::Interpolated {
            from: Tick(1),
            to: Tick(4),
            alpha: 0.5
        }
    );
    assert!(hit.placement.pose.translation.distance(expected) < 1e-6);
    assert!(hit.placement.pose.translation.distance(p3) > 0.5);

    // Ticks never recorded are unknown, even inside the span.
    for missing in [2, 5, 6, 8] {
        assert_eq!(
            h.resolve(
                RewindTarget::between(Tick(1), Tick(missing), 0.5),
                WindowPolicy::Reject
            ),
            Err(RewindError::UnknownTick(Tick(missing)))
        );
        assert_eq!(h.time_of(Tick(missing)), None);
    }
}

/// Regression: at 04302cf `between(Tick(3), Tick(9), 1.0)` with tick 9 the newest was
/// refused as `TooNew`, because 0.15 + (0.45 - 0.15) * 1.0 rounds to 0.45000000000000007.
#[test]
fn a_tick_fraction_of_one_towards_the_newest_frame_is_that_frame() {
    // Times are tick / 20: tick 3 at 0.15 s, tick 9 (the newest) at 0.45 s. The blend
    // t3 + (t9 - t3) * 1.0 must land on t9.
    let mut h = history(20.0, 1.0);
    let e = h.spawn(cube_rig());
    for tick in 0..=9 {
        record_rigid_frame(&mut h, tick, tick_time(tick, 20.0), &[(e, Vec3::ZERO)]);
    }
    for from in 0..=9 {
        let target = RewindTarget::between(Tick(from), Tick(9), 1.0);
        let trace = h.query(target).ray(&ray_at(Vec3::ZERO));
        let hit = trace
            .unwrap_or_else(|err| panic!("between(Tick({from}), Tick(9), 1.0): {err}"))
            .hit
            .unwrap();
        assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(9) });
    }
}

// --- (h) despawned, then queried --------------------------------------------------------------

#[test]
fn a_despawned_entity_is_hit_in_its_past_until_it_ages_out() {
    let mut h = history(RATE, 0.25);
    let capacity = h.capacity() as u32;
    let keep = h.spawn(cube_rig());
    let gone = h.spawn(cube_rig());
    let keep_at = Vec3::new(-5.0, 0.0, 0.0);
    let gone_at = |tick: u32| Vec3::new(2.0 + tick as f32 * 0.01, 0.0, 0.0);
    let despawn_tick = 30;
    for tick in 0..despawn_tick {
        record_rigid_frame(
            &mut h,
            tick,
            tick_time(tick, RATE),
            &[(keep, keep_at), (gone, gone_at(tick))],
        );
    }
    h.despawn(gone).unwrap();
    assert!(!h.is_active(gone));
    assert_eq!(h.despawn(gone), Err(EntityError::Despawned(gone)));
    {
        let mut frame = h
            .begin_frame(Tick(despawn_tick), tick_time(despawn_tick, RATE))
            .unwrap();
        assert_eq!(
            frame.record_rigid(gone, BoneTransform::IDENTITY, EntityState::default()),
            Err(lagcomp::RecordError::Entity(EntityError::Despawned(gone)))
        );
        frame
            .record_rigid(
                keep,
                BoneTransform::from_translation(keep_at),
                EntityState::default(),
            )
            .unwrap();
    }
    let last = despawn_tick - 1;
    let mut stale_from = None;
    for tick in despawn_tick + 1..despawn_tick + 2 * capacity {
        // State at the start of this step.
        let (lo, hi) = h.window().unwrap();
        let last_time = tick_time(last, RATE);
        match h.rig(gone) {
            Ok(_) => {
                assert!(stale_from.is_none(), "stale, then known again");
                assert_eq!(
                    h.present_placement(gone, HitboxId(0)).is_ok(),
                    h.time_of(Tick(last)).is_some()
                );
                // Every queryable time up to its last frame still hits it where it was.
                for past in (0..=last).filter(|&t| tick_time(t, RATE) >= lo) {
                    let hit = body_hit(&h, gone, at(tick_time(past, RATE)), gone_at(past));
                    assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(past) });
                }
                // Between its last frame and the next it is held at the last frame.
                if last_time >= lo {
                    let next = tick_time(despawn_tick, RATE);
                    let hit = body_hit(&h, gone, at((last_time + next) / 2.0), gone_at(last));
                    assert_eq!(
                        hit.sample.kind,
                        SampleKind::Nearest {
                            tick: Tick(last),
                            reason: NearestReason::MissingNeighbour
                        }
                    );
                }
            }
            Err(err) => {
                assert_eq!(err, EntityError::Stale(gone));
                stale_from.get_or_insert(tick);
                assert_eq!(h.time_of(Tick(last)), None, "stale while its frame is held");
                assert_eq!(h.despawn(gone), Err(EntityError::Stale(gone)));
                assert_eq!(h.present_state(gone), Err(EntityError::Stale(gone)));
                assert!(matches!(
                    h.present_placement(gone, HitboxId(0)),
                    Err(QueryError::Entity(EntityError::Stale(_)))
                ));
            }
        }
        // After its last frame it is never hit, and once stale it is not even reported.
        for t in [lo, (lo + hi) / 2.0, hi] {
            let mut log = QueryLog::default();
            let trace = h
                .query(at(t))
                .observe(&mut log)
                .ray(&Ray::new(Vec3::new(-10.0, 0.0, 0.0), Vec3::X, 50.0).unwrap())
                .unwrap();
            let mut hits = Vec::new();
            h.query(at(t))
                .ray_all(
                    &Ray::new(Vec3::new(-10.0, 0.0, 0.0), Vec3::X, 50.0).unwrap(),
                    &mut hits,
                )
                .unwrap();
            if t > tick_time(despawn_tick, RATE) || h.rig(gone).is_err() {
                assert!(
                    hits.iter().all(|hit| hit.entity != gone),
                    "hit after despawn at {t}"
                );
            }
            if h.rig(gone).is_err() {
                assert_eq!(log.decision(gone), None);
                assert_eq!(trace.hit.map(|hit| hit.entity), Some(keep));
            }
        }
        record_rigid_frame(&mut h, tick, tick_time(tick, RATE), &[(keep, keep_at)]);
    }
    // It goes stale exactly when its last frame leaves the ring.
    assert_eq!(stale_from, Some(last + capacity + 1));
    assert_eq!(h.entity_count(), 1);
}

// --- (i) reused handles -----------------------------------------------------------------------

#[test]
fn a_reused_slot_never_shows_the_old_entity_history() {
    let mut h = history(RATE, 0.25);
    let capacity = h.capacity() as u32;
    let keep = h.spawn(cube_rig());
    let old = h.spawn(cube_rig());
    let old_at = Vec3::new(3.0, 0.0, 0.0);
    let keep_at = Vec3::new(-3.0, 0.0, 0.0);
    let mut tick = 0;
    for _ in 0..10 {
        record_rigid_frame(
            &mut h,
            tick,
            tick_time(tick, RATE),
            &[(keep, keep_at), (old, old_at)],
        );
        tick += 1;
    }
    h.despawn(old).unwrap();
    // While its history is held, a new spawn takes a new slot.
    let other = h.spawn(cube_rig());
    assert_ne!(other.index(), old.index());
    h.despawn(other).unwrap(); // never recorded: freed at once
    assert_eq!(h.rig(other), Err(EntityError::Stale(other)));
    let other_again = h.spawn(cube_rig());
    assert_eq!(other_again.index(), other.index());
    assert_eq!(other_again.generation(), other.generation() + 1);
    h.despawn(other_again).unwrap();

    while h.rig(old).is_ok() {
        record_rigid_frame(&mut h, tick, tick_time(tick, RATE), &[(keep, keep_at)]);
        tick += 1;
    }
    assert!(tick <= 10 + capacity + 1);
    assert_eq!(h.rig(old), Err(EntityError::Stale(old)));

    // The new entity (a different rig: a bigger cube) reuses the slot, and stands exactly
    // where the old one stood.
    let big = Arc::new(
        Rig::rigid(vec![lagcomp::Hitbox::new(
            7,
            "big",
            lagcomp::Zone::Custom(3),
            0,
            lagcomp::Shape::cuboid(Vec3::splat(0.8)),
        )])
        .unwrap(),
    );
    let spawned_at_tick = tick;
    let new = loop {
        let id = h.spawn(big.clone());
        if id.index() == old.index() {
            break id;
        }
    };
    assert!(new.generation() > old.generation());
    assert_eq!(EntityId::from_bits(old.to_bits()), old);
    assert_eq!(h.rig(old), Err(EntityError::Stale(old)));
    assert_eq!(h.present_state(old), Err(EntityError::Stale(old)));
    assert!(Arc::ptr_eq(h.rig(new).unwrap(), &big));
    assert_eq!(h.present_state(new), Err(EntityError::NoFrames(new)));
    for _ in 0..5 {
        record_rigid_frame(
            &mut h,
            tick,
            tick_time(tick, RATE),
            &[(keep, keep_at), (new, old_at)],
        );
        tick += 1;
    }
    let (lo, hi) = h.window().unwrap();
    let first_new = tick_time(spawned_at_tick, RATE);
    // Between the frame before its first and its first, it is held at its first frame (a
    // spawn without the teleport flag); before that it did not exist.
    let before_first = tick_time(spawned_at_tick - 1, RATE);
    let mut steps = 0;
    let mut time = lo;
    while time <= hi {
        let mut hits = Vec::new();
        let mut log = QueryLog::default();
        h.query(at(time))
            .observe(&mut log)
            .ray_all(&ray_at(old_at), &mut hits)
            .unwrap();
        assert!(hits.iter().all(|hit| hit.entity != old));
        assert_eq!(log.decision(old), None, "the old handle is never reported");
        if time <= before_first {
            assert!(
                hits.is_empty(),
                "hit before the new entity was recorded: {hits:?}"
            );
            assert_eq!(log.decision(new), Some(BroadphaseDecision::Absent));
        } else if time < first_new {
            assert!(hits.iter().all(|hit| hit.entity == new));
        } else {
            assert_eq!(hits.len(), 1);
            assert_eq!(hits[0].entity, new);
            assert_eq!(hits[0].hitbox, HitboxId(7));
            assert_eq!(hits[0].zone, lagcomp::Zone::Custom(3));
        }
        time += 1.0 / 256.0;
        steps += 1;
    }
    assert!(steps > 50);
}

// --- (j) lag compensation off ---------------------------------------------------------------

#[test]
fn without_lag_compensation_the_present_pose_is_used() {
    let mut h = history(RATE, 0.5);
    let e = h.spawn(cube_rig());
    let pos = |tick: u32| Vec3::new(tick as f32 * 0.5, 0.0, 0.0);
    for tick in 0..12 {
        let state = EntityState {
            // Dodging during ticks 4..=6 only.
            lag_compensated: !(4..=6).contains(&tick),
            user: tick as u16,
            ..EntityState::default()
        };
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        frame
            .record_rigid(e, BoneTransform::from_translation(pos(tick)), state)
            .unwrap();
    }
    let now = pos(11);
    for tick in 4..=6 {
        // Where it was, it is not hit; where it is now, it is.
        let then = h
            .query(at(tick_time(tick, RATE)))
            .ray(&ray_at(pos(tick)))
            .unwrap();
        assert!(then.hit.is_none());
        let hit = body_hit(&h, e, at(tick_time(tick, RATE)), now);
        assert_eq!(hit.sample.kind, SampleKind::Present { tick: Tick(11) });
        assert!(!hit.sample.rewound());
        assert_eq!(vec_bits(hit.placement.pose.translation), vec_bits(now));
        // The state is the one it had at the target time.
        assert!(!hit.state.lag_compensated);
        assert_eq!(hit.state.user, tick as u16);
        assert_eq!(hit.sample.time, tick_time(tick, RATE));
    }
    // Blends take the older frame's state: 3.5 is compensated, 6.5 is not.
    let hit = body_hit(
        &h,
        e,
        RewindTarget::between(Tick(3), Tick(4), 0.5),
        pos(3).lerp(pos(4), 0.5),
    );
    assert!(matches!(hit.sample.kind, SampleKind::Interpolated { .. }));
    let hit = body_hit(&h, e, RewindTarget::between(Tick(6), Tick(7), 0.5), now);
    assert_eq!(hit.sample.kind, SampleKind::Present { tick: Tick(11) });
    // Compensated times are rewound as usual.
    let hit = body_hit(&h, e, at(tick_time(8, RATE)), pos(8));
    assert_eq!(hit.sample.kind, SampleKind::Exact { tick: Tick(8) });
}

// --- (k) flags as of the rewound time --------------------------------------------------------

#[test]
fn alive_and_layers_are_read_at_the_rewound_time() {
    let mut h = history(RATE, 0.5);
    let e = h.spawn(cube_rig());
    let at_origin = BoneTransform::IDENTITY;
    for tick in 0..12_u32 {
        let state = EntityState {
            // Dead during 3..=5 and again from 9 on (dead now).
            alive: !((3..=5).contains(&tick) || tick >= 9),
            // Layer 2 during 6..=7, layer 1 otherwise.
            layers: if (6..=7).contains(&tick) { 2 } else { 1 },
            ..EntityState::default()
        };
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        frame.record_rigid(e, at_origin, state).unwrap();
    }
    assert!(!h.present_state(e).unwrap().alive);
    let shoot = |target: RewindTarget, mask: u32| {
        let mut log = QueryLog::default();
        let trace = h
            .query(target)
            .layers(mask)
            .observe(&mut log)
            .ray(&ray_at(Vec3::ZERO))
            .unwrap();
        let plain = h
            .query(target)
            .layers(mask)
            .ray(&ray_at(Vec3::ZERO))
            .unwrap();
        assert_eq!(plain, trace, "observed and plain queries agree");
        (trace.hit, log.decision(e))
    };
    let t = |tick| at(tick_time(tick, RATE));
    // Alive then, dead now: hit.
    let (hit, decision) = shoot(t(1), u32::MAX);
    assert!(hit.is_some_and(|h| h.state.alive));
    assert_eq!(decision, Some(BroadphaseDecision::Passed));
    // Dead then: not hit.
    for tick in [3, 4, 5, 9, 11] {
        let (hit, decision) = shoot(t(tick), u32::MAX);
        assert!(hit.is_none(), "hit while dead at {tick}");
        assert_eq!(decision, Some(BroadphaseDecision::NotAlive));
    }
    // Blends take the older frame's state.
    assert!(
        shoot(RewindTarget::between(Tick(2), Tick(3), 0.9), u32::MAX)
            .0
            .is_some()
    );
    assert!(
        shoot(RewindTarget::between(Tick(5), Tick(6), 0.1), u32::MAX)
            .0
            .is_none()
    );
    assert!(
        shoot(RewindTarget::between(Tick(8), Tick(9), 0.9), u32::MAX)
            .0
            .is_some()
    );
    // Layers at the time: layer 2 at 6..=7, layer 1 at 8.
    assert_eq!(shoot(t(6), 1), (None, Some(BroadphaseDecision::OtherLayer)));
    let (hit, _) = shoot(t(6), 2);
    assert_eq!(hit.map(|h| h.state.layers), Some(2));
    assert_eq!(shoot(t(8), 2), (None, Some(BroadphaseDecision::OtherLayer)));
    assert!(shoot(t(8), 1).0.is_some());
    assert!(shoot(t(7), 3).0.is_some());
    assert_eq!(shoot(t(8), 0), (None, Some(BroadphaseDecision::OtherLayer)));
}

// --- (l) latency targets --------------------------------------------------------------------

#[test]
fn a_latency_target_is_the_time_that_far_back() {
    let (h, e) = moving_scene(30);
    let now = tick_time(29, RATE);
    for latency in [0.0, 0.001, 0.0123, 0.05, 0.1, 0.2, 0.2501, 0.4] {
        let by_latency = h.resolve(RewindTarget::latency(now, latency), WindowPolicy::Reject);
        let by_time = h.resolve(at(now - latency), WindowPolicy::Reject);
        assert_eq!(by_latency, by_time);
        let a = h.query(RewindTarget::latency(now, latency)).ray(
            &Ray::new(
                Vec3::new(20.0, 2.0, -10.0),
                Vec3::new(-0.4, -0.1, 1.0),
                100.0,
            )
            .unwrap(),
        );
        let b = h.query(at(now - latency)).ray(
            &Ray::new(
                Vec3::new(20.0, 2.0, -10.0),
                Vec3::new(-0.4, -0.1, 1.0),
                100.0,
            )
            .unwrap(),
        );
        assert_eq!(a, b);
        // Hitting the body through its blended position gives the same hit both ways.
        let time = by_time.unwrap();
        let hit_t = h.query(at(time)).ray(&ray_at(moving_pose(0).translation));
        let hit_l = h
            .query(RewindTarget::latency(now, latency))
            .ray(&ray_at(moving_pose(0).translation));
        assert_eq!(hit_t, hit_l);
    }
    // The same "now" and latency past the window edge: the same error either way.
    assert_eq!(
        h.resolve(RewindTarget::latency(now, 0.6), WindowPolicy::Reject),
        h.resolve(at(now - 0.6), WindowPolicy::Reject)
    );
    let _ = e;
}

// --- (m) mapping a hit to the present ---------------------------------------------------------

#[test]
fn map_to_present_follows_the_hitbox_to_where_it_is_now() {
    let mut h = history(RATE, 0.5);
    let e = h.spawn(box_rig());
    let then = BoneTransform::new(Vec3::new(1.0, 0.5, 2.0), Quat::from_rotation_y(0.3));
    let now = BoneTransform::new(
        Vec3::new(4.0, 0.0, -1.0),
        Quat::from_rotation_y(1.2) * Quat::from_rotation_x(0.2),
    );
    for tick in 0..10_u32 {
        let pose = if tick < 5 { then } else { now };
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        frame.record_rigid(e, pose, EntityState::default()).unwrap();
    }
    let expected = |p: Vec3| {
        now.translation + now.rotation * (then.rotation.inverse() * (p - then.translation))
    };
    // Body, off-centre, and head (a hitbox with an offset).
    for aim in [
        then.translation,
        then.translation + Vec3::new(0.2, 0.6, 0.0),
        then.translation + then.rotation * (Vec3::Y * 1.5),
    ] {
        let hit = h
            .query(at(tick_time(2, RATE)))
            .ray(&ray_at(aim))
            .unwrap()
            .hit
            .expect("hit at the rewound time");
        for point in [hit.entry.point, hit.exit.point, aim] {
            let mapped = h.map_to_present(&hit, point).unwrap();
            assert!(
                mapped.distance(expected(point)) < 1e-4,
                "{mapped} vs {}",
                expected(point)
            );
        }
        // The entry point is on the hitbox's surface then, and its image is on it now.
        let (present, scale) = h.present_placement(e, hit.hitbox).unwrap();
        assert_eq!(scale, Vec3::ONE);
        let mapped = h.map_to_present(&hit, hit.entry.point).unwrap();
        assert!(present.distance_to_point(mapped) < 1e-4);
        let inside = h
            .map_to_present(&hit, hit.placement.pose.translation)
            .unwrap();
        assert!(inside.distance(present.pose.translation) < 1e-4);
    }
}

#[test]
fn map_to_present_undoes_and_reapplies_the_bone_scale() {
    let mut h = history(RATE, 0.5);
    let e = h.spawn(cube_rig());
    let then = BoneTransform::new(Vec3::new(0.0, 0.0, 0.0), Quat::from_rotation_z(0.4))
        .with_scale(Vec3::splat(2.0));
    let now = BoneTransform::new(Vec3::new(5.0, 1.0, 0.0), Quat::IDENTITY);
    for tick in 0..4_u32 {
        let pose = if tick < 2 { then } else { now };
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        frame.record_rigid(e, pose, EntityState::default()).unwrap();
    }
    let hit = h
        .query(at(0.0))
        .ray(&ray_at(Vec3::new(0.3, 0.2, 0.0)))
        .unwrap()
        .hit
        .unwrap();
    assert_eq!(hit.bone_scale, Vec3::splat(2.0));
    assert_eq!(
        hit.placement.shape,
        lagcomp::Shape::cuboid(Vec3::splat(1.0))
    );
    let mapped = h.map_to_present(&hit, hit.entry.point).unwrap();
    let local = then.rotation.inverse() * hit.entry.point / 2.0;
    assert!(mapped.distance(now.translation + local) < 1e-4);
    let (present, _) = h.present_placement(e, HitboxId(0)).unwrap();
    assert!(
        present.distance_to_point(mapped) < 1e-4,
        "on the present surface"
    );
}

// --- (n) determinism --------------------------------------------------------------------------

/// A scene of humanoids and cubes moving, turning, teleporting, dying and changing layers,
/// queried at random times with every kind of query. Returns every result as Debug text
/// (equal text means equal bits).
fn run_scene(seed: u64) -> Vec<String> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut h = history(RATE, 0.3);
    let humanoid = humanoid_rig();
    let cube = cube_rig();
    let ids: Vec<EntityId> = (0..24)
        .map(|i| {
            h.spawn(if i % 3 == 0 {
                cube.clone()
            } else {
                humanoid.clone()
            })
        })
        .collect();
    let mut roots: Vec<Vec3> = (0..ids.len())
        .map(|_| {
            Vec3::new(
                rng.random_range(-20.0..20.0),
                0.0,
                rng.random_range(-20.0..20.0),
            )
        })
        .collect();
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    let mut out = Vec::new();
    let mut time = 50.0;
    let mut ticks = Vec::new();
    for tick in 0..90_u32 {
        time += 1.0 / RATE * rng.random_range(0.9..1.1);
        let tick_number = tick * 3 + tick % 3;
        ticks.push(tick_number);
        let mut frame = h.begin_frame(Tick(tick_number), time).unwrap();
        for (i, &id) in ids.iter().enumerate() {
            let teleport = rng.random_bool(0.02);
            if teleport {
                roots[i] = Vec3::new(
                    rng.random_range(-20.0..20.0),
                    0.0,
                    rng.random_range(-20.0..20.0),
                );
            } else {
                roots[i] += Vec3::new(
                    rng.random_range(-0.1..0.1),
                    0.0,
                    rng.random_range(-0.1..0.1),
                );
            }
            let state = EntityState {
                alive: rng.random_bool(0.9),
                lag_compensated: rng.random_bool(0.95),
                teleported: teleport,
                layers: 1 << rng.random_range(0..3),
                user: i as u16,
                ..EntityState::default()
            };
            if rng.random_bool(0.05) {
                continue; // missed a tick
            }
            let yaw = rng.random_range(-3.0..3.0);
            if ids[i].index().is_multiple_of(3) {
                frame
                    .record_rigid(
                        id,
                        BoneTransform::new(roots[i], Quat::from_rotation_y(yaw)),
                        state,
                    )
                    .unwrap();
            } else {
                humanoid_pose(roots[i], yaw, tick as f32 * 0.3, &mut bones);
                frame.record(id, &bones, state).unwrap();
            }
        }
        drop(frame);
        if tick < 20 {
            continue;
        }
        let (lo, hi) = h.window().unwrap();
        let mut hits = Vec::new();
        let mut overlaps = Vec::new();
        for _ in 0..6 {
            let target = match rng.random_range(0..3) {
                0 => at(rng.random_range(lo..=hi)),
                1 => RewindTarget::latency(hi, rng.random_range(0.0..0.35)),
                _ => {
                    // Recorded ticks, a few apart, or now and then one never recorded.
                    let i = ticks.len() - rng.random_range(1..16);
                    let j = (i + rng.random_range(0..4)).min(ticks.len() - 1);
                    let skew = u32::from(rng.random_bool(0.1));
                    RewindTarget::between(Tick(ticks[i]), Tick(ticks[j] + skew), rng.random())
                }
            };
            let origin = Vec3::new(
                rng.random_range(-25.0..25.0),
                rng.random_range(0.2..1.8),
                -30.0,
            );
            let aim = Vec3::new(
                rng.random_range(-20.0..20.0),
                rng.random_range(0.0..2.0),
                rng.random_range(-20.0..20.0),
            );
            let ray = Ray::new(origin, aim - origin, 80.0).unwrap();
            let mask = rng.random_range(1..8);
            let mut q = h
                .query(target)
                .layers(mask)
                .window_policy(WindowPolicy::Clamp);
            out.push(format!("{:?}", q.ray(&ray)));
            out.push(format!("{:?}", q.ray_all(&ray, &mut hits)));
            out.push(format!("{hits:?}"));
            out.push(format!("{:?}", q.sweep(&ray, 0.3)));
            out.push(format!("{:?}", q.overlap_sphere(aim, 2.0, &mut overlaps)));
            out.push(format!("{overlaps:?}"));
            let obb = Obb::new(aim, Quat::from_rotation_y(0.7), Vec3::new(1.0, 1.0, 2.0));
            out.push(format!("{:?}", q.overlap_box(&obb, &mut overlaps)));
            out.push(format!("{overlaps:?}"));
        }
    }
    out
}

#[test]
fn the_same_scene_and_queries_give_bit_identical_results() {
    let first = run_scene(7);
    let second = run_scene(7);
    assert_eq!(first.len(), second.len());
    for (i, (a, b)) in first.iter().zip(&second).enumerate() {
        assert_eq!(a, b, "result {i} differs between runs");
    }
    // The scene is not trivially empty.
    let with_hits = first.iter().filter(|s| s.contains("Some(Hit")).count();
    assert!(with_hits > 20, "only {with_hits} hits");
    assert_ne!(first, run_scene(8));
}

#[test]
fn observing_a_query_does_not_change_its_result() {
    let mut rng = Pcg64::seed_from_u64(99);
    let mut h = history(RATE, 0.3);
    let rig = humanoid_rig();
    let ids: Vec<EntityId> = (0..40).map(|_| h.spawn(rig.clone())).collect();
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    for tick in 0..30_u32 {
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        for (i, &id) in ids.iter().enumerate() {
            let root = Vec3::new(
                (i % 8) as f32 * 1.5,
                0.0,
                (i / 8) as f32 * 1.5 + tick as f32 * 0.02,
            );
            humanoid_pose(root, i as f32, tick as f32 * 0.2, &mut bones);
            frame.record(id, &bones, EntityState::default()).unwrap();
        }
    }
    let (lo, hi) = h.window().unwrap();
    let (mut plain_hits, mut seen_hits) = (Vec::new(), Vec::new());
    let (mut plain_over, mut seen_over) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let target = at(rng.random_range(lo..=hi));
        let origin = Vec3::new(
            rng.random_range(-5.0..15.0),
            rng.random_range(0.0..2.0),
            -10.0,
        );
        let aim = Vec3::new(
            rng.random_range(0.0..11.0),
            rng.random_range(0.0..2.0),
            rng.random_range(0.0..11.0),
        );
        let ray = Ray::new(origin, aim - origin, 60.0).unwrap();
        let mut log = QueryLog::default();
        let plain = h.query(target).ray(&ray).unwrap();
        let seen = h.query(target).observe(&mut log).ray(&ray).unwrap();
        assert_eq!(plain, seen);
        h.query(target).ray_all(&ray, &mut plain_hits).unwrap();
        h.query(target)
            .observe(&mut log)
            .ray_all(&ray, &mut seen_hits)
            .unwrap();
        assert_eq!(plain_hits, seen_hits);
        let plain = h.query(target).sweep(&ray, 0.2).unwrap();
        let seen = h.query(target).observe(&mut log).sweep(&ray, 0.2).unwrap();
        assert_eq!(plain, seen);
        h.query(target)
            .overlap_sphere(aim, 1.5, &mut plain_over)
            .unwrap();
        h.query(target)
            .observe(&mut log)
            .overlap_sphere(aim, 1.5, &mut seen_over)
            .unwrap();
        assert_eq!(plain_over, seen_over);
    }
}

#[test]
fn a_clone_of_the_history_answers_the_same() {
    let (h, e) = moving_scene(20);
    let copy = h.clone();
    for tick in 5..19 {
        let time = tick_time(tick, RATE) + 0.3 / RATE;
        let aim = moving_pose(tick).translation;
        assert_eq!(
            h.query(at(time)).ray(&ray_at(aim)),
            copy.query(at(time)).ray(&ray_at(aim))
        );
    }
    let _ = e;
}

/// Regression: at 04302cf `Query::ray` kept the first of equally distant hits in BVH order,
/// so it disagreed with the same query observed and with `ray_all().hit`.
#[test]
fn equal_distance_hits_resolve_the_same_way_in_every_kind_of_trace() {
    // Two cubes both contain the ray's origin (a shooter standing inside two hitboxes):
    // both are hit at distance 0. Three more cubes elsewhere give the BVH two leaves.
    let mut h = history(RATE, 0.5);
    let ids: Vec<EntityId> = (0..5).map(|_| h.spawn(cube_rig())).collect();
    let place = [
        Vec3::new(0.1, 0.0, -10.0),
        Vec3::new(-0.1, 0.2, -9.8),
        Vec3::new(20.0, 0.0, 0.0),
        Vec3::new(40.0, 5.0, 0.0),
        Vec3::new(60.0, 0.0, 5.0),
    ];
    let entities: Vec<(EntityId, Vec3)> = ids.iter().copied().zip(place).collect();
    for tick in 0..3 {
        record_rigid_frame(&mut h, tick, tick_time(tick, RATE), &entities);
    }
    let ray = ray_at(Vec3::ZERO); // starts at (0, 0, -10)
    let plain = h.query(at(0.0)).ray(&ray).unwrap().hit.unwrap();
    let mut log = QueryLog::default();
    let observed = h
        .query(at(0.0))
        .observe(&mut log)
        .ray(&ray)
        .unwrap()
        .hit
        .unwrap();
    let mut all = Vec::new();
    let first = h
        .query(at(0.0))
        .ray_all(&ray, &mut all)
        .unwrap()
        .hit
        .unwrap();
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .all(|hit| hit.distance == 0.0 && hit.started_inside)
    );
    // ray_all breaks the tie by entity; the closest-hit query should agree with it, and
    // observing must not change the answer.
    assert_eq!(first.entity, ids[0]);
    assert_eq!(observed.entity, first.entity);
    assert_eq!(
        plain.entity, first.entity,
        "ray() picked {} by traversal order",
        plain.entity
    );
}

/// Regression: at 04302cf `map_to_present` divided by the bone scale per axis, but a sphere
/// grows by the largest component: the top of the ball mapped a metre above it.
#[test]
fn map_to_present_keeps_surface_points_of_non_uniformly_scaled_spheres_on_the_surface() {
    let rig = Arc::new(
        Rig::rigid(vec![lagcomp::Hitbox::new(
            0,
            "ball",
            lagcomp::Zone::Head,
            0,
            lagcomp::Shape::sphere(1.0),
        )])
        .unwrap(),
    );
    let mut h = history(RATE, 0.5);
    let e = h.spawn(rig);
    // Stretched along x then (the sphere has radius 2), unscaled now; it never moves.
    let then = BoneTransform::IDENTITY.with_scale(Vec3::new(2.0, 1.0, 1.0));
    let now = BoneTransform::IDENTITY;
    for tick in 0..4_u32 {
        let pose = if tick < 2 { then } else { now };
        let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
        frame.record_rigid(e, pose, EntityState::default()).unwrap();
    }
    // Shot from above, straight down through the centre: enters the radius-2 ball at the
    // top, (0, 2, 0).
    let ray = Ray::new(Vec3::new(0.0, 10.0, 0.0), -Vec3::Y, 100.0).unwrap();
    let hit = h.query(at(0.0)).ray(&ray).unwrap().hit.unwrap();
    assert_eq!(hit.placement.shape, lagcomp::Shape::sphere(2.0));
    assert!(hit.entry.point.distance(Vec3::new(0.0, 2.0, 0.0)) < 1e-5);
    let mapped = h.map_to_present(&hit, hit.entry.point).unwrap();
    let (present, _) = h.present_placement(e, HitboxId(0)).unwrap();
    // The top of the ball then is the top of the ball now, (0, 1, 0); the mapping gives
    // (0, 2, 0), a metre above the unit ball.
    assert!(
        present.distance_to_point(mapped) < 1e-4,
        "mapped to {mapped}, {} off the surface",
        present.distance_to_point(mapped)
    );
}

#[test]
fn the_broadphase_never_misses_what_a_full_scan_finds() {
    // Observed queries test every entity; plain ones go through the window-bounds BVH.
    // Teleports across the map, entities that skip recording for longer than the ring,
    // deaths, despawns and slot reuse must never make the BVH miss a hitbox.
    let mut rng = Pcg64::seed_from_u64(4242);
    let mut h = history(RATE, 0.2);
    let capacity = h.capacity() as u32;
    let rig = humanoid_rig();
    let mut ids: Vec<EntityId> = (0..24).map(|_| h.spawn(rig.clone())).collect();
    let mut roots: Vec<Vec3> = (0..ids.len())
        .map(|i| Vec3::new((i % 6) as f32 * 3.0, 0.0, (i / 6) as f32 * 3.0))
        .collect();
    let mut silent_until = vec![0_u32; ids.len()];
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    let (mut plain_hits, mut seen_hits) = (Vec::new(), Vec::new());
    let (mut plain_over, mut seen_over) = (Vec::new(), Vec::new());
    let mut compared = 0;
    for tick in 0..6 * capacity {
        // Between frames: now and then despawn one and spawn a replacement.
        if tick > 0 && rng.random_bool(0.05) {
            let i = rng.random_range(0..ids.len());
            h.despawn(ids[i]).unwrap();
            ids[i] = h.spawn(rig.clone());
        }
        {
            let mut frame = h.begin_frame(Tick(tick), tick_time(tick, RATE)).unwrap();
            for (i, &id) in ids.iter().enumerate() {
                if tick < silent_until[i] {
                    continue;
                }
                if rng.random_bool(0.01) {
                    // Goes quiet for longer than the ring holds.
                    silent_until[i] = tick + capacity + rng.random_range(0..10);
                }
                let teleported = rng.random_bool(0.03);
                if teleported {
                    roots[i] = Vec3::new(
                        rng.random_range(-60.0..60.0),
                        rng.random_range(-5.0..5.0),
                        rng.random_range(-60.0..60.0),
                    );
                } else {
                    roots[i] += Vec3::new(
                        rng.random_range(-0.2..0.2),
                        0.0,
                        rng.random_range(-0.2..0.2),
                    );
                }
                humanoid_pose(
                    roots[i],
                    tick as f32 * 0.1 + i as f32,
                    tick as f32 * 0.3,
                    &mut bones,
                );
                let state = EntityState {
                    teleported,
                    alive: rng.random_bool(0.95),
                    ..EntityState::default()
                };
                frame.record(id, &bones, state).unwrap();
            }
        }
        if tick < 3 {
            continue;
        }
        let (lo, hi) = h.window().unwrap();
        for _ in 0..4 {
            let target = at(rng.random_range(lo..=hi));
            // Aim at a random entity's current root, from somewhere around it.
            let aim = roots[rng.random_range(0..roots.len())]
                + Vec3::new(
                    rng.random_range(-0.5..0.5),
                    rng.random_range(0.0..1.8),
                    rng.random_range(-0.5..0.5),
                );
            let origin = aim
                + Vec3::new(
                    rng.random_range(-20.0..20.0),
                    rng.random_range(-2.0..2.0),
                    rng.random_range(-20.0..20.0),
                );
            let Ok(ray) = Ray::new(origin, aim - origin, 100.0) else {
                continue;
            };
            let mut log = QueryLog::default();
            h.query(target).ray_all(&ray, &mut plain_hits).unwrap();
            h.query(target)
                .observe(&mut log)
                .ray_all(&ray, &mut seen_hits)
                .unwrap();
            assert_eq!(plain_hits, seen_hits, "tick {tick}");
            let radius = rng.random_range(0.0..1.0);
            h.query(target)
                .sweep_all(&ray, radius, &mut plain_hits)
                .unwrap();
            h.query(target)
                .observe(&mut log)
                .sweep_all(&ray, radius, &mut seen_hits)
                .unwrap();
            assert_eq!(plain_hits, seen_hits, "tick {tick}");
            h.query(target)
                .overlap_sphere(aim, radius * 3.0, &mut plain_over)
                .unwrap();
            h.query(target)
                .observe(&mut log)
                .overlap_sphere(aim, radius * 3.0, &mut seen_over)
                .unwrap();
            assert_eq!(plain_over, seen_over, "tick {tick}");
            let obb = Obb::new(
                aim,
                Quat::from_rotation_y(radius * 3.0),
                Vec3::new(0.8, 1.0, 0.3),
            );
            h.query(target).overlap_box(&obb, &mut plain_over).unwrap();
            h.query(target)
                .observe(&mut log)
                .overlap_box(&obb, &mut seen_over)
                .unwrap();
            assert_eq!(plain_over, seen_over, "tick {tick}");
            compared += usize::from(!seen_hits.is_empty()) + usize::from(!seen_over.is_empty());
        }
    }
    assert!(compared > 200, "only {compared} non-empty comparisons");
}
