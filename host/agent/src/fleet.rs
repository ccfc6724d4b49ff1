//! A fleet in one process (issue 28): N virtual nodes, each a whole [`NodeAgent`] of its
//! own (its plugin instance with its own state, limits and supervisor, its sync queue
//! and scheduler, its reach guard, its client budget, its Node and Lease), sharing what
//! a process needs once: the engine and the compiled component (one [`PluginImage`]
//! per group, instantiated per node), one [`Connection`] (HTTP clients and their pool,
//! the I/O runtime, the metrics, a [`CallPool`] of threads for every plugin's API
//! calls) and one pod watch fanned out by `spec.nodeName` ([`PodRoutes`]), as a shared
//! informer serves its consumers, or ([`WatchScope::PerNode`], opt-in) a watch per node
//! of its own pods, as each kubelet has.
//!
//! `podstatus simulate --nodes N` and `podstatus fleet` both run on it. The nodes are
//! named `PREFIX-0` .. `PREFIX-(N-1)` and numbered in their groups' order. Each group
//! runs one plugin, its `logic` label naming it; a node's samples carry its group and
//! logic ([`MetricsScope`]). A rollout ([`crate::Rollout`]) moves nodes between plugins
//! by hot swap through [`Fleet::swap_nodes`], and lends a canary's nodes the group
//! [`CANARY_GROUP`] while it watches them.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use crate::client::Connection;
use crate::client::Target;
use crate::metrics::{Metrics, MetricsScope, MetricsServer};
use crate::node::{AgentConfig, AgentError, Flushed, NodeAgent};
use crate::node::{PodRoutes, PodWatch, WatchScope};
use podstatus_backends::{ApiServer, PodManager};
use podstatus_runtime::{CallPool, PluginImage, PluginRuntime, SwapError};

/// Threads making the plugins' API calls for the whole fleet (a node alone has up to
/// 64 of its own): each node keeps its own limit of calls in flight within them.
pub const CALL_THREADS: usize = 32;
/// The group a canary's nodes are counted in while they are watched, whatever their
/// own: a fleet group of this name holds a canary's nodes and no other.
pub const CANARY_GROUP: &str = "canary";
/// How long the fleet's first list of pods may take.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// The most threads a rollout swaps nodes on at once (each swap instantiates a plugin
/// and moves its state: CPU work).
const SWAP_THREADS: usize = 4;

/// How many times a swap is tried on a node whose running plugin's syncs did not drain
/// in time ([`SwapError::Busy`]): a node just started, writing all its pods on a busy
/// machine, is slow, not broken. They are tried again while an attempt swaps some, or
/// when they are no more than the swap threads: an attempt that swaps none of many
/// says the API server is out of reach, and each attempt waits 10 s for it.
const SWAP_BUSY_ATTEMPTS: usize = 3;

/// Nodes of a fleet that run one plugin, each its own instance of `image`.
#[derive(Clone)]
pub struct FleetGroup {
    /// The group's name: its `group` label.
    pub name: String,
    /// How many nodes.
    pub nodes: usize,
    /// The plugin they run.
    pub image: PluginImage,
    /// What the plugin is called in the `logic` label (`podstatus-v2`, a file's stem).
    pub logic: String,
}

impl FleetGroup {
    /// `nodes` nodes of group `name` running `image`, labelled `logic`.
    pub fn new(name: &str, nodes: usize, image: PluginImage, logic: &str) -> Self {
        FleetGroup { name: name.to_owned(), nodes, image, logic: logic.to_owned() }
    }
}

/// What a fleet is made of beyond each node's settings.
#[derive(Clone)]
pub struct FleetSpec {
    /// Its groups, in the nodes' order.
    pub groups: Vec<FleetGroup>,
    /// Label every sample with its node's name too (`node`): a series per node and
    /// family, so off by default.
    pub per_node_labels: bool,
    /// The nodes' numbers in the whole fleet, in the groups' order (a shard's share:
    /// `PREFIX-3`, `PREFIX-7`, ...); `None`: `0 .. N`, the fleet is whole.
    pub numbers: Option<Vec<usize>>,
    /// How the nodes get their pods.
    pub watch: WatchScope,
}

