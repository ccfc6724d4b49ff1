//! The plugin's reach, enforced by the host: a [`GuardedApiServer`] stands between the
//! plugin's `api-server` imports and the real server and refuses, with
//! [`ApiError::Forbidden`], every call that would touch a pod that is not this node's.
//! The plugin is untrusted: what it may do must not depend on it behaving.
//!
//! The rules (issue "What a plugin may touch"):
//!
//! - A pod is **the node's** when the node's [`PodManager`] holds a pod of that
//!   namespace and name (static, mirror or regular), or, when a node name is configured,
//!   when the API server's pod of that namespace and name is bound to the node
//!   (`spec.nodeName` is the node's name).
//! - `get` and the status writes (update and patch) reach only the node's pods. A
//!   status write changes only `status`: a [`StatusUpdate`] carries nothing else and
//!   every backend replaces only `status`. A [`StatusPatch`] is a JSON patch of the
//!   whole pod, and a real API server's `pods/status` endpoint does take label and
//!   annotation changes, so the guard forwards only a patch that holds nothing but
//!   `status` and `metadata.uid` (the UID precondition, as the kubelet sends it).
//! - A `delete` reaches only the node's pods and must carry a UID precondition naming a
//!   pod the node owns: the UID of a pod in the pod manager, or the UID of the pod being
//!   deleted when the API server has it bound to the node. A delete without one (an
//!   empty precondition is none, as in Kubernetes) is refused.
//!
//! Every refusal is logged (a `tracing` warning with target [`TARGET`]) and counted per
//! verb ([`GuardedApiServer::refusals`]), for metrics.
//!
//! # The guard's own reads
//!
//! Whether a pod is bound to the node is a question for the API server. The guard asks
//! it through its *lookup*, an [`ApiServer`] whose [`ApiServer::get_pod`] it calls:
//! by default the inner server itself. These reads are the guard's, not the plugin's:
//! they are never refused nor counted as refusals. When the inner server records the
//! plugin's calls or injects failures into them (the replay's `RecordingApiServer`),
//! give the guard the store behind it with [`GuardedApiServer::with_lookup`], so that
//! its reads are neither recorded nor failed on the plugin's behalf. A lookup that
//! fails for a reason other than "not found" is returned as is (the call is neither
//! forwarded nor counted as a refusal): the guard cannot tell whether the pod is the
//! node's, and the plugin sees the server's trouble, which it retries, not a refusal.
//!
//! Only the pod manager's pods are known without asking the API server, so with no
//! node name configured no lookup is ever made.
//!
//! A status write allowed because the pod is bound to the node is pinned to the pod
//! that was checked: when it carries no UID precondition (for a patch: neither beside
//! it nor as its `metadata.uid`), the guard adds the checked pod's UID, so a pod of
//! another node recreated under the same name between the check and the write fails
//! the precondition instead of being written.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::Pod;

use serde_json::Value;

use super::{ApiError, ApiServer, DeleteOptions, Result, StatusPatch, StatusUpdate};
use crate::pod_identity::identity;
use crate::pod_manager::PodManager;

/// The `tracing` target of refusals, so they can be filtered apart.
pub const TARGET: &str = "podstatus::reach";

/// Why a pod is the node's.
enum Owner {
    /// The pod manager holds a pod of this namespace and name.
    PodManager,
    /// The API server's pod of this namespace and name is bound to the node; this is
    /// the pod as the lookup read it.
    Bound(Arc<Pod>),
}

/// The calls the guard checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Get,
    UpdateStatus,
    PatchStatus,
    Delete,
}

impl Verb {
    /// How refusal messages name the call.
    fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::UpdateStatus => "status update",
            Verb::PatchStatus => "status patch",
            Verb::Delete => "delete",
        }
    }

    fn index(self) -> usize {
        match self {
            Verb::Get => 0,
            Verb::UpdateStatus => 1,
            Verb::PatchStatus => 2,
            Verb::Delete => 3,
        }
    }
}

/// How many calls the guard refused, per verb (a snapshot; see
/// [`GuardedApiServer::refusals`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Refused `get-pod` calls.
    pub get: u64,
    /// Refused `update-pod-status` calls.
    pub update_status: u64,
    /// Refused `patch-pod-status` calls.
    pub patch_status: u64,
    /// Refused `delete-pod` calls.
    pub delete: u64,
}

