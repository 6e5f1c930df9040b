//! The explorer's request bodies through the real router (`attnzoo::serve::router` over a
//! worker with the tiny Transformer, a tiny Qwen2 language model from tests/fixtures/lm, and
//! MiniLM where it is fetched), as `attnzoo serve` builds it: arbitrary bytes, or —
//! structure-aware — JSON objects with the fields the routes take, holding any JSON (deep
//! nesting, huge numbers, long strings). Every answer must be JSON (a generation's, JSON a
//! line), and every refusal a 4xx with an `error` of one line; never a panic or a 5xx.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use arbitrary::Arbitrary;
use attnzoo::sentence_embedding::default_model_dir;
use attnzoo::serve::{router, Worker};
use attnzoo::translation::ModelKind;
use attnzoo_fuzz::{device, edit_json, tiny_run, JsonEdit};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tower::ServiceExt;

#[derive(Arbitrary, Debug)]
enum Payload {
    /// Any bytes.
    Bytes(Vec<u8>),
    /// A good body for the route with fields changed.
    Edited(Vec<JsonEdit>),
}

#[derive(Arbitrary, Debug)]
enum Route {
    Translate,
    Encode,
    Generate,
    LmAttention,
}

impl Route {
    /// The route's path, and a good body for it.
    fn good(&self) -> (&'static str, &'static str) {
        match self {
            Route::Translate => (
                "/api/translate",
                r#"{"text": "Die Katze schläft.", "model": "run-0", "beam": 5}"#,
            ),
            Route::Encode => ("/api/encode", r#"{"text": "Die Katze schläft."}"#),
            Route::Generate => (
                "/api/generate",
                r#"{"prompt": "hello world", "max_new_tokens": 4, "temperature": 0.8, "top_k": 5, "top_p": 0.9, "seed": 7}"#,
            ),
            Route::LmAttention => ("/api/lm-attention", r#"{"ids": [1, 2, 3, 4], "position": 3}"#),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    route: Route,
    json_type: bool,
    payload: Payload,
}

fn app() -> &'static (tokio::runtime::Runtime, axum::Router) {
    static APP: OnceLock<(tokio::runtime::Runtime, axum::Router)> = OnceLock::new();
    APP.get_or_init(|| {
        let minilm = default_model_dir();
        let minilm = minilm.join("model.safetensors").is_file().then_some(minilm);
        let worker = Worker::start(
            &[tiny_run(ModelKind::Transformer).to_path_buf()],
            minilm.as_deref(),
            &[Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lm/qwen2")],
            device().clone(),
            "ndarray",
            4,
        )
        .expect("the worker starts");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        (runtime, router(worker, Duration::from_secs(60)))
    })
}

fuzz_target!(|input: Input| {
    let (runtime, app) = app();
    let (path, good) = input.route.good();
    let body = match &input.payload {
        Payload::Bytes(bytes) => bytes.clone(),
        Payload::Edited(edits) => edit_json(good.as_bytes(), edits),
    };
    let request = Request::builder()
        .method("POST")
        .uri(path)
        .header(
            "content-type",
            if input.json_type {
                "application/json"
            } else {
                "text/plain"
            },
        )
        .body(Body::from(body))
        .unwrap();
    runtime.block_on(async {
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert!(status == StatusCode::OK || status.is_client_error(), "{status}");
        // A generation streams a JSON object a line; every other answer is one JSON value.
        for line in bytes.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            let value: Value = serde_json::from_slice(line).unwrap_or_else(|_| {
                panic!("{status}: not JSON: {}", String::from_utf8_lossy(line))
            });
            if let Some(error) = value.get("error") {
                let error = error.as_str().expect("an error message");
                assert!(!error.contains('\n'), "not one line: {error}");
            }
            if status != StatusCode::OK {
                assert!(value.get("error").is_some(), "{status}: {value}");
            }
        }
    });
});
