//! A discrete translation lexicon inside attention (Arthur, Neubig & Nakamura 2016,
//! "Incorporating Discrete Translation Lexicons into Neural Machine Translation", the "bias"
//! method):
//!
//! `lex_t = Σ_j a_tj · p_lex(· | f_j)`, `p(e_t | …) = softmax(W_o h_t + log(lex_t + ε))`
//!
//! The cross-attention weights `a_tj` of decoder step `t` over the source tokens `f_j` mix the
//! lexicon's distributions over the target vocabulary; their log, floored by `ε`, is added to the
//! output's logits. A word the lexicon says the attended source word translates to gets up to
//! `−log ε` of extra logit, every other word none, so the network only has to learn where to
//! look and when to disagree. `p_lex` is a fixed table `[V_s, V_t]` (each row a distribution,
//! or zeros for a token with no entry), estimated before training (for example by IBM Model 1
//! over a corpus and a dictionary); it is saved with the model and never trained.
//!
//! Shapes: `source [B, S]` → the table's rows for it `[B, S, V_t]` (gathered once per
//! sentence); weights `[B, T, S]` with those rows → bias `[B, T, V_t]`.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`LexicalBias`].
#[derive(Config, Debug)]
pub struct LexicalBiasConfig {
    /// Source vocabulary size `V_s`.
    pub source_vocab: usize,
    /// Target vocabulary size `V_t`.
    pub target_vocab: usize,
    /// The floor `ε` inside the log (Arthur et al.: 0.001).
    #[config(default = 1e-3)]
    pub epsilon: f64,
}

/// The lexicon `p_lex(e | f)` and its floor; the table is data, not a trained weight.
#[derive(Module, Debug)]
pub struct LexicalBias {
    /// `p_lex`: `[V_s, V_t]`, row `f` the distribution over target tokens of source token `f`.
    pub table: Param<Tensor<2>>,
    /// `ε`.
    #[module(skip)]
    pub epsilon: f64,
}

impl LexicalBiasConfig {
    /// An empty lexicon (every row zero: a bias of `log ε` everywhere, which changes no
    /// probability) to be filled by [`LexicalBias::with_table`] or loaded with the model.
    pub fn try_init(&self, device: &Device) -> Result<LexicalBias, AttnError> {
        ensure!(
            self.source_vocab >= 1 && self.target_vocab >= 1,
            "a lexicon needs non-empty vocabularies, got {} × {}",
            self.source_vocab,
            self.target_vocab
        );
        ensure!(
            self.epsilon.is_finite() && self.epsilon > 0.0 && self.epsilon < 1.0,
            "the lexicon's ε must be in (0, 1), got {}",
            self.epsilon
        );
        Ok(LexicalBias {
            table: Param::from_tensor(Tensor::zeros(
                [self.source_vocab, self.target_vocab],
                device,
            ))
            .set_require_grad(false),
            epsilon: self.epsilon,
        })
    }
}

impl LexicalBias {
    /// Replaces the table by `p_lex`, `V_s × V_t` values row by row; each must be in `[0, 1]`
    /// and each row sum at most 1 (up to rounding).
    pub fn with_table(mut self, p_lex: Vec<f32>) -> Result<Self, AttnError> {
        let [source_vocab, target_vocab] = self.table.dims();
        ensure!(
            p_lex.len() == source_vocab * target_vocab,
            "a lexicon of {} values does not fill {source_vocab} × {target_vocab}",
            p_lex.len()
        );
        ensure!(
            p_lex.iter().all(|p| (0.0..=1.0).contains(p)),
            "a lexicon probability is outside [0, 1] (or NaN)"
        );
        if let Some(row) = p_lex
            .chunks(target_vocab)
            .position(|row| row.iter().sum::<f32>() > 1.0 + 1e-3)
        {
            return Err(AttnError::new(format!(
                "row {row} of the lexicon sums to more than 1"
            )));
        }
        let device = self.table.device();
        let table = TensorData::new(p_lex, [source_vocab, target_vocab]);
        self.table = Param::from_tensor(Tensor::from_data(table, &device)).set_require_grad(false);
        Ok(self)
    }

    /// The rows `p_lex(· | f_j)` of `source [B, S]`: `[B, S, V_t]`. Never differentiated.
    pub fn rows(&self, source: Tensor<2, Int>) -> Tensor<3> {
        let [batch, len] = source.dims();
        let target_vocab = self.table.dims()[1];
        self.table
            .val()
            .detach()
            .select(0, source.reshape([batch * len]))
            .reshape([batch, len, target_vocab])
    }

    /// `log(a · p_lex + ε)`: weights `[B, T, S]` over the sources whose [`rows`](Self::rows)
    /// are `[B, S, V_t]` → the bias on the logits `[B, T, V_t]`.
    pub fn bias(&self, weights: Tensor<3>, rows: Tensor<3>) -> Tensor<3> {
        (weights.matmul(rows) + self.epsilon).log()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::Tolerance;

    #[test]
    fn the_bias_is_the_log_of_the_attention_weighted_lexicon() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        // Source token 1 translates to target 0 or 1, token 2 to target 2; token 0 has no entry.
        let lexicon = LexicalBiasConfig::new(3, 3)
            .try_init(&device)
            .unwrap()
            .with_table(vec![0.0, 0.0, 0.0, 0.75, 0.25, 0.0, 0.0, 0.0, 1.0])
            .unwrap();
        let source = Tensor::<2, Int>::from_data([[1, 2, 0]], &device);
        let weights = Tensor::<3>::from_data([[[0.5, 0.5, 0.0], [0.0, 0.2, 0.8]]], &device);
        let bias = lexicon.bias(weights, lexicon.rows(source));
        let expected = [
            [0.375f32 + 1e-3, 0.125 + 1e-3, 0.5 + 1e-3],
            [1e-3, 1e-3, 0.2 + 1e-3],
        ]
        .map(|row| row.map(f32::ln));
        bias.into_data()
            .assert_approx_eq::<f32>(&TensorData::from([expected]), Tolerance::default());
    }

    #[test]
    fn bad_tables_and_floors_are_refused_by_name() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let empty = || LexicalBiasConfig::new(2, 2).try_init(&device).unwrap();
        let error = |p: Vec<f32>| empty().with_table(p).unwrap_err().to_string();
        assert!(error(vec![0.5; 3]).contains("3 values"));
        assert!(error(vec![0.5, f32::NAN, 0.0, 0.0]).contains("outside [0, 1]"));
        assert!(error(vec![0.5, 0.5, 0.9, 0.9]).contains("row 1"));
        for epsilon in [0.0, -1.0, 1.0, f64::NAN] {
            let error = LexicalBiasConfig::new(2, 2)
                .with_epsilon(epsilon)
                .try_init(&device)
                .unwrap_err();
            assert!(error.to_string().contains("ε"), "{error}");
        }
    }
}
