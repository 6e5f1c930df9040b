//! Attention (scaled dot-product) for CPU.
//!
//! Computes: softmax(Q @ K^T * scale + bias) @ V
//!
//! Two strategies, auto-selected by `attention()` based on sequence length:
//!
//! - **Naive** (seq_kv <= 8*TILE_KV): materializes full score matrix, two
//!   large gemm calls per (batch, head). Faster for short sequences.
//! - **Flash** (seq_kv > 8*TILE_KV): tiles over KV with online softmax,
//!   O(TILE_KV) scratch per row. Better cache behavior for long sequences.

use alloc::vec;
use alloc::vec::Vec;
use burn_backend::DType;
use burn_backend::ops::AttentionModuleOptions;
use burn_std::Bytes;
use bytemuck::Pod;
use num_traits::Float;

use crate::{FlexTensor, Layout};

/// KV tile size for flash attention.
///
/// attnzoo's patch: 256 (was 64). With queries in blocks of `Q_BLOCK`, a block's scores
/// (256 × 256 f32, 256 KiB) and the V tile stay in L2, and the value product's inner
/// dimension is 256 instead of 64: exact attention at T = 16,384 on 2 cores took 4.7 s with
/// 64, 4.0 s with 256, 3.9 s with 512 (causal: 2.5, 2.0–2.1, 2.1–2.3 s).
/// WASM targets use a smaller tile to stay within tighter cache budgets.
#[cfg(target_family = "wasm")]
const TILE_KV: usize = 32;
#[cfg(not(target_family = "wasm"))]
const TILE_KV: usize = 256;

/// Max score matrix size (in elements) for the naive path.
///
/// Naive attention materializes a [seq_q, seq_kv] score matrix per head.
/// When this exceeds the budget, flash attention is used instead.
/// 256K elements = 1 MB for f32, fits comfortably in L2.
const NAIVE_SCORE_BUDGET: usize = 256 * 1024;

/// Queries per block of the flash kernel (attnzoo's patch). gemm packs each key and value tile
/// once per block, so larger blocks pack less; a block's scores (1024 × 256 f32, 1 MiB) still
/// fit in L2. Exact attention at T = 16,384 on 2 cores: 3.7–3.9 s with 256, 3.5–3.6 s with
/// 1024, 3.5 s with 512 and 2048, interleaved runs.
const Q_BLOCK: usize = 1024;

/// Minimum total multiply-accumulates across both GEMMs for outer parallelism.
/// Smaller workloads cannot amortize Rayon scheduling and scratch allocation.
const PARALLEL_THRESHOLD: usize = 256 * 1024;

/// Auto-selecting attention: picks the fastest strategy based on sequence length.
///
/// Uses naive attention when the score matrix (seq_q * seq_kv) fits within
/// `NAIVE_SCORE_BUDGET`. Falls back to flash attention for larger shapes.
pub fn attention(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    mask: Option<FlexTensor>,
    attn_bias: Option<FlexTensor>,
    options: AttentionModuleOptions,
) -> FlexTensor {
    debug_assert!(
        query.layout().shape().num_dims() == 4,
        "attention: query must be 4D, got {}D",
        query.layout().shape().num_dims()
    );
    debug_assert!(
        key.layout().shape().num_dims() == 4,
        "attention: key must be 4D, got {}D",
        key.layout().shape().num_dims()
    );
    let seq_q = query.layout().shape()[2];
    let seq_kv = key.layout().shape()[2];
    if seq_q * seq_kv <= NAIVE_SCORE_BUDGET {
        return attention_naive(query, key, value, mask, attn_bias, options);
    }
    attention_flash(query, key, value, mask, attn_bias, options)
}

/// Dispatch attention by dtype, casting f16/bf16 to f32 for computation.
macro_rules! dispatch_attention_dtype {
    ($query:expr, $key:expr, $value:expr, $mask:expr, $attn_bias:expr, $options:expr, $impl_fn:ident) => {{
        let query = $query;
        let key = $key;
        let value = $value;
        let mask = $mask;
        let attn_bias = $attn_bias;
        let options = $options;
        let dtype = query.dtype();
        debug_assert_eq!(key.dtype(), dtype, "attention: key dtype mismatch");
        debug_assert_eq!(value.dtype(), dtype, "attention: value dtype mismatch");
        if let Some(ref b) = attn_bias {
            debug_assert_eq!(b.dtype(), dtype, "attention: attn_bias dtype mismatch");
        }
        match dtype {
            DType::F32 => $impl_fn::<f32>(query, key, value, mask, attn_bias, options),
            DType::F64 => $impl_fn::<f64>(query, key, value, mask, attn_bias, options),
            DType::F16 => {
                use burn_std::f16;
                let r = $impl_fn::<f32>(
                    cast_to_f32(query, f16::to_f32),
                    cast_to_f32(key, f16::to_f32),
                    cast_to_f32(value, f16::to_f32),
                    mask,
                    attn_bias.map(|b| cast_to_f32(b, f16::to_f32)),
                    options,
                );
                cast_from_f32(r, f16::from_f32)
            }
            DType::BF16 => {
                use burn_std::bf16;
                let r = $impl_fn::<f32>(
                    cast_to_f32(query, bf16::to_f32),
                    cast_to_f32(key, bf16::to_f32),
                    cast_to_f32(value, bf16::to_f32),
                    mask,
                    attn_bias.map(|b| cast_to_f32(b, bf16::to_f32)),
                    options,
                );
                cast_from_f32(r, bf16::from_f32)
            }
            dtype => panic!("attention: unsupported dtype {:?}", dtype),
        }
    }};
}

/// Contiguous mask/bias tensor plus the per-batch and per-head element offsets the
/// inner loop should use to locate the `[seq_q, seq_kv]` tile for each `(batch, head)`
/// pair. When a leading dim (batch or heads) is `1` in the source, its step is `0`, so
/// the inner loop re-reads the same tile for every pair without allocating an expanded
/// copy. The tile length itself is always `seq_q * seq_kv` and is computed at the call
/// site, so it is not stored here.
struct BroadcastMaskBias {
    tensor: FlexTensor,
    batch_step: usize,
    head_step: usize,
}

/// Prepare an attention mask or bias for the inner loop, accepting ONNX Attention-23
/// broadcast shapes.
///
/// Stride-0 along the leading `[batch, heads]` dims is handled without materializing,
/// so the common ONNX patterns (`[1, 1, seq_q, seq_kv]`, `[batch, 1, seq_q, seq_kv]`,
/// `[1, heads, seq_q, seq_kv]`) stay zero-copy. That matters especially for the flash
/// path, where materializing an expanded mask/bias would allocate a full
/// `[batch, heads, seq_q, seq_kv]` buffer and negate flash attention's memory
/// efficiency. If the trailing `[seq_q, seq_kv]` dims are themselves broadcast (rare in
/// practice), we fall back to `expand` + `to_contiguous` so the tile stays contiguous
/// in memory for the inner loop's slice-based access.
fn broadcast_attn_mask_bias(
    tensor: FlexTensor,
    target: [usize; 4],
    name: &'static str,
) -> BroadcastMaskBias {
    let ndim = tensor.layout().shape().num_dims();
    assert!(ndim == 4, "attention: {name} must be 4D, got {ndim}D");
    let shape = tensor.layout().shape();
    let src = [shape[0], shape[1], shape[2], shape[3]];
    for i in 0..4 {
        assert!(
            src[i] == target[i] || src[i] == 1,
            "attention: {name} dim {i} must be {} or 1, got {}",
            target[i],
            src[i]
        );
    }

    let tile_len = target[2] * target[3];

    // Broadcast on seq_q or seq_kv: the source's trailing tile has fewer elements
    // than `tile_len`, so per-pair slice access would under-read. Materialize via
    // expand + to_contiguous in that case.
    if src[2] != target[2] || src[3] != target[3] {
        let expanded = crate::ops::expand::expand(tensor, burn_std::Shape::new(target));
        return BroadcastMaskBias {
            tensor: expanded.to_contiguous(),
            batch_step: target[1] * tile_len,
            head_step: tile_len,
        };
    }

    // Trailing dims match the target. Keep the source at its own shape (size
    // `src[0] * src[1] * tile_len`) and zero-out the step for any leading dim of 1.
    BroadcastMaskBias {
        tensor: tensor.to_contiguous(),
        batch_step: if src[0] == 1 { 0 } else { src[1] * tile_len },
        head_step: if src[1] == 1 { 0 } else { tile_len },
    }
}

/// Flash attention: tiled computation with online softmax. Use directly to bypass auto-selection.
pub fn attention_flash(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    mask: Option<FlexTensor>,
    attn_bias: Option<FlexTensor>,
    options: AttentionModuleOptions,
) -> FlexTensor {
    super::matmul::pack_lhs_blocks(); // attnzoo's patch
    dispatch_attention_dtype!(query, key, value, mask, attn_bias, options, attention_impl)
}

fn cast_to_f32<E: burn_backend::Element + Pod + Copy>(
    tensor: FlexTensor,
    to_f32: fn(E) -> f32,
) -> FlexTensor {
    let tensor = tensor.to_contiguous();
    let shape = tensor.layout().shape().clone();
    let data: &[E] = tensor.storage();
    let f32_data: Vec<f32> = data.iter().map(|&v| to_f32(v)).collect();
    FlexTensor::new(
        Bytes::from_elems(f32_data),
        Layout::contiguous(shape),
        DType::F32,
    )
}

fn cast_from_f32<E: burn_backend::Element + Pod + Copy>(
    tensor: FlexTensor,
    from_f32: fn(f32) -> E,
) -> FlexTensor {
    let tensor = tensor.to_contiguous();
    let shape = tensor.layout().shape().clone();
    let data: &[f32] = tensor.storage();
    let half_data: Vec<E> = data.iter().map(|&v| from_f32(v)).collect();
    FlexTensor::new(
        Bytes::from_elems(half_data),
        Layout::contiguous(shape),
        E::dtype(),
    )
}

