//! A checkpoint folder as a user may download it: each of `model.json`, `train.json`,
//! `vocab.json`, `state.json`, the weights (safetensors) and Adam's state kept, missing,
//! replaced, cut, changed in a byte, or — structure-aware — valid JSON with fields changed
//! (a safetensors header's dtypes, shapes and offsets among them), with `state.json`'s checksums
//! recorded anew or not. `Translator::load` (translate, serve) and what `train --resume` reads
//! before training (`Checkpoint::resume`, the last weights, Adam's state) must answer Ok or an
//! error of one line, never panic.
#![no_main]

use std::fs;

use arbitrary::Arbitrary;
use attnzoo::translation::{Checkpoint, ModelKind, Translator, Weights};
use attnzoo_fuzz::{device, fresh_dir, rechecksum, tiny_run, FileEdit};
use burn::optim::AdamConfig;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    rnn: bool,
    edits: Vec<FileEdit>,
    rechecksum: bool,
}

fuzz_target!(|input: Input| {
    let run = tiny_run(if input.rnn {
        ModelKind::Rnn
    } else {
        ModelKind::Transformer
    });
    let mut names: Vec<String> = fs::read_dir(run)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "lock" && name != "state.json")
        .collect();
    names.sort();
    names.push("state.json".into());
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let bytes = fs::read(run.join(name)).unwrap();
        let edit = input.edits.get(i).unwrap_or(&FileEdit::Keep);
        if let Some(mut bytes) = edit.apply(&bytes, name.ends_with(".safetensors")) {
            if name == "state.json" && input.rechecksum {
                bytes = rechecksum(&bytes, &files);
            }
            files.push((name.clone(), bytes));
        }
    }
    let dir = fresh_dir("checkpoint");
    for (name, bytes) in &files {
        fs::write(dir.join(name), bytes).unwrap();
    }
    let one_line = |error: attnzoo::Error| {
        let message = error.to_string();
        assert!(!message.contains('\n'), "not one line: {message}");
    };
    if let Err(error) = Translator::load(&dir, device()) {
        one_line(error);
    }
    // `train --resume`: the run opened locked, its last weights, Adam's moments restored —
    // everything it reads before the first step. On the plain device, not the autodiff one
    // training uses: the readers are the same, and Burn's autodiff keeps about 160 KB of every
    // model loaded on it and dropped unused (once per `train` process; here, once an input).
    let resumed = Checkpoint::resume(&dir).and_then(|checkpoint| {
        let train_device = device();
        if checkpoint.state.weights.is_empty() {
            return Ok(());
        }
        let model = checkpoint.load_model(Weights::Last, train_device)?;
        checkpoint
            .restore_optimizer(model, AdamConfig::new().init())
            .map(drop)
    });
    if let Err(error) = resumed {
        one_line(error);
    }
});
