//! A sparse mixture of experts (Shazeer et al. 2017, "Outrageously Large Neural Networks"; Jiang
//! et al. 2024, "Mixtral of Experts"): a router scores the experts for each token, the `k` best
//! run on it, and their outputs are summed, weighted by the router:
//!
//! `p = softmax(x W_gateᵀ)`, `S = top_k(p)`, `y = Σ_{e ∈ S} w_e FFN_e(x)`
//!
//! with `w_e = p_e / Σ_{e' ∈ S} p_e'` when the chosen weights are renormalised (Mixtral;
//! Qwen3-MoE's `norm_topk_prob`), else `w_e = p_e`. Each `FFN_e` is a [`GatedFeedForward`]. Only
//! the chosen experts' rows are computed: the tokens are gathered per expert, and each expert's
//! outputs added back at their rows. Ties in `p` go where `torch.topk` puts them
//! (`transformer/torch_top_k.rs` reproduces its CPU kernel).
//!
//! Shapes: `x [.., d_model]` → `[.., d_model]`; `W_gate [n_experts, d_model]` (`transformers`'
//! `gate`).

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::softmax;
use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorData};

use super::torch_top_k::torch_top_k;
use super::{GatedActivation, GatedFeedForward, GatedFeedForwardConfig};
use crate::error::ensure;
use crate::quant::Project;
use crate::AttnError;

/// Configuration of [`SparseMoe`].
///
/// ```
/// use attnzoo_models::transformer::SparseMoeConfig;
/// use burn::tensor::{Device, Tensor};
///
/// let device = Device::default();
/// // Mixtral's block at a small width: 8 experts, 2 per token.
/// let moe = SparseMoeConfig::new(32, 48, 8, 2).try_init(&device)?;
/// let y = moe.forward(Tensor::<3>::ones([2, 5, 32], &device));
/// assert_eq!(y.dims(), [2, 5, 32]);
/// # Ok::<(), attnzoo_models::AttnError>(())
/// ```
#[derive(Config, Debug)]
pub struct SparseMoeConfig {
    /// Model width (`hidden_size`).
    pub d_model: usize,
    /// Each expert's hidden width (`intermediate_size`, Qwen3-MoE's `moe_intermediate_size`).
    pub d_ff: usize,
    /// Experts (`num_local_experts`, `num_experts`).
    pub n_experts: usize,
    /// Experts per token (`num_experts_per_tok`).
    pub top_k: usize,
    /// Renormalise the chosen experts' weights to sum to 1 (Mixtral always; Qwen3-MoE's
    /// `norm_topk_prob`).
    #[config(default = true)]
    pub renormalize: bool,
    /// The experts' gate non-linearity: SiLU (SwiGLU) by default.
    #[config(default = "GatedActivation::Silu")]
    pub activation: GatedActivation,
}

/// The router and the experts; see the module docs.
#[derive(Module, Debug)]
pub struct SparseMoe<P: Project = Linear> {
    /// The router `W_gate`: `d_model → n_experts`, no bias.
    pub gate: P,
    /// The experts.
    pub experts: Vec<GatedFeedForward<P>>,
    /// Experts per token.
    #[module(skip)]
    pub top_k: usize,
    /// Whether the chosen weights are renormalised.
    #[module(skip)]
    pub renormalize: bool,
}

impl SparseMoeConfig {
    /// Builds the block, checking the sizes.
    pub fn try_init(&self, device: &Device) -> Result<SparseMoe, AttnError> {
        ensure!(
            self.n_experts >= 1,
            "a mixture of experts needs at least 1 expert, got {}",
            self.n_experts
        );
        ensure!(
            (1..=self.n_experts).contains(&self.top_k),
            "experts per token {} must be 1 to the {} experts",
            self.top_k,
            self.n_experts
        );
        let expert =
            GatedFeedForwardConfig::new(self.d_model, self.d_ff).with_activation(self.activation);
        Ok(SparseMoe {
            gate: LinearConfig::new(self.d_model, self.n_experts)
                .with_bias(false)
                .init(device),
            experts: (0..self.n_experts)
                .map(|_| expert.try_init(device))
                .collect::<Result<_, _>>()?,
            top_k: self.top_k,
            renormalize: self.renormalize,
        })
    }
}

