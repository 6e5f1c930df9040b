//! Decoding: batched greedy search, and beam search with the GNMT length penalty
//! (Wu et al. 2016): `score(Y) = log P(Y|X) / lp(Y)`, `lp(Y) = (5 + |Y|)^α / 6^α`.
//!
//! A hypothesis ends at `<eos>` or after `⌈ratio · |X|⌉ + 5` tokens (at most `max_len`).

use attnzoo_models::seq2seq::Seq2Seq;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::batch::padded;
use super::vocab::{BOS_ID, EOS_ID, PAD_ID, UNK_ID};
use crate::CliError;

/// Beam search settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BeamConfig {
    /// Hypotheses kept per step.
    pub beam: usize,
    /// GNMT length-penalty α (0 = none).
    pub alpha: f64,
    /// Longest output as a multiple of the source length (plus 5).
    pub max_len_ratio: f64,
    /// Finished hypotheses returned, best first.
    pub n_best: usize,
}

impl Default for BeamConfig {
    fn default() -> Self {
        Self {
            beam: 5,
            alpha: 0.6,
            max_len_ratio: 2.0,
            n_best: 1,
        }
    }
}

/// A finished translation.
#[derive(Clone, Debug, PartialEq)]
pub struct Hypothesis {
    /// Target ids, without `<bos>`/`<eos>`.
    pub ids: Vec<usize>,
    /// `log P(Y|X)`.
    pub log_prob: f64,
    /// `log P(Y|X) / lp(Y)`.
    pub score: f64,
}

/// Attention maps of one greedy translation: `[layer][head][target step][source position]`.
pub type AttentionMaps = Vec<Vec<Vec<Vec<f32>>>>;

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

fn step_limit(source_len: usize, ratio: f64, max_len: usize) -> usize {
    ((ratio * source_len as f64).ceil() as usize + 5).min(max_len.max(1))
}

fn ids_tensor(ids: &[usize], device: &Device) -> Tensor<1, Int> {
    let ids: Vec<i64> = ids.iter().map(|&id| id as i64).collect();
    let len = ids.len();
    Tensor::from_data(TensorData::new(ids, [len]), device)
}

fn to_vec_f32<const D: usize>(tensor: Tensor<D>) -> Result<Vec<f32>, CliError> {
    tensor
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .map_err(|error| CliError::Input(format!("reading a tensor: {error:?}")))
}

/// Each decoding step's attention maps, one `[B, heads, S]` tensor per layer.
type StepWeights = Vec<Vec<Tensor<3>>>;

/// Greedy decoding of `rows` at once; with `need_weights`, each step's attention maps.
fn greedy_rows(
    model: &Seq2Seq,
    rows: &[Vec<usize>],
    max_len: usize,
    need_weights: bool,
    device: &Device,
) -> Result<(Vec<Vec<usize>>, StepWeights), CliError> {
    let (source, padding) = padded(rows, device);
    let mut state = model.encode(source, padding)?;
    let banned = never_produced(model, device);
    let limit = rows
        .iter()
        .map(|row| step_limit(row.len(), 2.0, max_len))
        .max()
        .unwrap_or(1);
    let mut outputs = vec![Vec::new(); rows.len()];
    let mut finished = vec![false; rows.len()];
    let mut tokens = ids_tensor(&vec![BOS_ID; rows.len()], device);
    let mut weights = Vec::new();
    for _ in 0..limit {
        let step = model.step(&mut state, tokens, need_weights)?;
        if need_weights {
            weights.push(step.weights);
        }
        let next: Vec<i64> = (step.logits + banned.clone())
            .argmax(1)
            .into_data()
            .convert::<i64>()
            .try_to_vec::<i64>()
            .map_err(|error| CliError::Input(format!("reading tokens: {error:?}")))?;
        for (row, &token) in next.iter().enumerate() {
            if !finished[row] {
                if token as usize == EOS_ID
                    || outputs[row].len() >= step_limit(rows[row].len(), 2.0, max_len)
                {
                    finished[row] = true;
                } else {
                    outputs[row].push(token as usize);
                }
            }
        }
        if finished.iter().all(|&done| done) {
            break;
        }
        tokens = Tensor::from_data(TensorData::new(next, [rows.len()]), device);
    }
    Ok((outputs, weights))
}

/// Greedy translations of every source, in batches of 64.
pub fn greedy(
    model: &Seq2Seq,
    sources: &[Vec<usize>],
    max_len: usize,
    device: &Device,
) -> Result<Vec<Vec<usize>>, CliError> {
    let mut outputs = Vec::with_capacity(sources.len());
    for chunk in sources.chunks(64) {
        outputs.extend(greedy_rows(model, chunk, max_len, false, device)?.0);
    }
    Ok(outputs)
}

