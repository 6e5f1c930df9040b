//! attnzoo's patch: the gradient of Burn's `attention` op as FlashAttention-2's backward (Dao,
//! 2023), with the forward left to the backend's own fused kernel.
//!
//! Burn 0.22.1 differentiated `attention_fallback`'s unfused graph: the forward materialised the
//! `[batch, heads, len_q, len_k]` scores, their mask, softmax and every intermediate, all kept for
//! the backward. Here the forward is the backend's `attention` and the node keeps only `Q`, `K`,
//! `V` (and the mask and bias). The backward walks blocks of query rows — a block's scores are
//! recomputed, never the whole matrix — so its memory is O(len_k · block) beyond the gradients:
//!
//! ```text
//! S = scale · Q Kᵀ, masked (−∞), + bias        P = softmax(S)            (recomputed per block)
//! dV += Pᵀ dO     dP = dO Vᵀ     dS = P ∘ (dP − rowsum(P ∘ dP))
//! dQ = scale · dS K     dK += scale · dSᵀ Q     d(bias) = dS
//! ```
//!
//! `rowsum(P ∘ dP)` equals FlashAttention-2's `rowsum(dO ∘ O)`, so the output need not be kept. A
//! causal block stops at its last row's diagonal: the keys past it get no gradient from it.

use burn_backend::ops::AttentionModuleOptions;
use burn_backend::tensor::{BoolTensor, FloatTensor};
use burn_backend::{Backend, TensorMetadata, get_or_init_device_settings};
use burn_std::{Shape, Slice};

/// Scores recomputed at once (16 MiB of f32), in blocks of 16 to 128 query rows: larger blocks
/// make fewer, larger products; smaller ones keep the block's passes in the cache (Xeon, batch 4
/// × 8 heads × 1,024: 128 rows 266 ms, 64 rows 297, 16 rows 359, all 1,024 rows 547).
const BLOCK_SCORES: usize = 1 << 22;

/// The gradients of `attention`'s inputs.
pub(crate) struct AttentionGrads<B: Backend> {
    pub query: FloatTensor<B>,
    pub key: FloatTensor<B>,
    pub value: FloatTensor<B>,
    /// Reduced to the bias's own (broadcast) shape; `None` unless asked for.
    pub bias: Option<FloatTensor<B>>,
}

/// Whether the blocked backward applies: equal batch and head counts in `Q`, `K` and `V` (no
/// broadcast), no softcap, and causal only over as many queries as keys (where every backend's
/// fused op agrees: with more keys, `attention_fallback` aligns the diagonal at the bottom-right
/// corner and PyTorch's SDPA at the top-left). Otherwise the caller differentiates
/// `attention_fallback`.
pub(crate) fn blocked_backward_applies<B: Backend>(
    query: &FloatTensor<B>,
    key: &FloatTensor<B>,
    value: &FloatTensor<B>,
    options: &AttentionModuleOptions,
) -> bool {
    let (q, k, v) = (
        query.shape().dims::<4>(),
        key.shape().dims::<4>(),
        value.shape().dims::<4>(),
    );
    options.softcap.is_none()
        && q[..2] == k[..2]
        && k[..3] == v[..3]
        && (!options.is_causal || q[2] == k[2])
}

