//! The per-bone pass of recording a tick: copy each bone's pose into its ring row, check it
//! with fast conservative tests, and grow the entity's bounds, in one sweep over the input.
//!
//! Three kernels compute exactly the same thing, chosen once per history ([`Kernel::detect`]):
//! - `Portable`: glam vectors, any target (and the reference the others are tested against).
//! - `Sse2`: x86_64's baseline, explicit 128-bit intrinsics, one bone per register.
//! - `Avx2`: two bones per 256-bit register, used when the CPU reports AVX2 at run time.
//!
//! What "the same" means: the stored translations and rotations are copies (bit for bit), the
//! bounds are minimums and maximums of the same `translation ± reach` sums (they can differ
//! only in the sign of a zero, which the caller's padding erases), and `clean` is the same
//! decision: every translation component within [`MAX_COORDINATE`] (NaN fails), every scale
//! exactly one, and every rotation's squared norm within [`ROTATION_NORM_TOLERANCE`] of one,
//! computed as `((x² + y²) + z²) + w²` for bones in whole groups of four and as glam's
//! `length_squared` for the last `n % 4` bones (the sums the recording code has always
//! used, so accept/reject decisions do not move). A bone that fails a fast test is not
//! necessarily invalid: the caller then runs the precise [`BoneTransform::validate`] on
//! every bone.
//!
//! PERF: this is most of a tick's recording. Hand-written intrinsics because the portable
//! version loads each `Vec3` field lane by lane, recomputes the norms through a 4x4
//! transpose per group and stores the 12-byte translations piecewise: about 45 instructions
//! per bone under callgrind; the SSE2 kernel reads each bone as three overlapping 16-byte
//! loads and writes it as two 16-byte stores, and the AVX2 kernel halves the arithmetic.

use glam::{BVec3A, BVec4A, Mat4, Vec3A, Vec4};

use super::{StoredRotation, StoredTranslation};
use crate::math::{BoneTransform, MAX_COORDINATE, ROTATION_NORM_TOLERANCE};

/// What the pass found.
#[derive(Debug, Clone, Copy)]
pub(super) struct BonePass {
    /// Minimum corner of the bones' reach spheres (unit scale assumed).
    pub(super) lo: Vec3A,
    /// Maximum corner.
    pub(super) hi: Vec3A,
    /// Every bone passed the fast checks and has unit scale: `lo`/`hi` are the bounds and
    /// nothing else needs checking.
    pub(super) clean: bool,
}

/// A bone pass as a recorder takes it: [`Kernel::run`] with a chosen kernel, or one kernel
/// called directly (bones, their reach, the translation and rotation lanes to fill; the
/// translation lane has one element more, see [`Kernel::run`]).
pub(super) trait BonePassFn:
    Fn(&[BoneTransform], &[[f32; 4]], &mut [StoredTranslation], &mut [StoredRotation]) -> BonePass
    + Copy
{
}

impl<F> BonePassFn for F where
    F: Fn(
            &[BoneTransform],
            &[[f32; 4]],
            &mut [StoredTranslation],
            &mut [StoredRotation],
        ) -> BonePass
        + Copy
{
}

/// The slices of one pass are one bone each: non-empty (a rig has a bone) and of one length,
/// but for the translations, which have one more (the element the pass may spill into).
///
/// # Panics
/// If they are not.
#[inline(always)]
fn assert_one_length(
    bones: &[BoneTransform],
    reach: &[[f32; 4]],
    translations: &[StoredTranslation],
    rotations: &[StoredRotation],
) {
    let n = bones.len();
    assert!(
        n > 0 && reach.len() == n && translations.len() == n + 1 && rotations.len() == n,
        "bone pass slices must be non-empty and of one length (translations one more)"
    );
}

