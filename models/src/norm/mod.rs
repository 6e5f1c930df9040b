//! Normalisation layers of today's language models.

pub mod rms_norm;

pub use rms_norm::{RmsNorm, RmsNormConfig};
