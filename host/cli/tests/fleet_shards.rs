//! `podstatus fleet --shard`: four shard processes of one fleet against one
//! `podstatus serve`. Each runs its share of the nodes (node N is shard N mod 4's), and
//! each node's Lease names the shard that runs it: every Node is Ready and held
//! exactly once. One shard stops (as a StatefulSet scaled down stops its last pod): it
//! releases its nodes' Leases, its membership expires, and the three left share its
//! nodes out (node N is shard N mod 3's), run their pods, and label them as theirs.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde_json::{Value, json};

mod common;

use common::{condition, free_port, request, signal, spawn, wait, wait_until};

const NODES: usize = 12;
const PREFIX: &str = "sharded";

/// Each node's Lease holder (the shard's identity, `sharded-shard-O_SUFFIX`), by node.
fn holders(api: SocketAddr) -> Option<BTreeMap<usize, String>> {
    let (code, list) = request(api, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", None)?;
    (code == 200).then_some(())?;
    let mut holders = BTreeMap::new();
    for lease in list["items"].as_array()? {
        let Some(n) = lease.pointer("/metadata/name")?.as_str()?.strip_prefix(&format!("{PREFIX}-")) else {
            continue;
        };
        let holder = lease.pointer("/spec/holderIdentity").and_then(Value::as_str).unwrap_or_default();
        holders.insert(n.parse().ok()?, holder.to_owned());
    }
    Some(holders)
}

/// Whether node N's Lease is held by shard `owner(N)`, for every node of the fleet.
fn held_as(api: SocketAddr, owner: impl Fn(usize) -> usize) -> Option<()> {
    let holders = holders(api)?;
    let right = (0..NODES)
        .all(|n| holders.get(&n).is_some_and(|holder| holder.starts_with(&format!("{PREFIX}-shard-{}_", owner(n)))));
    right.then_some(())
}

/// Whether every node of the fleet is Ready, labelled as shard `owner(N)`'s.
fn ready_as(api: SocketAddr, owner: impl Fn(usize) -> usize) -> Option<()> {
    for n in 0..NODES {
        let (code, node) = request(api, "GET", &format!("/api/v1/nodes/{PREFIX}-{n}"), None)?;
        let shard = node.pointer("/metadata/labels/podstatus.io~1shard").and_then(Value::as_str);
        let ready = condition(&node, "Ready").is_some_and(|c| c["status"] == "True");
        (code == 200 && ready && shard == Some(&owner(n).to_string())).then_some(())?;
    }
    Some(())
}

fn create_pods(api: SocketAddr, round: &str) {
    for n in 0..NODES {
        let pod = json!({
            "metadata": {"name": format!("{round}-{n}"), "namespace": "default"},
            "spec": {"nodeName": format!("{PREFIX}-{n}"), "containers": [{"name": "app", "image": "nginx:1.27"}]}
        });
        let (code, answer) = request(api, "POST", "/api/v1/namespaces/default/pods", Some(&pod)).expect("an answer");
        assert_eq!(code, 201, "{answer}");
    }
}

fn all_running(api: SocketAddr, round: &str) -> Option<()> {
    for n in 0..NODES {
        let (_, pod) = request(api, "GET", &format!("/api/v1/namespaces/default/pods/{round}-{n}"), None)?;
        (pod.pointer("/status/phase")? == "Running").then_some(())?;
    }
    Some(())
}

#[test]
fn four_shards_run_each_node_once_and_three_take_over_the_fourths_nodes() {
    let api = free_port();
    let (server, server_lines) = spawn(&["serve", "--listen", &api.to_string()]);
    wait_until("the API server answers", || request(api, "GET", "/version", None));
    let url = format!("http://{api}");
    let nodes = NODES.to_string();
    let mut shards: Vec<_> = (0..4)
        .map(|ordinal| {
            let ordinal = ordinal.to_string();
            let control = free_port().to_string();
            spawn(&[
                "fleet",
                "--nodes",
                &nodes,
                "--node-name",
                PREFIX,
                "--shard",
                &ordinal,
                "--shard-lease-duration",
                "2s",
                "--node-lease-duration",
                "4s",
                "--node-status-update-frequency",
                "1s",
                "--server",
                &url,
                "--logic",
                "v2",
                "--control-addr",
                &control,
                "--quiet",
            ])
        })
        .collect();

    wait_until("every node held by shard N mod 4", || held_as(api, |n| n % 4));
    wait_until("every Node Ready, labelled as shard N mod 4's", || ready_as(api, |n| n % 4));
    create_pods(api, "first");
    wait_until("every first pod Running", || all_running(api, "first"));

    // Shard 3 stops, as a StatefulSet scaled from 4 to 3 stops its last pod.
    let (stopped, lines) = shards.pop().expect("shard 3");
    signal(&stopped, libc::SIGTERM);
    let (code, stderr) = wait(stopped, &lines);
    assert_eq!(code, Some(0), "shard 3's stderr:\n{stderr}");
    assert!(stderr.contains("shard 3 of 12 nodes"), "{stderr}");
    assert!(stderr.contains("3 nodes sharded-3 .. sharded-11"), "shard 3 ran nodes 3, 7, 11: {stderr}");

    wait_until("every node held by shard N mod 3", || held_as(api, |n| n % 3));
    wait_until("every Node Ready, labelled as shard N mod 3's", || ready_as(api, |n| n % 3));
    create_pods(api, "second");
    wait_until("every second pod Running, on the shards left", || all_running(api, "second"));
    assert!(all_running(api, "first").is_some(), "the first pods kept their statuses");

    for (shard, lines) in shards {
        signal(&shard, libc::SIGTERM);
        let (code, stderr) = wait(shard, &lines);
        assert_eq!(code, Some(0), "stderr:\n{stderr}");
        assert!(stderr.contains("shard starts again: the live shards are now [0, 1, 2]"), "{stderr}");
        assert!(stderr.contains("(flush done, 0 sync requests left unwritten)"), "{stderr}");
    }
    // Every shard released what it held on its way out.
    let holders = holders(api).expect("the leases");
    assert!(holders.values().all(String::is_empty), "{holders:?}");
    signal(&server, libc::SIGTERM);
    let (code, stderr) = wait(server, &server_lines);
    assert_eq!(code, Some(0), "serve's stderr:\n{stderr}");
}

#[test]
fn unusable_shard_options_exit_2_before_a_node_starts() {
    let server = ["--server", "http://127.0.0.1:9"];
    let cases: [(&[&str], Option<&str>, &str); 5] = [
        (&["--shard", "4/4"], None, "expected ORDINAL, ORDINAL/COUNT, pod or pod/COUNT"),
        (&["--shard", "01"], None, "expected ORDINAL"),
        (&["--shard", "pod"], Some("fleet-x"), "\"fleet-x\" ends in no ordinal"),
        (&["--shard", "0", "--shard-lease-duration", "1500ms"], None, "whole seconds"),
        (&["--shard", "1", "--listen", "127.0.0.1:0"], None, "needs an API server every shard reaches"),
    ];
    for (args, pod_name, says) in cases {
        let embedded = args.contains(&"--listen");
        let mut all = vec!["fleet", "--nodes", "4"];
        if !embedded {
            all.extend(server);
        }
        all.extend(args);
        let mut command = common::podstatus(&all);
        match pod_name {
            Some(name) => command.env("POD_NAME", name),
            None => command.env_remove("POD_NAME"),
        };
        let out = command.output().expect("podstatus runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {says:?} in {stderr}");
    }
}
