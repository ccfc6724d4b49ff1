//! `podstatus simulate --nodes N`: a fleet of N virtual nodes in one process (issue 28),
//! on [`podstatus_agent::Fleet`] (what `podstatus fleet` runs too): each node a whole
//! node agent of its own (plugin instance, queue, guard, client budget, Node and
//! Lease), the nodes sharing the engine and compiled components, one connection with
//! its call pool, and one pod watch fanned out by `spec.nodeName`.
//!
//! The simulated side is a [`Driver`] per node, the drivers run on a few threads
//! ([`crate::driver_pool`]), each with the node's share of the pods and the churn and
//! its own seed; pod names carry the node's index
//! (`n3-web-0001-0`), as the nodes' pods share the namespace. At the end every node's
//! cache is checked against the API server as one node's is, from one list read page by
//! page ([`crate::fleet_check`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::config::NodeGroup;
use crate::config::{PlannedSwap, Progress, Signals, SimulateConfig, SimulateError};
use crate::driver::{Driver, DriverConfig, DriverCounts};
use crate::driver_pool::{self, PooledNode};
use crate::fleet_tally::{FleetTally, NodeRun};
use crate::memory_account::{self, MemoryAccount, Parts};
use crate::observed::{Observed, statuses_written, summarize};
use crate::owners::KubeOwners;
use crate::rollout::SimulatedRollout;
use crate::simulated_node;
use crate::static_manifests::{wait_for_mirrors, write_static_pods};
use crate::summary::{self, FleetFigures, Summary, SwapSummary};
use crate::swaps::{file_logic, swap_to_image};
use podstatus_agent::fleet::{FleetGroup, FleetSpec, StartProgress};
use podstatus_agent::node::{Flushed, WatchScope};
use podstatus_agent::{Fleet, NodeAgent};
use podstatus_backends::{ApiServer, InjectedFaults};
use podstatus_runtime::PluginRuntime;

/// How often the main thread looks at the drivers (progress, the swap, the rollout).
const TICK: Duration = Duration::from_millis(100);

/// A fleet started for a run, with what its start cost and what it runs against.
struct StartedFleet {
    fleet: Fleet,
    /// The embedded API server, when the run started one: stopped after the fleet.
    embedded: Option<podstatus_apiserver::EmbeddedApiServer>,
    start_seconds: f64,
    idle_memory_mib_per_node: Option<f64>,
    /// The parts' bytes and the resident memory once the nodes had started.
    memory_at_start: (Parts<u64>, Option<u64>),
}

/// What the churn left: each node's run, and the swap's summary if one was made.
struct Churned {
    runs: Vec<NodeRun>,
    swap: Option<SwapSummary>,
}

