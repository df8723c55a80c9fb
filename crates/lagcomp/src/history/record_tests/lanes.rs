//! Spawns, despawns and reserved room: the lanes entities take, counted, and what they read back.

use std::sync::Arc;

use glam::Vec3;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::history::bone_pass::tests::random_bone;
use crate::history::{EntityState, History, HistoryConfig};
use crate::simd::Kernels;
use crate::time::Tick;

use super::{churn_bones, record_with, rig};

/// Entities of four rigs spawn and despawn every few ticks (bursts of spawns that grow
/// the lanes mid-match, single spawns, despawns whose places are reused once their
/// last frame has aged out): every frame still in the window reads back exactly what
/// was recorded, despawned entities stay readable until they age out, and then their
/// handles are stale.
#[test]
fn entities_spawned_and_despawned_keep_their_own_rows() {
    use crate::history::EntityError;
    use crate::query::QueryError;
    use crate::time::{RewindTarget, WindowPolicy};

    let mut history = History::new(HistoryConfig {
        tick_rate: 60.0,
        max_rewind: 0.2,
    })
    .expect("config");
    let capacity = history.capacity() as u32;
    let rigs = [1, 3, 16, 20].map(rig);
    let mut rng = Pcg64Mcg::seed_from_u64(11);
    // serial -> (handle, rig, first tick, tick despawned after).
    let mut known: Vec<(crate::history::EntityId, usize, u32, Option<u32>)> = Vec::new();
    let mut grew = 0;
    for tick in 1..=12 * capacity {
        let bytes_before = history.history_bytes();
        let spawns = match tick % 40 {
            1 => 30,
            _ => usize::from(rng.random_bool(0.3)),
        };
        for _ in 0..spawns {
            let r = rng.random_range(0..rigs.len());
            known.push((history.spawn(Arc::clone(&rigs[r])), r, tick, None));
        }
        for entity in &mut known {
            if entity.3.is_none() && rng.random_bool(0.04) {
                history.despawn(entity.0).expect("active");
                entity.3 = Some(tick - 1);
            }
        }
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 60.0)
            .expect("frame");
        for (serial, &(id, r, _, gone)) in known.iter().enumerate() {
            if gone.is_none() {
                let bones = churn_bones(serial as u32, tick, rigs[r].bone_count());
                frame
                    .record(id, &bones, EntityState::default())
                    .expect("valid");
            }
        }
        frame.finish();
        grew += usize::from(history.history_bytes() > bytes_before);
        let oldest = tick.saturating_sub(capacity - 1).max(1);
        for (serial, &(id, r, first, gone)) in known.iter().enumerate() {
            let last = gone.unwrap_or(tick);
            if last < first {
                continue; // despawned before it was ever recorded
            }
            if last < oldest {
                // Aged out: the handle is stale once its slot has been freed.
                let at = history.entity_at(id, RewindTarget::at(0.0), WindowPolicy::Clamp);
                assert!(
                    matches!(at, Err(QueryError::Entity(EntityError::Stale(_)))),
                    "tick {tick}: entity {serial} aged out, got {:?}",
                    at.map(|a| a.is_some())
                );
                continue;
            }
            let n = rigs[r].bone_count();
            let (window_start, _) = history.window().expect("frames recorded");
            let readable = (oldest..=tick)
                .find(|&t| f64::from(t) / 60.0 >= window_start)
                .expect("the newest frame is in the window");
            for t in first.max(readable)..=last {
                let target = RewindTarget::between(Tick(t), Tick(t), 0.0);
                let at = history
                    .entity_at(id, target, WindowPolicy::Reject)
                    .expect("in the window")
                    .unwrap_or_else(|| panic!("tick {tick}: entity {serial} at {t}"));
                let expected = churn_bones(serial as u32, t, n);
                for (b, want) in expected.iter().enumerate() {
                    let got = at.bone(b as u16).expect("a bone of its rig");
                    assert!(
                        got.translation.to_array().map(f32::to_bits)
                            == want.translation.to_array().map(f32::to_bits)
                            && got.rotation.to_array().map(f32::to_bits)
                                == want.rotation.to_array().map(f32::to_bits)
                            && got.scale.to_array().map(f32::to_bits)
                                == want.scale.to_array().map(f32::to_bits),
                        "tick {tick}: entity {serial} bone {b} at {t}: {got:?} != {want:?}"
                    );
                }
            }
        }
    }
    assert!(known.len() > 150, "{} entities", known.len());
    assert!(grew >= 3, "the lanes grew {grew} times");
    // Places are reused: far fewer than every entity ever spawned would need.
    let places: usize = known
        .iter()
        .map(|&(_, r, _, _)| usize::from(rigs[r].bone_count()))
        .sum();
    assert!(
        history.lanes.ranges.end() < places / 2,
        "{} places for {places} bones spawned",
        history.lanes.ranges.end()
    );
}

