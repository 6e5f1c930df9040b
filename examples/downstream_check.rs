//! attnzoo as a dependency: the same program built two ways. As this workspace's example (with the
//! workspace's vendored `[patch]`es) it writes reference results; as the crate in
//! `examples/downstream/` (its own Cargo.toml and lock, the attnzoo crates by path, no patches:
//! what a crates.io user gets) it computes them again and compares.
//!
//! ```text
//! cargo run --example downstream_check -- --write DIR [--backends ndarray,flex]
//! cargo run --manifest-path examples/downstream/Cargo.toml -- --compare DIR [--backends ndarray,flex]
//! ```
//!
//! `--write` also trains a tiny translator (ndarray, an invented corpus, 5 epochs) into
//! `DIR/model`; both runs translate with it. Per backend: grouped-query multi-head attention with
//! a padding mask, a two-layer Transformer encoder, all-MiniLM-L6-v2 embeddings (needs
//! `scripts/fetch-minilm.sh`) and greedy translations. Exit status 1 when a value differs by more
//! than `1e-4 + 1e-3·|reference|` or a translation differs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use attnzoo::sentence_embedding::{default_model_dir, SentenceEmbedder};
use attnzoo::translation::{self, DecodeConfig, ModelKind, TrainConfig, TrainSpec, Translator};
use attnzoo_backends::{Backend, DeviceSpec};
use attnzoo_models::attention::{MultiHeadConfig, MultiHeadInput};
use attnzoo_models::transformer::{EncoderConfig, LayerConfig};
use burn::tensor::{Bool, Device, Tensor, TensorData};

type Error = Box<dyn std::error::Error>;
type Results = BTreeMap<String, serde_json::Value>;

const SENTENCES_DE: [&str; 3] = [
    "der hund sieht heute.",
    "die katze isst oft.",
    "ich singe hier.",
];
const SENTENCES_EN: [&str; 3] = [
    "Attention is all you need.",
    "A man is playing a guitar.",
    "The weather is lovely today.",
];

