//! Cases of Kubernetes 1.35's `pkg/kubelet/status/status_manager_test.go` and
//! `generate_test.go` that show what v4 changes, each named after the upstream test it
//! follows (the upstream name in a comment). Native, over the shared fake world; the
//! same cases run through the real `podstatus-v4` component in
//! `tests/all/conformance_v4.rs`.
//!
//! Upstream's fixtures: `getTestPod()` is `new/foo` with UID `12345678`; its generation
//! is set where the case needs one. Upstream's `FakePodDeletionSafetyProvider` says no
//! container runs (the fake world's default).

use podstatus_logic::{ResizeCondition, StatusManager};
use podstatus_logic_testing::{
    FakeWorld, Verb, container, pod, with_init_containers, with_restart_policy, with_status,
};
use podstatus_logic_v4::{Manager, UpdateOutcome};
use serde_json::{Value, json};

type M = Manager<FakeWorld>;
const UID: &str = "12345678";

fn test_pod(generation: i64) -> Value {
    let mut pod = pod("new", "foo", UID, &["app"]);
    pod["metadata"]["generation"] = json!(generation);
    pod
}

fn manager_with(pod: &Value) -> M {
    let mut world = FakeWorld::v2();
    world.add_pod(pod.clone());
    Manager::new(world)
}

fn set(m: &mut M, pod: &Value, status: &Value) -> UpdateOutcome {
    m.set_pod_status(&pod.to_string(), &status.to_string()).unwrap()
}

fn status_of(m: &mut M) -> Value {
    serde_json::from_str(&m.get_pod_status(UID).unwrap().expect("cached").status).unwrap()
}

fn version_of(m: &mut M) -> u64 {
    m.get_pod_status(UID).unwrap().expect("cached").version
}

fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == type_)).unwrap_or(&Value::Null)
}

/// Every queued request to `sync_pod`, as the host's scheduler does.
fn drain(m: &mut M) {
    while let Some(request) = m.imports_mut().pop_request() {
        m.sync_pod(&request).unwrap();
    }
}

fn with_sidecar(pod: Value) -> Value {
    let mut pod = with_init_containers(pod, &["init", "proxy"]);
    pod["spec"]["initContainers"][1]["restartPolicy"] = json!("Always");
    pod
}

// Upstream: TestNewStatus (1.35 sets status.observedGeneration in SetPodStatus).
#[test]
fn test_new_status_sets_observed_generation() {
    let pod = test_pod(3);
    let mut m = manager_with(&pod);
    set(&mut m, &pod, &json!({"phase": "Running"}));
    assert_eq!(status_of(&mut m)["observedGeneration"], json!(3));
    drain(&mut m);
    // Written with one PATCH and no GET, as v3 writes.
    assert_eq!(m.imports_mut().take_verbs(), [Verb::PatchPodStatus]);
    assert_eq!(m.imports_mut().api_status("new", "foo")["observedGeneration"], json!(3));
}

// Upstream: TestNewStatus with a pod of generation 0: nothing to observe, nothing written.
#[test]
fn test_new_status_without_generation_omits_observed_generation() {
    let mut pod = test_pod(0);
    pod["metadata"].as_object_mut().unwrap().remove("generation");
    let mut m = manager_with(&pod);
    set(&mut m, &pod, &json!({"phase": "Running"}));
    assert!(status_of(&mut m).get("observedGeneration").is_none());
}

// Upstream: updateStatusInternal's "prevent sending unnecessary patches" (TestChangedStatus style).
#[test]
fn test_changed_status_never_moves_observed_generation_backwards() {
    let mut m = manager_with(&test_pod(5));
    set(&mut m, &test_pod(5), &json!({"phase": "Running"}));
    set(&mut m, &test_pod(4), &json!({"phase": "Running", "message": "from an older pod"}));
    let status = status_of(&mut m);
    assert_eq!(
        (status["observedGeneration"].clone(), status["message"].clone()),
        (json!(5), json!("from an older pod"))
    );
    // A newer generation alone is a new version (the status's own field is compared).
    let before = version_of(&mut m);
    set(&mut m, &test_pod(6), &json!({"phase": "Running", "message": "from an older pod"}));
    assert_eq!(version_of(&mut m), before + 1);
}

