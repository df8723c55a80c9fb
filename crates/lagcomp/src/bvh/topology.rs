//! The tree's shape: median splits on the longest centroid axis over presorted items
//! ([`Topology`]), and the static tree that gives each node one box ([`Bvh`]).

use super::*;

/// Where a median split puts its cut in `len > 1` items: the middle, rounded to a multiple
/// of four above eight items, so that subtrees come in fours and a wide node's children
/// are full (the difference from the exact median is at most two items).
#[inline]
pub(super) fn split_at(len: usize) -> usize {
    if len > 8 {
        (len / 2 + 2) / 4 * 4
    } else {
        len / 2
    }
}

/// The median splits' scratch: the items sorted once by each coordinate, and each node's
/// items kept in that order, contiguous, on all three axes as the splits go down.
///
/// An item is known here by its *place*, its position in the build's input. Each axis has
/// two lists: a split leaves the list of its axis where it is (its first items are the
/// left child's) and partitions the other two into their other list, over the same range.
/// A node's ranges are its own from then on (its ancestors are done with them, its
/// siblings have others), so the bit per axis of which list holds a node's items travels
/// with it.
#[derive(Debug, Clone, Default)]
pub(super) struct Presorted {
    /// Per axis, each place's centroid coordinate.
    coords: [Vec<f32>; 3],
    /// `order[list][axis]`: places in the order of their coordinate on `axis` (ties by
    /// place), over each node's range.
    order: [[Vec<u32>; 3]; 2],
    /// `rank[axis][place]`: where the place comes in the order of all of them on `axis`.
    /// A node's order on an axis is the same, so its left child's items are those ranked
    /// below its `split_at`-th.
    rank: [Vec<u32>; 3],
    /// The sort's keys (`ordered_bits(coordinate) << 32 | place`) and its second buffer.
    keys: Vec<u64>,
    sorted: Vec<u64>,
    /// Per place, the item.
    item: Vec<u32>,
}

impl Presorted {
    /// The list of `axis` that holds the items of a node whose lists are `lists`.
    #[inline(always)]
    pub(super) fn list(&self, lists: u32, axis: usize) -> &[u32] {
        &self.order[(lists >> axis & 1) as usize][axis]
    }

    /// Heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        let lists: usize = self.order.iter().flatten().map(Vec::capacity).sum();
        let coords: usize = self.coords.iter().map(Vec::capacity).sum();
        let ranks: usize = self.rank.iter().map(Vec::capacity).sum();
        (lists + coords + ranks + self.item.capacity()) * 4
            + (self.keys.capacity() + self.sorted.capacity()) * 8
    }

    /// Makes room for a build the size of `other`'s.
    pub(super) fn reserve_like(&mut self, other: &Self) {
        for (mine, theirs) in self
            .order
            .iter_mut()
            .flatten()
            .zip(other.order.iter().flatten())
        {
            reserve_to(mine, theirs.capacity());
        }
        for (mine, theirs) in self.coords.iter_mut().zip(&other.coords) {
            reserve_to(mine, theirs.capacity());
        }
        for (mine, theirs) in self.rank.iter_mut().zip(&other.rank) {
            reserve_to(mine, theirs.capacity());
        }
        reserve_to(&mut self.keys, other.keys.capacity());
        reserve_to(&mut self.sorted, other.sorted.capacity());
        reserve_to(&mut self.item, other.item.capacity());
    }
}

/// The axis a node is split on: the longest extent, the first of equal ones (extents are
/// numbers).
///
/// PERF: without branches (`x` if it is the longest, else `y` or `z`): which axis is
/// longest is as unpredictable as the centroids; the branches mispredicted about 2,700
/// times a 5,000-item build (callgrind).
#[inline(always)]
pub(super) fn longest(x: f32, y: f32, z: f32) -> usize {
    let not_x = usize::from(!(x >= y && x >= z));
    not_x * (1 + usize::from(y < z))
}

/// `x`'s bits as an unsigned number in `x`'s order (a negative float's bits flipped, a
/// positive one's sign bit set), for the radix sort. `-0.0` comes just below `+0.0`.
#[inline(always)]
pub(super) fn ordered_bits(x: f32) -> u32 {
    let bits = x.to_bits();
    bits ^ ((((bits as i32) >> 31) as u32) | 0x8000_0000)
}

