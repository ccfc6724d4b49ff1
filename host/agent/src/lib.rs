//! The node agent: the status-manager plugin wired to a real API server, as a node runs
//! it.
//!
//! [`NodeAgent`] puts it together: the node's pods come from a list+watch of the API
//! server ([`PodWatch`]) and from static pod manifests ([`StaticPods`], with their
//! mirror pods); the plugin runs supervised and metered behind the reach guard; its API
//! server client is kube-rs ([`KubeApiServer`]: rate limit, call timeouts, circuit
//! breaker), against a cluster or the embedded API server; [`metrics`] serves
//! Prometheus metrics. [`simulate`] plays realistic pod lives through an agent (the
//! `podstatus simulate` command).

mod call_counts;
mod circuit_breaker;
mod kube_client;
mod kubeconfig;
mod metered_api_server;
mod metered_plugin;
pub mod metrics;
mod node;
mod pod_watch;
mod rate_limit;
pub mod simulate;
mod static_pods;

pub use call_counts::{CallCount, CallCounters, Outcome, Verb};
pub use circuit_breaker::CircuitBreaker;
pub use kube_client::{FIELD_MANAGER, KubeApiServer, KubeClientConfig, KubeClientError};
pub use kubeconfig::{ClientSource, ConnectError, connect};
pub use metered_api_server::{MeteredApiServer, VERB_DELETE, VERB_GET, VERB_PATCH_STATUS, VERB_UPDATE_STATUS};
pub use metered_plugin::MeteredPlugin;
pub use node::{AgentConfig, AgentError, NodeAgent, Target};
pub use pod_watch::PodWatch;
pub use rate_limit::{RateLimitError, RateLimiter};
pub use static_pods::{
    CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION, FILE_SOURCE, ManifestError, MirrorError, POLL_INTERVAL, ScanReport,
    StaticPods, StaticPodsError,
};