/// Which implementation of the pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
    /// glam, any target.
    Portable,
    /// 128-bit intrinsics (x86_64 baseline).
    #[cfg(target_arch = "x86_64")]
    Sse2,
    /// 256-bit intrinsics, two bones per register.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU and this build's `BoneTransform` layout allow.
    pub(super) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if !x86::LAYOUT_MATCHES {
                return Self::Portable;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Self::Avx2;
            }
            Self::Sse2
        }
        #[cfg(not(target_arch = "x86_64"))]
        Self::Portable
    }

    /// Every kernel this machine can run (for tests that compare them).
    #[cfg(test)]
    pub(super) fn available() -> Vec<Self> {
        let mut kernels = vec![Self::Portable];
        #[cfg(target_arch = "x86_64")]
        if x86::LAYOUT_MATCHES {
            kernels.push(Self::Sse2);
            if std::arch::is_x86_feature_detected!("avx2") {
                kernels.push(Self::Avx2);
            }
        }
        kernels
    }

    /// Copies `bones` into `translations` and `rotations`, checks them and bounds them
    /// (`reach[i]`, the bone's reach in four lanes, around bone `i`).
    ///
    /// `translations` holds the row and one element after it (the next row's first
    /// translation, or a spare at the end of the lane): the x86_64 kernels store each
    /// translation as 16 bytes, so the row's last store writes the first float after the
    /// row; they put back the bits it held before returning. Every other element outside
    /// the row is untouched.
    ///
    /// # Panics
    /// If the slices are empty or their lengths do not match (the recorder slices them to
    /// the rig's bone count, which is at least one).
    #[inline]
    pub(super) fn run(
        self,
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass {
        assert_one_length(bones, reach, translations, rotations);
        match self {
            Self::Portable => portable(bones, reach, translations, rotations),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the lengths were checked above, and `Sse2` is only chosen when
            // `LAYOUT_MATCHES` (x86_64 always has SSE2).
            Self::Sse2 => unsafe { x86::sse2(bones, reach, translations, rotations) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above; `Avx2` is only chosen after `is_x86_feature_detected!("avx2")`.
            Self::Avx2 => unsafe { x86::avx2(bones, reach, translations, rotations) },
        }
    }
}

impl Kernel {
    /// [`Kernel::run`] for [`Kernel::Avx2`], inlinable into AVX2 code. With `STREAM`, the
    /// rows of whole groups of four bones are written with streaming (non-temporal) stores,
    /// which do not read the lines they fill; the stored bits are the same.
    ///
    /// # Safety
    /// The CPU supports AVX2 (`Kernel::detect` returned `Avx2`). With `STREAM`:
    /// `translations` starts 16-byte aligned and `rotations` 32-byte aligned when there are
    /// four bones or more, and the caller runs `_mm_sfence` before anything else (another
    /// thread) may read the rows.
    ///
    /// # Panics
    /// As [`Kernel::run`].
    ///
    /// PERF: not `#[target_feature]` (see `x86::avx2_inline`): it is always inlined into
    /// the AVX2-compiled recorder.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) unsafe fn run_avx2<const STREAM: bool>(
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass {
        assert_one_length(bones, reach, translations, rotations);
        if !x86::LAYOUT_MATCHES {
            return portable(bones, reach, translations, rotations);
        }
        // SAFETY: lengths and layout checked above; the caller's contract gives AVX2 and,
        // with `STREAM`, the alignments.
        unsafe { x86::avx2_inline::<STREAM>(bones, reach, translations, rotations) }
    }
}

/// Whether a squared norm is close enough to one, lane by lane.
#[inline]
fn unit_norm(norm_squared: Vec4) -> BVec4A {
    (norm_squared - Vec4::ONE)
        .abs()
        .cmple(Vec4::splat(ROTATION_NORM_TOLERANCE))
}

/// The glam version: any target, and the reference for the others.
fn portable(
    bones: &[BoneTransform],
    reach: &[[f32; 4]],
    translations: &mut [StoredTranslation],
    rotations: &mut [StoredRotation],
) -> BonePass {
    let n = bones.len();
    // The element after the row (`translations[n]`) is not written.
    let (translations, rotations, reach) =
        (&mut translations[..n], &mut rotations[..n], &reach[..n]);
    let max_coordinate = Vec3A::splat(MAX_COORDINATE);
    let mut in_range = BVec3A::TRUE;
    let mut rotations_ok = BVec4A::TRUE;
    let mut unit_scale = BVec3A::TRUE;
    let mut lo = Vec3A::INFINITY;
    let mut hi = Vec3A::NEG_INFINITY;
    let mut copy_one = |i: usize| {
        let transform = &bones[i];
        let t = Vec3A::from(transform.translation);
        in_range &= t.abs().cmple(max_coordinate);
        unit_scale &= Vec3A::from(transform.scale).cmpeq(Vec3A::ONE);
        translations[i] = transform.translation.to_array();
        rotations[i] = transform.rotation.to_array();
        let r = Vec3A::splat(reach[i][0]);
        lo = lo.min(t - r);
        hi = hi.max(t + r);
    };
    let whole = n - n % 4;
    for i in (0..whole).step_by(4) {
        for k in i..i + 4 {
            copy_one(k);
        }
        let columns = Mat4::from_cols(
            Vec4::from(bones[i].rotation),
            Vec4::from(bones[i + 1].rotation),
            Vec4::from(bones[i + 2].rotation),
            Vec4::from(bones[i + 3].rotation),
        )
        .transpose();
        let (x, y, z, w) = (
            columns.x_axis,
            columns.y_axis,
            columns.z_axis,
            columns.w_axis,
        );
        rotations_ok &= unit_norm(x * x + y * y + z * z + w * w);
    }
    for (i, transform) in bones.iter().enumerate().skip(whole) {
        copy_one(i);
        rotations_ok &= unit_norm(Vec4::splat(transform.rotation.length_squared()));
    }
    BonePass {
        lo,
        hi,
        clean: in_range.all() && rotations_ok.all() && unit_scale.all(),
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    //! The x86_64 kernels. Both read a `BoneTransform` (rotation at byte 0, translation at
    //! 16, scale at 28, 48 bytes with padding from 40) as three unaligned 16-byte loads that
    //! touch only its 40 initialised bytes: `q` = rotation, `a` = translation and scale.x
    //! (bytes 16..32), `b` = translation.z and scale (bytes 24..40). A translation is
    //! stored as the 16 bytes of `a`: the fourth float lands on the next bone's slot, which
    //! the next store overwrites, and the row's last store lands on the element after the
    //! row, whose first float the kernel saves before the row and puts back after it (one
    //! load and one store per entity, instead of a separate last group storing 8 + 4 bytes).

    use std::arch::x86_64::*;
    use std::mem::{align_of, offset_of, size_of};

    use glam::{Quat, Vec3A, Vec4};

    use super::{BonePass, unit_norm};
    use crate::history::{StoredRotation, StoredTranslation};
    use crate::math::{BoneTransform, MAX_COORDINATE, ROTATION_NORM_TOLERANCE};

    /// `BoneTransform` is laid out as the loads above assume. Its fields are `repr(Rust)`,
    /// so this is checked, not promised: with another layout the portable kernel runs (a
    /// test fails on x86_64 so the slowdown is noticed).
    pub(super) const LAYOUT_MATCHES: bool = offset_of!(BoneTransform, rotation) == 0
        && offset_of!(BoneTransform, translation) == 16
        && offset_of!(BoneTransform, scale) == 28
        && size_of::<BoneTransform>() == 48
        && align_of::<BoneTransform>() >= 4
        && size_of::<StoredTranslation>() == 12
        && size_of::<StoredRotation>() == 16;

    /// Floats per `BoneTransform`.
    const STRIDE: usize = size_of::<BoneTransform>() / 4;
    /// Bit pattern of `MAX_COORDINATE` shifted left by one: for a non-negative float, `x <=
    /// MAX_COORDINATE` exactly when its bits are `<=` `MAX_COORDINATE`'s (NaN and infinity
    /// are larger), so for any float, `|x| <= MAX_COORDINATE` exactly when its bits
    /// shifted left by one (the sign shifted out) are `<=` these, compared unsigned.
    const MAX_COORDINATE_DOUBLED_BITS: i32 = (MAX_COORDINATE.to_bits() << 1) as i32;
    const ABS_MASK: i32 = 0x7fff_ffff;
    const ONE_BITS: i32 = 1.0_f32.to_bits() as i32;

    /// The squared norms of four rotations, `((x² + y²) + z²) + w²` each, in one register
    /// (the portable kernel's transpose and sums, exactly).
    #[target_feature(enable = "sse2")]
    #[inline]
    fn norms4(q0: __m128, q1: __m128, q2: __m128, q3: __m128) -> __m128 {
        let t0 = _mm_unpacklo_ps(q0, q1); // x0 x1 y0 y1
        let t1 = _mm_unpacklo_ps(q2, q3); // x2 x3 y2 y3
        let t2 = _mm_unpackhi_ps(q0, q1); // z0 z1 w0 w1
        let t3 = _mm_unpackhi_ps(q2, q3); // z2 z3 w2 w3
        let x = _mm_movelh_ps(t0, t1);
        let y = _mm_movehl_ps(t1, t0);
        let z = _mm_movelh_ps(t2, t3);
        let w = _mm_movehl_ps(t3, t2);
        let xx = _mm_mul_ps(x, x);
        let yy = _mm_mul_ps(y, y);
        let zz = _mm_mul_ps(z, z);
        let ww = _mm_mul_ps(w, w);
        _mm_add_ps(_mm_add_ps(_mm_add_ps(xx, yy), zz), ww)
    }

    /// All-ones lanes where `|norm² - 1| <= tolerance`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn unit_lanes(norms: __m128) -> __m128 {
        let off = _mm_sub_ps(norms, _mm_set1_ps(1.0));
        let abs = _mm_and_ps(off, _mm_castsi128_ps(_mm_set1_epi32(ABS_MASK)));
        _mm_cmple_ps(abs, _mm_set1_ps(ROTATION_NORM_TOLERANCE))
    }

    /// Which of lanes 1..4 (the scale lanes of `b`) of the OR of every `b ^ 1.0` are zero,
    /// as movemask bits: an integer compare, because as floats `-1.0 ^ 1.0` (-0.0) would
    /// equal zero.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn unit_scale_lanes(scale_off: __m128) -> i32 {
        let zero = _mm_cmpeq_epi32(_mm_castps_si128(scale_off), _mm_setzero_si128());
        _mm_movemask_ps(_mm_castsi128_ps(zero)) & 0b1110
    }

    /// The glam norm check of one rotation (the tail bones), as a lane mask.
    #[inline]
    fn tail_norm_ok(q: __m128) -> bool {
        let rotation = Quat::from_vec4(Vec4::from(q));
        unit_norm(Vec4::splat(rotation.length_squared())).all()
    }

    /// One bone per 128-bit register.
    ///
    /// # Safety
    /// `LAYOUT_MATCHES`; `bones`, `reach` and `rotations` have the same non-zero length `n`
    /// and `translations` has `n + 1` elements.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn sse2(
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass {
        let n = bones.len();
        let src = bones.as_ptr().cast::<f32>();
        let t_out = translations.as_mut_ptr().cast::<f32>();
        let r_out = rotations.as_mut_ptr().cast::<f32>();
        // SAFETY: `translations` has `n + 1` elements: float `3n` is the first of the last.
        let spilled = unsafe { t_out.add(3 * n).read() };
        let abs_mask = _mm_castsi128_ps(_mm_set1_epi32(ABS_MASK));
        let max_coordinate = _mm_set1_ps(MAX_COORDINATE);
        let one = _mm_set1_ps(1.0);
        let mut lo = _mm_set1_ps(f32::INFINITY);
        let mut hi = _mm_set1_ps(f32::NEG_INFINITY);
        let mut in_range = _mm_castsi128_ps(_mm_set1_epi32(-1));
        let mut scale_off = _mm_setzero_ps();
        let mut norms_ok = _mm_castsi128_ps(_mm_set1_epi32(-1));
        // One bone: copy, range and scale checks, bounds. Returns its rotation.
        let mut bone = |i: usize| -> __m128 {
            // SAFETY: `i < n`, so bone `i`'s bytes 0..40 (its fields, all initialised
            // floats) are inside `bones`, and `reach` and `rotations` have `n` elements; the
            // 16-byte translation store writes floats `3i..3i + 4` of `translations`, which
            // has `n + 1` elements (caller's contract).
            unsafe {
                let p = src.add(i * STRIDE);
                let q = _mm_loadu_ps(p);
                let a = _mm_loadu_ps(p.add(4));
                let b = _mm_loadu_ps(p.add(6));
                let r = _mm_loadu_ps(reach.as_ptr().add(i).cast::<f32>());
                _mm_storeu_ps(r_out.add(4 * i), q);
                _mm_storeu_ps(t_out.add(3 * i), a);
                in_range = _mm_and_ps(
                    in_range,
                    _mm_cmple_ps(_mm_and_ps(a, abs_mask), max_coordinate),
                );
                // Lanes 1..4 of `b` are the scale; lane 0 (translation.z) is ignored below.
                scale_off = _mm_or_ps(scale_off, _mm_xor_ps(b, one));
                lo = _mm_min_ps(lo, _mm_sub_ps(a, r));
                hi = _mm_max_ps(hi, _mm_add_ps(a, r));
                q
            }
        };
        let whole = n - n % 4;
        let mut i = 0;
        while i < whole {
            let (q0, q1, q2, q3) = (bone(i), bone(i + 1), bone(i + 2), bone(i + 3));
            norms_ok = _mm_and_ps(norms_ok, unit_lanes(norms4(q0, q1, q2, q3)));
            i += 4;
        }
        let mut tail_ok = true;
        while i < n {
            tail_ok &= tail_norm_ok(bone(i));
            i += 1;
        }
        // SAFETY: as above; the row's last store wrote over float `3n`, put back here.
        unsafe { t_out.add(3 * n).write(spilled) };
        // Lane 3 of `in_range` checked scale.x against the coordinate range: a unit scale
        // passes, anything else fails the scale check anyway.
        let scale_unit = unit_scale_lanes(scale_off);
        let clean = _mm_movemask_ps(in_range) == 0b1111
            && scale_unit == 0b1110
            && _mm_movemask_ps(norms_ok) == 0b1111
            && tail_ok;
        BonePass {
            lo: Vec3A::from(lo),
            hi: Vec3A::from(hi),
            clean,
        }
    }

    /// The eight lanes' checks decided: lanes that hold no norm (2, 3 of each half) or no
    /// scale (0) pass those checks, blended with all-ones by an immediate mask (no constant
    /// to load), and the eight lanes decided with one `vptest`. Shared by [`Avx2Acc`] (one
    /// entity) and [`BatchAcc`] (a batch).
    ///
    /// # Safety
    /// The CPU supports AVX2 and the caller is compiled with it.
    #[inline(always)]
    unsafe fn lanes_pass(in_range: __m256i, norms_unit: __m256i, scale_unit: __m256i) -> bool {
        // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
        unsafe {
            let ones = _mm256_cmpeq_epi32(in_range, in_range);
            let norms_unit = _mm256_blend_epi32::<0b1100_1100>(norms_unit, ones);
            let scale_unit = _mm256_blend_epi32::<0b0001_0001>(scale_unit, ones);
            let passed = _mm256_and_si256(in_range, _mm256_and_si256(norms_unit, scale_unit));
            _mm256_testc_si256(passed, ones) == 1
        }
    }

    /// Bounds kept on two halves (four lanes each) folded into one minimum and one maximum
    /// corner.
    ///
    /// # Safety
    /// The CPU supports AVX2 and the caller is compiled with it.
    #[inline(always)]
    unsafe fn fold_halves(lo: __m256, hi: __m256) -> (__m128, __m128) {
        // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
        unsafe {
            let low = |v: __m256| _mm256_castps256_ps128(v);
            let high = |v: __m256| _mm256_extractf128_ps::<1>(v);
            (_mm_min_ps(low(lo), high(lo)), _mm_max_ps(low(hi), high(hi)))
        }
    }

    /// What the AVX2 kernel accumulates, two bones per register (each 128-bit half as one
    /// bone's lanes).
    ///
    /// PERF: no constant in the group loop (LLVM re-broadcast the two it had, the absolute
    /// value mask and one's bits, in every group rather than keep them in registers): the
    /// range check doubles each component's bits instead of masking the sign (shifting the
    /// sign out), and the scale check keeps the OR and the AND of the scale bits, which
    /// are both one's bits exactly when every scale is. Callgrind: 55 -> 53 instructions per
    /// group.
    #[derive(Clone, Copy)]
    struct Avx2Acc {
        lo: __m256,
        hi: __m256,
        /// Largest `|component|` bit pattern of each lane of `a` (translation, scale.x),
        /// shifted left by one (the sign bit shifted out): `|x| <= m` exactly when
        /// `bits(x) << 1 <= bits(m) << 1`, compared unsigned.
        largest: __m256i,
        /// OR and AND of every `b` (lanes 1..4 of each half: the scale).
        scale_or: __m256i,
        scale_and: __m256i,
        /// Smallest and largest squared-norm bit patterns (lanes 0 and 1 of each half are
        /// norms; see [`UNIT_NORM_BITS`]).
        norm_min: __m256i,
        norm_max: __m256i,
    }

    impl Avx2Acc {
        /// Nothing accumulated yet: each field the identity of how it accumulates.
        ///
        /// # Safety
        /// The CPU supports AVX2 and the caller is compiled with it.
        #[inline(always)]
        unsafe fn empty() -> Self {
            // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
            unsafe {
                Self {
                    lo: _mm256_set1_ps(f32::INFINITY),
                    hi: _mm256_set1_ps(f32::NEG_INFINITY),
                    largest: _mm256_setzero_si256(),
                    scale_or: _mm256_setzero_si256(),
                    scale_and: _mm256_set1_epi32(-1),
                    norm_min: _mm256_set1_epi32(-1),
                    norm_max: _mm256_setzero_si256(),
                }
            }
        }

        /// [`Avx2Acc::empty`] with `add(a, b, r)` applied, computed directly: every
        /// accumulation returns its second operand bit for bit when the first is its
        /// identity (`min_ps(+inf, x)` and `max_ps(-inf, x)` are `x`, NaN included), so
        /// this is the same value. The norms are set by the group that calls this.
        ///
        /// # Safety
        /// The CPU supports AVX2 and the caller is compiled with it.
        #[inline(always)]
        unsafe fn first(a: __m256, b: __m256, r: __m256) -> Self {
            // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
            unsafe {
                let a_bits = _mm256_castps_si256(a);
                let b_bits = _mm256_castps_si256(b);
                Self {
                    lo: _mm256_sub_ps(a, r),
                    hi: _mm256_add_ps(a, r),
                    largest: _mm256_add_epi32(a_bits, a_bits),
                    scale_or: b_bits,
                    scale_and: b_bits,
                    norm_min: _mm256_setzero_si256(),
                    norm_max: _mm256_setzero_si256(),
                }
            }
        }

        /// Whether every bone accumulated passed the fast checks (range, unit scale, unit
        /// norm; the `n % 4` tail's norms are checked apart): one eight-lane mask.
        ///
        /// # Safety
        /// The CPU supports AVX2 and the caller is compiled with it.
        #[inline(always)]
        unsafe fn checks_pass(&self) -> bool {
            // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
            unsafe {
                let (low_bits, high_bits) = UNIT_NORM_BITS;
                // Lane 3 of each half of `largest` is scale.x: a unit scale is in range,
                // anything else fails the scale check anyway.
                let in_range = _mm256_cmpeq_epi32(
                    _mm256_min_epu32(self.largest, _mm256_set1_epi32(MAX_COORDINATE_DOUBLED_BITS)),
                    self.largest,
                );
                let norms_unit = _mm256_and_si256(
                    _mm256_cmpeq_epi32(
                        _mm256_max_epu32(self.norm_min, _mm256_set1_epi32(low_bits as i32)),
                        self.norm_min,
                    ),
                    _mm256_cmpeq_epi32(
                        _mm256_min_epu32(self.norm_max, _mm256_set1_epi32(high_bits as i32)),
                        self.norm_max,
                    ),
                );
                let one = _mm256_set1_epi32(ONE_BITS);
                let scale_unit = _mm256_and_si256(
                    _mm256_cmpeq_epi32(self.scale_or, one),
                    _mm256_cmpeq_epi32(self.scale_and, one),
                );
                lanes_pass(in_range, norms_unit, scale_unit)
            }
        }

        /// The bounds: the two halves' minimum and maximum corners combined.
        ///
        /// # Safety
        /// The CPU supports AVX2 and the caller is compiled with it.
        #[inline(always)]
        unsafe fn bounds(&self) -> (__m128, __m128) {
            // SAFETY: the caller's contract gives AVX2.
            unsafe { fold_halves(self.lo, self.hi) }
        }

        /// Copy, range and scale checks and bounds of the bones in the halves of `a` and
        /// `b` (translation and scale, as loaded), with their reaches `r`.
        ///
        /// # Safety
        /// The CPU supports AVX2 and the caller is compiled with it.
        #[inline(always)]
        unsafe fn add(&mut self, a: __m256, b: __m256, r: __m256) {
            // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
            unsafe {
                let a_bits = _mm256_castps_si256(a);
                self.largest = _mm256_max_epu32(self.largest, _mm256_add_epi32(a_bits, a_bits));
                let b_bits = _mm256_castps_si256(b);
                self.scale_or = _mm256_or_si256(self.scale_or, b_bits);
                self.scale_and = _mm256_and_si256(self.scale_and, b_bits);
                self.lo = _mm256_min_ps(self.lo, _mm256_sub_ps(a, r));
                self.hi = _mm256_max_ps(self.hi, _mm256_add_ps(a, r));
            }
        }
    }

    /// How a group's bones are taken into accumulators: one entity's ([`Avx2Acc`]) or a
    /// batch's ([`BatchAcc`]).
    trait GroupAcc: Copy {
        /// Takes the bones in the halves of `a` and `b` (translation and scale, as loaded)
        /// with their reaches `r`; with `FIRST`, the entity's first: its bounds (and, per
        /// entity, everything) start from these.
        ///
        /// # Safety
        /// The CPU supports AVX2 and the caller is compiled with it.
        unsafe fn take<const FIRST: bool>(&mut self, a: __m256, b: __m256, r: __m256);

        /// Takes four squared norms (lanes 0 and 1 of each half); `FIRST` as above.
        ///
        /// # Safety
        /// As [`GroupAcc::take`].
        unsafe fn take_norms<const FIRST: bool>(&mut self, norms: __m256i);
    }

    impl GroupAcc for Avx2Acc {
        #[inline(always)]
        unsafe fn take<const FIRST: bool>(&mut self, a: __m256, b: __m256, r: __m256) {
            // SAFETY: the caller's contract.
            unsafe {
                if FIRST {
                    *self = Avx2Acc::first(a, b, r);
                } else {
                    self.add(a, b, r);
                }
            }
        }

        #[inline(always)]
        unsafe fn take_norms<const FIRST: bool>(&mut self, norms: __m256i) {
            // Sums of squares are `+0.0` or more, or NaN: as integers they sort like floats,
            // NaN (either sign) above infinity, so the largest catches it.
            if FIRST {
                self.norm_min = norms;
                self.norm_max = norms;
            } else {
                // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
                unsafe {
                    self.norm_min = _mm256_min_epu32(self.norm_min, norms);
                    self.norm_max = _mm256_max_epu32(self.norm_max, norms);
                }
            }
        }
    }

    /// What the bone pass of a batch accumulates (see [`avx2_segment`]): each entity's
    /// bounds, and the checks of every bone so far in five registers rather than seven.
    ///
    /// PERF: with seven accumulators and the unrolled groups, LLVM spilled two of them to
    /// the stack (about 14 instructions an entity). The checks are the same predicates
    /// folded differently: every scale is one exactly when the OR of every `scale ^ one` is
    /// zero, and every norm `n` is within the unit-norm bounds `[low, high]` exactly when
    /// the largest `n - low` (wrapping, unsigned) is at most `high - low`.
    #[derive(Clone, Copy)]
    pub(in crate::history) struct BatchAcc {
        lo: __m256,
        hi: __m256,
        /// As [`Avx2Acc::largest`].
        largest: __m256i,
        /// OR of every `b ^ 1.0` (lanes 1..4 of each half: the scale).
        scale_off: __m256i,
        /// Largest `norm - low` bit pattern, wrapping (lanes 0 and 1 of each half).
        norm_off: __m256i,
    }

    impl GroupAcc for BatchAcc {
        #[inline(always)]
        unsafe fn take<const FIRST: bool>(&mut self, a: __m256, b: __m256, r: __m256) {
            // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
            unsafe {
                let a_bits = _mm256_castps_si256(a);
                self.largest = _mm256_max_epu32(self.largest, _mm256_add_epi32(a_bits, a_bits));
                let off = _mm256_xor_si256(_mm256_castps_si256(b), _mm256_set1_epi32(ONE_BITS));
                self.scale_off = _mm256_or_si256(self.scale_off, off);
                if FIRST {
                    self.lo = _mm256_sub_ps(a, r);
                    self.hi = _mm256_add_ps(a, r);
                } else {
                    self.lo = _mm256_min_ps(self.lo, _mm256_sub_ps(a, r));
                    self.hi = _mm256_max_ps(self.hi, _mm256_add_ps(a, r));
                }
            }
        }

        #[inline(always)]
        unsafe fn take_norms<const FIRST: bool>(&mut self, norms: __m256i) {
            // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
            unsafe {
                let off = _mm256_sub_epi32(norms, _mm256_set1_epi32(UNIT_NORM_BITS.0 as i32));
                self.norm_off = _mm256_max_epu32(self.norm_off, off);
            }
        }
    }

    impl BatchAcc {
        /// Nothing taken yet (the bounds are set by each entity's first bones).
        ///
        /// # Safety
        /// The CPU supports AVX2 and the caller is compiled with it.
        #[inline(always)]
        unsafe fn empty() -> Self {
            // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
            unsafe {
                Self {
                    lo: _mm256_setzero_ps(),
                    hi: _mm256_setzero_ps(),
                    largest: _mm256_setzero_si256(),
                    scale_off: _mm256_setzero_si256(),
                    norm_off: _mm256_setzero_si256(),
                }
            }
        }

        /// Whether every bone taken passed the fast checks (what [`Avx2Acc::checks_pass`]
        /// decides for one entity, for all of them).
        ///
        /// # Safety
        /// As [`BatchAcc::empty`].
        #[inline(always)]
        unsafe fn checks_pass(&self) -> bool {
            // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
            unsafe {
                let (low_bits, high_bits) = UNIT_NORM_BITS;
                let in_range = _mm256_cmpeq_epi32(
                    _mm256_min_epu32(self.largest, _mm256_set1_epi32(MAX_COORDINATE_DOUBLED_BITS)),
                    self.largest,
                );
                let span = _mm256_set1_epi32(high_bits.wrapping_sub(low_bits) as i32);
                let norms_unit =
                    _mm256_cmpeq_epi32(_mm256_min_epu32(self.norm_off, span), self.norm_off);
                let scale_unit = _mm256_cmpeq_epi32(self.scale_off, _mm256_setzero_si256());
                lanes_pass(in_range, norms_unit, scale_unit)
            }
        }

        /// The bounds of the entity taken last: as [`Avx2Acc::bounds`].
        ///
        /// # Safety
        /// As [`BatchAcc::empty`].
        #[inline(always)]
        unsafe fn bounds(&self) -> (__m128, __m128) {
            // SAFETY: the caller's contract gives AVX2.
            unsafe { fold_halves(self.lo, self.hi) }
        }
    }

    /// Bones `i..i + 4`, taken into `acc` (`FIRST`: the entity's first group, see
    /// [`GroupAcc::take`]). With `STREAM` the rows are written with non-temporal stores:
    /// the two pairs of rotations as two 32-byte stores, the four translations packed into
    /// three 16-byte stores (no spill onto the next bone).
    ///
    /// PERF: the first group starts the accumulators from its own values rather than from
    /// identities set per entity (seven instructions an entity, and two registers that
    /// held the infinities across the batch).
    ///
    /// # Safety
    /// The CPU supports AVX2 (and the caller is compiled with it, for the intrinsics to be
    /// inlined); with `n` bones in the row, `i + 4 <= n`; `src` holds `n` `BoneTransform`s
    /// with `LAYOUT_MATCHES`, `reach` `n` splatted reaches (`4n` floats), `t_out` `n + 1`
    /// writable translations and `r_out` `n` writable rotations. With `STREAM`, `t_out +
    /// 3i` is 16-byte aligned and `r_out + 4i` 32-byte aligned.
    #[inline(always)]
    unsafe fn avx2_group<const FIRST: bool, const STREAM: bool, A: GroupAcc>(
        src: *const f32,
        reach: *const f32,
        t_out: *mut f32,
        r_out: *mut f32,
        i: usize,
        mut acc: A,
    ) -> A {
        // Each half's rotations, and its `a` and `b` (for the packed translation stores).
        // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
        let (mut rotations, mut loaded) = unsafe {
            (
                [_mm256_setzero_ps(); 2],
                [(_mm256_setzero_ps(), _mm256_setzero_ps()); 2],
            )
        };
        for (half, (q_out, ab_out)) in rotations.iter_mut().zip(&mut loaded).enumerate() {
            let j = i + 2 * half;
            // SAFETY: bones `j` and `j + 1` (both `< n`): their initialised bytes 0..40 are
            // inside `src`, and their output slots inside the rows; the 16-byte translation
            // store of bone `j + 1` spills onto the element after it, which `t_out` has.
            unsafe {
                let p = src.add(j * STRIDE);
                let q = _mm256_loadu2_m128(p.add(STRIDE), p);
                let a = _mm256_loadu2_m128(p.add(STRIDE + 4), p.add(4));
                let b = _mm256_loadu2_m128(p.add(STRIDE + 6), p.add(6));
                if STREAM {
                    debug_assert!((r_out.add(4 * j) as usize).is_multiple_of(32));
                    _mm256_stream_ps(r_out.add(4 * j), q);
                } else {
                    _mm256_storeu_ps(r_out.add(4 * j), q);
                    _mm_storeu_ps(t_out.add(3 * j), _mm256_castps256_ps128(a));
                    _mm_storeu_ps(t_out.add(3 * j + 3), _mm256_extractf128_ps::<1>(a));
                }
                *ab_out = (a, b);
                // Bone `j`'s reach in the low four lanes, bone `j + 1`'s in the high four.
                let r = _mm256_loadu_ps(reach.add(4 * j));
                if FIRST && half == 0 {
                    acc.take::<true>(a, b, r);
                } else {
                    acc.take::<false>(a, b, r);
                }
                *q_out = q;
            }
        }
        let [q01, q23] = rotations;
        if STREAM {
            let [(a01, _), (a23, b23)] = loaded;
            // SAFETY: the caller's contract: AVX2, and floats `3i..3i + 12` of `t_out` (bones
            // `i..i + 4`, inside the row) start 16-byte aligned.
            unsafe {
                let (a0, a1) = (_mm256_castps256_ps128(a01), _mm256_extractf128_ps::<1>(a01));
                let (a2, a3) = (_mm256_castps256_ps128(a23), _mm256_extractf128_ps::<1>(a23));
                // Bone `i + 2`'s bytes 24..40: its translation's z first.
                let z2 = _mm256_castps256_ps128(b23);
                let x1_high = _mm_castsi128_ps(_mm_slli_si128::<12>(_mm_castps_si128(a1)));
                let xyz3_high = _mm_castsi128_ps(_mm_slli_si128::<4>(_mm_castps_si128(a3)));
                // x0 y0 z0 x1 | y1 z1 x2 y2 | z2 x3 y3 z3: moves of the loaded bits only.
                let t0 = _mm_blend_ps::<0b1000>(a0, x1_high);
                let t1 = _mm_shuffle_ps::<0b01_00_10_01>(a1, a2);
                let t2 = _mm_blend_ps::<0b0001>(xyz3_high, z2);
                let out = t_out.add(3 * i);
                debug_assert!((out as usize).is_multiple_of(16));
                _mm_stream_ps(out, t0);
                _mm_stream_ps(out.add(4), t1);
                _mm_stream_ps(out.add(8), t2);
            }
        }
        // SAFETY: register-only intrinsics; the caller's contract gives AVX2.
        unsafe {
            // Per 128-bit half, lanes 0 and 1: bones (i, i + 2) in the low half, (i + 1,
            // i + 3) in the high one.
            let xy = _mm256_unpacklo_ps(q01, q23); // x_a x_b y_a y_b
            let zw = _mm256_unpackhi_ps(q01, q23); // z_a z_b w_a w_b
            let xy = _mm256_mul_ps(xy, xy);
            let zw = _mm256_mul_ps(zw, zw);
            let swap = |v: __m256| _mm256_permute_ps::<0b01_00_11_10>(v);
            // ((x² + y²) + z²) + w², the portable order, in lanes 0 and 1 of each half
            // (lanes 2 and 3 sum the same squares in another order and are ignored).
            let norms = _mm256_castps_si256(_mm256_add_ps(
                _mm256_add_ps(_mm256_add_ps(xy, swap(xy)), zw),
                swap(zw),
            ));
            acc.take_norms::<FIRST>(norms);
        }
        acc
    }

    /// Two bones per 256-bit register (bones `i` and `i + 1` in the low and high halves).
    ///
    /// # Safety
    /// The CPU supports AVX2, `LAYOUT_MATCHES`, `bones`, `reach` and `rotations` have the
    /// same non-zero length `n` and `translations` has `n + 1` elements.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2(
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass {
        // SAFETY: the caller's contract, and this function is compiled with AVX2.
        unsafe { avx2_inline::<false>(bones, reach, translations, rotations) }
    }

    /// [`avx2`] with streaming stores, fenced (for tests).
    ///
    /// # Safety
    /// As [`avx2`], and `translations` starts 16-byte aligned, `rotations` 32-byte aligned.
    #[cfg(test)]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2_streaming(
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass {
        // SAFETY: the caller's contract, and this function is compiled with AVX2.
        let pass = unsafe { avx2_inline::<true>(bones, reach, translations, rotations) };
        _mm_sfence();
        pass
    }

    /// [`avx2`] to be inlined into a caller compiled with AVX2.
    ///
    /// PERF: a `#[target_feature]` function cannot be `#[inline(always)]`, and LLVM found
    /// this one too large to inline on its own: the call, its spills and its result cost
    /// about 50 instructions per entity. Without the attribute it inlines into the AVX2
    /// recorder, whose feature set then covers the intrinsics. The checks are decided on
    /// the 256-bit accumulators (one mask of eight lanes), without reducing them first.
    ///
    /// With `STREAM`, the groups' rows are written with non-temporal stores (see
    /// [`avx2_group`]); the last `n % 4` bones take plain stores, and then the element
    /// after the row is put back as usual. Streaming stores are weakly ordered: the caller
    /// fences (`_mm_sfence`) before the frame is published.
    ///
    /// # Safety
    /// As [`avx2`]; call it only from code compiled with AVX2 (elsewhere the intrinsics are
    /// calls, correct but slow). With `STREAM`, `translations` starts 16-byte aligned and
    /// `rotations` 32-byte aligned.
    #[inline(always)]
    pub(in crate::history) unsafe fn avx2_inline<const STREAM: bool>(
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass {
        let n = bones.len();
        let src = bones.as_ptr().cast::<f32>();
        let reach_ptr = reach.as_ptr().cast::<f32>();
        let t_out = translations.as_mut_ptr().cast::<f32>();
        let r_out = rotations.as_mut_ptr().cast::<f32>();
        // Streamed groups write their rows exactly: only a tail spills. Not reading the
        // next row's first float then matters: it is a line about to be streamed, cold.
        let spills = !STREAM || !n.is_multiple_of(4);
        let spilled = if spills {
            // SAFETY: `translations` has `n + 1` elements: float `3n` is the first of the
            // last.
            unsafe { t_out.add(3 * n).read() }
        } else {
            0.0
        };
        // SAFETY (the groups): `4 * group + 4 <= n`, and the rest is the caller's contract.
        // The accumulators start empty when there is no group (register-only intrinsics).
        let mut acc = if n >= 4 {
            // SAFETY: as above.
            unsafe {
                avx2_group::<true, STREAM, _>(src, reach_ptr, t_out, r_out, 0, Avx2Acc::empty())
            }
        } else {
            // SAFETY: as above.
            unsafe { Avx2Acc::empty() }
        };
        for group in 1..n / 4 {
            // SAFETY: as above.
            acc = unsafe {
                avx2_group::<false, STREAM, _>(src, reach_ptr, t_out, r_out, 4 * group, acc)
            };
        }
        // SAFETY: the reads and writes of bones `i..n` are in bounds as in `sse2`; every
        // other intrinsic only touches registers, and the caller's contract gives AVX2.
        unsafe {
            let mut tail_ok = true;
            // PERF: tested as `n % 4` first, the common rigs (multiples of four bones) skip
            // the tail's bounds in two instructions rather than six.
            let mut i = n - n % 4;
            while !n.is_multiple_of(4) && i < n {
                // The bone in both halves: the accumulators take it as they take a group's.
                let p = src.add(i * STRIDE);
                let q = _mm_loadu_ps(p);
                let a = _mm256_loadu2_m128(p.add(4), p.add(4));
                let b = _mm256_loadu2_m128(p.add(6), p.add(6));
                let r = _mm256_loadu2_m128(reach_ptr.add(4 * i), reach_ptr.add(4 * i));
                _mm_storeu_ps(r_out.add(4 * i), q);
                _mm_storeu_ps(t_out.add(3 * i), _mm256_castps256_ps128(a));
                acc.add(a, b, r);
                tail_ok &= tail_norm_ok(q);
                i += 1;
            }
            if spills {
                t_out.add(3 * n).write(spilled);
            }
            let clean = acc.checks_pass() && tail_ok;
            let (lo, hi) = acc.bounds();
            BonePass {
                lo: Vec3A::from(lo),
                hi: Vec3A::from(hi),
                clean,
            }
        }
    }

    /// The bone pass of `bounds.len()` entities of one rig, `4 * groups` bones each, whose
    /// rows follow one another in the lanes (a batch plan's segment, see
    /// `history/record.rs`): rows copied as [`avx2_inline`] copies them, each entity's
    /// (unpadded) bounds into `bounds`, and the fast checks of every bone into `checks`,
    /// which carry on across segments: the batch is decided once, by
    /// [`batch_checks_pass`].
    ///
    /// Without `STREAM`, the last translation store spills onto the element after the
    /// segment's rows (as [`avx2_inline`] does), which the caller puts back if it belongs to
    /// no entity recorded after this segment.
    ///
    /// # Safety
    /// The CPU supports AVX2 and the caller is compiled with it; `LAYOUT_MATCHES`; at least
    /// one group; `src` holds `bounds.len() * 4 * groups` bones, `reach` `4 * groups`
    /// splatted reaches, `r_out` as many writable rotations and `t_out` as many writable
    /// translations and one more. With `STREAM`, `t_out` is 16-byte aligned and
    /// `r_out` 32-byte aligned.
    ///
    /// `GROUPS`, when not zero, is `groups` known where it is called: the entity's groups
    /// are then written out one after another, with no loop.
    ///
    /// PERF: the common rigs (16 and 20 bones) take 4 and 5; with a loop, setting it up
    /// and counting cost about 20 instructions an entity.
    #[inline(always)]
    pub(in crate::history) unsafe fn avx2_segment<const STREAM: bool, const GROUPS: usize>(
        mut src: *const f32,
        reach: *const f32,
        mut t_out: *mut f32,
        mut r_out: *mut f32,
        groups: usize,
        bounds: &mut [[Vec3A; 2]],
        checks: &mut BatchAcc,
    ) {
        debug_assert!(GROUPS == 0 || GROUPS == groups);
        let groups = if GROUPS == 0 { groups } else { GROUPS };
        let mut acc = *checks;
        for entity in bounds {
            // SAFETY: the caller's contract: each entity's bones, reaches and rows are in
            // bounds (`4 * groups` of them), AVX2, and with `STREAM` the alignments (every
            // row is a whole number of groups of four, so each starts aligned too).
            unsafe {
                let group_at = |acc: BatchAcc, group: usize| {
                    avx2_group::<false, STREAM, _>(src, reach, t_out, r_out, 4 * group, acc)
                };
                acc = avx2_group::<true, STREAM, _>(src, reach, t_out, r_out, 0, acc);
                if GROUPS == 0 {
                    for group in 1..groups {
                        acc = group_at(acc, group);
                    }
                } else {
                    // Up to five groups written out (`GROUPS` is a constant: the tests on it
                    // fold away). PERF: as a loop of constant length LLVM kept the loop.
                    if GROUPS > 1 {
                        acc = group_at(acc, 1);
                    }
                    if GROUPS > 2 {
                        acc = group_at(acc, 2);
                    }
                    if GROUPS > 3 {
                        acc = group_at(acc, 3);
                    }
                    if GROUPS > 4 {
                        acc = group_at(acc, 4);
                    }
                    for group in 5..GROUPS {
                        acc = group_at(acc, group);
                    }
                }
                let (lo, hi) = acc.bounds();
                *entity = [Vec3A::from(lo), Vec3A::from(hi)];
                src = src.add(4 * groups * STRIDE);
                t_out = t_out.add(12 * groups);
                r_out = r_out.add(16 * groups);
            }
        }
        *checks = acc;
    }

    /// [`avx2_segment`] over `bounds.len()` entities of `4 * groups` bones (the loop form,
    /// or `GROUPS` written out), its checks decided alone (for tests).
    ///
    /// # Safety
    /// As [`avx2_segment`] (`bones` and `reach` hold what `src` and `reach` must); with
    /// `STREAM` the caller fences.
    #[cfg(test)]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2_segment_alone<const STREAM: bool, const GROUPS: usize>(
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
        groups: usize,
        bounds: &mut [[Vec3A; 2]],
    ) -> bool {
        assert!(
            bones.len() == bounds.len() * 4 * groups
                && reach.len() == 4 * groups
                && rotations.len() == bones.len()
                && translations.len() == bones.len() + 1
        );
        // SAFETY: the caller's contract, the lengths checked above, and AVX2 here.
        unsafe {
            let mut checks = BatchAcc::empty();
            avx2_segment::<STREAM, GROUPS>(
                bones.as_ptr().cast(),
                reach.as_ptr().cast(),
                translations.as_mut_ptr().cast(),
                rotations.as_mut_ptr().cast(),
                groups,
                bounds,
                &mut checks,
            );
            checks.checks_pass()
        }
    }

    /// The checks of a batch before its first bone: nothing accumulated.
    ///
    /// # Safety
    /// The CPU supports AVX2 and the caller is compiled with it.
    #[inline(always)]
    pub(in crate::history) unsafe fn batch_checks() -> BatchAcc {
        // SAFETY: the caller's contract.
        unsafe { BatchAcc::empty() }
    }

    /// Whether every bone of every segment passed the fast checks and has unit scale (the
    /// `clean` of [`avx2_inline`] over the whole batch).
    ///
    /// # Safety
    /// The CPU supports AVX2 and the caller is compiled with it.
    #[inline(always)]
    pub(in crate::history) unsafe fn batch_checks_pass(checks: &BatchAcc) -> bool {
        // SAFETY: the caller's contract.
        unsafe { checks.checks_pass() }
    }

    /// The bit patterns of the smallest and largest `f32` `n` for which `|n - 1| <=`
    /// [`ROTATION_NORM_TOLERANCE`] in `f32` arithmetic: the unit-norm check of the AVX2
    /// kernel as two integer bounds (no subtraction per group).
    ///
    /// Exact for every sum of squares: between 0.5 and 2, `n - 1` is exact (Sterbenz), so
    /// the accepted `n` are one interval around 1; below 0.5 and above 2, `|n - 1| >= 0.5`
    /// rejects (and NaN, whose bits are above infinity's, fails the upper bound). The
    /// tests check it against the float computation.
    pub(super) const UNIT_NORM_BITS: (u32, u32) = {
        let mut low = 1.0_f32.to_bits();
        while unit_norm_f32(f32::from_bits(low - 1)) {
            low -= 1;
        }
        let mut high = 1.0_f32.to_bits();
        while unit_norm_f32(f32::from_bits(high + 1)) {
            high += 1;
        }
        (low, high)
    };

    /// `|n - 1| <= ROTATION_NORM_TOLERANCE`, as the other kernels compute it.
    pub(super) const fn unit_norm_f32(n: f32) -> bool {
        (n - 1.0).abs() <= ROTATION_NORM_TOLERANCE
    }
}

