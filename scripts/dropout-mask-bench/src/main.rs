//! Dropout's mask as flex and ndarray draw it, through burn-std's `TensorData::random`: a
//! Bernoulli tensor with published burn-std 0.22.1 (one sampler built per element), the same with
//! attnzoo's patch (drawn in bulk), and uniforms (which the patch does not touch) compared with
//! the keep probability in one more pass, as a dropout of attnzoo's own could draw its mask.
//! Prints nanoseconds per element, min, median and max of 15 draws of 2²⁰ elements, three rounds.
use std::hint::black_box;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;

fn bench(label: &str, n: usize, draws: usize, mut draw: impl FnMut() -> usize) {
    let mut times: Vec<f64> = (0..draws)
        .map(|_| {
            let start = Instant::now();
            black_box(draw());
            start.elapsed().as_secs_f64() * 1e9 / n as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "{label:<48} ns/element: min {:.2}  median {:.2}  max {:.2}",
        times[0],
        times[draws / 2],
        times[draws - 1]
    );
}

fn main() {
    let n = 1 << 20;
    let keep = 0.8;
    let mut rng = StdRng::seed_from_u64(42);
    for round in 1..=3 {
        println!("round {round}: {n} elements, keep probability {keep}");
        bench("published 0.22.1: Bernoulli", n, 15, || {
            let bernoulli = published::Distribution::Bernoulli(keep);
            published::TensorData::random::<f32, _, _>([n], bernoulli, &mut rng).num_elements()
        });
        bench("vendor/burn-std: Bernoulli in bulk", n, 15, || {
            let bernoulli = patched::Distribution::Bernoulli(keep);
            patched::TensorData::random::<f32, _, _>([n], bernoulli, &mut rng).num_elements()
        });
        bench("published 0.22.1: uniforms, compared with keep", n, 15, || {
            let uniform = published::Distribution::Default;
            let data = published::TensorData::random::<f32, _, _>([n], uniform, &mut rng);
            let keep = keep as f32;
            let mask: Vec<f32> = data
                .as_slice::<f32>()
                .expect("f32 data")
                .iter()
                .map(|&u| if u < keep { 1.0 } else { 0.0 })
                .collect();
            mask.len()
        });
    }
}
