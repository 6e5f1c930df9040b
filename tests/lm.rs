//! Decoder LMs from Hugging Face folders against `transformers` 5.x: every folder in
//! `tests/fixtures/lm/` (made by `scripts/gen_lm_fixtures.py`) loads on every usable backend, its
//! logits over a left-padded batch match the reference within 1e-4 (whole batch at once, and
//! half at once then token by token through the cache), and its greedy continuation is the
//! reference's, id for id. Prints the largest logit error per folder and backend.

use std::io::Write;
use std::path::{Path, PathBuf};

use attnzoo_backends::test_devices;
use attnzoo_models::lm::{CausalLm, GenerationConfig, LmFeedForward};
use attnzoo_models::quant::{PackedMatrix, Projection};
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use safetensors::SafeTensors;
use serde_json::Value;

const TOLERANCE: f32 = 1e-4;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lm")
}

fn folders() -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("tests/fixtures/lm")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("config.json").is_file())
        .collect();
    folders.sort();
    assert!(folders.len() >= 10, "{folders:?}");
    folders
}

struct Reference {
    input_ids: (Vec<usize>, Vec<i64>),
    mask: Vec<i64>,
    logits: Vec<f32>,
    json: Value,
}

fn reference(folder: &Path) -> Reference {
    let bytes = std::fs::read(folder.join("reference.safetensors")).unwrap();
    let tensors = SafeTensors::deserialize(&bytes).unwrap();
    let ints = |name: &str| -> (Vec<usize>, Vec<i64>) {
        let view = tensors.tensor(name).unwrap();
        let values = view
            .data()
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        (view.shape().to_vec(), values)
    };
    let logits = tensors.tensor("logits").unwrap();
    let logits = logits
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let json = std::fs::read_to_string(folder.join("reference.json")).unwrap();
    Reference {
        input_ids: ints("input_ids"),
        mask: ints("attention_mask").1,
        logits,
        json: serde_json::from_str(&json).unwrap(),
    }
}

/// The largest |actual − expected| over the unpadded positions of `[B, T, V]` logits.
fn worst(actual: &[f32], reference: &Reference, vocab: usize) -> f32 {
    let mut worst = 0.0f32;
    for (position, &keep) in reference.mask.iter().enumerate() {
        if keep == 0 {
            continue;
        }
        let range = position * vocab..(position + 1) * vocab;
        for (a, e) in actual[range.clone()].iter().zip(&reference.logits[range]) {
            worst = worst.max((a - e).abs());
        }
    }
    worst
}

/// The index of the largest value.
fn argmax(values: &[f32]) -> usize {
    (0..values.len())
        .max_by(|&a, &b| values[a].total_cmp(&values[b]))
        .unwrap()
}

fn to_vec(logits: Tensor<3>) -> Vec<f32> {
    logits.into_data().convert::<f32>().try_into_vec().unwrap()
}

/// `(whole batch, half then token by token)` largest errors.
fn logits_errors(lm: &CausalLm, reference: &Reference, device: &Device) -> (f32, f32) {
    let (shape, ids) = &reference.input_ids;
    let (batch, len) = (shape[0], shape[1]);
    let vocab = lm.vocab_size();
    let ids = Tensor::<2, Int>::from_data(TensorData::new(ids.clone(), [batch, len]), device);
    let padding: Vec<bool> = reference.mask.iter().map(|&m| m == 0).collect();
    let padding = Tensor::<2, Bool>::from_data(TensorData::new(padding, [batch, len]), device);
    let whole = lm
        .forward(ids.clone(), Some(padding.clone()), &mut lm.cache())
        .unwrap();
    let whole = worst(&to_vec(whole), reference, vocab);
    let mut cache = lm.cache();
    let half = len / 2;
    let mut pieces = vec![lm
        .forward(
            ids.clone().narrow(1, 0, half),
            Some(padding.clone().narrow(1, 0, half)),
            &mut cache,
        )
        .unwrap()];
    for t in half..len {
        pieces.push(
            lm.forward(
                ids.clone().narrow(1, t, 1),
                Some(padding.clone().narrow(1, t, 1)),
                &mut cache,
            )
            .unwrap(),
        );
    }
    assert_eq!(cache.seen(), len);
    let stepped = worst(&to_vec(Tensor::cat(pieces, 1)), reference, vocab);
    (whole, stepped)
}

