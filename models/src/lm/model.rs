//! A decoder-only language model (Radford et al. 2018; Touvron et al. 2023, "LLaMA") built from the
//! zoo's own blocks, loading Hugging Face folders of the families in [`FAMILIES`](super::FAMILIES):
//!
//! `h⁰ = s · E[ids]`,
//! `hˡ' = hˡ + Post₁(Attn(Pre₁(hˡ)))`, `hˡ⁺¹ = hˡ' + Post₂(FFN(Pre₂(hˡ')))` ([`LmLayer`]),
//! `logits = cap(Norm(hᴸ) W_out)`
//!
//! where the `Pre`/`Post` are [`RmsNorm`]s or the identity as the family's
//! [`NormPlacement`] says (Gemma's `(1 + w)` form for Gemma), `Attn` is causal
//! [`MultiHead`] attention with RoPE (grouped-query; biases, QK-norm, a sliding window,
//! soft-capped scores as the config says) or DeepSeek's [`MultiHeadLatent`], `FFN` is the
//! [`GatedFeedForward`] (SwiGLU, or GeGLU for Gemma) or a [`SparseMoe`] of them (Mixtral,
//! Qwen3-MoE, DeepSeek-V3), `s = √D` for Gemma (1 otherwise), `W_out` is `lm_head` or `Eᵀ`
//! (tied embeddings) and `cap` Gemma 2's final soft-cap.
//!
//! Decoding keeps, per layer, a [`KvCache`] (only the window for a sliding-window layer) or a
//! [`LatentCache`] (MLA's compressed latent); [`LmCache`] holds them with the padding seen so far,
//! so that step-by-step logits equal the whole sequence's.
//!
//! Shapes: `input_ids [B, T]`, `padding [B, T]` (`true` = padding; left padding for a batch of
//! prompts of different lengths) → `logits [B, T, vocab]`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::store::{bridge, ModuleStore, SafetensorsStore};
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use serde_json::Value;

use super::config::CausalLmConfig;
use super::family::{Fused, NormPlacement};
use crate::attention::{
    softcap, KvCache, LatentCache, MultiHead, MultiHeadInput, MultiHeadLatent, MultiHeadLatentInput,
};
use crate::error::ensure;
use crate::hf_weights::HfLoad;
use crate::norm::RmsNorm;
use crate::position::RotaryEncoding;
use crate::quant::{Project, Projection, TokenEmbedding};
use crate::transformer::{GatedFeedForward, SparseMoe};
use crate::AttnError;

/// A layer's attention: multi-head (with RoPE from the model) or latent (MLA, its own RoPE).
// One per layer, built once: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum LmAttention {
    /// Grouped-query multi-head attention.
    MultiHead(MultiHead<Projection>),
    /// DeepSeek's multi-head latent attention.
    Latent(MultiHeadLatent),
}

/// One decoder layer, `h = x + Post₁(Attn(Pre₁(x)))`, `y = h + Post₂(FFN(Pre₂(h)))`; field
/// names are `transformers`' (`model.layers.N.*`).
#[derive(Module, Debug)]
pub struct LmLayer {
    /// `Pre₁` (pre-norm and sandwich placements).
    pub input_layernorm: Option<RmsNorm>,
    /// The attention.
    pub self_attn: LmAttention,
    /// `Pre₂` for pre-norm (Llama), else `Post₁`.
    pub post_attention_layernorm: RmsNorm,
    /// `Pre₂` of the sandwich (Gemma).
    pub pre_feedforward_layernorm: Option<RmsNorm>,
    /// `Post₂` (Gemma, OLMo 2).
    pub post_feedforward_layernorm: Option<RmsNorm>,
    /// The feed-forward block.
    pub mlp: LmFeedForward,
    /// RoPE of a multi-head layer (`None`: a layer without positions, SmolLM3's NoPE; latent
    /// attention has its own).
    pub rotary: Option<RotaryEncoding>,
    /// Where the norms sit.
    #[module(skip)]
    pub norms: NormPlacement,
}

