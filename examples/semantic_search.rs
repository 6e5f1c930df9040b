//! Semantic search with all-MiniLM-L6-v2 run by attnzoo's BERT: embed a few documents and rank
//! them against a query by cosine similarity (the embeddings are unit vectors, so a dot product).
//!
//!     scripts/fetch-minilm.sh
//!     cargo run --example semantic_search -- [--backend ndarray] "how do I cook pasta?"

use std::path::PathBuf;

use attnzoo::sentence_embedding::{default_model_dir, SentenceEmbedder};
use attnzoo_backends::DeviceArgs;
use clap::Parser;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    device: DeviceArgs,
    /// The model folder [default: $ATTNZOO_MINILM_DIR or ~/.cache/attnzoo/all-MiniLM-L6-v2]
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// The query
    #[arg(default_value = "How do I cook pasta?")]
    query: String,
}

const DOCUMENTS: [&str; 8] = [
    "Boil salted water, add the spaghetti and cook it for nine minutes.",
    "The train to Berlin leaves from platform four at noon.",
    "Attention lets a model weigh every input token when producing an output.",
    "Risotto needs arborio rice, stock added slowly, and constant stirring.",
    "Our quarterly revenue grew by twelve percent.",
    "A cat is sleeping on the warm windowsill.",
    "Der Zug nach München hat zehn Minuten Verspätung.",
    "Fresh tagliatelle only needs two or three minutes in boiling water.",
];

fn main() {
    let args = Args::parse();
    if let Err(message) = run(&args) {
        eprintln!("semantic_search: {message}");
        std::process::exit(2);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let (backend, device) = args.device.open().map_err(|e| e.to_string())?;
    let dir = args.model_dir.clone().unwrap_or_else(default_model_dir);
    let embedder = SentenceEmbedder::load(&dir, &device).map_err(|e| e.to_string())?;
    let texts: Vec<String> = std::iter::once(args.query.clone())
        .chain(DOCUMENTS.iter().map(|d| d.to_string()))
        .collect();
    let vectors = embedder.embed(&texts, 32).map_err(|e| e.to_string())?;
    let (query, documents) = vectors.split_first().ok_or("no embeddings")?;
    let mut ranked: Vec<(f32, &str)> = documents
        .iter()
        .zip(DOCUMENTS)
        .map(|(doc, text)| (query.iter().zip(doc).map(|(a, b)| a * b).sum(), text))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("query: {} ({backend})", args.query);
    for (similarity, text) in ranked {
        println!("{similarity:6.3}  {text}");
    }
    Ok(())
}
