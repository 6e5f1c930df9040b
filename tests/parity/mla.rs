//! The `DeepseekV3Attention` kind: multi-head latent attention against transformers' own module
//! (fixtures by `scripts/gen_parity_mla.py`; format and fields: `docs/PARITY.md`).
//!
//! [`run`] is the main loop's forward check (the expanded path, with every implementation);
//! the test below checks the absorbed-weight path on the same fixtures, decoding the causal ones
//! one position at a time from the latent cache (both paths), and the gradients of the
//! input and of every weight (`grad.<name>`, torch autograd of `sum(output * input.probe)`) on
//! each backend's autodiff device.

use std::io::Write;

use attnzoo_backends::test_devices;
use attnzoo_models::attention::{
    AttentionImpl, KeyPattern, LatentCache, LatentPath, LatentQuery, MultiHeadLatent,
    MultiHeadLatentConfig, MultiHeadLatentInput, ScaledDotProductConfig,
};
use attnzoo_models::norm::RmsNorm;
use attnzoo_models::position::RopeScaling;
use burn::module::Param;
use burn::tensor::{Device, Gradients, Tensor};

use super::{compare, fixtures_of, grad_count, Fixture};

/// The fixture's kind name (transformers' class).
pub(super) const KIND: &str = "DeepseekV3Attention";

impl Fixture {
    /// The module with the fixture's config and weights.
    fn latent_module(
        &self,
        device: &Device,
        implementation: AttentionImpl,
    ) -> Result<MultiHeadLatent, String> {
        let flag = |key: &str| self.config[key].as_bool().unwrap_or(false);
        let pattern = if flag("causal") {
            KeyPattern::Causal
        } else {
            KeyPattern::Full
        };
        let mut module = MultiHeadLatentConfig::new(
            self.usize("hidden_size"),
            self.usize("num_attention_heads"),
            self.usize("kv_lora_rank"),
            self.usize("qk_nope_head_dim"),
            self.usize("qk_rope_head_dim"),
            self.usize("v_head_dim"),
        )
        .with_q_lora_rank(self.config["q_lora_rank"].as_u64().map(|r| r as usize))
        .with_rms_norm_eps(self.config["rms_norm_eps"].as_f64().unwrap_or(1e-6))
        .with_rope_base(self.config["rope_theta"].as_f64().unwrap_or(10000.0))
        .with_rope_interleaved(flag("rope_interleave"))
        .with_rope_scaling(self.latent_rope_scaling())
        .with_bias(flag("attention_bias"))
        .with_attention(
            ScaledDotProductConfig::new()
                .with_pattern(pattern)
                .with_implementation(implementation),
        )
        .try_init(device)
        .map_err(|e| e.to_string())?;
        match &mut module.query {
            LatentQuery::LowRank(low_rank) => {
                low_rank.q_a_proj = self.linear("q_a_proj", device);
                self.rms_norm("q_a_layernorm", &mut low_rank.q_a_layernorm, device);
                low_rank.q_b_proj = self.linear("q_b_proj", device);
            }
            LatentQuery::Full(full) => *full = self.linear("q_proj", device),
        }
        module.kv_a_proj_with_mqa = self.linear("kv_a_proj_with_mqa", device);
        self.rms_norm("kv_a_layernorm", &mut module.kv_a_layernorm, device);
        module.kv_b_proj = self.linear("kv_b_proj", device);
        module.o_proj = self.linear("o_proj", device);
        Ok(module)
    }

    /// `config.rope_scaling`: DeepSeek's YaRN (`rope_parameters` of type `yarn`), or none.
    fn latent_rope_scaling(&self) -> RopeScaling {
        let yarn = &self.config["rope_scaling"];
        if yarn.is_null() {
            return RopeScaling::None;
        }
        let number = |key: &str| yarn[key].as_f64();
        RopeScaling::Yarn {
            factor: number("factor").unwrap_or(1.0),
            original_max_position_embeddings: yarn["original_max_position_embeddings"]
                .as_u64()
                .unwrap_or(4096) as usize,
            beta_fast: number("beta_fast").unwrap_or(32.0),
            beta_slow: number("beta_slow").unwrap_or(1.0),
            attention_factor: number("attention_factor"),
            mscale: number("mscale"),
            mscale_all_dim: number("mscale_all_dim"),
            truncate: yarn["truncate"].as_bool().unwrap_or(true),
        }
    }

    fn rms_norm(&self, prefix: &str, norm: &mut RmsNorm, device: &Device) {
        norm.weight = Param::from_tensor(self.float(&format!("param.{prefix}.weight"), device));
    }

