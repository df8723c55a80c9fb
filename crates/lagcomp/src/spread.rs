//! Shotgun spread: the directions of a shot's pellets, from the weapon's pattern and a seed.
//!
//! What lives here: a weapon's spread ([`Spread`], [`SpreadKind`]), the one deterministic
//! generator both client and server draw pellets from ([`PelletRng`], SplitMix64), the seed
//! a shot's pellets come from ([`pellet_seed`]), the pellet directions ([`Pellets`]), and
//! damage falloff with distance ([`Falloff`], shared with splash damage). The rewound
//! multi-ray query that traces them is [`crate::Query::ray_fan`]; the verdict on a
//! client's pellet claim is the validator's (`lagcomp-validate`).
//!
//! # Matching it on the client
//!
//! The server regenerates every pellet from the seed, so a client that draws its pellets
//! with anything else sees hits the server does not. To match it bit for bit:
//!
//! 1. The seed is [`pellet_seed`]`(shooter, seq)`: SplitMix64's finaliser of
//!    `shooter * 0x9E37_79B9_7F4A_7C15 + seq` (wrapping).
//! 2. [`PelletRng`] is SplitMix64: `state += 0x9E37_79B9_7F4A_7C15`, then the finaliser
//!    `z = (z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9; z = (z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB;
//!    z ^ (z >> 31)`. A unit number is the top 24 bits times 2^-24, in `[0, 1)`.
//! 3. Each pellet draws exactly two unit numbers `u`, `v`, pellet 0 first, whatever the kind.
//! 4. The frame around the aim `f` (normalized after dividing by its largest component) is
//!    Duff et al.'s "Building an orthonormal basis, revisited" (2017); see [`Pellets::new`].
//!
//! # Example
//! ```
//! use lagcomp::spread::{Pellets, Spread, SpreadKind, pellet_seed};
//! use lagcomp::Vec3;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Twelve pellets uniform in a 4-degree cone, shot 7 of shooter 3.
//! let spread = Spread::new(12, 4.0, SpreadKind::Uniform)?;
//! let seed = pellet_seed(3, 7);
//! let pellets = Pellets::new(&spread, Vec3::NEG_Z, seed)?;
//! assert_eq!(pellets.directions().len(), 12);
//! // The same seed gives the same pellets, bit for bit.
//! assert_eq!(pellets, Pellets::new(&spread, Vec3::NEG_Z, seed)?);
//! // Every pellet lies inside the cone.
//! let cos_half = 4.0_f32.to_radians().cos();
//! assert!(pellets.directions().iter().all(|d| d.dot(Vec3::NEG_Z) >= cos_half - 1e-6));
//! # Ok(())
//! # }
//! ```

use std::f32::consts::TAU;

use glam::Vec3;

use crate::math::det;

/// The most pellets one shot may carry.
pub const MAX_PELLETS: usize = 32;

/// SplitMix64's increment (the golden ratio in 64 bits).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: a bijection that mixes every input bit into every output bit.
#[must_use]
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of a shot's pellets: fixed by who fired (`shooter`, an entity's
/// [`crate::EntityId::to_bits`]) and the shot's sequence number, so a client cannot shop
/// for a favourable pattern by choosing seeds.
#[must_use]
pub const fn pellet_seed(shooter: u64, seq: u32) -> u64 {
    mix(shooter.wrapping_mul(GOLDEN).wrapping_add(seq as u64))
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit state and a few integer operations,
/// easy to write again in any client language and the same on every machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PelletRng {
    state: u64,
}

impl PelletRng {
    /// A generator starting from `seed`.
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix(self.state)
    }

    /// A number in `[0, 1)`: the top 24 bits, exactly representable as an `f32`.
    pub fn next_unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / 16_777_216.0)
    }
}

/// How a spread places its pellets in the cone.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SpreadKind {
    /// Uniform over the cone's solid angle.
    Uniform,
    /// A fixed pattern, moved a little by the seed: pellet 0 on the aim, the others on two
    /// rings (odd pellets at the rim, even ones at 55 % of the half-angle) evenly around
    /// the aim. `jitter` in `[0, 1]` moves each pellet by up to half that fraction of the
    /// half-angle outward or inward (kept in the cone) and of the gap between pellets
    /// around; 0 is the bare pattern.
    Pattern {
        /// How much the seed moves each pellet, `[0, 1]`.
        jitter: f32,
    },
}

