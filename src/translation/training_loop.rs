//! The training loop: teacher forcing (a configurable ratio for the RNN), cross-entropy with label
//! smoothing that ignores padding, Adam with linear warmup then inverse-square-root decay,
//! gradient-norm clipping, length-bucketed batches, validation loss and greedy BLEU each epoch,
//! a progress bar (indicatif), an atomic checkpoint each epoch, a time budget, a fixed seed.
//!
//! On flex and ndarray, whose kernels mostly run on one thread, each batch is cut into one part
//! per rayon thread, the parts run forward and backward at once on replicas of the model, and
//! their gradients are added (data parallelism, exact: a test compares them with the whole
//! batch's). Dropout masks are then drawn in the order the threads ask for them, so such a run is
//! not repeatable bit for bit.
//!
//! Resuming restores the weights, Adam's moment estimates, the step (so the learning-rate
//! schedule continues), the epoch and the data order.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use attnzoo_models::seq2seq::Seq2Seq;
use burn::grad_clipping::GradientClippingConfig;
use burn::module::{Module, ModuleMapper, Param};
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::{AdamConfig, GradientsAccumulator, GradientsParams};
use burn::tensor::{Device, Tensor};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::batch::{batch, bucketed, Batch, Example, SplitMix};
use super::checkpoint::{Checkpoint, Source};
use super::corpus::Pair;
use super::decode::{best, decode, DecodeConfig};
use super::metrics::corpus_bleu;
use super::train_state::EpochRecord;
use super::vocab::PAD_ID;
use crate::error::{Error, Result};
use crate::{parallel, validate};

/// The training and validation data.
pub struct Data {
    /// Training examples.
    pub train: Vec<Example>,
    /// Word and phrase examples, [`TrainConfig::lexicon_per_epoch`](super::TrainConfig::lexicon_per_epoch) of them mixed into each epoch.
    pub lexicon: Vec<Example>,
    /// Validation examples (loss).
    pub valid: Vec<Example>,
    /// Validation pairs (BLEU).
    pub valid_pairs: Vec<Pair>,
    /// Their German sides as the model reads them (BLEU).
    pub valid_sources: Vec<Source>,
}

impl Data {
    /// The examples of epoch `epoch` (1-based): every training sentence, then the epoch's slice of
    /// the lexicon shuffled once by `seed`.
    fn epoch(&self, epoch: usize, per_epoch: usize, seed: u64) -> Vec<Example> {
        let mut order: Vec<usize> = (0..self.lexicon.len()).collect();
        SplitMix(seed).shuffle(&mut order);
        let take = per_epoch.min(order.len());
        let start = (epoch - 1) * take;
        let lexicon = (start..start + take).map(|i| &self.lexicon[order[i % order.len()]]);
        self.train.iter().chain(lexicon).cloned().collect()
    }
}

/// An epoch's progress on stderr: a bar with an ETA, redrawn in place, on a terminal; a plain
/// line every 10 % otherwise (logs, CI).
struct Progress {
    bar: ProgressBar,
    /// The last tenth printed as a plain line; `None` on a terminal.
    plain_tenth: Option<u64>,
}

impl Progress {
    fn new(total: usize) -> Self {
        let bar =
            ProgressBar::with_draw_target(Some(total.max(1) as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("[{bar:30}] {percent:>3}% {msg} (eta {eta})")
                .expect("a valid template")
                .progress_chars("#>-"),
        );
        let plain_tenth = (!std::io::stderr().is_terminal()).then_some(0);
        Self { bar, plain_tenth }
    }

    fn show(&mut self, done: usize, message: String) {
        let (done, total) = (done as u64, self.bar.length().unwrap_or(1));
        if let Some(last) = &mut self.plain_tenth {
            let tenth = 10 * done / total;
            if tenth > *last || done == total {
                let _ = writeln!(std::io::stderr(), "{:3}% {message}", 100 * done / total);
                *last = tenth;
            }
        }
        self.bar.set_position(done);
        self.bar.set_message(message);
    }

    fn finish(&self) {
        self.bar.finish();
    }
}

/// Cross-entropy over target tokens, ignoring `<pad>`, with label smoothing `ε` (none at 0).
fn loss_function(label_smoothing: f32, device: &Device) -> CrossEntropyLoss {
    CrossEntropyLossConfig::new()
        .with_pad_tokens(Some(vec![PAD_ID]))
        .with_smoothing((label_smoothing > 0.0).then_some(label_smoothing))
        .init(device)
}

/// The batch's mean loss per target token; `use_gold[t]` picks teacher forcing at step `t`.
fn batch_loss(
    model: &Seq2Seq,
    loss_fn: &CrossEntropyLoss,
    batch: Batch,
    use_gold: &[bool],
) -> Result<Tensor<1>> {
    let [rows, len] = batch.target_in.dims();
    let logits = model.teacher_forced(
        batch.source,
        batch.source_padding,
        batch.target_in,
        use_gold,
    )?;
    let vocab = logits.dims()[2];
    Ok(loss_fn.forward(
        logits.reshape([rows * len, vocab]),
        batch.target_out.reshape([rows * len]),
    ))
}

/// Mean loss per target token over `examples`, without autodiff.
pub fn mean_loss(
    model: &Seq2Seq,
    examples: &[Example],
    batch_size: usize,
    label_smoothing: f32,
    device: &Device,
) -> Result<f64> {
    let loss_fn = loss_function(label_smoothing, device);
    let (mut total, mut tokens) = (0.0, 0usize);
    let indices: Vec<usize> = (0..examples.len()).collect();
    for chunk in indices.chunks(batch_size.max(1)) {
        let batch = batch(examples, chunk, device);
        let (len, target_tokens) = (batch.target_in.dims()[1], batch.target_tokens);
        let loss = batch_loss(model, &loss_fn, batch, &vec![true; len])?;
        total += loss.into_scalar::<f32>() as f64 * target_tokens as f64;
        tokens += target_tokens;
    }
    Ok(total / tokens.max(1) as f64)
}

/// A copy of a model whose parameters are new leaves of the autodiff graph (same ids and values):
/// each copy builds a graph of its own, and the backward passes of several run at once.
struct Replica;

impl ModuleMapper for Replica {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        param.map(|tensor| tensor.detach())
    }
}

