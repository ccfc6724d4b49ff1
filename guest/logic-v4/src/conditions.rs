//! Pod conditions in 1.35: which the kubelet owns (PodReadyToStartContainers and the
//! resize conditions joined 1.27's list), which keep their transition time, and how two
//! statuses compare (the kubelet's conditions both ways). How the kubelet's status
//! merges with the API server's is every release's `mergePodStatus`
//! (`podstatus_logic::merge_pod_status`) with 1.35's decisions
//! (`crate::Release135`: the resource-claim statuses are the API server's, the
//! terminal-phase Ready conditions carry the pod's generation).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use podstatus_core::{POD_INITIALIZED, POD_READY, status_equal};
use podstatus_logic::{
    CONTAINERS_READY, DISRUPTION_TARGET, POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING, POD_SCHEDULED, shared_by_kubelet,
};

/// Condition type: the pod's sandbox and network are set up (KEP-3085; PodHasNetwork
/// until 1.28). The kubelet's own with `PodReadyToStartContainersCondition`, on since
/// 1.29.
pub const POD_READY_TO_START_CONTAINERS: &str = "PodReadyToStartContainers";

/// Condition type: the pod's containers are being restarted in place after a
/// `RestartAllContainers` rule matched (KEP-5532). The kubelet's own with
/// `RestartAllContainersOnContainerExits` (off in 1.35, on since 1.36); its transition
/// time is kept in 1.35 already, whatever the gate.
pub const ALL_CONTAINERS_RESTARTING: &str = "AllContainersRestarting";

/// The conditions whose last transition time the kubelet keeps while their status
/// stays the same, in the order `updateStatusInternal` handles them (1.35 to 1.37).
pub const TRANSITION_TIME_CONDITIONS: [&str; 7] = [
    CONTAINERS_READY,
    POD_READY,
    POD_INITIALIZED,
    POD_READY_TO_START_CONTAINERS,
    POD_SCHEDULED,
    DISRUPTION_TARGET,
    ALL_CONTAINERS_RESTARTING,
];

/// `PodConditionByKubelet` in 1.35 with its gates at their defaults.
pub fn owned_by_kubelet(condition_type: &str) -> bool {
    matches!(
        condition_type,
        POD_SCHEDULED
            | POD_READY
            | POD_INITIALIZED
            | CONTAINERS_READY
            | POD_RESIZE_IN_PROGRESS
            | POD_RESIZE_PENDING
            | POD_READY_TO_START_CONTAINERS
    )
}

fn kubelet_conditions(status: &PodStatus, owned: fn(&str) -> bool) -> BTreeMap<&str, &PodCondition> {
    // Later conditions of a type replace earlier ones, as Go's map assignment does.
    let kubelet = |c: &&PodCondition| owned(&c.type_) || shared_by_kubelet(&c.type_);
    status.conditions.iter().flatten().filter(kubelet).map(|c| (c.type_.as_str(), c)).collect()
}

/// 1.35's `isPodStatusByKubeletEqual`: the conditions the kubelet owns or shares are
/// the same types in both (one removed is a change, unlike 1.27), each with the same
/// status, reason and message; the rest is semantically equal once `old` takes
/// `status`'s conditions (so condition times and observedGeneration, and conditions
/// others own, make no new version). Both must be normalised.
pub fn is_pod_status_by_kubelet_equal(old: &PodStatus, status: &PodStatus) -> bool {
    status_by_kubelet_equal(old, status, owned_by_kubelet)
}

