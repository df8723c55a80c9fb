//! The core's integration tests, one module per concern, in one test binary: each file under
//! `tests/` is linked against the whole dependency graph on its own, so one binary instead
//! of seven saves six links of parry3d, proptest and the crate.
//!
//! `tests/alloc.rs` stays a binary of its own: it installs a counting global allocator,
//! which is a choice for the whole process; every test here runs on the plain system
//! allocator, as a game's would.

#[macro_use]
mod common;
mod support;

mod bad_input;
mod culling;
mod differential_parry;
mod entity_at;
mod evasion;
mod extrapolation;
mod interpolation;
mod penetration;
mod properties;
mod roles;
mod shape_sweeps;
mod shapes;
