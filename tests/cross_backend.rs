//! The foundation's cross-backend check: a small masked attention, written once, on every
//! usable backend, compared with ndarray (or, without ndarray, with values computed by hand).

use attnzoo_backends::test_devices;
use attnzoo_models::attention::masked_softmax;
use burn::tensor::{Bool, Tensor, TensorData, Tolerance};

/// matmul → masked softmax → weighted sum, returning (context, weights).
fn masked_attention(device: &burn::tensor::Device) -> (TensorData, TensorData) {
    let query = Tensor::<3>::from_floats([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], device);
    let key = Tensor::<3>::from_floats([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]], device);
    let value = Tensor::<3>::from_floats([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]], device);
    // Query 0 may see keys 0 and 1, query 1 only key 2, query 2 nothing at all.
    let mask = Tensor::<3, Bool>::from_bool(
        [[
            [false, false, true],
            [true, true, false],
            [true, true, true],
        ]],
        device,
    );
    let scores = query.matmul(key.swap_dims(1, 2));
    let weights = masked_softmax(scores, Some(mask));
    let context = weights.clone().matmul(value);
    (context.into_data(), weights.into_data())
}

#[test]
fn masked_attention_agrees_on_every_backend() {
    let devices = test_devices();
    assert!(!devices.is_empty(), "no usable backend in this build");
    // Expected by hand: query 0 scores keys 0,1 as 1 and 0 → softmax [e/(e+1), 1/(e+1)].
    let e = std::f32::consts::E;
    let (w0, w1) = (e / (e + 1.0), 1.0 / (e + 1.0));
    let expected_weights = TensorData::from([[[w0, w1, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]]);
    let expected_context = TensorData::from([[
        [w0 * 1.0 + w1 * 3.0, w0 * 2.0 + w1 * 4.0],
        [5.0, 6.0],
        [0.0, 0.0],
    ]]);
    for test in &devices {
        let (context, weights) = masked_attention(&test.device);
        weights.assert_approx_eq::<f32>(&expected_weights, Tolerance::absolute(1e-6));
        context.assert_approx_eq::<f32>(&expected_context, Tolerance::absolute(1e-5));
        let weights = weights.try_into_vec::<f32>().unwrap();
        assert!(
            weights.iter().all(|w| w.is_finite()),
            "{}: NaN in weights",
            test.backend
        );
        assert_eq!(
            &weights[6..9],
            &[0.0, 0.0, 0.0],
            "{}: all-masked row",
            test.backend
        );
        eprintln!("cross-backend masked attention ok on {}", test.backend);
    }
}

/// Dropout's masks: `Tensor::random(Bernoulli(p))` holds only 0 and 1, with mean p (±5σ over
/// 2²⁰ draws) and the ends exact — on flex and ndarray through the patched burn-std
/// (`vendor/burn-std`), elsewhere through each backend's own sampler.
#[test]
fn bernoulli_masks_hold_p_on_every_backend() {
    use burn::tensor::Distribution;
    let n = 1 << 20;
    for test in &test_devices() {
        for p in [0.0, 0.2, 0.8, 1.0] {
            let draws = Tensor::<1>::random([n], Distribution::Bernoulli(p), &test.device)
                .into_data()
                .convert::<f32>()
                .try_into_vec::<f32>()
                .unwrap();
            assert!(
                draws.iter().all(|&x| x == 0.0 || x == 1.0),
                "{}: Bernoulli({p}) drew something other than 0 and 1",
                test.backend
            );
            let mean = draws.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64;
            let tolerance = 5.0 * (p * (1.0 - p) / n as f64).sqrt();
            assert!(
                (mean - p).abs() <= tolerance,
                "{}: Bernoulli({p}) has mean {mean}",
                test.backend
            );
        }
        eprintln!("Bernoulli masks ok on {}", test.backend);
    }
}

/// `exp`, `tanh`, `sigmoid`, `erf` and GELU against `f64` over 2¹⁶ points each: within 4 units
/// in the last place of `f32` on flex (which computes them with the branch-free polynomials of
/// `vendor/burn-flex`); elsewhere within 256 units or 1e-6 (ndarray's sigmoid is 10 units off at
/// −14.7; CubeCL's `erf` is Abramowitz & Stegun 7.1.26, 1.5e-7 absolute in exact arithmetic and
/// 4.9e-7 in f32 on lavapipe). GELU's
/// unit is that of `x / 2`: `1 + erf(x/√2)` cancels for negative `x` in any `f32` evaluation.
#[test]
fn transcendental_functions_hold_f32_precision_on_every_backend() {
    use burn::tensor::activation::{gelu, sigmoid};
    let n = 1 << 16;
    let gelu_exact = |x: f64| 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2));
    // (name, op, input range, exact value, the magnitude whose unit in the last place counts)
    type Case = (
        &'static str,
        fn(Tensor<1>) -> Tensor<1>,
        (f32, f32),
        fn(f64) -> f64,
        fn(f64, f64) -> f64,
    );
    let cases: [Case; 5] = [
        ("exp", |x| x.exp(), (-87.0, 88.0), f64::exp, |_, y| y),
        ("tanh", |x| x.tanh(), (-12.0, 12.0), f64::tanh, |_, y| y),
        (
            "sigmoid",
            sigmoid,
            (-30.0, 30.0),
            |x| 1.0 / (1.0 + (-x).exp()),
            |_, y| y,
        ),
        ("erf", |x| x.erf(), (-6.0, 6.0), libm::erf, |_, y| y),
        ("gelu", gelu, (-10.0, 10.0), gelu_exact, |x, y| {
            y.abs().max(x.abs() / 2.0)
        }),
    ];
    for test in &test_devices() {
        let (ulps, floor) = match test.backend.name() {
            "flex" => (4.0, 0.0),
            _ => (256.0, 1e-6),
        };
        for (name, op, (lo, hi), exact, magnitude) in cases {
            let inputs: Vec<f32> = (0..n)
                .map(|i| lo + (hi - lo) * i as f32 / (n - 1) as f32)
                .collect();
            let outputs = op(Tensor::<1>::from_floats(inputs.as_slice(), &test.device))
                .into_data()
                .try_into_vec::<f32>()
                .unwrap();
            for (&x, &y) in inputs.iter().zip(&outputs) {
                let (x, want) = (f64::from(x), exact(f64::from(x)));
                let unit = magnitude(x, want.abs()).max(f64::from(f32::MIN_POSITIVE))
                    * f64::from(f32::EPSILON);
                assert!(
                    (f64::from(y) - want).abs() <= (ulps * unit).max(floor),
                    "{}: {name}({x}) = {y}, exactly {want}",
                    test.backend
                );
            }
        }
        eprintln!("transcendental functions ok on {}", test.backend);
    }
}

