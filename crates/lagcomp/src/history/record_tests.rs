//! Tests of recording: every way of recording a tick against recording entity by entity.

use std::sync::Arc;

use glam::Vec3;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::bone_pass::tests::random_bone;
use super::{EntityState, History, HistoryConfig, RecordError};
use crate::math::BoneTransform;
use crate::rig::{Hitbox, Rig, Shape, Zone};
use crate::simd::Kernels;
use crate::time::Tick;

/// A rig of `bones` bones, every third one bare (reach 0).
fn rig(bones: u16) -> Arc<Rig> {
    let hitboxes = (0..bones)
        .filter(|b| b % 3 != 2 || bones == 1)
        .map(|b| {
            Hitbox::new(
                b,
                format!("b{b}"),
                Zone::Torso,
                b,
                Shape::Sphere { radius: 0.1 },
            )
            .offset_by(Vec3::new(0.0, 0.05 * f32::from(b), 0.0))
        })
        .collect();
    Arc::new(Rig::new(bones, hitboxes).expect("valid rig"))
}

/// Records 3 windows of ticks with `kernel`: mostly valid bones, some adversarial ones,
/// a few scaled. Returns every record's outcome and the history.
fn record_with(kernel: Kernels) -> (Vec<Result<(), RecordError>>, History) {
    let mut history = History::new(HistoryConfig {
        tick_rate: 60.0,
        max_rewind: 0.2,
    })
    .expect("config");
    history.kernels = kernel;
    let rigs = [1, 3, 4, 5, 16, 20].map(rig);
    let ids: Vec<_> = (0..18)
        .map(|i| history.spawn(Arc::clone(&rigs[i % rigs.len()])))
        .collect();
    let mut rng = Pcg64Mcg::seed_from_u64(77);
    let mut outcomes = Vec::new();
    let mut bones = Vec::new();
    for tick in 1..=3 * history.capacity() as u32 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 60.0)
            .expect("frame");
        for (i, &id) in ids.iter().enumerate() {
            let n = rigs[i % rigs.len()].bone_count();
            let adversarial = rng.random_bool(0.3);
            bones.clear();
            bones.extend((0..n).map(|_| random_bone(&mut rng, adversarial)));
            outcomes.push(frame.record(id, &bones, EntityState::default()));
        }
    }
    (outcomes, history)
}

/// Everything recorded, as bits: every slot's ring, row by row.
fn stored_bits(history: &History) -> Vec<u32> {
    let mut bits = Vec::new();
    let lanes = &history.lanes;
    for (index, slot) in history.slots.iter().enumerate() {
        bits.extend(slot.scales.iter().flatten().map(|v| v.to_bits()));
        for ring in 0..history.capacity {
            let at = history.lanes.row(slot, ring);
            let row = at..at + slot.bone_count;
            let translations = &lanes.translations[row.clone()];
            bits.extend(translations.iter().flatten().map(|v| v.to_bits()));
            let rotations = &lanes.rotations[row];
            bits.extend(rotations.iter().flatten().map(|v| v.to_bits()));
            let frame = history.entity_frame(index, ring);
            bits.extend([
                frame.seq,
                frame.layers,
                u32::from(frame.user),
                u32::from(frame.flags),
            ]);
            bits.extend(
                frame
                    .bounds_min
                    .iter()
                    .chain(&frame.bounds_max)
                    .map(|v| v.to_bits()),
            );
        }
    }
    bits.extend(history.tree.span_bits().iter().flatten());
    bits.extend(history.old_tree.span_bits().iter().flatten());
    bits.extend([history.tree_from as u32]);
    bits
}

