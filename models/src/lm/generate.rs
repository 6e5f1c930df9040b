//! Autoregressive generation: the prompt runs once through the model (its keys and values go
//! into the cache), then each new token runs alone, attending over the cache.
//!
//! `x_{t+1} = argmax p(· | x_{≤t})` (greedy, the default), or a draw from `p` after, in
//! `transformers`' order, temperature `p ∝ exp(logits / τ)`, top-k (the `k` most likely tokens) and
//! top-p (nucleus sampling, Holtzman et al. 2020: the fewest most likely tokens whose
//! probability reaches `p`). Generation stops after an end-of-sequence token (which is returned)
//! or `max_new_tokens`.
//!
//! Tokens come one at a time from an iterator, as they are generated. The draws come from a
//! seeded SplitMix64 stream (Steele et al. 2014): the same seed on the same backend gives the
//! same tokens.

use burn::tensor::{Int, Tensor, TensorData};

use super::model::{CausalLm, LmCache};
use crate::error::ensure;
use crate::workers::with_workers_awake;
use crate::AttnError;

/// How the next token is drawn when not greedy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// `τ > 0`: logits are divided by it.
    pub temperature: f64,
    /// Keep the `k` most likely tokens (`None`: all).
    pub top_k: Option<usize>,
    /// Keep the fewest most likely tokens whose probability reaches `p`, `0 < p ≤ 1`.
    pub top_p: Option<f64>,
    /// Seed of the random stream.
    pub seed: u64,
}

/// Settings of one generation.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationConfig {
    /// The most new tokens.
    pub max_new_tokens: usize,
    /// `None`: greedy.
    pub sampling: Option<Sampling>,
    /// Tokens that end the generation; `None`: the model's (`generation_config.json`).
    pub eos_token_ids: Option<Vec<u32>>,
}

impl GenerationConfig {
    /// Greedy decoding of at most `max_new_tokens`.
    pub fn greedy(max_new_tokens: usize) -> Self {
        Self {
            max_new_tokens,
            sampling: None,
            eos_token_ids: None,
        }
    }

    /// Draws each token with these settings.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = Some(sampling);
        self
    }

    /// Checks the sampling settings, naming a bad one.
    pub fn validate(&self) -> Result<(), AttnError> {
        if let Some(sampling) = &self.sampling {
            ensure!(
                sampling.temperature.is_finite() && sampling.temperature > 0.0,
                "temperature must be positive and finite, got {}",
                sampling.temperature
            );
            if let Some(k) = sampling.top_k {
                ensure!(k >= 1, "top-k must be at least 1, got {k}");
            }
            if let Some(p) = sampling.top_p {
                ensure!(p > 0.0 && p <= 1.0, "top-p must be in (0, 1], got {p}");
            }
        }
        Ok(())
    }
}

/// SplitMix64: a small, fast, seedable generator of 64-bit numbers.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The index of the largest logit (the first of equal ones, as `torch.argmax`).
pub fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    for (i, &value) in logits.iter().enumerate() {
        if value > logits[best] {
            best = i;
        }
    }
    best
}

/// Draws a token from `logits` after temperature, top-k and top-p; `uniform` in `[0, 1)`.
fn sample(logits: &[f32], sampling: &Sampling, uniform: f64) -> usize {
    let scaled: Vec<f64> = logits
        .iter()
        .map(|&l| l as f64 / sampling.temperature)
        .collect();
    // Most likely first; ties keep the lower id first.
    let mut order: Vec<usize> = (0..scaled.len()).collect();
    order.sort_by(|&a, &b| scaled[b].total_cmp(&scaled[a]).then(a.cmp(&b)));
    if let Some(k) = sampling.top_k {
        order.truncate(k.max(1));
    }
    let max = scaled[order[0]];
    let weights: Vec<f64> = order.iter().map(|&i| (scaled[i] - max).exp()).collect();
    let total: f64 = weights.iter().sum();
    let mut kept = weights.len();
    if let Some(p) = sampling.top_p {
        let mut cumulative = 0.0;
        for (n, w) in weights.iter().enumerate() {
            cumulative += w / total;
            if cumulative >= p {
                kept = n + 1;
                break;
            }
        }
    }
    let total: f64 = weights[..kept].iter().sum();
    let mut target = uniform * total;
    for (n, w) in weights[..kept].iter().enumerate() {
        if target < *w {
            return order[n];
        }
        target -= w;
    }
    order[kept - 1]
}

/// The tokens of a generation, one per `next`, as they are produced.
pub struct Generation<'a> {
    model: &'a CausalLm,
    cache: LmCache,
    /// Logits for the next token, `[vocab]`.
    next_logits: Option<Vec<f32>>,
    /// The token produced last, run through the model on the next call.
    last: Option<u32>,
    /// The prompt and the tokens produced.
    tokens: Vec<i64>,
    produced: usize,
    max_new_tokens: usize,
    sampling: Option<Sampling>,
    eos: Vec<u32>,
    rng: SplitMix64,
    done: bool,
}

