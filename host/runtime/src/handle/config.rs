//! How the scheduler runs: [`SchedulerConfig`] and its defaults.

use std::sync::Arc;
use std::time::Duration;

use super::admission::Admission;
use crate::call_pool::CallPool;
use crate::plugin::split_sync::DEFAULT_BATCH_SLICE_PODS;

/// The seed's batch sync period.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(10);

/// API calls a 0.2.0 plugin's syncs have in flight at most, by default: at 20 ms a
/// call, 64 carry over 3,000 calls a second.
pub const DEFAULT_MAX_CALLS_IN_FLIGHT: usize = 64;

/// How long a 0.2.0 plugin's sync may wait for the API client's rate limit before its
/// call, by default: the kubelet's client waits for its token; this bounds it as the
/// call timeout does.
pub const DEFAULT_CALL_PATIENCE: Duration = Duration::from_secs(5);

/// How the scheduler runs.
#[derive(Clone)]
pub struct SchedulerConfig {
    /// Time between batch syncs.
    pub sync_period: Duration,
    /// Where in the sync period this handle's batches fall, as a fraction of it (0 to
    /// 1; anything else is 0): the first batch comes after `(1 - batch_phase)` of a
    /// period instead of a whole one, and each next one a period after the last ended.
    /// One kubelet needs none (upstream's ticker starts with the status manager). A
    /// fleet starts its nodes a millisecond apart, so without phases a thousand nodes'
    /// batches would all run in the same second of every period, and every status
    /// write of the fleet waited behind them; a fleet gives node `i` of `n` the phase
    /// `i / n`, as it does its heartbeats.
    pub batch_phase: f64,
    /// API calls a 0.2.0 plugin's syncs have in flight at most (worker threads).
    pub max_calls_in_flight: usize,
    /// How long one of those calls may wait for a rate-limit token (bounded by the
    /// client's call timeout too).
    pub call_patience: Duration,
    /// Pods a 0.2.0 plugin's batch sync decides per call: the plugin lock is taken
    /// for one slice at a time, so callers wait behind a slice, not a whole batch.
    pub batch_slice_pods: u32,
    /// Waited on, without the plugin lock, before each sync (typically the API client's
    /// rate limiter, [`podstatus_backends::KubeApiServer::rate_limiter`]);
    /// `None` syncs at once (the in-memory API server needs no pacing).
    pub admission: Option<Arc<dyn Admission>>,
    /// Make those calls on this pool's threads, shared with other handles (a fleet's
    /// nodes), instead of on workers of the handle's own.
    pub call_pool: Option<Arc<CallPool>>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            sync_period: DEFAULT_SYNC_PERIOD,
            batch_phase: 0.0,
            max_calls_in_flight: DEFAULT_MAX_CALLS_IN_FLIGHT,
            call_patience: DEFAULT_CALL_PATIENCE,
            batch_slice_pods: DEFAULT_BATCH_SLICE_PODS,
            admission: None,
            call_pool: None,
        }
    }
}

impl std::fmt::Debug for SchedulerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerConfig")
            .field("sync_period", &self.sync_period)
            .field("batch_phase", &self.batch_phase)
            .field("max_calls_in_flight", &self.max_calls_in_flight)
            .field("call_patience", &self.call_patience)
            .field("batch_slice_pods", &self.batch_slice_pods)
            .field("admission", &self.admission.as_ref().map(|_| "..."))
            .field("call_pool", &self.call_pool)
            .finish()
    }
}