/// Where a fleet's start stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartProgress {
    /// Connected, the pods listed; the nodes start next.
    Connected,
    /// `started` of `total` nodes are running (their Nodes registering).
    NodeStarted {
        /// Nodes started so far.
        started: usize,
        /// Nodes in the fleet.
        total: usize,
    },
}

/// Why a fleet did not start.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A node (or what the nodes share) did not start.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The groups add up to no node.
    #[error("a fleet needs at least one node")]
    NoNodes,
    /// A group's name is taken or empty.
    #[error("group name {name:?}: {reason}")]
    GroupName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The fleet's metrics endpoint did not start.
    #[error("starting the metrics endpoint: {0}")]
    Metrics(#[from] crate::metrics::ServeError),
    /// The nodes' numbers are not one per node of the groups, or repeat one.
    #[error("{numbers} node numbers for {nodes} nodes, or a number twice")]
    Numbers {
        /// Numbers given.
        numbers: usize,
        /// Nodes in the groups.
        nodes: usize,
    },
}

/// What a group runs now: it changes when a rollout promotes another plugin.
#[derive(Clone)]
struct GroupState {
    name: String,
    image: PluginImage,
    logic: String,
}

/// How a set of swaps went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SwapOutcome {
    /// Nodes swapped.
    pub swapped: usize,
    /// The nodes whose swap failed (each keeps its plugin), with why.
    pub failed: Vec<(usize, String)>,
    /// Of `failed`, the nodes whose running plugin was still busy at the last attempt
    /// ([`SwapError::Busy`]): nothing is wrong with the plugin, a later swap may go.
    pub busy: Vec<usize>,
    /// Wall time of them all.
    pub took: Duration,
    /// The longest pause of one node's status manager.
    pub max_pause: Duration,
}

/// A running fleet; see the module documentation. [`Fleet::shutdown`] flushes,
/// dropping it stops without flushing.
pub struct Fleet {
    // Dropped in this order: the nodes, then what they share.
    agents: Vec<NodeAgent>,
    names: Vec<String>,
    /// Each node's own group (the index into `groups`), whatever a canary lends it.
    homes: Vec<usize>,
    groups: Mutex<Vec<GroupState>>,
    metrics_server: Option<MetricsServer>,
    /// One shared watch, or one per node.
    watches: Vec<PodWatch>,
    connection: Arc<Connection>,
}

impl Fleet {
    /// The connections a fleet of `nodes` opens to its API server at once, at most: a
    /// request in flight per driver or runner, per Lease and per Node report, the call
    /// threads', and each node's pod watch when they watch apart (`watch`). An embedded
    /// server started for a fleet admits these beyond its own default (past its cap it
    /// closes idle connections, which clients see as failed requests).
    pub fn connections(nodes: usize, watch: WatchScope) -> usize {
        let watches = match watch {
            WatchScope::Shared => 0,
            WatchScope::PerNode => nodes,
        };
        3 * nodes + watches + CALL_THREADS
    }

    /// Starts the nodes of `spec`'s groups against `target`, each with `config`'s
    /// settings (its `node` is the names' prefix, its target is not read; its metrics
    /// address serves the whole fleet), `layer` between each node's plugin and its API
    /// client (given the node's index). Tells `progress` how the start goes.
    pub fn start<T>(
        target: &Target,
        config: &AgentConfig<T>,
        spec: FleetSpec,
        plugins: &PluginRuntime,
        layer: &dyn Fn(usize, Arc<dyn ApiServer>) -> Arc<dyn ApiServer>,
        progress: &mut dyn FnMut(StartProgress),
    ) -> Result<Fleet, FleetError> {
        Self::start_until(target, config, spec, plugins, layer, progress, &|| true)
    }

    /// [`Fleet::start`] while `go_on` says so (asked every tenth of a second while the
    /// API server is waited for, and before each node): a signal ends the start at once.
    pub fn start_until<T>(
        target: &Target,
        config: &AgentConfig<T>,
        spec: FleetSpec,
        plugins: &PluginRuntime,
        layer: &dyn Fn(usize, Arc<dyn ApiServer>) -> Arc<dyn ApiServer>,
        progress: &mut dyn FnMut(StartProgress),
        go_on: &dyn Fn() -> bool,
    ) -> Result<Fleet, FleetError> {
        check_groups(&spec.groups)?;
        let connection = Arc::new(Self::connect(target)?);
        Self::start_on(connection, config, spec, plugins, layer, progress, go_on)
    }

