//! An RNN encoder-decoder (Sutskever et al. 2014) with alignment attention (Bahdanau et al.
//! 2015; Luong et al. 2015), the attention picked by config:
//!
//! Encoder: a bidirectional LSTM over the embedded source; each direction reads only the real
//! tokens of its row. `h̄_s = W_m [→h_s; ←h_s]` is the attention memory and
//! `s_0 = tanh(W_b [→h_last; ←h_first])` the decoder's first state.
//!
//! Decoder step `t` with previous token `y_{t-1}`:
//! - no attention: `s_t = LSTM(E y_{t-1}, s_{t-1})`, `p_t = softmax(W_o s_t)`;
//! - Bahdanau (additive score): scored with the *previous* state,
//!   `c_t = Attn(s_{t-1}, h̄)`, `s_t = LSTM([E y_{t-1}; c_t], s_{t-1})`, `p_t = softmax(W_o s_t)`;
//! - Luong (dot, general, concat, location scores): scored with the *current* state,
//!   `s_t = LSTM([E y_{t-1}; h̃_{t-1}], s_{t-1})` (input feeding), `c_t = Attn(s_t, h̄)`,
//!   `h̃_t = tanh(W_c [c_t; s_t])`, `p_t = softmax(W_o h̃_t)`.
//!
//! The decoder LSTM's input projection splits, `W_x [E y; c] = W_x[E y] E y + W_x[c] c`: with
//! the tokens given (teacher forcing) their half is one product for all steps.
//!
//! Shapes: `source [B, S]`, `source_padding [B, S]` (`true` = padding), `target_in [B, T]`
//! (`<bos> y_1 … y_{T-1}`) → logits `[B, T, V]`; one step: tokens `[B]` → logits `[B, V]`,
//! weights `[B, S]`.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::tensor::module::linear;
use burn::tensor::{Bool, Device, Int, Tensor};

use super::lstm::{Lstm, LstmConfig, LstmState};
use crate::attention::{Alignment, AlignmentConfig, AlignmentScore};
use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`RnnSeq2Seq`].
#[derive(Config, Debug)]
pub struct RnnSeq2SeqConfig {
    /// Source vocabulary size.
    pub source_vocab: usize,
    /// Target vocabulary size.
    pub target_vocab: usize,
    /// Word embedding width `E`.
    #[config(default = 256)]
    pub embedding_dim: usize,
    /// LSTM state width `H` (each encoder direction, and the decoder).
    #[config(default = 256)]
    pub hidden_dim: usize,
    /// Dropout on embeddings and before the output layer.
    #[config(default = 0.2)]
    pub dropout: f64,
    /// The alignment score: `None` is the no-attention baseline, `Additive` is Bahdanau, the
    /// others Luong.
    #[config(default = "Some(AlignmentScore::Additive)")]
    pub attention: Option<AlignmentScore>,
}

/// The encoder-decoder.
#[derive(Module, Debug)]
pub struct RnnSeq2Seq {
    /// Source word embeddings.
    pub source_embedding: Embedding,
    /// Target word embeddings.
    pub target_embedding: Embedding,
    /// Left-to-right encoder LSTM.
    pub encoder_forward: Lstm,
    /// Right-to-left encoder LSTM.
    pub encoder_backward: Lstm,
    /// `W_m`: `2H → H`, the attention memory.
    pub memory: Linear,
    /// `W_b`: `2H → H`, the decoder's first state.
    pub bridge: Linear,
    /// The decoder LSTM.
    pub decoder: Lstm,
    /// The decoder's attention (none for the baseline).
    pub attention: Option<DecoderAttention>,
    /// `W_o`: `H → V`.
    pub output: Linear,
    /// Dropout (identity without autodiff).
    pub dropout: Dropout,
}

/// How the decoder attends: the two ways of wiring an alignment into an RNN decoder.
#[derive(Module, Debug)]
pub enum DecoderAttention {
    /// Bahdanau: scored with the previous state `s_{t-1}`, the context fed to the LSTM.
    Bahdanau(Alignment),
    /// Luong: scored with the current state `s_t`, the context combined by `W_c`.
    Luong(LuongAttention),
}

/// The decoder LSTM's input weights `W_x` `[E (+ H), 4H]`, split by what they read.
struct InputWeights {
    /// `W_x[E y]` `[E, 4H]`: the embedded previous token.
    token: Tensor<2>,
    /// `W_x[c]` `[H, 4H]`: what the attention feeds (Bahdanau's `c_t`, Luong's `h̃_{t-1}`);
    /// none without attention.
    fed: Option<Tensor<2>>,
}

