//! Sigmoid attention (Ramapuram et al. 2024, "Theory, Analysis, and Best Practices for
//! Sigmoid Self-Attention"): each weight is a sigmoid of its own score, with no normalisation
//! over the row:
//!
//! `SigmoidAttn(Q, K, V) = σ(QKᵀ/√d + b) V`, `b = −ln n`
//!
//! where `n` is the sequence length (the paper's bias, which keeps the initial row sums near
//! one). Masked keys get weight 0; a query whose keys are all masked gets a zero context.
//!
//! Shapes, as [`super::ScaledDotProduct`]: `query [.., Tq, d]`, `key [.., Tk, d]`,
//! `value [.., Tk, d_v]`, mask and bias `[.., Tq | 1, Tk]` → `context [.., Tq, d_v]`,
//! `weights [.., Tq, Tk]` when asked for.
//!
//! `n`: unless set, the number of keys of the call. A causal model decoding step by step sees
//! fewer keys at each step than the whole sequence has, so it needs `n` set to stay equal to
//! the full forward; [`SigmoidAttentionConfig::try_init`] refuses a causal pattern without it.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::activation::sigmoid;

use super::masking::KeyPattern;
use super::scaled_dot::{AttentionInput, AttentionOutput};
use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`SigmoidAttention`].
///
/// ```
/// use attnzoo_models::attention::{AttentionInput, SigmoidAttentionConfig};
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// let attention = SigmoidAttentionConfig::new().try_init()?;
/// let x = Tensor::<4>::zeros([1, 2, 4, 8], &device); // [batch, heads, len, d]
/// let out = attention.forward(AttentionInput::self_attn(x).with_weights())?;
/// // Zero scores: every weight is σ(−ln 4) = 1/5, rows sum to 4/5 (not 1).
/// let weights = out.weights.unwrap().into_data();
/// assert!(weights.iter::<f32>().all(|w| (w - 0.2).abs() < 1e-6));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct SigmoidAttentionConfig {
    /// Multiplier on `QKᵀ`; `None` means `1/√d`.
    #[config(default = "None")]
    pub scale: Option<f64>,
    /// The sequence length `n` in `b = −ln n`; `None`: the number of keys of each call.
    #[config(default = "None")]
    pub n: Option<usize>,
    /// Keys masked by position (causal, local window, strided).
    #[config(default = "KeyPattern::Full")]
    pub pattern: KeyPattern,
}

/// Sigmoid attention; no parameters.
#[derive(Module, Debug)]
pub struct SigmoidAttention {
    /// Multiplier on `QKᵀ` (`None`: `1/√d`).
    #[module(skip)]
    pub scale: Option<f64>,
    /// `n` of `b = −ln n` (`None`: the number of keys).
    #[module(skip)]
    pub n: Option<usize>,
    /// Positional key mask.
    #[module(skip)]
    pub pattern: KeyPattern,
}

impl SigmoidAttentionConfig {
    /// Builds the module, checking the scale, `n` and the pattern.
    pub fn try_init(&self) -> Result<SigmoidAttention, AttnError> {
        self.pattern.validate()?;
        if let Some(scale) = self.scale {
            ensure!(
                scale.is_finite() && scale > 0.0,
                "sigmoid attention scale must be positive and finite, got {scale}"
            );
        }
        if let Some(n) = self.n {
            ensure!(n >= 1, "sigmoid attention n must be at least 1, got {n}");
        }
        ensure!(
            self.n.is_some() || self.pattern == KeyPattern::Full,
            "sigmoid attention with pattern {:?} needs a fixed n (the bias −ln n would change with each decoding step)",
            self.pattern
        );
        Ok(SigmoidAttention {
            scale: self.scale,
            n: self.n,
            pattern: self.pattern,
        })
    }
}

impl SigmoidAttention {
    /// Attends, checking the input shapes first.
    pub fn forward<const D: usize>(
        &self,
        input: AttentionInput<D>,
    ) -> Result<AttentionOutput<D>, AttnError> {
        input.validate()?;
        let (_, k_len) = input.lengths();
        let d = input.query.dims()[D - 1];
        let scale = self.scale.unwrap_or(1.0 / (d as f64).sqrt());
        let mask = input.mask_with(&self.pattern);
        let n = self.n.unwrap_or(k_len) as f64;
        let scores = input
            .query
            .matmul(input.key.swap_dims(D - 2, D - 1))
            .mul_scalar(scale)
            .add_scalar(-n.ln());
        let scores = match input.bias {
            Some(bias) => scores + bias,
            None => scores,
        };
        let weights = sigmoid(scores);
        let weights = match mask {
            Some(mask) => {
                let shape = weights.shape();
                weights.mask_fill(mask.expand(shape), 0.0)
            }
            None => weights,
        };
        let context = weights.clone().matmul(input.value);
        Ok(AttentionOutput {
            context,
            weights: input.need_weights.then_some(weights),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::{Bool, Distribution, Tensor, TensorData, Tolerance};

    #[test]
    fn a_causal_pattern_needs_n() {
        let error = SigmoidAttentionConfig::new()
            .with_pattern(KeyPattern::Causal)
            .try_init()
            .unwrap_err();
        assert!(error.0.contains("needs a fixed n"), "{error}");
        let error = SigmoidAttentionConfig::new()
            .with_n(Some(0))
            .try_init()
            .unwrap_err();
        assert!(error.0.contains("n must be at least 1, got 0"), "{error}");
    }

    #[test]
    fn masked_keys_weigh_nothing_and_decoding_matches_the_whole() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let attention = SigmoidAttentionConfig::new()
            .with_pattern(KeyPattern::Causal)
            .with_n(Some(5))
            .try_init()
            .unwrap();
        let x = Tensor::<4>::random([1, 2, 5, 4], Distribution::Default, &device);
        let whole = attention
            .forward(AttentionInput::self_attn(x.clone()).with_weights())
            .unwrap();
        let weights = whole.weights.unwrap().into_data();
        let weights = weights.iter::<f32>().collect::<Vec<_>>();
        // Row 1 of head 0: keys 2..5 are the future.
        assert_eq!(&weights[5 + 2..5 + 5], &[0.0, 0.0, 0.0]);
        let step = attention
            .forward(
                AttentionInput::new(x.clone().narrow(2, 4, 1), x.clone(), x.clone())
                    .query_offset(4),
            )
            .unwrap();
        step.context.into_data().assert_approx_eq::<f32>(
            &whole.context.narrow(2, 4, 1).into_data(),
            Tolerance::absolute(1e-6),
        );
        let padding = Tensor::<2, Bool>::from_data(TensorData::from([[true; 5]]), &device);
        let all_masked = attention
            .forward(AttentionInput::self_attn(x).mask_pad(padding))
            .unwrap();
        assert!(all_masked
            .context
            .into_data()
            .iter::<f32>()
            .all(|v| v == 0.0));
    }
}
