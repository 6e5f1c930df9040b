//! The gated feed-forward block of today's decoder LMs: GLU variants (Shazeer 2020, "GLU
//! Variants Improve Transformer"):
//!
//! `FFN(x) = W_down (act(W_gate x) ⊙ W_up x)`
//!
//! with `act = SiLU` (SwiGLU: Llama, Mistral, Qwen) or the tanh approximation of GELU (GeGLU:
//! Gemma's `gelu_pytorch_tanh`, `½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))`), or gpt-oss's clamped
//! SwiGLU `FFN(x) = W_down ((min(u, ℓ) + 1)·…)`, see [`GatedActivation::ClampedSwiglu`]. No biases by default,
//! as in `LlamaMLP` and `GemmaMLP`, whose weight names (`gate_proj`, `up_proj`, `down_proj`) the
//! fields keep.
//!
//! Shapes: `x [.., d_model]` → `[.., d_model]`, hidden width `d_ff` (`intermediate_size`).

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::{sigmoid, silu};
use burn::tensor::{Device, Tensor};

use crate::error::ensure;
use crate::quant::Project;
use crate::AttnError;

/// The gate's non-linearity.
#[derive(Config, Debug, Copy, PartialEq)]
pub enum GatedActivation {
    /// `x σ(x)`: SwiGLU (transformers' `silu`).
    Silu,
    /// `½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))`: GeGLU (transformers' `gelu_pytorch_tanh`).
    GeluTanh,
    /// gpt-oss's SwiGLU with clamps, on the up projection too: with `g = min(gate, ℓ)` and
    /// `u = clamp(up, −ℓ, ℓ)`, the hidden unit is `g σ(α g) (u + 1)` (`swiglu_alpha` α 1.702,
    /// `swiglu_limit` ℓ 7).
    ClampedSwiglu {
        /// `swiglu_alpha`.
        alpha: f64,
        /// `swiglu_limit`.
        limit: f64,
    },
}

/// Configuration of [`GatedFeedForward`].
///
/// ```
/// use attnzoo_models::transformer::{GatedActivation, GatedFeedForwardConfig};
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// // Llama's MLP at a small width: SwiGLU, no biases.
/// let mlp = GatedFeedForwardConfig::new(64, 172).try_init(&device)?;
/// let y = mlp.forward(Tensor::<3>::ones([2, 5, 64], &device));
/// assert_eq!(y.dims(), [2, 5, 64]);
/// // Read before the process ends: GPU backends compute asynchronously.
/// assert!(y.into_data().iter::<f32>().all(f32::is_finite));
/// // Gemma's: GeGLU with the tanh GELU.
/// let gemma = GatedFeedForwardConfig::new(64, 172)
///     .with_activation(GatedActivation::GeluTanh)
///     .try_init(&device)?;
/// assert!(gemma.down_proj.bias.is_none());
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct GatedFeedForwardConfig {
    /// Model width (`hidden_size`).
    pub d_model: usize,
    /// Hidden width (`intermediate_size`).
    pub d_ff: usize,
    /// The gate's non-linearity: SiLU (SwiGLU) by default.
    #[config(default = "GatedActivation::Silu")]
    pub activation: GatedActivation,
    /// Biases on the three projections (transformers' `mlp_bias`); none by default.
    #[config(default = false)]
    pub bias: bool,
}

/// `down_proj(act(gate_proj(x)) ⊙ up_proj(x))`.
#[derive(Module, Debug)]
pub struct GatedFeedForward<P: Project = Linear> {
    /// `W_gate`: `d_model → d_ff`.
    pub gate_proj: P,
    /// `W_up`: `d_model → d_ff`.
    pub up_proj: P,
    /// `W_down`: `d_ff → d_model`.
    pub down_proj: P,
    /// The gate's non-linearity.
    #[module(skip)]
    pub activation: GatedActivation,
}

