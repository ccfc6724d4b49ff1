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
//! - `endless-sync`: the sync reads its own pod, and on every answer reads it again;
//! - `wrong-pod`: the sync of that pod asks to read `ns/bystander` (another pod of the
//!   node, which the reach guard lets through);
//! - `traversal`: the sync asks to read the pod named `../kube-system/pods/etcd`;
//! - `fake-deleted`: the sync asks to delete its pod and claims `deleted` whatever the
//!   answer; `fake-recreated`: it reads its pod and claims `recreated` whatever it got;
//! - `reused-id`: every `sync-pod` plans its sync under ID 7;
//! - `repeat-plan`: `sync-pod` plans 100,000 syncs of the pod (distinct IDs);
//! - `million-plan`: `sync-pod` plans 1,000,000 syncs of the pod;
//!
//! and anything else gets honest, empty answers (every sync done at once, whatever ID
//! the host names).

use std::cell::{Cell, RefCell};

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../../../wit/status@0.2.0",
});

use exports::kubelet::status::manager::{
    ApiCall, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, Guest, ManagerError, PodSync, SyncOrigin,
    SyncOutcome, SyncStep, UpdateOutcome,
};
use kubelet::status::api::{DeleteOptions, PodDeletion, PodName};
use kubelet::status::types::SyncRequest;

thread_local! {
    /// The attack (the last pod's name) and the UID of that pod.
    static TARGET: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
    /// The next sync ID it plans (the honest way: never one twice).
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

fn next_id() -> u64 {
    NEXT_ID.with(|n| n.replace(n.get() + 1))
}

/// A read of the pod `name` in `ns`.
fn get(name: &str) -> SyncStep {
    SyncStep::Call(ApiCall::GetPod(PodName { namespace: "ns".into(), name: name.into() }))
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
        // The pod is cached as its attack's target: a change (the host notes a status
        // it hands only once a plugin caches it, or reaches for it during the call).
        Ok(UpdateOutcome::Queued)
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
        let sync = |id| PodSync { id, pod_uid: pod_uid.clone(), origin: SyncOrigin::Request };
        Ok(match name.as_str() {
            "reused-id" => vec![sync(7)],
            "repeat-plan" => (0..100_000).map(|_| sync(next_id())).collect(),
            "million-plan" => (0..1_000_000).map(|_| sync(next_id())).collect(),
            _ => vec![sync(next_id())],
        })
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
        Ok(match name.as_str() {
            "huge-call" => get(&"n".repeat(5 << 20)),
            "endless-sync" | "fake-recreated" => get(&name),
            "wrong-pod" => get("bystander"),
            "traversal" => get("../kube-system/pods/etcd"),
            "fake-deleted" => SyncStep::Call(ApiCall::DeletePod(PodDeletion {
                namespace: "ns".into(),
                name,
                options: DeleteOptions { uid_precondition: None, grace_period_seconds: Some(0) },
            })),
            _ => SyncStep::Done(SyncOutcome::UpToDate),
        })
    }

    fn resume_sync(_sync: u64, _reply: ApiReply) -> Result<SyncStep, ManagerError> {
        let (name, _) = attack();
        Ok(match name.as_str() {
            "endless-sync" => get(&name),
            "fake-deleted" => SyncStep::Done(SyncOutcome::Deleted),
            "fake-recreated" => SyncStep::Done(SyncOutcome::Recreated),
            _ => SyncStep::Done(SyncOutcome::UpToDate),
        })
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
