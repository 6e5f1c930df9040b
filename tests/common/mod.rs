//! Helpers shared by the integration tests that run the `attnzoo` binary: running it, and a tiny
//! invented corpus to train small models on.
#![allow(dead_code)] // each test binary uses some of them

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `attnzoo ARGS` with `stdin` as input: (exit status, stdout, stderr).
pub fn attnzoo(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that fails before reading its input closes the pipe: that is not an error here.
    if let Err(error) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

const SUBJECTS: [(&str, &str); 5] = [
    ("Der Hund", "The dog"),
    ("Die Katze", "The cat"),
    ("Der Mann", "The man"),
    ("Die Frau", "The woman"),
    ("Das Kind", "The child"),
];
const VERBS: [(&str, &str); 4] = [
    ("schläft", "sleeps"),
    ("läuft", "runs"),
    ("isst", "eats"),
    ("singt", "sings"),
];
const ADVERBS: [(&str, &str); 3] = [("heute", "today"), ("hier", "here"), ("oft", "often")];

/// 60 invented pairs: every fifth goes to test, every seventh of the rest to valid; and a
/// dictionary of their words (`lexicon.tsv`).
pub fn write_corpus(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut splits = [String::new(), String::new(), String::new()];
    let mut n = 0;
    for (de_s, en_s) in SUBJECTS {
        for (de_v, en_v) in VERBS {
            for (de_a, en_a) in ADVERBS {
                let line = format!("{de_s} {de_v} {de_a}.\t{en_s} {en_v} {en_a}.\n");
                let split = if n % 5 == 0 {
                    2
                } else if n % 7 == 0 {
                    1
                } else {
                    0
                };
                splits[split].push_str(&line);
                n += 1;
            }
        }
    }
    for (name, text) in ["train.tsv", "valid.tsv", "test.tsv"].iter().zip(splits) {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let words = SUBJECTS.iter().chain(&VERBS).chain(&ADVERBS);
    let lexicon: String = words.map(|(de, en)| format!("{de}\t{en}\n")).collect();
    std::fs::write(dir.join("lexicon.tsv"), lexicon).unwrap();
}

/// A fresh folder, removed when dropped (also when a test fails).
pub fn workdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn train(dir: &Path, model: &str, epochs: &str, extra: &[&str]) -> (i32, String, String) {
    let corpus = dir.join("corpus");
    let out = dir.join(model);
    let mut args = vec![
        "train",
        "--out",
        out.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--model",
        model,
        "--hidden",
        "32",
        "--epochs",
        epochs,
        "--batch-size",
        "8",
        "--learning-rate",
        "0.01",
        "--warmup-steps",
        "5",
        "--backend",
        "ndarray",
    ];
    if model == "transformer" {
        args.extend_from_slice(&["--layers", "3"]);
    }
    args.extend_from_slice(extra);
    attnzoo(&args, b"")
}
