//! The embedded API server over real HTTP: discovery, pods created, read, listed with
//! selectors, status written and patched (with conflicts), deleted (preconditions,
//! graceful deletion), watched (in order, resumed, expired), and Kubernetes `Status`
//! bodies for bad requests. Raw HTTP/1.1 where the wire matters (codes, bodies, chunked
//! watches), kube-rs where a real client should simply work.

use crate::raw_http::{PATIENCE, Reply, create, http, open, read_chunk, read_head};
use std::io::BufReader;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use podstatus_apiserver::{EmbeddedApiServer, ServeOptions};
use podstatus_backends::{ApiServer, MemoryApiServer};
use serde_json::{Value, json};

fn serve() -> EmbeddedApiServer {
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    EmbeddedApiServer::start(store, "127.0.0.1:0".parse().expect("addr")).expect("the server starts")
}

fn pod(name: &str, node: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "app:1"}]},
    })
}

/// A watch response read event by event.
struct Watch {
    reader: BufReader<TcpStream>,
    pending: Vec<u8>,
}

impl Watch {
    fn open(addr: SocketAddr, path: &str) -> Self {
        let stream = open(addr, "GET", path, &[], b"");
        let mut reader = BufReader::new(stream);
        let (code, headers) = read_head(&mut reader);
        assert_eq!(code, 200, "{path}");
        assert!(headers.iter().any(|(n, v)| n == "transfer-encoding" && v == "chunked"), "{headers:?}");
        Self { reader, pending: Vec::new() }
    }

    /// The next event as (type, object), or None when the stream ended.
    fn next(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                let event: Value = serde_json::from_slice(&line).expect("an event is one JSON line");
                return Some((event["type"].as_str().expect("type").to_owned(), event["object"].clone()));
            }
            self.pending.extend(read_chunk(&mut self.reader)?);
        }
    }

    /// The next event's type and the name (or Status reason) of its object.
    fn next_brief(&mut self) -> Option<(String, String)> {
        let (kind, object) = self.next()?;
        let what = object["metadata"]["name"].as_str().or(object["reason"].as_str()).unwrap_or_default().to_owned();
        Some((kind, what))
    }
}

fn names(list: &Value) -> Vec<&str> {
    list["items"].as_array().expect("items").iter().filter_map(|pod| pod["metadata"]["name"].as_str()).collect()
}

fn rv(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse().ok()).expect("a resourceVersion string")
}

fn kube_api(server: &EmbeddedApiServer) -> Api<Pod> {
    let config = kube::Config::new(server.url().parse().expect("url"));
    Api::namespaced(kube::Client::try_from(config).expect("client"), "ns")
}

fn kube_error(error: kube::Error) -> (u16, String) {
    match error {
        kube::Error::Api(status) => (status.code, status.reason),
        other => panic!("not an API error: {other}"),
    }
}

