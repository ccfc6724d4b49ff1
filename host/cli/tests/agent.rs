//! `podstatus agent` as a user runs it, against `podstatus serve` in another process
//! (so the API server outlives the agent): it registers its node, runs a pod another
//! client creates until Running and Ready, and on SIGTERM stops, flushes and leaves the
//! node reported as shutting down (Ready False, `KubeletNotReady`), exiting 0.
//!
//! Every wait is bounded but generous: CI machines are slow and busy.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use podstatus_backends::testing;
use serde_json::{Value, json};

/// How long a process may take to do what a test waits for; far above what it needs.
const DEADLINE: Duration = Duration::from_secs(120);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// `podstatus ARGS`, its stderr piped.
fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_podstatus"))
        .args(args)
        .env("PODSTATUS_CACHE_DIR", workspace().join("target").join("podstatus-test-cache"))
        .env_remove("RUST_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("podstatus runs")
}

/// A port nobody listens on now (bound, then released).
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// One request with a JSON body; the status and the JSON answer, `None` while nothing
/// answers.
fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.get(9..12)?.parse().ok()?;
    let (_, json) = response.split_once("\r\n\r\n")?;
    Some((code, serde_json::from_str(json).unwrap_or(Value::Null)))
}

fn wait_until<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    testing::wait_for(what, DEADLINE, Duration::from_millis(100), probe)
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == kind)
}

fn signal(child: &Child, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid; it has not been waited for, so the pid is
    // still its own.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill({pid}, {signal})");
}

/// Waits (bounded) for the exit; returns the exit code and stderr.
fn wait(mut child: Child) -> (Option<i32>, String) {
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("podstatus did not exit within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(pipe) = child.stderr.take() {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            stderr.push_str(&line);
            stderr.push('\n');
        }
    }
    (status.code(), stderr)
}

#[test]
fn sigterm_flushes_then_reports_the_node_shutting_down() {
    let api = free_port();
    let server = spawn(&["serve", "--listen", &api.to_string()]);
    wait_until("the API server answers", || request(api, "GET", "/version", None));
    let url = format!("http://{api}");
    let agent = spawn(&[
        "agent",
        "--node-name",
        "agent-1",
        "--server",
        &url,
        "--logic",
        "v2",
        "--node-lease-duration",
        "4s",
        "--node-status-update-frequency",
        "1s",
    ]);
    wait_until("the node is registered Ready", || {
        let (code, node) = request(api, "GET", "/api/v1/nodes/agent-1", None)?;
        (code == 200 && condition(&node, "Ready")?["status"] == "True").then_some(())
    });
    let pod = json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": "agent-1", "containers": [{"name": "app", "image": "nginx:1.27"}]}
    });
    let (code, _) = request(api, "POST", "/api/v1/namespaces/default/pods", Some(&pod)).expect("an answer");
    assert_eq!(code, 201);
    let ready = || {
        let (_, pod) = request(api, "GET", "/api/v1/namespaces/default/pods/web", None)?;
        (pod.pointer("/status/phase")? == "Running" && condition(&pod, "Ready")?["status"] == "True").then_some(pod)
    };
    wait_until("the pod is Running and Ready", ready);

    signal(&agent, libc::SIGTERM);
    let (code, stderr) = wait(agent);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    let (_, node) = request(api, "GET", "/api/v1/nodes/agent-1", None).expect("the node");
    let ready_condition = condition(&node, "Ready").expect("a Ready condition");
    assert_eq!(ready_condition["status"], "False", "{node}");
    assert_eq!(ready_condition["reason"], "KubeletNotReady");
    assert_eq!(ready_condition["message"], "node is shutting down");
    assert!(ready().is_some(), "the pod's last status was written before the node went down");

    signal(&server, libc::SIGTERM);
    let (code, stderr) = wait(server);
    assert_eq!(code, Some(0), "serve's stderr:\n{stderr}");
}
