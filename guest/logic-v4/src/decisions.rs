//! What Kubernetes 1.35's status manager decides where releases differ
//! (`pkg/kubelet/status/status_manager.go` and `generate.go` at v1.35.4, with
//! `pkg/kubelet/types/pod_status.go`; every feature gate at its 1.35 default:
//! `PodObservedGenerationTracking`, `PodReadyToStartContainersCondition`,
//! `InPlacePodVerticalScaling`, `SidecarContainers`, `ContainerRestartRules` on;
//! `RestartAllContainersOnContainerExits` off), and what each later release decides
//! otherwise, read from `pkg/kubelet/status` at v1.36.3 and v1.37.2 against v1.35.4 with
//! the helpers it calls (`pkg/api/v1/pod/util.go`, `pkg/kubelet/types/pod_status.go`:
//! the same code, but for the gates they read), every gate at its default:
//!
//! - since 1.36, `RestartAllContainersOnContainerExits` is on (beta, KEP-5532):
//!   AllContainersRestarting is the kubelet's own condition (`PodConditionByKubelet`),
//!   a pod with a `RestartAllContainers` rule may take any container out of terminated
//!   (`checkContainerStateTransition`: `podutil.AllContainersCouldRestart`), and such a
//!   rule restarts its container (`podutil.ContainerShouldRestart`);
//! - since 1.36, `isPodStatusByKubeletEqual` ignores `resourceClaimStatuses` and
//!   `extendedResourceClaimStatus` (kubernetes#136238): "not owned and not modified by
//!   kubelet", so a status that changes only them is no new version;
//! - since 1.36, `SetPodResizePendingCondition` makes every reason but `Infeasible`
//!   `Deferred`.
//!
//! Not followed, because the contract's status (Kubernetes 1.35's types) has no such
//! fields: 1.37's `volumeHealth` kept across updates (`updateStatusInternal`) and
//! `nodeAllocatableResourceClaimStatuses` left to the API server (equality and
//! `mergePodStatus`). The rest of the diff is not behaviour a trace can see:
//! `SetPodStatus` returns the cached status and whether it changed, `PodUpdateNotifier`s,
//! `SetPodVolumeHealth` (no such call in the contract), metrics.

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use podstatus_core::{PodView, SpecView, normalize_status_with_ephemeral};
use podstatus_logic::{InvalidPod, Release, Result};

use crate::conditions::{
    ALL_CONTAINERS_RESTARTING, TRANSITION_TIME_CONDITIONS, owned_by_kubelet, status_by_kubelet_equal,
};
use crate::containers::{IllegalTransition, RestartGates, check_container_state_transition, has_pod_initialized};
use crate::generate::{all_container_statuses, containers_ready, pod_ready};
use crate::pod_spec::PodSpec135;

/// The decisions of Kubernetes 1.`MINOR`'s status manager, from 1.35 on: 1.35's, and
/// where a later release decides otherwise, the release since which it does (the
/// module's list), each with its upstream line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kubelet<const MINOR: u32>;

/// Kubernetes 1.35's decisions.
pub type Release135 = Kubelet<35>;

/// Kubernetes 1.37's decisions: 1.35's but where 1.36 or 1.37 decide otherwise.
pub type Release137 = Kubelet<37>;

/// The reason `SetPodResizePendingCondition` keeps as given since 1.36; every other
/// becomes [`DEFERRED`].
const INFEASIBLE: &str = "Infeasible";
/// `v1.PodReasonDeferred`.
const DEFERRED: &str = "Deferred";

impl<const MINOR: u32> Kubelet<MINOR> {
    /// Whether this release is 1.`minor` or later.
    const fn since(minor: u32) -> bool {
        MINOR >= minor
    }

    /// `RestartAllContainersOnContainerExits` at its default: alpha and off in 1.35,
    /// beta and on since 1.36.
    const GATES: RestartGates = RestartGates { restart_all_containers: Self::since(36) };

    /// `PodConditionByKubelet` with this release's gates.
    fn owns(condition_type: &str) -> bool {
        owned_by_kubelet(condition_type) || (Self::since(36) && condition_type == ALL_CONTAINERS_RESTARTING)
    }
}

