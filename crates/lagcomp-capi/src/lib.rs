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
//!
//! Integration guides: `docs/engines/unreal.md` and `docs/engines/unity.md`.
//!
//! # Example
//!
//! The calls a C server makes, here from Rust: a history, a rigid target, one tick, and
//! a rewound ray.
//!
//! ```
//! use lagcomp_capi::*;
//!
//! // SAFETY: every pointer passed is to a live local of the right type and length.
//! unsafe {
//!     assert_eq!(lagcomp_abi_version(), LAGCOMP_ABI_VERSION);
//!     let mut config = std::mem::zeroed();
//!     assert_eq!(lagcomp_history_config_default(&mut config), LAGCOMP_OK);
//!     let mut history = std::ptr::null_mut();
//!     assert_eq!(lagcomp_history_new(&config, &mut history), LAGCOMP_OK);
//!
//!     let identity = LagcompQuat { x: 0.0, y: 0.0, z: 0.0, w: 1.0 };
//!     let body = LagcompHitbox {
//!         id: 0,
//!         bone: 0,
//!         zone: LAGCOMP_ZONE_TORSO,
//!         zone_custom: 0,
//!         offset: LagcompPose { translation: LagcompVec3::default(), rotation: identity },
//!         shape: LagcompShape {
//!             kind: LAGCOMP_SHAPE_SPHERE,
//!             axis: LAGCOMP_AXIS_Y,
//!             radius: 0.5,
//!             half_height: 0.0,
//!             half_extents: LagcompVec3::default(),
//!         },
//!         name: c"body".as_ptr(),
//!     };
//!     let mut target = 0;
//!     assert_eq!(lagcomp_history_spawn_rigid(history, &body, 1, &mut target), LAGCOMP_OK);
//!
//!     // Tick 0 at server time 0: the target stands 10 m down +z.
//!     let bone = LagcompBoneTransform {
//!         rotation: identity,
//!         translation: LagcompVec3 { x: 0.0, y: 0.0, z: 10.0 },
//!         scale: LagcompVec3 { x: 1.0, y: 1.0, z: 1.0 },
//!         padding: [0.0; 2],
//!     };
//!     let status = lagcomp_history_record_tick(
//!         history, 0, 0.0, &target, std::ptr::null(), 1, &bone, 1,
//!     );
//!     assert_eq!(status, LAGCOMP_OK);
//!
//!     let mut query = std::mem::zeroed();
//!     assert_eq!(lagcomp_query_default(&mut query), LAGCOMP_OK); // time 0
//!     let ray = LagcompRay {
//!         origin: LagcompVec3::default(),
//!         direction: LagcompVec3 { x: 0.0, y: 0.0, z: 1.0 },
//!         max_distance: 100.0,
//!     };
//!     let mut trace = std::mem::zeroed::<LagcompTrace>();
//!     assert_eq!(lagcomp_history_ray(history, &query, &ray, &mut trace), LAGCOMP_OK);
//!     assert_eq!((trace.has_hit, trace.hit.entity), (1, target));
//!     assert!((trace.hit.distance - 9.5).abs() < 1e-5);
//!
//!     assert_eq!(lagcomp_history_free(history), LAGCOMP_OK);
//!     assert_eq!(lagcomp_history_free(history), LAGCOMP_STALE_HANDLE);
//! }
//! ```

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
pub const LAGCOMP_ABI_VERSION: u32 = 2;

/// The `LAGCOMP_ABI_VERSION` this library was built with. A caller whose header says
/// otherwise must not use the library.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_abi_version() -> u32 {
    LAGCOMP_ABI_VERSION
}