/// A layer's feed-forward block: dense, or a mixture of experts.
// One per layer, built once: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum LmFeedForward {
    /// The gated feed-forward block.
    Dense(GatedFeedForward<Projection>),
    /// Experts chosen per token by a router (Mixtral, Qwen3-MoE).
    Experts(SparseMoe<Projection>),
}

impl LmFeedForward {
    /// `x [B, T, D]` → `[B, T, D]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        match self {
            LmFeedForward::Dense(mlp) => mlp.forward(x),
            LmFeedForward::Experts(moe) => moe.forward(x),
        }
    }
}

impl LmLayer {
    /// An empty cache for this layer.
    pub fn cache(&self) -> LayerCache {
        match self.self_attn {
            LmAttention::MultiHead(_) => LayerCache::Kv(KvCache::growing()),
            LmAttention::Latent(_) => LayerCache::Latent(LatentCache::new()),
        }
    }

    /// `x [B, T, D]` after the positions `cache` holds → `[B, T, D]`, and the attention's
    /// weights `[B, h, T, S]` when asked for. `padding [B, seen + T]` marks the padding of every
    /// position so far (`true`).
    pub fn forward(
        &self,
        x: Tensor<3>,
        padding: Option<&Tensor<2, Bool>>,
        cache: &mut LayerCache,
        need_weights: bool,
    ) -> Result<(Tensor<3>, Option<Tensor<4>>), AttnError> {
        let len = x.dims()[1];
        let normed = match &self.input_layernorm {
            Some(norm) => norm.forward(x.clone()),
            None => x.clone(),
        };
        let output = match (&self.self_attn, cache) {
            (LmAttention::MultiHead(mha), LayerCache::Kv(kv)) => {
                // The cache keeps a suffix of the positions seen: the keys are
                // `seen − held .. seen + T`.
                let start = kv.seen() - kv.len();
                let end = kv.seen() + len;
                let mut input = MultiHeadInput::self_attn(normed);
                if let Some(rotary) = &self.rotary {
                    input = input.rotary(rotary.clone());
                }
                if let Some(padding) = padding {
                    input = input.padding(padding.clone().narrow(1, start, end - start));
                }
                if need_weights {
                    input = input.with_weights();
                }
                mha.forward_cached(input, kv)?
            }
            (LmAttention::Latent(mla), LayerCache::Latent(latent)) => {
                let mut input = MultiHeadLatentInput::new(normed);
                if len == 1 {
                    input = input.absorbed();
                }
                if let Some(padding) = padding {
                    input = input.padding(padding.clone());
                }
                if need_weights {
                    input = input.with_weights();
                }
                mla.forward_cached(input, latent)?
            }
            _ => {
                return Err(AttnError::new(
                    "the cache was made for another model (its layer kinds differ)",
                ))
            }
        };
        let (attended, weights) = (output.context, output.weights);
        let h = match self.norms {
            NormPlacement::Pre => x + attended,
            NormPlacement::Sandwich | NormPlacement::Post => {
                x + self.post_attention_layernorm.forward(attended)
            }
        };
        let fed = match (&self.pre_feedforward_layernorm, self.norms) {
            (Some(pre), _) => self.mlp.forward(pre.forward(h.clone())),
            (None, NormPlacement::Pre) => self
                .mlp
                .forward(self.post_attention_layernorm.forward(h.clone())),
            (None, _) => self.mlp.forward(h.clone()),
        };
        let fed = match &self.post_feedforward_layernorm {
            Some(post) => post.forward(fed),
            None => fed,
        };
        Ok((h + fed, weights))
    }
}

