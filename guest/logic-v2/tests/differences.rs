//! One test per behaviour in which logic v2 (Kubernetes 1.27) differs from logic v1
//! (2017), each named `v2_differs_from_v1_...`. Where it is cheap, the test runs v1 on
//! the same world too, so the difference is shown rather than described.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::v2::*;
use podstatus_logic_testing::*;
use podstatus_logic_v2::{ApiError, BatchReport, Manager, SyncOutcome, UpdateOutcome};
use serde_json::{Value, json};

use Verb::{DeletePod as DELETE, GetPod as GET, PatchPodStatus as PATCH};

/// `ns/a` (uid-a, containers a and b) in the API server and the pod manager.
fn world_with_pod_a() -> (FakeWorld, Value) {
    let mut world = FakeWorld::v2();
    let pod = world.add_pod(pod("ns", "a", "uid-a", &["a", "b"]));
    (world, pod)
}

/// Pod ns/a cached in `phase`, not Ready, with container a ready and b not: what a
/// readiness change of b makes of the conditions is v2's own. The manager and the pod.
fn a_ready_b_not(phase: &str) -> (M, Value) {
    let (world, pod) = world_with_pod_a();
    let mut m = Manager::new(world);
    set(
        &mut m,
        &pod,
        &json!({"phase": phase, "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [container("a", true), container("b", false)]}),
    );
    (m, pod)
}

/// A manager over pods ns/a and ns/b (one container `c` each), nothing cached yet.
fn pods_a_and_b() -> (M, Value, Value) {
    let mut world = FakeWorld::v2();
    let (a, b) = world.add_pods_a_and_b();
    (Manager::new(world), a, b)
}

fn v1(world: FakeWorld) -> V1 {
    let mut world = world;
    world.allow_puts = true;
    podstatus_logic_v1::Manager::new(world)
}

fn v1_status(m: &mut V1, uid: &str) -> Value {
    serde_json::from_str(&m.get_pod_status(uid).unwrap().expect("a cached status").status).unwrap()
}

fn v1_set(m: &mut V1, pod: &Value, status: &Value) -> UpdateOutcome {
    m.set_pod_status(&pod.to_string(), &status.to_string()).unwrap()
}

/// The state `terminate-pod` gives a container whose state is unknown.
fn unknown_state() -> Value {
    json!({"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
                          "message": "The container could not be located when the pod was terminated"}})
}

// ---- writes ----

#[test]
fn v2_differs_from_v1_writes_a_strategic_merge_patch_carrying_the_uid() {
    let (mut world, pod) = world_with_pod_a();
    world.drift_status(
        "ns",
        "a",
        json!({"phase": "Pending", "message": "from the API server",
                                         "startTime": rfc3339(T0, 0)}),
    );
    let pod = with_status(pod, world.api_status("ns", "a"));
    let mut m = Manager::new(world.clone());
    set(&mut m, &pod, &json!({"phase": "Running", "startTime": rfc3339(T0, 0)}));
    drain(&mut m);
    let patches = m.imports_mut().patches();
    assert_eq!(m.imports_mut().take_verbs(), [GET, PATCH], "v1 sends an update (PUT) instead");
    assert_eq!(
        patches,
        [json!({"metadata": {"uid": "uid-a"}, "status": {"phase": "Running", "message": null}})],
        "only what changed; the UID inside as a precondition"
    );

    let mut old = v1(world);
    v1_set(&mut old, &pod, &json!({"phase": "Running", "startTime": rfc3339(T0, 0)}));
    let request = old.imports_mut().pop_request().unwrap();
    old.sync_pod(&request).unwrap();
    assert_eq!(old.imports_mut().take_verbs(), [GET, Verb::UpdatePodStatus]);
}

#[test]
fn v2_differs_from_v1_sends_nothing_when_the_api_server_has_the_status() {
    let (mut world, pod) = world_with_pod_a();
    let status = json!({"phase": "Running", "startTime": rfc3339(T0, 0)});
    world.drift_status("ns", "a", status.clone());
    let pod = with_status(pod, status.clone());
    let mut m = Manager::new(world);
    assert_eq!(set(&mut m, &pod, &status), UpdateOutcome::Queued, "a first status is always a new version");
    assert_eq!(drain(&mut m), [SyncOutcome::UpToDate]);
    assert_eq!(m.imports_mut().take_verbs(), [GET], "v1 writes every version it has not written");
    // The version counts as written: the batch has nothing to do.
    assert_eq!(m.sync_batch(), BatchReport::default());
    assert_eq!(m.imports_mut().take_verbs(), []);
}

// ---- conditions ----

#[test]
fn v2_differs_from_v1_keeps_the_conditions_it_does_not_own() {
    let (mut world, pod) = world_with_pod_a();
    let gate = json!({"type": "example.com/gate", "status": "True"});
    let eviction = json!({"type": "DisruptionTarget", "status": "True", "reason": "EvictedByEvictionAPI"});
    world.drift_status("ns", "a", json!({"phase": "Running", "conditions": [gate, eviction]}));
    let mut m = Manager::new(world.clone());
    let kubelet = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"},
                                                            {"type": "example.com/gate", "status": "False"}]});
    set(&mut m, &pod, &kubelet);
    drain(&mut m);
    let api = m.imports_mut().api_status("ns", "a");
    assert_eq!(condition_types(&api), ["example.com/gate", "DisruptionTarget", "Ready"]);
    assert_eq!(condition(&api, "example.com/gate")["status"], "True", "the API server's, not the kubelet's");
    assert_eq!(condition(&api, "DisruptionTarget")["reason"], "EvictedByEvictionAPI");

    let mut old = v1(world);
    v1_set(&mut old, &pod, &kubelet);
    let request = old.imports_mut().pop_request().unwrap();
    old.sync_pod(&request).unwrap();
    let api = old.imports_mut().api_status("ns", "a");
    assert_eq!(condition_types(&api), ["Ready", "example.com/gate"], "v1 writes its own conditions over them");
}

