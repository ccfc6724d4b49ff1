//! Logic v4's conformance cases through the real `podstatus-v4` component (contract
//! 0.2.1): the cases of `guest/logic-v4/tests/upstream.rs`, which follow Kubernetes
//! 1.35's `pkg/kubelet/status/status_manager_test.go` and `generate_test.go`, run here
//! against the plugin as the host loads it, so what the native manager does is what the
//! shipped component does. Each test names the upstream test it follows in a comment.
//!
//! Upstream's fixtures: `getTestPod()` is `new/foo` with UID `12345678`; its generation
//! is set where the case needs one. The world is an in-memory API server and pod
//! manager holding the pod, on a clock that moves only when a case moves it.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::{ApiServer, MemoryApiServer, Timestamp, VirtualClock};
use podstatus_plugins::{PODSTATUS_V2, PODSTATUS_V4};
use podstatus_runtime::bindings::{SyncOutcome, UpdateOutcome};
use podstatus_runtime::{ComponentPlugin, Contract, Plugin, PluginExt, ResizeCondition, World};
use podstatus_tests::{load, memory_world};
use serde_json::{Value, json};

const UID: &str = "12345678";

/// The plugin under test, its world's API server and its clock.
struct Case {
    plugin: ComponentPlugin,
    api: Arc<MemoryApiServer>,
    clock: Arc<VirtualClock>,
}

/// Upstream's `getTestPod()` at `generation`: `new/foo`, one container `app`.
fn test_pod(generation: i64) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "new", "name": "foo", "uid": UID, "generation": generation,
            "annotations": {"kubernetes.io/config.source": "api"}},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]}
    })
}

/// `pod` with init containers `init` and `proxy`, `proxy` a sidecar (restartPolicy Always).
fn with_sidecar(mut pod: Value) -> Value {
    pod["spec"]["initContainers"] = json!([{"name": "init", "image": "busybox"},
        {"name": "proxy", "image": "busybox", "restartPolicy": "Always"}]);
    pod
}

fn with_status(mut pod: Value, status: Value) -> Value {
    pod["status"] = status;
    pod
}

/// A running container status, as the runtime reports one.
fn container(name: &str, ready: bool) -> Value {
    json!({"name": name, "containerID": format!("containerd://{name}"), "image": "busybox", "imageID": "",
        "ready": ready, "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:03Z"}}})
}

fn world_with(pod: &Value) -> (Arc<MemoryApiServer>, Arc<VirtualClock>, World) {
    let pod: Pod = serde_json::from_value(pod.clone()).expect("a valid test pod");
    let (api, mut world) = memory_world([pod], true, 64);
    let clock = Arc::new(VirtualClock::new(Timestamp { seconds: 1_700_000_000, nanoseconds: 0 }));
    world.clock = clock.clone();
    (api, clock, world)
}

/// The v4 component over a world holding `pod`.
fn case_with(pod: &Value) -> Case {
    let (api, clock, world) = world_with(pod);
    let image = load(PODSTATUS_V4);
    assert_eq!(image.contract(), Contract::V0_2_1);
    Case { plugin: image.instantiate(world).expect("an instance"), api, clock }
}

impl Case {
    fn set(&mut self, pod: &Value, status: &Value) -> UpdateOutcome {
        self.plugin.set_pod_status(&pod.to_string(), &status.to_string()).expect("set-pod-status")
    }

    fn status(&mut self) -> Value {
        let cached = self.plugin.get_pod_status(UID).expect("get-pod-status").expect("cached");
        serde_json::from_str(&cached.status).expect("status JSON")
    }

    fn version(&mut self) -> u64 {
        self.plugin.get_pod_status(UID).expect("get-pod-status").expect("cached").version
    }