#[test]
fn every_folder_matches_transformers_logits_and_greedy_ids_on_every_backend() {
    let devices = test_devices();
    let mut failures = Vec::new();
    let mut stderr = std::io::stderr();
    for folder in folders() {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let reference = reference(&folder);
        for test in &devices {
            let lm = match CausalLm::from_pretrained(&folder, &test.device) {
                Ok(lm) => lm,
                Err(error) => {
                    failures.push(format!("{name} on {}: {error}", test.backend));
                    continue;
                }
            };
            let (whole, stepped) = logits_errors(&lm, &reference, &test.device);
            // Dynamic NTK or LongRoPE past their length: the cache keeps each key rotated at
            // the frequencies of its own step (as transformers' cache does), so token by token
            // differs from the whole sequence at once by design; generation is compared below.
            let stepped = (!scaled_past_its_length(&folder, &reference)).then_some(stepped);
            let prompt: Vec<u32> = reference.json["prompt"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_u64().unwrap() as u32)
                .collect();
            let expected: Vec<u32> = reference.json["greedy"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_u64().unwrap() as u32)
                .collect();
            let greedy: Vec<u32> = lm
                .generate(&prompt, &GenerationConfig::greedy(32))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            writeln!(
                stderr,
                "lm {name:<14} {:<8} max logit error {whole:.2e} (cached {}), greedy {}/{} ids",
                test.backend.to_string(),
                stepped.map_or("n/a".into(), |e| format!("{e:.2e}")),
                greedy
                    .iter()
                    .zip(&expected)
                    .take_while(|(a, b)| a == b)
                    .count(),
                expected.len()
            )
            .unwrap();
            if whole > TOLERANCE || stepped.is_some_and(|e| e > TOLERANCE) {
                failures.push(format!(
                    "{name} on {}: logits differ by {whole:e} (whole) and {stepped:?} (cached)",
                    test.backend
                ));
            }
            if greedy != expected {
                failures.push(format!(
                    "{name} on {}: greedy {greedy:?}, transformers {expected:?}",
                    test.backend
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The mixture-of-experts folders with their experts packed for the CPU's own product (the
/// command line's way on a CPU backend), side by side: transformers' logits and greedy ids still.
#[test]
fn packed_experts_match_transformers_logits_and_greedy_ids() {
    let device = Device::flex();
    let mut failures = Vec::new();
    for name in ["mixtral", "qwen3_moe", "deepseek_v3_moe", "gpt_oss"] {
        let folder = fixtures().join(name);
        let reference = reference(&folder);
        let lm = CausalLm::from_pretrained(&folder, &device)
            .unwrap()
            .pack_experts();
        let packed = lm.layers.iter().any(|layer| match &layer.mlp {
            LmFeedForward::Experts(moe) => matches!(moe.experts[0].up_proj, Projection::Packed(_)),
            LmFeedForward::Dense(_) => false,
        });
        assert_eq!(
            packed,
            PackedMatrix::is_fast(),
            "{name}: packed where AVX-512 is"
        );
        let (whole, stepped) = logits_errors(&lm, &reference, &device);
        let ids = |key: &str| -> Vec<u32> {
            reference.json[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_u64().unwrap() as u32)
                .collect()
        };
        let greedy: Vec<u32> = lm
            .generate(&ids("prompt"), &GenerationConfig::greedy(32))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        eprintln!("packed experts {name:<16} max logit error {whole:.2e} (cached {stepped:.2e})");
        if whole > TOLERANCE || stepped > TOLERANCE || greedy != ids("greedy") {
            failures.push(format!(
                "{name}: logits {whole:e} / {stepped:e}, greedy {greedy:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether the reference batch is longer than the length past which the folder's RoPE changes
/// its frequencies (dynamic NTK: `max_position_embeddings`; LongRoPE: the original length).
fn scaled_past_its_length(folder: &Path, reference: &Reference) -> bool {
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("config.json")).unwrap())
            .unwrap();
    let longest = match config["rope_parameters"]["rope_type"].as_str() {
        Some("dynamic") => &config["max_position_embeddings"],
        Some("longrope") => &config["original_max_position_embeddings"],
        _ => return false,
    };
    reference.input_ids.0[1] > longest.as_u64().unwrap() as usize
}

/// A copy of a fixture folder with `edit` applied to its config.json.
fn edited(name: &str, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixtures().join(name)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    let path = dir.path().join("config.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(config.as_object_mut().unwrap());
    std::fs::write(&path, config.to_string()).unwrap();
    dir
}

fn load_error(dir: &Path) -> String {
    let device = Device::flex();
    CausalLm::from_pretrained(dir, &device)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_folder_that_does_not_fit_is_an_error_naming_the_problem() {
    // A wider feed-forward block than the weights: the misshapen tensor is named.
    let dir = edited("llama", |c| {
        c.insert("intermediate_size".into(), 52.into());
    });
    let error = load_error(dir.path());
    assert!(error.contains("layers.0.mlp.gate_proj.weight"), "{error}");
    // More layers than the file has: the missing tensors are named.
    let dir = edited("llama", |c| {
        c.insert("num_hidden_layers".into(), 3.into());
    });
    let error = load_error(dir.path());
    assert!(error.contains("missing weight layers.2."), "{error}");
    // Fewer: the extra layer's weights are named.
    let dir = edited("llama", |c| {
        c.insert("num_hidden_layers".into(), 1.into());
    });
    let error = load_error(dir.path());
    assert!(error.contains("layers.1."), "{error}");
    // An untied config over a tied file: lm_head is missing.
    let dir = edited("qwen2", |c| {
        c.insert("tie_word_embeddings".into(), false.into());
    });
    let error = load_error(dir.path());
    assert!(error.contains("missing weight lm_head.weight"), "{error}");
    // Experts asked of a dense file: the first missing expert tensors are named.
    let dir = edited("deepseek_v3", |c| {
        c.insert("first_k_dense_replace".into(), 1.into());
    });
    let error = load_error(dir.path());
    assert!(
        error.contains("missing weight layers.1.mlp.experts.0."),
        "{error}"
    );
    // DeepSeek's groups must split the experts.
    let dir = edited("deepseek_v3_moe", |c| {
        c.insert("n_group".into(), 4.into());
    });
    let error = load_error(dir.path());
    assert!(
        error.contains("n_routed_experts 6 does not split into n_group 4"),
        "{error}"
    );
    // Experts: more per token than there are, a config with more experts than the file holds
    // (the missing expert's tensors named), a Qwen3-MoE dense layer out of range.
    let dir = edited("mixtral", |c| {
        c.insert("num_experts_per_tok".into(), 6.into());
    });
    let error = load_error(dir.path());
    assert!(
        error.contains("num_experts_per_tok 6 is more than the 5 experts"),
        "{error}"
    );
    let dir = edited("mixtral", |c| {
        c.insert("num_local_experts".into(), 6.into());
    });
    let error = load_error(dir.path());
    assert!(
        error.contains("missing weight layers.0.mlp.experts.5.")
            && error.contains("mlp.gate.weight"),
        "{error}"
    );
    // gpt-oss's fused experts: a config whose experts are wider than the file's, a bad clamp.
    let dir = edited("gpt_oss", |c| {
        c.insert("intermediate_size".into(), 15.into());
    });
    let error = load_error(dir.path());
    assert!(
        error.contains("weight layers.0.mlp.experts.gate_up_proj has shape [5, 36, 28], not the config's [5, 36, 30]"),
        "{error}"
    );
    let dir = edited("gpt_oss", |c| {
        c.insert("swiglu_limit".into(), (-1.0).into());
    });
    assert!(load_error(dir.path()).contains("swiglu_limit is -1: must be positive"));
    let dir = edited("qwen3_moe", |c| {
        c.insert("mlp_only_layers".into(), serde_json::json!([7]));
    });
    let error = load_error(dir.path());
    assert!(error.contains("mlp_only_layers has 7"), "{error}");
    let dir = edited("llama", |c| {
        c.insert("model_type".into(), "gpt_neox".into());
    });
    assert!(load_error(dir.path()).contains("model_type \"gpt_neox\" is not supported"));
    // A truncated weights file and a missing shard are errors, not panics.
    let dir = edited("llama", |_| {});
    let weights = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    let error = load_error(dir.path());
    assert!(error.contains("model.safetensors"), "{error}");
    let dir = edited("llama3", |_| {});
    std::fs::remove_file(dir.path().join("model-00002-of-00008.safetensors")).unwrap();
    let error = load_error(dir.path());
    assert!(
        error.contains("model-00002-of-00008.safetensors") && error.contains("missing"),
        "{error}"
    );
}

#[test]
fn generation_stops_at_eos_samples_reproducibly_and_checks_the_prompt() {
    use attnzoo_models::lm::Sampling;
    let device = Device::flex();
    let lm = CausalLm::from_pretrained(&fixtures().join("mistral"), &device).unwrap();
    let prompt = [1, 20, 30, 40];
    let greedy: Vec<u32> = lm
        .generate(&prompt, &GenerationConfig::greedy(8))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(greedy.len(), 8);
    // Mistral's window W = 4: each layer's cache keeps the 3 positions before the next query.
    let mut generation = lm.generate(&prompt, &GenerationConfig::greedy(8)).unwrap();
    for token in generation.by_ref() {
        token.unwrap();
    }
    assert_eq!(generation.cache().seen(), prompt.len() + 7);
    assert_eq!(generation.cache().held(), [3, 3]);
    // The third greedy token made an end-of-sequence token: generation stops after it.
    let mut config = GenerationConfig::greedy(8);
    config.eos_token_ids = Some(vec![greedy[2]]);
    let stopped: Vec<u32> = lm
        .generate(&prompt, &config)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        stopped,
        greedy[..=greedy.iter().position(|&t| t == greedy[2]).unwrap()]
    );
    let sampling = |seed| {
        GenerationConfig::greedy(12).with_sampling(Sampling {
            temperature: 1.5,
            top_k: Some(20),
            top_p: Some(0.9),
            seed,
        })
    };
    let draw = |seed| -> Vec<u32> {
        lm.generate(&prompt, &sampling(seed))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(draw(7), draw(7));
    assert_ne!(draw(7), draw(8));
    let too_long = vec![5u32; 65];
    let error = lm
        .generate(&too_long, &GenerationConfig::greedy(1))
        .err()
        .unwrap();
    assert_eq!(
        error.to_string(),
        "the prompt has 65 tokens, more than the model's max_position_embeddings 64"
    );
    let error = lm
        .generate(&[1, 67], &GenerationConfig::greedy(1))
        .err()
        .unwrap();
    assert!(error.to_string().contains("token id 67"), "{error}");
}

#[test]
fn text_goes_through_the_folders_tokenizer_and_chat_template() {
    use attnzoo::language_model::LanguageModel;
    let device = Device::flex();
    for name in ["llama", "qwen2"] {
        let folder = fixtures().join(name);
        let reference = reference(&folder);
        let lm = LanguageModel::load(&folder, &device).unwrap();
        let prompt = lm
            .encode(reference.json["prompt_text"].as_str().unwrap())
            .unwrap();
        let expected: Vec<u32> = serde_json::from_value(reference.json["prompt"].clone()).unwrap();
        assert_eq!(prompt, expected, "{name}");
        let mut streamed = String::new();
        let ids = lm
            .generate(&prompt, &GenerationConfig::greedy(32), |_, piece| {
                streamed.push_str(piece);
                Ok::<(), attnzoo::Error>(())
            })
            .unwrap();
        let greedy: Vec<u32> = serde_json::from_value(reference.json["greedy"].clone()).unwrap();
        assert_eq!(ids, greedy, "{name}");
        assert_eq!(
            streamed,
            reference.json["greedy_text"].as_str().unwrap(),
            "{name}"
        );
    }
    let lm = LanguageModel::load(&fixtures().join("qwen2"), &device).unwrap();
    let reference = reference(&fixtures().join("qwen2"));
    assert_eq!(
        lm.chat_prompt("the cat sat").unwrap(),
        reference.json["chat_prompt"].as_str().unwrap()
    );
    let lm = LanguageModel::load(&fixtures().join("mistral"), &device).unwrap();
    assert_eq!(
        lm.encode("hi").unwrap_err().to_string(),
        "the model folder has no tokenizer.json"
    );
    assert_eq!(
        lm.chat_prompt("hi").unwrap_err().to_string(),
        "the model has no chat template (a folder's tokenizer_config.json or chat_template.jinja, a GGUF file's tokenizer.chat_template)"
    );
}

#[test]
fn the_generate_command_streams_ids_and_refuses_bad_numbers_in_one_line() {
    use std::process::Command;
    let folder = fixtures().join("llama3");
    let reference = reference(&folder);
    let prompt: Vec<String> = reference.json["prompt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.to_string())
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .args(["generate", "--model-dir"])
        .arg(&folder)
        .args([
            "--prompt-ids",
            &prompt.join(","),
            "--max-new-tokens",
            "32",
            "--ids",
            "--backend",
            "ndarray",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let greedy: Vec<String> = reference.json["greedy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.to_string())
        .collect();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        greedy.join(" ") + "\n"
    );
    let text = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .args(["generate", "--model-dir"])
        .arg(fixtures().join("llama"))
        .args([
            "--prompt",
            "the cat sat on a mat.",
            "--max-new-tokens",
            "32",
            "--backend",
            "ndarray",
        ])
        .output()
        .unwrap();
    assert!(
        text.status.success(),
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    let expected = reference_text("llama");
    assert_eq!(String::from_utf8(text.stdout).unwrap(), expected + "\n");
    for (option, value) in [
        ("--temperature", "0"),
        ("--temperature", "-1"),
        ("--top-p", "1.5"),
        ("--top-k", "0"),
        ("--max-new-tokens", "-3"),
        ("--prompt-ids", "1,x"),
    ] {
        let mut args = vec!["generate", "--model-dir", "/nonexistent", option, value];
        if option != "--prompt-ids" {
            args.extend(["--prompt-ids", "1"]);
        }
        let output = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{option} {value}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{option} {value}: {stderr}");
        assert!(stderr.contains(option), "{option} {value}: {stderr}");
    }
    // A folder without a tokenizer: --prompt is refused in one line.
    let output = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .args(["generate", "--model-dir"])
        .arg(&folder)
        .args(["--prompt", "hello", "--backend", "ndarray"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr.trim(),
        "attnzoo: the model folder has no tokenizer.json"
    );
}

fn reference_text(name: &str) -> String {
    reference(&fixtures().join(name)).json["greedy_text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn attention_weights_show_each_layers_window() {
    let device = Device::flex();
    for (name, windows) in [("gemma2", [Some(4), None]), ("deepseek_v3", [None, None])] {
        let folder = fixtures().join(name);
        let lm = CausalLm::from_pretrained(&folder, &device).unwrap();
        let reference = reference(&folder);
        let (shape, ids) = &reference.input_ids;
        let len = shape[1];
        // Row 0 of the batch has no padding.
        let ids =
            Tensor::<2, Int>::from_data(TensorData::new(ids[..len].to_vec(), [1, len]), &device);
        let (logits, weights) = lm
            .forward_with_weights(ids.clone(), None, &mut lm.cache())
            .unwrap();
        let plain = lm.forward(ids, None, &mut lm.cache()).unwrap();
        logits
            .into_data()
            .assert_approx_eq::<f32>(&plain.into_data(), burn::tensor::Tolerance::absolute(1e-5));
        assert_eq!(weights.len(), 2);
        for (layer, (weights, window)) in weights.into_iter().zip(windows).enumerate() {
            let [_, heads, rows, keys] = weights.dims();
            assert_eq!((rows, keys), (len, len));
            let values: Vec<f32> = weights.into_data().convert::<f32>().try_into_vec().unwrap();
            for head in 0..heads {
                for i in 0..len {
                    let row = &values[(head * len + i) * len..(head * len + i + 1) * len];
                    let sum: f32 = row.iter().sum();
                    assert!(
                        (sum - 1.0).abs() < 1e-4,
                        "{name} layer {layer}: row {i} sums to {sum}"
                    );
                    for (j, &w) in row.iter().enumerate() {
                        let outside = j > i || window.is_some_and(|w| i - j > w);
                        if outside {
                            assert_eq!(w, 0.0, "{name} layer {layer}: query {i} saw key {j}");
                        }
                    }
                }
            }
        }
    }
}

/// The tiny GGUF files of tests/fixtures/gguf (llama.cpp's converter run on the folders above,
/// by scripts/gen_gguf_fixtures.py) against `transformers` loading the same files: logits of
/// every position within 1e-4, whole and token by token through the cache, and 16 greedy ids
/// (no end-of-sequence stop), on every backend with the weights dequantized at load, and on the
/// CPU backends also with the quantized tensors multiplied from their blocks.
#[test]
fn every_tiny_gguf_file_matches_transformers_dequantized_and_from_its_blocks() {
    use attnzoo_models::lm::GgufWeights;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.extension().is_some_and(|e| e == "gguf")
                && path.with_extension("reference.json").is_file()
        })
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    let mut failures = Vec::new();
    let mut stderr = std::io::stderr();
    for file in &files {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(file.with_extension("reference.json")).unwrap(),
        )
        .unwrap();
        let ids = |key: &str| -> Vec<u32> {
            json[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_u64().unwrap() as u32)
                .collect()
        };
        let (prompt, expected) = (ids("prompt"), ids("greedy"));
        let logits: Vec<f32> = json["all_logits"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| row.as_array().unwrap().iter())
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        for test in test_devices() {
            let cpu = matches!(
                test.backend.to_string().as_str(),
                "ndarray" | "flex" | "tch"
            );
            let ways: &[GgufWeights] = if cpu {
                &[GgufWeights::Dequantized, GgufWeights::Quantized]
            } else {
                &[GgufWeights::Dequantized]
            };
            for &weights in ways {
                let label = format!("{name} on {} ({weights:?})", test.backend);
                let lm = match CausalLm::from_gguf_with(file, weights, &test.device) {
                    Ok(lm) => lm,
                    Err(error) => {
                        failures.push(format!("{label}: {error}"));
                        continue;
                    }
                };
                let len = prompt.len();
                let tensor = |ids: &[u32]| {
                    let ids: Vec<i64> = ids.iter().map(|&id| id.into()).collect();
                    Tensor::<2, Int>::from_data(TensorData::new(ids, [1, len]), &test.device)
                };
                let whole = to_vec(lm.forward(tensor(&prompt), None, &mut lm.cache()).unwrap());
                let mut cache = lm.cache();
                let mut stepped = Vec::new();
                for &id in &prompt {
                    let one = Tensor::<2, Int>::from_data(
                        TensorData::new(vec![id as i64], [1, 1]),
                        &test.device,
                    );
                    stepped.extend(to_vec(lm.forward(one, None, &mut cache).unwrap()));
                }
                let error = |actual: &[f32]| {
                    actual
                        .iter()
                        .zip(&logits)
                        .map(|(a, e)| (a - e).abs())
                        .fold(0.0f32, f32::max)
                };
                let (whole, stepped_logits) = (error(&whole), stepped);
                let stepped = error(&stepped_logits);
                let config = GenerationConfig {
                    eos_token_ids: Some(Vec::new()),
                    ..GenerationConfig::greedy(expected.len())
                };
                let greedy: Vec<u32> = lm
                    .generate(&prompt, &config)
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                writeln!(
                    stderr,
                    "gguf {label:<40} max logit error {whole:.2e} (cached {stepped:.2e}), greedy {}",
                    greedy == expected
                )
                .unwrap();
                // From the blocks, single-token steps quantize the activations to 8 bits, as
                // llama.cpp does (1.2 % of the logits' range here): those logits are held to 2 %
                // of the range, and every next token that leads by more than twice that to itself.
                let eight_bit = weights == GgufWeights::Quantized && name.ends_with("q8_0");
                let range = logits.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let stepped_tolerance = if eight_bit { 0.02 * range } else { TOLERANCE };
                if whole > TOLERANCE || stepped > stepped_tolerance {
                    failures.push(format!(
                        "{label}: logits differ by {whole:e} (whole) and {stepped:e} (cached)"
                    ));
                }
                let vocab = logits.len() / len;
                for (position, (got, want)) in stepped_logits
                    .chunks(vocab)
                    .zip(logits.chunks(vocab))
                    .enumerate()
                {
                    let best = argmax(want);
                    let lead = (0..vocab)
                        .filter(|&v| v != best)
                        .map(|v| want[best] - want[v])
                        .fold(f32::INFINITY, f32::min);
                    if lead > 2.0 * stepped_tolerance && argmax(got) != best {
                        failures.push(format!("{label}: position {position}'s next token differs"));
                    }
                }
                if greedy != expected {
                    failures.push(format!(
                        "{label}: greedy {greedy:?}, transformers {expected:?}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
