//! Matrix multiplication via gemm crate.
//!
//! Optimizations:
//! - Strided gemm for f32/f64/f16 avoids copying non-contiguous tensors
//! - Enables parallelism for large matrices (with rayon feature)
//! - Batched matmul parallelized across batch dimension

use alloc::vec;
use alloc::vec::Vec;
use burn_backend::{DType, Element};
use burn_std::{Bytes, Shape, bf16, f16};

use crate::{FlexTensor, Layout};

/// Types that can be used with gemm-based matmul.
/// Only implement for types that `gemm::gemm` dispatches on via TypeId (f32, f64, f16).
trait GemmScalar: Element + bytemuck::Pod {
    fn zero() -> Self;
    fn one() -> Self;
}

impl GemmScalar for f32 {
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
}

impl GemmScalar for f64 {
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
}

impl GemmScalar for f16 {
    fn zero() -> Self {
        f16::from_f32(0.0)
    }
    fn one() -> Self {
        f16::from_f32(1.0)
    }
}

/// Checked multiplication for matrix sizes, panics on overflow.
#[inline]
fn checked_size(a: usize, b: usize) -> usize {
    a.checked_mul(b)
        .unwrap_or_else(|| panic!("matmul: matrix size overflow: {a} * {b}"))
}

/// Threshold for enabling parallelism (M*N*K operations).
/// 192^3 = ~7M ops - balance between 128x128 (no parallel) and 256x256 (parallel)
const PARALLEL_THRESHOLD: usize = 192 * 192 * 192;

/// Threshold for batch-level parallelism (total ops across all batches).
/// Use batch parallelism when individual matrices are small but total work is large.
#[cfg(feature = "rayon")]
const BATCH_PARALLEL_THRESHOLD: usize = 128 * 128 * 128; // ~2M ops total

/// Get parallelism setting based on matrix size.
fn get_parallelism(m: usize, n: usize, k: usize) -> gemm::Parallelism {
    let ops = m.saturating_mul(n).saturating_mul(k);
    if ops >= PARALLEL_THRESHOLD {
        #[cfg(feature = "rayon")]
        {
            gemm::Parallelism::Rayon(0) // 0 = use all available threads
        }
        #[cfg(not(feature = "rayon"))]
        {
            gemm::Parallelism::None
        }
    } else {
        gemm::Parallelism::None
    }
}

/// attnzoo's patch: gemm packs its left operand's blocks whenever they span more than one
/// micro-tile of columns (its defaults: eight micro-tiles single-threaded, sixteen
/// multi-threaded), set once before flex's first product. gemm computes a row-major product
/// transposed, so its left operand is `W` in `x · W`; with the 32 rows of an LSTM step's batch as
/// `x` it read `W` unpacked, 16 floats at a time from rows 4 KiB apart. Packed, it is read in
/// order: training the tutorials' LSTM translator ran 12 % faster, MiniLM and multi-head
/// attention the same.
pub(crate) fn pack_lhs_blocks() {
    #[cfg(feature = "std")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            gemm::set_lhs_packing_threshold_single_thread(1);
            gemm::set_lhs_packing_threshold_multi_thread(1);
        });
    }
}

/// Dispatch matrix multiplication based on dtype.
pub fn matmul(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    pack_lhs_blocks();
    assert_eq!(lhs.dtype(), rhs.dtype(), "matmul: dtype mismatch");

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    assert!(lhs_rank >= 2, "matmul requires at least 2D tensors");
    assert!(rhs_rank >= 2, "matmul requires at least 2D tensors");

    // Check inner dimensions match: lhs[..., M, K] x rhs[..., K, N]
    let k_lhs = lhs_shape[lhs_rank - 1];
    let k_rhs = rhs_shape[rhs_rank - 2];
    assert_eq!(k_lhs, k_rhs, "matmul: inner dimensions must match");

    match lhs.dtype() {
        DType::F32 => matmul_gemm::<f32>(lhs, rhs),
        DType::F64 => matmul_gemm::<f64>(lhs, rhs),
        DType::F16 => matmul_gemm::<f16>(lhs, rhs),
        DType::BF16 => matmul_bf16(lhs, rhs),
        _ => panic!("matmul: unsupported dtype {:?}", lhs.dtype()),
    }
}

/// Extract 2D matrix strides from a tensor layout.
/// Returns (row_stride, col_stride) for the last two dimensions.
fn get_2d_strides(layout: &Layout) -> (isize, isize) {
    let strides = layout.strides();
    let ndim = strides.len();
    let row_stride = strides[ndim - 2];
    let col_stride = strides[ndim - 1];
    (row_stride, col_stride)
}

/// Compute broadcast batch dimensions for batched matmul.
/// Returns (broadcast_shape, lhs_strides, rhs_strides) where strides map
/// output batch index to input batch offset (in matrices).
fn broadcast_batch_dims(
    lhs_batch: &[usize],
    rhs_batch: &[usize],
) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    // Pad shorter batch dims with 1s on the left
    let max_len = lhs_batch.len().max(rhs_batch.len());
    let lhs_padded: Vec<usize> = (0..max_len)
        .map(|i| {
            if i < max_len - lhs_batch.len() {
                1
            } else {
                lhs_batch[i - (max_len - lhs_batch.len())]
            }
        })
        .collect();
    let rhs_padded: Vec<usize> = (0..max_len)
        .map(|i| {
            if i < max_len - rhs_batch.len() {
                1
            } else {
                rhs_batch[i - (max_len - rhs_batch.len())]
            }
        })
        .collect();

    // Compute broadcast shape and strides
    let mut broadcast_shape = Vec::with_capacity(max_len);
    let mut lhs_strides = Vec::with_capacity(max_len);
    let mut rhs_strides = Vec::with_capacity(max_len);

    // Compute strides from right to left
    let mut lhs_stride = 1usize;
    let mut rhs_stride = 1usize;
    for i in (0..max_len).rev() {
        let ld = lhs_padded[i];
        let rd = rhs_padded[i];
        debug_assert!(
            ld == rd || ld == 1 || rd == 1,
            "matmul: batch dimensions not broadcastable: {:?} vs {:?}",
            lhs_batch,
            rhs_batch
        );
        broadcast_shape.push(ld.max(rd));
        // Stride is 0 if dimension is 1 (broadcast), otherwise actual stride
        lhs_strides.push(if ld == 1 { 0 } else { lhs_stride });
        rhs_strides.push(if rd == 1 { 0 } else { rhs_stride });
        lhs_stride *= ld;
        rhs_stride *= rd;
    }

    // Reverse to get correct order
    broadcast_shape.reverse();
    lhs_strides.reverse();
    rhs_strides.reverse();

    (broadcast_shape, lhs_strides, rhs_strides)
}

