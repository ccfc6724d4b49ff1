//! The reach guard beside the Node authorizer (issue 45): every kind of request a plugin
//! can make goes once through the agent's `GuardedApiServer` for node `n1`, in front of
//! the node's real client, and once straight to a real kube-apiserver 1.35 as `n1`
//! (its client certificate, `system:node:n1`), where the Node authorizer and
//! `NodeRestriction` judge it. The table of both answers is written below ([`CASES`]);
//! the test fails when either answer changes, when a difference has no reason written
//! beside it, and when docs/sandbox.md ("The guard beside the Node authorizer") does not
//! hold the table as the test renders it.
//!
//! Each request runs against a *scene* of its own making (pods created by the admin, with
//! fresh names): `n1`'s running pod, a pod bound to `n1` the watch has not delivered yet,
//! two pods being deleted (one whose containers the node reported stopped, one whose
//! container the node reported running), a Failed pod, a mirror pod (its static pod in
//! the pod manager), a pod of `n2`, a pod the node reported that the admin has since
//! removed, and a pod the admin recreated under its name (the pod manager still holding
//! the old one). The guard's pod manager holds what `n1`'s watch would, and its host view
//! what the node reported. A scene serves until a request changes it.
//!
//! The node's client is built as `podstatus agent` builds it (`Connection` and
//! `KubeApiServer`, from the node's kubeconfig), and the guard as `World::guarded` builds
//! it. That client refuses names that cannot name a pod before they reach a URL; for
//! those rows the node's request goes percent-encoded (kube-rs directly, the node's
//! credential), so the right column is the server's answer.
//!
//! Without Go the control plane cannot be built: the test fails naming what is missing.

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use podstatus_agent::Target as AgentTarget;
use podstatus_agent::client::{Connection, KubeApiServer, KubeClientConfig};
use podstatus_backends::{
    ApiError, ApiServer, ContainersStopped, DeleteOptions, GuardedApiServer, HostView, PodManager, StatusPatch,
    StatusUpdate,
};
use podstatus_upstream::{ControlPlane, ControlPlaneConfig, Release};
use serde_json::{Value, json};

const NODE: &str = "n1";
const OTHER_NODE: &str = "n2";
const NAMESPACE: &str = "reach";
/// The pod IP and host IP `n1` reported for its running pod.
const POD_IP: &str = "10.1.0.5";
const HOST_IP: &str = "192.168.1.1";
/// A UID no pod has.
const WRONG_UID: &str = "00000000-0000-0000-0000-000000000000";
/// Bounds the waits for the Node authorizer's graph to see a scene.
const PATIENCE: Duration = Duration::from_secs(30);

/// The pod a request names.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// `n1`'s running pod (pod manager, reported Running with [`POD_IP`] and [`HOST_IP`]).
    Own,
    /// A pod bound to `n1` that is not in the pod manager yet (the watch lags).
    Bound,
    /// `n1`'s pod being deleted (grace period 3600 s), its containers reported stopped.
    Going,
    /// `n1`'s pod being deleted, its container reported still running.
    Stopping,
    /// `n1`'s pod in phase Failed.
    Failed,
    /// `n1`'s mirror pod (its static pod reported Running with [`HOST_IP`]).
    Mirror,
    /// `n2`'s running pod.
    Other,
    /// A pod `n1` reported, deleted since by the admin and gone from the pod manager.
    Gone,
    /// A pod of `n1` recreated under its name (on `n1` too): the pod manager still holds
    /// the old one, the name is the new one's.
    Recreated,
    /// A name no pod has.
    Unknown,
    /// A namespace and name the node's client refuses to put in a URL.
    Raw(&'static str, &'static str),
    /// A name of 254 characters (a pod name has at most 253).
    LongName,
}

/// A request's UID precondition.
#[derive(Clone, Copy, Debug)]
enum Uid {
    None,
    /// The UID of the pod named.
    Its,
    /// [`WRONG_UID`].
    Wrong,
    /// The UID of `n2`'s pod.
    OtherNodes,
}

/// A request, as a plugin's `api-server` import makes it.
#[derive(Clone, Copy, Debug)]
enum Call {
    Get(Target),
    /// A status update with this status (JSON).
    Update(Target, Uid, &'static str),
    /// A status patch with this body (JSON).
    Patch(Target, Uid, &'static str),
    /// A delete with this grace period.
    Delete(Target, Uid, i64),
}

/// What a request got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Ok,
    /// A delete answered Ok, the pod still there (a graceful deletion).
    OkKept,
    /// The guard's own refusal (counted in its refusals).
    Refused,
    /// 403 from the server (for the guard: the server's answer it passed on).
    Forbidden,
    NotFound,
    Conflict,
    Invalid,
    /// Anything else (never expected: the message says what).
    Other,
}

impl Answer {
    fn as_str(self) -> &'static str {
        match self {
            Answer::Ok => "ok",
            Answer::OkKept => "ok, the pod stays (graceful)",
            Answer::Refused => "refused by the guard",
            Answer::Forbidden => "403 Forbidden",
            Answer::NotFound => "404 NotFound",
            Answer::Conflict => "409 Conflict",
            Answer::Invalid => "422 Invalid",
            Answer::Other => "other",
        }
    }

