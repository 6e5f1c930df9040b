//! Every mechanism × sequence length × usable backend, forward and forward+backward.
//!
//!     cargo bench --bench attention --features wgpu,tch,flex [-- FILTER]
//!
//! Names read `mechanism/backend/T/pass`, e.g. `mha_h8/ndarray/512/forward`. Batch 1, width
//! 512, 8 heads of 64 (the alignment mechanisms: hidden 256, one decoder step against T).
//! `mha_b8_t256` is the README's PyTorch comparison (B=8, T=256, D=512, h=8); its PyTorch side is
//! `scripts/bench_torch.py`. Like the command line, the bench keeps freed memory for reuse
//! ([`keep_freed_memory`]) and writes zeroed memory ([`ZeroWritingAllocator`]).

use attnzoo_backends::{keep_freed_memory, probe_all, Device, ZeroWritingAllocator};
use attnzoo_models::attention::{
    AlignmentConfig, AlignmentScore, AttentionImpl, AttentionInput, KeyPattern, LinformerConfig,
    MultiHeadConfig, MultiHeadInput, ScaledDotProductConfig,
};
use burn::tensor::{Distribution, Tensor};
use criterion::{criterion_group, BenchmarkId, Criterion};

const D_MODEL: usize = 512;
const HEADS: usize = 8;

#[derive(Clone, Copy)]
enum Mechanism {
    Dense,
    Fused,
    Chunked,
    MultiHead,
    GroupedQuery,
    Local,
    Strided,
    Linformer,
    Additive,
    LuongGeneral,
}

impl Mechanism {
    const ALL: [Mechanism; 10] = [
        Mechanism::Dense,
        Mechanism::Fused,
        Mechanism::Chunked,
        Mechanism::MultiHead,
        Mechanism::GroupedQuery,
        Mechanism::Local,
        Mechanism::Strided,
        Mechanism::Linformer,
        Mechanism::Additive,
        Mechanism::LuongGeneral,
    ];

    fn name(self) -> &'static str {
        match self {
            Mechanism::Dense => "sdp_dense",
            Mechanism::Fused => "sdp_fused",
            Mechanism::Chunked => "sdp_chunked",
            Mechanism::MultiHead => "mha_h8",
            Mechanism::GroupedQuery => "gqa_h8_kv2",
            Mechanism::Local => "local_w128",
            Mechanism::Strided => "strided_l64",
            Mechanism::Linformer => "linformer_k256",
            Mechanism::Additive => "bahdanau",
            Mechanism::LuongGeneral => "luong_general",
        }
    }

    /// The memory-light mechanisms also run at T = 8192.
    fn lengths(self) -> &'static [usize] {
        match self {
            Mechanism::Chunked | Mechanism::Local | Mechanism::Linformer => &[128, 512, 2048, 8192],
            _ => &[128, 512, 2048],
        }
    }

    /// One forward pass at length `len`; returns a scalar to back-propagate from.
    fn runner(self, len: usize, device: &Device) -> Box<dyn Fn() -> Tensor<1>> {
        let trainable = |t: Tensor<3>| {
            if device.is_autodiff() {
                t.require_grad()
            } else {
                t
            }
        };
        let x = trainable(Tensor::<3>::random(
            [1, len, D_MODEL],
            Distribution::Default,
            device,
        ));
        let heads = move |x: &Tensor<3>| {
            x.clone()
                .reshape([1, len, HEADS, D_MODEL / HEADS])
                .swap_dims(1, 2)
        };
        let sdp = |pattern, implementation| {
            ScaledDotProductConfig::new()
                .with_pattern(pattern)
                .with_implementation(implementation)
                .try_init()
                .unwrap()
        };
        let mha = |n_kv_heads: usize, pattern, implementation| {
            MultiHeadConfig::new(D_MODEL, HEADS)
                .with_n_kv_heads(Some(n_kv_heads))
                .with_attention(
                    ScaledDotProductConfig::new()
                        .with_pattern(pattern)
                        .with_implementation(implementation),
                )
                .try_init(device)
                .unwrap()
        };
        match self {
            Mechanism::Dense | Mechanism::Fused | Mechanism::Chunked => {
                let implementation = match self {
                    Mechanism::Dense => AttentionImpl::Dense,
                    Mechanism::Fused => AttentionImpl::Fused,
                    _ => AttentionImpl::CHUNKED,
                };
                let attention = sdp(KeyPattern::Full, implementation);
                Box::new(move || {
                    attention
                        .forward(AttentionInput::self_attn(heads(&x)))
                        .unwrap()
                        .context
                        .sum()
                })
            }
            Mechanism::MultiHead
            | Mechanism::GroupedQuery
            | Mechanism::Local
            | Mechanism::Strided => {
                let (n_kv, pattern, implementation) = match self {
                    Mechanism::MultiHead => (HEADS, KeyPattern::Full, AttentionImpl::Dense),
                    Mechanism::GroupedQuery => (2, KeyPattern::Full, AttentionImpl::Dense),
                    Mechanism::Local => (
                        HEADS,
                        KeyPattern::Window {
                            window: 128,
                            causal: false,
                        },
                        AttentionImpl::CHUNKED,
                    ),
                    _ => (
                        HEADS,
                        KeyPattern::Strided {
                            stride: 64,
                            summary: 8,
                            causal: true,
                        },
                        AttentionImpl::CHUNKED,
                    ),
                };
                let module = mha(n_kv, pattern, implementation);
                Box::new(move || {
                    module
                        .forward(MultiHeadInput::self_attn(x.clone()))
                        .unwrap()
                        .context
                        .sum()
                })
            }
            Mechanism::Linformer => {
                let module = LinformerConfig::new(D_MODEL, HEADS, len, 256.min(len))
                    .try_init(device)
                    .unwrap();
                Box::new(move || module.forward(x.clone(), None, false).unwrap().0.sum())
            }
            Mechanism::Additive | Mechanism::LuongGeneral => {
                let score = if matches!(self, Mechanism::Additive) {
                    AlignmentScore::Additive
                } else {
                    AlignmentScore::General
                };
                let alignment = AlignmentConfig::new(256, score).try_init(device).unwrap();
                let memory = trainable(Tensor::<3>::random(
                    [1, len, 256],
                    Distribution::Default,
                    device,
                ));
                let query = Tensor::<2>::random([1, 256], Distribution::Default, device);
                Box::new(move || {
                    alignment
                        .step(query.clone(), memory.clone(), None)
                        .unwrap()
                        .context
                        .sum()
                })
            }
        }
    }
}

