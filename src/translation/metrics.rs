//! Corpus BLEU and chrF as sacreBLEU computes them by default.
//!
//! BLEU (Papineni et al. 2002): 13a tokenisation, n-grams up to 4, the closest reference
//! length, `exp` smoothing (an order with no match gets precision `100 / (2^k · total)` for
//! its `k`-th such order): `BLEU = BP · exp(¼ Σ log p_n)`, `BP = min(1, exp(1 − r/c))`.
//! Counting and tokenising come from the `bleuscore` crate; the smoothing is sacreBLEU's.
//!
//! chrF (Popović 2015): character n-grams up to 6 with whitespace removed, β = 2, statistics
//! summed over the corpus, precision and recall averaged over the orders that occur.

use std::collections::HashMap;

use bleuscore::tokenizer::{Tokenizer, Tokenizer13a};
use bleuscore::{compute_score, RefLenMethod};
use serde::Serialize;

use crate::error::{Error, Result};

const MAX_ORDER: usize = 4;

/// A corpus BLEU score and the statistics behind it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bleu {
    /// 0–100.
    pub score: f64,
    /// Modified n-gram precisions, 0–100, n = 1..4.
    pub precisions: Vec<f64>,
    /// Brevity penalty.
    pub bp: f64,
    /// `sys_len / ref_len`.
    pub ratio: f64,
    /// Hypothesis tokens.
    pub sys_len: usize,
    /// Reference tokens.
    pub ref_len: usize,
}

impl std::fmt::Display for Bleu {
    /// sacreBLEU's line: `BLEU = 25.12 60.0/33.3/20.0/10.0 (BP = 1.000 ratio = 1.000 hyp_len = 10 ref_len = 10)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let precisions: Vec<String> = self.precisions.iter().map(|p| format!("{p:.1}")).collect();
        write!(
            f,
            "BLEU = {:.2} {} (BP = {:.3} ratio = {:.3} hyp_len = {} ref_len = {})",
            self.score,
            precisions.join("/"),
            self.bp,
            self.ratio,
            self.sys_len,
            self.ref_len
        )
    }
}

fn check_lengths(hypotheses: &[String], references: &[String]) -> Result<()> {
    if hypotheses.len() != references.len() {
        return Err(Error::Input(format!(
            "{} hypotheses but {} references: they must pair up line by line",
            hypotheses.len(),
            references.len()
        )));
    }
    if hypotheses.is_empty() {
        return Err(Error::Input("no sentences to score".into()));
    }
    Ok(())
}

/// Corpus BLEU of `hypotheses` against one reference each.
pub fn corpus_bleu(hypotheses: &[String], references: &[String]) -> Result<Bleu> {
    check_lengths(hypotheses, references)?;
    let wrapped: Vec<Vec<String>> = references.iter().map(|r| vec![r.clone()]).collect();
    let stats = compute_score(
        &wrapped,
        hypotheses,
        MAX_ORDER,
        false,
        RefLenMethod::Closest,
    );
    let tokenizer = Tokenizer13a::new();
    let lengths: Vec<usize> = hypotheses
        .iter()
        .map(|h| tokenizer.tokenize(h).len())
        .collect();
    // As sacreBLEU: no n-gram in common at all scores 0, its precisions unsmoothed.
    let matched = stats.precisions.iter().any(|&precision| precision > 0.0);
    let mut smooth = 1.0;
    let mut precisions = Vec::with_capacity(MAX_ORDER);
    for (order, &precision) in stats.precisions.iter().enumerate() {
        let total: usize = lengths.iter().map(|len| len.saturating_sub(order)).sum();
        precisions.push(if total == 0 || !matched {
            0.0
        } else if precision > 0.0 {
            100.0 * precision
        } else {
            smooth *= 2.0;
            100.0 / (smooth * total as f64)
        });
    }
    let (sys_len, ref_len) = (stats.translation_length, stats.reference_length);
    let bp = if sys_len >= ref_len {
        1.0
    } else if sys_len == 0 {
        0.0
    } else {
        (1.0 - ref_len as f64 / sys_len as f64).exp()
    };
    let log_mean = precisions
        .iter()
        .map(|&p| if p > 0.0 { p.ln() } else { -9_999_999_999.0 })
        .sum::<f64>()
        / MAX_ORDER as f64;
    Ok(Bleu {
        score: bp * log_mean.exp(),
        precisions,
        bp,
        ratio: if ref_len == 0 {
            0.0
        } else {
            sys_len as f64 / ref_len as f64
        },
        sys_len,
        ref_len,
    })
}

