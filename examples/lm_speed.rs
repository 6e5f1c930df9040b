//! Prefill and decode speed of a decoder LM loaded from a Hugging Face folder or a GGUF file, as a
//! user runs it: `CausalLm::from_pretrained` or `CausalLm::from_gguf_with` (weights kept in their
//! blocks unless `--dequantize`), then greedy generation with the KV cache. The benchmark of
//! docs/MEASUREMENTS.md ("Language models") runs it on a random-weight model shaped like
//! SmolLM2-135M (`scripts/gen_lm_bench_model.py`), beside `scripts/bench_lm_torch.py`
//! (`transformers`' `generate`) on the same folder and the same prompt ids.
//!
//!     cargo build --release --features tch,flex --example lm_speed
//!     $CARGO_TARGET_DIR/release/examples/lm_speed --model DIR|FILE.gguf --backend flex [--batch 1 --batch 8] [--rounds 3]
//!
//! Per round and batch size `B`: **prefill** is the `[B, 512]` prompt through the model into an
//! empty cache, up to its last position's logits on the host (`tokens/s = B · 512 / time`);
//! **decode** is the 127 single-token steps after it that bring the continuation to 128 new
//! tokens, each a forward over the cache and the greedy choice on the host
//! (`tokens/s = B · 127 / time`). EOS is ignored, so every round makes 128 tokens. Batch 1 runs
//! through [`CausalLm::generate`]; larger batches through [`CausalLm::forward_last`] with one
//! [`LmCache`](attnzoo_models::lm::LmCache), the argmax of each row fed back. Prompt row `b`,
//! position `i` holds id `(1 + 7919 · (512 b + i)) mod vocab`, as the Python script builds it.
//!
//! Prints one JSON object per measurement and round, then, with more than one round, a
//! min/median/max line per measurement.

use std::time::Instant;

use attnzoo_backends::{keep_freed_memory, DeviceArgs, ZeroWritingAllocator};
use attnzoo_models::lm::{argmax, CausalLm, GenerationConfig, GgufWeights};
use attnzoo_models::AttnError;
use burn::tensor::{Device, Int, Tensor, TensorData};
use clap::builder::TypedValueParser;
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// The Hugging Face folder (config.json, model.safetensors) or GGUF file.
    #[arg(long, visible_alias = "model-dir")]
    model: std::path::PathBuf,
    /// Dequantize a GGUF file's weights at load instead of multiplying from its blocks.
    #[arg(long)]
    dequantize: bool,
    /// Batch sizes to measure, in order.
    #[arg(long = "batch", default_values_t = [1usize, 8], value_parser = clap::value_parser!(u64).range(1..=64).map(|b| b as usize))]
    batches: Vec<usize>,
    /// Prompt length.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=100_000).map(|n| n as usize))]
    prompt_len: usize,
    /// New tokens per sequence (the first comes from the prefill's logits).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(2..=100_000).map(|n| n as usize))]
    new_tokens: usize,
    /// Timed rounds, after one short untimed generation.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    rounds: u32,
    #[command(flatten)]
    device: DeviceArgs,
}

/// As the command line: zeroed memory written ([`ZeroWritingAllocator`]).
#[global_allocator]
static ALLOCATOR: ZeroWritingAllocator = ZeroWritingAllocator;

/// Seconds of one round's prefill and decode.
struct Round {
    prefill: f64,
    decode: f64,
}

/// Prompt ids, `batch` rows of `len`, as `scripts/bench_lm_torch.py` makes them.
fn prompt(batch: usize, len: usize, vocab: usize) -> Vec<Vec<u32>> {
    (0..batch)
        .map(|row| {
            (0..len)
                .map(|i| ((1 + 7919 * (row * len + i)) % vocab) as u32)
                .collect()
        })
        .collect()
}

/// Batch 1 through `generate`: the time to the first token, then to the last.
fn generate_one(lm: &CausalLm, prompt: &[u32], new_tokens: usize) -> Result<Round, AttnError> {
    let mut config = GenerationConfig::greedy(new_tokens);
    config.eos_token_ids = Some(Vec::new());
    let start = Instant::now();
    let mut tokens = lm.generate(prompt, &config)?;
    let first = tokens.next().expect("at least one new token")?;
    let prefill = start.elapsed().as_secs_f64();
    let rest = tokens.collect::<Result<Vec<u32>, _>>()?;
    let decode = start.elapsed().as_secs_f64() - prefill;
    assert_eq!(
        1 + rest.len(),
        new_tokens,
        "generation stopped early ({first})"
    );
    Ok(Round { prefill, decode })
}

