//! The sizes shared by encoder and decoder layers, and the pieces built from them.

use burn::config::Config;
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::Device;

use super::feed_forward::{FeedForwardActivation, FeedForwardConfig};
use super::variant::AttentionVariant;
use crate::attention::ScaledDotProductConfig;

/// The sizes of one encoder or decoder layer, named as `torch.nn.TransformerEncoderLayer`'s
/// arguments.
#[derive(Config, Debug)]
pub struct LayerConfig {
    /// Model width.
    pub d_model: usize,
    /// Attention heads.
    pub n_heads: usize,
    /// Feed-forward width.
    pub d_ff: usize,
    /// Dropout probability.
    #[config(default = 0.1)]
    pub dropout: f64,
    /// Feed-forward activation.
    #[config(default = "FeedForwardActivation::Relu")]
    pub activation: FeedForwardActivation,
    /// LayerNorm epsilon.
    #[config(default = 1e-5)]
    pub layer_norm_eps: f64,
    /// Pre-norm (`true`) or post-norm (`false`, the original).
    #[config(default = false)]
    pub norm_first: bool,
    /// The self-attention's scale, pattern and implementation (a decoder makes it causal).
    #[config(default = "ScaledDotProductConfig::new()")]
    pub attention: ScaledDotProductConfig,
    /// The self-attention variant (softmax, T5 bias, talking heads, linear, ...); cross-attention
    /// stays softmax.
    #[config(default = "AttentionVariant::Softmax")]
    pub variant: AttentionVariant,
}

impl LayerConfig {
    /// The feed-forward block this layer uses.
    pub fn feed_forward(&self) -> FeedForwardConfig {
        FeedForwardConfig::new(self.d_model, self.d_ff)
            .with_dropout(self.dropout)
            .with_activation(self.activation)
    }

    /// A LayerNorm of this layer's width and epsilon.
    pub fn layer_norm(&self, device: &Device) -> LayerNorm {
        LayerNormConfig::new(self.d_model)
            .with_epsilon(self.layer_norm_eps)
            .init(device)
    }
}
