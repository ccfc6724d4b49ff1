//! A plugin instance running in wasmtime.

use crate::shown::shown;
use std::collections::HashSet;
use std::sync::Arc;
use wasmtime::Store;

use crate::bindings::{
    ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, Contract, ManagerError, PerContract, PodSync,
    StatusManager, SyncOutcome, SyncRequest, SyncStep, UpdateOutcome, v0_1_0, v0_1_1, v0_2_1,
};
use crate::calls::{Call, Reply};
use crate::imports::HostState;
use crate::limits::{CallUsage, FaultKind};
use crate::plugin::call_error::{CallError, Result};
use crate::plugin::plugin_trait::Plugin;

mod handing;
mod resize;
mod syncs;

/// The exports of a plugin, by the contract version it implements (a 0.2.1 plugin's
/// are 0.2.0's, with [`ResizeExports`] beside them).
pub(crate) type Exports = PerContract<StatusManager, v0_1_1::StatusManager, v0_1_0::StatusManager>;

/// A 0.2.1 plugin's `manager` export as 0.2.1's bindings see it: the host calls only
/// its resize functions (every other through [`Exports`]; see `bindings`' docs).
pub(crate) type ResizeExports = v0_2_1::manager::Guest;

/// Calls the same export of whichever contract version the plugin implements,
/// converting an older contract's result (`$convert` turns its value into the host's
/// type) into the host's types.
macro_rules! dispatch {
    ($exports:expr, $store:expr, |$g:ident| $call:expr) => {
        dispatch!($exports, $store, |$g| $call, |r| r.map(Into::into).map_err(Into::into))
    };
    ($exports:expr, $store:expr, |$g:ident| $call:expr, |$r:ident| $convert:expr) => {
        match $exports {
            Exports::V0_2_0(bindings) => {
                let $g = bindings.kubelet_status_manager();
                $call($store)
            }
            Exports::V0_1_1(bindings) => {
                let $g = bindings.kubelet_status_manager();
                $call($store).map(|$r| $convert)
            }
            Exports::V0_1_0(bindings) => {
                let $g = bindings.kubelet_status_manager();
                $call($store).map(|$r| $convert)
            }
        }
    };
}

/// One instance of the component and its store.
pub struct ComponentPlugin {
    store: Store<HostState>,
    exports: Exports,
    /// Set once the instance has trapped: wasmtime forbids entering it again, and the
    /// host must re-instantiate (and restore state) instead.
    fault: Option<String>,
    /// A 0.2.0 plugin's syncs not yet ended, under the host's IDs (see [`syncs`]).
    syncs: syncs::Ledger,
    /// A 0.2.1 plugin's resize functions; none for older plugins, which have none.
    resize: Option<ResizeExports>,
}

impl ComponentPlugin {
    pub(crate) fn new(store: Store<HostState>, exports: Exports, resize: Option<ResizeExports>) -> Self {
        ComponentPlugin { store, exports, fault: None, syncs: syncs::Ledger::default(), resize }
    }

    /// The WIT package the plugin implements.
    pub fn contract(&self) -> Contract {
        match self.resize {
            Some(_) => Contract::V0_2_1,
            None => self.exports.contract(),
        }
    }

    /// The fault that poisoned this instance, if any.
    pub fn fault(&self) -> Option<&str> {
        self.fault.as_deref()
    }

    /// What the last call used (guest time, host CPU time in imports, import calls
    /// and bytes).
    pub fn last_call_usage(&self) -> CallUsage {
        self.store.data().sandbox.usage()
    }

    /// Log lines the plugin's rate limit dropped so far.
    pub fn dropped_log_lines(&self) -> u64 {
        self.store.data().log.dropped
    }

    /// Linear memory the instance holds, across its memories.
    pub fn memory_bytes(&self) -> usize {
        self.store.data().sandbox.memory_bytes()
    }

    /// Refuses an argument over the boundary limit before the plugin sees it.
    fn check_input(&self, call: &'static str, what: &'static str, len: usize) -> Result<()> {
        let limit = self.store.data().sandbox.limits().max_boundary_bytes;
        if len > limit {
            return Err(CallError::TooLarge { call, what, len, limit });
        }
        Ok(())
    }

