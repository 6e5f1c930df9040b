//! An f32 weight packed once in panels of columns, and the CPU's own product from it.
//!
//! `y = x W` for `x [n, d_in]` and `W [d_in, d_out]` (Burn's `Linear` layout). `W` is held as
//! panels of `WIDTH` = 64 output columns, each panel `[d_in, 64]` contiguous (the last one padded
//! with zeros). The product is Goto and van de Geijn's (2008) micro-kernel without its packing
//! step: a tile of `TILE_ROWS` = 6 rows of `x` times one panel keeps its 6 × 64 sums in 24
//! AVX-512 registers; each row of the panel is read once for the tile, in order, and each
//! element of `x` is broadcast against it. A general-purpose product (gemm, MKL) packs `W` into
//! this layout on every call: for the few rows a mixture-of-experts block routes to each expert
//! (~64 of 256), that packing cost as much as the arithmetic (docs/MEASUREMENTS.md, Mixture of
//! experts). Here it is done once, when the weight is loaded.
//!
//! The panels are dealt to rayon's threads. The kernel is one generic function, compiled for
//! AVX-512 where the processor has it, else portable (correct everywhere, slower than gemm:
//! [`PackedMatrix::is_fast`] says which).

use std::fmt;
use std::sync::Arc;

use rayon::prelude::*;

/// Output columns in a panel: four AVX-512 registers.
const WIDTH: usize = 64;
/// Rows of `x` in a tile: 6 × 4 registers of sums, 4 for the panel's row, 1 broadcast.
const TILE_ROWS: usize = 6;
/// Panel rows read ahead of the kernel (2 KiB).
const AHEAD: usize = 8;

/// One row of a panel: 64 columns, a cache line's alignment.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct PanelRow([f32; WIDTH]);

/// `W [d_in, d_out]` packed in panels; see the module docs.
#[derive(Clone)]
pub struct PackedMatrix {
    /// Panel `p`'s rows are `rows[p · d_in .. (p + 1) · d_in]`.
    rows: Arc<[PanelRow]>,
    /// Input features (rows of `W`).
    pub d_in: usize,
    /// Output features (columns of `W`).
    pub d_out: usize,
}

impl fmt::Debug for PackedMatrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackedMatrix([{}, {}])", self.d_in, self.d_out)
    }
}

impl PackedMatrix {
    /// Packs `w [d_in, d_out]`, row-major.
    pub fn new(w: &[f32], d_in: usize, d_out: usize) -> PackedMatrix {
        assert_eq!(w.len(), d_in * d_out, "a [{d_in}, {d_out}] weight");
        let panels = d_out.div_ceil(WIDTH);
        let mut rows = vec![PanelRow([0.0; WIDTH]); panels * d_in];
        for (p, panel) in rows.chunks_mut(d_in.max(1)).enumerate() {
            let columns = p * WIDTH..((p + 1) * WIDTH).min(d_out);
            for (k, row) in panel.iter_mut().enumerate() {
                row.0[..columns.len()].copy_from_slice(&w[k * d_out..][columns.clone()]);
            }
        }
        PackedMatrix {
            rows: rows.into(),
            d_in,
            d_out,
        }
    }

    /// Whether the product runs its AVX-512 kernel here (faster than gemm's); else the portable
    /// one (slower than gemm's: callers keep a float `Linear` then).
    pub fn is_fast() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// `y = x W`: `x [n, d_in]` row-major → `[n, d_out]`.
    pub fn matmul(&self, x: &[f32], n: usize) -> Vec<f32> {
        assert_eq!(x.len(), n * self.d_in, "x is [{n}, {}]", self.d_in);
        let panels = self.d_out.div_ceil(WIDTH);
        if n == 0 || self.d_in == 0 {
            return vec![0.0; n * self.d_out];
        }
        let fast = Self::is_fast();
        // Each panel's sums, [n, 64], one panel after the other.
        let mut sums = vec![0.0; panels * n * WIDTH];
        sums.par_chunks_mut(n * WIDTH)
            .zip(self.rows.par_chunks(self.d_in))
            .for_each(|(sums, panel)| {
                for (x, sums) in x
                    .chunks(TILE_ROWS * self.d_in)
                    .zip(sums.chunks_mut(TILE_ROWS * WIDTH))
                {
                    tile_any_rows(fast, x, self.d_in, panel, sums);
                }
            });
        let mut y = vec![0.0; n * self.d_out];
        for (p, sums) in sums.chunks(n * WIDTH).enumerate() {
            let columns = p * WIDTH..((p + 1) * WIDTH).min(self.d_out);
            for (y, sums) in y.chunks_mut(self.d_out).zip(sums.chunks(WIDTH)) {
                y[columns.clone()].copy_from_slice(&sums[..columns.len()]);
            }
        }
        y
    }
}

