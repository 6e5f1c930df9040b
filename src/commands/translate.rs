//! `attnzoo translate`: German lines on stdin → English lines on stdout.

use std::path::PathBuf;

use anyhow::Result;
use attnzoo::files::read_lines;
use attnzoo::translation::decode::DEFAULT_ALPHA;
use attnzoo::translation::{DecodeConfig, Search, Translator};
use attnzoo_backends::DeviceArgs;

use super::output::Stdout;
use super::parse;

/// Decoding options, shared by `translate` and `eval`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct DecodeArgs {
    /// Beam size (1 = greedy, batched; at most 64)
    #[arg(long, default_value_t = 1, value_parser = parse::beam_size, allow_negative_numbers = true)]
    pub beam: usize,
    /// GNMT length-penalty α (beam search; negative favours short translations)
    #[arg(long, default_value_t = DEFAULT_ALPHA, value_parser = parse::alpha, allow_hyphen_values = true)]
    pub alpha: f64,
    /// Longest output as a multiple of the source length (plus 5)
    #[arg(long, default_value_t = DecodeConfig::default().max_len_ratio, value_parser = parse::length_ratio, allow_hyphen_values = true)]
    pub max_len_ratio: f64,
    /// Never produce an n-gram of this many target tokens twice (0: allow repeats)
    #[arg(long, default_value_t = DecodeConfig::default().no_repeat_ngram, value_parser = parse::ngram, allow_negative_numbers = true)]
    pub no_repeat_ngram: usize,
}

impl DecodeArgs {
    /// The library's decoding config: greedy search for a beam of 1.
    pub fn config(&self) -> DecodeConfig {
        DecodeConfig {
            search: Search::of_beam(self.beam, self.alpha),
            max_len_ratio: self.max_len_ratio,
            no_repeat_ngram: self.no_repeat_ngram,
        }
    }
}

/// A trained model and the device to run it on, shared by `translate`, `eval` and `attend`.
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    /// Checkpoint folder (its best epoch is used)
    #[arg(long)]
    checkpoint: PathBuf,
    #[command(flatten)]
    device: DeviceArgs,
}

impl ModelArgs {
    /// Opens the device and loads the checkpoint onto it.
    pub fn load(&self) -> Result<Translator> {
        let (_, device) = self.device.open()?;
        Ok(Translator::load(&self.checkpoint, &device)?)
    }
}

/// `attnzoo translate` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    decode: DecodeArgs,
}

/// Translates every stdin line, in order, sentence by sentence; an empty line stays empty.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let translator = args.model.load()?;
    let lines = read_lines(std::io::stdin().lock(), "stdin")?;
    for line in translator.translate_text(&lines, &args.decode.config())? {
        out.line(line)?;
    }
    out.finish()
}
