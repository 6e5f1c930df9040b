//! Transformer stacks built from attnzoo's own attention modules.

pub mod encoder;

pub use encoder::{EncoderLayer, EncoderLayerConfig, FeedForwardActivation};