/// Flash attention: tiled computation that avoids materializing the full scores matrix.
///
/// Input shapes (all 4D):
///   query: \[batch, heads, seq_q, head_dim\]
///   key:   \[batch, heads, seq_kv, head_dim\]
///   value: \[batch, heads, seq_kv, val_dim\]
///   mask:  \[batch, heads, seq_q, seq_kv\] (optional, u8 where nonzero = masked out)
///   attn_bias: \[batch, heads, seq_q, seq_kv\] (optional)
///
/// Output: \[batch, heads, seq_q, val_dim\]
///
/// Algorithm per (batch, head):
///   For each KV tile of size TILE_KV:
///     1. Score matmul: scores\[seq_q, tile_kv\] = Q @ K_tile^T  (gemm)
///     2. Per query row: apply scale, softcap, mask, bias
///     3. Per query row: online softmax update (running max/sum, rescale accumulator)
///     4. Value matmul: output += P @ V_tile  (gemm)
///   Final: output\[qi\] /= row_sum\[qi\] for each query row
fn attention_impl<T>(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    mask: Option<FlexTensor>,
    attn_bias: Option<FlexTensor>,
    options: AttentionModuleOptions,
) -> FlexTensor
where
    T: FlashGemm + burn_backend::Element,
{
    if let Some(softcap) = options.softcap {
        assert!(softcap > 0.0, "softcap must be positive, got {softcap}");
    }

    let (query, q_rows) = HeadRows::of(query);
    let (key, k_rows) = HeadRows::of(key);
    let (value, v_rows) = HeadRows::of(value);

    let q_shape = query.layout().shape();
    let k_shape = key.layout().shape();
    let v_shape = value.layout().shape();
    assert!(q_shape.num_dims() == 4, "attention: query must be 4D");
    assert!(k_shape.num_dims() == 4, "attention: key must be 4D");
    assert!(v_shape.num_dims() == 4, "attention: value must be 4D");

    let batch = q_shape[0];
    let heads = q_shape[1];
    let seq_q = q_shape[2];
    let head_dim = q_shape[3];
    assert!(head_dim > 0, "attention: head_dim must be non-zero");

    let seq_kv = k_shape[2];
    let val_dim = v_shape[3];
    let kv_heads = k_shape[1];

    assert_eq!(k_shape[0], batch, "attention: key batch mismatch");
    assert_eq!(k_shape[3], head_dim, "attention: key head_dim mismatch");
    assert_eq!(v_shape[0], batch, "attention: value batch mismatch");
    assert_eq!(
        v_shape[1], kv_heads,
        "attention: key and value must agree on head count"
    );
    assert_eq!(v_shape[2], seq_kv, "attention: value seq_kv mismatch");
    // GQA/MQA: each K/V head is shared by `q_per_kv` query heads; MHA is just
    // `q_per_kv == 1`. ONNX `Attention` spec requires `q_heads % kv_heads == 0`.
    assert!(
        kv_heads > 0 && heads.is_multiple_of(kv_heads),
        "attention: q_heads ({heads}) must be divisible by kv_heads ({kv_heads})"
    );
    let q_per_kv = heads / kv_heads;

    let target = [batch, heads, seq_q, seq_kv];
    let mask_bcast = mask.map(|m| broadcast_attn_mask_bias(m, target, "mask"));
    let bias_bcast = attn_bias.map(|b| broadcast_attn_mask_bias(b, target, "bias"));

    let scale = T::from(
        options
            .scale
            .unwrap_or_else(|| 1.0 / (head_dim as f64).sqrt()),
    )
    .unwrap();
    let softcap: Option<T> = options.softcap.map(|s| T::from(s).unwrap());
    let causal_offset = if options.is_causal {
        Some(seq_kv as isize - seq_q as isize)
    } else {
        None
    };

    let q_data: &[T] = query.storage();
    let k_data: &[T] = key.storage();
    let v_data: &[T] = value.storage();
    let mask_data: Option<&[u8]> = mask_bcast.as_ref().map(|b| b.tensor.bytes());
    let bias_data: Option<&[T]> = bias_bcast.as_ref().map(|b| b.tensor.storage());
    let (mask_batch_step, mask_head_step) = mask_bcast
        .as_ref()
        .map(|b| (b.batch_step, b.head_step))
        .unwrap_or((0, 0));
    let (bias_batch_step, bias_head_step) = bias_bcast
        .as_ref()
        .map(|b| (b.batch_step, b.head_step))
        .unwrap_or((0, 0));

    let mut output = vec![T::zero(); batch * heads * seq_q * val_dim];
    let o_rows = HeadRows::output_like(&q_rows, heads, seq_q, val_dim);

    let mask_tile_len = seq_q * seq_kv;

    if output.is_empty() || seq_kv == 0 {
        return FlexTensor::new(
            Bytes::from_elems(output),
            Layout::contiguous(burn_std::Shape::from(vec![batch, heads, seq_q, val_dim])),
            T::dtype(),
        );
    }

    let params = AttentionParams {
        scale,
        softcap,
        causal_offset,
        seq_q,
        seq_kv,
        head_dim,
        val_dim,
        rows: RowStrides {
            q: q_rows.row,
            k: k_rows.row,
            v: v_rows.row,
            o: o_rows.row,
        },
    };

    // Safety: `o_head` points at this head's first output row; no two heads write one element.
    let run_head = |scratch: &mut ScratchBuffers<T>, head_idx: usize, o_head: *mut T| {
        let b = head_idx / heads;
        let h = head_idx % heads;
        // Map query head `h` to its shared K/V head (GQA/MQA).
        let kv_h = h / q_per_kv;
        let q_data = &q_data[q_rows.start(b, h)..];
        let k_data = &k_data[k_rows.start(b, kv_h)..];
        let v_data = &v_data[v_rows.start(b, kv_h)..];
        let mask_off = b * mask_batch_step + h * mask_head_step;
        let bias_off = b * bias_batch_step + h * bias_head_step;

        // attnzoo's patch: queries in blocks of `Q_BLOCK`, so that a block's output rows and
        // running maxima stay in cache while the key tiles stream past; one pass over all
        // queries per key tile read and wrote the whole `[seq_q, val_dim]` output each time.
        let mask_data = mask_data.map(|m| &m[mask_off..mask_off + mask_tile_len]);
        let bias_data = bias_data.map(|bd| &bd[bias_off..bias_off + mask_tile_len]);
        for q_start in (0..seq_q).step_by(Q_BLOCK) {
            let q_end = (q_start + Q_BLOCK).min(seq_q);
            let mask_rows = q_start * seq_kv..q_end * seq_kv;
            unsafe {
                flash_attention_head(
                    &q_data[q_start * q_rows.row..],
                    k_data,
                    v_data,
                    o_head.add(q_start * o_rows.row),
                    mask_data.map(|m| &m[mask_rows.clone()]),
                    bias_data.map(|bd| &bd[mask_rows]),
                    &AttentionParams {
                        seq_q: q_end - q_start,
                        causal_offset: causal_offset.map(|offset| offset + q_start as isize),
                        ..params
                    },
                    scratch,
                );
            }
        }
    };
    let parallel = params.should_parallelize(batch * heads);
    let scratch = || ScratchBuffers::new(seq_q.min(Q_BLOCK));
    for_each_head(
        (output.as_mut_ptr(), output.len()),
        &o_rows,
        [batch, heads],
        parallel,
        scratch,
        run_head,
    );
    o_rows.into_tensor(output, [batch, heads, seq_q, val_dim])
}

/// Gemm dispatch for flash attention block matmuls.
///
/// Wraps `gemm::gemm` for f32 and f64 so `flash_attention_head` stays generic.
/// Convention: dst = alpha * dst + beta * (lhs @ rhs)
trait FlashGemm: Float + Pod + Copy + core::ops::AddAssign + Send + Sync {
    /// Block matrix multiply used for score and value matmuls.
    ///
    /// # Safety
    /// All pointers must be valid for the given dimensions and strides.
    unsafe fn block_gemm(args: BlockGemmArgs<Self>);

    /// `row[i] = exp(row[i] - max)`; returns the sum of the new row.
    ///
    /// attnzoo's patch: the `f32` implementation is one vectorised pass that also sums
    /// (`fast_math::exp_shifted_sum`); the per-element scalar `exp` was about half of the flash
    /// kernel's time.
    fn exp_shifted_sum(row: &mut [Self], max: Self) -> Self {
        let mut sum = Self::zero();
        for s in row.iter_mut() {
            *s = (*s - max).exp();
            sum += *s;
        }
        sum
    }

    /// The largest element of `row` (`-∞` for an empty or all-masked row).
    fn row_max(row: &[Self]) -> Self {
        row.iter()
            .fold(Self::neg_infinity(), |max, &x| if x > max { x } else { max })
    }
}

/// Softcap, mask, causal limit and bias applied to a row of scores, in that order, each as its
/// own loop over the row (which the compiler vectorises, where one loop testing every option per
/// element did not); returns the row's maximum. `causal_end`: keys from that index on are masked
/// (negative: all). The row comes scaled: the score product multiplies by the scale as it writes
/// (gemm's `beta`, the same rounding as a pass of its own).
///
/// attnzoo's patch, with [`FlashGemm::exp_shifted_sum`].
#[inline]
fn prepare_scores<T: FlashGemm>(
    row: &mut [T],
    softcap: Option<T>,
    mask: Option<&[u8]>,
    causal_end: Option<isize>,
    bias: Option<&[T]>,
) -> T {
    let neg_inf = T::neg_infinity();
    if let Some(cap) = softcap {
        row.iter_mut().for_each(|s| *s = cap * (*s / cap).tanh());
    }
    if let Some(mask) = mask {
        for (s, &m) in row.iter_mut().zip(mask) {
            *s = if m != 0 { neg_inf } else { *s };
        }
    }
    if let Some(end) = causal_end {
        let end = end.clamp(0, row.len() as isize) as usize;
        row[end..].fill(neg_inf);
    }
    if let Some(bias) = bias {
        row.iter_mut().zip(bias).for_each(|(s, &b)| *s += b);
    }
    T::row_max(row)
}

