//! A sparse mixture of experts (Shazeer et al. 2017, "Outrageously Large Neural Networks"; Jiang
//! et al. 2024, "Mixtral of Experts"; DeepSeek-AI 2024, "DeepSeek-V3"): a router scores the
//! experts for each token, the `k` best run on it, and their outputs are summed, weighted by the
//! router, plus shared experts every token runs:
//!
//! `y = Σ_{e ∈ S} w_e FFN_e(x) + FFN_shared(x)`
//!
//! [`Routing::Softmax`] (Mixtral, Qwen3-MoE): `p = softmax(x W_gateᵀ)`, `S = top_k(p)`,
//! `w_e = p_e / Σ_{e' ∈ S} p_e'` when renormalised (Mixtral; Qwen3-MoE's `norm_topk_prob`), else
//! `p_e`; gpt-oss's softmax over the `k` best logits (with the router's bias) is the renormalised
//! case, `exp(l_e) / Σ_{e' ∈ S} exp(l_e')`. [`Routing::SigmoidGroups`] (DeepSeek-V3): `s = σ(x W_gateᵀ)`; the choice from `s + b`
//! (`e_score_correction_bias`, for the choice only) among the experts of the `topk_group` best of
//! `n_group` groups (a group scores the sum of its two best), `w_e = s_e` (over `Σ_S s + 10⁻²⁰`
//! when renormalised) times `routed_scaling_factor`. Each `FFN_e` is a [`GatedFeedForward`]. Only
//! the chosen experts' rows are computed: the tokens are gathered per expert, and each expert's
//! outputs added back at their rows. Ties in `p` go where `torch.topk` puts them
//! (`transformer/torch_top_k.rs` reproduces its CPU kernel).
//!
//! Shapes: `x [.., d_model]` → `[.., d_model]`; `W_gate [n_experts, d_model]` (`transformers`'
//! `gate`).

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::{sigmoid, softmax};
use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorData};
use rayon::prelude::*;

use super::torch_top_k::torch_top_k;
use super::{GatedActivation, GatedFeedForward, GatedFeedForwardConfig};
use crate::error::ensure;
use crate::quant::{host_floats, Project};
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
/// // Read the result: a GPU backend computes asynchronously, and a process that exits while its
/// // device thread still compiles kernels can crash.
/// assert!(y.into_data().iter::<f32>().all(f32::is_finite));
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
    /// How the router chooses and weighs: softmax, renormalised, by default (Mixtral).
    #[config(default = "Routing::Softmax { renormalize: true }")]
    pub routing: Routing,
    /// Hidden width of the shared experts every token runs (DeepSeek's `n_shared_experts ×
    /// moe_intermediate_size`); none by default.
    #[config(default = "None")]
    pub shared_d_ff: Option<usize>,
    /// The experts' gate non-linearity: SiLU (SwiGLU) by default.
    #[config(default = "GatedActivation::Silu")]
    pub activation: GatedActivation,
    /// Biases on the router and the experts' projections (gpt-oss); none by default.
    #[config(default = false)]
    pub bias: bool,
}

/// How a router's scores choose and weigh the experts; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Routing {
    /// Softmax over the experts, the top k, renormalised (Mixtral, gpt-oss) or not (Qwen3-MoE's
    /// `norm_topk_prob` false).
    Softmax {
        /// The chosen weights renormalised to sum to 1.
        renormalize: bool,
    },
    /// DeepSeek-V3's: sigmoid scores, a bias for the choice, the top k within the best groups.
    SigmoidGroups {
        /// `n_group`: the experts split into this many equal groups.
        n_group: usize,
        /// `topk_group`: the groups the choice is made in.
        topk_group: usize,
        /// `norm_topk_prob`.
        renormalize: bool,
        /// `routed_scaling_factor`.
        scaling: f64,
    },
}

