//! The x86_64 kernels: SSE2 (the baseline every x86_64 target has) and AVX2, chosen at
//! run time; [`avx512`] compiles the AVX2 kernels with AVX-512F/VL enabled.

mod avx512;
mod bone_pass;
mod query;

use std::arch::x86_64::{
    __m128, _MM_HINT_T0, _mm_loadu_ps, _mm_prefetch, _mm_sfence, _mm_storeu_ps, _mm_stream_ps,
    _mm256_add_ps, _mm256_andnot_ps, _mm256_castps256_ps128, _mm256_loadu_ps, _mm256_max_ps,
    _mm256_mul_ps, _mm256_permutevar8x32_ps, _mm256_set_m128, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_shuffle_ps, _mm256_storeu_ps, _mm256_stream_ps, _mm256_sub_ps, _mm256_unpackhi_ps,
    _mm256_unpacklo_ps, _mm256_xor_ps,
};

use glam::Vec3A;

pub(super) use avx512::with_avx512;
use bone_pass::{BatchAcc, LAYOUT_MATCHES};
pub(super) use query::{
    flat_scan8, grow_all_avx2, grow_all_sse, lane_minimums, load_rows, pair_lanes, transpose,
};

use super::portable::{entity_by_entity_batches, four_lane_culls};
use super::{Isa, KernelBody, Level};
use crate::history::{BonePass, LineLanes, StoredRotation, StoredTranslation, assert_one_length};
use crate::math::{BoneTransform, PADDING_BASE, PADDING_SLOPE};

/// The widest kernels this CPU runs (std caches the CPUID answers). The SIMD bone passes
/// read `BoneTransform`s at fixed offsets: with another layout of it (glam's
/// `scalar-math`), the portable kernels run.
pub(super) fn detect() -> Level {
    if !LAYOUT_MATCHES {
        Level::Portable
    } else if !std::arch::is_x86_feature_detected!("avx2") {
        Level::Sse2
    } else if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
    {
        Level::Avx512
    } else {
        Level::Avx2
    }
}

/// [`super::prefetch_line`] on x86_64.
#[inline(always)]
pub(super) fn prefetch_line(at: *const u8) {
    // SAFETY: SSE is part of the x86_64 baseline; a prefetch is a hint that never faults
    // and makes no access the program can see, whatever the address.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
}

/// The SSE2 kernels: a value exists only where `BoneTransform` has the layout they read
/// (`detect`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sse2(());

/// The AVX2 kernels: a value exists only on a CPU with AVX2 (made by [`with_avx2`] and
/// [`with_avx512`]), where `BoneTransform` has the layout they read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Avx2(());

/// Runs `body` with the SSE2 kernels.
#[inline(always)]
pub(super) fn with_sse2<B: KernelBody>(body: B) -> B::Output {
    body.run(Sse2(()))
}

/// Runs `body` with the AVX2 kernels, compiled for AVX2.
///
/// # Safety
/// The CPU supports AVX2, and `detect` chose SIMD kernels (the layout matches).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn with_avx2<B: KernelBody>(body: B) -> B::Output {
    body.run(Avx2(()))
}

impl Isa for Sse2 {
    entity_by_entity_batches!();
    four_lane_culls!();

    #[inline(always)]
    unsafe fn bone_pass<const STREAM: bool>(
        self,
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass {
        assert_one_length(bones, reach, translations, rotations);
        // SAFETY: the lengths were checked above, and a `Sse2` exists only where the
        // layout matches (x86_64 always has SSE2).
        unsafe { bone_pass::sse2(bones, reach, translations, rotations) }
    }

    #[inline(always)]
    unsafe fn store_corner(self, at: *mut f32, v: Vec3A) {
        // SAFETY: the caller's contract.
        unsafe { store4(at, v) };
    }
}

impl Isa for Avx2 {
    type BatchChecks = BatchAcc;