/// Arguments for a block matrix multiply: dst = alpha * dst + beta * (lhs @ rhs).
struct BlockGemmArgs<T> {
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_cs: isize,
    dst_rs: isize,
    read_dst: bool,
    lhs: *const T,
    lhs_cs: isize,
    lhs_rs: isize,
    rhs: *const T,
    rhs_cs: isize,
    rhs_rs: isize,
    alpha: T,
    beta: T,
}

macro_rules! impl_flash_gemm {
    ($ty:ty $(, $($fast:item)*)?) => {
        impl FlashGemm for $ty {
            $($($fast)*)?

            unsafe fn block_gemm(a: BlockGemmArgs<Self>) {
                unsafe {
                    gemm::gemm(
                        a.m,
                        a.n,
                        a.k,
                        a.dst,
                        a.dst_cs,
                        a.dst_rs,
                        a.read_dst,
                        a.lhs,
                        a.lhs_cs,
                        a.lhs_rs,
                        a.rhs,
                        a.rhs_cs,
                        a.rhs_rs,
                        a.alpha,
                        a.beta,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    );
                }
            }
        }
    };
}

impl_flash_gemm!(
    f32,
    fn exp_shifted_sum(row: &mut [f32], max: f32) -> f32 {
        super::fast_math::exp_shifted_sum(row, max)
    }

    #[cfg(feature = "simd")]
    fn row_max(row: &[f32]) -> f32 {
        crate::simd::kernels::max_f32(row)
    }
);
impl_flash_gemm!(f64);

/// Scratch buffers reused across heads within a Rayon job or the serial loop.
struct ScratchBuffers<T> {
    row_max: Vec<T>,
    row_sum: Vec<T>,
    scores: Vec<T>,
}

impl<T: Float + Copy> ScratchBuffers<T> {
    /// Allocate a fresh set of scratch buffers sized for `seq_q` query rows.
    ///
    /// Parallel execution allocates per Rayon job, which may happen more than
    /// once per worker. Serial execution allocates once for the whole operation.
    fn new(seq_q: usize) -> Self {
        Self {
            row_max: vec![T::neg_infinity(); seq_q],
            row_sum: vec![T::zero(); seq_q],
            scores: vec![T::zero(); seq_q * TILE_KV],
        }
    }
}

/// Parameters for a single (batch, head) flash attention computation.
struct AttentionParams<T> {
    scale: T,
    softcap: Option<T>,
    causal_offset: Option<isize>,
    seq_q: usize,
    seq_kv: usize,
    head_dim: usize,
    val_dim: usize,
    rows: RowStrides,
}

/// Elements between consecutive rows of one head's query, key, value and output (attnzoo's
/// patch, [`HeadRows`]).
#[derive(Clone, Copy)]
struct RowStrides {
    q: usize,
    k: usize,
    v: usize,
    o: usize,
}

impl<T> AttentionParams<T> {
    fn should_parallelize(&self, num_heads: usize) -> bool {
        let work = num_heads
            .saturating_mul(self.seq_q)
            .saturating_mul(self.seq_kv)
            .saturating_mul(self.head_dim.saturating_add(self.val_dim));
        cfg!(feature = "rayon") && num_heads > 1 && work >= PARALLEL_THRESHOLD
    }
}

/// Where the rows of one `[batch, heads, seq, dim]` operand of attention lie in its storage
/// (attnzoo's patch). Multi-head attention splits its projections `[batch, seq, heads · dim]`
/// into heads with a reshape and a swap of axes: a view whose rows are `heads · dim` apart. The
/// kernels read such rows where they lie (gemm takes any row stride) instead of copying each
/// operand into contiguous heads, and write the output in the query's order of axes, so that
/// merging the heads again (`swap_dims(1, 2)` and a reshape) is a view as well.
#[derive(Clone, Copy)]
struct HeadRows {
    offset: usize,
    batch: usize,
    head: usize,
    row: usize,
}

impl HeadRows {
    /// `tensor` as it lies when its rows are contiguous and no stride is negative, else a
    /// contiguous copy; and where its rows are.
    fn of(tensor: FlexTensor) -> (FlexTensor, Self) {
        let layout = tensor.layout();
        assert_eq!(layout.num_dims(), 4, "attention: operands must be 4D");
        let tensor = if layout.strides()[3] == 1 && layout.has_positive_strides() {
            tensor
        } else {
            tensor.to_contiguous()
        };
        let layout = tensor.layout();
        let strides = layout.strides();
        let rows = Self {
            offset: layout.start_offset(),
            batch: strides[0] as usize,
            head: strides[1] as usize,
            row: strides[2] as usize,
        };
        (tensor, rows)
    }

    /// The output's rows, contiguous in the query's order of axes: `[batch, seq_q, heads,
    /// val_dim]` when the query's heads lie within its rows, else `[batch, heads, seq_q, val_dim]`.
    fn output_like(query: &Self, heads: usize, seq_q: usize, val_dim: usize) -> Self {
        let (head, row) = if query.head < query.row {
            (val_dim, heads * val_dim)
        } else {
            (seq_q * val_dim, val_dim)
        };
        Self {
            offset: 0,
            batch: heads * seq_q * val_dim,
            head,
            row,
        }
    }

    /// The storage index of the first row of `head` in `batch`.
    fn start(&self, batch: usize, head: usize) -> usize {
        self.offset + batch * self.batch + head * self.head
    }

    /// The output tensor `[batch, heads, seq_q, val_dim]` over `data`, laid out as `self`.
    fn into_tensor<T: burn_backend::Element + Pod>(
        self,
        data: Vec<T>,
        shape: [usize; 4],
    ) -> FlexTensor {
        let strides = [self.batch, self.head, self.row, 1].map(|s| s as isize);
        FlexTensor::new(
            Bytes::from_elems(data),
            Layout::new(burn_std::Shape::from(shape.to_vec()), strides.to_vec(), 0),
            T::dtype(),
        )
    }
}

/// Runs `run_head(scratch, index, first output row)` for each of the `batch · heads` pairs, on
/// rayon's threads when `parallel` (each job with its own `scratch()`), else one after another.
/// `run_head` must write only the rows of its own head. `output` holds `len` elements, not
/// necessarily initialised (the naive kernel writes every one).
fn for_each_head<T, S>(
    (output, len): (*mut T, usize),
    rows: &HeadRows,
    [batch, heads]: [usize; 2],
    parallel: bool,
    scratch: impl Fn() -> S + Send + Sync,
    run_head: impl Fn(&mut S, usize, *mut T) + Send + Sync,
) {
    let start = |index: usize| rows.start(index / heads, index % heads);
    debug_assert!(batch * heads == 0 || start(batch * heads - 1) < len);
    #[cfg(feature = "rayon")]
    if parallel {
        use rayon::prelude::*;
        let output = super::SendMutPtr::new(output);
        (0..batch * heads)
            .into_par_iter()
            .for_each_init(scratch, |s, index| {
                run_head(s, index, unsafe { output.ptr_add(start(index)) })
            });
        return;
    }
    let _ = parallel;
    let mut s = scratch();
    for index in 0..batch * heads {
        run_head(&mut s, index, unsafe { output.add(start(index)) });
    }
}

