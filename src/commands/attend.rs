//! `attnzoo attend`: heatmaps of the attention behind one translation.

use std::path::PathBuf;

use anyhow::Result;
use attnzoo::translation::DecodeConfig;

use super::output::Stdout;
use super::translate::ModelArgs;

/// `attnzoo attend` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// The German sentence (cut at the model's longest source, at most 60 tokens; of several, the
    /// first)
    sentence: String,
    /// Output folder
    #[arg(long, default_value = "runs/attend")]
    out: PathBuf,
}

/// Writes the heatmaps (PNG and SVG) and prints the PNGs' paths.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let translator = args.model.load()?;
    let text = translator.attend_text(&args.sentence, &DecodeConfig::default())?;
    if !text.rest.is_empty() {
        attnzoo::note!(
            "warning: the text has {} sentences; drawing the attention behind the first",
            text.rest.len() + 1
        );
    }
    let attention = text.first;
    if attention.cut {
        let shown = attention.source.len();
        attnzoo::note!(
            "warning: the sentence has more than {shown} tokens; translating the first {shown}"
        );
    }
    for path in attention.write_heatmaps(&args.out)? {
        out.line(path.display())?;
    }
    out.finish()
}
