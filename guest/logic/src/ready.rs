//! The pod's Ready condition, generated from its containers' readiness.

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodStatus};

use crate::pod::SpecView;

/// Condition type: the pod can serve requests.
pub const POD_READY: &str = "Ready";
/// Condition type: every init container has completed.
pub const POD_INITIALIZED: &str = "Initialized";
/// Reason: the kubelet has no container statuses for the pod yet.
pub const UNKNOWN_CONTAINER_STATUSES: &str = "UnknownContainerStatuses";
/// Reason: the pod succeeded; its containers have all exited.
pub const POD_COMPLETED: &str = "PodCompleted";
/// Reason: some container is unready or has no status.
pub const CONTAINERS_NOT_READY: &str = "ContainersNotReady";
/// The phase of a pod whose containers all exited successfully.
pub const POD_SUCCEEDED: &str = "Succeeded";

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

/// Which of a spec's containers have no status and which are not ready, in spec order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ContainersReadiness<'a> {
    /// Containers with no status of their name.
    pub unknown: Vec<&'a str>,
    /// Containers whose status says not ready.
    pub unready: Vec<&'a str>,
}

impl<'a> ContainersReadiness<'a> {
    /// The readiness of `spec`'s containers by `statuses` (the first status of each name).
    pub fn of(spec: &'a SpecView, statuses: &[ContainerStatus]) -> Self {
        let mut readiness = ContainersReadiness::default();
        for container in &spec.containers {
            match statuses.iter().find(|s| s.name == container.name) {
                None => readiness.unknown.push(container.name.as_str()),
                Some(status) if !status.ready => readiness.unready.push(container.name.as_str()),
                Some(_) => {}
            }
        }
        readiness
    }

    /// The kubelet's message, `containers with unknown status: [a b], containers with
    /// unready status: [c]`, or None when every container is ready.
    pub fn message(&self) -> Option<String> {
        let mut messages = Vec::new();
        if !self.unknown.is_empty() {
            messages.push(format!("containers with unknown status: {}", go_string_slice(&self.unknown)));
        }
        if !self.unready.is_empty() {
            messages.push(format!("containers with unready status: {}", go_string_slice(&self.unready)));
        }
        (!messages.is_empty()).then(|| messages.join(", "))
    }
}

/// The index and condition of the first condition of `type_`, as `GetPodCondition`.
pub fn find_condition_mut<'a>(status: &'a mut PodStatus, type_: &str) -> Option<&'a mut PodCondition> {
    status.conditions.iter_mut().flatten().find(|c| c.type_ == type_)
}

/// The first condition of `type_`, read-only.
pub fn find_condition<'a>(status: &'a PodStatus, type_: &str) -> Option<&'a PodCondition> {
    status.conditions.iter().flatten().find(|c| c.type_ == type_)
}

/// Go's `%s` of a `[]string`: `[a b c]`.
fn go_string_slice(names: &[&str]) -> String {
    format!("[{}]", names.join(" "))
}

/// A condition of `type_` with no times set (the status manager sets them).
pub fn condition(type_: &str, status: &str, reason: Option<&str>, message: Option<String>) -> PodCondition {
    PodCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.map(str::to_string),
        message,
        ..PodCondition::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::NamedView;

    fn spec(names: &[&str]) -> SpecView {
        SpecView {
            containers: names.iter().map(|n| NamedView { name: n.to_string() }).collect(),
            ..SpecView::default()
        }
    }

    fn cs(name: &str, ready: bool) -> ContainerStatus {
        ContainerStatus { name: name.into(), ready, ..ContainerStatus::default() }
    }

    fn summary(c: &PodCondition) -> (String, Option<String>, Option<String>) {
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    #[test]
    fn nil_statuses_are_unknown_but_empty_ones_are_not() {
        let c = generate_pod_ready_condition(&spec(&["a"]), None, Some("Running"));
        assert_eq!(summary(&c), ("False".into(), Some(UNKNOWN_CONTAINER_STATUSES.into()), None));
        let c = generate_pod_ready_condition(&spec(&["a"]), Some(&[]), Some("Running"));
        assert_eq!(c.message.as_deref(), Some("containers with unknown status: [a]"));
    }

    #[test]
    fn messages_list_unknown_then_unready_in_spec_order() {
        let statuses = [cs("c", false), cs("b", true), cs("a", false)];
        let c = generate_pod_ready_condition(&spec(&["a", "x", "c", "y"]), Some(&statuses), None);
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
        let c = generate_pod_ready_condition(&spec(&["a"]), Some(&[cs("a", false)]), Some(POD_SUCCEEDED));
        assert_eq!(c.reason.as_deref(), Some(POD_COMPLETED));
        let c = generate_pod_ready_condition(&spec(&["a", "b"]), Some(&[cs("a", true)]), Some(POD_SUCCEEDED));
        assert_eq!(c.reason.as_deref(), Some(CONTAINERS_NOT_READY));
    }

    #[test]
    fn all_ready_is_true_without_reason() {
        let c =
            generate_pod_ready_condition(&spec(&["a", "b"]), Some(&[cs("b", true), cs("a", true)]), Some("Running"));
        assert_eq!(summary(&c), ("True".into(), None, None));
    }
}
