//! `podstatus fleet --nodes 100` against a real kube-apiserver, authenticated as
//! podstatus's own deployment is: the ServiceAccount and the RBAC of
//! `host/deploy/kubernetes/` (applied here as they are shipped), a token for it, one
//! identity for every node of the process, as KWOK does. (The Node authorizer wants one
//! client certificate per node, and so one connection per node: a fleet of a thousand
//! nodes would hold a thousand TLS sessions and could share no watch. docs/fleet.md
//! says why the fleet does not.)
//!
//! Every Node registers Ready, every pod reaches Running with a status the real server
//! accepted, a canary is promoted and another rolled back over the control endpoint.

use serde_json::{Value, json};

use crate::cluster::{Cluster, Process, succeeded};
use crate::common::{self, condition, free_port, request, wait_until};

const NODES: usize = 100;

/// The shipped RBAC, its namespace and ServiceAccount: everything of the deployment
/// but the workload.
const DEPLOY_FILES: [&str; 6] = [
    "namespace.yaml",
    "serviceaccount.yaml",
    "clusterrole.yaml",
    "clusterrolebinding.yaml",
    "role.yaml",
    "rolebinding.yaml",
];

/// A kubeconfig for the deployment's ServiceAccount, with a token the server issues.
pub fn service_account_kubeconfig(cluster: &Cluster) -> std::path::PathBuf {
    let deploy = common::workspace().join("host/deploy/kubernetes");
    for file in DEPLOY_FILES {
        cluster.admin(&["apply", "-f", &deploy.join(file).to_string_lossy()]);
    }
    cluster.service_account_kubeconfig("podstatus-agent", "podstatus", "fleet.kubeconfig")
}

#[test]
fn a_fleet_of_100_nodes_runs_on_kube_apiserver_and_rolls_canaries_out_and_back() {
    let cluster = Cluster::start("fleet", &[], |_| {});
    let kubeconfig = service_account_kubeconfig(&cluster);
    let (control, metrics) = (free_port(), free_port());
    let nodes = NODES.to_string();
    let fleet = Process::spawn(&[
        "fleet",
        "--nodes",
        &nodes,
        "--node-name",
        "fleet",
        "--kubeconfig",
        &kubeconfig.to_string_lossy(),
        "--logic",
        "v2",
        "--control-addr",
        &control.to_string(),
        "--metrics-addr",
        &metrics.to_string(),
        "--canary-manual",
        "--quiet",
    ]);
    let names: Vec<String> = (0..NODES).map(|i| format!("fleet-{i}")).collect();
    cluster.wait_ready_nodes(NODES, &[]);

    cluster.admin(&["create", "namespace", "e2e"]);
    let pods: Vec<Value> = names.iter().map(|node| crate::cluster::pod("e2e", &format!("web-{node}"), node)).collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": pods});
    let out = cluster.kubectl_as(cluster.plane.admin_kubeconfig(), &["create", "-f", "-"], Some(&list.to_string()));
    succeeded(&["create"], out);
    let all_running = || {
        let pods = cluster.get(&["pods", "-n", "e2e"])?;
        let running = pods["items"]
            .as_array()?
            .iter()
            .filter(|pod| {
                pod.pointer("/status/phase") == Some(&json!("Running"))
                    && condition(pod, "Ready").is_some_and(|c| c["status"] == "True")
            })
            .count();
        (running == NODES).then_some(())
    };
    wait_until("every pod Running and Ready", all_running);

    let rollout = |method: &str, path: &str, body: Option<&Value>| {
        let (code, status) = request(control, method, path, body).expect("the control endpoint answers");
        assert_eq!(code, 200, "{path}: {status}");
        status
    };
    let status = rollout("POST", "/rollout/canary", Some(&json!({"share": "10%", "to": "v3"})));
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": 90, "podstatus-v3": 10}), "{status}");
    let status = rollout("POST", "/rollout/promote", None);
    assert_eq!((&status["state"], &status["nodes_by_logic"]), (&json!("promoted"), &json!({"podstatus-v3": 100})));

    let status = rollout("POST", "/rollout/canary", Some(&json!({"share": "10%", "to": "v4"})));
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v3": 90, "podstatus-v4": 10}), "{status}");
    // The canary's nodes take new pods before it is judged.
    let more: Vec<Value> = names.iter().map(|node| crate::cluster::pod("e2e", &format!("more-{node}"), node)).collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": more});
    let out = cluster.kubectl_as(cluster.plane.admin_kubeconfig(), &["create", "-f", "-"], Some(&list.to_string()));
    succeeded(&["create"], out);
    wait_until("the new pods Running and Ready", || {
        let pods = cluster.get(&["pods", "-n", "e2e"])?;
        let running = pods["items"]
            .as_array()?
            .iter()
            .filter(|pod| pod.pointer("/status/phase") == Some(&json!("Running")))
            .count();
        (running == 2 * NODES).then_some(())
    });
    let status = rollout("POST", "/rollout/rollback", None);
    assert_eq!((&status["state"], &status["nodes_by_logic"]), (&json!("rolled_back"), &json!({"podstatus-v3": 100})));

    let (code, scraped) = request(metrics, "GET", "/metrics", None).expect("the metrics answer");
    assert_eq!(code, 200);
    let scraped = scraped.as_str().unwrap_or_default().to_owned();
    let forbidden: f64 = scraped
        .lines()
        .filter(|l| l.starts_with("podstatus_api_calls_total{") && l.contains("outcome=\"Forbidden\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(forbidden, 0.0, "every call the RBAC of host/deploy allows: {scraped}");

    let (code, stderr) = fleet.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(stderr.contains("(flush done, 0 sync requests left unwritten)"), "{stderr}");
}
