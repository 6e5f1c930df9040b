//! `attnzoo bleu`: corpus BLEU of stdin against a reference file, as sacreBLEU prints it.

use std::path::PathBuf;

use anyhow::{Context, Result};
use attnzoo::files::{read_file_lines, read_lines};
use attnzoo::translation::metrics::corpus_bleu;

use super::output::Stdout;

/// `attnzoo bleu` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Reference file, one sentence per line
    #[arg(long = "ref")]
    reference: PathBuf,
    /// One JSON object (score, precisions, bp, ratio, sys_len, ref_len)
    #[arg(long)]
    json: bool,
}

/// Scores stdin (one hypothesis per line) against the references.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let references = read_file_lines(&args.reference)?;
    let hypotheses = read_lines(std::io::stdin().lock(), "stdin")?;
    let bleu = corpus_bleu(&hypotheses, &references)
        .with_context(|| format!("stdin against {}", args.reference.display()))?;
    if args.json {
        out.line(serde_json::to_string(&bleu)?)?;
    } else {
        out.line(bleu)?;
    }
    out.finish()
}
