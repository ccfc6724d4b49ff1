//! The 1.27 status manager, over v1's state and bookkeeping.
//!
//! The cache, the written versions, the queued snapshots, the change sets and the state
//! document are v1's (`podstatus_logic::Manager`), driven here through its public
//! helpers; so is everything that has not changed since 2017 (reading a cached status,
//! dropping orphans, saving and loading). Nothing v2 knows is kept beside them:
//! upstream's `podIsFinished` (`TerminatePod` has run, which the kubelet does once the
//! pod's resources are reclaimed) is asked of deletion-safety instead, so the state
//! document stays v1's and a running agent can swap v1 and v2 both ways.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_logic::manager::{VersionedStatus, find_container_status, find_container_status_mut, is_zero};
use podstatus_logic::normalize::{normalize_status, truncate_time};
use podstatus_logic::pod::{PodView, status_to_json};
use podstatus_logic::ready::find_condition_mut;
use podstatus_logic::{
    ApiError, BatchReport, CachedStatus, DeleteOptions, Level, ManagerError, Result, SyncOutcome, SyncRequest,
    UpdateOutcome,
};

use crate::conditions::{
    TRANSITION_TIME_CONDITIONS, is_pod_status_by_kubelet_equal, is_terminal, merge_pod_status,
    update_last_transition_time,
};
use crate::containers::{check_container_state_transition, restart_policy, terminate_containers};
use crate::generate::{POD_FAILED, generate_containers_ready_condition, generate_pod_ready_condition, readiness_gates};
use crate::imports::{Imports, StatusPatch};
use crate::patch::status_patch;

/// The status manager, logic v2.
pub struct Manager<I: Imports> {
    /// v1's manager, for its state and its unchanged operations.
    core: podstatus_logic::Manager<I>,
}

/// A cached container found by ID, with its pod.
struct Found {
    pod: PodView,
    pod_json: String,
    cached: Arc<VersionedStatus>,
}

impl<I: Imports> Manager<I> {
    /// An empty manager over `imports`.
    pub fn new(imports: I) -> Self {
        Manager { core: podstatus_logic::Manager::new(imports) }
    }

    /// The imports, for callers that own the world behind them (tests, benchmarks).
    pub fn imports_mut(&mut self) -> &mut I {
        self.core.imports_mut()
    }