    /// `input.hidden_states` with the fixture's padding and mask.
    fn latent_input(&self, hidden_states: Tensor<3>, device: &Device) -> MultiHeadLatentInput {
        let mut input = MultiHeadLatentInput::new(hidden_states);
        if let Some(padding) = self.mask::<2>("input.padding", device) {
            input = input.padding(padding);
        }
        if let Some(mask) = self.mask::<3>("input.mask", device) {
            input = input.mask(mask);
        }
        input
    }

    /// The weights' gradients in PyTorch's layout, by `state_dict()` name.
    fn latent_gradients(
        &self,
        module: &MultiHeadLatent,
        grads: &Gradients,
    ) -> Vec<(String, Option<Vec<f32>>)> {
        let mut named: Vec<(String, Option<Tensor<2>>, Option<Tensor<1>>)> = Vec::new();
        let mut linear = |name: &str, linear: &burn::nn::Linear| {
            let weight = linear.weight.grad(grads).map(|g| g.transpose());
            named.push((format!("{name}.weight"), weight, None));
            if let Some(bias) = &linear.bias {
                named.push((format!("{name}.bias"), None, bias.grad(grads)));
            }
        };
        match &module.query {
            LatentQuery::LowRank(low_rank) => {
                linear("q_a_proj", &low_rank.q_a_proj);
                linear("q_b_proj", &low_rank.q_b_proj);
            }
            LatentQuery::Full(full) => linear("q_proj", full),
        }
        linear("kv_a_proj_with_mqa", &module.kv_a_proj_with_mqa);
        linear("kv_b_proj", &module.kv_b_proj);
        linear("o_proj", &module.o_proj);
        let mut norms = vec![("kv_a_layernorm", &module.kv_a_layernorm)];
        if let LatentQuery::LowRank(low_rank) = &module.query {
            norms.push(("q_a_layernorm", &low_rank.q_a_layernorm));
        }
        for (name, norm) in norms {
            named.push((format!("{name}.weight"), None, norm.weight.grad(grads)));
        }
        let values =
            |data: burn::tensor::TensorData| data.convert::<f32>().try_into_vec::<f32>().unwrap();
        named
            .into_iter()
            .map(|(name, matrix, vector)| {
                let grad = match (matrix, vector) {
                    (Some(matrix), _) => Some(values(matrix.into_data())),
                    (_, Some(vector)) => Some(values(vector.into_data())),
                    _ => None,
                };
                (name, grad)
            })
            .collect()
    }
}

/// The expanded path's `output` and (dense) `weights`.
pub(super) fn run(
    fixture: &Fixture,
    device: &Device,
    implementation: AttentionImpl,
    want_weights: bool,
) -> Result<Vec<(String, Tensor<4>)>, String> {
    let module = fixture.latent_module(device, implementation)?;
    let mut input = fixture.latent_input(fixture.float("input.hidden_states", device), device);
    if want_weights {
        input = input.with_weights();
    }
    let output = module.forward(input).map_err(|e| e.to_string())?;
    let mut outputs = vec![("output".to_string(), output.context.unsqueeze::<4>())];
    outputs.extend(output.weights.map(|w| ("weights".to_string(), w)));
    Ok(outputs)
}

/// Compares `actual` with `expected.<name>`, selected by `compare.<name>` where the fixture has
/// it; returns the largest error, or a failure line.
fn check(fixture: &Fixture, name: &str, expected: &str, actual: &[f32]) -> Result<f32, String> {
    let (_, values) = fixture.values(expected);
    if values.len() != actual.len() {
        return Err(format!(
            "{} {name}: {} values, expected {}",
            fixture.name,
            actual.len(),
            values.len()
        ));
    }
    let selected = fixture
        .tensors
        .get(&expected.replacen("output.", "compare.", 1))
        .filter(|_| expected.starts_with("output."))
        .map(|(_, _, b)| b.as_slice());
    let (error, ok) = compare(actual, &values, selected, fixture.atol, fixture.rtol);
    if ok {
        Ok(error)
    } else {
        Err(format!(
            "{} {name}: max |err| {error:.3e} over atol {:.0e} + rtol {:.0e}",
            fixture.name, fixture.atol, fixture.rtol
        ))
    }
}

