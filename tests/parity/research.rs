//! The research variants' fixtures (`scripts/gen_parity_research.py`): T5's relative bias,
//! sigmoid and talking-heads attention (x-transformers' `Attend`), linear attention, Performer,
//! differential attention and Shaw et al.'s relative representations. Besides the outputs that
//! the main parity test compares, every fixture carries torch autograd's gradients of
//! `sum(output · cotangent)` (`grad.<name>`), checked here on each backend's autodiff device, and
//! the causal ones are decoded step by step here, which must equal the whole forward.

use attnzoo_backends::test_devices;
use attnzoo_models::attention::{
    AttentionImpl, AttentionInput, DifferentialConfig, KeyPattern, KvCache, LinearAttentionConfig,
    LinearState, MultiHeadConfig, MultiHeadInput, PerformerConfig, RelativePositionConfig,
    ScaledDotProductConfig, SigmoidAttentionConfig, TalkingHeadsConfig,
};
use attnzoo_models::position::T5RelativeBiasConfig;
use attnzoo_models::transformer::{VariantAttention, VariantCache};
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor};

use super::{check_gradients, compare, fixtures_of, Fixture, Leaf};

/// The kinds this file runs.
pub(super) fn handles(kind: &str) -> bool {
    matches!(
        kind,
        "T5Attention"
            | "Attend"
            | "LinearAttention"
            | "CausalLinearAttention"
            | "FastAttention"
            | "MultiheadDiffAttn"
            | "ShawRelativeAttention"
    )
}

/// The fixture's outputs by name, for the main parity test.
pub(super) fn run(
    fixture: &Fixture,
    device: &Device,
    implementation: AttentionImpl,
) -> Result<Vec<(String, Tensor<4>)>, String> {
    Ok(build(fixture, device, implementation, false)?.outputs)
}

struct Run {
    outputs: Vec<(String, Tensor<4>)>,
    leaves: Vec<(String, Leaf)>,
    /// Causal kinds: the output decoded one position at a time.
    decoded: Option<Tensor<4>>,
}

impl Fixture {
    fn flag(&self, key: &str) -> bool {
        self.config[key].as_bool().unwrap_or(false)
    }

    fn pattern(&self, key: &str) -> KeyPattern {
        if self.flag(key) {
            KeyPattern::Causal
        } else {
            KeyPattern::Full
        }
    }
}

/// Loads fixture tensors, marking them tracked (and remembering them) when gradients are wanted.
struct Loader<'a> {
    fixture: &'a Fixture,
    device: &'a Device,
    track: bool,
    leaves: Vec<(String, Leaf)>,
}

impl Loader<'_> {
    fn input<const D: usize>(&mut self, name: &str, wrap: fn(Tensor<D>) -> Leaf) -> Tensor<D> {
        let tensor: Tensor<D> = self.fixture.float(&format!("input.{name}"), self.device);
        if !self.track {
            return tensor;
        }
        let tensor = tensor.require_grad();
        self.leaves.push((name.to_string(), wrap(tensor.clone())));
        tensor
    }

    fn param<const D: usize>(
        &mut self,
        name: &str,
        map: impl FnOnce(Tensor<D>) -> Tensor<D>,
        wrap: fn(Tensor<D>) -> Leaf,
    ) -> Param<Tensor<D>> {
        let tensor = map(self.fixture.float(&format!("param.{name}"), self.device));
        let param = Param::from_tensor(tensor);
        if self.track {
            self.leaves.push((name.to_string(), wrap(param.val())));
        }
        param
    }

    fn linear(&mut self, name: &str) -> Linear {
        let mut linear = self.fixture.linear(name, self.device);
        if self.track {
            self.leaves
                .push((format!("{name}.weight"), Leaf::Linear(linear.weight.val())));
        }
        linear.bias = None;
        linear
    }
}

