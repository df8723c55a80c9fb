//! Transforms, bounds and the few numeric routines everything else builds on.
//!
//! What lives here: the rigid [`Pose`] used for hitbox offsets and rewound hitbox placement,
//! the scaled [`BoneTransform`] the server records every tick, the axis-aligned [`Aabb`] of
//! the broadphase, and interpolation (`lerp`/shortest-path `slerp`).
//!
//! Determinism: the client and the server must compute the same geometry. Everything here
//! is plain IEEE-754 arithmetic (`+ - * /` and `sqrt` are correctly rounded everywhere) except
//! the transcendental calls of [`slerp`] for turns above 51.7 degrees in one blend (smaller
//! turns use a power series), which go through one private module (`det`) only, so a build
//! that needs bit-identical results across platforms can swap them for a portable libm
//! there.

use glam::{Quat, Vec3, Vec3A, Vec4};

/// Largest coordinate magnitude accepted anywhere (metres, or whatever unit the game uses).
///
/// Beyond a million units an `f32` cannot resolve centimetres any more, so a larger value is
/// treated as corrupt input rather than a position.
pub const MAX_COORDINATE: f32 = 1.0e6;

/// Largest scale factor or shape dimension accepted.
pub const MAX_EXTENT: f32 = 1.0e4;

/// Smallest scale factor or shape dimension accepted (a tenth of a millimetre in metres).
///
/// Smaller values are corrupt input, not geometry: a subnormal radius would turn every
/// normal computed from it into infinities.
pub const MIN_EXTENT: f32 = 1.0e-4;

/// How far a rotation's length may stray from 1 before it is rejected.
///
/// The same tolerance as glam's `is_normalized` (on the squared length), so any quaternion
/// glam itself considers normalized is accepted.
pub const ROTATION_NORM_TOLERANCE: f32 = 2.0e-4;

/// A rigid transform: a rotation followed by a translation.
///
/// Hitbox offsets relative to their bone and rewound hitbox placements are poses.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Pose {
    /// Where the local origin lands in the parent space.
    pub translation: Vec3,
    /// Orientation of the local axes in the parent space; unit length.
    pub rotation: Quat,
}

impl Pose {
    /// The pose that changes nothing.
    pub const IDENTITY: Self = Self {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
    };

    /// A pose from a translation and a rotation.
    #[must_use]
    pub const fn new(translation: Vec3, rotation: Quat) -> Self {
        Self {
            translation,
            rotation,
        }
    }

    /// A pose that only translates.
    #[must_use]
    pub const fn from_translation(translation: Vec3) -> Self {
        Self::new(translation, Quat::IDENTITY)
    }

    /// Maps a point from local space into the parent space.
    #[must_use]
    #[inline]
    pub fn transform_point(&self, point: Vec3) -> Vec3 {
        self.rotation * point + self.translation
    }

    /// Maps a point from the parent space into local space.
    #[must_use]
    #[inline]
    pub fn inverse_transform_point(&self, point: Vec3) -> Vec3 {
        self.rotation.conjugate() * (point - self.translation)
    }

    /// Maps a direction from local space into the parent space.
    #[must_use]
    #[inline]
    pub fn transform_vector(&self, vector: Vec3) -> Vec3 {
        self.rotation * vector
    }

    /// Maps a direction from the parent space into local space.
    #[must_use]
    #[inline]
    pub fn inverse_transform_vector(&self, vector: Vec3) -> Vec3 {
        self.rotation.conjugate() * vector
    }

    /// Checks that the pose is finite, inside [`MAX_COORDINATE`] and has a unit rotation.
    ///
    /// # Errors
    /// The first problem found, as a [`TransformError`].
    pub fn validate(&self) -> Result<(), TransformError> {
        check_translation(self.translation)?;
        check_rotation(self.rotation)
    }
}

impl Default for Pose {
    fn default() -> Self {
        Self::IDENTITY
    }
}

/// A bone's world transform as the server records it each tick.
///
/// The scale is applied in the bone's local axes before the rotation; see
/// [`crate::rig::Shape::scaled`] for how each shape grows with it.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BoneTransform {
    /// Bone origin in world space.
    pub translation: Vec3,
    /// Bone orientation in world space; unit length.
    pub rotation: Quat,
    /// Per-axis scale in the bone's local axes; every component positive.
    pub scale: Vec3,
}

