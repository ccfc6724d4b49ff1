//! Logic v3's manager: v2's, with each pod's sync writing without reading first.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_logic::manager::VersionedStatus;
use podstatus_logic::sync::{ApiPod, SyncPolicy, UnreadWrite, Write, WritePlan};
use podstatus_logic::{InvalidPod, LastWritten, ManagerError};
use podstatus_logic_v2::V2Sync;
use podstatus_logic_v2::conditions::merge_pod_status;
use podstatus_logic_v2::manager::{call_api, now};
use podstatus_logic_v2::patch::status_patch;

use crate::{
    ApiCall, ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, Imports, Level, PodSync, Result,
    StatusPatch, SyncOutcome, SyncRequest, SyncStep, UpdateOutcome,
};

/// The status manager, logic v3.
pub struct Manager<I: Imports> {
    /// v2's manager: every update, the sync pass and the batch; only the sync policy
    /// is v3's.
    v2: podstatus_logic_v2::Manager<I>,
}

impl<I: Imports> Manager<I> {
    /// An empty manager over `imports`.
    pub fn new(imports: I) -> Self {
        Manager { v2: podstatus_logic_v2::Manager::new(imports) }
    }

    /// The imports, for callers that own the world behind them (tests, benchmarks).
    pub fn imports_mut(&mut self) -> &mut I {
        self.v2.imports_mut()
    }

    /// The cached status of `uid` (a mirror pod's UID finds its static pod's status).
    pub fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        self.v2.get_pod_status(uid)
    }

    /// As v2's.
    pub fn set_pod_status(&mut self, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        self.v2.set_pod_status(pod_json, status_json)
    }

    /// As v2's.
    pub fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        self.v2.set_container_readiness(pod_uid, container_id, ready)
    }

    /// As v2's.
    pub fn set_container_startup(&mut self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome> {
        self.v2.set_container_startup(pod_uid, container_id, started)
    }

    /// As v2's.
    pub fn terminate_pod(&mut self, pod_json: &str) -> Result<UpdateOutcome> {
        self.v2.terminate_pod(pod_json)
    }

    /// Drops every cached status whose pod UID is not in `keep`; returns how many.
    pub fn remove_orphaned_statuses(&mut self, keep: &[String]) -> u32 {
        self.v2.remove_orphaned_statuses(keep)
    }

    /// v2's one signal, one pass, each pod synced by [`V3Sync`].
    pub fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        self.v2.sync_pod_with(&V3Sync, request)
    }

    /// v2's batch sync, each pod synced by [`V3Sync`].
    pub fn sync_batch(&mut self) -> BatchReport {
        self.v2.sync_batch_with(&V3Sync)
    }

    /// v2's plan of one request's pass (the syncs run with [`V3Sync`]).
    pub fn plan_sync_pod(&mut self, request: &SyncRequest) -> Result<Vec<PodSync>> {
        self.v2.plan_sync_pod(request)
    }

    /// v2's batch sync, decided with [`V3Sync`]'s decisions.
    pub fn plan_sync_batch(&mut self, slice: &BatchSlice) -> BatchPlan {
        self.v2.plan_sync_batch_with(&V3Sync, slice)
    }

    /// Starts the planned sync `id` with [`V3Sync`]'s decisions.
    pub fn start_sync(&mut self, id: u64) -> Result<SyncStep> {
        self.v2.start_sync_with(&V3Sync, id)
    }

    /// Resumes the suspended sync `id` with the answer to its call.
    pub fn resume_sync(&mut self, id: u64, reply: ApiReply) -> Result<SyncStep> {
        self.v2.resume_sync_with(&V3Sync, id, reply)
    }

    /// Forgets the sync `id`, planned or suspended; false when it was not known.
    pub fn drop_sync(&mut self, id: u64) -> bool {
        self.v2.drop_sync(id)
    }

    /// How many planned or suspended syncs the manager holds.
    pub fn syncs_in_flight(&self) -> usize {
        self.v2.syncs_in_flight()
    }

    /// The whole state, in v1's document format (with v3's `lastWritten` entries).
    pub fn save_state(&mut self) -> Result<String> {
        self.v2.save_state()
    }

    /// What changed since the last save, in v1's change-set format.
    pub fn save_state_changes(&mut self) -> Result<String> {
        self.v2.save_state_changes()
    }

    /// Replaces the whole state with a document from v1, v2 or v3; on error nothing
    /// changes.
    pub fn load_state(&mut self, document: &str) -> Result<()> {
        self.v2.load_state(document)
    }

    /// Applies a change set of another instance (v1, v2 or v3); on error nothing changes.
    pub fn apply_state_changes(&mut self, document: &str) -> Result<()> {
        self.v2.apply_state_changes(document)
    }
}

