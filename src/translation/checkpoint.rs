//! A training run's folder: `model.json` (the model config), `train.json` (the training config),
//! `vocab.json` (both vocabularies), `weights-epoch-N.safetensors`, `adam-epoch-N.bpk` (Adam's
//! moment estimates, burnpack), and `state.json`, which names the current weights and optimizer
//! state. Every file is written through a rename, and `state.json` last, so an interrupted save
//! leaves the previous checkpoint intact.
//!
//! Adam's state is keyed by parameter id, and safetensors keep no ids: a resumed model gets
//! fresh ones. `state.json` therefore records each parameter's id by its path in the model, and
//! resuming gives the loaded parameters their old ids back before the optimizer state is read.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use attnzoo_models::seq2seq::{Seq2Seq, Seq2SeqConfig};
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::ModuleOptimizer;
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::{Bytes, Device, Tensor};
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
    /// The optimizer-state file of this state (empty: none saved).
    #[serde(default)]
    pub optimizer: String,
    /// Each parameter's id (which keys the optimizer state) by its path in the model.
    #[serde(default)]
    pub param_ids: BTreeMap<String, u64>,
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

/// Walks a model's float parameters, tracking their paths.
#[derive(Default)]
struct ParamPaths {
    path: Vec<String>,
    ids: BTreeMap<String, u64>,
    missing: Vec<String>,
}

impl ModuleVisitor for ParamPaths {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.ids.insert(self.path.join("."), param.id.val());
    }
}

impl ModuleMapper for ParamPaths {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let path = self.path.join(".");
        let Some(&id) = self.ids.get(&path) else {
            self.missing.push(path);
            return param;
        };
        let (_, value, mapper) = param.consume();
        Param::from_mapped_value(ParamId::from(id), value, mapper)
    }
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
        let damaged = |error: String| {
            CliError::Input(format!("{}: damaged vocab.json: {error}", dir.display()))
        };
        let vocab = Vocabularies {
            source: vocab.source.reindexed().map_err(damaged)?,
            target: vocab.target.reindexed().map_err(damaged)?,
        };
        let state: TrainState = read_json(&dir.join("state.json"))?;
        let (source, target) = model_sizes(&model);
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

    /// `model` (loaded from this checkpoint) and `optimizer` as they were when it was saved:
    /// the parameters get their saved ids back and the optimizer its saved state. A checkpoint
    /// without optimizer state keeps both as they are; one whose parameters do not match its
    /// recorded ids is an error.
    pub fn restore_optimizer(
        &self,
        model: Seq2Seq,
        optimizer: ModuleOptimizer,
    ) -> Result<(Seq2Seq, ModuleOptimizer), CliError> {
        if self.state.optimizer.is_empty() {
            eprintln!("this checkpoint has no optimizer state: Adam's moments start from zero");
            return Ok((model, optimizer));
        }
        let path = self.dir.join(&self.state.optimizer);
        let bytes = fs::read(&path)
            .map_err(|error| CliError::Input(format!("cannot read {}: {error}", path.display())))?;
        let mut paths = ParamPaths {
            ids: self.state.param_ids.clone(),
            ..ParamPaths::default()
        };
        let model = model.map(&mut paths);
        if !paths.missing.is_empty() {
            return Err(CliError::Input(format!(
                "{}: state.json has no parameter id for {}: the files are from different runs",
                self.dir.display(),
                paths.missing.join(", ")
            )));
        }
        let optimizer = optimizer
            .from_bytes(Bytes::from_bytes_vec(bytes))
            .map_err(|error| {
                CliError::Input(format!(
                    "damaged optimizer state {}: {error}",
                    path.display()
                ))
            })?;
        Ok((model, optimizer))
    }

    /// Saves the weights and optimizer state after an epoch and then the state that names them;
    /// older ones go.
    pub fn save(
        &mut self,
        model: &Seq2Seq,
        optimizer: &ModuleOptimizer,
        state: TrainState,
    ) -> Result<(), CliError> {
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
        let optimizer_name = format!("adam-epoch-{}.bpk", state.epoch);
        let bytes = optimizer.into_bytes().map_err(|error| {
            CliError::Input(format!("cannot serialise the optimizer state: {error}"))
        })?;
        write_atomically(&self.dir.join(&optimizer_name), &bytes)?;
        let mut paths = ParamPaths::default();
        model.visit(&mut paths);
        let state = TrainState {
            weights: name.clone(),
            optimizer: optimizer_name.clone(),
            param_ids: paths.ids,
            ..state
        };
        write_json(&self.dir.join("state.json"), &state)?;
        for entry in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let file = entry.file_name().to_string_lossy().to_string();
            let old_weights = file.starts_with("weights-epoch-") && file != name;
            let old_optimizer = file.starts_with("adam-epoch-") && file != optimizer_name;
            if old_weights || old_optimizer {
                let _ = fs::remove_file(entry.path());
            }
        }
        self.state = state;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translation::batch::{batch, Example};
    use attnzoo_backends::{Backend, DeviceSpec};
    use attnzoo_models::seq2seq::RnnSeq2SeqConfig;
    use burn::optim::{AdamConfig, GradientsParams};

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

    #[test]
    fn resuming_continues_with_adams_saved_moments() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let train_device = device.clone().autodiff();
        let vocab = Vocab::build(["a b c d e f"], 1, 100);
        let config = Seq2SeqConfig::Rnn(
            RnnSeq2SeqConfig::new(vocab.len(), vocab.len())
                .with_embedding_dim(8)
                .with_hidden_dim(8)
                .with_dropout(0.0),
        );
        let adam = || AdamConfig::new().init();
        let mut model = config.try_init(&train_device).unwrap();
        let mut optimizer = adam();
        for _ in 0..3 {
            model = adam_step(model, &mut optimizer, &train_device);
        }
        let dir = std::env::temp_dir().join(format!("attnzoo-adam-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let vocab = Vocabularies {
            source: vocab.clone(),
            target: vocab,
        };
        let mut checkpoint = Checkpoint::create(&dir, config, TrainConfig::new(), vocab).unwrap();
        let state = TrainState {
            epoch: 1,
            step: 3,
            ..TrainState::default()
        };
        checkpoint.save(&model, &optimizer, state).unwrap();

        let reopened = Checkpoint::open(&dir).unwrap();
        let restore = || {
            let loaded = reopened.load_model(&train_device).unwrap();
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
        fs::remove_dir_all(&dir).unwrap();
    }
}
