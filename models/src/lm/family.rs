//! The decoder families [`CausalLm`](super::CausalLm) loads, one entry each in [`FAMILIES`]:
//! every way a family departs from Llama is a field of [`Family`], so that a new family is one
//! entry (the compiler asks for every field) plus its fixtures.
//!
//! A layer is `h = x + Post₁(Attn(Pre₁(x)))`, `y = h + Post₂(FFN(Pre₂(h)))`, where
//! [`NormPlacement`] says which of `Pre`/`Post` are norms (the identity otherwise).

use crate::transformer::GatedActivation;

/// Where a layer's RMSNorms sit around its two blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormPlacement {
    /// Before each block (Llama): `input_layernorm`, `post_attention_layernorm` (before the
    /// feed-forward block, despite its name).
    Pre,
    /// Before and after each block (Gemma 2 and 3): `input_layernorm`,
    /// `post_attention_layernorm`, `pre_feedforward_layernorm`, `post_feedforward_layernorm`.
    Sandwich,
    /// After each block only, before the residual sum (OLMo 2): `post_attention_layernorm`,
    /// `post_feedforward_layernorm`.
    Post,
}

/// A layer's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionKind {
    /// Grouped-query multi-head attention with RoPE.
    MultiHead,
    /// DeepSeek's multi-head latent attention (its widths in `kv_lora_rank`, `q_lora_rank`,
    /// `qk_nope_head_dim`, `qk_rope_head_dim`, `v_head_dim`; `head_dim` is not read).
    Latent,
}

/// QK-norm: an RMSNorm on the queries and keys before RoPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QkNorm {
    /// None.
    None,
    /// Over each head, `[d_head]` (Qwen3, Gemma 3).
    PerHead,
    /// Over all heads together, `[h · d_head]` and `[h_kv · d_head]` (OLMo 2).
    AcrossHeads,
}

/// Which attention projections have biases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionBias {
    /// As `attention_bias` says (this when absent), on all four.
    Config(bool),
    /// On the query, key and value projections, never the output (Qwen2).
    QkvOnly,
    /// None (Mistral, Mixtral).
    Never,
}

/// Which layers slide, when the config has no `layer_types` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlidingLayers {
    /// Every layer; `layer_types` is not read (Mistral, Mixtral, Qwen3-MoE).
    All,
    /// Even layers (Gemma 2, gpt-oss).
    Even,
    /// All but every `sliding_window_pattern`-th (default 6) layer (Gemma 3).
    AllButEveryNth,
    /// Layers from `max_window_layers` (default 28) on (Qwen2, Qwen3).
    FromMaxWindowLayers,
    /// The layers without RoPE (SmolLM3).
    WithoutRope,
}

/// The sliding window `W` (the query and `W − 1` keys before it) and its layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sliding {
    /// No layer slides (`sliding_window` is not read).
    Never,
    /// `sliding_window` when present (Mistral), on `layers`.
    WhenSet(SlidingLayers),
    /// `sliding_window` when `use_sliding_window` is true (Qwen, SmolLM3), on `layers`.
    WhenEnabled(SlidingLayers),
    /// Always: `sliding_window`, this by default, on `layers` (Gemma).
    Always(usize, SlidingLayers),
}

/// Where RoPE applies and with which base.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeRule {
    /// `rope_theta` when the config has none.
    pub default_theta: f64,
    /// The sliding layers' own base (Gemma 3's `rope_local_base_freq`, or
    /// `rope_parameters.sliding_attention`), this by default; `None`: they share `rope_theta`.
    pub default_local_theta: Option<f64>,
    /// Whether `no_rope_layers` marks layers without RoPE (SmolLM3; 1 = RoPE, default: every
    /// `no_rope_layer_interval`-th, 4, has none).
    pub no_rope_layers: bool,
}

