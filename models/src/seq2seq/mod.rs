//! Sequence-to-sequence translation models: an RNN encoder-decoder with a choice of alignment
//! attention, and a Transformer. [`Seq2Seq`] wraps either, so training and decoding are
//! written once.
//!
//! Shapes: `source [B, S]` token ids, `source_padding [B, S]` (`true` = padding),
//! `target_in [B, T]` (`<bos> y_1 … y_{T-1}`) → logits `[B, T, V]`.

pub mod lstm;
pub mod rnn;
pub mod transformer;

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Bool, Device, Int, Tensor};

pub use rnn::{DecoderAttention, LuongAttention, RnnSeq2Seq, RnnSeq2SeqConfig, RnnState};
pub use transformer::{TransformerSeq2Seq, TransformerSeq2SeqConfig, TransformerState};

use crate::error::ensure;
use crate::AttnError;

/// Which model, with its sizes.
#[derive(Config, Debug)]
pub enum Seq2SeqConfig {
    /// The RNN encoder-decoder.
    Rnn(RnnSeq2SeqConfig),
    /// The Transformer.
    Transformer(TransformerSeq2SeqConfig),
}

/// Either model. (One exists per program; boxing the larger variant would buy nothing.)
#[derive(Module, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Seq2Seq {
    /// The RNN encoder-decoder.
    Rnn(RnnSeq2Seq),
    /// The Transformer.
    Transformer(TransformerSeq2Seq),
}

/// A model's decoder holding its state between steps, made by [`Seq2Seq::encode`] for one
/// batch of sources.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Decoder<'a> {
    /// The RNN's.
    Rnn(&'a RnnSeq2Seq, RnnState),
    /// The Transformer's.
    Transformer(&'a TransformerSeq2Seq, TransformerState),
}

/// One decoding step's output.
#[derive(Debug, Clone)]
pub struct Step {
    /// `[B, V]`.
    pub logits: Tensor<2>,
    /// Attention over the source, one `[B, heads, S]` map per layer (the RNN has one layer and
    /// one head; the no-attention baseline none). Empty unless asked for.
    pub weights: Vec<Tensor<3>>,
}

impl Seq2SeqConfig {
    /// Builds the model.
    pub fn try_init(&self, device: &Device) -> Result<Seq2Seq, AttnError> {
        Ok(match self {
            Seq2SeqConfig::Rnn(config) => Seq2Seq::Rnn(config.try_init(device)?),
            Seq2SeqConfig::Transformer(config) => Seq2Seq::Transformer(config.try_init(device)?),
        })
    }
}

impl Decoder<'_> {
    /// One step: the previous tokens `[B]` → the next token's logits.
    pub fn step(&mut self, tokens: Tensor<1, Int>, need_weights: bool) -> Result<Step, AttnError> {
        match self {
            Decoder::Rnn(model, state) => {
                let (logits, weights) = model.step(state, tokens)?;
                let weights = match weights {
                    Some(weights) if need_weights => vec![weights.unsqueeze_dim(1)],
                    _ => Vec::new(),
                };
                Ok(Step { logits, weights })
            }
            Decoder::Transformer(model, state) => {
                let (logits, weights) =
                    model.decode(state, tokens.unsqueeze_dim(1), need_weights)?;
                Ok(Step {
                    logits: logits.squeeze_dim(1),
                    weights: weights.into_iter().map(|w| w.squeeze_dim(2)).collect(),
                })
            }
        }
    }

    /// Keeps the batch rows `indices` in that order (for beam search).
    pub fn select(&mut self, indices: Tensor<1, Int>) {
        match self {
            Decoder::Rnn(_, state) => state.select(indices),
            Decoder::Transformer(_, state) => state.select(indices),
        }
    }
}

impl Seq2Seq {
    /// Target vocabulary size `V`.
    pub fn target_vocab(&self) -> usize {
        match self {
            Seq2Seq::Rnn(model) => model.output.weight.dims()[1],
            Seq2Seq::Transformer(model) => model.target_vocab(),
        }
    }

    /// Encodes the source: the decoder, in its first state.
    pub fn encode(
        &self,
        source: Tensor<2, Int>,
        source_padding: Tensor<2, Bool>,
    ) -> Result<Decoder<'_>, AttnError> {
        ensure!(
            source.dims() == source_padding.dims(),
            "source {:?} and its padding {:?} differ in shape",
            source.dims(),
            source_padding.dims()
        );
        Ok(match self {
            Seq2Seq::Rnn(model) => Decoder::Rnn(model, model.encode(source, source_padding)),
            Seq2Seq::Transformer(model) => {
                Decoder::Transformer(model, model.encode(source, source_padding)?)
            }
        })
    }

    /// Training: logits `[B, T, V]` for `target_in [B, T]`. The RNN feeds the gold token at step
    /// `t` where `use_gold[t]` (teacher forcing), else its own previous argmax; the Transformer
    /// always sees the gold prefix, all steps at once.
    pub fn teacher_forced(
        &self,
        source: Tensor<2, Int>,
        source_padding: Tensor<2, Bool>,
        target_in: Tensor<2, Int>,
        use_gold: &[bool],
    ) -> Result<Tensor<3>, AttnError> {
        let [batch, len] = target_in.dims();
        ensure!(
            use_gold.len() >= len,
            "use_gold covers {} steps, the target has {len}",
            use_gold.len()
        );
        match &mut self.encode(source, source_padding)? {
            Decoder::Transformer(model, state) => Ok(model.decode(state, target_in, false)?.0),
            Decoder::Rnn(model, state) => {
                let gold_at = |t: usize| target_in.clone().narrow(1, t, 1).reshape([batch]);
                if use_gold[..len].iter().all(|&gold| gold) {
                    // Every input is known: run the steps, then W_o once over [B, T, H].
                    let features = (0..len)
                        .map(|t| Ok(model.step_features(state, gold_at(t))?.0))
                        .collect::<Result<Vec<_>, AttnError>>()?;
                    return Ok(model.project(Tensor::stack(features, 1)));
                }
                let mut logits: Vec<Tensor<2>> = Vec::with_capacity(len);
                for (t, &gold) in use_gold.iter().enumerate().take(len) {
                    let tokens = match logits.last() {
                        Some(previous) if !gold => {
                            previous.clone().detach().argmax(1).reshape([batch])
                        }
                        _ => gold_at(t),
                    };
                    logits.push(model.step(state, tokens)?.0);
                }
                Ok(Tensor::stack(logits, 1))
            }
        }
    }
}
