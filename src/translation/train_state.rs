//! Where a training run stands: [`TrainState`], written to the run folder's `state.json` after
//! every epoch, with each epoch's numbers ([`EpochRecord`]), the files holding the last and the
//! best weights and Adam's state, and their checksums.
//!
//! Adam's state is keyed by parameter id, and safetensors keep no ids: a resumed model gets
//! fresh ones. The state therefore records each parameter's id by its path in the model
//! ([`param_ids`]), and resuming gives the loaded parameters their old ids back
//! ([`with_param_ids`]) before the optimizer state is read.

use std::collections::BTreeMap;
use std::path::Path;

use attnzoo_models::seq2seq::Seq2Seq;
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::validate;

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
    /// The weights file of the best validation BLEU (none: no best recorded; use the last).
    #[serde(default)]
    pub best_weights: Option<String>,
    /// Each parameter's id (which keys the optimizer state) by its path in the model.
    #[serde(default)]
    pub param_ids: BTreeMap<String, u64>,
    /// FNV-1a checksums of the files this state names, so a file from elsewhere is noticed.
    #[serde(default)]
    pub checksums: BTreeMap<String, u64>,
    /// Every completed epoch.
    pub history: Vec<EpochRecord>,
}

impl TrainState {
    /// Checks what `state.json` holds: times finite and not negative, the epoch that of its
    /// history, and the files it names plain names inside the folder.
    pub fn check(&self) -> Result<(), String> {
        validate::field("seconds", self.seconds, validate::finite)?;
        if self.seconds < 0.0 {
            return Err(format!(
                "seconds: {} is negative",
                validate::show(self.seconds)
            ));
        }
        if self.epoch != self.history.len() {
            return Err(format!(
                "epoch: {} but the history holds {} epochs",
                self.epoch,
                self.history.len()
            ));
        }
        let names = [&self.weights, &self.optimizer]
            .into_iter()
            .chain(&self.best_weights)
            .chain(self.checksums.keys());
        for name in names {
            let plain = Path::new(name)
                .file_name()
                .is_some_and(|file| file == name.as_str());
            if !name.is_empty() && !plain {
                return Err(format!(
                    "{name:?} is not a file name in the checkpoint's folder"
                ));
            }
        }
        Ok(())
    }
}

/// Each float parameter's id by its path in `model` (`encoder.layers.0.self_attn.query.weight`).
pub fn param_ids(model: &Seq2Seq) -> BTreeMap<String, u64> {
    let mut paths = ParamPaths::default();
    model.visit(&mut paths);
    paths.ids
}

/// `model` with the ids `ids` recorded for its parameters; `Err` lists the paths `ids` lacks.
pub fn with_param_ids(model: Seq2Seq, ids: &BTreeMap<String, u64>) -> Result<Seq2Seq, Vec<String>> {
    let mut paths = ParamPaths {
        ids: ids.clone(),
        ..ParamPaths::default()
    };
    let model = model.map(&mut paths);
    match paths.missing.is_empty() {
        true => Ok(model),
        false => Err(paths.missing),
    }
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
