//! Linformer self-attention (Wang et al. 2020): keys and values are projected along the
//! sequence from length `n` to a fixed `k`, so attention costs `O(n·k)` instead of `O(n²)`:
//!
//! `head_i = softmax(Q W_Q^i (E K W_K^i)ᵀ / √d_head) · F V W_V^i`, `E, F ∈ ℝ^{k×n}`
//!
//! (`E = F` when `share_kv`). Inputs shorter than `n` use the first `T` columns of `E` and `F`;
//! padded positions are zeroed before the projection. Linformer mixes positions, so it has no
//! causal form.
//!
//! Shapes: `x [B, T, D]` (`T ≤ max_seq_len`), `padding [B, T]` → `context [B, T, D]`,
//! `weights [B, h, T, k]` when asked for.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::tensor::{Bool, Device, Tensor};

use super::scaled_dot::{AttentionInput, ScaledDotProduct, ScaledDotProductConfig};
use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`Linformer`].
///
/// ```
/// use attnzoo_models::attention::LinformerConfig;
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// // Sequences of up to 64 positions, keys and values projected to 16.
/// let linformer = LinformerConfig::new(32, 4, 64, 16).try_init(&device)?;
/// let (context, weights) = linformer.forward(Tensor::<3>::ones([2, 64, 32], &device), None, true)?;
/// assert_eq!(context.dims(), [2, 64, 32]);
/// let weights = weights.unwrap(); // [batch, heads, len, proj_len]
/// assert_eq!(weights.dims(), [2, 4, 64, 16]);
/// // Each query's weights over the 16 projected positions are a distribution.
/// let sums = weights.sum_dim(3).into_data();
/// assert!(sums.iter::<f32>().all(|s| (s - 1.0).abs() < 1e-5));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct LinformerConfig {
    /// Model width `D`.
    pub d_model: usize,
    /// Heads `h`; must divide `d_model`.
    pub n_heads: usize,
    /// Longest sequence `n`.
    pub max_seq_len: usize,
    /// Projected length `k ≤ n`.
    pub proj_len: usize,
    /// Use one projection for keys and values (`E = F`).
    #[config(default = false)]
    pub share_kv: bool,
}

/// Linformer multi-head self-attention.
#[derive(Module, Debug)]
pub struct Linformer {
    /// `W_Q`
    pub query: Linear,
    /// `W_K`
    pub key: Linear,
    /// `W_V`
    pub value: Linear,
    /// `W_O`
    pub output: Linear,
    /// `E`: `[k, n]`.
    pub key_proj: Param<Tensor<2>>,
    /// `F`: `[k, n]`, absent when shared with `E`.
    pub value_proj: Option<Param<Tensor<2>>>,
    /// Per-head attention over the `k` projected positions.
    pub attention: ScaledDotProduct,
    /// Heads.
    pub n_heads: usize,
}

impl LinformerConfig {
    /// Builds the module, checking the sizes.
    pub fn try_init(&self, device: &Device) -> Result<Linformer, AttnError> {
        let (d_model, n_heads, n, k) =
            (self.d_model, self.n_heads, self.max_seq_len, self.proj_len);
        ensure!(
            n_heads >= 1 && d_model % n_heads == 0,
            "d_model {d_model} is not divisible by n_heads {n_heads}"
        );
        ensure!(
            k >= 1 && k <= n,
            "Linformer proj_len {k} must be between 1 and max_seq_len {n}"
        );
        let projection = || {
            Initializer::KaimingUniform {
                gain: 1.0 / 3f64.sqrt(),
                fan_out_only: false,
            }
            .init_with([k, n], Some(n), Some(k), device)
        };
        let linear = || LinearConfig::new(d_model, d_model).init(device);
        Ok(Linformer {
            query: linear(),
            key: linear(),
            value: linear(),
            output: linear(),
            key_proj: projection(),
            value_proj: (!self.share_kv).then(projection),
            attention: ScaledDotProductConfig::new().try_init()?,
            n_heads,
        })
    }
}

impl Linformer {
    /// Self-attention over `x [B, T, D]` with an optional `padding [B, T]`; weights `[B, h, T, k]` when asked.
    pub fn forward(
        &self,
        x: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
        need_weights: bool,
    ) -> Result<(Tensor<3>, Option<Tensor<4>>), AttnError> {
        let [batch, len, width] = x.dims();
        let [proj_len, max_len] = self.key_proj.dims();
        let d_model = self.query.weight.dims()[0];
        ensure!(
            width == d_model,
            "input width {width} is not d_model {d_model}"
        );
        ensure!(
            len <= max_len,
            "sequence length {len} exceeds Linformer max_seq_len {max_len}"
        );
        ensure!(
            len >= proj_len,
            "sequence length {len} is shorter than Linformer proj_len {proj_len}"
        );
        if let Some(padding) = &padding {
            ensure!(
                padding.dims() == [batch, len],
                "padding mask shape {:?} is not [{batch}, {len}]",
                padding.dims()
            );
        }
        let padding = padding.map(|p| p.unsqueeze_dim::<3>(2).expand([batch, len, width]));
        let keep = |t: Tensor<3>| match &padding {
            Some(padding) => t.mask_fill(padding.clone(), 0.0),
            None => t,
        };
        let along_sequence = |proj: &Param<Tensor<2>>, t: Tensor<3>| {
            proj.val().narrow(1, 0, len).unsqueeze::<3>().matmul(t)
        };
        let keys = along_sequence(&self.key_proj, keep(self.key.forward(x.clone())));
        let values = along_sequence(
            self.value_proj.as_ref().unwrap_or(&self.key_proj),
            keep(self.value.forward(x.clone())),
        );
        let heads = |t: Tensor<3>| {
            let [b, l, _] = t.dims();
            t.reshape([b, l, self.n_heads, d_model / self.n_heads])
                .swap_dims(1, 2)
        };
        let mut input =
            AttentionInput::new(heads(self.query.forward(x)), heads(keys), heads(values));
        if need_weights {
            input = input.with_weights();
        }
        let output = self.attention.forward(input)?;
        let context = output
            .context
            .swap_dims(1, 2)
            .reshape([batch, len, d_model]);
        Ok((self.output.forward(context), output.weights))
    }
}