    #[inline(always)]
    unsafe fn bone_pass<const STREAM: bool>(
        self,
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass {
        assert_one_length(bones, reach, translations, rotations);
        // SAFETY: the lengths were checked above; an `Avx2` exists only on a CPU with AVX2
        // where the layout matches; with `STREAM`, the caller's contract gives the
        // alignments and the fence.
        unsafe { bone_pass::avx2_inline::<STREAM>(bones, reach, translations, rotations) }
    }

    #[inline(always)]
    fn batch_checks(self) -> BatchAcc {
        // SAFETY: an `Avx2` exists only on a CPU with AVX2.
        unsafe { BatchAcc::empty() }
    }

    #[inline(always)]
    unsafe fn bone_segment<const STREAM: bool, const GROUPS: usize>(
        self,
        src: *const BoneTransform,
        reach: *const [f32; 4],
        t_out: *mut StoredTranslation,
        r_out: *mut StoredRotation,
        groups: usize,
        bounds: &mut [[Vec3A; 2]],
        checks: &mut BatchAcc,
    ) {
        // SAFETY: the caller's contract gives the rows and their alignments; an `Avx2`
        // exists only on a CPU with AVX2 where the layout matches.
        unsafe {
            bone_pass::avx2_segment::<STREAM, GROUPS>(
                src.cast(),
                reach.cast(),
                t_out.cast(),
                r_out.cast(),
                groups,
                bounds,
                checks,
            );
        }
    }

    #[inline(always)]
    fn batch_checks_pass(self, checks: &BatchAcc) -> bool {
        // SAFETY: an `Avx2` exists only on a CPU with AVX2.
        unsafe { checks.checks_pass() }
    }

    /// The eight entities' padded corners stay in registers: transposed into the block's
    /// planes (four `vinsertf128`, four unpacks and three shuffles a corner), padded for
    /// the eight at once, and written as six 32-byte stores.
    ///
    /// PERF: 48 scalar stores and 16 address checks fewer per eight entities than a leaf
    /// at a time; about 50 instructions an entity instead of 62 for the whole stamping
    /// (static count, AVX-512 build), -1.3 to -1.5 an entity under callgrind (AVX2 build,
    /// whose 16 registers do not hold the 16 corners), and 200x20's tick 1.3-3.4 % faster
    /// at the minimum of alternated pinned runs. Written out rather than as a loop: as a
    /// loop, LLVM kept the corners on the stack (two more stores an entity).
    #[inline(always)]
    fn leaf_block(
        self,
        bounds: &[[Vec3A; 2]; 8],
        block: &mut [f32; 48],
        mut stamp: impl FnMut(usize, Option<Vec3A>) -> (Vec3A, Vec3A),
    ) {
        // SAFETY: register-only intrinsics but for the six stores, which write the block's
        // six planes of eight floats; an `Avx2` exists only on a CPU with AVX2.
        unsafe {
            let corner = |c: usize| std::array::from_fn(|j| __m128::from(bounds[j][c]));
            let [lo_x, lo_y, lo_z] = x_y_z_planes(corner(0));
            let [hi_x, hi_y, hi_z] = x_y_z_planes(corner(1));
            // `padded_corners` for the eight at once: the same maximums of magnitudes (in
            // any order: they are neither NaN nor of either zero's sign) and the same
            // product and sum.
            let sign = _mm256_set1_ps(-0.0);
            let abs = |v| _mm256_andnot_ps(sign, v);
            let magnitude = _mm256_max_ps(
                _mm256_max_ps(_mm256_max_ps(abs(lo_x), abs(lo_y)), abs(lo_z)),
                _mm256_max_ps(_mm256_max_ps(abs(hi_x), abs(hi_y)), abs(hi_z)),
            );
            let margin = _mm256_add_ps(
                _mm256_set1_ps(PADDING_BASE),
                _mm256_mul_ps(magnitude, _mm256_set1_ps(PADDING_SLOPE)),
            );
            for j in 0..8 {
                let splat = _mm256_permutevar8x32_ps(margin, _mm256_set1_epi32(j as i32));
                stamp(j, Some(Vec3A::from(_mm256_castps256_ps128(splat))));
            }
            // The negated maximum as one XOR a plane: the same bits as `-max`.
            let negate = |v| _mm256_xor_ps(v, sign);
            let planes = [
                _mm256_sub_ps(lo_x, margin),
                _mm256_sub_ps(lo_y, margin),
                _mm256_sub_ps(lo_z, margin),
                negate(_mm256_add_ps(hi_x, margin)),
                negate(_mm256_add_ps(hi_y, margin)),
                negate(_mm256_add_ps(hi_z, margin)),
            ];
            let out = block.as_mut_ptr();
            for (p, plane) in planes.into_iter().enumerate() {
                _mm256_storeu_ps(out.add(8 * p), plane);
            }
        }
    }

    /// PERF: 32-byte pieces where the destination allows, half the loads, stores and
    /// address computations of 16-byte ones (about 3.5 instructions an entity); a chunk
    /// of `FULL` bytes takes a constant count of pieces.
    #[inline(always)]
    unsafe fn stream_copy<const FULL: usize>(
        self,
        dst: *mut u8,
        src: *const u8,
        bytes: usize,
        head: usize,
        wide: bool,
    ) {
        // SAFETY: the caller's contract: `src` and `dst` hold `bytes`; `head` and the
        // whole 16-byte pieces after it stay inside both, and the stores at `dst + head +
        // 16i` are 16-byte aligned (with `wide`, `dst` is 32-byte aligned); an `Avx2`
        // exists only on a CPU with AVX2.
        unsafe {
            if wide && bytes == FULL {
                for piece in 0..FULL / 32 {
                    let v = _mm256_loadu_ps(src.add(32 * piece).cast());
                    _mm256_stream_ps(dst.add(32 * piece).cast(), v);
                }
                // `FULL` is a multiple of 32 where it is used; the rest if not.
                let done = FULL / 32 * 32;
                std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), FULL - done);
            } else if head == 0 && bytes == FULL && FULL.is_multiple_of(16) {
                for piece in 0..FULL / 16 {
                    let v = _mm_loadu_ps(src.add(16 * piece).cast());
                    _mm_stream_ps(dst.add(16 * piece).cast(), v);
                }
            } else {
                let head = head.min(bytes);
                std::ptr::copy_nonoverlapping(src, dst, head);
                let mut at = head;
                while at + 16 <= bytes {
                    let v = _mm_loadu_ps(src.add(at).cast());
                    _mm_stream_ps(dst.add(at).cast(), v);
                    at += 16;
                }
                std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), bytes - at);
            }
        }
    }

    type Line8 = query::Line8;

    #[inline(always)]
    fn line8(self, line: &LineLanes, t_max: f32, alpha: f32) -> query::Line8 {
        // SAFETY: an `Avx2` exists only on a CPU with AVX2.
        unsafe { query::Line8::new(line, t_max, alpha) }
    }

    #[inline(always)]
    fn cull8<const SINGLE: bool>(
        self,
        ta: &[StoredTranslation; 8],
        tb: &[StoredTranslation; 8],
        reach: &[f32; 8],
        line: &query::Line8,
    ) -> u32 {
        // SAFETY: an `Avx2` exists only on a CPU with AVX2.
        unsafe { query::cull_group8::<SINGLE>(ta, tb, reach, line) }
    }

    #[inline(always)]
    unsafe fn store_corner(self, at: *mut f32, v: Vec3A) {
        // SAFETY: the caller's contract.
        unsafe { store4(at, v) };
    }

    #[inline(always)]
    fn fence(self) {
        // Streaming stores are weakly ordered, even against the release of a lock: fenced
        // before the frame can be published (other threads query the history).
        // SAFETY: SSE (`sfence`) is part of x86_64's baseline.
        unsafe { _mm_sfence() };
    }
}

