//! Strategic merge patches of a pod's status, for the fields the kubelet writes.
//!
//! Kubernetes merges `status.conditions` by `type`, and `podIPs`/`hostIPs` by `ip`
//! (their `patchMergeKey`); every other list is replaced whole; objects merge key by
//! key and a `null` removes a key. A list item `{"type": T, "$patch": "delete"}`
//! removes that item, and `$setElementOrder/<list>` gives the order of the merged
//! list. That is all a status patch from the kubelet uses.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::PodStatus;
use serde_json::{Map, Value};

/// Lists of PodStatus merged by a key rather than replaced.
const MERGE_KEYS: [(&str, &str); 3] = [("conditions", "type"), ("podIPs", "ip"), ("hostIPs", "ip")];

/// Why a status patch could not be applied: its message says what was wrong (as the
/// API server's `Invalid` answer words it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatchError(String);

/// `status` with the `status` part of a pod patch applied.
pub fn apply_status_patch(status: Option<&PodStatus>, pod_patch: &Value) -> Result<PodStatus, PatchError> {
    apply(status, pod_patch).map_err(PatchError)
}

fn apply(status: Option<&PodStatus>, pod_patch: &Value) -> Result<PodStatus, String> {
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

/// JSON merge patch (RFC 7386) semantics for one field: null removes, objects merge,
/// anything else replaces. The json-patch crate does that; the strategic part (lists
/// merged by key, `$patch`, `$setElementOrder`) it does not, hence this module.
fn merge_field(target: &mut Map<String, Value>, key: &str, value: &Value) {
    if value.is_null() {
        target.remove(key);
    } else {
        json_patch::merge(target.entry(key.to_string()).or_insert(Value::Null), value);
    }
}

/// Merges a list by `merge_key` in time linear in the items: the current items are
/// indexed by key once, deletions leave a hole that is dropped at the end, and the
/// order (`$setElementOrder`) is a rank per key. (The obvious search per patch item is
/// quadratic, and this runs under the store's lock.)
fn merge_list(current: Option<Value>, patch: &Value, merge_key: &str, order: Option<&Value>) -> Result<Value, String> {
    let mut items: Vec<Option<Value>> = match current {
        Some(Value::Array(items)) => items.into_iter().map(Some).collect(),
        _ => Vec::new(),
    };
    let Value::Array(patch_items) = patch else { return Err("a merged list in the patch is not a list".into()) };
    let mut index: HashMap<Key, usize> = HashMap::with_capacity(items.len() + patch_items.len());
    for (position, item) in items.iter().enumerate() {
        if let Some(key) = item.as_ref().and_then(|item| Key::of(item, merge_key)) {
            // The first of duplicates wins, as a search from the front would find it.
            index.entry(key).or_insert(position);
        }
    }
    // The live order, for placing the items the patch's order does not name.
    let live = index.clone();
    for patch_item in patch_items {
        let key =
            Key::of(patch_item, merge_key).ok_or_else(|| format!("a list item in the patch has no {merge_key:?}"))?;
        let position = index.get(&key).copied();
        if patch_item.get("$patch").and_then(Value::as_str) == Some("delete") {
            if let Some(at) = position {
                items[at] = None;
                index.remove(&key);
            }
            continue;
        }
        match position.and_then(|at| items[at].as_mut()) {
            Some(Value::Object(existing)) => {
                if let Value::Object(fields) = patch_item {
                    for (k, v) in fields {
                        merge_field(existing, k, v);
                    }
                }
            }
            Some(_) => {}
            None => {
                index.insert(key, items.len());
                items.push(Some(patch_item.clone()));
            }
        }
    }
    let items: Vec<Value> = items.into_iter().flatten().collect();
    // Go orders the merged list alike with or without `$setElementOrder`: the items the
    // order names (without one, the patch's own items, in the patch's order) come in
    // that order, interleaved with the items only the server has, in the server's
    // (apimachinery's `mergeSlice` and `normalizeElementOrder`). So a whole list sent
    // over a stored one ends in the patch's order.
    let order = match order {
        Some(Value::Array(order)) => order,
        _ => patch_items,
    };
    let mut rank: HashMap<Key, usize> = HashMap::with_capacity(order.len());
    for (position, entry) in order.iter().enumerate() {
        if let Some(key) = Key::of(entry, merge_key) {
            rank.entry(key).or_insert(position);
        }
    }
    let rank_of = |item: &Value| Key::of(item, merge_key).and_then(|key| rank.get(&key).copied());
    let (mut named, server_only): (Vec<Value>, Vec<Value>) =
        items.into_iter().partition(|item| rank_of(item).is_some());
    named.sort_by_cached_key(|item| rank_of(item));
    let live_of = |item: &Value| Key::of(item, merge_key).and_then(|key| live.get(&key).copied());
    Ok(Value::Array(merge_sorted(server_only, named, &live_of)))
}

/// apimachinery's `mergeSortedSlice`: the items the patch's order does not name
/// (`server_only`, in their live order) go in among the ordered ones (`named`), each
/// before the first named item that comes after it in the live list (`live_of` gives an
/// item's place there); a named item the live list lacks is never overtaken. So a
/// condition another writer set keeps its place among the kubelet's conditions, as in
/// Kubernetes. Linear: one pass over both.
fn merge_sorted(server_only: Vec<Value>, named: Vec<Value>, live_of: &dyn Fn(&Value) -> Option<usize>) -> Vec<Value> {
    let mut merged = Vec::with_capacity(server_only.len() + named.len());
    let (mut left, mut right) = (server_only.into_iter().peekable(), named.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!((live_of(l), live_of(r)), (Some(li), Some(ri)) if li < ri),
        };
        let next = if take_left { left.next() } else { right.next() };
        merged.extend(next);
    }
    merged
}

