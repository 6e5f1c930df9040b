//! Which scores survive into the softmax: all of them (soft attention), the `k` largest per
//! query (top-k attention, Zhao et al. 2019 "Explicit Sparse Transformer"), or the largest one
//! alone (hard attention, Xu et al. 2015: the context is the value of the arg-max key).
//!
//! `w_i = softmax(s_i restricted to {j : s_ij ≥ s_i^(k)})`, with `s_i^(k)` the k-th largest
//! unmasked score of query `i`; hard attention is `k = 1`, a one-hot weight row. Scores tied with
//! the k-th largest are all kept. Shapes: scores and masks `[.., q_len, k_len]`.

use burn::config::Config;
use burn::tensor::{Bool, Tensor};

use super::masking::MASKED_SCORE;
use crate::error::ensure;
use crate::AttnError;

/// Which scores take part in the softmax.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum Selection {
    /// Every unmasked key (ordinary soft attention).
    Soft,
    /// Only the `k` highest-scoring keys of each query.
    TopK {
        /// Keys kept per query; at least 1.
        k: usize,
    },
    /// Only the highest-scoring key: a one-hot weight row (top-1).
    Hard,
}

impl Selection {
    /// Checks `k`.
    pub fn validate(&self) -> Result<(), AttnError> {
        if let Selection::TopK { k } = *self {
            ensure!(k >= 1, "top-k attention needs k of at least 1, got {k}");
        }
        Ok(())
    }

    /// Extends `mask` (`true` = may not attend) to the keys this selection drops.
    pub fn restrict<const D: usize>(
        &self,
        scores: &Tensor<D>,
        mask: Option<Tensor<D, Bool>>,
    ) -> Option<Tensor<D, Bool>> {
        let k = match *self {
            Selection::Soft => return mask,
            Selection::TopK { k } => k,
            Selection::Hard => 1,
        };
        let k_len = scores.dims()[D - 1];
        if k >= k_len {
            return mask;
        }
        let candidates = match &mask {
            Some(mask) => scores
                .clone()
                .mask_fill(mask.clone().expand(scores.shape()), MASKED_SCORE),
            None => scores.clone(),
        };
        let kth_largest = candidates.clone().topk(k, D - 1).narrow(D - 1, k - 1, 1);
        let dropped = candidates.lower(kth_largest.expand(scores.shape()));
        super::masking::either(mask, Some(dropped))
    }
}