/// The bones entity `serial` is recorded with at `tick`: distinct in every bone, tick
/// and entity, so a row read from the wrong place cannot match. Every fifth entity is
/// scaled (a scale lane of its own).
fn churn_bones(serial: u32, tick: u32, n: u16) -> Vec<crate::math::BoneTransform> {
    (0..n)
        .map(|b| {
            // Inside the accepted coordinate range (1e6).
            let f = |k: u32| ((serial * 7919 + tick * 31 + u32::from(b) * 3 + k) % 900_000) as f32;
            let rotation = glam::Quat::from_rotation_y(f(0) * 0.01);
            let bone = crate::math::BoneTransform::new(Vec3::new(f(0), f(1), -f(2)), rotation);
            if serial.is_multiple_of(5) {
                bone.with_scale(Vec3::splat(1.0 + f(3) * 1e-4))
            } else {
                bone
            }
        })
        .collect()
}

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
    use super::{EntityFrame, FrameMeta};
    let mut history = History::new(HistoryConfig::default()).expect("config");
    let capacity = history.capacity();
    let rig = rig(16);
    let mut ids: Vec<_> = (0..10).map(|_| history.spawn(Arc::clone(&rig))).collect();
    let expected = |places: usize, slots: usize| {
        (capacity * places + 1) * 12
            + capacity * places * 16
            + capacity * slots * size_of::<EntityFrame>()
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

/// Records 3 windows of ticks like `record_with`, one `record_all` per tick with every
/// entity (some with lag compensation off). Returns whether each entity was recorded in
/// each tick, and the history; checks that the error returned is the first entity left
/// out.
fn record_all_with(kernel: Kernels, stream: bool) -> (Vec<bool>, History) {
    let mut history = History::new(HistoryConfig {
        tick_rate: 60.0,
        max_rewind: 0.2,
    })
    .expect("config");
    history.kernels = kernel;
    history.lanes.force_stream = Some(stream);
    let rigs = [1, 3, 4, 5, 16, 20].map(rig);
    let entities: Vec<_> = (0..18)
        .map(|i| {
            let state = EntityState {
                lag_compensated: i % 5 != 0,
                user: i as u16,
                ..EntityState::default()
            };
            (history.spawn(Arc::clone(&rigs[i % rigs.len()])), state)
        })
        .collect();
    let mut rng = Pcg64Mcg::seed_from_u64(77);
    let mut recorded = Vec::new();
    let mut bones = Vec::new();
    for tick in 1..=3 * history.capacity() as u32 {
        bones.clear();
        for i in 0..entities.len() {
            let n = rigs[i % rigs.len()].bone_count();
            let adversarial = rng.random_bool(0.3);
            bones.extend((0..n).map(|_| random_bone(&mut rng, adversarial)));
        }
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 60.0)
            .expect("frame");
        let result = frame.record_all(&entities, &bones);
        drop(frame);
        let in_frame: Vec<bool> = entities
            .iter()
            .map(|(id, _)| history.slots[id.index() as usize].last_seq == history.newest_seq)
            .collect();
        for (&(id, state), &yes) in entities.iter().zip(&in_frame) {
            if yes {
                assert_eq!(history.present_state(id), Ok(state));
            }
        }
        match (result, in_frame.iter().position(|yes| !yes)) {
            (Ok(()), None) => {}
            (Err(RecordError::Transform { entity, .. }), Some(first)) => {
                assert_eq!(entity, entities[first].0, "the first entity left out");
            }
            (other, first) => panic!("tick {tick}: {other:?}, first left out {first:?}"),
        }
        recorded.extend(in_frame);
    }
    (recorded, history)
}

#[test]
fn record_all_records_what_record_does() {
    // The same ticks recorded entity by entity (with each entity's state).
    let (reference_outcomes, reference) = {
        let mut history = History::new(HistoryConfig {
            tick_rate: 60.0,
            max_rewind: 0.2,
        })
        .expect("config");
        let rigs = [1, 3, 4, 5, 16, 20].map(rig);
        let ids: Vec<_> = (0..18)
            .map(|i| history.spawn(Arc::clone(&rigs[i % rigs.len()])))
            .collect();
        let mut rng = Pcg64Mcg::seed_from_u64(77);
        let mut outcomes = Vec::new();
        let mut bones = Vec::new();
        for tick in 1..=3 * history.capacity() as u32 {
            let mut all = Vec::new();
            for i in 0..ids.len() {
                let n = rigs[i % rigs.len()].bone_count();
                let adversarial = rng.random_bool(0.3);
                bones.clear();
                bones.extend((0..n).map(|_| random_bone(&mut rng, adversarial)));
                all.push(bones.clone());
            }
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                .expect("frame");
            for (i, (&id, bones)) in ids.iter().zip(&all).enumerate() {
                let state = EntityState {
                    lag_compensated: i % 5 != 0,
                    user: i as u16,
                    ..EntityState::default()
                };
                outcomes.push(frame.record(id, bones, state).is_ok());
            }
        }
        (outcomes, history)
    };
    assert!(reference_outcomes.iter().filter(|ok| !**ok).count() > 100);
    // With and without streaming stores (only the AVX2 batch streams; the others must
    // ignore the setting).
    for kernel in Kernels::available() {
        for stream in [false, true] {
            let (recorded, history) = record_all_with(kernel, stream);
            assert_eq!(history.lanes.stream, stream);
            assert_eq!(
                recorded, reference_outcomes,
                "{kernel:?}, streaming {stream}: which entities were recorded"
            );
            assert!(
                stored_bits(&history) == stored_bits(&reference),
                "{kernel:?}, streaming {stream}: stored history differs"
            );
            assert_eq!(history.uncompensated, reference.uncompensated, "{kernel:?}");
        }
    }
}

