//! The status manager as a WebAssembly component of `kubelet:status@0.2.0`: glue
//! between the contract and one logic crate, and nothing else.
//!
//! One source for every logic version: the feature `logic-v1`, `logic-v2` or
//! `logic-v3` picks the crate (`logic` below), and `host/runtime/build.rs` builds the
//! component once per feature. In this contract the plugin never calls the API server:
//! `sync-pod` and `sync-batch` plan syncs, and the host runs each with `start-sync` and
//! `resume-sync`, making the calls it asks for.

use std::cell::RefCell;

use podstatus_logic::{ApiError, PodSync, SyncOrigin, SyncStep};

#[cfg(not(any(feature = "logic-v1", feature = "logic-v2", feature = "logic-v3")))]
compile_error!("build podstatus-plugin with exactly one of the features logic-v1, logic-v2, logic-v3");
#[cfg(any(
    all(feature = "logic-v1", feature = "logic-v2"),
    all(feature = "logic-v1", feature = "logic-v3"),
    all(feature = "logic-v2", feature = "logic-v3"),
))]
compile_error!("podstatus-plugin carries one logic: enable only one of logic-v1, logic-v2, logic-v3");

#[cfg(feature = "logic-v1")]
use podstatus_logic as logic;
#[cfg(feature = "logic-v2")]
use podstatus_logic_v2 as logic;
#[cfg(feature = "logic-v3")]
use podstatus_logic_v3 as logic;

use logic::{Level, Manager, ManagerError, SyncOutcome, UpdateOutcome};

mod calls;
#[cfg(feature = "failpoints")]
#[path = "../../component/src/failpoints.rs"]
#[allow(dead_code)]
mod failpoints;
mod imports;
#[path = "../../glue/outcomes.rs"]
mod outcomes;
use outcomes::{sync_outcome, update_outcome};

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../wit/status@0.2.0",
});

use exports::kubelet::status::manager as wit;

thread_local! {
    /// The one manager of this instance. The host serialises calls, so the borrow is
    /// never contended; none is held across calls.
    static MANAGER: RefCell<Manager<imports::WitImports>> = RefCell::new(Manager::new(imports::WitImports));
}

fn with_manager<T>(f: impl FnOnce(&mut Manager<imports::WitImports>) -> T) -> T {
    MANAGER.with(|m| f(&mut m.borrow_mut()))
}

struct Component;

impl wit::Guest for Component {
    fn get_pod_status(uid: String) -> Option<wit::CachedStatus> {
        match with_manager(|m| m.get_pod_status(&uid)) {
            Ok(found) => found.map(|c| wit::CachedStatus { version: c.version, status: c.status }),
            Err(e) => {
                imports::log(Level::Error, &format!("get-pod-status {uid}: {e}"));
                None
            }
        }
    }

    fn set_pod_status(pod: String, status: String) -> Result<wit::UpdateOutcome, wit::ManagerError> {
        with_manager(|m| m.set_pod_status(&pod, &status)).map(update_outcome).map_err(manager_error)
    }

    fn set_container_readiness(
        pod_uid: String,
        container_id: String,
        ready: bool,
    ) -> Result<wit::UpdateOutcome, wit::ManagerError> {
        with_manager(|m| m.set_container_readiness(&pod_uid, &container_id, ready))
            .map(update_outcome)
            .map_err(manager_error)
    }

    #[cfg(feature = "logic-v1")]
    fn set_container_startup(_: String, _: String, _: bool) -> Result<wit::UpdateOutcome, wit::ManagerError> {
        Err(wit::ManagerError::Unsupported(
            "set-container-startup: logic v1 (the 2017 status manager) has no startup probes".into(),
        ))
    }

    #[cfg(not(feature = "logic-v1"))]
    fn set_container_startup(
        pod_uid: String,
        container_id: String,
        started: bool,
    ) -> Result<wit::UpdateOutcome, wit::ManagerError> {
        with_manager(|m| m.set_container_startup(&pod_uid, &container_id, started))
            .map(update_outcome)
            .map_err(manager_error)
    }

    fn terminate_pod(pod: String) -> Result<wit::UpdateOutcome, wit::ManagerError> {
        with_manager(|m| m.terminate_pod(&pod)).map(update_outcome).map_err(manager_error)
    }

