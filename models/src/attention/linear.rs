//! Linear attention (Katharopoulos, Vyas, Pappas & Fleuret 2020, "Transformers are RNNs: Fast
//! Autoregressive Transformers with Linear Attention"): the softmax kernel is replaced by a
//! feature map `φ(x) = elu(x) + 1`, so the keys and values are summed once and every query
//! costs `O(d · d_v)`, whatever the length (the paper's equations 4–6):
//!
//! `V'_i = φ(Q_i)ᵀ Σ_j φ(K_j) V_jᵀ / (φ(Q_i)ᵀ Σ_j φ(K_j) + ε)`
//!
//! with `j` over every key (non-causal) or over `j ≤ i` (causal). The causal form is an RNN
//! (equations 16–20): the state `S_i = S_{i−1} + φ(K_i) V_iᵀ`, `z_i = z_{i−1} + φ(K_i)` gives
//! `V'_i = φ(Q_i)ᵀ S_i / (φ(Q_i)ᵀ z_i + ε)`, so decoding keeps `O(d · d_v)` memory per head
//! ([`LinearState`]) instead of a growing key/value cache. The whole causal sequence is computed
//! chunk by chunk (within a chunk the masked `φ(Q)φ(K)ᵀ`, across chunks the carried state), so
//! time and memory grow linearly with the length.
//!
//! `ε = 1e-6` as `pytorch-fast-transformers`' `LinearAttention`/`CausalLinearAttention`. Masks:
//! key padding only (`[.., 1, Tk]`): a padded key's `φ(K_j)` is zeroed, so a query whose keys are
//! all padding gets a zero context. There are no weights to return.
//!
//! Shapes: `query [B, h, Tq, d]`, `key [B, h, Tk, d]`, `value [B, h, Tk, d_v]`,
//! `mask [B | 1, h | 1, 1, Tk]` → `context [B, h, Tq, d_v]`; causal: `Tq = Tk`.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::activation::elu;
use burn::tensor::{Bool, Tensor};

use super::scaled_dot::{AttentionInput, AttentionOutput};
use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`LinearAttention`].
///
/// ```
/// use attnzoo_models::attention::{AttentionInput, LinearAttentionConfig, LinearState};
/// use burn::tensor::{Device, Distribution, Tensor, Tolerance};
///
/// let device = Device::default();
/// let attention = LinearAttentionConfig::new().with_causal(true).try_init()?;
/// let x = Tensor::<4>::random([1, 2, 6, 8], Distribution::Default, &device); // [B, h, T, d]
/// let whole = attention.forward(AttentionInput::self_attn(x.clone()))?.context;
/// // The same, one position at a time, carrying an O(d²) state instead of a key/value cache.
/// let mut state = LinearState::default();
/// let steps = (0..6)
///     .map(|t| {
///         let x_t = x.clone().narrow(2, t, 1);
///         attention.step(x_t.clone(), x_t.clone(), x_t, None, &mut state)
///     })
///     .collect::<Result<Vec<_>, _>>()?;
/// Tensor::cat(steps, 2).into_data().assert_approx_eq::<f32>(&whole.into_data(), Tolerance::absolute(1e-5));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct LinearAttentionConfig {
    /// Only the past (`j ≤ i`): the RNN form.
    #[config(default = false)]
    pub causal: bool,
    /// `ε` added to the normaliser.
    #[config(default = 1e-6)]
    pub eps: f64,
    /// Positions per block of the causal forward (memory `O(chunk²)` per block).
    #[config(default = 64)]
    pub chunk: usize,
}

/// Linear attention with `φ = elu + 1`; no parameters.
#[derive(Module, Debug)]
pub struct LinearAttention {
    /// Only the past.
    #[module(skip)]
    pub causal: bool,
    /// `ε` of the normaliser.
    #[module(skip)]
    pub eps: f64,
    /// Block length of the causal forward.
    #[module(skip)]
    pub chunk: usize,
}

/// The causal form's recurrent state per head: `S = Σ φ(K_j) V_jᵀ` `[B, h, d, d_v]` and
/// `z = Σ φ(K_j)` `[B, h, 1, d]` over the positions seen so far.
#[derive(Debug, Clone, Default)]
pub struct LinearState {
    sum_kv: Option<Tensor<4>>,
    sum_k: Option<Tensor<4>>,
    len: usize,
}

impl LinearState {
    /// Positions folded into the state.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position was seen yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keeps the batch rows `indices [B']` in that order (beam search).
    pub fn select(&mut self, indices: Tensor<1, burn::tensor::Int>) {
        for t in [&mut self.sum_kv, &mut self.sum_k] {
            if let Some(tensor) = t.take() {
                *t = Some(tensor.select(0, indices.clone()));
            }
        }
    }
}

