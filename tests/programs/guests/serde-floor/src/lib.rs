//! The floor of the sandbox for the status manager's work, for the operations bench: a
//! plugin of contract 0.1.0 whose `set-pod-status` parses the status into k8s-openapi's
//! `PodStatus` and serialises it again with serde_json, and does nothing else. The bench
//! times it in the sandbox beside the same two lines natively (`serde-floor`): what
//! the sandbox costs this kind of work, with nothing of the status manager in it.
//!
//! `set-pod-status` answers `unchanged` (an `invalid-status` for what is not a
//! PodStatus) and keeps the text it wrote, which `get-pod-status` answers for any UID
//! (version 1), so a test can hold it to serde_json's. Every other call does nothing.

use std::cell::RefCell;

use k8s_openapi::api::core::v1::PodStatus;

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../../../wit/status@0.1.0",
});

use exports::kubelet::status::manager::{BatchReport, CachedStatus, Guest, ManagerError, SyncOutcome, UpdateOutcome};
use kubelet::status::types::SyncRequest;

thread_local! {
    /// The text the last `set-pod-status` wrote.
    static WRITTEN: RefCell<Option<String>> = const { RefCell::new(None) };
}

struct SerdeFloor;

impl Guest for SerdeFloor {
    fn get_pod_status(_uid: String) -> Option<CachedStatus> {
        WRITTEN.with(|w| w.borrow().clone()).map(|status| CachedStatus { version: 1, status })
    }

    fn set_pod_status(_pod: String, status: String) -> Result<UpdateOutcome, ManagerError> {
        let parsed: PodStatus =
            serde_json::from_str(&status).map_err(|e| ManagerError::InvalidStatus(format!("not a PodStatus: {e}")))?;
        let text = serde_json::to_string(&parsed).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        WRITTEN.with(|w| *w.borrow_mut() = Some(text));
        Ok(UpdateOutcome::Unchanged)
    }

    fn set_container_readiness(_: String, _: String, _: bool) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::NotCached)
    }

    fn terminate_pod(_: String) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::Unchanged)
    }

    fn remove_orphaned_statuses(_: Vec<String>) -> u32 {
        0
    }

    fn sync_pod(request: SyncRequest) -> Result<SyncOutcome, ManagerError> {
        Err(ManagerError::UnknownRequest(request.id))
    }

    fn sync_batch() -> BatchReport {
        BatchReport { synced: 0, reconciled: 0, failed: 0 }
    }

    fn save_state() -> String {
        r#"{"format":"podstatus.kubelet.io/state","version":2,"statuses":{},"apiStatusVersions":{},"pending":{},"nextRequestId":1}"#.into()
    }

    fn load_state(_: String) -> Result<(), ManagerError> {
        Ok(())
    }

    fn save_state_changes() -> String {
        r#"{"format":"podstatus.kubelet.io/state-changes","version":2,"patch":{"statuses":{},"apiStatusVersions":{},"pending":{},"nextRequestId":1}}"#.into()
    }

    fn apply_state_changes(_: String) -> Result<(), ManagerError> {
        Ok(())
    }
}

export!(SerdeFloor);
