//! The self-attention of an encoder or decoder layer, chosen by configuration: softmax attention
//! (the default) or one of the research variants, so that one program can train the same model
//! with each in turn ([`LayerConfig::variant`](super::LayerConfig::variant)).
//!
//! Every variant keeps the layer's [`MultiHead`] projections `W_Q, W_K, W_V, W_O` and its heads;
//! only what happens between the projections changes:
//!
//! | variant | per head, between the projections |
//! |---|---|
//! | [`AttentionVariant::Softmax`] | `softmax(QKᵀ/√d) V` ([`crate::attention::ScaledDotProduct`]) |
//! | [`AttentionVariant::T5Bias`] | the same with T5's bucketed relative bias added to the scores ([`T5RelativeBias`]) |
//! | [`AttentionVariant::RelativePosition`] | Shaw et al.'s relative representations on keys and values ([`RelativePosition`]) |
//! | [`AttentionVariant::TalkingHeads`] | scores and weights mixed across heads ([`TalkingHeads`]) |
//! | [`AttentionVariant::Sigmoid`] | `σ(QKᵀ/√d − ln n) V` ([`SigmoidAttention`]) |
//! | [`AttentionVariant::Differential`] | the difference of two softmax maps ([`Differential`]) |
//! | [`AttentionVariant::Linear`] | `φ(Q)(φ(K)ᵀV)`, `φ = elu + 1` ([`LinearAttention`]) |
//! | [`AttentionVariant::Performer`] | FAVOR+ random features ([`Performer`]) |
//!
//! A decoder makes every variant causal; decoding step by step keeps what the variant needs in
//! a [`VariantCache`] (projected keys and values, or linear attention's recurrent state), and gives
//! the same result as the whole sequence at once. Performer has no causal form here.
//!
//! Shapes: `x [B, T, d_model]`, `padding [B, T]` (`true` = padding) → `[B, T, d_model]`.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Bool, Device, Tensor};

use crate::attention::{
    AttentionInput, DifferentialConfig, KeyPattern, KvCache, LinearAttention,
    LinearAttentionConfig, LinearState, MultiHead, MultiHeadInput, Performer, PerformerConfig,
    RelativePositionConfig, SigmoidAttention, SigmoidAttentionConfig, TalkingHeadsConfig,
};
use crate::attention::{Differential, RelativePosition, TalkingHeads};
use crate::error::ensure;
use crate::position::{T5RelativeBias, T5RelativeBiasConfig};
use crate::AttnError;

/// Which self-attention a layer uses (the layer's width and heads come from its
/// [`LayerConfig`](super::LayerConfig)).
#[derive(Config, Debug, PartialEq)]
pub enum AttentionVariant {
    /// Softmax attention, as configured by the layer's `attention`.
    Softmax,
    /// T5's relative position bias (Raffel et al. 2020), added to the softmax scores.
    T5Bias {
        /// Buckets (T5: 32).
        num_buckets: usize,
        /// Distances from here on share the last bucket (T5: 128).
        max_distance: usize,
    },
    /// Relative position representations on keys and values (Shaw et al. 2018).
    RelativePosition {
        /// The clipping distance `k`.
        max_relative_position: usize,
    },
    /// Talking-heads attention (Shazeer et al. 2020), mixing before and after the softmax.
    TalkingHeads,
    /// Sigmoid attention (Ramapuram et al. 2024), `b = −ln n`.
    Sigmoid {
        /// `n` of the bias; `None`: the number of keys (a decoder needs it set).
        n: Option<usize>,
    },
    /// Differential attention (Ye et al. 2024); each head's width is split in two halves.
    Differential,
    /// Linear attention (Katharopoulos et al. 2020), `φ = elu + 1`.
    Linear,
    /// Performer FAVOR+ (Choromanski et al. 2021), non-causal only.
    Performer {
        /// Random features; `None`: `⌊d ln d⌋`.
        n_features: Option<usize>,
    },
}

/// A layer's variant attention (none for [`AttentionVariant::Softmax`]).
#[derive(Module, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum VariantAttention {
    /// T5's bias.
    T5Bias(T5RelativeBias),
    /// Shaw et al.'s relative representations.
    RelativePosition(RelativePosition),
    /// Talking heads.
    TalkingHeads(TalkingHeads),
    /// Sigmoid attention.
    Sigmoid(SigmoidAttention),
    /// Differential attention.
    Differential(Differential),
    /// Linear attention.
    Linear(LinearAttention),
    /// Performer.
    Performer(Performer),
}

/// What a variant keeps between decoding steps: the projected keys and values (T5's in the
/// [`KvCache`] of its [`MultiHead`]), or linear attention's recurrent state.
#[derive(Debug, Clone, Default)]
pub struct VariantCache {
    kv: KvCache,
    key: Option<Tensor<4>>,
    value: Option<Tensor<4>>,
    linear: LinearState,
    len: usize,
}

