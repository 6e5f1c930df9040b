//! The routes: request bodies parsed and checked here, the model work sent to the [`Worker`],
//! every error a JSON body `{"error": "…"}` with a 4xx status (bad input), 503 (busy), 504
//! (too slow) or 500 (the model failed). A generation streams one JSON object a line
//! (`application/x-ndjson`); what goes wrong once it has begun is its last line, `{"error": …}`.

use std::convert::Infallible;
use std::time::Duration;

use attnzoo_models::escape_control;
use attnzoo_models::lm::GenerationConfig;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Request as HttpRequest, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response as HttpResponse};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tower_http::timeout::TimeoutLayer;

use super::worker::{Generated, Refused, Request, Response, Worker};
use crate::attention_maps::{rollout, AttentionMaps, Matrix};
use crate::error::{Error, Result as ModelResult};
use crate::language_model::sampling;
use crate::sentence_embedding::SelfAttention;
use crate::translation::decode::DEFAULT_ALPHA;
use crate::translation::{DecodeConfig, Search, TextAttention};

/// The largest request body, in bytes (413 beyond).
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest text, in characters (422 beyond).
pub const MAX_TEXT_CHARS: usize = 1000;
/// The largest beam a request may ask for.
pub const MAX_BEAM: usize = 16;
/// The most tokens a generation may ask for (422 beyond): it holds the models that many steps.
pub const MAX_NEW_TOKENS: usize = 256;
/// The most tokens a prompt may have (422 beyond).
pub const MAX_PROMPT_TOKENS: usize = 1024;
/// The tokens a generation makes unless it asks otherwise.
const DEFAULT_NEW_TOKENS: usize = 64;

const PAGE: &str = include_str!("page.html");

#[derive(Clone)]
struct App {
    worker: Worker,
    timeout: Duration,
}

/// The routes over `worker`'s models; model work longer than `timeout` (waiting in the queue
/// included) is answered 504, a whole request longer than twice that (a body that never ends)
/// 408. POST bodies must be `application/json` (415) of at most [`MAX_BODY_BYTES`] (413).
pub fn router(worker: Worker, timeout: Duration) -> Router {
    Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route("/health", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/api/models", get(models))
        .route("/api/translate", post(translate))
        .route("/api/encode", post(encode))
        .route("/api/generate", post(generate))
        .route("/api/lm-attention", post(lm_attention))
        .fallback(|method: Method, uri: Uri| async move {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no such route: {method} {}", uri.path()),
            )
        })
        .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{} does not take {method}", uri.path()),
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout * 2,
        ))
        .layer(middleware::from_fn_with_state(timeout, checked))
        .with_state(App { worker, timeout })
}

/// An error answer: its status and one line.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// One line whatever the message quotes (a JSON key holding a newline, say).
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        let message: String = message.into();
        Self {
            status,
            message: escape_control(&message).into_owned(),
        }
    }

    fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    /// What a bare `status` from a layer means here.
    fn from_status(status: StatusCode, timeout: Duration) -> Self {
        let message = match status {
            StatusCode::PAYLOAD_TOO_LARGE => {
                format!("the request body is over {MAX_BODY_BYTES} bytes")
            }
            StatusCode::REQUEST_TIMEOUT => format!(
                "the request did not arrive and finish within {} s",
                (2 * timeout).as_secs_f64()
            ),
            _ => status.canonical_reason().unwrap_or("error").to_lowercase(),
        };
        Self::new(status, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> HttpResponse {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}

impl From<BytesRejection> for ApiError {
    fn from(rejection: BytesRejection) -> Self {
        let status = rejection.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the request body is over {MAX_BODY_BYTES} bytes")
        } else {
            format!(
                "the request body could not be read: {}",
                rejection.body_text()
            )
        };
        Self::new(status, message)
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        let status = if error.is_environment() {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::UNPROCESSABLE_ENTITY
        };
        Self::new(status, error.to_string())
    }
}

/// Refuses a request that says its body is too large (413, before it is read); gives any error
/// answer without a JSON body (a layer's 408, say) one naming it.
async fn checked(
    State(timeout): State<Duration>,
    request: HttpRequest,
    next: Next,
) -> HttpResponse {
    let headers = request.headers();
    let sent_body = sends_body(headers);
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        let refused = ApiError::from_status(StatusCode::PAYLOAD_TOO_LARGE, timeout);
        return closing_after_body(sent_body, refused.into_response());
    }
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response.headers().get(header::CONTENT_TYPE)
        == Some(&HeaderValue::from_static("application/json"));
    let response = if (status.is_client_error() || status.is_server_error()) && !is_json {
        ApiError::from_status(status, timeout).into_response()
    } else {
        response
    };
    closing_after_body(sent_body, response)
}

