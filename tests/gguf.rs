//! The tokenizers `attnzoo::gguf_tokenizer` builds from two real GGUF files against the ones
//! transformers 5.23 builds from them (`AutoTokenizer.from_pretrained(dir, gguf_file=name)`): the
//! same ids and the same decoded text for every text in
//! `tests/fixtures/gguf/tokenizer_reference.json` (`scripts/gen_gguf_tokenizer_reference.py`).
//!
//! SmolLM2-135M-Instruct (a `gpt2` byte-level vocabulary on a `llama` architecture) and
//! gemma-3-270m (a `llama` SentencePiece vocabulary on `gemma3`) are fetched by
//! `scripts/fetch-gguf.sh` into `$ATTNZOO_GGUF_DIR` or `~/.cache/attnzoo/gguf`. A missing file
//! is skipped with a note, or a failure with `ATTNZOO_REQUIRE_GGUF=1`.

use std::path::{Path, PathBuf};

use attnzoo::gguf_tokenizer::{tokenizer, GgufVocab};
use attnzoo_models::gguf::GgufFile;
use serde_json::Value;

fn gguf_dir() -> PathBuf {
    std::env::var_os("ATTNZOO_GGUF_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| attnzoo::home_cache().join("gguf"))
}

fn reference() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf/tokenizer_reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The file's path, or `None` (after a note) when it is missing and not required.
fn real_file(name: &str) -> Option<PathBuf> {
    let path = gguf_dir().join(name);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var("ATTNZOO_REQUIRE_GGUF").as_deref() == Ok("1") {
        panic!("ATTNZOO_REQUIRE_GGUF=1 but {} is missing", path.display());
    }
    eprintln!("skipped: {name} not found (scripts/fetch-gguf.sh)");
    None
}

/// Every text of one file of the reference: ids and decoded text equal.
fn matches_transformers(name: &str) {
    let reference = reference();
    let expected = reference["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|file| file["file"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the reference"));
    let Some(path) = real_file(name) else {
        return;
    };
    let file = GgufFile::open(&path).unwrap();
    let vocab = GgufVocab::from_gguf(&file).unwrap();
    let tokenizer = tokenizer(&vocab).unwrap();
    assert_eq!(
        tokenizer.get_vocab_size(true) as u64,
        expected["len"].as_u64().unwrap(),
        "{name}: vocabulary size with added tokens"
    );
    let mut failures = Vec::new();
    let cases = expected["cases"].as_array().unwrap();
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        let got = tokenizer.encode(text, true).unwrap().get_ids().to_vec();
        if got != ids {
            failures.push(format!("{text:?}: ids {got:?}, transformers {ids:?}"));
            continue;
        }
        let decoded = tokenizer.decode(&ids, false).unwrap();
        if decoded != case["decoded"].as_str().unwrap() {
            failures.push(format!(
                "{text:?}: decoded {decoded:?}, transformers {}",
                case["decoded"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{name}: {} of {} texts differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn smollm2_byte_level_bpe_matches_transformers() {
    matches_transformers("SmolLM2-135M-Instruct.Q4_1.gguf");
}

#[test]
fn gemma3_sentencepiece_matches_transformers() {
    matches_transformers("gemma-3-270m-q4_k_m.gguf");
}
