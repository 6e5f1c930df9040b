//! Properties of the attention mechanisms on random shapes and masks, on every backend compiled
//! in (`attnzoo_backends::test_devices()`): batch, lengths, heads, key/value heads, patterns,
//! selections and masks (all-masked rows included) drawn by proptest. For every mechanism that
//! returns weights, every weight is finite and in [0, 1]; a row sums to 1, or is all zero for a
//! query whose keys are all masked (at most 1 with a learned sink logit); a masked key gets
//! exactly 0; the fused and chunked paths give the dense path's context; a causal query's
//! context does not change with later keys; a KV cache (rolling for windows and sinks, latent
//! for MLA) decodes step by step what the whole forward computes. The research variants whose
//! weights are not distributions (sigmoid, talking heads, differential) or that have none
//! (linear, Performer) are held to what they do promise: a padded key changes nothing, a query
//! whose keys are all padding gets a zero context, and causality.
//!
//! Case counts are small (the whole file runs in seconds in a debug build); more cases:
//! `PROPTEST_CASES=1000 cargo test --test properties`. Counterexamples proptest shrinks to are
//! kept below as fixed tests.

use attnzoo_backends::{test_devices, TestDevice};
use attnzoo_models::attention::{
    AlignmentConfig, AlignmentScore, AttentionImpl, AttentionInput, AttentionOutput,
    DifferentialConfig, KeyPattern, KvCache, LatentCache, LinearAttentionConfig, LinformerConfig,
    MultiHeadConfig, MultiHeadInput, MultiHeadLatentConfig, MultiHeadLatentInput, PerformerConfig,
    RelativePositionConfig, ScaledDotProductConfig, Selection, SigmoidAttentionConfig,
    TalkingHeadsConfig,
};
use attnzoo_models::norm::RmsNormConfig;
use attnzoo_models::position::{RotaryConfig, T5RelativeBiasConfig};
use attnzoo_models::AttnError;
use burn::module::Param;
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
/// to 1 (at most 1 with a `sink` logit, which takes a share) or, when every key of the row is
/// masked, all zero. `masked(row, key)`.
fn check_rows(
    what: &str,
    weights: &[f32],
    keys: usize,
    sink: bool,
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
        let fits = if sink && open {
            sum <= 1.0 + 1e-4
        } else {
            (sum - expected).abs() < 1e-4
        };
        prop_assert!(fits, "{what}: row {row} sums to {sum}, not {expected}");
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

/// Key padding `[batch, len]`: element `all_padded` padding throughout, the others with their
/// last key padded (when they have two).
fn padding(batch: usize, len: usize, all_padded: Option<usize>) -> Vec<bool> {
    (0..batch * len)
        .map(|i| Some(i / len) == all_padded || (len > 1 && i % len == len - 1))
        .collect()
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
    check_rows(&what, &weights, k, false, masked)?;
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
    let padding = padding(b, t, case.padded);
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
    check_rows(&what, &weights, t, false, masked)?;
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
            check_rows(&what, &weights, source, false, |row, key| padding[row / steps * source + key])?;
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
            check_rows(&what, &weights, proj_len, false, |_, _| false)?;
            prop_assert!(floats(context).iter().all(|c| c.is_finite()), "{what}: context");
        }
    }
}

/// The patterns a decoder's KV cache serves: causal, a causal sliding window (a rolling cache
/// of `window` positions) and StreamingLLM's sinks plus a window.
fn decoder_patterns() -> impl Strategy<Value = KeyPattern> {
    prop_oneof![
        Just(KeyPattern::Causal),
        (1usize..4).prop_map(|window| KeyPattern::Window {
            window,
            causal: true
        }),
        (1usize..3, 1usize..4).prop_map(|(sinks, window)| KeyPattern::Sinks { sinks, window }),
    ]
}

