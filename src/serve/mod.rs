//! The attention explorer: a web page and a JSON API over the translation models, MiniLM and
//! decoder language models, what `attnzoo serve` runs. The page is embedded (no CDN, works offline); the models run on
//! one thread of their own behind a bounded queue ([`Worker`]), so the async side only parses,
//! checks and waits.
//!
//! ```no_run
//! # async fn run() -> attnzoo::Result<()> {
//! use std::time::Duration;
//! use attnzoo::serve::{Server, Worker};
//! let device = attnzoo_backends::Backend::Flex.open(Default::default())?;
//! let worker = Worker::start(&["runs/demo/model".into()], None, &[], device, "flex", 16)?;
//! let server = Server::bind("127.0.0.1:8080".parse().unwrap(), worker, Duration::from_secs(30)).await?;
//! server.run(attnzoo::serve::shutdown_signal()).await
//! # }
//! ```
//!
//! Routes: `GET /` (the page), `GET /health`, `GET /api/models`, `POST /api/translate`,
//! `POST /api/encode`, `POST /api/generate` (a language model's continuation, streamed a token a
//! line) and `POST /api/lm-attention` (where one generated token looked). Every error is a 4xx
//! or 5xx with a JSON body `{"error": "…"}`.

mod api;
mod worker;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

pub use api::{
    router, MAX_BEAM, MAX_BODY_BYTES, MAX_NEW_TOKENS, MAX_PROMPT_TOKENS, MAX_TEXT_CHARS,
};
pub use worker::{Generated, ModelInfo, Refused, Request, Response, Worker};

use crate::error::{Error, Result};

/// The longest a client may take to send a request's headers, or stay idle between requests.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections served at once; more are answered 503 and closed as they come.
pub const MAX_CONNECTIONS: usize = 256;
/// What a connection beyond [`MAX_CONNECTIONS`] is told, as every error: `{"error": …}`.
const BUSY: &str = "too many connections at once: try again shortly";

/// The whole HTTP answer to a connection beyond [`MAX_CONNECTIONS`], before it is closed.
fn busy_answer() -> Vec<u8> {
    let body = serde_json::json!({ "error": BUSY }).to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
/// After the shutdown signal, how long requests in flight may take to finish.
pub const DRAIN: Duration = Duration::from_secs(10);

/// A bound listener and the routes it serves.
pub struct Server {
    listener: tokio::net::TcpListener,
    router: axum::Router,
}

impl Server {
    /// Listens on `addr` (port 0: any free port) for the models of `worker`; a request that
    /// takes longer than `timeout` in all is answered 504 (or 408 while its body is read).
    /// Bound to a loopback address, it answers only requests addressed to one (`Host`), so a
    /// web page elsewhere cannot reach it through DNS rebinding.
    pub async fn bind(addr: SocketAddr, worker: Worker, timeout: Duration) -> Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|error| Error::Machine(format!("cannot listen on {addr}: {error}")))?;
        Ok(Self {
            listener,
            router: if addr.ip().is_loopback() {
                router(worker, timeout).layer(axum::middleware::from_fn(api::loopback_host))
            } else {
                router(worker, timeout)
            },
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|error| Error::Machine(format!("the listening address: {error}")))
    }

    /// Serves until `shutdown` completes, then lets the requests in flight finish (at most
    /// [`DRAIN`]). A connection that takes over [`HEADER_TIMEOUT`] to send its headers, or idles
    /// that long between requests, is closed.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let (stop, stopped) = watch::channel(false);
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let busy = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let busy_reply: Arc<[u8]> = busy_answer().into();
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = &mut shutdown => break,
            };
            let Ok((stream, _)) = accepted else {
                // Out of file descriptors, say: wait for connections to close.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                // Too many connections: this one is told so (if it reads within a second, and
                // unless as many again are being told), then closed.
                if let Ok(telling) = busy.clone().try_acquire_owned() {
                    let (mut stream, answer) = (stream, busy_reply.clone());
                    connections.spawn(async move {
                        let tell = async {
                            stream.write_all(&answer).await?;
                            stream.shutdown().await?;
                            // Read what the client sent, so that closing does not reset the
                            // connection before it has read the answer.
                            tokio::io::copy(&mut stream, &mut tokio::io::sink()).await
                        };
                        let _ = tokio::time::timeout(Duration::from_secs(1), tell).await;
                        drop(telling);
                    });
                }
                continue;
            };
            let service = TowerToHyperService::new(self.router.clone());
            let mut stopped = stopped.clone();
            connections.spawn(async move {
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), service);
                tokio::pin!(connection);
                tokio::select! {
                    _ = connection.as_mut() => {}
                    _ = stopped.changed() => {
                        connection.as_mut().graceful_shutdown();
                        let _ = connection.await;
                    }
                }
                drop(slot);
            });
            while connections.try_join_next().is_some() {}
        }
        let _ = stop.send(true);
        let _ = tokio::time::timeout(DRAIN, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        Ok(())
    }
}
/// Completes on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
