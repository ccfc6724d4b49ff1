//! Container states in 1.35: the illegal-transition check over init containers too
//! (restartable ones may always restart; a status out of step with the spec is an
//! error), and `hasPodInitialized` with sidecars (`status_manager.go` at v1.35.4:
//! `checkContainerStateTransition`, `hasPodInitialized`). What `terminate-pod` does
//! with a container is every release's (`podstatus_logic`).

use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
use podstatus_core::SpecView;
use podstatus_logic::{RESTART_ALWAYS, RESTART_ON_FAILURE, restart_policy};

use crate::pod_spec::{ContainerRestart, PodSpec135};

/// Why 1.35 refuses a status update: a terminated container reported running again,
/// or an old init container status that does not match the spec at its index.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IllegalTransition {
    /// A regular container that terminated and may not run again.
    #[error("terminated container {0} attempted illegal transition to non-terminated state")]
    Container(String),
    /// An init container (not restartable) that terminated and may not run again.
    #[error("terminated init container {0} attempted illegal transition to non-terminated state")]
    InitContainer(String),
    /// The old status's init container at some index is not the spec's there.
    #[error("found mismatch between pod spec and status, container: {0}")]
    Mismatch(String),
}

/// The two gates of `checkContainerStateTransition` that differ between 1.35 and 1.37:
/// `RestartAllContainersOnContainerExits` (alpha and off in 1.35, beta and on since
/// 1.36); `ContainerRestartRules` is on in both (beta since 1.35).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RestartGates {
    /// `RestartAllContainersOnContainerExits`.
    pub restart_all_containers: bool,
}

/// `checkContainerStateTransition` since 1.35 from `old` to `new`: with restart policy
/// `Always` anything goes, and so (with `RestartAllContainersOnContainerExits`) for a
/// pod any of whose containers has a `RestartAllContainers` rule
/// (`podutil.AllContainersCouldRestart`); otherwise a regular container terminated in
/// `old` (and not failed under `OnFailure`, nor one its own restart policy or rules
/// restart, `podutil.ContainerShouldRestart`) may not be anything but terminated in
/// `new`, and so may no init container except a restartable one. Each old init
/// container status must be the spec's init container at its index.
pub fn check_container_state_transition(
    spec: &SpecView,
    pod: &PodSpec135,
    old: &PodStatus,
    new: &PodStatus,
    gates: RestartGates,
) -> Result<(), IllegalTransition> {
    let policy = restart_policy(spec);
    if policy == RESTART_ALWAYS {
        return Ok(());
    }
    if gates.restart_all_containers && all_containers_could_restart(pod) {
        return Ok(());
    }
    let may_not_restart = |status: &ContainerStatus, specs: &[&ContainerRestart]| {
        let Some(exit) = terminated_exit(status) else {
            return false;
        };
        let failed_under_on_failure = exit != 0 && policy == RESTART_ON_FAILURE;
        let restarted_by_its_own =
            specs.iter().any(|c| c.name == status.name && container_should_restart(c, policy, exit, gates));
        !(failed_under_on_failure || restarted_by_its_own)
    };
    let running_again = |new: Option<&[ContainerStatus]>, name: &str| {
        new.unwrap_or_default().iter().any(|n| n.name == name && terminated_exit(n).is_none())
    };
    let containers: Vec<&ContainerRestart> = pod.containers.iter().collect();
    for old_status in old.container_statuses.iter().flatten().filter(|s| may_not_restart(s, &containers)) {
        if running_again(new.container_statuses.as_deref(), &old_status.name) {
            return Err(IllegalTransition::Container(old_status.name.clone()));
        }
    }
    let init_containers: Vec<&ContainerRestart> = pod.init_containers.iter().map(|c| &c.restart).collect();
    let old_init = old.init_container_statuses.as_deref().unwrap_or_default();
    let names: Vec<&str> = old_init.iter().map(|s| s.name.as_str()).collect();
    for (index, old_status) in old_init.iter().enumerate() {
        let Some(container) = pod.init_container_at(&names, index) else {
            return Err(IllegalTransition::Mismatch(old_status.name.clone()));
        };
        if container.restartable || !may_not_restart(old_status, &init_containers) {
            continue;
        }
        if running_again(new.init_container_statuses.as_deref(), &old_status.name) {
            return Err(IllegalTransition::InitContainer(old_status.name.clone()));
        }
    }
    Ok(())
}

/// `podutil.ContainerShouldRestart`: the first of the container's rules that matches
/// `exit_code` decides when it says `Restart` (or `RestartAllContainers`, with its
/// gate); else the container's own restart policy; else the pod's (`pod_policy`,
/// `Always` when unset). Rules count only with a container restart policy set.
pub fn container_should_restart(
    container: &ContainerRestart,
    pod_policy: &str,
    exit_code: i32,
    gates: RestartGates,
) -> bool {
    if let Some(policy) = &container.policy {
        if let Some(rule) = container.rules.iter().find(|r| r.matches(exit_code)) {
            match rule.action.as_str() {
                RESTART => return true,
                RESTART_ALL_CONTAINERS if gates.restart_all_containers => return true,
                _ => {}
            }
        }
        match policy.as_str() {
            RESTART_ALWAYS => return true,
            RESTART_ON_FAILURE => return exit_code != 0,
            RESTART_NEVER => return false,
            _ => {}
        }
    }
    match pod_policy {
        RESTART_ON_FAILURE => exit_code != 0,
        RESTART_NEVER => false,
        _ => true,
    }
}

/// `podutil.AllContainersCouldRestart`: an init or regular container has a
/// `RestartAllContainers` rule.
pub fn all_containers_could_restart(pod: &PodSpec135) -> bool {
    let init = pod.init_containers.iter().map(|c| &c.restart);
    init.chain(&pod.containers).any(|c| c.rules.iter().any(|r| r.action == RESTART_ALL_CONTAINERS))
}

/// A restart rule's action: restart the container.
const RESTART: &str = "Restart";
/// A restart rule's action: restart every container of the pod in place.
const RESTART_ALL_CONTAINERS: &str = "RestartAllContainers";
/// The restart policy that never restarts.
const RESTART_NEVER: &str = "Never";

/// 1.35's `hasPodInitialized`, judged by the pod's own `status`: 1.27's, except that a
/// last init container that is restartable (a sidecar) has initialized the pod once it
/// runs and has started; one whose status does not match the spec at its index has not.
pub fn has_pod_initialized(spec: &SpecView, pod: &PodSpec135, status: &PodStatus) -> bool {
    if spec.init_containers.is_empty() {
        return true;
    }
    let left_waiting = |s: &ContainerStatus| {
        s.last_state.as_ref().is_some_and(|l| l.terminated.is_some())
            || s.state.as_ref().is_none_or(|state| state.waiting.is_none())
    };
    if status.container_statuses.iter().flatten().any(left_waiting) {
        return true;
    }
    let init = status.init_container_statuses.as_deref().unwrap_or_default();
    let Some(last) = init.last() else {
        return false;
    };
    let names: Vec<&str> = init.iter().map(|s| s.name.as_str()).collect();
    let Some(container) = pod.init_container_at(&names, init.len() - 1) else {
        return false;
    };
    if container.restartable {
        let running = last.state.as_ref().is_some_and(|s| s.running.is_some());
        return running && last.started == Some(true);
    }
    let last_exit = last.last_state.as_ref().and_then(|l| l.terminated.as_ref()).map(|t| t.exit_code);
    last_exit == Some(0) || terminated_exit(last) == Some(0)
}

fn terminated_exit(status: &ContainerStatus) -> Option<i32> {
    status.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code)
}
