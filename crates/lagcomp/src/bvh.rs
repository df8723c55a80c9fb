//! Bounding volume hierarchies: the broadphase of every query.
//!
//! What lives here: [`Topology`] (the tree's shape: which items under which node, built by
//! median splits on the longest centroid axis) and two ways of giving its nodes boxes:
//! - [`Bvh`]: one box per node, for static geometry that never moves.
//! - [`TemporalBvh`]: one box per node *per frame of the history ring*. Entities are
//!   refitted into the slot of each new frame; a query at a time between two frames tests
//!   each node with the union of its boxes in those two frames. That union bounds every
//!   pose interpolated between them, so culling is exact-at-the-target-time without any
//!   interpolation, and as tight as a BVH built over the present.
//!
//! Items are `u32` indices into the caller's own arrays.
//!
//! Why hand-written rather than parry3d's `Bvh`: the per-frame boxes over one shared
//! topology are the point (a rewound query must cull with the boxes of its own moment),
//! refitting allocates nothing, and the traversal lets the caller shrink the ray as it
//! finds closer hits.

use glam::{Vec3, Vec3A, Vec4, Vec4Swizzles};

use crate::math::{Aabb, slab_interval};

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

    #[inline]
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
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128, _mm_shuffle_ps};
        let f = floats(pair);
        // a = min0 neg0.x, b = neg0.yz min1.xy, c = min1.z neg1.
        let a: __m128 = Vec4::from_slice(&f[0..4]).into();
        let b: __m128 = Vec4::from_slice(&f[4..8]).into();
        let c: __m128 = Vec4::from_slice(&f[8..12]).into();
        // `_mm_shuffle_ps::<M>(p, q)` is `[p[M & 3], p[M >> 2 & 3], q[M >> 4 & 3], q[M >> 6]]`.
        // SAFETY: SSE is enabled on every x86_64 target (it is part of the baseline ABI);
        // the shuffles only move lanes between registers and touch no memory.
        unsafe {
            let x_min = _mm_shuffle_ps::<0b10_10_00_00>(a, b); // a0 a0 b2 b2
            let x_max = _mm_shuffle_ps::<0b01_01_11_11>(a, c); // a3 a3 c1 c1
            let y_min = _mm_shuffle_ps::<0b11_11_01_01>(a, b); // a1 a1 b3 b3
            let y_max = _mm_shuffle_ps::<0b10_10_00_00>(b, c); // b0 b0 c2 c2
            let z_min = _mm_shuffle_ps::<0b00_00_10_10>(a, c); // a2 a2 c0 c0
            let z_max = _mm_shuffle_ps::<0b11_11_01_01>(b, c); // b1 b1 c3 c3
            [
                _mm_shuffle_ps::<0b10_00_10_00>(x_min, x_max).into(),
                _mm_shuffle_ps::<0b10_00_10_00>(y_min, y_max).into(),
                _mm_shuffle_ps::<0b10_00_10_00>(z_min, z_max).into(),
            ]
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let [p, q] = pair;
        let lane = |k: usize| Vec4::new(p.min[k], q.min[k], p.neg_max[k], q.neg_max[k]);
        [lane(0), lane(1), lane(2)]
    }
}

/// `into[i] = min(into[i], from[i])`; `<` rather than `f32::min` because boxes hold no NaN
/// and the plain comparison compiles to one `minss`/`minps`.
#[inline]
fn min_into<'a>(into: impl IntoIterator<Item = &'a mut f32>, from: &[f32]) {
    for (a, &b) in into.into_iter().zip(from) {
        // An unconditional store, so that the loop vectorizes.
        *a = if b < *a { b } else { *a };
    }
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

/// Grows every box in `into` by the box at the same index in `from`.
#[inline]
fn grow_all(into: &mut [NodeBox], from: &[NodeBox]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        unsafe { grow_all_avx2(into, from) };
        return;
    }
    min_into(floats_mut(into), floats(from));
}

