//! A training run's folder: `model.json` (the model config), `train.json` (the training config),
//! `vocab.json` (both vocabularies), `weights-epoch-N.safetensors` and `adam-epoch-N.bpk` (the
//! last epoch's weights and Adam's moment estimates, burnpack), and `state.json`, which names
//! them and the weights of the best validation BLEU: the last epoch's, or, once a later epoch
//! scores lower, `weights-best.safetensors` (kept until a better epoch comes).
//!
//! What holds, whatever happens to a run:
//! - every file is written through a temporary file and a rename, and `state.json` last, so an
//!   interrupted save leaves the previous checkpoint intact; leftovers of interrupted writes are
//!   removed when training next opens the folder;
//! - one training run at a time: training holds an advisory lock on the folder's `lock` file
//!   (released by the operating system when the process ends, however it ends);
//! - a folder whose run stopped before its first epoch (configs, no `state.json`) starts afresh;
//! - a run writes, replaces and deletes only its own files ([`is_run_file`]): a new run or
//!   `demo --fresh` refuses a folder that holds anything else;
//! - what is read back is checked: configs in range (one line naming the field), vocabularies
//!   without duplicates and of the model's sizes, configs, weights and optimizer state those
//!   `state.json` recorded (by checksum), the files it names inside the folder, weights finite.
//!
//! What `state.json` holds is [`TrainState`]; the optimisation
//! settings in `train.json` are a [`TrainConfig`].

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use attnzoo_models::attention::AlignmentScore;
use attnzoo_models::finite::non_finite_parameters;
use attnzoo_models::seq2seq::{Seq2Seq, Seq2SeqConfig};
use burn::module::Module;
use burn::optim::ModuleOptimizer;
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::{Bytes, Device};
use serde::{Deserialize, Serialize};

use super::copy::{mark_pair, CopyRule, Marked};
use super::corpus::Pair;
use super::train_config::TrainConfig;
use super::train_state::{param_ids, with_param_ids, TrainState};
use super::vocab::{tokenize, Vocab};
use crate::error::{Error, Result};
use crate::files::{partial_of, remove_partial_files, write_atomically};
use crate::validate;

/// The best epoch's weights, kept beside the last epoch's once they differ.
pub const BEST_WEIGHTS: &str = "weights-best.safetensors";

/// The files written once when a run starts; `state.json` records their checksums too, so an
/// edited config or another run's vocabulary is noticed.
const CONFIG_FILES: [&str; 3] = ["model.json", "train.json", "vocab.json"];

/// Whether `name` is a file that a run writes in its folder: the configs, `state.json`, `lock`,
/// `weights-epoch-N.safetensors`, [`BEST_WEIGHTS`], `adam-epoch-N.bpk`, or an interrupted write
/// of one of them.
pub fn is_run_file(name: &str) -> bool {
    let name = partial_of(name).unwrap_or(name);
    let numbered = |prefix: &str, suffix: &str| {
        name.strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    CONFIG_FILES.contains(&name)
        || ["state.json", "lock", BEST_WEIGHTS].contains(&name)
        || numbered("weights-epoch-", ".safetensors")
        || numbered("adam-epoch-", ".bpk")
}

/// Locks `dir` (which must exist) for a new run or for deletion, refusing it unless all it
/// holds is a run's files, and among them a `model.json` of attnzoo's or the `lock` a run takes
/// before it writes anything (so a folder of a run killed while writing its configs is its). A refusal
/// leaves no lock file behind where there was none.
fn lock_run(dir: &Path) -> Result<Arc<fs::File>> {
    let names: Vec<String> = fs::read_dir(dir)
        .map_err(|error| Error::read(dir, error))?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    let refuse = |what: String| {
        Error::Input(format!(
            "{} holds {what}: not touching it; choose another --out",
            dir.display()
        ))
    };
    if let Some(foreign) = names.iter().find(|name| !is_run_file(name)) {
        return Err(refuse(format!(
            "{foreign}, which is not an attnzoo run's file"
        )));
    }
    let lock = lock(dir)?;
    let had_lock = names.iter().any(|name| name == "lock");
    if !had_lock
        && names.iter().any(|name| partial_of(name).is_none())
        && read_json::<Seq2SeqConfig>(&dir.join("model.json"), None).is_err()
    {
        let _ = fs::remove_file(dir.join("lock"));
        return Err(refuse("files of a run but no attnzoo model.json".into()));
    }
    Ok(lock)
}

/// Source and target vocabularies, and which words translation copies.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Vocabularies {
    /// German.
    pub source: Vocab,
    /// English.
    pub target: Vocab,
    /// Which German words become copy slots when translating (`None`: none, as in checkpoints
    /// made before names and numbers were copied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<CopyRule>,
}

/// A German sentence as a model reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// Token ids.
    pub ids: Vec<usize>,
    /// Each id beside the text it stands for.
    pub pieces: Vec<(usize, String)>,
    /// Whether the sentence had more tokens than these.
    pub cut: bool,
    /// The words of its copy slots, slot 1 first.
    pub copies: Vec<String>,
}

impl Vocabularies {
    /// The copy rule, when the vocabularies have the slots it needs.
    fn copy_rule(&self) -> Option<&CopyRule> {
        self.copy.as_ref().filter(|_| self.source.has_slots())
    }

