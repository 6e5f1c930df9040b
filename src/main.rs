//! `attnzoo`: the command line of the attention zoo.

mod commands;

use std::process::ExitCode;

use attnzoo_backends::{DeviceArgs, ZeroWritingAllocator};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

#[cfg(feature = "serve")]
use commands::serve;
use commands::{
    attend, backends, bleu, data, demo, embed, eval, generate, perplexity, train, translate,
};

#[derive(Parser)]
#[command(
    name = "attnzoo",
    version,
    about = "Attention mechanisms on Burn 0.22, on ndarray, WGPU and LibTorch",
    arg_required_else_help = false
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
    Check(DeviceArgs),
    /// Sentence embeddings (all-MiniLM-L6-v2): UTF-8 sentences on stdin, one per line; one JSON
    /// array of floats per line on stdout, in input order.
    Embed(embed::Args),
    /// The German–English corpus.
    #[command(subcommand_required = true, arg_required_else_help = false)]
    Data {
        #[command(subcommand)]
        command: data::Command,
    },
    /// Trains a translation model (German → English), checkpointing every epoch.
    Train(train::Args),
    /// Translates German text from stdin into English on stdout, line by line, each sentence of a
    /// line on its own.
    Translate(translate::Args),
    /// BLEU and chrF of a checkpoint on a corpus split.
    Eval(eval::Args),
    /// Corpus BLEU of stdin (one hypothesis per line) against a reference file, as sacreBLEU.
    Bleu(bleu::Args),
    /// Heatmaps (PNG and SVG) of the attention behind one translation.
    Attend(attend::Args),
    /// Continues a prompt with a decoder LM from a Hugging Face folder (Llama, Mistral, Qwen2,
    /// Qwen3, Gemma 2, DeepSeek-V3 dense) or a GGUF file, streaming the text to stdout.
    Generate(generate::Args),
    /// The perplexity of a text under a decoder LM (a folder or a GGUF file), as llama.cpp's
    /// llama-perplexity computes it.
    Perplexity(perplexity::Args),
    /// The attention explorer: a page and a JSON API on 127.0.0.1:8080 over translation
    /// checkpoints and MiniLM.
    #[cfg(feature = "serve")]
    Serve(serve::Args),
    /// The main job: fetch the corpus, train for a few minutes, report test BLEU, translate five
    /// test sentences and draw attention heatmaps.
    Demo(demo::Args),
}

/// Clap's report of a bad command line as one line: its first paragraph, lines joined.
fn one_line(error: &clap::Error) -> String {
    let text = error.to_string();
    let first = text.split("\n\n").next().unwrap_or("");
    let joined: Vec<&str> = first.lines().map(str::trim).collect();
    joined.join(" ").trim_start_matches("error: ").to_string()
}

/// The ids of the options given on the command line (not defaulted) of subcommand `name`.
fn given(matches: &ArgMatches, name: &str) -> Vec<String> {
    let Some(matches) = matches.subcommand_matches(name) else {
        return Vec::new();
    };
    matches
        .ids()
        .filter(|id| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .map(|id| id.to_string())
        .collect()
}

/// flex's and ndarray's zeroed tensors written, not left to the kernel's shared page of zeros.
#[global_allocator]
static ALLOCATOR: ZeroWritingAllocator = ZeroWritingAllocator;

fn main() -> ExitCode {
    attnzoo_backends::keep_freed_memory();
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(error) if !error.use_stderr() => {
            // --help, --version: to stdout, checked like every other output.
            return report(print_help(&error));
        }
        Err(error) => {
            attnzoo::note!("attnzoo: {}", one_line(&error));
            return ExitCode::from(2);
        }
    };
    let outcome = match cli.command {
        Command::Backends => backends::run(),
        Command::Check(device) => backends::check(&device),
        Command::Embed(args) => embed::run(args),
        Command::Data { command } => data::run(command),
        Command::Train(args) => train::run(args, &given(&matches, "train")),
        Command::Translate(args) => translate::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Bleu(args) => bleu::run(args),
        Command::Attend(args) => attend::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Perplexity(args) => perplexity::run(args),
        Command::Demo(args) => demo::run(args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::run(args),
    };
    report(outcome)
}

fn print_help(help: &clap::Error) -> anyhow::Result<()> {
    let mut stdout = commands::output::Stdout::open()?;
    stdout.line(help.to_string().trim_end())?;
    stdout.finish()
}

/// The exit status of a command's outcome, its error as one line on stderr.
fn report(outcome: anyhow::Result<()>) -> ExitCode {
    let Err(error) = outcome else {
        return ExitCode::SUCCESS;
    };
    match commands::exit_status(&error) {
        Some(status) => {
            attnzoo::note!("attnzoo: {error:#}");
            status
        }
        None => ExitCode::SUCCESS,
    }
}