#[test]
fn record_all_refuses_a_bad_batch_whole() {
    let mut history = History::new(HistoryConfig::default()).expect("config");
    let (a, b) = (history.spawn(rig(4)), history.spawn(rig(3)));
    let gone = history.spawn(rig(3));
    history.despawn(gone).expect("despawn");
    let state = EntityState::default();
    let bones = vec![crate::math::BoneTransform::IDENTITY; 7];
    let mut frame = history.begin_frame(Tick(1), 0.1).expect("frame");
    assert_eq!(
        frame.record_all(&[(a, state), (b, state)], &bones[..6]),
        Err(RecordError::BatchBones {
            expected: 7,
            got: 6
        })
    );
    // Despawned before it was ever recorded: its slot is free, the handle stale.
    assert_eq!(
        frame.record_all(&[(a, state), (gone, state)], &bones),
        Err(RecordError::Entity(crate::history::EntityError::Stale(
            gone
        )))
    );
    // Nothing was recorded by the refused batches: both can still be recorded once.
    assert_eq!(frame.record_all(&[(a, state), (b, state)], &bones), Ok(()));
    assert_eq!(
        frame.record_all(&[(b, state)], &bones[..3]),
        Err(RecordError::AlreadyRecorded(b))
    );
    frame.finish();
    assert_eq!(history.present_state(a), Ok(state));
}

#[test]
fn every_kernel_records_the_same_history_and_decisions() {
    let (outcomes, reference) = record_with(Kernels::PORTABLE);
    let accepted = outcomes.iter().filter(|o| o.is_ok()).count();
    let rejected = outcomes.len() - accepted;
    assert!(
        accepted > 100 && rejected > 100,
        "{accepted} accepted, {rejected} rejected"
    );
    assert!(
        reference.slots.iter().any(|s| !s.scales.is_empty()),
        "some entity was recorded with a scale"
    );
    for kernel in Kernels::available() {
        let (got, history) = record_with(kernel);
        assert_eq!(got, outcomes, "{kernel:?}: accept/reject decisions");
        assert!(
            stored_bits(&history) == stored_bits(&reference),
            "{kernel:?}: stored history differs"
        );
    }
}

/// Records the same calls into two histories: `planned` with `record_all` (batch plans
/// on), `reference` one `record` per entity in batch order (what `record_all` is
/// documented to do once its batch is accepted). Both must hold the same bits after
/// every tick.
struct TwinHistories {
    planned: History,
    reference: History,
}

impl TwinHistories {
    /// `planned` records with `kernels`; `reference`, entity by entity, with the portable
    /// ones.
    fn new(stream: bool, flat: bool, kernels: Kernels) -> Self {
        let mut planned = History::new(HistoryConfig {
            tick_rate: 60.0,
            max_rewind: 0.15,
        })
        .expect("config");
        planned.lanes.force_stream = Some(stream);
        planned.tree = crate::bvh::TemporalBvh::shaped(flat);
        planned.old_tree = crate::bvh::TemporalBvh::shaped(flat);
        let mut reference = planned.clone();
        planned.kernels = kernels;
        reference.kernels = Kernels::PORTABLE;
        Self { planned, reference }
    }

    fn spawn(&mut self, rig: &Arc<Rig>) -> crate::history::EntityId {
        let id = self.planned.spawn(Arc::clone(rig));
        assert_eq!(self.reference.spawn(Arc::clone(rig)), id);
        id
    }

    fn despawn(&mut self, id: crate::history::EntityId) {
        self.planned.despawn(id).expect("active");
        self.reference.despawn(id).expect("active");
    }

