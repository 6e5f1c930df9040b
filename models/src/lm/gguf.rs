//! A [`CausalLm`] from a GGUF file (llama.cpp's format, see [`crate::gguf`]): the
//! hyper-parameters from the `<arch>.*` metadata, written as the `config.json` that
//! `transformers` would build from the same file and read by [`CausalLmConfig::from_json`]; the
//! tensors by llama.cpp's names, with the conventions of its converter (`convert_hf_to_gguf.py`)
//! undone where they differ from `transformers`':
//!
//! - `llama` (which also holds Mistral and SmolLM): the converter permutes the rows of `W_Q`
//!   and `W_K` of each head from the halves layout of RoPE to the interleaved one
//!   (`LlamaModel.permute`): Hugging Face row `h·d + i·d/2 + j` is GGUF row `h·d + 2j + i`;
//! - `gemma2`, `gemma3`: the converter stores every norm's gain as `1 + w`
//!   (`Gemma2Model.modify_tensors`, Gemma 3's `norm_shift`); `w` is restored;
//! - neither keeps `query_pre_attn_scalar`: llama.cpp scales Gemma's scores by `1/√key_length`,
//!   and so does this reader.
//!
//! [`GgufWeights`] says how the quantized tensors are held: dequantized at load to the
//! backend's float type (any backend), or kept in their blocks and multiplied from them
//! ([`crate::quant`]; the file stays mapped and only `W_Q`, `W_K` of `llama` files are copied,
//! to undo the permutation).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use burn::module::Param;
use burn::nn::{Embedding, Linear};
use burn::tensor::{Device, Tensor, TensorData};
use serde_json::{json, Map, Value};

use super::config::CausalLmConfig;
use super::model::{CausalLm, LmAttention, LmFeedForward};
use crate::error::ensure;
use crate::gguf::{GgufFile, TensorInfo};
use crate::norm::RmsNorm;
use crate::quant::{
    GgmlType, Projection, QuantMatrix, QuantizedEmbedding, QuantizedLinear, SharedBytes,
    TokenEmbedding,
};
use crate::AttnError;

/// How the quantized tensors of a GGUF file are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgufWeights {
    /// In their blocks, multiplied from them (the file's size in memory; native on CPU
    /// backends, a correct but slow host fallback on GPUs).
    Quantized,
    /// Dequantized at load to the backend's float type.
    Dequantized,
}

/// The architectures read, by `general.architecture`.
const ARCHITECTURES: &str = "llama, qwen2, qwen3, gemma2, gemma3";

