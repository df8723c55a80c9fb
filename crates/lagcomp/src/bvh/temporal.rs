//! The temporal tree's shape: built from a topology collapsed to four children a node
//! (or kept flat), reshaped at rebuilds, items inserted between them, frames cleared.

use super::*;

/// Spare nodes a tree of `nodes` nodes keeps for [`TemporalBvh::insert`]: one in 64 and
/// four more (at 5,000 entities, about 1,700 nodes: 30 spares, 2 % more boxes per frame).
pub(super) fn spare_nodes(nodes: usize) -> usize {
    nodes / 64 + 4
}

/// Grows `v`'s capacity to at least `capacity`, exactly (amortised growth on both of two
/// trees sized after each other could keep growing them in turn).
pub(super) fn reserve_to<T>(v: &mut Vec<T>, capacity: usize) {
    v.reserve_exact(capacity.saturating_sub(v.len()));
}

impl TemporalBvh {
    /// A tree that always takes the given form (`flat`: up to [`flat::FLAT_CAPACITY`]
    /// items), for tests that run against both.
    #[cfg(test)]
    pub(crate) fn shaped(flat: bool) -> Self {
        Self {
            shape: if flat { Shape::Flat } else { Shape::Tree },
            ..Self::default()
        }
    }

    /// Nodes in the tree (spare nodes linked by [`TemporalBvh::insert`] included).
    #[cfg(test)]
    pub(crate) fn linked(&self) -> usize {
        self.linked
    }

    /// Whether this is the flat form.
    #[inline(always)]
    pub(super) fn is_flat(&self) -> bool {
        self.stride != 0
    }

    /// Whether the boxes stay as tight as a fresh build's however the items move: the flat
    /// form has no topology that motion could make stale, so only a change of items needs
    /// a build. The tree's topology is placed where the items were at its build.
    pub(crate) fn keeps_its_shape(&self) -> bool {
        self.is_flat()
    }

    /// Rebuilds over `items` placed at `centroid(item)`, for a ring of `frames` frames: the
    /// flat form for few items (`centroid` is then not asked), a new topology otherwise.
    /// Every frame is then cleared and refitted, oldest first (tests; the history reshapes
    /// and clears only the frames the new tree answers for).
    #[cfg(test)]
    pub(crate) fn build(
        &mut self,
        frames: usize,
        items: impl IntoIterator<Item = u32>,
        centroid: impl Fn(u32) -> Vec3,
    ) {
        self.reshape(frames, items, centroid);
        for frame in 0..frames {
            self.clear_frame(frame);
        }
    }

    /// A new shape over `items` placed at `centroid(item)`, for a ring of `frames` frames:
    /// the flat form for few items (`centroid` is then not asked), a new topology
    /// otherwise. Every frame's boxes are then stale (boxes of the previous shape, in lanes
    /// the new one may use otherwise or not at all): [`TemporalBvh::clear_frame`] each frame
    /// before it is filled and finished, oldest first, and read none that was not.
    ///
    /// PERF: emptying the unused lanes of every frame here (the frames before the ones the
    /// new tree answers for, which the tree's next ticks clear when they begin anyway) was
    /// 160-240 µs of a 5,000-entity rebuild's 0.9-1.2 ms, scattered over 3 MB of boxes
    /// untouched for a window.
    pub(crate) fn reshape(
        &mut self,
        frames: usize,
        items: impl IntoIterator<Item = u32>,
        centroid: impl Fn(u32) -> Vec3,
    ) {
        self.lane_item.clear();
        self.lane_item.extend(items);
        self.frames = frames;
        let flat_max = match self.shape {
            Shape::BySize => FLAT_MAX_ITEMS,
            #[cfg(test)]
            Shape::Flat => flat::FLAT_CAPACITY,
            #[cfg(test)]
            Shape::Tree => 0,
        };
        if !self.lane_item.is_empty() && self.lane_item.len() <= flat_max {
            self.build_flat();
            return;
        }
        self.stride = 0;
        self.topology
            .build(self.lane_item.iter().copied(), centroid);
        self.lane_item.clear();
        self.collapse();
        self.linked = self.children.len();
        // Spare nodes after the tree's, for entities spawned before the next build.
        let spares = spare_nodes(self.linked);
        self.children
            .extend(std::iter::repeat_n([NO_CHILD; 4], spares));
        self.parent_lane.reserve(spares);
        self.per_frame = self.children.len();
        self.spans
            .resize(frames * self.per_frame, ChildBoxes::EMPTY);
    }

