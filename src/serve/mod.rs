//! The attention explorer: a web page and a JSON API over the translation models and MiniLM,
//! what `attnzoo serve` runs. The page is embedded (no CDN, works offline); the models run on
//! one thread of their own behind a bounded queue ([`Worker`]), so the async side only parses,
//! checks and waits.
//!
//! ```no_run
//! # async fn run() -> attnzoo::Result<()> {
//! use std::time::Duration;
//! use attnzoo::serve::{Server, Worker};
//! let device = attnzoo_backends::Backend::Flex.open(Default::default())?;
//! let worker = Worker::start(&["runs/demo/model".into()], None, device, "flex", 16)?;
//! let server = Server::bind("127.0.0.1:8080".parse().unwrap(), worker, Duration::from_secs(30)).await?;
//! server.run(attnzoo::serve::shutdown_signal()).await
//! # }
//! ```
//!
//! Routes: `GET /` (the page), `GET /health`, `GET /api/models`, `POST /api/translate`,
//! `POST /api/encode`. Every error is a 4xx or 5xx with a JSON body `{"error": "…"}`.

mod api;
mod worker;

use std::net::SocketAddr;
use std::time::Duration;

pub use api::{router, MAX_BEAM, MAX_BODY_BYTES, MAX_TEXT_CHARS};
pub use worker::{ModelInfo, Refused, Request, Response, Worker};

use crate::error::{Error, Result};

/// A bound listener and the routes it serves.
pub struct Server {
    listener: tokio::net::TcpListener,
    router: axum::Router,
}

impl Server {
    /// Listens on `addr` (port 0: any free port) for the models of `worker`; a request that
    /// takes longer than `timeout` in all is answered 504 (or 408 while its body is read).
    pub async fn bind(addr: SocketAddr, worker: Worker, timeout: Duration) -> Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|error| Error::Machine(format!("cannot listen on {addr}: {error}")))?;
        Ok(Self {
            listener,
            router: router(worker, timeout),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|error| Error::Machine(format!("the listening address: {error}")))
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|error| Error::Machine(format!("serving: {error}")))
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