#[test]
fn v2_differs_from_v1_equality_ignores_the_conditions_it_does_not_own() {
    let (world, pod) = world_with_pod_a();
    let with_gate = |status: &str| {
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"},
                                                  {"type": "example.com/gate", "status": status, "reason": status}]})
    };
    let mut m = Manager::new(world.clone());
    set(&mut m, &pod, &with_gate("True"));
    assert_eq!(set(&mut m, &pod, &with_gate("False")), UpdateOutcome::Unchanged);
    // Nor does a kubelet condition that the new status leaves out.
    assert_eq!(set(&mut m, &pod, &json!({"phase": "Running"})), UpdateOutcome::Unchanged);
    // What the kubelet owns still counts.
    assert_eq!(
        set(&mut m, &pod, &json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]})),
        UpdateOutcome::Queued
    );

    let mut old = v1(world);
    v1_set(&mut old, &pod, &with_gate("True"));
    assert_eq!(v1_set(&mut old, &pod, &with_gate("False")), UpdateOutcome::Queued);
}

#[test]
fn v2_differs_from_v1_keeps_the_transition_times_of_every_kubelet_condition() {
    let (mut world, pod) = world_with_pod_a();
    world.set_now(T0 + 100, 0);
    let mut m = Manager::new(world);
    let types = ["ContainersReady", "Ready", "Initialized", "PodHasNetwork", "PodScheduled", "DisruptionTarget"];
    let status = |value: &str| {
        let conditions: Vec<Value> = types.iter().map(|t| json!({"type": t, "status": value})).collect();
        json!({"phase": "Running", "message": value, "conditions": conditions})
    };
    set(&mut m, &pod, &status("True"));
    m.imports_mut().set_now(T0 + 200, 0);
    // A change elsewhere keeps every condition's time (v1 kept Ready's and Initialized's
    // only, and took the others' as given: none).
    let mut changed = status("True");
    changed["message"] = json!("changed");
    assert_eq!(set(&mut m, &pod, &changed), UpdateOutcome::Queued);
    let cached = status_of(&mut m, "uid-a");
    for t in types {
        assert_eq!(seconds_of(&condition(&cached, t)["lastTransitionTime"]), T0 + 100, "{t}");
    }
    // A change of status moves it.
    m.imports_mut().set_now(T0 + 300, 0);
    set(&mut m, &pod, &status("False"));
    let cached = status_of(&mut m, "uid-a");
    for t in types {
        assert_eq!(seconds_of(&condition(&cached, t)["lastTransitionTime"]), T0 + 300, "{t}");
    }
}

