//! What every Kubernetes release's status manager since 1.27 does alike, written once
//! and generic over what a release decides ([`Release`]): the updates, the one-slot
//! signal and pass, `mergePodStatus`, `TerminatePod`'s container states and the
//! readiness conditions' skeleton; and [`Logic`], a release written in a write mode.

mod conditions;
mod containers;
mod decisions;
mod generate;
mod go_quote;
mod logic;
mod merge;
mod signal;
mod updates;

pub use conditions::{
    DISRUPTION_TARGET, POD_SCHEDULED, is_terminal, shared_by_kubelet, update_last_transition_time, update_pod_condition,
};
pub use containers::{
    CONTAINER_STATUS_UNKNOWN, CONTAINER_STATUS_UNKNOWN_MESSAGE, RESTART_ALWAYS, RESTART_ON_FAILURE, UNKNOWN_EXIT_CODE,
    initialized_containers, last_terminated, restart_policy, terminated, waiting,
};
pub use decisions::Release;
pub use generate::{
    CONTAINERS_READY, POD_FAILED, POD_FAILED_REASON, READINESS_GATES_NOT_READY, containers_ready_condition,
    containers_ready_for_terminal_phase, pod_ready_condition, pod_ready_for_terminal_phase,
};
pub use go_quote::go_quote;
pub use logic::{Follows, Logic};
pub use merge::merge_pod_status;
