//! The plugin's reach is the host's to enforce ("What a plugin may touch"): behind a
//! `GuardedApiServer`, the real v1 component still syncs, writes and deletes the node's
//! own pods, and every call that reaches beyond them gets the typed refusal
//! (`ApiError::Forbidden`, the WIT `forbidden` case) while the pod it aimed at stays
//! untouched.
//!
//! The v1 plugin is honest: it reads only what it was told about and writes and deletes
//! only what it read, so through it only a read can be aimed at another node's pod. The
//! other malicious patterns are made on purpose by calling the server the plugin's
//! imports forward to (the world's `api_server`), exactly as a hostile plugin's import
//! calls would reach it, and by the prober (`tests/programs/guests/prober`), a hostile
//! component whose probe each test picks by an annotation of the pod it hands it:
//! force-deleting a running pod, deleting a mirror pod or a pod whose containers may
//! still run, forging IPs, writing by a stale name. Each asserts that nothing forbidden
//! reaches the API server.

use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;
use podstatus_backends::SystemClock;
use podstatus_backends::{
    ApiError, ApiServer, DeleteOptions, GuardedApiServer, MemoryApiServer, Refusals, StatusPatch, StatusUpdate,
};
use podstatus_backends::{ContainersStopped, HostView};
use podstatus_runtime::World;
use podstatus_runtime::bindings::{SyncOutcome, UpdateOutcome};
use podstatus_runtime::{Plugin, PluginExt};
use podstatus_test_programs::PROBER;
use podstatus_tests::{load, v1_image};
use serde_json::{Value, json};

const NODE: &str = "node-1";
const OTHER_NODE: &str = "node-2";
const RUNNING: &str = r#"{"phase": "Running"}"#;
const SUCCEEDED: &str = r#"{"phase": "Succeeded"}"#;
const CONFIG_SOURCE: &str = "kubernetes.io/config.source";
const CONFIG_MIRROR: &str = "kubernetes.io/config.mirror";

