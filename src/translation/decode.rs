//! Decoding, configured by one [`DecodeConfig`] and done by one function, [`decode`]: batched
//! greedy search, or beam search with the GNMT length penalty (Wu et al. 2016, "Google's Neural
//! Machine Translation System"): `score(Y) = log P(Y|X) / lp(Y)`, `lp(Y) = (5 + |Y|)^α / 6^α`.
//!
//! The one length rule: a translation of `|X|` source tokens ends at `<eos>` or after
//! `⌈ratio · |X|⌉ + 5` tokens, and never after the model's own limit (a Transformer's position
//! table). The one repetition rule, both searches: no n-gram of target tokens occurs twice
//! (n = [`DecodeConfig::no_repeat_ngram`]; fairseq's `--no-repeat-ngram-size`). And a copy slot
//! (`translation::copy`) stands for one word of the source: a translation has each slot at most as
//! often as its source, so a name or number is neither invented nor said twice.

use std::ops::Range;

use attnzoo_models::seq2seq::Seq2Seq;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Element, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::vocab::{BOS_ID, EOS_ID, PAD_ID, UNK_ID};
use crate::error::{Error, Result};
use crate::padding::padded;
use crate::parallel;
use crate::validate;

/// The length-penalty α of beam search by default: the lexically biased models stop early, and
/// 1.5 beat 1.0 on BLEU and chrF2 on the validation split for each of three 10-minute demo models
/// (before the lexicon, 1.0 beat GNMT's 0.6; docs/MEASUREMENTS.md).
pub const DEFAULT_ALPHA: f64 = 1.5;

/// How the next tokens are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Search {
    /// The most likely token at each step, for a whole batch at once.
    Greedy,
    /// Beam search.
    Beam {
        /// Hypotheses kept per step, 1 to [`validate::MAX_BEAM`].
        size: usize,
        /// GNMT length-penalty α (0 = none; negative favours short translations).
        alpha: f64,
        /// Finished hypotheses returned per source, best first (1 to `size`).
        n_best: usize,
    },
}

impl Search {
    /// Greedy search for a beam of 1, else beam search of `size` with length-penalty `alpha`
    /// returning the best hypothesis: what `--beam N` means.
    pub fn of_beam(size: usize, alpha: f64) -> Self {
        match size {
            1 => Search::Greedy,
            size => Search::Beam {
                size,
                alpha,
                n_best: 1,
            },
        }
    }
}

/// How to decode: the search and the length rule. Translation, evaluation, the demo and
/// validation during training all take one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecodeConfig {
    /// Greedy or beam search.
    pub search: Search,
    /// Longest translation as a multiple of the source length (plus 5).
    pub max_len_ratio: f64,
    /// No n-gram of this many target tokens is produced twice (0: no such rule).
    pub no_repeat_ngram: usize,
}

impl Default for DecodeConfig {
    /// Greedy search, translations up to twice the source length plus 5, repeats allowed (the
    /// rule did not raise BLEU on the validation split: docs/MEASUREMENTS.md).
    fn default() -> Self {
        Self {
            search: Search::Greedy,
            max_len_ratio: 2.0,
            no_repeat_ngram: 0,
        }
    }
}

impl DecodeConfig {
    /// Beam search of `size` hypotheses with α = [`DEFAULT_ALPHA`], the best one returned.
    pub fn beam(size: usize) -> Self {
        Self {
            search: Search::Beam {
                size,
                alpha: DEFAULT_ALPHA,
                n_best: 1,
            },
            ..Self::default()
        }
    }

    /// Checks every number: a ratio in (0, [`validate::MAX_LENGTH_RATIO`]], a beam of 1 to
    /// [`validate::MAX_BEAM`], |α| ≤ [`validate::MAX_ALPHA`], 1 ≤ n-best ≤ beam, an n-gram of at
    /// most [`validate::MAX_NGRAM`].
    pub fn validate(&self) -> Result<()> {
        let check = || -> Result<(), String> {
            validate::field("max_len_ratio", self.max_len_ratio, validate::length_ratio)?;
            validate::field("no_repeat_ngram", self.no_repeat_ngram, validate::ngram)?;
            if let Search::Beam {
                size,
                alpha,
                n_best,
            } = self.search
            {
                validate::field("beam size", size, validate::beam_size)?;
                validate::field("alpha", alpha, validate::alpha)?;
                if !(1..=size).contains(&n_best) {
                    return Err(format!(
                        "n_best: {n_best} is not in 1–{size} (the beam size)"
                    ));
                }
            }
            Ok(())
        };
        check().map_err(Error::Input)
    }

