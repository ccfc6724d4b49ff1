//! A plugin instance running in wasmtime.

use wasmtime::Store;

use crate::bindings::exports::kubelet::status::manager::Guest;
use crate::bindings::{BatchReport, CachedStatus, StatusManager, SyncOutcome, SyncRequest, UpdateOutcome};
use crate::imports::HostState;
use crate::plugin::{CallError, Plugin, Result};

/// One instance of the component and its store.
pub struct ComponentPlugin {
    store: Store<HostState>,
    bindings: StatusManager,
    /// Set once the instance has trapped: wasmtime forbids entering it again, and the
    /// host must re-instantiate (and restore state) instead.
    fault: Option<String>,
}

impl ComponentPlugin {
    pub(crate) fn new(store: Store<HostState>, bindings: StatusManager) -> Self {
        ComponentPlugin { store, bindings, fault: None }
    }

    /// The fault that poisoned this instance, if any.
    pub fn fault(&self) -> Option<&str> {
        self.fault.as_deref()
    }

    /// Calls one export: a trap becomes a [`CallError::Fault`] naming the call, and the
    /// contract's error becomes a [`CallError::Rejected`].
    fn call<T, E>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&Guest, &mut Store<HostState>) -> wasmtime::Result<std::result::Result<T, E>>,
        rejected: impl FnOnce(E) -> CallError,
    ) -> Result<T> {
        if let Some(message) = &self.fault {
            return Err(CallError::Fault {
                call,
                message: format!("instance is unusable after an earlier fault: {message}"),
            });
        }
        match f(self.bindings.kubelet_status_manager(), &mut self.store) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(rejected(e)),
            Err(trap) => {
                let message = format!("{trap:#}");
                tracing::error!(call, "plugin fault: {message}");
                self.fault = Some(message.clone());
                Err(CallError::Fault { call, message })
            }
        }
    }

    fn call_infallible<T>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&Guest, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T> {
        self.call(call, |g, s| f(g, s).map(Ok::<T, std::convert::Infallible>), |never| match never {})
    }
}

impl Plugin for ComponentPlugin {
    fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        self.call_infallible("get-pod-status", |g, s| g.call_get_pod_status(s, &uid.to_string()))
    }

    fn set_pod_status(&mut self, pod: &str, status: &str) -> Result<UpdateOutcome> {
        self.call(
            "set-pod-status",
            |g, s| g.call_set_pod_status(s, &pod.to_string(), &status.to_string()),
            |error| CallError::Rejected { call: "set-pod-status", error },
        )
    }

    fn set_container_readiness(&mut self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        self.call(
            "set-container-readiness",
            |g, s| g.call_set_container_readiness(s, &pod_uid.to_string(), container_id, ready),
            |error| CallError::Rejected { call: "set-container-readiness", error },
        )
    }

    fn terminate_pod(&mut self, pod: &str) -> Result<UpdateOutcome> {
        self.call(
            "terminate-pod",
            |g, s| g.call_terminate_pod(s, &pod.to_string()),
            |error| CallError::Rejected { call: "terminate-pod", error },
        )
    }

    fn remove_orphaned_statuses(&mut self, keep: &[String]) -> Result<u32> {
        self.call_infallible("remove-orphaned-statuses", |g, s| g.call_remove_orphaned_statuses(s, keep))
    }

    fn sync_pod(&mut self, request: &SyncRequest) -> Result<SyncOutcome> {
        self.call(
            "sync-pod",
            |g, s| g.call_sync_pod(s, request),
            |error| CallError::Rejected { call: "sync-pod", error },
        )
    }

    fn sync_batch(&mut self) -> Result<BatchReport> {
        self.call_infallible("sync-batch", |g, s| g.call_sync_batch(s))
    }

    fn save_state(&mut self) -> Result<String> {
        self.call_infallible("save-state", |g, s| g.call_save_state(s))
    }

    fn load_state(&mut self, state: &str) -> Result<()> {
        self.call(
            "load-state",
            |g, s| g.call_load_state(s, state),
            |error| CallError::Rejected { call: "load-state", error },
        )
    }
}
