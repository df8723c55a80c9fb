//! Bad input: every malformed call gets a typed error, never a panic, and leaves the
//! recorded history of every entity exactly as it was.
//!
//! The "history is intact" check is a fingerprint: at several fixed past times, an overlap
//! that covers the whole scene is observed with a [`QueryLog`], which reports every hitbox
//! of every entity as it was then; plus a few traces. The fingerprint is Debug text, so
//! equal text means equal bits.

use crate::support::{
    HUMANOID_BONES, at, box_rig, cube_rig, history, humanoid_pose, humanoid_rig, ray_at,
};
use lagcomp::math::{MAX_EXTENT, MIN_EXTENT};
use lagcomp::{
    BoneTransform, EntityError, EntityId, EntityState, History, Hit, HitboxId, Obb, Quat,
    QueryError, QueryLog, Ray, RayError, RecordError, RewindError, RewindTarget, Tick,
    TransformError, Vec3, WindowPolicy, WindowSide,
};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

const RATE: f64 = 64.0;
const START: f64 = 10.0;
/// Ticks recorded by [`scene`]: 0..BASE_TICKS.
const BASE_TICKS: u32 = 20;
const GONE_LAST_TICK: u32 = 10;

fn base_time(tick: u32) -> f64 {
    START + f64::from(tick) / RATE
}

struct Scene {
    h: History,
    /// A rigid entity (`box_rig`) walking along x near x = -3.
    rigid: EntityId,
    /// A 16-bone humanoid at x = 3.
    skel: EntityId,
    /// A cube recorded for ticks 0..=10 at z = 3, then despawned.
    gone: EntityId,
    /// Spawned, never recorded.
    never: EntityId,
    next_tick: u32,
    next_time: f64,
}

fn rigid_pose(tick: u32) -> BoneTransform {
    let t = tick as f32;
    BoneTransform::new(
        Vec3::new(-3.0 + 0.05 * t, 0.0, 0.01 * t),
        Quat::from_rotation_y(0.1 * t),
    )
}

fn skel_pose(tick: u32, out: &mut [BoneTransform]) {
    humanoid_pose(
        Vec3::new(3.0, 0.0, 0.02 * tick as f32),
        0.05 * tick as f32,
        tick as f32 * 0.3,
        out,
    );
}

fn gone_pose() -> BoneTransform {
    BoneTransform::from_translation(Vec3::new(0.0, 0.0, 3.0))
}

/// A 1 s window at 64 Hz (73 frames held), 20 frames recorded.
fn scene() -> Scene {
    let mut h = history(RATE, 1.0);
    let rigid = h.spawn(box_rig());
    let skel = h.spawn(humanoid_rig());
    let gone = h.spawn(cube_rig());
    let never = h.spawn(cube_rig());
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    for tick in 0..BASE_TICKS {
        let mut frame = h.begin_frame(Tick(tick), base_time(tick)).unwrap();
        frame
            .record_rigid(rigid, rigid_pose(tick), EntityState::default())
            .unwrap();
        skel_pose(tick, &mut bones);
        frame.record(skel, &bones, EntityState::default()).unwrap();
        if tick <= GONE_LAST_TICK {
            frame
                .record_rigid(gone, gone_pose(), EntityState::default())
                .unwrap();
        }
    }
    h.despawn(gone).unwrap();
    Scene {
        h,
        rigid,
        skel,
        gone,
        never,
        next_tick: BASE_TICKS,
        next_time: base_time(BASE_TICKS),
    }
}

/// The past targets the fingerprint looks at: all inside the base frames.
fn reference_targets() -> [RewindTarget; 6] {
    [
        at(base_time(2)),
        at(base_time(5) + 0.5 / RATE),
        at(base_time(10)),
        at(base_time(13) + 0.25 / RATE),
        at(base_time(BASE_TICKS - 1)),
        RewindTarget::between(Tick(3), Tick(7), 0.4),
    ]
}

/// Every hitbox of every entity at each reference target, and a few traces. Leaves out
/// what legitimately changes when frames are added (window edges, present poses, the
/// broadphase decisions of entities recorded only later).
fn fingerprint(h: &History) -> Vec<String> {
    let mut out = Vec::new();
    let mut overlaps = Vec::new();
    let mut hits = Vec::new();
    for target in reference_targets() {
        let mut log = QueryLog::default();
        let rewind = h
            .query(target)
            .observe(&mut log)
            .overlap_sphere(Vec3::ZERO, MAX_EXTENT, &mut overlaps)
            .map(|r| (r.requested, r.time, r.clamped));
        out.push(format!("{rewind:?} {overlaps:?} {:?}", log.samples));
        for tested in &log.hitboxes {
            out.push(format!(
                "{:?} {:?} {:?}",
                tested.entity, tested.hitbox.id, tested.rewound
            ));
        }
        for ray in [
            ray_at(Vec3::new(-3.0, 0.0, 0.0)),
            ray_at(Vec3::new(3.0, 1.6, 0.2)),
            ray_at(Vec3::new(0.0, 0.0, 3.0)),
            Ray::new(Vec3::new(-10.0, 1.0, 0.1), Vec3::X, 30.0).unwrap(),
        ] {
            let trace = h.query(target).ray(&ray).map(|t| (t.hit, t.blocker));
            out.push(format!("{trace:?}"));
            let all = h.query(target).ray_all(&ray, &mut hits).map(|_| ());
            out.push(format!("{all:?} {hits:?}"));
            let sweep = h.query(target).sweep(&ray, 0.4).map(|t| t.hit);
            out.push(format!("{sweep:?}"));
        }
    }
    out
}

fn assert_same(before: &[String], after: &[String]) {
    assert_eq!(before.len(), after.len(), "fingerprint length changed");
    for (i, (a, b)) in before.iter().zip(after).enumerate() {
        assert_eq!(a, b, "fingerprint entry {i} changed");
    }
}

/// The bad transforms and the error each must get.
fn bad_transforms() -> Vec<(BoneTransform, TransformError)> {
    use TransformError::*;
    let ok = BoneTransform::new(Vec3::new(1.0, 2.0, 3.0), Quat::from_rotation_y(0.3));
    let t = |v: Vec3| BoneTransform {
        translation: v,
        ..ok
    };
    let r = |q: Quat| BoneTransform { rotation: q, ..ok };
    let s = |v: Vec3| ok.with_scale(v);
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    vec![
        (t(Vec3::new(nan, 0.0, 0.0)), NonFiniteTranslation),
        (t(Vec3::new(0.0, nan, 0.0)), NonFiniteTranslation),
        (t(Vec3::new(0.0, 0.0, -nan)), NonFiniteTranslation),
        (t(Vec3::new(inf, 0.0, 0.0)), NonFiniteTranslation),
        (t(Vec3::new(0.0, -inf, 0.0)), NonFiniteTranslation),
        (t(Vec3::new(1.000_001e6, 0.0, 0.0)), TranslationOutOfRange),
        (t(Vec3::new(0.0, 0.0, -2.0e6)), TranslationOutOfRange),
        (t(Vec3::splat(f32::MAX)), TranslationOutOfRange),
        (r(Quat::from_xyzw(nan, 0.0, 0.0, 1.0)), NonFiniteRotation),
        (r(Quat::from_xyzw(0.0, 0.0, 0.0, inf)), NonFiniteRotation),
        (
            r(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)),
            RotationNotNormalized,
        ),
        (
            r(Quat::from_xyzw(0.0, 0.0, 0.0, 2.0)),
            RotationNotNormalized,
        ),
        (
            r(Quat::from_xyzw(1.0, 1.0, 1.0, 1.0)),
            RotationNotNormalized,
        ),
        (
            r(Quat::from_xyzw(0.0, 0.0, 0.0, 1.001)),
            RotationNotNormalized,
        ),
        (
            r(Quat::from_xyzw(0.0, 0.0, 0.0, 0.999)),
            RotationNotNormalized,
        ),
        (
            r(Quat::from_xyzw(1e30, 1e30, 0.0, 0.0)),
            RotationNotNormalized,
        ),
        (s(Vec3::new(0.0, 1.0, 1.0)), InvalidScale),
        (s(Vec3::new(1.0, -0.0, 1.0)), InvalidScale),
        (s(Vec3::new(1.0, 1.0, -2.0)), InvalidScale),
        (s(Vec3::new(nan, 1.0, 1.0)), InvalidScale),
        (s(Vec3::new(1.0, inf, 1.0)), InvalidScale),
        (s(Vec3::new(1.0, 1.0, 1.0e5)), InvalidScale),
        (s(Vec3::splat(-1.0)), InvalidScale),
        (s(Vec3::splat(f32::MAX)), InvalidScale),
        // Too small to be a size: below MIN_EXTENT, down to subnormals.
        (s(Vec3::new(1.0, 1.0, MIN_EXTENT * 0.99)), InvalidScale),
        (s(Vec3::new(1.0e-30, 1.0, 1.0)), InvalidScale),
        (s(Vec3::splat(f32::MIN_POSITIVE / 4.0)), InvalidScale),
    ]
}

