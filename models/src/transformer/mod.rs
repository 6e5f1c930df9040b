//! Transformer stacks built from attnzoo's own attention modules.

pub mod bert;
pub mod decoder;
pub mod encoder;
pub mod feed_forward;
pub mod gated_feed_forward;
pub mod layer;
pub mod moe;
mod torch_top_k;
pub mod variant;

pub use bert::{l2_normalize, Bert, BertConfig, Pooling};
pub use decoder::{Decoder, DecoderCache, DecoderConfig, DecoderLayer, DecoderOutput};
pub use encoder::{Encoder, EncoderConfig, EncoderLayer};
pub use feed_forward::{FeedForward, FeedForwardActivation, FeedForwardConfig};
pub use gated_feed_forward::{GatedActivation, GatedFeedForward, GatedFeedForwardConfig};
pub use layer::LayerConfig;
pub use moe::{Routing, SparseMoe, SparseMoeConfig};
pub use variant::{AttentionVariant, VariantAttention, VariantCache};
