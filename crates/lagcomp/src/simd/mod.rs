//! The crate's one door to SIMD: which kernels run on this CPU, decided once per
//! [`History`](crate::History), and every instruction-set-specific body behind that choice.
//!
//! Every algorithm of the crate (batch plans, flat leaves, the trees, the query's stages) is
//! the same on every CPU; only the kernels below differ, and every kernel computes the same
//! bits as the portable one (tests compare them). Nothing outside this module names a
//! target architecture, an intrinsic or a CPU feature.
//!
//! - [`portable`]: glam and plain Rust, any target, the reference the others are tested
//!   against.
//! - `x86`: x86_64's SSE2 baseline and AVX2 (chosen at run time).
//! - `avx512`: builds of the AVX2 kernels that may use AVX-512F/VL's 32 vector registers.
//!
//! **Forcing the portable kernels.** The cargo feature `portable` compiles the x86 kernels
//! out (every CPU then runs what an aarch64 build runs); the environment variable
//! `LAGCOMP_KERNELS=portable`, read once per process, makes every history created after it
//! choose the portable kernels at run time (the SSE2 helpers that x86_64 always has stay).
//! Both exist so that the whole test suite can run on the portable kernels on an x86 CI
//! machine.

mod portable;
#[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
mod x86;

use std::sync::OnceLock;

use glam::{Vec3A, Vec4};

use crate::bvh::{FlatFrames, FlatRay, Survivors};
use crate::history::{BonePass, LineLanes, StoredRotation, StoredTranslation};
use crate::math::BoneTransform;
pub(crate) use portable::{Portable, min_into};

/// Which kernels run: the widest instruction set this CPU offers that the crate has kernels
/// for, or the portable ones when forced (see the module docs).
///
/// A value names a level only if this CPU runs it ([`Kernels::detect`],
/// `Kernels::available` (tests) and [`Kernels::PORTABLE`] are the only ways to make one): the
/// dispatch in [`Kernels::run`] relies on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Kernels(Level);

/// The instruction sets, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(
    all(not(test), not(all(target_arch = "x86_64", not(feature = "portable")))),
    expect(dead_code, reason = "only x86_64 builds have SIMD kernels to choose")
)]
enum Level {
    /// glam and plain Rust, any target.
    Portable,
    /// x86_64's baseline: 128-bit intrinsics.
    Sse2,
    /// 256-bit intrinsics (AVX2).
    Avx2,
    /// The AVX2 kernels, and the bodies that ask for it ([`KernelBody::WIDE`]) compiled
    /// with AVX-512F/VL enabled (32 vector registers, EVEX forms).
    Avx512,
}

impl Default for Kernels {
    /// [`Kernels::detect`].
    fn default() -> Self {
        Self::detect()
    }
}

impl Kernels {
    /// The portable kernels, on any CPU.
    pub(crate) const PORTABLE: Self = Self(Level::Portable);