#[test]
fn deepseek_v3_attention_absorbed_path_and_gradients_match_pytorch() {
    let fixtures = fixtures_of(|kind| kind == KIND, KIND);
    let mut failures = Vec::new();
    let mut stderr = std::io::stderr();
    let mut record = |label: String, result: Result<f32, String>| match result {
        Ok(error) => {
            let _ = writeln!(stderr, "parity {label:<58} max|err| {error:.2e}");
        }
        Err(message) => failures.push(format!("{label}: {message}")),
    };
    for fixture in &fixtures {
        for test in &test_devices() {
            let backend = test.backend.name();
            // The absorbed path from an empty cache, on every implementation.
            for (label, implementation) in fixture.implementations() {
                let result = (|| {
                    let device = &test.device;
                    let module = fixture.latent_module(device, implementation)?;
                    let mut input = fixture
                        .latent_input(fixture.float("input.hidden_states", device), device)
                        .absorbed();
                    if implementation == AttentionImpl::Dense {
                        input = input.with_weights();
                    }
                    let output = module.forward(input).map_err(|e| e.to_string())?;
                    let to_vec = |t: Tensor<4>| t.into_data().try_into_vec::<f32>().unwrap();
                    let mut worst = check(
                        fixture,
                        "output",
                        "output.output",
                        &to_vec(output.context.unsqueeze()),
                    )?;
                    if let Some(weights) = output.weights {
                        worst = worst.max(check(
                            fixture,
                            "weights",
                            "output.weights",
                            &to_vec(weights),
                        )?);
                    }
                    Ok(worst)
                })();
                record(
                    format!("{} {backend} absorbed-{label}", fixture.name),
                    result,
                );
            }
            // Causal fixtures decoded one position at a time from the latent cache, both paths.
            if fixture.config["causal"].as_bool() == Some(true) && !fixture.has("input.mask") {
                for path in [LatentPath::Expanded, LatentPath::Absorbed] {
                    let result = (|| {
                        let device = &test.device;
                        let module = fixture.latent_module(device, AttentionImpl::Dense)?;
                        let x: Tensor<3> = fixture.float("input.hidden_states", device);
                        let padding = fixture.mask::<2>("input.padding", device);
                        let mut cache = LatentCache::new();
                        let mut steps = Vec::new();
                        for t in 0..x.dims()[1] {
                            let mut input = MultiHeadLatentInput::new(x.clone().narrow(1, t, 1));
                            input.path = path;
                            if let Some(padding) = &padding {
                                input = input.padding(padding.clone().narrow(1, 0, t + 1));
                            }
                            let step = module.forward_cached(input, &mut cache);
                            steps.push(step.map_err(|e| e.to_string())?.context);
                        }
                        let decoded = Tensor::cat(steps, 1).into_data();
                        let decoded = decoded.try_into_vec::<f32>().unwrap();
                        check(fixture, "step-by-step output", "output.output", &decoded)
                    })();
                    record(
                        format!("{} {backend} {path:?} step by step", fixture.name),
                        result,
                    );
                }
            }
            // Gradients of sum(output * probe) on the autodiff device (dense attention).
            let device = test.device.clone().autodiff();
            let result = (|| {
                let module = fixture.latent_module(&device, AttentionImpl::Dense)?;
                let x: Tensor<3> = fixture.float("input.hidden_states", &device).require_grad();
                let probe: Tensor<3> = fixture.float("input.probe", &device);
                let output = module
                    .forward(fixture.latent_input(x.clone(), &device))
                    .map_err(|e| e.to_string())?;
                let grads = (output.context * probe).sum().backward();
                let mut named = fixture.latent_gradients(&module, &grads);
                let x_grad = x
                    .grad(&grads)
                    .map(|g| g.into_data().try_into_vec::<f32>().unwrap());
                named.push(("hidden_states".to_string(), x_grad));
                let mut worst = 0.0f32;
                for (name, grad) in &named {
                    let grad = grad
                        .as_ref()
                        .ok_or_else(|| format!("no gradient reached {name}"))?;
                    worst = worst.max(check(fixture, name, &format!("grad.{name}"), grad)?);
                }
                let checked: Vec<String> = named.iter().map(|(n, _)| format!("grad.{n}")).collect();
                let unchecked: Vec<&String> = fixture
                    .tensors
                    .keys()
                    .filter(|k| k.starts_with("grad.") && !checked.contains(k))
                    .collect();
                if !unchecked.is_empty() {
                    return Err(format!(
                        "gradients without a Burn counterpart: {unchecked:?}"
                    ));
                }
                Ok(worst)
            })();
            record(
                format!(
                    "{} {backend} gradients ({} entries)",
                    fixture.name,
                    grad_count(fixture)
                ),
                result,
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{KIND} failures:\n{}",
        failures.join("\n")
    );
}
