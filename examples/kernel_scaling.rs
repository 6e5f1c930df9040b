//! Linear attention and Performer against exact attention as the length grows: one forward of
//! batch 1, 8 heads of 64, timed (min of `--repeats`) with the process's peak resident memory.
//! One kind and length per process, so that each peak is its own.
//!
//!     cargo run --example kernel_scaling -- --kind linear --len 16384 [--backend flex]
//!
//! `exact` is Burn's fused attention op (flex: a flash kernel in O(T) memory), `linear` is
//! [`LinearAttention`] (`φ = elu + 1`), `performer` is [`Performer`] with `m = ⌊64 ln 64⌋ = 266`
//! features; all non-causal. The other kinds are the remaining variants' cores on the same
//! inputs (dense score matrices), for their forward at one length beside PyTorch's.

use std::time::Instant;

use attnzoo_backends::{peak_resident_mib, DeviceArgs};
use attnzoo_models::attention::{
    AttentionImpl, AttentionInput, DifferentialConfig, LinearAttentionConfig, PerformerConfig,
    RelativePositionConfig, ScaledDotProductConfig, SigmoidAttentionConfig, TalkingHeadsConfig,
};
use attnzoo_models::position::T5RelativeBiasConfig;
use burn::tensor::{Distribution, Tensor};
use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    Exact,
    Linear,
    Performer,
    /// Dense softmax attention plus T5's bias (32 buckets, max distance 128).
    T5,
    /// Sigmoid attention, `b = −ln T`.
    Sigmoid,
    /// Talking heads (mixing before and after the softmax).
    TalkingHeads,
    /// Differential attention (heads of 64 as two halves of 32).
    Differential,
    /// Shaw et al.'s relative representations, clipped at 16.
    Shaw,
}

#[derive(Parser)]
struct Args {
    /// Which attention.
    #[arg(long, value_enum)]
    kind: Kind,
    /// Sequence length T.
    #[arg(long, default_value_t = 4096)]
    len: usize,
    /// Timed forwards (the minimum is reported).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    #[command(flatten)]
    device: DeviceArgs,
}

fn main() {
    let args = Args::parse();
    let (backend, device) = match args.device.open() {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("kernel_scaling: {error}");
            std::process::exit(2);
        }
    };
    let shape = [1, 8, args.len, 64];
    let [q, k, v] = [0; 3].map(|_| Tensor::<4>::random(shape, Distribution::Default, &device));
    let exact = ScaledDotProductConfig::new()
        .with_implementation(AttentionImpl::Fused)
        .try_init()
        .expect("valid");
    let linear = LinearAttentionConfig::new().try_init().expect("valid");
    let performer = PerformerConfig::new(64).try_init(&device).expect("valid");
    let dense = ScaledDotProductConfig::new()
        .with_implementation(AttentionImpl::Dense)
        .try_init()
        .expect("valid");
    let t5 = T5RelativeBiasConfig::new(8)
        .try_init(&device)
        .expect("valid");
    let sigmoid = SigmoidAttentionConfig::new().try_init().expect("valid");
    let talking = TalkingHeadsConfig::new(8).try_init(&device).expect("valid");
    let differential = DifferentialConfig::new(64)
        .try_init(&device)
        .expect("valid");
    let shaw = RelativePositionConfig::new(64, 64, 16)
        .try_init(&device)
        .expect("valid");
    let mut best = f64::INFINITY;
    for _ in 0..args.repeats {
        let input = AttentionInput::new(q.clone(), k.clone(), v.clone());
        let started = Instant::now();
        let context = match args.kind {
            Kind::Exact => exact.forward(input),
            Kind::Linear => linear.forward(input),
            Kind::Performer => performer.forward(input),
            Kind::T5 => dense.forward(input.bias(t5.bias(args.len, args.len, 0))),
            Kind::Sigmoid => sigmoid.forward(input),
            Kind::TalkingHeads => talking.forward(input),
            Kind::Differential => differential.forward(input),
            Kind::Shaw => shaw.forward(input),
        }
        .expect("shapes fit")
        .context;
        let _ = context.into_data();
        best = best.min(started.elapsed().as_secs_f64());
    }
    let name = match args.kind {
        Kind::Exact => "exact",
        Kind::Linear => "linear",
        Kind::Performer => "performer",
        Kind::T5 => "t5",
        Kind::Sigmoid => "sigmoid",
        Kind::TalkingHeads => "talking-heads",
        Kind::Differential => "differential",
        Kind::Shaw => "shaw",
    };
    println!(
        "{name} T={} on {backend}: {:.3} s (min of {}), peak RSS {:.0} MiB",
        args.len,
        best,
        args.repeats,
        peak_resident_mib().unwrap_or(f64::NAN)
    );
}