/// [`grow_all`] compiled for AVX2: the same minimums, 32 floats per loop turn.
///
/// PERF: widening a frame's spans is one of the two passes over the tree every tick
/// (callgrind, 64 entities: about 1,050 instructions with SSE, 730 with the compiler's
/// AVX2 loop over `min_into`, about 330 written out). `_mm256_min_ps(b, a)` is `b < a ?
/// b : a` per lane, exactly `min_into`'s choice, so the boxes are the same bits.
///
/// # Safety
/// The CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn grow_all_avx2(into: &mut [NodeBox], from: &[NodeBox]) {
    use std::arch::x86_64::{_mm256_loadu_ps, _mm256_min_ps, _mm256_storeu_ps};
    let (into, from) = (floats_mut(into), floats(from));
    let len = into.len().min(from.len());
    let (a, b) = (into.as_mut_ptr(), from.as_ptr());
    let mut i = 0;
    while i + 32 <= len {
        for k in (i..i + 32).step_by(8) {
            // SAFETY: `k + 8 <= len`, inside both slices.
            unsafe {
                let v = _mm256_min_ps(_mm256_loadu_ps(b.add(k)), _mm256_loadu_ps(a.add(k)));
                _mm256_storeu_ps(a.add(k), v);
            }
        }
        i += 32;
    }
    min_into(&mut into[i..len], &from[i..len]);
}

/// Writes each listed node's box (`(node, first child)`, children before parents) as the
/// union of its two children's: per float `b < a ? b : a`, as [`grown`], on two
/// overlapping groups of four floats stored straight into the node.
///
/// PERF: every frame's refit runs this once per internal node. Without bounds checks and
/// without assembling a `NodeBox` in between, about 10 instructions per node with AVX
/// encodings (which take unaligned memory operands) instead of 18-20.
///
/// # Safety
/// Every `node`, `first` and `first + 1` indexes `boxes`, and no node is its own child.
#[inline(always)]
unsafe fn refit_parents(parents: &[(u32, u32)], boxes: &mut [NodeBox]) {
    let floats = boxes.as_mut_ptr().cast::<f32>();
    for &(node, first) in parents {
        let (node, first) = (node as usize, first as usize);
        // SAFETY: the caller's contract puts the three boxes inside `boxes` (six floats
        // each, `repr(C)`, see `floats`), and the node's box overlaps neither child's.
        unsafe {
            let a = floats.add(6 * first);
            let b = a.add(6);
            let out = floats.add(6 * node);
            let head = Vec4::from_array(b.cast::<[f32; 4]>().read_unaligned())
                .min(Vec4::from_array(a.cast::<[f32; 4]>().read_unaligned()));
            let tail = Vec4::from_array(b.add(2).cast::<[f32; 4]>().read_unaligned()).min(
                Vec4::from_array(a.add(2).cast::<[f32; 4]>().read_unaligned()),
            );
            out.cast::<[f32; 4]>().write_unaligned(head.to_array());
            out.add(2)
                .cast::<[f32; 4]>()
                .write_unaligned(tail.to_array());
        }
    }
}

/// [`refit_parents`] compiled for AVX2 (same arithmetic, VEX encodings).
///
/// # Safety
/// The CPU supports AVX2, and as [`refit_parents`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn refit_parents_avx2(parents: &[(u32, u32)], boxes: &mut [NodeBox]) {
    // SAFETY: the caller's contract.
    unsafe { refit_parents(parents, boxes) }
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

fn floats_mut(boxes: &mut [NodeBox]) -> &mut [f32] {
    // SAFETY: as in `floats`; the borrow is unique.
    unsafe { std::slice::from_raw_parts_mut(boxes.as_mut_ptr().cast::<f32>(), boxes.len() * 6) }
}

/// The shape of a tree: built once from item centroids, shared by every set of boxes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Topology {
    nodes: Vec<Node>,
    items: Vec<u32>,
    /// Build work list, kept to reuse its allocation.
    pending: Vec<(u32, u32, u32)>,
    /// Build scratch: every item beside its centroid, kept to reuse its allocation.
    placed: Vec<Placed>,
    /// Every internal node and its first child, children before parents: the order a
    /// refit visits them in without stepping over the leaves.
    parents: Vec<(u32, u32)>,
}

