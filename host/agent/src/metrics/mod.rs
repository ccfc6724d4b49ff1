//! The node agent's metrics, in the OpenMetrics text format on `--metrics-addr`,
//! written by prometheus-client (the Prometheus project's own Rust client, whose only
//! dependencies are a lock and two number formatters).
//!
//! Names follow upstream where upstream has the metric
//! (`kubelet_pod_status_sync_duration_seconds`, with its help text and buckets from
//! `pkg/kubelet/metrics/metrics.go`; client-go's `rest_client_*`; the `process_*` every
//! client exports); the others are `podstatus_*`. They are collected without touching
//! the plugin: [`MeteredPlugin`] times plugin calls and notes status changes,
//! [`MeteredApiServer`] counts API calls and closes the propagation clock,
//! [`TimedManager`] times the node's side's calls into the status manager,
//! [`rest_client::metered_client`] times every HTTP request, and the queue depth and
//! process figures are read at scrape time.

pub mod caller_latency;
pub mod latency;
mod metered_api_server;
mod metered_plugin;
pub mod process;
pub mod propagation;
mod registry;
pub mod rest_client;
mod rest_client_families;
mod scope;
mod series;
pub mod server;
mod timed_manager;

pub use caller_latency::{CallerLatency, CallerLatencySummary};
pub use latency::{LatencyHistogram, LatencySummary};
pub use metered_api_server::{MeteredApiServer, VERB_DELETE, VERB_GET, VERB_PATCH_STATUS, VERB_UPDATE_STATUS};
pub use metered_plugin::MeteredPlugin;
pub use propagation::PropagationTracker;
pub use registry::*;
pub use rest_client::{RestClientLayer, RestClientService, metered_client};
pub use scope::MetricsScope;
pub use series::{GroupSnapshot, GroupTally, SeriesLabels};
pub use server::{MetricsServer, ServeError};
pub use timed_manager::TimedManager;