impl BoneTransform {
    /// No translation, no rotation, unit scale.
    pub const IDENTITY: Self = Self {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
        scale: Vec3::ONE,
    };

    /// An unscaled bone transform.
    #[must_use]
    pub const fn new(translation: Vec3, rotation: Quat) -> Self {
        Self {
            translation,
            rotation,
            scale: Vec3::ONE,
        }
    }

    /// An unscaled, unrotated bone at `translation`.
    #[must_use]
    pub const fn from_translation(translation: Vec3) -> Self {
        Self::new(translation, Quat::IDENTITY)
    }

    /// The same transform with `scale`.
    #[must_use]
    pub const fn with_scale(mut self, scale: Vec3) -> Self {
        self.scale = scale;
        self
    }

    /// The ten components' bits (translation, rotation x y z w, scale): the client and the
    /// server must compute the same geometry, so determinism is checked on bits, not with
    /// `==` (which takes -0.0 for 0.0 and never matches a NaN).
    #[must_use]
    pub fn to_bits(&self) -> [u32; 10] {
        let [tx, ty, tz] = self.translation.to_array();
        let [rx, ry, rz, rw] = self.rotation.to_array();
        let [sx, sy, sz] = self.scale.to_array();
        [tx, ty, tz, rx, ry, rz, rw, sx, sy, sz].map(f32::to_bits)
    }

    /// The rigid part (translation and rotation).
    #[must_use]
    pub const fn pose(&self) -> Pose {
        Pose::new(self.translation, self.rotation)
    }

    /// Checks every component: finite, within [`MAX_COORDINATE`], unit rotation, scale in
    /// `[MIN_EXTENT, MAX_EXTENT]`.
    ///
    /// # Errors
    /// The first problem found, as a [`TransformError`].
    pub fn validate(&self) -> Result<(), TransformError> {
        check_translation(self.translation)?;
        check_rotation(self.rotation)?;
        check_scale(self.scale)
    }
}

impl Default for BoneTransform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl From<Pose> for BoneTransform {
    fn from(pose: Pose) -> Self {
        Self::new(pose.translation, pose.rotation)
    }
}

/// Why a transform was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    /// A translation component is NaN or infinite.
    #[error("translation is not finite")]
    NonFiniteTranslation,
    /// A translation component is larger than [`MAX_COORDINATE`].
    #[error("translation is beyond {MAX_COORDINATE} units")]
    TranslationOutOfRange,
    /// A rotation component is NaN or infinite.
    #[error("rotation is not finite")]
    NonFiniteRotation,
    /// The rotation quaternion is not unit length.
    #[error("rotation is not a unit quaternion")]
    RotationNotNormalized,
    /// A scale component is NaN, infinite, or outside [`MIN_EXTENT`]`..=`[`MAX_EXTENT`].
    #[error("scale must be finite and in [{MIN_EXTENT}, {MAX_EXTENT}]")]
    InvalidScale,
}

pub(crate) fn check_translation(t: Vec3) -> Result<(), TransformError> {
    if !t.is_finite() {
        return Err(TransformError::NonFiniteTranslation);
    }
    if t.abs().max_element() > MAX_COORDINATE {
        return Err(TransformError::TranslationOutOfRange);
    }
    Ok(())
}

pub(crate) fn check_rotation(q: Quat) -> Result<(), TransformError> {
    if !q.is_finite() {
        return Err(TransformError::NonFiniteRotation);
    }
    if (q.length_squared() - 1.0).abs() > ROTATION_NORM_TOLERANCE {
        return Err(TransformError::RotationNotNormalized);
    }
    Ok(())
}

pub(crate) fn check_scale(s: Vec3) -> Result<(), TransformError> {
    // Finite first, so the comparisons below never see a NaN.
    if !s.is_finite() || s.min_element() < MIN_EXTENT || s.max_element() > MAX_EXTENT {
        return Err(TransformError::InvalidScale);
    }
    Ok(())
}