    /// A German sentence's tokens, at most `max_len` of them, the words to copy as slots.
    pub fn source(&self, sentence: &str, max_len: usize) -> Source {
        let marked = match self.copy_rule() {
            Some(rule) => rule.mark(sentence),
            None => Marked {
                words: tokenize(sentence),
                copies: Vec::new(),
            },
        };
        let mut pieces = self.source.pieces(&marked.words);
        let cut = pieces.len() > max_len;
        pieces.truncate(max_len);
        Source {
            ids: pieces.iter().map(|(id, _)| *id).collect(),
            pieces,
            cut,
            copies: marked.copies,
        }
    }

    /// A training pair's ids: its shared names and numbers as slots when the vocabularies have
    /// them.
    pub fn encode_pair(&self, pair: &Pair) -> (Vec<usize>, Vec<usize>) {
        let (german, english) = match self.copy_rule() {
            Some(_) => mark_pair(pair),
            None => (tokenize(&pair.german), tokenize(&pair.english)),
        };
        (self.source.encode(&german), self.target.encode(&english))
    }
}

/// Which of a checkpoint's weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weights {
    /// The epoch of the best validation BLEU (the last, where no best was recorded).
    Best,
    /// The last epoch's (what training continues from).
    Last,
}

/// Everything in a checkpoint folder but the weights.
///
/// ```no_run
/// use attnzoo::translation::{Checkpoint, Weights};
///
/// let checkpoint = Checkpoint::open("runs/demo/model".as_ref())?; // read only: no lock taken
/// println!("{} epochs, {} German tokens", checkpoint.state.epoch, checkpoint.vocab.source.len());
/// let device = burn::tensor::Device::default();
/// let model = checkpoint.load_model(Weights::Best, &device)?; // an attnzoo_models::seq2seq::Seq2Seq
/// # let _ = model;
/// # Ok::<(), attnzoo::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// The folder.
    pub dir: PathBuf,
    /// The model.
    pub model: Seq2SeqConfig,
    /// How it is trained.
    pub train: TrainConfig,
    /// Its vocabularies.
    pub vocab: Vocabularies,
    /// Progress.
    pub state: TrainState,
    /// Training's lock on the folder (none when opened for reading).
    lock: Option<Arc<fs::File>>,
}

/// FNV-1a, 64 bits.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A long report of Burn's as one line of at most 160 characters: its first line, and the first
/// tensor its summary box lists ("Tensor not found: ┌─ Tensor Loading Summary … • name").
fn one_line(report: &str) -> String {
    let lines: Vec<&str> = report
        .lines()
        .map(|line| line.trim_start_matches(['│', ' ']).trim())
        .filter(|line| !line.is_empty())
        .collect();
    let head = lines
        .first()
        .map_or("", |line| line.split('┌').next().unwrap_or("").trim());
    let line = match lines.iter().find_map(|line| line.strip_prefix("• ")) {
        Some(tensor) => format!("{head} {tensor}"),
        None => head.to_string(),
    };
    line.chars().take(160).collect()
}

/// Reads JSON file `path` of a checkpoint, checking it against the checksum `state.json`
/// recorded for it, if any (none for `state.json` itself, nor for configs of runs saved before
/// configs had one).
fn read_json<T: serde::de::DeserializeOwned>(path: &Path, recorded: Option<u64>) -> Result<T> {
    let text = fs::read_to_string(path).map_err(|error| {
        Error::Input(format!(
            "not a checkpoint: cannot read {}: {error}",
            path.display()
        ))
    })?;
    if recorded.is_some_and(|expected| checksum(text.as_bytes()) != expected) {
        return Err(Error::Input(format!(
            "{} is not the file state.json recorded (edited, or from another run)",
            path.display()
        )));
    }
    serde_json::from_str(&text).map_err(|error| {
        Error::Input(format!(
            "damaged checkpoint file {}: {error}",
            path.display()
        ))
    })
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("checkpoint values serialise");
    write_atomically(path, text.as_bytes())
}

/// Checks every number of a model config: vocabularies at least 1, widths and layers in range,
/// dropout a probability, at most [`validate::MAX_PARAMETERS`] parameters in all.
pub fn validate_model(config: &Seq2SeqConfig) -> Result<(), String> {
    use validate::{at_least_one as one, field, layers, probability, width};
    let parameters = match config {
        Seq2SeqConfig::Rnn(c) => {
            field("source_vocab", c.source_vocab, one)?;
            field("target_vocab", c.target_vocab, one)?;
            field("embedding_dim", c.embedding_dim, width)?;
            field("hidden_dim", c.hidden_dim, width)?;
            field("dropout", c.dropout, probability)?;
            if let Some(AlignmentScore::Location { max_source_len }) = c.attention {
                field("max_source_len", max_source_len, width)?;
            }
            let [source, target, e, h] = [
                c.source_vocab,
                c.target_vocab,
                c.embedding_dim,
                c.hidden_dim,
            ]
            .map(|n| n as f64);
            // Embeddings, a bidirectional encoder LSTM, the decoder LSTM, attention and output
            // (an upper bound).
            (source + target) * e
                + 8.0 * (e + h) * h
                + 4.0 * (e + 3.0 * h) * h
                + 8.0 * h * h
                + 3.0 * h * target
        }
        Seq2SeqConfig::Transformer(c) => {
            field("source_vocab", c.source_vocab, one)?;
            field("target_vocab", c.target_vocab, one)?;
            field("d_model", c.d_model, width)?;
            field("n_heads", c.n_heads, one)?;
            field("d_ff", c.d_ff, width)?;
            field("encoder_layers", c.encoder_layers, layers)?;
            field("decoder_layers", c.decoder_layers, layers)?;
            field("dropout", c.dropout, probability)?;
            field("max_len", c.max_len, width)?;
            if c.d_model % c.n_heads != 0 {
                return Err(format!(
                    "d_model: {} is not a multiple of n_heads {}",
                    c.d_model, c.n_heads
                ));
            }
            let [source, target, d, ff, encoder, decoder] = [
                c.source_vocab,
                c.target_vocab,
                c.d_model,
                c.d_ff,
                c.encoder_layers,
                c.decoder_layers,
            ]
            .map(|n| n as f64);
            (source + 2.0 * target) * d
                + encoder * (4.0 * d * d + 2.0 * d * ff)
                + decoder * (8.0 * d * d + 2.0 * d * ff)
        }
    };
    if parameters > validate::MAX_PARAMETERS {
        return Err(format!(
            "a model of about {} parameters, more than the {} allowed",
            validate::show(parameters),
            validate::show(validate::MAX_PARAMETERS)
        ));
    }
    Ok(())
}

