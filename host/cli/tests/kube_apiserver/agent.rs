//! `podstatus agent` as a node of a real cluster, with the node's own client
//! certificate (`system:node:NAME`): the Node authorizer and `NodeRestriction` judge
//! every call it makes. It registers its Node, keeps its Lease renewed, runs the pods
//! the admin binds to it to Running and Ready with statuses the real server validates,
//! and removes a deleted pod once it has stopped, with the pod's UID as precondition.

use serde_json::{Value, json};
use std::sync::mpsc::Receiver;

use crate::cluster::{Cluster, Process, pod, succeeded};
use crate::common::{self, condition, wait_until};

/// One control plane for the tests of this file, each on a node of its own.
fn cluster() -> &'static Cluster {
    static CLUSTER: std::sync::OnceLock<Cluster> = std::sync::OnceLock::new();
    CLUSTER.get_or_init(|| Cluster::start("agent", &["v1", "v2", "v3", "v4", "swap", "static-v1", "static-v4"], |_| {}))
}

/// The agent's metrics endpoint and the process.
struct RunningAgent {
    process: Process,
    metrics: std::net::SocketAddr,
}

impl RunningAgent {
    fn start(cluster: &Cluster, node: &str, args: &[&str]) -> Self {
        let metrics = common::free_port();
        let metrics_flag = metrics.to_string();
        let mut all = vec!["--metrics-addr", &metrics_flag];
        all.extend_from_slice(args);
        RunningAgent { process: cluster.agent(node, &all), metrics }
    }

    /// `podstatus_api_calls_total` for `verb` and `outcome`.
    fn api_calls(&self, verb: &str, outcome: &str) -> u64 {
        let Some((200, Value::String(text))) = common::request(self.metrics, "GET", "/metrics", None) else {
            return 0;
        };
        let series = format!("verb=\"{verb}\",outcome=\"{outcome}\"");
        text.lines()
            .filter(|l| l.starts_with("podstatus_api_calls_total{") && l.contains(&series))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    }

    /// SIGTERM; the exit code and stderr.
    fn stop(self) -> (Option<i32>, String) {
        self.process.stop()
    }
}

/// The first line of `lines` that has `text` in it, within the tests' deadline.
fn line_with(lines: &Receiver<String>, text: &str) -> String {
    let deadline = std::time::Instant::now() + common::DEADLINE;
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(text) => return line,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    panic!("no line with {text:?} on the agent's stderr")
}

fn node_ready(cluster: &Cluster, node: &str) -> Option<Value> {
    let node = cluster.get(&["node", node])?;
    (condition(&node, "Ready")?["status"] == "True").then_some(node)
}

fn running_and_ready(cluster: &Cluster, namespace: &str, name: &str) -> Option<Value> {
    let pod = cluster.get(&["pod", "-n", namespace, name])?;
    (pod.pointer("/status/phase")? == "Running" && condition(&pod, "Ready")?["status"] == "True").then_some(pod)
}

