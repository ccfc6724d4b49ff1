//! Logic v3's decisions: v2's updates as they are, and a sync that writes each status
//! version with one PATCH, without reading the pod first.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_logic::{
    ApiCall, ApiError, ApiPod, ApiReply, ContainerProbe, Engine, LastWritten, Level, ManagerError, PodSync, Policy,
    Result, SyncPolicy, SyncRequest, UnreadWrite, UpdateOutcome, VersionedStatus, Write, WritePlan,
};
use podstatus_logic_v2::conditions::merge_pod_status;
use podstatus_logic_v2::patch::status_patch;
use podstatus_logic_v2::{Imports, StatusPatch, V2, call_api, now};

use crate::V3;

/// v2's updates and v2's pass: v3 changes only how each pod's sync writes.
impl<I: Imports> Policy<I> for V3 {
    fn set_pod_status(&self, engine: &mut Engine<I>, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        V2.set_pod_status(engine, pod_json, status_json)
    }

    fn set_container_readiness(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome> {
        V2.set_container_readiness(engine, probe)
    }

    fn set_container_startup(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome> {
        V2.set_container_startup(engine, probe)
    }

    fn terminate_pod(&self, engine: &mut Engine<I>, pod_json: &str) -> Result<UpdateOutcome> {
        V2.terminate_pod(engine, pod_json)
    }

    fn plan_sync_pod(&self, engine: &mut Engine<I>, request: &SyncRequest) -> Result<Vec<PodSync>> {
        <V2 as Policy<I>>::plan_sync_pod(&V2, engine, request)
    }
}

/// Logic v3's decisions in a sync: v2's, but the write is one PATCH without a GET
/// first ([`SyncPolicy::plan_unread`]); v2's read-then-write only after the API server
/// refused the shortcut.
impl<I: Imports> SyncPolicy<I> for V3 {
    const CHECKS_NEEDS_UPDATE: bool = false;

    /// One strategic merge patch of `status` carrying the pod's UID, computed against
    /// what was last written for the pod (while still valid) or the pod manager's copy.
    fn plan_unread(&self, manager: &mut Engine<I>, uid: &str, status: &VersionedStatus) -> Result<Option<WritePlan>> {
        // The pod as the pod manager has it; a static pod's status lives on its mirror.
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
        let base: PodStatus = match manager.written_base(uid, &status_uid) {
            Some(written) => written.status.clone(),
            None => pod.parse_status()?,
        };

        let now = now(manager);
        let merged = {
            let imports = manager.imports_mut();
            merge_pod_status(&base, &status.status, || imports.pod_could_have_running_containers(&pod.json), &now)
        };
        let patch =
            status_patch(&status_uid, &base, &merged).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        let patch = patch.map(|patch| crate::whole_conditions::whole_conditions(patch, &merged));
        let Some(patch) = patch else {
            manager.log(Level::Debug, || {
                format!("status of pod {} is up-to-date at version {}", view.full_name(), status.version)
            });
            // The version counts as written: what it was computed against stays the base.
            manager.set_last_written(
                uid,
                LastWritten { uid: status_uid, version: status.version, status: base, resource_version: None },
            );
            return Ok(Some(WritePlan::Unchanged(pod)));
        };
        manager.log(Level::Debug, || format!("patching status of pod {} without reading: {patch}", view.full_name()));
        let request = StatusPatch {
            namespace: view.metadata.namespace.clone(),
            name: view.metadata.name.clone(),
            uid_precondition: Some(status_uid),
            patch,
        };
        Ok(Some(WritePlan::Send { call: ApiCall::PatchPodStatus(request), over: pod }))
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

    /// After a refused shortcut: v2's write over the pod as read, recorded as the base
    /// of the next patch (what the API server has when nothing is sent).
    fn plan_write(&self, manager: &mut Engine<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan> {
        let plan = V2.plan_write(manager, pod, status)?;
        if let WritePlan::Unchanged(pod) = &plan {
            record_translated(manager, pod, status.version)?;
        }
        Ok(plan)
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

    /// v2's `canBeDeleted`.
    fn can_be_deleted(&self, manager: &mut Engine<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool> {
        V2.can_be_deleted(manager, pod, status)
    }

    /// v2's `isPodStatusByKubeletEqual`.
    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool {
        <V2 as SyncPolicy<I>>::status_equal(&V2, api, cached)
    }

    /// v2's calls: v1's, and patches through v2's imports.
    fn call(&self, manager: &mut Engine<I>, call: ApiCall) -> ApiReply {
        call_api(manager, call)
    }
}

/// Records `pod`'s status (the API server's after v2's write of `version`, or as read
/// when nothing was sent) as the base of the next patch, under the UID of the pod's
/// cached status (a mirror pod's static pod).
fn record_translated<I: Imports>(manager: &mut Engine<I>, pod: &ApiPod, version: u64) -> Result<()> {
    let translated = manager.imports_mut().translate_pod_uid(&pod.view.metadata.uid);
    let uid = if translated.is_empty() { pod.view.metadata.uid.clone() } else { translated };
    record(manager, &uid, pod, version)
}

/// Records `pod`'s status (the API server's, after writing `version` of `uid`'s status)
/// as the base of the next patch.
fn record<I: Imports>(manager: &mut Engine<I>, uid: &str, pod: &ApiPod, version: u64) -> Result<()> {
    let view = &pod.view;
    let status = pod.parse_status()?;
    manager
        .set_last_written(uid, LastWritten { uid: view.metadata.uid.clone(), version, status, resource_version: None });
    Ok(())
}