    /// One tick: `refused` offered first (a batch with a despawned entity, which
    /// `record_all` must refuse whole), `before` recorded alone (with `record`), then
    /// the batch.
    fn tick(
        &mut self,
        tick: u32,
        refused: Option<(
            &[(crate::history::EntityId, EntityState)],
            crate::history::EntityId,
        )>,
        before: Option<(crate::history::EntityId, &[BoneTransform])>,
        batch: &[(crate::history::EntityId, EntityState)],
        bones: &[BoneTransform],
    ) -> Result<(), RecordError> {
        let time = f64::from(tick) / 60.0;
        let mut frame = self.planned.begin_frame(Tick(tick), time).expect("frame");
        let mut reference = self.reference.begin_frame(Tick(tick), time).expect("frame");
        if let Some((refused, gone)) = refused {
            let total = refused
                .iter()
                .map(|&(id, _)| usize::from(frame.history.rig(id).expect("known").bone_count()))
                .sum();
            assert_eq!(
                frame.record_all(refused, &vec![BoneTransform::IDENTITY; total]),
                Err(RecordError::Entity(crate::history::EntityError::Despawned(
                    gone
                )))
            );
        }
        if let Some((id, own)) = before {
            let state = EntityState::default();
            assert_eq!(
                frame.record(id, own, state),
                reference.record(id, own, state)
            );
        }
        let result = frame.record_all(batch, bones);
        let mut expected = Ok(());
        let mut rest = bones;
        for &(id, state) in batch {
            let n = usize::from(frame.history.rig(id).expect("known").bone_count());
            let (own, next) = rest.split_at(n);
            rest = next;
            if let Err(error) = reference.record(id, own, state) {
                expected = expected.and(Err(error));
            }
        }
        assert_eq!(result, expected, "tick {tick}");
        drop((frame, reference));
        assert!(
            stored_bits(&self.planned) == stored_bits(&self.reference),
            "tick {tick}: stored history differs"
        );
        assert_eq!(self.planned.uncompensated, self.reference.uncompensated);
        result
    }
}

/// A dense plan's frame records, streamed through a staging buffer
/// (`stamp_dense_streaming`), land where plain stores put them whatever the alignment
/// of the batch's first record, in whole and partial chunks, and leave the records of
/// slots outside the batch alone: bit for bit the history recorded entity by entity.
#[test]
fn dense_plans_stream_their_frame_records_at_any_alignment() {
    let four = rig(4);
    // Slot 4's record starts 16 bytes past a 32-byte boundary (36 * 4 = 144) when the
    // block is 32-byte aligned: the 16-byte pieces; slot 0's, the 32-byte ones.
    // Under Miri (about a thousand times slower) two cases: a 32-byte aligned start with a
    // partial chunk, and a 16-byte one.
    let cases: &[(usize, usize)] = if cfg!(miri) {
        &[(0, 21), (1, 17)]
    } else {
        &[(0, 32), (1, 37), (2, 16), (3, 21), (4, 40), (5, 3)]
    };
    for &(skip, count) in cases {
        for (flat, kernels) in [true, false]
            .into_iter()
            .flat_map(|flat| Kernels::available().into_iter().map(move |k| (flat, k)))
        {
            let mut twins = TwinHistories::new(true, flat, kernels);
            let states = vec![EntityState::default(); count];
            record_dense_batch(&mut twins, &four, skip, states, 40);
            // The plan was made at the first tick and used at every later one.
            assert_eq!(twins.planned.plan.dense, Some(skip));
            assert_eq!(
                twins.planned.plan.used,
                (38, 0),
                "skip {skip}, flat {flat}, {kernels:?}"
            );
        }
    }
}

/// Spawns `skip` slots that are never recorded, then one entity of `rig` per state (a
/// dense batch starting at slot `skip`), and records ticks `1..end` of the batch
/// (`wanderer_bones`, one record_all a tick) in both twins.
fn record_dense_batch(
    twins: &mut TwinHistories,
    rig: &Arc<Rig>,
    skip: usize,
    states: Vec<EntityState>,
    end: u32,
) {
    for _ in 0..skip {
        twins.spawn(rig);
    }
    let batch: Vec<_> = states
        .into_iter()
        .map(|state| (twins.spawn(rig), state))
        .collect();
    for tick in 1..end {
        let bones: Vec<_> = (0..batch.len() as u32)
            .flat_map(|serial| wanderer_bones(serial, tick))
            .collect();
        twins
            .tick(tick, None, None, &batch, &bones)
            .expect("valid batch");
    }
}

