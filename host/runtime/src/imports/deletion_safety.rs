//! `kubelet:status/deletion-safety`: forwards to the world's [`DeletionSafety`].

use k8s_openapi::api::core::v1::PodStatus;

use crate::bindings::kubelet::status::deletion_safety as wit;
use crate::imports::{HostState, PodMeta, parse_from_plugin};
use crate::world::World;

impl wit::Host for HostState {
    fn pod_resources_are_reclaimed(&mut self, pod: String, status: String) -> wasmtime::Result<bool> {
        self.admit("pod-resources-are-reclaimed", &[("pod", pod.len()), ("status", status.len())])?;
        pod_resources_are_reclaimed(&self.world, &pod, &status)
    }

    fn pod_could_have_running_containers(&mut self, pod: String) -> wasmtime::Result<bool> {
        self.admit("pod-could-have-running-containers", &[("pod", pod.len())])?;
        pod_could_have_running_containers(&self.world, &pod)
    }
}

/// Contract 0.1.1 names the same import under its own version.
impl crate::bindings::v0_1_1::kubelet::status::deletion_safety::Host for HostState {
    fn pod_resources_are_reclaimed(&mut self, pod: String, status: String) -> wasmtime::Result<bool> {
        wit::Host::pod_resources_are_reclaimed(self, pod, status)
    }

    fn pod_could_have_running_containers(&mut self, pod: String) -> wasmtime::Result<bool> {
        wit::Host::pod_could_have_running_containers(self, pod)
    }
}

pub(crate) fn pod_could_have_running_containers(world: &World, pod_json: &str) -> wasmtime::Result<bool> {
    let pod = parse_from_plugin::<PodMeta>("pod-could-have-running-containers", "a pod", pod_json)?.into_pod();
    Ok(world.deletion_safety.pod_could_have_running_containers(&pod))
}

pub(crate) fn pod_resources_are_reclaimed(world: &World, pod_json: &str, status_json: &str) -> wasmtime::Result<bool> {
    const IMPORT: &str = "pod-resources-are-reclaimed";
    let pod = parse_from_plugin::<PodMeta>(IMPORT, "a pod", pod_json)?.into_pod();
    let status = parse_from_plugin::<Option<PodStatus>>(IMPORT, "a status", status_json)?.unwrap_or_default();
    Ok(world.deletion_safety.pod_resources_are_reclaimed(&pod, &status))
}
