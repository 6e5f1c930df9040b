//! Attention mechanisms, one per file.

pub mod additive;
pub mod alignment;
pub mod linformer;
pub mod location;
pub mod luong;
pub mod masking;
pub mod memory_efficient;
pub mod multi_head;
pub mod scaled_dot;
pub mod selection;
pub mod softcap;

pub use additive::{Additive, AdditiveConfig};
pub use alignment::{Alignment, AlignmentConfig, AlignmentOutput, AlignmentScore};
pub use linformer::{Linformer, LinformerConfig};
pub use location::{Location, LocationConfig};
pub use luong::{Luong, LuongConfig, LuongScore};
pub use masking::{masked_softmax, masked_softmax_with_sink, KeyPattern};
pub use multi_head::{KvCache, MultiHead, MultiHeadConfig, MultiHeadInput, MultiHeadOutput};
pub use scaled_dot::{
    AttentionImpl, AttentionInput, AttentionOutput, ScaledDotProduct, ScaledDotProductConfig,
};
pub use selection::Selection;
pub use softcap::{check_softcap, softcap};
