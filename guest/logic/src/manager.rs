//! The status manager: the cache of versioned statuses and the sync paths.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp as JiffTimestamp;

use crate::error::{InvalidPod, ManagerError, Result};
use crate::imports::{ApiCall, ApiError, ApiReply, Imports, Level, StatusUpdate, SyncRequest};
use crate::jobs::{BatchPlan, BatchSlice, Job, PodSync, SyncOrigin, SyncStep, SyncTarget};
use crate::normalize::normalize_status;
use crate::pod::{PodView, status_to_json};
use crate::ready::{POD_INITIALIZED, POD_READY, find_condition, find_condition_mut, generate_pod_ready_condition};
use crate::semantic_eq::status_equal;
use crate::sync::{ApiPod, SyncPolicy, Write, WritePlan};

/// A cached status with the per-pod version that keeps stale statuses from reaching
/// the API server, and the pod's name for writing it there.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedStatus {
    pub status: PodStatus,
    pub version: u64,
    pub pod_name: String,
    pub pod_namespace: String,
    /// Upstream's `podIsFinished` (since 1.27): the status came from TerminatePod, or
    /// followed one. Logic v1 never reads or sets it; it keeps it on each new version of
    /// the pod's status, so a newer logic version that handed over its state finds it
    /// again.
    pub pod_is_finished: bool,
}

/// What a logic version that patches without reading first (v3) last wrote for a pod:
/// the API server's status of `uid` as its answer to the write of `version`. Kept in the
/// state document (an optional field of the status entry) and carried untouched by the
/// versions that do not use it; it is a valid base for the next patch only while the
/// version recorded as written for `uid` is still `version` (see
/// [`Manager::written_base`]), so a write by another version, a forgotten written
/// version (a reconciliation) or another object under the same name makes it void.
#[derive(Clone, Debug, PartialEq)]
pub struct LastWritten {
    /// The object written: the pod's UID, a static pod's mirror pod's.
    pub uid: String,
    /// The status version written.
    pub version: u64,
    /// The API server's status after the write.
    pub status: PodStatus,
}

/// What `get_pod_status` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedStatus {
    pub version: u64,
    /// The normalised status as JSON.
    pub status: String,
}

/// What an update did (the WIT `update-outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    Queued,
    QueueFull,
    Unchanged,
    PodNotFound,
    NotCached,
    UnknownContainer,
}

/// What handling one sync request did (the WIT `sync-outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOutcome {
    UpToDate,
    PodNotFound,
    GetFailed,
    Recreated,
    WriteFailed,
    Written,
    Deleted,
    DeleteFailed,
}

/// What one batch sync did (the WIT `batch-report`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchReport {
    pub synced: u32,
    pub reconciled: u32,
    pub failed: u32,
}

/// A status snapshot waiting in the host's queue.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingSync {
    pub pod_uid: String,
    pub status: Arc<VersionedStatus>,
}

/// The status manager. All state is in ordered maps: a batch sync visits pods in UID
/// order and nothing depends on hash order.
pub struct Manager<I: Imports> {
    pub(crate) imports: I,
    /// Pod UID (a static pod's own UID) to its latest status. `Arc`: a queued snapshot
    /// and the cache usually share one status. Newer logic reads it through
    /// [`Manager::cached`] and changes it through the methods that record changes.
    pub(crate) statuses: BTreeMap<String, Arc<VersionedStatus>>,
    /// (Mirror) pod UID to the latest version written to the API server.
    pub(crate) api_versions: BTreeMap<String, u64>,
    /// The cached pods whose latest version is not written under their own UID: what a
    /// pass plans besides the static and mirror pods. A pass runs for every signal,
    /// and finding these by walking every cached pod took a sixth of the agent's CPU at
    /// 500 statuses a second; kept in step by [`Manager::reindex`] wherever `statuses`
    /// or `api_versions` change.
    unwritten: BTreeSet<String>,
    /// Snapshots referred to by requests in the host's queue, by request ID.
    pub(crate) pending: BTreeMap<u64, PendingSync>,
    pub(crate) next_request_id: u64,
    /// Pod UID (as `statuses`) to what was last written for it, for logic that patches
    /// without reading first. Dropped with the pod's status.
    pub(crate) last_written: BTreeMap<String, Arc<LastWritten>>,
    /// What changed since the state was last saved, for `save_state_changes`.
    pub(crate) changes: Changes,
    /// Syncs planned or suspended in a call, by ID (in order). Not part of the state.
    pub(crate) syncs: BTreeMap<u64, Job>,
    /// The ID of the next planned sync.
    pub(crate) next_sync_id: u64,
}

