//! Parity of today's LLM blocks with Hugging Face transformers 5.23.0 (fixtures from
//! `scripts/gen_parity_llm.py`; kinds named after the reference class, see `docs/PARITY.md`).
//!
//! Besides the outputs that the main parity test compares, every fixture carries torch
//! autograd's gradients (`grad.<name>`, by input or `state_dict()` name) of
//! `L = Σ_o sum(output.o · cotangent_o)`, with `cotangent_o` = `input.cotangent` for the one
//! output `output`, `input.cotangent.<o>` where there are several; the test below checks them
//! on each backend's autodiff device.

use std::io::Write;

use attnzoo_backends::test_devices;
use attnzoo_models::attention::{
    AttentionImpl, KeyPattern, KvCache, MultiHead, MultiHeadConfig, MultiHeadInput,
    ScaledDotProductConfig,
};
use attnzoo_models::norm::RmsNormConfig;
use attnzoo_models::position::{RopeScaling, RotaryConfig, RotaryEncoding};
use attnzoo_models::transformer::{
    GatedActivation, GatedFeedForward, GatedFeedForwardConfig, Routing, SparseMoeConfig,
};
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};
use serde_json::Value;

use super::{check_gradients, compare, fixtures_of, Fixture, Leaf};

/// The kinds this file runs.
const KINDS: [&str; 14] = [
    "LlamaRMSNorm",
    "Gemma2RMSNorm",
    "LlamaMLP",
    "GemmaMLP",
    "LlamaRotaryEmbedding",
    "GPTNeoXRotaryEmbedding",
    "Qwen3Attention",
    "MistralAttention",
    "Gemma2Attention",
    "GptOssAttention",
    "MixtralSparseMoeBlock",
    "Qwen3MoeSparseMoeBlock",
    "DeepseekV3MoE",
    "GptOssMLP",
];

/// Whether `kind` is one of this file's.
pub fn knows(kind: &str) -> bool {
    KINDS.contains(&kind)
}

/// Whether `kind` is one of this file's without an attention inside (one implementation).
pub fn without_attention(kind: &str) -> bool {
    knows(kind) && !kind.ends_with("Attention")
}

/// Outputs by name, and (when tracking) the tensors whose gradients the fixture holds, by the
/// fixture's names.
struct Run {
    outputs: Vec<(String, Tensor<4>)>,
    tracked: Vec<(String, Leaf)>,
    track: bool,
}

impl Run {
    fn linear(&mut self, fixture: &Fixture, prefix: &str, device: &Device) -> Linear {
        let linear = fixture.linear(prefix, device);
        if self.track {
            self.tracked.push((
                format!("{prefix}.weight"),
                Leaf::Linear(linear.weight.val()),
            ));
            if let Some(bias) = &linear.bias {
                self.tracked
                    .push((format!("{prefix}.bias"), Leaf::One(bias.val())));
            }
        }
        linear
    }

    fn param(&mut self, fixture: &Fixture, name: &str, device: &Device) -> Param<Tensor<1>> {
        let param = Param::from_tensor(fixture.float(&format!("param.{name}"), device));
        if self.track {
            self.tracked
                .push((name.to_string(), Leaf::One(param.val())));
        }
        param
    }

    fn input3(&mut self, fixture: &Fixture, name: &str, device: &Device) -> Tensor<3> {
        let tensor: Tensor<3> = fixture.float(&format!("input.{name}"), device);
        if !self.track {
            return tensor;
        }
        let tensor = tensor.require_grad();
        self.tracked
            .push((name.to_string(), Leaf::Three(tensor.clone())));
        tensor
    }

    fn input4(&mut self, fixture: &Fixture, name: &str, device: &Device) -> Tensor<4> {
        let tensor: Tensor<4> = fixture.float(&format!("input.{name}"), device);
        if !self.track {
            return tensor;
        }
        let tensor = tensor.require_grad();
        self.tracked
            .push((name.to_string(), Leaf::Four(tensor.clone())));
        tensor
    }
}

