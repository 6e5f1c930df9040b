//! The same tiny encoder trained with each attention variant in turn on a task with a known
//! answer — sorting a sequence of digits — printing a table of steps-to-solve and training
//! tokens per second: the side-by-side comparison a zoo of attention exists for.
//!
//!     cargo run --example variants -- [--len 8] [--batch 32] [--max-steps 1500] [--backend flex]
//!
//! Model: digit embeddings plus learned positions, two pre-norm encoder layers (width 32, 4
//! heads, feed-forward 64, no dropout) whose self-attention is the variant, and a linear read-out
//! per position; Adam at 3·10⁻³, cross-entropy against the sorted sequence. "Solved" is the
//! first evaluation (every 50 steps, on 512 fresh sequences) with at least 99 % of the output
//! digits right; every variant starts from the same seed and sees the same batches.

use std::time::Instant;

use attnzoo_backends::DeviceArgs;
use attnzoo_models::position::{LearnedPosition, LearnedPositionConfig};
use attnzoo_models::transformer::{AttentionVariant, Encoder, EncoderConfig, LayerConfig};
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor, TensorData};
use clap::Parser;

const DIGITS: usize = 10;
const D_MODEL: usize = 32;

#[derive(Parser)]
struct Args {
    /// Sequence length.
    #[arg(long, default_value_t = 8)]
    len: usize,
    /// Sequences per training step.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Give up after this many steps.
    #[arg(long, default_value_t = 1500)]
    max_steps: usize,
    #[command(flatten)]
    device: DeviceArgs,
}

#[derive(Module, Debug)]
struct Sorter {
    embedding: Embedding,
    position: LearnedPosition,
    encoder: Encoder,
    head: Linear,
}

impl Sorter {
    fn new(variant: AttentionVariant, len: usize, device: &Device) -> Sorter {
        let layer = LayerConfig::new(D_MODEL, 4, 2 * D_MODEL)
            .with_dropout(0.0)
            .with_norm_first(true)
            .with_variant(variant);
        Sorter {
            embedding: EmbeddingConfig::new(DIGITS, D_MODEL).init(device),
            position: LearnedPositionConfig::new(D_MODEL, len).init(device),
            encoder: EncoderConfig::new(layer, 2)
                .with_final_norm(true)
                .try_init(device)
                .expect("a valid encoder"),
            head: LinearConfig::new(D_MODEL, DIGITS).init(device),
        }
    }

    /// `[B, T]` digits → logits `[B, T, DIGITS]`.
    fn forward(&self, digits: Tensor<2, Int>) -> Tensor<3> {
        let x = self
            .position
            .forward(self.embedding.forward(digits), 0)
            .expect("length within the positions");
        self.head
            .forward(self.encoder.forward(x, None).expect("shapes fit"))
    }
}

/// xorshift64*, so that every variant sees the same batches without a dependency.
struct Rng(u64);

impl Rng {
    fn digit(&mut self) -> i64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as i64 % DIGITS as i64
    }

    /// Random sequences and their sorted versions, `[batch, len]` each.
    fn batch(
        &mut self,
        batch: usize,
        len: usize,
        device: &Device,
    ) -> (Tensor<2, Int>, Tensor<2, Int>) {
        let mut input = Vec::with_capacity(batch * len);
        let mut sorted = Vec::with_capacity(batch * len);
        for _ in 0..batch {
            let mut row: Vec<i64> = (0..len).map(|_| self.digit()).collect();
            input.extend(&row);
            row.sort_unstable();
            sorted.extend(row);
        }
        let tensor = |v: Vec<i64>| Tensor::from_data(TensorData::new(v, [batch, len]), device);
        (tensor(input), tensor(sorted))
    }
}

struct Outcome {
    solved_at: Option<usize>,
    accuracy: f32,
    tokens_per_second: f64,
}

fn train(variant: AttentionVariant, args: &Args, device: &Device) -> Outcome {
    device.seed(50);
    let mut model = Sorter::new(variant, args.len, device);
    let mut optimizer = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut data = Rng(0x9E37_79B9_7F4A_7C15);
    let mut eval_data = Rng(0xD1B5_4A32_D192_ED03);
    let (eval_input, eval_sorted) = eval_data.batch(512, args.len, device);
    let mut accuracy = 0.0;
    let mut training_seconds = 0.0;
    let mut solved_at = None;
    for step in 1..=args.max_steps {
        let started = Instant::now();
        let (input, sorted) = data.batch(args.batch, args.len, device);
        let logits = model
            .forward(input)
            .reshape([args.batch * args.len, DIGITS]);
        let loss = loss_fn.forward(logits, sorted.reshape([args.batch * args.len]));
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(3e-3, model, grads);
        training_seconds += started.elapsed().as_secs_f64();
        if step % 50 == 0 {
            let predicted = model
                .forward(eval_input.clone())
                .argmax(2)
                .squeeze_dim::<2>(2);
            accuracy = predicted
                .equal(eval_sorted.clone())
                .float()
                .mean()
                .into_scalar::<f32>();
            if accuracy >= 0.99 {
                solved_at = Some(step);
                break;
            }
        }
    }
    let steps = solved_at.unwrap_or(args.max_steps);
    Outcome {
        solved_at,
        accuracy,
        tokens_per_second: (steps * args.batch * args.len) as f64 / training_seconds,
    }
}

fn main() {
    let args = Args::parse();
    let (backend, device) = match args.device.open() {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("variants: {error}");
            std::process::exit(2);
        }
    };
    let device = device.autodiff();
    let variants = [
        ("softmax", AttentionVariant::Softmax),
        (
            "T5 bias",
            AttentionVariant::T5Bias {
                num_buckets: 8,
                max_distance: 16,
            },
        ),
        (
            "Shaw relative",
            AttentionVariant::RelativePosition {
                max_relative_position: 4,
            },
        ),
        ("talking heads", AttentionVariant::TalkingHeads),
        ("sigmoid", AttentionVariant::Sigmoid { n: None }),
        ("differential", AttentionVariant::Differential),
        ("linear", AttentionVariant::Linear),
        (
            "Performer",
            AttentionVariant::Performer { n_features: None },
        ),
    ];
    println!(
        "sorting {} digits, batch {}, on {backend}; solved = 99 % of 512 fresh sequences' digits right",
        args.len, args.batch
    );
    println!("| variant | steps to solve | eval accuracy | training tokens/s |");
    println!("|---|---|---|---|");
    for (name, variant) in variants {
        let outcome = train(variant, &args, &device);
        let solved = match outcome.solved_at {
            Some(step) => step.to_string(),
            None => format!("not in {}", args.max_steps),
        };
        println!(
            "| {name} | {solved} | {:.3} | {:.0} |",
            outcome.accuracy, outcome.tokens_per_second
        );
    }
}