/// A pod as JSON, bound to `node`, with labels and a container so that a write that
/// touched more than `status` would show.
fn pod(namespace: &str, name: &str, uid: &str, node: &str) -> Value {
    json!({
        "metadata": {"namespace": namespace, "name": name, "uid": uid, "labels": {"app": name}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/c:1"}]},
    })
}

fn with_annotations(mut pod: Value, annotations: Value) -> Value {
    pod["metadata"]["annotations"] = annotations;
    pod
}

fn being_deleted(mut pod: Value) -> Value {
    pod["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    pod
}

fn object(pod: &Value) -> Pod {
    serde_json::from_value(pod.clone()).expect("a pod")
}

fn forbidden<T: std::fmt::Debug>(result: Result<T, ApiError>) -> String {
    match result {
        Err(ApiError::Forbidden { message }) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// What the plugin's imports got back: the server they forward to, seen from the
/// plugin's side of the guard.
struct PluginSide {
    guard: Arc<GuardedApiServer>,
    errors: Mutex<Vec<ApiError>>,
}

impl PluginSide {
    fn note<T>(&self, result: Result<T, ApiError>) -> Result<T, ApiError> {
        if let Err(e) = &result {
            self.errors.lock().unwrap_or_else(PoisonError::into_inner).push(e.clone());
        }
        result
    }

    fn errors(&self) -> Vec<ApiError> {
        self.errors.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl ApiServer for PluginSide {
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>, ApiError> {
        self.note(self.guard.get_pod(namespace, name))
    }

    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>, ApiError> {
        self.note(self.guard.update_pod_status(update))
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>, ApiError> {
        self.note(self.guard.patch_pod_status(patch))
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>, ApiError> {
        self.note(self.guard.delete_pod(namespace, name, options))
    }
}

/// A node: its pod manager following the API server, and a world whose API server is
/// the guard.
struct Node {
    store: Arc<MemoryApiServer>,
    pod_manager: Arc<PodManager>,
    host_view: Arc<HostView>,
    guard: Arc<GuardedApiServer>,
    plugin_side: Arc<PluginSide>,
    world: World,
}

impl Node {
    fn new(node_name: Option<&str>) -> Node {
        let store = Arc::new(MemoryApiServer::new());
        let pod_manager = Arc::new(PodManager::new());
        pod_manager.follow_api_server(&store);
        // The kubelet's own rule, asked by the plugin with its status and by the guard
        // with the node's.
        let host_view = Arc::new(HostView::new(Arc::new(ContainersStopped)));
        let guard = Arc::new(GuardedApiServer::new(
            store.clone(),
            Arc::clone(&pod_manager),
            node_name.map(Into::into),
            Arc::clone(&host_view),
        ));
        let plugin_side = Arc::new(PluginSide { guard: Arc::clone(&guard), errors: Mutex::default() });
        let world = World {
            api_server: plugin_side.clone(),
            pod_manager: Arc::clone(&pod_manager),
            deletion_safety: Arc::new(ContainersStopped),
            clock: Arc::new(SystemClock),
            queue: Arc::new(SyncQueue::default()),
        };
        Node { store, pod_manager, host_view, guard, plugin_side, world }
    }

    /// The pod is the node's: in its pod manager and in the API server.
    fn own(&self, pod: &Value) {
        self.pod_manager.add_pod(object(pod));
        self.store.put_pod(object(pod)).expect("put");
    }

    /// The static pod `kube-system/etcd-node-1` (s1) in the pod manager, and its mirror
    /// pod (m1, as `edit` makes it) the node's. Both pods.
    fn static_etcd_with_mirror_pod(&self, edit: impl FnOnce(Value) -> Value) -> (Value, Value) {
        let static_pod =
            with_annotations(pod("kube-system", "etcd-node-1", "s1", NODE), json!({CONFIG_SOURCE: "file"}));
        let mirror_annotations = json!({CONFIG_SOURCE: "file", CONFIG_MIRROR: "hash"});
        let mirror_pod = edit(with_annotations(pod("kube-system", "etcd-node-1", "m1", NODE), mirror_annotations));
        self.pod_manager.add_pod(object(&static_pod));
        self.own(&mirror_pod);
        (static_pod, mirror_pod)
    }

    /// The pod is only in the API server.
    fn in_api_server(&self, pod: &Value) {
        self.store.put_pod(object(pod)).expect("put");
    }

    fn stored(&self, namespace: &str, name: &str) -> Arc<Pod> {
        self.store.get_pod(namespace, name).expect("stored")
    }

    /// The node reports `status` for `pod` (the host's view first, as the agent's
    /// handle does), the plugin caches it and syncs the request it queued.
    fn sync(&self, plugin: &mut dyn Plugin, pod: &Value, status: &str) -> SyncOutcome {
        self.host_view.report_status_json(&pod.to_string(), status);
        self.sync_unreported(plugin, pod, status)
    }

    /// The plugin caches `status` for `pod` (the host's view as it was) and syncs the
    /// request it queued.
    fn sync_unreported(&self, plugin: &mut dyn Plugin, pod: &Value, status: &str) -> SyncOutcome {
        assert_eq!(plugin.set_pod_status(&pod.to_string(), status).expect("set"), UpdateOutcome::Queued);
        let request = self.world.queue.pop().expect("a queued sync");
        plugin.sync_pod(&request).expect("sync")
    }

    /// `pod` syncs Running: it is written at `namespace/name`, and only its status
    /// changes. The pod written.
    fn writes_only_status(&self, plugin: &mut dyn Plugin, pod: &Value, namespace: &str, name: &str) -> Arc<Pod> {
        let before = self.stored(namespace, name);
        assert_eq!(self.sync(plugin, pod, RUNNING), SyncOutcome::Written);
        let written = self.stored(namespace, name);
        assert_eq!(phase(&written), Some("Running"));
        assert_eq!(all_but_status(&written), all_but_status(&before), "the write changed only status");
        written
    }

    /// `pod`, being deleted in the API server, syncs Succeeded and is deleted.
    fn deletes(&self, plugin: &mut dyn Plugin, pod: Value) {
        let deleting = being_deleted(pod);
        self.in_api_server(&deleting);
        assert_eq!(self.sync(plugin, &deleting, SUCCEEDED), SyncOutcome::Deleted);
    }

    fn plugin(&self) -> Box<dyn Plugin> {
        Box::new(v1_image().instantiate(self.world.clone()).expect("instantiate"))
    }

    /// A node with a node name, and `kube-system/etcd` (ue) of another node in the API
    /// server: the node, the pod and the pod as stored.
    fn with_another_nodes_etcd() -> (Node, Value, Arc<Pod>) {
        let node = Node::new(Some(NODE));
        let etcd = pod("kube-system", "etcd", "ue", OTHER_NODE);
        node.in_api_server(&etcd);
        let before = node.stored("kube-system", "etcd");
        (node, etcd, before)
    }

    /// A node with a node name, and the prober in its world.
    fn with_prober() -> (Node, Box<dyn Plugin>) {
        let node = Node::new(Some(NODE));
        let prober = node.prober();
        (node, prober)
    }

    fn prober(&self) -> Box<dyn Plugin> {
        static IMAGE: std::sync::OnceLock<podstatus_runtime::PluginImage> = std::sync::OnceLock::new();
        Box::new(IMAGE.get_or_init(|| load(PROBER)).instantiate(self.world.clone()).expect("instantiate"))
    }

    /// The node reports `status` for `pod` and the prober syncs it, with `outcome`: what
    /// its probe got back.
    fn sync_probe(&self, prober: &mut dyn Plugin, pod: &Value, status: &str, outcome: SyncOutcome) -> String {
        assert_eq!(self.sync(prober, pod, status), outcome);
        Node::probed(prober, pod["metadata"]["uid"].as_str().expect("uid"))
    }

    /// What the prober's last probe of `uid` got back (`ok`, `forbidden: ...`, ...).
    fn probed(plugin: &mut dyn Plugin, uid: &str) -> String {
        let cached = plugin.get_pod_status(uid).expect("get").expect("held");
        let status: Value = serde_json::from_str(&cached.status).expect("json");
        status["message"].as_str().expect("message").to_owned()
    }
}

/// Metadata but for the resourceVersion (every write changes that), and spec.
fn all_but_status(pod: &Pod) -> (Value, Value) {
    let mut metadata = serde_json::to_value(&pod.metadata).expect("json");
    metadata.as_object_mut().expect("object").remove("resourceVersion");
    (metadata, serde_json::to_value(&pod.spec).expect("json"))
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|status| status.phase.as_deref())
}

// ---- The legitimate flows still work through the guard. ----

#[test]
fn the_v1_plugin_syncs_and_deletes_its_own_pods_through_the_guard() {
    let node = Node::new(None);
    let mut plugin = node.plugin();
    let a = pod("ns", "a", "ua", NODE);
    node.own(&a);
    node.writes_only_status(&mut *plugin, &a, "ns", "a");
    node.deletes(&mut *plugin, a);
    assert_eq!(node.store.get_pod("ns", "a").map_err(|e| e.reason()), Err("NotFound"));
    assert_eq!(node.guard.refusals(), Refusals::default());
    assert_eq!(node.plugin_side.errors(), []);
}

#[test]
fn a_pod_bound_to_the_node_is_reachable_when_a_node_name_is_configured() {
    let node = Node::new(Some(NODE));
    let mut plugin = node.plugin();
    // Bound to the node in the API server, not (yet) in the pod manager.
    let b = pod("ns", "b", "ub", NODE);
    node.in_api_server(&b);
    node.writes_only_status(&mut *plugin, &b, "ns", "b");
    node.deletes(&mut *plugin, b);
    assert!(node.store.list_pods().is_empty());
    assert_eq!(node.guard.refusals(), Refusals::default());

    // Without a node name the same pod is not the node's: the plugin's read is refused.
    let node = Node::new(None);
    let mut plugin = node.plugin();
    let b = pod("ns", "b", "ub", NODE);
    node.in_api_server(&b);
    assert_eq!(node.sync(&mut *plugin, &b, RUNNING), SyncOutcome::GetFailed);
    assert_eq!(node.guard.refusals(), Refusals { get: 1, ..Refusals::default() });
    assert_eq!(phase(&node.stored("ns", "b")), None, "untouched");
}

#[test]
fn a_static_pods_status_is_written_to_its_mirror_pod_through_the_guard() {
    let node = Node::new(Some(NODE));
    let mut plugin = node.plugin();
    let (static_pod, _) = node.static_etcd_with_mirror_pod(|mirror_pod| mirror_pod);
    let written = node.writes_only_status(&mut *plugin, &static_pod, "kube-system", "etcd-node-1");
    assert_eq!(written.metadata.uid.as_deref(), Some("m1"));
    assert_eq!(node.guard.refusals(), Refusals::default());
}

// ---- Each rule, broken on purpose, gets the typed refusal. ----

#[test]
fn reading_a_pod_of_another_node_is_refused() {
    let (node, etcd, before) = Node::with_another_nodes_etcd();
    let refusal = "get of pod kube-system/etcd refused: not a pod of this node";

    // The real component, told of another node's pod, cannot read it.
    let mut plugin = node.plugin();
    assert_eq!(node.sync(&mut *plugin, &etcd, RUNNING), SyncOutcome::GetFailed);
    assert_eq!(node.plugin_side.errors(), [ApiError::Forbidden { message: refusal.into() }]);

    // Nor can a plugin that asks outright.
    assert_eq!(forbidden(node.world.api_server.get_pod("kube-system", "etcd")), refusal);
    assert_eq!(node.guard.refusals(), Refusals { get: 2, ..Refusals::default() });
    assert_eq!(node.stored("kube-system", "etcd"), before, "untouched");
}

#[test]
fn writing_another_pods_status_is_refused() {
    let (node, _, before) = Node::with_another_nodes_etcd();
    let update = StatusUpdate {
        namespace: "kube-system".into(),
        name: "etcd".into(),
        uid_precondition: Some("ue".into()),
        resource_version_precondition: None,
        status: serde_json::from_str(r#"{"phase": "Failed"}"#).expect("status"),
    };
    let message = forbidden(node.world.api_server.update_pod_status(update));
    assert_eq!(message, "status update of pod kube-system/etcd refused: not a pod of this node");
    // The 0.1.1 contract's strategic merge patch, likewise.
    let patch = StatusPatch {
        namespace: "kube-system".into(),
        name: "etcd".into(),
        uid_precondition: Some("ue".into()),
        patch: json!({"metadata": {"uid": "ue"}, "status": {"phase": "Failed"}}),
    };
    let message = forbidden(node.world.api_server.patch_pod_status(patch));
    assert_eq!(message, "status patch of pod kube-system/etcd refused: not a pod of this node");
    assert_eq!(node.stored("kube-system", "etcd"), before, "untouched");
    assert_eq!(node.guard.refusals(), Refusals { update_status: 1, patch_status: 1, ..Refusals::default() });
    still_serves(&node);
}

#[test]
fn a_status_write_of_the_nodes_own_pod_changes_only_status() {
    let node = Node::new(Some(NODE));
    node.own(&pod("ns", "a", "ua", NODE));
    let before = node.stored("ns", "a");
    let api = &node.world.api_server;

    // A patch that reaches for labels or spec is refused whole.
    for (body, field) in [
        (
            json!({"metadata": {"uid": "ua", "labels": {"app": "evil"}}, "status": {"phase": "Failed"}}),
            "metadata.labels",
        ),
        (json!({"spec": {"nodeName": OTHER_NODE}, "status": {"phase": "Failed"}}), "spec"),
    ] {
        let patch = StatusPatch { namespace: "ns".into(), name: "a".into(), uid_precondition: None, patch: body };
        let message = forbidden(api.patch_pod_status(patch));
        assert_eq!(message, format!("status patch of pod ns/a refused: the patch changes {field}, not only status"));
    }
    assert_eq!(node.stored("ns", "a"), before, "untouched");

    // Status writes as the kubelet makes them go through and keep metadata and spec.
    let update = StatusUpdate {
        namespace: "ns".into(),
        name: "a".into(),
        uid_precondition: Some("ua".into()),
        resource_version_precondition: before.metadata.resource_version.clone(),
        status: serde_json::from_str(RUNNING).expect("status"),
    };
    let updated = api.update_pod_status(update).expect("update");
    assert_eq!((phase(&updated), all_but_status(&updated)), (Some("Running"), all_but_status(&before)));
    let patch = StatusPatch {
        namespace: "ns".into(),
        name: "a".into(),
        uid_precondition: Some("ua".into()),
        patch: json!({"metadata": {"uid": "ua"}, "status": {"phase": "Succeeded"}}),
    };
    let patched = api.patch_pod_status(patch).expect("patch");
    assert_eq!((phase(&patched), all_but_status(&patched)), (Some("Succeeded"), all_but_status(&before)));
    assert_eq!(node.guard.refusals(), Refusals { patch_status: 2, ..Refusals::default() });
}

#[test]
fn deleting_is_refused_unless_pinned_to_a_pod_of_the_node() {
    // (the pod deleted, the UID precondition, the refusal): another node's pod; no
    // precondition; another node's pod's UID, and a UID no one has.
    let cases = [
        ("kube-system", "etcd", Some("ue"), "not a pod of this node"),
        ("ns", "a", None, "no UID precondition"),
        ("ns", "a", Some(""), "no UID precondition"),
        ("ns", "a", Some("ue"), "UID precondition ue is not a pod of this node"),
        ("ns", "a", Some("u9"), "UID precondition u9 is not a pod of this node"),
    ];
    for (namespace, name, uid, refusal) in cases {
        let node = Node::new(Some(NODE));
        node.own(&pod("ns", "a", "ua", NODE));
        node.in_api_server(&pod("kube-system", "etcd", "ue", OTHER_NODE));
        let message = refused_delete(&node, namespace, name, uid.map(Into::into));
        assert_eq!(message, format!("delete of pod {namespace}/{name} refused: {refusal}"));
        survives_refused_deletes(&node, namespace, name, 1);
    }
}

/// A delete of `namespace/name` with `uid_precondition` and no grace period, made
/// straight to the server the plugin's imports forward to: the refusal's message.
fn refused_delete(node: &Node, namespace: &str, name: &str, uid_precondition: Option<String>) -> String {
    let options = DeleteOptions { uid_precondition, grace_period_seconds: Some(0), ..Default::default() };
    forbidden(node.world.api_server.delete_pod(namespace, name, &options))
}

/// `namespace/name` is still there after `refused` refused deletes (and no other
/// refusal), and the node still serves.
fn survives_refused_deletes(node: &Node, namespace: &str, name: &str, refused: u64) {
    assert!(node.store.get_pod(namespace, name).is_ok(), "still there");
    assert_eq!(node.guard.refusals(), Refusals { delete: refused, ..Refusals::default() });
    still_serves(node);
}

/// After refusals, the v1 plugin in the same world still syncs a pod of the node.
fn still_serves(node: &Node) {
    let mut plugin = node.plugin();
    let own = pod("ns", "own", "u-own", NODE);
    node.own(&own);
    let refusals = node.guard.refusals();
    assert_eq!(node.sync(&mut *plugin, &own, RUNNING), SyncOutcome::Written);
    assert_eq!(phase(&node.stored("ns", "own")), Some("Running"));
    assert_eq!(node.guard.refusals(), refusals, "no new refusal");
}

// ---- The prober: a hostile component, probing what the guard decides. ----

fn probing(pod: Value, probe: &str) -> Value {
    let mut pod = pod;
    pod["metadata"]["annotations"] = json!({"podstatus.test/probe": probe});
    pod
}

/// A status the node reports for a running pod: its IPs and a running container.
const RUNNING_WITH_IPS: &str = r#"{"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
    "hostIP": "192.168.1.10", "containerStatuses": [{"name": "c", "image": "registry.example/c:1", "imageID": "",
    "ready": true, "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}"#;

#[test]
fn a_running_pod_cannot_be_force_deleted() {
    // A StatefulSet pod whose container runs: deleting it would let its replacement run
    // beside it. No deletionTimestamp, a grace period of the plugin's choosing.
    let (node, mut prober) = Node::with_prober();
    let db = probing(pod("ns", "db-0", "u-db", NODE), "delete");
    node.own(&db);
    let message = node.sync_probe(&mut *prober, &db, RUNNING_WITH_IPS, SyncOutcome::DeleteFailed);
    assert_eq!(
        message,
        "forbidden: delete of pod ns/db-0 refused: the pod is not being deleted (no deletionTimestamp)"
    );
    assert!(node.store.get_pod("ns", "db-0").is_ok(), "still there");

    // Being deleted, but by the node's own report its container still runs: the status
    // the plugin supplies (all stopped) does not count.
    let deleting = being_deleted(db);
    node.own(&deleting);
    node.host_view.report_status_json(&deleting.to_string(), RUNNING_WITH_IPS);
    assert_eq!(node.sync_unreported(&mut *prober, &deleting, SUCCEEDED), SyncOutcome::DeleteFailed);
    let message = Node::probed(&mut *prober, "u-db");
    assert!(message.ends_with("by the node's own report a container of the pod may still run"), "{message}");
    assert!(node.store.get_pod("ns", "db-0").is_ok(), "still there");

    // Once the node has terminated it, the delete goes, with the host's grace period.
    node.host_view.report_termination(&object(&deleting));
    assert_eq!(node.sync_unreported(&mut *prober, &deleting, SUCCEEDED), SyncOutcome::Deleted);
    assert_eq!(node.store.get_pod("ns", "db-0").map_err(|e| e.reason()), Err("NotFound"));
    assert_eq!(node.guard.refusals().delete, 2);
}

#[test]
fn a_mirror_pod_cannot_be_deleted() {
    let (node, mut prober) = Node::with_prober();
    let (static_pod, mirror_pod) = node.static_etcd_with_mirror_pod(|mut mirror_pod| {
        mirror_pod["metadata"]["annotations"]["podstatus.test/probe"] = json!("delete");
        being_deleted(mirror_pod)
    });
    node.host_view.report_termination(&object(&mirror_pod));
    node.host_view.report_termination(&object(&static_pod));
    let message = node.sync_probe(&mut *prober, &mirror_pod, SUCCEEDED, SyncOutcome::DeleteFailed);
    assert!(message.ends_with("a mirror pod is its static pod's to remove, not the status manager's"), "{message}");
    assert!(node.store.get_pod("kube-system", "etcd-node-1").is_ok(), "still there");
}

#[test]
fn a_forged_ip_is_refused() {
    let (node, mut prober) = Node::with_prober();
    let mut web = probing(pod("ns", "web", "u-web", NODE), "forge-ip");
    web["metadata"]["annotations"]["podstatus.test/ip"] = json!("10.66.6.6");
    node.own(&web);
    let before = node.stored("ns", "web");
    let message = node.sync_probe(&mut *prober, &web, RUNNING_WITH_IPS, SyncOutcome::WriteFailed);
    assert_eq!(
        message,
        "forbidden: status update of pod ns/web refused: IP 10.66.6.6 was not reported by the node for this pod"
    );
    assert_eq!(node.stored("ns", "web"), before, "untouched");

    // Another pod's IP is forged too: the node reported 10.0.0.5 for u-web, not u-api.
    let mut api = probing(pod("ns", "api", "u-api", NODE), "forge-ip");
    api["metadata"]["annotations"]["podstatus.test/ip"] = json!("10.0.0.5");
    node.own(&api);
    assert!(node.sync_probe(&mut *prober, &api, RUNNING, SyncOutcome::WriteFailed).starts_with("forbidden: "));

    // The IP the node reported goes through.
    web["metadata"]["annotations"]["podstatus.test/ip"] = json!("10.0.0.5");
    assert_eq!(node.sync(&mut *prober, &web, RUNNING_WITH_IPS), SyncOutcome::Written);
    let written = node.stored("ns", "web");
    assert_eq!(written.status.as_ref().and_then(|s| s.pod_ip.as_deref()), Some("10.0.0.5"));
    assert_eq!(node.guard.refusals().update_status, 2);
}

#[test]
fn a_terminal_phase_cannot_be_revived() {
    let (node, mut prober) = Node::with_prober();
    let mut job = probing(pod("ns", "job", "u-job", NODE), "revive");
    job["status"] = json!({"phase": "Succeeded"});
    node.own(&job);
    let before = node.stored("ns", "job");
    // The host handed Succeeded: a write of Running is the plugin's fault before the
    // guard sees it (issue 47: the phase must be one the host handed).
    node.host_view.report_status_json(&job.to_string(), SUCCEEDED);
    assert_eq!(prober.set_pod_status(&job.to_string(), SUCCEEDED).expect("set"), UpdateOutcome::Queued);
    let request = node.world.queue.pop().expect("a queued sync");
    let (_, kind, message) = podstatus_tests::fault(prober.sync_pod(&request));
    assert_eq!(kind, podstatus_runtime::FaultKind::Content, "{message}");
    assert!(message.contains("it sets phase \"Running\" on pod \"u-job\""), "{message}");
    assert_eq!(node.stored("ns", "job"), before, "untouched");
    // The guard refuses it too, for whatever reaches it: the server the imports forward
    // to, called as a plugin's import would call it.
    let revive = StatusUpdate {
        namespace: "ns".into(),
        name: "job".into(),
        uid_precondition: Some("u-job".into()),
        resource_version_precondition: None,
        status: serde_json::from_str(RUNNING).expect("a status"),
    };
    let message = forbidden(node.world.api_server.update_pod_status(revive));
    assert!(message.contains("phase Succeeded is terminal, it does not go back to \"Running\""), "{message}");
    assert_eq!(node.stored("ns", "job"), before, "untouched");
}

/// A 0.1.x plugin's `api-server` imports reach only the pods whose status the host
/// handed it (issue 47), not every pod of its node: a write by name to a neighbour the
/// node owns (in the pod manager, bound to the node) is the plugin's fault, before the
/// guard, which would let it through, sees it.
#[test]
fn a_0_1_plugin_may_not_write_a_pod_of_its_node_never_handed() {
    let (node, mut prober) = Node::with_prober();
    let neighbour = pod("ns", "neighbour", "u-neighbour", NODE);
    node.own(&neighbour);
    let before = node.stored("ns", "neighbour");
    let writer = with_annotations(
        pod("ns", "writer", "u-writer", NODE),
        json!({"podstatus.test/probe": "neighbour", "podstatus.test/neighbour": "ns/neighbour"}),
    );
    node.own(&writer);
    node.host_view.report_status_json(&writer.to_string(), RUNNING);
    assert_eq!(prober.set_pod_status(&writer.to_string(), RUNNING).expect("set"), UpdateOutcome::Queued);
    let request = node.world.queue.pop().expect("a queued sync");
    let (_, kind, message) = podstatus_tests::fault(prober.sync_pod(&request));
    assert_eq!(kind, podstatus_runtime::FaultKind::ForeignUid, "{message}");
    let rule = "update-pod-status: pod \"ns\"/\"neighbour\" is not a pod whose status the host handed the plugin";
    assert!(message.contains(rule), "{message}");
    assert_eq!(node.stored("ns", "neighbour"), before, "untouched");
    assert!(node.plugin_side.errors().is_empty(), "nothing reached the guard: {:?}", node.plugin_side.errors());
}

#[test]
fn a_stale_name_does_not_reach_a_pod_recreated_on_another_node() {
    let (node, mut prober) = Node::with_prober();
    let cache = probing(pod("ns", "cache-0", "u-old", NODE), "stale-name");
    node.own(&cache);
    // Recreated under the same name on another node; the pod manager still holds the
    // old one.
    node.store.remove_pod("ns", "cache-0").expect("remove");
    node.in_api_server(&pod("ns", "cache-0", "u-new", OTHER_NODE));
    let before = node.stored("ns", "cache-0");
    let message = node.sync_probe(&mut *prober, &cache, r#"{"phase": "Failed"}"#, SyncOutcome::WriteFailed);
    assert!(message.starts_with("conflict: "), "pinned to the UID the host knows: {message}");
    assert_eq!(node.stored("ns", "cache-0"), before, "the other node's pod is untouched");
}
