//! The status write as every release since 1.27 sends it: a strategic merge patch from
//! the API server's status to the merged status, carrying the pod's UID
//! (`preparePatchBytesForPodStatus`).
//!
//! The patch is what `strategicpatch.CreateTwoWayMergePatch` makes of
//! `{"status": old}` and `{"metadata": {"uid": UID}, "status": new}`:
//!
//! - `metadata.uid` is always there: the API server refuses a patch whose UID is not the
//!   stored object's, so a write never lands on a pod that was deleted and recreated;
//! - a status field that changed carries its new value, one that is gone is `null`,
//!   and an unchanged one is left out;
//! - lists with a merge key (`conditions` by `type`, `podIPs` and `hostIPs` by `ip`)
//!   carry only the items that changed (an item that changed carries its key and its
//!   changed fields), `{KEY: V, "$patch": "delete"}` for items that are gone, and
//!   `$setElementOrder/LIST` naming every item's key in the new order whenever the
//!   list changed at all; a list the old status lacks is sent whole, and every other
//!   list is replaced whole.
//!
//! "Changed" is Go's, seen through its JSON: a field absent and a field at its zero
//! value are the same, times compare at the second they are written with, and a
//! quantity compares by the canonical form Go writes it in (`"1000m"` is `"1"`, but
//! `"1Ki"` is not `"1024"`, though their values are equal). When nothing changed the
//! patch is only the UID, and upstream sends nothing.

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use podstatus_core::status_equal;
use podstatus_core::{JsonError, go_canonical};
use serde_json::{Map, Value, json};

/// The status lists merged by a key rather than replaced, with their `patchMergeKey`.
const MERGE_LISTS: [(&str, &str); 3] = [("conditions", "type"), ("podIPs", "ip"), ("hostIPs", "ip")];

/// The patch from `old` (the API server's status, normalised) to `new` (the merged
/// status) for the pod with `uid`, as JSON; None when there is nothing to change.
pub fn status_patch(uid: &str, old: &PodStatus, new: &PodStatus) -> Result<Option<String>, JsonError> {
    patch(uid, old, new).map_err(JsonError::new)
}

fn patch(uid: &str, old: &PodStatus, new: &PodStatus) -> Result<Option<String>, String> {
    let (old_json, new_json) = (to_object(old)?, to_object(new)?);
    let mut status = Map::new();
    let keys: std::collections::BTreeSet<&String> = old_json.keys().chain(new_json.keys()).collect();
    for key in keys {
        let (before, after) = (old_json.get(key), new_json.get(key));
        if let Some((_, merge_key)) = MERGE_LISTS.iter().find(|(list, _)| list == key) {
            diff_merge_list(&mut status, key, merge_key, before, after);
        } else if !field_equal(key, before, after)? {
            let value = match after {
                Some(value) if !field_equal(key, Some(value), None)? => value.clone(),
                _ => Value::Null,
            };
            status.insert(key.clone(), value);
        }
    }
    if status.is_empty() {
        return Ok(None);
    }
    // Go sends every quantity in its canonical form.
    status.values_mut().for_each(canonicalize_quantities);
    let patch = json!({"metadata": {"uid": uid}, "status": status});
    serde_json::to_string(&patch).map(Some).map_err(|e| format!("cannot serialise the status patch: {e}"))
}

fn to_object(status: &PodStatus) -> Result<Map<String, Value>, String> {
    match serde_json::to_value(status) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("a status serialised to {other}")),
        Err(e) => Err(format!("cannot serialise a status: {e}")),
    }
}

/// Whether one status field has the same value in both (None: absent), as Go's JSON of
/// it has it: semantically equal (the values are read back from their JSON, which has
/// times at whole seconds), with the same quantities in the same canonical forms.
fn field_equal(key: &str, a: Option<&Value>, b: Option<&Value>) -> Result<bool, String> {
    // The same JSON reads back the same: most fields of a write are unchanged, and
    // reading both sides back as statuses is most of what a patch costs.
    if a == b {
        return Ok(true);
    }
    let (mut qa, mut qb) = (Vec::new(), Vec::new());
    quantities(a.unwrap_or(&Value::Null), &mut String::new(), &mut qa);
    quantities(b.unwrap_or(&Value::Null), &mut String::new(), &mut qb);
    Ok(qa == qb && semantically_equal(key, a, b)?)
}