    /// A fault for a result the plugin returned over its limit; poisons the instance,
    /// whose state can no longer be trusted.
    fn oversized(&mut self, call: &'static str, what: &str, len: usize, limit: usize) -> CallError {
        let message = format!("returned {what} of {len} bytes, over the limit of {limit} bytes");
        self.fault = Some(message.clone());
        CallError::Fault { call, kind: FaultKind::Oversized, message }
    }

    /// Calls one export within the sandbox's budget: a trap becomes a
    /// [`CallError::Fault`] naming the call and the limit breached, and the contract's
    /// error becomes a [`CallError::Rejected`].
    fn enter<T, E>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&Exports, &mut Store<HostState>) -> wasmtime::Result<std::result::Result<T, E>>,
        rejected: impl FnOnce(E) -> CallError,
    ) -> Result<T> {
        if let Some(message) = &self.fault {
            return Err(CallError::Fault {
                call,
                kind: FaultKind::Trap,
                message: format!("instance is unusable after an earlier fault: {message}"),
            });
        }
        self.store.data_mut().sandbox.begin_call();
        if let Some(fuel) = self.store.data().sandbox.limits().call_fuel
            && let Err(e) = self.store.set_fuel(fuel)
        {
            return Err(CallError::Fault { call, kind: FaultKind::Trap, message: format!("setting fuel: {e:#}") });
        }
        match f(&self.exports, &mut self.store) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(rejected(e)),
            Err(trap) => {
                let kind = self.store.data().sandbox.breach.unwrap_or_else(|| classify(&trap));
                let message = describe_trap(&trap);
                tracing::error!(call, kind = kind.as_str(), "plugin fault: {message}");
                self.fault = Some(message.clone());
                Err(CallError::Fault { call, kind, message })
            }
        }
    }

    fn enter_infallible<T>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&Exports, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T> {
        self.enter(call, |x, s| f(x, s).map(Ok::<T, std::convert::Infallible>), |never| match never {})
    }
}

/// What went wrong and where, in one line: the cause and the innermost frames of the
/// plugin's stack (a full backtrace of a runaway recursion is thousands of lines).
fn describe_trap(error: &wasmtime::Error) -> String {
    let cause = error.root_cause().to_string();
    let Some(backtrace) = error.downcast_ref::<wasmtime::WasmBacktrace>() else {
        return cause;
    };
    let frames = backtrace.frames();
    let shown: Vec<String> = frames
        .iter()
        .take(3)
        .map(|f| f.func_name().map_or_else(|| format!("func {}", f.func_index()), str::to_string))
        .collect();
    let more = frames.len().saturating_sub(shown.len());
    let more = if more > 0 { format!(" (+{more} more frames)") } else { String::new() };
    format!("{cause}, in {}{more}", shown.join(" < "))
}

/// Which limit a trap breached, when the trap itself says so.
fn classify(error: &wasmtime::Error) -> FaultKind {
    match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => FaultKind::CpuTime,
        Some(wasmtime::Trap::OutOfFuel) => FaultKind::Fuel,
        Some(wasmtime::Trap::StackOverflow) => FaultKind::StackOverflow,
        _ => FaultKind::Trap,
    }
}

