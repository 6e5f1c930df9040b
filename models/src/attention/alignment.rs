//! Alignment attention for RNN decoders (Bahdanau et al. 2015; Luong et al. 2015).
//!
//! A decoder query `h_t` attends over the encoder memory `h̄_s`:
//!
//! `a_t(s) = softmax_s score(h_t, h̄_s)` over unpadded `s`, `c_t = Σ_s a_t(s) h̄_s`.
//!
//! The score function is picked by [`AlignmentScore`], so a model switches mechanism by config:
//! - [`Additive`](AlignmentScore::Additive) (Bahdanau): `v_aᵀ tanh(W_1 h_t + W_2 h̄_s)` — [`super::additive`]
//! - [`Dot`](AlignmentScore::Dot), [`General`](AlignmentScore::General), [`Concat`](AlignmentScore::Concat) (Luong) — [`super::luong`]
//! - [`Location`](AlignmentScore::Location) (Luong): `a_t = softmax(W_a h_t)` — [`super::location`]
//!
//! Shapes: `query [B, T, H]` (all decoder steps) or `[B, H]` (one step, [`Alignment::step`]),
//! `memory [B, S, H]`, `padding [B, S]` (`true` = padding) → `context [B, T, H]`, `weights [B, T, S]`.

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Bool, Device, Tensor};

use super::additive::{Additive, AdditiveConfig};
use super::location::{Location, LocationConfig};
use super::luong::{Luong, LuongConfig, LuongScore};
use super::masking::masked_softmax;
use crate::error::ensure;
use crate::AttnError;

/// The score function of an alignment attention.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum AlignmentScore {
    /// Bahdanau: `v_aᵀ tanh(W_1 h_t + W_2 h̄_s)`.
    Additive,
    /// Luong dot: `h_tᵀ h̄_s`.
    Dot,
    /// Luong general: `(W_a h_t)ᵀ h̄_s`.
    General,
    /// Luong concat: `v_aᵀ tanh(W_a [h_t; h̄_s])`.
    Concat,
    /// Luong location: `a_t = softmax(W_a h_t)` over the first `S ≤ max_source_len` positions.
    Location {
        /// The longest source the location scores cover.
        max_source_len: usize,
    },
}

/// Configuration of [`Alignment`].
///
/// ```
/// use attnzoo_models::attention::{AlignmentConfig, AlignmentScore};
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// // Bahdanau attention of decoder states over an encoder memory of 5 positions, width 16.
/// let attention = AlignmentConfig::new(16, AlignmentScore::Additive).try_init(&device)?;
/// let query = Tensor::<3>::ones([2, 3, 16], &device); // [batch, target steps, H]
/// let memory = Tensor::<3>::ones([2, 5, 16], &device); // [batch, source, H]
/// let out = attention.forward(query, memory, None)?;
/// assert_eq!(out.context.dims(), [2, 3, 16]);
/// // Five identical memory positions score alike: each gets a fifth of the attention.
/// let weights = out.weights.into_data(); // [batch, target steps, source]
/// assert!(weights.iter::<f32>().all(|w| (w - 0.2).abs() < 1e-6));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct AlignmentConfig {
    /// Width `H` of the decoder query and the encoder memory.
    pub hidden_dim: usize,
    /// The score function.
    pub score: AlignmentScore,
}

/// Alignment attention: one of the score functions, then the masked softmax and weighted sum.
#[derive(Module, Debug)]
pub enum Alignment {
    /// Bahdanau.
    Additive(Additive),
    /// Luong dot, general or concat.
    Luong(Luong),
    /// Luong location-based.
    Location(Location),
}

/// Context vectors and the weights that made them.
#[derive(Debug, Clone)]
pub struct AlignmentOutput<const D: usize> {
    /// `[B, T, H]` (or `[B, H]` for one step).
    pub context: Tensor<D>,
    /// `[B, T, S]` (or `[B, S]` for one step).
    pub weights: Tensor<D>,
}

