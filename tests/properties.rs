//! Properties of the attention mechanisms on random shapes and masks, on every backend compiled
//! in (`attnzoo_backends::test_devices()`): batch, lengths, heads, key/value heads, patterns,
//! selections and masks (all-masked rows included) drawn by proptest. For every mechanism that
//! returns weights, every weight is finite and in [0, 1]; a row sums to 1, or is all zero for a
//! query whose keys are all masked; a masked key gets exactly 0; the fused and chunked paths
//! give the dense path's context; a causal query's context does not change with later keys.
//!
//! Case counts are small (the whole file runs in seconds in a debug build); more cases:
//! `PROPTEST_CASES=1000 cargo test --test properties`. Counterexamples proptest shrinks to are
//! kept below as fixed tests.

use attnzoo_backends::{test_devices, TestDevice};
use attnzoo_models::attention::{
    AlignmentConfig, AlignmentScore, AttentionImpl, AttentionInput, KeyPattern, LinformerConfig,
    MultiHeadConfig, MultiHeadInput, ScaledDotProductConfig, Selection,
};
use burn::tensor::{Bool, Device, Tensor, TensorData};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError};

/// Numbers in `[-scale, scale]` from `seed` (xorshift: cheap, and a case is its seed).
fn numbers(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut state = seed | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// Booleans, each true with probability `density`; rows (of `keys`) listed in `full` all true.
fn flags(seed: u64, n: usize, density: f32, keys: usize, full: &[usize]) -> Vec<bool> {
    numbers(seed ^ 0x9e37_79b9, n, 1.0)
        .into_iter()
        .enumerate()
        .map(|(i, x)| (x + 1.0) / 2.0 < density || full.contains(&(i / keys)))
        .collect()
}

fn tensor<const D: usize>(values: Vec<f32>, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::from_data(TensorData::new(values, shape), device)
}

fn mask<const D: usize>(values: Vec<bool>, shape: [usize; D], device: &Device) -> Tensor<D, Bool> {
    Tensor::from_data(TensorData::new(values, shape), device)
}

fn floats<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .unwrap()
}

/// Checks weight rows of `keys` each: finite, in [0, 1], masked keys exactly 0, a row summing
/// to 1 or, when every key of the row is masked, all zero. `masked(row, key)`.
fn check_rows(
    what: &str,
    weights: &[f32],
    keys: usize,
    masked: impl Fn(usize, usize) -> bool,
) -> Result<(), TestCaseError> {
    for (row, values) in weights.chunks(keys).enumerate() {
        let mut sum = 0.0f64;
        let mut open = false;
        for (key, &w) in values.iter().enumerate() {
            prop_assert!(w.is_finite(), "{what}: row {row} key {key}: {w}");
            prop_assert!(
                (0.0..=1.0 + 1e-6).contains(&w),
                "{what}: row {row} key {key}: {w}"
            );
            if masked(row, key) {
                prop_assert!(
                    w == 0.0,
                    "{what}: row {row}: masked key {key} has weight {w}"
                );
            } else {
                open = true;
            }
            sum += f64::from(w);
        }
        let expected = if open { 1.0 } else { 0.0 };
        prop_assert!(
            (sum - expected).abs() < 1e-4,
            "{what}: row {row} sums to {sum}, not {expected}"
        );
    }
    Ok(())
}

fn close(what: &str, a: &[f32], b: &[f32], tolerance: f32) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        prop_assert!(
            (x - y).abs() <= tolerance * (1.0 + y.abs()),
            "{what}: element {i}: {x} vs {y}"
        );
    }
    Ok(())
}

fn patterns() -> impl Strategy<Value = KeyPattern> {
    prop_oneof![
        Just(KeyPattern::Full),
        Just(KeyPattern::Causal),
        (1usize..4, any::<bool>())
            .prop_map(|(window, causal)| KeyPattern::Window { window, causal }),
        (1usize..3, 1usize..4).prop_map(|(sinks, window)| KeyPattern::Sinks { sinks, window }),
        (1usize..4, 1usize..4, any::<bool>()).prop_map(|(stride, summary, causal)| {
            KeyPattern::Strided {
                stride,
                summary: summary.min(stride),
                causal,
            }
        }),
    ]
}

