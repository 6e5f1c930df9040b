//! Rotary position embedding, RoPE (Su et al. 2021): each pair of features of a query or key at
//! position `m` is rotated by the angle `m θ_i`, `θ_i = base^{−2i/d}`:
//!
//! `(x_a, x_b) ↦ a · (x_a cos mθ_i − x_b sin mθ_i, x_b cos mθ_i + x_a sin mθ_i)`
//!
//! so that `q_m · k_n` depends on `m − n` only. The pairs are `(i, i + d/2)` (GPT-NeoX / Llama
//! layout) or, with `interleaved`, `(2i, 2i+1)` (the paper's and GPT-J's layout). The frequencies
//! `θ_i` may be scaled for long contexts and the attention factor `a` (1 unless YaRN sets it) comes
//! with them: see [`super::rope_scaling`]. With a `partial_rotary_factor` below 1 only the first
//! `d = ⌊d_head · factor⌋` features of each head are rotated (GPT-NeoX, Phi, GLM) and the rest pass
//! unchanged; the frequencies are those of width `d`.
//!
//! The angles are computed as transformers computes them, `f32` position times `f32` frequency.
//!
//! Shapes: `x [B, h, T, d_head]` → `[B, h, T, d_head]`, `d` even.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};

use super::rope_scaling::RopeScaling;
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
    /// How the frequencies are scaled for contexts longer than training (none by default).
    #[config(default = "RopeScaling::None")]
    pub scaling: RopeScaling,
    /// Fraction of each head's features that are rotated, in `(0, 1]`: the first
    /// `⌊d_head · factor⌋` (which must be even); 1 rotates them all.
    #[config(default = 1.0)]
    pub partial_rotary_factor: f64,
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
    /// Features rotated: the first `rotary_dim` of each head.
    #[module(skip)]
    pub rotary_dim: usize,
    /// Frequency scaling.
    #[module(skip)]
    pub scaling: RopeScaling,
    /// The scaled inverse frequencies `θ_i`, `i < rotary_dim / 2` (dynamic NTK replaces them
    /// for sequences longer than its original length).
    #[module(skip)]
    pub inv_freq: Vec<f32>,
    /// Multiplier on cos and sin (YaRN's), 1 otherwise.
    #[module(skip)]
    pub attention_factor: f64,
}

impl RotaryConfig {
    /// Checks the width, the base, the rotated fraction and the scaling.
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
        let factor = self.partial_rotary_factor;
        ensure!(
            factor > 0.0 && factor <= 1.0,
            "partial_rotary_factor must be in (0, 1], got {factor}"
        );
        // transformers: `int(head_dim * partial_rotary_factor)`.
        let rotary_dim = (self.d_head as f64 * factor).floor() as usize;
        ensure!(
            rotary_dim >= 2 && rotary_dim % 2 == 0,
            "partial_rotary_factor {factor} of d_head {} rotates {rotary_dim} features; it must be an even number of at least 2",
            self.d_head
        );
        self.scaling.validate()?;
        if let RopeScaling::LongRope {
            short_factor,
            long_factor,
            ..
        } = &self.scaling
        {
            ensure!(
                short_factor.len() == rotary_dim / 2 && long_factor.len() == rotary_dim / 2,
                "longrope rope scaling has {} short and {} long factors; the {rotary_dim} rotated features need {} of each",
                short_factor.len(),
                long_factor.len(),
                rotary_dim / 2
            );
        }
        Ok(RotaryEncoding {
            d_head: self.d_head,
            base: self.base,
            interleaved: self.interleaved,
            rotary_dim,
            scaling: self.scaling.clone(),
            inv_freq: self.scaling.inv_freq(self.base, rotary_dim, 0),
            attention_factor: self.scaling.attention_factor(),
        })
    }
}

impl RotaryEncoding {
    /// The inverse frequencies used for a sequence of `seq_len` positions (`rotary_dim / 2` of them).
    pub fn frequencies(&self, seq_len: usize) -> Vec<f32> {
        if self.scaling.depends_on_length() {
            self.scaling.inv_freq(self.base, self.rotary_dim, seq_len)
        } else {
            self.inv_freq.clone()
        }
    }

