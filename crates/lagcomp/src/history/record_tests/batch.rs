//! `record_all` and its batch plans: bit for bit what one `record` per entity stores.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::history::bone_pass::tests::random_bone;
use crate::history::{EntityState, History, HistoryConfig, RecordError};
use crate::math::BoneTransform;
use crate::rig::Rig;
use crate::simd::Kernels;
use crate::time::Tick;

use super::{record_with, rig, stored_bits, wanderer_bones};

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
