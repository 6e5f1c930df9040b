//! One function per CLI subcommand.

mod backends;
mod embed;
mod translation;

pub use backends::{backends, check};
pub use embed::{embed, read_lines};
pub use translation::{
    attend_command, bleu_command, data_fetch, demo, eval_command, train_command, translate_command,
    translate_pairs, AttentionKind, DecodeArgs, ModelKind, TrainArgs,
};
