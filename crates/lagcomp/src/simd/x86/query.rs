//! The query's x86_64 kernels: the box helpers of the entity tree and its refit (SSE2),
//! the flat form's eight-lane scan and the trace's eight-lane bone cull (AVX2).

use std::arch::x86_64::{
    __m128, __m256, _CMP_GE_OQ, _CMP_LE_OQ, _mm_loadu_ps, _mm_min_ps, _mm_movehl_ps, _mm_movelh_ps,
    _mm_shuffle_ps, _mm_storeu_ps, _mm_unpackhi_ps, _mm_unpacklo_ps, _mm256_add_ps, _mm256_and_ps,
    _mm256_broadcastss_ps, _mm256_cmp_ps, _mm256_loadu_ps, _mm256_loadu2_m128, _mm256_max_ps,
    _mm256_min_ps, _mm256_movemask_ps, _mm256_mul_ps, _mm256_set1_ps, _mm256_setzero_ps,
    _mm256_shuffle_ps, _mm256_storeu_ps, _mm256_sub_ps, _mm256_xor_ps,
};
use std::mem::MaybeUninit;

use glam::Vec4;

use super::super::portable::min_into;
use crate::bvh::flat::{BLOCK_FLOATS, FLAT_LANE_STEP, FlatFrames, FlatRay, Survivors, key};
use crate::history::{LineLanes, StoredTranslation};

