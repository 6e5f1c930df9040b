//! What to train and the one call that trains it: a [`TrainSpec`] (model, sizes, corpus, and a
//! [`TrainConfig`]) and [`train`], which reads the corpus, builds the vocabularies, creates or
//! resumes the run's folder and trains — what `attnzoo train` does, without a command line.

use std::path::{Path, PathBuf};

use attnzoo_models::attention::AlignmentScore;
use attnzoo_models::seq2seq::{RnnSeq2SeqConfig, Seq2SeqConfig, TransformerSeq2SeqConfig};
use burn::tensor::Device;

use super::batch::{examples, Example};
use super::checkpoint::{Checkpoint, Vocabularies, Weights};
use super::copy::CopyRule;
use super::corpus::{find_corpus, read_lexicon, read_split, Pair, Split, LEXICON};
use super::ibm1;
use super::train_config::TrainConfig;
use super::training_loop::{run_epochs, Data};
use super::vocab::{Vocab, EOS_ID};
use crate::error::{Error, Result};
use crate::home_cache;
use crate::validate;

/// Which translation model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ModelKind {
    /// Bidirectional-LSTM encoder, LSTM decoder with alignment attention.
    Rnn,
    /// Transformer encoder-decoder.
    #[default]
    Transformer,
}

impl ModelKind {
    /// The peak learning rate that suits the model at its default size: 3e-3 for the RNN,
    /// 2e-3 for the Transformer.
    pub fn default_learning_rate(self) -> f64 {
        match self {
            ModelKind::Rnn => 3e-3,
            ModelKind::Transformer => 2e-3,
        }
    }

    /// The label smoothing that suits the model on this corpus: 0.3 for the Transformer (higher
    /// than the usual 0.1, as Araabi & Monz 2020 find for small corpora; docs/MEASUREMENTS.md),
    /// 0.1 for the RNN.
    pub fn default_label_smoothing(self) -> f32 {
        match self {
            ModelKind::Rnn => 0.1,
            ModelKind::Transformer => 0.3,
        }
    }

    /// [`TrainConfig`]'s defaults at the model's [`default_learning_rate`](Self::default_learning_rate)
    /// and [`default_label_smoothing`](Self::default_label_smoothing).
    pub fn train_config(self) -> TrainConfig {
        TrainConfig::new()
            .with_learning_rate(self.default_learning_rate())
            .with_label_smoothing(self.default_label_smoothing())
    }
}

/// The RNN decoder's attention.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum AttentionKind {
    /// No attention (the baseline).
    None,
    /// Bahdanau (additive), scored with the previous state.
    #[default]
    Bahdanau,
    /// Luong dot.
    Dot,
    /// Luong general.
    General,
    /// Luong concat.
    Concat,
    /// Luong location.
    Location,
}

/// What to train, how, and on what.
///
/// ```no_run
/// use attnzoo::translation::{self, AttentionKind, ModelKind, TrainConfig, TrainSpec};
///
/// let (_, device) = attnzoo_backends::Backend::auto()?;
/// // An RNN with Luong "general" attention, 20 epochs or 30 minutes, whichever ends first.
/// let spec = TrainSpec {
///     model: ModelKind::Rnn,
///     attention: AttentionKind::General,
///     config: TrainConfig::new()
///         .with_epochs(20)
///         .with_learning_rate(ModelKind::Rnn.default_learning_rate()),
///     ..TrainSpec::default()
/// };
/// let checkpoint = translation::train(&spec, "runs/rnn".as_ref(), Some(30.0), &device)?;
/// for epoch in &checkpoint.state.history {
///     println!("epoch {}: valid BLEU {:.2}", epoch.epoch, epoch.valid_bleu);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct TrainSpec {
    /// The model.
    pub model: ModelKind,
    /// The RNN decoder's attention (the Transformer ignores it).
    pub attention: AttentionKind,
    /// RNN state width, or the Transformer's `d_model`.
    pub hidden: usize,
    /// The Transformer's encoder layers, and as many decoder layers.
    pub layers: usize,
    /// Dropout probability.
    pub dropout: f64,
    /// Bias the Transformer's output by a lexicon through its cross-attention (Arthur et al.
    /// 2016; the RNN ignores it): before the first epoch, IBM Model 1 estimates the lexicon over
    /// the training sentences and the dictionary's entries (those of the corpus folder's
    /// `lexicon.tsv`, when it has one), and the model keeps it.
    pub lexical_bias: bool,
    /// How a new run trains (a resumed run keeps its own, but for the epochs below).
    pub config: TrainConfig,
    /// Epochs in all: `None` keeps `config.epochs` (a new run) or the checkpoint's (a resumed one).
    pub epochs: Option<usize>,
    /// Continue the run in the output folder rather than start one.
    pub resume: bool,
    /// The corpus folder; `None`: the newest under `~/.cache/attnzoo`.
    pub corpus: Option<PathBuf>,
}

