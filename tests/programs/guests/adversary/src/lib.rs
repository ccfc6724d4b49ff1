//! Plugins that misbehave, one way per feature, to prove the host contains them.
//!
//! Every adversary accepts statuses (queuing a request for each) and otherwise answers
//! plausibly; the feature decides where it goes wrong:
//! - `trap-on-sync`: panics as soon as `sync-pod` is called;
//! - `trap-mid-sync`: reads the pod from the pod manager, then panics before writing;
//! - `infinite-loop`: `set-pod-status` never returns;
//! - `memory-bomb`: `set-pod-status` allocates without bound;
//! - `stack-overflow`: `set-pod-status` recurses without bound;
//! - `garbage-output`: `get-pod-status` returns a status that is not JSON;
//! - `huge-output`: `get-pod-status` returns a 8 MiB status;
//! - `absurd-import`: `set-pod-status` calls `get-pod` with a 8 MiB namespace;
//! - `refuse-state`: `load-state` refuses every document;
//! - `trap-on-load`: `load-state` panics.
//! - `hostile`: chooses its attack at run time (one build for all of them): from the
//!   pod handed to `set-pod-status` (an annotation value `attack=NAME`: `amplify` calls
//!   `get-mirror-pod-by-pod` with a 3 MiB pod until stopped, `chatter` calls `now`
//!   until stopped, `log-flood` logs 5,000 lines of 1,000 bytes, `push-foreign` and
//!   `push-huge` push UIDs it was never handed, `lie-changes` answers `queued` but
//!   reports no status in its change set, `multi-memory` grows three extra memories
//!   by 24 MiB at a time, none of them alone near the limit); otherwise it keeps what it is given, and
//!   lies about it when told by the data: a state document containing `lie-in-load`
//!   is held with every `Running` turned `Pending`, a change set containing
//!   `lie-in-apply` likewise.
//!
//! Every adversary answers `load-state` with "ok" and keeps nothing, unless one of the
//! last two features says otherwise: a host must check that a new plugin took the
//! state before it takes over.

use std::cell::{Cell, RefCell};

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../../../wit/status@0.1.0",
});

use exports::kubelet::status::manager::{BatchReport, CachedStatus, Guest, ManagerError, SyncOutcome, UpdateOutcome};
use kubelet::status::types::SyncRequest;

thread_local! {
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
    /// `hostile`: statuses set (UID, status JSON) since the last change set.
    static SET: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
    /// `hostile`: the state document loaded, as held (and returned by save-state).
    static HELD: RefCell<Option<String>> = const { RefCell::new(None) };
    /// `hostile`: the change set applied since the last save-state-changes, as held.
    static APPLIED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// `hostile`: the last set-pod-status lied.
    static LIED: Cell<bool> = const { Cell::new(false) };
}

const EMPTY_STATE: &str = r#"{"format":"podstatus.kubelet.io/state","version":2,"statuses":{},"apiStatusVersions":{},"pending":{},"nextRequestId":1}"#;

/// The text after `key` up to the next quote.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let start = text.find(key)? + key.len();
    let end = text[start..].find('"')? + start;
    Some(&text[start..end])
}

/// The pod's UID, found in its JSON text (whatever the spacing).
fn uid_of(pod: &str) -> String {
    let Some(at) = pod.find("\"uid\"") else { return String::new() };
    let rest = &pod[at + 5..];
    let Some(open) = rest.find('"') else { return String::new() };
    field(&rest[open..], "\"").unwrap_or("").to_string()
}

