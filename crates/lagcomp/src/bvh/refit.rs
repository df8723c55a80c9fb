//! Keeping a temporal tree's boxes current: a recorded frame's leaves written, its internal
//! nodes refitted, and the previous frame's spans widened to reach it.

use super::*;

impl FrameLeaves<'_> {
    /// Sets the leaf of `item` to `node_box`: the frame was cleared when it began and an
    /// item is recorded at most once per frame, so its leaf is empty and growing it is
    /// setting it (six stores, no loads). Nothing if the item is not kept yet (a rebuild
    /// will place it).
    #[inline]
    pub(crate) fn set(&mut self, item: usize, node_box: NodeBox) {
        if self.flat {
            self.set_in::<true>(item, node_box);
        } else {
            self.set_in::<false>(item, node_box);
        }
    }

    /// Sets the leaf of `item` to `node_box` whatever it held: a rebuild's refill of every
    /// frame (it may hold a box of the previous shape). Nothing if the item is
    /// not in the tree.
    #[inline]
    pub(crate) fn refill(&mut self, item: usize, node_box: NodeBox) {
        if let Some(&at) = self.leaf_of.get(item) {
            set_leaf(self.flat, self.floats, at as usize, &node_box);
        }
    }

    /// Whether the frame's leaves are in the flat form's layout (the same for every leaf
    /// of a tick): what [`FrameLeaves::set_in`] is told.
    #[inline]
    pub(crate) fn is_flat(&self) -> bool {
        self.flat
    }

    /// The floats of one block of the flat form whose lanes are the leaves of the items
    /// `first..first + FLAT_LANE_STEP`, in order (item `first + j` is lane `j` of the
    /// block), for a recorder that writes the block's six planes whole; `None` if those
    /// items are not such a block (or the leaves are not flat). The leaves are empty, as
    /// for [`FrameLeaves::set`]: the frame was cleared and none of the items recorded in
    /// it yet.
    #[inline(always)]
    pub(crate) fn flat_block(&mut self, first: usize) -> Option<&mut [f32; flat::BLOCK_FLOATS]> {
        let run = self.leaf_of.get(first..first + flat::FLAT_LANE_STEP)?;
        let at = run[0];
        // Lane `j` of a block is its float `j` (`flat::lane_float`). PERF: one OR of
        // differences, which LLVM compares as one vector, rather than a branch a lane.
        let differ = run
            .iter()
            .zip(0..)
            .fold(at % flat::BLOCK_FLOATS as u32, |differ, (&v, j)| {
                differ | (v ^ at.wrapping_add(j))
            });
        if !self.flat || differ != 0 {
            return None;
        }
        let at = at as usize;
        let block: &mut [f32; flat::BLOCK_FLOATS] = self
            .floats
            .get_mut(at..at + flat::BLOCK_FLOATS)?
            .try_into()
            .ok()?;
        debug_assert!(
            block[..flat::FLAT_LANE_STEP]
                .iter()
                .all(|&v| v == f32::INFINITY),
            "one record per frame"
        );
        Some(block)
    }

    /// [`FrameLeaves::set`] with the form known where it is called (`FLAT` must be
    /// [`FrameLeaves::is_flat`]).
    ///
    /// PERF: a recorder that branches on the form once per tick stores each leaf at fixed
    /// distances; deciding per record kept the six distances in registers and a branch,
    /// about eight instructions an entity.
    #[inline(always)]
    pub(crate) fn set_in<const FLAT: bool>(&mut self, item: usize, node_box: NodeBox) {
        debug_assert_eq!(FLAT, self.flat);
        let Some(&at) = self.leaf_of.get(item) else {
            return;
        };
        debug_assert!(
            self.floats
                .get(at as usize)
                .is_none_or(|&v| v == f32::INFINITY),
            "one record per frame"
        );
        if FLAT {
            set_leaf_at::<{ flat::FLAT_LANE_STEP }>(self.floats, at as usize, &node_box);
        } else {
            set_leaf_at::<4>(self.floats, at as usize, &node_box);
        }
    }
}

/// Writes an item's leaf box at `at` in a frame's floats, in the flat form's layout or the
/// tree's.
///
/// PERF: a branch on the form (the same every record) so that each store has a fixed
/// distance from the first.
#[inline(always)]
pub(super) fn set_leaf(flat: bool, floats: &mut [f32], at: usize, node_box: &NodeBox) {
    if flat {
        set_leaf_at::<{ flat::FLAT_LANE_STEP }>(floats, at, node_box);
    } else {
        set_leaf_at::<4>(floats, at, node_box);
    }
}

/// Writes `node_box`'s six floats at `at`, `at + STEP`, ... `at + 5 * STEP` of `floats`, if
/// they are inside (an item not kept, `at == u32::MAX`, never is: a frame holds fewer
/// floats than that).
#[inline(always)]
pub(super) fn set_leaf_at<const STEP: usize>(floats: &mut [f32], at: usize, node_box: &NodeBox) {
    if let Some(leaf) = floats.get_mut(at..at + 5 * STEP + 1) {
        for (k, &v) in node_box.as_array().iter().enumerate() {
            leaf[k * STEP] = v;
        }
    }
}

