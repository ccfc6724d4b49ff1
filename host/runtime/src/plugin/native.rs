//! The same logic linked natively: no sandbox, no boundary. For benchmarks (the
//! component's cost is measured against it) and for fuzzing at native speed.
//!
//! Every logic version runs natively, through the one `podstatus_logic::StatusManager`
//! trait the components' glue is written against too. Its imports go through the very
//! functions the component's imports use, so the two differ only by the WebAssembly
//! boundary.

use podstatus_logic as logic;
use podstatus_logic::StatusManager;

use crate::api;
use crate::bindings::kubelet::status::logging::Level;
use crate::bindings::{
    ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, Contract, DeleteOptions, ManagerError,
    PodSync, ResizeCondition, StatusPatch, StatusUpdate, SyncOutcome, SyncRequest, SyncStep, UpdateOutcome,
};
use crate::imports::{deletion_safety, logging, pod_manager};
use crate::plugin::call_error::{CallError, Result};
use crate::plugin::plugin_trait::Plugin;
use crate::world::World;

/// A logic version this checkout links natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogicVersion {
    /// The 2017 status manager (`podstatus-logic-v1`).
    V1,
    /// Kubernetes 1.27's (`podstatus-logic-v2`).
    V2,
    /// 1.27's behaviour, one UID-guarded PATCH per version (`podstatus-logic-v3`).
    V3,
    /// Kubernetes 1.35's, written as v3 writes, with the in-place resize conditions
    /// (`podstatus-logic-v4`).
    V4,
}

/// A logic version's manager over a [`World`], answering as its contract 0.1.x plugin
/// does (each sync's calls made at once, inside the call).
pub struct NativePlugin {
    manager: Box<dyn StatusManager + Send>,
    contract: Contract,
    world: World,
}

impl NativePlugin {
    /// A fresh manager of logic `version` whose imports reach `world`.
    pub fn new(world: World, version: LogicVersion) -> Self {
        let imports = WorldImports { world: world.clone() };
        let (manager, contract): (Box<dyn StatusManager + Send>, _) = match version {
            LogicVersion::V1 => (Box::new(podstatus_logic_v1::Manager::new(imports)), Contract::V0_1_0),
            LogicVersion::V2 => (Box::new(podstatus_logic_v2::Manager::new(imports)), Contract::V0_1_1),
            LogicVersion::V3 => (Box::new(podstatus_logic_v3::Manager::new(imports)), Contract::V0_1_1),
            // No 0.1.x plugin of v4 exists; natively it syncs as the others do (its
            // calls made at once) and answers the resize calls, which 0.1.1 lacks.
            LogicVersion::V4 => (Box::new(podstatus_logic_v4::Manager::new(imports)), Contract::V0_1_1),
        };
        NativePlugin { manager, contract, world }
    }
}

/// `podstatus_logic::Imports` on a [`World`]. A host error that would trap a component
/// (a host bug) panics here: natively there is no sandbox to stop in.
pub struct WorldImports {
    world: World,
}

fn host_bug<T>(result: wasmtime::Result<T>) -> T {
    result.unwrap_or_else(|e| panic!("host import failed: {e:#}"))
}

fn logic_api_error(e: ApiError) -> logic::ApiError {
    match e {
        ApiError::NotFound(m) => logic::ApiError::NotFound(m),
        ApiError::Conflict(m) => logic::ApiError::Conflict(m),
        ApiError::Forbidden(m) => logic::ApiError::Forbidden(m),
        ApiError::Other(m) => logic::ApiError::Other(m),
    }
}

fn wit_level(level: logic::Level) -> Level {
    match level {
        logic::Level::Error => Level::Error,
        logic::Level::Warn => Level::Warn,
        logic::Level::Info => Level::Info,
        logic::Level::Debug => Level::Debug,
        logic::Level::Trace => Level::Trace,
    }
}

impl logic::Imports for WorldImports {
    fn get_pod(&mut self, namespace: &str, name: &str) -> std::result::Result<String, logic::ApiError> {
        host_bug(api::get_pod(&self.world, namespace, name)).map_err(logic_api_error)
    }

    fn update_pod_status(&mut self, update: logic::StatusUpdate) -> std::result::Result<String, logic::ApiError> {
        let update = StatusUpdate {
            namespace: update.namespace,
            name: update.name,
            uid_precondition: update.uid_precondition,
            resource_version_precondition: update.resource_version_precondition,
            status: update.status,
        };
        host_bug(api::update_pod_status(&self.world, update)).map_err(logic_api_error)
    }

    fn patch_pod_status(&mut self, patch: logic::StatusPatch) -> std::result::Result<String, logic::ApiError> {
        let patch = StatusPatch {
            namespace: patch.namespace,
            name: patch.name,
            uid_precondition: patch.uid_precondition,
            patch: patch.patch,
        };
        host_bug(api::patch_pod_status(&self.world, patch)).map_err(logic_api_error)
    }

