//! Semantic equality of pod statuses: Kubernetes' `apiequality.Semantic.DeepEqual`, as Go's
//! types in `k8s.io/api/core/v1` decide it, over the k8s-openapi types.
//!
//! k8s-openapi makes almost every field an `Option`, but Go tells three kinds apart, and the
//! status manager must agree with Go about which statuses are "the same" or it would keep
//! sending updates the API server sees as no-ops (or miss real ones):
//!
//! - **Plain values** (string, number, bool, and non-pointer structs such as
//!   `ContainerState` and `metav1.Time`): JSON without the field decodes to Go's zero value,
//!   so `None` equals `Some("")`, `Some(0)`, `Some(false)`, `Some(ContainerState::default())`
//!   and the zero time `0001-01-01T00:00:00Z`. See `value_eq`.
//! - **Slices and maps**: `Semantic.DeepEqual` treats nil and empty alike, so `None` equals
//!   `Some(vec![])` and `Some(BTreeMap::new())`. Lists compare element by element, in order;
//!   maps key by key. See `list_eq` and `map_eq`.
//! - **Pointers**: nil differs from every non-nil value, even a pointer to a zero value, so
//!   `None` differs from `Some(x)` whatever `x` is. See `ptr_eq`.
//!
//! Two leaf types have their own equality in `Semantic`: `resource.Quantity` compares by value
//! (`Cmp`, see [`crate::quantity`]) and `metav1.Time` by instant (`a.UTC() == b.UTC()`; jiff's
//! `Timestamp` equality is already by instant).
//!
//! The pointer fields reachable from `PodStatus`, checked against `k8s.io/api/core/v1/types.go`:
//!
//! - `PodStatus.startTime` (`*metav1.Time`);
//! - `ContainerStatus.started` (`*bool`), `.resources` (`*ResourceRequirements`), `.user`
//!   (`*ContainerUser`) and `.stopSignal` (`*Signal`);
//! - `ContainerState.waiting`, `.running` and `.terminated`;
//! - `ContainerUser.linux` (`*LinuxContainerUser`);
//! - `VolumeMountStatus.recursiveReadOnly` (`*RecursiveReadOnlyMode`);
//! - `PodResourceClaimStatus.resourceClaimName` (`*string`).
//!
//! Every other optional field is a plain value, slice or map. In particular
//! `ContainerStatus.state`/`.lastState` are `ContainerState` values,
//! `ContainerStateTerminated.signal` is a plain `int32`, `ContainerStatus.containerID`,
//! `PodCondition.observedGeneration`, `PodStatus.observedGeneration`, `VolumeMountStatus.readOnly`,
//! `ResourceHealth.health` and `ResourceClaim.request` are plain, and the times in
//! `PodCondition`, `ContainerStateRunning` and `ContainerStateTerminated` are `metav1.Time`
//! values.
//!
//! Each comparison destructures its struct without `..`, so a field added to k8s-openapi
//! fails to compile here until it is compared.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    ContainerUser, HostIP, LinuxContainerUser, PodCondition, PodExtendedResourceClaimStatus, PodIP,
    PodResourceClaimStatus, PodStatus, ResourceClaim, ResourceHealth, ResourceRequirements, ResourceStatus,
    VolumeMountStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::quantity::quantities_equal;

