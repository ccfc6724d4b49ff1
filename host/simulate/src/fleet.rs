//! `podstatus simulate --nodes N`: a fleet of N virtual nodes in one process (issue 28).
//!
//! Each node is a whole [`podstatus_agent::NodeAgent`] of its own: its plugin instance
//! (own state, limits and supervisor), its sync queue and scheduler, its reach guard,
//! its client budget (QPS and burst, as a kubelet has one per node), its Node and Lease.
//! What the nodes share is what a process needs once: the engine and the compiled
//! component (one [`PluginImage`], instantiated per node), one [`Connection`] (the HTTP
//! clients and their pool, the I/O runtime, the metrics every node counts into, a
//! [`CallPool`] of threads for every plugin's API calls) and one
//! pod watch for the fleet, fanned out by `spec.nodeName` ([`PodRoutes`]), as a shared
//! informer serves its consumers.
//!
//! The simulated side is a [`Driver`] per node on a thread of its own, with the node's
//! share of the pods and the churn and its own seed; pod names carry the node's index
//! (`n3-web-0001-0`), as the nodes' pods share the namespace. At the end every node's
//! cache is checked against the API server as one node's is, from one LIST.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};

use crate::agent::{self, AgentError};
use crate::check;
use crate::driver::{Driver, DriverConfig, DriverCounts, LiveCounts};
use crate::driver_pool::{self, PooledNode};
use crate::owners::KubeOwners;
use crate::rollout::{Fleet, Rollout};
use crate::simulation::{self, Observed, Progress, Signals, SimulateConfig, SimulateError};
use crate::summary::{self, Check, FleetFigures, GroupFigures, Summary, SwapSummary};
use podstatus_agent::{Connection, PodRoutes, PodWatch};
use podstatus_backends::{InjectedFaults, PodManager};
use podstatus_runtime::{CallPool, PluginImage, PluginRuntime};

/// How long the fleet's first list of pods may take.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// Threads making the plugins' API calls for the whole fleet (a node alone has up to
/// 64 of its own): each node keeps its own limit of calls in flight within them.
const CALL_THREADS: usize = 32;
/// How often the main thread looks at the drivers (progress, the swap).
const TICK: Duration = Duration::from_millis(100);

/// Nodes of a fleet that run one plugin: each node its own instance of `image`.
#[derive(Clone)]
pub struct NodeGroup {
    /// The group's name in the summary (`v2`, `canary`).
    pub name: String,
    /// How many nodes.
    pub nodes: usize,
    /// The plugin they run.
    pub image: PluginImage,
    /// Annotations the pods of its nodes are created with (what a plugin may read
    /// them for is its own business: a test's adversary picks its attack so).
    pub pod_annotations: BTreeMap<String, String>,
}

impl NodeGroup {
    /// `nodes` nodes named `name`, running `image`, their pods without annotations of
    /// the group's.
    pub fn new(name: &str, nodes: usize, image: PluginImage) -> Self {
        NodeGroup { name: name.to_owned(), nodes, image, pod_annotations: BTreeMap::new() }
    }
}

/// One node's driver after the churn, and the plugin time it held.
struct NodeRun {
    driver: Driver,
    plugin_busy: Duration,
}