fn main() {
    if let Err(error) = run() {
        eprintln!("downstream_check: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let backends: Vec<Backend> = value("--backends")
        .unwrap_or("ndarray,flex".into())
        .split(',')
        .map(|name| Backend::from_name(name).ok_or(format!("unknown backend {name}")))
        .collect::<Result<_, _>>()?;
    let (dir, write) = match (value("--write"), value("--compare")) {
        (Some(dir), None) => (PathBuf::from(dir), true),
        (None, Some(dir)) => (PathBuf::from(dir), false),
        _ => return Err("give --write DIR or --compare DIR".into()),
    };
    let model_dir = dir.join("model");
    if write && !translation::Checkpoint::is_trained(&model_dir) {
        train_tiny_translator(&dir)?;
    }
    let mut failures = 0;
    for backend in backends {
        let device = backend.open(DeviceSpec::Default)?;
        let results = compute(&device, &model_dir)?;
        let file = dir.join(format!("{backend}.json"));
        if write {
            std::fs::write(&file, serde_json::to_string(&results)?)?;
            println!("{backend}: reference written to {}", file.display());
        } else {
            let reference: Results = serde_json::from_str(&std::fs::read_to_string(&file)?)?;
            failures += compare(backend, &results, &reference);
        }
    }
    match failures {
        0 => Ok(()),
        n => Err(format!("{n} results differ from the workspace's").into()),
    }
}

/// Deterministic inputs: `[batch, len, width]` of smooth values in [-1, 1].
fn input(device: &Device, [b, t, d]: [usize; 3]) -> Tensor<3> {
    let values: Vec<f32> = (0..b * t * d).map(|i| ((i as f32) * 0.37).sin()).collect();
    Tensor::from_data(TensorData::new(values, [b, t, d]), device)
}

/// The second of two sentences of 7 positions is 4 long.
fn padding(device: &Device) -> Tensor<2, Bool> {
    let rows = [[false; 7], [false, false, false, false, true, true, true]];
    Tensor::from_data(TensorData::from(rows), device)
}

fn floats<const D: usize>(tensor: Tensor<D>) -> Result<serde_json::Value, Error> {
    let values: Vec<f32> = tensor
        .into_data()
        .try_to_vec()
        .map_err(|e| format!("{e:?}"))?;
    Ok(serde_json::json!(values))
}

fn compute(device: &Device, model_dir: &Path) -> Result<Results, Error> {
    let mut results = Results::new();
    // Weights from the device's seeded generator: the same on each build of one backend.
    device.seed(7);
    let mha = MultiHeadConfig::new(64, 8)
        .with_n_kv_heads(Some(2))
        .try_init(device)?;
    let out = mha.forward(
        MultiHeadInput::self_attn(input(device, [2, 7, 64]))
            .padding(padding(device))
            .with_weights(),
    )?;
    results.insert("mha_gqa_padded.context".into(), floats(out.context)?);
    results.insert(
        "mha_gqa_padded.weights".into(),
        floats(out.weights.ok_or("no weights")?)?,
    );

    device.seed(11);
    let layer = LayerConfig::new(64, 4, 128).with_dropout(0.0);
    let encoder = EncoderConfig::new(layer, 2).try_init(device)?;
    // Only the real tokens: outputs at padded positions carry no meaning.
    let encoded = encoder.forward(input(device, [2, 7, 64]), Some(padding(device)))?;
    results.insert(
        "encoder.first_sentence".into(),
        floats(encoded.clone().narrow(0, 0, 1))?,
    );
    results.insert(
        "encoder.second_sentence_tokens".into(),
        floats(encoded.narrow(0, 1, 1).narrow(1, 0, 4))?,
    );

    let embedder = SentenceEmbedder::load(&default_model_dir(), device)?;
    let sentences: Vec<String> = SENTENCES_EN.iter().map(|s| s.to_string()).collect();
    let started = Instant::now();
    let vectors = embedder.embed(&sentences, 8)?;
    let seconds = started.elapsed().as_secs_f64();
    results.insert("minilm".into(), serde_json::json!(vectors));

    let translator = Translator::load(model_dir, device)?;
    let english = translator.translate(&SENTENCES_DE, &DecodeConfig::default())?;
    println!(
        "{device:?}: MiniLM embedded {} sentences in {seconds:.3} s; {english:?}",
        sentences.len()
    );
    results.insert("translations".into(), serde_json::json!(english));
    Ok(results)
}

fn compare(backend: Backend, results: &Results, reference: &Results) -> usize {
    let mut failures = 0;
    for (name, expected) in reference {
        let Some(got) = results.get(name) else {
            println!("{backend} {name}: missing");
            failures += 1;
            continue;
        };
        let (mut got_all, mut expected_all) = (Vec::new(), Vec::new());
        flatten(got, &mut got_all);
        flatten(expected, &mut expected_all);
        if got_all.len() != expected_all.len() {
            println!(
                "{backend} {name}: {} values, expected {}",
                got_all.len(),
                expected_all.len()
            );
            failures += 1;
            continue;
        }
        let mut largest = 0.0f64;
        let mut ok = true;
        for (g, e) in got_all.iter().zip(&expected_all) {
            match (g, e) {
                (Leaf::Number(g), Leaf::Number(e)) => {
                    largest = largest.max((g - e).abs());
                    ok &= (g - e).abs() <= 1e-4 + 1e-3 * e.abs();
                }
                (g, e) => ok &= g == e,
            }
        }
        let verdict = if ok { "ok" } else { "DIFFERS" };
        println!("{backend} {name}: {verdict} (largest difference {largest:.2e})");
        if !ok {
            failures += 1;
            if let (Some(g), Some(e)) = (got.as_array(), expected.as_array()) {
                if name == "translations" {
                    println!("  got {g:?}\n  expected {e:?}");
                }
            }
        }
    }
    failures
}

#[derive(PartialEq)]
enum Leaf {
    Number(f64),
    Other(String),
}

fn flatten(value: &serde_json::Value, out: &mut Vec<Leaf>) {
    match value {
        serde_json::Value::Array(items) => items.iter().for_each(|item| flatten(item, out)),
        serde_json::Value::Number(n) => out.push(Leaf::Number(n.as_f64().unwrap_or(f64::NAN))),
        other => out.push(Leaf::Other(other.to_string())),
    }
}

/// An invented corpus (every subject × verb × adverb) and a small Transformer trained on it for
/// five epochs on ndarray, into `dir/model`.
fn train_tiny_translator(dir: &Path) -> Result<(), Error> {
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus)?;
    let subjects = [
        ("der hund", "the dog"),
        ("die katze", "the cat"),
        ("ich", "i"),
    ];
    let verbs = [
        ("sieht", "sees"),
        ("isst", "eats"),
        ("singt", "sings"),
        ("singe", "sing"),
    ];
    let adverbs = [("heute", "today"), ("hier", "here"), ("oft", "often")];
    let mut splits = [String::new(), String::new(), String::new()];
    let mut n = 0;
    for (de_s, en_s) in subjects {
        for (de_v, en_v) in verbs {
            for (de_a, en_a) in adverbs {
                let split = if n % 5 == 0 {
                    2
                } else {
                    usize::from(n % 7 == 0)
                };
                splits[split].push_str(&format!("{de_s} {de_v} {de_a}.\t{en_s} {en_v} {en_a}.\n"));
                n += 1;
            }
        }
    }
    for (name, text) in ["train.tsv", "valid.tsv", "test.tsv"].iter().zip(splits) {
        std::fs::write(corpus.join(name), text)?;
    }
    let spec = TrainSpec {
        model: ModelKind::Transformer,
        hidden: 32,
        layers: 1,
        dropout: 0.0,
        config: TrainConfig::new()
            .with_epochs(5)
            .with_batch_size(8)
            .with_learning_rate(0.01)
            .with_warmup_steps(5)
            .with_bpe_vocab(0)
            .with_min_count(1),
        corpus: Some(corpus),
        ..TrainSpec::default()
    };
    let device = Backend::Ndarray.open(DeviceSpec::Cpu)?;
    translation::train(&spec, &dir.join("model"), None, &device)?;
    Ok(())
}
