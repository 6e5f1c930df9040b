//! Scaled dot-product attention (Vaswani et al. 2017):
//!
//! `Attention(Q, K, V) = softmax(scale · QKᵀ + bias, masked) V`, with `scale = 1/√d_k` unless set.
//!
//! Shapes, for any number of leading batch dimensions (`D ≥ 3`):
//! - `query [.., q_len, d_k]`, `key [.., k_len, d_k]`, `value [.., k_len, d_v]`
//! - `mask [.., q_len, k_len]` (Bool, `true` = may not attend; any dimension may be 1 to broadcast)
//! - `bias [.., q_len, k_len]` (added to the scaled scores; broadcastable like the mask)
//! - `sink [.., q_len | 1, 1]` (optional: a logit with no value in every row's softmax, gpt-oss)
//! - output `context [.., q_len, d_v]`, `weights [.., q_len, k_len]` when asked for.
//!
//! Three implementations compute the same function ([`AttentionImpl`]): the dense one
//! materialises the score matrix and can return the weights; the fused one calls Burn's
//! `attention` op (FlashAttention kernels, Dao et al. 2022, on CubeCL and flex; SDPA on tch); the chunked one streams
//! over key blocks with an online softmax ([`super::memory_efficient`]). Asking for weights
//! always takes the dense path, and so do top-k and hard attention ([`Selection`]) and sinks.
//!
//! With a soft-cap `c` (Gemma 2) the scaled scores become `c · tanh(scale · QKᵀ / c)` before the
//! bias and the mask ([`super::softcap()`]).

use burn::config::Config;
use burn::module::Module;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Tensor};

use super::masking::{
    either, lift, masked_softmax, masked_softmax_with_sink, KeyPattern, MASKED_SCORE,
};
use super::memory_efficient::chunked_attention;
use super::selection::Selection;
use super::softcap::{check_softcap, softcap};
use crate::error::ensure;
use crate::AttnError;

/// How attention is computed. All give the same result up to float rounding.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum AttentionImpl {
    /// Materialise the `[q_len, k_len]` scores; returns the weights when asked.
    Dense,
    /// Burn's fused `burn::tensor::module::attention` op.
    Fused,
    /// Online softmax over blocks of `query_chunk × key_chunk` scores: peak memory grows with
    /// `q_len · key_chunk` instead of `q_len · k_len`; blocks a [`KeyPattern`] masks entirely are skipped.
    Chunked {
        /// Queries per block.
        query_chunk: usize,
        /// Keys per block.
        key_chunk: usize,
    },
}

impl AttentionImpl {
    /// The memory-efficient path with 512 × 512 blocks.
    pub const CHUNKED: AttentionImpl = AttentionImpl::Chunked {
        query_chunk: 512,
        key_chunk: 512,
    };
}

/// Configuration of [`ScaledDotProduct`].
///
/// ```
/// use attnzoo_models::attention::{
///     AttentionImpl, AttentionInput, KeyPattern, ScaledDotProductConfig,
/// };
/// use burn::tensor::{Bool, Device, Tensor, TensorData};
///
/// let device = Device::default();
/// // Causal local attention over a window of 2, computed block by block (memory-efficient).
/// let attention = ScaledDotProductConfig::new()
///     .with_pattern(KeyPattern::Window { window: 2, causal: true })
///     .with_implementation(AttentionImpl::Chunked { query_chunk: 4, key_chunk: 4 })
///     .try_init()?;
/// let x = Tensor::<4>::ones([1, 2, 6, 8], &device); // [batch, heads, len, d_k]
/// let padding = Tensor::<2, Bool>::from_data(TensorData::from([[false, false, false, false, true, true]]), &device);
/// let out = attention.forward(AttentionInput::self_attn(x).mask_pad(padding))?;
/// assert!(out.weights.is_none()); // `.with_weights()` asks for them (and runs dense)
/// // Every value is one, so each unpadded query's context, a weighted mean of values, is one.
/// let unpadded = out.context.slice([0..1, 0..2, 0..4, 0..8]).into_data();
/// assert!(unpadded.iter::<f32>().all(|v| (v - 1.0).abs() < 1e-6));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct ScaledDotProductConfig {
    /// Multiplier on `QKᵀ`; `None` means `1/√d_k` with `d_k` the query width.
    #[config(default = "None")]
    pub scale: Option<f64>,
    /// Keys masked by position (causal, local window, strided sparse).
    #[config(default = "KeyPattern::Full")]
    pub pattern: KeyPattern,
    /// Which implementation runs when no weights are asked for (fused: the fastest measured).
    #[config(default = "AttentionImpl::Fused")]
    pub implementation: AttentionImpl,
    /// Soft, top-k or hard attention; top-k and hard need whole score rows and run dense.
    #[config(default = "Selection::Soft")]
    pub selection: Selection,
    /// Soft-cap `c` of the scaled scores, `c · tanh(s / c)` (Gemma 2: 50); `None`: no cap.
    #[config(default = "None")]
    pub softcap: Option<f64>,
}

