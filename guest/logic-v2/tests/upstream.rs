//! The cases of 1.27's `pkg/kubelet/status/status_manager_test.go` (kubernetes commit
//! 0033cb0a) that apply here, each named after the upstream test it ports.
//!
//! Upstream's fixtures: `getTestPod()` is `new/foo` with UID `12345678`;
//! `newTestManager` puts it in the pod manager; `fake.Clientset{}` is an API server
//! without pods, `fake.NewSimpleClientset(pod)` one with that pod; `verifyUpdates(n)`
//! drains the channel and counts the pods synced ([`drain_count`]); `verifyActions`
//! drains too and compares the API calls ([`drain_verbs`]). Upstream's
//! `FakePodDeletionSafetyProvider` says no container runs; upstream's "finished"
//! (`podIsFinished`: the status came from `TerminatePod`) is the same mark here, and
//! whether resources are reclaimed is never asked.

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_logic as logic;
use podstatus_logic::StatusManager;
use podstatus_logic_testing::v2::*;
use podstatus_logic_testing::*;
use podstatus_logic_v2::{BatchReport, Imports, Manager, Release127, SyncOutcome, UpdateOutcome};
use serde_json::{Value, json};

const UID: &str = "12345678";

fn test_pod() -> Value {
    pod("new", "foo", UID, &[])
}

/// `newTestManager(&fake.Clientset{})`: the test pod in the pod manager only.
fn new_test_manager() -> M {
    let mut world = FakeWorld::v2();
    world.add_managed_pod(test_pod());
    Manager::new(world)
}

/// `newTestManager(fake.NewSimpleClientset(pod))`: the pod in both.
fn manager_with_api_pod(pod: Value) -> M {
    let mut world = FakeWorld::v2();
    world.add_pod(pod);
    Manager::new(world)
}

/// `getRandomPodStatus()`: a status of only a message, different every call.
fn random_status() -> Value {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    json!({"message": format!("message {}", NEXT.fetch_add(1, Ordering::Relaxed))})
}

fn ready_status() -> Value {
    json!({"conditions": [{"type": "Ready", "status": "True"}]})
}

fn now_seconds(m: &mut M) -> i64 {
    m.imports_mut().now.seconds
}

use Verb::{DeletePod as DELETE, GetPod as GET, PatchPodStatus as PATCH};

#[test]
fn new_status() {
    let mut m = new_test_manager();
    set(&mut m, &test_pod(), &random_status());
    assert_eq!(drain_count(&mut m), 1);
    let status = status_of(&mut m, UID);
    assert_eq!(seconds_of(&status["startTime"]), now_seconds(&mut m), "SetPodStatus sets a start time");
}

#[test]
fn new_status_preserves_pod_start_time() {
    let mut m = new_test_manager();
    let start = now_seconds(&mut m) - 60;
    let pod = with_status(test_pod(), json!({"startTime": rfc3339(start, 0)}));
    set(&mut m, &pod, &random_status());
    assert_eq!(seconds_of(&status_of(&mut m, UID)["startTime"]), start);
}

#[test]
fn new_status_sets_ready_transition_time() {
    let mut m = new_test_manager();
    set(&mut m, &test_pod(), &ready_status());
    assert_eq!(drain_count(&mut m), 1);
    let status = status_of(&mut m, UID);
    assert_eq!(seconds_of(&condition(&status, "Ready")["lastTransitionTime"]), now_seconds(&mut m));
}

#[test]
fn changed_status() {
    let mut m = new_test_manager();
    set(&mut m, &test_pod(), &random_status());
    assert_eq!(drain_count(&mut m), 1);
    set(&mut m, &test_pod(), &random_status());
    assert_eq!(drain_count(&mut m), 1);
}

#[test]
fn changed_status_keeps_start_time() {
    let mut m = new_test_manager();
    let now = now_seconds(&mut m);
    let mut first = random_status();
    first["startTime"] = json!(rfc3339(now, 123_000_000));
    set(&mut m, &test_pod(), &first);
    assert_eq!(drain_count(&mut m), 1);
    m.imports_mut().set_now(now + 30, 0);
    set(&mut m, &test_pod(), &random_status());
    assert_eq!(drain_count(&mut m), 1);
    assert_eq!(seconds_of(&status_of(&mut m, UID)["startTime"]), now, "the first start time, cut to seconds");
}

#[test]
fn changed_status_updates_last_transition_time() {
    let mut m = new_test_manager();
    set(&mut m, &test_pod(), &ready_status());
    assert_eq!(drain_count(&mut m), 1);
    let old = seconds_of(&condition(&status_of(&mut m, UID), "Ready")["lastTransitionTime"]);
    let later = now_seconds(&mut m) + 5;
    m.imports_mut().set_now(later, 0);
    set(&mut m, &test_pod(), &json!({"conditions": [{"type": "Ready", "status": "False"}]}));
    assert_eq!(drain_count(&mut m), 1);
    let new = seconds_of(&condition(&status_of(&mut m, UID), "Ready")["lastTransitionTime"]);
    assert!(new > old, "the transition moves the time: {old} -> {new}");
    assert_eq!(new, later);
}

#[test]
fn unchanged_status() {
    let mut m = new_test_manager();
    let status = random_status();
    set(&mut m, &test_pod(), &status);
    assert_eq!(set(&mut m, &test_pod(), &status), UpdateOutcome::Unchanged);
    assert_eq!(drain_count(&mut m), 1);
}

