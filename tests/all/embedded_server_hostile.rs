//! The embedded API server against hostile and careless clients, over raw TCP on
//! loopback: connections that never finish their headers, bodies declared huge or sent
//! slowly, watches that never read, patches and tables built to cost, and what
//! kube-apiserver refuses (invalid names, server-owned fields, a moved `nodeName`,
//! objects over etcd's size, undecodable selectors, preconditions of the wrong type).
//!
//! Every attack is bounded in count and time. No assertion is on time: each checks
//! that the server answered at all (within a generous bound), with which code and
//! which `Status`; the measured figures are in the README (`examples/hostile_clients.rs`).

use crate::raw_http::{PATIENCE, connect, create, http, read_chunk, read_head, read_reply};
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use podstatus_apiserver::{EmbeddedApiServer, ServeOptions};
use podstatus_backends::{ApiServer, MemoryApiServer};
use serde_json::{Value, json};

fn serve_with(options: ServeOptions) -> EmbeddedApiServer {
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    EmbeddedApiServer::start_with(store, "127.0.0.1:0".parse().expect("addr"), options).expect("the server starts")
}

fn serve() -> EmbeddedApiServer {
    serve_with(ServeOptions::default())
}

fn pod(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "app:1"}]},
    })
}

fn json_body(value: &Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// Whether the server closed this connection (EOF or reset) rather than answer.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(error) => !matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

/// Waits (bounded) until `done`; false if it never happened.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

// ---- Holding under load and slow clients ----

#[test]
fn half_sent_requests_are_shed_and_other_clients_are_answered() {
    // More idle half-sent requests than the cap: the idlest are closed for new ones.
    let cap = 16;
    let options = ServeOptions { max_connections: cap, ..ServeOptions::default() };
    let server = serve_with(options);
    let addr = server.local_addr();
    // A keep-alive client that was answered before the flood keeps its connection.
    let mut regular = connect(addr);
    regular.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n").expect("request");
    assert_eq!(read_reply(&mut regular).code, 200);
    let mut attackers: Vec<TcpStream> = (0..60)
        .map(|_| {
            let mut stream = connect(addr);
            stream.write_all(b"GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n").expect("half a head");
            stream
        })
        .collect();
    for _ in 0..5 {
        let reply = http(addr, "GET", "/version", &[], b"");
        assert_eq!(reply.code, 200, "a client is answered while the server sheds");
    }
    assert!(eventually(|| server.stats().open_connections <= cap), "{:?}", server.stats());
    assert!(server.stats().idle_connections_closed >= 60 - cap, "{:?}", server.stats());
    regular.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n").expect("second request");
    assert_eq!(read_reply(&mut regular).code, 200, "the keep-alive client was not pushed out");
    // The oldest were closed (EOF, no answer): their file descriptors are back.
    for stream in attackers.iter_mut().take(60 - cap) {
        assert!(closed_by_server(stream), "an idle half-sent request was dropped");
    }
}

#[test]
fn headers_must_arrive_in_time() {
    let options = ServeOptions { header_timeout: Duration::from_millis(200), ..ServeOptions::default() };
    let server = serve_with(options);
    let mut slow = connect(server.local_addr());
    slow.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n").expect("half a head");
    assert!(closed_by_server(&mut slow), "a connection that never finishes its headers is closed");
    // An idle keep-alive connection is closed too, after answering.
    let mut idle = connect(server.local_addr());
    idle.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n").expect("request");
    let reply = read_reply(&mut idle);
    assert_eq!(reply.code, 200);
    assert!(closed_by_server(&mut idle), "an idle keep-alive connection is closed");
}

#[test]
fn when_every_connection_is_busy_a_new_one_gets_429() {
    let options = ServeOptions { max_connections: 2, ..ServeOptions::default() };
    let server = serve_with(options);
    let addr = server.local_addr();
    // Two watches keep both connections busy.
    let watches: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = connect(addr);
            stream.write_all(b"GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: x\r\n\r\n").expect("watch");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            assert_eq!(read_head(&mut reader).0, 200);
            stream
        })
        .collect();
    assert!(eventually(|| server.stats().open_watches == 2));
    let reply = http(addr, "GET", "/version", &[], b"");
    let status = reply.status(429, "TooManyRequests");
    assert_eq!(status["message"], "Too many requests, please try again later.");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    drop(watches);
    // Writes give the watches events to send, by which the server finds them gone.
    let mut writes = 0;
    assert!(
        eventually(|| {
            writes += 1;
            let mut pod: Pod = serde_json::from_value(pod(&format!("w{writes}"), "n")).expect("pod");
            pod.metadata.uid = Some(format!("uw{writes}"));
            server.store().put_pod(pod).expect("write");
            http(addr, "GET", "/version", &[], b"").code == 200
        }),
        "room again once they go"
    );
}

