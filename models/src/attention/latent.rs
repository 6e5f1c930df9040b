//! Multi-head latent attention, MLA (DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and
//! Efficient Mixture-of-Experts Language Model", 2024; also DeepSeek-V3): keys and values are
//! compressed into one low-rank latent per token, and that latent, not the keys and values,
//! is what the KV cache keeps.
//!
//! With `h` heads, latent rank `d_c` (`kv_lora_rank`), query rank `d_c'` (`q_lora_rank`) and head
//! widths `d_nope`, `d_rope` (RoPE part) and `d_v`, for `x [B, T, D]`:
//!
//! - queries: `c_Q = RMSNorm(x W^DQ)` `[B, T, d_c']`, `[q^C_i ; q^R_i] = c_Q W^UQ` per head
//!   (without a query rank: `[q^C_i ; q^R_i] = x W^Q`), `q^C_i [B, T, d_nope]`, `q^R_i [B, T, d_rope]`;
//! - keys and values: `[c_KV ; k^R] = x W^DKV` (`c_KV [B, T, d_c]`, `k^R [B, T, d_rope]`, one
//!   rotary key shared by every head), `c_KV ← RMSNorm(c_KV)`, `[k^C_i ; v_i] = c_KV W^UKV`
//!   per head (`W^UK_i`, `W^UV_i`);
//! - decoupled RoPE, on the rotary parts only: `q_i = [q^C_i ; RoPE(q^R_i)]`, `k_i = [k^C_i ; RoPE(k^R)]`;
//! - `o_i = softmax(q_i k_iᵀ · s) v_i` with `s = (d_nope + d_rope)^−½` (times YaRN's `mscale²`
//!   with DeepSeek's RoPE scaling, [`MultiHeadLatentConfig::rope_scaling`]), and
//!   `out = [o_1; …; o_h] W^O` `[B, T, D]`.
//!
//! The cache ([`LatentCache`]) keeps `c_KV` (after its norm) and `RoPE(k^R)`: `d_c + d_rope` numbers
//! per token and layer, where multi-head attention keeps `2 · h · d_head` (DeepSeek-V3:
//! 512 + 64 = 576 against 2 · 128 · 128 = 32,768 for its heads).
//!
//! Two ways to decode from that cache compute the same function ([`LatentPath`]):
//! - **expanded**: up-project the cached latent to every head's keys and values, `c_KV W^UKV`,
//!   at every step, and attend as usual;
//! - **absorbed**: since `q^C_i (c_KV W^UK_i)ᵀ = (q^C_i W^UK_iᵀ) c_KVᵀ` and
//!   `Σ_j w_ij c_KV,j W^UV_i = (Σ_j w_ij c_KV,j) W^UV_i`, `W^UK` is absorbed into the query and
//!   `W^UV` into the output: every head attends over the cached `[c_KV ; RoPE(k^R)]` itself
//!   (multi-query attention of width `d_c + d_rope`), and nothing per head is rebuilt.
//!
//! Weights are named as in Hugging Face `transformers`' `DeepseekV3Attention` (`q_a_proj`,
//! `q_a_layernorm`, `q_b_proj` or `q_proj`, `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`,
//! `o_proj`), which the parity fixtures check this module against. Its RoPE rotates adjacent
//! pairs (`rope_interleave`, the default there; the zoo's interleaved [`RotaryEncoding`]):
//! transformers de-interleaves before rotating halves, which permutes `q^R` and `k^R` alike and
//! leaves every score unchanged.
//!
//! Shapes: `x [B, T, D]`, `mask [B|1, T|1, S]`, `padding [B, S]` (`S` = cached + new positions)
//! → `context [B, T, D]`, `weights [B, h, T, S]` when asked for.

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Bool, Device, Tensor};

use super::masking::{either, lift, KeyPattern};
use super::multi_head::MultiHeadOutput;
use super::scaled_dot::{AttentionInput, ScaledDotProduct, ScaledDotProductConfig};
use crate::error::ensure;
use crate::norm::{RmsNorm, RmsNormConfig};
use crate::position::{RopeScaling, RotaryConfig, RotaryEncoding};
use crate::AttnError;