/// A soft-cap `c · tanh(x / c)` read from the config.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Softcap {
    /// Not applied, whatever the config says.
    Never,
    /// The config's field (`null`: none), this when the field is absent.
    Read(Option<f64>),
}

/// How a family's experts are configured (and which layers have them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpertRule {
    /// Dense feed-forward blocks only.
    None,
    /// Mixtral: `num_local_experts` in every layer, softmax over all, top-k renormalised.
    Mixtral,
    /// Qwen3-MoE: `num_experts` (or `num_local_experts`) of `moe_intermediate_size` where
    /// `decoder_sparse_step` and `mlp_only_layers` say; `norm_topk_prob`.
    Qwen3Moe,
    /// DeepSeek-V3: `n_routed_experts` from layer `first_k_dense_replace` on, grouped sigmoid
    /// routing, shared experts.
    DeepSeek,
    /// gpt-oss: `num_local_experts` of `intermediate_size` in every layer, a router with a bias,
    /// softmax over the top-k logits, experts with biases and the clamped SwiGLU
    /// (`swiglu_alpha`, `swiglu_limit`), stored fused (`gate_up_proj [E, D, 2F]`, gate and up
    /// interleaved, `down_proj [E, F, D]`).
    GptOss,
}

/// A tensor a checkpoint stores fused, split into the modules' own on load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fused {
    /// Phi-3's `self_attn.qkv_proj.weight [h·d + 2·h_kv·d, D]`: the query's rows, the key's,
    /// the value's.
    QkvRows,
    /// Phi-3's `mlp.gate_up_proj.weight [2F, D]`: the gate's rows, then the up projection's.
    GateUpRows,
    /// gpt-oss's experts: `mlp.experts.gate_up_proj [E, D, 2F]` (`x W`, the gate in the even
    /// columns, up in the odd) with `gate_up_proj_bias [E, 2F]`, `down_proj [E, F, D]` and
    /// `down_proj_bias [E, D]`.
    InterleavedExperts,
}

/// One family: how its `config.json` reads and how its layers are built.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// `config.json`'s `model_type`.
    pub model_type: &'static str,
    /// Gemma's norms, `x̂ (1 + w)` with `w` stored (every norm of the model, QK-norm included).
    pub unit_offset_norms: bool,
    /// Where the norms sit.
    pub norms: NormPlacement,
    /// The attention.
    pub attention: AttentionKind,
    /// QK-norm.
    pub qk_norm: QkNorm,
    /// Learned attention sinks, one logit per head (`self_attn.sinks`).
    pub sinks: bool,
    /// The attention projections' biases.
    pub attention_bias: AttentionBias,
    /// Whether `mlp_bias` is read (else the feed-forward block has none).
    pub mlp_bias: bool,
    /// Sliding windows.
    pub sliding: Sliding,
    /// RoPE.
    pub rope: RopeRule,
    /// The gate's non-linearity when the config names none (`hidden_activation`, Gemma's name,
    /// wins over `hidden_act`).
    pub activation: GatedActivation,
    /// Gemma: scores scaled by `query_pre_attn_scalar^−½` (default 256) instead of `d_head^−½`,
    /// embeddings by `√D`.
    pub gemma_scales: bool,
    /// Soft-cap of the attention scores (`attn_logit_softcapping`).
    pub attention_softcap: Softcap,
    /// Soft-cap of the logits (`final_logit_softcapping`).
    pub final_softcap: Softcap,
    /// `tie_word_embeddings` when the config has none.
    pub tied_by_default: bool,
    /// The experts.
    pub experts: ExpertRule,
    /// Config fields that must not be true (a variant this crate does not build).
    pub refused_flags: &'static [&'static str],
    /// Checkpoint names → this crate's, applied before the attention kind's common ones
    /// ([`MULTI_HEAD_NAMES`], [`LATENT_NAMES`]).
    pub weight_names: &'static [(&'static str, &'static str)],
    /// Tensors stored fused.
    pub fused: &'static [Fused],
}

