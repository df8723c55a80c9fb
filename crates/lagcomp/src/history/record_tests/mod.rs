//! Tests of recording: every way of recording a tick against recording entity by entity.
//! `lanes`: spawns, despawns and the lanes they take; `batch`: `record_all` and its batch
//! plans against `record`; `trees`: the entity trees a tick leaves. Here: the rigs, bones
//! and recordings they share.

mod batch;
mod lanes;
mod trees;

use std::sync::Arc;

use glam::Vec3;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::bone_pass::tests::random_bone;
use super::{EntityState, History, HistoryConfig, RecordError};
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
