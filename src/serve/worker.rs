//! The model thread: every model is loaded on it and every request runs on it, one at a time,
//! taken from a bounded queue. A request whose client has gone (its reply channel closed) is
//! skipped, not run; a request that panics inside a backend is an error reply, and the thread
//! goes on with the next.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use attnzoo_models::attention::AlignmentScore;
use attnzoo_models::seq2seq::Seq2SeqConfig;
use burn::tensor::Device;
use serde::Serialize;
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::sentence_embedding::{SelfAttention, SentenceEmbedder};
use crate::translation::{DecodeConfig, TextAttention, Translator};

/// What a loaded model is, as `GET /api/models` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct ModelInfo {
    /// The name requests use: a checkpoint's folder (its parent's, for a folder named `model`),
    /// or `all-MiniLM-L6-v2`.
    pub name: String,
    /// `transformer`, `rnn` or `bert`.
    pub kind: &'static str,
    /// `translate` (German → English) or `encode` (English self-attention and similarity).
    pub task: &'static str,
    /// The attention it uses, in words.
    pub attention: &'static str,
    /// The backend it runs on.
    pub backend: String,
    /// Attention layers (the RNN's alignment is one).
    pub layers: usize,
    /// Heads per layer.
    pub heads: usize,
    /// The language it reads.
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
/// MiniLM.
struct Models {
    translators: Vec<Translator>,
    embedder: Option<SentenceEmbedder>,
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
    /// checkpoint of `checkpoints` and, if given, the MiniLM model in `minilm`. Returns once
    /// every model is loaded, or with the first that cannot be. At most `queue` requests wait
    /// beyond the one running.
    pub fn start(
        checkpoints: &[PathBuf],
        minilm: Option<&Path>,
        device: Device,
        backend: &str,
        queue: usize,
    ) -> Result<Self> {
        if checkpoints.is_empty() && minilm.is_none() {
            return Err(Error::Input(
                "nothing to serve: give a --checkpoint or a --model-dir".into(),
            ));
        }
        if queue == 0 {
            return Err(Error::Input("queue: must be at least 1".into()));
        }
        let mut seen = Vec::new();
        for dir in checkpoints {
            let canonical = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            if seen.contains(&canonical) {
                return Err(Error::Input(format!(
                    "the checkpoint {} is given twice",
                    dir.display()
                )));
            }
            seen.push(canonical);
        }
        let (jobs, receiver) = sync_channel::<Job>(queue);
        let (ready, loaded) = sync_channel::<Result<Vec<ModelInfo>>>(1);
        let checkpoints = checkpoints.to_vec();
        let minilm = minilm.map(Path::to_path_buf);
        let backend = backend.to_string();
        std::thread::Builder::new()
            .name("attnzoo-models".into())
            .spawn(
                move || match load(&checkpoints, minilm.as_deref(), &device, &backend) {
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

    /// The loaded models, in the order given (checkpoints first).
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
    let models = Models {
        translators,
        embedder,
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
    }
}
