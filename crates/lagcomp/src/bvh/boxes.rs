//! Node boxes and the ray tests on them: a box as six floats (the maximum negated), two
//! boxes tested at once by the binary walk, a wide node's four children plane by plane.

use super::*;

impl NodeBox {
    pub(crate) const EMPTY: Self = Self {
        min: [f32::INFINITY; 3],
        neg_max: [f32::INFINITY; 3],
    };

    #[cfg(test)]
    pub(super) fn aabb(&self) -> Aabb {
        Aabb::new(Vec3::from_array(self.min), -Vec3::from_array(self.neg_max))
    }

    #[inline]
    pub(super) fn union(&self, other: &Self) -> Self {
        let mut out = *self;
        out.grow(other);
        out
    }

    /// Grows this box to contain `other`.
    #[inline]
    pub(super) fn grow(&mut self, other: &Self) {
        min_into(self.as_floats_mut(), &other.as_floats());
    }

    /// The six floats, in place.
    #[inline]
    pub(super) fn as_array(&self) -> &[f32; 6] {
        // SAFETY: `NodeBox` is `repr(C)` with two `[f32; 3]` fields and no padding (24 bytes,
        // asserted above, alignment 4), so it is six initialised `f32`s in a row.
        unsafe { &*std::ptr::from_ref(self).cast::<[f32; 6]>() }
    }

    #[inline]
    pub(super) fn as_floats(&self) -> [f32; 6] {
        let [a, b, c] = self.min;
        let [d, e, f] = self.neg_max;
        [a, b, c, d, e, f]
    }

    #[inline]
    pub(super) fn as_floats_mut(&mut self) -> [&mut f32; 6] {
        let [a, b, c] = &mut self.min;
        let [d, e, f] = &mut self.neg_max;
        [a, b, c, d, e, f]
    }

    /// Where the ray enters this box grown by `margin`, if it passes through within
    /// `[0, t_max]`. `inv_dir` comes from [`crate::math::ray_recip`].
    #[inline]
    pub(super) fn ray_near(
        &self,
        origin: Vec3A,
        inv_dir: Vec3A,
        margin: f32,
        t_max: f32,
    ) -> Option<f32> {
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
    pub(super) fn from_aabb(aabb: Aabb) -> Self {
        Self {
            min: aabb.min.to_array(),
            neg_max: (-aabb.max).to_array(),
        }
    }
}

impl PairRay {
    #[inline]
    pub(super) fn new(origin: Vec3, inv_dir: Vec3, margin: f32) -> Self {
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
    pub(super) fn near(&self, node: &NodeBox, t_max: f32) -> Option<f32> {
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
pub(super) fn ray_near_pair(pair: &[NodeBox; 2], ray: &PairRay, t_max: f32) -> (u32, [f32; 2]) {
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
pub(super) fn pair_lanes(pair: &[NodeBox; 2]) -> [Vec4; 3] {
    let f: &[f32; 12] = floats(pair).try_into().expect("two boxes of six floats");
    simd::pair_lanes(f)
}

/// The union of sibling boxes `first` and `first + 1` (the same minimums as
/// [`NodeBox::union`], `b < a ? b : a` per float).
///
/// PERF: four floats and two floats at a time (`minps` on 16 and 8 bytes) instead of six
/// scalar minimums; every frame's refit runs this once per internal node.
#[inline]
pub(super) fn pair_union(boxes: &[NodeBox], first: usize) -> NodeBox {
    grown(&boxes[first], &boxes[first + 1])
}

/// `a` grown to contain `b`: per float `b < a ? b : a`, as [`NodeBox::grow`], on two
/// overlapping groups of four floats (floats 0..4 and 2..6; the middle two are computed
/// twice, identically).
#[inline]
pub(super) fn grown(a: &NodeBox, b: &NodeBox) -> NodeBox {
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
pub(super) fn children(boxes: &[NodeBox], first: usize) -> &[NodeBox; 2] {
    boxes[first..first + 2]
        .try_into()
        .expect("a node's children are adjacent")
}

pub(super) fn floats(boxes: &[NodeBox]) -> &[f32] {
    // SAFETY: `NodeBox` is `repr(C)` with two `[f32; 3]` fields and no padding (24 bytes,
    // asserted above), so a slice of them is a slice of `6 * len` initialised `f32`s with
    // the same alignment.
    unsafe { std::slice::from_raw_parts(boxes.as_ptr().cast::<f32>(), boxes.len() * 6) }
}

impl ChildBoxes {
    pub(super) const EMPTY: Self = Self {
        planes: [[[f32::INFINITY; 4]; 3]; 2],
    };

    #[inline(always)]
    pub(super) fn plane(&self, side: usize, axis: usize) -> Vec4 {
        Vec4::from_array(self.planes[side & 1][axis])
    }

    /// Child `lane`'s box.
    #[inline]
    pub(super) fn lane(&self, lane: usize) -> NodeBox {
        let [min, neg_max] = self.planes;
        NodeBox {
            min: [min[0][lane], min[1][lane], min[2][lane]],
            neg_max: [neg_max[0][lane], neg_max[1][lane], neg_max[2][lane]],
        }
    }

    /// Sets child `lane`'s box.
    #[inline]
    pub(super) fn set_lane(&mut self, lane: usize, b: &NodeBox) {
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
    pub(super) fn union(&self) -> NodeBox {
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
    pub(super) fn grow(&mut self, other: &Self) {
        min_into(
            self.planes.as_flattened_mut().as_flattened_mut(),
            other.planes.as_flattened().as_flattened(),
        );
    }
}

impl WideRay {
    #[inline]
    pub(super) fn new(origin: Vec3, inv_dir: Vec3, margin: f32) -> Self {
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
    pub(super) fn enter<const GROWN: bool>(&self, boxes: &ChildBoxes, t_max: f32) -> (u32, Vec4) {
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
pub(super) fn prefetch_child_boxes(boxes: *const ChildBoxes) {
    let at = boxes.cast::<u8>();
    crate::simd::prefetch_line(at);
    crate::simd::prefetch_line(at.wrapping_add(64));
    crate::simd::prefetch_line(at.wrapping_add(95));
}

/// Where a tree child's box starts among its frame's floats: its node's 24 floats
/// (`ChildBoxes`), then its lane in the first plane. `link` is `node << 2 | lane`.
#[inline]
pub(super) fn leaf_float(link: u32) -> u32 {
    (link >> 2) * 24 + (link & 3)
}

/// The node and lane of the tree child whose box starts at float `at`: the inverse of
/// [`leaf_float`].
#[inline]
pub(super) fn leaf_link(at: u32) -> (usize, usize) {
    (at as usize / 24, at as usize % 24)
}

pub(super) fn child_floats(boxes: &[ChildBoxes]) -> &[f32] {
    // SAFETY: `ChildBoxes` is `repr(C)` over 24 `f32`s, 96 bytes with no padding (asserted
    // above), so a slice of them is a slice of `24 * len` initialised `f32`s, suitably
    // aligned.
    unsafe { std::slice::from_raw_parts(boxes.as_ptr().cast::<f32>(), boxes.len() * 24) }
}

pub(super) fn child_floats_mut(boxes: &mut [ChildBoxes]) -> &mut [f32] {
    // SAFETY: as in `child_floats`; the borrow is unique.
    unsafe { std::slice::from_raw_parts_mut(boxes.as_mut_ptr().cast::<f32>(), boxes.len() * 24) }
}
