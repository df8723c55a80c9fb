//! The client's interpolation against the server's rebuild: the same snapshots recorded
//! into a `lagcomp::History`, and every view a `SnapshotBuffer` produces turned into a
//! rewind target (`stamp`) that the server resolves to bit-identical bones.

use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, NearestReason, Quat, Rig,
    SampleKind, Shape, Tick, Vec3, WindowPolicy, Zone,
};
use lagcomp_net::{Pushed, Snapshot, SnapshotBuffer, View, stamp};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const RATE: f64 = 64.0;
const BONES: u16 = 6;

fn rig() -> Arc<Rig> {
    let hitboxes = (0..BONES)
        .map(|bone| {
            Hitbox::new(
                bone,
                "bone",
                Zone::Torso,
                bone,
                Shape::sphere(0.1 + 0.01 * f32::from(bone)),
            )
        })
        .collect();
    Arc::new(Rig::new(BONES, hitboxes).expect("valid rig"))
}

fn random_rotation(rng: &mut Pcg64Mcg) -> Quat {
    loop {
        let v: [f32; 4] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        let q = Quat::from_array(v);
        if q.length() > 0.1 {
            return q.normalize();
        }
    }
}

/// The next pose of a bone: sometimes a small turn (the core's nlerp path), sometimes a
/// large one (its slerp path), sometimes the same rotation written in the opposite
/// hemisphere; scaled bones only on the scaled entity.
fn next_bone(rng: &mut Pcg64Mcg, previous: &BoneTransform, scaled: bool) -> BoneTransform {
    let translation = previous.translation
        + Vec3::new(
            rng.random_range(-0.5..0.5),
            rng.random_range(-0.2..0.2),
            rng.random_range(-0.5..0.5),
        );
    let rotation = match rng.random_range(0..4) {
        0 => random_rotation(rng),
        1 => -previous.rotation,
        _ => {
            let axis = Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(0.1..1.0),
            )
            .normalize();
            (Quat::from_axis_angle(axis, rng.random_range(-0.03..0.03)) * previous.rotation)
                .normalize()
        }
    };
    let scale = if scaled {
        Vec3::new(
            rng.random_range(0.5..2.0),
            rng.random_range(0.5..2.0),
            rng.random_range(0.5..2.0),
        )
    } else {
        Vec3::ONE
    };
    BoneTransform {
        translation,
        rotation,
        scale,
    }
}

/// A server recording two entities (one with scaled bones) every tick, and a client that
/// receives every `send_every`-th tick of each. Teleports happen at random ticks; the
/// server marks the next snapshot it sends as teleported if the entity teleported at any
/// tick since the last one it sent (the protocol the `interp` module asks for).
struct Scene {
    history: History,
    entities: [(EntityId, SnapshotBuffer); 2],
}

fn scene(seed: u64, ticks: u32, send_every: u32) -> Scene {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut history = History::new(HistoryConfig {
        tick_rate: RATE,
        max_rewind: 10.0,
    })
    .expect("valid config");
    let ids = [history.spawn(rig()), history.spawn(rig())];
    let mut buffers = [SnapshotBuffer::new(1024), SnapshotBuffer::new(1024)];
    let mut poses: [Vec<BoneTransform>; 2] = std::array::from_fn(|_| {
        (0..BONES)
            .map(|_| BoneTransform::new(Vec3::ZERO, random_rotation(&mut rng)))
            .collect()
    });
    let mut teleport_pending = [false; 2];
    for tick in 0..ticks {
        let time = f64::from(tick) / RATE;
        let mut frame = history.begin_frame(Tick(tick), time).expect("increasing");
        for (e, id) in ids.iter().enumerate() {
            let teleported = tick > 0 && rng.random_bool(0.04);
            let mut next: Vec<BoneTransform> = poses[e]
                .iter()
                .map(|bone| next_bone(&mut rng, bone, e == 1))
                .collect();
            if teleported {
                let jump = Vec3::new(rng.random_range(-50.0..50.0), 0.0, 30.0);
                for bone in &mut next {
                    bone.translation += jump;
                }
            }
            poses[e] = next;
            let state = EntityState {
                teleported,
                ..EntityState::default()
            };
            frame.record(*id, &poses[e], state).expect("valid record");
            // What the snapshot says the entity moves at, recorded as sent: sometimes
            // standing, sometimes a sprint, sometimes a vehicle.
            let velocity = match rng.random_range(0..4) {
                0 => Vec3::ZERO,
                1 => Vec3::new(
                    rng.random_range(-1e3..1e3),
                    0.0,
                    rng.random_range(-1e3..1e3),
                ),
                _ => Vec3::new(
                    rng.random_range(-12.0..12.0),
                    rng.random_range(-5.0..5.0),
                    rng.random_range(-12.0..12.0),
                ),
            };
            frame
                .record_velocity(*id, velocity)
                .expect("valid velocity");
            teleport_pending[e] |= teleported;
            if tick % send_every == 0 {
                let snapshot = Snapshot {
                    tick: Tick(tick),
                    time,
                    bones: poses[e].clone(),
                    velocity,
                    teleport: std::mem::take(&mut teleport_pending[e]),
                };
                assert_eq!(buffers[e].push(snapshot), Pushed::Accepted);
            }
        }
    }
    let [b0, b1] = buffers;
    Scene {
        history,
        entities: [(ids[0], b0), (ids[1], b1)],
    }
}

