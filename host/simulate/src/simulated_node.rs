//! The node agent as a simulated node runs it (`podstatus simulate`, and `podstatus
//! agent` by default): [`podstatus_agent::NodeAgent`], configured by the agent's own
//! [`AgentConfig`] against a [`SimulatedTarget`], which adds what only a simulation
//! needs: the embedded API server (the in-memory store over HTTP), started and held
//! for the agent's life ([`SimulatedNode`]), an API latency that server adds to the
//! status client's answers, and faults injected into the plugin's API calls.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use podstatus_agent::client::STATUS_CLIENT_PRODUCT;
use podstatus_agent::{AgentConfig, NodeAgent, Target};
use podstatus_apiserver::{DelayedClient, EmbeddedApiServer, ServeOptions};
use podstatus_backends::{ApiServer, FaultyApiServer, InjectedFaults, MemoryApiServer};
use podstatus_runtime::{PluginImage, PluginRuntime};

/// Where a simulated node's API server is.
#[derive(Clone, Debug)]
pub enum ApiServerTarget {
    /// Start the embedded API server (the in-memory store over HTTP) on this address.
    Embedded(SocketAddr),
    /// A server already running (another embedded server, a proxy, a cluster), reached
    /// as the agent reaches any.
    Running(Target),
}

/// The API server a simulated node runs against, and what the simulation adds to it:
/// the target of its [`AgentConfig`] (`AgentConfig<SimulatedTarget>`), so that the
/// agent's settings are the agent's own type, with nothing in between.
#[derive(Clone, Debug)]
pub struct SimulatedTarget {
    /// Where the server is.
    pub server: ApiServerTarget,
    /// Fail some of the plugin's API calls on purpose (simulations, tests): the proof
    /// that a misbehaving API server loses no status.
    pub injected_faults: Option<InjectedFaults>,
    /// Have the embedded API server answer the status client (the plugin's GETs, status
    /// writes and DELETEs) this much later, as a cluster across a network would; its
    /// other clients (the watch, mirror pods, node and lease, callers of
    /// [`NodeAgent::client`]) are answered at once. Only with
    /// [`ApiServerTarget::Embedded`]: the latency of a real server is its own.
    pub api_latency: Option<Duration>,
}

impl From<ApiServerTarget> for SimulatedTarget {
    /// `server` as it is: no faults, no added latency.
    fn from(server: ApiServerTarget) -> Self {
        SimulatedTarget { server, injected_faults: None, api_latency: None }
    }
}

/// What can stop a simulated node from starting.
#[derive(Debug, thiserror::Error)]
pub enum SimulatedNodeError {
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

/// How long [`SimulatedNode::start`] waits for the API server to list the node's pods.
pub const START_WAIT: Duration = Duration::from_secs(30);

/// A running node agent and the embedded API server it runs against, if it started
/// one: the server must outlive the agent, so they stop together
/// ([`SimulatedNode::shutdown`] flushes; dropping it stops without flushing).
pub struct SimulatedNode {
    // Dropped in this order: the agent (its sources, then its runtime), then the server.
    agent: NodeAgent,
    embedded: Option<EmbeddedApiServer>,
}

impl SimulatedNode {
    /// Starts the agent with `image` as its plugin, and the embedded API server first
    /// when that is its target.
    pub fn start(
        config: &AgentConfig<SimulatedTarget>,
        plugins: PluginRuntime,
        image: PluginImage,
    ) -> Result<Self, SimulatedNodeError> {
        Self::start_until(config, plugins, image, Some(START_WAIT), &|| true)
    }

    /// [`SimulatedNode::start`], waiting for the API server to list the node's pods for
    /// `wait` at most (`None`: until it does) and while `go_on` says so
    /// ([`NodeAgent::start_with_layer_until`]): `podstatus agent` waits for its server
    /// as the kubelet does, and stops at a signal.
    pub fn start_until(
        config: &AgentConfig<SimulatedTarget>,
        plugins: PluginRuntime,
        image: PluginImage,
        wait: Option<Duration>,
        go_on: &dyn Fn() -> bool,
    ) -> Result<Self, SimulatedNodeError> {
        let (embedded, target) = resolve(&config.target, ServeOptions::default().max_connections)?;
        let layer = fault_layer(config.target.injected_faults);
        let agent = NodeAgent::start_with_layer_until(&config.with_target(target), plugins, image, layer, wait, go_on)?;
        Ok(SimulatedNode { agent, embedded })
    }

    /// The agent.
    pub fn agent(&self) -> &NodeAgent {
        &self.agent
    }

    /// The embedded server's store, when the agent started one.
    pub fn store(&self) -> Option<&Arc<MemoryApiServer>> {
        self.embedded.as_ref().map(EmbeddedApiServer::store)
    }

    /// Stops taking work, writes every pending status (within `timeout`) and stops, the
    /// embedded server last. Returns how many queued requests were left unwritten.
    pub fn shutdown(self, timeout: Duration) -> usize {
        let SimulatedNode { agent, embedded } = self;
        let left = agent.shutdown(timeout);
        drop(embedded);
        left
    }
}

/// The target as the agent reaches it, and the embedded server started first
/// (admitting `max_connections` at once) when that is the target.
pub(crate) fn resolve(
    target: &SimulatedTarget,
    max_connections: usize,
) -> Result<(Option<EmbeddedApiServer>, Target), SimulatedNodeError> {
    match &target.server {
        ApiServerTarget::Embedded(addr) => {
            let delayed_client =
                target.api_latency.map(|latency| DelayedClient { user_agent: STATUS_CLIENT_PRODUCT, latency });
            let options = ServeOptions { delayed_client, max_connections, ..ServeOptions::default() };
            // As kube-apiserver: graceful deletion, and writes that change nothing not
            // persisted (no new resourceVersion, no event).
            let store = Arc::new(MemoryApiServer::with_graceful_deletion().skipping_unchanged_writes());
            let server = EmbeddedApiServer::start_with(store, *addr, options)?;
            let url = server.url();
            Ok((Some(server), Target::Url(url)))
        }
        ApiServerTarget::Running(_) if target.api_latency.is_some() => {
            Err(SimulatedNodeError::LatencyNeedsEmbeddedServer)
        }
        ApiServerTarget::Running(running) => Ok((None, running.clone())),
    }
}

/// What goes between a plugin and its API server client: `faults`, when asked for.
pub(crate) fn fault_layer(faults: Option<InjectedFaults>) -> impl FnOnce(Arc<dyn ApiServer>) -> Arc<dyn ApiServer> {
    move |api_server| match faults {
        Some(faults) => Arc::new(FaultyApiServer::new(api_server, faults)) as Arc<dyn ApiServer>,
        None => api_server,
    }
}