/// A dense plan's leaves in the flat form, written a whole block of eight lanes at a
/// time where eight entities of the batch are one block's lanes in order
/// (`stamp_batch`), and one by one where they are not (slots before the batch take
/// lanes, so its entities start mid-block) or the batch ends mid-block: bit for bit
/// the history recorded entity by entity, lag-compensation marks included.
#[test]
fn dense_plans_write_whole_blocks_of_flat_leaves_only_where_the_lanes_line_up() {
    let four = rig(4);
    // Under Miri (about a thousand times slower) two cases: whole blocks, and a batch that
    // starts mid-block.
    let cases: &[(usize, usize)] = if cfg!(miri) {
        &[(8, 17), (3, 21)]
    } else {
        &[(0, 32), (3, 21), (8, 17), (5, 40), (1, 7), (16, 8)]
    };
    for &(skip, count) in cases {
        for (flat, kernels) in [true, false]
            .into_iter()
            .flat_map(|flat| Kernels::available().into_iter().map(move |k| (flat, k)))
        {
            let mut twins = TwinHistories::new(false, flat, kernels);
            // In the flat form the batch starts at lane `skip`.
            let states = (0..count)
                .map(|k| EntityState {
                    lag_compensated: k % 5 != 2,
                    user: k as u16,
                    ..EntityState::default()
                })
                .collect();
            record_dense_batch(&mut twins, &four, skip, states, 30);
            let context = format!("skip {skip}, count {count}, flat {flat}, {kernels:?}");
            assert_eq!(twins.planned.plan.dense, Some(skip), "{context}");
            assert_eq!(twins.planned.plan.used, (28, 0), "{context}");
        }
    }
}

/// A batch plan holds for the batch it was made from and nothing else: spawns,
/// despawns, reordered and partial batches, an entity recorded before the batch or
/// twice in it, a bad transform in the middle, a first scale: after every tick, the
/// history is bit for bit the one recorded entity by entity.
#[test]
fn a_batch_plan_records_what_record_does_and_notices_every_change() {
    use crate::math::BoneTransform as Bone;
    let rigs = [16, 20, 4, 8].map(rig);
    // Every kernel this CPU runs (the AVX-512 build of the planned batch too, where the
    // CPU has one), against the portable kernels entity by entity.
    for (stream, flat, kernels) in [(false, true), (false, false), (true, true), (true, false)]
        .into_iter()
        .flat_map(|(stream, flat)| {
            Kernels::available()
                .into_iter()
                .map(move |k| (stream, flat, k))
        })
    {
        let mut twins = TwinHistories::new(stream, flat, kernels);
        let mut live: Vec<(crate::history::EntityId, usize)> = Vec::new();
        for k in 0..24 {
            // Rigs in runs (16, 16, 16, 20, 20, 4, 8, ...): segments of several entities.
            let r = [0, 0, 0, 1, 1, 2, 3][k % 7];
            live.push((twins.spawn(&rigs[r]), r));
        }
        let mut rng = Pcg64Mcg::seed_from_u64(0xba7c);
        let mut errors = 0;
        let mut previous = Vec::new();
        for tick in 1..=220_u32 {
            let phase = (tick / 10) % 10;
            // Which entities, in which order.
            let mut batch: Vec<(crate::history::EntityId, usize)> = live.clone();
            let mut refused = None;
            match phase {
                2 => batch.swap(2, 17),
                3 => batch.truncate(live.len() / 2),
                4 => batch.reverse(),
                _ => {}
            }
            if tick % 10 == 5 {
                match phase {
                    5 => live.push((twins.spawn(&rigs[1]), 1)),
                    6 if live.len() > 12 => {
                        let (id, _) = live.remove(rng.random_range(0..live.len()));
                        twins.despawn(id);
                        batch = live.clone();
                        // The batch the plan was made from, despawned entity included.
                        refused = Some((id, previous.clone()));
                    }
                    _ => {}
                }
            }
            let states: Vec<_> = batch
                .iter()
                .enumerate()
                .map(|(k, &(id, _))| {
                    let state = EntityState {
                        lag_compensated: !(k + tick as usize).is_multiple_of(13),
                        user: k as u16,
                        ..EntityState::default()
                    };
                    (id, state)
                })
                .collect();
            let mut bones: Vec<Bone> = Vec::new();
            for &(_, r) in &batch {
                for _ in 0..rigs[r].bone_count() {
                    bones.push(random_bone(&mut rng, false));
                }
            }
            let mut batch_states = states;
            let mut before = None;
            match tick % 10 {
                // A bad transform in the middle of the batch.
                3 => {
                    let at = bones.len() / 2 + 1;
                    bones[at].translation.y = f32::NAN;
                }
                // A rotation the fast check doubts and the precise one accepts.
                // (Unit scale: a scale lane would end the plans.)
                4 => bones[7] = random_bone(&mut rng, true).with_scale(glam::Vec3::ONE),
                // An entity recorded alone first.
                6 => before = Some(batch_states[3].0),
                // An entity twice in the batch (its bones twice too).
                8 if batch_states.len() > 4 => {
                    let (id, state) = batch_states[4];
                    let n = usize::from(rigs[batch[4].1].bone_count());
                    let first: usize = batch[..4]
                        .iter()
                        .map(|&(_, r)| usize::from(rigs[r].bone_count()))
                        .sum();
                    let again: Vec<Bone> = bones[first..first + n].to_vec();
                    batch_states.push((id, state));
                    bones.extend(again);
                }
                _ => {}
            }
            // A first scale, late (no plan until the next spawn or despawn; the scale
            // lane's slot is written again a window later).
            if tick == 187 {
                bones[20].scale = glam::Vec3::splat(1.5);
            }
            let alone: Vec<Bone>;
            let before = match before {
                Some(id) => {
                    let r = live.iter().find(|(l, _)| *l == id).expect("live").1;
                    alone = (0..rigs[r].bone_count())
                        .map(|_| random_bone(&mut rng, false))
                        .collect();
                    Some((id, alone.as_slice()))
                }
                None => None,
            };
            let refused = refused
                .as_ref()
                .map(|(gone, batch)| (batch.as_slice(), *gone));
            errors += usize::from(
                twins
                    .tick(tick, refused, before, &batch_states, &bones)
                    .is_err(),
            );
            previous = batch_states;
        }
        // The same plans on every kernel.
        let (used, fell_back) = twins.planned.plan.used;
        assert!(
            used > 80 && fell_back > 10,
            "{kernels:?}: {used} planned, {fell_back} given back"
        );
        assert!(errors > 40, "{errors} batches with an error");
        assert!(
            twins.planned.slots.iter().any(|s| !s.scales.is_empty()),
            "a scale lane was made"
        );
    }
}

