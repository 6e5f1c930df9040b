//! Bad input never crashes and never loses work: every command and option class given what a
//! careless or unlucky user gives (out-of-range and non-finite numbers, damaged and foreign
//! checkpoints, missing files, bad UTF-8, full disks, closed pipes), each answered by the exit
//! status expected, one line on stderr that names the problem, and no panic. Then a second run
//! on a folder in training is refused, and a run killed at random moments always leaves a folder
//! that `translate` and `--resume` accept. Tiny models on ndarray.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

/// A small corpus: every combination of subject, verb and adverb.
fn write_corpus(dir: &Path) {
    let subjects = [
        ("Der Hund", "The dog"),
        ("Die Katze", "The cat"),
        ("Das Kind", "The child"),
    ];
    let verbs = [("schläft", "sleeps"), ("läuft", "runs"), ("singt", "sings")];
    let adverbs = [("heute", "today"), ("hier", "here"), ("oft", "often")];
    let mut splits = [String::new(), String::new(), String::new()];
    let mut n = 0;
    for (de_s, en_s) in subjects {
        for (de_v, en_v) in verbs {
            for (de_a, en_a) in adverbs {
                let split = [0, 0, 0, 1, 2][n % 5];
                splits[split].push_str(&format!("{de_s} {de_v} {de_a}.\t{en_s} {en_v} {en_a}.\n"));
                n += 1;
            }
        }
    }
    std::fs::create_dir_all(dir).unwrap();
    for (name, text) in ["train.tsv", "valid.tsv", "test.tsv"].iter().zip(splits) {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// The arguments of a tiny training run of `corpus` into `out`.
fn train_args(corpus: &Path, out: &Path, epochs: usize) -> Vec<String> {
    [
        "train",
        "--out",
        out.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--model",
        "rnn",
        "--learning-rate",
        "0.001",
        "--hidden",
        "8",
        "--batch-size",
        "4",
        "--epochs",
        &epochs.to_string(),
        "--backend",
        "ndarray",
    ]
    .map(String::from)
    .to_vec()
}

/// A folder with a corpus (`corpus/`), a trained one-epoch RNN (`model/`), a reference file
/// (`ref.txt`) and a file that is not a folder (`file`).
struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        write_corpus(&dir.join("corpus"));
        let args = train_args(&dir.join("corpus"), &dir.join("model"), 1);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, stderr) = common::attnzoo(&args, b"");
        assert_eq!(code, 0, "{stderr}");
        std::fs::write(
            dir.join("ref.txt"),
            "The dog sleeps today.\nThe cat runs.\n",
        )
        .unwrap();
        std::fs::write(dir.join("file"), "not a folder").unwrap();
        Self { _tmp: tmp, dir }
    }

    /// `{dir}` in `text` replaced by the fixture's folder.
    fn expand(&self, text: &str) -> String {
        text.replace("{dir}", self.dir.to_str().unwrap())
    }

    /// A copy of the trained checkpoint as `name`, with `file` changed by `edit`.
    fn damaged(&self, name: &str, file: &str, edit: impl Fn(String) -> String) -> PathBuf {
        let copy = self.dir.join(name);
        std::fs::create_dir_all(&copy).unwrap();
        for entry in std::fs::read_dir(self.dir.join("model")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
        let text = std::fs::read_to_string(copy.join(file)).unwrap();
        let edited = edit(text.clone());
        assert_ne!(edited, text, "{name}: the edit changes {file}");
        std::fs::write(copy.join(file), edited).unwrap();
        copy
    }
}