#[test]
fn discovery_answers_what_clients_ask() {
    let server = serve();
    let addr = server.local_addr();
    let version = http(addr, "GET", "/version/", &[], b"").json();
    for field in
        ["major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"]
    {
        assert!(version[field].is_string(), "/version lacks {field}: {version}");
    }
    assert_eq!((&version["major"], &version["minor"]), (&json!("1"), &json!("35")));
    let api = http(addr, "GET", "/api/", &[], b"").json();
    assert_eq!(api["versions"], json!(["v1"]));
    assert_eq!(api["serverAddressByClientCIDRs"][0]["serverAddress"], json!(addr.to_string()));
    let apis = http(addr, "GET", "/apis", &[], b"").json();
    assert_eq!((&apis["kind"], &apis["groups"][0]["name"]), (&json!("APIGroupList"), &json!("coordination.k8s.io")));
    let leases = http(addr, "GET", "/apis/coordination.k8s.io/v1", &[], b"").json();
    assert_eq!(
        (&leases["resources"][0]["name"], &leases["resources"][0]["namespaced"]),
        (&json!("leases"), &json!(true))
    );
    let resources = http(addr, "GET", "/api/v1/", &[], b"").json();
    assert_eq!(resources["resources"][0]["name"], "pods");
    assert_eq!(resources["resources"][0]["singularName"], "pod");
    assert_eq!(resources["resources"][0]["shortNames"], json!(["po"]));
    assert_eq!(resources["resources"][1]["name"], "pods/status");
    assert_eq!(resources["resources"][1]["singularName"], "");
    assert_eq!(
        (&resources["resources"][2]["name"], &resources["resources"][2]["namespaced"]),
        (&json!("nodes"), &json!(false))
    );

    let aggregated =
        [("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")];
    let groups = http(addr, "GET", "/apis", &aggregated, b"");
    assert_eq!(
        groups.header("content-type"),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    assert_eq!(groups.json()["items"][0]["versions"][0]["resources"][0]["resource"], "leases");
    let core = http(addr, "GET", "/api", &aggregated, b"").json();
    assert_eq!(core["kind"], "APIGroupDiscoveryList");
    let pods = &core["items"][0]["versions"][0]["resources"][0];
    assert_eq!((&pods["resource"], &pods["scope"]), (&json!("pods"), &json!("Namespaced")));
    assert_eq!(pods["subresources"][0]["subresource"], "status");
}

#[test]
fn pods_are_created_read_and_listed_with_selectors() {
    let server = serve();
    let addr = server.local_addr();
    let created = create(addr, &pod("a", "node-1", json!({"app": "web"})));
    assert!(created["metadata"]["uid"].as_str().is_some_and(|uid| uid.len() == 36), "a UID is given: {created}");
    assert!(created["metadata"]["creationTimestamp"].is_string());
    assert_eq!(created["status"]["phase"], "Pending");
    create(addr, &pod("b", "node-2", json!({"app": "db"})));
    create(addr, &pod("c", "node-1", json!({"app": "cache", "tier": "x"})));
    let taken = http(addr, "POST", "/api/v1/namespaces/ns/pods", &[], pod("a", "n", json!({})).to_string().as_bytes());
    assert_eq!((taken.code, taken.json()["reason"].clone()), (409, json!("AlreadyExists")));

    let got = http(addr, "GET", "/api/v1/namespaces/ns/pods/a", &[], b"").json();
    assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);
    let list =
        |query: &str| http(addr, "GET", &format!("/api/v1/namespaces/ns/pods?limit=500&{query}"), &[], b"").json();
    assert_eq!(names(&list("fieldSelector=spec.nodeName%3Dnode-1")), ["a", "c"]);
    assert_eq!(names(&list("fieldSelector=spec.nodeName!%3Dnode-1")), ["b"]);
    assert_eq!(names(&list("fieldSelector=spec.nodeName%3D%3Dnode-1,metadata.name%3Dc")), ["c"]);
    assert_eq!(names(&list("labelSelector=app+in+%28web%2Cdb%29")), ["a", "b"]);
    assert_eq!(names(&list("labelSelector=app%21%3Dweb,%21tier")), ["b"]);
    assert_eq!(names(&list("labelSelector=tier")), ["c"]);
    let empty = list("labelSelector=app%3Dnone");
    assert_eq!(empty["items"], json!([]), "never null");
    assert_eq!(empty["metadata"]["resourceVersion"], json!("3"), "three creates; the refused one wrote nothing");
    let all = http(addr, "GET", "/api/v1/pods", &[], b"").json();
    assert_eq!((all["kind"].clone(), names(&all)), (json!("PodList"), vec!["a", "b", "c"]));
    assert_eq!(names(&http(addr, "GET", "/api/v1/namespaces/other/pods", &[], b"").json()), Vec::<&str>::new());
    let bad = http(addr, "GET", "/api/v1/pods?fieldSelector=spec.image%3Dx", &[], b"");
    assert_eq!((bad.code, bad.json()["reason"].clone()), (400, json!("BadRequest")));

    // The same through kube-rs.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let api = kube_api(&server);
        let pods = api.list(&ListParams::default().fields("spec.nodeName=node-2")).await.expect("list");
        assert_eq!(pods.items.len(), 1);
        let labelled = api.list(&ListParams::default().labels("app notin (web)")).await.expect("list");
        assert_eq!(labelled.items.iter().filter_map(|p| p.metadata.name.as_deref()).collect::<Vec<_>>(), ["b", "c"]);
        let missing = api.get("nope").await.expect_err("absent");
        assert_eq!(kube_error(missing), (404, "NotFound".into()));
    });
}

