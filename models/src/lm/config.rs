//! The `config.json` of a Hugging Face decoder LM, read as `transformers` 4.x writes it
//! (`rope_theta`, `rope_scaling`) and as 5.x does (`rope_parameters`), for the families
//! [`CausalLm`] builds, as each [`Family`] entry of [`FAMILIES`](super::FAMILIES) says; and the
//! model built from it ([`CausalLmConfig::try_init`], one layer: [`CausalLmConfig::layer`]).
//!
//! Every field is checked where it is read; a missing, mistyped or inconsistent one is an
//! [`AttnError`] that names it.

use std::path::Path;

use serde_json::{Map, Value};

use burn::nn::{EmbeddingConfig, LinearConfig};
use burn::tensor::Device;

use super::family::{
    AttentionBias, AttentionKind, ExpertRule, Family, NormPlacement, QkNorm, RopeRule, Sliding,
    SlidingLayers, Softcap,
};
use super::model::{CausalLm, LmAttention, LmFeedForward, LmLayer};
use crate::attention::{
    KeyPattern, MultiHead, MultiHeadConfig, MultiHeadLatent, MultiHeadLatentConfig,
    ScaledDotProductConfig,
};
use crate::error::ensure;
use crate::norm::{RmsNorm, RmsNormConfig};
use crate::position::{RopeScaling, RotaryConfig};
use crate::quant::{Projection, TokenEmbedding};
use crate::transformer::{GatedActivation, GatedFeedForwardConfig, Routing, SparseMoeConfig};
use crate::AttnError;

/// Multi-head latent attention's widths (`deepseek_v3`), in `transformers`' names.
#[derive(Debug, Clone, PartialEq)]
pub struct LatentWidths {
    /// `kv_lora_rank`.
    pub kv_lora_rank: usize,
    /// `q_lora_rank`; `None` for a full-rank query projection.
    pub q_lora_rank: Option<usize>,
    /// `qk_nope_head_dim`.
    pub qk_nope_head_dim: usize,
    /// `qk_rope_head_dim`.
    pub qk_rope_head_dim: usize,
    /// `v_head_dim`.
    pub v_head_dim: usize,
    /// `rope_interleave` (default true).
    pub rope_interleave: bool,
}

/// A decoder LM's configuration, read from `config.json`; see the module docs.
///
/// ```
/// use attnzoo_models::lm::{CausalLmConfig, QkNorm};
///
/// let config = CausalLmConfig::from_json(r#"{
///     "model_type": "qwen3", "vocab_size": 64, "hidden_size": 24, "intermediate_size": 40,
///     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 10,
///     "max_position_embeddings": 64,
///     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}
/// }"#)?;
/// assert_eq!((config.family.model_type, config.head_dim), ("qwen3", 10));
/// assert_eq!(config.family.qk_norm, QkNorm::PerHead);
/// let error = CausalLmConfig::from_json(r#"{"model_type": "gpt2"}"#).unwrap_err();
/// assert!(error.to_string().contains("model_type \"gpt2\" is not supported"));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CausalLmConfig {
    /// The family, from `model_type`.
    pub family: &'static Family,
    /// `vocab_size`.
    pub vocab_size: usize,
    /// `hidden_size` `D`.
    pub hidden_size: usize,
    /// `intermediate_size` of the feed-forward block.
    pub intermediate_size: usize,
    /// `num_hidden_layers`.
    pub num_hidden_layers: usize,
    /// `num_attention_heads` `h`.
    pub num_attention_heads: usize,
    /// `num_key_value_heads` (default `h`).
    pub num_key_value_heads: usize,
    /// `head_dim` (default `D / h`).
    pub head_dim: usize,
    /// `max_position_embeddings`: the longest prompt [`generate`](super::CausalLm::generate) takes.
    pub max_position_embeddings: usize,
    /// `rms_norm_eps`.
    pub rms_norm_eps: f64,
    /// RoPE base: `rope_parameters.rope_theta` or `rope_theta`.
    pub rope_theta: f64,
    /// RoPE scaling: `rope_parameters` or `rope_scaling`.
    pub rope_scaling: RopeScaling,
    /// The RoPE base of the sliding-window layers when it differs from `rope_theta` (Gemma 3's
    /// `rope_local_base_freq`, or `rope_parameters.sliding_attention`); no scaling there.
    pub rope_local_theta: Option<f64>,
    /// Fraction of each head rotated (`partial_rotary_factor`, default 1).
    pub partial_rotary_factor: f64,
    /// Biases on the query, key and value projections.
    pub qkv_bias: bool,
    /// Bias on the output projection.
    pub output_bias: bool,
    /// Biases in the feed-forward block (`mlp_bias`).
    pub mlp_bias: bool,
    /// The gate's non-linearity (`hidden_act`, or Gemma's `hidden_activation`).
    pub activation: GatedActivation,
    /// `tie_word_embeddings`: the output projection is the embedding matrix.
    pub tie_word_embeddings: bool,
    /// Per layer, `transformers`' `sliding_window` `W` (the query and the `W − 1` keys before
    /// it) for a sliding-window layer, `None` for a global one.
    pub sliding_windows: Vec<Option<usize>>,
    /// Per layer, whether it applies RoPE (all but SmolLM3's NoPE layers).
    pub rope_layers: Vec<bool>,
    /// Gemma's `query_pre_attn_scalar`: scores are scaled by its `−½` power instead of
    /// `d_head^−½`.
    pub query_pre_attn_scalar: Option<f64>,
    /// `attn_logit_softcapping`, where the family applies it.
    pub attn_logit_softcapping: Option<f64>,
    /// `final_logit_softcapping`, where the family applies it.
    pub final_logit_softcapping: Option<f64>,
    /// DeepSeek's latent attention.
    pub latent: Option<LatentWidths>,
    /// A mixture of experts in place of the feed-forward block (Mixtral, Qwen3-MoE).
    pub experts: Option<ExpertSettings>,
    /// `eos_token_id` of `config.json` (one id or a list), used when there is no
    /// `generation_config.json`.
    pub eos_token_ids: Vec<u32>,
}

