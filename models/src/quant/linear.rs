//! Linear layers and embeddings whose weights stay in their GGUF blocks.
//!
//! `y = x Wᵀ + b` with `W` a [`QuantMatrix`]: on any backend `x` is read back to the host and
//! the product computed from the blocks (a CPU backend reads its own memory; on a GPU this is a
//! correct but slow fallback: dequantize at load there instead). [`Projection`] is the linear
//! layer of a module that may hold either kind; [`Project`] is what the attention and
//! feed-forward modules ask of their projections.

use burn::module::{Module, ModuleDisplay, Param};
use burn::nn::{Embedding, Linear};
use burn::tensor::{Int, Tensor, TensorData};

use super::{PackedMatrix, QuantMatrix};

/// Rows of `x` up to which a product dots each block with every row (decoding); past it the
/// weight is dequantized a tile at a time and multiplied as floats.
const SMALL_BATCH: usize = 8;

/// Floats in one dequantized tile of a weight (16 MiB).
const TILE_FLOATS: usize = 4 << 20;

/// What a module asks of a linear projection: `x [.., d_in]` → `[.., d_out]`.
pub trait Project: Module + ModuleDisplay {
    /// `x [.., d_in]` → `[.., d_out]`.
    fn project<const D: usize>(&self, x: Tensor<D>) -> Tensor<D>;
    /// Input features.
    fn d_in(&self) -> usize;
    /// Output features.
    fn d_out(&self) -> usize;
    /// Whether the product runs on this process's threads from a weight held on the host
    /// (quantized or packed), whatever the backend: independent products may then run side by
    /// side.
    fn multiplies_on_host(&self) -> bool {
        false
    }
}

impl Project for Linear {
    fn project<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        self.forward(x)
    }
    fn d_in(&self) -> usize {
        self.weight.dims()[0]
    }
    fn d_out(&self) -> usize {
        self.weight.dims()[1]
    }
}

/// A linear layer with its weight in GGUF blocks; the bias (GGUF stores biases as floats) is a
/// parameter.
#[derive(Module, Debug)]
pub struct QuantizedLinear {
    /// `W [d_out, d_in]`.
    #[module(skip)]
    pub weight: QuantMatrix,
    /// `b [d_out]`.
    pub bias: Option<Param<Tensor<1>>>,
}

impl QuantizedLinear {
    /// `x [.., d_in]` → `[.., d_out]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let y = quantized_product(&self.weight, x);
        match &self.bias {
            Some(bias) => y + bias.val().unsqueeze(),
            None => y,
        }
    }
}

/// `x [.., cols]` → `x Wᵀ [.., rows]`, from the blocks; see the module docs.
pub fn quantized_product<const D: usize>(weight: &QuantMatrix, x: Tensor<D>) -> Tensor<D> {
    let dims = x.dims();
    let cols = dims[D - 1];
    assert_eq!(
        cols, weight.cols,
        "input width {cols} is not the weight's {}",
        weight.cols
    );
    let n = dims[..D - 1].iter().product::<usize>();
    let device = x.device();
    let mut out_dims = dims;
    out_dims[D - 1] = weight.rows;
    if n <= SMALL_BATCH {
        return host_product(x, weight.rows, |x, n| weight.matmul_small(x, n));
    }
    let x = x.reshape([n, cols]);
    let tile = (TILE_FLOATS / cols).max(1);
    let tiles: Vec<Tensor<2>> = (0..weight.rows)
        .step_by(tile)
        .map(|start| {
            let rows = start..(start + tile).min(weight.rows);
            let w = Tensor::<2>::from_data(
                TensorData::new(weight.dequantize_rows(rows.clone()), [rows.len(), cols]),
                &device,
            );
            x.clone().matmul(w.transpose())
        })
        .collect();
    Tensor::cat(tiles, 1).reshape(out_dims)
}

/// `x [.., d_in]` → `product(x, n) [.., d_out]`: `x` read back to the host as `n` rows, the
/// product's rows made a tensor on `x`'s device.
fn host_product<const D: usize>(
    x: Tensor<D>,
    d_out: usize,
    product: impl FnOnce(&[f32], usize) -> Vec<f32>,
) -> Tensor<D> {
    let mut dims = x.dims();
    let n = dims[..D - 1].iter().product::<usize>();
    dims[D - 1] = d_out;
    let device = x.device();
    let x = host_floats(x);
    Tensor::from_data(TensorData::new(product(&x, n), dims), &device)
}

/// A float tensor's values on the host, as f32, row-major.
pub(crate) fn host_floats<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .try_into_vec()
        .expect("a float tensor reads back as f32")
}

/// A linear layer whose weight is packed in panels for the CPU's own product
/// ([`PackedMatrix`]), for inference: no gradient reaches it. `x` is read back to the host, as
/// for [`QuantizedLinear`].
#[derive(Module, Debug)]
pub struct PackedLinear {
    /// `W [d_in, d_out]`.
    #[module(skip)]
    pub weight: PackedMatrix,
    /// `b [d_out]`.
    pub bias: Option<Param<Tensor<1>>>,
}

