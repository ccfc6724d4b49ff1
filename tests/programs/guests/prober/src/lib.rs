//! A plugin that probes the host's reach guard: one component, its probe chosen at run
//! time by the annotation `podstatus.test/probe` of the pod `set-pod-status` hands it,
//! so CI builds it once and each test (or replay trace) picks what it tries.
//!
//! `set-pod-status` remembers the pod and status and queues a sync; `sync-pod` makes
//! the probe's API call for that pod:
//! - `delete`: deletes the pod with its own UID as precondition and a grace period of
//!   30 seconds, whatever its state: a force-delete of a running pod, of a mirror pod
//!   (hand it one), or of a pod whose containers may still run;
//! - `forge-ip`: writes the status with `podIP`/`podIPs` set to the annotation
//!   `podstatus.test/ip` (default `10.66.6.6`), with the pod's UID as precondition;
//! - `stale-name`: writes the status by name alone, without a UID precondition;
//! - `revive`: writes the status with phase `Running`, with the pod's UID;
//! - `forget`: accepts the status and forgets it: `get-pod-status` finds nothing and
//!   `sync-pod` writes nothing (a plugin that drops its cache);
//! - `neighbour`: writes the status to the pod the annotation `podstatus.test/neighbour`
//!   names (`namespace/name`), by name alone: a pod of the node whose status the host
//!   never handed it;
//! - anything else (or no annotation): writes the status as given, with the pod's UID,
//!   as an honest plugin would.
//!
//! `get-pod-status` answers a status whose `message` is what the last probe of that
//! pod got back (`ok`, or the error as `forbidden: ...`, `conflict: ...`), so a test
//! or trace can see it.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Value, json};

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../../../wit/status@0.1.0",
});

use exports::kubelet::status::manager::{BatchReport, CachedStatus, Guest, ManagerError, SyncOutcome, UpdateOutcome};
use kubelet::status::api_server::{self, ApiError, DeleteOptions, StatusUpdate};
use kubelet::status::types::SyncRequest;

/// The annotation that picks the probe.
const PROBE: &str = "podstatus.test/probe";
/// The annotation that gives a forged IP.
const IP: &str = "podstatus.test/ip";
/// The annotation that names the pod the `neighbour` probe writes.
const NEIGHBOUR: &str = "podstatus.test/neighbour";

/// A pod handed over, and what its last probe got.
struct Held {
    namespace: String,
    name: String,
    probe: String,
    ip: String,
    /// `namespace/name` of the pod the `neighbour` probe writes.
    neighbour: String,
    status: Value,
    version: u64,
    result: Option<String>,
}

thread_local! {
    static PODS: RefCell<BTreeMap<String, Held>> = const { RefCell::new(BTreeMap::new()) };
    static NEXT_ID: RefCell<u64> = const { RefCell::new(1) };
    /// Versions accepted since the last change set: the supervisor checks that a call
    /// answering `queued` hands over a status, so the prober's change sets say what it
    /// accepted (also under `forget`, which claims to hold what it drops: a lie the
    /// supervisor cannot see and the final check must).
    static CHANGED: RefCell<BTreeMap<String, u64>> = const { RefCell::new(BTreeMap::new()) };
}

fn field<'a>(pod: &'a Value, path: &str) -> &'a str {
    pod.pointer(path).and_then(Value::as_str).unwrap_or_default()
}

fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str)
}

fn describe(result: Result<(), ApiError>) -> String {
    match result {
        Ok(()) => "ok".into(),
        Err(ApiError::NotFound(m)) => format!("not-found: {m}"),
        Err(ApiError::Conflict(m)) => format!("conflict: {m}"),
        Err(ApiError::Forbidden(m)) => format!("forbidden: {m}"),
        Err(ApiError::Other(m)) => format!("other: {m}"),
    }
}

struct Prober;

