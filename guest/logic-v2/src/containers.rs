//! Container states in 1.27: which changes of them are legal, and when a pod has
//! initialized (`status_manager.go` at 1.27: `checkContainerStateTransition`,
//! `hasPodInitialized`).

use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
use podstatus_core::SpecView;
use podstatus_logic::{RESTART_ALWAYS, RESTART_ON_FAILURE, last_terminated, terminated, waiting};

/// A container that terminated and may not run again was reported running (or waiting).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("terminated container {container} attempted illegal transition to non-terminated state")]
pub struct IllegalTransition {
    /// The container's name.
    pub container: String,
}

/// `checkContainerStateTransition` of 1.27, over one list of statuses: a container
/// terminated in `old` may not be anything but terminated in `new`, unless the restart
/// policy lets it run again (`Always`; `OnFailure` after a non-zero exit). Says which
/// container broke the rule. 1.27 applies it to the regular and the init containers
/// alike.
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

/// `hasPodInitialized` of 1.27, judged by the pod's own `status`: a pod without init
/// containers is initialized, and so is one with a regular container that has left
/// waiting (or ever terminated), or whose last init container has exited 0.
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn statuses(value: serde_json::Value) -> Vec<ContainerStatus> {
        serde_json::from_value(value).unwrap()
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
}
