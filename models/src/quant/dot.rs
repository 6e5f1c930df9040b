//! `Σⱼ wⱼ xⱼ` over one row of blocks, straight from the blocks, as llama.cpp multiplies when
//! decoding (its `ggml_vec_dot_*` kernels): `x` is quantized once per product to 8 bits in blocks
//! of 32 ([`Q8Row`]: `x ≈ d_x q_x`, llama.cpp's `Q8_0` activations with their f16 scale), and each
//! weight block is multiplied in integers — its quants, made unsigned (`u = q + offset`), times
//! `x`'s — then scaled:
//!
//! `Σ_blocks d_w d_x (Σ u q_x − offset · Σ q_x) + m_w d_x Σ q_x`
//!
//! (the K types per sub-block of 32 or 16, each with its own scale and minimum). The integer sums
//! are exact: the result is the dequantized row times the dequantized `x` up to the rounding of
//! the float sums. Quantizing `x` (an error of at most `d_x / 2` per element) is the approximation.
//!
//! On x86-64 with AVX2 the types of today's files have their own loops (32 `u8 × i8` products
//! summed in pairs by `vpmaddubsw`, as llama.cpp's); every type has a portable loop, the
//! reference the tests hold the AVX2 ones to.

// The loops index several arrays by the block layout's own arithmetic: indices read as the format.
#![allow(clippy::needless_range_loop)]

use half::f16;

use super::blocks::{half, k_scale_min, q3_k_scales, GgmlType, QK_K};

/// A row of `x` quantized for the integer products: `x ≈ d q` with `d = max |x| / 127` over each
/// span of 32 elements (llama.cpp's `Q8_0`), or of 256 for the K types (its `Q8_K`: one scale
/// per super-block lets their loops sum a super-block in integers), and `q = x / d` rounded to
/// the nearest integer (ties to even).
pub struct Q8Row {
    /// One quant per element.
    q: Vec<i8>,
    /// One scale per 32 elements, repeated over a span (NaN where the span holds a NaN: it
    /// reaches the product).
    d: Vec<f32>,
    /// `Σ q` over each 16 elements.
    sums: Vec<i32>,
    /// `d Σ q` over each block of 32 (the offsets' and minimums' factor; for a type with
    /// minimums, llama.cpp's f16 `Q8_1` sum).
    scaled_sums: Vec<f32>,
}

impl Q8Row {
    /// `x` for the products with `kind`'s blocks, of a length that is a multiple of the type's
    /// block (the rows' are).
    pub fn new(kind: GgmlType, x: &[f32]) -> Q8Row {
        let super_blocks = kind.block_elements() == QK_K;
        let with_minimums = matches!(kind, GgmlType::Q4_1 | GgmlType::Q5_1);
        let span = if super_blocks { QK_K } else { 32 };
        assert_eq!(x.len() % span, 0, "a Q8 row is whole spans of {span}");
        let mut q = vec![0i8; x.len()];
        let mut d = Vec::with_capacity(x.len() / 32);
        let mut scaled_sums = Vec::with_capacity(x.len() / 32);
        for (x, q) in x.chunks_exact(span).zip(q.chunks_exact_mut(span)) {
            // Folds without an early exit, so that they run in vector registers.
            let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let nan = x.iter().fold(false, |nan, v| nan | v.is_nan());
            // llama.cpp's arithmetic: the quants are `x · (127 / max)` rounded; the scale is
            // `max / 127` rounded to f16 for blocks of 32 (its `Q8_0`, `Q8_1` keep an f16), and
            // `1 / (127 / max)` in f32 for the K types (its `Q8_K`).
            let inverse = if amax > 0.0 { 127.0 / amax } else { 0.0 };
            let raw = if nan { f32::NAN } else { amax / 127.0 };
            let scale = if !super_blocks {
                f16::from_f32(raw).to_f32()
            } else if amax > 0.0 && !nan {
                1.0 / inverse
            } else {
                raw
            };
            for (q, x) in q.iter_mut().zip(x) {
                *q = nearest(x * inverse) as i8;
            }
            d.extend(std::iter::repeat_n(scale, span / 32));
            // `d Σ q` per block of 32; for a type with minimums as llama.cpp's `Q8_1` keeps it,
            // the unrounded scale times the sum, rounded to f16.
            for block in q.chunks_exact(32) {
                let sum = block.iter().map(|&v| v as i32).sum::<i32>() as f32;
                scaled_sums.push(if with_minimums {
                    f16::from_f32(raw * sum).to_f32()
                } else {
                    scale * sum
                });
            }
        }
        let sums: Vec<i32> = q
            .chunks_exact(16)
            .map(|c| c.iter().map(|&v| v as i32).sum())
            .collect();
        Q8Row {
            q,
            d,
            sums,
            scaled_sums,
        }
    }

