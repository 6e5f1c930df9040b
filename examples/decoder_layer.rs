//! The decoder layers of today's language models, each a few lines of configuration of the zoo's
//! modules: RMSNorm, multi-head attention with grouped-query heads, RoPE, QK-norm, sliding
//! windows, soft-capping and sinks, and a gated feed-forward. One layer of each family runs on a
//! small input; with `--passes N` the Llama-style layer of docs/MEASUREMENTS.md (d 512, GQA 8/2,
//! SwiGLU 1408, batch 4, T 1,024, causal) is timed pass by pass, forward and forward + backward,
//! as `scripts/bench_decoder_layer.py` times `transformers`' `LlamaDecoderLayer`.
//!
//!     cargo run --release --example decoder_layer -- [--backend flex] [--passes 30]
//!
//! A layer is pre-norm: `h = x + Attn(RMSNorm(x))`, `y = h + FFN(RMSNorm(h))`; Gemma 2 also
//! normalises each block's output before the residual sum ("sandwich" norms).

use std::time::Instant;

use attnzoo_backends::{keep_freed_memory, DeviceArgs, ZeroWritingAllocator};
use attnzoo_models::attention::{
    KeyPattern, MultiHead, MultiHeadConfig, MultiHeadInput, ScaledDotProductConfig,
};
use attnzoo_models::norm::{RmsNorm, RmsNormConfig};
use attnzoo_models::position::{RotaryConfig, RotaryEncoding};
use attnzoo_models::transformer::{GatedActivation, GatedFeedForward, GatedFeedForwardConfig};
use attnzoo_models::AttnError;
use burn::module::Module;
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

/// One decoder layer: attention and a gated feed-forward, each behind an RMSNorm.
#[derive(Module, Debug)]
struct DecoderLayer {
    input_norm: RmsNorm,
    attention: MultiHead,
    /// Gemma 2's norm of the attention's output, before the residual sum.
    post_attention_norm: Option<RmsNorm>,
    pre_feed_forward_norm: RmsNorm,
    feed_forward: GatedFeedForward,
    /// Gemma 2's norm of the feed-forward's output.
    post_feed_forward_norm: Option<RmsNorm>,
    rotary: RotaryEncoding,
}

/// What distinguishes one family's layer from another's.
struct Family {
    name: &'static str,
    d_model: usize,
    n_heads: usize,
    n_kv_heads: usize,
    d_head: usize,
    d_ff: usize,
    attention: ScaledDotProductConfig,
    qk_norm: bool,
    sinks: bool,
    /// Gemma's `(1 + w)` norms, sandwich norms and GeGLU.
    gemma: bool,
}

impl Family {
    fn llama(d_model: usize, n_heads: usize, n_kv_heads: usize, d_ff: usize) -> Self {
        Family {
            name: "llama",
            d_model,
            n_heads,
            n_kv_heads,
            d_head: d_model / n_heads,
            d_ff,
            attention: ScaledDotProductConfig::new().with_pattern(KeyPattern::Causal),
            qk_norm: false,
            sinks: false,
            gemma: false,
        }
    }

    fn init(&self, device: &Device) -> Result<DecoderLayer, AttnError> {
        let norm = |width| {
            RmsNormConfig::new(width)
                .with_unit_offset(self.gemma)
                .try_init(device)
        };
        let sandwich = |width| self.gemma.then(|| norm(width)).transpose();
        let attention = MultiHeadConfig::new(self.d_model, self.n_heads)
            .with_n_kv_heads(Some(self.n_kv_heads))
            .with_d_head(Some(self.d_head))
            .with_bias(false)
            .with_qk_norm(self.qk_norm.then(|| RmsNormConfig::new(self.d_head)))
            .with_sinks(self.sinks)
            .with_attention(self.attention.clone())
            .try_init(device)?;
        let activation = match self.gemma {
            true => GatedActivation::GeluTanh,
            false => GatedActivation::Silu,
        };
        Ok(DecoderLayer {
            input_norm: norm(self.d_model)?,
            attention,
            post_attention_norm: sandwich(self.d_model)?,
            pre_feed_forward_norm: norm(self.d_model)?,
            feed_forward: GatedFeedForwardConfig::new(self.d_model, self.d_ff)
                .with_activation(activation)
                .try_init(device)?,
            post_feed_forward_norm: sandwich(self.d_model)?,
            rotary: RotaryConfig::new(self.d_head).try_init()?,
        })
    }
}