/// The mixture of experts of `mixtral`, `qwen3_moe` and `deepseek_v3` layers, in
/// `transformers`' names.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpertSettings {
    /// `num_local_experts` (Mixtral; Qwen3-MoE as 5.x writes it), `num_experts` (Qwen3-MoE, 4.x),
    /// `n_routed_experts` (DeepSeek).
    pub n_experts: usize,
    /// `num_experts_per_tok`.
    pub top_k: usize,
    /// Each expert's hidden width: `intermediate_size` (Mixtral), `moe_intermediate_size`.
    pub d_ff: usize,
    /// How the router chooses and weighs (softmax; DeepSeek's sigmoid groups).
    pub routing: Routing,
    /// DeepSeek's shared experts' width, `n_shared_experts × moe_intermediate_size`.
    pub shared_d_ff: Option<usize>,
    /// Per layer, whether it has the experts (else a dense block of `intermediate_size`).
    pub layers: Vec<bool>,
    /// The experts' non-linearity (gpt-oss's clamped SwiGLU; the model's otherwise).
    pub activation: GatedActivation,
    /// Biases on the router and the experts (gpt-oss).
    pub bias: bool,
}

/// The fields of one JSON object, read with errors that name the field.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    prefix: &'a str,
}

impl<'a> Fields<'a> {
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|value| !value.is_null())
    }

    fn usize_opt(&self, name: &str) -> Result<Option<usize>, AttnError> {
        match self.get(name) {
            None => Ok(None),
            Some(value) => match value.as_u64() {
                Some(n) if usize::try_from(n).is_ok() => Ok(Some(n as usize)),
                _ => Err(AttnError::new(format!(
                    "config.json field {}{name} is {value}: must be a non-negative integer",
                    self.prefix
                ))),
            },
        }
    }

    fn usize(&self, name: &str) -> Result<usize, AttnError> {
        self.usize_opt(name)?.ok_or_else(|| {
            AttnError::new(format!("config.json has no field {}{name}", self.prefix))
        })
    }

    /// A size that must be at least 1.
    fn size(&self, name: &str) -> Result<usize, AttnError> {
        let value = self.usize(name)?;
        ensure!(
            value >= 1,
            "config.json field {}{name} is 0: must be at least 1",
            self.prefix
        );
        Ok(value)
    }

    fn f64_opt(&self, name: &str) -> Result<Option<f64>, AttnError> {
        match self.get(name) {
            None => Ok(None),
            Some(value) => match value.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(AttnError::new(format!(
                    "config.json field {}{name} is {value}: must be a number",
                    self.prefix
                ))),
            },
        }
    }

    /// A list of finite numbers.
    fn numbers(&self, name: &str) -> Result<Vec<f64>, AttnError> {
        let field = format!("config.json field {}{name}", self.prefix);
        match self.get(name) {
            None => Err(AttnError::new(format!("{field} is missing"))),
            Some(Value::Array(values)) => values
                .iter()
                .map(|value| {
                    value.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
                        AttnError::new(format!("{field} has {value}: must be a list of numbers"))
                    })
                })
                .collect(),
            Some(other) => Err(AttnError::new(format!(
                "{field} is {other}: must be a list of numbers"
            ))),
        }
    }

    fn bool_opt(&self, name: &str) -> Result<Option<bool>, AttnError> {
        match self.get(name) {
            None => Ok(None),
            Some(value) => value.as_bool().map(Some).ok_or_else(|| {
                AttnError::new(format!(
                    "config.json field {}{name} is {value}: must be true or false",
                    self.prefix
                ))
            }),
        }
    }

    fn str_opt(&self, name: &str) -> Result<Option<&'a str>, AttnError> {
        match self.get(name) {
            None => Ok(None),
            Some(value) => value.as_str().map(Some).ok_or_else(|| {
                AttnError::new(format!(
                    "config.json field {}{name} is {value}: must be a string",
                    self.prefix
                ))
            }),
        }
    }
}

/// `eos_token_id` as one id or a list of ids (`transformers` accepts both); `None` when absent.
pub(crate) fn token_ids(value: Option<&Value>, field: &str) -> Result<Vec<u32>, AttnError> {
    let one = |value: &Value| {
        value
            .as_u64()
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| {
                AttnError::new(format!(
                    "{field} has {value}: token ids are non-negative integers"
                ))
            })
    };
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(ids)) => ids.iter().map(one).collect(),
        Some(id) => Ok(vec![one(id)?]),
    }
}