/// Luong's attention with its combination layer.
#[derive(Module, Debug)]
pub struct LuongAttention {
    /// The alignment (dot, general, concat or location score).
    pub alignment: Alignment,
    /// `W_c`: `2H → H`, the attentional hidden state `h̃_t = tanh(W_c [c_t; s_t])`.
    pub combine: Linear,
}

/// The decoder's state between steps.
#[derive(Debug, Clone)]
pub struct RnnState {
    lstm: LstmState,
    /// Luong's `h̃_{t-1}` (input feeding); zeros before the first step.
    feed: Tensor<2>,
    memory: Tensor<3>,
    /// The attention's memory-side terms, computed once.
    keys: Tensor<3>,
    padding: Tensor<2, Bool>,
}

impl RnnState {
    /// Keeps the batch rows `indices` in that order (for beam search).
    pub fn select(&mut self, indices: Tensor<1, Int>) {
        self.lstm = LstmState {
            hidden: self.lstm.hidden.clone().select(0, indices.clone()),
            cell: self.lstm.cell.clone().select(0, indices.clone()),
        };
        self.feed = self.feed.clone().select(0, indices.clone());
        self.memory = self.memory.clone().select(0, indices.clone());
        self.keys = self.keys.clone().select(0, indices.clone());
        self.padding = self.padding.clone().select(0, indices);
    }
}

impl RnnSeq2SeqConfig {
    /// Builds the model.
    pub fn try_init(&self, device: &Device) -> Result<RnnSeq2Seq, AttnError> {
        let (embedding, hidden) = (self.embedding_dim, self.hidden_dim);
        ensure!(
            self.source_vocab >= 1 && self.target_vocab >= 1 && embedding >= 1 && hidden >= 1,
            "vocabularies and widths must be positive: {self:?}"
        );
        let lstm = |input| LstmConfig::new(input, hidden).init(device);
        let attention = match self.attention {
            None => None,
            Some(score) => {
                let alignment = AlignmentConfig::new(hidden, score).try_init(device)?;
                Some(match score {
                    AlignmentScore::Additive => DecoderAttention::Bahdanau(alignment),
                    _ => DecoderAttention::Luong(LuongAttention {
                        alignment,
                        combine: LinearConfig::new(2 * hidden, hidden).init(device),
                    }),
                })
            }
        };
        Ok(RnnSeq2Seq {
            source_embedding: EmbeddingConfig::new(self.source_vocab, embedding).init(device),
            target_embedding: EmbeddingConfig::new(self.target_vocab, embedding).init(device),
            encoder_forward: lstm(embedding),
            encoder_backward: lstm(embedding),
            memory: LinearConfig::new(2 * hidden, hidden).init(device),
            bridge: LinearConfig::new(2 * hidden, hidden).init(device),
            decoder: lstm(if self.attention.is_some() {
                embedding + hidden
            } else {
                embedding
            }),
            attention,
            output: LinearConfig::new(hidden, self.target_vocab).init(device),
            dropout: DropoutConfig::new(self.dropout).init(),
        })
    }
}

impl RnnSeq2Seq {
    /// Encodes `source [B, S]` into the decoder's first state.
    pub fn encode(&self, source: Tensor<2, Int>, padding: Tensor<2, Bool>) -> RnnState {
        let [batch, len] = source.dims();
        let hidden = self.bridge.weight.dims()[1];
        let device = source.device();
        let embedded = self.dropout.forward(self.source_embedding.forward(source));
        let width = embedded.dims()[2];
        // Per row, position t ↔ length-1-t over the real tokens; padding stays in place.
        let lengths = padding.clone().bool_not().int().sum_dim(1); // [B, 1]
        let positions = Tensor::<1, Int>::arange(0..len as i64, &device)
            .unsqueeze::<2>()
            .expand([batch, len]);
        let reversed = (lengths.clone().expand([batch, len]) - positions.clone() - 1)
            .mask_where(padding.clone(), positions);
        let flip = |x: Tensor<3>, width: usize| {
            x.gather(
                1,
                reversed
                    .clone()
                    .unsqueeze_dim::<3>(2)
                    .expand([batch, len, width]),
            )
        };
        let [forward, backward] = Lstm::forward_pair(
            [&self.encoder_forward, &self.encoder_backward],
            [embedded.clone(), flip(embedded, width)],
        );
        let backward = flip(backward, hidden);
        let last = (lengths - 1)
            .clamp_min(0)
            .unsqueeze_dim::<3>(2)
            .expand([batch, 1, hidden]);
        let summary = Tensor::cat(
            vec![
                forward.clone().gather(1, last).squeeze_dim::<2>(1),
                backward.clone().narrow(1, 0, 1).squeeze_dim::<2>(1),
            ],
            1,
        );
        let states = Tensor::cat(vec![forward, backward], 2);
        let first = self.bridge.forward(summary).tanh();
        let memory = self.memory.forward(states);
        RnnState {
            lstm: LstmState {
                hidden: first.clone(),
                cell: first.zeros_like(),
            },
            feed: first.zeros_like(),
            keys: match &self.attention {
                Some(DecoderAttention::Bahdanau(alignment)) => alignment.keys(memory.clone()),
                Some(DecoderAttention::Luong(luong)) => luong.alignment.keys(memory.clone()),
                None => memory.clone(),
            },
            memory,
            padding,
        }
    }