/// Sorts `keys` by their high 32 bits, stably (least significant digit first: 11, 11
/// and 10 bits), `spare` the second buffer. A digit that every key shares is skipped.
pub(super) fn radix_sort_high_half(keys: &mut Vec<u64>, spare: &mut Vec<u64>) {
    pub(super) const DIGITS: [(u32, u64); 3] = [(32, 0x7ff), (43, 0x7ff), (54, 0x3ff)];
    let mut counts = [[0_u32; 2048]; 3];
    for &key in keys.iter() {
        for (count, &(shift, mask)) in counts.iter_mut().zip(&DIGITS) {
            count[((key >> shift) & mask) as usize] += 1;
        }
    }
    spare.clear();
    spare.resize(keys.len(), 0);
    for (count, &(shift, mask)) in counts.iter_mut().zip(&DIGITS) {
        let Some(&first) = keys.first() else { return };
        if count[((first >> shift) & mask) as usize] as usize == keys.len() {
            continue;
        }
        let mut sum = 0;
        for slot in count.iter_mut() {
            let n = *slot;
            *slot = sum;
            sum += n;
        }
        for &key in keys.iter() {
            let digit = &mut count[((key >> shift) & mask) as usize];
            spare[*digit as usize] = key;
            *digit += 1;
        }
        std::mem::swap(keys, spare);
    }
}

/// Writes the places of `from` ranked below `cut` in `rank` (`mid` of them) to the front
/// of `to` and the others after them, both sides in their order.
///
/// PERF: branch-free (one store per place, its index a select): which side a place goes
/// to is as unpredictable as the centroids.
#[inline]
pub(super) fn partition_below(from: &[u32], to: &mut [u32], rank: &[u32], cut: u32, mid: usize) {
    let (mut l, mut r) = (0, mid);
    for (&place, _) in from.iter().zip(0..to.len()) {
        let goes_left = usize::from(rank[place as usize] < cut);
        let at = if goes_left != 0 { l } else { r };
        to[at] = place;
        l += goes_left;
        r += 1 - goes_left;
    }
}