/// A decoder LM; see the module docs.
///
/// ```no_run
/// use attnzoo_models::lm::{CausalLm, GenerationConfig};
/// use burn::tensor::Device;
///
/// let device = Device::default();
/// // A Hugging Face folder: config.json, model.safetensors (or sharded), generation_config.json.
/// let lm = CausalLm::from_pretrained("SmolLM2-135M".as_ref(), &device)?;
/// let tokens: Vec<u32> = lm
///     .generate(&[1, 504, 3458], &GenerationConfig::greedy(16))?
///     .collect::<Result<_, _>>()?;
/// assert!(tokens.len() <= 16);
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Module, Debug)]
pub struct CausalLm {
    /// Token embeddings `E`, `[vocab, D]`.
    pub embed_tokens: TokenEmbedding,
    /// The decoder layers.
    pub layers: Vec<LmLayer>,
    /// The final norm.
    pub norm: RmsNorm,
    /// The output projection `D → vocab`; `None` when tied to the embeddings.
    pub lm_head: Option<Projection>,
    /// Gemma's embedding scale `√D`, as an `f32`.
    #[module(skip)]
    pub embed_scale: Option<f32>,
    /// Gemma 2's final soft-cap.
    #[module(skip)]
    pub final_softcap: Option<f64>,
    /// `max_position_embeddings`: the longest prompt [`generate`](Self::generate) accepts.
    #[module(skip)]
    pub max_position_embeddings: usize,
    /// Tokens that end a generation (`generation_config.json`, else `config.json`).
    #[module(skip)]
    pub eos_token_ids: Vec<u32>,
}

/// One layer's cache: a [`KvCache`] or, for latent attention, a [`LatentCache`].
#[derive(Debug, Clone)]
pub enum LayerCache {
    /// Keys and values (only the window's for a sliding-window layer).
    Kv(KvCache),
    /// MLA's compressed latent.
    Latent(LatentCache),
}

/// What decoding keeps between calls: every layer's cache and the padding of the positions seen.
#[derive(Debug, Clone)]
pub struct LmCache {
    layers: Vec<LayerCache>,
    /// `[B, seen]`, when any padding was given.
    padding: Option<Tensor<2, Bool>>,
    batch: Option<usize>,
    seen: usize,
}

impl LmCache {
    /// Positions seen so far (the position of the next token).
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// Positions each layer holds (a sliding-window layer holds at most its window).
    pub fn held(&self) -> Vec<usize> {
        self.layers
            .iter()
            .map(|layer| match layer {
                LayerCache::Kv(cache) => cache.len(),
                LayerCache::Latent(cache) => cache.len(),
            })
            .collect()
    }
}

/// A dense projection with `weight [d_in, d_out]`.
fn dense(weight: Tensor<2>, bias: Option<Tensor<1>>) -> Projection {
    Projection::Dense(Linear {
        weight: Param::from_tensor(weight),
        bias: bias.map(Param::from_tensor),
    })
}

/// The tensor `name` of a safetensors file, of shape `dims` (flattened to `[Π dims]`), in the
/// device's float type; `None` when the file does not hold it.
fn fused_tensor(
    store: &mut SafetensorsStore,
    name: &str,
    dims: &[usize],
    device: &Device,
) -> Result<Option<Tensor<1>>, AttnError> {
    let tensor = store
        .get_tensor(name)
        .map_err(|error| AttnError::new(format!("cannot read weight {name}: {error}")))?;
    let Some(tensor) = tensor else {
        return Ok(None);
    };
    ensure!(
        tensor.shape.as_slice() == dims,
        "weight {name} has shape {:?}, not the config's {dims:?}",
        tensor.shape.as_slice()
    );
    let data = bridge::to_data(tensor)
        .map_err(|error| AttnError::new(format!("cannot read weight {name}: {error}")))?
        .convert::<f32>()
        .try_into_vec::<f32>()
        .map_err(|error| AttnError::new(format!("cannot read weight {name}: {error:?}")))?;
    let len = data.len();
    Ok(Some(Tensor::from_data(
        TensorData::new(data, [len]),
        device,
    )))
}

