//! Positional encodings: added to embeddings (sinusoidal, learned), rotating queries and keys
//! (rotary), or biasing scores (ALiBi).

pub mod alibi;
pub mod learned;
pub mod rotary;
pub mod sinusoidal;

pub use alibi::{Alibi, AlibiConfig};
pub use learned::{LearnedPosition, LearnedPositionConfig};
pub use rotary::{RotaryConfig, RotaryEncoding};
pub use sinusoidal::{SinusoidalPosition, SinusoidalPositionConfig};
