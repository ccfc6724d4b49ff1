//! The node's metrics: the families, the registry they are encoded from, and the
//! handle ([`Metrics`]) every part of the agent records through.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::caller_latency::CallerLatency;
use super::process;
use super::propagation::PropagationTracker;
use super::rest_client_families::{self as rest_client, RestClientMetrics};
use super::series::{CurrentSeries, GroupSnapshot, GroupTally, SeriesLabels};
use podstatus_backends::SyncQueue;

/// The `Content-Type` of a scrape answer: OpenMetrics text, which Prometheus reads.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upstream's name for the time from a pod's first unwritten status change to its write.
pub const POD_STATUS_SYNC_DURATION: &str = "kubelet_pod_status_sync_duration_seconds";
/// Upstream's help text for [`POD_STATUS_SYNC_DURATION`] (its spelling kept).
const POD_STATUS_SYNC_DURATION_HELP: &str = "Duration in seconds to sync a pod status update. Measures time from \
    detection of a change to pod status until the API is successfully updated for that pod, even if multiple \
    intevening changes to pod status occur.";
/// Upstream's buckets for [`POD_STATUS_SYNC_DURATION`].
pub const POD_STATUS_SYNC_BUCKETS: [f64; 11] = [0.010, 0.050, 0.100, 0.500, 1.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0];

/// API server calls by verb and outcome.
pub const API_CALLS: &str = "podstatus_api_calls_total";
/// Requests waiting in the sync queue at scrape time.
pub const SYNC_QUEUE_DEPTH: &str = "podstatus_sync_queue_depth";
/// Sync requests refused because the queue was full.
pub const SYNC_QUEUE_DROPPED: &str = "podstatus_sync_queue_dropped_total";
/// Pods with a status change not yet written.
pub const PENDING_PODS: &str = "podstatus_status_pending_pods";
/// Plugin call durations by operation.
pub const PLUGIN_CALL_DURATION: &str = "podstatus_plugin_call_duration_seconds";
/// Plugin calls are microseconds natively and tens of microseconds sandboxed; a slow
/// one waits on the API server. Powers of four from 10 µs to about 2.6 s cover both.
pub const PLUGIN_CALL_BUCKETS: [f64; 10] =
    [0.00001, 0.00004, 0.00016, 0.00064, 0.00256, 0.01024, 0.04096, 0.16384, 0.65536, 2.62144];
/// Always 1, labelled with what was built (as `kubernetes_build_info`).
pub const BUILD_INFO: &str = "podstatus_build_info";
/// Status updates handed to the plugin.
pub const STATUS_UPDATES: &str = "podstatus_status_updates_total";
/// Status updates that made a new status version.
pub const STATUS_VERSIONS: &str = "podstatus_status_versions_total";
/// Plugin calls that faulted, by kind.
pub const PLUGIN_FAULTS: &str = "podstatus_plugin_faults_total";
/// Plugin instances the supervisor restored after a fault.
pub const PLUGIN_RECOVERIES: &str = "podstatus_plugin_recoveries_total";
/// A fleet's nodes by group and logic, at scrape time (absent for a single agent).
pub const FLEET_NODES: &str = "podstatus_fleet_nodes";

/// The outcome label of a successful API call; failures carry the Kubernetes `Status`
/// reason (`NotFound`, `Conflict`, ...).
pub const OUTCOME_OK: &str = "Success";

/// `podstatus_api_calls_total`'s labels: the node's series, then verb and outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiCallLabels {
    #[prometheus(flatten)]
    series: SeriesLabels,
    verb: String,
    outcome: String,
}

/// `podstatus_plugin_call_duration_seconds`' labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    #[prometheus(flatten)]
    series: SeriesLabels,
    operation: String,
}

/// `podstatus_plugin_faults_total`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    #[prometheus(flatten)]
    series: SeriesLabels,
    kind: String,
}

/// `podstatus_build_info`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    /// The binary's version (Cargo's).
    version: String,
    /// The newest plugin contract the host implements (it runs older ones too).
    contract: String,
}