/// Process a single (batch, head) pair with flash attention.
///
/// Uses gemm for the two block matmuls per tile:
///   1. Score matmul: scores\[seq_q, tile_kv\] = Q @ K_tile^T
///   2. Value matmul: output += P @ V_tile (where P = exp(scores - max))
///
/// The online softmax (scale, mask, bias, exp, correction) is applied
/// row-by-row between the two gemm calls.
///
/// `q`, `k` and `v` start at the head's first row, their rows `p.rows` apart ([`HeadRows`]).
///
/// # Safety
/// `output` must be valid for `p.seq_q` rows of `p.val_dim` elements, `p.rows.o` apart, that no
/// one else reads or writes meanwhile.
#[allow(clippy::too_many_arguments)]
unsafe fn flash_attention_head<T: FlashGemm>(
    q: &[T],
    k: &[T],
    v: &[T],
    output: *mut T,
    mask: Option<&[u8]>,
    bias: Option<&[T]>,
    p: &AttentionParams<T>,
    scratch: &mut ScratchBuffers<T>,
) {
    debug_assert!(q.len() >= (p.seq_q - 1) * p.rows.q + p.head_dim);
    debug_assert!(k.len() >= (p.seq_kv - 1) * p.rows.k + p.head_dim);
    debug_assert!(v.len() >= (p.seq_kv - 1) * p.rows.v + p.val_dim);

    let neg_inf = T::neg_infinity();
    let AttentionParams {
        scale,
        softcap,
        causal_offset,
        seq_q,
        seq_kv,
        head_dim,
        val_dim,
        rows,
    } = *p;
    // Safety: the caller's contract on `output`.
    let out_row =
        |qi: usize| unsafe { core::slice::from_raw_parts_mut(output.add(qi * rows.o), val_dim) };

    // Reset scratch buffers for this (batch, head) pair
    let row_max = &mut scratch.row_max;
    row_max.fill(neg_inf);
    let row_sum = &mut scratch.row_sum;
    row_sum.fill(T::zero());
    let scores = &mut scratch.scores;

    let num_kv_tiles = seq_kv.div_ceil(TILE_KV);

    for tile_idx in 0..num_kv_tiles {
        let kv_start = tile_idx * TILE_KV;
        let kv_end = (kv_start + TILE_KV).min(seq_kv);
        let tile_kv = kv_end - kv_start;
        // attnzoo's patch: under a causal mask, the queries before `q_first` see no key of this
        // tile; their rows would be all masked and leave the running state as it is, so neither
        // product computes them (about half the work of a causal head).
        let q_first = causal_offset.map_or(0, |offset| {
            (kv_start as isize - offset).clamp(0, seq_q as isize) as usize
        });
        if q_first == seq_q {
            continue;
        }

        // Step 1: Score matmul via gemm, scaled as gemm writes it (`beta`)
        // scores[seq_q, tile_kv] = scale * Q[seq_q, head_dim] @ K_tile[tile_kv, head_dim]^T
        //
        // Q's rows are rows.q apart: rs=rows.q, cs=1
        // K_tile^T: treat K[tile_kv, head_dim] with swapped strides
        //   K: rs=rows.k, cs=1 -> K^T: rs=1, cs=rows.k
        // scores row-major [seq_q, tile_kv]: rs=tile_kv, cs=1
        unsafe {
            T::block_gemm(BlockGemmArgs {
                m: seq_q - q_first,
                n: tile_kv,
                k: head_dim,
                dst: scores.as_mut_ptr().add(q_first * tile_kv),
                dst_cs: 1,
                dst_rs: tile_kv as isize,
                read_dst: false,
                lhs: q.as_ptr().add(q_first * rows.q),
                lhs_cs: 1,
                lhs_rs: rows.q as isize,
                rhs: k.as_ptr().add(kv_start * rows.k),
                rhs_cs: rows.k as isize,
                rhs_rs: 1,
                alpha: T::zero(),
                beta: scale,
            });
        }

        // Step 2: Apply softcap/mask/bias, online softmax, rescale output
        for qi in q_first..seq_q {
            let score_row = &mut scores[qi * tile_kv..(qi + 1) * tile_kv];

            let keys = qi * seq_kv + kv_start..qi * seq_kv + kv_end;
            let tile_max = prepare_scores(
                score_row,
                softcap,
                mask.map(|m| &m[keys.clone()]),
                causal_offset.map(|offset| qi as isize + offset + 1 - kv_start as isize),
                bias.map(|b| &b[keys]),
            );

            if tile_max == neg_inf {
                // All masked: zero out scores so gemm contributes nothing
                for score in score_row.iter_mut() {
                    *score = T::zero();
                }
                continue;
            }

            let new_max = if row_max[qi] > tile_max {
                row_max[qi]
            } else {
                tile_max
            };

            let tile_sum = T::exp_shifted_sum(score_row, new_max);

            // Rescale the output accumulator; the row's first visible tile writes it instead
            // (attnzoo's patch): the output comes zeroed from the allocator, and a zeroed page
            // read before its first write is mapped to the shared zero page, so that the write
            // then copies it and flushes the page from every core's TLB (an interrupt to the
            // other threads). Exact attention at T = 16,384 on 2 cores, 8 heads: 2.6 s reading the
            // output first, 2.4 s writing it (causal: 1.4 s, 1.2–1.3 s).
            let correction = if row_max[qi] == neg_inf {
                out_row(qi).fill(T::zero());
                T::zero()
            } else {
                let correction = (row_max[qi] - new_max).exp();
                for o in out_row(qi).iter_mut() {
                    *o = *o * correction;
                }
                correction
            };

            row_sum[qi] = row_sum[qi] * correction + tile_sum;
            row_max[qi] = new_max;
        }

        // Step 3: Value matmul via gemm
        // output[seq_q, val_dim] += P[seq_q, tile_kv] @ V_tile[tile_kv, val_dim]
        //
        // P (scores buffer) row-major: rs=tile_kv, cs=1
        // V_tile [tile_kv, val_dim]: rs=rows.v, cs=1
        // output [seq_q, val_dim]: rs=rows.o, cs=1
        //
        // dst = 1.0 * dst + 1.0 * P @ V  (accumulate)
        unsafe {
            T::block_gemm(BlockGemmArgs {
                m: seq_q - q_first,
                n: val_dim,
                k: tile_kv,
                dst: output.add(q_first * rows.o),
                dst_cs: 1,
                dst_rs: rows.o as isize,
                read_dst: true,
                lhs: scores.as_ptr().add(q_first * tile_kv),
                lhs_cs: 1,
                lhs_rs: tile_kv as isize,
                rhs: v.as_ptr().add(kv_start * rows.v),
                rhs_cs: 1,
                rhs_rs: rows.v as isize,
                alpha: T::one(),
                beta: T::one(),
            });
        }
    }

    // Final normalization: output /= row_sum
    for qi in 0..seq_q {
        let sum = row_sum[qi];
        if sum > T::zero() {
            let inv_sum = T::one() / sum;
            for o in out_row(qi).iter_mut() {
                *o = *o * inv_sum;
            }
        }
        // sum == 0 means all positions masked; output stays zero
    }
}

/// Naive attention: mathematically equivalent to flash but without KV tiling.
///
/// Materializes the full [seq_q, seq_kv] score matrix, applies scale/softcap/mask/causal/bias,
/// row-wise softmax, then a single output matmul. Two large gemm calls per (batch, head).
///
/// Faster than flash for short sequences. Also useful as a benchmarking baseline.
pub fn attention_naive(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    mask: Option<FlexTensor>,
    attn_bias: Option<FlexTensor>,
    options: AttentionModuleOptions,
) -> FlexTensor {
    dispatch_attention_dtype!(
        query,
        key,
        value,
        mask,
        attn_bias,
        options,
        attention_naive_impl
    )
}

fn attention_naive_impl<T>(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    mask: Option<FlexTensor>,
    attn_bias: Option<FlexTensor>,
    options: AttentionModuleOptions,
) -> FlexTensor
where
    T: FlashGemm + burn_backend::Element,
{
    if let Some(softcap) = options.softcap {
        assert!(softcap > 0.0, "softcap must be positive, got {softcap}");
    }

    let (query, q_rows) = HeadRows::of(query);
    let (key, k_rows) = HeadRows::of(key);
    let (value, v_rows) = HeadRows::of(value);

    let q_shape = query.layout().shape();
    let k_shape = key.layout().shape();
    let v_shape = value.layout().shape();
    assert!(q_shape.num_dims() == 4, "attention_naive: query must be 4D");
    assert!(k_shape.num_dims() == 4, "attention_naive: key must be 4D");
    assert!(v_shape.num_dims() == 4, "attention_naive: value must be 4D");

    let batch = q_shape[0];
    let heads = q_shape[1];
    let seq_q = q_shape[2];
    let head_dim = q_shape[3];
    assert!(head_dim > 0, "attention_naive: head_dim must be non-zero");

    let seq_kv = k_shape[2];
    let val_dim = v_shape[3];
    let kv_heads = k_shape[1];

    assert_eq!(k_shape[0], batch, "attention_naive: key batch mismatch");
    assert_eq!(
        k_shape[3], head_dim,
        "attention_naive: key head_dim mismatch"
    );
    assert_eq!(v_shape[0], batch, "attention_naive: value batch mismatch");
    assert_eq!(
        v_shape[1], kv_heads,
        "attention_naive: key and value must agree on head count"
    );
    assert_eq!(v_shape[2], seq_kv, "attention_naive: value seq_kv mismatch");
    // GQA/MQA: each K/V head is shared by `q_per_kv` query heads; MHA is just
    // `q_per_kv == 1`. ONNX `Attention` spec requires `q_heads % kv_heads == 0`.
    assert!(
        kv_heads > 0 && heads.is_multiple_of(kv_heads),
        "attention_naive: q_heads ({heads}) must be divisible by kv_heads ({kv_heads})"
    );
    let q_per_kv = heads / kv_heads;

    let target = [batch, heads, seq_q, seq_kv];
    let mask_bcast = mask.map(|m| broadcast_attn_mask_bias(m, target, "mask"));
    let bias_bcast = attn_bias.map(|b| broadcast_attn_mask_bias(b, target, "bias"));

    let scale = T::from(
        options
            .scale
            .unwrap_or_else(|| 1.0 / (head_dim as f64).sqrt()),
    )
    .unwrap();
    let softcap: Option<T> = options.softcap.map(|s| T::from(s).unwrap());
    let causal_offset = if options.is_causal {
        Some(seq_kv as isize - seq_q as isize)
    } else {
        None
    };

    let q_data: &[T] = query.storage();
    let k_data: &[T] = key.storage();
    let v_data: &[T] = value.storage();
    let mask_data: Option<&[u8]> = mask_bcast.as_ref().map(|b| b.tensor.bytes());
    let bias_data: Option<&[T]> = bias_bcast.as_ref().map(|b| b.tensor.storage());
    let (mask_batch_step, mask_head_step) = mask_bcast
        .as_ref()
        .map(|b| (b.batch_step, b.head_step))
        .unwrap_or((0, 0));
    let (bias_batch_step, bias_head_step) = bias_bcast
        .as_ref()
        .map(|b| (b.batch_step, b.head_step))
        .unwrap_or((0, 0));

    let out_len = batch * heads * seq_q * val_dim;
    let o_rows = HeadRows::output_like(&q_rows, heads, seq_q, val_dim);

    let mask_tile_len = seq_q * seq_kv;

    if out_len == 0 || seq_kv == 0 {
        return FlexTensor::new(
            Bytes::from_elems(vec![T::zero(); out_len]),
            Layout::contiguous(burn_std::Shape::from(vec![batch, heads, seq_q, val_dim])),
            T::dtype(),
        );
    }
    // attnzoo's patch: uninitialised, as a product's output ([`super::matmul`]): the value
    // product writes every element (a fully masked row's weights are zeros), so zeroing it first
    // was a pass over the whole output for nothing.
    let mut output = Vec::with_capacity(out_len);

    let params = AttentionParams {
        scale,
        softcap,
        causal_offset,
        seq_q,
        seq_kv,
        head_dim,
        val_dim,
        rows: RowStrides {
            q: q_rows.row,
            k: k_rows.row,
            v: v_rows.row,
            o: o_rows.row,
        },
    };

    // Safety: `o_head` points at this head's first output row; no two heads write one element.
    let run_head = |scores: &mut Vec<T>, head_idx: usize, o_head: *mut T| {
        let b = head_idx / heads;
        let h = head_idx % heads;
        // Map query head `h` to its shared K/V head (GQA/MQA).
        let kv_h = h / q_per_kv;
        let q_data = &q_data[q_rows.start(b, h)..];
        let k_data = &k_data[k_rows.start(b, kv_h)..];
        let v_data = &v_data[v_rows.start(b, kv_h)..];
        let mask_off = b * mask_batch_step + h * mask_head_step;
        let bias_off = b * bias_batch_step + h * bias_head_step;

        unsafe {
            naive_attention_head(
                q_data,
                k_data,
                v_data,
                o_head,
                scores,
                &params,
                (
                    mask_data.map(|m| &m[mask_off..mask_off + mask_tile_len]),
                    bias_data.map(|bd| &bd[bias_off..bias_off + mask_tile_len]),
                ),
            );
        }
    };
    let parallel = params.should_parallelize(batch * heads);
    let scratch = || vec![T::zero(); seq_q * (seq_kv + 1)];
    for_each_head(
        (output.as_mut_ptr(), out_len),
        &o_rows,
        [batch, heads],
        parallel,
        scratch,
        run_head,
    );
    // SAFETY: every head's value product wrote its `seq_q` rows of `val_dim` elements, and the
    // heads' rows together are the whole output.
    unsafe { output.set_len(out_len) };
    o_rows.into_tensor(output, [batch, heads, seq_q, val_dim])
}

