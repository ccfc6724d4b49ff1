//! One node's way into the metrics ([`MetricsScope`]): every sample it records carries
//! its current labels and counts into its current group's tally (see
//! [`super::SeriesLabels`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::propagation::NodeKey;
use super::registry::Metrics;
use super::series::{CurrentSeries, Series, SeriesLabels};

/// One node's way into the metrics. Shared by the node's metered plugin and API server
/// (`Arc`).
#[derive(Debug)]
pub struct MetricsScope {
    metrics: Arc<Metrics>,
    /// Shared with the metrics, which count the live nodes by their labels.
    series: Arc<CurrentSeries>,
    /// The node's own propagation clocks, among every node's in the shared tracker.
    node: NodeKey,
}

/// The clocks of a single agent (every unlabelled scope's).
const SINGLE_AGENT: NodeKey = 0;
/// Keys of the fleet nodes' scopes made so far: each is one node, with clocks of its own.
static NEXT_NODE_KEY: AtomicU64 = AtomicU64::new(1);

impl MetricsScope {
    /// A single agent's scope: no labels (its tally is the group `""`'s). Every
    /// unlabelled scope of a registry is the one agent's, so they share its clocks.
    pub fn unlabelled(metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Self::with_labels(metrics, SeriesLabels::none(), SINGLE_AGENT))
    }

    /// A fleet node's scope: its samples labelled with `group` and `logic`, and with
    /// `node` when given (per-node series: as many as nodes, so only on request).
    pub fn labelled(metrics: Arc<Metrics>, group: &str, logic: &str, node: Option<&str>) -> Arc<Self> {
        let key = NEXT_NODE_KEY.fetch_add(1, Ordering::Relaxed);
        let scope = Self::with_labels(metrics, SeriesLabels::new(group, logic, node), key);
        scope.metrics.add_node(&scope.series);
        Arc::new(scope)
    }

    fn with_labels(metrics: Arc<Metrics>, labels: SeriesLabels, node: NodeKey) -> Self {
        metrics.open_series(&labels);
        let tally = metrics.group_tally(labels.group().unwrap_or_default());
        MetricsScope { metrics, series: Arc::new(CurrentSeries::new(Series { labels, tally })), node }
    }

    /// The metrics this scope records into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The labels samples carry now.
    pub fn labels(&self) -> SeriesLabels {
        self.series.get().labels
    }

    /// From now on, samples are of `logic` (the node swapped its plugin). No-op for an
    /// unlabelled scope.
    pub fn set_logic(&self, logic: &str) {
        self.relabel(|labels| SeriesLabels::new(labels.group().unwrap_or_default(), logic, labels.node()));
    }

    /// From now on, samples are of `group` and count into its tally (a canary took the
    /// node, or gave it back). No-op for an unlabelled scope.
    pub fn set_group(&self, group: &str) {
        self.relabel(|labels| SeriesLabels::new(group, labels.logic().unwrap_or_default(), labels.node()));
    }

    fn relabel(&self, change: impl FnOnce(&SeriesLabels) -> SeriesLabels) {
        self.series.relabel(change, |labels| {
            self.metrics.open_series(labels);
            self.metrics.group_tally(labels.group().unwrap_or_default())
        });
    }

    /// Counts one API call; `outcome` is [`super::OUTCOME_OK`] or the failure's reason.
    pub fn api_call(&self, verb: &str, outcome: &str) {
        let series = self.series.get();
        series.tally.api_calls.fetch_add(1, Ordering::Relaxed);
        self.metrics.api_call_in(&series.labels, verb, outcome);
    }

    /// Records one plugin call of `operation` that took `took`.
    pub fn plugin_call(&self, operation: &str, took: Duration) {
        let series = self.series.get();
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        series.tally.plugin_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.metrics.plugin_call_in(&series.labels, operation, took);
    }

    /// Counts one status update handed to the plugin; `new_version` when it made one.
    pub fn status_update(&self, new_version: bool) {
        let series = self.series.get();
        series.tally.updates.fetch_add(1, Ordering::Relaxed);
        if new_version {
            series.tally.versions.fetch_add(1, Ordering::Relaxed);
        }
        self.metrics.status_update_in(&series.labels, new_version);
    }

    /// Counts a plugin call that faulted, by the fault's kind (`trap`, `cpu-time`, ...).
    pub fn plugin_fault(&self, kind: &str) {
        let series = self.series.get();
        series.tally.faults.fetch_add(1, Ordering::Relaxed);
        self.metrics.plugin_fault_in(&series.labels, kind);
    }

    /// Counts `count` plugin instances restored by the supervisor.
    pub fn plugin_recovered(&self, count: u64) {
        let series = self.series.get();
        series.tally.recoveries.fetch_add(count, Ordering::Relaxed);
        self.metrics.plugin_recovered_in(&series.labels, count);
    }

    /// A status change of this node's pod `uid` was accepted at `at`: starts its
    /// propagation clock, unless one is running.
    pub fn status_set(&self, uid: &str, at: Instant) {
        self.metrics.propagation().status_set(self.node, uid, at);
    }

    /// This node let go of every pod not in `keep`: their clocks stop, unmeasured.
    pub fn retain_clocks(&self, keep: &[String]) {
        self.metrics.propagation().retain(self.node, keep);
    }

    /// This node's pod `uid` is gone: its clock stops, unmeasured.
    pub fn forget_clock(&self, uid: &str) {
        self.metrics.propagation().forget(self.node, uid);
    }

    /// A status of pod `uid` was written at `at`: closes its propagation clock, if one
    /// was running, into this scope's series and tally (and the metrics' overall
    /// figures).
    pub fn status_written(&self, uid: &str, at: Instant) {
        let Some(took) = self.metrics.propagation().status_written(self.node, uid, at) else { return };
        let series = self.series.get();
        series.tally.propagation.lock().unwrap_or_else(PoisonError::into_inner).record(took);
        self.metrics.status_synced_in(&series.labels, took);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_written_only_when_there_are_some() {
        let metrics = Arc::new(Metrics::new());
        let single = MetricsScope::unlabelled(Arc::clone(&metrics));
        single.api_call("get", "Success");
        let grouped = MetricsScope::labelled(Arc::clone(&metrics), "web", "podstatus-v2", None);
        grouped.api_call("get", "Success");
        let named = MetricsScope::labelled(Arc::clone(&metrics), "web", "podstatus-v2", Some("n-0"));
        named.api_call("get", "Success");
        let text = metrics.render();
        for line in [
            "podstatus_api_calls_total{verb=\"get\",outcome=\"Success\"} 1",
            "podstatus_api_calls_total{group=\"web\",logic=\"podstatus-v2\",verb=\"get\",outcome=\"Success\"} 1",
            "podstatus_api_calls_total{group=\"web\",logic=\"podstatus-v2\",node=\"n-0\",verb=\"get\",outcome=\"Success\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert_eq!(metrics.api_calls("get", "Success"), 3, "the totals add every series up");
    }

    #[test]
    fn a_relabelled_scope_counts_into_its_new_group_and_logic() {
        let metrics = Arc::new(Metrics::new());
        let scope = MetricsScope::labelled(Arc::clone(&metrics), "web", "podstatus-v2", None);
        scope.status_update(true);
        scope.set_group("canary");
        scope.set_logic("podstatus-v3");
        scope.status_update(true);
        scope.status_update(false);
        scope.plugin_fault("trap");
        scope.plugin_recovered(1);
        assert_eq!(scope.labels(), SeriesLabels::new("canary", "podstatus-v3", None));
        let (web, canary) = (metrics.group_snapshot("web"), metrics.group_snapshot("canary"));
        assert_eq!((web.updates, web.versions), (1, 1));
        assert_eq!((canary.updates, canary.versions, canary.faults, canary.recoveries), (2, 1, 1, 1));
        let text = metrics.render();
        for line in [
            "podstatus_status_versions_total{group=\"web\",logic=\"podstatus-v2\"} 1",
            "podstatus_status_updates_total{group=\"canary\",logic=\"podstatus-v3\"} 2",
            "podstatus_plugin_faults_total{group=\"canary\",logic=\"podstatus-v3\",kind=\"trap\"} 1",
            "podstatus_plugin_recoveries_total{group=\"canary\",logic=\"podstatus-v3\"} 1",
            "podstatus_fleet_nodes{group=\"canary\",logic=\"podstatus-v3\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        let unlabelled = MetricsScope::unlabelled(Arc::clone(&metrics));
        unlabelled.set_group("canary");
        assert_eq!(unlabelled.labels(), SeriesLabels::none(), "a single agent's series stay unlabelled");
    }

    #[test]
    fn a_write_closes_the_clock_into_the_scope_and_the_overall_figures() {
        let metrics = Arc::new(Metrics::new());
        let scope = MetricsScope::labelled(Arc::clone(&metrics), "web", "podstatus-v2", None);
        let t0 = Instant::now();
        scope.status_set("u1", t0);
        scope.status_written("u1", t0 + Duration::from_millis(30));
        scope.status_written("u1", t0 + Duration::from_millis(40));
        assert_eq!(metrics.group_snapshot("web").propagation.count(), 1, "one clock, one sample");
        assert_eq!(metrics.propagation().snapshot().count, 1);
        assert_eq!(metrics.status_sync_count(), 1);
        let text = metrics.render();
        let line = "kubelet_pod_status_sync_duration_seconds_count{group=\"web\",logic=\"podstatus-v2\"} 1";
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }

    #[test]
    fn a_snapshot_window_and_a_sum() {
        let metrics = Arc::new(Metrics::new());
        let scope = MetricsScope::labelled(Arc::clone(&metrics), "web", "v", None);
        scope.status_update(true);
        scope.api_call("get", "Success");
        let before = metrics.group_snapshot("web");
        scope.status_update(true);
        scope.api_call("get", "Success");
        scope.api_call("patch_status", "Success");
        scope.plugin_call("set_pod_status", Duration::from_micros(5));
        let window = metrics.group_snapshot("web").since(&before);
        assert_eq!((window.updates, window.versions, window.api_calls), (1, 1, 2));
        assert_eq!(window.plugin_time, Duration::from_micros(5));
        let mut sum = window.clone();
        sum.add(&window);
        assert_eq!((sum.updates, sum.api_calls), (2, 4));
        assert_eq!(metrics.group_snapshot("nobody").updates, 0, "an unknown group counted nothing");
    }
}
