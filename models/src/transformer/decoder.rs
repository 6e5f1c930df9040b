//! The Transformer decoder (Vaswani et al. 2017), as `torch.nn.TransformerDecoderLayer` and
//! `torch.nn.TransformerDecoder`:
//!
//! post-norm: `x = LN₁(x + SA(x))`, `x = LN₂(x + CA(x, m))`, `x = LN₃(x + FF(x))`
//! pre-norm:  `x = x + SA(LN₁(x))`, `x = x + CA(LN₂(x), m)`, `x = x + FF(LN₃(x))`
//!
//! with `SA` causal [`MultiHead`] self-attention (softmax, or the causal form of the
//! [`AttentionVariant`](super::AttentionVariant) the layer config names), `CA` cross-attention over the encoder memory
//! `m`, and `FF` the [`FeedForward`] block.
//!
//! Shapes: `x [B, T, d_model]`, `memory [B, S, d_model]`, `memory_padding [B, S]` →
//! `[B, T, d_model]`; per layer, when asked for, self-attention weights `[B, h, T, C + T]` (over
//! the `C` cached positions and these) and cross-attention weights `[B, h, T, S]`.
//!
//! Incremental decoding: a [`DecoderCache`] keeps each layer's self-attention keys and values
//! (growing by `T` per call) and its projected memory (computed on the first call), so step `t`
//! costs one query against `t` cached keys. A fresh cache for every call decodes a whole
//! sequence at once (teacher forcing).

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm};
use burn::tensor::{Bool, Device, Int, Tensor};

use super::feed_forward::FeedForward;
use super::layer::LayerConfig;
use super::variant::{VariantAttention, VariantCache};
use crate::attention::{KeyPattern, KvCache, MultiHead, MultiHeadConfig, MultiHeadInput};
use crate::error::ensure;
use crate::AttnError;

/// One decoder layer.
#[derive(Module, Debug)]
pub struct DecoderLayer {
    /// Causal multi-head self-attention.
    pub self_attn: MultiHead,
    /// Multi-head attention over the encoder memory.
    pub cross_attn: MultiHead,
    /// The feed-forward block.
    pub feed_forward: FeedForward,
    /// LayerNorm around the self-attention.
    pub norm1: LayerNorm,
    /// LayerNorm around the cross-attention.
    pub norm2: LayerNorm,
    /// LayerNorm around the feed-forward.
    pub norm3: LayerNorm,
    /// Dropout after each attention (identity without autodiff).
    pub dropout: Dropout,
    /// Pre-norm or post-norm.
    #[module(skip)]
    pub norm_first: bool,
    /// The causal self-attention variant that replaces softmax attention between `self_attn`'s
    /// projections; `None`: softmax.
    pub variant: Option<VariantAttention>,
}

/// One layer's cached self-attention keys/values (or a variant's state) and projected memory.
#[derive(Debug, Clone)]
pub struct LayerCache {
    self_attn: KvCache,
    variant: VariantCache,
    cross_attn: KvCache,
}

impl LayerCache {
    /// Target positions decoded so far.
    fn len(&self) -> usize {
        self.self_attn.len().max(self.variant.len())
    }
}

impl LayerConfig {
    /// Builds a decoder layer: causal self-attention, cross-attention without a pattern.
    pub fn try_init_decoder(&self, device: &Device) -> Result<DecoderLayer, AttnError> {
        self.try_init_decoder_at(0, device)
    }

