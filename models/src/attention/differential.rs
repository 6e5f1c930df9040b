//! Differential attention (Ye et al. 2024, "Differential Transformer"): each head's weights are
//! the difference of two softmax maps, which cancels the attention noise both maps share:
//!
//! `DiffAttn(X) = (softmax(Q₁K₁ᵀ/√d) − λ · softmax(Q₂K₂ᵀ/√d)) V`,
//! `λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init`, `λ_init = 0.8 − 0.6 · exp(−0.3 · depth)`,
//!
//! then per head `(1 − λ_init) · RMSNorm(head)` (the paper's GroupNorm, a learned-scale RMSNorm
//! per head with `ε = 10⁻⁵`). A head of width `2d` holds the two query (and key) halves `Q₁, Q₂`
//! of width `d` side by side, and one value of width `2d`; `λ` is one scalar per layer, from four
//! learned vectors of width `d`. This follows the authors' `multihead_diffattn.py`
//! (microsoft/unilm, Diff-Transformer) line by line, without its rotary embedding (apply RoPE to
//! the queries and keys before, as [`super::MultiHeadInput::rotary`] does) and with the zoo's
//! boolean masks in place of its additive causal one.
//!
//! Masked keys get weight 0 in both maps; a query whose keys are all masked gets a zero context.
//!
//! Shapes: `query [B, h, Tq, 2d]`, `key [B, h, Tk, 2d]`, `value [B, h, Tk, 2d]`, mask and bias
//! `[B | 1, h | 1, Tq | 1, Tk]` (the bias added to both maps) → `context [B, h, Tq, 2d]`,
//! `weights [B, h, Tq, Tk]` (the difference) when asked for.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Device, Distribution, Tensor};

use super::masking::{masked_softmax, KeyPattern};
use super::scaled_dot::{AttentionInput, AttentionOutput};
use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`Differential`], in the paper's terms.
///
/// ```
/// use attnzoo_models::attention::{AttentionInput, DifferentialConfig};
/// use burn::tensor::{Device, Distribution, Tensor};
///
/// let device = Device::default();
/// // Heads of width 2d = 16 (two 8-wide halves), the third layer (λ_init = 0.8 − 0.6 e^{−0.6}).
/// let attention = DifferentialConfig::new(16).with_depth(2).try_init(&device)?;
/// assert!((attention.lambda_init - 0.4707).abs() < 1e-4);
/// let x = Tensor::<4>::random([2, 3, 5, 16], Distribution::Default, &device); // [B, h, T, 2d]
/// let out = attention.forward(AttentionInput::self_attn(x))?;
/// assert_eq!(out.context.dims(), [2, 3, 5, 16]);
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct DifferentialConfig {
    /// Head width `2d` (even): two query/key halves of width `d`, one value of width `2d`.
    pub d_head: usize,
    /// The layer's index `l` (from 0) in `λ_init = 0.8 − 0.6 · exp(−0.3 l)`.
    #[config(default = 0)]
    pub depth: usize,
    /// `ε` of the per-head RMSNorm.
    #[config(default = 1e-5)]
    pub norm_eps: f64,
    /// Keys masked by position (causal, local window, strided).
    #[config(default = "KeyPattern::Full")]
    pub pattern: KeyPattern,
}

/// Differential attention's λ vectors and per-head norm.
#[derive(Module, Debug)]
pub struct Differential {
    /// `λ_q1 [d]`, initialised `N(0, 0.1²)`.
    pub lambda_q1: Param<Tensor<1>>,
    /// `λ_k1 [d]`.
    pub lambda_k1: Param<Tensor<1>>,
    /// `λ_q2 [d]`.
    pub lambda_q2: Param<Tensor<1>>,
    /// `λ_k2 [d]`.
    pub lambda_k2: Param<Tensor<1>>,
    /// The per-head RMSNorm's scale `[2d]` (`subln.weight`), initialised to ones.
    pub norm_weight: Param<Tensor<1>>,
    /// `λ_init`, from the depth.
    #[module(skip)]
    pub lambda_init: f64,
    /// `ε` of the RMSNorm.
    #[module(skip)]
    pub norm_eps: f64,
    /// Positional key mask.
    #[module(skip)]
    pub pattern: KeyPattern,
}

impl DifferentialConfig {
    /// Builds the module, checking the head width.
    pub fn try_init(&self, device: &Device) -> Result<Differential, AttnError> {
        let width = self.d_head;
        ensure!(
            width >= 2 && width % 2 == 0,
            "differential attention d_head must be even (two halves), got {width}"
        );
        ensure!(
            self.norm_eps.is_finite() && self.norm_eps > 0.0,
            "differential attention norm_eps must be positive, got {}",
            self.norm_eps
        );
        self.pattern.validate()?;
        let half = width / 2;
        let lambda = || {
            Param::from_tensor(Tensor::<1>::random(
                [half],
                Distribution::Normal(0.0, 0.1),
                device,
            ))
        };
        Ok(Differential {
            lambda_q1: lambda(),
            lambda_k1: lambda(),
            lambda_q2: lambda(),
            lambda_k2: lambda(),
            norm_weight: Param::from_tensor(Tensor::ones([width], device)),
            lambda_init: 0.8 - 0.6 * (-0.3 * self.depth as f64).exp(),
            norm_eps: self.norm_eps,
            pattern: self.pattern,
        })
    }
}