impl CausalLmConfig {
    /// Reads `config.json` from a file.
    pub fn from_file(path: &Path) -> Result<Self, AttnError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| AttnError::new(format!("cannot read {}: {error}", path.display())))?;
        Self::from_json(&text)
            .map_err(|error| AttnError::new(format!("{}: {error}", path.display())))
    }

    /// Reads `config.json`'s text.
    pub fn from_json(text: &str) -> Result<Self, AttnError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|error| AttnError::new(format!("config.json is not valid JSON: {error}")))?;
        let map = value
            .as_object()
            .ok_or_else(|| AttnError::new("config.json is not a JSON object"))?;
        let fields = Fields { map, prefix: "" };
        let model_type = fields
            .str_opt("model_type")?
            .ok_or_else(|| AttnError::new("config.json has no field model_type"))?;
        let family = Family::of(model_type).ok_or_else(|| {
            AttnError::new(format!(
                "config.json model_type {model_type:?} is not supported ({})",
                Family::supported()
            ))
        })?;
        for flag in family.refused_flags {
            ensure!(
                fields.bool_opt(flag)? != Some(true),
                "config.json {flag} true is not supported for {model_type}"
            );
        }
        let hidden_size = fields.size("hidden_size")?;
        let num_hidden_layers = fields.size("num_hidden_layers")?;
        let num_attention_heads = fields.size("num_attention_heads")?;
        let num_key_value_heads = match fields.usize_opt("num_key_value_heads")? {
            Some(n) => n,
            None => num_attention_heads,
        };
        ensure!(
            num_key_value_heads >= 1 && num_attention_heads % num_key_value_heads == 0,
            "config.json num_attention_heads {num_attention_heads} is not a multiple of num_key_value_heads {num_key_value_heads}"
        );
        let head_dim = match fields.usize_opt("head_dim")? {
            Some(d) if family.attention == AttentionKind::MultiHead => {
                ensure!(
                    d >= 1,
                    "config.json field head_dim is 0: must be at least 1"
                );
                d
            }
            _ => {
                ensure!(
                    hidden_size % num_attention_heads == 0,
                    "config.json hidden_size {hidden_size} is not a multiple of num_attention_heads {num_attention_heads} (and there is no head_dim)"
                );
                hidden_size / num_attention_heads
            }
        };
        let max_position_embeddings = fields.size("max_position_embeddings")?;
        let rms_norm_eps = fields.f64_opt("rms_norm_eps")?.unwrap_or(1e-6);
        ensure!(
            rms_norm_eps > 0.0 && rms_norm_eps < 1.0,
            "config.json field rms_norm_eps is {rms_norm_eps}: must be in (0, 1)"
        );
        let (rope_theta, rope_scaling, partial_rotary_factor, rope_local_theta) =
            rope(&fields, max_position_embeddings, family.rope)?;
        let (qkv_bias, output_bias) = match family.attention_bias {
            AttentionBias::Config(default) => {
                let bias = fields.bool_opt("attention_bias")?.unwrap_or(default);
                (bias, bias)
            }
            AttentionBias::QkvOnly => (true, false),
            AttentionBias::Never => (false, false),
        };
        let mlp_bias = family.mlp_bias && fields.bool_opt("mlp_bias")?.unwrap_or(false);
        let activation_field = match fields.get("hidden_activation") {
            Some(_) => "hidden_activation",
            None => "hidden_act",
        };
        let activation = match fields.str_opt(activation_field)? {
            None => family.activation,
            Some("silu") | Some("swish") => GatedActivation::Silu,
            Some("gelu_pytorch_tanh") | Some("gelu_new") => GatedActivation::GeluTanh,
            Some(other) => {
                return Err(AttnError::new(format!(
                    "config.json {activation_field} {other:?} is not supported (silu, gelu_pytorch_tanh)"
                )))
            }
        };
        let tie_word_embeddings = fields
            .bool_opt("tie_word_embeddings")?
            .unwrap_or(family.tied_by_default);
        let rope_layers = rope_layers(&fields, family.rope, num_hidden_layers)?;
        let sliding_windows = sliding_windows(&fields, family.sliding, &rope_layers)?;
        let query_pre_attn_scalar = match family.gemma_scales {
            true => {
                let scalar = fields.f64_opt("query_pre_attn_scalar")?.unwrap_or(256.0);
                ensure!(
                    scalar > 0.0,
                    "config.json field query_pre_attn_scalar is {scalar}: must be positive"
                );
                Some(scalar)
            }
            false => None,
        };
        let cap = |name: &str, rule: Softcap| -> Result<Option<f64>, AttnError> {
            let value = match (rule, fields.map.get(name)) {
                (Softcap::Never, _) | (Softcap::Read(_), Some(Value::Null)) => None,
                (Softcap::Read(default), None) => default,
                (Softcap::Read(_), Some(_)) => fields.f64_opt(name)?,
            };
            if let Some(cap) = value {
                ensure!(
                    cap > 0.0,
                    "config.json field {name} is {cap}: must be positive (or null)"
                );
            }
            Ok(value)
        };
        let attn_logit_softcapping = cap("attn_logit_softcapping", family.attention_softcap)?;
        let final_logit_softcapping = cap("final_logit_softcapping", family.final_softcap)?;
        let latent = match family.attention {
            AttentionKind::Latent => Some(latent(&fields)?),
            AttentionKind::MultiHead => None,
        };
        let intermediate_size = fields.size("intermediate_size")?;
        let experts = experts(
            &fields,
            family.experts,
            num_hidden_layers,
            intermediate_size,
            activation,
        )?;
        if latent.is_some() {
            ensure!(
                partial_rotary_factor == 1.0,
                "config.json partial_rotary_factor {partial_rotary_factor} is not supported for {model_type} (its latent attention rotates qk_rope_head_dim whole)"
            );
        }
        Ok(CausalLmConfig {
            family,
            vocab_size: fields.size("vocab_size")?,
            hidden_size,
            intermediate_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            max_position_embeddings,
            rms_norm_eps,
            rope_theta,
            rope_scaling,
            rope_local_theta,
            partial_rotary_factor,
            qkv_bias,
            output_bias,
            mlp_bias,
            activation,
            tie_word_embeddings,
            sliding_windows,
            rope_layers,
            query_pre_attn_scalar,
            attn_logit_softcapping,
            final_logit_softcapping,
            latent,
            experts,
            eos_token_ids: token_ids(fields.get("eos_token_id"), "config.json eos_token_id")?,
        })
    }
}

