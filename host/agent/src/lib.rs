//! The node agent: the status-manager plugin wired to a real API server, as a node runs
//! it.
//!
//! [`NodeAgent`] puts it together: the node's pods come from a list+watch of the API
//! server ([`PodWatch`]) and from static pod manifests ([`StaticPods`], with their
//! mirror pods); the plugin runs supervised and metered behind the reach guard; its API
//! server client is kube-rs ([`KubeApiServer`]: rate limit, call timeouts, circuit
//! breaker), against a cluster or any API server at a URL; [`metrics`] serves
//! Prometheus metrics. [`NodeRegistration`] keeps the node's Node object and Lease as
//! the kubelet keeps them. [`PodRunner`] runs the pods someone else gives the node
//! through the lives of [`PodLife`] (`podstatus agent`), reporting them as the kubelet's
//! pod workers do ([`report`]).
//!
//! [`Fleet`] runs N such nodes in one process (`podstatus fleet`, `simulate --nodes`),
//! sharing one engine, one connection and one pod watch, their metrics labelled by
//! group and logic ([`metrics::MetricsScope`]); [`Rollout`] moves a canary share of
//! them to another plugin by hot swap and promotes or rolls it back, by command
//! ([`ControlServer`], the fleet's HTTP control endpoint) or by itself ([`judge`]).
//!
//! The simulator (`podstatus simulate`), the embedded API server as a target, added API
//! latency and injected faults are not here: they are `podstatus-simulate`'s, which
//! runs this agent ([`NodeAgent::start_with_layer`] takes its faults).

mod call_counts;
mod canary_verdict;
mod circuit_breaker;
mod connection;
mod control_server;
mod fleet;
mod fleet_control;
mod go_duration;
mod heartbeat;
mod kube_client;
mod kubeconfig;
mod lifecycle;
mod listen;
mod metered_api_server;
mod metered_plugin;
pub mod metrics;
mod node;
mod node_lease;
mod node_object;
mod node_registration;
mod pod_runner;
mod pod_watch;
mod rate_limit;
mod rollout;
mod static_pods;
mod timed_manager;

pub use call_counts::{CallCount, CallCounters, Outcome, Verb};
pub use canary_verdict::{Criterion, Figures, RolloutPolicy, Verdict, judge};
pub use circuit_breaker::CircuitBreaker;
pub use connection::{Connection, ConnectionError, Target};
pub use control_server::{
    ControlAnswer, ControlCommand, ControlError, ControlLimits, ControlRequest, ControlServeError, ControlServer,
    StartCanary, parse_share,
};
pub use fleet::{
    CALL_THREADS, CANARY_GROUP, Fleet, FleetError, FleetGroup, FleetSpec, StartProgress, SwapOutcome, canary_nodes,
};
pub use fleet_control::{PluginCatalog, serve_commands};
pub use go_duration::{GoDurationError, parse as parse_go_duration};
pub use kube_client::{
    FIELD_MANAGER, KubeApiServer, KubeClientConfig, KubeClientError, STATUS_CLIENT_PRODUCT, STATUS_CLIENT_USER_AGENT,
    status_client_config,
};
pub use kubeconfig::{ClientSource, ConnectError, connect};
pub use lifecycle::{
    DEFAULT_HOST_IP, Event as LifeEvent, Kind as PodKind, NAMESPACE as SIMULATED_NAMESPACE, PodLife, Stage as LifeStage,
};
pub use metered_api_server::{MeteredApiServer, VERB_DELETE, VERB_GET, VERB_PATCH_STATUS, VERB_UPDATE_STATUS};
pub use metered_plugin::MeteredPlugin;
pub use node::{AgentConfig, AgentError, NodeAgent};
pub use node_lease::NODE_LEASE_NAMESPACE;
pub use node_object::{KUBELET_VERSION, NodeConfig, Readiness, VIRTUAL_NODE_TAINT};
pub use node_registration::{NodeError, NodeRegistration};
pub use pod_runner::{
    EXIT_CODE_ANNOTATION, PodRunner, RUN_FOR_ANNOTATION, report, report_pod_status_json, report_status_json,
};
pub use pod_watch::{PodRoutes, PodWatch};
pub use rate_limit::{RateLimitError, RateLimiter};
pub use rollout::{
    CanaryPlan, CanaryStatus, DecidedBy, Decision, GroupStatus, Outcome as RolloutOutcome, Rollout, RolloutError,
    RolloutStatus,
};
pub use static_pods::{
    CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION, FILE_SOURCE, ManifestError, MirrorError, POLL_INTERVAL, ScanReport,
    StaticPods, StaticPodsError,
};
pub use timed_manager::TimedManager;