/// [`crate::simd::pair_lanes`] with seven shuffles.
#[inline(always)]
pub(in crate::simd) fn pair_lanes(f: &[f32; 12]) -> [Vec4; 3] {
    // a = min0 neg0.x, b = neg0.yz min1.xy, c = min1.z neg1.
    let a: __m128 = Vec4::from_slice(&f[0..4]).into();
    let b: __m128 = Vec4::from_slice(&f[4..8]).into();
    let c: __m128 = Vec4::from_slice(&f[8..12]).into();
    // `_mm_shuffle_ps::<M>(p, q)` is `[p[M & 3], p[M >> 2 & 3], q[M >> 4 & 3], q[M >> 6]]`.
    // SAFETY: SSE is enabled on every x86_64 target (it is part of the baseline ABI); the
    // shuffles only move lanes between registers and touch no memory.
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

/// [`crate::simd::lane_minimums`]: the planes reduced four (then two) at a time by
/// interleaving them (`unpcklps`/`unpckhps`), so that three packed minimums give four
/// planes' minimums.
#[inline(always)]
pub(in crate::simd) fn lane_minimums(planes: [Vec4; 6]) -> [f32; 6] {
    let p = |k: usize| -> __m128 { planes[k].into() };
    // SAFETY: SSE is enabled on every x86_64 target (it is part of the baseline ABI);
    // these only move lanes between registers and take minimums.
    let (xy, z) = unsafe {
        let (a, b, c, d) = (p(0), p(1), p(3), p(4));
        // a0 b0 a1 b1 and a2 b2 a3 b3: pairwise, then the halves.
        let ab = _mm_min_ps(_mm_unpacklo_ps(a, b), _mm_unpackhi_ps(a, b));
        let cd = _mm_min_ps(_mm_unpacklo_ps(c, d), _mm_unpackhi_ps(c, d));
        let xy = _mm_min_ps(_mm_movelh_ps(ab, cd), _mm_movehl_ps(cd, ab));
        let (e, f) = (p(2), p(5));
        let ef = _mm_min_ps(_mm_unpacklo_ps(e, f), _mm_unpackhi_ps(e, f));
        (
            Vec4::from(xy),
            Vec4::from(_mm_min_ps(ef, _mm_movehl_ps(ef, ef))),
        )
    };
    [xy.x, xy.y, z.x, xy.z, xy.w, z.y]
}

/// [`crate::simd::load_rows`] as three unaligned loads.
///
/// PERF: vector loads spelled out: built from slices, the compiler folded the transpose's
/// shuffles into twelve scalar loads and nine inserts.
#[inline(always)]
pub(in crate::simd) fn load_rows(f: &[f32; 12]) -> [Vec4; 3] {
    // SAFETY: SSE is enabled on every x86_64 target (it is part of the baseline ABI); the
    // unaligned loads read `f[0..4]`, `f[4..8]` and `f[8..12]` of a 12-float array.
    unsafe {
        [
            _mm_loadu_ps(f.as_ptr()).into(),
            _mm_loadu_ps(f.as_ptr().add(4)).into(),
            _mm_loadu_ps(f.as_ptr().add(8)).into(),
        ]
    }
}

/// [`crate::simd::transpose`] in seven shuffles instead of twelve scalar loads and nine
/// inserts.
#[inline(always)]
pub(in crate::simd) fn transpose([r0, r1, r2]: [Vec4; 3]) -> [Vec4; 3] {
    let (r0, r1, r2): (__m128, __m128, __m128) = (r0.into(), r1.into(), r2.into());
    // `_mm_shuffle_ps::<M>(a, b)` is `[a[M & 3], a[M >> 2 & 3], b[M >> 4 & 3], b[M >> 6]]`.
    // SAFETY: SSE is enabled on every x86_64 target (it is part of the baseline ABI); the
    // shuffles only move lanes between registers and touch no memory.
    unsafe {
        let x23 = _mm_shuffle_ps::<0b01_01_10_10>(r1, r2); // x2 x2 x3 x3
        let xs = _mm_shuffle_ps::<0b10_00_11_00>(r0, x23); // x0 x1 x2 x3
        let y01 = _mm_shuffle_ps::<0b00_00_01_01>(r0, r1); // y0 y0 y1 y1
        let y23 = _mm_shuffle_ps::<0b10_10_11_11>(r1, r2); // y2 y2 y3 y3
        let ys = _mm_shuffle_ps::<0b10_00_10_00>(y01, y23); // y0 y1 y2 y3
        let z01 = _mm_shuffle_ps::<0b01_01_10_10>(r0, r1); // z0 z0 z1 z1
        let zs = _mm_shuffle_ps::<0b11_00_10_00>(z01, r2); // z0 z1 z2 z3
        [xs.into(), ys.into(), zs.into()]
    }
}

/// [`crate::simd::Kernels::grow_all`] on SSE lanes, four floats per minimum.
pub(in crate::simd) fn grow_all_sse(into: &mut [f32], from: &[f32]) {
    let n = into.len().min(from.len());
    let whole = n - n % 4;
    let (dst, src) = (into.as_mut_ptr(), from.as_ptr());
    for i in (0..whole).step_by(4) {
        // SAFETY: `i + 4 <= n`, inside both slices; SSE is part of x86_64's baseline.
        unsafe {
            let (a, b) = (_mm_loadu_ps(dst.add(i)), _mm_loadu_ps(src.add(i)));
            _mm_storeu_ps(dst.add(i), _mm_min_ps(b, a));
        }
    }
    min_into(&mut into[whole..n], &from[whole..n]);
}

/// [`grow_all_sse`] compiled for AVX2: the same minimums, eight floats per instruction.
///
/// PERF: widening a frame's spans is one of the two passes over the tree every tick
/// (callgrind, 64 entities: about 1,050 instructions with SSE, 530 with AVX2 as a plain
/// loop, which compiled to masked stores; see [`crate::simd::Kernels::grow_all`]).
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::simd) unsafe fn grow_all_avx2(into: &mut [f32], from: &[f32]) {
    let n = into.len().min(from.len());
    let whole = n - n % 8;
    let (dst, src) = (into.as_mut_ptr(), from.as_ptr());
    for i in (0..whole).step_by(8) {
        // SAFETY: `i + 8 <= n`, inside both slices; the CPU has AVX2 (caller's contract).
        unsafe {
            let (a, b) = (_mm256_loadu_ps(dst.add(i)), _mm256_loadu_ps(src.add(i)));
            _mm256_storeu_ps(dst.add(i), _mm256_min_ps(b, a));
        }
    }
    min_into(&mut into[whole..n], &from[whole..n]);
}

