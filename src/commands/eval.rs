//! `attnzoo eval`: BLEU and chrF of a checkpoint on a corpus split.

use std::path::PathBuf;

use anyhow::{Context, Result};
use attnzoo::home_cache;
use attnzoo::translation::corpus::{find_corpus, read_split, Split};

use super::output::Stdout;
use super::parse;
use super::translate::{DecodeArgs, ModelArgs};

/// `attnzoo eval` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// Split
    #[arg(long, value_enum, default_value = "test")]
    split: Split,
    /// Only the first N pairs
    #[arg(long, value_parser = parse::at_least_one, allow_negative_numbers = true)]
    limit: Option<usize>,
    /// Corpus folder [default: the newest under ~/.cache/attnzoo]
    #[arg(long)]
    corpus: Option<PathBuf>,
    #[command(flatten)]
    decode: DecodeArgs,
}

/// Prints sacreBLEU's BLEU line and chrF2.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let translator = args.model.load()?;
    let corpus = match args.corpus {
        Some(dir) => dir,
        None => find_corpus(&home_cache())?,
    };
    let mut pairs = read_split(&corpus, args.split)?;
    if pairs.is_empty() {
        anyhow::bail!(
            "the {:?} split of {} is empty",
            args.split,
            corpus.display()
        );
    }
    if let Some(limit) = args.limit {
        pairs.truncate(limit);
    }
    let evaluation = translator
        .evaluate(&pairs, &args.decode.config())
        .with_context(|| format!("{:?} split of {}", args.split, corpus.display()))?;
    out.line(&evaluation.bleu)?;
    out.line(format!("chrF2 = {:.2}", evaluation.chrf))?;
    out.finish()
}
