//! How a simulation is asked for ([`SimulateConfig`], a [`PlannedSwap`], a
//! [`CanaryShare`], a fleet's [`NodeGroup`]s), the signals that steer it while it runs, where it stands
//! ([`Progress`]) and what stops it ([`SimulateError`]): one node's run and a fleet's
//! share them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::simulated_node::{SimulatedNodeError, SimulatedTarget};
use podstatus_agent::AgentConfig;
use podstatus_runtime::PluginImage;

/// A swap the run makes at a time of its own: the plugin is compiled before the run
/// starts, so a bad file is refused at once and the swap at its time costs only the
/// swap (compiling in the middle would stall the churn for seconds on a busy machine).
#[derive(Clone)]
pub struct PlannedSwap {
    /// The plugin to swap to.
    pub image: PluginImage,
    /// Its `logic` label (a plugin file's stem, [`crate::file_logic`]).
    pub logic: String,
    /// How far into the run.
    pub at: Duration,
}

impl std::fmt::Debug for PlannedSwap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedSwap")
            .field("contract", &self.image.contract().to_string())
            .field("logic", &self.logic)
            .field("at", &self.at)
            .finish()
    }
}

/// How a simulation runs.
#[derive(Clone, Debug)]
pub struct SimulateConfig {
    /// The agent under test.
    pub agent: AgentConfig<SimulatedTarget>,
    /// Pods alive at once.
    pub pods: usize,
    /// Static pods to write into a manifest folder (when the agent has none given).
    pub static_pods: usize,
    /// Lifecycle events per second over all pods.
    pub churn: f64,
    /// How long the churn lasts; `None` runs until a signal.
    pub duration: Option<Duration>,
    /// The generator's seed.
    pub seed: u64,
    /// Stop after this many whole pod lives (created, run, deleted), if sooner.
    pub cycles: Option<u64>,
    /// Swap to this plugin this far into the run.
    pub swap_at: Option<PlannedSwap>,
    /// The plugin a swap signal (SIGHUP) loads.
    pub swap_on_signal: Option<PathBuf>,
    /// How long the final flush and quiet sync may take.
    pub flush_timeout: Duration,
    /// How often each pod's last status is sent again, as the kubelet's pod workers
    /// resync every `--sync-frequency`; `None` never.
    pub resync: Option<Duration>,
    /// Virtual nodes in the process: above 1, a fleet ([`crate::fleet`]) of nodes named
    /// `NODE-0` .. `NODE-(N-1)`, the pods and churn shared out among them.
    pub nodes: usize,
    /// Create the first pods at this many a second over all nodes, instead of at the
    /// churn's rate.
    pub arrival_rate: Option<f64>,
    /// Roll a plugin out to a share of a fleet's nodes first, then to all or none.
    pub canary: Option<CanaryShare>,
    /// The name of the plugin the run starts with, for a fleet's `logic` metric label
    /// (`podstatus-v1`, a plugin file's stem).
    pub logic: String,
}

/// Nodes of a fleet that run one plugin: each node its own instance of `image`.
#[derive(Clone)]
pub struct NodeGroup {
    /// The group's name in the summary and its metrics' `group` label (`v2`, `canary`).
    pub name: String,
    /// How many nodes.
    pub nodes: usize,
    /// The plugin they run.
    pub image: PluginImage,
    /// The plugin's name in the metrics' `logic` label; empty: the run's
    /// ([`SimulateConfig::logic`]).
    pub logic: String,
    /// Annotations the pods of its nodes are created with (what a plugin may read
    /// them for is its own business: a test's adversary picks its attack so).
    pub pod_annotations: BTreeMap<String, String>,
}

impl NodeGroup {
    /// `nodes` nodes named `name`, running `image` (labelled as the run's plugin),
    /// their pods without annotations of the group's.
    pub fn new(name: &str, nodes: usize, image: PluginImage) -> Self {
        NodeGroup { name: name.to_owned(), nodes, image, logic: String::new(), pod_annotations: BTreeMap::new() }
    }
}

/// A canary rollout over a fleet split in two groups, `base` and `canary`.
#[derive(Clone, Debug)]
pub struct CanaryShare {
    /// The share of the nodes in the canary (above 0, below 1; at least one node, and
    /// one left outside).
    pub share: f64,
    /// How it runs (its group is `canary`).
    pub rollout: crate::rollout::CanaryConfig,
}

/// Flags the signal handlers set.
#[derive(Clone, Debug, Default)]
pub struct Signals {
    /// Stop taking new work, flush and finish (SIGINT, SIGTERM).
    pub stop: Arc<AtomicBool>,
    /// Cut the final flush short (a second SIGINT or SIGTERM): the run ends at once,
    /// its summary saying so.
    pub cut: Arc<AtomicBool>,
    /// Set by the run when its final flush starts (for what a signal handler says).
    pub flushing: Arc<AtomicBool>,
    /// Swap to the configured plugin now (SIGHUP).
    pub swap: Arc<AtomicBool>,
}

impl Signals {
    /// Whether a flush that starts now may go on, asked as it runs: until a signal
    /// comes during it (the first one, when the run ended by itself; when a signal
    /// stopped the run, the next one, [`Signals::cut`]).
    pub fn flush_may_go_on(&self) -> impl Fn() -> bool + Sync + '_ {
        self.flushing.store(true, Ordering::SeqCst);
        let stopped_before = self.stop.load(Ordering::SeqCst);
        move || !self.cut.load(Ordering::SeqCst) && (stopped_before || !self.stop.load(Ordering::SeqCst))
    }
}

/// What stops a simulation before it can report.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The agent did not start.
    #[error(transparent)]
    Agent(#[from] SimulatedNodeError),
    /// A canary rollout was asked for with fewer than two nodes.
    #[error("a canary rollout needs a fleet of two nodes or more (--nodes)")]
    CanaryNeedsAFleet,
    /// The canary's group is not among the fleet's.
    #[error("the canary group {0:?} is not one of the fleet's groups")]
    UnknownCanaryGroup(String),
    /// The plugin to roll out did not load.
    #[error("loading the canary's plugin: {0}")]
    CanaryPlugin(#[source] podstatus_runtime::LoadError),
    /// A fleet was asked for with no node in it.
    #[error("a fleet needs at least one node")]
    NoNodes,
    /// The fleet did not start.
    #[error(transparent)]
    Fleet(podstatus_agent::fleet::FleetError),
    /// A fleet node's driver thread could not start.
    #[error("starting a node's driver thread: {0}")]
    Spawn(#[source] std::io::Error),
    /// The manifest folder for the static pods could not be written.
    #[error("writing static pod manifests to {dir}: {source}")]
    Manifests {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Where a run stands, for a progress display (the `podstatus` command draws a bar).
#[derive(Clone, Debug)]
pub struct Progress {
    /// Time since the churn began.
    pub elapsed: Duration,
    /// How long the churn lasts, if it ends by itself.
    pub duration: Option<Duration>,
    /// Counts so far, one line.
    pub message: String,
    /// The API server's URL, once the node (or the fleet) reaches it: the caller says
    /// where to look (`kubectl --server URL`) while the run goes on.
    pub api_server: Option<String>,
}