#[test]
fn lists_come_in_pages_cut_from_one_snapshot() {
    let server = serve();
    let addr = server.local_addr();
    for name in ["a", "b", "c", "d", "e"] {
        create(addr, &pod(name, if name == "c" { "node-2" } else { "node-1" }, json!({})));
    }
    let get = |query: &str| http(addr, "GET", &format!("/api/v1/namespaces/ns/pods?{query}"), &[], b"");
    let first = get("limit=2").json();
    assert_eq!(names(&first), ["a", "b"]);
    let token = first["metadata"]["continue"].as_str().expect("more are left: a continue token").to_owned();
    let list_version = rv(&first);

    // Writes between pages do not show in the pages still to come: every page is cut
    // from the first one's snapshot, as etcd serves a continued list at its revision.
    create(addr, &pod("bb", "node-1", json!({})));
    let status = json!({"metadata": {"name": "d", "namespace": "ns"}, "status": {"phase": "Running"}});
    let put = http(addr, "PUT", "/api/v1/namespaces/ns/pods/d/status", &[], status.to_string().as_bytes());
    assert_eq!(put.code, 200);
    let second = get(&format!("limit=2&continue={token}")).json();
    assert_eq!((names(&second), rv(&second)), (vec!["c", "d"], list_version));
    assert_eq!(second["items"][1]["status"]["phase"], "Pending", "d as it was when the list began");
    let token = second["metadata"]["continue"].as_str().expect("e is left").to_owned();
    let last = get(&format!("limit=2&continue={token}")).json();
    assert_eq!(names(&last), ["e"]);
    assert!(last["metadata"]["continue"].is_null(), "the last page has no token: {last}");

    // The snapshot went with its last page: the token is now too old, 410 as for a
    // token older than etcd's compaction; a new list sees the writes.
    let gone = get(&format!("limit=2&continue={token}"));
    assert_eq!((gone.code, gone.json()["reason"].clone()), (410, json!("Expired")));
    assert_eq!(names(&get("limit=10").json()), ["a", "b", "bb", "c", "d", "e"]);

    // Selectors count only the pods they keep; tables page too (kubectl asks for both).
    let node_1 = get("limit=3&fieldSelector=spec.nodeName%3Dnode-1").json();
    assert_eq!(names(&node_1), ["a", "b", "bb"]);
    let token = node_1["metadata"]["continue"].as_str().expect("d and e are left").to_owned();
    let rest = get(&format!("limit=3&fieldSelector=spec.nodeName%3Dnode-1&continue={token}")).json();
    assert_eq!(names(&rest), ["d", "e"]);
    let accept = [("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")];
    let table = http(addr, "GET", "/api/v1/namespaces/ns/pods?limit=4", &accept, b"").json();
    assert_eq!(table["rows"].as_array().map(Vec::len), Some(4));
    assert!(table["metadata"]["continue"].is_string(), "{table}");

    // What a client sends is read as kube-apiserver reads it.
    for (query, code) in [("limit=x", 400), ("continue=%25%25", 400), ("continue=abc&resourceVersion=3", 400)] {
        let refused = get(query);
        assert_eq!((refused.code, refused.json()["reason"].clone()), (code, json!("BadRequest")), "{query}");
    }
    assert_eq!(names(&get("limit=0").json()).len(), 6, "limit 0: no limit");

    // kube-rs follows the tokens to the end.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let api = kube_api(&server);
        let (mut seen, mut token) = (Vec::new(), None::<String>);
        loop {
            let mut params = ListParams::default().limit(2);
            if let Some(token) = token.take() {
                params = params.continue_token(&token);
            }
            let page = api.list(&params).await.expect("a page");
            assert!(page.items.len() <= 2);
            seen.extend(page.items.into_iter().filter_map(|p| p.metadata.name));
            match page.metadata.continue_ {
                Some(next) if !next.is_empty() => token = Some(next),
                _ => break,
            }
        }
        assert_eq!(seen, ["a", "b", "bb", "c", "d", "e"]);
    });
}

