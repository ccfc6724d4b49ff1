//! Container states at the end of a pod's life, and which changes of them are legal.

use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus};
use podstatus_core::SpecView;

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

/// A container that terminated and may not run again was reported running (or waiting).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("terminated container {container} attempted illegal transition to non-terminated state")]
pub struct IllegalTransition {
    /// The container's name.
    pub container: String,
}

/// `checkContainerStateTransition`: a container terminated in `old` may not be
/// anything but terminated in `new`, unless the restart policy lets it run again
/// (`Always`; `OnFailure` after a non-zero exit). Says which container broke the rule.
pub fn check_container_state_transition(
    old: Option<&[ContainerStatus]>,
    new: Option<&[ContainerStatus]>,
    restart_policy: &str,
) -> Result<(), IllegalTransition> {
    if restart_policy == RESTART_ALWAYS {
        return Ok(());
    }
    for old_status in old.unwrap_or_default() {
        let Some(old_terminated) = terminated(old_status) else {
            continue;
        };
        if old_terminated.exit_code != 0 && restart_policy == RESTART_ON_FAILURE {
            continue;
        }
        if let Some(new_status) =
            new.unwrap_or_default().iter().find(|n| n.name == old_status.name && terminated(n).is_none())
        {
            return Err(IllegalTransition { container: new_status.name.clone() });
        }
    }
    Ok(())
}

/// `hasPodInitialized`, judged by the pod's own `status`: a pod without init containers
/// is initialized, and so is one with a regular container that has left waiting (or
/// ever terminated), or whose last init container has exited 0.
pub fn has_pod_initialized(spec: &SpecView, status: &PodStatus) -> bool {
    if spec.init_containers.is_empty() {
        return true;
    }
    if status.container_statuses.iter().flatten().any(|s| last_terminated(s).is_some() || waiting(s).is_none()) {
        return true;
    }
    let Some(last) = status.init_container_statuses.as_deref().and_then(<[_]>::last) else {
        return false;
    };
    last_terminated(last).is_some_and(|t| t.exit_code == 0) || terminated(last).is_some_and(|t| t.exit_code == 0)
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

/// What `terminate-pod` does to the containers: once the pod has initialized (judged by
/// `pod_status`), every container not terminated becomes terminated with an unknown
/// state (exit code 137); so do the init containers that have attempted to start. A
/// container that has not attempted to start keeps its state, and a terminated one
/// keeps its own.
pub fn terminate_containers(spec: &SpecView, pod_status: &PodStatus, status: &mut PodStatus) {
    if has_pod_initialized(spec, pod_status) {
        status.container_statuses.iter_mut().flatten().for_each(mark_unknown_unless_terminated);
    }
    if let Some(init) = status.init_container_statuses.as_mut() {
        let started = initialized_containers(init);
        init[..started].iter_mut().for_each(mark_unknown_unless_terminated);
    }
}

/// Marks one container terminated with an unknown state (exit code 137) unless it is
/// terminated already (public for logic v4, whose `terminate-pod` differs only in when
/// the pod has initialized).
pub fn mark_unknown_unless_terminated(status: &mut ContainerStatus) {
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

fn terminated(status: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    status.state.as_ref()?.terminated.as_ref()
}

fn waiting(status: &ContainerStatus) -> Option<&k8s_openapi::api::core::v1::ContainerStateWaiting> {
    status.state.as_ref()?.waiting.as_ref()
}

fn last_terminated(status: &ContainerStatus) -> Option<&ContainerStateTerminated> {
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
    fn transitions_out_of_terminated_follow_the_restart_policy() {
        let old = statuses(json!([{"name": "ok", "state": {"terminated": {"exitCode": 0}}},
                                  {"name": "bad", "state": {"terminated": {"exitCode": 2}}}]));
        let running = |name: &str| statuses(json!([{"name": name, "state": {"running": {}}}]));
        assert!(check_container_state_transition(Some(&old), Some(&running("ok")), RESTART_ALWAYS).is_ok());
        assert!(check_container_state_transition(Some(&old), Some(&running("bad")), RESTART_ON_FAILURE).is_ok());
        let err = check_container_state_transition(Some(&old), Some(&running("ok")), RESTART_ON_FAILURE).unwrap_err();
        assert_eq!(err.to_string(), "terminated container ok attempted illegal transition to non-terminated state");
        assert!(check_container_state_transition(Some(&old), Some(&running("bad")), "Never").is_err());
        // A container that disappears, or stays terminated, is no illegal transition.
        assert!(check_container_state_transition(Some(&old), Some(&running("other")), "Never").is_ok());
        assert!(check_container_state_transition(Some(&old), None, "Never").is_ok());
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
