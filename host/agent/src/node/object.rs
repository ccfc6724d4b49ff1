//! The Node object a virtual node registers, and its status as the kubelet's node
//! status setters (`pkg/kubelet/nodestatus/setters.go`) would report it: the
//! kubelet's default labels, capacity and allocatable, addresses, `nodeInfo`, and the
//! Ready, MemoryPressure, DiskPressure and PIDPressure conditions, whose transition
//! times hold while their status holds and whose heartbeat times are the report's.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec, NodeStatus, NodeSystemInfo, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

/// The taint every podstatus node carries, so that only pods that tolerate it land
/// there (KWOK taints its fake nodes the same way, with its own key). A key of our own
/// rather than KWOK's `kwok.x-k8s.io/node`: in a cluster that runs both, a workload
/// meant for KWOK's nodes should not land on nodes whose statuses go through a plugin
/// under test, nor the other way round.
pub const VIRTUAL_NODE_TAINT: &str = "node.podstatus.io/virtual";
/// The kubelet version a podstatus node reports: the API it speaks (k8s-openapi's
/// `v1_35`), marked as ours.
pub const KUBELET_VERSION: &str = "v1.35.0-podstatus";

/// What a virtual node says of itself.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// The node's name (`--node-name`; in a pod, the pod's name).
    pub name: String,
    /// Its InternalIP address, also its pods' `hostIP`.
    pub internal_ip: String,
    /// CPU capacity (a quantity: `"8"`, `"500m"`).
    pub cpu: String,
    /// Memory capacity (a quantity: `"32Gi"`).
    pub memory: String,
    /// Pods it takes at most (the kubelet's `--max-pods`, 110 by default).
    pub max_pods: u32,
    /// How long its Lease holds (the kubelet's `nodeLeaseDurationSeconds`, 40 s); it is
    /// renewed every quarter of it, as the kubelet does.
    pub lease_duration: Duration,
    /// How often the status is computed and written if it changed (the kubelet's
    /// `nodeStatusUpdateFrequency`, 10 s).
    pub status_update_frequency: Duration,
    /// How often the status is written even if nothing changed (the kubelet's
    /// `nodeStatusReportFrequency`, 5 min): the Lease is the heartbeat in between.
    pub status_report_frequency: Duration,
    /// Where in each interval the node's Lease renewals and status checks fall, as a
    /// fraction of the interval (0 up to but excluding 1): a fleet spreads its nodes'
    /// phases so that they do not all renew at once (the `heartbeat` module).
    pub heartbeat_phase: f64,
    /// Who holds the node's Lease: the node itself (`None`, as the kubelet), or a fleet
    /// shard's identity. A node with a holder of its own never renews a Lease another
    /// holder took: it stops renewing and says so ([`crate::node::NodeRegistration::lease_lost`]),
    /// so that two shards never run one node.
    pub lease_holder: Option<String>,
    /// Labels beyond the kubelet's (a fleet's `podstatus.io/fleet` and
    /// `podstatus.io/shard`, as KWOK users select the nodes each of its instances
    /// manages).
    pub extra_labels: BTreeMap<String, String>,
}

impl NodeConfig {
    /// A node named `name` with the kubelet's defaults and the capacity of a modest
    /// machine (8 CPUs, 32 GiB).
    pub fn new(name: &str) -> Self {
        NodeConfig {
            name: name.to_owned(),
            internal_ip: super::lifecycle::DEFAULT_HOST_IP.to_owned(),
            cpu: "8".into(),
            memory: "32Gi".into(),
            max_pods: 110,
            lease_duration: Duration::from_secs(40),
            status_update_frequency: Duration::from_secs(10),
            status_report_frequency: Duration::from_secs(300),
            heartbeat_phase: 0.0,
            lease_holder: None,
            extra_labels: BTreeMap::new(),
        }
    }

    /// The Lease's renew interval: a quarter of its duration (the kubelet's
    /// `renewInterval` is `leaseDuration * 0.25`, 10 s by default).
    pub fn lease_renew_interval(&self) -> Duration {
        self.lease_duration / 4
    }
}

