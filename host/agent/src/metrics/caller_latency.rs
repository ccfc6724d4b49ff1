//! Caller latency: how long the node's side (the simulated runtime, the pod runner)
//! waits in each status manager call, measured by the caller around the call, so the
//! wait for the plugin (held by a sync, a batch, another caller) is included. The
//! kubelet's `SetPodStatus` never waits for the network: this is the figure that shows
//! whether ours does. [`crate::metrics::TimedManager`] records every call here.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::latency::{LatencyHistogram, LatencySummary};

/// Every caller-measured Manager call so far, over all operations and per operation.
#[derive(Debug, Default)]
pub struct CallerLatency {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    all: LatencyHistogram,
    by_operation: BTreeMap<&'static str, LatencyHistogram>,
}

/// Quantiles of caller latency, over all operations and per operation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallerLatencySummary {
    /// Every call.
    pub all: LatencySummary,
    /// Per operation (`set_pod_status`, ...), only those called.
    pub by_operation: BTreeMap<&'static str, LatencySummary>,
}

impl CallerLatency {
    /// Nothing measured yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One call of `operation` that kept its caller `took`.
    pub fn record(&self, operation: &'static str, took: Duration) {
        let mut state = self.lock();
        state.all.record(took);
        state.by_operation.entry(operation).or_default().record(took);
    }

    /// Quantiles of every call so far.
    pub fn snapshot(&self) -> CallerLatencySummary {
        let state = self.lock();
        CallerLatencySummary {
            all: state.all.summary(),
            by_operation: state.by_operation.iter().map(|(op, h)| (*op, h.summary())).collect(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each record is two histogram updates: a panic elsewhere leaves them usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_count_overall_and_per_operation() {
        let latency = CallerLatency::new();
        latency.record("set_pod_status", Duration::from_micros(10));
        latency.record("set_pod_status", Duration::from_micros(30));
        latency.record("terminate_pod", Duration::from_millis(2));
        let summary = latency.snapshot();
        assert_eq!(summary.all.count, 3);
        assert_eq!(summary.all.max, Duration::from_millis(2));
        assert_eq!(summary.by_operation.len(), 2);
        assert_eq!(summary.by_operation["set_pod_status"].count, 2);
        assert_eq!(summary.by_operation["set_pod_status"].max, Duration::from_micros(30));
        assert_eq!(summary.by_operation["terminate_pod"].p50, Duration::from_millis(2));
    }

    #[test]
    fn nothing_measured_is_empty() {
        assert_eq!(CallerLatency::new().snapshot(), CallerLatencySummary::default());
    }
}
