//! `attnzoo`: the command line of the attention zoo.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use attnzoo::commands::{self, DecodeArgs, ModelKind, TrainArgs};
use attnzoo::sentence_embedding::default_model_dir;
use attnzoo::translation::corpus::Split;
use attnzoo_backends::DeviceArgs;

#[derive(Parser)]
#[command(
    name = "attnzoo",
    version,
    about = "Attention mechanisms on Burn 0.22, on ndarray, WGPU and LibTorch"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Table of every backend: compiled in, usable, device, and why not.
    Backends,
    /// Opens the chosen backend and device and runs a small masked attention on it.
    Check {
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// Sentence embeddings (all-MiniLM-L6-v2): UTF-8 sentences on stdin, one per line; one JSON
    /// array of floats per line on stdout, in input order.
    Embed {
        /// The model folder (fetch it with scripts/fetch-minilm.sh)
        /// [default: $ATTNZOO_MINILM_DIR or ~/.cache/attnzoo/all-MiniLM-L6-v2]
        #[arg(long)]
        model_dir: Option<PathBuf>,
        /// Sentences per forward pass
        #[arg(long, default_value_t = 32)]
        batch_size: usize,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// The German–English corpus.
    Data {
        #[command(subcommand)]
        command: DataCommand,
    },
    /// Trains a translation model (German → English), checkpointing every epoch.
    Train(TrainArgs),
    /// Translates German sentences from stdin, one per line, into English on stdout.
    Translate {
        /// Checkpoint folder
        #[arg(long)]
        checkpoint: PathBuf,
        #[command(flatten)]
        decode: DecodeArgs,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// BLEU and chrF of a checkpoint on a corpus split.
    Eval {
        /// Checkpoint folder
        #[arg(long)]
        checkpoint: PathBuf,
        /// Split
        #[arg(long, value_enum, default_value = "test")]
        split: Split,
        /// Only the first N pairs
        #[arg(long)]
        limit: Option<usize>,
        /// Corpus folder [default: the newest under ~/.cache/attnzoo]
        #[arg(long)]
        corpus: Option<PathBuf>,
        #[command(flatten)]
        decode: DecodeArgs,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// Corpus BLEU of stdin (one hypothesis per line) against a reference file, as sacreBLEU.
    Bleu {
        /// Reference file, one sentence per line
        #[arg(long = "ref")]
        reference: PathBuf,
        /// One JSON object (score, precisions, bp, ratio, sys_len, ref_len)
        #[arg(long)]
        json: bool,
    },
    /// Heatmaps (PNG and SVG) of the attention behind one translation.
    Attend {
        /// Checkpoint folder
        #[arg(long)]
        checkpoint: PathBuf,
        /// The German sentence
        sentence: String,
        /// Output folder
        #[arg(long, default_value = "runs/attend")]
        out: PathBuf,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// The main job: fetch the corpus, train for a few minutes, report test BLEU, translate five
    /// test sentences and draw attention heatmaps.
    Demo {
        /// Training time (a checkpoint already in --out is continued)
        #[arg(long, default_value_t = 5.0)]
        minutes: f64,
        /// Model
        #[arg(long, value_enum, default_value = "rnn")]
        model: ModelKind,
        /// Output folder
        #[arg(long, default_value = "runs/demo")]
        out: PathBuf,
        #[command(flatten)]
        device: DeviceArgs,
    },
}

#[derive(Subcommand)]
enum DataCommand {
    /// Downloads Debian's trans-de-en with apt-get and builds the sentence-pair splits.
    Fetch {
        /// Cache folder [default: ~/.cache/attnzoo]
        #[arg(long)]
        cache: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Backends => commands::backends(),
        Command::Check { device } => commands::check(&device),
        Command::Embed {
            model_dir,
            batch_size,
            device,
        } => commands::embed(
            &model_dir.unwrap_or_else(default_model_dir),
            &device,
            batch_size,
        ),
        Command::Data {
            command: DataCommand::Fetch { cache },
        } => commands::data_fetch(cache),
        Command::Train(args) => commands::train_command(&args).map(|_| ()),
        Command::Translate {
            checkpoint,
            decode,
            device,
        } => commands::translate_command(&checkpoint, decode, &device),
        Command::Eval {
            checkpoint,
            split,
            limit,
            corpus,
            decode,
            device,
        } => commands::eval_command(&checkpoint, split, limit, &corpus, decode, &device),
        Command::Bleu { reference, json } => commands::bleu_command(&reference, json),
        Command::Attend {
            checkpoint,
            sentence,
            out,
            device,
        } => commands::attend_command(&checkpoint, &sentence, &out, &device).map(|written| {
            for path in written {
                println!("{}", path.display());
            }
        }),
        Command::Demo {
            minutes,
            model,
            out,
            device,
        } => commands::demo(minutes, &out, model, &device),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("attnzoo: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