/// One batch's loss per target token, its target tokens and its gradients, computed as up to
/// `shards` parts, at once where [`parallel`] says so (data parallelism). Each part's mean loss
/// is weighted by its share of the batch's target tokens, so the parts' gradients add up to the
/// whole batch's.
fn sharded_step(
    model: &Seq2Seq,
    loss_fn: &CrossEntropyLoss,
    examples: &[Example],
    indices: &[usize],
    use_gold: &[bool],
    shards: usize,
    device: &Device,
) -> Result<(f64, usize, GradientsParams)> {
    let total: usize = indices.iter().map(|&i| examples[i].target_tokens()).sum();
    let parts: Vec<&[usize]> = indices
        .chunks(indices.len().div_ceil(shards.max(1)).max(1))
        .collect();
    // Made one after another: a new model's lazy parameters are drawn here, in a fixed order.
    let replicas: Vec<(Seq2Seq, &[usize])> = parts
        .into_iter()
        .map(|part| (model.clone().map(&mut Replica), part))
        .collect();
    let results = parallel::map_in_order(device, replicas, |(replica, part)| {
        let batch = batch(examples, part, device);
        let share = batch.target_tokens as f64 / total as f64;
        let loss = batch_loss(&replica, loss_fn, batch, use_gold)?.mul_scalar(share);
        let value = loss.clone().into_scalar::<f32>() as f64;
        Ok((
            value,
            GradientsParams::from_grads(loss.backward(), &replica),
        ))
    })?;
    let (mut loss, mut grads) = (0.0, GradientsAccumulator::new());
    for (part_loss, part_grads) in results {
        loss += part_loss;
        grads.accumulate(model, part_grads);
    }
    Ok((loss, total, grads.grads()))
}

/// The error that stops a diverging run; the last epoch's checkpoint stays.
fn diverged(what: String, kept_epoch: usize) -> Error {
    let kept = match kept_epoch {
        0 => "no epoch was completed, so nothing is saved".to_string(),
        epoch => format!("the checkpoint of epoch {epoch} is kept"),
    };
    Error::Input(format!(
        "training diverged: {what}; lower --learning-rate ({kept})"
    ))
}

