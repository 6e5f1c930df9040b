//! The position-wise feed-forward block of a Transformer layer (Vaswani et al. 2017):
//!
//! `FF(x) = W₂ dropout(act(W₁ x + b₁)) + b₂`, then dropout.
//!
//! Shapes: `x [B, T, d_model]` → `[B, T, d_model]`, hidden width `d_ff`.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, relu};
use burn::tensor::{Device, Tensor};

/// The feed-forward non-linearity.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum FeedForwardActivation {
    /// `max(0, x)`
    Relu,
    /// `x Φ(x)` (exact, with erf)
    Gelu,
}

/// Configuration of [`FeedForward`].
#[derive(Config, Debug)]
pub struct FeedForwardConfig {
    /// Model width.
    pub d_model: usize,
    /// Hidden width.
    pub d_ff: usize,
    /// Dropout probability, inside and after the block.
    #[config(default = 0.1)]
    pub dropout: f64,
    /// The non-linearity.
    #[config(default = "FeedForwardActivation::Relu")]
    pub activation: FeedForwardActivation,
}

/// `W₂ act(W₁ x)`.
#[derive(Module, Debug)]
pub struct FeedForward {
    /// `W₁`: `d_model → d_ff`.
    pub linear1: Linear,
    /// `W₂`: `d_ff → d_model`.
    pub linear2: Linear,
    /// Dropout (identity without autodiff).
    pub dropout: Dropout,
    /// The non-linearity.
    #[module(skip)]
    pub activation: FeedForwardActivation,
}

impl FeedForwardConfig {
    /// Builds the block.
    pub fn init(&self, device: &Device) -> FeedForward {
        FeedForward {
            linear1: LinearConfig::new(self.d_model, self.d_ff).init(device),
            linear2: LinearConfig::new(self.d_ff, self.d_model).init(device),
            dropout: DropoutConfig::new(self.dropout).init(),
            activation: self.activation,
        }
    }
}

impl FeedForward {
    /// `x [B, T, d_model]` → `[B, T, d_model]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let hidden = self.linear1.forward(x);
        let hidden = match self.activation {
            FeedForwardActivation::Relu => relu(hidden),
            FeedForwardActivation::Gelu => gelu(hidden),
        };
        self.dropout
            .forward(self.linear2.forward(self.dropout.forward(hidden)))
    }
}
