//! A node agent's status manager, wired for real: the plugin (supervised, metered)
//! behind the thread-safe handle and its scheduler, writing through the kube-rs client
//! to an API server over HTTP — a cluster's, or any server at a URL (the embedded one
//! `podstatus-simulate` starts) — with the node's pods coming from a watch and from a
//! manifest folder.
//!
//! This is what `podstatus simulate` and `podstatus agent` run and what an agent
//! embeds: everything the plugin touches goes through the host's guard (its node's pods
//! only) and meters.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::object::NodeConfig;
use super::pod_watch::PodWatch;
use super::registration::NodeRegistration;
use super::static_pods::StaticPods;
use crate::client::ConnectError;
use crate::client::{Connection, ConnectionError, Target};
use crate::client::{KubeApiServer, KubeClientConfig, KubeClientError};
use crate::metrics::MeteredApiServer;
use crate::metrics::MeteredPlugin;
use crate::metrics::TimedManager;
use crate::metrics::{Metrics, MetricsScope, MetricsServer};
use podstatus_backends::ApiServer;
use podstatus_backends::ContainersStopped;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;
use podstatus_backends::SystemClock;
use podstatus_runtime::SupervisedPlugin;
use podstatus_runtime::World;
use podstatus_runtime::{LoadError, Plugin, PluginImage, PluginRuntime};
use podstatus_runtime::{ManagerHandle, Scheduler, SchedulerConfig};
use podstatus_runtime::{SwapError, SwapReport};

/// How the agent runs, against a `T` ([`Target`]; a harness that can start the
/// API server itself has targets of its own, see `podstatus-simulate`).
#[derive(Clone, Debug)]
pub struct AgentConfig<T = Target> {
    /// The node whose pods this agent manages.
    pub node: String,
    /// Where the API server is.
    pub target: T,
    /// The client's rate limit and timeouts.
    pub client: KubeClientConfig,
    /// Static pod manifests (the kubelet's `--pod-manifest-path`).
    pub manifest_dir: Option<PathBuf>,
    /// Where to serve metrics, if anywhere.
    pub metrics_addr: Option<SocketAddr>,
    /// The batch sync period.
    pub sync_period: Duration,
    /// Where in the sync period this node's batch syncs fall, as a fraction of it
    /// (`SchedulerConfig::batch_phase`): 0 for a node alone; a fleet spreads its
    /// nodes' batches over the period.
    pub batch_phase: f64,
    /// The sync queue's capacity.
    pub queue_capacity: usize,
    /// Register the node (its Node object and Lease, kept as the kubelet keeps them),
    /// described so; `None` leaves the API server's nodes alone (a test's agent).
    pub register_node: Option<NodeConfig>,
}

impl<T> AgentConfig<T> {
    /// These settings against `target` instead.
    pub fn with_target<U>(&self, target: U) -> AgentConfig<U> {
        AgentConfig {
            node: self.node.clone(),
            target,
            client: self.client.clone(),
            manifest_dir: self.manifest_dir.clone(),
            metrics_addr: self.metrics_addr,
            sync_period: self.sync_period,
            batch_phase: self.batch_phase,
            queue_capacity: self.queue_capacity,
            register_node: self.register_node.clone(),
        }
    }
}

