//! Strategic merge patches of a pod's status, for the fields the kubelet writes.
//!
//! Kubernetes merges `status.conditions` by `type`, and `podIPs`/`hostIPs` by `ip`
//! (their `patchMergeKey`); every other list is replaced whole; objects merge key by
//! key and a `null` removes a key. A list item `{"type": T, "$patch": "delete"}`
//! removes that item, and `$setElementOrder/<list>` gives the order of the merged
//! list. That is all a status patch from the kubelet uses.

use k8s_openapi::api::core::v1::PodStatus;
use serde_json::{Map, Value};

/// Lists of PodStatus merged by a key rather than replaced.
const MERGE_KEYS: [(&str, &str); 3] = [("conditions", "type"), ("podIPs", "ip"), ("hostIPs", "ip")];

/// `status` with the `status` part of a pod patch applied.
pub fn apply(status: Option<&PodStatus>, pod_patch: &Value) -> Result<PodStatus, String> {
    let current = match status {
        Some(status) => serde_json::to_value(status).map_err(|e| e.to_string())?,
        None => Value::Object(Map::new()),
    };
    let patched = match pod_patch.get("status") {
        None | Some(Value::Null) => current,
        Some(Value::Object(patch)) => merge_status(current, patch)?,
        Some(_) => return Err("status in the patch is not an object".into()),
    };
    serde_json::from_value(patched).map_err(|e| format!("the patched status is not a valid PodStatus: {e}"))
}

fn merge_status(current: Value, patch: &Map<String, Value>) -> Result<Value, String> {
    let Value::Object(mut status) = current else { return Err("stored status is not an object".into()) };
    for (key, value) in patch {
        if key.starts_with("$setElementOrder/") || key.starts_with('$') {
            continue;
        }
        match MERGE_KEYS.iter().find(|(list, _)| list == key) {
            Some((list, merge_key)) if !value.is_null() => {
                let order = patch.get(&format!("$setElementOrder/{list}"));
                let merged = merge_list(status.remove(key.as_str()), value, merge_key, order)?;
                status.insert(key.clone(), merged);
            }
            _ => merge_field(&mut status, key, value),
        }
    }
    // An order alone (the items are unchanged, only their order) reorders the list.
    for (list, merge_key) in MERGE_KEYS {
        if let Some(order) = patch.get(&format!("$setElementOrder/{list}"))
            && !patch.contains_key(list)
            && let Some(current) = status.remove(list)
        {
            let reordered = merge_list(Some(current), &Value::Array(Vec::new()), merge_key, Some(order))?;
            status.insert(list.to_string(), reordered);
        }
    }
    Ok(Value::Object(status))
}

/// JSON merge patch semantics for one field: null removes, objects merge, anything
/// else replaces.
fn merge_field(target: &mut Map<String, Value>, key: &str, value: &Value) {
    match value {
        Value::Null => {
            target.remove(key);
        }
        Value::Object(patch) => {
            let entry = target.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            if let Value::Object(existing) = entry {
                for (k, v) in patch {
                    merge_field(existing, k, v);
                }
            }
        }
        other => {
            target.insert(key.to_string(), other.clone());
        }
    }
}

