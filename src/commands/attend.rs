//! `attnzoo attend`: heatmaps of the attention behind one translation.

use std::path::PathBuf;

use anyhow::Result;
use attnzoo::translation::{DecodeConfig, Translator};
use attnzoo_backends::DeviceArgs;

use super::output::Stdout;

/// `attnzoo attend` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Checkpoint folder (its best epoch is used)
    #[arg(long)]
    checkpoint: PathBuf,
    /// The German sentence (sentences longer than 60 tokens are cut)
    sentence: String,
    /// Output folder
    #[arg(long, default_value = "runs/attend")]
    out: PathBuf,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Writes the heatmaps (PNG and SVG) and prints the PNGs' paths.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let (_, device) = args.device.open()?;
    let translator = Translator::load(&args.checkpoint, &device)?;
    let attention = translator.attend(&args.sentence, &DecodeConfig::default())?;
    for path in attention.write_heatmaps(&args.out)? {
        out.line(path.display())?;
    }
    out.finish()
}
