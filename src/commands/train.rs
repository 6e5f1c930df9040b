//! `attnzoo train`: trains (or resumes) a translation model, checkpointing every epoch.

use std::path::PathBuf;

use anyhow::{bail, Result};
use attnzoo::translation::{self, AttentionKind, Checkpoint, ModelKind, TrainConfig, TrainSpec};
use attnzoo_backends::DeviceArgs;

use super::parse;

/// `attnzoo train` options; the defaults are the library's ([`TrainConfig`], [`TrainSpec`]).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Checkpoint folder (created; with --resume, continued)
    #[arg(long)]
    out: PathBuf,
    /// Model
    #[arg(long, value_enum, default_value_t = TrainSpec::default().model)]
    model: ModelKind,
    /// Attention of the RNN decoder
    #[arg(long, value_enum, default_value_t = TrainSpec::default().attention)]
    attention: AttentionKind,
    /// RNN state width, or the Transformer's d_model
    #[arg(long, default_value_t = TrainSpec::default().hidden, value_parser = parse::width, allow_negative_numbers = true)]
    hidden: usize,
    /// Transformer layers, in the encoder and in the decoder
    #[arg(long, default_value_t = TrainSpec::default().layers, value_parser = parse::layers, allow_negative_numbers = true)]
    layers: usize,
    /// Dropout probability, in [0, 1)
    #[arg(long, default_value_t = TrainSpec::default().dropout, value_parser = parse::fraction_below_one, allow_hyphen_values = true)]
    dropout: f64,
    /// Bias the Transformer's output by a lexicon through its cross-attention (Arthur et al.
    /// 2016; the lexicon by IBM Model 1 over the sentences and the dictionary): true or false
    #[arg(long, default_value_t = TrainSpec::default().lexical_bias, action = clap::ArgAction::Set)]
    lexical_bias: bool,
    /// Epochs (with --resume: the new total) [default: 30]
    #[arg(long, value_parser = parse::at_least_one, allow_negative_numbers = true)]
    epochs: Option<usize>,
    /// Stop after this much training time in all (earlier runs of a resumed checkpoint count)
    #[arg(long, value_parser = parse::minutes, allow_hyphen_values = true)]
    max_minutes: Option<f64>,
    /// Continue the checkpoint in --out
    #[arg(long)]
    resume: bool,
    /// Sentence pairs per batch
    #[arg(long, default_value_t = TrainConfig::new().batch_size, value_parser = parse::at_least_one, allow_negative_numbers = true)]
    batch_size: usize,
    /// Peak learning rate [default: 3e-3 for the RNN, 2e-3 for the Transformer]
    #[arg(long, value_parser = parse::learning_rate, allow_hyphen_values = true)]
    learning_rate: Option<f64>,
    /// Probability of feeding the RNN decoder the gold previous token
    #[arg(long, default_value_t = TrainConfig::new().teacher_forcing, value_parser = parse::probability, allow_hyphen_values = true)]
    teacher_forcing: f64,
    /// Linear warmup steps before the 1/√step decay
    #[arg(long, default_value_t = TrainConfig::new().warmup_steps, value_parser = parse::count, allow_negative_numbers = true)]
    warmup_steps: usize,
    /// Label smoothing, in [0, 1) [default: 0.3 for the Transformer, 0.1 for the RNN]
    #[arg(long, value_parser = parse::fraction_below_one_f32, allow_hyphen_values = true)]
    label_smoothing: Option<f32>,
    /// Split words into subwords: a byte-pair-encoding vocabulary of this many tokens per
    /// language (0: whole words, those seen at least twice)
    #[arg(long, default_value_t = TrainConfig::new().bpe_vocab, value_parser = parse::bpe_vocab, allow_negative_numbers = true)]
    bpe: usize,
    /// Dictionary word and phrase pairs mixed into each epoch's sentences (0: sentences only)
    #[arg(long, default_value_t = TrainConfig::new().lexicon_per_epoch, value_parser = parse::count, allow_negative_numbers = true)]
    lexicon: usize,
    /// Seed of weights, data order and teacher forcing
    #[arg(long, default_value_t = TrainConfig::new().seed, value_parser = parse::seed, allow_negative_numbers = true)]
    seed: u64,
    /// Train on the first N training pairs only (quick checks)
    #[arg(long, value_parser = parse::at_least_one, allow_negative_numbers = true)]
    train_limit: Option<usize>,
    /// Corpus folder [default: the newest under ~/.cache/attnzoo]
    #[arg(long)]
    corpus: Option<PathBuf>,
    #[command(flatten)]
    device: DeviceArgs,
}

