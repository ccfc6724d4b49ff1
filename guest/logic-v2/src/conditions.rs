//! Pod conditions in 1.27: which the kubelet owns, which keep their transition time,
//! and how two statuses compare.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::{POD_INITIALIZED, POD_READY, find_condition, status_equal};
use podstatus_logic::{CONTAINERS_READY, DISRUPTION_TARGET, POD_SCHEDULED, shared_by_kubelet};

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