fn model_sizes(config: &Seq2SeqConfig) -> (usize, usize) {
    match config {
        Seq2SeqConfig::Rnn(c) => (c.source_vocab, c.target_vocab),
        Seq2SeqConfig::Transformer(c) => (c.source_vocab, c.target_vocab),
    }
}

/// Takes training's lock on `dir` (its `lock` file), or says which process holds it.
fn lock(dir: &Path) -> Result<Arc<fs::File>> {
    let path = dir.join("lock");
    if fs::symlink_metadata(&path).is_ok_and(|meta| !meta.is_file()) {
        return Err(Error::Input(format!(
            "{} is not a lock file of attnzoo's (a link or a folder): not touching it; choose another --out",
            path.display()
        )));
    }
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|error| Error::write(&path, error))?;
    let mut holder = String::new();
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let _ = file.read_to_string(&mut holder);
            return Err(Error::Input(format!(
                "{} is in use by another training run (process {}): wait for it or choose another --out",
                dir.display(),
                holder.trim()
            )));
        }
        Err(fs::TryLockError::Error(error)) => return Err(Error::write(&path, error)),
    }
    // A lock holds the process id of the run that last held it, or nothing.
    if file.read_to_string(&mut holder).is_err() || !holder.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::Input(format!(
            "{} is not a lock file of attnzoo's: not touching it; choose another --out",
            path.display()
        )));
    }
    let pid = std::process::id().to_string();
    let _ = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(pid.as_bytes()));
    Ok(Arc::new(file))
}

impl Checkpoint {
    /// Whether `dir` holds a run's configs (trained or not).
    pub fn exists(dir: &Path) -> bool {
        dir.join("model.json").is_file()
    }

    /// Whether `dir` holds at least one saved epoch.
    pub fn is_trained(dir: &Path) -> bool {
        dir.join("state.json").is_file()
    }