/// What can stop an agent from starting or swapping.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The tokio runtime could not start.
    #[error("starting the I/O runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// No client could be made for the API server.
    #[error("connecting to the API server: {0}")]
    Connect(#[from] ConnectError),
    /// The client's configuration is unusable.
    #[error("API client: {0}")]
    Client(#[from] KubeClientError),
    /// The metrics endpoint could not start.
    #[error("starting the metrics endpoint: {0}")]
    Metrics(#[from] crate::metrics::ServeError),
    /// The plugin could not be loaded.
    #[error("loading the plugin: {0}")]
    Load(#[from] LoadError),
    /// The node's pods could not be listed in time.
    #[error("the API server at {server} did not list the node's pods within {waited:?}{}", last_error_text(.last_error))]
    NotSynced {
        /// The API server's URL.
        server: String,
        /// How long the agent waited.
        waited: Duration,
        /// The pod watch's last failure, if it failed.
        last_error: Option<String>,
    },
    /// The API server refused, for good, to list the pods (the node's credentials may
    /// not list them): no retry will change it.
    #[error("the API server at {server} refused to list {what}: {message}")]
    WatchRefused {
        /// The API server's URL.
        server: String,
        /// Whose pods (`node intruder's pods`, `the fleet's pods`).
        what: String,
        /// The server's answer, one line.
        message: String,
    },
    /// The caller stopped the start (a signal) before the node's pods were listed.
    #[error("stopped before the API server at {server} listed the node's pods{}", last_error_text(.last_error))]
    Stopped {
        /// The API server's URL.
        server: String,
        /// The pod watch's last failure, if it failed.
        last_error: Option<String>,
    },
    /// The manifest folder could not be read.
    #[error("static pods: {0}")]
    StaticPods(#[from] super::static_pods::StaticPodsError),
    /// A swap failed; the old plugin keeps serving.
    #[error(transparent)]
    Swap(#[from] SwapError),
}

/// `(last error: ...)` after a message about waiting for the API server, when the
/// watch failed.
fn last_error_text(error: &Option<String>) -> String {
    error.as_ref().map(|e| format!(" (last error: {e})")).unwrap_or_default()
}

impl From<ConnectionError> for AgentError {
    fn from(error: ConnectionError) -> Self {
        match error {
            ConnectionError::Runtime(e) => AgentError::Runtime(e),
            ConnectionError::Connect(e) => AgentError::Connect(e),
        }
    }
}

/// A running agent. [`NodeAgent::shutdown`] flushes; dropping it stops without flushing.
pub struct NodeAgent {
    handle: ManagerHandle,
    scheduler: Option<Scheduler>,
    world: World,
    metrics: Arc<Metrics>,
    /// What the node's samples are labelled with (nothing for a single agent); kept
    /// for the plugin a swap brings.
    scope: Arc<MetricsScope>,
    /// The client itself, for what only it knows (calls it refused without sending).
    kube: Arc<KubeApiServer>,
    plugins: PluginRuntime,
    // Dropped in this order after the fields above: sources first, then the connection
    // (the runtime their tasks run on, unless a fleet still shares it).
    registration: Option<NodeRegistration>,
    _static_pods: Option<StaticPods>,
    pod_watch: Option<PodWatch>,
    _metrics_server: Option<MetricsServer>,
    connection: Arc<Connection>,
}

/// How long the first list of the node's pods may take.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// How a flush ended ([`NodeAgent::flush_until`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flushed {
    /// Every pending status was written.
    #[default]
    Done,
    /// The deadline came first: statuses are left unwritten.
    TimedOut,
    /// The caller stopped it (a signal): statuses may be left unwritten.
    Interrupted,
}

impl std::fmt::Display for Flushed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Flushed::Done => "done",
            Flushed::TimedOut => "timed out",
            Flushed::Interrupted => "interrupted",
        })
    }
}

impl NodeAgent {
    /// Starts the agent with `image` as its plugin.
    pub fn start(config: &AgentConfig, plugins: PluginRuntime, image: PluginImage) -> Result<Self, AgentError> {
        Self::start_with_layer(config, plugins, image, |api_server| api_server)
    }

    /// [`NodeAgent::start`], with `layer` put between the plugin and its API server
    /// client, under the meters (which count what the plugin saw): what a simulation or
    /// a test adds there, such as injected faults.
    pub fn start_with_layer(
        config: &AgentConfig,
        plugins: PluginRuntime,
        image: PluginImage,
        layer: impl FnOnce(Arc<dyn ApiServer>) -> Arc<dyn ApiServer>,
    ) -> Result<Self, AgentError> {
        Self::start_with_layer_until(config, plugins, image, layer, Some(SYNC_TIMEOUT), &|| true)
    }

    /// [`NodeAgent::start_with_layer`], waiting for the first list of the node's pods
    /// for `wait` at most (`None`: until it comes, the watch retrying with backoff, as
    /// the kubelet waits for its API server) and only while `go_on` says so (asked every
    /// tenth of a second: a signal ends the start at once).
    pub fn start_with_layer_until(
        config: &AgentConfig,
        plugins: PluginRuntime,
        image: PluginImage,
        layer: impl FnOnce(Arc<dyn ApiServer>) -> Arc<dyn ApiServer>,
        wait: Option<Duration>,
        go_on: &dyn Fn() -> bool,
    ) -> Result<Self, AgentError> {
        let connection = Arc::new(Connection::open(&config.target)?);
        let pod_manager = Arc::new(PodManager::new());
        let server = connection.api_url().to_owned();
        let pod_watch = PodWatch::start(
            connection.client().clone(),
            &server,
            &config.node,
            Arc::clone(&pod_manager),
            connection.runtime(),
        );
        let started = Instant::now();
        while !pod_watch.wait_synced(Duration::from_millis(100)) {
            if let Some(message) = pod_watch.refusal() {
                return Err(AgentError::WatchRefused { server, what: format!("node {}'s pods", config.node), message });
            }
            if !go_on() {
                return Err(AgentError::Stopped { server, last_error: pod_watch.last_error() });
            }
            if let Some(waited) = wait.filter(|wait| started.elapsed() >= *wait) {
                return Err(AgentError::NotSynced { server, waited, last_error: pod_watch.last_error() });
            }
        }
        let mut agent = Self::start_on(connection, pod_manager, config, plugins, image, layer)?;
        agent.pod_watch = Some(pod_watch);
        Ok(agent)
    }