impl VariantCache {
    /// Positions decoded so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was decoded yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keeps the batch rows `indices [B']` in that order (beam search).
    pub fn select(&mut self, indices: Tensor<1, burn::tensor::Int>) {
        self.kv.select(indices.clone());
        self.linear.select(indices.clone());
        for t in [&mut self.key, &mut self.value] {
            if let Some(tensor) = t.take() {
                *t = Some(tensor.select(0, indices.clone()));
            }
        }
    }
}

impl AttentionVariant {
    /// Builds the variant for a layer of `n_heads` heads of width `d_head`, the `depth`-th in
    /// its stack (differential attention's `λ_init`), causal in a decoder; `None` for softmax.
    pub fn try_init(
        &self,
        n_heads: usize,
        d_head: usize,
        depth: usize,
        causal: bool,
        device: &Device,
    ) -> Result<Option<VariantAttention>, AttnError> {
        let pattern = if causal {
            KeyPattern::Causal
        } else {
            KeyPattern::Full
        };
        Ok(Some(match *self {
            AttentionVariant::Softmax => return Ok(None),
            AttentionVariant::T5Bias {
                num_buckets,
                max_distance,
            } => VariantAttention::T5Bias(
                T5RelativeBiasConfig::new(n_heads)
                    .with_num_buckets(num_buckets)
                    .with_max_distance(max_distance)
                    .with_bidirectional(!causal)
                    .try_init(device)?,
            ),
            AttentionVariant::RelativePosition {
                max_relative_position,
            } => VariantAttention::RelativePosition(
                RelativePositionConfig::new(d_head, d_head, max_relative_position)
                    .with_pattern(pattern)
                    .try_init(device)?,
            ),
            AttentionVariant::TalkingHeads => VariantAttention::TalkingHeads(
                TalkingHeadsConfig::new(n_heads)
                    .with_pattern(pattern)
                    .try_init(device)?,
            ),
            AttentionVariant::Sigmoid { n } => VariantAttention::Sigmoid(
                SigmoidAttentionConfig::new()
                    .with_n(n)
                    .with_pattern(pattern)
                    .try_init()?,
            ),
            AttentionVariant::Differential => VariantAttention::Differential(
                DifferentialConfig::new(d_head)
                    .with_depth(depth)
                    .with_pattern(pattern)
                    .try_init(device)?,
            ),
            AttentionVariant::Linear => VariantAttention::Linear(
                LinearAttentionConfig::new()
                    .with_causal(causal)
                    .try_init()?,
            ),
            AttentionVariant::Performer { n_features } => {
                ensure!(
                    !causal,
                    "Performer attention has no causal form here: it cannot be a decoder's self-attention"
                );
                VariantAttention::Performer(
                    PerformerConfig::new(d_head)
                        .with_n_features(n_features)
                        .try_init(device)?,
                )
            }
        }))
    }
}

/// `[B, T, h·d]` → `[B, h, T, d]`.
fn split_heads(x: Tensor<3>, heads: usize) -> Tensor<4> {
    let [batch, len, width] = x.dims();
    x.reshape([batch, len, heads, width / heads])
        .swap_dims(1, 2)
}

