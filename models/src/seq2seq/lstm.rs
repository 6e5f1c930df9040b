//! An LSTM (Hochreiter & Schmidhuber 1997) with its four gates in one matrix, as PyTorch and
//! cuDNN lay it out, so a step is two matrix products instead of eight:
//!
//! `[i; f; g; o] = W_x x_t + W_h h_{t-1} + b`, `c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g)`,
//! `h_t = σ(o) ⊙ tanh(c_t)`.
//!
//! Over a whole sequence, `W_x x` is one product for every step at once, and two LSTMs (a
//! bidirectional encoder's directions) can run in lockstep as one ([`Lstm::forward_pair`]).
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
    pub fn step_projected(&self, projected: Tensor<2>, state: LstmState) -> LstmState {
        let (hidden, cell) = gated(projected + self.hidden.forward(state.hidden), state.cell);
        LstmState { hidden, cell }
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

    /// Two LSTMs of the same widths, each over its own `x [B, T, D]` from a zero state, run in
    /// lockstep as one: their weights stacked (`[2, D, 4H]`, `[2, H, 4H]`), so each step is one
    /// batched product and one set of element-wise ops for both (as cuDNN runs a bidirectional
    /// layer's directions). The same numbers as two [`forward`](Self::forward)s.
    pub fn forward_pair(pair: [&Lstm; 2], inputs: [Tensor<3>; 2]) -> [Tensor<3>; 2] {
        let [batch, len, d_input] = inputs[0].dims();
        let hidden = pair[0].d_hidden();
        let device = inputs[0].device();
        let stack = |weights: [Tensor<2>; 2]| Tensor::stack::<3>(weights.to_vec(), 0);
        let w_x = stack(pair.map(|lstm| lstm.input.weight.val()));
        let w_h = stack(pair.map(|lstm| lstm.hidden.weight.val()));
        let x = Tensor::stack::<4>(inputs.to_vec(), 0).reshape([2, batch * len, d_input]);
        let mut projected = x.matmul(w_x); // [2, B·T, 4H]
        if let [Some(first), Some(second)] = pair.map(|lstm| lstm.input.bias.as_ref()) {
            projected = projected + stack([first.val(), second.val()].map(|b| b.unsqueeze()));
        }
        let projected = projected.reshape([2, batch, len, 4 * hidden]);
        let (mut h, mut c) = (
            Tensor::zeros([2, batch, hidden], &device),
            Tensor::zeros([2, batch, hidden], &device),
        );
        let mut outputs = Vec::with_capacity(len);
        for t in 0..len {
            let step = projected.clone().narrow(2, t, 1).squeeze_dim::<3>(2);
            (h, c) = gated(step + h.matmul(w_h.clone()), c);
            outputs.push(h.clone());
        }
        let outputs = Tensor::stack::<4>(outputs, 2); // [2, B, T, H]
        [0, 1].map(|i| outputs.clone().narrow(0, i, 1).squeeze_dim(0))
    }
}

/// The cell update from the gates `[…, 4H]` (`i, f, g, o` along the last axis) and `c_{t-1}`:
/// `(h_t, c_t)`.
fn gated<const D: usize>(gates: Tensor<D>, cell: Tensor<D>) -> (Tensor<D>, Tensor<D>) {
    let [i, f, g, o] = gates.chunk(4, D - 1).try_into().expect("four gates");
    let cell = sigmoid(f) * cell + sigmoid(i) * g.tanh();
    (sigmoid(o) * cell.clone().tanh(), cell)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;

    #[test]
    fn a_pair_in_lockstep_gives_each_lstms_own_output() {
        let device = Device::default();
        let (first, second) = (
            LstmConfig::new(6, 5).init(&device),
            LstmConfig::new(6, 5).init(&device),
        );
        let x = [0, 1].map(|_| Tensor::<3>::random([3, 4, 6], Distribution::Default, &device));
        let together = Lstm::forward_pair([&first, &second], x.clone());
        let [x_first, x_second] = x;
        for (pair, alone) in together
            .into_iter()
            .zip([first.forward(x_first), second.forward(x_second)])
        {
            assert_eq!(pair.dims(), [3, 4, 5]);
            pair.into_data().assert_approx_eq::<f32>(
                &alone.into_data(),
                burn::tensor::Tolerance::absolute(1e-6),
            );
        }
    }
}