/// The safetensors files of a folder: `model.safetensors`, or the shards that
/// `model.safetensors.index.json` names.
fn weight_files(dir: &Path) -> Result<Vec<PathBuf>, AttnError> {
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(vec![single]);
    }
    let index = dir.join("model.safetensors.index.json");
    ensure!(
        index.is_file(),
        "no model.safetensors or model.safetensors.index.json in {}",
        dir.display()
    );
    let text = std::fs::read_to_string(&index)
        .map_err(|error| AttnError::new(format!("cannot read {}: {error}", index.display())))?;
    let value: Value = serde_json::from_str(&text).map_err(|error| {
        AttnError::new(format!("{} is not valid JSON: {error}", index.display()))
    })?;
    let map = value
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| AttnError::new(format!("{} has no weight_map object", index.display())))?;
    let mut files = BTreeSet::new();
    for (name, file) in map {
        let file = file.as_str().ok_or_else(|| {
            AttnError::new(format!(
                "{}: weight {name} maps to {file}, not a file name",
                index.display()
            ))
        })?;
        ensure!(
            !file.contains('/') && !file.contains('\\') && file != ".." && !file.is_empty(),
            "{}: weight {name} maps to {file:?}, not a file in the folder",
            index.display()
        );
        files.insert(file.to_string());
    }
    let files: Vec<PathBuf> = files.into_iter().map(|file| dir.join(file)).collect();
    for file in &files {
        ensure!(
            file.is_file(),
            "shard {} named by {} is missing",
            file.display(),
            index.display()
        );
    }
    Ok(files)
}

impl CausalLm {
    /// Loads a Hugging Face folder: `config.json`, `model.safetensors` or the shards of
    /// `model.safetensors.index.json` (f32, bf16 or f16, converted tensor by tensor to the
    /// device's float type), and `generation_config.json` when present (its `eos_token_id`).
    pub fn from_pretrained(dir: &Path, device: &Device) -> Result<CausalLm, AttnError> {
        let config = CausalLmConfig::from_file(&dir.join("config.json"))?;
        let mut model = config.try_init(device)?;
        model.load_weights(dir, &config)?;
        let generation = dir.join("generation_config.json");
        if generation.is_file() {
            let text = std::fs::read_to_string(&generation).map_err(|error| {
                AttnError::new(format!("cannot read {}: {error}", generation.display()))
            })?;
            let value: Value = serde_json::from_str(&text).map_err(|error| {
                AttnError::new(format!(
                    "{} is not valid JSON: {error}",
                    generation.display()
                ))
            })?;
            let eos = super::config::token_ids(
                value.get("eos_token_id"),
                "generation_config.json eos_token_id",
            )?;
            if !eos.is_empty() {
                model.eos_token_ids = eos;
            }
        }
        Ok(model)
    }

    /// Loads the folder's weights into this model, naming every missing, misshapen or
    /// non-finite tensor and any layer weight the config has no place for. One layer at a time:
    /// each file is mapped for one layer's tensors and unmapped after them, so that loading holds
    /// the model and one layer's pages of the file (docs/MEASUREMENTS.md, "Loading").
    pub fn load_weights(&mut self, dir: &Path, config: &CausalLmConfig) -> Result<(), AttnError> {
        let files = weight_files(dir)?;
        // The device from the parameter without materialising it (`try_init`'s parameters are
        // lazy): loading holds no second copy of the model.
        let TokenEmbedding::Dense(embedding) = &self.embed_tokens else {
            return Err(AttnError::new(
                "load_weights reads float weights into a model built by CausalLmConfig::try_init",
            ));
        };
        let device = embedding.weight.lazy_device();
        let mut load = HfLoad::new(config.family.names(), device.settings().float_dtype.into());
        // The model's own tensors, then each layer's.
        let passes = std::iter::once((None, r"^(embed_tokens|norm|lm_head)\.".to_string()))
            .chain((0..self.layers.len()).map(|n| (Some(n), format!(r"^layers\.{n}\."))));
        for (layer, paths) in passes {
            for file in &files {
                let mut store = load.store(file, Some(&paths));
                load.apply(self, &mut store, file)?;
                if let Some(n) = layer {
                    let (read, filled) = self
                        .load_fused(n, &mut store, config, &device)
                        .map_err(|error| AttnError::new(format!("{}: {error}", file.display())))?;
                    load.set_elsewhere(read, filled);
                }
            }
        }
        load.finish(
            self,
            "layers.",
            &format!("{} does not fit its config.json", dir.display()),
        )
    }

