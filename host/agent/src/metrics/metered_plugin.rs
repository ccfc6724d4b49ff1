//! A [`Plugin`] in front of any other that times every call by operation, counts the
//! status updates it is handed (and the new versions among them) and the calls that
//! fault, and starts the propagation clock of a pod when a call caches a new status
//! version for it. In front of a [`SupervisedPlugin`] it also counts the instances the
//! supervisor restored. The plugin itself stays free of metrics (and of any way to
//! fake them). Everything is recorded through the node's [`MetricsScope`]: with its
//! group and logic labels in a fleet, without labels for a single agent.
//!
//! The clock starts when the call that set the status *began*: that is when the caller
//! handed the change over, so the latency covers the whole way to the API server.
//! For `set-pod-status` and `terminate-pod` the pod UID is read from the pod JSON the
//! caller passes (only `metadata.uid` is kept from the parse); the readiness and startup
//! setters get it as an argument.

use std::sync::Arc;
use std::time::Instant;

use crate::metrics::{Metrics, MetricsScope};
use podstatus_backends::pod_identity::uid_in_json;
use podstatus_runtime::bindings::{Contract, UpdateOutcome};
use podstatus_runtime::{Call, CallError, Plugin, Reply, Result, SupervisedPlugin, World};

/// Times calls into `inner` and tells [`Metrics::propagation`] about new status versions.
pub struct MeteredPlugin<P: Plugin + ?Sized = dyn Plugin> {
    inner: Box<P>,
    scope: Arc<MetricsScope>,
    /// How many instances `inner` has restored so far (0 for a plugin without a
    /// supervisor), read after a fault.
    recoveries: fn(&P) -> u64,
    /// `recoveries` when last read: what is new since is counted.
    recoveries_seen: u64,
}

impl MeteredPlugin {
    /// Meters `inner` into `metrics`, without labels.
    pub fn new(inner: Box<dyn Plugin>, metrics: Arc<Metrics>) -> Self {
        Self::scoped(inner, MetricsScope::unlabelled(metrics))
    }

    /// Meters `inner` into `scope` (a fleet node's labels).
    pub fn scoped(inner: Box<dyn Plugin>, scope: Arc<MetricsScope>) -> Self {
        MeteredPlugin { inner, scope, recoveries: |_| 0, recoveries_seen: 0 }
    }

    /// The plugin behind the meter.
    pub fn into_inner(self) -> Box<dyn Plugin> {
        self.inner
    }
}

impl MeteredPlugin<SupervisedPlugin> {
    /// Meters a supervised plugin into `scope`, its recoveries included.
    pub fn supervised(inner: SupervisedPlugin, scope: Arc<MetricsScope>) -> Self {
        let recoveries_seen = inner.stats().recoveries;
        MeteredPlugin { inner: Box::new(inner), scope, recoveries: |p| p.stats().recoveries, recoveries_seen }
    }
}

impl<P: Plugin + ?Sized> MeteredPlugin<P> {
    /// A status update of `uid` handed to the plugin at `started`: counted, and its
    /// clock started if the outcome cached a new version.
    fn note(&self, new_version: bool, uid: Option<&str>, started: Instant) {
        self.scope.status_update(new_version);
        if let (true, Some(uid)) = (new_version, uid) {
            self.scope.status_set(uid, started);
        }
    }
}

impl<P: Plugin + ?Sized> Plugin for MeteredPlugin<P> {
    fn call(&mut self, call: Call<'_>) -> Result<Reply> {
        let started = Instant::now();
        let result = self.inner.call(call);
        self.scope.plugin_call(call.metric_name(), started.elapsed());
        if let Err(CallError::Fault { kind, .. }) = &result {
            self.scope.plugin_fault(kind.as_str());
            // A supervisor restores the instance within the faulting call.
            let recoveries = (self.recoveries)(&self.inner);
            if recoveries > self.recoveries_seen {
                self.scope.plugin_recovered(recoveries - self.recoveries_seen);
                self.recoveries_seen = recoveries;
            }
        }
        if call.updates_status() {
            let new_version = matches!(result, Ok(Reply::Update(UpdateOutcome::Queued | UpdateOutcome::QueueFull)));
            // The UID is parsed from the pod only for a new version: the common
            // unchanged update costs no parse. A resize condition makes no version:
            // no propagation clock starts.
            let parsed = match (new_version, call.pod_uid(), call.pod_json()) {
                (true, None, Some(pod)) => uid_in_json(pod),
                _ => None,
            };
            self.note(new_version, call.pod_uid().or(parsed.as_deref()), started);
        }
        if let (Call::RemoveOrphanedStatuses { keep }, Ok(_)) = (call, &result) {
            // Their statuses are gone from the plugin: nothing of theirs will be written.
            self.scope.retain_clocks(keep);
        }
        result
    }

    fn observe(&mut self, view: std::sync::Arc<podstatus_backends::HostView>) {
        self.inner.observe(view);
    }

    fn handed(&self) -> Option<std::sync::Arc<podstatus_runtime::HandedPods>> {
        self.inner.handed()
    }