#[test]
fn a_table_gives_kubectls_wide_columns() {
    let server = serve();
    let addr = server.local_addr();
    let mut running = pod("a", "node-1", json!({}));
    running["status"] = json!({"phase": "Running", "podIP": "10.0.0.9"});
    create(addr, &running);
    let accept = [("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")];
    let table = http(addr, "GET", "/api/v1/namespaces/ns/pods?limit=500", &accept, b"").json();
    assert_eq!(table["kind"], "Table");
    let columns: Vec<_> =
        table["columnDefinitions"].as_array().expect("columns").iter().map(|c| c["name"].clone()).collect();
    assert_eq!(
        columns,
        ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]
            .map(|c| json!(c))
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(
        (&cells[0], &cells[1], &cells[2], &cells[5], &cells[6]),
        (&json!("a"), &json!("0/1"), &json!("Running"), &json!("10.0.0.9"), &json!("node-1"))
    );
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let one = http(addr, "GET", "/api/v1/namespaces/ns/pods/a?includeObject=Object", &accept, b"").json();
    assert_eq!(one["rows"][0]["object"]["spec"]["nodeName"], "node-1");
}

#[test]
fn status_writes_conflict_on_a_stale_resource_version() {
    let server = serve();
    let addr = server.local_addr();
    let created = create(addr, &pod("a", "node-1", json!({})));
    let mut write = created.clone();
    write["status"] = json!({"phase": "Running"});
    let path = "/api/v1/namespaces/ns/pods/a/status";
    let written = http(addr, "PUT", path, &[], write.to_string().as_bytes());
    assert_eq!(written.code, 200);
    assert_eq!(written.json()["status"]["phase"], "Running");
    // The same write again carries the old resourceVersion now.
    let stale = http(addr, "PUT", path, &[("Content-Type", "application/json")], write.to_string().as_bytes());
    assert_eq!(stale.code, 409);
    let status = stale.json();
    assert_eq!(
        (&status["kind"], &status["status"], &status["reason"]),
        (&json!("Status"), &json!("Failure"), &json!("Conflict"))
    );
    assert!(status["message"].as_str().is_some_and(|m| m.contains("the object has been modified")), "{status}");
    // A UID precondition naming another pod conflicts too.
    write["metadata"]["resourceVersion"] = json!("");
    write["metadata"]["uid"] = json!("someone-else");
    assert_eq!(http(addr, "PUT", path, &[], write.to_string().as_bytes()).code, 409);
    // A PUT of the pod keeps the status (it is written only through /status).
    let mut relabelled = written.json();
    relabelled["metadata"]["labels"] = json!({"x": "y"});
    relabelled["status"] = json!({"phase": "Failed"});
    let replaced = http(addr, "PUT", "/api/v1/namespaces/ns/pods/a", &[], relabelled.to_string().as_bytes()).json();
    assert_eq!((&replaced["metadata"]["labels"]["x"], &replaced["status"]["phase"]), (&json!("y"), &json!("Running")));

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let api = kube_api(&server);
        let mut pod = api.get("a").await.expect("get");
        pod.metadata.resource_version = Some("1".into());
        let error = api.replace_status("a", &PostParams::default(), &pod).await.expect_err("stale");
        assert_eq!(kube_error(error), (409, "Conflict".into()));
    });
}