impl Refusals {
    /// All refusals, whatever the verb.
    pub fn total(&self) -> u64 {
        self.get + self.update_status + self.patch_status + self.delete
    }
}

/// An [`ApiServer`] that forwards only the calls the plugin may make (see the module
/// documentation) and refuses the others with [`ApiError::Forbidden`]. Thread-safe;
/// every method takes `&self`.
pub struct GuardedApiServer {
    /// Where allowed calls go.
    inner: Arc<dyn ApiServer>,
    /// The node's pods.
    pod_manager: Arc<PodManager>,
    /// The node's name; `None`: only the pod manager's pods are the node's.
    node_name: Option<String>,
    /// Where the guard reads pods to check their binding (the inner server unless
    /// [`GuardedApiServer::with_lookup`] says otherwise).
    lookup: Arc<dyn ApiServer>,
    /// Refusals, indexed by [`Verb::index`].
    refusals: [AtomicU64; 4],
}

impl GuardedApiServer {
    /// A guard in front of `inner` for the node whose pods `pod_manager` holds. With a
    /// `node_name`, pods the API server has bound to that node are the node's too; the
    /// guard then reads them through `inner`'s [`ApiServer::get_pod`] (see
    /// [`GuardedApiServer::with_lookup`]).
    pub fn new(inner: Arc<dyn ApiServer>, pod_manager: Arc<PodManager>, node_name: Option<String>) -> Self {
        GuardedApiServer {
            lookup: Arc::clone(&inner),
            inner,
            pod_manager,
            node_name: node_name.filter(|name| !name.is_empty()),
            refusals: Default::default(),
        }
    }

    /// Reads pods for the binding check through `lookup` instead of the inner server:
    /// for an inner server whose `get_pod` must see only the plugin's calls (one that
    /// records them or injects failures), pass the store behind it.
    #[must_use]
    pub fn with_lookup(mut self, lookup: Arc<dyn ApiServer>) -> Self {
        self.lookup = lookup;
        self
    }

    /// The node's name, if one is configured.
    pub fn node_name(&self) -> Option<&str> {
        self.node_name.as_deref()
    }

    /// How many calls were refused so far, per verb.
    pub fn refusals(&self) -> Refusals {
        let count = |verb: Verb| self.refusals[verb.index()].load(Ordering::Relaxed);
        Refusals {
            get: count(Verb::Get),
            update_status: count(Verb::UpdateStatus),
            patch_status: count(Verb::PatchStatus),
            delete: count(Verb::Delete),
        }
    }

    /// Why the pod `namespace/name` is the node's, or `None` when it is not. `Err` only
    /// when the lookup failed for another reason than the pod being absent.
    fn owner(&self, namespace: &str, name: &str) -> Result<Option<Owner>> {
        if self.pod_manager.pods().iter().any(|pod| identity(pod) == (namespace, name)) {
            return Ok(Some(Owner::PodManager));
        }
        Ok(self.bound_pod(namespace, name)?.map(Owner::Bound))
    }