/// The padding of a box at the origin: [`padding`] is `PADDING_BASE + magnitude *
/// PADDING_SLOPE`.
pub(crate) const PADDING_BASE: f32 = 1.0e-5;
/// The padding's growth with the largest coordinate magnitude: 2^-20 relative is a few
/// ulps of an f32 at that magnitude.
pub(crate) const PADDING_SLOPE: f32 = 1.0 / 1_048_576.0;

/// How far [`Aabb::padded`] grows a box whose largest coordinate magnitude is `magnitude`
/// (computed eight boxes at a time, with the same two operations, by the recorder's
/// batches).
#[inline]
fn padding(magnitude: f32) -> f32 {
    PADDING_BASE + magnitude * PADDING_SLOPE
}

/// [`Aabb::padded`] of the box from `lo` to `hi`, on SIMD lanes (the fourth is ignored):
/// the same arithmetic, so the same bits, without leaving the registers the recorder's
/// bone pass left them in.
#[inline]
pub(crate) fn padded_corners(lo: Vec3A, hi: Vec3A) -> (Vec3A, Vec3A) {
    let margin = Vec3A::splat(padding(lo.abs().max(hi.abs()).max_element()));
    (lo - margin, hi + margin)
}

/// An axis-aligned bounding box. An empty box has `min > max` and contains nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Aabb {
    /// Smallest corner.
    pub min: Vec3,
    /// Largest corner.
    pub max: Vec3,
}

impl Aabb {
    /// The box that contains nothing; the identity of [`Aabb::union`].
    pub const EMPTY: Self = Self {
        min: Vec3::splat(f32::INFINITY),
        max: Vec3::splat(f32::NEG_INFINITY),
    };

    /// A box from its corners.
    #[must_use]
    pub const fn new(min: Vec3, max: Vec3) -> Self {
        Self { min, max }
    }

    /// The box around a sphere.
    #[must_use]
    #[inline]
    pub fn around_sphere(center: Vec3, radius: f32) -> Self {
        Self::new(center - Vec3::splat(radius), center + Vec3::splat(radius))
    }

    /// The smallest box containing both.
    #[must_use]
    #[inline]
    pub fn union(&self, other: &Self) -> Self {
        Self::new(self.min.min(other.min), self.max.max(other.max))
    }

    /// The box grown by a few ulps of its largest coordinate (and at least 1e-5): broadphase
    /// boxes are padded so that a ray lying exactly in the plane of a face (a shot skimming
    /// a floor) is never culled by rounding in the slab test. Culling stays conservative;
    /// the exact tests decide.
    #[must_use]
    #[inline]
    pub fn padded(&self) -> Self {
        let magnitude = self.min.abs().max(self.max.abs()).max_element();
        self.inflated(padding(magnitude))
    }

    /// The box grown by `margin` on every side.
    #[must_use]
    #[inline]
    pub fn inflated(&self, margin: f32) -> Self {
        Self::new(
            self.min - Vec3::splat(margin),
            self.max + Vec3::splat(margin),
        )
    }

    /// Whether the box contains nothing.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        !(self.min.x <= self.max.x && self.min.y <= self.max.y && self.min.z <= self.max.z)
    }

    /// Whether the two boxes share any point.
    #[must_use]
    #[inline]
    pub fn intersects(&self, other: &Self) -> bool {
        self.min.x <= other.max.x
            && self.max.x >= other.min.x
            && self.min.y <= other.max.y
            && self.max.y >= other.min.y
            && self.min.z <= other.max.z
            && self.max.z >= other.min.z
    }

    /// Centre of the box.
    #[must_use]
    #[inline]
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// The parameter interval `[t_enter, t_exit]` over which `origin + t * dir` is inside the
    /// box, clipped to `[0, t_max]`; `None` if it never is.
    ///
    /// `inv_dir` must come from [`ray_recip`]: finite even for zero components, so a ray
    /// that starts exactly on a slab plane never computes `0 * inf`.
    #[must_use]
    #[inline]
    pub fn ray_interval(&self, origin: Vec3, inv_dir: Vec3, t_max: f32) -> Option<(f32, f32)> {
        slab_interval(
            self.min.into(),
            self.max.into(),
            origin.into(),
            inv_dir.into(),
            t_max,
        )
    }
}

