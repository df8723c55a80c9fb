//! The flat form of [`super::TemporalBvh`], for histories with few entities: no tree, each
//! ring frame's item spans kept in blocks of [`FLAT_LANE_STEP`] lanes, each block six
//! planes (minimum x, y, z, then negated maximum x, y, z, the [`super::NodeBox`]
//! convention), scanned whole by every query.
//!
//! What lives here: the ray laid out for the scan ([`FlatRay`]), the scan itself (a
//! portable four-lane form and an AVX2 eight-lane form chosen at run time), the overlap
//! scan, and the survivors' ordering. What does not: the ring, the lanes' assignment and
//! the recording, which the flat and tree forms share in `bvh.rs`.
//!
//! Why a flat scan at all: with a few dozen entities a tree walk is a chain of dependent
//! loads and unpredictable branches (pop, test, sort, push), while the scan is a handful
//! of independent vector operations per eight entities, and recording needs no refit and
//! no rebuild of a topology.

use std::mem::MaybeUninit;

use glam::{Vec3, Vec4};

use crate::math::Aabb;
use crate::simd::Kernels;

/// Lanes per block: one AVX2 vector per plane.
pub(crate) const FLAT_LANE_STEP: usize = 8;

/// Floats per block: six planes of [`FLAT_LANE_STEP`] lanes.
pub(crate) const BLOCK_FLOATS: usize = 6 * FLAT_LANE_STEP;

/// Where lane `lane`'s minimum x is among its frame's floats; its plane `k` is
/// `k * FLAT_LANE_STEP` further.
///
/// PERF: blocks of eight lanes rather than six planes as long as the frame: a record
/// then writes its six floats at fixed distances (the same code for every history size,
/// about half the instructions of a distance read at run time), and a scan reads each
/// block's three cache lines in turn.
#[inline(always)]
pub(super) fn lane_float(lane: usize) -> usize {
    lane / FLAT_LANE_STEP * BLOCK_FLOATS + lane % FLAT_LANE_STEP
}

/// Most lanes a flat frame may have: the survivors of a scan live in a stack buffer this
/// long (4 KiB), so a query allocates nothing. Histories over this many entities always
/// use the tree.
pub(super) const FLAT_CAPACITY: usize = 512;

/// One survivor of a scan: where the ray enters its box (the bits of a non-negative float,
/// which order like the floats) above its lane, so sorting the keys orders the survivors by
/// entry distance, ties by lane.
pub(crate) type Survivors = [MaybeUninit<u64>; FLAT_CAPACITY];

/// The blocks a scan reads: `count` consecutive ring frames from `first` (wrapping), each
/// `frame_floats` long, with `stride` lanes (a multiple of [`FLAT_LANE_STEP`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlatFrames<'a> {
    /// Every frame of the ring, frame-major.
    pub(crate) floats: &'a [f32],
    pub(crate) frame_floats: usize,
    pub(crate) stride: usize,
    pub(super) frames: usize,
    pub(crate) first: usize,
    pub(crate) count: usize,
}

impl FlatFrames<'_> {
    /// Plane `plane`'s lanes `lane..lane + 4`, the union over the frames (per float
    /// `b < a ? b : a`, as the tree's span ranges).
    #[inline(always)]
    fn load4(&self, plane: usize, lane: usize) -> Vec4 {
        let at = lane_float(lane) + plane * FLAT_LANE_STEP;
        let mut frame = self.first;
        let mut v = Vec4::from_slice(&self.floats[frame * self.frame_floats + at..]);
        for _ in 1..self.count {
            frame = if frame + 1 == self.frames {
                0
            } else {
                frame + 1
            };
            // `minps(next, acc)` keeps `acc` unless `next < acc`.
            v = Vec4::from_slice(&self.floats[frame * self.frame_floats + at..]).min(v);
        }
        v
    }
}

/// A ray laid out for the scan: per axis, the plane it enters by (the minimum if it travels
/// towards `+`, the negated maximum otherwise) and the one it leaves by, with the origin and
/// inverse direction signed for the entry plane (the exit plane takes both negated). The
/// same numbers as the tree's ray (`WideRay`), one float per axis rather than splatted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlatRay {
    /// Plane index (0..6) per axis of the entry, and of the exit (the other side's).
    pub(crate) entry_plane: [usize; 3],
    pub(crate) exit_plane: [usize; 3],
    /// The origin, negated on the axes the ray travels towards `-`.
    pub(crate) origin: [f32; 3],
    /// The inverse direction's magnitude (never zero: see [`crate::math::ray_recip`]).
    pub(crate) inv: [f32; 3],
    /// The margin, negated.
    pub(crate) neg_margin: f32,
}