#[test]
fn status_patches_merge_conditions_by_type() {
    let server = serve();
    let addr = server.local_addr();
    let created = create(addr, &pod("a", "node-1", json!({})));
    let uid = created["metadata"]["uid"].as_str().expect("uid").to_owned();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let api = kube_api(&server);
        let first = json!({"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}});
        api.patch_status("a", &PatchParams::default(), &Patch::Strategic(first)).await.expect("patch");
        // The kubelet's shape: the UID as a precondition, an element order, one condition changed.
        let second = json!({"metadata": {"uid": uid}, "status": {
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}],
            "conditions": [{"type": "Ready", "status": "True"}]}});
        let patched = api.patch_status("a", &PatchParams::default(), &Patch::Strategic(second)).await.expect("patch");
        let conditions: Vec<_> = patched
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.type_, c.status))
            .collect();
        assert_eq!(conditions, [("Ready".into(), "True".into()), ("PodScheduled".into(), "True".into())]);
        let wrong_uid = json!({"metadata": {"uid": "other"}, "status": {"phase": "Failed"}});
        let error = api.patch_status("a", &PatchParams::default(), &Patch::Strategic(wrong_uid)).await.expect_err("uid");
        // As kube-apiserver answers it: the patch would change an immutable field.
        assert_eq!(kube_error(error), (422, "Invalid".into()));

        // A JSON merge patch: objects merge, null removes, lists are replaced.
        let merge = json!({"status": {"podIP": "10.0.0.1", "phase": null, "conditions": [{"type": "Ready", "status": "False"}]}});
        let merged = api.patch_status("a", &PatchParams::default(), &Patch::Merge(merge)).await.expect("merge patch");
        let status = merged.status.expect("status");
        assert_eq!((status.pod_ip.as_deref(), status.phase.as_deref()), (Some("10.0.0.1"), None));
        assert_eq!(status.conditions.map(|c| c.len()), Some(1));
        assert_eq!(merged.spec.and_then(|s| s.node_name).as_deref(), Some("node-1"), "only the status changes");
    });
    // A JSON patch (RFC 6902) applies; a `test` that fails is 422, as kube-apiserver
    // answers it; an apply patch is not served (415).
    let status_patch = |content_type: &str, body: &[u8]| {
        http(addr, "PATCH", "/api/v1/namespaces/ns/pods/a/status", &[("Content-Type", content_type)], body)
    };
    let json_patch = "application/json-patch+json";
    let replaced = status_patch(json_patch, br#"[{"op": "replace", "path": "/status/podIP", "value": "10.0.0.2"}]"#);
    assert_eq!((replaced.code, replaced.json()["status"]["podIP"].clone()), (200, json!("10.0.0.2")));
    let failed = status_patch(json_patch, br#"[{"op": "test", "path": "/status/podIP", "value": "10.9.9.9"}]"#);
    assert_eq!((failed.code, failed.json()["reason"].clone()), (422, json!("Invalid")));
    let apply = status_patch("application/apply-patch+yaml", b"{}");
    assert_eq!((apply.code, apply.json()["reason"].clone()), (415, json!("UnsupportedMediaType")));
}

#[test]
fn deletion_checks_preconditions_and_is_graceful_for_bound_pods() {
    let server = serve();
    let addr = server.local_addr();
    let unbound = create(addr, &pod("u", "", json!({})));
    let path = "/api/v1/namespaces/ns/pods/u";
    let wrong = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "other"}});
    let refused = http(addr, "DELETE", path, &[], wrong.to_string().as_bytes());
    assert_eq!((refused.code, refused.json()["reason"].clone()), (409, json!("Conflict")));
    let stale = json!({"preconditions": {"resourceVersion": "999"}});
    assert_eq!(http(addr, "DELETE", path, &[], stale.to_string().as_bytes()).code, 409);
    let right = json!({"preconditions": {"uid": unbound["metadata"]["uid"]}});
    let deleted = http(addr, "DELETE", path, &[], right.to_string().as_bytes());
    assert_eq!((deleted.code, deleted.json()["metadata"]["name"].clone()), (200, json!("u")));
    assert_eq!(http(addr, "GET", path, &[], b"").code, 404, "an unbound pod goes at once");

    // A bound pod is marked, stays, and goes with grace 0.
    create(addr, &pod("b", "node-1", json!({})));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let api = kube_api(&server);
        let marked = api.delete("b", &DeleteParams::default()).await.expect("delete");
        let marked = marked.left().expect("the pod, still there");
        assert!(marked.metadata.deletion_timestamp.is_some());
        assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(30));
        assert!(api.get("b").await.expect("still there").metadata.deletion_timestamp.is_some());
        let uid = marked.metadata.uid.clone().expect("uid");
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }),
            ..DeleteParams::default()
        }
        .grace_period(0);
        api.delete("b", &params).await.expect("grace 0");
        assert_eq!(kube_error(api.get("b").await.expect_err("gone")), (404, "NotFound".into()));
    });
    // The grace period may also come in the query.
    create(addr, &pod("q", "node-1", json!({})));
    assert_eq!(http(addr, "DELETE", "/api/v1/namespaces/ns/pods/q?gracePeriodSeconds=0", &[], b"").code, 200);
    assert_eq!(http(addr, "GET", "/api/v1/namespaces/ns/pods/q", &[], b"").code, 404);
}