impl Topology {
    /// Rebuilds over `items` placed at `centroid(item)` (asked once per item). Reuses the
    /// previous tree's memory, so rebuilding at a steady size allocates nothing.
    ///
    /// Each node's items are split at [`split_at`] in the order of their centroids on the
    /// axis where the centroids spread the most (ties: the earlier item in `items` first).
    ///
    /// PERF: the centroids are sorted once per axis (radix sort on their bits), and each
    /// split keeps each child's items in that order on all three axes with two stable
    /// branch-free partitions; the longest axis is read off the ends of the lists.
    /// Callgrind, 5,000 items, with the collapse: 5.4 M instructions and 12,300
    /// mispredicted branches, against 4.1 M and 43,500 with a selection per node
    /// (`select_nth_unstable`); the rebuild tick 110-145 µs faster (alternated runs).
    pub(crate) fn build(
        &mut self,
        items: impl IntoIterator<Item = u32>,
        centroid: impl Fn(u32) -> Vec3,
    ) {
        let s = &mut self.presorted;
        s.item.clear();
        s.item.extend(items);
        for coords in &mut s.coords {
            coords.clear();
        }
        // PERF: the centroids are computed once. Asking for them inside the comparisons (a
        // few lookups through the history each) was most of the cost of a rebuild: 164,000
        // instructions for 64 entities.
        for &item in &s.item {
            // The splits need numbers: a centroid that is not (an item with no box) is
            // placed at the origin.
            let c = Some(centroid(item))
                .filter(|c| c.is_finite())
                .unwrap_or(Vec3::ZERO);
            for (coords, x) in s.coords.iter_mut().zip(c.to_array()) {
                coords.push(x);
            }
        }
        self.nodes.clear();
        self.items.clear();
        self.sizes.clear();
        let n = s.item.len();
        if n == 0 {
            return;
        }
        self.items.resize(n, 0);
        self.nodes.push(Node::default());
        self.sizes.push(n as u32);
        if n == 1 {
            self.nodes[0] = Node { first: 0, count: 1 };
            self.items[0] = s.item[0];
            return;
        }
        let [first, second] = &mut s.order;
        for ((order, other), coords) in first.iter_mut().zip(second).zip(&s.coords) {
            s.keys.clear();
            s.keys.extend(
                coords
                    .iter()
                    .zip(0_u64..)
                    .map(|(&x, place)| (u64::from(ordered_bits(x)) << 32) | place),
            );
            radix_sort_high_half(&mut s.keys, &mut s.sorted);
            order.clear();
            order.extend(s.keys.iter().map(|&key| key as u32));
            other.clear();
            other.resize(n, 0);
        }
        for (rank, order) in s.rank.iter_mut().zip(&s.order[0]) {
            rank.clear();
            rank.resize(n, 0);
            for (at, &place) in (0_u32..).zip(order) {
                rank[place as usize] = at;
            }
        }
        self.pending.clear();
        self.pending.push((0, 0, n as u32, 0));
        // Nodes of one item are never pushed: their parent makes them leaves.
        while let Some((node, start, end, lists)) = self.pending.pop() {
            let (lo, hi) = (start as usize, end as usize);
            let left = self.nodes.len() as u32;
            self.nodes.push(Node::default());
            self.nodes.push(Node::default());
            self.nodes[node as usize] = Node {
                first: left,
                count: 0,
            };
            let mid = split_at(hi - lo);
            let split = start + mid as u32;
            self.sizes.push(split - start);
            self.sizes.push(end - split);
            if lists & PAIR != 0 {
                // Two items, in the list of one axis only (see below): both children are
                // leaves, in the order of the longest axis (ties by place, as the lists).
                let list = &s.order[(lists >> 6 & 1) as usize][(lists >> 4 & 3) as usize];
                let (p, q) = (list[lo] as usize, list[lo + 1] as usize);
                // `|a - b|` is `max - min` bit for bit.
                let extent = |a: usize| (s.coords[a][p] - s.coords[a][q]).abs();
                let axis = longest(extent(0), extent(1), extent(2));
                let key = |place: usize| (ordered_bits(s.coords[axis][place]), place);
                let (first, second) = if key(q) < key(p) { (q, p) } else { (p, q) };
                for (child, place) in [(left, first), (left + 1, second)] {
                    let at = start + child - left;
                    self.nodes[child as usize] = Node {
                        first: at,
                        count: 1,
                    };
                    self.items[at as usize] = s.item[place];
                }
                continue;
            }
            // The extent on each axis: its list's last coordinate less its first.
            let extent = |a: usize| {
                let order = s.list(lists, a);
                s.coords[a][order[hi - 1] as usize] - s.coords[a][order[lo] as usize]
            };
            let axis = longest(extent(0), extent(1), extent(2));
            let by_axis = (lists >> axis & 1) as usize;
            let children = if hi - lo <= 4 {
                // Children of one or two items: the split axis's list says which items
                // each has, and a child of two needs no other.
                PAIR | (axis as u32) << 4 | (by_axis as u32) << 6
            } else {
                // The right child's first item, and so every item of the left child, by rank.
                let rank = &s.rank[axis];
                let cut = rank[s.order[by_axis][axis][lo + mid] as usize];
                let mut children = lists;
                for other in (0..3).filter(|&a| a != axis) {
                    let was = (lists >> other & 1) as usize;
                    let [first, second] = &mut s.order;
                    let (from, to) = if was == 0 {
                        (&first[other], &mut second[other])
                    } else {
                        (&second[other], &mut first[other])
                    };
                    partition_below(&from[lo..hi], &mut to[lo..hi], rank, cut, mid);
                    children ^= 1 << other;
                }
                children
            };
            for (child, from, to) in [(left, start, split), (left + 1, split, end)] {
                if to - from == 1 {
                    self.nodes[child as usize] = Node {
                        first: from,
                        count: 1,
                    };
                    self.items[from as usize] = s.item[s.list(lists, axis)[from as usize] as usize];
                } else {
                    self.pending.push((child, from, to, children));
                }
            }
        }
    }

    /// Number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Writes every node's box into `boxes` (one per node) from the items' boxes.
    pub(crate) fn refit(&self, boxes: &mut [NodeBox], item_box: impl Fn(u32) -> Aabb) {
        // Children are always pushed after their parent, so walking backwards visits every
        // child before its parent.
        for i in (0..self.nodes.len()).rev() {
            let node = self.nodes[i];
            boxes[i] = if node.count > 0 {
                self.leaf_items(node)
                    .iter()
                    .fold(NodeBox::EMPTY, |acc, &item| {
                        acc.union(&NodeBox::from_aabb(item_box(item)))
                    })
            } else {
                pair_union(boxes, node.first as usize)
            };
        }
    }

    #[inline]
    pub(super) fn leaf_items(&self, node: Node) -> &[u32] {
        &self.items[node.first as usize..(node.first + node.count) as usize]
    }