/// See the module docs; `grad` is `dO [batch, heads, len_q, d_v]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn attention_backward<B: Backend>(
    query: FloatTensor<B>,
    key: FloatTensor<B>,
    value: FloatTensor<B>,
    mask: Option<BoolTensor<B>>,
    bias: Option<FloatTensor<B>>,
    bias_grad: bool,
    options: &AttentionModuleOptions,
    grad: FloatTensor<B>,
) -> AttentionGrads<B> {
    let [batch, heads, len_q, d_k] = query.shape().dims::<4>();
    let len_k = key.shape().dims::<4>()[2];
    let d_v = value.shape().dims::<4>()[3];
    let scale = options
        .scale
        .unwrap_or_else(|| 1.0 / (d_k as f64).sqrt());
    let rows_per_block = (BLOCK_SCORES / (batch * heads * len_k).max(1))
        .clamp(16, 128)
        .min(len_q.max(1));
    let device = query.device();
    let dtype = query.dtype();
    let zeros = |dims: [usize; 4]| B::float_zeros(Shape::new(dims), &device, dtype.into());

    let mut grad_key = zeros([batch, heads, len_k, d_k]);
    let mut grad_value = zeros([batch, heads, len_k, d_v]);
    let mut grad_query_blocks = Vec::new();
    let mut grad_bias_blocks = Vec::new();
    for start in (0..len_q).step_by(rows_per_block) {
        let end = (start + rows_per_block).min(len_q);
        // Causal (as many queries as keys): the block's rows see the keys up to its last row.
        let keys = if options.is_causal { end } else { len_k };
        // The scale on the block's queries (`[rows, d_k]`), not on its scores (`[rows, keys]`).
        let q = B::float_mul_scalar(
            B::float_slice(query.clone(), &rows(start..end)),
            scale.into(),
        );
        let k = B::float_slice(key.clone(), &rows(0..keys));
        let v = B::float_slice(value.clone(), &rows(0..keys));
        let d_o = B::float_slice(grad.clone(), &rows(start..end));

        let scores = B::float_matmul(q.clone(), B::float_transpose(k.clone()));
        let scores = match &mask {
            Some(mask) => {
                let block = B::bool_slice(mask.clone(), &block(&mask.shape(), start..end, keys));
                B::float_mask_fill(scores, block, f32::NEG_INFINITY.into())
            }
            None => scores,
        };
        // Causal: only the block's own square of keys (`start..end`) has keys past a row.
        let scores = if options.is_causal {
            let square = [
                Slice::from(..),
                Slice::from(..),
                Slice::from(..),
                Slice::new(start as isize, Some(end as isize), 1),
            ];
            let past = causal_mask::<B>(end - start, [batch, heads], &device);
            let masked = B::float_mask_fill(
                B::float_slice(scores.clone(), &square),
                past,
                f32::NEG_INFINITY.into(),
            );
            B::float_slice_assign(scores, &square, masked)
        } else {
            scores
        };
        let scores = match &bias {
            Some(bias) => B::float_add(
                scores,
                B::float_slice(bias.clone(), &block(&bias.shape(), start..end, keys)),
            ),
            None => scores,
        };
        let p = softmax_rows::<B>(scores);

        let block_grad_value = B::float_matmul(B::float_transpose(p.clone()), d_o.clone());
        grad_value = add_rows::<B>(grad_value, 0..keys, len_k, block_grad_value);
        let d_p = B::float_matmul(d_o, B::float_transpose(v));
        let row_dot = B::float_sum_dim(B::float_mul(p.clone(), d_p.clone()), 3);
        let d_s = B::float_mul(p, B::float_sub(d_p, row_dot));

        grad_query_blocks.push(B::float_mul_scalar(
            B::float_matmul(d_s.clone(), k),
            scale.into(),
        ));
        // `q` holds the scale already.
        let block_grad_key = B::float_matmul(B::float_transpose(d_s.clone()), q);
        grad_key = add_rows::<B>(grad_key, 0..keys, len_k, block_grad_key);
        if bias_grad {
            grad_bias_blocks.push(if keys < len_k {
                B::float_cat(vec![d_s, zeros([batch, heads, end - start, len_k - keys])], 3)
            } else {
                d_s
            });
        }
    }
    let grad_bias = match bias {
        Some(bias) if bias_grad => {
            let full = B::float_cat(grad_bias_blocks, 2);
            let (target, scores) = (bias.shape().dims::<4>(), [batch, heads, len_q, len_k]);
            let broadcast: Vec<usize> = (0..4)
                .filter(|&dim| target[dim] == 1 && scores[dim] > 1)
                .collect();
            Some(B::float_sum_dims(full, &broadcast))
        }
        _ => None,
    };
    AttentionGrads {
        query: B::float_cat(grad_query_blocks, 2),
        key: grad_key,
        value: grad_value,
        bias: grad_bias,
    }
}

/// Rows `range` of a `[batch, heads, len, width]` tensor.
fn rows(range: core::ops::Range<usize>) -> [Slice; 4] {
    [
        Slice::from(..),
        Slice::from(..),
        Slice::new(range.start as isize, Some(range.end as isize), 1),
        Slice::from(..),
    ]
}

/// The part of a mask or bias of `shape` (each axis full-size or broadcast) over query rows
/// `rows` and the first `keys` keys.
fn block(shape: &Shape, rows: core::ops::Range<usize>, keys: usize) -> [Slice; 4] {
    let dims = shape.dims::<4>();
    let span = |len: usize, range: core::ops::Range<usize>| {
        if len == 1 {
            Slice::from(..)
        } else {
            Slice::new(range.start as isize, Some(range.end as isize), 1)
        }
    };
    [
        Slice::from(..),
        Slice::from(..),
        span(dims[2], rows),
        span(dims[3], 0..keys),
    ]
}

/// `true` above the diagonal of an `n × n` square (key `j` past row `i`: `j > i`), over every
/// batch and head.
fn causal_mask<B: Backend>(n: usize, [batch, heads]: [usize; 2], device: &B::Device) -> BoolTensor<B> {
    let settings = get_or_init_device_settings::<B>(device);
    let index = || B::int_arange(0..n as i64, device, settings.int_dtype);
    let rows = B::int_reshape(index(), Shape::new([n, 1]));
    let cols = B::int_reshape(index(), Shape::new([1, n]));
    let past = B::bool_reshape(
        B::int_lower(rows, cols, settings.bool_dtype),
        Shape::new([1, 1, n, n]),
    );
    B::bool_expand(past, Shape::new([batch, heads, n, n]))
}

/// `softmax` over the last axis, 0 on fully masked rows, as `attention_fallback`'s.
fn softmax_rows<B: Backend>(scores: FloatTensor<B>) -> FloatTensor<B> {
    let finfo = scores.dtype().finfo().expect("float tensor");
    let max = B::float_clamp_min(B::float_max_dim(scores.clone(), 3), finfo.min.into());
    let numerator = B::float_exp(B::float_sub(scores, max));
    let sum = B::float_clamp_min(
        B::float_sum_dim(numerator.clone(), 3),
        finfo.min_positive.into(),
    );
    B::float_div(numerator, sum)
}

/// `acc[.., range, ..] += value` for an accumulator of `len` rows.
fn add_rows<B: Backend>(
    acc: FloatTensor<B>,
    range: core::ops::Range<usize>,
    len: usize,
    value: FloatTensor<B>,
) -> FloatTensor<B> {
    if range.len() == len {
        return B::float_add(acc, value);
    }
    let slices = rows(range);
    let sum = B::float_add(B::float_slice(acc.clone(), &slices), value);
    B::float_slice_assign(acc, &slices, sum)
}