    /// Every queued request, synced (split syncs, the host making the calls).
    fn drain(&mut self) -> Vec<SyncOutcome> {
        let queue = self.plugin.world().queue.clone();
        let mut outcomes = Vec::new();
        while let Some(request) = queue.pop() {
            outcomes.push(self.plugin.sync_pod(&request).expect("sync-pod"));
        }
        outcomes
    }

    /// The API server's status of `new/foo`.
    fn api_status(&self) -> Value {
        let pod = self.api.get_pod("new", "foo").expect("the pod is stored");
        serde_json::to_value(pod.status.clone().unwrap_or_default()).expect("status JSON")
    }
}

fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == type_)).unwrap_or(&Value::Null)
}

// Upstream: TestNewStatus (1.35 sets status.observedGeneration in SetPodStatus).
#[test]
fn test_new_status_sets_observed_generation() {
    let pod = test_pod(3);
    let mut case = case_with(&pod);
    assert_eq!(case.set(&pod, &json!({"phase": "Running"})), UpdateOutcome::Queued);
    assert_eq!(case.status()["observedGeneration"], json!(3));
    assert_eq!(case.drain(), [SyncOutcome::Written]);
    let api = case.api_status();
    assert_eq!((api["phase"].clone(), api["observedGeneration"].clone()), (json!("Running"), json!(3)));
}

// Upstream: TestNewStatus with a pod of generation 0: nothing to observe, nothing written.
#[test]
fn test_new_status_without_generation_omits_observed_generation() {
    let mut pod = test_pod(0);
    pod["metadata"].as_object_mut().expect("metadata").remove("generation");
    let mut case = case_with(&pod);
    case.set(&pod, &json!({"phase": "Running"}));
    assert!(case.status().get("observedGeneration").is_none());
    case.drain();
    assert!(case.api_status().get("observedGeneration").is_none());
}

// Upstream: updateStatusInternal's "prevent sending unnecessary patches" (TestChangedStatus style).
#[test]
fn test_changed_status_never_moves_observed_generation_backwards() {
    let mut case = case_with(&test_pod(5));
    case.set(&test_pod(5), &json!({"phase": "Running"}));
    case.set(&test_pod(4), &json!({"phase": "Running", "message": "from an older pod"}));
    let status = case.status();
    assert_eq!(
        (status["observedGeneration"].clone(), status["message"].clone()),
        (json!(5), json!("from an older pod"))
    );
    // A newer generation alone is a new version (the status's own field is compared).
    let before = case.version();
    case.set(&test_pod(6), &json!({"phase": "Running", "message": "from an older pod"}));
    assert_eq!(case.version(), before + 1);
    assert_eq!(case.status()["observedGeneration"], json!(6));
}

// Upstream: TestNewStatusSetsReadyTransitionTime, for PodReadyToStartContainers (KEP-3085).
#[test]
fn test_pod_ready_to_start_containers_keeps_its_transition_time() {
    let pod = test_pod(1);
    let mut case = case_with(&pod);
    let ready_to_start =
        |status: &str| json!({"conditions": [{"type": "PodReadyToStartContainers", "status": status}]});
    case.set(&pod, &ready_to_start("True"));
    let first = condition(&case.status(), "PodReadyToStartContainers")["lastTransitionTime"].clone();
    assert!(first.is_string(), "{first}");
    case.clock.advance(Duration::from_secs(5000));
    let with_message = json!({"message": "m", "conditions": [{"type": "PodReadyToStartContainers", "status": "True"}]});
    case.set(&pod, &with_message);
    assert_eq!(condition(&case.status(), "PodReadyToStartContainers")["lastTransitionTime"], first);
    case.set(&pod, &ready_to_start("False"));
    assert_ne!(condition(&case.status(), "PodReadyToStartContainers")["lastTransitionTime"], first);
}

