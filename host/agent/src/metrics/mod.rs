//! The node agent's metrics, in Prometheus' text format on `--metrics-addr`.
//!
//! Names follow upstream where upstream has the metric
//! (`kubelet_pod_status_sync_duration_seconds`, with its help text and buckets from
//! `pkg/kubelet/metrics/metrics.go`); the others are `podstatus_*`. They are collected
//! without touching the plugin: [`crate::metered_plugin::MeteredPlugin`] times plugin
//! calls and notes status changes, [`crate::metered_api_server::MeteredApiServer`]
//! counts API calls and closes the propagation clock, and the queue depth is read at
//! scrape time.

pub mod propagation;
pub mod server;
pub mod text;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use propagation::{LatencySummary, PropagationTracker};
pub use server::{MetricsServer, ServeError};
pub use text::{CONTENT_TYPE, Counter, Family, Gauge, Histogram};

use podstatus_backends::SyncQueue;

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

/// The outcome label of a successful API call; failures carry the Kubernetes `Status`
/// reason (`NotFound`, `Conflict`, ...).
pub const OUTCOME_OK: &str = "Success";

/// Every metric of one agent. Shared (`Arc`) by the metered wrappers and the server.
#[derive(Debug)]
pub struct Metrics {
    sync_duration: Histogram,
    api_calls: Family<Counter>,
    plugin_calls: Family<Histogram>,
    /// The queue whose depth is reported; none until the agent sets it.
    queue: Mutex<Option<Arc<SyncQueue>>>,
    propagation: PropagationTracker,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            sync_duration: Histogram::new(&POD_STATUS_SYNC_BUCKETS),
            api_calls: Family::new(&["verb", "outcome"], Counter::default),
            plugin_calls: Family::new(&["operation"], || Histogram::new(&PLUGIN_CALL_BUCKETS)),
            queue: Mutex::new(None),
            propagation: PropagationTracker::new(),
        }
    }
}

impl Metrics {
    /// Empty metrics with no queue attached.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reports `queue`'s depth (read at every scrape) from now on.
    pub fn set_queue(&self, queue: Arc<SyncQueue>) {
        *self.queue.lock().unwrap_or_else(PoisonError::into_inner) = Some(queue);
    }

    /// Counts one API call; `outcome` is [`OUTCOME_OK`] or the failure's reason.
    pub fn api_call(&self, verb: &str, outcome: &str) {
        self.api_calls.with(&[verb, outcome]).inc();
    }

    /// The number of API calls with this verb and outcome so far.
    pub fn api_calls(&self, verb: &str, outcome: &str) -> u64 {
        self.api_calls.with(&[verb, outcome]).get()
    }

    /// Every (verb, outcome, count), sorted by verb then outcome: what a summary prints.
    pub fn api_call_counts(&self) -> Vec<(String, String, u64)> {
        self.api_calls
            .series()
            .into_iter()
            .map(|(labels, counter)| {
                let mut labels = labels.into_iter();
                (labels.next().unwrap_or_default(), labels.next().unwrap_or_default(), counter.get())
            })
            .collect()
    }

    /// Records one plugin call of `operation` that took `took`.
    pub fn plugin_call(&self, operation: &str, took: Duration) {
        self.plugin_calls.with(&[operation]).observe(took.as_secs_f64());
    }

    /// Records a status write `took` after the pod's first unwritten change.
    pub fn status_synced(&self, took: Duration) {
        // Upstream truncates to milliseconds before observing.
        self.sync_duration.observe(Duration::from_millis(took.as_millis() as u64).as_secs_f64());
    }

    /// The observations of [`POD_STATUS_SYNC_DURATION`] so far.
    pub fn status_sync_count(&self) -> u64 {
        self.sync_duration.count()
    }

    /// Where status changes and writes meet (see [`PropagationTracker`]).
    pub fn propagation(&self) -> &PropagationTracker {
        &self.propagation
    }

    /// Every metric in the text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        text::write_header(&mut out, POD_STATUS_SYNC_DURATION, POD_STATUS_SYNC_DURATION_HELP, "histogram");
        text::write_histogram(&mut out, POD_STATUS_SYNC_DURATION, &[], &self.sync_duration);
        text::write_counter_family(
            &mut out,
            API_CALLS,
            "API server calls made for pod statuses, by verb and outcome (Success or the Kubernetes Status reason).",
            &self.api_calls,
        );
        text::write_histogram_family(
            &mut out,
            PLUGIN_CALL_DURATION,
            "Duration in seconds of calls into the status manager plugin, by operation.",
            &self.plugin_calls,
        );
        text::write_header(
            &mut out,
            PENDING_PODS,
            "Pods with a status change not yet written to the API server.",
            "gauge",
        );
        text::write_sample(&mut out, PENDING_PODS, &[], self.propagation.pending() as f64);
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(queue) = queue {
            text::write_header(&mut out, SYNC_QUEUE_DEPTH, "Sync requests waiting in the status sync queue.", "gauge");
            text::write_sample(&mut out, SYNC_QUEUE_DEPTH, &[], queue.len() as f64);
            text::write_header(
                &mut out,
                SYNC_QUEUE_DROPPED,
                "Sync requests refused because the queue was full (the batch sync catches up).",
                "counter",
            );
            text::write_sample(&mut out, SYNC_QUEUE_DROPPED, &[], queue.dropped() as f64);
        }
        out
    }
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
        metrics.set_queue(queue);
        metrics.api_call("get", OUTCOME_OK);
        metrics.api_call("get", "NotFound");
        metrics.plugin_call("set_pod_status", Duration::from_micros(20));
        metrics.status_synced(Duration::from_micros(30_900));
        let text = metrics.render();
        for line in [
            "# TYPE kubelet_pod_status_sync_duration_seconds histogram",
            "kubelet_pod_status_sync_duration_seconds_bucket{le=\"0.01\"} 0",
            "kubelet_pod_status_sync_duration_seconds_bucket{le=\"0.05\"} 1",
            "kubelet_pod_status_sync_duration_seconds_sum 0.03",
            "kubelet_pod_status_sync_duration_seconds_count 1",
            "podstatus_api_calls_total{verb=\"get\",outcome=\"NotFound\"} 1",
            "podstatus_api_calls_total{verb=\"get\",outcome=\"Success\"} 1",
            "podstatus_plugin_call_duration_seconds_bucket{operation=\"set_pod_status\",le=\"0.00004\"} 1",
            "podstatus_plugin_call_duration_seconds_count{operation=\"set_pod_status\"} 1",
            "podstatus_sync_queue_depth 1",
            "podstatus_sync_queue_dropped_total 1",
            "podstatus_status_pending_pods 0",
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