/// Runs `config` as a fleet of `groups`' nodes, numbered in the groups' order (the
/// nodes of the first group first); `config.nodes` is not read. See the module
/// documentation.
pub fn run_fleet(
    mut config: SimulateConfig,
    plugins: PluginRuntime,
    groups: Vec<NodeGroup>,
    signals: &Signals,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Summary, SimulateError> {
    // Node i's group.
    let group_of: Vec<usize> =
        groups.iter().enumerate().flat_map(|(g, group)| std::iter::repeat_n(g, group.nodes)).collect();
    if group_of.is_empty() {
        return Err(SimulateError::NoNodes);
    }
    config.nodes = group_of.len();
    let manifests = simulation::write_static_pods(&mut config)?;
    // The fleet's own server admits what the fleet opens at once (past its cap it closes
    // idle connections, which the clients see as failed requests): a request in flight
    // per driver, per Lease and per Node report, and the call threads'.
    let connections = podstatus_apiserver::ServeOptions::default().max_connections + 3 * config.nodes + CALL_THREADS;
    let (embedded, target) = agent::resolve(&config.agent, connections)?;
    let pool = CallPool::new(CALL_THREADS).map_err(|e| AgentError::from(podstatus_agent::AgentError::Runtime(e)))?;
    let connection = Arc::new(Connection::open(&target).map_err(AgentError::from)?.with_call_pool(pool));
    let names: Vec<String> = (0..config.nodes).map(|i| format!("{}-{i}", config.agent.node)).collect();
    let routes = PodRoutes::new();
    let pod_managers: Vec<Arc<PodManager>> = names
        .iter()
        .map(|name| {
            let pod_manager = Arc::new(PodManager::new());
            routes.add(name, Arc::clone(&pod_manager));
            pod_manager
        })
        .collect();
    let watch = PodWatch::start_routed(connection.client().clone(), Arc::new(routes), connection.runtime());
    if !watch.wait_synced(SYNC_TIMEOUT) {
        return Err(AgentError::Agent(podstatus_agent::AgentError::NotSynced(SYNC_TIMEOUT)).into());
    }

    let memory_before = summary::rss_mib();
    let started = Instant::now();
    let mut agents = Vec::with_capacity(names.len());
    for (i, (name, pod_manager)) in names.iter().zip(&pod_managers).enumerate() {
        let mut node = config.agent.agent.with_target(());
        node.node = name.clone();
        if let Some(registration) = node.register_node.as_mut() {
            registration.name = name.clone();
            // Node i of n renews i/n of an interval after node 0 (see heartbeat.rs).
            registration.heartbeat_phase = i as f64 / names.len() as f64;
        }
        // One metrics endpoint serves the fleet: every node counts into its registry.
        if i > 0 {
            node.metrics_addr = None;
        }
        let faults = config.agent.injected_faults.map(|f| InjectedFaults { seed: f.seed.wrapping_add(i as u64), ..f });
        let layer = agent::fault_layer(faults);
        let node_agent = podstatus_agent::NodeAgent::start_on(
            Arc::clone(&connection),
            Arc::clone(pod_manager),
            &node,
            plugins.clone(),
            groups[group_of[i]].image.clone(),
            layer,
        )
        .map_err(AgentError::from)?;
        agents.push(node_agent);
        progress(&Progress {
            elapsed: started.elapsed(),
            duration: None,
            message: format!("{} of {} nodes started", i + 1, names.len()),
        });
    }
    let start_seconds = started.elapsed().as_secs_f64();
    let idle_memory_mib_per_node =
        memory_before.zip(summary::rss_mib()).map(|(before, after)| (after - before).max(0.0) / names.len() as f64);
    tracing::info!(nodes = names.len(), took = ?started.elapsed(), "fleet started");
    for pod_manager in &pod_managers {
        simulation::wait_for_mirrors(pod_manager, config.static_pods, Duration::from_secs(10));
    }
    let live: Vec<Arc<LiveCounts>> = (0..names.len()).map(|_| Arc::default()).collect();
    let mut rollout = match config.canary.clone() {
        Some(canary) => {
            let rollout = canary.rollout;
            let group = groups
                .iter()
                .position(|g| g.name == rollout.group)
                .ok_or_else(|| SimulateError::UnknownCanaryGroup(rollout.group.clone()))?;
            let image = plugins.load_file(&rollout.plugin).map_err(SimulateError::CanaryPlugin)?;
            let (canary, rest): (Vec<usize>, Vec<usize>) = (0..names.len()).partition(|&i| group_of[i] == group);
            Some(Rollout::new(rollout, image, canary, rest))
        }
        None => None,
    };
    let group_images: Vec<&PluginImage> = group_of.iter().map(|&g| &groups[g].image).collect();

    let owners = KubeOwners::new(connection.client().clone(), connection.runtime().clone());
    let cpu_at_start = summary::CpuTimes::now();
    let start = Instant::now();
    let until = config.duration.map_or(start + Duration::from_secs(86_400 * 365), |d| start + d);
    let mut swap = None;
    // The drivers' stop: the signal's, or the fleet's own when a driver cannot start.
    let stop = AtomicBool::new(false);
    let busy_at_start: Vec<Duration> = agents.iter().map(|agent| agent.handle().plugin_busy()).collect();
    let nodes: Vec<PooledNode<'_>> = agents
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let driver_config = DriverConfig {
                pods: share(config.pods, names.len(), i),
                churn: config.churn / names.len() as f64,
                node: names[i].clone(),
                seed: config.seed.wrapping_add(i as u64),
                cycles: config.cycles.map(|cycles| cycles.div_ceil(names.len() as u64)),
                // As one node's run: a 1.35 kubelet beside a plugin with the resize calls.
                kubelet_1_35: agent.handle().contract().has_resize(),
                resync: config.resync,
                name_prefix: Some(format!("n{i}")),
                arrival_rate: config.arrival_rate.map(|rate| rate / names.len() as f64),
                annotations: groups[group_of[i]].pod_annotations.clone(),
                live: Some(Arc::clone(&live[i])),
            };
            PooledNode {
                driver: Driver::new(driver_config, agent.pod_manager()),
                side: agent.node_side(),
                pods: agent.pod_manager(),
            }
        })
        .collect();
    let runs: Result<Vec<NodeRun>, SimulateError> = std::thread::scope(|scope| {
        let (owners, stop) = (&owners, &stop);
        let drivers = std::thread::Builder::new()
            .name("podstatus-node-pool".into())
            .spawn_scoped(scope, move || driver_pool::run(nodes, owners, until, stop))
            .map_err(SimulateError::Spawn)?;
        let mut swap_at = config.swap_at.clone();
        while !drivers.is_finished() {
            std::thread::sleep(TICK);
            if signals.stop.load(Ordering::SeqCst) {
                stop.store(true, Ordering::SeqCst);
            }
            let elapsed = start.elapsed();
            if let Some(rollout) = rollout.as_mut() {
                let fleet = Fleet { agents: &agents, live: &live, group_images: group_images.clone() };
                rollout.tick(elapsed, &fleet);
            }
            if let Some((path, _)) = swap_at.as_ref().filter(|(_, at)| elapsed >= *at) {
                swap = Some(swap_all(&agents, path, elapsed));
                swap_at = None;
            }
            let queued: usize = agents.iter().map(|a| a.handle().queue_len()).sum();
            progress(&Progress {
                elapsed,
                duration: config.duration,
                message: format!("{} nodes, queue {queued}", names.len()),
            });
        }
        // A driver that panicked is a bug of the host: its panic goes on up.
        let nodes =
            drivers.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)).map_err(SimulateError::Spawn)?;
        Ok(nodes
            .into_iter()
            .zip(agents.iter().zip(&busy_at_start))
            .map(|(node, (agent, busy))| NodeRun {
                driver: node.driver,
                plugin_busy: agent.handle().plugin_busy().saturating_sub(*busy),
            })
            .collect())
    });
    let mut runs = runs?;
    let seconds = start.elapsed().as_secs_f64();
    let statuses_written = simulation::statuses_written(connection.metrics());
    let cpu_steal_percent = cpu_at_start.zip(summary::CpuTimes::now()).and_then(|(a, b)| a.steal_percent_until(b));
    let nodes_ready = ready_nodes(&connection, &names);

    let quiet = Instant::now();
    std::thread::scope(|scope| {
        for (agent, run) in agents.iter().zip(runs.iter_mut()) {
            let timeout = config.flush_timeout;
            scope.spawn(move || simulation::quiet_sync(agent, &agent.node_side(), &mut run.driver, timeout));
        }
    });
    tracing::info!(took = ?quiet.elapsed(), "quiet sync done");

    let ours: HashSet<&str> = names.iter().map(String::as_str).collect();
    let ours = |pod: &Pod| pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| ours.contains(n));
    let stored = owners.stored_pods(None, ours);
    let read = |namespace: &str, name: &str| match &stored {
        Ok(pods) => Ok(pods.get(&(namespace.to_owned(), name.to_owned())).cloned()),
        Err(e) => Err(e.clone()),
    };
    let mut check = Check::default();
    let mut counts = DriverCounts::default();
    let mut new_paths = None;
    let (mut plugin_busy, mut static_pods) = (Duration::ZERO, 0);
    let mut client_refusals = BTreeMap::<String, u64>::new();
    let (mut lease_renewals, mut leases_late) = (0, 0);
    let mut by_group: Vec<GroupFigures> = groups
        .iter()
        .map(|group| GroupFigures {
            name: group.name.clone(),
            plugin: group.image.contract().to_string(),
            nodes: group.nodes,
            ..GroupFigures::default()
        })
        .collect();
    let mut group_busy = vec![(Duration::ZERO, 0u64); groups.len()];
    for (i, (agent, run)) in agents.iter().zip(&runs).enumerate() {
        let node_check = check::check(agent.handle(), agent.pod_manager(), &read);
        let group = &mut by_group[group_of[i]];
        group.add(&run.driver.counts, &node_check);
        group.plugin = agent.handle().contract().to_string();
        let busy = &mut group_busy[group_of[i]];
        busy.0 += run.plugin_busy;
        busy.1 += run.driver.counts.updates.values().sum::<u64>();
        check.compared += node_check.compared;
        check.differing.extend(node_check.differing);
        counts.add(&run.driver.counts);
        if let Some(paths) = run.driver.new_paths() {
            new_paths.get_or_insert_with(crate::NewPaths::default).add(&paths);
        }
        plugin_busy += run.plugin_busy;
        static_pods += run.driver.static_pods();
        for (outcome, n) in agent.client_refusals() {
            *client_refusals.entry(outcome).or_default() += n;
        }
        if let Some(registration) = agent.registration() {
            lease_renewals += registration.lease_renewals();
            leases_late += registration.late_renewals();
        }
    }
    tracing::info!(compared = check.compared, differing = check.differing.len(), "checked");
    let pods_created = counts.created;
    let observed = Observed {
        plugin: agents.last().map(|a| a.handle().contract().to_string()).unwrap_or_default(),
        api_url: connection.api_url(),
        node: format!("{} .. {}", names[0], names[names.len() - 1]),
        metrics: connection.metrics(),
        client_refusals,
        counts,
        static_pods,
        plugin_busy,
        seconds,
        statuses_written,
        new_paths,
        stored: &stored,
        check,
        swap,
        cpu_steal_percent,
    };
    let mut summary = simulation::summarize(&config, observed);
    summary.rollout = rollout.map(Rollout::summary);
    summary.fleet = Some(FleetFigures {
        nodes: names.len(),
        nodes_ready,
        lease_renewals,
        leases_late,
        start_seconds,
        idle_memory_mib_per_node,
        pods_created_per_second: if seconds > 0.0 { pods_created as f64 / seconds } else { 0.0 },
        groups: by_group
            .into_iter()
            .zip(group_busy)
            .map(|(group, (busy, updates))| GroupFigures {
                plugin_busy_us_per_update: simulation::per_update_us(busy, updates),
                ..group
            })
            .collect(),
    });

    for agent in &agents {
        if let Some(registration) = agent.registration()
            && let Err(e) = registration.mark_shutting_down(Duration::from_secs(10))
        {
            tracing::warn!("reporting the node as shutting down: {e}");
        }
    }
    let left: usize = agents.into_iter().map(|agent| agent.shutdown(config.flush_timeout)).sum();
    if left > 0 {
        tracing::warn!("{left} sync requests were left unwritten at shutdown");
    }
    drop(watch);
    drop(connection);
    drop(embedded);
    drop(manifests);
    Ok(summary)
}

