//! Bounding volume hierarchies: the broadphase of every query.
//!
//! What lives here: [`Topology`] (the tree's shape: which items under which node, built by
//! median splits on the longest centroid axis) and two ways of giving its nodes boxes:
//! - [`Bvh`]: one box per node, for static geometry that never moves.
//! - [`TemporalBvh`]: the topology collapsed to four children per node, with the
//!   children's boxes kept *per frame of the history ring*, plane by plane so one SSE slab
//!   test checks all four. Entities are refitted into the slot of each new frame; a query
//!   at a time between two frames tests each child with the union of its boxes in those
//!   two frames. That union bounds every pose interpolated between them, so culling is
//!   exact-at-the-target-time without any interpolation, and as tight as a BVH built over
//!   the present. With few items it keeps no tree at all: each frame's item spans in flat
//!   planes, scanned whole ([`flat`]). A tree keeps a few spare nodes, so that an item
//!   added between builds goes beside its nearest neighbour without a new topology
//!   ([`TemporalBvh::insert`]).
//!
//! Items are `u32` indices into the caller's own arrays.
//!
//! Why hand-written rather than parry3d's `Bvh`: the per-frame boxes over one shared
//! topology are the point (a rewound query must cull with the boxes of its own moment),
//! refitting allocates nothing, and the traversal lets the caller shrink the ray as it
//! finds closer hits.

use glam::{Vec3, Vec3A, Vec4, Vec4Swizzles};

use crate::math::{Aabb, slab_interval};
use crate::simd::{self, Isa, KernelBody, Kernels, min_into};

pub(crate) mod flat;

pub(crate) use flat::{FLAT_LANE_STEP, FlatFrames, FlatRay, Survivors};

/// Most items a [`TemporalBvh`] keeps flat (no tree) when its shape is chosen by size.
///
/// Measured (funnel, full rewound ray, minimum of 2,000 passes, the 64x16 scene's rigs and
/// rate with more or fewer entities, tree and flat binaries alternated): the flat scan is
/// faster at 32 (390-397 -> 350-355 ns), 64 (399-403 -> 364-367), 128 (515-522 ->
/// 421-443), 256 (572-583 -> 540-546), 384 (725-735 -> 623-631) and 512 entities
/// (793-799 -> 728-746), slower at 768 (798-809 -> 826-842) and 1,024 (870-877 ->
/// 974-1,029).
const FLAT_MAX_ITEMS: usize = 512;
const _: () = assert!(FLAT_MAX_ITEMS <= flat::FLAT_CAPACITY);

/// Items per leaf. One, and queries rely on it: a leaf's box is then its entity's own box
/// over the frames, kept in the tree's contiguous per-frame arrays, so an entity the walk
/// reaches has already passed its own box test and culling one never reads its scattered
/// per-entity records (measured: larger leaves cost more than the extra levels).
const LEAF_SIZE: usize = 1;

/// Deepest possible tree: median splits halve the items, and item counts are `u32`.
const MAX_DEPTH: usize = 64;

/// A node's links: children at `first` and `first + 1` (`count == 0`), or the items
/// `items[first..first + count]`.
#[derive(Debug, Clone, Copy, Default)]
struct Node {
    first: u32,
    count: u32,
}

/// A node box as stored: the minimum corner and the *negated* maximum corner, six floats.
///
/// PERF: with the maximum negated, the union of two boxes is an element-wise minimum over
/// six floats, and widening a whole frame of boxes is one element-wise minimum over flat
/// float slices, which the compiler turns into packed `minps`. The ray test pays
/// nothing for it (`max + margin` becomes `margin - neg_max`). 24 bytes, packed: a query
/// reads two per visited node. The empty box is all `+inf`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub(crate) struct NodeBox {
    min: [f32; 3],
    neg_max: [f32; 3],
}

const _: () = assert!(std::mem::size_of::<NodeBox>() == 24);

impl NodeBox {
    pub(crate) const EMPTY: Self = Self {
        min: [f32::INFINITY; 3],
        neg_max: [f32::INFINITY; 3],
    };

    #[cfg(test)]
    fn aabb(&self) -> Aabb {
        Aabb::new(Vec3::from_array(self.min), -Vec3::from_array(self.neg_max))
    }

    #[inline]
    fn union(&self, other: &Self) -> Self {
        let mut out = *self;
        out.grow(other);
        out
    }

    /// Grows this box to contain `other`.
    #[inline]
    fn grow(&mut self, other: &Self) {
        min_into(self.as_floats_mut(), &other.as_floats());
    }

    /// The six floats, in place.
    #[inline]
    fn as_array(&self) -> &[f32; 6] {
        // SAFETY: `NodeBox` is `repr(C)` with two `[f32; 3]` fields and no padding (24 bytes,
        // asserted above, alignment 4), so it is six initialised `f32`s in a row.
        unsafe { &*std::ptr::from_ref(self).cast::<[f32; 6]>() }
    }

    #[inline]
    fn as_floats(&self) -> [f32; 6] {
        let [a, b, c] = self.min;
        let [d, e, f] = self.neg_max;
        [a, b, c, d, e, f]
    }

    #[inline]
    fn as_floats_mut(&mut self) -> [&mut f32; 6] {
        let [a, b, c] = &mut self.min;
        let [d, e, f] = &mut self.neg_max;
        [a, b, c, d, e, f]
    }

    /// Where the ray enters this box grown by `margin`, if it passes through within
    /// `[0, t_max]`. `inv_dir` comes from [`crate::math::ray_recip`].
    #[inline]
    fn ray_near(&self, origin: Vec3A, inv_dir: Vec3A, margin: f32, t_max: f32) -> Option<f32> {
        let margin = Vec3A::splat(margin);
        slab_interval(
            Vec3A::from_array(self.min) - margin,
            margin - Vec3A::from_array(self.neg_max),
            origin,
            inv_dir,
            t_max,
        )
        .map(|(near, _)| near)
    }

    /// The box from `min` to `max`.
    #[inline]
    pub(crate) fn new(min: [f32; 3], max: [f32; 3]) -> Self {
        Self {
            min,
            neg_max: [-max[0], -max[1], -max[2]],
        }
    }

    /// The box from `min` to `max` (their fourth lanes ignored), negated as one vector.
    #[inline]
    pub(crate) fn from_corners(min: Vec3A, max: Vec3A) -> Self {
        Self {
            min: min.to_array(),
            neg_max: (-max).to_array(),
        }
    }

    #[inline]
    fn from_aabb(aabb: Aabb) -> Self {
        Self {
            min: aabb.min.to_array(),
            neg_max: (-aabb.max).to_array(),
        }
    }
}

/// A ray laid out for [`ray_near_pair`]: per axis, the origin and the inverse direction on
/// the four lanes `[min of box 0, min of box 1, max of box 0, max of box 1]`, with the sign
/// flipped on the two `max` lanes (which hold negated maxima).
#[derive(Debug, Clone, Copy)]
struct PairRay {
    origin: [Vec4; 3],
    inv_dir: [Vec4; 3],
    margin: Vec4,
    /// The ray against the root, which has no sibling.
    single: (Vec3A, Vec3A, f32),
}

impl PairRay {
    #[inline]
    fn new(origin: Vec3, inv_dir: Vec3, margin: f32) -> Self {
        let signed = |v: f32| Vec4::new(v, v, -v, -v);
        Self {
            origin: [signed(origin.x), signed(origin.y), signed(origin.z)],
            inv_dir: [signed(inv_dir.x), signed(inv_dir.y), signed(inv_dir.z)],
            margin: Vec4::splat(-margin),
            single: (origin.into(), inv_dir.into(), margin),
        }
    }

    /// [`NodeBox::ray_near`] against one box.
    #[inline]
    fn near(&self, node: &NodeBox, t_max: f32) -> Option<f32> {
        let (origin, inv_dir, margin) = self.single;
        node.ray_near(origin, inv_dir, margin, t_max)
    }
}

/// [`NodeBox::ray_near`] against two boxes at once (a node's two children, adjacent in
/// memory): bit `k` of the mask is set when the ray passes through box `k` within
/// `[0, t_max]`, entering it at `near[k]`.
///
/// PERF: the tree walk's inner loop. Both boxes' slab tests run on the four lanes
/// `[min 0, min 1, max 0, max 1]` of each axis, about half the instructions of two
/// separate tests. Every lane computes exactly what [`NodeBox::ray_near`] does (the `max`
/// lanes as `-(neg_max - margin + o) * inv`, which is the same number as
/// `(margin - neg_max - o) * inv`: negation is exact), so the walk visits the same nodes.
#[inline(always)]
fn ray_near_pair(pair: &[NodeBox; 2], ray: &PairRay, t_max: f32) -> (u32, [f32; 2]) {
    let [vx, vy, vz] = pair_lanes(pair);
    let t = |v: Vec4, axis: usize| (v + ray.margin - ray.origin[axis]) * ray.inv_dir[axis];
    let (tx, ty, tz) = (t(vx, 0), t(vy, 1), t(vz, 2));
    // Lanes 0 and 1: each box's entry and exit along that axis (2 and 3 repeat them).
    let (sx, sy, sz) = (tx.zwxy(), ty.zwxy(), tz.zwxy());
    let near = tx.min(sx).max(ty.min(sy)).max(tz.min(sz)).max(Vec4::ZERO);
    let far = tx
        .max(sx)
        .min(ty.max(sy))
        .min(tz.max(sz))
        .min(Vec4::splat(t_max));
    (near.cmple(far).bitmask() & 0b11, [near.x, near.y])
}

