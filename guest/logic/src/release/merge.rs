//! `mergePodStatus`: what the kubelet writes, from the API server's status and its own,
//! as every release since 1.27 merges them; which conditions it owns, what it keeps
//! from the API server and the generation its terminal conditions carry are the
//! release's.

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_core::{POD_READY, find_condition};

use super::conditions::{is_terminal, shared_by_kubelet, update_last_transition_time, update_pod_condition};
use super::decisions::Release;
use super::generate::{CONTAINERS_READY, containers_ready_for_terminal_phase, pod_ready_for_terminal_phase};

/// `mergePodStatus` of `release`: what the kubelet writes for `pod` (the pod the write
/// is computed over), from the API server's status `old` and its own `new`.
///
/// - Conditions the kubelet does not own come from `old` (readiness gates set by
///   controllers, an eviction's DisruptionTarget...), followed by the kubelet's own
///   from `new`. `new`'s DisruptionTarget replaces `old`'s only with the transition
///   to a terminal phase, and then transitions now unless `old` has the same status.
/// - The fields the release leaves to the API server keep `old`'s values.
/// - A transition to a terminal phase waits while `could_have_running_containers`
///   (asked only then) says a container may still run: phase, reason and message stay
///   `old`'s.
/// - In a terminal phase, a true Ready or ContainersReady becomes false (with the
///   release's generation of `pod`).
///
/// `old` and `new` are not changed; times set here are `now`.
pub fn merge_pod_status<R: Release>(
    release: &R,
    pod: &R::Pod,
    old: &PodStatus,
    new: &PodStatus,
    could_have_running_containers: impl FnOnce() -> bool,
    now: &Time,
) -> PodStatus {
    let transitioning_to_terminal = !is_terminal(old.phase.as_deref()) && is_terminal(new.phase.as_deref());
    let delay = transitioning_to_terminal && could_have_running_containers();

    let owned = |c: &PodCondition| release.owned_by_kubelet(&c.type_);
    let mut conditions: Vec<PodCondition> = old.conditions.iter().flatten().filter(|c| !owned(c)).cloned().collect();
    let mut merged = new.clone();
    for c in new.conditions.iter().flatten() {
        if owned(c) {
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
    release.keep_api_server_fields(old, &mut merged);

    if delay {
        merged.phase = old.phase.clone();
        merged.reason = old.reason.clone();
        merged.message = old.message.clone();
    }

    let is_true = |status: &PodStatus, type_: &str| find_condition(status, type_).is_some_and(|c| c.status == "True");
    if is_terminal(merged.phase.as_deref()) && (is_true(&merged, POD_READY) || is_true(&merged, CONTAINERS_READY)) {
        let phase = merged.phase.clone();
        let generation = release.observed_generation(pod);
        update_pod_condition(&mut merged, containers_ready_for_terminal_phase(phase.as_deref(), generation), now);
        update_pod_condition(&mut merged, pod_ready_for_terminal_phase(phase.as_deref(), generation), now);
    }
    merged
}