impl VariantAttention {
    /// Self-attention of `x [B, T, d_model]` with `mha`'s projections, the positions after those
    /// in `cache`; `padding [B, C + T]` covers the cached positions and these.
    pub fn self_attend(
        &self,
        mha: &MultiHead,
        x: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
        cache: &mut VariantCache,
    ) -> Result<Tensor<3>, AttnError> {
        ensure!(
            mha.n_kv_heads == mha.n_heads,
            "attention variants need as many key/value heads as query heads, got {} and {}",
            mha.n_kv_heads,
            mha.n_heads
        );
        let [batch, len, _] = x.dims();
        let offset = cache.len;
        let heads = mha.n_heads;
        let project = |x: Tensor<3>| {
            (
                split_heads(mha.query.forward(x.clone()), heads),
                split_heads(mha.key.forward(x.clone()), heads),
                split_heads(mha.value.forward(x), heads),
            )
        };
        // Softmax-like cores attend over the cached keys and values and these.
        let exact = |x: Tensor<3>, cache: &mut VariantCache| {
            let (query, key, value) = project(x);
            let key = match cache.key.take() {
                Some(old) => Tensor::cat(vec![old, key], 2),
                None => key,
            };
            let value = match cache.value.take() {
                Some(old) => Tensor::cat(vec![old, value], 2),
                None => value,
            };
            cache.key = Some(key.clone());
            cache.value = Some(value.clone());
            let input = AttentionInput::new(query, key, value).query_offset(offset);
            match padding.clone() {
                Some(padding) => input.mask_pad(padding),
                None => input,
            }
        };
        let context = match self {
            VariantAttention::T5Bias(t5) => {
                let mut input =
                    MultiHeadInput::self_attn(x).head_bias(t5.bias(len, offset + len, offset));
                if let Some(padding) = padding {
                    input = input.padding(padding);
                }
                let context = mha.forward_cached(input, &mut cache.kv)?.context;
                cache.len += len;
                return Ok(context);
            }
            VariantAttention::Linear(linear) => {
                let (query, key, value) = project(x);
                let mask = padding.map(|p| {
                    let k_len = p.dims()[1];
                    p.narrow(1, offset, k_len - offset)
                        .reshape([batch, 1, 1, k_len - offset])
                });
                if linear.causal {
                    linear.step(query, key, value, mask, &mut cache.linear)?
                } else {
                    let mut input = AttentionInput::new(query, key, value);
                    if let Some(mask) = mask {
                        input = input.mask(mask);
                    }
                    linear.forward(input)?.context
                }
            }
            VariantAttention::RelativePosition(m) => m.forward(exact(x, cache))?.context,
            VariantAttention::TalkingHeads(m) => m.forward(exact(x, cache))?.context,
            VariantAttention::Sigmoid(m) => m.forward(exact(x, cache))?.context,
            VariantAttention::Differential(m) => m.forward(exact(x, cache))?.context,
            VariantAttention::Performer(m) => m.forward(exact(x, cache))?.context,
        };
        cache.len += len;
        let width = context.dims()[1] * context.dims()[3];
        Ok(mha
            .output
            .forward(context.swap_dims(1, 2).reshape([batch, len, width])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transformer::{DecoderCache, DecoderConfig, EncoderConfig, LayerConfig};
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::{Distribution, TensorData, Tolerance};

    fn variants() -> Vec<AttentionVariant> {
        vec![
            AttentionVariant::Softmax,
            AttentionVariant::T5Bias {
                num_buckets: 8,
                max_distance: 16,
            },
            AttentionVariant::RelativePosition {
                max_relative_position: 3,
            },
            AttentionVariant::TalkingHeads,
            AttentionVariant::Sigmoid { n: Some(6) },
            AttentionVariant::Differential,
            AttentionVariant::Linear,
            AttentionVariant::Performer { n_features: None },
        ]
    }

    /// Every variant plugs into the encoder (with padding, and an all-finite output) and,
    /// Performer aside, into the decoder, whose step-by-step decoding equals the whole sequence.
    #[test]
    fn every_variant_encodes_and_decodes_step_by_step_as_a_whole() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let x = Tensor::<3>::random([2, 6, 8], Distribution::Default, &device);
        let memory = Tensor::<3>::random([2, 3, 8], Distribution::Default, &device);
        let padding = Tensor::<2, Bool>::from_data(
            TensorData::from([[false; 6], [false, false, false, false, true, true]]),
            &device,
        );
        for variant in variants() {
            let layer = LayerConfig::new(8, 2, 16)
                .with_dropout(0.0)
                .with_variant(variant.clone());
            let encoder = EncoderConfig::new(layer.clone(), 2)
                .try_init(&device)
                .unwrap();
            assert_eq!(
                encoder.layers[0].variant.is_some(),
                variant != AttentionVariant::Softmax
            );
            let encoded = encoder.forward(x.clone(), Some(padding.clone())).unwrap();
            assert_eq!(encoded.dims(), [2, 6, 8]);
            assert!(
                encoded.into_data().iter::<f32>().all(f32::is_finite),
                "{variant:?}"
            );
            let decoder = DecoderConfig::new(layer, 2).try_init(&device);
            let Ok(decoder) = decoder else {
                assert!(
                    matches!(variant, AttentionVariant::Performer { .. }),
                    "{variant:?}"
                );
                continue;
            };
            let whole = decoder
                .forward(
                    x.clone(),
                    memory.clone(),
                    None,
                    &mut DecoderCache::new(&decoder),
                    false,
                )
                .unwrap()
                .hidden;
            let mut cache = DecoderCache::new(&decoder);
            let steps: Vec<Tensor<3>> = (0..6)
                .map(|t| {
                    decoder
                        .forward(
                            x.clone().narrow(1, t, 1),
                            memory.clone(),
                            None,
                            &mut cache,
                            false,
                        )
                        .unwrap()
                        .hidden
                })
                .collect();
            assert_eq!(cache.len(), 6, "{variant:?}");
            Tensor::cat(steps, 1)
                .into_data()
                .assert_approx_eq::<f32>(&whole.into_data(), Tolerance::absolute(1e-4));
        }
    }

    #[test]
    fn a_performer_decoder_and_a_causal_sigmoid_without_n_are_refused() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let layer = LayerConfig::new(8, 2, 16);
        let error = layer
            .clone()
            .with_variant(AttentionVariant::Performer { n_features: None })
            .try_init_decoder(&device)
            .unwrap_err();
        assert!(error.0.contains("no causal form"), "{error}");
        let error = layer
            .with_variant(AttentionVariant::Sigmoid { n: None })
            .try_init_decoder(&device)
            .unwrap_err();
        assert!(error.0.contains("needs a fixed n"), "{error}");
    }
}