/// Where entity `serial` stands at `tick`: every entity crosses the arena at its own
/// speed (up to 0.8 m a tick), so a tree built a few ticks ago is a poor fit for the
/// newest frames and the two trees differ.
fn wanderer(serial: u32, tick: u32) -> Vec3 {
    let s = serial as f32;
    let base = Vec3::new((s * 7.3) % 30.0, (s * 0.37) % 2.0, (s * 3.1) % 30.0);
    let velocity = Vec3::new((s * 1.7).sin(), 0.0, (s * 2.3).cos()) * 0.8;
    base + velocity * tick as f32
}

/// The four bones of entity `serial` at `tick`: stacked 0.3 m apart on its wanderer path.
fn wanderer_bones(serial: u32, tick: u32) -> Vec<crate::math::BoneTransform> {
    let at = wanderer(serial, tick);
    (0..4)
        .map(|b| {
            let mut t = crate::math::BoneTransform::IDENTITY;
            t.translation = at + Vec3::Y * (0.3 * b as f32);
            t
        })
        .collect()
}

/// A 60 Hz history with a 0.1 s window whose entity trees take the `flat` form or the
/// tree form whatever their size, and `count` entities of a four-bone rig spawned into
/// it, each with its wanderer serial (0 up).
fn wandering_history(flat: bool, count: u32) -> (History, Arc<Rig>, Vec<(super::EntityId, u32)>) {
    let mut history = History::new(HistoryConfig {
        tick_rate: 60.0,
        max_rewind: 0.1,
    })
    .expect("config");
    history.tree = crate::bvh::TemporalBvh::shaped(flat);
    history.old_tree = crate::bvh::TemporalBvh::shaped(flat);
    let rig = rig(4);
    let live = (0..count)
        .map(|serial| (history.spawn(Arc::clone(&rig)), serial))
        .collect();
    (history, rig, live)
}

