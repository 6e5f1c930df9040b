//! Attention mechanisms, one per file.

pub mod additive;
pub mod alignment;
pub mod differential;
pub mod latent;
pub mod linear;
pub mod linformer;
pub mod location;
pub mod luong;
pub mod masking;
pub mod memory_efficient;
pub mod multi_head;
pub mod performer;
pub mod scaled_dot;
pub mod selection;
pub mod shaw;
pub mod sigmoid;
pub mod softcap;
pub mod talking_heads;

pub use additive::{Additive, AdditiveConfig};
pub use alignment::{Alignment, AlignmentConfig, AlignmentOutput, AlignmentScore};
pub use differential::{Differential, DifferentialConfig};
pub use latent::{
    LatentCache, LatentPath, LatentQuery, LowRankQuery, MultiHeadLatent, MultiHeadLatentConfig,
    MultiHeadLatentInput,
};
pub use linear::{elu_feature_map, LinearAttention, LinearAttentionConfig, LinearState};
pub use linformer::{Linformer, LinformerConfig};
pub use location::{Location, LocationConfig};
pub use luong::{Luong, LuongConfig, LuongScore};
pub use masking::{masked_softmax, masked_softmax_with_sink, KeyPattern};
pub use multi_head::{KvCache, MultiHead, MultiHeadConfig, MultiHeadInput, MultiHeadOutput};
pub use performer::{Performer, PerformerConfig};
pub use scaled_dot::{
    AttentionImpl, AttentionInput, AttentionOutput, ScaledDotProduct, ScaledDotProductConfig,
};
pub use selection::Selection;
pub use shaw::{RelativePosition, RelativePositionConfig};
pub use sigmoid::{SigmoidAttention, SigmoidAttentionConfig};
pub use softcap::{check_softcap, softcap};
pub use talking_heads::{TalkingHeads, TalkingHeadsConfig};
