//! Ready and ContainersReady as 1.35's `generate.go` makes them: 1.27's (logic v2's
//! `generate`), plus sidecars (a restartable init container counts as a container, in
//! spec order before the regular ones, KEP-753) and each condition's
//! `observedGeneration` (the pod's generation, KEP-5067).

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition};
use podstatus_core::{
    CONTAINERS_NOT_READY, ContainersReadiness, POD_READY, POD_SUCCEEDED, SpecView, UNKNOWN_CONTAINER_STATUSES,
    condition, find_condition_in,
};
use podstatus_logic_v2::generate::{
    CONTAINERS_READY, POD_FAILED, READINESS_GATES_NOT_READY, containers_ready_for_terminal_phase,
    pod_ready_for_terminal_phase,
};
use podstatus_logic_v2::go_quote;

use crate::pod_spec::PodSpec135;

/// `GenerateContainersReadyCondition`: over the restartable init containers and then
/// the regular ones, each looked up by name in `statuses` (`None` is Go's nil).
pub fn containers_ready(
    spec: &SpecView,
    pod: &PodSpec135,
    statuses: Option<&[ContainerStatus]>,
    phase: Option<&str>,
) -> PodCondition {
    let generation = pod.observed_generation();
    let Some(statuses) = statuses else {
        return with_generation(
            condition(CONTAINERS_READY, "False", Some(UNKNOWN_CONTAINER_STATUSES), None),
            generation,
        );
    };
    let sidecars = pod.init_containers.iter().filter(|c| c.restartable).map(|c| c.name.as_str());
    let names = sidecars.chain(spec.containers.iter().map(|c| c.name.as_str()));
    let mut readiness = ContainersReadiness::default();
    for name in names {
        match statuses.iter().find(|s| s.name == name) {
            None => readiness.unknown.push(name),
            Some(status) if !status.ready => readiness.unready.push(name),
            Some(_) => {}
        }
    }
    if (phase == Some(POD_SUCCEEDED) && readiness.unknown.is_empty()) || phase == Some(POD_FAILED) {
        return containers_ready_for_terminal(pod, phase);
    }
    let generated = match readiness.message() {
        None => condition(CONTAINERS_READY, "True", None, None),
        Some(message) => condition(CONTAINERS_READY, "False", Some(CONTAINERS_NOT_READY), Some(message)),
    };
    with_generation(generated, generation)
}

