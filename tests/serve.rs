//! `attnzoo serve` and `attnzoo::serve`: every route and every bad request in process (tiny
//! models trained here, MiniLM where it is fetched), then the binary on a loopback port: its
//! page rendered by headless Chromium, and SIGTERM ending it with status 0.
//!
//! `ATTNZOO_REQUIRE_CHROMIUM=1` (CI) makes a missing `chromium` a failure instead of a skip.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use attnzoo::language_model::LanguageModel;
use attnzoo::sentence_embedding::default_model_dir;
use attnzoo::serve::{
    router, Request as Work, Response as Answer, Worker, MAX_BODY_BYTES, MAX_NEW_TOKENS,
    MAX_PROMPT_TOKENS, MAX_TEXT_CHARS,
};
use attnzoo::translation::decode::DEFAULT_ALPHA;
use attnzoo::translation::{DecodeConfig, Translator};
use attnzoo_backends::{Backend, DeviceSpec};
use attnzoo_models::lm::{GenerationConfig, Sampling};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

mod common;

use common::{train, workdir, write_corpus};

const SENTENCE: &str = "Die Katze läuft hier.";

/// A tiny Transformer and a tiny RNN, trained on the invented corpus.
fn checkpoints(dir: &Path) -> [PathBuf; 2] {
    write_corpus(&dir.join("corpus"));
    ["transformer", "rnn"].map(|model| {
        let (code, _, stderr) = train(dir, model, "1", &[]);
        assert_eq!(code, 0, "{stderr}");
        dir.join(model)
    })
}

fn minilm() -> Option<PathBuf> {
    let dir = default_model_dir();
    dir.join("model.safetensors").is_file().then_some(dir)
}

/// `method path` with `body` through the router: the status and the JSON answer.
async fn call(app: &axum::Router, method: &str, path: &str, body: Body) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("{path}: not JSON: {}", String::from_utf8_lossy(&bytes)));
    (status, value)
}

async fn post(app: &axum::Router, path: &str, body: Value) -> (StatusCode, Value) {
    call(app, "POST", path, Body::from(body.to_string())).await
}

/// `[layers][heads][rows][keys]` with each row summing to 1.
fn assert_maps(maps: &Value, layers: usize, rows: usize, keys: usize) {
    let maps = maps.as_array().unwrap();
    assert_eq!(maps.len(), layers);
    for heads in maps {
        for map in heads.as_array().unwrap() {
            let map = map.as_array().unwrap();
            assert_eq!(map.len(), rows);
            for row in map {
                let row = row.as_array().unwrap();
                assert_eq!(row.len(), keys);
                let total: f64 = row.iter().map(|w| w.as_f64().unwrap()).sum();
                assert!((total - 1.0).abs() < 1e-4, "a row sums to {total}");
            }
        }
    }
}

fn len(value: &Value) -> usize {
    value.as_array().unwrap().len()
}

/// A bad request: `status`, and a JSON error that says `says`.
fn assert_refused(answer: (StatusCode, Value), status: StatusCode, says: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    let error = answer.1["error"].as_str().unwrap();
    assert!(error.contains(says), "{error:?} does not say {says:?}");
    assert!(!error.contains('\n'), "one line: {error:?}");
}

