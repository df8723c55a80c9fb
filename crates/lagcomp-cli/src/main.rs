//! The `lagcomp` command.
//!
//! - `lagcomp validate RECORDING`: re-validates a match recording offline (`validate.rs`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Re-run shot validation over a match recording (JSON Lines, see docs/FORMAT.md) and
    /// summarise the verdicts by reason and by shooter.
    Validate(validate::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate(args) => validate::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lagcomp: {error:#}");
            ExitCode::FAILURE
        }
    }
}