    /// Splits the tensors the family stores fused ([`Fused`]) out of one file into layer `n`'s
    /// modules; returns the fused names read and the parameter names they filled.
    fn load_fused(
        &mut self,
        n: usize,
        store: &mut SafetensorsStore,
        config: &CausalLmConfig,
        device: &Device,
    ) -> Result<(Vec<String>, Vec<String>), AttnError> {
        let (mut read, mut filled) = (Vec::new(), Vec::new());
        let (heads, kv_heads, d) = (
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
        );
        let layer = &mut self.layers[n];
        for kind in config.family.fused {
            let mut tensor = |name: &str, dims: &[usize]| {
                let name = format!("layers.{n}.{name}");
                let found = fused_tensor(store, &name, dims, device)?;
                if found.is_some() {
                    read.push(name);
                }
                Ok::<_, AttnError>(found)
            };
            match kind {
                Fused::QkvRows => {
                    let rows = [heads * d, kv_heads * d, kv_heads * d];
                    let dims = [rows.iter().sum(), config.hidden_size];
                    let (Some(qkv), LmAttention::MultiHead(mha)) = (
                        tensor("self_attn.qkv_proj.weight", &dims)?,
                        &mut layer.self_attn,
                    ) else {
                        continue;
                    };
                    let qkv = qkv.reshape(dims).transpose();
                    let mut start = 0;
                    for (projection, (rows, name)) in [&mut mha.query, &mut mha.key, &mut mha.value]
                        .into_iter()
                        .zip(rows.into_iter().zip(["query", "key", "value"]))
                    {
                        *projection = dense(qkv.clone().narrow(1, start, rows), None);
                        filled.push(format!("layers.{n}.self_attn.{name}.weight"));
                        start += rows;
                    }
                }
                Fused::GateUpRows => {
                    let f = config.intermediate_size;
                    let dims = [2 * f, config.hidden_size];
                    let (Some(gate_up), LmFeedForward::Dense(mlp)) =
                        (tensor("mlp.gate_up_proj.weight", &dims)?, &mut layer.mlp)
                    else {
                        continue;
                    };
                    let gate_up = gate_up.reshape(dims).transpose();
                    mlp.gate_proj = dense(gate_up.clone().narrow(1, 0, f), None);
                    mlp.up_proj = dense(gate_up.narrow(1, f, f), None);
                    for name in ["gate_proj", "up_proj"] {
                        filled.push(format!("layers.{n}.mlp.{name}.weight"));
                    }
                }
                Fused::InterleavedExperts => {
                    let LmFeedForward::Experts(moe) = &mut layer.mlp else {
                        continue;
                    };
                    let (e, f, width) = (
                        moe.experts.len(),
                        config.intermediate_size,
                        config.hidden_size,
                    );
                    let parts = (
                        tensor("mlp.experts.gate_up_proj", &[e, width, 2 * f])?,
                        tensor("mlp.experts.gate_up_proj_bias", &[e, 2 * f])?,
                        tensor("mlp.experts.down_proj", &[e, f, width])?,
                        tensor("mlp.experts.down_proj_bias", &[e, width])?,
                    );
                    let (Some(gate_up), Some(gate_up_bias), Some(down), Some(down_bias)) = parts
                    else {
                        continue;
                    };
                    moe.set_interleaved_experts(
                        gate_up.reshape([e, width, 2 * f]),
                        gate_up_bias.reshape([e, 2 * f]),
                        down.reshape([e, f, width]),
                        down_bias.reshape([e, width]),
                    )?;
                    for i in 0..e {
                        for name in ["gate_proj", "up_proj", "down_proj"] {
                            for param in ["weight", "bias"] {
                                filled.push(format!("layers.{n}.mlp.experts.{i}.{name}.{param}"));
                            }
                        }
                    }
                }
            }
        }
        Ok((read, filled))
    }

