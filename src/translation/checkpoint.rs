//! A training run's folder: `model.json` (the model config), `train.json` (the training config),
//! `vocab.json` (both vocabularies), `weights-epoch-N.safetensors`, and `state.json`, which
//! names the current weights. Every file is written through a rename, and `state.json` last, so
//! an interrupted save leaves the previous checkpoint intact.

use std::fs;
use std::path::{Path, PathBuf};

use attnzoo_models::seq2seq::{Seq2Seq, Seq2SeqConfig};
use burn::module::Module;
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use super::corpus::write_atomically;
use super::train::TrainConfig;
use super::vocab::Vocab;
use crate::CliError;

/// Source and target vocabularies.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Vocabularies {
    /// German.
    pub source: Vocab,
    /// English.
    pub target: Vocab,
}

/// One epoch's numbers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EpochRecord {
    /// 1-based.
    pub epoch: usize,
    /// Mean training loss per target token.
    pub train_loss: f64,
    /// Mean validation loss per target token.
    pub valid_loss: f64,
    /// Greedy BLEU on the validation split.
    pub valid_bleu: f64,
    /// Training time so far.
    pub seconds: f64,
}

/// Where training stands.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TrainState {
    /// Epochs completed.
    pub epoch: usize,
    /// Optimizer steps taken.
    pub step: usize,
    /// Training time so far.
    pub seconds: f64,
    /// The weights file of this state.
    pub weights: String,
    /// Every completed epoch.
    pub history: Vec<EpochRecord>,
}

/// Everything in a checkpoint folder but the weights.
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
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, CliError> {
    let text = fs::read_to_string(path).map_err(|error| {
        CliError::Input(format!(
            "not a checkpoint: cannot read {}: {error}",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|error| {
        CliError::Input(format!(
            "damaged checkpoint file {}: {error}",
            path.display()
        ))
    })
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value).expect("checkpoint values serialise");
    write_atomically(path, text.as_bytes())
}

fn model_sizes(config: &Seq2SeqConfig) -> (usize, usize) {
    match config {
        Seq2SeqConfig::Rnn(c) => (c.source_vocab, c.target_vocab),
        Seq2SeqConfig::Transformer(c) => (c.source_vocab, c.target_vocab),
    }
}

impl Checkpoint {
    /// Starts a new run in `dir` (created if needed), writing its configs and vocabularies.
    pub fn create(
        dir: &Path,
        model: Seq2SeqConfig,
        train: TrainConfig,
        vocab: Vocabularies,
    ) -> Result<Self, CliError> {
        fs::create_dir_all(dir).map_err(|error| {
            CliError::Input(format!("cannot create {}: {error}", dir.display()))
        })?;
        write_json(&dir.join("model.json"), &model)?;
        write_json(&dir.join("train.json"), &train)?;
        write_json(&dir.join("vocab.json"), &vocab)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            model,
            train,
            vocab,
            state: TrainState::default(),
        })
    }

    /// Reads a checkpoint folder, checking that its parts belong together.
    pub fn open(dir: &Path) -> Result<Self, CliError> {
        if !dir.join("state.json").is_file() {
            return Err(CliError::Input(format!(
                "{} is not a trained checkpoint (no state.json): train one with `attnzoo train --out {}`",
                dir.display(),
                dir.display()
            )));
        }
        let model: Seq2SeqConfig = read_json(&dir.join("model.json"))?;
        let train: TrainConfig = read_json(&dir.join("train.json"))?;
        let vocab: Vocabularies = read_json(&dir.join("vocab.json"))?;
        let vocab = Vocabularies {
            source: vocab.source.reindexed(),
            target: vocab.target.reindexed(),
        };
        let state: TrainState = read_json(&dir.join("state.json"))?;
        let (source, target) = model_sizes(&model);
        if !vocab.source.has_specials() || !vocab.target.has_specials() {
            return Err(CliError::Input(format!(
                "{}: vocab.json lacks <pad> <bos> <eos> <unk> at ids 0–3",
                dir.display()
            )));
        }
        if (source, target) != (vocab.source.len(), vocab.target.len()) {
            return Err(CliError::Input(format!(
                "{}: the model expects vocabularies of {source}/{target} tokens but vocab.json has {}/{}: the files are from different runs",
                dir.display(),
                vocab.source.len(),
                vocab.target.len()
            )));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            model,
            train,
            vocab,
            state,
        })
    }

    /// The model with this checkpoint's weights, on `device`.
    pub fn load_model(&self, device: &Device) -> Result<Seq2Seq, CliError> {
        let mut model = self.model.try_init(device)?;
        let path = self.dir.join(&self.state.weights);
        let mut store = SafetensorsStore::from_file(&path);
        let result = model.load_from(&mut store).map_err(|error| {
            CliError::Input(format!(
                "damaged or foreign weights {}: {error}",
                path.display()
            ))
        })?;
        if !result.missing.is_empty() || !result.errors.is_empty() {
            return Err(CliError::Input(format!(
                "{} does not fit model.json: {} missing, errors: {:?}",
                path.display(),
                result.missing.len(),
                result
                    .errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
            )));
        }
        Ok(model)
    }

    /// Saves the weights after an epoch and then the state that names them; older weights go.
    pub fn save(&mut self, model: &Seq2Seq, state: TrainState) -> Result<(), CliError> {
        let name = format!("weights-epoch-{}.safetensors", state.epoch);
        let path = self.dir.join(&name);
        let temporary = self
            .dir
            .join(format!("{name}.partial.{}", std::process::id()));
        let mut store = SafetensorsStore::from_file(&temporary);
        model.valid().save_into(&mut store).map_err(|error| {
            CliError::Input(format!("cannot write {}: {error}", temporary.display()))
        })?;
        fs::rename(&temporary, &path).map_err(|error| {
            CliError::Input(format!("cannot write {}: {error}", path.display()))
        })?;
        let state = TrainState {
            weights: name.clone(),
            ..state
        };
        write_json(&self.dir.join("state.json"), &state)?;
        for entry in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let file = entry.file_name().to_string_lossy().to_string();
            if file.starts_with("weights-epoch-") && file != name {
                let _ = fs::remove_file(entry.path());
            }
        }
        self.state = state;
        Ok(())
    }
}