/// The router and the experts; see the module docs.
#[derive(Module, Debug)]
pub struct SparseMoe<P: Project = Linear> {
    /// The router `W_gate`: `d_model → n_experts` (a bias for gpt-oss).
    pub gate: P,
    /// The experts.
    pub experts: Vec<GatedFeedForward<P>>,
    /// The shared experts (DeepSeek's `shared_experts`).
    pub shared_experts: Option<GatedFeedForward<P>>,
    /// DeepSeek's `e_score_correction_bias [n_experts]` (a buffer: no gradient), for
    /// [`Routing::SigmoidGroups`].
    pub e_score_correction_bias: Option<Param<Tensor<1>>>,
    /// Experts per token.
    #[module(skip)]
    pub top_k: usize,
    /// How the router chooses and weighs.
    #[module(skip)]
    pub routing: Routing,
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
        if let Routing::SigmoidGroups {
            n_group,
            topk_group,
            scaling,
            ..
        } = self.routing
        {
            ensure!(
                n_group >= 1 && self.n_experts % n_group == 0 && self.n_experts / n_group >= 2,
                "the {} experts do not split into n_group {n_group} groups of at least 2",
                self.n_experts
            );
            ensure!(
                (1..=n_group).contains(&topk_group)
                    && topk_group * (self.n_experts / n_group) >= self.top_k,
                "topk_group {topk_group} must be 1 to n_group {n_group}, its groups holding the {} experts per token",
                self.top_k
            );
            ensure!(
                scaling.is_finite() && scaling > 0.0,
                "routed_scaling_factor {scaling} must be a positive number"
            );
        }
        let expert = GatedFeedForwardConfig::new(self.d_model, self.d_ff)
            .with_activation(self.activation)
            .with_bias(self.bias);
        let grouped = matches!(self.routing, Routing::SigmoidGroups { .. });
        Ok(SparseMoe {
            gate: LinearConfig::new(self.d_model, self.n_experts)
                .with_bias(self.bias)
                .init(device),
            experts: (0..self.n_experts)
                .map(|_| expert.try_init(device))
                .collect::<Result<_, _>>()?,
            shared_experts: self
                .shared_d_ff
                .map(|d_ff| {
                    GatedFeedForwardConfig::new(self.d_model, d_ff)
                        .with_activation(self.activation)
                        .try_init(device)
                })
                .transpose()?,
            e_score_correction_bias: grouped.then(|| {
                Param::from_tensor(Tensor::zeros([self.n_experts], device)).set_require_grad(false)
            }),
            top_k: self.top_k,
            routing: self.routing,
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
            shared_experts: self
                .shared_experts
                .map(|shared| shared.map_projections(&mut f)),
            e_score_correction_bias: self.e_score_correction_bias,
            top_k: self.top_k,
            routing: self.routing,
        }
    }

    /// `x [.., d_model]` → `[.., d_model]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D>
    where
        P: Sync,
    {
        let dims = x.dims();
        let width = dims[D - 1];
        let rows: usize = dims[..D - 1].iter().product();
        let device = x.device();
        let x = x.reshape([rows, width]);
        let n_experts = self.experts.len();
        let logits = self.gate.project(x.clone()); // [N, E]
        let (scores, choosing) = match self.routing {
            Routing::Softmax { .. } => {
                let p = softmax(logits, 1);
                (p.clone(), p)
            }
            Routing::SigmoidGroups { .. } => {
                let s = sigmoid(logits);
                let bias = self
                    .e_score_correction_bias
                    .as_ref()
                    .map(|b| b.val().unsqueeze());
                let choosing = match bias {
                    Some(bias) => s.clone() + bias,
                    None => s.clone(),
                };
                (s, choosing)
            }
        };
        let choosing = host_floats(choosing);
        let chosen: Vec<usize> = choosing
            .chunks(n_experts)
            .flat_map(|row| self.choose(row))
            .collect();
        // The chosen weights, gathered from the scores so that gradients reach the router.
        let ids: Vec<i64> = chosen.iter().map(|&e| e as i64).collect();
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [rows, self.top_k]), &device);
        let mut weights = scores.gather(1, ids); // [N, k]
        match self.routing {
            Routing::Softmax { renormalize: true } => {
                weights = weights.clone() / weights.sum_dim(1);
            }
            Routing::Softmax { renormalize: false } => {}
            Routing::SigmoidGroups {
                renormalize,
                scaling,
                ..
            } => {
                if renormalize {
                    weights = weights.clone() / (weights.sum_dim(1) + 1e-20);
                }
                weights = weights * scaling;
            }
        }
        let weights = weights.reshape([rows * self.top_k, 1]);
        // The slots (row · k + j) of every choice, by expert.
        let mut slots_of = vec![Vec::new(); n_experts];
        for (slot, &e) in chosen.iter().enumerate() {
            slots_of[e].push(slot);
        }
        let mut y = Tensor::<2>::zeros([rows, width], &device);
        let index = |values: Vec<i64>| {
            let n = values.len();
            Tensor::<1, Int>::from_data(TensorData::new(values, [n]), &device)
        };
        let routed = |(expert, slots): (&GatedFeedForward<P>, Vec<usize>)| {
            let token_rows = index(slots.iter().map(|&s| (s / self.top_k) as i64).collect());
            let slot_rows = index(slots.iter().map(|&s| s as i64).collect());
            let out = expert.forward(x.clone().select(0, token_rows.clone()))
                * weights.clone().select(0, slot_rows);
            (token_rows, out)
        };
        let chosen = self
            .experts
            .iter()
            .zip(slots_of)
            .filter(|(_, slots)| !slots.is_empty());
        // Experts whose products run on this process's threads (packed or quantized weights)
        // run side by side, each product's own threads nested: one expert's single-thread
        // operations no longer leave the other threads idle. Others run in turn (their backend
        // spreads each operation; autodiff's graph stays in one order).
        let outs: Vec<(Tensor<1, Int>, Tensor<2>)> = if self
            .experts
            .iter()
            .all(|expert| expert.down_proj.multiplies_on_host())
        {
            chosen
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(routed)
                .collect()
        } else {
            chosen.map(routed).collect()
        };
        for (token_rows, out) in outs {
            y = y.select_assign(0, token_rows, out, IndexingUpdateOp::Add);
        }
        if let Some(shared) = &self.shared_experts {
            y = y + shared.forward(x);
        }
        y.reshape(dims)
    }

    /// The experts one token's routing scores choose, as `transformers` (and `torch.topk`).
    fn choose(&self, scores: &[f32]) -> Vec<usize> {
        match self.routing {
            Routing::Softmax { .. } => torch_top_k(scores, self.top_k),
            Routing::SigmoidGroups {
                n_group,
                topk_group,
                ..
            } => {
                let size = scores.len() / n_group;
                let group_scores: Vec<f32> = scores
                    .chunks(size)
                    .map(|group| {
                        let best = torch_top_k(group, 2);
                        group[best[0]] + group[best[1]]
                    })
                    .collect();
                let groups = torch_top_k(&group_scores, topk_group);
                let masked: Vec<f32> = scores
                    .iter()
                    .enumerate()
                    .map(|(e, &s)| {
                        if groups.contains(&(e / size)) {
                            s
                        } else {
                            f32::NEG_INFINITY
                        }
                    })
                    .collect();
                torch_top_k(&masked, self.top_k)
            }
        }
    }
}