    /// Builds the `depth`-th decoder layer of a stack (differential attention's `λ_init`
    /// depends on it).
    pub fn try_init_decoder_at(
        &self,
        depth: usize,
        device: &Device,
    ) -> Result<DecoderLayer, AttnError> {
        let attention = |pattern| {
            MultiHeadConfig::new(self.d_model, self.n_heads)
                .with_attention(self.attention.clone().with_pattern(pattern))
                .try_init(device)
        };
        let self_attn = attention(KeyPattern::Causal)?;
        let variant =
            self.variant
                .try_init(self.n_heads, self_attn.d_head(), depth, true, device)?;
        Ok(DecoderLayer {
            self_attn,
            variant,
            cross_attn: attention(KeyPattern::Full)?,
            feed_forward: self.feed_forward().init(device),
            norm1: self.layer_norm(device),
            norm2: self.layer_norm(device),
            norm3: self.layer_norm(device),
            dropout: DropoutConfig::new(self.dropout).init(),
            norm_first: self.norm_first,
        })
    }
}

impl DecoderLayer {
    /// `x [B, T, d_model]` after the cached positions, `memory [B, S, d_model]` → the layer's
    /// output `[B, T, d_model]` and, if `need_weights`, its self- and cross-attention weights.
    pub fn forward(
        &self,
        x: Tensor<3>,
        memory: Tensor<3>,
        memory_padding: Option<Tensor<2, Bool>>,
        cache: &mut LayerCache,
        need_weights: bool,
    ) -> Result<DecoderOutput, AttnError> {
        let attend = |input: MultiHeadInput, module: &MultiHead, cache: &mut KvCache| {
            let input = if need_weights {
                input.with_weights()
            } else {
                input
            };
            let output = module.forward_cached(input, cache)?;
            Ok::<_, AttnError>((self.dropout.forward(output.context), output.weights))
        };
        let self_attend = |x: Tensor<3>, cache: &mut LayerCache| match &self.variant {
            Some(variant) => {
                let context = variant.self_attend(&self.self_attn, x, None, &mut cache.variant)?;
                Ok::<_, AttnError>((self.dropout.forward(context), None))
            }
            None => attend(
                MultiHeadInput::self_attn(x),
                &self.self_attn,
                &mut cache.self_attn,
            ),
        };
        let cross_attend = |x: Tensor<3>, cache: &mut KvCache| {
            let mut input = MultiHeadInput::new(x, memory.clone(), memory.clone());
            if let Some(padding) = memory_padding.clone() {
                input = input.padding(padding);
            }
            attend(input, &self.cross_attn, cache)
        };
        let (hidden, self_weights, cross_weights) = if self.norm_first {
            let (context, self_weights) = self_attend(self.norm1.forward(x.clone()), cache)?;
            let x = x + context;
            let (context, cross_weights) =
                cross_attend(self.norm2.forward(x.clone()), &mut cache.cross_attn)?;
            let x = x + context;
            let hidden = x.clone() + self.feed_forward.forward(self.norm3.forward(x));
            (hidden, self_weights, cross_weights)
        } else {
            let (context, self_weights) = self_attend(x.clone(), cache)?;
            let x = self.norm1.forward(x + context);
            let (context, cross_weights) = cross_attend(x.clone(), &mut cache.cross_attn)?;
            let x = self.norm2.forward(x + context);
            let hidden = self.norm3.forward(x.clone() + self.feed_forward.forward(x));
            (hidden, self_weights, cross_weights)
        };
        Ok(DecoderOutput {
            hidden,
            self_weights: self_weights.into_iter().collect(),
            cross_weights: cross_weights.into_iter().collect(),
        })
    }
}

/// Configuration of [`Decoder`]: `n_layers` copies of one layer config.
#[derive(Config, Debug)]
pub struct DecoderConfig {
    /// Every layer's sizes.
    pub layer: LayerConfig,
    /// Number of layers.
    pub n_layers: usize,
    /// A LayerNorm after the last layer (usual with pre-norm layers).
    #[config(default = false)]
    pub final_norm: bool,
}

/// A stack of decoder layers.
#[derive(Module, Debug)]
pub struct Decoder {
    /// The layers, applied in order.
    pub layers: Vec<DecoderLayer>,
    /// The optional final LayerNorm.
    pub norm: Option<LayerNorm>,
}

/// The decoder's state between incremental calls, one [`LayerCache`] per layer.
#[derive(Debug, Clone)]
pub struct DecoderCache {
    layers: Vec<LayerCache>,
}