/// Every metric of one agent. Shared (`Arc`) by the metered wrappers, the client's
/// layer and the server.
#[derive(Debug)]
pub struct Metrics {
    families: Arc<Families>,
    /// Holds `families` as its only collector: prometheus-client's `register` adds a
    /// period to every help text, which would change upstream's.
    registry: Registry,
}

/// What is recorded; written by its [`Collector`] impl. Every family a rollout compares
/// or an operator reads per group is keyed by the node's [`SeriesLabels`] (none for a
/// single agent).
#[derive(Debug)]
struct Families {
    sync_duration: Family<SeriesLabels, Histogram, fn() -> Histogram>,
    /// Observations of `sync_duration`: prometheus-client does not give a histogram's
    /// count back.
    sync_count: AtomicU64,
    api_calls: Family<ApiCallLabels, Counter>,
    /// Every (verb, outcome) pair's count over all series, sorted, for summaries: a
    /// prometheus-client family cannot be listed.
    api_call_totals: Mutex<BTreeMap<(String, String), u64>>,
    plugin_calls: Family<OperationLabels, Histogram, fn() -> Histogram>,
    status_updates: Family<SeriesLabels, Counter>,
    status_versions: Family<SeriesLabels, Counter>,
    plugin_faults: Family<FaultLabels, Counter>,
    plugin_recoveries: Family<SeriesLabels, Counter>,
    /// Each group's tally, by group name (`""` for unlabelled nodes).
    groups: Mutex<BTreeMap<String, Arc<GroupTally>>>,
    /// The labelled nodes' series (a fleet's nodes), for the nodes per group and
    /// logic; one dropped with its node is skipped and pruned at the next scrape.
    nodes: Mutex<Vec<Weak<CurrentSeries>>>,
    rest_client: RestClientMetrics,
    build_info: Family<BuildLabels, Gauge>,
    /// The queues whose depth is reported, summed (a fleet's nodes have one each);
    /// none until an agent adds its own.
    queues: Mutex<Vec<Arc<SyncQueue>>>,
    propagation: PropagationTracker,
    caller_latency: CallerLatency,
}

impl Default for Metrics {
    fn default() -> Self {
        let build_info: Family<BuildLabels, Gauge> = Family::default();
        build_info
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                contract: podstatus_runtime::Contract::NEWEST.package().to_owned(),
            })
            .set(1);
        let families = Arc::new(Families {
            sync_duration: Family::new_with_constructor(|| Histogram::new(POD_STATUS_SYNC_BUCKETS)),
            sync_count: AtomicU64::new(0),
            api_calls: Family::default(),
            api_call_totals: Mutex::new(BTreeMap::new()),
            plugin_calls: Family::new_with_constructor(|| Histogram::new(PLUGIN_CALL_BUCKETS)),
            status_updates: Family::default(),
            status_versions: Family::default(),
            plugin_faults: Family::default(),
            plugin_recoveries: Family::default(),
            groups: Mutex::new(BTreeMap::new()),
            nodes: Mutex::new(Vec::new()),
            rest_client: RestClientMetrics::default(),
            build_info,
            queues: Mutex::new(Vec::new()),
            propagation: PropagationTracker::new(),
            caller_latency: CallerLatency::new(),
        });
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Arc::clone(&families)));
        Metrics { families, registry }
    }
}

impl Metrics {
    /// Empty metrics with no queue attached.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reports `queue`'s depth (read at every scrape) from now on, summed with the
    /// other queues added (the nodes of a fleet that share these metrics).
    pub fn add_queue(&self, queue: Arc<SyncQueue>) {
        self.families.queues.lock().unwrap_or_else(PoisonError::into_inner).push(queue);
    }

    /// Counts one API call without labels; `outcome` is [`OUTCOME_OK`] or the
    /// failure's reason. (A node counts through its [`super::MetricsScope`].)
    pub fn api_call(&self, verb: &str, outcome: &str) {
        self.api_call_in(&SeriesLabels::none(), verb, outcome);
    }

