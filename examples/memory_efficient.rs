//! Exact attention at long sequence lengths with the chunked (memory-efficient) path, reporting
//! time and the process's peak resident memory.
//!
//!     cargo run --release --example memory_efficient -- [--len 16384] [--backend ndarray]
//!
//! Shapes: batch 1, 8 heads of 64. The dense path would hold an 8 × T × T score matrix
//! (8 GiB at T = 16384); the chunked path holds 8 × 512 × 512 scores at a time.

use std::time::Instant;

use attnzoo_backends::DeviceArgs;
use attnzoo_models::attention::{AttentionImpl, AttentionInput, ScaledDotProductConfig};
use burn::tensor::{Distribution, Tensor};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Sequence length T.
    #[arg(long, default_value_t = 16384)]
    len: usize,
    #[command(flatten)]
    device: DeviceArgs,
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

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
    let attention = ScaledDotProductConfig::new()
        .with_implementation(AttentionImpl::CHUNKED)
        .try_init()
        .unwrap();
    let start = Instant::now();
    let context = attention
        .forward(AttentionInput::new(q, k, v))
        .unwrap()
        .context;
    let checksum: f32 = context.sum().into_scalar();
    println!(
        "{backend}: T={} chunked exact attention in {:.1} s, checksum {checksum:.3}, peak RSS {:.0} MiB",
        args.len,
        start.elapsed().as_secs_f64(),
        peak_rss_mib().unwrap_or(f64::NAN)
    );
}
