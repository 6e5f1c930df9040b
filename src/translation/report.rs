//! BLEU by source length, in the manner of Bahdanau et al. (2015), Figure 2: does a model hold
//! up as sentences grow longer?

use std::path::Path;

use plotters::prelude::*;

use super::corpus::Pair;
use super::metrics::corpus_bleu;
use crate::error::{Error, Result};
use crate::fonts::ensure_font;

/// Source-length buckets in German words (the corpus keeps sentences of at least 3 words).
pub const LENGTH_BUCKETS: [(usize, usize); 5] =
    [(3, 5), (6, 8), (9, 11), (12, 15), (16, usize::MAX)];

/// One bucket's score.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketBleu {
    /// E.g. `6–8`.
    pub label: String,
    /// Pairs in the bucket.
    pub pairs: usize,
    /// Corpus BLEU over those pairs.
    pub bleu: f64,
}

/// Corpus BLEU of the hypotheses in each [`LENGTH_BUCKETS`] bucket (empty buckets left out).
pub fn bleu_by_length(pairs: &[Pair], hypotheses: &[String]) -> Result<Vec<BucketBleu>> {
    let mut buckets = Vec::new();
    for (low, high) in LENGTH_BUCKETS {
        let (hyps, refs): (Vec<String>, Vec<String>) = pairs
            .iter()
            .zip(hypotheses)
            .filter(|(pair, _)| (low..=high).contains(&pair.german.split_whitespace().count()))
            .map(|(pair, hypothesis)| (hypothesis.clone(), pair.english.clone()))
            .unzip();
        if hyps.is_empty() {
            continue;
        }
        let label = if high == usize::MAX {
            format!("{low}+")
        } else {
            format!("{low}–{high}")
        };
        buckets.push(BucketBleu {
            label,
            pairs: hyps.len(),
            bleu: corpus_bleu(&hyps, &refs)?.score,
        });
    }
    Ok(buckets)
}

/// A PNG line chart: BLEU per length bucket, one line per model.
pub fn plot_bleu_by_length(series: &[(String, Vec<BucketBleu>)], path: &Path) -> Result<()> {
    ensure_font()?;
    let failed = |error: String| Error::Input(format!("cannot draw {}: {error}", path.display()));
    let labels: Vec<String> = series
        .first()
        .map(|(_, b)| b.iter().map(|b| b.label.clone()).collect())
        .unwrap_or_default();
    let top = series
        .iter()
        .flat_map(|(_, b)| b.iter().map(|b| b.bleu))
        .fold(1.0, f64::max)
        * 1.15;
    let root = BitMapBackend::new(path, (760, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(e.to_string()))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Test BLEU by source sentence length", ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0..labels.len().saturating_sub(1).max(1), 0.0..top)
        .map_err(|e| failed(e.to_string()))?;
    chart
        .configure_mesh()
        .x_labels(labels.len())
        .x_label_formatter(&|i| labels.get(*i).cloned().unwrap_or_default())
        .x_desc("German source length (words)")
        .y_desc("BLEU")
        .draw()
        .map_err(|e| failed(e.to_string()))?;
    for (index, (name, buckets)) in series.iter().enumerate() {
        let color = Palette99::pick(index).to_rgba();
        chart
            .draw_series(LineSeries::new(
                buckets.iter().enumerate().map(|(i, b)| (i, b.bleu)),
                color.stroke_width(2),
            ))
            .map_err(|e| failed(e.to_string()))?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| failed(e.to_string()))?;
    root.present().map_err(|e| failed(e.to_string()))
}
