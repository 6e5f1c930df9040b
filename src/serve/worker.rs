//! The model thread: every model is loaded on it and every request runs on it, one at a time,
//! taken from a bounded queue. A request whose client has gone (its reply channel closed) is
//! skipped, not run, and a generation whose client goes stops at its next token (it holds the
//! thread for at most its `max_new_tokens` steps); a request that panics inside a backend is an
//! error reply, and the thread goes on with the next.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use attnzoo_models::attention::AlignmentScore;
use attnzoo_models::lm::{GenerationConfig, LmAttention};
use attnzoo_models::seq2seq::Seq2SeqConfig;
use burn::tensor::Device;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::language_model::{LanguageModel, TokenAttention};
use crate::sentence_embedding::{SelfAttention, SentenceEmbedder};
use crate::translation::{DecodeConfig, TextAttention, Translator};

/// What a loaded model is, as `GET /api/models` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct ModelInfo {
    /// The name requests use: a checkpoint's or language model's folder (its parent's, for a
    /// folder named `model`), or `all-MiniLM-L6-v2`.
    pub name: String,
    /// `transformer`, `rnn`, `bert` or `decoder` (a language model).
    pub kind: &'static str,
    /// `translate` (German → English), `encode` (English self-attention and similarity) or
    /// `generate` (a language model's continuation).
    pub task: &'static str,
    /// The attention it uses, in words.
    pub attention: &'static str,
    /// The backend it runs on.
    pub backend: String,
    /// Attention layers (the RNN's alignment is one).
    pub layers: usize,
    /// Heads per layer.
    pub heads: usize,
    /// The language it reads (`text` for a language model).
    pub source: &'static str,
    /// The language it writes, if it translates.
    pub target: Option<&'static str>,
}

/// Work for the model thread.
#[derive(Clone, Debug)]
pub enum Request {
    /// Translate `text` with the translation model at `model` (an index into
    /// [`Worker::models`]) and return every attention map.
    Translate {
        /// Index of the model.
        model: usize,
        /// The German text.
        text: String,
        /// How to decode.
        decode: DecodeConfig,
    },
    /// MiniLM's self-attention over `text`, and over `other` with the two sentences' cosine
    /// similarity.
    Encode {
        /// The English text.
        text: String,
        /// A second sentence to compare with.
        other: Option<String>,
    },
    /// Continue `prompt` with the language model at `model` (an index into [`Worker::models`]),
    /// sending each token on `tokens` as it comes; the generation stops when `tokens` is closed.
    Generate {
        /// Index of the model.
        model: usize,
        /// The prompt's text.
        prompt: String,
        /// Render the prompt as a user message with the folder's chat template.
        chat: bool,
        /// The prompt's tokens may be at most this many.
        max_prompt_tokens: usize,
        /// How to generate.
        config: GenerationConfig,
        /// Where the tokens go.
        tokens: mpsc::UnboundedSender<Generated>,
    },
    /// Where the language model at `model` looked when it produced the token at `position` of
    /// `ids` (see [`LanguageModel::attend`]).
    LmAttention {
        /// Index of the model.
        model: usize,
        /// The prompt's and generated tokens.
        ids: Vec<u32>,
        /// The generated token's position in `ids`.
        position: usize,
    },
}

/// What a generation sends as it goes.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Generated {
    /// First, the prompt's tokens.
    Prompt {
        /// Their ids.
        prompt: Vec<u32>,
    },
    /// A new token.
    Token {
        /// Its id.
        id: u32,
        /// The text the continuation gained (empty while a character is incomplete).
        text: String,
    },
}