#[test]
fn a_body_declared_too_large_is_refused_before_it_is_read() {
    let server = serve();
    let mut stream = connect(server.local_addr());
    // 1 TiB declared, nothing sent: the answer comes at once.
    let head = "POST /api/v1/namespaces/ns/pods HTTP/1.1\r\nHost: x\r\nContent-Length: 1099511627776\r\n\r\n";
    stream.write_all(head.as_bytes()).expect("head");
    let reply = read_reply(&mut stream);
    let status = reply.status(413, "RequestEntityTooLarge");
    assert_eq!(status["message"], "Request entity too large: limit is 3145728");
    // Chunked, no length declared: cut at the limit.
    let options = ServeOptions { max_body_bytes: 1024, ..ServeOptions::default() };
    let small = serve_with(options);
    let mut stream = connect(small.local_addr());
    let head = "POST /api/v1/namespaces/ns/pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    // All in one write, so that the server has it all when it answers (data left unread
    // would reset the connection before the answer is read).
    let mut request = head.as_bytes().to_vec();
    request.extend(format!("{:x}\r\n", 2048).as_bytes());
    request.extend([b' '; 2048]);
    request.extend(b"\r\n0\r\n\r\n");
    stream.write_all(&request).expect("request");
    read_reply(&mut stream).status(413, "RequestEntityTooLarge");
}

#[test]
fn a_client_that_sends_its_whole_oversized_body_reads_the_413() {
    // As the official clients do: the whole body first, then the answer. The server
    // answers at once and reads (and discards) what is still coming, so the client's
    // writes succeed and the 413 is there to read, declared length or chunked.
    let server = serve();
    let body = vec![b' '; 8 << 20];
    let declared =
        format!("POST /api/v1/namespaces/ns/pods HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", body.len());
    let chunked = "POST /api/v1/namespaces/ns/pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for head in [declared.as_str(), chunked] {
        let mut stream = connect(server.local_addr());
        stream.write_all(head.as_bytes()).expect("head");
        let is_chunked = head.contains("chunked");
        for piece in body.chunks(64 << 10) {
            if is_chunked {
                stream.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).expect("chunk head");
            }
            stream.write_all(piece).expect("the server reads what the client still sends");
            if is_chunked {
                stream.write_all(b"\r\n").expect("chunk end");
            }
        }
        if is_chunked {
            stream.write_all(b"0\r\n\r\n").expect("last chunk");
        }
        let status = read_reply(&mut stream).status(413, "RequestEntityTooLarge");
        assert_eq!(status["message"], "Request entity too large: limit is 3145728", "{head}");
    }
}

