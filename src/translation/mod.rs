//! German→English translation: the corpus, vocabularies, batching, training, checkpoints,
//! decoding and BLEU/chrF. The models live in `attnzoo_models::seq2seq`.
//!
//! The two verbs: [`Translator::load`] then [`Translator::translate`], and [`trainer::run`].

pub mod batch;
pub mod checkpoint;
pub mod corpus;
pub mod decode;
pub mod metrics;
pub mod report;
pub mod train;
pub mod trainer;
pub mod translator;
pub mod vocab;

pub use decode::{DecodeConfig, Search};
pub use trainer::{AttentionKind, ModelKind, TrainSpec};
pub use translator::{Attention, Evaluation, Translator};