/// Keys changed since the last save, so a host can follow the state call by call
/// without copying all of it.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub statuses: BTreeSet<String>,
    pub api_versions: BTreeSet<String>,
    pub pending: BTreeSet<u64>,
}

impl<I: Imports> Manager<I> {
    /// An empty manager over `imports`.
    pub fn new(imports: I) -> Self {
        Manager {
            imports,
            statuses: BTreeMap::new(),
            api_versions: BTreeMap::new(),
            unwritten: BTreeSet::new(),
            pending: BTreeMap::new(),
            next_request_id: 1,
            last_written: BTreeMap::new(),
            changes: Changes::default(),
            syncs: BTreeMap::new(),
            next_sync_id: 1,
        }
    }

    /// The imports, for callers that own the world behind them (tests, benchmarks).
    pub fn imports_mut(&mut self) -> &mut I {
        &mut self.imports
    }

    /// The cached status of `uid` (a mirror pod's UID finds its static pod's status).
    pub fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        let uid = self.imports.translate_pod_uid(uid);
        match self.statuses.get(&uid) {
            None => Ok(None),
            Some(cached) => Ok(Some(CachedStatus {
                version: cached.version,
                status: status_to_json(&cached.status).map_err(ManagerError::InvalidStatus)?,
            })),
        }
    }

    /// Caches `status` for `pod`, forcing an update when the pod is being deleted (a pod
    /// that no longer runs must still be able to trigger its update and deletion).
    pub fn set_pod_status(&mut self, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(ManagerError::InvalidPod)?;
        let status = crate::pod::parse_status(status_json).map_err(ManagerError::InvalidStatus)?;
        let force = pod.is_being_deleted();
        self.update_status_internal(&pod, pod_json, status, force)
    }

    /// Sets one container's readiness in the cached status and regenerates Ready.
    pub fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        let Some(pod_json) = self.imports.get_pod_by_uid(pod_uid) else {
            self.log(Level::Debug, || format!("pod {pod_uid} has been deleted, no need to update readiness"));
            return Ok(UpdateOutcome::PodNotFound);
        };
        let pod = PodView::parse_with_uid(&pod_json).invalid_pod(|| format!("pod manager's pod {pod_uid}"))?;
        let Some(cached) = self.statuses.get(&pod.metadata.uid).cloned() else {
            self.log(Level::Warn, || {
                format!("container readiness changed before pod has synced: {} - {container_id}", pod.full_name())
            });
            return Ok(UpdateOutcome::NotCached);
        };
        let Some(container) = find_container_status(&cached.status, container_id) else {
            self.log(Level::Warn, || {
                format!("container readiness changed for unknown container: {} - {container_id}", pod.full_name())
            });
            return Ok(UpdateOutcome::UnknownContainer);
        };
        if container.ready == ready {
            return Ok(UpdateOutcome::Unchanged);
        }

        let mut status = cached.status.clone();
        if let Some(container) = find_container_status_mut(&mut status, container_id) {
            container.ready = ready;
        }
        let ready_condition =
            generate_pod_ready_condition(&pod.spec, status.container_statuses.as_deref(), status.phase.as_deref());
        match find_condition_mut(&mut status, POD_READY) {
            Some(existing) => *existing = ready_condition,
            None => {
                self.log(Level::Warn, || format!("pod status of {} is missing the Ready condition", pod.full_name()));
                status.conditions.get_or_insert_with(Vec::new).push(ready_condition);
            }
        }
        self.update_status_internal(&pod, &pod_json, status, false)
    }

    /// Marks every container of `pod` terminated and forces an update.
    pub fn terminate_pod(&mut self, pod_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(ManagerError::InvalidPod)?;
        let mut status = match self.statuses.get(&pod.metadata.uid) {
            Some(cached) => cached.status.clone(),
            None => pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?,
        };
        let terminated =
            || ContainerState { terminated: Some(ContainerStateTerminated::default()), ..ContainerState::default() };
        for container in status.container_statuses.iter_mut().flatten() {
            container.state = Some(terminated());
        }
        for container in status.init_container_statuses.iter_mut().flatten() {
            container.state = Some(terminated());
        }
        self.update_status_internal(&pod, pod_json, status, true)
    }

    /// Drops every cached status whose pod UID is not in `keep`; returns how many.
    pub fn remove_orphaned_statuses(&mut self, keep: &[String]) -> u32 {
        let keep: BTreeSet<&str> = keep.iter().map(String::as_str).collect();
        let orphans: Vec<String> = self.statuses.keys().filter(|uid| !keep.contains(uid.as_str())).cloned().collect();
        for uid in &orphans {
            self.drop_status(uid);
        }
        u32::try_from(orphans.len()).unwrap_or(u32::MAX)
    }

    /// Handles one request the host took off the sync queue: writes the snapshot it
    /// was queued with ([`Manager::plan_sync_pod`], run to its end).
    pub fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        let syncs = self.plan_sync_pod(request)?;
        self.run_syncs_with(&Seed, syncs)
    }

    /// One periodic batch sync: forgets the API versions of pods that are gone, then
    /// syncs, in UID order, every status the API server lacks or has drifted from
    /// ([`Manager::plan_sync_batch`], each sync run to its end).
    pub fn sync_batch(&mut self) -> BatchReport {
        self.sync_batch_with(&Seed)
    }

    /// Takes one request off the sync queue (it is used up) and plans its sync: one,
    /// of the snapshot it was queued with.
    pub fn plan_sync_pod(&mut self, request: &SyncRequest) -> Result<Vec<PodSync>> {
        let pending = self.take_request(request)?;
        Ok(vec![self.plan_sync(&pending.pod_uid, SyncOrigin::Request, SyncTarget::Snapshot(pending.status))])
    }

    /// One periodic batch sync (or the slice `slice` of it), decided: the gone versions
    /// are forgotten, and the syncs to run are planned.
    pub fn plan_sync_batch(&mut self, slice: &BatchSlice) -> BatchPlan {
        self.plan_sync_batch_with(&Seed, slice)
    }

    /// Starts the planned sync `id` (see [`Manager::start_sync_with`]).
    pub fn start_sync(&mut self, id: u64) -> Result<SyncStep> {
        self.start_sync_with(&Seed, id)
    }

    /// Resumes the suspended sync `id` with the answer to its call (see
    /// [`Manager::resume_sync_with`]).
    pub fn resume_sync(&mut self, id: u64, reply: ApiReply) -> Result<SyncStep> {
        self.resume_sync_with(&Seed, id, reply)
    }

    /// Caches a new status version unless nothing changed, and queues its write.
    fn update_status_internal(
        &mut self,
        pod: &PodView,
        pod_json: &str,
        mut status: PodStatus,
        force: bool,
    ) -> Result<UpdateOutcome> {
        let uid = &pod.metadata.uid;
        let cached = self.statuses.get(uid).cloned();
        let fetched;
        let old_status: &PodStatus = match &cached {
            Some(cached) => &cached.status,
            None => {
                fetched = match self.imports.get_mirror_pod_by_pod(pod_json) {
                    Some(mirror_json) => PodView::parse_with_uid(&mirror_json)
                        .and_then(|mirror| mirror.parse_status())
                        .invalid_pod(|| format!("mirror pod of {}", pod.full_name()))?,
                    None => pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?,
                };
                &fetched
            }
        };

        let mut now = None;
        for condition_type in [POD_READY, POD_INITIALIZED] {
            if let Some(condition) = find_condition_mut(&mut status, condition_type) {
                condition.last_transition_time = match find_condition(old_status, condition_type) {
                    Some(old) if old.status == condition.status => old.last_transition_time.clone(),
                    _ => Some(self.now_cached(&mut now)),
                };
            }
        }

        match &old_status.start_time {
            Some(start) if !is_zero(start) => status.start_time = Some(start.clone()),
            _ => {
                if status.start_time.as_ref().is_none_or(is_zero) {
                    status.start_time = Some(self.now_cached(&mut now));
                }
            }
        }

        normalize_status(&pod.spec, &mut status);
        if let Some(cached) = &cached
            && !force
            && status_equal(&cached.status, &status)
        {
            self.log(Level::Trace, || format!("ignoring same status for pod {}", pod.full_name()));
            return Ok(UpdateOutcome::Unchanged);
        }

        let versioned = Arc::new(VersionedStatus {
            status,
            version: cached.as_ref().map_or(0, |c| c.version) + 1,
            pod_name: pod.metadata.name.clone(),
            pod_namespace: pod.metadata.namespace.clone(),
            pod_is_finished: cached.is_some_and(|c| c.pod_is_finished),
        });
        self.put_status(uid, Arc::clone(&versioned));
        Ok(self.enqueue(uid, versioned))
    }

    /// Pushes a sync request; when the queue is full the batch sync will catch up.
    pub fn enqueue(&mut self, uid: &str, status: Arc<VersionedStatus>) -> UpdateOutcome {
        let id = self.next_request_id;
        self.next_request_id += 1;
        let request = SyncRequest { id, pod_uid: uid.to_string(), version: status.version };
        self.pending.insert(id, PendingSync { pod_uid: uid.to_string(), status });
        self.changes.pending.insert(id);
        if self.imports.push_sync_request(request) {
            UpdateOutcome::Queued
        } else {
            self.drop_pending(id);
            self.log(Level::Debug, || format!("sync queue full; pod {uid} waits for the batch sync"));
            UpdateOutcome::QueueFull
        }
    }

    /// The cached status of `uid` (a static pod's own UID), if any.
    pub fn cached(&self, uid: &str) -> Option<Arc<VersionedStatus>> {
        self.statuses.get(uid).cloned()
    }

    /// Whether `version` (or a later one) was written to the API server for `uid` (a
    /// mirror pod's UID for a static pod).
    pub fn is_written(&self, uid: &str, version: u64) -> bool {
        self.api_versions.get(uid).is_some_and(|&written| written >= version)
    }

    /// The cached pods other than `except`, in UID order, that a pass plans a sync of:
    /// all but those whose sync would find the latest status written however the pass's
    /// other syncs go, that is, pods that are neither static nor any static pod's mirror
    /// pod (whose written version another pod's sync may record) and whose latest
    /// version is written under their own UID (written versions only grow outside a
    /// batch). Read off [`Manager::unwritten`] and the pairs, not a walk over every
    /// cached pod: a pass runs for every signal.
    pub fn unwritten_for_pass(&self, pod_to_mirror: &BTreeMap<String, String>, except: &str) -> Vec<String> {
        let paired = pod_to_mirror.iter().flat_map(|(pod, mirror)| [pod, mirror]);
        let mut planned: BTreeSet<&str> = self.unwritten.iter().map(String::as_str).collect();
        planned.extend(paired.filter(|uid| self.statuses.contains_key(*uid)).map(String::as_str));
        planned.remove(except);
        let planned: Vec<String> = planned.into_iter().map(str::to_string).collect();
        debug_assert_eq!(planned, self.unwritten_walked(pod_to_mirror, except), "the unwritten index is out of step");
        planned
    }

    /// [`Manager::unwritten_for_pass`] by its definition, a walk over every cached pod:
    /// what debug builds check the index against.
    fn unwritten_walked(&self, pod_to_mirror: &BTreeMap<String, String>, except: &str) -> Vec<String> {
        let paired = |uid: &str| pod_to_mirror.contains_key(uid) || pod_to_mirror.values().any(|m| m == uid);
        self.statuses
            .iter()
            .filter(|(uid, status)| *uid != except && (paired(uid) || self.is_unwritten(uid, status)))
            .map(|(uid, _)| uid.clone())
            .collect()
    }

    /// Puts `uid` in [`Manager::unwritten`] or takes it out, after its cached status or
    /// its written version changed.
    pub(crate) fn reindex(&mut self, uid: &str) {
        let unwritten = self.statuses.get(uid).is_some_and(|status| self.is_unwritten(uid, status));
        if !unwritten {
            self.unwritten.remove(uid);
        } else if !self.unwritten.contains(uid) {
            self.unwritten.insert(uid.to_string());
        }
    }

    /// Rebuilds [`Manager::unwritten`] after the whole state was replaced.
    pub(crate) fn reindex_all(&mut self) {
        self.unwritten = self
            .statuses
            .iter()
            .filter(|(uid, status)| self.is_unwritten(uid, status))
            .map(|(uid, _)| uid.clone())
            .collect();
    }

    /// Whether `status`, cached for `uid`, is newer than what was written under `uid`
    /// itself: what puts a pod in [`Manager::unwritten`].
    fn is_unwritten(&self, uid: &str, status: &VersionedStatus) -> bool {
        !self.is_written(uid, status.version)
    }

    /// The pods that sync requests queued in the host refer to, in request order.
    pub fn queued_pods(&self) -> Vec<String> {
        self.pending.values().map(|p| p.pod_uid.clone()).collect()
    }

    /// The snapshot `request` refers to, taken out of the state (a request is handled
    /// once): an error unless this manager queued exactly that request.
    pub fn take_request(&mut self, request: &SyncRequest) -> Result<PendingSync> {
        match self.pending.get(&request.id) {
            Some(p) if p.pod_uid == request.pod_uid && p.status.version == request.version => {}
            _ => return Err(ManagerError::UnknownRequest(request.id)),
        }
        self.drop_pending(request.id).ok_or(ManagerError::UnknownRequest(request.id))
    }

    /// Caches `status` for `uid`, noting the change.
    pub fn put_status(&mut self, uid: &str, status: Arc<VersionedStatus>) {
        self.statuses.insert(uid.to_string(), status);
        self.reindex(uid);
        self.note_status_change(uid);
    }

    /// Drops the cached status of `uid` (and what was last written for it), noting the
    /// change.
    pub(crate) fn drop_status(&mut self, uid: &str) {
        for job in self.syncs.values_mut() {
            job.note_status_dropped(uid);
        }
        let written = self.last_written.remove(uid).is_some();
        if self.statuses.remove(uid).is_some() || written {
            self.reindex(uid);
            self.note_status_change(uid);
        }
    }

    /// Records what was written for `uid` (a cached pod's own UID), noting the change;
    /// ignored when nothing is cached for it.
    pub fn set_last_written(&mut self, uid: &str, written: LastWritten) {
        if self.statuses.contains_key(uid) {
            self.last_written.insert(uid.to_string(), Arc::new(written));
            self.note_status_change(uid);
        }
    }

    /// What was last written for `uid` (a cached pod's own UID), if it is still the
    /// API server's status as far as this manager knows: written to `status_uid` (the
    /// pod's, or its mirror pod's, UID) at the version still recorded as written there.
    pub fn written_base(&self, uid: &str, status_uid: &str) -> Option<Arc<LastWritten>> {
        let written = self.last_written.get(uid)?;
        (written.uid == status_uid && self.api_versions.get(status_uid) == Some(&written.version))
            .then(|| Arc::clone(written))
    }

    /// A queued snapshot of `uid` that shared the cached status no longer does, so a
    /// saved change must now carry that snapshot itself.
    fn note_status_change(&mut self, uid: &str) {
        self.changes.statuses.insert(uid.to_string());
        let queued = self.pending.iter().filter(|(_, p)| p.pod_uid == uid).map(|(id, _)| *id);
        self.changes.pending.extend(queued);
    }

    /// Records `version` as written to the API server for `uid`, noting the change.
    pub(crate) fn set_api_version(&mut self, uid: &str, version: u64) {
        self.api_versions.insert(uid.to_string(), version);
        self.reindex(uid);
        self.changes.api_versions.insert(uid.to_string());
    }

    /// Forgets the version written for `uid`, noting the change.
    pub(crate) fn drop_api_version(&mut self, uid: &str) {
        if self.api_versions.remove(uid).is_some() {
            self.reindex(uid);
            self.changes.api_versions.insert(uid.to_string());
        }
    }

    /// Drops the snapshot of request `id`, noting the change.
    pub(crate) fn drop_pending(&mut self, id: u64) -> Option<PendingSync> {
        let pending = self.pending.remove(&id)?;
        self.changes.pending.insert(id);
        Some(pending)
    }

    /// The host's time, read at most once per update so that every time set by one
    /// update is the same instant.
    pub fn now_cached(&mut self, now: &mut Option<Time>) -> Time {
        now.get_or_insert_with(|| {
            let ts = self.imports.now();
            let nanos = i32::try_from(ts.nanoseconds).unwrap_or(0);
            Time(JiffTimestamp::new(ts.seconds, nanos).unwrap_or(JiffTimestamp::UNIX_EPOCH))
        })
        .clone()
    }

    /// Logs through the imports, building the message only when the level is enabled.
    pub fn log(&mut self, level: Level, message: impl FnOnce() -> String) {
        if self.imports.log_enabled(level) {
            let message = message();
            self.imports.log(level, &message);
        }
    }
}

