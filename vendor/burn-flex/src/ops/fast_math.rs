//! attnzoo's patch: `exp`, `tanh`, `sigmoid` and `erf` for `f32` as branch-free polynomials, so a
//! loop over a slice compiles to SIMD, and [`map_inplace`] / [`map`] run such loops with AVX2 and
//! FMA when the processor has them: each polynomial step `p · r + c` is then one fused
//! multiply-add ([`MulAdd`]; Rust never fuses `a * b + c` by itself).
//!
//! burn-flex 0.22.1 calls the scalar `libm` functions one element at a time (`expf`, `tanhf`
//! through `expm1f`, `erff`): 25 % of a training step of an LSTM translator, 12 % of a BERT
//! encoder's forward pass (its exact GELU). Each function here is within a few units in the last
//! place of the correctly rounded result (the tests below measure it against `f64`), keeps NaN,
//! and maps ±∞ as the `libm` function does.
//!
//! - `exp`: Cephes' `expf` — `x = n ln 2 + r`, `|r| ≤ ln 2 / 2`, a degree-6 polynomial for `eʳ`,
//!   `2ⁿ` built from the exponent bits in two halves so neither over- nor underflows early.
//! - `tanh`: Cephes' `tanhf` — an odd polynomial for `|x| < 0.625`, else `1 − 2 / (e^{2|x|} + 1)`.
//! - `sigmoid`: `1 / (1 + e^{−x})`.
//! - `erf`: `x · P(x²)` for `|x| < 1`, else `1 − e^{−x²} · Q(1/|x|)`, `P` and `Q` least-squares
//!   fits (degrees 6 and 10, relative error 1.4e-9 and 2.7e-9 in exact arithmetic) to
//!   `erf(x)/x` and `erfc(x) e^{x²}`; `erf(±4)` is `±1` in `f32`.

const LOG2_E: f32 = core::f32::consts::LOG2_E;
const LN_2_HI: f32 = 0.693_359_4;
const LN_2_LO: f32 = -2.121_944_4e-4;
/// `1.5 · 2²³`: adding it rounds a float in `(−2²², 2²²)` to an integer kept in the low bits.
const ROUND: f32 = 12_582_912.0;
/// Cephes' `expf` polynomial `P`, highest degree first: `eʳ ≈ 1 + r + r² · P(r)`, `|r| ≤ ln 2 / 2`.
const EXP_P: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
    5.000_000_1e-1,
];
/// [`exp_nonpositive`]'s lowest exponent: below it `eˣ` leaves the normal floats.
const EXP_LOWEST: f32 = -87.33;

#[inline(always)]
fn select(condition: bool, yes: f32, no: f32) -> f32 {
    if condition { yes } else { no }
}

/// How a polynomial step `a · b + c` is computed: [`Unfused`] everywhere, [`Fused`] (one rounding,
/// one instruction) only in code compiled for FMA, where it is not a call to `libm`'s `fmaf`.
pub trait MulAdd: Copy {
    /// `a · b + c`.
    fn mul_add(a: f32, b: f32, c: f32) -> f32;
}

/// `a * b + c`, two roundings.
#[derive(Clone, Copy, Debug)]
pub struct Unfused;

impl MulAdd for Unfused {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

/// `a.mul_add(b, c)`, one rounding.
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug)]
struct Fused;

#[cfg(feature = "std")]
impl MulAdd for Fused {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

/// `eˣ`.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    exp::<Unfused>(x)
}

#[inline(always)]
fn exp<M: MulAdd>(x: f32) -> f32 {
    // Below −104, eˣ rounds to 0; above 89, to ∞. NaN fails both tests and stays NaN.
    let x = select(x < -104.0, -104.0, select(x > 89.0, 89.0, x));
    let (shifted, er) = exp_reduced::<M>(x);
    // n as an integer in [−150, 129], halved so each power of two is a normal float.
    let n = shifted.to_bits() as i32 - ROUND.to_bits() as i32;
    let half = n >> 1;
    let power = |k: i32| f32::from_bits(((k + 127) as u32) << 23);
    er * power(half) * power(n - half)
}

/// `x = n ln 2 + r`, `n` the integer nearest `x / ln 2`: `(ROUND + n, eʳ)`.
#[inline(always)]
fn exp_reduced<M: MulAdd>(x: f32) -> (f32, f32) {
    let shifted = M::mul_add(x, LOG2_E, ROUND);
    let n = shifted - ROUND;
    let r = M::mul_add(-n, LN_2_LO, M::mul_add(-n, LN_2_HI, x));
    let p = EXP_P[1..].iter().fold(EXP_P[0], |p, &c| M::mul_add(p, r, c));
    (shifted, M::mul_add(p, r * r, r) + 1.0)
}