// --- record ------------------------------------------------------------------------------

#[test]
fn bad_transforms_are_refused_and_leave_the_history_intact() {
    let mut s = scene();
    let before = fingerprint(&s.h);
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    for (case, (bad, error)) in bad_transforms().into_iter().enumerate() {
        assert_eq!(bad.validate(), Err(error), "case {case}");
        let (tick, time) = (s.next_tick, s.next_time);
        let mut frame = s.h.begin_frame(Tick(tick), time).unwrap();
        assert_eq!(
            frame.record_rigid(s.rigid, bad, EntityState::default()),
            Err(RecordError::Transform {
                entity: s.rigid,
                bone: 0,
                error
            }),
            "case {case}"
        );
        // A humanoid whose 5th bone (index 4) is bad: nothing of it may be written.
        skel_pose(tick, &mut bones);
        bones[4] = bad;
        assert_eq!(
            frame.record(s.skel, &bones, EntityState::default()),
            Err(RecordError::Transform {
                entity: s.skel,
                bone: 4,
                error
            })
        );
        // The last bone bad, too.
        skel_pose(tick, &mut bones);
        bones[HUMANOID_BONES - 1] = bad;
        assert!(matches!(
            frame.record(s.skel, &bones, EntityState::default()),
            Err(RecordError::Transform { bone: 15, .. })
        ));
        // The never-recorded entity stays unrecorded.
        assert!(
            frame
                .record_rigid(s.never, bad, EntityState::default())
                .is_err()
        );
        // A refused record does not count as recorded: in every other case both entities
        // record this frame properly after their refusals; in the others they do not.
        let record_good = case % 2 == 0;
        if record_good {
            frame
                .record_rigid(s.rigid, rigid_pose(tick), EntityState::default())
                .unwrap();
            skel_pose(tick, &mut bones);
            frame
                .record(s.skel, &bones, EntityState::default())
                .unwrap();
        }
        drop(frame);
        s.next_tick += 1;
        s.next_time += 1.0 / RATE;

        // Half way from the previous frame, the humanoid is held at whichever of the two
        // frames it was recorded in, bit for bit: the refused records wrote nothing.
        let rig = s.h.rig(s.skel).unwrap().clone();
        let mid = (time - 1.0 / RATE + time) / 2.0;
        let mut log = QueryLog::default();
        let mut out = Vec::new();
        s.h.query(at(mid))
            .observe(&mut log)
            .overlap_sphere(Vec3::new(3.0, 1.0, 0.0), 3.0, &mut out)
            .unwrap();
        let skel_sample = log.samples.iter().find(|(e, _)| *e == s.skel).unwrap().1;
        let held = match (record_good, case) {
            (true, 0) => None, // both frames recorded: a blend
            (true, _) => Some(tick),
            (false, _) => Some(tick - 1),
        };
        if let Some(held) = held {
            assert_eq!(
                skel_sample.kind,
                lagcomp::SampleKind::Nearest {
                    tick: Tick(held),
                    reason: lagcomp::NearestReason::MissingNeighbour
                },
                "case {case}"
            );
            skel_pose(held, &mut bones);
            let tested: Vec<_> = log.hitboxes.iter().filter(|t| t.entity == s.skel).collect();
            assert!(!tested.is_empty());
            for tested in tested {
                let hb = rig.hitbox(tested.hitbox.id).unwrap();
                let expected = hb.placed(&bones[usize::from(hb.bone)]);
                assert_eq!(format!("{:?}", tested.rewound), format!("{expected:?}"));
            }
        }
        // At the new frame: there, exactly as recorded, or absent.
        let mut log = QueryLog::default();
        s.h.query(at(time))
            .observe(&mut log)
            .overlap_sphere(Vec3::ZERO, 100.0, &mut out)
            .unwrap();
        // Never recorded: nothing to sample at any time.
        assert_eq!(
            log.decision(s.never),
            Some(lagcomp::BroadphaseDecision::Absent)
        );
        for entity in [s.rigid, s.skel] {
            let decision = log.decision(entity);
            if record_good {
                assert_eq!(decision, Some(lagcomp::BroadphaseDecision::Passed));
            } else {
                assert_eq!(
                    decision,
                    Some(lagcomp::BroadphaseDecision::Absent),
                    "case {case}"
                );
            }
        }
        if record_good {
            let (placed, _) = s.h.present_placement(s.rigid, HitboxId(0)).unwrap();
            assert_eq!(placed.pose.translation, rigid_pose(tick).translation);
            skel_pose(tick, &mut bones);
            for tested in log.hitboxes.iter().filter(|t| t.entity == s.skel) {
                let hb = rig.hitbox(tested.hitbox.id).unwrap();
                let expected = hb.placed(&bones[usize::from(hb.bone)]);
                assert_eq!(format!("{:?}", tested.rewound), format!("{expected:?}"));
            }
        }
        assert_eq!(
            s.h.present_state(s.never),
            Err(EntityError::NoFrames(s.never))
        );
    }
    assert_same(&before, &fingerprint(&s.h));
}