/// The greedy translation of one source and the attention behind each output token
/// (the `<eos>` step included).
pub fn attend(
    model: &Seq2Seq,
    source: &[usize],
    max_len: usize,
    device: &Device,
) -> Result<(Vec<usize>, AttentionMaps), CliError> {
    let (mut outputs, steps) = greedy_rows(model, &[source.to_vec()], max_len, true, device)?;
    let ids = outputs.remove(0);
    let layers = steps.first().map_or(0, Vec::len);
    let mut maps: AttentionMaps = Vec::with_capacity(layers);
    for layer in 0..layers {
        let heads = steps[0][layer].dims()[1];
        let mut per_head = vec![Vec::new(); heads];
        for step in steps.iter().take(ids.len() + 1) {
            let values = to_vec_f32(step[layer].clone())?;
            for (head, row) in values.chunks(source.len().max(1)).enumerate() {
                per_head[head].push(row.to_vec());
            }
        }
        maps.push(per_head);
    }
    Ok((ids, maps))
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
    fn advance(
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
        let keep = (2 * config.beam).min(candidates.len());
        candidates.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0));
        candidates.truncate(keep);
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut next: Vec<(Vec<usize>, f64)> = Vec::with_capacity(config.beam);
        let mut parents = Vec::with_capacity(config.beam);
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
            } else if next.len() < config.beam {
                next.push((ids.iter().copied().chain([token]).collect(), log_prob));
                parents.push(parent);
            }
            if next.len() == config.beam && self.finished.len() >= config.n_best {
                break;
            }
        }
        let best_alive = next
            .iter()
            .map(|(ids, lp)| lp / penalty(ids.len() + 1))
            .fold(f64::NEG_INFINITY, f64::max);
        self.finished.sort_by(|a, b| b.score.total_cmp(&a.score));
        let settled = self.finished.len() >= config.beam
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
/// hypotheses as rows): for each source, the `n_best` finished hypotheses, best first.
pub fn beam_search(
    model: &Seq2Seq,
    sources: &[Vec<usize>],
    config: BeamConfig,
    max_len: usize,
    device: &Device,
) -> Result<Vec<Vec<Hypothesis>>, CliError> {
    if config.beam == 0 || config.n_best == 0 || config.n_best > config.beam {
        return Err(CliError::Input(format!(
            "beam size {} and n-best {} must satisfy 1 ≤ n-best ≤ beam",
            config.beam, config.n_best
        )));
    }
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let (source_tensor, padding) = padded(sources, device);
    let mut state = model.encode(source_tensor, padding)?;
    let banned = never_produced(model, device);
    let mut beams: Vec<Beam> = sources
        .iter()
        .map(|source| Beam::new(step_limit(source.len(), config.max_len_ratio, max_len)))
        .collect();
    for t in 0.. {
        let last: Vec<usize> = beams
            .iter()
            .filter(|beam| !beam.done)
            .flat_map(|beam| &beam.alive)
            .map(|(ids, _)| ids.last().copied().unwrap_or(BOS_ID))
            .collect();
        let step = model.step(&mut state, ids_tensor(&last, device), false)?;
        let vocab = step.logits.dims()[1];
        let log_probs = to_vec_f32(log_softmax(step.logits + banned.clone(), 1))?;
        let (mut row, mut parents) = (0, Vec::new());
        for beam in beams.iter_mut().filter(|beam| !beam.done) {
            let rows = beam.alive.len();
            let kept = beam.advance(
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
        state.select(ids_tensor(&parents, device));
    }
    Ok(beams.into_iter().map(|beam| beam.finished).collect())
}

/// The best beam-search translation of each source, 16 sources at a time.
pub fn beam(
    model: &Seq2Seq,
    sources: &[Vec<usize>],
    config: BeamConfig,
    max_len: usize,
    device: &Device,
) -> Result<Vec<Vec<usize>>, CliError> {
    let mut outputs = Vec::with_capacity(sources.len());
    for chunk in sources.chunks(16) {
        let hypotheses = beam_search(model, chunk, config, max_len, device)?;
        outputs.extend(hypotheses.into_iter().map(|best| {
            best.into_iter()
                .next()
                .map(|hypothesis| hypothesis.ids)
                .unwrap_or_default()
        }));
    }
    Ok(outputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use attnzoo_models::seq2seq::{RnnSeq2SeqConfig, Seq2SeqConfig, TransformerSeq2SeqConfig};

    #[test]
    fn a_batch_of_beams_finds_what_each_beam_finds_alone() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        device.seed(7);
        let models = [
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
                    .with_decoder_layers(1),
            ),
        ];
        let sources = vec![vec![4, 5, 6, 7, 8, 9], vec![10, 11], vec![12, 13, 14, 15]];
        let config = BeamConfig {
            beam: 3,
            n_best: 2,
            alpha: 0.6,
            max_len_ratio: 1.0,
        };
        for model in models {
            let model = model.try_init(&device).unwrap();
            let together = beam_search(&model, &sources, config, 50, &device).unwrap();
            assert_eq!(together.len(), sources.len());
            for (source, together) in sources.iter().zip(together) {
                let alone =
                    beam_search(&model, std::slice::from_ref(source), config, 50, &device).unwrap();
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
}