#[test]
fn unchanged_status_preserves_last_transition_time() {
    let mut m = new_test_manager();
    set(&mut m, &test_pod(), &ready_status());
    assert_eq!(drain_count(&mut m), 1);
    let old = status_of(&mut m, UID);
    let now = now_seconds(&mut m);
    m.imports_mut().set_now(now + 5, 0);
    assert_eq!(set(&mut m, &test_pod(), &ready_status()), UpdateOutcome::Unchanged);
    assert_eq!(drain_count(&mut m), 0, "no update");
    let new = status_of(&mut m, UID);
    assert_eq!(condition(&new, "Ready")["lastTransitionTime"], condition(&old, "Ready")["lastTransitionTime"]);
}

#[test]
fn sync_pod_ignores_not_found() {
    let mut m = new_test_manager();
    set(&mut m, &test_pod(), &random_status());
    assert_eq!(drain(&mut m), [SyncOutcome::PodNotFound]);
    assert_eq!(m.imports_mut().take_verbs(), [GET]);
}

#[test]
fn sync_pod() {
    let mut m = manager_with_api_pod(test_pod());
    set(&mut m, &test_pod(), &random_status());
    assert_eq!(drain_verbs(&mut m), [GET, PATCH]);
}

#[test]
fn sync_pod_checks_mismatched_uid() {
    let mut world = FakeWorld::v2();
    let first = world.add_pod(pod("new", "foo", "first", &[]));
    let different = pod("new", "foo", "second", &[]);
    world.add_managed_pod(different.clone());
    let mut m = Manager::new(world);
    set(&mut m, &different, &random_status());
    assert_eq!(drain(&mut m), [SyncOutcome::Recreated]);
    assert_eq!(m.imports_mut().take_verbs(), [GET]);
    assert_eq!(cached(&mut m, "second"), None, "the recreated pod's status is dropped");
    assert!(m.imports_mut().api_pod("new", "foo").unwrap().get("status").is_none(), "{first}");
}

#[test]
fn sync_pod_no_deadlock() {
    let mut m = new_test_manager();
    let mut pod = test_pod();
    pod["status"] = json!({"containerStatuses": [{"name": "", "image": "", "imageID": "", "ready": false,
                                                  "restartCount": 0, "state": {"running": {}}}]});

    // Pod not found.
    set(&mut m, &pod, &random_status());
    assert_eq!(drain_verbs(&mut m), [GET]);

    // Pod was recreated.
    m.imports_mut().add_api_pod(pod_named_foo("other_pod"));
    set(&mut m, &pod, &random_status());
    assert_eq!(drain_verbs(&mut m), [GET]);

    // Pod not deleted (success case).
    m.imports_mut().add_api_pod(test_pod());
    set(&mut m, &pod, &random_status());
    assert_eq!(drain_verbs(&mut m), [GET, PATCH]);

    // Pod is terminated, but still running.
    let deleting_pod = deleting(pod.clone());
    set(&mut m, &deleting_pod, &random_status());
    assert_eq!(drain_verbs(&mut m), [GET, PATCH]);

    // Pod is terminated successfully.
    let mut terminated = deleting_pod.clone();
    terminated["status"]["containerStatuses"][0]["state"] = json!({"terminated": {"exitCode": 0}});
    set(&mut m, &terminated, &random_status());
    assert_eq!(drain_verbs(&mut m), [GET, PATCH]);

    // Error case.
    m.imports_mut().fail(Verb::GetPod, podstatus_logic_v2::ApiError::Other("intentional test error".into()));
    set(&mut m, &terminated, &random_status());
    assert_eq!(drain(&mut m), [SyncOutcome::GetFailed]);
    assert_eq!(m.imports_mut().take_verbs(), [GET]);
}

fn pod_named_foo(uid: &str) -> Value {
    pod("new", "foo", uid, &[])
}

#[test]
fn stale_updates() {
    let mut m = manager_with_api_pod(test_pod());
    let pod = test_pod();
    set(&mut m, &pod, &json!({"message": "initial status"}));
    set(&mut m, &pod, &json!({"message": "first version bump"}));
    let status = json!({"message": "second version bump"});
    set(&mut m, &pod, &status);

    // A batch before the queued sync writes the latest status, once.
    m.sync_batch();
    assert_eq!(drain_count(&mut m), 0);
    assert_eq!(m.imports_mut().take_verbs(), [GET, PATCH]);
    assert_eq!(m.imports_mut().api_status("new", "foo")["message"], "second version bump");
    assert_eq!(drain_verbs(&mut m), [], "nothing left in the queue to sync");

    // An unchanged status sends no update...
    assert_eq!(set(&mut m, &pod, &status), UpdateOutcome::Unchanged);
    assert_eq!(drain_count(&mut m), 0);

    // ... even when the written version is stale, as long as nothing changed.
    edit_state(&mut m, |state| state["apiStatusVersions"][UID] = json!(2));
    assert_eq!(set(&mut m, &pod, &status), UpdateOutcome::Unchanged);
    m.sync_batch();
    assert_eq!(drain_verbs(&mut m), [GET]);
    assert_eq!(drain_count(&mut m), 0, "nothing stuck in the pipe");
}

#[test]
fn status_equality() {
    let mut m = new_test_manager();
    let statuses: Vec<Value> = (0..10).map(|i| container(&format!("container{i}"), false)).collect();
    set(&mut m, &test_pod(), &json!({"containerStatuses": statuses}));
    for seed in 0..10usize {
        let mut shuffled = statuses.clone();
        shuffled.rotate_left(seed);
        if seed % 2 == 1 {
            shuffled.reverse();
        }
        assert_eq!(
            set(&mut m, &test_pod(), &json!({"containerStatuses": shuffled})),
            UpdateOutcome::Unchanged,
            "the order of container statuses does not matter"
        );
    }

    let with_feature = |value: &str| json!({"containerStatuses": statuses, "conditions": [{"type": "www.example.com/feature", "status": value}]});
    set(&mut m, &test_pod(), &with_feature("True"));
    assert_eq!(
        set(&mut m, &test_pod(), &with_feature("False")),
        UpdateOutcome::Unchanged,
        "a condition the kubelet does not own does not matter"
    );
}