    /// The connection a fleet opens to `target`: its clients, and its [`CallPool`] of
    /// [`CALL_THREADS`]. A shard opens one and starts a fleet on it each time its share
    /// changes ([`Fleet::start_on`]).
    pub fn connect(target: &Target) -> Result<Connection, FleetError> {
        let pool = CallPool::new(CALL_THREADS).map_err(AgentError::Runtime)?;
        Ok(Connection::open(target).map_err(AgentError::from)?.with_call_pool(pool))
    }

    /// [`Fleet::start_until`] on an open `connection` (from [`Fleet::connect`]; its
    /// metrics go on counting from fleet to fleet).
    pub fn start_on<T>(
        connection: Arc<Connection>,
        config: &AgentConfig<T>,
        spec: FleetSpec,
        plugins: &PluginRuntime,
        layer: &dyn Fn(usize, Arc<dyn ApiServer>) -> Arc<dyn ApiServer>,
        progress: &mut dyn FnMut(StartProgress),
        go_on: &dyn Fn() -> bool,
    ) -> Result<Fleet, FleetError> {
        check_groups(&spec.groups)?;
        let homes: Vec<usize> =
            spec.groups.iter().enumerate().flat_map(|(g, group)| std::iter::repeat_n(g, group.nodes)).collect();
        if homes.is_empty() {
            return Err(FleetError::NoNodes);
        }
        let numbers = spec.numbers.clone().unwrap_or_else(|| (0..homes.len()).collect());
        let distinct: HashSet<usize> = numbers.iter().copied().collect();
        if numbers.len() != homes.len() || distinct.len() != numbers.len() {
            return Err(FleetError::Numbers { numbers: numbers.len(), nodes: homes.len() });
        }
        let names: Vec<String> = numbers.iter().map(|i| format!("{}-{i}", config.node)).collect();
        let pod_managers: Vec<Arc<PodManager>> = names.iter().map(|_| Arc::new(PodManager::new())).collect();
        let server = connection.api_url().to_owned();
        let watches = start_watches(&connection, &names, &pod_managers, spec.watch);
        let waiting = Instant::now();
        while let Some(watch) = watches.iter().find(|watch| !watch.is_synced()) {
            if watch.wait_synced(Duration::from_millis(100)) {
                continue;
            }
            if let Some(message) = watch.refusal() {
                return Err(AgentError::WatchRefused { server, what: "the fleet's pods".to_owned(), message }.into());
            }
            let last_error = watch.last_error();
            if !go_on() {
                return Err(AgentError::Stopped { server, last_error }.into());
            }
            if waiting.elapsed() >= SYNC_TIMEOUT {
                return Err(AgentError::NotSynced { server, waited: SYNC_TIMEOUT, last_error }.into());
            }
        }
        let metrics_server = match config.metrics_addr {
            Some(addr) => Some(MetricsServer::start(addr, Arc::clone(connection.metrics()), connection.runtime())?),
            None => None,
        };
        progress(StartProgress::Connected);

        let started = Instant::now();
        let mut agents = Vec::with_capacity(names.len());
        for (i, (name, pod_manager)) in names.iter().zip(&pod_managers).enumerate() {
            if !go_on() {
                return Err(AgentError::Stopped { server, last_error: None }.into());
            }
            let group = &spec.groups[homes[i]];
            let mut node = config.with_target(());
            node.node = name.clone();
            node.metrics_addr = None;
            // Node i of n runs its batches i/n of a period after node 0 (see
            // SchedulerConfig::batch_phase), as it renews its Lease.
            node.batch_phase = i as f64 / names.len() as f64;
            if let Some(registration) = node.register_node.as_mut() {
                registration.name = name.clone();
                // Node i of n renews i/n of an interval after node 0 (see heartbeat.rs).
                registration.heartbeat_phase = i as f64 / names.len() as f64;
            }
            let scope = MetricsScope::labelled(
                Arc::clone(connection.metrics()),
                &group.name,
                &group.logic,
                spec.per_node_labels.then_some(name.as_str()),
            );
            let agent = NodeAgent::start_scoped(
                Arc::clone(&connection),
                Arc::clone(pod_manager),
                &node,
                plugins.clone(),
                group.image.clone(),
                |api_server| layer(i, api_server),
                scope,
            )?;
            agents.push(agent);
            progress(StartProgress::NodeStarted { started: i + 1, total: names.len() });
        }
        tracing::info!(nodes = names.len(), took = ?started.elapsed(), "fleet started");
        let groups = spec
            .groups
            .into_iter()
            .map(|group| GroupState { name: group.name, image: group.image, logic: group.logic })
            .collect();
        Ok(Fleet { agents, names, homes, groups: Mutex::new(groups), metrics_server, watches, connection })
    }

