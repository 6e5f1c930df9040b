//! The translation pipeline end to end on a tiny corpus the test writes itself: train on
//! ndarray → checkpoint → resume → translate and eval, and the same checkpoint decoded on every
//! usable backend, its attention maps too. Bad checkpoints and bad input give one-line errors.

use std::path::Path;

use attnzoo::attention_maps::AttentionMaps;
use attnzoo::translation::{DecodeConfig, Translator};
use attnzoo_backends::test_devices;

mod common;

use common::{train, workdir, write_corpus};

fn attnzoo(args: &[&str], stdin: &str) -> (i32, String, String) {
    common::attnzoo(args, stdin.as_bytes())
}

fn history(checkpoint: &Path) -> Vec<serde_json::Value> {
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(checkpoint.join("state.json")).unwrap())
            .unwrap();
    state["history"].as_array().unwrap().clone()
}

/// The names of the files in `dir` that start with `start`.
fn files_starting(dir: &Path, start: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().to_string())
        .filter(|name| name.starts_with(start))
        .collect();
    names.sort();
    names
}

/// Every row of every map is a distribution over `keys` keys; `causal`: none sees later keys.
fn assert_distributions(maps: &AttentionMaps, rows: usize, keys: usize, causal: bool) {
    for heads in maps {
        for map in heads {
            assert_eq!(map.len(), rows);
            for (row, weights) in map.iter().enumerate() {
                assert_eq!(weights.len(), keys);
                let total: f32 = weights.iter().sum();
                assert!((total - 1.0).abs() < 1e-4, "row {row} sums to {total}");
                if causal {
                    assert!(weights[row + 1..].iter().all(|&w| w == 0.0), "{weights:?}");
                }
            }
        }
    }
}