/// Eight vectors' x, y and z lanes as three vectors of eight (a transpose; the fourth
/// lanes are dropped): plane `p`'s lane `j` is lane `p` of `v[j]`.
///
/// # Safety
/// The CPU supports AVX and the caller is compiled with it.
#[inline(always)]
unsafe fn x_y_z_planes(v: [__m128; 8]) -> [std::arch::x86_64::__m256; 3] {
    // SAFETY: register-only intrinsics; the caller's contract gives AVX.
    unsafe {
        // Vectors `j` and `j + 4` side by side: 128-bit half `h` holds lanes `4h..4h + 4`.
        let a0 = _mm256_set_m128(v[4], v[0]);
        let a1 = _mm256_set_m128(v[5], v[1]);
        let a2 = _mm256_set_m128(v[6], v[2]);
        let a3 = _mm256_set_m128(v[7], v[3]);
        let xy01 = _mm256_unpacklo_ps(a0, a1); // x0 x1 y0 y1 | x4 x5 y4 y5
        let xy23 = _mm256_unpacklo_ps(a2, a3); // x2 x3 y2 y3 | x6 x7 y6 y7
        let zw01 = _mm256_unpackhi_ps(a0, a1); // z0 z1 w0 w1 | z4 z5 w4 w5
        let zw23 = _mm256_unpackhi_ps(a2, a3); // z2 z3 w2 w3 | z6 z7 w6 w7
        [
            _mm256_shuffle_ps::<0b01_00_01_00>(xy01, xy23),
            _mm256_shuffle_ps::<0b11_10_11_10>(xy01, xy23),
            _mm256_shuffle_ps::<0b01_00_01_00>(zw01, zw23),
        ]
    }
}

/// Stores `v`'s four lanes at `at` (16 bytes, unaligned).
///
/// # Safety
/// `at` holds four writable floats.
#[inline(always)]
unsafe fn store4(at: *mut f32, v: Vec3A) {
    // SAFETY: the caller's contract; SSE is part of x86_64's baseline.
    unsafe { _mm_storeu_ps(at, v.into()) };
}
