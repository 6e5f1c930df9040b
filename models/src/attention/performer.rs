//! Performer attention, FAVOR+ (Choromanski et al. 2021, "Rethinking Attention with
//! Performers"): the softmax kernel `exp(q·k)` is estimated with `m` positive random features,
//! so attention is linear in the length:
//!
//! `φ(x) = m^{−1/2} · (exp(ω_r·x̂ − ‖x̂‖²/2 − c) + ε)_{r=1..m}`, `x̂ = d^{−1/4} x`,
//! `Att(Q, K, V) = D⁻¹ φ(Q) (φ(K)ᵀ V)`, `D = diag(φ(Q) φ(K)ᵀ 1)`
//!
//! with `ω_1..ω_m` the rows of the feature matrix `W [m, d]`: blocks of `d` orthogonal rows (the
//! paper's orthogonal random features), each row rescaled to the norm of a Gaussian vector. `c`
//! is a stabiliser that cancels in the ratio (up to the `ε = 10⁻⁴` term), as in
//! `performer-pytorch`'s `softmax_kernel`: the row maximum of `ω·x̂` for a query, the maximum
//! over every key and feature for the keys (not differentiated through).
//!
//! `W` is drawn at initialisation and not trained: it is a [`Param`] that requires no gradient,
//! so it is saved and loaded with the module's record but no optimiser moves it.
//!
//! Masks: key padding only (`[.., 1, Tk]`), whose keys are zeroed before the feature map (so
//! they cannot move the stabiliser) and whose features are zeroed after (performer-pytorch's
//! `FastAttention` takes no mask); a query whose keys are all padding gets a zero context. This
//! is the non-causal form only. No weights to return.
//!
//! Shapes: `query [B, h, Tq, d]`, `key [B, h, Tk, d]`, `value [B, h, Tk, d_v]`,
//! `mask [B | 1, h | 1, 1, Tk]` → `context [B, h, Tq, d_v]`.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Bool, Device, Distribution, Tensor, TensorData};

use super::linear::{drop_masked_keys, kernel_attend};
use super::scaled_dot::{AttentionInput, AttentionOutput};
use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`Performer`], in the paper's terms.
///
/// ```
/// use attnzoo_models::attention::{AttentionInput, PerformerConfig};
/// use burn::tensor::{Device, Distribution, Tensor};
///
/// let device = Device::default();
/// // Heads of width 16, m = ⌊16 ln 16⌋ = 44 random features.
/// let performer = PerformerConfig::new(16).try_init(&device)?;
/// assert_eq!(performer.features.dims(), [44, 16]);
/// let x = Tensor::<4>::random([2, 4, 100, 16], Distribution::Default, &device); // [B, h, T, d]
/// let out = performer.forward(AttentionInput::self_attn(x))?;
/// assert_eq!(out.context.dims(), [2, 4, 100, 16]);
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct PerformerConfig {
    /// Head width `d`.
    pub d_head: usize,
    /// Random features `m`; `None`: `⌊d ln d⌋`, performer-pytorch's default.
    #[config(default = "None")]
    pub n_features: Option<usize>,
    /// `ε` added to every feature (keeps them positive).
    #[config(default = 1e-4)]
    pub eps: f64,
}

/// FAVOR+ attention with a fixed feature matrix.
#[derive(Module, Debug)]
pub struct Performer {
    /// `W [m, d]`, the random features (requires no gradient; saved with the record).
    pub features: Param<Tensor<2>>,
    /// `ε` of the features.
    #[module(skip)]
    pub eps: f64,
}