/// A merge key's value, hashable: its JSON text (merge keys are strings in practice).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key(String);

impl Key {
    fn of(item: &Value, merge_key: &str) -> Option<Self> {
        match item.get(merge_key)? {
            Value::String(text) => Some(Self(format!("s{text}"))),
            other => Some(Self(format!("j{other}"))),
        }
    }
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
    fn a_list_without_an_order_takes_the_patchs_order() {
        // A whole list sent over a stored one (the patch of a writer whose old status
        // had no conditions): Go sorts the items the patch names by the patch itself,
        // so they end in its order, and a server-only item keeps its live place.
        let current = status(json!({"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "example.com/gate", "status": "True"}
        ]}));
        let patch = json!({"status": {"conditions": [
            {"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "False"}
        ]}});
        let types: Vec<String> =
            apply(Some(&current), &patch).unwrap().conditions.unwrap().into_iter().map(|c| c.type_).collect();
        assert_eq!(types, ["Initialized", "Ready", "example.com/gate"]);
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
    fn thousands_of_conditions_merge_in_linear_time() {
        // 20,000 items: quadratic would be 4e8 comparisons (many seconds); linear is
        // milliseconds. Not timed: the test only has to finish.
        let n = 20_000;
        let conditions: Vec<Value> = (0..n).map(|i| json!({"type": format!("t{i}"), "status": "False"})).collect();
        let current = status(json!({"conditions": conditions}));
        let patch_items: Vec<Value> =
            (0..n).rev().map(|i| json!({"type": format!("t{i}"), "status": "True"})).collect();
        let order: Vec<Value> = (0..n).rev().map(|i| json!({"type": format!("t{i}")})).collect();
        let patch = json!({"status": {"conditions": patch_items, "$setElementOrder/conditions": order}});
        let patched = apply(Some(&current), &patch).unwrap().conditions.unwrap();
        assert_eq!(patched.len(), n);
        assert_eq!((patched[0].type_.as_str(), patched[0].status.as_str()), ("t19999", "True"));
        let deletes: Vec<Value> =
            (0..n).step_by(2).map(|i| json!({"type": format!("t{i}"), "$patch": "delete"})).collect();
        let thinned = apply(Some(&current), &json!({"status": {"conditions": deletes}})).unwrap().conditions.unwrap();
        assert_eq!(thinned.len(), n / 2);
        assert_eq!(thinned[0].type_, "t1");
    }

    #[test]
    fn a_patch_of_nothing_keeps_the_status_and_garbage_is_refused() {
        let current = status(json!({"phase": "Pending"}));
        assert_eq!(apply(Some(&current), &json!({"metadata": {"uid": "u"}})).unwrap(), current);
        assert!(apply(Some(&current), &json!({"status": {"phase": 5}})).is_err());
        assert!(apply(None, &json!({"status": {"conditions": {"type": "Ready"}}})).is_err());
    }
}
