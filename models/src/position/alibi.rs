//! ALiBi, attention with linear biases (Press et al. 2022): no position embeddings; head `h`
//! adds `−m_h · |i − j|` to the score of query `i` and key `j`, with slopes
//! `m_h = 2^{−8h/n}` for `h = 1..n` (for `n` not a power of two, the paper's interleaving of the
//! slopes of the nearest powers of two).
//!
//! Output: the bias `[1, n_heads, Tq, Tk]` for [`crate::attention::MultiHeadInput::head_bias`].

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};

use crate::error::ensure;
use crate::AttnError;

/// Configuration of [`Alibi`].
///
/// ```
/// use attnzoo_models::attention::{MultiHeadConfig, MultiHeadInput};
/// use attnzoo_models::position::AlibiConfig;
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// let attention = MultiHeadConfig::new(64, 4).try_init(&device)?;
/// let alibi = AlibiConfig::new(4).try_init()?;
/// let bias = alibi.bias(10, 10, 0, &device); // [1, heads, q_len, k_len], added to the scores
/// let x = Tensor::<3>::ones([1, 10, 64], &device);
/// let out = attention.forward(MultiHeadInput::self_attn(x).head_bias(bias).with_weights())?;
/// // The tokens are identical, so only the bias tells them apart: the last query attends
/// // to its neighbour more than to the first token.
/// let last_row = out.weights.unwrap().slice([0..1, 0..1, 9..10, 0..10]).into_data();
/// let last_row = last_row.iter::<f32>().collect::<Vec<_>>();
/// assert!(last_row[8] > last_row[0]);
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct AlibiConfig {
    /// Number of heads.
    pub n_heads: usize,
}

/// The ALiBi slopes. No trained parameters.
#[derive(Module, Debug)]
pub struct Alibi {
    /// `m_h`, one per head.
    #[module(skip)]
    pub slopes: Vec<f64>,
}

impl AlibiConfig {
    /// Computes the slopes.
    pub fn try_init(&self) -> Result<Alibi, AttnError> {
        ensure!(
            self.n_heads >= 1,
            "ALiBi needs at least one head, got {}",
            self.n_heads
        );
        Ok(Alibi {
            slopes: slopes(self.n_heads),
        })
    }
}

fn slopes(n_heads: usize) -> Vec<f64> {
    let power_of_two = |n: usize| -> Vec<f64> {
        let start = 2f64.powf(-8.0 / n as f64);
        (1..=n).map(|h| start.powi(h as i32)).collect()
    };
    if n_heads.is_power_of_two() {
        return power_of_two(n_heads);
    }
    let closest = 1usize << n_heads.ilog2();
    let mut slopes = power_of_two(closest);
    slopes.extend(
        power_of_two(2 * closest)
            .into_iter()
            .step_by(2)
            .take(n_heads - closest),
    );
    slopes
}

impl Alibi {
    /// The bias `[1, n_heads, q_len, k_len]` for queries at positions `offset..offset + q_len`.
    pub fn bias(&self, q_len: usize, k_len: usize, offset: usize, device: &Device) -> Tensor<4> {
        let n_heads = self.slopes.len();
        let mut values = Vec::with_capacity(n_heads * q_len * k_len);
        for slope in &self.slopes {
            for i in offset..offset + q_len {
                values.extend((0..k_len).map(|j| (-slope * i.abs_diff(j) as f64) as f32));
            }
        }
        Tensor::from_data(TensorData::new(values, [1, n_heads, q_len, k_len]), device)
    }
}

#[cfg(test)]
mod tests {
    use super::slopes;

    #[test]
    fn slopes_follow_the_paper() {
        let eight = slopes(8);
        assert_eq!(eight[0], 0.5);
        assert!((eight[7] - 2f64.powi(-8)).abs() < 1e-12);
        // 12 heads: the 8-head slopes, then every other 16-head slope.
        let twelve = slopes(12);
        assert_eq!(twelve.len(), 12);
        assert_eq!(&twelve[..8], &eight[..]);
        assert!((twelve[8] - 2f64.powf(-0.5)).abs() < 1e-12);
    }
}
