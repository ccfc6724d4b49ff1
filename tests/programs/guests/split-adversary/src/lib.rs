//! A hostile plugin of contract 0.2.0, to prove the host bounds what a split sync hands
//! it: the host makes the calls a sync asks for and drives batches by a cursor the
//! plugin returns, so every one of those answers is the plugin's to forge.
//!
//! It caches nothing. Each `set-pod-status` remembers the pod's UID (one the host
//! handed over) and picks the attack by the pod's name:
//! - `stuck-cursor`: `sync-batch` answers every slice with `next` set to that UID, so
//!   the second slice's `next` does not move past its start;
//! - `made-up-cursor`: `sync-batch` answers with `next` a UID never handed over;
//! - `foreign-plan`: `sync-batch` and `sync-pod` plan a sync of a UID never handed over;
//! - `huge-call`: `sync-pod` plans an honest sync, whose `start-sync` asks for a GET of
//!   a 5 MiB pod name (over the default boundary limit of 4 MiB);
//!
//! and anything else gets honest, empty answers.

use std::cell::RefCell;

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../../../wit/status@0.2.0",
});

use exports::kubelet::status::manager::{
    ApiCall, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, Guest, ManagerError, PodSync, SyncOrigin,
    SyncOutcome, SyncStep, UpdateOutcome,
};
use kubelet::status::api::PodName;
use kubelet::status::types::SyncRequest;

thread_local! {
    /// The attack (the last pod's name) and the UID of that pod.
    static TARGET: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
}

/// The string value of the first `"key": "..."` in `json` (whatever the spacing).
fn string_field(json: &str, key: &str) -> String {
    let quoted = format!("\"{key}\"");
    let Some(at) = json.find(&quoted) else { return String::new() };
    let rest = &json[at + quoted.len()..];
    let Some(open) = rest.find('"') else { return String::new() };
    let value = &rest[open + 1..];
    value[..value.find('"').unwrap_or(value.len())].to_string()
}

fn attack() -> (String, String) {
    TARGET.with(|t| t.borrow().clone())
}

const MADE_UP: &str = "uid-the-host-never-handed-over";

struct Adversary;

impl Guest for Adversary {
    fn get_pod_status(_uid: String) -> Option<CachedStatus> {
        None
    }

    fn set_pod_status(pod: String, _status: String) -> Result<UpdateOutcome, ManagerError> {
        let target = (string_field(&pod, "name"), string_field(&pod, "uid"));
        TARGET.with(|t| *t.borrow_mut() = target);
        Ok(UpdateOutcome::Unchanged)
    }

    fn set_container_readiness(_: String, _: String, _: bool) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::NotCached)
    }

    fn set_container_startup(_: String, _: String, _: bool) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::NotCached)
    }

    fn terminate_pod(_pod: String) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::NotCached)
    }

    fn remove_orphaned_statuses(_keep: Vec<String>) -> u32 {
        0
    }

    fn sync_pod(request: SyncRequest) -> Result<Vec<PodSync>, ManagerError> {
        let (name, _) = attack();
        let pod_uid = if name == "foreign-plan" { MADE_UP.to_string() } else { request.pod_uid };
        Ok(vec![PodSync { id: 1, pod_uid, origin: SyncOrigin::Request }])
    }

    fn sync_batch(slice: BatchSlice) -> BatchPlan {
        let (name, uid) = attack();
        let report = BatchReport { synced: 0, reconciled: 0, failed: 0 };
        let (syncs, next) = match name.as_str() {
            "stuck-cursor" => (Vec::new(), Some(uid)),
            "made-up-cursor" => (Vec::new(), Some(MADE_UP.to_string())),
            "foreign-plan" => (vec![PodSync { id: 2, pod_uid: MADE_UP.into(), origin: SyncOrigin::Batch }], None),
            _ => (Vec::new(), None),
        };
        let _ = slice;
        BatchPlan { report, syncs, next }
    }

    fn start_sync(_sync: u64) -> Result<SyncStep, ManagerError> {
        let (name, _) = attack();
        if name == "huge-call" {
            let name = "n".repeat(5 << 20);
            return Ok(SyncStep::Call(ApiCall::GetPod(PodName { namespace: "ns".into(), name })));
        }
        Ok(SyncStep::Done(SyncOutcome::UpToDate))
    }

    fn resume_sync(_sync: u64, _reply: ApiReply) -> Result<SyncStep, ManagerError> {
        Ok(SyncStep::Done(SyncOutcome::UpToDate))
    }

    fn drop_sync(_sync: u64) -> bool {
        true
    }

    fn save_state() -> String {
        r#"{"format":"podstatus.kubelet.io/state","version":2,"statuses":{},"apiStatusVersions":{},"pending":{},"nextRequestId":1}"#.into()
    }

    fn load_state(_state: String) -> Result<(), ManagerError> {
        Ok(())
    }

    fn save_state_changes() -> String {
        r#"{"format":"podstatus.kubelet.io/state-changes","version":2}"#.into()
    }

    fn apply_state_changes(_changes: String) -> Result<(), ManagerError> {
        Ok(())
    }
}

export!(Adversary);
