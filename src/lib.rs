//! The application side of attnzoo: the CLI's commands. The mechanisms live in
//! `attnzoo-models`, backend selection in `attnzoo-backends`.

pub mod commands;
mod error;
pub mod heatmap;
pub mod sentence_embedding;
pub mod translation;

pub use error::CliError;
