//! lagcomp-service's integration tests in one binary (one link instead of one per file),
//! all in the deterministic world of `common`.

mod common;
mod identical;
mod lifecycle;
mod stress;