/// Scaled dot-product attention. It has no parameters; see the module docs for the formula.
#[derive(Module, Debug)]
pub struct ScaledDotProduct {
    /// Multiplier on `QKᵀ` (`None`: `1/√d_k`).
    #[module(skip)]
    pub scale: Option<f64>,
    /// Positional key mask.
    #[module(skip)]
    pub pattern: KeyPattern,
    /// Implementation used when weights are not asked for.
    #[module(skip)]
    pub implementation: AttentionImpl,
    /// Soft, top-k or hard.
    #[module(skip)]
    pub selection: Selection,
    /// Soft-cap of the scaled scores.
    #[module(skip)]
    pub softcap: Option<f64>,
}

/// The inputs of one attention call; see the module docs for shapes.
#[derive(Debug, Clone)]
pub struct AttentionInput<const D: usize> {
    /// `[.., q_len, d_k]`
    pub query: Tensor<D>,
    /// `[.., k_len, d_k]`
    pub key: Tensor<D>,
    /// `[.., k_len, d_v]`
    pub value: Tensor<D>,
    /// `[.., q_len | 1, k_len]`, `true` = may not attend.
    pub mask: Option<Tensor<D, Bool>>,
    /// `[.., q_len | 1, k_len]`, added to the scaled scores.
    pub bias: Option<Tensor<D>>,
    /// `[.., q_len | 1, 1]`: a sink logit in every row's softmax (gpt-oss); forces the dense path.
    pub sink: Option<Tensor<D>>,
    /// Positions of the keys when they are not `0..k_len` (a cache that dropped some).
    pub key_positions: Option<Vec<usize>>,
    /// Absolute position of the first query (the number of cached keys when decoding).
    pub query_offset: usize,
    /// Return the weights (forces the dense path).
    pub need_weights: bool,
}

/// The result of one attention call.
#[derive(Debug, Clone)]
pub struct AttentionOutput<const D: usize> {
    /// `[.., q_len, d_v]`
    pub context: Tensor<D>,
    /// `[.., q_len, k_len]`, when asked for.
    pub weights: Option<Tensor<D>>,
}

impl<const D: usize> AttentionInput<D> {
    /// Queries attending over keys and values.
    pub fn new(query: Tensor<D>, key: Tensor<D>, value: Tensor<D>) -> Self {
        Self {
            query,
            key,
            value,
            mask: None,
            bias: None,
            sink: None,
            key_positions: None,
            query_offset: 0,
            need_weights: false,
        }
    }

    /// A sequence attending over itself.
    pub fn self_attn(x: Tensor<D>) -> Self {
        Self::new(x.clone(), x.clone(), x)
    }

    /// Adds a boolean mask (`true` = may not attend); combined with any mask already set.
    pub fn mask(mut self, mask: Tensor<D, Bool>) -> Self {
        self.mask = either(self.mask, Some(mask));
        self
    }

    /// Adds a padding mask `[batch, k_len]` (`true` = padding), the same for every query.
    pub fn mask_pad(self, padding: Tensor<2, Bool>) -> Self {
        let [batch, k_len] = padding.dims();
        let mut dims = [1; D];
        dims[0] = batch;
        dims[D - 1] = k_len;
        self.mask(padding.reshape(dims))
    }

