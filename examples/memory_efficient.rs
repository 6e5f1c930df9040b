//! Exact attention at long sequence lengths without a `T × T` score matrix, reporting time and
//! the process's peak resident memory. `scripts/memory_efficient_torch.py` is the same in PyTorch.
//!
//!     cargo run --release --example memory_efficient -- [--len 16384] [--causal | --window 1024] [--fused] [--backend tch]
//!
//! Shapes: batch 1, 8 heads of 64. The dense path would hold an 8 × T × T score matrix
//! (8 GiB at T = 16384). The chunked path (the default) holds 8 × 512 × 512 scores at a time on
//! every backend and skips the blocks a causal mask hides. `--fused` runs Burn's fused attention
//! op instead: PyTorch's `scaled_dot_product_attention` on tch and a flash kernel on flex, both in
//! O(T) memory; on ndarray and wgpu it materialises the scores. `--window W` is causal
//! sliding-window attention (Mistral, Gemma 2: each query sees itself and the `W` keys before
//! it): the chunked path computes only the blocks within the window, O(T · W) time.

use std::time::Instant;

use attnzoo_backends::{peak_resident_mib, DeviceArgs, ZeroWritingAllocator};
use attnzoo_models::attention::{
    AttentionImpl, AttentionInput, KeyPattern, ScaledDotProductConfig,
};
use burn::tensor::{Distribution, Tensor};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Sequence length T.
    #[arg(long, default_value_t = 16384)]
    len: usize,
    /// Each query attends to itself and the keys before it.
    #[arg(long, conflicts_with = "window")]
    causal: bool,
    /// Causal sliding-window attention over this many earlier keys.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    window: Option<u64>,
    /// Burn's fused attention op instead of the chunked path.
    #[arg(long)]
    fused: bool,
    #[command(flatten)]
    device: DeviceArgs,
}

/// As the command line: zeroed memory written ([`ZeroWritingAllocator`]).
#[global_allocator]
static ALLOCATOR: ZeroWritingAllocator = ZeroWritingAllocator;

fn main() {
    let args = Args::parse();
    let (backend, device) = match args.device.open() {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("memory_efficient: {error}");
            std::process::exit(2);
        }
    };
    let shape = [1, 8, args.len, 64];
    let q = Tensor::<4>::random(shape, Distribution::Default, &device);
    let k = Tensor::<4>::random(shape, Distribution::Default, &device);
    let v = Tensor::<4>::random(shape, Distribution::Default, &device);
    let (path, implementation) = match args.fused {
        true => ("fused", AttentionImpl::Fused),
        false => ("chunked", AttentionImpl::CHUNKED),
    };
    let (mask, pattern) = match (args.window, args.causal) {
        (Some(window), _) => (
            format!("sliding-window ({window})"),
            KeyPattern::Window {
                window: window as usize,
                causal: true,
            },
        ),
        (None, true) => ("causal".to_string(), KeyPattern::Causal),
        (None, false) => ("full".to_string(), KeyPattern::Full),
    };
    let attention = ScaledDotProductConfig::new()
        .with_pattern(pattern)
        .with_implementation(implementation)
        .try_init()
        .unwrap();
    let start = Instant::now();
    let context = match attention.forward(AttentionInput::new(q, k, v)) {
        Ok(output) => output.context,
        Err(error) => {
            eprintln!("memory_efficient: {error}");
            std::process::exit(2);
        }
    };
    let checksum: f32 = context.sum().into_scalar();
    println!(
        "{backend}: T={} {mask} exact attention, {path}, in {:.2} s, checksum {checksum:.3}, peak RSS {:.0} MiB",
        args.len,
        start.elapsed().as_secs_f64(),
        peak_resident_mib().unwrap_or(f64::NAN)
    );
}
