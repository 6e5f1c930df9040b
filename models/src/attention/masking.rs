//! Masked softmax and the positional key patterns: causal (Vaswani et al. 2017), sliding window
//! (local attention, as in Longformer, Beltagy et al. 2020) and strided sparse (Child et al. 2019,
//! "Generating Long Sequences with Sparse Transformers").
//!
//! A mask is `true` where a key may not be attended. The softmax over keys is
//!
//! `w_ij = exp(s_ij) / Σ_{k unmasked} exp(s_ik)` for unmasked `j`, `w_ij = 0` for masked `j`,
//!
//! and a row whose keys are all masked is all zeros (not NaN, not a uniform average).

use std::ops::Range;

use burn::config::Config;
use burn::tensor::{activation::softmax, Bool, Device, Tensor, TensorData};

use crate::error::ensure;
use crate::AttnError;

/// The score given to masked keys before the softmax: low enough that `exp` underflows to
/// exactly zero next to any real score, yet finite so an all-masked row stays NaN-free.
pub(crate) const MASKED_SCORE: f32 = -1.0e30;

/// Softmax over the last dimension of `scores`, `[.., q_len, k_len]`, excluding the keys
/// where `mask` (same shape, or broadcastable to it) is `true`.
pub fn masked_softmax<const D: usize>(
    scores: Tensor<D>,
    mask: Option<Tensor<D, Bool>>,
) -> Tensor<D> {
    match mask {
        None => softmax(scores, D - 1),
        Some(mask) => {
            let mask = mask.expand(scores.shape());
            softmax(scores.mask_fill(mask.clone(), MASKED_SCORE), D - 1).mask_fill(mask, 0.0)
        }
    }
}

/// [`masked_softmax`] with one more logit per row that takes part in the normalisation but has
/// no value: `w_ij = exp(s_ij) / (exp(sink) + Σ_{k unmasked} exp(s_ik))`. The weights of a row
/// sum to less than one (the rest "attends to nothing"); an all-masked row is zero. gpt-oss's
/// learned per-head sinks (`GptOssAttention.sinks`); `sink` broadcasts to `[.., q_len, 1]`.
pub fn masked_softmax_with_sink<const D: usize>(
    scores: Tensor<D>,
    mask: Option<Tensor<D, Bool>>,
    sink: Tensor<D>,
) -> Tensor<D> {
    let mask = mask.map(|mask| mask.expand(scores.shape()));
    let scores = match &mask {
        Some(mask) => scores.mask_fill(mask.clone(), MASKED_SCORE),
        None => scores,
    };
    let mut row_dims = scores.dims();
    row_dims[D - 1] = 1;
    let sink = sink.expand(row_dims);
    let max = scores.clone().max_dim(D - 1).max_pair(sink.clone());
    let numerators = (scores - max.clone()).exp();
    let numerators = match mask {
        Some(mask) => numerators.mask_fill(mask, 0.0),
        None => numerators,
    };
    let denominator = numerators.clone().sum_dim(D - 1) + (sink - max).exp();
    numerators / denominator
}

/// Which keys a query may see, from positions alone. Query row `r` of a call sits at
/// absolute position `i = query_offset + r` (the offset is the number of cached keys when
/// decoding incrementally); key column `j` is at position `j`.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum KeyPattern {
    /// Every key.
    Full,
    /// `j ≤ i`: never the future.
    Causal,
    /// Local attention: `|i − j| ≤ window`, and `j ≤ i` too when `causal`.
    Window {
        /// Keys farther than this from the query are masked; at least 1.
        window: usize,
        /// Also mask the future.
        causal: bool,
    },
    /// Attention sinks with a sliding window (StreamingLLM, Xiao et al. 2023): `j ≤ i` and either
    /// `j` is one of the first `sinks` positions or `i − j ≤ window`.
    Sinks {
        /// The first positions every query keeps seeing; at least 1.
        sinks: usize,
        /// Keys farther back than this (and not sinks) are masked; at least 1.
        window: usize,
    },
    /// The "fixed" sparse pattern of Child et al. 2019: `j` in the same block of `stride`
    /// positions as `i` (`⌊j/l⌋ = ⌊i/l⌋`), or `j` one of the last `summary` positions of any
    /// block (`j mod l ≥ l − c`); and `j ≤ i` when `causal`.
    Strided {
        /// The block length `l`.
        stride: usize,
        /// The `c` summary positions at the end of each block, `1 ≤ c ≤ l`.
        summary: usize,
        /// Also mask the future.
        causal: bool,
    },
}

