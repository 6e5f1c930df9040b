//! Corpus and reference files: any bytes as a `german<TAB>english` pair file (`read_pairs`, as
//! `attnzoo train` and `eval` read a split), and as a hypotheses/references pair (the CLI's line
//! reader, then corpus BLEU and chrF as `attnzoo bleu` and `eval` score them). Each must answer
//! Ok or a one-line error, never panic; scores are finite and within 0–100.
#![no_main]

use std::fs;

use attnzoo::files::read_lines;
use attnzoo::translation::corpus::read_pairs;
use attnzoo::translation::metrics::{corpus_bleu, corpus_chrf};
use attnzoo_fuzz::fresh_dir;
use libfuzzer_sys::fuzz_target;

fn one_line(error: attnzoo::Error) {
    let message = error.to_string();
    assert!(!message.contains('\n'), "not one line: {message}");
}

fuzz_target!(|data: &[u8]| {
    let path = fresh_dir("corpus").join("train.tsv");
    fs::write(&path, data).unwrap();
    match read_pairs(&path) {
        Ok(pairs) => {
            for pair in pairs {
                assert!(!pair.german.trim().is_empty() && !pair.english.trim().is_empty());
            }
        }
        Err(error) => one_line(error),
    }
    // Hypotheses, a NUL, references.
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (hypotheses, references) = (&data[..split], data.get(split + 1..).unwrap_or(&[]));
    let (hypotheses, references) = match (
        read_lines(hypotheses, "stdin"),
        read_lines(references, "references"),
    ) {
        (Ok(h), Ok(r)) => (h, r),
        (Err(error), _) | (_, Err(error)) => return one_line(error),
    };
    match corpus_bleu(&hypotheses, &references) {
        Ok(bleu) => assert!(
            bleu.score.is_finite() && (0.0..=100.0 + 1e-9).contains(&bleu.score),
            "BLEU {}",
            bleu.score
        ),
        Err(error) => one_line(error),
    }
    match corpus_chrf(&hypotheses, &references) {
        Ok(chrf) => assert!(
            chrf.is_finite() && (0.0..=100.0 + 1e-9).contains(&chrf),
            "chrF {chrf}"
        ),
        Err(error) => one_line(error),
    }
});
