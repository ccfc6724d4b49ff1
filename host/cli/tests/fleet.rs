//! `podstatus fleet` as a user runs it, against `podstatus serve` in another process:
//! its nodes register Ready, run the pods another client creates, a canary started and
//! promoted over the control endpoint moves every node to its plugin (the metrics say
//! so by their labels), and on SIGTERM the fleet flushes, reports every node as
//! shutting down, prints its summary (here `--json`, held against its documented
//! schema) and exits 0. Unusable options exit 2.
//!
//! Every wait is bounded but generous: CI machines are slow and busy.

use std::io::Read;
use std::process::Stdio;

use serde_json::{Value, json};

mod common;

use common::{condition, free_port, podstatus, request, signal, spawn, start, wait, wait_until};

#[test]
fn a_fleet_runs_ready_nodes_takes_a_canary_over_http_and_shuts_down_on_sigterm() {
    let api = free_port();
    let (server, server_lines) = spawn(&["serve", "--listen", &api.to_string()]);
    wait_until("the API server answers", || request(api, "GET", "/version", None));
    let (control, metrics) = (free_port(), free_port());
    let url = format!("http://{api}");
    let mut command = podstatus(&[
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
        "--json",
    ]);
    command.stdout(Stdio::piped());
    let (mut fleet, lines) = start(command);
    let mut stdout = fleet.stdout.take().expect("stdout");
    let summary = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
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
    assert!(stderr.contains("group all runs logic 1.27, plugin sha256:"), "said at start: {stderr}");
    assert!(stderr.contains("(flush done, 0 sync requests left unwritten)"), "{stderr}");
    let summary = summary.join().expect("the reader").expect("stdout read");
    let summary: Value = serde_json::from_str(&summary).unwrap_or_else(|e| panic!("{e}: {summary}"));
    assert_eq!(summary["format"], "podstatus.fleet/v1");
    assert_eq!((&summary["nodes"], &summary["flushed"], &summary["passed"]), (&json!(3), &json!(true), &json!(true)));
    assert_eq!(summary["sync_requests_left"], 0);
    assert_eq!(summary["flush"], "done");
    assert!(summary["running_seconds"].as_f64().is_some_and(|s| s > 0.0), "{summary}");
    assert_eq!(summary["api_server"].as_str().map(|u| u.trim_end_matches('/')), Some(url.as_str()));
    let group = &summary["groups"][0];
    // The plugin the group ran last (promoted to v3), its logic and digest.
    assert_eq!((&group["name"], &group["nodes"], &group["plugin"]), (&json!("all"), &json!(3), &json!("podstatus-v3")));
    assert_eq!(group["logic"], "1.27-one-call");
    assert_eq!(group["plugin_sha256"].as_str().map(str::len), Some(64), "{group}");
    for field in ["updates", "versions", "api_calls", "faults", "recoveries"] {
        assert!(group[field].is_u64(), "{field}: {group}");
    }
    for field in ["api_calls_per_version", "propagation_p99_seconds", "plugin_seconds_per_update"] {
        assert!(group[field].is_number(), "{field}: {group}");
    }
    assert!(group["versions"].as_u64().is_some_and(|v| v > 0), "the pods' statuses were counted: {group}");
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
        (&["--group", "web=0"], "from 1 to 10000"),
        (&["--nodes", "3", "--group", "a=1", "--group", "b=1"], "add up to 2 nodes, not the 3"),
        (&["--nodes", "3", "--canary", "10%"], "--canary: needs --canary-plugin or --canary-logic"),
        (&["--nodes", "3", "--canary", "100%", "--canary-logic", "v3"], "not a share of the nodes"),
        (
            &["--nodes", "3", "--canary", "10%", "--canary-plugin", "/nonexistent/canary.wasm"],
            "/nonexistent/canary.wasm",
        ),
        (&["--nodes", "3", "--canary-max-p99-ratio", "0.5"], "not a factor of 1 or more"),
    ];
    for (args, says) in cases {
        let out = podstatus(&[&["fleet"], args].concat()).output().expect("podstatus runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {says:?} in {stderr}");
    }
}
