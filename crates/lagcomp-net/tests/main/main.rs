//! lagcomp-net's integration tests, in one binary so the crate's dependencies are linked
//! once: a module per concern.

mod clock_sync;
mod conditioner;
mod interp_matches_history;
mod properties;