    /// Every node's agent, by index.
    pub fn agents(&self) -> &[NodeAgent] {
        &self.agents
    }

    /// Every node's name, by index.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// Whether the fleet has no node (never, once started).
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Node `node`'s own group (its index in [`Fleet::group_names`]).
    pub fn home_group(&self, node: usize) -> usize {
        self.homes[node]
    }

    /// The groups' names, in order.
    pub fn group_names(&self) -> Vec<String> {
        self.lock_groups().iter().map(|g| g.name.clone()).collect()
    }

    /// What group `group` runs now: its plugin and that plugin's `logic` label.
    pub fn group_plugin(&self, group: usize) -> (PluginImage, String) {
        let groups = self.lock_groups();
        (groups[group].image.clone(), groups[group].logic.clone())
    }

    /// From now on group `group` runs `image` (labelled `logic`): what a promotion
    /// sets, and what a rollback swaps the group's nodes back to.
    pub fn set_group_plugin(&self, group: usize, image: &PluginImage, logic: &str) {
        let mut groups = self.lock_groups();
        groups[group].image = image.clone();
        groups[group].logic = logic.to_owned();
    }

    /// The `logic` label node `node`'s samples carry now.
    pub fn node_logic(&self, node: usize) -> String {
        self.agents[node].metrics_scope().labels().logic().unwrap_or_default().to_owned()
    }

    /// Counts node `node`'s samples in group `group` from now on (a canary lends its
    /// nodes [`CANARY_GROUP`]; [`Fleet::return_home`] gives them back).
    pub fn lend_to(&self, node: usize, group: &str) {
        self.agents[node].metrics_scope().set_group(group);
    }

    /// Counts node `node`'s samples in its own group again.
    pub fn return_home(&self, node: usize) {
        let group = self.lock_groups()[self.homes[node]].name.clone();
        self.agents[node].metrics_scope().set_group(&group);
    }

