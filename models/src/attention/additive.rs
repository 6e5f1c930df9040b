//! Bahdanau (additive) attention scores (Bahdanau et al. 2015):
//!
//! `score(h_t, h̄_s) = v_aᵀ tanh(W_1 h_t + W_2 h̄_s)`
//!
//! (`W1`, `W2`, `V` in the "Attention Mechanisms" tutorial's `BahdanauAttention`; `V`'s bias shifts every score equally and is kept for parity).
//! Shapes: `query [B, T, H]`, `memory [B, S, H]` → scores `[B, T, S]`; the `[B, T, S, H]`
//! energy is the largest intermediate. Used through [`super::Alignment`].

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

/// Configuration of [`Additive`].
#[derive(Config, Debug)]
pub struct AdditiveConfig {
    /// Width `H` of query and memory.
    pub hidden_dim: usize,
}

/// Bahdanau's additive score network.
#[derive(Module, Debug)]
pub struct Additive {
    /// `W_1`, applied to the decoder query.
    pub query_proj: Linear,
    /// `W_2`, applied to the encoder memory.
    pub memory_proj: Linear,
    /// `v_a`, from the energy to one score.
    pub score_proj: Linear,
}

impl AdditiveConfig {
    /// Initialises the three layers.
    pub fn init(&self, device: &Device) -> Additive {
        let hidden = self.hidden_dim;
        Additive {
            query_proj: LinearConfig::new(hidden, hidden).init(device),
            memory_proj: LinearConfig::new(hidden, hidden).init(device),
            score_proj: LinearConfig::new(hidden, 1).init(device),
        }
    }
}

impl Additive {
    /// `[B, T, H]` × `[B, S, H]` → `[B, T, S]`.
    pub fn scores(&self, query: Tensor<3>, memory: Tensor<3>) -> Tensor<3> {
        self.scores_with_keys(query, self.keys(memory))
    }

    /// The memory's half of the energy, `W_2 h̄_s` `[B, S, H]`: a decoder computes it once per
    /// source sentence instead of once per step.
    pub fn keys(&self, memory: Tensor<3>) -> Tensor<3> {
        self.memory_proj.forward(memory)
    }

    /// Scores against precomputed [`keys`](Self::keys).
    pub fn scores_with_keys(&self, query: Tensor<3>, keys: Tensor<3>) -> Tensor<3> {
        let query = self.query_proj.forward(query).unsqueeze_dim::<4>(2); // [B, T, 1, H]
        let energy = (query + keys.unsqueeze_dim::<4>(1)).tanh(); // [B, T, S, H]
        self.score_proj.forward(energy).squeeze_dim(3)
    }
}