// Upstream: TestNewStatusSetsReadyTransitionTime, for PodReadyToStartContainers (KEP-3085).
#[test]
fn test_pod_ready_to_start_containers_keeps_its_transition_time() {
    let pod = test_pod(1);
    let mut m = manager_with(&pod);
    let ready_to_start =
        |status: &str| json!({"conditions": [{"type": "PodReadyToStartContainers", "status": status}]});
    set(&mut m, &pod, &ready_to_start("True"));
    let first = condition(&status_of(&mut m), "PodReadyToStartContainers")["lastTransitionTime"].clone();
    assert!(first.is_string());
    m.imports_mut().set_now(podstatus_logic_testing::T0 + 5000, 0);
    set(
        &mut m,
        &pod,
        &json!({"message": "m", "conditions": [{"type": "PodReadyToStartContainers", "status": "True"}]}),
    );
    assert_eq!(condition(&status_of(&mut m), "PodReadyToStartContainers")["lastTransitionTime"], first);
    set(&mut m, &pod, &ready_to_start("False"));
    assert_ne!(condition(&status_of(&mut m), "PodReadyToStartContainers")["lastTransitionTime"], first);
}

// Upstream: TestSetContainerReadiness, with a sidecar and the pod's generation on the conditions.
#[test]
fn test_set_container_readiness_counts_sidecars_and_sets_observed_generation() {
    let pod = with_sidecar(test_pod(2));
    let mut m = manager_with(&pod);
    let mut proxy = container("proxy", false);
    proxy["started"] = json!(true);
    let status = json!({"phase": "Running",
        "initContainerStatuses": [container("init", false), proxy],
        "containerStatuses": [container("app", true)],
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "False"}]});
    set(&mut m, &pod, &status);
    m.set_container_readiness(UID, "containerd://app", false).unwrap();
    m.set_container_readiness(UID, "containerd://app", true).unwrap();
    let status = status_of(&mut m);
    assert_eq!(condition(&status, "Ready")["message"], json!("containers with unready status: [proxy]"));
    assert_eq!(condition(&status, "Ready")["observedGeneration"], json!(2));
    // The sidecar's own readiness, found among the init container statuses.
    assert_eq!(m.set_container_readiness(UID, "containerd://proxy", true).unwrap(), UpdateOutcome::Queued);
    let status = status_of(&mut m);
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
        "containerStatuses": [{"name": "app", "state": {"waiting": {}}}]});
    let pod = with_status(with_sidecar(test_pod(1)), status.clone());
    let mut m = manager_with(&pod);
    m.terminate_pod(&pod.to_string()).unwrap();
    let cached = status_of(&mut m);
    assert_eq!(cached["containerStatuses"][0]["state"]["terminated"]["exitCode"], json!(137), "{cached}");

    // The same sidecar not started yet: the pod has not initialized, app keeps waiting.
    let mut not_started = status;
    not_started["initContainerStatuses"][1]["started"] = json!(false);
    let pod = with_status(with_sidecar(test_pod(1)), not_started);
    let mut m = manager_with(&pod);
    m.terminate_pod(&pod.to_string()).unwrap();
    assert!(status_of(&mut m)["containerStatuses"][0]["state"]["waiting"].is_object());
}

// Upstream: checkContainerStateTransition's cases (TestStaleUpdates / "illegal transition" cases).
#[test]
fn test_check_container_state_transition_over_init_containers() {
    let pod = with_restart_policy(with_sidecar(test_pod(1)), "Never");
    let mut m = manager_with(&pod);
    let done = |name: &str| json!({"name": name, "state": {"terminated": {"exitCode": 0}}});
    let running = |name: &str| json!({"name": name, "state": {"running": {}}});
    set(&mut m, &pod, &json!({"initContainerStatuses": [done("init"), done("proxy")]}));
    let version = version_of(&mut m);
    // A plain init container may not run again.
    let refused = set(&mut m, &pod, &json!({"initContainerStatuses": [running("init"), done("proxy")]}));
    assert_eq!((refused, version_of(&mut m)), (UpdateOutcome::Unchanged, version));
    // The sidecar may.
    let accepted = set(&mut m, &pod, &json!({"initContainerStatuses": [done("init"), running("proxy")]}));
    assert_eq!(accepted, UpdateOutcome::Queued);
}

