//! `GET /metrics` over HTTP/1 on the agent's `--metrics-addr`, for Prometheus to scrape,
//! and `GET /healthz` (`ok`) for the kubelet's probes: an answer means the agent's I/O
//! runtime, which also carries its API calls, is running. Anything else is 404 (or 405
//! for another method on those paths).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::registry::{CONTENT_TYPE, Metrics};

/// Why the metrics server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen for metrics on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

/// A running metrics endpoint. Stops when [`MetricsServer::shutdown`] is called or it is
/// dropped.
#[derive(Debug)]
pub struct MetricsServer {
    local_addr: SocketAddr,
    /// Set to true to stop the accept loop (and with it every open connection).
    stop: watch::Sender<bool>,
}

impl MetricsServer {
    /// Binds `addr` now (so a taken port is an error here, not later in a task) and
    /// serves `metrics` on `runtime` until shut down. Port 0 picks a free port: see
    /// [`MetricsServer::local_addr`].
    pub fn start(
        addr: SocketAddr,
        metrics: Arc<Metrics>,
        runtime: &tokio::runtime::Handle,
    ) -> Result<MetricsServer, ServeError> {
        let (listener, local_addr) =
            crate::listen::bind_now(addr, runtime).map_err(|source| ServeError::Bind { addr, source })?;
        let (stop, stopped) = watch::channel(false);
        runtime.spawn(accept_loop(listener, metrics, stopped));
        Ok(MetricsServer { local_addr, stop })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops serving; open connections are closed.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, metrics: Arc<Metrics>, mut stopped: watch::Receiver<bool>) {
    // Connections live in the set so that leaving the loop aborts them all.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            // Only `true` is ever sent; a dropped sender also means stop.
            _ = stopped.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let metrics = Arc::clone(&metrics);
                    connections.spawn(async move {
                        let service = service_fn(move |request| {
                            let metrics = Arc::clone(&metrics);
                            async move { Ok::<_, Infallible>(answer(&request, &metrics)) }
                        });
                        if let Err(error) =
                            hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await
                        {
                            tracing::debug!(%error, "metrics connection ended with an error");
                        }
                    });
                }
                // Out of file descriptors and the like: keep serving once it passes.
                Err(error) => {
                    tracing::warn!(%error, "metrics endpoint: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

fn answer(request: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (request.method(), request.uri().path()) {
        (&Method::GET, "/metrics") => (StatusCode::OK, CONTENT_TYPE, metrics.render()),
        (&Method::GET, "/healthz") => (StatusCode::OK, "text/plain; charset=utf-8", "ok".to_owned()),
        (_, "/metrics" | "/healthz") => {
            (StatusCode::METHOD_NOT_ALLOWED, "text/plain", "only GET is served here\n".to_owned())
        }
        (_, path) => (StatusCode::NOT_FOUND, "text/plain", format!("{path}: not found; metrics are at /metrics\n")),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    response
}