/// The fixture's outputs by name, for the main parity test.
pub fn run(
    fixture: &Fixture,
    device: &Device,
    implementation: AttentionImpl,
) -> Result<Vec<(String, Tensor<4>)>, String> {
    Ok(build(fixture, device, implementation, false)?.outputs)
}

/// Runs the fixture's module on `device`, tracking its parameters and float inputs when `track`.
fn build(
    fixture: &Fixture,
    device: &Device,
    implementation: AttentionImpl,
    track: bool,
) -> Result<Run, String> {
    let err = |e: attnzoo_models::AttnError| e.to_string();
    let mut run = Run {
        outputs: Vec::new(),
        tracked: Vec::new(),
        track,
    };
    match fixture.kind.as_str() {
        "LlamaRMSNorm" | "Gemma2RMSNorm" => {
            let mut norm = RmsNormConfig::new(fixture.usize("hidden_size"))
                .with_epsilon(number(&fixture.config, "eps")?)
                .with_unit_offset(fixture.kind == "Gemma2RMSNorm")
                .try_init(device)
                .map_err(err)?;
            norm.weight = run.param(fixture, "weight", device);
            let x = run.input3(fixture, "hidden_states", device);
            run.outputs
                .push(("output".into(), norm.forward(x).unsqueeze()));
        }
        "LlamaMLP" | "GemmaMLP" => {
            let activation = match fixture.config["hidden_act"].as_str() {
                Some("silu") => GatedActivation::Silu,
                Some("gelu_pytorch_tanh") => GatedActivation::GeluTanh,
                other => return Err(format!("unknown hidden_act {other:?}")),
            };
            let mut mlp = GatedFeedForwardConfig::new(
                fixture.usize("hidden_size"),
                fixture.usize("intermediate_size"),
            )
            .with_activation(activation)
            .with_bias(fixture.config["mlp_bias"].as_bool().unwrap_or(false))
            .try_init(device)
            .map_err(err)?;
            mlp.gate_proj = run.linear(fixture, "gate_proj", device);
            mlp.up_proj = run.linear(fixture, "up_proj", device);
            mlp.down_proj = run.linear(fixture, "down_proj", device);
            let x = run.input3(fixture, "x", device);
            run.outputs
                .push(("output".into(), mlp.forward(x).unsqueeze()));
        }
        "MixtralSparseMoeBlock" | "Qwen3MoeSparseMoeBlock" | "DeepseekV3MoE" => {
            let experts = fixture.usize("num_experts");
            let renormalize = fixture.config["renormalize"].as_bool() == Some(true);
            let d_ff = fixture.usize("intermediate_size");
            let deepseek = fixture.kind == "DeepseekV3MoE";
            let routing = if deepseek {
                Routing::SigmoidGroups {
                    n_group: fixture.usize("n_group"),
                    topk_group: fixture.usize("topk_group"),
                    renormalize,
                    scaling: number(&fixture.config, "routed_scaling_factor")?,
                }
            } else {
                Routing::Softmax { renormalize }
            };
            let mut moe = SparseMoeConfig::new(
                fixture.usize("hidden_size"),
                d_ff,
                experts,
                fixture.usize("num_experts_per_tok"),
            )
            .with_routing(routing)
            .with_shared_d_ff(deepseek.then(|| d_ff * fixture.usize("n_shared_experts")))
            .try_init(device)
            .map_err(err)?;
            moe.gate = run.linear(fixture, "gate", device);
            if deepseek {
                // A buffer in the reference: loaded, no gradient.
                moe.e_score_correction_bias = Some(
                    Param::from_tensor(fixture.float("param.gate.e_score_correction_bias", device))
                        .set_require_grad(false),
                );
                let shared = moe.shared_experts.as_mut().expect("shared experts");
                shared.gate_proj = run.linear(fixture, "shared_experts.gate_proj", device);
                shared.up_proj = run.linear(fixture, "shared_experts.up_proj", device);
                shared.down_proj = run.linear(fixture, "shared_experts.down_proj", device);
            }
            for (e, expert) in moe.experts.iter_mut().enumerate() {
                expert.gate_proj = run.linear(fixture, &format!("experts.{e}.gate_proj"), device);
                expert.up_proj = run.linear(fixture, &format!("experts.{e}.up_proj"), device);
                expert.down_proj = run.linear(fixture, &format!("experts.{e}.down_proj"), device);
            }
            let x = run.input3(fixture, "hidden_states", device);
            run.outputs
                .push(("output".into(), moe.forward(x).unsqueeze()));
        }
        "GptOssMLP" => {
            let mut moe = SparseMoeConfig::new(
                fixture.usize("hidden_size"),
                fixture.usize("intermediate_size"),
                fixture.usize("num_experts"),
                fixture.usize("num_experts_per_tok"),
            )
            .with_routing(Routing::Softmax { renormalize: true })
            .with_activation(GatedActivation::ClampedSwiglu {
                alpha: number(&fixture.config, "alpha")?,
                limit: number(&fixture.config, "limit")?,
            })
            .with_bias(true)
            .try_init(device)
            .map_err(err)?;
            moe.gate = run.linear(fixture, "router", device);
            let fused = |name: &str| format!("param.experts.{name}");
            moe.set_interleaved_experts(
                fixture.float(&fused("gate_up_proj"), device),
                fixture.float(&fused("gate_up_proj_bias"), device),
                fixture.float(&fused("down_proj"), device),
                fixture.float(&fused("down_proj_bias"), device),
            )
            .map_err(err)?;
            if run.track {
                // The experts' own parameters, reassembled into the fused tensors' gradients.
                let parts = |part: &dyn Fn(&GatedFeedForward) -> Vec<Leaf>| {
                    Leaf::Interleaved(moe.experts.iter().map(part).collect())
                };
                let weight = |linear: &Linear| Leaf::Two(linear.weight.val());
                let bias = |linear: &Linear| Leaf::One(linear.bias.as_ref().expect("a bias").val());
                run.tracked.extend([
                    (
                        "experts.gate_up_proj".into(),
                        parts(&|x| vec![weight(&x.gate_proj), weight(&x.up_proj)]),
                    ),
                    (
                        "experts.gate_up_proj_bias".into(),
                        parts(&|x| vec![bias(&x.gate_proj), bias(&x.up_proj)]),
                    ),
                    (
                        "experts.down_proj".into(),
                        parts(&|x| vec![weight(&x.down_proj)]),
                    ),
                    (
                        "experts.down_proj_bias".into(),
                        parts(&|x| vec![bias(&x.down_proj)]),
                    ),
                ]);
            }
            let x = run.input3(fixture, "hidden_states", device);
            run.outputs
                .push(("output".into(), moe.forward(x).unsqueeze()));
        }
        "LlamaRotaryEmbedding" | "GPTNeoXRotaryEmbedding" => {
            let rotary = rotary(&fixture.config).map_err(err)?;
            let offset = first_position(fixture)?;
            let q = run.input4(fixture, "q", device);
            let k = run.input4(fixture, "k", device);
            let len = q.dims()[2];
            let q_embed = rotary.apply(q, offset).map_err(err)?;
            let k_embed = rotary.apply(k, offset).map_err(err)?;
            let inv_freq = rotary.frequencies(offset + len);
            let frequencies = inv_freq.len();
            let lift = |values: Vec<f32>, n: usize| {
                Tensor::<1>::from_data(TensorData::new(values, [n]), device).unsqueeze::<4>()
            };
            run.outputs.extend([
                ("q_embed".to_string(), q_embed),
                ("k_embed".to_string(), k_embed),
                ("inv_freq".to_string(), lift(inv_freq, frequencies)),
                (
                    "attention_scaling".to_string(),
                    lift(vec![rotary.attention_factor as f32], 1),
                ),
            ]);
        }
        "Qwen3Attention" | "MistralAttention" | "Gemma2Attention" | "GptOssAttention" => {
            attention(fixture, device, implementation, &mut run)?
        }
        other => return Err(format!("llm parity does not know kind `{other}`")),
    }
    Ok(run)
}

