//! A BERT encoder (Devlin et al. 2019) built from attnzoo's [`Encoder`], loading Hugging Face
//! checkpoints (e.g. all-MiniLM-L6-v2), with the sentence-embedding head of Sentence-BERT
//! (Reimers & Gurevych 2019):
//!
//! `e = LN(W_word[ids] + W_pos[0..T] + W_type[types])`, `h = Encoder(e)` (post-norm, GELU),
//! `mean = Σ_t m_t h_t / max(Σ_t m_t, 1e-9)` or `cls = h_0`, `u = v / max(‖v‖₂, 1e-12)`.
//!
//! Shapes: `input_ids [B, T]`, `padding [B, T]` (`true` = padding) → hidden `[B, T, H]`,
//! pooled `[B, H]`.

use std::path::Path;

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig};
use burn::tensor::{Bool, Device, Int, Tensor};

use super::encoder::{Encoder, EncoderConfig};
use super::feed_forward::FeedForwardActivation;
use super::layer::LayerConfig;
use crate::error::ensure;
use crate::hf_weights::HfLoad;
use crate::AttnError;

/// A Hugging Face `config.json` of a BERT model (the fields this encoder uses; others are ignored).
#[derive(Config, Debug)]
pub struct BertConfig {
    /// Word-piece vocabulary size.
    pub vocab_size: usize,
    /// Model width `H`.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer.
    pub num_attention_heads: usize,
    /// Feed-forward width.
    pub intermediate_size: usize,
    /// Feed-forward activation: `gelu` or `relu`.
    #[config(default = "String::from(\"gelu\")")]
    pub hidden_act: String,
    /// Longest input, in tokens.
    #[config(default = 512)]
    pub max_position_embeddings: usize,
    /// Segment types.
    #[config(default = 2)]
    pub type_vocab_size: usize,
    /// LayerNorm epsilon.
    #[config(default = 1e-12)]
    pub layer_norm_eps: f64,
}

/// Word, position and token-type embeddings, summed and normalised.
#[derive(Module, Debug)]
pub struct BertEmbeddings {
    /// `[vocab_size, H]`.
    pub word_embeddings: Embedding,
    /// `[max_position_embeddings, H]`.
    pub position_embeddings: Embedding,
    /// `[type_vocab_size, H]`.
    pub token_type_embeddings: Embedding,
    /// LayerNorm over the sum.
    pub layer_norm: LayerNorm,
}

/// The BERT encoder: embeddings and a post-norm Transformer encoder stack.
///
/// ```no_run
/// use attnzoo_models::transformer::{l2_normalize, Bert, Pooling};
/// use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
///
/// let device = Device::default();
/// // A Hugging Face folder: config.json and model.safetensors (all-MiniLM-L6-v2 here).
/// let (bert, config) = Bert::from_pretrained("all-MiniLM-L6-v2".as_ref(), &device)?;
/// let ids = Tensor::<2, Int>::from_data(TensorData::from([[101i64, 7592, 102]]), &device);
/// let padding = Tensor::<2, Bool>::from_data(TensorData::from([[false; 3]]), &device);
/// let hidden = bert.forward(ids, padding.clone())?; // [1, 3, hidden_size]
/// let sentence = l2_normalize(Pooling::Mean.pool(hidden, padding)); // [1, hidden_size]
/// assert_eq!(sentence.dims(), [1, config.hidden_size]);
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Module, Debug)]
pub struct Bert {
    /// Input embeddings.
    pub embeddings: BertEmbeddings,
    /// The encoder stack.
    pub encoder: Encoder,
}

/// How token states become one sentence vector.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean over the non-padding tokens (Sentence-BERT's default).
    Mean,
    /// The first (`[CLS]`) token's state.
    Cls,
}

/// The most parameters a [`BertConfig`] may ask for: 4 GiB of `f32`, BERT-large thrice over.
const MAX_PARAMETERS: u128 = 1 << 30;

