//! Multi-head attention (Vaswani et al. 2017) with grouped-query (Ainslie et al. 2023) and
//! multi-query (Shazeer 2019) variants, for self- and cross-attention:
//!
//! `MultiHead(Q, K, V) = Concat(head_1, …, head_h) W_O`, `head_i = Attention(Q W_Q^i, K W_K^g(i), V W_V^g(i))`
//!
//! where query head `i` uses key/value head `g(i) = ⌊i / (h / h_kv)⌋`: `h_kv = h` is standard
//! multi-head attention, `h_kv = 1` multi-query, anything in between grouped-query.
//!
//! Shapes: `query [B, Tq, D]`, `key`/`value [B, Tk, D]`, `mask [B|1, Tq|1, Tk]` (the same for
//! every head), `padding [B, Tk]`, `head_bias [B|1, h|1, Tq|1, Tk]` (e.g. ALiBi) →
//! `context [B, Tq, D]`, `weights [B, h, Tq, Tk]` when asked for. Heads have width
//! `d_head = D / h` unless set (Qwen3, Gemma: `h · d_head ≠ D`).
//!
//! The blocks of today's decoders are switches of the config:
//! - QK-norm (Henry et al. 2020; Dehghani et al. 2023; Qwen3): an RMSNorm over each head's query
//!   and key, before RoPE: `q_i ← RMSNorm(q_i)`, `k_i ← RMSNorm(k_i)`;
//! - learned attention sinks (gpt-oss): one logit `s_i` per head in every row's softmax,
//!   `w_j = exp(a_j) / (exp(s_i) + Σ_k exp(a_k))`;
//! - soft-capping, sliding windows and StreamingLLM sinks are the attention's own
//!   ([`ScaledDotProductConfig::softcap`], [`crate::attention::KeyPattern`]).
//!
//! For incremental decoding, [`KvCache`] keeps the projected keys and values of earlier steps
//! (self-attention) or of the encoder memory (cross-attention, projected once). Under a sliding
//! window (`KeyPattern::Window { causal: true, .. }`) or `KeyPattern::Sinks` it keeps only the
//! positions a later query may still see: at most `window (+ sinks)` however long the sequence
//! (Mistral's rolling buffer cache; StreamingLLM's cache, with the original positions).

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Bool, Device, Int, Tensor};

use super::scaled_dot::{AttentionInput, ScaledDotProduct, ScaledDotProductConfig};
use crate::error::ensure;
use crate::norm::{RmsNorm, RmsNormConfig};
use crate::position::RotaryEncoding;
use crate::quant::Project;
use crate::AttnError;

/// Configuration of [`MultiHead`].
#[derive(Config, Debug)]
pub struct MultiHeadConfig {
    /// Model width `D`.
    pub d_model: usize,
    /// Query heads `h`; must divide `d_model`.
    pub n_heads: usize,
    /// Key/value heads `h_kv`; must divide `n_heads`. `None` means `n_heads`.
    #[config(default = "None")]
    pub n_kv_heads: Option<usize>,
    /// Width of one head; `None` means `d_model / n_heads` (which must then divide evenly).
    #[config(default = "None")]
    pub d_head: Option<usize>,
    /// Biases on the four projections.
    #[config(default = true)]
    pub bias: bool,
    /// Bias on the output projection alone, when it differs from `bias` (Qwen2: biases on the
    /// query, key and value projections, none on the output).
    #[config(default = "None")]
    pub output_bias: Option<bool>,
    /// QK-norm, before RoPE: this RMSNorm on every head's query and key (its width `d_head`),
    /// or over all heads together (its width `h · d_head`; the keys' norm `h_kv · d_head` wide
    /// with the same settings: OLMo 2).
    #[config(default = "None")]
    pub qk_norm: Option<RmsNormConfig>,
    /// Learned attention sinks, one logit per head (gpt-oss), initialised to zero.
    #[config(default = false)]
    pub sinks: bool,
    /// Scale, positional pattern (causal, local, strided) and implementation of the attention.
    #[config(default = "ScaledDotProductConfig::new()")]
    pub attention: ScaledDotProductConfig,
}