fn merge_list(current: Option<Value>, patch: &Value, merge_key: &str, order: Option<&Value>) -> Result<Value, String> {
    let mut items: Vec<Value> = match current {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let Value::Array(patch_items) = patch else { return Err("a merged list in the patch is not a list".into()) };
    let key_of = |item: &Value| item.get(merge_key).cloned();
    // The live order, for placing the items the patch's order does not name.
    let server_order: Vec<Option<Value>> = items.iter().map(key_of).collect();
    for patch_item in patch_items {
        let key = key_of(patch_item).ok_or_else(|| format!("a list item in the patch has no {merge_key:?}"))?;
        let position = items.iter().position(|item| key_of(item).as_ref() == Some(&key));
        if patch_item.get("$patch").and_then(Value::as_str) == Some("delete") {
            if let Some(i) = position {
                items.remove(i);
            }
            continue;
        }
        match position {
            Some(i) => {
                if let (Value::Object(existing), Value::Object(fields)) = (&mut items[i], patch_item) {
                    for (k, v) in fields {
                        merge_field(existing, k, v);
                    }
                }
            }
            None => items.push(patch_item.clone()),
        }
    }
    if let Some(Value::Array(order)) = order {
        let rank = |item: &Value| {
            let key = key_of(item);
            order.iter().position(|o| o.get(merge_key).cloned() == key)
        };
        let (mut named, server_only): (Vec<Value>, Vec<Value>) = items.into_iter().partition(|i| rank(i).is_some());
        named.sort_by_key(|item| rank(item));
        items = merge_sorted(server_only, named, &server_order, &key_of);
    }
    Ok(Value::Array(items))
}

/// apimachinery's `mergeSortedSlice`: the items the patch's order does not name
/// (`server_only`, in their live order) go in among the ordered ones (`named`), each
/// before the first named item that comes after it in the live list (`server_order`);
/// a named item the live list lacks is never overtaken. So a condition another writer
/// set keeps its place among the kubelet's conditions, as in Kubernetes.
fn merge_sorted(
    server_only: Vec<Value>,
    named: Vec<Value>,
    server_order: &[Option<Value>],
    key_of: &dyn Fn(&Value) -> Option<Value>,
) -> Vec<Value> {
    let index = |item: &Value| {
        let key = key_of(item);
        server_order.iter().position(|k| *k == key)
    };
    let mut merged = Vec::with_capacity(server_only.len() + named.len());
    let (mut left, mut right) = (server_only.into_iter().peekable(), named.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!((index(l), index(r)), (Some(li), Some(ri)) if li < ri),
        };
        let next = if take_left { left.next() } else { right.next() };
        merged.extend(next);
    }
    merged
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn status(value: Value) -> PodStatus {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn conditions_merge_by_type_and_other_fields_are_replaced() {
        let current = status(json!({
            "phase": "Running", "message": "old",
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "example.com/gate", "status": "True"}],
            "containerStatuses": [{"name": "a", "ready": false}, {"name": "b", "ready": false}]
        }));
        let patch = json!({"metadata": {"uid": "u"}, "status": {
            "$setElementOrder/conditions": [{"type": "Initialized"}, {"type": "Ready"}, {"type": "example.com/gate"}],
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
            "containerStatuses": [{"name": "a", "ready": true}],
            "message": null
        }});
        let patched = serde_json::to_value(apply(Some(&current), &patch).unwrap()).unwrap();
        assert_eq!(patched["phase"], "Running");
        assert!(patched.get("message").is_none());
        let types: Vec<&str> =
            patched["conditions"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["Initialized", "Ready", "example.com/gate"], "order from $setElementOrder; the gate kept");
        assert_eq!(patched["conditions"][1]["status"], "True");
        assert_eq!(patched["containerStatuses"].as_array().unwrap().len(), 1, "other lists are replaced whole");
    }

    #[test]
    fn items_the_order_does_not_name_keep_their_live_place() {
        // A controller's gate before Ready in the live list; a patch that names only
        // the kubelet's conditions leaves the gate where it was (apimachinery's
        // mergeSortedSlice), not after them.
        let current = status(json!({"conditions": [
            {"type": "example.com/gate", "status": "True"}, {"type": "Ready", "status": "False"},
            {"type": "other.io/x", "status": "True"}
        ]}));
        let patch = json!({"status": {
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "ContainersReady"}],
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}]
        }});
        let types: Vec<String> =
            apply(Some(&current), &patch).unwrap().conditions.unwrap().into_iter().map(|c| c.type_).collect();
        assert_eq!(types, ["example.com/gate", "Ready", "ContainersReady", "other.io/x"]);
    }

    #[test]
    fn an_order_alone_reorders_the_list() {
        let current =
            status(json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "gate", "status": "True"}]}));
        let patch = json!({"status": {"$setElementOrder/conditions": [{"type": "gate"}, {"type": "Ready"}]}});
        let types: Vec<String> =
            apply(Some(&current), &patch).unwrap().conditions.unwrap().into_iter().map(|c| c.type_).collect();
        assert_eq!(types, ["gate", "Ready"]);
    }

    #[test]
    fn a_delete_directive_removes_a_condition() {
        let current = status(
            json!({"conditions": [{"type": "Ready", "status": "False"}, {"type": "DisruptionTarget", "status": "True"}]}),
        );
        let patch = json!({"status": {"conditions": [{"type": "DisruptionTarget", "$patch": "delete"}]}});
        let patched = apply(Some(&current), &patch).unwrap();
        let types: Vec<String> = patched.conditions.unwrap().into_iter().map(|c| c.type_).collect();
        assert_eq!(types, ["Ready"]);
    }

    #[test]
    fn a_patch_of_nothing_keeps_the_status_and_garbage_is_refused() {
        let current = status(json!({"phase": "Pending"}));
        assert_eq!(apply(Some(&current), &json!({"metadata": {"uid": "u"}})).unwrap(), current);
        assert!(apply(Some(&current), &json!({"status": {"phase": 5}})).is_err());
        assert!(apply(None, &json!({"status": {"conditions": {"type": "Ready"}}})).is_err());
    }
}
