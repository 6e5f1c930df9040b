//! RoPE scaling: the rotary frequencies stretched so that a model trained on `L` positions reads
//! longer contexts, as `transformers.modeling_rope_utils` computes them (`ROPE_INIT_FUNCTIONS`).
//!
//! Rotary embedding rotates feature pair `i` of a head at position `m` by `m θ_i`, with
//! `θ_i = base^{−2i/d}`, `i < d/2`, `d` the rotated width. A scaling with factor `s` maps the
//! `θ_i` to new ones `θ'_i` and may give an attention factor `a` that multiplies both cos and
//! sin, so every query·key score is multiplied by `a²`:
//!
//! - **linear**, position interpolation (Chen et al. 2023, "Extending Context Window of Large
//!   Language Models via Positional Interpolation"): `θ'_i = θ_i / s`, i.e. position `m` read as `m / s`.
//! - **dynamic NTK** (bloc97 and emozilla, 2023): at sequence length `n > L` the base grows,
//!   `base' = base · (s·n/L − (s − 1))^{d/(d−2)}`, `θ'_i = base'^{−2i/d}`; up to `L` positions
//!   nothing changes. It depends on the length of the sequence at call time (`n` = the call's
//!   first position + its length), as transformers' `dynamic_rope_update` does. transformers keeps
//!   the largest `n` it has seen until a call within `L` resets it; here each call uses its own
//!   `n`, which is the same for a whole sequence at once and for token-by-token decoding (keys
//!   cached at earlier steps keep the rotation of their step in both).
//! - **YaRN** (Peng et al. 2023, "YaRN: Efficient Context Window Extension of Large Language
//!   Models"): high frequencies (more than `β_fast` rotations over `L`) are kept, low ones (fewer
//!   than `β_slow`) interpolated, and a linear ramp between: with
//!   `c(β) = d · ln(L / (2π β)) / (2 ln base)`, `low = ⌊c(β_fast)⌋`, `high = ⌈c(β_slow)⌉` (without
//!   the rounding when not `truncate`), clamped to `[0, d − 1]`,
//!   `γ_i = 1 − clamp((i − low) / (high − low), 0, 1)` and `θ'_i = (θ_i / s)(1 − γ_i) + θ_i γ_i`.
//!   The attention factor is `a = 0.1 ln s + 1` (`mscale`), or
//!   `(0.1 μ ln s + 1) / (0.1 μ_all ln s + 1)` with DeepSeek's `mscale` μ and `mscale_all_dim` μ_all,
//!   or the one given.
//! - **Llama 3** (Meta, "The Llama 3 Herd of Models", 2024): by wavelength `λ_i = 2π / θ_i`,
//!   `λ_i < L / high_freq_factor` keeps `θ_i`, `λ_i > L / low_freq_factor` gets `θ_i / s`, and in
//!   between `(1 − σ_i) θ_i / s + σ_i θ_i` with `σ_i = (L / λ_i − low_freq_factor) /
//!   (high_freq_factor − low_freq_factor)`.
//!
//! The frequencies are computed in `f32` in the same order of operations as transformers (its
//! tensors are `f32`), so that a checkpoint sees the same angles here as there.
//!
//! Shapes: the frequency table has `d/2` entries; see [`super::rotary`] for where it is used.

use burn::config::Config;

use crate::error::ensure;
use crate::AttnError;

