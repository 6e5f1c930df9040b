//! Property tests for every mechanism, on every usable backend:
//! weights are ≥ 0 and sum to 1 over unmasked keys; masked keys get exactly 0; a query with
//! every key masked gets zero context and weights; permuting keys and values together leaves the
//! context unchanged; batch items do not leak; causal attention never sees the future; the
//! chunked and fused paths equal the dense one for random lengths, chunk sizes and windows.

use attnzoo_backends::test_devices;
use attnzoo_models::attention::{
    AlignmentConfig, AlignmentScore, AttentionImpl, AttentionInput, KeyPattern, LinformerConfig,
    MultiHeadConfig, MultiHeadInput, ScaledDotProduct, ScaledDotProductConfig, Selection,
};
use attnzoo_models::position::RotaryConfig;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use proptest::prelude::*;

/// Deterministic values in [-2, 2) from a seed (xorshift), so shrinking keeps the data.
fn values(seed: u64, count: usize) -> Vec<f32> {
    let mut state = seed | 1;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 4000) as f32 / 1000.0 - 2.0
        })
        .collect()
}

fn tensor<const D: usize>(seed: u64, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(
        TensorData::new(values(seed, shape.iter().product()), shape),
        device,
    )
}

fn mask<const D: usize>(bits: &[bool], shape: [usize; D], device: &Device) -> Tensor<D, Bool> {
    Tensor::from_data(TensorData::new(bits.to_vec(), shape), device)
}

fn host<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor.into_data().try_into_vec::<f32>().unwrap()
}

fn close(a: &[f32], b: &[f32], tolerance: f32) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.len(), b.len());
    for (index, (x, y)) in a.iter().zip(b).enumerate() {
        prop_assert!(
            (x - y).abs() <= tolerance * (1.0 + y.abs()),
            "at {}: {} vs {}",
            index,
            x,
            y
        );
    }
    Ok(())
}

/// Checks rows of weights `[rows, keys]` against the mask bits (true = masked).
fn check_weights(weights: &[f32], masked: &[bool], keys: usize) -> Result<(), TestCaseError> {
    for (row, row_mask) in weights.chunks(keys).zip(masked.chunks(keys)) {
        prop_assert!(
            row.iter().all(|w| w.is_finite() && *w >= 0.0),
            "weights {:?}",
            row
        );
        let unmasked: f32 = row
            .iter()
            .zip(row_mask)
            .filter(|(_, m)| !**m)
            .map(|(w, _)| w)
            .sum();
        let expected = if row_mask.iter().any(|m| !m) {
            1.0
        } else {
            0.0
        };
        prop_assert!(
            (unmasked - expected).abs() < 1e-5,
            "row sums to {}",
            unmasked
        );
        for (w, m) in row.iter().zip(row_mask) {
            if *m {
                prop_assert_eq!(*w, 0.0);
            }
        }
    }
    Ok(())
}

fn sdp(pattern: KeyPattern, implementation: AttentionImpl) -> ScaledDotProduct {
    ScaledDotProductConfig::new()
        .with_pattern(pattern)
        .with_implementation(implementation)
        .try_init()
        .unwrap()
}

