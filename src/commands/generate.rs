//! `attnzoo generate`: continues a prompt with a decoder LM from a Hugging Face folder or a GGUF
//! file, streaming the text (or, with `--ids`, the new token ids) to stdout.

use std::path::PathBuf;

use anyhow::bail;
use attnzoo::language_model::{sampling, LanguageModel};
use attnzoo_backends::DeviceArgs;
use attnzoo_models::lm::GenerationConfig;

use super::output::Stdout;
use super::parse;

/// `attnzoo generate` options.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["prompt", "prompt_ids"])))]
pub struct Args {
    /// The model: a Hugging Face folder (config.json, model.safetensors or shards,
    /// tokenizer.json) or a GGUF file
    #[arg(long, visible_alias = "model-dir")]
    model: PathBuf,
    /// Dequantize a GGUF file's weights at load (the default on a GPU) instead of multiplying
    /// from its blocks (the default on a CPU); for a folder, keep its experts' weights as they
    /// are instead of packing them for the CPU's own product
    #[arg(long)]
    dequantize: bool,
    /// The prompt's text (needs the folder's tokenizer.json)
    #[arg(long)]
    prompt: Option<String>,
    /// The prompt as token ids, comma-separated (no tokenizer needed)
    #[arg(long, value_parser = prompt_ids, conflicts_with = "chat")]
    prompt_ids: Option<PromptIds>,
    /// The most new tokens (generation also stops at an end-of-sequence token)
    #[arg(long, default_value_t = 64, value_parser = parse::count, allow_negative_numbers = true)]
    max_new_tokens: usize,
    /// Sample with this temperature instead of greedy decoding
    #[arg(long, value_parser = parse::temperature, allow_negative_numbers = true)]
    temperature: Option<f64>,
    /// Sample among the K most likely tokens only
    #[arg(long, value_parser = parse::at_least_one, allow_negative_numbers = true)]
    top_k: Option<usize>,
    /// Sample among the most likely tokens whose probability reaches P
    #[arg(long, value_parser = parse::top_p, allow_negative_numbers = true)]
    top_p: Option<f64>,
    /// Seed of the sampling (the same seed, the same tokens) [default: from the clock]
    #[arg(long, value_parser = parse::seed, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Render the prompt as a user message with the folder's chat template
    #[arg(long)]
    chat: bool,
    /// Print the new tokens' ids, space-separated on one line, instead of text
    #[arg(long)]
    ids: bool,
    #[command(flatten)]
    device: DeviceArgs,
}

/// `--prompt-ids`: one value holding every id.
#[derive(Clone, Debug)]
struct PromptIds(Vec<u32>);

fn prompt_ids(text: &str) -> Result<PromptIds, String> {
    parse::token_ids(text).map(PromptIds)
}

/// Loads the folder, generates and streams.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut out = Stdout::open()?;
    let sampling = sampling(args.temperature, args.top_k, args.top_p, args.seed);
    let (backend, device) = args.device.open()?;
    let weights = super::gguf_weights(args.dequantize, backend, &args.device);
    let lm = LanguageModel::load_with(&args.model, weights, &device)?;
    let prompt = match (&args.prompt, args.prompt_ids) {
        (_, Some(PromptIds(ids))) => ids,
        (Some(text), None) if args.chat => lm.encode_chat(text)?,
        (Some(text), None) => lm.encode(text)?,
        (None, None) => bail!("give --prompt or --prompt-ids"),
    };
    let mut config = GenerationConfig::greedy(args.max_new_tokens);
    config.sampling = sampling;
    let mut first = true;
    lm.generate(&prompt, &config, |id, piece| {
        if args.ids {
            out.stream(&if first {
                id.to_string()
            } else {
                format!(" {id}")
            })?;
        } else {
            out.stream(piece)?;
        }
        first = false;
        anyhow::Ok(())
    })?;
    out.line("")?;
    out.finish()
}
