//! Sinusoidal position encoding (Vaswani et al. 2017; seed 001's `PositionalEncoding`):
//!
//! `PE(pos, 2i) = sin(pos / 10000^{2i/d})`, `PE(pos, 2i+1) = cos(pos / 10000^{2i/d})`, `x + PE`.
//!
//! Shapes: `x [B, T, d_model]` → `[B, T, d_model]`, `T ≤ max_len`. The table is computed once, in
//! f32 in the same order of operations as the PyTorch reference.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};

use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`SinusoidalPosition`].
#[derive(Config, Debug)]
pub struct SinusoidalPositionConfig {
    /// Model width; even.
    pub d_model: usize,
    /// Longest sequence.
    #[config(default = 5000)]
    pub max_len: usize,
}

/// Adds the fixed sinusoidal table.
#[derive(Module, Debug)]
pub struct SinusoidalPosition {
    /// `[max_len, d_model]`, not trained.
    #[module(skip)]
    pub table: Tensor<2>,
}

impl SinusoidalPositionConfig {
    /// Computes the table.
    pub fn try_init(&self, device: &Device) -> Result<SinusoidalPosition, AttnError> {
        let (d_model, max_len) = (self.d_model, self.max_len);
        ensure!(
            d_model >= 2 && d_model % 2 == 0,
            "sinusoidal d_model must be even and positive, got {d_model}"
        );
        let step = -(10000.0f64.ln() / d_model as f64) as f32;
        let div_term: Vec<f32> = (0..d_model)
            .step_by(2)
            .map(|i| (i as f32 * step).exp())
            .collect();
        let mut table = vec![0.0f32; max_len * d_model];
        for pos in 0..max_len {
            for (pair, &div) in div_term.iter().enumerate() {
                let angle = pos as f32 * div;
                table[pos * d_model + 2 * pair] = angle.sin();
                table[pos * d_model + 2 * pair + 1] = angle.cos();
            }
        }
        Ok(SinusoidalPosition {
            table: Tensor::from_data(TensorData::new(table, [max_len, d_model]), device),
        })
    }
}

impl SinusoidalPosition {
    /// `x + PE[offset .. offset + T]`.
    pub fn forward(&self, x: Tensor<3>, offset: usize) -> Result<Tensor<3>, AttnError> {
        let [_, len, width] = x.dims();
        let [max_len, d_model] = self.table.dims();
        ensure!(
            width == d_model,
            "input width {width} is not the encoding's d_model {d_model}"
        );
        ensure!(
            offset + len <= max_len,
            "positions up to {} exceed max_len {max_len}",
            offset + len
        );
        Ok(x + self.table.clone().narrow(0, offset, len).unsqueeze())
    }
}