/// Whether a request's headers announce a body (a length above 0, or a chunked one).
fn sends_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|value| value.as_bytes() != b"0")
}

/// An error answer to a request that sent a body says `Connection: close`: the body may be unread
/// (a 404, 413, 415 or 421 is answered before it is), and then hyper closes the connection after
/// the answer; a keep-alive client not told so would send its next request into a closed socket.
fn closing_after_body(sent_body: bool, mut response: HttpResponse) -> HttpResponse {
    let status = response.status();
    if sent_body && (status.is_client_error() || status.is_server_error()) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Answers a request whose `Host` is not a loopback name with 421: a server on a loopback
/// address is for this machine's clients, not for pages whose DNS name was rebound to it.
pub(super) async fn loopback_host(request: HttpRequest, next: Next) -> HttpResponse {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let loopback = name.eq_ignore_ascii_case("localhost")
        || name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        let refused = ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!("this server answers requests to localhost only, not to Host {host:?}"),
        );
        return closing_after_body(sends_body(request.headers()), refused.into_response());
    }
    next.run(request).await
}

/// A request body of JSON, as `T`: refused 415 unless it is sent as `application/json` (a web
/// page elsewhere cannot send that without the server's consent, so it cannot fill the queue);
/// malformed JSON is 400; anything but an object, a wrong type, a missing or unknown field 422.
/// A UTF-8 byte-order mark before the JSON is skipped (RFC 8259 lets a parser ignore it). As an
/// extractor it runs after routing: a POST to a wrong route or method is its 404 or 405 first.
struct JsonBody<T>(T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: HttpRequest, state: &S) -> Result<Self, ApiError> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the request body must be JSON, sent with Content-Type: application/json",
            ));
        }
        let body = Bytes::from_request(request, state).await?;
        let json = body.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&body);
        let value: Value = serde_json::from_slice(json).map_err(|error| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("the request body is not JSON: {error}"),
            )
        })?;
        if !value.is_object() {
            return Err(ApiError::unprocessable(
                "the request body: expected a JSON object such as {\"text\": \"…\"}",
            ));
        }
        serde_json::from_value(value)
            .map(JsonBody)
            .map_err(|error| ApiError::unprocessable(format!("the request body: {error}")))
    }
}

/// `text` if it holds something and is at most [`MAX_TEXT_CHARS`] long.
fn checked_text(field: &str, text: String) -> Result<String, ApiError> {
    let chars = text.chars().count();
    if text.trim().is_empty() {
        return Err(ApiError::unprocessable(format!("{field}: is empty")));
    }
    if chars > MAX_TEXT_CHARS {
        return Err(ApiError::unprocessable(format!(
            "{field}: {chars} characters; at most {MAX_TEXT_CHARS}"
        )));
    }
    Ok(text)
}

/// The model thread answered a request with another kind of answer.
fn mismatched() -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the model thread answered another kind of request",
    )
}

/// The model thread's answer, to come.
type Answer = oneshot::Receiver<ModelResult<Response>>;

impl App {
    /// Runs `request` on the model thread: 503 if the queue is full, 504 past the timeout.
    async fn run(&self, request: Request) -> Result<Response, ApiError> {
        let deadline = Instant::now() + self.timeout;
        let answer = self.submit(request)?;
        self.wait(answer, deadline).await
    }

