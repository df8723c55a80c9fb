//! The trace's bone-level cull: which bones of a rewound entity a line may hit, four (or,
//! on the kernels' eight lanes, eight) bones at a time, before any bone is interpolated.

use glam::{Vec3, Vec4};

use super::StoredTranslation;
use super::sample::EntityView;
use crate::simd::{self, Isa, KernelBody, Kernels};

impl EntityView<'_> {
    /// The bone-level cull for bones `first..first + 64` (those that exist; `first` a
    /// multiple of 64): bit `k` is set when bone `first + k` carries a hitbox (`carrying`,
    /// one bit per bone in bytes of four groups, as [`crate::rig::Rig`] keeps it) and the
    /// trace's line passes within `reach[bone]` plus the trace's radius of its origin, no
    /// further than `t_max` along. Unscaled entities only.
    ///
    /// PERF: the trace's per-bone cull, four bones per instruction (eight with AVX2, which
    /// [`LineLanes`] detects once per trace). It computes, lane by lane, exactly the
    /// arithmetic of [`EntityView::bone_origin`] and the scalar cull (the same operations
    /// in the same order, no fused multiply-add), and a bone's reach is the largest of its
    /// hitboxes', so every hitbox that passes the scalar test has its bit set: a pure
    /// prefilter that cannot change an answer, and the same mask from either kernel.
    /// Whether the entity is blended is decided once for all its groups, and the groups'
    /// results are gathered before any is used: the branches per group were mispredicted
    /// often enough to matter.
    #[inline(always)]
    pub(crate) fn cull_bones(
        &self,
        first: usize,
        carrying: &[u8],
        reach: &[f32],
        line: &LineLanes,
        t_max: f32,
    ) -> u64 {
        let eight = CullBones8 {
            view: self,
            first,
            carrying,
            reach,
            line,
            t_max,
        };
        if let Some(mask) = line.kernels.run_eight_lanes(eight) {
            return mask;
        }
        self.cull_bones_sse(first, carrying, reach, line, t_max)
    }

    /// [`EntityView::cull_bones`] four bones at a time.
    ///
    /// PERF: out of line: inlined into the entity loop the same code measured 3,694
    /// instructions per shot at 64x16 against 3,479, from spills around it.
    #[inline(never)]
    pub(super) fn cull_bones_sse(
        &self,
        first: usize,
        carrying: &[u8],
        reach: &[f32],
        line: &LineLanes,
        t_max: f32,
    ) -> u64 {
        debug_assert!(!self.has_scale() && first.is_multiple_of(64));
        let end = (first + 64).min(self.a.0.len());
        if self.single {
            self.cull_range::<true>(first, end, carrying, reach, line, t_max)
        } else {
            self.cull_range::<false>(first, end, carrying, reach, line, t_max)
        }
    }

    /// [`EntityView::cull_range`] with whole groups of eight on the kernels' eight lanes;
    /// the last bones that do not fill eight lanes go through the four-lane groups.
    #[inline(always)]
    #[expect(
        clippy::too_many_arguments,
        reason = "the kernels and the arguments of `cull_range`"
    )]
    fn cull_range8<K: Isa, const SINGLE: bool>(
        &self,
        isa: K,
        first: usize,
        end: usize,
        carrying: &[u8],
        reach: &[f32],
        line: &LineLanes,
        t_max: f32,
    ) -> u64 {
        let (ta, tb) = (&self.a.0[first..end], &self.b.0[first..end]);
        let reach_of = &reach[first..end];
        let carried_of = &carrying[first / 4..];
        let wide = isa.line8(line, t_max, self.alpha);
        let mut mask = 0_u64;
        let (ta8, _) = ta.as_chunks::<8>();
        let (tb8, _) = tb.as_chunks::<8>();
        let (reach8, _) = reach_of.as_chunks::<8>();
        let (carried8, _) = carried_of.as_chunks::<2>();
        let groups = ta8.iter().zip(tb8).zip(reach8).zip(carried8);
        for (g, (((ta, tb), reach), &[c0, c1])) in groups.enumerate() {
            let carried = u32::from(c0) | u32::from(c1) << 4;
            if carried != 0 {
                let kept = isa.cull8::<SINGLE>(ta, tb, reach, &wide);
                mask |= u64::from(kept & carried) << (8 * g);
            }
        }
        // The rest (fewer than eight bones) on four lanes: the same arithmetic per lane.
        let whole = (end - first) / 8 * 8;
        if whole < end - first {
            mask |= self.cull_range::<SINGLE>(first + whole, end, carrying, reach, line, t_max)
                << whole;
        }
        mask
    }

    #[inline(always)]
    fn cull_range<const SINGLE: bool>(
        &self,
        first: usize,
        end: usize,
        carrying: &[u8],
        reach: &[f32],
        line: &LineLanes,
        t_max: f32,
    ) -> u64 {
        // PERF: whole groups of four walk exact chunks, and the last partial group (if any)
        // is padded apart. A group that may run past the end on the same path made the
        // compiler select every lane's address separately and load scalars (21 loads and
        // shuffles per frame instead of 10).
        let (ta, tb) = (&self.a.0[first..end], &self.b.0[first..end]);
        let reach = &reach[first..end];
        let carrying = &carrying[first / 4..];
        let mut mask = 0_u64;
        let (ta4, _) = ta.as_chunks::<4>();
        let (tb4, _) = tb.as_chunks::<4>();
        let (reach4, _) = reach.as_chunks::<4>();
        let groups = ta4.iter().zip(tb4).zip(reach4).zip(carrying);
        for (g, (((ta, tb), reach), &carried)) in groups.enumerate() {
            if carried != 0 {
                let kept = self.cull_group::<SINGLE>(ta, tb, reach, line, t_max);
                mask |= u64::from(kept & u32::from(carried)) << (4 * g);
            }
        }
        let whole = (end - first) / 4 * 4;
        if whole < end - first {
            let carried = carrying[whole / 4];
            if carried != 0 {
                let ta = group_of_four(ta, whole);
                let tb = group_of_four(tb, whole);
                let reach = group_of_four(reach, whole);
                let kept = self.cull_group::<SINGLE>(&ta, &tb, &reach, line, t_max);
                mask |= u64::from(kept & u32::from(carried)) << whole;
            }
        }
        mask
    }

    /// [`EntityView::cull_bones`] for one group of four bones: their translations in the
    /// two frames and their reaches.
    #[inline(always)]
    fn cull_group<const SINGLE: bool>(
        &self,
        ta: &[StoredTranslation; 4],
        tb: &[StoredTranslation; 4],
        reach: &[f32; 4],
        line: &LineLanes,
        t_max: f32,
    ) -> u32 {
        cull4::<SINGLE>(ta, tb, reach, line, t_max, self.alpha)
    }
}

