//! `podstatus simulate`: the main job. A node agent (the plugin behind the real wiring:
//! kube-rs client, HTTP API server, pod watch, static pods) runs while a simulated node
//! drives realistic pod lives through it; at the end, after a quiet sync, every pod's
//! status in the API server must equal the plugin's cache.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

use crate::agent::{AgentConfig, AgentError, NodeAgent};
use crate::check;
use crate::driver::{Driver, DriverConfig, DriverCounts};
use crate::kubelet_1_35::NewPaths;
use crate::owners::{self, KubeOwners, OwnerError, StoredPod, StoredPods};
use crate::summary::{self, Check, Summary, SwapSummary};
use podstatus_agent::metrics::{Metrics, OUTCOME_OK};
use podstatus_agent::{Outcome, TimedManager, VERB_PATCH_STATUS, VERB_UPDATE_STATUS};
use podstatus_backends::PodManager;
use podstatus_runtime::{PluginImage, PluginRuntime};

/// A swap the run makes at a time of its own: the plugin is compiled before the run
/// starts, so a bad file is refused at once and the swap at its time costs only the
/// swap (compiling in the middle would stall the churn for seconds on a busy machine).
#[derive(Clone)]
pub struct PlannedSwap {
    /// The plugin to swap to.
    pub image: PluginImage,
    /// Its `logic` label (a plugin file's stem, [`file_logic`]).
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
    pub agent: AgentConfig,
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
    /// Swap to the configured plugin now (SIGHUP).
    pub swap: Arc<AtomicBool>,
}

/// What stops a simulation before it can report.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The agent did not start.
    #[error(transparent)]
    Agent(#[from] AgentError),
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
    Fleet(podstatus_agent::FleetError),
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
}

/// Runs a simulation and reports what happened.
pub fn run(
    config: SimulateConfig,
    plugins: PluginRuntime,
    image: PluginImage,
    signals: &Signals,
) -> Result<Summary, SimulateError> {
    run_with_progress(config, plugins, image, signals, &mut |_| {})
}

