//! The x86_64 bone passes (SSE2 and AVX2). Both read a `BoneTransform` (rotation at byte 0, translation at
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

use super::super::portable::unit_norm;
use crate::history::{BonePass, StoredRotation, StoredTranslation};
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
pub(crate) struct BatchAcc {
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
    pub(super) unsafe fn empty() -> Self {
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
    pub(super) unsafe fn checks_pass(&self) -> bool {
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

/// The AVX2 pass: two bones per 256-bit register (bones `i` and `i + 1` in the low and
/// high halves), to be inlined into a caller compiled with AVX2.
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
/// The CPU supports AVX2, `LAYOUT_MATCHES`, `bones`, `reach` and `rotations` have the
/// same non-zero length `n` and `translations` has `n + 1` elements; call it only from
/// code compiled with AVX2 (elsewhere the intrinsics are calls, correct but slow). With
/// `STREAM`, `translations` starts 16-byte aligned and `rotations` 32-byte aligned.
#[inline(always)]
pub(super) unsafe fn avx2_inline<const STREAM: bool>(
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
        unsafe { avx2_group::<true, STREAM, _>(src, reach_ptr, t_out, r_out, 0, Avx2Acc::empty()) }
    } else {
        // SAFETY: as above.
        unsafe { Avx2Acc::empty() }
    };
    for group in 1..n / 4 {
        // SAFETY: as above.
        acc =
            unsafe { avx2_group::<false, STREAM, _>(src, reach_ptr, t_out, r_out, 4 * group, acc) };
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
/// [`BatchAcc::checks_pass`].
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
pub(super) unsafe fn avx2_segment<const STREAM: bool, const GROUPS: usize>(
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

/// The bit patterns of the smallest and largest `f32` `n` for which `|n - 1| <=`
/// [`ROTATION_NORM_TOLERANCE`] in `f32` arithmetic: the unit-norm check of the AVX2
/// kernel as two integer bounds (no subtraction per group).
///
/// Exact for every sum of squares: between 0.5 and 2, `n - 1` is exact (Sterbenz), so
/// the accepted `n` are one interval around 1; below 0.5 and above 2, `|n - 1| >= 0.5`
/// rejects (and NaN, whose bits are above infinity's, fails the upper bound). The
/// tests check it against the float computation.
const UNIT_NORM_BITS: (u32, u32) = {
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
const fn unit_norm_f32(n: f32) -> bool {
    (n - 1.0).abs() <= ROTATION_NORM_TOLERANCE
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    use super::{UNIT_NORM_BITS, unit_norm_f32};

    #[test]
    fn the_unit_norm_bounds_decide_like_the_float_check() {
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
}