/// Removes the checksums of the configs from the `state.json` in `dir`.
fn forget_config_checksums(dir: &Path) {
    let path = dir.join("state.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let checksums = state["checksums"].as_object_mut().unwrap();
    for config in ["model.json", "train.json", "vocab.json"] {
        assert!(checksums.remove(config).is_some(), "{config} is recorded");
    }
    std::fs::write(&path, state.to_string()).unwrap();
}

/// What a case expects: the exit status and a piece of the one line on stderr.
struct Case {
    args: String,
    stdin: &'static [u8],
    code: i32,
    needle: &'static str,
}

fn case(args: &str, code: i32, needle: &'static str) -> Case {
    Case {
        args: args.to_string(),
        stdin: b"Der Hund schlaeft.\n",
        code,
        needle,
    }
}

/// Runs every case, then fails listing each that did not hold.
fn check_all(fixture: &Fixture, cases: &[Case]) {
    let mut failures = Vec::new();
    for case in cases {
        let args = fixture.expand(&case.args);
        let argv: Vec<&str> = args.split('|').collect();
        let (code, _, stderr) = common::attnzoo(&argv, case.stdin);
        let panicked = stderr.contains("panicked at") || stderr.contains("RUST_BACKTRACE");
        let lines = stderr
            .lines()
            .filter(|l| !l.starts_with("warning:"))
            .count();
        let one_line = case.code == 0 || lines == 1;
        if code != case.code || panicked || !one_line || !stderr.contains(case.needle) {
            failures.push(format!(
                "{args:?}: status {code} (expected {}), wanted {:?} in one line: {stderr}",
                case.code, case.needle
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn numeric_options_are_checked_where_they_are_parsed() {
    let fixture = Fixture::new();
    let translate = "translate|--checkpoint|{dir}/model";
    let train = "train|--out|{dir}/new|--corpus|{dir}/corpus|--hidden|8|--epochs|1";
    let mut cases = vec![
        case(&format!("{translate}|--beam|0"), 2, "beam size 0"),
        case(&format!("{translate}|--beam|100000"), 2, "beam size 100000"),
        case(&format!("{translate}|--beam|65"), 2, "64"),
        case(&format!("{translate}|--beam|-1"), 2, "-1"),
        case(&format!("{translate}|--beam|abc"), 2, "abc"),
        case(&format!("{translate}|--beam|1.5"), 2, "1.5"),
        case(&format!("{translate}|--alpha|nan"), 2, "--alpha"),
        case(&format!("{translate}|--alpha|inf"), 2, "--alpha"),
        case(&format!("{translate}|--alpha|-inf"), 2, "--alpha"),
        case(&format!("{translate}|--alpha|x"), 2, "--alpha"),
        case(&format!("{translate}|--alpha|-5|--beam|2"), 0, ""),
        case(
            &format!("{translate}|--max-len-ratio|0"),
            2,
            "--max-len-ratio",
        ),
        case(
            &format!("{translate}|--max-len-ratio|-1"),
            2,
            "--max-len-ratio",
        ),
        case(
            &format!("{translate}|--max-len-ratio|nan"),
            2,
            "--max-len-ratio",
        ),
        case(
            &format!("{translate}|--max-len-ratio|inf"),
            2,
            "--max-len-ratio",
        ),
        case(&format!("{translate}|--max-len-ratio|0.5"), 0, ""),
        case(
            &format!("{translate}|--no-repeat-ngram|-1"),
            2,
            "--no-repeat-ngram",
        ),
        case(
            &format!("{translate}|--no-repeat-ngram|2.5"),
            2,
            "--no-repeat-ngram",
        ),
        case(
            &format!("{translate}|--no-repeat-ngram|1000000000000"),
            2,
            "n-gram length in 0–1000",
        ),
        case(&format!("{translate}|--no-repeat-ngram|2"), 0, ""),
        case(&format!("{translate}|--backend|foo"), 2, "foo"),
        case(&format!("{translate}|--device|tpu"), 2, "tpu"),
        case(&format!("{translate}|--device|cuda:x"), 2, "cuda:x"),
        case(&format!("{translate}|--unknown"), 2, "--unknown"),
        case("translate", 2, "--checkpoint"),
        case("eval|--checkpoint|{dir}/model|--limit|0", 2, "--limit"),
        case("eval|--checkpoint|{dir}/model|--split|dev", 2, "dev"),
        case("eval|--checkpoint|{dir}/model|--beam|0", 2, "beam size"),
        case(
            "eval|--checkpoint|{dir}/model|--max-len-ratio|nan",
            2,
            "--max-len-ratio",
        ),
        case("embed|--batch-size|0", 2, "--batch-size"),
        case("embed|--batch-size|-3", 2, "-3"),
        case("demo|--minutes|0", 2, "--minutes"),
        case("demo|--minutes|nan", 2, "--minutes"),
        case("demo|--minutes|1e30", 2, "1e30 is not in (0, 10080]"),
        case(
            &format!("{translate}|--alpha|1e30"),
            2,
            "1e30 is not in [-10, 10]",
        ),
        case(
            &format!("{translate}|--max-len-ratio|1e30"),
            2,
            "--max-len-ratio",
        ),
        case(
            &format!("{train}|--learning-rate|11"),
            2,
            "learning rate in (0, 10]",
        ),
        case(
            "train|--out|{dir}/new|--corpus|{dir}/corpus|--hidden|100000",
            2,
            "width in 1",
        ),
        case(&format!("{train}|--layers|4000000000"), 2, "layers in 1"),
        case(
            &format!("{train}|--model|transformer|--attention|dot"),
            2,
            "--attention does not apply",
        ),
        case(
            &format!("{train}|--model|rnn|--layers|3"),
            2,
            "--layers does not apply",
        ),
        case(
            &format!("{train}|--model|rnn|--lexical-bias|true"),
            2,
            "--lexical-bias does not apply",
        ),
        case("demo|--minutes|-1", 2, "--minutes"),
        case("demo|--model|gpt", 2, "gpt"),
        case("frobnicate", 2, "frobnicate"),
        case("data", 2, "'attnzoo data' requires a subcommand"),
    ];
    for (option, value) in [
        ("--learning-rate", "nan"),
        ("--learning-rate", "inf"),
        ("--learning-rate", "0"),
        ("--learning-rate", "-0.001"),
        ("--learning-rate", "fast"),
        ("--teacher-forcing", "2"),
        ("--teacher-forcing", "-0.1"),
        ("--teacher-forcing", "nan"),
        ("--label-smoothing", "1"),
        ("--label-smoothing", "5"),
        ("--label-smoothing", "-0.1"),
        ("--label-smoothing", "nan"),
        ("--label-smoothing", "0.99999999999"),
        ("--batch-size", "0"),
        ("--batch-size", "-1"),
        ("--max-minutes", "nan"),
        ("--max-minutes", "0"),
        ("--max-minutes", "-1"),
        ("--max-minutes", "inf"),
        ("--train-limit", "0"),
        ("--hidden", "0"),
        ("--dropout", "1"),
        ("--dropout", "nan"),
        ("--epochs", "0"),
        ("--epochs", "many"),
        ("--warmup-steps", "-1"),
        ("--bpe", "x"),
        ("--bpe", "3"),
        ("--bpe", "4294967296"),
        ("--lexicon", "-5"),
        ("--seed", "-1"),
        ("--model", "gpt"),
        ("--attention", "magic"),
        ("--lexical-bias", "maybe"),
    ] {
        cases.push(case(&format!("{train}|{option}|{value}"), 2, option));
    }
    check_all(&fixture, &cases);
    assert!(
        !fixture.dir.join("new").exists(),
        "a refused run writes nothing"
    );
}

#[test]
fn a_command_line_without_a_subcommand_asks_for_one() {
    let (code, stdout, stderr) = common::attnzoo(&[], b"");
    assert_eq!(code, 2);
    assert!(
        stdout.is_empty() && stderr.contains("requires a subcommand"),
        "{stderr}"
    );
}

#[test]
fn damaged_and_foreign_checkpoints_are_one_line_errors() {
    let fixture = Fixture::new();
    let replace = |from: &'static str, to: &'static str| {
        move |text: String| {
            let edited = regex_free_replace(&text, from, to);
            assert_ne!(edited, text, "{from:?} in {text}");
            edited
        }
    };
    let damaged = [
        (
            "model.json",
            "\"dropout\": 0.2",
            "\"dropout\": 5.0",
            "dropout",
        ),
        (
            "model.json",
            "\"hidden_dim\": 8",
            "\"hidden_dim\": 0",
            "hidden_dim",
        ),
        ("model.json", "\"Rnn\"", "\"Gru\"", "model.json"),
        (
            "train.json",
            "\"learning_rate\": 0.001",
            "\"learning_rate\": null",
            "train.json",
        ),
        (
            "train.json",
            "\"learning_rate\": 0.001",
            "\"learning_rate\": -1.0",
            "learning_rate",
        ),
        (
            "train.json",
            "\"label_smoothing\": 0.1",
            "\"label_smoothing\": 5.0",
            "label_smoothing",
        ),
        (
            "train.json",
            "\"batch_size\": 4",
            "\"batch_size\": 0",
            "batch_size",
        ),
        (
            "train.json",
            "\"teacher_forcing\": 1.0",
            "\"teacher_forcing\": 2.0",
            "teacher_forcing",
        ),
        ("train.json", "\"max_len\": 50", "\"max_len\": 0", "max_len"),
        ("train.json", "\"epochs\": 1", "\"epochs\": 0", "epochs"),
        (
            "train.json",
            "\"train_limit\": null",
            "\"train_limit\": 0",
            "train_limit",
        ),
        (
            "model.json",
            "\"hidden_dim\": 8",
            "\"hidden_dim\": 1000000000000",
            "is not a width",
        ),
        ("vocab.json", "\"<unk>\",", "\"<unk>\",\"<unk>\",", "twice"),
        ("vocab.json", "\"<pad>\",", "", "vocab.json"),
        ("vocab.json", "\"tokens\"", "\"tokenz\"", "vocab.json"),
        ("state.json", "\"weights\"", "\"weightz\"", "state.json"),
        (
            "state.json",
            "\"weights\": \"weights-epoch-1.safetensors\"",
            "\"weights\": \"\"",
            "no weights file",
        ),
        (
            "state.json",
            "\"best_weights\": \"weights-epoch-1.safetensors\"",
            "\"best_weights\": \"weights-epoch-9.safetensors\"",
            "weights-epoch-9",
        ),
        ("state.json", "adam-epoch-1", "adam-epoch-7", ""),
    ];
    let mut cases = Vec::new();
    // An edited config is refused by its checksum in state.json …
    let edited = fixture.damaged(
        "edited",
        "model.json",
        replace("\"dropout\": 0.2", "\"dropout\": 0.3"),
    );
    cases.push(case(
        &format!("translate|--checkpoint|{}", edited.display()),
        2,
        "model.json is not the file state.json recorded",
    ));
    // … and, where none was recorded (a run saved before configs had one), by its ranges.
    for (i, (file, from, to, needle)) in damaged.into_iter().enumerate() {
        let dir = fixture.damaged(&format!("damaged-{i}"), file, replace(from, to));
        forget_config_checksums(&dir);
        let code = if needle.is_empty() { 0 } else { 2 };
        cases.push(case(
            &format!("translate|--checkpoint|{}", dir.display()),
            code,
            needle,
        ));
    }
    // Weights cut in half, replaced by junk (recorded by checksum or not), or not finite.
    let weights = |dir: &Path| dir.join("weights-epoch-1.safetensors");
    let unrecord = |text: String| text.replace("\"checksums\"", "\"former_checksums\"");
    let half = fixture.damaged("half", "state.json", |t| t + " ");
    let bytes = std::fs::read(weights(&half)).unwrap();
    std::fs::write(weights(&half), &bytes[..bytes.len() / 2]).unwrap();
    let junk = b"\x10\0\0\0\0\0\0\0{\"a\": 1}";
    let unchecked = fixture.damaged("unchecked", "state.json", unrecord);
    std::fs::write(weights(&unchecked), junk).unwrap();
    let nan = fixture.damaged("nan", "state.json", unrecord);
    poison(&weights(&nan));
    for (dir, needle) in [
        (&half, "not the file state.json recorded"),
        (&unchecked, "damaged or foreign weights"),
        (&nan, "not finite"),
    ] {
        cases.push(case(
            &format!("translate|--checkpoint|{}", dir.display()),
            2,
            needle,
        ));
    }
    for command in ["translate", "eval", "attend"] {
        let extra = match command {
            "eval" => "|--corpus|{dir}/corpus",
            "attend" => "|--out|{dir}/maps|Der Hund schläft.",
            _ => "",
        };
        cases.push(case(
            &format!("{command}|--checkpoint|{{dir}}/nowhere{extra}"),
            2,
            "not a trained checkpoint",
        ));
        cases.push(case(
            &format!("{command}|--checkpoint|{}{extra}", nan.display()),
            2,
            "not finite",
        ));
    }
    check_all(&fixture, &cases);
}

/// Rewrites every float tensor of a safetensors file as NaN, keeping its header.
fn poison(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let header = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    for chunk in bytes[8 + header..].chunks_exact_mut(4) {
        chunk.copy_from_slice(&f32::NAN.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// `text` with the first `from` replaced by `to`.
fn regex_free_replace(text: &str, from: &str, to: &str) -> String {
    text.replacen(from, to, 1)
}

#[test]
fn files_streams_and_folders_are_checked() {
    let fixture = Fixture::new();
    let bad_utf8 = Case {
        args: "translate|--checkpoint|{dir}/model".into(),
        stdin: b"ok\nbad \xff\n",
        code: 2,
        needle: "stdin is not UTF-8 (line 2",
    };
    std::fs::write(fixture.dir.join("latin1.txt"), b"Gr\xfc\xdfe\n").unwrap();
    // A line far beyond any sentence is refused before it is tokenized.
    let huge_line = Case {
        args: "translate|--checkpoint|{dir}/model".into(),
        stdin: Box::leak(
            format!("Hallo.\n{}\n", "Haus ".repeat(2001))
                .into_bytes()
                .into_boxed_slice(),
        ),
        code: 2,
        needle: "sentence 2: 10005 characters; a sentence may have at most 10000",
    };
    let mut cases = vec![
        bad_utf8,
        huge_line,
        case("bleu|--ref|{dir}/missing.txt", 2, "missing.txt"),
        case("bleu|--ref|{dir}/corpus", 2, "corpus"),
        case("bleu|--ref|{dir}/latin1.txt", 2, "latin1.txt is not UTF-8"),
        case(
            "bleu|--ref|{dir}/ref.txt",
            2,
            "1 hypotheses but 2 references",
        ),
        case("bleu", 2, "--ref"),
        Case {
            args: "bleu|--ref|{dir}/ref.txt".into(),
            stdin: b"\xff\xfe\n",
            code: 2,
            needle: "stdin is not UTF-8",
        },
        case(
            "eval|--checkpoint|{dir}/model|--corpus|{dir}/nowhere",
            2,
            "nowhere",
        ),
        case(
            "eval|--checkpoint|{dir}/model|--pairs|{dir}/nowhere.tsv",
            2,
            "nowhere.tsv",
        ),
        case(
            "eval|--checkpoint|{dir}/model|--pairs|{dir}/latin1.txt",
            2,
            "latin1.txt",
        ),
        case(
            "eval|--checkpoint|{dir}/model|--pairs|{dir}/corpus/test.tsv|--split|valid",
            2,
            "--split",
        ),
        case(
            "eval|--checkpoint|{dir}/model|--pairs|{dir}/corpus/test.tsv",
            0,
            "",
        ),
        case(
            "attend|--checkpoint|{dir}/model|--out|{dir}/maps|",
            2,
            "empty",
        ),
        case(
            "attend|--checkpoint|{dir}/model|--out|{dir}/file/maps|Der Hund.",
            2,
            "file",
        ),
        case("embed|--model-dir|{dir}/nowhere", 2, "no model in"),
        case(
            "train|--out|{dir}/x|--corpus|{dir}/nowhere",
            2,
            "attnzoo data fetch",
        ),
        case(
            "train|--out|{dir}/file/x|--corpus|{dir}/corpus|--hidden|8",
            2,
            "file",
        ),
        case(
            "train|--out|{dir}/model|--corpus|{dir}/corpus|--hidden|8",
            2,
            "--resume",
        ),
        case(
            "train|--out|{dir}/empty|--corpus|{dir}/corpus|--resume",
            2,
            "no run to resume",
        ),
        // The run has trained its one epoch: resuming it without asking for more does nothing.
        case(
            "train|--out|{dir}/model|--corpus|{dir}/corpus|--resume",
            2,
            "has trained all its 1 epochs",
        ),
        case(
            "train|--out|{dir}/model|--corpus|{dir}/corpus|--resume|--epochs|5|--max-minutes|0.00001",
            2,
            "counts the run's whole training",
        ),
        case(
            "train|--out|{dir}/model|--corpus|{dir}/corpus|--resume|--batch-size|8",
            2,
            "--batch-size 8 (the run's: 4)",
        ),
        case(
            "train|--out|{dir}/model|--corpus|{dir}/corpus|--resume|--hidden|16|--model|rnn",
            2,
            "--model --hidden (another model",
        ),
        case("data|fetch|--cache|{dir}/file/cache", 2, "file"),
        case("check|--backend|ndarray|--device|gpu", 2, "ndarray"),
        // `demo --fresh` deletes the run in OUT/model, and nothing that is not a run.
        case(
            "demo|--fresh|--backend|ndarray|--out|{dir}/mine",
            2,
            "not an attnzoo run's file",
        ),
    ];
    std::fs::create_dir_all(fixture.dir.join("mine/model")).unwrap();
    std::fs::write(fixture.dir.join("mine/model/notes.txt"), "mine").unwrap();
    if !cfg!(feature = "tch") {
        cases.push(case("check|--backend|tch", 2, "--features tch"));
    }
    // A 400-word sentence: the heatmap shows its first tokens only (at most 60).
    let long = "Der Hund schläft heute, ".repeat(80);
    cases.push(case(
        &format!("attend|--checkpoint|{{dir}}/model|--out|{{dir}}/long|{long}"),
        0,
        "translating the first",
    ));
    // Two sentences: the heatmaps are the first one's, and a note says so.
    cases.push(case(
        "attend|--checkpoint|{dir}/model|--out|{dir}/two|Der Hund schläft. Die Katze läuft.",
        0,
        "the text has 2 sentences; drawing the attention behind the first",
    ));
    // A tokenizer with more tokens than the model's vocabulary.
    let minilm = attnzoo::sentence_embedding::default_model_dir();
    if minilm.join("model.safetensors").is_file() {
        let bigger = fixture.dir.join("minilm");
        std::fs::create_dir_all(&bigger).unwrap();
        for file in ["config.json", "model.safetensors"] {
            std::os::unix::fs::symlink(minilm.join(file), bigger.join(file)).unwrap();
        }
        let mut tokenizer: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(minilm.join("tokenizer.json")).unwrap())
                .unwrap();
        tokenizer["model"]["vocab"]["[EXTRA]"] = 30522.into();
        std::fs::write(bigger.join("tokenizer.json"), tokenizer.to_string()).unwrap();
        cases.push(case(
            "embed|--model-dir|{dir}/minilm",
            2,
            "but the model's vocabulary 30522",
        ));
    }
    check_all(&fixture, &cases);
    assert!(fixture.dir.join("mine/model/notes.txt").is_file());
    let long_map = image_size(&fixture.dir.join("long/attention.png"));
    assert!(long_map.0 * long_map.1 < 4_000_000, "{long_map:?}");
}

/// The width and height of a PNG, from its header.
fn image_size(path: &Path) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap();
    let number = |at: usize| u64::from(u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()));
    (number(16), number(20))
}

#[test]
fn checkpoint_files_are_readable_by_everyone_the_umask_allows() {
    use std::os::unix::fs::PermissionsExt;
    let fixture = Fixture::new();
    for entry in std::fs::read_dir(fixture.dir.join("model")).unwrap() {
        let entry = entry.unwrap();
        let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o444, 0o444, "{:?}: {mode:o}", entry.file_name());
    }
}

/// Runs `attnzoo ARGS` with its stdout on `/dev/full`: (status, stderr).
fn to_full_disk(args: &[&str], stdin: &[u8]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `attnzoo ARGS` with a reader that goes away at once: (status or signal, stderr).
fn to_closed_pipe(args: &[&str], stdin: &[u8]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(141),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn stdout_failures_are_errors_and_closed_pipes_end_quietly() {
    let fixture = Fixture::new();
    let model = fixture.dir.join("model");
    let corpus = fixture.dir.join("corpus");
    let reference = fixture.dir.join("ref.txt");
    let maps = fixture.dir.join("maps");
    let many = "Der Hund schläft heute.\n".repeat(200);
    let commands: Vec<(Vec<&str>, &[u8])> = vec![
        (vec!["backends"], b""),
        (vec!["check", "--backend", "ndarray"], b""),
        (
            vec!["bleu", "--ref", reference.to_str().unwrap()],
            b"The dog.\nThe cat.\n",
        ),
        (
            vec![
                "eval",
                "--checkpoint",
                model.to_str().unwrap(),
                "--corpus",
                corpus.to_str().unwrap(),
            ],
            b"",
        ),
        (
            vec![
                "attend",
                "--checkpoint",
                model.to_str().unwrap(),
                "--out",
                maps.to_str().unwrap(),
                "Der Hund schläft.",
            ],
            b"",
        ),
        (
            vec!["translate", "--checkpoint", model.to_str().unwrap()],
            many.as_bytes(),
        ),
    ];
    for (args, stdin) in &commands {
        let (code, stderr) = to_full_disk(args, stdin);
        assert_eq!(code, 1, "{args:?} to /dev/full: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot write to stdout"),
            "{args:?}: {stderr}"
        );
        let (code, stderr) = to_closed_pipe(args, stdin);
        assert!(
            code == 0 || code == 141,
            "{args:?} to a closed pipe: {code} {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // `translate >&-`: stdout closed from the start is an error, not a silent success.
    let status = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" translate --checkpoint \"$1\" >&- 2>/dev/null")
        .arg(env!("CARGO_BIN_EXE_attnzoo"))
        .arg(&model)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    // A `/dev/null` opened read-write by the caller (Python's `subprocess.DEVNULL`) is no error.
    let status = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .args(["translate", "--checkpoint", model.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(
            std::fs::File::options()
                .read(true)
                .write(true)
                .open("/dev/null")
                .unwrap(),
        )
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

/// Waits until `path` holds some text (a training run writes its id into its lock).
fn wait_for_text(path: &Path) {
    let started = Instant::now();
    while std::fs::read_to_string(path).map_or(true, |text| text.is_empty()) {
        assert!(started.elapsed() < Duration::from_secs(60), "no {path:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The epochs the run in `out` has saved (0 before its first).
fn epochs_done(out: &Path) -> usize {
    std::fs::read_to_string(out.join("state.json")).map_or(0, |text| {
        let state: serde_json::Value = serde_json::from_str(&text).unwrap();
        state["epoch"].as_u64().unwrap() as usize
    })
}

#[test]
fn a_second_run_on_a_folder_in_training_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    // Where `demo --out run` keeps its model: `demo --fresh` must not delete it from under the run.
    let out = tmp.path().join("run").join("model");
    write_corpus(&corpus);
    let mut first = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .args(train_args(&corpus, &out, 10_000))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_text(&out.join("model.json")); // written last of the configs, after the lock
    let run_dir = tmp.path().join("run");
    let demo_fresh = [
        "demo",
        "--fresh",
        "--backend",
        "ndarray",
        "--out",
        run_dir.to_str().unwrap(),
    ];
    for args in [
        train_args(&corpus, &out, 3),
        [train_args(&corpus, &out, 3), vec!["--resume".into()]].concat(),
        demo_fresh.map(String::from).to_vec(),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, stderr) = common::attnzoo(&args, b"");
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("in use by another training run")
                && stderr.contains(out.to_str().unwrap())
                && stderr.contains(&first.id().to_string()),
            "{stderr}"
        );
        assert!(
            out.join("model.json").is_file(),
            "{args:?} left the run in place"
        );
    }
    first.kill().unwrap();
    first.wait().unwrap();
    // The lock goes with its process: the folder can be resumed now, for one epoch more than
    // the first run finished (if it finished any).
    let mut args = train_args(&corpus, &out, epochs_done(&out) + 1);
    args.push("--resume".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, stderr) = common::attnzoo(&args, b"");
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_run_killed_at_random_moments_always_leaves_a_usable_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    let out = tmp.path().join("run");
    write_corpus(&corpus);
    // splitmix64 from seed 13: the same pauses in every run.
    let mut state = 13u64;
    let mut next_u64 = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for round in 0..20 {
        let mut args = train_args(&corpus, &out, 10_000);
        if out.join("model.json").is_file() {
            args.push("--resume".into());
        }
        let mut run = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100 + next_u64() % 1500));
        run.kill().unwrap(); // SIGKILL
        run.wait().unwrap();
        let (code, stdout, stderr) = common::attnzoo(
            &["translate", "--checkpoint", out.to_str().unwrap()],
            "Der Hund schläft.\n".as_bytes(),
        );
        let trained = out.join("state.json").is_file();
        if trained {
            assert_eq!(code, 0, "round {round}: {stderr}");
            assert_eq!(stdout.lines().count(), 1, "round {round}: {stdout}");
        } else {
            assert_eq!(code, 2, "round {round}: {stderr}");
            assert!(stderr.contains("not a trained checkpoint"), "{stderr}");
        }
    }
    // On a busy machine no epoch may have finished between the kills: the folder must still be
    // accepted, resumed or started afresh.
    let mut args = train_args(&corpus, &out, epochs_done(&out) + 1);
    if out.join("model.json").is_file() {
        args.push("--resume".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, stderr) = common::attnzoo(&args, b"");
    assert_eq!(code, 0, "{stderr}");
    let leftovers: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_diverging_run_stops_with_an_error_and_saves_nothing_wrecked() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    let out = tmp.path().join("wild");
    write_corpus(&corpus);
    let mut args = train_args(&corpus, &out, 3);
    let rate = args.iter().position(|a| a == "--learning-rate").unwrap() + 1;
    args[rate] = "10".into();
    args.extend(["--warmup-steps".into(), "1".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, stderr) = common::attnzoo(&args, b"");
    assert_eq!(code, 2, "{stderr}");
    assert!(!stderr.contains("panicked at"), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("training diverged"), "{stderr}");
    let weights = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "safetensors")
        })
        .count();
    assert_eq!(weights, 0, "no wrecked epoch is saved: {stderr}");
}