    pub(super) fn api_call_in(&self, series: &SeriesLabels, verb: &str, outcome: &str) {
        let labels = ApiCallLabels { series: series.clone(), verb: verb.to_owned(), outcome: outcome.to_owned() };
        self.families.api_calls.get_or_create(&labels).inc();
        let mut totals = self.families.api_call_totals.lock().unwrap_or_else(PoisonError::into_inner);
        *totals.entry((labels.verb, labels.outcome)).or_default() += 1;
    }

    /// The number of API calls with this verb and outcome so far, over every series.
    pub fn api_calls(&self, verb: &str, outcome: &str) -> u64 {
        let totals = self.families.api_call_totals.lock().unwrap_or_else(PoisonError::into_inner);
        totals.get(&(verb.to_owned(), outcome.to_owned())).copied().unwrap_or(0)
    }

    /// Every (verb, outcome, count) over every series, sorted by verb then outcome:
    /// what a summary prints.
    pub fn api_call_counts(&self) -> Vec<(String, String, u64)> {
        let totals = self.families.api_call_totals.lock().unwrap_or_else(PoisonError::into_inner);
        totals.iter().map(|((verb, outcome), count)| (verb.clone(), outcome.clone(), *count)).collect()
    }

    /// Records one plugin call of `operation` that took `took`, without labels.
    pub fn plugin_call(&self, operation: &str, took: Duration) {
        self.plugin_call_in(&SeriesLabels::none(), operation, took);
    }