#[cfg(test)]
pub(super) mod tests {
    use glam::{Quat, Vec3};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    use super::*;
    use crate::math::{MAX_EXTENT, MIN_EXTENT};

    /// Guard values around each output row: a kernel must not write outside its row.
    const GUARD: usize = 3;
    const SENTINEL_T: [f32; 3] = [-7.5, -7.5, -7.5];
    const SENTINEL_R: [f32; 4] = [9.25, 9.25, 9.25, 9.25];

    fn random_unit_quat(rng: &mut Pcg64Mcg) -> Quat {
        loop {
            let v = Vec4::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            if v.length_squared() > 0.01 {
                return Quat::from_vec4(v.normalize());
            }
        }
    }

    /// A float from a list of values that sit on or next to a decision boundary.
    fn edge_value(rng: &mut Pcg64Mcg) -> f32 {
        const EDGES: [f32; 14] = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            MAX_COORDINATE,
            -MAX_COORDINATE,
            2.0e6,
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            f32::MIN_POSITIVE,
            MIN_EXTENT,
            MAX_EXTENT,
        ];
        let v = EDGES[rng.random_range(0..EDGES.len())];
        match rng.random_range(0..4) {
            0 => v.next_up(),
            1 => v.next_down(),
            _ => v,
        }
    }

    /// A rotation whose squared norm sits within a few ulps of the tolerance's edge.
    fn borderline_quat(rng: &mut Pcg64Mcg) -> Quat {
        let q = random_unit_quat(rng);
        let sign = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
        let mut s = (1.0 + sign * ROTATION_NORM_TOLERANCE).sqrt();
        for _ in 0..rng.random_range(0..6) {
            s = if rng.random_bool(0.5) {
                s.next_up()
            } else {
                s.next_down()
            };
        }
        Quat::from_vec4(Vec4::from(q) * s)
    }

    /// A random bone, valid and unit-scale, or (`adversarial`, 30 %) one with a component
    /// on or next to a decision boundary, a borderline norm, or a valid non-unit scale.
    pub(in crate::history) fn random_bone(rng: &mut Pcg64Mcg, adversarial: bool) -> BoneTransform {
        let mut bone = BoneTransform::new(
            Vec3::new(
                rng.random_range(-1000.0..1000.0),
                rng.random_range(-50.0..50.0),
                rng.random_range(-1000.0..1000.0),
            ),
            random_unit_quat(rng),
        );
        if !adversarial || rng.random_bool(0.7) {
            return bone;
        }
        match rng.random_range(0..5) {
            0 => bone.translation[rng.random_range(0..3)] = edge_value(rng),
            1 => {
                let mut v = Vec4::from(bone.rotation).to_array();
                v[rng.random_range(0..4)] = edge_value(rng);
                bone.rotation = Quat::from_array(v);
            }
            2 => bone.scale[rng.random_range(0..3)] = edge_value(rng),
            3 => bone.rotation = borderline_quat(rng),
            _ => bone.scale = Vec3::splat(rng.random_range(0.5..2.0)),
        }
        bone
    }

    /// Runs `kernel` into rows with guards on both sides; returns the rows and the pass.
    fn run(
        kernel: Kernel,
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
    ) -> (Vec<StoredTranslation>, Vec<StoredRotation>, BonePass) {
        let n = bones.len();
        let mut t = vec![SENTINEL_T; n + 2 * GUARD];
        let mut r = vec![SENTINEL_R; n + 2 * GUARD];
        let pass = kernel.run(
            bones,
            reach,
            // The element after the row may be written, but must end as it was.
            &mut t[GUARD..GUARD + n + 1],
            &mut r[GUARD..GUARD + n],
        );
        for k in (0..GUARD).chain(GUARD + n..n + 2 * GUARD) {
            assert_eq!(
                t[k], SENTINEL_T,
                "{kernel:?} wrote outside the translation row"
            );
            assert_eq!(
                r[k], SENTINEL_R,
                "{kernel:?} wrote outside the rotation row"
            );
        }
        (t, r, pass)
    }

    fn bits<const N: usize>(rows: &[[f32; N]]) -> Vec<[u32; N]> {
        rows.iter().map(|row| row.map(f32::to_bits)).collect()
    }

    /// The padded bounds as bits: what the recorder stores.
    fn stored_bounds(pass: &BonePass) -> [u32; 6] {
        let b = crate::math::Aabb::new(pass.lo.into(), pass.hi.into()).padded();
        let [a, c, d] = b.min.to_array().map(f32::to_bits);
        let [e, f, g] = b.max.to_array().map(f32::to_bits);
        [a, c, d, e, f, g]
    }

    #[test]
    fn every_kernel_stores_bounds_and_decides_like_the_portable_one() {
        let kernels = Kernel::available();
        #[cfg(target_arch = "x86_64")]
        assert!(
            kernels.contains(&Kernel::Sse2),
            "BoneTransform's layout changed: the x86_64 kernels are off"
        );
        let mut rng = Pcg64Mcg::seed_from_u64(0x5eed_b0e5);
        let (mut clean, mut unclean) = (0, 0);
        for case in 0..20_000 {
            let n = rng.random_range(1..=23);
            let adversarial = case % 2 == 1;
            let bones: Vec<BoneTransform> =
                (0..n).map(|_| random_bone(&mut rng, adversarial)).collect();
            let reach: Vec<[f32; 4]> = (0..n)
                .map(|_| match rng.random_range(0..4) {
                    0 => [0.0; 4],
                    _ => [rng.random_range(0.0..1.5); 4],
                })
                .collect();
            let (t0, r0, p0) = run(Kernel::Portable, &bones, &reach);
            if p0.clean {
                clean += 1;
                // Clean means valid, unit-scale bones, except that the fast norm sum and
                // `validate`'s (glam's `length_squared`, summed in another order) may round
                // a rotation on the tolerance's edge to different sides of it.
                for b in &bones {
                    assert_eq!(b.scale, Vec3::ONE);
                    match b.validate() {
                        Ok(()) => {}
                        Err(crate::math::TransformError::RotationNotNormalized) => {
                            let off = (b.rotation.length_squared() - 1.0).abs();
                            assert!(off - ROTATION_NORM_TOLERANCE < 1.0e-6, "{b:?}");
                        }
                        Err(e) => panic!("clean pass over an invalid bone: {e} {b:?}"),
                    }
                }
            } else {
                unclean += 1;
            }
            for &kernel in &kernels[1..] {
                let (t, r, p) = run(kernel, &bones, &reach);
                assert_eq!(bits(&t), bits(&t0), "{kernel:?} translations, case {case}");
                assert_eq!(bits(&r), bits(&r0), "{kernel:?} rotations, case {case}");
                assert_eq!(
                    p.clean, p0.clean,
                    "{kernel:?} decision, case {case}: {bones:?}"
                );
                if p.clean {
                    assert_eq!(stored_bounds(&p), stored_bounds(&p0), "{kernel:?} bounds");
                }
            }
        }
        // Both kinds of input were exercised.
        assert!(
            clean > 8_000 && unclean > 3_000,
            "{clean} clean, {unclean} not"
        );
    }

    /// The AVX2 pass with streaming stores writes what it writes with plain ones, and
    /// nothing outside the row (rows aligned as the lanes align them).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn streaming_stores_write_the_same_rows() {
        use super::super::lane::Lane;
        if !Kernel::available().contains(&Kernel::Avx2) {
            return;
        }
        // Four elements of guard: 48 bytes of translations, 64 of rotations, so the rows
        // start 16- and 64-byte aligned in the cache-line-aligned lanes.
        const AHEAD: usize = 4;
        let mut rng = Pcg64Mcg::seed_from_u64(0x57_4ea3);
        for case in 0..4_000 {
            let n = rng.random_range(1..=23);
            let adversarial = case % 3 == 1;
            let bones: Vec<BoneTransform> =
                (0..n).map(|_| random_bone(&mut rng, adversarial)).collect();
            let reach: Vec<[f32; 4]> = (0..n).map(|_| [rng.random_range(0.0..1.5); 4]).collect();
            let (t0, r0, p0) = run(Kernel::Avx2, &bones, &reach);
            let mut t = Lane::filled(n + 2 * AHEAD, SENTINEL_T);
            let mut r = Lane::filled(n + 2 * AHEAD, SENTINEL_R);
            // SAFETY: AVX2 is available (checked above); the slices are one bone each (the
            // translations one more) and start aligned as said.
            let p = unsafe {
                x86::avx2_streaming(
                    &bones,
                    &reach,
                    &mut t[AHEAD..AHEAD + n + 1],
                    &mut r[AHEAD..AHEAD + n],
                )
            };
            assert_eq!(
                bits(&t[AHEAD..AHEAD + n]),
                bits(&t0[GUARD..GUARD + n]),
                "case {case}: {n} translations"
            );
            assert_eq!(
                bits(&r[AHEAD..AHEAD + n]),
                bits(&r0[GUARD..GUARD + n]),
                "case {case}: {n} rotations"
            );
            for k in (0..AHEAD).chain(AHEAD + n..n + 2 * AHEAD) {
                assert_eq!(
                    t[k], SENTINEL_T,
                    "case {case}: wrote outside the translations"
                );
                assert_eq!(r[k], SENTINEL_R, "case {case}: wrote outside the rotations");
            }
            assert_eq!(p.clean, p0.clean, "case {case}: decision");
            if p.clean {
                assert_eq!(stored_bounds(&p), stored_bounds(&p0), "case {case}: bounds");
            }
        }
    }

    /// The batch kernel (`avx2_segment`: several entities' rows back to back, the checks
    /// decided once) writes each entity's rows and bounds as the per-entity kernel does,
    /// and passes a batch exactly when every entity passes: loop and written-out forms,
    /// plain and streaming stores, clean, borderline and broken bones.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_batch_kernel_records_and_decides_like_one_entity_at_a_time() {
        use super::super::lane::Lane;
        use glam::Vec3A;
        if !Kernel::available().contains(&Kernel::Avx2) {
            return;
        }
        let mut rng = Pcg64Mcg::seed_from_u64(0x5e9_3e47);
        let (mut passed, mut failed) = (0, 0);
        for case in 0..3_000 {
            let groups = [1, 4, 5, 6][case % 4];
            let n = 4 * groups;
            let entities = rng.random_range(1..=5);
            // Mostly clean batches, a few with one entity's bones adversarial.
            let bad_one = (case % 3 == 0).then(|| rng.random_range(0..entities));
            let bones: Vec<BoneTransform> = (0..entities * n)
                .map(|i| random_bone(&mut rng, bad_one == Some(i / n)))
                .collect();
            let reach: Vec<[f32; 4]> = (0..n).map(|_| [rng.random_range(0.0..1.5); 4]).collect();
            // Entity by entity.
            let mut want_t = Vec::new();
            let mut want_r = Vec::new();
            let mut want_bounds = Vec::new();
            let mut all_clean = true;
            for own in bones.chunks_exact(n) {
                let (t, r, pass) = run(Kernel::Avx2, own, &reach);
                want_t.extend_from_slice(&t[GUARD..GUARD + n]);
                want_r.extend_from_slice(&r[GUARD..GUARD + n]);
                want_bounds.push(stored_bounds(&pass));
                all_clean &= pass.clean;
            }
            for stream in [false, true] {
                // Rows start aligned (the lanes start on a cache line), as in a history.
                let mut t = Lane::filled(entities * n + 1, SENTINEL_T);
                let mut r = Lane::filled(entities * n, SENTINEL_R);
                let mut bounds = vec![[Vec3A::ZERO; 2]; entities];
                let spilled = t[entities * n];
                // SAFETY: AVX2 is available (checked above); the lengths are the kernel's,
                // the rows aligned, and the streaming stores fenced below.
                let clean = unsafe {
                    let (t, r, b) = (&mut t[..], &mut r[..], &mut bounds[..]);
                    match (stream, groups) {
                        (false, 4) => {
                            x86::avx2_segment_alone::<false, 4>(&bones, &reach, t, r, 4, b)
                        }
                        (false, 5) => {
                            x86::avx2_segment_alone::<false, 5>(&bones, &reach, t, r, 5, b)
                        }
                        (false, _) => {
                            x86::avx2_segment_alone::<false, 0>(&bones, &reach, t, r, groups, b)
                        }
                        (true, 4) => x86::avx2_segment_alone::<true, 4>(&bones, &reach, t, r, 4, b),
                        (true, _) => {
                            x86::avx2_segment_alone::<true, 0>(&bones, &reach, t, r, groups, b)
                        }
                    }
                };
                std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
                assert_eq!(clean, all_clean, "case {case}, stream {stream}: decision");
                assert_eq!(
                    bits(&t[..entities * n]),
                    bits(&want_t),
                    "case {case}: translations"
                );
                assert_eq!(bits(&r[..]), bits(&want_r), "case {case}: rotations");
                if stream {
                    assert_eq!(
                        t[entities * n],
                        spilled,
                        "case {case}: a streamed row spilled"
                    );
                }
                if clean {
                    for (k, [lo, hi]) in bounds.iter().enumerate() {
                        let got = BonePass {
                            lo: *lo,
                            hi: *hi,
                            clean,
                        };
                        assert_eq!(
                            stored_bounds(&got),
                            want_bounds[k],
                            "case {case}: bounds {k}"
                        );
                    }
                }
            }
            if all_clean {
                passed += 1;
            } else {
                failed += 1;
            }
        }
        assert!(
            passed > 1_500 && failed > 300,
            "{passed} clean batches, {failed} not"
        );
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_unit_norm_bounds_decide_like_the_float_check() {
        use super::x86::{UNIT_NORM_BITS, unit_norm_f32};
        let (low, high) = UNIT_NORM_BITS;
        let by_bits = |bits: u32| (low..=high).contains(&bits);
        // Every float from well below to well above the accepted interval, bit by bit.
        let (from, to) = (0.999_f32.to_bits(), 1.001_f32.to_bits());
        for bits in from..=to {
            assert_eq!(
                by_bits(bits),
                unit_norm_f32(f32::from_bits(bits)),
                "{bits:#x}"
            );
        }
        assert!(by_bits(1.0_f32.to_bits()) && low < 1.0_f32.to_bits() && high > 1.0_f32.to_bits());
        // And a spread of everything else a sum of squares can be, NaN of both signs too.
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        for _ in 0..200_000 {
            let bits: u32 = rng.random();
            let norm = f32::from_bits(bits);
            if norm.is_sign_negative() && !norm.is_nan() {
                continue;
            }
            assert_eq!(by_bits(bits), unit_norm_f32(norm), "{bits:#x}");
        }
    }

    #[test]
    fn a_scale_of_minus_one_is_not_unit() {
        // `-1.0 ^ 1.0` is -0.0 as a float, equal to zero: the scale check must compare bits.
        for kernel in Kernel::available() {
            for n in [1, 4, 5] {
                let mut bones = vec![BoneTransform::IDENTITY; n];
                bones[n - 1].scale.y = -1.0;
                let (_, _, pass) = run(kernel, &bones, &vec![[0.5; 4]; n]);
                assert!(!pass.clean, "{kernel:?} with {n} bones");
            }
        }
    }

    #[test]
    fn each_fast_check_rejects_in_every_position() {
        // One bad component at every bone position and every lane, for every kernel.
        for kernel in Kernel::available() {
            for n in [1, 2, 3, 4, 7, 8, 9, 16, 20] {
                for bone in 0..n {
                    for lane in 0..10 {
                        let mut bones = vec![BoneTransform::IDENTITY; n];
                        let b = &mut bones[bone];
                        match lane {
                            0..3 => b.translation[lane] = MAX_COORDINATE.next_up(),
                            3..7 => {
                                let mut v = b.rotation.to_array();
                                v[lane - 3] = f32::NAN;
                                b.rotation = Quat::from_array(v);
                            }
                            _ => b.scale[lane - 7] = 1.0_f32.next_down(),
                        }
                        let (_, _, pass) = run(kernel, &bones, &vec![[0.25; 4]; n]);
                        assert!(!pass.clean, "{kernel:?} n {n} bone {bone} lane {lane}");
                    }
                    let mut bones = vec![BoneTransform::IDENTITY; n];
                    bones[bone].translation = Vec3::splat(-MAX_COORDINATE);
                    let (_, _, pass) = run(kernel, &bones, &vec![[0.25; 4]; n]);
                    assert!(pass.clean, "{kernel:?}: the range edge itself is accepted");
                }
            }
        }
    }
}
