//! Walking a temporal tree for a query: nearest boxes first for a ray or sweep, every
//! overlapping leaf for a box; the flat form scanned whole.

use super::*;

impl TemporalBvh {
    /// The boxes of node `i`'s children over the range (the union of their spans: two or
    /// more frames apart only for tick-pair targets that skip frames).
    #[inline]
    pub(super) fn range_boxes(&self, range: SpanRange, i: usize) -> ChildBoxes {
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
    pub(super) fn cast_flat(
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
    pub(super) fn flat_frames(&self, range: SpanRange) -> flat::FlatFrames<'_> {
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
    pub(super) fn walk<B: std::borrow::Borrow<ChildBoxes>, const GROWN: bool>(
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
}
