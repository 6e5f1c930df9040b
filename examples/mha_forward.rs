//! The multi-head attention forward of the README's PyTorch comparison (B = 8, T = 256, D = 512,
//! 8 heads, self-attention), each pass timed alone: the fastest and the median of `--passes`,
//! which a busy virtual machine disturbs less than a mean. `scripts/bench_torch.py --passes N`
//! times PyTorch's `nn.MultiheadAttention` the same way.
//!
//!     cargo run --release --features tch,flex --example mha_forward -- --backend flex --passes 300

use std::time::Instant;

use attnzoo_backends::{keep_freed_memory, DeviceArgs, ZeroWritingAllocator};
use attnzoo_models::attention::{MultiHeadConfig, MultiHeadInput};
use burn::tensor::{Distribution, Tensor};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Passes timed, after five untimed ones.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    passes: u32,
    #[command(flatten)]
    device: DeviceArgs,
}

/// As the command line and the bench: zeroed memory written ([`ZeroWritingAllocator`]).
#[global_allocator]
static ALLOCATOR: ZeroWritingAllocator = ZeroWritingAllocator;

fn main() {
    let args = Args::parse();
    keep_freed_memory();
    let (backend, device) = args.device.open().unwrap_or_else(|error| {
        eprintln!("mha_forward: {error}");
        std::process::exit(2);
    });
    let x = Tensor::<3>::random([8, 256, 512], Distribution::Default, &device);
    let module = MultiHeadConfig::new(512, 8)
        .try_init(&device)
        .expect("a valid config");
    // Until the device has finished the pass (CPU backends run eagerly), and the output freed,
    // as PyTorch's script frees its own: no copy of the output into `TensorData`.
    let pass = || {
        let start = Instant::now();
        let context = module
            .forward(MultiHeadInput::self_attn(x.clone()))
            .expect("valid inputs")
            .context;
        device.sync().expect("the device finishes the pass");
        drop(context);
        start.elapsed().as_secs_f64() * 1e3
    };
    (0..5).for_each(|_| {
        pass();
    });
    let mut ms: Vec<f64> = (0..args.passes).map(|_| pass()).collect();
    ms.sort_by(f64::total_cmp);
    println!(
        "{backend} mha_b8_t256 forward: min {:.2} ms, median {:.2} ms over {} passes",
        ms[0],
        ms[ms.len() / 2],
        ms.len()
    );
}
