//! What both write modes do to write a status: merge it over a base with the release's
//! `mergePodStatus`, diff the two into a strategic merge patch (`PatchPodStatus`),
//! send it under the pod's UID, take its answer, and decide the pod's deletion
//! (`canBeDeleted`).

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_core::truncate_time;

use super::status_patch::status_patch;
use super::whole_conditions::whole_conditions;
use super::whole_status::whole_status;
use crate::api_pod::ApiPod;
use crate::engine::Engine;
use crate::engine::sync_policy::{Write, WritePlan};
use crate::error::{ManagerError, Result};
use crate::imports::{ApiCall, ApiError, Imports, Level, StatusPatch};
use crate::release::{Release, is_terminal, merge_pod_status};
use crate::status::VersionedStatus;

/// What a patch carries beyond the diff from its base to the merged status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Carries {
    /// The diff alone (upstream's, over the status just read).
    Diff,
    /// The diff with each condition it names whole ([`whole_conditions`]).
    WholeConditions,
    /// The diff completed to the whole merged status, the kubelet's own conditions
    /// whole ([`whole_status`]).
    WholeStatus,
}

/// `release`'s merge of `status` into `base` for `pod` (the pod the write is computed
/// over) and the patch from `base` to it; None when there is nothing to send.
pub(crate) fn plan_patch<R: Release, I: Imports>(
    release: &R,
    manager: &mut Engine<I>,
    pod: &ApiPod,
    base: &PodStatus,
    status: &VersionedStatus,
    carries: Carries,
) -> Result<Option<String>> {
    let read = release.read_pod(&pod.json, || pod.view.full_name())?;
    let now = now(manager);
    let merged = {
        let imports = manager.imports_mut();
        let could_have_running_containers = || imports.pod_could_have_running_containers(&pod.json);
        merge_pod_status(release, &read, base, &status.status, could_have_running_containers, &now)
    };
    let patch =
        status_patch(&pod.view.metadata.uid, base, &merged).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
    Ok(patch.map(|patch| match carries {
        Carries::Diff => patch,
        Carries::WholeConditions => whole_conditions(patch, &merged),
        // A shared condition (DisruptionTarget) is another writer's too: sent only
        // when the merge changed it, as the diff already does.
        Carries::WholeStatus => whole_status(patch, &merged, &|type_| release.owned_by_kubelet(type_)),
    }))
}

/// `syncPod`'s write over `pod`, the API server's pod as just read: the patch from its
/// status, carrying `carries`, sent when it changes something.
pub(crate) fn plan_write_over_read<R: Release, I: Imports>(
    release: &R,
    manager: &mut Engine<I>,
    pod: ApiPod,
    status: &VersionedStatus,
    carries: Carries,
) -> Result<WritePlan> {
    // The API server's status as it is, not normalised: what the cache normalised
    // (container order, termination messages) is corrected by the patch.
    let api_status = pod.parse_status()?;
    let Some(patch) = plan_patch(release, manager, &pod, &api_status, status, carries)? else {
        manager.log(Level::Debug, || {
            format!("status of pod {} is up-to-date at version {}", pod.view.full_name(), status.version)
        });
        return Ok(WritePlan::Unchanged(pod));
    };
    manager.log(Level::Debug, || format!("patching status of pod {}: {patch}", pod.view.full_name()));
    Ok(send(pod, patch))
}

/// The call that sends `patch` to `pod`, under its UID.
pub(crate) fn send(pod: ApiPod, patch: String) -> WritePlan {
    let view = &pod.view;
    let request = StatusPatch {
        namespace: view.metadata.namespace.clone(),
        name: view.metadata.name.clone(),
        uid_precondition: Some(view.metadata.uid.clone()),
        patch,
    };
    WritePlan::Send { call: ApiCall::PatchPodStatus(request), over: pod }
}

/// The patch's answer: the pod as stored after it, or a failure (logged).
pub(crate) fn finish_write<I: Imports>(
    manager: &mut Engine<I>,
    over: &ApiPod,
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

/// `canBeDeleted` (the same from 1.27 to 1.37): the pod is being deleted, is not a
/// mirror pod (their graceful deletion is not the kubelet's), its phase in `pod` is
/// terminal, and the status being synced is finished (it came from TerminatePod, which
/// the kubelet calls once the pod's containers are gone and its resources reclaimed).
pub(crate) fn can_be_deleted<I: Imports>(
    manager: &mut Engine<I>,
    pod: &ApiPod,
    status: &VersionedStatus,
) -> Result<bool> {
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

/// The host's time at the API server's precision.
fn now<I: Imports>(manager: &mut Engine<I>) -> Time {
    let mut now = manager.now_cached(&mut None);
    truncate_time(&mut now);
    now
}
