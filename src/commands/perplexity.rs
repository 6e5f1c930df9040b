//! `attnzoo perplexity`: the perplexity of a text file under a decoder LM (a Hugging Face folder
//! or a GGUF file), computed as llama.cpp's `llama-perplexity -c N` computes it, with a progress
//! bar on stderr; the result on stdout.

use std::path::PathBuf;

use anyhow::Context;
use attnzoo::language_model::LanguageModel;
use attnzoo_backends::DeviceArgs;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::output::Stdout;
use super::parse;

/// `attnzoo perplexity` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model: a Hugging Face folder or a GGUF file
    #[arg(long, visible_alias = "model-dir")]
    model: PathBuf,
    /// The text to score (UTF-8)
    #[arg(long)]
    text: PathBuf,
    /// Tokens per chunk, as llama-perplexity's -c (the second half of each chunk is scored)
    #[arg(long, default_value_t = 512, value_parser = parse::context, allow_negative_numbers = true)]
    context: usize,
    /// Dequantize a GGUF file's weights at load instead of multiplying from its blocks (for a
    /// folder: its experts' weights kept as they are, not packed)
    #[arg(long)]
    dequantize: bool,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Loads the model, scores the text chunk by chunk, prints the perplexity.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut out = Stdout::open()?;
    let text = std::fs::read_to_string(&args.text)
        .map_err(|error| attnzoo::Error::read(&args.text, error))?;
    // As llama-perplexity reads -f: one trailing newline dropped.
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let (backend, device) = args.device.open()?;
    let weights = super::gguf_weights(args.dequantize, backend, &args.device);
    let lm = LanguageModel::load_with(&args.model, weights, &device)?;
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("[{bar:30}] chunk {pos}/{len} {msg} (eta {eta})")
            .expect("a valid template")
            .progress_chars("#>-"),
    );
    let result = lm
        .perplexity(text, args.context, |so_far, chunks| {
            bar.set_length(chunks as u64);
            bar.set_position(so_far.chunks as u64);
            bar.set_message(format!("PPL {:.4}", so_far.value()));
        })
        .with_context(|| format!("perplexity of {}", args.text.display()))?;
    bar.finish_and_clear();
    out.line(format!(
        "perplexity {:.4} over {} tokens ({} chunks of {})",
        result.value(),
        result.tokens,
        result.chunks,
        args.context
    ))?;
    out.finish()
}
