//! What Kubernetes 1.35's status manager decides where releases differ
//! (`pkg/kubelet/status/status_manager.go` and `generate.go` at v1.35.4, with
//! `pkg/kubelet/types/pod_status.go`; every feature gate at its 1.35 default:
//! `PodObservedGenerationTracking`, `PodReadyToStartContainersCondition`,
//! `InPlacePodVerticalScaling`, `SidecarContainers`, `ContainerRestartRules` on;
//! `RestartAllContainersOnContainerExits` off).

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use podstatus_core::{PodView, SpecView, normalize_status_with_ephemeral};
use podstatus_logic::{InvalidPod, Release, Result};

use crate::conditions::{TRANSITION_TIME_CONDITIONS, is_pod_status_by_kubelet_equal, owned_by_kubelet};
use crate::containers::{IllegalTransition, RestartGates, check_container_state_transition, has_pod_initialized};
use crate::generate::{all_container_statuses, containers_ready, pod_ready};
use crate::pod_spec::PodSpec135;

/// Kubernetes 1.35's decisions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Release135;

impl Release for Release135 {
    const NAME: &'static str = "1.35";
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
    fn check_container_state_transition(
        &self,
        spec: &SpecView,
        pod: &PodSpec135,
        old: &PodStatus,
        new: &PodStatus,
    ) -> std::result::Result<(), IllegalTransition> {
        check_container_state_transition(spec, pod, old, new, RestartGates { restart_all_containers: false })
    }

    /// The kubelet's conditions compared both ways: a removed one is a change.
    fn is_pod_status_by_kubelet_equal(&self, old: &PodStatus, status: &PodStatus) -> bool {
        is_pod_status_by_kubelet_equal(old, status)
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

    fn owned_by_kubelet(&self, condition_type: &str) -> bool {
        owned_by_kubelet(condition_type)
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

    /// `SetPodResizePendingCondition`: the reason as given.
    fn resize_pending_reason<'a>(&self, reason: &'a str) -> &'a str {
        reason
    }
}
