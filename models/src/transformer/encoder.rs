//! The Transformer encoder (Vaswani et al. 2017), as `torch.nn.TransformerEncoderLayer` and
//! `torch.nn.TransformerEncoder`:
//!
//! post-norm: `x = LN₁(x + SA(x))`, `x = LN₂(x + FF(x))`
//! pre-norm:  `x = x + SA(LN₁(x))`, `x = x + FF(LN₂(x))`
//!
//! with `SA` attnzoo's [`MultiHead`] self-attention (dropout after it) and `FF` the
//! [`FeedForward`] block. The stack applies `n_layers` layers, then an optional final LayerNorm
//! (what pre-norm stacks use).
//!
//! Shapes: `x [B, T, d_model]`, `padding [B, T]` (`true` = padding) → `[B, T, d_model]`. Outputs
//! at padded positions are computed but carry no meaning.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm};
use burn::tensor::{Bool, Device, Tensor};

use super::feed_forward::FeedForward;
use super::layer::LayerConfig;
use crate::attention::{MultiHead, MultiHeadConfig, MultiHeadInput};
use crate::error::ensure;
use crate::AttnError;

/// One encoder layer.
#[derive(Module, Debug)]
pub struct EncoderLayer {
    /// Multi-head self-attention.
    pub self_attn: MultiHead,
    /// The feed-forward block.
    pub feed_forward: FeedForward,
    /// LayerNorm around the attention.
    pub norm1: LayerNorm,
    /// LayerNorm around the feed-forward.
    pub norm2: LayerNorm,
    /// Dropout after the attention (identity without autodiff).
    pub dropout: Dropout,
    /// Pre-norm or post-norm.
    #[module(skip)]
    pub norm_first: bool,
}

impl LayerConfig {
    /// Builds an encoder layer, checking the sizes.
    pub fn try_init_encoder(&self, device: &Device) -> Result<EncoderLayer, AttnError> {
        Ok(EncoderLayer {
            self_attn: MultiHeadConfig::new(self.d_model, self.n_heads)
                .with_attention(self.attention.clone())
                .try_init(device)?,
            feed_forward: self.feed_forward().init(device),
            norm1: self.layer_norm(device),
            norm2: self.layer_norm(device),
            dropout: DropoutConfig::new(self.dropout).init(),
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
            x.clone() + self.feed_forward.forward(self.norm2.forward(x))
        } else {
            let x = self.norm1.forward(x.clone() + attend(x)?);
            self.norm2.forward(x.clone() + self.feed_forward.forward(x))
        })
    }
}

/// Configuration of [`Encoder`]: `n_layers` copies of one layer config.
#[derive(Config, Debug)]
pub struct EncoderConfig {
    /// Every layer's sizes.
    pub layer: LayerConfig,
    /// Number of layers.
    pub n_layers: usize,
    /// A LayerNorm after the last layer (usual with pre-norm layers).
    #[config(default = false)]
    pub final_norm: bool,
}

/// A stack of encoder layers.
#[derive(Module, Debug)]
pub struct Encoder {
    /// The layers, applied in order.
    pub layers: Vec<EncoderLayer>,
    /// The optional final LayerNorm.
    pub norm: Option<LayerNorm>,
}

impl EncoderConfig {
    /// Builds the stack.
    pub fn try_init(&self, device: &Device) -> Result<Encoder, AttnError> {
        ensure!(self.n_layers >= 1, "an encoder needs at least one layer");
        Ok(Encoder {
            layers: (0..self.n_layers)
                .map(|_| self.layer.try_init_encoder(device))
                .collect::<Result<_, _>>()?,
            norm: self.final_norm.then(|| self.layer.layer_norm(device)),
        })
    }
}

impl Encoder {
    /// `x [B, T, d_model]`, `padding [B, T]` → `[B, T, d_model]`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
    ) -> Result<Tensor<3>, AttnError> {
        let x = self
            .layers
            .iter()
            .try_fold(x, |x, layer| layer.forward(x, padding.clone()))?;
        Ok(match &self.norm {
            Some(norm) => norm.forward(x),
            None => x,
        })
    }
}