#[test]
fn status_normalization_enforces_max_bytes() {
    let mut m = new_test_manager();
    let statuses: Vec<Value> = (0..48)
        .map(|i| {
            json!({"name": format!("container{i}"), "image": "", "imageID": "", "ready": false, "restartCount": 0,
                   "lastState": {"terminated": {"exitCode": 0, "message": "abcdefgh".repeat(24 + i % 3)}}})
        })
        .collect();
    set(&mut m, &test_pod(), &json!({"initContainerStatuses": statuses[..24], "containerStatuses": statuses[24..]}));
    let status = status_of(&mut m, UID);
    let mut count = 0;
    for s in status["initContainerStatuses"].as_array().unwrap() {
        let l = s["lastState"]["terminated"]["message"].as_str().unwrap().len();
        assert!((192..=256).contains(&l), "container message had length {l}");
        count += l;
    }
    assert!(count <= 12 * 1024, "message length not truncated");
}

#[test]
fn static_pod() {
    let (static_pod, mirror) = static_and_mirror("new", "foo", UID, "mirror-12345678", &[]);
    let mut world = FakeWorld::v2();
    world.add_api_pod(mirror.clone());
    world.add_managed_pod(test_pod());
    let mut m = Manager::new(world);

    // The static pod.
    m.imports_mut().add_managed_pod(static_pod.clone());
    let status = json!({"message": "static", "startTime": rfc3339(T0, 0)});
    set(&mut m, &static_pod, &status);
    assert_eq!(status_of(&mut m, UID)["message"], "static");

    // No sync while there is no mirror pod.
    m.sync_batch();
    assert_eq!(m.imports_mut().take_verbs(), []);

    // The mirror pod.
    let mirror = m.imports_mut().api_pod("new", "foo").unwrap().clone();
    m.imports_mut().add_managed_pod(mirror);
    assert_eq!(status_of(&mut m, "mirror-12345678")["message"], "static", "the mirror pod's UID finds the status");

    // Synced because the mirror pod exists.
    assert_eq!(m.sync_batch().synced, 1);
    assert_eq!(drain_verbs(&mut m), [GET, PATCH]);
    assert_eq!(m.imports_mut().api_status("new", "foo")["message"], "static");

    // Nothing changed: nothing to sync.
    m.sync_batch();
    assert_eq!(drain_verbs(&mut m), []);

    // The mirror pod's identity changes; the API server still has the old one.
    m.imports_mut().remove_managed_pod("mirror-12345678");
    let mut new_mirror = with_status(mirror_of("new-mirror-pod"), json!({}));
    new_mirror["metadata"]["resourceVersion"] = json!("1");
    m.imports_mut().add_managed_pod(new_mirror);
    assert_eq!(m.sync_batch().synced, 1);
    assert_eq!(drain_verbs(&mut m), [GET], "no write to a mirror pod of another UID");
}

fn mirror_of(uid: &str) -> Value {
    static_and_mirror("new", "foo", UID, uid, &[]).1
}

#[test]
fn terminate_pod() {
    let mut m = new_test_manager();
    let mut pod = test_pod();
    let first = json!({
        "message": "first", "phase": "Failed",
        "initContainerStatuses": [
            {"name": "init-test-1", "image": "", "imageID": "", "ready": false, "restartCount": 0},
            container_in("init-test-2", json!({"terminated": {"reason": "InitTest", "exitCode": 0}})),
            container_in("init-test-3", json!({"terminated": {"reason": "InitTest", "exitCode": 3}})),
        ],
        "containerStatuses": [
            {"name": "test-1", "image": "", "imageID": "", "ready": false, "restartCount": 0},
            container_in("test-2", json!({"terminated": {"reason": "Test", "exitCode": 2}})),
            container_in("test-3", json!({"terminated": {"reason": "Test", "exitCode": 0}})),
        ],
    });
    set(&mut m, &pod, &first);

    // A stale pod, running.
    pod["status"] = json!({"message": "stale", "phase": "Running"});
    terminate(&mut m, &pod);

    let status = status_of(&mut m, UID);
    let unknown = json!({"terminated": {"reason": "ContainerStatusUnknown",
                         "message": "The container could not be located when the pod was terminated", "exitCode": 137}});
    for key in ["containerStatuses", "initContainerStatuses"] {
        for c in status[key].as_array().unwrap() {
            assert!(c["state"]["terminated"].is_object(), "{key}: {c}");
        }
    }
    assert_eq!(status["initContainerStatuses"][0]["state"], unknown);
    assert_eq!(status["initContainerStatuses"][1]["state"], first["initContainerStatuses"][1]["state"]);
    assert_eq!(status["initContainerStatuses"][2]["state"], first["initContainerStatuses"][2]["state"]);
    assert_eq!(status["containerStatuses"][0]["state"], unknown);
    assert_eq!(status["containerStatuses"][1]["state"], first["containerStatuses"][1]["state"]);
    assert_eq!(status["containerStatuses"][2]["state"], first["containerStatuses"][2]["state"]);
    // The earlier update is kept.
    assert_eq!(status["phase"], "Failed");
    assert_eq!(status["message"], "first");
}

