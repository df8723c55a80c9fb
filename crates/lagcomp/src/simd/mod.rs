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

use glam::Vec3A;

use crate::history::{BonePass, StoredRotation, StoredTranslation};
use crate::math::BoneTransform;
pub(crate) use portable::Portable;

/// Which kernels run: the widest instruction set this CPU offers that the crate has kernels
/// for, or the portable ones when forced (see the module docs).
///
/// A value names a level only if this CPU runs it ([`Kernels::detect`],
/// [`Kernels::available`] and [`Kernels::PORTABLE`] are the only ways to make one): the
/// dispatch in [`Kernels::run`] relies on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Kernels(Level);

/// The instruction sets, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

    /// The widest kernels this CPU can run, whatever is forced.
    fn native() -> Self {
        #[cfg(all(target_arch = "x86_64", not(feature = "portable")))]
        {
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

    /// Whether these are the AVX2 kernels or their AVX-512 builds (the eight-lane query
    /// kernels run).
    #[must_use]
    #[inline]
    pub(crate) fn eight_lanes(self) -> bool {
        self.0 >= Level::Avx2
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
}

/// Code written once over [`Isa`] and compiled for each instruction set
/// ([`Kernels::run`]): a recorder's loop with its bone pass inlined, a tree's refit.
pub(crate) trait KernelBody {
    /// What the body returns.
    type Output;
    /// Whether the body runs its AVX-512 build where the CPU has one (otherwise the AVX2
    /// build runs there).
    const WIDE: bool = false;
    /// The body, with `isa`'s kernels.
    fn run<K: Isa>(self, isa: K) -> Self::Output;
}

/// One instruction set's kernels. Every kernel computes the same bits as the portable
/// one; a value of a type is proof that the CPU runs its instructions (the SIMD types are
/// only made by [`Kernels::run`]).
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
    fn leaf_block(
        self,
        bounds: &[[Vec3A; 2]; 8],
        block: &mut [f32; 48],
        stamp: impl FnMut(usize, Option<Vec3A>) -> (Vec3A, Vec3A),
    );

    /// Copies `bytes` bytes from `src` to `dst`, with non-temporal stores where the kernel
    /// has them: `head` bytes first with plain stores (the bytes before `dst`'s first
    /// 16-byte boundary), then 16-byte pieces (32-byte ones if `wide`: `dst` is then
    /// 32-byte aligned), the rest plain. `FULL` is a chunk size known where it is called:
    /// a chunk of exactly `FULL` bytes takes pieces of a constant count.
    ///
    /// # Safety
    /// `src` and `dst` hold `bytes` bytes and do not overlap; `dst + head` is 16-byte
    /// aligned (32-byte if `wide`) unless `head >= bytes`; the caller fences.
    unsafe fn stream_copy<const FULL: usize>(
        self,
        dst: *mut u8,
        src: *const u8,
        bytes: usize,
        head: usize,
        wide: bool,
    );

    /// Stores `v`'s x, y and z at `at`, and may write anything into the float after them
    /// (a whole 16-byte store where the kernel has one).
    ///
    /// # Safety
    /// `at` holds four writable floats.
    unsafe fn store_corner(self, at: *mut f32, v: Vec3A);

    /// Orders the non-temporal stores made so far before any later store (a no-op where
    /// there are none).
    fn fence(self);
}

/// Whether the portable kernels are forced: the `portable` feature, or
/// `LAGCOMP_KERNELS=portable` in the environment (read once; any other value, or none,
/// leaves the choice to the CPU). Always under Miri, which does not model every intrinsic
/// (streaming stores) nor CPU feature detection.
fn forced_portable() -> bool {
    cfg!(feature = "portable")
        || cfg!(miri)
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
