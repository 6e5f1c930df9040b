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

use attnzoo_models::lm::{CausalLm, GenerationConfig};
use burn::tensor::Device;
use minijinja::{Environment, ErrorKind};
use serde_json::Value;
use tokenizers::Tokenizer;

use crate::error::{Error, Result};

/// A decoder LM with its tokenizer and chat template.
pub struct LanguageModel {
    /// The model.
    pub model: CausalLm,
    tokenizer: Option<Tokenizer>,
    chat: Option<ChatTemplate>,
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
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        let model = CausalLm::from_pretrained(dir, device)?;
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

    fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer
            .as_ref()
            .ok_or_else(|| Error::Input("the model folder has no tokenizer.json".into()))
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
            .ok_or_else(|| Error::Input("the model folder has no chat template".into()))?
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
}
