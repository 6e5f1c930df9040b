#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod attention;
mod error;
pub mod finite;
pub mod gguf;
mod hf_weights;
pub mod lm;
pub mod norm;
pub mod position;
pub mod quant;
pub mod seq2seq;
pub mod transformer;
mod workers;

pub use error::{escape_control, AttnError};