/// An item and its centroid, side by side so that the median splits compare inline data.
#[derive(Debug, Clone, Copy)]
struct Placed {
    centroid: [f32; 3],
    item: u32,
}

impl Topology {
    /// Rebuilds over `items` placed at `centroid(item)` (asked once per item). Reuses the
    /// previous tree's memory, so rebuilding at a steady size allocates nothing.
    pub(crate) fn build(
        &mut self,
        items: impl IntoIterator<Item = u32>,
        centroid: impl Fn(u32) -> Vec3,
    ) {
        // PERF: the centroids are computed once and moved with their items. Asking for them
        // inside the comparisons (a few lookups through the history each) was most of the
        // cost of a rebuild: 164,000 instructions for 64 entities.
        self.placed.clear();
        self.placed.extend(items.into_iter().map(|item| Placed {
            centroid: centroid(item).to_array(),
            item,
        }));
        self.nodes.clear();
        self.items.clear();
        self.parents.clear();
        if self.placed.is_empty() {
            return;
        }
        self.nodes.push(Node::default());
        self.pending.clear();
        self.pending.push((0, 0, self.placed.len() as u32));
        while let Some((node, start, end)) = self.pending.pop() {
            let slice = &mut self.placed[start as usize..end as usize];
            if slice.len() <= LEAF_SIZE {
                self.nodes[node as usize] = Node {
                    first: start,
                    count: end - start,
                };
                continue;
            }
            let mut lo = Vec3::INFINITY;
            let mut hi = Vec3::NEG_INFINITY;
            for placed in slice.iter() {
                let c = Vec3::from_array(placed.centroid);
                lo = lo.min(c);
                hi = hi.max(c);
            }
            let extent = hi - lo;
            let axis = if extent.x >= extent.y && extent.x >= extent.z {
                0
            } else if extent.y >= extent.z {
                1
            } else {
                2
            };
            let mid = slice.len() / 2;
            slice.select_nth_unstable_by(mid, |a, b| a.centroid[axis].total_cmp(&b.centroid[axis]));
            let left = self.nodes.len() as u32;
            self.nodes.push(Node::default());
            self.nodes.push(Node::default());
            self.nodes[node as usize] = Node {
                first: left,
                count: 0,
            };
            let split = start + mid as u32;
            self.pending.push((left, start, split));
            self.pending.push((left + 1, split, end));
        }
        self.items
            .extend(self.placed.iter().map(|placed| placed.item));
        // Children are always pushed after their parent, so walking backwards visits every
        // child before its parent.
        self.parents.extend(
            self.nodes
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, node)| node.count == 0)
                .map(|(i, node)| (i as u32, node.first)),
        );
    }

    /// Number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Writes every internal node's box into `boxes` from its children's, keeping the
    /// leaves' boxes as they are.
    ///
    /// # Panics
    /// If `boxes` does not hold one box per node.
    fn refit_internal(&self, boxes: &mut [NodeBox]) {
        assert_eq!(boxes.len(), self.nodes.len(), "one box per node");
        for &(node, first) in &self.parents {
            debug_assert!(node < first && first as usize + 1 < self.nodes.len());
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2; `parents` and `boxes` belong to this topology, one
            // box per node (asserted above).
            unsafe { refit_parents_avx2(&self.parents, boxes) };
            return;
        }
        // SAFETY: as above.
        unsafe { refit_parents(&self.parents, boxes) };
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
    #[inline]
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

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.items.capacity() * 4
            + self.pending.capacity() * std::mem::size_of::<(u32, u32, u32)>()
            + self.placed.capacity() * std::mem::size_of::<Placed>()
            + self.parents.capacity() * std::mem::size_of::<(u32, u32)>()
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
/// Two ways to fill frames: tick by tick, [`TemporalBvh::clear_frame`], one
/// [`TemporalBvh::grow_leaf`] per item recorded, and [`TemporalBvh::finish_frame`], which
/// never reads the items' records again; or, after a rebuild, one
/// [`TemporalBvh::set_leaf_in_every_frame`] per item (its boxes in every frame of the ring)
/// and then [`TemporalBvh::finish_frame`] for each frame, oldest first. (`refit_frame`, the
/// straightforward way, is kept as the tests' reference.)
///
/// Each frame's slot holds, per node, the box over that frame *and the next one* (a span):
/// a query between two adjacent frames, the common case, reads one box per node. The
/// newest frame's span is its own box until the next frame widens it.
#[derive(Debug, Clone, Default)]
pub(crate) struct TemporalBvh {
    topology: Topology,
    /// `frames * topology.len()` span boxes, frame-major.
    spans: Vec<NodeBox>,
    frames: usize,
    /// The leaf node holding each item (`u32::MAX`: not in the tree).
    leaf_of: Vec<u32>,
}

/// Which spans bound a query: `count` consecutive ring frames from `first` (1 for a target
/// between adjacent frames or on one frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpanRange {
    pub(crate) first: usize,
    pub(crate) count: usize,
}