/// `hostile`: the attack of `pod`, and its UID.
fn hostile_set(pod: &str, status: &str) -> Result<UpdateOutcome, ManagerError> {
    let uid = uid_of(pod);
    match field(pod, "attack=") {
        Some("amplify") => {
            let big = format!(r#"{{"metadata":{{"name":"x","annotations":{{"pad":"{}"}}}}}}"#, "x".repeat(3 << 20));
            loop {
                std::hint::black_box(kubelet::status::pod_manager::get_mirror_pod_by_pod(&big));
            }
        }
        Some("chatter") => loop {
            std::hint::black_box(kubelet::status::clock::now());
        },
        Some("log-flood") => {
            let line = "l".repeat(1000);
            for _ in 0..5_000 {
                kubelet::status::logging::log(kubelet::status::logging::Level::Error, &line);
            }
        }
        Some("push-foreign") => {
            kubelet::status::sync_queue::push(&SyncRequest { id: 1, pod_uid: "never-handed".into(), version: 1 });
        }
        Some("push-huge") => {
            kubelet::status::sync_queue::push(&SyncRequest { id: 1, pod_uid: "u".repeat(1 << 20), version: 1 });
        }
        Some("multi-memory") => loop {
            for memory in 1..=EXTRA_MEMORIES {
                std::hint::black_box(extra_memory_grow(memory, 384));
            }
        },
        Some("lie-changes") => {
            LIED.set(true);
            return Ok(UpdateOutcome::Queued);
        }
        _ => {}
    }
    SET.with(|s| s.borrow_mut().push((uid.clone(), status.to_string())));
    let id = NEXT_ID.with(|n| n.replace(n.get() + 1));
    let pushed = kubelet::status::sync_queue::push(&SyncRequest { id, pod_uid: uid, version: 1 });
    Ok(if pushed { UpdateOutcome::Queued } else { UpdateOutcome::QueueFull })
}

/// `hostile`: the change set of what was set or applied since the last one.
fn hostile_changes() -> String {
    if let Some(applied) = APPLIED.take() {
        return applied;
    }
    let set = SET.take();
    let statuses: Vec<String> = if LIED.replace(false) {
        Vec::new()
    } else {
        set.iter().map(|(uid, status)| format!(r#""{uid}":{{"version":1,"status":{status}}}"#)).collect()
    };
    format!(
        r#"{{"format":"podstatus.kubelet.io/state-changes","version":2,"patch":{{"statuses":{{{}}},"apiStatusVersions":{{}},"pending":{{}}}}}}"#,
        statuses.join(",")
    )
}

/// `hostile`: memories beside the main one, which `tests/programs/build.rs` adds to the
/// core module (no Rust code can declare or grow a second memory).
const EXTRA_MEMORIES: u32 = 3;

/// `hostile`: grows extra memory `memory` (1 to [`EXTRA_MEMORIES`]) by `pages` of 64 KiB.
///
/// A stand-in: `tests/programs/build.rs` replaces its body with `memory.grow` of that
/// memory and drops the export, which is there only so the build can find it. The
/// volatile write keeps the call from being folded away.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn podstatus_test_extra_memory_grow(memory: u32, pages: u32) -> i32 {
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    CALLS.fetch_add(memory.wrapping_add(pages), std::sync::atomic::Ordering::SeqCst);
    -1
}

fn extra_memory_grow(memory: u32, pages: u32) -> i32 {
    podstatus_test_extra_memory_grow(std::hint::black_box(memory), std::hint::black_box(pages))
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
        if cfg!(feature = "hostile") {
            return hostile_set(&_pod, &_status);
        }
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
        // The host queues only pods it handed over: the pod's own UID.
        let request = SyncRequest { id, pod_uid: uid_of(&_pod), version: 1 };
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
            // A read of the pod manager, not of the API server: the pod's name is not
            // remembered here, and a read by any other name is the host's refusal.
            let _ = kubelet::status::pod_manager::get_pod_by_uid(&request.pod_uid);
            panic!("adversary: read {} and gave up before writing", request.pod_uid);
        }
        Ok(SyncOutcome::UpToDate)
    }

    fn sync_batch() -> BatchReport {
        BatchReport { synced: 0, reconciled: 0, failed: 0 }
    }

    fn save_state() -> String {
        if cfg!(feature = "hostile") {
            SET.take();
            return HELD.with(|h| h.borrow().clone()).unwrap_or_else(|| EMPTY_STATE.to_string());
        }
        "{}".to_string()
    }

    fn load_state(_state: String) -> Result<(), ManagerError> {
        if cfg!(feature = "trap-on-load") {
            panic!("adversary: loading state");
        }
        if cfg!(feature = "refuse-state") {
            return Err(ManagerError::InvalidState("adversary: no state accepted here".into()));
        }
        if cfg!(feature = "hostile") {
            let held = if _state.contains("lie-in-load") { _state.replace("Running", "Pending") } else { _state };
            HELD.set(Some(held));
        }
        Ok(())
    }

    fn save_state_changes() -> String {
        if cfg!(feature = "hostile") {
            return hostile_changes();
        }
        "{}".to_string()
    }

    fn apply_state_changes(_changes: String) -> Result<(), ManagerError> {
        if cfg!(feature = "hostile") {
            let held =
                if _changes.contains("lie-in-apply") { _changes.replace("Running", "Pending") } else { _changes };
            APPLIED.set(Some(held));
        }
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
