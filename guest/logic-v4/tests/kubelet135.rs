//! Kubernetes 1.35 as upstream writes (`Kubelet135`: 1.35's decisions in the
//! read-then-patch mode): a GET before every PATCH, the patch the diff from the status
//! read. Each test shows it where logic v4 (the same decisions in the one-call mode)
//! writes otherwise, or where the composition is 1.27's write with 1.35's decisions.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::{FakeWorld, Verb, pod, with_status};
use podstatus_logic_v4::{Kubelet135, SyncOutcome};
use serde_json::{Value, json};

type M = podstatus_logic::Manager<FakeWorld, Kubelet135>;

fn drain<P: StatusManager>(m: &mut P, world: impl Fn(&mut P) -> &mut FakeWorld) -> Vec<SyncOutcome> {
    let mut outcomes = Vec::new();
    while let Some(request) = world(m).pop_request() {
        outcomes.push(m.sync_pod(&request).unwrap());
    }
    outcomes
}

fn with_generation(mut pod: Value, generation: i64) -> Value {
    pod["metadata"]["generation"] = json!(generation);
    pod
}

fn running(ready: &str) -> Value {
    json!({"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]})
}

#[test]
fn each_write_reads_the_pod_and_patches_the_diff_from_it() {
    let mut world = FakeWorld::v2();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    let mut m = M::new(world);
    m.set_pod_status(&a.to_string(), &running("False").to_string()).unwrap();
    assert_eq!(drain(&mut m, |m| m.imports_mut()), [SyncOutcome::Written]);
    m.imports_mut().take_calls();
    m.set_pod_status(&a.to_string(), &running("True").to_string()).unwrap();
    assert_eq!(drain(&mut m, |m| m.imports_mut()), [SyncOutcome::Written]);
    let world = m.imports_mut();
    let patches = world.patches();
    assert_eq!(world.take_verbs(), [Verb::GetPod, Verb::PatchPodStatus], "a GET, then the PATCH");
    // The diff alone: the phase and start time are what the server holds already.
    let status = &patches[0]["status"];
    assert!(status.get("phase").is_none() && status.get("startTime").is_none(), "{status}");
    assert_eq!(status["conditions"][0]["status"], "True", "{status}");
}

#[test]
fn a_terminal_ready_condition_carries_the_generation_of_the_pod_as_read() {
    // The pod manager's copy is at generation 1; the API server's pod at 2.
    let build = || {
        let mut world = FakeWorld::v2();
        let a = world.add_pod(with_generation(pod("ns", "a", "uid-a", &["c"]), 1));
        world.add_api_pod(with_generation(pod("ns", "a", "uid-a", &["c"]), 2));
        (world, a)
    };
    let succeeded = json!({"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "True"}]});
    let ready_generation = |status: Value| {
        let ready = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap().clone();
        (ready["status"].clone(), ready["observedGeneration"].clone())
    };

    let (world, a) = build();
    let mut upstream = M::new(world);
    upstream.set_pod_status(&a.to_string(), &succeeded.to_string()).unwrap();
    drain(&mut upstream, |m| m.imports_mut());
    let written = upstream.imports_mut().api_status("ns", "a");
    assert_eq!(ready_generation(written), (json!("False"), json!(2)), "mergePodStatus(pod as read, ...)");

    // v4 reads no pod: its merge is computed over the pod manager's copy.
    let (world, a) = build();
    let mut v4 = podstatus_logic_v4::Manager::new(world);
    v4.set_pod_status(&a.to_string(), &succeeded.to_string()).unwrap();
    drain(&mut v4, |m| m.imports_mut());
    let written = v4.imports_mut().api_status("ns", "a");
    assert_eq!(ready_generation(written), (json!("False"), json!(1)));
}

#[test]
fn a_kubelet_condition_no_longer_reported_is_removed_from_the_status_read() {
    // The API server holds a Ready condition the pod manager's copy has not seen yet;
    // the kubelet's status no longer reports Ready.
    let build = || {
        let mut world = FakeWorld::v2();
        let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
        world.add_api_pod(with_status(pod("ns", "a", "uid-a", &["c"]), running("True")));
        (world, a)
    };
    let without_ready = json!({"phase": "Running"});
    let types = |status: Value| -> Vec<Value> {
        status["conditions"].as_array().into_iter().flatten().map(|c| c["type"].clone()).collect()
    };

    let (world, a) = build();
    let mut upstream = M::new(world);
    upstream.set_pod_status(&a.to_string(), &without_ready.to_string()).unwrap();
    drain(&mut upstream, |m| m.imports_mut());
    assert!(types(upstream.imports_mut().api_status("ns", "a")).is_empty(), "the merge over the status read drops it");

    let (world, a) = build();
    let mut v4 = podstatus_logic_v4::Manager::new(world);
    v4.set_pod_status(&a.to_string(), &without_ready.to_string()).unwrap();
    drain(&mut v4, |m| m.imports_mut());
    assert_eq!(types(v4.imports_mut().api_status("ns", "a")), [json!("Ready")], "a patch from the copy leaves it");
}

#[test]
fn without_the_features_of_1_35_it_writes_as_1_27_does() {
    let steps = |m: &mut dyn StatusManager, a: &Value| {
        m.set_pod_status(&a.to_string(), &running("False").to_string()).unwrap();
        m.set_pod_status(&a.to_string(), &running("True").to_string()).unwrap();
        m.terminate_pod(&a.to_string()).unwrap();
    };
    let mut world = FakeWorld::v2();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    let mut v2 = podstatus_logic_v2::Manager::new(world.clone());
    let mut upstream = M::new(world);
    steps(&mut v2, &a);
    steps(&mut upstream, &a);
    drain(&mut v2, |m| m.imports_mut());
    drain(&mut upstream, |m| m.imports_mut());
    assert_eq!(upstream.imports_mut().take_calls(), v2.imports_mut().take_calls());
    assert_eq!(upstream.imports_mut().api_status("ns", "a"), v2.imports_mut().api_status("ns", "a"));
}
