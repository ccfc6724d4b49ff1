//! Nodes and leases in the embedded API server over real HTTP: created, read, listed
//! (with selectors and as kubectl's `Table`), updated with resourceVersion
//! preconditions, status written apart, patched, deleted; and every limit of the pod
//! routes holding on them (body size, names, object size, the object cap).

use crate::raw_http::http;
use std::sync::Arc;

use podstatus_apiserver::{EmbeddedApiServer, ServeOptions};
use podstatus_backends::MemoryApiServer;
use serde_json::{Value, json};

fn serve(options: ServeOptions) -> EmbeddedApiServer {
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    EmbeddedApiServer::start_with(store, "127.0.0.1:0".parse().expect("addr"), options).expect("the server starts")
}

fn node(name: &str, ready: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"type": "podstatus", "node-role.kubernetes.io/agent": ""}},
        "status": {"conditions": [{"type": "Ready", "status": ready}],
                   "nodeInfo": {"kubeletVersion": "v1.33.0-podstatus", "machineID": "", "systemUUID": "", "bootID": "",
                                "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "",
                                "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"}}
    })
}

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];

#[test]
fn nodes_are_created_listed_updated_patched_and_deleted() {
    let server = serve(ServeOptions::default());
    let addr = server.local_addr();
    let body = |value: &Value| value.to_string().into_bytes();
    let created = http(addr, "POST", "/api/v1/nodes", &JSON, &body(&node("n1", "True")));
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
    let created = created.json();
    assert!(created["metadata"]["uid"].is_string() && created["metadata"]["namespace"].is_null(), "{created}");
    http(addr, "POST", "/api/v1/nodes", &JSON, &body(&node("n1", "True"))).status(409, "AlreadyExists");
    http(addr, "POST", "/api/v1/nodes", &JSON, &body(&node("n2", "False")));

    let list =
        http(addr, "GET", "/api/v1/nodes?labelSelector=type%3Dpodstatus&fieldSelector=metadata.name%3Dn2", &[], b"");
    let list = list.json();
    assert_eq!((&list["kind"], list["items"].as_array().map(Vec::len)), (&json!("NodeList"), Some(1)));
    let table = [("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")];
    let rows = http(addr, "GET", "/api/v1/nodes", &table, b"").json();
    let cells = &rows["rows"][0]["cells"];
    assert_eq!((&cells[1], &cells[2]), (&json!("Ready"), &json!("agent")), "{rows}");
    assert_eq!(rows["rows"][1]["cells"][1], "NotReady");

    // A PUT of the object keeps the status; a stale resourceVersion is a conflict.
    let mut update = created.clone();
    update["metadata"]["labels"]["zone"] = json!("a");
    update["status"] = json!({});
    let updated = http(addr, "PUT", "/api/v1/nodes/n1", &JSON, &body(&update)).json();
    assert_eq!(
        (&updated["metadata"]["labels"]["zone"], &updated["status"]["conditions"][0]["status"]),
        (&json!("a"), &json!("True"))
    );
    http(addr, "PUT", "/api/v1/nodes/n1", &JSON, &body(&update)).status(409, "Conflict");

    // The status subresource: a strategic merge patch merges conditions by type.
    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}});
    let strategic = [("Content-Type", "application/strategic-merge-patch+json")];
    let patched = http(addr, "PATCH", "/api/v1/nodes/n1/status", &strategic, &body(&patch)).json();
    assert_eq!(
        patched["status"]["conditions"],
        json!([{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}])
    );
    assert_eq!(patched["metadata"]["labels"]["zone"], "a");

    let precondition = json!({"preconditions": {"uid": "someone-else"}});
    http(addr, "DELETE", "/api/v1/nodes/n1", &JSON, &body(&precondition)).status(409, "Conflict");
    assert_eq!(http(addr, "DELETE", "/api/v1/nodes/n1", &[], b"").code, 200);
    let gone = http(addr, "GET", "/api/v1/nodes/n1", &[], b"").status(404, "NotFound");
    assert_eq!((&gone["details"]["kind"], &gone["message"]), (&json!("nodes"), &json!("nodes \"n1\" not found")));
}

#[test]
fn leases_are_namespaced_and_renewed_with_preconditions() {
    let server = serve(ServeOptions::default());
    let addr = server.local_addr();
    let path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
    let lease = json!({"metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40,
                                                           "renewTime": "2026-01-01T00:00:00.000000Z"}});
    let created = http(addr, "POST", path, &JSON, lease.to_string().as_bytes()).json();
    assert_eq!((&created["kind"], &created["metadata"]["namespace"]), (&json!("Lease"), &json!("kube-node-lease")));
    let mut renewed = created.clone();
    renewed["spec"]["renewTime"] = json!("2026-01-01T00:00:10.000000Z");
    let renewed = http(addr, "PUT", &format!("{path}/n1"), &JSON, renewed.to_string().as_bytes()).json();
    assert_eq!(renewed["spec"]["renewTime"], "2026-01-01T00:00:10.000000Z");
    http(addr, "PUT", &format!("{path}/n1"), &JSON, created.to_string().as_bytes()).status(409, "Conflict");
    let everywhere = http(addr, "GET", "/apis/coordination.k8s.io/v1/leases", &[], b"").json();
    assert_eq!(everywhere["items"][0]["metadata"]["name"], "n1");
    let elsewhere = http(addr, "GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/n1", &[], b"");
    elsewhere.status(404, "NotFound");
}

#[test]
fn the_pod_routes_limits_hold_for_nodes_and_leases() {
    let options =
        ServeOptions { max_body_bytes: 4096, max_object_bytes: 2048, max_objects: 2, ..ServeOptions::default() };
    let server = serve(options);
    let addr = server.local_addr();
    let mut big = node("big", "True");
    big["metadata"]["labels"]["x"] = json!("y".repeat(5000));
    http(addr, "POST", "/api/v1/nodes", &JSON, big.to_string().as_bytes()).status(413, "RequestEntityTooLarge");
    big["metadata"]["labels"]["x"] = json!("y".repeat(2500));
    http(addr, "POST", "/api/v1/nodes", &JSON, big.to_string().as_bytes()).status(413, "RequestEntityTooLarge");
    let invalid = http(addr, "POST", "/api/v1/nodes", &JSON, node("Not_A_Name", "True").to_string().as_bytes());
    assert_eq!(invalid.status(422, "Invalid")["details"]["causes"][0]["field"], "metadata.name");
    let lease = json!({"metadata": {"name": "n1"}});
    let bad_namespace = http(
        addr,
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/Bad_NS/leases",
        &JSON,
        lease.to_string().as_bytes(),
    );
    bad_namespace.status(422, "Invalid");
    let mistyped = json!({"metadata": {"name": "n1"}, "spec": {"leaseDurationSeconds": "forty"}});
    let path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
    http(addr, "POST", path, &JSON, mistyped.to_string().as_bytes()).status(400, "BadRequest");
    for name in ["n1", "n2"] {
        assert_eq!(http(addr, "POST", "/api/v1/nodes", &JSON, node(name, "True").to_string().as_bytes()).code, 201);
    }
    let refused = http(addr, "POST", path, &JSON, lease.to_string().as_bytes()).status(403, "Forbidden");
    assert!(refused["message"].as_str().is_some_and(|m| m.contains("exceeded quota")), "{refused}");
    http(addr, "GET", "/api/v1/nodes?watch=true", &[], b"").status(405, "MethodNotAllowed");
}