fn bits(bone: &BoneTransform) -> [u32; 10] {
    let t = bone.translation.to_array();
    let r = bone.rotation.to_array();
    let s = bone.scale.to_array();
    [t[0], t[1], t[2], r[0], r[1], r[2], r[3], s[0], s[1], s[2]].map(f32::to_bits)
}

/// Samples `buffer` at `render_time`, stamps the view, rebuilds it on the server and
/// compares every bone bit for bit. Returns the view.
fn check(history: &History, id: EntityId, buffer: &SnapshotBuffer, render_time: f64) -> View {
    let mut client = Vec::new();
    let view = buffer
        .sample(render_time, 0.25, &mut client)
        .expect("snapshots held");
    let Some(target) = stamp(&view).rewind_target() else {
        return view;
    };
    let at = history
        .entity_at(id, target, WindowPolicy::Reject)
        .unwrap_or_else(|e| panic!("{view:?} at {render_time}: {e}"))
        .expect("recorded then");
    // How the server got its pose agrees with how the client got its own.
    match (view, at.sample().kind) {
        (View::Exact { tick } | View::Held { tick }, SampleKind::Exact { tick: server }) => {
            assert_eq!(tick, server);
        }
        (
            View::Interpolated { from, to, fraction },
            SampleKind::Interpolated {
                from: f,
                to: t,
                alpha,
            },
        ) => assert_eq!((from, to, fraction.to_bits()), (f, t, alpha.to_bits())),
        (
            View::Nearest { tick, .. },
            SampleKind::Nearest {
                tick: server,
                reason: NearestReason::Teleport,
            },
        ) => assert_eq!(tick, server),
        (client, server) => panic!("client {client:?}, server {server:?} at {render_time}"),
    }
    assert_eq!(client.len(), usize::from(BONES));
    for (bone, mine) in client.iter().enumerate() {
        let theirs = at.bone(bone as u16).expect("bone exists");
        assert_eq!(
            bits(mine),
            bits(&theirs),
            "{view:?} bone {bone}: client {mine:?}, server {theirs:?}"
        );
    }
    view
}

#[test]
fn random_render_times_rebuild_bit_for_bit() {
    for (seed, send_every) in [(1, 1), (2, 2), (3, 3)] {
        let s = scene(seed, 300, send_every);
        let mut rng = Pcg64Mcg::seed_from_u64(seed + 100);
        let mut kinds = [0_u32; 4];
        for (id, buffer) in &s.entities {
            let oldest = buffer.oldest().unwrap().time;
            let newest = buffer.newest().unwrap().time;
            for _ in 0..4000 {
                let render_time = rng.random_range(oldest - 0.05..newest);
                let view = check(&s.history, *id, buffer, render_time);
                kinds[match view {
                    View::Interpolated { .. } => 0,
                    View::Nearest { .. } => 1,
                    View::Held { .. } => 2,
                    _ => 3,
                }] += 1;
            }
        }
        // The random times covered blends, teleports and the held start.
        assert!(
            kinds[0] > 5000 && kinds[1] > 50 && kinds[2] > 50,
            "{kinds:?}"
        );
    }
}