    /// The quants of block `b` (32).
    fn block(&self, b: usize) -> &[i8] {
        &self.q[32 * b..32 * b + 32]
    }

    /// `Σ q` over block `b`.
    fn block_sum(&self, b: usize) -> i32 {
        self.sums[2 * b] + self.sums[2 * b + 1]
    }

    /// `x` as the products see it, `d q` (for tests).
    #[cfg(test)]
    pub fn dequantized(&self) -> Vec<f32> {
        self.q
            .iter()
            .enumerate()
            .map(|(i, &q)| self.d[i / 32] * q as f32)
            .collect()
    }
}

/// `v` rounded to the nearest integer, ties to even (as llama.cpp's AVX2 quantization of the
/// activations, `_mm256_round_ps`), for `|v| ≤ 2²²`: adding 1.5 · 2²³ leaves no fraction bits.
/// Unlike `f32::round` (a call to the C library) it runs in vector registers.
#[inline(always)]
fn nearest(v: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0;
    (v + SHIFT) - SHIFT
}

/// `out[r] = Σⱼ w_rj xⱼ` for the rows of `kind` blocks laid one after the other in `rows`
/// (`out.len()` of them; a block type: the float types are multiplied as floats) and `x`
/// quantized to a row's length.
///
/// The AVX2 loops when the processor has them (with FMA and F16C; checked once, at run time),
/// else the portable ones. The type is matched once for all the rows.
pub fn dot_rows(kind: GgmlType, rows: &[u8], x: &Q8Row, out: &mut [f32]) {
    let row_bytes = x.q.len() / kind.block_elements() * kind.block_bytes();
    assert!(
        x.q.len() % kind.block_elements() == 0 && rows.len() == out.len() * row_bytes,
        "{} rows of {} bytes for an x of {}",
        out.len(),
        rows.len(),
        x.q.len()
    );
    if row_bytes == 0 {
        out.fill(0.0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static AVX2: OnceLock<bool> = OnceLock::new();
        if *AVX2.get_or_init(|| {
            is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c")
        }) {
            // SAFETY: the features were just detected; every row is as long as `x` (checked).
            return unsafe { avx2::dot_rows(kind, rows.chunks_exact(row_bytes), x, out) };
        }
    }
    for (row, out) in rows.chunks_exact(row_bytes).zip(out) {
        *out = dot_row_portable(kind, row, x);
    }
}

/// The portable loops; see the module docs.
#[inline(always)]
fn dot_row_portable(kind: GgmlType, row: &[u8], x: &Q8Row) -> f32 {
    let blocks = row.chunks_exact(kind.block_bytes());
    match kind {
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => {
            unreachable!("float rows are multiplied as floats")
        }
        GgmlType::Q8_0 => blocks
            .enumerate()
            .map(|(b, block)| {
                let w = &block[2..34];
                let p: i32 = (0..32)
                    .map(|j| (w[j] as i8) as i32 * x.block(b)[j] as i32)
                    .sum();
                half(block, 0) * x.d[b] * p as f32
            })
            .sum(),
        GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q5_0 | GgmlType::Q5_1 => {
            let (min, five) = (
                matches!(kind, GgmlType::Q4_1 | GgmlType::Q5_1),
                matches!(kind, GgmlType::Q5_0 | GgmlType::Q5_1),
            );
            let offset = if five { 16 } else { 8 };
            blocks
                .enumerate()
                .map(|(b, block)| {
                    let (qh, qs) = match (min, five) {
                        (false, false) => (0, &block[2..18]),
                        (true, false) => (0, &block[4..20]),
                        (false, true) => (read_u32(&block[2..6]), &block[6..22]),
                        (true, true) => (read_u32(&block[4..8]), &block[8..24]),
                    };
                    // Element j < 16 is the low nibble of qs[j], j ≥ 16 the high one of
                    // qs[j - 16]; its fifth bit is bit j of qh.
                    let u: [u8; 32] = std::array::from_fn(|j| {
                        let nibble = if j < 16 { qs[j] & 0xF } else { qs[j - 16] >> 4 };
                        nibble | ((((qh >> j) & 1) as u8) << 4)
                    });
                    let (p, s) = (udot(&u, x.block(b)), x.block_sum(b));
                    let d = half(block, 0) * x.d[b];
                    if min {
                        d * p as f32 + half(block, 2) * x.scaled_sums[b]
                    } else {
                        d * (p - offset * s) as f32
                    }
                })
                .sum()
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let five = kind == GgmlType::Q5_K;
            let mut sum = 0.0;
            for (i, block) in blocks.enumerate() {
                let (d, dmin) = (half(block, 0), half(block, 2));
                let (scale, min) = k_scale_min(&block[4..16]);
                let (qh, qs) = if five {
                    (&block[16..48], &block[48..176])
                } else {
                    (&block[0..0], &block[16..144])
                };
                // Sub-block j = 2c + s (elements 32j..32j + 32): nibble s of qs[32c + l], its
                // fifth bit bit j of qh[l].
                for j in 0..8 {
                    let (c, s) = (j / 2, j % 2);
                    let u: [u8; 32] = std::array::from_fn(|l| {
                        let high = if five { ((qh[l] >> j) & 1) << 4 } else { 0 };
                        ((qs[32 * c + l] >> (4 * s)) & 0xF) | high
                    });
                    let b = 8 * i + j;
                    sum += x.d[b]
                        * (d * scale[j] as f32 * udot(&u, x.block(b)) as f32
                            - dmin * min[j] as f32 * x.block_sum(b) as f32);
                }
            }
            sum
        }
        GgmlType::Q6_K => {
            let mut sum = 0.0;
            for (i, block) in blocks.enumerate() {
                let (ql, qh, scales) = (&block[..128], &block[128..192], &block[192..208]);
                let d = half(block, 208);
                // Elements 128h + 32s + l: low 4 bits (ql[64h + 32(s % 2) + l] >> 4(s / 2)),
                // high 2 bits (qh[32h + l] >> 2s), minus 32; a scale per 16.
                for h in 0..2 {
                    for s in 0..4 {
                        let u: [u8; 32] = std::array::from_fn(|l| {
                            let low = (ql[64 * h + 32 * (s % 2) + l] >> (4 * (s / 2))) & 0xF;
                            low | (((qh[32 * h + l] >> (2 * s)) & 3) << 4)
                        });
                        let b = 8 * i + 4 * h + s;
                        let mut p = 0i32;
                        for g in 0..2 {
                            let sc = scales[8 * h + 2 * s + g] as i8 as i32;
                            let part = udot(&u[16 * g..16 * g + 16], &x.block(b)[16 * g..]);
                            p += sc * (part - 32 * x.sums[2 * b + g]);
                        }
                        sum += d * x.d[b] * p as f32;
                    }
                }
            }
            sum
        }
        GgmlType::Q2_K | GgmlType::Q3_K => {
            let three = kind == GgmlType::Q3_K;
            let mut sum = 0.0;
            for (i, block) in blocks.enumerate() {
                // Q2_K: scales (low 4 bits) and minimums (high 4) per 16, qs, d, dmin.
                // Q3_K: hmask, qs, 6-bit signed scales per 16, d; q = low + 4·high − 4.
                let (hmask, qs) = if three {
                    (&block[..32], &block[32..96])
                } else {
                    (&block[0..0], &block[16..80])
                };
                let signed = three.then(|| q3_k_scales(&block[96..108]));
                let (d, dmin) = if three {
                    (half(block, 108), 0.0)
                } else {
                    (half(block, 80), half(block, 82))
                };
                // Elements 128h + 32s + 16g + l: bits 2s of qs[32h + 16g + l] (Q3_K's third
                // bit: bit 4h + s of hmask[16g + l]); group (element / 16) 8h + 2s + g.
                for h in 0..2 {
                    for s in 0..4 {
                        let b = 8 * i + 4 * h + s;
                        for g in 0..2 {
                            let u: [u8; 16] = std::array::from_fn(|l| {
                                let low = (qs[32 * h + 16 * g + l] >> (2 * s)) & 3;
                                let high = if three {
                                    ((hmask[16 * g + l] >> (4 * h + s)) & 1) << 2
                                } else {
                                    0
                                };
                                low | high
                            });
                            let group = 8 * h + 2 * s + g;
                            let p = udot(&u, &x.block(b)[16 * g..]);
                            let s16 = x.sums[2 * b + g];
                            sum += x.d[b]
                                * match signed {
                                    Some(scales) => d * scales[group] as f32 * (p - 4 * s16) as f32,
                                    None => {
                                        let packed = block[group];
                                        d * (packed & 0xF) as f32 * p as f32
                                            - dmin * (packed >> 4) as f32 * s16 as f32
                                    }
                                };
                        }
                    }
                }
            }
            sum
        }
    }
}

/// `Σ uᵢ qᵢ` over `u`'s length.
#[inline(always)]
fn udot(u: &[u8], q: &[i8]) -> i32 {
    u.iter().zip(q).map(|(&u, &q)| u as i32 * q as i32).sum()
}

fn read_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The AVX2 loops: per 32 elements, the unsigned quants in one register beside `x`'s 32, their
/// products summed in pairs (`vpmaddubsw`, within i16: `u ≤ 63`, or `|w| ≤ 128` for Q8_0's
/// signed quants by llama.cpp's sign trick), then in fours (`vpmaddwd`), scaled as floats.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{k_scale_min, GgmlType, Q8Row};

    /// # Safety
    /// The processor has AVX2, FMA and F16C, and every row holds as many elements as `x`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn dot_rows(kind: GgmlType, rows: Blocks<'_>, x: &Q8Row, out: &mut [f32]) {
        #[inline(always)]
        fn each(rows: Blocks<'_>, out: &mut [f32], dot: impl Fn(&[u8]) -> f32) {
            for (row, out) in rows.zip(out) {
                *out = dot(row);
            }
        }
        let size = kind.block_bytes();
        match kind {
            GgmlType::Q8_0 => each(rows, out, |row| two_lanes::<Q8_0>(row, x)),
            GgmlType::Q4_0 => each(rows, out, |row| two_lanes::<Q4Q5<false, false>>(row, x)),
            GgmlType::Q4_1 => each(rows, out, |row| two_lanes::<Q4Q5<true, false>>(row, x)),
            GgmlType::Q5_0 => each(rows, out, |row| two_lanes::<Q4Q5<false, true>>(row, x)),
            GgmlType::Q5_1 => each(rows, out, |row| two_lanes::<Q4Q5<true, true>>(row, x)),
            GgmlType::Q4_K => each(rows, out, |row| q4_k(false, row.chunks_exact(size), x)),
            GgmlType::Q5_K => each(rows, out, |row| q4_k(true, row.chunks_exact(size), x)),
            GgmlType::Q6_K => each(rows, out, |row| q6_k(row.chunks_exact(size), x)),
            _ => each(rows, out, |row| super::dot_row_portable(kind, row, x)),
        }
    }

    type Blocks<'a> = std::slice::ChunksExact<'a, u8>;

    /// 8 sums of four `u · q` each, `u` unsigned, `q` signed.
    #[inline(always)]
    unsafe fn products(u: __m256i, q: __m256i) -> __m256i {
        _mm256_madd_epi16(_mm256_maddubs_epi16(u, q), _mm256_set1_epi16(1))
    }

    /// The f16 at byte `at` of a block, converted by the processor (F16C).
    #[inline(always)]
    unsafe fn f16(block: &[u8], at: usize) -> f32 {
        let bits = u16::from_le_bytes([block[at], block[at + 1]]);
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
    }

    /// Asks for the weights 1.5 KiB ahead of byte `at` of `row` (the rows of a matrix follow
    /// one another): the loops no longer wait on memory at every new cache line (a large
    /// product then runs at a bare read's rate: docs/MEASUREMENTS.md, GGUF files). A prefetch
    /// never faults, past the end of the matrix too.
    #[inline(always)]
    unsafe fn prefetch(row: &[u8], at: usize) {
        _mm_prefetch::<_MM_HINT_T0>(row.as_ptr().wrapping_add(at + 1536).cast());
    }

    #[inline(always)]
    unsafe fn load32(bytes: &[u8]) -> __m256i {
        debug_assert!(bytes.len() >= 32);
        _mm256_loadu_si256(bytes.as_ptr().cast())
    }

    // `x`'s parts of block `b`, read without bounds checks: `b` is a block of a row, and every
    // row holds as many elements as `x` (`dot_rows`' contract).

    #[inline(always)]
    unsafe fn x_block(x: &Q8Row, b: usize) -> __m256i {
        _mm256_loadu_si256(x.q.as_ptr().add(32 * b).cast())
    }

    #[inline(always)]
    unsafe fn x_scale(x: &Q8Row, b: usize) -> f32 {
        *x.d.get_unchecked(b)
    }

    #[inline(always)]
    unsafe fn x_sum16(x: &Q8Row, half: usize) -> i32 {
        *x.sums.get_unchecked(half)
    }

    #[inline(always)]
    unsafe fn sum(v: __m256) -> f32 {
        let v = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let v = _mm_add_ps(v, _mm_movehl_ps(v, v));
        let v = _mm_add_ss(v, _mm_movehdup_ps(v));
        _mm_cvtss_f32(v)
    }

    /// 32 nibbles of 16 bytes in element order: the low nibbles, then the high ones.
    #[inline(always)]
    unsafe fn nibbles(qs: &[u8]) -> __m256i {
        debug_assert!(qs.len() >= 16);
        let bytes = _mm_loadu_si128(qs.as_ptr().cast());
        let both = _mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes);
        _mm256_and_si256(both, _mm256_set1_epi8(0xF))
    }

    /// Byte `i` is 16 where bit `i` of `bits` is set, else 0 (llama.cpp's `bytes_from_bits_32`).
    #[inline(always)]
    unsafe fn sixteens_of_bits(bits: u32) -> __m256i {
        let shuffle = _mm256_set_epi64x(
            0x0303030303030303,
            0x0202020202020202,
            0x0101010101010101,
            0,
        );
        let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(bits as i32), shuffle);
        let set = _mm256_cmpeq_epi8(
            _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)),
            _mm256_set1_epi64x(-1),
        );
        _mm256_and_si256(set, _mm256_set1_epi8(16))
    }

    /// One 32-element block's part of a row's dot product: `scale · Σ products + rest`.
    trait Block {
        /// Bytes of a block.
        const BYTES: usize;
        /// (scale, the 8 sums of products, rest) of block `b` of `row`.
        ///
        /// # Safety
        /// `b < row.len() / BYTES`, and `row` holds as many elements as `x`.
        unsafe fn block(row: &[u8], b: usize, x: &Q8Row) -> (f32, __m256i, f32);
    }

    /// Sums a row's blocks into two accumulators (even and odd blocks), so that no block waits
    /// on the one before it; named accumulators stay in registers (an array indexed by `b % 2`
    /// went through the stack on every block).
    #[inline(always)]
    unsafe fn two_lanes<B: Block>(row: &[u8], x: &Q8Row) -> f32 {
        #[inline(always)]
        unsafe fn add(acc: __m256, (scale, p, rest): (f32, __m256i, f32), sum: &mut f32) -> __m256 {
            *sum += rest;
            _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(p), acc)
        }
        let n = row.len() / B::BYTES;
        let (mut even, mut odd, mut rest) = (_mm256_setzero_ps(), _mm256_setzero_ps(), 0.0f32);
        let mut b = 0;
        while b + 1 < n {
            prefetch(row, B::BYTES * b);
            even = add(even, B::block(row, b, x), &mut rest);
            odd = add(odd, B::block(row, b + 1, x), &mut rest);
            b += 2;
        }
        if b < n {
            even = add(even, B::block(row, b, x), &mut rest);
        }
        sum(_mm256_add_ps(even, odd)) + rest
    }

    /// Q8_0: signed quants, by llama.cpp's sign trick.
    struct Q8_0;

    impl Block for Q8_0 {
        const BYTES: usize = 34;
        #[inline(always)]
        unsafe fn block(row: &[u8], b: usize, x: &Q8Row) -> (f32, __m256i, f32) {
            // `b` is below `row.len() / BYTES` (`two_lanes`).
            let block = row.get_unchecked(Self::BYTES * b..Self::BYTES * (b + 1));
            let w = load32(&block[2..]);
            let q = _mm256_sign_epi8(x_block(x, b), w);
            (
                f16(block, 0) * x_scale(x, b),
                products(_mm256_sign_epi8(w, w), q),
                0.0,
            )
        }
    }

    /// Q4_0/Q4_1/Q5_0/Q5_1 (`MIN`: a minimum per block; `FIVE`: a fifth bit).
    struct Q4Q5<const MIN: bool, const FIVE: bool>;

    impl<const MIN: bool, const FIVE: bool> Block for Q4Q5<MIN, FIVE> {
        const BYTES: usize = 18 + 2 * MIN as usize + 4 * FIVE as usize;
        #[inline(always)]
        unsafe fn block(row: &[u8], b: usize, x: &Q8Row) -> (f32, __m256i, f32) {
            // `b` is below `row.len() / BYTES` (`two_lanes`).
            let block = row.get_unchecked(Self::BYTES * b..Self::BYTES * (b + 1));
            let qs_at = Self::BYTES - 16;
            let mut u = nibbles(&block[qs_at..]);
            if FIVE {
                let qh = &block[qs_at - 4..qs_at];
                u = _mm256_or_si256(
                    u,
                    sixteens_of_bits(u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]])),
                );
            }
            let dw = f16(block, 0);
            let offset = if FIVE { 16.0 } else { 8.0 };
            let rest =
                if MIN { f16(block, 2) } else { -offset * dw } * *x.scaled_sums.get_unchecked(b);
            (dw * x_scale(x, b), products(u, x_block(x, b)), rest)
        }
    }

    /// Q4_K/Q5_K (`five`: a fifth bit) against `x` with one scale per super-block: each 32's
    /// products are scaled by its 6-bit scale in integers (`vpmaddwd`), the super-block summed
    /// in integers and scaled once as floats (llama.cpp's `ggml_vec_dot_q4_K_q8_K`); the
    /// minimums meet `x`'s sums per 32.
    #[inline(always)]
    unsafe fn q4_k(five: bool, blocks: Blocks<'_>, x: &Q8Row) -> f32 {
        let mut acc = _mm256_setzero_ps();
        let mut rest = 0.0f32;
        let low = _mm256_set1_epi8(0xF);
        for (i, block) in blocks.enumerate() {
            prefetch(block, 0);
            let dx = x_scale(x, 8 * i);
            let (d, dmin) = (f16(block, 0) * dx, f16(block, 2) * dx);
            let (scale, min) = k_scale_min(&block[4..16]);
            let qs = if five {
                &block[48..176]
            } else {
                &block[16..144]
            };
            let qh = if five {
                load32(&block[16..48])
            } else {
                _mm256_setzero_si256()
            };
            let mut sumi = _mm256_setzero_si256();
            let mut mins = 0i32;
            for c in 0..4 {
                let bytes = load32(&qs[32 * c..]);
                for s in 0..2 {
                    let j = 2 * c + s;
                    let mut u = if s == 0 {
                        _mm256_and_si256(bytes, low)
                    } else {
                        _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low)
                    };
                    if five {
                        let bit = _mm256_set1_epi8((1u8 << j) as i8);
                        let set = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
                        u = _mm256_or_si256(u, _mm256_and_si256(set, _mm256_set1_epi8(16)));
                    }
                    let b = 8 * i + j;
                    let p = _mm256_maddubs_epi16(u, x_block(x, b));
                    let p = _mm256_madd_epi16(p, _mm256_set1_epi16(scale[j] as i16));
                    sumi = _mm256_add_epi32(sumi, p);
                    mins += min[j] as i32 * (x_sum16(x, 2 * b) + x_sum16(x, 2 * b + 1));
                }
            }
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
            rest -= dmin * mins as f32;
        }
        sum(acc) + rest
    }

    /// Q6_K against `x` with one scale per super-block: the 6-bit quants made unsigned
    /// (`u = q + 32`), each 16's products scaled by its signed scale in integers, the offsets
    /// (`32 · scale · Σ x`) taken off in integers, the super-block scaled once as floats.
    #[inline(always)]
    unsafe fn q6_k(blocks: Blocks<'_>, x: &Q8Row) -> f32 {
        let mut acc = _mm256_setzero_ps();
        let (low, two) = (_mm256_set1_epi8(0xF), _mm256_set1_epi8(3));
        for (i, block) in blocks.enumerate() {
            prefetch(block, 0);
            let (ql, qh, scales) = (&block[..128], &block[128..192], &block[192..208]);
            let d = f16(block, 208) * x_scale(x, 8 * i);
            let signed_scales = _mm_loadu_si128(scales.as_ptr().cast());
            let mut sumi = _mm256_setzero_si256();
            for h in 0..2 {
                let (ql0, ql1) = (load32(&ql[64 * h..]), load32(&ql[64 * h + 32..]));
                let high = load32(&qh[32 * h..]);
                for s in 0..4 {
                    let ql = if s % 2 == 0 { ql0 } else { ql1 };
                    let nibble = if s < 2 {
                        _mm256_and_si256(ql, low)
                    } else {
                        _mm256_and_si256(_mm256_srli_epi16(ql, 4), low)
                    };
                    let top = match s {
                        0 => high,
                        1 => _mm256_srli_epi16(high, 2),
                        2 => _mm256_srli_epi16(high, 4),
                        _ => _mm256_srli_epi16(high, 6),
                    };
                    let u =
                        _mm256_or_si256(nibble, _mm256_slli_epi16(_mm256_and_si256(top, two), 4));
                    // Scale 8h + 2s for the first 16 elements, the next one for the others.
                    let k = (8 * h + 2 * s) as i8;
                    let pick = _mm_set_epi64x(
                        i64::from_ne_bytes([k as u8 + 1; 8]),
                        i64::from_ne_bytes([k as u8; 8]),
                    );
                    let by_scale = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(signed_scales, pick));
                    let b = 8 * i + 4 * h + s;
                    let p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, x_block(x, b)), by_scale);
                    sumi = _mm256_add_epi32(sumi, p);
                }
            }
            // x's sum over elements 16k..16k + 16 of the super-block meets scale k.
            let offsets: i32 = (0..16)
                .map(|k| scales[k] as i8 as i32 * x_sum16(x, 16 * i + k))
                .sum();
            let sumi = _mm256_sub_epi32(sumi, _mm256_setr_epi32(32 * offsets, 0, 0, 0, 0, 0, 0, 0));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
        }
        sum(acc)
    }
}