/// The fused path against the dense one past the length where flex's fused op leaves its naive
/// kernel for its flash kernel (`T² > 2¹⁸`), with more queries than one of its blocks (1024): no
/// mask, causal, and padding with a bias and a query offset (a KV-cache step's causal limit), on
/// every backend.
#[test]
fn fused_attention_matches_dense_past_the_flash_threshold() {
    use attnzoo_models::attention::{
        AttentionImpl, AttentionInput, KeyPattern, ScaledDotProductConfig,
    };
    use burn::tensor::Distribution;
    let (batch, heads, len, width) = (2, 2, 1100, 16);
    for test in &test_devices() {
        let device = &test.device;
        let random =
            |dims: [usize; 4]| Tensor::<4>::random(dims, Distribution::Normal(0.0, 1.0), device);
        let (q, k, v) = (
            random([batch, heads, len, width]),
            random([batch, heads, len, width]),
            random([batch, heads, len, width]),
        );
        let queries = 1050;
        let padding = Tensor::<2, Bool>::from_bool(
            TensorData::new(
                (0..batch * len)
                    .map(|i| i % len >= len - 7 * (i / len))
                    .collect::<Vec<_>>(),
                [batch, len],
            ),
            device,
        );
        let bias = random([1, heads, queries, len]);
        for (name, pattern, input) in [
            (
                "no mask",
                KeyPattern::Full,
                AttentionInput::new(q.clone(), k.clone(), v.clone()),
            ),
            (
                "causal",
                KeyPattern::Causal,
                AttentionInput::new(q.clone(), k.clone(), v.clone()),
            ),
            (
                "padding, bias, offset",
                KeyPattern::Causal,
                AttentionInput::new(
                    q.clone().narrow(2, len - queries, queries),
                    k.clone(),
                    v.clone(),
                )
                .mask_pad(padding.clone())
                .bias(bias.clone())
                .query_offset(len - queries),
            ),
        ] {
            let run = |implementation| {
                ScaledDotProductConfig::new()
                    .with_pattern(pattern)
                    .with_implementation(implementation)
                    .try_init()
                    .unwrap()
                    .forward(input.clone())
                    .unwrap()
                    .context
                    .into_data()
            };
            let (dense, fused) = (run(AttentionImpl::Dense), run(AttentionImpl::Fused));
            fused.assert_approx_eq::<f32>(&dense, Tolerance::absolute(2e-5));
            eprintln!("fused = dense at T={len}, {name}, on {}", test.backend);
        }
    }
}