/// The flat form's scan (`bvh/flat.rs`) for one frame, eight lanes per step.
///
/// PERF: the query's broadphase for small histories. The exit planes reuse the entry's
/// origin and inverse direction: the tree computes each exit as
/// `(plane - (-o)) * (-inv)`, which is exactly `-((plane + o) * inv)` (subtracting is adding
/// the negation, and rounding is symmetric), and the minimum of negated values is the
/// negated maximum (`minps(a, b)` is `a < b ? a : b`, `maxps(-a, -b)` is `-a > -b ? -a :
/// -b`: the same choice), so one sign flip after the maxima gives the tree's `far` bit for
/// bit with four vector constants fewer, which keeps every constant in a register.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::simd) unsafe fn flat_scan8<const GROWN: bool>(
    frames: &FlatFrames<'_>,
    ray: &FlatRay,
    t_max: f32,
    out: &mut Survivors,
) -> usize {
    let stride = frames.stride;
    let base = frames.first * frames.frame_floats;
    let Some(blocks) = frames.floats.get(base..base + 6 * stride) else {
        return 0;
    };
    let blocks = blocks.as_ptr();
    // Plane indices are below 6: each plane is inside its block (the loads below rely on
    // it).
    let entry = ray.entry_plane.map(|k| k * FLAT_LANE_STEP);
    let exit = ray.exit_plane.map(|k| k * FLAT_LANE_STEP);
    // PERF: each of the ray's floats is read by a 4-byte load of its own (volatile, so the
    // compiler cannot merge them). The caller stores them one by one; splatted from plain
    // reads, two were loaded 8 bytes at a time (`vmovsd`, `vmovddup`), loads the store
    // buffer cannot forward: on an AVX-512 host (Zen 5-like) perf put 17 % of the scan's
    // samples on one, and a probe there timed such a load at about 25-30 TSC ticks more
    // than a forwarded one. Funnel full query there, pinned, 5 alternated pairs, minima
    // (medians): 64x16 169-175 (177-180) -> 161-165 (166-169) ns, 200x20 247-249
    // (251-260) -> 236-241 (246-249) ns; 5000x20 (the tree) runs the same code.
    let read = |x: &f32| {
        // SAFETY: a reference to an initialised float.
        _mm256_set1_ps(unsafe { std::ptr::read_volatile(x) })
    };
    let splat = |v: &[f32; 3]| [0, 1, 2].map(|axis| read(&v[axis]));
    let (origin, inv) = (splat(&ray.origin), splat(&ray.inv));
    let margin = if GROWN {
        read(&ray.neg_margin)
    } else {
        _mm256_setzero_ps()
    };
    let t_max_v = _mm256_set1_ps(t_max);
    let zero = _mm256_setzero_ps();
    let sign = _mm256_set1_ps(-0.0);
    let mut found = 0;
    let mut block = blocks;
    // PERF: the survivors are gathered per 64 lanes, after their eight blocks are tested:
    // each block stores its entry distances and ORs its mask into one word, with no
    // branch on whether any lane passed (random per shot: callgrind's model mispredicted
    // that branch 1.8 times a shot at 64 entities); one loop then walks the word's bits.
    // PERF: not cleared (eight 32-byte stores a scan): each block writes its eight lanes
    // before the loop below reads any of them.
    let mut nears = [MaybeUninit::<f32>::uninit(); 64];
    let mut first = 0;
    while first < stride {
        let blocks_here = ((stride - first) / FLAT_LANE_STEP).min(8);
        let mut passed = 0_u64;
        for b in 0..blocks_here {
            let load = |plane: usize| -> __m256 {
                // SAFETY: `first + 8 * b < stride` (both multiples of eight), so `block` is
                // the start of one of the frame's `stride / 8` blocks, and `plane + 8 <= 48`
                // floats are inside it; the CPU has AVX2.
                let v = unsafe { _mm256_loadu_ps(block.add(plane)) };
                if GROWN { _mm256_add_ps(v, margin) } else { v }
            };
            let e = |axis: usize| {
                _mm256_mul_ps(_mm256_sub_ps(load(entry[axis]), origin[axis]), inv[axis])
            };
            let x = |axis: usize| {
                _mm256_mul_ps(_mm256_add_ps(load(exit[axis]), origin[axis]), inv[axis])
            };
            // The tree's order: `max(max(max(e0, e1), e2), 0)`, `min(min(min(x0, x1), x2),
            // t)` (the latter through the negated maxima, above).
            let near = _mm256_max_ps(_mm256_max_ps(_mm256_max_ps(e(0), e(1)), e(2)), zero);
            let far = _mm256_xor_ps(_mm256_max_ps(_mm256_max_ps(x(0), x(1)), x(2)), sign);
            let far = _mm256_min_ps(far, t_max_v);
            let mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(near, far)) as u32;
            // SAFETY: `b < 8`, so floats `8 * b..8 * b + 8` are inside `nears`; the CPU has
            // AVX2.
            unsafe { _mm256_storeu_ps(nears.as_mut_ptr().add(FLAT_LANE_STEP * b).cast(), near) };
            passed |= u64::from(mask) << (FLAT_LANE_STEP * b);
            block = block.wrapping_add(BLOCK_FLOATS);
        }
        while passed != 0 {
            let k = passed.trailing_zeros() as usize;
            passed &= passed - 1;
            // SAFETY: bit `k` of `passed` is set only for a lane of a block stored above
            // (`k < 8 * blocks_here`).
            let near = unsafe { nears[k].assume_init() };
            out[found].write(key(near, first + k));
            found += 1;
        }
        first += 64;
    }
    found
}