    /// Adds an additive score bias (ALiBi, relative positions).
    pub fn bias(mut self, bias: Tensor<D>) -> Self {
        self.bias = Some(match self.bias {
            Some(previous) => previous + bias,
            None => bias,
        });
        self
    }

    /// Adds a sink logit `[.., q_len | 1, 1]` to every row's softmax (gpt-oss's learned sinks).
    pub fn sink(mut self, sink: Tensor<D>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Sets the keys' positions (one per key) when a cache kept only some of them.
    pub fn key_positions(mut self, positions: Vec<usize>) -> Self {
        self.key_positions = Some(positions);
        self
    }

    /// Sets the absolute position of the first query (for causal and local patterns with a cache).
    pub fn query_offset(mut self, offset: usize) -> Self {
        self.query_offset = offset;
        self
    }

    /// Asks for the attention weights.
    pub fn with_weights(mut self) -> Self {
        self.need_weights = true;
        self
    }

    /// Checks that the shapes fit together, naming the ones that do not.
    pub fn validate(&self) -> Result<(), AttnError> {
        ensure!(
            D >= 3,
            "attention inputs need at least 3 dimensions [batch, len, width], got {D}"
        );
        let (q, k, v) = (self.query.dims(), self.key.dims(), self.value.dims());
        ensure!(
            q[D - 1] == k[D - 1],
            "query width {} differs from key width {} (query {q:?}, key {k:?})",
            q[D - 1],
            k[D - 1]
        );
        ensure!(
            k[D - 2] == v[D - 2],
            "key length {} differs from value length {} (key {k:?}, value {v:?})",
            k[D - 2],
            v[D - 2]
        );
        ensure!(
            q[..D - 2] == k[..D - 2] && k[..D - 2] == v[..D - 2],
            "batch dimensions differ: query {q:?}, key {k:?}, value {v:?}"
        );
        ensure!(
            q[D - 2] >= 1 && k[D - 2] >= 1,
            "attention needs at least one query and one key, got {} queries and {} keys",
            q[D - 2],
            k[D - 2]
        );
        let mut scores = q;
        scores[D - 1] = k[D - 2];
        let fits = |dims: [usize; D]| dims.iter().zip(&scores).all(|(&d, &s)| d == s || d == 1);
        if let Some(mask) = &self.mask {
            ensure!(
                fits(mask.dims()),
                "mask shape {:?} does not fit the scores shape {scores:?}",
                mask.dims()
            );
        }
        if let Some(bias) = &self.bias {
            ensure!(
                fits(bias.dims()),
                "bias shape {:?} does not fit the scores shape {scores:?}",
                bias.dims()
            );
        }
        if let Some(sink) = &self.sink {
            let mut rows = scores;
            rows[D - 1] = 1;
            ensure!(
                sink.dims()
                    .iter()
                    .zip(&rows)
                    .all(|(&d, &s)| d == s || d == 1),
                "sink shape {:?} does not fit the rows shape {rows:?}",
                sink.dims()
            );
        }
        if let Some(positions) = &self.key_positions {
            ensure!(
                positions.len() == k[D - 2],
                "{} key positions for {} keys",
                positions.len(),
                k[D - 2]
            );
        }
        Ok(())
    }

    pub(crate) fn lengths(&self) -> (usize, usize) {
        (self.query.dims()[D - 2], self.key.dims()[D - 2])
    }

    /// This input's mask combined with what `pattern` masks at its query positions
    /// (`query_offset..`) over its keys, `[.., q_len | 1, k_len]`.
    pub(crate) fn mask_with(&self, pattern: &KeyPattern) -> Option<Tensor<D, Bool>> {
        let (q_len, k_len) = self.lengths();
        let offset = self.query_offset;
        let pattern = pattern.mask(offset..offset + q_len, 0..k_len, &self.query.device());
        either(self.mask.clone(), pattern.map(lift))
    }
}

impl ScaledDotProductConfig {
    /// Builds the module, checking the pattern and chunk sizes.
    pub fn try_init(&self) -> Result<ScaledDotProduct, AttnError> {
        self.pattern.validate()?;
        if let Some(scale) = self.scale {
            ensure!(
                scale.is_finite() && scale > 0.0,
                "attention scale must be positive and finite, got {scale}"
            );
        }
        if let AttentionImpl::Chunked {
            query_chunk,
            key_chunk,
        } = self.implementation
        {
            ensure!(
                query_chunk >= 1 && key_chunk >= 1,
                "chunk sizes must be at least 1, got query_chunk {query_chunk}, key_chunk {key_chunk}"
            );
        }
        self.selection.validate()?;
        if let Some(cap) = self.softcap {
            check_softcap(cap)?;
        }
        Ok(ScaledDotProduct {
            scale: self.scale,
            pattern: self.pattern,
            implementation: self.implementation,
            selection: self.selection,
            softcap: self.softcap,
        })
    }
}

impl ScaledDotProduct {
    /// The scale applied to `QKᵀ` for queries of width `d_k`.
    pub fn scale_for(&self, d_k: usize) -> f64 {
        self.scale.unwrap_or(1.0 / (d_k as f64).sqrt())
    }