    /// The most tokens a translation of a `source_len`-token source may have:
    /// `⌈ratio · |X|⌉ + 5`, at most `model_limit` (and at least 1).
    pub fn output_limit(&self, source_len: usize, model_limit: usize) -> usize {
        let by_ratio = (self.max_len_ratio * source_len as f64).ceil() + 5.0;
        (by_ratio.min(model_limit as f64) as usize).max(1)
    }
}

/// A finished translation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hypothesis {
    /// Target ids, without `<bos>`/`<eos>`.
    pub ids: Vec<usize>,
    /// `log P(Y|X)`.
    pub log_prob: f64,
    /// `log P(Y|X) / lp(Y)`.
    pub score: f64,
}

/// Added to the logits while decoding: `<pad>`, `<bos>` and `<unk>` are never produced, so an
/// unknown source word is translated by the nearest word the model knows, not by `<unk>`.
fn never_produced(model: &Seq2Seq, device: &Device) -> Tensor<2> {
    let vocab = model.target_vocab();
    let mut bias = vec![0.0f32; vocab];
    for id in [PAD_ID, BOS_ID, UNK_ID] {
        bias[id] = -1e9;
    }
    Tensor::<1>::from_data(TensorData::new(bias, [vocab]), device).unsqueeze()
}

/// The tokens that would make `ids` repeat an `n`-gram: each token that followed an earlier
/// occurrence of its last `n − 1` tokens (for `n` = 1, every token in it; for 0, none).
fn repeating(ids: &[usize], n: usize) -> Vec<usize> {
    if n == 0 || ids.len() < n {
        return Vec::new();
    }
    let tail = &ids[ids.len() + 1 - n..];
    ids.windows(n)
        .filter(|gram| gram[..n - 1] == *tail)
        .map(|gram| gram[n - 1])
        .collect()
}

/// The copy slots `ids` may not have more of: each slot among `slots` that it holds as often as
/// `source` does.
fn spent_slots<'a>(
    ids: &'a [usize],
    source: &'a [usize],
    slots: &Range<usize>,
) -> impl Iterator<Item = usize> + 'a {
    let count = |tokens: &[usize], slot: usize| tokens.iter().filter(|&&id| id == slot).count();
    slots
        .clone()
        .filter(move |&slot| count(ids, slot) >= count(source, slot))
}

/// Added to `logits` (one row per hypothesis: its prefix and its source): −10⁹ on each token that
/// would repeat an `n`-gram of the prefix, and on each copy slot among `slots` that the prefix
/// holds as often as the source.
fn without_repeats<'a>(
    logits: Tensor<2>,
    rows: impl Iterator<Item = (&'a [usize], &'a [usize])>,
    n: usize,
    slots: &Range<usize>,
) -> Tensor<2> {
    if n == 0 && slots.is_empty() {
        return logits;
    }
    let [rows_count, vocab] = logits.dims();
    let banned: Vec<usize> = rows
        .enumerate()
        .flat_map(|(row, (prefix, source))| {
            repeating(prefix, n)
                .into_iter()
                .chain(spent_slots(prefix, source, slots))
                .map(move |token| row * vocab + token)
        })
        .collect();
    if banned.is_empty() {
        return logits;
    }
    let mut bias = vec![0.0f32; rows_count * vocab];
    for index in banned {
        bias[index] = -1e9;
    }
    let device = logits.device();
    logits + Tensor::from_data(TensorData::new(bias, [rows_count, vocab]), &device)
}

fn ids_tensor(ids: &[usize], device: &Device) -> Tensor<1, Int> {
    let ids: Vec<i64> = ids.iter().map(|&id| id as i64).collect();
    let len = ids.len();
    Tensor::from_data(TensorData::new(ids, [len]), device)
}

/// A tensor's values as `T`.
fn values<T: Element>(data: TensorData) -> Result<Vec<T>> {
    data.convert::<T>()
        .try_to_vec::<T>()
        .map_err(|error| Error::Input(format!("reading a tensor: {error:?}")))
}