impl Plugin for ComponentPlugin {
    fn call(&mut self, call: Call<'_>) -> Result<Reply> {
        match call {
            Call::GetPodStatus { uid } => self.call_get_pod_status(uid).map(Reply::Status),
            Call::SetPodStatus { pod, status } => self.call_set_pod_status(pod, status).map(Reply::Update),
            Call::SetContainerReadiness { pod_uid, container_id, ready } => {
                self.call_set_container_readiness(pod_uid, container_id, ready).map(Reply::Update)
            }
            Call::SetContainerStartup { pod_uid, container_id, started } => {
                self.call_set_container_startup(pod_uid, container_id, started).map(Reply::Update)
            }
            Call::SetPodResizeCondition { pod_uid, condition, reason, message, observed_generation } => {
                self.resize_set(pod_uid, condition, reason, message, observed_generation).map(Reply::Done)
            }
            Call::ClearPodResizeCondition { pod_uid, condition } => {
                self.resize_clear(pod_uid, condition).map(Reply::Flag)
            }
            Call::GetPodResizeConditions { pod_uid } => self.resize_get(pod_uid).map(Reply::Conditions),
            Call::TerminatePod { pod } => self.call_terminate_pod(pod).map(Reply::Update),
            Call::RemoveOrphanedStatuses { keep } => self.call_remove_orphaned_statuses(keep).map(Reply::Count),
            Call::SyncPod { request } => self.call_sync_pod(request).map(Reply::Synced),
            Call::SyncBatch {} => self.call_sync_batch().map(Reply::Batch),
            Call::PlanSyncPod { request } => self.call_plan_sync_pod(request).map(Reply::Plan),
            Call::PlanSyncBatch { slice } => self.call_plan_sync_batch(slice).map(Reply::BatchPlan),
            Call::StartSync { id } => self.call_start_sync(id).map(Reply::Step),
            Call::ResumeSync { id, reply } => self.call_resume_sync(id, reply).map(Reply::Step),
            Call::DropSync { id } => self.call_drop_sync(id).map(Reply::Flag),
            Call::SaveState {} => self.call_save_state().map(Reply::Document),
            Call::LoadState { state } => self.call_load_state(state).map(Reply::Done),
            Call::SaveStateChanges {} => self.call_save_state_changes().map(Reply::Document),
            Call::ApplyStateChanges { changes } => self.call_apply_state_changes(changes).map(Reply::Done),
        }
    }

    fn world(&self) -> &crate::world::World {
        &self.store.data().world
    }

    fn handed(&self) -> Option<Arc<crate::HandedPods>> {
        Some(Arc::clone(&self.store.data().handed))
    }

    fn carry_handed(&mut self, record: Arc<crate::HandedPods>) {
        let state = self.store.data_mut();
        state.handed = record;
        state.digests.clear();
    }

    fn memory(&self) -> crate::plugin::PluginMemory {
        crate::plugin::PluginMemory { linear: self.memory_bytes(), accepted_state: 0 }
    }

    fn contract(&self) -> Contract {
        ComponentPlugin::contract(self)
    }
}