#[test]
fn stalled_bodies_are_bounded_and_time_out() {
    // Room for 4 bodies of 1 KiB at once; bodies must arrive within 10 s: long enough
    // that the fifth request finds the room still taken on a loaded machine (this test
    // shares its binary with every other integration test; at 3 s a full run on two
    // busy cores once saw the room free again), short enough to wait for.
    let options = ServeOptions {
        max_body_bytes: 1024,
        body_bytes_in_flight: 4096,
        body_timeout: Duration::from_secs(10),
        ..ServeOptions::default()
    };
    let server = serve_with(options);
    let addr = server.local_addr();
    let head = "POST /api/v1/namespaces/ns/pods HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n";
    let mut stalled: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut stream = connect(addr);
            stream.write_all(head.as_bytes()).expect("head");
            stream.write_all(b"{").expect("a byte of the body");
            stream
        })
        .collect();
    // The server reads the four heads before the fifth arrives: were the fifth first,
    // it would take the room itself and wait for a body that never comes.
    std::thread::sleep(Duration::from_millis(500));
    // A fifth body finds no room (429); the stalled ones may take a moment to start.
    // (Its head only: a body the server does not read would reset the connection.)
    let mut refused = None;
    assert!(eventually(|| {
        let mut stream = connect(addr);
        stream.write_all(head.as_bytes()).expect("head");
        let reply = read_reply(&mut stream);
        let code = reply.code;
        refused = Some(reply);
        code == 429
    }));
    let refused = refused.expect("a reply");
    let status = refused.status(429, "TooManyRequests");
    assert_eq!(status["message"], "Too many requests, please try again later.");
    assert!(server.stats().bodies_refused >= 1, "{:?}", server.stats());
    assert_eq!(refused.header("retry-after"), Some("1"));
    // Requests without a body are answered meanwhile.
    assert_eq!(http(addr, "GET", "/api/v1/pods", &[], b"").code, 200);
    // The stalled bodies time out: 504, and their room is free again.
    for stream in &mut stalled {
        let status = read_reply(stream).status(504, "Timeout");
        assert_eq!(status["message"], "Timeout: request did not complete within the allotted timeout");
    }
    assert!(eventually(
        || http(addr, "POST", "/api/v1/namespaces/ns/pods", &[], &json_body(&pod("late", "n"))).code == 201
    ));
}

#[test]
fn watchers_that_never_read_are_closed_and_others_are_answered() {
    let options = ServeOptions { slow_watcher_timeout: Duration::from_millis(300), ..ServeOptions::default() };
    let (server, watchers) = filled_with_silent_clients(options, "GET /api/v1/pods?watch=true");
    assert!(eventually(|| server.stats().slow_watches_closed == 4), "{:?}", server.stats());
    assert!(eventually(|| server.stats().open_watches == 0), "{:?}", server.stats());
    // The server answered all along and still does.
    let reply = http(server.local_addr(), "GET", "/api/v1/namespaces/ns/pods/p7", &[], b"");
    assert_eq!(reply.code, 200);
    // What a cut watcher reads: some events, then the end of the stream (it watches
    // again or lists, as clients do on a closed watch).
    let mut reader = BufReader::new(watchers.into_iter().next().expect("a watcher"));
    assert_eq!(read_head(&mut reader).0, 200);
    let mut events = 0;
    while let Some(chunk) = read_chunk(&mut reader) {
        events += chunk.iter().filter(|b| **b == b'\n').count();
    }
    assert!(events < 512, "the stream ended early: {events} events");
}

