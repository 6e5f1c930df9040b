//! German→English translation: the corpus, vocabularies, training, checkpoints, decoding and
//! BLEU/chrF. The models live in `attnzoo_models::seq2seq`.
//!
//! The verbs: [`Translator::load`] then [`Translator::translate_text`] (or
//! [`Translator::translate`], one sentence per string), and [`train`] (a
//! [`TrainSpec`] into a run folder, whose files a [`Checkpoint`] reads and writes).
//!
//! Files: `recipe.rs` (what to train, and [`train`]), `train_config.rs` (the optimisation and
//! data settings), `training_loop.rs` (epochs, loss, Adam, validation), `checkpoint.rs` (the run
//! folder's files), `train_state.rs` (where a run stands: `state.json`).

mod batch;
pub mod checkpoint;
pub mod copy;
pub mod corpus;
pub mod decode;
pub mod ibm1;
pub mod lookup;
pub mod metrics;
mod recipe;
pub mod report;
pub mod sentences;
mod train_config;
mod train_state;
mod training_loop;
pub mod translator;
pub mod vocab;

pub use checkpoint::{Checkpoint, Vocabularies, Weights};
pub use decode::{DecodeConfig, Search};
pub use lookup::DictionaryLookup;
pub use recipe::{train, AttentionKind, ModelKind, TrainSpec};
pub use train_config::TrainConfig;
pub use train_state::{EpochRecord, TrainState};
pub use translator::{Attention, Evaluation, TextAttention, Translator};