/// The `config.json` that the file's metadata describes, as `transformers` builds it.
pub fn gguf_config(file: &GgufFile) -> Result<CausalLmConfig, AttnError> {
    let arch = file.string("general.architecture")?;
    let model_type = match arch {
        "llama" | "qwen2" | "qwen3" | "gemma2" => arch,
        "gemma3" => "gemma3_text",
        other => {
            return Err(AttnError::new(format!(
                "GGUF architecture {other:?} is not supported ({ARCHITECTURES})"
            )))
        }
    };
    let key = |name: &str| format!("{arch}.{name}");
    let embedding = file
        .tensor("token_embd.weight")
        .ok_or_else(|| AttnError::new("GGUF file has no tensor token_embd.weight"))?;
    ensure!(
        embedding.dims.len() == 2,
        "GGUF tensor token_embd.weight has shape {:?}, not [hidden, vocab]",
        embedding.dims
    );
    let mut config = Map::new();
    let mut set = |name: &str, value: Value| {
        config.insert(name.to_string(), value);
    };
    set("model_type", json!(model_type));
    set("vocab_size", json!(embedding.dims[1]));
    // The model is built from the metadata's sizes before a tensor is read, and some of what it
    // allocates is sized by them (the norms, RoPE's frequencies, a window per layer): each is
    // checked against the tensors first, so that none is an unchecked number.
    let width = file.usize(&key("embedding_length"))?;
    ensure!(
        width == embedding.dims[0],
        "GGUF metadata {} is {width}, but tensor token_embd.weight is {} wide",
        key("embedding_length"),
        embedding.dims[0]
    );
    set("hidden_size", json!(width));
    set(
        "intermediate_size",
        json!(file.usize(&key("feed_forward_length"))?),
    );
    let layers = file.usize(&key("block_count"))?;
    let names: HashSet<&str> = file.tensors.iter().map(|t| t.name.as_str()).collect();
    if let Some(n) =
        (0..layers).find(|n| !names.contains(format!("blk.{n}.attn_norm.weight").as_str()))
    {
        return Err(AttnError::new(format!(
            "GGUF metadata {} is {layers}, but the file has no tensor blk.{n}.attn_norm.weight",
            key("block_count")
        )));
    }
    set("num_hidden_layers", json!(layers));
    let heads = file.usize(&key("attention.head_count"))?;
    set("num_attention_heads", json!(heads));
    set(
        "num_key_value_heads",
        json!(file
            .usize_opt(&key("attention.head_count_kv"))?
            .unwrap_or(heads)),
    );
    let head_dim = file.usize_opt(&key("attention.key_length"))?;
    if let Some(head_dim) = head_dim {
        set("head_dim", json!(head_dim));
    }
    if arch == "gemma2" || arch == "gemma3" {
        // No key holds it: llama.cpp scales the scores by 1/√key_length.
        let head_dim = head_dim.unwrap_or(file.usize(&key("embedding_length"))? / heads.max(1));
        set("query_pre_attn_scalar", json!(head_dim));
    }
    set(
        "max_position_embeddings",
        json!(file.usize(&key("context_length"))?),
    );
    if let Some(eps) = file.f64_opt(&key("attention.layer_norm_rms_epsilon"))? {
        set("rms_norm_eps", json!(eps));
    }
    let mut rope = Map::new();
    rope.insert(
        "rope_theta".into(),
        json!(file.f64_opt(&key("rope.freq_base"))?.unwrap_or(10000.0)),
    );
    rope.insert("rope_type".into(), json!("default"));
    if let Some(kind) = file.get(&key("rope.scaling.type")) {
        let kind = kind.as_str().ok_or_else(|| {
            AttnError::new(format!(
                "GGUF metadata {} is not a string",
                key("rope.scaling.type")
            ))
        })?;
        if kind != "none" {
            rope.insert("rope_type".into(), json!(kind));
            if let Some(factor) = file.f64_opt(&key("rope.scaling.factor"))? {
                rope.insert("factor".into(), json!(factor));
            }
            if let Some(n) = file.usize_opt(&key("rope.scaling.original_context_length"))? {
                rope.insert("original_max_position_embeddings".into(), json!(n));
            }
        }
    }
    set("rope_parameters", Value::Object(rope));
    if let Some(local) = file.f64_opt(&key("rope.freq_base_swa"))? {
        set("rope_local_base_freq", json!(local));
    }
    if let Some(pattern) = file.usize_opt(&key("attention.sliding_window_pattern"))? {
        set("sliding_window_pattern", json!(pattern));
    }
    ensure!(
        file.tensor("rope_freqs.weight").is_none(),
        "GGUF tensor rope_freqs.weight (Llama 3's per-frequency RoPE factors) is not supported"
    );
    if let Some(window) = file.usize_opt(&key("attention.sliding_window"))? {
        set("sliding_window", json!(window));
    }
    for cap in ["attn_logit_softcapping", "final_logit_softcapping"] {
        if let Some(value) = file.f64_opt(&key(cap))? {
            set(cap, json!(value));
        }
    }
    set(
        "tie_word_embeddings",
        json!(file.tensor("output.weight").is_none()),
    );
    if let Some(eos) = file.usize_opt("tokenizer.ggml.eos_token_id")? {
        set("eos_token_id", json!(eos));
    }
    let config = CausalLmConfig::from_json(&Value::Object(config).to_string())
        .map_err(|error| AttnError::new(format!("GGUF metadata: {error}")))?;
    // The heads' width (the QK-norms', RoPE's), by the first layer's W_Q.
    let name = "blk.0.attn_q.weight";
    let query = file
        .tensor(name)
        .ok_or_else(|| AttnError::new(format!("GGUF file has no tensor {name}")))?;
    let (heads, head_dim) = (config.num_attention_heads, config.head_dim);
    ensure!(
        heads
            .checked_mul(head_dim)
            .is_some_and(|rows| query.dims == [config.hidden_size, rows]),
        "GGUF tensor {name} has shape {:?}, not the metadata's [{}, {heads} heads × {head_dim}]",
        query.dims,
        config.hidden_size
    );
    Ok(config)
}

