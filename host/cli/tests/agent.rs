//! `podstatus agent` as a user runs it, against `podstatus serve` in another process
//! (so the API server outlives the agent): it registers its node, runs a pod another
//! client creates until Running and Ready, and on SIGTERM stops, flushes and leaves the
//! node reported as shutting down (Ready False, `KubeletNotReady`), exiting 0.
//!
//! Every wait is bounded but generous: CI machines are slow and busy.

use serde_json::json;

mod common;

use common::{condition, free_port, request, signal, spawn, wait, wait_until};

#[test]
fn sigterm_flushes_then_reports_the_node_shutting_down() {
    let api = free_port();
    let (server, server_lines) = spawn(&["serve", "--listen", &api.to_string()]);
    wait_until("the API server answers", || request(api, "GET", "/version", None));
    let url = format!("http://{api}");
    let (agent, agent_lines) = spawn(&[
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
    let (code, stderr) = wait(agent, &agent_lines);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    let (_, node) = request(api, "GET", "/api/v1/nodes/agent-1", None).expect("the node");
    let ready_condition = condition(&node, "Ready").expect("a Ready condition");
    assert_eq!(ready_condition["status"], "False", "{node}");
    assert_eq!(ready_condition["reason"], "KubeletNotReady");
    assert_eq!(ready_condition["message"], "node is shutting down");
    assert!(ready().is_some(), "the pod's last status was written before the node went down");

    signal(&server, libc::SIGTERM);
    let (code, stderr) = wait(server, &server_lines);
    assert_eq!(code, Some(0), "serve's stderr:\n{stderr}");
}

/// Without `--logic` the agent runs the newest release followed faithfully, 1.37, and
/// says so at start with the plugin's digest: a running pod is Ready with its
/// containers Ready (the 2017 seed left ContainersReady False beside Ready True).
#[test]
fn the_agent_runs_1_37_by_default_and_says_so() {
    let api = free_port();
    let (server, server_lines) = spawn(&["serve", "--listen", &api.to_string()]);
    wait_until("the API server answers", || request(api, "GET", "/version", None));
    let url = format!("http://{api}");
    let (agent, agent_lines) = spawn(&["agent", "--node-name", "agent-2", "--server", &url]);
    let started = wait_until("the agent says what it runs", || {
        agent_lines.recv_timeout(std::time::Duration::from_millis(100)).ok().filter(|l| l.contains("node agent-2"))
    });
    assert!(started.contains("logic 1.37, plugin sha256:"), "{started}");
    wait_until("the node is registered Ready", || {
        let (code, node) = request(api, "GET", "/api/v1/nodes/agent-2", None)?;
        (code == 200 && condition(&node, "Ready")?["status"] == "True").then_some(())
    });
    let pod = json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": "agent-2", "containers": [{"name": "app", "image": "nginx:1.27"}]}
    });
    let (code, _) = request(api, "POST", "/api/v1/namespaces/default/pods", Some(&pod)).expect("an answer");
    assert_eq!(code, 201);
    let pod = wait_until("the pod is Running and Ready", || {
        let (_, pod) = request(api, "GET", "/api/v1/namespaces/default/pods/web", None)?;
        (pod.pointer("/status/phase")? == "Running" && condition(&pod, "Ready")?["status"] == "True").then_some(pod)
    });
    assert_eq!(condition(&pod, "ContainersReady").expect("ContainersReady")["status"], "True", "{pod}");

    signal(&agent, libc::SIGTERM);
    let (code, stderr) = wait(agent, &agent_lines);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    signal(&server, libc::SIGTERM);
    let (code, stderr) = wait(server, &server_lines);
    assert_eq!(code, Some(0), "serve's stderr:\n{stderr}");
}

/// `serve --max-connections N` admits N connections: past them it closes an idle one to
/// admit the next (a cap of 0 is refused).
#[test]
fn serve_admits_as_many_connections_as_it_is_told() {
    use std::io::Read;
    use std::net::TcpStream;
    use std::time::Duration;

    let refused = common::podstatus(&["serve", "--max-connections", "0"]).output().expect("podstatus runs");
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));

    let api = free_port();
    let (server, server_lines) = spawn(&["serve", "--listen", &api.to_string(), "--max-connections", "2"]);
    wait_until("the API server answers", || request(api, "GET", "/version", None));
    // Two connections that send nothing fill the cap; a request then needs one of them.
    let idle: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(api).expect("a connection")).collect();
    std::thread::sleep(Duration::from_millis(200));
    let (code, _) = request(api, "GET", "/version", None).expect("answered past the cap");
    assert_eq!(code, 200);
    let closed = idle.into_iter().filter_map(|mut stream| {
        stream.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut byte = [0u8; 1];
        // EOF (or a reset): the server let this connection go to admit the request. A
        // connection still open times out instead.
        let reset = |e: &std::io::Error| {
            matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted)
        };
        match stream.read(&mut byte) {
            Ok(0) => Some(()),
            Err(e) if reset(&e) => Some(()),
            _ => None,
        }
    });
    assert!(closed.count() >= 1, "no idle connection was closed: the cap of 2 was not applied");

    signal(&server, libc::SIGTERM);
    let (code, stderr) = wait(server, &server_lines);
    assert_eq!(code, Some(0), "{stderr}");
}
