//! The Transformer encoder (Vaswani et al. 2017), as `torch.nn.TransformerEncoderLayer` and
//! `torch.nn.TransformerEncoder`:
//!
//! post-norm: `x = LN₁(x + SA(x))`, `x = LN₂(x + FF(x))`
//! pre-norm:  `x = x + SA(LN₁(x))`, `x = x + FF(LN₂(x))`
//!
//! with `SA` attnzoo's [`MultiHead`] self-attention (softmax, or the
//! [`AttentionVariant`](super::AttentionVariant) the layer config names, between the same
//! projections; dropout after it) and `FF` the
//! [`FeedForward`] block. The stack applies `n_layers` layers, then an optional final LayerNorm
//! (what pre-norm stacks use).
//!
//! Shapes: `x [B, T, d_model]`, `padding [B, T]` (`true` = padding) → `[B, T, d_model]`, and
//! self-attention weights `[B, h, T, T]` per layer when asked for. Outputs at padded positions
//! are computed but carry no meaning.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm};
use burn::tensor::{Bool, Device, Tensor};

use super::feed_forward::FeedForward;
use super::layer::LayerConfig;
use super::variant::{VariantAttention, VariantCache};
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
    /// The self-attention variant that replaces softmax attention between `self_attn`'s
    /// projections; `None`: softmax.
    pub variant: Option<VariantAttention>,
}

impl LayerConfig {
    /// Builds an encoder layer, checking the sizes.
    pub fn try_init_encoder(&self, device: &Device) -> Result<EncoderLayer, AttnError> {
        self.try_init_encoder_at(0, device)
    }

    /// Builds the `depth`-th encoder layer of a stack (differential attention's `λ_init` depends
    /// on it).
    pub fn try_init_encoder_at(
        &self,
        depth: usize,
        device: &Device,
    ) -> Result<EncoderLayer, AttnError> {
        let self_attn = MultiHeadConfig::new(self.d_model, self.n_heads)
            .with_attention(self.attention.clone())
            .try_init(device)?;
        let variant =
            self.variant
                .try_init(self.n_heads, self_attn.d_head(), depth, false, device)?;
        Ok(EncoderLayer {
            self_attn,
            variant,
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
        Ok(self.forward_with_weights(x, padding, false)?.0)
    }

    /// As [`forward`](Self::forward), and the self-attention weights `[B, h, T, T]` when
    /// `need_weights` (softmax attention only: a [variant](super::AttentionVariant) returns none).
    pub fn forward_with_weights(
        &self,
        x: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
        need_weights: bool,
    ) -> Result<(Tensor<3>, Option<Tensor<4>>), AttnError> {
        let attend = |x: Tensor<3>| -> Result<_, AttnError> {
            if let Some(variant) = &self.variant {
                let context = variant.self_attend(
                    &self.self_attn,
                    x,
                    padding.clone(),
                    &mut VariantCache::default(),
                )?;
                return Ok((self.dropout.forward(context), None));
            }
            let mut input = MultiHeadInput::self_attn(x);
            if let Some(padding) = padding.clone() {
                input = input.padding(padding);
            }
            if need_weights {
                input = input.with_weights();
            }
            let output = self.self_attn.forward(input)?;
            Ok((self.dropout.forward(output.context), output.weights))
        };
        Ok(if self.norm_first {
            let (context, weights) = attend(self.norm1.forward(x.clone()))?;
            let x = x + context;
            (
                x.clone() + self.feed_forward.forward(self.norm2.forward(x)),
                weights,
            )
        } else {
            let (context, weights) = attend(x.clone())?;
            let x = self.norm1.forward(x + context);
            (
                self.norm2.forward(x.clone() + self.feed_forward.forward(x)),
                weights,
            )
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
                .map(|depth| self.layer.try_init_encoder_at(depth, device))
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
        Ok(self.forward_with_weights(x, padding, false)?.0)
    }

    /// As [`forward`](Self::forward), and each layer's self-attention weights `[B, h, T, T]`
    /// when `need_weights` (else none).
    pub fn forward_with_weights(
        &self,
        x: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
        need_weights: bool,
    ) -> Result<(Tensor<3>, Vec<Tensor<4>>), AttnError> {
        let mut x = x;
        let mut weights = Vec::new();
        for layer in &self.layers {
            let (next, layer_weights) =
                layer.forward_with_weights(x, padding.clone(), need_weights)?;
            x = next;
            weights.extend(layer_weights);
        }
        let x = match &self.norm {
            Some(norm) => norm.forward(x),
            None => x,
        };
        Ok((x, weights))
    }
}
