//! The 1.27 status manager, over v1's state and bookkeeping.
//!
//! The cache, the written versions, the queued snapshots, the change sets and the state
//! document are v1's (`podstatus_logic::Manager`), driven here through its public
//! helpers; so is everything that has not changed since 2017 (reading a cached status,
//! dropping orphans, saving and loading). Nothing v2 knows is kept beside them: upstream's
//! `podIsFinished` (the status came from `TerminatePod`) is a field of v1's cached
//! status that v1 keeps without reading it, so a running agent can swap v1 and v2 both
//! ways, even in the middle of a pod's termination.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_logic::manager::{VersionedStatus, find_container_status, find_container_status_mut, is_zero};
use podstatus_logic::normalize::{normalize_status, truncate_time};
use podstatus_logic::pod::PodView;
use podstatus_logic::ready::find_condition_mut;
use podstatus_logic::sync::{ApiPod, SyncPolicy, Write, WritePlan};
use podstatus_logic::{
    ApiCall, ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, InvalidPod, Level, ManagerError,
    PodSync, Result, SyncOrigin, SyncOutcome, SyncRequest, SyncStep, SyncTarget, UpdateOutcome,
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
        self.update_status_internal(&pod, pod_json, status, force, false)
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
        let gates = readiness_gates(&pod_json).invalid_pod(|| pod.full_name())?;
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
        self.update_status_internal(&pod, &pod_json, status, false, false)
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
        self.update_status_internal(&pod, &pod_json, status, false, false)
    }

    /// Ends the pod's life in the cache: containers of unknown state become terminated
    /// (exit code 137), a pod that is not static gets a terminal phase (Failed unless it
    /// already has one), and the update is forced.
    pub fn terminate_pod(&mut self, pod_json: &str) -> Result<UpdateOutcome> {
        let pod = PodView::parse_with_uid(pod_json).map_err(ManagerError::InvalidPod)?;
        let pod_status = pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?;
        let cached = self.core.cached(&pod.metadata.uid).map(|c| c.status.clone());
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
        self.update_status_internal(&pod, pod_json, status, true, true)
    }

    /// Drops every cached status whose pod UID is not in `keep`; returns how many.
    pub fn remove_orphaned_statuses(&mut self, keep: &[String]) -> u32 {
        self.core.remove_orphaned_statuses(keep)
    }

    /// Handles one request the host took off the sync queue: one signal, one pass.
    ///
    /// 1.27 signals its sync loop through a channel of one slot: an update puts a signal
    /// there unless one is waiting already, and each signal taken runs one
    /// `syncBatch(false)`, which tries every pod whose latest status is unwritten once.
    /// Here the host's queue holds the signal: an update queues a request only when the
    /// slot is empty (no request of any pod waits, see `signal_waiting`), and handling
    /// a request syncs, once each,
    /// every pod whose latest status (not a snapshot) is unwritten: the request's own
    /// pod first, then the others in UID order. A write that fails waits for the next
    /// signal or batch sync, as upstream. The outcome is the request's pod's.
    pub fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        self.sync_pod_with(&V2Sync, request)
    }

    /// [`Manager::sync_pod`] with another version's decisions in each pod's sync (logic
    /// v3 writes without reading first): [`Manager::plan_sync_pod_with`], each sync
    /// run to its end.
    pub fn sync_pod_with<P: SyncPolicy<I>>(&mut self, policy: &P, request: &SyncRequest) -> Result<SyncOutcome> {
        let syncs = self.plan_sync_pod(request)?;
        self.core.run_syncs_with(policy, syncs)
    }

    /// One periodic batch sync (`syncBatch(true)`): forgets the API versions of pods that
    /// are gone, then syncs, in UID order, every status that is unwritten, awaits the
    /// pod's deletion, or has drifted from the API server's.
    pub fn sync_batch(&mut self) -> BatchReport {
        self.core.sync_batch_with(&V2Sync)
    }

    /// [`Manager::sync_batch`] with another version's decisions in each pod's sync.
    pub fn sync_batch_with<P: SyncPolicy<I>>(&mut self, policy: &P) -> BatchReport {
        self.core.sync_batch_with(policy)
    }

    /// Takes one request off the sync queue (it is used up) and plans its pass: a sync
    /// of the request's pod (unless its status is gone) and then one of every other
    /// cached pod in UID order whose latest status is not written already (as 1.27's
    /// pass collects them), each writing the pod's latest status when it starts,
    /// unless that version is written by then. The static-to-mirror pod UIDs are read
    /// once, for the whole pass.
    pub fn plan_sync_pod(&mut self, request: &SyncRequest) -> Result<Vec<PodSync>> {
        self.core.take_request(request)?;
        let pod_to_mirror = Arc::new(self.core.pod_to_mirror());
        let mut syncs = Vec::new();
        let target = || SyncTarget::LatestIfUnwritten(Arc::clone(&pod_to_mirror));
        if self.core.cached(&request.pod_uid).is_some() {
            syncs.push(self.core.plan_sync(&request.pod_uid, SyncOrigin::Request, target()));
        }
        for uid in self.core.unwritten_for_pass(&pod_to_mirror, &request.pod_uid) {
            syncs.push(self.core.plan_sync(&uid, SyncOrigin::Pass, target()));
        }
        Ok(syncs)
    }

    /// One periodic batch sync (or the slice `slice` of it), decided: the gone versions
    /// are forgotten, and the syncs to run are planned (in the order
    /// [`Manager::sync_batch`] runs them).
    pub fn plan_sync_batch(&mut self, slice: &BatchSlice) -> BatchPlan {
        self.core.plan_sync_batch_with(&V2Sync, slice)
    }

    /// [`Manager::plan_sync_batch`] with another version's decisions.
    pub fn plan_sync_batch_with<P: SyncPolicy<I>>(&mut self, policy: &P, slice: &BatchSlice) -> BatchPlan {
        self.core.plan_sync_batch_with(policy, slice)
    }

    /// Starts the planned sync `id`: it checks what it must (its version may be written
    /// by now; its status may be gone) and ends or asks for its first call. An error
    /// ends it; a pass's or batch's sync's error is logged.
    pub fn start_sync(&mut self, id: u64) -> Result<SyncStep> {
        self.core.start_sync_with(&V2Sync, id)
    }

    /// [`Manager::start_sync`] with another version's decisions.
    pub fn start_sync_with<P: SyncPolicy<I>>(&mut self, policy: &P, id: u64) -> Result<SyncStep> {
        self.core.start_sync_with(policy, id)
    }

    /// Hands the suspended sync `id` the answer to its call and runs it on to its next
    /// call or its end. A reply of the wrong shape is a failed call.
    pub fn resume_sync(&mut self, id: u64, reply: ApiReply) -> Result<SyncStep> {
        self.core.resume_sync_with(&V2Sync, id, reply)
    }

    /// [`Manager::resume_sync`] with another version's decisions.
    pub fn resume_sync_with<P: SyncPolicy<I>>(&mut self, policy: &P, id: u64, reply: ApiReply) -> Result<SyncStep> {
        self.core.resume_sync_with(policy, id, reply)
    }

    /// Forgets the sync `id`, planned or suspended; nothing is written for it. False
    /// when it was not known.
    pub fn drop_sync(&mut self, id: u64) -> bool {
        self.core.drop_sync(id)
    }

    /// How many planned or suspended syncs the manager holds.
    pub fn syncs_in_flight(&self) -> usize {
        self.core.syncs_in_flight()
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
        let pod = PodView::parse_with_uid(&pod_json).invalid_pod(|| format!("pod manager's pod {pod_uid}"))?;
        let Some(cached) = self.core.cached(&pod.metadata.uid) else {
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
    /// or changes nothing the kubelet owns, and queues its write. `pod_is_finished`: the
    /// status comes from TerminatePod; once a pod is finished every later version of
    /// its status is too (not a static pod's: 1.27 leaves them alone, kubernetes#116484).
    fn update_status_internal(
        &mut self,
        pod: &PodView,
        pod_json: &str,
        mut status: PodStatus,
        force: bool,
        mut pod_is_finished: bool,
    ) -> Result<UpdateOutcome> {
        let uid = &pod.metadata.uid;
        let cached = self.core.cached(uid);
        if let Some(cached) = &cached
            && cached.pod_is_finished
            && !pod_is_finished
            && !pod.is_static()
        {
            self.core.log(Level::Info, || {
                format!("pod {} was finished already; its new status is finished too", pod.full_name())
            });
            pod_is_finished = true;
        }
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
            pod_is_finished,
        });
        self.core.put_status(uid, Arc::clone(&versioned));
        Ok(self.enqueue(uid, versioned))
    }

    /// The status an uncached pod had: its mirror pod's, else its own.
    fn status_before_caching(&mut self, pod: &PodView, pod_json: &str) -> Result<PodStatus> {
        match self.core.imports_mut().get_mirror_pod_by_pod(pod_json) {
            Some(mirror_json) => PodView::parse_with_uid(&mirror_json)
                .and_then(|mirror| mirror.parse_status())
                .invalid_pod(|| format!("mirror pod of {}", pod.full_name())),
            None => pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name())),
        }
    }

    /// Signals the sync loop: queues a sync request for `uid` unless the slot is full
    /// already, in which case that request's pass writes this version too.
    fn enqueue(&mut self, uid: &str, status: Arc<VersionedStatus>) -> UpdateOutcome {
        if self.signal_waiting() {
            self.core.log(Level::Trace, || {
                format!("a sync is queued already; it will write version {} of pod {uid}", status.version)
            });
            return UpdateOutcome::Queued;
        }
        self.core.enqueue(uid, status)
    }

    /// Whether the slot is full: a request is queued for a pod whose latest status is
    /// still unwritten. One for a pod written since (by a batch sync) does not count:
    /// its pass may find nothing to do, and a request the host lost (handed to a plugin
    /// instance that faulted, whose state was then restored) must not keep every later
    /// update from signalling once the batch sync has written its pod.
    fn signal_waiting(&mut self) -> bool {
        let queued = self.core.queued_pods();
        if queued.is_empty() {
            return false;
        }
        let mut pod_to_mirror = None;
        for uid in queued {
            let Some(status) = self.core.cached(&uid) else {
                continue;
            };
            if self.core.is_written(&uid, status.version) {
                continue;
            }
            let pod_to_mirror = pod_to_mirror.get_or_insert_with(|| self.core.pod_to_mirror());
            match pod_to_mirror.get(&uid) {
                // A static pod without mirror pod cannot be written yet.
                Some(mirror) if mirror.is_empty() => continue,
                Some(mirror) if self.core.is_written(mirror, status.version) => continue,
                _ => return true,
            }
        }
        false
    }
}