    /// Queues `request`: 503 if the queue is full.
    fn submit(&self, request: Request) -> Result<Answer, ApiError> {
        self.worker.submit(request).map_err(|refused| {
            let status = match refused {
                Refused::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
                Refused::Stopped => StatusCode::INTERNAL_SERVER_ERROR,
            };
            ApiError::new(status, refused.to_string())
        })
    }

    /// The answer, 504 past `deadline`.
    async fn wait(&self, answer: Answer, deadline: Instant) -> Result<Response, ApiError> {
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(answer)) => Ok(answer?),
            Ok(Err(_)) => Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the model thread has stopped",
            )),
            Err(_) => Err(self.too_slow()),
        }
    }

    fn too_slow(&self) -> ApiError {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "no answer within {} s, waiting for the models included; try again, or a \
                 shorter text",
                self.timeout.as_secs_f64()
            ),
        )
    }

    /// The index of the model named `name` (the first, if none is named) that does `task`; 404
    /// naming those loaded (`what` they are) otherwise.
    fn model(&self, task: &str, name: Option<&str>, what: &str) -> Result<usize, ApiError> {
        let models = self.worker.models();
        let found = models
            .iter()
            .position(|info| info.task == task && name.is_none_or(|name| info.name == name));
        found.ok_or_else(|| {
            let names: Vec<&str> = models
                .iter()
                .filter(|info| info.task == task)
                .map(|info| info.name.as_str())
                .collect();
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no {what} {}; loaded: {}",
                    name.map_or("is loaded".into(), |n| format!("{n:?}")),
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                ),
            )
        })
    }
}

/// A whole number `field` in 1–`max`, `default` if absent; any JSON, so that a wrong one is
/// named in the request's terms, not serde's.
fn whole_number(
    field: &str,
    value: Option<&Value>,
    default: usize,
    max: usize,
    what: &str,
) -> Result<usize, ApiError> {
    match value {
        None => Ok(default),
        Some(value) => value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                ApiError::unprocessable(format!(
                    "{field}: {value} is not a whole number in 1–{max}{what}"
                ))
            }),
    }
}

async fn models(State(app): State<App>) -> Json<Value> {
    Json(json!({ "models": app.worker.models() }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TranslateBody {
    text: String,
    model: Option<String>,
    /// Any JSON, so that a wrong one is named in the request's terms, not serde's.
    beam: Option<Value>,
}

/// Per layer and head, `[layer][head][query][key]`, as the page draws them.
#[derive(Serialize)]
struct TranslationMaps<'a> {
    cross: &'a AttentionMaps,
    encoder: &'a AttentionMaps,
    decoder: &'a AttentionMaps,
    /// `p_lex(target | source)` `[T][S]` of a lexically biased model; `null` without a lexicon.
    lexicon: Option<&'a Matrix>,
}

#[derive(Serialize)]
struct TranslationRollout {
    encoder: Option<Matrix>,
    decoder: Option<Matrix>,
    cross: Matrix,
}

/// The translation of the whole text; tokens and attention of its first sentence.
#[derive(Serialize)]
struct Translated<'a> {
    model: &'a str,
    translation: String,
    /// How many sentences the text holds.
    sentences: usize,
    source_tokens: &'a [String],
    target_tokens: &'a [String],
    decoder_inputs: &'a [String],
    cut: bool,
    attention: TranslationMaps<'a>,
    rollout: TranslationRollout,
}

async fn translate(
    State(app): State<App>,
    JsonBody(body): JsonBody<TranslateBody>,
) -> Result<HttpResponse, ApiError> {
    let text = checked_text("text", body.text)?;
    let models = app.worker.models();
    let model = app.model("translate", body.model.as_deref(), "translation model")?;
    let beam = whole_number(
        "beam",
        body.beam.as_ref(),
        1,
        MAX_BEAM,
        " (1 is greedy search)",
    )?;
    let decode = DecodeConfig {
        search: Search::of_beam(beam, DEFAULT_ALPHA),
        ..DecodeConfig::default()
    };
    let Response::Translated(attention) = app
        .run(Request::Translate {
            model,
            text,
            decode,
        })
        .await?
    else {
        return Err(mismatched());
    };
    Ok(Json(translated(&models[model].name, &attention)).into_response())
}

fn translated<'a>(model: &'a str, text: &'a TextAttention) -> Translated<'a> {
    let attention = &text.first;
    Translated {
        model,
        translation: text.translation(),
        sentences: 1 + text.rest.len(),
        source_tokens: &attention.source,
        target_tokens: &attention.target,
        decoder_inputs: &attention.decoder_inputs,
        cut: attention.cut,
        attention: TranslationMaps {
            cross: &attention.cross,
            encoder: &attention.encoder,
            decoder: &attention.decoder,
            lexicon: attention.lexicon.as_ref(),
        },
        rollout: TranslationRollout {
            encoder: attention.encoder_rollout(),
            decoder: attention.decoder_rollout(),
            cross: attention.cross_rollout(),
        },
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EncodeBody {
    text: String,
    other: Option<String>,
}

#[derive(Serialize)]
struct SelfAttentionMaps<'a> {
    encoder: &'a AttentionMaps,
}

#[derive(Serialize)]
struct SelfAttentionRollout {
    encoder: Option<Matrix>,
}

/// One sentence's self-attention, as the page draws it.
#[derive(Serialize)]
struct Sentence<'a> {
    tokens: &'a [String],
    cut: bool,
    attention: SelfAttentionMaps<'a>,
    rollout: SelfAttentionRollout,
}

impl<'a> From<&'a SelfAttention> for Sentence<'a> {
    fn from(attention: &'a SelfAttention) -> Self {
        Self {
            tokens: &attention.tokens,
            cut: attention.cut,
            attention: SelfAttentionMaps {
                encoder: &attention.maps,
            },
            rollout: SelfAttentionRollout {
                encoder: rollout(&attention.maps),
            },
        }
    }
}