/// `tanh x`.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    tanh::<Unfused>(x)
}

#[inline(always)]
fn tanh<M: MulAdd>(x: f32) -> f32 {
    let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let z = x * x;
    let p = -5.704_988_7e-3;
    let p = M::mul_add(p, z, 2.063_908_9e-2);
    let p = M::mul_add(p, z, -5.373_971_6e-2);
    let p = M::mul_add(p, z, 1.333_144_2e-1);
    let p = M::mul_add(p, z, -3.333_328_2e-1);
    let small = M::mul_add(p * z, a, a);
    // tanh is 1 in f32 beyond 9.02; NaN stays NaN.
    let e = exp::<M>(2.0 * select(a > 10.0, 10.0, a));
    let large = 1.0 - 2.0 / (e + 1.0);
    let magnitude = select(a < 0.625, small, large);
    f32::from_bits(magnitude.to_bits() | (x.to_bits() & 0x8000_0000))
}

/// `1 / (1 + e^{−x})`.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    sigmoid::<Unfused>(x)
}

#[inline(always)]
fn sigmoid<M: MulAdd>(x: f32) -> f32 {
    1.0 / (1.0 + exp::<M>(-x))
}

/// `erf x`.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    erf::<Unfused>(x)
}

#[inline(always)]
fn erf<M: MulAdd>(x: f32) -> f32 {
    // |x| < 1: erf x = x · P(x²).
    let z = x * x;
    let p = 7.898_202e-5;
    let p = M::mul_add(p, z, -8.024_351e-4);
    let p = M::mul_add(p, z, 5.190_053e-3);
    let p = M::mul_add(p, z, -2.685_480_8e-2);
    let p = M::mul_add(p, z, 1.128_361_2e-1);
    let p = M::mul_add(p, z, -3.761_262_9e-1);
    let p = M::mul_add(p, z, 1.128_379_2);
    let small = x * p;
    // 1 ≤ |x| ≤ 4: erf |x| = 1 − e^{−x²} · Q(1/|x|); beyond 4, erf x is ±1 in f32. NaN stays NaN.
    let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let a = select(a > 4.0, 4.0, a);
    let t = 1.0 / a;
    let q = -3.821_760_5e-2;
    let q = M::mul_add(q, t, 2.646_626_3e-1);
    let q = M::mul_add(q, t, -8.106_041_8e-1);
    let q = M::mul_add(q, t, 1.424_004_9);
    let q = M::mul_add(q, t, -1.524_054);
    let q = M::mul_add(q, t, 8.994_859_8e-1);
    let q = M::mul_add(q, t, -6.926_851e-2);
    let q = M::mul_add(q, t, -2.851_863_1e-1);
    let q = M::mul_add(q, t, 3.015_458_2e-3);
    let q = M::mul_add(q, t, 5.637_192_3e-1);
    let q = M::mul_add(q, t, 2.596_134_8e-5);
    let large = M::mul_add(-exp::<M>(-(a * a)), q, 1.0);
    let large = f32::from_bits(large.to_bits() | (x.to_bits() & 0x8000_0000));
    select(a < 1.0, small, large)
}

/// GELU, `x · Φ(x) = x/2 · (1 + erf(x/√2))`.
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    gelu::<Unfused>(x)
}

#[inline(always)]
fn gelu<M: MulAdd>(x: f32) -> f32 {
    0.5 * x * (1.0 + erf::<M>(x / core::f32::consts::SQRT_2))
}

/// An `f32 → f32` function for [`map_inplace`]. Closures are kernels; so are the unit structs
/// below, whose `apply` is always inlined into the vectorised loop (a closure or function item
/// as large as [`gelu_f32`] would be called once per element instead).
pub trait Kernel: Copy {
    /// The function's value at `x`, its polynomials' steps computed as `M` says.
    fn apply<M: MulAdd>(self, x: f32) -> f32;
}

impl<F: Fn(f32) -> f32 + Copy> Kernel for F {
    #[inline(always)]
    fn apply<M: MulAdd>(self, x: f32) -> f32 {
        self(x)
    }
}