/// A weapon's spread: how many pellets, in what cone, placed how.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Spread {
    pellets: u8,
    half_angle_deg: f32,
    kind: SpreadKind,
}

/// Why a spread or its pellets were refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum SpreadError {
    /// No pellets, or more than [`MAX_PELLETS`].
    #[error("pellet count {0} is not in [1, {MAX_PELLETS}]")]
    Pellets(usize),
    /// The cone's half-angle is not in `[0, 45]` degrees.
    #[error("spread half-angle {0} degrees is not in [0, 45]")]
    HalfAngle(f32),
    /// The pattern's jitter is not in `[0, 1]`.
    #[error("spread jitter {0} is not in [0, 1]")]
    Jitter(f32),
    /// The aim is zero or not finite.
    #[error("aim direction is zero or not finite")]
    Aim,
}

impl Spread {
    /// `pellets` pellets in a cone of `half_angle_deg` degrees around the aim.
    ///
    /// # Errors
    /// [`SpreadError`] naming the bad field.
    pub fn new(pellets: usize, half_angle_deg: f32, kind: SpreadKind) -> Result<Self, SpreadError> {
        if !(1..=MAX_PELLETS).contains(&pellets) {
            return Err(SpreadError::Pellets(pellets));
        }
        if !(0.0..=45.0).contains(&half_angle_deg) {
            return Err(SpreadError::HalfAngle(half_angle_deg));
        }
        if let SpreadKind::Pattern { jitter } = kind
            && !(0.0..=1.0).contains(&jitter)
        {
            return Err(SpreadError::Jitter(jitter));
        }
        Ok(Self {
            pellets: pellets as u8,
            half_angle_deg,
            kind,
        })
    }

    /// How many pellets a shot carries.
    #[must_use]
    pub const fn pellets(&self) -> usize {
        self.pellets as usize
    }

    /// The cone's half-angle, degrees.
    #[must_use]
    pub const fn half_angle_deg(&self) -> f32 {
        self.half_angle_deg
    }

    /// How pellets are placed.
    #[must_use]
    pub const fn kind(&self) -> SpreadKind {
        self.kind
    }
}

/// One shot's pellet directions (unit vectors), at most [`MAX_PELLETS`], held inline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pellets {
    directions: [Vec3; MAX_PELLETS],
    count: u8,
}

impl Pellets {
    /// The pellets of a shot aimed along `aim` (need not be unit length) with `seed`.
    ///
    /// Pellet `i` leaves at polar angle `theta` from the aim and azimuth `phi` around it:
    /// `f cos(theta) + (b1 cos(phi) + b2 sin(phi)) sin(theta)`, where for the unit aim `f`,
    /// `s = copysign(1, f.z)`, `a = -1 / (s + f.z)`, `b = f.x f.y a`,
    /// `b1 = (1 + s f.x^2 a, s b, -s f.x)` and `b2 = (b, s + f.y^2 a, -f.y)`.
    /// [`SpreadKind::Uniform`]: `cos(theta) = 1 - u (1 - cos(half))`, `phi = 2 pi v`.
    /// [`SpreadKind::Pattern`]: see its docs; `theta = half * clamp(ring + jitter (u - 0.5))`,
    /// `phi = 2 pi (i + jitter (v - 0.5)) / (n - 1)`.
    ///
    /// # Errors
    /// [`SpreadError::Aim`] for a zero or non-finite aim.
    pub fn new(spread: &Spread, aim: Vec3, seed: u64) -> Result<Self, SpreadError> {
        if !aim.is_finite() {
            return Err(SpreadError::Aim);
        }
        let largest = aim.abs().max_element();
        if largest == 0.0 {
            return Err(SpreadError::Aim);
        }
        let f = (aim / largest).normalize();
        let s = 1.0_f32.copysign(f.z);
        let a = -1.0 / (s + f.z);
        let b = f.x * f.y * a;
        let b1 = Vec3::new(1.0 + s * f.x * f.x * a, s * b, -s * f.x);
        let b2 = Vec3::new(b, s + f.y * f.y * a, -f.y);
        let half = spread.half_angle_deg.to_radians();
        let cos_half = det::cos(half);
        let n = spread.pellets();
        let mut rng = PelletRng::new(seed);
        let mut directions = [Vec3::ZERO; MAX_PELLETS];
        for (i, slot) in directions[..n].iter_mut().enumerate() {
            let (u, v) = (rng.next_unit(), rng.next_unit());
            let (cos_t, sin_t, phi) = match spread.kind {
                SpreadKind::Uniform => {
                    let cos_t = 1.0 - u * (1.0 - cos_half);
                    ((cos_t), (1.0 - cos_t * cos_t).max(0.0).sqrt(), TAU * v)
                }
                SpreadKind::Pattern { jitter } => {
                    let ring = match i {
                        0 => 0.0,
                        _ if i % 2 == 1 => 1.0,
                        _ => 0.55,
                    };
                    let theta = half * (ring + jitter * (u - 0.5)).clamp(0.0, 1.0);
                    let around = (n - 1).max(1) as f32;
                    let phi = TAU * (i as f32 + jitter * (v - 0.5)) / around;
                    (det::cos(theta), det::sin(theta), phi)
                }
            };
            let side = b1 * det::cos(phi) + b2 * det::sin(phi);
            *slot = f * cos_t + side * sin_t;
        }
        Ok(Self {
            directions,
            count: n as u8,
        })
    }

