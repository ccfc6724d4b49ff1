//! Whether a terminated pod's resources are reclaimed, so its API object may go.

use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::{Pod, PodStatus};

/// Answers "are this pod's volumes, containers and cgroups gone from the node?".
pub trait DeletionSafety: Send + Sync {
    /// True once `pod`'s resources are reclaimed, given the kubelet's `status` for it.
    fn pod_resources_are_reclaimed(&self, pod: &Pod, status: &PodStatus) -> bool;

    /// True while a container of `pod` may still run on the node (the status manager
    /// then delays the pod's terminal phase). By default: while its resources are not
    /// reclaimed by the pod's own status.
    fn pod_could_have_running_containers(&self, pod: &Pod) -> bool {
        !self.pod_resources_are_reclaimed(pod, &pod.status.clone().unwrap_or_default())
    }
}

/// A fixed answer that can be changed at any time (replay's `deletion_safe`).
#[derive(Debug)]
pub struct FixedDeletionSafety(AtomicBool);

impl FixedDeletionSafety {
    /// Always answers `safe` until told otherwise.
    pub fn new(safe: bool) -> Self {
        FixedDeletionSafety(AtomicBool::new(safe))
    }

    /// Changes the answer.
    pub fn set(&self, safe: bool) {
        self.0.store(safe, Ordering::SeqCst);
    }
}

impl DeletionSafety for FixedDeletionSafety {
    fn pod_resources_are_reclaimed(&self, _pod: &Pod, _status: &PodStatus) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The replay contract: the terminal phase is delayed exactly when the answer is
    /// "not safe".
    fn pod_could_have_running_containers(&self, _pod: &Pod) -> bool {
        !self.0.load(Ordering::SeqCst)
    }
}

/// The kubelet's own rule for a node with nothing else to wait for: resources are
/// reclaimed once no container of the pod is still running or waiting to start.
#[derive(Debug, Default)]
pub struct ContainersStopped;

impl DeletionSafety for ContainersStopped {
    fn pod_resources_are_reclaimed(&self, _pod: &Pod, status: &PodStatus) -> bool {
        let all = status.container_statuses.iter().flatten().chain(status.init_container_statuses.iter().flatten());
        all.into_iter().all(|c| c.state.as_ref().is_none_or(|s| s.running.is_none() && s.waiting.is_none()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_answer_changes_when_set() {
        let safety = FixedDeletionSafety::new(true);
        let (pod, status) = (Pod::default(), PodStatus::default());
        assert!(safety.pod_resources_are_reclaimed(&pod, &status));
        safety.set(false);
        assert!(!safety.pod_resources_are_reclaimed(&pod, &status));
    }

    #[test]
    fn containers_stopped_waits_for_running_containers() {
        let running: PodStatus = serde_json::from_value(serde_json::json!({
            "containerStatuses": [{"name": "a", "state": {"running": {}}}, {"name": "b", "state": {"terminated": {"exitCode": 0}}}]
        }))
        .unwrap();
        assert!(!ContainersStopped.pod_resources_are_reclaimed(&Pod::default(), &running));
        let stopped: PodStatus = serde_json::from_value(serde_json::json!({
            "containerStatuses": [{"name": "b", "state": {"terminated": {"exitCode": 0}}}]
        }))
        .unwrap();
        assert!(ContainersStopped.pod_resources_are_reclaimed(&Pod::default(), &stopped));
    }
}