impl TemporalBvh {
    /// Rebuilds the topology over `items` placed at `centroid(item)`, for a ring of
    /// `frames` frames. Every frame must then be refitted, oldest first.
    pub(crate) fn build(
        &mut self,
        frames: usize,
        items: impl IntoIterator<Item = u32>,
        centroid: impl Fn(u32) -> Vec3,
    ) {
        self.topology.build(items, centroid);
        self.frames = frames;
        // Not cleared: the caller refits every frame in the ring, and a ring slot without a
        // frame yet is cleared when its frame begins, before anything reads it.
        self.spans
            .resize(frames * self.topology.len(), NodeBox::EMPTY);
        self.leaf_of.fill(u32::MAX);
        for (node_index, node) in self.topology.nodes.iter().enumerate() {
            if node.count == 0 {
                continue;
            }
            for &item in self.topology.leaf_items(*node) {
                let item = item as usize;
                if item >= self.leaf_of.len() {
                    self.leaf_of.resize(item + 1, u32::MAX);
                }
                self.leaf_of[item] = node_index as u32;
            }
        }
    }

    /// Empties every box of ring frame `frame`, before its items are grown into it.
    pub(crate) fn clear_frame(&mut self, frame: usize) {
        let n = self.topology.len();
        if let Some(boxes) = self.spans.get_mut(frame * n..(frame + 1) * n) {
            boxes.fill(NodeBox::EMPTY);
        }
    }

    /// Grows the leaf of `item` in ring frame `frame` by `aabb` (nothing if the item is
    /// not in the tree yet: a rebuild will place it).
    #[inline]
    pub(crate) fn grow_leaf(&mut self, frame: usize, item: usize, node_box: NodeBox) {
        let Some(&leaf) = self.leaf_of.get(item) else {
            return;
        };
        if leaf != u32::MAX {
            let slot = &mut self.spans[frame * self.topology.len() + leaf as usize];
            *slot = grown(slot, &node_box);
        }
    }

    /// Ring frame `frame`'s boxes with the leaf of each item, for a recorder that fills the
    /// leaves of the whole frame in one loop (a leaf of `u32::MAX`, or an item past the
    /// end: not in the tree yet). Each item's leaf box must still be [`NodeBox::EMPTY`]
    /// (the frame was cleared, the item not recorded since), so setting it is the same as
    /// [`TemporalBvh::grow_leaf`].
    #[inline]
    pub(crate) fn frame_leaves(&mut self, frame: usize) -> (&[u32], &mut [NodeBox]) {
        let n = self.topology.len();
        (&self.leaf_of, &mut self.spans[frame * n..(frame + 1) * n])
    }

    /// Completes ring frame `frame` after its leaves were grown: refits its internal nodes
    /// and widens the previous frame's spans (ring slot `previous`) to reach it.
    pub(crate) fn finish_frame(&mut self, frame: usize, previous: Option<usize>) {
        let n = self.topology.len();
        self.topology
            .refit_internal(&mut self.spans[frame * n..(frame + 1) * n]);
        self.widen(frame, previous);
    }

