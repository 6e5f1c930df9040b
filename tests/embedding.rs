//! all-MiniLM-L6-v2 through attnzoo's BERT against sentence-transformers: every component of
//! every committed test sentence's embedding within 1e-4, on every usable backend, through the
//! library and through `attnzoo embed`.
//!
//! The model is fetched by `scripts/fetch-minilm.sh` (into `$ATTNZOO_MINILM_DIR` or
//! `~/.cache/attnzoo/all-MiniLM-L6-v2`); the reference vectors come from
//! `scripts/gen_embed_reference.py`.

use std::path::{Path, PathBuf};

use attnzoo::sentence_embedding::{default_model_dir, SentenceEmbedder};
use attnzoo_backends::test_devices;

mod common;

const TOLERANCE: f32 = 1e-4;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/embed")
}

fn sentences() -> Vec<String> {
    let text = std::fs::read_to_string(fixtures().join("sentences.txt")).unwrap();
    attnzoo::files::read_lines(text.as_bytes(), "sentences.txt").unwrap()
}

fn reference() -> Vec<Vec<f32>> {
    std::fs::read_to_string(fixtures().join("reference.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn model_dir() -> PathBuf {
    let dir = default_model_dir();
    assert!(
        dir.join("model.safetensors").is_file(),
        "all-MiniLM-L6-v2 is not in {}: run scripts/fetch-minilm.sh first",
        dir.display()
    );
    dir
}

/// The largest |difference| over every component, checking the shapes match.
fn worst_error(actual: &[Vec<f32>], expected: &[Vec<f32>]) -> f32 {
    assert_eq!(actual.len(), expected.len(), "number of embeddings");
    actual
        .iter()
        .zip(expected)
        .flat_map(|(a, e)| {
            assert_eq!(a.len(), e.len(), "embedding width");
            a.iter().zip(e).map(|(a, e)| (a - e).abs())
        })
        .fold(0.0, f32::max)
}

#[test]
fn minilm_matches_sentence_transformers_on_every_backend() {
    let (sentences, expected) = (sentences(), reference());
    assert_eq!(sentences.len(), expected.len());
    assert!(
        sentences.iter().any(String::is_empty),
        "the list keeps an empty sentence"
    );
    let dir = model_dir();
    for test in test_devices() {
        let embedder = SentenceEmbedder::load(&dir, &test.device).unwrap();
        // Batches of 8 mix lengths, so padding is exercised inside every batch.
        let actual = embedder.embed(&sentences, 8).unwrap();
        let worst = worst_error(&actual, &expected);
        eprintln!(
            "minilm {}: worst |err| {worst:.2e} over {} sentences",
            test.backend,
            sentences.len()
        );
        assert!(
            worst <= TOLERANCE,
            "{}: worst |err| {worst} > {TOLERANCE}",
            test.backend
        );
        // The last two sentences differ only past token 256: truncation makes them equal.
        let n = actual.len();
        assert!(worst_error(&actual[n - 1..], &actual[n - 2..n - 1]) < 1e-6);
    }
}

fn run_embed(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    common::attnzoo(&[&["embed"], args].concat(), stdin)
}

#[test]
fn the_embed_command_writes_one_json_array_per_line_in_order() {
    let dir = model_dir();
    let input = std::fs::read(fixtures().join("sentences.txt")).unwrap();
    let (code, stdout, stderr) = run_embed(
        &["--model-dir", dir.to_str().unwrap(), "--batch-size", "3"],
        &input,
    );
    assert_eq!(code, 0, "{stderr}");
    let actual: Vec<Vec<f32>> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(actual.iter().all(|v| v.len() == 384));
    let worst = worst_error(&actual, &reference());
    assert!(worst <= TOLERANCE, "attnzoo embed: worst |err| {worst}");
}

#[test]
fn bad_input_and_a_missing_model_are_one_line_and_exit_2() {
    let dir = model_dir();
    let (code, stdout, stderr) =
        run_embed(&["--model-dir", dir.to_str().unwrap()], b"fine\n\xc3\x28\n");
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert_eq!(
        stderr.trim_end(),
        "attnzoo: stdin is not UTF-8 (line 2, byte 5)"
    );
    let (code, _, stderr) = run_embed(&["--model-dir", "/nonexistent/minilm"], b"hello\n");
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("scripts/fetch-minilm.sh"), "{stderr}");
}
