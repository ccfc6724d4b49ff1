//! A sharded fleet against a real kube-apiserver, deployed as `host/deploy/fleet/`
//! ships it: the PluginRollout CRD and the RBAC applied as they are, a token of the
//! fleet's ServiceAccount. Four shard processes register every Node Ready, each node's
//! Lease held by its shard; a PluginRollout (created with kubectl, checked by the CRD's
//! schema) is promoted by the leader over every shard, after one whose canary share
//! the schema let through but means nothing is refused; no call is forbidden. Each
//! shard's control endpoint asks the cluster (`--control-auth kubernetes`): without a
//! token 401, a viewer's token deciding 403, and nothing swapped by either.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::cluster::{Cluster, Process};
use crate::common::{self, free_port, request, request_with, wait_until};

const SHARDS: usize = 4;
const NODES: usize = 40;
const PREFIX: &str = "kshard";

/// Everything of `host/deploy/fleet/` but the workload (the shards run here as
/// processes), and a kubeconfig with a token of the fleet's ServiceAccount, in the
/// fleet's namespace.
fn deploy(cluster: &Cluster) -> std::path::PathBuf {
    let dir = common::workspace().join("host/deploy/fleet");
    for file in [
        "crd.yaml",
        "namespace.yaml",
        "serviceaccount.yaml",
        "clusterrole.yaml",
        "clusterrolebinding.yaml",
        "clusterrolebinding-auth-delegator.yaml",
        "role-node-leases.yaml",
        "rolebinding-node-leases.yaml",
        "role.yaml",
        "rolebinding.yaml",
        "clusterrole-rollout-operator.yaml",
    ] {
        cluster.admin(&["apply", "-f", &dir.join(file).to_string_lossy()]);
    }
    cluster.admin(&["wait", "--for=condition=Established", "crd/pluginrollouts.podstatus.io", "--timeout=60s"]);
    cluster.service_account_kubeconfig("podstatus-fleet", "podstatus-fleet", "fleet-shards.kubeconfig")
}