    /// The kernels this process runs: the CPU's widest, unless forced portable.
    #[must_use]
    pub(crate) fn detect() -> Self {
        static CHOSEN: OnceLock<Kernels> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            if forced_portable() {
                Self::PORTABLE
            } else {
                Self::native()
            }
        })
    }

    /// The widest kernels this CPU can run, whatever is forced (under Miri, which does not
    /// model every intrinsic nor CPU feature detection, the portable ones).
    fn native() -> Self {
        #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
        {
            if cfg!(miri) {
                return Self::PORTABLE;
            }
            Self(x86::detect())
        }
        #[cfg(not(all(target_arch = "x86_64", not(feature = "portable"))))]
        {
            Self::PORTABLE
        }
    }

    /// Every choice this CPU can run, narrowest first (for tests that compare them). The
    /// forcing switch does not narrow it: a test compares the kernels that exist.
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Self> {
        let native = Self::native();
        [Level::Portable, Level::Sse2, Level::Avx2, Level::Avx512]
            .into_iter()
            .map(Self)
            .filter(|k| *k <= native)
            .collect()
    }

    /// Runs `body` with these kernels, compiled for their instruction set (the body's
    /// kernels inline into it).
    #[inline(always)]
    pub(crate) fn run<B: KernelBody>(self, body: B) -> B::Output {
        match self.0 {
            #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
            // SAFETY: `Level::Avx512` is only made on a CPU with AVX2, AVX-512F and
            // AVX-512VL (`x86::detect`; see the type's docs).
            Level::Avx512 if B::WIDE => unsafe { x86::with_avx512(body) },
            #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
            // SAFETY: `Level::Avx2` and `Level::Avx512` are only made on a CPU with AVX2.
            Level::Avx2 | Level::Avx512 => unsafe { x86::with_avx2(body) },
            #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
            Level::Sse2 => x86::with_sse2(body),
            _ => body.run(Portable),
        }
    }

    /// Runs `body` compiled for these kernels if they have eight-lane (AVX2) forms of the
    /// query's kernels; `None` otherwise (the caller runs its four-lane form).
    #[inline(always)]
    pub(crate) fn run_eight_lanes<B: KernelBody>(self, body: B) -> Option<B::Output> {
        match self.0 {
            #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
            // SAFETY: `Level::Avx2` and `Level::Avx512` are only made on a CPU with AVX2.
            Level::Avx2 | Level::Avx512 => Some(unsafe { x86::with_avx2(body) }),
            _ => {
                let _ = body;
                None
            }
        }
    }

    /// Grows every float of `into` by the one at the same index of `from`: per float `b <
    /// a ? b : a` (so `into` ends as the union of the boxes both hold).
    ///
    /// PERF: explicit packed minimums on x86_64. The plain loop, compiled for AVX2, became
    /// a compare and a *masked store* per eight floats (`vcmpltps` + `vmaskmovps`: LLVM
    /// turned the unconditional store back into a conditional one), and a masked store
    /// costs many times a plain one. `minps(b, a)` returns `a` unless `b < a`, which is
    /// exactly `b < a ? b : a` (signed zeros included), so the bits are unchanged.
    #[inline]
    pub(crate) fn grow_all(self, into: &mut [f32], from: &[f32]) {
        match self.0 {
            #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
            // SAFETY: `Level::Avx2` and `Level::Avx512` are only made on a CPU with AVX2.
            Level::Avx2 | Level::Avx512 => unsafe { x86::grow_all_avx2(into, from) },
            #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
            Level::Sse2 => x86::grow_all_sse(into, from),
            _ => portable::min_into(into, from),
        }
    }

    /// The flat form's scan of one frame on eight lanes (`bvh/flat.rs`, `scan`), where
    /// these kernels have it; `None` otherwise.
    #[inline]
    pub(crate) fn flat_scan8<const GROWN: bool>(
        self,
        frames: &FlatFrames<'_>,
        ray: &FlatRay,
        t_max: f32,
        out: &mut Survivors,
    ) -> Option<usize> {
        match self.0 {
            #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
            Level::Avx2 | Level::Avx512 => {
                // SAFETY: `Level::Avx2` and `Level::Avx512` are only made on a CPU with AVX2.
                Some(unsafe { x86::flat_scan8::<GROWN>(frames, ray, t_max, out) })
            }
            _ => {
                let _ = (frames, ray, t_max, out);
                None
            }
        }
    }
}

/// Code written once over [`Isa`] and compiled for each instruction set
/// ([`Kernels::run`]): a recorder's loop with its bone pass inlined, a tree's refit.
///
/// PERF: implementations mark `run` `#[inline(always)]`: out of line it is compiled
/// without the instruction set, and its kernels' intrinsics become calls (the dense
/// stamping's, so, cost a 5000x20 tick 6 % more instructions).
pub(crate) trait KernelBody {
    /// What the body returns.
    type Output;
    /// Whether the body runs its AVX-512 build where the CPU has one (otherwise the AVX2
    /// build runs there).
    #[cfg_attr(
        not(all(target_arch = "x86_64", not(feature = "portable"))),
        expect(dead_code, reason = "only x86_64 builds have an AVX-512 build")
    )]
    const WIDE: bool = false;
    /// The body, with `isa`'s kernels.
    fn run<K: Isa>(self, isa: K) -> Self::Output;
}

/// One instruction set's kernels. Every kernel computes the same bits as the portable
/// one; a value of a type is proof that the CPU runs its instructions (the SIMD types are
/// only made by [`Kernels::run`]).
///
/// Each kernel is written once in its portable form: the provided methods here, and, for
/// the kernels that come with an associated type, the macros
/// [`portable::entity_by_entity_batches`] and [`portable::four_lane_culls`]. An
/// instruction set implements only what it does differently, so that two sets whose forms
/// differ only by target features share one body (compiled for each by [`Kernels::run`]).
pub(crate) trait Isa: Copy {
    /// The fast checks of a batch's bones so far ([`Isa::bone_segment`]).
    type BatchChecks: Copy;

