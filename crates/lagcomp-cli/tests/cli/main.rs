//! The `lagcomp` command's integration tests in one binary (one link instead of one per
//! file), each running the built command as a process.

mod end_to_end;
mod proxy;
mod tables;
mod validate;