/// A server with `options` but a watcher buffer of 64 KiB, filled, and four clients
/// that sent `request` (method and target) and read nothing.
fn filled_with_silent_clients(options: ServeOptions, request: &str) -> (EmbeddedApiServer, Vec<TcpStream>) {
    let server = serve_with(ServeOptions { watcher_buffer_bytes: 64 << 10, ..options });
    fill(&server);
    let clients = (0..4)
        .map(|_| {
            let mut stream = connect(server.local_addr());
            stream.write_all(format!("{request} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).expect("request");
            stream
        })
        .collect();
    (server, clients)
}

/// 512 pods of 64 KiB: 32 MiB, more than the kernel's socket buffers on loopback hold.
fn fill(server: &EmbeddedApiServer) {
    let padding = "x".repeat(64 << 10);
    for i in 0..512 {
        let mut pod: Pod = serde_json::from_value(pod(&format!("p{i}"), "n")).expect("pod");
        pod.metadata.uid = Some(format!("u{i}"));
        pod.metadata.annotations = Some([("pad".to_owned(), padding.clone())].into());
        server.store().create_pod(pod).expect("create");
    }
}

#[test]
fn lists_that_are_never_read_are_cut_and_others_are_answered() {
    let options = ServeOptions { body_timeout: Duration::from_millis(300), ..ServeOptions::default() };
    let (server, silent) = filled_with_silent_clients(options, "GET /api/v1/pods");
    assert!(eventually(|| server.stats().slow_lists_closed == 4), "{:?}", server.stats());
    assert_eq!(http(server.local_addr(), "GET", "/api/v1/namespaces/ns/pods/p7", &[], b"").code, 200);
    // What a cut list's client gets: a part of the list, not valid JSON.
    let mut stream = silent.into_iter().next().expect("a client");
    let cut = read_reply(&mut stream);
    assert_eq!(cut.code, 200);
    assert!(serde_json::from_slice::<Value>(&cut.body).is_err(), "cut short: {} bytes", cut.body.len());
    // A client that reads gets all of it.
    let whole = http(server.local_addr(), "GET", "/api/v1/pods", &[], b"");
    assert_eq!(whole.json()["items"].as_array().map(Vec::len), Some(512));
    assert!(cut.body.len() < whole.body.len());
    let table = [("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")];
    let rows =
        http(server.local_addr(), "GET", "/api/v1/namespaces/ns/pods?labelSelector=app%21%3Dx", &table, b"").json();
    assert_eq!(rows["rows"].as_array().map(Vec::len), Some(512));
    assert_eq!(rows["kind"], "Table");
}

#[test]
fn strategic_merge_of_thousands_of_conditions_is_answered() {
    let server = serve();
    let addr = server.local_addr();
    create(addr, &pod("big", "n"));
    let n = 8000;
    let conditions: Vec<Value> = (0..n).map(|i| json!({"type": format!("t{i}"), "status": "False"})).collect();
    let put = json!({"metadata": {"name": "big"}, "status": {"conditions": conditions}});
    assert_eq!(http(addr, "PUT", "/api/v1/namespaces/ns/pods/big/status", &[], &json_body(&put)).code, 200);
    let patch_items: Vec<Value> = (0..n).rev().map(|i| json!({"type": format!("t{i}"), "status": "True"})).collect();
    let order: Vec<Value> = (0..n).rev().map(|i| json!({"type": format!("t{i}")})).collect();
    let patch = json!({"status": {"conditions": patch_items, "$setElementOrder/conditions": order}});
    let smp = [("Content-Type", "application/strategic-merge-patch+json")];
    let reply = http(addr, "PATCH", "/api/v1/namespaces/ns/pods/big/status", &smp, &json_body(&patch));
    assert_eq!(reply.code, 200, "{}", String::from_utf8_lossy(&reply.body));
    let patched = reply.json();
    assert_eq!(patched["status"]["conditions"][0], json!({"type": "t7999", "status": "True"}));
    // A table of a pod with many readiness gates and conditions.
    let gates: Vec<Value> = (0..n).map(|i| json!({"conditionType": format!("t{i}")})).collect();
    let merge = [("Content-Type", "application/merge-patch+json")];
    let with_gates = json!({"spec": {"readinessGates": gates}});
    let reply = http(addr, "PATCH", "/api/v1/namespaces/ns/pods/big", &merge, &json_body(&with_gates));
    assert_eq!(reply.code, 200, "{}", String::from_utf8_lossy(&reply.body));
    let table = [("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")];
    let reply = http(addr, "GET", "/api/v1/namespaces/ns/pods", &table, b"");
    assert_eq!(reply.code, 200);
    assert_eq!(reply.json()["rows"][0]["cells"][8], "8000/8000");
}

#[test]
fn restart_counts_that_overflow_i32_are_summed_not_a_panic() {
    let server = serve();
    let addr = server.local_addr();
    create(addr, &pod("restarts", "n"));
    let statuses: Vec<Value> = (0..3)
        .map(
            |i| json!({"name": format!("c{i}"), "ready": false, "restartCount": i32::MAX, "image": "i", "imageID": ""}),
        )
        .collect();
    let put = json!({"metadata": {"name": "restarts"}, "status": {"containerStatuses": statuses}});
    assert_eq!(http(addr, "PUT", "/api/v1/namespaces/ns/pods/restarts/status", &[], &json_body(&put)).code, 200);
    let table = [("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")];
    for _ in 0..2 {
        let reply = http(addr, "GET", "/api/v1/namespaces/ns/pods", &table, b"");
        assert_eq!(reply.code, 200);
        assert_eq!(reply.json()["rows"][0]["cells"][3], (3 * i64::from(i32::MAX)).to_string());
    }
}

// ---- Validating as kube-apiserver does ----

#[test]
fn names_and_namespaces_must_be_dns_1123() {
    let server = serve();
    let addr = server.local_addr();
    let long = "a".repeat(300);
    for name in ["a/b", "..", "x?y", "UPPER", long.as_str(), "a\nb", "é", "-a"] {
        let reply = http(addr, "POST", "/api/v1/namespaces/ns/pods", &[], &json_body(&pod(name, "n")));
        let status = reply.status(422, "Invalid");
        let cause = &status["details"]["causes"][0];
        assert_eq!(
            (&cause["field"], &cause["reason"]),
            (&json!("metadata.name"), &json!("FieldValueInvalid")),
            "{name:?}"
        );
        assert!(status["message"].as_str().is_some_and(|m| m.starts_with("Pod \"")), "{status}");
    }
    let reply =
        http(addr, "POST", "/api/v1/namespaces/UPPER/pods", &[], &json_body(&json!({"metadata": {"name": "a"}})));
    let status = reply.status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.namespace");
    let unnamed = json!({"metadata": {}, "spec": {"containers": []}});
    let status = http(addr, "POST", "/api/v1/namespaces/ns/pods", &[], &json_body(&unnamed)).status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueRequired");
    assert_eq!(server.store().list_pods().len(), 0, "nothing was stored");
    // A generated name is valid, even from a long prefix.
    let generated = json!({"metadata": {"generateName": format!("{}-", "g".repeat(100))}});
    let created = create(addr, &generated);
    assert_eq!(created["metadata"]["name"].as_str().map(str::len), Some(63));
}

#[test]
fn server_owned_fields_are_the_servers_on_create() {
    let server = serve();
    let addr = server.local_addr();
    let first = create(addr, &pod("first", "n"));
    let mut squatter = pod("squatter", "n");
    squatter["metadata"]["uid"] = first["metadata"]["uid"].clone();
    squatter["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    squatter["metadata"]["deletionTimestamp"] = json!("2000-01-01T00:00:00Z");
    squatter["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    squatter["metadata"]["resourceVersion"] = json!("999999");
    let created = create(addr, &squatter);
    assert_ne!(created["metadata"]["uid"], first["metadata"]["uid"], "the UID is the server's");
    assert_ne!(created["metadata"]["creationTimestamp"], "2000-01-01T00:00:00Z");
    assert!(created["metadata"].get("deletionTimestamp").is_none(), "{created}");
    assert!(created["metadata"].get("deletionGracePeriodSeconds").is_none(), "{created}");
    assert_ne!(created["metadata"]["resourceVersion"], "999999");
    // An update cannot change them either.
    let mut update = created.clone();
    update["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    update["metadata"]["deletionTimestamp"] = json!("2000-01-01T00:00:00Z");
    let reply = http(addr, "PUT", "/api/v1/namespaces/ns/pods/squatter", &[], &json_body(&update));
    assert_eq!(reply.code, 200, "{}", String::from_utf8_lossy(&reply.body));
    let updated = reply.json();
    assert_eq!(updated["metadata"]["creationTimestamp"], created["metadata"]["creationTimestamp"]);
    assert!(updated["metadata"].get("deletionTimestamp").is_none(), "{updated}");
}

#[test]
fn a_bound_pod_stays_on_its_node_and_keeps_its_spec() {
    let server = serve();
    let addr = server.local_addr();
    let created = create(addr, &pod("bound", "node-a"));
    let mut moved = created.clone();
    moved["spec"]["nodeName"] = json!("node-b");
    let status = http(addr, "PUT", "/api/v1/namespaces/ns/pods/bound", &[], &json_body(&moved)).status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.nodeName");
    assert!(status["message"].as_str().is_some_and(|m| m.contains("field is immutable")), "{status}");
    let merge = [("Content-Type", "application/merge-patch+json")];
    let patch = json!({"spec": {"nodeName": "node-b"}});
    http(addr, "PATCH", "/api/v1/namespaces/ns/pods/bound", &merge, &json_body(&patch)).status(422, "Invalid");
    let unbind = json!({"spec": {"nodeName": null}});
    http(addr, "PATCH", "/api/v1/namespaces/ns/pods/bound", &merge, &json_body(&unbind)).status(422, "Invalid");
    let mut specless = created.clone();
    specless.as_object_mut().expect("object").remove("spec");
    let status =
        http(addr, "PUT", "/api/v1/namespaces/ns/pods/bound", &[], &json_body(&specless)).status(422, "Invalid");
    assert_eq!(
        status["details"]["causes"][0],
        json!({"reason": "FieldValueRequired", "field": "spec", "message": "Required value"})
    );
    let stored = server.store().get_pod("ns", "bound").expect("stored");
    assert_eq!(stored.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some("node-a"));
    // A pod not yet bound can be bound once.
    create(addr, &pod("loose", ""));
    let bind = json!({"spec": {"nodeName": "node-a"}});
    assert_eq!(http(addr, "PATCH", "/api/v1/namespaces/ns/pods/loose", &merge, &json_body(&bind)).code, 200);
}

#[test]
fn objects_over_etcds_size_are_refused() {
    let server = serve();
    let addr = server.local_addr();
    create(addr, &pod("growing", "n"));
    let merge = [("Content-Type", "application/merge-patch+json")];
    // A status of 1.3 MiB fits; then annotations (at most 256 KiB, as kube-apiserver
    // allows) on the pod's path, or more status on the status path, would take the pod
    // over etcd's 1.5 MiB: refused.
    let writes = [
        ("/api/v1/namespaces/ns/pods/growing/status", json!({"status": {"message": "x".repeat(1_300 << 10)}})),
        ("/api/v1/namespaces/ns/pods/growing", json!({"metadata": {"annotations": {"a": "x".repeat(250_000)}}})),
        ("/api/v1/namespaces/ns/pods/growing/status", json!({"status": {"reason": "x".repeat(300 << 10)}})),
    ];
    let mut sizes = Vec::new();
    for (path, patch) in writes {
        let reply = http(addr, "PATCH", path, &merge, &json_body(&patch));
        sizes.push(reply.code);
        if reply.code == 413 {
            let status = reply.status(413, "RequestEntityTooLarge");
            assert!(status["message"].as_str().is_some_and(|m| m.contains("over the limit of 1572864")), "{status}");
        }
    }
    assert_eq!(sizes, [200, 413, 413]);
    let stored = server.store().get_pod("ns", "growing").expect("stored");
    assert!(serde_json::to_vec(&*stored).expect("JSON").len() <= 3 << 19);
    // A PUT of the status has the same limit.
    let message = "m".repeat(2 << 20);
    let put = json!({"metadata": {"name": "growing"}, "status": {"message": message}});
    http(addr, "PUT", "/api/v1/namespaces/ns/pods/growing/status", &[], &json_body(&put))
        .status(413, "RequestEntityTooLarge");
}

#[test]
fn a_shorter_grace_period_brings_the_deletion_forward() {
    let server = serve();
    let addr = server.local_addr();
    create(addr, &pod("slow", "n"));
    let forever = json!({"gracePeriodSeconds": i64::MAX});
    let marked = http(addr, "DELETE", "/api/v1/namespaces/ns/pods/slow", &[], &json_body(&forever));
    assert_eq!(marked.code, 200);
    let short = json!({"gracePeriodSeconds": 5});
    let reply = http(addr, "DELETE", "/api/v1/namespaces/ns/pods/slow", &[], &json_body(&short));
    assert_eq!(reply.code, 200);
    let pod = reply.json();
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 5);
    let at = pod["metadata"]["deletionTimestamp"].as_str().expect("deletionTimestamp");
    let year: i32 = at[..4].parse().expect("year");
    let this_year: i32 = jiff_year();
    assert!(year <= this_year + 1, "brought forward from year 9999: {at}");
}

fn jiff_year() -> i32 {
    // Years since 1970 from the system clock: enough to tell 9999 from now.
    let seconds = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
    1970 + i32::try_from(seconds / 31_556_952).expect("year")
}

#[test]
fn selectors_and_preconditions_that_do_not_decode_are_refused() {
    let server = serve();
    let addr = server.local_addr();
    create(addr, &pod("a", "n"));
    create(addr, &pod("b", "n"));
    for query in ["labelSelector=%ff", "labelSelector=%zz", "fieldSelector=%", "labelSelector=app%3Dx&watch=%ff"] {
        http(addr, "GET", &format!("/api/v1/namespaces/ns/pods?{query}"), &[], b"").status(400, "BadRequest");
    }
    let wrong_type = json!({"preconditions": {"uid": 5}, "gracePeriodSeconds": 0});
    http(addr, "DELETE", "/api/v1/namespaces/ns/pods/a", &[], &json_body(&wrong_type)).status(400, "BadRequest");
    let grace_text = json!({"gracePeriodSeconds": "0"});
    http(addr, "DELETE", "/api/v1/namespaces/ns/pods/a", &[], &json_body(&grace_text)).status(400, "BadRequest");
    let smp = [("Content-Type", "application/strategic-merge-patch+json")];
    let uid_number = json!({"metadata": {"uid": 5}, "status": {"phase": "Failed"}});
    http(addr, "PATCH", "/api/v1/namespaces/ns/pods/a/status", &smp, &json_body(&uid_number)).status(400, "BadRequest");
    http(addr, "PATCH", "/api/v1/namespaces/ns/pods/a", &smp, &json_body(&uid_number)).status(400, "BadRequest");
    let stored = server.store().get_pod("ns", "a").expect("still there");
    assert_eq!(stored.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"), "nothing was written");
}

#[test]
fn a_patch_cannot_rename_or_move_the_pod() {
    let server = serve();
    let addr = server.local_addr();
    create(addr, &pod("a", "n"));
    for content_type in ["application/merge-patch+json", "application/strategic-merge-patch+json"] {
        let headers = [("Content-Type", content_type)];
        for patch in [json!({"metadata": {"name": "other"}}), json!({"metadata": {"namespace": "elsewhere"}})] {
            let reply = http(addr, "PATCH", "/api/v1/namespaces/ns/pods/a", &headers, &json_body(&patch));
            reply.status(400, "BadRequest");
        }
        let status_patch = json!({"metadata": {"name": "other"}, "status": {"phase": "Failed"}});
        if content_type == "application/merge-patch+json" {
            let reply = http(addr, "PATCH", "/api/v1/namespaces/ns/pods/a/status", &headers, &json_body(&status_patch));
            reply.status(400, "BadRequest");
        }
    }
    let names: Vec<_> = server.store().list_pods().into_iter().filter_map(|p| p.metadata.name).collect();
    assert_eq!(names, ["a"]);
}

#[test]
fn discovery_and_statuses_keep_their_shapes() {
    let server = serve();
    let addr = server.local_addr();
    let version = http(addr, "GET", "/version", &[], b"").json();
    assert_eq!((&version["major"], &version["minor"]), (&json!("1"), &json!("35")));
    let api = http(addr, "GET", "/api", &[], b"").json();
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["serverAddressByClientCIDRs"][0]["serverAddress"], addr.to_string());
    let resources = http(addr, "GET", "/api/v1", &[], b"").json();
    assert_eq!((&resources["kind"], &resources["apiVersion"]), (&json!("APIResourceList"), &json!("v1")));
    assert_eq!(resources["resources"][0]["shortNames"], json!(["po"]));
    let groups = http(addr, "GET", "/apis", &[], b"").json();
    assert_eq!((&groups["apiVersion"], &groups["kind"]), (&json!("v1"), &json!("APIGroupList")));
    assert_eq!(
        groups["groups"][0]["preferredVersion"],
        json!({"groupVersion": "coordination.k8s.io/v1", "version": "v1"})
    );
}