impl PackedLinear {
    /// `linear`'s weight packed, its bias kept.
    pub fn new(linear: Linear) -> PackedLinear {
        let [d_in, d_out] = linear.weight.dims();
        let w = host_floats(linear.weight.val());
        PackedLinear {
            weight: PackedMatrix::new(&w, d_in, d_out),
            bias: linear.bias,
        }
    }

    /// `x [.., d_in]` → `[.., d_out]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let y = host_product(x, self.weight.d_out, |x, n| self.weight.matmul(x, n));
        match &self.bias {
            Some(bias) => y + bias.val().unsqueeze(),
            None => y,
        }
    }
}

/// A linear layer with a float, a quantized or a packed weight.
// Built once per layer: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum Projection {
    /// Burn's `Linear` (weight `[d_in, d_out]`).
    Dense(Linear),
    /// Weight kept in GGUF blocks.
    Quantized(QuantizedLinear),
    /// Weight packed for the CPU's own product (inference).
    Packed(PackedLinear),
}

impl Projection {
    /// A float layer's weight packed for the CPU's own product where that is faster than
    /// gemm's ([`PackedMatrix::is_fast`]); any other layer as it is.
    pub fn packed(self) -> Projection {
        match self {
            Projection::Dense(linear) if PackedMatrix::is_fast() => {
                Projection::Packed(PackedLinear::new(linear))
            }
            other => other,
        }
    }
}

impl Project for Projection {
    fn project<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Projection::Dense(linear) => linear.forward(x),
            Projection::Quantized(linear) => linear.forward(x),
            Projection::Packed(linear) => linear.forward(x),
        }
    }
    fn d_in(&self) -> usize {
        match self {
            Projection::Dense(linear) => linear.d_in(),
            Projection::Quantized(linear) => linear.weight.cols,
            Projection::Packed(linear) => linear.weight.d_in,
        }
    }
    fn d_out(&self) -> usize {
        match self {
            Projection::Dense(linear) => linear.d_out(),
            Projection::Quantized(linear) => linear.weight.rows,
            Projection::Packed(linear) => linear.weight.d_out,
        }
    }
    fn multiplies_on_host(&self) -> bool {
        !matches!(self, Projection::Dense(_))
    }
}

impl From<Linear> for Projection {
    fn from(linear: Linear) -> Self {
        Projection::Dense(linear)
    }
}

/// Token embeddings `E [vocab, D]`, as floats or in GGUF blocks (whose rows are dequantized as
/// they are looked up). A tied output head multiplies by the same matrix.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum TokenEmbedding {
    /// Burn's `Embedding`.
    Dense(Embedding),
    /// Rows kept in GGUF blocks.
    Quantized(QuantizedEmbedding),
}

/// Embeddings kept in GGUF blocks.
#[derive(Module, Debug)]
pub struct QuantizedEmbedding {
    /// `E [vocab, D]`.
    #[module(skip)]
    pub weight: QuantMatrix,
}

impl TokenEmbedding {
    /// `ids [B, T]` (checked to be below the vocabulary size by the caller) → `[B, T, D]`.
    pub fn forward(&self, ids: Tensor<2, Int>) -> Tensor<3> {
        match self {
            TokenEmbedding::Dense(embedding) => embedding.forward(ids),
            TokenEmbedding::Quantized(embedding) => {
                let [batch, len] = ids.dims();
                let device = ids.device();
                let ids: Vec<usize> = ids
                    .into_data()
                    .iter::<i64>()
                    .map(|id| id as usize)
                    .collect();
                let rows = embedding.weight.gather_rows(&ids);
                Tensor::from_data(
                    TensorData::new(rows, [batch, len, embedding.weight.cols]),
                    &device,
                )
            }
        }
    }

    /// `[vocab, D]`.
    pub fn dims(&self) -> [usize; 2] {
        match self {
            TokenEmbedding::Dense(embedding) => embedding.weight.dims(),
            TokenEmbedding::Quantized(embedding) => [embedding.weight.rows, embedding.weight.cols],
        }
    }

    /// The tied output head: `hidden [B, T, D]` → `hidden Eᵀ [B, T, vocab]`.
    pub fn attend(&self, hidden: Tensor<3>) -> Tensor<3> {
        match self {
            TokenEmbedding::Dense(embedding) => {
                let [batch, len, width] = hidden.dims();
                let weight = embedding.weight.val(); // [vocab, D]
                let vocab = weight.dims()[0];
                hidden
                    .reshape([batch * len, width])
                    .matmul(weight.transpose())
                    .reshape([batch, len, vocab])
            }
            TokenEmbedding::Quantized(embedding) => quantized_product(&embedding.weight, hidden),
        }
    }
}
