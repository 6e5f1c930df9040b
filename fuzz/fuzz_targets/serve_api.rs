//! The explorer's request bodies through the real router (`attnzoo::serve::router` over a
//! worker with the tiny Transformer, and MiniLM where it is fetched), as `attnzoo serve` builds
//! it: arbitrary bytes, or — structure-aware — JSON objects with the fields the routes take,
//! holding any JSON (deep nesting, huge numbers, long strings). Every answer must be JSON, and
//! every refusal a 4xx with an `error` of one line; never a panic or a 5xx.
#![no_main]

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
struct Input {
    encode: bool,
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
            &[],
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
    let (path, good) = if input.encode {
        ("/api/encode", r#"{"text": "Die Katze schläft."}"#)
    } else {
        (
            "/api/translate",
            r#"{"text": "Die Katze schläft.", "model": "run-0", "beam": 5}"#,
        )
    };
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
        let value: Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| panic!("{status}: not JSON: {}", String::from_utf8_lossy(&bytes)));
        assert!(
            status == StatusCode::OK || status.is_client_error(),
            "{status}: {value}"
        );
        if status != StatusCode::OK {
            let error = value["error"].as_str().expect("an error message");
            assert!(!error.contains('\n'), "not one line: {error}");
        }
    });
});