/// Multi-head attention with `n_kv_heads` key/value heads; its projections are Burn's `Linear`
/// unless the model keeps quantized weights ([`Projection`](crate::quant::Projection)).
#[derive(Module, Debug)]
pub struct MultiHead<P: Project = Linear> {
    /// `W_Q`: `D → h · d_head`.
    pub query: P,
    /// `W_K`: `D → h_kv · d_head`.
    pub key: P,
    /// `W_V`: `D → h_kv · d_head`.
    pub value: P,
    /// `W_O`: `h · d_head → D`.
    pub output: P,
    /// The per-head attention.
    pub attention: ScaledDotProduct,
    /// QK-norm of the queries (`q_norm`), `[d_head]` or `[h · d_head]`.
    pub query_norm: Option<RmsNorm>,
    /// QK-norm of the keys (`k_norm`), `[d_head]` or `[h_kv · d_head]`.
    pub key_norm: Option<RmsNorm>,
    /// Learned sink logits, `[h]`.
    pub sinks: Option<Param<Tensor<1>>>,
    /// Query heads.
    pub n_heads: usize,
    /// Key/value heads.
    pub n_kv_heads: usize,
}

/// Inputs of one multi-head attention call.
#[derive(Debug, Clone)]
pub struct MultiHeadInput {
    /// `[B, Tq, D]`
    pub query: Tensor<3>,
    /// `[B, Tk, D]`
    pub key: Tensor<3>,
    /// `[B, Tk, D]`
    pub value: Tensor<3>,
    /// `[B|1, Tq|1, Tk]`, `true` = may not attend.
    pub mask: Option<Tensor<3, Bool>>,
    /// `[B, Tk]`, `true` = padding.
    pub padding: Option<Tensor<2, Bool>>,
    /// `[B|1, h|1, Tq|1, Tk]`, added to the scores.
    pub head_bias: Option<Tensor<4>>,
    /// Rotary position encoding applied to queries and keys.
    pub rotary: Option<RotaryEncoding>,
    /// Return the per-head weights.
    pub need_weights: bool,
}

/// Context and, when asked, per-head weights.
#[derive(Debug, Clone)]
pub struct MultiHeadOutput {
    /// `[B, Tq, D]`
    pub context: Tensor<3>,
    /// `[B, h, Tq, Tk]`
    pub weights: Option<Tensor<4>>,
}

/// Projected keys and values kept between decoding steps, `[B, h_kv, T, d_head]`, with the
/// position of each kept key.
///
/// A cache that keeps every position, or the last ones of a sliding window, holds its keys and
/// values in buffers with room to spare and writes each step's into them: flex writes in place
/// into a buffer it holds alone, and its attention reads the held positions where they lie, so a
/// decoding step no longer copies the whole cache. A window's oldest positions are let go by
/// moving the start of the held ones; the buffer is compacted when its end is reached.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    /// `[B, h_kv, capacity, d_head]`, positions `start..start + len` in use.
    key: Option<Tensor<4>>,
    value: Option<Tensor<4>>,
    /// Where the held positions begin in the buffers.
    start: usize,
    /// Positions held.
    len: usize,
    /// The position of each cached key (a sliding window drops the old ones).
    positions: Vec<usize>,
    /// Positions seen so far: the position of the next query.
    seen: usize,
    fixed: bool,
}

impl KvCache {
    /// For self-attention: each call's keys and values are appended.
    pub fn growing() -> Self {
        Self::default()
    }

    /// For cross-attention over a fixed memory: projected on the first call, reused after.
    pub fn fixed() -> Self {
        Self {
            fixed: true,
            ..Self::default()
        }
    }

    /// Number of cached positions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions seen so far (the position the next query gets), kept or not.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// The cached keys and values, `[B, h_kv, T, d_head]` each (views of the buffers).
    pub fn tensors(&self) -> Option<(Tensor<4>, Tensor<4>)> {
        let held = |buffer: &Tensor<4>| buffer.clone().narrow(2, self.start, self.len);
        Some((held(self.key.as_ref()?), held(self.value.as_ref()?)))
    }