#[derive(Serialize)]
struct Encoded<'a> {
    model: &'a str,
    #[serde(flatten)]
    text: Sentence<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    other: Option<Sentence<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    similarity: Option<f32>,
}

async fn encode(
    State(app): State<App>,
    JsonBody(body): JsonBody<EncodeBody>,
) -> Result<HttpResponse, ApiError> {
    let text = checked_text("text", body.text)?;
    let other = body
        .other
        .map(|other| checked_text("other", other))
        .transpose()?;
    let Some(info) = app
        .worker
        .models()
        .iter()
        .find(|info| info.task == "encode")
    else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no sentence-embedding model is loaded (start the server with --model-dir)",
        ));
    };
    let Response::Encoded {
        text,
        other,
        similarity,
    } = app.run(Request::Encode { text, other }).await?
    else {
        return Err(mismatched());
    };
    let answer = Encoded {
        model: &info.name,
        text: Sentence::from(&text),
        other: other.as_ref().map(Sentence::from),
        similarity,
    };
    Ok(Json(answer).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerateBody {
    prompt: String,
    model: Option<String>,
    #[serde(default)]
    chat: bool,
    max_new_tokens: Option<Value>,
    temperature: Option<f64>,
    top_k: Option<usize>,
    top_p: Option<f64>,
    seed: Option<u64>,
}

/// Streams a continuation, one JSON object a line: `{"prompt": [ids]}`, then `{"id", "text"}`
/// per token (`text`: what the continuation gained), then `{"stop": "eos" | "length"}`, or
/// `{"error": …}` if it failed or ran past the timeout (the generation then stops). A bad
/// request, a prompt the model refuses and a full queue are answered as by the other routes.
async fn generate(
    State(app): State<App>,
    JsonBody(body): JsonBody<GenerateBody>,
) -> Result<HttpResponse, ApiError> {
    let prompt = checked_text("prompt", body.prompt)?;
    let model = app.model("generate", body.model.as_deref(), "language model")?;
    let max_new_tokens = whole_number(
        "max_new_tokens",
        body.max_new_tokens.as_ref(),
        DEFAULT_NEW_TOKENS,
        MAX_NEW_TOKENS,
        "",
    )?;
    let config = GenerationConfig {
        sampling: sampling(body.temperature, body.top_k, body.top_p, body.seed),
        ..GenerationConfig::greedy(max_new_tokens)
    };
    config.validate().map_err(Error::from)?;
    let deadline = Instant::now() + app.timeout;
    let (tokens, mut events) = mpsc::unbounded_channel();
    let answer = app.submit(Request::Generate {
        model,
        prompt,
        chat: body.chat,
        max_prompt_tokens: MAX_PROMPT_TOKENS,
        config,
        tokens,
    })?;
    // Nothing is sent before the first token: until then an error is the answer's status.
    let first = match tokio::time::timeout_at(deadline, events.recv()).await {
        // `timeout_at` polls the channel first: a token already waiting when this task runs
        // past the deadline (a busy machine) is late all the same.
        Ok(Some(_)) if Instant::now() >= deadline => return Err(app.too_slow()),
        Ok(Some(first)) => first,
        Ok(None) => {
            app.wait(answer, deadline).await?;
            return Err(mismatched());
        }
        Err(_) => return Err(app.too_slow()),
    };
    let stream = Stream {
        app,
        first: Some(first),
        events,
        answer: Some(answer),
        deadline,
    };
    let lines = futures_util::stream::unfold(stream, |mut stream| async move {
        let line = stream.next().await?;
        Some((
            Ok::<_, Infallible>(Bytes::from(format!("{line}\n"))),
            stream,
        ))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        axum::body::Body::from_stream(lines),
    )
        .into_response())
}

/// A generation's lines to come; dropping it stops the generation.
struct Stream {
    app: App,
    first: Option<Generated>,
    events: mpsc::UnboundedReceiver<Generated>,
    /// `None` once the last line is out.
    answer: Option<Answer>,
    deadline: Instant,
}

impl Stream {
    async fn next(&mut self) -> Option<Value> {
        if let Some(first) = self.first.take() {
            return Some(json!(first));
        }
        // Ended once the last line is out.
        self.answer.as_ref()?;
        match tokio::time::timeout_at(self.deadline, self.events.recv()).await {
            Ok(Some(event)) => Some(json!(event)),
            Ok(None) => {
                let answer = self.answer.take()?;
                Some(match self.app.wait(answer, self.deadline).await {
                    Ok(Response::Generated { eos }) => {
                        json!({ "stop": if eos { "eos" } else { "length" } })
                    }
                    Ok(_) => json!({ "error": mismatched().message }),
                    Err(error) => json!({ "error": error.message }),
                })
            }
            Err(_) => {
                self.answer = None;
                Some(json!({ "error": format!(
                    "the generation ran past the timeout of {} s; ask for fewer tokens",
                    self.app.timeout.as_secs_f64()
                ) }))
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LmAttentionBody {
    ids: Vec<u32>,
    position: usize,
    model: Option<String>,
}

/// Where a generated token came from, as the page draws it.
#[derive(Serialize)]
struct LmAttention<'a> {
    model: &'a str,
    position: usize,
    /// The tokens as text, up to and including the one at `position`.
    pieces: &'a [String],
    /// `[layer][head][1][key]` over the tokens before `position`.
    weights: &'a AttentionMaps,
}

async fn lm_attention(
    State(app): State<App>,
    JsonBody(body): JsonBody<LmAttentionBody>,
) -> Result<HttpResponse, ApiError> {
    let most = MAX_PROMPT_TOKENS + MAX_NEW_TOKENS;
    if body.ids.len() > most {
        return Err(ApiError::unprocessable(format!(
            "ids: {} tokens; at most {most}",
            body.ids.len()
        )));
    }
    let model = app.model("generate", body.model.as_deref(), "language model")?;
    let Response::LmAttention(attention) = app
        .run(Request::LmAttention {
            model,
            ids: body.ids,
            position: body.position,
        })
        .await?
    else {
        return Err(mismatched());
    };
    let answer = LmAttention {
        model: &app.worker.models()[model].name,
        position: body.position,
        pieces: &attention.pieces,
        weights: &attention.weights,
    };
    Ok(Json(answer).into_response())
}