    /// Rotates `x [B, h, T, d_head]`, whose first position is `offset`.
    pub fn apply(&self, x: Tensor<4>, offset: usize) -> Result<Tensor<4>, AttnError> {
        let [batch, heads, len, width] = x.dims();
        ensure!(
            width == self.d_head,
            "rotary encoding for width {} got heads of width {width}",
            self.d_head
        );
        let rotary_dim = self.rotary_dim;
        let (x, pass) = if rotary_dim < width {
            (
                x.clone().narrow(3, 0, rotary_dim),
                Some(x.narrow(3, rotary_dim, width - rotary_dim)),
            )
        } else {
            (x, None)
        };
        let half = rotary_dim / 2;
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
        let rotated = if self.interleaved {
            Tensor::stack::<5>(vec![rotated_first, rotated_second], 4)
                .reshape([batch, heads, len, rotary_dim])
        } else {
            Tensor::cat(vec![rotated_first, rotated_second], 3)
        };
        Ok(match pass {
            Some(pass) => Tensor::cat(vec![rotated, pass], 3),
            None => rotated,
        })
    }

    /// `a cos(mθ_i)` and `a sin(mθ_i)` for positions `offset..offset + len`, `[1, 1, len, d/2]`.
    fn tables(&self, offset: usize, len: usize, device: &Device) -> (Tensor<4>, Tensor<4>) {
        let inv_freq = self.frequencies(offset + len);
        let half = inv_freq.len();
        let factor = self.attention_factor as f32;
        let mut cos = Vec::with_capacity(len * half);
        let mut sin = Vec::with_capacity(len * half);
        for position in offset..offset + len {
            for &theta in &inv_freq {
                let angle = position as f32 * theta;
                cos.push(angle.cos() * factor);
                sin.push(angle.sin() * factor);
            }
        }
        let table = |values: Vec<f32>| {
            Tensor::<2>::from_data(TensorData::new(values, [len, half]), device).unsqueeze()
        };
        (table(cos), table(sin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::{Distribution, Tolerance};

    #[test]
    fn partial_rotary_rotates_the_first_features_only_and_yarn_scales_their_norm() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let x = Tensor::<4>::random([1, 2, 5, 10], Distribution::Default, &device);
        let rotary = RotaryConfig::new(10)
            .with_partial_rotary_factor(0.45) // ⌊4.5⌋ = 4 features rotated
            .with_scaling(RopeScaling::yarn(4.0, 8))
            .try_init()
            .unwrap();
        assert_eq!((rotary.rotary_dim, rotary.inv_freq.len()), (4, 2));
        let y = rotary.apply(x.clone(), 3).unwrap();
        y.clone()
            .narrow(3, 4, 6)
            .into_data()
            .assert_eq(&x.clone().narrow(3, 4, 6).into_data(), true);
        // A rotation keeps each pair's length; YaRN's attention factor multiplies it.
        let norm = |t: Tensor<4>| (t.clone() * t).narrow(3, 0, 4).sum_dim(3).sqrt();
        let factor = rotary.attention_factor as f32;
        assert!((factor - (0.1 * 4f32.ln() + 1.0)).abs() < 1e-6);
        norm(y)
            .into_data()
            .assert_approx_eq::<f32>(&(norm(x) * factor).into_data(), Tolerance::absolute(1e-5));
    }

    #[test]
    fn dynamic_frequencies_follow_the_length_of_the_call() {
        let rotary = RotaryConfig::new(8)
            .with_scaling(RopeScaling::DynamicNtk {
                factor: 2.0,
                original_max_position_embeddings: 4,
            })
            .try_init()
            .unwrap();
        let plain = RotaryConfig::new(8).try_init().unwrap();
        assert_eq!(rotary.frequencies(4), plain.frequencies(4));
        assert!(rotary.frequencies(9)[3] < plain.frequencies(9)[3]);
        // Rotating positions 6..8 alone equals the tail of rotating 0..8 (the same length).
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let x = Tensor::<4>::random([1, 1, 8, 8], Distribution::Default, &device);
        let whole = rotary.apply(x.clone(), 0).unwrap().narrow(2, 6, 2);
        let tail = rotary.apply(x.narrow(2, 6, 2), 6).unwrap();
        tail.into_data()
            .assert_approx_eq::<f32>(&whole.into_data(), Tolerance::absolute(1e-6));
    }

    #[test]
    fn bad_settings_name_the_value() {
        let error = |config: RotaryConfig| config.try_init().unwrap_err().to_string();
        assert_eq!(
            error(RotaryConfig::new(8).with_partial_rotary_factor(0.0)),
            "partial_rotary_factor must be in (0, 1], got 0"
        );
        assert_eq!(
            error(RotaryConfig::new(10).with_partial_rotary_factor(0.3)),
            "partial_rotary_factor 0.3 of d_head 10 rotates 3 features; it must be an even number of at least 2"
        );
        assert_eq!(
            error(RotaryConfig::new(8).with_scaling(RopeScaling::Linear { factor: 0.0 })),
            "linear rope scaling factor must be positive and finite, got 0"
        );
    }
}
