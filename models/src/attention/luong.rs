//! Luong multiplicative attention scores (Luong et al. 2015):
//!
//! - dot:     `score(h_t, h̄_s) = h_tᵀ h̄_s`
//! - general: `score(h_t, h̄_s) = (W_a h_t)ᵀ h̄_s`  (the "Attention Mechanisms" tutorial applies `W` with its bias to the query)
//! - concat:  `score(h_t, h̄_s) = v_aᵀ tanh(W_a [h_t; h̄_s])`, computed as
//!   `v_aᵀ tanh(W_q h_t + W_s h̄_s + b)` with `W_a = [W_q W_s]`, so `[h_t; h̄_s]` is never built.
//!
//! Shapes: `query [B, T, H]`, `memory [B, S, H]` → scores `[B, T, S]`. Used through [`super::Alignment`].

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

/// Luong's three content-based score functions.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum LuongScore {
    /// `h_tᵀ h̄_s`
    Dot,
    /// `(W_a h_t)ᵀ h̄_s`
    General,
    /// `v_aᵀ tanh(W_a [h_t; h̄_s])`
    Concat,
}

/// Configuration of [`Luong`].
#[derive(Config, Debug)]
pub struct LuongConfig {
    /// Width `H` of query and memory.
    pub hidden_dim: usize,
    /// The score function.
    pub score: LuongScore,
}

/// Luong attention scores.
#[derive(Module, Debug)]
pub struct Luong {
    /// `W_a`: `[H, H]` for general, `[2H, H]` for concat, absent for dot.
    pub weight: Option<Linear>,
    /// `v_a` for concat.
    pub score_proj: Option<Linear>,
}

impl LuongConfig {
    /// Initialises the layers the score function needs.
    pub fn init(&self, device: &Device) -> Luong {
        let hidden = self.hidden_dim;
        let (weight, score_proj) = match self.score {
            LuongScore::Dot => (None, None),
            LuongScore::General => (Some(LinearConfig::new(hidden, hidden).init(device)), None),
            LuongScore::Concat => (
                Some(LinearConfig::new(2 * hidden, hidden).init(device)),
                Some(LinearConfig::new(hidden, 1).init(device)),
            ),
        };
        Luong { weight, score_proj }
    }
}

impl Luong {
    /// `[B, T, H]` × `[B, S, H]` → `[B, T, S]`.
    pub fn scores(&self, query: Tensor<3>, memory: Tensor<3>) -> Tensor<3> {
        self.scores_with_keys(query, self.keys(memory))
    }

    /// The memory's part of the score, computed once per source sentence: `h̄_s` for dot and
    /// general, `W_a^{(2)} h̄_s + b` for concat (`[B, S, H]`).
    pub fn keys(&self, memory: Tensor<3>) -> Tensor<3> {
        match (&self.weight, &self.score_proj) {
            (Some(concat), Some(_)) => {
                let hidden = memory.dims()[2];
                let weight = concat.weight.val(); // [2H, H] (Burn's [in, out])
                let keys = memory.matmul(weight.narrow(0, hidden, hidden).unsqueeze());
                match &concat.bias {
                    Some(bias) => keys + bias.val().unsqueeze(),
                    None => keys,
                }
            }
            _ => memory,
        }
    }

    /// Scores against precomputed [`keys`](Self::keys).
    pub fn scores_with_keys(&self, query: Tensor<3>, keys: Tensor<3>) -> Tensor<3> {
        match (&self.weight, &self.score_proj) {
            (None, _) => query.matmul(keys.swap_dims(1, 2)),
            (Some(general), None) => general.forward(query).matmul(keys.swap_dims(1, 2)),
            (Some(concat), Some(score_proj)) => {
                let hidden = query.dims()[2];
                let weight = concat.weight.val();
                let query_part = query.matmul(weight.narrow(0, 0, hidden).unsqueeze()); // [B, T, H]
                let energy = query_part.unsqueeze_dim::<4>(2) + keys.unsqueeze_dim::<4>(1);
                score_proj.forward(energy.tanh()).squeeze_dim(3)
            }
        }
    }
}
