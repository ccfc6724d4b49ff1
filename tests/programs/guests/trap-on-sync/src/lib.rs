//! Accepts every status (queuing a request for it) and traps in `sync-pod`: the host
//! must report the faulting call and keep serving.

use std::cell::Cell;

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../../../wit/status@0.1.0",
});

use exports::kubelet::status::manager::{BatchReport, CachedStatus, Guest, ManagerError, SyncOutcome, UpdateOutcome};
use kubelet::status::types::SyncRequest;

thread_local! {
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

struct TrapOnSync;

impl Guest for TrapOnSync {
    fn get_pod_status(_uid: String) -> Option<CachedStatus> {
        None
    }

    fn set_pod_status(_pod: String, _status: String) -> Result<UpdateOutcome, ManagerError> {
        let id = NEXT_ID.with(|n| n.replace(n.get() + 1));
        let request = SyncRequest { id, pod_uid: format!("pod-{id}"), version: 1 };
        Ok(if kubelet::status::sync_queue::push(&request) { UpdateOutcome::Queued } else { UpdateOutcome::QueueFull })
    }

    fn set_container_readiness(
        _pod_uid: String,
        _container_id: String,
        _ready: bool,
    ) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::NotCached)
    }

    fn terminate_pod(_pod: String) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::Unchanged)
    }

    fn remove_orphaned_statuses(_keep: Vec<String>) -> u32 {
        0
    }

    fn sync_pod(request: SyncRequest) -> Result<SyncOutcome, ManagerError> {
        panic!("trap-on-sync: refusing to sync {}", request.pod_uid)
    }

    fn sync_batch() -> BatchReport {
        BatchReport { synced: 0, reconciled: 0, failed: 0 }
    }

    fn save_state() -> String {
        "{}".to_string()
    }

    fn load_state(_state: String) -> Result<(), ManagerError> {
        Ok(())
    }

    fn save_state_changes() -> String {
        "{}".to_string()
    }

    fn apply_state_changes(_changes: String) -> Result<(), ManagerError> {
        Ok(())
    }
}

export!(TrapOnSync);
