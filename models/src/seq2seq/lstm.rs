//! An LSTM (Hochreiter & Schmidhuber 1997) with its four gates in one matrix, as PyTorch and
//! cuDNN lay it out, so a step is two matrix products instead of eight:
//!
//! `[i; f; g; o] = W_x x_t + W_h h_{t-1} + b`, `c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g)`,
//! `h_t = σ(o) ⊙ tanh(c_t)`.
//!
//! Over a whole sequence, `W_x x` is one product for every step at once.
//!
//! Shapes: `x [B, T, D]` → `h [B, T, H]`; one step `x [B, D]`, state `h, c [B, H]`.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::sigmoid;
use burn::tensor::{Device, Tensor};

/// Configuration of [`Lstm`].
#[derive(Config, Debug)]
pub struct LstmConfig {
    /// Input width `D`.
    pub d_input: usize,
    /// State width `H`.
    pub d_hidden: usize,
}

/// A single-layer LSTM.
#[derive(Module, Debug)]
pub struct Lstm {
    /// `W_x` and `b`: `D → 4H`.
    pub input: Linear,
    /// `W_h`: `H → 4H`, no bias.
    pub hidden: Linear,
}

/// Hidden and cell state, `[B, H]` each.
#[derive(Debug, Clone)]
pub struct LstmState {
    /// `h`.
    pub hidden: Tensor<2>,
    /// `c`.
    pub cell: Tensor<2>,
}

impl LstmConfig {
    /// Builds the module.
    pub fn init(&self, device: &Device) -> Lstm {
        Lstm {
            input: LinearConfig::new(self.d_input, 4 * self.d_hidden).init(device),
            hidden: LinearConfig::new(self.d_hidden, 4 * self.d_hidden)
                .with_bias(false)
                .init(device),
        }
    }
}

impl Lstm {
    /// State width `H`.
    pub fn d_hidden(&self) -> usize {
        self.hidden.weight.dims()[0]
    }

    /// Zero state for a batch of `batch`.
    pub fn zero_state(&self, batch: usize, device: &Device) -> LstmState {
        let zeros = Tensor::zeros([batch, self.d_hidden()], device);
        LstmState {
            hidden: zeros.clone(),
            cell: zeros,
        }
    }

    /// One step from the input projection `W_x x_t + b` (`[B, 4H]`).
    fn step_projected(&self, projected: Tensor<2>, state: LstmState) -> LstmState {
        let gates = projected + self.hidden.forward(state.hidden);
        let [i, f, g, o] = gates.chunk(4, 1).try_into().expect("four gates");
        let cell = sigmoid(f) * state.cell + sigmoid(i) * g.tanh();
        LstmState {
            hidden: sigmoid(o) * cell.clone().tanh(),
            cell,
        }
    }

    /// One step: `x [B, D]`.
    pub fn step(&self, x: Tensor<2>, state: LstmState) -> LstmState {
        self.step_projected(self.input.forward(x), state)
    }

    /// Every step of `x [B, T, D]` from a zero state → `h [B, T, H]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, len, _] = x.dims();
        let projected = self.input.forward(x);
        let mut state = self.zero_state(batch, &projected.device());
        let mut outputs = Vec::with_capacity(len);
        for t in 0..len {
            let input = projected.clone().narrow(1, t, 1).squeeze_dim(1);
            state = self.step_projected(input, state);
            outputs.push(state.hidden.clone());
        }
        Tensor::stack(outputs, 1)
    }
}
