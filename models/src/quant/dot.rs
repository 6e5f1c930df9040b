//! `Σⱼ wⱼ xⱼ` over one row of blocks, straight from the blocks: the inner loop of a quantized
//! product when decoding. Each type's loop is written so that the compiler vectorises it (16
//! lanes of f32 that accumulate over the whole row, one horizontal sum at the end); a block's
//! minimum term uses the sum of `x` over the block (or sub-block), computed once per row of `x`
//! (`x_sums`, one per 16 elements). The result equals the dequantized row's dot product up to
//! rounding (the products are grouped differently).

// The loops index several arrays by the block layout's own arithmetic: indices read as the format.
#![allow(clippy::needless_range_loop)]

use super::blocks::{half, k_scale_min, GgmlType};

/// Sums of `x` over each run of 16 elements.
pub fn sums_of_16(x: &[f32]) -> Vec<f32> {
    x.chunks(16).map(|c| c.iter().sum()).collect()
}

/// `Σⱼ wⱼ xⱼ` for one row of `kind` blocks `row` and `x` of the row's length; `x16` is
/// [`sums_of_16`] of `x`. `None` for the float types (multiplied as floats instead).
///
/// The same loops compiled for the widest vectors the processor has (checked once, at run
/// time): AVX-512 or AVX2 on x86-64, the target's baseline elsewhere.
pub fn dot_row(kind: GgmlType, row: &[u8], x: &[f32], x16: &[f32]) -> Option<f32> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        type Dot = fn(GgmlType, &[u8], &[f32], &[f32]) -> Option<f32>;
        static BEST: OnceLock<Dot> = OnceLock::new();
        let best = BEST.get_or_init(|| {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
                // SAFETY: the features were just detected.
                |k, r, x, s| unsafe { dot_row_avx512(k, r, x, s) }
            } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                // SAFETY: as above.
                |k, r, x, s| unsafe { dot_row_avx2(k, r, x, s) }
            } else {
                dot_row_portable
            }
        });
        best(kind, row, x, x16)
    }
    #[cfg(not(target_arch = "x86_64"))]
    dot_row_portable(kind, row, x, x16)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn dot_row_avx512(kind: GgmlType, row: &[u8], x: &[f32], x16: &[f32]) -> Option<f32> {
    dot_row_portable(kind, row, x, x16)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_row_avx2(kind: GgmlType, row: &[u8], x: &[f32], x16: &[f32]) -> Option<f32> {
    dot_row_portable(kind, row, x, x16)
}

#[inline(always)]
fn dot_row_portable(kind: GgmlType, row: &[u8], x: &[f32], x16: &[f32]) -> Option<f32> {
    let n = kind.block_bytes();
    let blocks = row.chunks_exact(n);
    let (lanes, scalar) = match kind {
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => return None,
        GgmlType::Q8_0 => q8_0(blocks, x),
        GgmlType::Q4_0 | GgmlType::Q4_1 => q4(kind, blocks, x, x16),
        GgmlType::Q5_0 | GgmlType::Q5_1 => q5(kind, blocks, x, x16),
        GgmlType::Q2_K => q2_k(blocks, x, x16),
        GgmlType::Q3_K => q3_k(blocks, x),
        GgmlType::Q4_K | GgmlType::Q5_K => q4_k(kind, blocks, x, x16),
        GgmlType::Q6_K => q6_k(blocks, x),
    };
    Some(lanes.iter().sum::<f32>() + scalar)
}

/// 16 lanes that accumulate over a row, and a scalar term (the blocks' minimums).
type Partial = ([f32; 16], f32);
type Blocks<'a> = std::slice::ChunksExact<'a, u8>;

#[inline(always)]
fn q8_0(blocks: Blocks<'_>, x: &[f32]) -> Partial {
    let mut lanes = [0.0f32; 16];
    let scalar = 0.0f32;
    for (b, x) in blocks.zip(x.chunks_exact(32)) {
        let d = half(b, 0);
        let q = &b[2..34];
        for j in 0..16 {
            lanes[j] += d * ((q[j] as i8) as f32 * x[j] + (q[j + 16] as i8) as f32 * x[j + 16]);
        }
    }
    (lanes, scalar)
}

#[inline(always)]
fn q4(kind: GgmlType, blocks: Blocks<'_>, x: &[f32], x16: &[f32]) -> Partial {
    let mut lanes = [0.0f32; 16];
    let mut scalar = 0.0f32;
    let offset = kind == GgmlType::Q4_1;
    for (i, (b, x)) in blocks.zip(x.chunks_exact(32)).enumerate() {
        let d = half(b, 0);
        let qs = if offset { &b[4..20] } else { &b[2..18] };
        for j in 0..16 {
            lanes[j] += d * ((qs[j] & 0xF) as f32 * x[j] + (qs[j] >> 4) as f32 * x[j + 16]);
        }
        let xsum = x16[2 * i] + x16[2 * i + 1];
        scalar += if offset {
            half(b, 2) * xsum
        } else {
            -8.0 * d * xsum
        };
    }
    (lanes, scalar)
}

#[inline(always)]
fn q5(kind: GgmlType, blocks: Blocks<'_>, x: &[f32], x16: &[f32]) -> Partial {
    let mut lanes = [0.0f32; 16];
    let mut scalar = 0.0f32;
    let offset = kind == GgmlType::Q5_1;
    for (i, (b, x)) in blocks.zip(x.chunks_exact(32)).enumerate() {
        let d = half(b, 0);
        let (qh, qs) = if offset {
            (&b[4..8], &b[8..24])
        } else {
            (&b[2..6], &b[6..22])
        };
        let qh = u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]]);
        for j in 0..16 {
            let lo = (qs[j] & 0xF) as u32 | (((qh >> j) & 1) << 4);
            let hi = (qs[j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4);
            lanes[j] += d * (lo as f32 * x[j] + hi as f32 * x[j + 16]);
        }
        let xsum = x16[2 * i] + x16[2 * i + 1];
        scalar += if offset {
            half(b, 2) * xsum
        } else {
            -16.0 * d * xsum
        };
    }
    (lanes, scalar)
}