/// Runs `config` as a fleet of `groups`' nodes, numbered in the groups' order (the
/// nodes of the first group first); `config.nodes` is not read. See the module
/// documentation. The steps: start the fleet, plan its canary, churn until the end,
/// sync quietly, then check and add up every node.
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
    let manifests = write_static_pods(&mut config)?;
    let StartedFleet { fleet, embedded, start_seconds, idle_memory_mib_per_node, memory_at_start } =
        start_fleet(&config, &plugins, &groups, progress)?;
    let names = fleet.names().to_vec();
    let agents = fleet.agents();
    for agent in agents {
        wait_for_mirrors(agent.pod_manager(), config.static_pods, Duration::from_secs(10));
    }
    let mut rollout = canary_rollout(&config, &plugins, &groups, &group_of)?;
    let connection = fleet.connection();

    let owners = KubeOwners::new(connection.client().clone(), connection.runtime().clone());

    if let Err(e) = owners.ensure_namespace(podstatus_agent::node::SIMULATED_NAMESPACE) {
        tracing::warn!("creating the namespace {}: {e}", podstatus_agent::node::SIMULATED_NAMESPACE);
    }
    let cpu_at_start = summary::CpuTimes::now();
    let start = Instant::now();
    let run = Run { config: &config, groups: &groups, group_of: &group_of, fleet: &fleet, start };
    let Churned { mut runs, swap } = run.churn(&owners, rollout.as_mut(), signals, progress)?;
    let seconds = start.elapsed().as_secs_f64();
    let drivers: Vec<&Driver> = runs.iter().map(|run| &run.driver).collect();
    let memory_at_end = memory_account::count(embedded.as_ref(), agents, &drivers);
    let pods_held: usize = agents.iter().map(|agent| agent.pod_manager().len()).sum();
    let interrupted = crate::ending::interrupted(&config, signals);
    let statuses_written = statuses_written(connection.metrics());
    let cpu_steal_percent = cpu_at_start.zip(summary::CpuTimes::now()).and_then(|(a, b)| a.steal_percent_until(b));
    let nodes_ready = fleet.ready_nodes();

    // --flush-timeout is a hard limit on what follows, as for one node.
    let quiet = Instant::now();
    let deadline = quiet + config.flush_timeout;
    progress(&Progress {
        elapsed: start.elapsed(),
        duration: config.duration,
        message: "flushing".into(),
        api_server: None,
    });
    let flush = quiet_sync(agents, &mut runs, deadline, &signals.flush_may_go_on());
    tracing::info!(took = ?quiet.elapsed(), %flush, "quiet sync done");
    let deadline = crate::ending::after_flush(flush, deadline);

    let mut tally = FleetTally::of(&owners, &fleet, &groups, &group_of, &runs);
    tracing::info!(compared = tally.check.compared, differing = tally.check.differing.len(), "checked");
    let (first_pods_seconds, first_rate) = first_pods(&tally.counts, config.pods, start, seconds);
    let observed = Observed {
        plugin: agents.last().map(|a| a.handle().contract().to_string()).unwrap_or_default(),
        api_url: connection.api_url(),
        node: format!("{} .. {}", names[0], names[names.len() - 1]),
        metrics: connection.metrics(),
        client_refusals: std::mem::take(&mut tally.client_refusals),
        counts: std::mem::take(&mut tally.counts),
        static_pods: tally.static_pods,
        plugin_busy: tally.plugin_busy,
        seconds,
        statuses_written,
        new_paths: tally.new_paths.take(),
        pods_by_phase: std::mem::take(&mut tally.pods_by_phase),
        check: std::mem::take(&mut tally.check),
        swap,
        cpu_steal_percent,
        ended: crate::summary::Ended { interrupted, flush },
    };
    let mut summary = summarize(&config, observed);
    summary.rollout = rollout.map(|rollout| rollout.summary(&fleet));
    let (parts_at_start, rss_at_start) = memory_at_start;
    summary.memory = Some(MemoryAccount::new(
        parts_at_start,
        rss_at_start,
        memory_at_end,
        pods_held as u64,
        summary.peak_memory_mib.map(mib_to_bytes),
    ));
    summary.fleet = Some(FleetFigures {
        nodes: names.len(),
        nodes_ready,
        lease_renewals: tally.lease_renewals,
        leases_late: tally.leases_late,
        start_seconds,
        idle_memory_mib_per_node,
        pods_created_per_second: first_rate,
        first_pods_seconds,
        groups: tally.group_figures(&fleet),
    });

    fleet.mark_shutting_down(crate::ending::mark_timeout(deadline));
    let left = fleet.shutdown(crate::ending::time_left(deadline));
    if left > 0 {
        tracing::warn!("{left} sync requests were left unwritten at shutdown");
    }
    drop(embedded);
    drop(manifests);
    Ok(summary)
}

