//! How a translator is trained: [`TrainConfig`], the optimisation and data settings a run keeps
//! in its folder's `train.json`.

use burn::config::Config;

use crate::validate;

/// How a model is trained.
#[derive(Config, Debug)]
pub struct TrainConfig {
    /// Passes over the training split.
    #[config(default = 30)]
    pub epochs: usize,
    /// Sentence pairs per batch.
    #[config(default = 32)]
    pub batch_size: usize,
    /// Peak learning rate.
    #[config(default = 1e-3)]
    pub learning_rate: f64,
    /// Steps of linear warmup; the rate then decays as `1/√step`.
    #[config(default = 300)]
    pub warmup_steps: usize,
    /// Label smoothing ε.
    #[config(default = 0.1)]
    pub label_smoothing: f32,
    /// Probability of feeding the gold previous token to the RNN decoder (1 = always).
    #[config(default = 1.0)]
    pub teacher_forcing: f64,
    /// Gradient L2-norm limit.
    #[config(default = 1.0)]
    pub clip_norm: f32,
    /// Longest source or target kept, in tokens.
    #[config(default = 50)]
    pub max_len: usize,
    /// Seed of the weights, the data order and teacher forcing.
    #[config(default = 42)]
    pub seed: u64,
    /// A word enters the vocabulary when seen this often in the training split.
    #[config(default = 2)]
    pub min_count: usize,
    /// Largest vocabulary, specials included.
    #[config(default = 12000)]
    pub max_vocab: usize,
    /// Tokens per language of a byte-pair-encoding subword vocabulary, specials included;
    /// 0 keeps whole words.
    #[config(default = 4000)]
    pub bpe_vocab: usize,
    /// Word and phrase pairs of the dictionary's lexicon added to each epoch's sentences
    /// (0: sentences only). Successive epochs take successive slices of one shuffled lexicon.
    #[config(default = 0)]
    pub lexicon_per_epoch: usize,
    /// Train on the first N pairs of the training split only (quick checks); `None`: all.
    pub train_limit: Option<usize>,
}

impl TrainConfig {
    /// The learning rate at optimizer step `step` (1-based).
    pub fn learning_rate_at(&self, step: usize) -> f64 {
        let (step, warmup) = (step.max(1) as f64, self.warmup_steps.max(1) as f64);
        self.learning_rate * (step / warmup).min((warmup / step).sqrt())
    }

    /// Checks every number: counts at least 1, rates finite and above 0, probabilities in
    /// `[0, 1]`, label smoothing in `[0, 1)`; the error names the field.
    pub fn check(&self) -> Result<(), String> {
        use validate::{
            at_least_one as one, bpe_vocab, field, fraction_below_one, positive, probability,
            vocab_size,
        };
        field("epochs", self.epochs, one)?;
        field("batch_size", self.batch_size, one)?;
        field("learning_rate", self.learning_rate, validate::learning_rate)?;
        field(
            "label_smoothing",
            f64::from(self.label_smoothing),
            fraction_below_one,
        )?;
        field("teacher_forcing", self.teacher_forcing, probability)?;
        field("clip_norm", f64::from(self.clip_norm), positive)?;
        field("max_len", self.max_len, one)?;
        field("min_count", self.min_count, one)?;
        field("max_vocab", self.max_vocab, vocab_size)?;
        if let Some(limit) = self.train_limit {
            field("train_limit", limit, one)?;
        }
        field("bpe_vocab", self.bpe_vocab, bpe_vocab)?;
        Ok(())
    }
}
