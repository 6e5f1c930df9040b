//! Relative position representations (Shaw, Uszkoreit & Vaswani 2018, "Self-Attention with
//! Relative Position Representations"): the edge from query `i` to key `j` carries learned
//! vectors `a^K_ij`, `a^V_ij` that depend only on the clipped distance:
//!
//! `e_ij = q_i · (k_j + a^K_ij) / √d`, `α = softmax(e)`, `z_i = Σ_j α_ij (v_j + a^V_ij)`,
//! `a^K_ij = w^K_{clip(j − i, k)}`, `a^V_ij = w^V_{clip(j − i, k)}`, `clip(x, k) = max(−k, min(k, x))`
//!
//! (the paper's equations 3–5), with `2k + 1` vectors `w^K, w^V` shared by every head. Computed
//! as the paper's §3.3 does: the relative terms as one `[Tq, B·h, ·]` by `[Tq, ·, Tk]` batched
//! product per query position, so `[Tq, Tk, d]` tables and no per-head copies.
//!
//! With `w^V` left out (`values = false`) and `k ≥ T − 1` this is `transformers`' BERT
//! `position_embedding_type="relative_key"` (Huang et al. 2020's method 1), whose
//! `distance_embedding` table is the unclipped `w^K`.
//!
//! Shapes: `query [B, h, Tq, d]`, `key [B, h, Tk, d]`, `value [B, h, Tk, d_v]`, mask and bias
//! `[B | 1, h | 1, Tq | 1, Tk]` → `context [B, h, Tq, d_v]`, `weights [B, h, Tq, Tk]` when asked
//! for. A query whose keys are all masked gets a zero context (not the `a^V` of no key).

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig};
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::masking::{masked_softmax, KeyPattern};
use super::scaled_dot::{AttentionInput, AttentionOutput};
use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`RelativePosition`], in the paper's terms.
///
/// ```
/// use attnzoo_models::attention::{AttentionInput, RelativePositionConfig};
/// use burn::tensor::{Device, Distribution, Tensor};
///
/// let device = Device::default();
/// // Heads of width 8, distances clipped at k = 4, on keys and values.
/// let attention = RelativePositionConfig::new(8, 8, 4).try_init(&device)?;
/// let x = Tensor::<4>::random([2, 3, 10, 8], Distribution::Default, &device); // [B, h, T, d]
/// let out = attention.forward(AttentionInput::self_attn(x))?;
/// assert_eq!(out.context.dims(), [2, 3, 10, 8]);
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct RelativePositionConfig {
    /// Query/key width `d` of a head (the width of `w^K`).
    pub d_head: usize,
    /// Value width `d_v` of a head (the width of `w^V`).
    pub d_value: usize,
    /// The clipping distance `k`: `2k + 1` relative positions.
    pub max_relative_position: usize,
    /// Relative representations on the values too (`a^V`), as the paper; `false`: keys only.
    #[config(default = true)]
    pub values: bool,
    /// Multiplier on the scores; `None` means `1/√d`.
    #[config(default = "None")]
    pub scale: Option<f64>,
    /// Keys masked by position (causal, local window, strided).
    #[config(default = "KeyPattern::Full")]
    pub pattern: KeyPattern,
}

/// Self-attention with relative position representations on keys (and values).
#[derive(Module, Debug)]
pub struct RelativePosition {
    /// `w^K [2k + 1, d]`, row `r` for `clip(j − i, k) = r − k`.
    pub relative_key: Embedding,
    /// `w^V [2k + 1, d_v]`, when on.
    pub relative_value: Option<Embedding>,
    /// Multiplier on the scores (`None`: `1/√d`).
    #[module(skip)]
    pub scale: Option<f64>,
    /// Positional key mask.
    #[module(skip)]
    pub pattern: KeyPattern,
}

impl RelativePositionConfig {
    /// Builds the tables (`N(0, 1)` as `nn.Embedding`), checking the sizes.
    pub fn try_init(&self, device: &Device) -> Result<RelativePosition, AttnError> {
        let (d, d_v, k) = (self.d_head, self.d_value, self.max_relative_position);
        ensure!(
            d >= 1 && d_v >= 1,
            "relative position widths must be at least 1, got d_head {d}, d_value {d_v}"
        );
        ensure!(
            k >= 1,
            "relative position clipping distance max_relative_position must be at least 1, got {k}"
        );
        self.pattern.validate()?;
        if let Some(scale) = self.scale {
            ensure!(
                scale.is_finite() && scale > 0.0,
                "relative position attention scale must be positive and finite, got {scale}"
            );
        }
        Ok(RelativePosition {
            relative_key: EmbeddingConfig::new(2 * k + 1, d).init(device),
            relative_value: self
                .values
                .then(|| EmbeddingConfig::new(2 * k + 1, d_v).init(device)),
            scale: self.scale,
            pattern: self.pattern,
        })
    }
}

impl RelativePosition {
    /// The clipping distance `k`.
    pub fn max_relative_position(&self) -> usize {
        (self.relative_key.weight.dims()[0] - 1) / 2
    }