// Upstream: TestSetContainerReadiness, with a sidecar and the pod's generation on the conditions.
#[test]
fn test_set_container_readiness_counts_sidecars_and_sets_observed_generation() {
    let pod = with_sidecar(test_pod(2));
    let mut case = case_with(&pod);
    let mut proxy = container("proxy", false);
    proxy["started"] = json!(true);
    let status = json!({"phase": "Running",
        "initContainerStatuses": [container("init", false), proxy],
        "containerStatuses": [container("app", true)],
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "False"}]});
    case.set(&pod, &status);
    case.plugin.set_container_readiness(UID, "containerd://app", false).expect("readiness");
    case.plugin.set_container_readiness(UID, "containerd://app", true).expect("readiness");
    let status = case.status();
    assert_eq!(condition(&status, "Ready")["message"], json!("containers with unready status: [proxy]"));
    assert_eq!(condition(&status, "Ready")["observedGeneration"], json!(2));
    // The sidecar's own readiness, found among the init container statuses.
    let outcome = case.plugin.set_container_readiness(UID, "containerd://proxy", true).expect("readiness");
    assert_eq!(outcome, UpdateOutcome::Queued);
    let status = case.status();
    assert_eq!(condition(&status, "Ready")["status"], json!("True"));
    assert_eq!(condition(&status, "ContainersReady")["observedGeneration"], json!(2));
}

// Upstream: TestTerminatePod_DefaultUnknownStatus ("sidecar running and started initializes the pod").
#[test]
fn test_terminate_pod_default_unknown_status_with_a_started_sidecar() {
    let mut running_proxy = container("proxy", true);
    running_proxy["started"] = json!(true);
    let mut init = container("init", false);
    init["state"] = json!({"terminated": {"exitCode": 0}});
    let status = json!({"phase": "Running", "initContainerStatuses": [init, running_proxy],
        "containerStatuses": [{"name": "app", "image": "busybox", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"waiting": {}}}]});
    let pod = with_status(with_sidecar(test_pod(1)), status.clone());
    let mut case = case_with(&pod);
    case.plugin.terminate_pod(&pod.to_string()).expect("terminate-pod");
    let cached = case.status();
    assert_eq!(cached["containerStatuses"][0]["state"]["terminated"]["exitCode"], json!(137), "{cached}");

    // The same sidecar not started yet: the pod has not initialized, app keeps waiting.
    let mut not_started = status;
    not_started["initContainerStatuses"][1]["started"] = json!(false);
    let pod = with_status(with_sidecar(test_pod(1)), not_started);
    let mut case = case_with(&pod);
    case.plugin.terminate_pod(&pod.to_string()).expect("terminate-pod");
    let cached = case.status();
    assert!(cached["containerStatuses"][0]["state"]["waiting"].is_object(), "{cached}");
}

// Upstream: checkContainerStateTransition's cases (TestStaleUpdates / "illegal transition" cases).
#[test]
fn test_check_container_state_transition_over_init_containers() {
    let mut pod = with_sidecar(test_pod(1));
    pod["spec"]["restartPolicy"] = json!("Never");
    let mut case = case_with(&pod);
    let done = |name: &str| json!({"name": name, "state": {"terminated": {"exitCode": 0}}});
    let running = |name: &str| json!({"name": name, "state": {"running": {}}});
    case.set(&pod, &json!({"initContainerStatuses": [done("init"), done("proxy")]}));
    let version = case.version();
    // A plain init container may not run again.
    let refused = case.set(&pod, &json!({"initContainerStatuses": [running("init"), done("proxy")]}));
    assert_eq!((refused, case.version()), (UpdateOutcome::Unchanged, version));
    // The sidecar may.
    let accepted = case.set(&pod, &json!({"initContainerStatuses": [done("init"), running("proxy")]}));
    assert_eq!((accepted, case.version()), (UpdateOutcome::Queued, version + 1));
}

