//! What Kubernetes 1.37's status manager decides differently from 1.35's
//! (`pkg/kubelet/status/status_manager.go` at v1.37.2 against v1.35.4, with the helpers
//! it calls: `pkg/api/v1/pod/util.go` and `pkg/kubelet/types/pod_status.go` are the
//! same in both; every feature gate at its 1.37 default). 1.36.3 decides all of it
//! the same way already; what 1.37 adds over 1.36 is only in status fields these
//! statuses do not carry (below).
//!
//! - `RestartAllContainersOnContainerExits` is on (beta since 1.36, KEP-5532):
//!   AllContainersRestarting is the kubelet's own condition (`PodConditionByKubelet`),
//!   a pod with a `RestartAllContainers` rule may take any container out of terminated
//!   (`checkContainerStateTransition`: `podutil.AllContainersCouldRestart`), and such a
//!   rule restarts its container (`podutil.ContainerShouldRestart`);
//! - `isPodStatusByKubeletEqual` ignores `resourceClaimStatuses` and
//!   `extendedResourceClaimStatus` (kubernetes#136238): "not owned and not modified by
//!   kubelet", so a status that changes only them is no new version;
//! - `SetPodResizePendingCondition` makes every reason but `Infeasible` `Deferred`.
//!
//! Not followed, because the contract's status (Kubernetes 1.35's types) has no such
//! fields: 1.37's `volumeHealth` kept across updates (`updateStatusInternal`) and
//! `nodeAllocatableResourceClaimStatuses` left to the API server (equality and
//! `mergePodStatus`). The rest of the diff is not behaviour a trace can see:
//! `SetPodStatus` returns the cached status and whether it changed, `PodUpdateNotifier`s,
//! `SetPodVolumeHealth` (no such call in the contract), metrics.

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use podstatus_core::{PodView, SpecView};
use podstatus_logic::{Release, Result};

use crate::Release135;
use crate::conditions::{owned_by_kubelet_since_1_36, status_by_kubelet_equal};
use crate::containers::{IllegalTransition, RestartGates, check_container_state_transition};
use crate::pod_spec::PodSpec135;

/// The reason `SetPodResizePendingCondition` keeps as given; every other becomes
/// [`DEFERRED`].
const INFEASIBLE: &str = "Infeasible";
/// `v1.PodReasonDeferred`.
const DEFERRED: &str = "Deferred";

/// Kubernetes 1.37's decisions: 1.35's ([`Release135`]) but where this module says.
#[derive(Clone, Copy, Debug, Default)]
pub struct Release137;