/// Process a single (batch, head) pair with naive (non-tiled) attention.
///
/// 1. scores[seq_q, seq_kv] = scale * Q @ K^T      (one gemm)
/// 2. Apply softcap/mask/causal/bias, then exp(s - max) and its sum (per row)
/// 3. output[seq_q, val_dim] = scores @ V            (one gemm)
/// 4. Each output row divided by its sum
///
/// `q`, `k` and `v` start at the head's first row, their rows `p.rows` apart ([`HeadRows`]).
/// `scratch` holds `seq_q · (seq_kv + 1)` elements: the scores, then each row's `1 / sum`.
///
/// attnzoo's patch: step 4 was each weight divided by its row's sum before the product, a pass
/// over `seq_kv` elements per row where this one is over `val_dim` (the flash kernel's order).
///
/// # Safety
/// `output` must be valid for `p.seq_q` rows of `p.val_dim` elements, `p.rows.o` apart, that no
/// one else reads or writes meanwhile.
unsafe fn naive_attention_head<T: FlashGemm>(
    q: &[T],
    k: &[T],
    v: &[T],
    output: *mut T,
    scratch: &mut [T],
    p: &AttentionParams<T>,
    mask_bias: (Option<&[u8]>, Option<&[T]>),
) {
    let (mask, bias) = mask_bias;
    let neg_inf = T::neg_infinity();
    let AttentionParams {
        scale,
        softcap,
        causal_offset,
        seq_q,
        seq_kv,
        head_dim,
        val_dim,
        rows,
    } = *p;
    debug_assert!(q.len() >= (seq_q - 1) * rows.q + head_dim);
    debug_assert!(k.len() >= (seq_kv - 1) * rows.k + head_dim);
    debug_assert!(v.len() >= (seq_kv - 1) * rows.v + val_dim);

    let (scores, inv_sums) = scratch.split_at_mut(seq_q * seq_kv);

    // scores = scale * Q @ K^T (gemm's `beta`)
    unsafe {
        T::block_gemm(BlockGemmArgs {
            m: seq_q,
            n: seq_kv,
            k: head_dim,
            dst: scores.as_mut_ptr(),
            dst_cs: 1,
            dst_rs: seq_kv as isize,
            read_dst: false,
            lhs: q.as_ptr(),
            lhs_cs: 1,
            lhs_rs: rows.q as isize,
            rhs: k.as_ptr(),
            rhs_cs: rows.k as isize,
            rhs_rs: 1,
            alpha: T::zero(),
            beta: scale,
        });
    }

    for qi in 0..seq_q {
        let row = &mut scores[qi * seq_kv..(qi + 1) * seq_kv];

        let keys = qi * seq_kv..(qi + 1) * seq_kv;
        let row_max = prepare_scores(
            row,
            softcap,
            mask.map(|m| &m[keys.clone()]),
            causal_offset.map(|offset| qi as isize + offset + 1),
            bias.map(|b| &b[keys]),
        );

        if row_max == neg_inf {
            row.fill(T::zero());
            inv_sums[qi] = T::zero();
            continue;
        }

        inv_sums[qi] = T::one() / T::exp_shifted_sum(row, row_max);
    }

    // output = exp(scores - max) @ V
    unsafe {
        T::block_gemm(BlockGemmArgs {
            m: seq_q,
            n: val_dim,
            k: seq_kv,
            dst: output,
            dst_cs: 1,
            dst_rs: rows.o as isize,
            read_dst: false,
            lhs: scores.as_ptr(),
            lhs_cs: 1,
            lhs_rs: seq_kv as isize,
            rhs: v.as_ptr(),
            rhs_cs: 1,
            rhs_rs: rows.v as isize,
            alpha: T::zero(),
            beta: T::one(),
        });
    }

    for (qi, &inv_sum) in inv_sums.iter().enumerate() {
        // SAFETY: the caller's `output` holds `seq_q` rows of `val_dim` elements, `rows.o` apart.
        let row = unsafe { core::slice::from_raw_parts_mut(output.add(qi * rows.o), val_dim) };
        row.iter_mut().for_each(|o| *o = *o * inv_sum);
    }
}

// Tests kept here exercise flex-specific internals: direct calls into
// `attention_flash` / `attention_naive` (the public `attention()` dispatcher
// routes small shapes to naive so flash-path coverage requires a direct
// call), the `broadcast_attn_mask_bias` helper's rank/dim validation,
// flex-internal tiling and online-softmax correction paths, and
// dtype-specific kernels (f16/f64). Generic attention semantics (causal,
// custom scale, softcap, cross-attention, bool mask, additive bias,
// multi-batch/multi-head, single-element) live in
// crates/burn-backend-tests/tests/tensor/float/module/attention.rs, which
// exercises every backend. When adding new tests, keep them here only if
// they probe flex internals; otherwise add them to that suite.
#[cfg(test)]
mod tests {
    use alloc::{vec, vec::Vec};
    use burn_backend::DType;
    use burn_backend::ops::AttentionModuleOptions;
    use burn_std::{BoolStore, Bytes, Shape, f16};

    use crate::{FlexTensor, Layout};

    fn flex_f32(data: Vec<f32>, shape: &[usize]) -> FlexTensor {
        FlexTensor::new(
            Bytes::from_elems(data),
            Layout::contiguous(Shape::from(shape.to_vec())),
            DType::F32,
        )
    }

    fn flex_f64(data: Vec<f64>, shape: &[usize]) -> FlexTensor {
        FlexTensor::new(
            Bytes::from_elems(data),
            Layout::contiguous(Shape::from(shape.to_vec())),
            DType::F64,
        )
    }

    fn flex_f16(data: Vec<f16>, shape: &[usize]) -> FlexTensor {
        FlexTensor::new(
            Bytes::from_elems(data),
            Layout::contiguous(Shape::from(shape.to_vec())),
            DType::F16,
        )
    }

    fn flex_bool(data: Vec<u8>, shape: &[usize]) -> FlexTensor {
        FlexTensor::new(
            Bytes::from_elems(data),
            Layout::contiguous(Shape::from(shape.to_vec())),
            DType::Bool(BoolStore::Native),
        )
    }

    /// Assert two attention-output slices are elementwise close. Used by the
    /// flash broadcast tests below.
    fn assert_attention_outputs_close(bcast: &[f32], full: &[f32], label: &str) {
        assert_eq!(bcast.len(), full.len(), "{label}: length mismatch");
        for (i, (&a, &b)) in bcast.iter().zip(full).enumerate() {
            assert!((a - b).abs() < 1e-5, "{label} mismatch at {i}: {a} vs {b}");
        }
    }

    /// repeat each K/V head `q_per_kv` times along the head dim, turning a
    /// `[batch, kv_heads, seq, dim]` buffer into the `[batch, q_heads, seq, dim]`
    /// one plain MHA would consume - the GQA/MQA reference.
    fn repeat_kv_heads(
        data: &[f32],
        batch: usize,
        kv_heads: usize,
        seq: usize,
        dim: usize,
        q_per_kv: usize,
    ) -> Vec<f32> {
        let head_len = seq * dim;
        let mut out = Vec::with_capacity(batch * kv_heads * q_per_kv * head_len);
        for b in 0..batch {
            for kv in 0..kv_heads {
                let base = (b * kv_heads + kv) * head_len;
                for _ in 0..q_per_kv {
                    out.extend_from_slice(&data[base..base + head_len]);
                }
            }
        }
        out
    }

    /// GQA/MQA (`kv_heads < q_heads`) must equal plain MHA with each K/V head
    /// repeated `q_heads / kv_heads` times - ONNX Attention-23 / burn-ndarray
    /// semantics. covers both the naive and flash inner loops (#4930).
    fn check_grouped_attention(q_heads: usize, kv_heads: usize) {
        let q_per_kv = q_heads / kv_heads;
        let batch = 2;
        let seq_q = 3;
        let seq_kv = 4;
        let head_dim = 5;

        let build = |shape: &[usize], g: &dyn Fn(usize) -> f32| -> Vec<f32> {
            let len: usize = shape.iter().product();
            (0..len).map(g).collect()
        };

        let q = build(&[batch, q_heads, seq_q, head_dim], &|i| {
            (i as f32 * 0.1).sin()
        });
        let k = build(&[batch, kv_heads, seq_kv, head_dim], &|i| {
            (i as f32 * 0.1 + 1.0).sin()
        });
        let v = build(&[batch, kv_heads, seq_kv, head_dim], &|i| {
            (i as f32 * 0.1 + 2.0).sin()
        });

        let k_full = repeat_kv_heads(&k, batch, kv_heads, seq_kv, head_dim, q_per_kv);
        let v_full = repeat_kv_heads(&v, batch, kv_heads, seq_kv, head_dim, q_per_kv);

        type AttnFn = fn(
            FlexTensor,
            FlexTensor,
            FlexTensor,
            Option<FlexTensor>,
            Option<FlexTensor>,
            AttentionModuleOptions,
        ) -> FlexTensor;
        let cases: [(&str, AttnFn); 2] = [
            ("naive", super::attention_naive),
            ("flash", super::attention_flash),
        ];

        for (label, run) in cases {
            let out_gqa = run(
                flex_f32(q.clone(), &[batch, q_heads, seq_q, head_dim]),
                flex_f32(k.clone(), &[batch, kv_heads, seq_kv, head_dim]),
                flex_f32(v.clone(), &[batch, kv_heads, seq_kv, head_dim]),
                None,
                None,
                Default::default(),
            );
            let out_ref = run(
                flex_f32(q.clone(), &[batch, q_heads, seq_q, head_dim]),
                flex_f32(k_full.clone(), &[batch, q_heads, seq_kv, head_dim]),
                flex_f32(v_full.clone(), &[batch, q_heads, seq_kv, head_dim]),
                None,
                None,
                Default::default(),
            );
            assert_attention_outputs_close(
                out_gqa.storage(),
                out_ref.storage(),
                &alloc::format!("{label} gqa(q={q_heads},kv={kv_heads}) vs repeated-kv"),
            );
        }
    }