/// Whether two pod statuses are equal under Go's `apiequality.Semantic.DeepEqual`.
pub fn status_equal(a: &PodStatus, b: &PodStatus) -> bool {
    let PodStatus {
        allocated_resources,
        conditions,
        container_statuses,
        ephemeral_container_statuses,
        extended_resource_claim_status,
        host_ip,
        host_ips,
        init_container_statuses,
        message,
        nominated_node_name,
        observed_generation,
        phase,
        pod_ip,
        pod_ips,
        qos_class,
        reason,
        resize,
        resource_claim_statuses,
        resources,
        start_time,
    } = a;
    value_eq(observed_generation, &b.observed_generation, PartialEq::eq)
        && value_eq(phase, &b.phase, PartialEq::eq)
        && list_eq(conditions, &b.conditions, condition_eq)
        && value_eq(message, &b.message, PartialEq::eq)
        && value_eq(reason, &b.reason, PartialEq::eq)
        && value_eq(nominated_node_name, &b.nominated_node_name, PartialEq::eq)
        && value_eq(host_ip, &b.host_ip, PartialEq::eq)
        && list_eq(host_ips, &b.host_ips, host_ip_eq)
        && value_eq(pod_ip, &b.pod_ip, PartialEq::eq)
        && list_eq(pod_ips, &b.pod_ips, pod_ip_eq)
        && ptr_eq(start_time, &b.start_time, PartialEq::eq)
        && list_eq(init_container_statuses, &b.init_container_statuses, container_status_eq)
        && list_eq(container_statuses, &b.container_statuses, container_status_eq)
        && value_eq(qos_class, &b.qos_class, PartialEq::eq)
        && list_eq(ephemeral_container_statuses, &b.ephemeral_container_statuses, container_status_eq)
        && value_eq(resize, &b.resize, PartialEq::eq)
        && list_eq(resource_claim_statuses, &b.resource_claim_statuses, resource_claim_status_eq)
        && ptr_eq(extended_resource_claim_status, &b.extended_resource_claim_status, extended_claim_status_eq)
        && resources_eq(allocated_resources, &b.allocated_resources)
        && ptr_eq(resources, &b.resources, resource_requirements_eq)
}

/// `PodExtendedResourceClaimStatus` (Kubernetes 1.34): which claim holds the pod's
/// extended resources, and which container request maps to which of its requests.
fn extended_claim_status_eq(a: &PodExtendedResourceClaimStatus, b: &PodExtendedResourceClaimStatus) -> bool {
    let PodExtendedResourceClaimStatus { request_mappings, resource_claim_name } = a;
    resource_claim_name == &b.resource_claim_name && request_mappings == &b.request_mappings
}

// ---------------------------------------------------------------------------------------
// How Go's field kinds compare.

/// A Go non-pointer field: absent in JSON means Go's zero value, which for every type here
/// is `T::default()` (`""`, `0`, `false`, a struct of absent fields).
fn value_eq<T: Default>(a: &Option<T>, b: &Option<T>, eq: impl Fn(&T, &T) -> bool) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => eq(a, b),
        (Some(set), None) | (None, Some(set)) => eq(set, &T::default()),
        (None, None) => true,
    }
}

/// A Go pointer field: nil equals only nil; a set pointer is compared by what it points to.
fn ptr_eq<T>(a: &Option<T>, b: &Option<T>, eq: impl Fn(&T, &T) -> bool) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// A Go slice: nil equals empty; elements compare pairwise, in order.
fn list_eq<T>(a: &Option<Vec<T>>, b: &Option<Vec<T>>, eq: impl Fn(&T, &T) -> bool) -> bool {
    let (a, b) = (a.as_deref().unwrap_or_default(), b.as_deref().unwrap_or_default());
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| eq(x, y))
}

/// A Go map: nil equals empty; the same keys, with equal values.
fn map_eq<V>(a: &Option<BTreeMap<String, V>>, b: &Option<BTreeMap<String, V>>, eq: impl Fn(&V, &V) -> bool) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.len() == b.len() && a.iter().all(|(key, x)| b.get(key).is_some_and(|y| eq(x, y))),
        (Some(set), None) | (None, Some(set)) => set.is_empty(),
        (None, None) => true,
    }
}

/// Go's zero `time.Time`, 0001-01-01T00:00:00Z: what an absent non-pointer `metav1.Time`
/// decodes to.
const GO_ZERO_TIME: Timestamp = Timestamp::constant(-62_135_596_800, 0);

/// A non-pointer `metav1.Time`: compared by instant, absent being Go's zero time (so a
/// `null` time equals an explicit `0001-01-01T00:00:00Z`).
fn time_eq(a: &Option<Time>, b: &Option<Time>) -> bool {
    let instant = |t: &Option<Time>| t.as_ref().map_or(GO_ZERO_TIME, |t| t.0);
    instant(a) == instant(b)
}

/// A `ResourceList`: a map of quantities, compared by value.
fn resources_eq(a: &Option<BTreeMap<String, Quantity>>, b: &Option<BTreeMap<String, Quantity>>) -> bool {
    map_eq(a, b, quantities_equal)
}

