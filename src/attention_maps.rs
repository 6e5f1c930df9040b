//! Attention as plain numbers for people to look at: one head's map, the mean over heads, and
//! attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").
//!
//! Rollout follows attention through a stack, counting the residual connection as half of each
//! layer: `Ã_l = ½·mean_h(A_l) + ½·I` with rows renormalised, `R = Ã_L · … · Ã_1` (`[T, T]`).
//! Row `i` of `R` says how much of token `i`'s last representation flows from each input token.
//! For cross-attention, [`rollout_through`] composes the last layer's head-mean `[T, S]` with the
//! encoder's rollout `[S, S]`: which *source words* each output step draws on, through the
//! encoder's mixing.

use burn::tensor::Tensor;

use crate::error::{Error, Result};

/// One map, `[query][key]`: each row a distribution over the keys.
pub type Matrix = Vec<Vec<f32>>;

/// Maps per layer and head: `[layer][head][query][key]`.
pub type AttentionMaps = Vec<Vec<Matrix>>;

/// Batch row 0 of each layer's `[B, h, q, k]` weights, as numbers.
pub fn maps_of(weights: Vec<Tensor<4>>) -> Result<AttentionMaps> {
    weights
        .into_iter()
        .map(|layer| {
            let [_, heads, queries, keys] = layer.dims();
            let values = layer
                .narrow(0, 0, 1)
                .into_data()
                .convert::<f32>()
                .try_to_vec::<f32>()
                .map_err(|error| Error::Input(format!("reading attention weights: {error:?}")))?;
            Ok(values
                .chunks(queries * keys.max(1))
                .take(heads)
                .map(|head| head.chunks(keys.max(1)).map(<[f32]>::to_vec).collect())
                .collect())
        })
        .collect()
}

/// The mean of a layer's heads, `[query][key]`; empty for no heads.
pub fn head_mean(heads: &[Matrix]) -> Matrix {
    let Some(first) = heads.first() else {
        return Vec::new();
    };
    let scale = 1.0 / heads.len() as f32;
    (0..first.len())
        .map(|row| {
            (0..first[row].len())
                .map(|col| heads.iter().map(|head| head[row][col]).sum::<f32>() * scale)
                .collect()
        })
        .collect()
}

/// Attention rollout of a self-attention stack, `[T][T]`; `None` for no layers.
pub fn rollout(layers: &AttentionMaps) -> Option<Matrix> {
    layers.iter().fold(None, |flow: Option<Matrix>, heads| {
        let mut mixed = head_mean(heads);
        for (i, row) in mixed.iter_mut().enumerate() {
            for value in row.iter_mut() {
                *value *= 0.5;
            }
            if let Some(diagonal) = row.get_mut(i) {
                *diagonal += 0.5;
            }
            let total: f32 = row.iter().sum();
            if total > 0.0 {
                row.iter_mut().for_each(|value| *value /= total);
            }
        }
        Some(match flow {
            None => mixed,
            Some(flow) => product(&mixed, &flow),
        })
    })
}

/// Cross-attention rollout, `[T][S]`: the last layer's head-mean cross-attention, times the
/// encoder's rollout when there is one (a Transformer) — as is, for an RNN's alignment.
/// `None` for a model without attention.
pub fn rollout_through(cross: &AttentionMaps, encoder_rollout: Option<&Matrix>) -> Option<Matrix> {
    let last = head_mean(cross.last()?);
    Some(match encoder_rollout {
        Some(encoder) => product(&last, encoder),
        None => last,
    })
}

/// `a · b` for `a [n][m]`, `b [m][k]`.
fn product(a: &Matrix, b: &Matrix) -> Matrix {
    let cols = b.first().map_or(0, Vec::len);
    a.iter()
        .map(|row| {
            (0..cols)
                .map(|col| row.iter().zip(b).map(|(x, b_row)| x * b_row[col]).sum())
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};

    fn assert_rows_sum_to_one(matrix: &Matrix) {
        for row in matrix {
            let total: f32 = row.iter().sum();
            assert!((total - 1.0).abs() < 1e-5, "row sums to {total}");
        }
    }

    #[test]
    fn one_identity_layer_rolls_out_to_the_identity() {
        let identity = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        assert_eq!(rollout(&vec![vec![identity.clone()]]), Some(identity));
        assert_eq!(rollout(&Vec::new()), None);
    }

    #[test]
    fn rollout_mixes_residual_and_attention_and_multiplies_layers() {
        // Two heads averaging to "everyone looks at token 0".
        let to_first = vec![vec![1.0, 0.0], vec![1.0, 0.0]];
        let layer = vec![to_first.clone(), to_first];
        let one = rollout(&vec![layer.clone()]).unwrap();
        assert_eq!(one, vec![vec![1.0, 0.0], vec![0.5, 0.5]]);
        let two = rollout(&vec![layer.clone(), layer]).unwrap();
        // Ã·Ã: token 1 keeps ½·½ of itself.
        assert_eq!(two, vec![vec![1.0, 0.0], vec![0.75, 0.25]]);
        assert_rows_sum_to_one(&two);
    }

    #[test]
    fn cross_rollout_composes_with_the_encoder() {
        let cross = vec![vec![vec![vec![0.0, 1.0]]]];
        let encoder = vec![vec![1.0, 0.0], vec![0.5, 0.5]];
        assert_eq!(
            rollout_through(&cross, Some(&encoder)),
            Some(vec![vec![0.5, 0.5]])
        );
        assert_eq!(rollout_through(&cross, None), Some(vec![vec![0.0, 1.0]]));
        assert_eq!(rollout_through(&Vec::new(), None), None);
    }

    #[test]
    fn maps_are_read_layer_head_query_key() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let values: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let tensor = Tensor::<1>::from_floats(values.as_slice(), &device).reshape([1, 2, 3, 2]);
        let maps = maps_of(vec![tensor]).unwrap();
        assert_eq!(maps.len(), 1);
        assert_eq!(maps[0].len(), 2);
        assert_eq!(
            maps[0][1],
            vec![vec![6.0, 7.0], vec![8.0, 9.0], vec![10.0, 11.0]]
        );
        assert_eq!(
            head_mean(&maps[0]),
            vec![vec![3.0, 4.0], vec![5.0, 6.0], vec![7.0, 8.0]]
        );
    }
}