/// How the rotary frequencies are scaled; see the module docs for each formula. The names of the
/// fields are transformers' `rope_parameters` keys.
///
/// ```
/// use attnzoo_models::position::{RopeScaling, RotaryConfig};
///
/// // Llama 3.1's settings: a model trained on 8,192 positions, read 8× longer.
/// let rotary = RotaryConfig::new(128)
///     .with_base(500_000.0)
///     .with_scaling(RopeScaling::llama3(8.0, 8192))
///     .try_init()?;
/// let frequencies = rotary.frequencies(1);
/// assert_eq!(frequencies.len(), 64);
/// assert_eq!(frequencies[0], 1.0); // the highest frequency is kept
/// // and the lowest one is divided by the factor
/// let plain = RotaryConfig::new(128).with_base(500_000.0).try_init()?.frequencies(1);
/// assert!((frequencies[63] - plain[63] / 8.0).abs() < 1e-12);
/// // A factor of zero is refused, by name.
/// let error = RotaryConfig::new(128).with_scaling(RopeScaling::Linear { factor: 0.0 }).try_init();
/// assert_eq!(error.unwrap_err().to_string(), "linear rope scaling factor must be positive and finite, got 0");
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug, PartialEq)]
pub enum RopeScaling {
    /// The frequencies of the original RoPE (transformers' `rope_type: "default"`).
    None,
    /// Position interpolation: `θ_i / factor` (transformers' `"linear"`).
    Linear {
        /// Stretch `s` of the context, > 0 (≥ 1 to lengthen it).
        factor: f64,
    },
    /// Dynamic NTK-aware scaling (transformers' `"dynamic"`).
    DynamicNtk {
        /// Stretch `s`, > 0.
        factor: f64,
        /// `L`, the positions the model was trained on (transformers' `max_position_embeddings`
        /// of the model config); sequences up to this length keep the original frequencies.
        original_max_position_embeddings: usize,
    },
    /// YaRN (transformers' `"yarn"`).
    Yarn {
        /// Stretch `s`, > 0.
        factor: f64,
        /// `L`, the positions the model was trained on.
        original_max_position_embeddings: usize,
        /// `β_fast`: dimensions rotating more than this many times over `L` are kept (32 in the paper).
        beta_fast: f64,
        /// `β_slow`: dimensions rotating fewer than this many times are interpolated (1 in the paper).
        beta_slow: f64,
        /// Multiplier on cos and sin; `None` derives it from `factor` (and `mscale`).
        attention_factor: Option<f64>,
        /// DeepSeek's `mscale` μ; used with `mscale_all_dim` when `attention_factor` is `None`.
        mscale: Option<f64>,
        /// DeepSeek's `mscale_all_dim` μ_all.
        mscale_all_dim: Option<f64>,
        /// Round the ramp's ends down and up to whole dimensions (transformers' default, `true`).
        truncate: bool,
    },
    /// Llama 3's frequency-dependent interpolation (transformers' `"llama3"`).
    Llama3 {
        /// Stretch `s` of low frequencies, > 0 (8 in Llama 3.1).
        factor: f64,
        /// Wavelengths above `L / low_freq_factor` are divided by `factor` (1 in Llama 3.1).
        low_freq_factor: f64,
        /// Wavelengths below `L / high_freq_factor` are kept (4 in Llama 3.1).
        high_freq_factor: f64,
        /// `L`, the positions the model was trained on (8,192 in Llama 3.1).
        original_max_position_embeddings: usize,
    },
    /// LongRoPE (Ding et al. 2024; Phi-3, transformers' `"longrope"`): `θ_i / λ_i` with one
    /// factor per frequency, the short factors for sequences up to `L` positions and the long
    /// ones past it (the whole sequence's frequencies switch: `transformers`' `generate`
    /// recomputes every key when a sequence grows past `L`, see [`switches_at`](Self::switches_at)).
    LongRope {
        /// `λ_i` up to `L` positions, `rotary_dim / 2` of them.
        short_factor: Vec<f64>,
        /// `λ_i` past `L`.
        long_factor: Vec<f64>,
        /// Stretch `s` (`factor`, else `max_position_embeddings / L`): the attention factor
        /// `√(1 + ln s / ln L)` on cos and sin (1 for `s ≤ 1`) unless given.
        factor: f64,
        /// `L`.
        original_max_position_embeddings: usize,
        /// Multiplier on cos and sin; `None` derives it from `factor`.
        attention_factor: Option<f64>,
    },
}