/// A tile of 1 to `TILE_ROWS` rows (`x.len() / d_in` of them), by the kernel of that height.
fn tile_any_rows(fast: bool, x: &[f32], d_in: usize, panel: &[PanelRow], sums: &mut [f32]) {
    macro_rules! by_height {
        ($($rows:literal)*) => {
            match x.len() / d_in {
                $($rows => tile_on::<$rows>(fast, x, panel, sums),)*
                _ => unreachable!("a tile has 1 to {TILE_ROWS} rows"),
            }
        };
    }
    by_height!(1 2 3 4 5 6)
}

fn tile_on<const R: usize>(fast: bool, x: &[f32], panel: &[PanelRow], sums: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if fast {
        // SAFETY: `fast` is `PackedMatrix::is_fast()`: the processor has AVX-512F.
        return unsafe { tile_avx512::<R>(x, panel, sums) };
    }
    let _ = fast;
    tile::<R, false>(x, panel, sums)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512<const R: usize>(x: &[f32], panel: &[PanelRow], sums: &mut [f32]) {
    tile::<R, true>(x, panel, sums)
}

/// `sums [R, 64] = x [R, d_in] · panel [d_in, 64]`, the `R × 64` sums held in registers
/// (`FMA`: fused multiply-adds, where the processor has them).
#[inline(always)]
fn tile<const R: usize, const FMA: bool>(x: &[f32], panel: &[PanelRow], sums: &mut [f32]) {
    let d_in = panel.len();
    let xs: [&[f32]; R] = std::array::from_fn(|r| &x[r * d_in..(r + 1) * d_in]);
    let mut acc = [[0.0f32; WIDTH]; R];
    for (k, w) in panel.iter().enumerate() {
        prefetch(panel, k + AHEAD);
        for r in 0..R {
            let b = xs[r][k];
            for (acc, &w) in acc[r].iter_mut().zip(&w.0) {
                *acc = if FMA {
                    b.mul_add(w, *acc)
                } else {
                    *acc + b * w
                };
            }
        }
    }
    sums.copy_from_slice(acc.as_flattened());
}

/// Asks for panel row `at` (its four cache lines): a prefetch never faults, past the end too.
#[inline(always)]
fn prefetch(panel: &[PanelRow], at: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let row = panel.as_ptr().wrapping_add(at).cast::<i8>();
        for line in 0..4 {
            // SAFETY: a prefetch reads nothing and never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(64 * line)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (panel, at);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(x: &[f32], w: &[f32], n: usize, d_in: usize, d_out: usize) -> Vec<f32> {
        let mut y = vec![0.0f64; n * d_out];
        for t in 0..n {
            for k in 0..d_in {
                for j in 0..d_out {
                    y[t * d_out + j] += x[t * d_in + k] as f64 * w[k * d_out + j] as f64;
                }
            }
        }
        y.into_iter().map(|v| v as f32).collect()
    }

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0) - 1.0)
            .collect()
    }

    #[test]
    fn the_product_from_panels_is_x_times_w() {
        // Tiles of every height, a padded last panel, one and several panels, few and many rows.
        let heights = (1..=12).map(|n| (n, 37, 130));
        for (n, d_in, d_out) in heights.chain([(1, 5, 3), (6, 64, 64), (64, 512, 200), (7, 1, 65)])
        {
            let (x, w) = (values(n * d_in, 1), values(d_in * d_out, 2));
            let y = PackedMatrix::new(&w, d_in, d_out).matmul(&x, n);
            let want = reference(&x, &w, n, d_in, d_out);
            for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * d_in as f32,
                    "[{n}, {d_in}, {d_out}] at {i}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn the_portable_kernel_sums_as_the_fast_one() {
        let (n, d_in) = (6, 300);
        let (x, w) = (values(n * d_in, 3), values(d_in * WIDTH, 4));
        let packed = PackedMatrix::new(&w, d_in, WIDTH);
        let (mut portable, mut fast) = (vec![0.0; n * WIDTH], vec![0.0; n * WIDTH]);
        tile_any_rows(false, &x, d_in, &packed.rows, &mut portable);
        tile_any_rows(PackedMatrix::is_fast(), &x, d_in, &packed.rows, &mut fast);
        for (a, b) in portable.iter().zip(&fast) {
            assert!((a - b).abs() <= 1e-4, "{a} vs {b}");
        }
    }
}