impl DecoderCache {
    /// An empty cache for `decoder`.
    pub fn new(decoder: &Decoder) -> Self {
        let layer = LayerCache {
            self_attn: KvCache::growing(),
            variant: VariantCache::default(),
            cross_attn: KvCache::fixed(),
        };
        Self {
            layers: vec![layer; decoder.layers.len()],
        }
    }

    /// Target positions decoded so far.
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, LayerCache::len)
    }

    /// Whether nothing was decoded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps the batch rows `indices` in that order (for beam search).
    pub fn select(&mut self, indices: Tensor<1, Int>) {
        for layer in &mut self.layers {
            layer.self_attn.select(indices.clone());
            layer.variant.select(indices.clone());
            layer.cross_attn.select(indices.clone());
        }
    }
}

impl DecoderConfig {
    /// Builds the stack.
    pub fn try_init(&self, device: &Device) -> Result<Decoder, AttnError> {
        ensure!(self.n_layers >= 1, "a decoder needs at least one layer");
        Ok(Decoder {
            layers: (0..self.n_layers)
                .map(|depth| self.layer.try_init_decoder_at(depth, device))
                .collect::<Result<_, _>>()?,
            norm: self.final_norm.then(|| self.layer.layer_norm(device)),
        })
    }
}

/// The decoder's hidden states and, when asked for, each layer's attention weights.
#[derive(Debug, Clone)]
pub struct DecoderOutput {
    /// `[B, T, d_model]`.
    pub hidden: Tensor<3>,
    /// Per layer `[B, h, T, C + T]` over the `C` cached positions and these; empty unless asked for.
    pub self_weights: Vec<Tensor<4>>,
    /// Per layer `[B, h, T, S]`; empty unless asked for.
    pub cross_weights: Vec<Tensor<4>>,
}

