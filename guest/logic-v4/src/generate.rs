//! Ready and ContainersReady as 1.35's `generate.go` makes them (v1.35.4): every
//! release's (`podstatus_logic::containers_ready_condition`) over the restartable
//! init containers (sidecars, KEP-753), in spec order before the regular ones, each
//! condition with the pod's generation as its `observedGeneration` (KEP-5067).

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition};
use podstatus_core::SpecView;
use podstatus_logic::{containers_ready_condition, pod_ready_condition};

use crate::pod_spec::PodSpec135;

/// `GenerateContainersReadyCondition`: over the restartable init containers and then
/// the regular ones, each looked up by name in `statuses` (`None` is Go's nil).
pub fn containers_ready(
    spec: &SpecView,
    pod: &PodSpec135,
    statuses: Option<&[ContainerStatus]>,
    phase: Option<&str>,
) -> PodCondition {
    let sidecars = pod.init_containers.iter().filter(|c| c.restartable).map(|c| c.name.as_str());
    let names = sidecars.chain(spec.containers.iter().map(|c| c.name.as_str()));
    containers_ready_condition(names, statuses, phase, pod.observed_generation())
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
    let containers_ready = containers_ready(spec, pod, statuses, phase);
    pod_ready_condition(containers_ready, &pod.readiness_gates, conditions, pod.observed_generation())
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
    use podstatus_core::{CONTAINERS_NOT_READY, POD_COMPLETED, POD_READY, POD_SUCCEEDED, UNKNOWN_CONTAINER_STATUSES};
    use podstatus_logic::{
        CONTAINERS_READY, POD_FAILED, containers_ready_for_terminal_phase, pod_ready_for_terminal_phase,
    };

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
        let c = pod_ready_for_terminal_phase(Some(POD_FAILED), pod.observed_generation());
        assert_eq!(c.observed_generation, Some(7));
        // Generation 0 (absent) is omitted, as Go writes it.
        let c = containers_ready_for_terminal_phase(Some(POD_FAILED), sidecar_pod(0).observed_generation());
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