/// Each export, called: its arguments bounded and noted before the plugin sees them,
/// its answer checked before anyone above the host reads it.
impl ComponentPlugin {
    fn call_get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        self.check_input("get-pod-status", "uid", uid.len())?;
        let uid = uid.to_string();
        let found = self.enter_infallible("get-pod-status", |x, s| {
            dispatch!(x, s, |g| |s| g.call_get_pod_status(s, &uid), |c| c.map(Into::into))
        })?;
        let limit = self.store.data().sandbox.limits().max_boundary_bytes;
        match found {
            Some(cached) if cached.status.len() > limit => {
                Err(self.oversized("get-pod-status", "a status", cached.status.len(), limit))
            }
            found => Ok(found),
        }
    }

    /// The status handed is noted in the host's record when the plugin first asks for
    /// something the record decides during the call (its push of the pod's sync), or
    /// when the call ends with the status cached (`queued`, `queue-full`). A status the
    /// plugin calls unchanged is not noted: an honest plugin calls a status unchanged
    /// only when it caches one equal to it (the same pod, the same phase), which the
    /// host noted when it was handed; a plugin that says so of a status it did cache
    /// narrows its own reach. The kubelet's common call, unchanged, then costs the host
    /// nothing but the copies the bindings need.
    fn call_set_pod_status(&mut self, pod: &str, status: &str) -> Result<UpdateOutcome> {
        self.check_input("set-pod-status", "pod", pod.len())?;
        self.check_input("set-pod-status", "status", status.len())?;
        // The bindings take the WIT aliases `pod-json` and `status-json` as `&String`.
        let handed = Arc::new((pod.to_string(), status.to_string()));
        self.store.data_mut().pending_hand = Some(Arc::clone(&handed));
        let outcome = self.enter(
            "set-pod-status",
            |x, s| dispatch!(x, s, |g| |s| g.call_set_pod_status(s, &handed.0, &handed.1)),
            |error| CallError::Rejected { call: "set-pod-status", error },
        );
        let state = self.store.data_mut();
        if state.pending_hand.take().is_some()
            && matches!(outcome, Ok(UpdateOutcome::Queued | UpdateOutcome::QueueFull))
        {
            state.note_status(pod, status);
        }
        outcome
    }

    fn call_set_container_readiness(
        &mut self,
        pod_uid: &str,
        container_id: &str,
        ready: bool,
    ) -> Result<UpdateOutcome> {
        self.check_input("set-container-readiness", "pod-uid", pod_uid.len())?;
        self.check_input("set-container-readiness", "container-id", container_id.len())?;
        let pod_uid = pod_uid.to_string();
        self.enter(
            "set-container-readiness",
            |x, s| dispatch!(x, s, |g| |s| g.call_set_container_readiness(s, &pod_uid, container_id, ready)),
            |error| CallError::Rejected { call: "set-container-readiness", error },
        )
    }

    fn call_set_container_startup(
        &mut self,
        pod_uid: &str,
        container_id: &str,
        started: bool,
    ) -> Result<UpdateOutcome> {
        const CALL: &str = "set-container-startup";
        if matches!(self.exports, Exports::V0_1_0(_)) {
            return Err(CallError::Unsupported { call: CALL, contract: self.contract() });
        }
        self.check_input("set-container-startup", "pod-uid", pod_uid.len())?;
        self.check_input("set-container-startup", "container-id", container_id.len())?;
        let pod_uid = pod_uid.to_string();
        let contract = self.contract();
        self.enter(
            CALL,
            |x, s| match x {
                Exports::V0_2_0(b) => {
                    b.kubelet_status_manager().call_set_container_startup(s, &pod_uid, container_id, started)
                }
                Exports::V0_1_1(b) => b
                    .kubelet_status_manager()
                    .call_set_container_startup(s, &pod_uid, container_id, started)
                    .map(|r| r.map(Into::into).map_err(Into::into)),
                Exports::V0_1_0(_) => unreachable!("checked above"),
            },
            // A 0.2.0 plugin whose logic has no startup probes says so.
            |error| match error {
                ManagerError::Unsupported(_) => CallError::Unsupported { call: CALL, contract },
                error => CallError::Rejected { call: CALL, error },
            },
        )
    }

    fn call_terminate_pod(&mut self, pod: &str) -> Result<UpdateOutcome> {
        self.check_input("terminate-pod", "pod", pod.len())?;
        self.hand_termination(pod);
        let pod = pod.to_string();
        self.enter(
            "terminate-pod",
            |x, s| dispatch!(x, s, |g| |s| g.call_terminate_pod(s, &pod)),
            |error| CallError::Rejected { call: "terminate-pod", error },
        )
    }

    fn call_remove_orphaned_statuses(&mut self, keep: &[String]) -> Result<u32> {
        self.check_input("remove-orphaned-statuses", "keep", keep.iter().map(|uid| uid.len() + 8).sum())?;
        let removed = self.enter_infallible("remove-orphaned-statuses", |x, s| {
            dispatch!(x, s, |g| |s| g.call_remove_orphaned_statuses(s, keep), |n| n)
        })?;
        // The plugin dropped the others' statuses: it has no business reaching them.
        // `keep` only narrows: a UID the host never handed is not handed by keeping it.
        // Only once the call is through: a plugin that faulted kept them (a supervisor
        // restores it holding them), and the host asks again.
        let kept: HashSet<&str> = keep.iter().map(String::as_str).collect();
        self.store.data().handed.retain(&kept);
        Ok(removed)
    }

    fn call_sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        if self.contract().has_split_syncs() {
            let world = self.store.data().world.clone();
            return crate::plugin::split_sync::sync_pod_now(self, &world, request);
        }
        // A request hands nothing: the queue holds only pods handed already, and one the
        // plugin's state carried in (a recovery queues those again) is not made one. Its
        // pod stays reachable while it syncs, dropped since or not (see `HostState::syncing`).
        let old = v0_1_0::kubelet::status::types::SyncRequest::from(request);
        let middle = v0_1_1::kubelet::status::types::SyncRequest::from(request);
        self.store.data_mut().syncing = Some(request.pod_uid.as_str().into());
        let outcome = self.enter(
            "sync-pod",
            |x, s| match x {
                Exports::V0_2_0(_) => unreachable!("split syncs are planned"),
                Exports::V0_1_1(b) => {
                    b.kubelet_status_manager().call_sync_pod(s, &middle).map(|r| r.map(Into::into).map_err(Into::into))
                }
                Exports::V0_1_0(b) => {
                    b.kubelet_status_manager().call_sync_pod(s, &old).map(|r| r.map(Into::into).map_err(Into::into))
                }
            },
            |error| CallError::Rejected { call: "sync-pod", error },
        );
        // What the plugin dropped, the host's record dropped when it saw why (a delete
        // the API server answered, a read that found the pod recreated): the outcome is
        // the plugin's word, which the record does not take.
        self.store.data_mut().syncing = None;
        outcome
    }

    fn call_sync_batch(&mut self) -> Result<BatchReport> {
        if self.contract().has_split_syncs() {
            let world = self.store.data().world.clone();
            return crate::plugin::split_sync::sync_batch_now(self, &world);
        }
        self.enter_infallible("sync-batch", |x, s| match x {
            Exports::V0_2_0(_) => unreachable!("split syncs are planned"),
            Exports::V0_1_1(b) => b.kubelet_status_manager().call_sync_batch(s).map(Into::into),
            Exports::V0_1_0(b) => b.kubelet_status_manager().call_sync_batch(s).map(Into::into),
        })
    }

    fn call_plan_sync_pod(&mut self, request: &SyncRequest) -> Result<Vec<PodSync>> {
        const CALL: &str = "sync-pod";
        let Exports::V0_2_0(bindings) = &self.exports else {
            return Err(CallError::Unsupported { call: CALL, contract: self.contract() });
        };
        let manager = bindings.kubelet_status_manager().clone();
        let request = crate::bindings::kubelet::status::types::SyncRequest::from(request);
        let syncs = self.enter(
            CALL,
            |_, s| manager.call_sync_pod(s, &request),
            |error| CallError::Rejected { call: CALL, error },
        )?;
        self.check_syncs(CALL, syncs, Some(&request.pod_uid))
    }

    fn call_plan_sync_batch(&mut self, slice: &BatchSlice) -> Result<BatchPlan> {
        const CALL: &str = "sync-batch";
        let Exports::V0_2_0(bindings) = &self.exports else {
            return Err(CallError::Unsupported { call: CALL, contract: self.contract() });
        };
        let manager = bindings.kubelet_status_manager().clone();
        let plan = self.enter_infallible(CALL, |_, s| manager.call_sync_batch(s, slice))?;
        let syncs = self.check_syncs(CALL, plan.syncs, None)?;
        let next = self.check_batch_next(CALL, slice, plan.next)?;
        Ok(BatchPlan { report: plan.report, syncs, next })
    }

    fn call_start_sync(&mut self, id: u64) -> Result<SyncStep> {
        const CALL: &str = "start-sync";
        let Exports::V0_2_0(bindings) = &self.exports else {
            return Err(CallError::Unsupported { call: CALL, contract: self.contract() });
        };
        let manager = bindings.kubelet_status_manager().clone();
        // Only a planned sync, once: the plugin is not asked about any other ID.
        let Some(plugin_id) = self.syncs.plugin_id(id, false) else {
            return Err(CallError::Rejected { call: CALL, error: ManagerError::UnknownSync(id) });
        };
        let step = self.enter(
            CALL,
            |_, s| manager.call_start_sync(s, plugin_id),
            |error| CallError::Rejected { call: CALL, error },
        );
        self.settle(CALL, id, step, None)
    }

    fn call_resume_sync(&mut self, id: u64, reply: &ApiReply) -> Result<SyncStep> {
        const CALL: &str = "resume-sync";
        let Exports::V0_2_0(bindings) = &self.exports else {
            return Err(CallError::Unsupported { call: CALL, contract: self.contract() });
        };
        let manager = bindings.kubelet_status_manager().clone();
        // What the API server returned is the host's, not the plugin's: a pod over the
        // boundary limit is refused as the 0.1.x import refuses it.
        let len = match reply {
            ApiReply::Pod(Ok(pod)) => pod.len(),
            ApiReply::Pod(Err(e)) | ApiReply::Deleted(Err(e)) => crate::api::error_message(e).len(),
            ApiReply::Deleted(Ok(())) => 0,
        };
        // The reply's pod is not noted as handed, as 0.1.x's `get-pod` does not note
        // it: the sync's own pod was handed when it was planned, and finding the UID
        // means reading the whole pod (two of those were 7 µs of a 54 µs sync).
        self.check_input(CALL, "reply", len)?;
        // Only a sync waiting for an answer.
        let Some(plugin_id) = self.syncs.plugin_id(id, true) else {
            return Err(CallError::Rejected { call: CALL, error: ManagerError::UnknownSync(id) });
        };
        let step = self.enter(
            CALL,
            |_, s| manager.call_resume_sync(s, plugin_id, reply),
            |error| CallError::Rejected { call: CALL, error },
        );
        self.settle(CALL, id, step, Some(reply))
    }

    fn call_drop_sync(&mut self, id: u64) -> Result<bool> {
        const CALL: &str = "drop-sync";
        let Exports::V0_2_0(bindings) = &self.exports else {
            return Err(CallError::Unsupported { call: CALL, contract: self.contract() });
        };
        let manager = bindings.kubelet_status_manager().clone();
        let Some(plugin_id) = self.syncs.end(id) else { return Ok(false) };
        self.enter_infallible(CALL, |_, s| manager.call_drop_sync(s, plugin_id))
    }

    fn call_save_state(&mut self) -> Result<String> {
        let state = self.enter_infallible("save-state", |x, s| dispatch!(x, s, |g| |s| g.call_save_state(s), |d| d))?;
        self.check_state_output("save-state", state)
    }

    fn call_load_state(&mut self, state: &str) -> Result<()> {
        self.check_state_input("load-state", state)?;
        self.enter(
            "load-state",
            |x, s| dispatch!(x, s, |g| |s| g.call_load_state(s, state)),
            |error| CallError::Rejected { call: "load-state", error },
        )?;
        self.narrow_to_state(state);
        Ok(())
    }

    fn call_save_state_changes(&mut self) -> Result<String> {
        let changes = self.enter_infallible("save-state-changes", |x, s| {
            dispatch!(x, s, |g| |s| g.call_save_state_changes(s), |d| d)
        })?;
        self.check_state_output("save-state-changes", changes)
    }

    fn call_apply_state_changes(&mut self, changes: &str) -> Result<()> {
        self.check_state_input("apply-state-changes", changes)?;
        self.enter(
            "apply-state-changes",
            |x, s| dispatch!(x, s, |g| |s| g.call_apply_state_changes(s, changes)),
            |error| CallError::Rejected { call: "apply-state-changes", error },
        )?;
        self.widen_to_changes(changes);
        Ok(())
    }
}

