//! The kubelet's common call answered without the semantic path (issue 27): a
//! `SetPodStatus` that repeats the pod's last unchanged call over the same cached
//! status, and a probe result the cached status already has. Each test shows both
//! halves: the shortcut taken (the semantic path's trace line is not logged again), and
//! every other change of the pod sending the next call the semantic way.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::v2::*;
use podstatus_logic_testing::*;
use podstatus_logic_v2::{Level, Manager, UpdateOutcome};
use serde_json::{Value, json};

/// A manager over pod ns/a (containers a and b), and a status of it with container a
/// ready as `a_ready` says.
fn pod_a() -> (M, Value) {
    let mut world = FakeWorld::v2();
    let pod = world.add_pod(pod("ns", "a", "uid-a", &["a", "b"]));
    (Manager::new(world), pod)
}

fn status(a_ready: bool) -> Value {
    json!({"phase": "Running", "containerStatuses": [container("a", a_ready), container("b", false)]})
}

/// How many times the semantic path found a status the same, by its trace line.
fn semantic_unchanged(m: &mut M) -> usize {
    let logs = std::mem::take(&mut m.imports_mut().logs);
    logs.iter().filter(|(level, line)| *level == Level::Trace && line.starts_with("ignoring same status")).count()
}

fn version(m: &mut M) -> u64 {
    m.get_pod_status("uid-a").unwrap().expect("cached").version
}

#[test]
fn a_repeat_of_an_unchanged_update_is_answered_from_its_digests() {
    let (mut m, pod) = pod_a();
    assert_eq!(set(&mut m, &pod, &status(false)), UpdateOutcome::Queued);
    assert_eq!(set(&mut m, &pod, &status(false)), UpdateOutcome::Unchanged);
    assert_eq!(semantic_unchanged(&mut m), 1, "the first repeat is judged semantically");
    for _ in 0..3 {
        assert_eq!(set(&mut m, &pod, &status(false)), UpdateOutcome::Unchanged);
    }
    assert_eq!(semantic_unchanged(&mut m), 0, "later repeats are told from the digests");
    assert_eq!(version(&mut m), 1);
}

#[test]
fn another_update_of_the_pod_sends_the_next_repeat_the_semantic_way() {
    let (mut m, pod) = pod_a();
    set(&mut m, &pod, &status(false));
    set(&mut m, &pod, &status(false));
    // A readiness result makes container a ready: the cached status is another now, so
    // the remembered call (a not ready) is a change back, not a repeat.
    assert_eq!(m.set_container_readiness("uid-a", "containerd://a", true).unwrap(), UpdateOutcome::Queued);
    assert_eq!(set(&mut m, &pod, &status(false)), UpdateOutcome::Queued);
    assert_eq!(version(&mut m), 3);
}

#[test]
fn a_dropped_status_or_a_loaded_state_forgets_the_remembered_calls() {
    let (mut m, pod) = pod_a();
    set(&mut m, &pod, &status(false));
    set(&mut m, &pod, &status(false));
    assert_eq!(m.remove_orphaned_statuses(&[]), 1);
    assert_eq!(set(&mut m, &pod, &status(false)), UpdateOutcome::Queued, "cached anew");
    assert_eq!(version(&mut m), 1);

    set(&mut m, &pod, &status(false));
    let state = m.save_state().unwrap();
    m.load_state(&state).unwrap();
    semantic_unchanged(&mut m);
    assert_eq!(set(&mut m, &pod, &status(false)), UpdateOutcome::Unchanged);
    assert_eq!(semantic_unchanged(&mut m), 1, "after a load the call is judged again");
}

#[test]
fn a_forced_update_is_never_a_repeat() {
    let (mut m, pod) = pod_a();
    let mut deleting = pod.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    for expected_version in 1..=3 {
        assert_eq!(set(&mut m, &deleting, &status(false)), UpdateOutcome::Queued);
        assert_eq!(version(&mut m), expected_version);
    }
}

#[test]
fn a_probe_result_the_cached_status_has_changes_nothing_and_keeps_upstreams_order() {
    let (mut m, pod) = pod_a();
    set(&mut m, &pod, &status(true));
    assert_eq!(m.set_container_readiness("uid-a", "containerd://a", true).unwrap(), UpdateOutcome::Unchanged);
    assert_eq!(m.set_container_startup("uid-a", "containerd://a", false).unwrap(), UpdateOutcome::Queued, "unset");
    assert_eq!(m.set_container_startup("uid-a", "containerd://a", false).unwrap(), UpdateOutcome::Unchanged);
    // The pod manager is asked first, as upstream asks it: a pod it no longer has is
    // not found, even though its cached status has the readiness already.
    m.imports_mut().remove_managed_pod("uid-a");
    assert_eq!(m.set_container_readiness("uid-a", "containerd://a", true).unwrap(), UpdateOutcome::PodNotFound);
    assert_eq!(m.set_container_startup("uid-a", "containerd://a", false).unwrap(), UpdateOutcome::PodNotFound);
}

#[test]
fn logic_v1_still_has_no_startup_probes() {
    let mut world = FakeWorld::new();
    let pod = world.add_pod(pod("ns", "a", "uid-a", &["a"]));
    let mut m: V1 = podstatus_logic_v1::Manager::new(world);
    let mut started = container("a", true);
    started["started"] = json!(true);
    m.set_pod_status(&pod.to_string(), &json!({"containerStatuses": [started]}).to_string()).unwrap();
    assert!(m.set_container_startup("uid-a", "containerd://a", true).is_err(), "unsupported, flag or not");
}
