//! An agent's connection to its API server: the I/O runtime, the agent's client (watch,
//! mirror pods, Node and Lease, the caller's own requests) and the plugin's status
//! client (told apart by its User-Agent), and the metrics both count into.
//!
//! A [`crate::NodeAgent`] started alone opens its own. Nodes that share a process (a
//! fleet, issue 28) share one: a client is a connection pool, and a pool (and a runtime)
//! per node is what makes one process per node cost what it does. What stays per node
//! is what a kubelet has per node: its rate limit and circuit breaker
//! ([`crate::client::KubeApiServer`] over the shared status client).

use std::path::PathBuf;
use std::sync::Arc;

use super::kubeconfig::{self, ClientSource, ConnectError};
use crate::metrics::Metrics;
use podstatus_runtime::CallPool;

/// Where the agent's API server is (the embedded one, started on a simulated node's
/// behalf, is `podstatus-simulate`'s: the agent reaches it by its URL).
#[derive(Clone, Debug)]
pub enum Target {
    /// A server at this URL, without credentials (an embedded server, a proxy).
    Url(String),
    /// A cluster, from this kubeconfig, else `KUBECONFIG`, `~/.kube/config` or the
    /// in-cluster service account, as every Kubernetes tool finds it; at `context`, or
    /// the kubeconfig's current context.
    Kubeconfig {
        /// The kubeconfig file, if one is named.
        path: Option<PathBuf>,
        /// The context to use instead of the current one.
        context: Option<String>,
    },
}

/// Why a [`Connection`] could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// The tokio runtime could not start.
    #[error("starting the I/O runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// No client could be made for the API server.
    #[error("connecting to the API server: {0}")]
    Connect(#[from] ConnectError),
}

/// I/O worker threads of a connection's runtime, whatever the number of nodes on it:
/// their work is waiting on sockets.
const IO_THREADS: usize = 2;

/// A runtime, two clients of one server, and their metrics; see the module documentation.
pub struct Connection {
    client: kube::Client,
    status_client: kube::Client,
    api_url: String,
    metrics: Arc<Metrics>,
    /// The threads the plugins' API calls are made on, when the nodes share them.
    call_pool: Option<Arc<CallPool>>,
    // Dropped last: the clients' connection tasks run on it.
    runtime: tokio::runtime::Runtime,
}

impl Connection {
    /// Opens the clients for `target` (reading a kubeconfig when it names one), counting
    /// their requests into new metrics.
    pub fn open(target: &Target) -> Result<Self, ConnectionError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .thread_name("podstatus-io")
            .enable_all()
            .build()
            .map_err(ConnectionError::Runtime)?;
        let source = match target {
            Target::Url(url) => ClientSource::Url(url.clone()),
            Target::Kubeconfig { path: Some(path), context } => {
                ClientSource::Kubeconfig { path: path.clone(), context: context.clone() }
            }
            Target::Kubeconfig { path: None, context } => ClientSource::Infer { context: context.clone() },
        };
        let kube_config = runtime.block_on(kubeconfig::load_config(&source))?;
        let api_url = kube_config.cluster_url.to_string();
        let metrics = Arc::new(Metrics::new());
        let (client, status_client) = {
            // kube spawns its connection pool's tasks on the current runtime.
            let _entered = runtime.enter();
            let status_config = super::kube_client::status_client_config(kube_config.clone());
            (
                crate::metrics::metered_client(kube_config, &metrics).map_err(ConnectError::Client)?,
                crate::metrics::metered_client(status_config, &metrics).map_err(ConnectError::Client)?,
            )
        };
        Ok(Connection { client, status_client, api_url, metrics, call_pool: None, runtime })
    }

    /// The same connection, the plugins of every node on it making their API calls on
    /// `pool`'s threads (a fleet's: a fixed number of threads whatever the number of
    /// nodes) instead of on workers of each node's own.
    pub fn with_call_pool(self, pool: Arc<CallPool>) -> Self {
        Connection { call_pool: Some(pool), ..self }
    }

    /// The shared call threads, if the nodes share them.
    pub fn call_pool(&self) -> Option<&Arc<CallPool>> {
        self.call_pool.as_ref()
    }

    /// The agent's client (not the plugin's).
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The plugin's status client (User-Agent [`crate::client::STATUS_CLIENT_USER_AGENT`]).
    pub fn status_client(&self) -> &kube::Client {
        &self.status_client
    }

    /// Where the API server is.
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The metrics every node on this connection counts into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The runtime the I/O runs on.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        self.runtime.handle()
    }
}
