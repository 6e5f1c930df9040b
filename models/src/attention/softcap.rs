//! Logit soft-capping (Gemma 2, Gemma Team 2024): scores are squashed smoothly into `(−c, c)`,
//!
//! `softcap(s) = c · tanh(s / c)`
//!
//! Gemma 2 caps attention scores at `c = 50` (after the scale, before masks and biases:
//! `ScaledDotProductConfig::with_softcap`) and the final logits at `c = 30` (this function).
//! Near zero it is the identity; it keeps one very large score from saturating the softmax.
//!
//! Shapes: any; element-wise.

use burn::tensor::Tensor;

use crate::error::ensure;
use crate::AttnError;

/// `cap · tanh(x / cap)`, element-wise; `cap` must be positive and finite ([`check_softcap`]).
///
/// ```
/// use attnzoo_models::attention::softcap;
/// use burn::tensor::{Device, Tensor};
///
/// let logits = Tensor::<1>::from_floats([0.1, 1000.0, -1000.0], &Device::default());
/// let capped = softcap(logits, 30.0).into_data();
/// let values: Vec<f32> = capped.iter::<f32>().collect();
/// assert!((values[0] - 0.1).abs() < 1e-4 && values[1] <= 30.0 && values[2] >= -30.0);
/// ```
pub fn softcap<const D: usize>(x: Tensor<D>, cap: f64) -> Tensor<D> {
    x.div_scalar(cap).tanh().mul_scalar(cap)
}

/// Checks a soft-cap: positive and finite, or an error naming it.
pub fn check_softcap(cap: f64) -> Result<(), AttnError> {
    ensure!(
        cap.is_finite() && cap > 0.0,
        "soft-cap must be positive and finite, got {cap}"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_that_is_not_positive_and_finite_is_an_error() {
        for cap in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            let error = check_softcap(cap).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("soft-cap must be positive and finite, got {cap}")
            );
        }
        assert!(check_softcap(50.0).is_ok());
    }
}
