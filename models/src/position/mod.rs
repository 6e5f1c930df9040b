//! Positional encodings: added to embeddings (sinusoidal, learned), rotating queries and keys
//! (rotary, with its scalings for long contexts), or biasing scores (ALiBi).

pub mod alibi;
pub mod learned;
pub mod rope_scaling;
pub mod rotary;
pub mod sinusoidal;
pub mod t5_bias;

pub use alibi::{Alibi, AlibiConfig};
pub use learned::{LearnedPosition, LearnedPositionConfig};
pub use rope_scaling::RopeScaling;
pub use rotary::{RotaryConfig, RotaryEncoding};
pub use sinusoidal::{SinusoidalPosition, SinusoidalPositionConfig};
pub use t5_bias::{T5RelativeBias, T5RelativeBiasConfig};