/// The model thread's answer.
#[derive(Clone, Debug)]
pub enum Response {
    /// A translation and its attention.
    Translated(Box<TextAttention>),
    /// Self-attention of one or two sentences.
    Encoded {
        /// Over the text.
        text: SelfAttention,
        /// Over the other sentence, if given.
        other: Option<SelfAttention>,
        /// The cosine similarity of the two sentence embeddings, if `other` was given.
        similarity: Option<f32>,
    },
    /// A generation has ended; its tokens went out as it ran.
    Generated {
        /// It stopped at an end-of-sequence token (else after `max_new_tokens`).
        eos: bool,
    },
    /// One generated token's attention.
    LmAttention(Box<TokenAttention>),
}

/// Why a request got no answer from the model thread.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The queue is full.
    #[error("the server is busy: its queue of {0} waiting requests is full; try again shortly")]
    Busy(usize),
    /// The model thread has stopped.
    #[error("the model thread has stopped")]
    Stopped,
}

struct Job {
    request: Request,
    reply: oneshot::Sender<Result<Response>>,
}

/// What the model thread holds: the translators in the order of [`Worker::models`], then
/// MiniLM, then the language models.
struct Models {
    translators: Vec<Translator>,
    embedder: Option<SentenceEmbedder>,
    lms: Vec<LanguageModel>,
    /// The index in [`Worker::models`] of the first language model.
    first_lm: usize,
}

/// A handle on the model thread: cheap to clone, shared by every request handler.
#[derive(Clone)]
pub struct Worker {
    jobs: SyncSender<Job>,
    queue: usize,
    models: Arc<[ModelInfo]>,
}

impl Worker {
    /// Starts the model thread and loads onto `device` (on `backend`, for the listing) each
    /// checkpoint of `checkpoints`, if given the MiniLM model in `minilm`, and each language
    /// model folder of `lms` (which needs its `tokenizer.json`). Returns once every model is
    /// loaded, or with the first that cannot be. At most `queue` requests wait beyond the one
    /// running.
    pub fn start(
        checkpoints: &[PathBuf],
        minilm: Option<&Path>,
        lms: &[PathBuf],
        device: Device,
        backend: &str,
        queue: usize,
    ) -> Result<Self> {
        if checkpoints.is_empty() && minilm.is_none() && lms.is_empty() {
            return Err(Error::Input(
                "nothing to serve: give a --checkpoint, a --model-dir or an --lm".into(),
            ));
        }
        if queue == 0 {
            return Err(Error::Input("queue: must be at least 1".into()));
        }
        let mut seen = Vec::new();
        for (what, dir) in checkpoints
            .iter()
            .map(|dir| ("checkpoint", dir))
            .chain(lms.iter().map(|dir| ("language model", dir)))
        {
            let canonical = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            if seen.contains(&canonical) {
                return Err(Error::Input(format!(
                    "the {what} {} is given twice",
                    dir.display()
                )));
            }
            seen.push(canonical);
        }
        let (jobs, receiver) = sync_channel::<Job>(queue);
        let (ready, loaded) = sync_channel::<Result<Vec<ModelInfo>>>(1);
        let checkpoints = checkpoints.to_vec();
        let minilm = minilm.map(Path::to_path_buf);
        let lms = lms.to_vec();
        let backend = backend.to_string();
        std::thread::Builder::new()
            .name("attnzoo-models".into())
            .spawn(
                move || match load(&checkpoints, minilm.as_deref(), &lms, &device, &backend) {
                    Ok((models, infos)) => {
                        let _ = ready.send(Ok(infos));
                        run(&models, receiver);
                    }
                    Err(error) => {
                        let _ = ready.send(Err(error));
                    }
                },
            )
            .map_err(|error| Error::Machine(format!("starting the model thread: {error}")))?;
        let models = loaded
            .recv()
            .map_err(|_| Error::Machine("the model thread stopped while loading".into()))??;
        Ok(Self {
            jobs,
            queue,
            models: models.into(),
        })
    }

    /// The loaded models, in the order given (checkpoints first, then MiniLM, then the language
    /// models).
    pub fn models(&self) -> &[ModelInfo] {
        &self.models
    }

