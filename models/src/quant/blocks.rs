//! ggml's tensor types and their dequantization, bit-exact with `gguf.quants.dequantize`
//! (the `gguf` Python package, `gguf-py/gguf/quants.py` in llama.cpp) and `ggml-quants.c`.
//!
//! A type stores blocks of `QK` elements; within a block, a scale `d` (and for the `_1` and
//! K types a minimum `m`) in f16 and the quants `q`:
//!
//! | type | block | bytes | value |
//! |------|-------|-------|-------|
//! | Q8_0 | 32 | 34 | `d·q`, `q` i8 |
//! | Q4_0 / Q5_0 | 32 | 18 / 22 | `d·(q − 8)` / `d·(q − 16)` |
//! | Q4_1 / Q5_1 | 32 | 20 / 24 | `d·q + m` |
//! | Q2_K | 256 | 84 | `(d·sᵢ)·q − (dmin·mᵢ)`, 16 sub-blocks of 16, 4-bit sᵢ, mᵢ |
//! | Q3_K | 256 | 110 | `(d·sᵢ)·q`, 16 sub-blocks, 6-bit signed sᵢ, q in −4..3 |
//! | Q4_K / Q5_K | 256 | 144 / 176 | `(d·sᵢ)·q − (dmin·mᵢ)`, 8 sub-blocks of 32, 6-bit sᵢ, mᵢ |
//! | Q6_K | 256 | 210 | `(d·sᵢ)·(q − 32)`, 16 sub-blocks, i8 sᵢ |
//!
//! Every product and sum is in f32 in the order written (no fused multiply-add), as numpy
//! computes it, so the results are the reference's to the bit.

use std::sync::OnceLock;

use half::{bf16, f16};

/// The element types of a GGUF tensor that this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, missing_docs)]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
}

/// Elements per K-quant super-block.
pub const QK_K: usize = 256;

impl GgmlType {
    /// The types, listed for error messages.
    pub const SUPPORTED: &'static str =
        "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";

    /// The type of ggml's type code (`enum ggml_type`).
    pub fn from_code(code: u32) -> Option<GgmlType> {
        use GgmlType::*;
        Some(match code {
            0 => F32,
            1 => F16,
            2 => Q4_0,
            3 => Q4_1,
            6 => Q5_0,
            7 => Q5_1,
            8 => Q8_0,
            10 => Q2_K,
            11 => Q3_K,
            12 => Q4_K,
            13 => Q5_K,
            14 => Q6_K,
            30 => BF16,
            _ => return None,
        })
    }

    /// ggml's name of the type.
    pub fn name(self) -> &'static str {
        use GgmlType::*;
        match self {
            F32 => "F32",
            F16 => "F16",
            BF16 => "BF16",
            Q4_0 => "Q4_0",
            Q4_1 => "Q4_1",
            Q5_0 => "Q5_0",
            Q5_1 => "Q5_1",
            Q8_0 => "Q8_0",
            Q2_K => "Q2_K",
            Q3_K => "Q3_K",
            Q4_K => "Q4_K",
            Q5_K => "Q5_K",
            Q6_K => "Q6_K",
        }
    }

    /// Elements per block.
    pub fn block_elements(self) -> usize {
        use GgmlType::*;
        match self {
            F32 | F16 | BF16 => 1,
            Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q8_0 => 32,
            Q2_K | Q3_K | Q4_K | Q5_K | Q6_K => QK_K,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        use GgmlType::*;
        match self {
            F32 => 4,
            F16 | BF16 => 2,
            Q4_0 => 18,
            Q4_1 => 20,
            Q5_0 => 22,
            Q5_1 => 24,
            Q8_0 => 34,
            Q2_K => 84,
            Q3_K => 110,
            Q4_K => 144,
            Q5_K => 176,
            Q6_K => 210,
        }
    }

    /// Dequantizes whole blocks: `bytes.len() / block_bytes` blocks into `out`, which holds
    /// `block_elements` values for each.
    pub fn dequantize(self, bytes: &[u8], out: &mut [f32]) {
        let (n, qk) = (self.block_bytes(), self.block_elements());
        debug_assert_eq!(bytes.len() / n * qk, out.len());
        let f: fn(&[u8], &mut [f32]) = match self {
            GgmlType::F32 => |b, o| o[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            GgmlType::F16 => |b, o| o[0] = half(b, 0),
            GgmlType::BF16 => |b, o| o[0] = bf16::from_le_bytes([b[0], b[1]]).to_f32(),
            GgmlType::Q4_0 => q4_0,
            GgmlType::Q4_1 => q4_1,
            GgmlType::Q5_0 => q5_0,
            GgmlType::Q5_1 => q5_1,
            GgmlType::Q8_0 => q8_0,
            GgmlType::Q2_K => q2_k,
            GgmlType::Q3_K => q3_k,
            GgmlType::Q4_K => q4_k,
            GgmlType::Q5_K => q5_k,
            GgmlType::Q6_K => q6_k,
        };
        for (block, values) in bytes.chunks_exact(n).zip(out.chunks_exact_mut(qk)) {
            f(block, values);
        }
    }
}

/// The f16 at `b[i..i + 2]`, as an f32: a look-up in a table of all 65,536 (as ggml's
/// `ggml_table_f32_f16`), once per block in the products' inner loops.
#[inline(always)]
pub(crate) fn half(b: &[u8], i: usize) -> f32 {
    static TABLE: OnceLock<Box<[f32]>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        (0..=u16::MAX)
            .map(|bits| f16::from_bits(bits).to_f32())
            .collect()
    });
    table[u16::from_le_bytes([b[i], b[i + 1]]) as usize]
}