    /// One decoder step: `tokens [B]` (the previous outputs) → logits `[B, V]` and, with
    /// attention, the weights `[B, S]`.
    pub fn step(
        &self,
        state: &mut RnnState,
        tokens: Tensor<1, Int>,
    ) -> Result<(Tensor<2>, Option<Tensor<2>>), AttnError> {
        let (features, weights) = self.step_features(state, tokens)?;
        Ok((self.project(features), weights))
    }

    /// `W_o` (after dropout): features `[.., H]` → logits `[.., V]`.
    pub fn project<const D: usize>(&self, features: Tensor<D>) -> Tensor<D> {
        self.output.forward(self.dropout.forward(features))
    }

    /// One decoder step up to the output layer: `tokens [B]` → the features `W_o` reads
    /// (`s_t`, or Luong's `h̃_t`) `[B, H]`, and the attention weights `[B, S]`.
    pub fn step_features(
        &self,
        state: &mut RnnState,
        tokens: Tensor<1, Int>,
    ) -> Result<(Tensor<2>, Option<Tensor<2>>), AttnError> {
        let weights = self.input_weights();
        let projected = self.embed_projected(tokens.unsqueeze_dim(1), &weights);
        self.step_projected(state, projected.squeeze_dim(1), &weights)
    }

    /// Every decoder step fed the given tokens (teacher forcing): `target_in [B, T]`, `T ≥ 1` →
    /// the features `W_o` reads `[B, T, H]` and the attention weights `[B, T, S]`. The numbers of
    /// [`step_features`](Self::step_features) at each step, with the tokens' share of the LSTM's
    /// input projection computed for all steps at once.
    pub fn decode_given(
        &self,
        state: &mut RnnState,
        target_in: Tensor<2, Int>,
    ) -> Result<(Tensor<3>, Option<Tensor<3>>), AttnError> {
        let len = target_in.dims()[1];
        ensure!(len >= 1, "the decoder needs at least one input token");
        let weights = self.input_weights();
        let projected = self.embed_projected(target_in, &weights);
        let (mut features, mut attention) = (Vec::with_capacity(len), Vec::with_capacity(len));
        for t in 0..len {
            let step = projected.clone().narrow(1, t, 1).squeeze_dim(1);
            let (top, step_attention) = self.step_projected(state, step, &weights)?;
            features.push(top);
            attention.extend(step_attention);
        }
        let attention = (!attention.is_empty()).then(|| Tensor::stack(attention, 1));
        Ok((Tensor::stack(features, 1), attention))
    }

    /// The decoder LSTM's `W_x` split once per call (a split inside the step loop would cost
    /// training a full-size gradient per step).
    fn input_weights(&self) -> InputWeights {
        let weight = self.decoder.input.weight.val();
        let [d_input, _] = weight.dims();
        let embedding_dim = self.target_embedding.weight.dims()[1];
        InputWeights {
            token: weight.clone().narrow(0, 0, embedding_dim),
            fed: (d_input > embedding_dim)
                .then(|| weight.narrow(0, embedding_dim, d_input - embedding_dim)),
        }
    }

    /// The previous tokens' share of the decoder LSTM's input projection, `W_x[E y] E y + b`
    /// after embedding dropout: `tokens [B, T]` → `[B, T, 4H]`.
    fn embed_projected(&self, tokens: Tensor<2, Int>, weights: &InputWeights) -> Tensor<3> {
        let embedded = self.dropout.forward(self.target_embedding.forward(tokens));
        let bias = self.decoder.input.bias.as_ref().map(|b| b.val());
        linear(embedded, weights.token.clone(), bias)
    }

