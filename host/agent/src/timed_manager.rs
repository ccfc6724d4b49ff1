//! [`TimedManager`]: the status manager as the node's side calls it. Every call is timed
//! by the caller, around the whole call, and recorded in the agent's
//! [`CallerLatency`](crate::metrics::CallerLatency): the wait for the plugin (a sync or
//! another caller holding it) is part of what the node pays, so it is part of the
//! figure. The simulated runtime (`simulate`'s driver) and the pod runner call only
//! through it, so no call of theirs goes unmeasured.

use std::sync::Arc;
use std::time::Instant;

use crate::metrics::Metrics;
use podstatus_runtime::bindings::{CachedStatus, UpdateOutcome};
use podstatus_runtime::{ManagerHandle, ResizeCondition, Result};

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

    /// [`ManagerHandle::get_pod_status`], timed.
    pub fn get_pod_status(&self, uid: &str) -> Result<Option<CachedStatus>> {
        self.timed("get_pod_status", || self.handle.get_pod_status(uid))
    }

    /// [`ManagerHandle::set_pod_status`], timed.
    pub fn set_pod_status(&self, pod: &str, status: &str) -> Result<UpdateOutcome> {
        self.timed("set_pod_status", || self.handle.set_pod_status(pod, status))
    }

    /// [`ManagerHandle::set_container_readiness`], timed.
    pub fn set_container_readiness(&self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        self.timed("set_container_readiness", || self.handle.set_container_readiness(pod_uid, container_id, ready))
    }

    /// [`ManagerHandle::set_container_startup`], timed.
    pub fn set_container_startup(&self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome> {
        self.timed("set_container_startup", || self.handle.set_container_startup(pod_uid, container_id, started))
    }

    /// [`ManagerHandle::set_pod_resize_condition`], timed.
    pub fn set_pod_resize_condition(
        &self,
        pod_uid: &str,
        condition: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()> {
        self.timed("set_pod_resize_condition", || {
            self.handle.set_pod_resize_condition(pod_uid, condition, reason, message, observed_generation)
        })
    }

    /// [`ManagerHandle::clear_pod_resize_condition`], timed.
    pub fn clear_pod_resize_condition(&self, pod_uid: &str, condition: ResizeCondition) -> Result<bool> {
        self.timed("clear_pod_resize_condition", || self.handle.clear_pod_resize_condition(pod_uid, condition))
    }

    /// [`ManagerHandle::get_pod_resize_conditions`], timed.
    pub fn get_pod_resize_conditions(&self, pod_uid: &str) -> Result<Vec<String>> {
        self.timed("get_pod_resize_conditions", || self.handle.get_pod_resize_conditions(pod_uid))
    }

    /// [`ManagerHandle::terminate_pod`], timed.
    pub fn terminate_pod(&self, pod: &str) -> Result<UpdateOutcome> {
        self.timed("terminate_pod", || self.handle.terminate_pod(pod))
    }

    /// [`ManagerHandle::remove_orphaned_statuses`], timed.
    pub fn remove_orphaned_statuses(&self, keep: &[String]) -> Result<u32> {
        self.timed("remove_orphaned_statuses", || self.handle.remove_orphaned_statuses(keep))
    }

    fn timed<T>(&self, operation: &'static str, call: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let result = call();
        self.metrics.caller_latency().record(operation, started.elapsed());
        result
    }
}