    /// This attention without its positional pattern (every key visible): for a caller that
    /// applied the pattern itself, or knows it masks nothing.
    pub fn unpatterned(&self) -> ScaledDotProduct {
        ScaledDotProduct {
            pattern: KeyPattern::Full,
            ..self.clone()
        }
    }

    /// Attends, checking the input shapes first.
    pub fn forward<const D: usize>(
        &self,
        mut input: AttentionInput<D>,
    ) -> Result<AttentionOutput<D>, AttnError> {
        input.validate()?;
        if let Some(positions) = input.key_positions.take() {
            // Keys from a cache that dropped some: the pattern becomes an explicit mask over
            // their real positions, and the rest runs as for any masked call.
            let (q_len, _) = input.lengths();
            let offset = input.query_offset;
            let device = input.query.device();
            let pattern = self
                .pattern
                .mask_at(offset..offset + q_len, &positions, &device);
            input.mask = either(input.mask, pattern.map(lift));
            return self.unpatterned().forward(input);
        }
        let needs_whole_rows =
            input.need_weights || self.selection != Selection::Soft || input.sink.is_some();
        let implementation = if needs_whole_rows {
            AttentionImpl::Dense
        } else {
            self.implementation
        };
        Ok(match implementation {
            AttentionImpl::Dense => self.dense(input),
            AttentionImpl::Fused => AttentionOutput {
                context: self.fused(input),
                weights: None,
            },
            AttentionImpl::Chunked {
                query_chunk,
                key_chunk,
            } => AttentionOutput {
                context: chunked_attention(self, input, query_chunk, key_chunk),
                weights: None,
            },
        })
    }

    /// The scaled scores, soft-capped when a cap is set.
    pub(crate) fn capped<const D: usize>(&self, scores: Tensor<D>) -> Tensor<D> {
        match self.softcap {
            Some(cap) => softcap(scores, cap),
            None => scores,
        }
    }

    /// The user's mask combined with the positional pattern, `[.., q_len | 1, k_len]`.
    pub(crate) fn full_mask<const D: usize>(
        &self,
        input: &AttentionInput<D>,
    ) -> Option<Tensor<D, Bool>> {
        input.mask_with(&self.pattern)
    }

    fn dense<const D: usize>(&self, input: AttentionInput<D>) -> AttentionOutput<D> {
        let mask = self.full_mask(&input);
        let d_k = input.query.dims()[D - 1];
        let scores = self.capped(
            input
                .query
                .matmul(input.key.swap_dims(D - 2, D - 1))
                .mul_scalar(self.scale_for(d_k)),
        );
        let scores = match input.bias {
            Some(bias) => scores + bias,
            None => scores,
        };
        let mask = self.selection.restrict(&scores, mask);
        let weights = match input.sink {
            Some(sink) => masked_softmax_with_sink(scores, mask, sink),
            None => masked_softmax(scores, mask),
        };
        let context = weights.clone().matmul(input.value);
        AttentionOutput {
            context,
            weights: input.need_weights.then_some(weights),
        }
    }

