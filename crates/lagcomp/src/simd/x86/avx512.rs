//! The AVX-512 builds: the AVX2 kernels compiled with AVX-512F and AVX-512VL enabled, so
//! that the compiler may use 32 vector registers (and EVEX forms such as `vpternlogd`).
//! The same intrinsics, so bit for bit the same results.

use super::Avx2;
use crate::simd::KernelBody;

/// Runs `body` with the AVX2 kernels, compiled with AVX-512F/VL enabled.
///
/// PERF: a batch plan's bone pass with 16 registers spilled accumulators and constants
/// to the stack (13 stack accesses in the 64x16 entity loop, 4 in the 200x20 one); with
/// 32, none (213 -> 202 and 256 -> 249 instructions an entity). On an AVX-512 host
/// (Zen 5-like), alternated pinned runs of the funnel's record tick (`FUNNEL_RECORD=1`),
/// minimum and median: 64x16 -6 % and -9 % (8 pairs), 5000x20 -6 % and -8 % (6 pairs),
/// 200x20 nothing measurable (its loop had little to spill).
///
/// # Safety
/// The CPU supports AVX2, AVX-512F and AVX-512VL, and `detect` chose SIMD kernels.
#[target_feature(enable = "avx2,avx512f,avx512vl")]
pub(in crate::simd) unsafe fn with_avx512<B: KernelBody>(body: B) -> B::Output {
    body.run(Avx2(()))
}
