//! `podstatus agent`'s virtual node as a library, against the embedded API server over
//! HTTP: the agent registers its Node and renews its Lease on schedule (a short one
//! here), runs a pod another client creates through Running and Ready, and has it
//! deleted by the status manager after a graceful delete; `kubectl get nodes` shows
//! the node Ready; a Node deleted under it is registered again. (SIGTERM's shutdown runs the real binary: `host/cli/tests/agent.rs`.)
//!
//! Every wait is bounded and generous, and nothing asserts how long anything took.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use podstatus_agent::AgentConfig;
use podstatus_agent::client::KubeClientConfig;
use podstatus_agent::node::{NODE_LEASE_NAMESPACE, NodeConfig, PodRunner, VIRTUAL_NODE_TAINT};
use podstatus_backends::DEFAULT_CAPACITY;
use podstatus_backends::testing;
use podstatus_plugins::PODSTATUS_V2;
use podstatus_runtime::{PluginRuntime, RuntimeConfig};
use podstatus_simulate::{ApiServerTarget, SimulatedNode, SimulatedTarget};
use podstatus_tests::cache_dir;
use serde_json::json;

const NODE: &str = "virtual-1";
/// Generous: a loaded CI machine may be slow, and nothing waits this long when it works.
const DEADLINE: Duration = Duration::from_secs(90);

fn wait_until<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    testing::wait_for(what, DEADLINE, Duration::from_millis(50), probe)
}

/// Another client of the agent's API server (the pod's owner, the test's eyes).
struct Client {
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
}

impl Client {
    fn new(url: &str) -> Self {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        let client = {
            let _entered = runtime.enter();
            kube::Client::try_from(kube::Config::new(url.parse().expect("url"))).expect("client")
        };
        Client { runtime, client }
    }

    fn node(&self) -> Option<Node> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        self.runtime.block_on(nodes.get_opt(NODE)).expect("GET node")
    }

    fn lease(&self) -> Option<Lease> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), NODE_LEASE_NAMESPACE);
        self.runtime.block_on(leases.get_opt(NODE)).expect("GET lease")
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), "default")
    }
}

fn condition(node: &Node, kind: &str) -> Option<(String, String)> {
    let conditions = node.status.as_ref()?.conditions.as_ref()?;
    let found = conditions.iter().find(|c| c.type_ == kind)?;
    Some((found.status.clone(), found.reason.clone().unwrap_or_default()))
}