    /// Deletes the run in `dir` so that a new one can start there (`attnzoo demo --fresh`).
    /// Refused while another run holds the folder's lock, and for a folder that holds anything
    /// but a run's files: nothing but a run is ever deleted.
    pub fn discard(dir: &Path) -> Result<()> {
        if fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Err(Error::Input(format!(
                "{} is a link: not deleting a run through it; choose another --out",
                dir.display()
            )));
        }
        if !dir.exists() {
            return Ok(());
        }
        let _lock = lock_run(dir)?;
        for entry in fs::read_dir(dir)
            .map_err(|error| Error::read(dir, error))?
            .flatten()
        {
            if is_run_file(&entry.file_name().to_string_lossy()) {
                fs::remove_file(entry.path())
                    .map_err(|error| Error::write(&entry.path(), error))?;
            }
        }
        fs::remove_dir(dir).map_err(|error| Error::write(dir, error))
    }

    /// Starts a new run in `dir` (created if needed; a run there that never finished an epoch
    /// is replaced), checking the configs before anything is written, and locks it for training.
    pub fn create(
        dir: &Path,
        model: Seq2SeqConfig,
        train: TrainConfig,
        vocab: Vocabularies,
    ) -> Result<Self> {
        validate_model(&model)
            .and_then(|()| train.check())
            .map_err(Error::Input)?;
        fs::create_dir_all(dir).map_err(|error| Error::write(dir, error))?;
        let lock = lock_run(dir)?;
        if Self::is_trained(dir) {
            return Err(Error::Input(format!(
                "{} already holds a checkpoint: pass --resume to continue it, or choose another --out",
                dir.display()
            )));
        }
        remove_partial_files(dir, is_run_file);
        // model.json last: where it is, the run's configs are whole and it can be resumed.
        write_json(&dir.join("train.json"), &train)?;
        write_json(&dir.join("vocab.json"), &vocab)?;
        write_json(&dir.join("model.json"), &model)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            model,
            train,
            vocab,
            state: TrainState::default(),
            lock: Some(lock),
        })
    }

    /// Opens a run in `dir` to continue training it, locked: a trained checkpoint, or a run
    /// stopped before its first epoch (which starts from epoch 0 with its saved configs).
    pub fn resume(dir: &Path) -> Result<Self> {
        // Locked first: a run starting in `dir` holds the lock before it writes model.json.
        let lock = match dir.is_dir() {
            true => Some(lock(dir)?),
            false => None,
        };
        if !Self::exists(dir) {
            return Err(Error::Input(format!(
                "{} holds no run to resume (no model.json): train one with `attnzoo train --out {}`",
                dir.display(),
                dir.display()
            )));
        }
        remove_partial_files(dir, is_run_file);
        let mut checkpoint = Self::read(dir, Self::is_trained(dir))?;
        checkpoint.lock = lock;
        Ok(checkpoint)
    }

    /// Reads a trained checkpoint folder (without locking it), checking that its parts belong
    /// together.
    pub fn open(dir: &Path) -> Result<Self> {
        if !Self::is_trained(dir) {
            return Err(Error::Input(format!(
                "{} is not a trained checkpoint (no state.json): train one with `attnzoo train --out {}`",
                dir.display(),
                dir.display()
            )));
        }
        Self::read(dir, true)
    }

    fn read(dir: &Path, trained: bool) -> Result<Self> {
        let in_file = |file: &str| {
            let path = dir.join(file);
            move |why: String| Error::Input(format!("{}: {why}", path.display()))
        };
        let mut state: TrainState = if trained {
            read_json(&dir.join("state.json"), None)?
        } else {
            TrainState::default()
        };
        state.check().map_err(in_file("state.json"))?;
        let recorded = |name: &str| state.checksums.get(name).copied();
        let model: Seq2SeqConfig = read_json(&dir.join("model.json"), recorded("model.json"))?;
        validate_model(&model).map_err(in_file("model.json"))?;
        let train: TrainConfig = read_json(&dir.join("train.json"), recorded("train.json"))?;
        train.check().map_err(in_file("train.json"))?;
        let vocab: Vocabularies = read_json(&dir.join("vocab.json"), recorded("vocab.json"))?;
        let damaged =
            |error: String| Error::Input(format!("{}: damaged vocab.json: {error}", dir.display()));
        let vocab = Vocabularies {
            source: vocab.source.reindexed().map_err(damaged)?,
            target: vocab.target.reindexed().map_err(damaged)?,
            copy: vocab.copy,
        };
        state.param_ids = std::mem::take(&mut state.param_ids)
            .into_iter()
            .map(|(name, id)| (current_name(name), id))
            .collect();
        let (source, target) = model_sizes(&model);
        if (source, target) != (vocab.source.len(), vocab.target.len()) {
            return Err(Error::Input(format!(
                "{}: the model expects vocabularies of {source}/{target} tokens but vocab.json has {}/{}: the files are from different runs",
                dir.display(),
                vocab.source.len(),
                vocab.target.len()
            )));
        }
        if trained && state.weights.is_empty() {
            return Err(Error::Input(format!(
                "{}: state.json names no weights file",
                dir.display()
            )));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            model,
            train,
            vocab,
            state,
            lock: None,
        })
    }

    /// The longest source the model reads, in tokens: what training kept, and no more than a
    /// Transformer's position table or location attention's scores cover.
    pub fn max_source_len(&self) -> usize {
        let model_limit = match &self.model {
            Seq2SeqConfig::Transformer(c) => c.max_len,
            Seq2SeqConfig::Rnn(c) => match c.attention {
                Some(AlignmentScore::Location { max_source_len }) => max_source_len,
                _ => usize::MAX,
            },
        };
        self.train.max_len.min(model_limit)
    }

    /// The longest translation the model may produce: a Transformer's position table, or for
    /// the RNN twice the longest training sentence.
    pub fn max_output_len(&self) -> usize {
        match &self.model {
            Seq2SeqConfig::Transformer(c) => c.max_len,
            Seq2SeqConfig::Rnn(_) => 2 * self.train.max_len,
        }
    }

    /// Reads a file this state names, checking it is the one the state recorded.
    fn read_recorded(&self, name: &str) -> Result<Vec<u8>> {
        let path = self.dir.join(name);
        let bytes = fs::read(&path).map_err(|error| Error::read(&path, error))?;
        match self.state.checksums.get(name) {
            Some(&expected) if expected != checksum(&bytes) => Err(Error::Input(format!(
                "{} is not the file state.json recorded (changed or from another run)",
                path.display()
            ))),
            _ => Ok(bytes),
        }
    }

    /// The model with this checkpoint's best or last weights, on `device`, checked to be finite.
    pub fn load_model(&self, weights: Weights, device: &Device) -> Result<Seq2Seq> {
        let name = match (weights, &self.state.best_weights) {
            (Weights::Best, Some(best)) => best.as_str(),
            _ => self.state.weights.as_str(),
        };
        let path = self.dir.join(name);
        let bytes = self.read_recorded(name)?;
        let mut model = self.model.try_init(device)?;
        let result = model
            .load_from(&mut weights_store(bytes))
            .map_err(|error| {
                Error::Input(format!(
                    "{}: damaged or foreign weights file ({})",
                    path.display(),
                    one_line(&error.to_string())
                ))
            })?;
        if !result.missing.is_empty() || !result.errors.is_empty() {
            let first_error = result.errors.first().map(|e| one_line(&e.to_string()));
            return Err(Error::Input(format!(
                "{}: weights that do not fit model.json ({} tensors missing{})",
                path.display(),
                result.missing.len(),
                first_error.map(|e| format!(", {e}")).unwrap_or_default()
            )));
        }
        let not_finite = non_finite_parameters(&model);
        if let Some(first) = not_finite.first() {
            return Err(Error::Input(format!(
                "{}: weights that are not finite numbers ({first} and {} more): the run diverged; train again with a lower --learning-rate",
                path.display(),
                not_finite.len() - 1
            )));
        }
        Ok(model)
    }

    /// `model` (loaded from this checkpoint's last weights) and `optimizer` as they were when it
    /// was saved: the parameters get their saved ids back and the optimizer its saved state. A
    /// checkpoint without optimizer state keeps both as they are; one whose parameters do not
    /// match its recorded ids is an error.
    pub fn restore_optimizer(
        &self,
        model: Seq2Seq,
        optimizer: ModuleOptimizer,
    ) -> Result<(Seq2Seq, ModuleOptimizer)> {
        if self.state.optimizer.is_empty() {
            crate::note!("this checkpoint has no optimizer state: Adam's moments start from zero");
            return Ok((model, optimizer));
        }
        let path = self.dir.join(&self.state.optimizer);
        let bytes = self.read_recorded(&self.state.optimizer)?;
        let model = with_param_ids(model, &self.state.param_ids).map_err(|missing| {
            Error::Input(format!(
                "{}: state.json has no parameter id for {}: the files are from different runs",
                self.dir.display(),
                missing.join(", ")
            ))
        })?;
        let optimizer = optimizer
            .from_bytes(Bytes::from_bytes_vec(bytes))
            .map_err(|error| {
                Error::Input(format!(
                    "{}: damaged optimizer state ({})",
                    path.display(),
                    one_line(&error.to_string())
                ))
            })?;
        Ok((model, optimizer))
    }

    /// Saves the weights and optimizer state after an epoch and then the state that names
    /// them; older epochs' files go. When `is_best`, these weights are the best; otherwise the
    /// best so far, if they were the previous epoch's, are kept as [`BEST_WEIGHTS`].
    pub fn save(
        &mut self,
        model: &Seq2Seq,
        optimizer: &ModuleOptimizer,
        state: TrainState,
        is_best: bool,
    ) -> Result<()> {
        let name = format!("weights-epoch-{}.safetensors", state.epoch);
        let mut store = SafetensorsStore::from_bytes(None);
        let weights = model
            .valid()
            .save_into(&mut store)
            .and_then(|()| store.get_bytes())
            .map_err(|error| {
                Error::Input(format!(
                    "cannot serialise the weights: {}",
                    one_line(&error.to_string())
                ))
            })?;
        write_atomically(&self.dir.join(&name), &weights)?;
        let optimizer_name = format!("adam-epoch-{}.bpk", state.epoch);
        let adam = optimizer.into_bytes().map_err(|error| {
            Error::Input(format!("cannot serialise the optimizer state: {error}"))
        })?;
        write_atomically(&self.dir.join(&optimizer_name), &adam)?;
        let mut checksums = BTreeMap::from([
            (name.clone(), checksum(&weights)),
            (optimizer_name.clone(), checksum(&adam)),
        ]);
        for config in CONFIG_FILES {
            let path = self.dir.join(config);
            let bytes = fs::read(&path).map_err(|error| Error::read(&path, error))?;
            checksums.insert(config.to_string(), checksum(&bytes));
        }
        let best_weights = match self.state.best_weights.clone() {
            Some(best) if !is_best => {
                if best == self.state.weights {
                    self.keep_as_best(&best)?;
                }
                if let Some(&sum) = self.state.checksums.get(&best) {
                    checksums.insert(BEST_WEIGHTS.to_string(), sum);
                }
                BEST_WEIGHTS.to_string()
            }
            _ => name.clone(),
        };
        let state = TrainState {
            weights: name.clone(),
            optimizer: optimizer_name.clone(),
            best_weights: Some(best_weights.clone()),
            param_ids: param_ids(model),
            checksums,
            ..state
        };
        write_json(&self.dir.join("state.json"), &state)?;
        for entry in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let file = entry.file_name().to_string_lossy().to_string();
            let old_weights = file.starts_with("weights-") && file != name && file != best_weights;
            let old_optimizer = file.starts_with("adam-epoch-") && file != optimizer_name;
            if (old_weights || old_optimizer) && is_run_file(&file) {
                let _ = fs::remove_file(entry.path());
            }
        }
        self.state = state;
        Ok(())
    }

    /// Makes `weights` (a file this state names) also [`BEST_WEIGHTS`], atomically: a hard link
    /// (a copy where links are not possible) renamed into place.
    fn keep_as_best(&self, weights: &str) -> Result<()> {
        let best = self.dir.join(BEST_WEIGHTS);
        let temporary = self.dir.join(format!(
            "{BEST_WEIGHTS}{}.{}",
            crate::files::PARTIAL,
            std::process::id()
        ));
        let source = self.dir.join(weights);
        let _ = fs::remove_file(&temporary);
        let kept = fs::hard_link(&source, &temporary)
            .or_else(|_| fs::copy(&source, &temporary).map(|_| ()))
            .and_then(|()| fs::rename(&temporary, &best));
        kept.map_err(|error| {
            let _ = fs::remove_file(&temporary);
            Error::write(&best, error)
        })
    }
}