/// The slab test behind every ray-box test: the interval `[t_enter, t_exit]` of
/// `origin + t * dir` inside the box `min..max`, clipped to `[0, t_max]`. On SIMD lanes
/// (`Vec3A`) because BVH traversals run it for every node they visit.
#[must_use]
#[inline]
pub(crate) fn slab_interval(
    min: Vec3A,
    max: Vec3A,
    origin: Vec3A,
    inv_dir: Vec3A,
    t_max: f32,
) -> Option<(f32, f32)> {
    let t1 = (min - origin) * inv_dir;
    let t2 = (max - origin) * inv_dir;
    let near = t1.min(t2).max_element().max(0.0);
    let far = t1.max(t2).min_element().min(t_max);
    (near <= far).then_some((near, far))
}

/// `1 / dir` per component, with zero components treated as `±1e-30`: the result is huge
/// but finite, so slab tests stay free of NaN while still treating the ray as parallel.
#[must_use]
#[inline]
pub fn ray_recip(dir: Vec3) -> Vec3 {
    const TINY: f32 = 1.0e-30;
    let guard = |d: f32| if d.abs() < TINY { TINY.copysign(d) } else { d };
    Vec3::new(guard(dir.x), guard(dir.y), guard(dir.z)).recip()
}

/// How far an entity moves when a client extrapolates it `by` seconds at `velocity` (units
/// per second): `velocity * (by as f32)`, the one formula a client's snapshot buffer
/// (`lagcomp-net`) and the server's rebuild of that picture
/// ([`History::entity_extrapolated`](crate::History::entity_extrapolated)) both use, so
/// they agree bit for bit. Every bone is then moved by it with [`extrapolate`].
#[must_use]
#[inline]
pub fn extrapolation_shift(velocity: Vec3, by: f64) -> Vec3 {
    velocity * by as f32
}

/// `bone` moved by `shift` (from [`extrapolation_shift`]): translated only, rotation and
/// scale kept (bones are world transforms, so every bone moves by the same shift and the
/// skeleton stays whole).
///
/// ```
/// use lagcomp::math::{extrapolate, extrapolation_shift};
/// use lagcomp::{BoneTransform, Vec3};
///
/// // 40 ms past the newest snapshot at 20 m/s along x.
/// let shift = extrapolation_shift(Vec3::new(20.0, 0.0, 0.0), 0.04);
/// let bone = extrapolate(&BoneTransform::from_translation(Vec3::new(11.0, 1.5, 0.0)), shift);
/// assert!((bone.translation.x - 11.8).abs() < 1e-5);
/// assert_eq!(bone.translation.y, 1.5);
/// ```
#[must_use]
#[inline]
pub fn extrapolate(bone: &BoneTransform, shift: Vec3) -> BoneTransform {
    BoneTransform {
        translation: bone.translation + shift,
        ..*bone
    }
}

/// Linear interpolation of two vectors, exact at both ends.
#[must_use]
#[inline]
pub fn lerp(a: Vec3, b: Vec3, alpha: f32) -> Vec3 {
    // `a + (b - a) * alpha` can miss `b` by an ulp at alpha = 1; the two-product form is
    // exact at both ends, which keeps samples at alpha 0 and 1 equal to the stored frames.
    a * (1.0 - alpha) + b * alpha
}