    fn widen(&mut self, frame: usize, previous: Option<usize>) {
        let n = self.topology.len();
        if let Some(p) = previous {
            let (into, from) = if p < frame {
                let (head, tail) = self.spans.split_at_mut(frame * n);
                (&mut head[p * n..(p + 1) * n], &tail[..n])
            } else {
                let (head, tail) = self.spans.split_at_mut(p * n);
                (&mut tail[..n], &head[frame * n..(frame + 1) * n])
            };
            grow_all(into, from);
        }
    }

    /// Sets the leaf box of `item` in every ring frame: `set_box(frame, leaf_box)` writes
    /// the box of ring frame `frame` (after a [`TemporalBvh::build`]; then
    /// [`TemporalBvh::finish_frame`] each frame, oldest first). Nothing if the item is not
    /// in the tree.
    #[inline]
    pub(crate) fn set_leaf_in_every_frame(
        &mut self,
        item: usize,
        mut set_box: impl FnMut(usize, &mut NodeBox),
    ) {
        let Some(&leaf) = self.leaf_of.get(item) else {
            return;
        };
        if leaf == u32::MAX {
            return;
        }
        let n = self.topology.len();
        // PERF: a plain index stepping by one frame; the iterator chain it replaces (skip,
        // step_by, take, enumerate) cost about 20 instructions per box, and a rebuild sets
        // one per entity per frame.
        // The box is written in place (a closure returning it kept a copy on the stack).
        let mut at = leaf as usize;
        for frame in 0..self.frames {
            set_box(frame, &mut self.spans[at]);
            at += n;
        }
    }

    /// Refits ring frame `frame` from the items' boxes in it (`item_box` returns
    /// [`NodeBox::EMPTY`] for an item absent from it), and widens the previous frame's spans
    /// (ring slot `previous`) to reach it. The tests' reference for the other two ways.
    #[cfg(test)]
    pub(crate) fn refit_frame(
        &mut self,
        frame: usize,
        previous: Option<usize>,
        item_box: impl Fn(u32) -> NodeBox,
    ) {
        let n = self.topology.len();
        let boxes = &mut self.spans[frame * n..(frame + 1) * n];
        for &item in &self.topology.items {
            // One item per leaf: its box is the leaf's.
            boxes[self.leaf_of[item as usize] as usize] = item_box(item);
        }
        self.topology.refit_internal(boxes);
        self.widen(frame, previous);
    }