impl BertConfig {
    /// Refuses a config no BERT has: a size of 0, heads that do not divide the width, an epsilon
    /// that is not a small positive number, more than 2³⁰ parameters (4 GiB of `f32`).
    pub fn check(&self) -> Result<(), AttnError> {
        for (name, value) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ] {
            ensure!(value >= 1, "config {name} is {value}: must be at least 1");
        }
        ensure!(
            self.hidden_size % self.num_attention_heads == 0,
            "config hidden_size {} is not a multiple of num_attention_heads {}",
            self.hidden_size,
            self.num_attention_heads
        );
        ensure!(
            self.layer_norm_eps.is_finite()
                && self.layer_norm_eps > 0.0
                && self.layer_norm_eps < 1.0,
            "config layer_norm_eps is {}: must be in (0, 1)",
            self.layer_norm_eps
        );
        let [hidden, inner] = [self.hidden_size, self.intermediate_size].map(|n| n as u128);
        let embeddings = (self.vocab_size as u128
            + self.max_position_embeddings as u128
            + self.type_vocab_size as u128)
            * hidden;
        let layer = 4 * hidden * hidden + 2 * hidden * inner;
        let parameters = embeddings + self.num_hidden_layers as u128 * layer;
        ensure!(
            parameters <= MAX_PARAMETERS,
            "config asks for {parameters} parameters, more than the {MAX_PARAMETERS} this encoder loads"
        );
        Ok(())
    }

    /// Builds a randomly initialised model.
    pub fn try_init(&self, device: &Device) -> Result<Bert, AttnError> {
        self.check()?;
        let activation = match self.hidden_act.as_str() {
            "gelu" => FeedForwardActivation::Gelu,
            "relu" => FeedForwardActivation::Relu,
            other => {
                return Err(AttnError::new(format!(
                    "unsupported hidden_act {other:?} (gelu or relu)"
                )))
            }
        };
        let embedding = |rows| EmbeddingConfig::new(rows, self.hidden_size).init(device);
        let layer = LayerConfig::new(
            self.hidden_size,
            self.num_attention_heads,
            self.intermediate_size,
        )
        .with_dropout(0.0)
        .with_activation(activation)
        .with_layer_norm_eps(self.layer_norm_eps);
        Ok(Bert {
            embeddings: BertEmbeddings {
                word_embeddings: embedding(self.vocab_size),
                position_embeddings: embedding(self.max_position_embeddings),
                token_type_embeddings: embedding(self.type_vocab_size),
                layer_norm: LayerNormConfig::new(self.hidden_size)
                    .with_epsilon(self.layer_norm_eps)
                    .init(device),
            },
            encoder: EncoderConfig::new(layer, self.num_hidden_layers).try_init(device)?,
        })
    }
}

/// Hugging Face BERT names → this module's names, applied in order.
const HF_KEY_REMAPPING: [(&str, &str); 8] = [
    (r"^bert\.", ""),
    (r"^embeddings\.LayerNorm\.", "embeddings.layer_norm."),
    (
        r"^encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.",
        "encoder.layers.$1.self_attn.$2.",
    ),
    (
        r"^encoder\.layer\.(\d+)\.attention\.output\.dense\.",
        "encoder.layers.$1.self_attn.output.",
    ),
    (
        r"^encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.",
        "encoder.layers.$1.norm1.",
    ),
    (
        r"^encoder\.layer\.(\d+)\.intermediate\.dense\.",
        "encoder.layers.$1.feed_forward.linear1.",
    ),
    (
        r"^encoder\.layer\.(\d+)\.output\.dense\.",
        "encoder.layers.$1.feed_forward.linear2.",
    ),
    (
        r"^encoder\.layer\.(\d+)\.output\.LayerNorm\.",
        "encoder.layers.$1.norm2.",
    ),
];

impl Bert {
    /// Loads a Hugging Face model folder: `config.json` and `model.safetensors`.
    pub fn from_pretrained(dir: &Path, device: &Device) -> Result<(Bert, BertConfig), AttnError> {
        let config_path = dir.join("config.json");
        let config = BertConfig::load(&config_path).map_err(|error| {
            AttnError::new(format!("cannot read {}: {error}", config_path.display()))
        })?;
        let mut bert = config.try_init(device)?;
        bert.load_safetensors(&dir.join("model.safetensors"))?;
        Ok((bert, config))
    }

    /// Loads Hugging Face BERT weights (PyTorch layout, HF names); every weight of this module
    /// must be present with its shape and finite, and no encoder weight may be left over (a file of more
    /// layers than the config's). Other extra tensors (the pooler, `position_ids`) are ignored.
    pub fn load_safetensors(&mut self, path: &Path) -> Result<(), AttnError> {
        ensure!(path.is_file(), "no weights file at {}", path.display());
        let float = self
            .embeddings
            .word_embeddings
            .weight
            .lazy_device()
            .settings()
            .float_dtype
            .into();
        let mut load = HfLoad::new(&HF_KEY_REMAPPING, float);
        let mut store = load.store(path, None);
        load.apply(self, &mut store, path)?;
        load.finish(
            self,
            "encoder.",
            &format!("{} does not fit this BERT", path.display()),
        )
    }

    /// `input_ids [B, T]`, `padding [B, T]` (`true` = padding) → `[B, T, H]`.
    pub fn forward(
        &self,
        input_ids: Tensor<2, Int>,
        padding: Tensor<2, Bool>,
    ) -> Result<Tensor<3>, AttnError> {
        Ok(self.forward_with_weights(input_ids, padding, false)?.0)
    }

    /// As [`forward`](Self::forward), and each layer's self-attention weights `[B, h, T, T]`
    /// when `need_weights` (else none).
    pub fn forward_with_weights(
        &self,
        input_ids: Tensor<2, Int>,
        padding: Tensor<2, Bool>,
        need_weights: bool,
    ) -> Result<(Tensor<3>, Vec<Tensor<4>>), AttnError> {
        let [batch, len] = input_ids.dims();
        let max_len = self.embeddings.position_embeddings.weight.dims()[0];
        ensure!(
            len <= max_len,
            "{len} tokens exceed max_position_embeddings {max_len}"
        );
        ensure!(
            padding.dims() == [batch, len],
            "padding shape {:?} is not the input's [{batch}, {len}]",
            padding.dims()
        );
        let device = input_ids.device();
        let positions = Tensor::<1, Int>::arange(0..len as i64, &device)
            .unsqueeze::<2>()
            .expand([batch, len]);
        let embeddings = &self.embeddings;
        let x = embeddings.word_embeddings.forward(input_ids.clone())
            + embeddings.position_embeddings.forward(positions)
            + embeddings
                .token_type_embeddings
                .forward(input_ids.zeros_like());
        self.encoder.forward_with_weights(
            embeddings.layer_norm.forward(x),
            Some(padding),
            need_weights,
        )
    }
}