/// The 1.27 status manager's decisions in a sync (public so that a later version can
/// keep them and change only how it writes).
pub struct V2Sync;

impl<I: Imports> SyncPolicy<I> for V2Sync {
    const CHECKS_NEEDS_UPDATE: bool = false;

    /// `mergePodStatus` and `PatchPodStatus`: a strategic merge patch from the API
    /// server's status to `status` merged into it, sent only when it changes something.
    fn plan_write(
        &self,
        manager: &mut podstatus_logic::Manager<I>,
        pod: ApiPod,
        status: &VersionedStatus,
    ) -> Result<WritePlan> {
        let view = &pod.view;
        // The API server's status as it is, not normalised: what the cache normalised
        // (container order, termination messages) is corrected by the patch.
        let api_status = view.parse_status().invalid_pod(|| format!("status of {}", view.full_name()))?;
        let now = now(manager);
        let merged = {
            let imports = manager.imports_mut();
            merge_pod_status(&api_status, &status.status, || imports.pod_could_have_running_containers(&pod.json), &now)
        };
        let patch = status_patch(&view.metadata.uid, &api_status, &merged).map_err(ManagerError::InvalidStatus)?;
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
        manager: &mut podstatus_logic::Manager<I>,
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
    fn can_be_deleted(
        &self,
        manager: &mut podstatus_logic::Manager<I>,
        pod: &ApiPod,
        status: &VersionedStatus,
    ) -> Result<bool> {
        let view = &pod.view;
        if !view.is_being_deleted() || view.is_mirror() {
            return Ok(false);
        }
        let phase = view.parse_status().invalid_pod(|| format!("status of {}", view.full_name()))?.phase;
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
    fn call(&self, manager: &mut podstatus_logic::Manager<I>, call: ApiCall) -> ApiReply {
        call_api(manager, call)
    }
}

/// Makes `call` at once through v2's imports, which patch (the blocking entry points'
/// calls of every version that patches).
pub fn call_api<I: Imports>(manager: &mut podstatus_logic::Manager<I>, call: ApiCall) -> ApiReply {
    match call {
        ApiCall::PatchPodStatus(patch) => ApiReply::Pod(manager.imports_mut().patch_pod_status(patch)),
        call => manager.call_api(call),
    }
}

/// The host's time at the API server's precision.
pub fn now<I: Imports>(manager: &mut podstatus_logic::Manager<I>) -> Time {
    let mut now = manager.now_cached(&mut None);
    truncate_time(&mut now);
    now
}
