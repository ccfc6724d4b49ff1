//! An [`ApiServer`] in front of any other that counts calls by verb and outcome and
//! closes the propagation clock when a status write succeeds, so metrics need nothing
//! from the plugin or from the backend behind it.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;

use crate::metrics::{Metrics, MetricsScope, OUTCOME_OK};
use podstatus_backends::PodManager;
use podstatus_backends::pod_identity::uid_of;
use podstatus_backends::{ApiServer, CompactPod, DeleteOptions, Result, StatusPatch, StatusUpdate};

/// The `verb` label of a GET of a pod.
pub const VERB_GET: &str = "get";
/// The `verb` label of a PUT of a pod's status.
pub const VERB_UPDATE_STATUS: &str = "update_status";
/// The `verb` label of a PATCH of a pod's status.
pub const VERB_PATCH_STATUS: &str = "patch_status";
/// The `verb` label of a DELETE of a pod.
pub const VERB_DELETE: &str = "delete";

/// Counts every call into [`Metrics`] (outcome `Success` or the [`podstatus_backends::ApiError`]'s
/// Kubernetes reason) and, for each successful status write, observes
/// the time since that pod's first unwritten status change; through the node's
/// [`MetricsScope`] (its group and logic labels in a fleet).
pub struct MeteredApiServer {
    inner: Arc<dyn ApiServer>,
    scope: Arc<MetricsScope>,
    /// Translates a mirror pod's UID (what a write of a static pod's status returns) to
    /// its static pod's, the UID the plugin's callers set statuses under.
    pod_manager: Option<Arc<PodManager>>,
}

impl MeteredApiServer {
    /// Meters `inner` into `metrics`. Without [`MeteredApiServer::with_pod_manager`],
    /// writes of static pods' statuses (which land on their mirror pods) are counted but
    /// not timed.
    pub fn new(inner: Arc<dyn ApiServer>, metrics: Arc<Metrics>) -> Self {
        Self::scoped(inner, MetricsScope::unlabelled(metrics))
    }

    /// Meters `inner` into `scope` (a fleet node's labels).
    pub fn scoped(inner: Arc<dyn ApiServer>, scope: Arc<MetricsScope>) -> Self {
        MeteredApiServer { inner, scope, pod_manager: None }
    }

    /// Times static pods too: the written mirror pod's UID is translated through
    /// `pod_manager`.
    pub fn with_pod_manager(mut self, pod_manager: Arc<PodManager>) -> Self {
        self.pod_manager = Some(pod_manager);
        self
    }

    fn count<T>(&self, verb: &str, result: &Result<T>) {
        let outcome = match result {
            Ok(_) => OUTCOME_OK,
            Err(error) => error.reason(),
        };
        self.scope.api_call(verb, outcome);
    }

    /// A status write of the pod `uid` (what the write answered) succeeded: the
    /// propagation clock of the pod stops.
    fn written(&self, uid: &str) {
        let uid = match &self.pod_manager {
            Some(pod_manager) => pod_manager.translate_pod_uid(uid),
            None => uid.to_owned(),
        };
        self.scope.status_written(&uid, Instant::now());
    }

    /// Counts a status write's `result` under `verb` and, when it succeeded, stops the
    /// clock of the pod `uid` reads off its answer.
    fn status_write<T>(&self, verb: &str, result: Result<T>, uid: fn(&T) -> &str) -> Result<T> {
        self.count(verb, &result);
        if let Ok(answer) = &result {
            self.written(uid(answer));
        }
        result
    }
}

