//! The per-bone pass of recording a tick: copy each bone's pose into its ring row, check it
//! with fast conservative tests, and grow the entity's bounds, in one sweep over the input.
//!
//! The kernels that compute it live in `crate::simd` ([`crate::simd::Isa::bone_pass`]:
//! portable glam, SSE2 one bone per register, AVX2 two bones per register), chosen once
//! per history; they compute exactly the same thing.
//!
//! What "the same" means: the stored translations and rotations are copies (bit for bit), the
//! bounds are minimums and maximums of the same `translation ± reach` sums (they can differ
//! only in the sign of a zero, which the caller's padding erases), and `clean` is the same
//! decision: every translation component within [`MAX_COORDINATE`](crate::math::MAX_COORDINATE)
//! (NaN fails), every scale exactly one, and every rotation's squared norm within
//! [`ROTATION_NORM_TOLERANCE`](crate::math::ROTATION_NORM_TOLERANCE) of one, computed as
//! `((x² + y²) + z²) + w²` for bones in whole groups of four and as glam's
//! `length_squared` for the last `n % 4` bones (the sums the recording code has always
//! used, so accept/reject decisions do not move). A bone that fails a fast test is not
//! necessarily invalid: the caller then runs the precise [`BoneTransform::validate`] on
//! every bone.
//!
//! PERF: this is most of a tick's recording. The SIMD kernels are hand-written because the
//! portable version loads each `Vec3` field lane by lane, recomputes the norms through a
//! 4x4 transpose per group and stores the 12-byte translations piecewise: about 45
//! instructions per bone under callgrind; the SSE2 kernel reads each bone as three
//! overlapping 16-byte loads and writes it as two 16-byte stores, and the AVX2 kernel
//! halves the arithmetic.

use glam::Vec3A;

use super::{StoredRotation, StoredTranslation};
use crate::math::BoneTransform;

/// What the pass found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BonePass {
    /// Minimum corner of the bones' reach spheres (unit scale assumed).
    pub(crate) lo: Vec3A,
    /// Maximum corner.
    pub(crate) hi: Vec3A,
    /// Every bone passed the fast checks and has unit scale: `lo`/`hi` are the bounds and
    /// nothing else needs checking.
    pub(crate) clean: bool,
}

/// A bone pass as a recorder takes it: one kernel's [`crate::simd::Isa::bone_pass`]
/// (bones, their reach, the translation and rotation lanes to fill; the translation lane
/// has one element more).
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
pub(crate) fn assert_one_length(
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

#[cfg(test)]
#[path = "bone_pass_tests.rs"]
pub(super) mod tests;
