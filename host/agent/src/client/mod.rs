//! The agent's way to its API server: where the server is ([`Target`], found as every
//! Kubernetes tool finds it: [`connect`]), the [`Connection`] the nodes of a process
//! share, and [`KubeApiServer`], the plugin's API calls on kube-rs, each node's own
//! behind its [`RateLimiter`] and [`CircuitBreaker`] as a kubelet's are, counted by verb
//! and outcome ([`CallCounters`]).

mod call_counts;
mod circuit_breaker;
mod connection;
mod error_line;
mod kube_client;
mod kubeconfig;
mod rate_limit;

pub use call_counts::{CallCount, CallCounters, Outcome, Verb};
pub use circuit_breaker::CircuitBreaker;
pub use connection::{Connection, ConnectionError, Target};
pub use error_line::{MAX_ERROR_LINE, error_line};
pub use kube_client::{
    FIELD_MANAGER, KubeApiServer, KubeClientConfig, KubeClientError, STATUS_CLIENT_PRODUCT, STATUS_CLIENT_USER_AGENT,
    status_client_config,
};
pub use kubeconfig::{ClientSource, ConnectError, connect};
pub use rate_limit::{RateLimitError, RateLimiter};