/// Starts the fleet of `groups` against `config`'s target (the embedded server first,
/// when that is it, admitting the connections the fleet opens), telling `progress` how
/// many nodes have started; measures the start from the connection on, and the memory
/// the idle nodes took.
fn start_fleet(
    config: &SimulateConfig,
    plugins: &PluginRuntime,
    groups: &[NodeGroup],
    progress: &mut dyn FnMut(&Progress),
) -> Result<StartedFleet, SimulateError> {
    let connections = podstatus_apiserver::ServeOptions::default().max_connections
        + Fleet::connections(config.nodes, WatchScope::Shared);
    let (embedded, target) = simulated_node::resolve(&config.agent.target, connections)?;
    // Known before the nodes start (they may take a while): said with their progress.
    let url = match &target {
        podstatus_agent::Target::Url(url) => Some(url.clone()),
        podstatus_agent::Target::Kubeconfig { .. } => None,
    };
    let spec = FleetSpec {
        groups: groups
            .iter()
            .map(|group| {
                let logic = if group.logic.is_empty() { &config.logic } else { &group.logic };
                FleetGroup::new(&group.name, group.nodes, group.image.clone(), logic)
            })
            .collect(),
        per_node_labels: false,
        numbers: None,
        watch: WatchScope::Shared,
    };
    let injected = config.agent.target.injected_faults;
    let layer = move |i: usize, api_server: Arc<dyn ApiServer>| {
        let faults = injected.map(|f| InjectedFaults { seed: f.seed.wrapping_add(i as u64), ..f });
        simulated_node::fault_layer(faults)(api_server)
    };
    let mut memory_before = None;
    let mut started = Instant::now();
    let fleet = Fleet::start(&target, &config.agent, spec, plugins, &layer, &mut |step| match step {
        StartProgress::Connected => {
            memory_before = summary::rss_mib();
            started = Instant::now();
        }
        StartProgress::NodeStarted { started: done, total } => progress(&Progress {
            elapsed: started.elapsed(),
            duration: None,
            message: format!("{done} of {total} nodes started"),
            api_server: url.clone(),
        }),
    })
    .map_err(SimulateError::Fleet)?;
    let start_seconds = started.elapsed().as_secs_f64();
    let nodes = fleet.names().len();
    let rss_at_start = summary::rss_mib();
    let idle_memory_mib_per_node =
        memory_before.zip(rss_at_start).map(|(before, after)| (after - before).max(0.0) / nodes as f64);
    let memory_at_start =
        (memory_account::count(embedded.as_ref(), fleet.agents(), &[]), rss_at_start.map(mib_to_bytes));
    Ok(StartedFleet { fleet, embedded, start_seconds, idle_memory_mib_per_node, memory_at_start })
}

/// The canary rollout `config` asks for, over the nodes of its group (its plugin
/// loaded now), if it asks for one.
fn canary_rollout(
    config: &SimulateConfig,
    plugins: &PluginRuntime,
    groups: &[NodeGroup],
    group_of: &[usize],
) -> Result<Option<SimulatedRollout>, SimulateError> {
    let Some(canary) = config.canary.clone() else { return Ok(None) };
    let rollout = canary.rollout;
    let group = groups
        .iter()
        .position(|g| g.name == rollout.group)
        .ok_or_else(|| SimulateError::UnknownCanaryGroup(rollout.group.clone()))?;
    let image = plugins.load_file(&rollout.plugin).map_err(SimulateError::CanaryPlugin)?;
    let logic = file_logic(&rollout.plugin);
    let canary: Vec<usize> = (0..group_of.len()).filter(|&i| group_of[i] == group).collect();
    Ok(Some(SimulatedRollout::new(rollout, image, logic, canary)))
}

/// A fleet's run as the churn sees it: the run's settings, its nodes and their
/// groups, and when the churn began.
struct Run<'a> {
    config: &'a SimulateConfig,
    groups: &'a [NodeGroup],
    group_of: &'a [usize],
    fleet: &'a Fleet,
    start: Instant,
}

impl Run<'_> {
    /// Churns every node's pods (the drivers on a pool of threads) until the run's end
    /// or a stop, while this thread ticks the rollout, makes the planned swap and tells
    /// `progress` where the run stands.
    fn churn(
        &self,
        owners: &KubeOwners,
        mut rollout: Option<&mut SimulatedRollout>,
        signals: &Signals,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Churned, SimulateError> {
        let (config, agents) = (self.config, self.fleet.agents());
        let until = config.duration.map_or(self.start + Duration::from_secs(86_400 * 365), |d| self.start + d);
        let mut swap = None;
        // The drivers' stop: the signal's, or the fleet's own when a driver cannot start.
        let stop = AtomicBool::new(false);
        let busy_at_start: Vec<Duration> = agents.iter().map(|agent| agent.handle().plugin_busy()).collect();
        let nodes = self.pooled_nodes();
        let runs = std::thread::scope(|scope| {
            let stop = &stop;
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
                let elapsed = self.start.elapsed();
                if let Some(rollout) = rollout.as_mut() {
                    rollout.tick(elapsed, self.fleet);
                }
                if let Some(planned) = swap_at.as_ref().filter(|planned| elapsed >= planned.at) {
                    swap = Some(swap_all(agents, planned, elapsed));
                    swap_at = None;
                }
                let queued: usize = agents.iter().map(|a| a.handle().queue_len()).sum();
                progress(&Progress {
                    elapsed,
                    duration: config.duration,
                    message: format!("{} nodes, queue {queued}", agents.len()),
                    api_server: Some(self.fleet.connection().api_url().to_owned()),
                });
            }
            // A driver that panicked is a bug of the host: its panic goes on up.
            let nodes = drivers
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .map_err(SimulateError::Spawn)?;
            Ok::<_, SimulateError>(
                nodes
                    .into_iter()
                    .zip(agents.iter().zip(&busy_at_start))
                    .map(|(node, (agent, busy))| NodeRun {
                        driver: node.driver,
                        plugin_busy: agent.handle().plugin_busy().saturating_sub(*busy),
                    })
                    .collect(),
            )
        })?;
        Ok(Churned { runs, swap })
    }

    /// Each node's driver, with its share of the pods and the churn and its own seed.
    fn pooled_nodes(&self) -> Vec<PooledNode<'_>> {
        let (config, names) = (self.config, self.fleet.names());
        self.fleet
            .agents()
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
                    annotations: self.groups[self.group_of[i]].pod_annotations.clone(),
                };
                PooledNode {
                    driver: Driver::new(driver_config, agent.pod_manager()),
                    side: agent.node_side(),
                    pods: agent.pod_manager(),
                }
            })
            .collect()
    }
}

