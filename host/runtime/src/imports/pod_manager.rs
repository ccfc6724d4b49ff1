//! `kubelet:status/pod-manager`: forwards to the world's [`PodManager`].

use crate::bindings::kubelet::status::pod_manager::{self as wit, UidTranslations};
use crate::imports::{HostState, PodMeta, parse_from_plugin, to_json};
use crate::world::World;

impl wit::Host for HostState {
    fn get_pod_by_uid(&mut self, uid: String) -> wasmtime::Result<Option<String>> {
        self.check_arg("get-pod-by-uid", "uid", uid.len())?;
        get_pod_by_uid(&self.world, &uid)
    }

    fn get_mirror_pod_by_pod(&mut self, pod: String) -> wasmtime::Result<Option<String>> {
        self.check_arg("get-mirror-pod-by-pod", "pod", pod.len())?;
        get_mirror_pod_by_pod(&self.world, &pod)
    }

    fn translate_pod_uid(&mut self, uid: String) -> wasmtime::Result<String> {
        self.check_arg("translate-pod-uid", "uid", uid.len())?;
        Ok(self.world.pod_manager.translate_pod_uid(&uid))
    }

    fn get_uid_translations(&mut self) -> wasmtime::Result<UidTranslations> {
        Ok(get_uid_translations(&self.world))
    }
}

pub(crate) fn get_pod_by_uid(world: &World, uid: &str) -> wasmtime::Result<Option<String>> {
    world.pod_manager.get_pod_by_uid(uid).map(|pod| to_json(&*pod)).transpose()
}

pub(crate) fn get_mirror_pod_by_pod(world: &World, pod_json: &str) -> wasmtime::Result<Option<String>> {
    let pod = parse_from_plugin::<PodMeta>("get-mirror-pod-by-pod", "a pod", pod_json)?.into_pod();
    world.pod_manager.get_mirror_pod_by_pod(&pod).map(|mirror| to_json(&*mirror)).transpose()
}

pub(crate) fn get_uid_translations(world: &World) -> UidTranslations {
    let (pod_to_mirror, mirror_to_pod) = world.pod_manager.get_uid_translations();
    UidTranslations {
        pod_to_mirror: pod_to_mirror.into_iter().collect(),
        mirror_to_pod: mirror_to_pod.into_iter().collect(),
    }
}