    /// Whether the guard's `self` and the server's `real` are the same answer (a guard's
    /// refusal is the server's 403).
    fn agrees_with(self, real: Answer) -> bool {
        self == real || (self == Answer::Refused && real == Answer::Forbidden)
    }
}

/// A row of the table: the request, both answers, and why they differ.
struct Case {
    request: &'static str,
    call: Call,
    guard: Answer,
    real: Answer,
    /// Empty when the answers agree.
    why: &'static str,
}

const REPORTED: &str = r#"{"phase": "Running", "podIP": "10.1.0.5", "hostIP": "192.168.1.1", "message": "m"}"#;

// `Ok` below is the answer; results spell out `Result::Ok`.
use Answer::{Conflict, Forbidden, Invalid, NotFound, Ok, OkKept, Refused};
use Target::{Bound, Failed, Going, Gone, LongName, Mirror, Other, Own, Raw, Recreated, Stopping, Unknown};

/// The table: every request, the guard's answer for `n1`, kube-apiserver 1.35's answer to
/// `n1`, and why they differ.
const CASES: &[Case] = &[
    // Reads.
    Case { request: "get own pod", call: Call::Get(Own), guard: Ok, real: Ok, why: "" },
    Case {
        request: "get a pod bound to the node, not yet in the pod manager",
        call: Call::Get(Bound),
        guard: Ok,
        real: Ok,
        why: "",
    },
    Case { request: "get own mirror pod", call: Call::Get(Mirror), guard: Ok, real: Ok, why: "" },
    Case { request: "get another node's pod", call: Call::Get(Other), guard: Refused, real: Forbidden, why: "" },
    Case { request: "get an unknown name", call: Call::Get(Unknown), guard: Refused, real: Forbidden, why: "" },
    Case {
        request: "get a pod the node reported, deleted since",
        call: Call::Get(Gone),
        guard: Forbidden,
        real: Forbidden,
        why: "",
    },
    // Status updates (PUT pods/status).
    Case {
        request: "status update of own pod",
        call: Call::Update(Own, Uid::None, REPORTED),
        guard: Ok,
        real: Ok,
        why: "",
    },
    Case {
        request: "status update of own pod, its UID",
        call: Call::Update(Own, Uid::Its, REPORTED),
        guard: Ok,
        real: Ok,
        why: "",
    },
    Case {
        request: "status update of own pod, a wrong UID",
        call: Call::Update(Own, Uid::Wrong, REPORTED),
        guard: Refused,
        real: Conflict,
        why: "a UID no pod of the node has: the guard refuses it before the server's precondition fails; nothing is written either way",
    },
    Case {
        request: "status update of own pod, another node's pod's UID",
        call: Call::Update(Own, Uid::OtherNodes, REPORTED),
        guard: Refused,
        real: Conflict,
        why: "as above",
    },
    Case {
        request: "status update by a stale name (the pod recreated, the pod manager holds the old UID)",
        call: Call::Update(Recreated, Uid::None, REPORTED),
        guard: Conflict,
        real: Ok,
        why: "the guard pins a write without UID to the pod the node knows: the new pod is not written by the old one's name",
    },
    Case {
        request: "status update of another node's pod",
        call: Call::Update(Other, Uid::Its, r#"{"phase": "Running"}"#),
        guard: Refused,
        real: Forbidden,
        why: "",
    },
    Case {
        request: "status update of an unknown name",
        call: Call::Update(Unknown, Uid::None, r#"{"phase": "Running"}"#),
        guard: Refused,
        real: Forbidden,
        why: "",
    },
    Case {
        request: "status update with a forged podIP",
        call: Call::Update(Own, Uid::Its, r#"{"phase": "Running", "podIP": "10.9.9.9", "hostIP": "192.168.1.1"}"#),
        guard: Refused,
        real: Ok,
        why: "NodeRestriction lets a node write any IP into its pods' status; the guard only the IPs the node reported (Endpoints are built from them)",
    },
    Case {
        request: "status update with a forged hostIP",
        call: Call::Update(Own, Uid::Its, r#"{"phase": "Running", "podIP": "10.1.0.5", "hostIP": "10.9.9.9"}"#),
        guard: Refused,
        real: Ok,
        why: "as above",
    },
    // Status patches (PATCH pods/status, strategic merge).
    Case {
        request: "status patch of own pod",
        call: Call::Patch(Own, Uid::None, r#"{"status": {"message": "m"}}"#),
        guard: Ok,
        real: Ok,
        why: "",
    },
    Case {
        request: "status patch of own pod, its UID",
        call: Call::Patch(Own, Uid::Its, r#"{"status": {"message": "m"}}"#),
        guard: Ok,
        real: Ok,
        why: "",
    },
    Case {
        request: "status patch of own pod, a wrong UID",
        call: Call::Patch(Own, Uid::Wrong, r#"{"status": {"message": "m"}}"#),
        guard: Refused,
        real: Conflict,
        why: "refused before the server sees it; kube-apiserver answers a patch whose metadata.uid differs 422 (metadata.uid is immutable), which the agent's client reads as the 409 of an update: the precondition failed",
    },
    Case {
        request: "status patch of a pod bound to the node, not yet in the pod manager",
        call: Call::Patch(Bound, Uid::None, r#"{"status": {"message": "m"}}"#),
        guard: Refused,
        real: Ok,
        why: "the node never reported this pod, so a write of it may carry nothing beyond the API server's copy (here a message): the kubelet writes only the statuses it cached",
    },
    Case {
        request: "status patch by a stale name (the pod recreated, the pod manager holds the old UID)",
        call: Call::Patch(Recreated, Uid::None, r#"{"status": {"message": "m"}}"#),
        guard: Conflict,
        real: Ok,
        why: "pinned, as for the update; kube-apiserver answers the pinned patch 422 (as for a wrong UID), read as 409 as the embedded server answers it",
    },
    Case {
        request: "status patch of another node's pod",
        call: Call::Patch(Other, Uid::None, r#"{"status": {"message": "m"}}"#),
        guard: Refused,
        real: Forbidden,
        why: "",
    },
    Case {
        request: "status patch of an unknown name",
        call: Call::Patch(Unknown, Uid::None, r#"{"status": {"message": "m"}}"#),
        guard: Refused,
        real: NotFound,
        why: "the server tells the node the name is free (the Node authorizer allows every status patch, the store answers); the guard tells nothing",
    },
    Case {
        request: "status patch changing labels beside status",
        call: Call::Patch(Own, Uid::Its, r#"{"metadata": {"labels": {"app": "x"}}, "status": {"message": "m"}}"#),
        guard: Refused,
        real: Forbidden,
        why: "",
    },
    Case {
        request: "status patch changing annotations beside status",
        call: Call::Patch(Own, Uid::Its, r#"{"metadata": {"annotations": {"a": "x"}}, "status": {"message": "m"}}"#),
        guard: Refused,
        real: Ok,
        why: "pods/status takes annotation changes and NodeRestriction refuses only labels; the guard forwards nothing but status",
    },
    Case {
        request: "status patch adding a finalizer beside status",
        call: Call::Patch(Own, Uid::Its, r#"{"metadata": {"finalizers": ["x/y"]}, "status": {"message": "m"}}"#),
        guard: Refused,
        real: Ok,
        why: "as above: a finalizer the node adds holds its pod's deletion",
    },
    Case {
        request: "status patch changing spec beside status",
        call: Call::Patch(Own, Uid::Its, r#"{"spec": {"activeDeadlineSeconds": 5}, "status": {"message": "m"}}"#),
        guard: Refused,
        real: Ok,
        why: "the server drops the spec change silently (pods/status keeps the stored spec); the guard refuses the patch",
    },
    Case {
        request: "status patch with a forged podIP",
        call: Call::Patch(Own, Uid::Its, r#"{"status": {"podIP": "10.9.9.9"}}"#),
        guard: Refused,
        real: Ok,
        why: "forged IPs, as for the update",
    },
    Case {
        request: "status patch with a forged hostIP",
        call: Call::Patch(
            Own,
            Uid::Its,
            r#"{"status": {"hostIP": "10.9.9.9", "hostIPs": [{"ip": "10.9.9.9"}, {"ip": "192.168.1.1", "$patch": "delete"}]}}"#,
        ),
        guard: Refused,
        real: Ok,
        why: "forged IPs, as for the update",
    },
    Case {
        request: "status patch with the IPs the node reported",
        call: Call::Patch(Own, Uid::Its, r#"{"status": {"podIP": "10.1.0.5", "hostIP": "192.168.1.1"}}"#),
        guard: Ok,
        real: Ok,
        why: "",
    },
    Case {
        request: "status patch of own mirror pod, its static pod's IP",
        call: Call::Patch(Mirror, Uid::Its, r#"{"status": {"podIP": "192.168.1.1", "message": "m"}}"#),
        guard: Ok,
        real: Ok,
        why: "",
    },
    Case {
        request: "status patch taking a Failed pod back to Running",
        call: Call::Patch(Failed, Uid::Its, r#"{"status": {"phase": "Running"}}"#),
        guard: Refused,
        real: Ok,
        why: "the 1.35 server validates no phase transition (the kubelet's status manager refuses it); the guard refuses it as the kubelet would",
    },
    // Deletes.
    Case {
        request: "delete own running pod, its UID, grace 0",
        call: Call::Delete(Own, Uid::Its, 0),
        guard: Refused,
        real: Ok,
        why: "NodeRestriction lets a node force-delete any pod bound to it; the guard only a pod being deleted whose containers the node reported stopped",
    },
    Case {
        request: "delete own running pod, no UID",
        call: Call::Delete(Own, Uid::None, 0),
        guard: Refused,
        real: Ok,
        why: "as above, and the guard wants the UID precondition",
    },
    Case {
        request: "delete own Failed pod (not being deleted), its UID",
        call: Call::Delete(Failed, Uid::Its, 0),
        guard: Refused,
        real: Ok,
        why: "not being deleted: the kubelet removes a pod only once the API server marked it",
    },
    Case {
        request: "delete own pod being deleted, its UID, grace 0",
        call: Call::Delete(Going, Uid::Its, 0),
        guard: Ok,
        real: Ok,
        why: "",
    },
    Case {
        request: "delete own pod being deleted, its UID, grace 30",
        call: Call::Delete(Going, Uid::Its, 30),
        guard: Ok,
        real: OkKept,
        why: "the grace period is the host's: the guard sends 0 once the node says no container runs",
    },
    Case {
        request: "delete own pod being deleted, no UID",
        call: Call::Delete(Going, Uid::None, 0),
        guard: Refused,
        real: Ok,
        why: "the guard wants the UID precondition (a pod recreated under the name is never deleted by it)",
    },
    Case {
        request: "delete own pod being deleted, a wrong UID",
        call: Call::Delete(Going, Uid::Wrong, 0),
        guard: Refused,
        real: Conflict,
        why: "refused before the precondition fails; nothing deleted either way",
    },
    Case {
        request: "delete own pod being deleted, a container still running",
        call: Call::Delete(Stopping, Uid::Its, 0),
        guard: Refused,
        real: Ok,
        why: "the server cannot know the containers run; the guard asks the node's own report",
    },
    Case {
        request: "delete own mirror pod, its UID",
        call: Call::Delete(Mirror, Uid::Its, 0),
        guard: Refused,
        real: Ok,
        why: "nodes delete their mirror pods (the kubelet's static pod source does); the status manager never does",
    },
    Case {
        request: "delete another node's pod, its UID",
        call: Call::Delete(Other, Uid::Its, 0),
        guard: Refused,
        real: Forbidden,
        why: "",
    },
    Case {
        request: "delete an unknown name",
        call: Call::Delete(Unknown, Uid::None, 0),
        guard: Refused,
        real: NotFound,
        why: "the server tells the node the name is free (NodeRestriction reads the pod first); the guard tells nothing",
    },
    // Names that cannot name a pod (the node's request sent percent-encoded).
    Case {
        request: "get `Upper` (not lowercase)",
        call: Call::Get(Raw(NAMESPACE, "Upper")),
        guard: Invalid,
        real: Forbidden,
        why: "the agent's client refuses the name before any request; the server's authorizer answers first",
    },
    Case {
        request: "get `a?b`",
        call: Call::Get(Raw(NAMESPACE, "a?b")),
        guard: Invalid,
        real: Forbidden,
        why: "as above",
    },
    Case {
        request: "get a name of 254 characters",
        call: Call::Get(LongName),
        guard: Invalid,
        real: Forbidden,
        why: "as above",
    },
    Case {
        request: "get in namespace `Reach` (not lowercase)",
        call: Call::Get(Raw("Reach", "own")),
        guard: Invalid,
        real: Forbidden,
        why: "as above",
    },
    Case {
        request: "status patch of `a/b`",
        call: Call::Patch(Raw(NAMESPACE, "a/b"), Uid::None, r#"{"status": {"message": "m"}}"#),
        guard: Invalid,
        real: Forbidden,
        why: "as above (the server reads `pods/a/b/status`: another subresource)",
    },
    Case {
        request: "delete `..`",
        call: Call::Delete(Raw(NAMESPACE, ".."), Uid::None, 0),
        guard: Invalid,
        real: Invalid,
        why: "",
    },
];

/// A control plane with nodes `n1` and `n2`, its admin's client, and `n1`'s clients as
/// the agent builds them.
struct Cluster {
    plane: ControlPlane,
    dir: PathBuf,
    /// Carries the admin's requests.
    runtime: tokio::runtime::Runtime,
    admin: kube::Client,
    /// `n1`'s connection, as `podstatus agent --kubeconfig` opens it.
    node: Connection,
    /// `n1`'s status client, as the agent's plugin calls it.
    kube: Arc<KubeApiServer>,
    /// Scenes made so far (each names its pods after it).
    scenes: Cell<u32>,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = podstatus_tests::workspace_dir()
            .join("target/tmp/reach-vs-node-authorizer")
            .join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&dir);
        let release = Release::named("1.35").expect("release 1.35");
        let config = ControlPlaneConfig {
            nodes: vec![NODE.into(), OTHER_NODE.into()],
            ..ControlPlaneConfig::new(release, dir.join("data"))
        };
        let plane = ControlPlane::start(config).unwrap_or_else(|e| panic!("{e}"));
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
        let admin = runtime.block_on(async {
            let kubeconfig = kube::config::Kubeconfig::read_from(plane.admin_kubeconfig()).expect("admin kubeconfig");
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
            kube::Client::try_from(config).expect("the admin's client")
        });
        let path = plane.node_kubeconfig(NODE).expect("n1's kubeconfig").to_path_buf();
        let node = Connection::open(&AgentTarget::Kubeconfig { path: Some(path), context: None }).expect("n1 connects");
        // The agent's client config, but a call waits for a rate-limit token instead of
        // failing at once (the agent's scheduler waits before the call; the test does not).
        let config = KubeClientConfig { throttle_wait: Duration::from_secs(5), ..KubeClientConfig::default() };
        let kube = Arc::new(
            KubeApiServer::new(node.runtime().clone(), node.status_client().clone(), config).expect("n1's client"),
        );
        let cluster = Cluster { plane, dir, runtime, admin, node, kube, scenes: Cell::new(0) };
        let namespaces: Api<Namespace> = Api::all(cluster.admin.clone());
        let namespace = Namespace {
            metadata: ObjectMeta { name: Some(NAMESPACE.into()), ..Default::default() },
            ..Default::default()
        };
        cluster.runtime.block_on(namespaces.create(&PostParams::default(), &namespace)).expect("namespace created");
        cluster
    }

    fn admin_pods(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), NAMESPACE)
    }

    fn node_pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.node.status_client().clone(), namespace)
    }

    /// Creates `pod` as the admin; then, when given, writes `status` and starts a
    /// deletion with `grace` seconds. The pod as the API server has it after.
    fn admin_pod(&self, pod: Value, status: Option<Value>, grace: Option<u32>) -> Pod {
        let pods = self.admin_pods();
        self.runtime.block_on(async {
            let pod: Pod = serde_json::from_value(pod).expect("a pod");
            let name = pod.metadata.name.clone().expect("a name");
            let mut pod = pods.create(&PostParams::default(), &pod).await.expect("created");
            if let Some(status) = status {
                let patch = Patch::Merge(json!({"status": status}));
                pod = pods.patch_status(&name, &PatchParams::default(), &patch).await.expect("status written");
            }
            if let Some(grace) = grace {
                let params = DeleteParams { grace_period_seconds: Some(grace), ..DeleteParams::default() };
                pod = pods.delete(&name, &params).await.expect("deleted").left().expect("a graceful deletion");
            }
            pod
        })
    }

    /// Deletes `name` at once, as the admin.
    fn admin_delete_now(&self, name: &str) {
        let params = DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() };
        self.runtime.block_on(self.admin_pods().delete(name, &params)).expect("deleted");
    }

    /// Whether the admin still finds the pod `name`.
    fn exists(&self, name: &str) -> bool {
        self.runtime.block_on(self.admin_pods().get_opt(name)).expect("admin get").is_some()
    }

    /// Waits until `n1`'s GET of `name` succeeds (`readable`) or is refused: the Node
    /// authorizer learns of pods from a watch of its own.
    fn wait_node_reads(&self, name: &str, readable: bool) {
        let pods = self.node_pods(NAMESPACE);
        let deadline = Instant::now() + PATIENCE;
        loop {
            let read = self.node.runtime().block_on(pods.get(name));
            match &read {
                Result::Ok(_) if readable => return,
                Err(kube::Error::Api(status)) if status.code == 403 && !readable => return,
                _ if Instant::now() > deadline => panic!("{NODE} reading {name}: {read:?} after {PATIENCE:?}"),
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.plane.kill();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A pod bound to `node`: one container, a label and an annotation.
fn pod_json(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "reach"}, "annotations": {"owner": "reach"}},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "registry.example/app:1"}]},
    })
}

/// A status with phase `phase`, the IPs given (skipped when empty), the container `app`
/// running or terminated, and the message `m` that the requests write (a write may
/// carry only what the node reported: docs/sandbox.md, "Content").
fn status(phase: &str, pod_ip: &str, host_ip: &str, running: bool) -> Value {
    let state = if running {
        json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}})
    } else {
        json!({"terminated": {"exitCode": 1, "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:01:00Z"}})
    };
    let mut status = json!({
        "phase": phase,
        "message": "m",
        "containerStatuses": [{"name": "app", "image": "registry.example/app:1", "imageID": "", "ready": running,
                               "restartCount": 0, "state": state}],
    });
    for (key, ip) in [("podIP", pod_ip), ("hostIP", host_ip)] {
        if !ip.is_empty() {
            status[key] = json!(ip);
            status[format!("{key}s")] = json!([{"ip": ip}]);
        }
    }
    status
}

fn pod_status(status: &Value) -> PodStatus {
    serde_json::from_value(status.clone()).expect("a status")
}

/// The pods of one scene, as the API server has them, and `n1`'s guard over them.
struct Scene {
    own: Pod,
    bound: Pod,
    going: Pod,
    stopping: Pod,
    failed: Pod,
    mirror: Pod,
    other: Pod,
    gone: String,
    recreated: Pod,
    guard: GuardedApiServer,
}

impl Scene {
    /// A scene of fresh pods, the node's pod manager and host view filled as the agent
    /// fills them, once `n1`'s authorizer sees them.
    fn new(cluster: &Cluster) -> Scene {
        let n = cluster.scenes.get() + 1;
        cluster.scenes.set(n);
        let name = |role: &str| format!("{role}-{n}");
        let running = status("Running", POD_IP, HOST_IP, true);
        let own = cluster.admin_pod(pod_json(&name("own"), NODE), Some(running.clone()), None);
        let bound = cluster.admin_pod(pod_json(&name("bound"), NODE), None, None);
        let stopped = status("Running", POD_IP, HOST_IP, false);
        let going = cluster.admin_pod(pod_json(&name("going"), NODE), Some(stopped.clone()), Some(3600));
        let stopping = cluster.admin_pod(pod_json(&name("stopping"), NODE), Some(running.clone()), Some(3600));
        let failed_status = status("Failed", POD_IP, HOST_IP, false);
        let failed = cluster.admin_pod(pod_json(&name("failed"), NODE), Some(failed_status.clone()), None);
        let static_status = status("Running", HOST_IP, HOST_IP, true);
        let mirror_annotations = json!({"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": "h",
                                        "kubernetes.io/config.mirror": "h"});
        let mut mirror = pod_json(&name("mirror"), NODE);
        mirror["metadata"]["annotations"] = mirror_annotations;
        let mirror = cluster.admin_pod(mirror, Some(static_status.clone()), None);
        let other_status = status("Running", "10.2.0.7", "192.168.1.2", true);
        let other = cluster.admin_pod(pod_json(&name("other"), OTHER_NODE), Some(other_status), None);
        let gone_status = status("Running", "10.1.0.9", HOST_IP, true);
        let gone = cluster.admin_pod(pod_json(&name("gone"), NODE), Some(gone_status.clone()), None);
        let first = cluster.admin_pod(pod_json(&name("recreated"), NODE), Some(running.clone()), None);
        cluster.admin_delete_now(&name("recreated"));
        let recreated = cluster.admin_pod(pod_json(&name("recreated"), NODE), Some(running.clone()), None);

        // What n1's watch delivered (not `bound` yet; `gone` no more) and its static pod.
        let pod_manager = Arc::new(PodManager::new());
        let mut static_pod = mirror.clone();
        let annotations = static_pod.metadata.annotations.get_or_insert_default();
        annotations.remove("kubernetes.io/config.mirror");
        static_pod.metadata.uid = Some(format!("static-{n}"));
        for pod in [&own, &going, &stopping, &failed, &mirror, &static_pod, &first] {
            pod_manager.add_pod(pod.clone());
        }
        // What the node reported.
        let host_view = Arc::new(HostView::new(Arc::new(ContainersStopped)));
        host_view.report_status(&own, &pod_status(&running));
        host_view.report_status(&going, &pod_status(&stopped));
        host_view.report_termination(&going);
        host_view.report_status(&stopping, &pod_status(&running));
        host_view.report_status(&failed, &pod_status(&failed_status));
        host_view.report_status(&static_pod, &pod_status(&static_status));
        host_view.report_status(&gone, &pod_status(&gone_status));
        host_view.report_status(&first, &pod_status(&running));
        let gone = gone.metadata.name.clone().expect("a name");
        cluster.admin_delete_now(&gone);

        // As `World::guarded` builds it for `podstatus agent --node-name n1`.
        let inner: Arc<dyn ApiServer> = Arc::clone(&cluster.kube) as Arc<dyn ApiServer>;
        let guard = GuardedApiServer::new(inner, pod_manager, Some(NODE.into()), host_view);
        for pod in [&own, &bound, &going, &stopping, &failed, &mirror, &recreated] {
            cluster.wait_node_reads(pod.metadata.name.as_deref().expect("a name"), true);
        }
        cluster.wait_node_reads(&gone, false);
        Scene { own, bound, going, stopping, failed, mirror, other, gone, recreated, guard }
    }

    fn pod(&self, target: Target) -> Option<&Pod> {
        match target {
            Own => Some(&self.own),
            Bound => Some(&self.bound),
            Going => Some(&self.going),
            Stopping => Some(&self.stopping),
            Failed => Some(&self.failed),
            Mirror => Some(&self.mirror),
            Other => Some(&self.other),
            Recreated => Some(&self.recreated),
            Gone | Unknown | Raw(..) | LongName => None,
        }
    }

    /// The namespace and name `target` stands for.
    fn names(&self, target: Target) -> (String, String) {
        match (target, self.pod(target)) {
            (_, Some(pod)) => (NAMESPACE.into(), pod.metadata.name.clone().expect("a name")),
            (Gone, None) => (NAMESPACE.into(), self.gone.clone()),
            (Raw(namespace, name), None) => (namespace.into(), name.into()),
            (LongName, None) => (NAMESPACE.into(), "a".repeat(254)),
            _ => (NAMESPACE.into(), "ghost".into()),
        }
    }

    fn uid(&self, target: Target, uid: Uid) -> Option<String> {
        match uid {
            Uid::None => None,
            Uid::Its => Some(self.pod(target).and_then(|pod| pod.metadata.uid.clone()).expect("a pod with a UID")),
            Uid::Wrong => Some(WRONG_UID.into()),
            Uid::OtherNodes => self.other.metadata.uid.clone(),
        }
    }
}

/// `call` through `api`, against `scene`.
fn send(api: &dyn ApiServer, scene: &Scene, call: Call) -> Result<Arc<Pod>, ApiError> {
    match call {
        Call::Get(target) => {
            let (namespace, name) = scene.names(target);
            api.get_pod(&namespace, &name)
        }
        Call::Update(target, uid, status) => {
            let (namespace, name) = scene.names(target);
            let status = serde_json::from_str(status).expect("a status");
            let uid_precondition = scene.uid(target, uid);
            api.update_pod_status(StatusUpdate {
                namespace,
                name,
                uid_precondition,
                resource_version_precondition: None,
                status,
            })
        }
        Call::Patch(target, uid, body) => {
            let (namespace, name) = scene.names(target);
            let patch = serde_json::from_str(body).expect("a patch");
            api.patch_pod_status(StatusPatch { namespace, name, uid_precondition: scene.uid(target, uid), patch })
        }
        Call::Delete(target, uid, grace) => {
            let (namespace, name) = scene.names(target);
            let options = DeleteOptions {
                uid_precondition: scene.uid(target, uid),
                grace_period_seconds: Some(grace),
                resource_version_precondition: None,
            };
            api.delete_pod(&namespace, &name, &options)
        }
    }
}

/// `call` as `n1` with kube-rs directly, the namespace and name percent-encoded: for
/// names the agent's client refuses to send.
fn send_raw(cluster: &Cluster, scene: &Scene, call: Call) -> Result<(), (u16, String)> {
    let target = match call {
        Call::Get(target) | Call::Update(target, ..) | Call::Patch(target, ..) | Call::Delete(target, ..) => target,
    };
    let (namespace, name) = scene.names(target);
    let (pods, name) = (cluster.node_pods(&percent_encoded(&namespace)), percent_encoded(&name));
    let sent = cluster.node.runtime().block_on(async {
        match call {
            Call::Get(_) => pods.get(&name).await.map(drop),
            Call::Patch(_, _, body) => {
                let body: Value = serde_json::from_str(body).expect("a patch");
                pods.patch_status(&name, &PatchParams::default(), &Patch::Strategic(body)).await.map(drop)
            }
            Call::Delete(_, _, grace) => {
                let params =
                    DeleteParams { grace_period_seconds: Some(grace.try_into().expect("grace")), ..Default::default() };
                pods.delete(&name, &params).await.map(drop)
            }
            Call::Update(..) => unimplemented!("no raw status update in the table"),
        }
    });
    sent.map_err(|error| match error {
        kube::Error::Api(status) => (status.code, status.message),
        other => (0, other.to_string()),
    })
}

/// Every byte but the unreserved ones as `%XX`.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The answer a request got; a successful delete is [`Answer::OkKept`] when the pod is
/// still there.
fn answer_of(cluster: &Cluster, scene: &Scene, call: Call, result: Result<(), ApiError>) -> (Answer, String) {
    match result {
        Result::Ok(()) => match call {
            Call::Delete(target, ..) if cluster.exists(&scene.names(target).1) => (OkKept, String::new()),
            _ => (Ok, String::new()),
        },
        Err(error) => {
            let answer = match &error {
                ApiError::Forbidden { .. } => Forbidden,
                ApiError::NotFound { .. } => NotFound,
                ApiError::Conflict { .. } => Conflict,
                ApiError::Invalid { .. } => Invalid,
                _ => Answer::Other,
            };
            (answer, error.to_string())
        }
    }
}

/// What the guard answered `call` in `scene`.
fn through_guard(cluster: &Cluster, scene: &Scene, call: Call) -> (Answer, String) {
    let before = scene.guard.refusals().total();
    let result = send(&scene.guard, scene, call).map(drop);
    let refused = scene.guard.refusals().total() > before;
    match answer_of(cluster, scene, call, result) {
        (Forbidden, message) if refused => (Refused, message),
        (answer, message) => {
            assert!(!refused, "a refusal answered {answer:?}: {message}");
            (answer, message)
        }
    }
}

/// What the server answered `n1`'s `call` in `scene`.
fn as_the_node(cluster: &Cluster, scene: &Scene, call: Call) -> (Answer, String) {
    let target = match call {
        Call::Get(target) | Call::Update(target, ..) | Call::Patch(target, ..) | Call::Delete(target, ..) => target,
    };
    if !matches!(target, Raw(..) | LongName) {
        return answer_of(cluster, scene, call, send(&*cluster.kube, scene, call).map(drop));
    }
    let result = send_raw(cluster, scene, call).map_err(|(code, message)| match code {
        403 => ApiError::Forbidden { message },
        404 => ApiError::NotFound { namespace: String::new(), name: message },
        409 => ApiError::Conflict { message },
        400 | 422 => ApiError::Invalid { message },
        _ => ApiError::Internal { message: format!("{message} (HTTP {code})") },
    });
    answer_of(cluster, scene, call, result)
}

/// The table as docs/sandbox.md holds it.
fn rendered(rows: &[(&Case, Answer, Answer)]) -> String {
    let mut table = String::from(
        "| Request (as node `n1`) | The guard | kube-apiserver 1.35 as the node | Why they differ |\n|---|---|---|---|\n",
    );
    for (case, guard, real) in rows {
        table.push_str(&format!("| {} | {} | {} | {} |\n", case.request, guard.as_str(), real.as_str(), case.why));
    }
    table
}

#[test]
fn the_reach_guard_beside_the_node_authorizer() {
    let started = Instant::now();
    let cluster = Cluster::start();
    let ready = started.elapsed();
    let mut scene = Scene::new(&cluster);
    let mut rows = Vec::new();
    let mut messages = Vec::new();
    for case in CASES {
        assert_eq!(case.why.is_empty(), case.guard.agrees_with(case.real), "{}: a difference says why", case.request);
        let (guard, guard_message) = through_guard(&cluster, &scene, case.call);
        if matches!(guard, Ok | OkKept) && !matches!(case.call, Call::Get(_)) {
            scene = Scene::new(&cluster);
        }
        let (real, real_message) = as_the_node(&cluster, &scene, case.call);
        if matches!(real, Ok | OkKept) && !matches!(case.call, Call::Get(_)) {
            scene = Scene::new(&cluster);
        }
        rows.push((case, guard, real));
        messages.push(format!("{}\n  guard: {guard_message}\n  real:  {real_message}", case.request));
    }
    let table = rendered(&rows);
    eprintln!("{table}");
    eprintln!("{}", messages.join("\n"));
    eprintln!(
        "{} requests, {} scenes, {:.1?} (the control plane ready in {ready:.1?})",
        CASES.len(),
        cluster.scenes.get(),
        started.elapsed()
    );
    let expected: Vec<_> = CASES.iter().map(|case| (case.request, case.guard, case.real)).collect();
    let actual: Vec<_> = rows.iter().map(|(case, guard, real)| (case.request, *guard, *real)).collect();
    assert_eq!(actual, expected, "the table changed; the answers are above");

    let docs = podstatus_tests::workspace_dir().join("docs/sandbox.md");
    let text = std::fs::read_to_string(&docs).expect("docs/sandbox.md");
    assert!(text.contains(&table), "docs/sandbox.md does not hold the table as the test renders it:\n{table}");
}
