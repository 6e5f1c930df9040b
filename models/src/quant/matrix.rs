//! A weight matrix kept in its GGUF blocks, and the products that read it without a float copy.
//!
//! `W [rows, cols]` (PyTorch's `[out, in]`: GGUF's `ne = [cols, rows]`), each row a run of
//! whole blocks. `y = x Wᵀ` for `x [n, cols]`:
//! - few rows of `x` (decoding): each row of `x` is quantized to 8 bits per 32 elements and
//!   multiplied with `W`'s blocks in integers, as llama.cpp does (`dot.rs`); the rows of `W` are
//!   spread over the threads;
//! - many (a prompt): `W` is dequantized a tile of rows at a time and the tile multiplied as
//!   floats, so no whole float copy of `W` is ever held.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::dot::{dot_rows, Q8Row};
use super::GgmlType;
use crate::error::ensure;
use crate::AttnError;

/// The bytes a matrix reads from: a mapped file or a buffer.
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A quantized matrix; see the module docs.
#[derive(Clone)]
pub struct QuantMatrix {
    bytes: SharedBytes,
    range: Range<usize>,
    /// The block type.
    pub ggml_type: GgmlType,
    /// Rows (output features).
    pub rows: usize,
    /// Columns (input features), a multiple of the type's block.
    pub cols: usize,
}

impl fmt::Debug for QuantMatrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "QuantMatrix({} [{}, {}])",
            self.ggml_type.name(),
            self.rows,
            self.cols
        )
    }
}

impl QuantMatrix {
    /// The matrix in `bytes[range]`, checked to hold exactly `rows × cols` elements of its type.
    pub fn new(
        bytes: SharedBytes,
        range: Range<usize>,
        ggml_type: GgmlType,
        rows: usize,
        cols: usize,
    ) -> Result<QuantMatrix, AttnError> {
        let qk = ggml_type.block_elements();
        ensure!(
            cols % qk == 0,
            "a {} matrix needs rows of whole blocks of {qk}, not {cols}",
            ggml_type.name()
        );
        let expected = rows
            .checked_mul(cols / qk)
            .and_then(|blocks| blocks.checked_mul(ggml_type.block_bytes()));
        ensure!(
            expected == Some(range.len()) && range.end <= (*bytes).as_ref().len(),
            "a {} matrix [{rows}, {cols}] does not fit its {} bytes",
            ggml_type.name(),
            range.len()
        );
        Ok(QuantMatrix {
            bytes,
            range,
            ggml_type,
            rows,
            cols,
        })
    }

    fn row_bytes(&self) -> usize {
        self.cols / self.ggml_type.block_elements() * self.ggml_type.block_bytes()
    }

    fn row(&self, r: usize) -> &[u8] {
        self.rows_bytes(r..r + 1)
    }

    /// The bytes of rows `rows`, one after the other.
    fn rows_bytes(&self, rows: Range<usize>) -> &[u8] {
        let n = self.row_bytes();
        let start = self.range.start + rows.start * n;
        &(*self.bytes).as_ref()[start..start + rows.len() * n]
    }

    /// Rows `rows` as floats, `[rows.len(), cols]` row-major.
    pub fn dequantize_rows(&self, rows: Range<usize>) -> Vec<f32> {
        let mut out = vec![0.0; rows.len() * self.cols];
        out.par_chunks_mut(self.cols)
            .zip(rows)
            .for_each(|(values, r)| self.ggml_type.dequantize(self.row(r), values));
        out
    }

    /// The rows of `ids` as floats, `[ids.len(), cols]` (an embedding lookup).
    pub fn gather_rows(&self, ids: &[usize]) -> Vec<f32> {
        let mut out = vec![0.0; ids.len() * self.cols];
        for (values, &r) in out.chunks_mut(self.cols).zip(ids) {
            self.ggml_type.dequantize(self.row(r), values);
        }
        out
    }