/// [`run`], telling `progress` where the churn stands after every step of the driver.
pub fn run_with_progress(
    mut config: SimulateConfig,
    plugins: PluginRuntime,
    image: PluginImage,
    signals: &Signals,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Summary, SimulateError> {
    if config.canary.is_some() && config.nodes < 2 {
        return Err(SimulateError::CanaryNeedsAFleet);
    }
    if config.nodes > 1 {
        let groups = match &config.canary {
            Some(canary) => {
                let nodes = ((config.nodes as f64 * canary.share).ceil() as usize).clamp(1, config.nodes - 1);
                vec![
                    crate::fleet::NodeGroup::new("base", config.nodes - nodes, image.clone()),
                    crate::fleet::NodeGroup::new(&canary.rollout.group, nodes, image),
                ]
            }
            None => vec![crate::fleet::NodeGroup::new("all", config.nodes, image)],
        };
        return crate::fleet::run_fleet(config, plugins, groups, signals, progress);
    }
    let manifests = write_static_pods(&mut config)?;
    let started = Instant::now();
    let agent = NodeAgent::start(&config.agent, plugins, image)?;
    tracing::info!(took = ?started.elapsed(), api_server = agent.api_url(), "agent started");
    let owners = KubeOwners::new(agent.client().clone(), agent.runtime().clone());
    if let Err(e) = owners.ensure_namespace(podstatus_agent::SIMULATED_NAMESPACE) {
        tracing::warn!("creating the namespace {}: {e}", podstatus_agent::SIMULATED_NAMESPACE);
    }
    wait_for_mirrors(agent.pod_manager(), config.static_pods, Duration::from_secs(10));

    let driver_config = DriverConfig {
        pods: config.pods,
        churn: config.churn,
        node: config.agent.node.clone(),
        seed: config.seed,
        cycles: config.cycles,
        // What makes v4's paths run (generations, sidecars, resizes) only for a plugin
        // with the resize calls: every other run draws and reports as before.
        kubelet_1_35: agent.handle().contract().has_resize(),
        resync: config.resync,
        name_prefix: None,
        arrival_rate: config.arrival_rate,
        annotations: BTreeMap::new(),
    };
    let mut driver = Driver::new(driver_config, agent.pod_manager());
    let cpu_at_start = summary::CpuTimes::now();
    let busy_at_start = agent.handle().plugin_busy();
    let start = Instant::now();
    let until = config.duration.map_or(start + Duration::from_secs(86_400 * 365), |d| start + d);
    let mut swap = None;
    let mut swap_at = config.swap_at.clone();
    let node_side = agent.node_side();
    driver.run(&node_side, agent.pod_manager(), &owners, until, &signals.stop, |driver| {
        let elapsed = start.elapsed();
        if let Some(planned) = swap_at.as_ref().filter(|planned| elapsed >= planned.at) {
            swap = Some(swap_to_image(&agent, &planned.image, elapsed));
            tracing::info!(at = ?planned.at, "swap done");
            swap_at = None;
        }
        if signals.swap.swap(false, Ordering::SeqCst) {
            match &config.swap_on_signal {
                Some(path) => swap = Some(do_swap(&agent, path, elapsed)),
                None => tracing::warn!("swap signal ignored: no plugin file to swap to"),
            }
        }
        progress(&Progress {
            elapsed,
            duration: config.duration,
            message: format!(
                "{} versions, {} pods created, {} deleted, queue {}",
                driver.counts.versions,
                driver.counts.created,
                driver.counts.deleted,
                agent.handle().queue_len()
            ),
        });
    });
    let seconds = start.elapsed().as_secs_f64();
    let plugin_busy = agent.handle().plugin_busy().saturating_sub(busy_at_start);
    let statuses_written = statuses_written(agent.metrics());
    let cpu_steal_percent = cpu_at_start.zip(summary::CpuTimes::now()).and_then(|(a, b)| a.steal_percent_until(b));

    let quiet = Instant::now();
    quiet_sync(&agent, &node_side, &mut driver, config.flush_timeout);
    tracing::info!(took = ?quiet.elapsed(), stages = ?driver.stages(), "quiet sync done");
    // One list of the node's pods serves the check and the count by phase.
    let stored = owners.node_pods(&config.agent.node);
    let read = |namespace: &str, name: &str| match &stored {
        Ok(pods) => Ok(pods.get(&(namespace.to_owned(), name.to_owned())).map(StoredPod::to_pod)),
        Err(e) => Err(e.clone()),
    };
    let check = check::check(agent.handle(), agent.pod_manager(), &read);
    tracing::info!(compared = check.compared, differing = check.differing.len(), "checked");

    let observed = Observed {
        plugin: agent.handle().contract().to_string(),
        api_url: agent.api_url(),
        node: config.agent.node.clone(),
        metrics: agent.metrics(),
        client_refusals: agent.client_refusals(),
        counts: driver.counts.clone(),
        static_pods: driver.static_pods(),
        plugin_busy,
        seconds,
        statuses_written,
        new_paths: api_paths(driver.new_paths(), &stored),
        pods_by_phase: stored.as_ref().map(|pods| owners::phases(pods.values())).unwrap_or_default(),
        check,
        swap,
        cpu_steal_percent,
    };
    let summary = summarize(&config, observed);
    // As `podstatus agent` at its end: the node reported as shutting down.
    if let Some(registration) = agent.registration()
        && let Err(e) = registration.mark_shutting_down(Duration::from_secs(10))
    {
        tracing::warn!("reporting the node as shutting down: {e}");
    }
    let left = agent.shutdown(config.flush_timeout);
    tracing::info!("agent stopped");
    if left > 0 {
        tracing::warn!("{left} sync requests were left unwritten at shutdown");
    }
    drop(manifests);
    Ok(summary)
}

/// What a run observed, for its summary: one node's, or a fleet's added up.
pub(crate) struct Observed<'a> {
    /// The contract of the plugin that ran last.
    pub plugin: String,
    pub api_url: &'a str,
    pub node: String,
    /// The metrics the node (or every node of a fleet) counted into.
    pub metrics: &'a Metrics,
    pub client_refusals: BTreeMap<String, u64>,
    pub counts: DriverCounts,
    pub static_pods: usize,
    pub plugin_busy: Duration,
    pub seconds: f64,
    pub statuses_written: u64,
    /// The API server's pods at the end counted in.
    pub new_paths: Option<NewPaths>,
    /// The API server's pods at the end, counted by phase.
    pub pods_by_phase: BTreeMap<String, u64>,
    pub check: Check,
    pub swap: Option<SwapSummary>,
    pub cpu_steal_percent: Option<f64>,
}

