//! Root-mean-square layer normalisation, RMSNorm (Zhang & Sennrich 2019, "Root Mean Square Layer
//! Normalization"): no centring and no bias, only a learned gain `g` over the last axis,
//!
//! `RMSNorm(x) = x / √(mean(x²) + ε) · g`
//!
//! computed in f32 whatever the input's float type (then cast back), as `transformers`'
//! `LlamaRMSNorm` does. With `unit_offset` the gain is `1 + w`, `w` initialised to zero: Gemma's
//! form (`Gemma2RMSNorm`), where the f32 product is taken before the cast back.
//!
//! Shapes: `x [.., d]` → `[.., d]`; weight `[d]`.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Device, FloatDType, Tensor};

use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`RmsNorm`].
///
/// ```
/// use attnzoo_models::norm::RmsNormConfig;
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// let norm = RmsNormConfig::new(4).try_init(&device)?; // gain g = 1
/// let x = Tensor::<2>::from_floats([[1.0, -1.0, 1.0, -1.0], [2.0, 2.0, 2.0, 2.0]], &device);
/// // Every row has root mean square 1 after the norm.
/// let rms = norm.forward(x).square().mean_dim(1).sqrt().into_data();
/// assert!(rms.iter::<f32>().all(|v| (v - 1.0).abs() < 1e-4));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct RmsNormConfig {
    /// Width `d` of the normalised (last) axis.
    pub d_model: usize,
    /// `ε` added to the mean square (Llama: 1e-6; Qwen: 1e-6; Gemma: 1e-6).
    #[config(default = 1e-6)]
    pub epsilon: f64,
    /// Gemma's `(1 + w)` gain, `w` starting at zero; otherwise the gain is `w`, starting at one.
    #[config(default = false)]
    pub unit_offset: bool,
}

/// RMSNorm over the last axis; see the module docs for the formula.
#[derive(Module, Debug)]
pub struct RmsNorm {
    /// The learned gain `w`, `[d]` (`transformers`' `weight`).
    pub weight: Param<Tensor<1>>,
    /// `ε`.
    #[module(skip)]
    pub epsilon: f64,
    /// Whether the gain is `1 + w`.
    #[module(skip)]
    pub unit_offset: bool,
}

impl RmsNormConfig {
    /// Builds the norm, checking the width and `ε`.
    pub fn try_init(&self, device: &Device) -> Result<RmsNorm, AttnError> {
        ensure!(
            self.d_model >= 1,
            "RMSNorm width must be at least 1, got {}",
            self.d_model
        );
        ensure!(
            self.epsilon.is_finite() && self.epsilon >= 0.0,
            "RMSNorm epsilon must be finite and non-negative, got {}",
            self.epsilon
        );
        let weight = if self.unit_offset {
            Tensor::zeros([self.d_model], device)
        } else {
            Tensor::ones([self.d_model], device)
        };
        Ok(RmsNorm {
            weight: Param::from_tensor(weight),
            epsilon: self.epsilon,
            unit_offset: self.unit_offset,
        })
    }
}

impl RmsNorm {
    /// Normalises `x [.., d]` over its last axis.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let dtype = x.dtype();
        let x = x.cast(FloatDType::F32);
        let inverse_rms = x
            .clone()
            .square()
            .mean_dim(D - 1)
            .add_scalar(self.epsilon)
            .sqrt()
            .recip();
        let normalised = x * inverse_rms;
        let gain = self.weight.val().unsqueeze::<D>();
        if self.unit_offset {
            // Gemma: the product in f32, then the cast.
            (normalised * gain.cast(FloatDType::F32).add_scalar(1.0)).cast(dtype)
        } else {
            // Llama: the cast back, then the product.
            gain * normalised.cast(dtype)
        }
    }

    /// The width this norm was built for.
    pub fn d_model(&self) -> usize {
        self.weight.dims()[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::{TensorData, Tolerance};

    #[test]
    fn rms_norm_matches_the_formula_in_both_forms() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let x = Tensor::<2>::from_floats([[3.0, -4.0], [0.0, 0.0]], &device);
        let mut norm = RmsNormConfig::new(2)
            .with_epsilon(0.0)
            .try_init(&device)
            .unwrap();
        norm.weight = Param::from_tensor(Tensor::from_floats([2.0, 0.5], &device));
        // rms([3, −4]) = √12.5; a zero row stays zero only with ε > 0, so use row 0.
        let rms = 12.5f32.sqrt();
        let out = norm.forward(x.clone().narrow(0, 0, 1));
        out.into_data().assert_approx_eq::<f32>(
            &TensorData::from([[2.0 * 3.0 / rms, 0.5 * -4.0 / rms]]),
            Tolerance::absolute(1e-6),
        );
        let mut gemma = RmsNormConfig::new(2)
            .with_unit_offset(true)
            .try_init(&device)
            .unwrap();
        gemma.weight = Param::from_tensor(Tensor::from_floats([1.0, -0.5], &device));
        let out = gemma.forward(x);
        let rms = (12.5f32 + 1e-6).sqrt();
        out.into_data().assert_approx_eq::<f32>(
            &TensorData::from([[2.0 * 3.0 / rms, 0.5 * -4.0 / rms], [0.0, 0.0]]),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn bad_settings_name_the_value() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = RmsNormConfig::new(0).try_init(&device).unwrap_err();
        assert_eq!(error.to_string(), "RMSNorm width must be at least 1, got 0");
        let error = RmsNormConfig::new(4)
            .with_epsilon(f64::NAN)
            .try_init(&device)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "RMSNorm epsilon must be finite and non-negative, got NaN"
        );
    }
}
