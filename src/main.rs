//! `attnzoo`: the command line of the attention zoo.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use attnzoo::commands;
use attnzoo_backends::DeviceArgs;

#[derive(Parser)]
#[command(
    name = "attnzoo",
    version,
    about = "Attention mechanisms on Burn 0.22, on ndarray, WGPU and LibTorch"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Table of every backend: compiled in, usable, device, and why not.
    Backends,
    /// Opens the chosen backend and device and runs a small masked attention on it.
    Check {
        #[command(flatten)]
        device: DeviceArgs,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Backends => commands::backends(),
        Command::Check { device } => commands::check(&device),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("attnzoo: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