impl Default for TrainSpec {
    /// A small Transformer (d_model 128, 2 + 2 layers) — on a CPU, minutes buy more epochs of
    /// it than of a larger model, and the corpus is small — with dropout 0.2 (on this corpus
    /// 0.1 overfits after about 7 epochs, 0.3 learns slower in the first ten), trained as
    /// [`ModelKind::train_config`] says.
    fn default() -> Self {
        let model = ModelKind::default();
        Self {
            model,
            attention: AttentionKind::Bahdanau,
            hidden: 128,
            layers: 2,
            dropout: 0.2,
            lexical_bias: true,
            config: model.train_config(),
            epochs: None,
            resume: false,
            corpus: None,
        }
    }
}

impl TrainSpec {
    /// Checks every number, naming the bad one.
    pub fn validate(&self) -> Result<()> {
        let check = || -> Result<(), String> {
            validate::field("hidden", self.hidden, validate::width)?;
            validate::field("layers", self.layers, validate::layers)?;
            validate::field("dropout", self.dropout, validate::fraction_below_one)?;
            if let Some(epochs) = self.epochs {
                validate::field("epochs", epochs, validate::at_least_one)?;
            }
            self.config.check()
        };
        check().map_err(Error::Input)
    }

    /// The model config for vocabularies of `source` and `target` tokens.
    pub fn model_config(&self, source: usize, target: usize) -> Seq2SeqConfig {
        let max_len = self.config.max_len;
        match self.model {
            ModelKind::Rnn => {
                let score = match self.attention {
                    AttentionKind::None => None,
                    AttentionKind::Bahdanau => Some(AlignmentScore::Additive),
                    AttentionKind::Dot => Some(AlignmentScore::Dot),
                    AttentionKind::General => Some(AlignmentScore::General),
                    AttentionKind::Concat => Some(AlignmentScore::Concat),
                    AttentionKind::Location => Some(AlignmentScore::Location {
                        max_source_len: max_len,
                    }),
                };
                Seq2SeqConfig::Rnn(
                    RnnSeq2SeqConfig::new(source, target)
                        .with_embedding_dim(self.hidden)
                        .with_hidden_dim(self.hidden)
                        .with_dropout(self.dropout)
                        .with_attention(score),
                )
            }
            ModelKind::Transformer => Seq2SeqConfig::Transformer(
                TransformerSeq2SeqConfig::new(source, target)
                    .with_d_model(self.hidden)
                    .with_d_ff(4 * self.hidden)
                    .with_encoder_layers(self.layers)
                    .with_decoder_layers(self.layers)
                    .with_dropout(self.dropout)
                    .with_lexical_bias(self.lexical_bias)
                    .with_max_len(max_len + 2),
            ),
        }
    }
}

