//! Every mechanism of the zoo on one input, on the backend named by `--backend`, printing the
//! shapes, and a heatmap of the Bahdanau weights (and of one multi-head head).
//!
//!     cargo run --example attention_tour -- [--backend ndarray] [--device cpu] [--out runs/tour]

use std::path::PathBuf;

use attnzoo::heatmap::Heatmap;
use attnzoo_backends::DeviceArgs;
use attnzoo_models::attention::{
    AlignmentConfig, AlignmentScore, AttentionImpl, AttentionInput, KeyPattern, LinformerConfig,
    MultiHeadConfig, MultiHeadInput, ScaledDotProductConfig, Selection,
};
use attnzoo_models::position::{
    AlibiConfig, LearnedPositionConfig, RotaryConfig, SinusoidalPositionConfig,
};
use attnzoo_models::AttnError;
use burn::tensor::{Distribution, Tensor};
use clap::Parser;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    device: DeviceArgs,
    /// Folder for the heatmaps.
    #[arg(long, default_value = "runs/tour")]
    out: PathBuf,
}

const WORDS: [&str; 6] = ["the", "cat", "sat", "on", "the", "mat"];

fn main() {
    let args = Args::parse();
    if let Err(message) = run(&args) {
        eprintln!("attention_tour: {message}");
        std::process::exit(2);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let (backend, device) = args.device.open().map_err(|e| e.to_string())?;
    let (batch, len, d_model, heads) = (1, WORDS.len(), 16, 4);
    let x = Tensor::<3>::random([batch, len, d_model], Distribution::Default, &device);
    println!("backend {backend}, input x {:?}", x.dims());
    let err = |e: AttnError| e.to_string();

    for score in [
        AlignmentScore::Additive,
        AlignmentScore::Dot,
        AlignmentScore::General,
        AlignmentScore::Concat,
        AlignmentScore::Location { max_source_len: 8 },
    ] {
        let alignment = AlignmentConfig::new(d_model, score)
            .try_init(&device)
            .map_err(err)?;
        let out = alignment.forward(x.clone(), x.clone(), None).map_err(err)?;
        println!(
            "alignment {score:?}: context {:?}, weights {:?}",
            out.context.dims(),
            out.weights.dims()
        );
        if score == AlignmentScore::Additive {
            write_heatmap(
                args,
                "bahdanau",
                "Bahdanau attention (untrained)",
                out.weights.narrow(0, 0, 1),
            )?;
        }
    }
    for (name, pattern, implementation, selection) in [
        (
            "scaled dot-product",
            KeyPattern::Full,
            AttentionImpl::Dense,
            Selection::Soft,
        ),
        (
            "causal",
            KeyPattern::Causal,
            AttentionImpl::Dense,
            Selection::Soft,
        ),
        (
            "local window 1",
            KeyPattern::Window {
                window: 1,
                causal: false,
            },
            AttentionImpl::Dense,
            Selection::Soft,
        ),
        (
            "strided sparse",
            KeyPattern::Strided {
                stride: 3,
                summary: 1,
                causal: true,
            },
            AttentionImpl::Dense,
            Selection::Soft,
        ),
        (
            "top-2",
            KeyPattern::Full,
            AttentionImpl::Dense,
            Selection::TopK { k: 2 },
        ),
        (
            "hard",
            KeyPattern::Full,
            AttentionImpl::Dense,
            Selection::Hard,
        ),
        (
            "fused",
            KeyPattern::Full,
            AttentionImpl::Fused,
            Selection::Soft,
        ),
        (
            "memory-efficient",
            KeyPattern::Full,
            AttentionImpl::Chunked {
                query_chunk: 2,
                key_chunk: 2,
            },
            Selection::Soft,
        ),
    ] {
        let attention = ScaledDotProductConfig::new()
            .with_pattern(pattern)
            .with_implementation(implementation)
            .with_selection(selection)
            .try_init()
            .map_err(err)?;
        let input = AttentionInput::self_attn(x.clone());
        let input = if implementation == AttentionImpl::Dense {
            input.with_weights()
        } else {
            input
        };
        let out = attention.forward(input).map_err(err)?;
        println!(
            "{name}: context {:?}, weights {:?}",
            out.context.dims(),
            out.weights.map(|w| w.dims())
        );
    }
    let rotary = RotaryConfig::new(d_model / heads).try_init().map_err(err)?;
    let alibi = AlibiConfig::new(heads).try_init().map_err(err)?;
    for (name, kv_heads) in [
        ("multi-head", heads),
        ("grouped-query", 2),
        ("multi-query", 1),
    ] {
        let mha = MultiHeadConfig::new(d_model, heads)
            .with_n_kv_heads(Some(kv_heads))
            .try_init(&device)
            .map_err(err)?;
        let input = MultiHeadInput::self_attn(x.clone())
            .rotary(rotary.clone())
            .with_weights();
        let input = input.head_bias(alibi.bias(len, len, 0, &device));
        let out = mha.forward(input).map_err(err)?;
        let weights = out.weights.expect("weights were asked for");
        println!(
            "{name} (RoPE + ALiBi): context {:?}, weights {:?}",
            out.context.dims(),
            weights.dims()
        );
        if kv_heads == heads {
            let head0: Tensor<3> = weights.narrow(1, 0, 1).squeeze_dim(1);
            write_heatmap(
                args,
                "multi_head_head0",
                "multi-head attention, head 0 (untrained)",
                head0,
            )?;
        }
    }
    let linformer = LinformerConfig::new(d_model, heads, 8, 3)
        .try_init(&device)
        .map_err(err)?;
    let (context, weights) = linformer.forward(x.clone(), None, true).map_err(err)?;
    println!(
        "linformer k=3: context {:?}, weights {:?}",
        context.dims(),
        weights.map(|w| w.dims())
    );
    let sinusoidal = SinusoidalPositionConfig::new(d_model)
        .try_init(&device)
        .map_err(err)?;
    println!(
        "sinusoidal positions: {:?}",
        sinusoidal.forward(x.clone(), 0).map_err(err)?.dims()
    );
    let learned = LearnedPositionConfig::new(d_model, 32).init(&device);
    println!(
        "learned positions: {:?}",
        learned.forward(x, 0).map_err(err)?.dims()
    );
    println!("heatmaps in {}", args.out.display());
    Ok(())
}

fn write_heatmap(args: &Args, file: &str, title: &str, weights: Tensor<3>) -> Result<(), String> {
    let words: Vec<String> = WORDS.iter().map(|w| w.to_string()).collect();
    let values = weights
        .into_data()
        .try_into_vec::<f32>()
        .map_err(|e| format!("{e:?}"))?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    Heatmap {
        title,
        row_labels: &words,
        col_labels: &words,
        weights: &values,
    }
    .write(&args.out.join(file))
    .map_err(|e| e.to_string())
}
