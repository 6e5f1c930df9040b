//! `attnzoo serve`: the attention explorer, a page and a JSON API on a loopback port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use attnzoo::sentence_embedding::default_model_dir;
use attnzoo::serve::{shutdown_signal, Server, Worker};
use attnzoo_backends::DeviceArgs;

use super::parse;

/// Where `attnzoo demo` leaves its model.
const DEMO_CHECKPOINT: &str = "runs/demo/model";

/// `attnzoo serve` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A translation checkpoint to serve (repeat for several; the first is the default)
    /// [default: runs/demo/model, if there]
    #[arg(long)]
    checkpoint: Vec<PathBuf>,
    /// The MiniLM folder for English self-attention and similarity
    /// [default: $ATTNZOO_MINILM_DIR or ~/.cache/attnzoo/all-MiniLM-L6-v2, if there]
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// A decoder language model: a Hugging Face folder (config.json, weights, tokenizer.json) or
    /// a GGUF file (weights kept in their blocks on a CPU), for the page's Language model tab: stream a continuation, click a token to see where it
    /// looked (repeat for several)
    #[arg(long)]
    lm: Vec<PathBuf>,
    /// Address to listen on (another host than 127.0.0.1 exposes the models to the network)
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = parse::listen_addr)]
    addr: SocketAddr,
    /// Requests that may wait for the models; more are answered 503
    #[arg(long, default_value_t = 16, value_parser = parse::queue_length, allow_negative_numbers = true)]
    queue: usize,
    /// Seconds a request may take before it is answered 504
    #[arg(long, default_value_t = 30.0, value_parser = parse::timeout_seconds, allow_hyphen_values = true)]
    timeout: f64,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Loads the models, then serves until Ctrl-C or SIGTERM.
pub fn run(args: Args) -> Result<()> {
    let checkpoints = if args.checkpoint.is_empty() {
        let demo = PathBuf::from(DEMO_CHECKPOINT);
        if demo.join("state.json").is_file() {
            vec![demo]
        } else {
            Vec::new()
        }
    } else {
        args.checkpoint
    };
    let minilm = args.model_dir.or_else(|| {
        let dir = default_model_dir();
        dir.join("model.safetensors").is_file().then_some(dir)
    });
    if checkpoints.is_empty() && minilm.is_none() && args.lm.is_empty() {
        anyhow::bail!(
            "nothing to serve: no --checkpoint, no {DEMO_CHECKPOINT} (run `attnzoo demo`), no \
             MiniLM (scripts/fetch-minilm.sh, or --model-dir) and no --lm"
        );
    }
    let (backend, device) = args.device.open()?;
    let worker = Worker::start(
        &checkpoints,
        minilm.as_deref(),
        &args.lm,
        device,
        backend.name(),
        args.queue,
    )?;
    let names: Vec<String> = worker.models().iter().map(|m| m.name.clone()).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let timeout = Duration::from_secs_f64(args.timeout);
        let server = Server::bind(args.addr, worker, timeout).await?;
        attnzoo::note!(
            "attnzoo serve: http://{} ({} on {backend}); Ctrl-C stops",
            server.local_addr()?,
            names.join(", ")
        );
        server.run(shutdown_signal()).await?;
        attnzoo::note!("attnzoo serve: stopped");
        Ok::<_, anyhow::Error>(())
    })
}
