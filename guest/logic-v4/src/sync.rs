//! Logic v4's decisions in a sync: v3's way of writing (one UID-guarded strategic merge
//! PATCH computed against what was last written or the pod manager's copy, no GET; a
//! GET and v2's write only after a refused precondition or a conflict), with 1.35's
//! `mergePodStatus` and `isPodStatusByKubeletEqual`; 1.27's `canBeDeleted`. Two
//! things differ from v3, both found by `fuzz --logic v4`: every patch carries the
//! whole merged status (the kubelet's own conditions whole, every other field of it),
//! so it ends as computed whatever another writer did since its base; and a pod being
//! deleted is read before the delete is decided when there was nothing to send.
//!
//! This is v3's `SyncPolicy` with the merge swapped: v3's code calls v2's merge
//! directly, so until it is generic over the merge the flow is repeated here.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_logic::{
    ApiCall, ApiError, ApiPod, ApiReply, Engine, InvalidPod, LastWritten, Level, ManagerError, Result, SyncPolicy,
    UnreadWrite, VersionedStatus, Write, WritePlan,
};
use podstatus_logic_v2::patch::status_patch;
use podstatus_logic_v2::{Imports, StatusPatch, V2, call_api, now};
use podstatus_logic_v3::whole_status::whole_status;

use crate::V4;
use crate::conditions::{is_pod_status_by_kubelet_equal, merge_pod_status, owned_by_kubelet};
use crate::pod_spec::PodSpec135;

/// A patch planned over `base`, the status it was computed against, or nothing to send.
enum Planned {
    Send(String),
    Nothing,
}

impl<I: Imports> SyncPolicy<I> for V4 {
    const CHECKS_NEEDS_UPDATE: bool = false;

    /// One strategic merge patch of `status` carrying the pod's UID, computed against
    /// what was last written for the pod (while still valid) or the pod manager's copy.
    fn plan_unread(&self, manager: &mut Engine<I>, uid: &str, status: &VersionedStatus) -> Result<Option<WritePlan>> {
        let Some(pod_json) = manager.imports_mut().get_pod_by_uid(uid) else {
            return Ok(None);
        };
        let mut pod = ApiPod::parse(pod_json, || format!("pod manager's pod {uid}"))?;
        if pod.view.is_static() {
            let Some(mirror_json) = manager.imports_mut().get_mirror_pod_by_pod(&pod.json) else {
                return Ok(None);
            };
            pod = ApiPod::parse(mirror_json, || format!("mirror pod of {uid}"))?;
        }
        let view = &pod.view;
        let status_uid = view.metadata.uid.clone();
        // The last write is the base unless the pod manager's copy is newer: then
        // another writer changed the pod since, and the copy (the watch's) shows how.
        let written = manager.written_base(uid, &status_uid).filter(|written| {
            !is_newer(view.metadata.resource_version.as_deref(), written.resource_version.as_deref())
        });
        let (base, base_version): (PodStatus, Option<String>) = match written {
            Some(written) => (written.status.clone(), written.resource_version.clone()),
            None => (pod.parse_status()?, view.metadata.resource_version.clone()),
        };
        match plan_patch(manager, &pod, &base, status)? {
            // Nothing to send for a pod being deleted: whether to delete it is decided
            // over the pod as read, as upstream does. The pod manager's copy may be of a
            // pod already deleted and recreated under another UID: its delete would only
            // be refused, but it is a call no sync of upstream makes.
            Planned::Nothing if view.is_being_deleted() && !view.is_mirror() => {
                manager.log(Level::Debug, || {
                    format!("pod {} is being deleted: reading it before deciding", view.full_name())
                });
                Ok(None)
            }
            Planned::Nothing => {
                manager.log(Level::Debug, || {
                    format!("status of pod {} is up-to-date at version {}", view.full_name(), status.version)
                });
                // The version counts as written: what it was computed against stays the base.
                let record = LastWritten {
                    uid: status_uid,
                    version: status.version,
                    status: base,
                    resource_version: base_version,
                };
                manager.set_last_written(uid, record);
                Ok(Some(WritePlan::Unchanged(pod)))
            }
            Planned::Send(patch) => {
                manager.log(Level::Debug, || {
                    format!("patching status of pod {} without reading: {patch}", view.full_name())
                });
                Ok(Some(send(pod, patch)))
            }
        }
    }

