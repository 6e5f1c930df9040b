//! Learned absolute position embeddings (Gehring et al. 2017, "Convolutional Sequence to
//! Sequence Learning"; as in BERT and GPT-2): `x + E[pos]`, `E` trained.
//!
//! Shapes: `x [B, T, d_model]` → `[B, T, d_model]`, `T ≤ max_len`.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig};
use burn::tensor::{Device, Int, Tensor};

use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`LearnedPosition`].
#[derive(Config, Debug)]
pub struct LearnedPositionConfig {
    /// Model width.
    pub d_model: usize,
    /// Number of positions.
    pub max_len: usize,
}

/// A trained embedding per position.
#[derive(Module, Debug)]
pub struct LearnedPosition {
    /// `[max_len, d_model]`
    pub embedding: Embedding,
}

impl LearnedPositionConfig {
    /// Initialises the embedding table.
    pub fn init(&self, device: &Device) -> LearnedPosition {
        LearnedPosition {
            embedding: EmbeddingConfig::new(self.max_len, self.d_model).init(device),
        }
    }
}

impl LearnedPosition {
    /// `x + E[offset .. offset + T]`.
    pub fn forward(&self, x: Tensor<3>, offset: usize) -> Result<Tensor<3>, AttnError> {
        let [_, len, width] = x.dims();
        let [max_len, d_model] = self.embedding.weight.dims();
        ensure!(
            width == d_model,
            "input width {width} is not the embedding's d_model {d_model}"
        );
        ensure!(
            offset + len <= max_len,
            "positions up to {} exceed max_len {max_len}",
            offset + len
        );
        let positions = Tensor::<1, Int>::arange(offset as i64..(offset + len) as i64, &x.device());
        Ok(x + self.embedding.forward(positions.unsqueeze::<2>()))
    }
}