/// How RNN parameters saved before the decoder's attention became one module
/// ([`DecoderAttention`](attnzoo_models::seq2seq::DecoderAttention)) begin their names, and how
/// those names begin now: such checkpoints still load and resume.
const RNN_ATTENTION_RENAMES: [(&str, &str); 5] = [
    (
        "Rnn.attention.Additive.",
        "Rnn.attention.Bahdanau.Additive.",
    ),
    (
        "Rnn.attention.Luong.weight.",
        "Rnn.attention.Luong.alignment.Luong.weight.",
    ),
    (
        "Rnn.attention.Luong.score_proj.",
        "Rnn.attention.Luong.alignment.Luong.score_proj.",
    ),
    (
        "Rnn.attention.Location.",
        "Rnn.attention.Luong.alignment.Location.",
    ),
    ("Rnn.combine.", "Rnn.attention.Luong.combine."),
];

/// A parameter's name today, given the name it was saved under.
fn current_name(saved: String) -> String {
    RNN_ATTENTION_RENAMES
        .iter()
        .find_map(|(old, new)| saved.strip_prefix(old).map(|rest| format!("{new}{rest}")))
        .unwrap_or(saved)
}

/// A store reading a weights file's bytes, under today's tensor names.
fn weights_store(bytes: Vec<u8>) -> SafetensorsStore {
    RNN_ATTENTION_RENAMES.iter().fold(
        SafetensorsStore::from_bytes(Some(bytes)),
        |store, (old, new)| store.with_key_remapping(format!("^{}", old.replace('.', r"\.")), *new),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translation::batch::{batch, Example};
    use crate::translation::train_state::EpochRecord;
    use attnzoo_backends::{Backend, DeviceSpec};
    use attnzoo_models::seq2seq::RnnSeq2SeqConfig;
    use burn::optim::{AdamConfig, GradientsParams};
    use burn::tensor::Tensor;

    #[test]
    fn discarding_deletes_a_run_but_never_other_files_or_a_run_in_use() {
        let tmp = tempfile::tempdir().unwrap();
        let foreign = tmp.path().join("photos");
        fs::create_dir_all(&foreign).unwrap();
        fs::write(foreign.join("cat.jpg"), b"meow").unwrap();
        let error = Checkpoint::discard(&foreign).unwrap_err().to_string();
        assert!(
            error.contains("cat.jpg, which is not an attnzoo run's file"),
            "{error}"
        );
        assert!(foreign.join("cat.jpg").is_file());
        assert!(
            !foreign.join("lock").exists(),
            "not even a lock file is left there"
        );

        let run = tmp.path().join("run");
        drop(saved_checkpoint(&run));
        fs::write(run.join("notes.txt"), b"mine").unwrap();
        let error = Checkpoint::discard(&run).unwrap_err().to_string();
        assert!(error.contains("notes.txt"), "{error}");
        assert!(
            Checkpoint::is_trained(&run),
            "the run is kept with the notes"
        );
        fs::remove_file(run.join("notes.txt")).unwrap();
        let held = lock(&run).unwrap();
        let error = Checkpoint::discard(&run).unwrap_err().to_string();
        assert!(error.contains("in use by another training run"), "{error}");
        assert!(run.join("model.json").is_file());
        drop(held);
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&run, &link).unwrap();
        let error = Checkpoint::discard(&link).unwrap_err().to_string();
        assert!(error.contains("is a link"), "{error}");
        assert!(
            Checkpoint::is_trained(&run),
            "nothing deleted through the link"
        );
        Checkpoint::discard(&run).unwrap();
        assert!(!run.exists());
        Checkpoint::discard(&run).unwrap();
    }

    #[test]
    fn a_new_run_writes_nothing_into_a_folder_of_other_files() {
        let tmp = tempfile::tempdir().unwrap();
        let refused = |dir: &Path| {
            let vocab = Vocab::build(["a"], 1, 10);
            let config = Seq2SeqConfig::Rnn(RnnSeq2SeqConfig::new(vocab.len(), vocab.len()));
            let vocab = Vocabularies {
                source: vocab.clone(),
                target: vocab,
                copy: None,
            };
            Checkpoint::create(dir, config, TrainConfig::new(), vocab)
                .err()
                .map(|e| e.to_string())
        };
        // Another program's files, named like a run's or not, and their interrupted writes.
        for (file, why) in [
            ("notes.txt", "notes.txt, which is not"),
            ("my.partial.notes", "my.partial.notes, which is not"),
            (
                "weights-mine.safetensors",
                "weights-mine.safetensors, which is not",
            ),
            ("vocab.json", "no attnzoo model.json"),
            ("model.json", "no attnzoo model.json"),
        ] {
            let dir = tmp.path().join(file);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(file), b"{\"mine\": true}").unwrap();
            let error = refused(&dir).unwrap_or_else(|| panic!("{file} accepted"));
            assert!(error.contains(why), "{error}");
            assert_eq!(fs::read(dir.join(file)).unwrap(), b"{\"mine\": true}");
            assert_eq!(
                fs::read_dir(&dir).unwrap().count(),
                1,
                "nothing written beside {file}"
            );
        }
        // A `lock` that is a link, or a file of text, is not attnzoo's.
        let target = tmp.path().join("precious");
        fs::write(&target, b"precious data").unwrap();
        let linked = tmp.path().join("linked");
        fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink(&target, linked.join("lock")).unwrap();
        let written = tmp.path().join("written");
        fs::create_dir_all(&written).unwrap();
        fs::write(written.join("lock"), b"precious data").unwrap();
        for dir in [&linked, &written] {
            let error = refused(dir).expect("a foreign lock is refused");
            assert!(error.contains("is not a lock file of attnzoo's"), "{error}");
        }
        assert_eq!(fs::read(&target).unwrap(), b"precious data");
        assert_eq!(fs::read(written.join("lock")).unwrap(), b"precious data");
        // An empty folder, and one a run left before its first epoch (killed even while
        // writing its first file), are a new run's.
        let fresh = tmp.path().join("fresh");
        assert_eq!(refused(&fresh), None);
        fs::write(fresh.join("vocab.json.partial.12"), b"{").unwrap();
        assert_eq!(refused(&fresh), None);
        assert!(
            !fresh.join("vocab.json.partial.12").exists(),
            "its leftovers are removed"
        );
        let killed = tmp.path().join("killed");
        fs::create_dir_all(&killed).unwrap();
        fs::write(killed.join("lock"), b"12").unwrap();
        fs::write(killed.join("train.json"), b"{").unwrap();
        fs::write(killed.join("vocab.json.partial.12"), b"{").unwrap();
        assert_eq!(refused(&killed), None);
        assert!(Checkpoint::exists(&killed), "and it is whole now");
    }

    fn examples() -> Vec<Example> {
        vec![
            Example {
                source: vec![4, 5, 6],
                target: vec![7, 8],
            },
            Example {
                source: vec![9, 4],
                target: vec![5, 6, 7],
            },
        ]
    }

    /// The model's logits on the batch of [`examples`], with teacher forcing.
    fn forward(model: &Seq2Seq, device: &Device) -> Tensor<3> {
        let batch = batch(&examples(), &[0, 1], device);
        let len = batch.target_in.dims()[1];
        model
            .teacher_forced(
                batch.source,
                batch.source_padding,
                batch.target_in,
                &vec![true; len],
            )
            .unwrap()
    }

    /// One Adam step on the batch of [`examples`]; returns the updated model.
    fn adam_step(model: Seq2Seq, optimizer: &mut ModuleOptimizer, device: &Device) -> Seq2Seq {
        let loss = forward(&model, device).powi_scalar(2).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        optimizer.step(1e-2, model, grads)
    }

    /// The logits of the model's inference copy, as numbers.
    fn logits(model: &Seq2Seq, device: &Device) -> Vec<f32> {
        let logits = forward(&model.valid(), device);
        logits.into_data().try_to_vec::<f32>().unwrap()
    }

    fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    /// A new checkpoint in `dir` of a tiny RNN without dropout, and the ndarray device with its
    /// autodiff twin.
    fn tiny_checkpoint(dir: &Path) -> (Checkpoint, Device, Device) {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let train_device = device.clone().autodiff();
        let vocab = Vocab::build(["a b c d e f"], 1, 100);
        let config = Seq2SeqConfig::Rnn(
            RnnSeq2SeqConfig::new(vocab.len(), vocab.len())
                .with_embedding_dim(8)
                .with_hidden_dim(8)
                .with_dropout(0.0),
        );
        let vocab = Vocabularies {
            source: vocab.clone(),
            target: vocab,
            copy: None,
        };
        let checkpoint = Checkpoint::create(dir, config, TrainConfig::new(), vocab).unwrap();
        (checkpoint, device, train_device)
    }

    /// A state after `epochs` epochs, with their (made-up) history.
    fn after_epochs(epochs: usize) -> TrainState {
        let record = |epoch| EpochRecord {
            epoch,
            train_loss: 1.0,
            valid_loss: 1.0,
            valid_bleu: 0.0,
            seconds: epoch as f64,
        };
        TrainState {
            epoch: epochs,
            seconds: epochs as f64,
            history: (1..=epochs).map(record).collect(),
            ..TrainState::default()
        }
    }

    /// A trained tiny checkpoint in `dir`: one epoch saved.
    fn saved_checkpoint(dir: &Path) -> Checkpoint {
        let (mut checkpoint, _, train_device) = tiny_checkpoint(dir);
        let model = checkpoint.model.try_init(&train_device).unwrap();
        let optimizer = AdamConfig::new().init();
        checkpoint
            .save(&model, &optimizer, after_epochs(1), true)
            .unwrap();
        checkpoint
    }

    #[test]
    fn burns_loading_summary_becomes_one_line_naming_a_tensor() {
        let report = "Tensor not found: ┌─ Tensor Loading Summary ─────\n│\n│ ✓ Successfully \
                      applied: 92 tensors\n│  First 10 missing tensors:\n│    • Transformer.encoder.\
                      layers.2.norm1.gamma\n│    • other\n└─────";
        assert_eq!(
            one_line(report),
            "Tensor not found: Transformer.encoder.layers.2.norm1.gamma"
        );
        assert_eq!(one_line("\n  one line \n"), "one line");
    }

    #[test]
    fn an_edited_or_foreign_config_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (run, other) = (tmp.path().join("run"), tmp.path().join("other"));
        saved_checkpoint(&run);
        assert!(Checkpoint::open(&run).is_ok());
        // Another run's vocabulary, of the same sizes: only the checksum tells them apart.
        let (other_checkpoint, _, _) = tiny_checkpoint(&other);
        let mut vocab = other_checkpoint.vocab.clone();
        vocab.target = Vocab::build(["u v w x y z"], 1, 100);
        write_json(&other.join("vocab.json"), &vocab).unwrap();
        fs::copy(other.join("vocab.json"), run.join("vocab.json")).unwrap();
        let error = Checkpoint::open(&run).unwrap_err().to_string();
        assert!(
            error.contains("vocab.json is not the file state.json recorded"),
            "{error}"
        );

        let edited = tmp.path().join("edited");
        saved_checkpoint(&edited);
        let model = fs::read_to_string(edited.join("model.json")).unwrap();
        fs::write(edited.join("model.json"), model.replace("0.0", "0.5")).unwrap();
        let error = Checkpoint::open(&edited).unwrap_err().to_string();
        assert!(error.contains("model.json is not the file"), "{error}");
    }

    #[test]
    fn a_state_json_naming_files_outside_its_folder_or_impossible_numbers_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let checkpoint = saved_checkpoint(tmp.path());
        let broken = [
            TrainState {
                weights: "../../etc/passwd".into(),
                ..checkpoint.state.clone()
            },
            TrainState {
                seconds: -5.0,
                ..checkpoint.state.clone()
            },
            TrainState {
                epoch: 1_000_000,
                ..checkpoint.state.clone()
            },
        ];
        for (state, why) in broken
            .iter()
            .zip(["not a file name", "negative", "history"])
        {
            write_json(&tmp.path().join("state.json"), state).unwrap();
            let error = Checkpoint::open(tmp.path()).unwrap_err().to_string();
            assert!(error.contains(why), "{error}");
        }
    }

    #[test]
    fn resuming_continues_with_adams_saved_moments() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let (mut checkpoint, device, train_device) = tiny_checkpoint(dir);
        let adam = || AdamConfig::new().init();
        let mut model = checkpoint.model.try_init(&train_device).unwrap();
        let mut optimizer = adam();
        for _ in 0..3 {
            model = adam_step(model, &mut optimizer, &train_device);
        }
        let state = TrainState {
            step: 3,
            ..after_epochs(1)
        };
        checkpoint.save(&model, &optimizer, state, true).unwrap();

        let reopened = Checkpoint::open(dir).unwrap();
        let restore = || {
            let loaded = reopened.load_model(Weights::Last, &train_device).unwrap();
            reopened.restore_optimizer(loaded, adam()).unwrap()
        };
        let (resumed, mut resumed_optimizer) = restore();
        let uninterrupted = logits(&adam_step(model, &mut optimizer, &train_device), &device);
        let resumed = logits(
            &adam_step(resumed, &mut resumed_optimizer, &train_device),
            &device,
        );
        assert!(largest_difference(&uninterrupted, &resumed) < 1e-6);

        // Fresh moments would have taken a different step: the comparison above can fail.
        let (loaded, _) = restore();
        let restarted = logits(&adam_step(loaded, &mut adam(), &train_device), &device);
        assert!(largest_difference(&uninterrupted, &restarted) > 1e-4);
    }

    #[test]
    fn the_best_weights_stay_beside_the_last_until_a_better_epoch_comes() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut checkpoint, device, train_device) = tiny_checkpoint(tmp.path());
        assert!(
            Checkpoint::create(
                tmp.path(),
                checkpoint.model.clone(),
                TrainConfig::new(),
                checkpoint.vocab.clone()
            )
            .unwrap_err()
            .to_string()
            .contains("in use by another training run"),
            "the folder is locked while training"
        );
        let (mut model, mut optimizer) = (
            checkpoint.model.try_init(&train_device).unwrap(),
            AdamConfig::new().init(),
        );
        let mut logits_of_epoch = Vec::new();
        for (epoch, is_best) in [(1, true), (2, false), (3, false), (4, true)] {
            model = adam_step(model, &mut optimizer, &train_device);
            logits_of_epoch.push(logits(&model, &device));
            let state = TrainState {
                checksums: checkpoint.state.checksums.clone(),
                ..after_epochs(epoch)
            };
            checkpoint.save(&model, &optimizer, state, is_best).unwrap();
            let reopened = Checkpoint::open(tmp.path()).unwrap();
            let best = reopened.load_model(Weights::Best, &device).unwrap();
            let best_epoch = if epoch < 4 { 1 } else { 4 };
            let expected = &logits_of_epoch[best_epoch - 1];
            assert!(largest_difference(&logits(&best, &device), expected) < 1e-6);
            let kept = tmp.path().join(BEST_WEIGHTS).is_file();
            assert_eq!(kept, (2..4).contains(&epoch), "epoch {epoch}");
        }
    }

    #[test]
    fn rnn_checkpoints_saved_under_the_old_attention_names_still_load() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let old_names = [
            (
                AlignmentScore::Additive,
                "Rnn.attention.Additive.query_proj.weight",
            ),
            (AlignmentScore::General, "Rnn.combine.weight"),
        ];
        for (score, old_name) in old_names {
            let config = Seq2SeqConfig::Rnn(
                RnnSeq2SeqConfig::new(12, 12)
                    .with_embedding_dim(8)
                    .with_hidden_dim(8)
                    .with_attention(Some(score)),
            );
            let model = config.try_init(&device).unwrap();
            let mut old_layout = SafetensorsStore::from_bytes(None)
                .with_key_remapping(r"^Rnn\.attention\.Bahdanau\.", "Rnn.attention.")
                .with_key_remapping(r"^Rnn\.attention\.Luong\.alignment\.", "Rnn.attention.")
                .with_key_remapping(r"^Rnn\.attention\.Luong\.combine\.", "Rnn.combine.");
            model.save_into(&mut old_layout).unwrap();
            let bytes = old_layout.get_bytes().unwrap();
            let holds = |name: &str| bytes.windows(name.len()).any(|w| w == name.as_bytes());
            assert!(holds(old_name) && !holds("Luong.alignment") && !holds("Bahdanau"));
            let mut loaded = config.try_init(&device).unwrap();
            let result = loaded.load_from(&mut weights_store(bytes)).unwrap();
            assert!(result.missing.is_empty(), "{score:?}: {:?}", result.missing);
            let difference =
                largest_difference(&logits(&model, &device), &logits(&loaded, &device));
            assert_eq!(difference, 0.0, "{score:?}");
        }
        // state.json's parameter ids, keyed by name, are renamed the same way.
        let renamed = current_name("Rnn.combine.weight".into());
        assert_eq!(renamed, "Rnn.attention.Luong.combine.weight");
        assert_eq!(current_name(renamed.clone()), renamed, "today's names stay");
    }
}