/// `history_bytes` counts the lanes as allocated: exactly what the entities spawned
/// before the first frame need, then a quarter more when one more entity arrives, and
/// nothing more while despawned entities' places are reused.
#[test]
fn the_lanes_are_sized_to_the_spawned_entities_and_counted() {
    use crate::history::{EntityFrame, EntityVelocity, FrameMeta};
    let mut history = History::new(HistoryConfig::default()).expect("config");
    let capacity = history.capacity();
    let rig = rig(16);
    let mut ids: Vec<_> = (0..10).map(|_| history.spawn(Arc::clone(&rig))).collect();
    let expected = |places: usize, slots: usize| {
        (capacity * places + 1) * 12
            + capacity * places * 16
            + capacity * slots * size_of::<EntityFrame>()
            + capacity * slots * size_of::<EntityVelocity>()
            + capacity * size_of::<FrameMeta>()
    };
    let mut tick = 0;
    let mut frame_with = |history: &mut History, ids: &[crate::history::EntityId]| {
        tick += 1;
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .expect("frame");
        let bones = vec![crate::math::BoneTransform::IDENTITY; 16];
        for &id in ids {
            frame
                .record(id, &bones, EntityState::default())
                .expect("valid");
        }
    };
    frame_with(&mut history, &ids);
    assert_eq!(history.history_bytes(), expected(160, 10));
    ids.push(history.spawn(Arc::clone(&rig)));
    frame_with(&mut history, &ids);
    // 176 places needed, 160 + 40 given; 11 slots needed, 10 + 2 given.
    assert_eq!(history.history_bytes(), expected(200, 12));
    // Despawned, aged out, respawned: the same places and slot, no growth.
    history.despawn(ids.remove(3)).expect("despawn");
    for _ in 0..capacity {
        frame_with(&mut history, &ids);
    }
    ids.push(history.spawn(Arc::clone(&rig)));
    frame_with(&mut history, &ids);
    assert_eq!(history.history_bytes(), expected(200, 12));
    assert_eq!(history.lanes.ranges.end(), 176);
}

#[test]
fn a_flat_broadphase_rebuilt_once_a_window_would_change_nothing() {
    let mut history = History::new(HistoryConfig::default()).expect("config");
    let capacity = history.capacity();
    let rig = rig(16);
    let ids: Vec<_> = (0..40).map(|_| history.spawn(Arc::clone(&rig))).collect();
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    let mut bones = Vec::new();
    let ticks = 3 * capacity as u32 + 5;
    for tick in 1..=ticks {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .expect("frame");
        for (k, &id) in ids.iter().enumerate() {
            // Every entity wanders: where it ends up has nothing to do with where the
            // broadphase was built.
            bones.clear();
            let at = Vec3::new(
                k as f32 * 3.0 + rng.random_range(-1.0..1.0) * tick as f32,
                0.0,
                rng.random_range(-50.0..50.0),
            );
            bones.extend((0..16).map(|b| {
                let mut t = crate::math::BoneTransform::IDENTITY;
                t.translation = at + Vec3::Y * (0.1 * b as f32);
                t
            }));
            frame
                .record(id, &bones, EntityState::default())
                .expect("valid");
        }
    }
    assert!(history.tree.keeps_its_shape(), "40 entities: the flat form");
    assert!(
        history.frames_since_build > 2 * capacity,
        "not rebuilt since spawning"
    );
    let kept = history.tree.span_bits();
    let mut rebuilt = history.clone();
    rebuilt.rebuild_tree();
    assert_eq!(rebuilt.frames_since_build, 0, "rebuilt");
    // The rebuild boxes the newest two frames anew; the older frames keep the tree
    // they were recorded under.
    let newest = rebuilt.newest_seq;
    assert_eq!(rebuilt.tree_from, newest - 1);
    for ring in [rebuilt.ring(newest - 1), rebuilt.ring(newest)] {
        assert_eq!(
            rebuilt.tree.frame_span_bits(ring),
            history.tree.frame_span_bits(ring),
            "ring slot {ring}"
        );
    }
    assert_eq!(rebuilt.old_tree.span_bits(), kept);
}

