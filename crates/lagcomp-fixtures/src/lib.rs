//! Seeded scenes shared by lagcomp's tests and benchmarks (a dev-only crate: nothing here
//! is for users of lagcomp).
//!
//! - [`rig`]: a humanoid skeleton (16 or 20 bones, one hitbox per bone) and its walk cycle.
//! - [`scene`]: seeded scenes of entities walking an arena, recorded into a full
//!   [`lagcomp::History`], with shots at random times inside the rewind window.
//!
//! The same scene always gives the same poses and shots, so a benchmark and a test that
//! build one measure and check the same thing. The benchmarks (`lagcomp-bench`) and the
//! service's tests (`lagcomp-service`) build on these.

pub mod rig;
pub mod scene;

pub use rig::Skeleton;
pub use scene::{SCENES, Scene, SceneSpec, Shot};