    /// Starts the agent of `config.node` on a shared `connection` (its target is not
    /// read), with the pods a watch of the caller's puts in `pod_manager`: a fleet's
    /// node. The node's own are its plugin, queue, guard, rate limit, registration and
    /// static pods.
    pub fn start_on<T>(
        connection: Arc<Connection>,
        pod_manager: Arc<PodManager>,
        config: &AgentConfig<T>,
        plugins: PluginRuntime,
        image: PluginImage,
        layer: impl FnOnce(Arc<dyn ApiServer>) -> Arc<dyn ApiServer>,
    ) -> Result<Self, AgentError> {
        let scope = MetricsScope::unlabelled(Arc::clone(connection.metrics()));
        Self::start_scoped(connection, pod_manager, config, plugins, image, layer, scope)
    }

    /// [`NodeAgent::start_on`], the node's samples recorded through `scope` (a fleet
    /// node's group and logic labels, [`crate::Fleet`]).
    pub fn start_scoped<T>(
        connection: Arc<Connection>,
        pod_manager: Arc<PodManager>,
        config: &AgentConfig<T>,
        plugins: PluginRuntime,
        image: PluginImage,
        layer: impl FnOnce(Arc<dyn ApiServer>) -> Arc<dyn ApiServer>,
        scope: Arc<MetricsScope>,
    ) -> Result<Self, AgentError> {
        let runtime = connection.runtime();
        let client = connection.client().clone();
        let metrics = Arc::clone(connection.metrics());
        let kube =
            Arc::new(KubeApiServer::new(runtime.clone(), connection.status_client().clone(), config.client.clone())?);
        let limiter = kube.rate_limiter();

        let queue = Arc::new(SyncQueue::new(config.queue_capacity));
        metrics.add_queue(Arc::clone(&queue));
        let deletion_safety: Arc<dyn podstatus_backends::DeletionSafety> = Arc::new(ContainersStopped);
        // What the node reports, kept apart from the plugin: the guard decides by it.
        // It keeps the pod manager's copy of a pod the node reports as it is.
        let host_view = Arc::new(
            podstatus_backends::HostView::new(Arc::clone(&deletion_safety)).sharing_pods_with(Arc::clone(&pod_manager)),
        );
        let world = World {
            api_server: Arc::clone(&kube) as Arc<dyn ApiServer>,
            pod_manager: Arc::clone(&pod_manager),
            deletion_safety,
            clock: Arc::new(SystemClock),
            queue: Arc::clone(&queue),
        }
        .guarded(Some(config.node.clone()), Arc::clone(&host_view));
        let behind_metering = layer(Arc::clone(&world.api_server));
        let metered: Arc<dyn ApiServer> = Arc::new(
            MeteredApiServer::scoped(behind_metering, Arc::clone(&scope)).with_pod_manager(Arc::clone(&pod_manager)),
        );
        let world = World { api_server: metered, ..world };

        let registration =
            config.register_node.clone().map(|node| NodeRegistration::start(client.clone(), node, runtime));
        let static_pods = match &config.manifest_dir {
            Some(dir) => Some(StaticPods::start(dir, &config.node, client, Arc::clone(&pod_manager), runtime)?),
            None => None,
        };
        let metrics_server = match config.metrics_addr {
            Some(addr) => Some(MetricsServer::start(addr, Arc::clone(&metrics), runtime)?),
            None => None,
        };

        let plugin = supervised(&image, &world, &scope)?;
        let scheduler_config = SchedulerConfig {
            sync_period: config.sync_period,
            batch_phase: config.batch_phase,
            admission: Some(limiter),
            call_pool: connection.call_pool().cloned(),
            ..SchedulerConfig::default()
        };
        let (handle, scheduler) = podstatus_runtime::ManagerHandle::start(plugin, queue, scheduler_config);
        handle.observe(host_view);
        Ok(NodeAgent {
            handle,
            scheduler: Some(scheduler),
            world,
            metrics,
            scope,
            kube,
            plugins,
            registration,
            _static_pods: static_pods,
            pod_watch: None,
            _metrics_server: metrics_server,
            connection,
        })
    }

    /// The status manager.
    pub fn handle(&self) -> &ManagerHandle {
        &self.handle
    }

    /// The status manager as the node's side calls it: each call timed into
    /// [`Metrics::caller_latency`].
    pub fn node_side(&self) -> TimedManager {
        TimedManager::new(self.handle.clone(), Arc::clone(&self.metrics))
    }

    /// The node's pods.
    pub fn pod_manager(&self) -> &Arc<PodManager> {
        &self.world.pod_manager
    }