macro_rules! kernels {
    ($($(#[$doc:meta])* $name:ident = $function:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name;

        impl Kernel for $name {
            #[inline(always)]
            fn apply<M: MulAdd>(self, x: f32) -> f32 {
                $function::<M>(x)
            }
        }
    )*};
}

kernels! {
    /// [`exp_f32`].
    Exp = exp;
    /// [`tanh_f32`].
    Tanh = tanh;
    /// [`sigmoid_f32`].
    Sigmoid = sigmoid;
    /// [`erf_f32`].
    Erf = erf;
    /// [`gelu_f32`].
    Gelu = gelu;
}

/// `eˣ` for `x ≤ 0` (and NaN): 0 below `−87.33`, where `eˣ` leaves the normal floats, so that
/// `2ⁿ` is one normal float (`n ≥ −126`) instead of [`exp`]'s two halves.
#[inline(always)]
fn exp_nonpositive<M: MulAdd>(x: f32) -> f32 {
    let clamped = select(x < EXP_LOWEST, EXP_LOWEST, x);
    let (shifted, er) = exp_reduced::<M>(clamped);
    let n = shifted.to_bits() as i32 - ROUND.to_bits() as i32;
    let power = f32::from_bits(((n + 127) as u32) << 23);
    select(x < EXP_LOWEST, 0.0, er * power)
}

/// `row[i] = exp(row[i] − max)` for every `i`, returning the new row's sum: a softmax's
/// numerators and denominator in one pass, `max` being the row's largest element (each
/// exponent ≤ 0: [`exp_nonpositive`]).
pub fn exp_shifted_sum(row: &mut [f32], max: f32) -> f32 {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the processor has the features the function is compiled for.
            return unsafe { exp_shifted_sum_avx512(row, max) };
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            return unsafe { exp_shifted_sum_avx2(row, max) };
        }
    }
    exp_shifted_sum_with::<Unfused, 8>(row, max)
}

/// attnzoo's patch: sixteen lanes of an AVX-512 register where the processor has them (half the
/// instructions of AVX2's eight), in AVX-512's own instructions ([`exp_nonpositive_avx512`]):
/// bit for bit the results of `exp_shifted_sum_with::<Fused, 16>`, the sixteen lanes summed as a
/// tree (`_mm512_reduce_add_ps`), not one after another (a chain of sixteen dependent additions
/// was a fifth of the function's time on rows of 256).
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn exp_shifted_sum_avx512(row: &mut [f32], max: f32) -> f32 {
    use core::arch::x86_64::{_mm512_add_ps, _mm512_loadu_ps, _mm512_reduce_add_ps};
    use core::arch::x86_64::{_mm512_set1_ps, _mm512_setzero_ps, _mm512_storeu_ps, _mm512_sub_ps};
    let mut lanes = _mm512_setzero_ps();
    let mut chunks = row.chunks_exact_mut(16);
    for chunk in &mut chunks {
        let at = chunk.as_mut_ptr();
        // SAFETY: `chunk` holds sixteen floats.
        unsafe {
            let e = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_loadu_ps(at), _mm512_set1_ps(max)));
            _mm512_storeu_ps(at, e);
            lanes = _mm512_add_ps(lanes, e);
        }
    }
    let rest: f32 = chunks
        .into_remainder()
        .iter_mut()
        .map(|x| {
            *x = exp_nonpositive::<Fused>(*x - max);
            *x
        })
        .sum();
    _mm512_reduce_add_ps(lanes) + rest
}

/// [`exp_nonpositive`] of sixteen lanes, the same steps but the last: `2ⁿ · eʳ` is one
/// `vscalefps`, which also zeroes the lanes below −87.33 through its mask, where the portable
/// code builds `2ⁿ` from its bits and selects twice (six instructions fewer in about twenty).
/// Masked lanes compute on freely (`−∞` makes a NaN there); NaN is kept.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f,avx2,fma")]
fn exp_nonpositive_avx512(x: core::arch::x86_64::__m512) -> core::arch::x86_64::__m512 {
    use core::arch::x86_64::*;
    let c = |v: f32| _mm512_set1_ps(v);
    let kept = _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(x, c(EXP_LOWEST));
    let shifted = _mm512_fmadd_ps(x, c(LOG2_E), c(ROUND));
    let n = _mm512_sub_ps(shifted, c(ROUND));
    let r = _mm512_fnmadd_ps(n, c(LN_2_LO), _mm512_fnmadd_ps(n, c(LN_2_HI), x));
    let p = EXP_P[1..].iter().fold(c(EXP_P[0]), |p, &k| _mm512_fmadd_ps(p, r, c(k)));
    let er = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), c(1.0));
    _mm512_maskz_scalef_ps(kept, er, n)
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_shifted_sum_avx2(row: &mut [f32], max: f32) -> f32 {
    exp_shifted_sum_with::<Fused, 8>(row, max)
}

