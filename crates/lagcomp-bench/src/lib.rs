//! The benchmark scenes of `lagcomp` (built by `lagcomp-fixtures`) in parry3d and
//! rapier3d, and what the criterion suite needs around them.
//!
//! - [`parry_world`]: the same hitboxes, in the present, in a parry3d `Bvh` and `Compound`.
//! - [`rapier_world`]: the same hitboxes as rapier3d colliders, rewound the usual way
//!   (move every collider, update the broad phase, cast, move back, update).
//! - [`copy_target`]: where the memcpy baselines copy to (away from a slow `rep movsb` case).
//! - [`row_copy`]: a bare copy of the bytes a tick stores, into a ring as long as the history.
//! - [`report`]: reading criterion's estimates back and printing the ratio tables.
//!
//! The criterion suite is `benches/rewind.rs`; `cargo run --release -p lagcomp-bench --bin
//! bench-table` prints the tables of `BENCHMARKS.md` from its last run.

pub mod copy_target;
pub mod parry_world;
pub mod rapier_world;
pub mod report;
pub mod row_copy;

pub use parry_world::ParryWorld;
pub use rapier_world::RapierRewind;