    /// The pellets' unit directions, pellet 0 first.
    #[must_use]
    pub fn directions(&self) -> &[Vec3] {
        &self.directions[..usize::from(self.count)]
    }
}

/// Damage falling off with distance: full up to `start` metres, the `min` multiplier from
/// `end` metres on, linear between. Pellets use it with range from the muzzle, splash with
/// distance from the blast.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Falloff {
    start: f32,
    end: f32,
    min: f32,
}

/// Why a falloff was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum FalloffError {
    /// `start` is negative or not finite, or `end` is below `start` or not finite.
    #[error("falloff distances start {start} and end {end} must be finite with 0 <= start <= end")]
    Distances {
        /// The start given.
        start: f32,
        /// The end given.
        end: f32,
    },
    /// `min` is not in `[0, 1]`.
    #[error("falloff minimum multiplier {0} is not in [0, 1]")]
    Min(f32),
}

impl Falloff {
    /// No falloff: the full multiplier at every distance.
    pub const NONE: Self = Self {
        start: f32::MAX,
        end: f32::MAX,
        min: 1.0,
    };

    /// Full damage to `start`, falling linearly to `min` at `end` (metres).
    ///
    /// # Errors
    /// [`FalloffError`] naming the bad field.
    pub fn new(start: f32, end: f32, min: f32) -> Result<Self, FalloffError> {
        if !(start.is_finite() && end.is_finite() && 0.0 <= start && start <= end) {
            return Err(FalloffError::Distances { start, end });
        }
        if !(0.0..=1.0).contains(&min) {
            return Err(FalloffError::Min(min));
        }
        Ok(Self { start, end, min })
    }