/// Go's name of the machine's architecture, as `kubernetes.io/arch` carries it.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// The labels the node registers with: the kubelet's defaults (`kubernetes.io/hostname`,
/// `kubernetes.io/os`, `kubernetes.io/arch` and their `beta.` forms), an instance type,
/// and `type: podstatus` as KWOK labels its nodes `type: kwok`. No role: the
/// `NodeRestriction` admission plugin refuses a node that sets its own
/// `node-role.kubernetes.io/*` or `kubernetes.io/role` label (seen against a real
/// kube-apiserver: the Node was never registered); a role is the admin's to give.
pub fn labels(config: &NodeConfig) -> BTreeMap<String, String> {
    [
        ("kubernetes.io/hostname", config.name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", go_arch()),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", go_arch()),
        ("node.kubernetes.io/instance-type", "podstatus"),
        ("type", "podstatus"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value.to_owned()))
    .chain(config.extra_labels.clone())
    .collect()
}

/// The node's taint: [`VIRTUAL_NODE_TAINT`]`=true:NoSchedule`.
pub fn taint() -> Taint {
    Taint { key: VIRTUAL_NODE_TAINT.into(), value: Some("true".into()), effect: "NoSchedule".into(), time_added: None }
}

/// Why the node is not ready, when it is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Ready: `KubeletReady`, "kubelet is posting ready status".
    Ready,
    /// Shutting down: Ready False, `KubeletNotReady`, "node is shutting down", as the
    /// kubelet's graceful node shutdown manager reports through the Ready setter.
    ShuttingDown,
}

/// The Node to register (status included, as the kubelet's initial node).
pub fn node(config: &NodeConfig, now: jiff::Timestamp) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(config.name.clone()),
            labels: Some(labels(config)),
            // The kubelet's own annotation, so controllers know its volumes are its own.
            annotations: Some(
                [("volumes.kubernetes.io/controller-managed-attach-detach".into(), "true".into())].into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec { taints: Some(vec![taint()]), ..NodeSpec::default() }),
        status: Some(status(config, None, Readiness::Ready, now)),
    }
}

/// The status to report now: `previous` (the API server's) gives the conditions'
/// transition times, kept while a condition's status holds.
pub fn status(
    config: &NodeConfig,
    previous: Option<&NodeStatus>,
    readiness: Readiness,
    now: jiff::Timestamp,
) -> NodeStatus {
    let quantity = |text: &str| Quantity(text.to_owned());
    let resources: BTreeMap<String, Quantity> = [
        ("cpu".to_owned(), quantity(&config.cpu)),
        ("memory".to_owned(), quantity(&config.memory)),
        ("pods".to_owned(), quantity(&config.max_pods.to_string())),
        ("ephemeral-storage".to_owned(), quantity("100Gi")),
    ]
    .into();
    let previous_conditions = previous.and_then(|status| status.conditions.as_deref()).unwrap_or_default();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        let transition = previous_conditions
            .iter()
            .find(|c| c.type_ == kind && c.status == status)
            .and_then(|c| c.last_transition_time.clone())
            .unwrap_or(Time(now));
        NodeCondition {
            type_: kind.into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_heartbeat_time: Some(Time(now)),
            last_transition_time: Some(transition),
        }
    };
    let ready = match readiness {
        Readiness::Ready => condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        Readiness::ShuttingDown => condition("Ready", "False", "KubeletNotReady", "node is shutting down"),
    };
    NodeStatus {
        capacity: Some(resources.clone()),
        allocatable: Some(resources),
        conditions: Some(vec![
            condition(
                "MemoryPressure",
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ready,
        ]),
        addresses: Some(vec![
            NodeAddress { type_: "InternalIP".into(), address: config.internal_ip.clone() },
            NodeAddress { type_: "Hostname".into(), address: config.name.clone() },
        ]),
        daemon_endpoints: Some(NodeDaemonEndpoints { kubelet_endpoint: Some(DaemonEndpoint { port: 10250 }) }),
        node_info: Some(NodeSystemInfo {
            architecture: go_arch().into(),
            boot_id: String::new(),
            container_runtime_version: "podstatus://simulated".into(),
            kernel_version: String::new(),
            kube_proxy_version: String::new(),
            kubelet_version: KUBELET_VERSION.into(),
            machine_id: String::new(),
            operating_system: "linux".into(),
            os_image: "podstatus virtual node".into(),
            system_uuid: String::new(),
            ..NodeSystemInfo::default()
        }),
        ..previous.cloned().unwrap_or_default()
    }
}