#[test]
fn extreme_but_valid_transforms_are_accepted_and_queryable() {
    let mut s = scene();
    let before = fingerprint(&s.h);
    let edge = 1.0e6;
    let cases = [
        BoneTransform::from_translation(Vec3::new(edge, -edge, edge)),
        BoneTransform::from_translation(Vec3::splat(f32::MIN_POSITIVE / 4.0)), // subnormal
        BoneTransform::new(Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 1.0 + 0.9e-4)),
        BoneTransform::IDENTITY.with_scale(Vec3::splat(MAX_EXTENT)),
        BoneTransform::IDENTITY.with_scale(Vec3::new(MIN_EXTENT, 1.0, 1.0)),
        BoneTransform::IDENTITY.with_scale(Vec3::splat(MIN_EXTENT)),
        BoneTransform::from_translation(Vec3::splat(-edge)).with_scale(Vec3::splat(MAX_EXTENT)),
    ];
    for (case, bone) in cases.into_iter().enumerate() {
        assert_eq!(bone.validate(), Ok(()), "case {case}");
        let (tick, time) = (s.next_tick, s.next_time);
        {
            let mut frame = s.h.begin_frame(Tick(tick), time).unwrap();
            frame
                .record_rigid(s.rigid, bone, EntityState::default())
                .unwrap();
        }
        s.next_tick += 1;
        s.next_time += 1.0 / RATE;
        // Queries at and around it work, and their output is finite.
        for target in [at(time), at(time - 0.3 / RATE)] {
            let mut hits = Vec::new();
            for ray in [
                Ray::new(
                    (bone.translation - Vec3::Z * 5.0).clamp(Vec3::splat(-edge), Vec3::splat(edge)),
                    Vec3::Z,
                    100.0,
                )
                .unwrap(),
                Ray::new(Vec3::new(-edge, 0.0, 0.0), Vec3::X, Ray::MAX_DISTANCE).unwrap(),
            ] {
                s.h.query(target).ray_all(&ray, &mut hits).unwrap();
                for hit in &hits {
                    assert_sane_hit(&s.h, hit, &ray);
                }
                s.h.query(target).sweep(&ray, MAX_EXTENT).unwrap();
            }
            let mut out = Vec::new();
            s.h.query(target)
                .overlap_sphere(bone.translation, MAX_EXTENT, &mut out)
                .unwrap();
            assert!(
                out.iter()
                    .all(|o| o.distance.is_finite() && o.distance >= 0.0)
            );
        }
    }
    assert_same(&before, &fingerprint(&s.h));
}

/// A chain of `bones` bones one metre apart along +x, each carrying a sphere of radius 0.2.
fn chain_rig(bones: u16) -> std::sync::Arc<lagcomp::Rig> {
    use lagcomp::{Hitbox, Rig, Shape, Zone};
    let hitboxes = (0..bones)
        .map(|b| Hitbox::new(b, "link", Zone::Limb, b, Shape::sphere(0.2)))
        .collect();
    std::sync::Arc::new(Rig::new(bones, hitboxes).expect("valid rig"))
}

fn chain_pose(bones: usize) -> Vec<BoneTransform> {
    (0..bones)
        .map(|b| BoneTransform::new(Vec3::new(b as f32, 1.0, 0.0), Quat::IDENTITY))
        .collect()
}

/// Recording checks rotations four bones at a time and takes a second pass for scaled
/// bones: a bad bone is found at every position of every group and of the tail, and a
/// scaled bone grows the entity's bounds wherever it is.
#[test]
fn every_bone_position_is_checked_and_scaled_anywhere() {
    for bones in 1..=9_usize {
        for bad_at in 0..bones {
            let mut h = history(RATE, 1.0);
            let id = h.spawn(chain_rig(bones as u16));
            let mut frame = h.begin_frame(Tick(1), 1.0).unwrap();
            let mut pose = chain_pose(bones);
            pose[bad_at].rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 1.01);
            assert_eq!(
                frame.record(id, &pose, EntityState::default()),
                Err(RecordError::Transform {
                    entity: id,
                    bone: bad_at as u16,
                    error: TransformError::RotationNotNormalized
                }),
                "{bones} bones, bad rotation at {bad_at}"
            );
            pose = chain_pose(bones);
            pose[bad_at].translation.y = f32::NAN;
            assert!(
                matches!(
                    frame.record(id, &pose, EntityState::default()),
                    Err(RecordError::Transform { bone, .. }) if usize::from(bone) == bad_at
                ),
                "{bones} bones, NaN translation at {bad_at}"
            );
            // The same bone scaled by 10: its sphere grows to radius 2 and is hit 1.5 m
            // above the chain, far outside the unscaled bounds.
            pose = chain_pose(bones);
            pose[bad_at].scale = Vec3::splat(10.0);
            frame.record(id, &pose, EntityState::default()).unwrap();
            drop(frame);
            let ray = Ray::new(Vec3::new(bad_at as f32, 2.5, -5.0), Vec3::Z, 100.0).unwrap();
            let hit = h
                .query(RewindTarget::Time(1.0))
                .ray(&ray)
                .unwrap()
                .hit
                .unwrap_or_else(|| panic!("{bones} bones, scaled at {bad_at}: no hit"));
            assert_eq!(hit.hitbox, HitboxId(bad_at as u16));
        }
    }
}

#[test]
fn wrong_bone_counts_are_refused() {
    let mut s = scene();
    let before = fingerprint(&s.h);
    let (tick, time) = (s.next_tick, s.next_time);
    let mut frame = s.h.begin_frame(Tick(tick), time).unwrap();
    let many = vec![BoneTransform::IDENTITY; 40];
    for (entity, expected, counts) in [
        (s.rigid, 1_u16, [0_usize, 2, 16, 40]),
        (s.skel, 16, [0, 1, 15, 17]),
    ] {
        for got in counts {
            assert_eq!(
                frame.record(entity, &many[..got], EntityState::default()),
                Err(RecordError::BoneCount {
                    entity,
                    expected,
                    got
                })
            );
        }
    }
    // A bad count on the wrong entity does not stop the right one.
    frame
        .record_rigid(s.rigid, rigid_pose(tick), EntityState::default())
        .unwrap();
    drop(frame);
    assert_same(&before, &fingerprint(&s.h));
}

#[test]
fn recording_twice_in_a_frame_keeps_the_first_record() {
    let mut s = scene();
    let before = fingerprint(&s.h);
    let (tick, time) = (s.next_tick, s.next_time);
    let first = BoneTransform::from_translation(Vec3::new(-2.0, 0.0, 0.0));
    let second = BoneTransform::from_translation(Vec3::new(7.0, 0.0, 0.0));
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    {
        let mut frame = s.h.begin_frame(Tick(tick), time).unwrap();
        assert_eq!(frame.tick(), Tick(tick));
        frame
            .record_rigid(s.rigid, first, EntityState::default())
            .unwrap();
        for again in [second, first] {
            let state = EntityState {
                alive: false,
                layers: 8,
                ..EntityState::default()
            };
            assert_eq!(
                frame.record_rigid(s.rigid, again, state),
                Err(RecordError::AlreadyRecorded(s.rigid))
            );
        }
        // A second, malformed record is also refused (either reason), never written.
        assert!(
            frame
                .record_rigid(
                    s.rigid,
                    BoneTransform::from_translation(Vec3::NAN),
                    EntityState::default()
                )
                .is_err()
        );
        assert!(frame.record(s.rigid, &[], EntityState::default()).is_err());
        skel_pose(tick, &mut bones);
        frame
            .record(s.skel, &bones, EntityState::default())
            .unwrap();
        let moved: Vec<_> = bones
            .iter()
            .map(|b| BoneTransform {
                translation: b.translation + Vec3::X,
                ..*b
            })
            .collect();
        assert_eq!(
            frame.record(s.skel, &moved, EntityState::default()),
            Err(RecordError::AlreadyRecorded(s.skel))
        );
        frame.finish();
    }
    let hit =
        s.h.query(at(time))
            .ray(&ray_at(first.translation))
            .unwrap()
            .hit
            .unwrap();
    assert_eq!(hit.entity, s.rigid);
    assert_eq!(hit.placement.pose.translation, first.translation);
    assert!(hit.state.alive);
    assert_eq!(hit.state.layers, 1);
    assert!(
        s.h.query(at(time))
            .ray(&ray_at(second.translation))
            .unwrap()
            .hit
            .is_none()
    );
    assert_eq!(s.h.present_state(s.rigid), Ok(EntityState::default()));
    let (head, _) = s.h.present_placement(s.skel, HitboxId(4)).unwrap();
    assert_eq!(head.pose.translation, bones[4].translation);
    assert_same(&before, &fingerprint(&s.h));
}

// --- begin_frame -----------------------------------------------------------------------------

