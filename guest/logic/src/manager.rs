//! The status manager: the cache of versioned statuses and the sync paths.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp as JiffTimestamp;

use crate::error::{ManagerError, Result};
use crate::imports::{ApiError, DeleteOptions, Imports, Level, StatusUpdate, SyncRequest};
use crate::normalize::normalize_status;
use crate::pod::{PodView, status_to_json};
use crate::ready::{POD_INITIALIZED, POD_READY, find_condition, find_condition_mut, generate_pod_ready_condition};
use crate::semantic_eq::status_equal;

/// A cached status with the per-pod version that keeps stale statuses from reaching
/// the API server, and the pod's name for writing it there.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedStatus {
    pub status: PodStatus,
    pub version: u64,
    pub pod_name: String,
    pub pod_namespace: String,
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
    /// and the cache usually share one status. Public for newer logic built on this
    /// state; change it only through the methods that record changes.
    pub statuses: BTreeMap<String, Arc<VersionedStatus>>,
    /// (Mirror) pod UID to the latest version written to the API server.
    pub api_versions: BTreeMap<String, u64>,
    /// Snapshots referred to by requests in the host's queue, by request ID.
    pub pending: BTreeMap<u64, PendingSync>,
    pub(crate) next_request_id: u64,
    /// What changed since the state was last saved, for `save_state_changes`.
    pub(crate) changes: Changes,
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
            pending: BTreeMap::new(),
            next_request_id: 1,
            changes: Changes::default(),
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
        let pod = PodView::parse_with_uid(&pod_json)
            .map_err(|e| ManagerError::InvalidPod(format!("pod manager's pod {pod_uid}: {e}")))?;
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
            None => pod
                .parse_status()
                .map_err(|e| ManagerError::InvalidPod(format!("status of {}: {e}", pod.full_name())))?,
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

    /// Handles one request the host took off the sync queue.
    pub fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        match self.pending.get(&request.id) {
            Some(p) if p.pod_uid == request.pod_uid && p.status.version == request.version => {}
            _ => return Err(ManagerError::UnknownRequest(request.id)),
        }
        let pending = self.drop_pending(request.id).ok_or(ManagerError::UnknownRequest(request.id))?;
        self.sync_one(&pending.pod_uid, &pending.status)
    }

    /// One periodic batch sync: forgets the API versions of pods that are gone, then
    /// syncs, in UID order, every status the API server lacks or has drifted from.
    pub fn sync_batch(&mut self) -> BatchReport {
        let translations = self.imports.get_uid_translations();
        let pod_to_mirror: BTreeMap<String, String> = translations.pod_to_mirror.into_iter().collect();
        let mirrors: BTreeSet<String> = translations.mirror_to_pod.into_iter().map(|(mirror, _)| mirror).collect();

        let gone: Vec<String> = self
            .api_versions
            .keys()
            .filter(|uid| !self.statuses.contains_key(*uid) && !mirrors.contains(*uid))
            .cloned()
            .collect();
        for uid in &gone {
            self.drop_api_version(uid);
        }

        let mut report = BatchReport::default();
        let mut updates = Vec::new();
        let cached: Vec<(String, Arc<VersionedStatus>)> =
            self.statuses.iter().map(|(uid, status)| (uid.clone(), Arc::clone(status))).collect();
        for (uid, status) in cached {
            let synced_uid = match pod_to_mirror.get(&uid) {
                Some(mirror) if mirror.is_empty() => {
                    self.log(Level::Debug, || format!("static pod {uid} has no mirror pod yet; skipping"));
                    continue;
                }
                Some(mirror) => mirror.clone(),
                None => uid.clone(),
            };
            let decision = self
                .needs_update(&synced_uid, &status)
                .and_then(|update| Ok((update, !update && self.needs_reconcile(&uid, &status.status)?)));
            match decision {
                Ok((true, _)) => updates.push((uid, status)),
                Ok((false, true)) => {
                    // Forget the written version to force the write; the sync below
                    // records it again once the write succeeds.
                    self.drop_api_version(&synced_uid);
                    report.reconciled += 1;
                    updates.push((uid, status));
                }
                Ok((false, false)) => {}
                Err(e) => {
                    report.failed += 1;
                    self.log(Level::Error, || format!("batch sync skips pod {uid}: {e}"));
                }
            }
        }

        for (uid, status) in updates {
            report.synced += 1;
            if let Err(e) = self.sync_one(&uid, &status) {
                report.failed += 1;
                self.log(Level::Error, || format!("batch sync of pod {uid} failed: {e}"));
            }
        }
        report
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
                        .map_err(|e| ManagerError::InvalidPod(format!("mirror pod of {}: {e}", pod.full_name())))?,
                    None => pod
                        .parse_status()
                        .map_err(|e| ManagerError::InvalidPod(format!("status of {}: {e}", pod.full_name())))?,
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
            version: cached.map_or(0, |c| c.version) + 1,
            pod_name: pod.metadata.name.clone(),
            pod_namespace: pod.metadata.namespace.clone(),
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

    /// Writes `status` to the API server unless it is already there, then deletes the
    /// pod if it is terminated and reclaimed.
    fn sync_one(&mut self, uid: &str, status: &VersionedStatus) -> Result<SyncOutcome> {
        if !self.needs_update(uid, status)? {
            self.log(Level::Debug, || format!("status for pod {uid} is up-to-date; skipping"));
            return Ok(SyncOutcome::UpToDate);
        }

        let pod_json = match self.imports.get_pod(&status.pod_namespace, &status.pod_name) {
            Ok(json) => json,
            Err(ApiError::NotFound(_)) => {
                // A deleted pod's status is cleared by remove_orphaned_statuses.
                self.log(Level::Debug, || {
                    format!("pod {}/{} ({uid}) does not exist on the server", status.pod_namespace, status.pod_name)
                });
                return Ok(SyncOutcome::PodNotFound);
            }
            Err(e) => {
                self.log(Level::Warn, || {
                    format!("failed to get pod {}/{} ({uid}): {}", status.pod_namespace, status.pod_name, e.message())
                });
                return Ok(SyncOutcome::GetFailed);
            }
        };
        let pod = PodView::parse_with_uid(&pod_json)
            .map_err(|e| ManagerError::InvalidPod(format!("API server's pod: {e}")))?;

        let translated = self.imports.translate_pod_uid(&pod.metadata.uid);
        if !translated.is_empty() && translated != uid {
            self.log(Level::Info, || {
                format!("pod {} was deleted and then recreated, skipping status update; old UID {uid}, new UID {translated}", pod.full_name())
            });
            self.drop_status(uid);
            return Ok(SyncOutcome::Recreated);
        }

        let update = StatusUpdate {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            // The PUT carries the object as read, so its UID and resourceVersion hold
            // the write to exactly that object.
            uid_precondition: Some(pod.metadata.uid.clone()).filter(|u| !u.is_empty()),
            resource_version_precondition: pod.metadata.resource_version.clone(),
            status: status_to_json(&status.status).map_err(ManagerError::InvalidStatus)?,
        };
        let updated_json = match self.imports.update_pod_status(update) {
            Ok(json) => json,
            Err(e) => {
                self.log(Level::Warn, || {
                    format!("failed to update status for pod {}: {}", pod.full_name(), e.message())
                });
                return Ok(SyncOutcome::WriteFailed);
            }
        };
        let updated = PodView::parse_with_uid(&updated_json)
            .map_err(|e| ManagerError::InvalidPod(format!("API server's pod after the write: {e}")))?;
        self.log(Level::Debug, || {
            format!("status for pod {} updated to version {}", updated.full_name(), status.version)
        });
        self.set_api_version(&updated.metadata.uid, status.version);

        if !self.can_be_deleted(&updated, &updated_json, &status.status)? {
            return Ok(SyncOutcome::Written);
        }
        let options = DeleteOptions {
            // A newly created pod of the same name must never be deleted.
            uid_precondition: Some(updated.metadata.uid.clone()),
            grace_period_seconds: Some(0),
        };
        match self.imports.delete_pod(&updated.metadata.namespace, &updated.metadata.name, options) {
            Ok(()) => {
                self.log(Level::Info, || {
                    format!("pod {} fully terminated and removed from the API server", updated.full_name())
                });
                self.drop_status(uid);
                Ok(SyncOutcome::Deleted)
            }
            Err(e) => {
                self.log(Level::Warn, || format!("failed to delete pod {}: {}", updated.full_name(), e.message()));
                Ok(SyncOutcome::DeleteFailed)
            }
        }
    }

    /// Whether `status` still has to reach the API server for `uid` (a mirror pod's UID
    /// in the batch sync): its version was not written yet, or the pod awaits deletion.
    fn needs_update(&mut self, uid: &str, status: &VersionedStatus) -> Result<bool> {
        match self.api_versions.get(uid) {
            Some(&written) if written >= status.version => {}
            _ => return Ok(true),
        }
        // Mirror pods are not found by UID, so a static pod's sync never deletes.
        let Some(pod_json) = self.imports.get_pod_by_uid(uid) else {
            return Ok(false);
        };
        let pod = PodView::parse_with_uid(&pod_json)
            .map_err(|e| ManagerError::InvalidPod(format!("pod manager's pod {uid}: {e}")))?;
        self.can_be_deleted(&pod, &pod_json, &status.status)
    }

    /// Whether the API server's status of `uid` differs from the cache: the kubelet is
    /// the source of truth, so drift is written over.
    fn needs_reconcile(&mut self, uid: &str, status: &PodStatus) -> Result<bool> {
        let Some(pod_json) = self.imports.get_pod_by_uid(uid) else {
            return Ok(false);
        };
        let mut pod = PodView::parse_with_uid(&pod_json)
            .map_err(|e| ManagerError::InvalidPod(format!("pod manager's pod {uid}: {e}")))?;
        // Only a static pod's mirror pod carries its status in the API server.
        if pod.is_static() {
            let Some(mirror_json) = self.imports.get_mirror_pod_by_pod(&pod_json) else {
                return Ok(false);
            };
            pod = PodView::parse_with_uid(&mirror_json)
                .map_err(|e| ManagerError::InvalidPod(format!("mirror pod of {uid}: {e}")))?;
        }
        let mut api_status =
            pod.parse_status().map_err(|e| ManagerError::InvalidPod(format!("status of {}: {e}", pod.full_name())))?;
        normalize_status(&pod.spec, &mut api_status);
        if status_equal(&api_status, status) {
            return Ok(false);
        }
        self.log(Level::Info, || {
            format!("pod status of {} is inconsistent with the cached status; reconciling", pod.full_name())
        });
        Ok(true)
    }

    /// A pod may be deleted once it is being deleted, is not a mirror pod (mirror pods'
    /// graceful deletion is not ours to handle) and its resources are reclaimed.
    fn can_be_deleted(&mut self, pod: &PodView, pod_json: &str, status: &PodStatus) -> Result<bool> {
        if !pod.is_being_deleted() || pod.is_mirror() {
            return Ok(false);
        }
        let status_json = status_to_json(status).map_err(ManagerError::InvalidStatus)?;
        Ok(self.imports.pod_resources_are_reclaimed(pod_json, &status_json))
    }

    /// Caches `status` for `uid`, noting the change.
    pub fn put_status(&mut self, uid: &str, status: Arc<VersionedStatus>) {
        self.statuses.insert(uid.to_string(), status);
        self.note_status_change(uid);
    }

    /// Drops the cached status of `uid`, noting the change.
    pub fn drop_status(&mut self, uid: &str) {
        if self.statuses.remove(uid).is_some() {
            self.note_status_change(uid);
        }
    }

    /// A queued snapshot of `uid` that shared the cached status no longer does, so a
    /// saved change must now carry that snapshot itself.
    fn note_status_change(&mut self, uid: &str) {
        self.changes.statuses.insert(uid.to_string());
        let queued = self.pending.iter().filter(|(_, p)| p.pod_uid == uid).map(|(id, _)| *id);
        self.changes.pending.extend(queued);
    }

    /// Records `version` as written to the API server for `uid`, noting the change.
    pub fn set_api_version(&mut self, uid: &str, version: u64) {
        self.api_versions.insert(uid.to_string(), version);
        self.changes.api_versions.insert(uid.to_string());
    }

    /// Forgets the version written for `uid`, noting the change.
    pub fn drop_api_version(&mut self, uid: &str) {
        if self.api_versions.remove(uid).is_some() {
            self.changes.api_versions.insert(uid.to_string());
        }
    }

    /// Drops the snapshot of request `id`, noting the change.
    pub fn drop_pending(&mut self, id: u64) -> Option<PendingSync> {
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