/// Configuration of [`MultiHeadLatent`], in the terms of DeepSeek-V2 and of `transformers`'
/// `DeepseekV3Config` (in brackets).
///
/// ```
/// use attnzoo_models::attention::{
///     KeyPattern, LatentCache, MultiHeadLatentConfig, MultiHeadLatentInput, ScaledDotProductConfig,
/// };
/// use burn::tensor::{Device, Distribution, Tensor};
///
/// let device = Device::default();
/// // 4 heads over a latent of rank 8; keys of 6 + 4 (RoPE) numbers, values of 5.
/// let mla = MultiHeadLatentConfig::new(32, 4, 8, 6, 4, 5)
///     .with_q_lora_rank(Some(12))
///     .with_attention(ScaledDotProductConfig::new().with_pattern(KeyPattern::Causal))
///     .try_init(&device)?;
/// let x = Tensor::<3>::random([1, 3, 32], Distribution::Default, &device);
/// let whole = mla.forward(MultiHeadLatentInput::new(x.clone()))?.context; // [1, 3, 32]
///
/// // Decoding one token at a time keeps only the latent and the rotary key: 8 + 4 numbers a token.
/// let mut cache = LatentCache::new();
/// for t in 0..3 {
///     let step = MultiHeadLatentInput::new(x.clone().narrow(1, t, 1)).absorbed();
///     let out = mla.forward_cached(step, &mut cache)?.context; // [1, 1, 32]
///     let expected = whole.clone().narrow(1, t, 1);
///     out.into_data().assert_approx_eq::<f32>(&expected.into_data(), burn::tensor::Tolerance::absolute(1e-5));
/// }
/// assert_eq!((cache.len(), cache.floats_per_position()), (3, 12));
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct MultiHeadLatentConfig {
    /// Model width `D` (`hidden_size`).
    pub d_model: usize,
    /// Attention heads `h` (`num_attention_heads`).
    pub n_heads: usize,
    /// Rank `d_c` of the key/value latent, what the cache keeps (`kv_lora_rank`); at least 1.
    pub kv_lora_rank: usize,
    /// Width `d_nope` of each head's key and query part without position (`qk_nope_head_dim`).
    pub qk_nope_head_dim: usize,
    /// Width `d_rope` of the rotary part of queries and of the shared rotary key
    /// (`qk_rope_head_dim`); even.
    pub qk_rope_head_dim: usize,
    /// Width `d_v` of each head's value (`v_head_dim`).
    pub v_head_dim: usize,
    /// Rank `d_c'` of the query bottleneck (`q_lora_rank`); `None`: one full-rank query projection
    /// `W^Q` (DeepSeek-V2-Lite).
    #[config(default = "None")]
    pub q_lora_rank: Option<usize>,
    /// Epsilon of the RMSNorms on the latents (`rms_norm_eps`).
    #[config(default = 1e-6)]
    pub rms_norm_eps: f64,
    /// RoPE frequency base (`rope_theta`).
    #[config(default = 10000.0)]
    pub rope_base: f64,
    /// Scaling of the RoPE frequencies for contexts longer than training (DeepSeek-V3: YaRN,
    /// factor 40, `mscale = mscale_all_dim = 1`); with YaRN's `mscale_all_dim` μ_all the softmax
    /// scale is also multiplied by `mscale²`, `mscale = 0.1 · μ_all · ln s + 1` (transformers'
    /// `yarn_apply_mscale`), unless the attention's scale is set.
    #[config(default = "RopeScaling::None")]
    pub rope_scaling: RopeScaling,
    /// RoPE on adjacent pairs `(2i, 2i+1)` (`rope_interleave`, true in DeepSeek's checkpoints)
    /// rather than on halves `(i, i + d/2)`.
    #[config(default = true)]
    pub rope_interleaved: bool,
    /// Biases on `W^DQ`, `W^DKV` and `W^O` (`attention_bias`; the up-projections never have one).
    #[config(default = false)]
    pub bias: bool,
    /// Pattern (causal, ...), implementation and scale of the attention; its scale, when unset,
    /// is `(d_nope + d_rope)^−½` (the query width), whichever decode path runs.
    #[config(default = "ScaledDotProductConfig::new()")]
    pub attention: ScaledDotProductConfig,
}