/// The vocabularies of the training pairs and lexicon, as `config` says (whole words or
/// subwords), and the copy rule of the pairs and `dictionary` (the corpus folder's).
fn build_vocabularies(
    pairs: &[Pair],
    lexicon: &[Pair],
    dictionary: &[Pair],
    config: &TrainConfig,
) -> Result<Vocabularies> {
    let build = |side: fn(&Pair) -> &str| {
        let sentences = pairs.iter().chain(lexicon).map(side);
        if config.bpe_vocab == 0 {
            Ok(Vocab::build(sentences, config.min_count, config.max_vocab))
        } else {
            Vocab::build_bpe(sentences, config.min_count, config.bpe_vocab).map_err(Error::Input)
        }
    };
    Ok(Vocabularies {
        source: build(|pair| &pair.german)?,
        target: build(|pair| &pair.english)?,
        copy: Some(CopyRule::learn(pairs, dictionary)),
    })
}

/// The lexicon of a lexically biased Transformer: IBM Model 1 over the training sentences and
/// the dictionary's entries (those `data` holds already, when the epochs mix them in).
fn lexicon_table(
    data: &Data,
    dictionary: &[Pair],
    vocab: &Vocabularies,
    max_len: usize,
) -> Result<Vec<f32>> {
    let started = std::time::Instant::now();
    let read: Vec<Example>;
    let entries = match data.lexicon.is_empty() {
        false => &data.lexicon[..],
        true => {
            read = examples(dictionary, vocab, max_len);
            &read[..]
        }
    };
    let sentences: Vec<Vec<usize>> = data
        .train
        .iter()
        .map(|pair| pair.target.iter().copied().chain([EOS_ID]).collect())
        .collect();
    let p_lex = ibm1::translation_table(
        data.train
            .iter()
            .zip(&sentences)
            .map(|(pair, target)| (&pair.source[..], &target[..]))
            .chain(
                entries
                    .iter()
                    .map(|pair| (&pair.source[..], &pair.target[..])),
            ),
        vocab.source.len(),
        vocab.target.len(),
        ibm1::ITERATIONS,
    );
    crate::note!(
        "the lexicon of the lexical bias: IBM Model 1 over {} sentences and {} dictionary entries ({:.1} s)",
        data.train.len(),
        entries.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(p_lex)
}

/// Trains (or with `spec.resume`, continues) the run in `out` on `device` until its epochs are
/// done or `max_minutes` of training time in all have passed; returns the checkpoint.
pub fn train(
    spec: &TrainSpec,
    out: &Path,
    max_minutes: Option<f64>,
    device: &Device,
) -> Result<Checkpoint> {
    spec.validate()?;
    if let Some(minutes) = max_minutes {
        validate::field("max_minutes", minutes, validate::positive).map_err(Error::Input)?;
    }
    let corpus = match &spec.corpus {
        Some(dir) => dir.clone(),
        None => find_corpus(&home_cache())?,
    };
    let resumed = match spec.resume {
        true => {
            let mut checkpoint = Checkpoint::resume(out)?;
            if let Some(epochs) = spec.epochs {
                let done = checkpoint.state.epoch;
                if epochs <= done {
                    return Err(Error::Input(format!(
                        "--epochs {epochs}: {} has trained {done} epochs already; ask for more to continue it",
                        out.display()
                    )));
                }
                checkpoint.train.epochs = epochs;
            }
            let (done, seconds) = (checkpoint.state.epoch, checkpoint.state.seconds);
            if done >= checkpoint.train.epochs {
                return Err(Error::Input(format!(
                    "{} has trained all its {done} epochs: ask for more with --epochs to continue it",
                    out.display()
                )));
            }
            if let Some(minutes) = max_minutes.filter(|&minutes| minutes * 60.0 <= seconds) {
                return Err(Error::Input(format!(
                    "--max-minutes {} counts the run's whole training, and {} has trained {} min already: ask for more to continue it",
                    validate::show(minutes),
                    out.display(),
                    validate::show(seconds / 60.0)
                )));
            }
            Some(checkpoint)
        }
        false => None,
    };
    let config = match &resumed {
        Some(checkpoint) => checkpoint.train.clone(),
        None => TrainConfig {
            epochs: spec.epochs.unwrap_or(spec.config.epochs),
            ..spec.config.clone()
        },
    };
    let train_pairs = read_split(&corpus, Split::Train)?;
    let train_pairs = &train_pairs[..config
        .train_limit
        .unwrap_or(usize::MAX)
        .min(train_pairs.len())];
    let valid_pairs = read_split(&corpus, Split::Valid)?;
    for (split, pairs) in [
        (Split::Train, train_pairs),
        (Split::Valid, &valid_pairs[..]),
    ] {
        if pairs.is_empty() {
            return Err(Error::Input(format!(
                "{} holds no sentence pairs",
                corpus.join(split.file_name()).display()
            )));
        }
    }
    // The corpus folder's dictionary, read once: the epochs mix it in (`--lexicon`), and a new
    // run's copy rule and lexicon table need it.
    let mixes_lexicon = config.lexicon_per_epoch > 0;
    let untrained = resumed
        .as_ref()
        .is_none_or(|checkpoint| checkpoint.state.weights.is_empty());
    let dictionary = match mixes_lexicon || (untrained && corpus.join(LEXICON).exists()) {
        true => read_lexicon(&corpus)?,
        false => Vec::new(),
    };
    if config.lexicon_per_epoch > dictionary.len() {
        return Err(Error::Input(format!(
            "lexicon_per_epoch: {} is more than the {} entries of {}",
            config.lexicon_per_epoch,
            dictionary.len(),
            corpus.join(LEXICON).display()
        )));
    }
    let lexicon_pairs: &[Pair] = match mixes_lexicon {
        true => &dictionary,
        false => &[],
    };
    let mut checkpoint = match resumed {
        Some(checkpoint) => {
            crate::note!(
                "resuming {} after epoch {} ({:.0} s trained)",
                out.display(),
                checkpoint.state.epoch,
                checkpoint.state.seconds
            );
            checkpoint
        }
        None => {
            let vocab = build_vocabularies(train_pairs, lexicon_pairs, &dictionary, &config)?;
            let model = spec.model_config(vocab.source.len(), vocab.target.len());
            let checkpoint = Checkpoint::create(out, model, config, vocab)?;
            let vocab = &checkpoint.vocab;
            crate::note!(
                "{} training pairs, {} vocabularies of {} (German) and {} (English) tokens",
                train_pairs.len(),
                if vocab.source.is_subword() {
                    "subword"
                } else {
                    "word"
                },
                vocab.source.len(),
                vocab.target.len()
            );
            checkpoint
        }
    };
    let max_len = checkpoint.max_source_len();
    let vocab = &checkpoint.vocab;
    let data = Data {
        train: examples(train_pairs, vocab, max_len),
        lexicon: examples(lexicon_pairs, vocab, max_len),
        valid: examples(&valid_pairs, vocab, max_len),
        valid_sources: valid_pairs
            .iter()
            .map(|pair| vocab.source(&pair.german, max_len))
            .collect(),
        valid_pairs,
    };
    crate::note!("training on {device:?}");
    let train_device = device.clone().autodiff();
    train_device.seed(checkpoint.train.seed);
    let model = if checkpoint.state.weights.is_empty() {
        let model = checkpoint.model.try_init(&train_device)?;
        match &checkpoint.model {
            Seq2SeqConfig::Transformer(config) if config.lexical_bias => {
                model.with_lexicon_table(lexicon_table(&data, &dictionary, vocab, max_len)?)?
            }
            _ => model,
        }
    } else {
        checkpoint.load_model(Weights::Last, &train_device)?
    };
    run_epochs(&mut checkpoint, model, &data, device, max_minutes)?;
    Ok(checkpoint)
}