    #[test]
    fn test_attention_gqa_matches_repeated_kv() {
        // 4 query heads, 2 KV heads: each KV head shared by 2 query heads.
        check_grouped_attention(4, 2);
    }

    #[test]
    fn test_attention_mqa_matches_repeated_kv() {
        // Multi-Query Attention: a single KV head shared by all 4 query heads.
        check_grouped_attention(4, 1);
    }

    #[test]
    fn test_flash_bias_broadcast_across_batch_and_heads() {
        // Exercises the flash path for a `[1, 1, seq_q, seq_kv]` broadcast
        // bias. The dispatcher in `attention()` routes to naive for
        // `seq_q * seq_kv <= NAIVE_SCORE_BUDGET` (and the backend-tests
        // attention suite uses small shapes), so the flash entry needs a
        // direct call to stay covered. General broadcast semantics for the
        // main `attention()` path live in
        // crates/burn-backend-tests/tests/tensor/float/module/attention.rs.
        let batch = 2;
        let heads = 2;
        let seq_q = 3;
        let seq_kv = 5;
        let head_dim = 4;

        let mk = |shape: &[usize], g: &dyn Fn(usize) -> f32| -> FlexTensor {
            let len: usize = shape.iter().product();
            flex_f32((0..len).map(g).collect(), shape)
        };

        let q = mk(&[batch, heads, seq_q, head_dim], &|i| {
            (i as f32 * 0.1).sin()
        });
        let k = mk(&[batch, heads, seq_kv, head_dim], &|i| {
            (i as f32 * 0.1 + 1.0).sin()
        });
        let v = mk(&[batch, heads, seq_kv, head_dim], &|i| {
            (i as f32 * 0.1 + 2.0).sin()
        });

        let bias_tile: Vec<f32> = (0..seq_q * seq_kv)
            .map(|i| (i as f32 * 0.4).sin())
            .collect();
        let bias_bcast = flex_f32(bias_tile.clone(), &[1, 1, seq_q, seq_kv]);
        let bias_full_vec: Vec<f32> = bias_tile
            .iter()
            .cloned()
            .cycle()
            .take(batch * heads * seq_q * seq_kv)
            .collect();
        let bias_full = flex_f32(bias_full_vec, &[batch, heads, seq_q, seq_kv]);

        let out_bcast = super::attention_flash(
            q.clone(),
            k.clone(),
            v.clone(),
            None,
            Some(bias_bcast),
            Default::default(),
        );
        let out_full = super::attention_flash(q, k, v, None, Some(bias_full), Default::default());

        let bcast: &[f32] = out_bcast.storage();
        let full: &[f32] = out_full.storage();
        assert_attention_outputs_close(bcast, full, "flash bias[1,1,sq,skv]");
    }

    #[test]
    fn test_flash_bool_mask_broadcast_across_batch_and_heads() {
        // Flash-path counterpart to the bias broadcast test, but for a
        // `[1, 1, seq_q, seq_kv]` bool mask. The mask (u8) slicing path with
        // stride-0 batch/head steps is a different branch from the bias
        // (f32) path, so both need direct flash coverage.
        let batch = 2;
        let heads = 2;
        let seq_q = 3;
        let seq_kv = 5;
        let head_dim = 4;

        let mk = |shape: &[usize], g: &dyn Fn(usize) -> f32| -> FlexTensor {
            let len: usize = shape.iter().product();
            flex_f32((0..len).map(g).collect(), shape)
        };

        let q = mk(&[batch, heads, seq_q, head_dim], &|i| {
            (i as f32 * 0.1).sin()
        });
        let k = mk(&[batch, heads, seq_kv, head_dim], &|i| {
            (i as f32 * 0.1 + 1.0).sin()
        });
        let v = mk(&[batch, heads, seq_kv, head_dim], &|i| {
            (i as f32 * 0.1 + 2.0).sin()
        });

        // Mask out columns 3 and 4 (1 == masked out).
        let mask_tile: Vec<u8> = (0..seq_q * seq_kv)
            .map(|i| if (i % seq_kv) >= 3 { 1u8 } else { 0u8 })
            .collect();
        let mask_bcast = flex_bool(mask_tile.clone(), &[1, 1, seq_q, seq_kv]);
        let mask_full_vec: Vec<u8> = mask_tile
            .iter()
            .copied()
            .cycle()
            .take(batch * heads * seq_q * seq_kv)
            .collect();
        let mask_full = flex_bool(mask_full_vec, &[batch, heads, seq_q, seq_kv]);

        let out_bcast = super::attention_flash(
            q.clone(),
            k.clone(),
            v.clone(),
            Some(mask_bcast),
            None,
            Default::default(),
        );
        let out_full = super::attention_flash(q, k, v, Some(mask_full), None, Default::default());

        let bcast: &[f32] = out_bcast.storage();
        let full: &[f32] = out_full.storage();
        assert_attention_outputs_close(bcast, full, "flash bool mask[1,1,sq,skv]");
    }

    #[test]
    #[should_panic(expected = "must be 4D")]
    fn test_mask_wrong_rank_panics() {
        // Contract: the broadcast helper rejects non-4D mask/bias up-front
        // with a clearer message than `expand`'s rank prepending would produce.
        let mask = flex_bool(vec![0u8; 6], &[2, 3]);
        super::broadcast_attn_mask_bias(mask, [1, 1, 2, 3], "mask");
    }

    #[test]
    #[should_panic(expected = "bias dim 1 must be 3 or 1, got 2")]
    fn test_bias_incompatible_dim_panics() {
        // Contract: a dim that is neither equal to target nor `1` is a hard
        // error. Here heads=2 in the bias but target heads=3.
        let bias = flex_f32(vec![0.0f32; 2 * 2 * 4 * 5], &[2, 2, 4, 5]);
        super::broadcast_attn_mask_bias(bias, [2, 3, 4, 5], "bias");
    }

    #[test]
    fn test_multi_tile_seq_kv() {
        // seq_kv > TILE_KV (64) exercises tiling with online softmax
        // correction. 128 keys = exactly 2 tiles.
        let seq_q = 2;
        let seq_kv = 128;
        let head_dim = 4;
        let val_dim = 2;

        // Q: first query selects dim 0, second selects dim 1.
        let mut q_data = vec![0.0f32; seq_q * head_dim];
        q_data[0] = 1.0;
        q_data[head_dim + 1] = 1.0;

        // K: all keys identical so all scores are equal.
        let k_data = vec![0.1f32; seq_kv * head_dim];

        // V: linearly increasing values.
        let mut v_data = vec![0.0f32; seq_kv * val_dim];
        for i in 0..seq_kv {
            v_data[i * val_dim] = i as f32;
            v_data[i * val_dim + 1] = (seq_kv - 1 - i) as f32;
        }

        let q = flex_f32(q_data, &[1, 1, seq_q, head_dim]);
        let k = flex_f32(k_data, &[1, 1, seq_kv, head_dim]);
        let v = flex_f32(v_data, &[1, 1, seq_kv, val_dim]);

        let result = super::attention(q, k, v, None, None, Default::default());
        let data: &[f32] = result.storage();

        // All scores equal -> output = mean of 0..127 = 63.5 for both cols.
        assert_eq!(data.len(), seq_q * val_dim);
        assert!(
            (data[0] - 63.5).abs() < 0.1,
            "expected ~63.5, got {}",
            data[0]
        );
        assert!(
            (data[1] - 63.5).abs() < 0.1,
            "expected ~63.5, got {}",
            data[1]
        );
    }

    #[test]
    fn test_multi_tile_causal() {
        // seq_kv=128 with causal mask: each query sees only up to
        // causal_offset + its own index worth of keys.
        let seq_q = 4;
        let seq_kv = 128;
        let head_dim = 2;
        let val_dim = 1;

        // All queries/keys [1, 0] so all visible scores equal.
        let mut q_data = vec![0.0f32; seq_q * head_dim];
        for i in 0..seq_q {
            q_data[i * head_dim] = 1.0;
        }
        let mut k_data = vec![0.0f32; seq_kv * head_dim];
        for i in 0..seq_kv {
            k_data[i * head_dim] = 1.0;
        }
        let v_data: Vec<f32> = (0..seq_kv).map(|i| i as f32).collect();

        let q = flex_f32(q_data, &[1, 1, seq_q, head_dim]);
        let k = flex_f32(k_data, &[1, 1, seq_kv, head_dim]);
        let v = flex_f32(v_data, &[1, 1, seq_kv, val_dim]);

        let opts = AttentionModuleOptions {
            is_causal: true,
            ..Default::default()
        };
        let result = super::attention(q, k, v, None, None, opts);
        let data: &[f32] = result.storage();

        // causal_offset = seq_kv - seq_q = 124
        // q[0] sees 0..=124 -> mean 62.0; q[1] 62.5; q[2] 63.0; q[3] 63.5.
        assert_eq!(data.len(), seq_q);
        assert!((data[0] - 62.0).abs() < 0.1, "q0: got {}", data[0]);
        assert!((data[1] - 62.5).abs() < 0.1, "q1: got {}", data[1]);
        assert!((data[2] - 63.0).abs() < 0.1, "q2: got {}", data[2]);
        assert!((data[3] - 63.5).abs() < 0.1, "q3: got {}", data[3]);
    }

