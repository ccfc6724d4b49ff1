//! `podstatus simulate`: the main job. A node agent (the plugin behind the real wiring:
//! kube-rs client, HTTP API server, pod watch, static pods) runs while a simulated node
//! drives realistic pod lives through it; at the end, after a quiet sync, every pod's
//! status in the API server must equal the plugin's cache. More than one node is a
//! fleet ([`crate::fleet`]).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::check;
use crate::config::{NodeGroup, Progress, Signals, SimulateConfig, SimulateError};
use crate::driver::{Driver, DriverConfig};
use crate::ending;
use crate::observed::{Observed, api_paths, statuses_written, summarize};
use crate::owners::{self, KubeOwners, StoredPod};
use crate::simulated_node::START_WAIT;
use crate::simulated_node::SimulatedNode;
use crate::static_manifests::{wait_for_mirrors, write_static_pods};
use crate::summary::{self, Ended, Summary};
use crate::swaps::{do_swap, swap_to_image};
use podstatus_runtime::{PluginImage, PluginRuntime};

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
                    NodeGroup::new("base", config.nodes - nodes, image.clone()),
                    NodeGroup::new(&canary.rollout.group, nodes, image),
                ]
            }
            None => vec![NodeGroup::new("all", config.nodes, image)],
        };
        return crate::fleet::run_fleet(config, plugins, groups, signals, progress);
    }
    let manifests = write_static_pods(&mut config)?;
    let started = Instant::now();
    let not_stopped = || !signals.stop.load(Ordering::SeqCst);
    let node = SimulatedNode::start_until(&config.agent, plugins, image, Some(START_WAIT), &not_stopped)?;
    let agent = node.agent();
    tracing::info!(took = ?started.elapsed(), api_server = agent.api_url(), "agent started");
    let owners = KubeOwners::new(agent.client().clone(), agent.runtime().clone());
    if let Err(e) = owners.ensure_namespace(podstatus_agent::node::SIMULATED_NAMESPACE) {
        tracing::warn!("creating the namespace {}: {e}", podstatus_agent::node::SIMULATED_NAMESPACE);
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
            swap = Some(swap_to_image(agent, &planned.image, elapsed));
            tracing::info!(at = ?planned.at, "swap done");
            swap_at = None;
        }
        if signals.swap.swap(false, Ordering::SeqCst) {
            match &config.swap_on_signal {
                Some(path) => swap = Some(do_swap(agent, path, elapsed)),
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
            api_server: Some(agent.api_url().to_owned()),
        });
    });
    let seconds = start.elapsed().as_secs_f64();
    let interrupted = ending::interrupted(&config, signals);
    let plugin_busy = agent.handle().plugin_busy().saturating_sub(busy_at_start);
    let statuses_written = statuses_written(agent.metrics());
    let cpu_steal_percent = cpu_at_start.zip(summary::CpuTimes::now()).and_then(|(a, b)| a.steal_percent_until(b));

    // --flush-timeout is a hard limit on what follows: the flush, the check and the
    // shutdown share one deadline.
    let quiet = Instant::now();
    let deadline = quiet + config.flush_timeout;
    progress(&Progress {
        elapsed: start.elapsed(),
        duration: config.duration,
        message: "flushing".into(),
        api_server: None,
    });
    let flush = driver.quiet_sync(agent, &node_side, deadline, &signals.flush_may_go_on());
    tracing::info!(took = ?quiet.elapsed(), stages = ?driver.stages(), %flush, "quiet sync done");
    let deadline = ending::after_flush(flush, deadline);
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
        ended: Ended { interrupted, flush },
    };
    let summary = summarize(&config, observed);
    // As `podstatus agent` at its end: the node reported as shutting down.
    if let Some(registration) = agent.registration()
        && let Err(e) = registration.mark_shutting_down(ending::mark_timeout(deadline))
    {
        tracing::warn!("reporting the node as shutting down: {e}");
    }
    let left = node.shutdown(ending::time_left(deadline));
    tracing::info!("agent stopped");
    if left > 0 {
        tracing::warn!("{left} sync requests were left unwritten at shutdown");
    }
    drop(manifests);
    Ok(summary)
}