/// Every node's quiet sync at once, each on a thread of its own, until `deadline` and
/// while `go_on`: how the worst of them ended.
fn quiet_sync(
    agents: &[NodeAgent],
    runs: &mut [NodeRun],
    deadline: Instant,
    go_on: &(dyn Fn() -> bool + Sync),
) -> Flushed {
    let ends: Vec<Flushed> = std::thread::scope(|scope| {
        let threads: Vec<_> = agents
            .iter()
            .zip(runs.iter_mut())
            .map(|(agent, run)| scope.spawn(move || run.driver.quiet_sync(agent, &agent.node_side(), deadline, go_on)))
            .collect();
        threads.into_iter().map(|thread| thread.join().unwrap_or(Flushed::Interrupted)).collect()
    });
    let worst = |end: Flushed| ends.contains(&end).then_some(end);
    worst(Flushed::Interrupted).or(worst(Flushed::TimedOut)).unwrap_or(Flushed::Done)
}

/// How long the first pods' creation took on its own (from the churn's `start` to the
/// last of the run's first `pods`, when all were created), and the rate of creation:
/// theirs, else the run's over its `seconds`.
fn first_pods(counts: &DriverCounts, pods: usize, start: Instant, seconds: f64) -> (Option<f64>, f64) {
    let all_first = counts.first_created == pods as u64;
    let first_pods_seconds =
        counts.first_created_at.filter(|_| all_first).map(|at| at.saturating_duration_since(start).as_secs_f64());
    let first_rate = match first_pods_seconds {
        Some(took) if took > 0.0 => counts.first_created as f64 / took,
        _ if seconds > 0.0 => counts.created as f64 / seconds,
        _ => 0.0,
    };
    (first_pods_seconds, first_rate)
}

/// Bytes of a figure in MiB (as `/proc` gives them, to the KiB).
fn mib_to_bytes(mib: f64) -> u64 {
    (mib * 1024.0 * 1024.0).round() as u64
}

/// Node `i`'s share of `total` over `nodes`: the remainder goes to the first nodes.
fn share(total: usize, nodes: usize, i: usize) -> usize {
    total / nodes + usize::from(i < total % nodes)
}

/// Swaps every node's plugin for the one in `path`, one node after another (a rollout
/// of the whole fleet): the first failure's summary if one fails, else the longest
/// pause and the whole rollout's time.
fn swap_all(agents: &[NodeAgent], planned: &PlannedSwap, at: Duration) -> SwapSummary {
    let began = Instant::now();
    let mut rollout = SwapSummary::default();
    for agent in agents {
        let swap = swap_to_image(agent, &planned.image, at);
        if swap.error.is_some() {
            return swap;
        }
        agent.metrics_scope().set_logic(&planned.logic);
        rollout = SwapSummary { pause_ms: rollout.pause_ms.max(swap.pause_ms), ..swap };
    }
    SwapSummary { total_ms: began.elapsed().as_secs_f64() * 1000.0, ..rollout }
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