// Upstream: checkContainerStateTransition's "found mismatch between pod spec and status".
#[test]
fn test_check_container_state_transition_refuses_a_status_out_of_step_with_the_spec() {
    let pod = with_restart_policy(with_init_containers(test_pod(1), &["a", "b"]), "Never");
    // The pod's own status (what an uncached pod starts from) names init containers
    // in another order than the spec: every later update is refused.
    let pod = with_status(pod, json!({"initContainerStatuses": [{"name": "b"}, {"name": "a"}]}));
    let mut m = manager_with(&pod);
    assert_eq!(set(&mut m, &pod, &json!({"phase": "Pending"})), UpdateOutcome::Unchanged);
    assert!(m.get_pod_status(UID).unwrap().is_none());
}

// Upstream: TestStatusEquality (1.35's isPodStatusByKubeletEqual compares both ways).
#[test]
fn test_status_equality_a_removed_kubelet_condition_is_a_change() {
    let pod = test_pod(1);
    let mut m = manager_with(&pod);
    let both = json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodResizePending", "status": "True", "reason": "Deferred"}]});
    set(&mut m, &pod, &both);
    let version = version_of(&mut m);
    set(&mut m, &pod, &json!({"conditions": [{"type": "Ready", "status": "True"}]}));
    assert_eq!(version_of(&mut m), version + 1, "dropping PodResizePending is a new version");
    // A foreign condition changing is not.
    set(
        &mut m,
        &pod,
        &json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/x", "status": "True"}]}),
    );
    assert_eq!(version_of(&mut m), version + 1);
}

// Upstream: TestMergePodStatus ("resource claim statuses are not owned by the kubelet").
#[test]
fn test_merge_pod_status_keeps_the_api_servers_resource_claim_statuses() {
    let claims = json!([{"name": "gpu", "resourceClaimName": "foo-gpu"}]);
    let pod = with_status(test_pod(1), json!({"phase": "Pending", "resourceClaimStatuses": claims}));
    let mut m = manager_with(&pod);
    set(&mut m, &pod, &json!({"phase": "Running", "resourceClaimStatuses": [{"name": "mine"}]}));
    drain(&mut m);
    let api = m.imports_mut().api_status("new", "foo");
    assert_eq!((api["phase"].clone(), api["resourceClaimStatuses"].clone()), (json!("Running"), claims));
}

// Upstream: TestPodResizeConditions.
#[test]
fn test_pod_resize_conditions() {
    let mut m = manager_with(&test_pod(1));
    let uid = "12345";
    let summary = |m: &mut M| -> Vec<Value> {
        let conditions = m.get_pod_resize_conditions(uid).unwrap();
        conditions
            .iter()
            .map(|c| {
                let c: Value = serde_json::from_str(c).unwrap();
                json!([c["type"], c["status"], c["reason"], c["message"]])
            })
            .collect()
    };
    assert!(summary(&mut m).is_empty(), "initial empty conditions");
    m.set_pod_resize_condition(uid, ResizeCondition::InProgress, "some-reason", "some-message", 0).unwrap();
    assert_eq!(summary(&mut m), [json!(["PodResizeInProgress", "True", "some-reason", "some-message"])]);
    // "without reason and message": upstream's newer manager keeps the old ones then.
    m.set_pod_resize_condition(uid, ResizeCondition::InProgress, "", "", 0).unwrap();
    assert_eq!(summary(&mut m), [json!(["PodResizeInProgress", "True", "some-reason", "some-message"])]);
    m.set_pod_resize_condition(uid, ResizeCondition::Pending, "some-reason", "some-message", 0).unwrap();
    assert_eq!(summary(&mut m).len(), 2);
    assert_eq!(summary(&mut m)[0][0], json!("PodResizePending"), "pending first");
    assert!(m.clear_pod_resize_condition(uid, ResizeCondition::InProgress).unwrap());
    assert_eq!(summary(&mut m), [json!(["PodResizePending", "True", "some-reason", "some-message"])]);
    m.clear_pod_resize_condition(uid, ResizeCondition::Pending).unwrap();
    assert!(summary(&mut m).is_empty());
}