// Upstream: checkContainerStateTransition's "found mismatch between pod spec and status".
#[test]
fn test_check_container_state_transition_refuses_a_status_out_of_step_with_the_spec() {
    let mut pod = test_pod(1);
    pod["spec"]["restartPolicy"] = json!("Never");
    pod["spec"]["initContainers"] = json!([{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]);
    // The pod's own status (what an uncached pod starts from) names init containers
    // in another order than the spec: every later update is refused.
    let pod = with_status(pod, json!({"initContainerStatuses": [{"name": "b"}, {"name": "a"}]}));
    let mut case = case_with(&pod);
    assert_eq!(case.set(&pod, &json!({"phase": "Pending"})), UpdateOutcome::Unchanged);
    assert!(case.plugin.get_pod_status(UID).expect("get-pod-status").is_none());
}

// Upstream: TestStatusEquality (1.35's isPodStatusByKubeletEqual compares both ways).
#[test]
fn test_status_equality_a_removed_kubelet_condition_is_a_change() {
    let pod = test_pod(1);
    let mut case = case_with(&pod);
    let both = json!({"conditions": [{"type": "Ready", "status": "True"},
        {"type": "PodResizePending", "status": "True", "reason": "Deferred"}]});
    case.set(&pod, &both);
    let version = case.version();
    case.set(&pod, &json!({"conditions": [{"type": "Ready", "status": "True"}]}));
    assert_eq!(case.version(), version + 1, "dropping PodResizePending is a new version");
    // A foreign condition changing is not.
    let foreign =
        json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/x", "status": "True"}]});
    assert_eq!(case.set(&pod, &foreign), UpdateOutcome::Unchanged);
    assert_eq!(case.version(), version + 1);
}

// Upstream: TestMergePodStatus ("resource claim statuses are not owned by the kubelet").
#[test]
fn test_merge_pod_status_keeps_the_api_servers_resource_claim_statuses() {
    let claims = json!([{"name": "gpu", "resourceClaimName": "foo-gpu"}]);
    let pod = with_status(test_pod(1), json!({"phase": "Pending", "resourceClaimStatuses": claims}));
    let mut case = case_with(&pod);
    case.set(&pod, &json!({"phase": "Running", "resourceClaimStatuses": [{"name": "mine"}]}));
    assert_eq!(case.drain(), [SyncOutcome::Written]);
    let api = case.api_status();
    assert_eq!((api["phase"].clone(), api["resourceClaimStatuses"].clone()), (json!("Running"), claims));
}

// Upstream: TestPodResizeConditions.
#[test]
fn test_pod_resize_conditions() {
    let mut case = case_with(&test_pod(1));
    let uid = "12345";
    let summary = |plugin: &mut ComponentPlugin| -> Vec<Value> {
        let conditions = plugin.get_pod_resize_conditions(uid).expect("the conditions");
        conditions
            .iter()
            .map(|c| {
                let c: Value = serde_json::from_str(c).expect("condition JSON");
                json!([c["type"], c["status"], c["reason"], c["message"]])
            })
            .collect()
    };
    let plugin = &mut case.plugin;
    assert!(summary(plugin).is_empty(), "initial empty conditions");
    plugin.set_pod_resize_condition(uid, ResizeCondition::InProgress, "some-reason", "some-message", 0).expect("set");
    assert_eq!(summary(plugin), [json!(["PodResizeInProgress", "True", "some-reason", "some-message"])]);
    // "without reason and message": upstream's newer manager keeps the old ones then.
    plugin.set_pod_resize_condition(uid, ResizeCondition::InProgress, "", "", 0).expect("set");
    assert_eq!(summary(plugin), [json!(["PodResizeInProgress", "True", "some-reason", "some-message"])]);
    plugin.set_pod_resize_condition(uid, ResizeCondition::Pending, "some-reason", "some-message", 0).expect("set");
    let both = summary(plugin);
    assert_eq!(both.len(), 2);
    assert_eq!(both[0][0], json!("PodResizePending"), "pending first");
    assert!(plugin.clear_pod_resize_condition(uid, ResizeCondition::InProgress).expect("clear"));
    assert_eq!(summary(plugin), [json!(["PodResizePending", "True", "some-reason", "some-message"])]);
    assert!(plugin.clear_pod_resize_condition(uid, ResizeCondition::Pending).expect("clear"));
    assert!(summary(plugin).is_empty());
}

// Upstream: deletePodStatus / RemoveOrphanedStatuses with InPlacePodVerticalScaling.
#[test]
fn test_remove_orphaned_statuses_drops_resize_conditions() {
    let pod = test_pod(1);
    let mut case = case_with(&pod);
    case.set(&pod, &json!({"phase": "Running"}));
    case.plugin.set_pod_resize_condition(UID, ResizeCondition::Pending, "Deferred", "", 1).expect("set");
    assert_eq!(case.plugin.remove_orphaned_statuses(&[]).expect("remove"), 1);
    assert!(case.plugin.get_pod_resize_conditions(UID).expect("the conditions").is_empty());
}

// Not upstream: a swap to the v2 component and back keeps the resize conditions and
// observedGeneration (v2 carries what it does not know untouched).
#[test]
fn a_swap_through_v2_keeps_resize_conditions_and_observed_generation() {
    let pod = test_pod(4);
    let mut case = case_with(&pod);
    case.set(&pod, &json!({"phase": "Running"}));
    case.plugin.set_pod_resize_condition(UID, ResizeCondition::Pending, "Infeasible", "too big", 4).expect("set");
    let before = case.plugin.get_pod_resize_conditions(UID).expect("the conditions");
    let state = case.plugin.save_state().expect("save-state");

    let (_, _, world) = world_with(&pod);
    let mut v2 = load(PODSTATUS_V2).instantiate(world.clone()).expect("a v2 instance");
    v2.load_state(&state).expect("v2 loads v4's state");
    let through_v2 = v2.save_state().expect("save-state");
    assert_eq!(through_v2, state, "v2 carries what it does not know untouched");

    let mut back = load(PODSTATUS_V4).instantiate(world).expect("a v4 instance");
    back.load_state(&through_v2).expect("v4 loads it back");
    assert_eq!(back.get_pod_resize_conditions(UID).expect("the conditions"), before);
    let cached = back.get_pod_status(UID).expect("get-pod-status").expect("cached");
    let status: Value = serde_json::from_str(&cached.status).expect("status JSON");
    assert_eq!(status["observedGeneration"], json!(4));
}

// Not upstream: what the v2 component does with v4's observedGeneration after a swap
// (docs/logic-versions.md): its next write drops it.
#[test]
fn after_a_swap_v2_clears_observed_generation_with_its_next_write() {
    let pod = test_pod(4);
    let mut case = case_with(&pod);
    case.set(&pod, &json!({"phase": "Running"}));
    assert_eq!(case.drain(), [SyncOutcome::Written]);
    let written = case.api_status();
    assert_eq!(written["observedGeneration"], json!(4));
    let state = case.plugin.save_state().expect("save-state");

    let (api, _, world) = world_with(&with_status(pod.clone(), written));
    let mut v2 = load(PODSTATUS_V2).instantiate(world.clone()).expect("a v2 instance");
    v2.load_state(&state).expect("v2 loads v4's state");
    let outcome = v2.set_pod_status(&pod.to_string(), &json!({"phase": "Running"}).to_string()).expect("set");
    assert_eq!(outcome, UpdateOutcome::Queued, "losing observedGeneration is a new version");
    while let Some(request) = world.queue.pop() {
        v2.sync_pod(&request).expect("sync-pod");
    }
    let stored = api.get_pod("new", "foo").expect("the pod is stored");
    let status = serde_json::to_value(stored.status.clone().unwrap_or_default()).expect("status JSON");
    assert_eq!(status["phase"], json!("Running"));
    assert!(status.get("observedGeneration").is_none(), "{status}");
}