/// Go's zero `metav1.Time` (0001-01-01T00:00:00Z) means "unset".
pub fn is_zero(time: &Time) -> bool {
    time.0.as_second() == GO_ZERO_TIME_SECONDS && time.0.subsec_nanosecond() == 0
}

/// Seconds from the Unix epoch back to 0001-01-01T00:00:00Z.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

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

/// The 2017 status manager's decisions in a sync.
struct Seed;

impl<I: Imports> SyncPolicy<I> for Seed {
    const CHECKS_NEEDS_UPDATE: bool = true;

    /// A PUT of the whole status, guarded by the object as read.
    fn plan_write(&self, _manager: &mut Manager<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan> {
        let view = &pod.view;
        let update = StatusUpdate {
            namespace: view.metadata.namespace.clone(),
            name: view.metadata.name.clone(),
            // The PUT carries the object as read, so its UID and resourceVersion hold
            // the write to exactly that object.
            uid_precondition: Some(view.metadata.uid.clone()).filter(|u| !u.is_empty()),
            resource_version_precondition: view.metadata.resource_version.clone(),
            status: status_to_json(&status.status).map_err(ManagerError::InvalidStatus)?,
        };
        Ok(WritePlan::Send { call: ApiCall::UpdatePodStatus(update), over: pod })
    }

    fn finish_write(
        &self,
        manager: &mut Manager<I>,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write> {
        let updated_json = match reply {
            Ok(json) => json,
            Err(e) => {
                manager.log(Level::Warn, || {
                    format!("failed to update status for pod {}: {}", over.view.full_name(), e.message())
                });
                return Ok(Write::Failed);
            }
        };
        let updated = ApiPod::parse(updated_json, || "API server's pod after the write".into())?;
        manager.log(Level::Debug, || {
            format!("status for pod {} updated to version {}", updated.view.full_name(), status.version)
        });
        Ok(Write::Written(updated))
    }

    /// Being deleted, not a mirror pod (mirror pods' graceful deletion is not ours to
    /// handle), and its resources reclaimed.
    fn can_be_deleted(&self, manager: &mut Manager<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool> {
        if !pod.view.is_being_deleted() || pod.view.is_mirror() {
            return Ok(false);
        }
        let status_json = status_to_json(&status.status).map_err(ManagerError::InvalidStatus)?;
        Ok(manager.imports.pod_resources_are_reclaimed(&pod.json, &status_json))
    }

    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool {
        status_equal(api, cached)
    }
}