impl PerformerConfig {
    /// Draws the feature matrix, checking the sizes.
    pub fn try_init(&self, device: &Device) -> Result<Performer, AttnError> {
        let d = self.d_head;
        ensure!(d >= 2, "Performer d_head must be at least 2, got {d}");
        let m = self
            .n_features
            .unwrap_or(((d as f64) * (d as f64).ln()) as usize);
        ensure!(m >= 1, "Performer n_features must be at least 1, got {m}");
        ensure!(
            self.eps.is_finite() && self.eps >= 0.0,
            "Performer eps must be finite and not negative, got {}",
            self.eps
        );
        let matrix = orthogonal_gaussian(m, d, device);
        Ok(Performer {
            features: Param::from_tensor(matrix).set_require_grad(false),
            eps: self.eps,
        })
    }
}

/// `m` rows in blocks of `d` orthonormal rows (Gram–Schmidt of Gaussian blocks), row `r` scaled
/// to the norm of a fresh Gaussian vector in `ℝ^d`.
fn orthogonal_gaussian(m: usize, d: usize, device: &Device) -> Tensor<2> {
    let gaussian = |rows: usize| -> Vec<f64> {
        Tensor::<2>::random([rows, d], Distribution::Normal(0.0, 1.0), device)
            .into_data()
            .iter::<f32>()
            .map(f64::from)
            .collect()
    };
    let mut rows: Vec<f64> = Vec::with_capacity(m * d);
    while rows.len() < m * d {
        let block = gaussian(d);
        let mut basis: Vec<Vec<f64>> = Vec::with_capacity(d);
        for row in block.chunks(d) {
            let mut v = row.to_vec();
            for b in &basis {
                let dot: f64 = v.iter().zip(b).map(|(x, y)| x * y).sum();
                v.iter_mut().zip(b).for_each(|(x, y)| *x -= dot * y);
            }
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            basis.push(v);
        }
        for b in basis.into_iter().take(m - rows.len() / d) {
            rows.extend(b);
        }
    }
    let norms: Vec<f64> = gaussian(m)
        .chunks(d)
        .map(|r| r.iter().map(|x| x * x).sum::<f64>().sqrt())
        .collect();
    let scaled: Vec<f32> = rows
        .chunks(d)
        .zip(&norms)
        .flat_map(|(row, norm)| row.iter().map(move |x| (x * norm) as f32))
        .collect();
    Tensor::from_data(TensorData::new(scaled, [m, d]), device)
}

impl Performer {
    /// Number of random features `m`.
    pub fn n_features(&self) -> usize {
        self.features.dims()[0]
    }

    /// The positive random features of `x [B, h, T, d]`, `[B, h, T, m]`; the stabiliser is the
    /// row maximum for queries, the maximum over every position and feature for keys.
    pub fn feature_map(&self, x: Tensor<4>, is_query: bool) -> Tensor<4> {
        let [batch, heads, len, d] = x.dims();
        let m = self.n_features();
        let normalizer = (d as f64).powf(-0.25);
        let x = x.mul_scalar(normalizer);
        let projected = x
            .clone()
            .matmul(self.features.val().transpose().unsqueeze::<4>());
        let half_norm = x.powi_scalar(2).sum_dim(3).mul_scalar(0.5);
        let stabiliser = if is_query {
            projected.clone().max_dim(3)
        } else {
            projected
                .clone()
                .reshape([batch, heads, len * m])
                .max_dim(2)
                .unsqueeze_dim::<4>(3)
        }
        .detach();
        (projected - half_norm - stabiliser)
            .exp()
            .add_scalar(self.eps)
            .mul_scalar((m as f64).powf(-0.5))
    }

