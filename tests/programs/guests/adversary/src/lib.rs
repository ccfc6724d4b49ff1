//! Plugins that misbehave, one way per feature, to prove the host contains them.
//!
//! Every adversary accepts statuses (queuing a request for each) and otherwise answers
//! plausibly; the feature decides where it goes wrong:
//! - `trap-on-sync`: panics as soon as `sync-pod` is called;
//! - `trap-mid-sync`: reads the pod from the API server, then panics before writing;
//! - `infinite-loop`: `set-pod-status` never returns;
//! - `memory-bomb`: `set-pod-status` allocates without bound;
//! - `stack-overflow`: `set-pod-status` recurses without bound;
//! - `garbage-output`: `get-pod-status` returns a status that is not JSON;
//! - `huge-output`: `get-pod-status` returns a 8 MiB status;
//! - `absurd-import`: `set-pod-status` calls `get-pod` with a 8 MiB namespace;
//! - `refuse-state`: `load-state` refuses every document;
//! - `trap-on-load`: `load-state` panics.
//!
//! Every adversary answers `load-state` with "ok" and keeps nothing, unless one of the
//! last two features says otherwise: a host must check that a new plugin took the
//! state before it takes over.

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

/// Enough to be absurd for any boundary limit a host would set.
const HUGE: usize = 8 << 20;

struct Adversary;

impl Guest for Adversary {
    fn get_pod_status(_uid: String) -> Option<CachedStatus> {
        if cfg!(feature = "garbage-output") {
            return Some(CachedStatus { version: 1, status: "{\"phase\": \"Running\", oops".into() });
        }
        if cfg!(feature = "huge-output") {
            return Some(CachedStatus { version: 1, status: format!("\"{}\"", "x".repeat(HUGE)) });
        }
        None
    }

    fn set_pod_status(_pod: String, _status: String) -> Result<UpdateOutcome, ManagerError> {
        if cfg!(feature = "infinite-loop") {
            let mut spins: u64 = 0;
            loop {
                spins = std::hint::black_box(spins.wrapping_add(1));
            }
        }
        if cfg!(feature = "memory-bomb") {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        if cfg!(feature = "stack-overflow") {
            return Ok(if recurse(1) > 0 { UpdateOutcome::Queued } else { UpdateOutcome::Unchanged });
        }
        if cfg!(feature = "absurd-import") {
            let _ = kubelet::status::api_server::get_pod(&"n".repeat(HUGE), "pod");
        }
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
        if cfg!(feature = "trap-on-sync") {
            panic!("adversary: refusing to sync {}", request.pod_uid);
        }
        if cfg!(feature = "trap-mid-sync") {
            let _ = kubelet::status::api_server::get_pod("default", &request.pod_uid);
            panic!("adversary: read {} and gave up before writing", request.pod_uid);
        }
        Ok(SyncOutcome::UpToDate)
    }

    fn sync_batch() -> BatchReport {
        BatchReport { synced: 0, reconciled: 0, failed: 0 }
    }

    fn save_state() -> String {
        "{}".to_string()
    }

    fn load_state(_state: String) -> Result<(), ManagerError> {
        if cfg!(feature = "trap-on-load") {
            panic!("adversary: loading state");
        }
        if cfg!(feature = "refuse-state") {
            return Err(ManagerError::InvalidState("adversary: no state accepted here".into()));
        }
        Ok(())
    }

    fn save_state_changes() -> String {
        "{}".to_string()
    }

    fn apply_state_changes(_changes: String) -> Result<(), ManagerError> {
        Ok(())
    }
}

/// Recursion the optimiser cannot turn into a loop, in WebAssembly frames only (no
/// locals in linear memory), so it exhausts the engine's call stack.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    if std::hint::black_box(depth) == 0 { 0 } else { recurse(depth + 1).wrapping_add(std::hint::black_box(depth)) }
}

export!(Adversary);