#[test]
fn v2_differs_from_v1_readiness_also_generates_containers_ready() {
    let (mut m, _) = a_ready_b_not("Running");
    assert_eq!(m.set_container_readiness("uid-a", "containerd://b", true), Ok(UpdateOutcome::Queued));
    let status = status_of(&mut m, "uid-a");
    assert_eq!(condition_types(&status), ["Ready", "ContainersReady"], "added when missing");
    assert_eq!(condition(&status, "ContainersReady")["status"], "True");
    assert_eq!(condition(&status, "Ready")["status"], "True");
    assert_eq!(m.set_container_readiness("uid-a", "containerd://a", false), Ok(UpdateOutcome::Queued));
    let status = status_of(&mut m, "uid-a");
    assert_eq!(condition(&status, "ContainersReady")["reason"], "ContainersNotReady");
    assert_eq!(condition(&status, "ContainersReady")["message"], "containers with unready status: [a]");
}

#[test]
fn v2_differs_from_v1_ready_honours_readiness_gates() {
    let mut world = FakeWorld::v2();
    let pod = world.add_pod(with_readiness_gates(pod("ns", "a", "uid-a", &["a"]), &["example.com/lb"]));
    let mut m = Manager::new(world);
    let status = |gate: Option<&str>| {
        let mut conditions = vec![json!({"type": "Ready", "status": "False"})];
        if let Some(gate) = gate {
            conditions.push(json!({"type": "example.com/lb", "status": gate}));
        }
        json!({"phase": "Running", "conditions": conditions, "containerStatuses": [container("a", false)]})
    };

    set(&mut m, &pod, &status(None));
    m.set_container_readiness("uid-a", "containerd://a", true).unwrap();
    let ready = condition(&status_of(&mut m, "uid-a"), "Ready").clone();
    assert_eq!(ready["status"], "False", "v1 says True: every container is ready");
    assert_eq!(ready["reason"], "ReadinessGatesNotReady");
    assert_eq!(ready["message"], "corresponding condition of pod readiness gate \"example.com/lb\" does not exist.");

    set(&mut m, &pod, &status(Some("False")));
    m.set_container_readiness("uid-a", "containerd://a", true).unwrap();
    let ready = condition(&status_of(&mut m, "uid-a"), "Ready").clone();
    assert_eq!(ready["message"], "the status of pod readiness gate \"example.com/lb\" is not \"True\", but False");

    set(&mut m, &pod, &status(Some("True")));
    m.set_container_readiness("uid-a", "containerd://a", true).unwrap();
    assert_eq!(condition(&status_of(&mut m, "uid-a"), "Ready")["status"], "True");
}

#[test]
fn v2_differs_from_v1_a_terminal_pod_is_never_ready() {
    // The readiness of a failed pod's containers does not make it ready.
    let (mut m, pod) = a_ready_b_not("Failed");
    m.set_container_readiness("uid-a", "containerd://b", true).unwrap();
    let status = status_of(&mut m, "uid-a");
    assert_eq!(condition(&status, "Ready")["reason"], "PodFailed", "v1 says True: every container is ready");
    assert_eq!(condition(&status, "ContainersReady")["reason"], "PodFailed");

    // A terminal status that still says ready is written as not ready.
    set(
        &mut m,
        &pod,
        &json!({"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "True"},
                                                                 {"type": "ContainersReady", "status": "True"}]}),
    );
    drain(&mut m);
    let api = m.imports_mut().api_status("ns", "a");
    assert_eq!(condition(&api, "Ready")["status"], "False");
    assert_eq!(condition(&api, "Ready")["reason"], "PodCompleted");
    assert_eq!(condition(&api, "ContainersReady")["reason"], "PodCompleted");
    assert_eq!(condition(&status_of(&mut m, "uid-a"), "Ready")["status"], "True", "the cache keeps what it was told");
}