impl Line8 {
    /// `line` and `t_max` on eight lanes, with the blend weights of `alpha`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn new(line: &LineLanes, t_max: f32, alpha: f32) -> Self {
        Self {
            ox: _mm256_broadcastss_ps(line.ox.into()),
            oy: _mm256_broadcastss_ps(line.oy.into()),
            oz: _mm256_broadcastss_ps(line.oz.into()),
            dx: _mm256_broadcastss_ps(line.dx.into()),
            dy: _mm256_broadcastss_ps(line.dy.into()),
            dz: _mm256_broadcastss_ps(line.dz.into()),
            radius: _mm256_broadcastss_ps(line.radius.into()),
            t_max: _mm256_set1_ps(t_max),
            wa: _mm256_set1_ps(1.0 - alpha),
            wb: _mm256_set1_ps(alpha),
        }
    }
}

/// A trace's line on eight lanes, with the blend weights, for one AVX2 cull.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line8 {
    ox: __m256,
    oy: __m256,
    oz: __m256,
    dx: __m256,
    dy: __m256,
    dz: __m256,
    radius: __m256,
    t_max: __m256,
    /// `1 - alpha` and `alpha`, for a blended entity.
    wa: __m256,
    wb: __m256,
}

/// The trace's four-lane bone cull (`history::cull4`) for eight bones on AVX2 lanes: lane by lane the same
/// operations in the same order (the rows lerped element by element, then transposed;
/// the four-lane transpose's shuffles act on each 128-bit half, which holds four bones).
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn cull_group8<const SINGLE: bool>(
    ta: &[StoredTranslation; 8],
    tb: &[StoredTranslation; 8],
    reach: &[f32; 8],
    line: &Line8,
) -> u32 {
    let [px, py, pz] = if SINGLE {
        transpose8(load_rows8(ta))
    } else {
        let ([a0, a1, a2], [b0, b1, b2]) = (load_rows8(ta), load_rows8(tb));
        let lerp = |a, b| _mm256_add_ps(_mm256_mul_ps(a, line.wa), _mm256_mul_ps(b, line.wb));
        transpose8([lerp(a0, b0), lerp(a1, b1), lerp(a2, b2)])
    };
    let (to_x, to_y, to_z) = (
        _mm256_sub_ps(px, line.ox),
        _mm256_sub_ps(py, line.oy),
        _mm256_sub_ps(pz, line.oz),
    );
    let along = _mm256_add_ps(
        _mm256_add_ps(_mm256_mul_ps(to_x, line.dx), _mm256_mul_ps(to_y, line.dy)),
        _mm256_mul_ps(to_z, line.dz),
    );
    let (px, py, pz) = (
        _mm256_sub_ps(to_x, _mm256_mul_ps(line.dx, along)),
        _mm256_sub_ps(to_y, _mm256_mul_ps(line.dy, along)),
        _mm256_sub_ps(to_z, _mm256_mul_ps(line.dz, along)),
    );
    let off_line = _mm256_add_ps(
        _mm256_add_ps(_mm256_mul_ps(px, px), _mm256_mul_ps(py, py)),
        _mm256_mul_ps(pz, pz),
    );
    // SAFETY: `reach` is eight floats; the CPU has AVX2.
    let reach = _mm256_add_ps(unsafe { _mm256_loadu_ps(reach.as_ptr()) }, line.radius);
    // `-reach` as glam's negation: the sign bit flipped.
    let neg_reach = _mm256_xor_ps(reach, _mm256_set1_ps(-0.0));
    let keep = _mm256_and_ps(
        _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_GE_OQ>(along, neg_reach),
            _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_sub_ps(along, reach), line.t_max),
        ),
        _mm256_cmp_ps::<_CMP_LE_OQ>(off_line, _mm256_mul_ps(reach, reach)),
    );
    _mm256_movemask_ps(keep) as u32
}

