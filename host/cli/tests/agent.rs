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
