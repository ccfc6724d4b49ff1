//! What a real API server does to its clients, and `podstatus agent` riding it out:
//! kube-apiserver killed and started again mid-run, a watch resumed from a compacted
//! resourceVersion (410 Gone), and 429s from a server with one request in flight.
//!
//! Each test has a control plane of its own: they stop, starve or compact it.

use std::time::Instant;

use serde_json::Value;

use crate::cluster::{Cluster, pod};
use crate::common::{condition, wait_until};

fn running_and_ready(cluster: &Cluster, namespace: &str, name: &str) -> Option<Value> {
    let pod = cluster.get(&["pod", "-n", namespace, name])?;
    (pod.pointer("/status/phase")? == "Running" && condition(&pod, "Ready")?["status"] == "True").then_some(pod)
}

fn lease_renewed(cluster: &Cluster, node: &str) -> Option<String> {
    let lease = cluster.get(&["lease", "-n", "kube-node-lease", node])?;
    lease.pointer("/spec/renewTime")?.as_str().map(str::to_owned)
}

/// The API server killed (as a crash) while a pod's first statuses are still to be
/// written, then started again on the same data: the agent reconnects, writes them,
/// renews its Lease again and takes new pods.
#[test]
fn the_agent_rides_out_a_restart_of_kube_apiserver() {
    let mut cluster = Cluster::start("restart", &["restart"], |_| {});
    let agent = cluster.agent("restart", &["--logic", "v4"]);
    wait_until("the Node registered", || cluster.get(&["node", "restart"]));
    cluster.admin(&["create", "namespace", "e2e"]);
    cluster.create(&pod("e2e", "before", "restart"));
    wait_until("Running and Ready", || running_and_ready(&cluster, "e2e", "before"));
    // A pod whose statuses the agent is writing when the server goes.
    cluster.create(&pod("e2e", "during", "restart"));
    cluster.plane.kill();
    let down = Instant::now();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let last_renewal = {
        let ready = cluster.plane.restart().unwrap_or_else(|e| panic!("{e}"));
        eprintln!("kube-apiserver ready again after {} ms (its own start)", ready.ready_ms);
        lease_renewed(&cluster, "restart").expect("the Lease survived the restart")
    };
    let restarted = Instant::now();
    wait_until("the pod written during the restart Running and Ready", || running_and_ready(&cluster, "e2e", "during"));
    wait_until("the Lease renewed after the restart", || {
        lease_renewed(&cluster, "restart").filter(|t| *t != last_renewal)
    });
    eprintln!(
        "recovered {} ms after the restart ({} ms after the kill)",
        restarted.elapsed().as_millis(),
        down.elapsed().as_millis()
    );
    cluster.create(&pod("e2e", "after", "restart"));
    wait_until("a new pod Running and Ready", || running_and_ready(&cluster, "e2e", "after"));
    assert!(running_and_ready(&cluster, "e2e", "before").is_some(), "the first pod kept its status");

    let (code, stderr) = agent.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
}

/// Without the watch cache and with etcd compacted every second, the agent's pod watch,
/// broken by a restart, resumes from a resourceVersion etcd no longer has: 410 Gone.
/// The agent lists again, forgets a pod deleted meanwhile and takes a new one.
#[test]
fn a_watch_from_a_compacted_resource_version_makes_the_agent_list_again() {
    let mut cluster = Cluster::start("gone", &["gone"], |config| {
        config.apiserver_args = vec!["--watch-cache=false".into(), "--etcd-compaction-interval=1s".into()];
    });
    let agent = cluster.agent("gone", &["--logic", "v4"]);
    wait_until("the Node registered", || cluster.get(&["node", "gone"]));
    cluster.admin(&["create", "namespace", "e2e"]);
    cluster.create(&pod("e2e", "first", "gone"));
    wait_until("Running and Ready", || running_and_ready(&cluster, "e2e", "first"));
    // Lease renewals move etcd's revision on; the compactions pass the watch's last one.
    let renewal = lease_renewed(&cluster, "gone").expect("a Lease");
    wait_until("two renewals", || lease_renewed(&cluster, "gone").filter(|t| *t != renewal));
    std::thread::sleep(std::time::Duration::from_secs(3));
    cluster.plane.restart().unwrap_or_else(|e| panic!("{e}"));
    cluster.create(&pod("e2e", "second", "gone"));
    wait_until("a pod after the relist Running and Ready", || running_and_ready(&cluster, "e2e", "second"));

    let (code, stderr) = agent.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(
        stderr.lines().any(|l| l.contains("the pod watch of https://")
            && l.contains("failed")
            && (l.contains("410") || l.contains("too old"))),
        "the watch was refused as too old:\n{stderr}"
    );
}

/// One request in flight at a time: kubectl's and the agent's requests meet 429 (with
/// Retry-After), and every status still gets written.
#[test]
fn a_server_answering_429_still_gets_every_status() {
    let cluster = Cluster::start("throttled", &["throttled"], |config| config.max_requests_inflight = Some(1));
    let agent = cluster.agent("throttled", &["--logic", "v4", "--kube-api-qps", "200", "--kube-api-burst", "400"]);
    wait_until("the Node registered", || cluster.get(&["node", "throttled"]));
    cluster.admin(&["create", "namespace", "e2e"]);
    let names: Vec<String> = (0..20).map(|i| format!("pod-{i}")).collect();
    let pods: Vec<Value> = names.iter().map(|name| pod("e2e", name, "throttled")).collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": pods});
    let out = cluster.kubectl_as(cluster.plane.admin_kubeconfig(), &["create", "-f", "-"], Some(&list.to_string()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for name in &names {
        wait_until("Running and Ready through the 429s", || running_and_ready(&cluster, "e2e", name));
    }
    // The server's own count of what it refused.
    let metrics = cluster.admin(&["get", "--raw", "/metrics"]);
    let refused: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{") && l.contains("code=\"429\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    eprintln!("kube-apiserver answered 429 {refused} times");
    assert!(refused > 0.0, "the server refused requests: {metrics}");
    let (code, stderr) = agent.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
}