// ---- terminate-pod and container states ----

#[test]
fn v2_differs_from_v1_terminate_pod_marks_unknown_containers_137() {
    let (world, pod) = world_with_pod_a();
    let status = json!({"phase": "Running", "containerStatuses": [container("a", true), container("b", true)]});
    let mut m = Manager::new(world.clone());
    set(&mut m, &pod, &status);
    terminate(&mut m, &pod);
    let cached = status_of(&mut m, "uid-a");
    for i in 0..2 {
        assert_eq!(cached["containerStatuses"][i]["state"], unknown_state());
    }

    let mut old = v1(world);
    v1_set(&mut old, &pod, &status);
    old.terminate_pod(&pod.to_string()).unwrap();
    let cached = v1_status(&mut old, "uid-a");
    assert_eq!(cached["containerStatuses"][0]["state"], json!({"terminated": {"exitCode": 0}}), "v1: exit code 0");
}

#[test]
fn v2_differs_from_v1_terminate_pod_keeps_terminated_containers() {
    let (world, pod) = world_with_pod_a();
    let done = json!({"terminated": {"exitCode": 2, "reason": "Error", "startedAt": rfc3339(T0, 0),
                                     "finishedAt": rfc3339(T0 + 9, 0)}});
    let status =
        json!({"phase": "Running", "containerStatuses": [container_in("a", done.clone()), container("b", true)]});
    let mut m = Manager::new(world.clone());
    set(&mut m, &pod, &status);
    terminate(&mut m, &pod);
    let cached = status_of(&mut m, "uid-a");
    assert_eq!(cached["containerStatuses"][0]["state"], done);
    assert_eq!(cached["containerStatuses"][1]["state"], unknown_state());

    let mut old = v1(world);
    v1_set(&mut old, &pod, &status);
    old.terminate_pod(&pod.to_string()).unwrap();
    assert_eq!(v1_status(&mut old, "uid-a")["containerStatuses"][0]["state"], json!({"terminated": {"exitCode": 0}}));
}

#[test]
fn v2_differs_from_v1_terminate_pod_leaves_containers_that_never_started() {
    let mut world = FakeWorld::v2();
    let pod = world.add_pod(with_init_containers(pod("ns", "a", "uid-a", &["main"]), &["setup"]));
    let status = json!({"phase": "Pending",
        "initContainerStatuses": [container_in("setup", json!({"running": {}}))],
        "containerStatuses": [container_in("main", json!({"waiting": {"reason": "PodInitializing"}}))]});
    let pod = with_status(pod, status.clone());
    let mut m = Manager::new(world);
    set(&mut m, &pod, &status);
    terminate(&mut m, &pod);
    let cached = status_of(&mut m, "uid-a");
    assert_eq!(cached["initContainerStatuses"][0]["state"], unknown_state());
    assert_eq!(
        cached["containerStatuses"][0]["state"],
        json!({"waiting": {"reason": "PodInitializing"}}),
        "v1 marks it terminated"
    );
}

#[test]
fn v2_differs_from_v1_terminate_pod_forces_a_terminal_phase_except_for_static_pods() {
    let (mut world, pod) = world_with_pod_a();
    let (static_pod, mirror) = static_and_mirror("ns", "s", "uid-s", "uid-m", &["a"]);
    world.add_managed_pod(static_pod.clone());
    world.add_pod(mirror);
    let mut m = Manager::new(world);
    for p in [&pod, &static_pod] {
        set(&mut m, p, &json!({"phase": "Running"}));
        assert_eq!(terminate(&mut m, p), UpdateOutcome::Queued);
    }
    assert_eq!(status_of(&mut m, "uid-a")["phase"], "Failed", "v1 keeps Running");
    assert_eq!(status_of(&mut m, "uid-s")["phase"], "Running", "static pods keep their phase in 1.27");
    set(&mut m, &pod, &json!({"phase": "Succeeded"}));
    terminate(&mut m, &pod);
    assert_eq!(status_of(&mut m, "uid-a")["phase"], "Succeeded", "a terminal phase stays");
}

