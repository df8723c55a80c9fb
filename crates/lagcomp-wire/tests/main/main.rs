//! lagcomp-wire's integration tests, in one binary so the crate's dependencies are linked
//! once: a module per concern, and shared message generators (`common`).
//!
//! `allocation` installs a counting global allocator for the whole binary; it counts per
//! thread, so the other tests running beside it neither disturb nor are disturbed by it.

mod allocation;
mod common;
mod errors;
mod exchange;
mod kinds;
mod robustness;
mod roundtrip;
mod sizes;
mod snapshots;