/// Convert a flat batch index to input batch offset using broadcast strides.
#[inline]
fn batch_index_to_offset(b: usize, broadcast_shape: &[usize], strides: &[usize]) -> usize {
    let mut offset = 0;
    let mut remaining = b;
    for i in (0..broadcast_shape.len()).rev() {
        let idx = remaining % broadcast_shape[i];
        offset += idx * strides[i];
        remaining /= broadcast_shape[i];
    }
    offset
}

/// Compute element-level batch strides for a tensor in a broadcast context.
/// Uses the actual layout strides so non-contiguous (transposed/sliced) tensors
/// work without a copy. Dimensions that are broadcast (size 1) get stride 0.
#[allow(clippy::needless_range_loop)]
fn broadcast_batch_elem_strides(
    batch_shape: &[usize],
    layout_strides: &[isize],
    broadcast_len: usize,
) -> Vec<isize> {
    let batch_ndim = batch_shape.len();
    debug_assert!(broadcast_len >= batch_ndim);
    let mut result = vec![0isize; broadcast_len];

    for i in 0..broadcast_len {
        let batch_idx = i as isize - (broadcast_len as isize - batch_ndim as isize);
        if batch_idx >= 0 {
            let bi = batch_idx as usize;
            if batch_shape[bi] > 1 {
                result[i] = layout_strides[bi];
            }
        }
    }

    result
}

/// attnzoo's patch: the rows of `[B..., M, K] · [K, N]` as one matrix, when the right operand is
/// the same for every batch (all its batch strides 0) and each batch's `M` rows follow on from
/// the previous batch's at the row stride (axes of size 1 may have any stride); a single batch
/// too (a decoding step's `[1, 1, K]`), whose few rows then reach [`gemm_call_bands`]. `None`
/// otherwise.
fn shared_rhs_rows(
    batch_shape: &[usize],
    lhs_batch_strides: &[isize],
    rhs_batch_strides: &[isize],
    m: usize,
    lhs_row_stride: isize,
) -> Option<usize> {
    let batch_size: usize = batch_shape.iter().product();
    if batch_size == 0 || rhs_batch_strides.iter().any(|&stride| stride != 0) {
        return None;
    }
    let mut next = lhs_row_stride.checked_mul(m as isize)?;
    for (&size, &stride) in batch_shape.iter().zip(lhs_batch_strides).rev() {
        if size == 1 {
            continue;
        }
        if stride != next {
            return None;
        }
        next = next.checked_mul(size as isize)?;
    }
    Some(batch_size * m)
}

/// Convert a flat batch index to an element offset using element-level strides.
#[inline]
fn batch_elem_offset(b: usize, broadcast_shape: &[usize], elem_strides: &[isize]) -> isize {
    let mut offset: isize = 0;
    let mut remaining = b;
    for i in (0..broadcast_shape.len()).rev() {
        let idx = remaining % broadcast_shape[i];
        offset += idx as isize * elem_strides[i];
        remaining /= broadcast_shape[i];
    }
    offset
}

// ============================================================================
// Generic gemm-based matmul (f32, f64, f16)
// ============================================================================

fn matmul_gemm<T: GemmScalar>(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_rank = lhs.layout().shape().num_dims();
    let rhs_rank = rhs.layout().shape().num_dims();

    if lhs_rank == 2 && rhs_rank == 2 {
        matmul_2d_strided::<T>(lhs, rhs)
    } else {
        matmul_batched_gemm::<T>(lhs, rhs)
    }
}

/// 2D matmul with strided support: [M, K] x [K, N] -> [M, N]
fn matmul_2d_strided<T: GemmScalar>(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();

    let m = lhs_shape[0];
    let k = lhs_shape[1];
    let n = rhs_shape[1];

    let (lhs_row_stride, lhs_col_stride) = get_2d_strides(lhs.layout());
    let (rhs_row_stride, rhs_col_stride) = get_2d_strides(rhs.layout());

    let lhs_data: &[T] = lhs.storage();
    let rhs_data: &[T] = rhs.storage();
    let lhs_ptr = unsafe { lhs_data.as_ptr().add(lhs.layout().start_offset()) };
    let rhs_ptr = unsafe { rhs_data.as_ptr().add(rhs.layout().start_offset()) };

    let out_shape = Shape::from(vec![m, n]);
    let out_len = checked_size(m, n);
    let mut output = Vec::with_capacity(out_len);

    let parallelism = get_parallelism(m, n, k);

    unsafe {
        gemm_call_bands(
            m,
            n,
            k,
            output.as_mut_ptr(),
            1,
            n as isize,
            lhs_ptr,
            lhs_col_stride,
            lhs_row_stride,
            rhs_ptr,
            rhs_col_stride,
            rhs_row_stride,
            parallelism,
        );
    }

    into_product(output, out_len, out_shape)
}

/// The tensor of a product whose `len` elements gemm has written into `output`'s capacity.
/// (attnzoo's patch: the outputs were zeroed first, a pass over every product that gemm, which
/// does not read its destination here, overwrites.)
fn into_product<T: GemmScalar>(mut output: Vec<T>, len: usize, shape: Shape) -> FlexTensor {
    // SAFETY: `gemm_call` does not read its destination and writes every element of it.
    unsafe { output.set_len(len) };
    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(shape),
        T::dtype(),
    )
}

/// attnzoo's patch: products of at most this many rows (a decoding step's `x · W`) are split by
/// columns over rayon's threads; gemm runs them on one thread (under `PARALLEL_THRESHOLD`, and a
/// single row always: its matrix-vector path has no threads).
const FEW_ROWS: usize = 16;

/// attnzoo's patch: multiply-adds from which a product of [`FEW_ROWS`] is split (a 256 KiB `W`).
const FEW_ROWS_SPLIT: usize = 1 << 16;