impl GatedFeedForwardConfig {
    /// Builds the block, checking the widths.
    pub fn try_init(&self, device: &Device) -> Result<GatedFeedForward, AttnError> {
        let (d_model, d_ff) = (self.d_model, self.d_ff);
        ensure!(
            d_model >= 1,
            "gated feed-forward d_model must be at least 1, got {d_model}"
        );
        ensure!(
            d_ff >= 1,
            "gated feed-forward d_ff must be at least 1, got {d_ff}"
        );
        let linear = |d_in, d_out| {
            LinearConfig::new(d_in, d_out)
                .with_bias(self.bias)
                .init(device)
        };
        Ok(GatedFeedForward {
            gate_proj: linear(d_model, d_ff),
            up_proj: linear(d_model, d_ff),
            down_proj: linear(d_ff, d_model),
            activation: self.activation,
        })
    }
}

impl<P: Project> GatedFeedForward<P> {
    /// The same module with each projection passed through `f` (e.g. into a
    /// [`Projection`](crate::quant::Projection) that may hold quantized weights).
    pub fn map_projections<Q: Project>(self, mut f: impl FnMut(P) -> Q) -> GatedFeedForward<Q> {
        GatedFeedForward {
            gate_proj: f(self.gate_proj),
            up_proj: f(self.up_proj),
            down_proj: f(self.down_proj),
            activation: self.activation,
        }
    }

    /// `x [.., d_model]` → `[.., d_model]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let gate = self.gate_proj.project(x.clone());
        let up = self.up_proj.project(x);
        let hidden = match self.activation {
            GatedActivation::Silu => silu(gate) * up,
            GatedActivation::GeluTanh => gelu_tanh(gate) * up,
            GatedActivation::ClampedSwiglu { alpha, limit } => {
                let gate = gate.clamp_max(limit);
                let glu = gate.clone() * sigmoid(gate * alpha);
                glu * (up.clamp(-limit, limit) + 1.0)
            }
        };
        self.down_proj.project(hidden)
    }
}

/// PyTorch's `gelu(x, approximate="tanh")`. The cube is `x·x·x`, not a power, which some
/// backends leave undefined for negative `x`.
fn gelu_tanh<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let sqrt_2_over_pi = (2.0 / std::f64::consts::PI).sqrt();
    let cube = x.clone() * x.clone() * x.clone();
    let inner = (x.clone() + cube * 0.044715) * sqrt_2_over_pi;
    x * (inner.tanh() + 1.0) * 0.5
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::module::Param;
    use burn::tensor::{TensorData, Tolerance};

    #[test]
    fn swiglu_and_geglu_gate_the_up_projection() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        // One input feature, one hidden unit, identity projections: y = act(x) · x.
        let mut mlp = GatedFeedForwardConfig::new(1, 1).try_init(&device).unwrap();
        let one = || Linear {
            weight: Param::from_tensor(Tensor::ones([1, 1], &device)),
            bias: None,
        };
        (mlp.gate_proj, mlp.up_proj, mlp.down_proj) = (one(), one(), one());
        let xs = [-3.0f32, -0.5, 0.0, 1.0, 2.5];
        let x = Tensor::<2>::from_data(TensorData::new(xs.to_vec(), [5, 1]), &device);
        let silu = |x: f32| x / (1.0 + (-x).exp());
        let expected: Vec<f32> = xs.iter().map(|&x| silu(x) * x).collect();
        mlp.forward(x.clone()).into_data().assert_approx_eq::<f32>(
            &TensorData::new(expected, [5, 1]),
            Tolerance::absolute(1e-6),
        );
        mlp.activation = GatedActivation::GeluTanh;
        let gelu = |x: f32| {
            0.5 * x
                * (1.0 + ((2.0 / std::f32::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
        };
        let expected: Vec<f32> = xs.iter().map(|&x| gelu(x) * x).collect();
        mlp.forward(x).into_data().assert_approx_eq::<f32>(
            &TensorData::new(expected, [5, 1]),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn zero_widths_are_refused_by_name() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = GatedFeedForwardConfig::new(8, 0)
            .try_init(&device)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "gated feed-forward d_ff must be at least 1, got 0"
        );
        let error = GatedFeedForwardConfig::new(0, 8)
            .try_init(&device)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "gated feed-forward d_model must be at least 1, got 0"
        );
    }
}
