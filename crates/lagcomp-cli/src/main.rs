//! The `lagcomp` command.

fn main() {}
