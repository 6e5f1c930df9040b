//! Hugging Face safetensors files into a module, for BERT and the decoder LMs: checkpoint names
//! mapped onto the module's fields by regex rules applied in order, PyTorch's `Linear` layout
//! converted, floats cast to the device's float type, tensor by tensor from the mapped file.
//!
//! A load may run in passes, each restricted to some of the module's paths (a decoder LM loads one
//! layer at a time: the file's mapping is dropped after each pass, so the pages read stay resident
//! for one layer, not for the whole file). At the end every parameter must have been found with its
//! shape and be finite, and no tensor may be left over under the module's own prefix (a file of
//! more layers than the config's).

use std::collections::BTreeSet;
use std::path::Path;

use burn::module::Module;
use burn::store::{
    FloatCastAdapter, ModuleAdapter, ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore,
};
use burn::tensor::DType;

use crate::error::ensure;
use crate::finite::non_finite_parameters;
use crate::AttnError;

/// What the passes of one load found.
pub(crate) struct HfLoad<'a> {
    names: Vec<(&'a str, &'a str)>,
    float: DType,
    applied: BTreeSet<String>,
    missing: BTreeSet<String>,
    unused: BTreeSet<String>,
    /// Checkpoint tensors read outside the applier (split on load).
    consumed: BTreeSet<String>,
    problems: Vec<String>,
}

impl<'a> HfLoad<'a> {
    /// A load with these name rules (checkpoint regex → module path), casting to `float`.
    pub(crate) fn new(
        names: impl IntoIterator<Item = &'a (&'a str, &'a str)>,
        float: DType,
    ) -> Self {
        HfLoad {
            names: names.into_iter().copied().collect(),
            float,
            applied: BTreeSet::new(),
            missing: BTreeSet::new(),
            unused: BTreeSet::new(),
            consumed: BTreeSet::new(),
            problems: Vec::new(),
        }
    }

    /// `file`, read for the module paths that `paths` (a regex) matches, or all of them.
    pub(crate) fn store(&self, file: &Path, paths: Option<&str>) -> SafetensorsStore {
        let store = self.names.iter().fold(
            SafetensorsStore::from_file(file)
                .with_from_adapter(PyTorchToBurnAdapter.chain(FloatCastAdapter::to(self.float)))
                .allow_partial(true)
                .validate(false)
                .skip_enum_variants(true),
            |store, (from, to)| store.with_key_remapping(from, *to),
        );
        match paths {
            Some(paths) => store.with_regex(paths),
            None => store,
        }
    }

    /// Applies `store` (opened on `file`) to `module`, recording what it set, missed and left
    /// unused.
    pub(crate) fn apply<M: ModuleSnapshot>(
        &mut self,
        module: &mut M,
        store: &mut SafetensorsStore,
        file: &Path,
    ) -> Result<(), AttnError> {
        let result = module
            .load_from(store)
            .map_err(|error| AttnError::new(format!("cannot load {}: {error}", file.display())))?;
        self.applied.extend(result.applied);
        self.missing
            .extend(result.missing.into_iter().map(|(name, _)| name));
        self.unused.extend(result.unused);
        self.problems.extend(
            result
                .errors
                .iter()
                .map(|error| format!("{}: {error}", file.display())),
        );
        Ok(())
    }

    /// Records parameters set outside [`apply`](Self::apply) (tensors split on load), and the
    /// checkpoint tensors they were read from.
    pub(crate) fn set_elsewhere(&mut self, read: Vec<String>, filled: Vec<String>) {
        self.applied.extend(filled);
        self.consumed.extend(read);
    }

    /// The load's verdict on `module`: every parameter found, none left over under `owned`
    /// (a module path prefix), all finite. `what` names the files in an error.
    pub(crate) fn finish<M: Module>(
        self,
        module: &M,
        owned: &str,
        what: &str,
    ) -> Result<(), AttnError> {
        let mut problems: Vec<String> = self
            .missing
            .iter()
            .filter(|name| !self.applied.contains(*name))
            .map(|name| format!("missing weight {name}"))
            .collect();
        problems.extend(self.problems);
        problems.extend(
            self.unused
                .iter()
                .filter(|name| name.starts_with(owned) && !self.consumed.contains(*name))
                .take(1)
                .map(|name| format!("weight {name} has no place in the config")),
        );
        ensure!(problems.is_empty(), "{what}: {}", problems.join("; "));
        let not_finite = non_finite_parameters(module);
        ensure!(
            not_finite.is_empty(),
            "{what}: weights that are not finite numbers ({})",
            not_finite.join(", ")
        );
        Ok(())
    }
}
