//! A Transformer encoder layer (Vaswani et al. 2017), as `torch.nn.TransformerEncoderLayer`:
//!
//! post-norm: `x = LN₁(x + SA(x))`, `x = LN₂(x + FF(x))`
//! pre-norm:  `x = x + SA(LN₁(x))`, `x = x + FF(LN₂(x))`
//!
//! with `SA` attnzoo's [`MultiHead`] self-attention and `FF(x) = W₂ act(W₁ x + b₁) + b₂`
//! (dropout after the attention, inside and after the feed-forward, active only under autodiff).
//!
//! Shapes: `x [B, T, d_model]`, `padding [B, T]` (`true` = padding) → `[B, T, d_model]`. Outputs
//! at padded positions are computed but carry no meaning.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, relu};
use burn::tensor::{Bool, Device, Tensor};

use crate::attention::{MultiHead, MultiHeadConfig, MultiHeadInput, ScaledDotProductConfig};
use crate::AttnError;

/// The feed-forward non-linearity.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum FeedForwardActivation {
    /// `max(0, x)`
    Relu,
    /// `x Φ(x)` (exact, with erf)
    Gelu,
}

/// Configuration of [`EncoderLayer`], named as `torch.nn.TransformerEncoderLayer`'s arguments.
#[derive(Config, Debug)]
pub struct EncoderLayerConfig {
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
    /// The self-attention's scale, pattern (e.g. causal) and implementation.
    #[config(default = "ScaledDotProductConfig::new()")]
    pub attention: ScaledDotProductConfig,
}

/// One encoder layer.
#[derive(Module, Debug)]
pub struct EncoderLayer {
    /// Multi-head self-attention.
    pub self_attn: MultiHead,
    /// `W₁`: `d_model → d_ff`.
    pub linear1: Linear,
    /// `W₂`: `d_ff → d_model`.
    pub linear2: Linear,
    /// LayerNorm around the attention.
    pub norm1: LayerNorm,
    /// LayerNorm around the feed-forward.
    pub norm2: LayerNorm,
    /// Dropout (identity without autodiff).
    pub dropout: Dropout,
    /// Feed-forward activation.
    #[module(skip)]
    pub activation: FeedForwardActivation,
    /// Pre-norm or post-norm.
    #[module(skip)]
    pub norm_first: bool,
}

impl EncoderLayerConfig {
    /// Builds the layer, checking the sizes.
    pub fn try_init(&self, device: &Device) -> Result<EncoderLayer, AttnError> {
        let norm = || {
            LayerNormConfig::new(self.d_model)
                .with_epsilon(self.layer_norm_eps)
                .init(device)
        };
        Ok(EncoderLayer {
            self_attn: MultiHeadConfig::new(self.d_model, self.n_heads)
                .with_attention(self.attention.clone())
                .try_init(device)?,
            linear1: LinearConfig::new(self.d_model, self.d_ff).init(device),
            linear2: LinearConfig::new(self.d_ff, self.d_model).init(device),
            norm1: norm(),
            norm2: norm(),
            dropout: DropoutConfig::new(self.dropout).init(),
            activation: self.activation,
            norm_first: self.norm_first,
        })
    }
}

impl EncoderLayer {
    /// `x [B, T, d_model]`, `padding [B, T]` → `[B, T, d_model]`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
    ) -> Result<Tensor<3>, AttnError> {
        let attend = |x: Tensor<3>| -> Result<Tensor<3>, AttnError> {
            let input = MultiHeadInput::self_attn(x);
            let input = match padding.clone() {
                Some(padding) => input.padding(padding),
                None => input,
            };
            Ok(self.dropout.forward(self.self_attn.forward(input)?.context))
        };
        Ok(if self.norm_first {
            let x = x.clone() + attend(self.norm1.forward(x))?;
            x.clone() + self.feed_forward(self.norm2.forward(x))
        } else {
            let x = self.norm1.forward(x.clone() + attend(x)?);
            self.norm2.forward(x.clone() + self.feed_forward(x))
        })
    }

    fn feed_forward(&self, x: Tensor<3>) -> Tensor<3> {
        let hidden = self.linear1.forward(x);
        let hidden = match self.activation {
            FeedForwardActivation::Relu => relu(hidden),
            FeedForwardActivation::Gelu => gelu(hidden),
        };
        self.dropout
            .forward(self.linear2.forward(self.dropout.forward(hidden)))
    }
}
