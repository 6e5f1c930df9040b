//! The application side of attnzoo as a library: translation (train, translate, evaluate,
//! attention heatmaps) and sentence embeddings. The mechanisms live in `attnzoo-models`,
//! backend selection in `attnzoo-backends`; the `attnzoo` binary is a thin command line over
//! this crate.

mod debian;
mod error;
pub mod files;
pub mod fonts;
pub mod heatmap;
pub mod padding;
pub mod parallel;
pub mod sentence_embedding;
pub mod translation;
pub mod validate;

pub use error::{is_environment, Error, Result};

/// `~/.cache/attnzoo`: fetched models, the corpus.
pub fn home_cache() -> std::path::PathBuf {
    std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_default()
        .join(".cache")
        .join("attnzoo")
}