/// The pass of [`exp_shifted_sum`] with `LANES` running sums, one per lane of a vector register,
/// so that the loop vectorises.
#[inline(always)]
fn exp_shifted_sum_with<M: MulAdd, const LANES: usize>(row: &mut [f32], max: f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for (x, lane) in chunk.iter_mut().zip(&mut lanes) {
            *x = exp_nonpositive::<M>(*x - max);
            *lane += *x;
        }
    }
    let rest: f32 = chunks
        .into_remainder()
        .iter_mut()
        .map(|x| {
            *x = exp_nonpositive::<M>(*x - max);
            *x
        })
        .sum();
    lanes.iter().sum::<f32>() + rest
}

/// `data[i] = op(data[i])` for every `i`.
#[inline]
pub fn map_inplace(data: &mut [f32], op: impl Kernel) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the processor has the features the function is compiled for.
            return unsafe { map_inplace_avx512(data, op) };
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            return unsafe { map_inplace_avx2(data, op) };
        }
    }
    data.iter_mut().for_each(|x| *x = op.apply::<Unfused>(*x));
}

/// `op` of every element of `src`, in order.
#[inline]
pub fn map(src: &[f32], op: impl Kernel) -> alloc::vec::Vec<f32> {
    let mut out = src.to_vec();
    map_inplace(&mut out, op);
    out
}