    #[test]
    fn test_tile_boundary_mask() {
        // Mask falls exactly on a tile boundary: first 64 keys masked,
        // next 64 visible.
        let seq_q = 1;
        let seq_kv = 128;
        let head_dim = 2;
        let val_dim = 1;

        let q_data = vec![1.0f32, 0.0];
        let k_data = [1.0f32, 0.0].repeat(seq_kv);
        let v_data: Vec<f32> = (0..seq_kv).map(|i| i as f32).collect();
        // true == masked out.
        let mask_data: Vec<u8> = (0..seq_kv).map(|i| (i < 64) as u8).collect();

        let q = flex_f32(q_data, &[1, 1, seq_q, head_dim]);
        let k = flex_f32(k_data, &[1, 1, seq_kv, head_dim]);
        let v = flex_f32(v_data, &[1, 1, seq_kv, val_dim]);
        let mask = flex_bool(mask_data, &[1, 1, seq_q, seq_kv]);

        let result = super::attention(q, k, v, Some(mask), None, Default::default());
        let data: &[f32] = result.storage();

        // Visible = 64..128 -> mean of 64..=127 = 95.5.
        assert!(
            (data[0] - 95.5).abs() < 0.1,
            "expected ~95.5, got {}",
            data[0]
        );
    }

    #[test]
    fn test_non_uniform_scores_across_tiles() {
        // Forces the online softmax correction path: tile 1 has much
        // larger scores than tile 0, so the correction factor
        // exp(old_max - new_max) < 1.
        let seq_q = 1;
        let seq_kv = 128;
        let head_dim = 1;
        let val_dim = 1;

        let q_data = vec![1.0f32];
        let mut k_data = vec![0.0f32; seq_kv];
        for k in k_data.iter_mut().take(64) {
            *k = 0.1;
        }
        for k in k_data.iter_mut().skip(64) {
            *k = 5.0;
        }
        let mut v_data = vec![0.0f32; seq_kv];
        for v in v_data.iter_mut().skip(64) {
            *v = 1.0;
        }

        let q = flex_f32(q_data, &[1, 1, seq_q, head_dim]);
        let k = flex_f32(k_data, &[1, 1, seq_kv, head_dim]);
        let v = flex_f32(v_data, &[1, 1, seq_kv, val_dim]);

        let result = super::attention(q, k, v, None, None, Default::default());
        let data: &[f32] = result.storage();

        // Large-score keys (tile 2) dominate softmax -> output ~ 1.0.
        assert!(data[0] > 0.99, "expected ~1.0, got {}", data[0]);
    }

    #[test]
    fn test_partial_last_tile() {
        // seq_kv=100 is not a multiple of TILE_KV=64, so the last tile has
        // 36 elements -> exercises partial-tile gemm and score buffer
        // indexing.
        let seq_q = 2;
        let seq_kv = 100;
        let head_dim = 2;
        let val_dim = 1;

        let q_data = [0.1f32, 0.1].repeat(seq_q);
        let k_data = [0.1f32, 0.1].repeat(seq_kv);
        let v_data: Vec<f32> = (0..seq_kv).map(|i| i as f32).collect();

        let q = flex_f32(q_data, &[1, 1, seq_q, head_dim]);
        let k = flex_f32(k_data, &[1, 1, seq_kv, head_dim]);
        let v = flex_f32(v_data, &[1, 1, seq_kv, val_dim]);

        let result = super::attention(q, k, v, None, None, Default::default());
        let data: &[f32] = result.storage();

        // Uniform attention -> mean of 0..99 = 49.5.
        assert_eq!(data.len(), seq_q);
        assert!(
            (data[0] - 49.5).abs() < 0.1,
            "expected ~49.5, got {}",
            data[0]
        );
        assert!(
            (data[1] - 49.5).abs() < 0.1,
            "expected ~49.5, got {}",
            data[1]
        );
    }

    /// Verify naive attention produces the same results as flash attention
    /// across various configurations.
    #[test]
    fn test_naive_matches_flash() {
        /// Deterministic tensor for cross-validation tests.
        ///
        /// Uses `i * 997 % N` as a cheap hash: 997 is prime and coprime to
        /// any power-of-two length, so the sequence visits all residues
        /// before repeating. For f32 this gives values in [-0.5, 0.5]. For
        /// bool masks it gives ~30% density with an irregular pattern that
        /// varies across rows (unlike a regular `i % 3` stride).
        fn make_tensor(shape: &[usize], dtype: DType) -> FlexTensor {
            let len: usize = shape.iter().product();
            match dtype {
                DType::F32 => {
                    let data: Vec<f32> =
                        (0..len).map(|i| ((i % 997) as f32 / 997.0) - 0.5).collect();
                    flex_f32(data, shape)
                }
                DType::Bool(_) => {
                    let data: Vec<u8> = (0..len)
                        .map(|i| (i.wrapping_mul(37) % 100 < 30) as u8)
                        .collect();
                    flex_bool(data, shape)
                }
                _ => unreachable!(),
            }
        }

        #[allow(clippy::too_many_arguments)]
        fn run_both(
            batch: usize,
            heads: usize,
            seq_q: usize,
            seq_kv: usize,
            head_dim: usize,
            val_dim: usize,
            with_mask: bool,
            with_bias: bool,
            options: AttentionModuleOptions,
            label: &str,
        ) {
            let f32_dt = DType::F32;
            let bool_dt = DType::Bool(BoolStore::Native);
            let q = make_tensor(&[batch, heads, seq_q, head_dim], f32_dt);
            let k = make_tensor(&[batch, heads, seq_kv, head_dim], f32_dt);
            let v = make_tensor(&[batch, heads, seq_kv, val_dim], f32_dt);
            let score_shape = [batch, heads, seq_q, seq_kv];
            let mask = with_mask.then(|| make_tensor(&score_shape, bool_dt));
            let bias = with_bias.then(|| make_tensor(&score_shape, f32_dt));

            let flash = super::attention_flash(
                q.clone(),
                k.clone(),
                v.clone(),
                mask.clone(),
                bias.clone(),
                options,
            );
            let naive = super::attention_naive(q, k, v, mask, bias, options);

            let flash_data: &[f32] = flash.storage();
            let naive_data: &[f32] = naive.storage();
            assert_eq!(
                flash_data.len(),
                naive_data.len(),
                "{label}: length mismatch"
            );

            for (i, (&f, &n)) in flash_data.iter().zip(naive_data.iter()).enumerate() {
                let diff = (f - n).abs();
                let tol = 1e-4 * f.abs().max(n.abs()).max(1.0);
                assert!(
                    diff < tol,
                    "{label}: position {i}: flash={f} vs naive={n}, diff={diff}"
                );
            }
        }

        let default = AttentionModuleOptions::default();
        let causal = AttentionModuleOptions {
            is_causal: true,
            ..Default::default()
        };
        let all_opts = AttentionModuleOptions {
            scale: Some(0.05),
            softcap: Some(30.0),
            is_causal: true,
        };

        run_both(1, 1, 4, 4, 8, 8, false, false, default, "basic_4x4");
        run_both(
            2,
            4,
            8,
            8,
            16,
            16,
            false,
            false,
            default,
            "multi_head_batch",
        );
        run_both(1, 2, 4, 32, 16, 16, false, false, default, "cross_attn");
        run_both(1, 1, 4, 128, 16, 16, false, false, default, "multi_tile");
        run_both(1, 2, 16, 16, 32, 32, false, false, causal, "causal");
        run_both(2, 2, 16, 16, 32, 32, false, false, all_opts, "all_options");
        run_both(1, 1, 32, 256, 64, 64, false, false, causal, "large_causal");
        run_both(1, 2, 8, 8, 16, 16, true, false, default, "with_mask");
        run_both(1, 2, 8, 8, 16, 16, false, true, default, "with_bias");
        run_both(
            2,
            2,
            16,
            128,
            32,
            32,
            true,
            true,
            causal,
            "mask_bias_causal",
        );
        run_both(1, 1, 4, 100, 16, 16, false, false, default, "partial_tile");
        run_both(
            1,
            2,
            8,
            100,
            16,
            16,
            false,
            false,
            causal,
            "partial_tile_causal",
        );
    }

    #[test]
    fn test_f64_flash_attention() {
        let q = flex_f64(vec![1.0f64, 0.0, 0.0, 1.0], &[1, 1, 2, 2]);
        let k = q.clone();
        let v = flex_f64(vec![10.0f64, 20.0], &[1, 1, 2, 1]);

        let result = super::attention(q, k, v, None, None, Default::default());
        let data: &[f64] = result.storage();

        assert!((data[0] - 13.30).abs() < 0.1, "got {}", data[0]);
        assert!((data[1] - 16.70).abs() < 0.1, "got {}", data[1]);
    }

