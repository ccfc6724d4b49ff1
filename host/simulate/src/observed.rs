//! What a run observed, one node's or a fleet's added up, and the [`Summary`] made of
//! it.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::config::SimulateConfig;
use crate::driver::DriverCounts;
use crate::kubelet_1_35::NewPaths;
use crate::owners::{OwnerError, StoredPod, StoredPods};
use crate::summary::{self, Check, Summary, SwapSummary};
use podstatus_agent::client::Outcome;
use podstatus_agent::metrics::{Metrics, OUTCOME_OK};
use podstatus_agent::metrics::{VERB_PATCH_STATUS, VERB_UPDATE_STATUS};

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
    pub ended: summary::Ended,
}

/// A run's new paths with the API server's pods at its end counted in.
pub(crate) fn api_paths(paths: Option<NewPaths>, stored: &Result<StoredPods, OwnerError>) -> Option<NewPaths> {
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
        format: summary::SUMMARY_FORMAT,
        plugin: observed.plugin,
        // The caller knows the plugin's bytes; it names them.
        logic: String::new(),
        plugin_sha256: String::new(),
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
        memory: None,
        ended: observed.ended,
    }
}

/// The plugin's held time per update handed to it, in microseconds (0 without updates).
pub(crate) fn per_update_us(busy: Duration, updates: u64) -> f64 {
    if updates == 0 { 0.0 } else { busy.as_secs_f64() * 1e6 / updates as f64 }
}

/// Status writes (updates and patches) the API server accepted so far.
pub(crate) fn statuses_written(metrics: &Metrics) -> u64 {
    [VERB_UPDATE_STATUS, VERB_PATCH_STATUS].iter().map(|verb| metrics.api_calls(verb, OUTCOME_OK)).sum()
}
