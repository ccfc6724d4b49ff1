//! What Kubernetes 1.27's status manager decides where releases differ
//! (`pkg/kubelet/status/status_manager.go` and `generate.go` at v1.27.16, with
//! `pkg/kubelet/types/pod_status.go`; gates `PodDisruptionConditions` on,
//! `PodHasNetworkCondition` and `InPlacePodVerticalScaling` off).

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use podstatus_core::{PodView, SpecView, normalize_status};
use podstatus_logic::{InvalidPod, Release, Result, restart_policy};

use crate::conditions::{TRANSITION_TIME_CONDITIONS, is_pod_status_by_kubelet_equal, owned_by_kubelet};
use crate::containers::{IllegalTransition, check_container_state_transition, has_pod_initialized};
use crate::generate::{generate_containers_ready_condition, generate_pod_ready_condition, readiness_gates};

/// Kubernetes 1.27's decisions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Release127;

impl Release for Release127 {
    const NAME: &'static str = "1.27";
    /// 1.27 reads nothing of a pod up front: only a readiness change reads the
    /// readiness gates.
    type Pod = ();
    type Refusal = IllegalTransition;
    /// `updateStatusInternal`: ContainersReady, Ready, Initialized, PodHasNetwork,
    /// PodScheduled, DisruptionTarget.
    const TRANSITION_TIME_CONDITIONS: &'static [&'static str] = &TRANSITION_TIME_CONDITIONS;
    /// No `observedGeneration` before KEP-5067 (1.33): a status's is taken as given.
    const TRACKS_OBSERVED_GENERATION: bool = false;
    /// No in-place resize conditions before 1.33.
    const RESIZE_CONDITIONS: bool = false;

    fn read_pod(&self, _pod_json: &str, _full_name: impl FnOnce() -> String) -> Result<()> {
        Ok(())
    }

    fn observed_generation(&self, _pod: &()) -> Option<i64> {
        None
    }

    /// `checkContainerStateTransition`: over the regular containers, then the init
    /// containers, by the pod's restart policy alone.
    fn check_container_state_transition(
        &self,
        spec: &SpecView,
        _pod: &(),
        old: &PodStatus,
        new: &PodStatus,
    ) -> std::result::Result<(), IllegalTransition> {
        let policy = restart_policy(spec);
        check_container_state_transition(old.container_statuses.as_deref(), new.container_statuses.as_deref(), policy)
            .and_then(|()| {
                check_container_state_transition(
                    old.init_container_statuses.as_deref(),
                    new.init_container_statuses.as_deref(),
                    policy,
                )
            })
    }

    /// `isPodStatusByKubeletEqual`: a kubelet condition removed is no change.
    fn is_pod_status_by_kubelet_equal(&self, old: &PodStatus, status: &PodStatus) -> bool {
        is_pod_status_by_kubelet_equal(old, status)
    }

    /// Over the regular containers and their statuses, with the readiness gates read
    /// from the pod.
    fn readiness_conditions(
        &self,
        pod: &PodView,
        _read: &(),
        pod_json: &str,
        status: &PodStatus,
    ) -> Result<[PodCondition; 2]> {
        let gates = readiness_gates(pod_json).invalid_pod(|| pod.full_name())?;
        let statuses = status.container_statuses.as_deref();
        let phase = status.phase.as_deref();
        let conditions = status.conditions.as_deref().unwrap_or_default();
        Ok([
            generate_pod_ready_condition(&pod.spec, &gates, conditions, statuses, phase),
            generate_containers_ready_condition(&pod.spec, statuses, phase),
        ])
    }

    /// The last init container initializes the pod once it exited 0.
    fn has_pod_initialized(&self, spec: &SpecView, _pod: &(), status: &PodStatus) -> bool {
        has_pod_initialized(spec, status)
    }

    fn owned_by_kubelet(&self, condition_type: &str) -> bool {
        owned_by_kubelet(condition_type)
    }

    /// The kubelet's status is written whole but for the conditions others own.
    fn keep_api_server_fields(&self, _api: &PodStatus, _merged: &mut PodStatus) {}

    /// `normalizeStatus`: the budget shared by the regular and init containers, the
    /// ephemeral containers' statuses left as given.
    fn normalize_status(&self, spec: &SpecView, status: &mut PodStatus) {
        normalize_status(spec, status);
    }

    /// No resize conditions in 1.27 (never asked).
    fn resize_pending_reason<'a>(&self, reason: &'a str) -> &'a str {
        reason
    }
}
