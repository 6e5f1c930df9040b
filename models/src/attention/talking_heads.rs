//! Talking-heads attention (Shazeer, Lan, Cheng, Ding & Hou 2020, "Talking-Heads Attention"):
//! the heads' score maps are mixed by a learned `h × h` matrix before the softmax, and the
//! heads' weight maps by another after it:
//!
//! `J_g = Σ_h P_l[g, h] · (Q_h K_hᵀ / √d)`, `W_g = softmax(J_g)`, `U_g = Σ_h P_w[g, h] · W_h`,
//! `context_g = U_g V_g`
//!
//! (the paper's `P_l` "logits projection" and `P_w` "weights projection"; here with as many
//! heads after the mixing as before, as x-transformers' `pre_talking_heads`/`post_talking_heads`,
//! whose 1×1 `Conv2d` weights `[h, h, 1, 1]` are these matrices). Both start as the identity
//! (x-transformers' Dirac initialisation), so an untrained layer is plain multi-head attention.
//! A score bias (ALiBi, T5) is added after the logits mixing, and masked keys are excluded
//! after it, so they get weight 0 in every head; a query whose keys are all masked gets a zero
//! context. x-transformers 2.31 writes the logits mixing as a residual, `L + W_pre · L` with
//! `W_pre` Dirac-initialised: that is `P_l = I + W_pre` here.
//!
//! Shapes: `query [B, h, Tq, d]`, `key [B, h, Tk, d]`, `value [B, h, Tk, d_v]`, mask and bias
//! `[B | 1, h | 1, Tq | 1, Tk]` → `context [B, h, Tq, d_v]`, `weights [B, h, Tq, Tk]` (after the
//! post-softmax mixing) when asked for.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor};

use super::masking::{masked_softmax, KeyPattern};
use super::scaled_dot::{AttentionInput, AttentionOutput};
use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`TalkingHeads`].
///
/// ```
/// use attnzoo_models::attention::{AttentionInput, TalkingHeadsConfig};
/// use burn::tensor::{Device, Distribution, Tensor};
///
/// let device = Device::default();
/// let attention = TalkingHeadsConfig::new(4).try_init(&device)?;
/// let x = Tensor::<4>::random([2, 4, 5, 8], Distribution::Default, &device); // [B, h, T, d]
/// let out = attention.forward(AttentionInput::self_attn(x).with_weights())?;
/// assert_eq!(out.context.dims(), [2, 4, 5, 8]);
/// // Identity mixing at initialisation: every head's weights are still a distribution.
/// let sums = out.weights.unwrap().sum_dim(3).into_data();
/// assert!(sums.iter::<f32>().all(|s| (s - 1.0).abs() < 1e-5));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct TalkingHeadsConfig {
    /// Heads `h` (mixed among themselves).
    pub n_heads: usize,
    /// Mix the logits before the softmax (`P_l`).
    #[config(default = true)]
    pub pre_softmax: bool,
    /// Mix the weights after the softmax (`P_w`).
    #[config(default = true)]
    pub post_softmax: bool,
    /// Multiplier on `QKᵀ`; `None` means `1/√d`.
    #[config(default = "None")]
    pub scale: Option<f64>,
    /// Keys masked by position (causal, local window, strided).
    #[config(default = "KeyPattern::Full")]
    pub pattern: KeyPattern,
}

/// Talking-heads attention: scaled dot-product attention with head mixing.
#[derive(Module, Debug)]
pub struct TalkingHeads {
    /// `P_l [h, h]`, mixing the logits (row `g` is output head `g`).
    pub pre_softmax: Option<Param<Tensor<2>>>,
    /// `P_w [h, h]`, mixing the weights.
    pub post_softmax: Option<Param<Tensor<2>>>,
    /// Multiplier on `QKᵀ` (`None`: `1/√d`).
    #[module(skip)]
    pub scale: Option<f64>,
    /// Positional key mask.
    #[module(skip)]
    pub pattern: KeyPattern,
}