#[test]
fn bad_frames_are_refused_and_change_nothing() {
    let mut s = scene();
    let before = fingerprint(&s.h);
    let span = s.h.span();
    let window = s.h.window();
    let newest_tick = Tick(BASE_TICKS - 1);
    let newest_time = base_time(BASE_TICKS - 1);
    let next = s.next_time;
    // (tick, time, check)
    type Check = fn(&RecordError, Tick, f64) -> bool;
    let cases: Vec<(u32, f64, Check)> = vec![
        (BASE_TICKS - 1, next, |e, t, _| {
            *e == RecordError::TickNotIncreasing { newest: t, got: t }
        }),
        (3, next, |e, t, _| {
            *e == RecordError::TickNotIncreasing {
                newest: t,
                got: Tick(3),
            }
        }),
        (0, next, |e, t, _| {
            *e == RecordError::TickNotIncreasing {
                newest: t,
                got: Tick(0),
            }
        }),
        (
            BASE_TICKS,
            f64::NAN,
            |e, _, _| matches!(e, RecordError::InvalidTime(x) if x.is_nan()),
        ),
        (BASE_TICKS, f64::INFINITY, |e, _, _| {
            *e == RecordError::InvalidTime(f64::INFINITY)
        }),
        (BASE_TICKS, f64::NEG_INFINITY, |e, _, _| {
            *e == RecordError::InvalidTime(f64::NEG_INFINITY)
        }),
        (BASE_TICKS, 1.0e13, |e, _, _| {
            *e == RecordError::InvalidTime(1.0e13)
        }),
        (BASE_TICKS, -1.0e13, |e, _, _| {
            *e == RecordError::InvalidTime(-1.0e13)
        }),
        (BASE_TICKS, f64::MAX, |e, _, _| {
            *e == RecordError::InvalidTime(f64::MAX)
        }),
        // Time not moving forward.
        (BASE_TICKS, base_time(BASE_TICKS - 1), |e, _, t| {
            *e == RecordError::TimeNotIncreasing { newest: t, got: t }
        }),
        (BASE_TICKS, base_time(4), |e, _, t| {
            *e == RecordError::TimeNotIncreasing {
                newest: t,
                got: base_time(4),
            }
        }),
        (BASE_TICKS + 5, -3.0, |e, _, t| {
            *e == RecordError::TimeNotIncreasing {
                newest: t,
                got: -3.0,
            }
        }),
        (u32::MAX, 0.0, |e, _, t| {
            *e == RecordError::TimeNotIncreasing {
                newest: t,
                got: 0.0,
            }
        }),
        // Both bad: the tick is reported (the time is checked for being finite first).
        (2, 0.0, |e, t, _| {
            *e == RecordError::TickNotIncreasing {
                newest: t,
                got: Tick(2),
            }
        }),
        (2, f64::NAN, |e, _, _| {
            matches!(e, RecordError::InvalidTime(_))
        }),
    ];
    for (i, (tick, time, check)) in cases.into_iter().enumerate() {
        let err = s.h.begin_frame(Tick(tick), time).map(|_| ()).unwrap_err();
        assert!(check(&err, newest_tick, newest_time), "case {i}: {err:?}");
        assert_eq!(s.h.span(), span, "case {i}");
        assert_eq!(s.h.window(), window, "case {i}");
        assert_eq!(s.h.newest_tick(), Some(newest_tick));
        // Still a working history: the entities can be recorded next.
    }
    assert_same(&before, &fingerprint(&s.h));
    // A skipped tick number and the smallest step in time are fine.
    let t = newest_time + f64::EPSILON * newest_time;
    assert!(t > newest_time);
    {
        let mut frame = s.h.begin_frame(Tick(BASE_TICKS + 100), t).unwrap();
        frame
            .record_rigid(s.rigid, rigid_pose(0), EntityState::default())
            .unwrap();
    }
    assert_eq!(s.h.newest_tick(), Some(Tick(BASE_TICKS + 100)));
    assert_same(&before, &fingerprint(&s.h));
}

#[test]
fn the_first_frame_may_be_at_any_finite_time() {
    for time in [-1.0e12, -5.0, 0.0, -0.0, 1.0e-300, 1.0e12] {
        let mut h = history(RATE, 0.5);
        let e = h.spawn(cube_rig());
        {
            let mut frame = h.begin_frame(Tick(u32::MAX - 1), time).unwrap();
            frame
                .record_rigid(e, BoneTransform::IDENTITY, EntityState::default())
                .unwrap();
        }
        let hit = h.query(at(time)).ray(&ray_at(Vec3::ZERO)).unwrap().hit;
        assert!(hit.is_some(), "time {time}");
        // u32::MAX still follows; nothing follows it. Nothing follows the last valid time.
        let next = time + 1.0;
        if time < 1.0e12 {
            h.begin_frame(Tick(u32::MAX), next).unwrap();
            assert!(matches!(
                h.begin_frame(Tick(u32::MAX), next + 1.0),
                Err(RecordError::TickNotIncreasing { .. })
            ));
        } else {
            assert_eq!(
                h.begin_frame(Tick(u32::MAX), next).map(|_| ()),
                Err(RecordError::InvalidTime(next))
            );
        }
    }
}

// --- handles -------------------------------------------------------------------------------

#[test]
fn unknown_stale_and_despawned_handles_are_refused() {
    let mut s = scene();
    // A stale handle: spawned, never recorded, despawned (freed at once).
    let stale = s.h.spawn(cube_rig());
    s.h.despawn(stale).unwrap();
    let before = fingerprint(&s.h);
    let valid = [s.rigid, s.skel, s.gone, s.never];
    let mut rng = Pcg64::seed_from_u64(5);
    let mut handles: Vec<EntityId> = vec![
        stale,
        EntityId::from_bits(u64::MAX),
        EntityId::from_bits(0xFFFF_FFFF),
        EntityId::from_bits(1 << 32),
        EntityId::from_bits(u64::from(s.rigid.index()) | (7 << 32)),
        EntityId::from_bits(5), // the index after the last slot
    ];
    handles.extend((0..200).map(|_| EntityId::from_bits(rng.random())));
    handles.extend((0..50).map(|_| {
        EntityId::from_bits(
            u64::from(rng.random_range(0..6_u32)) | (u64::from(rng.random_range(0..3_u32)) << 32),
        )
    }));
    handles.retain(|id| !valid.contains(id));
    let (tick, time) = (s.next_tick, s.next_time);
    {
        let mut frame = s.h.begin_frame(Tick(tick), time).unwrap();
        for &id in &handles {
            match frame.record_rigid(id, BoneTransform::IDENTITY, EntityState::default()) {
                Err(RecordError::Entity(EntityError::Unknown(e) | EntityError::Stale(e))) => {
                    assert_eq!(e, id);
                }
                other => panic!("{id}: {other:?}"),
            }
        }
        // The despawned entity keeps its history but records no more.
        assert_eq!(
            frame.record_rigid(s.gone, gone_pose(), EntityState::default()),
            Err(RecordError::Entity(EntityError::Despawned(s.gone)))
        );
    }
    for &id in &handles {
        assert!(
            matches!(
                s.h.despawn(id),
                Err(EntityError::Unknown(_) | EntityError::Stale(_))
            ),
            "{id}"
        );
        assert!(s.h.rig(id).is_err());
        assert!(!s.h.is_active(id));
        assert!(s.h.present_state(id).is_err());
        assert!(matches!(
            s.h.present_placement(id, HitboxId(0)),
            Err(QueryError::Entity(
                EntityError::Unknown(_) | EntityError::Stale(_)
            ))
        ));
    }
    assert_eq!(s.h.despawn(stale), Err(EntityError::Stale(stale)));
    assert_eq!(s.h.despawn(s.gone), Err(EntityError::Despawned(s.gone)));
    assert!(s.h.rig(s.gone).is_ok());
    // Never-issued: beyond the slots, or a generation from the future.
    assert!(matches!(
        s.h.rig(EntityId::from_bits(1000)),
        Err(EntityError::Unknown(_))
    ));
    assert!(matches!(
        s.h.rig(EntityId::from_bits(u64::from(s.rigid.index()) | (9 << 32))),
        Err(EntityError::Unknown(_))
    ));
    // Unknown hitboxes.
    assert_eq!(
        s.h.present_placement(s.rigid, HitboxId(99)),
        Err(QueryError::UnknownHitbox(HitboxId(99)))
    );
    assert_eq!(
        s.h.present_placement(s.never, HitboxId(0)),
        Err(QueryError::Entity(EntityError::NoFrames(s.never)))
    );

    // Garbage in an ignore list changes nothing; a forged hit cannot be mapped.
    let target = at(base_time(10));
    let ray = ray_at(rigid_pose(10).translation);
    let plain = s.h.query(target).ray(&ray).unwrap();
    let ignoring = s.h.query(target).ignore(&handles).ray(&ray).unwrap();
    assert_eq!(plain.hit, ignoring.hit);
    let hit = plain.hit.unwrap();
    for &id in handles.iter().take(20) {
        let forged = Hit { entity: id, ..hit };
        assert!(matches!(
            s.h.map_to_present(&forged, hit.entry.point),
            Err(QueryError::Entity(_))
        ));
    }
    let forged = Hit {
        hitbox: HitboxId(500),
        ..hit
    };
    assert_eq!(
        s.h.map_to_present(&forged, hit.entry.point),
        Err(QueryError::UnknownHitbox(HitboxId(500)))
    );
    assert_same(&before, &fingerprint(&s.h));
}

