//! T5's relative position bias (Raffel et al. 2020, "Exploring the Limits of Transfer Learning
//! with a Unified Text-to-Text Transformer", §2.1): no position embeddings; each head adds a
//! learned scalar `b_h(bucket(j − i))` to the score of query `i` and key `j`.
//!
//! The relative position `r = j − i` falls into one of `num_buckets` buckets. Bidirectionally,
//! half the buckets are for `r > 0` and half for `r ≤ 0`; causally (a decoder) only `r ≤ 0`
//! counts (`r > 0` is masked anyway) and every bucket is for the past. Within the `n` buckets of
//! a side, the first `n/2` hold the exact distances `0 .. n/2`, the other `n/2` hold distances
//! logarithmically spaced up to `max_distance`; farther distances share the last bucket:
//!
//! `bucket(d) = d` if `d < n/2`, else `min(n − 1, n/2 + ⌊ln(d / (n/2)) / ln(max_distance / (n/2)) · n/2⌋)`.
//!
//! This is `transformers`' `T5Attention._relative_position_bucket` (T5 does not scale the scores
//! by `1/√d`: use a [`crate::attention::ScaledDotProductConfig`] scale of 1 to match T5 exactly).
//!
//! Output: the bias `[1, n_heads, Tq, Tk]` for [`crate::attention::MultiHeadInput::head_bias`].

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Initializer};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`T5RelativeBias`], in T5's terms.
///
/// ```
/// use attnzoo_models::attention::{MultiHeadConfig, MultiHeadInput};
/// use attnzoo_models::position::T5RelativeBiasConfig;
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// let attention = MultiHeadConfig::new(32, 4).try_init(&device)?;
/// // An encoder's bias: 32 buckets over both directions, distances up to 128.
/// let t5 = T5RelativeBiasConfig::new(4).try_init(&device)?;
/// let bias = t5.bias(10, 10, 0); // [1, heads, q_len, k_len], added to the scores
/// assert_eq!(bias.dims(), [1, 4, 10, 10]);
/// let x = Tensor::<3>::ones([2, 10, 32], &device);
/// let out = attention.forward(MultiHeadInput::self_attn(x).head_bias(bias))?;
/// assert_eq!(out.context.dims(), [2, 10, 32]);
/// // Bad settings are refused with the value named.
/// let error = T5RelativeBiasConfig::new(4).with_num_buckets(3).try_init(&device).unwrap_err();
/// assert!(error.to_string().contains("num_buckets 3"));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct T5RelativeBiasConfig {
    /// Number of heads.
    pub n_heads: usize,
    /// `relative_attention_num_buckets` (T5: 32).
    #[config(default = 32)]
    pub num_buckets: usize,
    /// `relative_attention_max_distance` (T5: 128): distances from here on share the last bucket.
    #[config(default = 128)]
    pub max_distance: usize,
    /// Buckets for both directions (an encoder) or for the past only (a causal decoder).
    #[config(default = true)]
    pub bidirectional: bool,
}

/// The learned per-head bias table `[num_buckets, n_heads]`.
#[derive(Module, Debug)]
pub struct T5RelativeBias {
    /// `relative_attention_bias`: one row per bucket, one column per head.
    pub relative_attention_bias: Embedding,
    /// The `max_distance` of the log-spaced buckets.
    #[module(skip)]
    pub max_distance: usize,
    /// Both directions or the past only.
    #[module(skip)]
    pub bidirectional: bool,
}

impl T5RelativeBiasConfig {
    /// Builds the table (T5's initialisation: normal with std `1/√d_model` is the caller's; here
    /// `N(0, 1)`, as `nn.Embedding`), checking the bucket counts.
    pub fn try_init(&self, device: &Device) -> Result<T5RelativeBias, AttnError> {
        let (heads, buckets, max_distance) = (self.n_heads, self.num_buckets, self.max_distance);
        ensure!(heads >= 1, "T5 bias needs at least one head, got {heads}");
        // Each side's buckets split into exact and log-spaced halves of at least one bucket.
        let per_side = if self.bidirectional {
            buckets / 2
        } else {
            buckets
        };
        let side = if self.bidirectional { 4 } else { 2 };
        ensure!(
            buckets >= side && buckets % side == 0,
            "T5 num_buckets {buckets} must be a multiple of {side} (at least {side}) when bidirectional is {}",
            self.bidirectional
        );
        ensure!(
            max_distance > per_side / 2,
            "T5 max_distance {max_distance} must exceed the {} exact buckets",
            per_side / 2
        );
        Ok(T5RelativeBias {
            relative_attention_bias: EmbeddingConfig::new(buckets, heads)
                .with_initializer(Initializer::Normal {
                    mean: 0.0,
                    std: 1.0,
                })
                .init(device),
            max_distance,
            bidirectional: self.bidirectional,
        })
    }
}