impl ApiServer for MeteredApiServer {
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
        let result = self.inner.get_pod(namespace, name);
        self.count(VERB_GET, &result);
        result
    }

    fn judge_status_write(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        of_request: bool,
        status: &dyn Fn() -> Option<String>,
    ) -> Option<Result<(), String>> {
        self.inner.judge_status_write(namespace, name, uid, of_request, status)
    }

    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
        self.status_write(VERB_UPDATE_STATUS, self.inner.update_pod_status(update), |pod| uid_of(pod))
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
        self.status_write(VERB_PATCH_STATUS, self.inner.patch_pod_status(patch), |pod| uid_of(pod))
    }

    fn get_pod_compact(&self, namespace: &str, name: &str) -> Result<Arc<CompactPod>> {
        let result = self.inner.get_pod_compact(namespace, name);
        self.count(VERB_GET, &result);
        result
    }

    fn update_pod_status_compact(&self, update: StatusUpdate) -> Result<Arc<CompactPod>> {
        self.status_write(VERB_UPDATE_STATUS, self.inner.update_pod_status_compact(update), |pod| {
            pod.uid().unwrap_or_default()
        })
    }

    fn patch_pod_status_compact(&self, patch: StatusPatch) -> Result<Arc<CompactPod>> {
        self.status_write(VERB_PATCH_STATUS, self.inner.patch_pod_status_compact(patch), |pod| {
            pod.uid().unwrap_or_default()
        })
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
        let result = self.inner.delete_pod(namespace, name, options);
        self.count(VERB_DELETE, &result);
        if let Ok(pod) = &result {
            // The pod is gone: a change still pending for it will never be written.
            self.scope.forget_clock(uid_of(pod));
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_backends::MemoryApiServer;
    use podstatus_backends::pod_identity::{CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION};
    use podstatus_backends::testing::pod;

    fn update(name: &str) -> StatusUpdate {
        StatusUpdate { namespace: "ns".into(), name: name.into(), ..Default::default() }
    }

    /// A store holding `ns/web` (u1), its metrics, and the metered server over both.
    fn metered_web() -> (Arc<MemoryApiServer>, Arc<Metrics>, MeteredApiServer) {
        let memory = Arc::new(MemoryApiServer::new());
        memory.create_pod(pod("web", "u1").build()).expect("create");
        let metrics = Arc::new(Metrics::new());
        let api = MeteredApiServer::new(memory.clone(), Arc::clone(&metrics));
        (memory, metrics, api)
    }

    #[test]
    fn counts_calls_by_verb_and_outcome() {
        let (_, metrics, api) = metered_web();
        api.get_pod("ns", "web").expect("get");
        api.get_pod("ns", "nope").expect_err("absent");
        api.update_pod_status(update("web")).expect("update");
        let conflict = StatusUpdate { uid_precondition: Some("other".into()), ..update("web") };
        api.update_pod_status(conflict).expect_err("conflict");
        api.delete_pod("ns", "web", &DeleteOptions::default()).expect("delete");
        assert_eq!(
            metrics.api_call_counts(),
            [
                ("delete".into(), "Success".into(), 1),
                ("get".into(), "NotFound".into(), 1),
                ("get".into(), "Success".into(), 1),
                ("update_status".into(), "Conflict".into(), 1),
                ("update_status".into(), "Success".into(), 1),
            ]
        );
    }

    #[test]
    fn a_write_closes_the_clock_of_its_pod_and_mirrors_translate() {
        let (memory, metrics, api) = metered_web();
        memory
            .create_pod(pod("etcd", "m1").annotations(&[(CONFIG_MIRROR_ANNOTATION, "h")]).build())
            .expect("create mirror");
        let pod_manager = Arc::new(PodManager::new());
        pod_manager.add_pod(pod("etcd", "s1").annotations(&[(CONFIG_SOURCE_ANNOTATION, "file")]).build());
        pod_manager.add_pod(pod("etcd", "m1").annotations(&[(CONFIG_MIRROR_ANNOTATION, "h")]).build());
        let api = api.with_pod_manager(pod_manager);
        let tracker = metrics.propagation();
        for uid in ["u1", "s1", "gone"] {
            api.scope.status_set(uid, Instant::now());
        }
        api.update_pod_status(update("web")).expect("update");
        api.update_pod_status(update("etcd")).expect("update mirror");
        assert_eq!(tracker.pending(), 1, "only the pod never written is pending");
        assert_eq!(metrics.status_sync_count(), 2);
        assert_eq!(tracker.snapshot().count, 2);
    }

    #[test]
    fn a_deleted_pod_stops_pending() {
        let (_, metrics, api) = metered_web();
        api.scope.status_set("u1", Instant::now());
        api.delete_pod("ns", "web", &DeleteOptions::default()).expect("delete");
        assert_eq!(metrics.propagation().pending(), 0);
        assert_eq!(metrics.status_sync_count(), 0);
    }
}