/// Greedy decoding of `rows` at once, row `r` stopping after `limits[r]` tokens, no `no_repeat`-gram
/// twice, no copy slot more often than in its source.
fn greedy_rows(
    model: &Seq2Seq,
    rows: &[Vec<usize>],
    limits: &[usize],
    no_repeat: usize,
    slots: &Range<usize>,
    device: &Device,
) -> Result<Vec<Hypothesis>> {
    let (source, padding) = padded(rows, PAD_ID, device);
    let mut decoder = model.encode(source, padding)?;
    let banned = never_produced(model, device);
    let mut outputs: Vec<Hypothesis> = vec![Hypothesis::default(); rows.len()];
    let mut finished = vec![false; rows.len()];
    let mut tokens = ids_tensor(&vec![BOS_ID; rows.len()], device);
    for _ in 0..limits.iter().copied().max().unwrap_or(0) {
        let logits = without_repeats(
            decoder.step(tokens)? + banned.clone(),
            outputs
                .iter()
                .zip(rows)
                .map(|(output, source)| (output.ids.as_slice(), source.as_slice())),
            no_repeat,
            slots,
        );
        let (best, next) = log_softmax(logits, 1).max_dim_with_indices(1);
        let (best, next) = (
            values::<f32>(best.into_data())?,
            values::<i64>(next.into_data())?,
        );
        for (row, (&token, &log_prob)) in next.iter().zip(&best).enumerate() {
            let output = &mut outputs[row];
            if finished[row] {
                continue;
            }
            output.log_prob += f64::from(log_prob);
            if token as usize == EOS_ID {
                finished[row] = true;
            } else {
                output.ids.push(token as usize);
                finished[row] = output.ids.len() >= limits[row];
            }
        }
        if finished.iter().all(|&done| done) {
            break;
        }
        tokens = Tensor::from_data(TensorData::new(next, [rows.len()]), device);
    }
    for output in &mut outputs {
        output.score = output.log_prob;
    }
    Ok(outputs)
}

/// Translations (as target ids) of every source: for each, the `n_best` best hypotheses, best
/// first (greedy search: its one). A source of `|X|` tokens gets at most
/// [`DecodeConfig::output_limit`]`(|X|, model_limit)` tokens; `slots` are the copy slots' ids
/// (`Vocab::slots`, the same in source and target; empty without them). Greedy search runs 64
/// sources at a time, beam search 16, the groups at once where `parallel` says so.
pub fn decode(
    model: &Seq2Seq,
    sources: &[Vec<usize>],
    config: &DecodeConfig,
    model_limit: usize,
    slots: Range<usize>,
    device: &Device,
) -> Result<Vec<Vec<Hypothesis>>> {
    config.validate()?;
    let limits = |chunk: &[Vec<usize>]| -> Vec<usize> {
        chunk
            .iter()
            .map(|source| config.output_limit(source.len(), model_limit))
            .collect()
    };
    let translate = |chunk: &[Vec<usize>]| -> Result<Vec<Vec<Hypothesis>>> {
        match config.search {
            Search::Greedy => {
                let no_repeat = config.no_repeat_ngram;
                let best = greedy_rows(model, chunk, &limits(chunk), no_repeat, &slots, device)?;
                Ok(best
                    .into_iter()
                    .map(|hypothesis| vec![hypothesis])
                    .collect())
            }
            Search::Beam {
                size,
                alpha,
                n_best,
            } => {
                let beam = BeamConfig {
                    size,
                    alpha,
                    n_best,
                    no_repeat: config.no_repeat_ngram,
                };
                beam_search(model, chunk, &limits(chunk), beam, &slots, device)
            }
        }
    };
    let chunk_size = match config.search {
        Search::Greedy => 64,
        Search::Beam { .. } => 16,
    };
    let chunks: Vec<&[Vec<usize>]> = sources.chunks(chunk_size).collect();
    let outputs = parallel::map_in_order(device, chunks, translate)?;
    Ok(outputs.into_iter().flatten().collect())
}

/// The best hypothesis' ids of each source's n-best list (empty where there is none).
pub fn best(n_best: Vec<Vec<Hypothesis>>) -> Vec<Vec<usize>> {
    n_best
        .into_iter()
        .map(|hypotheses| {
            hypotheses
                .into_iter()
                .next()
                .map(|hypothesis| hypothesis.ids)
                .unwrap_or_default()
        })
        .collect()
}