// ---------------------------------------------------------------------------------------
// The structs reachable from `PodStatus`, one comparison each.

fn condition_eq(a: &PodCondition, b: &PodCondition) -> bool {
    let PodCondition { last_probe_time, last_transition_time, message, observed_generation, reason, status, type_ } = a;
    *type_ == b.type_
        && value_eq(observed_generation, &b.observed_generation, PartialEq::eq)
        && *status == b.status
        && time_eq(last_probe_time, &b.last_probe_time)
        && time_eq(last_transition_time, &b.last_transition_time)
        && value_eq(reason, &b.reason, PartialEq::eq)
        && value_eq(message, &b.message, PartialEq::eq)
}

fn host_ip_eq(a: &HostIP, b: &HostIP) -> bool {
    let HostIP { ip } = a;
    *ip == b.ip
}

fn pod_ip_eq(a: &PodIP, b: &PodIP) -> bool {
    let PodIP { ip } = a;
    *ip == b.ip
}

fn resource_claim_status_eq(a: &PodResourceClaimStatus, b: &PodResourceClaimStatus) -> bool {
    let PodResourceClaimStatus { name, resource_claim_name } = a;
    *name == b.name && ptr_eq(resource_claim_name, &b.resource_claim_name, PartialEq::eq)
}

fn container_status_eq(a: &ContainerStatus, b: &ContainerStatus) -> bool {
    let ContainerStatus {
        allocated_resources,
        allocated_resources_status,
        container_id,
        image,
        image_id,
        last_state,
        name,
        ready,
        resources,
        restart_count,
        started,
        state,
        stop_signal,
        user,
        volume_mounts,
    } = a;
    *name == b.name
        && value_eq(state, &b.state, container_state_eq)
        && value_eq(last_state, &b.last_state, container_state_eq)
        && *ready == b.ready
        && *restart_count == b.restart_count
        && *image == b.image
        && *image_id == b.image_id
        && value_eq(container_id, &b.container_id, PartialEq::eq)
        && ptr_eq(started, &b.started, PartialEq::eq)
        && resources_eq(allocated_resources, &b.allocated_resources)
        && ptr_eq(resources, &b.resources, resource_requirements_eq)
        && list_eq(volume_mounts, &b.volume_mounts, volume_mount_status_eq)
        && ptr_eq(user, &b.user, container_user_eq)
        && list_eq(allocated_resources_status, &b.allocated_resources_status, resource_status_eq)
        && ptr_eq(stop_signal, &b.stop_signal, PartialEq::eq)
}

fn container_state_eq(a: &ContainerState, b: &ContainerState) -> bool {
    let ContainerState { running, terminated, waiting } = a;
    ptr_eq(waiting, &b.waiting, waiting_eq)
        && ptr_eq(running, &b.running, running_eq)
        && ptr_eq(terminated, &b.terminated, terminated_eq)
}

fn waiting_eq(a: &ContainerStateWaiting, b: &ContainerStateWaiting) -> bool {
    let ContainerStateWaiting { message, reason } = a;
    value_eq(reason, &b.reason, PartialEq::eq) && value_eq(message, &b.message, PartialEq::eq)
}

fn running_eq(a: &ContainerStateRunning, b: &ContainerStateRunning) -> bool {
    let ContainerStateRunning { started_at } = a;
    time_eq(started_at, &b.started_at)
}

fn terminated_eq(a: &ContainerStateTerminated, b: &ContainerStateTerminated) -> bool {
    let ContainerStateTerminated { container_id, exit_code, finished_at, message, reason, signal, started_at } = a;
    *exit_code == b.exit_code
        && value_eq(signal, &b.signal, PartialEq::eq)
        && value_eq(reason, &b.reason, PartialEq::eq)
        && value_eq(message, &b.message, PartialEq::eq)
        && time_eq(started_at, &b.started_at)
        && time_eq(finished_at, &b.finished_at)
        && value_eq(container_id, &b.container_id, PartialEq::eq)
}