    /// The flat form over `lane_item`: item `k` in lane `k`.
    pub(super) fn build_flat(&mut self) {
        self.children.clear();
        self.parent_lane.clear();
        self.linked = 0;
        self.stride = self.lane_item.len().next_multiple_of(flat::FLAT_LANE_STEP);
        self.per_frame = self.stride / 4;
        self.leaf_of.fill(u32::MAX);
        for (lane, &item) in self.lane_item.iter().enumerate() {
            let item = item as usize;
            if item >= self.leaf_of.len() {
                self.leaf_of.resize(item + 1, u32::MAX);
            }
            self.leaf_of[item] = flat::lane_float(lane) as u32;
        }
        // As for the tree, not cleared (see `reshape`).
        self.spans
            .resize(self.frames * self.per_frame, ChildBoxes::EMPTY);
    }

    /// The wide tree from the binary one: each wide node takes a binary node's children
    /// and keeps replacing its largest internal child by that child's two children until
    /// it has four.
    pub(super) fn collapse(&mut self) {
        let nodes = &self.topology.nodes;
        self.children.clear();
        self.parent_lane.clear();
        self.leaf_of.fill(u32::MAX);
        if nodes.is_empty() {
            return;
        }
        // PERF: the sizes come from the build, which knows them. Summing them here, children
        // before parents, mispredicted whether each node was a leaf (about 2,500 times a
        // 5,000-item build, callgrind).
        let sizes = &self.topology.sizes;
        self.children.push([NO_CHILD; 4]);
        self.parent_lane.push(u32::MAX);
        self.pending.clear();
        self.pending.push((0, 0));
        while let Some((binary, wide)) = self.pending.pop() {
            let mut lanes = [0_u32; 4];
            let node = nodes[binary as usize];
            let mut count = if node.count > 0 {
                lanes[0] = binary;
                1
            } else {
                lanes[0] = node.first;
                lanes[1] = node.first + 1;
                2
            };
            // Lanes over four items are opened, largest first; then small subtrees whose
            // items fit in the lanes left, smallest first. A subtree of four stays one full
            // node rather than becoming two half-empty ones.
            while count < 4 {
                let size = |k: usize| sizes[lanes[k] as usize] as usize;
                let internal = |k: &usize| nodes[lanes[*k] as usize].count == 0;
                let open = (0..count)
                    .filter(internal)
                    .max_by_key(|&k| size(k))
                    .filter(|&k| size(k) > 4)
                    .or_else(|| {
                        (0..count)
                            .filter(internal)
                            .min_by_key(|&k| size(k))
                            .filter(|&k| count + size(k) - 1 <= 4)
                    });
                let Some(k) = open else { break };
                let first = nodes[lanes[k] as usize].first;
                lanes[k] = first;
                lanes[count] = first + 1;
                count += 1;
            }
            for (lane, &b) in lanes.iter().enumerate().take(count) {
                let link = (wide << 2) | lane as u32;
                let node = nodes[b as usize];
                if node.count > 0 {
                    let item = self.topology.items[node.first as usize];
                    self.children[wide as usize][lane] = ITEM | item;
                    let item = item as usize;
                    if item >= self.leaf_of.len() {
                        self.leaf_of.resize(item + 1, u32::MAX);
                    }
                    self.leaf_of[item] = leaf_float(link);
                } else {
                    let child = self.children.len() as u32;
                    self.children.push([NO_CHILD; 4]);
                    self.parent_lane.push(link);
                    self.children[wide as usize][lane] = child;
                    self.pending.push((b, child));
                }
            }
        }
    }

