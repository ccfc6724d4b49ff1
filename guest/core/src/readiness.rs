//! What every version's Ready condition is made of: condition types and reasons, and
//! which of a spec's containers are unready or have no status.

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition};

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