const ALL_SCORES: [AlignmentScore; 5] = [
    AlignmentScore::Additive,
    AlignmentScore::Dot,
    AlignmentScore::General,
    AlignmentScore::Concat,
    AlignmentScore::Location { max_source_len: 6 },
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn scaled_dot_weights_are_a_masked_distribution_and_dead_rows_are_zero(
        seed in any::<u64>(), batch in 1usize..3, q_len in 1usize..6, k_len in 1usize..7, width in 1usize..5,
        bits in prop::collection::vec(any::<bool>(), 2 * 5 * 6),
    ) {
        let masked: Vec<bool> = bits.iter().copied().cycle().take(batch * q_len * k_len).collect();
        for test in test_devices() {
            let device = &test.device;
            let input = AttentionInput::new(
                tensor(seed, [batch, q_len, width], device),
                tensor(seed + 1, [batch, k_len, width], device),
                tensor(seed + 2, [batch, k_len, width], device),
            )
            .mask(mask(&masked, [batch, q_len, k_len], device));
            let dense = sdp(KeyPattern::Full, AttentionImpl::Dense).forward(input.clone().with_weights()).unwrap();
            check_weights(&host(dense.weights.unwrap()), &masked, k_len)?;
            let context = host(dense.context);
            for (row, row_mask) in context.chunks(width).zip(masked.chunks(k_len)) {
                if row_mask.iter().all(|m| *m) {
                    prop_assert!(row.iter().all(|c| *c == 0.0), "{}: dead row context {:?}", test.backend, row);
                }
            }
            for implementation in [AttentionImpl::Fused, AttentionImpl::Chunked { query_chunk: 2, key_chunk: 3 }] {
                let other = host(sdp(KeyPattern::Full, implementation).forward(input.clone()).unwrap().context);
                prop_assert!(other.iter().all(|c| c.is_finite()), "{} {:?}: NaN", test.backend, implementation);
                close(&other, &context, 1e-5)?;
            }
        }
    }

    #[test]
    fn permuting_keys_and_values_together_keeps_the_context(
        seed in any::<u64>(), k_len in 2usize..7, shift in 1usize..6,
    ) {
        let (q_len, width) = (3, 4);
        let permutation: Vec<i64> = (0..k_len).map(|j| ((j + shift) % k_len) as i64).collect();
        for test in test_devices() {
            let device = &test.device;
            let query = tensor(seed, [1, q_len, width], device);
            let key = tensor(seed + 1, [1, k_len, width], device);
            let value = tensor(seed + 2, [1, k_len, width], device);
            let index = Tensor::<1, Int>::from_data(TensorData::new(permutation.clone(), [k_len]), device);
            let attention = sdp(KeyPattern::Full, AttentionImpl::Dense);
            let original = attention.forward(AttentionInput::new(query.clone(), key.clone(), value.clone())).unwrap();
            let permuted = attention
                .forward(AttentionInput::new(query, key.select(1, index.clone()), value.select(1, index)))
                .unwrap();
            close(&host(permuted.context), &host(original.context), 1e-5)?;
        }
    }

    #[test]
    fn causal_local_and_sparse_attention_never_see_what_they_may_not(
        seed in any::<u64>(), len in 2usize..9, window in 1usize..4, query_chunk in 1usize..5, key_chunk in 1usize..5,
    ) {
        let width = 3;
        for pattern in [KeyPattern::Causal, KeyPattern::Window { window, causal: true },
                        KeyPattern::Window { window, causal: false },
                        KeyPattern::Strided { stride: 3, summary: 1, causal: true }] {
            for test in test_devices() {
                let device = &test.device;
                let x = tensor(seed, [1, len, width], device);
                let reference = host(sdp(pattern, AttentionImpl::Dense)
                    .forward(AttentionInput::self_attn(x.clone())).unwrap().context);
                for implementation in [AttentionImpl::Fused, AttentionImpl::Chunked { query_chunk, key_chunk }] {
                    let other = host(sdp(pattern, implementation).forward(AttentionInput::self_attn(x.clone())).unwrap().context);
                    close(&other, &reference, 1e-5)?;
                }
                // Changing the last position's key and value changes no query that may not see it.
                let last = len - 1;
                let changed = Tensor::cat(vec![x.clone().narrow(1, 0, last), tensor(seed + 9, [1, 1, width], device)], 1);
                let after = host(sdp(pattern, AttentionImpl::Dense)
                    .forward(AttentionInput::new(x.clone(), changed.clone(), changed)).unwrap().context);
                for i in (0..len).filter(|&i| !pattern.allows(i, last)) {
                    close(&after[i * width..(i + 1) * width], &reference[i * width..(i + 1) * width], 1e-6)?;
                }
            }
        }
    }

    #[test]
    fn batch_items_do_not_leak_in_any_mechanism(seed in any::<u64>(), len in 1usize..5) {
        let hidden = 4;
        for test in test_devices() {
            let device = &test.device;
            let a = tensor(seed, [2, len, hidden], device);
            let b = Tensor::cat(vec![a.clone().narrow(0, 0, 1), tensor(seed + 7, [1, len, hidden], device)], 0);
            let mha = MultiHeadConfig::new(hidden, 2).with_n_kv_heads(Some(1)).try_init(device).unwrap();
            let first = |x: Tensor<3>| host(mha.forward(MultiHeadInput::self_attn(x)).unwrap().context.narrow(0, 0, 1));
            close(&first(b.clone()), &first(a.clone()), 1e-6)?;
            for score in ALL_SCORES {
                let alignment = AlignmentConfig::new(hidden, score).try_init(device).unwrap();
                let first = |x: Tensor<3>| -> Result<Vec<f32>, TestCaseError> {
                    let out = alignment.forward(x.clone(), x, None).unwrap();
                    check_weights(&host(out.weights), &vec![false; 2 * len * len], len)?;
                    Ok(host(out.context.narrow(0, 0, 1)))
                };
                close(&first(b.clone())?, &first(a.clone())?, 1e-6)?;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn top_k_keeps_the_k_largest_scores_and_hard_is_one_hot(seed in any::<u64>(), k_len in 2usize..8, k in 1usize..4) {
        let (q_len, width) = (3, 4);
        for test in test_devices() {
            let device = &test.device;
            let query = tensor(seed, [1, q_len, width], device);
            let key = tensor(seed + 1, [1, k_len, width], device);
            let scores = host(query.clone().matmul(key.clone().swap_dims(1, 2)));
            for (selection, kept) in [(Selection::TopK { k }, k.min(k_len)), (Selection::Hard, 1)] {
                let attention = ScaledDotProductConfig::new().with_selection(selection).try_init().unwrap();
                let out = attention
                    .forward(AttentionInput::new(query.clone(), key.clone(), tensor(seed + 2, [1, k_len, width], device)).with_weights())
                    .unwrap();
                let weights = host(out.weights.unwrap());
                check_weights(&weights, &vec![false; q_len * k_len], k_len)?;
                for (row, row_scores) in weights.chunks(k_len).zip(scores.chunks(k_len)) {
                    let mut sorted = row_scores.to_vec();
                    sorted.sort_by(|a, b| b.total_cmp(a));
                    let threshold = sorted[kept - 1];
                    for (w, s) in row.iter().zip(row_scores) {
                        if *s < threshold - 1e-5 {
                            prop_assert_eq!(*w, 0.0, "{} {:?}: a score below the top {} kept weight", test.backend, selection, kept);
                        }
                    }
                    if selection == Selection::Hard && sorted[0] - sorted[1] > 1e-4 {
                        prop_assert!(row.iter().any(|w| (*w - 1.0).abs() < 1e-6), "{}: hard row {:?}", test.backend, row);
                    }
                }
            }
        }
    }

    #[test]
    fn linformer_ignores_padding_and_batch_neighbours(seed in any::<u64>(), len in 4usize..8) {
        let (d_model, pad) = (8, 2);
        for test in test_devices() {
            let device = &test.device;
            let linformer = LinformerConfig::new(d_model, 2, 8, 3).try_init(device).unwrap();
            let x = tensor(seed, [2, len, d_model], device);
            // Item 0's last `pad` positions are padding: changing them, or item 1, changes nothing unpadded.
            let bits: Vec<bool> = (0..2 * len).map(|i| i < len && i >= len - pad).collect();
            let padding = mask(&bits, [2, len], device);
            let changed = Tensor::cat(vec![
                x.clone().narrow(0, 0, 1).narrow(1, 0, len - pad),
                tensor(seed + 3, [1, pad, d_model], device),
            ], 1);
            let changed = Tensor::cat(vec![changed, tensor(seed + 4, [1, len, d_model], device)], 0);
            let unpadded = |x: Tensor<3>| host(linformer.forward(x, Some(padding.clone()), false).unwrap().0.narrow(0, 0, 1).narrow(1, 0, len - pad));
            close(&unpadded(changed), &unpadded(x), 1e-5)?;
        }
    }

    #[test]
    fn rotary_scores_depend_only_on_the_distance(seed in any::<u64>(), shift in 1usize..20, interleaved in any::<bool>()) {
        let d_head = 8;
        for test in test_devices() {
            let device = &test.device;
            let rotary = RotaryConfig::new(d_head).with_interleaved(interleaved).try_init().unwrap();
            let q = tensor::<4>(seed, [1, 1, 1, d_head], device);
            let k = tensor::<4>(seed + 1, [1, 1, 1, d_head], device);
            // q at position 3, k at position 1, then both moved by `shift`: the same score.
            let score = |q_pos: usize, k_pos: usize| {
                let q = rotary.apply(q.clone(), q_pos).unwrap();
                let k = rotary.apply(k.clone(), k_pos).unwrap();
                host(q.matmul(k.swap_dims(2, 3)))[0]
            };
            close(&[score(3 + shift, 1 + shift)], &[score(3, 1)], 1e-4)?;
        }
    }
}

#[test]
fn alignment_masks_padding_exactly_and_zeroes_an_all_padded_item() {
    for test in test_devices() {
        let device = &test.device;
        let memory = tensor(3, [2, 4, 4], device);
        let query = tensor(4, [2, 4], device);
        let padding = [false, false, true, true, true, true, true, true];
        for score in ALL_SCORES {
            let alignment = AlignmentConfig::new(4, score).try_init(device).unwrap();
            let out = alignment
                .step(
                    query.clone(),
                    memory.clone(),
                    Some(mask(&padding, [2, 4], device)),
                )
                .unwrap();
            check_weights(&host(out.weights), &padding, 4).unwrap();
            let context = host(out.context);
            assert!(
                context[4..].iter().all(|c| *c == 0.0),
                "{}: {score:?} context {context:?}",
                test.backend
            );
        }
    }
}