/// Hugging Face names → this crate's module fields for multi-head layers, applied in order.
pub const MULTI_HEAD_NAMES: &[(&str, &str)] = &[
    (r"^model\.", ""),
    (r"^(layers\.\d+\.self_attn)\.q_proj\.", "$1.query."),
    (r"^(layers\.\d+\.self_attn)\.k_proj\.", "$1.key."),
    (r"^(layers\.\d+\.self_attn)\.v_proj\.", "$1.value."),
    (r"^(layers\.\d+\.self_attn)\.o_proj\.", "$1.output."),
    (r"^(layers\.\d+\.self_attn)\.q_norm\.", "$1.query_norm."),
    (r"^(layers\.\d+\.self_attn)\.k_norm\.", "$1.key_norm."),
];

/// The same for latent layers (whose other names are `transformers`' own).
pub const LATENT_NAMES: &[(&str, &str)] = &[
    (r"^model\.", ""),
    (r"^(layers\.\d+\.self_attn)\.q_proj\.", "$1.query."),
    (
        r"^(layers\.\d+\.self_attn)\.(q_a_proj|q_a_layernorm|q_b_proj)\.",
        "$1.query.$2.",
    ),
];

const LLAMA: Family = Family {
    model_type: "llama",
    unit_offset_norms: false,
    norms: NormPlacement::Pre,
    attention: AttentionKind::MultiHead,
    qk_norm: QkNorm::None,
    sinks: false,
    attention_bias: AttentionBias::Config(false),
    mlp_bias: true,
    sliding: Sliding::Never,
    rope: RopeRule {
        default_theta: 10_000.0,
        default_local_theta: None,
        no_rope_layers: false,
    },
    activation: GatedActivation::Silu,
    gemma_scales: false,
    attention_softcap: Softcap::Never,
    final_softcap: Softcap::Never,
    tied_by_default: false,
    experts: ExpertRule::None,
    refused_flags: &[],
    weight_names: &[],
    fused: &[],
};

const MISTRAL: Family = Family {
    model_type: "mistral",
    attention_bias: AttentionBias::Never,
    mlp_bias: false,
    sliding: Sliding::WhenSet(SlidingLayers::All),
    ..LLAMA
};

const QWEN2: Family = Family {
    model_type: "qwen2",
    attention_bias: AttentionBias::QkvOnly,
    mlp_bias: false,
    sliding: Sliding::WhenEnabled(SlidingLayers::FromMaxWindowLayers),
    ..LLAMA
};

const QWEN3: Family = Family {
    model_type: "qwen3",
    qk_norm: QkNorm::PerHead,
    mlp_bias: false,
    sliding: Sliding::WhenEnabled(SlidingLayers::FromMaxWindowLayers),
    ..LLAMA
};

const GEMMA2: Family = Family {
    model_type: "gemma2",
    unit_offset_norms: true,
    norms: NormPlacement::Sandwich,
    mlp_bias: false,
    sliding: Sliding::Always(4096, SlidingLayers::Even),
    activation: GatedActivation::GeluTanh,
    gemma_scales: true,
    attention_softcap: Softcap::Read(Some(50.0)),
    final_softcap: Softcap::Read(Some(30.0)),
    tied_by_default: true,
    ..LLAMA
};

const GEMMA3: Family = Family {
    model_type: "gemma3_text",
    qk_norm: QkNorm::PerHead,
    sliding: Sliding::Always(4096, SlidingLayers::AllButEveryNth),
    rope: RopeRule {
        default_theta: 1_000_000.0,
        default_local_theta: Some(10_000.0),
        no_rope_layers: false,
    },
    // transformers' Gemma3Attention never passes its soft-cap on.
    attention_softcap: Softcap::Never,
    final_softcap: Softcap::Read(None),
    refused_flags: &["use_bidirectional_attention"],
    ..GEMMA2
};