// --- query shapes --------------------------------------------------------------------------

#[test]
fn malformed_rays_are_refused() {
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    let o = Vec3::ZERO;
    assert!(matches!(
        Ray::new(Vec3::new(nan, 0.0, 0.0), Vec3::X, 1.0),
        Err(RayError::Origin(TransformError::NonFiniteTranslation))
    ));
    assert!(matches!(
        Ray::new(Vec3::new(0.0, inf, 0.0), Vec3::X, 1.0),
        Err(RayError::Origin(TransformError::NonFiniteTranslation))
    ));
    assert!(matches!(
        Ray::new(Vec3::new(0.0, 0.0, 2.0e6), Vec3::X, 1.0),
        Err(RayError::Origin(TransformError::TranslationOutOfRange))
    ));
    assert_eq!(Ray::new(o, Vec3::ZERO, 1.0), Err(RayError::ZeroDirection));
    assert_eq!(Ray::new(o, -Vec3::ZERO, 1.0), Err(RayError::ZeroDirection));
    assert_eq!(
        Ray::new(o, Vec3::new(nan, 1.0, 0.0), 1.0),
        Err(RayError::NonFiniteDirection)
    );
    assert_eq!(
        Ray::new(o, Vec3::new(0.0, -inf, 0.0), 1.0),
        Err(RayError::NonFiniteDirection)
    );
    // Directions too small or too large to normalize in f32 are refused, not NaN.
    for d in [
        Vec3::splat(1.0e-30),
        Vec3::new(f32::MIN_POSITIVE / 8.0, 0.0, 0.0),
        Vec3::splat(1.0e30),
        Vec3::splat(f32::MAX),
    ] {
        let ray = Ray::new(o, d, 1.0);
        match ray {
            Ok(ray) => assert!(ray.dir().is_normalized(), "{d}: {ray:?}"),
            Err(err) => assert_eq!(err, RayError::ZeroDirection, "{d}"),
        }
    }
    for max in [
        -1.0,
        -0.0001,
        nan,
        inf,
        -inf,
        Ray::MAX_DISTANCE * 1.001,
        f32::MAX,
    ] {
        assert!(
            matches!(Ray::new(o, Vec3::X, max), Err(RayError::MaxDistance(m)) if m.to_bits() == max.to_bits()),
            "{max}"
        );
    }
    assert!(Ray::new(o, Vec3::X, 0.0).is_ok());
    assert!(Ray::new(o, Vec3::X, Ray::MAX_DISTANCE).is_ok());
    assert_eq!(
        Ray::between(Vec3::ONE, Vec3::ONE),
        Err(RayError::ZeroDirection)
    );
    assert!(matches!(
        Ray::between(o, Vec3::new(nan, 0.0, 0.0)),
        Err(RayError::Origin(_))
    ));
    assert!(matches!(
        Ray::between(Vec3::new(0.0, 0.0, inf), o),
        Err(RayError::Origin(_))
    ));
    assert!(matches!(
        Ray::between(o, Vec3::splat(3.0e6)),
        Err(RayError::Origin(_))
    ));
}

/// Regression: at 04302cf a direction of magnitude 1e-22 normalized to |dir| = 1.0097
/// (its squared length is subnormal).
#[test]
fn every_accepted_ray_direction_is_unit_length() {
    for magnitude in [
        1.0e-19_f32,
        1.0e-20,
        3.0e-21,
        1.0e-21,
        5.0e-22,
        2.0e-22,
        1.0e-22,
        1.0e-23,
    ] {
        for d in [
            Vec3::new(magnitude, 0.0, 0.0),
            Vec3::new(magnitude, magnitude * 0.5, 0.0),
        ] {
            if let Ok(ray) = Ray::new(Vec3::ZERO, d, 10.0) {
                let length = ray.dir().length();
                // `Ray::dir` is documented as unit; distances along it are taken as metres.
                assert!(
                    (length - 1.0).abs() < 1.0e-5,
                    "direction {d}: |dir| = {length}"
                );
            }
        }
    }
}

#[test]
fn malformed_sweeps_and_overlaps_are_refused() {
    let s = scene();
    let before = fingerprint(&s.h);
    let target = at(base_time(10));
    let inside = rigid_pose(10).translation;
    let ray = ray_at(inside);
    let mut hits = vec![];
    let mut out = vec![];
    let bad_radii = [
        -1.0,
        -1.0e-30,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        MAX_EXTENT * 1.001,
        f32::MAX,
    ];
    for r in bad_radii {
        let same = |e: QueryError| matches!(e, QueryError::Radius(x) if x.to_bits() == r.to_bits());
        assert!(same(s.h.query(target).sweep(&ray, r).unwrap_err()), "{r}");
        assert!(
            same(s.h.query(target).sweep_all(&ray, r, &mut hits).unwrap_err()),
            "{r}"
        );
        assert!(
            same(
                s.h.query(target)
                    .overlap_sphere(Vec3::ZERO, r, &mut out)
                    .unwrap_err()
            ),
            "{r}"
        );
    }
    for c in [
        Vec3::NAN,
        Vec3::new(0.0, f32::INFINITY, 0.0),
        Vec3::splat(-2.0e6),
    ] {
        assert_eq!(
            s.h.query(target).overlap_sphere(c, 1.0, &mut out),
            Err(QueryError::Volume)
        );
        let obb = Obb::new(c, Quat::IDENTITY, Vec3::ONE);
        assert_eq!(
            s.h.query(target).overlap_box(&obb, &mut out),
            Err(QueryError::Volume)
        );
    }
    for q in [
        Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
        Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0),
        Quat::from_xyzw(0.0, 0.0, 0.0, 2.0),
        Quat::from_xyzw(1.0, 1.0, 0.0, 0.0),
        Quat::from_xyzw(0.0, f32::INFINITY, 0.0, 0.0),
    ] {
        let obb = Obb::new(Vec3::ZERO, q, Vec3::ONE);
        assert_eq!(
            s.h.query(target).overlap_box(&obb, &mut out),
            Err(QueryError::Volume),
            "{q:?}"
        );
    }
    for e in [
        Vec3::new(-1.0, 1.0, 1.0),
        Vec3::new(1.0, f32::NAN, 1.0),
        Vec3::new(1.0, 1.0, f32::INFINITY),
        Vec3::splat(2.0e4),
        Vec3::new(-0.0001, 0.0, 0.0),
    ] {
        let obb = Obb::new(Vec3::ZERO, Quat::IDENTITY, e);
        assert_eq!(
            s.h.query(target).overlap_box(&obb, &mut out),
            Err(QueryError::Volume),
            "{e}"
        );
    }
    // Degenerate but valid: a zero radius and a flat box.
    s.h.query(target).sweep(&ray, 0.0).unwrap();
    s.h.query(target)
        .overlap_sphere(inside, 0.0, &mut out)
        .unwrap();
    assert!(!out.is_empty(), "a point inside the box overlaps it");
    s.h.query(target)
        .overlap_box(&Obb::new(inside, Quat::IDENTITY, Vec3::ZERO), &mut out)
        .unwrap();
    assert!(!out.is_empty());
    // A failed query clears nothing it was not asked to (out is cleared only on success).
    assert_same(&before, &fingerprint(&s.h));
}