    fn delete_pod(
        &mut self,
        namespace: &str,
        name: &str,
        options: logic::DeleteOptions,
    ) -> std::result::Result<(), logic::ApiError> {
        let options = DeleteOptions {
            uid_precondition: options.uid_precondition,
            grace_period_seconds: options.grace_period_seconds,
        };
        api::delete_pod(&self.world, namespace, name, options).map_err(logic_api_error)
    }

    fn get_pod_by_uid(&mut self, uid: &str) -> Option<String> {
        host_bug(pod_manager::get_pod_by_uid(&self.world, uid))
    }

    /// Asked by a probe result that changes nothing: the pod manager's answer without
    /// serialising the pod.
    fn has_pod(&mut self, uid: &str) -> bool {
        self.world.pod_manager.get_pod_by_uid(uid).is_some()
    }

    fn get_mirror_pod_by_pod(&mut self, pod_json: &str) -> Option<String> {
        host_bug(pod_manager::get_mirror_pod_by_pod(&self.world, pod_json))
    }

    fn translate_pod_uid(&mut self, uid: &str) -> String {
        self.world.pod_manager.translate_pod_uid(uid)
    }

    fn get_uid_translations(&mut self) -> logic::UidTranslations {
        let t = pod_manager::get_uid_translations(&self.world);
        logic::UidTranslations { pod_to_mirror: t.pod_to_mirror, mirror_to_pod: t.mirror_to_pod }
    }

    fn pod_resources_are_reclaimed(&mut self, pod_json: &str, status_json: &str) -> bool {
        host_bug(deletion_safety::pod_resources_are_reclaimed(&self.world, pod_json, status_json))
    }

    fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool {
        host_bug(deletion_safety::pod_could_have_running_containers(&self.world, pod_json))
    }

    fn now(&mut self) -> logic::Timestamp {
        let now = self.world.clock.now();
        logic::Timestamp { seconds: now.seconds, nanoseconds: now.nanoseconds }
    }

    fn log(&mut self, level: logic::Level, message: &str) {
        logging::log(wit_level(level), message);
    }

    fn log_enabled(&mut self, level: logic::Level) -> bool {
        logging::enabled(wit_level(level))
    }

    fn push_sync_request(&mut self, request: logic::SyncRequest) -> bool {
        self.world.queue.push(SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version })
    }
}

fn rejected(call: &'static str) -> impl FnOnce(logic::ManagerError) -> CallError {
    move |e| CallError::Rejected {
        call,
        error: match e {
            logic::ManagerError::InvalidPod(m) => ManagerError::InvalidPod(m),
            logic::ManagerError::InvalidStatus(m) => ManagerError::InvalidStatus(m),
            logic::ManagerError::UnknownRequest(id) => ManagerError::UnknownRequest(id),
            // Only the split sync API (contract 0.2.0) names syncs; the blocking entry
            // points called here never return this.
            logic::ManagerError::UnknownSync(id) => ManagerError::UnknownRequest(id),
            logic::ManagerError::InvalidState(m) => ManagerError::InvalidState(m),
            logic::ManagerError::Unsupported(m) => ManagerError::Unsupported(m),
        },
    }
}

fn update_outcome(o: logic::UpdateOutcome) -> UpdateOutcome {
    match o {
        logic::UpdateOutcome::Queued => UpdateOutcome::Queued,
        logic::UpdateOutcome::QueueFull => UpdateOutcome::QueueFull,
        logic::UpdateOutcome::Unchanged => UpdateOutcome::Unchanged,
        logic::UpdateOutcome::PodNotFound => UpdateOutcome::PodNotFound,
        logic::UpdateOutcome::NotCached => UpdateOutcome::NotCached,
        logic::UpdateOutcome::UnknownContainer => UpdateOutcome::UnknownContainer,
    }
}

fn sync_outcome(o: logic::SyncOutcome) -> SyncOutcome {
    match o {
        logic::SyncOutcome::UpToDate => SyncOutcome::UpToDate,
        logic::SyncOutcome::PodNotFound => SyncOutcome::PodNotFound,
        logic::SyncOutcome::GetFailed => SyncOutcome::GetFailed,
        logic::SyncOutcome::Recreated => SyncOutcome::Recreated,
        logic::SyncOutcome::WriteFailed => SyncOutcome::WriteFailed,
        logic::SyncOutcome::Written => SyncOutcome::Written,
        logic::SyncOutcome::Deleted => SyncOutcome::Deleted,
        logic::SyncOutcome::DeleteFailed => SyncOutcome::DeleteFailed,
    }
}

