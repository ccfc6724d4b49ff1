//! `podstatus fleet` as a user runs it, against `podstatus serve` in another process:
//! its nodes register Ready, run the pods another client creates, a canary started and
//! promoted over the control endpoint moves every node to its plugin (the metrics say
//! so by their labels), and on SIGTERM the fleet flushes, reports every node as
//! shutting down, prints a line per group and exits 0. Unusable options exit 2.
//!
//! Every wait is bounded but generous: CI machines are slow and busy.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use podstatus_backends::testing;
use serde_json::{Value, json};

/// How long a process may take to do what a test waits for; far above what it needs.
const DEADLINE: Duration = Duration::from_secs(120);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_podstatus"));
    command
        .args(args)
        .env("PODSTATUS_CACHE_DIR", workspace().join("target").join("podstatus-test-cache"))
        .env_remove("RUST_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// `podstatus ARGS`, its stderr read line by line on a thread of its own (so the pipe
/// never fills).
fn spawn(args: &[&str]) -> (Child, Receiver<String>) {
    let mut child = command(args).spawn().expect("podstatus runs");
    let (tx, lines) = std::sync::mpsc::channel();
    let pipe = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// A port nobody listens on now (bound, then released).
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// One request with a JSON body; the status and the body (JSON, or the text as a JSON
/// string), `None` while nothing answers.
fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
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
    let (_, text) = response.split_once("\r\n\r\n")?;
    Some((code, serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))))
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

/// Waits (bounded) for the exit; returns the exit code and every stderr line.
fn wait(mut child: Child, lines: &Receiver<String>) -> (Option<i32>, String) {
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
    // The reader thread ends with the pipe: take what it read.
    let mut stderr = String::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) {
        stderr.push_str(&line);
        stderr.push('\n');
    }
    (status.code(), stderr)
}

#[test]
fn a_fleet_runs_ready_nodes_takes_a_canary_over_http_and_shuts_down_on_sigterm() {
    let api = free_port();
    let (server, server_lines) = spawn(&["serve", "--listen", &api.to_string()]);
    wait_until("the API server answers", || request(api, "GET", "/version", None));
    let (control, metrics) = (free_port(), free_port());
    let url = format!("http://{api}");
    let (fleet, lines) = spawn(&[
        "fleet",
        "--nodes",
        "3",
        "--node-name",
        "cli-fleet",
        "--server",
        &url,
        "--logic",
        "v2",
        "--control-addr",
        &control.to_string(),
        "--metrics-addr",
        &metrics.to_string(),
        "--node-status-update-frequency",
        "1s",
    ]);
    let names = ["cli-fleet-0", "cli-fleet-1", "cli-fleet-2"];
    for name in names {
        wait_until(&format!("{name} is registered Ready"), || {
            let (code, node) = request(api, "GET", &format!("/api/v1/nodes/{name}"), None)?;
            (code == 200 && condition(&node, "Ready")?["status"] == "True").then_some(())
        });
    }
    for (i, name) in names.iter().enumerate() {
        let pod = json!({
            "metadata": {"name": format!("web-{i}"), "namespace": "default"},
            "spec": {"nodeName": name, "containers": [{"name": "app", "image": "nginx:1.27"}]}
        });
        let (code, _) = request(api, "POST", "/api/v1/namespaces/default/pods", Some(&pod)).expect("an answer");
        assert_eq!(code, 201);
    }
    let running = |i: usize| {
        let (_, pod) = request(api, "GET", &format!("/api/v1/namespaces/default/pods/web-{i}"), None)?;
        (pod.pointer("/status/phase")? == "Running" && condition(&pod, "Ready")?["status"] == "True").then_some(pod)
    };
    for i in 0..3 {
        wait_until("the pod is Running and Ready", || running(i));
    }

    let (code, status) = wait_until("the control endpoint answers", || request(control, "GET", "/rollout", None));
    assert_eq!(code, 200, "{status}");
    assert_eq!((&status["state"], &status["nodes_by_logic"]), (&json!("idle"), &json!({"podstatus-v2": 3})));
    let canary = json!({"share": "30%", "to": "v3"});
    let (code, status) = request(control, "POST", "/rollout/canary", Some(&canary)).expect("an answer");
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": 2, "podstatus-v3": 1}), "{status}");
    let (code, status) = request(control, "POST", "/rollout/promote", None).expect("an answer");
    assert_eq!(code, 200, "{status}");
    assert_eq!((&status["state"], &status["nodes_by_logic"]), (&json!("promoted"), &json!({"podstatus-v3": 3})));
    let (code, scraped) = request(metrics, "GET", "/metrics", None).expect("the metrics answer");
    assert_eq!(code, 200);
    let scraped = scraped.as_str().unwrap_or_default().to_owned();
    assert!(scraped.lines().any(|l| l == "podstatus_fleet_nodes{group=\"all\",logic=\"podstatus-v3\"} 3"), "{scraped}");
    assert!(
        scraped.contains("podstatus_api_calls_total{group=\"all\",logic=\"podstatus-v2\",verb=\"get\""),
        "{scraped}"
    );

    signal(&fleet, libc::SIGTERM);
    let (code, stderr) = wait(fleet, &lines);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(stderr.contains("podstatus fleet: 3 nodes cli-fleet-0 .. cli-fleet-2"), "{stderr}");
    assert!(stderr.contains(&format!("control endpoint on http://{control}/rollout")), "{stderr}");
    assert!(stderr.contains("group all: 3 nodes on podstatus-v3"), "{stderr}");
    assert!(stderr.contains("(0 sync requests left unwritten)"), "{stderr}");
    for name in names {
        let (_, node) = request(api, "GET", &format!("/api/v1/nodes/{name}"), None).expect("the node");
        let ready = condition(&node, "Ready").expect("a Ready condition");
        assert_eq!((&ready["status"], &ready["message"]), (&json!("False"), &json!("node is shutting down")));
    }
    for i in 0..3 {
        assert!(running(i).is_some(), "web-{i}'s last status was written before its node went down");
    }

    signal(&server, libc::SIGTERM);
    let (code, stderr) = wait(server, &server_lines);
    assert_eq!(code, Some(0), "serve's stderr:\n{stderr}");
}

#[test]
fn unusable_fleet_options_exit_2_with_a_line_on_stderr() {
    let cases: [(&[&str], &str); 7] = [
        (&["--group", "canary=2"], "canary's group"),
        (&["--group", "web=0"], "above 0"),
        (&["--nodes", "3", "--group", "a=1", "--group", "b=1"], "add up to 2 nodes, not the 3"),
        (&["--nodes", "3", "--canary", "10%"], "--canary needs --canary-plugin or --canary-logic"),
        (&["--nodes", "3", "--canary", "100%", "--canary-logic", "v3"], "not a share of the nodes"),
        (
            &["--nodes", "3", "--canary", "10%", "--canary-plugin", "/nonexistent/canary.wasm"],
            "/nonexistent/canary.wasm",
        ),
        (&["--nodes", "3", "--canary-max-p99-ratio", "0.5"], "not a factor of 1 or more"),
    ];
    for (args, says) in cases {
        let out = command(&[&["fleet"], args].concat()).output().expect("podstatus runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {says:?} in {stderr}");
    }
}