#[test]
fn malformed_rewind_targets_are_refused() {
    let s = scene();
    let before = fingerprint(&s.h);
    let (lo, hi) = s.h.window().unwrap();
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let invalid_time = |e: RewindError, want: f64| matches!(e, RewindError::InvalidTime(x) if x.to_bits() == want.to_bits());
    for policy in [WindowPolicy::Reject, WindowPolicy::Clamp] {
        let resolve = |t| s.h.resolve(t, policy);
        for t in [nan, -nan, inf, -inf] {
            assert!(invalid_time(resolve(at(t)).unwrap_err(), t), "{t}");
        }
        for (now, latency, bad) in [
            (nan, 0.1, nan),
            (inf, 0.1, inf),
            (-inf, 0.0, -inf),
            (hi, -0.001, -0.001),
            (hi, -inf, -inf),
            (hi, nan, nan),
            (hi, inf, inf),
            (nan, -1.0, nan),
        ] {
            assert!(
                invalid_time(
                    resolve(RewindTarget::latency(now, latency)).unwrap_err(),
                    bad
                ),
                "{now} {latency}"
            );
        }
        // now - latency overflowing to -inf is not a time either.
        assert!(invalid_time(
            resolve(RewindTarget::latency(-f64::MAX, f64::MAX)).unwrap_err(),
            -inf
        ));
        for f in [
            -0.001_f32,
            1.0001,
            -1.0,
            2.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ] {
            let e = resolve(RewindTarget::between(Tick(3), Tick(4), f)).unwrap_err();
            assert!(
                matches!(e, RewindError::InvalidFraction(x) if x.to_bits() == f.to_bits()),
                "{f}"
            );
        }
        assert_eq!(
            resolve(RewindTarget::between(Tick(5), Tick(4), 0.5)),
            Err(RewindError::TicksOutOfOrder {
                from: Tick(5),
                to: Tick(4)
            })
        );
        assert_eq!(
            resolve(RewindTarget::between(Tick(u32::MAX), Tick(0), 0.5)),
            Err(RewindError::TicksOutOfOrder {
                from: Tick(u32::MAX),
                to: Tick(0)
            })
        );
        assert_eq!(
            resolve(RewindTarget::between(Tick(3), Tick(u32::MAX), 0.5)),
            Err(RewindError::UnknownTick(Tick(u32::MAX)))
        );
        // Finite but absurd times are outside the window: refused or clamped.
        for t in [-1.0e300, -5.0, lo - 1e-9, hi + 1e-9, 1.0e300, f64::MAX] {
            match policy {
                WindowPolicy::Reject => {
                    let side = if t < lo {
                        WindowSide::TooOld
                    } else {
                        WindowSide::TooNew
                    };
                    assert_eq!(
                        resolve(at(t)),
                        Err(RewindError::OutOfWindow {
                            requested: t,
                            oldest: lo,
                            newest: hi,
                            side
                        })
                    );
                }
                WindowPolicy::Clamp => {
                    assert_eq!(resolve(at(t)), Ok(if t < lo { lo } else { hi }));
                }
            }
        }
        assert!(
            resolve(RewindTarget::latency(hi, 1.0e300)).is_ok() == (policy == WindowPolicy::Clamp)
        );
        assert!(
            resolve(RewindTarget::latency(f64::MAX, 0.0)).is_ok()
                == (policy == WindowPolicy::Clamp)
        );
    }
    // Queries report the same errors, for every kind of query.
    let ray = ray_at(Vec3::ZERO);
    let mut hits = Vec::new();
    let mut out = Vec::new();
    let obb = Obb::new(Vec3::ZERO, Quat::IDENTITY, Vec3::ONE);
    for target in [
        at(nan),
        RewindTarget::latency(hi, -1.0),
        RewindTarget::between(Tick(9), Tick(1), 0.5),
        RewindTarget::between(Tick(1), Tick(9), f32::NAN),
    ] {
        let want = s.h.resolve(target, WindowPolicy::Reject).unwrap_err();
        let same = |e: QueryError| format!("{e:?}") == format!("{:?}", QueryError::Rewind(want));
        assert!(same(s.h.query(target).ray(&ray).unwrap_err()));
        assert!(same(
            s.h.query(target).ray_all(&ray, &mut hits).unwrap_err()
        ));
        assert!(same(s.h.query(target).sweep(&ray, 0.5).unwrap_err()));
        assert!(same(
            s.h.query(target)
                .sweep_all(&ray, 0.5, &mut hits)
                .unwrap_err()
        ));
        assert!(same(
            s.h.query(target)
                .overlap_sphere(Vec3::ZERO, 1.0, &mut out)
                .unwrap_err()
        ));
        assert!(same(
            s.h.query(target).overlap_box(&obb, &mut out).unwrap_err()
        ));
    }
    assert_same(&before, &fingerprint(&s.h));
}

// --- output sanity ---------------------------------------------------------------------------

fn assert_sane_hit(h: &History, hit: &Hit, ray: &Ray) {
    assert!(hit.distance.is_finite() && hit.distance >= 0.0, "{hit:?}");
    assert!(hit.distance <= ray.max_distance(), "{hit:?}");
    assert!(
        hit.exit_distance.is_finite() && hit.exit_distance >= hit.distance,
        "{hit:?}"
    );
    assert!(
        hit.entry.point.is_finite() && hit.exit.point.is_finite(),
        "{hit:?}"
    );
    assert!(hit.placement.pose.translation.is_finite(), "{hit:?}");
    assert!(hit.sample.time.is_finite());
    assert!(
        h.rig(hit.entity).is_ok(),
        "hit on an unknown entity {hit:?}"
    );
}

// --- property test ---------------------------------------------------------------------------

/// Floats that break things: NaN, infinities, zeros, subnormals, the edges of the accepted
/// ranges, plain values, and anything at all.
fn nasty_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => prop::sample::select(vec![
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
            f32::MIN_POSITIVE / 3.0,
            -f32::MIN_POSITIVE / 3.0,
            1.0e-45,
            f32::MAX,
            f32::MIN,
            1.0e6,
            -1.0e6,
            1.000_001e6,
            1.0e4,
            1.0001e4,
            4.0e6,
            1.0e30,
            1.0,
            -1.0,
            0.5,
        ]),
        3 => -20.0_f32..20.0,
        2 => proptest::num::f32::ANY,
    ]
}

