//! Perplexity of a token sequence as llama.cpp's `llama-perplexity -c N` computes it
//! (`tools/perplexity/perplexity.cpp`, `perplexity()`):
//!
//! the tokens (BOS first when the tokenizer adds one) are cut into `⌊len / N⌋` chunks of `N`;
//! each chunk is run from an empty cache with its first token replaced by BOS (when there is
//! one); the second half is scored — the log-probability of token `t + 1` given the chunk up to
//! `t`, for `t` in `N/2 .. N − 1` — and
//!
//! `PPL = exp(−(1/n) Σ log p(x_{t+1} | x_{≤t}))`
//!
//! over the `n = chunks · (N − N/2 − 1)` scored tokens, the log-softmax in f64 over f32 logits
//! (`log_softmax` in the same file).

use burn::tensor::{Int, Tensor, TensorData};

use super::CausalLm;
use crate::error::ensure;
use crate::AttnError;

/// Positions whose logits are computed at a time (bounds the `[positions, vocab]` buffer).
const LOGIT_ROWS: usize = 64;

/// The running result of [`CausalLm::perplexity`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perplexity {
    /// Chunks scored so far.
    pub chunks: usize,
    /// Tokens scored so far.
    pub tokens: usize,
    /// `−Σ log p` over them.
    pub nll: f64,
}

impl Perplexity {
    /// `exp(nll / tokens)`.
    pub fn value(&self) -> f64 {
        (self.nll / self.tokens as f64).exp()
    }
}

impl CausalLm {
    /// The perplexity of `tokens` with chunks of `context`, `bos` replacing each chunk's first
    /// token (see the module docs); `progress` sees the result after each chunk.
    pub fn perplexity(
        &self,
        tokens: &[u32],
        bos: Option<u32>,
        context: usize,
        mut progress: impl FnMut(&Perplexity, usize),
    ) -> Result<Perplexity, AttnError> {
        ensure!(
            context >= 4 && context <= self.max_position_embeddings,
            "a context of {context} tokens is outside 4..={}",
            self.max_position_embeddings
        );
        let chunks = tokens.len() / context;
        ensure!(
            chunks >= 1,
            "the text has {} tokens, fewer than one context of {context}",
            tokens.len()
        );
        let first = context / 2;
        let device = self.device();
        let mut result = Perplexity {
            chunks: 0,
            tokens: 0,
            nll: 0.0,
        };
        for chunk in tokens.chunks_exact(context).take(chunks) {
            let mut ids: Vec<i64> = chunk.iter().map(|&id| i64::from(id)).collect();
            if let Some(bos) = bos {
                ids[0] = i64::from(bos);
            }
            let input = Tensor::<2, Int>::from_data(TensorData::new(ids, [1, context]), &device);
            let (hidden, _) = self.hidden(input, None, &mut self.cache(), false)?;
            for start in (first..context - 1).step_by(LOGIT_ROWS) {
                let end = (start + LOGIT_ROWS).min(context - 1);
                let logits = self.logits(hidden.clone().narrow(1, start, end - start));
                let logits: Vec<f32> = logits
                    .into_data()
                    .convert::<f32>()
                    .try_into_vec()
                    .expect("logits read back as f32");
                let vocab = logits.len() / (end - start);
                for (row, &next) in logits.chunks_exact(vocab).zip(&chunk[start + 1..end + 1]) {
                    result.nll -= log_softmax(row, next as usize);
                    result.tokens += 1;
                }
            }
            result.chunks += 1;
            progress(&result, chunks);
        }
        Ok(result)
    }
}

/// `log softmax(logits)[token]`: the max subtracted in f32, the sum of exponentials in f64.
fn log_softmax(logits: &[f32], token: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from((l - max).exp())).sum();
    f64::from(logits[token] - max) - sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_softmax_of_equal_logits_is_minus_log_n() {
        let value = log_softmax(&[3.0; 8], 5);
        assert!((value + 8f64.ln()).abs() < 1e-12);
    }
}