/// The boxes a tick leaves in every frame the current tree answers for are the ones a
/// refit from scratch gives (a cleared frame, each kept entity's recorded box or the
/// empty box, the internal nodes from the leaves up, each span widened by the next
/// frame), whatever the ring slot held before: with entities despawned (kept until the
/// next rebuild), left out of a tick, spawned (inserted and into reused slots), and
/// rebuilds (which give the new tree only its newest frames), in both forms.
#[test]
fn every_frame_a_tree_answers_for_is_its_refit_from_the_records() {
    use crate::bvh::NodeBox;
    for flat in [false, true] {
        let (mut history, rig, mut live) = wandering_history(flat, 40);
        let capacity = history.capacity() as u32;
        let mut serial = 40_u32;
        let mut rng = Pcg64Mcg::seed_from_u64(0xf1a7);
        for tick in 1..=12 * capacity {
            let (spawns, despawns) = match (tick / capacity) % 3 {
                _ if tick == 1 => (0, 0),
                0 => (0, 0),
                1 => (2, 1),
                _ if rng.random_range(0..4) != 0 => (0, 0),
                _ if rng.random_bool(0.5) => (0, 1),
                _ => (1, 0),
            };
            for _ in 0..despawns {
                if live.len() > 24 {
                    let k = rng.random_range(0..live.len());
                    history.despawn(live.swap_remove(k).0).expect("live");
                }
            }
            for _ in 0..spawns {
                live.push((history.spawn(Arc::clone(&rig)), serial));
                serial += 1;
            }
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                .expect("frame");
            for &(id, serial) in &live {
                // Now and then an entity is left out of a tick.
                if rng.random_range(0..30) == 0 {
                    continue;
                }
                frame
                    .record(id, &wanderer_bones(serial, tick), EntityState::default())
                    .expect("valid");
            }
            drop(frame);
            let newest = history.newest_seq;
            let from = history.tree_from.max(history.oldest_seq());
            let mut reference = history.tree.clone();
            for seq in from..=newest {
                let ring = history.ring(seq);
                reference.clear_frame(ring);
                let previous = (seq > from).then(|| history.ring(seq - 1));
                reference.refit_frame(Kernels::detect(), ring, previous, |i| {
                    let i = i as usize;
                    if history.recorded_at(i, seq, ring) {
                        let f = history.entity_frame(i, ring);
                        NodeBox::new(f.bounds_min, f.bounds_max)
                    } else {
                        NodeBox::EMPTY
                    }
                });
            }
            for seq in from..=newest {
                let ring = history.ring(seq);
                assert_eq!(
                    history.tree.frame_span_bits(ring),
                    reference.frame_span_bits(ring),
                    "flat {flat}, tick {tick}, frame {seq} of {from}..={newest}"
                );
            }
        }
    }
}