impl ComponentPlugin {
    /// Checks the syncs a plan returned: each names a pod the host handed the plugin
    /// (the plugin may only sync pods it was told of), or the pod of the request it
    /// planned for (`request`: queued while handed, it may sync after a drop, as
    /// upstream's queued request does), with a UID of bounded length. A plan naming any
    /// other pod is a plugin bug: the instance is poisoned.
    fn check_syncs(&mut self, call: &'static str, syncs: Vec<PodSync>, request: Option<&str>) -> Result<Vec<PodSync>> {
        let limit = self.store.data().sandbox.limits().max_boundary_bytes;
        let bytes: usize = syncs.iter().map(|s| s.pod_uid.len() + 16).sum();
        if bytes > limit {
            return Err(self.oversized(call, "a plan", bytes, limit));
        }
        let requested = |uid: &str| request == Some(uid);
        let foreign = syncs.iter().find(|s| !self.handed_over(&s.pod_uid) && !requested(&s.pod_uid));
        if let Some(foreign) = foreign {
            let message = format!(
                "planned a sync of pod {:?}, which is not a pod whose status the host handed it",
                shown(&foreign.pod_uid)
            );
            self.fault = Some(message.clone());
            return Err(CallError::Fault { call, kind: FaultKind::ForeignUid, message });
        }
        let handed = &self.store.data().handed;
        self.syncs.plan(syncs, handed, request).map_err(|(kind, message)| {
            self.fault = Some(message.clone());
            CallError::Fault { call, kind, message }
        })
    }

