//! # attnzoo-models
//!
//! Attention mechanisms written once as Burn 0.22 modules. Burn 0.22 modules are not generic
//! over a backend: the [`Device`](burn::tensor::Device) a module is initialised on decides
//! whether it runs on ndarray, WGPU, LibTorch, flex or CUDA, with or without autodiff.
//!
//! Conventions, everywhere in this crate:
//! - shapes are batch first, `[batch, q_len, d_model]`;
//! - a `Tensor<_, Bool>` mask is `true` where a key **may not** be attended (Burn's convention);
//! - a query whose keys are all masked gets a zero context and zero weights, never NaN;
//! - configs are validated by `try_init`, which returns an [`AttnError`] naming the bad value.

pub mod attention;
mod error;
pub mod finite;
pub mod position;
pub mod seq2seq;
pub mod transformer;

pub use error::AttnError;