/// One multi-head case with today's options: an explicit head width (not `d_model / h`),
/// QK-norm, learned sink logits and soft-capped scores, with RoPE, under a decoder pattern.
#[derive(Clone, Debug)]
struct Modern {
    batch: usize,
    len: usize,
    kv_heads: usize,
    groups: usize,
    d_head: usize,
    extra_width: usize,
    qk_norm: bool,
    sinks: bool,
    softcap: Option<f64>,
    pattern: KeyPattern,
    density: f32,
    padded: Option<usize>,
    seed: u64,
}

fn moderns() -> impl Strategy<Value = Modern> {
    (
        (
            1usize..3,
            1usize..8,
            1usize..3,
            1usize..3,
            1usize..4,
            0usize..3,
        ),
        (
            any::<bool>(),
            any::<bool>(),
            proptest::option::of(prop_oneof![Just(0.5f64), Just(5.0), Just(50.0)]),
        ),
        (
            decoder_patterns(),
            densities(),
            proptest::option::of(0usize..3),
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (batch, len, kv_heads, groups, half_head, extra_width),
                (qk_norm, sinks, softcap),
                (pattern, density, padded, seed),
            )| Modern {
                batch,
                len,
                kv_heads,
                groups,
                d_head: 2 * half_head,
                extra_width,
                qk_norm,
                sinks,
                softcap,
                pattern,
                density,
                padded: padded.filter(|&b| b < batch),
                seed,
            },
        )
}

fn failed(what: &str) -> impl Fn(AttnError) -> TestCaseError + '_ {
    move |error| TestCaseError::fail(format!("{what}: {error}"))
}