impl Pooling {
    /// `hidden [B, T, H]`, `padding [B, T]` → `[B, H]`.
    pub fn pool(&self, hidden: Tensor<3>, padding: Tensor<2, Bool>) -> Tensor<2> {
        match self {
            Pooling::Cls => hidden.narrow(1, 0, 1).squeeze_dim(1),
            Pooling::Mean => {
                let keep = padding.bool_not().float().unsqueeze_dim::<3>(2);
                let count = keep.clone().sum_dim(1).clamp_min(1e-9);
                (hidden * keep).sum_dim(1).div(count).squeeze_dim(1)
            }
        }
    }
}

/// `v / max(‖v‖₂, 1e-12)` per row, as `torch.nn.functional.normalize`.
pub fn l2_normalize(x: Tensor<2>) -> Tensor<2> {
    let norm = x.clone().square().sum_dim(1).sqrt().clamp_min(1e-12);
    x / norm
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::store::{ModuleSnapshot, SafetensorsStore};
    use burn::tensor::Tolerance;

    #[test]
    fn mean_pooling_ignores_padding_and_normalised_rows_have_unit_length() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let hidden = Tensor::<3>::from_data(
            [
                [[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]],
                [[3.0, 4.0], [0.0, 0.0], [0.0, 0.0]],
            ],
            &device,
        );
        let padding =
            Tensor::<2, Bool>::from_data([[false, false, true], [false, true, true]], &device);
        let mean = Pooling::Mean.pool(hidden.clone(), padding.clone());
        mean.clone().into_data().assert_approx_eq::<f32>(
            &Tensor::<2>::from_data([[2.0, 3.0], [3.0, 4.0]], &device).into_data(),
            Tolerance::absolute(1e-6),
        );
        let cls = Pooling::Cls.pool(hidden, padding);
        assert_eq!(
            cls.into_data().try_to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 3.0, 4.0]
        );
        let unit = l2_normalize(mean);
        unit.into_data().assert_approx_eq::<f32>(
            &Tensor::<2>::from_data(
                [[2.0 / 13f32.sqrt(), 3.0 / 13f32.sqrt()], [0.6, 0.8]],
                &device,
            )
            .into_data(),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn a_weight_of_the_wrong_shape_or_a_missing_file_is_an_error_that_names_it() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let config = BertConfig::new(10, 8, 1, 2, 16);
        let mut bert = config.try_init(&device).unwrap();
        let error = bert
            .load_safetensors(Path::new("/nonexistent/model.safetensors"))
            .unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/model.safetensors"),
            "{error}"
        );
        // A checkpoint of a narrower model: every shape is wrong.
        let narrow = BertConfig::new(10, 4, 1, 2, 16).try_init(&device).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("narrow.safetensors");
        let mut store = SafetensorsStore::from_file(&path);
        narrow.save_into(&mut store).unwrap();
        let error = bert.load_safetensors(&path).unwrap_err().to_string();
        assert!(
            error.contains("encoder.layers.0.feed_forward.linear1.weight"),
            "{error}"
        );
    }

    #[test]
    fn a_file_of_more_layers_than_the_config_is_refused() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let deeper = BertConfig::new(10, 8, 2, 2, 16).try_init(&device).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deeper.safetensors");
        deeper
            .save_into(&mut SafetensorsStore::from_file(&path))
            .unwrap();
        let mut shallow = BertConfig::new(10, 8, 1, 2, 16).try_init(&device).unwrap();
        let error = shallow.load_safetensors(&path).unwrap_err().to_string();
        assert!(error.contains("encoder.layers.1."), "{error}");
    }

    #[test]
    fn a_config_no_bert_has_is_refused_before_anything_is_allocated() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let refused = |config: BertConfig| config.try_init(&device).unwrap_err().to_string();
        let valid = || BertConfig::new(10, 8, 1, 2, 16);
        assert!(refused(valid().with_layer_norm_eps(-1.0)).contains("layer_norm_eps"));
        assert!(refused(valid().with_layer_norm_eps(f64::NAN)).contains("layer_norm_eps"));
        assert!(refused(BertConfig::new(10, 8, 1, 3, 16)).contains("multiple"));
        assert!(refused(BertConfig::new(0, 8, 1, 2, 16)).contains("vocab_size"));
        assert!(refused(BertConfig::new(10, 8, 1_000_000_000, 2, 16)).contains("parameters"));
        assert!(refused(valid().with_max_position_embeddings(usize::MAX)).contains("parameters"));
    }
}
