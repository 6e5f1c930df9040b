//! `attnzoo demo`: fetch → train for a few minutes → test BLEU → five translations → heatmaps.

use std::path::PathBuf;

use anyhow::{bail, Result};
use attnzoo::home_cache;
use attnzoo::translation::checkpoint::Checkpoint;
use attnzoo::translation::corpus::{self, find_corpus, read_split, Pair, Split};
use attnzoo::translation::train::TrainConfig;
use attnzoo::translation::{trainer, DecodeConfig, ModelKind, TrainSpec, Translator};
use attnzoo_backends::DeviceArgs;

use super::output::Stdout;
use super::parse;

/// `attnzoo demo` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Training time (a checkpoint already in --out is continued)
    #[arg(long, default_value_t = 5.0, value_parser = parse::positive, allow_hyphen_values = true)]
    minutes: f64,
    /// Model
    #[arg(long, value_enum, default_value_t = ModelKind::Rnn)]
    model: ModelKind,
    /// Output folder
    #[arg(long, default_value = "runs/demo")]
    out: PathBuf,
    #[command(flatten)]
    device: DeviceArgs,
}

/// The whole job, printing the scores, the translations and the heatmaps' paths.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let (_, device) = args.device.open()?;
    let cache = home_cache();
    if find_corpus(&cache).is_err() {
        eprintln!("fetching the German–English corpus (Debian's trans-de-en, GPL-2+) …");
        corpus::fetch(Some(cache.clone()))?;
    }
    let dir = args.out.join("model");
    let trained_before = if Checkpoint::is_trained(&dir) {
        Checkpoint::open(&dir)?.state.seconds
    } else {
        0.0
    };
    eprintln!(
        "training {:?} for {} min into {} …",
        args.model,
        args.minutes,
        dir.display()
    );
    let spec = TrainSpec {
        model: args.model,
        config: TrainConfig::new().with_learning_rate(args.model.default_learning_rate()),
        epochs: Some(100),
        resume: Checkpoint::exists(&dir),
        ..TrainSpec::default()
    };
    let budget = trained_before / 60.0 + args.minutes;
    let checkpoint = trainer::run(&spec, &dir, Some(budget), &device)?;
    if checkpoint.state.weights.is_empty() {
        bail!(
            "{} min was not enough for one epoch: run the demo with more --minutes",
            args.minutes
        );
    }
    let translator = Translator::load(&dir, &device)?;
    let test = read_split(&find_corpus(&cache)?, Split::Test)?;
    let greedy = translator.evaluate(&test, &DecodeConfig::default())?;
    out.line(format!(
        "test split, {} pairs, greedy: {}, chrF2 = {:.2}",
        test.len(),
        greedy.bleu,
        greedy.chrf
    ))?;
    let sample: Vec<&Pair> = test
        .iter()
        .filter(|p| p.german.split_whitespace().count() <= 10)
        .take(5)
        .collect();
    let german: Vec<&str> = sample.iter().map(|p| p.german.as_str()).collect();
    let translations = translator.translate(&german, &DecodeConfig::beam(5))?;
    for (pair, translation) in sample.iter().zip(&translations) {
        out.line(format!(
            "\nDE   {}\nREF  {}\nOURS {translation}",
            pair.german, pair.english
        ))?;
    }
    if let Some(first) = german.first() {
        let attention = translator.attend(first, &DecodeConfig::default())?;
        let written = attention.write_heatmaps(&args.out)?;
        let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        out.line(format!("\nattention heatmaps: {}", paths.join(", ")))?;
    }
    out.finish()
}
