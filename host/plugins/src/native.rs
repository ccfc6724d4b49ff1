//! The same logic linked natively: no sandbox, no boundary. For benchmarks (the
//! component's cost is measured against it) and for fuzzing at native speed.
//!
//! Every logic version runs natively, through the one `podstatus_logic::StatusManager`
//! trait the components' glue is written against too. Its imports go through the very
//! functions the component's imports use ([`HostImports`]), so the two differ only by
//! the WebAssembly boundary.

use podstatus_logic as logic;
use podstatus_logic::StatusManager;
use podstatus_runtime::bindings::{
    BatchReport, CachedStatus, Contract, ManagerError, ResizeCondition, SyncOutcome, UpdateOutcome,
};
use podstatus_runtime::{Call, CallError, HostImports, Plugin, Reply, Result, World};

use crate::logic_version::LogicVersion;
use crate::native_imports::WorldImports;

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
        let imports = WorldImports { host: HostImports::new(world.clone()) };
        let (manager, contract) = version.native(imports);
        NativePlugin { manager, contract, world }
    }
}

impl Plugin for NativePlugin {
    fn call(&mut self, call: Call<'_>) -> Result<Reply> {
        // The call's name only for an error: an answer does not pay for it.
        let name = || call.name();
        let rejected = |e| rejected(name())(e);
        let manager = &mut self.manager;
        match call {
            Call::GetPodStatus { uid } => {
                let found = manager.get_pod_status(uid).map_err(rejected)?;
                Ok(Reply::Status(found.map(|c| CachedStatus { version: c.version, status: c.status })))
            }
            Call::SetPodStatus { pod, status } => manager.set_pod_status(pod, status).map(update).map_err(rejected),
            Call::SetContainerReadiness { pod_uid, container_id, ready } => {
                manager.set_container_readiness(pod_uid, container_id, ready).map(update).map_err(rejected)
            }
            // Contract 0.1.0 (logic v1's) has no such export.
            Call::SetContainerStartup { .. } if self.contract == Contract::V0_1_0 => {
                Err(CallError::Unsupported { call: name(), contract: self.contract })
            }
            Call::SetContainerStartup { pod_uid, container_id, started } => {
                manager.set_container_startup(pod_uid, container_id, started).map(update).map_err(rejected)
            }
            Call::SetPodResizeCondition { pod_uid, condition, reason, message, observed_generation } => manager
                .set_pod_resize_condition(pod_uid, logic_condition(condition), reason, message, observed_generation)
                .map(Reply::Done)
                .map_err(|e| resize_refused(name(), self.contract, e)),
            Call::ClearPodResizeCondition { pod_uid, condition } => manager
                .clear_pod_resize_condition(pod_uid, logic_condition(condition))
                .map(Reply::Flag)
                .map_err(|e| resize_refused(name(), self.contract, e)),
            Call::GetPodResizeConditions { pod_uid } => manager
                .get_pod_resize_conditions(pod_uid)
                .map(Reply::Conditions)
                .map_err(|e| resize_refused(name(), self.contract, e)),
            Call::TerminatePod { pod } => manager.terminate_pod(pod).map(update).map_err(rejected),
            Call::RemoveOrphanedStatuses { keep } => Ok(Reply::Count(manager.remove_orphaned_statuses(keep))),
            Call::SyncPod { request } => {
                let request =
                    logic::SyncRequest { id: request.id, pod_uid: request.pod_uid.clone(), version: request.version };
                manager.sync_pod(&request).map(|o| Reply::Synced(sync_outcome(o))).map_err(rejected)
            }
            Call::SyncBatch {} => {
                let r = manager.sync_batch();
                Ok(Reply::Batch(BatchReport { synced: r.synced, reconciled: r.reconciled, failed: r.failed }))
            }
            // It answers as a 0.1.x plugin does: its syncs are not split.
            Call::PlanSyncPod { .. }
            | Call::PlanSyncBatch { .. }
            | Call::StartSync { .. }
            | Call::ResumeSync { .. }
            | Call::DropSync { .. } => Err(CallError::Unsupported { call: name(), contract: self.contract }),
            Call::SaveState {} => manager.save_state().map(Reply::Document).map_err(rejected),
            Call::LoadState { state } => manager.load_state(state).map(Reply::Done).map_err(rejected),
            Call::SaveStateChanges {} => manager.save_state_changes().map(Reply::Document).map_err(rejected),
            Call::ApplyStateChanges { changes } => {
                manager.apply_state_changes(changes).map(Reply::Done).map_err(rejected)
            }
        }
    }

    fn world(&self) -> &World {
        &self.world
    }

    fn contract(&self) -> Contract {
        self.contract
    }
}

/// A status update's outcome as the host's reply.
fn update(o: logic::UpdateOutcome) -> Reply {
    Reply::Update(update_outcome(o))
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