/// `GeneratePodReadyCondition`: ContainersReady's status, reason and message unless it
/// is true; then true only when every readiness gate's condition in `conditions` is.
pub fn pod_ready(
    spec: &SpecView,
    pod: &PodSpec135,
    conditions: &[PodCondition],
    statuses: Option<&[ContainerStatus]>,
    phase: Option<&str>,
) -> PodCondition {
    let generation = pod.observed_generation();
    let containers_ready = containers_ready(spec, pod, statuses, phase);
    if containers_ready.status != "True" {
        return PodCondition {
            type_: POD_READY.to_string(),
            observed_generation: generation,
            last_probe_time: None,
            last_transition_time: None,
            ..containers_ready
        };
    }
    let unready: Vec<String> = pod
        .readiness_gates
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

/// `generateContainersReadyConditionForTerminalPhase`, with the pod's generation.
pub fn containers_ready_for_terminal(pod: &PodSpec135, phase: Option<&str>) -> PodCondition {
    with_generation(containers_ready_for_terminal_phase(phase), pod.observed_generation())
}

/// `generatePodReadyConditionForTerminalPhase`, with the pod's generation.
pub fn pod_ready_for_terminal(pod: &PodSpec135, phase: Option<&str>) -> PodCondition {
    with_generation(pod_ready_for_terminal_phase(phase), pod.observed_generation())
}

fn with_generation(condition: PodCondition, generation: Option<i64>) -> PodCondition {
    PodCondition { observed_generation: generation, ..condition }
}

/// Go's `append(status.InitContainerStatuses, status.ContainerStatuses...)`: the init
/// container statuses then the regular ones; nil (None) when there are no init
/// container statuses at all and no regular ones to append.
pub fn all_container_statuses(
    init: Option<&[ContainerStatus]>,
    regular: Option<&[ContainerStatus]>,
) -> Option<Vec<ContainerStatus>> {
    let regular = regular.unwrap_or_default();
    match init {
        None if regular.is_empty() => None,
        init => Some(init.unwrap_or_default().iter().chain(regular).cloned().collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_core::POD_COMPLETED;

    fn cs(name: &str, ready: bool) -> ContainerStatus {
        ContainerStatus { name: name.into(), ready, ..ContainerStatus::default() }
    }

    fn sidecar_pod(generation: i64) -> PodSpec135 {
        let json = format!(
            r#"{{"metadata": {{"generation": {generation}}}, "spec": {{"initContainers": [
                {{"name": "init"}}, {{"name": "proxy", "restartPolicy": "Always"}}]}}}}"#
        );
        PodSpec135::parse(&json).unwrap()
    }

    fn summary(c: &PodCondition) -> (&str, &str, Option<&str>, Option<&str>, Option<i64>) {
        (&c.type_, &c.status, c.reason.as_deref(), c.message.as_deref(), c.observed_generation)
    }

    #[test]
    fn a_sidecar_counts_as_a_container_and_a_plain_init_container_does_not() {
        let spec = SpecView::with_containers(&["app"]);
        let pod = sidecar_pod(2);
        let c = containers_ready(&spec, &pod, Some(&[cs("app", true)]), Some("Running"));
        assert_eq!(
            summary(&c),
            (
                CONTAINERS_READY,
                "False",
                Some(CONTAINERS_NOT_READY),
                Some("containers with unknown status: [proxy]"),
                Some(2)
            )
        );
        let statuses = [cs("init", false), cs("proxy", false), cs("app", true)];
        let c = pod_ready(&spec, &pod, &[], Some(&statuses), Some("Running"));
        assert_eq!(
            summary(&c),
            (POD_READY, "False", Some(CONTAINERS_NOT_READY), Some("containers with unready status: [proxy]"), Some(2))
        );
        let statuses = [cs("init", false), cs("proxy", true), cs("app", true)];
        let c = pod_ready(&spec, &pod, &[], Some(&statuses), Some("Running"));
        assert_eq!(summary(&c), (POD_READY, "True", None, None, Some(2)));
    }

    #[test]
    fn conditions_carry_the_generation_also_when_terminal_or_unknown() {
        let spec = SpecView::with_containers(&["app"]);
        let pod = sidecar_pod(7);
        let c = containers_ready(&spec, &pod, None, Some("Running"));
        assert_eq!(summary(&c), (CONTAINERS_READY, "False", Some(UNKNOWN_CONTAINER_STATUSES), None, Some(7)));
        let statuses = [cs("proxy", true), cs("app", true)];
        let c = pod_ready(&spec, &pod, &[], Some(&statuses), Some(POD_SUCCEEDED));
        assert_eq!(summary(&c), (POD_READY, "False", Some(POD_COMPLETED), None, Some(7)));
        let c = pod_ready_for_terminal(&pod, Some(POD_FAILED));
        assert_eq!(c.observed_generation, Some(7));
        // Generation 0 (absent) is omitted, as Go writes it.
        let c = containers_ready_for_terminal(&sidecar_pod(0), Some(POD_FAILED));
        assert_eq!(c.observed_generation, None);
    }

    #[test]
    fn all_container_statuses_is_nil_only_as_gos_append_is() {
        let a = [cs("a", true)];
        assert_eq!(all_container_statuses(None, None), None);
        assert_eq!(all_container_statuses(None, Some(&[])), None);
        assert_eq!(all_container_statuses(Some(&[]), None), Some(vec![]));
        let all = all_container_statuses(Some(&[cs("i", false)]), Some(&a)).unwrap();
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["i", "a"]);
    }
}
