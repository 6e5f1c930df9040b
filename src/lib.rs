//! The application side of attnzoo as a library: translation (train, translate, evaluate,
//! attention heatmaps) and sentence embeddings. The mechanisms live in `attnzoo-models`,
//! backend selection in `attnzoo-backends`; the `attnzoo` binary is a thin command line over
//! this crate.
//!
//! The verbs: [`translation::Translator`] (load a trained model, translate, evaluate, attend),
//! [`translation::train`] (a [`translation::TrainSpec`] into a run folder) and
//! [`sentence_embedding::SentenceEmbedder`] (MiniLM sentence vectors). What is public and why,
//! and the versioning policy: `docs/API.md` and `CHANGELOG.md`.

#![warn(missing_docs)]

/// `eprintln!` that cannot panic: a progress or status line to stderr. A stderr that cannot be
/// written (`2>/dev/full`) loses the line; the command goes on and its exit status still tells.
/// For the `attnzoo` binary, not part of the API.
#[doc(hidden)]
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod attention_maps;
mod debian;
mod error;
// For the `attnzoo` binary (a crate of its own), not part of the API: see docs/API.md.
#[doc(hidden)]
pub mod files;
mod fonts;
pub mod gguf_tokenizer;
pub mod heatmap;
pub mod language_model;
mod padding;
mod parallel;
pub mod sentence_embedding;
#[cfg(feature = "serve")]
pub mod serve;
pub mod translation;
#[doc(hidden)]
pub mod validate;

pub use error::{is_environment, Error, Result};

/// The workspace README's Rust snippet, compiled as a doc test (`no_run`: it needs a trained model
/// and MiniLM's files).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// `~/.cache/attnzoo`: fetched models, the corpus.
pub fn home_cache() -> std::path::PathBuf {
    std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_default()
        .join(".cache")
        .join("attnzoo")
}