#[test]
fn the_agent_registers_its_node_renews_its_lease_and_runs_a_pod_to_ready_then_deletes_it() {
    let node = NodeConfig {
        lease_duration: Duration::from_secs(2),
        status_update_frequency: Duration::from_secs(1),
        ..NodeConfig::new(NODE)
    };
    let config = AgentConfig {
        node: NODE.into(),
        target: SimulatedTarget::from(ApiServerTarget::Embedded("127.0.0.1:0".parse().expect("addr"))),
        client: KubeClientConfig::default(),
        manifest_dir: None,
        metrics_addr: None,
        sync_period: Duration::from_secs(2),
        batch_phase: 0.0,
        queue_capacity: DEFAULT_CAPACITY,
        register_node: Some(node),
    };
    let plugins = PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() })
        .expect("runtime");
    let image = plugins.load(PODSTATUS_V2).expect("v2 loads");
    let simulated = SimulatedNode::start(&config, plugins, image).expect("the agent starts");
    let agent = simulated.agent();
    let _runner = PodRunner::start(agent.node_side(), Arc::clone(agent.pod_manager()), "10.0.0.10".into());
    let other = Client::new(agent.api_url());

    // The Node: the kubelet's labels, the virtual taint, Ready.
    let registered = wait_until("the node is registered", || other.node());
    let labels = registered.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("kubernetes.io/hostname").map(String::as_str), Some(NODE));
    assert_eq!(labels.get("kubernetes.io/os").map(String::as_str), Some("linux"));
    let taints = registered.spec.clone().and_then(|spec| spec.taints).unwrap_or_default();
    assert!(taints.iter().any(|t| t.key == VIRTUAL_NODE_TAINT && t.effect == "NoSchedule"), "{taints:?}");
    assert_eq!(condition(&registered, "Ready"), Some(("True".into(), "KubeletReady".into())));

    // The Lease: held by the node, owned by it, renewed every half second here.
    let mut renewals = BTreeSet::new();
    let lease = wait_until("the lease is renewed twice after its creation", || {
        let lease = other.lease()?;
        renewals.insert(lease.spec.as_ref()?.renew_time.as_ref()?.0);
        (renewals.len() >= 3).then_some(lease)
    });
    let spec = lease.spec.expect("a spec");
    assert_eq!((spec.holder_identity.as_deref(), spec.lease_duration_seconds), (Some(NODE), Some(2)));
    let owner =
        wait_until("the lease is owned by the node", || other.lease()?.metadata.owner_references?.into_iter().next());
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Node", NODE));
    assert_eq!(Some(owner.uid), registered.metadata.uid);

    // A Node deleted under the agent is registered again (a new object, a new UID).
    let nodes: Api<Node> = Api::all(other.client.clone());
    other.runtime.block_on(nodes.delete(NODE, &DeleteParams::default())).expect("delete the node");
    let again = wait_until("the node is registered again", || other.node());
    assert_ne!(again.metadata.uid, registered.metadata.uid);

    // kubectl sees it Ready.
    let out = kubectl(agent.api_url(), &["get", "nodes"]);
    let row: Vec<&str> =
        out.lines().find(|line| line.starts_with(NODE)).unwrap_or_default().split_whitespace().collect();
    // No role: a node may not give itself one (NodeRestriction).
    assert_eq!(row.get(1..3), Some(&["Ready", "<none>"][..]), "{out}");
    assert!(out.contains("v1.35.0-podstatus"), "{out}");
    let leases = kubectl(agent.api_url(), &["get", "leases", "-n", NODE_LEASE_NAMESPACE]);
    let row: Vec<&str> =
        leases.lines().find(|line| line.starts_with(NODE)).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row.get(1), Some(&NODE), "the holder:\n{leases}");

    // A pod someone else creates, bound to the node: Running and Ready.
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": NODE, "containers": [{"name": "app", "image": "nginx:1.27"}],
                 "initContainers": [{"name": "setup", "image": "busybox:1"}],
                 "tolerations": [{"key": VIRTUAL_NODE_TAINT, "operator": "Exists", "effect": "NoSchedule"}]}
    }))
    .expect("a pod");
    other.runtime.block_on(other.pods().create(&PostParams::default(), &pod)).expect("created");
    let ready = |pod: &Pod| {
        let status = pod.status.as_ref()?;
        let ready = status.conditions.as_ref()?.iter().any(|c| c.type_ == "Ready" && c.status == "True");
        (status.phase.as_deref() == Some("Running") && ready).then_some(())
    };
    wait_until("the pod is Running and Ready in the API server", || {
        ready(&other.runtime.block_on(other.pods().get("web")).ok()?)
    });
    let running = other.runtime.block_on(other.pods().get("web")).expect("GET pod");
    let status = running.status.expect("a status");
    assert_eq!(status.host_ip.as_deref(), Some("10.0.0.10"));
    assert_eq!(status.init_container_statuses.map(|s| s[0].name.clone()).as_deref(), Some("setup"));

    // A graceful delete: the node stops the containers, the status manager deletes it.
    other.runtime.block_on(other.pods().delete("web", &DeleteParams::default())).expect("delete");
    wait_until("the status manager deletes the pod", || {
        other.runtime.block_on(other.pods().get_opt("web")).expect("GET pod").is_none().then_some(())
    });
    drop(_runner);
    assert_eq!(simulated.shutdown(Duration::from_secs(30)), 0, "nothing left unwritten");
}

/// A Node the API server refuses for good (422: a name that is no DNS-1123 subdomain,
/// which the command line refuses before this) is not registered again and again: the
/// registration stops and keeps the server's answer, for the agent to stop on.
#[test]
fn a_node_the_api_server_refuses_for_good_is_kept_as_a_refusal() {
    let name = "Bad_Name";
    let config = AgentConfig {
        node: name.into(),
        target: SimulatedTarget::from(ApiServerTarget::Embedded("127.0.0.1:0".parse().expect("addr"))),
        client: KubeClientConfig::default(),
        manifest_dir: None,
        metrics_addr: None,
        sync_period: Duration::from_secs(2),
        batch_phase: 0.0,
        queue_capacity: DEFAULT_CAPACITY,
        register_node: Some(NodeConfig::new(name)),
    };
    let plugins = PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() })
        .expect("runtime");
    let image = plugins.load(PODSTATUS_V2).expect("v2 loads");
    let simulated = SimulatedNode::start(&config, plugins, image).expect("the agent starts");
    let registration = simulated.agent().registration().expect("a registration");
    let refusal = wait_until("the registration is refused", || registration.refusal());
    assert_eq!((refusal.code, refusal.reason.as_str()), (422, "Invalid"), "{refusal}");
    assert!(refusal.message.contains("RFC 1123 subdomain"), "{refusal}");
    assert!(refusal.to_string().starts_with("the API server refused to register node Bad_Name (422 Invalid): "));
}

/// kubectl on the PATH (failing, never skipping, without one), isolated from any user
/// configuration.
fn kubectl(url: &str, args: &[&str]) -> String {
    let kubectl = podstatus_tests::kubectl();
    let home = std::env::temp_dir().join(format!("podstatus-agent-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("scratch HOME");
    let output = Command::new(kubectl)
        .args(["--server", url, "--request-timeout=20s"])
        .args(args)
        .env("KUBECONFIG", "/dev/null")
        .env("HOME", &home)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .stdin(Stdio::null())
        .output()
        .expect("kubectl runs");
    let _ = std::fs::remove_dir_all(&home);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "kubectl {args:?} failed ({}):\n{stdout}\n{stderr}", output.status);
    stdout.into_owned()
}
