//! The classes of final-state differences between logic v4 (Kubernetes 1.35) and v2
//! (1.27) that are 1.35's own, by design, so [`crate::FinalRules::Kubelet135`] does not
//! compare a trace that meets one ([`meets_a_135_class`]):
//!
//! 1. Init container statuses that are not the spec's, in its order (below).
//! 2. Readiness of an init container: 1.35's `SetContainerReadiness` finds the
//!    container among the init container statuses too (KEP-753, a sidecar's probe), and
//!    regenerates Ready and ContainersReady; 1.27 looks only at regular containers and
//!    ignores it as unknown.
//!
//! 1.35's `checkContainerStateTransition` walks the cached status's init container
//! statuses by index against the spec's init containers (`GetContainerByIndex`: the
//! i-th status must name the i-th container) and refuses the update ("found mismatch
//! between pod spec and status", KEP-753's restartable init container check) when one
//! does not; 1.27 looks only at terminated containers by name. A kubelet never reports a container its pod does not declare, but the fuzzer's
//! generator and shrinker do (a status kept while the spec lost its init containers), and
//! there the two versions end differently by design; without this class, shrinking any
//! difference of v4 against v2 lands on it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podstatus_replay::{PodRef, Step, Trace};

/// Whether `trace` meets one of 1.35's own classes.
pub fn meets_a_135_class(trace: &Trace) -> bool {
    let statuses = statuses_of(trace);
    names_undeclared_init_containers(&statuses) || readies_an_init_container(trace, &statuses)
}

/// Every status the trace holds or reports, by pod UID, with every version of each
/// pod's spec.
struct Statuses {
    pods: Vec<Pod>,
    reported: Vec<(String, PodStatus)>,
}

impl Statuses {
    fn all(&self) -> impl Iterator<Item = (&str, &PodStatus)> {
        let held = self
            .pods
            .iter()
            .filter_map(|pod| Some((pod.metadata.uid.as_deref().unwrap_or_default(), pod.status.as_ref()?)));
        held.chain(self.reported.iter().map(|(uid, status)| (uid.as_str(), status)))
    }
}

/// Class 2: a `set-container-readiness` of a container ID some init container status
/// of the pod carries.
fn readies_an_init_container(trace: &Trace, statuses: &Statuses) -> bool {
    trace.steps.iter().any(|step| match step {
        Step::SetContainerReadiness { uid, container_id, .. } => statuses.all().any(|(of, status)| {
            of == uid
                && status
                    .init_container_statuses
                    .iter()
                    .flatten()
                    .any(|s| s.container_id.as_deref() == Some(container_id))
        }),
        _ => false,
    })
}

fn statuses_of(trace: &Trace) -> Statuses {
    let mut pods: Vec<Pod> = trace.apiserver.iter().chain(&trace.pod_manager).cloned().collect();
    let mut reported: Vec<(String, PodStatus)> = Vec::new();
    for step in &trace.steps {
        match step {
            Step::PodManagerAdd { pod } | Step::ApiserverPut { pod } => pods.push(pod.clone()),
            Step::SetPodStatus { pod, status } => {
                let uid = match pod {
                    PodRef::Uid(uid) => uid.clone(),
                    PodRef::Object(json) => match serde_json::from_str::<Pod>(json) {
                        Ok(object) => {
                            let uid = object.metadata.uid.clone().unwrap_or_default();
                            pods.push(object);
                            uid
                        }
                        Err(_) => continue,
                    },
                };
                if let Ok(status) = serde_json::from_str::<PodStatus>(status) {
                    reported.push((uid, status));
                }
            }
            _ => {}
        }
    }
    Statuses { pods, reported }
}

/// Class 1: a status with an init container status that no version of its pod's spec
/// in the trace declares at that index.
fn names_undeclared_init_containers(statuses: &Statuses) -> bool {
    // Every spec version's init containers, by UID.
    let mut declared: BTreeMap<&str, Vec<Vec<&str>>> = BTreeMap::new();
    for pod in &statuses.pods {
        let names = pod.spec.iter().flat_map(|s| s.init_containers.iter().flatten()).map(|c| c.name.as_str());
        declared.entry(pod.metadata.uid.as_deref().unwrap_or_default()).or_default().push(names.collect());
    }
    statuses.all().any(|(uid, status)| {
        let specs = declared.get(uid).map(Vec::as_slice).unwrap_or_default();
        // Upstream's `GetContainerByIndex`: the i-th status must be the i-th container.
        status
            .init_container_statuses
            .iter()
            .flatten()
            .enumerate()
            .any(|(i, s)| !specs.iter().any(|names| names.get(i) == Some(&s.name.as_str())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn trace(init_containers: serde_json::Value) -> Trace {
        Trace::from_value(json!({
            "pod_manager": [{"metadata": {"name": "a", "namespace": "ns", "uid": "u"},
                             "spec": {"containers": [{"name": "app"}], "initContainers": init_containers}}],
            "steps": [{"op": "set-pod-status", "pod": "u", "status": {"initContainerStatuses": [{"name": "setup"}]}}],
        }))
        .unwrap()
    }

    #[test]
    fn a_status_of_an_init_container_the_spec_lacks_is_told() {
        assert!(names_undeclared_init_containers(&statuses_of(&trace(json!([])))));
        assert!(names_undeclared_init_containers(&statuses_of(&trace(json!([{"name": "other"}])))));
        assert!(!names_undeclared_init_containers(&statuses_of(&trace(json!([{"name": "setup"}])))));
        // Declared, but not first: upstream matches statuses to containers by index.
        assert!(names_undeclared_init_containers(&statuses_of(&trace(json!([{"name": "other"}, {"name": "setup"}])))));
        assert!(!names_undeclared_init_containers(&statuses_of(&trace(json!([{"name": "setup"}, {"name": "other"}])))));
    }

    #[test]
    fn readiness_of_an_init_container_is_told() {
        let with_step = |container_id: &str| {
            Trace::from_value(json!({
                "pod_manager": [{"metadata": {"name": "a", "namespace": "ns", "uid": "u"},
                                 "spec": {"containers": [{"name": "app"}], "initContainers": [{"name": "setup"}]}}],
                "steps": [
                    {"op": "set-pod-status", "pod": "u", "status": {
                        "initContainerStatuses": [{"name": "setup", "containerID": "containerd://s"}],
                        "containerStatuses": [{"name": "app", "containerID": "containerd://a"}]}},
                    {"op": "set-container-readiness", "uid": "u", "container_id": container_id, "ready": true},
                ],
            }))
            .unwrap()
        };
        assert!(meets_a_135_class(&with_step("containerd://s")));
        assert!(!meets_a_135_class(&with_step("containerd://a")));
    }
}
