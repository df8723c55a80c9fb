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

mod boxes;
pub(crate) mod flat;
mod refit;
mod temporal;
#[cfg(test)]
mod tests;
mod topology;
mod traverse;

use boxes::*;
use temporal::*;
use topology::*;

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

/// A node's lists flag for a node of two items whose places are only in the list of one
/// axis (bits 4-5) of one side (bit 6).
const PAIR: u32 = 1 << 3;

/// A tree with one box per node: static geometry.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bvh {
    topology: Topology,
    boxes: Vec<NodeBox>,
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

/// Which spans bound a query: `count` consecutive ring frames from `first` (1 for a target
/// between adjacent frames or on one frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpanRange {
    pub(crate) first: usize,
    pub(crate) count: usize,
}