impl Differential {
    /// `λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init`, shape `[1]`.
    pub fn lambda(&self) -> Tensor<1> {
        let dot = |a: &Param<Tensor<1>>, b: &Param<Tensor<1>>| (a.val() * b.val()).sum().exp();
        (dot(&self.lambda_q1, &self.lambda_k1) - dot(&self.lambda_q2, &self.lambda_k2))
            .add_scalar(self.lambda_init)
    }

    /// Attends, checking the shapes first.
    pub fn forward(&self, input: AttentionInput<4>) -> Result<AttentionOutput<4>, AttnError> {
        input.validate()?;
        let width = self.norm_weight.dims()[0];
        let [batch, heads, q_len, d_q] = input.query.dims();
        let [_, _, k_len, d_v] = input.value.dims();
        ensure!(
            d_q == width && d_v == width,
            "differential attention heads are {width} wide, got queries {d_q} and values {d_v} wide"
        );
        let half = width / 2;
        // `[B, h, T, 2d]` → `[B, 2h, T, d]`: sub-heads 2i and 2i + 1 are head i's two halves.
        let halves = |t: Tensor<4>| {
            let [b, h, len, _] = t.dims();
            t.reshape([b, h, len, 2, half])
                .swap_dims(2, 3)
                .reshape([b, 2 * h, len, half])
        };
        let mask = input.mask_with(&self.pattern);
        // Each head's mask and bias serve both of its sub-heads (one for all heads broadcasts).
        fn per_sub_head<K: burn::tensor::kind::Basic>(t: Tensor<4, K>) -> Tensor<4, K> {
            let [b, h, q, k] = t.dims();
            if h == 1 {
                return t;
            }
            t.unsqueeze_dim::<5>(2)
                .expand([b, h, 2, q, k])
                .reshape([b, 2 * h, q, k])
        }
        let mask = mask.map(per_sub_head);
        let bias = input.bias.map(per_sub_head);
        let scores = halves(input.query)
            .mul_scalar((half as f64).powf(-0.5))
            .matmul(halves(input.key).swap_dims(2, 3));
        let scores = match bias {
            Some(bias) => scores + bias,
            None => scores,
        };
        let maps = masked_softmax(scores, mask).reshape([batch, heads, 2, q_len, k_len]);
        let lambda = self.lambda().reshape([1, 1, 1, 1]);
        let weights = maps
            .clone()
            .narrow(2, 0, 1)
            .reshape([batch, heads, q_len, k_len])
            - maps.narrow(2, 1, 1).reshape([batch, heads, q_len, k_len]) * lambda;
        let attended = weights.clone().matmul(input.value);
        let rms = attended
            .clone()
            .powi_scalar(2)
            .mean_dim(3)
            .add_scalar(self.norm_eps)
            .sqrt();
        let context = (attended / rms)
            * self.norm_weight.val().reshape([1, 1, 1, width])
            * (1.0 - self.lambda_init);
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
    use burn::tensor::{Bool, TensorData, Tolerance};

    /// With `λ = 0` (the λ vectors set so) the second map drops out and each head is softmax
    /// attention over its first halves, RMS-normalised and scaled by `1 − λ_init`.
    #[test]
    fn without_lambda_it_is_normalised_softmax_attention_of_the_first_halves() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let mut attention = DifferentialConfig::new(4).try_init(&device).unwrap();
        // λ_init(0) = 0.2; exp(0) − exp(ln 1.2) + 0.2 = 0.
        let zeros = Param::from_tensor(Tensor::<1>::zeros([2], &device));
        attention.lambda_q1 = zeros.clone();
        attention.lambda_k1 = zeros;
        attention.lambda_q2 = Param::from_tensor(Tensor::from_data(
            TensorData::from([1.2f32.ln(), 0.0]),
            &device,
        ));
        attention.lambda_k2 = Param::from_tensor(Tensor::ones([2], &device));
        let x = Tensor::<4>::random([1, 2, 3, 4], Distribution::Default, &device);
        let out = attention
            .forward(AttentionInput::self_attn(x.clone()))
            .unwrap()
            .context;
        let first = x.clone().narrow(3, 0, 2);
        let plain = masked_softmax(
            first
                .clone()
                .matmul(first.swap_dims(2, 3))
                .mul_scalar(0.5f64.sqrt()),
            None,
        )
        .matmul(x);
        let rms = plain
            .clone()
            .powi_scalar(2)
            .mean_dim(3)
            .add_scalar(1e-5)
            .sqrt();
        let expected = plain / rms * 0.8;
        out.into_data()
            .assert_approx_eq::<f32>(&expected.into_data(), Tolerance::absolute(1e-5));
    }

    #[test]
    fn odd_widths_are_refused_and_an_all_masked_row_is_zero() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = DifferentialConfig::new(5).try_init(&device).unwrap_err();
        assert!(error.0.contains("got 5"), "{error}");
        let attention = DifferentialConfig::new(4).try_init(&device).unwrap();
        let x = Tensor::<4>::random([1, 2, 3, 4], Distribution::Default, &device);
        let padding = Tensor::<2, Bool>::from_data(TensorData::from([[true; 3]]), &device);
        let out = attention
            .forward(AttentionInput::self_attn(x).mask_pad(padding))
            .unwrap()
            .context;
        assert!(out.into_data().iter::<f32>().all(|v| v == 0.0));
    }
}