/// A pod's whole life on `node` with `logic`: Running and Ready, then deleted by the
/// admin and removed by the agent.
fn a_pod_lives_and_is_removed(logic: &str, node: &str) {
    let cluster = cluster();
    let agent = RunningAgent::start(cluster, node, &["--logic", logic]);
    let registered = wait_until("the Node registered Ready", || node_ready(cluster, node));
    assert_eq!(registered.pointer("/metadata/name"), Some(&json!(node)));

    // The Lease: created by the node, renewed on schedule (every 6s/4 here).
    let renewed = |cluster: &Cluster| {
        cluster.get(&["lease", "-n", "kube-node-lease", node])?.pointer("/spec/renewTime")?.as_str().map(str::to_owned)
    };
    let first = wait_until("the node's Lease", || renewed(cluster));
    wait_until("the Lease renewed", || renewed(cluster).filter(|t| *t != first));

    let namespace = format!("e2e-{node}");
    cluster.admin(&["create", "namespace", &namespace]);
    let created = cluster.create(&pod(&namespace, "web", node));
    let uid = created.pointer("/metadata/uid").and_then(Value::as_str).expect("a UID").to_owned();
    let running = wait_until("the pod Running and Ready", || running_and_ready(cluster, &namespace, "web"));
    assert_eq!(running.pointer("/metadata/uid"), Some(&json!(uid)));
    assert!(running.pointer("/status/startTime").is_some(), "{running}");
    assert!(running.pointer("/status/containerStatuses/0/state/running").is_some(), "{running}");
    assert_eq!(running.pointer("/status/hostIP"), registered.pointer("/status/addresses/0/address"), "{running}");
    // Status writes leave the rest of the pod alone (a PUT of status without the
    // pod's metadata once wiped it).
    assert_eq!(running.pointer("/metadata/labels"), created.pointer("/metadata/labels"), "{running}");
    assert_eq!(running.pointer("/metadata/annotations"), created.pointer("/metadata/annotations"), "{running}");

    // A graceful delete: the agent stops the pod, writes its last status and deletes it
    // for good, with the UID as precondition.
    succeeded(&["delete"], cluster.kubectl(&["delete", "pod", "-n", &namespace, "web", "--wait=false"]));
    wait_until("the pod removed by the agent", || {
        cluster.get(&["pod", "-n", &namespace, "web"]).is_none().then_some(())
    });
    assert!(agent.api_calls("delete", "Success") >= 1, "the agent deleted it");
    assert_eq!(agent.api_calls("patch_status", "Forbidden") + agent.api_calls("update_status", "Forbidden"), 0);

    let (code, stderr) = agent.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    let node = cluster.get(&["node", node]).expect("the Node stays");
    assert_eq!(condition(&node, "Ready").expect("Ready")["status"], "False", "shut down: {node}");
}

#[test]
fn logic_v1_runs_a_pod_through_its_life_on_kube_apiserver() {
    assert_eq!(server_version(cluster()), crate::cluster::release().version);
    a_pod_lives_and_is_removed("v1", "v1");
}

/// `/version`'s gitVersion, as kubectl reads it.
fn server_version(cluster: &Cluster) -> String {
    let version: Value = serde_json::from_str(&cluster.admin(&["version", "-o", "json"])).expect("JSON");
    version.pointer("/serverVersion/gitVersion").and_then(Value::as_str).unwrap_or_default().to_owned()
}

#[test]
fn logic_v2_runs_a_pod_through_its_life_on_kube_apiserver() {
    a_pod_lives_and_is_removed("v2", "v2");
}

#[test]
fn logic_v3_runs_a_pod_through_its_life_on_kube_apiserver() {
    a_pod_lives_and_is_removed("v3", "v3");
}

#[test]
fn logic_v4_runs_a_pod_through_its_life_on_kube_apiserver() {
    a_pod_lives_and_is_removed("v4", "v4");
}

/// A static pod of the node's manifest folder: its mirror pod (owned by the Node, as
/// `NodeRestriction` wants) is created as the node and written Running, its
/// `kubernetes.io/config.mirror` annotation kept by every status write.
fn a_static_pod_has_its_mirror_running(logic: &str) {
    let cluster = cluster();
    let node = format!("static-{logic}");
    let manifests = cluster.dir().join(format!("manifests-{logic}"));
    std::fs::create_dir_all(&manifests).expect("the manifest folder");
    let manifest = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "etcd", "namespace": "kube-system"},
        "spec": {"containers": [{"name": "etcd", "image": "registry.k8s.io/etcd:3.6.5-0"}]}
    });
    std::fs::write(manifests.join("etcd.json"), manifest.to_string()).expect("the manifest");
    let manifests_flag = manifests.to_string_lossy().into_owned();
    let agent = RunningAgent::start(cluster, &node, &["--logic", logic, "--pod-manifest-path", &manifests_flag]);
    let mirror = format!("etcd-{node}");
    let running = wait_until("the mirror pod Running and Ready", || running_and_ready(cluster, "kube-system", &mirror));
    let owner = running.pointer("/metadata/ownerReferences/0").expect("an owner");
    assert_eq!((&owner["kind"], &owner["name"]), (&json!("Node"), &json!(node)), "{running}");
    assert!(running.pointer("/metadata/annotations/kubernetes.io~1config.mirror").is_some(), "{running}");
    let (code, stderr) = agent.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
}