impl RopeScaling {
    /// YaRN with the paper's defaults: `β_fast = 32`, `β_slow = 1`, truncated ramp, attention
    /// factor `0.1 ln s + 1`.
    pub fn yarn(factor: f64, original_max_position_embeddings: usize) -> Self {
        RopeScaling::Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast: 32.0,
            beta_slow: 1.0,
            attention_factor: None,
            mscale: None,
            mscale_all_dim: None,
            truncate: true,
        }
    }

    /// Llama 3 with Llama 3.1's `low_freq_factor = 1`, `high_freq_factor = 4`.
    pub fn llama3(factor: f64, original_max_position_embeddings: usize) -> Self {
        RopeScaling::Llama3 {
            factor,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings,
        }
    }

    /// transformers' `rope_type` of this scaling.
    pub fn rope_type(&self) -> &'static str {
        match self {
            RopeScaling::None => "default",
            RopeScaling::Linear { .. } => "linear",
            RopeScaling::DynamicNtk { .. } => "dynamic",
            RopeScaling::Yarn { .. } => "yarn",
            RopeScaling::Llama3 { .. } => "llama3",
            RopeScaling::LongRope { .. } => "longrope",
        }
    }

    /// Checks every setting; the message names the bad one.
    pub fn validate(&self) -> Result<(), AttnError> {
        let kind = self.rope_type();
        let positive = |name: &str, value: f64| -> Result<(), AttnError> {
            ensure!(
                value > 0.0 && value.is_finite(),
                "{kind} rope scaling {name} must be positive and finite, got {value}"
            );
            Ok(())
        };
        let length = |value: usize| -> Result<(), AttnError> {
            ensure!(
                value >= 1,
                "{kind} rope scaling original_max_position_embeddings must be at least 1, got {value}"
            );
            Ok(())
        };
        match *self {
            RopeScaling::None => {}
            RopeScaling::LongRope {
                ref short_factor,
                ref long_factor,
                factor,
                original_max_position_embeddings,
                attention_factor,
            } => {
                positive("factor", factor)?;
                length(original_max_position_embeddings)?;
                for (name, factors) in
                    [("short_factor", short_factor), ("long_factor", long_factor)]
                {
                    ensure!(!factors.is_empty(), "longrope rope scaling {name} is empty");
                    for &value in factors {
                        positive(name, value)?;
                    }
                }
                if let Some(attention_factor) = attention_factor {
                    positive("attention_factor", attention_factor)?;
                }
            }
            RopeScaling::Linear { factor } => positive("factor", factor)?,
            RopeScaling::DynamicNtk {
                factor,
                original_max_position_embeddings,
            } => {
                positive("factor", factor)?;
                length(original_max_position_embeddings)?;
            }
            RopeScaling::Yarn {
                factor,
                original_max_position_embeddings,
                beta_fast,
                beta_slow,
                attention_factor,
                mscale,
                mscale_all_dim,
                truncate: _,
            } => {
                positive("factor", factor)?;
                length(original_max_position_embeddings)?;
                positive("beta_fast", beta_fast)?;
                positive("beta_slow", beta_slow)?;
                ensure!(
                    beta_fast > beta_slow,
                    "yarn rope scaling beta_fast {beta_fast} must be greater than beta_slow {beta_slow}"
                );
                if let Some(attention_factor) = attention_factor {
                    positive("attention_factor", attention_factor)?;
                }
                for (name, value) in [("mscale", mscale), ("mscale_all_dim", mscale_all_dim)] {
                    if let Some(value) = value {
                        ensure!(
                            value.is_finite(),
                            "yarn rope scaling {name} must be finite, got {value}"
                        );
                    }
                }
            }
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings,
            } => {
                positive("factor", factor)?;
                positive("low_freq_factor", low_freq_factor)?;
                positive("high_freq_factor", high_freq_factor)?;
                ensure!(
                    high_freq_factor > low_freq_factor,
                    "llama3 rope scaling high_freq_factor {high_freq_factor} must be greater than low_freq_factor {low_freq_factor}"
                );
                length(original_max_position_embeddings)?;
            }
        }
        Ok(())
    }

    /// Whether the frequencies depend on the sequence length (dynamic NTK, LongRoPE).
    pub fn depends_on_length(&self) -> bool {
        matches!(
            self,
            RopeScaling::DynamicNtk { .. } | RopeScaling::LongRope { .. }
        )
    }

    /// LongRoPE's `L`: a sequence growing past it changes the frequencies of every position, and
    /// `transformers`' `generate` then runs the whole sequence again (Phi-3's
    /// `prepare_inputs_for_generation` drops the cache); `None` for the others.
    pub fn switches_at(&self) -> Option<usize> {
        match *self {
            RopeScaling::LongRope {
                original_max_position_embeddings,
                ..
            } => Some(original_max_position_embeddings),
            _ => None,
        }
    }

    /// The multiplier on cos and sin: YaRN's and LongRoPE's, 1 for the others.
    pub fn attention_factor(&self) -> f64 {
        if let RopeScaling::LongRope {
            factor,
            original_max_position_embeddings,
            attention_factor,
            ..
        } = *self
        {
            return match attention_factor {
                Some(given) => given,
                None if factor <= 1.0 => 1.0,
                None => (1.0 + factor.ln() / (original_max_position_embeddings as f64).ln()).sqrt(),
            };
        }
        let RopeScaling::Yarn {
            factor,
            attention_factor,
            mscale,
            mscale_all_dim,
            ..
        } = *self
        else {
            return 1.0;
        };
        let get_mscale = |scale: f64, mscale: f64| {
            if scale <= 1.0 {
                1.0
            } else {
                0.1 * mscale * scale.ln() + 1.0
            }
        };
        match (attention_factor, mscale, mscale_all_dim) {
            (Some(given), _, _) => given,
            // transformers takes both only when both are set and non-zero.
            (None, Some(mscale), Some(all)) if mscale != 0.0 && all != 0.0 => {
                get_mscale(factor, mscale) / get_mscale(factor, all)
            }
            _ => get_mscale(factor, 1.0),
        }
    }

    /// The scaled inverse frequencies `θ'_i`, `i < dim/2`, of a rotated width `dim` (even) and
    /// frequency `base`, for a sequence of `seq_len` positions (read by dynamic NTK only).
    pub fn inv_freq(&self, base: f64, dim: usize, seq_len: usize) -> Vec<f32> {
        match *self {
            RopeScaling::None => default_inv_freq(base as f32, dim),
            RopeScaling::LongRope {
                ref short_factor,
                ref long_factor,
                original_max_position_embeddings,
                ..
            } => {
                let factors = match seq_len > original_max_position_embeddings {
                    true => long_factor,
                    false => short_factor,
                };
                // transformers: `1.0 / (ext_factors * base ** (arange(0, dim, 2).float() / dim))`
                // in f32.
                (0..dim)
                    .step_by(2)
                    .zip(factors)
                    .map(|(i, &factor)| {
                        1.0 / (factor as f32 * (base as f32).powf(i as f32 / dim as f32))
                    })
                    .collect()
            }
            RopeScaling::Linear { factor } => default_inv_freq(base as f32, dim)
                .into_iter()
                .map(|f| f / factor as f32)
                .collect(),
            RopeScaling::DynamicNtk {
                factor,
                original_max_position_embeddings: max,
            } => {
                if seq_len <= max {
                    return default_inv_freq(base as f32, dim);
                }
                // transformers computes the new base from a tensor `seq_len`: in f32.
                let ratio = factor as f32 * seq_len as f32 / max as f32 - (factor - 1.0) as f32;
                let grown = base as f32 * ratio.powf((dim as f64 / (dim as f64 - 2.0)) as f32);
                default_inv_freq(grown, dim)
            }
            RopeScaling::Yarn {
                factor,
                original_max_position_embeddings,
                beta_fast,
                beta_slow,
                truncate,
                ..
            } => yarn_inv_freq(
                base,
                dim,
                factor,
                original_max_position_embeddings,
                (beta_fast, beta_slow),
                truncate,
            ),
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings,
            } => {
                let old_context = original_max_position_embeddings as f64;
                let low_freq_wavelen = (old_context / low_freq_factor) as f32;
                let high_freq_wavelen = (old_context / high_freq_factor) as f32;
                let (factor, low, span) = (
                    factor as f32,
                    low_freq_factor as f32,
                    (high_freq_factor - low_freq_factor) as f32,
                );
                default_inv_freq(base as f32, dim)
                    .into_iter()
                    .map(|inv_freq| {
                        let wavelen = (2.0 * std::f64::consts::PI) as f32 / inv_freq;
                        if wavelen < high_freq_wavelen {
                            inv_freq
                        } else if wavelen > low_freq_wavelen {
                            inv_freq / factor
                        } else {
                            let smooth = (old_context as f32 / wavelen - low) / span;
                            (1.0 - smooth) * inv_freq / factor + smooth * inv_freq
                        }
                    })
                    .collect()
            }
        }
    }
}

