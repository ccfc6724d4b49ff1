//! Reports as Go's types see them.
//!
//! The oracle writes Go's JSON and podstatus k8s-openapi's: Go writes a zero struct as
//! `{}` and leaves out what `omitempty` drops, podstatus leaves out what it never had,
//! so the same status is spelled two ways. A report's statuses, conditions and pods are
//! read into k8s-openapi's types and every null, empty string, empty list and empty
//! object is dropped (what Go's decoding makes the zero value, which
//! `apiequality.Semantic` takes as equal to absent), in both reports alike. `false`
//! and `0` stay: `started: false` is not an absent `started` to Go.
//!
//! Two more things make the comparison say what upstream means:
//! - the calls of a `sync` or `sync-batch` step are compared in pod order: upstream's
//!   syncBatch visits pods in Go's map order, which it leaves free. A step's calls are
//!   cut into syncs (each GET starts one; a write or delete of another pod than the
//!   sync's does too) and the syncs are ordered by pod name, then by their calls;
//! - a quantity is written in Go's canonical form (`1000m` is `1`), as the API server
//!   stores it whatever the client sent;
//! - a stored pod without `spec.restartPolicy` has `Always`, the default the API server
//!   applies and the replay format assumes;
//! - a stored pod's `resourceVersion` is left out: its values are the store's choice
//!   (the format says so), and they follow the order of a batch's writes, which
//!   upstream leaves free.

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use podstatus_replay::{Call, Report, Step, Trace};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// `report` (of a run of `trace`) in the canonical form both sides are compared in.
pub fn canonical(report: &Report, trace: &Trace) -> Report {
    let mut calls = Vec::with_capacity(report.calls.len());
    for step in report.calls.chunk_by(|a, b| a.step == b.step) {
        if matches!(trace.steps.get(step[0].step), Some(Step::Sync | Step::SyncBatch)) {
            let mut syncs = syncs_of(step);
            syncs.sort_by_cached_key(|sync| {
                let first = &sync[0];
                (first.namespace.clone(), first.name.clone(), serde_json::to_string(sync).unwrap_or_default())
            });
            calls.extend(syncs.into_iter().flatten().cloned());
        } else {
            calls.extend(step.iter().cloned());
        }
    }
    Report {
        results: report.results.iter().map(result).collect(),
        calls,
        apiserver: report.apiserver.iter().map(pod).collect(),
        fault: report.fault.clone(),
    }
}

/// A step's calls cut into the syncs that made them: a GET starts a sync, and so does
/// a call of another pod than the sync's.
fn syncs_of(calls: &[Call]) -> Vec<&[Call]> {
    let mut syncs = Vec::new();
    let mut start = 0;
    for i in 1..calls.len() {
        let (call, first) = (&calls[i], &calls[start]);
        if call.verb == "get" || (&call.namespace, &call.name) != (&first.namespace, &first.name) {
            syncs.push(&calls[start..i]);
            start = i;
        }
    }
    if !calls.is_empty() {
        syncs.push(&calls[start..]);
    }
    syncs
}

/// A step's result: the status of `get-pod-status`, the conditions of
/// `get-pod-resize-conditions`, read as Go would.
fn result(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(status) = value.get_mut("status") {
        *status = through::<PodStatus>(status);
    }
    if let Some(Value::Array(conditions)) = value.get_mut("conditions") {
        for condition in conditions {
            *condition = through::<PodCondition>(condition);
        }
    }
    pruned(value)
}

fn pod(pod: &Pod) -> Pod {
    let mut pod = pod.clone();
    pod.metadata.resource_version = None;
    if let Some(spec) = pod.spec.as_mut()
        && spec.restart_policy.as_deref().is_none_or(str::is_empty)
    {
        spec.restart_policy = Some("Always".into());
    }
    let value = pruned(serde_json::to_value(&pod).unwrap_or(Value::Null));
    serde_json::from_value(value).unwrap_or(pod)
}

/// `value` read as a `T` and written again, pruned; as it was (pruned) when it is no `T`.
fn through<T: DeserializeOwned + Serialize>(value: &Value) -> Value {
    let typed = serde_json::from_value::<T>(pruned(value.clone())).ok().and_then(|t| serde_json::to_value(t).ok());
    pruned(typed.unwrap_or_else(|| value.clone()))
}

/// `value` without the object members Go's decoding makes zero values of: null, "",
/// the zero time, [] and {} (after their own members are pruned). Array items stay
/// where they are.
pub fn pruned(value: Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .map(|(k, v)| {
                    let v = if QUANTITY_MAPS.contains(&k.as_str()) { go_quantities(v) } else { v };
                    (k, pruned(v))
                })
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(pruned).collect()),
        other => other,
    }
}

/// The keys of a pod's maps of resource quantities.
const QUANTITY_MAPS: [&str; 3] = ["allocatedResources", "requests", "limits"];

/// A map of quantities in Go's canonical form (a value that is no quantity stays).
fn go_quantities(value: Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .map(|(k, v)| match &v {
                    Value::String(q) => {
                        let canonical = podstatus_core::go_canonical(&Quantity(q.clone()));
                        (k, canonical.map_or(v, Value::String))
                    }
                    _ => (k, v),
                })
                .collect(),
        ),
        other => other,
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        // Go's zero time, which metav1.Time writes as null.
        Value::String(s) => s.is_empty() || s == "0001-01-01T00:00:00Z",
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_and_k8s_openapi_spellings_of_one_status_are_one() {
        let go = json!({"found": true, "version": 1, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}],
            "containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": {}, "lastState": {}}]}});
        let ours = json!({"found": true, "version": 1, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0}], "message": ""}});
        assert_eq!(result(&go), result(&ours));
        let started = json!({"status": {"containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0, "started": false}]}});
        assert_ne!(result(&started), result(&ours), "false is no absent *bool");
    }
}
