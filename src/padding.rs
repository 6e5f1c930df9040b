//! Rows of token ids of different lengths as one padded `[B, L]` tensor and its mask.

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

/// `[B, L]` ids, each row filled up to the longest (at least 1) with `pad`, and the padding mask
/// (`true` = padding, Burn's convention).
pub fn padded(
    rows: &[Vec<usize>],
    pad: usize,
    device: &Device,
) -> (Tensor<2, Int>, Tensor<2, Bool>) {
    let len = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut ids = vec![pad as i64; rows.len() * len];
    let mut padding = vec![true; rows.len() * len];
    for (r, row) in rows.iter().enumerate() {
        for (c, &id) in row.iter().enumerate() {
            ids[r * len + c] = id as i64;
            padding[r * len + c] = false;
        }
    }
    let shape = [rows.len(), len];
    (
        Tensor::from_data(TensorData::new(ids, shape), device),
        Tensor::from_data(TensorData::new(padding, shape), device),
    )
}