    /// Attends, checking the shapes and the feature width first.
    pub fn forward(&self, input: AttentionInput<4>) -> Result<AttentionOutput<4>, AttnError> {
        input.validate()?;
        let d = input.query.dims()[3];
        let d_features = self.features.dims()[1];
        ensure!(
            d == d_features,
            "Performer features are for heads of width {d_features}, the input's are {d} (shape {:?})",
            input.query.dims()
        );
        ensure!(
            input.bias.is_none() && input.query_offset == 0,
            "Performer attention has no score matrix for a bias and no causal form for an offset"
        );
        let mask: Option<Tensor<4, Bool>> = input.mask;
        let phi_q = self.feature_map(input.query, true);
        // A padded key must change nothing: zeroed before the feature map, it cannot raise the
        // keys' stabiliser (which cancels only up to `ε`), and its features are dropped after.
        let key = drop_masked_keys(input.key, mask.clone())?;
        let phi_k = drop_masked_keys(self.feature_map(key, false), mask)?;
        Ok(AttentionOutput {
            context: kernel_attend(phi_q, phi_k, input.value, 0.0),
            weights: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::masking::masked_softmax;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::Tolerance;

    #[test]
    fn the_features_are_orthogonal_within_a_block_and_untrained() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let performer = PerformerConfig::new(4)
            .with_n_features(Some(6))
            .try_init(&device)
            .unwrap();
        assert!(!performer.features.val().is_require_grad());
        let w = performer.features.val();
        let block = w.clone().narrow(0, 0, 4);
        let gram = block.clone().matmul(block.transpose()).into_data();
        let gram: Vec<f32> = gram.iter::<f32>().collect();
        for i in 0..4 {
            for j in 0..4 {
                if i != j {
                    assert!(
                        gram[i * 4 + j].abs() < 1e-4,
                        "rows {i}, {j}: {}",
                        gram[i * 4 + j]
                    );
                }
            }
        }
        assert_eq!(w.dims(), [6, 4]);
    }

    /// With many features the estimate approaches softmax attention.
    #[test]
    fn many_features_approximate_softmax_attention() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let performer = PerformerConfig::new(4)
            .with_n_features(Some(4096))
            .try_init(&device)
            .unwrap();
        let q = Tensor::<4>::random([1, 1, 5, 4], Distribution::Uniform(-0.5, 0.5), &device);
        let v = Tensor::<4>::random([1, 1, 5, 3], Distribution::Default, &device);
        let exact = masked_softmax(
            q.clone().matmul(q.clone().swap_dims(2, 3)).mul_scalar(0.5),
            None,
        )
        .matmul(v.clone());
        let estimate = performer
            .forward(AttentionInput::new(q.clone(), q, v))
            .unwrap()
            .context;
        estimate
            .into_data()
            .assert_approx_eq::<f32>(&exact.into_data(), Tolerance::absolute(0.05));
    }

    /// Found by tests/properties.rs: a padded key far larger than the others raised the keys'
    /// stabiliser, which cancels only up to `ε`, so the unpadded keys' features sank under `ε`
    /// and the context moved (by 15 % in the shrunk case).
    #[test]
    fn a_padded_key_changes_nothing_however_large() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let performer = PerformerConfig::new(2).try_init(&device).unwrap();
        let x = Tensor::<4>::random([1, 1, 3, 2], Distribution::Default, &device);
        let padding = Tensor::<4, Bool>::from_data(
            TensorData::new(vec![false, false, true], [1, 1, 1, 3]),
            &device,
        );
        let context = |key: Tensor<4>| {
            performer
                .forward(AttentionInput::new(x.clone(), key, x.clone()).mask(padding.clone()))
                .unwrap()
                .context
                .into_data()
        };
        let large = x.clone().slice_assign(
            [0..1, 0..1, 2..3, 0..2],
            Tensor::full([1, 1, 1, 2], 30.0, &device),
        );
        context(large).assert_approx_eq::<f32>(&context(x.clone()), Tolerance::absolute(1e-6));
    }

    #[test]
    fn bad_sizes_name_the_value() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = PerformerConfig::new(1).try_init(&device).unwrap_err();
        assert!(error.0.contains("got 1"), "{error}");
        let performer = PerformerConfig::new(4).try_init(&device).unwrap();
        let error = performer
            .forward(AttentionInput::self_attn(Tensor::<4>::zeros(
                [1, 1, 2, 6],
                &device,
            )))
            .unwrap_err();
        assert!(error.0.contains("width 4, the input's are 6"), "{error}");
    }
}
