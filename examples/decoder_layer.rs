//! The decoder layers of today's language models: one [`LmLayer`] per family, built from a few
//! lines of `config.json` as the family table (`attnzoo_models::lm::FAMILIES`) reads them — RMSNorm,
//! multi-head attention with grouped-query heads, RoPE, QK-norm, sliding windows, soft-capping, and
//! a gated feed-forward. One layer of each family runs on a small input; with `--passes N` the
//! Llama-style layer of docs/MEASUREMENTS.md (d 512, GQA 8/2, SwiGLU 1408, batch 4, T 1,024,
//! causal) is timed pass by pass, forward and forward + backward, as
//! `scripts/bench_decoder_layer.py` times `transformers`' `LlamaDecoderLayer`.
//!
//!     cargo run --release --example decoder_layer -- [--backend flex] [--passes 30]

use std::time::Instant;

use attnzoo_backends::{keep_freed_memory, DeviceArgs, ZeroWritingAllocator};
use attnzoo_models::lm::{CausalLmConfig, LmLayer};
use attnzoo_models::AttnError;
use burn::tensor::{Device, Distribution, Tensor};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Time the Llama-style layer over this many passes (after three untimed ones).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    passes: Option<u32>,
    #[command(flatten)]
    device: DeviceArgs,
}

/// As the command line: zeroed memory written ([`ZeroWritingAllocator`]).
#[global_allocator]
static ALLOCATOR: ZeroWritingAllocator = ZeroWritingAllocator;

/// A two-layer config of `model_type`, `width` wide with 8 heads sharing 2 key/value heads,
/// with `extra` fields (JSON, each preceded by a comma).
fn config(
    model_type: &str,
    width: usize,
    d_ff: usize,
    extra: &str,
) -> Result<CausalLmConfig, AttnError> {
    CausalLmConfig::from_json(&format!(
        r#"{{"model_type": "{model_type}", "vocab_size": 16, "hidden_size": {width},
            "intermediate_size": {d_ff}, "num_hidden_layers": 2, "num_attention_heads": 8,
            "num_key_value_heads": 2, "max_position_embeddings": 4096{extra}}}"#
    ))
}

/// The families' layers at a small width: `(name, config, layer index)`.
fn families() -> Result<Vec<(&'static str, CausalLmConfig, usize)>, AttnError> {
    let small = |model_type, extra| config(model_type, 64, 172, extra);
    // Gemma 2 alternates a local (sliding-window) layer and a global one.
    let gemma2 = small(
        "gemma2",
        r#", "head_dim": 16, "sliding_window": 8, "query_pre_attn_scalar": 16"#,
    )?;
    Ok(vec![
        ("llama", small("llama", "")?, 0),
        // Mistral: a causal sliding window (here 8: the query and the 7 before it).
        ("mistral", small("mistral", r#", "sliding_window": 8"#)?, 0),
        // Qwen3: QK-norm and heads wider than d_model / n_heads.
        ("qwen3", small("qwen3", r#", "head_dim": 16"#)?, 0),
        ("gemma2 local", gemma2.clone(), 0),
        ("gemma2 global", gemma2, 1),
        // OLMo 2: norms after the blocks, QK-norm across all heads.
        ("olmo2", small("olmo2", "")?, 0),
        // gpt-oss: learned sinks in every head over a window, a mixture of 4 experts (2 per token)
        // with the clamped SwiGLU.
        (
            "gpt-oss",
            small(
                "gpt_oss",
                r#", "sliding_window": 8, "num_local_experts": 4, "num_experts_per_tok": 2"#,
            )?,
            0,
        ),
    ])
}

/// One pass of a layer over `x`, from an empty cache.
fn forward(layer: &LmLayer, x: Tensor<3>) -> Result<Tensor<3>, AttnError> {
    Ok(layer.forward(x, None, &mut layer.cache(), false)?.0)
}

fn main() {
    let args = Args::parse();
    keep_freed_memory();
    let (backend, device) = args.device.open().unwrap_or_else(|error| {
        eprintln!("decoder_layer: {error}");
        std::process::exit(2);
    });
    let run = || -> Result<(), AttnError> {
        match args.passes {
            None => {
                let x = Tensor::<3>::random([2, 12, 64], Distribution::Default, &device);
                for (name, config, index) in families()? {
                    let y = forward(&config.layer(index, &device)?, x.clone())?;
                    let rms: f32 = y.square().mean().sqrt().into_scalar();
                    println!("{backend} {name:14} layer: output [2, 12, 64], rms {rms:.3}");
                }
            }
            Some(passes) => time_llama_layer(&device, &backend.to_string(), passes)?,
        }
        Ok(())
    };
    if let Err(error) = run() {
        eprintln!("decoder_layer: {error}");
        std::process::exit(2);
    }
}

/// The fastest and the median of `passes` timed passes, after three untimed ones.
fn min_median_ms(passes: u32, mut pass: impl FnMut()) -> (f64, f64) {
    (0..3).for_each(|_| pass());
    let mut ms: Vec<f64> = (0..passes)
        .map(|_| {
            let start = Instant::now();
            pass();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    (ms[0], ms[ms.len() / 2])
}

fn time_llama_layer(device: &Device, backend: &str, passes: u32) -> Result<(), AttnError> {
    let llama = config("llama", 512, 1408, "")?;
    let shape = [4, 1024, 512];
    let layer = llama.layer(0, device)?;
    let x = Tensor::<3>::random(shape, Distribution::Default, device);
    let (low, median) = min_median_ms(passes, || {
        let y = forward(&layer, x.clone()).expect("valid shapes");
        device.sync().expect("the device finishes the pass");
        drop(y);
    });
    println!("{backend} llama_layer forward: min {low:.2} ms, median {median:.2} ms over {passes} passes");
    let train = device.clone().autodiff();
    let layer = llama.layer(0, &train)?;
    let x = Tensor::<3>::random(shape, Distribution::Default, &train).require_grad();
    let (low, median) = min_median_ms(passes, || {
        let grads = forward(&layer, x.clone())
            .expect("valid shapes")
            .sum()
            .backward();
        train.sync().expect("the device finishes the pass");
        drop(grads);
    });
    println!(
        "{backend} llama_layer forward+backward: min {low:.2} ms, median {median:.2} ms over {passes} passes"
    );
    Ok(())
}