fn resource_requirements_eq(a: &ResourceRequirements, b: &ResourceRequirements) -> bool {
    let ResourceRequirements { claims, limits, requests } = a;
    resources_eq(limits, &b.limits)
        && resources_eq(requests, &b.requests)
        && list_eq(claims, &b.claims, resource_claim_eq)
}

fn resource_claim_eq(a: &ResourceClaim, b: &ResourceClaim) -> bool {
    let ResourceClaim { name, request } = a;
    *name == b.name && value_eq(request, &b.request, PartialEq::eq)
}

fn volume_mount_status_eq(a: &VolumeMountStatus, b: &VolumeMountStatus) -> bool {
    let VolumeMountStatus { mount_path, name, read_only, recursive_read_only } = a;
    *name == b.name
        && *mount_path == b.mount_path
        && value_eq(read_only, &b.read_only, PartialEq::eq)
        && ptr_eq(recursive_read_only, &b.recursive_read_only, PartialEq::eq)
}

fn container_user_eq(a: &ContainerUser, b: &ContainerUser) -> bool {
    let ContainerUser { linux } = a;
    ptr_eq(linux, &b.linux, linux_container_user_eq)
}

fn linux_container_user_eq(a: &LinuxContainerUser, b: &LinuxContainerUser) -> bool {
    let LinuxContainerUser { gid, supplemental_groups, uid } = a;
    *uid == b.uid && *gid == b.gid && list_eq(supplemental_groups, &b.supplemental_groups, PartialEq::eq)
}

fn resource_status_eq(a: &ResourceStatus, b: &ResourceStatus) -> bool {
    let ResourceStatus { name, resources } = a;
    *name == b.name && list_eq(resources, &b.resources, resource_health_eq)
}

