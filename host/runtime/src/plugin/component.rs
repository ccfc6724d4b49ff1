//! A plugin instance running in wasmtime.

use wasmtime::Store;

use crate::bindings::{
    BatchReport, CachedStatus, Contract, PerContract, StatusManager, SyncOutcome, SyncRequest, UpdateOutcome, v0_1_0,
};
use crate::imports::HostState;
use crate::plugin::limits::{CallUsage, FaultKind};
use crate::plugin::{CallError, Plugin, Result};

/// The exports of a plugin, by the contract version it implements.
pub(crate) type Exports = PerContract<StatusManager, v0_1_0::StatusManager>;

/// Calls the same export of whichever contract version the plugin implements,
/// converting the 0.1.0 results into the host's types.
macro_rules! dispatch {
    ($exports:expr, $store:expr, |$g:ident| $call:expr) => {
        match $exports {
            Exports::V0_1_1(bindings) => {
                let $g = bindings.kubelet_status_manager();
                $call($store)
            }
            Exports::V0_1_0(bindings) => {
                let $g = bindings.kubelet_status_manager();
                $call($store).map(|r| r.map(Into::into).map_err(Into::into))
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
}

impl ComponentPlugin {
    pub(crate) fn new(store: Store<HostState>, exports: Exports) -> Self {
        ComponentPlugin { store, exports, fault: None }
    }

    /// The WIT package the plugin implements.
    pub fn contract(&self) -> Contract {
        self.exports.contract()
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

    /// Notes the UID of a pod handed to the plugin (what it may push requests for).
    fn hand_pod(&mut self, pod: &str) {
        if let Some(uid) = crate::imports::pod_uid(pod) {
            self.store.data_mut().hand(&uid);
        }
    }

    /// Notes the UIDs of a state document or change set handed to the plugin.
    fn hand_state(&mut self, document: &str) {
        for uid in state_uids(document) {
            self.store.data_mut().hand(&uid);
        }
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
    fn call<T, E>(
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

    fn call_infallible<T>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&Exports, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T> {
        self.call(call, |x, s| f(x, s).map(Ok::<T, std::convert::Infallible>), |never| match never {})
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
    fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        self.check_input("get-pod-status", "uid", uid.len())?;
        let uid = uid.to_string();
        let found = self.call_infallible("get-pod-status", |x, s| match x {
            Exports::V0_1_1(b) => b.kubelet_status_manager().call_get_pod_status(s, &uid),
            Exports::V0_1_0(b) => b.kubelet_status_manager().call_get_pod_status(s, &uid).map(|c| c.map(Into::into)),
        })?;
        let limit = self.store.data().sandbox.limits().max_boundary_bytes;
        match found {
            Some(cached) if cached.status.len() > limit => {
                Err(self.oversized("get-pod-status", "a status", cached.status.len(), limit))
            }
            found => Ok(found),
        }
    }

    fn set_pod_status(&mut self, pod: &str, status: &str) -> Result<UpdateOutcome> {
        self.check_input("set-pod-status", "pod", pod.len())?;
        self.check_input("set-pod-status", "status", status.len())?;
        self.hand_pod(pod);
        let (pod, status) = (pod.to_string(), status.to_string());
        self.call(
            "set-pod-status",
            |x, s| dispatch!(x, s, |g| |s| g.call_set_pod_status(s, &pod, &status)),
            |error| CallError::Rejected { call: "set-pod-status", error },
        )
    }

    fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        self.check_input("set-container-readiness", "pod-uid", pod_uid.len())?;
        self.check_input("set-container-readiness", "container-id", container_id.len())?;
        self.store.data_mut().hand(pod_uid);
        let pod_uid = pod_uid.to_string();
        self.call(
            "set-container-readiness",
            |x, s| dispatch!(x, s, |g| |s| g.call_set_container_readiness(s, &pod_uid, container_id, ready)),
            |error| CallError::Rejected { call: "set-container-readiness", error },
        )
    }

    fn set_container_startup(&mut self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome> {
        if matches!(self.exports, Exports::V0_1_0(_)) {
            return Err(CallError::Unsupported { call: "set-container-startup", contract: self.contract() });
        }
        self.check_input("set-container-startup", "pod-uid", pod_uid.len())?;
        self.check_input("set-container-startup", "container-id", container_id.len())?;
        self.store.data_mut().hand(pod_uid);
        let pod_uid = pod_uid.to_string();
        self.call(
            "set-container-startup",
            |x, s| match x {
                Exports::V0_1_1(b) => {
                    b.kubelet_status_manager().call_set_container_startup(s, &pod_uid, container_id, started)
                }
                Exports::V0_1_0(_) => unreachable!("checked above"),
            },
            |error| CallError::Rejected { call: "set-container-startup", error },
        )
    }

    fn terminate_pod(&mut self, pod: &str) -> Result<UpdateOutcome> {
        self.check_input("terminate-pod", "pod", pod.len())?;
        self.hand_pod(pod);
        let pod = pod.to_string();
        self.call(
            "terminate-pod",
            |x, s| dispatch!(x, s, |g| |s| g.call_terminate_pod(s, &pod)),
            |error| CallError::Rejected { call: "terminate-pod", error },
        )
    }

    fn remove_orphaned_statuses(&mut self, keep: &[String]) -> Result<u32> {
        self.check_input("remove-orphaned-statuses", "keep", keep.iter().map(|uid| uid.len() + 8).sum())?;
        // The plugin drops the others' statuses: it has no business queuing them.
        let kept: std::collections::HashSet<&str> = keep.iter().map(String::as_str).collect();
        self.store.data_mut().handed.retain(|uid| kept.contains(&**uid));
        for uid in keep {
            self.store.data_mut().hand(uid);
        }
        self.call_infallible("remove-orphaned-statuses", |x, s| match x {
            Exports::V0_1_1(b) => b.kubelet_status_manager().call_remove_orphaned_statuses(s, keep),
            Exports::V0_1_0(b) => b.kubelet_status_manager().call_remove_orphaned_statuses(s, keep),
        })
    }

    fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        self.store.data_mut().hand(&request.pod_uid);
        let old = v0_1_0::kubelet::status::types::SyncRequest::from(request);
        let new = crate::bindings::kubelet::status::types::SyncRequest::from(request);
        self.call(
            "sync-pod",
            |x, s| match x {
                Exports::V0_1_1(b) => b.kubelet_status_manager().call_sync_pod(s, &new),
                Exports::V0_1_0(b) => {
                    b.kubelet_status_manager().call_sync_pod(s, &old).map(|r| r.map(Into::into).map_err(Into::into))
                }
            },
            |error| CallError::Rejected { call: "sync-pod", error },
        )
    }

    fn sync_batch(&mut self) -> Result<BatchReport> {
        self.call_infallible("sync-batch", |x, s| match x {
            Exports::V0_1_1(b) => b.kubelet_status_manager().call_sync_batch(s),
            Exports::V0_1_0(b) => b.kubelet_status_manager().call_sync_batch(s).map(Into::into),
        })
    }

    fn save_state(&mut self) -> Result<String> {
        let state = self.call_infallible("save-state", |x, s| match x {
            Exports::V0_1_1(b) => b.kubelet_status_manager().call_save_state(s),
            Exports::V0_1_0(b) => b.kubelet_status_manager().call_save_state(s),
        })?;
        self.check_state_output("save-state", state)
    }

    fn load_state(&mut self, state: &str) -> Result<()> {
        self.check_state_input("load-state", state)?;
        self.hand_state(state);
        self.call(
            "load-state",
            |x, s| dispatch!(x, s, |g| |s| g.call_load_state(s, state)),
            |error| CallError::Rejected { call: "load-state", error },
        )
    }

    fn save_state_changes(&mut self) -> Result<String> {
        let changes = self.call_infallible("save-state-changes", |x, s| match x {
            Exports::V0_1_1(b) => b.kubelet_status_manager().call_save_state_changes(s),
            Exports::V0_1_0(b) => b.kubelet_status_manager().call_save_state_changes(s),
        })?;
        self.check_state_output("save-state-changes", changes)
    }

    fn apply_state_changes(&mut self, changes: &str) -> Result<()> {
        self.check_state_input("apply-state-changes", changes)?;
        self.hand_state(changes);
        self.call(
            "apply-state-changes",
            |x, s| dispatch!(x, s, |g| |s| g.call_apply_state_changes(s, changes)),
            |error| CallError::Rejected { call: "apply-state-changes", error },
        )
    }

    fn contract(&self) -> Contract {
        ComponentPlugin::contract(self)
    }
}

impl ComponentPlugin {
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

/// The pod UIDs a state document or change set names (its statuses' and written
/// versions' keys), read without building a tree of the entries.
fn state_uids(document: &str) -> Vec<String> {
    use serde::de::IgnoredAny;
    use std::collections::BTreeMap;
    #[derive(serde::Deserialize, Default)]
    struct Maps {
        #[serde(default)]
        statuses: BTreeMap<String, IgnoredAny>,
        #[serde(default, rename = "apiStatusVersions")]
        api_status_versions: BTreeMap<String, IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    struct Document {
        #[serde(default)]
        statuses: BTreeMap<String, IgnoredAny>,
        #[serde(default, rename = "apiStatusVersions")]
        api_status_versions: BTreeMap<String, IgnoredAny>,
        #[serde(default)]
        patch: Option<Maps>,
    }
    let Ok(doc) = serde_json::from_str::<Document>(document) else { return Vec::new() };
    let top = Maps { statuses: doc.statuses, api_status_versions: doc.api_status_versions };
    [top, doc.patch.unwrap_or_default()]
        .into_iter()
        .flat_map(|m| m.statuses.into_keys().chain(m.api_status_versions.into_keys()))
        .collect()
}