/// Reading a tensor one step at a time (`narrow` per step, as an LSTM reads its input projection)
/// gives the gradient of reading it whole. Through the patched burn-autodiff
/// (`vendor/burn-autodiff`) every slice's gradient is added into the tensor's gradient where it
/// lies; here slices overlap, repeat, and mix with whole-tensor uses before and after them.
#[test]
fn gradients_of_slices_add_up_where_they_lie_on_every_backend() {
    use burn::tensor::Distribution;
    for test in &test_devices() {
        let device = test.device.clone().autodiff();
        let x = Tensor::<3>::random([2, 5, 3], Distribution::Default, &device).require_grad();
        let w = Tensor::<3>::random([1, 5, 3], Distribution::Default, &device);
        // Step t weighs x_t by w_t; step 1 is read twice and 2..4 once more as one slice.
        let mut loss = (x.clone() * x.clone()).sum();
        for t in [0, 1, 1, 2, 3, 4] {
            loss = loss + (x.clone().narrow(1, t, 1) * w.clone().narrow(1, t, 1)).sum();
        }
        loss = loss + (x.clone().narrow(1, 2, 3) * 3.0).sum() + x.clone().sum();
        let grad = x.grad(&loss.backward()).expect("x is tracked");
        let count = Tensor::<3>::from_floats([[[1.0], [2.0], [1.0], [1.0], [1.0]]], &test.device);
        let extra = Tensor::<3>::from_floats([[[0.0], [0.0], [3.0], [3.0], [3.0]]], &test.device);
        let x = x.inner();
        let expected = x.clone() * 2.0 + w.inner() * count + extra + 1.0;
        grad.inner()
            .into_data()
            .assert_approx_eq::<f32>(&expected.into_data(), Tolerance::absolute(1e-5));
        eprintln!("slice gradients ok on {}", test.backend);
    }
}

