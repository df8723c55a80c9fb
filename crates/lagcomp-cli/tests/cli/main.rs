//! The `lagcomp` command's integration tests in one binary (one link instead of one per
//! file), each running the built command as a process.

mod end_to_end;
mod proxy;
mod simulate;
mod tables;
mod validate;

use std::process::{Command, Output};

/// Runs the built `lagcomp` with `args` to its end.
fn lagcomp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lagcomp"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// A command's output as text.
fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}
