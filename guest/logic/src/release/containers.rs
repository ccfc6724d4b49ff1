//! Container states at the end of a pod's life as every release since 1.27 handles
//! them (`TerminatePod`); when a pod has initialized is the release's
//! ([`crate::Release::has_pod_initialized`]).

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus, PodStatus,
};
use podstatus_core::SpecView;

use super::decisions::Release;

/// The restart policy that lets every container run again.
pub const RESTART_ALWAYS: &str = "Always";
/// The restart policy that lets only failed containers run again.
pub const RESTART_ON_FAILURE: &str = "OnFailure";

/// Exit code of a container whose state could not be found when its pod terminated.
pub const UNKNOWN_EXIT_CODE: i32 = 137;
/// Reason of such a container's terminated state.
pub const CONTAINER_STATUS_UNKNOWN: &str = "ContainerStatusUnknown";
/// Message of such a container's terminated state.
pub const CONTAINER_STATUS_UNKNOWN_MESSAGE: &str = "The container could not be located when the pod was terminated";

/// The pod's restart policy, with the API server's default: a pod without one (or with
/// an empty one) restarts `Always`.
pub fn restart_policy(spec: &SpecView) -> &str {
    spec.restart_policy.as_deref().filter(|p| !p.is_empty()).unwrap_or(RESTART_ALWAYS)
}

/// `initializedContainers`: how many init container statuses, from the first, have
/// attempted to start: all but the trailing ones still waiting with no earlier
/// termination, and at least one.
pub fn initialized_containers(statuses: &[ContainerStatus]) -> usize {
    match statuses.iter().rposition(|s| waiting(s).is_none() || last_terminated(s).is_some()) {
        Some(last) => last + 1,
        None => statuses.len().min(1),
    }
}

/// What `TerminatePod` does to the containers: once the pod has initialized (judged
/// by the release over `pod_status`, the status the pod is handed with), every
/// container not terminated becomes terminated with an unknown state (exit code 137);
/// so do the init containers that have attempted to start. A container that has not
/// attempted to start keeps its state, and a terminated one keeps its own.
pub(crate) fn terminate_containers<R: Release>(
    release: &R,
    spec: &SpecView,
    pod: &R::Pod,
    pod_status: &PodStatus,
    status: &mut PodStatus,
) {
    if release.has_pod_initialized(spec, pod, pod_status) {
        status.container_statuses.iter_mut().flatten().for_each(mark_unknown_unless_terminated);
    }
    if let Some(init) = status.init_container_statuses.as_mut() {
        let started = initialized_containers(init);
        init[..started].iter_mut().for_each(mark_unknown_unless_terminated);
    }
}

/// Marks one container terminated with an unknown state (exit code 137) unless it is
/// terminated already.
fn mark_unknown_unless_terminated(status: &mut ContainerStatus) {
    if terminated(status).is_some() {
        return;
    }
    status.state = Some(ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: UNKNOWN_EXIT_CODE,
            reason: Some(CONTAINER_STATUS_UNKNOWN.to_string()),
            message: Some(CONTAINER_STATUS_UNKNOWN_MESSAGE.to_string()),
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    });
}

/// The container's state, if terminated.
pub fn terminated(status: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    status.state.as_ref()?.terminated.as_ref()
}

/// The container's state, if waiting.
pub fn waiting(status: &ContainerStatus) -> Option<&ContainerStateWaiting> {
    status.state.as_ref()?.waiting.as_ref()
}

/// The container's last termination, if any.
pub fn last_terminated(status: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    status.last_state.as_ref()?.terminated.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn statuses(value: serde_json::Value) -> Vec<ContainerStatus> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn initialized_containers_keeps_the_trailing_waiting_ones_out() {
        let w = json!({"waiting": {}});
        let t = json!({"terminated": {"exitCode": 1}});
        let list = |states: &[&serde_json::Value]| {
            statuses(serde_json::Value::Array(
                states.iter().enumerate().map(|(i, s)| json!({"name": format!("i{i}"), "state": s})).collect(),
            ))
        };
        assert_eq!(initialized_containers(&list(&[&w, &w, &t, &w])), 3);
        assert_eq!(initialized_containers(&list(&[&w, &w])), 1);
        assert_eq!(initialized_containers(&list(&[])), 0);
        let restarted = statuses(
            json!([{"name": "i0", "state": {"waiting": {}}, "lastState": {"terminated": {"exitCode": 0}}}, {"name": "i1", "state": {"waiting": {}}}]),
        );
        assert_eq!(initialized_containers(&restarted), 1);
    }

    #[test]
    fn a_missing_or_empty_restart_policy_is_always() {
        let mut spec = SpecView::default();
        assert_eq!(restart_policy(&spec), RESTART_ALWAYS);
        spec.restart_policy = Some(String::new());
        assert_eq!(restart_policy(&spec), RESTART_ALWAYS);
        spec.restart_policy = Some("Never".into());
        assert_eq!(restart_policy(&spec), "Never");
    }
}
