//! The portable kernels: glam and plain Rust, any target, and the reference every other
//! kernel is tested against.

use glam::{BVec3A, BVec4A, Mat4, Vec3A, Vec4};

use super::Isa;
use crate::history::{BonePass, StoredRotation, StoredTranslation, assert_one_length};
use crate::math::{BoneTransform, MAX_COORDINATE, ROTATION_NORM_TOLERANCE};

/// The portable kernels (any CPU).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

impl Isa for Portable {
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
        let n = bones.len();
        // The element after the row (`translations[n]`) is not written.
        bone_pass(bones, reach, &mut translations[..n], rotations)
    }

    #[inline(always)]
    unsafe fn store_corner(self, at: *mut f32, v: Vec3A) {
        // SAFETY: the caller's contract: four floats from `at`.
        unsafe {
            at.write(v.x);
            at.add(1).write(v.y);
            at.add(2).write(v.z);
        }
    }
}

/// [`Isa`]'s batch kernels for an instruction set without a batch form of the bone pass:
/// [`Isa::bone_segment`] as one [`Isa::bone_pass`] per entity, the checks whether every
/// entity's pass was clean. Expands to the items of an `impl Isa`.
macro_rules! entity_by_entity_batches {
    () => {
        /// Whether every bone so far passed.
        type BatchChecks = bool;

        #[inline(always)]
        fn batch_checks(self) -> bool {
            true
        }

        #[inline(always)]
        unsafe fn bone_segment<const STREAM: bool, const GROUPS: usize>(
            self,
            src: *const $crate::math::BoneTransform,
            reach: *const [f32; 4],
            t_out: *mut $crate::history::StoredTranslation,
            r_out: *mut $crate::history::StoredRotation,
            groups: usize,
            bounds: &mut [[glam::Vec3A; 2]],
            checks: &mut bool,
        ) {
            // SAFETY: the caller's contract.
            unsafe {
                $crate::simd::segment_entity_by_entity(
                    self, src, reach, t_out, r_out, groups, bounds, checks,
                );
            }
        }

        #[inline(always)]
        fn batch_checks_pass(self, checks: &bool) -> bool {
            *checks
        }
    };
}
pub(super) use entity_by_entity_batches;

/// [`Isa`]'s eight-bone cull for an instruction set without eight-lane registers: two
/// four-lane culls (`history::cull4`). Expands to the items of an `impl Isa`.
macro_rules! four_lane_culls {
    () => {
        type Line8 = ($crate::history::LineLanes, f32, f32);

        #[inline(always)]
        fn line8(self, line: &$crate::history::LineLanes, t_max: f32, alpha: f32) -> Self::Line8 {
            (*line, t_max, alpha)
        }

        #[inline(always)]
        fn cull8<const SINGLE: bool>(
            self,
            ta: &[$crate::history::StoredTranslation; 8],
            tb: &[$crate::history::StoredTranslation; 8],
            reach: &[f32; 8],
            &(ref line, t_max, alpha): &Self::Line8,
        ) -> u32 {
            use $crate::history::StoredTranslation;
            let half = |k: usize| {
                let four = |rows: &[StoredTranslation; 8]| -> [StoredTranslation; 4] {
                    std::array::from_fn(|j| rows[4 * k + j])
                };
                let reach: [f32; 4] = std::array::from_fn(|j| reach[4 * k + j]);
                $crate::history::cull4::<SINGLE>(&four(ta), &four(tb), &reach, line, t_max, alpha)
            };
            half(0) | half(1) << 4
        }
    };
}
pub(super) use four_lane_culls;

/// Whether a squared norm is close enough to one, lane by lane.
#[inline]
pub(super) fn unit_norm(norm_squared: Vec4) -> BVec4A {
    (norm_squared - Vec4::ONE)
        .abs()
        .cmple(Vec4::splat(ROTATION_NORM_TOLERANCE))
}

/// The bone pass in glam: the rows exactly as long as `bones`.
#[inline]
pub(super) fn bone_pass(
    bones: &[BoneTransform],
    reach: &[[f32; 4]],
    translations: &mut [StoredTranslation],
    rotations: &mut [StoredRotation],
) -> BonePass {
    let n = bones.len();
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

/// `into[i] = min(into[i], from[i])`; `<` rather than `f32::min` because boxes hold no NaN
/// and the plain comparison compiles to one `minss`/`minps`.
#[inline]
pub(crate) fn min_into<'a>(into: impl IntoIterator<Item = &'a mut f32>, from: &[f32]) {
    for (a, &b) in into.into_iter().zip(from) {
        // An unconditional store, so that the loop vectorizes.
        *a = if b < *a { b } else { *a };
    }
}

/// [`super::pair_lanes`] lane by lane.
#[cfg_attr(
    all(target_arch = "x86_64", not(feature = "portable"), not(test)),
    expect(dead_code, reason = "x86_64 builds shuffle (the tests compare both)")
)]
#[inline(always)]
pub(super) fn pair_lanes(f: &[f32; 12]) -> [Vec4; 3] {
    let lane = |k: usize| Vec4::new(f[k], f[6 + k], f[3 + k], f[9 + k]);
    [lane(0), lane(1), lane(2)]
}

/// [`super::lane_minimums`] plane by plane.
#[cfg_attr(
    all(target_arch = "x86_64", not(feature = "portable"), not(test)),
    expect(dead_code, reason = "x86_64 builds shuffle (the tests compare both)")
)]
#[inline(always)]
pub(super) fn lane_minimums(planes: [Vec4; 6]) -> [f32; 6] {
    planes.map(Vec4::min_element)
}

/// [`super::load_rows`] from slices.
#[cfg_attr(
    all(target_arch = "x86_64", not(feature = "portable"), not(test)),
    expect(
        dead_code,
        reason = "x86_64 builds load whole registers (the tests compare both)"
    )
)]
#[inline(always)]
pub(super) fn load_rows(f: &[f32; 12]) -> [Vec4; 3] {
    let row = |k: usize| Vec4::from_slice(&f[4 * k..4 * k + 4]);
    [row(0), row(1), row(2)]
}

/// [`super::transpose`] element by element.
#[cfg_attr(
    all(target_arch = "x86_64", not(feature = "portable"), not(test)),
    expect(dead_code, reason = "x86_64 builds shuffle (the tests compare both)")
)]
#[inline(always)]
pub(super) fn transpose(rows: [Vec4; 3]) -> [Vec4; 3] {
    let f = rows.map(|row| row.to_array());
    let f = f.as_flattened();
    let lane = |axis: usize| Vec4::from_array(std::array::from_fn(|k| f[3 * k + axis]));
    [lane(0), lane(1), lane(2)]
}
