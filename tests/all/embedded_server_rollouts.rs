//! `PluginRollout`s in the embedded API server over real HTTP, as a cluster serves the
//! CRD of `host/deploy/`: discovered under `podstatus.io/v1alpha1`, created and read,
//! refused with 422 and a cause per field when they are not what the resource must be
//! (a digest that is no SHA-256, both a file and a URL, a share of every node), and
//! their status written only through `/status` (the shards' and the leader's), the
//! spec only through the object.

use std::sync::Arc;

use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::MemoryApiServer;
use serde_json::{Value, json};

use crate::raw_http::http;

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];
const ROLLOUTS: &str = "/apis/podstatus.io/v1alpha1/namespaces/fleet/pluginrollouts";

fn rollout(name: &str) -> Value {
    json!({
        "apiVersion": "podstatus.io/v1alpha1", "kind": "PluginRollout",
        "metadata": {"name": name},
        "spec": {"fleet": "f", "plugin": {"sha256": "ab".repeat(32), "file": "/plugins/v3.wasm"}, "canary": "10%"}
    })
}

#[test]
fn rollouts_are_discovered_validated_and_their_status_written_apart() {
    let store = Arc::new(MemoryApiServer::new());
    let server = EmbeddedApiServer::start(store, "127.0.0.1:0".parse().expect("addr")).expect("the server starts");
    let addr = server.local_addr();
    let body = |value: &Value| value.to_string().into_bytes();

    let groups = http(addr, "GET", "/apis", &[], b"").json();
    let names: Vec<&str> =
        groups["groups"].as_array().expect("groups").iter().filter_map(|g| g["name"].as_str()).collect();
    assert!(names.contains(&"podstatus.io"), "{groups}");
    let resources = http(addr, "GET", "/apis/podstatus.io/v1alpha1", &[], b"").json();
    let listed: Vec<&str> =
        resources["resources"].as_array().expect("resources").iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(listed, ["pluginrollouts", "pluginrollouts/status"], "{resources}");

    let created = http(addr, "POST", ROLLOUTS, &JSON, &body(&rollout("v3")));
    assert_eq!(created.code, 201, "{}", String::from_utf8_lossy(&created.body));
    let created = created.json();
    assert_eq!(created["metadata"]["namespace"], "fleet");

    let mut broken = rollout("broken");
    broken["spec"]["plugin"]["sha256"] = json!("not-a-digest");
    broken["spec"]["plugin"]["url"] = json!("https://example.com/v3.wasm");
    broken["spec"]["canary"] = json!("100%");
    let refused = http(addr, "POST", ROLLOUTS, &JSON, &body(&broken)).status(422, "Invalid");
    let fields: Vec<&str> =
        refused["details"]["causes"].as_array().expect("causes").iter().filter_map(|c| c["field"].as_str()).collect();
    assert_eq!(fields, ["spec.plugin.sha256", "spec.plugin", "spec.canary"], "{refused}");

    // The status goes through /status only, the spec through the object only.
    let path = format!("{ROLLOUTS}/v3");
    let mut object = http(addr, "GET", &path, &[], b"").json();
    object["status"] =
        json!({"phase": "Promoted", "decision": {"outcome": "Promoted", "by": "leader", "reason": "r", "leader": "l"}});
    object["spec"]["canary"] = json!("20%");
    let written = http(addr, "PUT", &format!("{path}/status"), &JSON, &body(&object)).json();
    assert_eq!((&written["status"]["phase"], &written["spec"]["canary"]), (&json!("Promoted"), &json!("10%")));
    let mut object = written.clone();
    object["status"] = json!({"phase": "RolledBack"});
    object["spec"]["decision"] = json!("RollBack");
    let written = http(addr, "PUT", &path, &JSON, &body(&object)).json();
    assert_eq!((&written["status"]["phase"], &written["spec"]["decision"]), (&json!("Promoted"), &json!("RollBack")));
    // A status that breaks the resource's rules is refused too.
    let mut object = written.clone();
    object["status"]["decision"]["outcome"] = json!("Canary");
    http(addr, "PUT", &format!("{path}/status"), &JSON, &body(&object)).status(422, "Invalid");
    // A stale resourceVersion is a conflict, as the shards' reports count on.
    let mut stale = created.clone();
    stale["status"] = json!({"phase": "Canary"});
    http(addr, "PUT", &format!("{path}/status"), &JSON, &body(&stale)).status(409, "Conflict");
}
