//! The node agent: the status-manager plugin wired to a real API server, as a node runs
//! it.
//!
//! [`node`] puts one node together ([`NodeAgent`]): the node's pods come from a
//! list+watch of the API server and from static pod manifests (with their mirror pods);
//! the plugin runs supervised and metered behind the reach guard; the node keeps its
//! Node object and Lease as the kubelet keeps them; `podstatus agent`'s pod runner runs
//! the pods someone else gives the node. Its API calls go through [`client`] (kube-rs:
//! rate limit, call timeouts, circuit breaker), against a cluster or any API server at a
//! URL ([`Target`]); [`metrics`] meters the plugin, the API calls and the node's side,
//! and serves Prometheus metrics.
//!
//! [`fleet`] runs N such nodes in one process (`podstatus fleet`, `simulate --nodes`),
//! sharing one engine, one connection and one pod watch ([`Fleet`]); [`rollout`] moves a
//! canary share of them to another plugin by hot swap and promotes or rolls it back, by
//! command (the fleet's HTTP control endpoint) or by itself ([`Rollout`]). [`shard`]
//! spreads a fleet over processes (a StatefulSet's pods), each running its share of
//! the nodes, a node's Lease the proof of which shard runs it.
//!
//! The root holds only what most users name; the rest is in its module, as
//! kube-runtime keeps `watcher` and `reflector`. The simulator (`podstatus simulate`),
//! the embedded API server as a target, added API latency and injected faults are not
//! here: they are `podstatus-simulate`'s, which runs this agent
//! ([`NodeAgent::start_with_layer`] takes its faults).

pub mod client;
mod duration_text;
pub mod fleet;
mod listen;
pub mod metrics;
pub mod node;
pub mod rollout;
pub mod shard;

pub use client::Target;
pub use duration_text::{format_duration, format_seconds};
pub use fleet::Fleet;
pub use node::{AgentConfig, AgentError, NodeAgent};
pub use podstatus_rollout_api::{GoDurationError, parse_go_duration};
pub use rollout::Rollout;