/// The quantities in a status field's JSON (the values of `allocatedResources`,
/// `limits` and `requests` maps: the resource lists of container statuses), each with
/// its path and canonical form; zero and absent are the same to Go's `omitempty` maps.
fn quantities(value: &Value, path: &mut String, out: &mut Vec<(String, String)>) {
    const RESOURCE_LISTS: [&str; 3] = ["allocatedResources", "limits", "requests"];
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(key);
                match item {
                    Value::Object(list) if RESOURCE_LISTS.contains(&key.as_str()) => {
                        for (name, quantity) in list {
                            let Value::String(text) = quantity else { continue };
                            let quantity = Quantity(text.clone());
                            let form = go_canonical(&quantity).unwrap_or_else(|| text.trim().to_string());
                            out.push((format!("{path}/{name}"), form));
                        }
                    }
                    _ => quantities(item, path, out),
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{index}"));
                quantities(item, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Rewrites the quantities in a status field's JSON (see [`quantities`]) in the
/// canonical form Go writes them in; one Go cannot write canonically stays as it is.
fn canonicalize_quantities(value: &mut Value) {
    const RESOURCE_LISTS: [&str; 3] = ["allocatedResources", "limits", "requests"];
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                match item {
                    Value::Object(list) if RESOURCE_LISTS.contains(&key.as_str()) => {
                        for quantity in list.values_mut() {
                            if let Value::String(text) = quantity
                                && let Some(form) = go_canonical(&Quantity(text.clone()))
                            {
                                *text = form;
                            }
                        }
                    }
                    _ => canonicalize_quantities(item),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(canonicalize_quantities),
        _ => {}
    }
}

/// Whether one status field has the same value in both, as Go's semantic equality
/// sees it.
fn semantically_equal(key: &str, a: Option<&Value>, b: Option<&Value>) -> Result<bool, String> {
    let status = |value: Option<&Value>| -> Result<PodStatus, String> {
        match value {
            None => Ok(PodStatus::default()),
            Some(value) => {
                serde_json::from_value(json!({ key: value })).map_err(|e| format!("status field {key}: {e}"))
            }
        }
    };
    Ok(status_equal(&status(a)?, &status(b)?))
}

/// The patch of one merge-keyed list: nothing when equal, the whole list when the old
/// status has none, `null` when the new one has none, else the changed and deleted
/// items and the new order.
fn diff_merge_list(
    patch: &mut Map<String, Value>,
    key: &str,
    merge_key: &str,
    old: Option<&Value>,
    new: Option<&Value>,
) {
    let items = |list: Option<&Value>| -> Vec<Map<String, Value>> {
        list.and_then(Value::as_array)
            .map(|items| items.iter().filter_map(|item| item.as_object().map(go_fields)).collect())
            .unwrap_or_default()
    };
    let (old_items, new_items) = (items(old), items(new));
    if old_items.is_empty() && new_items.is_empty() {
        return;
    }
    if old_items.is_empty() {
        patch.insert(key.to_string(), new.cloned().unwrap_or(Value::Null));
        return;
    }
    if new_items.is_empty() {
        patch.insert(key.to_string(), Value::Null);
        return;
    }

    let key_of = |item: &Map<String, Value>| item.get(merge_key).cloned().unwrap_or(Value::Null);
    let mut changes = Vec::new();
    for item in &new_items {
        let id = key_of(item);
        match old_items.iter().find(|o| key_of(o) == id) {
            None => changes.push(Value::Object(item.clone())),
            Some(before) => {
                let diff = diff_fields(before, item);
                if !diff.is_empty() {
                    let mut entry = Map::from_iter([(merge_key.to_string(), id)]);
                    entry.extend(diff);
                    changes.push(Value::Object(entry));
                }
            }
        }
    }
    for before in &old_items {
        let id = key_of(before);
        if !new_items.iter().any(|item| key_of(item) == id) {
            changes.push(json!({ merge_key: id, "$patch": "delete" }));
        }
    }
    let same_order =
        old_items.len() == new_items.len() && old_items.iter().zip(&new_items).all(|(o, n)| key_of(o) == key_of(n));
    if !changes.is_empty() || !same_order {
        let order = new_items.iter().map(|item| json!({ merge_key: key_of(item) })).collect();
        patch.insert(format!("$setElementOrder/{key}"), Value::Array(order));
    }
    if !changes.is_empty() {
        patch.insert(key.to_string(), Value::Array(changes));
    }
}

/// The fields of a list item as Go's JSON has them: a field at its zero value is the
/// same as no field (`omitempty`, or a zero `metav1.Time`, which is `null`).
fn go_fields(item: &Map<String, Value>) -> Map<String, Value> {
    item.iter().filter(|(_, value)| !is_go_zero(value)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Whether Go's JSON leaves `value` out (`omitempty`, or a zero `metav1.Time`).
pub fn is_go_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty() || s == "0001-01-01T00:00:00Z",
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
    }
}

/// A two-way merge of two flat items: the fields of `new` that differ, and `null` for
/// fields only `old` has.
fn diff_fields(old: &Map<String, Value>, new: &Map<String, Value>) -> Map<String, Value> {
    let mut diff: Map<String, Value> =
        new.iter().filter(|(k, v)| old.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect();
    diff.extend(old.keys().filter(|k| !new.contains_key(*k)).map(|k| (k.clone(), Value::Null)));
    diff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(value: Value) -> PodStatus {
        serde_json::from_value(value).unwrap()
    }

    fn patch(old: Value, new: Value) -> Option<Value> {
        status_patch("u-1", &status(old), &status(new)).unwrap().map(|p| serde_json::from_str(&p).unwrap())
    }

    #[test]
    fn nothing_changed_is_no_patch() {
        let s = json!({"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": true, "restartCount": 0}]});
        assert_eq!(patch(s.clone(), s), None);
        // Absent and zero are the same to Go.
        assert_eq!(patch(json!({"message": ""}), json!({})), None);
        assert_eq!(patch(json!({"conditions": []}), json!({})), None);
        assert_eq!(
            patch(
                json!({"conditions": [{"type": "Ready", "status": "True", "reason": ""}]}),
                json!({"conditions": [{"type": "Ready", "status": "True"}]})
            ),
            None
        );
    }

    #[test]
    fn changed_fields_are_set_and_gone_fields_are_null() {
        let p =
            patch(json!({"phase": "Running", "message": "m", "reason": "r"}), json!({"phase": "Failed", "reason": ""}));
        assert_eq!(
            p,
            Some(json!({"metadata": {"uid": "u-1"}, "status": {"phase": "Failed", "message": null, "reason": null}}))
        );
    }

    #[test]
    fn other_lists_are_replaced_whole() {
        let old = json!({"containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0},
                                               {"name": "b", "image": "i", "imageID": "", "ready": false, "restartCount": 0}]});
        let new = json!({"containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": true, "restartCount": 0},
                                               {"name": "b", "image": "i", "imageID": "", "ready": false, "restartCount": 0}]});
        let p = patch(old, new.clone()).unwrap();
        assert_eq!(p["status"]["containerStatuses"], new["containerStatuses"]);
    }

    #[test]
    fn conditions_merge_by_type() {
        let old = json!({"conditions": [
            {"type": "example.com/gate", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "m",
             "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Gone", "status": "True"},
        ]});
        let new = json!({"conditions": [
            {"type": "example.com/gate", "status": "True"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"},
            {"type": "ContainersReady", "status": "True"},
        ]});
        let p = patch(old, new).unwrap();
        assert_eq!(
            p["status"],
            json!({
                "$setElementOrder/conditions": [{"type": "example.com/gate"}, {"type": "Ready"}, {"type": "ContainersReady"}],
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": null, "message": null,
                     "lastTransitionTime": "2026-01-01T00:01:00Z"},
                    {"type": "ContainersReady", "status": "True"},
                    {"type": "Gone", "$patch": "delete"},
                ],
            })
        );
    }

    #[test]
    fn a_new_order_alone_is_a_patch() {
        let p = patch(
            json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "x", "status": "True"}]}),
            json!({"conditions": [{"type": "x", "status": "True"}, {"type": "Ready", "status": "True"}]}),
        )
        .unwrap();
        assert_eq!(p["status"], json!({"$setElementOrder/conditions": [{"type": "x"}, {"type": "Ready"}]}));
    }

    #[test]
    fn lists_appearing_or_vanishing_are_sent_whole_or_null() {
        let conditions = json!([{"type": "Ready", "status": "True"}]);
        let p = patch(json!({}), json!({"conditions": conditions})).unwrap();
        assert_eq!(p["status"], json!({"conditions": conditions}));
        let p = patch(json!({"conditions": conditions, "podIPs": [{"ip": "10.0.0.1"}]}), json!({})).unwrap();
        assert_eq!(p["status"], json!({"conditions": null, "podIPs": null}));
    }

    #[test]
    fn pod_ips_merge_by_ip() {
        let p = patch(
            json!({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}),
            json!({"podIPs": [{"ip": "10.0.0.2"}, {"ip": "fd00::1"}]}),
        )
        .unwrap();
        assert_eq!(
            p["status"],
            json!({"$setElementOrder/podIPs": [{"ip": "10.0.0.2"}, {"ip": "fd00::1"}],
                   "podIPs": [{"ip": "10.0.0.2"}, {"ip": "10.0.0.1", "$patch": "delete"}]})
        );
    }

    #[test]
    fn quantities_compare_by_canonical_form() {
        let statuses = |quantity: &str| {
            json!({"containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                                          "allocatedResources": {"memory": quantity},
                                          "resources": {"limits": {"cpu": quantity}}}]})
        };
        // Go writes both as "1": no patch.
        assert_eq!(patch(statuses("1000m"), statuses("1")), None);
        // Equal values, but Go writes "1Ki" and "1024": the list is sent.
        let p = patch(statuses("1Ki"), statuses("1024")).unwrap();
        assert_eq!(p["status"]["containerStatuses"], statuses("1024")["containerStatuses"]);
        // A quantity Go cannot write canonically is compared as written.
        assert_eq!(patch(statuses("1000E"), statuses("1000E")), None);
        // What is sent is in Go's form too.
        let p = patch(statuses("1Ki"), statuses("2048Ki")).unwrap();
        assert_eq!(p["status"]["containerStatuses"], statuses("2Mi")["containerStatuses"]);
    }

    #[test]
    fn times_compare_by_instant() {
        assert_eq!(
            patch(json!({"startTime": "2026-01-01T00:00:00Z"}), json!({"startTime": "2026-01-01T00:00:00.000Z"})),
            None
        );
        let p =
            patch(json!({"startTime": "2026-01-01T00:00:00Z"}), json!({"startTime": "2026-01-01T00:00:01Z"})).unwrap();
        assert_eq!(p["status"], json!({"startTime": "2026-01-01T00:00:01Z"}));
    }
}
