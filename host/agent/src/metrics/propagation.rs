//! Propagation latency: how long a status the plugin accepted takes to reach the API
//! server. Upstream measures the same thing for `kubelet_pod_status_sync_duration_seconds`
//! ("from the first update to the last event"): the clock starts at the first status
//! change of a pod not yet written, and stops when a status write for that pod succeeds.
//!
//! A pod whose change is never written (not in the API server, or its status dropped)
//! stays pending until the plugin drops its status (`remove-orphaned-statuses`) or the
//! pod is deleted: the pending count is a metric of its own.
//!
//! Clocks are kept per node (a [`NodeKey`]): a fleet's nodes share one tracker, and one
//! node dropping the statuses of the pods it no longer has must not stop the clocks of
//! every other node's pods (which it did once: at 1,000 nodes most writes went
//! unmeasured, and the slow ones most of all).
//!
//! The tracker is told both ends by the metered wrappers
//! ([`super::MeteredPlugin`] and
//! [`super::MeteredApiServer`]), which keeps the plugin
//! itself free of metrics.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::latency::{LatencyHistogram, LatencySummary};

/// Pending starts per node and pod UID, and every measured latency so far.
#[derive(Debug, Default)]
pub struct PropagationTracker {
    state: Mutex<State>,
}

/// Whose clocks: a node's (each [`crate::metrics::MetricsScope`] is one node).
pub type NodeKey = u64;

#[derive(Debug, Default)]
struct State {
    /// (node, pod UID) -> when its first unwritten status change was accepted.
    pending: HashMap<(NodeKey, String), Instant>,
    /// Every latency measured.
    samples: LatencyHistogram,
}

impl PropagationTracker {
    /// A tracker with nothing pending and nothing measured.
    pub fn new() -> Self {
        Self::default()
    }

    /// A status change of `node`'s pod `uid` was accepted at `at`. Only the first change
    /// since the last write starts the clock: later ones ride along with it.
    pub fn status_set(&self, node: NodeKey, uid: &str, at: Instant) {
        if uid.is_empty() {
            return;
        }
        self.lock().pending.entry((node, uid.to_owned())).or_insert(at);
    }

    /// A status of pod `uid` was written at `at`: returns the latency since its first
    /// unwritten change and records it, or `None` when nothing was pending (a write
    /// that repairs drift, or a pod this tracker never heard of).
    pub fn status_written(&self, node: NodeKey, uid: &str, at: Instant) -> Option<Duration> {
        let mut state = self.lock();
        let started = state.pending.remove(&(node, uid.to_owned()))?;
        let latency = at.saturating_duration_since(started);
        state.samples.record(latency);
        Some(latency)
    }

    /// Forgets the pending start of `node`'s pod `uid` (it is gone; nothing will be
    /// written).
    pub fn forget(&self, node: NodeKey, uid: &str) {
        self.lock().pending.remove(&(node, uid.to_owned()));
    }

    /// Forgets the pending starts of every pod of `node` not in `keep` (the node's
    /// pods; other nodes' clocks run on).
    pub fn retain(&self, node: NodeKey, keep: &[String]) {
        let keep: std::collections::HashSet<&str> = keep.iter().map(String::as_str).collect();
        self.lock().pending.retain(|(of, uid), _| *of != node || keep.contains(uid.as_str()));
    }

    /// Number of pods with a change not yet written.
    pub fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    /// Quantiles of every latency measured so far.
    pub fn snapshot(&self) -> LatencySummary {
        self.lock().samples.summary()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each update is a single map or counter change: a panic elsewhere leaves it whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_unwritten_change_starts_the_clock() {
        let tracker = PropagationTracker::new();
        let t0 = Instant::now();
        tracker.status_set(1, "a", t0);
        tracker.status_set(1, "a", t0 + Duration::from_millis(5));
        assert_eq!(tracker.pending(), 1);
        assert_eq!(tracker.status_written(1, "a", t0 + Duration::from_millis(8)), Some(Duration::from_millis(8)));
        assert_eq!(tracker.status_written(1, "a", t0 + Duration::from_millis(9)), None, "nothing pending any more");
        tracker.status_set(1, "a", t0 + Duration::from_millis(10));
        assert_eq!(tracker.status_written(1, "a", t0 + Duration::from_millis(12)), Some(Duration::from_millis(2)));
        assert_eq!(tracker.snapshot().count, 2);
        assert_eq!(tracker.snapshot().max, Duration::from_millis(8));
    }

    #[test]
    fn unknown_and_forgotten_pods_measure_nothing() {
        let tracker = PropagationTracker::new();
        let t0 = Instant::now();
        assert_eq!(tracker.status_written(1, "x", t0), None);
        tracker.status_set(1, "a", t0);
        tracker.status_set(1, "b", t0);
        tracker.status_set(1, "c", t0);
        tracker.forget(1, "a");
        tracker.retain(1, &["b".to_owned()]);
        assert_eq!(tracker.pending(), 1);
        assert_eq!(tracker.status_written(1, "a", t0), None);
        assert!(tracker.status_written(1, "b", t0).is_some());
        tracker.status_set(1, "", t0);
        assert_eq!(tracker.pending(), 0, "a pod without UID cannot be matched to its write");
    }

    /// A fleet's nodes share the tracker: one node letting go of its pods leaves the
    /// other nodes' clocks running, and a write closes only its own node's clock.
    #[test]
    fn a_nodes_housekeeping_stops_only_its_own_clocks() {
        let tracker = PropagationTracker::new();
        let t0 = Instant::now();
        tracker.status_set(1, "a", t0);
        tracker.status_set(2, "b", t0);
        tracker.retain(1, &[]);
        assert_eq!(tracker.status_written(1, "a", t0), None, "node 1 let its pod go");
        assert_eq!(tracker.status_written(1, "b", t0), None, "node 2's pod is not node 1's");
        assert!(tracker.status_written(2, "b", t0 + Duration::from_millis(3)).is_some(), "node 2's clock ran on");
    }

    #[test]
    fn empty_snapshot_is_zero() {
        assert_eq!(PropagationTracker::new().snapshot(), LatencySummary::default());
    }
}