    /// `y = x Wᵀ`: `x [n, cols]` row-major → `[n, rows]`, `x` quantized to 8 bits for the block
    /// types. The rows of `W` are dealt to the threads in chunks of 64 in order, as llama.cpp
    /// does (the threads read neighbouring memory), or in one equal share each when that makes
    /// fewer than four chunks a thread; a chunk's groups of 16 rows are each read for
    /// the `n` rows of `x` while they are in the cache (for small `n`).
    pub fn matmul_small(&self, x: &[f32], n: usize) -> Vec<f32> {
        const CHUNK: usize = 64;
        const GROUP: usize = 16;
        debug_assert_eq!(x.len(), n * self.cols);
        let quantized: Option<Vec<Q8Row>> = (self.ggml_type.block_elements() > 1).then(|| {
            x.chunks(self.cols)
                .map(|x| Q8Row::new(self.ggml_type, x))
                .collect()
        });
        // llama.cpp's rule: fewer than four chunks a thread, and each thread takes an equal share.
        let threads = rayon::current_num_threads();
        let chunk = if self.rows < CHUNK * threads * 4 {
            self.rows.div_ceil(threads)
        } else {
            CHUNK
        };
        let chunks = self.rows.div_ceil(chunk);
        let next = AtomicUsize::new(0);
        // The sums chunk after chunk, each chunk's `[n, its rows]`: with one row of `x` that is
        // the output itself. Each chunk's part is taken by the one thread that takes the chunk.
        let mut sums = vec![0.0; n * self.rows];
        let parts: Vec<Mutex<&mut [f32]>> = sums.chunks_mut(n * chunk).map(Mutex::new).collect();
        (0..threads.min(chunks)).into_par_iter().for_each(|_| {
            let mut buffer = Vec::new();
            loop {
                let c = next.fetch_add(1, Ordering::Relaxed);
                if c >= chunks {
                    break;
                }
                let rows = c * chunk..((c + 1) * chunk).min(self.rows);
                let mut part = parts[c].lock().expect("a chunk is taken once");
                for group in rows.clone().step_by(GROUP) {
                    let group = group..(group + GROUP).min(rows.end);
                    let span = group.start - rows.start..group.end - rows.start;
                    for (t, sums) in part.chunks_mut(rows.len()).enumerate() {
                        let sums = &mut sums[span.clone()];
                        match &quantized {
                            Some(q) => dot_rows(
                                self.ggml_type,
                                self.rows_bytes(group.clone()),
                                &q[t],
                                sums,
                            ),
                            None => {
                                let x = &x[t * self.cols..(t + 1) * self.cols];
                                buffer.resize(self.cols, 0.0);
                                for (r, sum) in group.clone().zip(sums) {
                                    self.ggml_type.dequantize(self.row(r), &mut buffer);
                                    *sum = dot(&buffer, x);
                                }
                            }
                        }
                    }
                }
            }
        });
        drop(parts);
        if n == 1 {
            return sums;
        }
        let mut out = vec![0.0; n * self.rows];
        for (c, part) in sums.chunks(n * chunk).enumerate() {
            let start = c * chunk;
            let len = part.len() / n;
            for (t, sums) in part.chunks(len).enumerate() {
                out[t * self.rows + start..][..len].copy_from_slice(sums);
            }
        }
        out
    }
}

