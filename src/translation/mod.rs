//! German→English translation: the corpus, vocabularies, batching, training, checkpoints,
//! decoding and BLEU/chrF. The models live in `attnzoo_models::seq2seq`.

pub mod batch;
pub mod checkpoint;
pub mod corpus;
pub mod decode;
pub mod metrics;
pub mod report;
pub mod train;
pub mod vocab;