/// Multi-head latent attention; see the module docs for the formula.
#[derive(Module, Debug)]
pub struct MultiHeadLatent {
    /// The query projection, `D → h · (d_nope + d_rope)`.
    pub query: LatentQuery,
    /// `W^DKV` and `W^KR` together: `D → d_c + d_rope`.
    pub kv_a_proj_with_mqa: Linear,
    /// RMSNorm on the key/value latent `c_KV`.
    pub kv_a_layernorm: RmsNorm,
    /// `W^UK` and `W^UV` together: `d_c → h · (d_nope + d_v)`, each head's `[k^C ; v]` in turn.
    pub kv_b_proj: Linear,
    /// `W^O`: `h · d_v → D`.
    pub o_proj: Linear,
    /// RoPE on the rotary parts.
    pub rotary: RotaryEncoding,
    /// The per-head attention (its scale always set).
    pub attention: ScaledDotProduct,
    /// Heads `h`.
    pub n_heads: usize,
    /// Latent rank `d_c`.
    pub kv_lora_rank: usize,
    /// `d_nope`.
    pub qk_nope_head_dim: usize,
    /// `d_rope`.
    pub qk_rope_head_dim: usize,
    /// `d_v`.
    pub v_head_dim: usize,
}

/// The query projection: DeepSeek's low-rank bottleneck, or one full-rank matrix.
// One per module, built once: the variants' difference in size (two Linears and a norm against
// one Linear) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum LatentQuery {
    /// `x ↦ RMSNorm(x W^DQ) W^UQ`.
    LowRank(LowRankQuery),
    /// `x ↦ x W^Q` (`q_proj`).
    Full(Linear),
}

/// The query bottleneck `x ↦ RMSNorm(x W^DQ) W^UQ`.
#[derive(Module, Debug)]
pub struct LowRankQuery {
    /// `W^DQ`: `D → d_c'`.
    pub q_a_proj: Linear,
    /// RMSNorm on the query latent `c_Q`.
    pub q_a_layernorm: RmsNorm,
    /// `W^UQ`: `d_c' → h · (d_nope + d_rope)`.
    pub q_b_proj: Linear,
}

impl LatentQuery {
    /// `[B, T, D]` → `[B, T, h · (d_nope + d_rope)]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        match self {
            LatentQuery::LowRank(low_rank) => low_rank
                .q_b_proj
                .forward(low_rank.q_a_layernorm.forward(low_rank.q_a_proj.forward(x))),
            LatentQuery::Full(full) => full.forward(x),
        }
    }
}

/// How attention runs over the cached latent; both compute the same function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LatentPath {
    /// Up-project the latent to per-head keys and values, then attend.
    #[default]
    Expanded,
    /// Attend in the latent space, `W^UK` absorbed into the queries and `W^UV` into the output.
    Absorbed,
}

/// Inputs of one [`MultiHeadLatent`] call (self-attention).
#[derive(Debug, Clone)]
pub struct MultiHeadLatentInput {
    /// `[B, T, D]`
    pub x: Tensor<3>,
    /// `[B|1, T|1, S]`, `true` = may not attend (`S`: cached and new positions).
    pub mask: Option<Tensor<3, Bool>>,
    /// `[B, S]`, `true` = padding.
    pub padding: Option<Tensor<2, Bool>>,
    /// Expanded or absorbed.
    pub path: LatentPath,
    /// Return the per-head weights.
    pub need_weights: bool,
}

impl MultiHeadLatentInput {
    /// A sequence attending over itself (and the cache), on the expanded path.
    pub fn new(x: Tensor<3>) -> Self {
        Self {
            x,
            mask: None,
            padding: None,
            path: LatentPath::Expanded,
            need_weights: false,
        }
    }

    /// Sets the mask `[B|1, T|1, S]`.
    pub fn mask(mut self, mask: Tensor<3, Bool>) -> Self {
        self.mask = Some(mask);
        self
    }

    /// Sets the key padding mask `[B, S]`.
    pub fn padding(mut self, padding: Tensor<2, Bool>) -> Self {
        self.padding = Some(padding);
        self
    }

    /// Attends in the latent space (absorbed weights).
    pub fn absorbed(mut self) -> Self {
        self.path = LatentPath::Absorbed;
        self
    }

    /// Asks for the per-head weights.
    pub fn with_weights(mut self) -> Self {
        self.need_weights = true;
        self
    }
}

/// The compressed KV cache: per position, the normalised latent `c_KV [B, S, d_c]` and the
/// rotated shared key `RoPE(k^R) [B, S, d_rope]`, nothing per head.
#[derive(Debug, Clone, Default)]
pub struct LatentCache {
    latent: Option<Tensor<3>>,
    rope_key: Option<Tensor<3>>,
}