    /// Burn's fused op works on `[batch, heads, len, width]`; queries whose keys are all masked
    /// are zeroed afterwards (the fused kernels average or give NaN there).
    ///
    /// A causal pattern alone, over as many queries as keys from position 0, is the op's own
    /// `is_causal` (every backend agrees on it there): no `[q_len, k_len]` mask is built, so
    /// tch (PyTorch's SDPA) and flex (its flash kernel) attend at any length in O(T) memory.
    fn fused<const D: usize>(&self, input: AttentionInput<D>) -> Tensor<D> {
        let (q_len, k_len) = input.lengths();
        let q_dims = input.query.dims();
        let d_v = input.value.dims()[D - 1];
        let scale = self.scale_for(q_dims[D - 1]);
        let is_causal = self.pattern == KeyPattern::Causal
            && input.mask.is_none()
            && input.query_offset == 0
            && q_len == k_len;
        let mask = if is_causal {
            None
        } else {
            self.full_mask(&input)
        };
        let device = input.query.device();
        // `[.., heads, rows, cols]` keeps its last three axes, so `[batch, heads, len, width]`
        // (multi-head attention) reaches the op as it is, without a copy.
        let to_4d = |dims: [usize; D], rows: usize, cols: usize| -> [usize; 4] {
            let heads = if D > 2 { dims[D - 3] } else { 1 };
            let batch: usize = dims[..D.saturating_sub(3)].iter().product();
            [batch, heads, rows, cols]
        };
        let k_dims = input.key.dims();
        let mut score_dims = q_dims;
        score_dims[D - 1] = k_len;
        // A bias of every score axis but the heads (`[batch, 1, q_len, k_len]` for a padding
        // mask): every backend's op broadcasts it over the heads, so it is built once, not per head.
        let bias_dims = |dims: [usize; D]| {
            let mut bias_dims = score_dims;
            if D > 2 {
                bias_dims[D - 3] = dims[D - 3];
            }
            bias_dims
        };
        // The mask goes in as an additive bias: burn-tch 0.22.1 hands a Bool mask (true = masked)
        // to PyTorch's SDPA, where true means "attend", so a masked call there would attend to
        // exactly the wrong keys. A bias means the same on every backend.
        let mask_bias = mask.clone().map(|m| {
            let dims = bias_dims(m.dims());
            Tensor::<D>::zeros(dims, &device).mask_fill(m.expand(dims), MASKED_SCORE)
        });
        let bias = match (input.bias, mask_bias) {
            (Some(bias), Some(mask_bias)) => Some(bias + mask_bias),
            (bias, mask_bias) => bias.or(mask_bias),
        };
        let bias4 = bias.map(|b| {
            let dims = bias_dims(b.dims());
            b.expand(dims).reshape(to_4d(dims, q_len, k_len))
        });
        let context = attention(
            input.query.reshape(to_4d(q_dims, q_len, q_dims[D - 1])),
            input.key.reshape(to_4d(k_dims, k_len, q_dims[D - 1])),
            input.value.reshape(to_4d(q_dims, k_len, d_v)),
            None,
            bias4,
            AttentionModuleOptions {
                scale: Some(scale),
                softcap: self.softcap,
                is_causal,
            },
        );
        let mut out_dims = q_dims;
        out_dims[D - 1] = d_v;
        let context: Tensor<D> = context.reshape(out_dims);
        let mut row_dims = score_dims;
        row_dims[D - 1] = 1;
        match mask {
            Some(mask) => context.mask_fill(mask.all_dim(D - 1).expand(row_dims), 0.0),
            None => context,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};

    #[test]
    fn fused_causal_attention_equals_dense_with_and_without_a_cache_offset() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        device.seed(3);
        let random = |len: usize| {
            Tensor::<4>::random([2, 3, len, 8], burn::tensor::Distribution::Default, &device)
        };
        let run = |implementation, q_len: usize, offset: usize| {
            let attention = ScaledDotProductConfig::new()
                .with_pattern(KeyPattern::Causal)
                .with_implementation(implementation)
                .try_init()
                .unwrap();
            let (q, k, v) = (random(q_len), random(6), random(6));
            let input = AttentionInput::new(q, k, v).query_offset(offset);
            (attention, input)
        };
        // Queries as long as the keys from 0 (the op's `is_causal`), and the last two queries
        // after four cached keys (a mask).
        for (q_len, offset) in [(6, 0), (2, 4)] {
            let (dense, input) = run(AttentionImpl::Dense, q_len, offset);
            let (fused, _) = run(AttentionImpl::Fused, q_len, offset);
            let expected = dense.forward(input.clone()).unwrap().context;
            let actual = fused.forward(input).unwrap().context;
            let error: f32 = (actual - expected).abs().max().into_scalar();
            assert!(error < 1e-6, "q_len {q_len}, offset {offset}: {error}");
        }
    }

