//! The end of a recorded frame: despawned entities that aged out freed, and the entity
//! broadphase brought up to date (the new frame's boxes refitted, or the tree rebuilt).

use glam::Vec3;

use super::{History, Life};
use crate::bvh::NodeBox;

impl History {
    /// lag-compensation-off marks that have aged out.
    pub(super) fn retire_aged_out(&mut self) {
        let oldest = self.oldest_seq();
        let mut i = 0;
        while i < self.retiring.len() {
            let index = self.retiring[i] as usize;
            if self.slots[index].last_seq < oldest {
                self.retiring.swap_remove(i);
                self.free_slot(index);
            } else {
                i += 1;
            }
        }
        self.uncompensated.retain(|&(_, seq)| seq >= oldest);
    }

    /// Brings the broadphase up to date with the frame just recorded.
    pub(super) fn end_frame(&mut self) {
        self.frames_since_build += 1;
        // PERF: a flat broadphase is rebuilt only when entities come: rebuilding it
        // once a window gave the same boxes bit for bit (test
        // `a_flat_broadphase_rebuilt_once_a_window_would_change_nothing`) for about 2,400
        // instructions a tick at 64x16 (a fifth of the tick outside the bone groups).
        let rebuild = (self.frames_since_build >= self.capacity && !self.tree.keeps_its_shape())
            || !self.insert_spawned();
        self.spawned.clear();
        if rebuild {
            self.rebuild_tree();
        } else {
            // The leaves were grown as entities were recorded.
            let newest = self.newest_seq;
            let previous = (newest > self.oldest_seq()).then(|| self.ring(newest - 1));
            self.tree
                .finish_frame(self.kernels, self.ring(newest), previous);
        }
    }

    /// Places the entities spawned since the last frame in the current tree, each beside
    /// its nearest neighbour (`TemporalBvh::insert`); `false` if one could not be (the
    /// flat form, or no spare node left), and then the tree must be rebuilt, which places
    /// them all. Entities despawned before their first frame are skipped.
    fn insert_spawned(&mut self) -> bool {
        let (seq, ring) = (self.newest_seq, self.newest_ring);
        for k in 0..self.spawned.len() {
            let index = self.spawned[k] as usize;
            if self.slots[index].life == Life::Free {
                continue;
            }
            let (centroid, node_box) = if self.recorded_at(index, seq, ring) {
                let frame = self.entity_frame(index, ring);
                (
                    frame.bounds().center(),
                    NodeBox::new(frame.bounds_min, frame.bounds_max),
                )
            } else {
                (Vec3::ZERO, NodeBox::EMPTY)
            };
            if !self.tree.insert(index as u32, centroid, ring, node_box) {
                return false;
            }
        }
        true
    }

    /// A new tree over the active entities, placed where they are now (once a window,
    /// and when a spawned entity could not be inserted); completes the newest frame.
    pub(super) fn rebuild_tree(&mut self) {
        let newest = self.newest_seq;
        let oldest = self.oldest_seq();
        // New topology (entities came or went, or everyone has moved a whole window since
        // the last build): entities placed where they are now.
        // PERF: versioned, not the whole ring. Frames already recorded keep the tree they
        // were recorded under, which answers for them until they age out; the new tree
        // gets boxes only for the frames from `from` on. Refilling and refitting every
        // frame of the ring was 1.9 of a 5,000-entity rebuild's 2.5 ms.
        let from = if self.tree_from > oldest {
            // The tree before the current one still answers for frames before
            // `tree_from`: keep it, and give the current tree's frames the new shape.
            self.tree_from
        } else {
            // The current tree holds every frame in the ring: it becomes the older tree,
            // complete up to the frame before the newest (whose span it widened last
            // tick). The new tree starts one frame earlier than the newest so that a
            // query between those two (one span) finds both in one tree, entities
            // spawned this tick included.
            std::mem::swap(&mut self.tree, &mut self.old_tree);
            newest.saturating_sub(1).max(oldest)
        };
        let mut tree = std::mem::take(&mut self.tree);
        let slots = &self.slots;
        tree.reshape(
            self.capacity,
            (0..slots.len() as u32).filter(|&i| slots[i as usize].life != Life::Free),
            |i| {
                let slot = &slots[i as usize];
                if slot.last_seq >= oldest {
                    let b = self
                        .entity_frame(i as usize, self.ring(slot.last_seq))
                        .bounds();
                    b.center()
                } else {
                    Vec3::ZERO
                }
            },
        );
        // Leaves frame by frame, each frame's records in slot order (one sequential read of
        // the frame lane; each frame's leaves stay in cache while it is filled), then each
        // frame's internal nodes and spans, oldest first.
        // PERF: entity by entity, the refill read one record per ring slot per entity (as
        // many streams as ring slots, a frame lane's block apart) and scattered its writes
        // over every frame's nodes, each line touched once per entity rather than once.
        let stride = self.lanes.frame_stride;
        debug_assert!(slots.len() <= stride);
        for seq in from..=newest {
            let ring = self.ring(seq);
            // Every box of the frame from empty: the new shape's unused lanes, and the
            // leaves of entities not recorded in it, stay so.
            tree.clear_frame(ring);
            let mut leaves = tree.frame_leaves(ring);
            let block = &self.lanes.frames[ring * stride..][..slots.len()];
            for ((index, slot), frame) in slots.iter().enumerate().zip(block) {
                if slot.life == Life::Free {
                    continue;
                }
                // `recorded_at`.
                let recorded = seq <= slot.last_seq && frame.seq == seq as u32;
                // Both computed, one kept: a select rather than branches.
                let recorded_box = NodeBox::new(frame.bounds_min, frame.bounds_max);
                leaves.refill(
                    index,
                    if recorded {
                        recorded_box
                    } else {
                        NodeBox::EMPTY
                    },
                );
            }
        }
        for seq in from..=newest {
            let previous = (seq > from).then(|| self.ring(seq - 1));
            tree.finish_frame(self.kernels, self.ring(seq), previous);
        }
        // The next build goes into the older tree's memory (or this one's): sized now, so
        // that rebuilding at a steady size allocates nothing.
        self.old_tree.reserve_like(&tree);
        self.tree = tree;
        self.tree_from = from;
        self.frames_since_build = 0;
    }
}