    /// The per-bone pass of one entity (`history/bone_pass.rs` says what it computes):
    /// copies `bones` into `translations` and `rotations`, checks them and bounds them
    /// (`reach[i]`, the bone's reach in four lanes, around bone `i`).
    ///
    /// `translations` holds the row and one element after it, which a kernel may write
    /// and puts back before returning. With `STREAM`, the kernels that have non-temporal
    /// stores write whole groups of four bones with them (the same bits).
    ///
    /// # Safety
    /// With `STREAM`: when there are four bones or more, `translations` starts 16-byte
    /// aligned and `rotations` 32-byte aligned, and the caller runs [`Isa::fence`] before
    /// another thread may read the rows.
    ///
    /// # Panics
    /// If the slices are empty or their lengths do not match (the recorder slices them to
    /// the rig's bone count, which is at least one).
    unsafe fn bone_pass<const STREAM: bool>(
        self,
        bones: &[BoneTransform],
        reach: &[[f32; 4]],
        translations: &mut [StoredTranslation],
        rotations: &mut [StoredRotation],
    ) -> BonePass;

    /// The checks of a batch before its first bone: nothing taken.
    fn batch_checks(self) -> Self::BatchChecks;

    /// The bone pass of `bounds.len()` entities of one rig, `4 * groups` bones each, whose
    /// rows follow one another (a batch plan's segment): rows copied as
    /// [`Isa::bone_pass`] copies them, each entity's unpadded bounds into `bounds`, and
    /// the fast checks of every bone into `checks`, decided once for the whole batch by
    /// [`Isa::batch_checks_pass`]. `GROUPS`, when not zero, is `groups`, known where it is
    /// called.
    ///
    /// Without `STREAM`, a kernel may write the element after the segment's rows (the
    /// next segment's first translation, or a spare); the caller puts it back if it
    /// belongs to no entity recorded after this segment.
    ///
    /// # Safety
    /// `groups >= 1`; `src` points to `bounds.len() * 4 * groups` bones, `reach` to
    /// `4 * groups` splatted reaches, `r_out` to as many writable rotations and `t_out` to
    /// as many writable translations and one more. With `STREAM`, `t_out` is 16-byte
    /// aligned, `r_out` 32-byte aligned, and the caller fences as for [`Isa::bone_pass`].
    #[expect(
        clippy::too_many_arguments,
        reason = "a segment's rows, its rig's reach, its shape and its outputs"
    )]
    unsafe fn bone_segment<const STREAM: bool, const GROUPS: usize>(
        self,
        src: *const BoneTransform,
        reach: *const [f32; 4],
        t_out: *mut StoredTranslation,
        r_out: *mut StoredRotation,
        groups: usize,
        bounds: &mut [[Vec3A; 2]],
        checks: &mut Self::BatchChecks,
    );

    /// Whether every bone of every segment passed the fast checks and has unit scale.
    fn batch_checks_pass(self, checks: &Self::BatchChecks) -> bool;

    /// The leaves of eight entities as one block of the flat form: `stamp(j, margin)`
    /// writes entity `j`'s frame record padded by `margin` (by `padded_corners`, when
    /// `None`) and returns its padded corners; the block gets the six planes
    /// (`min.x`, `min.y`, `min.z`, `-max.x`, `-max.y`, `-max.z`, eight lanes each) of
    /// exactly those corners.
    ///
    /// The portable form stamps and writes the entities one by one.
    #[inline(always)]
    fn leaf_block(
        self,
        bounds: &[[Vec3A; 2]; 8],
        block: &mut [f32; 48],
        mut stamp: impl FnMut(usize, Option<Vec3A>) -> (Vec3A, Vec3A),
    ) {
        // The stamp computes each entity's margin from its record itself.
        let _ = bounds;
        for j in 0..8 {
            let (min, max) = stamp(j, None);
            let planes = [min.x, min.y, min.z, -max.x, -max.y, -max.z];
            for (p, value) in planes.into_iter().enumerate() {
                block[8 * p + j] = value;
            }
        }
    }

    /// Copies `bytes` bytes from `src` to `dst`, with non-temporal stores where the kernel
    /// has them: `head` bytes first with plain stores (the bytes before `dst`'s first
    /// 16-byte boundary), then 16-byte pieces (32-byte ones if `wide`: `dst` is then
    /// 32-byte aligned), the rest plain. `FULL` is a chunk size known where it is called:
    /// a chunk of exactly `FULL` bytes takes pieces of a constant count.
    ///
    /// # Safety
    /// `src` and `dst` hold `bytes` bytes and do not overlap; `dst + head` is 16-byte
    /// aligned (32-byte if `wide`) unless `head >= bytes`; the caller fences.
    ///
    /// The portable form is one plain copy.
    #[inline(always)]
    unsafe fn stream_copy<const FULL: usize>(
        self,
        dst: *mut u8,
        src: *const u8,
        bytes: usize,
        head: usize,
        wide: bool,
    ) {
        // Plain stores need no alignment: the head and the piece size do not matter.
        let _ = (head, wide);
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
    }

    /// A trace's line on this kernel's eight lanes ([`Isa::cull8`]).
    type Line8: Copy;

    /// `line` and `t_max` for [`Isa::cull8`], with the blend weights of `alpha` (`1 -
    /// alpha` on the older frame).
    fn line8(self, line: &LineLanes, t_max: f32, alpha: f32) -> Self::Line8;

    /// The trace's bone cull (`history::cull4`) for eight bones: bit `k` set when bone `k`
    /// may be hit. The same mask as two four-lane culls.
    fn cull8<const SINGLE: bool>(
        self,
        ta: &[StoredTranslation; 8],
        tb: &[StoredTranslation; 8],
        reach: &[f32; 8],
        line: &Self::Line8,
    ) -> u32;

    /// Stores `v`'s x, y and z at `at`, and may write anything into the float after them
    /// (a whole 16-byte store where the kernel has one).
    ///
    /// # Safety
    /// `at` holds four writable floats.
    unsafe fn store_corner(self, at: *mut f32, v: Vec3A);

    /// Orders the non-temporal stores made so far before any later store (a no-op where
    /// there are none: the portable form).
    #[inline(always)]
    fn fence(self) {}
}