/// `gemm_call`, with a product of few rows and many columns split into one band of columns per
/// rayon thread (attnzoo's patch): every band reads its own columns of `W`, so a decoding step's
/// products read the weights on every core, as llama.cpp's threads split a product's rows.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_call_bands<T: GemmScalar>(
    m: usize,
    n: usize,
    k: usize,
    out: *mut T,
    out_cs: isize,
    out_rs: isize,
    lhs: *const T,
    lhs_cs: isize,
    lhs_rs: isize,
    rhs: *const T,
    rhs_cs: isize,
    rhs_rs: isize,
    parallelism: gemm::Parallelism,
) {
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        let threads = rayon::current_num_threads();
        let band = n.div_ceil(threads.max(1)).next_multiple_of(16);
        let few_rows = m <= FEW_ROWS && (m == 1 || matches!(parallelism, gemm::Parallelism::None));
        if threads > 1 && few_rows && band < n && m * n * k >= FEW_ROWS_SPLIT {
            // Pointers as integers: each band writes its own columns of `out`.
            let (out, lhs, rhs) = (out as usize, lhs as usize, rhs as usize);
            (0..n.div_ceil(band)).into_par_iter().for_each(|b| {
                let first = b * band;
                // SAFETY: the band's columns lie within the caller's `out` and `rhs`.
                unsafe {
                    gemm_call(
                        m,
                        band.min(n - first),
                        k,
                        (out as *mut T).offset(first as isize * out_cs),
                        out_cs,
                        out_rs,
                        lhs as *const T,
                        lhs_cs,
                        lhs_rs,
                        (rhs as *const T).offset(first as isize * rhs_cs),
                        rhs_cs,
                        rhs_rs,
                        gemm::Parallelism::None,
                    )
                };
            });
            return;
        }
    }
    unsafe {
        gemm_call(
            m,
            n,
            k,
            out,
            out_cs,
            out_rs,
            lhs,
            lhs_cs,
            lhs_rs,
            rhs,
            rhs_cs,
            rhs_rs,
            parallelism,
        )
    }
}

/// Strided gemm call for one matrix. Wraps `gemm::gemm` with GemmScalar zero/one.
///
/// attnzoo's patch: a row-major output `[M, N]` whose right operand is column-major (`x · Wᵀ`,
/// the input's gradient through a linear layer or an LSTM step, `Wᵀ` a view of `W [N, K]`) and
/// whose rows are few (`2·M·(K + N) ≤ K·N`: fewer elements packed and moved) is computed
/// column-major and then transposed into `out`. gemm computes a row-major output as its
/// transpose, `W · xᵀ`, and then packs `W`'s `N × K` elements one element of every row at a
/// time (rows a page apart share an L1 set); column-major, it packs `x`'s `M × K` instead and
/// reads `Wᵀ` where it lies. An LSTM step's `[32, 1024] · [1024, 256]` took 350 µs, now 120 µs.
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_call<T: GemmScalar>(
    m: usize,
    n: usize,
    k: usize,
    out: *mut T,
    out_cs: isize,
    out_rs: isize,
    lhs: *const T,
    lhs_cs: isize,
    lhs_rs: isize,
    rhs: *const T,
    rhs_cs: isize,
    rhs_rs: isize,
    parallelism: gemm::Parallelism,
) {
    let packs_fewer =
        m.saturating_mul(k.saturating_add(n)).saturating_mul(2) <= k.saturating_mul(n);
    let mut column_major = (out_cs == 1 && rhs_rs == 1 && rhs_cs != 1 && m > 0 && packs_fewer)
        .then(|| Vec::<T>::with_capacity(m * n));
    let (dst, dst_cs, dst_rs) = match &mut column_major {
        Some(buffer) => (buffer.as_mut_ptr(), m as isize, 1),
        None => (out, out_cs, out_rs),
    };
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            dst_cs,
            dst_rs,
            false,
            lhs,
            lhs_cs,
            lhs_rs,
            rhs,
            rhs_cs,
            rhs_rs,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            parallelism,
        );
    }
    let Some(mut column_major) = column_major else {
        return;
    };
    // SAFETY: gemm wrote all `m · n` elements.
    unsafe { column_major.set_len(m * n) };
    // Sixteen output rows at a time, so the column-major reads stay within a cache line.
    for rows in (0..m).step_by(16) {
        for (j, column) in column_major.chunks_exact(m).enumerate() {
            for i in rows..(rows + 16).min(m) {
                // SAFETY: `out` holds `m` rows `out_rs` apart of `n` elements.
                unsafe { *out.offset(i as isize * out_rs + j as isize) = column[i] };
            }
        }
    }
}