    /// Places `item` in the tree without a new topology: in a spare node, beside the leaf
    /// whose box in ring frame `frame` is centred nearest to `centroid` (that leaf moves
    /// into the spare node with it, which takes its place). `item` was not recorded in any
    /// frame but `frame` (a spawn), where its leaf becomes `node_box`; an item already kept
    /// (a slot reused since the build) leaves its old place first. The sibling's boxes are
    /// copied into the spare node in every frame, so every frame this tree holds stays
    /// complete; `frame` still needs [`TemporalBvh::finish_frame`]. Returns `false`, and
    /// changes nothing, in the flat form or with no spare node left: build instead.
    ///
    /// PERF: a spawn otherwise rebuilds the topology (about 0.8 ms at 5,000 entities) and
    /// refits every frame since the last build; this is one pass over the leaves of one
    /// frame.
    pub(crate) fn insert(
        &mut self,
        item: u32,
        centroid: Vec3,
        frame: usize,
        node_box: NodeBox,
    ) -> bool {
        let n = self.per_frame;
        if self.is_flat() || self.linked >= self.children.len() || self.linked == 0 {
            return false;
        }
        let Some(boxes) = self.spans.get(frame * n..(frame + 1) * n) else {
            return false;
        };
        // The nearest leaf by the centre of its box (twice the centre, compared squared).
        let target = 2.0 * centroid;
        let mut nearest = None;
        let mut best = f32::INFINITY;
        for (node, links) in self.children[..self.linked].iter().enumerate() {
            for (lane, &link) in links.iter().enumerate() {
                if link == NO_CHILD || link & ITEM == 0 || link & !ITEM == item {
                    continue;
                }
                let b = boxes[node].lane(lane);
                let twice = Vec3::from_array(b.min) - Vec3::from_array(b.neg_max);
                // An empty leaf (its entity not recorded in `frame`) has no centre: `inf -
                // inf` is NaN, and a NaN `best` would let no later leaf compare below it, so
                // every spawn of the frame went beside that leaf. It counts as infinitely far.
                let d = twice.distance_squared(target);
                let d = if d.is_nan() { f32::INFINITY } else { d };
                if d < best || nearest.is_none() {
                    best = d;
                    nearest = Some((node, lane));
                }
            }
        }
        let Some((parent, lane)) = nearest else {
            return false;
        };
        let item = item as usize;
        if let Some(&at) = self.leaf_of.get(item).filter(|&&at| at != u32::MAX) {
            // The slot's previous entity: its frames have aged out, its leaf is empty (but
            // in `frame`, where the new entity was just recorded into it). Gone.
            let (node, old_lane) = leaf_link(at);
            self.children[node][old_lane] = NO_CHILD;
            for f in 0..self.frames {
                self.spans[f * n + node].set_lane(old_lane, &NodeBox::EMPTY);
            }
        }
        let spare = self.linked;
        self.linked += 1;
        let sibling = self.children[parent][lane] & !ITEM;
        self.children[spare] = [ITEM | sibling, ITEM | item as u32, NO_CHILD, NO_CHILD];
        self.children[parent][lane] = spare as u32;
        let link = ((parent as u32) << 2) | lane as u32;
        debug_assert_eq!(self.parent_lane.len(), spare, "spares link in order");
        self.parent_lane.push(link);
        self.leaf_of[sibling as usize] = leaf_float((spare as u32) << 2);
        if item >= self.leaf_of.len() {
            self.leaf_of.resize(item + 1, u32::MAX);
        }
        self.leaf_of[item] = leaf_float(((spare as u32) << 2) | 1);
        for f in 0..self.frames {
            let sibling_box = self.spans[f * n + parent].lane(lane);
            self.spans[f * n + spare].set_lane(0, &sibling_box);
        }
        self.spans[frame * n + spare].set_lane(1, &node_box);
        true
    }

