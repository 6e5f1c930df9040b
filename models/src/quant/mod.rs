//! Quantized weights as llama.cpp stores them in GGUF files (Dettmers et al. 2022 and
//! llama.cpp's block formats): the block types and their exact dequantization ([`GgmlType`]),
//! a matrix kept in its blocks ([`QuantMatrix`]) and the layers that multiply from it
//! ([`QuantizedLinear`], [`Projection`], [`TokenEmbedding`]); and float weights packed once for
//! the CPU's own product ([`PackedMatrix`], [`PackedLinear`]).

mod blocks;
mod dot;
mod linear;
mod matrix;
mod packed;

pub use blocks::{GgmlType, QK_K};
pub(crate) use linear::host_floats;
pub use linear::{
    quantized_product, PackedLinear, Project, Projection, QuantizedEmbedding, QuantizedLinear,
    TokenEmbedding,
};
pub use matrix::{QuantMatrix, SharedBytes};
pub use packed::PackedMatrix;
