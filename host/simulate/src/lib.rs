//! The simulated node behind `podstatus simulate`, and the node agent as a simulated
//! node runs it.
//!
//! [`run`] starts a node agent ([`SimulatedNode`]) and drives realistic pod lives
//! through it (the agent's [`PodLife`](podstatus_agent::node::PodLife), churned by a
//! seeded generator; the pods' owners act through the API server with a kube-rs client
//! of their own, [`KubeOwners`]); at the end, after a quiet sync, [`check()`] compares
//! every pod's status in the API server with what the plugin accepted, and the
//! [`Summary`] says what happened.
//!
//! The agent is configured by its own [`AgentConfig`](podstatus_agent::AgentConfig),
//! against a [`SimulatedTarget`]: what only a simulated node needs, the embedded API
//! server as a target ([`ApiServerTarget::Embedded`], also `podstatus agent`'s default),
//! an API latency that server adds ([`SimulatedTarget::api_latency`]) and faults
//! injected into the plugin's API calls ([`SimulatedTarget::injected_faults`]); a
//! [`SimulatedNode`] is the agent with the embedded server it started.

mod check;
mod config;
mod driver;
mod driver_pool;
mod ending;
mod fleet;
mod fleet_check;
mod fleet_tally;
mod kubelet_1_35;
mod memory_account;
mod observed;
mod owners;
mod rollout;
mod simulated_node;
mod simulation;
mod static_manifests;
mod summary;
mod swaps;

pub use check::{ReadPod, check};
pub use config::{CanaryShare, NodeGroup, PlannedSwap, Progress, Signals, SimulateConfig, SimulateError};
pub use fleet::run_fleet;
pub use fleet_check::{CheckedNode, FleetCheck, check_fleet};
pub use kubelet_1_35::NewPaths;
pub use memory_account::{MemoryAccount, Parts};
pub use owners::{KubeOwners, OWNER_CALL_TIMEOUT, OwnerError, Owners};
pub use rollout::CanaryConfig;
pub use simulated_node::{ApiServerTarget, START_WAIT, SimulatedNode, SimulatedNodeError, SimulatedTarget};
pub use simulation::{run, run_with_progress};
pub use summary::{
    CallerLatency, Check, Difference, Ended, FleetFigures, GroupFigures, Latency, RolloutSummary, Summary, SwapSummary,
};
pub use swaps::file_logic;