#[test]
fn terminate_pod_waiting() {
    let mut m = new_test_manager();
    let mut pod = test_pod();
    let first = json!({
        "message": "first", "phase": "Failed",
        "initContainerStatuses": [
            {"name": "init-test-1", "image": "", "imageID": "", "ready": false, "restartCount": 0},
            container_in("init-test-2", json!({"terminated": {"reason": "InitTest", "exitCode": 0}})),
            container_in("init-test-3", json!({"waiting": {"reason": "InitTest"}})),
        ],
        "containerStatuses": [
            {"name": "test-1", "image": "", "imageID": "", "ready": false, "restartCount": 0},
            container_in("test-2", json!({"terminated": {"reason": "Test", "exitCode": 2}})),
            container_in("test-3", json!({"waiting": {"reason": "Test"}})),
        ],
    });
    set(&mut m, &pod, &first);
    pod["status"] = json!({"message": "stale", "phase": "Running"});
    terminate(&mut m, &pod);

    let status = status_of(&mut m, UID);
    let unknown = json!({"terminated": {"reason": "ContainerStatusUnknown",
                         "message": "The container could not be located when the pod was terminated", "exitCode": 137}});
    assert_eq!(status["initContainerStatuses"][0]["state"], unknown);
    assert_eq!(status["initContainerStatuses"][1]["state"], first["initContainerStatuses"][1]["state"]);
    assert_eq!(
        status["initContainerStatuses"][2]["state"], first["initContainerStatuses"][2]["state"],
        "still waiting"
    );
    assert_eq!(status["containerStatuses"][0]["state"], unknown);
    assert_eq!(status["containerStatuses"][1]["state"], first["containerStatuses"][1]["state"]);
    assert_eq!(status["containerStatuses"][2]["state"], unknown, "a waiting container is defaulted");
    assert_eq!(status["phase"], "Failed");
    assert_eq!(status["message"], "first");
}

/// What a container's state should be after `TerminatePod`.
#[derive(Clone, Copy, Debug)]
enum Expect {
    Unknown,
    Terminated(i64),
    Waiting,
}

fn check_state(case: &str, what: &str, state: &Value, expect: Expect) {
    let kinds: Vec<&str> = state.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    match expect {
        Expect::Unknown => {
            assert_eq!(kinds, ["terminated"], "{case}: {what}: {state}");
            assert_eq!(state["terminated"]["exitCode"], 137, "{case}: {what}");
            assert_eq!(state["terminated"]["reason"], "ContainerStatusUnknown", "{case}: {what}");
            assert!(!state["terminated"]["message"].as_str().unwrap_or("").is_empty(), "{case}: {what}");
        }
        Expect::Terminated(code) => {
            assert_eq!(kinds, ["terminated"], "{case}: {what}: {state}");
            assert_eq!(state["terminated"]["exitCode"], code, "{case}: {what}");
        }
        Expect::Waiting => assert_eq!(kinds, ["waiting"], "{case}: {what}: {state}"),
    }
}