/// attnzoo's patch: sixteen elements per instruction where the processor has AVX-512.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn map_inplace_avx512(data: &mut [f32], op: impl Kernel) {
    data.iter_mut().for_each(|x| *x = op.apply::<Fused>(*x));
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2,fma")]
unsafe fn map_inplace_avx2(data: &mut [f32], op: impl Kernel) {
    data.iter_mut().for_each(|x| *x = op.apply::<Fused>(*x));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Largest error in units of the last place over `[lo, hi]` (`steps` points), against `f64`,
    /// of `op` with and without fused multiply-adds and of `map_inplace` (fused where the
    /// processor has FMA).
    fn max_ulps(op: impl Kernel, exact: fn(f64) -> f64, lo: f32, hi: f32, steps: usize) -> f64 {
        let inputs: alloc::vec::Vec<f32> = (0..=steps)
            .map(|i| lo + (hi - lo) * i as f32 / steps as f32)
            .collect();
        let mut mapped = inputs.clone();
        map_inplace(&mut mapped, op);
        let ulps = |x: f32, y: f32| {
            let want = exact(x as f64);
            let ulp = (want.abs() as f32).max(f32::MIN_POSITIVE);
            let ulp = (f32::from_bits(ulp.to_bits() + 1) - ulp) as f64;
            (y as f64 - want).abs() / ulp
        };
        inputs
            .iter()
            .zip(mapped)
            .map(|(&x, y)| {
                let unfused = ulps(x, op.apply::<Unfused>(x));
                let fused = ulps(x, op.apply::<Fused>(x));
                ulps(x, y).max(unfused).max(fused)
            })
            .fold(0.0, f64::max)
    }

    fn erf(x: f64) -> f64 {
        libm::erf(x)
    }

    #[test]
    fn within_a_few_ulps_of_f64() {
        let exp_err = max_ulps(Exp, f64::exp, -87.0, 88.0, 1 << 20);
        let tanh_err = max_ulps(Tanh, f64::tanh, -12.0, 12.0, 1 << 20);
        let sigmoid_err = max_ulps(Sigmoid, |x| 1.0 / (1.0 + (-x).exp()), -30.0, 30.0, 1 << 20);
        assert!(exp_err <= 2.0, "exp: {exp_err} ulps");
        assert!(tanh_err <= 3.0, "tanh: {tanh_err} ulps");
        assert!(sigmoid_err <= 3.0, "sigmoid: {sigmoid_err} ulps");
        let erf_err = max_ulps(Erf, erf, -6.0, 6.0, 1 << 20);
        assert!(erf_err <= 3.0, "erf: {erf_err} ulps");
    }

    #[test]
    fn exp_shifted_sum_is_a_softmax_numerator_and_its_sum() {
        // Exponents from 0 down to −90 (below −87.33 the result is 0, where eˣ is subnormal),
        // a length that leaves a remainder after the eight or sixteen lanes; the vectorised
        // (fused where the processor has FMA) and the unfused loop.
        let steps = (1 << 20) + 3;
        let inputs: alloc::vec::Vec<f32> = (0..steps)
            .map(|i| 5.0 - 95.0 * i as f32 / (steps - 1) as f32)
            .collect();
        let mut fast = inputs.clone();
        let mut unfused = inputs.clone();
        let sums = [
            exp_shifted_sum(&mut fast, 5.0),
            exp_shifted_sum_with::<Unfused, 8>(&mut unfused, 5.0),
        ];
        let mut want_sum = 0.0f64;
        let mut worst = 0.0f64;
        for (i, &x) in inputs.iter().enumerate() {
            let want = (x as f64 - 5.0).exp();
            want_sum += want;
            for y in [fast[i], unfused[i]] {
                if x - 5.0 < -87.33 {
                    assert_eq!(y, 0.0, "exp({})", x - 5.0);
                    continue;
                }
                let ulp = (want as f32).max(f32::MIN_POSITIVE);
                let ulp = (f32::from_bits(ulp.to_bits() + 1) - ulp) as f64;
                worst = worst.max(((y as f64) - want).abs() / ulp);
            }
        }
        assert!(worst <= 2.0, "exp_shifted_sum: {worst} ulps");
        // 2²⁰ terms summed in f32 in eight lanes.
        for sum in sums {
            assert!(
                ((sum as f64) / want_sum - 1.0).abs() < 1e-4,
                "{sum} against {want_sum}"
            );
        }
        // Eleven terms: eight lanes and a remainder of three.
        let mut short: [f32; 11] = core::array::from_fn(|i| 1.0 - i as f32);
        let sum = exp_shifted_sum(&mut short, 1.0);
        let want: f64 = (0..11).map(|i| (-(i as f64)).exp()).sum();
        assert!(
            ((sum as f64) / want - 1.0).abs() < 1e-6,
            "{sum} against {want}"
        );
        let mut special = [f32::NEG_INFINITY, 3.0, f32::NAN];
        let sum = exp_shifted_sum(&mut special, 3.0);
        assert_eq!(special[..2], [0.0, 1.0]);
        assert!(special[2].is_nan() && sum.is_nan());
        assert_eq!(exp_shifted_sum(&mut [], 0.0), 0.0);
    }

    /// The AVX-512 loop gives the portable fused loop's results bit for bit, and its sum but for
    /// the order of the lanes' additions.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    #[test]
    fn exp_shifted_sum_avx512_is_the_portable_loop() {
        if !std::is_x86_feature_detected!("avx512f") || !std::is_x86_feature_detected!("fma") {
            return;
        }
        let steps = (1 << 20) + 13;
        let mut inputs: alloc::vec::Vec<f32> = (0..steps)
            .map(|i| 2.0 - 110.0 * i as f32 / (steps - 1) as f32)
            .collect();
        inputs.extend([f32::NEG_INFINITY, f32::NAN, -87.33, -87.329_99, -87.330_01, 2.0, -0.0]);
        let mut avx512 = inputs.clone();
        let mut portable = inputs;
        // SAFETY: the processor has AVX-512F and FMA (checked above).
        let sums = unsafe {
            [
                exp_shifted_sum_avx512(&mut avx512, 2.0),
                exp_shifted_sum_avx512_portable(&mut portable, 2.0),
            ]
        };
        assert!(sums.iter().all(|sum| sum.is_nan()), "a NaN in the row: {sums:?}");
        for (a, p) in avx512.iter().zip(&portable) {
            assert_eq!(a.to_bits(), p.to_bits(), "{a} against {p}");
        }
        let (mut avx512, mut portable) = (avx512[..steps].to_vec(), portable[..steps].to_vec());
        // SAFETY: as above.
        let sums = unsafe {
            [
                exp_shifted_sum_avx512(&mut avx512, 0.0),
                exp_shifted_sum_avx512_portable(&mut portable, 0.0),
            ]
        };
        assert!((sums[0] / sums[1] - 1.0).abs() < 1e-6, "{sums:?}");
    }

    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn exp_shifted_sum_avx512_portable(row: &mut [f32], max: f32) -> f32 {
        exp_shifted_sum_with::<Fused, 16>(row, max)
    }

    #[test]
    fn special_values() {
        for (f, name) in [
            (exp_f32 as fn(f32) -> f32, "exp"),
            (tanh_f32, "tanh"),
            (sigmoid_f32, "sigmoid"),
            (erf_f32, "erf"),
        ] {
            assert!(f(f32::NAN).is_nan(), "{name}(NaN)");
        }
        let mut values = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -110.0, 100.0];
        map_inplace(&mut values, Exp);
        assert!(values[0].is_nan());
        assert_eq!(values[1..], [f32::INFINITY, 0.0, 0.0, f32::INFINITY]);
        let mut values = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
        map_inplace(&mut values, Erf);
        assert!(values[0].is_nan());
        assert_eq!(values[1..], [1.0, -1.0]);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-110.0), 0.0);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert!(
            (exp_f32(-90.0) as f64 / (-90f64).exp() - 1.0).abs() < 1e-2,
            "subnormal"
        );
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
        assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
    }
}