impl AlignmentConfig {
    /// Builds the module, checking the sizes.
    pub fn try_init(&self, device: &Device) -> Result<Alignment, AttnError> {
        ensure!(
            self.hidden_dim >= 1,
            "alignment hidden_dim must be at least 1, got {}",
            self.hidden_dim
        );
        let hidden = self.hidden_dim;
        Ok(match self.score {
            AlignmentScore::Additive => {
                Alignment::Additive(AdditiveConfig::new(hidden).init(device))
            }
            AlignmentScore::Dot => {
                Alignment::Luong(LuongConfig::new(hidden, LuongScore::Dot).init(device))
            }
            AlignmentScore::General => {
                Alignment::Luong(LuongConfig::new(hidden, LuongScore::General).init(device))
            }
            AlignmentScore::Concat => {
                Alignment::Luong(LuongConfig::new(hidden, LuongScore::Concat).init(device))
            }
            AlignmentScore::Location { max_source_len } => {
                ensure!(
                    max_source_len >= 1,
                    "location attention max_source_len must be at least 1, got {max_source_len}"
                );
                Alignment::Location(LocationConfig::new(hidden, max_source_len).init(device))
            }
        })
    }
}

impl Alignment {
    /// The memory's part of every score, `[B, S, H]` (`W_2 h̄_s` for Bahdanau): a decoder
    /// computes it once per source sentence and passes it to [`step_with_keys`](Self::step_with_keys).
    pub fn keys(&self, memory: Tensor<3>) -> Tensor<3> {
        match self {
            Alignment::Additive(additive) => additive.keys(memory),
            Alignment::Luong(luong) => luong.keys(memory),
            Alignment::Location(_) => memory,
        }
    }

    /// Every decoder step at once: `query [B, T, H]`, `memory [B, S, H]`, `padding [B, S]`.
    pub fn forward(
        &self,
        query: Tensor<3>,
        memory: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
    ) -> Result<AlignmentOutput<3>, AttnError> {
        let keys = self.keys(memory.clone());
        self.forward_with_keys(query, memory, keys, padding)
    }

    /// [`forward`](Self::forward) with the memory's [`keys`](Self::keys) already computed.
    pub fn forward_with_keys(
        &self,
        query: Tensor<3>,
        memory: Tensor<3>,
        keys: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
    ) -> Result<AlignmentOutput<3>, AttnError> {
        let [batch, _, width] = query.dims();
        let [memory_batch, source_len, memory_width] = memory.dims();
        ensure!(
            batch == memory_batch && width == memory_width,
            "query [B, T, H] = {:?} does not match memory [B, S, H] = {:?}",
            query.dims(),
            memory.dims()
        );
        if let Some(padding) = &padding {
            ensure!(
                padding.dims() == [batch, source_len],
                "padding mask shape {:?} is not [batch, source_len] = [{batch}, {source_len}]",
                padding.dims()
            );
        }
        let scores = match self {
            Alignment::Additive(additive) => additive.scores_with_keys(query, keys),
            Alignment::Luong(luong) => luong.scores_with_keys(query, keys),
            Alignment::Location(location) => location.scores(query, source_len)?,
        };
        let weights = masked_softmax(scores, padding.map(|p| p.unsqueeze_dim(1)));
        let context = weights.clone().matmul(memory);
        Ok(AlignmentOutput { context, weights })
    }

    /// One decoder step: `query [B, H]`, `memory [B, S, H]`, `padding [B, S]`.
    pub fn step(
        &self,
        query: Tensor<2>,
        memory: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
    ) -> Result<AlignmentOutput<2>, AttnError> {
        let keys = self.keys(memory.clone());
        self.step_with_keys(query, memory, keys, padding)
    }

    /// [`step`](Self::step) with the memory's [`keys`](Self::keys) already computed.
    pub fn step_with_keys(
        &self,
        query: Tensor<2>,
        memory: Tensor<3>,
        keys: Tensor<3>,
        padding: Option<Tensor<2, Bool>>,
    ) -> Result<AlignmentOutput<2>, AttnError> {
        let output = self.forward_with_keys(query.unsqueeze_dim(1), memory, keys, padding)?;
        Ok(AlignmentOutput {
            context: output.context.squeeze_dim(1),
            weights: output.weights.squeeze_dim(1),
        })
    }
}