impl<P: Project> SparseMoe<P> {
    /// The same module with each projection passed through `f`.
    pub fn map_projections<Q: Project>(self, mut f: impl FnMut(P) -> Q) -> SparseMoe<Q> {
        SparseMoe {
            gate: f(self.gate),
            experts: self
                .experts
                .into_iter()
                .map(|expert| expert.map_projections(&mut f))
                .collect(),
            top_k: self.top_k,
            renormalize: self.renormalize,
        }
    }

    /// `x [.., d_model]` → `[.., d_model]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let dims = x.dims();
        let width = dims[D - 1];
        let rows: usize = dims[..D - 1].iter().product();
        let device = x.device();
        let x = x.reshape([rows, width]);
        let probabilities = softmax(self.gate.project(x.clone()), 1); // [N, E]
        let n_experts = self.experts.len();
        let chosen: Vec<usize> = probabilities
            .clone()
            .into_data()
            .convert::<f32>()
            .try_to_vec::<f32>()
            .expect("a float tensor reads back as f32")
            .chunks(n_experts)
            .flat_map(|row| torch_top_k(row, self.top_k))
            .collect();
        // The chosen weights, gathered from the probabilities so that gradients reach the router.
        let ids: Vec<i64> = chosen.iter().map(|&e| e as i64).collect();
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [rows, self.top_k]), &device);
        let mut weights = probabilities.gather(1, ids); // [N, k]
        if self.renormalize {
            weights = weights.clone() / weights.sum_dim(1);
        }
        let weights = weights.reshape([rows * self.top_k, 1]);
        let mut y = Tensor::<2>::zeros([rows, width], &device);
        for (e, expert) in self.experts.iter().enumerate() {
            // (row, slot) of every choice of expert e.
            let slots: Vec<usize> = (0..rows * self.top_k).filter(|&s| chosen[s] == e).collect();
            if slots.is_empty() {
                continue;
            }
            let index = |values: Vec<i64>| {
                let n = values.len();
                Tensor::<1, Int>::from_data(TensorData::new(values, [n]), &device)
            };
            let token_rows = index(slots.iter().map(|&s| (s / self.top_k) as i64).collect());
            let slot_rows = index(slots.iter().map(|&s| s as i64).collect());
            let out = expert.forward(x.clone().select(0, token_rows.clone()))
                * weights.clone().select(0, slot_rows);
            y = y.select_assign(0, token_rows, out, IndexingUpdateOp::Add);
        }
        y.reshape(dims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With one expert per token and no renormalisation, each row is that expert's output times
    /// its probability; an expert no token chose contributes nothing (its weights may be anything).
    #[test]
    fn each_token_gets_only_its_chosen_experts() {
        let device = Device::default();
        let moe = SparseMoeConfig::new(6, 5, 3, 1)
            .with_renormalize(false)
            .try_init(&device)
            .unwrap();
        let x = Tensor::<2>::random(
            [7, 6],
            burn::tensor::Distribution::Normal(0.0, 1.0),
            &device,
        );
        let y = moe.forward(x.clone());
        let p = softmax(moe.gate.forward(x.clone()), 1);
        let best = p.clone().argmax(1); // [7, 1]
        for row in 0..7 {
            let e = best
                .clone()
                .slice([row..row + 1, 0..1])
                .into_scalar::<i64>() as usize;
            let weight = p.clone().slice([row..row + 1, e..e + 1]);
            let want = moe.experts[e].forward(x.clone().slice([row..row + 1, 0..6])) * weight;
            let got = y.clone().slice([row..row + 1, 0..6]);
            got.into_data().assert_approx_eq::<f32>(
                &want.into_data(),
                burn::tensor::Tolerance::absolute(1e-6),
            );
        }
    }

    #[test]
    fn bad_sizes_are_named() {
        let device = Device::default();
        let error = SparseMoeConfig::new(4, 4, 2, 3)
            .try_init(&device)
            .unwrap_err();
        assert!(error.to_string().contains("experts per token 3"), "{error}");
        let error = SparseMoeConfig::new(4, 4, 0, 1)
            .try_init(&device)
            .unwrap_err();
        assert!(error.to_string().contains("at least 1 expert"), "{error}");
    }
}