/// Batched matmul: [B..., M, K] x [B..., K, N] -> [B..., M, N]
/// Supports broadcasting on batch dimensions and strided (non-contiguous) inputs.
fn matmul_batched_gemm<T: GemmScalar>(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    let m = lhs_shape[lhs_rank - 2];
    let k = lhs_shape[lhs_rank - 1];
    let n = rhs_shape[rhs_rank - 1];

    let lhs_batch: Vec<usize> = lhs_shape[..lhs_rank - 2].to_vec();
    let rhs_batch: Vec<usize> = rhs_shape[..rhs_rank - 2].to_vec();

    let (broadcast_shape, _, _) = broadcast_batch_dims(&lhs_batch, &rhs_batch);
    let batch_size: usize = broadcast_shape.iter().product();
    let broadcast_len = broadcast_shape.len();

    let lhs_batch_strides =
        broadcast_batch_elem_strides(&lhs_batch, lhs.layout().strides(), broadcast_len);
    let rhs_batch_strides =
        broadcast_batch_elem_strides(&rhs_batch, rhs.layout().strides(), broadcast_len);

    let (lhs_row_stride, lhs_col_stride) = get_2d_strides(lhs.layout());
    let (rhs_row_stride, rhs_col_stride) = get_2d_strides(rhs.layout());

    let out_matrix_size = checked_size(m, n);

    let mut out_dims = broadcast_shape.clone();
    out_dims.push(m);
    out_dims.push(n);
    let out_shape = Shape::from(out_dims);

    let out_len = checked_size(batch_size, out_matrix_size);
    let mut output: Vec<T> = Vec::with_capacity(out_len);

    let lhs_data: &[T] = lhs.storage();
    let rhs_data: &[T] = rhs.storage();
    let lhs_start = lhs.layout().start_offset() as isize;
    let rhs_start = rhs.layout().start_offset() as isize;
    let out_data = &mut output.spare_capacity_mut()[..out_len];

    // attnzoo's patch: a matrix shared by the whole batch (`x · W` with `x [B..., M, K]`, as a
    // linear layer computes it) is one `[B·M, K] · [K, N]` product when the batch's rows follow
    // on from each other at one stride (PyTorch folds it the same way): gemm packs `W` once and
    // splits the rows between its threads, instead of one product and one packing per batch.
    if let Some(rows) = shared_rhs_rows(
        &broadcast_shape,
        &lhs_batch_strides,
        &rhs_batch_strides,
        m,
        lhs_row_stride,
    ) {
        unsafe {
            gemm_call_bands::<T>(
                rows,
                n,
                k,
                out_data.as_mut_ptr().cast(),
                1,
                n as isize,
                lhs_data.as_ptr().offset(lhs_start),
                lhs_col_stride,
                lhs_row_stride,
                rhs_data.as_ptr().offset(rhs_start),
                rhs_col_stride,
                rhs_row_stride,
                get_parallelism(rows, n, k),
            );
        }
        return into_product(output, out_len, out_shape);
    }

    let per_matrix_ops = m.saturating_mul(n).saturating_mul(k);

    // Closure: run gemm for one batch slice at the given pointers
    let run_one = |out_ptr: *mut T, b: usize, parallelism: gemm::Parallelism| {
        let lhs_off = lhs_start + batch_elem_offset(b, &broadcast_shape, &lhs_batch_strides);
        let rhs_off = rhs_start + batch_elem_offset(b, &broadcast_shape, &rhs_batch_strides);
        unsafe {
            gemm_call::<T>(
                m,
                n,
                k,
                out_ptr,
                1,
                n as isize,
                lhs_data.as_ptr().offset(lhs_off),
                lhs_col_stride,
                lhs_row_stride,
                rhs_data.as_ptr().offset(rhs_off),
                rhs_col_stride,
                rhs_row_stride,
                parallelism,
            );
        }
    };

    // Strategy:
    // 1. Large matrices: let gemm parallelize internally
    // 2. Small matrices, large batch: parallelize batch loop
    // 3. Small total work: single-threaded
    #[cfg(feature = "rayon")]
    {
        let total_ops = batch_size.saturating_mul(per_matrix_ops);
        let prefer_batch_parallel = batch_size >= 4 && total_ops >= BATCH_PARALLEL_THRESHOLD;

        if per_matrix_ops >= PARALLEL_THRESHOLD && !prefer_batch_parallel {
            let parallelism = gemm::Parallelism::Rayon(0);
            for b in 0..batch_size {
                run_one(
                    out_data[b * out_matrix_size..].as_mut_ptr().cast(),
                    b,
                    parallelism,
                );
            }
        } else if total_ops >= BATCH_PARALLEL_THRESHOLD && batch_size > 1 {
            use rayon::prelude::*;

            out_data
                .par_chunks_mut(out_matrix_size)
                .enumerate()
                .for_each(|(b, out_chunk)| {
                    run_one(out_chunk.as_mut_ptr().cast(), b, gemm::Parallelism::None);
                });
        } else {
            for b in 0..batch_size {
                run_one(
                    out_data[b * out_matrix_size..].as_mut_ptr().cast(),
                    b,
                    gemm::Parallelism::None,
                );
            }
        }
    }

    #[cfg(not(feature = "rayon"))]
    {
        let _ = per_matrix_ops;
        for b in 0..batch_size {
            run_one(
                out_data[b * out_matrix_size..].as_mut_ptr().cast(),
                b,
                gemm::Parallelism::None,
            );
        }
    }

    into_product(output, out_len, out_shape)
}

// ============================================================================
// bf16 matmul (via f32 conversion)
// ============================================================================

fn matmul_bf16(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs = lhs.to_contiguous();
    let rhs = rhs.to_contiguous();

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();

    // Convert bf16 -> f32
    let lhs_f32: Vec<f32> = lhs.storage::<bf16>().iter().map(|x| x.to_f32()).collect();
    let rhs_f32: Vec<f32> = rhs.storage::<bf16>().iter().map(|x| x.to_f32()).collect();

    // Create f32 tensors
    let lhs_f32_tensor = FlexTensor::new(
        Bytes::from_elems(lhs_f32),
        Layout::contiguous(lhs_shape.clone()),
        DType::F32,
    );
    let rhs_f32_tensor = FlexTensor::new(
        Bytes::from_elems(rhs_f32),
        Layout::contiguous(rhs_shape.clone()),
        DType::F32,
    );

    // Compute matmul in f32
    let result_f32 = matmul_gemm::<f32>(lhs_f32_tensor, rhs_f32_tensor);

    // Convert f32 -> bf16
    let result_bf16: Vec<bf16> = result_f32
        .storage::<f32>()
        .iter()
        .map(|x| bf16::from_f32(*x))
        .collect();

    FlexTensor::new(
        Bytes::from_elems(result_bf16),
        result_f32.layout().clone(),
        DType::BF16,
    )
}

// ============================================================================
// Integer matmul (naive, with optional SIMD for i32)
// ============================================================================

/// Integer matrix multiplication dispatch.
pub fn int_matmul(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    assert_eq!(lhs.dtype(), rhs.dtype(), "int_matmul: dtype mismatch");

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    assert!(lhs_rank >= 2, "int_matmul requires at least 2D tensors");
    assert!(rhs_rank >= 2, "int_matmul requires at least 2D tensors");

    let k_lhs = lhs_shape[lhs_rank - 1];
    let k_rhs = rhs_shape[rhs_rank - 2];
    assert_eq!(k_lhs, k_rhs, "int_matmul: inner dimensions must match");

    match lhs.dtype() {
        DType::I32 => matmul_i32(lhs, rhs),
        DType::I64 => matmul_i64(lhs, rhs),
        _ => panic!("int_matmul: unsupported dtype {:?}", lhs.dtype()),
    }
}