/// A run's new paths with the API server's pods at its end counted in.
fn api_paths(paths: Option<NewPaths>, stored: &Result<StoredPods, OwnerError>) -> Option<NewPaths> {
    let mut paths = paths?;
    if let Ok(pods) = stored {
        let pods: Vec<Pod> = pods.values().map(StoredPod::to_pod).collect();
        paths.count_api_pods(&pods);
    }
    Some(paths)
}

/// The summary of a run of `config` that observed `observed`.
pub(crate) fn summarize(config: &SimulateConfig, observed: Observed<'_>) -> Summary {
    let Observed { metrics, counts, new_paths, pods_by_phase, .. } = observed;
    let mut api_calls = BTreeMap::<String, BTreeMap<String, u64>>::new();
    for (verb, outcome, count) in metrics.api_call_counts() {
        *api_calls.entry(verb).or_default().entry(outcome).or_default() += count;
    }
    // Calls the client refused before sending (throttled, circuit open) cost the API
    // server nothing; timed-out ones were sent and count. The two counts are read at
    // different moments while the scheduler runs: saturate rather than underflow.
    let unsent: u64 = [Outcome::Throttled, Outcome::CircuitOpen]
        .iter()
        .filter_map(|o| observed.client_refusals.get(o.as_str()))
        .sum();
    let calls = api_calls.values().flat_map(|o| o.values()).sum::<u64>().saturating_sub(unsent);
    let handed: u64 = counts.updates.values().sum();
    let seconds = observed.seconds;
    Summary {
        plugin: observed.plugin,
        api_server: observed.api_url.to_owned(),
        node: observed.node,
        seed: config.seed,
        pods: config.pods,
        static_pods: observed.static_pods,
        pods_created: counts.created,
        pods_deleted: counts.deleted,
        seconds,
        api_calls_per_version: if counts.versions == 0 { 0.0 } else { calls as f64 / counts.versions as f64 },
        updates: counts.updates,
        versions: counts.versions,
        unchanged: counts.unchanged,
        resyncs: counts.resyncs,
        queue_full: counts.queue_full,
        api_calls,
        client_refusals: observed.client_refusals,
        propagation_ms: metrics.propagation().snapshot().into(),
        caller_latency_ms: metrics.caller_latency().snapshot().into(),
        statuses_written: observed.statuses_written,
        plugin_busy_us_per_update: per_update_us(observed.plugin_busy, handed),
        new_paths,
        statuses_written_per_second: if seconds > 0.0 { observed.statuses_written as f64 / seconds } else { 0.0 },
        pods_by_phase,
        faults: counts.faults,
        swap: observed.swap,
        check: observed.check,
        peak_memory_mib: summary::peak_rss_mib(),
        cpu_steal_percent: observed.cpu_steal_percent,
        fleet: None,
        rollout: None,
    }
}

/// After the churn: stop the resyncs, drop orphans, let the queue drain, then batch-sync until nothing is
/// left to write (the rate limit may refuse some writes of a batch: the next one
/// takes them), all within `timeout`.
pub(crate) fn quiet_sync(
    agent: &podstatus_agent::NodeAgent,
    node_side: &TimedManager,
    driver: &mut Driver,
    timeout: Duration,
) {
    driver.stop_resyncs();
    driver.housekeeping(node_side, agent.pod_manager());
    agent.flush(timeout);
}