    /// Whether `uid` names a pod whose status the host handed this plugin and has not
    /// dropped: what a plan or a batch cursor may name (`HostState::may_reach`).
    fn handed_over(&self, uid: &str) -> bool {
        self.store.data().may_reach(uid)
    }

    /// Checks where a batch's next slice starts: a pod the host handed over, strictly
    /// after `slice`'s start, so that a batch ends after at most one slice per pod (a
    /// cursor that stands still or names a made-up pod would keep the host asking).
    fn check_batch_next(
        &mut self,
        call: &'static str,
        slice: &BatchSlice,
        next: Option<String>,
    ) -> Result<Option<String>> {
        let Some(next) = next else { return Ok(None) };
        let known = self.handed_over(&next);
        let forward = slice.after.as_ref().is_none_or(|after| *after < next);
        let (kind, message) = if !known {
            let message = format!(
                "continued a batch after pod {:?}, which is not a pod whose status the host handed it",
                shown(&next)
            );
            (FaultKind::ForeignUid, message)
        } else if !forward {
            let after = slice.after.as_deref().unwrap_or_default();
            let message = format!(
                "continued a batch after pod {:?}, which is not after the slice's start {:?}",
                shown(&next),
                shown(after)
            );
            (FaultKind::Cursor, message)
        } else {
            return Ok(Some(next));
        };
        self.fault = Some(message.clone());
        Err(CallError::Fault { call, kind, message })
    }