    /// The cached status of `uid` (a mirror pod's UID finds its static pod's status).
    pub fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        self.core.get_pod_status(uid)
    }

    /// Caches `status` for `pod`, forcing an update when the pod is being deleted.
    pub fn set_pod_status(&mut self, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(ManagerError::InvalidPod)?;
        let status = podstatus_logic::pod::parse_status(status_json).map_err(ManagerError::InvalidStatus)?;
        let force = pod.is_being_deleted();
        self.update_status_internal(&pod, pod_json, status, force)
    }

    /// Sets one container's readiness in the cached status and regenerates Ready (with
    /// the pod's readiness gates) and ContainersReady.
    pub fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        let Found { pod, pod_json, cached } = match self.find_container(pod_uid, container_id, "readiness")? {
            Ok(found) => found,
            Err(outcome) => return Ok(outcome),
        };
        if find_container_status(&cached.status, container_id).is_some_and(|c| c.ready == ready) {
            self.core.log(Level::Debug, || {
                format!("container readiness unchanged ({ready}): {} - {container_id}", pod.full_name())
            });
            return Ok(UpdateOutcome::Unchanged);
        }
        let gates =
            readiness_gates(&pod_json).map_err(|e| ManagerError::InvalidPod(format!("{}: {e}", pod.full_name())))?;
        let mut status = cached.status.clone();
        if let Some(container) = find_container_status_mut(&mut status, container_id) {
            container.ready = ready;
        }
        let statuses = status.container_statuses.as_deref();
        let phase = status.phase.as_deref();
        let conditions = status.conditions.as_deref().unwrap_or_default();
        let ready_condition = generate_pod_ready_condition(&pod.spec, &gates, conditions, statuses, phase);
        let containers_ready = generate_containers_ready_condition(&pod.spec, statuses, phase);
        for condition in [ready_condition, containers_ready] {
            match find_condition_mut(&mut status, &condition.type_) {
                Some(existing) => *existing = condition,
                None => {
                    self.core.log(Level::Info, || {
                        format!("pod status of {} is missing the {} condition", pod.full_name(), condition.type_)
                    });
                    status.conditions.get_or_insert_with(Vec::new).push(condition);
                }
            }
        }
        self.update_status_internal(&pod, &pod_json, status, false)
    }

    /// Sets whether one container has passed its startup probe (its `started` flag).
    pub fn set_container_startup(&mut self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome> {
        let Found { pod, pod_json, cached } = match self.find_container(pod_uid, container_id, "startup")? {
            Ok(found) => found,
            Err(outcome) => return Ok(outcome),
        };
        // An unset flag is a change even to false: Go's *bool is nil until set.
        if find_container_status(&cached.status, container_id).is_some_and(|c| c.started == Some(started)) {
            self.core.log(Level::Debug, || {
                format!("container startup unchanged ({started}): {} - {container_id}", pod.full_name())
            });
            return Ok(UpdateOutcome::Unchanged);
        }
        let mut status = cached.status.clone();
        if let Some(container) = find_container_status_mut(&mut status, container_id) {
            container.started = Some(started);
        }
        self.update_status_internal(&pod, &pod_json, status, false)
    }

    /// Ends the pod's life in the cache: containers of unknown state become terminated
    /// (exit code 137), a pod that is not static gets a terminal phase (Failed unless it
    /// already has one), and the update is forced.
    pub fn terminate_pod(&mut self, pod_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(ManagerError::InvalidPod)?;
        let pod_status =
            pod.parse_status().map_err(|e| ManagerError::InvalidPod(format!("status of {}: {e}", pod.full_name())))?;
        let cached = self.core.statuses.get(&pod.metadata.uid).map(|c| c.status.clone());
        let is_cached = cached.is_some();
        let mut status = cached.unwrap_or_else(|| pod_status.clone());

        terminate_containers(&pod.spec, &pod_status, &mut status);

        // 1.27 leaves static pods' phase alone (kubernetes#116484).
        if !pod.is_static() && !is_terminal(status.phase.as_deref()) {
            match status.phase.as_deref() {
                Some("Running") if is_cached => self.core.log(Level::Info, || {
                    format!("terminal running pod {} should have already been marked as failed", pod.full_name())
                }),
                Some("Pending" | "Running") => {}
                other => self.core.log(Level::Error, || {
                    format!("unknown phase {:?} of terminated pod {}", other.unwrap_or(""), pod.full_name())
                }),
            }
            self.core.log(Level::Debug, || format!("marking terminal pod {} as failed", pod.full_name()));
            status.phase = Some(POD_FAILED.to_string());
        }
        self.update_status_internal(&pod, pod_json, status, true)
    }

    /// Drops every cached status whose pod UID is not in `keep`; returns how many.
    pub fn remove_orphaned_statuses(&mut self, keep: &[String]) -> u32 {
        self.core.remove_orphaned_statuses(keep)
    }

    /// Handles one request the host took off the sync queue.
    ///
    /// 1.27 signals its sync loop through a channel of one slot and then syncs every pod
    /// whose latest status has not been written (`syncBatch(false)`). Here a request
    /// plays the signal: it is queued only when none is queued for its pod yet (later
    /// updates ride on it), and handling it writes the pod's latest status (not the
    /// snapshot it was queued with) unless that version is written already, and then
    /// does the same for every other pod whose latest status is unwritten and that has
    /// no request of its own queued (a write that failed, a request the full queue
    /// refused): as upstream, a failed write is retried at the next signal. The outcome
    /// is the request's pod's.
    pub fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        match self.core.pending.get(&request.id) {
            Some(p) if p.pod_uid == request.pod_uid && p.status.version == request.version => {}
            _ => return Err(ManagerError::UnknownRequest(request.id)),
        }
        self.core.drop_pending(request.id);
        let pod_to_mirror = self.pod_to_mirror();
        let outcome = self.sync_if_unwritten(&request.pod_uid, &pod_to_mirror);

        let queued: BTreeSet<&str> = self.core.pending.values().map(|p| p.pod_uid.as_str()).collect();
        let others: Vec<String> = self
            .core
            .statuses
            .keys()
            .filter(|uid| **uid != request.pod_uid && !queued.contains(uid.as_str()))
            .cloned()
            .collect();
        for uid in others {
            if let Err(e) = self.sync_if_unwritten(&uid, &pod_to_mirror) {
                self.core.log(Level::Error, || format!("sync of pod {uid} failed: {e}"));
            }
        }
        outcome
    }

    /// One periodic batch sync (`syncBatch(true)`): forgets the API versions of pods that
    /// are gone, then syncs, in UID order, every status that is unwritten, awaits the
    /// pod's deletion, or has drifted from the API server's.
    pub fn sync_batch(&mut self) -> BatchReport {
        let translations = self.core.imports_mut().get_uid_translations();
        let pod_to_mirror: BTreeMap<String, String> = translations.pod_to_mirror.into_iter().collect();
        let mirrors: BTreeSet<String> = translations.mirror_to_pod.into_iter().map(|(mirror, _)| mirror).collect();

        let gone: Vec<String> = self
            .core
            .api_versions
            .keys()
            .filter(|uid| !self.core.statuses.contains_key(*uid) && !mirrors.contains(*uid))
            .cloned()
            .collect();
        for uid in &gone {
            self.core.drop_api_version(uid);
        }

        let mut report = BatchReport::default();
        let mut updates = Vec::new();
        let cached: Vec<(String, Arc<VersionedStatus>)> =
            self.core.statuses.iter().map(|(uid, status)| (uid.clone(), Arc::clone(status))).collect();
        for (uid, status) in cached {
            let Some(status_uid) = self.status_uid(&uid, &pod_to_mirror) else {
                continue;
            };
            let decision = self
                .needs_update(&status_uid, &status)
                .and_then(|update| Ok((update, !update && self.needs_reconcile(&uid, &status.status)?)));
            match decision {
                Ok((true, _)) => updates.push((uid, status)),
                Ok((false, true)) => {
                    // Forget the written version to force the write; the sync records it
                    // again once the write succeeds.
                    self.core.drop_api_version(&status_uid);
                    report.reconciled += 1;
                    updates.push((uid, status));
                }
                Ok((false, false)) => {}
                Err(e) => {
                    report.failed += 1;
                    self.core.log(Level::Error, || format!("batch sync skips pod {uid}: {e}"));
                }
            }
        }

        for (uid, status) in updates {
            report.synced += 1;
            if let Err(e) = self.sync_one(&uid, &status) {
                report.failed += 1;
                self.core.log(Level::Error, || format!("batch sync of pod {uid} failed: {e}"));
            }
        }
        report
    }

    /// The whole state, in v1's document format.
    pub fn save_state(&mut self) -> Result<String> {
        self.core.save_state()
    }

    /// What changed since the last save, in v1's change-set format.
    pub fn save_state_changes(&mut self) -> Result<String> {
        self.core.save_state_changes()
    }

    /// Replaces the whole state with a document from v1 or v2; on error nothing changes.
    pub fn load_state(&mut self, document: &str) -> Result<()> {
        self.core.load_state(document)
    }

    /// Applies a change set of another instance (v1 or v2); on error nothing changes.
    pub fn apply_state_changes(&mut self, document: &str) -> Result<()> {
        self.core.apply_state_changes(document)
    }

    /// The pod and cached status behind a container ID, or the outcome that ends a
    /// readiness or startup change before it starts.
    fn find_container(
        &mut self,
        pod_uid: &str,
        container_id: &str,
        what: &str,
    ) -> Result<std::result::Result<Found, UpdateOutcome>> {
        let Some(pod_json) = self.core.imports_mut().get_pod_by_uid(pod_uid) else {
            self.core.log(Level::Debug, || format!("pod {pod_uid} has been deleted, no need to update {what}"));
            return Ok(Err(UpdateOutcome::PodNotFound));
        };
        let pod = PodView::parse_with_uid(&pod_json)
            .map_err(|e| ManagerError::InvalidPod(format!("pod manager's pod {pod_uid}: {e}")))?;
        let Some(cached) = self.core.statuses.get(&pod.metadata.uid).cloned() else {
            self.core.log(Level::Info, || {
                format!("container {what} changed before pod has synced: {} - {container_id}", pod.full_name())
            });
            return Ok(Err(UpdateOutcome::NotCached));
        };
        if find_container_status(&cached.status, container_id).is_none() {
            self.core.log(Level::Info, || {
                format!("container {what} changed for unknown container: {} - {container_id}", pod.full_name())
            });
            return Ok(Err(UpdateOutcome::UnknownContainer));
        }
        Ok(Ok(Found { pod, pod_json, cached }))
    }

    /// `updateStatusInternal`: caches a new status version unless the update is refused
    /// or changes nothing the kubelet owns, and queues its write.
    fn update_status_internal(
        &mut self,
        pod: &PodView,
        pod_json: &str,
        mut status: PodStatus,
        force: bool,
    ) -> Result<UpdateOutcome> {
        let uid = &pod.metadata.uid;
        let cached = self.core.statuses.get(uid).cloned();
        let fetched;
        let old_status: &PodStatus = match &cached {
            Some(cached) => &cached.status,
            None => {
                fetched = self.status_before_caching(pod, pod_json)?;
                &fetched
            }
        };

        let policy = restart_policy(&pod.spec);
        let transition = check_container_state_transition(
            old_status.container_statuses.as_deref(),
            status.container_statuses.as_deref(),
            policy,
        )
        .and_then(|()| {
            check_container_state_transition(
                old_status.init_container_statuses.as_deref(),
                status.init_container_statuses.as_deref(),
                policy,
            )
        });
        if let Err(e) = transition {
            self.core.log(Level::Error, || format!("status update on pod {} aborted: {e}", pod.full_name()));
            return Ok(UpdateOutcome::Unchanged);
        }

        let mut now = None;
        for condition_type in TRANSITION_TIME_CONDITIONS {
            update_last_transition_time(&mut status, old_status, condition_type, || self.core.now_cached(&mut now));
        }
        match &old_status.start_time {
            Some(start) if !is_zero(start) => status.start_time = Some(start.clone()),
            _ => {
                if status.start_time.as_ref().is_none_or(is_zero) {
                    status.start_time = Some(self.core.now_cached(&mut now));
                }
            }
        }

        normalize_status(&pod.spec, &mut status);
        if let Some(cached) = &cached
            && !force
            && is_pod_status_by_kubelet_equal(&cached.status, &status)
        {
            self.core.log(Level::Trace, || format!("ignoring same status for pod {}", pod.full_name()));
            return Ok(UpdateOutcome::Unchanged);
        }

        let versioned = Arc::new(VersionedStatus {
            status,
            version: cached.map_or(0, |c| c.version) + 1,
            pod_name: pod.metadata.name.clone(),
            pod_namespace: pod.metadata.namespace.clone(),
        });
        self.core.put_status(uid, Arc::clone(&versioned));
        Ok(self.enqueue(uid, versioned))
    }

    /// The status an uncached pod had: its mirror pod's, else its own.
    fn status_before_caching(&mut self, pod: &PodView, pod_json: &str) -> Result<PodStatus> {
        match self.core.imports_mut().get_mirror_pod_by_pod(pod_json) {
            Some(mirror_json) => PodView::parse_with_uid(&mirror_json)
                .and_then(|mirror| mirror.parse_status())
                .map_err(|e| ManagerError::InvalidPod(format!("mirror pod of {}: {e}", pod.full_name()))),
            None => {
                pod.parse_status().map_err(|e| ManagerError::InvalidPod(format!("status of {}: {e}", pod.full_name())))
            }
        }
    }

    /// Queues a sync request for `uid` unless one is queued already: that one writes
    /// the latest status when its turn comes.
    fn enqueue(&mut self, uid: &str, status: Arc<VersionedStatus>) -> UpdateOutcome {
        if self.core.pending.values().any(|p| p.pod_uid == uid) {
            self.core.log(Level::Trace, || {
                format!("a sync of pod {uid} is queued already; it will write version {}", status.version)
            });
            return UpdateOutcome::Queued;
        }
        self.core.enqueue(uid, status)
    }

    /// Static pod UID to mirror pod UID ("" when it has none yet).
    fn pod_to_mirror(&mut self) -> BTreeMap<String, String> {
        self.core.imports_mut().get_uid_translations().pod_to_mirror.into_iter().collect()
    }

    /// The UID the API server knows `uid`'s status under (a static pod's mirror pod's),
    /// or None for a static pod without mirror pod, which cannot be written yet.
    fn status_uid(&mut self, uid: &str, pod_to_mirror: &BTreeMap<String, String>) -> Option<String> {
        match pod_to_mirror.get(uid) {
            Some(mirror) if mirror.is_empty() => {
                self.core.log(Level::Debug, || format!("static pod {uid} has no mirror pod yet; skipping"));
                None
            }
            Some(mirror) => Some(mirror.clone()),
            None => Some(uid.to_string()),
        }
    }

    /// Syncs `uid`'s latest status unless that version is written already.
    fn sync_if_unwritten(&mut self, uid: &str, pod_to_mirror: &BTreeMap<String, String>) -> Result<SyncOutcome> {
        let Some(status) = self.core.statuses.get(uid).cloned() else {
            // Dropped since: nothing is left to write.
            return Ok(SyncOutcome::UpToDate);
        };
        let Some(status_uid) = self.status_uid(uid, pod_to_mirror) else {
            return Ok(SyncOutcome::PodNotFound);
        };
        if self.core.api_versions.get(&status_uid).is_some_and(|&written| written >= status.version) {
            return Ok(SyncOutcome::UpToDate);
        }
        self.sync_one(uid, &status)
    }

    /// `syncPod`: patches the API server's pod with `status` merged into its own, then
    /// deletes the pod if it is terminal, being deleted and finished.
    fn sync_one(&mut self, uid: &str, status: &VersionedStatus) -> Result<SyncOutcome> {
        let (namespace, name) = (&status.pod_namespace, &status.pod_name);
        let pod_json = match self.core.imports_mut().get_pod(namespace, name) {
            Ok(json) => json,
            Err(ApiError::NotFound(_)) => {
                // A deleted pod's status is cleared by remove-orphaned-statuses.
                self.core.log(Level::Debug, || format!("pod {namespace}/{name} ({uid}) does not exist on the server"));
                return Ok(SyncOutcome::PodNotFound);
            }
            Err(e) => {
                self.core.log(Level::Warn, || format!("failed to get pod {namespace}/{name} ({uid}): {}", e.message()));
                return Ok(SyncOutcome::GetFailed);
            }
        };
        let pod = PodView::parse_with_uid(&pod_json)
            .map_err(|e| ManagerError::InvalidPod(format!("API server's pod: {e}")))?;

        let translated = self.core.imports_mut().translate_pod_uid(&pod.metadata.uid);
        if !translated.is_empty() && translated != uid {
            self.core.log(Level::Info, || {
                format!("pod {} was deleted and then recreated, skipping status update; old UID {uid}, new UID {translated}", pod.full_name())
            });
            self.core.drop_status(uid);
            return Ok(SyncOutcome::Recreated);
        }

        // Normalised first, as every comparison with the cache is: the patch then says
        // nothing about what only differs below the second or in order.
        let mut api_status =
            pod.parse_status().map_err(|e| ManagerError::InvalidPod(format!("status of {}: {e}", pod.full_name())))?;
        normalize_status(&pod.spec, &mut api_status);
        let now = self.now();
        let merged = {
            let imports = self.core.imports_mut();
            merge_pod_status(&api_status, &status.status, || imports.pod_could_have_running_containers(&pod_json), &now)
        };
        let patch = status_patch(&pod.metadata.uid, &api_status, &merged).map_err(ManagerError::InvalidStatus)?;

        let (updated, updated_json, outcome) = match patch {
            None => {
                self.core.log(Level::Debug, || {
                    format!("status of pod {} is up-to-date at version {}", pod.full_name(), status.version)
                });
                (pod, pod_json, SyncOutcome::UpToDate)
            }
            Some(patch) => {
                self.core.log(Level::Debug, || format!("patching status of pod {}: {patch}", pod.full_name()));
                let request = StatusPatch {
                    namespace: pod.metadata.namespace.clone(),
                    name: pod.metadata.name.clone(),
                    uid_precondition: Some(pod.metadata.uid.clone()),
                    patch,
                };
                match self.core.imports_mut().patch_pod_status(request) {
                    Ok(json) => {
                        let updated = PodView::parse_with_uid(&json)
                            .map_err(|e| ManagerError::InvalidPod(format!("API server's pod after the patch: {e}")))?;
                        (updated, json, SyncOutcome::Written)
                    }
                    Err(e) => {
                        self.core.log(Level::Warn, || {
                            format!("failed to patch status of pod {}: {}", pod.full_name(), e.message())
                        });
                        return Ok(SyncOutcome::WriteFailed);
                    }
                }
            }
        };
        self.core.set_api_version(&updated.metadata.uid, status.version);

        if !self.can_be_deleted(&updated, &updated_json, &status.status)? {
            return Ok(outcome);
        }
        let options = DeleteOptions {
            // A newly created pod of the same name must never be deleted.
            uid_precondition: Some(updated.metadata.uid.clone()),
            grace_period_seconds: Some(0),
        };
        match self.core.imports_mut().delete_pod(&updated.metadata.namespace, &updated.metadata.name, options) {
            Ok(()) => {
                self.core.log(Level::Info, || {
                    format!("pod {} fully terminated and removed from the API server", updated.full_name())
                });
                self.core.drop_status(uid);
                Ok(SyncOutcome::Deleted)
            }
            Err(e) => {
                self.core.log(Level::Warn, || format!("failed to delete pod {}: {}", updated.full_name(), e.message()));
                Ok(SyncOutcome::DeleteFailed)
            }
        }
    }

    /// `needsUpdate`: `status` is unwritten for `uid` (a mirror pod's UID for a static
    /// pod), or the pod can be deleted.
    fn needs_update(&mut self, uid: &str, status: &VersionedStatus) -> Result<bool> {
        match self.core.api_versions.get(uid) {
            Some(&written) if written >= status.version => {}
            _ => return Ok(true),
        }
        // Mirror pods are not found by UID, so a static pod's sync never deletes.
        let Some(pod_json) = self.core.imports_mut().get_pod_by_uid(uid) else {
            return Ok(false);
        };
        let pod = PodView::parse_with_uid(&pod_json)
            .map_err(|e| ManagerError::InvalidPod(format!("pod manager's pod {uid}: {e}")))?;
        self.can_be_deleted(&pod, &pod_json, &status.status)
    }

    /// `needsReconcile`: the API server's status of `uid` differs from the cache in
    /// something the kubelet owns (the kubelet is the source of truth).
    fn needs_reconcile(&mut self, uid: &str, status: &PodStatus) -> Result<bool> {
        let Some(pod_json) = self.core.imports_mut().get_pod_by_uid(uid) else {
            return Ok(false);
        };
        let mut pod = PodView::parse_with_uid(&pod_json)
            .map_err(|e| ManagerError::InvalidPod(format!("pod manager's pod {uid}: {e}")))?;
        // Only a static pod's mirror pod carries its status in the API server.
        if pod.is_static() {
            let Some(mirror_json) = self.core.imports_mut().get_mirror_pod_by_pod(&pod_json) else {
                return Ok(false);
            };
            pod = PodView::parse_with_uid(&mirror_json)
                .map_err(|e| ManagerError::InvalidPod(format!("mirror pod of {uid}: {e}")))?;
        }
        let mut api_status =
            pod.parse_status().map_err(|e| ManagerError::InvalidPod(format!("status of {}: {e}", pod.full_name())))?;
        normalize_status(&pod.spec, &mut api_status);
        if is_pod_status_by_kubelet_equal(&api_status, status) {
            return Ok(false);
        }
        self.core.log(Level::Info, || {
            format!("pod status of {} is inconsistent with the cached status; reconciling", pod.full_name())
        });
        Ok(true)
    }

    /// `canBeDeleted`: the pod is being deleted, is not a mirror pod (their graceful
    /// deletion is not the kubelet's), its phase in `pod` is terminal, and it is
    /// finished: upstream remembers that `TerminatePod` ran, which the kubelet does
    /// once the pod's resources are reclaimed; v2 asks deletion-safety that question.
    fn can_be_deleted(&mut self, pod: &PodView, pod_json: &str, status: &PodStatus) -> Result<bool> {
        if !pod.is_being_deleted() || pod.is_mirror() {
            return Ok(false);
        }
        let phase = pod
            .parse_status()
            .map_err(|e| ManagerError::InvalidPod(format!("status of {}: {e}", pod.full_name())))?
            .phase;
        if !is_terminal(phase.as_deref()) {
            self.core.log(Level::Debug, || {
                format!(
                    "delaying deletion of pod {}: its phase {:?} is not terminal",
                    pod.full_name(),
                    phase.as_deref().unwrap_or("")
                )
            });
            return Ok(false);
        }
        let status_json = status_to_json(status).map_err(ManagerError::InvalidStatus)?;
        Ok(self.core.imports_mut().pod_resources_are_reclaimed(pod_json, &status_json))
    }

    /// The host's time at the API server's precision.
    fn now(&mut self) -> Time {
        let mut now = self.core.now_cached(&mut None);
        truncate_time(&mut now);
        now
    }
}