    /// Appends `key`, `value` `[B, h_kv, T_new, d]` after the positions held and returns all
    /// of them (views); when the buffers' end is reached, the held positions move to the start of
    /// buffers with room for half as many again.
    fn append(&mut self, key: Tensor<4>, value: Tensor<4>) -> (Tensor<4>, Tensor<4>) {
        let (start, len, new) = (self.start, self.len, key.dims()[2]);
        let fits = |buffer: &Option<Tensor<4>>| {
            buffer
                .as_ref()
                .is_some_and(|b| start + len + new <= b.dims()[2])
        };
        let at = if fits(&self.key) && fits(&self.value) {
            start
        } else {
            0
        };
        let write = |buffer: Option<Tensor<4>>, new_rows: Tensor<4>| {
            let [batch, heads, _, width] = new_rows.dims();
            let buffer = match buffer {
                Some(buffer) if at == start && buffer.dims()[2] >= start + len + new => buffer,
                old => {
                    let capacity = (len + new) + (len + new) / 2;
                    let fresh =
                        Tensor::zeros([batch, heads, capacity.max(16), width], &new_rows.device());
                    match old {
                        Some(old) if len > 0 => fresh
                            .slice_assign([0..batch, 0..heads, 0..len], old.narrow(2, start, len)),
                        _ => fresh,
                    }
                }
            };
            buffer.slice_assign([0..batch, 0..heads, at + len..at + len + new], new_rows)
        };
        // Taken out of the cache first: a buffer held once is written in place.
        let key = write(self.key.take(), key);
        let value = write(self.value.take(), value);
        (self.key, self.value, self.start, self.len) = (Some(key), Some(value), at, len + new);
        self.tensors().expect("just written")
    }

    /// Lets go of the `n` oldest positions held.
    fn drop_oldest(&mut self, n: usize) {
        self.start += n;
        self.len -= n;
        self.positions.drain(..n);
    }

    /// Keeps the batch rows `indices [B']` in that order (beam search reorders its hypotheses).
    pub fn select(&mut self, indices: Tensor<1, Int>) {
        let pick = |t: &mut Option<Tensor<4>>| {
            if let Some(tensor) = t.take() {
                *t = Some(tensor.select(0, indices.clone()));
            }
        };
        pick(&mut self.key);
        pick(&mut self.value);
    }
}

impl MultiHeadInput {
    /// Queries attending over keys and values (cross-attention).
    pub fn new(query: Tensor<3>, key: Tensor<3>, value: Tensor<3>) -> Self {
        Self {
            query,
            key,
            value,
            mask: None,
            padding: None,
            head_bias: None,
            rotary: None,
            need_weights: false,
        }
    }

    /// A sequence attending over itself.
    pub fn self_attn(x: Tensor<3>) -> Self {
        Self::new(x.clone(), x.clone(), x)
    }

    /// Sets the mask `[B|1, Tq|1, Tk]`.
    pub fn mask(mut self, mask: Tensor<3, Bool>) -> Self {
        self.mask = Some(mask);
        self
    }

    /// Sets the key padding mask `[B, Tk]`.
    pub fn padding(mut self, padding: Tensor<2, Bool>) -> Self {
        self.padding = Some(padding);
        self
    }

    /// Sets a per-head additive bias `[B|1, h|1, Tq|1, Tk]`.
    pub fn head_bias(mut self, bias: Tensor<4>) -> Self {
        self.head_bias = Some(bias);
        self
    }

    /// Rotates queries and keys by their positions (RoPE).
    pub fn rotary(mut self, rotary: RotaryEncoding) -> Self {
        self.rotary = Some(rotary);
        self
    }

    /// Asks for the per-head weights.
    pub fn with_weights(mut self) -> Self {
        self.need_weights = true;
        self
    }
}