/// Beam search's numbers.
#[derive(Clone, Copy, Debug)]
struct BeamConfig {
    size: usize,
    alpha: f64,
    n_best: usize,
    no_repeat: usize,
}

/// One source's beam: the hypotheses still growing and those that ended.
struct Beam {
    alive: Vec<(Vec<usize>, f64)>,
    finished: Vec<Hypothesis>,
    limit: usize,
    done: bool,
}

impl Beam {
    fn new(limit: usize) -> Self {
        Self {
            alive: vec![(Vec::new(), 0.0)],
            finished: Vec::new(),
            limit,
            done: false,
        }
    }

    /// Step `t`: extends the alive hypotheses by their next-token log-probabilities (one row of
    /// `vocab` per alive hypothesis) and returns, for each new alive one, the index of its parent.
    fn extend(
        &mut self,
        log_probs: &[f32],
        vocab: usize,
        t: usize,
        config: BeamConfig,
    ) -> Vec<usize> {
        let penalty = |len: usize| ((5.0 + len as f64) / 6.0).powf(config.alpha);
        let mut candidates: Vec<(f64, usize, usize)> = Vec::with_capacity(self.alive.len() * vocab);
        for (parent, (_, score)) in self.alive.iter().enumerate() {
            for (token, &lp) in log_probs[parent * vocab..(parent + 1) * vocab]
                .iter()
                .enumerate()
            {
                candidates.push((score + lp as f64, parent, token));
            }
        }
        let keep = (2 * config.size).min(candidates.len());
        candidates.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0));
        candidates.truncate(keep);
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut next: Vec<(Vec<usize>, f64)> = Vec::with_capacity(config.size);
        let mut parents = Vec::with_capacity(config.size);
        for (log_prob, parent, token) in candidates {
            let ids = &self.alive[parent].0;
            if token == EOS_ID || t + 1 == self.limit {
                let mut ids = ids.clone();
                if token != EOS_ID {
                    ids.push(token);
                }
                self.finished.push(Hypothesis {
                    score: log_prob / penalty(ids.len() + 1),
                    ids,
                    log_prob,
                });
            } else if next.len() < config.size {
                next.push((ids.iter().copied().chain([token]).collect(), log_prob));
                parents.push(parent);
            }
            if next.len() == config.size && self.finished.len() >= config.n_best {
                break;
            }
        }
        let best_alive = next
            .iter()
            .map(|(ids, lp)| lp / penalty(ids.len() + 1))
            .fold(f64::NEG_INFINITY, f64::max);
        self.finished.sort_by(|a, b| b.score.total_cmp(&a.score));
        let settled = self.finished.len() >= config.size
            || (self.finished.len() >= config.n_best
                && self.finished[config.n_best - 1].score >= best_alive
                && config.alpha == 0.0);
        self.done = next.is_empty() || settled;
        if self.done {
            self.finished.truncate(config.n_best);
            return Vec::new();
        }
        self.alive = next;
        parents
    }
}