impl Release for Release137 {
    const NAME: &'static str = "1.37";
    type Pod = PodSpec135;
    type Refusal = IllegalTransition;
    const TRANSITION_TIME_CONDITIONS: &'static [&'static str] = Release135::TRANSITION_TIME_CONDITIONS;
    const TRACKS_OBSERVED_GENERATION: bool = Release135::TRACKS_OBSERVED_GENERATION;
    const RESIZE_CONDITIONS: bool = Release135::RESIZE_CONDITIONS;

    fn read_pod(&self, pod_json: &str, full_name: impl FnOnce() -> String) -> Result<PodSpec135> {
        Release135.read_pod(pod_json, full_name)
    }

    fn observed_generation(&self, pod: &PodSpec135) -> Option<i64> {
        Release135.observed_generation(pod)
    }

    /// `checkContainerStateTransition` with `RestartAllContainersOnContainerExits` on:
    /// `if podutil.AllContainersCouldRestart(podSpec) { return nil }`, and a
    /// `RestartAllContainers` rule restarts its container.
    fn check_container_state_transition(
        &self,
        spec: &SpecView,
        pod: &PodSpec135,
        old: &PodStatus,
        new: &PodStatus,
    ) -> std::result::Result<(), IllegalTransition> {
        check_container_state_transition(spec, pod, old, new, RestartGates { restart_all_containers: true })
    }

    /// `isPodStatusByKubeletEqual`: `oldCopy.ResourceClaimStatuses =
    /// status.ResourceClaimStatuses` and `oldCopy.ExtendedResourceClaimStatus =
    /// status.ExtendedResourceClaimStatus` before comparing, over 1.37's kubelet
    /// conditions.
    fn is_pod_status_by_kubelet_equal(&self, old: &PodStatus, status: &PodStatus) -> bool {
        let old = PodStatus {
            resource_claim_statuses: status.resource_claim_statuses.clone(),
            extended_resource_claim_status: status.extended_resource_claim_status.clone(),
            ..old.clone()
        };
        status_by_kubelet_equal(&old, status, owned_by_kubelet_since_1_36)
    }

    fn readiness_conditions(
        &self,
        pod: &PodView,
        read: &PodSpec135,
        pod_json: &str,
        status: &PodStatus,
    ) -> Result<[PodCondition; 2]> {
        Release135.readiness_conditions(pod, read, pod_json, status)
    }

    fn has_pod_initialized(&self, spec: &SpecView, pod: &PodSpec135, status: &PodStatus) -> bool {
        Release135.has_pod_initialized(spec, pod, status)
    }

    /// `PodConditionByKubelet`: AllContainersRestarting joins 1.35's list with its gate.
    fn owned_by_kubelet(&self, condition_type: &str) -> bool {
        owned_by_kubelet_since_1_36(condition_type)
    }

    fn keep_api_server_fields(&self, api: &PodStatus, merged: &mut PodStatus) {
        Release135.keep_api_server_fields(api, merged);
    }

    fn normalize_status(&self, spec: &SpecView, status: &mut PodStatus) {
        Release135.normalize_status(spec, status);
    }

    /// `SetPodResizePendingCondition`: `if reason != v1.PodReasonInfeasible { reason =
    /// v1.PodReasonDeferred }`.
    fn resize_pending_reason<'a>(&self, reason: &'a str) -> &'a str {
        if reason == INFEASIBLE { reason } else { DEFERRED }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(value: serde_json::Value) -> PodStatus {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn resource_claim_statuses_alone_are_no_change_since_1_36() {
        let old = status(json!({"phase": "Pending"}));
        let new =
            status(json!({"phase": "Pending", "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "x"}],
            "extendedResourceClaimStatus": {"resourceClaimName": "y", "requestMappings": []}}));
        assert!(!Release135.is_pod_status_by_kubelet_equal(&old, &new));
        assert!(Release137.is_pod_status_by_kubelet_equal(&old, &new));
        let moved = status(json!({"phase": "Running"}));
        assert!(!Release137.is_pod_status_by_kubelet_equal(&old, &moved));
    }

    #[test]
    fn all_containers_restarting_is_the_kubelets_since_1_36() {
        let old = status(json!({"conditions": [{"type": "AllContainersRestarting", "status": "True"}]}));
        let new = status(json!({}));
        assert!(Release135.is_pod_status_by_kubelet_equal(&old, &new), "foreign in 1.35");
        assert!(!Release137.is_pod_status_by_kubelet_equal(&old, &new), "removed: a change in 1.37");
        assert!(Release137.owned_by_kubelet("AllContainersRestarting"));
        assert!(!Release135.owned_by_kubelet("AllContainersRestarting"));
    }

    #[test]
    fn a_pending_resize_is_deferred_unless_infeasible() {
        assert_eq!(Release137.resize_pending_reason("Error"), DEFERRED);
        assert_eq!(Release137.resize_pending_reason(""), DEFERRED);
        assert_eq!(Release137.resize_pending_reason(INFEASIBLE), INFEASIBLE);
        assert_eq!(Release135.resize_pending_reason("Error"), "Error");
    }

    #[test]
    fn a_restart_all_containers_rule_lets_any_container_leave_terminated() {
        let pod_json = r#"{"spec": {"restartPolicy": "Never", "containers": [{"name": "app"},
            {"name": "watcher", "restartPolicy": "Never", "restartPolicyRules": [
                {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [3]}}]}]}}"#;
        let spec: SpecView = serde_json::from_value(json!({"restartPolicy": "Never",
            "containers": [{"name": "app"}, {"name": "watcher"}]}))
        .unwrap();
        let pod = PodSpec135::parse(pod_json).unwrap();
        let old = status(json!({"containerStatuses": [{"name": "app", "state": {"terminated": {"exitCode": 0}}}]}));
        let new = status(json!({"containerStatuses": [{"name": "app", "state": {"running": {}}}]}));
        let refusal = Release135.check_container_state_transition(&spec, &pod, &old, &new).unwrap_err();
        assert_eq!(refusal, IllegalTransition::Container("app".into()));
        assert_eq!(Release137.check_container_state_transition(&spec, &pod, &old, &new), Ok(()));
    }
}
