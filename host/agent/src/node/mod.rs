//! One node, as a kubelet runs it: the [`NodeAgent`] (the plugin behind the handle and
//! its scheduler, writing through the node's client), the node's pods from the API
//! server ([`PodWatch`]) and from manifests ([`StaticPods`], with their mirror pods),
//! its Node object and Lease ([`NodeRegistration`]), and `podstatus agent`'s container
//! runtime ([`PodRunner`]), which runs the pods it is given through the lives of
//! [`PodLife`] and reports them as the kubelet's pod workers do ([`report`]).

mod agent;
mod heartbeat;
mod lease;
mod lifecycle;
mod object;
mod pod_runner;
mod pod_watch;
mod registration;
mod static_pods;

pub use agent::{AgentConfig, AgentError, Flushed, NodeAgent};
pub use lease::NODE_LEASE_NAMESPACE;
pub use lifecycle::{
    DEFAULT_HOST_IP, Event as LifeEvent, Kind as PodKind, NAMESPACE as SIMULATED_NAMESPACE, PodLife, Stage as LifeStage,
};
pub use object::{KUBELET_VERSION, NodeConfig, Readiness, VIRTUAL_NODE_TAINT};
pub use pod_runner::{
    EXIT_CODE_ANNOTATION, PodRunner, RUN_FOR_ANNOTATION, report, report_pod_status_json, report_status_json,
};
pub use pod_watch::{PodRoutes, PodWatch, WatchScope};
pub use registration::{NodeError, NodeRegistration, Refusal, is_permanent};
pub use static_pods::{
    CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION, FILE_SOURCE, ManifestError, MirrorError, POLL_INTERVAL, ScanReport,
    StaticPods, StaticPodsError,
};