#[test]
fn v2_differs_from_v1_a_terminated_container_runs_again_only_if_its_restart_policy_says_so() {
    let done = |code: i64| json!({"terminated": {"exitCode": code}});
    let running = json!({"running": {"startedAt": rfc3339(T0 + 50, 0)}});
    // (restart policy, exit code, may run again)
    let cases = [
        (None, 0, true),
        (Some("Always"), 0, true),
        (Some("OnFailure"), 1, true),
        (Some("OnFailure"), 0, false),
        (Some("Never"), 1, false),
    ];
    for (policy, code, allowed) in cases {
        for key in ["containerStatuses", "initContainerStatuses"] {
            let mut world = FakeWorld::v2();
            let mut p = with_init_containers(pod("ns", "a", "uid-a", &["a"]), &["a"]);
            if let Some(policy) = policy {
                p = with_restart_policy(p, policy);
            }
            let p = world.add_pod(p);
            let mut m = Manager::new(world);
            set(&mut m, &p, &json!({"phase": "Running", key: [container_in("a", done(code))]}));
            let outcome = set(&mut m, &p, &json!({"phase": "Running", key: [container_in("a", running.clone())]}));
            let case = format!("{policy:?} after exit {code}, {key}");
            if allowed {
                assert_eq!(outcome, UpdateOutcome::Queued, "{case}");
                assert_eq!(status_of(&mut m, "uid-a")[key][0]["state"], running, "{case}");
            } else {
                assert_eq!(outcome, UpdateOutcome::Unchanged, "{case}: refused, as v1 never does");
                assert_eq!(cached(&mut m, "uid-a").unwrap().0, 1, "{case}: nothing cached");
                assert!(m.imports_mut().logs.iter().any(|(_, l)| l.contains("illegal transition")), "{case}");
            }
        }
    }
}

// ---- the terminal phase and deletion ----

#[test]
fn v2_differs_from_v1_delays_the_terminal_phase_while_a_container_may_run() {
    let (mut world, pod) = world_with_pod_a();
    world.running = true;
    let mut m = Manager::new(world);
    set(&mut m, &pod, &json!({"phase": "Running", "message": "up"}));
    drain(&mut m);
    set(&mut m, &pod, &json!({"phase": "Failed", "reason": "Evicted", "message": "was evicted"}));
    assert_eq!(drain(&mut m), [SyncOutcome::UpToDate], "nothing else to write");
    let api = m.imports_mut().api_status("ns", "a");
    assert_eq!(
        (api["phase"].as_str(), api["message"].as_str(), api.get("reason")),
        (Some("Running"), Some("up"), None)
    );
    assert_eq!(m.imports_mut().running_queries, 1, "asked only for the transition");
    assert_eq!(status_of(&mut m, "uid-a")["phase"], "Failed", "the cache has it all along");

    // Once no container can run, the batch sync finds the drift and writes the phase.
    m.imports_mut().running = false;
    assert_eq!(m.sync_batch(), BatchReport { synced: 1, reconciled: 1, failed: 0 });
    let api = m.imports_mut().api_status("ns", "a");
    assert_eq!((api["phase"].as_str(), api["reason"].as_str()), (Some("Failed"), Some("Evicted")));
}