    /// Queues `request`; its answer arrives on the returned channel. Drop the channel to cancel
    /// a request that has not started.
    pub fn submit(
        &self,
        request: Request,
    ) -> std::result::Result<oneshot::Receiver<Result<Response>>, Refused> {
        let (reply, answer) = oneshot::channel();
        match self.jobs.try_send(Job { request, reply }) {
            Ok(()) => Ok(answer),
            Err(TrySendError::Full(_)) => Err(Refused::Busy(self.queue)),
            Err(TrySendError::Disconnected(_)) => Err(Refused::Stopped),
        }
    }
}

/// Loads every model, naming each uniquely.
fn load(
    checkpoints: &[PathBuf],
    minilm: Option<&Path>,
    lms: &[PathBuf],
    device: &Device,
    backend: &str,
) -> Result<(Models, Vec<ModelInfo>)> {
    let mut translators = Vec::new();
    let mut infos: Vec<ModelInfo> = Vec::new();
    for dir in checkpoints {
        let translator = Translator::load(dir, device)?;
        let (kind, attention, layers, heads) = match &translator.checkpoint().model {
            Seq2SeqConfig::Transformer(c) => {
                ("transformer", "multi-head", c.decoder_layers, c.n_heads)
            }
            Seq2SeqConfig::Rnn(c) => {
                let attention = match c.attention {
                    None => "none",
                    Some(AlignmentScore::Additive) => "Bahdanau (additive)",
                    Some(AlignmentScore::Dot) => "Luong dot",
                    Some(AlignmentScore::General) => "Luong general",
                    Some(AlignmentScore::Concat) => "Luong concat",
                    Some(AlignmentScore::Location { .. }) => "Luong location",
                };
                let layers = usize::from(c.attention.is_some());
                ("rnn", attention, layers, layers)
            }
        };
        infos.push(ModelInfo {
            name: unique_name(&infos, checkpoint_name(dir)),
            kind,
            task: "translate",
            attention,
            backend: backend.to_string(),
            layers,
            heads,
            source: "German",
            target: Some("English"),
        });
        translators.push(translator);
    }
    let mut embedder = None;
    if let Some(dir) = minilm {
        let loaded = SentenceEmbedder::load(dir, device)?;
        let config = loaded.config();
        infos.push(ModelInfo {
            name: unique_name(&infos, "all-MiniLM-L6-v2".into()),
            kind: "bert",
            task: "encode",
            attention: "multi-head",
            backend: backend.to_string(),
            layers: config.num_hidden_layers,
            heads: config.num_attention_heads,
            source: "English",
            target: None,
        });
        embedder = Some(loaded);
    }
    let first_lm = infos.len();
    let mut languages = Vec::new();
    for dir in lms {
        let lm = LanguageModel::load(dir, device)?;
        if !lm.has_tokenizer() {
            return Err(Error::Input(format!(
                "--lm {}: the folder has no tokenizer.json (the explorer takes text)",
                dir.display()
            )));
        }
        let (attention, heads) = match lm.model.layers.first().map(|layer| &layer.self_attn) {
            Some(LmAttention::MultiHead(mha)) if mha.n_kv_heads < mha.n_heads => {
                ("grouped-query", mha.n_heads)
            }
            Some(LmAttention::MultiHead(mha)) => ("multi-head", mha.n_heads),
            Some(LmAttention::Latent(mla)) => ("multi-head latent", mla.n_heads),
            None => ("none", 0),
        };
        infos.push(ModelInfo {
            name: unique_name(&infos, checkpoint_name(dir)),
            kind: "decoder",
            task: "generate",
            attention,
            backend: backend.to_string(),
            layers: lm.model.layers.len(),
            heads,
            source: "text",
            target: None,
        });
        languages.push(lm);
    }
    let models = Models {
        translators,
        embedder,
        lms: languages,
        first_lm,
    };
    Ok((models, infos))
}