    #[test]
    fn soft_capped_scores_agree_on_every_path_and_bound_the_logits() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        device.seed(5);
        // Large queries: uncapped scores would reach the hundreds.
        let q = Tensor::<4>::random([2, 2, 5, 8], burn::tensor::Distribution::Default, &device)
            .mul_scalar(40.0);
        let k = Tensor::<4>::random([2, 2, 7, 8], burn::tensor::Distribution::Default, &device);
        let v = Tensor::<4>::random([2, 2, 7, 3], burn::tensor::Distribution::Default, &device);
        let padding = Tensor::<2, Bool>::from_data(
            burn::tensor::TensorData::from([
                [false; 7],
                [false, false, true, true, true, true, true],
            ]),
            &device,
        );
        let input = AttentionInput::new(q.clone(), k.clone(), v).mask_pad(padding);
        let capped = |implementation| {
            ScaledDotProductConfig::new()
                .with_softcap(Some(2.0))
                .with_implementation(implementation)
                .try_init()
                .unwrap()
        };
        let dense = capped(AttentionImpl::Dense)
            .forward(input.clone().with_weights())
            .unwrap();
        // softmax of c·tanh(s/c): no weight beyond e^{2c} times another in its row.
        let weights = dense.weights.unwrap();
        let spread: f32 = (weights.clone().max_dim(3) / weights.clamp_min(1e-30).min_dim(3))
            .slice([0..1, 0..2, 0..5, 0..1])
            .max()
            .into_scalar();
        assert!(spread <= (4.0f32).exp() * 1.0001, "{spread}");
        for implementation in [
            AttentionImpl::Fused,
            AttentionImpl::Chunked {
                query_chunk: 2,
                key_chunk: 3,
            },
        ] {
            let context = capped(implementation)
                .forward(input.clone())
                .unwrap()
                .context;
            let error: f32 = (context - dense.context.clone()).abs().max().into_scalar();
            assert!(error < 1e-5, "{implementation:?}: {error}");
        }
        let error = ScaledDotProductConfig::new()
            .with_softcap(Some(0.0))
            .try_init()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "soft-cap must be positive and finite, got 0"
        );
    }

    #[test]
    fn mismatched_shapes_are_errors_that_name_them() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let attention = ScaledDotProductConfig::new().try_init().unwrap();
        let q = Tensor::<3>::zeros([2, 3, 4], &device);
        let error = attention
            .forward(AttentionInput::new(
                q.clone(),
                Tensor::zeros([2, 5, 6], &device),
                Tensor::zeros([2, 5, 4], &device),
            ))
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("query width 4 differs from key width 6"),
            "{error}"
        );
        let error = attention
            .forward(AttentionInput::new(
                Tensor::zeros([2, 0, 4], &device),
                q.clone(),
                q.clone(),
            ))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "attention needs at least one query and one key, got 0 queries and 3 keys"
        );
        let error = attention
            .forward(
                AttentionInput::self_attn(q.clone())
                    .mask(Tensor::<3, Bool>::empty([2, 3, 5], &device)),
            )
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "mask shape [2, 3, 5] does not fit the scores shape [2, 3, 3]"
        );
        let error = ScaledDotProductConfig::new()
            .with_pattern(KeyPattern::Window {
                window: 0,
                causal: false,
            })
            .try_init()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "local attention window must be at least 1, got 0"
        );
    }
}