#[test]
fn v2_differs_from_v1_sends_disruption_target_with_the_terminal_phase() {
    let (mut world, pod) = world_with_pod_a();
    world.running = true;
    let mut m = Manager::new(world);
    set(&mut m, &pod, &json!({"phase": "Running"}));
    drain(&mut m);
    m.imports_mut().set_now(T0 + 2000, 0);
    set(
        &mut m,
        &pod,
        &json!({"phase": "Failed", "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}]}),
    );
    drain(&mut m);
    assert_eq!(find_condition(&m.imports_mut().api_status("ns", "a"), "DisruptionTarget"), None, "held back");

    m.imports_mut().running = false;
    m.imports_mut().set_now(T0 + 3000, 0);
    m.sync_batch();
    let api = m.imports_mut().api_status("ns", "a");
    let target = condition(&api, "DisruptionTarget");
    assert_eq!(target["reason"], "TerminationByKubelet");
    assert_eq!(seconds_of(&target["lastTransitionTime"]), T0 + 3000, "transitions when it is sent");
}

#[test]
fn v2_differs_from_v1_deletes_only_a_finished_pod_once_the_phase_is_terminal() {
    let mut world = FakeWorld::v2();
    world.reclaimed = true;
    let pod = world.add_pod(deleting(pod("ns", "a", "uid-a", &["a"])));
    let mut m = Manager::new(world.clone());
    set(&mut m, &pod, &json!({"phase": "Running"}));
    assert_eq!(drain(&mut m), [SyncOutcome::Written], "v1 deletes here");
    assert_eq!(m.imports_mut().take_verbs(), [GET, PATCH]);
    assert_eq!(m.sync_batch(), BatchReport::default(), "still nothing to delete");

    // Terminal, but not from terminate-pod: written, not deleted.
    set(&mut m, &pod, &json!({"phase": "Succeeded"}));
    assert_eq!(drain(&mut m), [SyncOutcome::Written]);
    assert_eq!(m.imports_mut().take_verbs(), [GET, PATCH]);
    assert_eq!(m.sync_batch(), BatchReport::default(), "not finished: nothing to delete");

    // terminate-pod finishes it: its sync deletes.
    terminate(&mut m, &pod);
    assert_eq!(drain(&mut m), [SyncOutcome::Deleted]);
    assert_eq!(m.imports_mut().take_verbs(), [GET, DELETE]);
    assert_eq!(m.imports_mut().reclaimed_queries, 0, "v2 does not ask whether resources are reclaimed");

    let mut old = v1(world);
    v1_set(&mut old, &pod, &json!({"phase": "Running"}));
    let request = old.imports_mut().pop_request().unwrap();
    assert_eq!(old.sync_pod(&request), Ok(SyncOutcome::Deleted));
}

#[test]
fn v2_differs_from_v1_deletes_a_finished_pod_already_failed_whatever_resources_say() {
    let mut world = FakeWorld::v2();
    world.reclaimed = false;
    world.running = true;
    let pod = world.add_pod(deleting(with_status(
        with_restart_policy(pod("ns", "a", "uid-a", &["c"]), "Never"),
        json!({"phase": "Failed", "containerStatuses": [container_in("c", json!({"terminated": {"exitCode": 1}}))]}),
    )));
    let mut m = Manager::new(world.clone());
    terminate(&mut m, &pod);
    assert_eq!(drain(&mut m), [SyncOutcome::Deleted]);
    assert_eq!(m.imports_mut().take_verbs(), [GET, PATCH, DELETE], "startTime is new");

    let mut old = v1(world);
    old.terminate_pod(&pod.to_string()).unwrap();
    let request = old.imports_mut().pop_request().unwrap();
    assert_eq!(old.sync_pod(&request), Ok(SyncOutcome::Written), "v1 waits for the resources");
}

// ---- sync requests ----

#[test]
fn v2_differs_from_v1_one_request_signals_one_pass_over_every_unwritten_pod() {
    let mut world = FakeWorld::v2();
    let (a, b) = world.add_pods_a_and_b();
    let mut m = Manager::new(world.clone());
    for message in ["1", "2", "3"] {
        assert_eq!(set(&mut m, &a, &json!({"message": message})), UpdateOutcome::Queued);
    }
    assert_eq!(set(&mut m, &b, &json!({"message": "1"})), UpdateOutcome::Queued);
    let queued: Vec<(String, u64)> = m.imports_mut().queue.iter().map(|r| (r.pod_uid.clone(), r.version)).collect();
    assert_eq!(queued, [("uid-a".to_string(), 1)], "one signal for every update");
    assert_eq!(drain(&mut m), [SyncOutcome::Written], "the outcome is the request's pod's");
    assert_eq!(m.imports_mut().take_verbs(), [GET, PATCH, GET, PATCH], "each pod written once");
    assert_eq!(m.imports_mut().api_status("ns", "a")["message"], "3");
    assert_eq!(m.imports_mut().api_status("ns", "b")["message"], "1");

    // Once handled, the next change signals again.
    set(&mut m, &b, &json!({"message": "2"}));
    assert_eq!(m.imports_mut().queue.len(), 1);

    let mut old = v1(world);
    for message in ["1", "2", "3"] {
        v1_set(&mut old, &a, &json!({"message": message}));
    }
    assert_eq!(old.imports_mut().queue.len(), 3, "v1 queues every version");
}

#[test]
fn v2_differs_from_v1_a_pass_tries_each_pod_once() {
    let mut world = FakeWorld::v2();
    let gone = pod("ns", "gone", "uid-0", &["c"]);
    world.add_managed_pod(gone.clone());
    let (a, b) = world.add_pods_a_and_b();
    let mut m = Manager::new(world);
    set(&mut m, &gone, &json!({"message": "gone"}));
    set(&mut m, &a, &json!({"message": "a"}));
    set(&mut m, &b, &json!({"message": "b"}));
    m.imports_mut().fail(PATCH, ApiError::Other("unavailable".into()));
    assert_eq!(drain(&mut m), [SyncOutcome::PodNotFound]);
    // gone is read once, a's failed write is not retried within the pass.
    assert_eq!(m.imports_mut().take_verbs(), [GET, GET, PATCH, GET, PATCH]);
    m.imports_mut().heal(PATCH);
    assert_eq!(drain(&mut m), [], "nothing signalled since");
    assert_eq!(m.sync_batch(), BatchReport { synced: 3, reconciled: 0, failed: 0 });
    assert_eq!(m.imports_mut().take_verbs(), [GET, GET, PATCH, GET, PATCH], "the batch retries the three");
    assert_eq!(m.imports_mut().api_status("ns", "b")["message"], "b");
}

#[test]
fn v2_differs_from_v1_a_sync_writes_the_latest_status_not_its_snapshot() {
    let (world, pod) = world_with_pod_a();
    let mut m = Manager::new(world.clone());
    set(&mut m, &pod, &json!({"phase": "Pending"}));
    set(&mut m, &pod, &json!({"phase": "Running"}));
    let request = m.imports_mut().pop_request().unwrap();
    assert_eq!(request.version, 1);
    assert_eq!(m.sync_pod(&request), Ok(SyncOutcome::Written));
    assert_eq!(m.imports_mut().api_status("ns", "a")["phase"], "Running", "v1 writes Pending, version 1's");
    assert_eq!(m.sync_batch(), BatchReport::default(), "version 2 is written");
}

#[test]
fn v2_differs_from_v1_a_sync_retries_other_unwritten_pods() {
    let (mut m, a, b) = pods_a_and_b();
    set(&mut m, &a, &json!({"message": "a"}));
    m.imports_mut().fail(Verb::PatchPodStatus, ApiError::Other("unavailable".into()));
    assert_eq!(drain(&mut m), [SyncOutcome::WriteFailed]);
    m.imports_mut().heal(Verb::PatchPodStatus);
    m.imports_mut().take_calls();

    // b's request retries a too, as 1.27's signal does (v1 leaves a to the batch).
    set(&mut m, &b, &json!({"message": "b"}));
    assert_eq!(drain(&mut m), [SyncOutcome::Written]);
    let calls = m.imports_mut().take_calls();
    let written: Vec<&str> = calls.iter().filter(|c| c.verb == PATCH).map(|c| c.name.as_str()).collect();
    assert_eq!(written, ["b", "a"], "the request's pod first");
    assert_eq!(m.imports_mut().api_status("ns", "a")["message"], "a");
}

#[test]
fn v2_differs_from_v1_a_static_pod_without_mirror_pod_is_not_fetched() {
    let mut world = FakeWorld::v2();
    let (static_pod, _) = static_and_mirror("ns", "s", "uid-s", "uid-m", &["a"]);
    world.add_managed_pod(static_pod.clone());
    let mut m = Manager::new(world);
    set(&mut m, &static_pod, &json!({"phase": "Running"}));
    assert_eq!(drain(&mut m), [SyncOutcome::PodNotFound]);
    assert_eq!(m.imports_mut().take_verbs(), [], "v1 asks the API server for it");
}

#[test]
fn v2_differs_from_v1_a_static_pods_request_checks_its_mirror_pods_version() {
    let mut world = FakeWorld::v2();
    let (static_pod, mirror) = static_and_mirror("ns", "s", "uid-s", "uid-m", &["a"]);
    world.add_managed_pod(static_pod.clone());
    world.add_pod(mirror);
    let mut m = Manager::new(world);
    set(&mut m, &static_pod, &json!({"phase": "Pending"}));
    set(&mut m, &static_pod, &json!({"phase": "Running"}));
    // The batch writes version 2 to the mirror pod before the queued request's turn.
    assert_eq!(m.sync_batch().synced, 1);
    m.imports_mut().take_calls();
    assert_eq!(drain(&mut m), [SyncOutcome::UpToDate]);
    assert_eq!(m.imports_mut().take_verbs(), [], "v1 writes its version 1 snapshot over version 2");
    assert_eq!(m.imports_mut().api_status("ns", "s")["phase"], "Running");
}

#[test]
fn v2_differs_from_v1_a_dropped_status_is_not_written() {
    let (world, pod) = world_with_pod_a();
    let mut m = Manager::new(world);
    set(&mut m, &pod, &json!({"phase": "Running"}));
    assert_eq!(m.remove_orphaned_statuses(&[]), 1);
    assert_eq!(drain(&mut m), [SyncOutcome::UpToDate], "nothing left to write");
    assert_eq!(m.imports_mut().take_verbs(), [], "v1 writes the queued snapshot");
}

#[test]
fn v2_differs_from_v1_a_request_refused_by_a_full_queue_is_queued_again_by_the_next_change() {
    let (mut world, pod) = world_with_pod_a();
    world.queue_capacity = 0;
    let mut m = Manager::new(world);
    assert_eq!(set(&mut m, &pod, &json!({"message": "1"})), UpdateOutcome::QueueFull);
    m.imports_mut().queue_capacity = 10;
    assert_eq!(set(&mut m, &pod, &json!({"message": "2"})), UpdateOutcome::Queued);
    assert_eq!(m.imports_mut().queue.len(), 1);
    // The next change rides on the queued request.
    assert_eq!(set(&mut m, &pod, &json!({"message": "3"})), UpdateOutcome::Queued);
    assert_eq!(m.imports_mut().pushed.len(), 2, "pushed: the refused one and the queued one");
}

#[test]
fn a_queued_signal_holds_the_slot_after_the_batch_writes_its_pod() {
    // 1.27's channel keeps its one signal until the sync loop takes it, whatever a
    // batch sync wrote meanwhile: a later update rides on it, and taking it is one pass
    // (Kubernetes' own manager, through the upstream oracle, does the same).
    let (mut m, a, b) = pods_a_and_b();
    set(&mut m, &a, &json!({"message": "a"}));
    assert_eq!(m.sync_batch(), BatchReport { synced: 1, reconciled: 0, failed: 0 });
    m.imports_mut().take_calls();
    set(&mut m, &b, &json!({"message": "b"}));
    assert_eq!(m.imports_mut().queue.len(), 1, "b's update rides on a's signal, written or not");
    // One signal, one pass: a is up to date, b is written in the same pass.
    assert_eq!(drain(&mut m), [SyncOutcome::UpToDate]);
    assert_eq!(m.imports_mut().take_verbs(), [GET, PATCH]);
    assert_eq!(m.imports_mut().api_status("ns", "b")["message"], "b");
}