impl KeyPattern {
    /// Checks the pattern's numbers, naming a bad one.
    pub fn validate(&self) -> Result<(), AttnError> {
        match *self {
            KeyPattern::Full | KeyPattern::Causal => {}
            KeyPattern::Window { window, .. } => {
                ensure!(
                    window >= 1,
                    "local attention window must be at least 1, got {window}"
                );
            }
            KeyPattern::Sinks { sinks, window } => {
                ensure!(
                    sinks >= 1,
                    "attention sinks must be at least 1, got {sinks}"
                );
                ensure!(
                    window >= 1,
                    "sliding window must be at least 1, got {window}"
                );
            }
            KeyPattern::Strided {
                stride, summary, ..
            } => {
                ensure!(
                    stride >= 1,
                    "strided attention stride must be at least 1, got {stride}"
                );
                ensure!(
                    (1..=stride).contains(&summary),
                    "strided attention summary must be in 1..={stride} (the stride), got {summary}"
                );
            }
        }
        Ok(())
    }

    /// Whether query position `i` may see key position `j`.
    pub fn allows(&self, i: usize, j: usize) -> bool {
        match *self {
            KeyPattern::Full => true,
            KeyPattern::Causal => j <= i,
            KeyPattern::Window { window, causal } => i.abs_diff(j) <= window && (!causal || j <= i),
            KeyPattern::Sinks { sinks, window } => j <= i && (j < sinks || i - j <= window),
            KeyPattern::Strided {
                stride,
                summary,
                causal,
            } => {
                let same_block = i / stride == j / stride;
                let is_summary = j % stride >= stride - summary;
                (same_block || is_summary) && (!causal || j <= i)
            }
        }
    }

    /// Whether no query in `queries` may see any key in `keys` (a block that can be skipped).
    pub fn blocks(&self, queries: Range<usize>, keys: Range<usize>) -> bool {
        if queries.is_empty() || keys.is_empty() {
            return true;
        }
        let (first_query, last_query) = (queries.start, queries.end - 1);
        let (first_key, last_key) = (keys.start, keys.end - 1);
        match *self {
            KeyPattern::Full => false,
            KeyPattern::Causal => first_key > last_query,
            KeyPattern::Window { window, causal } => {
                let too_far_ahead = first_key > last_query + window;
                let too_far_behind = last_key + window < first_query;
                too_far_ahead || too_far_behind || (causal && first_key > last_query)
            }
            KeyPattern::Sinks { sinks, window } => {
                first_key > last_query || (first_key >= sinks && last_key + window < first_query)
            }
            KeyPattern::Strided { causal, .. } => causal && first_key > last_query,
        }
    }

    /// Whether every query in `queries` may see every key in `keys` (strided: never promised).
    fn sees_all(&self, queries: Range<usize>, keys: Range<usize>) -> bool {
        if queries.is_empty() || keys.is_empty() {
            return true;
        }
        let (first_query, last_query) = (queries.start, queries.end - 1);
        let (first_key, last_key) = (keys.start, keys.end - 1);
        let all_past = last_key <= first_query;
        match *self {
            KeyPattern::Full => true,
            KeyPattern::Causal => all_past,
            KeyPattern::Window { window, causal } => {
                last_query <= first_key + window
                    && last_key <= first_query + window
                    && (!causal || all_past)
            }
            KeyPattern::Sinks { sinks, window } => {
                all_past && (last_key < sinks || last_query <= first_key.max(sinks) + window)
            }
            KeyPattern::Strided { .. } => false,
        }
    }

    /// The positions a query at `next` or later may still see, out of `0..next`: what a KV cache
    /// must keep, as the first `sinks` positions and a recent range (either may be empty).
    /// `None` means all of them (no pattern that bounds a cache).
    pub fn retained(&self, next: usize) -> Option<[Range<usize>; 2]> {
        let recent = |window: usize| next.saturating_sub(window)..next;
        match *self {
            KeyPattern::Window {
                window,
                causal: true,
            } => Some([0..0, recent(window)]),
            KeyPattern::Sinks { sinks, window } => Some([0..sinks.min(next), recent(window)]),
            _ => None,
        }
    }

    /// The mask (`true` = may not attend) for a block of query and key positions,
    /// `[queries.len(), keys.len()]`, or `None` when the pattern masks nothing there.
    pub fn mask(
        &self,
        queries: Range<usize>,
        keys: Range<usize>,
        device: &Device,
    ) -> Option<Tensor<2, Bool>> {
        if self.sees_all(queries.clone(), keys.clone()) {
            // Nothing to mask: no `[q, k]` host mask is built (O(T²) time and memory for a long
            // unmasked attention, one row per step when decoding after the cached keys).
            return None;
        }
        self.mask_at(queries, &keys.collect::<Vec<_>>(), device)
    }

    /// The mask for queries at `queries` over keys at arbitrary `keys` positions (a cache that
    /// dropped some), `[queries.len(), keys.len()]`, or `None` when nothing is masked.
    pub fn mask_at(
        &self,
        queries: Range<usize>,
        keys: &[usize],
        device: &Device,
    ) -> Option<Tensor<2, Bool>> {
        let shape = [queries.len(), keys.len()];
        let masked: Vec<bool> = queries
            .flat_map(|i| keys.iter().map(move |&j| !self.allows(i, j)))
            .collect();
        masked
            .iter()
            .any(|&m| m)
            .then(|| Tensor::from_data(TensorData::new(masked, shape), device))
    }
}

