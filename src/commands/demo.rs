//! `attnzoo demo`: fetch → train for a few minutes → test BLEU (and the dictionary lookup's, for
//! scale) → everyday and test translations → heatmaps.

use std::path::PathBuf;

use anyhow::{bail, Result};
use attnzoo::home_cache;
use attnzoo::translation::corpus::{self, everyday, find_corpus, read_split, Pair, Split};
use attnzoo::translation::metrics::corpus_chrf;
use attnzoo::translation::{
    self, Checkpoint, DecodeConfig, DictionaryLookup, Evaluation, ModelKind, TrainSpec, Translator,
};
use attnzoo::validate::show;
use attnzoo_backends::DeviceArgs;

use super::output::Stdout;
use super::parse;

/// `attnzoo demo` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Training time of this run (a model already in --out is continued)
    #[arg(long, default_value_t = 10.0, value_parser = parse::minutes, allow_hyphen_values = true)]
    minutes: f64,
    /// Model (of a new run; a continued one keeps its own)
    #[arg(long, value_enum, default_value_t = ModelKind::default())]
    model: ModelKind,
    /// Output folder: the model in `model/`, the heatmaps beside it
    #[arg(long, default_value = "runs/demo")]
    out: PathBuf,
    /// Start a new model rather than continue the one in --out
    #[arg(long)]
    fresh: bool,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Short test sentences, for the examples and the heatmap.
const SHORT: usize = 8;

/// Hypotheses of the beam search that scores the demo's translations.
const BEAM: usize = 5;

/// The whole job, printing the scores, the translations and the heatmaps' paths.
pub fn run(args: Args) -> Result<()> {
    let mut out = Stdout::open()?;
    let (backend, device) = args.device.open()?;
    let dir = args.out.join("model");
    if args.fresh {
        Checkpoint::discard(&dir)?;
    }
    let cache = home_cache();
    if find_corpus(&cache).is_err() {
        attnzoo::note!("fetching the German–English corpus (Debian's trans-de-en, GPL-2+) …");
        corpus::fetch(Some(cache.clone()))?;
    }
    let trained_before = if Checkpoint::is_trained(&dir) {
        Checkpoint::open(&dir)?.state.seconds
    } else {
        0.0
    };
    let spec = TrainSpec {
        model: args.model,
        config: args.model.train_config(),
        epochs: Some(1000),
        resume: Checkpoint::exists(&dir),
        ..TrainSpec::default()
    };
    attnzoo::note!(
        "training on {backend} for {} min into {}{}",
        show(args.minutes),
        dir.display(),
        match trained_before {
            0.0 => " (a new model)".to_string(),
            seconds => format!(" (continuing a model trained {:.1} min)", seconds / 60.0),
        }
    );
    let budget = trained_before / 60.0 + args.minutes;
    let checkpoint = translation::train(&spec, &dir, Some(budget), &device)?;
    if checkpoint.state.weights.is_empty() {
        bail!(
            "{} min was not enough for one epoch: run the demo with more --minutes",
            show(args.minutes)
        );
    }
    let translator = Translator::load(&dir, &device)?;
    let corpus = find_corpus(&cache)?;
    let test = read_split(&corpus, Split::Test)?;
    let lookup = DictionaryLookup::load(&corpus)?;
    // Beam search beat greedy on the validation split of each demo model (docs/MEASUREMENTS.md).
    let decoding = DecodeConfig::beam(BEAM);
    let scored = translator.evaluate(&test, &decoding)?;
    out.line(format!(
        "after {:.1} min of training: test split, {} pairs, beam {BEAM}: {}, chrF2 = {:.2}",
        checkpoint.state.seconds / 60.0,
        test.len(),
        scored.bleu,
        scored.chrf
    ))?;
    print_lookup(&mut out, &lookup.evaluate(&test)?)?;
    let everyday = everyday();
    let everyday_scored = translator.evaluate(&everyday, &decoding)?;
    out.line(format!(
        "everyday sentences outside the corpus (data/everyday.tsv), {} pairs: {}, chrF2 = {:.2}",
        everyday.len(),
        everyday_scored.bleu,
        everyday_scored.chrf
    ))?;
    print_lookup(&mut out, &lookup.evaluate(&everyday)?)?;
    out.line("")?;
    print_examples(
        &mut out,
        "the first five everyday sentences",
        everyday.iter().zip(&everyday_scored.hypotheses),
    )?;
    let short: Vec<(&Pair, &String)> = test
        .iter()
        .zip(&scored.hypotheses)
        .filter(|(pair, _)| pair.german.split_whitespace().count() <= SHORT)
        .collect();
    print_examples(
        &mut out,
        &format!("the first five test sentences of at most {SHORT} words"),
        short.iter().copied(),
    )?;
    let mut best: Option<(f64, &Pair)> = None;
    for (pair, translation) in &short {
        let chrf = corpus_chrf(
            std::slice::from_ref(*translation),
            std::slice::from_ref(&pair.english),
        )?;
        if best.is_none_or(|(top, _)| chrf > top) {
            best = Some((chrf, pair));
        }
    }
    if let Some((chrf, pair)) = best {
        let attention = translator.attend(&pair.german, &DecodeConfig::default())?;
        let written = attention.write_heatmaps(&args.out)?;
        let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        out.line(format!(
            "attention of the best-translated short test sentence (chrF2 {chrf:.1}), \"{}\": {}",
            pair.german,
            paths.join(", ")
        ))?;
    }
    out.line(format!(
        "\ntranslate with: attnzoo translate --checkpoint {} --beam {BEAM} < german.txt\n\
         explore with:   attnzoo serve --checkpoint {}   (its attention in the browser)\n\
         train on:       attnzoo demo --out {}   (continues this model; --fresh starts over)",
        dir.display(),
        dir.display(),
        args.out.display()
    ))?;
    out.finish()
}

/// The word-by-word dictionary lookup's score, under the model's: the scale it is read against.
fn print_lookup(out: &mut Stdout, lookup: &Evaluation) -> Result<()> {
    out.line(format!(
        "  for scale, the dictionary looked up word by word: {}, chrF2 = {:.2}",
        lookup.bleu, lookup.chrf
    ))
}

/// The first five of `translated` under `title`: German, reference, ours.
fn print_examples<'a>(
    out: &mut Stdout,
    title: &str,
    translated: impl Iterator<Item = (&'a Pair, &'a String)>,
) -> Result<()> {
    out.line(format!("{title}:"))?;
    for (pair, translation) in translated.take(5) {
        out.line(format!(
            "DE   {}\nREF  {}\nOURS {translation}\n",
            pair.german, pair.english
        ))?;
    }
    Ok(())
}