/// A decoder LM's self-attention: `MultiHead` configured as the reference layer, and its rotary
/// embedding.
fn attention_module(
    fixture: &Fixture,
    device: &Device,
    implementation: AttentionImpl,
    run: &mut Run,
) -> Result<(MultiHead, RotaryEncoding), String> {
    let err = |e: attnzoo_models::AttnError| e.to_string();
    let config = &fixture.config;
    let head_dim = fixture.usize("head_dim");
    // transformers' window `W` keeps the query and the `W − 1` keys before it.
    let pattern = match config["sliding_window"].as_u64() {
        Some(window) => KeyPattern::Window {
            window: window as usize - 1,
            causal: true,
        },
        None => KeyPattern::Causal,
    };
    let attention = ScaledDotProductConfig::new()
        .with_scale(Some(number(config, "scaling")?))
        .with_softcap(config["attn_logit_softcapping"].as_f64())
        .with_pattern(pattern)
        .with_implementation(implementation);
    let qk_norm = config["qk_norm"].as_bool().unwrap_or(false).then(|| {
        RmsNormConfig::new(head_dim).with_epsilon(config["rms_norm_eps"].as_f64().unwrap_or(1e-6))
    });
    let mut module = MultiHeadConfig::new(
        fixture.usize("hidden_size"),
        fixture.usize("num_attention_heads"),
    )
    .with_n_kv_heads(Some(fixture.usize("num_key_value_heads")))
    .with_d_head(Some(head_dim))
    .with_bias(config["attention_bias"].as_bool().unwrap_or(false))
    .with_qk_norm(qk_norm)
    .with_sinks(config["sinks"].as_bool().unwrap_or(false))
    .with_attention(attention)
    .try_init(device)
    .map_err(err)?;
    module.query = run.linear(fixture, "q_proj", device);
    module.key = run.linear(fixture, "k_proj", device);
    module.value = run.linear(fixture, "v_proj", device);
    module.output = run.linear(fixture, "o_proj", device);
    for (name, norm) in [
        ("q_norm", module.query_norm.as_mut()),
        ("k_norm", module.key_norm.as_mut()),
    ] {
        if let Some(norm) = norm {
            norm.weight = run.param(fixture, &format!("{name}.weight"), device);
        }
    }
    if module.sinks.is_some() {
        module.sinks = Some(run.param(fixture, "sinks", device));
    }
    let mut rope = config["rope_parameters"].clone();
    rope["head_dim"] = head_dim.into();
    rope["max_position_embeddings"] = config["max_position_embeddings"].clone();
    let rotary = rotary(&rope).map_err(err)?;
    if first_position(fixture)? != 0 {
        return Err("attention fixtures start at position 0".into());
    }
    Ok((module, rotary))
}

