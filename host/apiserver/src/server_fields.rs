//! What kube-apiserver itself writes into a pod, and this server with it: the
//! `metadata.generation` (1 at creation, one more for each change of the spec; a
//! deletion mark adds one in the store) and the `status.qosClass` computed from the
//! containers' resources at creation and immutable after. A 1.35 kubelet reads both:
//! it reports `observedGeneration`, and writes back the QoS class the server computed
//! (another one is refused).
//!
//! Not done: kube-apiserver's v1 conversion fills `status.podIPs` from `podIP` when a
//! writer gives only `podIP`; here a status is stored as written, which `podstatus
//! simulate`'s check relies on (it compares what the plugin wrote with what the server
//! holds).

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::status_body::{Cause, Failure};

/// The QoS class kube-apiserver computes for a pod (its `ComputePodQOS`): from the
/// pod-level resources when the spec has them, else from every container and init
/// container. A request defaults to the limit of the same resource, as the API's
/// defaulting makes it. `Guaranteed` when CPU and memory are limited everywhere and
/// every request equals its limit (compared per container; kube-apiserver compares the
/// sums, which only differs for containers that over- and under-request by the same
/// amount), `BestEffort` when nothing requests or limits CPU or memory, else
/// `Burstable`.
pub(crate) fn qos_class(spec: Option<&PodSpec>) -> &'static str {
    let Some(spec) = spec else { return "BestEffort" };
    let pod_level = spec.resources.as_ref().filter(|r| r.requests.is_some() || r.limits.is_some());
    let resources: Vec<&ResourceRequirements> = match pod_level {
        Some(resources) => vec![resources],
        None => spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .filter_map(|container: &Container| container.resources.as_ref())
            .collect(),
    };
    let (mut any, mut guaranteed) = (false, true);
    let all_containers = pod_level.is_some()
        || spec.containers.iter().chain(spec.init_containers.iter().flatten()).all(|c| c.resources.is_some());
    if !all_containers {
        guaranteed = false;
    }
    for requirements in resources {
        let limit = |name: &str| requirements.limits.as_ref().and_then(|l| l.get(name)).filter(|q| !is_zero(q));
        let request = |name: &str| {
            requirements.requests.as_ref().and_then(|r| r.get(name)).filter(|q| !is_zero(q)).or(limit(name))
        };
        for name in ["cpu", "memory"] {
            any |= request(name).is_some() || limit(name).is_some();
            match (request(name), limit(name)) {
                (Some(request), Some(limit)) if podstatus_core::quantities_equal(request, limit) => {}
                _ => guaranteed = false,
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

fn is_zero(quantity: &Quantity) -> bool {
    podstatus_core::go_canonical(quantity).is_some_and(|canonical| canonical == "0")
}

/// A new pod: generation 1, the computed QoS class.
pub(crate) fn on_create(pod: &mut Pod) {
    pod.metadata.generation = Some(1);
    let qos = qos_class(pod.spec.as_ref());
    pod.status.get_or_insert_with(PodStatus::default).qos_class = Some(qos.to_owned());
}

/// An update of the pod (not its status): the generation is the stored one, and one
/// more when the spec changed.
pub(crate) fn on_update(stored: &Pod, updated: &mut Pod) {
    updated.metadata.generation = match stored.metadata.generation {
        Some(generation) if stored.spec != updated.spec => Some(generation + 1),
        kept => kept,
    };
}

/// A status written over the stored status of the pod `name`: a QoS class left out is
/// the stored one, another one is refused (422, as kube-apiserver refuses it).
pub(crate) fn on_status_write(name: &str, stored: Option<&PodStatus>, status: &mut PodStatus) -> Result<(), Failure> {
    let kept = stored.and_then(|s| s.qos_class.as_deref()).filter(|q| !q.is_empty());
    match (status.qos_class.as_deref().filter(|q| !q.is_empty()), kept) {
        (None, Some(kept)) => status.qos_class = Some(kept.to_owned()),
        (Some(new), Some(kept)) if new != kept => {
            return Err(Failure::invalid(name, vec![Cause::invalid("status.qosClass", new, "field is immutable")]));
        }
        _ => {}
    }
    Ok(())
}

/// A pod's resourceVersion as a number.
pub(crate) fn version_of(pod: &Pod) -> Option<u64> {
    pod.metadata.resource_version.as_deref().and_then(|version| version.parse().ok())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(value: serde_json::Value) -> PodSpec {
        serde_json::from_value(value).expect("a spec")
    }

    #[test]
    fn qos_classes_are_computed_as_kube_apiserver_computes_them() {
        let none = spec(json!({"containers": [{"name": "a"}]}));
        assert_eq!(qos_class(Some(&none)), "BestEffort");
        let limits_only =
            spec(json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}));
        assert_eq!(qos_class(Some(&limits_only)), "Guaranteed", "requests default to limits");
        let equal = spec(json!({"containers": [{"name": "a", "resources": {
            "requests": {"cpu": "1000m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1024Mi"}}}]}));
        assert_eq!(qos_class(Some(&equal)), "Guaranteed", "quantities compare by value");
        let burstable = spec(json!({"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b"}]}));
        assert_eq!(qos_class(Some(&burstable)), "Burstable", "a container without limits");
        let cpu_only = spec(json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]}));
        assert_eq!(qos_class(Some(&cpu_only)), "Burstable");
        let zero = spec(json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "0"}}}]}));
        assert_eq!(qos_class(Some(&zero)), "BestEffort", "a zero request is none");
        let pod_level =
            spec(json!({"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}, "containers": [{"name": "a"}]}));
        assert_eq!(qos_class(Some(&pod_level)), "Guaranteed", "pod-level resources decide");
    }

    #[test]
    fn the_qos_class_is_kept_and_immutable() {
        let stored: Pod =
            serde_json::from_value(json!({"metadata": {"name": "a"}, "status": {"qosClass": "BestEffort"}}))
                .expect("a pod");
        let mut status = PodStatus { pod_ip: Some("10.0.0.1".into()), ..PodStatus::default() };
        on_status_write("a", stored.status.as_ref(), &mut status).expect("kept");
        assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));
        assert_eq!(status.pod_ips, None, "stored as written");
        let mut other = PodStatus { qos_class: Some("Burstable".into()), ..PodStatus::default() };
        let refused = on_status_write("a", stored.status.as_ref(), &mut other).expect_err("immutable");
        assert_eq!((refused.code, refused.causes[0].field.as_str()), (422, "status.qosClass"));
    }
}