fn nasty_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MIN_POSITIVE / 3.0,
            f64::MAX,
            f64::MIN,
            1.0e12,
            1.000_001e12,
            -1.0e12,
            START,
            START + 0.1,
        ]),
        2 => START - 1.0..START + 2.0,
        1 => proptest::num::f64::ANY,
    ]
}

fn nasty_vec3() -> impl Strategy<Value = Vec3> {
    (nasty_f32(), nasty_f32(), nasty_f32()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

fn nasty_quat() -> impl Strategy<Value = Quat> {
    prop_oneof![
        2 => (-7.0_f32..7.0, nasty_vec3()).prop_map(|(angle, axis)| {
            Quat::from_axis_angle(axis.try_normalize().unwrap_or(Vec3::Y), angle)
        }),
        1 => (nasty_f32(), nasty_f32(), nasty_f32(), nasty_f32())
            .prop_map(|(x, y, z, w)| Quat::from_xyzw(x, y, z, w)),
    ]
}

fn nasty_bone() -> impl Strategy<Value = BoneTransform> {
    (
        prop_oneof![1 => (-10.0_f32..10.0, -10.0_f32..10.0, -10.0_f32..10.0).prop_map(|(x, y, z)| Vec3::new(x, y, z)), 1 => nasty_vec3()],
        nasty_quat(),
        prop_oneof![3 => Just(Vec3::ONE), 1 => nasty_vec3()],
    )
        .prop_map(|(translation, rotation, scale)| BoneTransform { translation, rotation, scale })
}

/// A bone that is always valid.
fn clean_bone() -> impl Strategy<Value = BoneTransform> {
    (
        (-10.0_f32..10.0, -1.0_f32..3.0, -10.0_f32..10.0),
        (-7.0_f32..7.0, -1.0_f32..1.0, -1.0_f32..1.0),
        prop_oneof![3 => Just(1.0_f32), 1 => 0.2_f32..3.0],
    )
        .prop_map(|((x, y, z), (angle, ax, az), scale)| {
            let axis = Vec3::new(ax, 1.0, az).normalize();
            BoneTransform::new(Vec3::new(x, y, z), Quat::from_axis_angle(axis, angle))
                .with_scale(Vec3::splat(scale))
        })
}

/// 16 to 20 bones: all valid, all arbitrary, or valid but for one.
fn bones() -> impl Strategy<Value = Vec<BoneTransform>> {
    prop_oneof![
        2 => prop::collection::vec(clean_bone(), 16..=20),
        1 => prop::collection::vec(nasty_bone(), 16..=20),
        2 => (prop::collection::vec(clean_bone(), 16..=20), 0_usize..16, nasty_bone()).prop_map(|(mut v, i, b)| {
            v[i] = b;
            v
        }),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Who {
    /// One of the scene's entities, by position in [`Scene::ids`].
    Known(usize),
    Bits(u64),
}

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![
        2 => (0_usize..4).prop_map(Who::Known),
        1 => any::<u64>().prop_map(Who::Bits),
        1 => (0_u64..6, 0_u64..3).prop_map(|(i, g)| Who::Bits(i | g << 32)),
    ]
}

#[derive(Debug, Clone)]
struct RecordOp {
    who: Who,
    /// `None`: as many bones as the rig has.
    count: Option<usize>,
    bones: Vec<BoneTransform>,
    state: (bool, bool, bool, u32, u16),
}

fn record_op() -> impl Strategy<Value = RecordOp> {
    (
        who(),
        prop_oneof![4 => Just(None), 1 => (0_usize..20).prop_map(Some)],
        bones(),
        any::<(bool, bool, bool, u32, u16)>(),
    )
        .prop_map(|(who, count, bones, state)| RecordOp {
            who,
            count,
            bones,
            state,
        })
}

#[derive(Debug, Clone)]
enum TickChoice {
    Next(u32),
    Any(u32),
}

#[derive(Debug, Clone)]
enum TimeChoice {
    After(f64),
    Any(f64),
}

#[derive(Debug, Clone)]
enum Target {
    Time(f64),
    /// A fraction of the way through the window.
    Inside(f64),
    Latency(f64, f64),
    Ticks(u32, u32, f32),
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        1 => (nasty_f64()).prop_map(Target::Time),
        3 => (0.0_f64..=1.0).prop_map(Target::Inside),
        1 => (nasty_f64(), nasty_f64()).prop_map(|(n, l)| Target::Latency(n, l)),
        1 => (
            prop_oneof![0_u32..40, any::<u32>()],
            prop_oneof![0_u32..40, any::<u32>()],
            nasty_f32()
        )
            .prop_map(|(a, b, f)| Target::Ticks(a, b, f)),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Dir {
    /// Towards this point.
    At(Vec3),
    Raw(Vec3),
}

impl Dir {
    fn from(self, origin: Vec3) -> Vec3 {
        match self {
            Self::At(point) => point - origin,
            Self::Raw(dir) => dir,
        }
    }
}

#[derive(Debug, Clone)]
enum Shape {
    Ray(Vec3, Dir, f32),
    RayAll(Vec3, Dir, f32),
    Sweep(Vec3, Dir, f32, f32),
    Sphere(Vec3, f32),
    Box(Vec3, Quat, Vec3),
}

fn shape() -> impl Strategy<Value = Shape> {
    let origin = prop_oneof![2 => (-15.0_f32..15.0, -2.0_f32..4.0, -15.0_f32..15.0).prop_map(|(x, y, z)| Vec3::new(x, y, z)), 1 => nasty_vec3()];
    // Mostly aimed at a point among the entities (the direction from the origin to it),
    // sometimes any direction at all.
    let near = [
        Vec3::new(-2.5, 0.0, 0.1),
        Vec3::new(3.0, 1.0, 0.2),
        Vec3::new(3.0, 1.6, 0.3),
        Vec3::new(2.8, 0.4, 0.2),
        Vec3::new(0.0, 0.0, 3.0),
    ];
    let aim = (
        prop::sample::select(near.to_vec()),
        (-0.4_f32..0.4, -0.4_f32..0.4, -0.4_f32..0.4),
    )
        .prop_map(|(p, (x, y, z))| Dir::At(p + Vec3::new(x, y, z)));
    let dir = prop_oneof![
        3 => aim,
        1 => (-1.0_f32..1.0, -1.0_f32..1.0, -1.0_f32..1.0).prop_map(|(x, y, z)| Dir::Raw(Vec3::new(x, y, z))),
        1 => nasty_vec3().prop_map(Dir::Raw),
    ];
    let len = prop_oneof![2 => 0.0_f32..60.0, 1 => nasty_f32()];
    let radius = prop_oneof![2 => 0.0_f32..5.0, 1 => nasty_f32()];
    (origin, dir, len, radius, nasty_quat(), nasty_vec3()).prop_flat_map(|(o, d, l, r, q, e)| {
        let c = match d {
            Dir::At(point) => point,
            Dir::Raw(_) => o,
        };
        prop_oneof![
            Just(Shape::Ray(o, d, l)),
            Just(Shape::RayAll(o, d, l)),
            Just(Shape::Sweep(o, d, l, r)),
            Just(Shape::Sphere(c, r)),
            Just(Shape::Box(c, q, e)),
            Just(Shape::Box(c, q.normalize(), e.abs().min(Vec3::splat(3.0)))),
        ]
    })
}

#[derive(Debug, Clone)]
enum Op {
    Frame(TickChoice, TimeChoice, Vec<RecordOp>),
    Query(Target, bool, u32, Vec<Who>, Shape),
    Despawn(Who),
}

fn op() -> impl Strategy<Value = Op> {
    let tick = prop_oneof![3 => (1_u32..4).prop_map(TickChoice::Next), 1 => any::<u32>().prop_map(TickChoice::Any)];
    let time = prop_oneof![3 => (0.001_f64..0.05).prop_map(TimeChoice::After), 1 => nasty_f64().prop_map(TimeChoice::Any)];
    prop_oneof![
        2 => (tick, time, prop::collection::vec(record_op(), 0..5)).prop_map(|(a, b, c)| Op::Frame(a, b, c)),
        4 => (target(), any::<bool>(), prop_oneof![Just(u32::MAX), any::<u32>()], prop::collection::vec(who(), 0..3), shape())
            .prop_map(|(t, clamp, layers, ignore, s)| Op::Query(t, clamp, layers, ignore, s)),
        1 => who().prop_map(Op::Despawn),
    ]
}

impl Scene {
    fn ids(&self) -> [EntityId; 4] {
        [self.rigid, self.skel, self.gone, self.never]
    }

    fn resolve_who(&self, who: Who) -> EntityId {
        match who {
            Who::Known(i) => self.ids()[i],
            Who::Bits(bits) => EntityId::from_bits(bits),
        }
    }
}

fn run_op(s: &mut Scene, op: &Op) {
    match op {
        Op::Frame(tick, time, records) => {
            let newest = s.h.span().unwrap().1;
            let tick = match *tick {
                TickChoice::Next(d) => Tick(newest.0.0.saturating_add(d)),
                TickChoice::Any(t) => Tick(t),
            };
            let time = match *time {
                TimeChoice::After(d) => newest.1 + d,
                TimeChoice::Any(t) => t,
            };
            let expect_ok =
                time.is_finite() && time.abs() <= 1.0e12 && tick > newest.0 && time > newest.1;
            let ids = s.ids();
            let resolved: Vec<EntityId> = records.iter().map(|r| s.resolve_who(r.who)).collect();
            let bone_counts: Vec<Option<usize>> = resolved
                .iter()
                .map(|&id| s.h.rig(id).ok().map(|rig| usize::from(rig.bone_count())))
                .collect();
            let active: Vec<bool> = resolved.iter().map(|&id| s.h.is_active(id)).collect();
            let mut accepted_rigid = None;
            match s.h.begin_frame(tick, time) {
                Err(_) => assert!(!expect_ok, "frame {tick} at {time} refused"),
                Ok(mut frame) => {
                    assert!(expect_ok, "frame {tick} at {time} accepted");
                    let mut recorded: Vec<EntityId> = Vec::new();
                    for (i, r) in records.iter().enumerate() {
                        let id = resolved[i];
                        let count = r.count.or(bone_counts[i]).unwrap_or(1).min(r.bones.len());
                        let bones = &r.bones[..count];
                        let state = EntityState {
                            alive: r.state.0,
                            lag_compensated: r.state.1,
                            teleported: r.state.2,
                            layers: r.state.3,
                            user: r.state.4,
                            ..EntityState::default()
                        };
                        let result = frame.record(id, bones, state);
                        let should = active[i]
                            && !recorded.contains(&id)
                            && bone_counts[i] == Some(count)
                            && bones.iter().all(|b| b.validate().is_ok());
                        assert_eq!(result.is_ok(), should, "record {id}: {result:?}");
                        if result.is_ok() {
                            recorded.push(id);
                            if id == ids[0] {
                                accepted_rigid = Some(bones[0]);
                            }
                        }
                    }
                }
            }
            // What was accepted is what is there now.
            if let Some(bone) = accepted_rigid {
                let (placed, scale) = s.h.present_placement(s.rigid, HitboxId(0)).unwrap();
                let rig = s.h.rig(s.rigid).unwrap();
                assert_eq!(
                    format!("{placed:?}"),
                    format!("{:?}", rig.hitbox(HitboxId(0)).unwrap().placed(&bone))
                );
                assert_eq!(scale, bone.scale);
            }
        }
        Op::Query(target, clamp, layers, ignore, shape) => {
            let target = match *target {
                Target::Time(t) => RewindTarget::at(t),
                Target::Inside(f) => {
                    let (lo, hi) = s.h.window().unwrap();
                    RewindTarget::at(lo + (hi - lo) * f)
                }
                Target::Latency(now, latency) => RewindTarget::latency(now, latency),
                Target::Ticks(a, b, f) => RewindTarget::between(Tick(a), Tick(b), f),
            };
            let ignore: Vec<EntityId> = ignore.iter().map(|&w| s.resolve_who(w)).collect();
            let policy = if *clamp {
                WindowPolicy::Clamp
            } else {
                WindowPolicy::Reject
            };
            let mut q =
                s.h.query(target)
                    .layers(*layers)
                    .ignore(&ignore)
                    .window_policy(policy);
            let mut hits = Vec::new();
            let mut out = Vec::new();
            let check_hits = |h: &History, hits: &[Hit], ray: &Ray| {
                for hit in hits {
                    assert_sane_hit(h, hit, ray);
                    assert!(!ignore.contains(&hit.entity));
                    assert_ne!(hit.state.layers & layers, 0);
                }
            };
            match *shape {
                Shape::Ray(o, d, l) => {
                    if let Ok(ray) = Ray::new(o, d.from(o), l)
                        && let Ok(trace) = q.ray(&ray)
                    {
                        check_hits(&s.h, trace.hit.as_slice(), &ray);
                    }
                }
                Shape::RayAll(o, d, l) => {
                    if let Ok(ray) = Ray::new(o, d.from(o), l)
                        && q.ray_all(&ray, &mut hits).is_ok()
                    {
                        check_hits(&s.h, &hits, &ray);
                    }
                }
                Shape::Sweep(o, d, l, r) => {
                    if let Ok(ray) = Ray::new(o, d.from(o), l) {
                        if let Ok(trace) = q.sweep(&ray, r) {
                            check_hits(&s.h, trace.hit.as_slice(), &ray);
                        }
                        if q.sweep_all(&ray, r, &mut hits).is_ok() {
                            check_hits(&s.h, &hits, &ray);
                        }
                    }
                }
                Shape::Sphere(c, r) => {
                    if q.overlap_sphere(c, r, &mut out).is_ok() {
                        assert!(out.iter().all(|o| o.distance.is_finite()
                            && o.distance >= 0.0
                            && o.closest_point.is_finite()));
                    }
                }
                Shape::Box(c, rot, e) => {
                    let obb = Obb::new(c, rot, e);
                    if q.overlap_box(&obb, &mut out).is_ok() {
                        assert!(out.iter().all(|o| o.distance.is_finite()
                            && o.distance >= 0.0
                            && o.closest_point.is_finite()));
                    }
                }
            }
        }
        Op::Despawn(who) => {
            let id = s.resolve_who(*who);
            let active = s.h.is_active(id);
            assert_eq!(s.h.despawn(id).is_ok(), active);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 160,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_calls_never_panic_and_never_corrupt_the_past(ops in prop::collection::vec(op(), 1..14)) {
        let mut s = scene();
        let before = fingerprint(&s.h);
        for op in &ops {
            run_op(&mut s, op);
            // While the reference times are still in the window, they answer as before.
            // (A frame far in the future legitimately moves the window past them.)
            let (lo, _) = s.h.window().unwrap();
            if lo <= base_time(2) {
                assert_same(&before, &fingerprint(&s.h));
            } else {
                let refused = matches!(
                    s.h.resolve(at(base_time(2)), WindowPolicy::Reject),
                    Err(RewindError::OutOfWindow { side: WindowSide::TooOld, .. })
                );
                prop_assert!(refused);
            }
        }
    }
}