    /// Checks the call a sync asks for: within the boundary limit (the host makes it
    /// with the plugin's bytes).
    fn check_step(&mut self, call: &'static str, step: SyncStep) -> Result<SyncStep> {
        if let SyncStep::Call(api_call) = &step {
            let limit = self.store.data().sandbox.limits().max_boundary_bytes;
            let len = crate::api::call_len(api_call);
            if len > limit {
                return Err(self.oversized(call, "an API call", len, limit));
            }
        }
        Ok(step)
    }

    /// After a step of the sync `id` (`reply` the answer it was handed): an error ends
    /// the sync (an `unknown-sync` names the host's ID), and a step is checked against
    /// what the host saw of the sync ([`syncs::Ledger::step`]); a breach poisons the
    /// instance.
    fn settle(
        &mut self,
        call: &'static str,
        id: u64,
        result: Result<SyncStep>,
        reply: Option<&ApiReply>,
    ) -> Result<SyncStep> {
        let mut step = match result {
            Ok(step) => self.check_step(call, step)?,
            Err(CallError::Rejected { call, error: ManagerError::UnknownSync(_) }) => {
                self.syncs.end(id);
                return Err(CallError::Rejected { call, error: ManagerError::UnknownSync(id) });
            }
            Err(e) => {
                self.syncs.end(id);
                return Err(e);
            }
        };
        let state = self.store.data();
        let max_calls = state.sandbox.limits().sync_calls;
        if let Err((kind, message)) = self.syncs.step(id, &mut step, reply, state, max_calls) {
            self.fault = Some(message.clone());
            return Err(CallError::Fault { call, kind, message });
        }
        Ok(step)
    }

    fn check_state_input(&self, call: &'static str, state: &str) -> Result<()> {
        let limit = self.store.data().sandbox.limits().max_state_bytes;
        if state.len() > limit {
            return Err(CallError::TooLarge { call, what: "state", len: state.len(), limit });
        }
        Ok(())
    }

    fn check_state_output(&mut self, call: &'static str, state: String) -> Result<String> {
        let limit = self.store.data().sandbox.limits().max_state_bytes;
        if state.len() > limit {
            return Err(self.oversized(call, "a state document", state.len(), limit));
        }
        Ok(state)
    }
}