impl CausalLmConfig {
    /// Builds a randomly initialised model of this shape.
    pub fn try_init(&self, device: &Device) -> Result<CausalLm, AttnError> {
        Ok(CausalLm {
            embed_tokens: TokenEmbedding::Dense(
                EmbeddingConfig::new(self.vocab_size, self.hidden_size).init(device),
            ),
            layers: (0..self.num_hidden_layers)
                .map(|index| self.layer(index, device))
                .collect::<Result<_, _>>()?,
            norm: self.norm(self.hidden_size, device)?,
            lm_head: (!self.tie_word_embeddings).then(|| {
                Projection::Dense(
                    LinearConfig::new(self.hidden_size, self.vocab_size)
                        .with_bias(false)
                        .init(device),
                )
            }),
            embed_scale: self
                .family
                .gemma_scales
                .then(|| (self.hidden_size as f64).sqrt() as f32),
            final_softcap: self.final_logit_softcapping,
            max_position_embeddings: self.max_position_embeddings,
            eos_token_ids: self.eos_token_ids.clone(),
        })
    }

    /// The family's RMSNorm of this width.
    fn norm(&self, width: usize, device: &Device) -> Result<RmsNorm, AttnError> {
        RmsNormConfig::new(width)
            .with_epsilon(self.rms_norm_eps)
            .with_unit_offset(self.family.unit_offset_norms)
            .try_init(device)
    }

    /// Decoder layer `index` (below `num_hidden_layers`), randomly initialised.
    pub fn layer(&self, index: usize, device: &Device) -> Result<LmLayer, AttnError> {
        ensure!(
            index < self.num_hidden_layers,
            "layer {index} of a model of {} layers",
            self.num_hidden_layers
        );
        let window = self.sliding_windows[index];
        let pattern = match window {
            // transformers' window W holds the query and W − 1 keys before it.
            Some(window) => KeyPattern::Window {
                window: window - 1,
                causal: true,
            },
            None => KeyPattern::Causal,
        };
        let attention = ScaledDotProductConfig::new()
            .with_pattern(pattern)
            .with_scale(self.query_pre_attn_scalar.map(|scalar| scalar.powf(-0.5)))
            .with_softcap(self.attn_logit_softcapping);
        let (self_attn, rotary) = match &self.latent {
            Some(widths) => (
                LmAttention::Latent(self.latent_attention(widths, attention, device)?),
                None,
            ),
            None => {
                // Gemma 3's sliding layers have a RoPE base of their own, unscaled.
                let (base, scaling) = match (window, self.rope_local_theta) {
                    (Some(_), Some(local)) => (local, RopeScaling::None),
                    _ => (self.rope_theta, self.rope_scaling.clone()),
                };
                let rotary = RotaryConfig::new(self.head_dim)
                    .with_base(base)
                    .with_scaling(scaling)
                    .with_partial_rotary_factor(self.partial_rotary_factor)
                    .try_init()?;
                (
                    LmAttention::MultiHead(
                        self.multi_head(attention, device)?
                            .map_projections(Projection::from),
                    ),
                    self.rope_layers[index].then_some(rotary),
                )
            }
        };
        let norm = || self.norm(self.hidden_size, device);
        let norms = self.family.norms;
        let mlp = match &self.experts {
            Some(experts) if experts.layers[index] => LmFeedForward::Experts(
                SparseMoeConfig::new(
                    self.hidden_size,
                    experts.d_ff,
                    experts.n_experts,
                    experts.top_k,
                )
                .with_routing(experts.routing)
                .with_shared_d_ff(experts.shared_d_ff)
                .with_activation(experts.activation)
                .with_bias(experts.bias)
                .try_init(device)?
                .map_projections(Projection::from),
            ),
            _ => LmFeedForward::Dense(
                GatedFeedForwardConfig::new(self.hidden_size, self.intermediate_size)
                    .with_activation(self.activation)
                    .with_bias(self.mlp_bias)
                    .try_init(device)?
                    .map_projections(Projection::from),
            ),
        };
        Ok(LmLayer {
            input_layernorm: (norms != NormPlacement::Post).then(norm).transpose()?,
            self_attn,
            post_attention_layernorm: norm()?,
            pre_feedforward_layernorm: (norms == NormPlacement::Sandwich).then(norm).transpose()?,
            post_feedforward_layernorm: (norms != NormPlacement::Pre).then(norm).transpose()?,
            mlp,
            rotary,
            norms,
        })
    }

    fn multi_head(
        &self,
        attention: ScaledDotProductConfig,
        device: &Device,
    ) -> Result<MultiHead, AttnError> {
        MultiHeadConfig::new(self.hidden_size, self.num_attention_heads)
            .with_n_kv_heads(Some(self.num_key_value_heads))
            .with_d_head(Some(self.head_dim))
            .with_bias(self.qkv_bias)
            .with_output_bias(Some(self.output_bias))
            .with_sinks(self.family.sinks)
            .with_qk_norm(
                match self.family.qk_norm {
                    QkNorm::None => None,
                    QkNorm::PerHead => Some(self.head_dim),
                    QkNorm::AcrossHeads => Some(self.num_attention_heads * self.head_dim),
                }
                .map(|width| {
                    RmsNormConfig::new(width)
                        .with_epsilon(self.rms_norm_eps)
                        .with_unit_offset(self.family.unit_offset_norms)
                }),
            )
            .with_attention(attention)
            .try_init(device)
    }