impl Decoder {
    /// Decodes `x [B, T, d_model]`, the positions after those in `cache`, against `memory`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        memory: Tensor<3>,
        memory_padding: Option<Tensor<2, Bool>>,
        cache: &mut DecoderCache,
        need_weights: bool,
    ) -> Result<DecoderOutput, AttnError> {
        ensure!(
            cache.layers.len() == self.layers.len(),
            "the cache has {} layers, the decoder {}",
            cache.layers.len(),
            self.layers.len()
        );
        let mut output = DecoderOutput {
            hidden: x,
            self_weights: Vec::new(),
            cross_weights: Vec::new(),
        };
        for (layer, layer_cache) in self.layers.iter().zip(&mut cache.layers) {
            let next = layer.forward(
                output.hidden,
                memory.clone(),
                memory_padding.clone(),
                layer_cache,
                need_weights,
            )?;
            output.hidden = next.hidden;
            output.self_weights.extend(next.self_weights);
            output.cross_weights.extend(next.cross_weights);
        }
        if let Some(norm) = &self.norm {
            output.hidden = norm.forward(output.hidden);
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::{Distribution, Tolerance};

    fn decoder(norm_first: bool, device: &Device) -> Decoder {
        DecoderConfig::new(
            LayerConfig::new(8, 2, 16)
                .with_dropout(0.0)
                .with_norm_first(norm_first),
            2,
        )
        .with_final_norm(norm_first)
        .try_init(device)
        .unwrap()
    }

    #[test]
    fn step_by_step_decoding_equals_the_whole_sequence() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        for norm_first in [false, true] {
            let decoder = decoder(norm_first, &device);
            let x = Tensor::<3>::random([2, 5, 8], Distribution::Default, &device);
            let memory = Tensor::<3>::random([2, 4, 8], Distribution::Default, &device);
            let padding =
                Tensor::<2, Bool>::from_data([[false; 4], [false, false, true, true]], &device);
            let whole = decoder
                .forward(
                    x.clone(),
                    memory.clone(),
                    Some(padding.clone()),
                    &mut DecoderCache::new(&decoder),
                    false,
                )
                .unwrap()
                .hidden;
            let mut cache = DecoderCache::new(&decoder);
            let steps: Vec<Tensor<3>> = (0..5)
                .map(|t| {
                    decoder
                        .forward(
                            x.clone().narrow(1, t, 1),
                            memory.clone(),
                            Some(padding.clone()),
                            &mut cache,
                            false,
                        )
                        .unwrap()
                        .hidden
                })
                .collect();
            assert_eq!(cache.len(), 5);
            Tensor::cat(steps, 1)
                .into_data()
                .assert_approx_eq::<f32>(&whole.into_data(), Tolerance::absolute(1e-5));
        }
    }

    #[test]
    fn a_later_position_never_changes_an_earlier_one_and_padded_memory_is_ignored() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let decoder = decoder(false, &device);
        let x = Tensor::<3>::random([1, 4, 8], Distribution::Default, &device);
        let memory = Tensor::<3>::random([1, 3, 8], Distribution::Default, &device);
        let padding = Tensor::<2, Bool>::from_data([[false, false, true]], &device);
        let run = |x: Tensor<3>, memory: Tensor<3>| {
            let output = decoder
                .forward(
                    x,
                    memory,
                    Some(padding.clone()),
                    &mut DecoderCache::new(&decoder),
                    true,
                )
                .unwrap();
            (output.hidden, output.cross_weights, output.self_weights)
        };
        let (reference, weights, self_weights) = run(x.clone(), memory.clone());
        assert_eq!(self_weights.len(), 2);
        assert_eq!(self_weights[1].dims(), [1, 2, 4, 4]);
        let rows = self_weights[1]
            .clone()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        for (index, weight) in rows.iter().enumerate() {
            let (query, key) = ((index / 4) % 4, index % 4);
            assert!(key <= query || *weight == 0.0, "step {query} sees {key}");
        }
        assert_eq!(weights.len(), 2);
        assert_eq!(weights[0].dims(), [1, 2, 4, 3]);
        let padded_weight: f32 = weights[0].clone().narrow(3, 2, 1).abs().sum().into_scalar();
        assert_eq!(padded_weight, 0.0);
        let changed_future =
            Tensor::cat(vec![x.clone().narrow(1, 0, 3), x.narrow(1, 3, 1) * 5.0], 1);
        let changed_padding = Tensor::cat(
            vec![memory.clone().narrow(1, 0, 2), memory.narrow(1, 2, 1) - 3.0],
            1,
        );
        let (future, _, _) = run(changed_future, changed_padding);
        future.narrow(1, 0, 3).into_data().assert_approx_eq::<f32>(
            &reference.narrow(1, 0, 3).into_data(),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn selecting_rows_of_the_cache_follows_the_hypotheses() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let decoder = decoder(true, &device);
        let x = Tensor::<3>::random([2, 3, 8], Distribution::Default, &device);
        let memory = Tensor::<3>::random([2, 4, 8], Distribution::Default, &device);
        let mut cache = DecoderCache::new(&decoder);
        decoder
            .forward(
                x.clone().narrow(1, 0, 2),
                memory.clone(),
                None,
                &mut cache,
                false,
            )
            .unwrap();
        let swap = Tensor::<1, Int>::from_data([1, 0], &device);
        cache.select(swap.clone());
        let step = decoder
            .forward(
                x.clone().narrow(1, 2, 1).select(0, swap.clone()),
                memory.clone().select(0, swap.clone()),
                None,
                &mut cache,
                false,
            )
            .unwrap()
            .hidden;
        let whole = decoder
            .forward(x, memory, None, &mut DecoderCache::new(&decoder), false)
            .unwrap()
            .hidden;
        step.into_data().assert_approx_eq::<f32>(
            &whole.narrow(1, 2, 1).select(0, swap).into_data(),
            Tolerance::absolute(1e-5),
        );
    }
}
