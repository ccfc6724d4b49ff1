//! [`TimedManager`]: the status manager as the node's side calls it. Every call is timed
//! by the caller, around the whole call, and recorded in the agent's
//! [`CallerLatency`](crate::metrics::CallerLatency): the wait for the plugin (a sync or
//! another caller holding it) is part of what the node pays, so it is part of the
//! figure. The simulated runtime (`simulate`'s driver) and the pod runner call only
//! through it, so no call of theirs goes unmeasured.

use std::sync::Arc;
use std::time::Instant;

use crate::metrics::Metrics;
use podstatus_runtime::{ManagerCall, ManagerHandle, Reply, Result};

/// A [`ManagerHandle`] whose Manager calls are timed into [`Metrics::caller_latency`].
/// Cheap to clone.
#[derive(Clone)]
pub struct TimedManager {
    handle: ManagerHandle,
    metrics: Arc<Metrics>,
}

impl TimedManager {
    /// Times calls on `handle` into `metrics`.
    pub fn new(handle: ManagerHandle, metrics: Arc<Metrics>) -> Self {
        TimedManager { handle, metrics }
    }

    /// The handle itself, for what is not a Manager call (queue length, contract).
    pub fn handle(&self) -> &ManagerHandle {
        &self.handle
    }

    /// [`ManagerHandle::call`], timed into [`Metrics::caller_latency`] under the
    /// operation's metric name. The typed methods (`set_pod_status`, ...) call this.
    pub fn call(&self, call: ManagerCall<'_>) -> Result<Reply> {
        self.timed(call.metric_name(), || self.handle.call(call))
    }

    podstatus_runtime::manager_methods!();

    fn timed<T>(&self, operation: &'static str, call: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let result = call();
        self.metrics.caller_latency().record(operation, started.elapsed());
        result
    }
}