/// Trains `model` (initialised on `device.autodiff()`) until the configured epochs are done or
/// `max_minutes` of training time (this run's and earlier runs') have passed — the epoch under
/// way then ends early — and checkpoints after every epoch.
pub fn run_epochs(
    checkpoint: &mut Checkpoint,
    model: Seq2Seq,
    data: &Data,
    device: &Device,
    max_minutes: Option<f64>,
) -> Result<Seq2Seq> {
    let config = checkpoint.train.clone();
    let mut state = checkpoint.state.clone();
    let train_device = device.clone().autodiff();
    train_device.seed(config.seed.wrapping_add(state.step as u64));
    let optimizer = AdamConfig::new()
        .with_grad_clipping(Some(GradientClippingConfig::Norm(config.clip_norm)))
        .init();
    let (mut model, mut optimizer) = if state.weights.is_empty() {
        (model, optimizer)
    } else {
        checkpoint.restore_optimizer(model, optimizer)?
    };
    let loss_fn = loss_function(config.label_smoothing, &train_device);
    // flex and ndarray gain 1.7× and 1.3× from cutting each batch into parts (docs/MEASUREMENTS.md).
    let shards = parallel::pieces(device);
    let budget = max_minutes.map(|minutes| minutes * 60.0);
    let started = Instant::now();
    let seconds_before = state.seconds;
    let trained_seconds = || seconds_before + started.elapsed().as_secs_f64();
    while state.epoch < config.epochs {
        let epoch = state.epoch + 1;
        let mut rng = SplitMix(config.seed ^ (epoch as u64).wrapping_mul(0x9e37_79b9));
        let examples = data.epoch(epoch, config.lexicon_per_epoch, config.seed);
        let batches = bucketed(&examples, config.batch_size, &mut rng);
        let mut progress = Progress::new(batches.len());
        let (mut loss_sum, mut token_sum) = (0.0, 0usize);
        let epoch_started = Instant::now();
        let mut trained_batches = 0;
        let mut out_of_time = false;
        for (done, indices) in batches.iter().enumerate() {
            if budget.is_some_and(|budget| trained_seconds() >= budget) {
                out_of_time = true;
                break;
            }
            trained_batches += 1;
            let longest = indices
                .iter()
                .map(|&i| examples[i].target_tokens())
                .max()
                .unwrap_or(1);
            let use_gold: Vec<bool> = (0..longest)
                .map(|_| rng.next_f64() < config.teacher_forcing)
                .collect();
            let (loss_value, target_tokens, grads) = sharded_step(
                &model,
                &loss_fn,
                &examples,
                indices,
                &use_gold,
                shards,
                &train_device,
            )?;
            // Twice the loss of guessing uniformly: no model that learns gets there.
            if !(loss_value.is_finite() && loss_value < 2.0 * (model.target_vocab() as f64).ln()) {
                return Err(diverged(
                    format!(
                        "the loss became {loss_value:.3e} at step {}",
                        state.step + 1
                    ),
                    state.epoch,
                ));
            }
            state.step += 1;
            model = optimizer.step(config.learning_rate_at(state.step), model, grads);
            loss_sum += loss_value * target_tokens as f64;
            token_sum += target_tokens;
            let rate = token_sum as f64 / epoch_started.elapsed().as_secs_f64().max(1e-9);
            progress.show(
                done + 1,
                format!(
                    "epoch {epoch}/{} loss {:.3} lr {:.2e} {rate:.0} tok/s",
                    config.epochs,
                    loss_sum / token_sum as f64,
                    config.learning_rate_at(state.step)
                ),
            );
        }
        progress.finish();
        let budget_minutes = validate::show(max_minutes.unwrap_or(0.0));
        if trained_batches == 0 {
            match state.epoch {
                0 => crate::note!("time budget of {budget_minutes} min reached before the first batch: nothing is trained"),
                kept => crate::note!("time budget of {budget_minutes} min reached: keeping the checkpoint of epoch {kept}"),
            }
            return Ok(model);
        }
        if out_of_time {
            crate::note!("time budget of {budget_minutes} min reached after {trained_batches} of {} batches: epoch {epoch} ends here", batches.len());
        }
        let valid_model = model.valid();
        let valid_loss = mean_loss(
            &valid_model,
            &data.valid,
            config.batch_size,
            config.label_smoothing,
            device,
        )?;
        let best_loss = state
            .history
            .iter()
            .map(|r| r.valid_loss)
            .fold(f64::INFINITY, f64::min);
        if !(valid_loss.is_finite() && valid_loss < 1.5 * best_loss) {
            return Err(diverged(format!("the validation loss rose from {best_loss:.3} to {valid_loss:.3} in epoch {epoch}"), state.epoch));
        }
        let ids: Vec<Vec<usize>> = data.valid_sources.iter().map(|s| s.ids.clone()).collect();
        let translations = decode(
            &valid_model,
            &ids,
            &DecodeConfig::default(),
            checkpoint.max_output_len(),
            checkpoint.vocab.target.slots(),
            device,
        )?;
        let hypotheses: Vec<String> = best(translations)
            .iter()
            .zip(&data.valid_sources)
            .map(|(ids, source)| checkpoint.vocab.target.decode(ids, &source.copies))
            .collect();
        let references: Vec<String> = data.valid_pairs.iter().map(|p| p.english.clone()).collect();
        let bleu = corpus_bleu(&hypotheses, &references)?;
        state.epoch = epoch;
        state.seconds = trained_seconds();
        state.history.push(EpochRecord {
            epoch,
            train_loss: loss_sum / token_sum.max(1) as f64,
            valid_loss,
            valid_bleu: bleu.score,
            seconds: state.seconds,
        });
        crate::note!(
            "epoch {epoch}: train loss {:.3}, valid loss {valid_loss:.3}, valid BLEU {:.2} ({:.0} s)",
            loss_sum / token_sum.max(1) as f64,
            bleu.score,
            state.seconds
        );
        let is_best = state.history.iter().all(|r| r.valid_bleu <= bleu.score);
        checkpoint.save(&model, &optimizer, state.clone(), is_best)?;
        if out_of_time {
            break;
        }
    }
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use attnzoo_models::seq2seq::{RnnSeq2SeqConfig, Seq2SeqConfig, TransformerSeq2SeqConfig};
    use burn::module::ModuleVisitor;

    /// The largest difference between two sets of gradients of one model's parameters.
    struct LargestDifference<'a>(&'a GradientsParams, &'a GradientsParams, f32);

    impl ModuleVisitor for LargestDifference<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let (a, b) = (self.0.get::<D>(param.id), self.1.get::<D>(param.id));
            let (a, b) = (a.expect("a gradient"), b.expect("a gradient"));
            let difference = (a - b).abs().max().into_scalar::<f32>();
            self.2 = self.2.max(difference);
        }
    }

    #[test]
    fn two_halves_on_two_threads_give_the_whole_batchs_loss_and_gradients() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let train_device = device.clone().autodiff();
        let examples: Vec<Example> = (0..5)
            .map(|i| Example {
                source: (0..2 + i).map(|t| 4 + (t * 3 + i) % 20).collect(),
                target: (0..4 - i % 3).map(|t| 4 + (t * 7 + i) % 20).collect(),
            })
            .collect();
        let indices: Vec<usize> = (0..examples.len()).collect();
        let configs = [
            Seq2SeqConfig::Rnn(
                RnnSeq2SeqConfig::new(24, 24)
                    .with_embedding_dim(8)
                    .with_hidden_dim(8)
                    .with_dropout(0.0),
            ),
            Seq2SeqConfig::Transformer(
                TransformerSeq2SeqConfig::new(24, 24)
                    .with_d_model(8)
                    .with_d_ff(16)
                    .with_n_heads(2)
                    .with_encoder_layers(1)
                    .with_decoder_layers(1)
                    .with_dropout(0.0),
            ),
        ];
        for config in configs {
            let model = config.try_init(&train_device).unwrap();
            let loss_fn = loss_function(0.1, &train_device);
            let use_gold = [true, false, true, true, false];
            let whole = batch(&examples, &indices, &train_device);
            let loss = batch_loss(&model, &loss_fn, whole, &use_gold).unwrap();
            let loss_value = loss.clone().into_scalar::<f32>() as f64;
            let grads = GradientsParams::from_grads(loss.backward(), &model);

            let (parallel_loss, tokens, parallel_grads) = sharded_step(
                &model,
                &loss_fn,
                &examples,
                &indices,
                &use_gold,
                2,
                &train_device,
            )
            .unwrap();
            assert_eq!(
                tokens,
                examples.iter().map(|e| e.target.len() + 1).sum::<usize>()
            );
            assert!(
                (parallel_loss - loss_value).abs() < 1e-5,
                "{parallel_loss} vs {loss_value}"
            );
            let mut difference = LargestDifference(&grads, &parallel_grads, 0.0);
            model.visit(&mut difference);
            assert!(difference.2 < 1e-5, "gradients differ by {}", difference.2);
        }
    }

    fn example(id: usize) -> Example {
        Example {
            source: vec![id],
            target: vec![id],
        }
    }

    #[test]
    fn each_epoch_has_every_sentence_and_the_next_slice_of_the_lexicon() {
        let data = Data {
            train: (0..3).map(example).collect(),
            lexicon: (100..110).map(example).collect(),
            valid: Vec::new(),
            valid_pairs: Vec::new(),
            valid_sources: Vec::new(),
        };
        let lexicon_of = |epoch| -> Vec<usize> {
            let examples = data.epoch(epoch, 4, 7);
            assert_eq!(
                examples[..3],
                data.train[..],
                "sentences first, all of them"
            );
            examples[3..].iter().map(|e| e.source[0]).collect()
        };
        let (first, second, third) = (lexicon_of(1), lexicon_of(2), lexicon_of(3));
        assert_eq!((first.len(), second.len(), third.len()), (4, 4, 4));
        let mut seen: Vec<usize> = first
            .iter()
            .chain(&second)
            .chain(&third[..2])
            .copied()
            .collect();
        seen.sort_unstable();
        assert_eq!(
            seen,
            (100..110).collect::<Vec<_>>(),
            "ten entries, each once, then around"
        );
        assert_eq!(data.epoch(1, 0, 7).len(), 3, "no lexicon at 0");
    }
}