/// Shortest-path spherical interpolation of two unit quaternions, normalized.
///
/// Takes the short way round (negates `b` when the two lie in opposite hemispheres). A
/// tiny turn (under 3.6 degrees) is a normalized lerp; turns up to 51.7 degrees (every
/// tick-to-tick turn of an animated bone) take slerp's weights from a five-term power
/// series in `cos - 1` (each weight within 4.7e-8 of `sin(t theta) / sin(theta)`), plain
/// `+` and `*`, the same bits on every platform; larger turns, or an `alpha` outside
/// `[0, 1]`, use `acos` and `sin` from the private module of transcendental functions.
#[must_use]
#[inline]
pub fn slerp(a: Quat, b: Quat, alpha: f32) -> Quat {
    // Below this angle (cos > 0.9995, about 1.8 degrees of 4D angle, a 3.6 degree turn)
    // nlerp is within 1e-6 rad of slerp, and its weights cost nothing: most tick-to-tick
    // turns are this small. (The series below is more accurate here too, but its chain of
    // multiplications sits between the rows' loads and a query's ball test: folding the
    // nlerp into it measured 355 ns a shot against 336 at 64x16.)
    const NLERP_ABOVE_COS: f32 = 0.9995;
    let mut cos = a.dot(b);
    let b = if cos < 0.0 {
        cos = -cos;
        -b
    } else {
        b
    };
    let (wa, wb) = if cos > NLERP_ABOVE_COS {
        (1.0 - alpha, alpha)
    } else if cos >= SERIES_FROM_COS && (0.0..=1.0).contains(&alpha) {
        slerp_weights_series(cos, alpha)
    } else {
        let theta = det::acos(cos);
        let inv_sin = 1.0 / det::sin(theta);
        (
            det::sin((1.0 - alpha) * theta) * inv_sin,
            det::sin(alpha * theta) * inv_sin,
        )
    };
    let q = Quat::from_xyzw(
        a.x * wa + b.x * wb,
        a.y * wa + b.y * wb,
        a.z * wa + b.z * wb,
        a.w * wa + b.w * wb,
    );
    q.normalize()
}

/// From this dot product between the two quaternions up (a 4D angle of at most 0.451 rad,
/// a turn of at most 51.7 degrees), [`slerp`] takes its weights from
/// [`slerp_weights_series`].
const SERIES_FROM_COS: f32 = 0.9;

/// Slerp's weights `(sin((1 - alpha) theta), sin(alpha theta)) / sin(theta)` for
/// `cos(theta) = x` in `[0.9, 1]` and `alpha` in `[0, 1]`, without trigonometry.
///
/// As a function of `x`, `w(t) = sin(t theta) / sin(theta) = sum_i u_i(t) (x - 1)^i` with
/// `u_0 = t` and `u_i = u_(i-1) (t^2 - i^2) / (i (2 i + 1))` (for whole `t` the Chebyshev
/// polynomial `U_(t-1)(x)`, expanded around 1). Five terms are summed, both weights on one
/// pair of lanes.
///
/// Error bound, for `t` in `[0, 1]` and `x` in `[0.9, 1]` (`D = 0.1`): `|u_i / u_(i-1)| =
/// |t^2 - i^2| / (i (2 i + 1)) <= i / (2 i + 1) < 1/2`, so the terms after the first `n`
/// shrink faster than a geometric series of ratio `D / 2`, and the remainder is at most
/// `|u_n| D^n / (1 - D / 2)`. `|u_1| = t (1 - t^2) / 3 <= 0.1284` (at `t = 1 / sqrt 3`), and
/// `|u_i| <= |u_(i-1)| i / (2 i + 1)`, so `|u_5| <= 0.1284 (2/5)(3/7)(4/9)(5/11) = 0.00444`
/// and five terms miss each weight by at most `0.00444 * 1e-5 / 0.95 = 4.7e-8` (the
/// largest miss over a fine grid of `t` and `x`, in `f64`: 4.0e-8), below an `f32` ulp of
/// one. Both weights' misses move the unnormalized result by at most twice that, a 4D
/// angle of about 1e-7 rad, a turn of 2e-7 rad; the `f32` arithmetic adds a few ulps
/// (tests: a turn within 4e-7 rad of an `f64` slerp). A stored rotation's dot product may
/// exceed 1 by the norm tolerance; the series is a polynomial, smooth there.
///
/// PERF: `acos` and three `sin` from the platform's libm cost about 110 instructions (and
/// the registers saved around the calls) and a long dependency chain for each blended
/// bone turning more than 3.6 degrees in a tick
/// (a tenth of them at 128 Hz, a third at 60 Hz, half at 30 Hz); this is about 30
/// instructions of independent multiplications. It is also plain `+ - *` (no fused
/// multiply-add: Rust does not contract), so unlike libm's `sin` it gives the same bits on
/// every platform, and on either SIMD path (each lane is one IEEE operation).
#[inline]
fn slerp_weights_series(x: f32, alpha: f32) -> (f32, f32) {
    const TERMS: usize = 5;
    // `1 / (i (2 i + 1))`, rounded once at compile time.
    const INV_DIVISOR: [f32; TERMS] = [1.0, 1.0 / 3.0, 1.0 / 10.0, 1.0 / 21.0, 1.0 / 36.0];
    let t = Vec4::new(1.0 - alpha, alpha, 0.0, 0.0);
    let t2 = t * t;
    let mut terms = [t; TERMS];
    for i in 1..TERMS {
        let square = (i * i) as f32;
        terms[i] = terms[i - 1] * ((t2 - Vec4::splat(square)) * INV_DIVISOR[i]);
    }
    // Horner in `x - 1`, which is exact (`x` is within a factor of two of 1).
    let d = Vec4::splat(x - 1.0);
    let mut w = terms[TERMS - 1];
    for term in terms[..TERMS - 1].iter().rev() {
        w = w * d + *term;
    }
    (w.x, w.y)
}

