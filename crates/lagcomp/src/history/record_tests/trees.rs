//! The entity trees a tick leaves: every frame a tree answers for is its refit from the records.

use std::sync::Arc;

use glam::Vec3;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::history::{EntityState, History, HistoryConfig};
use crate::rig::Rig;
use crate::simd::Kernels;
use crate::time::Tick;

use super::{rig, wanderer, wanderer_bones};

/// A 60 Hz history with a 0.1 s window whose entity trees take the `flat` form or the
/// tree form whatever their size, and `count` entities of a four-bone rig spawned into
/// it, each with its wanderer serial (0 up).
fn wandering_history(
    flat: bool,
    count: u32,
) -> (History, Arc<Rig>, Vec<(crate::history::EntityId, u32)>) {
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