impl LatentCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of cached positions.
    pub fn len(&self) -> usize {
        self.latent.as_ref().map_or(0, |latent| latent.dims()[1])
    }

    /// Whether nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cached latent `c_KV [B, S, d_c]` and rotary key `[B, S, d_rope]`.
    pub fn tensors(&self) -> Option<(&Tensor<3>, &Tensor<3>)> {
        self.latent.as_ref().zip(self.rope_key.as_ref())
    }

    /// Numbers kept per position of one sequence, read from the cached tensors' shapes
    /// (`d_c + d_rope`; 0 when empty).
    pub fn floats_per_position(&self) -> usize {
        self.tensors().map_or(0, |(latent, rope_key)| {
            let per_position =
                |t: &Tensor<3>| t.shape().num_elements() / (t.dims()[0] * t.dims()[1]);
            per_position(latent) + per_position(rope_key)
        })
    }

    /// Bytes kept per position of one sequence (`floats_per_position` × the element size).
    pub fn bytes_per_position(&self) -> usize {
        self.tensors().map_or(0, |(latent, _)| {
            self.floats_per_position() * latent.dtype().size()
        })
    }

    /// The cached tensors with new positions after them (the cache itself unchanged).
    fn extended(&self, latent: Tensor<3>, rope_key: Tensor<3>) -> (Tensor<3>, Tensor<3>) {
        let grow = |old: &Option<Tensor<3>>, new: Tensor<3>| match old {
            Some(old) => Tensor::cat(vec![old.clone(), new], 1),
            None => new,
        };
        (grow(&self.latent, latent), grow(&self.rope_key, rope_key))
    }
}

impl MultiHeadLatentConfig {
    /// Builds the module, rejecting ranks and widths that cannot work.
    pub fn try_init(&self, device: &Device) -> Result<MultiHeadLatent, AttnError> {
        let (d_model, n_heads) = (self.d_model, self.n_heads);
        let (rank, nope, rope, d_v) = (
            self.kv_lora_rank,
            self.qk_nope_head_dim,
            self.qk_rope_head_dim,
            self.v_head_dim,
        );
        ensure!(d_model >= 1, "d_model must be at least 1, got {d_model}");
        ensure!(n_heads >= 1, "n_heads must be at least 1, got {n_heads}");
        ensure!(
            rank >= 1,
            "kv_lora_rank (the latent rank d_c) must be at least 1, got {rank}"
        );
        if let Some(q_rank) = self.q_lora_rank {
            ensure!(
                q_rank >= 1,
                "q_lora_rank must be at least 1 (None for a full-rank query projection), got {q_rank}"
            );
        }
        ensure!(nope >= 1, "qk_nope_head_dim must be at least 1, got {nope}");
        ensure!(
            rope >= 2 && rope % 2 == 0,
            "qk_rope_head_dim must be even and at least 2, got {rope}"
        );
        ensure!(d_v >= 1, "v_head_dim must be at least 1, got {d_v}");
        let qk_head_dim = nope + rope;
        let scale = self
            .attention
            .scale
            .unwrap_or(yarn_softmax_factor(&self.rope_scaling) / (qk_head_dim as f64).sqrt());
        let attention = self.attention.clone().with_scale(Some(scale)).try_init()?;
        let rotary = RotaryConfig::new(rope)
            .with_base(self.rope_base)
            .with_interleaved(self.rope_interleaved)
            .with_scaling(self.rope_scaling.clone())
            .try_init()?;
        let linear =
            |d_in, d_out, bias| LinearConfig::new(d_in, d_out).with_bias(bias).init(device);
        let norm = |width: usize| {
            RmsNormConfig::new(width)
                .with_epsilon(self.rms_norm_eps)
                .try_init(device)
        };
        let query = match self.q_lora_rank {
            Some(q_rank) => LatentQuery::LowRank(LowRankQuery {
                q_a_proj: linear(d_model, q_rank, self.bias),
                q_a_layernorm: norm(q_rank)?,
                q_b_proj: linear(q_rank, n_heads * qk_head_dim, false),
            }),
            None => LatentQuery::Full(linear(d_model, n_heads * qk_head_dim, false)),
        };
        Ok(MultiHeadLatent {
            query,
            kv_a_proj_with_mqa: linear(d_model, rank + rope, self.bias),
            kv_a_layernorm: norm(rank)?,
            kv_b_proj: linear(rank, n_heads * (nope + d_v), false),
            o_proj: linear(n_heads * d_v, d_model, self.bias),
            rotary,
            attention,
            n_heads,
            kv_lora_rank: rank,
            qk_nope_head_dim: nope,
            qk_rope_head_dim: rope,
            v_head_dim: d_v,
        })
    }
}