/// Beam search for a batch of sources at once (the decoder state holds every source's alive
/// hypotheses as rows), source `r` stopping after `limits[r]` tokens: for each source, the
/// `n_best` finished hypotheses, best first.
fn beam_search(
    model: &Seq2Seq,
    sources: &[Vec<usize>],
    limits: &[usize],
    config: BeamConfig,
    slots: &Range<usize>,
    device: &Device,
) -> Result<Vec<Vec<Hypothesis>>> {
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let (source_tensor, padding) = padded(sources, PAD_ID, device);
    let mut decoder = model.encode(source_tensor, padding)?;
    let banned = never_produced(model, device);
    let mut beams: Vec<Beam> = limits.iter().map(|&limit| Beam::new(limit)).collect();
    for t in 0.. {
        // Each alive hypothesis with its source.
        let alive = || {
            beams
                .iter()
                .zip(sources)
                .filter(|(beam, _)| !beam.done)
                .flat_map(|(beam, source)| {
                    beam.alive
                        .iter()
                        .map(move |(ids, _)| (ids.as_slice(), source.as_slice()))
                })
        };
        let last: Vec<usize> = alive()
            .map(|(ids, _)| ids.last().copied().unwrap_or(BOS_ID))
            .collect();
        let logits = decoder.step(ids_tensor(&last, device))?;
        let vocab = logits.dims()[1];
        let logits = without_repeats(logits + banned.clone(), alive(), config.no_repeat, slots);
        let log_probs = values::<f32>(log_softmax(logits, 1).into_data())?;
        let (mut row, mut parents) = (0, Vec::new());
        for beam in beams.iter_mut().filter(|beam| !beam.done) {
            let rows = beam.alive.len();
            let kept = beam.extend(
                &log_probs[row * vocab..(row + rows) * vocab],
                vocab,
                t,
                config,
            );
            parents.extend(kept.into_iter().map(|parent| row + parent));
            row += rows;
        }
        if parents.is_empty() {
            break;
        }
        decoder.select(ids_tensor(&parents, device));
    }
    Ok(beams.into_iter().map(|beam| beam.finished).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use attnzoo_models::seq2seq::{RnnSeq2SeqConfig, Seq2SeqConfig, TransformerSeq2SeqConfig};

    /// An untrained RNN and Transformer over 30 tokens, the Transformer's table `table` long,
    /// drawn from `seed`.
    fn models(device: &Device, table: usize, seed: u64) -> Vec<Seq2Seq> {
        device.seed(seed);
        vec![
            Seq2SeqConfig::Rnn(
                RnnSeq2SeqConfig::new(30, 30)
                    .with_embedding_dim(16)
                    .with_hidden_dim(16),
            ),
            Seq2SeqConfig::Transformer(
                TransformerSeq2SeqConfig::new(30, 30)
                    .with_d_model(16)
                    .with_d_ff(32)
                    .with_encoder_layers(1)
                    .with_decoder_layers(1)
                    .with_max_len(table),
            ),
        ]
        .into_iter()
        .map(|config| config.try_init(device).unwrap())
        .collect()
    }

    #[test]
    fn a_batch_of_beams_finds_what_each_beam_finds_alone() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let sources = vec![vec![4, 5, 6, 7, 8, 9], vec![10, 11], vec![12, 13, 14, 15]];
        let config = DecodeConfig {
            search: Search::Beam {
                size: 3,
                n_best: 2,
                alpha: 0.6,
            },
            max_len_ratio: 1.0,
            no_repeat_ngram: 0,
        };
        for model in models(&device, 256, 7) {
            let together = decode(&model, &sources, &config, 50, 0..0, &device).unwrap();
            assert_eq!(together.len(), sources.len());
            for (source, together) in sources.iter().zip(together) {
                let alone = decode(
                    &model,
                    std::slice::from_ref(source),
                    &config,
                    50,
                    0..0,
                    &device,
                )
                .unwrap();
                assert_eq!(together.len(), 2, "n-best");
                for (a, b) in together.iter().zip(&alone[0]) {
                    assert_eq!(a.ids, b.ids);
                    assert!((a.log_prob - b.log_prob).abs() < 1e-4, "{a:?} vs {b:?}");
                }
                assert!(together[0].score >= together[1].score, "best first");
                assert!(together[0].ids.len() <= source.len() + 5, "length limit");
            }
        }
    }

    #[test]
    fn greedy_search_honours_the_length_ratio() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let sources = vec![vec![4, 5, 6, 7, 8, 9, 10, 11], vec![12, 13]];
        for model in models(&device, 256, 7) {
            let mut outputs = Vec::new();
            for ratio in [0.5, 3.0] {
                let config = DecodeConfig {
                    max_len_ratio: ratio,
                    ..DecodeConfig::default()
                };
                let decoded = best(decode(&model, &sources, &config, 200, 0..0, &device).unwrap());
                for (source, output) in sources.iter().zip(&decoded) {
                    let limit = config.output_limit(source.len(), 200);
                    assert!(output.len() <= limit, "ratio {ratio}: {output:?}");
                }
                outputs.push(decoded);
            }
            // Greedy search is deterministic: the shorter limit cuts the same translation.
            for (short, long) in outputs[0].iter().zip(&outputs[1]) {
                assert!(long.starts_with(short), "{short:?} {long:?}");
            }
        }
    }

    #[test]
    fn the_output_never_passes_the_transformers_position_table() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let transformer = models(&device, 8, 7).swap_remove(1);
        let sources = vec![vec![4, 5, 6, 7, 8, 9]];
        for config in [
            DecodeConfig::default(),
            DecodeConfig {
                max_len_ratio: 10.0,
                ..DecodeConfig::beam(3)
            },
        ] {
            let outputs = decode(&transformer, &sources, &config, 8, 0..0, &device).unwrap();
            assert!(outputs[0][0].ids.len() <= 8, "{outputs:?}");
        }
    }

    #[test]
    fn repeating_names_the_tokens_that_would_close_a_second_n_gram() {
        let ids = [4, 5, 6, 4, 5, 7, 4];
        assert_eq!(repeating(&ids, 0), Vec::<usize>::new());
        assert_eq!(repeating(&ids, 1), ids.to_vec());
        assert_eq!(repeating(&ids, 2), vec![5, 5]);
        assert_eq!(repeating(&[4, 5, 6, 4, 5], 3), vec![6]);
        assert_eq!(repeating(&[4, 5], 3), Vec::<usize>::new());
    }

    #[test]
    fn a_copy_slot_is_spent_once_produced_as_often_as_its_source_has_it() {
        // Source: slot 4 twice, 5 and 9 once. Prefix: slot 4 twice, 7 once.
        let (source, prefix) = ([4, 9, 4, 5], [4, 7, 4]);
        let spent: Vec<usize> = spent_slots(&prefix, &source, &(4..12)).collect();
        assert_eq!(spent, [4, 6, 7, 8, 10, 11]);
        assert_eq!(spent_slots(&prefix, &source, &(4..4)).count(), 0);
        // As a bias on one row of logits: −10⁹ exactly on the spent slots.
        let device = Default::default();
        let logits = Tensor::<2>::zeros([1, 14], &device);
        let rows = std::iter::once((&prefix[..], &source[..]));
        let biased = values::<f32>(without_repeats(logits, rows, 0, &(4..12)).into_data()).unwrap();
        let banned: Vec<usize> = (0..14).filter(|&id| biased[id] < -1e8).collect();
        assert_eq!(banned, spent);
    }

    /// Whether some `n`-gram occurs twice in `ids`.
    fn repeats(ids: &[usize], n: usize) -> bool {
        let grams: Vec<&[usize]> = ids.windows(n).collect();
        (1..grams.len()).any(|i| grams[..i].contains(&grams[i]))
    }

    #[test]
    fn neither_search_repeats_an_n_gram_when_told_not_to() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let sources: Vec<Vec<usize>> = (4..12).map(|first| vec![first, 5, 5, 5, 5, 5]).collect();
        let beam = Search::Beam {
            size: 2,
            alpha: 2.0,
            n_best: 1,
        };
        for search in [Search::Greedy, beam] {
            let unruled = DecodeConfig {
                search,
                max_len_ratio: 5.0,
                no_repeat_ngram: 0,
            };
            let decoded = |model: &Seq2Seq, config: &DecodeConfig| {
                best(decode(model, &sources, config, 256, 0..0, &device).unwrap())
            };
            for kind in 0..2 {
                // An untrained model that repeats itself without the rule (most seeds do; the
                // backend's one generator is shared with tests running beside this one)...
                let model = (0..50)
                    .map(|seed| models(&device, 256, seed).swap_remove(kind))
                    .find(|model| decoded(model, &unruled).iter().any(|ids| repeats(ids, 2)))
                    .expect("an untrained model that repeats itself");
                for n in [1, 2] {
                    let ruled = DecodeConfig {
                        no_repeat_ngram: n,
                        ..unruled
                    };
                    // ...never does under it.
                    for ids in decoded(&model, &ruled) {
                        assert!(!repeats(&ids, n), "n = {n}, {search:?}: {ids:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn bad_numbers_are_refused_with_their_name() {
        let bad = [
            (f64::NAN, Search::Greedy, "max_len_ratio"),
            (0.0, Search::Greedy, "max_len_ratio"),
            (2.0, DecodeConfig::beam(0).search, "beam size"),
            (2.0, DecodeConfig::beam(100_000).search, "beam size"),
            (
                2.0,
                Search::Beam {
                    size: 2,
                    alpha: f64::NAN,
                    n_best: 1,
                },
                "alpha",
            ),
            (
                2.0,
                Search::Beam {
                    size: 2,
                    alpha: 0.6,
                    n_best: 3,
                },
                "n_best",
            ),
        ];
        for (max_len_ratio, search, name) in bad {
            let config = DecodeConfig {
                search,
                max_len_ratio,
                ..DecodeConfig::default()
            };
            let error = config.validate().unwrap_err().to_string();
            assert!(error.starts_with(name), "{error}");
        }
    }
}