impl FlatRay {
    /// PERF: without branches (the direction's signs are random per shot): a sign flip is
    /// an exclusive or of the inverse direction's sign bit, exact as the tree's negation.
    #[inline]
    pub(super) fn new(origin: Vec3, inv_dir: Vec3, margin: f32) -> Self {
        let sign = |axis: usize| inv_dir[axis].to_bits() & 0x8000_0000;
        let negative = |axis: usize| (sign(axis) >> 31) as usize;
        Self {
            entry_plane: std::array::from_fn(|axis| axis + 3 * negative(axis)),
            exit_plane: std::array::from_fn(|axis| axis + 3 - 3 * negative(axis)),
            origin: std::array::from_fn(|axis| f32::from_bits(origin[axis].to_bits() ^ sign(axis))),
            inv: std::array::from_fn(|axis| inv_dir[axis].abs()),
            neg_margin: -margin,
        }
    }
}

/// Scans every lane of `frames` with `ray` and writes the survivors (lanes whose box, grown
/// by the margin, the ray passes within `[0, t_max]`) to `out` as keys (see [`Survivors`]),
/// sorted by entry distance; returns how many.
///
/// Each lane computes what the tree's four-lane test (`WideRay::enter`) computes for a leaf
/// holding the same box, operation for operation, so both forms pass the same items at the
/// same entry distances. `GROWN` false skips adding the margin, for a margin of `+0.0` only
/// (adding `-0.0` changes no float).
#[inline]
pub(super) fn scan<const GROWN: bool>(
    kernels: Kernels,
    frames: &FlatFrames<'_>,
    ray: &FlatRay,
    t_max: f32,
    out: &mut Survivors,
) -> usize {
    // One frame on the eight-lane kernel where the history's kernels have one.
    let found = (frames.count == 1)
        .then(|| kernels.flat_scan8::<GROWN>(frames, ray, t_max, out))
        .flatten()
        .unwrap_or_else(|| scan4(frames, ray, t_max, out));
    // SAFETY: the scans wrote the first `found` keys.
    let keys = unsafe { &mut *(std::ptr::from_mut(&mut out[..found]) as *mut [u64]) };
    sort_keys(keys);
    found
}

/// [`scan`] four lanes at a time, any number of frames (the portable form).
fn scan4(frames: &FlatFrames<'_>, ray: &FlatRay, t_max: f32, out: &mut Survivors) -> usize {
    let margin = Vec4::splat(ray.neg_margin);
    let t_max_v = Vec4::splat(t_max);
    let mut found = 0;
    for lane in (0..frames.stride).step_by(4) {
        // The tree's arithmetic exactly: the exit plane takes the origin and inverse
        // direction negated.
        let entry = |axis: usize| {
            (frames.load4(ray.entry_plane[axis], lane) + margin - Vec4::splat(ray.origin[axis]))
                * Vec4::splat(ray.inv[axis])
        };
        let exit = |axis: usize| {
            (frames.load4(ray.exit_plane[axis], lane) + margin - Vec4::splat(-ray.origin[axis]))
                * Vec4::splat(-ray.inv[axis])
        };
        let near = entry(0).max(entry(1)).max(entry(2)).max(Vec4::ZERO);
        let far = exit(0).min(exit(1)).min(exit(2)).min(t_max_v);
        let mut mask = near.cmple(far).bitmask();
        let near = near.to_array();
        while mask != 0 {
            let k = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            out[found].write(key(near[k], lane + k));
            found += 1;
        }
    }
    found
}

/// The survivor key of lane `lane` entered at `near` (`>= +0.0`, so its bits order as the
/// floats do).
#[inline(always)]
pub(crate) fn key(near: f32, lane: usize) -> u64 {
    (u64::from(near.to_bits()) << 32) | lane as u64
}

/// The entry distance and lane of a survivor key.
#[inline(always)]
pub(super) fn unkey(key: u64) -> (f32, usize) {
    (
        f32::from_bits((key >> 32) as u32),
        (key & 0xffff_ffff) as usize,
    )
}