    /// The patch's answer: recorded as the base of the next patch once written; a
    /// refused precondition or a conflict falls back to reading the pod.
    fn finish_unread(
        &self,
        manager: &mut Engine<I>,
        uid: &str,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<UnreadWrite> {
        let view = &over.view;
        match reply {
            Ok(json) => {
                let written = ApiPod::parse(json, || "API server's pod after the patch".into())?;
                record(manager, uid, &written, status.version)?;
                Ok(UnreadWrite::Written(written))
            }
            Err(ApiError::NotFound(m)) => {
                manager.log(Level::Debug, || {
                    format!("pod {} ({uid}) does not exist on the server: {m}", view.full_name())
                });
                Ok(UnreadWrite::NotFound)
            }
            Err(ApiError::Conflict(m)) => {
                manager.log(Level::Info, || {
                    format!("patch of pod {} refused ({m}): recreated or stale; reading the pod", view.full_name())
                });
                Ok(UnreadWrite::ReadFirst)
            }
            Err(e) => {
                manager.log(Level::Warn, || {
                    format!("failed to patch status of pod {}: {}", view.full_name(), e.message())
                });
                Ok(UnreadWrite::Failed)
            }
        }
    }

    /// After a refused shortcut: the write over the pod as read (upstream's), recorded
    /// as the base of the next patch when nothing is sent.
    fn plan_write(&self, manager: &mut Engine<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan> {
        let view = &pod.view;
        let api_status = pod.parse_status()?;
        match plan_patch(manager, &pod, &api_status, status)? {
            Planned::Nothing => {
                manager.log(Level::Debug, || {
                    format!("status of pod {} is up-to-date at version {}", view.full_name(), status.version)
                });
                record_translated(manager, &pod, status.version)?;
                Ok(WritePlan::Unchanged(pod))
            }
            Planned::Send(patch) => {
                manager.log(Level::Debug, || format!("patching status of pod {}: {patch}", view.full_name()));
                Ok(send(pod, patch))
            }
        }
    }

    /// v2's write finished, recorded as the base of the next patch.
    fn finish_write(
        &self,
        manager: &mut Engine<I>,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write> {
        let outcome = V2.finish_write(manager, over, status, reply)?;
        if let Write::Written(pod) = &outcome {
            record_translated(manager, pod, status.version)?;
        }
        Ok(outcome)
    }

    /// 1.27's `canBeDeleted`, which 1.35 keeps.
    fn can_be_deleted(&self, manager: &mut Engine<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool> {
        V2.can_be_deleted(manager, pod, status)
    }

    /// 1.35's `isPodStatusByKubeletEqual`.
    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool {
        is_pod_status_by_kubelet_equal(api, cached)
    }

    /// v2's calls: v1's, and patches through v2's imports.
    fn call(&self, manager: &mut Engine<I>, call: ApiCall) -> ApiReply {
        call_api(manager, call)
    }
}

/// 1.35's merge of `status` into `base` over `pod` and the strategic merge patch from
/// `base` to it, carrying the whole merged status (v3's `whole_status`): another writer
/// may have changed any field on the server since the base, whether it was last
/// written (a patch without reading) or read a moment ago (a patch held in flight lands after a write
/// that came between; upstream's patch, a diff without a resourceVersion, then leaves
/// half a condition).
fn plan_patch<I: Imports>(
    manager: &mut Engine<I>,
    pod: &ApiPod,
    base: &PodStatus,
    status: &VersionedStatus,
) -> Result<Planned> {
    let spec = PodSpec135::parse(&pod.json).invalid_pod(|| pod.view.full_name())?;
    let now = now(manager);
    let merged = {
        let imports = manager.imports_mut();
        merge_pod_status(&spec, base, &status.status, || imports.pod_could_have_running_containers(&pod.json), &now)
    };
    let patch =
        status_patch(&pod.view.metadata.uid, base, &merged).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
    Ok(match patch {
        None => Planned::Nothing,
        // A shared condition (DisruptionTarget) is another writer's too: sent only
        // when the merge changed it, as the diff already does.
        Some(patch) => Planned::Send(whole_status(patch, &merged, &owned_by_kubelet)),
    })
}

fn send(pod: ApiPod, patch: String) -> WritePlan {
    let view = &pod.view;
    let request = StatusPatch {
        namespace: view.metadata.namespace.clone(),
        name: view.metadata.name.clone(),
        uid_precondition: Some(view.metadata.uid.clone()),
        patch,
    };
    WritePlan::Send { call: ApiCall::PatchPodStatus(request), over: pod }
}

/// Records `pod`'s status (the API server's after writing `version`, or as read when
/// nothing was sent) as the base of the next patch, under the UID of the pod's cached
/// status (a mirror pod's static pod).
fn record_translated<I: Imports>(manager: &mut Engine<I>, pod: &ApiPod, version: u64) -> Result<()> {
    let translated = manager.imports_mut().translate_pod_uid(&pod.view.metadata.uid);
    let uid = if translated.is_empty() { pod.view.metadata.uid.clone() } else { translated };
    record(manager, &uid, pod, version)
}

/// Records `pod`'s status, the API server's after writing `version` of `uid`'s status.
fn record<I: Imports>(manager: &mut Engine<I>, uid: &str, pod: &ApiPod, version: u64) -> Result<()> {
    let view = &pod.view;
    let status = pod.parse_status()?;
    let resource_version = view.metadata.resource_version.clone();
    manager.set_last_written(uid, LastWritten { uid: view.metadata.uid.clone(), version, status, resource_version });
    Ok(())
}

/// Whether `copy` is a newer resourceVersion than `written`. Kubernetes calls them
/// opaque; etcd's (and the embedded server's) are integers that grow with every write,
/// so two integers compare, and anything else is not known to be newer (the last write
/// stays the base, as in v3).
fn is_newer(copy: Option<&str>, written: Option<&str>) -> bool {
    match (copy.and_then(|c| c.parse::<u64>().ok()), written.and_then(|w| w.parse::<u64>().ok())) {
        (Some(copy), Some(written)) => copy > written,
        _ => false,
    }
}