/// Two boxes as `[xs, ys, zs]`, each `[min 0, min 1, neg_max 0, neg_max 1]`.
#[inline(always)]
fn pair_lanes(pair: &[NodeBox; 2]) -> [Vec4; 3] {
    let f: &[f32; 12] = floats(pair).try_into().expect("two boxes of six floats");
    simd::pair_lanes(f)
}

/// The union of sibling boxes `first` and `first + 1` (the same minimums as
/// [`NodeBox::union`], `b < a ? b : a` per float).
///
/// PERF: four floats and two floats at a time (`minps` on 16 and 8 bytes) instead of six
/// scalar minimums; every frame's refit runs this once per internal node.
#[inline]
fn pair_union(boxes: &[NodeBox], first: usize) -> NodeBox {
    grown(&boxes[first], &boxes[first + 1])
}

/// `a` grown to contain `b`: per float `b < a ? b : a`, as [`NodeBox::grow`], on two
/// overlapping groups of four floats (floats 0..4 and 2..6; the middle two are computed
/// twice, identically).
#[inline]
fn grown(a: &NodeBox, b: &NodeBox) -> NodeBox {
    let [a, b] = [a.as_array(), b.as_array()];
    let head = Vec4::from_slice(&b[..4]).min(Vec4::from_slice(&a[..4]));
    let tail = Vec4::from_slice(&b[2..]).min(Vec4::from_slice(&a[2..]));
    let mut out = [0.0; 6];
    head.write_to_slice(&mut out[..4]);
    tail.write_to_slice(&mut out[2..]);
    NodeBox {
        min: [out[0], out[1], out[2]],
        neg_max: [out[3], out[4], out[5]],
    }
}

/// The two children at `first` and `first + 1`.
#[inline(always)]
fn children(boxes: &[NodeBox], first: usize) -> &[NodeBox; 2] {
    boxes[first..first + 2]
        .try_into()
        .expect("a node's children are adjacent")
}

fn floats(boxes: &[NodeBox]) -> &[f32] {
    // SAFETY: `NodeBox` is `repr(C)` with two `[f32; 3]` fields and no padding (24 bytes,
    // asserted above), so a slice of them is a slice of `6 * len` initialised `f32`s with
    // the same alignment.
    unsafe { std::slice::from_raw_parts(boxes.as_ptr().cast::<f32>(), boxes.len() * 6) }
}

/// Where a median split puts its cut in `len > 1` items: the middle, rounded to a multiple
/// of four above eight items, so that subtrees come in fours and a wide node's children
/// are full (the difference from the exact median is at most two items).
#[inline]
fn split_at(len: usize) -> usize {
    if len > 8 {
        (len / 2 + 2) / 4 * 4
    } else {
        len / 2
    }
}

/// The shape of a tree: built once from item centroids, shared by every set of boxes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Topology {
    nodes: Vec<Node>,
    items: Vec<u32>,
    /// Items under each node (what the wide tree's collapse chooses by).
    sizes: Vec<u32>,
    /// Build work list (node, its items' range, where its lists are: see [`Presorted`]),
    /// kept to reuse its allocation.
    pending: Vec<(u32, u32, u32, u32)>,
    /// Build scratch, kept to reuse its allocations.
    presorted: Presorted,
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
struct Presorted {
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
    fn list(&self, lists: u32, axis: usize) -> &[u32] {
        &self.order[(lists >> axis & 1) as usize][axis]
    }

    /// Heap bytes held.
    fn heap_bytes(&self) -> usize {
        let lists: usize = self.order.iter().flatten().map(Vec::capacity).sum();
        let coords: usize = self.coords.iter().map(Vec::capacity).sum();
        let ranks: usize = self.rank.iter().map(Vec::capacity).sum();
        (lists + coords + ranks + self.item.capacity()) * 4
            + (self.keys.capacity() + self.sorted.capacity()) * 8
    }

