//! `kubelet:status/pod-manager`: forwards to the world's [`PodManager`].

use crate::bindings::kubelet::status::pod_manager::{self as wit, UidTranslations};
use crate::imports::{HostState, PodMeta, parse_from_plugin};
use crate::world::World;

impl wit::Host for HostState {
    fn get_pod_by_uid(&mut self, uid: String) -> wasmtime::Result<Option<String>> {
        self.admit("get-pod-by-uid", &[("uid", uid.len())])?;
        let pod = get_pod_by_uid(&self.world, &uid)?;
        self.charge_result("get-pod-by-uid", pod.as_ref().map_or(0, String::len))?;
        Ok(pod)
    }

    fn get_mirror_pod_by_pod(&mut self, pod: String) -> wasmtime::Result<Option<String>> {
        self.admit("get-mirror-pod-by-pod", &[("pod", pod.len())])?;
        let mirror = get_mirror_pod_by_pod(&self.world, &pod)?;
        self.charge_result("get-mirror-pod-by-pod", mirror.as_ref().map_or(0, String::len))?;
        Ok(mirror)
    }

    fn translate_pod_uid(&mut self, uid: String) -> wasmtime::Result<String> {
        self.admit("translate-pod-uid", &[("uid", uid.len())])?;
        let translated = self.world.pod_manager.translate_pod_uid(&uid);
        self.charge_result("translate-pod-uid", translated.len())?;
        Ok(translated)
    }

    fn get_uid_translations(&mut self) -> wasmtime::Result<UidTranslations> {
        self.charge("get-uid-translations", 0)?;
        let translations = get_uid_translations(&self.world);
        let bytes = translations
            .pod_to_mirror
            .iter()
            .chain(&translations.mirror_to_pod)
            .map(|(a, b)| a.len() + b.len() + 16)
            .sum();
        self.charge_result("get-uid-translations", bytes)?;
        Ok(translations)
    }
}

/// Contract 0.1.1 names the same import (and its `uid-translations`) under its own
/// version.
impl crate::bindings::v0_1_1::kubelet::status::pod_manager::Host for HostState {
    fn get_pod_by_uid(&mut self, uid: String) -> wasmtime::Result<Option<String>> {
        wit::Host::get_pod_by_uid(self, uid)
    }

    fn get_mirror_pod_by_pod(&mut self, pod: String) -> wasmtime::Result<Option<String>> {
        wit::Host::get_mirror_pod_by_pod(self, pod)
    }

    fn translate_pod_uid(&mut self, uid: String) -> wasmtime::Result<String> {
        wit::Host::translate_pod_uid(self, uid)
    }

    fn get_uid_translations(&mut self) -> wasmtime::Result<OldTranslations> {
        let t = wit::Host::get_uid_translations(self)?;
        Ok(OldTranslations { pod_to_mirror: t.pod_to_mirror, mirror_to_pod: t.mirror_to_pod })
    }
}

use crate::bindings::v0_1_1::kubelet::status::pod_manager::UidTranslations as OldTranslations;

/// The pod's JSON as the pod manager keeps it: never serialised for a read (the batch
/// reads every cached pod's pod every ten seconds).
pub(crate) fn get_pod_by_uid(world: &World, uid: &str) -> wasmtime::Result<Option<String>> {
    Ok(world.pod_manager.get_pod_by_uid(uid).map(|pod| pod.json().to_owned()))
}

pub(crate) fn get_mirror_pod_by_pod(world: &World, pod_json: &str) -> wasmtime::Result<Option<String>> {
    let pod = parse_from_plugin::<PodMeta>("get-mirror-pod-by-pod", "a pod", pod_json)?.into_pod();
    Ok(world.pod_manager.get_mirror_pod_by_pod(&pod).map(|mirror| mirror.json().to_owned()))
}

pub(crate) fn get_uid_translations(world: &World) -> UidTranslations {
    let (pod_to_mirror, mirror_to_pod) = world.pod_manager.get_uid_translations();
    UidTranslations {
        pod_to_mirror: pod_to_mirror.into_iter().collect(),
        mirror_to_pod: mirror_to_pod.into_iter().collect(),
    }
}