/// Reads tensors of one file into modules.
struct Loader<'a> {
    file: &'a GgufFile,
    weights: GgufWeights,
    device: &'a Device,
}

impl Loader<'_> {
    fn info(&self, name: &str) -> Result<&TensorInfo, AttnError> {
        self.file
            .tensor(name)
            .ok_or_else(|| AttnError::new(format!("GGUF file has no tensor {name}")))
    }

    /// A tensor's values as floats, checked to be of shape `ne` (innermost first) and finite.
    fn floats(&self, name: &str, ne: &[usize]) -> Result<Vec<f32>, AttnError> {
        let info = self.info(name)?;
        ensure!(
            info.dims == ne,
            "GGUF tensor {name} has shape {:?}, not the config's {ne:?}",
            info.dims
        );
        let mut values = vec![0.0; info.elements()];
        info.ggml_type
            .dequantize(self.file.bytes(info), &mut values);
        ensure!(
            values.iter().all(|v| v.is_finite()),
            "GGUF tensor {name} holds values that are not finite numbers"
        );
        Ok(values)
    }

    fn vector(&self, name: &str, len: usize) -> Result<Tensor<1>, AttnError> {
        let values = self.floats(name, &[len])?;
        Ok(Tensor::from_data(
            TensorData::new(values, [len]),
            self.device,
        ))
    }

    /// A norm's gain; `stored_plus_one` for Gemma's converter, which stores `1 + w`.
    fn norm(&self, norm: &mut RmsNorm, name: &str, stored_plus_one: bool) -> Result<(), AttnError> {
        let len = norm.weight.dims()[0];
        let mut weight = self.vector(name, len)?;
        if stored_plus_one {
            weight = weight.sub_scalar(1.0);
        }
        norm.weight = Param::from_tensor(weight);
        Ok(())
    }

    /// `W [rows, cols]` (GGUF `ne = [cols, rows]`) with its rows in Hugging Face's order:
    /// `order[r]` is the GGUF row of row `r`.
    fn quant_matrix(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        order: Option<&[usize]>,
    ) -> Result<QuantMatrix, AttnError> {
        let info = self.info(name)?;
        ensure!(
            info.dims == [cols, rows],
            "GGUF tensor {name} has shape {:?}, not the config's [{cols}, {rows}]",
            info.dims
        );
        let map: SharedBytes = self.file.map().clone();
        let matrix = match order {
            None => QuantMatrix::new(
                map,
                info.start..info.start + info.len,
                info.ggml_type,
                rows,
                cols,
            )?,
            Some(order) => {
                let bytes = self.file.bytes(info);
                let row = info.len / rows;
                let permuted: Vec<u8> = order
                    .iter()
                    .flat_map(|&r| &bytes[r * row..(r + 1) * row])
                    .copied()
                    .collect();
                let len = permuted.len();
                QuantMatrix::new(Arc::new(permuted), 0..len, info.ggml_type, rows, cols)?
            }
        };
        // A non-finite scale would poison every product: checked once, a row at a time.
        let finite = (0..rows).all(|r| {
            matrix
                .dequantize_rows(r..r + 1)
                .iter()
                .all(|v| v.is_finite())
        });
        ensure!(
            finite,
            "GGUF tensor {name} holds values that are not finite numbers"
        );
        Ok(matrix)
    }

    /// Whether a tensor is kept in its blocks.
    fn keep_quantized(&self, name: &str) -> Result<bool, AttnError> {
        let kind = self.info(name)?.ggml_type;
        Ok(self.weights == GgufWeights::Quantized
            && !matches!(kind, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16))
    }

    /// The linear layer `name.weight` (`[rows, cols]` in PyTorch's order) with `name.bias` when
    /// `bias`, its rows reordered by `order`.
    fn projection(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
        bias: bool,
        order: Option<&[usize]>,
    ) -> Result<Projection, AttnError> {
        let weight_name = format!("{name}.weight");
        let bias = match bias {
            true => {
                let bias_name = format!("{name}.bias");
                let mut values = self.floats(&bias_name, &[rows])?;
                if let Some(order) = order {
                    values = order.iter().map(|&r| values[r]).collect();
                }
                Some(Param::from_tensor(Tensor::from_data(
                    TensorData::new(values, [rows]),
                    self.device,
                )))
            }
            false => None,
        };
        if self.keep_quantized(&weight_name)? {
            return Ok(Projection::Quantized(QuantizedLinear {
                weight: self.quant_matrix(&weight_name, rows, cols, order)?,
                bias,
            }));
        }
        let mut values = self.floats(&weight_name, &[cols, rows])?;
        if let Some(order) = order {
            values = order
                .iter()
                .flat_map(|&r| &values[r * cols..(r + 1) * cols])
                .copied()
                .collect();
        }
        let weight = Tensor::<2>::from_data(TensorData::new(values, [rows, cols]), self.device);
        Ok(Projection::Dense(Linear {
            weight: Param::from_tensor(weight.transpose()),
            bias,
        }))
    }

    fn embedding(&self, vocab: usize, width: usize) -> Result<TokenEmbedding, AttnError> {
        let name = "token_embd.weight";
        if self.keep_quantized(name)? {
            return Ok(TokenEmbedding::Quantized(QuantizedEmbedding {
                weight: self.quant_matrix(name, vocab, width, None)?,
            }));
        }
        let values = self.floats(name, &[width, vocab])?;
        Ok(TokenEmbedding::Dense(Embedding {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(values, [vocab, width]),
                self.device,
            )),
        }))
    }
}