/// The attention over `hidden_states` with the padding of `attention_mask`.
fn attention(
    fixture: &Fixture,
    device: &Device,
    implementation: AttentionImpl,
    run: &mut Run,
) -> Result<(), String> {
    let err = |e: attnzoo_models::AttnError| e.to_string();
    let (module, rotary) = attention_module(fixture, device, implementation, run)?;
    let padding = fixture
        .mask::<2>("input.attention_mask", device)
        .ok_or("no input.attention_mask")?;
    let x = run.input3(fixture, "hidden_states", device);
    let mut input = MultiHeadInput::self_attn(x).padding(padding).rotary(rotary);
    if implementation == AttentionImpl::Dense {
        input = input.with_weights();
    }
    let output = module.forward(input).map_err(err)?;
    run.outputs
        .push(("output".into(), output.context.unsqueeze()));
    run.outputs.extend(
        output
            .weights
            .map(|weights| ("weights".to_string(), weights)),
    );
    Ok(())
}

fn llm_fixtures() -> Vec<Fixture> {
    fixtures_of(knows, "LLM block")
}

/// The fixture's cotangent of output `name`, if it has one.
fn cotangent_key(fixture: &Fixture, name: &str) -> Option<String> {
    let own = format!("input.cotangent.{name}");
    if fixture.has(&own) {
        Some(own)
    } else {
        (name == "output" && fixture.has("input.cotangent")).then(|| "input.cotangent".into())
    }
}