impl Plugin for NativePlugin {
    fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        let found = self.manager.get_pod_status(uid).map_err(rejected("get-pod-status"))?;
        Ok(found.map(|c| CachedStatus { version: c.version, status: c.status }))
    }

    fn set_pod_status(&mut self, pod: &str, status: &str) -> Result<UpdateOutcome> {
        self.manager.set_pod_status(pod, status).map(update_outcome).map_err(rejected("set-pod-status"))
    }

    fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        self.manager
            .set_container_readiness(pod_uid, container_id, ready)
            .map(update_outcome)
            .map_err(rejected("set-container-readiness"))
    }

    fn terminate_pod(&mut self, pod: &str) -> Result<UpdateOutcome> {
        self.manager.terminate_pod(pod).map(update_outcome).map_err(rejected("terminate-pod"))
    }

    fn remove_orphaned_statuses(&mut self, keep: &[String]) -> Result<u32> {
        Ok(self.manager.remove_orphaned_statuses(keep))
    }

    fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        let request = logic::SyncRequest { id: request.id, pod_uid: request.pod_uid.clone(), version: request.version };
        self.manager.sync_pod(&request).map(sync_outcome).map_err(rejected("sync-pod"))
    }

    fn sync_batch(&mut self) -> Result<BatchReport> {
        let r = self.manager.sync_batch();
        Ok(BatchReport { synced: r.synced, reconciled: r.reconciled, failed: r.failed })
    }

    fn save_state(&mut self) -> Result<String> {
        self.manager.save_state().map_err(rejected("save-state"))
    }

    fn load_state(&mut self, state: &str) -> Result<()> {
        self.manager.load_state(state).map_err(rejected("load-state"))
    }

    fn save_state_changes(&mut self) -> Result<String> {
        self.manager.save_state_changes().map_err(rejected("save-state-changes"))
    }

    fn apply_state_changes(&mut self, changes: &str) -> Result<()> {
        self.manager.apply_state_changes(changes).map_err(rejected("apply-state-changes"))
    }

    fn plan_sync_pod(&mut self, _request: &SyncRequest) -> Result<Vec<PodSync>> {
        Err(CallError::Unsupported { call: "sync-pod", contract: self.contract() })
    }

    fn plan_sync_batch(&mut self, _slice: &BatchSlice) -> Result<BatchPlan> {
        Err(CallError::Unsupported { call: "sync-batch", contract: self.contract() })
    }

    fn start_sync(&mut self, _id: u64) -> Result<SyncStep> {
        Err(CallError::Unsupported { call: "start-sync", contract: self.contract() })
    }

    fn resume_sync(&mut self, _id: u64, _reply: ApiReply) -> Result<SyncStep> {
        Err(CallError::Unsupported { call: "resume-sync", contract: self.contract() })
    }

    fn world(&self) -> &World {
        &self.world
    }

    fn drop_sync(&mut self, _id: u64) -> Result<bool> {
        Err(CallError::Unsupported { call: "drop-sync", contract: self.contract() })
    }

    fn set_container_startup(&mut self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome> {
        // Contract 0.1.0 (logic v1's) has no such export.
        if self.contract == Contract::V0_1_0 {
            return Err(CallError::Unsupported { call: "set-container-startup", contract: self.contract });
        }
        self.manager
            .set_container_startup(pod_uid, container_id, started)
            .map(update_outcome)
            .map_err(rejected("set-container-startup"))
    }

    fn set_pod_resize_condition(
        &mut self,
        pod_uid: &str,
        condition: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()> {
        const CALL: &str = "set-pod-resize-condition";
        self.manager
            .set_pod_resize_condition(pod_uid, logic_condition(condition), reason, message, observed_generation)
            .map_err(|e| resize_refused(CALL, self.contract, e))
    }

    fn clear_pod_resize_condition(&mut self, pod_uid: &str, condition: ResizeCondition) -> Result<bool> {
        const CALL: &str = "clear-pod-resize-condition";
        self.manager
            .clear_pod_resize_condition(pod_uid, logic_condition(condition))
            .map_err(|e| resize_refused(CALL, self.contract, e))
    }

    fn get_pod_resize_conditions(&mut self, pod_uid: &str) -> Result<Vec<String>> {
        const CALL: &str = "get-pod-resize-conditions";
        self.manager.get_pod_resize_conditions(pod_uid).map_err(|e| resize_refused(CALL, self.contract, e))
    }

    fn contract(&self) -> Contract {
        self.contract
    }
}

/// The host's resize condition as the logic's.
fn logic_condition(condition: ResizeCondition) -> logic::ResizeCondition {
    match condition {
        ResizeCondition::Pending => logic::ResizeCondition::Pending,
        ResizeCondition::InProgress => logic::ResizeCondition::InProgress,
    }
}

/// A resize call the logic refused: a version without in-place resize says
/// `unsupported`, as its component does (the host's typed "unsupported").
fn resize_refused(call: &'static str, contract: Contract, e: logic::ManagerError) -> CallError {
    match e {
        logic::ManagerError::Unsupported(_) => CallError::Unsupported { call, contract },
        e => rejected(call)(e),
    }
}