    fn latent_attention(
        &self,
        widths: &LatentWidths,
        attention: ScaledDotProductConfig,
        device: &Device,
    ) -> Result<MultiHeadLatent, AttnError> {
        MultiHeadLatentConfig::new(
            self.hidden_size,
            self.num_attention_heads,
            widths.kv_lora_rank,
            widths.qk_nope_head_dim,
            widths.qk_rope_head_dim,
            widths.v_head_dim,
        )
        .with_q_lora_rank(widths.q_lora_rank)
        // transformers' DeepseekV3Attention builds its latent norms with RMSNorm's default eps,
        // 1e-6, whatever `rms_norm_eps` says (as DeepSeek's own modeling code).
        .with_rms_norm_eps(1e-6)
        .with_rope_base(self.rope_theta)
        .with_rope_scaling(self.rope_scaling.clone())
        .with_rope_interleaved(widths.rope_interleave)
        .with_bias(self.output_bias)
        .with_attention(attention)
        .try_init(device)
    }
}

/// `(rope_theta, scaling, partial_rotary_factor, local theta)` from 5.x's `rope_parameters`
/// (one set, or one per layer type as Gemma 3 has them: `full_attention`, `sliding_attention`)
/// or 4.x's `rope_theta`, `rope_scaling` and Gemma 3's `rope_local_base_freq`, with
/// `transformers`' defaults.
fn rope(
    fields: &Fields<'_>,
    max_position_embeddings: usize,
    rule: RopeRule,
) -> Result<(f64, RopeScaling, f64, Option<f64>), AttnError> {
    if let Some(Value::Object(by_kind)) = fields.get("rope_parameters") {
        if let Some(full) = by_kind.get("full_attention") {
            let global = Map::from_iter([("rope_parameters".to_string(), full.clone())]);
            let (theta, scaling, partial) = rope_set(
                &Fields {
                    map: &global,
                    prefix: "rope_parameters.full_attention.",
                },
                max_position_embeddings,
                rule.default_theta,
            )?;
            let local = match by_kind.get("sliding_attention") {
                None => None,
                Some(local) => {
                    let local = Map::from_iter([("rope_parameters".to_string(), local.clone())]);
                    let fields = Fields {
                        map: &local,
                        prefix: "rope_parameters.sliding_attention.",
                    };
                    let (theta, scaling, _) = rope_set(&fields, max_position_embeddings, 10_000.0)?;
                    ensure!(
                        scaling == RopeScaling::None,
                        "config.json rope_parameters.sliding_attention: only default RoPE is supported on sliding layers"
                    );
                    Some(theta)
                }
            };
            return Ok((theta, scaling, partial, local));
        }
    }
    let (theta, scaling, partial) = rope_set(fields, max_position_embeddings, rule.default_theta)?;
    let local = match rule.default_local_theta {
        Some(default) => Some(fields.f64_opt("rope_local_base_freq")?.unwrap_or(default)),
        None => None,
    };
    Ok((theta, scaling, partial, local))
}

/// One set of RoPE parameters: `(rope_theta, scaling, partial_rotary_factor)`.
fn rope_set(
    fields: &Fields<'_>,
    max_position_embeddings: usize,
    default_theta: f64,
) -> Result<(f64, RopeScaling, f64), AttnError> {
    let (params, prefix) = match (fields.get("rope_parameters"), fields.get("rope_scaling")) {
        (Some(params), _) if fields.prefix.is_empty() => (Some(params), "rope_parameters."),
        (Some(params), _) => (Some(params), fields.prefix),
        (None, Some(scaling)) => (Some(scaling), "rope_scaling."),
        (None, None) => (None, ""),
    };
    let empty = Map::new();
    let map = match params {
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(AttnError::new(format!(
                "config.json field {} is {other}: must be an object",
                prefix.trim_end_matches('.')
            )))
        }
        None => &empty,
    };
    let rope = Fields { map, prefix };
    let theta = match rope.f64_opt("rope_theta")? {
        Some(theta) => theta,
        None => fields.f64_opt("rope_theta")?.unwrap_or(default_theta),
    };
    ensure!(
        theta > 1.0,
        "config.json rope_theta is {theta}: must be greater than 1"
    );
    let partial = match rope.f64_opt("partial_rotary_factor")? {
        Some(factor) => factor,
        None => fields.f64_opt("partial_rotary_factor")?.unwrap_or(1.0),
    };
    let kind = match rope.str_opt("rope_type")? {
        Some(kind) => kind,
        None => rope.str_opt("type")?.unwrap_or("default"),
    };
    let factor = || {
        rope.f64_opt("factor")?
            .ok_or_else(|| AttnError::new(format!("config.json has no field {prefix}factor")))
    };
    // transformers: a top-level `original_max_position_embeddings` (Phi-3) wins, then the
    // rope dict's, then `max_position_embeddings`.
    let original = || -> Result<usize, AttnError> {
        Ok(
            match fields.usize_opt("original_max_position_embeddings")? {
                Some(n) => n,
                None => rope
                    .usize_opt("original_max_position_embeddings")?
                    .unwrap_or(max_position_embeddings),
            },
        )
    };
    let scaling = match kind {
        "default" => RopeScaling::None,
        "linear" => RopeScaling::Linear { factor: factor()? },
        "dynamic" => RopeScaling::DynamicNtk {
            factor: factor()?,
            original_max_position_embeddings: max_position_embeddings,
        },
        "yarn" => {
            let original = original()?;
            let factor = match rope.f64_opt("factor")? {
                Some(factor) => factor,
                None => max_position_embeddings as f64 / original as f64,
            };
            RopeScaling::Yarn {
                factor,
                original_max_position_embeddings: original,
                beta_fast: rope.f64_opt("beta_fast")?.unwrap_or(32.0),
                beta_slow: rope.f64_opt("beta_slow")?.unwrap_or(1.0),
                attention_factor: rope.f64_opt("attention_factor")?,
                mscale: rope.f64_opt("mscale")?,
                mscale_all_dim: rope.f64_opt("mscale_all_dim")?,
                truncate: rope.bool_opt("truncate")?.unwrap_or(true),
            }
        }
        "llama3" => RopeScaling::Llama3 {
            factor: factor()?,
            low_freq_factor: rope.f64_opt("low_freq_factor")?.ok_or_else(|| {
                AttnError::new(format!("config.json has no field {prefix}low_freq_factor"))
            })?,
            high_freq_factor: rope.f64_opt("high_freq_factor")?.ok_or_else(|| {
                AttnError::new(format!("config.json has no field {prefix}high_freq_factor"))
            })?,
            original_max_position_embeddings: original()?,
        },
        "longrope" => {
            let original = original()?;
            RopeScaling::LongRope {
                short_factor: rope.numbers("short_factor")?,
                long_factor: rope.numbers("long_factor")?,
                factor: match rope.f64_opt("factor")? {
                    Some(factor) => factor,
                    None => max_position_embeddings as f64 / original as f64,
                },
                original_max_position_embeddings: original,
                attention_factor: rope.f64_opt("attention_factor")?,
            }
        }
        other => {
            return Err(AttnError::new(format!(
                "config.json {prefix}rope_type {other:?} is not supported (default, linear, dynamic, yarn, llama3, longrope)"
            )))
        }
    };
    scaling
        .validate()
        .map_err(|error| AttnError::new(format!("config.json {prefix}: {error}")))?;
    Ok((theta, scaling, partial))
}