/// The families of the modern-attention issue, at a small width.
fn families() -> Vec<Family> {
    let llama = || Family::llama(64, 8, 2, 172);
    // Mistral: a causal sliding window of 4,096 keys (here 8: the query and the 7 before it).
    let window = KeyPattern::Window {
        window: 7,
        causal: true,
    };
    let gemma_attention = ScaledDotProductConfig::new()
        .with_scale(Some(1.0 / 16f64.sqrt())) // query_pre_attn_scalar 16
        .with_softcap(Some(50.0));
    vec![
        llama(),
        Family {
            name: "mistral",
            attention: ScaledDotProductConfig::new().with_pattern(window),
            ..llama()
        },
        // Qwen3: QK-norm and heads wider than d_model / n_heads.
        Family {
            name: "qwen3",
            d_head: 16,
            qk_norm: true,
            ..llama()
        },
        // Gemma 2 alternates a local (sliding-window) layer and a global one.
        Family {
            name: "gemma2 local",
            d_head: 16,
            attention: gemma_attention.clone().with_pattern(window),
            gemma: true,
            ..llama()
        },
        Family {
            name: "gemma2 global",
            d_head: 16,
            attention: gemma_attention.with_pattern(KeyPattern::Causal),
            gemma: true,
            ..llama()
        },
        // gpt-oss: learned sinks in every head, over a window (StreamingLLM's kept first token
        // would be `KeyPattern::Sinks { sinks: 1, window }`).
        Family {
            name: "gpt-oss",
            sinks: true,
            attention: ScaledDotProductConfig::new().with_pattern(window),
            ..llama()
        },
    ]
}

impl DecoderLayer {
    /// `x [B, T, D]` → `[B, T, D]`.
    fn forward(&self, x: Tensor<3>) -> Result<Tensor<3>, AttnError> {
        let input = MultiHeadInput::self_attn(self.input_norm.forward(x.clone()))
            .rotary(self.rotary.clone());
        let attended = self.attention.forward(input)?.context;
        let attended = match &self.post_attention_norm {
            Some(norm) => norm.forward(attended),
            None => attended,
        };
        let h = x + attended;
        let fed = self
            .feed_forward
            .forward(self.pre_feed_forward_norm.forward(h.clone()));
        let fed = match &self.post_feed_forward_norm {
            Some(norm) => norm.forward(fed),
            None => fed,
        };
        Ok(h + fed)
    }
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
                for family in families() {
                    let y = family.init(&device)?.forward(x.clone())?;
                    let rms: f32 = y.square().mean().sqrt().into_scalar();
                    println!(
                        "{backend} {:14} layer: output [2, 12, 64], rms {rms:.3}",
                        family.name
                    );
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
    let family = Family::llama(512, 8, 2, 1408);
    let shape = [4, 1024, 512];
    let layer = family.init(device)?;
    let x = Tensor::<3>::random(shape, Distribution::Default, device);
    let (low, median) = min_median_ms(passes, || {
        let y = layer.forward(x.clone()).expect("valid shapes");
        device.sync().expect("the device finishes the pass");
        drop(y);
    });
    println!("{backend} llama_layer forward: min {low:.2} ms, median {median:.2} ms over {passes} passes");
    let train = device.clone().autodiff();
    let layer = family.init(&train)?;
    let x = Tensor::<3>::random(shape, Distribution::Default, &train).require_grad();
    let (low, median) = min_median_ms(passes, || {
        let grads = layer
            .forward(x.clone())
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
