//! The Ready and ContainersReady conditions as `generate.go` makes them since 1.27:
//! Ready derives from ContainersReady and the pod's readiness gates, and a pod in a
//! terminal phase is not ready whatever its containers say. Which containers count,
//! and the generation a condition carries, are the release's (1.35 counts sidecars and
//! writes the pod's generation).

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition};
use podstatus_core::{
    CONTAINERS_NOT_READY, ContainersReadiness, POD_COMPLETED, POD_READY, POD_SUCCEEDED, UNKNOWN_CONTAINER_STATUSES,
    condition, find_condition_in,
};

use super::go_quote::go_quote;

/// Condition type: every container of the pod is ready.
pub const CONTAINERS_READY: &str = "ContainersReady";
/// The phase of a pod of which some container failed for good.
pub const POD_FAILED: &str = "Failed";
/// Reason: the pod failed, so its containers are not ready.
pub const POD_FAILED_REASON: &str = "PodFailed";
/// Reason: some readiness gate of the pod is not satisfied.
pub const READINESS_GATES_NOT_READY: &str = "ReadinessGatesNotReady";

/// `GenerateContainersReadyCondition` over the containers named `names` (in order),
/// each looked up by name in `statuses` (`None` is Go's nil, which differs from an
/// empty list), for a pod in `phase`; the condition carries `generation`.
pub fn containers_ready_condition<'a>(
    names: impl IntoIterator<Item = &'a str>,
    statuses: Option<&[ContainerStatus]>,
    phase: Option<&str>,
    generation: Option<i64>,
) -> PodCondition {
    let Some(statuses) = statuses else {
        return with_generation(
            condition(CONTAINERS_READY, "False", Some(UNKNOWN_CONTAINER_STATUSES), None),
            generation,
        );
    };
    let mut readiness = ContainersReadiness::default();
    for name in names {
        match statuses.iter().find(|s| s.name == name) {
            None => readiness.unknown.push(name),
            Some(status) if !status.ready => readiness.unready.push(name),
            Some(_) => {}
        }
    }
    if (phase == Some(POD_SUCCEEDED) && readiness.unknown.is_empty()) || phase == Some(POD_FAILED) {
        return containers_ready_for_terminal_phase(phase, generation);
    }
    let generated = match readiness.message() {
        None => condition(CONTAINERS_READY, "True", None, None),
        Some(message) => condition(CONTAINERS_READY, "False", Some(CONTAINERS_NOT_READY), Some(message)),
    };
    with_generation(generated, generation)
}

/// `GeneratePodReadyCondition`: `containers_ready`'s status, reason and message unless
/// it is true; then true only when every readiness gate's condition (looked up in
/// `conditions`) is true. The condition carries `generation`.
pub fn pod_ready_condition(
    containers_ready: PodCondition,
    readiness_gates: &[String],
    conditions: &[PodCondition],
    generation: Option<i64>,
) -> PodCondition {
    if containers_ready.status != "True" {
        return PodCondition {
            type_: POD_READY.to_string(),
            observed_generation: generation,
            last_probe_time: None,
            last_transition_time: None,
            ..containers_ready
        };
    }
    let unready: Vec<String> = readiness_gates
        .iter()
        .filter_map(|gate| match find_condition_in(conditions, gate) {
            None => Some(format!("corresponding condition of pod readiness gate {} does not exist.", go_quote(gate))),
            Some(c) if c.status != "True" => {
                Some(format!("the status of pod readiness gate {} is not \"True\", but {}", go_quote(gate), c.status))
            }
            Some(_) => None,
        })
        .collect();
    let generated = if unready.is_empty() {
        condition(POD_READY, "True", None, None)
    } else {
        condition(POD_READY, "False", Some(READINESS_GATES_NOT_READY), Some(unready.join(", ")))
    };
    with_generation(generated, generation)
}

/// `generateContainersReadyConditionForTerminalPhase`: false, with the phase as reason.
pub fn containers_ready_for_terminal_phase(phase: Option<&str>, generation: Option<i64>) -> PodCondition {
    with_generation(condition(CONTAINERS_READY, "False", terminal_reason(phase), None), generation)
}

/// `generatePodReadyConditionForTerminalPhase`: false, with the phase as reason.
pub fn pod_ready_for_terminal_phase(phase: Option<&str>, generation: Option<i64>) -> PodCondition {
    with_generation(condition(POD_READY, "False", terminal_reason(phase), None), generation)
}

fn with_generation(condition: PodCondition, generation: Option<i64>) -> PodCondition {
    PodCondition { observed_generation: generation, ..condition }
}

fn terminal_reason(phase: Option<&str>) -> Option<&'static str> {
    match phase {
        Some(POD_FAILED) => Some(POD_FAILED_REASON),
        Some(POD_SUCCEEDED) => Some(POD_COMPLETED),
        _ => None,
    }
}