impl MultiHeadConfig {
    /// Builds the module, checking that the heads divide evenly.
    pub fn try_init(&self, device: &Device) -> Result<MultiHead, AttnError> {
        let (d_model, n_heads) = (self.d_model, self.n_heads);
        let n_kv_heads = self.n_kv_heads.unwrap_or(n_heads);
        ensure!(n_heads >= 1, "n_heads must be at least 1, got {n_heads}");
        let d_head = match self.d_head {
            Some(d_head) => {
                ensure!(d_head >= 1, "d_head must be at least 1, got {d_head}");
                d_head
            }
            None => {
                ensure!(
                    d_model % n_heads == 0,
                    "d_model {d_model} is not divisible by n_heads {n_heads}"
                );
                d_model / n_heads
            }
        };
        ensure!(
            n_kv_heads >= 1 && n_heads % n_kv_heads == 0,
            "n_heads {n_heads} is not divisible by n_kv_heads {n_kv_heads}"
        );
        let (query_norm, key_norm) = match &self.qk_norm {
            Some(norm) if norm.d_model == d_head => {
                (Some(norm.try_init(device)?), Some(norm.try_init(device)?))
            }
            Some(norm) if norm.d_model == n_heads * d_head => {
                let key = RmsNormConfig {
                    d_model: n_kv_heads * d_head,
                    ..norm.clone()
                };
                (Some(norm.try_init(device)?), Some(key.try_init(device)?))
            }
            Some(norm) => {
                return Err(AttnError::new(format!(
                    "QK-norm width {} is neither d_head {d_head} nor all heads' {}",
                    norm.d_model,
                    n_heads * d_head
                )))
            }
            None => (None, None),
        };
        let linear =
            |d_in, d_out, bias| LinearConfig::new(d_in, d_out).with_bias(bias).init(device);
        Ok(MultiHead {
            query: linear(d_model, n_heads * d_head, self.bias),
            key: linear(d_model, n_kv_heads * d_head, self.bias),
            value: linear(d_model, n_kv_heads * d_head, self.bias),
            output: linear(
                n_heads * d_head,
                d_model,
                self.output_bias.unwrap_or(self.bias),
            ),
            attention: self.attention.try_init()?,
            query_norm,
            key_norm,
            sinks: self
                .sinks
                .then(|| Param::from_tensor(Tensor::zeros([n_heads], device))),
            n_heads,
            n_kv_heads,
        })
    }
}

impl<P: Project> MultiHead<P> {
    /// The same module with each projection passed through `f` (e.g. into a
    /// [`Projection`](crate::quant::Projection) that may hold quantized weights).
    pub fn map_projections<Q: Project>(self, mut f: impl FnMut(P) -> Q) -> MultiHead<Q> {
        MultiHead {
            query: f(self.query),
            key: f(self.key),
            value: f(self.value),
            output: f(self.output),
            attention: self.attention,
            query_norm: self.query_norm,
            key_norm: self.key_norm,
            sinks: self.sinks,
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
        }
    }

    /// Width of one head.
    pub fn d_head(&self) -> usize {
        self.query.d_out() / self.n_heads
    }

    /// Attends over the given keys and values.
    pub fn forward(&self, input: MultiHeadInput) -> Result<MultiHeadOutput, AttnError> {
        self.forward_cached(input, &mut KvCache::growing())
    }