/// `isPodStatusByKubeletEqual` over the conditions `owned` says the kubelet owns.
pub(crate) fn status_by_kubelet_equal(old: &PodStatus, status: &PodStatus, owned: fn(&str) -> bool) -> bool {
    let (old_conditions, new_conditions) = (kubelet_conditions(old, owned), kubelet_conditions(status, owned));
    if old_conditions.len() != new_conditions.len() {
        return false;
    }
    let text = |s: &Option<String>| s.as_deref().unwrap_or("").to_owned();
    let same = new_conditions.iter().all(|(type_, new)| {
        old_conditions.get(type_).is_some_and(|old| {
            old.status == new.status
                && text(&old.message) == text(&new.message)
                && text(&old.reason) == text(&new.reason)
        })
    });
    same && status_equal(&PodStatus { conditions: status.conditions.clone(), ..old.clone() }, status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use podstatus_core::find_condition;
    use podstatus_logic::merge_pod_status;
    use serde_json::{Value, json};

    use crate::Release135;
    use crate::pod_spec::PodSpec135;

    fn status(value: Value) -> PodStatus {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_new_conditions_are_the_kubelets_and_pod_has_network_is_not() {
        for owned in [POD_READY_TO_START_CONTAINERS, POD_RESIZE_PENDING, POD_RESIZE_IN_PROGRESS, POD_READY] {
            assert!(owned_by_kubelet(owned), "{owned}");
        }
        assert!(!owned_by_kubelet("PodHasNetwork"));
        assert!(!owned_by_kubelet(DISRUPTION_TARGET) && shared_by_kubelet(DISRUPTION_TARGET));
    }

    #[test]
    fn a_removed_kubelet_condition_is_a_change_and_a_foreign_one_is_not() {
        let with = status(json!({"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "PodResizePending", "status": "True", "reason": "Deferred"}]}));
        let without = status(json!({"conditions": [{"type": "Ready", "status": "True"}]}));
        assert!(!is_pod_status_by_kubelet_equal(&with, &without), "removed");
        assert!(!is_pod_status_by_kubelet_equal(&without, &with), "added");
        let foreign = status(json!({"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "example.com/gate", "status": "False"}]}));
        assert!(is_pod_status_by_kubelet_equal(&foreign, &without));
        assert!(is_pod_status_by_kubelet_equal(&without, &foreign));
    }

    #[test]
    fn status_reason_and_message_count_and_times_and_generations_do_not() {
        let base = status(json!({"conditions": [{"type": "Ready", "status": "False", "reason": "A", "message": "m"}]}));
        let timed = status(json!({"conditions": [{"type": "Ready", "status": "False", "reason": "A", "message": "m",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 4}]}));
        assert!(is_pod_status_by_kubelet_equal(&base, &timed));
        for changed in [json!({"status": "True"}), json!({"reason": "B"}), json!({"message": "n"})] {
            let mut c = json!({"type": "Ready", "status": "False", "reason": "A", "message": "m"});
            c.as_object_mut().unwrap().extend(changed.as_object().unwrap().clone());
            assert!(!is_pod_status_by_kubelet_equal(&base, &status(json!({"conditions": [c]}))), "{c}");
        }
        // The status's own observedGeneration is compared.
        let moved = status(json!({"observedGeneration": 2, "conditions": [
            {"type": "Ready", "status": "False", "reason": "A", "message": "m"}]}));
        assert!(!is_pod_status_by_kubelet_equal(&base, &moved));
    }

    #[test]
    fn merge_keeps_the_api_servers_resource_claims_and_writes_the_new_kubelet_conditions() {
        let old = status(json!({"phase": "Running",
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "pod-gpu"}],
            "conditions": [{"type": "example.com/gate", "status": "True"}, {"type": "PodResizePending", "status": "True"}]}));
        let new = status(json!({"phase": "Running", "resourceClaimStatuses": [{"name": "other"}],
            "conditions": [{"type": "PodReadyToStartContainers", "status": "True"}]}));
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let merged = merge_pod_status(&Release135::default(), &PodSpec135::default(), &old, &new, || false, &now);
        assert_eq!(merged.resource_claim_statuses, old.resource_claim_statuses);
        let types: Vec<&str> = merged.conditions.iter().flatten().map(|c| c.type_.as_str()).collect();
        // The kubelet's own PodResizePending is gone from what it writes: it no longer has it.
        assert_eq!(types, ["example.com/gate", "PodReadyToStartContainers"]);
    }

    #[test]
    fn merge_of_a_terminal_phase_makes_ready_false_with_the_pods_generation() {
        let old = status(json!({"phase": "Running"}));
        let new = status(json!({"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "True"}]}));
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let pod = PodSpec135 { generation: 5, ..PodSpec135::default() };
        let merged = merge_pod_status(&Release135::default(), &pod, &old, &new, || false, &now);
        let ready = find_condition(&merged, POD_READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref(), ready.observed_generation),
            ("False", Some("PodCompleted"), Some(5))
        );
        let containers = find_condition(&merged, CONTAINERS_READY).unwrap();
        assert_eq!(containers.observed_generation, Some(5));
    }
}