/// The transcendental functions used by geometry that both client and server evaluate.
///
/// All of them are here so that one place decides where they come from. Today they are the
/// standard library's (the platform libm); a deployment that mixes CPU architectures or
/// operating systems between client and server can route them through a portable libm.
pub(crate) mod det {
    /// Arc cosine, argument clamped to `[-1, 1]`.
    #[must_use]
    #[inline]
    pub(crate) fn acos(x: f32) -> f32 {
        x.clamp(-1.0, 1.0).acos()
    }

    /// Sine.
    #[must_use]
    #[inline]
    pub(crate) fn sin(x: f32) -> f32 {
        x.sin()
    }

    /// Cosine.
    #[must_use]
    #[inline]
    pub(crate) fn cos(x: f32) -> f32 {
        x.cos()
    }
}

#[cfg(test)]
mod padding_tests {
    use glam::{Vec3, Vec3A};

    use super::{Aabb, padded_corners};

    #[test]
    fn padded_corners_are_padded_boxes_bit_for_bit() {
        let mut state = 0x9e37_79b9_u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            // Magnitudes from 1e-3 to 1e6, both signs, and exact zeros now and then.
            let unit = state as f32 / u32::MAX as f32;
            match state % 7 {
                0 => 0.0,
                1 => -0.0,
                _ => (unit - 0.5) * 10.0_f32.powf((state % 10) as f32 - 3.0),
            }
        };
        for _ in 0..20_000 {
            let a = Vec3::new(next(), next(), next());
            let b = Vec3::new(next(), next(), next());
            let (lo, hi) = (a.min(b), a.max(b));
            let expected = Aabb::new(lo, hi).padded();
            // Garbage in the ignored fourth lane (the bone pass leaves some) must not matter.
            let with_garbage = |v: Vec3| Vec3A::from_vec4(v.extend(f32::NAN));
            let (min, max) = padded_corners(with_garbage(lo), with_garbage(hi));
            let bits = |v: Vec3| v.to_array().map(f32::to_bits);
            assert_eq!(bits(Vec3::from(min)), bits(expected.min), "{lo} {hi}");
            assert_eq!(bits(Vec3::from(max)), bits(expected.max), "{lo} {hi}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bone_bits_keep_order_and_tell_negative_zero_apart() {
        let bone = BoneTransform::new(
            Vec3::new(1.0, 2.0, 3.0),
            Quat::from_xyzw(0.0, 0.0, 0.6, 0.8),
        )
        .with_scale(Vec3::new(4.0, 5.0, 6.0));
        let expected = [1.0, 2.0, 3.0, 0.0, 0.0, 0.6, 0.8, 4.0, 5.0, 6.0_f32].map(f32::to_bits);
        assert_eq!(bone.to_bits(), expected);
        let mut flipped = bone;
        flipped.translation.x = -0.0;
        let mut zero = bone;
        zero.translation.x = 0.0;
        assert_eq!(flipped, zero, "== takes -0.0 for 0.0");
        assert_ne!(flipped.to_bits(), zero.to_bits());
    }

    #[test]
    fn lerp_is_exact_at_both_ends() {
        let a = Vec3::new(0.1, -3.7, 1e5);
        let b = Vec3::new(7.3, 0.3, -2.2);
        assert_eq!(lerp(a, b, 0.0), a);
        assert_eq!(lerp(a, b, 1.0), b);
    }

    #[test]
    fn slerp_takes_the_short_way() {
        let a = Quat::from_rotation_y(0.1);
        // The same rotation as 0.3 rad, written in the opposite hemisphere.
        let b = -Quat::from_rotation_y(0.3);
        let mid = slerp(a, b, 0.5);
        let expected = Quat::from_rotation_y(0.2);
        assert!(
            mid.dot(expected).abs() > 1.0 - 1e-6,
            "{mid:?} vs {expected:?}"
        );
    }

    #[test]
    fn slerp_matches_the_angle_for_large_turns() {
        let a = Quat::IDENTITY;
        let b = Quat::from_rotation_z(2.0);
        for i in 0..=10 {
            let alpha = i as f32 / 10.0;
            let q = slerp(a, b, alpha);
            let expected = Quat::from_rotation_z(2.0 * alpha);
            assert!(q.dot(expected).abs() > 1.0 - 1e-6, "alpha {alpha}");
        }
    }

    /// Slerp in `f64` of the two rotations (normalized in `f64`), the short way round.
    fn slerp_f64(a: Quat, b: Quat, alpha: f64) -> [f64; 4] {
        let unit = |q: Quat| {
            let v = q.to_array().map(f64::from);
            let n = v.iter().map(|c| c * c).sum::<f64>().sqrt();
            v.map(|c| c / n)
        };
        let (a, mut b) = (unit(a), unit(b));
        let mut cos: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        if cos < 0.0 {
            cos = -cos;
            b = b.map(|c| -c);
        }
        let theta = cos.min(1.0).acos();
        let (wa, wb) = if theta < 1e-12 {
            (1.0 - alpha, alpha)
        } else {
            (
                ((1.0 - alpha) * theta).sin() / theta.sin(),
                (alpha * theta).sin() / theta.sin(),
            )
        };
        let q: [f64; 4] = std::array::from_fn(|i| a[i] * wa + b[i] * wb);
        let n = q.iter().map(|c| c * c).sum::<f64>().sqrt();
        q.map(|c| c / n)
    }

    /// The rotation angle between `q` (as `f32` gives it) and the unit `reference`.
    fn turn_between(q: Quat, reference: [f64; 4]) -> f64 {
        let v = q.to_array().map(f64::from);
        let n = v.iter().map(|c| c * c).sum::<f64>().sqrt();
        let dot: f64 = v.iter().zip(&reference).map(|(x, y)| x * y / n).sum();
        // 4 asin(|chord| / 2) is the turn, accurate for tiny angles (acos is not).
        let sign = if dot < 0.0 { -1.0 } else { 1.0 };
        let chord = v
            .iter()
            .zip(&reference)
            .map(|(x, y)| (x / n - sign * y).powi(2))
            .sum::<f64>()
            .sqrt();
        4.0 * (chord / 2.0).asin()
    }

    #[test]
    fn series_weights_match_the_sines() {
        // Every 4D angle the series serves, from 0 to acos(0.9), and alphas including both
        // ends: each weight within 2e-7 of sin(t theta) / sin(theta).
        let mut worst = 0.0_f64;
        for j in 0..=400 {
            let x = 1.0 - 0.1 * j as f32 / 400.0;
            let theta = f64::from(x).acos();
            for k in 0..=256 {
                let alpha = k as f32 / 256.0;
                let (wa, wb) = slerp_weights_series(x, alpha);
                for (w, t) in [(wa, 1.0 - f64::from(alpha)), (wb, f64::from(alpha))] {
                    let exact = if theta == 0.0 {
                        t
                    } else {
                        (t * theta).sin() / theta.sin()
                    };
                    worst = worst.max((f64::from(w) - exact).abs());
                }
            }
        }
        assert!(worst < 2e-7, "worst weight error {worst:e}");
        // The ends are exact: alpha 0 and 1 give the frames' own weights.
        assert_eq!(slerp_weights_series(0.93, 0.0), (1.0, 0.0));
        assert_eq!(slerp_weights_series(0.93, 1.0), (0.0, 1.0));
    }

    #[test]
    fn slerp_is_within_a_few_tenths_of_a_microradian_of_f64() {
        let mut state = 0x2545_f491_u32;
        let mut unit = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as f32 / u32::MAX as f32
        };
        let mut worst = [0.0_f64; 3];
        for n in 0..60_000 {
            let axis = Vec3::new(unit() - 0.5, unit() - 0.5, unit() - 0.5);
            let axis = if axis.length() < 1e-3 {
                Vec3::X
            } else {
                axis.normalize()
            };
            let a = Quat::from_axis_angle(
                Vec3::new(unit() - 0.5, unit() - 0.5, 0.3).normalize(),
                unit() * 6.0,
            );
            // Turns spread over the three paths, and packed around both thresholds
            // (a turn of 2 acos(x) for x = 0.9995 and 0.9).
            let turn = match n % 5 {
                0 => unit() * 0.08,
                1 => 2.0 * 0.9995_f32.acos() * (0.98 + 0.04 * unit()),
                2 => unit() * 0.95,
                3 => 2.0 * 0.9_f32.acos() * (0.98 + 0.04 * unit()),
                _ => unit() * 3.1,
            };
            let mut b = Quat::from_axis_angle(axis, turn) * a;
            if n % 7 == 0 {
                b = -b;
            }
            let alpha = match n % 11 {
                0 => 0.0,
                1 => 1.0,
                _ => unit(),
            };
            let got = slerp(a, b, alpha);
            let error = turn_between(got, slerp_f64(a, b, f64::from(alpha)));
            let cos = a.dot(b).abs();
            let path = if cos > 0.9995 {
                0
            } else if cos >= SERIES_FROM_COS {
                1
            } else {
                2
            };
            worst[path] = worst[path].max(error);
        }
        // Turns, in radians. The series (1.9e-7 seen) is as close as libm's trigonometry
        // (2.6e-7); nlerp's own truncation (1.13e-6 seen: a 4D angle of 5.7e-7) is what
        // its threshold was chosen for.
        let bounds = [1.5e-6, 4e-7, 4e-7];
        for ((path, worst), bound) in ["nlerp", "series", "trigonometric"]
            .iter()
            .zip(worst)
            .zip(bounds)
        {
            assert!(worst < bound, "{path}: worst {worst:e} rad");
        }
    }