impl LinearAttentionConfig {
    /// Builds the module, checking `ε` and the chunk.
    pub fn try_init(&self) -> Result<LinearAttention, AttnError> {
        ensure!(
            self.eps.is_finite() && self.eps >= 0.0,
            "linear attention eps must be finite and not negative, got {}",
            self.eps
        );
        ensure!(
            self.chunk >= 1,
            "linear attention chunk must be at least 1, got {}",
            self.chunk
        );
        Ok(LinearAttention {
            causal: self.causal,
            eps: self.eps,
            chunk: self.chunk,
        })
    }
}

/// `φ(x) = elu(x) + 1`.
pub fn elu_feature_map<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    elu(x, 1.0).add_scalar(1.0)
}

/// Zeroes the masked keys' rows of `keys [B, h, Tk, ·]` (their features, or the keys
/// themselves); `mask [B | 1, h | 1, 1, Tk]` (`true` = masked).
pub(crate) fn drop_masked_keys(
    keys: Tensor<4>,
    mask: Option<Tensor<4, Bool>>,
) -> Result<Tensor<4>, AttnError> {
    let Some(mask) = mask else {
        return Ok(keys);
    };
    let dims = mask.dims();
    ensure!(
        dims[2] == 1,
        "kernelised attention takes key padding masks [.., 1, key_len] only, got a mask of shape {dims:?}"
    );
    let keep = mask.bool_not().float().swap_dims(2, 3);
    Ok(keys * keep)
}

/// `num / den` where `den` is not zero, and zero where it is (every key masked).
pub(crate) fn safe_divide(num: Tensor<4>, den: Tensor<4>) -> Tensor<4> {
    let empty = den.clone().equal_elem(0.0);
    let den = den.mask_fill(empty.clone(), 1.0);
    let shape = num.shape();
    (num / den.clone()).mask_fill(empty.expand(shape), 0.0)
}

/// Non-causal kernelised attention over features: `φQ (φKᵀ V) / (φQ · Σ φK + ε)`.
pub(crate) fn kernel_attend(
    phi_q: Tensor<4>,
    phi_k: Tensor<4>,
    value: Tensor<4>,
    eps: f64,
) -> Tensor<4> {
    let sum_k = phi_k.clone().sum_dim(2); // [B, h, 1, d]
    let kv = phi_k.swap_dims(2, 3).matmul(value); // [B, h, d, d_v]
    let num = phi_q.clone().matmul(kv);
    let den = (phi_q * sum_k).sum_dim(3).add_scalar(eps);
    safe_divide(num, den)
}

/// Causal kernelised attention, block by block, carrying `state` (`Tq = Tk`).
pub(crate) fn causal_kernel_attend(
    phi_q: Tensor<4>,
    phi_k: Tensor<4>,
    value: Tensor<4>,
    eps: f64,
    chunk: usize,
    state: &mut LinearState,
) -> Tensor<4> {
    let len = phi_q.dims()[2];
    let mut outputs = Vec::with_capacity(len.div_ceil(chunk));
    let mut start = 0;
    while start < len {
        let size = chunk.min(len - start);
        let q = phi_q.clone().narrow(2, start, size);
        let k = phi_k.clone().narrow(2, start, size);
        let v = value.clone().narrow(2, start, size);
        let device = q.device();
        // Within the block: φQ φKᵀ over j ≤ i.
        let scores = q.clone().matmul(k.clone().swap_dims(2, 3));
        let future = Tensor::<2, Bool>::tril_mask([size, size], 0, &device)
            .unsqueeze::<4>()
            .expand(scores.shape());
        let scores = scores.mask_fill(future, 0.0);
        let mut num = scores.clone().matmul(v.clone());
        let mut den = scores.sum_dim(3);
        // Across blocks: the state of every earlier position.
        if let (Some(sum_kv), Some(sum_k)) = (&state.sum_kv, &state.sum_k) {
            num = num + q.clone().matmul(sum_kv.clone());
            den = den + (q.clone() * sum_k.clone()).sum_dim(3);
        }
        outputs.push(safe_divide(num, den.add_scalar(eps)));
        let block_kv = k.clone().swap_dims(2, 3).matmul(v);
        let block_k = k.sum_dim(2);
        state.sum_kv = Some(match state.sum_kv.take() {
            Some(sum_kv) => sum_kv + block_kv,
            None => block_kv,
        });
        state.sum_k = Some(match state.sum_k.take() {
            Some(sum_k) => sum_k + block_k,
            None => block_k,
        });
        state.len += size;
        start += size;
    }
    Tensor::cat(outputs, 2)
}