    /// The damage multiplier at `distance` metres, in `[min, 1]`.
    #[must_use]
    pub fn multiplier(&self, distance: f32) -> f32 {
        if distance <= self.start {
            return 1.0;
        }
        if distance >= self.end {
            return self.min;
        }
        let t = (distance - self.start) / (self.end - self.start);
        1.0 + (self.min - 1.0) * t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_its_published_reference() {
        // SplitMix64 from seed 1234567: the first outputs of the reference implementation.
        let mut rng = PelletRng::new(1_234_567);
        let got: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423
            ]
        );
    }

    #[test]
    fn pellets_are_pinned_bit_for_bit() {
        let spread = Spread::new(4, 5.0, SpreadKind::Uniform).unwrap();
        let pellets = Pellets::new(&spread, Vec3::new(0.3, 0.1, -1.0), pellet_seed(3, 7)).unwrap();
        let bits: Vec<[u32; 3]> = pellets
            .directions()
            .iter()
            .map(|d| d.to_array().map(f32::to_bits))
            .collect();
        assert_eq!(bits, PINNED_UNIFORM);
        let pattern = Spread::new(5, 6.0, SpreadKind::Pattern { jitter: 0.3 }).unwrap();
        let pellets = Pellets::new(&pattern, Vec3::Z, 42).unwrap();
        let bits: Vec<[u32; 3]> = pellets
            .directions()
            .iter()
            .map(|d| d.to_array().map(f32::to_bits))
            .collect();
        assert_eq!(bits, PINNED_PATTERN);
    }

    /// Uniform, 4 pellets, 5 degrees, aim (0.3, 0.1, -1), seed `pellet_seed(3, 7)`.
    const PINNED_UNIFORM: [[u32; 3]; 4] = [
        [1_051_879_354, 1_038_295_643, 3_211_674_940],
        [1_048_877_489, 1_031_036_308, 3_212_233_507],
        [1_051_762_738, 1_033_585_268, 3_211_755_511],
        [1_050_577_680, 1_028_630_700, 3_211_989_556],
    ];
    /// Pattern with jitter 0.3, 5 pellets, 6 degrees, aim +z, seed 42.
    const PINNED_PATTERN: [[u32; 3]; 5] = [
        [1_005_943_967, 3_130_964_807, 1_065_352_733],
        [1_005_232_403, 1_036_475_688, 1_065_273_103],
        [3_173_892_929, 3_153_308_280, 1_065_337_648],
        [1_012_757_231, 3_183_613_285, 1_065_276_170],
        [1_029_103_979, 994_060_445, 1_065_330_041],
    ];

    #[test]
    fn every_pellet_lies_in_its_cone_and_is_unit() {
        let mut rng = PelletRng::new(9);
        for round in 0..2_000_u32 {
            let aim = Vec3::new(
                rng.next_unit() - 0.5,
                rng.next_unit() - 0.5,
                rng.next_unit() - 0.5,
            );
            let half = 45.0 * rng.next_unit();
            let kind = if round % 2 == 0 {
                SpreadKind::Uniform
            } else {
                SpreadKind::Pattern {
                    jitter: rng.next_unit(),
                }
            };
            let spread = Spread::new(1 + round as usize % MAX_PELLETS, half, kind).unwrap();
            let Ok(pellets) = Pellets::new(&spread, aim, rng.next_u64()) else {
                continue;
            };
            let f = aim.normalize();
            let cos_half = half.to_radians().cos();
            for d in pellets.directions() {
                assert!((d.length() - 1.0).abs() < 1e-5, "{d} is not unit");
                assert!(
                    d.dot(f) >= cos_half - 1e-5,
                    "{d} outside {half} deg around {f}"
                );
            }
        }
    }

    #[test]
    fn seeds_change_the_pellets_and_the_pattern_without_jitter_does_not() {
        let uniform = Spread::new(12, 4.0, SpreadKind::Uniform).unwrap();
        let a = Pellets::new(&uniform, Vec3::X, pellet_seed(1, 1)).unwrap();
        let b = Pellets::new(&uniform, Vec3::X, pellet_seed(1, 2)).unwrap();
        assert!(
            a.directions()
                .iter()
                .zip(b.directions())
                .all(|(x, y)| x != y)
        );
        let bare = Spread::new(8, 4.0, SpreadKind::Pattern { jitter: 0.0 }).unwrap();
        assert_eq!(
            Pellets::new(&bare, Vec3::X, 1).unwrap(),
            Pellets::new(&bare, Vec3::X, 2).unwrap()
        );
        assert_ne!(pellet_seed(1, 2), pellet_seed(2, 1));
    }

    #[test]
    fn bad_spreads_and_aims_are_refused() {
        assert_eq!(
            Spread::new(0, 1.0, SpreadKind::Uniform),
            Err(SpreadError::Pellets(0))
        );
        assert_eq!(
            Spread::new(33, 1.0, SpreadKind::Uniform),
            Err(SpreadError::Pellets(33))
        );
        assert!(matches!(
            Spread::new(3, f32::NAN, SpreadKind::Uniform),
            Err(SpreadError::HalfAngle(_))
        ));
        assert_eq!(
            Spread::new(3, 1.0, SpreadKind::Pattern { jitter: 2.0 }),
            Err(SpreadError::Jitter(2.0))
        );
        let spread = Spread::new(3, 1.0, SpreadKind::Uniform).unwrap();
        assert_eq!(Pellets::new(&spread, Vec3::ZERO, 1), Err(SpreadError::Aim));
        assert_eq!(Pellets::new(&spread, Vec3::NAN, 1), Err(SpreadError::Aim));
        assert!(Falloff::new(5.0, 2.0, 0.5).is_err());
        assert!(Falloff::new(0.0, 2.0, 1.5).is_err());
    }

    #[test]
    fn falloff_is_full_then_linear_then_floored() {
        let f = Falloff::new(10.0, 30.0, 0.25).unwrap();
        for (distance, expected) in [
            (0.0, 1.0),
            (10.0, 1.0),
            (20.0, 0.625),
            (30.0, 0.25),
            (99.0, 0.25),
        ] {
            assert!(
                (f.multiplier(distance) - expected).abs() < 1e-6,
                "{distance}"
            );
        }
        assert_eq!(Falloff::NONE.multiplier(1e6), 1.0);
    }
}
