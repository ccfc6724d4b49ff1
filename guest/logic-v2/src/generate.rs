//! The Ready and ContainersReady conditions as 1.27's `generate.go` makes them: over
//! the regular containers, from their statuses, with no generation (the skeleton every
//! release shares is `podstatus_logic::containers_ready_condition`).
//!
//! v1's Ready condition (`podstatus-logic-v1`'s `ready`) is the 2017 one. 1.27 derives
//! Ready from ContainersReady, adds the pod's readiness gates, and reports a failed pod
//! as not ready whatever its containers say.

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodReadinessGate};
use podstatus_core::{JsonError, SpecView};
use podstatus_logic::{containers_ready_condition, pod_ready_condition};
use serde::Deserialize;

/// `GenerateContainersReadyCondition` of 1.27: ContainersReady for a pod with `spec`,
/// over its regular containers, given their statuses (`None` is Go's nil, which differs
/// from an empty list) and the pod's phase.
pub fn generate_containers_ready_condition(
    spec: &SpecView,
    container_statuses: Option<&[ContainerStatus]>,
    phase: Option<&str>,
) -> PodCondition {
    let names = spec.containers.iter().map(|c| c.name.as_str());
    containers_ready_condition(names, container_statuses, phase, None)
}

/// `GeneratePodReadyCondition` of 1.27: Ready is ContainersReady unless that is true,
/// and then true only when every readiness gate's condition (looked up in
/// `conditions`) is true.
pub fn generate_pod_ready_condition(
    spec: &SpecView,
    readiness_gates: &[String],
    conditions: &[PodCondition],
    container_statuses: Option<&[ContainerStatus]>,
    phase: Option<&str>,
) -> PodCondition {
    let containers_ready = generate_containers_ready_condition(spec, container_statuses, phase);
    pod_ready_condition(containers_ready, readiness_gates, conditions, None)
}

/// The condition types of the pod's readiness gates (`spec.readinessGates`), which
/// `podstatus_core::SpecView` does not read: only a readiness change needs them.
pub fn readiness_gates(pod_json: &str) -> Result<Vec<String>, JsonError> {
    #[derive(Default, Deserialize)]
    #[serde(default)]
    struct Pod {
        spec: Option<Spec>,
    }
    #[derive(Default, Deserialize)]
    #[serde(default, rename_all = "camelCase")]
    struct Spec {
        readiness_gates: Option<Vec<PodReadinessGate>>,
    }
    let pod: Pod = serde_json::from_str(pod_json).map_err(|e| JsonError::new(format!("spec.readinessGates: {e}")))?;
    let gates = pod.spec.and_then(|s| s.readiness_gates).unwrap_or_default();
    Ok(gates.into_iter().map(|g| g.condition_type).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_core::{CONTAINERS_NOT_READY, POD_COMPLETED, POD_READY, POD_SUCCEEDED, UNKNOWN_CONTAINER_STATUSES};
    use podstatus_logic::{CONTAINERS_READY, POD_FAILED, POD_FAILED_REASON, READINESS_GATES_NOT_READY};

    fn cs(name: &str, ready: bool) -> ContainerStatus {
        ContainerStatus { name: name.into(), ready, ..ContainerStatus::default() }
    }

    fn summary(c: &PodCondition) -> (&str, &str, Option<&str>, Option<&str>) {
        (&c.type_, &c.status, c.reason.as_deref(), c.message.as_deref())
    }

    #[test]
    fn containers_ready_follows_generate_go() {
        let s = SpecView::with_containers(&["a", "b"]);
        let c = generate_containers_ready_condition(&s, None, Some("Running"));
        assert_eq!(summary(&c), (CONTAINERS_READY, "False", Some(UNKNOWN_CONTAINER_STATUSES), None));
        let c = generate_containers_ready_condition(&s, Some(&[cs("b", false)]), Some("Running"));
        assert_eq!(
            summary(&c),
            (
                CONTAINERS_READY,
                "False",
                Some(CONTAINERS_NOT_READY),
                Some("containers with unknown status: [a], containers with unready status: [b]")
            )
        );
        let all_ready = [cs("a", true), cs("b", true)];
        let c = generate_containers_ready_condition(&s, Some(&all_ready), Some("Running"));
        assert_eq!(summary(&c), (CONTAINERS_READY, "True", None, None));
        let c = generate_containers_ready_condition(&s, Some(&all_ready), Some(POD_SUCCEEDED));
        assert_eq!(summary(&c), (CONTAINERS_READY, "False", Some(POD_COMPLETED), None));
        let c = generate_containers_ready_condition(&s, Some(&all_ready), Some(POD_FAILED));
        assert_eq!(summary(&c), (CONTAINERS_READY, "False", Some(POD_FAILED_REASON), None));
        // Succeeded with an unknown container is not completed.
        let c = generate_containers_ready_condition(&s, Some(&[cs("a", true)]), Some(POD_SUCCEEDED));
        assert_eq!(c.reason.as_deref(), Some(CONTAINERS_NOT_READY));
    }

    #[test]
    fn ready_copies_containers_ready_then_checks_readiness_gates() {
        let s = SpecView::with_containers(&["a"]);
        let gates = vec!["example.com/lb".to_string(), "example.com/dns".to_string()];
        let c = generate_pod_ready_condition(&s, &gates, &[], Some(&[cs("a", false)]), Some("Running"));
        assert_eq!(
            summary(&c),
            (POD_READY, "False", Some(CONTAINERS_NOT_READY), Some("containers with unready status: [a]"))
        );

        let conditions =
            [PodCondition { type_: "example.com/lb".into(), status: "False".into(), ..Default::default() }];
        let c = generate_pod_ready_condition(&s, &gates, &conditions, Some(&[cs("a", true)]), Some("Running"));
        assert_eq!(
            summary(&c),
            (
                POD_READY,
                "False",
                Some(READINESS_GATES_NOT_READY),
                Some(
                    "the status of pod readiness gate \"example.com/lb\" is not \"True\", but False, \
                     corresponding condition of pod readiness gate \"example.com/dns\" does not exist."
                )
            )
        );
        let conditions = [
            PodCondition { type_: "example.com/lb".into(), status: "True".into(), ..Default::default() },
            PodCondition { type_: "example.com/dns".into(), status: "True".into(), ..Default::default() },
        ];
        let c = generate_pod_ready_condition(&s, &gates, &conditions, Some(&[cs("a", true)]), Some("Running"));
        assert_eq!(summary(&c), (POD_READY, "True", None, None));
    }

    #[test]
    fn readiness_gates_are_read_from_the_pod() {
        let pod = r#"{"spec": {"readinessGates": [{"conditionType": "a"}, {"conditionType": "b"}]}}"#;
        assert_eq!(readiness_gates(pod).unwrap(), ["a", "b"]);
        assert_eq!(readiness_gates(r#"{"spec": {"readinessGates": null}}"#).unwrap(), Vec::<String>::new());
        assert_eq!(readiness_gates(r#"{"metadata": {}}"#).unwrap(), Vec::<String>::new());
        assert!(readiness_gates(r#"{"spec": {"readinessGates": 5}}"#).is_err());
    }
}
