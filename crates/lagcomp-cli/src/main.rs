//! The `lagcomp` command.
//!
//! - `lagcomp simulate`: the match simulator and its report, the main job (`simulate.rs`).
//! - `lagcomp validate RECORDING`: re-validates a match recording offline (`validate.rs`).
//! - `lagcomp proxy`: a UDP proxy putting real traffic through the link conditioner (`proxy.rs`).
//! - `lagcomp serve`: the game server over real UDP (`serve.rs`).
//! - `lagcomp bots`: bot clients against it, with the agreement table (`bots.rs`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bots;
mod key;
mod proxy;
mod serve;
mod simulate;
mod validate;

/// Server-side rewind for fair hit registration: tools.
#[derive(Debug, Parser)]
#[command(name = "lagcomp", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate matches of bots behind emulated networks and report how often the server
    /// agrees with honest clients and how many cheats get through (writes report/index.html).
    Simulate(simulate::Args),
    /// Re-run shot validation over a match recording (JSON Lines, see docs/FORMAT.md) and
    /// summarise the verdicts by reason and by shooter.
    Validate(validate::Args),
    /// Forward UDP between clients and a server through the link conditioner (a preset, or
    /// latency, jitter, loss, duplication and reordering per direction).
    Proxy(proxy::Args),
    /// Run the game server over UDP: bodies, history, snapshots, clock sync and shot
    /// validation on a fixed tick, with a status line a second and an optional audit log
    /// and match recording.
    Serve(serve::Args),
    /// Run bot clients against a server (or a proxy in front of it) and print how often
    /// the server agreed with what they saw, and what became of their cheats.
    Bots(bots::Args),
    /// Print a fresh netcode private key (64 hexadecimal digits): give the same file to
    /// `serve --key-file` and to whatever mints connect tokens (`bots --key-file`).
    Key,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Simulate(args) => simulate::run(&args),
        Command::Validate(args) => validate::run(&args),
        Command::Proxy(args) => proxy::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Bots(args) => bots::run(&args),
        Command::Key => key::run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lagcomp: {error:#}");
            ExitCode::FAILURE
        }
    }
}