#[test]
fn watches_stream_events_in_order_resume_and_expire() {
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    let options = ServeOptions { watch_history: 4, ..ServeOptions::default() };
    let server = EmbeddedApiServer::start_with(store, "127.0.0.1:0".parse().expect("addr"), options).expect("start");
    let addr = server.local_addr();
    let existing = create(addr, &pod("old", "node-1", json!({"tier": "front"})));
    let mut watch = Watch::open(addr, "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=0");
    assert_eq!(watch.next_brief(), Some(("ADDED".into(), "old".into())), "the current pods first");
    let mut on_node =
        Watch::open(addr, "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dnode-1&labelSelector=tier%3Dfront");
    assert_eq!(on_node.next_brief(), Some(("ADDED".into(), "old".into())));

    create(addr, &pod("a", "node-2", json!({})));
    let mut write = existing.clone();
    write["status"] = json!({"phase": "Running"});
    http(addr, "PUT", "/api/v1/namespaces/ns/pods/old/status", &[], write.to_string().as_bytes());
    http(addr, "DELETE", "/api/v1/namespaces/ns/pods/a?gracePeriodSeconds=0", &[], b"");
    // Relabelling takes "old" out of the selecting watch: DELETED there, MODIFIED for
    // all. (Its node cannot change: kube-apiserver refuses that.)
    let mut moved = http(addr, "GET", "/api/v1/namespaces/ns/pods/old", &[], b"").json();
    moved["metadata"]["labels"] = json!({"tier": "back"});
    assert_eq!(http(addr, "PUT", "/api/v1/namespaces/ns/pods/old", &[], moved.to_string().as_bytes()).code, 200);

    let (kind, object) = watch.next().expect("event");
    assert_eq!((kind.as_str(), object["metadata"]["name"].as_str(), rv(&object)), ("ADDED", Some("a"), 2));
    let (kind, object) = watch.next().expect("event");
    assert_eq!((kind.as_str(), object["status"]["phase"].as_str(), rv(&object)), ("MODIFIED", Some("Running"), 3));
    // Grace 0 marks the pod, then removes it, as kube-apiserver does: a watcher sees both.
    let (kind, object) = watch.next().expect("event");
    assert_eq!(
        (kind.as_str(), object["metadata"]["deletionGracePeriodSeconds"].as_i64(), rv(&object)),
        ("MODIFIED", Some(0), 4)
    );
    assert_eq!(watch.next_brief(), Some(("DELETED".into(), "a".into())));
    assert_eq!(watch.next_brief(), Some(("MODIFIED".into(), "old".into())));
    assert_eq!(on_node.next_brief(), Some(("MODIFIED".into(), "old".into())));
    assert_eq!(on_node.next_brief(), Some(("DELETED".into(), "old".into())), "stopped matching");

    // Resume after rv 3: the kept history from 4 on, then live.
    let mut resumed = Watch::open(addr, "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=3");
    let replayed: Vec<_> = (0..3).map(|_| resumed.next().map(|(kind, object)| (kind, rv(&object)))).collect();
    assert_eq!(replayed, [Some(("MODIFIED".into(), 4)), Some(("DELETED".into(), 5)), Some(("MODIFIED".into(), 6))]);
    create(addr, &pod("z", "node-1", json!({})));
    assert_eq!(resumed.next_brief(), Some(("ADDED".into(), "z".into())));
    // History keeps 4 changes (4..7): a resume from 1 is too old.
    let mut expired = Watch::open(addr, "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=1");
    let (kind, status) = expired.next().expect("an error event");
    assert_eq!((kind.as_str(), &status["code"], &status["reason"]), ("ERROR", &json!(410), &json!("Expired")));
    assert!(expired.next().is_none(), "the stream ends after the error");

    // timeoutSeconds ends a watch; a stopping server ends them all.
    let mut timed = Watch::open(addr, "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=7&timeoutSeconds=1");
    assert!(timed.next().is_none());
    assert_eq!(watch.next_brief(), Some(("ADDED".into(), "z".into())));
    server.shutdown();
    assert!(watch.next().is_none(), "open watches end when the server stops");
}

