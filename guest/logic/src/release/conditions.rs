//! Pod conditions as every release since 1.27 handles them: the condition the kubelet
//! shares with others, terminal phases, and how a condition keeps its transition time.

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_core::{POD_SUCCEEDED, find_condition, find_condition_mut};

use super::generate::POD_FAILED;

/// Condition type: the pod is bound to a node.
pub const POD_SCHEDULED: &str = "PodScheduled";
/// Condition type: the pod is about to be terminated by a disruption (eviction,
/// preemption, the kubelet's own node-pressure eviction...).
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";

/// `PodConditionSharedByKubelet`: conditions others set too, which the kubelet may
/// write: DisruptionTarget (gate `PodDisruptionConditions`, on in 1.27, GA in 1.31).
pub fn shared_by_kubelet(condition_type: &str) -> bool {
    condition_type == DISRUPTION_TARGET
}

/// `IsPodPhaseTerminal`: Succeeded or Failed.
pub fn is_terminal(phase: Option<&str>) -> bool {
    matches!(phase, Some(POD_SUCCEEDED | POD_FAILED))
}

/// `updateLastTransitionTime`: the condition of `type_` in `status`, if any, keeps the
/// transition time of `old`'s condition of that type when its status is unchanged, and
/// otherwise transitions now.
pub fn update_last_transition_time(status: &mut PodStatus, old: &PodStatus, type_: &str, now: impl FnOnce() -> Time) {
    let Some(condition) = find_condition_mut(status, type_) else {
        return;
    };
    condition.last_transition_time = match find_condition(old, type_) {
        Some(old) if old.status == condition.status => old.last_transition_time.clone(),
        _ => Some(now()),
    };
}

/// `UpdatePodCondition`: replaces the condition of that type (keeping its transition
/// time when the status is unchanged, else `now`) or appends it.
pub fn update_pod_condition(status: &mut PodStatus, mut condition: PodCondition, now: &Time) {
    condition.last_transition_time = Some(now.clone());
    match find_condition_mut(status, &condition.type_) {
        Some(existing) => {
            if existing.status == condition.status {
                condition.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = condition;
        }
        None => status.conditions.get_or_insert_with(Vec::new).push(condition),
    }
}