/// Per layer, whether it applies RoPE: SmolLM3's `no_rope_layers` (1 = RoPE, 0 = none; by default
/// every `no_rope_layer_interval`-th layer, 4, has none); every layer in the other families.
fn rope_layers(fields: &Fields<'_>, rule: RopeRule, layers: usize) -> Result<Vec<bool>, AttnError> {
    if !rule.no_rope_layers {
        return Ok(vec![true; layers]);
    }
    match fields.get("no_rope_layers") {
        None => {
            let interval = fields.usize_opt("no_rope_layer_interval")?.unwrap_or(4);
            ensure!(
                interval >= 1,
                "config.json field no_rope_layer_interval is 0: must be at least 1"
            );
            Ok((0..layers).map(|i| (i + 1) % interval != 0).collect())
        }
        Some(Value::Array(flags)) if flags.len() == layers => flags
            .iter()
            .map(|flag| match flag.as_u64() {
                Some(0) => Ok(false),
                Some(1) => Ok(true),
                _ => Err(AttnError::new(format!(
                    "config.json no_rope_layers has {flag}: must be 0 (no RoPE) or 1"
                ))),
            })
            .collect(),
        Some(other) => Err(AttnError::new(format!(
            "config.json field no_rope_layers is {other}: must be a list of {layers} 0s and 1s"
        ))),
    }
}

/// Per layer, the sliding window `W` of a sliding layer, as the family's rule decides it:
/// `layer_types` when the config has it (but for [`SlidingLayers::All`]), else the rule's layers.
fn sliding_windows(
    fields: &Fields<'_>,
    rule: Sliding,
    rope_layers: &[bool],
) -> Result<Vec<Option<usize>>, AttnError> {
    let layers = rope_layers.len();
    let (window, which) = match rule {
        Sliding::Never => (None, SlidingLayers::All),
        Sliding::WhenSet(which) => (fields.usize_opt("sliding_window")?, which),
        Sliding::WhenEnabled(which) => match fields.bool_opt("use_sliding_window")? {
            Some(true) => (fields.usize_opt("sliding_window")?, which),
            _ => (None, which),
        },
        Sliding::Always(default, which) => (
            Some(fields.usize_opt("sliding_window")?.unwrap_or(default)),
            which,
        ),
    };
    let Some(window) = window else {
        return Ok(vec![None; layers]);
    };
    ensure!(
        window >= 2,
        "config.json field sliding_window is {window}: must be at least 2 (the query and one key before it)"
    );
    let kinds: Vec<bool> = match (which, fields.get("layer_types")) {
        (SlidingLayers::All, _) => vec![true; layers],
        (_, Some(Value::Array(kinds))) => {
            ensure!(
                kinds.len() == layers,
                "config.json layer_types has {} entries for num_hidden_layers {layers}",
                kinds.len()
            );
            kinds
                .iter()
                .map(|kind| match kind.as_str() {
                    Some("sliding_attention") => Ok(true),
                    Some("full_attention") => Ok(false),
                    _ => Err(AttnError::new(format!(
                        "config.json layer_types has {kind}: must be \"sliding_attention\" or \"full_attention\""
                    ))),
                })
                .collect::<Result<_, _>>()?
        }
        (_, Some(other)) => {
            return Err(AttnError::new(format!(
                "config.json field layer_types is {other}: must be a list"
            )))
        }
        (SlidingLayers::Even, None) => (0..layers).map(|i| i % 2 == 0).collect(),
        (SlidingLayers::AllButEveryNth, None) => {
            let pattern = fields
                .usize_opt("sliding_window_pattern")?
                .unwrap_or(6)
                .max(1);
            (0..layers).map(|i| (i + 1) % pattern != 0).collect()
        }
        (SlidingLayers::WithoutRope, None) => rope_layers.iter().map(|rope| !rope).collect(),
        (SlidingLayers::FromMaxWindowLayers, None) => {
            let from = fields.usize_opt("max_window_layers")?.unwrap_or(28);
            (0..layers).map(|i| i >= from).collect()
        }
    };
    Ok(kinds
        .into_iter()
        .map(|sliding| sliding.then_some(window))
        .collect())
}