#[inline(always)]
fn q2_k(blocks: Blocks<'_>, x: &[f32], x16: &[f32]) -> Partial {
    let mut lanes = [0.0f32; 16];
    let mut scalar = 0.0f32;
    for (i, (b, x)) in blocks.zip(x.chunks_exact(256)).enumerate() {
        let (scales, qs) = (&b[..16], &b[16..80]);
        let (d, dmin) = (half(b, 80), half(b, 82));
        // Element e = 128·h + 32·s + l holds (qs[32h + l] >> 2s) & 3; group e / 16.
        for h in 0..2 {
            for s in 0..4 {
                for g in 0..2 {
                    let group = 8 * h + 2 * s + g;
                    let sc = d * (scales[group] & 0xF) as f32;
                    let base = 128 * h + 32 * s + 16 * g;
                    for l in 0..16 {
                        let q = (qs[32 * h + 16 * g + l] >> (2 * s)) & 3;
                        lanes[l] += sc * q as f32 * x[base + l];
                    }
                    scalar -= dmin * (scales[group] >> 4) as f32 * x16[16 * i + group];
                }
            }
        }
    }
    (lanes, scalar)
}

#[inline(always)]
fn q3_k(blocks: Blocks<'_>, x: &[f32]) -> Partial {
    let mut lanes = [0.0f32; 16];
    let scalar = 0.0f32;
    for (b, x) in blocks.zip(x.chunks_exact(256)) {
        let (hmask, qs) = (&b[..32], &b[32..96]);
        let scales = super::blocks::q3_k_scales(&b[96..108]);
        let d = half(b, 108);
        for h in 0..2 {
            for s in 0..4 {
                for g in 0..2 {
                    let base = 128 * h + 32 * s + 16 * g;
                    let sc = d * scales[base / 16] as f32;
                    let bit = base / 32;
                    for l in 0..16 {
                        let low = ((qs[32 * h + 16 * g + l] >> (2 * s)) & 3) as i32;
                        let high = ((hmask[16 * g + l] >> bit) & 1) as i32;
                        let q = low - ((high ^ 1) << 2);
                        lanes[l] += sc * q as f32 * x[base + l];
                    }
                }
            }
        }
    }
    (lanes, scalar)
}

#[inline(always)]
fn q4_k(kind: GgmlType, blocks: Blocks<'_>, x: &[f32], x16: &[f32]) -> Partial {
    let mut lanes = [0.0f32; 16];
    let mut scalar = 0.0f32;
    let five = kind == GgmlType::Q5_K;
    for (i, (b, x)) in blocks.zip(x.chunks_exact(256)).enumerate() {
        let (d, dmin) = (half(b, 0), half(b, 2));
        let (scale, min) = k_scale_min(&b[4..16]);
        let (qh, qs) = if five {
            (&b[16..48], &b[48..176])
        } else {
            (&b[0..0], &b[16..144])
        };
        // Element e = 64·c + 32·s + l holds (qs[32c + l] >> 4s) & 15; sub-block e / 32.
        for c in 0..4 {
            for s in 0..2 {
                let j = 2 * c + s;
                let sc = d * scale[j] as f32;
                let base = 64 * c + 32 * s;
                for half_ in 0..2 {
                    for l in 0..16 {
                        let k = 16 * half_ + l;
                        let mut q = ((qs[32 * c + k] >> (4 * s)) & 0xF) as u32;
                        if five {
                            q |= (((qh[k] >> j) & 1) as u32) << 4;
                        }
                        lanes[l] += sc * q as f32 * x[base + k];
                    }
                }
                let xsum = x16[16 * i + base / 16] + x16[16 * i + base / 16 + 1];
                scalar -= dmin * min[j] as f32 * xsum;
            }
        }
    }
    (lanes, scalar)
}

#[inline(always)]
fn q6_k(blocks: Blocks<'_>, x: &[f32]) -> Partial {
    let mut lanes = [0.0f32; 16];
    let scalar = 0.0f32;
    for (b, x) in blocks.zip(x.chunks_exact(256)) {
        let (ql, qh, scales) = (&b[..128], &b[128..192], &b[192..208]);
        let d = half(b, 208);
        // Element e = 128·h + 32·s + l: low 4 bits (ql[64h + 32(s % 2) + l] >> 4(s / 2)),
        // high 2 bits (qh[32h + l] >> 2s); scale of e / 16.
        for h in 0..2 {
            for s in 0..4 {
                for g in 0..2 {
                    let base = 128 * h + 32 * s + 16 * g;
                    let sc = d * (scales[base / 16] as i8) as f32;
                    for l in 0..16 {
                        let k = 16 * g + l;
                        let low = (ql[64 * h + 32 * (s % 2) + k] >> (4 * (s / 2))) & 0xF;
                        let high = (qh[32 * h + k] >> (2 * s)) & 3;
                        let q = (low | (high << 4)) as i32 - 32;
                        lanes[l] += sc * q as f32 * x[base + l];
                    }
                }
            }
        }
    }
    (lanes, scalar)
}