/// Whether two statuses differ in anything but heartbeat times: what decides, between
/// two periodic reports, whether a status is written at all (the kubelet's
/// `nodeStatusHasChanged`).
pub fn changed(old: Option<&NodeStatus>, new: &NodeStatus) -> bool {
    let strip = |status: &NodeStatus| {
        let mut status = status.clone();
        for condition in status.conditions.iter_mut().flatten() {
            condition.last_heartbeat_time = None;
        }
        serde_json::to_value(status).unwrap_or_default()
    };
    old.is_none_or(|old| strip(old) != strip(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().expect("a time")
    }

    #[test]
    fn transition_times_hold_while_a_condition_holds_and_heartbeats_do_not_count_as_changes() {
        let config = NodeConfig::new("n1");
        let first = status(&config, None, Readiness::Ready, at("2026-01-01T00:00:00Z"));
        let later = status(&config, Some(&first), Readiness::Ready, at("2026-01-01T00:00:10Z"));
        let ready =
            |s: &NodeStatus| s.conditions.as_ref().unwrap().iter().find(|c| c.type_ == "Ready").cloned().unwrap();
        assert_eq!(ready(&later).last_transition_time, ready(&first).last_transition_time);
        assert_ne!(ready(&later).last_heartbeat_time, ready(&first).last_heartbeat_time);
        assert!(!changed(Some(&first), &later), "only heartbeats moved");

        let down = status(&config, Some(&later), Readiness::ShuttingDown, at("2026-01-01T00:00:20Z"));
        assert_eq!(ready(&down).status, "False");
        assert_eq!(ready(&down).reason.as_deref(), Some("KubeletNotReady"));
        assert_eq!(ready(&down).message.as_deref(), Some("node is shutting down"));
        assert_eq!(ready(&down).last_transition_time, Some(Time(at("2026-01-01T00:00:20Z"))));
        assert!(changed(Some(&later), &down));
    }

    #[test]
    fn the_node_carries_the_kubelets_labels_and_the_virtual_taint() {
        let node = node(&NodeConfig::new("n1"), at("2026-01-01T00:00:00Z"));
        let labels = node.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "n1");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        // Every label is one NodeRestriction lets a node set on itself: none of
        // `kubernetes.io` or `k8s.io` beyond the kubelet's own and `node.kubernetes.io/`.
        let allowed = [
            "kubernetes.io/hostname",
            "kubernetes.io/os",
            "kubernetes.io/arch",
            "beta.kubernetes.io/os",
            "beta.kubernetes.io/arch",
        ];
        for key in labels.keys() {
            let restricted = key
                .split_once('/')
                .is_some_and(|(prefix, _)| prefix.ends_with("kubernetes.io") || prefix.ends_with("k8s.io"))
                && !key.starts_with("node.kubernetes.io/");
            assert!(!restricted || allowed.contains(&key.as_str()), "{key}");
        }
        let taints = node.spec.unwrap().taints.unwrap();
        assert_eq!((taints[0].key.as_str(), taints[0].effect.as_str()), (VIRTUAL_NODE_TAINT, "NoSchedule"));
        assert_eq!(node.status.unwrap().capacity.unwrap()["pods"].0, "110");
        assert_eq!(NodeConfig::new("n1").lease_renew_interval(), Duration::from_secs(10));
    }
}