    /// The connection every node shares.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// The metrics every node counts into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        self.connection.metrics()
    }

    /// Where the fleet's metrics are served, if anywhere.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_server.as_ref().map(MetricsServer::local_addr)
    }

    /// The pod watches: one shared, or one per node in the nodes' order.
    pub fn pod_watches(&self) -> &[PodWatch] {
        &self.watches
    }

    /// Hot-swaps each of `nodes` to the plugin `plugin_of` names for it (its image and
    /// `logic` label), on a few threads at once; a node whose swap fails keeps its
    /// plugin (and its label). A node whose running plugin is still busy is tried again
    /// once the others are done, [`SWAP_BUSY_ATTEMPTS`] times in all. Nothing a node
    /// accepted is lost either way: the swap hands its state to the new instance.
    pub fn swap_nodes(
        &self,
        nodes: &[usize],
        plugin_of: &(dyn Fn(usize) -> (PluginImage, String) + Sync),
    ) -> SwapOutcome {
        let began = Instant::now();
        let mut outcome = SwapOutcome::default();
        let mut round = nodes.to_vec();
        for attempt in 1..=SWAP_BUSY_ATTEMPTS {
            let before = outcome.swapped;
            let busy = self.swap_round(&round, plugin_of, &mut outcome);
            if busy.is_empty() {
                break;
            }
            let progress = outcome.swapped > before || busy.len() <= swap_threads();
            if attempt == SWAP_BUSY_ATTEMPTS || !progress {
                for (node, why) in busy {
                    tracing::error!(node = %self.names[node], "swap failed, the node keeps its plugin: {why}");
                    outcome.busy.push(node);
                    outcome.failed.push((node, why));
                }
                break;
            }
            tracing::info!(nodes = busy.len(), attempt, "nodes still busy with syncs; their swap is tried again");
            round = busy.into_iter().map(|(node, _)| node).collect();
        }
        outcome.failed.sort();
        outcome.busy.sort_unstable();
        outcome.took = began.elapsed();
        outcome
    }

    /// One attempt of [`Fleet::swap_nodes`] over `nodes`, into `outcome`: the nodes
    /// found busy, with why, left out of it for the caller to try again or fail.
    fn swap_round(
        &self,
        nodes: &[usize],
        plugin_of: &(dyn Fn(usize) -> (PluginImage, String) + Sync),
        outcome: &mut SwapOutcome,
    ) -> Vec<(usize, String)> {
        let next = AtomicUsize::new(0);
        let shared = Mutex::new((outcome, Vec::new()));
        std::thread::scope(|scope| {
            for _ in 0..swap_threads().min(nodes.len()) {
                scope.spawn(|| {
                    while let Some(&node) = nodes.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let (image, logic) = plugin_of(node);
                        let result = self.agents[node].swap_to_image(&image);
                        let mut guard = shared.lock().unwrap_or_else(PoisonError::into_inner);
                        let (outcome, busy) = &mut *guard;
                        match result {
                            Ok(report) => {
                                self.agents[node].metrics_scope().set_logic(&logic);
                                outcome.swapped += 1;
                                outcome.max_pause = outcome.max_pause.max(report.pause);
                            }
                            Err(e @ AgentError::Swap(SwapError::Busy { .. })) => busy.push((node, e.to_string())),
                            Err(e) => {
                                tracing::error!(node = %self.names[node], "swap failed, the node keeps its plugin: {e}");
                                outcome.failed.push((node, e.to_string()));
                            }
                        }
                    }
                });
            }
        });
        let (_, mut busy) = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
        busy.sort_unstable();
        busy
    }

    /// How many of the fleet's Nodes report Ready now (0 when they cannot be read
    /// within 30 s).
    pub fn ready_nodes(&self) -> usize {
        let nodes: Api<Node> = Api::all(self.connection.client().clone());
        let listed = self.connection.runtime().block_on(async {
            tokio::time::timeout(Duration::from_secs(30), nodes.list(&ListParams::default())).await
        });
        let ours: HashSet<&str> = self.names.iter().map(String::as_str).collect();
        match listed {
            Ok(Ok(list)) => {
                list.items
                    .iter()
                    .filter(|node| node.metadata.name.as_deref().is_some_and(|n| ours.contains(n)))
                    .filter(|node| {
                        node.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|conditions| {
                            conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                        })
                    })
                    .count()
            }
            Ok(Err(e)) => {
                tracing::warn!("listing the fleet's nodes: {e}");
                0
            }
            Err(_) => {
                tracing::warn!("listing the fleet's nodes: no answer within 30 s");
                0
            }
        }
    }

    /// Writes every node's pending statuses (all within `timeout`, the nodes a few at
    /// a time): true when nothing is left anywhere.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.flush_until(Instant::now() + timeout, &|| true) == Flushed::Done
    }

    /// [`Fleet::flush`] that ends by `deadline` (a hard limit for the whole fleet:
    /// nodes not reached by then are not flushed) or soon after `go_on` says no; how the
    /// worst node's flush ended.
    pub fn flush_until(&self, deadline: Instant, go_on: &(dyn Fn() -> bool + Sync)) -> Flushed {
        let next = AtomicUsize::new(0);
        let timed_out = AtomicUsize::new(0);
        let interrupted = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..SWAP_THREADS.min(self.agents.len()) {
                scope.spawn(|| {
                    while let Some(agent) = self.agents.get(next.fetch_add(1, Ordering::Relaxed)) {
                        match agent.flush_until(deadline, go_on) {
                            Flushed::Done => {}
                            Flushed::TimedOut => {
                                timed_out.fetch_add(1, Ordering::Relaxed);
                            }
                            Flushed::Interrupted => {
                                interrupted.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        if interrupted.into_inner() > 0 {
            Flushed::Interrupted
        } else if timed_out.into_inner() > 0 {
            Flushed::TimedOut
        } else {
            Flushed::Done
        }
    }

    /// Reports every registered node as shutting down (as `podstatus agent` does at
    /// its end), each within `timeout`.
    pub fn mark_shutting_down(&self, timeout: Duration) {
        for agent in &self.agents {
            if let Some(registration) = agent.registration()
                && let Err(e) = registration.mark_shutting_down(timeout)
            {
                tracing::warn!("reporting the node as shutting down: {e}");
            }
        }
    }

    /// Stops every node, writing what is pending first (all within `timeout`, one
    /// after another), then what they share. Returns how many queued requests were left
    /// unwritten.
    pub fn shutdown(self, timeout: Duration) -> usize {
        let Fleet { agents, metrics_server, watches, connection, .. } = self;
        let deadline = Instant::now() + timeout;
        let left =
            agents.into_iter().map(|agent| agent.shutdown(deadline.saturating_duration_since(Instant::now()))).sum();
        drop(metrics_server);
        drop(watches);
        drop(connection);
        left
    }

    fn lock_groups(&self) -> std::sync::MutexGuard<'_, Vec<GroupState>> {
        // Each change is one assignment: a panic elsewhere leaves the list whole.
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The threads a set of swaps runs on.
fn swap_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from).clamp(1, SWAP_THREADS)
}

/// The pod watches of `names`' nodes, each feeding its pod manager (`pod_managers`, in
/// the same order): one of every pod routed by node, or one per node.
fn start_watches(
    connection: &Connection,
    names: &[String],
    pod_managers: &[Arc<PodManager>],
    scope: WatchScope,
) -> Vec<PodWatch> {
    let (client, server, runtime) = (connection.client(), connection.api_url(), connection.runtime());
    match scope {
        WatchScope::Shared => {
            let routes = PodRoutes::new();
            for (name, pod_manager) in names.iter().zip(pod_managers) {
                routes.add(name, Arc::clone(pod_manager));
            }
            vec![PodWatch::start_routed(client.clone(), server, Arc::new(routes), runtime)]
        }
        WatchScope::PerNode => names
            .iter()
            .zip(pod_managers)
            .map(|(name, pod_manager)| PodWatch::start(client.clone(), server, name, Arc::clone(pod_manager), runtime))
            .collect(),
    }
}

/// Group names are labels: not empty, not taken twice. (A group named
/// [`CANARY_GROUP`] may only be a canary's whole: see [`crate::Rollout::start`].)
fn check_groups(groups: &[FleetGroup]) -> Result<(), FleetError> {
    let mut seen = HashSet::new();
    for group in groups {
        let reason = if group.name.is_empty() {
            Some("a group needs a name")
        } else if !seen.insert(group.name.as_str()) {
            Some("two groups have this name")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(FleetError::GroupName { name: group.name.clone(), reason });
        }
    }
    Ok(())
}

/// The nodes of a fleet of `nodes` that make up a canary of `share` (above 0, below
/// 1): spread evenly over the node numbers (so over the groups, in proportion), at
/// least one, and never every node.
pub fn canary_nodes(nodes: usize, share: f64) -> Vec<usize> {
    if nodes < 2 || share.is_nan() {
        return Vec::new();
    }
    let count = ((nodes as f64 * share).ceil() as usize).clamp(1, nodes - 1);
    (0..count).map(|k| k * nodes / count).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canary_is_spread_over_the_fleet_and_never_the_whole_of_it() {
        assert_eq!(canary_nodes(10, 0.1), [0]);
        assert_eq!(canary_nodes(10, 0.3), [0, 3, 6]);
        assert_eq!(canary_nodes(1000, 0.1).len(), 100);
        assert_eq!(canary_nodes(1000, 0.1)[1], 10);
        assert_eq!(canary_nodes(3, 0.01), [0], "at least one node");
        assert_eq!(canary_nodes(3, 0.99), [0, 1], "one node left outside");
        assert!(canary_nodes(1, 0.5).is_empty(), "one node cannot hold a canary and the rest");
        assert!(canary_nodes(4, f64::NAN).is_empty());
        let many = canary_nodes(7, 0.5);
        assert!(many.windows(2).all(|w| w[0] < w[1]), "distinct and sorted: {many:?}");
    }
}