    /// Visits the items of every leaf the ray passes through, nearest leaves first.
    /// `root_near(t_max)` says where the ray enters the root's box (`None`: it misses it
    /// within `t_max`), `pair_near(first, t_max)` the same for the two children at `first`
    /// and `first + 1` (a mask and the entries, as [`ray_near_pair`]). The items are a
    /// superset of those whose own boxes the ray passes; the visitor tests each item
    /// itself. The visitor returns the new `t_max` (return the argument to keep it): a
    /// closest-hit query shrinks it as it finds hits, which prunes what is behind.
    #[inline]
    pub(super) fn cast(
        &self,
        root_near: impl Fn(f32) -> Option<f32>,
        pair_near: impl Fn(usize, f32) -> (u32, [f32; 2]),
        mut t_max: f32,
        mut visit: impl FnMut(u32, f32) -> f32,
    ) {
        if self.nodes.is_empty() {
            return;
        }
        if root_near(t_max).is_none() {
            return;
        }
        let mut stack = [0_u32; MAX_DEPTH];
        let mut depth = 1;
        while depth > 0 {
            depth -= 1;
            let node = self.nodes[stack[depth] as usize];
            if node.count > 0 {
                for &item in self.leaf_items(node) {
                    t_max = visit(item, t_max);
                }
                continue;
            }
            let first = node.first;
            // Conditional branches rather than a `match`, which compiled to an indirect
            // jump through a table that predicted poorly.
            let (hits, [a, b]) = pair_near(first as usize, t_max);
            if hits == 0b11 {
                // Push the farther child first so the nearer one is visited first.
                let (near, far) = if a <= b {
                    (first, first + 1)
                } else {
                    (first + 1, first)
                };
                stack[depth] = far;
                stack[depth + 1] = near;
                depth += 2;
            } else if hits != 0 {
                // One child: bit 0 is the first, bit 1 the second.
                stack[depth] = first + (hits >> 1);
                depth += 1;
            }
        }
    }

    /// Visits the items of every leaf whose box intersects `query` (a superset of the items
    /// whose own boxes do).
    #[cfg(test)]
    pub(crate) fn overlap(
        &self,
        node_box: impl Fn(usize) -> Aabb,
        query: &Aabb,
        mut visit: impl FnMut(u32),
    ) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = [0_u32; MAX_DEPTH];
        let mut depth = 1;
        while depth > 0 {
            depth -= 1;
            let index = stack[depth] as usize;
            if !node_box(index).intersects(query) {
                continue;
            }
            let node = self.nodes[index];
            if node.count > 0 {
                for &item in self.leaf_items(node) {
                    visit(item);
                }
            } else {
                stack[depth] = node.first;
                stack[depth + 1] = node.first + 1;
                depth += 2;
            }
        }
    }

    /// Makes room for a build the size of `other`'s (see [`TemporalBvh::reserve_like`]).
    pub(super) fn reserve_like(&mut self, other: &Self) {
        reserve_to(&mut self.nodes, other.nodes.capacity());
        reserve_to(&mut self.items, other.items.capacity());
        reserve_to(&mut self.pending, other.pending.capacity());
        reserve_to(&mut self.sizes, other.sizes.capacity());
        self.presorted.reserve_like(&other.presorted);
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + (self.items.capacity() + self.sizes.capacity()) * 4
            + self.pending.capacity() * std::mem::size_of::<(u32, u32, u32, u32)>()
            + self.presorted.heap_bytes()
    }
}

impl Bvh {
    /// Rebuilds over `items` with boxes `bounds[item]`.
    pub(crate) fn build(&mut self, items: impl IntoIterator<Item = u32>, bounds: &[Aabb]) {
        self.topology.build(items, |i| bounds[i as usize].center());
        self.boxes.clear();
        self.boxes.resize(self.topology.len(), NodeBox::EMPTY);
        self.topology.refit(&mut self.boxes, |i| bounds[i as usize]);
    }

    /// See [`Topology::cast`].
    #[inline]
    pub(crate) fn cast(
        &self,
        origin: Vec3,
        inv_dir: Vec3,
        margin: f32,
        t_max: f32,
        visit: impl FnMut(u32, f32) -> f32,
    ) {
        let boxes = &self.boxes;
        let ray = PairRay::new(origin, inv_dir, margin);
        self.topology.cast(
            |t_max| ray.near(&boxes[0], t_max),
            |first, t_max| ray_near_pair(children(boxes, first), &ray, t_max),
            t_max,
            visit,
        );
    }

    /// See [`Topology::overlap`].
    #[cfg(test)]
    pub(crate) fn overlap(&self, query: &Aabb, visit: impl FnMut(u32)) {
        let boxes = &self.boxes;
        self.topology.overlap(|i| boxes[i].aabb(), query, visit);
    }
}
