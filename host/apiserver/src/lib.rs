//! The embedded API server: the in-memory store ([`MemoryApiServer`]) served over HTTP
//! on loopback, speaking Kubernetes' REST API for pods, so that kube-rs, kubectl and the
//! Python client work against it as against a cluster.
//!
//! Served: discovery (`/version`, `/api`, `/apis`, `/api/v1`, aggregated discovery v2),
//! list and get of pods with field and label selectors and server-side `Table`s, watch
//! (chunked newline-delimited events, resumable from a resourceVersion, 410 when too
//! old), create, update, status update and patch (JSON merge patch, strategic merge
//! patch), delete with grace period and preconditions, and Kubernetes `Status` bodies for
//! every error. See `routes` for the paths.
//!
//! Give it a store made with [`MemoryApiServer::with_graceful_deletion`]: a status
//! manager deletes a pod only once it has a `deletionTimestamp`, which a store that
//! deletes at once never gives (the server works with either).

mod discovery;
mod merge_patch;
mod pods;
mod routes;
mod selectors;
mod status_body;
mod table;
mod watch;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use podstatus_backends::MemoryApiServer;

/// How long a stopping server waits for open connections (watches end at once) before
/// it drops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Limits of a server; [`ServeOptions::default`] suits a node's worth of pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// Changes kept for watches that resume from a resourceVersion; a resume from
    /// further back gets 410 Expired (the client lists again).
    pub watch_history: usize,
    /// Changes buffered per watcher; one that falls further behind is cut off with 410
    /// rather than slow down writers.
    pub watcher_buffer: usize,
    /// Largest request body accepted (a larger one gets 413).
    pub max_body_bytes: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { watch_history: 10_000, watcher_buffer: 10_000, max_body_bytes: 8 << 20 }
    }
}

/// A running embedded API server. It serves from its own tokio runtime on its own
/// thread, so callers need no runtime and a busy caller never stalls it.
pub struct EmbeddedApiServer {
    local_addr: SocketAddr,
    store: Arc<MemoryApiServer>,
    /// Set to true to stop: the accept loop ends, watches end, connections close.
    stop: tokio::sync::watch::Sender<bool>,
    /// The serving thread; taken by the first stop.
    thread: Option<JoinHandle<()>>,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound (in use, not local, ...).
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The tokio runtime or the serving thread could not be set up.
    #[error("cannot start the server's runtime")]
    Runtime(#[source] std::io::Error),
}

impl EmbeddedApiServer {
    /// Serves `store` on `addr` ("127.0.0.1:0" for an ephemeral port) from its own tokio
    /// runtime thread(s); returns once listening.
    pub fn start(store: Arc<MemoryApiServer>, addr: SocketAddr) -> Result<Self, ServeError> {
        Self::start_with(store, addr, ServeOptions::default())
    }

    /// [`EmbeddedApiServer::start`] with other limits.
    pub fn start_with(
        store: Arc<MemoryApiServer>,
        addr: SocketAddr,
        options: ServeOptions,
    ) -> Result<Self, ServeError> {
        // Bound here, before the thread starts: an error is the caller's at once, and
        // connections queue from the moment this returns.
        let listener = std::net::TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
        let local_addr = listener.local_addr().map_err(|source| ServeError::Bind { addr, source })?;
        listener.set_nonblocking(true).map_err(|source| ServeError::Bind { addr, source })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("podstatus-api-server")
            .enable_all()
            .build()
            .map_err(ServeError::Runtime)?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|source| ServeError::Bind { addr, source })?
        };
        let hub = watch::WatchHub::attach(&store, options.watch_history, options.watcher_buffer);
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let context = Arc::new(routes::Context {
            store: Arc::clone(&store),
            hub,
            server_address: local_addr.to_string(),
            max_body_bytes: options.max_body_bytes,
            stopping: stopping.clone(),
        });
        let thread = std::thread::Builder::new()
            .name("podstatus-api-server".into())
            .spawn(move || {
                runtime.block_on(routes::serve(listener, context, stopping, SHUTDOWN_GRACE));
                runtime.shutdown_timeout(Duration::from_millis(100));
            })
            .map_err(ServeError::Runtime)?;
        tracing::info!(address = %local_addr, "embedded API server listening");
        Ok(Self { local_addr, store, stop, thread: Some(thread) })
    }

    /// The address served (with the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The base URL for clients: "http://127.0.0.1:PORT".
    pub fn url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// The store served.
    pub fn store(&self) -> &Arc<MemoryApiServer> {
        &self.store
    }

    /// Stops serving (open watches end); also done on Drop.
    pub fn shutdown(mut self) {
        self.stop_serving();
    }

    fn stop_serving(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the embedded API server's thread panicked");
        }
    }
}

impl Drop for EmbeddedApiServer {
    fn drop(&mut self) {
        self.stop_serving();
    }
}

impl std::fmt::Debug for EmbeddedApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedApiServer").field("local_addr", &self.local_addr).finish_non_exhaustive()
    }
}