#[test]
fn logic_v1_writes_a_mirror_pods_status_on_kube_apiserver() {
    a_static_pod_has_its_mirror_running("v1");
}

#[test]
fn logic_v4_writes_a_mirror_pods_status_on_kube_apiserver() {
    a_static_pod_has_its_mirror_running("v4");
}

/// v2 to v4 by SIGHUP with pods running: every pod keeps its status, and the pods the
/// swap found running are still removed when deleted.
#[test]
fn a_hot_swap_from_v2_to_v4_loses_nothing_on_kube_apiserver() {
    let cluster = cluster();
    let plugin = cluster.dir().join("swap-plugin.wasm");
    std::fs::write(&plugin, podstatus_plugins::PODSTATUS_V2).expect("the plugin file");
    let plugin_flag = plugin.to_string_lossy().into_owned();
    let agent = RunningAgent::start(cluster, "swap", &["--plugin", &plugin_flag]);
    wait_until("the Node registered Ready", || node_ready(cluster, "swap"));
    cluster.admin(&["create", "namespace", "e2e-swap"]);
    for name in ["before-1", "before-2", "before-3"] {
        cluster.create(&pod("e2e-swap", name, "swap"));
    }
    for name in ["before-1", "before-2", "before-3"] {
        wait_until("Running and Ready before the swap", || running_and_ready(cluster, "e2e-swap", name));
    }

    std::fs::write(&plugin, podstatus_plugins::PODSTATUS_V4).expect("the new plugin");
    agent.process.signal(libc::SIGHUP);
    let swapped = line_with(&agent.process.lines, "plugin swap");
    assert!(swapped.contains("plugin swapped") && swapped.contains("0.2.1"), "{swapped}");

    cluster.create(&pod("e2e-swap", "after", "swap"));
    wait_until("a pod after the swap Running and Ready", || running_and_ready(cluster, "e2e-swap", "after"));
    for name in ["before-1", "before-2", "before-3"] {
        let pod = running_and_ready(cluster, "e2e-swap", name).unwrap_or_else(|| panic!("{name} kept its status"));
        assert!(pod.pointer("/status/startTime").is_some(), "{pod}");
    }
    succeeded(&["delete"], cluster.kubectl(&["delete", "pod", "-n", "e2e-swap", "before-1", "after", "--wait=false"]));
    for name in ["before-1", "after"] {
        wait_until("removed after the swap", || cluster.get(&["pod", "-n", "e2e-swap", name]).is_none().then_some(()));
    }
    let (code, stderr) = agent.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
}

/// The newest release served starts too, and a node runs a pod on it (whatever
/// `PODSTATUS_KUBE_RELEASE` says, so both releases are held in every run).
#[test]
fn the_newest_release_runs_a_node_too() {
    let newest = *podstatus_upstream::RELEASES.last().expect("releases");
    let cluster = Cluster::start_release(newest, "newest", &["newest"], |_| {});
    assert_eq!(cluster.plane.ready().kubernetes, newest.version);
    assert_eq!(server_version(&cluster), newest.version, "the server says which release it is");
    let agent = cluster.agent("newest", &["--logic", "v4"]);
    wait_until("the Node registered Ready", || node_ready(&cluster, "newest"));
    cluster.admin(&["create", "namespace", "e2e"]);
    cluster.create(&pod("e2e", "web", "newest"));
    wait_until("Running and Ready", || running_and_ready(&cluster, "e2e", "web"));
    let (code, stderr) = agent.stop();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
}

/// A node's credential used for another node: `NodeRestriction` refuses the Node for
/// good (403), and the agent stops at once with the server's words, exit 1, instead of
/// registering again and again.
#[test]
fn an_agent_the_api_server_refuses_for_good_stops_with_its_message() {
    let cluster = cluster();
    let kubeconfig = cluster.node_kubeconfig("v1");
    let mut process = Process::spawn(&["agent", "--kubeconfig", &kubeconfig, "--node-name", "intruder"]);
    let (code, stderr) = process.wait();
    assert_eq!(code, Some(1), "stderr:\n{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("the API server refused to register node intruder (403 Forbidden)"), "{stderr}");
    assert!(last.contains("node \"v1\" is not allowed"), "the server's own words: {stderr}");
}
