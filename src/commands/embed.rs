//! `attnzoo embed`: sentences on stdin, one JSON array of floats per line on stdout.

use std::path::PathBuf;

use anyhow::{Context, Result};
use attnzoo::files::read_lines;
use attnzoo::sentence_embedding::{default_model_dir, SentenceEmbedder};
use attnzoo_backends::DeviceArgs;

use super::output::Stdout;
use super::parse;

/// `attnzoo embed` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model folder (fetch it with scripts/fetch-minilm.sh)
    /// [default: $ATTNZOO_MINILM_DIR or ~/.cache/attnzoo/all-MiniLM-L6-v2]
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// Sentences per forward pass
    #[arg(long, default_value_t = 32, value_parser = parse::at_least_one, allow_negative_numbers = true)]
    batch_size: usize,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Embeds every stdin line (an empty line is the empty sentence), in input order.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let (_, device) = args.device.open()?;
    let model_dir = args.model_dir.unwrap_or_else(default_model_dir);
    let embedder = SentenceEmbedder::load(&model_dir, &device)?;
    let sentences = read_lines(std::io::stdin().lock(), "stdin")?;
    for vector in embedder.embed(&sentences, args.batch_size)? {
        out.line(serde_json::to_string(&vector).context("an embedding JSON cannot hold")?)?;
    }
    out.finish()
}