/// (the processor's loop, the portable loop) for each of `rows`, for the tests.
#[cfg(test)]
pub fn both(kind: GgmlType, rows: &[u8], x: &Q8Row) -> Vec<(f32, f32)> {
    let row_bytes = x.q.len() / kind.block_elements() * kind.block_bytes();
    let mut fast = vec![0.0; rows.len() / row_bytes];
    dot_rows(kind, rows, x, &mut fast);
    let portable = rows
        .chunks_exact(row_bytes)
        .map(|row| dot_row_portable(kind, row, x));
    fast.into_iter().zip(portable).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x` rounds to its blocks' scale as llama.cpp's `Q8_0`: `q = x · 127 / max` rounded, the
    /// scale `max / 127` kept as an f16; every element within half a step (and the f16
    /// rounding of the scale, times `|q| ≤ 127`) of `d q`; a block of zeros (scale 0) stays zeros.
    #[test]
    fn x_is_quantized_per_block_of_32_within_half_a_step() {
        let mut x: Vec<f32> = (0..96)
            .map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5)
            .collect();
        x[32..64].fill(0.0);
        let row = Q8Row::new(GgmlType::Q8_0, &x);
        let back = row.dequantized();
        for (b, x) in x.chunks(32).enumerate() {
            let step = x.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 127.0;
            assert_eq!(row.d[b], f16::from_f32(step).to_f32());
            for (i, a) in x.iter().enumerate() {
                let got = back[32 * b + i];
                let bound = step / 2.0 + 127.0 * (row.d[b] - step).abs() + 1e-7;
                assert!((a - got).abs() <= bound, "{b}.{i}: {a} vs {got}");
            }
        }
        assert_eq!(row.d[1], 0.0);
        // For a type with minimums, `d Σ q` as llama.cpp's `Q8_1` keeps it: the unrounded scale
        // times the sum, rounded to f16.
        let with_mins = Q8Row::new(GgmlType::Q4_1, &x);
        for (b, x) in x.chunks(32).enumerate() {
            let step = x.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 127.0;
            let sum = with_mins.block_sum(b) as f32;
            assert_eq!(with_mins.scaled_sums[b], f16::from_f32(step * sum).to_f32());
        }
        assert_eq!(row.sums.len(), 6);
        assert_eq!(
            row.sums[0],
            row.q[..16].iter().map(|&q| q as i32).sum::<i32>()
        );
    }

    /// For the K types one scale spans a super-block of 256: the largest element of the 256
    /// sets it, and every element is within half of its step.
    #[test]
    fn x_for_the_k_types_is_quantized_per_super_block() {
        let mut x: Vec<f32> = (0..512)
            .map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5)
            .collect();
        x[300] = 10.0;
        let row = Q8Row::new(GgmlType::Q4_K, &x);
        assert!(row.d[..8].iter().all(|&d| d == row.d[0]));
        assert!(row.d[8..].iter().all(|&d| d == 1.0 / (127.0 / 10.0)));
        assert!(row.d[0] < row.d[8]);
        for (i, (a, b)) in x.iter().zip(row.dequantized()).enumerate() {
            assert!(
                (a - b).abs() <= row.d[i / 32] / 2.0 + 1e-6,
                "{i}: {a} vs {b}"
            );
        }
    }

    #[test]
    fn a_nan_in_x_reaches_the_product() {
        let mut x = vec![1.0f32; 32];
        x[3] = f32::NAN;
        let row = Q8Row::new(GgmlType::Q8_0, &x);
        let block = [[0u8, 0x3c].as_slice(), &[1u8; 32]].concat(); // Q8_0, d = 1.0
        let mut out = [0.0];
        dot_rows(GgmlType::Q8_0, &block, &row, &mut out);
        assert!(out[0].is_nan());
    }
}