    /// The length past which the model's RoPE switches the frequencies of every position
    /// (LongRoPE's original length; see [`RopeScaling::switches_at`](crate::position::RopeScaling::switches_at)).
    pub fn rope_switches_at(&self) -> Option<usize> {
        self.layers
            .iter()
            .find_map(|layer| layer.rotary.as_ref()?.scaling.switches_at())
    }

    /// Whether a step's products run on this process's rayon threads: its layers multiply from
    /// weights held on the host (GGUF blocks, packed experts), or it is on
    /// flex, whose products of few rows split their columns over those threads.
    pub fn multiplies_on_rayon(&self) -> bool {
        let blocks = self.layers.iter().any(|layer| {
            let mlp = match &layer.mlp {
                LmFeedForward::Dense(mlp) => &mlp.down_proj,
                LmFeedForward::Experts(moe) => &moe.gate,
            };
            mlp.multiplies_on_host()
        });
        blocks || crate::workers::computes_on_rayon(&self.device())
    }

    /// The mixture-of-experts layers' projections (router and experts) packed for the CPU's own
    /// product ([`Projection::packed`]), for inference on a CPU backend: where the processor has
    /// AVX-512 that product is faster than gemm's for the few rows each expert gets, and the
    /// experts then run side by side (docs/MEASUREMENTS.md, Mixture of experts). Dense layers,
    /// and every layer elsewhere, are left as they are.
    pub fn pack_experts(mut self) -> CausalLm {
        // Each projection moved into its packed form in turn: one float weight copied at a time.
        self.layers = self
            .layers
            .into_iter()
            .map(|mut layer| {
                layer.mlp = match layer.mlp {
                    LmFeedForward::Experts(moe) => {
                        LmFeedForward::Experts(moe.map_projections(Projection::packed))
                    }
                    dense => dense,
                };
                layer
            })
            .collect();
        self
    }

    /// The device the model's parameters are on.
    pub fn device(&self) -> Device {
        self.norm.weight.val().device()
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.embed_tokens.dims()[0]
    }

    /// An empty cache for a batch of sequences.
    pub fn cache(&self) -> LmCache {
        LmCache {
            layers: self.layers.iter().map(LmLayer::cache).collect(),
            padding: None,
            batch: None,
            seen: 0,
        }
    }

    /// Logits of every position, `input_ids [B, T]` → `[B, T, vocab]`, after the positions the
    /// cache holds (empty: a whole sequence). `padding [B, T]` marks padding (`true`), e.g. the
    /// left padding of prompts of different lengths; padded positions' logits mean nothing.
    pub fn forward(
        &self,
        input_ids: Tensor<2, Int>,
        padding: Option<Tensor<2, Bool>>,
        cache: &mut LmCache,
    ) -> Result<Tensor<3>, AttnError> {
        let (hidden, _) = self.hidden(input_ids, padding, cache, false)?;
        Ok(self.logits(hidden))
    }

    /// As [`forward`](Self::forward), with every layer's attention weights `[B, h, T, S]`: row
    /// `t` is where position `t` looked, over the `S` keys the layer attended to — every position
    /// so far, or for a sliding-window layer the positions its cache held and the new ones
    /// (`seen − held .. seen + T`, see [`LmCache::held`]).
    pub fn forward_with_weights(
        &self,
        input_ids: Tensor<2, Int>,
        padding: Option<Tensor<2, Bool>>,
        cache: &mut LmCache,
    ) -> Result<(Tensor<3>, Vec<Tensor<4>>), AttnError> {
        let (hidden, weights) = self.hidden(input_ids, padding, cache, true)?;
        Ok((self.logits(hidden), weights))
    }