/// Whether the portable kernels are forced: the `portable` feature, or
/// `LAGCOMP_KERNELS=portable` in the environment (read once; any other value, or none,
/// leaves the choice to the CPU). Always under Miri, which does not model every intrinsic
/// (streaming stores) nor CPU feature detection.
fn forced_portable() -> bool {
    cfg!(feature = "portable")
        || std::env::var_os("LAGCOMP_KERNELS").is_some_and(|value| value == "portable")
}

/// Asks the CPU to bring the cache line holding `at` into cache: a hint, which never
/// faults, whatever the address, and changes nothing a program can observe (where there is
/// no prefetch kernel it does nothing).
///
/// PERF: a rewound query's data sits in rings larger than the first-level cache (at 200
/// entities than the second), found by a chain of dependent loads (frame record, bone
/// rows, the rotations of the bones that pass the cull); a query asks for what it will
/// read as soon as it knows the address, so the misses overlap instead of queuing.
#[inline(always)]
pub(crate) fn prefetch_line(at: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
    x86::prefetch_line(at);
    #[cfg(not(all(target_arch = "x86_64", not(feature = "portable"))))]
    let _ = at;
}

/// [`Isa::bone_segment`] as one [`Isa::bone_pass`] per entity, for the kernels without a
/// batch form: the checks are whether every entity's pass was clean.
///
/// # Safety
/// As [`Isa::bone_segment`] (plain stores: `STREAM` is not passed on).
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the kernels and the arguments of `Isa::bone_segment`"
)]
unsafe fn segment_entity_by_entity<K: Isa>(
    isa: K,
    src: *const BoneTransform,
    reach: *const [f32; 4],
    t_out: *mut StoredTranslation,
    r_out: *mut StoredRotation,
    groups: usize,
    bounds: &mut [[Vec3A; 2]],
    checks: &mut bool,
) {
    let n = 4 * groups;
    // SAFETY: the caller's contract: `4 * groups` reaches.
    let reach = unsafe { std::slice::from_raw_parts(reach, n) };
    for (k, entity) in bounds.iter_mut().enumerate() {
        // SAFETY: the caller's contract: entity `k`'s `n` bones and rows are the `k`-th run
        // of `n`, and the translations have one more after the last run (a pass puts back
        // what it spills onto the next run's first translation); plain stores.
        let pass = unsafe {
            isa.bone_pass::<false>(
                std::slice::from_raw_parts(src.add(k * n), n),
                reach,
                std::slice::from_raw_parts_mut(t_out.add(k * n), n + 1),
                std::slice::from_raw_parts_mut(r_out.add(k * n), n),
            )
        };
        *entity = [pass.lo, pass.hi];
        *checks &= pass.clean;
    }
}