/// DeepSeek's YaRN correction of the softmax scale, `mscale²` with
/// `mscale = 0.1 · mscale_all_dim · ln factor + 1` for a factor above 1; 1 otherwise.
fn yarn_softmax_factor(scaling: &RopeScaling) -> f64 {
    match *scaling {
        RopeScaling::Yarn {
            factor,
            mscale_all_dim: Some(all_dim),
            ..
        } if all_dim != 0.0 && factor > 1.0 => {
            let mscale = 0.1 * all_dim * factor.ln() + 1.0;
            mscale * mscale
        }
        _ => 1.0,
    }
}

impl MultiHeadLatent {
    /// Model width `D`.
    pub fn d_model(&self) -> usize {
        self.o_proj.weight.dims()[1]
    }

    /// Attends over the sequence itself on the path the input names.
    pub fn forward(&self, input: MultiHeadLatentInput) -> Result<MultiHeadOutput, AttnError> {
        self.forward_cached(input, &mut LatentCache::new())
    }

    /// Attends over the cached positions and the new ones, after appending the new ones'
    /// latent and rotary key to the cache; the queries sit after the cached positions (for the
    /// causal pattern and RoPE).
    pub fn forward_cached(
        &self,
        input: MultiHeadLatentInput,
        cache: &mut LatentCache,
    ) -> Result<MultiHeadOutput, AttnError> {
        let [batch, len, width] = input.x.dims();
        ensure!(
            width == self.d_model(),
            "input width {width} is not d_model {} (shape {:?})",
            self.d_model(),
            input.x.dims()
        );
        if let Some((cached, _)) = cache.tensors() {
            ensure!(
                cached.dims()[0] == batch,
                "the cache holds {} sequences but the input has {batch}",
                cached.dims()[0]
            );
        }
        let offset = cache.len();
        let keys = offset + len;
        if let Some(padding) = &input.padding {
            ensure!(
                padding.dims() == [batch, keys],
                "padding mask shape {:?} is not [batch, cached + new positions] = [{batch}, {keys}]",
                padding.dims()
            );
        }
        let (q_nope, q_rope) = self.queries(input.x.clone(), offset)?;
        let (latent, rope_key) = self.compress(input.x, offset)?;
        let (latent, rope_key) = cache.extended(latent, rope_key);
        let attend = match input.path {
            LatentPath::Expanded => Self::attend_expanded,
            LatentPath::Absorbed => Self::attend_absorbed,
        };
        let (context, weights) = attend(
            self,
            q_nope,
            q_rope,
            latent.clone(),
            rope_key.clone(),
            &input.mask,
            &input.padding,
            offset,
            input.need_weights,
        )?;
        // Stored only once the call has succeeded: an error leaves the cache as it was.
        (cache.latent, cache.rope_key) = (Some(latent), Some(rope_key));
        // [B, h, T, d_v] → [B, T, h · d_v] → [B, T, D]
        let context = context
            .swap_dims(1, 2)
            .reshape([batch, len, self.n_heads * self.v_head_dim]);
        Ok(MultiHeadOutput {
            context: self.o_proj.forward(context),
            weights,
        })
    }

    /// `(q^C [B, h, T, d_nope], RoPE(q^R) [B, h, T, d_rope])`.
    fn queries(&self, x: Tensor<3>, offset: usize) -> Result<(Tensor<4>, Tensor<4>), AttnError> {
        let [batch, len, _] = x.dims();
        let q = self.query.forward(x);
        let (nope, rope) = (self.qk_nope_head_dim, self.qk_rope_head_dim);
        let q = q
            .reshape([batch, len, self.n_heads, nope + rope])
            .swap_dims(1, 2);
        let q_rope = self.rotary.apply(q.clone().narrow(3, nope, rope), offset)?;
        Ok((q.narrow(3, 0, nope), q_rope))
    }

    /// What the cache keeps for `x`: `(RMSNorm(c_KV) [B, T, d_c], RoPE(k^R) [B, T, d_rope])`.
    fn compress(&self, x: Tensor<3>, offset: usize) -> Result<(Tensor<3>, Tensor<3>), AttnError> {
        let [batch, len, _] = x.dims();
        let (rank, rope) = (self.kv_lora_rank, self.qk_rope_head_dim);
        let compressed = self.kv_a_proj_with_mqa.forward(x);
        let latent = self
            .kv_a_layernorm
            .forward(compressed.clone().narrow(2, 0, rank));
        let rope_key = compressed
            .narrow(2, rank, rope)
            .reshape([batch, 1, len, rope]);
        let rope_key = self
            .rotary
            .apply(rope_key, offset)?
            .reshape([batch, len, rope]);
        Ok((latent, rope_key))
    }