/// i32 matmul using naive triple loop with SIMD dot product.
fn matmul_i32(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs = lhs.to_contiguous();
    let rhs = rhs.to_contiguous();

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    if lhs_rank == 2 && rhs_rank == 2 {
        matmul_2d_i32(&lhs, &rhs)
    } else {
        matmul_batched_i32(lhs, rhs)
    }
}

/// 2D i32 matmul: [M, K] x [K, N] -> [M, N]
/// Transposes rhs to enable contiguous access for dot product.
fn matmul_2d_i32(lhs: &FlexTensor, rhs: &FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();

    let m = lhs_shape[0];
    let k = lhs_shape[1];
    let n = rhs_shape[1];

    let lhs_data: &[i32] = lhs.storage();
    let rhs_data: &[i32] = rhs.storage();

    // Transpose rhs [K, N] -> [N, K] for contiguous column access
    let mut rhs_t = vec![0i32; k * n];
    for i in 0..k {
        for j in 0..n {
            rhs_t[j * k + i] = rhs_data[i * n + j];
        }
    }

    let mut output = vec![0i32; m * n];

    #[cfg(feature = "rayon")]
    if m * k * n >= PARALLEL_THRESHOLD && m > 1 && n > 0 {
        use rayon::prelude::*;
        // A few tasks per thread keeps SIMD dispatch per chunk rather than per
        // row, which matters for tall-skinny shapes with small n * k, while
        // leaving rayon room to balance load.
        let rows_per_task = m.div_ceil(4 * rayon::current_num_threads()).max(1);
        output
            .par_chunks_mut(rows_per_task * n)
            .enumerate()
            .for_each(|(task, out)| {
                let row_start = task * rows_per_task;
                let rows = out.len() / n;
                let lhs = &lhs_data[row_start * k..(row_start + rows) * k];
                matmul_rows_i32(lhs, &rhs_t, out, rows, n, k);
            });
    } else {
        matmul_rows_i32(lhs_data, &rhs_t, &mut output, m, n, k);
    }
    #[cfg(not(feature = "rayon"))]
    matmul_rows_i32(lhs_data, &rhs_t, &mut output, m, n, k);

    let out_shape = Shape::from(vec![m, n]);
    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(out_shape),
        DType::I32,
    )
}

/// `out[i * n + j] = dot(lhs row i, rhs_t row j)` for an `[m, k]` lhs and an
/// `[n, k]` transposed rhs. Uses macerator SIMD when the `simd` feature is
/// enabled, dispatching once for the whole block rather than per element.
#[inline]
fn matmul_rows_i32(lhs: &[i32], rhs_t: &[i32], out: &mut [i32], m: usize, n: usize, k: usize) {
    #[cfg(feature = "simd")]
    matmul_rows_i32_simd(lhs, rhs_t, out, m, n, k);

    #[cfg(not(feature = "simd"))]
    matmul_rows_i32_with(lhs, rhs_t, out, m, n, k, dot_i32_scalar);
}

#[inline(always)]
fn matmul_rows_i32_with(
    lhs: &[i32],
    rhs_t: &[i32],
    out: &mut [i32],
    m: usize,
    n: usize,
    k: usize,
    dot: impl Fn(&[i32], &[i32]) -> i32,
) {
    for i in 0..m {
        let lhs_row = &lhs[i * k..(i + 1) * k];
        for j in 0..n {
            out[i * n + j] = dot(lhs_row, &rhs_t[j * k..(j + 1) * k]);
        }
    }
}

#[cfg(feature = "simd")]
#[macerator::with_simd]
fn matmul_rows_i32_simd<S: macerator::Simd>(
    lhs: &[i32],
    rhs_t: &[i32],
    out: &mut [i32],
    m: usize,
    n: usize,
    k: usize,
) {
    matmul_rows_i32_with(lhs, rhs_t, out, m, n, k, dot_i32_simd::<S>);
}

#[cfg(not(feature = "simd"))]
#[inline]
fn dot_i32_scalar(a: &[i32], b: &[i32]) -> i32 {
    let mut sum = 0i32;
    for i in 0..a.len() {
        sum = sum.wrapping_add(a[i].wrapping_mul(b[i]));
    }
    sum
}

#[cfg(feature = "simd")]
#[inline(always)]
fn dot_i32_simd<S: macerator::Simd>(a: &[i32], b: &[i32]) -> i32 {
    use macerator::{Scalar, VMulAdd, vload_unaligned};

    let lanes = i32::lanes::<S>();
    let len = a.len();
    let simd_len = len / lanes * lanes;
    let mut acc = 0i32.splat::<S>();

    let mut i = 0;
    while i < simd_len {
        let va = unsafe { vload_unaligned(a.as_ptr().add(i)) };
        let vb = unsafe { vload_unaligned(b.as_ptr().add(i)) };
        acc = i32::vmul_add(va, vb, acc);
        i += lanes;
    }

    let mut sum = acc.reduce_add();
    while i < len {
        sum = sum.wrapping_add(a[i].wrapping_mul(b[i]));
        i += 1;
    }
    sum
}