impl CausalLm {
    /// Generates after `prompt` (token ids), one token per iteration; see the module docs.
    /// The prompt must hold 1 to `max_position_embeddings` ids from the vocabulary.
    pub fn generate(
        &self,
        prompt: &[u32],
        config: &GenerationConfig,
    ) -> Result<Generation<'_>, AttnError> {
        config.validate()?;
        ensure!(!prompt.is_empty(), "the prompt has no tokens");
        ensure!(
            prompt.len() <= self.max_position_embeddings,
            "the prompt has {} tokens, more than the model's max_position_embeddings {}",
            prompt.len(),
            self.max_position_embeddings
        );
        let vocab = self.vocab_size();
        if let Some(bad) = prompt.iter().find(|&&id| id as usize >= vocab) {
            return Err(AttnError::new(format!(
                "prompt token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        let mut generation = Generation {
            model: self,
            cache: self.cache(),
            next_logits: None,
            last: None,
            tokens: prompt.iter().map(|&id| id as i64).collect(),
            produced: 0,
            max_new_tokens: config.max_new_tokens,
            sampling: config.sampling,
            eos: config
                .eos_token_ids
                .clone()
                .unwrap_or_else(|| self.eos_token_ids.clone()),
            rng: SplitMix64(config.sampling.map_or(0, |s| s.seed)),
            done: config.max_new_tokens == 0,
        };
        if !generation.done {
            generation.next_logits = Some(generation.step(generation.tokens.clone())?);
        }
        Ok(generation)
    }
}

impl Generation<'_> {
    /// Runs `ids` through the model after the cache; the last position's logits. A sequence
    /// growing past the length where its RoPE switches frequencies (LongRoPE) runs again whole,
    /// from an empty cache, as `transformers`' `generate` does.
    fn step(&mut self, mut ids: Vec<i64>) -> Result<Vec<f32>, AttnError> {
        let seen = self.cache.seen();
        if self
            .model
            .rope_switches_at()
            .is_some_and(|length| 0 < seen && seen <= length && seen + ids.len() > length)
        {
            self.cache = self.model.cache();
            ids = self.tokens.clone();
        }
        let device = self.model.device();
        let len = ids.len();
        let input = Tensor::<2, Int>::from_data(TensorData::new(ids, [1, len]), &device);
        let (model, cache) = (self.model, &mut self.cache);
        let step = || model.forward_last(input, None, cache);
        let logits = match model.multiplies_on_rayon() {
            true => with_workers_awake(step),
            false => rayon::scope(|_| step()),
        }?;
        logits
            .into_data()
            .convert::<f32>()
            .try_into_vec::<f32>()
            .map_err(|error| AttnError::new(format!("cannot read the logits: {error:?}")))
    }

    /// The cache so far (its positions: prompt and generated tokens but the last).
    pub fn cache(&self) -> &LmCache {
        &self.cache
    }
}

impl Iterator for Generation<'_> {
    type Item = Result<u32, AttnError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let logits = match self.next_logits.take() {
            Some(logits) => logits,
            None => {
                let last = self.last?;
                match self.step(vec![last as i64]) {
                    Ok(logits) => logits,
                    Err(error) => {
                        self.done = true;
                        return Some(Err(error));
                    }
                }
            }
        };
        let token = match &self.sampling {
            None => argmax(&logits),
            Some(sampling) => sample(&logits, sampling, self.rng.next_f64()),
        } as u32;
        self.produced += 1;
        self.done = self.produced >= self.max_new_tokens || self.eos.contains(&token);
        self.last = Some(token);
        self.tokens.push(token as i64);
        Some(Ok(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_takes_the_first_of_equal_logits() {
        assert_eq!(argmax(&[0.0, 3.0, 1.0, 3.0]), 1);
    }

    #[test]
    fn top_k_of_one_and_a_tiny_top_p_are_greedy() {
        let logits = [0.5f32, 2.0, 1.9, -1.0];
        for uniform in [0.0, 0.3, 0.999] {
            let top_k = Sampling {
                temperature: 1.0,
                top_k: Some(1),
                top_p: None,
                seed: 0,
            };
            assert_eq!(sample(&logits, &top_k, uniform), 1);
            let top_p = Sampling {
                top_k: None,
                top_p: Some(1e-6),
                ..top_k
            };
            assert_eq!(sample(&logits, &top_p, uniform), 1);
        }
        // top-k 2 never draws outside the two most likely.
        let two = Sampling {
            temperature: 5.0,
            top_k: Some(2),
            top_p: None,
            seed: 0,
        };
        let mut rng = SplitMix64(9);
        let draws: Vec<usize> = (0..200)
            .map(|_| sample(&logits, &two, rng.next_f64()))
            .collect();
        assert!(draws.iter().all(|&t| t == 1 || t == 2));
        assert!(draws.contains(&1) && draws.contains(&2));
    }

    #[test]
    fn bad_sampling_settings_are_named() {
        let config = GenerationConfig::greedy(4).with_sampling(Sampling {
            temperature: 0.0,
            top_k: None,
            top_p: None,
            seed: 1,
        });
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "temperature must be positive and finite, got 0"
        );
    }
}
