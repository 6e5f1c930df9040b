//! Sequence-to-sequence translation models: an RNN encoder-decoder with a choice of alignment
//! attention, and a Transformer. [`Seq2Seq`] wraps either, so training and decoding are
//! written once.
//!
//! Shapes: `source [B, S]` token ids, `source_padding [B, S]` (`true` = padding),
//! `target_in [B, T]` (`<bos> y_1 … y_{T-1}`) → logits `[B, T, V]`.

pub mod lexical_bias;
pub mod lstm;
pub mod rnn;
pub mod transformer;

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Bool, Device, Int, Tensor};

pub use lexical_bias::{LexicalBias, LexicalBiasConfig};
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

/// Every attention map behind one translation, per layer `[B, heads, rows, keys]`: what the
/// encoder's tokens attend to among themselves, what each decoder step attends to among the
/// steps so far, and what each decoder step attends to in the source. The RNN has one
/// cross-attention map of one head (its alignment; none without attention) and no
/// self-attention.
#[derive(Debug, Clone)]
pub struct Seq2SeqAttention {
    /// Encoder self-attention, per layer `[B, h, S, S]`.
    pub encoder: Vec<Tensor<4>>,
    /// Decoder self-attention, per layer `[B, h, T, T]` (zero above the diagonal).
    pub decoder: Vec<Tensor<4>>,
    /// Cross-attention, per layer `[B, h, T, S]`.
    pub cross: Vec<Tensor<4>>,
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
    /// One step: the previous tokens `[B]` → the next token's logits `[B, V]`.
    pub fn step(&mut self, tokens: Tensor<1, Int>) -> Result<Tensor<2>, AttnError> {
        match self {
            Decoder::Rnn(model, state) => Ok(model.step(state, tokens)?.0),
            Decoder::Transformer(model, state) => {
                Ok(model.decode(state, tokens.unsqueeze_dim(1))?.squeeze_dim(1))
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

    /// The model with its lexicon's table set to `p_lex` (`V_s × V_t`, row by row): the
    /// Transformer configured with `lexical_bias`; an error for any other model.
    pub fn with_lexicon_table(self, p_lex: Vec<f32>) -> Result<Self, AttnError> {
        match self {
            Seq2Seq::Transformer(model) => {
                Ok(Seq2Seq::Transformer(model.with_lexicon_table(p_lex)?))
            }
            Seq2Seq::Rnn(_) => Err(AttnError(
                "a lexical bias is built into the Transformer only, not the RNN".into(),
            )),
        }
    }

    /// The lexicon that biases the output (a Transformer with `lexical_bias`), if any.
    pub fn lexicon(&self) -> Option<&LexicalBias> {
        match self {
            Seq2Seq::Transformer(model) => model.lexicon.as_ref(),
            Seq2Seq::Rnn(_) => None,
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

    /// Every attention map of translating `source [B, S]` as `target_in [B, T]`
    /// (`<bos> y_1 … y_{T-1}`), all steps fed the given tokens: what decoding those tokens
    /// attended to, whichever search chose them.
    pub fn attention(
        &self,
        source: Tensor<2, Int>,
        source_padding: Tensor<2, Bool>,
        target_in: Tensor<2, Int>,
    ) -> Result<Seq2SeqAttention, AttnError> {
        ensure!(
            source.dims() == source_padding.dims() && source.dims()[0] == target_in.dims()[0],
            "source {:?}, its padding {:?} and target {:?} do not fit together",
            source.dims(),
            source_padding.dims(),
            target_in.dims()
        );
        match self {
            Seq2Seq::Transformer(model) => model.attention(source, source_padding, target_in),
            Seq2Seq::Rnn(model) => {
                let mut state = model.encode(source, source_padding);
                let cross = if target_in.dims()[1] == 0 {
                    Vec::new()
                } else {
                    let (_, weights) = model.decode_given(&mut state, target_in)?;
                    weights.map(|w| w.unsqueeze_dim(1)).into_iter().collect()
                };
                Ok(Seq2SeqAttention {
                    encoder: Vec::new(),
                    decoder: Vec::new(),
                    cross,
                })
            }
        }
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
            Decoder::Transformer(model, state) => Ok(model.decode(state, target_in)?),
            Decoder::Rnn(model, state) => {
                let gold_at = |t: usize| target_in.clone().narrow(1, t, 1).reshape([batch]);
                if use_gold[..len].iter().all(|&gold| gold) {
                    // Every input is known: run the steps, then W_o once over [B, T, H].
                    let (features, _) = model.decode_given(state, target_in)?;
                    return Ok(model.project(features));
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
