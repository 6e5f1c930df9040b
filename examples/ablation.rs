//! The attention ablation: no attention vs Bahdanau vs Luong-general (RNN) vs Transformer, each
//! trained for the same wall-clock time on the German–English corpus, then test BLEU (greedy)
//! overall and by source length, as a Markdown table and a PNG in the manner of Bahdanau et al.
//! (2015), Figure 2.
//!
//!     cargo run --release --example ablation -- [--minutes 5] [--out runs/ablation] [--backend ndarray]
//!         [--bpe N] [--rows rnn-none,rnn-bahdanau,rnn-luong-general,transformer]
//!
//! One row alone: `attnzoo train --out runs/ablation/<row> --max-minutes M --model rnn
//! --attention general` (or `--attention none|bahdanau`, or `--model transformer`), then
//! `attnzoo eval --checkpoint runs/ablation/<row>`. A row whose checkpoint exists is continued
//! up to the same time, not retrained.

use std::path::PathBuf;

use attnzoo::home_cache;
use attnzoo::translation::corpus::{find_corpus, read_split, Split};
use attnzoo::translation::report::{bleu_by_length, plot_bleu_by_length};
use attnzoo::translation::{
    self, AttentionKind, Checkpoint, DecodeConfig, ModelKind, TrainConfig, TrainSpec, Translator,
};
use attnzoo_backends::DeviceArgs;
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Training time per model
    #[arg(long, default_value_t = 5.0)]
    minutes: f64,
    /// Output folder (one checkpoint per row, the table and the plot)
    #[arg(long, default_value = "runs/ablation")]
    out: PathBuf,
    /// Subword vocabulary size per language (0: whole words) [default: `attnzoo train`'s]
    #[arg(long, default_value_t = TrainConfig::new().bpe_vocab)]
    bpe: usize,
    /// The rows to run, by name [default: all]
    #[arg(long, value_delimiter = ',')]
    rows: Vec<String>,
    #[command(flatten)]
    device: DeviceArgs,
}

const ROWS: [(&str, ModelKind, AttentionKind); 4] = [
    ("rnn-none", ModelKind::Rnn, AttentionKind::None),
    ("rnn-bahdanau", ModelKind::Rnn, AttentionKind::Bahdanau),
    ("rnn-luong-general", ModelKind::Rnn, AttentionKind::General),
    ("transformer", ModelKind::Transformer, AttentionKind::None),
];

fn main() {
    let args = Args::parse();
    if let Err(message) = run(&args) {
        eprintln!("ablation: {message}");
        std::process::exit(2);
    }
}

/// An error of the row (or step) `name` as one line.
fn failed(name: &str) -> impl Fn(attnzoo::Error) -> String + '_ {
    move |error| format!("{name}: {error}")
}

fn run(args: &Args) -> Result<(), String> {
    let test = read_split(
        &find_corpus(&home_cache()).map_err(failed("corpus"))?,
        Split::Test,
    )
    .map_err(failed("corpus"))?;
    let (_, device) = args.device.open().map_err(|e| e.to_string())?;
    let mut table = String::from(
        "| model | epochs | training time | test BLEU (greedy) |\n|---|---|---|---|\n",
    );
    let mut series = Vec::new();
    let unknown: Vec<&String> = args
        .rows
        .iter()
        .filter(|row| !ROWS.iter().any(|(name, _, _)| name == row))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "unknown rows {unknown:?}: the rows are {:?}",
            ROWS.map(|r| r.0)
        ));
    }
    let rows = ROWS
        .iter()
        .filter(|(name, _, _)| args.rows.is_empty() || args.rows.iter().any(|row| row == name));
    for &(name, model, attention) in rows {
        let out = args.out.join(name);
        let spec = TrainSpec {
            model,
            attention,
            config: TrainConfig::new()
                .with_bpe_vocab(args.bpe)
                .with_learning_rate(model.default_learning_rate()),
            epochs: Some(100),
            resume: Checkpoint::exists(&out),
            ..TrainSpec::default()
        };
        let checkpoint =
            translation::train(&spec, &out, Some(args.minutes), &device).map_err(failed(name))?;
        if checkpoint.state.weights.is_empty() {
            return Err(format!(
                "{name}: {} min was not enough for one epoch",
                args.minutes
            ));
        }
        let evaluation = Translator::load(&out, &device)
            .and_then(|translator| translator.evaluate(&test, &DecodeConfig::default()))
            .map_err(failed(name))?;
        let bleu = evaluation.bleu;
        println!("{name}: {bleu}");
        table.push_str(&format!(
            "| {name} | {} | {:.1} min | {:.2} |\n",
            checkpoint.state.epoch,
            checkpoint.state.seconds / 60.0,
            bleu.score
        ));
        series.push((
            name.to_string(),
            bleu_by_length(&test, &evaluation.hypotheses).map_err(failed(name))?,
        ));
    }
    let mut by_length = String::from("| model |");
    for bucket in &series[0].1 {
        by_length.push_str(&format!(" {} words ({}) |", bucket.label, bucket.pairs));
    }
    by_length.push_str(&format!("\n|---|{}\n", "---|".repeat(series[0].1.len())));
    for (name, buckets) in &series {
        by_length.push_str(&format!(
            "| {name} |{}\n",
            buckets
                .iter()
                .map(|b| format!(" {:.2} |", b.bleu))
                .collect::<String>()
        ));
    }
    let report = format!("{table}\n{by_length}");
    std::fs::write(args.out.join("ablation.md"), &report).map_err(|e| e.to_string())?;
    let plot = args.out.join("bleu_by_length.png");
    plot_bleu_by_length(&series, &plot).map_err(failed("plot"))?;
    println!("\n{report}\nplot: {}", plot.display());
    Ok(())
}
