//! Strategic merge patches (`application/strategic-merge-patch+json`), as far as the
//! kinds served need: objects merge key by key, `null` removes, lists with a merge key
//! in Kubernetes' schema (`patchMergeKey`) merge item by item (an item
//! `{"$patch": "delete"}` removes its match), other lists are replaced, and the `$`
//! directives (`$setElementOrder`, `$retainKeys`) are dropped.
//!
//! Hand-written: no Rust crate applies strategic merge patches (they need Kubernetes'
//! schema), and these kinds need only the merge keys below. A list's key is told by
//! its field's name alone: within a pod, node or lease no two lists of one name have
//! different keys. What kubectl sends on `apply` of a changed pod is such a patch: the
//! container it changed, by name, with only the fields that changed.

use serde_json::Value;

/// Which field of a list's items identifies them, by the list's field name.
pub(crate) type MergeKeys = fn(&str) -> Option<&'static str>;

/// The merge keys of nodes' and leases' lists.
pub(crate) fn node_and_lease_keys(field: &str) -> Option<&'static str> {
    match field {
        "conditions" | "addresses" => Some("type"),
        "taints" => Some("key"),
        _ => None,
    }
}

/// The merge keys of a pod's lists (`k8s.io/api/core/v1/types.go`'s `patchMergeKey`).
pub(crate) fn pod_keys(field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates" => Some("name"),
        "ports" => Some("containerPort"),
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "hostAliases" => Some("ip"),
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        "topologySpreadConstraints" => Some("topologyKey"),
        "resizePolicy" => Some("resourceName"),
        _ => None,
    }
}

/// Applies `patch` to `target` with the merge keys `keys`.
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value, keys: MergeKeys) {
    let (Value::Object(target_map), Value::Object(patch_map)) = (&mut *target, patch) else {
        *target = without_directives(patch);
        return;
    };
    for (key, value) in patch_map {
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            target_map.remove(key);
            continue;
        }
        match (keys(key), value, target_map.get_mut(key)) {
            (Some(merge_key), Value::Array(items), Some(Value::Array(current))) => {
                for item in items {
                    let id = &item[merge_key];
                    let existing = current.iter().position(|candidate| &candidate[merge_key] == id);
                    match (existing, item.get("$patch").and_then(Value::as_str)) {
                        (Some(at), Some("delete")) => {
                            current.remove(at);
                        }
                        (None, Some("delete")) => {}
                        (Some(at), _) => strategic_merge(&mut current[at], item, keys),
                        (None, _) => current.push(without_directives(item)),
                    }
                }
            }
            (_, Value::Object(_), Some(existing)) if existing.is_object() => strategic_merge(existing, value, keys),
            _ => {
                target_map.insert(key.clone(), without_directives(value));
            }
        }
    }
}

fn without_directives(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| !key.starts_with('$'))
                .map(|(k, v)| (k.clone(), without_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strategic_patches_merge_conditions_by_type_and_taints_by_key() {
        let mut node = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"},
            {"type": "MemoryPressure", "status": "False"}
        ]}, "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}});
        let patch = json!({
            "status": {"$setElementOrder/conditions": [{"type": "Ready"}], "conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady"},
                {"type": "MemoryPressure", "$patch": "delete"}
            ]},
            "spec": {"taints": [{"key": "b", "effect": "NoExecute"}], "unschedulable": true}
        });
        strategic_merge(&mut node, &patch, node_and_lease_keys);
        assert_eq!(
            node["status"]["conditions"],
            json!([{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}])
        );
        assert_eq!(node["spec"]["taints"].as_array().map(Vec::len), Some(2));
        assert_eq!(node["spec"]["unschedulable"], true);
    }

    /// What `kubectl apply` sends for a manifest whose image changed: the container by
    /// name with its new image, and the order of the list. The container's other
    /// fields stay (a merge patch would have replaced the list).
    #[test]
    fn a_pods_containers_merge_by_name() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "busybox"}
        ]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
            "containers": [{"name": "app", "image": "nginx:1.28", "env": [{"name": "B", "value": "2"}]}]
        }});
        strategic_merge(&mut pod, &patch, pod_keys);
        let app = &pod["spec"]["containers"][0];
        assert_eq!((&app["image"], &app["ports"][0]["containerPort"]), (&json!("nginx:1.28"), &json!(80)));
        assert_eq!(app["env"], json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]));
        assert_eq!(pod["spec"]["containers"][1]["image"], "busybox");
    }
}
