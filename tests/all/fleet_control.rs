//! The fleet's control endpoint against hostile and careless clients, byte for byte
//! over TCP: every limit of `ControlLimits` is hit and answered with its status and a
//! JSON error saying which. (What the commands do to a fleet: `fleet.rs`.)

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use podstatus_agent::rollout::{
    ControlAccess, ControlCommand, ControlError, ControlLimits, ControlServer, RolloutError, StartCanary,
};
use serde_json::Value;

use crate::raw_http::{connect, http, read_reply};

/// Polls `probe` until it gives something, for a generous while.
fn wait<T>(probe: impl FnMut() -> Option<T>) -> T {
    podstatus_backends::testing::wait_for(
        "the control endpoint",
        Duration::from_secs(30),
        Duration::from_millis(20),
        probe,
    )
}

/// A control endpoint nobody serves commands for (the test plays the fleet's loop),
/// and the runtime it runs on.
fn serve(limits: ControlLimits) -> (ControlServer, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let server =
        ControlServer::start("127.0.0.1:0".parse().expect("addr"), ControlAccess::open(), limits, runtime.handle())
            .expect("the control endpoint starts");
    (server, runtime)
}

/// Asserts the reply's code and that its JSON error says `says`.
fn refused(reply: &crate::raw_http::Reply, code: u16, says: &str) -> Value {
    let body = reply.json();
    assert_eq!(reply.code, code, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert!(body["error"].as_str().unwrap_or_default().contains(says), "{says:?} in {body}");
    body
}

#[test]
fn methods_paths_and_bodies_are_bounded_and_refused_with_their_status() {
    let (server, _runtime) = serve(ControlLimits::default());
    let addr = server.local_addr();
    refused(&http(addr, "PUT", "/rollout", &[], b""), 405, "PUT is not allowed on /rollout: use GET");
    refused(&http(addr, "GET", "/rollout/promote", &[], b""), 405, "use POST");
    refused(&http(addr, "BREW", "/rollout/rollback", &[], b""), 405, "BREW is not allowed");
    refused(&http(addr, "GET", "/nodes", &[], b""), 404, "/nodes: not found");

    // The path and query: 256 bytes at most.
    let long = format!("/rollout?{}", "a".repeat(300));
    refused(&http(addr, "GET", &long, &[], b""), 414, "over the limit of 256 bytes");

    // A declared length over the limit is refused before a byte of the body is read.
    let mut stream = connect(addr);
    write!(stream, "POST /rollout/canary HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n").expect("send");
    refused(&read_reply(&mut stream), 413, "over the limit of 4096 bytes");
    // Sent all the same: the rest is read and dropped while the answer goes out.
    refused(&http(addr, "POST", "/rollout/canary", &[], &[b'x'; 20_000]), 413, "over the limit of 4096 bytes");
    // A chunked body is counted as it comes.
    let mut stream = connect(addr);
    write!(stream, "POST /rollout/canary HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n").expect("send");
    for _ in 0..5 {
        let chunk = "x".repeat(1000);
        if write!(stream, "{:x}\r\n{chunk}\r\n", chunk.len()).is_err() {
            break;
        }
    }
    refused(&read_reply(&mut stream), 413, "over the limit of 4096 bytes");

    // Bodies that are not the command's.
    refused(&http(addr, "POST", "/rollout/canary", &[], b"{not json"), 400, "bad body");
    refused(&http(addr, "POST", "/rollout/canary", &[], br#"{"share": 2, "to": "v3"}"#), 400, "share");
    refused(&http(addr, "POST", "/rollout/canary", &[], br#"{"share": "0%", "to": "v3"}"#), 400, "share");
    refused(
        &http(addr, "POST", "/rollout/canary", &[], br#"{"share": 0.1, "to": "v3", "x": 1}"#),
        400,
        "unknown field",
    );
    assert!(server.next_request().is_none(), "no refused request reached the fleet");

    // A request head over the limit: hyper refuses it (431) and closes the connection
    // with the rest unread, which may reset it while the head is still being sent: the
    // send may fail, the answer was sent before the reset and is read all the same.
    let mut stream = connect(addr);
    let _ = write!(stream, "GET /rollout HTTP/1.1\r\nHost: x\r\nX-Padding: {}\r\n\r\n", "p".repeat(20 << 10));
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    while let Ok(read) = stream.read(&mut buffer) {
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:?}");
}

#[test]
fn slow_clients_are_cut_off_at_the_read_timeout() {
    let limits = ControlLimits { read_timeout: Duration::from_millis(300), ..ControlLimits::default() };
    let (server, _runtime) = serve(limits);
    let addr = server.local_addr();
    // A body that stops coming: 408.
    let mut stream = connect(addr);
    write!(stream, "POST /rollout/canary HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{{\"share\"").expect("send");
    refused(&read_reply(&mut stream), 408, "did not arrive within 300ms");
    // A head that stops coming: the connection is closed.
    let mut stream = connect(addr);
    write!(stream, "GET /rollout HTTP/1.1\r\nHost: x\r\n").expect("send");
    let began = Instant::now();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    assert!(began.elapsed() < Duration::from_secs(20), "closed at the timeout, not at the test's patience");
    assert!(server.next_request().is_none());
}

#[test]
fn connections_past_the_cap_are_answered_503_and_closed() {
    let limits = ControlLimits { max_connections: 2, ..ControlLimits::default() };
    let (server, _runtime) = serve(limits);
    let addr = server.local_addr();
    let held: Vec<TcpStream> = (0..2).map(|_| connect(addr)).collect();
    // The two held connections are being served (they send nothing yet).
    std::thread::sleep(Duration::from_millis(200));
    refused(&http(addr, "GET", "/rollout", &[], b""), 503, "2 connections are open already");
    drop(held);
    // Once they are gone, a new one is served: its command reaches the fleet's loop.
    let asking = std::thread::spawn(move || {
        wait(|| {
            let reply = http(addr, "GET", "/rollout", &[], b"");
            (reply.code != 503).then_some(reply)
        })
    });
    let request = wait(|| server.next_request());
    assert_eq!(request.command, ControlCommand::Status);
    request.answer(Err(ControlError::Rollout(RolloutError::NotWatching)));
    refused(&asking.join().expect("the client"), 409, "no canary is being watched");
}

#[test]
fn commands_wait_for_the_fleet_in_a_bounded_queue_and_a_bounded_time() {
    let limits =
        ControlLimits { max_waiting: 1, answer_timeout: Duration::from_millis(500), ..ControlLimits::default() };
    let (server, _runtime) = serve(limits);
    let addr = server.local_addr();
    // Nobody takes the command: the client hears 504 (the command still waits).
    refused(&http(addr, "POST", "/rollout/promote", &[], b""), 504, "did not answer within 500ms");
    // The queue holds one: the next is refused at once.
    refused(&http(addr, "POST", "/rollout/rollback", &[], b""), 503, "1 commands are waiting already");
    // The fleet's loop takes the waiting one; the queue has room again.
    assert_eq!(server.next_request().map(|r| r.command), Some(ControlCommand::Promote));
    let asking = std::thread::spawn(move || {
        http(addr, "POST", "/rollout/canary", &[], br#"{"share": "10%", "to": "podstatus-v3"}"#)
    });
    let request = wait(|| server.next_request());
    assert_eq!(request.command, ControlCommand::Start(StartCanary { share: 0.1, to: "podstatus-v3".into() }));
    request.answer(Err(ControlError::UnknownPlugin { name: "podstatus-v3".into(), known: "v1, v2".into() }));
    refused(&asking.join().expect("the client"), 422, "the fleet can roll out v1, v2");
}

/// Reads of an address that stopped listening fail: the endpoint is gone with its server.
#[test]
fn a_dropped_endpoint_stops_listening() {
    let (server, runtime) = serve(ControlLimits::default());
    let addr: SocketAddr = server.local_addr();
    drop(server);
    wait(|| TcpStream::connect(addr).is_err().then_some(()));
    drop(runtime);
}