// Upstream: deletePodStatus / RemoveOrphanedStatuses with InPlacePodVerticalScaling.
#[test]
fn test_remove_orphaned_statuses_drops_resize_conditions() {
    let pod = test_pod(1);
    let mut m = manager_with(&pod);
    set(&mut m, &pod, &json!({"phase": "Running"}));
    m.set_pod_resize_condition(UID, ResizeCondition::Pending, "Deferred", "", 1).unwrap();
    assert_eq!(m.remove_orphaned_statuses(&[]), 1);
    assert!(m.get_pod_resize_conditions(UID).unwrap().is_empty());
}

// Not upstream: logic v2 (1.27) has no resize conditions and says so.
#[test]
fn resize_operations_are_unsupported_before_1_33() {
    let mut v2 = podstatus_logic_v2::Manager::new(FakeWorld::v2());
    let err = v2.set_pod_resize_condition(UID, ResizeCondition::Pending, "Deferred", "", 1).unwrap_err();
    assert!(matches!(err, podstatus_logic::ManagerError::Unsupported(_)), "{err}");
    assert!(v2.get_pod_resize_conditions(UID).is_err());
    assert!(v2.clear_pod_resize_condition(UID, ResizeCondition::InProgress).is_err());
}

// Not upstream: a swap to v2 and back keeps the resize conditions and observedGeneration.
#[test]
fn a_swap_through_v2_keeps_resize_conditions_and_observed_generation() {
    let pod = test_pod(4);
    let mut m = manager_with(&pod);
    set(&mut m, &pod, &json!({"phase": "Running"}));
    m.set_pod_resize_condition(UID, ResizeCondition::Pending, "Infeasible", "too big", 4).unwrap();
    let before = m.get_pod_resize_conditions(UID).unwrap();
    let state = m.save_state().unwrap();

    let mut v2 = podstatus_logic_v2::Manager::new(FakeWorld::v2());
    v2.load_state(&state).unwrap();
    let through_v2 = v2.save_state().unwrap();
    assert_eq!(through_v2, state, "v2 carries what it does not know untouched");

    let mut back = Manager::new(FakeWorld::v2());
    back.load_state(&through_v2).unwrap();
    assert_eq!(back.get_pod_resize_conditions(UID).unwrap(), before);
    assert_eq!(status_of(&mut back)["observedGeneration"], json!(4));
}

// Not upstream: what v2 does with v4's observedGeneration after a swap (docs/logic-versions.md).
#[test]
fn after_a_swap_v2_clears_observed_generation_with_its_next_write() {
    let pod = test_pod(4);
    let mut m = manager_with(&pod);
    set(&mut m, &pod, &json!({"phase": "Running"}));
    drain(&mut m);
    assert_eq!(m.imports_mut().api_status("new", "foo")["observedGeneration"], json!(4));
    let state = m.save_state().unwrap();

    let mut world = FakeWorld::v2();
    world.add_pod(with_status(pod.clone(), m.imports_mut().api_status("new", "foo")));
    let mut v2 = podstatus_logic_v2::Manager::new(world);
    v2.load_state(&state).unwrap();
    let outcome = v2.set_pod_status(&pod.to_string(), &json!({"phase": "Running"}).to_string()).unwrap();
    assert_eq!(outcome, UpdateOutcome::Queued, "losing observedGeneration is a new version");
    while let Some(request) = v2.imports_mut().pop_request() {
        v2.sync_pod(&request).unwrap();
    }
    assert!(v2.imports_mut().api_status("new", "foo").get("observedGeneration").is_none());
}