/// A checkpoint's name: its folder's, or the parent's for a folder named `model`
/// (`runs/demo/model` is `demo`).
fn checkpoint_name(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let name = |path: &Path| path.file_name().map(|n| n.to_string_lossy().into_owned());
    match name(&dir) {
        Some(folder) if folder == "model" => dir.parent().and_then(name).unwrap_or(folder),
        Some(folder) => folder,
        None => "model".into(),
    }
}

/// `name`, or `name-2`, `name-3`, … if taken.
fn unique_name(infos: &[ModelInfo], name: String) -> String {
    let taken = |candidate: &str| infos.iter().any(|info| info.name == candidate);
    if !taken(&name) {
        return name;
    }
    (2..)
        .map(|n| format!("{name}-{n}"))
        .find(|candidate| !taken(candidate))
        .expect("some suffix is free")
}

/// Answers jobs until every [`Worker`] handle is dropped.
fn run(models: &Models, jobs: Receiver<Job>) {
    for job in jobs {
        if job.reply.is_closed() {
            continue;
        }
        let answer = catch_unwind(AssertUnwindSafe(|| answer(models, job.request))).unwrap_or_else(
            |panic| {
                let message = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("no message");
                Err(Error::Machine(format!(
                    "the model failed on this input: {}",
                    message.lines().next().unwrap_or_default()
                )))
            },
        );
        let _ = job.reply.send(answer);
    }
}

fn answer(models: &Models, request: Request) -> Result<Response> {
    match request {
        Request::Translate {
            model,
            text,
            decode,
        } => match models.translators.get(model) {
            Some(translator) => Ok(Response::Translated(Box::new(
                translator.attend_text(&text, &decode)?,
            ))),
            None => Err(Error::Input(format!("model {model} does not translate"))),
        },
        Request::Encode { text, other } => {
            let Some(embedder) = &models.embedder else {
                return Err(Error::Input("no sentence-embedding model is loaded".into()));
            };
            let similarity = match &other {
                Some(other) => {
                    let vectors = embedder.embed(&[text.clone(), other.clone()], 2)?;
                    Some(vectors[0].iter().zip(&vectors[1]).map(|(a, b)| a * b).sum())
                }
                None => None,
            };
            Ok(Response::Encoded {
                text: embedder.attend(&text)?,
                other: other.map(|other| embedder.attend(&other)).transpose()?,
                similarity,
            })
        }
        Request::Generate {
            model,
            prompt,
            chat,
            max_prompt_tokens,
            config,
            tokens,
        } => {
            let lm = models.lm(model)?;
            let prompt = if chat {
                lm.encode_chat(&prompt)?
            } else {
                lm.encode(&prompt)?
            };
            if prompt.len() > max_prompt_tokens {
                return Err(Error::Input(format!(
                    "prompt: {} tokens; at most {max_prompt_tokens}",
                    prompt.len()
                )));
            }
            let mut start = Some(Generated::Prompt {
                prompt: prompt.clone(),
            });
            let ids = lm.generate(&prompt, &config, |id, text| {
                let gone = || Error::Input("the client has gone".into());
                if let Some(start) = start.take() {
                    tokens.send(start).map_err(|_| gone())?;
                }
                let text = text.to_string();
                tokens
                    .send(Generated::Token { id, text })
                    .map_err(|_| gone())
            })?;
            let eos = ids
                .last()
                .is_some_and(|id| lm.model.eos_token_ids.contains(id));
            Ok(Response::Generated { eos })
        }
        Request::LmAttention {
            model,
            ids,
            position,
        } => Ok(Response::LmAttention(Box::new(
            models.lm(model)?.attend(&ids, position)?,
        ))),
    }
}

impl Models {
    /// The language model at `model` in [`Worker::models`].
    fn lm(&self, model: usize) -> Result<&LanguageModel> {
        model
            .checked_sub(self.first_lm)
            .and_then(|index| self.lms.get(index))
            .ok_or_else(|| Error::Input(format!("model {model} is not a language model")))
    }
}