/// Batched i32 matmul: [B..., M, K] x [B..., K, N] -> [B..., M, N]
///
/// Uses naive triple-loop with SIMD dot product and batch-level parallelism.
fn matmul_batched_i32(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    let m = lhs_shape[lhs_rank - 2];
    let k = lhs_shape[lhs_rank - 1];
    let n = rhs_shape[rhs_rank - 1];

    let lhs_batch: Vec<usize> = lhs_shape[..lhs_rank - 2].to_vec();
    let rhs_batch: Vec<usize> = rhs_shape[..rhs_rank - 2].to_vec();

    let (broadcast_shape, lhs_strides, rhs_strides) = broadcast_batch_dims(&lhs_batch, &rhs_batch);

    let batch_size: usize = broadcast_shape.iter().product();
    let rhs_batch_size: usize = rhs_batch.iter().product();
    let lhs_matrix_size = checked_size(m, k);
    let rhs_matrix_size = checked_size(k, n);
    let out_matrix_size = checked_size(m, n);

    let mut out_dims = broadcast_shape.clone();
    out_dims.push(m);
    out_dims.push(n);
    let out_shape = Shape::from(out_dims);

    let lhs_data: &[i32] = lhs.storage();
    let rhs_data: &[i32] = rhs.storage();

    // Transpose rhs per actual rhs batch: [B_rhs, K, N] -> [B_rhs, N, K]
    let mut rhs_transposed = vec![0i32; rhs_batch_size * n * k];
    for b in 0..rhs_batch_size {
        let src_offset = b * rhs_matrix_size;
        let dst_offset = b * n * k;
        for i in 0..k {
            for j in 0..n {
                rhs_transposed[dst_offset + j * k + i] = rhs_data[src_offset + i * n + j];
            }
        }
    }

    let mut output = vec![0i32; batch_size * out_matrix_size];

    let run_one = |b: usize, out_slice: &mut [i32]| {
        let lhs_batch_idx = batch_index_to_offset(b, &broadcast_shape, &lhs_strides);
        let rhs_batch_idx = batch_index_to_offset(b, &broadcast_shape, &rhs_strides);
        let lhs_offset = lhs_batch_idx * lhs_matrix_size;
        let rhs_t_offset = rhs_batch_idx * n * k;

        let lhs_slice = &lhs_data[lhs_offset..lhs_offset + lhs_matrix_size];
        let rhs_t_slice = &rhs_transposed[rhs_t_offset..rhs_t_offset + n * k];

        matmul_rows_i32(lhs_slice, rhs_t_slice, out_slice, m, n, k);
    };

    #[cfg(feature = "rayon")]
    if batch_size * m * k * n >= BATCH_PARALLEL_THRESHOLD && batch_size > 1 && out_matrix_size > 0 {
        use rayon::prelude::*;
        output
            .par_chunks_mut(out_matrix_size)
            .enumerate()
            .for_each(|(b, out_slice)| run_one(b, out_slice));
    } else {
        for b in 0..batch_size {
            let offset = b * out_matrix_size;
            run_one(b, &mut output[offset..offset + out_matrix_size]);
        }
    }

    #[cfg(not(feature = "rayon"))]
    {
        for b in 0..batch_size {
            let offset = b * out_matrix_size;
            run_one(b, &mut output[offset..offset + out_matrix_size]);
        }
    }

    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(out_shape),
        DType::I32,
    )
}

/// i64 matmul using naive triple loop.
fn matmul_i64(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs = lhs.to_contiguous();
    let rhs = rhs.to_contiguous();

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    if lhs_rank == 2 && rhs_rank == 2 {
        matmul_2d_i64(&lhs, &rhs)
    } else {
        matmul_batched_i64(lhs, rhs)
    }
}

/// 2D i64 matmul: [M, K] x [K, N] -> [M, N]
fn matmul_2d_i64(lhs: &FlexTensor, rhs: &FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();

    let m = lhs_shape[0];
    let k = lhs_shape[1];
    let n = rhs_shape[1];

    let lhs_data: &[i64] = lhs.storage();
    let rhs_data: &[i64] = rhs.storage();

    let mut output = vec![0i64; m * n];

    let run_row = |i: usize, row_out: &mut [i64]| {
        let lhs_row = &lhs_data[i * k..(i + 1) * k];
        for j in 0..n {
            let mut sum = 0i64;
            for l in 0..k {
                sum = sum.wrapping_add(lhs_row[l].wrapping_mul(rhs_data[l * n + j]));
            }
            row_out[j] = sum;
        }
    };

    #[cfg(feature = "rayon")]
    if m * k * n >= PARALLEL_THRESHOLD && m > 1 && n > 0 {
        use rayon::prelude::*;
        output
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(i, row_out)| run_row(i, row_out));
    } else {
        for i in 0..m {
            let row_start = i * n;
            run_row(i, &mut output[row_start..row_start + n]);
        }
    }
    #[cfg(not(feature = "rayon"))]
    for i in 0..m {
        let row_start = i * n;
        run_row(i, &mut output[row_start..row_start + n]);
    }

    let out_shape = Shape::from(vec![m, n]);
    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(out_shape),
        DType::I64,
    )
}

/// Batched i64 matmul with broadcast support
fn matmul_batched_i64(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    let m = lhs_shape[lhs_rank - 2];
    let k = lhs_shape[lhs_rank - 1];
    let n = rhs_shape[rhs_rank - 1];

    let lhs_batch: Vec<usize> = lhs_shape[..lhs_rank - 2].to_vec();
    let rhs_batch: Vec<usize> = rhs_shape[..rhs_rank - 2].to_vec();

    // Compute broadcast batch dimensions
    let (broadcast_shape, lhs_strides, rhs_strides) = broadcast_batch_dims(&lhs_batch, &rhs_batch);

    let batch_size: usize = broadcast_shape.iter().product();
    let lhs_matrix_size = checked_size(m, k);
    let rhs_matrix_size = checked_size(k, n);
    let out_matrix_size = checked_size(m, n);

    let mut out_dims = broadcast_shape.clone();
    out_dims.push(m);
    out_dims.push(n);
    let out_shape = Shape::from(out_dims);

    let lhs_data: &[i64] = lhs.storage();
    let rhs_data: &[i64] = rhs.storage();

    let mut output = vec![0i64; batch_size * out_matrix_size];

    let run_one = |b: usize, out_slice: &mut [i64]| {
        let lhs_batch_idx = batch_index_to_offset(b, &broadcast_shape, &lhs_strides);
        let rhs_batch_idx = batch_index_to_offset(b, &broadcast_shape, &rhs_strides);
        let lhs_offset = lhs_batch_idx * lhs_matrix_size;
        let rhs_offset = rhs_batch_idx * rhs_matrix_size;

        for i in 0..m {
            for j in 0..n {
                let mut sum = 0i64;
                for l in 0..k {
                    let lhs_idx = lhs_offset + i * k + l;
                    let rhs_idx = rhs_offset + l * n + j;
                    sum = sum.wrapping_add(lhs_data[lhs_idx].wrapping_mul(rhs_data[rhs_idx]));
                }
                out_slice[i * n + j] = sum;
            }
        }
    };

    #[cfg(feature = "rayon")]
    if batch_size * m * k * n >= BATCH_PARALLEL_THRESHOLD && batch_size > 1 && out_matrix_size > 0 {
        use rayon::prelude::*;
        output
            .par_chunks_mut(out_matrix_size)
            .enumerate()
            .for_each(|(b, out_slice)| run_one(b, out_slice));
    } else {
        for b in 0..batch_size {
            let offset = b * out_matrix_size;
            run_one(b, &mut output[offset..offset + out_matrix_size]);
        }
    }
    #[cfg(not(feature = "rayon"))]
    for b in 0..batch_size {
        let offset = b * out_matrix_size;
        run_one(b, &mut output[offset..offset + out_matrix_size]);
    }

    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(out_shape),
        DType::I64,
    )
}