    /// Logits of the last position only, `[B, vocab]` (what decoding needs).
    pub fn forward_last(
        &self,
        input_ids: Tensor<2, Int>,
        padding: Option<Tensor<2, Bool>>,
        cache: &mut LmCache,
    ) -> Result<Tensor<2>, AttnError> {
        let (hidden, _) = self.hidden(input_ids, padding, cache, false)?;
        let [batch, len, _] = hidden.dims();
        let last = hidden.narrow(1, len - 1, 1);
        Ok(self.logits(last).reshape([batch, self.vocab_size()]))
    }

    /// The final norm's output, `[B, T, D]`, and each layer's weights when asked for.
    pub(super) fn hidden(
        &self,
        input_ids: Tensor<2, Int>,
        padding: Option<Tensor<2, Bool>>,
        cache: &mut LmCache,
        need_weights: bool,
    ) -> Result<(Tensor<3>, Vec<Tensor<4>>), AttnError> {
        let [batch, len] = input_ids.dims();
        ensure!(len >= 1, "input_ids has no tokens (shape [{batch}, 0])");
        ensure!(
            cache.layers.len() == self.layers.len(),
            "the cache has {} layers but the model {}",
            cache.layers.len(),
            self.layers.len()
        );
        if let Some(cached) = cache.batch {
            ensure!(
                cached == batch,
                "the cache holds {cached} sequences but input_ids has {batch}"
            );
        }
        let vocab = self.vocab_size();
        let ids = input_ids.clone().into_data();
        let ids: Vec<i64> = ids.iter::<i64>().collect();
        if let Some(bad) = ids.iter().find(|&&id| id < 0 || id as usize >= vocab) {
            return Err(AttnError::new(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        let device = input_ids.device();
        if let Some(padding) = &padding {
            ensure!(
                padding.dims() == [batch, len],
                "padding shape {:?} is not input_ids' [{batch}, {len}]",
                padding.dims()
            );
        }
        // The padding of every position so far, [B, seen + T], when any was given.
        let all_padding = match (cache.padding.take(), padding) {
            (None, None) => None,
            (old, new) => {
                let none =
                    |len: usize| Tensor::<2, Int>::zeros([batch, len], &device).equal_elem(1);
                let new = new.unwrap_or_else(|| none(len));
                if cache.seen == 0 {
                    Some(new)
                } else {
                    let old = old.unwrap_or_else(|| none(cache.seen));
                    Some(Tensor::cat(vec![old, new], 1))
                }
            }
        };
        let mut x = self.embed_tokens.forward(input_ids);
        if let Some(scale) = self.embed_scale {
            x = x.mul_scalar(scale);
        }
        let mut weights = Vec::new();
        for (layer, layer_cache) in self.layers.iter().zip(cache.layers.iter_mut()) {
            let (y, layer_weights) =
                layer.forward(x, all_padding.as_ref(), layer_cache, need_weights)?;
            x = y;
            weights.extend(layer_weights);
        }
        cache.padding = all_padding;
        cache.batch = Some(batch);
        cache.seen += len;
        Ok((self.norm.forward(x), weights))
    }

    /// `hidden [B, T, D]` → `[B, T, vocab]`, soft-capped for Gemma 2.
    pub(super) fn logits(&self, hidden: Tensor<3>) -> Tensor<3> {
        let logits = match &self.lm_head {
            Some(head) => head.project(hidden),
            None => self.embed_tokens.attend(hidden),
        };
        match self.final_softcap {
            Some(cap) => softcap(logits, cap),
            None => logits,
        }
    }
}