/// [`EntityView::cull_bones`] for four bones (translations in the two frames, blended by
/// `alpha` unless `SINGLE`, and their reaches) on four lanes: the scalar cull's arithmetic,
/// lane by lane. Also the portable kernels' eight-lane cull, as two of these.
#[inline(always)]
pub(crate) fn cull4<const SINGLE: bool>(
    ta: &[StoredTranslation; 4],
    tb: &[StoredTranslation; 4],
    reach: &[f32; 4],
    line: &LineLanes,
    t_max: f32,
    alpha: f32,
) -> u32 {
    let [px, py, pz] = if SINGLE {
        transpose(load_rows(ta))
    } else {
        // `math::lerp`, element by element, before the transpose (which only moves
        // elements): the same numbers as lerping lanes, for one transpose instead of two.
        let (wa, wb) = (Vec4::splat(1.0 - alpha), Vec4::splat(alpha));
        let ([a0, a1, a2], [b0, b1, b2]) = (load_rows(ta), load_rows(tb));
        transpose([a0 * wa + b0 * wb, a1 * wa + b1 * wb, a2 * wa + b2 * wb])
    };
    let (to_x, to_y, to_z) = (px - line.ox, py - line.oy, pz - line.oz);
    let (dx, dy, dz) = (line.dx, line.dy, line.dz);
    let along = to_x * dx + to_y * dy + to_z * dz;
    let (px, py, pz) = (to_x - dx * along, to_y - dy * along, to_z - dz * along);
    let off_line = px * px + py * py + pz * pz;
    let reach = Vec4::from_array(*reach) + line.radius;
    let keep = along.cmpge(-reach)
        & (along - reach).cmple(Vec4::splat(t_max))
        & off_line.cmple(reach * reach);
    // Lanes past the last bone repeat it; `carrying` has no bits there.
    keep.bitmask()
}

