//! The running server ([`EmbeddedApiServer`]): its own tokio runtime on its own thread,
//! serving the routes until it is stopped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::call::{Context, budget_units};
use crate::objects::ObjectStore;
use crate::options::ServeOptions;
use crate::routes::serve;
use crate::stats::{Counters, ServerStats};
use crate::watch::WatchHub;
use podstatus_backends::MemoryApiServer;

/// How long a stopping server waits for open connections (watches end at once) before
/// it drops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A running embedded API server. It serves from its own tokio runtime on its own
/// thread, so callers need no runtime and a busy caller never stalls it.
pub struct EmbeddedApiServer {
    local_addr: SocketAddr,
    store: Arc<MemoryApiServer>,
    /// The watch hub, kept here for the memory account ([`EmbeddedApiServer::held_bytes`]).
    hub: Arc<WatchHub>,
    counters: Arc<Counters>,
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
        let hub = WatchHub::attach(&store, options.watch_history, options.watcher_buffer);
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let counters = Arc::new(Counters::default());
        let context = Arc::new(Context {
            store: Arc::clone(&store),
            objects: Arc::new(ObjectStore::new(options.max_objects, options.max_object_bytes)),
            hub: Arc::clone(&hub),
            list_snapshots: Default::default(),
            server_address: local_addr.to_string(),
            body_budget: Arc::new(tokio::sync::Semaphore::new(budget_units(options.body_bytes_in_flight))),
            options,
            stopping: stopping.clone(),
            counters: Arc::clone(&counters),
        });
        let thread = std::thread::Builder::new()
            .name("podstatus-api-server".into())
            .spawn(move || {
                runtime.block_on(serve(listener, context, stopping, SHUTDOWN_GRACE));
                runtime.shutdown_timeout(Duration::from_millis(100));
            })
            .map_err(ServeError::Runtime)?;
        tracing::info!(address = %local_addr, "embedded API server listening");
        Ok(Self { local_addr, store, hub, counters, stop, thread: Some(thread) })
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

    /// Bytes the server holds for its pods, for the memory account: the store's
    /// ([`MemoryApiServer::held_bytes`]) and the watch hub's beside it (its index and
    /// the history resumed watches replay).
    pub fn held_bytes(&self) -> usize {
        self.store.held_bytes() + self.hub.held_bytes()
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