impl T5RelativeBias {
    /// Number of heads.
    pub fn n_heads(&self) -> usize {
        self.relative_attention_bias.weight.dims()[1]
    }

    /// Number of buckets.
    pub fn num_buckets(&self) -> usize {
        self.relative_attention_bias.weight.dims()[0]
    }

    /// The bucket of relative position `relative = j − i`, as T5's `_relative_position_bucket`
    /// (its float arithmetic in `f32`, so the boundaries fall where PyTorch's do).
    pub fn bucket(&self, relative: i64) -> usize {
        let mut buckets = self.num_buckets();
        let mut bucket = 0;
        let distance = if self.bidirectional {
            buckets /= 2;
            if relative > 0 {
                bucket += buckets;
            }
            relative.unsigned_abs() as usize
        } else {
            (-relative.min(0)) as usize
        };
        let max_exact = buckets / 2;
        if distance < max_exact {
            return bucket + distance;
        }
        let log_ratio = (distance as f32 / max_exact as f32).ln()
            / (self.max_distance as f32 / max_exact as f32).ln();
        let large = max_exact + (log_ratio * (buckets - max_exact) as f32) as usize;
        bucket + large.min(buckets - 1)
    }

    /// The bias `[1, n_heads, q_len, k_len]` for queries at positions `offset..offset + q_len`
    /// over keys at `0..k_len`.
    pub fn bias(&self, q_len: usize, k_len: usize, offset: usize) -> Tensor<4> {
        let device = self.relative_attention_bias.weight.device();
        let buckets: Vec<i64> = (offset..offset + q_len)
            .flat_map(|i| (0..k_len).map(move |j| self.bucket(j as i64 - i as i64) as i64))
            .collect();
        let buckets =
            Tensor::<1, Int>::from_data(TensorData::new(buckets, [q_len * k_len]), &device);
        let heads = self.n_heads();
        self.relative_attention_bias
            .weight
            .val()
            .select(0, buckets)
            .reshape([q_len, k_len, heads])
            .permute([2, 0, 1])
            .unsqueeze::<4>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};

    fn t5(bidirectional: bool) -> T5RelativeBias {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        T5RelativeBiasConfig::new(2)
            .with_bidirectional(bidirectional)
            .try_init(&device)
            .unwrap()
    }

    /// Buckets worked out by hand from T5's formula for 32 buckets and max_distance 128.
    #[test]
    fn buckets_follow_t5() {
        let encoder = t5(true);
        // 16 per side, 8 exact: distances 0..8 exact, then ln(d/8)/ln(16)·8 + 8.
        assert_eq!(encoder.bucket(0), 0);
        assert_eq!(encoder.bucket(-7), 7);
        assert_eq!(encoder.bucket(7), 16 + 7);
        assert_eq!(encoder.bucket(-8), 8);
        assert_eq!(encoder.bucket(-24), 11); // ln 3 / ln 16 · 8 = 3.17
        assert_eq!(encoder.bucket(-127), 15);
        assert_eq!(encoder.bucket(-1000), 15);
        assert_eq!(encoder.bucket(1000), 31);
        let decoder = t5(false);
        // 32 for the past, 16 exact; the future is bucket 0 (masked anyway).
        assert_eq!(decoder.bucket(5), 0);
        assert_eq!(decoder.bucket(-15), 15);
        assert_eq!(decoder.bucket(-32), 21); // ln 2 / ln 8 · 16 = 5.33
        assert_eq!(decoder.bucket(-500), 31);
    }

    #[test]
    fn a_decoding_step_sees_the_last_row_of_the_whole_bias() {
        let decoder = t5(false);
        let whole = decoder.bias(7, 7, 0);
        let step = decoder.bias(1, 7, 6);
        step.into_data().assert_approx_eq::<f32>(
            &whole.slice([0..1, 0..2, 6..7, 0..7]).into_data(),
            burn::tensor::Tolerance::absolute(0.0),
        );
    }

    #[test]
    fn bad_bucket_counts_name_the_value() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = T5RelativeBiasConfig::new(2)
            .with_num_buckets(6)
            .try_init(&device)
            .unwrap_err();
        assert!(error.0.contains("num_buckets 6"), "{error}");
        let error = T5RelativeBiasConfig::new(2)
            .with_max_distance(4)
            .try_init(&device)
            .unwrap_err();
        assert!(error.0.contains("max_distance 4"), "{error}");
    }
}