    /// The node's registration (Node and Lease), when the agent registers it.
    pub fn registration(&self) -> Option<&NodeRegistration> {
        self.registration.as_ref()
    }

    /// The node's own pod watch (how many times it listed, for logs and tests); `None`
    /// for a node started on a shared watch ([`NodeAgent::start_on`]).
    pub fn pod_watch(&self) -> Option<&PodWatch> {
        self.pod_watch.as_ref()
    }

    /// The agent's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// What the node's samples are labelled with.
    pub fn metrics_scope(&self) -> &Arc<MetricsScope> {
        &self.scope
    }

    /// Calls the client gave up on, by outcome: throttled by the rate limit or failed
    /// fast by the open circuit (never sent), or cut by the call timeout. The API calls
    /// metrics count them as `ServiceUnavailable`, with the server's own answers.
    pub fn client_refusals(&self) -> std::collections::BTreeMap<String, u64> {
        use crate::client::Outcome;
        let mut refusals = std::collections::BTreeMap::new();
        for call in self.kube.call_counts() {
            if matches!(call.outcome, Outcome::Throttled | Outcome::Timeout | Outcome::CircuitOpen) && call.count > 0 {
                *refusals.entry(call.outcome.as_str().to_owned()).or_default() += call.count;
            }
        }
        refusals
    }

    /// The client the agent talks to its API server with (not the plugin's: that one's
    /// `User-Agent` is [`crate::client::STATUS_CLIENT_USER_AGENT`]).
    pub fn client(&self) -> &kube::Client {
        self.connection.client()
    }

    /// The runtime the agent's I/O runs on (for callers' own API requests).
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        self.connection.runtime()
    }

    /// Where the API server is.
    pub fn api_url(&self) -> &str {
        self.connection.api_url()
    }

    /// The connection the agent talks through (its own, or its fleet's).
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// Hot-swaps the plugin for the component in `path`, compiled and instantiated
    /// before anything pauses; on failure the running plugin keeps serving.
    pub fn swap_to_file(&self, path: &Path) -> Result<SwapReport, AgentError> {
        self.swap_to_image(&self.plugins.load_file(path)?)
    }

    /// Hot-swaps the plugin for a new instance of `image` (compiled once, for many
    /// nodes: a fleet's rollout); on failure the running plugin keeps serving.
    pub fn swap_to_image(&self, image: &PluginImage) -> Result<SwapReport, AgentError> {
        let plugin = supervised(image, &self.world, &self.scope)?;
        Ok(self.handle.swap(plugin)?)
    }

    /// Writes every pending status: waits for the sync queue to drain, then runs batch
    /// syncs until one finds nothing to write (the rate limit may refuse some writes of
    /// a batch: the next takes them), all within `timeout`. True when nothing is left.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.flush_until(Instant::now() + timeout, &|| true) == Flushed::Done
    }

    /// [`NodeAgent::flush`] that ends by `deadline`, a hard limit (a batch is cut
    /// between its slices, and no wait outlasts it), or within a few tens of
    /// milliseconds of `go_on` saying no (a signal during the flush).
    pub fn flush_until(&self, deadline: Instant, go_on: &dyn Fn() -> bool) -> Flushed {
        let cut = || {
            if !go_on() {
                Some(Flushed::Interrupted)
            } else if Instant::now() >= deadline {
                Some(Flushed::TimedOut)
            } else {
                None
            }
        };
        while self.handle.queue_len() > 0 {
            if let Some(cut) = cut() {
                return cut;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        loop {
            if let Some(cut) = cut() {
                return cut;
            }
            match self.handle.sync_batch_until(deadline, go_on) {
                Ok(Some(report)) if report.synced == 0 => return Flushed::Done,
                Ok(_) => {}
                Err(e) => tracing::error!("flushing: batch sync: {e}"),
            }
            // A breath between batches (the rate limit refills), cut as short as the rest.
            let pause = Instant::now() + Duration::from_millis(100);
            while Instant::now() < pause.min(deadline) && go_on() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Stops taking work, writes every pending status (within `timeout`) and stops.
    /// Returns how many queued requests were left unwritten.
    pub fn shutdown(mut self, timeout: Duration) -> usize {
        self.scheduler.take().map_or(0, |scheduler| scheduler.shutdown(timeout))
    }
}

/// The plugin as an agent runs it: recovering from faults, metered.
fn supervised(image: &PluginImage, world: &World, scope: &Arc<MetricsScope>) -> Result<Box<dyn Plugin>, AgentError> {
    let plugin = SupervisedPlugin::new(image.clone(), world.clone())?;
    Ok(Box::new(MeteredPlugin::supervised(plugin, Arc::clone(scope))))
}
