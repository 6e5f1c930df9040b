//! `attnzoo`: the command line of the attention zoo.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use attnzoo::commands;
use attnzoo::sentence_embedding::default_model_dir;
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
    /// Sentence embeddings (all-MiniLM-L6-v2): UTF-8 sentences on stdin, one per line; one JSON
    /// array of floats per line on stdout, in input order.
    Embed {
        /// The model folder (fetch it with scripts/fetch-minilm.sh)
        /// [default: $ATTNZOO_MINILM_DIR or ~/.cache/attnzoo/all-MiniLM-L6-v2]
        #[arg(long)]
        model_dir: Option<PathBuf>,
        /// Sentences per forward pass
        #[arg(long, default_value_t = 32)]
        batch_size: usize,
        #[command(flatten)]
        device: DeviceArgs,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Backends => commands::backends(),
        Command::Check { device } => commands::check(&device),
        Command::Embed {
            model_dir,
            batch_size,
            device,
        } => commands::embed(
            &model_dir.unwrap_or_else(default_model_dir),
            &device,
            batch_size,
        ),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("attnzoo: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