    /// Verify f16 cast-to-f32 round-trip produces correct results for both
    /// paths.
    #[test]
    fn test_f16_attention() {
        let q_vec: Vec<f16> = [1.0f32, 0.0, 0.0, 1.0]
            .iter()
            .map(|&v| f16::from_f32(v))
            .collect();
        let v_vec: Vec<f16> = [10.0f32, 20.0].iter().map(|&v| f16::from_f32(v)).collect();
        let q = flex_f16(q_vec, &[1, 1, 2, 2]);
        let k = q.clone();
        let v = flex_f16(v_vec, &[1, 1, 2, 1]);

        let flash = super::attention_flash(
            q.clone(),
            k.clone(),
            v.clone(),
            None,
            None,
            Default::default(),
        );
        let naive = super::attention_naive(q, k, v, None, None, Default::default());

        let flash_data: &[f16] = flash.storage();
        let naive_data: &[f16] = naive.storage();

        // softmax([1/sqrt(2), 0]) = [0.670, 0.330] -> row0: ~13.3, row1: ~16.7
        for (label, data) in [("flash", flash_data), ("naive", naive_data)] {
            let r0 = data[0].to_f32();
            let r1 = data[1].to_f32();
            assert!((r0 - 13.30).abs() < 0.2, "{label} row0: got {r0}");
            assert!((r1 - 16.70).abs() < 0.2, "{label} row1: got {r1}");
        }
    }

    /// Compare multihead dispatch against independently evaluated single heads.
    /// Small shapes exercise the serial fallback; larger shapes exercise Rayon
    /// with a partial final KV tile. Each head has distinct Q/K/V, mask and bias.
    #[test]
    fn test_attention_parallel_multihead_parity() {
        let batch = 2;
        let heads = 8;
        let head_dim = 32;
        let val_dim = 24;

        for (seq_q, seq_kv) in [(1, 64), (64, 67)] {
            for kv_heads in [heads, 2, 1] {
                let make = |len: usize, seed: usize| -> Vec<f32> {
                    (0..len)
                        .map(|i| ((i.wrapping_mul(37) + seed) % 997) as f32 / 997.0 - 0.5)
                        .collect()
                };
                let q = make(batch * heads * seq_q * head_dim, 1);
                let k = make(batch * kv_heads * seq_kv * head_dim, 19);
                let v = make(batch * kv_heads * seq_kv * val_dim, 71);
                let bias = make(batch * heads * seq_q * seq_kv, 53);
                let mask: Vec<u8> = (0..bias.len()).map(|i| (i % 7 == 0) as u8).collect();
                let options = AttentionModuleOptions {
                    is_causal: true,
                    softcap: Some(2.0),
                    ..Default::default()
                };

                // Expand grouped K/V using the independent reference helper,
                // then evaluate each head as its own batch=1, heads=1 operation.
                let k_full =
                    repeat_kv_heads(&k, batch, kv_heads, seq_kv, head_dim, heads / kv_heads);
                let v_full =
                    repeat_kv_heads(&v, batch, kv_heads, seq_kv, val_dim, heads / kv_heads);
                let mut expected = Vec::new();
                for ((((q, k), v), mask), bias) in q
                    .chunks_exact(seq_q * head_dim)
                    .zip(k_full.chunks_exact(seq_kv * head_dim))
                    .zip(v_full.chunks_exact(seq_kv * val_dim))
                    .zip(mask.chunks_exact(seq_q * seq_kv))
                    .zip(bias.chunks_exact(seq_q * seq_kv))
                {
                    let out = super::attention_naive(
                        flex_f32(q.to_vec(), &[1, 1, seq_q, head_dim]),
                        flex_f32(k.to_vec(), &[1, 1, seq_kv, head_dim]),
                        flex_f32(v.to_vec(), &[1, 1, seq_kv, val_dim]),
                        Some(flex_bool(mask.to_vec(), &[1, 1, seq_q, seq_kv])),
                        Some(flex_f32(bias.to_vec(), &[1, 1, seq_q, seq_kv])),
                        options,
                    );
                    expected.extend_from_slice(out.storage::<f32>());
                }

                for run in [super::attention_flash, super::attention_naive] {
                    let out = run(
                        flex_f32(q.clone(), &[batch, heads, seq_q, head_dim]),
                        flex_f32(k.clone(), &[batch, kv_heads, seq_kv, head_dim]),
                        flex_f32(v.clone(), &[batch, kv_heads, seq_kv, val_dim]),
                        Some(flex_bool(mask.clone(), &[batch, heads, seq_q, seq_kv])),
                        Some(flex_f32(bias.clone(), &[batch, heads, seq_q, seq_kv])),
                        options,
                    );
                    assert_eq!(
                        out.layout().shape(),
                        &Shape::new([batch, heads, seq_q, val_dim])
                    );
                    assert_attention_outputs_close(
                        out.storage(),
                        &expected,
                        "multihead vs independent heads",
                    );
                }
            }
        }
    }

    /// attnzoo's patch: heads split from `[batch, seq, heads, dim]` by a swap of axes are read
    /// where they lie, and the output comes back in the same order of axes; both kernels give
    /// what they give for contiguous heads.
    #[test]
    fn test_attention_reads_swapped_heads_in_place() {
        let (batch, heads, kv_heads, seq_q, seq_kv, head_dim) = (2, 4, 2, 5, 7, 8);
        let make = |len: usize, seed: usize| -> Vec<f32> {
            (0..len)
                .map(|i| ((i.wrapping_mul(37) + seed) % 997) as f32 / 997.0 - 0.5)
                .collect()
        };
        // `[batch, seq, heads, dim]` storage viewed as `[batch, heads, seq, dim]`.
        let swapped = |data: &[f32], heads: usize, seq: usize| {
            flex_f32(data.to_vec(), &[batch, seq, heads, head_dim]).transpose(1, 2)
        };
        let q = make(batch * seq_q * heads * head_dim, 1);
        let k = make(batch * seq_kv * kv_heads * head_dim, 19);
        let v = make(batch * seq_kv * kv_heads * head_dim, 71);
        let bias = flex_f32(
            make(batch * heads * seq_q * seq_kv, 53),
            &[batch, heads, seq_q, seq_kv],
        );
        let options = AttentionModuleOptions {
            is_causal: true,
            ..Default::default()
        };
        for run in [super::attention_flash, super::attention_naive] {
            let (q, k, v) = (
                swapped(&q, heads, seq_q),
                swapped(&k, kv_heads, seq_kv),
                swapped(&v, kv_heads, seq_kv),
            );
            let expected = run(
                q.to_contiguous(),
                k.to_contiguous(),
                v.to_contiguous(),
                None,
                Some(bias.clone()),
                options,
            );
            let out = run(q, k, v, None, Some(bias.clone()), options);
            assert_eq!(
                out.layout().shape(),
                &Shape::new([batch, heads, seq_q, head_dim])
            );
            assert!(
                out.transpose(1, 2).is_contiguous(),
                "merging the heads is a view"
            );
            assert_attention_outputs_close(
                out.to_contiguous().storage(),
                expected.storage(),
                "swapped heads vs contiguous heads",
            );
        }
    }

    /// Ensure zero-size dimensions do not panic.
    ///
    /// Exercises the early-return guard that prevents `par_chunks_exact_mut(0)`
    /// panics and skips scratch allocation on empty workloads.
    #[test]
    fn test_attention_empty_sequence() {
        let head_dim = 8;
        let opts = AttentionModuleOptions::default();

        // seq_q = 0: no query tokens
        {
            let q = flex_f32(vec![], &[1, 1, 0, head_dim]);
            let k = flex_f32(vec![0.0; 4 * head_dim], &[1, 1, 4, head_dim]);
            let v = flex_f32(vec![0.0; 4 * head_dim], &[1, 1, 4, head_dim]);
            let out_flash =
                super::attention_flash(q.clone(), k.clone(), v.clone(), None, None, opts);
            let out_naive = super::attention_naive(q, k, v, None, None, opts);
            let flash_out: &[f32] = out_flash.storage();
            let naive_out: &[f32] = out_naive.storage();
            assert_eq!(flash_out.len(), 0, "flash: seq_q=0 output must be empty");
            assert_eq!(naive_out.len(), 0, "naive: seq_q=0 output must be empty");
        }

        // batch = 0: no batch elements
        {
            let q = flex_f32(vec![], &[0, 1, 4, head_dim]);
            let k = flex_f32(vec![], &[0, 1, 4, head_dim]);
            let v = flex_f32(vec![], &[0, 1, 4, head_dim]);
            let out_flash =
                super::attention_flash(q.clone(), k.clone(), v.clone(), None, None, opts);
            let out_naive = super::attention_naive(q, k, v, None, None, opts);
            let flash_out: &[f32] = out_flash.storage();
            let naive_out: &[f32] = out_naive.storage();
            assert_eq!(flash_out.len(), 0, "flash: batch=0 output must be empty");
            assert_eq!(naive_out.len(), 0, "naive: batch=0 output must be empty");
        }

        // seq_kv = 0: query present but empty KV context
        // -> output shape [1, 1, 4, head_dim] filled with zeros
        {
            let q = flex_f32(vec![1.0; 4 * head_dim], &[1, 1, 4, head_dim]);
            let k = flex_f32(vec![], &[1, 1, 0, head_dim]);
            let v = flex_f32(vec![], &[1, 1, 0, head_dim]);
            let out_flash =
                super::attention_flash(q.clone(), k.clone(), v.clone(), None, None, opts);
            let out_naive = super::attention_naive(q, k, v, None, None, opts);
            let flash_out: &[f32] = out_flash.storage();
            let naive_out: &[f32] = out_naive.storage();
            assert_eq!(
                flash_out.len(),
                4 * head_dim,
                "flash: seq_kv=0 output length"
            );
            assert_eq!(
                naive_out.len(),
                4 * head_dim,
                "naive: seq_kv=0 output length"
            );
            assert!(
                flash_out.iter().all(|&x| x == 0.0),
                "flash: seq_kv=0 output must be all-zero"
            );
            assert!(
                naive_out.iter().all(|&x| x == 0.0),
                "naive: seq_kv=0 output must be all-zero"
            );
        }
    }

    /// GQA with q_heads=8, kv_heads=2 (q_per_kv=4) must match MHA with each
    /// K/V head repeated 4 times. Covers both flash and naive paths with the
    /// new parallel loop structure.
    #[test]
    fn test_attention_gqa_mqa() {
        // 8 query heads, 2 KV heads: each KV head shared by 4 query heads.
        check_grouped_attention(8, 2);
        // MQA: single KV head shared by all 8 query heads.
        check_grouped_attention(8, 1);
    }
}