    /// `table[clip(j − i, k) + k]` for queries at `offset..offset + q_len`, keys `0..k_len`:
    /// `[q_len, k_len, width]`.
    fn edges(&self, table: &Embedding, q_len: usize, k_len: usize, offset: usize) -> Tensor<3> {
        let k = self.max_relative_position() as i64;
        let index: Vec<i64> = (offset..offset + q_len)
            .flat_map(|i| (0..k_len).map(move |j| (j as i64 - i as i64).clamp(-k, k) + k))
            .collect();
        let device = table.weight.device();
        let index = Tensor::<1, Int>::from_data(TensorData::new(index, [q_len * k_len]), &device);
        let width = table.weight.dims()[1];
        table
            .weight
            .val()
            .select(0, index)
            .reshape([q_len, k_len, width])
    }

    /// Attends, checking the shapes and the table widths first.
    pub fn forward(&self, input: AttentionInput<4>) -> Result<AttentionOutput<4>, AttnError> {
        input.validate()?;
        let [batch, heads, q_len, d] = input.query.dims();
        let [_, _, k_len, d_v] = input.value.dims();
        let d_table = self.relative_key.weight.dims()[1];
        ensure!(
            d == d_table,
            "relative key representations are {d_table} wide, the queries {d}"
        );
        if let Some(table) = &self.relative_value {
            let width = table.weight.dims()[1];
            ensure!(
                d_v == width,
                "relative value representations are {width} wide, the values {d_v}"
            );
        }
        let offset = input.query_offset;
        let scale = self.scale.unwrap_or(1.0 / (d as f64).sqrt());
        let mask = input.mask_with(&self.pattern);
        // `[B, h, Tq, ·]` ↔ `[Tq, B·h, ·]`, the paper's reshaping for the relative terms.
        let by_query =
            |t: Tensor<4>, width: usize| t.reshape([batch * heads, q_len, width]).swap_dims(0, 1);
        let from_query =
            |t: Tensor<3>, width: usize| t.swap_dims(0, 1).reshape([batch, heads, q_len, width]);
        let a_k = self.edges(&self.relative_key, q_len, k_len, offset);
        let relative_scores = from_query(
            by_query(input.query.clone(), d).matmul(a_k.swap_dims(1, 2)),
            k_len,
        );
        let scores =
            (input.query.matmul(input.key.swap_dims(2, 3)) + relative_scores).mul_scalar(scale);
        let scores = match input.bias {
            Some(bias) => scores + bias,
            None => scores,
        };
        let weights = masked_softmax(scores, mask);
        let mut context = weights.clone().matmul(input.value);
        if let Some(table) = &self.relative_value {
            let a_v = self.edges(table, q_len, k_len, offset);
            context = context + from_query(by_query(weights.clone(), k_len).matmul(a_v), d_v);
        }
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
    use burn::tensor::{Distribution, Tolerance};

    /// One query's context written out from the paper's equations, element by element.
    #[test]
    fn follows_the_papers_equations() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let attention = RelativePositionConfig::new(2, 3, 1)
            .try_init(&device)
            .unwrap();
        let q = Tensor::<4>::random([1, 1, 3, 2], Distribution::Default, &device);
        let k = Tensor::<4>::random([1, 1, 3, 2], Distribution::Default, &device);
        let v = Tensor::<4>::random([1, 1, 3, 3], Distribution::Default, &device);
        let out = attention
            .forward(AttentionInput::new(q.clone(), k.clone(), v.clone()))
            .unwrap()
            .context;
        let flat = |t: Tensor<4>| t.into_data().iter::<f32>().collect::<Vec<f32>>();
        let (q, k, v) = (flat(q), flat(k), flat(v));
        let w_k: Vec<f32> = attention
            .relative_key
            .weight
            .val()
            .into_data()
            .iter()
            .collect();
        let w_v: Vec<f32> = attention
            .relative_value
            .as_ref()
            .unwrap()
            .weight
            .val()
            .into_data()
            .iter()
            .collect();
        let i = 0; // query 0: keys 1 and 2 are clipped to +1
        let r = |j: usize| ((j as i64 - i as i64).clamp(-1, 1) + 1) as usize;
        let e: Vec<f32> = (0..3)
            .map(|j| {
                (0..2)
                    .map(|c| q[i * 2 + c] * (k[j * 2 + c] + w_k[r(j) * 2 + c]))
                    .sum::<f32>()
                    / 2f32.sqrt()
            })
            .collect();
        let total: f32 = e.iter().map(|s| s.exp()).sum();
        let expected: Vec<f32> = (0..3)
            .map(|c| {
                (0..3)
                    .map(|j| e[j].exp() / total * (v[j * 3 + c] + w_v[r(j) * 3 + c]))
                    .sum()
            })
            .collect();
        let row = out.narrow(2, 0, 1);
        row.into_data().assert_approx_eq::<f32>(
            &TensorData::new(expected, [1, 1, 1, 3]),
            Tolerance::absolute(1e-5),
        );
    }

    #[test]
    fn bad_sizes_name_the_value() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = RelativePositionConfig::new(4, 4, 0)
            .try_init(&device)
            .unwrap_err();
        assert!(error.0.contains("got 0"), "{error}");
        let attention = RelativePositionConfig::new(4, 4, 2)
            .try_init(&device)
            .unwrap();
        let error = attention
            .forward(AttentionInput::self_attn(Tensor::<4>::zeros(
                [1, 1, 2, 6],
                &device,
            )))
            .unwrap_err();
        assert!(error.0.contains("4 wide, the queries 6"), "{error}");
    }
}
