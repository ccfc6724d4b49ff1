//! The embedded server's added latency for one client (`ServeOptions::delayed_client`,
//! what `simulate --api-latency` uses): that client's requests are answered at least
//! the latency later, and the wait holds nothing, so another client's requests sent
//! meanwhile are answered first. Assertions are lower bounds and orderings, never how
//! fast anything was.

use crate::raw_http::{create, http};
use std::sync::Arc;
use std::time::{Duration, Instant};

use podstatus_agent::client::{STATUS_CLIENT_PRODUCT, STATUS_CLIENT_USER_AGENT};
use podstatus_apiserver::{DelayedClient, EmbeddedApiServer, ServeOptions};
use podstatus_backends::MemoryApiServer;
use serde_json::json;

/// Long enough that the other client's requests, on a busy CI machine, fit in it.
const LATENCY: Duration = Duration::from_millis(1500);

fn serve() -> EmbeddedApiServer {
    let delayed_client = Some(DelayedClient { user_agent: STATUS_CLIENT_PRODUCT, latency: LATENCY });
    let options = ServeOptions { delayed_client, ..ServeOptions::default() };
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    EmbeddedApiServer::start_with(store, "127.0.0.1:0".parse().expect("addr"), options).expect("the server starts")
}

#[test]
fn the_status_clients_get_waits_the_latency_while_another_clients_requests_go_first() {
    let server = serve();
    let addr = server.local_addr();
    create(
        addr,
        &json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "app:1"}]},
        }),
    );
    assert_eq!(server.stats().delayed_requests, 0, "the owner's create is not delayed");

    let sent = Instant::now();
    let delayed = std::thread::spawn(move || {
        let reply =
            http(addr, "GET", "/api/v1/namespaces/ns/pods/web", &[("User-Agent", STATUS_CLIENT_USER_AGENT)], b"");
        (reply.code, Instant::now())
    });
    // Another client (a watcher, an owner, the final check): answered while the status
    // client's request waits, the same pod and the whole list alike.
    let mut others_done = Instant::now();
    for path in ["/api/v1/namespaces/ns/pods/web", "/api/v1/pods"] {
        let reply = http(addr, "GET", path, &[("User-Agent", "kubectl/v1.33.0")], b"");
        assert_eq!(reply.code, 200, "{path}");
        others_done = Instant::now();
    }
    let (code, answered) = delayed.join().expect("the delayed request");
    assert_eq!(code, 200);
    assert!(answered.duration_since(sent) >= LATENCY, "answered after {:?}", answered.duration_since(sent));
    assert!(others_done < answered, "the other client's requests did not wait for the delayed one");
    assert_eq!(server.stats().delayed_requests, 1);

    // Its status write waits too.
    let started = Instant::now();
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "ns"},
                      "status": {"phase": "Running"}});
    let reply = http(
        addr,
        "PATCH",
        "/api/v1/namespaces/ns/pods/web/status",
        &[("User-Agent", STATUS_CLIENT_USER_AGENT), ("Content-Type", "application/merge-patch+json")],
        body.to_string().as_bytes(),
    );
    assert_eq!(reply.code, 200, "{}", String::from_utf8_lossy(&reply.body));
    assert!(started.elapsed() >= LATENCY);
    assert_eq!(server.stats().delayed_requests, 2);
}

#[test]
fn without_the_option_no_client_waits() {
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    let server = EmbeddedApiServer::start(store, "127.0.0.1:0".parse().expect("addr")).expect("the server starts");
    let reply = http(server.local_addr(), "GET", "/api/v1/pods", &[("User-Agent", STATUS_CLIENT_USER_AGENT)], b"");
    assert_eq!(reply.code, 200);
    assert_eq!(server.stats().delayed_requests, 0);
}