/// Sorts survivor keys ascending: by insertion for the usual handful, the standard sort for
/// more (a wide sweep).
#[inline]
fn sort_keys(keys: &mut [u64]) {
    if keys.len() > 16 {
        keys.sort_unstable();
        return;
    }
    for i in 1..keys.len() {
        let k = keys[i];
        let mut at = i;
        while at > 0 && keys[at - 1] > k {
            keys[at] = keys[at - 1];
            at -= 1;
        }
        keys[at] = k;
    }
}

/// Every lane of `frames` whose box (over the frames) intersects `query`, in lane order.
#[inline]
pub(super) fn overlap(frames: &FlatFrames<'_>, query: &Aabb, mut visit: impl FnMut(usize)) {
    // Per axis: a lane overlaps when `min <= query.max` and `neg_max <= -query.min` (that
    // is `max >= query.min`, exactly), as `Aabb::intersects`.
    let hi = query.max.to_array().map(Vec4::splat);
    let neg_lo = (-query.min).to_array().map(Vec4::splat);
    for lane in (0..frames.stride).step_by(4) {
        let mut mask = (0..3).fold(0b1111, |mask, axis| {
            mask & frames.load4(axis, lane).cmple(hi[axis]).bitmask()
                & frames.load4(3 + axis, lane).cmple(neg_lo[axis]).bitmask()
        });
        while mask != 0 {
            let k = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            visit(lane + k);
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng as _, SeedableRng as _};

    use super::*;
    use crate::math::ray_recip;

    #[test]
    fn the_four_lane_scan_finds_what_the_dispatched_scan_finds() {
        // On a CPU with AVX2 `scan` takes the eight-lane kernel for one frame; the portable
        // kernel must give the same keys (entries bit for bit, same lanes, same order).
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(8);
        let mut compared = 0;
        for round in 0..200 {
            let stride = FLAT_LANE_STEP * rng.random_range(1..=FLAT_CAPACITY / FLAT_LANE_STEP);
            let used = rng.random_range(1..=stride);
            let mut floats = vec![f32::INFINITY; 6 * stride];
            for lane in 0..used {
                for axis in 0..3 {
                    let lo = rng.random_range(-8.0..8.0_f32);
                    floats[lane_float(lane) + axis * FLAT_LANE_STEP] = lo;
                    floats[lane_float(lane) + (3 + axis) * FLAT_LANE_STEP] =
                        -(lo + rng.random_range(0.0..4.0));
                }
            }
            let frames = FlatFrames {
                floats: &floats,
                frame_floats: 6 * stride,
                stride,
                frames: 1,
                first: 0,
                count: 1,
            };
            let origin = Vec3::new(
                rng.random_range(-25.0..25.0),
                rng.random_range(-25.0..25.0),
                rng.random_range(-25.0..25.0),
            );
            let dir = (Vec3::new(
                rng.random_range(-8.0..8.0),
                rng.random_range(-8.0..8.0),
                rng.random_range(-8.0..8.0),
            ) - origin)
                .normalize_or(Vec3::X);
            let margin = if round % 2 == 0 {
                0.0
            } else {
                rng.random_range(0.0..1.0)
            };
            let ray = FlatRay::new(origin, ray_recip(dir), margin);
            let t_max = rng.random_range(1.0..80.0);
            let mut a = [MaybeUninit::uninit(); FLAT_CAPACITY];
            let mut b = [MaybeUninit::uninit(); FLAT_CAPACITY];
            // Every kernel this CPU runs, in turn.
            let kernels = Kernels::available()[round % Kernels::available().len()];
            let found = if margin == 0.0 {
                scan::<false>(kernels, &frames, &ray, t_max, &mut a)
            } else {
                scan::<true>(kernels, &frames, &ray, t_max, &mut a)
            };
            let portable = scan4(&frames, &ray, t_max, &mut b);
            assert_eq!(found, portable, "round {round}");
            // SAFETY: both scans wrote their first `found` keys.
            let (a, b) = unsafe {
                (
                    a[..found]
                        .iter()
                        .map(|k| k.assume_init())
                        .collect::<Vec<_>>(),
                    b[..found]
                        .iter()
                        .map(|k| k.assume_init())
                        .collect::<Vec<_>>(),
                )
            };
            let mut b = b;
            sort_keys(&mut b);
            assert_eq!(a, b, "round {round}");
            assert!(a.windows(2).all(|w| w[0] < w[1]), "sorted: round {round}");
            assert!(
                a.iter().all(|&k| unkey(k).1 < used),
                "only used lanes: round {round}"
            );
            compared += found;
        }
        assert!(compared > 200, "the rays pass boxes: {compared}");
    }
}
