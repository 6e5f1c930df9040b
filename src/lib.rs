//! The application side of attnzoo: the CLI's commands. The mechanisms live in
//! `attnzoo-models`, backend selection in `attnzoo-backends`.

pub mod commands;
mod debian;
mod error;
pub mod fonts;
pub mod heatmap;
pub mod sentence_embedding;
pub mod translation;

pub use error::CliError;

/// `~/.cache/attnzoo`: fetched models, the corpus, fonts.
pub fn home_cache() -> std::path::PathBuf {
    std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_default()
        .join(".cache")
        .join("attnzoo")
}
