//! Memory-efficient exact attention (Rabe & Staats 2021, "Self-attention Does Not Need O(n²)
//! Memory"; the online softmax of FlashAttention, Dao et al. 2022).
//!
//! Queries are split into blocks of `query_chunk` and keys into blocks of `key_chunk`; for each
//! query block a running maximum `m`, normaliser `ℓ` and accumulator `a` are carried over the key
//! blocks `K_b, V_b`:
//!
//! ```text
//! S_b = scale · Q K_bᵀ + bias_b        (masked entries set to −∞)
//! m'  = max(m, rowmax S_b)
//! P_b = exp(S_b − m')                  (masked entries exactly 0)
//! ℓ'  = ℓ · exp(m − m') + rowsum P_b
//! a'  = a · exp(m − m') + P_b V_b
//! context = a / ℓ                      (0 where every key was masked)
//! ```
//!
//! Only one `[query_chunk, key_chunk]` score block is alive at a time, so peak memory grows with
//! `T · chunk`, not `T²` (in inference; under autodiff the graph keeps every block for the
//! backward pass). Blocks that the [`KeyPattern`](super::KeyPattern) masks completely — beyond a
//! local window, or in the future of a causal query — are never computed.
//!
//! Shapes are those of [`super::scaled_dot`]: `query [.., q_len, d_k]`, `key [.., k_len, d_k]`,
//! `value [.., k_len, d_v]` → `context [.., q_len, d_v]`.

use burn::tensor::{Bool, Tensor};

use super::masking::{either, lift, MASKED_SCORE};
// `scaled_dot` calls this file and this file reads `scaled_dot`'s types: a circle kept on purpose.
// This is the chunked implementation of `ScaledDotProduct`'s forward, apart for its algorithm; it
// reads the module's settings (its scale and key pattern among them) and the `AttentionInput` as
// the dense and fused paths beside them do, so a setting added to `ScaledDotProduct` reaches all
// three through one type. Passing them as values would copy `AttentionInput` field by field and
// grow with every setting; `chunked_attention` is `pub(crate)` and `scaled_dot` its only caller.
use super::scaled_dot::{AttentionInput, ScaledDotProduct};

/// The chunked path of [`ScaledDotProduct`]; inputs are already validated.
pub(crate) fn chunked_attention<const D: usize>(
    attention: &ScaledDotProduct,
    input: AttentionInput<D>,
    query_chunk: usize,
    key_chunk: usize,
) -> Tensor<D> {
    let (q_len, k_len) = input.lengths();
    let q_dims = input.query.dims();
    let d_v = input.value.dims()[D - 1];
    let scale = attention.scale_for(q_dims[D - 1]);
    let device = input.query.device();
    let offset = input.query_offset;
    let key_t = input.key.swap_dims(D - 2, D - 1);

    let mut blocks = Vec::with_capacity(q_len.div_ceil(query_chunk));
    for q_start in (0..q_len).step_by(query_chunk) {
        let q_size = query_chunk.min(q_len - q_start);
        let query = input.query.clone().narrow(D - 2, q_start, q_size);
        let mut row_dims = q_dims;
        row_dims[D - 2] = q_size;
        row_dims[D - 1] = 1;
        let mut out_dims = row_dims;
        out_dims[D - 1] = d_v;
        let mut max = Tensor::<D>::full(row_dims, MASKED_SCORE, &device);
        let mut norm = Tensor::<D>::zeros(row_dims, &device);
        let mut acc = Tensor::<D>::zeros(out_dims, &device);
        let queries = offset + q_start..offset + q_start + q_size;

        for k_start in (0..k_len).step_by(key_chunk) {
            let k_size = key_chunk.min(k_len - k_start);
            let keys = k_start..k_start + k_size;
            if attention.pattern.blocks(queries.clone(), keys.clone()) {
                continue;
            }
            let mut scores = attention.capped(
                query
                    .clone()
                    .matmul(key_t.clone().narrow(D - 1, k_start, k_size))
                    .mul_scalar(scale),
            );
            if let Some(bias) = &input.bias {
                scores = scores + block(bias.clone(), q_start, q_size, k_start, k_size);
            }
            let pattern_mask = attention
                .pattern
                .mask(queries.clone(), keys, &device)
                .map(lift);
            let user_mask = input
                .mask
                .clone()
                .map(|m| block(m, q_start, q_size, k_start, k_size));
            let mask: Option<Tensor<D, Bool>> =
                either(user_mask, pattern_mask).map(|m| m.expand(scores.shape()));
            if let Some(mask) = &mask {
                scores = scores.mask_fill(mask.clone(), MASKED_SCORE);
            }
            let new_max = max.clone().max_pair(scores.clone().max_dim(D - 1));
            let mut probs = (scores - new_max.clone()).exp();
            if let Some(mask) = mask {
                probs = probs.mask_fill(mask, 0.0);
            }
            let correction = (max - new_max.clone()).exp();
            norm = norm * correction.clone() + probs.clone().sum_dim(D - 1);
            acc =
                acc * correction + probs.matmul(input.value.clone().narrow(D - 2, k_start, k_size));
            max = new_max;
        }
        blocks.push(acc / norm.clamp_min(f32::MIN_POSITIVE));
    }
    Tensor::cat(blocks, D - 2)
}

/// The `[q_size, k_size]` block of a score-shaped tensor whose row axis may be broadcast (size 1).
fn block<const D: usize, K: burn::tensor::kind::Basic>(
    tensor: Tensor<D, K>,
    q_start: usize,
    q_size: usize,
    k_start: usize,
    k_size: usize,
) -> Tensor<D, K> {
    let rows = if tensor.dims()[D - 2] == 1 {
        tensor
    } else {
        tensor.narrow(D - 2, q_start, q_size)
    };
    rows.narrow(D - 1, k_start, k_size)
}