#[test]
fn four_shards_deployed_as_shipped_run_every_node_and_roll_a_plugin_out_over_all_of_them() {
    let cluster = Cluster::start("fleet-shards", &[], |_| {});
    let kubeconfig = deploy(&cluster);
    let nodes = NODES.to_string();
    let metrics: Vec<_> = (0..SHARDS).map(|_| free_port()).collect();
    let controls: Vec<_> = (0..SHARDS).map(|_| free_port()).collect();
    let shards: Vec<Process> = (0..SHARDS)
        .map(|ordinal| {
            Process::spawn(&[
                "fleet",
                "--nodes",
                &nodes,
                "--node-name",
                PREFIX,
                "--shard",
                &ordinal.to_string(),
                "--shard-lease-duration",
                "4s",
                "--node-lease-duration",
                "8s",
                "--kubeconfig",
                &kubeconfig.to_string_lossy(),
                "--logic",
                "v2",
                "--control-addr",
                &controls[ordinal].to_string(),
                "--control-auth",
                "kubernetes",
                "--metrics-addr",
                &metrics[ordinal].to_string(),
                "--quiet",
            ])
        })
        .collect();
    cluster.wait_ready_nodes(NODES, &["-l", &format!("podstatus.io/fleet={PREFIX}")]);
    wait_until("each node's Lease held by its shard", || {
        let leases = cluster.get(&["leases", "-n", "kube-node-lease"])?;
        let held = leases["items"]
            .as_array()?
            .iter()
            .filter(|lease| {
                let name = lease.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                let holder = lease.pointer("/spec/holderIdentity").and_then(Value::as_str).unwrap_or_default();
                name.strip_prefix(&format!("{PREFIX}-"))
                    .and_then(|n| n.parse::<usize>().ok())
                    .is_some_and(|n| holder.starts_with(&format!("{PREFIX}-shard-{}_", n % SHARDS)))
            })
            .count();
        (held == NODES).then_some(())
    });

    let file = common::workspace().join("target/guest/podstatus-v3.wasm");
    let digest: String = Sha256::digest(std::fs::read(&file).expect("v3")).iter().map(|b| format!("{b:02x}")).collect();
    let rollout = json!({
        "apiVersion": "podstatus.io/v1alpha1", "kind": "PluginRollout",
        "metadata": {"name": "to-v3", "namespace": "podstatus-fleet"},
        "spec": {"fleet": PREFIX, "plugin": {"sha256": digest, "name": "podstatus-v3", "file": file.to_string_lossy()},
                 "canary": "20%", "watch": "4s",
                 // Loose time criteria: a few updates of a fresh plugin measure the machine.
                 "criteria": {"minSamples": 3, "maxSlowdown": 20, "maxP99Ratio": 20}}
    });
    // The CRD's schema checks shapes only: a share of 150% is stored, and the leader
    // refuses it (the oldest undecided rollout is carried first), then goes on to the
    // next.
    let mut invalid = rollout.clone();
    invalid["metadata"]["name"] = json!("share-150");
    invalid["spec"]["canary"] = json!("150%");
    cluster.create(&invalid);
    let status = wait_until("the invalid rollout refused", || {
        let object = cluster.get(&["pluginrollouts", "share-150", "-n", "podstatus-fleet"])?;
        (object.pointer("/status/phase")?.as_str()? == "Refused").then(|| object["status"].clone())
    });
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("invalid: spec.canary"), "{status:#}");
    cluster.create(&rollout);
    cluster.admin(&["create", "namespace", "e2e"]);
    let pods: Vec<Value> =
        (0..NODES).map(|n| crate::cluster::pod("e2e", &format!("web-{n}"), &format!("{PREFIX}-{n}"))).collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": pods});
    let out = cluster.kubectl_as(cluster.plane.admin_kubeconfig(), &["create", "-f", "-"], Some(&list.to_string()));
    crate::cluster::succeeded(&["create"], out);
    let status = wait_until("the rollout decided", || {
        let object = cluster.get(&["pluginrollouts", "to-v3", "-n", "podstatus-fleet"])?;
        let phase = object.pointer("/status/phase")?.as_str()?;
        (phase != "Canary").then(|| object["status"].clone())
    });
    assert_eq!(status["phase"], "Promoted", "{status:#}");
    assert_eq!(status["shards"].as_array().map(Vec::len), Some(SHARDS), "{status:#}");
    wait_until("every shard carried the promotion out", || {
        let object = cluster.get(&["pluginrollouts", "to-v3", "-n", "podstatus-fleet"])?;
        let shards = object.pointer("/status/shards")?.as_array()?;
        shards.iter().all(|s| s["applied"] == "Promoted").then_some(())
    });
    wait_until("every pod Running", || {
        let pods = cluster.get(&["pods", "-n", "e2e"])?;
        let running =
            pods["items"].as_array()?.iter().filter(|p| p.pointer("/status/phase") == Some(&json!("Running"))).count();
        (running == NODES).then_some(())
    });
    let viewer = crate::fleet_control::operator(&cluster, "podstatus-fleet", "viewer", &["get"]);
    let bearer = format!("Bearer {viewer}");
    for control in &controls {
        let canary = json!({"share": "50%", "to": "v2"});
        let (code, answer) = request(*control, "POST", "/rollout/canary", Some(&canary)).expect("an answer");
        assert_eq!(code, 401, "no token: {answer}");
        let as_viewer = [("Authorization", bearer.as_str())];
        let (code, answer) =
            request_with(*control, "POST", "/rollout/canary", &as_viewer, Some(&canary)).expect("an answer");
        assert_eq!(code, 403, "the viewer may not create: {answer}");
        let (code, status) = request_with(*control, "GET", "/rollout", &as_viewer, None).expect("an answer");
        assert_eq!(code, 200, "the viewer may read: {status}");
        let share = json!({"podstatus-v3": NODES / SHARDS});
        assert_eq!(status["nodes_by_logic"], share, "nothing swapped by a refused request: {status}");
    }
    for addr in &metrics {
        let (_, scraped) = request(*addr, "GET", "/metrics", None).expect("the metrics answer");
        let scraped = scraped.as_str().unwrap_or_default().to_owned();
        let forbidden = scraped.lines().any(|l| l.contains("outcome=\"Forbidden\"") && !l.ends_with(" 0"));
        assert!(!forbidden, "every call the shipped RBAC allows: {scraped}");
    }
    for shard in shards {
        let (code, stderr) = shard.stop();
        assert_eq!(code, Some(0), "stderr:\n{stderr}");
        assert!(!stderr.contains("Forbidden"), "no call forbidden: {stderr}");
        assert!(stderr.contains("rollout to-v3: promoted"), "{stderr}");
    }
}
