//! Server-side printing of nodes and leases: the `Table`s `kubectl get nodes` and
//! `kubectl get leases -n kube-node-lease` show (Kubernetes' `printNode` and
//! `printLease` columns, ported).

use serde_json::{Value, json};

use crate::objects::{LEASES, NODES, Resource};
use crate::table::{self, IncludeObject, human_duration};

/// The `Table` of `objects` of `resource`, with the list's resourceVersion when it is one.
pub(crate) fn table<'a>(
    resource: &Resource,
    objects: impl IntoIterator<Item = &'a Value>,
    resource_version: Option<u64>,
    include: IncludeObject,
    now: jiff::Timestamp,
) -> Value {
    let rows: Vec<Value> = objects.into_iter().map(|object| row(resource, object, include, now)).collect();
    table::document(column_definitions(resource), rows, resource_version)
}

fn column_definitions(resource: &Resource) -> Value {
    let column = |name: &str, priority: u8| json!({"name": name, "type": "string", "format": if name == "Name" { "name" } else { "" }, "description": "", "priority": priority});
    if resource.plural == NODES.plural {
        json!([
            column("Name", 0),
            column("Status", 0),
            column("Roles", 0),
            column("Age", 0),
            column("Version", 0),
            column("Internal-IP", 1),
            column("External-IP", 1),
            column("OS-Image", 1),
            column("Kernel-Version", 1),
            column("Container-Runtime", 1),
        ])
    } else if resource.plural == LEASES.plural {
        json!([column("Name", 0), column("Holder", 0), column("Age", 0)])
    } else {
        json!([column("Name", 0), column("Age", 0)])
    }
}

/// One row: the cells, and the object as `includeObject` asks.
pub(crate) fn row(resource: &Resource, object: &Value, include: IncludeObject, now: jiff::Timestamp) -> Value {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
    let or_none = |value: String| if value.is_empty() { "<none>".to_owned() } else { value };
    let name = text("/metadata/name");
    let age = text("/metadata/creationTimestamp")
        .parse::<jiff::Timestamp>()
        .map_or_else(|_| "<unknown>".to_owned(), |then| human_duration(now, then));
    let cells = if resource.plural == NODES.plural {
        let info = |field: &str| text(&format!("/status/nodeInfo/{field}"));
        json!([
            name,
            node_status(object),
            node_roles(object),
            age,
            info("kubeletVersion"),
            or_none(address(object, "InternalIP")),
            or_none(address(object, "ExternalIP")),
            or_none(info("osImage")),
            or_none(info("kernelVersion")),
            or_none(info("containerRuntimeVersion")),
        ])
    } else if resource.plural == LEASES.plural {
        json!([name, text("/spec/holderIdentity"), age])
    } else {
        json!([name, age])
    };
    let mut row = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": object["metadata"]});
        }
        IncludeObject::Object => row["object"] = object.clone(),
    }
    row
}

/// `Ready`, `NotReady` or `Unknown` from the Ready condition, `,SchedulingDisabled` when
/// cordoned (as kubectl prints it).
fn node_status(node: &Value) -> String {
    let conditions =
        node.pointer("/status/conditions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let ready = conditions.iter().find(|condition| condition["type"] == "Ready");
    let mut status = match ready.and_then(|condition| condition["status"].as_str()) {
        Some("True") => "Ready".to_owned(),
        Some("False") => "NotReady".to_owned(),
        _ => "Unknown".to_owned(),
    };
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

/// Roles from `node-role.kubernetes.io/<role>` labels and `kubernetes.io/role`.
fn node_roles(node: &Value) -> String {
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object);
    let mut roles: Vec<&str> = labels
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| match key.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role),
            _ if key == "kubernetes.io/role" => value.as_str().filter(|role| !role.is_empty()),
            _ => None,
        })
        .collect();
    roles.sort_unstable();
    roles.dedup();
    if roles.is_empty() { "<none>".to_owned() } else { roles.join(",") }
}

fn address(node: &Value, kind: &str) -> String {
    let addresses = node.pointer("/status/addresses").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    addresses
        .iter()
        .filter(|address| address["type"] == kind)
        .filter_map(|address| address["address"].as_str())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_rows_read_as_kubectl_prints_them() {
        let node = json!({
            "metadata": {"name": "n1", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"node-role.kubernetes.io/agent": "", "type": "virtual"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                       "nodeInfo": {"kubeletVersion": "v1.33.0-podstatus"}}
        });
        let now = "2026-01-01T00:02:00Z".parse().expect("a time");
        let row = row(&NODES, &node, IncludeObject::None, now);
        assert_eq!(
            row["cells"],
            json!([
                "n1",
                "NotReady,SchedulingDisabled",
                "agent",
                "2m",
                "v1.33.0-podstatus",
                "10.0.0.1",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ])
        );
    }
}