    pub(super) fn plugin_call_in(&self, series: &SeriesLabels, operation: &str, took: Duration) {
        let labels = OperationLabels { series: series.clone(), operation: operation.to_owned() };
        self.families.plugin_calls.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// Records a status write `took` after the pod's first unwritten change, without
    /// labels.
    pub fn status_synced(&self, took: Duration) {
        self.status_synced_in(&SeriesLabels::none(), took);
    }

    pub(super) fn status_synced_in(&self, series: &SeriesLabels, took: Duration) {
        // Upstream truncates to milliseconds before observing.
        let seconds = Duration::from_millis(took.as_millis() as u64).as_secs_f64();
        self.families.sync_duration.get_or_create(series).observe(seconds);
        self.families.sync_count.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn status_update_in(&self, series: &SeriesLabels, new_version: bool) {
        self.families.status_updates.get_or_create(series).inc();
        if new_version {
            self.families.status_versions.get_or_create(series).inc();
        }
    }

    pub(super) fn plugin_fault_in(&self, series: &SeriesLabels, kind: &str) {
        self.families.plugin_faults.get_or_create(&FaultLabels { series: series.clone(), kind: kind.to_owned() }).inc();
    }

    pub(super) fn plugin_recovered_in(&self, series: &SeriesLabels, count: u64) {
        self.families.plugin_recoveries.get_or_create(series).inc_by(count);
    }

    /// Makes `series`' propagation histogram exist from now on, so a scrape shows its
    /// zero buckets before the first write (as a single agent's always has).
    pub(super) fn open_series(&self, series: &SeriesLabels) {
        let _ = self.families.sync_duration.get_or_create(series);
    }

    /// The tally of `group`, made on first use.
    pub(super) fn group_tally(&self, group: &str) -> Arc<GroupTally> {
        let mut groups = self.families.groups.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(groups.entry(group.to_owned()).or_default())
    }

    /// What the nodes of `group` counted so far (nothing, for a group never seen).
    pub fn group_snapshot(&self, group: &str) -> GroupSnapshot {
        let tally = self.families.groups.lock().unwrap_or_else(PoisonError::into_inner).get(group).cloned();
        tally.map(|tally| tally.snapshot()).unwrap_or_default()
    }

    /// The groups counted into so far, sorted.
    pub fn group_names(&self) -> Vec<String> {
        self.families.groups.lock().unwrap_or_else(PoisonError::into_inner).keys().cloned().collect()
    }

    /// Counts a node in [`FLEET_NODES`] by its series while it lives.
    pub(super) fn add_node(&self, series: &Arc<CurrentSeries>) {
        self.families.nodes.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::downgrade(series));
    }

    /// The observations of [`POD_STATUS_SYNC_DURATION`] so far.
    pub fn status_sync_count(&self) -> u64 {
        self.families.sync_count.load(Ordering::Relaxed)
    }

    /// Where status changes and writes meet (see [`PropagationTracker`]).
    pub fn propagation(&self) -> &PropagationTracker {
        &self.families.propagation
    }

    /// How long the node's side waited in its status manager calls (see
    /// [`CallerLatency`]).
    pub fn caller_latency(&self) -> &CallerLatency {
        &self.families.caller_latency
    }

    /// HTTP requests the client sent with this status `code` (or
    /// [`rest_client::CODE_ERROR`]), `method` and `host` so far.
    pub fn rest_client_requests(&self, code: &str, method: &str, host: &str) -> u64 {
        self.families.rest_client.requests(code, method, host)
    }

    /// The client's request metrics, for [`super::RestClientService`].
    pub(super) fn rest_client(&self) -> &RestClientMetrics {
        &self.families.rest_client
    }

    /// Every metric in the OpenMetrics text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; a collector's error would only cut the text.
        if let Err(error) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!(%error, "encoding the metrics failed");
        }
        out
    }
}

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let e = &mut encoder;
        write(e, POD_STATUS_SYNC_DURATION, POD_STATUS_SYNC_DURATION_HELP, &self.sync_duration)?;
        write(
            e,
            API_CALLS,
            "API server calls made for pod statuses, by verb and outcome (Success or the Kubernetes Status reason).",
            &self.api_calls,
        )?;
        write(
            e,
            PLUGIN_CALL_DURATION,
            "Duration in seconds of calls into the status manager plugin, by operation.",
            &self.plugin_calls,
        )?;
        write(
            e,
            STATUS_UPDATES,
            "Status updates handed to the status manager plugin (set, readiness, startup, terminate).",
            &self.status_updates,
        )?;
        write(e, STATUS_VERSIONS, "Status updates that made a new status version.", &self.status_versions)?;
        write(
            e,
            PLUGIN_FAULTS,
            "Calls into the status manager plugin that faulted (trapped or breached a limit), by kind.",
            &self.plugin_faults,
        )?;
        write(
            e,
            PLUGIN_RECOVERIES,
            "Plugin instances restored with their accepted state after a fault.",
            &self.plugin_recoveries,
        )?;
        let nodes = self.nodes_by_series();
        if !nodes.is_empty() {
            let family: Family<SeriesLabels, Gauge> = Family::default();
            for (SeriesKey(series), count) in nodes {
                family.get_or_create(&series).set(count);
            }
            write(e, FLEET_NODES, "A fleet's nodes, by group and the logic each runs now.", &family)?;
        }
        write(
            e,
            PENDING_PODS,
            "Pods with a status change not yet written to the API server.",
            &ConstGauge::new(self.propagation.pending() as i64),
        )?;
        let (queues, depth, dropped) = {
            let queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            (
                queues.len(),
                queues.iter().map(|q| q.len()).sum::<usize>(),
                queues.iter().map(|q| q.dropped()).sum::<u64>(),
            )
        };
        if queues > 0 {
            write(
                e,
                SYNC_QUEUE_DEPTH,
                "Sync requests waiting in the status sync queue.",
                &ConstGauge::new(depth as i64),
            )?;
            write(
                e,
                SYNC_QUEUE_DROPPED,
                "Sync requests refused because the queue was full (the batch sync catches up).",
                &ConstCounter::new(dropped),
            )?;
        }
        write(e, rest_client::REQUESTS, rest_client::REQUESTS_HELP, &self.rest_client.requests)?;
        write(e, rest_client::REQUEST_DURATION, rest_client::REQUEST_DURATION_HELP, &self.rest_client.duration)?;
        write(
            e,
            BUILD_INFO,
            "A metric with a constant '1' value labeled by the podstatus version and the newest plugin contract \
             the host implements.",
            &self.build_info,
        )?;
        if let Some(stats) = process::ProcessStats::read() {
            write(
                e,
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                &ConstCounter::new(stats.cpu_seconds),
            )?;
            write(
                e,
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                &ConstGauge::new(stats.resident_memory_bytes as i64),
            )?;
            write(
                e,
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                &ConstGauge::new(stats.virtual_memory_bytes as i64),
            )?;
            write(
                e,
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                &ConstGauge::new(stats.start_time_seconds),
            )?;
            write(e, "process_open_fds", "Number of open file descriptors.", &ConstGauge::new(stats.open_fds as i64))?;
            write(
                e,
                "process_max_fds",
                "Maximum number of open file descriptors.",
                &ConstGauge::new(stats.max_fds as i64),
            )?;
        }
        Ok(())
    }
}