const DEEPSEEK_V3: Family = Family {
    model_type: "deepseek_v3",
    attention: AttentionKind::Latent,
    mlp_bias: false,
    experts: ExpertRule::DeepSeek,
    // The router's bias sits beside the router here, not in it.
    weight_names: &[(
        r"^model\.(layers\.\d+\.mlp)\.gate\.e_score_correction_bias$",
        "$1.e_score_correction_bias",
    )],
    ..LLAMA
};

const MIXTRAL: Family = Family {
    model_type: "mixtral",
    experts: ExpertRule::Mixtral,
    // Mixtral's checkpoints name the experts' block `block_sparse_moe` and their projections
    // `w1` (gate), `w3` (up), `w2` (down).
    weight_names: &[
        (r"^model\.(layers\.\d+)\.block_sparse_moe\.", "$1.mlp."),
        (r"^(layers\.\d+\.mlp\.experts\.\d+)\.w1\.", "$1.gate_proj."),
        (r"^(layers\.\d+\.mlp\.experts\.\d+)\.w3\.", "$1.up_proj."),
        (r"^(layers\.\d+\.mlp\.experts\.\d+)\.w2\.", "$1.down_proj."),
    ],
    ..MISTRAL
};

const QWEN3_MOE: Family = Family {
    model_type: "qwen3_moe",
    sliding: Sliding::WhenEnabled(SlidingLayers::All),
    experts: ExpertRule::Qwen3Moe,
    ..QWEN3
};

const SMOLLM3: Family = Family {
    model_type: "smollm3",
    sliding: Sliding::WhenEnabled(SlidingLayers::WithoutRope),
    rope: RopeRule {
        no_rope_layers: true,
        ..LLAMA.rope
    },
    tied_by_default: true,
    ..LLAMA
};

const OLMO2: Family = Family {
    model_type: "olmo2",
    norms: NormPlacement::Post,
    qk_norm: QkNorm::AcrossHeads,
    mlp_bias: false,
    ..LLAMA
};

const GPT_OSS: Family = Family {
    model_type: "gpt_oss",
    sinks: true,
    attention_bias: AttentionBias::Config(true),
    mlp_bias: false,
    sliding: Sliding::Always(128, SlidingLayers::Even),
    rope: RopeRule {
        default_theta: 150_000.0,
        ..LLAMA.rope
    },
    experts: ExpertRule::GptOss,
    weight_names: &[(r"^model\.(layers\.\d+\.mlp)\.router\.", "$1.gate.")],
    fused: &[Fused::InterleavedExperts],
    ..LLAMA
};

const PHI3: Family = Family {
    model_type: "phi3",
    attention_bias: AttentionBias::Never,
    mlp_bias: false,
    sliding: Sliding::WhenSet(SlidingLayers::All),
    fused: &[Fused::QkvRows, Fused::GateUpRows],
    ..LLAMA
};

/// Every family, by `model_type`.
pub const FAMILIES: &[Family] = &[
    LLAMA,
    MISTRAL,
    QWEN2,
    QWEN3,
    GEMMA2,
    GEMMA3,
    DEEPSEEK_V3,
    MIXTRAL,
    QWEN3_MOE,
    SMOLLM3,
    OLMO2,
    GPT_OSS,
    PHI3,
];

impl Family {
    /// The family of a `model_type`, or `None`.
    pub fn of(model_type: &str) -> Option<&'static Family> {
        FAMILIES
            .iter()
            .find(|family| family.model_type == model_type)
    }

    /// The `model_type`s supported, comma-separated.
    pub fn supported() -> String {
        FAMILIES
            .iter()
            .map(|family| family.model_type)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The checkpoint → module name rules, family's first.
    pub fn names(&self) -> impl Iterator<Item = &'static (&'static str, &'static str)> {
        let common = match self.attention {
            AttentionKind::MultiHead => MULTI_HEAD_NAMES,
            AttentionKind::Latent => LATENT_NAMES,
        };
        self.weight_names.iter().chain(common)
    }
}
