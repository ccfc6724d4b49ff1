//! Pod conditions in 1.27: which the kubelet owns, how they compare, and how the
//! kubelet's status merges with the API server's before a write.

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_core::status_equal;
use podstatus_core::{POD_INITIALIZED, POD_READY, POD_SUCCEEDED, find_condition, find_condition_mut};

use crate::generate::{
    CONTAINERS_READY, POD_FAILED, containers_ready_for_terminal_phase, pod_ready_for_terminal_phase,
};

/// Condition type: the pod is bound to a node.
pub const POD_SCHEDULED: &str = "PodScheduled";
/// Condition type: the pod is about to be terminated by a disruption (eviction,
/// preemption, the kubelet's own node-pressure eviction...).
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// Condition type: the pod's sandbox and network are set up. Owned by the kubelet only
/// with the `PodHasNetworkCondition` gate, off in 1.27.
pub const POD_HAS_NETWORK: &str = "PodHasNetwork";

/// The conditions whose last transition time the kubelet keeps while their status
/// stays the same, in the order 1.27's `updateStatusInternal` handles them.
pub const TRANSITION_TIME_CONDITIONS: [&str; 6] =
    [CONTAINERS_READY, POD_READY, POD_INITIALIZED, POD_HAS_NETWORK, POD_SCHEDULED, DISRUPTION_TARGET];

/// `PodConditionByKubelet`: the conditions the kubelet owns (1.27's list; PodHasNetwork
/// would join it with its feature gate).
pub fn owned_by_kubelet(condition_type: &str) -> bool {
    matches!(condition_type, POD_SCHEDULED | POD_READY | POD_INITIALIZED | CONTAINERS_READY)
}

/// `PodConditionSharedByKubelet`: conditions others set too, which the kubelet may
/// write (DisruptionTarget, with `PodDisruptionConditions`).
pub fn shared_by_kubelet(condition_type: &str) -> bool {
    condition_type == DISRUPTION_TARGET
}

/// `IsPodPhaseTerminal`: Succeeded or Failed.
pub fn is_terminal(phase: Option<&str>) -> bool {
    matches!(phase, Some(POD_SUCCEEDED | POD_FAILED))
}

/// `isPodStatusByKubeletEqual`: equal when every condition of `status` that the kubelet
/// owns or shares has the same status, reason and message in `old`, and the statuses
/// are semantically equal once `old` takes `status`'s conditions. So the conditions
/// others own, and condition times, never make a new version. Both must be normalised.
pub fn is_pod_status_by_kubelet_equal(old: &PodStatus, status: &PodStatus) -> bool {
    let text = |s: &Option<String>| s.as_deref().unwrap_or("").to_owned();
    let kubelet_conditions_equal =
        status.conditions.iter().flatten().filter(|c| owned_by_kubelet(&c.type_) || shared_by_kubelet(&c.type_)).all(
            |c| {
                find_condition(old, &c.type_).is_some_and(|o| {
                    o.status == c.status && text(&o.message) == text(&c.message) && text(&o.reason) == text(&c.reason)
                })
            },
        );
    kubelet_conditions_equal
        && status_equal(&PodStatus { conditions: status.conditions.clone(), ..old.clone() }, status)
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

/// `mergePodStatus`: what the kubelet writes, from the API server's status `old` and
/// its own `new`.
///
/// - Conditions the kubelet does not own come from `old` (readiness gates set by
///   controllers, an eviction's DisruptionTarget...), followed by the kubelet's own
///   from `new`. `new`'s DisruptionTarget replaces `old`'s only with the transition
///   to a terminal phase, and then transitions now unless `old` has the same status.
/// - A transition to a terminal phase waits while `could_have_running_containers`
///   (asked only then) says a container may still run: phase, reason and message stay
///   `old`'s.
/// - In a terminal phase, a true Ready or ContainersReady becomes false.
///
/// `old` and `new` are not changed; times set here are `now`.
pub fn merge_pod_status(
    old: &PodStatus,
    new: &PodStatus,
    could_have_running_containers: impl FnOnce() -> bool,
    now: &Time,
) -> PodStatus {
    let transitioning_to_terminal = !is_terminal(old.phase.as_deref()) && is_terminal(new.phase.as_deref());
    let delay = transitioning_to_terminal && could_have_running_containers();

    let mut conditions: Vec<PodCondition> =
        old.conditions.iter().flatten().filter(|c| !owned_by_kubelet(&c.type_)).cloned().collect();
    let mut merged = new.clone();
    for c in new.conditions.iter().flatten() {
        if owned_by_kubelet(&c.type_) {
            conditions.push(c.clone());
        } else if shared_by_kubelet(&c.type_) && transitioning_to_terminal && !delay {
            // Sent only with the terminal phase: its transition time set when the
            // kubelet decided is stale by now.
            update_last_transition_time(&mut merged, old, &c.type_, || now.clone());
            if let Some(updated) = find_condition(&merged, &c.type_) {
                match conditions.iter_mut().find(|existing| existing.type_ == c.type_) {
                    Some(existing) => *existing = updated.clone(),
                    None => conditions.push(updated.clone()),
                }
            }
        }
    }
    merged.conditions = (!conditions.is_empty()).then_some(conditions);

    if delay {
        merged.phase = old.phase.clone();
        merged.reason = old.reason.clone();
        merged.message = old.message.clone();
    }

    let is_true = |status: &PodStatus, type_: &str| find_condition(status, type_).is_some_and(|c| c.status == "True");
    if is_terminal(merged.phase.as_deref()) && (is_true(&merged, POD_READY) || is_true(&merged, CONTAINERS_READY)) {
        let phase = merged.phase.clone();
        update_pod_condition(&mut merged, containers_ready_for_terminal_phase(phase.as_deref()), now);
        update_pod_condition(&mut merged, pod_ready_for_terminal_phase(phase.as_deref()), now);
    }
    merged
}
