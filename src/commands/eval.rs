//! `attnzoo eval`: BLEU and chrF of a checkpoint on a corpus split or a file of pairs.

use std::path::PathBuf;

use anyhow::{Context, Result};
use attnzoo::home_cache;
use attnzoo::translation::corpus::{find_corpus, read_pairs, read_split, Split};

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
    /// A file of `german<TAB>english` lines to score instead of a split (data/everyday.tsv: forty
    /// everyday sentences outside the corpus)
    #[arg(long, conflicts_with_all = ["split", "corpus"])]
    pairs: Option<PathBuf>,
    #[command(flatten)]
    decode: DecodeArgs,
}

/// Prints sacreBLEU's BLEU line and chrF2.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let translator = args.model.load()?;
    let (mut pairs, source) = match &args.pairs {
        Some(file) => (read_pairs(file)?, file.display().to_string()),
        None => {
            let corpus = match args.corpus {
                Some(dir) => dir,
                None => find_corpus(&home_cache())?,
            };
            let source = format!("the {:?} split of {}", args.split, corpus.display());
            (read_split(&corpus, args.split)?, source)
        }
    };
    if pairs.is_empty() {
        anyhow::bail!("{source} has no pairs");
    }
    if let Some(limit) = args.limit {
        pairs.truncate(limit);
    }
    let evaluation = translator
        .evaluate(&pairs, &args.decode.config())
        .with_context(|| source)?;
    out.line(&evaluation.bleu)?;
    out.line(format!("chrF2 = {:.2}", evaluation.chrf))?;
    out.finish()
}