/// [`EntityView::cull_bones`] on the kernels' eight lanes (`Kernels::run_eight_lanes`).
struct CullBones8<'v, 'a, 'l> {
    view: &'v EntityView<'a>,
    first: usize,
    carrying: &'l [u8],
    reach: &'l [f32],
    line: &'l LineLanes,
    t_max: f32,
}

impl KernelBody for CullBones8<'_, '_, '_> {
    type Output = u64;

    #[inline(always)]
    fn run<K: Isa>(self, isa: K) -> u64 {
        let Self {
            view,
            first,
            carrying,
            reach,
            line,
            t_max,
        } = self;
        debug_assert!(!view.has_scale() && first.is_multiple_of(64));
        let end = (first + 64).min(view.a.0.len());
        if view.single {
            view.cull_range8::<K, true>(isa, first, end, carrying, reach, line, t_max)
        } else {
            view.cull_range8::<K, false>(isa, first, end, carrying, reach, line, t_max)
        }
    }
}

/// A trace's line with every component on four lanes, splatted once per trace for
/// [`EntityView::cull_bones`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineLanes {
    pub(crate) ox: Vec4,
    pub(crate) oy: Vec4,
    pub(crate) oz: Vec4,
    pub(crate) dx: Vec4,
    pub(crate) dy: Vec4,
    pub(crate) dz: Vec4,
    pub(crate) radius: Vec4,
    /// The history's kernels (where they have eight lanes, the bone cull runs eight bones
    /// per step).
    kernels: Kernels,
}

impl LineLanes {
    /// The line from `origin` along unit `dir`, grown by `radius`, culled with `kernels`
    /// ([`History::kernels`](super::History::kernels)).
    #[inline]
    pub(crate) fn new(origin: Vec3, dir: Vec3, radius: f32, kernels: Kernels) -> Self {
        Self {
            kernels,
            ox: Vec4::splat(origin.x),
            oy: Vec4::splat(origin.y),
            oz: Vec4::splat(origin.z),
            dx: Vec4::splat(dir.x),
            dy: Vec4::splat(dir.y),
            dz: Vec4::splat(dir.z),
            radius: Vec4::splat(radius),
        }
    }
}

/// The x, y and z coordinates of bones `first..first + 4` on four lanes each (the last
/// bone repeated where the slice runs out; the caller masks those lanes off).
#[cfg(test)]
pub(super) fn lanes_of_four(rows: &[StoredTranslation], first: usize) -> [Vec4; 3] {
    match rows.get(first..first + 4) {
        Some(four) => transpose(load_rows(four.try_into().expect("four rows"))),
        None => transpose(load_rows(&group_of_four(rows, first))),
    }
}

/// Four points' twelve coordinates on three vectors, as stored:
/// `[x0 y0 z0 x1, y1 z1 x2 y2, z2 x3 y3 z3]`.
#[inline(always)]
fn load_rows(rows: &[StoredTranslation; 4]) -> [Vec4; 3] {
    let f: &[f32; 12] = rows.as_flattened().try_into().expect("four rows of three");
    simd::load_rows(f)
}

/// Four points, from rows (as [`load_rows`] gives them) to lanes: `[xs, ys, zs]`.
#[inline(always)]
fn transpose(rows: [Vec4; 3]) -> [Vec4; 3] {
    simd::transpose(rows)
}

/// `rows[first..first + 4]`, the last row repeated where the slice runs out (the caller masks
/// those lanes off). `first` must be in bounds.
#[inline]
fn group_of_four<T: Copy>(rows: &[T], first: usize) -> [T; 4] {
    match rows.get(first..first + 4) {
        Some(&[a, b, c, d]) => [a, b, c, d],
        _ => {
            let last = rows.len() - 1;
            std::array::from_fn(|k| rows[(first + k).min(last)])
        }
    }
}