/// `L = Σ_o sum(output.o · cotangent_o)` over the outputs the fixture has a cotangent for.
fn loss(
    fixture: &Fixture,
    outputs: Vec<(String, Tensor<4>)>,
    device: &Device,
) -> Option<Tensor<1>> {
    outputs
        .into_iter()
        .filter_map(|(name, output)| {
            let (_, values) = fixture.values(&cotangent_key(fixture, &name)?);
            let cotangent = Tensor::<4>::from_data(TensorData::new(values, output.dims()), device);
            Some((output * cotangent).sum())
        })
        .reduce(|a, b| a + b)
}

#[test]
fn llm_gradients_equal_torch_autograd_on_every_autodiff_backend() {
    let mut failures = Vec::new();
    for fixture in llm_fixtures() {
        for test in &test_devices() {
            let device = test.device.clone().autodiff();
            let run = match build(&fixture, &device, AttentionImpl::Dense, true) {
                Ok(run) => run,
                Err(message) => {
                    failures.push(format!("{}: {message}", fixture.name));
                    continue;
                }
            };
            let Some(loss) = loss(&fixture, run.outputs, &device) else {
                failures.push(format!("{}: no input.cotangent", fixture.name));
                continue;
            };
            let grads = loss.backward();
            check_gradients(&fixture, test.backend, &run.tracked, &grads, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "gradient failures:\n{}",
        failures.join("\n")
    );
}

/// The unpadded first row of every attention fixture decoded one token at a time through the
/// KV cache (which a sliding window keeps to the window) equals the reference's whole forward.
#[test]
fn llm_attention_decoded_token_by_token_equals_the_reference() {
    let mut failures = Vec::new();
    let mut stderr = std::io::stderr();
    let fixtures = llm_fixtures();
    let attentions: Vec<&Fixture> = fixtures
        .iter()
        .filter(|fixture| knows(&fixture.kind) && !without_attention(&fixture.kind))
        .collect();
    assert!(!attentions.is_empty(), "no attention fixture found");
    for fixture in attentions {
        let (_, expected) = fixture.values("output.output");
        for test in &test_devices() {
            let device = &test.device;
            let mut run = Run {
                outputs: Vec::new(),
                tracked: Vec::new(),
                track: false,
            };
            let (module, rotary) =
                attention_module(fixture, device, AttentionImpl::Dense, &mut run).unwrap();
            let x: Tensor<3> = fixture.float("input.hidden_states", device);
            let [_, len, width] = x.dims();
            let mut cache = KvCache::growing();
            let mut most_kept = 0;
            let mut steps = Vec::new();
            for t in 0..len {
                let token = x.clone().narrow(0, 0, 1).narrow(1, t, 1);
                let input = MultiHeadInput::self_attn(token).rotary(rotary.clone());
                steps.push(module.forward_cached(input, &mut cache).unwrap().context);
                most_kept = most_kept.max(cache.len());
            }
            let decoded = Tensor::cat(steps, 1)
                .into_data()
                .try_into_vec::<f32>()
                .unwrap();
            let (error, ok) = compare(
                &decoded,
                &expected[..len * width],
                None,
                fixture.atol,
                fixture.rtol,
            );
            if !ok {
                failures.push(format!(
                    "{} {}: decoded max |err| {error:.3e}",
                    fixture.name, test.backend
                ));
            }
            let window = fixture.config["sliding_window"]
                .as_u64()
                .map(|w| w as usize);
            if most_kept > window.unwrap_or(len) {
                failures.push(format!(
                    "{} {}: the cache held {most_kept} positions, window {window:?}",
                    fixture.name, test.backend
                ));
            }
            let _ = writeln!(
                stderr,
                "decoded {:<30} {:<8} {len} steps, cache at most {most_kept}, max|err| {error:.2e}",
                fixture.name,
                test.backend.name()
            );
        }
    }
    assert!(
        failures.is_empty(),
        "decoding failures:\n{}",
        failures.join("\n")
    );
}

/// The same attention under the reference's own 4-D mask (`input.mask`) in place of its
/// positional pattern and padding gives the same outputs: the stored mask is the one
/// transformers built, and the pattern reads its window as transformers does.
#[test]
fn llm_attention_under_the_reference_mask_equals_the_reference() {
    let mut failures = Vec::new();
    for fixture in llm_fixtures()
        .iter()
        .filter(|fixture| knows(&fixture.kind) && !without_attention(&fixture.kind))
    {
        let (_, expected) = fixture.values("output.output");
        let selected = fixture
            .tensors
            .get("compare.output")
            .map(|(_, _, b)| b.as_slice());
        for test in &test_devices() {
            let device = &test.device;
            let mut run = Run {
                outputs: Vec::new(),
                tracked: Vec::new(),
                track: false,
            };
            let (mut module, rotary) =
                attention_module(fixture, device, AttentionImpl::Dense, &mut run).unwrap();
            module.attention.pattern = KeyPattern::Full;
            let mask = fixture.mask::<3>("input.mask", device).unwrap();
            let x: Tensor<3> = fixture.float("input.hidden_states", device);
            let input = MultiHeadInput::self_attn(x).mask(mask).rotary(rotary);
            let output = module.forward(input).unwrap().context.into_data();
            let actual = output.try_into_vec::<f32>().unwrap();
            let (error, ok) = compare(&actual, &expected, selected, fixture.atol, fixture.rtol);
            if !ok {
                failures.push(format!(
                    "{} {}: under input.mask max |err| {error:.3e}",
                    fixture.name, test.backend
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn number(config: &Value, key: &str) -> Result<f64, String> {
    config[key]
        .as_f64()
        .ok_or_else(|| format!("config needs a number `{key}`"))
}

/// transformers' `rope_parameters` (with `head_dim` and `max_position_embeddings`) as a
/// [`RotaryEncoding`].
fn rotary(config: &Value) -> Result<RotaryEncoding, attnzoo_models::AttnError> {
    let get = |key: &str| config[key].as_f64();
    let int = |key: &str| config[key].as_u64().unwrap_or(0) as usize;
    let factor = get("factor").unwrap_or(1.0);
    let scaling = match config["rope_type"].as_str().unwrap_or("default") {
        "linear" => RopeScaling::Linear { factor },
        "dynamic" => RopeScaling::DynamicNtk {
            factor,
            original_max_position_embeddings: int("max_position_embeddings"),
        },
        "yarn" => RopeScaling::Yarn {
            factor,
            original_max_position_embeddings: int("original_max_position_embeddings"),
            beta_fast: get("beta_fast").unwrap_or(32.0),
            beta_slow: get("beta_slow").unwrap_or(1.0),
            attention_factor: get("attention_factor"),
            mscale: get("mscale"),
            mscale_all_dim: get("mscale_all_dim"),
            truncate: config["truncate"].as_bool().unwrap_or(true),
        },
        "llama3" => RopeScaling::Llama3 {
            factor,
            low_freq_factor: get("low_freq_factor").unwrap_or(1.0),
            high_freq_factor: get("high_freq_factor").unwrap_or(4.0),
            original_max_position_embeddings: int("original_max_position_embeddings"),
        },
        _ => RopeScaling::None,
    };
    RotaryConfig::new(int("head_dim"))
        .with_base(get("rope_theta").unwrap_or(10000.0))
        .with_partial_rotary_factor(get("partial_rotary_factor").unwrap_or(1.0))
        .with_scaling(scaling)
        .try_init()
}

/// The first position of `input.position_ids [B, T]`, which must count up from it in every row
/// (the positions `RotaryEncoding::apply` gives).
fn first_position(fixture: &Fixture) -> Result<usize, String> {
    let (shape, _, bytes) = &fixture.tensors["input.position_ids"];
    let ids: Vec<i64> = bytes
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let len = shape[1];
    let first = ids[0];
    let consecutive = ids.chunks(len).all(|row| {
        row.iter()
            .zip(first..)
            .all(|(&id, expected)| id == expected)
    });
    if !consecutive || first < 0 {
        return Err(format!(
            "position_ids must be the same consecutive positions in every row, got {ids:?}"
        ));
    }
    Ok(first as usize)
}