/// The weights' invariants under mask, padding, pattern and sinks; then, unmasked, the cached
/// decoder one position at a time equals the whole forward, and a window or sink pattern's
/// cache never holds more than the positions a later query may still see.
fn modern_multi_head(case: &Modern, test: &TestDevice) -> Result<(), TestCaseError> {
    let device = &test.device;
    let (b, t) = (case.batch, case.len);
    let n_heads = case.kv_heads * case.groups;
    let d_model = n_heads * case.d_head + case.extra_width;
    device.seed(case.seed);
    let mut model = MultiHeadConfig::new(d_model, n_heads)
        .with_n_kv_heads(Some(case.kv_heads))
        .with_d_head(Some(case.d_head))
        .with_qk_norm(case.qk_norm.then(|| RmsNormConfig::new(case.d_head)))
        .with_sinks(case.sinks)
        .with_attention(
            ScaledDotProductConfig::new()
                .with_pattern(case.pattern)
                .with_softcap(case.softcap),
        )
        .try_init(device)
        .unwrap();
    if case.sinks {
        // Learned sinks start at zero: these are random, some of them large.
        let logits = numbers(case.seed ^ 3, n_heads, 4.0);
        model.sinks = Some(Param::from_tensor(tensor(logits, [n_heads], device)));
    }
    let rotary = RotaryConfig::new(case.d_head).try_init().unwrap();
    let x = tensor(
        numbers(case.seed, b * t * d_model, 2.0),
        [b, t, d_model],
        device,
    );
    let explicit = flags(case.seed, t * t, case.density, t, &[]);
    let padding = padding(b, t, case.padded);
    let what = format!("{}: {case:?}", test.backend);
    let out = model
        .forward(
            MultiHeadInput::self_attn(x.clone())
                .mask(mask(explicit.clone(), [1, t, t], device))
                .padding(mask(padding.clone(), [b, t], device))
                .rotary(rotary.clone())
                .with_weights(),
        )
        .map_err(failed(&what))?;
    let weights = floats(out.weights.expect("weights were asked for"));
    prop_assert_eq!(weights.len(), b * n_heads * t * t);
    let masked = |row: usize, key: usize| {
        let (batch, i) = (row / (n_heads * t), row % t);
        explicit[i * t + key] || padding[batch * t + key] || !case.pattern.allows(i, key)
    };
    check_rows(&what, &weights, t, case.sinks, masked)?;
    prop_assert!(floats(out.context).iter().all(|c| c.is_finite()), "{what}");

    let whole = model
        .forward(MultiHeadInput::self_attn(x.clone()).rotary(rotary.clone()))
        .map_err(failed(&what))?;
    let mut cache = KvCache::growing();
    let mut steps = Vec::new();
    for i in 0..t {
        let x_i = x.clone().narrow(1, i, 1);
        let step = model
            .forward_cached(
                MultiHeadInput::self_attn(x_i).rotary(rotary.clone()),
                &mut cache,
            )
            .map_err(failed(&what))?;
        steps.push(step.context);
        if let Some(kept) = case.pattern.retained(i + 1) {
            let bound: usize = kept.iter().map(|range| range.len()).sum();
            prop_assert!(
                cache.len() <= bound,
                "{what}: after {} positions the cache holds {}, more than the {bound} still seen",
                i + 1,
                cache.len()
            );
        }
    }
    close(
        &format!("{what}: step by step against the whole sequence"),
        &floats(Tensor::cat(steps, 1)),
        &floats(whole.context),
        1e-4,
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sinks_qk_norm_and_softcap_keep_the_weights_and_a_rolling_cache_decodes_the_whole(case in moderns()) {
        for test in &test_devices() {
            modern_multi_head(&case, test)?;
        }
    }

    /// Multi-head latent attention (DeepSeek-V2), causal with padding: the expanded path's
    /// weights are distributions over the unpadded past, the absorbed path gives its context,
    /// and the latent cache decodes the whole sequence one position at a time on either path.
    #[test]
    fn latent_attention_weights_absorbed_path_and_latent_cache_agree(
        (batch, len, heads, rank, nope, half_rope, v_width) in (1usize..3, 1usize..7, 1usize..3, 1usize..5, 1usize..4, 1usize..3, 1usize..4),
        (extra_width, q_rank) in (0usize..4, proptest::option::of(1usize..5)),
        padded in proptest::option::of(0usize..3),
        seed in any::<u64>(),
    ) {
        for test in &test_devices() {
            let device = &test.device;
            device.seed(seed);
            let d_model = 3 + extra_width;
            let model = MultiHeadLatentConfig::new(d_model, heads, rank, nope, 2 * half_rope, v_width)
                .with_q_lora_rank(q_rank)
                .with_attention(ScaledDotProductConfig::new().with_pattern(KeyPattern::Causal))
                .try_init(device)
                .unwrap();
            let x = tensor(numbers(seed, batch * len * d_model, 2.0), [batch, len, d_model], device);
            let padding: Vec<bool> = (0..batch * len)
                .map(|i| Some(i / len) == padded || (len > 1 && i % len == 0))
                .collect();
            let what = format!(
                "{}: batch {batch} len {len} heads {heads} rank {rank} nope {nope} rope {} v {v_width} q_rank {q_rank:?} padded {padded:?}",
                test.backend, 2 * half_rope
            );
            let input = || MultiHeadLatentInput::new(x.clone()).padding(mask(padding.clone(), [batch, len], device));
            let expanded = model.forward(input().with_weights()).map_err(failed(&what))?;
            let weights = floats(expanded.weights.expect("weights were asked for"));
            prop_assert_eq!(weights.len(), batch * heads * len * len);
            check_rows(&what, &weights, len, false, |row, key| {
                padding[row / (heads * len) * len + key] || key > row % len
            })?;
            let absorbed = model.forward(input().absorbed()).map_err(failed(&what))?;
            let context = floats(expanded.context);
            close(&format!("{what}: absorbed against expanded"), &floats(absorbed.context), &context, 1e-4)?;

            let whole = floats(model.forward(MultiHeadLatentInput::new(x.clone())).map_err(failed(&what))?.context);
            for absorb in [false, true] {
                let mut cache = LatentCache::new();
                let mut steps = Vec::new();
                for i in 0..len {
                    let step = MultiHeadLatentInput::new(x.clone().narrow(1, i, 1));
                    let step = if absorb { step.absorbed() } else { step };
                    steps.push(model.forward_cached(step, &mut cache).map_err(failed(&what))?.context);
                }
                prop_assert_eq!(cache.len(), len);
                close(&format!("{what}: cached, absorbed {absorb}"), &floats(Tensor::cat(steps, 1)), &whole, 1e-4)?;
            }
        }
    }
}

/// The research variants, each called through its own module.
#[derive(Clone, Copy, Debug)]
enum Variant {
    Sigmoid,
    TalkingHeads,
    Differential,
    Shaw,
    T5,
    Linear { chunk: usize },
    Performer,
}

fn variants() -> impl Strategy<Value = Variant> {
    prop_oneof![
        Just(Variant::Sigmoid),
        Just(Variant::TalkingHeads),
        Just(Variant::Differential),
        Just(Variant::Shaw),
        Just(Variant::T5),
        (1usize..4).prop_map(|chunk| Variant::Linear { chunk }),
        Just(Variant::Performer),
    ]
}

/// A research variant's forward.
type Attend = Box<dyn Fn(AttentionInput<4>) -> Result<AttentionOutput<4>, AttnError>>;

/// `variant` built for heads of `width` over `len` positions, once per case and backend: a
/// second initialisation could draw other random weights (the tests run in parallel threads, and
/// a backend's seeded generator is shared).
fn build(
    variant: Variant,
    [heads, len, width]: [usize; 3],
    causal: bool,
    device: &Device,
) -> Result<Attend, AttnError> {
    let pattern = if causal {
        KeyPattern::Causal
    } else {
        KeyPattern::Full
    };
    Ok(match variant {
        // A causal one needs a fixed `n` (the bias `−ln n` may not change as decoding goes on).
        Variant::Sigmoid => {
            let attention = SigmoidAttentionConfig::new()
                .with_n(causal.then_some(8))
                .with_pattern(pattern)
                .try_init()?;
            Box::new(move |input| attention.forward(input))
        }
        Variant::TalkingHeads => {
            let attention = TalkingHeadsConfig::new(heads)
                .with_pattern(pattern)
                .try_init(device)?;
            Box::new(move |input| attention.forward(input))
        }
        // Heads of (even) width `width`: two query and key halves.
        Variant::Differential => {
            let attention = DifferentialConfig::new(width)
                .with_pattern(pattern)
                .try_init(device)?;
            Box::new(move |input| attention.forward(input))
        }
        Variant::Shaw => {
            let attention = RelativePositionConfig::new(width, width, 2)
                .with_pattern(pattern)
                .try_init(device)?;
            Box::new(move |input| attention.forward(input))
        }
        Variant::T5 => {
            let attention = ScaledDotProductConfig::new()
                .with_pattern(pattern)
                .try_init()?;
            let bias = T5RelativeBiasConfig::new(heads)
                .with_num_buckets(8)
                .with_max_distance(5)
                .with_bidirectional(!causal)
                .try_init(device)?
                .bias(len, len, 0);
            Box::new(move |input: AttentionInput<4>| attention.forward(input.bias(bias.clone())))
        }
        Variant::Linear { chunk } => {
            let attention = LinearAttentionConfig::new()
                .with_causal(causal)
                .with_chunk(chunk)
                .try_init()?;
            Box::new(move |input| attention.forward(input))
        }
        Variant::Performer => {
            let attention = PerformerConfig::new(width).try_init(device)?;
            Box::new(move |input| attention.forward(input))
        }
    })
}

proptest! {
    #![proptest_config(config())]

    /// Every research variant: a finite context; a padded key's query, key and value change
    /// nothing; a batch element all padding gets a zero context; causal (all but Performer,
    /// which has no causal form) means a query's context ignores later positions. Where the
    /// variant returns weights, padded and later keys get exactly 0, sigmoid's are in [0, 1] and
    /// the softmax variants' (Shaw's and T5's) rows are distributions.
    #[test]
    fn research_variants_ignore_padded_keys_and_keep_causality(
        variant in variants(),
        (batch, heads, len, half_width) in (1usize..3, 1usize..4, 1usize..7, 1usize..4),
        (causal, all_padded) in (any::<bool>(), proptest::option::of(0usize..2)),
        seed in any::<u64>(),
    ) {
        let causal = causal && !matches!(variant, Variant::Performer);
        let width = 2 * half_width;
        let (b, h, t) = (batch, heads, len);
        let all_padded = all_padded.filter(|&e| e < b);
        let padding = padding(b, t, all_padded);
        let n = b * h * t * width;
        let qkv = [numbers(seed, n, 2.0), numbers(seed ^ 1, n, 2.0), numbers(seed ^ 2, n, 1.0)];
        // Changes every value at a position `position(i)` picks: `[b, h, t, width]` order.
        let changed = |values: &[f32], at: &dyn Fn(usize, usize) -> bool| -> Vec<f32> {
            values.iter().enumerate().map(|(i, &v)| {
                let (element, position) = (i / (h * t * width), i / width % t);
                if at(element, position) { 3.0 - 2.0 * v } else { v }
            }).collect()
        };
        for test in &test_devices() {
            let device = &test.device;
            let what = format!("{}: {variant:?} batch {b} heads {h} len {t} width {width} causal {causal} all padded {all_padded:?}", test.backend);
            device.seed(seed);
            let attend = build(variant, [h, t, width], causal, device).map_err(failed(&what))?;
            let run = |[q, k, v]: [Vec<f32>; 3], weights: bool| -> Result<(Vec<f32>, Option<Vec<f32>>), TestCaseError> {
                let input = AttentionInput::new(
                    tensor(q, [b, h, t, width], device),
                    tensor(k, [b, h, t, width], device),
                    tensor(v, [b, h, t, width], device),
                )
                .mask(mask(padding.clone(), [b, 1, 1, t], device));
                let input = if weights { input.with_weights() } else { input };
                let out = attend(input).map_err(failed(&what))?;
                Ok((floats(out.context), out.weights.map(floats)))
            };
            let (context, weights) = run(qkv.clone(), true)?;
            prop_assert!(context.iter().all(|c| c.is_finite()), "{what}: context");
            for (i, &c) in context.iter().enumerate() {
                if Some(i / (h * t * width)) == all_padded {
                    prop_assert!(c == 0.0, "{what}: an element all padding has context {c}");
                }
            }
            let padded = |element: usize, position: usize| padding[element * t + position];
            let (moved, _) = run(qkv.clone().map(|values| changed(&values, &padded)), false)?;
            // A padded position's own query moves its own row: compare the other rows.
            let unpadded_rows = |values: &[f32]| -> Vec<f32> {
                values.iter().enumerate()
                    .filter(|(i, _)| !padded(i / (h * t * width), i / width % t))
                    .map(|(_, &v)| v).collect()
            };
            close(&format!("{what}: padded keys changed"), &unpadded_rows(&moved), &unpadded_rows(&context), 1e-4)?;
            if causal && t > 1 {
                let p = (seed % t as u64) as usize;
                let (later, _) = run(qkv.clone().map(|values| changed(&values, &|_, position| position >= p)), false)?;
                let before = |values: &[f32]| -> Vec<f32> {
                    values.iter().enumerate().filter(|(i, _)| i / width % t < p).map(|(_, &v)| v).collect()
                };
                close(&format!("{what}: positions from {p} on changed"), &before(&later), &before(&context), 1e-4)?;
            }
            if let Some(weights) = weights {
                prop_assert_eq!(weights.len(), b * h * t * t);
                let hidden = |row: usize, key: usize| {
                    padded(row / (h * t), key) || (causal && key > row % t)
                };
                match variant {
                    Variant::Shaw | Variant::T5 => check_rows(&what, &weights, t, false, hidden)?,
                    _ => {
                        for (i, &w) in weights.iter().enumerate() {
                            let (row, key) = (i / t, i % t);
                            prop_assert!(w.is_finite(), "{what}: weight {i}: {w}");
                            if hidden(row, key) {
                                prop_assert!(w == 0.0, "{what}: row {row}: hidden key {key} has weight {w}");
                            }
                            if matches!(variant, Variant::Sigmoid) {
                                prop_assert!((0.0..=1.0).contains(&w), "{what}: weight {i}: {w}");
                            }
                        }
                    }
                }
            }
        }
    }
}