fn selections() -> impl Strategy<Value = Selection> {
    prop_oneof![
        2 => Just(Selection::Soft),
        1 => (1usize..4).prop_map(|k| Selection::TopK { k }),
        1 => Just(Selection::Hard),
    ]
}

/// A mask density: none, some, most, or every key masked.
fn densities() -> impl Strategy<Value = f32> {
    prop_oneof![Just(0.0f32), Just(0.3), Just(0.7), Just(1.0)]
}

fn config() -> Config {
    Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|cases| cases.parse().ok())
            .unwrap_or(24),
        failure_persistence: None,
        ..Config::default()
    }
}

/// One scaled dot-product case.
#[derive(Clone, Debug)]
struct Dot {
    batch: usize,
    heads: usize,
    queries: usize,
    keys: usize,
    width: usize,
    offset: usize,
    pattern: KeyPattern,
    selection: Selection,
    density: f32,
    full_row: Option<usize>,
    scale: f32,
    chunks: (usize, usize),
    seed: u64,
}

fn dots() -> impl Strategy<Value = Dot> {
    (
        (
            1usize..3,
            1usize..3,
            1usize..6,
            1usize..7,
            1usize..6,
            0usize..3,
        ),
        (
            patterns(),
            selections(),
            densities(),
            proptest::option::of(0usize..5),
        ),
        (
            prop_oneof![Just(1.0f32), Just(8.0), Just(60.0)],
            (1usize..4, 1usize..4),
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (batch, heads, queries, keys, width, offset),
                (pattern, selection, density, full_row),
                (scale, chunks, seed),
            )| Dot {
                batch,
                heads,
                queries,
                keys,
                width,
                offset,
                pattern,
                selection,
                density,
                full_row: full_row.filter(|&row| row < queries),
                scale,
                chunks,
                seed,
            },
        )
}

