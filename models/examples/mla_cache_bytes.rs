//! KV-cache bytes per token and layer: multi-head latent attention (DeepSeek-V2/V3) against
//! multi-head (MHA), grouped-query (GQA) and multi-query (MQA) attention of the same model width
//! and heads (with heads of `d_model / n_heads`, and of MLA's `qk_nope_head_dim` as DeepSeek-V2's
//! Table 1 compares), each read from its cache's tensors after a two-token prompt (f32, one
//! sequence).
//!
//! ```text
//! cargo run -p attnzoo-models --example mla_cache_bytes            # the tiny config
//! cargo run -p attnzoo-models --example mla_cache_bytes -- --v3    # and DeepSeek-V3's shape (~2 GB of weights at a time)
//! ```

use attnzoo_backends::{Backend, DeviceSpec};
use attnzoo_models::attention::{
    KvCache, LatentCache, MultiHeadConfig, MultiHeadInput, MultiHeadLatentConfig,
    MultiHeadLatentInput,
};
use burn::tensor::{Device, Distribution, Tensor};

/// One MLA shape, with the multi-head width it is compared at.
struct Shape {
    name: &'static str,
    d_model: usize,
    n_heads: usize,
    q_lora_rank: Option<usize>,
    kv_lora_rank: usize,
    qk_nope_head_dim: usize,
    qk_rope_head_dim: usize,
    v_head_dim: usize,
    /// Key/value heads of the grouped-query row.
    gqa_kv_heads: usize,
}

const TINY: Shape = Shape {
    name: "tiny (the doc example)",
    d_model: 32,
    n_heads: 4,
    q_lora_rank: Some(12),
    kv_lora_rank: 8,
    qk_nope_head_dim: 6,
    qk_rope_head_dim: 4,
    v_head_dim: 5,
    gqa_kv_heads: 2,
};

const DEEPSEEK_V3: Shape = Shape {
    name: "DeepSeek-V3",
    d_model: 7168,
    n_heads: 128,
    q_lora_rank: Some(1536),
    kv_lora_rank: 512,
    qk_nope_head_dim: 128,
    qk_rope_head_dim: 64,
    v_head_dim: 128,
    gqa_kv_heads: 8,
};

/// Bytes per position of one sequence in a multi-head cache, from its key and value tensors.
fn kv_bytes_per_position(cache: &KvCache) -> usize {
    let (key, value) = cache.tensors().expect("the prompt filled the cache");
    [key, value]
        .iter()
        .map(|t| {
            let [batch, _, len, _] = t.dims();
            t.shape().num_elements() / (batch * len) * t.dtype().size()
        })
        .sum()
}

/// MHA, GQA and MQA rows at heads of `d_model / n_heads` (the same model width) and at MLA's own
/// `qk_nope_head_dim` (the multi-head attention DeepSeek-V2's Table 1 compares with), then MLA.
fn measure(shape: &Shape, device: &Device) -> Vec<(String, usize)> {
    let prompt = Tensor::<3>::random([1, 2, shape.d_model], Distribution::Default, device);
    let mut rows = Vec::new();
    for d_head in [shape.d_model / shape.n_heads, shape.qk_nope_head_dim] {
        for (label, kv_heads) in [
            ("MHA", shape.n_heads),
            ("GQA", shape.gqa_kv_heads),
            ("MQA", 1),
        ] {
            let attention = MultiHeadConfig::new(shape.d_model, shape.n_heads)
                .with_n_kv_heads(Some(kv_heads))
                .with_d_head(Some(d_head))
                .try_init(device)
                .unwrap();
            let mut cache = KvCache::growing();
            attention
                .forward_cached(MultiHeadInput::self_attn(prompt.clone()), &mut cache)
                .unwrap();
            rows.push((
                format!(
                    "{label}, {kv_heads} kv head{} of {d_head}",
                    if kv_heads == 1 { "" } else { "s" }
                ),
                kv_bytes_per_position(&cache),
            ));
        }
    }
    let mla = MultiHeadLatentConfig::new(
        shape.d_model,
        shape.n_heads,
        shape.kv_lora_rank,
        shape.qk_nope_head_dim,
        shape.qk_rope_head_dim,
        shape.v_head_dim,
    )
    .with_q_lora_rank(shape.q_lora_rank)
    .try_init(device)
    .unwrap();
    let mut cache = LatentCache::new();
    mla.forward_cached(MultiHeadLatentInput::new(prompt), &mut cache)
        .unwrap();
    rows.push((
        format!(
            "MLA, latent {} + rotary key {}",
            shape.kv_lora_rank, shape.qk_rope_head_dim
        ),
        cache.bytes_per_position(),
    ));
    rows
}

fn main() {
    let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
    let mut shapes = vec![&TINY];
    if std::env::args().any(|a| a == "--v3") {
        shapes.push(&DEEPSEEK_V3);
    }
    println!(
        "| shape | cache | bytes per token per layer (f32) | vs MHA, heads of d/h | vs MHA, heads of d_nope |"
    );
    println!("|---|---|---:|---:|---:|");
    for shape in shapes {
        let rows = measure(shape, &device);
        // Rows 0 and 3: MHA with heads of `d_model / n_heads` and of `qk_nope_head_dim`.
        let (narrow, wide) = (rows[0].1 as f64, rows[3].1 as f64);
        for (cache, bytes) in rows {
            println!(
                "| {} (d {}, {} heads) | {cache} | {bytes} | {:.3} | {:.3} |",
                shape.name,
                shape.d_model,
                shape.n_heads,
                bytes as f64 / narrow,
                bytes as f64 / wide
            );
        }
    }
}