/// Burn's `attention` op differentiated on every backend (attnzoo's burn-autodiff patch: the
/// backend's fused forward, a backward over blocks of query rows) against the same attention
/// written out as tensor ops: causal over 3 blocks of rows (128, 128, 44), more keys than
/// queries (causal there is `attention_fallback`'s, as before the patch),
/// a Bool mask with a bias broadcast over the heads and its own gradient.
#[test]
fn attention_gradients_equal_the_written_out_formula_on_every_backend() {
    use burn::tensor::activation::softmax;
    use burn::tensor::module::attention;
    use burn::tensor::ops::AttentionModuleOptions;
    use burn::tensor::Distribution;
    let normal = Distribution::Normal(0.0, 1.0);
    for test in &test_devices() {
        let device = test.device.clone().autodiff();
        // (len_q, len_k, causal, mask and a tracked bias)
        for (len_q, len_k, causal, masked) in [
            (300, 300, true, false),
            (64, 256, true, false),
            (64, 256, false, false),
            (100, 256, false, true),
        ] {
            let (batch, heads, width) = (2, 4, 16);
            let q =
                Tensor::<4>::random([batch, heads, len_q, width], normal, &device).require_grad();
            let k =
                Tensor::<4>::random([batch, heads, len_k, width], normal, &device).require_grad();
            let v =
                Tensor::<4>::random([batch, heads, len_k, width], normal, &device).require_grad();
            let w = Tensor::<4>::random([batch, heads, len_q, width], normal, &device);
            let (mask, bias) = if masked {
                // About a fifth of the keys masked, never key 0 (no row is wholly masked).
                let draw = Tensor::<4>::random(
                    [batch, heads, len_q, len_k],
                    Distribution::Default,
                    &device,
                );
                let first = Tensor::<4>::zeros([batch, heads, len_q, 1], &device);
                let rest = Tensor::<4>::ones([batch, heads, len_q, len_k - 1], &device);
                let mask = draw
                    .lower_elem(0.2)
                    .bool_and(Tensor::cat(vec![first, rest], 3).equal_elem(1.0));
                let bias =
                    Tensor::<4>::random([batch, 1, len_q, len_k], normal, &device).require_grad();
                (Some(mask), Some(bias))
            } else {
                (None, None)
            };
            let scale = 0.3;
            let fused = attention(
                q.clone(),
                k.clone(),
                v.clone(),
                mask.clone(),
                bias.clone(),
                AttentionModuleOptions {
                    scale: Some(scale),
                    softcap: None,
                    is_causal: causal,
                },
            );
            let mut scores = q.clone().matmul(k.clone().swap_dims(2, 3)) * scale;
            if let Some(mask) = &mask {
                scores = scores.mask_fill(mask.clone(), f32::NEG_INFINITY);
            }
            if causal {
                let rows = Tensor::<1, burn::tensor::Int>::arange(0..len_q as i64, &device)
                    .reshape([1, 1, len_q, 1])
                    .add_scalar((len_k - len_q) as i64);
                let cols = Tensor::<1, burn::tensor::Int>::arange(0..len_k as i64, &device)
                    .reshape([1, 1, 1, len_k]);
                scores = scores.mask_fill(
                    rows.lower(cols).expand([batch, heads, len_q, len_k]),
                    f32::NEG_INFINITY,
                );
            }
            if let Some(bias) = &bias {
                scores = scores + bias.clone();
            }
            let written = softmax(scores, 3).matmul(v.clone());
            let fused_grads = (fused.clone() * w.clone()).sum().backward();
            let written_grads = (written.clone() * w).sum().backward();
            let case = format!(
                "{} len_q {len_q} len_k {len_k} causal {causal} masked {masked}",
                test.backend
            );
            fused
                .inner()
                .into_data()
                .assert_approx_eq::<f32>(&written.inner().into_data(), Tolerance::absolute(1e-4));
            let mut tracked = vec![("q", q), ("k", k), ("v", v)];
            tracked.extend(bias.map(|bias| ("bias", bias)));
            for (name, x) in tracked {
                let (a, b) = (
                    x.grad(&fused_grads).unwrap(),
                    x.grad(&written_grads).unwrap(),
                );
                let worst: f32 = (a.clone() - b.clone()).abs().max().into_scalar();
                assert!(worst <= 1e-4, "{case}: d{name} differs by {worst}");
            }
            eprintln!("attention gradients ok: {case}");
        }
    }
}