/// Scaled dot-product attention on `case`: the weights' invariants (mask, pattern and
/// selection), and the fused and chunked contexts against the dense one.
fn scaled_dot(case: &Dot, test: &TestDevice) -> Result<(), TestCaseError> {
    let Dot {
        batch: b,
        heads: h,
        queries: q,
        keys: k,
        width: d,
        offset,
        ..
    } = *case;
    let device = &test.device;
    let query = numbers(case.seed, b * h * q * d, case.scale);
    let key = numbers(case.seed.wrapping_add(1), b * h * k * d, case.scale);
    let value = numbers(case.seed.wrapping_add(2), b * h * k * d, 1.0);
    let full: Vec<usize> = case.full_row.into_iter().collect();
    // The same mask for every head: `[b, 1, q, k]`; `full` rows masked in every batch element.
    let explicit = flags(case.seed, b * q * k, case.density, k, &[]);
    let explicit: Vec<bool> = explicit
        .iter()
        .enumerate()
        .map(|(i, &m)| m || full.contains(&(i / k % q)))
        .collect();
    let input = || {
        AttentionInput::new(
            tensor(query.clone(), [b, h, q, d], device),
            tensor(key.clone(), [b, h, k, d], device),
            tensor(value.clone(), [b, h, k, d], device),
        )
        .mask(mask(explicit.clone(), [b, 1, q, k], device))
        .query_offset(offset)
    };
    let attention = |implementation| {
        ScaledDotProductConfig::new()
            .with_pattern(case.pattern)
            .with_selection(case.selection)
            .with_implementation(implementation)
            .try_init()
            .unwrap()
    };
    let what = format!("{}: {case:?}", test.backend);
    let dense = attention(AttentionImpl::Dense)
        .forward(input().with_weights())
        .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
    let weights = floats(dense.weights.expect("weights were asked for"));
    prop_assert_eq!(weights.len(), b * h * q * k);
    let masked = |row: usize, key: usize| {
        let (batch, i) = (row / (h * q), row % q);
        explicit[(batch * q + i) * k + key] || !case.pattern.allows(offset + i, key)
    };
    check_rows(&what, &weights, k, masked)?;
    if let Selection::TopK { k: kept } = case.selection {
        for row in weights.chunks(k) {
            let nonzero = row.iter().filter(|&&w| w > 0.0).count();
            // Ties with the k-th largest score are kept too: random floats have none.
            prop_assert!(nonzero <= kept, "{what}: {nonzero} keys kept, top-{kept}");
        }
    }
    let context = floats(dense.context);
    let (query_chunk, key_chunk) = case.chunks;
    for implementation in [
        AttentionImpl::Fused,
        AttentionImpl::Chunked {
            query_chunk,
            key_chunk,
        },
    ] {
        let other = attention(implementation)
            .forward(input())
            .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
        close(
            &format!("{what}: {implementation:?} against dense"),
            &floats(other.context),
            &context,
            2e-4,
        )?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn scaled_dot_weights_are_distributions_and_every_path_agrees(case in dots()) {
        for test in &test_devices() {
            scaled_dot(&case, test)?;
        }
    }
}

/// One multi-head (grouped-query) self-attention case.
#[derive(Clone, Debug)]
struct Heads {
    batch: usize,
    len: usize,
    kv_heads: usize,
    groups: usize,
    head_width: usize,
    pattern: KeyPattern,
    density: f32,
    padded: Option<usize>,
    implementation: AttentionImpl,
    seed: u64,
}

fn heads() -> impl Strategy<Value = Heads> {
    (
        (1usize..3, 1usize..7, 1usize..3, 1usize..3, 1usize..4),
        (patterns(), densities(), proptest::option::of(0usize..3)),
        (
            prop_oneof![
                Just(AttentionImpl::Dense),
                Just(AttentionImpl::Fused),
                (1usize..4, 1usize..4).prop_map(|(query_chunk, key_chunk)| {
                    AttentionImpl::Chunked {
                        query_chunk,
                        key_chunk,
                    }
                }),
            ],
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (batch, len, kv_heads, groups, head_width),
                (pattern, density, padded),
                (implementation, seed),
            )| Heads {
                batch,
                len,
                kv_heads,
                groups,
                head_width,
                pattern,
                density,
                padded: padded.filter(|&b| b < batch),
                implementation,
                seed,
            },
        )
}

/// Multi-head attention with `kv_heads · groups` query heads: weights `[b, h, t, t]` obey the
/// invariants under the mask, the padding (a batch element may be all padding) and the
/// pattern; with a causal pattern, changing the inputs from position `p` on leaves the context
/// before `p` as it was, on every implementation.
fn multi_head(case: &Heads, test: &TestDevice) -> Result<(), TestCaseError> {
    let device = &test.device;
    let (b, t) = (case.batch, case.len);
    let n_heads = case.kv_heads * case.groups;
    let d_model = n_heads * case.head_width;
    device.seed(case.seed);
    let model = MultiHeadConfig::new(d_model, n_heads)
        .with_n_kv_heads(Some(case.kv_heads))
        .with_attention(
            ScaledDotProductConfig::new()
                .with_pattern(case.pattern)
                .with_implementation(case.implementation),
        )
        .try_init(device)
        .unwrap();
    let x = numbers(case.seed, b * t * d_model, 2.0);
    let explicit = flags(case.seed, t * t, case.density, t, &[]);
    // Batch element `padded` is padding throughout; the others have their last key padded.
    let padding: Vec<bool> = (0..b * t)
        .map(|i| Some(i / t) == case.padded || (t > 1 && i % t == t - 1))
        .collect();
    let run = |x: Vec<f32>, weights: bool| {
        let input = MultiHeadInput::self_attn(tensor(x, [b, t, d_model], device))
            .mask(mask(explicit.clone(), [1, t, t], device))
            .padding(mask(padding.clone(), [b, t], device));
        model.forward(if weights { input.with_weights() } else { input })
    };
    let what = format!("{}: {case:?}", test.backend);
    let out = run(x.clone(), true).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
    let weights = floats(out.weights.expect("weights were asked for"));
    prop_assert_eq!(weights.len(), b * n_heads * t * t);
    let masked = |row: usize, key: usize| {
        let (batch, i) = (row / (n_heads * t), row % t);
        explicit[i * t + key] || padding[batch * t + key] || !case.pattern.allows(i, key)
    };
    check_rows(&what, &weights, t, masked)?;
    if case.pattern == KeyPattern::Causal && t > 1 {
        let p = (case.seed % t as u64) as usize;
        let mut later = x.clone();
        for (i, value) in later.iter_mut().enumerate() {
            if i / d_model % t >= p {
                *value = -*value * 3.0 + 1.0;
            }
        }
        let before = floats(out.context);
        let after = floats(
            run(later, false)
                .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?
                .context,
        );
        let seen = |values: &[f32]| -> Vec<f32> {
            values
                .iter()
                .enumerate()
                .filter(|(i, _)| i / d_model % t < p)
                .map(|(_, &v)| v)
                .collect()
        };
        close(
            &format!("{what}: causal context before {p} after changing later positions"),
            &seen(&after),
            &seen(&before),
            1e-4,
        )?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn multi_head_and_grouped_query_weights_hold_under_masks_padding_and_causality(case in heads()) {
        for test in &test_devices() {
            multi_head(&case, test)?;
        }
    }
}

fn scores() -> impl Strategy<Value = AlignmentScore> {
    prop_oneof![
        Just(AlignmentScore::Additive),
        Just(AlignmentScore::Dot),
        Just(AlignmentScore::General),
        Just(AlignmentScore::Concat),
        (0usize..3).prop_map(|extra| AlignmentScore::Location {
            max_source_len: 6 + extra
        }),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Bahdanau and Luong alignment (`weights [B, T, S]`) with padded sources, a source all
    /// padding among them.
    #[test]
    fn alignment_weights_are_distributions_over_the_unpadded_source(
        score in scores(),
        (batch, steps, source, hidden) in (1usize..4, 1usize..4, 1usize..7, 1usize..6),
        lengths in proptest::collection::vec(0usize..7, 3),
        scale in prop_oneof![Just(1.0f32), Just(30.0)],
        seed in any::<u64>(),
    ) {
        for test in &test_devices() {
            let device = &test.device;
            device.seed(seed);
            let attention = AlignmentConfig::new(hidden, score).try_init(device).unwrap();
            let query = tensor(numbers(seed, batch * steps * hidden, scale), [batch, steps, hidden], device);
            let memory = tensor(numbers(seed ^ 5, batch * source * hidden, scale), [batch, source, hidden], device);
            // Element `b` has its first `lengths[b]` positions (at most `source`) unpadded.
            let padding: Vec<bool> = (0..batch * source).map(|i| i % source >= lengths[i / source]).collect();
            let what = format!("{}: {score:?} batch {batch} steps {steps} source {source} lengths {lengths:?}", test.backend);
            let out = attention
                .forward(query, memory, Some(mask(padding.clone(), [batch, source], device)))
                .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
            let weights = floats(out.weights);
            prop_assert_eq!(weights.len(), batch * steps * source);
            check_rows(&what, &weights, source, |row, key| padding[row / steps * source + key])?;
            prop_assert!(floats(out.context).iter().all(|c| c.is_finite()), "{what}: context");
        }
    }

    /// Linformer's weights over its `k` projected keys (`[B, h, T, k]`), with padding.
    #[test]
    fn linformer_weights_are_distributions_over_the_projected_keys(
        (batch, heads, head_width, proj_len, extra) in (1usize..3, 1usize..3, 1usize..4, 1usize..4, 0usize..4),
        padded in 0usize..3,
        share_kv in any::<bool>(),
        seed in any::<u64>(),
    ) {
        for test in &test_devices() {
            let device = &test.device;
            device.seed(seed);
            let (d_model, len) = (heads * head_width, proj_len + extra);
            let model = LinformerConfig::new(d_model, heads, len + 2, proj_len)
                .with_share_kv(share_kv)
                .try_init(device)
                .unwrap();
            let x = tensor(numbers(seed, batch * len * d_model, 2.0), [batch, len, d_model], device);
            let padding: Vec<bool> = (0..batch * len).map(|i| i % len + padded >= len).collect();
            let what = format!("{}: batch {batch} heads {heads} len {len} k {proj_len} padded {padded}", test.backend);
            let (context, weights) = model
                .forward(x, Some(mask(padding, [batch, len], device)), true)
                .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
            let weights = floats(weights.expect("weights were asked for"));
            prop_assert_eq!(weights.len(), batch * heads * len * proj_len);
            check_rows(&what, &weights, proj_len, |_, _| false)?;
            prop_assert!(floats(context).iter().all(|c| c.is_finite()), "{what}: context");
        }
    }
}