/// Eight points' 24 coordinates on three 256-bit vectors, each 128-bit half as
/// [`load_rows`] gives four points: `[x0 y0 z0 x1 | x4 y4 z4 x5]`, `[y1 z1 x2 y2 | y5 z5
/// x6 y6]`, `[z2 x3 y3 z3 | z6 x7 y7 z7]`.
#[target_feature(enable = "avx2")]
#[inline]
fn load_rows8(rows: &[StoredTranslation; 8]) -> [__m256; 3] {
    let f: &[f32; 24] = rows.as_flattened().try_into().expect("eight rows of three");
    let p = f.as_ptr();
    // SAFETY: each load reads four floats at `p + k` with `k + 4 <= 24`; the CPU has AVX2.
    unsafe {
        [
            _mm256_loadu2_m128(p.add(12), p),
            _mm256_loadu2_m128(p.add(16), p.add(4)),
            _mm256_loadu2_m128(p.add(20), p.add(8)),
        ]
    }
}

/// [`transpose`] on both 128-bit halves at once: `[xs, ys, zs]` of eight points.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose8([r0, r1, r2]: [__m256; 3]) -> [__m256; 3] {
    // The same immediates as `transpose`: `_mm256_shuffle_ps` applies them to each half.
    let x23 = _mm256_shuffle_ps::<0b01_01_10_10>(r1, r2);
    let xs = _mm256_shuffle_ps::<0b10_00_11_00>(r0, x23);
    let y01 = _mm256_shuffle_ps::<0b00_00_01_01>(r0, r1);
    let y23 = _mm256_shuffle_ps::<0b10_10_11_11>(r1, r2);
    let ys = _mm256_shuffle_ps::<0b10_00_10_00>(y01, y23);
    let z01 = _mm256_shuffle_ps::<0b01_01_10_10>(r0, r1);
    let zs = _mm256_shuffle_ps::<0b11_00_10_00>(z01, r2);
    [xs, ys, zs]
}