impl Families {
    /// The live labelled nodes counted by their labels (without the node's name).
    fn nodes_by_series(&self) -> BTreeMap<SeriesKey, i64> {
        let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        nodes.retain(|series| series.strong_count() > 0);
        let mut counts = BTreeMap::new();
        for series in nodes.iter().filter_map(Weak::upgrade) {
            *counts.entry(SeriesKey(series.get().labels.without_node())).or_default() += 1;
        }
        counts
    }
}

/// Labels in a stable order (group, then logic) for the nodes gauge.
#[derive(Debug, PartialEq, Eq)]
struct SeriesKey(SeriesLabels);

impl PartialOrd for SeriesKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SeriesKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0.group(), self.0.logic()).cmp(&(other.0.group(), other.0.logic()))
    }
}

/// Writes one family. `name` is the sample name: a counter's descriptor drops
/// `_total`, which the encoder adds back to each sample (OpenMetrics' rule).
fn write(encoder: &mut DescriptorEncoder, name: &str, help: &str, metric: &impl EncodeMetric) -> fmt::Result {
    let name = name.strip_suffix("_total").unwrap_or(name);
    let metric_encoder = encoder.encode_descriptor(name, help, None, metric.metric_type())?;
    metric.encode(metric_encoder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_runtime::bindings::SyncRequest;

    #[test]
    fn render_names_every_family_with_values() {
        let metrics = Metrics::new();
        let queue = Arc::new(SyncQueue::new(1));
        queue.push(SyncRequest { id: 1, pod_uid: "a".into(), version: 1 });
        queue.push(SyncRequest { id: 2, pod_uid: "b".into(), version: 1 });
        metrics.add_queue(queue);
        metrics.api_call("get", OUTCOME_OK);
        metrics.api_call("get", "NotFound");
        metrics.plugin_call("set_pod_status", Duration::from_micros(20));
        metrics.status_synced(Duration::from_micros(30_900));
        let text = metrics.render();
        for line in [
            // Upstream's help, exactly: not the period prometheus-client's `register` adds.
            "# HELP kubelet_pod_status_sync_duration_seconds Duration in seconds to sync a pod status update. \
             Measures time from detection of a change to pod status until the API is successfully updated for \
             that pod, even if multiple intevening changes to pod status occur.",
            "# TYPE kubelet_pod_status_sync_duration_seconds histogram",
            "kubelet_pod_status_sync_duration_seconds_bucket{le=\"0.01\"} 0",
            "kubelet_pod_status_sync_duration_seconds_bucket{le=\"0.05\"} 1",
            "kubelet_pod_status_sync_duration_seconds_bucket{le=\"60.0\"} 1",
            "kubelet_pod_status_sync_duration_seconds_bucket{le=\"+Inf\"} 1",
            "kubelet_pod_status_sync_duration_seconds_sum 0.03",
            "kubelet_pod_status_sync_duration_seconds_count 1",
            "podstatus_api_calls_total{verb=\"get\",outcome=\"NotFound\"} 1",
            "podstatus_api_calls_total{verb=\"get\",outcome=\"Success\"} 1",
            "podstatus_plugin_call_duration_seconds_count{operation=\"set_pod_status\"} 1",
            "podstatus_sync_queue_depth 1",
            "podstatus_sync_queue_dropped_total 1",
            "podstatus_status_pending_pods 0",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert_eq!(
            metrics.api_call_counts(),
            [("get".into(), "NotFound".into(), 1), ("get".into(), OUTCOME_OK.into(), 1)]
        );
    }

    #[test]
    fn no_queue_no_depth() {
        assert!(!Metrics::new().render().contains(SYNC_QUEUE_DEPTH));
    }
}
