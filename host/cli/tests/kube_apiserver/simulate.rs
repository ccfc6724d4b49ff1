//! `podstatus simulate` against a real kube-apiserver (as the admin: the driver plays
//! the workloads that create and delete pods): the pods it makes pass the real
//! validation, every status write is accepted, and the final check is clean. (Against
//! the embedded server alone, pods whose readiness probe had no handler, statuses with
//! a QoS class the server had computed otherwise, and a namespace that did not exist
//! all went through.)

use serde_json::Value;

use crate::cluster::Cluster;
use crate::common;

#[test]
fn a_simulated_fleet_on_kube_apiserver_writes_only_what_it_accepts() {
    let cluster = Cluster::start("simulate", &[], |_| {});
    let kubeconfig = cluster.plane.admin_kubeconfig().to_string_lossy().into_owned();
    let args = [
        "simulate",
        "--nodes",
        "10",
        "--pods",
        "100",
        "--churn",
        "60",
        "--duration",
        "8",
        "--logic",
        "v4",
        "--kubeconfig",
        &kubeconfig,
        "--json",
    ];
    let out = common::podstatus(&args).stdout(std::process::Stdio::piped()).output().expect("podstatus runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).expect("a JSON summary");
    assert_eq!(summary["check"]["differing"], serde_json::json!([]), "{summary:#}");
    assert!(summary["pods_created"].as_u64().unwrap_or(0) > 0, "the real server took the pods: {summary:#}");
    assert!(summary["pods_deleted"].as_u64().unwrap_or(0) > 0, "and their deletions: {summary:#}");
    let calls = &summary["api_calls"];
    for (verb, outcomes) in calls.as_object().expect("api_calls") {
        for outcome in outcomes.as_object().expect("outcomes").keys() {
            assert!(["Success", "NotFound", "Conflict"].contains(&outcome.as_str()), "{verb} {outcome}: {summary:#}");
        }
    }
    assert!(calls["patch_status"]["Success"].as_u64().unwrap_or(0) > 0, "{summary:#}");
}