#[test]
fn many_fractions_between_each_pair_rebuild_bit_for_bit() {
    let s = scene(7, 120, 2);
    let mut rng = Pcg64Mcg::seed_from_u64(8);
    for (id, buffer) in &s.entities {
        let snapshots: Vec<&Snapshot> = buffer.snapshots().collect();
        for pair in snapshots.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let span = b.time - a.time;
            // Both ends, just inside them (fractions that round to 0 or 1 in f32), the
            // teleport rule's pivot, and random fractions.
            let mut times = vec![
                a.time,
                a.time + span * 1e-12,
                b.time - span * 1e-12,
                a.time + span * 0.5,
                a.time + span * f64::from(0.5_f32.next_down()),
            ];
            times.extend((0..200).map(|_| a.time + span * rng.random::<f64>()));
            for render_time in times {
                let view = check(&s.history, *id, buffer, render_time);
                if let View::Interpolated { fraction, .. } = view {
                    let expected = ((render_time - a.time) / span) as f32;
                    assert_eq!(fraction.to_bits(), expected.to_bits());
                }
            }
        }
    }
}

#[test]
fn a_teleport_shows_the_nearer_frame() {
    let mut buffer = SnapshotBuffer::new(8);
    let at = |x: f32| vec![BoneTransform::from_translation(Vec3::new(x, 0.0, 0.0))];
    let snapshot = |tick: u32, x: f32, teleport: bool| Snapshot {
        tick: Tick(tick),
        time: f64::from(tick) * 0.1,
        bones: at(x),
        velocity: Vec3::ZERO,
        teleport,
    };
    buffer.push(snapshot(1, 0.0, false));
    buffer.push(snapshot(2, 100.0, true));
    let mut out = Vec::new();
    assert!(matches!(
        buffer.sample(0.14, 0.25, &mut out),
        Some(View::Nearest { tick: Tick(1), .. })
    ));
    assert_eq!(out, at(0.0));
    assert!(matches!(
        buffer.sample(0.16, 0.25, &mut out),
        Some(View::Nearest { tick: Tick(2), .. })
    ));
    assert_eq!(out, at(100.0));
}

/// What a client draws past its newest snapshot, rebuilt by the server from the frame of
/// that snapshot and the velocity recorded with it: the same bits, for random velocities
/// (standing, running, vehicles) and random times past the snapshot, the extrapolation
/// limit and beyond it (held at the limit) included.
#[test]
fn extrapolated_views_rebuild_bit_for_bit() {
    let mut rng = Pcg64Mcg::seed_from_u64(24);
    let mut checked = 0;
    for (seed, send_every) in [(11, 1), (12, 3)] {
        let s = scene(seed, 200, send_every);
        for (id, full) in &s.entities {
            let snapshots: Vec<&Snapshot> = full.snapshots().collect();
            for _ in 0..150 {
                // The client's newest snapshot is a random one: those after it were lost.
                let last = rng.random_range(1..snapshots.len());
                let mut buffer = SnapshotBuffer::new(8);
                for snapshot in &snapshots[last.saturating_sub(4)..=last] {
                    buffer.push((*snapshot).clone());
                }
                let newest = snapshots[last];
                let past = match rng.random_range(0..8) {
                    0 => 0.25,
                    1 => rng.random_range(0.25..1.0),
                    2 => f64::from(f32::EPSILON),
                    _ => rng.random_range(1e-6..0.25),
                };
                let mut client = Vec::new();
                let view = buffer
                    .sample(newest.time + past, 0.25, &mut client)
                    .expect("snapshots held");
                let View::Extrapolated { from, by } = view else {
                    panic!("{view:?} {past} s past the newest snapshot");
                };
                assert_eq!(from, newest.tick);
                let drawn = s
                    .history
                    .entity_extrapolated(*id, from, by)
                    .unwrap_or_else(|e| panic!("{view:?}: {e}"))
                    .expect("recorded at the snapshot's tick");
                assert_eq!(drawn.rewind().time, newest.time + by);
                for (bone, mine) in client.iter().enumerate() {
                    let theirs = drawn.bone(bone as u16).expect("bone exists");
                    assert_eq!(
                        bits(mine),
                        bits(&theirs),
                        "{view:?} bone {bone}: client {mine:?}, server {theirs:?}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * 2 * 150);
}
