//! What every logic version's update does alike: the status an uncached pod starts
//! from, the start time kept once set, and caching a new status version.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_core::{PodView, SpecView, is_zero};

use super::Engine;
use crate::error::{InvalidPod, Result};
use crate::imports::{Imports, Level};
use crate::status::VersionedStatus;

impl<I: Imports> Engine<I> {
    /// The status a pod had before its first update was cached: its mirror pod's (a
    /// static pod's status lives there), else its own.
    pub fn status_before_caching(&mut self, pod: &PodView, pod_json: &str) -> Result<PodStatus> {
        match self.imports.get_mirror_pod_by_pod(pod_json) {
            Some(mirror_json) => PodView::parse_with_uid(&mirror_json)
                .and_then(|mirror| mirror.parse_status())
                .invalid_pod(|| format!("mirror pod of {}", pod.full_name())),
            None => pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name())),
        }
    }

    /// Keeps the start time of `old` once it is set; a status that has none yet gets
    /// the update's time `now` (read at most once per update).
    pub fn keep_start_time(&mut self, old: &PodStatus, status: &mut PodStatus, now: &mut Option<Time>) {
        match &old.start_time {
            Some(start) if !is_zero(start) => status.start_time = Some(start.clone()),
            _ => {
                if status.start_time.as_ref().is_none_or(is_zero) {
                    status.start_time = Some(self.now_cached(now));
                }
            }
        }
    }

    /// Normalises `status` (`normalize`: the release's `normalizeStatus`) and caches it
    /// as the next version of `pod`'s status after `cached` (see
    /// [`Engine::cache_version`]), unless the update is not forced and `equal` finds it
    /// the same as the cached one: then None, logged.
    #[allow(clippy::too_many_arguments)]
    pub fn cache_if_changed(
        &mut self,
        pod: &PodView,
        mut status: PodStatus,
        cached: Option<&VersionedStatus>,
        force: bool,
        pod_is_finished: bool,
        normalize: impl FnOnce(&SpecView, &mut PodStatus),
        equal: impl FnOnce(&PodStatus, &PodStatus) -> bool,
    ) -> Option<Arc<VersionedStatus>> {
        normalize(&pod.spec, &mut status);
        if let Some(cached) = cached
            && !force
            && equal(&cached.status, &status)
        {
            self.log(Level::Trace, || format!("ignoring same status for pod {}", pod.full_name()));
            self.found_unchanged = Some(pod.metadata.uid.clone());
            return None;
        }
        Some(self.cache_version(pod, status, cached, pod_is_finished))
    }

    /// Caches `status` as the next version of `pod`'s status after `cached` (the first
    /// when there is none) and returns it, for the caller to queue its write.
    pub fn cache_version(
        &mut self,
        pod: &PodView,
        status: PodStatus,
        cached: Option<&VersionedStatus>,
        pod_is_finished: bool,
    ) -> Arc<VersionedStatus> {
        let versioned = Arc::new(VersionedStatus {
            status,
            version: cached.map_or(0, |c| c.version) + 1,
            pod_name: pod.metadata.name.clone(),
            pod_namespace: pod.metadata.namespace.clone(),
            pod_is_finished,
        });
        self.put_status(&pod.metadata.uid, Arc::clone(&versioned));
        versioned
    }
}