/// Node `i`'s share of `total` over `nodes`: the remainder goes to the first nodes.
fn share(total: usize, nodes: usize, i: usize) -> usize {
    total / nodes + usize::from(i < total % nodes)
}

/// Swaps every node's plugin for the one in `path`, one node after another (a rollout
/// of the whole fleet): the first failure's summary if one fails, else the longest
/// pause and the whole rollout's time.
fn swap_all(agents: &[podstatus_agent::NodeAgent], path: &std::path::Path, at: Duration) -> SwapSummary {
    let began = Instant::now();
    let mut rollout = SwapSummary::default();
    for agent in agents {
        let swap = simulation::do_swap(agent, path, at);
        if swap.error.is_some() {
            return swap;
        }
        rollout = SwapSummary { pause_ms: rollout.pause_ms.max(swap.pause_ms), ..swap };
    }
    SwapSummary { total_ms: began.elapsed().as_secs_f64() * 1000.0, ..rollout }
}

/// How many of the fleet's Nodes report Ready now (0 when they cannot be read).
fn ready_nodes(connection: &Connection, names: &[String]) -> usize {
    let nodes: Api<Node> = Api::all(connection.client().clone());
    let listed = connection
        .runtime()
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), nodes.list(&ListParams::default())).await });
    let ours: HashSet<&str> = names.iter().map(String::as_str).collect();
    match listed {
        Ok(Ok(list)) => list
            .items
            .iter()
            .filter(|node| node.metadata.name.as_deref().is_some_and(|n| ours.contains(n)))
            .filter(|node| {
                node.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count(),
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

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn pods_are_shared_out_with_the_remainder_first() {
        let shares: Vec<usize> = (0..4).map(|i| share(10, 4, i)).collect();
        assert_eq!(shares, [3, 3, 2, 2]);
        assert_eq!((0..3).map(|i| share(2, 3, i)).sum::<usize>(), 2, "fewer pods than nodes");
    }
}
