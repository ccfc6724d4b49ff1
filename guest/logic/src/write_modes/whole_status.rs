//! A patch computed without reading carries the whole merged status, not only what
//! changed since the base it was computed against.
//!
//! The base is what was last written (or the pod manager's copy). A field equal in the
//! base and the merged status is left out of a plain diff, so if another writer changed
//! it on the server since, the diff would leave the other writer's value there: a
//! status patched over an outside reset ended with its conditions but without its
//! phase (found by `fuzz --logic v4`; the one-call mode's `WHOLE_STATUS`). Sending every field of the merged status makes
//! the server end as the kubelet computed, whatever it held; the diff's nulls and
//! `$patch: delete` items stay, so what the base had and the merged status dropped is
//! still removed. Lists merged by key keep what only the server has in its place, as
//! the strategic merge does; and the conditions the kubelet does not write (another
//! writer's, which the merged status holds only as the base had them) are never added,
//! so a newer value of theirs on the server is not overwritten by an older one.

use k8s_openapi::api::core::v1::PodStatus;
use serde_json::{Map, Value};

use super::status_patch::is_go_zero;
use super::whole_conditions::whole_conditions;

/// The status lists the API server merges by key, with their key.
const MERGE_LISTS: [(&str, &str); 3] = [("conditions", "type"), ("podIPs", "ip"), ("hostIPs", "ip")];

/// `patch` (a status patch from some base to `merged`, as JSON) completed with every
/// field of `merged`: each top-level field it lacks is added, each object it carries
/// gets `merged`'s fields over the diff's, and each list merged by key lists every item
/// of `merged` in `merged`'s order (the diff's items where it has them), then the
/// diff's deletions. `kubelet_writes(type)` says which conditions the kubelet writes:
/// only those are added.
pub fn whole_status(patch: String, merged: &PodStatus, kubelet_writes: &dyn Fn(&str) -> bool) -> String {
    let patch = whole_conditions(patch, merged);
    let Ok(mut value) = serde_json::from_str::<Value>(&patch) else { return patch };
    let Ok(Value::Object(full)) = serde_json::to_value(merged) else { return patch };
    let Some(root) = value.as_object_mut() else { return patch };
    let status = root.entry("status").or_insert_with(|| Value::Object(Map::new()));
    let Some(status) = status.as_object_mut() else { return patch };
    for (key, mut whole) in full {
        if key == "conditions"
            && let Value::Array(conditions) = &mut whole
        {
            conditions.retain(|c| c.get("type").and_then(Value::as_str).is_some_and(kubelet_writes));
        }
        let merge_key = MERGE_LISTS.iter().find(|(list, _)| *list == key).map(|(_, k)| *k);
        match (status.get_mut(&key), merge_key, whole) {
            // A field Go's JSON leaves out (an empty list, say) is not there to send.
            (None, _, whole) if is_go_zero(&whole) => {}
            (None, _, whole) => {
                status.insert(key, whole);
            }
            (Some(Value::Array(sent)), Some(merge_key), Value::Array(whole)) => {
                *sent = every_item(std::mem::take(sent), whole, merge_key);
            }
            (Some(Value::Object(sent)), None, Value::Object(whole)) => sent.extend(whole),
            // A scalar or a list replaced whole: the diff already sends merged's value.
            _ => {}
        }
    }
    serde_json::to_string(&value).unwrap_or(patch)
}

/// Every item of `whole` in its order, the one `sent` has for a key where it has one,
/// followed by `sent`'s directives (`$patch: delete`).
fn every_item(sent: Vec<Value>, whole: Vec<Value>, merge_key: &str) -> Vec<Value> {
    let (directives, mut items): (Vec<Value>, Vec<Value>) =
        sent.into_iter().partition(|item| item.get("$patch").is_some());
    let mut out: Vec<Value> = whole
        .into_iter()
        .map(|item| match items.iter().position(|s| s.get(merge_key) == item.get(merge_key)) {
            Some(at) => items.swap_remove(at),
            None => item,
        })
        .collect();
    out.extend(items);
    out.extend(directives);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(value: Value) -> PodStatus {
        serde_json::from_value(value).unwrap()
    }

    fn kubelet(condition_type: &str) -> bool {
        ["Initialized", "Ready", "ContainersReady", "PodScheduled"].contains(&condition_type)
    }

    #[test]
    fn another_writers_condition_is_not_sent() {
        // The merged status holds the gate as the base had it; the server may hold a
        // newer value, which a whole patch must not overwrite.
        let merged = status(json!({"conditions": [
            {"type": "example.com/gate", "status": "True"},
            {"type": "Ready", "status": "True"},
        ]}));
        let patch = json!({"metadata": {"uid": "u"}, "status": {"phase": "Running"}});
        let sent: Value = serde_json::from_str(&whole_status(patch.to_string(), &merged, &kubelet)).unwrap();
        assert_eq!(sent["status"]["conditions"], json!([{"type": "Ready", "status": "True"}]));
    }

    #[test]
    fn fields_the_diff_left_out_are_sent() {
        let merged = status(json!({
            "phase": "Failed", "startTime": "2026-01-24T05:32:45Z",
            "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed"}],
            "containerStatuses": [],
        }));
        // Against a base that already had the phase and start time: only the condition.
        let patch = json!({"metadata": {"uid": "u"}, "status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "PodFailed"}
        ]}});
        let sent: Value = serde_json::from_str(&whole_status(patch.to_string(), &merged, &kubelet)).unwrap();
        assert_eq!(sent["metadata"], json!({"uid": "u"}));
        assert_eq!(sent["status"]["phase"], "Failed");
        assert_eq!(sent["status"]["startTime"], "2026-01-24T05:32:45Z");
        assert_eq!(sent["status"]["conditions"], json!([{"type": "Ready", "status": "False", "reason": "PodFailed"}]));
        assert!(sent["status"].get("containerStatuses").is_none(), "Go leaves an empty list out: {sent}");
    }

    #[test]
    fn every_condition_is_listed_in_order_and_deletions_and_nulls_stay() {
        let merged = status(json!({"conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "True"},
        ], "podIPs": [{"ip": "10.0.0.1"}]}));
        let patch = json!({"metadata": {"uid": "u"}, "status": {
            "$setElementOrder/conditions": [{"type": "Initialized"}, {"type": "Ready"}],
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "$patch": "delete"}],
            "message": null,
        }});
        let sent: Value = serde_json::from_str(&whole_status(patch.to_string(), &merged, &kubelet)).unwrap();
        assert_eq!(
            sent["status"]["conditions"],
            json!([
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "True"},
                {"type": "PodScheduled", "$patch": "delete"},
            ])
        );
        assert_eq!(sent["status"]["message"], Value::Null);
        assert!(sent["status"].as_object().unwrap().contains_key("message"), "the null removing a field stays");
        assert_eq!(sent["status"]["podIPs"], json!([{"ip": "10.0.0.1"}]));
        assert_eq!(sent["status"]["$setElementOrder/conditions"], patch["status"]["$setElementOrder/conditions"]);
    }

    #[test]
    fn an_object_the_diff_sent_in_part_is_sent_whole() {
        let merged = status(json!({"resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}}));
        let patch = json!({"metadata": {"uid": "u"}, "status": {"resources": {"limits": {"cpu": "1"}}}});
        let sent: Value = serde_json::from_str(&whole_status(patch.to_string(), &merged, &kubelet)).unwrap();
        assert_eq!(sent["status"]["resources"], json!({"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}));
    }
}