impl TalkingHeadsConfig {
    /// Builds the module with identity mixing, checking the settings.
    pub fn try_init(&self, device: &Device) -> Result<TalkingHeads, AttnError> {
        let heads = self.n_heads;
        ensure!(
            heads >= 1,
            "talking heads needs at least one head, got {heads}"
        );
        ensure!(
            self.pre_softmax || self.post_softmax,
            "talking heads with neither pre_softmax nor post_softmax mixing is plain attention"
        );
        self.pattern.validate()?;
        if let Some(scale) = self.scale {
            ensure!(
                scale.is_finite() && scale > 0.0,
                "talking heads scale must be positive and finite, got {scale}"
            );
        }
        let identity = || Param::from_tensor(Tensor::<2>::eye(heads, device));
        Ok(TalkingHeads {
            pre_softmax: self.pre_softmax.then(identity),
            post_softmax: self.post_softmax.then(identity),
            scale: self.scale,
            pattern: self.pattern,
        })
    }
}

/// `Σ_h mix[g, h] · maps[b, h, i, j]`, for `maps [B, h, Tq, Tk]`.
fn mix_heads(mix: &Param<Tensor<2>>, maps: Tensor<4>) -> Tensor<4> {
    let [batch, heads, q_len, k_len] = maps.dims();
    mix.val()
        .unsqueeze::<3>()
        .matmul(maps.reshape([batch, heads, q_len * k_len]))
        .reshape([batch, heads, q_len, k_len])
}

impl TalkingHeads {
    /// Number of heads.
    pub fn n_heads(&self) -> usize {
        self.pre_softmax
            .as_ref()
            .or(self.post_softmax.as_ref())
            .map_or(0, |mix| mix.dims()[0])
    }

    /// Attends, checking the input shapes (and that they have this module's heads) first.
    pub fn forward(&self, input: AttentionInput<4>) -> Result<AttentionOutput<4>, AttnError> {
        input.validate()?;
        let heads = input.query.dims()[1];
        ensure!(
            heads == self.n_heads(),
            "talking heads mixes {} heads, the input has {heads} (shape {:?})",
            self.n_heads(),
            input.query.dims()
        );
        let d = input.query.dims()[3];
        let scale = self.scale.unwrap_or(1.0 / (d as f64).sqrt());
        let mask = input.mask_with(&self.pattern);
        let scores = input
            .query
            .matmul(input.key.swap_dims(2, 3))
            .mul_scalar(scale);
        let scores = match &self.pre_softmax {
            Some(mix) => mix_heads(mix, scores),
            None => scores,
        };
        let scores = match input.bias {
            Some(bias) => scores + bias,
            None => scores,
        };
        let weights = masked_softmax(scores, mask);
        let weights = match &self.post_softmax {
            Some(mix) => mix_heads(mix, weights),
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
    use burn::tensor::{Distribution, TensorData, Tolerance};

    #[test]
    fn mixing_combines_the_heads_weights() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let mut attention = TalkingHeadsConfig::new(2)
            .with_pre_softmax(false)
            .try_init(&device)
            .unwrap();
        // Output head 0 takes head 1's weights; output head 1 averages both.
        attention.post_softmax = Some(Param::from_tensor(Tensor::from_data(
            TensorData::from([[0.0f32, 1.0], [0.5, 0.5]]),
            &device,
        )));
        let x = Tensor::<4>::random([1, 2, 3, 4], Distribution::Default, &device);
        let mixed = attention
            .forward(AttentionInput::self_attn(x.clone()).with_weights())
            .unwrap()
            .weights
            .unwrap();
        let plain = masked_softmax(x.clone().matmul(x.swap_dims(2, 3)).mul_scalar(0.5), None);
        let (h0, h1) = (plain.clone().narrow(1, 0, 1), plain.narrow(1, 1, 1));
        let expected = Tensor::cat(vec![h1.clone(), (h0 + h1) * 0.5], 1);
        mixed
            .into_data()
            .assert_approx_eq::<f32>(&expected.into_data(), Tolerance::absolute(1e-6));
    }

    #[test]
    fn bad_settings_name_the_value() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = TalkingHeadsConfig::new(0).try_init(&device).unwrap_err();
        assert!(error.0.contains("got 0"), "{error}");
        let error = TalkingHeadsConfig::new(2)
            .with_pre_softmax(false)
            .with_post_softmax(false)
            .try_init(&device)
            .unwrap_err();
        assert!(error.0.contains("neither"), "{error}");
        let attention = TalkingHeadsConfig::new(3).try_init(&device).unwrap();
        let error = attention
            .forward(AttentionInput::self_attn(Tensor::<4>::zeros(
                [1, 2, 3, 4],
                &device,
            )))
            .unwrap_err();
        assert!(
            error.0.contains("mixes 3 heads, the input has 2"),
            "{error}"
        );
    }
}