/// Entities spawned mid-match into reserved room do not lay the lanes out again, and
/// the ones recorded before keep their history.
#[test]
fn reserved_room_takes_later_spawns_without_growing() {
    let mut history = History::new(HistoryConfig::default()).expect("config");
    let rig = rig(16);
    let mut ids = vec![history.spawn(Arc::clone(&rig))];
    let bones = |k: usize| {
        let mut t = crate::math::BoneTransform::IDENTITY;
        t.translation = glam::Vec3::new(k as f32, 1.0, 2.0);
        vec![t; 16]
    };
    let record = |history: &mut History, ids: &[crate::history::EntityId], tick: u32| {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .expect("frame");
        for (k, &id) in ids.iter().enumerate() {
            frame
                .record(id, &bones(k), EntityState::default())
                .expect("valid");
        }
    };
    record(&mut history, &ids, 1);
    history.reserve(9, 9 * 16);
    let reserved = history.history_bytes();
    assert!(reserved > 0);
    for tick in 2..11 {
        ids.push(history.spawn(Arc::clone(&rig)));
        record(&mut history, &ids, tick);
        assert_eq!(history.history_bytes(), reserved, "grew at tick {tick}");
    }
    // The first entity's frame 1 survived the reservation's copy.
    let time = 1.0 / 64.0;
    let posed = history
        .entity_at(
            ids[0],
            crate::RewindTarget::Time(time),
            crate::WindowPolicy::Reject,
        )
        .expect("in the window")
        .expect("recorded then");
    let bone = posed.bone(3).expect("a bone");
    assert_eq!(bone.translation, glam::Vec3::new(0.0, 1.0, 2.0));
    // One entity past the reservation grows the lanes.
    ids.push(history.spawn(Arc::clone(&rig)));
    record(&mut history, &ids, 11);
    assert!(history.history_bytes() > reserved);
}

#[test]
fn a_history_larger_than_the_caches_sits_on_huge_pages_and_records_the_same() {
    // 200 entities x 20 bones x 3 s at 60 Hz: about 24 MB of rings.
    let config = HistoryConfig {
        tick_rate: 60.0,
        max_rewind: 3.0,
    };
    let mut history = History::new(config).expect("config");
    let rig = rig(20);
    let mut ids: Vec<_> = (0..200).map(|_| history.spawn(Arc::clone(&rig))).collect();
    // A hole in the slot order, and an entity recorded out of spawn order.
    history.despawn(ids.remove(57)).expect("despawn");
    ids.swap(3, 150);
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    let mut bones = Vec::new();
    for tick in 1..=3 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 60.0)
            .expect("frame");
        for &id in &ids {
            bones.clear();
            bones.extend((0..20).map(|_| random_bone(&mut rng, false)));
            frame
                .record(id, &bones, EntityState::default())
                .expect("valid");
        }
        drop(frame);
        let lanes = &history.lanes;
        for lane in [
            lanes.translations.held_bytes(),
            lanes.rotations.held_bytes(),
        ] {
            assert!(lane > 8 << 20, "{lane} bytes");
        }
        #[cfg(target_os = "linux")]
        assert!(lanes.translations.on_huge_pages() && lanes.rotations.on_huge_pages());
        // The last entity's newest pose is what was recorded.
        let slot = &history.slots[ids[ids.len() - 1].index() as usize];
        let at = history.lanes.row(slot, history.newest_ring);
        let row = &history.lanes.translations[at..at + 20];
        let sent: Vec<[f32; 3]> = bones.iter().map(|b| b.translation.to_array()).collect();
        assert_eq!(row, sent.as_slice());
    }
    let small = record_with(Kernels::detect()).1;
    assert!(
        !small.lanes.rotations.on_huge_pages(),
        "a small history is not"
    );
}
