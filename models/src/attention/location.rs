//! Luong location-based attention (Luong et al. 2015, §3.1):
//!
//! `a_t = softmax(W_a h_t)`: the weights depend on the decoder state alone, one score per source
//! position up to a fixed `max_source_len`, cut to the real source length `S` and masked to the
//! unpadded positions by [`super::Alignment`].
//!
//! Shapes: `query [B, T, H]` → scores `[B, T, S]`, `S ≤ max_source_len`.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`Location`].
#[derive(Config, Debug)]
pub struct LocationConfig {
    /// Width `H` of the decoder query.
    pub hidden_dim: usize,
    /// The longest source the scores cover.
    pub max_source_len: usize,
}

/// Location-based scores: `W_a h_t`.
#[derive(Module, Debug)]
pub struct Location {
    /// `W_a`: `H → max_source_len`.
    pub weight: Linear,
}

impl LocationConfig {
    /// Initialises `W_a`.
    pub fn init(&self, device: &Device) -> Location {
        Location {
            weight: LinearConfig::new(self.hidden_dim, self.max_source_len).init(device),
        }
    }
}

impl Location {
    /// `[B, T, H]` → `[B, T, source_len]`; a source longer than `max_source_len` is an error.
    pub fn scores(&self, query: Tensor<3>, source_len: usize) -> Result<Tensor<3>, AttnError> {
        let max_source_len = self.weight.weight.dims()[1];
        ensure!(
            source_len <= max_source_len,
            "source length {source_len} exceeds the location attention's max_source_len {max_source_len}"
        );
        Ok(self.weight.forward(query).narrow(2, 0, source_len))
    }
}
