//! Text in and out of a decoder LM from a Hugging Face folder: [`LanguageModel`] holds an
//! [`attnzoo_models::lm::CausalLm`] with the folder's `tokenizer.json` (when there is one) and its
//! chat template (`tokenizer_config.json`'s `chat_template`, or `chat_template.jinja`), rendered
//! with MiniJinja as `transformers`' `apply_chat_template` renders it with Jinja2 (blocks
//! trimmed, Python's string methods, `raise_exception`).
//!
//! ```no_run
//! use attnzoo::language_model::LanguageModel;
//! use attnzoo_models::lm::GenerationConfig;
//! use burn::tensor::Device;
//!
//! let device = Device::default();
//! let lm = LanguageModel::load("SmolLM2-135M-Instruct".as_ref(), &device)?;
//! let prompt = lm.encode_chat("What is attention?")?;
//! let mut text = String::new();
//! lm.generate(&prompt, &GenerationConfig::greedy(64), |_, piece| {
//!     text.push_str(piece); // each new piece of text as soon as it is whole
//!     Ok::<(), attnzoo::Error>(())
//! })?;
//! # Ok::<(), attnzoo::Error>(())
//! ```

use std::path::Path;

use attnzoo_models::gguf::GgufFile;
use attnzoo_models::lm::{CausalLm, GenerationConfig, GgufWeights, Perplexity, Sampling};
use burn::tensor::{Device, Int, Tensor, TensorData};
use minijinja::{Environment, ErrorKind};
use serde_json::Value;
use tokenizers::Tokenizer;

use crate::attention_maps::{maps_of, AttentionMaps};
use crate::error::{Error, Result};
use crate::gguf_tokenizer::{self, GgufVocab};

/// A decoder LM with its tokenizer and chat template.
pub struct LanguageModel {
    /// The model.
    pub model: CausalLm,
    tokenizer: Option<Tokenizer>,
    chat: Option<ChatTemplate>,
}

/// Where the model looked when it produced one token: see [`LanguageModel::attend`].
#[derive(Clone, Debug)]
pub struct TokenAttention {
    /// Each token as text, up to and including the one produced (`position + 1` of them).
    pub pieces: Vec<String>,
    /// `[layer][head][1][key]`: the weights the step that produced the token gave each token
    /// before it (zero outside a sliding-window layer's window); each row sums to 1.
    pub weights: AttentionMaps,
}

/// The sampling that `attnzoo generate`'s and the explorer's options ask for: greedy (`None`)
/// unless one is given; then temperature 1 and a seed from the clock unless given. Check the
/// values with [`GenerationConfig::validate`].
pub fn sampling(
    temperature: Option<f64>,
    top_k: Option<usize>,
    top_p: Option<f64>,
    seed: Option<u64>,
) -> Option<Sampling> {
    (temperature.is_some() || top_k.is_some() || top_p.is_some() || seed.is_some()).then(|| {
        Sampling {
            temperature: temperature.unwrap_or(1.0),
            top_k,
            top_p,
            seed: seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            }),
        }
    })
}

/// A chat template and the special tokens it may name.
struct ChatTemplate {
    source: String,
    bos_token: String,
    eos_token: String,
}

/// A special token of `tokenizer_config.json`: a string or `{"content": ..}`.
fn special_token(config: &Value, name: &str) -> String {
    match config.get(name) {
        Some(Value::String(token)) => token.clone(),
        Some(Value::Object(token)) => token
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|error| Error::read(path, error))?;
    serde_json::from_str(&text)
        .map_err(|error| Error::Input(format!("{} is not valid JSON: {error}", path.display())))
}

/// The folder's chat template: `tokenizer_config.json`'s `chat_template` (a string, or a list of
/// named templates of which `default` is taken), else `chat_template.jinja`.
fn chat_template(dir: &Path) -> Result<Option<ChatTemplate>> {
    let config_path = dir.join("tokenizer_config.json");
    let config = if config_path.is_file() {
        read_json(&config_path)?
    } else {
        Value::Null
    };
    let source = match config.get("chat_template") {
        Some(Value::String(source)) => Some(source.clone()),
        Some(Value::Array(named)) => named
            .iter()
            .find(|entry| entry.get("name").and_then(Value::as_str) == Some("default"))
            .and_then(|entry| entry.get("template"))
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    };
    let source = match source {
        Some(source) => Some(source),
        None => {
            let path = dir.join("chat_template.jinja");
            if path.is_file() {
                Some(std::fs::read_to_string(&path).map_err(|error| Error::read(&path, error))?)
            } else {
                None
            }
        }
    };
    Ok(source.map(|source| ChatTemplate {
        source,
        bos_token: special_token(&config, "bos_token"),
        eos_token: special_token(&config, "eos_token"),
    }))
}

