//! The 2017 Ready condition, generated from the containers' readiness alone.

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition};
use podstatus_core::{
    CONTAINERS_NOT_READY, ContainersReadiness, POD_COMPLETED, POD_READY, POD_SUCCEEDED, SpecView,
    UNKNOWN_CONTAINER_STATUSES, condition,
};

/// The Ready condition for a pod with `spec`, given its container statuses (`None` is
/// Go's nil: no statuses reported at all, which differs from an empty list) and phase.
pub fn generate_pod_ready_condition(
    spec: &SpecView,
    container_statuses: Option<&[ContainerStatus]>,
    phase: Option<&str>,
) -> PodCondition {
    let Some(statuses) = container_statuses else {
        return condition(POD_READY, "False", Some(UNKNOWN_CONTAINER_STATUSES), None);
    };
    let readiness = ContainersReadiness::of(spec, statuses);
    if phase == Some(POD_SUCCEEDED) && readiness.unknown.is_empty() {
        return condition(POD_READY, "False", Some(POD_COMPLETED), None);
    }
    match readiness.message() {
        None => condition(POD_READY, "True", None, None),
        Some(message) => condition(POD_READY, "False", Some(CONTAINERS_NOT_READY), Some(message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cs(name: &str, ready: bool) -> ContainerStatus {
        ContainerStatus { name: name.into(), ready, ..ContainerStatus::default() }
    }

    fn summary(c: &PodCondition) -> (String, Option<String>, Option<String>) {
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    #[test]
    fn nil_statuses_are_unknown_but_empty_ones_are_not() {
        let c = generate_pod_ready_condition(&SpecView::with_containers(&["a"]), None, Some("Running"));
        assert_eq!(summary(&c), ("False".into(), Some(UNKNOWN_CONTAINER_STATUSES.into()), None));
        let c = generate_pod_ready_condition(&SpecView::with_containers(&["a"]), Some(&[]), Some("Running"));
        assert_eq!(c.message.as_deref(), Some("containers with unknown status: [a]"));
    }

    #[test]
    fn messages_list_unknown_then_unready_in_spec_order() {
        let statuses = [cs("c", false), cs("b", true), cs("a", false)];
        let c = generate_pod_ready_condition(&SpecView::with_containers(&["a", "x", "c", "y"]), Some(&statuses), None);
        assert_eq!(
            summary(&c),
            (
                "False".into(),
                Some(CONTAINERS_NOT_READY.into()),
                Some("containers with unknown status: [x y], containers with unready status: [a c]".into())
            )
        );
        assert_eq!(c.type_, POD_READY);
    }

    #[test]
    fn succeeded_pods_are_completed_unless_a_container_is_unknown() {
        let c = generate_pod_ready_condition(
            &SpecView::with_containers(&["a"]),
            Some(&[cs("a", false)]),
            Some(POD_SUCCEEDED),
        );
        assert_eq!(c.reason.as_deref(), Some(POD_COMPLETED));
        let c = generate_pod_ready_condition(
            &SpecView::with_containers(&["a", "b"]),
            Some(&[cs("a", true)]),
            Some(POD_SUCCEEDED),
        );
        assert_eq!(c.reason.as_deref(), Some(CONTAINERS_NOT_READY));
    }

    #[test]
    fn all_ready_is_true_without_reason() {
        let c = generate_pod_ready_condition(
            &SpecView::with_containers(&["a", "b"]),
            Some(&[cs("b", true), cs("a", true)]),
            Some("Running"),
        );
        assert_eq!(summary(&c), ("True".into(), None, None));
    }
}