    /// Empties every box of ring frame `frame`, before its items are grown into it.
    pub(crate) fn clear_frame(&mut self, frame: usize) {
        let n = self.per_frame;
        if let Some(boxes) = self.spans.get_mut(frame * n..(frame + 1) * n) {
            boxes.fill(ChildBoxes::EMPTY);
        }
    }

    /// Sets the leaf of `item` in ring frame `frame` (one record of a tick; see
    /// [`FrameLeaves::set`]).
    #[cfg(test)]
    pub(crate) fn grow_leaf(&mut self, frame: usize, item: usize, node_box: NodeBox) {
        self.frame_leaves(frame).set(item, node_box);
    }

    /// The leaves of ring frame `frame`, for a tick's records into it: the frame's nodes
    /// found once per tick.
    ///
    /// PERF: finding them per record (a multiply, two loads, a bounds check and the
    /// not-in-tree check) cost about seven instructions an entity.
    pub(crate) fn frame_leaves(&mut self, frame: usize) -> FrameLeaves<'_> {
        let n = self.per_frame;
        let flat = self.is_flat();
        FrameLeaves {
            floats: child_floats_mut(
                self.spans
                    .get_mut(frame * n..(frame + 1) * n)
                    .unwrap_or_default(),
            ),
            leaf_of: &self.leaf_of,
            flat,
        }
    }

    /// The span boxes of ring frame `frame`, as bits (for tests that compare two trees).
    #[cfg(test)]
    pub(crate) fn frame_span_bits(&self, frame: usize) -> Vec<[u32; 6]> {
        let all = self.span_bits();
        let per_frame = all.len() / self.frames.max(1);
        all[frame * per_frame..(frame + 1) * per_frame].to_vec()
    }

    /// Every span box, frame-major, as bits (for tests that compare two trees).
    #[cfg(test)]
    pub(crate) fn span_bits(&self) -> Vec<[u32; 6]> {
        if self.is_flat() {
            let stride = self.stride;
            return child_floats(&self.spans)
                .chunks_exact(6 * stride)
                .flat_map(|frame| {
                    (0..stride).map(move |lane| {
                        std::array::from_fn(|k| {
                            frame[flat::lane_float(lane) + k * flat::FLAT_LANE_STEP].to_bits()
                        })
                    })
                })
                .collect();
        }
        self.spans
            .iter()
            .flat_map(|b| (0..4).map(|lane| b.lane(lane).as_array().map(f32::to_bits)))
            .collect()
    }

    /// Makes room for a build the size of `other`'s: afterwards, building this tree over
    /// no more items (for a ring no longer) than `other` was built over allocates nothing.
    /// A history keeps two trees and builds into them in turn; this sizes the one that is
    /// not built yet before a steady-state tick would.
    pub(crate) fn reserve_like(&mut self, other: &Self) {
        self.topology.reserve_like(&other.topology);
        reserve_to(&mut self.children, other.children.capacity());
        reserve_to(&mut self.parent_lane, other.parent_lane.capacity());
        reserve_to(&mut self.spans, other.spans.capacity());
        reserve_to(&mut self.lane_item, other.lane_item.capacity());
        reserve_to(&mut self.leaf_of, other.leaf_of.capacity());
        reserve_to(&mut self.pending, other.pending.capacity());
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.topology.heap_bytes()
            + self.spans.capacity() * std::mem::size_of::<ChildBoxes>()
            + self.children.capacity() * 16
            + (self.parent_lane.capacity() + self.leaf_of.capacity() + self.lane_item.capacity())
                * 4
            + self.pending.capacity() * 8
    }
}