/// The experts of a config, by the family's rule (`None` for a dense model).
fn experts(
    fields: &Fields<'_>,
    rule: ExpertRule,
    layers: usize,
    intermediate_size: usize,
    mut activation: GatedActivation,
) -> Result<Option<ExpertSettings>, AttnError> {
    let mut shared_d_ff = None;
    let mut bias = false;
    let (n_experts, d_ff, routing, sparse) = match rule {
        ExpertRule::None => return Ok(None),
        ExpertRule::Mixtral => (
            fields.size("num_local_experts")?,
            intermediate_size,
            Routing::Softmax { renormalize: true },
            vec![true; layers],
        ),
        ExpertRule::GptOss => {
            let limit = fields.f64_opt("swiglu_limit")?.unwrap_or(7.0);
            ensure!(
                limit > 0.0,
                "config.json field swiglu_limit is {limit}: must be positive"
            );
            activation = GatedActivation::ClampedSwiglu {
                alpha: fields.f64_opt("swiglu_alpha")?.unwrap_or(1.702),
                limit,
            };
            bias = true;
            let n_experts = match fields.get("num_experts") {
                Some(_) => fields.size("num_experts")?,
                None => fields.size("num_local_experts")?,
            };
            (
                n_experts,
                intermediate_size,
                // Softmax over the k best logits = softmax over all, renormalised over the k.
                Routing::Softmax { renormalize: true },
                vec![true; layers],
            )
        }
        ExpertRule::DeepSeek => {
            let dense = fields.usize_opt("first_k_dense_replace")?.unwrap_or(3);
            let n_experts = fields.usize_opt("n_routed_experts")?.unwrap_or(256);
            if dense >= layers || n_experts == 0 {
                return Ok(None);
            }
            let d_ff = fields.size("moe_intermediate_size")?;
            let shared = fields.usize_opt("n_shared_experts")?.unwrap_or(1);
            shared_d_ff = (shared > 0).then_some(shared * d_ff);
            let routing = Routing::SigmoidGroups {
                n_group: fields.size("n_group")?,
                topk_group: fields.size("topk_group")?,
                renormalize: fields.bool_opt("norm_topk_prob")?.unwrap_or(true),
                scaling: fields.f64_opt("routed_scaling_factor")?.unwrap_or(2.5),
            };
            (
                n_experts,
                d_ff,
                routing,
                (0..layers).map(|i| i >= dense).collect(),
            )
        }
        ExpertRule::Qwen3Moe => {
            let step = fields.usize_opt("decoder_sparse_step")?.unwrap_or(1);
            ensure!(
                step >= 1,
                "config.json field decoder_sparse_step is 0: must be at least 1"
            );
            let dense: Vec<u64> = match fields.get("mlp_only_layers") {
                None => Vec::new(),
                Some(Value::Array(ids)) => ids
                    .iter()
                    .map(|id| {
                        id.as_u64().filter(|&i| (i as usize) < layers).ok_or_else(|| {
                            AttnError::new(format!(
                                "config.json mlp_only_layers has {id}: must be layer numbers below num_hidden_layers {layers}"
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(AttnError::new(format!(
                        "config.json field mlp_only_layers is {other}: must be a list"
                    )))
                }
            };
            let sparse = (0..layers)
                .map(|i| !dense.contains(&(i as u64)) && (i + 1) % step == 0)
                .collect();
            // 4.x writes `num_experts`, 5.x `num_local_experts` (its attribute map).
            let n_experts = match fields.get("num_experts") {
                Some(_) => fields.size("num_experts")?,
                None => fields.size("num_local_experts")?,
            };
            (
                n_experts,
                fields.size("moe_intermediate_size")?,
                Routing::Softmax {
                    renormalize: fields.bool_opt("norm_topk_prob")?.unwrap_or(false),
                },
                sparse,
            )
        }
    };
    let top_k = fields.size("num_experts_per_tok")?;
    ensure!(
        top_k <= n_experts,
        "config.json num_experts_per_tok {top_k} is more than the {n_experts} experts"
    );
    if let Routing::SigmoidGroups {
        n_group,
        topk_group,
        scaling,
        ..
    } = routing
    {
        ensure!(
            n_experts % n_group == 0 && n_experts / n_group >= 2,
            "config.json n_routed_experts {n_experts} does not split into n_group {n_group} groups of at least 2"
        );
        ensure!(
            topk_group <= n_group && topk_group * (n_experts / n_group) >= top_k,
            "config.json topk_group {topk_group} of n_group {n_group} holds fewer than num_experts_per_tok {top_k} experts"
        );
        ensure!(
            scaling > 0.0,
            "config.json field routed_scaling_factor is {scaling}: must be positive"
        );
    }
    Ok(Some(ExpertSettings {
        n_experts,
        top_k,
        d_ff,
        routing,
        shared_d_ff,
        layers: sparse,
        activation,
        bias,
    }))
}

/// DeepSeek-V3's latent widths.
fn latent(fields: &Fields<'_>) -> Result<LatentWidths, AttnError> {
    Ok(LatentWidths {
        kv_lora_rank: fields.size("kv_lora_rank")?,
        q_lora_rank: fields.usize_opt("q_lora_rank")?,
        qk_nope_head_dim: fields.size("qk_nope_head_dim")?,
        qk_rope_head_dim: fields.size("qk_rope_head_dim")?,
        v_head_dim: fields.size("v_head_dim")?,
        rope_interleave: fields.bool_opt("rope_interleave")?.unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(model_type: &str, extra: &str) -> String {
        format!(
            r#"{{"model_type": "{model_type}", "vocab_size": 64, "hidden_size": 24,
            "intermediate_size": 40, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 2, "max_position_embeddings": 64{extra}}}"#
        )
    }

    #[test]
    fn rope_settings_read_the_same_from_4x_and_5x_configs() {
        let old = CausalLmConfig::from_json(&base(
            "llama",
            r#", "rope_theta": 500000.0, "rope_scaling": {"type": "linear", "factor": 2.0}"#,
        ))
        .unwrap();
        let new = CausalLmConfig::from_json(&base(
            "llama",
            r#", "rope_parameters": {"rope_type": "linear", "rope_theta": 500000.0, "factor": 2.0}"#,
        ))
        .unwrap();
        assert_eq!(old, new);
        assert_eq!(new.rope_theta, 500000.0);
        assert_eq!(new.rope_scaling, RopeScaling::Linear { factor: 2.0 });
        let llama3 = CausalLmConfig::from_json(&base(
            "llama",
            r#", "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 16}"#,
        ))
        .unwrap();
        assert_eq!(llama3.rope_scaling, RopeScaling::llama3(8.0, 16));
        let yarn = CausalLmConfig::from_json(&base(
            "qwen2",
            r#", "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}"#,
        ))
        .unwrap();
        assert_eq!(yarn.rope_scaling, RopeScaling::yarn(4.0, 64));
        assert!(yarn.qkv_bias && !yarn.output_bias);
    }

    #[test]
    fn sliding_layers_follow_each_family() {
        let gemma = CausalLmConfig::from_json(&base("gemma2", r#", "sliding_window": 5"#)).unwrap();
        assert_eq!(gemma.sliding_windows, [Some(5), None, Some(5), None]);
        assert!(gemma.tie_word_embeddings);
        assert_eq!(gemma.activation, GatedActivation::GeluTanh);
        let mistral =
            CausalLmConfig::from_json(&base("mistral", r#", "sliding_window": 3"#)).unwrap();
        assert_eq!(mistral.sliding_windows, [Some(3); 4]);
        let qwen = CausalLmConfig::from_json(&base(
            "qwen2",
            r#", "sliding_window": 3, "use_sliding_window": false"#,
        ))
        .unwrap();
        assert_eq!(qwen.sliding_windows, [None; 4]);
        let qwen = CausalLmConfig::from_json(&base(
            "qwen3",
            r#", "sliding_window": 3, "use_sliding_window": true, "max_window_layers": 2"#,
        ))
        .unwrap();
        assert_eq!(qwen.sliding_windows, [None, None, Some(3), Some(3)]);
    }

    #[test]
    fn bad_or_unsupported_fields_are_named() {
        let error = |json: String| CausalLmConfig::from_json(&json).unwrap_err().to_string();
        assert_eq!(
            error(base("mistral", r#", "sliding_window": 1"#)),
            "config.json field sliding_window is 1: must be at least 2 (the query and one key before it)"
        );
        assert!(error(base("llama", r#", "hidden_size": "wide""#)).contains("hidden_size"));
        assert!(error(base("llama", r#", "rope_scaling": {"type": "su"}"#))
            .contains("\"su\" is not supported"));
        assert!(error(base(
            "phi3",
            r#", "rope_scaling": {"type": "longrope", "short_factor": [1, "x"]}"#
        ))
        .contains("rope_scaling.short_factor has \"x\": must be a list of numbers"));
        assert!(
            error(base("llama", r#", "rope_scaling": {"type": "linear"}"#))
                .contains("rope_scaling.factor")
        );
        assert!(
            error(base("llama", r#", "num_key_value_heads": 3"#)).contains("num_key_value_heads 3")
        );
        assert!(error(base("llama", r#", "hidden_act": "relu""#)).contains("hidden_act"));
        assert_eq!(
            error(r#"{"model_type": "llama"}"#.into()),
            "config.json has no field hidden_size"
        );
        let moe = base(
            "deepseek_v3",
            r#", "kv_lora_rank": 8, "qk_nope_head_dim": 4, "qk_rope_head_dim": 2,
               "v_head_dim": 4, "first_k_dense_replace": 1, "n_routed_experts": 4"#,
        );
        assert!(error(moe.clone()).contains("moe_intermediate_size"));
        let moe = moe.replace(
            r#""n_routed_experts": 4"#,
            r#""n_routed_experts": 4, "moe_intermediate_size": 6, "n_group": 2, "topk_group": 1,
               "num_experts_per_tok": 2, "n_shared_experts": 2"#,
        );
        let experts = CausalLmConfig::from_json(&moe).unwrap().experts.unwrap();
        assert_eq!(experts.layers, [false, true, true, true]);
        assert_eq!(experts.shared_d_ff, Some(12));
        assert!(matches!(
            experts.routing,
            crate::transformer::Routing::SigmoidGroups {
                n_group: 2,
                topk_group: 1,
                renormalize: true,
                ..
            }
        ));
        let dense = base(
            "deepseek_v3",
            r#", "kv_lora_rank": 8, "qk_nope_head_dim": 4, "qk_rope_head_dim": 2,
               "v_head_dim": 4, "first_k_dense_replace": 4, "eos_token_id": [1, 2]"#,
        );
        let dense = CausalLmConfig::from_json(&dense).unwrap();
        assert_eq!(dense.eos_token_ids, [1, 2]);
        assert_eq!(dense.latent.unwrap().q_lora_rank, None);
    }
}