impl LinearAttention {
    /// Attends over the whole sequence (causal: from position 0).
    pub fn forward(&self, input: AttentionInput<4>) -> Result<AttentionOutput<4>, AttnError> {
        input.validate()?;
        ensure!(
            input.bias.is_none(),
            "linear attention has no score matrix to add a bias to"
        );
        if self.causal {
            let (q_len, k_len) = input.lengths();
            ensure!(
                q_len == k_len && input.query_offset == 0,
                "causal linear attention over the whole sequence needs as many queries as keys from position 0 \
                 (got {q_len} queries at offset {}, {k_len} keys); decode with `step`",
                input.query_offset
            );
            let context = self.step(
                input.query,
                input.key,
                input.value,
                input.mask,
                &mut LinearState::default(),
            )?;
            return Ok(AttentionOutput {
                context,
                weights: None,
            });
        }
        let phi_k = drop_masked_keys(elu_feature_map(input.key), input.mask)?;
        let context = kernel_attend(elu_feature_map(input.query), phi_k, input.value, self.eps);
        Ok(AttentionOutput {
            context,
            weights: None,
        })
    }

    /// The causal form for the positions after those in `state`: `query`, `key` and `value`
    /// `[B, h, T, ·]` are the same `T` new positions; `mask [B | 1, h | 1, 1, T]` pads keys.
    pub fn step(
        &self,
        query: Tensor<4>,
        key: Tensor<4>,
        value: Tensor<4>,
        mask: Option<Tensor<4, Bool>>,
        state: &mut LinearState,
    ) -> Result<Tensor<4>, AttnError> {
        ensure!(
            self.causal,
            "only causal linear attention has a recurrent state"
        );
        let input = AttentionInput::new(query, key, value);
        input.validate()?;
        let (q_len, k_len) = input.lengths();
        ensure!(
            q_len == k_len,
            "a causal linear attention step needs one key per query, got {q_len} queries and {k_len} keys"
        );
        let phi_k = drop_masked_keys(elu_feature_map(input.key), mask)?;
        Ok(causal_kernel_attend(
            elu_feature_map(input.query),
            phi_k,
            input.value,
            self.eps,
            self.chunk,
            state,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::{Distribution, TensorData, Tolerance};

    /// The kernelised form equals attention with weights `φ(q)·φ(k) / Σ φ(q)·φ(k)`, written out.
    #[test]
    fn equals_the_explicit_kernel_weights_causal_and_not() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let x = Tensor::<4>::random([2, 2, 7, 4], Distribution::Default, &device);
        let v = Tensor::<4>::random([2, 2, 7, 3], Distribution::Default, &device);
        let phi = elu_feature_map(x.clone());
        let kernel = phi.clone().matmul(phi.swap_dims(2, 3));
        for causal in [false, true] {
            let kernel = if causal {
                kernel.clone().tril(0)
            } else {
                kernel.clone()
            };
            let weights = kernel.clone() / kernel.sum_dim(3).add_scalar(1e-6);
            let expected = weights.matmul(v.clone());
            let attention = LinearAttentionConfig::new()
                .with_causal(causal)
                .with_chunk(3)
                .try_init()
                .unwrap();
            let actual = attention
                .forward(AttentionInput::new(x.clone(), x.clone(), v.clone()))
                .unwrap()
                .context;
            actual
                .into_data()
                .assert_approx_eq::<f32>(&expected.into_data(), Tolerance::absolute(1e-5));
        }
    }

    #[test]
    fn padding_is_zero_weight_and_an_all_padded_row_is_zero() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let attention = LinearAttentionConfig::new().try_init().unwrap();
        let x = Tensor::<4>::random([2, 1, 4, 4], Distribution::Default, &device);
        let padding = Tensor::<2, Bool>::from_data(
            TensorData::from([[false, false, true, true], [true, true, true, true]]),
            &device,
        );
        let padded = attention
            .forward(AttentionInput::self_attn(x.clone()).mask_pad(padding))
            .unwrap()
            .context;
        let short = attention
            .forward(AttentionInput::new(
                x.clone().narrow(0, 0, 1),
                x.clone().narrow(0, 0, 1).narrow(2, 0, 2),
                x.clone().narrow(0, 0, 1).narrow(2, 0, 2),
            ))
            .unwrap()
            .context;
        padded
            .clone()
            .narrow(0, 0, 1)
            .into_data()
            .assert_approx_eq::<f32>(&short.into_data(), Tolerance::absolute(1e-5));
        assert!(padded
            .narrow(0, 1, 1)
            .into_data()
            .iter::<f32>()
            .all(|v| v == 0.0));
    }

    #[test]
    fn bad_settings_and_masks_name_the_value() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = LinearAttentionConfig::new()
            .with_chunk(0)
            .try_init()
            .unwrap_err();
        assert!(
            error.0.contains("chunk must be at least 1, got 0"),
            "{error}"
        );
        let attention = LinearAttentionConfig::new().try_init().unwrap();
        let x = Tensor::<4>::zeros([1, 1, 3, 2], &device);
        let error = attention
            .forward(
                AttentionInput::self_attn(x).mask(Tensor::<4, Bool>::from_data(
                    TensorData::from([[[[false; 3]; 3]]]),
                    &device,
                )),
            )
            .unwrap_err();
        assert!(error.0.contains("[1, 1, 3, 3]"), "{error}");
    }
}