fn build(
    fixture: &Fixture,
    device: &Device,
    implementation: AttentionImpl,
    track: bool,
) -> Result<Run, String> {
    let err = |e: attnzoo_models::AttnError| e.to_string();
    let mut load = Loader {
        fixture,
        device,
        track,
        leaves: Vec::new(),
    };
    let want_weights = implementation == AttentionImpl::Dense;
    let padding = fixture.mask::<2>("input.padding", device);
    let mut outputs = Vec::new();
    let decoded;
    match fixture.kind.as_str() {
        "T5Attention" => {
            let (d_model, heads) = (fixture.usize("d_model"), fixture.usize("num_heads"));
            let causal = fixture.flag("is_decoder");
            let attention = ScaledDotProductConfig::new()
                .with_scale(Some(1.0))
                .with_pattern(fixture.pattern("is_decoder"))
                .with_implementation(implementation);
            let mut mha = MultiHeadConfig::new(d_model, heads)
                .with_bias(false)
                .with_attention(attention)
                .try_init(device)
                .map_err(err)?;
            let mut t5 = T5RelativeBiasConfig::new(heads)
                .with_num_buckets(fixture.usize("relative_attention_num_buckets"))
                .with_max_distance(fixture.usize("relative_attention_max_distance"))
                .with_bidirectional(!causal)
                .try_init(device)
                .map_err(err)?;
            let x: Tensor<3> = load.input("x", Leaf::Three);
            mha.query = load.linear("q");
            mha.key = load.linear("k");
            mha.value = load.linear("v");
            mha.output = load.linear("o");
            t5.relative_attention_bias.weight =
                load.param("relative_attention_bias.weight", |t| t, Leaf::Two);
            let len = x.dims()[1];
            let mut input = MultiHeadInput::self_attn(x.clone()).head_bias(t5.bias(len, len, 0));
            if let Some(padding) = padding {
                input = input.padding(padding);
            }
            if want_weights {
                input = input.with_weights();
            }
            let output = mha.forward(input).map_err(err)?;
            outputs.push(("output".into(), output.context.unsqueeze::<4>()));
            outputs.extend(output.weights.map(|w| ("weights".to_string(), w)));
            decoded = if causal {
                let mut cache = KvCache::growing();
                let steps = (0..len)
                    .map(|t| {
                        let input = MultiHeadInput::self_attn(x.clone().narrow(1, t, 1))
                            .head_bias(t5.bias(1, t + 1, t));
                        mha.forward_cached(input, &mut cache).map(|o| o.context)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                Some(Tensor::cat(steps, 1).unsqueeze::<4>())
            } else {
                None
            };
        }
        "Attend" | "ShawRelativeAttention" => {
            let pattern = fixture.pattern("causal");
            let query: Tensor<4> = load.input("query", Leaf::Four);
            let key: Tensor<4> = load.input("key", Leaf::Four);
            let value: Tensor<4> = load.input("value", Leaf::Four);
            let heads = query.dims()[1];
            let d = query.dims()[3];
            let forward: Box<dyn Fn(AttentionInput<4>) -> Result<_, _>> =
                if fixture.kind == "ShawRelativeAttention" {
                    let mut shaw =
                        RelativePositionConfig::new(d, d, fixture.usize("max_relative_position"))
                            .with_pattern(pattern)
                            .try_init(device)
                            .map_err(err)?;
                    shaw.relative_key.weight = load.param("relative_key", |t| t, Leaf::Two);
                    if let Some(table) = &mut shaw.relative_value {
                        table.weight = load.param("relative_value", |t| t, Leaf::Two);
                    }
                    Box::new(move |input| shaw.forward(input))
                } else if fixture.flag("sigmoid") {
                    let sigmoid = SigmoidAttentionConfig::new()
                        .with_n(Some(fixture.usize("n")))
                        .with_pattern(pattern)
                        .try_init()
                        .map_err(err)?;
                    Box::new(move |input| sigmoid.forward(input))
                } else {
                    let mut talking = TalkingHeadsConfig::new(heads)
                        .with_pattern(pattern)
                        .try_init(device)
                        .map_err(err)?;
                    let eye = Tensor::<2>::eye(heads, device);
                    let square = |t: Tensor<4>| t.reshape([heads, heads]);
                    // x-transformers mixes the logits as `L + W_pre L`: P_l = I + W_pre.
                    let pre: Tensor<4> =
                        fixture.float("param.pre_softmax_talking_heads.weight", device);
                    let pre = Param::from_tensor(square(pre) + eye);
                    if track {
                        load.leaves.push((
                            "pre_softmax_talking_heads.weight".into(),
                            Leaf::Two(pre.val()),
                        ));
                    }
                    talking.pre_softmax = Some(pre);
                    let post: Tensor<4> =
                        fixture.float("param.post_softmax_talking_heads.weight", device);
                    let post = Param::from_tensor(square(post));
                    if track {
                        load.leaves.push((
                            "post_softmax_talking_heads.weight".into(),
                            Leaf::Two(post.val()),
                        ));
                    }
                    talking.post_softmax = Some(post);
                    Box::new(move |input| talking.forward(input))
                };
            let mut input = AttentionInput::new(query.clone(), key.clone(), value.clone());
            if let Some(padding) = padding {
                input = input.mask_pad(padding);
            }
            if want_weights {
                input = input.with_weights();
            }
            let output = forward(input).map_err(err)?;
            outputs.push(("output".into(), output.context));
            outputs.extend(output.weights.map(|w| ("weights".to_string(), w)));
            decoded = if pattern == KeyPattern::Causal {
                let len = query.dims()[2];
                let steps = (0..len)
                    .map(|t| {
                        let input = AttentionInput::new(
                            query.clone().narrow(2, t, 1),
                            key.clone().narrow(2, 0, t + 1),
                            value.clone().narrow(2, 0, t + 1),
                        )
                        .query_offset(t);
                        forward(input).map(|o| o.context)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                Some(Tensor::cat(steps, 2))
            } else {
                None
            };
        }
        "LinearAttention" | "CausalLinearAttention" => {
            let causal = fixture.kind == "CausalLinearAttention";
            let attention = LinearAttentionConfig::new()
                .with_causal(causal)
                .with_eps(fixture.config["eps"].as_f64().unwrap_or(1e-6))
                .with_chunk(3)
                .try_init()
                .map_err(err)?;
            // fast-transformers' layout `[N, L, H, E]`, ours `[N, H, L, E]`.
            let heads_first = |t: Tensor<4>| t.swap_dims(1, 2);
            let query = heads_first(load.input("queries", Leaf::Four));
            let key = heads_first(load.input("keys", Leaf::Four));
            let value = heads_first(load.input("values", Leaf::Four));
            let mut input = AttentionInput::new(query.clone(), key.clone(), value.clone());
            if let Some(padding) = padding {
                input = input.mask_pad(padding);
            }
            let output = attention.forward(input).map_err(err)?;
            outputs.push(("output".into(), heads_first(output.context)));
            decoded = if causal {
                let mut state = LinearState::default();
                let steps = (0..query.dims()[2])
                    .map(|t| {
                        let at = |x: &Tensor<4>| x.clone().narrow(2, t, 1);
                        attention.step(at(&query), at(&key), at(&value), None, &mut state)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                Some(heads_first(Tensor::cat(steps, 2)))
            } else {
                None
            };
        }
        "FastAttention" => {
            let mut performer = PerformerConfig::new(fixture.usize("dim_heads"))
                .with_n_features(Some(fixture.usize("nb_features")))
                .try_init(device)
                .map_err(err)?;
            performer.features =
                Param::from_tensor(fixture.float("param.projection_matrix", device))
                    .set_require_grad(false);
            let query = load.input("q", Leaf::Four);
            let key = load.input("k", Leaf::Four);
            let value = load.input("v", Leaf::Four);
            let output = performer
                .forward(AttentionInput::new(query, key, value))
                .map_err(err)?;
            outputs.push(("output".into(), output.context));
            decoded = None;
        }
        "MultiheadDiffAttn" => {
            let (d_model, heads) = (fixture.usize("embed_dim"), fixture.usize("num_heads"));
            let mut mha = MultiHeadConfig::new(d_model, heads)
                .with_bias(false)
                .try_init(device)
                .map_err(err)?;
            let mut diff = DifferentialConfig::new(d_model / heads)
                .with_depth(fixture.usize("depth"))
                .with_pattern(fixture.pattern("causal"))
                .try_init(device)
                .map_err(err)?;
            let x: Tensor<3> = load.input("x", Leaf::Three);
            mha.query = load.linear("q_proj");
            mha.key = load.linear("k_proj");
            mha.value = load.linear("v_proj");
            mha.output = load.linear("out_proj");
            diff.lambda_q1 = load.param("lambda_q1", |t| t, Leaf::One);
            diff.lambda_k1 = load.param("lambda_k1", |t| t, Leaf::One);
            diff.lambda_q2 = load.param("lambda_q2", |t| t, Leaf::One);
            diff.lambda_k2 = load.param("lambda_k2", |t| t, Leaf::One);
            diff.norm_weight = load.param("subln.weight", |t| t, Leaf::One);
            // Through the layers' plug-in: the variant between `mha`'s projections.
            let variant = VariantAttention::Differential(diff);
            let output = variant
                .self_attend(&mha, x.clone(), padding, &mut VariantCache::default())
                .map_err(err)?;
            outputs.push(("output".into(), output.unsqueeze::<4>()));
            decoded = if fixture.flag("causal") {
                let mut cache = VariantCache::default();
                let steps = (0..x.dims()[1])
                    .map(|t| variant.self_attend(&mha, x.clone().narrow(1, t, 1), None, &mut cache))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                Some(Tensor::cat(steps, 1).unsqueeze::<4>())
            } else {
                None
            };
        }
        other => return Err(format!("not a research kind: {other}")),
    }
    Ok(Run {
        outputs,
        leaves: load.leaves,
        decoded,
    })
}

fn research_fixtures() -> Vec<Fixture> {
    fixtures_of(handles, "research")
}

#[test]
fn research_gradients_equal_torch_autograd_on_every_autodiff_backend() {
    let mut failures = Vec::new();
    for fixture in research_fixtures() {
        for test in &test_devices() {
            let device = test.device.clone().autodiff();
            let run = match build(&fixture, &device, AttentionImpl::Dense, true) {
                Ok(run) => run,
                Err(message) => {
                    failures.push(format!("{}: {message}", fixture.name));
                    continue;
                }
            };
            let output = run.outputs.into_iter().next().expect("an output").1;
            let cotangent: Tensor<4> = {
                let (_, values) = fixture.values("input.cotangent");
                Tensor::from_data(
                    burn::tensor::TensorData::new(values, output.dims()),
                    &device,
                )
            };
            let grads = (output * cotangent).sum().backward();
            check_gradients(&fixture, test.backend, &run.leaves, &grads, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "gradient failures:\n{}",
        failures.join("\n")
    );
}

#[test]
fn research_causal_decoding_step_by_step_equals_the_whole_forward() {
    let mut decoded_any = false;
    for fixture in research_fixtures() {
        for test in &test_devices() {
            let run = build(&fixture, &test.device, AttentionImpl::Dense, false).unwrap();
            let Some(decoded) = run.decoded else {
                continue;
            };
            decoded_any = true;
            let whole = run.outputs[0].1.clone();
            assert_eq!(decoded.dims(), whole.dims(), "{}", fixture.name);
            let (_, expected) = fixture.values("output.output");
            let decoded = decoded.into_data().try_to_vec::<f32>().unwrap();
            let whole = whole.into_data().try_to_vec::<f32>().unwrap();
            let (error, ok) = compare(&decoded, &whole, None, fixture.atol, fixture.rtol);
            assert!(
                ok,
                "{} {}: decoded differs from the whole by {error:.3e}",
                fixture.name, test.backend
            );
            let (error, ok) = compare(&decoded, &expected, None, fixture.atol, fixture.rtol);
            assert!(
                ok,
                "{} {}: decoded differs from torch by {error:.3e}",
                fixture.name, test.backend
            );
            eprintln!(
                "decode {:<30} {:<8} = whole forward",
                fixture.name,
                test.backend.name()
            );
        }
    }
    assert!(decoded_any, "no causal research fixture was decoded");
}