/// `1 / base^{2i/dim}` in f32, as `1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))`.
fn default_inv_freq(base: f32, dim: usize) -> Vec<f32> {
    (0..dim)
        .step_by(2)
        .map(|i| 1.0 / base.powf(i as f32 / dim as f32))
        .collect()
}

/// YaRN's blend of interpolated and extrapolated frequencies (`_compute_yarn_parameters`).
fn yarn_inv_freq(
    base: f64,
    dim: usize,
    factor: f64,
    original_max_position_embeddings: usize,
    (beta_fast, beta_slow): (f64, f64),
    truncate: bool,
) -> Vec<f32> {
    // The number of the dimension that turns `rotations` times over the original context.
    let correction_dim = |rotations: f64| {
        dim as f64
            * (original_max_position_embeddings as f64 / (rotations * 2.0 * std::f64::consts::PI))
                .ln()
            / (2.0 * base.ln())
    };
    let (mut low, mut high) = (correction_dim(beta_fast), correction_dim(beta_slow));
    if truncate {
        (low, high) = (low.floor(), high.ceil());
    }
    let (low, mut high) = (low.max(0.0), high.min(dim as f64 - 1.0));
    if low == high {
        high += 0.001; // transformers' guard against a zero-width ramp
    }
    let (low, width) = (low as f32, (high - low) as f32);
    let factor = factor as f32;
    (0..dim / 2)
        .map(|i| {
            let pos_freq = (base as f32).powf((2 * i) as f32 / dim as f32);
            let extrapolation = 1.0 / pos_freq;
            let interpolation = 1.0 / (factor * pos_freq);
            let ramp = ((i as f32 - low) / width).clamp(0.0, 1.0);
            let keep = 1.0 - ramp;
            interpolation * (1.0 - keep) + extrapolation * keep
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f32], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!(
                (*x as f64 - y).abs() <= 1e-6 * y.abs(),
                "{a:?} differs from {b:?}"
            );
        }
    }

    #[test]
    fn linear_divides_every_frequency_by_the_factor() {
        let plain = RopeScaling::None.inv_freq(10000.0, 8, 1);
        close(&plain, &[1.0, 0.1, 0.01, 0.001]);
        let linear = RopeScaling::Linear { factor: 4.0 }.inv_freq(10000.0, 8, 1);
        close(&linear, &[0.25, 0.025, 0.0025, 0.00025]);
    }

    #[test]
    fn dynamic_ntk_keeps_short_sequences_and_grows_the_base_past_the_original_length() {
        let dynamic = RopeScaling::DynamicNtk {
            factor: 2.0,
            original_max_position_embeddings: 16,
        };
        assert!(dynamic.depends_on_length());
        assert_eq!(
            dynamic.inv_freq(10000.0, 8, 16),
            RopeScaling::None.inv_freq(10000.0, 8, 16)
        );
        // n = 32, L = 16, s = 2: base' = base · (2·2 − 1)^{8/6}.
        let base = 10000.0 * 3f64.powf(8.0 / 6.0);
        let expected: Vec<f64> = (0..4).map(|i| base.powf(-(2 * i) as f64 / 8.0)).collect();
        close(&dynamic.inv_freq(10000.0, 8, 32), &expected);
    }

    #[test]
    fn yarn_keeps_high_frequencies_interpolates_low_ones_and_scales_attention() {
        // d = 16, base 10000, L = 64: c(32) = 16 ln(64/(64π)) / (2 ln 10⁴) < 0 → low = 0;
        // c(1) = 16 ln(64/2π) / (2 ln 10⁴) = 2.02 → high = 3.
        let yarn = RopeScaling::yarn(4.0, 64);
        let plain = RopeScaling::None.inv_freq(10000.0, 16, 1);
        let scaled = yarn.inv_freq(10000.0, 16, 1);
        let ramp = |i: usize| (i as f64 / 3.0).min(1.0);
        let expected: Vec<f64> = (0..8)
            .map(|i| {
                let theta = plain[i] as f64;
                theta / 4.0 * ramp(i) + theta * (1.0 - ramp(i))
            })
            .collect();
        close(&scaled, &expected);
        assert!((yarn.attention_factor() - (0.1 * 4f64.ln() + 1.0)).abs() < 1e-12);
        // DeepSeek's mscale: equal μ and μ_all cancel.
        let RopeScaling::Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast,
            beta_slow,
            truncate,
            ..
        } = yarn
        else {
            unreachable!()
        };
        let deepseek = RopeScaling::Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast,
            beta_slow,
            attention_factor: None,
            mscale: Some(0.707),
            mscale_all_dim: Some(0.707),
            truncate,
        };
        assert_eq!(deepseek.attention_factor(), 1.0);
        assert_eq!(RopeScaling::Linear { factor: 4.0 }.attention_factor(), 1.0);
    }

    #[test]
    fn llama3_keeps_short_wavelengths_divides_long_ones_and_blends_between() {
        // L = 64: wavelengths below 16 kept, above 64 divided, between blended.
        let llama3 = RopeScaling::llama3(8.0, 64);
        let plain = RopeScaling::None.inv_freq(10000.0, 8, 1);
        let scaled = llama3.inv_freq(10000.0, 8, 1);
        // λ = 2π/θ: 6.3 (kept), 62.8 (blended), 628 and 6283 (divided).
        assert_eq!(scaled[0], plain[0]);
        assert!((scaled[2] - plain[2] / 8.0).abs() < 1e-9);
        assert!((scaled[3] - plain[3] / 8.0).abs() < 1e-9);
        let wavelen = 2.0 * std::f64::consts::PI / plain[1] as f64;
        let smooth = (64.0 / wavelen - 1.0) / 3.0;
        let theta = plain[1] as f64;
        close(
            &scaled[1..2],
            &[(1.0 - smooth) * theta / 8.0 + smooth * theta],
        );
    }

    #[test]
    fn bad_settings_name_the_value() {
        let error = |scaling: RopeScaling| scaling.validate().unwrap_err().to_string();
        assert_eq!(
            error(RopeScaling::Linear { factor: -1.0 }),
            "linear rope scaling factor must be positive and finite, got -1"
        );
        assert_eq!(
            error(RopeScaling::DynamicNtk {
                factor: f64::NAN,
                original_max_position_embeddings: 4
            }),
            "dynamic rope scaling factor must be positive and finite, got NaN"
        );
        assert_eq!(
            error(RopeScaling::yarn(f64::INFINITY, 4)),
            "yarn rope scaling factor must be positive and finite, got inf"
        );
        assert_eq!(
            error(RopeScaling::yarn(2.0, 0)),
            "yarn rope scaling original_max_position_embeddings must be at least 1, got 0"
        );
        let RopeScaling::Yarn {
            factor,
            original_max_position_embeddings,
            ..
        } = RopeScaling::yarn(2.0, 4)
        else {
            unreachable!()
        };
        let swapped = RopeScaling::Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast: 1.0,
            beta_slow: 32.0,
            attention_factor: Some(0.0),
            mscale: None,
            mscale_all_dim: None,
            truncate: true,
        };
        assert_eq!(
            error(swapped),
            "yarn rope scaling beta_fast 1 must be greater than beta_slow 32"
        );
        assert_eq!(
            error(RopeScaling::Llama3 {
                factor: 8.0,
                low_freq_factor: 4.0,
                high_freq_factor: 1.0,
                original_max_position_embeddings: 8192
            }),
            "llama3 rope scaling high_freq_factor 1 must be greater than low_freq_factor 4"
        );
        assert_eq!(
            error(RopeScaling::llama3(0.0, 8192)),
            "llama3 rope scaling factor must be positive and finite, got 0"
        );
    }
}
