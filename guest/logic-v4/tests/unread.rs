//! Logic v4 writes without reading, as v3 does, but its patch carries the whole merged
//! status, and it reads a pod being deleted before deciding to delete it. Both cases were
//! found by `fuzz --logic v4`; each test fails on v3's way of writing.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::{FakeWorld, Verb, deleting, pod};
use podstatus_logic_v4::{Manager, SyncOutcome};
use serde_json::json;

type M = Manager<FakeWorld>;

fn drain(m: &mut M) -> Vec<SyncOutcome> {
    let mut outcomes = Vec::new();
    while let Some(request) = m.imports_mut().pop_request() {
        outcomes.push(m.sync_pod(&request).unwrap());
    }
    outcomes
}

#[test]
fn a_status_patched_over_an_outside_reset_ends_whole() {
    let mut world = FakeWorld::v2();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    let mut m = Manager::new(world);
    let running = |ready: &str| json!({"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]});
    m.set_pod_status(&a.to_string(), &running("False").to_string()).unwrap();
    assert_eq!(drain(&mut m), [SyncOutcome::Written]);
    // Another writer empties the status; the pod manager's copy is left as it was (its
    // watch has not delivered the change yet), so v4 patches from its last write.
    let world = m.imports_mut();
    let mut reset = world.api_pod("ns", "a").unwrap().clone();
    reset["status"] = json!({});
    world.add_api_pod(reset);
    world.take_calls();
    m.set_pod_status(&a.to_string(), &running("True").to_string()).unwrap();
    assert_eq!(drain(&mut m), [SyncOutcome::Written]);
    assert_eq!(m.imports_mut().take_verbs(), [Verb::PatchPodStatus], "one patch, no read");
    // Phase and start time did not change since the last write, yet they are back.
    let api = m.imports_mut().api_status("ns", "a");
    assert_eq!(api["phase"], "Running", "{api}");
    assert!(api.get("startTime").is_some(), "{api}");
    assert_eq!(api["conditions"][0]["status"], "True");
}

#[test]
fn a_pod_being_deleted_with_nothing_to_send_is_read_before_its_delete() {
    let mut world = FakeWorld::v2();
    let a = world.add_pod(deleting(pod("ns", "a", "uid-a", &["c"])));
    let mut m = Manager::new(world);
    m.terminate_pod(&a.to_string()).unwrap();
    drain(&mut m);
    // The pod was written and deleted; the name now belongs to a new pod, while the pod
    // manager still holds the old copy and the kubelet terminates it again.
    let world = m.imports_mut();
    assert!(world.api_pod("ns", "a").is_none(), "the first sync deleted the pod");
    world.add_api_pod(pod("ns", "a", "uid-a2", &["c"]));
    assert!(world.take_verbs().contains(&Verb::DeletePod));
    m.terminate_pod(&a.to_string()).unwrap();
    m.imports_mut().take_calls();
    m.sync_batch();
    let verbs = m.imports_mut().take_verbs();
    assert!(!verbs.contains(&Verb::DeletePod), "no delete of the recreated name: {verbs:?}");
    assert!(verbs.contains(&Verb::GetPod), "read before deciding: {verbs:?}");
    assert!(m.imports_mut().api_pod("ns", "a").is_some(), "the new pod stays");
}

#[test]
fn a_pod_manager_copy_newer_than_the_last_write_is_the_base() {
    let mut world = FakeWorld::v2();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    let mut m = Manager::new(world);
    let running = |ready: &str| json!({"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]});
    m.set_pod_status(&a.to_string(), &running("False").to_string()).unwrap();
    drain(&mut m);
    // Another writer sets a field the kubelet does not report; the watch brings the
    // pod manager that copy, with a newer resourceVersion than v4's write.
    let mut drifted = m.imports_mut().api_status("ns", "a");
    drifted["message"] = json!("set by someone else");
    m.imports_mut().drift_status("ns", "a", drifted);
    m.imports_mut().take_calls();
    m.set_pod_status(&a.to_string(), &running("True").to_string()).unwrap();
    assert_eq!(drain(&mut m), [SyncOutcome::Written]);
    assert_eq!(m.imports_mut().take_verbs(), [Verb::PatchPodStatus], "still one patch, no read");
    // Patched from the newer copy, the field the kubelet does not set is removed, as
    // 1.35's patch from the pod as read removes it; from the last write it would stay.
    let api = m.imports_mut().api_status("ns", "a");
    assert!(api.get("message").is_none(), "{api}");
    assert_eq!(api["conditions"][0]["status"], "True");
}