fn resource_health_eq(a: &ResourceHealth, b: &ResourceHealth) -> bool {
    let ResourceHealth { health, resource_id } = a;
    *resource_id == b.resource_id && value_eq(health, &b.health, PartialEq::eq)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn status(value: Value) -> PodStatus {
        serde_json::from_value(value).expect("test status must deserialize")
    }

    /// `base` with the fields of `extra` added or replaced.
    fn merged(mut base: Value, extra: Value) -> Value {
        if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
            base.extend(extra);
        }
        base
    }

    /// A container status with the required fields, plus `extra`.
    fn container(extra: Value) -> Value {
        let required = json!({
            "name": "c", "image": "i", "imageID": "d", "ready": false, "restartCount": 0,
        });
        merged(required, extra)
    }

    fn with_container(extra: Value) -> PodStatus {
        status(json!({"containerStatuses": [container(extra)]}))
    }

    /// A pod condition with the required fields, plus `extra`.
    fn condition(extra: Value) -> Value {
        merged(json!({"type": "Ready", "status": "True"}), extra)
    }

    fn with_condition(extra: Value) -> PodStatus {
        status(json!({"conditions": [condition(extra)]}))
    }

    /// (name, a, b, expected equality)
    fn cases() -> Vec<(&'static str, PodStatus, PodStatus, bool)> {
        vec![
            ("both empty", status(json!({})), status(json!({})), true),
            // Slices and maps: nil equals empty.
            ("nil vs empty conditions", status(json!({})), status(json!({"conditions": []})), true),
            (
                "nil vs empty container statuses",
                status(json!({"containerStatuses": null})),
                status(json!({"containerStatuses": []})),
                true,
            ),
            (
                "nil vs empty allocatedResources map",
                with_container(json!({})),
                with_container(json!({"allocatedResources": {}})),
                true,
            ),
            (
                "nil vs empty supplementalGroups",
                with_container(json!({"user": {"linux": {"uid": 1, "gid": 2}}})),
                with_container(json!({"user": {"linux": {"uid": 1, "gid": 2, "supplementalGroups": []}}})),
                true,
            ),
            (
                "empty vs non-empty list",
                status(json!({"podIPs": []})),
                status(json!({"podIPs": [{"ip": "10.0.0.1"}]})),
                false,
            ),
            (
                "map with a different key",
                with_container(json!({"allocatedResources": {"cpu": "1"}})),
                with_container(json!({"allocatedResources": {"memory": "1"}})),
                false,
            ),
            // Plain values: absent equals the zero value.
            ("phase \"\" vs absent", status(json!({})), status(json!({"phase": ""})), true),
            ("phase differs", status(json!({"phase": "Running"})), status(json!({"phase": "Pending"})), false),
            ("observedGeneration 0 vs absent", status(json!({})), status(json!({"observedGeneration": 0})), true),
            (
                "restartCount 0 vs absent",
                status(json!({"containerStatuses": [
                    {"name": "c", "image": "i", "imageID": "d", "ready": false},
                ]})),
                with_container(json!({"restartCount": 0})),
                true,
            ),
            (
                "restartCount differs",
                with_container(json!({"restartCount": 0})),
                with_container(json!({"restartCount": 1})),
                false,
            ),
            ("containerID \"\" vs absent", with_container(json!({})), with_container(json!({"containerID": ""})), true),
            (
                "readOnly false vs absent",
                with_container(json!({"volumeMounts": [{"name": "v", "mountPath": "/v"}]})),
                with_container(json!({"volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": false}]})),
                true,
            ),
            (
                "terminated signal 0 vs absent",
                with_container(json!({"state": {"terminated": {"exitCode": 1}}})),
                with_container(json!({"state": {"terminated": {"exitCode": 1, "signal": 0}}})),
                true,
            ),
            (
                "resource health \"\" vs absent",
                with_container(json!({"allocatedResourcesStatus": [
                    {"name": "r", "resources": [{"resourceID": "d"}]},
                ]})),
                with_container(json!({"allocatedResourcesStatus": [
                    {"name": "r", "resources": [{"resourceID": "d", "health": ""}]},
                ]})),
                true,
            ),
            // Non-pointer structs: absent equals a struct of zero values.
            ("state {} vs absent", with_container(json!({})), with_container(json!({"state": {}})), true),
            ("lastState {} vs absent", with_container(json!({"lastState": {}})), with_container(json!({})), true),
            // Pointers: set differs from absent, even when set to a zero value.
            (
                "state running {} vs {}",
                with_container(json!({"state": {"running": {}}})),
                with_container(json!({"state": {}})),
                false,
            ),
            (
                "state waiting {} vs absent",
                with_container(json!({"state": {"waiting": {}}})),
                with_container(json!({})),
                false,
            ),
            (
                "running vs waiting",
                with_container(json!({"state": {"running": {}}})),
                with_container(json!({"state": {"waiting": {}}})),
                false,
            ),
            ("started false vs absent", with_container(json!({"started": false})), with_container(json!({})), false),
            (
                "started false vs false",
                with_container(json!({"started": false})),
                with_container(json!({"started": false})),
                true,
            ),
            ("resources {} vs absent", with_container(json!({"resources": {}})), with_container(json!({})), false),
            ("user {} vs absent", with_container(json!({"user": {}})), with_container(json!({})), false),
            (
                "stopSignal vs absent",
                with_container(json!({"stopSignal": "SIGTERM"})),
                with_container(json!({})),
                false,
            ),
            (
                "recursiveReadOnly vs absent",
                with_container(json!({"volumeMounts": [
                    {"name": "v", "mountPath": "/v", "recursiveReadOnly": "Disabled"},
                ]})),
                with_container(json!({"volumeMounts": [{"name": "v", "mountPath": "/v"}]})),
                false,
            ),
            (
                "resourceClaimName \"\" vs absent",
                status(json!({"resourceClaimStatuses": [{"name": "x", "resourceClaimName": ""}]})),
                status(json!({"resourceClaimStatuses": [{"name": "x"}]})),
                false,
            ),
            ("startTime set vs absent", status(json!({"startTime": "0001-01-01T00:00:00Z"})), status(json!({})), false),
            // Times: by instant; an absent non-pointer time is Go's zero time.
            (
                "startTime with different offsets",
                status(json!({"startTime": "2026-01-01T01:00:00+01:00"})),
                status(json!({"startTime": "2026-01-01T00:00:00Z"})),
                true,
            ),
            (
                "condition time with different offsets",
                with_condition(json!({"lastTransitionTime": "2026-01-01T01:00:00+01:00"})),
                with_condition(json!({"lastTransitionTime": "2026-01-01T00:00:00Z"})),
                true,
            ),
            (
                "absent lastProbeTime vs zero time",
                status(json!({"conditions": [condition(json!({}))]})),
                with_condition(json!({"lastProbeTime": "0001-01-01T00:00:00Z"})),
                true,
            ),
            (
                "null lastProbeTime vs zero time",
                status(json!({"conditions": [condition(json!({"lastProbeTime": null}))]})),
                with_condition(json!({"lastProbeTime": "0001-01-01T00:00:00Z"})),
                true,
            ),
            (
                "absent startedAt vs zero time",
                with_container(json!({"state": {"running": {}}})),
                with_container(json!({"state": {"running": {"startedAt": "0001-01-01T00:00:00Z"}}})),
                true,
            ),
            (
                "times a second apart",
                with_container(json!({"state": {"terminated": {
                    "exitCode": 0, "finishedAt": "2026-01-01T00:00:00Z",
                }}})),
                with_container(json!({"state": {"terminated": {
                    "exitCode": 0, "finishedAt": "2026-01-01T00:00:01Z",
                }}})),
                false,
            ),
            // Quantities: by value.
            (
                "allocatedResources 1 vs 1000m",
                with_container(json!({"allocatedResources": {"cpu": "1"}})),
                with_container(json!({"allocatedResources": {"cpu": "1000m"}})),
                true,
            ),
            (
                "limits 1Ki vs 1000",
                with_container(json!({"resources": {"limits": {"memory": "1Ki"}}})),
                with_container(json!({"resources": {"limits": {"memory": "1000"}}})),
                false,
            ),
            (
                "requests 1Ki vs 1024, nil vs empty claims",
                with_container(json!({"resources": {"requests": {"memory": "1Ki"}, "claims": []}})),
                with_container(json!({"resources": {"requests": {"memory": "1024"}}})),
                true,
            ),
            // Order and nested differences.
            (
                "condition order matters",
                status(json!({"conditions": [
                    condition(json!({"type": "Ready"})),
                    condition(json!({"type": "Initialized"})),
                ]})),
                status(json!({"conditions": [
                    condition(json!({"type": "Initialized"})),
                    condition(json!({"type": "Ready"})),
                ]})),
                false,
            ),
            (
                "nested terminated message differs",
                status(json!({"initContainerStatuses": [container(json!({
                    "lastState": {"terminated": {"exitCode": 1, "message": "a"}},
                }))]})),
                status(json!({"initContainerStatuses": [container(json!({
                    "lastState": {"terminated": {"exitCode": 1, "message": "b"}},
                }))]})),
                false,
            ),
            (
                "nested supplemental group differs",
                with_container(json!({"user": {"linux": {"uid": 1, "gid": 2, "supplementalGroups": [3]}}})),
                with_container(json!({"user": {"linux": {"uid": 1, "gid": 2, "supplementalGroups": [4]}}})),
                false,
            ),
            (
                "ephemeral container ready differs",
                status(json!({"ephemeralContainerStatuses": [container(json!({"ready": true}))]})),
                status(json!({"ephemeralContainerStatuses": [container(json!({"ready": false}))]})),
                false,
            ),
            (
                "hostIPs differ",
                status(json!({"hostIPs": [{"ip": "10.0.0.1"}]})),
                status(json!({"hostIPs": [{"ip": "10.0.0.2"}]})),
                false,
            ),
        ]
    }

    #[test]
    fn semantic_equality() {
        for (name, a, b, expected) in cases() {
            assert_eq!(status_equal(&a, &b), expected, "{name}: a vs b");
            assert_eq!(status_equal(&b, &a), expected, "{name}: b vs a");
            assert!(status_equal(&a, &a), "{name}: a vs itself");
            assert!(status_equal(&b, &b), "{name}: b vs itself");
        }
    }

    #[test]
    fn go_zero_time_is_year_one() {
        let parsed: Timestamp = "0001-01-01T00:00:00Z".parse().expect("valid RFC 3339");
        assert_eq!(GO_ZERO_TIME, parsed);
    }

    /// A status with every field reachable from `PodStatus` set.
    fn full_status() -> Value {
        let t0 = "2026-01-01T00:00:00Z";
        let t1 = "2026-01-01T00:01:00Z";
        json!({
            "observedGeneration": 3,
            "phase": "Running",
            "conditions": [condition(json!({
                "observedGeneration": 3, "lastProbeTime": t0, "lastTransitionTime": t1,
                "reason": "r", "message": "m",
            }))],
            "message": "msg", "reason": "why", "nominatedNodeName": "n",
            "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}],
            "startTime": t0,
            "initContainerStatuses": [container(json!({
                "state": {"terminated": {
                    "exitCode": 2, "signal": 9, "reason": "Error", "message": "boom",
                    "startedAt": t0, "finishedAt": t1, "containerID": "cri://0",
                }},
            }))],
            "containerStatuses": [container(json!({
                "state": {"running": {"startedAt": t0}},
                "lastState": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
                "containerID": "cri://1", "started": true,
                "allocatedResources": {"cpu": "500m"},
                "resources": {
                    "limits": {"cpu": "1"}, "requests": {"memory": "1Gi"},
                    "claims": [{"name": "g", "request": "r"}],
                },
                "volumeMounts": [
                    {
                        "name": "v", "mountPath": "/v",
                        "readOnly": true, "recursiveReadOnly": "Enabled",
                    },
                ],
                "user": {"linux": {"uid": 1000, "gid": 1001, "supplementalGroups": [4, 5]}},
                "allocatedResourcesStatus": [
                    {"name": "r", "resources": [{"resourceID": "d", "health": "Healthy"}]},
                ],
                "stopSignal": "SIGTERM",
            }))],
            "qosClass": "Burstable",
            "ephemeralContainerStatuses": [container(json!({"name": "debug"}))],
            "resize": "InProgress",
            "resourceClaimStatuses": [{"name": "x", "resourceClaimName": "y"}],
        })
    }

    /// Every copy of `value` with one leaf (string, number or bool) changed, with its path.
    fn leaf_changes(value: &Value) -> Vec<(String, Value)> {
        let nested = |key: String, child: &Value, rebuild: &dyn Fn(Value) -> Value| {
            leaf_changes(child)
                .into_iter()
                .map(|(path, changed)| (format!("/{key}{path}"), rebuild(changed)))
                .collect::<Vec<_>>()
        };
        match value {
            Value::Object(map) => map
                .iter()
                .flat_map(|(key, child)| {
                    nested(key.clone(), child, &|changed| {
                        let mut copy = map.clone();
                        copy.insert(key.clone(), changed);
                        Value::Object(copy)
                    })
                })
                .collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .flat_map(|(index, child)| {
                    nested(index.to_string(), child, &|changed| {
                        let mut copy = items.clone();
                        copy[index] = changed;
                        Value::Array(copy)
                    })
                })
                .collect(),
            // A time must stay a valid time to deserialize.
            Value::String(s) if s.parse::<Timestamp>().is_ok() => {
                vec![(String::new(), json!("2030-01-01T00:00:00Z"))]
            }
            Value::String(s) => vec![(String::new(), json!(format!("{s}x")))],
            Value::Number(n) => vec![(String::new(), json!(n.as_i64().unwrap_or(0) + 1))],
            Value::Bool(b) => vec![(String::new(), json!(!b))],
            Value::Null => Vec::new(),
        }
    }

    #[test]
    fn full_status_equals_itself_and_its_round_trip() {
        let a = status(full_status());
        let reparsed = status(serde_json::to_value(&a).expect("a status serializes"));
        assert!(status_equal(&a, &reparsed));
        assert!(status_equal(&a, &status(full_status())));
    }

    /// Every field is compared: changing any single leaf makes the statuses differ.
    #[test]
    fn every_leaf_is_compared() {
        let original = full_status();
        let a = status(original.clone());
        let changes = leaf_changes(&original);
        assert!(changes.len() > 60, "only {} leaves", changes.len());
        for (path, changed) in changes {
            let b = status(changed);
            assert!(!status_equal(&a, &b), "a change at {path} went unnoticed");
            assert!(!status_equal(&b, &a), "a change at {path} went unnoticed");
        }
    }
}