/// `Σ aᵢ bᵢ` over equal lengths, a multiple of 16 or not, in 16 lanes.
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 16];
    let (a16, b16) = (a.chunks_exact(16), b.chunks_exact(16));
    let (a_rest, b_rest) = (a16.remainder(), b16.remainder());
    for (a, b) in a16.zip(b16) {
        for k in 0..16 {
            lanes[k] += a[k] * b[k];
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for (a, b) in a_rest.iter().zip(b_rest) {
        sum += a * b;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgufFile;

    /// The products from the blocks equal the dequantized matrix times `x` as quantized for
    /// them, for every block type of tests/fixtures/gguf/quants.gguf and 1 and 3 rows of `x`;
    /// the float types (whose edge values there overflow a sum, and which the models multiply
    /// as floats) are left out.
    #[test]
    fn products_from_the_blocks_equal_the_dequantized_ones() {
        for (name, matrix) in fixture_matrices() {
            let (rows, cols) = (matrix.rows, matrix.cols);
            let w = matrix.dequantize_rows(0..rows);
            for n in [1, 3] {
                let x: Vec<f32> = (0..n * cols)
                    .map(|i| ((i * 7919) % 13) as f32 / 6.0 - 1.0)
                    .collect();
                let y = matrix.matmul_small(&x, n);
                for t in 0..n {
                    let xs =
                        Q8Row::new(matrix.ggml_type, &x[t * cols..(t + 1) * cols]).dequantized();
                    for r in 0..rows {
                        let ws = &w[r * cols..(r + 1) * cols];
                        let want: f64 = xs.iter().zip(ws).map(|(a, b)| *a as f64 * *b as f64).sum();
                        let scale: f64 = xs
                            .iter()
                            .zip(ws)
                            .map(|(a, b)| (*a as f64 * *b as f64).abs())
                            .sum();
                        let got = y[t * rows + r] as f64;
                        assert!(
                            (got - want).abs() <= 1e-5 * scale.max(1.0),
                            "{name} row {r} x {t}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    /// The block types of the fixture, as matrices, and a Q8_0 matrix of 1,203 distinct rows (the
    /// fixture's have 2): chunks of 64 rows on up to 4 threads, the last one (51 rows) and its
    /// last group short.
    fn fixture_matrices() -> Vec<(String, QuantMatrix)> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/gguf/quants.gguf"
        );
        let file = GgufFile::open(path.as_ref()).unwrap();
        let mut matrices: Vec<(String, QuantMatrix)> = file
            .tensors
            .iter()
            .filter(|t| !t.name.ends_with(".dequantized") && t.ggml_type.block_elements() > 1)
            .map(|info| {
                let [cols, rows] = [info.dims[0], info.dims[1]];
                let map: SharedBytes = file.map().clone();
                let range = info.start..info.start + info.len;
                let matrix = QuantMatrix::new(map, range, info.ggml_type, rows, cols).unwrap();
                (info.name.clone(), matrix)
            })
            .collect();
        let (rows, blocks) = (1203, 3);
        let bytes: Vec<u8> = (0..rows * blocks)
            .flat_map(|b| {
                // A positive f16 scale between 2⁻³ and 2⁻² that differs from block to block.
                let scale = (0x3000 + ((b * 37) % 1024) as u16).to_le_bytes();
                let quants = (0..32).map(move |j| ((b * 31 + j * 7) % 255) as u8);
                scale.into_iter().chain(quants)
            })
            .collect();
        let len = bytes.len();
        let bytes: SharedBytes = Arc::new(bytes);
        let q8 = QuantMatrix::new(bytes, 0..len, GgmlType::Q8_0, rows, 32 * blocks).unwrap();
        matrices.push(("Q8_0 of 1,203 rows".into(), q8));
        matrices
    }

    /// The processor's own loops (AVX2 here), over all the rows at once, give the portable loops'
    /// sums, row by row.
    #[test]
    fn the_vector_loops_equal_the_portable_ones() {
        for (name, matrix) in fixture_matrices() {
            let x: Vec<f32> = (0..matrix.cols)
                .map(|i| ((i * 31) % 17) as f32 / 5.0 - 1.7)
                .collect();
            let q = Q8Row::new(matrix.ggml_type, &x);
            let bytes = matrix.rows_bytes(0..matrix.rows);
            for (r, (fast, portable)) in super::super::dot::both(matrix.ggml_type, bytes, &q)
                .into_iter()
                .enumerate()
            {
                assert!(
                    (fast - portable).abs() <= 1e-5 * portable.abs().max(1.0),
                    "{name} row {r}: {fast} vs {portable}"
                );
            }
        }
    }
}