impl Prober {
    fn probe(uid: &str, held: &Held) -> Result<(), ApiError> {
        let write_to = |namespace: &str, name: &str, status: &Value, uid_precondition: Option<String>| {
            let update = StatusUpdate {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                uid_precondition,
                resource_version_precondition: None,
                status: status.to_string(),
            };
            api_server::update_pod_status(&update).map(|_| ())
        };
        let write = |status: &Value, uid_precondition: Option<String>| {
            write_to(&held.namespace, &held.name, status, uid_precondition)
        };
        match held.probe.as_str() {
            "delete" => {
                let options = DeleteOptions { uid_precondition: Some(uid.to_owned()), grace_period_seconds: Some(30) };
                api_server::delete_pod(&held.namespace, &held.name, &options)
            }
            "forge-ip" => {
                let mut status = held.status.clone();
                status["podIP"] = json!(held.ip);
                status["podIPs"] = json!([{"ip": held.ip}]);
                write(&status, Some(uid.to_owned()))
            }
            "stale-name" => write(&held.status, None),
            "neighbour" => {
                let (namespace, name) = held.neighbour.split_once('/').unwrap_or(("default", &held.neighbour));
                write_to(namespace, name, &held.status, None)
            }
            "revive" => {
                let mut status = held.status.clone();
                status["phase"] = json!("Running");
                write(&status, Some(uid.to_owned()))
            }
            _ => write(&held.status, Some(uid.to_owned())),
        }
    }
}

impl Guest for Prober {
    fn get_pod_status(uid: String) -> Option<CachedStatus> {
        PODS.with(|pods| {
            let pods = pods.borrow();
            let held = pods.get(&uid).filter(|held| held.probe != "forget")?;
            let message = held.result.clone().unwrap_or_else(|| "not probed yet".into());
            Some(CachedStatus { version: held.version, status: json!({ "message": message }).to_string() })
        })
    }

    fn set_pod_status(pod: String, status: String) -> Result<UpdateOutcome, ManagerError> {
        let pod: Value = serde_json::from_str(&pod).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        let status: Value = serde_json::from_str(&status).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        let uid = field(&pod, "/metadata/uid").to_owned();
        let version = PODS.with(|pods| {
            let mut pods = pods.borrow_mut();
            let version = pods.get(&uid).map_or(1, |held| held.version + 1);
            let namespace = Some(field(&pod, "/metadata/namespace")).filter(|ns| !ns.is_empty()).unwrap_or("default");
            pods.insert(
                uid.clone(),
                Held {
                    namespace: namespace.to_owned(),
                    name: field(&pod, "/metadata/name").to_owned(),
                    probe: annotation(&pod, PROBE).unwrap_or("honest").to_owned(),
                    ip: annotation(&pod, IP).unwrap_or("10.66.6.6").to_owned(),
                    neighbour: annotation(&pod, NEIGHBOUR).unwrap_or_default().to_owned(),
                    status,
                    version,
                    result: None,
                },
            );
            version
        });
        CHANGED.with(|changed| changed.borrow_mut().insert(uid.clone(), version));
        let id = NEXT_ID.with(|n| n.replace_with(|n| *n + 1));
        let request = SyncRequest { id, pod_uid: uid, version };
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
        PODS.with(|pods| {
            let mut pods = pods.borrow_mut();
            let Some(held) = pods.get_mut(&request.pod_uid) else {
                return Err(ManagerError::UnknownRequest(request.id));
            };
            if held.probe == "forget" {
                return Ok(SyncOutcome::UpToDate);
            }
            let result = Prober::probe(&request.pod_uid, held);
            let outcome = match (&result, held.probe.as_str()) {
                (Ok(()), "delete") => SyncOutcome::Deleted,
                (Ok(()), _) => SyncOutcome::Written,
                (Err(_), "delete") => SyncOutcome::DeleteFailed,
                (Err(_), _) => SyncOutcome::WriteFailed,
            };
            held.result = Some(describe(result));
            Ok(outcome)
        })
    }

    fn sync_batch() -> BatchReport {
        BatchReport { synced: 0, reconciled: 0, failed: 0 }
    }

    /// An empty document of the documented format (the agent's supervisor follows it):
    /// the prober carries nothing across a restart or swap.
    fn save_state() -> String {
        r#"{"statuses": {}, "apiStatusVersions": {}, "pending": {}}"#.to_string()
    }

    fn load_state(_state: String) -> Result<(), ManagerError> {
        Ok(())
    }

    fn save_state_changes() -> String {
        let statuses: serde_json::Map<String, Value> = CHANGED.with(|changed| {
            std::mem::take(&mut *changed.borrow_mut())
                .into_iter()
                .map(|(uid, version)| (uid, json!({ "version": version })))
                .collect()
        });
        json!({"format": "podstatus.kubelet.io/state-changes", "patch": {"statuses": statuses}}).to_string()
    }

    fn apply_state_changes(_changes: String) -> Result<(), ManagerError> {
        Ok(())
    }
}

export!(Prober);