    #[test]
    fn ray_interval_handles_axis_parallel_rays_on_a_slab_plane() {
        let aabb = Aabb::new(Vec3::ZERO, Vec3::ONE);
        // Starts exactly on the x = 0 plane, travels along +y: 0 * inf would be NaN.
        let origin = Vec3::new(0.0, -1.0, 0.5);
        let inv = ray_recip(Vec3::Y);
        let (near, far) = aabb.ray_interval(origin, inv, 10.0).expect("hits");
        assert_eq!((near, far), (1.0, 2.0));
    }

    #[test]
    fn validation_rejects_garbage() {
        let ok = BoneTransform::IDENTITY;
        assert_eq!(ok.validate(), Ok(()));
        let mut t = ok;
        t.translation.x = f32::NAN;
        assert_eq!(t.validate(), Err(TransformError::NonFiniteTranslation));
        t = ok;
        t.translation.y = 2.0e6;
        assert_eq!(t.validate(), Err(TransformError::TranslationOutOfRange));
        t = ok;
        t.rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 2.0);
        assert_eq!(t.validate(), Err(TransformError::RotationNotNormalized));
        t = ok;
        t.scale = Vec3::new(1.0, 0.0, 1.0);
        assert_eq!(t.validate(), Err(TransformError::InvalidScale));
        t.scale = Vec3::new(1.0, f32::NAN, 1.0);
        assert_eq!(t.validate(), Err(TransformError::InvalidScale));
    }
}