/// Logic v3's decisions in a sync: v2's, but the write is one PATCH without a GET
/// first ([`SyncPolicy::plan_unread`]); v2's read-then-write only after the API server
/// refused the shortcut.
pub struct V3Sync;

impl<I: Imports> SyncPolicy<I> for V3Sync {
    const CHECKS_NEEDS_UPDATE: bool = false;

    /// One strategic merge patch of `status` carrying the pod's UID, computed against
    /// what was last written for the pod (while still valid) or the pod manager's copy.
    fn plan_unread(
        &self,
        manager: &mut podstatus_logic::Manager<I>,
        uid: &str,
        status: &VersionedStatus,
    ) -> Result<Option<WritePlan>> {
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
            None => view.parse_status().invalid_pod(|| format!("status of {}", view.full_name()))?,
        };

        let now = now(manager);
        let merged = {
            let imports = manager.imports_mut();
            merge_pod_status(&base, &status.status, || imports.pod_could_have_running_containers(&pod.json), &now)
        };
        let patch = status_patch(&status_uid, &base, &merged).map_err(ManagerError::InvalidStatus)?;
        let patch = patch.map(|patch| crate::whole_conditions::whole_conditions(patch, &merged));
        let Some(patch) = patch else {
            manager.log(Level::Debug, || {
                format!("status of pod {} is up-to-date at version {}", view.full_name(), status.version)
            });
            // The version counts as written: what it was computed against stays the base.
            manager.set_last_written(uid, LastWritten { uid: status_uid, version: status.version, status: base });
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
        manager: &mut podstatus_logic::Manager<I>,
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
    fn plan_write(
        &self,
        manager: &mut podstatus_logic::Manager<I>,
        pod: ApiPod,
        status: &VersionedStatus,
    ) -> Result<WritePlan> {
        let plan = V2Sync.plan_write(manager, pod, status)?;
        if let WritePlan::Unchanged(pod) = &plan {
            record_translated(manager, pod, status.version)?;
        }
        Ok(plan)
    }

    /// v2's write finished, recorded as the base of the next patch.
    fn finish_write(
        &self,
        manager: &mut podstatus_logic::Manager<I>,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write> {
        let outcome = V2Sync.finish_write(manager, over, status, reply)?;
        if let Write::Written(pod) = &outcome {
            record_translated(manager, pod, status.version)?;
        }
        Ok(outcome)
    }

    /// v2's `canBeDeleted`.
    fn can_be_deleted(
        &self,
        manager: &mut podstatus_logic::Manager<I>,
        pod: &ApiPod,
        status: &VersionedStatus,
    ) -> Result<bool> {
        V2Sync.can_be_deleted(manager, pod, status)
    }

    /// v2's `isPodStatusByKubeletEqual`.
    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool {
        <V2Sync as SyncPolicy<I>>::status_equal(&V2Sync, api, cached)
    }

    /// v2's calls: v1's, and patches through v2's imports.
    fn call(&self, manager: &mut podstatus_logic::Manager<I>, call: ApiCall) -> ApiReply {
        call_api(manager, call)
    }
}

/// Records `pod`'s status (the API server's after v2's write of `version`, or as read
/// when nothing was sent) as the base of the next patch, under the UID of the pod's
/// cached status (a mirror pod's static pod).
fn record_translated<I: Imports>(manager: &mut podstatus_logic::Manager<I>, pod: &ApiPod, version: u64) -> Result<()> {
    let translated = manager.imports_mut().translate_pod_uid(&pod.view.metadata.uid);
    let uid = if translated.is_empty() { pod.view.metadata.uid.clone() } else { translated };
    record(manager, &uid, pod, version)
}

/// Records `pod`'s status (the API server's, after writing `version` of `uid`'s status)
/// as the base of the next patch.
fn record<I: Imports>(manager: &mut podstatus_logic::Manager<I>, uid: &str, pod: &ApiPod, version: u64) -> Result<()> {
    let view = &pod.view;
    let status = view.parse_status().invalid_pod(|| format!("status of {}", view.full_name()))?;
    manager.set_last_written(uid, LastWritten { uid: view.metadata.uid.clone(), version, status });
    Ok(())
}