impl Args {
    /// The library's description of this run.
    fn spec(&self) -> TrainSpec {
        let defaults = self.model.train_config();
        let config = defaults
            .clone()
            .with_batch_size(self.batch_size)
            .with_warmup_steps(self.warmup_steps)
            .with_teacher_forcing(self.teacher_forcing)
            .with_label_smoothing(self.label_smoothing.unwrap_or(defaults.label_smoothing))
            .with_seed(self.seed)
            .with_bpe_vocab(self.bpe)
            .with_lexicon_per_epoch(self.lexicon)
            .with_train_limit(self.train_limit)
            .with_learning_rate(self.learning_rate.unwrap_or(defaults.learning_rate));
        TrainSpec {
            model: self.model,
            attention: self.attention,
            hidden: self.hidden,
            layers: self.layers,
            dropout: self.dropout,
            lexical_bias: self.lexical_bias,
            config,
            epochs: self.epochs,
            resume: self.resume,
            corpus: self.corpus.clone(),
        }
    }
}

/// A training-pair limit as text: a number, or `all`.
fn pairs(limit: Option<usize>) -> String {
    limit.map_or_else(|| "all".into(), |n| n.to_string())
}

/// An option's id with the value asked for and the run's own, as text.
fn setting(id: &str, ours: impl ToString, theirs: impl ToString) -> (&str, String, String) {
    (id, ours.to_string(), theirs.to_string())
}

impl Args {
    /// With `--resume`, the options in `given` (ids of those on the command line) whose value
    /// differs from the run's own, as `--flag value (the run's: value)`. A resumed run keeps its
    /// settings; only --epochs and --max-minutes may change.
    fn contradictions(&self, given: &[String], run: &Checkpoint) -> Vec<String> {
        let spec = self.spec();
        let (ours, theirs) = (&spec.config, &run.train);
        let settings = [
            setting("batch_size", ours.batch_size, theirs.batch_size),
            setting("learning_rate", ours.learning_rate, theirs.learning_rate),
            setting("warmup_steps", ours.warmup_steps, theirs.warmup_steps),
            setting(
                "teacher_forcing",
                ours.teacher_forcing,
                theirs.teacher_forcing,
            ),
            setting(
                "label_smoothing",
                ours.label_smoothing,
                theirs.label_smoothing,
            ),
            setting("bpe", ours.bpe_vocab, theirs.bpe_vocab),
            setting("lexicon", ours.lexicon_per_epoch, theirs.lexicon_per_epoch),
            setting("seed", ours.seed, theirs.seed),
            setting(
                "train_limit",
                pairs(ours.train_limit),
                pairs(theirs.train_limit),
            ),
        ];
        let flag = |id: &str| format!("--{}", id.replace('_', "-"));
        let mut found: Vec<String> = settings
            .into_iter()
            .filter(|(id, ours, theirs)| given.iter().any(|g| g == id) && ours != theirs)
            .map(|(id, ours, theirs)| format!("{} {ours} (the run's: {theirs})", flag(id)))
            .collect();
        let model = spec.model_config(run.vocab.source.len(), run.vocab.target.len());
        let shaping: Vec<String> = [
            "model",
            "attention",
            "hidden",
            "layers",
            "dropout",
            "lexical_bias",
        ]
        .into_iter()
        .filter(|id| given.iter().any(|g| g == id))
        .map(flag)
        .collect();
        let differs = serde_json::to_value(&model).ok() != serde_json::to_value(&run.model).ok();
        if !shaping.is_empty() && differs {
            found.push(format!(
                "{} (another model than the run's model.json)",
                shaping.join(" ")
            ));
        }
        found
    }
}

/// Trains the run in `--out`; `given` holds the ids of the options on the command line.
pub fn run(args: Args, given: &[String]) -> Result<()> {
    let spec = args.spec();
    spec.validate()?;
    let other_models = match args.model {
        ModelKind::Rnn => ["layers", "lexical_bias"].as_slice(),
        ModelKind::Transformer => ["attention", "teacher_forcing"].as_slice(),
    };
    if let Some(id) = other_models
        .iter()
        .find(|id| given.iter().any(|g| g == *id))
    {
        bail!(
            "--{} does not apply to --model {}",
            id.replace('_', "-"),
            format!("{:?}", args.model).to_lowercase()
        );
    }
    if args.resume && Checkpoint::is_trained(&args.out) {
        let contradictions = args.contradictions(given, &Checkpoint::open(&args.out)?);
        if !contradictions.is_empty() {
            bail!(
                "--resume keeps the run's settings, but {} contradict them: leave them out, or train a new run in another --out",
                contradictions.join(", ")
            );
        }
    }
    let (_, device) = args.device.open()?;
    let checkpoint = translation::train(&spec, &args.out, args.max_minutes, &device)?;
    if checkpoint.state.weights.is_empty() {
        bail!(
            "--max-minutes {} was not enough for one batch: nothing is saved",
            attnzoo::validate::show(args.max_minutes.unwrap_or(0.0))
        );
    }
    Ok(())
}