impl<P: Project + From<Linear>> SparseMoe<P> {
    /// Sets the experts from gpt-oss's fused tensors (`GptOssExperts`): `gate_up [E, D, 2F]`,
    /// multiplied as `x W`, the gate in the even columns and up in the odd, `gate_up_bias
    /// [E, 2F]` likewise, `down [E, F, D]`, `down_bias [E, D]`. Slices of the given tensors: a
    /// gradient reaches them.
    pub fn set_interleaved_experts(
        &mut self,
        gate_up: Tensor<3>,
        gate_up_bias: Tensor<2>,
        down: Tensor<3>,
        down_bias: Tensor<2>,
    ) -> Result<(), AttnError> {
        let [e, width, f2] = gate_up.dims();
        let f = f2 / 2;
        ensure!(
            e == self.experts.len()
                && f2 == 2 * f
                && gate_up_bias.dims() == [e, f2]
                && down.dims() == [e, f, width]
                && down_bias.dims() == [e, width],
            "fused experts of shapes {:?}, {:?}, {:?}, {:?} are not [E, D, 2F], [E, 2F], [E, F, D], [E, D] for {} experts",
            gate_up.dims(),
            gate_up_bias.dims(),
            down.dims(),
            down_bias.dims(),
            self.experts.len()
        );
        let gate_up = gate_up.reshape([e, width, f, 2]);
        let gate_up_bias = gate_up_bias.reshape([e, f, 2]);
        let linear = |weight: Tensor<2>, bias: Tensor<1>| {
            P::from(Linear {
                weight: Param::from_tensor(weight),
                bias: Some(Param::from_tensor(bias)),
            })
        };
        for (i, expert) in self.experts.iter_mut().enumerate() {
            let half = |h: usize| {
                linear(
                    gate_up
                        .clone()
                        .slice([i..i + 1, 0..width, 0..f, h..h + 1])
                        .reshape([width, f]),
                    gate_up_bias
                        .clone()
                        .slice([i..i + 1, 0..f, h..h + 1])
                        .reshape([f]),
                )
            };
            expert.gate_proj = half(0);
            expert.up_proj = half(1);
            expert.down_proj = linear(
                down.clone()
                    .slice([i..i + 1, 0..f, 0..width])
                    .reshape([f, width]),
                down_bias
                    .clone()
                    .slice([i..i + 1, 0..width])
                    .reshape([width]),
            );
        }
        Ok(())
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
            .with_routing(Routing::Softmax { renormalize: false })
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