#[tokio::test]
async fn every_route_answers_and_every_bad_request_is_a_json_4xx() {
    let tmp = workdir();
    let [transformer, rnn] = checkpoints(tmp.path());
    let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
    let minilm = minilm();
    let worker = Worker::start(
        &[transformer.clone(), rnn],
        minilm.as_deref(),
        &[],
        device.clone(),
        "ndarray",
        4,
    )
    .unwrap();
    let app = router(worker.clone(), Duration::from_secs(60));

    let (status, health) = call(&app, "GET", "/health", Body::empty()).await;
    assert_eq!((status, health), (StatusCode::OK, json!({"status": "ok"})));
    let (status, models) = call(&app, "GET", "/api/models", Body::empty()).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    let expected = ["transformer", "rnn", "all-MiniLM-L6-v2"];
    assert_eq!(names, expected[..2 + usize::from(minilm.is_some())]);
    assert_eq!(models["models"][0]["kind"], "transformer");
    assert_eq!(models["models"][0]["layers"], 3);
    assert_eq!(models["models"][1]["attention"], "Bahdanau (additive)");

    // The defaults are `attnzoo translate`'s: the same sentence, the same translation.
    let translator = Translator::load(&transformer, &device).unwrap();
    for beam in [1, 4] {
        let (status, answer) = post(
            &app,
            "/api/translate",
            json!({"text": SENTENCE, "beam": beam}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let config = DecodeConfig {
            search: attnzoo::translation::Search::of_beam(beam, DEFAULT_ALPHA),
            ..DecodeConfig::default()
        };
        let expected = translator.translate(&[SENTENCE], &config).unwrap();
        assert_eq!(answer["translation"], expected[0]);
        assert_eq!(answer["model"], "transformer");
        let (s, t) = (len(&answer["source_tokens"]), len(&answer["target_tokens"]));
        assert_eq!(len(&answer["decoder_inputs"]), t);
        assert_maps(&answer["attention"]["cross"], 3, t, s);
        assert_maps(&answer["attention"]["encoder"], 3, s, s);
        assert_maps(&answer["attention"]["decoder"], 3, t, t);
        assert_eq!(len(&answer["rollout"]["encoder"]), s);
        assert_eq!(len(&answer["rollout"]["cross"]), t);
        // The lexical bias's lexicon, p(target token | source token) [T][S].
        let lexicon = &answer["attention"]["lexicon"];
        assert_eq!((len(lexicon), len(&lexicon[0])), (t, s), "{lexicon}");
    }
    // Two sentences: each translated on its own (a model stops after one), the attention the
    // first one's.
    let two = format!("{SENTENCE} Ich bin müde.");
    let (status, answer) = post(&app, "/api/translate", json!({ "text": two })).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let expected = translator
        .translate_text(&[two.as_str()], &DecodeConfig::default())
        .unwrap();
    assert_eq!(answer["translation"], expected[0]);
    assert_eq!(answer["sentences"], 2);
    let first = translator
        .attend(SENTENCE, &DecodeConfig::default())
        .unwrap();
    assert_eq!(answer["source_tokens"], json!(first.source));
    assert!(
        expected[0].starts_with(&first.translation),
        "{}",
        expected[0]
    );
    let (status, answer) = post(
        &app,
        "/api/translate",
        json!({"text": SENTENCE, "model": "rnn"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (s, t) = (len(&answer["source_tokens"]), len(&answer["target_tokens"]));
    assert_maps(&answer["attention"]["cross"], 1, t, s);
    assert_eq!(answer["attention"]["encoder"], json!([]));
    assert_eq!(answer["rollout"]["encoder"], Value::Null);
    assert_eq!(
        answer["attention"]["lexicon"],
        Value::Null,
        "the RNN has no lexicon"
    );

    match &minilm {
        Some(_) => {
            let (status, answer) = post(
                &app,
                "/api/encode",
                json!({"text": "The cat sleeps.", "other": "A cat is sleeping."}),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            let tokens: Vec<&str> = answer["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            assert_eq!(tokens, ["[CLS]", "the", "cat", "sleeps", ".", "[SEP]"]);
            assert_maps(&answer["attention"]["encoder"], 6, 6, 6);
            let similarity = answer["similarity"].as_f64().unwrap();
            assert!((0.5..=1.0).contains(&similarity), "{similarity}");
            assert_eq!(
                len(&answer["other"]["tokens"]),
                7,
                "[CLS] a cat is sleeping . [SEP]"
            );
        }
        None => assert_refused(
            post(&app, "/api/encode", json!({"text": "The cat."})).await,
            StatusCode::NOT_FOUND,
            "--model-dir",
        ),
    }

    let translate = |body: Value| post(&app, "/api/translate", body);
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    assert_refused(
        call(&app, "POST", "/api/translate", Body::from("{\"text\": ")).await,
        StatusCode::BAD_REQUEST,
        "EOF",
    );
    assert_refused(
        call(&app, "POST", "/api/translate", Body::from("not json")).await,
        StatusCode::BAD_REQUEST,
        "expected",
    );
    let plain = Request::builder()
        .method("POST")
        .uri("/api/translate")
        .header("content-type", "text/plain")
        .body(Body::from(json!({"text": SENTENCE}).to_string()))
        .unwrap();
    let response = app.clone().oneshot(plain).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let declared = Request::builder()
        .method("POST")
        .uri("/api/translate")
        .header("content-type", "application/json")
        .header("content-length", "1000000000000")
        .body(Body::from("{}"))
        .unwrap();
    let response = app.clone().oneshot(declared).await.unwrap();
    assert_eq!(
        response.status(),
        StatusCode::PAYLOAD_TOO_LARGE,
        "refused unread"
    );
    let huge = json!({ "text": "a".repeat(MAX_BODY_BYTES) });
    assert_refused(
        translate(huge).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "65536 bytes",
    );
    let long = "Der Hund schläft. ".repeat(MAX_TEXT_CHARS / 10);
    assert_refused(
        translate(json!({"text": long})).await,
        unprocessable,
        "1000",
    );
    assert_refused(
        translate(json!({"text": 5})).await,
        unprocessable,
        "invalid type",
    );
    assert_refused(
        translate(json!({})).await,
        unprocessable,
        "missing field `text`",
    );
    assert_refused(
        translate(json!([SENTENCE])).await,
        unprocessable,
        "a JSON object",
    );
    assert_refused(
        translate(json!({"text": SENTENCE, "beam_size": 2})).await,
        unprocessable,
        "unknown field",
    );
    // Found by the serve_api fuzz target: the message quotes the field, newline and all.
    assert_refused(
        translate(json!({"text": SENTENCE, "beam\n size": 2})).await,
        unprocessable,
        "unknown field `beam\\n size`",
    );
    for beam in [
        json!(0),
        json!(17),
        json!(-1),
        json!(1.5),
        json!(1e30),
        json!("5"),
    ] {
        assert_refused(
            translate(json!({"text": SENTENCE, "beam": beam})).await,
            unprocessable,
            "is not a whole number in 1–16",
        );
    }
    // A byte-order mark before the JSON is skipped.
    let marked = format!("\u{feff}{}", json!({ "text": SENTENCE }));
    let (status, answer) = call(&app, "POST", "/api/translate", Body::from(marked)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // A POST where none is taken is a wrong route or method, whatever its body.
    for (uri, status) in [
        ("/health", StatusCode::METHOD_NOT_ALLOWED),
        ("/nope", StatusCode::NOT_FOUND),
    ] {
        let plain = Request::builder()
            .method("POST")
            .uri(uri)
            .header("content-type", "text/plain")
            .body(Body::from("x"))
            .unwrap();
        let response = app.clone().oneshot(plain).await.unwrap();
        assert_eq!(response.status(), status, "POST {uri}");
    }
    assert_refused(
        translate(json!({"text": "  \n"})).await,
        unprocessable,
        "empty",
    );
    assert_refused(
        translate(json!({"text": SENTENCE, "model": "nope"})).await,
        StatusCode::NOT_FOUND,
        "\"nope\"",
    );
    assert_refused(
        translate(json!({"text": SENTENCE, "model": "all-MiniLM-L6-v2"})).await,
        StatusCode::NOT_FOUND,
        "transformer, rnn",
    );
    assert_refused(
        call(&app, "GET", "/nope", Body::empty()).await,
        StatusCode::NOT_FOUND,
        "/nope",
    );
    assert_refused(
        call(&app, "GET", "/api/translate", Body::empty()).await,
        StatusCode::METHOD_NOT_ALLOWED,
        "GET",
    );
    // Odd but valid text is translated, not refused.
    for text in ["\u{0}\u{1b}[31m", "🙂🙂", "ß", "<script>alert(1)</script>"] {
        let (status, answer) = translate(json!({ "text": text })).await;
        assert_eq!(status, StatusCode::OK, "{text:?}: {answer}");
    }

    // A full queue is 503, not a pile-up; the requests it took are answered.
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..24 {
        let app = app.clone();
        requests.spawn(async move {
            post(
                &app,
                "/api/translate",
                json!({"text": SENTENCE, "beam": 16}),
            )
            .await
        });
    }
    let answers = requests.join_all().await;
    let busy = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::SERVICE_UNAVAILABLE)
        .count();
    assert!(
        busy > 0,
        "24 requests at once on a queue of 4: none refused"
    );
    for (status, answer) in &answers {
        assert!(
            *status == StatusCode::OK || answer["error"].as_str().unwrap().contains("busy"),
            "{status}: {answer}"
        );
    }
    assert!(answers.iter().any(|(status, _)| *status == StatusCode::OK));
    let (status, _) = call(&app, "GET", "/health", Body::empty()).await;
    assert_eq!(status, StatusCode::OK, "still serving");

    // Past its timeout a request is answered 504 (408 if the whole request ran out), in JSON.
    let hurried = router(worker, Duration::from_micros(1));
    let (status, answer) = post(&hurried, "/api/translate", json!({"text": SENTENCE})).await;
    assert!(
        [StatusCode::GATEWAY_TIMEOUT, StatusCode::REQUEST_TIMEOUT].contains(&status),
        "{status}: {answer}"
    );
    assert!(answer["error"].is_string(), "{answer}");
}

/// A tiny language model folder with a tokenizer and a chat template (tests/lm.rs checks it
/// against transformers).
fn lm_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lm/qwen2")
}

/// The prompt of the folder's reference.
const PROMPT: &str = "the cat sat on a mat.";

/// `/api/generate`'s stream: its lines, and how many chunks they came in.
async fn stream(app: &axum::Router, body: Value) -> (StatusCode, Vec<Value>, usize) {
    use futures_util::StreamExt;
    let request = Request::builder()
        .method("POST")
        .uri("/api/generate")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let mut chunks = response.into_body().into_data_stream();
    let (mut text, mut count) = (String::new(), 0);
    while let Some(chunk) = chunks.next().await {
        text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        count += 1;
    }
    let lines = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line:?}")))
        .collect();
    (status, lines, count)
}

/// The ids and text of a stream's token lines.
fn streamed_tokens(lines: &[Value]) -> (Vec<u32>, String) {
    let tokens = lines.iter().filter(|line| line.get("id").is_some());
    let ids = tokens.clone().map(|t| t["id"].as_u64().unwrap() as u32);
    let text = tokens.map(|t| t["text"].as_str().unwrap()).collect();
    (ids.collect(), text)
}

#[tokio::test]
async fn a_language_model_streams_its_continuation_and_each_tokens_attention() {
    let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
    // A language model alone: no translation model, no MiniLM.
    let worker = Worker::start(&[], None, &[lm_folder()], device.clone(), "ndarray", 4).unwrap();
    let app = router(worker.clone(), Duration::from_secs(60));
    let (status, models) = call(&app, "GET", "/api/models", Body::empty()).await;
    assert_eq!(status, StatusCode::OK);
    let info = &models["models"][0];
    assert_eq!(len(&models["models"]), 1, "{models}");
    assert_eq!(
        (&info["name"], &info["task"], &info["kind"]),
        (&json!("qwen2"), &json!("generate"), &json!("decoder"))
    );
    assert_eq!((&info["layers"], &info["heads"]), (&json!(2), &json!(4)));
    assert_eq!(info["attention"], "grouped-query");

    // The stream is the library's greedy continuation, a token a line, as it comes.
    let lm = LanguageModel::load(&lm_folder(), &device).unwrap();
    let prompt = lm.encode(PROMPT).unwrap();
    let mut text = String::new();
    let expected = lm
        .generate(&prompt, &GenerationConfig::greedy(12), |_, piece| {
            text.push_str(piece);
            Ok::<(), attnzoo::Error>(())
        })
        .unwrap();
    let (status, lines, chunks) =
        stream(&app, json!({"prompt": PROMPT, "max_new_tokens": 12})).await;
    assert_eq!(status, StatusCode::OK, "{lines:?}");
    assert_eq!(lines[0], json!({ "prompt": prompt }));
    assert_eq!(streamed_tokens(&lines), (expected.clone(), text));
    let stop = if lm.model.eos_token_ids.contains(expected.last().unwrap()) {
        "eos"
    } else {
        "length"
    };
    assert_eq!(lines.last().unwrap(), &json!({ "stop": stop }));
    assert_eq!(lines.len(), expected.len() + 2);
    assert_eq!(
        chunks,
        lines.len(),
        "a chunk a line: streamed, not buffered"
    );
    // The chat template, and sampling: the same seed, the library's same tokens.
    let (status, lines, _) = stream(
        &app,
        json!({"prompt": "the cat", "chat": true, "max_new_tokens": 2}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{lines:?}");
    assert_eq!(
        lines[0]["prompt"],
        json!(lm.encode_chat("the cat").unwrap())
    );
    let sampling = Sampling {
        temperature: 1.5,
        top_k: Some(20),
        top_p: Some(0.9),
        seed: 7,
    };
    let config = GenerationConfig::greedy(10).with_sampling(sampling);
    let sampled = lm
        .generate(&prompt, &config, |_, _| Ok::<(), attnzoo::Error>(()))
        .unwrap();
    let body = json!({"prompt": PROMPT, "max_new_tokens": 10, "temperature": 1.5, "top_k": 20,
        "top_p": 0.9, "seed": 7});
    let (_, lines, _) = stream(&app, body).await;
    assert_eq!(streamed_tokens(&lines).0, sampled);

    // A generated token's attention: the library's, one row per layer and head over every
    // token before it.
    let ids: Vec<u32> = prompt.iter().chain(&expected).copied().collect();
    let position = prompt.len() + 2;
    let (status, answer) = post(
        &app,
        "/api/lm-attention",
        json!({"ids": ids, "position": position}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let attention = lm.attend(&ids, position).unwrap();
    assert_eq!(answer["pieces"], json!(attention.pieces));
    assert_eq!(len(&answer["pieces"]), position + 1);
    assert_maps(&answer["weights"], 2, 1, position);
    let weights: Vec<Vec<Vec<Vec<f32>>>> =
        serde_json::from_value(answer["weights"].clone()).unwrap();
    assert_eq!(weights, attention.weights);
    assert_eq!(
        (&answer["model"], &answer["position"]),
        (&json!("qwen2"), &json!(position))
    );

    // Bad requests: a one-line JSON 4xx each, before anything is streamed.
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let generate = |body: Value| post(&app, "/api/generate", body);
    for max in [
        json!(0),
        json!(MAX_NEW_TOKENS + 1),
        json!("5"),
        json!(1.5),
        json!(-1),
    ] {
        assert_refused(
            generate(json!({"prompt": PROMPT, "max_new_tokens": max})).await,
            unprocessable,
            "is not a whole number in 1–256",
        );
    }
    for (field, value, says) in [
        ("temperature", json!(0), "temperature must be positive"),
        ("top_k", json!(0), "top-k must be at least 1"),
        ("top_p", json!(1.5), "top-p must be in (0, 1]"),
        ("top_k", json!(-2), "invalid value"),
        ("seed", json!("x"), "invalid type"),
    ] {
        let mut body = json!({"prompt": PROMPT});
        body[field] = value;
        assert_refused(generate(body).await, unprocessable, says);
    }
    for (body, status, says) in [
        (json!({"prompt": " "}), unprocessable, "prompt: is empty"),
        (
            json!({"prompt": "a".repeat(MAX_TEXT_CHARS + 1)}),
            unprocessable,
            "at most 1000",
        ),
        // 100 tokens: more than the model's 64 positions.
        (
            json!({"prompt": "ab".repeat(50)}),
            unprocessable,
            "max_position_embeddings 64",
        ),
        (
            json!({"prompt": PROMPT, "chat": "yes"}),
            unprocessable,
            "invalid type",
        ),
        (
            json!({"prompt": PROMPT, "beam": 2}),
            unprocessable,
            "unknown field",
        ),
        (json!({"text": PROMPT}), unprocessable, "unknown field"),
        (
            json!({"prompt": PROMPT, "model": "nope"}),
            StatusCode::NOT_FOUND,
            "loaded: qwen2",
        ),
    ] {
        assert_refused(generate(body).await, status, says);
    }
    let attend = |body: Value| post(&app, "/api/lm-attention", body);
    let most = MAX_PROMPT_TOKENS + MAX_NEW_TOKENS;
    for (body, status, says) in [
        (
            json!({"ids": [1, 5, 6], "position": 0}),
            unprocessable,
            "position 0",
        ),
        (
            json!({"ids": [1, 5, 6], "position": 3}),
            unprocessable,
            "position 3",
        ),
        (
            json!({"ids": [1, 500], "position": 1}),
            unprocessable,
            "outside the vocabulary",
        ),
        (
            json!({"ids": [1, -5], "position": 1}),
            unprocessable,
            "invalid value",
        ),
        (
            json!({"ids": vec![5; most + 1], "position": 1}),
            unprocessable,
            "at most 1280",
        ),
        (
            json!({"ids": [1, 5]}),
            unprocessable,
            "missing field `position`",
        ),
        (
            json!({"ids": [1, 5], "position": 1, "model": "x"}),
            StatusCode::NOT_FOUND,
            "language model",
        ),
    ] {
        assert_refused(attend(body).await, status, says);
    }
    assert_refused(
        post(&app, "/api/translate", json!({"text": SENTENCE})).await,
        StatusCode::NOT_FOUND,
        "loaded: none",
    );
    // The prompt's token limit is the model thread's to check (it tokenizes).
    let (tokens, _) = tokio::sync::mpsc::unbounded_channel();
    let answer = worker
        .submit(Work::Generate {
            model: 0,
            prompt: PROMPT.into(),
            chat: false,
            max_prompt_tokens: 3,
            config: GenerationConfig::greedy(1),
            tokens,
        })
        .unwrap()
        .await
        .unwrap();
    let error = answer.err().map(|error| error.to_string());
    let says = format!("prompt: {} tokens; at most 3", prompt.len());
    assert_eq!(error, Some(says));
    // A generation whose client has gone stops at its first token.
    let (tokens, gone) = tokio::sync::mpsc::unbounded_channel();
    drop(gone);
    let answer = worker
        .submit(Work::Generate {
            model: 0,
            prompt: PROMPT.into(),
            chat: false,
            max_prompt_tokens: MAX_PROMPT_TOKENS,
            config: GenerationConfig::greedy(MAX_NEW_TOKENS),
            tokens,
        })
        .unwrap()
        .await
        .unwrap();
    let error = answer.err().map(|error| error.to_string());
    assert_eq!(error.as_deref(), Some("the client has gone"));
    assert!(matches!(
        worker
            .submit(Work::LmAttention {
                model: 0,
                ids: vec![1, 5],
                position: 1
            })
            .unwrap()
            .await
            .unwrap(),
        Ok(Answer::LmAttention(_))
    ));
    // Past its timeout a generation is answered 504 (or 408), in JSON, before it streams.
    let hurried = router(worker, Duration::from_micros(1));
    let (status, answer) = post(&hurried, "/api/generate", json!({"prompt": PROMPT})).await;
    assert!(
        [StatusCode::GATEWAY_TIMEOUT, StatusCode::REQUEST_TIMEOUT].contains(&status),
        "{status}: {answer}"
    );
    assert!(answer["error"].is_string(), "{answer}");
}

/// A server the test started: killed when the test ends, even by a failed assertion.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `attnzoo serve ARGS` on a free loopback port, and the address it prints.
fn start(args: &[&str]) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_attnzoo"))
        .arg("serve")
        .args(["--addr", "127.0.0.1:0", "--backend", "ndarray"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (Running(child), addr)
}

/// A plain HTTP/1.1 GET: the status line and the body.
fn get(addr: &str, path: &str) -> (String, String) {
    get_from(addr, addr, path)
}

/// A GET to `addr` that says it is for `host`.
fn get_from(addr: &str, host: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// Sends `request` on `stream` and reads one answer whole: its head (status line and headers),
/// lowercased.
fn answer_on(stream: &mut TcpStream, request: &str) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim_end().is_empty() {
            break;
        }
        head.push_str(&line.to_ascii_lowercase());
    }
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |value| value.trim().parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    head
}

fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"].into_iter().find(|name| {
        Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success())
    });
    if found.is_none() && std::env::var_os("ATTNZOO_REQUIRE_CHROMIUM").is_some() {
        panic!("ATTNZOO_REQUIRE_CHROMIUM is set but chromium is not installed");
    }
    found
}

/// The page headless Chromium renders for `url`, after its scripts ran.
fn rendered(chromium: &str, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=20000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_binary_serves_the_page_to_a_browser_and_stops_on_sigterm() {
    let tmp = workdir();
    let [transformer, rnn] = checkpoints(tmp.path());
    let (mut server, addr) = start(&[
        "--checkpoint",
        transformer.to_str().unwrap(),
        "--checkpoint",
        rnn.to_str().unwrap(),
    ]);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let (status, body) = get(&addr, "/health");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let port = addr.rsplit(':').next().unwrap();
    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.1".into(),
    ] {
        assert_eq!(
            get_from(&addr, &host, "/health").0,
            "HTTP/1.1 200 OK",
            "{host}"
        );
    }
    let (status, body) = get_from(&addr, &format!("attacker.example:{port}"), "/health");
    assert_eq!(
        status, "HTTP/1.1 421 Misdirected Request",
        "DNS rebinding: {body}"
    );
    assert!(body.contains("localhost only"), "{body}");
    // An error answered before the request's body is read (a wrong route, not JSON) says the
    // connection closes: a keep-alive client would otherwise send its next request into a closed
    // socket. A good answer keeps the connection.
    let mut kept = TcpStream::connect(&addr).unwrap();
    let health = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    for _ in 0..2 {
        let head = answer_on(&mut kept, &health);
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(!head.contains("connection: close"), "{head}");
    }
    let body = r#"{"text": "ich bin"}"#;
    for (path, content_type, status) in [
        ("/api/nope", "application/json", "404"),
        ("/api/translate", "text/plain", "415"),
    ] {
        let head = answer_on(
            &mut TcpStream::connect(&addr).unwrap(),
            &format!(
                "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        );
        assert!(head.starts_with(&format!("http/1.1 {status}")), "{head}");
        assert!(head.contains("connection: close"), "{path}: {head}");
    }
    // A client that sends half a request and waits is cut off; the server goes on.
    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // Connections beyond the limit are told so in JSON, and served again once others close.
    let held: Vec<TcpStream> = (1..attnzoo::serve::MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let (status, body) = get(&addr, "/health");
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable", "{body}");
    let busy: Value = serde_json::from_str(&body).unwrap();
    assert!(
        busy["error"]
            .as_str()
            .unwrap()
            .contains("too many connections"),
        "{body}"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    let (status, page) = get(&addr, "/");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(page.contains("attnzoo"), "the page");
    for remote in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "fetch('http",
    ] {
        assert!(
            !page.contains(remote),
            "the page loads nothing from elsewhere: {remote}"
        );
    }

    if let Some(chromium) = chromium() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        // The page asks for beam 5 unless its address names a beam.
        let expected = Translator::load(&transformer, &device)
            .unwrap()
            .translate(&[SENTENCE], &DecodeConfig::beam(5))
            .unwrap()
            .remove(0);
        let url = format!("http://{addr}/?text=Die%20Katze%20l%C3%A4uft%20hier.&model=transformer&kind=cross&view=matrix");
        let dom = rendered(chromium, &url);
        assert!(
            dom.contains("data-state=\"ready\""),
            "the page did not finish: {dom}"
        );
        let translation = dom
            .split("id=\"translation\"")
            .nth(1)
            .and_then(|rest| rest.split_once('>'))
            .map(|(_, rest)| rest.split('<').next().unwrap_or(""))
            .unwrap_or_else(|| panic!("no #translation in {dom}"));
        assert_eq!(translation.trim(), expected.trim());
        assert!(dom.contains("id=\"matrix-view\""), "no heatmap in {dom}");
        assert!(
            dom.matches("class=\"cell\"").count() >= 4,
            "no heatmap cells"
        );
        // The lexicon is one map of target rows × source columns.
        let lexicon = format!("http://{addr}/?text=Die%20Katze%20l%C3%A4uft%20hier.&model=transformer&kind=lexicon&view=matrix");
        let dom = rendered(chromium, &lexicon);
        assert!(
            dom.contains("lexicon p(target | source)") && dom.contains("class=\"cell\""),
            "no lexicon heatmap in {dom}"
        );
        let dom = rendered(chromium, &format!("http://{addr}/?text=x&model=nope"));
        assert!(
            dom.contains("data-state=\"error\""),
            "an unknown model shows an error"
        );
    }

    let started = Instant::now();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(
        unsafe { libc::kill(server.0.id() as i32, libc::SIGTERM) },
        0
    );
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "SIGTERM did not stop it"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0), "SIGTERM is a clean stop");
    drop(idle);
}

#[test]
fn the_page_streams_a_continuation_and_shows_where_a_token_looked() {
    let Some(chromium) = chromium() else { return };
    // Only a language model: the explorer starts without a translation model.
    let (_server, addr) = start(&["--lm", lm_folder().to_str().unwrap()]);
    let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
    let lm = LanguageModel::load(&lm_folder(), &device).unwrap();
    let prompt = lm.encode(PROMPT).unwrap();
    let expected = lm
        .generate(&prompt, &GenerationConfig::greedy(8), |_, _| {
            Ok::<(), attnzoo::Error>(())
        })
        .unwrap();
    // The prompt typed, 8 new tokens generated, the third clicked: its matrix view. (MiniLM may
    // be served too, by default.)
    let url = format!(
        "http://{addr}/?model=qwen2&text=the%20cat%20sat%20on%20a%20mat.&max_new=8&token=3&view=matrix"
    );
    let dom = rendered(chromium, &url);
    assert!(
        dom.contains("data-state=\"ready\""),
        "the page did not finish: {dom}"
    );
    let continuation = dom
        .split("id=\"continuation\"")
        .nth(1)
        .and_then(|rest| rest.split("</p>").next())
        .unwrap_or_else(|| panic!("no #continuation in {dom}"));
    assert_eq!(
        continuation.matches("class=\"tok").count(),
        expected.len(),
        "a button per token: {continuation}"
    );
    assert!(
        continuation.contains("aria-pressed=\"true\""),
        "the third is shown"
    );
    let keys = prompt.len() + 2;
    assert!(
        dom.contains(&format!("data-rows=\"1\" data-cols=\"{keys}\"")),
        "one row over the {keys} tokens before the third: {dom}"
    );
    assert_eq!(
        dom.matches("class=\"cell\"").count(),
        keys,
        "a cell per earlier token"
    );
    // The tokenizer's pieces are the labels: the prompt's "c" "a" "t" among them.
    let pieces = lm.pieces(&prompt).unwrap();
    for piece in pieces.iter().filter(|p| p.chars().all(char::is_alphabetic)) {
        assert!(
            dom.contains(&format!("<title>{piece}</title>")),
            "{piece:?}"
        );
    }
}

#[test]
fn bad_command_lines_and_a_taken_port_are_one_line_errors() {
    let tmp = workdir();
    let missing = tmp.path().join("missing");
    let missing = missing.to_str().unwrap();
    let [transformer, _] = checkpoints(tmp.path());
    let transformer = transformer.to_str().unwrap();
    let twice = format!("{transformer}/");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap();
    let taken_by_name = format!("localhost:{}", taken.port());
    let taken = taken.to_string();
    let no_tokenizer = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lm/mistral");
    let cases: [(&[&str], i32, &str); 12] = [
        (&["--queue", "0"], 2, "queue"),
        (&["--timeout", "nan"], 2, "finite"),
        (&["--timeout", "1e-12"], 2, "[0.1, 3600]"),
        (
            &["--addr", "localhost"],
            2,
            "IP:PORT such as 127.0.0.1:8080",
        ),
        (&["--addr", "localhost:99999"], 2, "not a port number"),
        (&["--checkpoint", missing], 2, "missing"),
        (&["--model-dir", missing], 2, "fetch-minilm"),
        (&["--lm", missing], 2, "config.json"),
        (
            &["--lm", no_tokenizer.to_str().unwrap()],
            2,
            "no tokenizer.json",
        ),
        (
            &["--checkpoint", transformer, "--checkpoint", &twice],
            2,
            "given twice",
        ),
        (
            &["--checkpoint", transformer, "--addr", &taken],
            1,
            "cannot listen on",
        ),
        // localhost:PORT is 127.0.0.1:PORT, here the taken one.
        (
            &["--checkpoint", transformer, "--addr", &taken_by_name],
            1,
            "cannot listen on",
        ),
    ];
    for (args, code, says) in cases {
        let all = [&["serve", "--backend", "ndarray"], args].concat();
        let (status, _, stderr) = common::attnzoo(&all, b"");
        assert_eq!(status, code, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