/// For `llama` files: `order[r]`, the GGUF row holding Hugging Face row `r` of `W_Q` or `W_K`
/// with `heads` heads of `rows / heads` (see the module docs).
fn unpermute(rows: usize, heads: usize) -> Vec<usize> {
    let d = rows / heads;
    (0..rows)
        .map(|r| {
            let (h, within) = (r / d, r % d);
            let (i, j) = (within / (d / 2), within % (d / 2));
            h * d + 2 * j + i
        })
        .collect()
}

impl CausalLm {
    /// Loads a GGUF file with its quantized weights kept in their blocks (see
    /// [`from_gguf_with`](Self::from_gguf_with)).
    pub fn from_gguf(path: &Path, device: &Device) -> Result<CausalLm, AttnError> {
        Self::from_gguf_with(path, GgufWeights::Quantized, device)
    }

    /// Loads a GGUF file of an architecture in [`gguf_config`]'s list, its quantized tensors held
    /// as `weights` says.
    pub fn from_gguf_with(
        path: &Path,
        weights: GgufWeights,
        device: &Device,
    ) -> Result<CausalLm, AttnError> {
        let file = GgufFile::open(path)?;
        Self::from_gguf_file(&file, weights, device)
            .map_err(|error| AttnError::new(format!("{}: {error}", path.display())))
    }