const CHAR_ORDER: usize = 6;
const BETA: f64 = 2.0;

fn char_ngrams(text: &str, order: usize) -> HashMap<&str, usize> {
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let mut counts = HashMap::new();
    for start in 0..boundaries.len().saturating_sub(order) {
        *counts
            .entry(&text[boundaries[start]..boundaries[start + order]])
            .or_default() += 1;
    }
    counts
}

/// Corpus chrF (sacreBLEU's default chrF: chars up to 6, no word n-grams, β = 2), 0–100.
pub fn corpus_chrf(hypotheses: &[String], references: &[String]) -> Result<f64> {
    check_lengths(hypotheses, references)?;
    let mut stats = [[0usize; 3]; CHAR_ORDER]; // per order: hypothesis, reference, matches
    for (hypothesis, reference) in hypotheses.iter().zip(references) {
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        let (hypothesis, reference) = (squeeze(hypothesis), squeeze(reference));
        for (order, stat) in stats.iter_mut().enumerate() {
            let (hyp, refs) = (
                char_ngrams(&hypothesis, order + 1),
                char_ngrams(&reference, order + 1),
            );
            // As sacreBLEU: a reference without n-grams of this order counts none of the
            // hypothesis's either.
            if !refs.is_empty() {
                stat[0] += hyp.values().sum::<usize>();
            }
            stat[1] += refs.values().sum::<usize>();
            stat[2] += hyp
                .iter()
                .map(|(gram, &count)| count.min(refs.get(gram).copied().unwrap_or(0)))
                .sum::<usize>();
        }
    }
    let (mut precision, mut recall, mut orders) = (0.0, 0.0, 0);
    for [hyp, refs, matches] in stats {
        if hyp > 0 && refs > 0 {
            precision += matches as f64 / hyp as f64;
            recall += matches as f64 / refs as f64;
            orders += 1;
        }
    }
    if orders == 0 {
        return Ok(0.0);
    }
    let (precision, recall) = (precision / orders as f64, recall / orders as f64);
    let factor = BETA * BETA;
    if precision + recall == 0.0 {
        return Ok(0.0);
    }
    Ok(100.0 * (1.0 + factor) * precision * recall / (factor * precision + recall))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every case of `scripts/gen_bleu_reference.py` (sacreBLEU 2.6.0's numbers).
    #[test]
    fn bleu_and_chrf_equal_sacrebleu_on_the_committed_cases() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/bleu/cases.json"
        );
        let fixture: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let strings = |value: &serde_json::Value| -> Vec<String> {
            value
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        let cases = fixture["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 10);
        for case in cases {
            let name = case["name"].as_str().unwrap();
            let (hypotheses, references) =
                (strings(&case["hypotheses"]), strings(&case["references"]));
            let bleu = corpus_bleu(&hypotheses, &references).unwrap();
            let expected = &case["bleu"];
            let close = |a: f64, b: &serde_json::Value| (a - b.as_f64().unwrap()).abs() < 1e-9;
            assert!(
                close(bleu.score, &expected["score"]),
                "{name}: {} vs {}",
                bleu.score,
                expected["score"]
            );
            assert!(
                close(bleu.bp, &expected["bp"]),
                "{name}: bp {} vs {}",
                bleu.bp,
                expected["bp"]
            );
            for (ours, theirs) in bleu
                .precisions
                .iter()
                .zip(expected["precisions"].as_array().unwrap())
            {
                assert!(
                    close(*ours, theirs),
                    "{name}: precisions {:?} vs {}",
                    bleu.precisions,
                    expected["precisions"]
                );
            }
            assert_eq!(
                bleu.sys_len as u64,
                expected["sys_len"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(
                bleu.ref_len as u64,
                expected["ref_len"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(
                bleu.to_string(),
                expected["line"].as_str().unwrap(),
                "{name}"
            );
            let chrf = corpus_chrf(&hypotheses, &references).unwrap();
            assert!(
                (chrf - case["chrf"].as_f64().unwrap()).abs() < 1e-9,
                "{name}: chrF {chrf} vs {}",
                case["chrf"]
            );
        }
    }
}