    /// Attends with a cache: for self-attention the new keys and values are appended to the
    /// cached ones (and the causal/local pattern places the queries after them); for a
    /// [`KvCache::fixed`] cache the memory is projected once and reused.
    pub fn forward_cached(
        &self,
        input: MultiHeadInput,
        cache: &mut KvCache,
    ) -> Result<MultiHeadOutput, AttnError> {
        self.validate(&input)?;
        let [batch, q_len, _] = input.query.dims();
        let offset = if cache.fixed { 0 } else { cache.seen };
        let mut query = self.normed_heads(
            self.query.project(input.query),
            self.n_heads,
            self.query_norm.as_ref(),
        );
        if let Some(rotary) = &input.rotary {
            query = rotary.apply(query, offset)?;
        }
        let (key, value, positions) = match (cache.fixed, cache.tensors()) {
            (true, Some((key, value))) => (key, value, cache.positions.clone()),
            (fixed, cached) => {
                let mut key = self.normed_heads(
                    self.key.project(input.key),
                    self.n_kv_heads,
                    self.key_norm.as_ref(),
                );
                if let Some(rotary) = &input.rotary {
                    key = rotary.apply(key, offset)?;
                }
                let value = self.split_heads(self.value.project(input.value), self.n_kv_heads);
                let k_new = key.dims()[2];
                let mut positions = if fixed {
                    Vec::new()
                } else {
                    std::mem::take(&mut cache.positions)
                };
                positions.extend(offset..offset + k_new);
                cache.seen = offset + k_new;
                // The positions a later query may still see: all of them, or a window's last ones.
                let kept_from = match self.attention.pattern.retained(cache.seen) {
                    None => Some(0),
                    Some([sinks, recent]) if sinks.is_empty() => Some(recent.start),
                    Some(_) => None,
                };
                if let (false, Some(kept_from)) = (fixed, kept_from) {
                    // Written into the buffers; the positions before the window let go after.
                    drop(cached);
                    let (key, value) = cache.append(key, value);
                    cache.positions = positions.clone();
                    cache.drop_oldest(positions.iter().take_while(|&&p| p < kept_from).count());
                    (key, value, positions)
                } else {
                    let (key, value) = match cached {
                        Some((old_key, old_value)) if !fixed => (
                            Tensor::cat(vec![old_key, key], 2),
                            Tensor::cat(vec![old_value, value], 2),
                        ),
                        _ => (key, value),
                    };
                    self.store(cache, key.clone(), value.clone(), &positions);
                    (key, value, positions)
                }
            }
        };
        let k_len = key.dims()[2];
        // One new query that sees every held key (any pattern once its cache holds only what the
        // query sees, as a sliding window's does): the pattern masks nothing and is left out.
        let sees_every_key = q_len == 1
            && positions
                .iter()
                .all(|&j| self.attention.pattern.allows(offset, j));
        // Keys shared by a group of heads: the group's queries become rows of their key/value
        // head, and the keys are read once instead of copied per query head (decoding's largest
        // copy). On rayon's threads (flex) only when the key/value heads are enough to keep every
        // thread busy: its kernel splits the heads over the threads, and a lone head's rows on one
        // thread cost more than the copies (Gemma 3 270M's one head: docs/MEASUREMENTS.md).
        let group = self.n_heads / self.n_kv_heads;
        let fold = sees_every_key
            && group > 1
            && self.sinks.is_none()
            && input.mask.is_none()
            && input.head_bias.is_none()
            && !input.need_weights
            && (batch * self.n_kv_heads >= rayon::current_num_threads()
                || !crate::workers::computes_on_rayon(&query.device()));
        let (query, key, value) = if fold {
            let query = query.reshape([batch, self.n_kv_heads, group, self.d_head()]);
            (query, key, value)
        } else {
            (query, self.repeat_kv(key), self.repeat_kv(value))
        };
        let mut attend = AttentionInput::new(query, key, value).query_offset(offset);
        if !sees_every_key && positions.iter().copied().ne(0..k_len) {
            attend = attend.key_positions(positions);
        }
        if let Some(sinks) = &self.sinks {
            attend = attend.sink(sinks.val().reshape([1, self.n_heads, 1, 1]));
        }
        if let Some(mask) = input.mask {
            attend = attend.mask(mask.unsqueeze_dim(1));
        }
        if let Some(padding) = input.padding {
            ensure!(
                padding.dims() == [batch, k_len],
                "padding mask shape {:?} is not [batch, key_len] = [{batch}, {k_len}]",
                padding.dims()
            );
            attend = attend.mask_pad(padding);
        }
        if let Some(bias) = input.head_bias {
            attend = attend.bias(bias);
        }
        if input.need_weights {
            attend = attend.with_weights();
        }
        let output = if sees_every_key {
            self.attention.unpatterned().forward(attend)?
        } else {
            self.attention.forward(attend)?
        };
        let context = if fold {
            output
                .context
                .reshape([batch, q_len, self.n_heads * self.d_head()])
        } else {
            output
                .context
                .swap_dims(1, 2)
                .reshape([batch, q_len, self.n_heads * self.d_head()])
        };
        Ok(MultiHeadOutput {
            context: self.output.project(context),
            weights: output.weights,
        })
    }

    /// Keeps in the cache the keys and values a later query may still see (all of them, unless
    /// the pattern is a causal sliding window or sinks with a window).
    fn store(&self, cache: &mut KvCache, key: Tensor<4>, value: Tensor<4>, positions: &[usize]) {
        let kept: Vec<usize> = match self.attention.pattern.retained(cache.seen) {
            Some(ranges) if !cache.fixed => (0..positions.len())
                .filter(|&slot| ranges.iter().any(|r| r.contains(&positions[slot])))
                .collect(),
            _ => (0..positions.len()).collect(),
        };
        (cache.start, cache.len) = (0, kept.len());
        if kept.len() == positions.len() {
            (cache.key, cache.value) = (Some(key), Some(value));
            cache.positions = positions.to_vec();
            return;
        }
        let slots: Vec<i64> = kept.iter().map(|&slot| slot as i64).collect();
        let slots = Tensor::<1, Int>::from_data(
            burn::tensor::TensorData::new(slots, [kept.len()]),
            &key.device(),
        );
        cache.key = Some(key.select(2, slots.clone()));
        cache.value = Some(value.select(2, slots));
        cache.positions = kept.iter().map(|&slot| positions[slot]).collect();
    }