    /// As [`from_gguf_with`](Self::from_gguf_with), from an open file.
    pub fn from_gguf_file(
        file: &GgufFile,
        weights: GgufWeights,
        device: &Device,
    ) -> Result<CausalLm, AttnError> {
        let config = gguf_config(file)?;
        let mut model = config.try_init(device)?;
        let load = Loader {
            file,
            weights,
            device,
        };
        let gemma = config.family.unit_offset_norms;
        let permuted = file.string("general.architecture")? == "llama";
        let (width, heads, kv_heads, d) = (
            config.hidden_size,
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
        );
        let (q_order, k_order) = match permuted {
            true => (
                Some(unpermute(heads * d, heads)),
                Some(unpermute(kv_heads * d, kv_heads)),
            ),
            false => (None, None),
        };
        model.embed_tokens = load.embedding(config.vocab_size, width)?;
        load.norm(&mut model.norm, "output_norm.weight", gemma)?;
        if !config.tie_word_embeddings {
            model.lm_head =
                Some(load.projection("output", config.vocab_size, width, false, None)?);
        }
        for (n, layer) in model.layers.iter_mut().enumerate() {
            let blk = |name: &str| format!("blk.{n}.{name}");
            if let Some(norm) = &mut layer.input_layernorm {
                load.norm(norm, &blk("attn_norm.weight"), gemma)?;
            }
            match (
                &mut layer.pre_feedforward_layernorm,
                &mut layer.post_feedforward_layernorm,
            ) {
                (Some(pre), Some(post)) => {
                    load.norm(
                        &mut layer.post_attention_layernorm,
                        &blk("post_attention_norm.weight"),
                        gemma,
                    )?;
                    load.norm(pre, &blk("ffn_norm.weight"), gemma)?;
                    load.norm(post, &blk("post_ffw_norm.weight"), gemma)?;
                }
                _ => load.norm(
                    &mut layer.post_attention_layernorm,
                    &blk("ffn_norm.weight"),
                    gemma,
                )?,
            }
            let LmAttention::MultiHead(attention) = &mut layer.self_attn else {
                return Err(AttnError::new(
                    "GGUF files of latent attention are not supported",
                ));
            };
            let bias = config.qkv_bias;
            attention.query =
                load.projection(&blk("attn_q"), heads * d, width, bias, q_order.as_deref())?;
            attention.key = load.projection(
                &blk("attn_k"),
                kv_heads * d,
                width,
                bias,
                k_order.as_deref(),
            )?;
            attention.value = load.projection(&blk("attn_v"), kv_heads * d, width, bias, None)?;
            attention.output = load.projection(
                &blk("attn_output"),
                width,
                heads * d,
                config.output_bias,
                None,
            )?;
            if let Some(norm) = &mut attention.query_norm {
                load.norm(norm, &blk("attn_q_norm.weight"), gemma)?;
            }
            if let Some(norm) = &mut attention.key_norm {
                load.norm(norm, &blk("attn_k_norm.weight"), gemma)?;
            }
            let ff = config.intermediate_size;
            let bias = config.mlp_bias;
            let LmFeedForward::Dense(mlp) = &mut layer.mlp else {
                unreachable!("the GGUF architectures read here have no experts")
            };
            mlp.gate_proj = load.projection(&blk("ffn_gate"), ff, width, bias, None)?;
            mlp.up_proj = load.projection(&blk("ffn_up"), ff, width, bias, None)?;
            mlp.down_proj = load.projection(&blk("ffn_down"), width, ff, bias, None)?;
        }
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// tests/fixtures/gguf/qwen3.gguf with the `UINT32` metadata `key` set to `value`.
    fn qwen3_with(key: &str, value: u32) -> Vec<u8> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/gguf/qwen3.gguf"
        );
        let mut bytes = std::fs::read(path).unwrap();
        let mut needle = (key.len() as u64).to_le_bytes().to_vec();
        needle.extend(key.as_bytes());
        let at = bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap()
            + needle.len();
        assert_eq!(bytes[at..at + 4], 4u32.to_le_bytes(), "{key} is a UINT32");
        bytes[at + 4..at + 8].copy_from_slice(&value.to_le_bytes());
        bytes
    }

    /// Inputs the fuzz target `gguf` failed on (fuzz/corpus/gguf/qwen3_*_huge, written from
    /// qwen3.gguf after reading the loader): the model was built from the metadata's sizes
    /// before any tensor was read, a window per layer (a 64 GiB allocation, an abort) and the
    /// norms and RoPE's frequencies (past 2 GiB resident) among it.
    #[test]
    fn sizes_the_tensors_do_not_hold_are_refused_before_allocating() {
        for (key, value, expected) in [
            (
                "qwen3.block_count",
                u32::MAX,
                "no tensor blk.2.attn_norm.weight",
            ),
            (
                "qwen3.embedding_length",
                0x7fff_fff0,
                "token_embd.weight is 24 wide",
            ),
            (
                "qwen3.attention.key_length",
                0xffff_fff0,
                "blk.0.attn_q.weight has shape",
            ),
        ] {
            let mut file = tempfile::NamedTempFile::new().unwrap();
            file.write_all(&qwen3_with(key, value)).unwrap();
            let gguf = GgufFile::open(file.path()).unwrap();
            let error = gguf_config(&gguf).unwrap_err().to_string();
            assert!(
                error.contains(expected) && !error.contains('\n'),
                "{key}: {error}"
            );
        }
    }

    /// `LlamaModel.permute` of convert_hf_to_gguf.py, applied to row indices: its inverse.
    #[test]
    fn unpermute_inverts_the_converters_permutation() {
        let (heads, d) = (3, 8);
        // permute: reshape(heads, 2, d/2).swapaxes(1, 2): GGUF row h·d + 2j + i = HF row h·d + i·d/2 + j.
        let mut gguf_to_hf = vec![0; heads * d];
        for h in 0..heads {
            for i in 0..2 {
                for j in 0..d / 2 {
                    gguf_to_hf[h * d + 2 * j + i] = h * d + i * d / 2 + j;
                }
            }
        }
        let order = unpermute(heads * d, heads);
        for (hf, &gguf) in order.iter().enumerate() {
            assert_eq!(gguf_to_hf[gguf], hf);
        }
    }
}