#[test]
fn kube_rs_watches_and_the_store_writes_reach_it() {
    let server = serve();
    let store = Arc::clone(server.store());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        use futures::StreamExt;
        use kube::api::{WatchEvent, WatchParams};
        let api = kube_api(&server);
        api.create(&PostParams::default(), &serde_json::from_value(pod("a", "node-1", json!({}))).expect("pod"))
            .await
            .expect("create");
        let list = api.list(&ListParams::default()).await.expect("list");
        let version = list.metadata.resource_version.expect("rv");
        let mut events = Box::pin(api.watch(&WatchParams::default().timeout(10), &version).await.expect("watch"));
        let status = serde_json::from_value(json!({"phase": "Running"})).expect("status");
        let update =
            podstatus_backends::StatusUpdate { namespace: "ns".into(), name: "a".into(), status, ..Default::default() };
        store.update_pod_status(update).expect("a write to the store");
        let event = tokio::time::timeout(PATIENCE, events.next()).await.expect("in time").expect("event").expect("ok");
        match event {
            WatchEvent::Modified(pod) => assert_eq!(pod.status.and_then(|s| s.phase).as_deref(), Some("Running")),
            other => panic!("expected MODIFIED, got {other:?}"),
        }
    });
}

#[test]
fn bad_requests_get_kubernetes_statuses() {
    let server = serve();
    let addr = server.local_addr();
    let check = |reply: Reply, code: u16, reason: &str| {
        assert_eq!(reply.code, code, "{}", String::from_utf8_lossy(&reply.body));
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let status = reply.json();
        assert_eq!(
            (&status["kind"], &status["status"], &status["code"]),
            (&json!("Status"), &json!("Failure"), &json!(code))
        );
        assert_eq!(status["reason"], reason);
        status
    };
    let status = check(http(addr, "POST", "/api/v1/namespaces/ns/pods", &[], b"{not json"), 400, "BadRequest");
    assert!(status["message"].as_str().is_some_and(|m| m.contains("not valid JSON")), "{status}");
    check(http(addr, "POST", "/api/v1/namespaces/ns/pods", &[], b"[1,2]"), 400, "BadRequest");
    check(http(addr, "PUT", "/api/v1/namespaces/ns/pods/a/status", &[], br#"{"status": 5}"#), 400, "BadRequest");
    check(http(addr, "GET", "/api/v1/namespaces/ns/services", &[], b""), 404, "NotFound");
    check(http(addr, "GET", "/nothing/here", &[], b""), 404, "NotFound");
    let missing = check(http(addr, "GET", "/api/v1/namespaces/ns/pods/a", &[], b""), 404, "NotFound");
    assert_eq!(missing["details"], json!({"kind": "pods", "name": "a"}));
    check(http(addr, "DELETE", "/api/v1/pods", &[], b""), 405, "MethodNotAllowed");
    check(http(addr, "POST", "/version", &[], b""), 405, "MethodNotAllowed");
    let mismatch = pod("other-name", "n", json!({}));
    check(http(addr, "PUT", "/api/v1/namespaces/ns/pods/a", &[], mismatch.to_string().as_bytes()), 400, "BadRequest");
    check(http(addr, "GET", "/api/v1/pods?watch=true&resourceVersion=abc", &[], b""), 400, "BadRequest");
    check(http(addr, "GET", "/api/v1/pods?labelSelector=a+in+%28b", &[], b""), 400, "BadRequest");
    // The server is still serving after all that.
    assert_eq!(http(addr, "GET", "/version", &[], b"").code, 200);
}