/// Quant `j` of 32 packed as nibbles: the low nibbles are elements 0..16, the high 16..32.
#[inline]
fn nibble(qs: &[u8], j: usize) -> u8 {
    if j < 16 {
        qs[j] & 0x0F
    } else {
        qs[j - 16] >> 4
    }
}

fn q4_0(b: &[u8], out: &mut [f32]) {
    let d = half(b, 0);
    for (j, o) in out.iter_mut().enumerate() {
        *o = d * (nibble(&b[2..], j) as i8 - 8) as f32;
    }
}

fn q4_1(b: &[u8], out: &mut [f32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    for (j, o) in out.iter_mut().enumerate() {
        *o = d * nibble(&b[4..], j) as f32 + m;
    }
}

/// Q5's fifth bit of element `j`: bit `j` of the little-endian u32 `qh`.
#[inline]
fn fifth(qh: &[u8], j: usize) -> u8 {
    (qh[j / 8] >> (j % 8)) & 1
}

fn q5_0(b: &[u8], out: &mut [f32]) {
    let d = half(b, 0);
    let (qh, qs) = (&b[2..6], &b[6..]);
    for (j, o) in out.iter_mut().enumerate() {
        let q = nibble(qs, j) | (fifth(qh, j) << 4);
        *o = d * (q as i8 - 16) as f32;
    }
}

fn q5_1(b: &[u8], out: &mut [f32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    let (qh, qs) = (&b[4..8], &b[8..]);
    for (j, o) in out.iter_mut().enumerate() {
        let q = nibble(qs, j) | (fifth(qh, j) << 4);
        *o = d * q as f32 + m;
    }
}

fn q8_0(b: &[u8], out: &mut [f32]) {
    let d = half(b, 0);
    for (o, &q) in out.iter_mut().zip(&b[2..]) {
        *o = q as i8 as f32 * d;
    }
}

/// Element `e` of 256 in the 2-bit layout of Q2_K and Q3_K: two halves of 128, each 4 shifts of
/// 32 bytes.
#[inline]
fn crumb(qs: &[u8], e: usize) -> u8 {
    let (half, shift, l) = (e / 128, (e % 128) / 32, e % 32);
    (qs[half * 32 + l] >> (2 * shift)) & 3
}

fn q2_k(b: &[u8], out: &mut [f32]) {
    let (scales, qs) = (&b[..16], &b[16..80]);
    let (d, dmin) = (half(b, 80), half(b, 82));
    for (e, o) in out.iter_mut().enumerate() {
        let s = scales[e / 16];
        let dl = d * (s & 0xF) as f32;
        let ml = dmin * (s >> 4) as f32;
        *o = dl * crumb(qs, e) as f32 - ml;
    }
}

/// Q3_K's 16 six-bit signed scales.
pub(crate) fn q3_k_scales(s: &[u8]) -> [i8; 16] {
    std::array::from_fn(|k| {
        let low = if k < 8 { s[k] & 0xF } else { s[k - 8] >> 4 };
        let high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
        (low | (high << 4)) as i8 - 32
    })
}

fn q3_k(b: &[u8], out: &mut [f32]) {
    let (hmask, qs, scales) = (&b[..32], &b[32..96], q3_k_scales(&b[96..108]));
    let d = half(b, 108);
    for (e, o) in out.iter_mut().enumerate() {
        let high = (hmask[e % 32] >> (e / 32)) & 1;
        let q = crumb(qs, e) as i8 - (((high ^ 1) << 2) as i8);
        let dl = d * scales[e / 16] as f32;
        *o = dl * q as f32;
    }
}

/// Q4_K's and Q5_K's 8 six-bit scales and minimums, unpacked four at a time in 32-bit words as
/// llama.cpp does: scales 0–3 and minimums 0–3 are the low 6 bits of bytes 0–3 and 4–7; scales
/// and minimums 4–7 take their low 4 bits from bytes 8–11 (low and high nibbles) and their top 2
/// from the top bits of bytes 0–3 and 4–7.
#[inline]
pub(crate) fn k_scale_min(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    const LOW6: u32 = 0x3F3F_3F3F;
    const LOW4: u32 = 0x0F0F_0F0F;
    const LOW2: u32 = 0x0303_0303;
    let word = |k: usize| u32::from_le_bytes([s[4 * k], s[4 * k + 1], s[4 * k + 2], s[4 * k + 3]]);
    let (a, b, c) = (word(0), word(1), word(2));
    let bytes = |low: u32, high: u32| {
        let mut out = [0u8; 8];
        out[..4].copy_from_slice(&low.to_le_bytes());
        out[4..].copy_from_slice(&high.to_le_bytes());
        out
    };
    (
        bytes(a & LOW6, (c & LOW4) | (((a >> 6) & LOW2) << 4)),
        bytes(b & LOW6, ((c >> 4) & LOW4) | (((b >> 6) & LOW2) << 4)),
    )
}

/// Element `e` of 256 in the 4-bit layout of Q4_K and Q5_K: 4 chunks of 32 bytes, low nibbles
/// then high.
#[inline]
fn k_nibble(qs: &[u8], e: usize) -> u8 {
    let (chunk, shift, l) = (e / 64, (e % 64) / 32, e % 32);
    (qs[chunk * 32 + l] >> (4 * shift)) & 0xF
}

fn q4_k(b: &[u8], out: &mut [f32]) {
    let (d, dmin) = (half(b, 0), half(b, 2));
    let (scale, min) = k_scale_min(&b[4..16]);
    let qs = &b[16..];
    for (e, o) in out.iter_mut().enumerate() {
        let j = e / 32;
        let dl = d * scale[j] as f32;
        let ml = dmin * min[j] as f32;
        *o = dl * k_nibble(qs, e) as f32 - ml;
    }
}

fn q5_k(b: &[u8], out: &mut [f32]) {
    let (d, dmin) = (half(b, 0), half(b, 2));
    let (scale, min) = k_scale_min(&b[4..16]);
    let (qh, qs) = (&b[16..48], &b[48..]);
    for (e, o) in out.iter_mut().enumerate() {
        let j = e / 32;
        let q = k_nibble(qs, e) | (((qh[e % 32] >> (e / 32)) & 1) << 4);
        let dl = d * scale[j] as f32;
        let ml = dmin * min[j] as f32;
        *o = dl * q as f32 - ml;
    }
}

fn q6_k(b: &[u8], out: &mut [f32]) {
    let (ql, qh, scales) = (&b[..128], &b[128..192], &b[192..208]);
    let d = half(b, 208);
    for (e, o) in out.iter_mut().enumerate() {
        let (half_, rest) = (e / 128, e % 128);
        let low = (ql[half_ * 64 + rest % 64] >> (4 * (rest / 64))) & 0xF;
        let high = (qh[half_ * 32 + rest % 32] >> (2 * (rest / 32))) & 3;
        let q = (low | (high << 4)) as i8 - 32;
        let dl = d * scales[e / 16] as i8 as f32;
        *o = dl * q as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgufFile;

    /// Every type against `gguf.quants.dequantize` of the same random blocks, bit for bit
    /// (tests/fixtures/gguf/quants.gguf, written by scripts/gen_gguf_quants.py).
    #[test]
    fn dequantization_is_gguf_py_to_the_bit() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/gguf/quants.gguf"
        );
        let file = GgufFile::open(path.as_ref()).unwrap();
        let mut checked = Vec::new();
        for info in &file.tensors {
            if info.name.ends_with(".dequantized") {
                continue;
            }
            let expected = file.tensor(&format!("{}.dequantized", info.name)).unwrap();
            assert_eq!(expected.ggml_type, GgmlType::F32);
            assert_eq!(info.dims, expected.dims);
            let mut values = vec![0.0f32; info.elements()];
            info.ggml_type.dequantize(file.bytes(info), &mut values);
            for (i, (value, bytes)) in values
                .iter()
                .zip(file.bytes(expected).chunks_exact(4))
                .enumerate()
            {
                let want = f32::from_le_bytes(bytes.try_into().unwrap());
                assert_eq!(
                    value.to_bits(),
                    want.to_bits(),
                    "{} element {i}: {value} vs {want}",
                    info.name
                );
            }
            checked.push(info.ggml_type.name());
        }
        assert_eq!(checked.len(), 12, "{checked:?}");
    }
}