/// Greedy ids of each row of `logits [B, vocab]`, on the host.
fn greedy(logits: Tensor<2>) -> Result<Vec<i64>, AttnError> {
    let vocab = logits.dims()[1];
    let values = logits
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .map_err(|error| AttnError(format!("cannot read the logits: {error:?}")))?;
    Ok(values.chunks(vocab).map(|row| argmax(row) as i64).collect())
}

/// A batch through `forward_last` and one cache: the prefill, then one step per new token.
fn generate_batch(
    lm: &CausalLm,
    prompts: &[Vec<u32>],
    new_tokens: usize,
    device: &Device,
) -> Result<Round, AttnError> {
    let (batch, len) = (prompts.len(), prompts[0].len());
    let ids: Vec<i64> = prompts.iter().flatten().map(|&id| id as i64).collect();
    let start = Instant::now();
    let mut cache = lm.cache();
    let input = Tensor::<2, Int>::from_data(TensorData::new(ids, [batch, len]), device);
    let mut next = greedy(lm.forward_last(input, None, &mut cache)?)?;
    let prefill = start.elapsed().as_secs_f64();
    for _ in 1..new_tokens {
        let input = Tensor::<2, Int>::from_data(TensorData::new(next, [batch, 1]), device);
        next = greedy(lm.forward_last(input, None, &mut cache)?)?;
    }
    let decode = start.elapsed().as_secs_f64() - prefill;
    Ok(Round { prefill, decode })
}

fn min_median_max(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (
        values[0],
        values[values.len() / 2],
        values[values.len() - 1],
    )
}

fn run(args: &Args) -> Result<(), AttnError> {
    let (backend, device) = args
        .device
        .open()
        .map_err(|error| AttnError(error.to_string()))?;
    let loading = Instant::now();
    let lm = if args.model.is_file() {
        let weights = match args.dequantize {
            true => GgufWeights::Dequantized,
            false => GgufWeights::Quantized,
        };
        CausalLm::from_gguf_with(&args.model, weights, &device)?
    } else {
        CausalLm::from_pretrained(&args.model, &device)?
    };
    eprintln!(
        "lm_speed: {} loaded on {backend} in {:.1} s",
        args.model.display(),
        loading.elapsed().as_secs_f64()
    );
    let vocab = lm.vocab_size();
    let measure = |batch: usize, len: usize, new_tokens: usize| {
        let prompts = prompt(batch, len, vocab);
        match batch {
            1 => generate_one(&lm, &prompts[0], new_tokens),
            _ => generate_batch(&lm, &prompts, new_tokens, &device),
        }
    };
    // Untimed: every weight read once, the backend's buffers and threads started.
    for &batch in &args.batches {
        measure(batch, 16, 3)?;
    }
    let mut summary = Vec::new();
    for &batch in &args.batches {
        let mut rates = [Vec::new(), Vec::new()];
        for round in 0..args.rounds {
            let times = measure(batch, args.prompt_len, args.new_tokens)?;
            let measured = [
                ("prefill", batch * args.prompt_len, times.prefill),
                ("decode", batch * (args.new_tokens - 1), times.decode),
            ];
            for (i, (phase, tokens, seconds)) in measured.into_iter().enumerate() {
                let tok_s = tokens as f64 / seconds;
                rates[i].push(tok_s);
                println!(
                    "{{\"engine\": \"attnzoo\", \"backend\": \"{backend}\", \"batch\": {batch}, \
                     \"phase\": \"{phase}\", \"round\": {round}, \"tokens\": {tokens}, \
                     \"seconds\": {seconds:.4}, \"tok_s\": {tok_s:.2}}}"
                );
            }
        }
        summary.push((batch, rates));
    }
    if args.rounds > 1 {
        for (batch, mut rates) in summary {
            for (phase, rates) in ["prefill", "decode"].iter().zip(rates.iter_mut()) {
                let (low, median, high) = min_median_max(rates);
                println!(
                    "attnzoo {backend} batch {batch} {phase}: min {low:.1}, median {median:.1}, \
                     max {high:.1} tokens/s over {} rounds",
                    args.rounds
                );
            }
        }
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    keep_freed_memory();
    if let Err(error) = run(&args) {
        eprintln!("lm_speed: {error}");
        std::process::exit(2);
    }
}
