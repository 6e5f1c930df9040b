//! Decoder language models from Hugging Face folders — Llama, Mistral, Qwen2, Qwen3, Gemma 2 and 3,
//! DeepSeek-V3, Mixtral, Qwen3-MoE, SmolLM3, OLMo 2, gpt-oss, Phi-3, one [`Family`] entry each
//! in [`FAMILIES`] — and from llama.cpp's GGUF files ([`gguf`]: quantized weights
//! kept in their blocks or dequantized), built only from the zoo's mechanisms ([`crate::attention`],
//! [`crate::norm`], [`crate::position`], [`crate::transformer::GatedFeedForward`],
//! [`crate::transformer::SparseMoe`]), with a KV
//! cache and token-by-token generation.

pub mod config;
pub mod family;
pub mod generate;
pub mod gguf;
pub mod model;
pub mod perplexity;

pub use config::{CausalLmConfig, ExpertSettings, LatentWidths};
pub use family::{
    AttentionBias, AttentionKind, ExpertRule, Family, NormPlacement, QkNorm, RopeRule, Sliding,
    SlidingLayers, Softcap, FAMILIES,
};
pub use generate::{argmax, Generation, GenerationConfig, Sampling};
pub use gguf::{gguf_config, GgufWeights};
pub use model::{CausalLm, LayerCache, LmAttention, LmCache, LmFeedForward, LmLayer};
pub use perplexity::Perplexity;
