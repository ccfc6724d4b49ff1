//! The status manager's operations as one trait ([`StatusManager`]), implemented once
//! ([`Manager`]) over the engine for whichever logic version ([`Policy`]) it carries.
//!
//! Every adapter is written against [`StatusManager`]: each contract's glue, the
//! host's native plugin, the test drivers. A new operation is added here, once; a new
//! logic version is one more [`Policy`].

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::find_container_status;

use crate::engine::Engine;
use crate::engine::sync_policy::SyncPolicy;
use crate::error::ManagerError;
use crate::error::Result;
use crate::imports::{ApiReply, Imports, SyncRequest};
use crate::jobs::{BatchPlan, BatchSlice, PodSync, SyncStep};
use crate::outcomes::{BatchReport, CachedStatus, SyncOutcome, UpdateOutcome};
use crate::repeats::{CallDigest, Repeats};
use crate::resize::ResizeCondition;

/// The kubelet's `status.Manager`, as every contract version exports it: one method per
/// export of the WIT `manager` interface (a contract exports a subset: 0.1.x the
/// blocking syncs, 0.2.0 the split ones). Pods and statuses are Kubernetes JSON.
pub trait StatusManager {
    /// The cached status of `uid` (a mirror pod's UID finds its static pod's status).
    fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>>;
    /// Caches `status` for `pod` (both JSON) and queues its write when it changed.
    fn set_pod_status(&mut self, pod_json: &str, status_json: &str) -> Result<UpdateOutcome>;
    /// Sets one container's readiness in the cached status and regenerates Ready.
    fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome>;
    /// Sets whether one container has passed its startup probe; a version without
    /// startup probes answers [`crate::ManagerError::Unsupported`].
    fn set_container_startup(&mut self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome>;
    /// Ends the pod's life in the cache and forces an update.
    fn terminate_pod(&mut self, pod_json: &str) -> Result<UpdateOutcome>;
    /// Drops every cached status whose pod UID is not in `keep`; returns how many.
    fn remove_orphaned_statuses(&mut self, keep: &[String]) -> u32;
    /// Handles one request the host took off the sync queue, its calls made at once
    /// through the imports (contract 0.1.x).
    fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome>;
    /// One periodic batch sync, its calls made at once (contract 0.1.x).
    fn sync_batch(&mut self) -> BatchReport;
    /// Takes one request off the sync queue and plans its syncs (contract 0.2.0).
    fn plan_sync_pod(&mut self, request: &SyncRequest) -> Result<Vec<PodSync>>;
    /// Decides one slice of a periodic batch sync and plans its syncs (contract 0.2.0).
    fn plan_sync_batch(&mut self, slice: &BatchSlice) -> BatchPlan;
    /// Starts the planned sync `id`: it ends, or asks for its first API call.
    fn start_sync(&mut self, id: u64) -> Result<SyncStep>;
    /// Hands the suspended sync `id` the answer to its call; it ends or asks again.
    fn resume_sync(&mut self, id: u64, reply: ApiReply) -> Result<SyncStep>;
    /// Forgets the sync `id`, planned or suspended; false when it was not known.
    fn drop_sync(&mut self, id: u64) -> bool;
    /// The whole state as a versioned document.
    fn save_state(&mut self) -> Result<String>;
    /// Replaces the whole state with a document; on error nothing changes.
    fn load_state(&mut self, document: &str) -> Result<()>;
    /// What changed since the last save, as a change set.
    fn save_state_changes(&mut self) -> Result<String>;
    /// Applies another instance's change set; on error nothing changes.
    fn apply_state_changes(&mut self, document: &str) -> Result<()>;
    /// Caches the in-place resize condition `condition` of the pod `pod_uid` (status
    /// True, with `reason`, `message` and `observed_generation`), as 1.35's
    /// `SetPodResizePendingCondition` / `SetPodResizeInProgressCondition` do; a version
    /// before 1.33 answers [`crate::ManagerError::Unsupported`].
    fn set_pod_resize_condition(
        &mut self,
        pod_uid: &str,
        condition: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()>;
    /// Clears the resize condition `condition` of `pod_uid`: true when the condition was
    /// set (upstream's `ClearPodResizeInProgressCondition`).
    fn clear_pod_resize_condition(&mut self, pod_uid: &str, condition: ResizeCondition) -> Result<bool>;
    /// JSON of each cached resize condition of `pod_uid` (core/v1 PodCondition),
    /// PodResizePending first (upstream's `GetPodResizeConditions`). Upstream's
    /// `IsPodResizeDeferred` / `IsPodResizeInfeasible` are this, then the pending
    /// condition's reason being `Deferred` / `Infeasible`.
    fn get_pod_resize_conditions(&mut self, pod_uid: &str) -> Result<Vec<String>>;
}

/// What a logic version decides: how each update changes the cached status, what a
/// sync request plans, and (as its [`SyncPolicy`]) how each pod's sync writes. The
/// engine does the rest, the same for every version.
pub trait Policy<I: Imports>: SyncPolicy<I> {
    /// `SetPodStatus`.
    fn set_pod_status(&self, engine: &mut Engine<I>, pod_json: &str, status_json: &str) -> Result<UpdateOutcome>;
    /// `SetContainerReadiness`: `probe.passed` is whether the container is ready.
    fn set_container_readiness(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome>;
    /// `SetContainerStartup`: `probe.passed` is whether the container has started.
    fn set_container_startup(&self, engine: &mut Engine<I>, probe: ContainerProbe<'_>) -> Result<UpdateOutcome>;
    /// `TerminatePod`.
    fn terminate_pod(&self, engine: &mut Engine<I>, pod_json: &str) -> Result<UpdateOutcome>;

    /// Whether a readiness result changes nothing in `cached`, the pod's cached status:
    /// its container already has that readiness. Then the update ends before the pod is
    /// read (the manager still asks the pod manager whether it has the pod, which comes
    /// first in upstream's order). The default: the container's `ready` flag.
    fn readiness_unchanged(&self, cached: &PodStatus, probe: ContainerProbe<'_>) -> bool {
        find_container_status(cached, probe.container_id).is_some_and(|c| c.ready == probe.passed)
    }

    /// [`Policy::readiness_unchanged`] for a startup result: the default, the container's
    /// `started` flag is set to it already (an unset flag is a change even to false, as
    /// Go's `*bool` is nil until set). A version without startup probes says false, so
    /// that its answer (unsupported) stays its own.
    fn startup_unchanged(&self, cached: &PodStatus, probe: ContainerProbe<'_>) -> bool {
        find_container_status(cached, probe.container_id).is_some_and(|c| c.started == Some(probe.passed))
    }

    /// Takes `request` off the sync queue (it is used up) and plans what handling it
    /// syncs: the snapshot it was queued with (2017), or a pass over every unwritten
    /// pod (1.27).
    fn plan_sync_pod(&self, engine: &mut Engine<I>, request: &SyncRequest) -> Result<Vec<PodSync>>;

    /// `SetPodResizePendingCondition` / `SetPodResizeInProgressCondition` (1.33+). The
    /// default, for versions before in-place resize: unsupported.
    fn set_pod_resize_condition(
        &self,
        _engine: &mut Engine<I>,
        _pod_uid: &str,
        condition: ResizeCondition,
        _reason: &str,
        _message: &str,
        _observed_generation: i64,
    ) -> Result<()> {
        Err(no_resize(condition))
    }

    /// `ClearPodResizePendingCondition` / `ClearPodResizeInProgressCondition` (1.33+);
    /// the default: unsupported.
    fn clear_pod_resize_condition(
        &self,
        _engine: &mut Engine<I>,
        _pod_uid: &str,
        condition: ResizeCondition,
    ) -> Result<bool> {
        Err(no_resize(condition))
    }

    /// `GetPodResizeConditions` (1.33+); the default: unsupported.
    fn get_pod_resize_conditions(&self, _engine: &mut Engine<I>, _pod_uid: &str) -> Result<Vec<String>> {
        Err(no_resize_conditions())
    }
}

/// What a version without in-place resize answers for its conditions.
pub(crate) fn no_resize_conditions() -> ManagerError {
    ManagerError::Unsupported("this logic version has no in-place resize conditions (Kubernetes 1.33+)".into())
}

/// What a version without in-place resize answers for `condition`.
pub(crate) fn no_resize(condition: ResizeCondition) -> ManagerError {
    ManagerError::Unsupported(format!(
        "this logic version has no {} condition (in-place resize, Kubernetes 1.33+)",
        condition.condition_type()
    ))
}

/// One container's probe result, as `set-container-readiness` (ready) and
/// `set-container-startup` (started) report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerProbe<'a> {
    /// The pod's UID (a mirror pod's finds nothing: probes run on the node's pods).
    pub pod_uid: &'a str,
    /// The container's ID, as its status has it (`containerd://...`).
    pub container_id: &'a str,
    /// Whether the probe passed.
    pub passed: bool,
}

/// The status manager of the logic version `P`, over `imports`: the one implementation
/// of [`StatusManager`].
pub struct Manager<I: Imports, P> {
    engine: Engine<I>,
    policy: P,
    /// The last unchanged `SetPodStatus` call of each pod, answered again without
    /// parsing while its pod's cached status stays the same.
    repeats: Repeats,
}

impl<I: Imports, P: Policy<I> + Default> Manager<I, P> {
    /// An empty manager over `imports`.
    pub fn new(imports: I) -> Self {
        Manager { engine: Engine::new(imports), policy: P::default(), repeats: Repeats::default() }
    }
}

impl<I: Imports, P> Manager<I, P> {
    /// The imports, for callers that own the world behind them (tests, benchmarks).
    pub fn imports_mut(&mut self) -> &mut I {
        self.engine.imports_mut()
    }

    /// How many planned or suspended syncs the manager holds.
    pub fn syncs_in_flight(&self) -> usize {
        self.engine.syncs_in_flight()
    }
}

impl<I: Imports, P: Policy<I>> Manager<I, P> {
    /// Whether a probe result changes nothing, told from the cached status alone
    /// (`unchanged`, one of the policy's) and the pod manager's having the pod.
    fn probe_changes_nothing(
        &mut self,
        probe: ContainerProbe<'_>,
        unchanged: fn(&P, &PodStatus, ContainerProbe<'_>) -> bool,
    ) -> bool {
        let same = self.engine.cached_ref(probe.pod_uid).is_some_and(|c| unchanged(&self.policy, &c.status, probe));
        same && self.engine.imports_mut().has_pod(probe.pod_uid)
    }
}

impl<I: Imports, P: Policy<I>> StatusManager for Manager<I, P> {
    fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        self.engine.get_pod_status(uid)
    }

    /// The kubelet's common call first: a repeat of the pod's last unchanged call over
    /// the same cached status is unchanged, told from digests (`crate::repeats`); any
    /// other goes the policy's semantic way.
    fn set_pod_status(&mut self, pod_json: &str, status_json: &str) -> Result<UpdateOutcome> {
        let call = CallDigest::of(pod_json, status_json);
        if self.repeats.is_repeat(call, |uid| self.engine.cached_ref(uid)) {
            return Ok(UpdateOutcome::Unchanged);
        }
        self.engine.take_found_unchanged();
        let outcome = self.policy.set_pod_status(&mut self.engine, pod_json, status_json)?;
        if outcome == UpdateOutcome::Unchanged
            && let Some(uid) = self.engine.take_found_unchanged()
            && let Some(cached) = self.engine.cached_ref(&uid)
        {
            self.repeats.note_unchanged(call, &uid, cached);
        }
        Ok(outcome)
    }

    fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        let probe = ContainerProbe { pod_uid, container_id, passed: ready };
        if self.probe_changes_nothing(probe, P::readiness_unchanged) {
            return Ok(UpdateOutcome::Unchanged);
        }
        self.policy.set_container_readiness(&mut self.engine, probe)
    }

    fn set_container_startup(&mut self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome> {
        let probe = ContainerProbe { pod_uid, container_id, passed: started };
        if self.probe_changes_nothing(probe, P::startup_unchanged) {
            return Ok(UpdateOutcome::Unchanged);
        }
        self.policy.set_container_startup(&mut self.engine, probe)
    }

    fn terminate_pod(&mut self, pod_json: &str) -> Result<UpdateOutcome> {
        self.policy.terminate_pod(&mut self.engine, pod_json)
    }

    fn remove_orphaned_statuses(&mut self, keep: &[String]) -> u32 {
        self.repeats.retain(keep);
        self.engine.remove_orphaned_statuses(keep)
    }

    fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        let syncs = self.policy.plan_sync_pod(&mut self.engine, request)?;
        self.engine.run_syncs_with(&self.policy, syncs)
    }

    fn sync_batch(&mut self) -> BatchReport {
        self.engine.sync_batch_with(&self.policy)
    }

    fn plan_sync_pod(&mut self, request: &SyncRequest) -> Result<Vec<PodSync>> {
        self.policy.plan_sync_pod(&mut self.engine, request)
    }

    fn plan_sync_batch(&mut self, slice: &BatchSlice) -> BatchPlan {
        self.engine.plan_sync_batch_with(&self.policy, slice)
    }

    fn start_sync(&mut self, id: u64) -> Result<SyncStep> {
        self.engine.start_sync_with(&self.policy, id)
    }

    fn resume_sync(&mut self, id: u64, reply: ApiReply) -> Result<SyncStep> {
        self.engine.resume_sync_with(&self.policy, id, reply)
    }

    fn drop_sync(&mut self, id: u64) -> bool {
        self.engine.drop_sync(id)
    }

    fn save_state(&mut self) -> Result<String> {
        self.engine.save_state()
    }

    fn load_state(&mut self, document: &str) -> Result<()> {
        self.repeats.clear();
        self.engine.load_state(document)
    }

    fn save_state_changes(&mut self) -> Result<String> {
        self.engine.save_state_changes()
    }

    fn apply_state_changes(&mut self, document: &str) -> Result<()> {
        self.repeats.clear();
        self.engine.apply_state_changes(document)
    }

    fn set_pod_resize_condition(
        &mut self,
        pod_uid: &str,
        condition: ResizeCondition,
        reason: &str,
        message: &str,
        observed_generation: i64,
    ) -> Result<()> {
        self.policy.set_pod_resize_condition(&mut self.engine, pod_uid, condition, reason, message, observed_generation)
    }

    fn clear_pod_resize_condition(&mut self, pod_uid: &str, condition: ResizeCondition) -> Result<bool> {
        self.policy.clear_pod_resize_condition(&mut self.engine, pod_uid, condition)
    }

    fn get_pod_resize_conditions(&mut self, pod_uid: &str) -> Result<Vec<String>> {
        self.policy.get_pod_resize_conditions(&mut self.engine, pod_uid)
    }
}
