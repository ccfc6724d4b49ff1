//! Finding one condition or one container in a status, as the kubelet's helpers do.

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodStatus};

/// The index and condition of the first condition of `type_`, as `GetPodCondition`.
pub fn find_condition_mut<'a>(status: &'a mut PodStatus, type_: &str) -> Option<&'a mut PodCondition> {
    status.conditions.iter_mut().flatten().find(|c| c.type_ == type_)
}

/// The first condition of `type_` in a list (`GetPodConditionFromList`).
pub fn find_condition_in<'a>(conditions: &'a [PodCondition], type_: &str) -> Option<&'a PodCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The first condition of `type_`, read-only.
pub fn find_condition<'a>(status: &'a PodStatus, type_: &str) -> Option<&'a PodCondition> {
    status.conditions.iter().flatten().find(|c| c.type_ == type_)
}

/// The container (regular first, then init) with this container ID. An absent ID
/// compares as "", as in Go.
pub fn find_container_status<'a>(status: &'a PodStatus, container_id: &str) -> Option<&'a ContainerStatus> {
    let matches = |c: &&ContainerStatus| c.container_id.as_deref().unwrap_or("") == container_id;
    status
        .container_statuses
        .iter()
        .flatten()
        .find(matches)
        .or_else(|| status.init_container_statuses.iter().flatten().find(matches))
}

/// The container with this container ID, for changing it.
pub fn find_container_status_mut<'a>(status: &'a mut PodStatus, container_id: &str) -> Option<&'a mut ContainerStatus> {
    let matches = |c: &&mut ContainerStatus| c.container_id.as_deref().unwrap_or("") == container_id;
    if let Some(found) = status.container_statuses.iter_mut().flatten().find(matches) {
        return Some(found);
    }
    status.init_container_statuses.iter_mut().flatten().find(matches)
}