    /// The user's mask and padding as one `[B|1, 1, T|1, S]` mask.
    fn user_mask(
        mask: &Option<Tensor<3, Bool>>,
        padding: &Option<Tensor<2, Bool>>,
    ) -> Option<Tensor<4, Bool>> {
        let padding = padding.clone().map(|padding| {
            let [batch, keys] = padding.dims();
            padding.reshape([batch, 1, 1, keys])
        });
        either(mask.clone().map(|mask| mask.unsqueeze_dim(1)), padding)
    }

    #[allow(clippy::too_many_arguments)]
    fn attend_expanded(
        &self,
        q_nope: Tensor<4>,
        q_rope: Tensor<4>,
        latent: Tensor<3>,
        rope_key: Tensor<3>,
        mask: &Option<Tensor<3, Bool>>,
        padding: &Option<Tensor<2, Bool>>,
        offset: usize,
        need_weights: bool,
    ) -> Result<(Tensor<4>, Option<Tensor<4>>), AttnError> {
        let [batch, keys, _] = latent.dims();
        let (h, nope, rope, d_v) = (
            self.n_heads,
            self.qk_nope_head_dim,
            self.qk_rope_head_dim,
            self.v_head_dim,
        );
        // c_KV W^UKV: [B, S, h · (d_nope + d_v)] → [B, h, S, d_nope + d_v]
        let kv = self
            .kv_b_proj
            .forward(latent)
            .reshape([batch, keys, h, nope + d_v])
            .swap_dims(1, 2);
        let rope_key = rope_key
            .unsqueeze_dim::<4>(1)
            .expand([batch, h, keys, rope]);
        let key = Tensor::cat(vec![kv.clone().narrow(3, 0, nope), rope_key], 3);
        let value = kv.narrow(3, nope, d_v);
        let query = Tensor::cat(vec![q_nope, q_rope], 3);
        let mut attend = AttentionInput::new(query, key, value).query_offset(offset);
        if let Some(mask) = Self::user_mask(mask, padding) {
            attend = attend.mask(mask);
        }
        if need_weights {
            attend = attend.with_weights();
        }
        let output = self.attention.forward(attend)?;
        Ok((output.context, output.weights))
    }

    /// Every head's query `[q^C_i W^UK_iᵀ ; RoPE(q^R_i)]` attends over the shared
    /// `[c_KV ; RoPE(k^R)]` (the heads folded into the query axis, `[B, 1, h · T, d_c + d_rope]`,
    /// so keys are neither copied per head nor up-projected), then `W^UV_i` maps each head's
    /// latent context to its value width.
    #[allow(clippy::too_many_arguments)]
    fn attend_absorbed(
        &self,
        q_nope: Tensor<4>,
        q_rope: Tensor<4>,
        latent: Tensor<3>,
        rope_key: Tensor<3>,
        mask: &Option<Tensor<3, Bool>>,
        padding: &Option<Tensor<2, Bool>>,
        offset: usize,
        need_weights: bool,
    ) -> Result<(Tensor<4>, Option<Tensor<4>>), AttnError> {
        let [batch, h, len, _] = q_nope.dims();
        let keys = latent.dims()[1];
        let (rank, nope, rope, d_v) = (
            self.kv_lora_rank,
            self.qk_nope_head_dim,
            self.qk_rope_head_dim,
            self.v_head_dim,
        );
        // W^UKV as [d_c, h, d_nope + d_v]: W^UK_i = [.., i, ..d_nope], W^UV_i = [.., i, d_nope..].
        let up = self.kv_b_proj.weight.val().reshape([rank, h, nope + d_v]);
        let w_uk = up.clone().narrow(2, 0, nope).permute([1, 2, 0]); // [h, d_nope, d_c]
        let w_uv = up.narrow(2, nope, d_v).swap_dims(0, 1); // [h, d_c, d_v]
        let q_latent = q_nope.matmul(w_uk.unsqueeze::<4>().expand([batch, h, nope, rank]));
        let query =
            Tensor::cat(vec![q_latent, q_rope], 3).reshape([batch, 1, h * len, rank + rope]);
        let key = Tensor::cat(vec![latent.clone(), rope_key], 2).unsqueeze_dim::<4>(1);
        let value = latent.unsqueeze_dim::<4>(1);
        // Positions are per query row, which folding the heads scrambles: the pattern becomes an
        // explicit mask, laid out as the folded queries.
        let pattern = self
            .attention
            .pattern
            .mask(offset..offset + len, 0..keys, &key.device())
            .map(lift::<4, Bool>);
        let mask = either(Self::user_mask(mask, padding), pattern).map(|mask| {
            let [mask_batch, _, rows, _] = mask.dims();
            if rows == 1 {
                mask
            } else {
                mask.expand([mask_batch, h, len, keys])
                    .reshape([mask_batch, 1, h * len, keys])
            }
        });
        let attention = ScaledDotProduct {
            pattern: KeyPattern::Full,
            ..self.attention.clone()
        };
        let mut attend = AttentionInput::new(query, key, value);
        if let Some(mask) = mask {
            attend = attend.mask(mask);
        }
        if need_weights {
            attend = attend.with_weights();
        }
        let output = attention.forward(attend)?;
        let context = output
            .context
            .reshape([batch, h, len, rank])
            .matmul(w_uv.unsqueeze::<4>().expand([batch, h, rank, d_v]));
        let weights = output.weights.map(|w| w.reshape([batch, h, len, keys]));
        Ok((context, weights))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::tensor::{Distribution, TensorData};

    /// Heads 3, latent rank 10, keys 6 + 4, values 5: no width equals another or `D / h`.
    fn tiny(q_lora_rank: Option<usize>, device: &Device) -> MultiHeadLatent {
        MultiHeadLatentConfig::new(20, 3, 10, 6, 4, 5)
            .with_q_lora_rank(q_lora_rank)
            .with_attention(ScaledDotProductConfig::new().with_pattern(KeyPattern::Causal))
            .try_init(device)
            .unwrap()
    }

    fn max_error<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
        (a - b).abs().max().into_scalar()
    }

