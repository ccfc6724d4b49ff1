//! The 1.27 status manager's decisions in a sync: a strategic merge patch over the
//! pod as read (`mergePodStatus`, `PatchPodStatus`), `canBeDeleted`, and drift judged by
//! `isPodStatusByKubeletEqual`.

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_core::truncate_time;
use podstatus_logic::{
    ApiCall, ApiError, ApiPod, ApiReply, Engine, Level, ManagerError, Result, SyncPolicy, VersionedStatus, Write,
    WritePlan,
};

use crate::conditions::{is_pod_status_by_kubelet_equal, is_terminal, merge_pod_status};
use crate::imports::{Imports, StatusPatch};
use crate::patch::status_patch;
use crate::policy::V2;

impl<I: Imports> SyncPolicy<I> for V2 {
    const CHECKS_NEEDS_UPDATE: bool = false;

    /// `mergePodStatus` and `PatchPodStatus`: a strategic merge patch from the API
    /// server's status to `status` merged into it, sent only when it changes something.
    fn plan_write(&self, manager: &mut Engine<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan> {
        let view = &pod.view;
        // The API server's status as it is, not normalised: what the cache normalised
        // (container order, termination messages) is corrected by the patch.
        let api_status = pod.parse_status()?;
        let now = now(manager);
        let merged = {
            let imports = manager.imports_mut();
            merge_pod_status(&api_status, &status.status, || imports.pod_could_have_running_containers(&pod.json), &now)
        };
        let patch = status_patch(&view.metadata.uid, &api_status, &merged)
            .map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        let Some(patch) = patch else {
            manager.log(Level::Debug, || {
                format!("status of pod {} is up-to-date at version {}", view.full_name(), status.version)
            });
            return Ok(WritePlan::Unchanged(pod));
        };
        manager.log(Level::Debug, || format!("patching status of pod {}: {patch}", view.full_name()));
        let request = StatusPatch {
            namespace: view.metadata.namespace.clone(),
            name: view.metadata.name.clone(),
            uid_precondition: Some(view.metadata.uid.clone()),
            patch,
        };
        Ok(WritePlan::Send { call: ApiCall::PatchPodStatus(request), over: pod })
    }

    fn finish_write(
        &self,
        manager: &mut Engine<I>,
        over: ApiPod,
        _status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write> {
        match reply {
            Ok(json) => Ok(Write::Written(ApiPod::parse(json, || "API server's pod after the patch".into())?)),
            Err(e) => {
                manager.log(Level::Warn, || {
                    format!("failed to patch status of pod {}: {}", over.view.full_name(), e.message())
                });
                Ok(Write::Failed)
            }
        }
    }

    /// `canBeDeleted`: the pod is being deleted, is not a mirror pod (their graceful
    /// deletion is not the kubelet's), its phase in `pod` is terminal, and the status
    /// being synced is finished (it came from TerminatePod, which the kubelet calls once
    /// the pod's containers are gone and its resources reclaimed).
    fn can_be_deleted(&self, manager: &mut Engine<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool> {
        let view = &pod.view;
        if !view.is_being_deleted() || view.is_mirror() {
            return Ok(false);
        }
        let phase = pod.parse_status()?.phase;
        if !is_terminal(phase.as_deref()) {
            manager.log(Level::Debug, || {
                format!(
                    "delaying deletion of pod {}: its phase {:?} is not terminal",
                    view.full_name(),
                    phase.as_deref().unwrap_or("")
                )
            });
            return Ok(false);
        }
        if !status.pod_is_finished {
            manager.log(Level::Debug, || {
                format!("delaying deletion of pod {}: terminate-pod has not finished it", view.full_name())
            });
        }
        Ok(status.pod_is_finished)
    }

    /// `isPodStatusByKubeletEqual`: conditions others own are not drift.
    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool {
        is_pod_status_by_kubelet_equal(api, cached)
    }

    /// v1's calls, and patches through v2's imports.
    fn call(&self, manager: &mut Engine<I>, call: ApiCall) -> ApiReply {
        call_api(manager, call)
    }
}

/// Makes `call` at once through v2's imports, which patch (the blocking entry points'
/// calls of every version that patches).
pub fn call_api<I: Imports>(manager: &mut Engine<I>, call: ApiCall) -> ApiReply {
    match call {
        ApiCall::PatchPodStatus(patch) => ApiReply::Pod(manager.imports_mut().patch_pod_status(patch)),
        call => manager.call_api(call),
    }
}

/// The host's time at the API server's precision.
pub fn now<I: Imports>(manager: &mut Engine<I>) -> Time {
    let mut now = manager.now_cached(&mut None);
    truncate_time(&mut now);
    now
}