    /// One decoder step from the previous token's share of the LSTM's input projection
    /// ([`embed_projected`](Self::embed_projected), `[B, 4H]`); the attention's share, of
    /// `c_t` or `h̃_{t-1}`, is added here.
    fn step_projected(
        &self,
        state: &mut RnnState,
        projected: Tensor<2>,
        weights: &InputWeights,
    ) -> Result<(Tensor<2>, Option<Tensor<2>>), AttnError> {
        let fed = |x: Tensor<2>| match &weights.fed {
            Some(weight) => Ok(projected.clone() + x.matmul(weight.clone())),
            None => Err(AttnError::new(
                "the decoder LSTM's input has no room for the attention's context",
            )),
        };
        let attend = |alignment: &Alignment, query: Tensor<2>, state: &RnnState| {
            alignment.step_with_keys(
                query,
                state.memory.clone(),
                state.keys.clone(),
                Some(state.padding.clone()),
            )
        };
        match &self.attention {
            None => Ok((self.lstm_step(state, projected), None)),
            Some(DecoderAttention::Bahdanau(alignment)) => {
                let aligned = attend(alignment, state.lstm.hidden.clone(), state)?;
                let top = self.lstm_step(state, fed(aligned.context)?);
                Ok((top, Some(aligned.weights)))
            }
            Some(DecoderAttention::Luong(luong)) => {
                let top = self.lstm_step(state, fed(state.feed.clone())?);
                let aligned = attend(&luong.alignment, top.clone(), state)?;
                let attentional = luong
                    .combine
                    .forward(Tensor::cat(vec![aligned.context, top], 1))
                    .tanh();
                state.feed = attentional.clone();
                Ok((attentional, Some(aligned.weights)))
            }
        }
    }

    /// Runs the decoder LSTM one step on its input projection `[B, 4H]`, returning `s_t [B, H]`.
    fn lstm_step(&self, state: &mut RnnState, projected: Tensor<2>) -> Tensor<2> {
        state.lstm = self.decoder.step_projected(projected, state.lstm.clone());
        state.lstm.hidden.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Distribution, Tolerance};

    #[test]
    fn the_split_input_weights_give_the_whole_projection() {
        let device = Device::default();
        let model = RnnSeq2SeqConfig::new(11, 13)
            .with_embedding_dim(6)
            .with_hidden_dim(4)
            .try_init(&device)
            .unwrap();
        let weights = model.input_weights();
        let [token, fed] = [[3, 6], [3, 4]]
            .map(|shape| Tensor::<2>::random(shape, Distribution::Default, &device));
        let bias = model.decoder.input.bias.as_ref().map(|b| b.val());
        let split =
            linear(token.clone(), weights.token, bias) + fed.clone().matmul(weights.fed.unwrap());
        let whole = model
            .decoder
            .input
            .forward(Tensor::cat(vec![token, fed], 1));
        split
            .into_data()
            .assert_approx_eq::<f32>(&whole.into_data(), Tolerance::absolute(1e-6));
    }

    #[test]
    fn every_step_at_once_gives_the_numbers_of_one_step_at_a_time() {
        let device = Device::default();
        let scores = [
            None,
            Some(AlignmentScore::Additive),
            Some(AlignmentScore::General),
            Some(AlignmentScore::Location { max_source_len: 5 }),
        ];
        for attention in scores {
            let model = RnnSeq2SeqConfig::new(11, 13)
                .with_embedding_dim(6)
                .with_hidden_dim(4)
                .with_attention(attention)
                .try_init(&device)
                .unwrap();
            let source =
                Tensor::<2, Int>::random([2, 5], Distribution::Uniform(0.0, 11.0), &device);
            let padding = Tensor::<2, Bool>::from_bool(
                [[false; 5], [false, false, false, true, true]],
                &device,
            );
            let target =
                Tensor::<2, Int>::random([2, 3], Distribution::Uniform(0.0, 13.0), &device);
            let mut state = model.encode(source.clone(), padding.clone());
            let (features, weights) = model.decode_given(&mut state, target.clone()).unwrap();
            let mut state = model.encode(source, padding);
            for t in 0..3 {
                let tokens = target.clone().narrow(1, t, 1).squeeze_dim(1);
                let (step, step_weights) = model.step_features(&mut state, tokens).unwrap();
                let at = |x: Tensor<3>| x.narrow(1, t, 1).squeeze_dim::<2>(1).into_data();
                let close = Tolerance::absolute(1e-6);
                step.into_data()
                    .assert_approx_eq::<f32>(&at(features.clone()), close);
                assert_eq!(step_weights.is_some(), attention.is_some());
                if let (Some(step), Some(all)) = (step_weights, weights.clone()) {
                    step.into_data().assert_approx_eq::<f32>(&at(all), close);
                }
            }
        }
    }
}
