//! The status manager's operations as the host calls them, whatever runs them.

use crate::bindings::{
    ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, Contract, PodSync, ResizeCondition, SyncOutcome,
    SyncRequest, SyncStep, UpdateOutcome,
};
use std::sync::Arc;

use podstatus_backends::HostView;

use crate::plugin::call_error::Result;
use crate::world::World;

/// The status manager's operations, whatever runs them. Each is one export of the
/// `kubelet:status/manager` interface.
pub trait Plugin: Send {
    /// The cached status of a pod (mirror UIDs find their static pod's status).
    fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>>;
    /// Caches a pod's status and queues its write when it changed.
    fn set_pod_status(&mut self, pod: &str, status: &str) -> Result<UpdateOutcome>;
    /// The host's view of the node's pods, with its record of accepted statuses, from
    /// now on: a plugin that restores state by itself (the supervisor, after a fault)
    /// holds what it restores against the record. Ignored by default.
    fn observe(&mut self, _view: Arc<HostView>) {}
    /// Sets a container's readiness and regenerates the Ready condition.
    fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome>;
    /// Sets whether a container passed its startup probe (contract 0.1.1 and later;
    /// older plugins answer [`CallError::Unsupported`]).
    fn set_container_startup(&mut self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome>;
    /// Caches an in-place resize condition of a pod beside its status (contract 0.2.1;
    /// older plugins, and 0.2.1 plugins whose logic has no in-place resize, answer
    /// [`CallError::Unsupported`]). Queues no write: the kubelet puts the conditions
    /// into the next status it sets.
    fn set_pod_resize_condition(
        &mut self,
        pod_uid: &str,
        condition: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()>;
    /// Forgets an in-place resize condition of a pod; true when it was set (contract
    /// 0.2.1, as [`Plugin::set_pod_resize_condition`]).
    fn clear_pod_resize_condition(&mut self, pod_uid: &str, condition: ResizeCondition) -> Result<bool>;
    /// The in-place resize conditions cached for a pod, each a core/v1 PodCondition as
    /// JSON, PodResizePending first (contract 0.2.1, as
    /// [`Plugin::set_pod_resize_condition`]). Upstream's `IsPodResizeDeferred` and
    /// `IsPodResizeInfeasible` are this and a look at the pending condition's reason.
    fn get_pod_resize_conditions(&mut self, pod_uid: &str) -> Result<Vec<String>>;
    /// Marks every container terminated and forces an update.
    fn terminate_pod(&mut self, pod: &str) -> Result<UpdateOutcome>;
    /// Drops the statuses of pods not in `keep`.
    fn remove_orphaned_statuses(&mut self, keep: &[String]) -> Result<u32>;
    /// Handles one request taken off the sync queue, start to end: a 0.1.x plugin calls
    /// the API server inside; a 0.2.0 plugin's planned syncs are run one after the
    /// other, each call answered at once ([`split_sync::sync_pod_now`]).
    fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome>;
    /// One periodic batch sync, start to end (as [`Plugin::sync_pod`]).
    fn sync_batch(&mut self) -> Result<BatchReport>;
    /// Plans the syncs of one request taken off the sync queue (contract 0.2.0; older
    /// plugins answer [`CallError::Unsupported`]: they sync inside `sync_pod`).
    fn plan_sync_pod(&mut self, request: &SyncRequest) -> Result<Vec<PodSync>>;
    /// Plans one slice of a periodic batch sync (contract 0.2.0; see
    /// [`split_sync::plan_whole_batch`] for all of it at once).
    fn plan_sync_batch(&mut self, slice: &BatchSlice) -> Result<BatchPlan>;
    /// Starts a planned sync (contract 0.2.0).
    fn start_sync(&mut self, id: u64) -> Result<SyncStep>;
    /// Answers the API call a suspended sync asked for (contract 0.2.0).
    fn resume_sync(&mut self, id: u64, reply: ApiReply) -> Result<SyncStep>;
    /// Forgets a planned or suspended sync (contract 0.2.0); false when unknown.
    fn drop_sync(&mut self, id: u64) -> Result<bool>;
    /// The plugin's whole state as a versioned document.
    fn save_state(&mut self) -> Result<String>;
    /// Replaces the plugin's state.
    fn load_state(&mut self, state: &str) -> Result<()>;
    /// What changed since the last save, as a change set.
    fn save_state_changes(&mut self) -> Result<String>;
    /// Applies another instance's change set.
    fn apply_state_changes(&mut self, changes: &str) -> Result<()>;
    /// The world the plugin's imports reach: where the host makes the API calls a 0.2.0
    /// plugin's syncs ask for.
    fn world(&self) -> &World;
    /// Nobody follows this plugin's changes any more (a swap into it is done): a
    /// plugin that keeps them for a follower (the supervisor) drops them.
    fn stop_following(&mut self) {}
    /// The WIT package the plugin implements (`kubelet:status@0.1.0`, ...).
    fn contract(&self) -> Contract;
}