impl ChatTemplate {
    /// One user message, rendered with the generation prompt after it.
    fn render(&self, user: &str) -> Result<String> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template("chat", &self.source)
            .map_err(|error| Error::Input(format!("the chat template does not parse: {error}")))?;
        let context = minijinja::context! {
            messages => vec![minijinja::context! { role => "user", content => user }],
            add_generation_prompt => true,
            bos_token => &self.bos_token,
            eos_token => &self.eos_token,
        };
        env.get_template("chat")
            .and_then(|template| template.render(context))
            .map_err(|error| Error::Input(format!("the chat template fails: {error}")))
    }
}

impl LanguageModel {
    /// Loads the model (see [`CausalLm::from_pretrained`]) and, when present, `tokenizer.json`
    /// and the chat template.
    ///
    /// As [`load_with`](Self::load_with) with [`GgufWeights::Quantized`], the way for a CPU
    /// backend: a `.gguf` file's quantized weights kept in their blocks, a folder's experts
    /// packed (on a GPU, `load_with` and [`GgufWeights::Dequantized`]).
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        Self::load_with(dir, GgufWeights::Quantized, device)
    }

    /// As [`load`](Self::load); a GGUF file's quantized tensors held as `weights` says, its
    /// tokenizer and chat template read from its metadata ([`crate::gguf_tokenizer`]). With
    /// [`GgufWeights::Quantized`] (products on the host's threads: a CPU backend) a folder's
    /// mixture-of-experts layers are packed for the CPU's own product
    /// ([`CausalLm::pack_experts`]).
    pub fn load_with(path: &Path, weights: GgufWeights, device: &Device) -> Result<Self> {
        // A file is a GGUF file (whose header check names anything else); a folder is Hugging Face's.
        if path.is_file() {
            let file = GgufFile::open(path)?;
            // The tokenizer and chat template first, the vocabulary and the tokenizer's
            // short-lived building memory handed back before the weights' pages are read: they
            // would otherwise add up in the peak.
            let vocab = GgufVocab::from_gguf(&file)?;
            let tokenizer = gguf_tokenizer::tokenizer(&vocab)?;
            let token = |id: Option<u32>| {
                id.and_then(|id| vocab.tokens.get(id as usize))
                    .cloned()
                    .unwrap_or_default()
            };
            let chat = file
                .get("tokenizer.chat_template")
                .and_then(|value| value.as_str())
                .map(|source| ChatTemplate {
                    source: source.to_string(),
                    bos_token: token(vocab.bos),
                    eos_token: token(vocab.eos),
                });
            drop(vocab);
            attnzoo_backends::release_freed_memory();
            let model = CausalLm::from_gguf_file(&file, weights, device)
                .map_err(|error| Error::Input(format!("{}: {error}", path.display())))?;
            return Ok(Self {
                model,
                tokenizer: Some(tokenizer),
                chat,
            });
        }
        let dir = path;
        let model = CausalLm::from_pretrained(dir, device)?;
        let model = match weights {
            GgufWeights::Quantized => model.pack_experts(),
            GgufWeights::Dequantized => model,
        };
        let path = dir.join("tokenizer.json");
        let tokenizer = if path.is_file() {
            Some(Tokenizer::from_file(&path).map_err(|error| {
                Error::Input(format!("cannot load {}: {error}", path.display()))
            })?)
        } else {
            None
        };
        Ok(Self {
            model,
            tokenizer,
            chat: chat_template(dir)?,
        })
    }

    /// Whether the folder has a `tokenizer.json` (text in and out), not only ids.
    pub fn has_tokenizer(&self) -> bool {
        self.tokenizer.is_some()
    }

    fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer
            .as_ref()
            .ok_or_else(|| Error::Input("the model folder has no tokenizer.json".into()))
    }

    /// The perplexity of `text` as llama.cpp's `llama-perplexity -c CONTEXT` computes it (see
    /// [`CausalLm::perplexity`]): tokenized with the special tokens, each chunk begun with the
    /// BOS token when the tokenizer adds one; `progress` sees each chunk's result.
    pub fn perplexity(
        &self,
        text: &str,
        context: usize,
        progress: impl FnMut(&Perplexity, usize),
    ) -> Result<Perplexity> {
        let tokens = self.encode(text)?;
        // The token the tokenizer puts before any text, if any: its BOS.
        let bos = self.encode("")?.first().copied();
        Ok(self.model.perplexity(&tokens, bos, context, progress)?)
    }

    /// Token ids of `text`, with the tokenizer's special tokens (e.g. a leading BOS).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.encode_with(text, true)
    }

    fn encode_with(&self, text: &str, special: bool) -> Result<Vec<u32>> {
        let encoding = self
            .tokenizer()?
            .encode(text, special)
            .map_err(|error| Error::Input(format!("cannot tokenize the prompt: {error}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The chat template rendered for one user message and the assistant's turn, as
    /// `apply_chat_template(.., add_generation_prompt=True, tokenize=False)`.
    pub fn chat_prompt(&self, user: &str) -> Result<String> {
        self.chat
            .as_ref()
            .ok_or_else(|| {
                Error::Input(
                    "the model has no chat template (a folder's tokenizer_config.json or chat_template.jinja, a GGUF file's tokenizer.chat_template)"
                        .into(),
                )
            })?
            .render(user)
    }

    /// Token ids of the rendered chat prompt (the template writes the special tokens itself).
    pub fn encode_chat(&self, user: &str) -> Result<Vec<u32>> {
        let text = self.chat_prompt(user)?;
        self.encode_with(&text, false)
    }

    /// Text of `ids`, without special tokens.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer()?
            .decode(ids, true)
            .map_err(|error| Error::Input(format!("cannot decode tokens: {error}")))
    }

    /// Generates after `prompt`, calling `on_token(id, new_text)` for each token as it comes:
    /// `new_text` is the text the continuation gained (empty while a character is incomplete,
    /// and always empty without a tokenizer). Returns the new ids.
    /// The callback's error stops the generation and is returned.
    pub fn generate<E: From<Error>>(
        &self,
        prompt: &[u32],
        config: &GenerationConfig,
        mut on_token: impl FnMut(u32, &str) -> std::result::Result<(), E>,
    ) -> std::result::Result<Vec<u32>, E> {
        let mut ids = Vec::new();
        let mut shown = 0;
        let tokens = self.model.generate(prompt, config).map_err(Error::from)?;
        for token in tokens {
            let token = token.map_err(Error::from)?;
            ids.push(token);
            let piece = match &self.tokenizer {
                Some(_) => {
                    let text = self.decode(&ids)?;
                    // A byte-level tokenizer may end on part of a character: wait for the rest.
                    if text.len() > shown
                        && !text.ends_with('\u{FFFD}')
                        && text.is_char_boundary(shown)
                    {
                        let piece = text[shown..].to_string();
                        shown = text.len();
                        piece
                    } else {
                        String::new()
                    }
                }
                None => String::new(),
            };
            on_token(token, &piece)?;
        }
        Ok(ids)
    }

    /// Each token of `ids` as text: its decoding alone, special tokens included (without a
    /// tokenizer, its id).
    pub fn pieces(&self, ids: &[u32]) -> Result<Vec<String>> {
        match &self.tokenizer {
            Some(tokenizer) => ids
                .iter()
                .map(|&id| {
                    tokenizer
                        .decode(&[id], false)
                        .map_err(|error| Error::Input(format!("cannot decode token {id}: {error}")))
                })
                .collect(),
            None => Ok(ids.iter().map(u32::to_string).collect()),
        }
    }

    /// The attention of the step that produced the token at `position` of `ids` (prompt and
    /// generated tokens): the positions before it run through the model as generation runs them,
    /// the last one alone after the cache, and each layer's weights of that step are returned per
    /// head over every earlier token. Later tokens play no part.
    pub fn attend(&self, ids: &[u32], position: usize) -> Result<TokenAttention> {
        if position == 0 || position >= ids.len() {
            return Err(Error::Input(format!(
                "position {position}: not that of a token after the first of the {} ids given",
                ids.len()
            )));
        }
        let vocab = self.model.vocab_size();
        if let Some(bad) = ids.iter().find(|&&id| id as usize >= vocab) {
            return Err(Error::Input(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        let device = self.model.device();
        let tensor = |ids: &[u32]| {
            let values = ids.iter().map(|&id| i64::from(id)).collect::<Vec<_>>();
            Tensor::<2, Int>::from_data(TensorData::new(values, [1, ids.len()]), &device)
        };
        let mut cache = self.model.cache();
        if position > 1 {
            self.model
                .forward_last(tensor(&ids[..position - 1]), None, &mut cache)?;
        }
        let (_, weights) = self.model.forward_with_weights(
            tensor(&ids[position - 1..position]),
            None,
            &mut cache,
        )?;
        // A sliding-window layer's keys are the last ones only: the others get zero.
        let mut weights = maps_of(weights)?;
        for row in weights.iter_mut().flatten().flatten() {
            row.splice(0..0, std::iter::repeat_n(0.0, position - row.len()));
        }
        Ok(TokenAttention {
            pieces: self.pieces(&ids[..=position])?,
            weights,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/lm")
            .join(name)
    }

    /// Each step's weights are row `position − 1` of the whole sequence's forward: rows of 1,
    /// nothing on later keys (nor, in Gemma 2's sliding layer, outside its window of 4).
    #[test]
    fn a_tokens_attention_is_its_rows_of_the_whole_forward_and_sees_only_earlier_tokens() {
        let device = Device::flex();
        for (name, windows) in [("qwen2", [None, None]), ("gemma2", [Some(4), None])] {
            let lm = LanguageModel::load(&fixture(name), &device).unwrap();
            let ids: Vec<u32> = (1..=9).map(|i| i * 7 % 60 + 3).collect();
            let len = ids.len();
            let input = Tensor::<2, Int>::from_data(
                TensorData::new(ids.iter().map(|&id| i64::from(id)).collect(), [1, len]),
                &device,
            );
            let (_, whole) = lm
                .model
                .forward_with_weights(input, None, &mut lm.model.cache())
                .unwrap();
            let whole = maps_of(whole).unwrap();
            for position in 1..len {
                let attention = lm.attend(&ids, position).unwrap();
                assert_eq!(attention.pieces.len(), position + 1);
                assert_eq!(attention.weights.len(), whole.len());
                for (layer, heads) in attention.weights.iter().enumerate() {
                    for (head, rows) in heads.iter().enumerate() {
                        let [row] = rows.as_slice() else {
                            panic!("one row, not {}", rows.len())
                        };
                        assert_eq!(row.len(), position, "{name}: a weight per earlier token");
                        let sum: f32 = row.iter().sum();
                        assert!((sum - 1.0).abs() < 1e-4, "{name}: a row sums to {sum}");
                        let full = &whole[layer][head][position - 1];
                        assert!(full[position..].iter().all(|&w| w == 0.0), "{name}: causal");
                        for (key, (&w, &expected)) in row.iter().zip(full).enumerate() {
                            assert!(
                                (w - expected).abs() < 1e-5,
                                "{name} key {key}: {w} {expected}"
                            );
                            if windows[layer].is_some_and(|window| position - 1 - key > window) {
                                assert_eq!(w, 0.0, "{name} layer {layer}: outside the window");
                            }
                        }
                    }
                }
            }
            let error = lm.attend(&ids, 0).unwrap_err().to_string();
            assert!(error.contains("position 0"), "{error}");
            assert!(lm.attend(&ids, len).is_err());
            let error = lm.attend(&[1, 67], 1).unwrap_err().to_string();
            assert_eq!(error, "token id 67 is outside the vocabulary of 67");
        }
        let lm = LanguageModel::load(&fixture("qwen2"), &device).unwrap();
        let ids = lm.encode("the cat").unwrap();
        // Special tokens included: the BOS the tokenizer adds, then the text's pieces.
        let pieces = lm.pieces(&ids).unwrap();
        assert_eq!(pieces[0], "<s>");
        assert_eq!(pieces[1..].concat(), lm.decode(&ids).unwrap(), "{pieces:?}");
        assert_eq!(pieces.len(), ids.len());
    }
}