fn attention(c: &mut Criterion) {
    let backends: Vec<_> = probe_all()
        .into_iter()
        .filter_map(|p| p.device.map(|d| (p.backend, d)))
        .collect();
    let mut group = c.benchmark_group("attention");
    group.sample_size(10);
    for mechanism in Mechanism::ALL {
        for &len in mechanism.lengths() {
            for (backend, device) in &backends {
                for (pass, device) in [
                    ("forward", device.clone()),
                    ("forward_backward", device.clone().autodiff()),
                ] {
                    let id = BenchmarkId::new(
                        format!("{}/{backend}", mechanism.name()),
                        format!("{len}/{pass}"),
                    );
                    group.bench_function(id, |b| {
                        let run = mechanism.runner(len, &device);
                        b.iter(|| {
                            let out = run();
                            if pass == "forward" {
                                out.into_data();
                            } else {
                                let _ = out.backward();
                            }
                        })
                    });
                }
            }
        }
    }
    group.finish();
}

/// The README's comparison with PyTorch: nn.MultiheadAttention at B=8, T=256, D=512, h=8.
fn mha_b8_t256(c: &mut Criterion) {
    let mut group = c.benchmark_group("mha_b8_t256");
    group.sample_size(20);
    for probe in probe_all() {
        let Some(device) = probe.device else { continue };
        let x = Tensor::<3>::random([8, 256, 512], Distribution::Default, &device);
        for (label, implementation) in [
            ("dense", AttentionImpl::Dense),
            ("fused", AttentionImpl::Fused),
        ] {
            let attention = ScaledDotProductConfig::new().with_implementation(implementation);
            let module = MultiHeadConfig::new(512, 8)
                .with_attention(attention)
                .try_init(&device)
                .unwrap();
            group.bench_function(format!("{}/{label}", probe.backend), |b| {
                b.iter(|| {
                    module
                        .forward(MultiHeadInput::self_attn(x.clone()))
                        .unwrap()
                        .context
                        .into_data()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, mha_b8_t256, attention);

#[global_allocator]
static ALLOCATOR: ZeroWritingAllocator = ZeroWritingAllocator;

/// `criterion_main!`, after what the command line does first: freed memory kept for reuse.
fn main() {
    keep_freed_memory();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