    /// The box of node `i` over the range (the union of its spans: two or more frames
    /// apart only for tick-pair targets that skip frames).
    #[inline]
    fn node_box(&self, range: SpanRange, i: usize) -> NodeBox {
        let n = self.topology.len();
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

    /// [`Topology::cast`] with the node boxes of `range`.
    #[inline]
    pub(crate) fn cast(
        &self,
        range: SpanRange,
        origin: Vec3,
        inv_dir: Vec3,
        margin: f32,
        t_max: f32,
        visit: impl FnMut(u32, f32) -> f32,
    ) {
        let ray = PairRay::new(origin, inv_dir, margin);
        let n = self.topology.len();
        if range.count == 1 {
            let spans = &self.spans[range.first * n..(range.first + 1) * n];
            self.topology.cast(
                |t_max| ray.near(&spans[0], t_max),
                |first, t_max| ray_near_pair(children(spans, first), &ray, t_max),
                t_max,
                visit,
            );
        } else {
            self.topology.cast(
                |t_max| ray.near(&self.node_box(range, 0), t_max),
                |first, t_max| {
                    let pair = [self.node_box(range, first), self.node_box(range, first + 1)];
                    ray_near_pair(&pair, &ray, t_max)
                },
                t_max,
                visit,
            );
        }
    }

    /// [`Topology::overlap`] with the node boxes of `range`.
    #[inline]
    pub(crate) fn overlap(&self, range: SpanRange, query: &Aabb, visit: impl FnMut(u32)) {
        self.topology
            .overlap(|i| self.node_box(range, i).aabb(), query, visit);
    }

    /// Every span box, frame-major, as bits (for tests that compare two trees).
    #[cfg(test)]
    pub(crate) fn span_bits(&self) -> Vec<[u32; 6]> {
        self.spans
            .iter()
            .map(|b| b.as_array().map(f32::to_bits))
            .collect()
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.topology.heap_bytes()
            + self.spans.capacity() * std::mem::size_of::<NodeBox>()
            + self.leaf_of.capacity() * 4
    }
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

    #[test]
    fn temporal_boxes_span_both_bracketing_frames() {
        // Frame 0 at the grid, frame 1 shifted by 40 along x; a query spanning both must
        // find the boxes of either, one at a single frame only that frame's.
        let (f0, f1) = (boxes(200, 0.0), boxes(200, 40.0));
        let mut bvh = TemporalBvh::default();
        bvh.build(2, 0..200, |i| f0[i as usize].center());
        bvh.refit_frame(0, None, |i| NodeBox::from_aabb(f0[i as usize]));
        bvh.refit_frame(1, Some(0), |i| NodeBox::from_aabb(f1[i as usize]));
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
                    |v| bvh.cast(frames, origin, inv, 0.0, 100.0, &mut *v),
                    bounds,
                    origin,
                    inv,
                );
                let expected = linear_scan(bounds, origin, inv);
                assert_eq!(found, expected, "ray {k} frames {frames:?}");
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
        assert_eq!(found, vec![7]);
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
        // A ring of 5 frames, 12 frames recorded through it: leaf by leaf (clear, grow,
        // finish), against a rebuild that refits every frame in the ring from the items.
        let (items, ring, frames) = (37, 5, 12);
        let boxes_at = moving_frames(items, frames);
        let mut grown = TemporalBvh::default();
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
            grown.finish_frame(slot, (f > 0).then(|| (f - 1) % ring));
            if f + 1 < ring {
                continue;
            }
            let mut scratch = TemporalBvh::default();
            scratch.build(ring, 0..items as u32, |i| {
                boxes_at[0][i as usize].aabb().center()
            });
            for (g, frame_boxes) in boxes_at.iter().enumerate().take(f + 1).skip(f + 1 - ring) {
                let previous = (g > f + 1 - ring).then(|| (g - 1) % ring);
                scratch.refit_frame(g % ring, previous, |i| frame_boxes[i as usize]);
            }
            assert_eq!(grown.spans, scratch.spans, "after frame {f}");
            // The rebuild's way: every frame's leaves item by item, then each frame's
            // internal nodes, oldest first.
            let mut rebuilt = TemporalBvh::default();
            rebuilt.build(ring, 0..items as u32, |i| {
                boxes_at[0][i as usize].aabb().center()
            });
            let frame_at = |slot: usize| (f + 1 - ring..=f).find(|g| g % ring == slot);
            let box_at = |g: usize, i: usize| boxes_at[g][i];
            for i in 0..items {
                rebuilt.set_leaf_in_every_frame(i, |slot, leaf_box| {
                    *leaf_box = frame_at(slot).map_or(NodeBox::EMPTY, |g| box_at(g, i));
                });
            }
            for g in f + 1 - ring..=f {
                rebuilt.finish_frame(g % ring, (g > f + 1 - ring).then(|| (g - 1) % ring));
            }
            assert_eq!(rebuilt.spans, scratch.spans, "rebuilt after frame {f}");
            // And each node's span is the union of its items' boxes in its frame and the
            // next (the newest frame: its own boxes).
            let n = grown.topology.len();
            for g in f + 1 - ring..=f {
                let next = (g + 1).min(f);
                for (node_index, node) in grown.topology.nodes.iter().enumerate() {
                    let mut under = Vec::new();
                    let mut stack = vec![*node];
                    while let Some(x) = stack.pop() {
                        if x.count > 0 {
                            under.extend_from_slice(grown.topology.leaf_items(x));
                        } else {
                            stack.push(grown.topology.nodes[x.first as usize]);
                            stack.push(grown.topology.nodes[x.first as usize + 1]);
                        }
                    }
                    let expected = under.iter().fold(NodeBox::EMPTY, |acc, &i| {
                        acc.union(&boxes_at[g][i as usize])
                            .union(&boxes_at[next][i as usize])
                    });
                    let got = grown.spans[(g % ring) * n + node_index];
                    assert_eq!(got, expected, "frame {g} node {node_index}");
                }
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
