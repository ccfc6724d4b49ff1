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
//! Against hostile or careless clients it holds within [`ServeOptions`]' limits
//! (connections, header and body timeouts, body sizes and bytes in flight, per-watch
//! buffers and slow watchers, object size): past a limit a client gets the status code
//! kube-apiserver would give (413, 429, 504) or a closed connection, and the others
//! are still answered. For measurements, one client (by `User-Agent`) can be answered
//! late, as across a network ([`ServeOptions::delayed_client`]). What clients write is validated as kube-apiserver validates it
//! (`validation`): 422 `Invalid` with `details.causes`.
//!
//! Give it a store made with [`MemoryApiServer::with_graceful_deletion`]: a status
//! manager deletes a pod only once it has a `deletionTimestamp`, which a store that
//! deletes at once never gives (the server works with either).

mod client_latency;
mod discovery;
mod object_handlers;
mod object_tables;
mod objects;
mod pods;
mod routes;
mod selectors;
mod status_body;
mod table;
mod validation;
mod watch;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use client_latency::DelayedClient;
use podstatus_backends::MemoryApiServer;

/// How long a stopping server waits for open connections (watches end at once) before
/// it drops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Limits of a server; [`ServeOptions::default`] suits a node's worth of pods. Where
/// kube-apiserver has the same limit, the default is its default (said at each field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// Changes kept for watches that resume from a resourceVersion; a resume from
    /// further back gets 410 Expired (the client lists again).
    pub watch_history: usize,
    /// Changes queued per watcher; one that falls further behind is cut off with 410
    /// rather than slow down writers.
    pub watcher_buffer: usize,
    /// Bytes of encoded events queued per watch stream, or of a list's encoded items,
    /// before the stream waits for its client (default 1 MiB). What a watch or a list
    /// response holds is bounded by this, not by the number of pods.
    pub watcher_buffer_bytes: usize,
    /// How long a watch stream may wait for its client to take the next event before
    /// it is closed (default 5 s). kube-apiserver's watch cache does the same to a
    /// watcher it cannot hand events to ("Forcing watcher close due to
    /// unresponsiveness"): the stream ends, the client watches again from its last
    /// resourceVersion, or lists again on the 410 a resume from too far back gets.
    pub slow_watcher_timeout: Duration,
    /// Largest request body accepted (default 3 MiB, kube-apiserver's
    /// `MaxRequestBodyBytes`); a larger declared `Content-Length` gets 413 before
    /// anything is read, a larger chunked body 413 once the limit is reached.
    pub max_body_bytes: usize,
    /// Bytes of request bodies being read at once, all requests together (default
    /// 32 MiB): a body is reserved its declared length (the maximum when chunked)
    /// before it is read; one that does not fit gets 429 with `Retry-After`, as
    /// kube-apiserver answers past its in-flight limits. Memory spent on bodies is
    /// thus bounded whatever clients send.
    pub body_bytes_in_flight: usize,
    /// Largest object stored (default 1.5 MiB, etcd's `--max-request-bytes`, the
    /// limit behind kube-apiserver): a write that would make a larger pod gets 413.
    pub max_object_bytes: usize,
    /// How long a client has to send a request's headers, and how long a keep-alive
    /// connection may sit idle between requests (default 32 s, kube-apiserver's
    /// `ReadHeaderTimeout`); the connection is closed after it.
    pub header_timeout: Duration,
    /// How long a client has to send a request's body (default 60 s, kube-apiserver's
    /// `--request-timeout`); then 504 `Timeout` and the connection is closed. Also how
    /// long a list (streamed, see `watcher_buffer_bytes`) waits for a client that takes
    /// nothing before it is cut short.
    pub body_timeout: Duration,
    /// Connections open at once (default 512). At the cap, an idle connection is closed
    /// to admit the new one: one still sending its first headers before a keep-alive
    /// client's between requests, the one idle longest first; when every connection is busy in a request, the new one gets 429 with
    /// `Retry-After` and is closed, as kube-apiserver answers past
    /// `--max-requests-inflight`. Either way the server keeps answering.
    pub max_connections: usize,
    /// Nodes and leases held at most, together (default 10,000): past it a create gets
    /// 403 "exceeded quota", so clients cannot grow the server's memory by creating
    /// small objects. Pods are bounded by the store the server is given.
    pub max_objects: usize,
    /// A client whose every request is answered this much later (default none): what a
    /// network between it and the server would do to it, and to it alone (see
    /// [`DelayedClient`]). The wait holds nothing: other requests go on meanwhile.
    pub delayed_client: Option<DelayedClient>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            watch_history: 10_000,
            watcher_buffer: 10_000,
            watcher_buffer_bytes: 1 << 20,
            slow_watcher_timeout: Duration::from_secs(5),
            max_body_bytes: 3 << 20,
            body_bytes_in_flight: 32 << 20,
            max_object_bytes: 3 << 19,
            header_timeout: Duration::from_secs(32),
            body_timeout: Duration::from_secs(60),
            max_connections: 512,
            max_objects: 10_000,
            delayed_client: None,
        }
    }
}

/// What a server holds and has shed (see [`EmbeddedApiServer::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections open now.
    pub open_connections: usize,
    /// Watch streams open now.
    pub open_watches: usize,
    /// Idle connections closed to admit new ones at the connection cap.
    pub idle_connections_closed: usize,
    /// Connections answered 429 and closed because every connection was busy.
    pub connections_refused: usize,
    /// Watch streams closed because their client took nothing for the slow-watcher
    /// timeout.
    pub slow_watches_closed: usize,
    /// Lists cut short because their client took nothing for the body timeout.
    pub slow_lists_closed: usize,
    /// Requests answered 429 because the bodies being read used the whole budget.
    pub bodies_refused: usize,
    /// Pod list requests answered so far (a client that relists shows here).
    pub pod_lists: usize,
    /// Pod watch requests answered so far.
    pub pod_watches: usize,
    /// Requests held back by [`ServeOptions::delayed_client`] so far.
    pub delayed_requests: usize,
}

/// A running embedded API server. It serves from its own tokio runtime on its own
/// thread, so callers need no runtime and a busy caller never stalls it.
pub struct EmbeddedApiServer {
    local_addr: SocketAddr,
    store: Arc<MemoryApiServer>,
    counters: Arc<routes::Counters>,
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
        let counters = Arc::new(routes::Counters::default());
        let context = Arc::new(routes::Context {
            store: Arc::clone(&store),
            objects: Arc::new(objects::ObjectStore::new(options.max_objects, options.max_object_bytes)),
            hub,
            server_address: local_addr.to_string(),
            body_budget: Arc::new(tokio::sync::Semaphore::new(routes::budget_units(options.body_bytes_in_flight))),
            options,
            stopping: stopping.clone(),
            counters: Arc::clone(&counters),
        });
        let thread = std::thread::Builder::new()
            .name("podstatus-api-server".into())
            .spawn(move || {
                runtime.block_on(routes::serve(listener, context, stopping, SHUTDOWN_GRACE));
                runtime.shutdown_timeout(Duration::from_millis(100));
            })
            .map_err(ServeError::Runtime)?;
        tracing::info!(address = %local_addr, "embedded API server listening");
        Ok(Self { local_addr, store, counters, stop, thread: Some(thread) })
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

    /// What the server holds now and what it has shed so far.
    pub fn stats(&self) -> ServerStats {
        self.counters.snapshot()
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