    /// The API server's pod `namespace/name` if it is bound to the node (never asked
    /// when no node name is configured).
    fn bound_pod(&self, namespace: &str, name: &str) -> Result<Option<Arc<Pod>>> {
        let Some(node_name) = self.node_name.as_deref() else {
            return Ok(None);
        };
        match self.lookup.get_pod(namespace, name) {
            Ok(pod) => {
                let bound = pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()) == Some(node_name);
                Ok(bound.then_some(pod))
            }
            Err(ApiError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `uid`, the UID precondition of a delete of `namespace/name`, names a pod
    /// the node owns: a pod-manager pod, or the pod being deleted when it is bound to
    /// the node. (Only the named pod is asked about: a precondition naming another pod
    /// could only fail.)
    fn owns_uid(&self, namespace: &str, name: &str, uid: &str, owner: &Owner) -> Result<bool> {
        if self.pod_manager.get_any(uid).is_some() {
            return Ok(true);
        }
        let bound = match owner {
            Owner::Bound(pod) => Some(Arc::clone(pod)),
            // The name is the pod manager's; the API server's pod of that name may
            // still be a newer one bound to the node.
            Owner::PodManager => self.bound_pod(namespace, name)?,
        };
        Ok(bound.is_some_and(|pod| pod.metadata.uid.as_deref() == Some(uid)))
    }

    /// Logs and counts a refusal; the error to return.
    fn refuse(&self, verb: Verb, namespace: &str, name: &str, why: fmt::Arguments<'_>) -> ApiError {
        self.refusals[verb.index()].fetch_add(1, Ordering::Relaxed);
        let message = format!("{} of pod {namespace}/{name} refused: {why}", verb.as_str());
        tracing::warn!(target: TARGET, verb = verb.as_str(), namespace, name, "{message}");
        ApiError::Forbidden { message }
    }

    /// The refusal of a pod that is not the node's.
    fn not_ours(&self, verb: Verb, namespace: &str, name: &str) -> ApiError {
        self.refuse(verb, namespace, name, format_args!("not a pod of this node"))
    }
}

impl ApiServer for GuardedApiServer {
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
        match self.owner(namespace, name)? {
            Some(_) => self.inner.get_pod(namespace, name),
            None => Err(self.not_ours(Verb::Get, namespace, name)),
        }
    }

    fn update_pod_status(&self, mut update: StatusUpdate) -> Result<Arc<Pod>> {
        match self.owner(&update.namespace, &update.name)? {
            None => return Err(self.not_ours(Verb::UpdateStatus, &update.namespace, &update.name)),
            Some(Owner::PodManager) => {}
            Some(Owner::Bound(pod)) => {
                // Pinned to the pod checked (see the module documentation).
                if update.uid_precondition.as_deref().is_none_or(str::is_empty) {
                    update.uid_precondition.clone_from(&pod.metadata.uid);
                }
            }
        }
        self.inner.update_pod_status(update)
    }

    fn patch_pod_status(&self, mut patch: StatusPatch) -> Result<Arc<Pod>> {
        let Some(owner) = self.owner(&patch.namespace, &patch.name)? else {
            return Err(self.not_ours(Verb::PatchStatus, &patch.namespace, &patch.name));
        };
        if let Some(field) = beyond_status(&patch.patch) {
            let why = format_args!("the patch changes {field}, not only status");
            return Err(self.refuse(Verb::PatchStatus, &patch.namespace, &patch.name, why));
        }
        if let Owner::Bound(pod) = owner {
            // Pinned to the pod checked (see the module documentation).
            let inside = patch.patch.pointer("/metadata/uid").and_then(Value::as_str).filter(|uid| !uid.is_empty());
            if patch.uid_precondition.as_deref().is_none_or(str::is_empty) && inside.is_none() {
                patch.uid_precondition.clone_from(&pod.metadata.uid);
            }
        }
        self.inner.patch_pod_status(patch)
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
        let Some(owner) = self.owner(namespace, name)? else {
            return Err(self.not_ours(Verb::Delete, namespace, name));
        };
        let Some(uid) = options.uid_precondition.as_deref().filter(|uid| !uid.is_empty()) else {
            return Err(self.refuse(Verb::Delete, namespace, name, format_args!("no UID precondition")));
        };
        if !self.owns_uid(namespace, name, uid, &owner)? {
            let why = format_args!("UID precondition {uid} is not a pod of this node");
            return Err(self.refuse(Verb::Delete, namespace, name, why));
        }
        self.inner.delete_pod(namespace, name, options)
    }
}

/// The first field of a pod patch beyond `status` and `metadata.uid` (directives such
/// as `$patch` included), as a path; `None` when the patch is a status patch.
fn beyond_status(patch: &Value) -> Option<String> {
    let Value::Object(fields) = patch else {
        return Some("the whole pod".into());
    };
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("status", _) => {}
            ("metadata", Value::Object(metadata)) => {
                if let Some(other) = metadata.keys().find(|key| *key != "uid") {
                    return Some(format!("metadata.{other}"));
                }
            }
            _ => return Some(key.clone()),
        }
    }
    None
}