    fn carry_handed(&mut self, record: std::sync::Arc<podstatus_runtime::HandedPods>) {
        self.inner.carry_handed(record);
    }

    fn world(&self) -> &World {
        self.inner.world()
    }

    fn stop_following(&mut self) {
        self.inner.stop_following();
    }

    fn contract(&self) -> Contract {
        self.inner.contract()
    }

    fn memory(&self) -> podstatus_runtime::PluginMemory {
        self.inner.memory()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::MeteredApiServer;
    use k8s_openapi::api::core::v1::Pod;
    use podstatus_backends::FixedDeletionSafety;
    use podstatus_backends::PodManager;
    use podstatus_backends::SyncQueue;
    use podstatus_backends::SystemClock;
    use podstatus_backends::testing::pod;
    use podstatus_backends::{ApiServer, MemoryApiServer};
    use podstatus_plugins::{LogicVersion, NativePlugin};
    use podstatus_runtime::bindings::SyncOutcome;
    use podstatus_runtime::{PluginExt, World};

    /// A native plugin over a memory world whose API server is metered.
    fn metered_world(pods: &[Pod]) -> (MeteredPlugin, Arc<Metrics>, Arc<SyncQueue>) {
        let memory = Arc::new(MemoryApiServer::new());
        let pod_manager = Arc::new(PodManager::new());
        for pod in pods {
            memory.create_pod(pod.clone()).expect("create");
            pod_manager.add_pod(pod.clone());
        }
        let metrics = Arc::new(Metrics::new());
        let queue = Arc::new(SyncQueue::new(16));
        metrics.add_queue(Arc::clone(&queue));
        let api: Arc<dyn ApiServer> =
            Arc::new(MeteredApiServer::new(memory, Arc::clone(&metrics)).with_pod_manager(Arc::clone(&pod_manager)));
        let world = World {
            api_server: api,
            pod_manager,
            deletion_safety: Arc::new(FixedDeletionSafety::new(false)),
            clock: Arc::new(SystemClock),
            queue: Arc::clone(&queue),
        };
        (MeteredPlugin::new(Box::new(NativePlugin::new(world, LogicVersion::V1)), Arc::clone(&metrics)), metrics, queue)
    }

    fn running() -> String {
        serde_json::json!({"phase": "Running"}).to_string()
    }

    #[test]
    fn a_status_set_then_synced_is_measured_once() {
        let web = pod("web", "u1").spec().build();
        let (mut plugin, metrics, queue) = metered_world(std::slice::from_ref(&web));
        let pod_json = serde_json::to_string(&web).expect("json");
        assert_eq!(plugin.set_pod_status(&pod_json, &running()).expect("set"), UpdateOutcome::Queued);
        assert_eq!(plugin.set_pod_status(&pod_json, &running()).expect("set"), UpdateOutcome::Unchanged);
        assert_eq!(metrics.propagation().pending(), 1);
        let request = queue.pop().expect("a sync request");
        assert_eq!(plugin.sync_pod(&request).expect("sync"), SyncOutcome::Written);
        assert_eq!(metrics.propagation().pending(), 0);
        let summary = metrics.propagation().snapshot();
        assert_eq!(summary.count, 1);
        assert_eq!(metrics.status_sync_count(), 1);
        assert_eq!(metrics.api_calls("get", "Success"), 1);
        assert_eq!(metrics.api_calls("update_status", "Success"), 1);
        let text = metrics.render();
        for line in [
            "podstatus_plugin_call_duration_seconds_count{operation=\"set_pod_status\"} 2",
            "podstatus_plugin_call_duration_seconds_count{operation=\"sync_pod\"} 1",
            "kubelet_pod_status_sync_duration_seconds_count 1",
            "podstatus_sync_queue_depth 0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn refused_and_unknown_pods_start_no_clock() {
        let (mut plugin, metrics, _queue) = metered_world(&[]);
        assert!(plugin.set_pod_status("not json", &running()).is_err());
        assert!(plugin.set_pod_status(r#"{"metadata":{"name":"a","namespace":"ns"}}"#, &running()).is_err());
        assert_eq!(plugin.set_container_readiness("x1", "docker://c", true).expect("call"), UpdateOutcome::PodNotFound);
        assert_eq!(metrics.propagation().pending(), 0);
        assert!(
            metrics.render().contains("podstatus_plugin_call_duration_seconds_count{operation=\"set_pod_status\"} 2")
        );
    }

    #[test]
    fn orphans_stop_pending() {
        let web = pod("web", "u1").spec().build();
        let (mut plugin, metrics, _queue) = metered_world(std::slice::from_ref(&web));
        let pod_json = serde_json::to_string(&web).expect("json");
        plugin.set_pod_status(&pod_json, &running()).expect("set");
        assert_eq!(metrics.propagation().pending(), 1);
        plugin.remove_orphaned_statuses(&[]).expect("remove");
        assert_eq!(metrics.propagation().pending(), 0);
    }
}
