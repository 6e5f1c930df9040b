//! Sentence embeddings with a pretrained BERT (e.g. all-MiniLM-L6-v2): tokenise with the model's
//! `tokenizer.json`, run attnzoo's [`Bert`], mean-pool over the real tokens, L2-normalise —
//! what sentence-transformers computes.

use std::path::{Path, PathBuf};

use attnzoo_models::transformer::{l2_normalize, Bert, BertConfig, Pooling};
use burn::tensor::Device;
use tokenizers::{Tokenizer, TruncationParams};

use crate::attention_maps::{maps_of, AttentionMaps};
use crate::error::{Error, Result};
use crate::home_cache;
use crate::padding::padded;
use crate::parallel;
use crate::validate;

/// Where `scripts/fetch-minilm.sh` puts the model unless told otherwise (an empty
/// `ATTNZOO_MINILM_DIR` is unset, as in the script).
pub fn default_model_dir() -> PathBuf {
    std::env::var_os("ATTNZOO_MINILM_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home_cache().join("all-MiniLM-L6-v2"))
}

/// A tokenizer and a BERT on one device.
///
/// ```no_run
/// use attnzoo::sentence_embedding::{default_model_dir, SentenceEmbedder};
///
/// let (_, device) = attnzoo_backends::Backend::auto()?;
/// let embedder = SentenceEmbedder::load(&default_model_dir(), &device)?; // scripts/fetch-minilm.sh
/// let sentences = ["A man is playing a guitar.".to_string(), "Someone plays music.".into()];
/// let vectors = embedder.embed(&sentences, 32)?; // unit vectors: the dot product is the cosine
/// let cosine: f32 = vectors[0].iter().zip(&vectors[1]).map(|(a, b)| a * b).sum();
/// println!("similarity {cosine:.3}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SentenceEmbedder {
    tokenizer: Tokenizer,
    model: Bert,
    config: BertConfig,
    device: Device,
}

/// A sentence's tokens and the model's self-attention over them.
#[derive(Clone, Debug)]
pub struct SelfAttention {
    /// The word pieces, `[CLS]` first and `[SEP]` last: `T` labels.
    pub tokens: Vec<String>,
    /// Whether the sentence had more pieces than the map shows (its middle was cut).
    pub cut: bool,
    /// `[layer][head][T][T]`.
    pub maps: AttentionMaps,
}

/// The most tokens [`SentenceEmbedder::attend`] shows, `[CLS]` and `[SEP]` included.
pub const MAX_ATTENTION_TOKENS: usize = 64;

/// Sentence-transformers' `max_seq_length` for all-MiniLM-L6-v2, `[CLS]` and `[SEP]` included.
pub const MAX_SEQ_LENGTH: usize = 256;

impl SentenceEmbedder {
    /// Loads `tokenizer.json`, `config.json` and `model.safetensors` from `dir`. Padding is off
    /// (batches are padded to their longest sentence) and inputs are truncated at 256 tokens.
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        if !dir.join("model.safetensors").is_file() {
            return Err(Error::Input(format!(
                "no model in {}: fetch it with scripts/fetch-minilm.sh [DIR] (or pass --model-dir)",
                dir.display()
            )));
        }
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path).map_err(|error| {
            Error::Input(format!("cannot read {}: {error}", tokenizer_path.display()))
        })?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_SEQ_LENGTH,
                ..TruncationParams::default()
            }))
            .map_err(|error| Error::Input(format!("tokenizer truncation: {error}")))?;
        let (model, config) = Bert::from_pretrained(dir, device)?;
        let tokens = tokenizer.get_vocab_size(true);
        if tokens > config.vocab_size {
            return Err(Error::Input(format!(
                "{} has {tokens} tokens but the model's vocabulary {}: they are not one model's",
                tokenizer_path.display(),
                config.vocab_size
            )));
        }
        Ok(Self {
            tokenizer,
            model,
            config,
            device: device.clone(),
        })
    }

    /// The model's `config.json`: its layers, heads and sizes.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// One unit vector per sentence, in input order. Sentences are sorted by length and run in
    /// batches of `batch_size`, each padded to its longest sentence, at once where `parallel`
    /// says so.
    pub fn embed(&self, sentences: &[String], batch_size: usize) -> Result<Vec<Vec<f32>>> {
        if batch_size == 0 {
            return Err(Error::Input("batch size: must be at least 1".into()));
        }
        let stripped = sentences
            .iter()
            .enumerate()
            .map(|(i, s)| {
                validate::sentence(s.trim())
                    .map_err(|why| Error::Input(format!("sentence {}: {why}", i + 1)))
            })
            .collect::<Result<Vec<&str>>>()?;
        let encodings = self
            .tokenizer
            .encode_batch(stripped, true)
            .map_err(|error| Error::Input(format!("tokenizer: {error}")))?;
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        let chunks: Vec<&[usize]> = order.chunks(batch_size).collect();
        let batches = parallel::map_in_order(&self.device, chunks, |chunk| {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| encodings[i].get_ids()).collect();
            self.embed_batch(&batch)
        })?;
        let mut embeddings = vec![Vec::new(); encodings.len()];
        for (&i, vector) in order.iter().zip(batches.into_iter().flatten()) {
            embeddings[i] = vector;
        }
        Ok(embeddings)
    }

    /// The self-attention of every layer and head over `sentence`'s first
    /// [`MAX_ATTENTION_TOKENS`] tokens (`[SEP]` kept last).
    pub fn attend(&self, sentence: &str) -> Result<SelfAttention> {
        let sentence = validate::sentence(sentence.trim()).map_err(Error::Input)?;
        let encoding = self
            .tokenizer
            .encode(sentence, true)
            .map_err(|error| Error::Input(format!("tokenizer: {error}")))?;
        let mut ids: Vec<usize> = encoding.get_ids().iter().map(|&id| id as usize).collect();
        let mut tokens = encoding.get_tokens().to_vec();
        let cut = ids.len() > MAX_ATTENTION_TOKENS;
        if cut {
            let last = ids.len() - 1;
            ids.swap(MAX_ATTENTION_TOKENS - 1, last);
            tokens.swap(MAX_ATTENTION_TOKENS - 1, last);
            ids.truncate(MAX_ATTENTION_TOKENS);
            tokens.truncate(MAX_ATTENTION_TOKENS);
        }
        let (ids, padding) = padded(&[ids], 0, &self.device);
        let (_, weights) = self.model.forward_with_weights(ids, padding, true)?;
        Ok(SelfAttention {
            tokens,
            cut,
            maps: maps_of(weights)?,
        })
    }

    fn embed_batch(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let rows: Vec<Vec<usize>> = batch
            .iter()
            .map(|ids| ids.iter().map(|&id| id as usize).collect())
            .collect();
        let (ids, padding) = padded(&rows, 0, &self.device);
        let hidden = self.model.forward(ids, padding.clone())?;
        let pooled = l2_normalize(Pooling::Mean.pool(hidden, padding));
        let values = pooled
            .into_data()
            .try_to_vec::<f32>()
            .map_err(|error| Error::Input(format!("reading embeddings: {error:?}")))?;
        if values.iter().any(|value| !value.is_finite()) {
            return Err(Error::Input(
                "the model computed a non-finite embedding: its weights hold NaN or infinity"
                    .into(),
            ));
        }
        let width = values.len() / batch.len();
        Ok(values.chunks(width).map(<[f32]>::to_vec).collect())
    }
}
