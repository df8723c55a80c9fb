//! A C interface to `lagcomp`: the history of every entity's hitboxes, rewound queries,
//! and the shot validator, for game servers written in C++ (Unreal) or C# (Unity) or
//! anything else that calls C.
//!
//! The header is `include/lagcomp.h`, generated from this crate by cbindgen (a test fails
//! when the committed header is out of date). The conventions:
//!
//! - Every symbol starts with `lagcomp_` (types `Lagcomp`, constants `LAGCOMP_`).
//! - Histories and validators are opaque handles, created and freed only by the library.
//!   A freed handle is detected, not followed: calls with it return
//!   `LAGCOMP_STALE_HANDLE` (see `handle.rs` for why a table and not a tagged pointer).
//! - Every fallible call returns a `LagcompStatus` (`int32_t`); on failure,
//!   `lagcomp_last_error()` holds a sentence for the calling thread. Results go to
//!   out-parameters; structs are passed by pointer, never by value (Unity's Burst
//!   compiler refuses structs by value). Enums are fixed-width integers.
//! - Config-like structs start with `struct_size`; fill them with their `_default`
//!   function so later versions can append fields.
//! - Check `lagcomp_abi_version() == LAGCOMP_ABI_VERSION` at startup: a library built from
//!   another version of the header may lay its structs out differently.
//! - No panic crosses the boundary: it becomes `LAGCOMP_PANIC` with its message. Null
//!   pointers, bad lengths, non-finite numbers and stale handles get a status, never a
//!   crash. (Build with `panic = "unwind"`, the default, for this to hold.)
//!
//! Threads: any function may be called from any thread. A history and a validator each
//! have a mutex: calls on the same one from two threads run one after the other (the
//! second blocks), calls on different ones run in parallel. `lagcomp_last_error` is per
//! thread.
//!
//! Units are the caller's, used consistently: lengths in metres in the examples (an
//! Unreal server converts from centimetres), times in server seconds, ticks as the
//! server numbers them.

mod args;
mod handle;
pub mod history;
pub mod query;
pub mod status;
pub mod types;
pub mod validator;

pub use history::*;
pub use query::*;
pub use status::*;
pub use types::*;
pub use validator::*;

/// The version of the C interface's layout and semantics. Bumped on any change a caller
/// compiled against an older header would get wrong; compare with
/// `lagcomp_abi_version()` at startup.
pub const LAGCOMP_ABI_VERSION: u32 = 1;

/// The `LAGCOMP_ABI_VERSION` this library was built with. A caller whose header says
/// otherwise must not use the library.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_abi_version() -> u32 {
    LAGCOMP_ABI_VERSION
}