/// `Translator::attend` with beam search gives the translation `translate` gives, and every
/// attention map (cross, encoder, decoder) the same on every backend as on the first.
fn attention_agrees_on_every_backend(checkpoint: &Path, model: &str) {
    let sentence = "Die Katze läuft hier.";
    let config = DecodeConfig::beam(3);
    let mut first: Option<attnzoo::translation::Attention> = None;
    for test in test_devices() {
        let translator = Translator::load(checkpoint, &test.device).unwrap();
        let attention = translator.attend(sentence, &config).unwrap();
        let translation = translator.translate(&[sentence], &config).unwrap();
        assert_eq!(attention.translation, translation[0]);
        // A translation as long as the model allows still fits the teacher-forced pass.
        let long = vec!["Katze"; 45].join(" ");
        let unbounded = DecodeConfig {
            max_len_ratio: 100.0,
            ..DecodeConfig::default()
        };
        let attention_long = translator.attend(&long, &unbounded).unwrap();
        assert!(attention_long.target.len() <= translator.checkpoint().max_output_len());
        let (s, t) = (attention.source.len(), attention.target.len());
        assert_eq!(attention.decoder_inputs.len(), t);
        assert_eq!(attention.decoder_inputs[0], "<bos>");
        assert_distributions(&attention.cross, t, s, false);
        assert_distributions(&attention.encoder, s, s, false);
        assert_distributions(&attention.decoder, t, t, true);
        let layers = if model == "rnn" { [1, 0, 0] } else { [3, 3, 3] };
        let counted = [&attention.cross, &attention.encoder, &attention.decoder].map(Vec::len);
        assert_eq!(counted, layers, "{model}: cross, encoder, decoder layers");
        // The Transformer's lexicon: p_lex(y_t | f_j) of each produced and each source token.
        let lexicon = attention.lexicon.as_ref().map(|rows| {
            assert!(rows.iter().flatten().all(|p| (0.0..=1.0).contains(p)));
            (rows.len(), rows[0].len())
        });
        assert_eq!(
            lexicon,
            (model == "transformer").then_some((t, s)),
            "{model}"
        );
        match &first {
            None => first = Some(attention),
            Some(reference) => {
                let backend = test.backend.name();
                assert_eq!(attention.translation, reference.translation, "{backend}");
                let lexicons = [&attention.lexicon, &reference.lexicon]
                    .map(|lexicon| vec![lexicon.iter().cloned().collect::<Vec<_>>()]);
                let pairs = [
                    (&attention.cross, &reference.cross),
                    (&attention.encoder, &reference.encoder),
                    (&attention.decoder, &reference.decoder),
                    (&lexicons[0], &lexicons[1]),
                ];
                for (maps, expected) in pairs {
                    let values = maps.iter().flatten().flatten().flatten();
                    let wanted = expected.iter().flatten().flatten().flatten();
                    for (value, wanted) in values.zip(wanted) {
                        assert!(
                            (value - wanted).abs() < 1e-4,
                            "{backend}: {value} ≠ {wanted}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn train_resume_translate_and_eval_then_decode_on_every_backend() {
    let tmp = workdir();
    let dir = tmp.path();
    write_corpus(&dir.join("corpus"));
    for model in ["rnn", "transformer"] {
        let checkpoint = dir.join(model);
        let (code, _, stderr) = train(dir, model, "2", &[]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(history(&checkpoint).len(), 2);
        // The Transformer's output is biased by a lexicon of the sentences and the dictionary's
        // 12 entries (Arthur et al. 2016), which it keeps in its weights; the RNN has none.
        assert_eq!(
            stderr.contains("IBM Model 1 over 41 sentences and 12 dictionary entries"),
            model == "transformer",
            "{stderr}"
        );
        let weights = std::fs::read(checkpoint.join("weights-epoch-2.safetensors")).unwrap();
        let has_lexicon = weights.windows(21).any(|w| w == b"Transformer.lexicon.t");
        assert_eq!(has_lexicon, model == "transformer");
        // The folder is not overwritten without --resume; with it, training continues.
        let (code, _, stderr) = train(dir, model, "2", &[]);
        assert_eq!(code, 2);
        assert!(stderr.contains("--resume"), "{stderr}");
        let (code, _, stderr) = train(dir, model, "4", &["--resume"]);
        assert_eq!(code, 0, "{stderr}");
        let epochs = history(&checkpoint);
        assert_eq!(epochs.len(), 4);
        let loss = |e: &serde_json::Value| e["train_loss"].as_f64().unwrap();
        assert!(
            loss(&epochs[3]) < loss(&epochs[0]),
            "training lowers the loss: {epochs:?}"
        );
        // Only the last epoch's files stay, and the best epoch's weights where that is an
        // earlier one (on a corpus this small, validation BLEU can fall in the last epoch).
        let bleu = |e: &serde_json::Value| e["valid_bleu"].as_f64().unwrap();
        let mut kept = vec!["weights-epoch-4.safetensors"];
        if epochs.iter().any(|e| bleu(e) > bleu(&epochs[3])) {
            kept.insert(0, "weights-best.safetensors");
        }
        assert_eq!(files_starting(&checkpoint, "weights-"), kept, "{epochs:?}");
        assert_eq!(files_starting(&checkpoint, "adam-"), ["adam-epoch-4.bpk"]);

        let input = "Der Hund schläft heute.\n\nDas Kind singt oft.\nDer Zauberer tanzt.\n";
        let mut outputs = Vec::new();
        for test in test_devices() {
            let backend = test.backend.name();
            for beam in ["1", "3"] {
                let (code, stdout, stderr) = attnzoo(
                    &[
                        "translate",
                        "--checkpoint",
                        checkpoint.to_str().unwrap(),
                        "--beam",
                        beam,
                        "--backend",
                        backend,
                    ],
                    input,
                );
                assert_eq!(code, 0, "{backend}: {stderr}");
                let lines: Vec<&str> = stdout.lines().collect();
                assert_eq!(
                    lines.len(),
                    4,
                    "{backend}: one line per input line: {stdout:?}"
                );
                assert_eq!(lines[1], "", "an empty line stays empty");
                outputs.push((backend, beam, stdout));
            }
        }
        for (backend, beam, stdout) in &outputs {
            let same_beam = outputs.iter().find(|o| o.1 == *beam).unwrap();
            assert_eq!(
                stdout, &same_beam.2,
                "{model}: {backend} beam {beam} decodes like {}",
                same_beam.0
            );
        }
        attention_agrees_on_every_backend(&checkpoint, model);
        let (code, stdout, stderr) = attnzoo(
            &[
                "eval",
                "--checkpoint",
                checkpoint.to_str().unwrap(),
                "--corpus",
                dir.join("corpus").to_str().unwrap(),
                "--backend",
                "ndarray",
            ],
            "",
        );
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stdout.starts_with("BLEU = ") && stdout.contains("chrF2 = "),
            "{stdout}"
        );
        let (code, stdout, stderr) = attnzoo(
            &[
                "attend",
                "--checkpoint",
                checkpoint.to_str().unwrap(),
                "--out",
                dir.join(format!("maps-{model}")).to_str().unwrap(),
                "Die Katze läuft hier.",
            ],
            "",
        );
        assert_eq!(code, 0, "{stderr}");
        let maps: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            maps.len(),
            if model == "rnn" { 1 } else { 3 * 4 + 1 }, // the Transformer's: and its lexicon's
            "{stdout}"
        );
        assert!(maps
            .iter()
            .all(|png| Path::new(png).is_file() && Path::new(png).with_extension("svg").is_file()));
    }
}

#[test]
fn a_subword_vocabulary_trains_resumes_and_translates() {
    let tmp = workdir();
    let dir = tmp.path();
    write_corpus(&dir.join("corpus"));
    let checkpoint = dir.join("rnn");
    let (code, _, stderr) = train(dir, "rnn", "1", &["--bpe", "80"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("subword vocabularies"), "{stderr}");
    let (code, _, stderr) = train(dir, "rnn", "2", &["--resume"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains("start from zero"),
        "Adam's state is restored: {stderr}"
    );
    let vocab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(checkpoint.join("vocab.json")).unwrap())
            .unwrap();
    let source_tokens = vocab["source"]["tokens"].as_array().unwrap();
    assert!(source_tokens.len() <= 80 && vocab["source"]["bpe"]["merges"].is_array());
    let (code, stdout, stderr) = attnzoo(
        &[
            "translate",
            "--checkpoint",
            checkpoint.to_str().unwrap(),
            "--beam",
            "2",
        ],
        "Der Zauberer tanzt.\n\n",
    );
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout:?}");
    assert!(!lines[0].contains("##"), "subwords are joined: {stdout:?}");
    assert_eq!(lines[1], "");
}

#[test]
fn damaged_or_mismatched_checkpoints_and_missing_data_are_one_line_errors() {
    let tmp = workdir();
    let dir = tmp.path();
    write_corpus(&dir.join("corpus"));
    // More dictionary entries per epoch than the lexicon holds: refused before anything is written.
    let (code, _, stderr) = train(dir, "rnn", "1", &["--lexicon", "100000000"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("lexicon_per_epoch: 100000000 is more than the")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert!(!dir.join("rnn").exists(), "a refused run writes nothing");
    // Whole words, so that a word taken out of vocab.json changes the vocabulary's size.
    let (code, _, stderr) = train(dir, "rnn", "1", &["--bpe", "0"]);
    assert_eq!(code, 0, "{stderr}");
    let checkpoint = dir.join("rnn");
    let run = |checkpoint: &Path| {
        attnzoo(
            &["translate", "--checkpoint", checkpoint.to_str().unwrap()],
            "Der Hund schläft.\n",
        )
    };
    let one_line = |(code, stdout, stderr): (i32, String, String), needle: &str| {
        assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "expected {needle:?} in {stderr}");
    };
    one_line(run(&dir.join("nowhere")), "not a trained checkpoint");
    // Another run's vocabulary.
    let foreign = dir.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    for file in std::fs::read_dir(&checkpoint).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), foreign.join(file.file_name())).unwrap();
    }
    let vocab = std::fs::read_to_string(foreign.join("vocab.json")).unwrap();
    std::fs::write(
        foreign.join("vocab.json"),
        vocab.replacen("\"schläft\",", "", 1),
    )
    .unwrap();
    one_line(
        run(&foreign),
        "vocab.json is not the file state.json recorded",
    );
    // Truncated weights.
    let weights = std::fs::read_dir(&foreign)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .unwrap();
    std::fs::write(foreign.join("vocab.json"), vocab).unwrap();
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    one_line(run(&foreign), "weights");
    // No corpus.
    let (code, _, stderr) = attnzoo(
        &[
            "train",
            "--out",
            dir.join("x").to_str().unwrap(),
            "--corpus",
            dir.join("none").to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("attnzoo data fetch"), "{stderr}");
}

#[test]
fn bleu_command_prints_sacrebleus_line_and_json() {
    let tmp = workdir();
    let dir = tmp.path();
    let reference = dir.join("ref.txt");
    std::fs::write(
        &reference,
        "The cat sat on the mat.\nA dog barked loudly today.\n",
    )
    .unwrap();
    let (code, stdout, stderr) = attnzoo(
        &["bleu", "--ref", reference.to_str().unwrap()],
        "The cat sat on the mat.\nA dog barked today.\n",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("BLEU = ") && stdout.contains("hyp_len = 12 ref_len = 13"),
        "{stdout}"
    );
    let (code, stdout, _) = attnzoo(
        &["bleu", "--ref", reference.to_str().unwrap(), "--json"],
        "The cat sat on the mat.\nA dog barked today.\n",
    );
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for key in ["score", "precisions", "bp", "sys_len", "ref_len"] {
        assert!(json.get(key).is_some(), "{key} in {stdout}");
    }
    let (code, _, stderr) = attnzoo(
        &["bleu", "--ref", reference.to_str().unwrap()],
        "only one line\n",
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("1 hypotheses but 2 references"), "{stderr}");
}
