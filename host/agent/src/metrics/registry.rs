//! The node's metrics: the families, the registry they are encoded from, and the
//! handle ([`Metrics`]) every part of the agent records through.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
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

/// The outcome label of a successful API call; failures carry the Kubernetes `Status`
/// reason (`NotFound`, `Conflict`, ...).
pub const OUTCOME_OK: &str = "Success";

/// `podstatus_api_calls_total`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiCallLabels {
    verb: String,
    outcome: String,
}

/// `podstatus_plugin_call_duration_seconds`' label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: String,
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

/// What is recorded; written by its [`Collector`] impl.
#[derive(Debug)]
struct Families {
    sync_duration: Histogram,
    /// Observations of `sync_duration`: prometheus-client does not give a histogram's
    /// count back.
    sync_count: AtomicU64,
    api_calls: Family<ApiCallLabels, Counter>,
    /// The (verb, outcome) pairs seen, sorted, for summaries: a prometheus-client
    /// family cannot be listed.
    api_call_labels: Mutex<BTreeSet<(String, String)>>,
    plugin_calls: Family<OperationLabels, Histogram, fn() -> Histogram>,
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
            sync_duration: Histogram::new(POD_STATUS_SYNC_BUCKETS),
            sync_count: AtomicU64::new(0),
            api_calls: Family::default(),
            api_call_labels: Mutex::new(BTreeSet::new()),
            plugin_calls: Family::new_with_constructor(|| Histogram::new(PLUGIN_CALL_BUCKETS)),
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

    /// Counts one API call; `outcome` is [`OUTCOME_OK`] or the failure's reason.
    pub fn api_call(&self, verb: &str, outcome: &str) {
        let labels = ApiCallLabels { verb: verb.to_owned(), outcome: outcome.to_owned() };
        self.families.api_calls.get_or_create(&labels).inc();
        let mut seen = self.families.api_call_labels.lock().unwrap_or_else(PoisonError::into_inner);
        if !seen.contains(&(labels.verb.clone(), labels.outcome.clone())) {
            seen.insert((labels.verb, labels.outcome));
        }
    }

    /// The number of API calls with this verb and outcome so far.
    pub fn api_calls(&self, verb: &str, outcome: &str) -> u64 {
        let labels = ApiCallLabels { verb: verb.to_owned(), outcome: outcome.to_owned() };
        self.families.api_calls.get(&labels).map_or(0, |counter| counter.get())
    }

    /// Every (verb, outcome, count), sorted by verb then outcome: what a summary prints.
    pub fn api_call_counts(&self) -> Vec<(String, String, u64)> {
        let seen = self.families.api_call_labels.lock().unwrap_or_else(PoisonError::into_inner).clone();
        seen.into_iter()
            .map(|(verb, outcome)| {
                let count = self.api_calls(&verb, &outcome);
                (verb, outcome, count)
            })
            .collect()
    }

    /// Records one plugin call of `operation` that took `took`.
    pub fn plugin_call(&self, operation: &str, took: Duration) {
        let labels = OperationLabels { operation: operation.to_owned() };
        self.families.plugin_calls.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// Records a status write `took` after the pod's first unwritten change.
    pub fn status_synced(&self, took: Duration) {
        // Upstream truncates to milliseconds before observing.
        self.families.sync_duration.observe(Duration::from_millis(took.as_millis() as u64).as_secs_f64());
        self.families.sync_count.fetch_add(1, Ordering::Relaxed);
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