// ============================================================================
// Tests
// ============================================================================

// Tests kept here exercise flex-specific behavior of the matmul kernel:
// dtype-specific storage paths (F64, F16, BF16) that the generic
// FloatElem-parameterized backend-tests cannot reach. Plain contiguous
// F32/I32/I64 matmul, stride-through-matmul variants (transposed /
// swap_dims / broadcast-transposed), and other generic coverage have
// been migrated to burn-backend-tests so they run against every backend.
// When adding new tests, keep them here only if they probe a flex
// dtype-storage path; otherwise add them to
// crates/burn-backend-tests/tests/tensor/float/ops/matmul.rs.
#[cfg(test)]
mod tests {
    use alloc::vec;
    use burn_backend::TensorData;
    use burn_backend::ops::FloatTensorOps;
    use burn_std::{bf16, f16};

    use crate::{Flex, FlexTensor};

    #[test]
    fn test_matmul_f64() {
        let lhs = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2]));
        let rhs = FlexTensor::from_data(TensorData::new(vec![5.0f64, 6.0, 7.0, 8.0], [2, 2]));

        let result = Flex::float_matmul(lhs, rhs);
        let values: Vec<f64> = result.into_data().try_into_vec().unwrap();

        assert_eq!(values, vec![19.0, 22.0, 43.0, 50.0]);
    }

    #[test]
    fn test_matmul_f16() {
        let lhs_vals: Vec<f16> = [1.0f32, 2.0, 3.0, 4.0]
            .iter()
            .copied()
            .map(f16::from_f32)
            .collect();
        let rhs_vals: Vec<f16> = [5.0f32, 6.0, 7.0, 8.0]
            .iter()
            .copied()
            .map(f16::from_f32)
            .collect();

        let lhs = FlexTensor::from_data(TensorData::new(lhs_vals, [2, 2]));
        let rhs = FlexTensor::from_data(TensorData::new(rhs_vals, [2, 2]));

        let result = Flex::float_matmul(lhs, rhs);
        let values: Vec<f16> = result.into_data().try_into_vec().unwrap();

        let expected = [19.0f32, 22.0, 43.0, 50.0];
        for (a, e) in values.iter().zip(expected.iter()) {
            assert!((a.to_f32() - e).abs() < 0.1, "f16 matmul mismatch");
        }
    }

    #[test]
    fn test_matmul_bf16() {
        let lhs_vals: Vec<bf16> = [1.0f32, 2.0, 3.0, 4.0]
            .iter()
            .copied()
            .map(bf16::from_f32)
            .collect();
        let rhs_vals: Vec<bf16> = [5.0f32, 6.0, 7.0, 8.0]
            .iter()
            .copied()
            .map(bf16::from_f32)
            .collect();

        let lhs = FlexTensor::from_data(TensorData::new(lhs_vals, [2, 2]));
        let rhs = FlexTensor::from_data(TensorData::new(rhs_vals, [2, 2]));

        let result = Flex::float_matmul(lhs, rhs);
        let values: Vec<bf16> = result.into_data().try_into_vec().unwrap();

        let expected = [19.0f32, 22.0, 43.0, 50.0];
        for (a, e) in values.iter().zip(expected.iter()) {
            assert!((a.to_f32() - e).abs() < 0.5, "bf16 matmul mismatch");
        }
    }

    /// `[B..., M, K] · [K, N]` by the definition, in `f64`.
    fn naive_shared_rhs(lhs: &[f64], lhs_shape: [usize; 4], rhs: &[f64], n: usize) -> Vec<f64> {
        let [b0, b1, m, k] = lhs_shape;
        let mut out = vec![0.0; b0 * b1 * m * n];
        for row in 0..b0 * b1 * m {
            for j in 0..n {
                out[row * n + j] = (0..k).map(|l| lhs[row * k + l] * rhs[l * n + j]).sum();
            }
        }
        out
    }

    #[test]
    fn a_matrix_shared_by_the_batch_multiplies_every_batch_s_rows() {
        let (shape, n) = ([2, 3, 4, 5], 6);
        let values =
            |len: usize| -> Vec<f64> { (0..len).map(|i| ((i * 7) % 11) as f64 - 5.0).collect() };
        let lhs_values = values(2 * 3 * 4 * 5);
        let rhs_values = values(5 * n);
        let expected = naive_shared_rhs(&lhs_values, shape, &rhs_values, n);
        let lhs = || FlexTensor::from_data(TensorData::new(lhs_values.clone(), shape));
        let product = |lhs: FlexTensor, rhs_shape: Vec<usize>| -> Vec<f64> {
            let rhs = FlexTensor::from_data(TensorData::new(rhs_values.clone(), rhs_shape));
            Flex::float_matmul(lhs, rhs)
                .into_data()
                .try_into_vec::<f64>()
                .unwrap()
        };
        // Contiguous rows: one folded product, with the matrix as `[K, N]` or `[1, 1, K, N]`.
        assert_eq!(product(lhs(), vec![5, n]), expected);
        assert_eq!(product(lhs(), vec![1, 1, 5, n]), expected);
        // Rows at a stride of 10 (the first 5 of 10 columns): folded at that stride.
        let wide: Vec<f64> = lhs_values
            .chunks(5)
            .flat_map(|row| row.iter().copied().chain([f64::NAN; 5]))
            .collect();
        let wide = FlexTensor::from_data(TensorData::new(wide, [2, 3, 4, 10])).narrow(3, 0, 5);
        assert_eq!(product(wide, vec![5, n]), expected);
        // Batch axes swapped: the rows do not follow on, each batch is its own product.
        let swapped = FlexTensor::from_data(TensorData::new(lhs_values.clone(), shape))
            .transpose(0, 1)
            .to_contiguous()
            .transpose(0, 1);
        assert_eq!(product(swapped, vec![5, n]), expected);
    }

    /// attnzoo's patch: products of few rows and many columns run as bands of columns on
    /// rayon's threads (three here, so that the bands are uneven): the same values as one product,
    /// with `W` row-major and as a view of `Wᵀ`, as a matrix and as a decoding step's `[1, 1, K]`.
    #[cfg(feature = "rayon")]
    #[test]
    fn few_rows_times_many_columns_are_split_into_bands_of_columns() {
        let values = |len: usize, seed: usize| -> Vec<f64> {
            (0..len)
                .map(|i| ((i * 7 + seed) % 13) as f64 - 6.0)
                .collect()
        };
        let (k, n) = (100, 1001);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for m in [1, 5, 16] {
            let x = values(m * k, 1);
            let w = values(k * n, 5);
            let mut expected = vec![0.0; m * n];
            for i in 0..m {
                for j in 0..n {
                    expected[i * n + j] = (0..k).map(|p| x[i * k + p] * w[p * n + j]).sum();
                }
            }
            let w_t: Vec<f64> = (0..n)
                .flat_map(|j| (0..k).map(move |p| (p, j)))
                .map(|(p, j)| w[p * n + j])
                .collect();
            let product = |lhs_shape: Vec<usize>, rhs: FlexTensor| -> Vec<f64> {
                let lhs = FlexTensor::from_data(TensorData::new(x.clone(), lhs_shape));
                pool.install(|| Flex::float_matmul(lhs, rhs))
                    .into_data()
                    .try_into_vec::<f64>()
                    .unwrap()
            };
            let row_major = || FlexTensor::from_data(TensorData::new(w.clone(), [k, n]));
            let column_major =
                FlexTensor::from_data(TensorData::new(w_t.clone(), [n, k])).transpose(0, 1);
            assert_eq!(product(vec![m, k], row_major()), expected, "{m} rows");
            assert_eq!(product(vec![1, m, k], row_major()), expected, "{m} rows, batch 1");
            assert_eq!(product(vec![m, k], column_major), expected, "{m} rows, Wᵀ");
        }
    }

    #[test]
    fn a_column_major_right_operand_times_few_rows_is_computed_column_major_and_transposed() {
        // `x · Wᵀ` with `Wᵀ` a view of `W [N, K]`: few rows (3, 17: computed column-major, a
        // row count that is not a multiple of the 16-row blocks) and many (64: gemm's own
        // orientation), as one matrix and as a batch of two.
        let values = |len: usize, seed: usize| -> Vec<f64> {
            (0..len)
                .map(|i| ((i * 7 + seed) % 13) as f64 - 6.0)
                .collect()
        };
        let (k, n) = (100, 90);
        for m in [3, 17, 64] {
            for batch in [1, 2] {
                let x = values(batch * m * k, 1);
                let w = values(batch * n * k, 5);
                let mut expected = vec![0.0; batch * m * n];
                for b in 0..batch {
                    for i in 0..m {
                        for j in 0..n {
                            expected[(b * m + i) * n + j] = (0..k)
                                .map(|l| x[(b * m + i) * k + l] * w[(b * n + j) * k + l])
                                .sum();
                        }
                    }
                }
                let (x_shape, w_shape) = if batch == 1 {
                    (vec![m, k], vec![n, k])
                } else {
                    (vec![batch, m, k], vec![batch, n, k])
                };
                let rank = x_shape.len();
                let x = FlexTensor::from_data(TensorData::new(x, x_shape));
                let w_t = FlexTensor::from_data(TensorData::new(w, w_shape))
                    .transpose(rank - 2, rank - 1);
                let product: Vec<f64> = Flex::float_matmul(x, w_t)
                    .into_data()
                    .try_into_vec()
                    .unwrap();
                assert_eq!(product, expected, "m = {m}, batch of {batch}");
            }
        }
    }

    #[test]
    fn test_matmul_batched_transposed_f64() {
        // Non-contiguous (swap_dims) batched matmul on the F64 dtype path.
        let q_data = TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [2, 2, 2]);
        let k_data = TensorData::new(vec![1.0f64, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0], [2, 2, 2]);

        let q = FlexTensor::from_data(q_data.clone());
        let k = FlexTensor::from_data(k_data.clone());
        let k_t = k.transpose(1, 2);
        let result = Flex::float_matmul(q, k_t);

        let q2 = FlexTensor::from_data(q_data);
        let k2 = FlexTensor::from_data(k_data)
            .transpose(1, 2)
            .to_contiguous();
        let expected = Flex::float_matmul(q2, k2);

        let values: Vec<f64> = result.into_data().try_into_vec().unwrap();
        let expected: Vec<f64> = expected.into_data().try_into_vec().unwrap();
        assert_eq!(values, expected);
    }

    #[test]
    fn test_matmul_batched_transposed_f16() {
        // Non-contiguous (swap_dims) batched matmul on the F16 dtype path.
        let f = f16::from_f32;
        let q_data = TensorData::new(
            vec![
                f(1.0),
                f(2.0),
                f(3.0),
                f(4.0),
                f(5.0),
                f(6.0),
                f(7.0),
                f(8.0),
            ],
            [2, 2, 2],
        );
        let k_data = TensorData::new(
            vec![
                f(1.0),
                f(0.0),
                f(0.0),
                f(1.0),
                f(2.0),
                f(0.0),
                f(0.0),
                f(2.0),
            ],
            [2, 2, 2],
        );

        let q = FlexTensor::from_data(q_data.clone());
        let k = FlexTensor::from_data(k_data.clone());
        let k_t = k.transpose(1, 2);
        let result = Flex::float_matmul(q, k_t);

        let q2 = FlexTensor::from_data(q_data);
        let k2 = FlexTensor::from_data(k_data)
            .transpose(1, 2)
            .to_contiguous();
        let expected = Flex::float_matmul(q2, k2);

        let values: Vec<f16> = result.into_data().try_into_vec().unwrap();
        let expected: Vec<f16> = expected.into_data().try_into_vec().unwrap();
        assert_eq!(values, expected);
    }
}