    fn validate(&self, input: &MultiHeadInput) -> Result<(), AttnError> {
        let d_model = self.query.d_in();
        for (name, tensor) in [
            ("query", &input.query),
            ("key", &input.key),
            ("value", &input.value),
        ] {
            let [_, _, width] = tensor.dims();
            ensure!(
                width == d_model,
                "{name} width {width} is not d_model {d_model} (shape {:?})",
                tensor.dims()
            );
        }
        let ([qb, ..], [kb, k_len, _], [vb, v_len, _]) =
            (input.query.dims(), input.key.dims(), input.value.dims());
        ensure!(
            qb == kb && kb == vb,
            "batch sizes differ: query {qb}, key {kb}, value {vb}"
        );
        ensure!(
            k_len == v_len,
            "key length {k_len} differs from value length {v_len}"
        );
        Ok(())
    }

    /// `[B, T, n·d_head]` → `[B, n, T, d_head]`.
    /// Projected `x [B, T, n · d_head]` → `[B, n, T, d_head]`, QK-normed over each head or over
    /// all `n` together, as the norm's width says.
    fn normed_heads(&self, x: Tensor<3>, n: usize, norm: Option<&RmsNorm>) -> Tensor<4> {
        match norm {
            Some(norm) if norm.weight.val().dims()[0] != self.d_head() => {
                self.split_heads(norm.forward(x), n)
            }
            Some(norm) => norm.forward(self.split_heads(x, n)),
            None => self.split_heads(x, n),
        }
    }

    fn split_heads(&self, x: Tensor<3>, n: usize) -> Tensor<4> {
        let [batch, len, _] = x.dims();
        x.reshape([batch, len, n, self.d_head()]).swap_dims(1, 2)
    }

    /// `[B, h_kv, T, d]` → `[B, h, T, d]`, each key/value head shared by `h / h_kv` consecutive query heads.
    fn repeat_kv(&self, x: Tensor<4>) -> Tensor<4> {
        let group = self.n_heads / self.n_kv_heads;
        if group == 1 {
            return x;
        }
        let [batch, kv_heads, len, d_head] = x.dims();
        x.unsqueeze_dim::<5>(2)
            .expand([batch, kv_heads, group, len, d_head])
            .reshape([batch, kv_heads * group, len, d_head])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};