#[test]
fn terminate_pod_default_unknown_status() {
    let new_pod = |init: usize, containers: usize, status: Value| {
        let names: Vec<String> = (0..containers).map(|i| i.to_string()).collect();
        let init_names: Vec<String> = (0..init).map(|i| format!("init-{i}")).collect();
        let mut pod = pod("new", "foo", UID, &names.iter().map(String::as_str).collect::<Vec<_>>());
        if init > 0 {
            pod = with_init_containers(pod, &init_names.iter().map(String::as_str).collect::<Vec<_>>());
        }
        let mut status = status;
        status["startTime"] = json!("1970-01-01T00:00:01Z");
        with_status(pod, status)
    };
    let never = |pod: Value| with_restart_policy(pod, "Never");
    let c = |name: &str, state: Value| container_in(name, state);
    let w = || json!({"waiting": {}});
    let t = |code: i64| json!({"terminated": {"exitCode": code}});
    use Expect::*;

    type Check = Vec<(&'static str, usize, Expect)>;
    /// A case's name, init containers and container 0; then what becomes of each one's state.
    type InitCase = (&'static str, Vec<Value>, Value, &'static [Expect], Expect);
    let mut cases: Vec<(&str, Value, Option<Check>)> = vec![
        ("failed pod without statuses", new_pod(0, 1, json!({"phase": "Failed"})), None),
        ("running pod without statuses", new_pod(0, 1, json!({"phase": "Running"})), Some(vec![])),
        (
            "running pod with a terminated container",
            new_pod(
                0,
                1,
                json!({"phase": "Running", "containerStatuses": [c("0", json!({"terminated": {"reason": "Test", "exitCode": 2}}))]}),
            ),
            Some(vec![("containerStatuses", 0, Terminated(2))]),
        ),
        (
            "last termination state set",
            never(new_pod(
                0,
                1,
                json!({"phase": "Running", "containerStatuses": [
                {"name": "0", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                 "lastState": {"terminated": {"reason": "Test", "exitCode": 2}}, "state": {"waiting": {}}}]}),
            )),
            Some(vec![("containerStatuses", 0, Unknown)]),
        ),
        (
            "no previous state",
            never(new_pod(0, 1, json!({"phase": "Running", "containerStatuses": [c("0", w())]}))),
            Some(vec![("containerStatuses", 0, Unknown)]),
        ),
    ];
    // Pods that never restart, running with these init containers (init-0, init-1, ...)
    // and container 0: what each init container's state, then container 0's, becomes.
    // Not left to rustfmt: one case to two or three lines keeps the table readable.
    #[rustfmt::skip]
    let init_cases: [InitCase; 9] = [
        ("uninitialized pod defaults the first init container",
            vec![c("init-0", w())], c("0", w()), &[Unknown], Waiting),
        ("uninitialized pod defaults only the first init container",
            vec![c("init-0", w()), c("init-1", w())], c("0", w()), &[Unknown, Waiting], Waiting),
        ("uninitialized pod defaults gaps",
            vec![c("init-0", w()), c("init-1", w()), c("init-2", t(1)), c("init-3", w())], c("0", w()),
            &[Unknown, Unknown, Terminated(1), Waiting], Waiting),
        ("failed last container is uninitialized",
            vec![c("init-0", w()), c("init-1", w()), c("init-2", t(1))], c("0", w()),
            &[Unknown, Unknown, Terminated(1)], Waiting),
        ("successful last container is initialized",
            vec![c("init-0", w()), c("init-1", w()), c("init-2", t(0))], c("0", w()),
            &[Unknown, Unknown, Terminated(0)], Unknown),
        ("successful last previous container is initialized, and container state is overwritten",
            vec![c("init-0", w()), c("init-1", w()),
                 json!({"name": "init-2", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                        "lastState": {"terminated": {"exitCode": 0}}, "state": {"waiting": {}}})],
            c("0", w()), &[Unknown, Unknown, Unknown], Unknown),
        ("running container proves initialization",
            vec![c("init-0", w())], c("0", json!({"running": {}})), &[Unknown], Unknown),
        ("evidence of terminated container proves initialization",
            vec![c("init-0", w())], c("0", t(0)), &[Unknown], Terminated(0)),
        ("evidence of previously terminated container proves initialization",
            vec![c("init-0", w())],
            json!({"name": "0", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                   "lastState": {"terminated": {"exitCode": 0}}}),
            &[Unknown], Unknown),
    ];
    for (name, inits, container, init, expect) in init_cases {
        let count = inits.len();
        let status = json!({"phase": "Running", "initContainerStatuses": inits, "containerStatuses": [container]});
        let mut checks: Check = init.iter().enumerate().map(|(i, e)| ("initContainerStatuses", i, *e)).collect();
        checks.push(("containerStatuses", 0, expect));
        cases.push((name, never(new_pod(count, 1, status)), Some(checks)));
    }

    for (name, pod, checks) in cases {
        // A pod manager without pods, as upstream's table builds it.
        let mut m = Manager::new(FakeWorld::v2());
        set(&mut m, &pod, &pod["status"]);
        terminate(&mut m, &pod);
        let status = status_of(&mut m, UID);
        match checks {
            None => assert_eq!(status, pod["status"], "{name}: the status is kept as it was"),
            Some(checks) => {
                assert_eq!(status["phase"], "Failed", "{name}: a running pod ends failed");
                for (key, index, expect) in checks {
                    check_state(name, &format!("{key}[{index}]"), &status[key][index]["state"], expect);
                }
            }
        }
        if name == "last termination state set" {
            assert_eq!(status["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], 2, "{name}");
        }
    }
}

#[test]
fn terminate_pod_ensure_pod_phase_is_terminal() {
    let cases = [
        ("Pending pod", "Pending", "Failed"),
        ("Running pod", "Running", "Failed"),
        ("Succeeded pod", "Succeeded", "Succeeded"),
        ("Failed pod", "Failed", "Failed"),
        ("Unknown pod", "Unknown", "Failed"),
        ("Unknown phase pod", "SomeUnknownPhase", "Failed"),
    ];
    for (name, phase, want) in cases {
        let mut m = Manager::new(FakeWorld::v2());
        let pod = with_status(test_pod(), json!({"phase": phase}));
        terminate(&mut m, &pod);
        let mut status = status_of(&mut m, UID);
        status.as_object_mut().unwrap().remove("startTime");
        assert_eq!(status, json!({"phase": want}), "{name}");
    }
}

/// The container IDs of upstream's readiness and startup tests.
const C1: &str = "test://1";
const C2: &str = "test://2";

fn two_container_pod() -> (M, Value, Value) {
    let pod = pod("new", "foo", UID, &["c1", "c2"]);
    let status = json!({
        "containerStatuses": [
            {"name": "c1", "containerID": C1, "image": "", "imageID": "", "ready": false, "restartCount": 0},
            {"name": "c2", "containerID": C2, "image": "", "imageID": "", "ready": false, "restartCount": 0},
        ],
        "conditions": [{"type": "Ready", "status": "False"}],
    });
    let mut m = new_test_manager();
    // The pod with its containers replaces the test pod.
    m.imports_mut().add_managed_pod(pod.clone());
    (m, pod, status)
}

fn container_field<'a>(status: &'a Value, id: &str, field: &str) -> &'a Value {
    let c = status["containerStatuses"].as_array().unwrap().iter().find(|c| c["containerID"] == id).unwrap();
    &c[field]
}

#[test]
fn set_container_readiness() {
    let (mut m, pod, status) = two_container_pod();
    let verify = |m: &mut M, step: &str, c1: bool, c2: bool, pod_ready: bool| {
        let status = status_of(m, UID);
        assert_eq!(container_field(&status, C1, "ready"), c1, "[{step}] c1");
        assert_eq!(container_field(&status, C2, "ready"), c2, "[{step}] c2");
        assert_eq!(status["conditions"][0]["type"], "Ready", "[{step}]");
        assert_eq!(status["conditions"][0]["status"] == "True", pod_ready, "[{step}] pod");
    };

    // Readiness before a status fails.
    assert_eq!(m.set_container_readiness(UID, C1, true), Ok(UpdateOutcome::NotCached));
    assert_eq!(drain_count(&mut m), 0);
    assert_eq!(cached(&mut m, UID), None);

    set(&mut m, &pod, &status);
    assert_eq!(drain_count(&mut m), 1);
    verify(&mut m, "initial", false, false, false);

    assert_eq!(m.set_container_readiness(UID, C1, false), Ok(UpdateOutcome::Unchanged));
    assert_eq!(drain_count(&mut m), 0);
    verify(&mut m, "unchanged", false, false, false);

    assert_eq!(m.set_container_readiness(UID, C1, true), Ok(UpdateOutcome::Queued));
    assert_eq!(drain_count(&mut m), 1);
    verify(&mut m, "c1 ready", true, false, false);

    assert_eq!(m.set_container_readiness(UID, C2, true), Ok(UpdateOutcome::Queued));
    assert_eq!(drain_count(&mut m), 1);
    verify(&mut m, "all ready", true, true, true);

    assert_eq!(m.set_container_readiness(UID, "test://foo", true), Ok(UpdateOutcome::UnknownContainer));
    assert_eq!(drain_count(&mut m), 0);
    verify(&mut m, "ignore non-existent", true, true, true);
}

#[test]
fn set_container_startup() {
    let (mut m, pod, status) = two_container_pod();
    let verify = |m: &mut M, step: &str, c1: bool, c2: bool| {
        let status = status_of(m, UID);
        assert_eq!(container_field(&status, C1, "started").as_bool().unwrap_or(false), c1, "[{step}] c1");
        assert_eq!(container_field(&status, C2, "started").as_bool().unwrap_or(false), c2, "[{step}] c2");
    };

    assert_eq!(m.set_container_startup(UID, C1, true), Ok(UpdateOutcome::NotCached));
    assert_eq!(drain_count(&mut m), 0);
    assert_eq!(cached(&mut m, UID), None);

    set(&mut m, &pod, &status);
    assert_eq!(drain_count(&mut m), 1);
    verify(&mut m, "initial", false, false);

    // Unset to false is a change (Go's *bool).
    assert_eq!(m.set_container_startup(UID, C1, false), Ok(UpdateOutcome::Queued));
    assert_eq!(drain_count(&mut m), 1);
    verify(&mut m, "unchanged", false, false);
    assert_eq!(container_field(&status_of(&mut m, UID), C1, "started"), false);
    assert_eq!(m.set_container_startup(UID, C1, false), Ok(UpdateOutcome::Unchanged));

    assert_eq!(m.set_container_startup(UID, C1, true), Ok(UpdateOutcome::Queued));
    assert_eq!(drain_count(&mut m), 1);
    verify(&mut m, "c1 ready", true, false);

    assert_eq!(m.set_container_startup(UID, C2, true), Ok(UpdateOutcome::Queued));
    assert_eq!(drain_count(&mut m), 1);
    verify(&mut m, "all ready", true, true);

    assert_eq!(m.set_container_startup(UID, "test://foo", true), Ok(UpdateOutcome::UnknownContainer));
    assert_eq!(drain_count(&mut m), 0);
    verify(&mut m, "ignore non-existent", true, true);
}

fn api_versions(m: &mut M) -> Value {
    let state: Value = serde_json::from_str(&m.save_state().unwrap()).unwrap();
    state["apiStatusVersions"].clone()
}

#[test]
fn sync_batch_cleanup_versions() {
    let mut m = new_test_manager();
    let versions = json!({UID: 100, "mirror-uid": 200});

    // Orphaned versions are removed.
    edit_state(&mut m, |state| state["apiStatusVersions"] = versions.clone());
    m.sync_batch();
    assert_eq!(api_versions(&mut m), json!({}));

    // Versions of pods with a status, and of mirror pods that exist, are kept.
    set(&mut m, &test_pod(), &random_status());
    let (static_pod, mirror) = static_and_mirror("new", "mirror_pod", "static-uid", "mirror-uid", &[]);
    m.imports_mut().add_managed_pod(mirror);
    m.imports_mut().add_managed_pod(static_pod);
    // testSyncBatch: the pod manager has the cached status, so nothing needs reconciling.
    let cached = status_of(&mut m, UID);
    m.imports_mut().add_managed_pod(with_status(test_pod(), cached));
    edit_state(&mut m, |state| state["apiStatusVersions"] = versions.clone());
    m.sync_batch();
    assert_eq!(api_versions(&mut m), versions);
}

#[test]
fn reconcile_pod_status() {
    let mut m = manager_with_api_pod(test_pod());
    let status = random_status();
    set(&mut m, &test_pod(), &status);
    m.sync_batch(); // The version is written now.
    drain(&mut m);
    m.imports_mut().take_calls();

    // The pod manager (following the API server) has the cached status: no reconcile.
    assert_eq!(set(&mut m, &test_pod(), &status), UpdateOutcome::Unchanged);
    assert_eq!(m.sync_batch(), BatchReport::default());
    assert_eq!(drain_verbs(&mut m), []);

    // Only the timestamp format differs: no reconcile either.
    let start = m.imports_mut().api_status("new", "foo")["startTime"].as_str().unwrap().to_string();
    let mut drifted = m.imports_mut().api_status("new", "foo");
    drifted["startTime"] = json!(start.replace('Z', ".000000Z"));
    m.imports_mut().drift_status("new", "foo", drifted);
    assert_eq!(m.sync_batch(), BatchReport::default());
    assert_eq!(drain_verbs(&mut m), []);

    // A different status is reconciled.
    m.imports_mut().drift_status("new", "foo", random_status());
    assert_eq!(m.sync_batch(), BatchReport { synced: 1, reconciled: 1, failed: 0 });
    assert_eq!(drain_verbs(&mut m), [GET, PATCH]);
    assert_eq!(m.imports_mut().api_status("new", "foo")["message"], status["message"]);

    // And so is a new status.
    set(&mut m, &test_pod(), &random_status());
    m.sync_batch();
    assert_eq!(drain_verbs(&mut m), [GET, PATCH]);
}

#[test]
fn delete_pod_before_finished() {
    let pod = deleting(test_pod());
    let mut m = manager_with_api_pod(pod.clone());
    // Not finished: the status comes from set-pod-status, not terminate-pod (whatever
    // the host says of the resources).
    m.imports_mut().reclaimed = true;
    let mut status = random_status();
    status["phase"] = json!("Failed");
    set(&mut m, &pod, &status);
    assert_eq!(drain_verbs(&mut m), [GET, PATCH], "no delete before the pod is finished");
    assert_eq!(m.imports_mut().api_status("new", "foo")["phase"], "Failed");
}

#[test]
fn delete_pod_finished() {
    let pod = deleting(test_pod());
    let mut m = manager_with_api_pod(pod.clone());
    m.imports_mut().reclaimed = false;
    terminate(&mut m, &pod);
    assert_eq!(drain_verbs(&mut m), [GET, PATCH, DELETE], "deleted once finished");
    assert_eq!(m.imports_mut().reclaimed_queries, 0);
    assert_eq!(cached(&mut m, UID), None);
    assert!(m.imports_mut().api_pod("new", "foo").is_none());
}

#[test]
fn do_not_delete_mirror_pods() {
    let (static_pod, mirror) = static_and_mirror("new", "foo", UID, "mirror-12345678", &[]);
    let mut world = FakeWorld::v2();
    world.reclaimed = true;
    let mirror = world.add_pod(deleting(mirror));
    world.add_managed_pod(static_pod.clone());
    let mut m = Manager::new(world);
    assert_eq!(m.imports_mut().translate_pod_uid("mirror-12345678"), UID);

    let mut status = random_status();
    status["startTime"] = json!(rfc3339(T0, 0));
    status["phase"] = json!("Failed");
    set(&mut m, &static_pod, &status);
    assert_eq!(drain_verbs(&mut m), [GET, PATCH], "no delete of a mirror pod");
    assert!(m.imports_mut().api_pod("new", "foo").is_some(), "{mirror}");
}

#[test]
fn update_last_transition_time() {
    let old_time = Time("2026-01-01T00:00:00Z".parse().unwrap());
    let now = Time("2026-01-01T00:00:01Z".parse().unwrap());
    let condition = |status: &str, time: Option<&Time>| json!({"type": "test-type", "status": status, "lastTransitionTime": time.map(|t| t.0.to_string())});
    let with =
        |conditions: Vec<Value>| -> PodStatus { serde_json::from_value(json!({"conditions": conditions})).unwrap() };
    // (name, condition, old condition, expect a new time)
    let cases = [
        ("should do nothing if no corresponding condition", None, None, false),
        ("should update last transition time if no old condition", Some(condition("True", None)), None, true),
        (
            "should update last transition time if condition is changed",
            Some(condition("True", None)),
            Some(condition("False", Some(&old_time))),
            true,
        ),
        (
            "should keep last transition time if condition is not changed",
            Some(condition("False", None)),
            Some(condition("False", Some(&old_time))),
            false,
        ),
    ];
    for (name, new, old, expect_update) in cases {
        let has_condition = new.is_some();
        let mut status = with(new.into_iter().collect());
        let old = with(old.into_iter().collect());
        logic::update_last_transition_time(&mut status, &old, "test-type", || now.clone());
        let time = status.conditions.as_ref().and_then(|c| c.first()).and_then(|c| c.last_transition_time.clone());
        if expect_update {
            assert_eq!(time, Some(now.clone()), "{name}");
        } else if has_condition {
            assert_eq!(time, Some(old_time.clone()), "{name}");
        } else {
            assert_eq!(status.conditions.unwrap_or_default(), [], "{name}");
        }
    }
}

/// `getPodStatus()` of the upstream test.
fn merge_input() -> Value {
    json!({"phase": "Running", "message": "Message", "conditions": [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]})
}

fn cond(type_: &str, status: &str, reason: Option<&str>) -> Value {
    match reason {
        Some(reason) => json!({"type": type_, "status": status, "reason": reason}),
        None => json!({"type": type_, "status": status}),
    }
}

fn push_condition(mut status: Value, c: Value) -> Value {
    status["conditions"].as_array_mut().unwrap().push(c);
    status
}

#[test]
fn merge_pod_status() {
    let dt = |reason: &str| cond("DisruptionTarget", "True", Some(reason));
    let failed = |mut s: Value| {
        s["phase"] = json!("Failed");
        s
    };
    let ready_false = |mut s: Value| {
        s["conditions"][0]["status"] = json!("False");
        s
    };
    let feature = |status: &str| cond("example.com/feature", status, None);
    let running_unknown = |mut s: Value| {
        s["reason"] = json!("Unknown");
        s["message"] = json!("Message");
        s
    };
    let evicted = |mut s: Value| {
        s["phase"] = json!("Failed");
        s["reason"] = json!("Evicted");
        s["message"] = json!("Was Evicted");
        s
    };
    let expect = |phase: &str, conditions: Vec<Value>, reason: Option<&str>, message: &str| {
        let mut status = json!({"phase": phase, "message": message, "conditions": conditions});
        if let Some(reason) = reason {
            status["reason"] = json!(reason);
        }
        status
    };
    let i = merge_input;
    let ready = || cond("Ready", "True", None);
    let scheduled = || cond("PodScheduled", "True", None);
    let ready_failed = || cond("Ready", "False", Some("PodFailed"));
    let containers_failed = || cond("ContainersReady", "False", Some("PodFailed"));

    // (description, delay the terminal phase, old, new, expected). The cases upstream
    // runs with PodDisruptionConditions off come out the same with it on (1.27's
    // default, the only setting here).
    let cases: Vec<(&str, bool, Value, Value, Value)> = vec![
        ("no change", false, i(), i(), i()),
        (
            "add DisruptionTarget condition when transitioning into failed phase",
            false,
            i(),
            push_condition(failed(i()), dt("TerminationByKubelet")),
            expect(
                "Failed",
                vec![dt("TerminationByKubelet"), ready_failed(), scheduled(), containers_failed()],
                None,
                "Message",
            ),
        ),
        (
            "don't add DisruptionTarget condition when transitioning into failed phase, but there are might still be running containers",
            true,
            i(),
            push_condition(failed(i()), dt("TerminationByKubelet")),
            expect("Running", vec![ready(), scheduled()], None, "Message"),
        ),
        (
            "preserve DisruptionTarget condition",
            false,
            push_condition(i(), dt("TerminationByKubelet")),
            i(),
            expect("Running", vec![ready(), scheduled(), dt("TerminationByKubelet")], None, "Message"),
        ),
        (
            "override DisruptionTarget condition",
            false,
            push_condition(i(), dt("EvictedByEvictionAPI")),
            push_condition(failed(i()), dt("TerminationByKubelet")),
            expect(
                "Failed",
                vec![ready_failed(), containers_failed(), scheduled(), dt("TerminationByKubelet")],
                None,
                "Message",
            ),
        ),
        (
            "don't override DisruptionTarget condition when remaining in running phase",
            false,
            push_condition(i(), dt("EvictedByEvictionAPI")),
            push_condition(i(), dt("TerminationByKubelet")),
            expect("Running", vec![dt("EvictedByEvictionAPI"), ready(), scheduled()], None, "Message"),
        ),
        (
            "don't override DisruptionTarget condition when transitioning to failed phase but there might still be running containers",
            true,
            push_condition(i(), dt("EvictedByEvictionAPI")),
            push_condition(failed(i()), dt("TerminationByKubelet")),
            expect("Running", vec![dt("EvictedByEvictionAPI"), ready(), scheduled()], None, "Message"),
        ),
        (
            "readiness changes",
            false,
            i(),
            ready_false(i()),
            expect("Running", vec![cond("Ready", "False", None), scheduled()], None, "Message"),
        ),
        (
            "additional pod condition",
            false,
            push_condition(i(), feature("True")),
            i(),
            expect("Running", vec![ready(), scheduled(), feature("True")], None, "Message"),
        ),
        (
            "additional pod condition and readiness changes",
            false,
            push_condition(i(), feature("True")),
            ready_false(i()),
            expect("Running", vec![cond("Ready", "False", None), scheduled(), feature("True")], None, "Message"),
        ),
        (
            "additional pod condition changes",
            false,
            push_condition(i(), feature("True")),
            push_condition(i(), feature("False")),
            expect("Running", vec![ready(), scheduled(), feature("True")], None, "Message"),
        ),
        (
            "phase is transitioning to failed and no containers running",
            false,
            running_unknown(i()),
            evicted(i()),
            expect("Failed", vec![ready_failed(), containers_failed(), scheduled()], Some("Evicted"), "Was Evicted"),
        ),
        (
            "phase is transitioning to failed and containers running",
            true,
            running_unknown(i()),
            evicted(i()),
            expect("Running", vec![ready(), scheduled()], Some("Unknown"), "Message"),
        ),
    ];

    let now = Time("2026-01-01T00:00:00Z".parse().unwrap());
    for (desc, delay, old, new, expected) in cases {
        let old: PodStatus = serde_json::from_value(old).unwrap();
        let new: PodStatus = serde_json::from_value(new).unwrap();
        let output =
            serde_json::to_value(logic::merge_pod_status(&Release127, &(), &old, &new, || delay, &now)).unwrap();
        // Conditions compare by type, status and reason, in any order (as upstream's
        // conditionsEqual); the rest exactly.
        let summary = |status: &Value| {
            let mut conditions: Vec<(String, String, String)> = status["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let field = |k: &str| c[k].as_str().unwrap_or("").to_string();
                    (field("type"), field("status"), field("reason"))
                })
                .collect();
            conditions.sort();
            let mut rest = status.clone();
            rest.as_object_mut().unwrap().remove("conditions");
            (conditions, rest)
        };
        assert_eq!(summary(&output), summary(&expected), "{desc}");
    }
}

// ---- beyond the upstream tests: what their fake client cannot show ----

#[test]
fn sync_pod_patch_never_lands_on_a_recreated_pod() {
    let mut m = manager_with_api_pod(test_pod());
    set(&mut m, &test_pod(), &random_status());
    // Between the read and the patch the pod is deleted and created again.
    m.imports_mut().recreate_after_get = Some(pod_named_foo("recreated"));
    assert_eq!(drain(&mut m), [SyncOutcome::WriteFailed]);
    let patch = m.imports_mut().calls_of(PATCH).pop().unwrap();
    assert_eq!(patch.uid_precondition.as_deref(), Some(UID));
    assert_eq!(patch.patch.unwrap()["metadata"], json!({"uid": UID}));
    assert!(m.imports_mut().api_status("new", "foo").is_null(), "the new pod is untouched");
}
