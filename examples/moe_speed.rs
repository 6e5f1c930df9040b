//! One mixture-of-experts block's forward, timed: Mixtral's shape at a small width (8 experts,
//! 2 per token, 512 wide, experts 1,792 wide as Mixtral's 3.5×), batch 1 × 256 tokens, random
//! weights and input. Beside `scripts/bench_moe_torch.py` (transformers' `MixtralSparseMoeBlock`,
//! same shapes and threads); docs/MEASUREMENTS.md has the command and the figures.
//!
//! Timed twice: the experts' products by the backend (gemm on flex), then from weights packed
//! once for the CPU's own product (`Projection::packed`, where the processor has AVX-512).
//!
//!     cargo run --release --example moe_speed -- [--tokens 256] [--repeats 20] [--backend flex]

use std::time::Instant;

use attnzoo_backends::DeviceArgs;
use attnzoo_models::quant::Projection;
use attnzoo_models::transformer::SparseMoeConfig;
use burn::tensor::{Distribution, Tensor};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Tokens in the batch (batch 1).
    #[arg(long, default_value_t = 256)]
    tokens: usize,
    /// Timed forwards, after 3 untimed ones.
    #[arg(long, default_value_t = 20)]
    repeats: usize,
    #[command(flatten)]
    device: DeviceArgs,
}

fn main() {
    let args = Args::parse();
    if args.tokens == 0 || args.repeats == 0 {
        eprintln!("moe_speed: --tokens and --repeats must be at least 1");
        std::process::exit(2);
    }
    let (backend, device) = match args.device.open() {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("moe_speed: {error}");
            std::process::exit(2);
        }
    };
    let moe = SparseMoeConfig::new(512, 1792, 8, 2)
        .try_init(&device)
        .expect("a valid block");
    let x = Tensor::<3>::random(
        [1, args.tokens, 512],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    let packed = moe
        .clone()
        .map_projections(|linear| Projection::from(linear).packed());
    time_forwards("gemm", &backend, &args, || {
        moe.forward(x.clone()).into_data()
    });
    if matches!(packed.experts[0].up_proj, Projection::Packed(_)) {
        time_forwards("packed", &backend, &args, || {
            packed.forward(x.clone()).into_data()
        });
    } else {
        println!("packed: this processor has no AVX-512 (the experts stay with gemm)");
    }
}

/// Times `forward` `--repeats` times after 3 untimed calls and prints min and median.
fn time_forwards<T>(
    experts: &str,
    backend: &impl std::fmt::Display,
    args: &Args,
    forward: impl Fn() -> T,
) {
    let mut times = Vec::new();
    for round in 0..args.repeats + 3 {
        let start = Instant::now();
        let _ = forward();
        if round >= 3 {
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    times.sort_by(f64::total_cmp);
    println!(
        "attnzoo {backend} moe forward [1, {}, 512], 8 experts top-2, {experts} experts: min {:.2} ms, median {:.2} ms over {}",
        args.tokens,
        times[0],
        times[times.len() / 2],
        times.len()
    );
}