/// Writes every internal node's box into its parent's lane, children before parents,
/// keeping the items' boxes as they are.
///
/// PERF: compiled for the history's kernels: with AVX2, the same unions (the same SSE
/// operations) in the VEX encoding, whose three-operand instructions drop the register
/// copies the two-operand SSE forms need around the union's interleaves: callgrind, 64
/// entities, 54 -> 44 instructions per node.
pub(super) fn refit_internal(kernels: Kernels, parent_lane: &[u32], boxes: &mut [ChildBoxes]) {
    kernels.run(RefitInternal { parent_lane, boxes });
}

/// [`refit_internal`] as a body compiled per instruction set.
pub(super) struct RefitInternal<'a> {
    parent_lane: &'a [u32],
    boxes: &'a mut [ChildBoxes],
}

impl KernelBody for RefitInternal<'_> {
    type Output = ();

    #[inline(always)]
    fn run<K: Isa>(self, _: K) {
        refit_internal_with(self.parent_lane, self.boxes);
    }
}

/// The body of [`refit_internal`].
#[inline(always)]
pub(super) fn refit_internal_with(parent_lane: &[u32], boxes: &mut [ChildBoxes]) {
    for (node, &link) in parent_lane.iter().enumerate().skip(1).rev() {
        let union = boxes[node].union();
        boxes[(link >> 2) as usize].set_lane((link & 3) as usize, &union);
    }
}

impl TemporalBvh {
    /// Completes ring frame `frame` after its leaves were grown: refits its internal nodes
    /// (the tree) and widens the previous frame's spans (ring slot `previous`) to reach it.
    pub(crate) fn finish_frame(&mut self, kernels: Kernels, frame: usize, previous: Option<usize>) {
        if !self.is_flat() {
            let n = self.per_frame;
            refit_internal(
                kernels,
                &self.parent_lane,
                &mut self.spans[frame * n..(frame + 1) * n],
            );
        }
        self.widen(kernels, frame, previous);
    }

    pub(super) fn widen(&mut self, kernels: Kernels, frame: usize, previous: Option<usize>) {
        let n = self.per_frame;
        if let Some(p) = previous {
            let (into, from) = if p < frame {
                let (head, tail) = self.spans.split_at_mut(frame * n);
                (&mut head[p * n..(p + 1) * n], &tail[..n])
            } else {
                let (head, tail) = self.spans.split_at_mut(p * n);
                (&mut tail[..n], &head[frame * n..(frame + 1) * n])
            };
            kernels.grow_all(child_floats_mut(into), child_floats(from));
        }
    }

    /// Sets the leaf box of `item` in every ring frame, in ring order, to the boxes of
    /// `item_boxes` (after a [`TemporalBvh::build`]; then [`TemporalBvh::finish_frame`] each
    /// frame, oldest first). Nothing if the item is not in the tree.
    ///
    /// PERF: the boxes come as an iterator (a rebuild's refill zips the frame headers with
    /// the entity's frame records: no index checks per frame, about 15 instructions a
    /// leaf fewer than a closure called with each ring index).
    #[inline]
    #[cfg(test)]
    pub(crate) fn set_leaf_in_every_frame(
        &mut self,
        item: usize,
        item_boxes: impl IntoIterator<Item = NodeBox>,
    ) {
        let Some(&at) = self.leaf_of.get(item) else {
            return;
        };
        if at == u32::MAX {
            return;
        }
        let (n, flat) = (self.per_frame, self.is_flat());
        let Some(spans) = self.spans.get_mut(..self.frames * n).filter(|_| n > 0) else {
            return;
        };
        for (frame, item_box) in child_floats_mut(spans)
            .chunks_exact_mut(n * 24)
            .zip(item_boxes)
        {
            set_leaf(flat, frame, at as usize, &item_box);
        }
    }

    /// Refits ring frame `frame` from the items' boxes in it (`item_box` returns
    /// [`NodeBox::EMPTY`] for an item absent from it), and widens the previous frame's spans
    /// (ring slot `previous`) to reach it. The tests' reference for the other two ways.
    #[cfg(test)]
    pub(crate) fn refit_frame(
        &mut self,
        kernels: Kernels,
        frame: usize,
        previous: Option<usize>,
        item_box: impl Fn(u32) -> NodeBox,
    ) {
        let (n, flat) = (self.per_frame, self.is_flat());
        let boxes = &mut self.spans[frame * n..(frame + 1) * n];
        // Every item kept (inserted ones too).
        for (item, &at) in self.leaf_of.iter().enumerate() {
            if at != u32::MAX {
                set_leaf(
                    flat,
                    child_floats_mut(boxes),
                    at as usize,
                    &item_box(item as u32),
                );
            }
        }
        if !flat {
            refit_internal(kernels, &self.parent_lane, boxes);
        }
        self.widen(kernels, frame, previous);
    }
}