/// The plugin's held time per update handed to it, in microseconds (0 without updates).
pub(crate) fn per_update_us(busy: Duration, updates: u64) -> f64 {
    if updates == 0 { 0.0 } else { busy.as_secs_f64() * 1e6 / updates as f64 }
}

/// Status writes (updates and patches) the API server accepted so far.
pub(crate) fn statuses_written(metrics: &Metrics) -> u64 {
    [VERB_UPDATE_STATUS, VERB_PATCH_STATUS].iter().map(|verb| metrics.api_calls(verb, OUTCOME_OK)).sum()
}

pub(crate) fn do_swap(agent: &podstatus_agent::NodeAgent, path: &std::path::Path, at: Duration) -> SwapSummary {
    swap_summary(agent.swap_to_file(path), &path.display(), at)
}

/// Swaps `agent` to a plugin compiled before (a [`PlannedSwap`]), `at` into the run.
pub(crate) fn swap_to_image(agent: &podstatus_agent::NodeAgent, image: &PluginImage, at: Duration) -> SwapSummary {
    swap_summary(agent.swap_to_image(image), &image.contract(), at)
}

/// What a swap to `to` (a file, a contract) that ended in `swapped` tells the summary.
fn swap_summary(
    swapped: Result<podstatus_runtime::SwapReport, podstatus_agent::AgentError>,
    to: &dyn std::fmt::Display,
    at: Duration,
) -> SwapSummary {
    let at_seconds = at.as_secs_f64();
    match swapped {
        Ok(report) => SwapSummary {
            at_seconds,
            from: report.from.to_string(),
            to: report.to.to_string(),
            pause_ms: report.pause.as_secs_f64() * 1000.0,
            total_ms: report.total.as_secs_f64() * 1000.0,
            error: None,
        },
        Err(e) => {
            tracing::error!("swap to {to} failed: {e}");
            SwapSummary { at_seconds, error: Some(e.to_string()), ..SwapSummary::default() }
        }
    }
}

/// The `logic` label of the plugin in `path`: the file's stem (`podstatus-v3` for
/// `target/guest/podstatus-v3.wasm`).
pub fn file_logic(path: &std::path::Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}

/// Waits until each static pod has its mirror pod (created by the agent, seen through
/// the watch), so static pods' statuses have somewhere to go from the start.
pub(crate) fn wait_for_mirrors(pod_manager: &PodManager, static_pods: usize, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        // Static UID -> mirror UID, "" while a static pod has none yet.
        let (static_to_mirror, _) = pod_manager.get_uid_translations();
        if static_to_mirror.len() >= static_pods && static_to_mirror.values().all(|mirror| !mirror.is_empty()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    tracing::warn!("static pods or their mirror pods did not all appear within {timeout:?}");
}

/// Writes `config.static_pods` manifests to a folder of the run's own, and points the
/// agent at it, when no folder was given; the folder goes when the guard drops.
pub(crate) fn write_static_pods(config: &mut SimulateConfig) -> Result<Option<TempDir>, SimulateError> {
    if config.agent.manifest_dir.is_some() || config.static_pods == 0 {
        return Ok(None);
    }
    // One folder per run: runs in one process (an embedder's, tests) must not share
    // it, or the first to finish removes the others' static pods.
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("podstatus-simulate-{}-{run}", std::process::id()));
    write_manifests(&dir, config.static_pods)
        .map_err(|source| SimulateError::Manifests { dir: dir.clone(), source })?;
    config.agent.manifest_dir = Some(dir.clone());
    Ok(Some(TempDir(dir)))
}

/// Static pod manifests, as a user would drop them into the kubelet's folder.
fn write_manifests(dir: &std::path::Path, count: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for i in 0..count {
        let manifest = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": format!("static-{i}"), "namespace": "kube-system"},
            "spec": {
                "restartPolicy": "Always",
                "containers": [{"name": "app", "image": "registry.example/app:1.0"}]
            }
        });
        std::fs::write(dir.join(format!("static-{i}.json")), serde_json::to_vec_pretty(&manifest)?)?;
    }
    Ok(())
}

/// A folder removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