impl<const MINOR: u32> Release for Kubelet<MINOR> {
    const NAME: &'static str = match MINOR {
        35 => "1.35",
        36 => "1.36",
        37 => "1.37",
        _ => panic!("no release 1.MINOR of the status manager is followed"),
    };
    /// The pod's generation, its init containers' restart policies and its readiness
    /// gates, read at every update.
    type Pod = PodSpec135;
    type Refusal = IllegalTransition;
    /// `updateStatusInternal`: PodReadyToStartContainers where 1.27 had PodHasNetwork,
    /// and AllContainersRestarting (kept whatever its gate says).
    const TRANSITION_TIME_CONDITIONS: &'static [&'static str] = &TRANSITION_TIME_CONDITIONS;
    /// KEP-5067: `SetPodStatus` sets `podutil.CalculatePodStatusObservedGeneration(pod)`;
    /// `updateStatusInternal` "prevent[s] sending unnecessary patches".
    const TRACKS_OBSERVED_GENERATION: bool = true;
    /// KEP-1287: `SetPodResizePendingCondition`, `SetPodResizeInProgressCondition`,
    /// their `Clear...` and `GetPodResizeConditions`.
    const RESIZE_CONDITIONS: bool = true;

    fn read_pod(&self, pod_json: &str, full_name: impl FnOnce() -> String) -> Result<PodSpec135> {
        PodSpec135::parse(pod_json).invalid_pod(full_name)
    }

    fn observed_generation(&self, pod: &PodSpec135) -> Option<i64> {
        pod.observed_generation()
    }

    /// Over init containers too: a restartable one may always restart, and each old
    /// init container status must be the spec's at its index; a container its own
    /// restart policy or rules restart may leave terminated (`ContainerRestartRules`).
    /// Since 1.36: `if podutil.AllContainersCouldRestart(podSpec) { return nil }`, and a
    /// `RestartAllContainers` rule restarts its container.
    fn check_container_state_transition(
        &self,
        spec: &SpecView,
        pod: &PodSpec135,
        old: &PodStatus,
        new: &PodStatus,
    ) -> std::result::Result<(), IllegalTransition> {
        check_container_state_transition(spec, pod, old, new, Self::GATES)
    }

    /// The kubelet's conditions compared both ways: a removed one is a change. Since
    /// 1.36: `oldCopy.ResourceClaimStatuses = status.ResourceClaimStatuses` and
    /// `oldCopy.ExtendedResourceClaimStatus = status.ExtendedResourceClaimStatus`
    /// before comparing.
    fn is_pod_status_by_kubelet_equal(&self, old: &PodStatus, status: &PodStatus) -> bool {
        if !Self::since(36) {
            return status_by_kubelet_equal(old, status, Self::owns);
        }
        let old = PodStatus {
            resource_claim_statuses: status.resource_claim_statuses.clone(),
            extended_resource_claim_status: status.extended_resource_claim_status.clone(),
            ..old.clone()
        };
        status_by_kubelet_equal(&old, status, Self::owns)
    }

    /// Over the sidecars and the regular containers, looked up in the init and regular
    /// statuses together (`append(status.InitContainerStatuses, status.ContainerStatuses...)`),
    /// with the pod manager's pod's generation.
    fn readiness_conditions(
        &self,
        pod: &PodView,
        read: &PodSpec135,
        _pod_json: &str,
        status: &PodStatus,
    ) -> Result<[PodCondition; 2]> {
        let all =
            all_container_statuses(status.init_container_statuses.as_deref(), status.container_statuses.as_deref());
        let phase = status.phase.as_deref();
        let conditions = status.conditions.as_deref().unwrap_or_default();
        Ok([
            pod_ready(&pod.spec, read, conditions, all.as_deref(), phase),
            containers_ready(&pod.spec, read, all.as_deref(), phase),
        ])
    }

    /// A sidecar last initializes the pod once it runs and has started.
    fn has_pod_initialized(&self, spec: &SpecView, pod: &PodSpec135, status: &PodStatus) -> bool {
        has_pod_initialized(spec, pod, status)
    }

    /// `PodConditionByKubelet`: since 1.36 AllContainersRestarting joins 1.35's list
    /// (`if utilfeature.DefaultFeatureGate.Enabled(features.RestartAllContainersOnContainerExits)`).
    fn owned_by_kubelet(&self, condition_type: &str) -> bool {
        Self::owns(condition_type)
    }

    /// `mergePodStatus`: "ResourceClaimStatuses is not owned and not modified by
    /// kubelet", nor is `ExtendedResourceClaimStatus`.
    fn keep_api_server_fields(&self, api: &PodStatus, merged: &mut PodStatus) {
        merged.resource_claim_statuses = api.resource_claim_statuses.clone();
        merged.extended_resource_claim_status = api.extended_resource_claim_status.clone();
    }

    /// `normalizeStatus`: the ephemeral containers share the termination message
    /// budget, and their statuses are normalised and sorted by name
    /// (`sort.Sort(kubetypes.SortedContainerStatuses(status.EphemeralContainerStatuses))`).
    fn normalize_status(&self, spec: &SpecView, status: &mut PodStatus) {
        normalize_status_with_ephemeral(spec, status);
    }

    /// `SetPodResizePendingCondition`: the reason as given in 1.35; since 1.36 `if
    /// reason != v1.PodReasonInfeasible { reason = v1.PodReasonDeferred }`.
    fn resize_pending_reason<'a>(&self, reason: &'a str) -> &'a str {
        if Self::since(36) && reason != INFEASIBLE { DEFERRED } else { reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_logic::Release;
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
        assert!(!Release135::default().is_pod_status_by_kubelet_equal(&old, &new));
        assert!(Release137::default().is_pod_status_by_kubelet_equal(&old, &new));
        let moved = status(json!({"phase": "Running"}));
        assert!(!Release137::default().is_pod_status_by_kubelet_equal(&old, &moved));
    }

    #[test]
    fn all_containers_restarting_is_the_kubelets_since_1_36() {
        let old = status(json!({"conditions": [{"type": "AllContainersRestarting", "status": "True"}]}));
        let new = status(json!({}));
        assert!(Release135::default().is_pod_status_by_kubelet_equal(&old, &new), "foreign in 1.35");
        assert!(!Release137::default().is_pod_status_by_kubelet_equal(&old, &new), "removed: a change in 1.37");
        assert!(Release137::default().owned_by_kubelet("AllContainersRestarting"));
        assert!(!Release135::default().owned_by_kubelet("AllContainersRestarting"));
    }

    #[test]
    fn a_pending_resize_is_deferred_unless_infeasible() {
        assert_eq!(Release137::default().resize_pending_reason("Error"), DEFERRED);
        assert_eq!(Release137::default().resize_pending_reason(""), DEFERRED);
        assert_eq!(Release137::default().resize_pending_reason(INFEASIBLE), INFEASIBLE);
        assert_eq!(Release135::default().resize_pending_reason("Error"), "Error");
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
        let refusal = Release135::default().check_container_state_transition(&spec, &pod, &old, &new).unwrap_err();
        assert_eq!(refusal, IllegalTransition::Container("app".into()));
        assert_eq!(Release137::default().check_container_state_transition(&spec, &pod, &old, &new), Ok(()));
    }
}
