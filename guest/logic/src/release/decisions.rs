//! What a Kubernetes release's status manager decides where the releases since 1.27
//! differ ([`Release`]); everything they do alike is written once, generic over it
//! (`super::updates`, `super::merge`, and the write modes in `crate::write_modes`).
//!
//! Each method names the upstream function whose decision it is
//! (`pkg/kubelet/status/status_manager.go` and `generate.go` of k8s.io/kubernetes, and
//! `pkg/kubelet/types/pod_status.go` for the conditions the kubelet owns); a release's
//! implementation says which release's code it follows, and why it differs.

use std::fmt::Display;

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use podstatus_core::{PodView, SpecView};

use crate::error::Result;

/// The decisions of one release's status manager (1.27, 1.35, ...): its updates, its
/// merge and its equality. How it writes is the write mode's
/// ([`crate::ReadThenPatch`], [`crate::OneCall`]); a logic version is the two together
/// ([`crate::Logic`]).
pub trait Release {
    /// The release, as `--logic` names it (`1.27`, `1.35`, `1.37`).
    const NAME: &'static str;

    /// What the release reads of a pod beyond [`PodView`] (1.35: the generation, the
    /// init containers' restart policies, the readiness gates; 1.27 reads nothing more
    /// up front).
    type Pod;

    /// Why the release refuses an update (`checkContainerStateTransition`'s error).
    type Refusal: Display;

    /// The conditions whose last transition time `updateStatusInternal` keeps while
    /// their status holds, in upstream's order.
    const TRANSITION_TIME_CONDITIONS: &'static [&'static str];

    /// Whether the release tracks `observedGeneration` (KEP-5067: `SetPodStatus` sets
    /// the status's to the pod's generation and `updateStatusInternal` never takes it
    /// backwards).
    const TRACKS_OBSERVED_GENERATION: bool;

    /// Whether the release keeps the in-place resize conditions (KEP-1287, 1.33+:
    /// `SetPodResizePendingCondition` and the rest); without them those calls answer
    /// unsupported.
    const RESIZE_CONDITIONS: bool;

    /// Reads [`Release::Pod`] from `pod_json`; an error is an invalid pod, named by
    /// `full_name`.
    fn read_pod(&self, pod_json: &str, full_name: impl FnOnce() -> String) -> Result<Self::Pod>;

    /// The `observedGeneration` the release writes for `pod`, on the status and on
    /// the conditions it generates (`CalculatePodStatusObservedGeneration`,
    /// `GetPodObservedGenerationIfEnabledOnCondition`); None when it writes none.
    fn observed_generation(&self, pod: &Self::Pod) -> Option<i64>;

    /// `checkContainerStateTransition`: whether `new` may follow `old` for the pod
    /// with `spec`.
    fn check_container_state_transition(
        &self,
        spec: &SpecView,
        pod: &Self::Pod,
        old: &PodStatus,
        new: &PodStatus,
    ) -> std::result::Result<(), Self::Refusal>;

    /// `isPodStatusByKubeletEqual`: whether `status` changes nothing the kubelet owns
    /// in `old` (both normalised).
    fn is_pod_status_by_kubelet_equal(&self, old: &PodStatus, status: &PodStatus) -> bool;

    /// `SetContainerReadiness`'s Ready and ContainersReady (`GeneratePodReadyCondition`,
    /// `GenerateContainersReadyCondition`), in that order, over `status` (the cached
    /// status with the container's new readiness) of the pod `pod` (`pod_json`).
    fn readiness_conditions(
        &self,
        pod: &PodView,
        read: &Self::Pod,
        pod_json: &str,
        status: &PodStatus,
    ) -> Result<[PodCondition; 2]>;

    /// `hasPodInitialized` (`TerminatePod`), judged by the pod's own `status`.
    fn has_pod_initialized(&self, spec: &SpecView, pod: &Self::Pod, status: &PodStatus) -> bool;

    /// `PodConditionByKubelet`: the conditions the kubelet owns, with the release's
    /// feature gates at their defaults.
    fn owned_by_kubelet(&self, condition_type: &str) -> bool;

    /// `mergePodStatus`: the fields of the API server's status `api` the merged status
    /// keeps whatever the kubelet has (1.35: `resourceClaimStatuses`).
    fn keep_api_server_fields(&self, api: &PodStatus, merged: &mut PodStatus);

    /// `normalizeStatus`: the form `status` (of a pod with `spec`) is cached and
    /// compared in (1.35 budgets and sorts the ephemeral containers' statuses too).
    fn normalize_status(&self, spec: &SpecView, status: &mut PodStatus);

    /// `SetPodResizePendingCondition`: the reason a PodResizePending condition set with
    /// `reason` carries (1.36 and later make every reason but `Infeasible` `Deferred`).
    fn resize_pending_reason<'a>(&self, reason: &'a str) -> &'a str;
}