/// Combines two optional masks with "or" (a key masked by either stays masked).
pub(crate) fn either<const D: usize>(
    a: Option<Tensor<D, Bool>>,
    b: Option<Tensor<D, Bool>>,
) -> Option<Tensor<D, Bool>> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let shape = broadcast_shape(&a.dims(), &b.dims());
            Some(a.expand(shape).bool_or(b.expand(shape)))
        }
        (a, b) => a.or(b),
    }
}

/// The shape two broadcast-compatible shapes broadcast to.
pub(crate) fn broadcast_shape<const D: usize>(a: &[usize; D], b: &[usize; D]) -> [usize; D] {
    std::array::from_fn(|axis| a[axis].max(b[axis]))
}

/// Lifts a `[rows, cols]` tensor to `D` dimensions as `[1, .., 1, rows, cols]`.
pub(crate) fn lift<const D: usize, K: burn::tensor::kind::Basic>(
    tensor: Tensor<2, K>,
) -> Tensor<D, K> {
    let [rows, cols] = tensor.dims();
    let mut dims = [1; D];
    dims[D - 2] = rows;
    dims[D - 1] = cols;
    tensor.reshape(dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `blocks` must never skip a block holding an allowed pair; for the full, causal and window
    /// patterns it skips every block that holds none (strided keeps its summary columns, so only
    /// the causal cut is used there).
    #[test]
    fn blocks_is_sound_and_exact_where_promised() {
        let patterns = [
            KeyPattern::Full,
            KeyPattern::Causal,
            KeyPattern::Window {
                window: 2,
                causal: false,
            },
            KeyPattern::Window {
                window: 3,
                causal: true,
            },
            KeyPattern::Sinks {
                sinks: 2,
                window: 2,
            },
            KeyPattern::Strided {
                stride: 4,
                summary: 1,
                causal: true,
            },
            KeyPattern::Strided {
                stride: 3,
                summary: 2,
                causal: false,
            },
        ];
        for pattern in patterns {
            for (q0, q1, k0, k1) in [
                (0, 4, 0, 4),
                (0, 4, 4, 8),
                (8, 12, 0, 4),
                (4, 8, 6, 9),
                (10, 13, 0, 3),
            ] {
                let any_allowed = (q0..q1).any(|i| (k0..k1).any(|j| pattern.allows(i, j)));
                let skipped = pattern.blocks(q0..q1, k0..k1);
                assert!(
                    !(skipped && any_allowed),
                    "{pattern:?} skips {q0}..{q1} x {k0}..{k1}"
                );
                if !matches!(pattern, KeyPattern::Strided { .. }) {
                    assert_eq!(skipped, !any_allowed, "{pattern:?} {q0}..{q1} x {k0}..{k1}");
                }
            }
        }
    }

    /// `sees_all` must never promise a block holding a masked pair; for every pattern but
    /// strided it promises every block that holds none.
    #[test]
    fn sees_all_is_sound_and_exact_where_promised() {
        let patterns = [
            KeyPattern::Full,
            KeyPattern::Causal,
            KeyPattern::Window {
                window: 3,
                causal: false,
            },
            KeyPattern::Window {
                window: 5,
                causal: true,
            },
            KeyPattern::Sinks {
                sinks: 1,
                window: 2,
            },
            KeyPattern::Strided {
                stride: 4,
                summary: 1,
                causal: false,
            },
        ];
        for pattern in patterns {
            for (q0, q1, k0, k1) in [
                (0, 4, 0, 4),
                (4, 6, 0, 4),
                (8, 9, 0, 9),
                (3, 5, 1, 4),
                (0, 2, 4, 6),
            ] {
                let all_allowed = (q0..q1).all(|i| (k0..k1).all(|j| pattern.allows(i, j)));
                let promised = pattern.sees_all(q0..q1, k0..k1);
                assert!(
                    !promised || all_allowed,
                    "{pattern:?} promises {q0}..{q1} x {k0}..{k1}"
                );
                if !matches!(pattern, KeyPattern::Strided { .. }) {
                    assert_eq!(promised, all_allowed, "{pattern:?} {q0}..{q1} x {k0}..{k1}");
                }
            }
        }
    }

    #[test]
    fn bad_patterns_name_the_value() {
        let error = KeyPattern::Window {
            window: 0,
            causal: false,
        }
        .validate()
        .unwrap_err();
        assert!(
            error.0.contains("window") && error.0.contains('0'),
            "{error}"
        );
        let error = KeyPattern::Strided {
            stride: 4,
            summary: 5,
            causal: true,
        }
        .validate()
        .unwrap_err();
        assert!(
            error.0.contains("summary") && error.0.contains('5'),
            "{error}"
        );
    }
}