impl fmt::Debug for GuardedApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedApiServer")
            .field("node_name", &self.node_name)
            .field("refusals", &self.refusals())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api_server::MemoryApiServer;
    use crate::pod_identity::{CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION};
    use crate::testing;
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;
    use std::sync::Mutex;

    const NODE: &str = "node-1";

    fn pod(namespace: &str, name: &str, uid: &str, node: &str) -> Pod {
        testing::pod(name, uid).namespace(namespace).node(node).build()
    }

    fn annotated(mut pod: Pod, annotations: &[(&str, &str)]) -> Pod {
        pod.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        pod
    }

    fn phase(phase: &str) -> PodStatus {
        PodStatus { phase: Some(phase.into()), ..Default::default() }
    }

    fn update(namespace: &str, name: &str, uid: Option<&str>) -> StatusUpdate {
        StatusUpdate {
            namespace: namespace.into(),
            name: name.into(),
            uid_precondition: uid.map(Into::into),
            resource_version_precondition: None,
            status: phase("Running"),
        }
    }

    fn patch(namespace: &str, name: &str, uid: Option<&str>, body: Value) -> StatusPatch {
        StatusPatch {
            namespace: namespace.into(),
            name: name.into(),
            uid_precondition: uid.map(Into::into),
            patch: body,
        }
    }

    fn precondition(uid: Option<&str>) -> DeleteOptions {
        DeleteOptions { uid_precondition: uid.map(Into::into), grace_period_seconds: Some(0), ..Default::default() }
    }

    fn forbidden<T: fmt::Debug>(result: Result<T>) -> String {
        match result {
            Err(ApiError::Forbidden { message }) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// The node's world: `ns/a` (`ua`) in the pod manager, the static pod `ns/web`
    /// (`s1`) with its mirror pod (`m1`), `ns/b` (`ub`) bound to the node but not (yet)
    /// in the pod manager, and `kube-system/etcd` (`ue`) of another node.
    struct Node {
        store: Arc<MemoryApiServer>,
        pod_manager: Arc<PodManager>,
    }

    impl Node {
        fn new() -> Node {
            let store = Arc::new(MemoryApiServer::new());
            let pod_manager = Arc::new(PodManager::new());
            let static_pod = annotated(pod("ns", "web", "s1", NODE), &[(CONFIG_SOURCE_ANNOTATION, "file")]);
            let mirror_pod = annotated(
                pod("ns", "web", "m1", NODE),
                &[(CONFIG_SOURCE_ANNOTATION, "file"), (CONFIG_MIRROR_ANNOTATION, "hash")],
            );
            for pod in [pod("ns", "a", "ua", NODE), static_pod, mirror_pod.clone()] {
                pod_manager.add_pod(pod);
            }
            for pod in [pod("ns", "a", "ua", NODE), mirror_pod, pod("ns", "b", "ub", NODE)] {
                store.create_pod(pod).expect("create");
            }
            store.create_pod(pod("kube-system", "etcd", "ue", "node-2")).expect("create");
            Node { store, pod_manager }
        }

        fn guard(&self, node_name: Option<&str>) -> GuardedApiServer {
            GuardedApiServer::new(self.store.clone(), Arc::clone(&self.pod_manager), node_name.map(Into::into))
        }
    }

    #[test]
    fn get_reaches_only_the_nodes_pods() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let message = forbidden(guard.get_pod("kube-system", "etcd"));
        assert_eq!(message, "get of pod kube-system/etcd refused: not a pod of this node");
        for (namespace, name) in [("ns", "a"), ("ns", "web"), ("ns", "b")] {
            assert!(guard.get_pod(namespace, name).is_ok(), "{namespace}/{name}");
        }
        // A name in no one's hands is refused, not reported missing: the plugin learns
        // nothing of pods that are not the node's.
        forbidden(guard.get_pod("ns", "nowhere"));
        // A pod-manager pod gone from the API server is the API server's answer.
        node.store.remove_pod("ns", "a").expect("remove");
        assert_eq!(guard.get_pod("ns", "a").map_err(|e| e.reason()), Err("NotFound"));
        // Without a node name only the pod manager's pods are the node's.
        let guard = node.guard(None);
        forbidden(guard.get_pod("ns", "b"));
        assert!(guard.get_pod("ns", "web").is_ok());
        assert_eq!(guard.refusals(), Refusals { get: 1, ..Refusals::default() });
    }

    #[test]
    fn status_writes_reach_only_the_nodes_pods() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let before = node.store.get_pod("kube-system", "etcd").expect("get");
        let message = forbidden(guard.update_pod_status(update("kube-system", "etcd", Some("ue"))));
        assert_eq!(message, "status update of pod kube-system/etcd refused: not a pod of this node");
        assert_eq!(node.store.get_pod("kube-system", "etcd").expect("get"), before, "untouched");
        for (namespace, name, uid) in [("ns", "a", "ua"), ("ns", "web", "m1"), ("ns", "b", "ub")] {
            let written = guard.update_pod_status(update(namespace, name, Some(uid))).expect("owned");
            assert_eq!(written.status, Some(phase("Running")), "{namespace}/{name}");
        }
        forbidden(node.guard(None).update_pod_status(update("ns", "b", None)));
    }

    #[test]
    fn a_status_write_through_the_guard_changes_only_status() {
        let node = Node::new();
        let mut full = testing::pod("full", "uf")
            .node(NODE)
            .labels(&[("app", "x")])
            .annotations(&[("note", "y")])
            .container("c")
            .build();
        full.metadata.generate_name = Some("full-".into());
        full.status = Some(phase("Pending"));
        node.pod_manager.add_pod(full.clone());
        let before = node.store.create_pod(full).expect("create");
        let written = node.guard(Some(NODE)).update_pod_status(update("ns", "full", Some("uf"))).expect("write");
        assert_eq!(written.spec, before.spec);
        let strip = |pod: &Pod| ObjectMeta { resource_version: None, ..pod.metadata.clone() };
        assert_eq!(strip(&written), strip(&before), "metadata is kept, but for the resourceVersion");
        assert_ne!(written.metadata.resource_version, before.metadata.resource_version);
        assert_eq!(written.status, Some(phase("Running")));
        let body = json!({"metadata": {"uid": "uf"}, "status": {"phase": "Succeeded"}});
        let patched = node.guard(Some(NODE)).patch_pod_status(patch("ns", "full", None, body)).expect("patch");
        assert_eq!((patched.spec.clone(), strip(&patched)), (before.spec.clone(), strip(&before)));
        assert_eq!(patched.status, Some(phase("Succeeded")));
    }

    #[test]
    fn status_patches_reach_only_the_nodes_pods() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let before = node.store.get_pod("kube-system", "etcd").expect("get");
        let body = json!({"metadata": {"uid": "ue"}, "status": {"phase": "Failed"}});
        let message = forbidden(guard.patch_pod_status(patch("kube-system", "etcd", None, body)));
        assert_eq!(message, "status patch of pod kube-system/etcd refused: not a pod of this node");
        assert_eq!(node.store.get_pod("kube-system", "etcd").expect("get"), before, "untouched");
        for (namespace, name, uid) in [("ns", "a", "ua"), ("ns", "web", "m1"), ("ns", "b", "ub")] {
            let body = json!({"metadata": {"uid": uid}, "status": {"phase": "Running"}});
            let written = guard.patch_pod_status(patch(namespace, name, Some(uid), body)).expect("owned");
            assert_eq!(written.status, Some(phase("Running")), "{namespace}/{name}");
        }
        assert_eq!(guard.refusals(), Refusals { patch_status: 1, ..Refusals::default() });
    }

    #[test]
    fn a_status_patch_that_reaches_beyond_status_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let before = node.store.get_pod("ns", "a").expect("get");
        let cases = [
            (json!({"metadata": {"uid": "ua", "labels": {"x": "y"}}, "status": {}}), "metadata.labels"),
            (json!({"metadata": {"annotations": {"x": "y"}}}), "metadata.annotations"),
            (json!({"spec": {"nodeName": "node-2"}, "status": {}}), "spec"),
            (json!({"$patch": "replace", "status": {}}), "$patch"),
            (json!({"metadata": null, "status": {}}), "metadata"),
            (json!(["status"]), "the whole pod"),
        ];
        for (body, field) in cases {
            let message = forbidden(guard.patch_pod_status(patch("ns", "a", Some("ua"), body)));
            assert_eq!(
                message,
                format!("status patch of pod ns/a refused: the patch changes {field}, not only status")
            );
        }
        assert_eq!(node.store.get_pod("ns", "a").expect("get"), before, "untouched");
        assert_eq!(guard.refusals().patch_status, 6);
    }

    #[test]
    fn deleting_a_pod_of_another_node_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let message = forbidden(guard.delete_pod("kube-system", "etcd", &precondition(Some("ue"))));
        assert_eq!(message, "delete of pod kube-system/etcd refused: not a pod of this node");
        assert!(node.store.get_pod("kube-system", "etcd").is_ok(), "still there");
    }

    #[test]
    fn deleting_without_a_uid_precondition_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        for uid in [None, Some("")] {
            let message = forbidden(guard.delete_pod("ns", "a", &precondition(uid)));
            assert_eq!(message, "delete of pod ns/a refused: no UID precondition");
        }
        assert!(node.store.get_pod("ns", "a").is_ok(), "still there");
        assert_eq!(guard.refusals(), Refusals { delete: 2, ..Refusals::default() });
    }

    #[test]
    fn deleting_with_a_uid_precondition_the_node_does_not_own_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        for uid in ["u9", "ue"] {
            let message = forbidden(guard.delete_pod("ns", "a", &precondition(Some(uid))));
            assert_eq!(
                message,
                format!("delete of pod ns/a refused: UID precondition {uid} is not a pod of this node")
            );
        }
        // A node-bound pod's UID is the node's only when the API server has it bound.
        forbidden(node.guard(None).delete_pod("ns", "a", &precondition(Some("ub"))));
        assert!(node.store.get_pod("ns", "a").is_ok(), "still there");
    }

    #[test]
    fn deletes_of_the_nodes_pods_with_their_uid_are_forwarded() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        // A pod-manager UID naming another pod passes the guard; the API server judges it.
        let error = guard.delete_pod("ns", "a", &precondition(Some("s1"))).expect_err("other pod's UID");
        assert_eq!(error.reason(), "Conflict");
        guard.delete_pod("ns", "a", &precondition(Some("ua"))).expect("pod manager's pod");
        guard.delete_pod("ns", "b", &precondition(Some("ub"))).expect("bound to the node");
        // A pod recreated under a pod-manager name and bound to the node: its new UID is
        // the node's although the pod manager does not hold it yet.
        node.store.create_pod(pod("ns", "a", "ua2", NODE)).expect("recreate");
        guard.delete_pod("ns", "a", &precondition(Some("ua2"))).expect("recreated, bound to the node");
        assert_eq!(guard.refusals(), Refusals::default());
    }

    #[test]
    fn refusals_are_counted_per_verb() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let _ = guard.get_pod("kube-system", "etcd");
        let _ = guard.get_pod("kube-system", "etcd");
        let _ = guard.update_pod_status(update("kube-system", "etcd", None));
        let _ = guard.patch_pod_status(patch("ns", "a", None, json!({"spec": {}})));
        let _ = guard.delete_pod("ns", "a", &precondition(None));
        let _ = guard.delete_pod("ns", "a", &precondition(Some("u9")));
        let _ = guard.delete_pod("kube-system", "etcd", &precondition(Some("ue")));
        let refusals = guard.refusals();
        assert_eq!(refusals, Refusals { get: 2, update_status: 1, patch_status: 1, delete: 3 });
        assert_eq!(refusals.total(), 7);
        assert!(format!("{guard:?}").contains("delete: 3"), "{guard:?}");
    }

    /// An inner server that counts the calls it gets, or fails them all.
    struct Spy {
        store: Arc<MemoryApiServer>,
        calls: Mutex<Vec<String>>,
        fail: Option<ApiError>,
    }

    impl Spy {
        fn new(store: Arc<MemoryApiServer>, fail: Option<ApiError>) -> Arc<Spy> {
            Arc::new(Spy { store, calls: Mutex::new(Vec::new()), fail })
        }

        fn calls(&self) -> Vec<String> {
            self.calls.lock().expect("calls").clone()
        }

        fn call<T>(&self, call: String, forward: impl FnOnce() -> Result<T>) -> Result<T> {
            self.calls.lock().expect("calls").push(call);
            match &self.fail {
                Some(error) => Err(error.clone()),
                None => forward(),
            }
        }
    }

    impl ApiServer for Spy {
        fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
            self.call(format!("get {namespace}/{name}"), || self.store.get_pod(namespace, name))
        }

        fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
            let call = format!("update {}/{} uid {:?}", update.namespace, update.name, update.uid_precondition);
            self.call(call, || self.store.update_pod_status(update))
        }

        fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
            let call = format!("patch {}/{} uid {:?}", patch.namespace, patch.name, patch.uid_precondition);
            self.call(call, || self.store.patch_pod_status(patch))
        }

        fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
            self.call(format!("delete {namespace}/{name}"), || self.store.delete_pod(namespace, name, options))
        }
    }

    #[test]
    fn the_guards_lookups_are_not_the_plugins_calls() {
        let node = Node::new();
        let inner = Spy::new(Arc::clone(&node.store), None);
        let guard = GuardedApiServer::new(inner.clone(), Arc::clone(&node.pod_manager), Some(NODE.into()))
            .with_lookup(node.store.clone());
        guard.get_pod("ns", "b").expect("bound");
        forbidden(guard.get_pod("kube-system", "etcd"));
        guard.delete_pod("ns", "b", &precondition(Some("ub"))).expect("bound");
        // Only the calls forwarded reach the inner server: no lookups, no refusals.
        assert_eq!(inner.calls(), ["get ns/b", "delete ns/b"]);
        assert_eq!(guard.node_name(), Some(NODE));
    }

    #[test]
    fn a_failed_lookup_is_the_servers_error_not_a_refusal() {
        let node = Node::new();
        let unavailable = ApiError::Unavailable { message: "down".into() };
        let lookup = Spy::new(Arc::clone(&node.store), Some(unavailable.clone()));
        let guard = node.guard(Some(NODE)).with_lookup(lookup);
        assert_eq!(guard.get_pod("ns", "b"), Err(unavailable.clone()));
        assert_eq!(guard.update_pod_status(update("ns", "b", None)), Err(unavailable));
        // The pod manager's pods need no lookup.
        assert!(guard.get_pod("ns", "a").is_ok());
        assert_eq!(guard.refusals(), Refusals::default());
    }

    #[test]
    fn a_write_allowed_by_the_binding_is_pinned_to_the_pod_checked() {
        // The lookup saw `ns/b` bound to the node; by the time of the write the name
        // holds a pod of another node: the write fails its precondition.
        let node = Node::new();
        let inner = Spy::new(Arc::new(MemoryApiServer::new()), None);
        inner.store.create_pod(pod("ns", "b", "other", "node-2")).expect("create");
        let guard = GuardedApiServer::new(inner.clone(), Arc::clone(&node.pod_manager), Some(NODE.into()))
            .with_lookup(node.store.clone());
        let error = guard.update_pod_status(update("ns", "b", None)).expect_err("pinned");
        assert_eq!(error.reason(), "Conflict");
        let error = guard.patch_pod_status(patch("ns", "b", None, json!({"status": {}}))).expect_err("pinned");
        assert_eq!(error.reason(), "Conflict");
        // A patch carrying its UID inside is pinned by it already.
        let inside = json!({"metadata": {"uid": "ub"}, "status": {}});
        let error = guard.patch_pod_status(patch("ns", "b", None, inside)).expect_err("pinned inside");
        assert_eq!(error.reason(), "Conflict");
        let calls = [r#"update ns/b uid Some("ub")"#, r#"patch ns/b uid Some("ub")"#, "patch ns/b uid None"];
        assert_eq!(inner.calls(), calls);
        assert_eq!(inner.store.get_pod("ns", "b").expect("get").status, None, "untouched");
    }

    #[test]
    fn a_pod_manager_pod_without_namespace_is_in_default() {
        let node = Node::new();
        let mut no_namespace = pod("", "d", "ud", NODE);
        no_namespace.metadata.namespace = None;
        node.pod_manager.add_pod(no_namespace.clone());
        node.store.create_pod(no_namespace).expect("create");
        let guard = node.guard(None);
        assert!(guard.get_pod("default", "d").is_ok());
        forbidden(guard.get_pod("other", "d"));
    }
}
