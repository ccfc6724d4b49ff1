//! The node agent as a simulated node runs it (`podstatus simulate`, and `podstatus
//! agent` by default): [`podstatus_agent::NodeAgent`], against the embedded API server
//! (the in-memory store over HTTP) it starts and holds for the agent's life, or against
//! the agent's own targets; with the simulator's additions, an API latency the embedded
//! server adds to the status client's answers and faults injected into the plugin's
//! API calls.

use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use podstatus_agent::client::STATUS_CLIENT_PRODUCT;
use podstatus_apiserver::{DelayedClient, EmbeddedApiServer, ServeOptions};
use podstatus_backends::{ApiServer, FaultyApiServer, InjectedFaults, MemoryApiServer};
use podstatus_runtime::{PluginImage, PluginRuntime};

/// Where the agent's API server is.
#[derive(Clone, Debug)]
pub enum Target {
    /// Start the embedded API server (the in-memory store over HTTP) on this address.
    Embedded(SocketAddr),
    /// A server at this URL, without credentials (another embedded server, a proxy).
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

/// How the agent runs: [`podstatus_agent::AgentConfig`]'s settings (reached through
/// this one, which derefs to them) against a [`Target`] that may be the embedded
/// server, and the simulator's additions.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// The agent's own settings.
    pub agent: podstatus_agent::AgentConfig<Target>,
    /// Fail some of the plugin's API calls on purpose (simulations, tests): the proof
    /// that a misbehaving API server loses no status.
    pub injected_faults: Option<InjectedFaults>,
    /// Have the embedded API server answer the status client (the plugin's GETs, status
    /// writes and DELETEs) this much later, as a cluster across a network would; its
    /// other clients (the watch, mirror pods, node and lease, callers of
    /// [`podstatus_agent::NodeAgent::client`]) are answered at once. Only with
    /// [`Target::Embedded`]: the latency of a real server is its own.
    pub api_latency: Option<Duration>,
}

impl Deref for AgentConfig {
    type Target = podstatus_agent::AgentConfig<Target>;

    fn deref(&self) -> &Self::Target {
        &self.agent
    }
}

impl DerefMut for AgentConfig {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.agent
    }
}

/// What can stop an agent from starting.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The agent itself did not start.
    #[error(transparent)]
    Agent(#[from] podstatus_agent::AgentError),
    /// The embedded API server could not start.
    #[error("starting the embedded API server: {0}")]
    Serve(#[from] podstatus_apiserver::ServeError),
    /// An added API latency was asked for with a server other than the embedded one.
    #[error("an added API latency needs the embedded API server (not a kubeconfig or a server URL)")]
    LatencyNeedsEmbeddedServer,
}

/// A running agent and the embedded server it runs against, if it started one; derefs
/// to the agent. [`NodeAgent::shutdown`] flushes; dropping it stops without flushing.
pub struct NodeAgent {
    // Dropped in this order: the agent (its sources, then its runtime), then the server.
    agent: podstatus_agent::NodeAgent,
    embedded: Option<EmbeddedApiServer>,
}

impl NodeAgent {
    /// Starts the agent with `image` as its plugin, and the embedded API server first
    /// when that is its target.
    pub fn start(config: &AgentConfig, plugins: PluginRuntime, image: PluginImage) -> Result<Self, AgentError> {
        let (embedded, target) = resolve(config, ServeOptions::default().max_connections)?;
        let agent = podstatus_agent::NodeAgent::start_with_layer(
            &config.agent.with_target(target),
            plugins,
            image,
            fault_layer(config.injected_faults),
        )?;
        Ok(NodeAgent { agent, embedded })
    }

    /// The embedded server's store, when the agent started one.
    pub fn store(&self) -> Option<&Arc<MemoryApiServer>> {
        self.embedded.as_ref().map(EmbeddedApiServer::store)
    }

    /// Stops taking work, writes every pending status (within `timeout`) and stops, the
    /// embedded server last. Returns how many queued requests were left unwritten.
    pub fn shutdown(self, timeout: Duration) -> usize {
        let NodeAgent { agent, embedded } = self;
        let left = agent.shutdown(timeout);
        drop(embedded);
        left
    }
}

/// The agent's target as the agent reaches it, and the embedded server started first
/// (admitting `max_connections` at once) when that is the target.
pub(crate) fn resolve(
    config: &AgentConfig,
    max_connections: usize,
) -> Result<(Option<EmbeddedApiServer>, podstatus_agent::Target), AgentError> {
    if config.api_latency.is_some() && !matches!(config.target, Target::Embedded(_)) {
        return Err(AgentError::LatencyNeedsEmbeddedServer);
    }
    Ok(match &config.target {
        Target::Embedded(addr) => {
            let delayed_client =
                config.api_latency.map(|latency| DelayedClient { user_agent: STATUS_CLIENT_PRODUCT, latency });
            let options = ServeOptions { delayed_client, max_connections, ..ServeOptions::default() };
            // As kube-apiserver: graceful deletion, and writes that change nothing not
            // persisted (no new resourceVersion, no event).
            let store = Arc::new(MemoryApiServer::with_graceful_deletion().skipping_unchanged_writes());
            let server = EmbeddedApiServer::start_with(store, *addr, options)?;
            let url = server.url();
            (Some(server), podstatus_agent::Target::Url(url))
        }
        Target::Url(url) => (None, podstatus_agent::Target::Url(url.clone())),
        Target::Kubeconfig { path, context } => {
            (None, podstatus_agent::Target::Kubeconfig { path: path.clone(), context: context.clone() })
        }
    })
}

/// What goes between a plugin and its API server client: `faults`, when asked for.
pub(crate) fn fault_layer(faults: Option<InjectedFaults>) -> impl FnOnce(Arc<dyn ApiServer>) -> Arc<dyn ApiServer> {
    move |api_server| match faults {
        Some(faults) => Arc::new(FaultyApiServer::new(api_server, faults)) as Arc<dyn ApiServer>,
        None => api_server,
    }
}

impl Deref for NodeAgent {
    type Target = podstatus_agent::NodeAgent;

    fn deref(&self) -> &podstatus_agent::NodeAgent {
        &self.agent
    }
}
