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