    #[test]
    fn impossible_settings_name_the_value() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error =
            |config: MultiHeadLatentConfig| config.try_init(&device).unwrap_err().to_string();
        let config = || MultiHeadLatentConfig::new(20, 3, 10, 6, 4, 5);
        assert_eq!(
            error(MultiHeadLatentConfig::new(20, 3, 0, 6, 4, 5)),
            "kv_lora_rank (the latent rank d_c) must be at least 1, got 0"
        );
        assert_eq!(
            error(config().with_q_lora_rank(Some(0))),
            "q_lora_rank must be at least 1 (None for a full-rank query projection), got 0"
        );
        assert_eq!(
            error(MultiHeadLatentConfig::new(20, 3, 10, 6, 5, 5)),
            "qk_rope_head_dim must be even and at least 2, got 5"
        );
        assert_eq!(
            error(MultiHeadLatentConfig::new(20, 0, 10, 6, 4, 5)),
            "n_heads must be at least 1, got 0"
        );
        assert_eq!(
            error(MultiHeadLatentConfig::new(20, 3, 10, 6, 4, 0)),
            "v_head_dim must be at least 1, got 0"
        );
        assert_eq!(
            error(config().with_rope_base(1.0)),
            "rotary base must be greater than 1, got 1"
        );
        let mla = tiny(None, &device);
        let error = mla
            .forward(MultiHeadLatentInput::new(Tensor::zeros([1, 2, 8], &device)))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "input width 8 is not d_model 20 (shape [1, 2, 8])"
        );
        let mut cache = LatentCache::new();
        let x = Tensor::<3>::zeros([2, 3, 20], &device);
        mla.forward_cached(MultiHeadLatentInput::new(x.clone()), &mut cache)
            .unwrap();
        let error = mla
            .forward_cached(
                MultiHeadLatentInput::new(x.clone().narrow(1, 0, 1))
                    .padding(Tensor::<2, Bool>::empty([2, 1], &device)),
                &mut cache,
            )
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "padding mask shape [2, 1] is not [batch, cached + new positions] = [2, 4]"
        );
        let error = mla
            .forward_cached(
                MultiHeadLatentInput::new(x.clone().narrow(1, 0, 1))
                    .mask(Tensor::<3, Bool>::empty([2, 1, 3], &device)),
                &mut cache,
            )
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "mask shape [2, 1, 1, 3] does not fit the scores shape [2, 3, 1, 4]"
        );
        assert_eq!(cache.len(), 3, "a failed call leaves the cache as it was");
        let error = mla
            .forward_cached(MultiHeadLatentInput::new(x.narrow(0, 0, 1)), &mut cache)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the cache holds 2 sequences but the input has 1"
        );
    }

    /// transformers' `yarn_apply_mscale`: DeepSeek-V3's factor 40 with `mscale_all_dim` 1.
    #[test]
    fn yarn_multiplies_the_softmax_scale_by_mscale_squared() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let config = MultiHeadLatentConfig::new(20, 3, 10, 6, 4, 5);
        let plain = config.try_init(&device).unwrap().attention.scale.unwrap();
        assert_eq!(plain, 1.0 / 10f64.sqrt());
        let mut yarn = RopeScaling::yarn(40.0, 4096);
        if let RopeScaling::Yarn {
            mscale,
            mscale_all_dim,
            ..
        } = &mut yarn
        {
            (*mscale, *mscale_all_dim) = (Some(1.0), Some(1.0));
        }
        let scaled = config
            .with_rope_scaling(yarn)
            .try_init(&device)
            .unwrap()
            .attention
            .scale
            .unwrap();
        let mscale = 0.1 * 40f64.ln() + 1.0;
        assert!((scaled / plain - mscale * mscale).abs() < 1e-12);
    }

    /// Causal attention over a left-padded row: its first two queries see only padding, so
    /// they get zero weights and a zero context on both paths.
    #[test]
    fn absorbed_equals_expanded_with_padding_and_all_masked_rows() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        device.seed(47);
        for q_lora_rank in [Some(12), None] {
            let mla = tiny(q_lora_rank, &device);
            let x = Tensor::<3>::random([2, 5, 20], Distribution::Normal(0.0, 1.0), &device);
            let padding = Tensor::<2, Bool>::from_data(
                TensorData::from([
                    [false, false, false, false, true],
                    [true, true, false, false, false],
                ]),
                &device,
            );
            let run = |input: MultiHeadLatentInput| {
                mla.forward(input.padding(padding.clone()).with_weights())
                    .unwrap()
            };
            let expanded = run(MultiHeadLatentInput::new(x.clone()));
            let absorbed = run(MultiHeadLatentInput::new(x.clone()).absorbed());
            let (expanded_weights, absorbed_weights) =
                (expanded.weights.unwrap(), absorbed.weights.unwrap());
            assert_eq!(absorbed_weights.dims(), [2, 3, 5, 5]);
            let context_error = max_error(expanded.context.clone(), absorbed.context.clone());
            let weights_error = max_error(expanded_weights.clone(), absorbed_weights);
            eprintln!(
                "MLA q_lora_rank {q_lora_rank:?}: absorbed vs expanded, context {context_error:.2e}, weights {weights_error:.2e}"
            );
            assert!(context_error < 1e-5 && weights_error < 1e-6);
            // Row 1's queries 0 and 1 see only padding (no bias: a zero context stays zero).
            let dead_context = expanded.context.narrow(0, 1, 1).narrow(1, 0, 2);
            let dead_weights = expanded_weights.narrow(0, 1, 1).narrow(2, 0, 2);
            for dead in [dead_context.abs().max(), dead_weights.abs().max()] {
                assert_eq!(dead.into_scalar::<f32>(), 0.0);
            }
        }
    }

    #[test]
    fn decoding_step_by_step_from_the_latent_cache_equals_the_whole_sequence() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        device.seed(7);
        for q_lora_rank in [Some(12), None] {
            let mla = tiny(q_lora_rank, &device);
            let x = Tensor::<3>::random([2, 6, 20], Distribution::Normal(0.0, 1.0), &device);
            let whole = mla
                .forward(MultiHeadLatentInput::new(x.clone()))
                .unwrap()
                .context;
            for path in [LatentPath::Expanded, LatentPath::Absorbed] {
                // A prompt of two positions, then one position a step.
                let mut cache = LatentCache::new();
                let mut outputs = Vec::new();
                for (start, len) in [(0, 2), (2, 1), (3, 1), (4, 1), (5, 1)] {
                    let mut input = MultiHeadLatentInput::new(x.clone().narrow(1, start, len));
                    input.path = path;
                    outputs.push(mla.forward_cached(input, &mut cache).unwrap().context);
                }
                let error = max_error(Tensor::cat(outputs, 1), whole.clone());
                eprintln!(
                    "MLA q_lora_rank {q_lora_rank:?}, {path:?}: step by step vs whole {error:.2e}"
                );
                assert!(error < 1e-5, "{path:?}: {error}");
                let (latent, rope_key) = cache.tensors().unwrap();
                assert_eq!((latent.dims(), rope_key.dims()), ([2, 6, 10], [2, 6, 4]));
                assert_eq!(cache.floats_per_position(), 10 + 4);
                assert_eq!(cache.bytes_per_position(), (10 + 4) * 4);
            }
        }
    }
}