/// Two boxes' twelve floats (box 0's `min`, `neg_max`, then box 1's) as `[xs, ys, zs]`, each
/// `[min 0, min 1, neg_max 0, neg_max 1]` (the tree walk's two-box slab test).
#[inline(always)]
pub(crate) fn pair_lanes(f: &[f32; 12]) -> [Vec4; 3] {
    #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
    {
        x86::pair_lanes(f)
    }
    #[cfg(not(all(target_arch = "x86_64", not(feature = "portable"))))]
    {
        portable::pair_lanes(f)
    }
}

/// Each plane's smallest lane: `[min p0, ..., min p5]` (a wide node's children's boxes
/// reduced to the node's own; minimums are exact, so every form gives the same numbers).
#[inline(always)]
pub(crate) fn lane_minimums(planes: [Vec4; 6]) -> [f32; 6] {
    #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
    {
        x86::lane_minimums(planes)
    }
    #[cfg(not(all(target_arch = "x86_64", not(feature = "portable"))))]
    {
        portable::lane_minimums(planes)
    }
}

/// Four points' twelve coordinates (`[x0 y0 z0 x1 y1 z1 ...]`) on three vectors, as stored:
/// `[x0 y0 z0 x1, y1 z1 x2 y2, z2 x3 y3 z3]`.
#[inline(always)]
pub(crate) fn load_rows(f: &[f32; 12]) -> [Vec4; 3] {
    #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
    {
        x86::load_rows(f)
    }
    #[cfg(not(all(target_arch = "x86_64", not(feature = "portable"))))]
    {
        portable::load_rows(f)
    }
}

/// Four points, from rows (as [`load_rows`] gives them) to lanes: `[xs, ys, zs]`.
#[inline(always)]
pub(crate) fn transpose(rows: [Vec4; 3]) -> [Vec4; 3] {
    #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
    {
        x86::transpose(rows)
    }
    #[cfg(not(all(target_arch = "x86_64", not(feature = "portable"))))]
    {
        portable::transpose(rows)
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec4;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    use super::portable;

    /// A float a box or a bone row may hold: any magnitude, either sign, zeros of both
    /// signs now and then.
    fn value(rng: &mut Pcg64Mcg) -> f32 {
        match rng.random_range(0..8) {
            0 => 0.0,
            1 => -0.0,
            _ => rng.random_range(-1.0e3..1.0e3),
        }
    }

    /// The lane helpers this build uses (shuffles on x86_64) give what their portable
    /// forms give: the same lanes bit for bit, the same minimums (equal as numbers: a
    /// minimum of `0.0` and `-0.0` may be either).
    #[test]
    fn the_lane_helpers_give_what_their_portable_forms_give() {
        let mut rng = Pcg64Mcg::seed_from_u64(0x1a9e);
        let bits = |v: [Vec4; 3]| v.map(|v| v.to_array().map(f32::to_bits));
        // Fewer under Miri (the CI's Miri job runs this; it is about a thousand times slower).
        let rounds = if cfg!(miri) { 50 } else { 10_000 };
        for _ in 0..rounds {
            let f: [f32; 12] = std::array::from_fn(|_| value(&mut rng));
            assert_eq!(bits(super::pair_lanes(&f)), bits(portable::pair_lanes(&f)));
            assert_eq!(bits(super::load_rows(&f)), bits(portable::load_rows(&f)));
            let rows = portable::load_rows(&f);
            assert_eq!(
                bits(super::transpose(rows)),
                bits(portable::transpose(rows))
            );
            let planes: [Vec4; 6] =
                std::array::from_fn(|_| Vec4::from_array(std::array::from_fn(|_| value(&mut rng))));
            assert_eq!(
                super::lane_minimums(planes),
                portable::lane_minimums(planes)
            );
        }
    }
}