/// Every kind of query, at every bracket the ring holds (each frame, between adjacent
/// frames, and tick pairs that skip up to three frames), answered through the entity
/// trees the same as by walking every entity (debug mode, no tree): while entities
/// spawn into reused slots, despawn, and the tree is rebuilt once a window, right after
/// another rebuild, and on every tick for a while. Queries land on the current tree, on
/// the older one (down to its oldest frame) and across the rebuild.
#[test]
fn versioned_trees_answer_every_bracket_as_walking_every_entity_does() {
    use crate::time::{RewindTarget, WindowPolicy};
    use crate::{QueryLog, Ray};
    for flat in [false, true] {
        let (mut history, rig, mut live) = wandering_history(flat, 24);
        let capacity = history.capacity() as u32;
        let mut serial = 24_u32;
        let mut rng = Pcg64Mcg::seed_from_u64(0x7ee5);
        // Queries through the current tree, the older one, across a rebuild; rebuilds
        // with the older tree still answering; handles that reused a slot.
        let (mut current, mut older, mut across, mut kept_older, mut reused) = (0, 0, 0, 0, 0);
        let mut inserted = 0;
        let (mut hits, mut overlaps) = (Vec::new(), Vec::new());
        let (mut all_hits, mut all_overlaps) = (0, 0);
        for tick in 1..=12 * capacity {
            // Churn: quiet for a window; then an entity replaced on every tick (more
            // spawns than a small tree has spare nodes: rebuilds while the older tree
            // still answers); then a spawn or a despawn every few ticks (inserted).
            let (spawns, despawns) = match (tick / capacity) % 4 {
                _ if tick == 1 => (0, 0),
                0 => (0, 0),
                1 => (2, 1),
                _ if rng.random_range(0..5) != 0 => (0, 0),
                _ if rng.random_bool(0.5) => (0, 1),
                _ => (1, 0),
            };
            for _ in 0..despawns {
                if live.len() > 16 {
                    let k = rng.random_range(0..live.len());
                    history.despawn(live.swap_remove(k).0).expect("live");
                }
            }
            for _ in 0..spawns {
                let id = history.spawn(Arc::clone(&rig));
                reused += usize::from(id.generation() > 0);
                live.push((id, serial));
                serial += 1;
            }
            let (tree_from, oldest) = (history.tree_from, history.oldest_seq());
            let linked = history.tree.linked();
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / 60.0)
                .expect("frame");
            for &(id, serial) in &live {
                frame
                    .record(id, &wanderer_bones(serial, tick), EntityState::default())
                    .expect("valid");
            }
            drop(frame);
            if history.frames_since_build == 0 && history.tree_from == tree_from {
                assert!(tree_from > oldest, "the older tree was still needed");
                kept_older += 1;
            }
            inserted +=
                usize::from(history.frames_since_build > 0 && history.tree.linked() > linked);
            let (first, newest) = (history.oldest_seq(), history.newest_seq);
            let time = |seq: u64| history.meta(seq).time;
            let mut targets = Vec::new();
            for seq in first..=newest {
                targets.push(RewindTarget::Time(time(seq)));
                if seq < newest {
                    targets.push(RewindTarget::Time(0.5 * (time(seq) + time(seq + 1))));
                }
                for skip in 2..=4 {
                    if seq + skip <= newest {
                        targets.push(RewindTarget::Ticks {
                            from: history.meta(seq).tick,
                            to: history.meta(seq + skip).tick,
                            fraction: rng.random_range(0.05..0.95),
                        });
                    }
                }
            }
            for target in targets {
                // The ring's oldest frame can be just outside the window.
                let Ok(bracket) = history.bracket(target, WindowPolicy::Reject) else {
                    continue;
                };
                match history.entity_tree(&bracket) {
                    Some(tree) if std::ptr::eq(tree, &history.tree) => current += 1,
                    Some(_) => older += 1,
                    None => across += 1,
                }
                // A ray at a live entity (where it stands at the target, if it was
                // recorded then), from up to 12 m away, and a sphere around it.
                let (id, serial) = live[rng.random_range(0..live.len())];
                let aim = match history
                    .entity_at(id, target, WindowPolicy::Reject)
                    .expect("known")
                {
                    Some(at) => at.bone(1).expect("bone").translation,
                    None => wanderer(serial, tick),
                };
                let from = aim
                    + Vec3::new(
                        rng.random_range(-12.0..12.0),
                        rng.random_range(-1.0..1.0),
                        rng.random_range(-12.0..12.0),
                    );
                let Ok(ray) = Ray::between(from, aim + (aim - from) * 0.5) else {
                    continue;
                };
                let radius = rng.random_range(0.0..0.4);
                let log = || QueryLog::default();
                let tree_ray = history.query(target).sweep(&ray, radius);
                let walk_ray = history.query(target).observe(log()).sweep(&ray, radius);
                assert_eq!(
                    format!("{tree_ray:?}"),
                    format!("{walk_ray:?}"),
                    "{target:?}"
                );
                history
                    .query(target)
                    .ray_all(&ray, &mut hits)
                    .expect("resolves");
                let tree_all = format!("{hits:?}");
                all_hits += hits.len();
                history
                    .query(target)
                    .observe(log())
                    .ray_all(&ray, &mut hits)
                    .expect("resolves");
                assert_eq!(tree_all, format!("{hits:?}"), "{target:?}");
                history
                    .query(target)
                    .overlap_sphere(aim, 1.5, &mut overlaps)
                    .expect("resolves");
                let tree_overlaps = format!("{overlaps:?}");
                all_overlaps += overlaps.len();
                history
                    .query(target)
                    .observe(log())
                    .overlap_sphere(aim, 1.5, &mut overlaps)
                    .expect("resolves");
                assert_eq!(tree_overlaps, format!("{overlaps:?}"), "{target:?}");
            }
        }
        let counts = (current, older, across, kept_older, reused, inserted);
        assert!(
            current > 1000
                && older > 100
                && across > 20
                && kept_older > 5
                && reused > 3
                && (flat || inserted > 5),
            "flat {flat}: {counts:?}"
        );
        assert!(
            all_hits > 500 && all_overlaps > 500,
            "{all_hits} {all_overlaps}"
        );
    }
}