    /// Makes room for a build the size of `other`'s.
    fn reserve_like(&mut self, other: &Self) {
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

/// A node's lists flag for a node of two items whose places are only in the list of one
/// axis (bits 4-5) of one side (bit 6).
const PAIR: u32 = 1 << 3;

/// The axis a node is split on: the longest extent, the first of equal ones (extents are
/// numbers).
///
/// PERF: without branches (`x` if it is the longest, else `y` or `z`): which axis is
/// longest is as unpredictable as the centroids; the branches mispredicted about 2,700
/// times a 5,000-item build (callgrind).
#[inline(always)]
fn longest(x: f32, y: f32, z: f32) -> usize {
    let not_x = usize::from(!(x >= y && x >= z));
    not_x * (1 + usize::from(y < z))
}

/// `x`'s bits as an unsigned number in `x`'s order (a negative float's bits flipped, a
/// positive one's sign bit set), for the radix sort. `-0.0` comes just below `+0.0`.
#[inline(always)]
fn ordered_bits(x: f32) -> u32 {
    let bits = x.to_bits();
    bits ^ ((((bits as i32) >> 31) as u32) | 0x8000_0000)
}

/// Sorts `keys` by their high 32 bits, stably (least significant digit first: 11, 11
/// and 10 bits), `spare` the second buffer. A digit that every key shares is skipped.
fn radix_sort_high_half(keys: &mut Vec<u64>, spare: &mut Vec<u64>) {
    const DIGITS: [(u32, u64); 3] = [(32, 0x7ff), (43, 0x7ff), (54, 0x3ff)];
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
fn partition_below(from: &[u32], to: &mut [u32], rank: &[u32], cut: u32, mid: usize) {
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
    /// (`select_nth_unstable`); the rebuild tick 110-145 µs faster (alternated runs): see
    /// BENCHMARKS.md, Record, tenth round.
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
    fn leaf_items(&self, node: Node) -> &[u32] {
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
    fn cast(
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
    fn reserve_like(&mut self, other: &Self) {
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

/// A tree with one box per node: static geometry.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bvh {
    topology: Topology,
    boxes: Vec<NodeBox>,
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

/// A tree whose node boxes are kept per frame of a ring: entities over history.
///
/// PERF: four children per node, the children's boxes stored plane by plane (structure of
/// arrays: the four minimum x, then the four minimum y, ...), so one slab test on SSE
/// lanes tests all four and a ray's walk visits about half the nodes of a binary tree.
/// The shape is the binary [`Topology`] collapsed two levels at a time (Embree's BVH4
/// layout). Callgrind, 64 entities: the walk cost about 1,500 instructions a shot over the
/// binary tree of per-node boxes.
///
/// Two ways to fill frames: tick by tick, [`TemporalBvh::clear_frame`], one
/// [`FrameLeaves::set`] per item recorded (on [`TemporalBvh::frame_leaves`]), and
/// [`TemporalBvh::finish_frame`], which never reads the items' records again; or, after a
/// new shape ([`TemporalBvh::reshape`]), [`TemporalBvh::clear_frame`] and
/// [`FrameLeaves::refill`] of every item in each frame the tree is to hold (a
/// history gives a new tree its newest two frames; the older ones stay with the tree they
/// were recorded under) and then [`TemporalBvh::finish_frame`] for each of them, oldest
/// first. (`refit_frame`, the straightforward way, is kept as the tests' reference.)
/// Between builds, [`TemporalBvh::insert`] adds an item in a spare node.
///
/// Each frame's slot holds, per child, the box over that frame *and the next one* (a
/// span): a query between two adjacent frames, the common case, reads one set of boxes per
/// node. The newest frame's span is its own box until the next frame widens it.
///
/// With at most [`FLAT_MAX_ITEMS`] items a build keeps no tree (the flat form, [`flat`]):
/// each frame's slot is the items' spans in blocks of eight lanes, six planes each, in
/// the same memory, which every query scans whole. Recording then only sets
/// leaves and widens the previous frame: no refit, no topology. Both forms take the same
/// calls and give the same answers.
#[derive(Debug, Clone, Default)]
pub(crate) struct TemporalBvh {
    /// The binary tree the wide one is collapsed from (kept for its build's memory).
    topology: Topology,
    /// Per node, its four children: [`ITEM`] plus an item, a node index, or [`NO_CHILD`].
    /// Children come after their parents. Empty in the flat form.
    children: Vec<[u32; 4]>,
    /// Per node in the tree but the root (index 0), where its box goes: `parent << 2 |
    /// lane`. As long as `linked`: spare nodes have none until [`TemporalBvh::insert`]
    /// links them.
    parent_lane: Vec<u32>,
    /// Nodes in the tree: the build's, then the spare nodes linked since. The rest of
    /// `children` are spares, every lane empty (and every box, in every frame).
    linked: usize,
    /// `frames * per_frame` sets of child spans, frame-major (in the flat form, each
    /// frame's `per_frame` of them hold its blocks of lanes, see [`flat::lane_float`]).
    spans: Vec<ChildBoxes>,
    frames: usize,
    /// `ChildBoxes` per frame: one per node, or `stride / 4` in the flat form.
    per_frame: usize,
    /// The flat form's lanes, a multiple of [`flat::FLAT_LANE_STEP`] (the items' and
    /// empty ones after them); 0 for the tree.
    stride: usize,
    /// The flat form's item in each lane, in the order the build was given them.
    lane_item: Vec<u32>,
    /// Which form a build picks (by size unless a test forces one).
    shape: Shape,
    /// Where each item's box is kept in a frame: the float index of its minimum x, its
    /// other five floats each 4 (the tree: a plane of four children) or 8 (the flat form:
    /// a plane of a block) further (`u32::MAX`: not kept).
    leaf_of: Vec<u32>,
    /// Build scratch, kept to reuse its allocation: the collapse's work list.
    pending: Vec<(u32, u32)>,
}

/// Which form a [`TemporalBvh`] build takes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Shape {
    /// Flat up to [`FLAT_MAX_ITEMS`] items, a tree above.
    #[default]
    BySize,
    /// Flat up to [`flat::FLAT_CAPACITY`] items (tests).
    #[cfg(test)]
    Flat,
    /// Always a tree (tests).
    #[cfg(test)]
    Tree,
}

/// One ring frame's boxes and where each item's leaf is, borrowed while a tick is recorded
/// ([`TemporalBvh::frame_leaves`]).
#[derive(Debug)]
pub(crate) struct FrameLeaves<'a> {
    floats: &'a mut [f32],
    leaf_of: &'a [u32],
    flat: bool,
}

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
fn set_leaf(flat: bool, floats: &mut [f32], at: usize, node_box: &NodeBox) {
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
fn set_leaf_at<const STEP: usize>(floats: &mut [f32], at: usize, node_box: &NodeBox) {
    if let Some(leaf) = floats.get_mut(at..at + 5 * STEP + 1) {
        for (k, &v) in node_box.as_array().iter().enumerate() {
            leaf[k * STEP] = v;
        }
    }
}

/// Spare nodes a tree of `nodes` nodes keeps for [`TemporalBvh::insert`]: one in 64 and
/// four more (at 5,000 entities, about 1,700 nodes: 30 spares, 2 % more boxes per frame).
fn spare_nodes(nodes: usize) -> usize {
    nodes / 64 + 4
}

/// A child link that is an item rather than a node.
const ITEM: u32 = 1 << 31;

/// An unused child slot.
const NO_CHILD: u32 = u32::MAX;

/// Deepest possible path in the wide tree, in stack entries a walk can hold: each visited
/// node replaces itself by at most four children, and a path is no deeper than the binary
/// tree's.
const WIDE_STACK: usize = 3 * MAX_DEPTH + 4;

/// The boxes of a node's four children, plane by plane: `planes[0]` the minimum corners
/// (x, y, z; lane `k` is child `k`), `planes[1]` the *negated* maximum corners, as in
/// [`NodeBox`]. An unused child is the empty box (all `+inf`).
///
/// PERF: 96 bytes, aligned for SSE loads; one slab test reads six of its vectors.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C, align(16))]
pub(crate) struct ChildBoxes {
    planes: [[[f32; 4]; 3]; 2],
}

const _: () = assert!(std::mem::size_of::<ChildBoxes>() == 96);
const _: () = assert!(LEAF_SIZE == 1, "leaves are single items in the wide tree");

impl ChildBoxes {
    const EMPTY: Self = Self {
        planes: [[[f32::INFINITY; 4]; 3]; 2],
    };

    #[inline(always)]
    fn plane(&self, side: usize, axis: usize) -> Vec4 {
        Vec4::from_array(self.planes[side & 1][axis])
    }

    /// Child `lane`'s box.
    #[inline]
    fn lane(&self, lane: usize) -> NodeBox {
        let [min, neg_max] = self.planes;
        NodeBox {
            min: [min[0][lane], min[1][lane], min[2][lane]],
            neg_max: [neg_max[0][lane], neg_max[1][lane], neg_max[2][lane]],
        }
    }

    /// Sets child `lane`'s box.
    #[inline]
    fn set_lane(&mut self, lane: usize, b: &NodeBox) {
        let lane = lane & 3;
        for axis in 0..3 {
            self.planes[0][axis][lane] = b.min[axis];
            self.planes[1][axis][lane] = b.neg_max[axis];
        }
    }

    /// The union of the four children's boxes: the node's own box.
    ///
    /// PERF: every tick's refit runs this once per node: the six planes' minimums over the
    /// children together (`simd::lane_minimums`: three packed minimums on x86_64).
    #[inline]
    fn union(&self) -> NodeBox {
        let p = |side: usize, axis: usize| self.plane(side, axis);
        let [x, y, z, nx, ny, nz] =
            simd::lane_minimums([p(0, 0), p(0, 1), p(0, 2), p(1, 0), p(1, 1), p(1, 2)]);
        NodeBox {
            min: [x, y, z],
            neg_max: [nx, ny, nz],
        }
    }

    /// The same node's boxes grown by `other`'s (one more frame of a range).
    #[inline]
    fn grow(&mut self, other: &Self) {
        min_into(
            self.planes.as_flattened_mut().as_flattened_mut(),
            other.planes.as_flattened().as_flattened(),
        );
    }
}

/// A ray laid out for [`WideRay::enter`]: per axis, which plane of a node's children the
/// ray enters by (the minimum if it travels towards `+`, the negated maximum otherwise)
/// and which it leaves by, with the origin and inverse direction signed to match.
#[derive(Debug, Clone, Copy)]
struct WideRay {
    /// 0 (minimum) or 1 (negated maximum) per axis: the entry plane; the exit is the other.
    entry_side: [usize; 3],
    entry_origin: [Vec4; 3],
    entry_inv: [Vec4; 3],
    exit_origin: [Vec4; 3],
    exit_inv: [Vec4; 3],
    /// The margin, negated, on every lane.
    margin: Vec4,
}

impl WideRay {
    #[inline]
    fn new(origin: Vec3, inv_dir: Vec3, margin: f32) -> Self {
        // The negated-maximum plane takes the origin and inverse direction negated, so
        // `(neg_max - margin + o) * -inv` is `((max + margin) - o) * inv` exactly
        // (negation is exact), as in `NodeBox::ray_near`.
        let axis = |o: f32, inv: f32| {
            let (o, inv) = (Vec4::splat(o), Vec4::splat(inv));
            if inv.x < 0.0 {
                (1, -o, -inv, o, inv)
            } else {
                (0, o, inv, -o, -inv)
            }
        };
        let (sx, ox, ix, fox, fix) = axis(origin.x, inv_dir.x);
        let (sy, oy, iy, foy, fiy) = axis(origin.y, inv_dir.y);
        let (sz, oz, iz, foz, fiz) = axis(origin.z, inv_dir.z);
        Self {
            entry_side: [sx, sy, sz],
            entry_origin: [ox, oy, oz],
            entry_inv: [ix, iy, iz],
            exit_origin: [fox, foy, foz],
            exit_inv: [fix, fiy, fiz],
            margin: Vec4::splat(-margin),
        }
    }

    /// Which of the four children the ray passes through within `[0, t_max]` (bit `k` for
    /// child `k`), and where it enters each.
    ///
    /// Each lane computes what [`NodeBox::ray_near`] computes for that child: the slab
    /// test's per-axis entry is the smaller of the two plane distances, and with
    /// `inv_dir` never zero or NaN (see [`crate::math::ray_recip`]) that is the plane
    /// chosen by the direction's sign, bit for bit, because rounding is monotonic. An
    /// empty child (`+inf` planes) is entered at `+inf` and never passes.
    ///
    /// `GROWN` false skips adding the margin, for a margin of `+0.0` only (then the same).
    #[inline(always)]
    fn enter<const GROWN: bool>(&self, boxes: &ChildBoxes, t_max: f32) -> (u32, Vec4) {
        let grown = |plane: Vec4| if GROWN { plane + self.margin } else { plane };
        let entry = |axis: usize| {
            (grown(boxes.plane(self.entry_side[axis], axis)) - self.entry_origin[axis])
                * self.entry_inv[axis]
        };
        let exit = |axis: usize| {
            (grown(boxes.plane(1 - self.entry_side[axis], axis)) - self.exit_origin[axis])
                * self.exit_inv[axis]
        };
        let near = entry(0).max(entry(1)).max(entry(2)).max(Vec4::ZERO);
        let far = exit(0).min(exit(1)).min(exit(2)).min(Vec4::splat(t_max));
        (near.cmple(far).bitmask(), near)
    }
}

/// Asks for the cache lines of the child boxes at `boxes` (a hint: any address will do).
/// 96 bytes aligned to 16 touch two or three lines.
#[inline(always)]
fn prefetch_child_boxes(boxes: *const ChildBoxes) {
    let at = boxes.cast::<u8>();
    crate::simd::prefetch_line(at);
    crate::simd::prefetch_line(at.wrapping_add(64));
    crate::simd::prefetch_line(at.wrapping_add(95));
}

/// Which spans bound a query: `count` consecutive ring frames from `first` (1 for a target
/// between adjacent frames or on one frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpanRange {
    pub(crate) first: usize,
    pub(crate) count: usize,
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
    fn is_flat(&self) -> bool {
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
    /// untouched for a window (BENCHMARKS.md, Record, ninth round).
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
    fn build_flat(&mut self) {
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
    fn collapse(&mut self) {
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
    /// frame (BENCHMARKS.md, Record, seventh round).
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

    fn widen(&mut self, kernels: Kernels, frame: usize, previous: Option<usize>) {
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

    /// The boxes of node `i`'s children over the range (the union of their spans: two or
    /// more frames apart only for tick-pair targets that skip frames).
    #[inline]
    fn range_boxes(&self, range: SpanRange, i: usize) -> ChildBoxes {
        // The tree's; the node count, as in `cast`.
        let n = self.children.len();
        let mut b = self.spans[range.first * n + i];
        let mut frame = range.first;
        for _ in 1..range.count {
            frame = if frame + 1 == self.frames {
                0
            } else {
                frame + 1
            };
            b.grow(&self.spans[frame * n + i]);
        }
        b
    }

    /// Visits every item whose box (over the range, grown by `margin`) the ray passes
    /// through within `t_max`, nearest boxes first. The visitor tests each item itself and
    /// returns the new `t_max` (return the argument to keep it): a closest-hit query
    /// shrinks it as it finds hits, which prunes what is behind. `ahead` hears of each item
    /// as soon as its box passes, before it is visited (a trace prefetches its rows then).
    #[expect(
        clippy::too_many_arguments,
        reason = "the ray, its reach and the two callbacks of one walk"
    )]
    #[inline]
    pub(crate) fn cast(
        &self,
        kernels: Kernels,
        range: SpanRange,
        origin: Vec3,
        inv_dir: Vec3,
        margin: f32,
        t_max: f32,
        ahead: impl Fn(u32),
        visit: impl FnMut(u32, f32) -> f32,
    ) {
        if self.is_flat() {
            self.cast_flat(kernels, range, origin, inv_dir, margin, t_max, ahead, visit);
            return;
        }
        let ray = WideRay::new(origin, inv_dir, margin);
        // PERF: the tree's `per_frame` is its node count; read as `children.len()`, the
        // same bound as the walk's `children[node]`, so each node's box needs no second
        // bounds check (callgrind, 5000x20: 5,594 -> 5,555 instructions a shot).
        let n = self.children.len();
        if range.count == 1 {
            let Some(spans) = self.spans.get(range.first * n..(range.first + 1) * n) else {
                return;
            };
            // PERF: a node passed is asked for as soon as it is pushed (the walk's loads
            // otherwise wait on each other: node, children's test, pop, next node).
            let node_ahead = |i: usize| prefetch_child_boxes(spans.as_ptr().wrapping_add(i));
            // PERF: a ray (no margin) skips adding the margin, which is then `-0.0`: the
            // identity for every float, so the same numbers for six fewer additions a node.
            if margin.to_bits() == 0 {
                self.walk::<_, false>(|i| &spans[i], node_ahead, &ray, t_max, ahead, visit);
            } else {
                self.walk::<_, true>(|i| &spans[i], node_ahead, &ray, t_max, ahead, visit);
            }
        } else {
            self.walk::<_, true>(
                |i| self.range_boxes(range, i),
                |_| {},
                &ray,
                t_max,
                ahead,
                visit,
            );
        }
    }

    /// [`TemporalBvh::cast`] in the flat form: every lane scanned, the survivors visited
    /// nearest first (ties in lane order), each skipped once the reach falls short of it.
    #[expect(
        clippy::too_many_arguments,
        reason = "the ray, its reach and the two callbacks of one walk"
    )]
    #[inline]
    fn cast_flat(
        &self,
        kernels: Kernels,
        range: SpanRange,
        origin: Vec3,
        inv_dir: Vec3,
        margin: f32,
        mut t_max: f32,
        ahead: impl Fn(u32),
        mut visit: impl FnMut(u32, f32) -> f32,
    ) {
        if range.first >= self.frames {
            return;
        }
        let frames = self.flat_frames(range);
        let ray = flat::FlatRay::new(origin, inv_dir, margin);
        // PERF: survivors on the stack, never more than `FLAT_CAPACITY` (the flat form's
        // most lanes), and written before read: a query allocates and clears nothing.
        let mut keys = [std::mem::MaybeUninit::<u64>::uninit(); flat::FLAT_CAPACITY];
        let found = if margin.to_bits() == 0 {
            flat::scan::<false>(kernels, &frames, &ray, t_max, &mut keys)
        } else {
            flat::scan::<true>(kernels, &frames, &ray, t_max, &mut keys)
        };
        let keys = &keys[..found];
        for key in keys {
            // SAFETY: the scan wrote the first `found` keys.
            let (_, lane) = flat::unkey(unsafe { key.assume_init() });
            ahead(self.lane_item[lane]);
        }
        for key in keys {
            // SAFETY: as above.
            let (near, lane) = flat::unkey(unsafe { key.assume_init() });
            // Sorted by entry: everything after this one is as far or farther.
            if near > t_max {
                break;
            }
            t_max = visit(self.lane_item[lane], t_max);
        }
    }

    /// The flat planes a query over `range` reads.
    #[inline]
    fn flat_frames(&self, range: SpanRange) -> flat::FlatFrames<'_> {
        flat::FlatFrames {
            floats: child_floats(&self.spans),
            frame_floats: 6 * self.stride,
            stride: self.stride,
            frames: self.frames,
            first: range.first,
            count: range.count.clamp(1, self.frames.max(1)),
        }
    }

    /// Prefetches the root's child boxes for the range's first frame (the flat form: the
    /// start of each plane) : a trace asks for them as soon as it knows its frame, before
    /// its own setup.
    #[inline]
    pub(crate) fn prefetch_root(&self, range: SpanRange) {
        let n = self.per_frame;
        let at = self.spans.as_ptr().wrapping_add(range.first * n);
        if self.is_flat() {
            // The first two blocks (six lines); the scan's sequential reads bring the rest.
            let bytes = at.cast::<u8>();
            for line in 0..6 {
                crate::simd::prefetch_line(bytes.wrapping_add(line * 64));
            }
        } else {
            prefetch_child_boxes(at);
        }
    }

    /// The walk behind [`TemporalBvh::cast`], with node `i`'s child boxes `boxes(i)`
    /// (borrowed when stored, owned when computed over a range of frames).
    #[inline(always)]
    fn walk<B: std::borrow::Borrow<ChildBoxes>, const GROWN: bool>(
        &self,
        boxes: impl Fn(usize) -> B,
        node_ahead: impl Fn(usize),
        ray: &WideRay,
        mut t_max: f32,
        ahead: impl Fn(u32),
        mut visit: impl FnMut(u32, f32) -> f32,
    ) {
        if self.children.is_empty() {
            return;
        }
        // Children waiting to be visited, each with where the ray enters its box; the
        // nearest on top. Every entry below `depth` has been written.
        let mut stack = [std::mem::MaybeUninit::<(u32, f32)>::uninit(); WIDE_STACK];
        let mut depth = 0;
        let mut node = 0_usize;
        loop {
            let (mut mask, near) = ray.enter::<GROWN>(boxes(node).borrow(), t_max);
            let near = near.to_array();
            let links = &self.children[node];
            // Push the children passed, farthest first: a small insertion sort on the
            // stack's top (at most four entries, usually one or two).
            let base = depth;
            while mask != 0 {
                let lane = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let entry = (links[lane], near[lane]);
                if entry.0 & ITEM == 0 {
                    node_ahead(entry.0 as usize);
                } else {
                    ahead(entry.0 & !ITEM);
                }
                let mut at = depth;
                while at > base {
                    // SAFETY: `base <= at - 1 < depth`, and every entry below `depth` was
                    // written.
                    let below = unsafe { stack[at - 1].assume_init() };
                    if below.1 >= entry.1 {
                        break;
                    }
                    stack[at].write(below);
                    at -= 1;
                }
                stack[at].write(entry);
                depth += 1;
            }
            // The next node to open: pop, visiting items on the way, skipping anything
            // the ray now enters beyond `t_max`.
            loop {
                if depth == 0 {
                    return;
                }
                depth -= 1;
                // SAFETY: every entry below the old `depth` was written.
                let (link, near) = unsafe { stack[depth].assume_init() };
                if near > t_max {
                    continue;
                }
                if link & ITEM != 0 {
                    t_max = visit(link & !ITEM, t_max);
                    continue;
                }
                node = link as usize;
                break;
            }
        }
    }

    /// Visits every item whose box (over the range) intersects `query`.
    #[inline]
    pub(crate) fn overlap(&self, range: SpanRange, query: &Aabb, mut visit: impl FnMut(u32)) {
        let n = self.per_frame;
        if n == 0 || range.first * n >= self.spans.len() {
            return;
        }
        if self.is_flat() {
            flat::overlap(&self.flat_frames(range), query, |lane| {
                visit(self.lane_item[lane]);
            });
            return;
        }
        // Per axis: a child overlaps when `min <= query.max` and `neg_max <= -query.min`
        // (that is `max >= query.min`, exactly), as `Aabb::intersects`.
        let hi = query.max.to_array().map(Vec4::splat);
        let neg_lo = (-query.min).to_array().map(Vec4::splat);
        let mut stack = [0_u32; WIDE_STACK];
        let mut depth = 1;
        while depth > 0 {
            depth -= 1;
            let node = stack[depth] as usize;
            let b = self.range_boxes(range, node);
            let mut mask = (0..3).fold(0b1111, |mask, axis| {
                mask & b.plane(0, axis).cmple(hi[axis]).bitmask()
                    & b.plane(1, axis).cmple(neg_lo[axis]).bitmask()
            });
            let links = &self.children[node];
            while mask != 0 {
                let lane = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let link = links[lane];
                if link & ITEM != 0 {
                    visit(link & !ITEM);
                } else {
                    stack[depth] = link;
                    depth += 1;
                }
            }
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

/// Grows `v`'s capacity to at least `capacity`, exactly (amortised growth on both of two
/// trees sized after each other could keep growing them in turn).
fn reserve_to<T>(v: &mut Vec<T>, capacity: usize) {
    v.reserve_exact(capacity.saturating_sub(v.len()));
}

/// Where a tree child's box starts among its frame's floats: its node's 24 floats
/// (`ChildBoxes`), then its lane in the first plane. `link` is `node << 2 | lane`.
#[inline]
fn leaf_float(link: u32) -> u32 {
    (link >> 2) * 24 + (link & 3)
}

/// The node and lane of the tree child whose box starts at float `at`: the inverse of
/// [`leaf_float`].
#[inline]
fn leaf_link(at: u32) -> (usize, usize) {
    (at as usize / 24, at as usize % 24)
}

/// Writes every internal node's box into its parent's lane, children before parents,
/// keeping the items' boxes as they are.
///
/// PERF: compiled for the history's kernels: with AVX2, the same unions (the same SSE
/// operations) in the VEX encoding, whose three-operand instructions drop the register
/// copies the two-operand SSE forms need around the union's interleaves: callgrind, 64
/// entities, 54 -> 44 instructions per node.
fn refit_internal(kernels: Kernels, parent_lane: &[u32], boxes: &mut [ChildBoxes]) {
    kernels.run(RefitInternal { parent_lane, boxes });
}

/// [`refit_internal`] as a body compiled per instruction set.
struct RefitInternal<'a> {
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
fn refit_internal_with(parent_lane: &[u32], boxes: &mut [ChildBoxes]) {
    for (node, &link) in parent_lane.iter().enumerate().skip(1).rev() {
        let union = boxes[node].union();
        boxes[(link >> 2) as usize].set_lane((link & 3) as usize, &union);
    }
}

fn child_floats(boxes: &[ChildBoxes]) -> &[f32] {
    // SAFETY: `ChildBoxes` is `repr(C)` over 24 `f32`s, 96 bytes with no padding (asserted
    // above), so a slice of them is a slice of `24 * len` initialised `f32`s, suitably
    // aligned.
    unsafe { std::slice::from_raw_parts(boxes.as_ptr().cast::<f32>(), boxes.len() * 24) }
}

fn child_floats_mut(boxes: &mut [ChildBoxes]) -> &mut [f32] {
    // SAFETY: as in `child_floats`; the borrow is unique.
    unsafe { std::slice::from_raw_parts_mut(boxes.as_mut_ptr().cast::<f32>(), boxes.len() * 24) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::ray_recip;

    fn boxes(n: usize, shift: f32) -> Vec<Aabb> {
        (0..n)
            .map(|i| {
                let c = Vec3::new(
                    (i % 17) as f32 * 3.0 + shift,
                    (i / 17) as f32 * 3.0,
                    (i % 5) as f32,
                );
                Aabb::around_sphere(c, 0.5)
            })
            .collect()
    }

    /// The items whose boxes the ray passes within 100: the oracle a tree walk must match.
    fn linear_scan(bounds: &[Aabb], origin: Vec3, inv: Vec3) -> Vec<u32> {
        (0..bounds.len() as u32)
            .filter(|&i| {
                bounds[i as usize]
                    .ray_interval(origin, inv, 100.0)
                    .is_some()
            })
            .collect()
    }

    /// The items a tree walk visits whose own boxes the ray passes, sorted.
    fn cast_all(
        cast: impl Fn(&mut dyn FnMut(u32, f32) -> f32),
        bounds: &[Aabb],
        origin: Vec3,
        inv: Vec3,
    ) -> Vec<u32> {
        let mut found = Vec::new();
        cast(&mut |item, t| {
            if bounds[item as usize]
                .ray_interval(origin, inv, 100.0)
                .is_some()
            {
                found.push(item);
            }
            t
        });
        found.sort_unstable();
        found
    }

    #[test]
    fn cast_finds_exactly_the_boxes_a_linear_scan_finds() {
        let bounds = boxes(300, 0.0);
        let mut bvh = Bvh::default();
        bvh.build(0..300, &bounds);
        for k in 0..50 {
            let origin = Vec3::new(-5.0, k as f32 * 1.3 - 3.0, 2.0);
            let dir = Vec3::new(1.0, 0.05 * k as f32, -0.02).normalize();
            let inv = ray_recip(dir);
            let found = cast_all(
                |v| bvh.cast(origin, inv, 0.0, 100.0, &mut *v),
                &bounds,
                origin,
                inv,
            );
            let expected = linear_scan(&bounds, origin, inv);
            assert_eq!(found, expected, "ray {k}");
        }
    }

    /// Both forms, for tests that must hold for each: `(flat, name)`.
    const SHAPES: [(bool, &str); 2] = [(false, "tree"), (true, "flat")];

    #[test]
    fn temporal_boxes_span_both_bracketing_frames() {
        for (flat, shape) in SHAPES {
            temporal_boxes_span_both_bracketing_frames_in(TemporalBvh::shaped(flat), shape);
        }
    }

    fn temporal_boxes_span_both_bracketing_frames_in(mut bvh: TemporalBvh, shape: &str) {
        // Frame 0 at the grid, frame 1 shifted by 40 along x; a query spanning both must
        // find the boxes of either, one at a single frame only that frame's.
        let (f0, f1) = (boxes(200, 0.0), boxes(200, 40.0));
        bvh.build(2, 0..200, |i| f0[i as usize].center());
        bvh.refit_frame(Kernels::detect(), 0, None, |i| {
            NodeBox::from_aabb(f0[i as usize])
        });
        bvh.refit_frame(Kernels::detect(), 1, Some(0), |i| {
            NodeBox::from_aabb(f1[i as usize])
        });
        let union: Vec<Aabb> = f0.iter().zip(&f1).map(|(a, b)| a.union(b)).collect();
        for k in 0..40 {
            let origin = Vec3::new(-5.0, k as f32 * 1.7 - 3.0, 2.0);
            let dir = Vec3::new(1.0, 0.03 * k as f32, -0.02).normalize();
            let inv = ray_recip(dir);
            // Frame 0's span reaches frame 1; frame 1 (the newest) spans only itself.
            let span = |first, count| SpanRange { first, count };
            for (frames, bounds) in [
                (span(0, 1), &union),
                (span(1, 1), &f1),
                (span(0, 2), &union),
            ] {
                let found = cast_all(
                    |v| {
                        bvh.cast(
                            Kernels::detect(),
                            frames,
                            origin,
                            inv,
                            0.0,
                            100.0,
                            |_| {},
                            &mut *v,
                        )
                    },
                    bounds,
                    origin,
                    inv,
                );
                let expected = linear_scan(bounds, origin, inv);
                assert_eq!(found, expected, "{shape}: ray {k} frames {frames:?}");
            }
        }
        let query = Aabb::around_sphere(f1[7].center(), 0.1);
        let span = |first, count| SpanRange { first, count };
        let mut found = Vec::new();
        bvh.overlap(span(1, 1), &query, |i| {
            if f1[i as usize].intersects(&query) {
                found.push(i);
            }
        });
        assert_eq!(found, vec![7], "{shape}");
    }

    /// The median splits of [`Topology::build`] done the slow way, for the tests to compare
    /// with: `placed` holds (centroid, place in the input, item); each node's items are
    /// ordered by `order(slice, axis, mid)` on the longest axis of their centroids and cut
    /// at `split_at`. Returns the items in the tree's order.
    fn reference_splits(
        mut placed: Vec<(Vec3, usize, u32)>,
        order: impl Fn(&mut [(Vec3, usize, u32)], usize, usize),
    ) -> Vec<u32> {
        let mut pending = vec![(0, placed.len())];
        while let Some((start, end)) = pending.pop() {
            let slice = &mut placed[start..end];
            if slice.len() <= LEAF_SIZE {
                continue;
            }
            let (lo, hi) = slice
                .iter()
                .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), (c, ..)| {
                    (lo.min(*c), hi.max(*c))
                });
            let e = hi - lo;
            let axis = if e.x >= e.y && e.x >= e.z {
                0
            } else if e.y >= e.z {
                1
            } else {
                2
            };
            let mid = split_at(slice.len());
            order(slice, axis, mid);
            pending.push((start, start + mid));
            pending.push((start + mid, end));
        }
        placed.iter().map(|p| p.2).collect()
    }

    /// The median splits on `<` place every item where splits on `f32::total_cmp` (what
    /// the build used before) do, for centroids with distinct coordinates, including
    /// negative ones and clusters (the same tree, so queries walk the same nodes).
    #[test]
    fn median_splits_place_items_as_total_order_splits_do() {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x5e1ec7);
        for n in [2, 3, 9, 17, 64, 333, 1000] {
            let centroids: Vec<Vec3> = (0..n)
                .map(|i| {
                    let cluster = Vec3::splat((i % 3) as f32 * 40.0 - 40.0);
                    cluster
                        + Vec3::new(
                            rng.random_range(-30.0..30.0),
                            rng.random_range(-3.0..3.0),
                            rng.random_range(-30.0..30.0),
                        )
                })
                .collect();
            let mut topology = Topology::default();
            topology.build(0..n as u32, |i| centroids[i as usize]);
            // The reference: the same median splits, compared with `total_cmp`.
            let placed = (0..n as u32)
                .map(|i| (centroids[i as usize], 0, i))
                .collect();
            let expected = reference_splits(placed, |slice, axis, mid| {
                slice.select_nth_unstable_by(mid, |a, b| a.0[axis].total_cmp(&b.0[axis]));
            });
            assert_eq!(topology.items, expected, "{n} items");
        }
    }

    /// Ties, equal and non-finite centroids, and sizes around the split rounding: the
    /// presorted build splits each node where a sort of its items by (coordinate, place in
    /// the input) does, non-finite centroids at the origin, so that every build over the
    /// same input gives the same tree however its coordinates tie.
    #[test]
    fn median_splits_break_ties_by_input_order() {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x71e5);
        let mut cases: Vec<Vec<Vec3>> = Vec::new();
        // Every size around the rounding to fours (8, 9, 12, 16, 17, ...), coordinates on
        // a coarse grid so that most of them tie, with a few NaN and infinite centroids.
        for n in (1..=40).chain([63, 64, 65, 257]) {
            cases.push(
                (0..n)
                    .map(|_| match rng.random_range(0..12) {
                        0 => Vec3::new(f32::NAN, 1.0, 2.0),
                        1 => Vec3::new(3.0, f32::INFINITY, -1.0),
                        2 => Vec3::new(-0.0, 0.0, -0.0),
                        _ => Vec3::new(
                            rng.random_range(-3..=3) as f32,
                            rng.random_range(-1..=1) as f32,
                            rng.random_range(-3..=3) as f32,
                        ),
                    })
                    .collect(),
            );
        }
        // All centroids equal.
        cases.push(vec![Vec3::splat(5.0); 37]);
        for centroids in &cases {
            let n = centroids.len();
            // Items given in a shuffled order, so that the place differs from the item.
            let mut input: Vec<u32> = (0..n as u32).collect();
            for k in (1..n).rev() {
                input.swap(k, rng.random_range(0..=k));
            }
            let mut topology = Topology::default();
            topology.build(input.iter().copied(), |i| centroids[i as usize]);
            let at = |i: u32| {
                let c = centroids[i as usize];
                if c.is_finite() { c } else { Vec3::ZERO }
            };
            let placed = input
                .iter()
                .enumerate()
                .map(|(place, &i)| (at(i), place, i))
                .collect();
            let expected = reference_splits(placed, |slice, axis, _| {
                slice.sort_by(|a, b| a.0[axis].total_cmp(&b.0[axis]).then(a.1.cmp(&b.1)));
            });
            assert_eq!(topology.items, expected, "{n} items: {centroids:?}");
            assert_eq!(topology.len(), 2 * n - 1, "{n} items");
        }
    }

    /// The boxes of `frames` consecutive frames, item `i` absent from frame `f` when
    /// `(i + f) % 7 == 0`.
    fn moving_frames(items: usize, frames: usize) -> Vec<Vec<NodeBox>> {
        (0..frames)
            .map(|f| {
                boxes(items, f as f32 * 0.7)
                    .into_iter()
                    .enumerate()
                    .map(|(i, b)| {
                        if (i + f).is_multiple_of(7) {
                            NodeBox::EMPTY
                        } else {
                            NodeBox::from_aabb(b)
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn frames_grown_tick_by_tick_match_frames_refitted_from_scratch() {
        for (flat, shape) in SHAPES {
            frames_grown_tick_by_tick_in(flat, shape);
        }
    }

    fn frames_grown_tick_by_tick_in(flat: bool, shape: &str) {
        // A ring of 5 frames, 12 frames recorded through it: leaf by leaf (clear, grow,
        // finish), against a rebuild that refits every frame in the ring from the items.
        let (items, ring, frames) = (37, 5, 12);
        let boxes_at = moving_frames(items, frames);
        let mut grown = TemporalBvh::shaped(flat);
        let _ = shape;
        grown.build(ring, 0..items as u32, |i| {
            boxes_at[0][i as usize].aabb().center()
        });
        for (f, frame_boxes) in boxes_at.iter().enumerate() {
            let slot = f % ring;
            grown.clear_frame(slot);
            for (i, b) in frame_boxes.iter().enumerate() {
                if *b != NodeBox::EMPTY {
                    grown.grow_leaf(slot, i, *b);
                }
            }
            grown.finish_frame(Kernels::detect(), slot, (f > 0).then(|| (f - 1) % ring));
            if f + 1 < ring {
                continue;
            }
            let mut scratch = TemporalBvh::shaped(flat);
            scratch.build(ring, 0..items as u32, |i| {
                boxes_at[0][i as usize].aabb().center()
            });
            for (g, frame_boxes) in boxes_at.iter().enumerate().take(f + 1).skip(f + 1 - ring) {
                let previous = (g > f + 1 - ring).then(|| (g - 1) % ring);
                scratch.refit_frame(Kernels::detect(), g % ring, previous, |i| {
                    frame_boxes[i as usize]
                });
            }
            assert_eq!(grown.is_flat(), flat, "{shape}");
            assert_eq!(grown.spans, scratch.spans, "{shape}: after frame {f}");
            // The rebuild's way: every frame's leaves item by item, then each frame's
            // internal nodes, oldest first.
            let mut rebuilt = TemporalBvh::shaped(flat);
            rebuilt.build(ring, 0..items as u32, |i| {
                boxes_at[0][i as usize].aabb().center()
            });
            let frame_at = |slot: usize| (f + 1 - ring..=f).find(|g| g % ring == slot);
            let box_at = |g: usize, i: usize| boxes_at[g][i];
            for i in 0..items {
                rebuilt.set_leaf_in_every_frame(
                    i,
                    (0..ring).map(|slot| frame_at(slot).map_or(NodeBox::EMPTY, |g| box_at(g, i))),
                );
            }
            for g in f + 1 - ring..=f {
                rebuilt.finish_frame(
                    Kernels::detect(),
                    g % ring,
                    (g > f + 1 - ring).then(|| (g - 1) % ring),
                );
            }
            assert_eq!(
                rebuilt.spans, scratch.spans,
                "{shape}: rebuilt after frame {f}"
            );
            if flat {
                // Each lane's span is its item's boxes in its frame and the next (the
                // newest frame: its own); lanes past the items are empty.
                let bits = grown.span_bits();
                let stride = grown.stride;
                assert_eq!(bits.len(), ring * stride);
                for g in f + 1 - ring..=f {
                    let next = (g + 1).min(f);
                    for lane in 0..stride {
                        let expected = grown.lane_item.get(lane).map_or(NodeBox::EMPTY, |&i| {
                            boxes_at[g][i as usize].union(&boxes_at[next][i as usize])
                        });
                        assert_eq!(
                            bits[(g % ring) * stride + lane],
                            expected.as_array().map(f32::to_bits),
                            "flat: frame {g} lane {lane}"
                        );
                    }
                }
                continue;
            }
            // And each child's span is the union of its items' boxes in its frame and the
            // next (the newest frame: its own boxes); unused children are empty.
            let n = grown.children.len();
            let mut seen = vec![false; items];
            for g in f + 1 - ring..=f {
                let next = (g + 1).min(f);
                for (node_index, links) in grown.children.iter().enumerate() {
                    for (lane, &link) in links.iter().enumerate() {
                        let mut under = Vec::new();
                        let mut stack = vec![link];
                        while let Some(x) = stack.pop() {
                            if x == NO_CHILD {
                                continue;
                            } else if x & ITEM != 0 {
                                under.push(x & !ITEM);
                            } else {
                                stack.extend_from_slice(&grown.children[x as usize]);
                            }
                        }
                        if node_index == 0 {
                            for &i in &under {
                                seen[i as usize] = true;
                            }
                        }
                        let expected = under.iter().fold(NodeBox::EMPTY, |acc, &i| {
                            acc.union(&boxes_at[g][i as usize])
                                .union(&boxes_at[next][i as usize])
                        });
                        let got = grown.spans[(g % ring) * n + node_index].lane(lane);
                        assert_eq!(got, expected, "frame {g} node {node_index} lane {lane}");
                    }
                }
            }
            // Every item hangs under the root exactly once.
            assert!(seen.iter().all(|&s| s), "after frame {f}");
        }
    }

    #[test]
    fn a_spawn_goes_beside_the_nearest_leaf_even_when_the_first_leaf_is_empty() {
        // 40 items in a row, 10 apart; in the frame of the spawn the first leaf the
        // insertion scans belongs to an item not recorded there (its box empty).
        let items = 40u32;
        let centre = |i: u32| Vec3::new(i as f32 * 10.0, 0.0, 0.0);
        let mut tree = TemporalBvh::shaped(false);
        tree.build(2, 0..items, centre);
        let first_scanned = tree.children[..tree.linked()]
            .iter()
            .flatten()
            .find(|&&link| link != NO_CHILD && link & ITEM != 0)
            .map(|&link| link & !ITEM)
            .expect("a tree of 40 items has leaves");
        for i in (0..items).filter(|&i| i != first_scanned) {
            let b = NodeBox::from_aabb(Aabb::around_sphere(centre(i), 0.5));
            tree.grow_leaf(0, i as usize, b);
        }
        tree.finish_frame(Kernels::detect(), 0, None);
        // The far end of the row from the empty leaf's item: a spawn just beside item `near`.
        let near = if first_scanned < items / 2 {
            items - 3
        } else {
            2
        };
        let at = centre(near) + Vec3::new(1.0, 0.0, 0.0);
        let spawn = NodeBox::from_aabb(Aabb::around_sphere(at, 0.5));
        assert!(tree.insert(items, at, 0, spawn));
        let spare = tree.linked() - 1;
        assert_eq!(
            tree.children[spare][..2],
            [ITEM | near, ITEM | items],
            "the spawn's sibling is the item nearest to it (the empty leaf was item {first_scanned})"
        );
    }

    #[test]
    fn a_rebuild_to_another_shape_leaves_no_stale_boxes() {
        // Each form into itself, and (chosen by size) a tree into the flat form and back.
        let big = FLAT_MAX_ITEMS + 40;
        for (shape, before, after, flat_after) in [
            (Shape::Tree, 17, 6, false),
            (Shape::Flat, 17, 6, true),
            (Shape::BySize, big, 6, true),
            (Shape::BySize, 9, big, false),
        ] {
            let bvh = TemporalBvh {
                shape,
                ..TemporalBvh::default()
            };
            rebuild_leaves_no_stale_boxes_in(bvh, before, after, flat_after);
        }
    }

    fn rebuild_leaves_no_stale_boxes_in(
        mut bvh: TemporalBvh,
        before: usize,
        after: usize,
        flat_after: bool,
    ) {
        // `before` items fill more (or other) lanes than `after` do; after the rebuild,
        // no walk may find a lane the new shape does not use.
        let ring = 3;
        let many = boxes(before, 0.0);
        bvh.build(ring, 0..before as u32, |i| many[i as usize].center());
        for f in 0..ring {
            bvh.refit_frame(Kernels::detect(), f, f.checked_sub(1), |i| {
                NodeBox::from_aabb(many[i as usize])
            });
        }
        let few = boxes(after, 0.5);
        bvh.build(ring, 0..after as u32, |i| few[i as usize].center());
        assert_eq!(bvh.is_flat(), flat_after, "{before} -> {after}");
        for (i, b) in few.iter().enumerate() {
            bvh.set_leaf_in_every_frame(i, std::iter::repeat(NodeBox::from_aabb(*b)));
        }
        for f in 0..ring {
            bvh.finish_frame(Kernels::detect(), f, f.checked_sub(1));
        }
        for k in 0..60 {
            let origin = Vec3::new(-5.0, k as f32 * 0.9 - 3.0, (k % 5) as f32);
            let inv = ray_recip(Vec3::new(1.0, 0.02 * k as f32, 0.01).normalize());
            for count in [1, 2] {
                let span = SpanRange { first: 0, count };
                let mut found = Vec::new();
                bvh.cast(
                    Kernels::detect(),
                    span,
                    origin,
                    inv,
                    0.1,
                    100.0,
                    |_| {},
                    |i, t| {
                        found.push(i);
                        t
                    },
                );
                assert!(
                    found.iter().all(|&i| (i as usize) < after),
                    "ray {k}: {found:?}"
                );
                found.sort_unstable();
                let expected: Vec<u32> = (0..after as u32)
                    .filter(|&i| {
                        few[i as usize]
                            .inflated(0.1)
                            .ray_interval(origin, inv, 100.0)
                            .is_some()
                    })
                    .collect();
                assert_eq!(found, expected, "{before} -> {after}: ray {k}");
            }
        }
    }

    #[test]
    fn every_visited_item_is_announced_before_its_visit() {
        for (flat, shape) in SHAPES {
            every_visited_item_is_announced_in(TemporalBvh::shaped(flat), shape);
        }
    }

    fn every_visited_item_is_announced_in(mut bvh: TemporalBvh, shape: &str) {
        // `ahead` is what a trace prefetches by: it must hear of each item before the
        // visit, for every span count and margin, and a shrinking reach may skip items
        // it announced but never visit one it did not.
        let ring = 2;
        let bounds = boxes(200, 0.0);
        bvh.build(ring, 0..200, |i| bounds[i as usize].center());
        for f in 0..ring {
            bvh.refit_frame(Kernels::detect(), f, f.checked_sub(1), |i| {
                NodeBox::from_aabb(bounds[i as usize])
            });
        }
        let mut visits = 0;
        for k in 0..80 {
            let origin = Vec3::new(-5.0, k as f32 * 0.4 - 3.0, (k % 7) as f32 * 0.5);
            let inv = ray_recip(Vec3::new(1.0, 0.03 * (k % 11) as f32, -0.02).normalize());
            for (count, margin, shrink) in [(1, 0.0, false), (1, 0.1, true), (2, 0.0, true)] {
                let span = SpanRange { first: 0, count };
                let announced = std::cell::RefCell::new(Vec::new());
                bvh.cast(
                    Kernels::detect(),
                    span,
                    origin,
                    inv,
                    margin,
                    100.0,
                    |i| announced.borrow_mut().push(i),
                    |i, t| {
                        assert!(
                            announced.borrow().contains(&i),
                            "{shape}: ray {k}: {i} unannounced"
                        );
                        visits += 1;
                        if shrink { t * 0.9 } else { t }
                    },
                );
            }
        }
        assert!(visits > 100, "{shape}: the rays visit items: {visits}");
    }

    /// `count` frames of random boxes for `items` items (an item absent from a frame now
    /// and then), recorded tick by tick into a ring of `ring` slots in the given form.
    fn random_history(
        rng: &mut rand_pcg::Pcg64Mcg,
        items: usize,
        ring: usize,
        count: usize,
        flat: bool,
    ) -> (TemporalBvh, Vec<Vec<NodeBox>>) {
        use rand::Rng as _;
        let side = (items as f32).sqrt() * 6.0;
        let mut at: Vec<Vec3> = (0..items)
            .map(|_| {
                Vec3::new(
                    rng.random_range(0.0..side),
                    rng.random_range(0.0..side),
                    0.0,
                )
            })
            .collect();
        let mut frames = Vec::new();
        for _ in 0..count {
            let boxes: Vec<NodeBox> = at
                .iter_mut()
                .map(|c| {
                    *c += Vec3::new(
                        rng.random_range(-0.3..0.3),
                        rng.random_range(-0.3..0.3),
                        0.0,
                    );
                    if rng.random_range(0..20) == 0 {
                        return NodeBox::EMPTY;
                    }
                    let half = Vec3::new(0.4, 0.4, 1.0) * rng.random_range(0.5..1.5);
                    NodeBox::from_aabb(Aabb::new(*c - half, *c + half))
                })
                .collect();
            frames.push(boxes);
        }
        let mut bvh = TemporalBvh::shaped(flat);
        bvh.build(ring, 0..items as u32, |i| at[i as usize]);
        for (f, boxes) in frames.iter().enumerate() {
            let slot = f % ring;
            bvh.clear_frame(slot);
            let mut leaves = bvh.frame_leaves(slot);
            for (i, b) in boxes.iter().enumerate() {
                if *b != NodeBox::EMPTY {
                    leaves.set(i, *b);
                }
            }
            bvh.finish_frame(Kernels::detect(), slot, (f > 0).then(|| (f - 1) % ring));
        }
        assert_eq!(bvh.is_flat(), flat);
        (bvh, frames)
    }

    #[test]
    fn flat_and_tree_forms_find_the_same_items_and_answers() {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(13);
        let (ring, recorded) = (4, 9);
        let mut visits = 0;
        for scene in 0..24 {
            let items = [1, 3, 8, 9, 31, 64, 100, 200, 256][scene % 9];
            let seed = rng.random::<u64>();
            let histories = [false, true].map(|flat| {
                let mut scene_rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
                random_history(&mut scene_rng, items, ring, recorded, flat)
            });
            let frames = &histories[0].1;
            let side = (items as f32).sqrt() * 6.0;
            for k in 0..60 {
                let origin = Vec3::new(
                    rng.random_range(-5.0..side + 5.0),
                    rng.random_range(-5.0..side + 5.0),
                    rng.random_range(-2.0..2.0),
                );
                let aim = Vec3::new(
                    rng.random_range(0.0..side),
                    rng.random_range(0.0..side),
                    0.0,
                );
                let dir = (aim - origin).normalize();
                let inv = ray_recip(dir);
                let margin = if k % 3 == 0 {
                    0.0
                } else {
                    rng.random_range(0.0..0.5)
                };
                let reach = rng.random_range(5.0..2.0 * side);
                // A range of the ring: frames `g0..g0 + count`, the last one's span reaching
                // the next recorded frame if there is one.
                let g0 = rng.random_range(recorded - ring..recorded);
                let count = rng.random_range(1..=(recorded - g0).min(3));
                let range = SpanRange {
                    first: g0 % ring,
                    count,
                };
                let last = (g0 + count).min(recorded - 1);
                let span_of =
                    |i: usize| (g0..=last).fold(NodeBox::EMPTY, |acc, g| acc.union(&frames[g][i]));
                let label = format!("scene {scene} ({items} items) ray {k}");
                // Every item passed, no shrinking: exactly the items whose span box
                // (grown by the margin) the ray passes within the reach.
                let expected: Vec<u32> = (0..items as u32)
                    .filter(|&i| {
                        let b = span_of(i as usize);
                        b != NodeBox::EMPTY
                            && b.ray_near(origin.into(), inv.into(), margin, reach)
                                .is_some()
                    })
                    .collect();
                let mut order = Vec::new();
                let passed = histories.each_ref().map(|(bvh, _)| {
                    let mut found = Vec::new();
                    bvh.cast(
                        Kernels::detect(),
                        range,
                        origin,
                        inv,
                        margin,
                        reach,
                        |_| {},
                        |i, t| {
                            found.push(i);
                            t
                        },
                    );
                    if bvh.is_flat() {
                        order.clone_from(&found);
                    }
                    found.sort_unstable();
                    found
                });
                assert_eq!(passed[0], expected, "tree: {label}");
                assert_eq!(passed[1], expected, "flat: {label}");
                visits += expected.len();
                // The flat form visits by entry distance.
                let entry = |i: u32| {
                    span_of(i as usize)
                        .ray_near(origin.into(), inv.into(), margin, reach)
                        .expect("a visited item's box is passed")
                };
                for pair in order.windows(2) {
                    assert!(
                        entry(pair[0]) <= entry(pair[1]),
                        "flat order: {label}: {order:?}"
                    );
                }
                // A closest-hit search that shrinks the reach (hit: entering the item's
                // own box in the range's first frame) ends with the same hit either way.
                let closest = histories.each_ref().map(|(bvh, _)| {
                    let mut best: Option<(f32, u32)> = None;
                    bvh.cast(
                        Kernels::detect(),
                        range,
                        origin,
                        inv,
                        margin,
                        reach,
                        |_| {},
                        |i, t| {
                            let own = frames[g0][i as usize];
                            // (An empty box's slab test passes at 0: it is no hit.)
                            let Some(d) = (own != NodeBox::EMPTY)
                                .then(|| own.ray_near(origin.into(), inv.into(), margin, t))
                                .flatten()
                            else {
                                return t;
                            };
                            if best.is_none_or(|b| (d, i) < b) {
                                best = Some((d, i));
                            }
                            d
                        },
                    );
                    best
                });
                assert_eq!(closest[0], closest[1], "closest: {label}");
                // Overlaps: the same items, exactly those whose span box meets the query.
                let centre = Vec3::new(
                    rng.random_range(0.0..side),
                    rng.random_range(0.0..side),
                    0.0,
                );
                let query = Aabb::around_sphere(centre, rng.random_range(0.1..4.0));
                let expected: Vec<u32> = (0..items as u32)
                    .filter(|&i| {
                        let b = span_of(i as usize);
                        b != NodeBox::EMPTY && b.aabb().intersects(&query)
                    })
                    .collect();
                for (bvh, _) in &histories {
                    let mut found = Vec::new();
                    bvh.overlap(range, &query, |i| found.push(i));
                    found.sort_unstable();
                    assert_eq!(found, expected, "overlap, flat {}: {label}", bvh.is_flat());
                }
            }
        }
        assert!(visits > 500, "the rays pass items: {visits}");
    }

    #[test]
    fn wide_nodes_use_their_four_children_and_every_item_once() {
        for items in [1_u32, 2, 3, 4, 5, 17, 64, 200, 1000] {
            let bounds = boxes(items as usize, 0.0);
            let mut bvh = TemporalBvh::shaped(false);
            bvh.build(3, 0..items, |i| bounds[i as usize].center());
            let mut count = vec![0; items as usize];
            let mut full = 0;
            let spares = &bvh.children[bvh.linked..];
            assert_eq!(spares.len(), spare_nodes(bvh.linked), "{items} items");
            assert!(spares.iter().all(|links| *links == [NO_CHILD; 4]));
            assert_eq!(bvh.parent_lane.len(), bvh.linked);
            for (node, links) in bvh.children[..bvh.linked].iter().enumerate() {
                let used = links.iter().filter(|&&l| l != NO_CHILD).count();
                assert!(used >= 1, "{items} items: node {node} is empty");
                full += usize::from(used == 4);
                for (lane, &link) in links.iter().enumerate() {
                    if link != NO_CHILD && link & ITEM != 0 {
                        count[(link & !ITEM) as usize] += 1;
                        assert_eq!(
                            bvh.leaf_of[(link & !ITEM) as usize],
                            node as u32 * 24 + lane as u32
                        );
                    } else if link != NO_CHILD {
                        assert!(link as usize > node, "children come after their parents");
                        assert_eq!(
                            bvh.parent_lane[link as usize],
                            ((node as u32) << 2) | lane as u32
                        );
                    }
                }
            }
            assert!(count.iter().all(|&c| c == 1), "{items} items: {count:?}");
            // Splits in fours keep nodes nearly full: about a third as many nodes as items
            // (the collapse of plain median splits made 85 nodes for 200 items).
            let bound = (items as usize).div_ceil(3) + items as usize / 12 + 1;
            assert!(bvh.linked <= bound, "{items} items: {} nodes", bvh.linked);
            // A power of four items fills every node (median splits halve them exactly).
            if items.is_power_of_two() && items.trailing_zeros() % 2 == 0 && items > 1 {
                assert_eq!(full, bvh.linked, "{items} items");
                assert_eq!(full as u32, (items - 1) / 3, "{items} items");
            }
        }
    }

    #[test]
    fn static_overlap_finds_moved_boxes_after_a_rebuild() {
        let mut bounds = boxes(40, 0.0);
        let mut bvh = Bvh::default();
        bvh.build(0..40, &bounds);
        bounds[7] = Aabb::around_sphere(Vec3::new(500.0, 500.0, 500.0), 1.0);
        bvh.build(0..40, &bounds);
        let mut found = Vec::new();
        let query = Aabb::around_sphere(Vec3::splat(500.0), 2.0);
        bvh.overlap(&query, |i| {
            if bounds[i as usize].intersects(&query) {
                found.push(i);
            }
        });
        assert_eq!(found, vec![7]);
    }
}
