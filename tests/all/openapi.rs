//! The embedded server's OpenAPI documents, as a client reads them: `/openapi/v3`'s
//! index and each document at its hashed URL, `/openapi/v2` as JSON or protobuf by
//! `Accept`, and every path and method the documents promise answered by the server
//! (none of them its "no such path" 404 or a 405), so the documents cannot drift from
//! the routes. kubectl's own reading of them is `kubectl.rs`'s.

use std::sync::Arc;

use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::{ApiServer, MemoryApiServer};
use serde_json::Value;

use crate::raw_http::http;

fn server() -> EmbeddedApiServer {
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    EmbeddedApiServer::start(store, "127.0.0.1:0".parse().expect("addr")).expect("server starts")
}

#[test]
fn the_v3_index_names_each_document_at_a_url_that_serves_it() {
    let server = server();
    let index = http(server.local_addr(), "GET", "/openapi/v3", &[], b"");
    assert_eq!(index.code, 200);
    let paths = index.json()["paths"].as_object().cloned().expect("paths");
    for name in ["api/v1", "apis/coordination.k8s.io/v1", "api", "apis", "version"] {
        assert!(paths.contains_key(name), "{name} in {paths:?}");
    }
    for (name, entry) in &paths {
        let url = entry["serverRelativeURL"].as_str().expect("a URL");
        let document = http(server.local_addr(), "GET", url, &[("Accept", "application/json")], b"");
        assert_eq!(document.code, 200, "{name}");
        assert_eq!(document.header("cache-control"), Some("public, immutable"), "{name}: the hash pins it");
        assert!(document.json()["openapi"].as_str().is_some_and(|v| v.starts_with("3.")), "{name}");
        let stale = url.split_once("?hash=").map(|(path, _)| format!("{path}?hash=0")).expect("a hash");
        let moved = http(server.local_addr(), "GET", &stale, &[], b"");
        assert_eq!((moved.code, moved.header("location")), (301, Some(url)), "{name}: a stale hash is sent on");
    }
    let missing = http(server.local_addr(), "GET", "/openapi/v3/apis/apps/v1", &[], b"");
    missing.status(404, "NotFound");
}

#[test]
fn v2_is_json_or_protobuf_as_the_client_accepts() {
    let server = server();
    let json = http(server.local_addr(), "GET", "/openapi/v2", &[], b"");
    assert_eq!((json.code, json.header("content-type")), (200, Some("application/json")));
    let document = json.json();
    assert_eq!(document["swagger"], "2.0");
    assert!(document["definitions"]["io.k8s.api.core.v1.Pod"].is_object());
    assert!(document["definitions"].get("io.k8s.api.apps.v1.Deployment").is_none(), "only the kinds served");
    let protobuf = http(
        server.local_addr(),
        "GET",
        "/openapi/v2",
        &[("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")],
        b"",
    );
    assert_eq!(protobuf.code, 200);
    assert_eq!(protobuf.header("content-type"), Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"));
    // gnostic's Document starts with field 1 (`swagger`, a string): tag 0x0a, length 3.
    assert_eq!(&protobuf.body[..5], b"\x0a\x032.0");
    let refused = http(server.local_addr(), "GET", "/openapi/v2", &[("Accept", "application/yaml")], b"");
    refused.status(406, "NotAcceptable");
    let posted = http(server.local_addr(), "POST", "/openapi/v2", &[], b"");
    posted.status(405, "MethodNotAllowed");
}

/// Every operation the documents list is one the server routes: requested with
/// placeholders filled in, it gets an answer about the object (404 for one that is not
/// there, 400 or 422 for an empty body), never "the server could not find the
/// requested resource" nor 405.
#[test]
fn every_operation_the_documents_promise_is_routed() {
    let server = server();
    let index = http(server.local_addr(), "GET", "/openapi/v3", &[], b"").json();
    let mut operations = 0;
    for entry in index["paths"].as_object().expect("paths").values() {
        let url = entry["serverRelativeURL"].as_str().expect("a URL");
        let document = http(server.local_addr(), "GET", url, &[], b"").json();
        for (path, item) in document["paths"].as_object().expect("paths") {
            let concrete = path.replace("{namespace}", "default").replace("{name}", "nothing-here");
            for method in ["get", "put", "post", "patch", "delete"] {
                if item.get(method).is_none() {
                    continue;
                }
                operations += 1;
                let content_type = if method == "patch" { "application/merge-patch+json" } else { "application/json" };
                let reply = http(
                    server.local_addr(),
                    &method.to_uppercase(),
                    &concrete,
                    &[("Content-Type", content_type)],
                    b"{}",
                );
                let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
                let unrouted = reply.code == 405
                    || (reply.code == 404 && body["message"] == "the server could not find the requested resource");
                assert!(!unrouted, "{method} {path}: {} {body}", reply.code);
            }
        }
    }
    assert!(operations >= 30, "{operations} operations: the documents list the pods', nodes' and leases'");
}

/// `dryRun` is not among the documents' parameters, and a request that asks for one
/// anyway is refused before anything is written.
#[test]
fn a_dry_run_is_neither_promised_nor_made() {
    let server = server();
    let v2 = http(server.local_addr(), "GET", "/openapi/v2", &[], b"").body;
    assert!(!String::from_utf8_lossy(&v2).contains("\"dryRun\""));
    let pod = br#"{"metadata": {"name": "dry"}, "spec": {"containers": [{"name": "a", "image": "i"}]}}"#;
    let reply = http(server.local_addr(), "POST", "/api/v1/namespaces/default/pods?dryRun=All", &[], pod);
    let status = reply.status(400, "BadRequest");
    assert!(status["message"].as_str().is_some_and(|m| m.contains("dryRun")), "{status}");
    assert!(server.store().get_pod("default", "dry").is_err(), "nothing was written");
}

/// The documents served are data made by a program from upstream's published spec:
/// made again, they are the same bytes (a change of the routes or of the release is
/// followed by `go run ./cmd/openapi` in `upstream/`, as its README says).
#[test]
fn the_documents_are_what_upstream_cmd_openapi_makes() {
    let workspace = podstatus_tests::workspace_dir();
    let committed = workspace.join("host/apiserver/openapi");
    let made = std::env::temp_dir().join(format!("podstatus-openapi-{}", std::process::id()));
    let output = std::process::Command::new("go")
        .args(["run", "./cmd/openapi", "-out"])
        .arg(&made)
        .current_dir(workspace.join("upstream"))
        // The machine's Go, as the oracle's builds: never another toolchain.
        .env("GOTOOLCHAIN", "local")
        .output()
        .expect("Go 1.25 or later on PATH (the upstream tests need it too)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut compared = 0;
    for file in ["v2.json", "v2.pb"].into_iter().map(String::from).chain(
        std::fs::read_dir(made.join("v3"))
            .expect("v3 made")
            .map(|entry| format!("v3/{}", entry.expect("an entry").file_name().to_string_lossy())),
    ) {
        let fresh = std::fs::read(made.join(&file)).expect("made");
        let kept = std::fs::read(committed.join(&file)).unwrap_or_else(|e| panic!("{file} is not committed: {e}"));
        assert!(fresh == kept, "{file} differs from what upstream/cmd/openapi makes: run it again");
        compared += 1;
    }
    assert_eq!(compared, 8, "v2.json, v2.pb and six v3 documents");
    std::fs::remove_dir_all(&made).expect("scratch removed");
}