    #[test]
    fn bad_head_counts_and_widths_name_the_values() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = MultiHeadConfig::new(10, 3).try_init(&device).unwrap_err();
        assert_eq!(
            error.to_string(),
            "d_model 10 is not divisible by n_heads 3"
        );
        let error = MultiHeadConfig::new(12, 6)
            .with_n_kv_heads(Some(4))
            .try_init(&device)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "n_heads 6 is not divisible by n_kv_heads 4"
        );
        let mha = MultiHeadConfig::new(8, 2).try_init(&device).unwrap();
        let error = mha
            .forward(MultiHeadInput::new(
                Tensor::zeros([1, 2, 8], &device),
                Tensor::zeros([1, 3, 6], &device),
                Tensor::zeros([1, 3, 8], &device),
            ))
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("key width 6 is not d_model 8"),
            "{error}"
        );
    }

    #[test]
    fn the_cache_gives_the_same_result_as_the_whole_sequence() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let attention =
            ScaledDotProductConfig::new().with_pattern(crate::attention::KeyPattern::Causal);
        let mha = MultiHeadConfig::new(8, 4)
            .with_n_kv_heads(Some(2))
            .with_attention(attention)
            .try_init(&device)
            .unwrap();
        let x = Tensor::<3>::random([2, 5, 8], burn::tensor::Distribution::Default, &device);
        let whole = mha
            .forward(MultiHeadInput::self_attn(x.clone()))
            .unwrap()
            .context;
        let mut cache = KvCache::growing();
        let steps: Vec<Tensor<3>> = (0..5)
            .map(|t| {
                mha.forward_cached(
                    MultiHeadInput::self_attn(x.clone().narrow(1, t, 1)),
                    &mut cache,
                )
                .unwrap()
                .context
            })
            .collect();
        assert_eq!(cache.len(), 5);
        Tensor::cat(steps, 1)
            .into_data()
            .assert_approx_eq::<f32>(&whole.into_data(), burn::tensor::Tolerance::absolute(1e-5));
    }

    /// Decodes `x` one token at a time and compares with the whole sequence at once; returns
    /// the largest number of positions the cache held.
    fn step_by_step_equals_whole(
        mha: &MultiHead,
        x: Tensor<3>,
        rotary: Option<RotaryEncoding>,
    ) -> usize {
        let with_rotary = |input: MultiHeadInput| match &rotary {
            Some(rotary) => input.rotary(rotary.clone()),
            None => input,
        };
        let whole = mha
            .forward(with_rotary(MultiHeadInput::self_attn(x.clone())))
            .unwrap()
            .context;
        let mut cache = KvCache::growing();
        let mut held = 0;
        let steps: Vec<Tensor<3>> = (0..x.dims()[1])
            .map(|t| {
                let step = with_rotary(MultiHeadInput::self_attn(x.clone().narrow(1, t, 1)));
                let context = mha.forward_cached(step, &mut cache).unwrap().context;
                held = held.max(cache.len());
                context
            })
            .collect();
        assert_eq!(cache.seen(), x.dims()[1]);
        Tensor::cat(steps, 1)
            .into_data()
            .assert_approx_eq::<f32>(&whole.into_data(), burn::tensor::Tolerance::absolute(1e-5));
        held
    }

    #[test]
    fn a_sliding_window_cache_holds_the_window_however_long_the_sequence() {
        use crate::attention::KeyPattern;
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        device.seed(7);
        let rotary = crate::position::RotaryConfig::new(4).try_init().unwrap();
        // Runs past the window (3) and past window + sinks (2 + 3) several times over, and past
        // the window's buffers (16 positions) twice, where the held keys move to their start.
        for (pattern, bound) in [
            (
                KeyPattern::Window {
                    window: 3,
                    causal: true,
                },
                3,
            ),
            (
                KeyPattern::Sinks {
                    sinks: 2,
                    window: 3,
                },
                5,
            ),
        ] {
            let mha = MultiHeadConfig::new(8, 2)
                .with_n_kv_heads(Some(1))
                .with_attention(ScaledDotProductConfig::new().with_pattern(pattern))
                .try_init(&device)
                .unwrap();
            let x = Tensor::<3>::random([2, 40, 8], burn::tensor::Distribution::Default, &device);
            let held = step_by_step_equals_whole(&mha, x, Some(rotary.clone()));
            assert_eq!(held, bound, "{pattern:?}");
        }
    }

    #[test]
    fn qk_norm_and_learned_sinks_decode_as_they_attend() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        device.seed(11);
        let mut mha = MultiHeadConfig::new(8, 4)
            .with_n_kv_heads(Some(2))
            .with_d_head(Some(3))
            .with_qk_norm(Some(RmsNormConfig::new(3)))
            .with_sinks(true)
            .with_attention(
                ScaledDotProductConfig::new().with_pattern(crate::attention::KeyPattern::Causal),
            )
            .try_init(&device)
            .unwrap();
        mha.sinks = Some(Param::from_tensor(Tensor::from_floats(
            [0.5, -1.0, 2.0, 0.0],
            &device,
        )));
        let x = Tensor::<3>::random([2, 6, 8], burn::tensor::Distribution::Default, &device);
        step_by_step_equals_whole(&mha, x.clone(), None);
        // A sink takes a share of every row: the weights sum to less than one.
        let weights = mha
            .forward(MultiHeadInput::self_attn(x).with_weights())
            .unwrap()
            .weights
            .unwrap();
        let sums: Vec<f32> = weights.sum_dim(3).into_data().iter::<f32>().collect();
        assert!(sums.iter().all(|&s| s > 0.0 && s < 1.0), "{sums:?}");
    }

    #[test]
    fn an_explicit_head_width_and_qk_norm_are_checked() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let error = MultiHeadConfig::new(8, 4)
            .with_d_head(Some(3))
            .with_qk_norm(Some(RmsNormConfig::new(2)))
            .try_init(&device)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "QK-norm width 2 is neither d_head 3 nor all heads' 12"
        );
        let mha = MultiHeadConfig::new(10, 3)
            .with_d_head(Some(5))
            .with_output_bias(Some(false))
            .try_init(&device)
            .unwrap();
        assert_eq!(mha.d_head(), 5);
        assert_eq!(mha.output.weight.dims(), [15, 10]);
        assert!(mha.query.bias.is_some() && mha.output.bias.is_none());
    }
}
