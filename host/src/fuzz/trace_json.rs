//! A [`Trace`] written back as the JSON document `podstatus replay` reads, so that a
//! generated or shrunk trace can be saved, replayed and read by people.

use serde_json::{Map, Value, json};

use crate::bindings::Timestamp;
use crate::replay::{FailError, FailVerb, PodRef, Step, Trace, TraceError};

/// The trace document of `trace` (top-level keys in the contract's order).
pub fn trace_to_json(trace: &Trace) -> Value {
    let mut doc = Map::new();
    doc.insert("clock".into(), Value::String(format_clock(trace.clock)));
    doc.insert("apiserver".into(), pods(&trace.apiserver));
    doc.insert("pod_manager".into(), pods(&trace.pod_manager));
    doc.insert("deletion_safe".into(), Value::Bool(trace.deletion_safe));
    doc.insert("steps".into(), Value::Array(trace.steps.iter().map(step_to_json).collect()));
    Value::Object(doc)
}

/// Parses a trace document (the replay's own parser, so anything accepted here is
/// accepted by `podstatus replay`).
pub fn trace_from_json(doc: &Value) -> Result<Trace, TraceError> {
    Trace::parse(&doc.to_string(), std::path::PathBuf::from("."))
}

/// A copy of `trace` (the replay's type is not `Clone`: a trace is read once).
pub fn clone_trace(trace: &Trace) -> Trace {
    Trace {
        clock: trace.clock,
        apiserver: trace.apiserver.clone(),
        pod_manager: trace.pod_manager.clone(),
        deletion_safe: trace.deletion_safe,
        steps: trace.steps.clone(),
        base_dir: trace.base_dir.clone(),
    }
}

/// One step as the trace format writes it.
pub fn step_to_json(step: &Step) -> Value {
    match step {
        Step::SetPodStatus { pod, status } => {
            json!({ "op": "set-pod-status", "pod": pod_ref(pod), "status": raw(status) })
        }
        Step::SetContainerReadiness { uid, container_id, ready } => {
            json!({ "op": "set-container-readiness", "uid": uid, "container_id": container_id, "ready": ready })
        }
        Step::TerminatePod { pod } => json!({ "op": "terminate-pod", "pod": pod_ref(pod) }),
        Step::RemoveOrphanedStatuses { keep } => json!({ "op": "remove-orphaned-statuses", "keep": keep }),
        Step::GetPodStatus { uid } => json!({ "op": "get-pod-status", "uid": uid }),
        Step::Sync => json!({ "op": "sync" }),
        Step::SyncBatch => json!({ "op": "sync-batch" }),
        Step::AdvanceClock { ms } => json!({ "op": "advance-clock", "ms": ms }),
        Step::PodManagerAdd { pod } => json!({ "op": "pod-manager-add", "pod": pod_value(pod) }),
        Step::PodManagerRemove { uid } => json!({ "op": "pod-manager-remove", "uid": uid }),
        Step::ApiserverPut { pod } => json!({ "op": "apiserver-put", "pod": pod_value(pod) }),
        Step::ApiserverDelete { namespace, name } => {
            json!({ "op": "apiserver-delete", "namespace": namespace, "name": name })
        }
        Step::Fail { verb, error, times } => {
            json!({ "op": "fail", "verb": verb_name(*verb), "error": error_name(*error), "times": times })
        }
        Step::SetDeletionSafe { value } => json!({ "op": "set-deletion-safe", "value": value }),
        Step::SetContainerStartup { uid, container_id, started } => {
            json!({ "op": "set-container-startup", "uid": uid, "container_id": container_id, "started": started })
        }
        Step::Swap { plugin } => json!({ "op": "swap", "plugin": plugin.display().to_string() }),
    }
}

/// The name a `fail` step gives `verb`.
pub fn verb_name(verb: FailVerb) -> &'static str {
    match verb {
        FailVerb::Get => "get",
        FailVerb::Write => "write",
        FailVerb::Delete => "delete",
        FailVerb::Any => "any",
    }
}

/// The name a `fail` step gives `error`.
pub fn error_name(error: FailError) -> &'static str {
    match error {
        FailError::NotFound => "not-found",
        FailError::Conflict => "conflict",
        FailError::Internal => "internal",
        FailError::Unavailable => "unavailable",
    }
}

/// RFC 3339 in UTC, with a fraction only when there is one.
pub fn format_clock(clock: Timestamp) -> String {
    match jiff::Timestamp::new(clock.seconds, clock.nanoseconds as i32) {
        Ok(ts) => ts.to_string(),
        // Out of jiff's range: no trace can have parsed to it; keep the default.
        Err(_) => "2026-01-01T00:00:00Z".to_string(),
    }
}

fn pods(pods: &[k8s_openapi::api::core::v1::Pod]) -> Value {
    Value::Array(pods.iter().map(pod_value).collect())
}

fn pod_value(pod: &k8s_openapi::api::core::v1::Pod) -> Value {
    // k8s-openapi's types always serialise.
    serde_json::to_value(pod).unwrap_or(Value::Null)
}

fn pod_ref(pod: &PodRef) -> Value {
    match pod {
        PodRef::Uid(uid) => Value::String(uid.clone()),
        PodRef::Object(json) => raw(json),
    }
}

/// JSON text held by a step (the replay checked it when the trace was read).
fn raw(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}
