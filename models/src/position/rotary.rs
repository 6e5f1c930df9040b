//! Rotary position embedding, RoPE (Su et al. 2021): each pair of features of a query or key at
//! position `m` is rotated by the angle `m θ_i`, `θ_i = base^{−2i/d}`:
//!
//! `(x_a, x_b) ↦ (x_a cos mθ_i − x_b sin mθ_i, x_b cos mθ_i + x_a sin mθ_i)`
//!
//! so that `q_m · k_n` depends on `m − n` only. The pairs are `(i, i + d/2)` (GPT-NeoX / Llama
//! layout) or, with `interleaved`, `(2i, 2i+1)` (the paper's and GPT-J's layout).
//!
//! Shapes: `x [B, h, T, d]` → `[B, h, T, d]`, `d` even.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};

use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`RotaryEncoding`].
///
/// ```
/// use attnzoo_models::attention::{MultiHeadConfig, MultiHeadInput};
/// use attnzoo_models::position::RotaryConfig;
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// let attention = MultiHeadConfig::new(64, 4).try_init(&device)?; // heads of width 16
/// let rotary = RotaryConfig::new(16).try_init()?;
/// // Queries and keys rotated by their positions inside the attention (RoPE).
/// let x = Tensor::<3>::ones([1, 10, 64], &device);
/// let out = attention.forward(MultiHeadInput::self_attn(x).rotary(rotary))?;
/// // RoPE rotates queries and keys, never values: identical tokens mix to identical contexts.
/// let first = out.context.clone().slice([0..1, 0..1, 0..64]).into_data();
/// let last = out.context.slice([0..1, 9..10, 0..64]).into_data();
/// first.assert_approx_eq::<f32>(&last, burn::tensor::Tolerance::absolute(1e-5));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct RotaryConfig {
    /// Width of one head; even.
    pub d_head: usize,
    /// `base` of the frequencies.
    #[config(default = 10000.0)]
    pub base: f64,
    /// Rotate adjacent pairs `(2i, 2i+1)` instead of halves `(i, i + d/2)`.
    #[config(default = false)]
    pub interleaved: bool,
}

/// Rotates queries and keys by their positions. No parameters.
#[derive(Module, Debug)]
pub struct RotaryEncoding {
    /// Width of one head.
    #[module(skip)]
    pub d_head: usize,
    /// Frequency base.
    #[module(skip)]
    pub base: f64,
    /// Pair layout.
    #[module(skip)]
    pub interleaved: bool,
}

impl RotaryConfig {
    /// Checks the width.
    pub fn try_init(&self) -> Result<RotaryEncoding, AttnError> {
        ensure!(
            self.d_head >= 2 && self.d_head % 2 == 0,
            "rotary d_head must be even and positive, got {}",
            self.d_head
        );
        ensure!(
            self.base > 1.0,
            "rotary base must be greater than 1, got {}",
            self.base
        );
        Ok(RotaryEncoding {
            d_head: self.d_head,
            base: self.base,
            interleaved: self.interleaved,
        })
    }
}

impl RotaryEncoding {
    /// Rotates `x [B, h, T, d]`, whose first position is `offset`.
    pub fn apply(&self, x: Tensor<4>, offset: usize) -> Result<Tensor<4>, AttnError> {
        let [batch, heads, len, width] = x.dims();
        ensure!(
            width == self.d_head,
            "rotary encoding for width {} got heads of width {width}",
            self.d_head
        );
        let half = width / 2;
        let (cos, sin) = self.tables(offset, len, &x.device()); // [1, 1, T, d/2]
        let (first, second) = if self.interleaved {
            let pairs = x.reshape([batch, heads, len, half, 2]);
            let first: Tensor<4> = pairs.clone().narrow(4, 0, 1).squeeze_dim(4);
            let second: Tensor<4> = pairs.narrow(4, 1, 1).squeeze_dim(4);
            (first, second)
        } else {
            (x.clone().narrow(3, 0, half), x.narrow(3, half, half))
        };
        let rotated_first = first.clone() * cos.clone() - second.clone() * sin.clone();
        let rotated_second = second * cos + first * sin;
        Ok(if self.interleaved {
            Tensor::stack::<5>(vec![rotated_first, rotated_second], 4)
                .reshape([batch, heads, len, width])
        } else {
            Tensor::cat(vec![rotated_first, rotated_second], 3)
        })
    }

    fn tables(&self, offset: usize, len: usize, device: &Device) -> (Tensor<4>, Tensor<4>) {
        let half = self.d_head / 2;
        let mut cos = Vec::with_capacity(len * half);
        let mut sin = Vec::with_capacity(len * half);
        for position in offset..offset + len {
            for i in 0..half {
                let theta = self.base.powf(-2.0 * i as f64 / self.d_head as f64);
                let angle = position as f64 * theta;
                cos.push(angle.cos() as f32);
                sin.push(angle.sin() as f32);
            }
        }
        let table = |values: Vec<f32>| {
            Tensor::<2>::from_data(TensorData::new(values, [len, half]), device).unsqueeze()
        };
        (table(cos), table(sin))
    }
}
