//! Logic v2 as a WebAssembly component: glue between the `kubelet:status@0.1.1`
//! contract and `podstatus-logic-v2`, and nothing else. `guest/component-v3` builds this
//! same source against logic v3, which has the same surface.

use std::cell::RefCell;

use podstatus_logic_v2::{ApiError, Level, Manager, ManagerError, SyncOutcome, UpdateOutcome};

mod imports;
#[path = "../../glue/outcomes.rs"]
mod outcomes;
use outcomes::{sync_outcome, update_outcome};

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../wit/status@0.1.1",
});

use exports::kubelet::status::manager as wit;

thread_local! {
    /// The one manager of this instance. The host serialises calls, so the borrow is
    /// never contended.
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

    fn sync_pod(request: wit::SyncRequest) -> Result<wit::SyncOutcome, wit::ManagerError> {
        let request =
            podstatus_logic_v2::SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version };
        with_manager(|m| m.sync_pod(&request)).map(sync_outcome).map_err(manager_error)
    }

    fn sync_batch() -> wit::BatchReport {
        let r = with_manager(|m| m.sync_batch());
        wit::BatchReport { synced: r.synced, reconciled: r.reconciled, failed: r.failed }
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

fn manager_error(e: ManagerError) -> wit::ManagerError {
    match e {
        ManagerError::InvalidPod(m) => wit::ManagerError::InvalidPod(m),
        ManagerError::InvalidStatus(m) => wit::ManagerError::InvalidStatus(m),
        ManagerError::UnknownRequest(id) => wit::ManagerError::UnknownRequest(id),
        // Only the split sync API of contract 0.2.0 names syncs; the blocking entry
        // points this contract calls never return it.
        ManagerError::UnknownSync(id) => wit::ManagerError::UnknownRequest(id),
        ManagerError::InvalidState(m) => wit::ManagerError::InvalidState(m),
    }
}

fn api_error(e: kubelet::status::api_server::ApiError) -> ApiError {
    use kubelet::status::api_server::ApiError as Wit;
    match e {
        Wit::NotFound(m) => ApiError::NotFound(m),
        Wit::Conflict(m) => ApiError::Conflict(m),
        Wit::Forbidden(m) => ApiError::Forbidden(m),
        Wit::Other(m) => ApiError::Other(m),
    }
}

export!(Component);