    fn remove_orphaned_statuses(keep: Vec<String>) -> u32 {
        with_manager(|m| m.remove_orphaned_statuses(&keep))
    }

    fn sync_pod(request: wit::SyncRequest) -> Result<Vec<wit::PodSync>, wit::ManagerError> {
        let request = logic::SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version };
        let syncs = with_manager(|m| m.plan_sync_pod(&request)).map_err(manager_error)?;
        Ok(syncs.into_iter().map(pod_sync).collect())
    }

    fn sync_batch(slice: wit::BatchSlice) -> wit::BatchPlan {
        let slice = logic::BatchSlice { after: slice.after, max_pods: slice.max_pods as usize };
        let plan = with_manager(|m| m.plan_sync_batch(&slice));
        let r = plan.report;
        wit::BatchPlan {
            report: wit::BatchReport { synced: r.synced, reconciled: r.reconciled, failed: r.failed },
            syncs: plan.syncs.into_iter().map(pod_sync).collect(),
            next: plan.next,
        }
    }

    fn start_sync(sync: u64) -> Result<wit::SyncStep, wit::ManagerError> {
        #[cfg(feature = "failpoints")]
        failpoints::hit(failpoints::START_SYNC);
        with_manager(|m| m.start_sync(sync)).map(sync_step).map_err(manager_error)
    }

    fn resume_sync(sync: u64, reply: wit::ApiReply) -> Result<wit::SyncStep, wit::ManagerError> {
        #[cfg(feature = "failpoints")]
        failpoints::hit(failpoints::RESUME_SYNC);
        let reply = calls::api_reply(reply);
        with_manager(|m| m.resume_sync(sync, reply)).map(sync_step).map_err(manager_error)
    }

    fn drop_sync(sync: u64) -> bool {
        with_manager(|m| m.drop_sync(sync))
    }

    fn save_state() -> String {
        // Serialising our own types cannot fail; if it ever did, an empty document
        // would lose state silently, so trap instead: the host keeps its last copy.
        with_manager(|m| m.save_state()).unwrap_or_else(|e| panic!("save-state: {e}"))
    }

    fn load_state(state: String) -> Result<(), wit::ManagerError> {
        with_manager(|m| m.load_state(&state)).map_err(manager_error)
    }

    fn save_state_changes() -> String {
        // As for save-state: losing changes silently would be worse than trapping.
        with_manager(|m| m.save_state_changes()).unwrap_or_else(|e| panic!("save-state-changes: {e}"))
    }

    fn apply_state_changes(changes: String) -> Result<(), wit::ManagerError> {
        with_manager(|m| m.apply_state_changes(&changes)).map_err(manager_error)
    }
}

fn pod_sync(sync: PodSync) -> wit::PodSync {
    let origin = match sync.origin {
        SyncOrigin::Request => wit::SyncOrigin::Request,
        SyncOrigin::Pass => wit::SyncOrigin::Pass,
        SyncOrigin::Batch => wit::SyncOrigin::Batch,
    };
    wit::PodSync { id: sync.id, pod_uid: sync.pod_uid, origin }
}

fn sync_step(step: SyncStep) -> wit::SyncStep {
    match step {
        SyncStep::Call(call) => wit::SyncStep::Call(calls::api_call(call)),
        SyncStep::Done(outcome) => wit::SyncStep::Done(sync_outcome(outcome)),
    }
}

fn manager_error(e: ManagerError) -> wit::ManagerError {
    match e {
        ManagerError::InvalidPod(m) => wit::ManagerError::InvalidPod(m),
        ManagerError::InvalidStatus(m) => wit::ManagerError::InvalidStatus(m),
        ManagerError::UnknownRequest(id) => wit::ManagerError::UnknownRequest(id),
        ManagerError::UnknownSync(id) => wit::ManagerError::UnknownSync(id),
        ManagerError::InvalidState(m) => wit::ManagerError::InvalidState(m),
    }
}

/// Why an API-server method of the logic's imports fails in this build: the host makes
/// the calls (`sync-step.call`), so the logic never reaches these; if it ever did, the
/// sync fails as a failed call would, rather than trapping the instance.
fn no_api_server(call: &str) -> ApiError {
    ApiError::Other(format!("{call}: contract 0.2.0 has no api-server import; a sync asks the host to make its calls"))
}

export!(Component);
