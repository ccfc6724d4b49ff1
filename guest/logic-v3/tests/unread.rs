//! Logic v3 writes each version with one UID-guarded patch and reads only after the API
//! server refused it.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::*;
use podstatus_logic_v3::{ApiError, Manager, SyncOutcome};
use serde_json::{Value, json};

type M3 = Manager<FakeWorld>;

fn set(m: &mut M3, pod: &Value, status: Value) {
    m.set_pod_status(&pod.to_string(), &status.to_string()).unwrap();
}

fn drain(m: &mut M3) -> Vec<SyncOutcome> {
    let mut outcomes = Vec::new();
    while let Some(request) = m.imports_mut().pop_request() {
        outcomes.push(m.sync_pod(&request).unwrap());
    }
    outcomes
}

fn running(ready: bool) -> Value {
    json!({"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
           "containerStatuses": [v2::container("c", ready)]})
}

fn world() -> (M3, Value) {
    let mut world = FakeWorld::v2();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    (Manager::new(world), a)
}

#[test]
fn each_version_is_one_patch_against_what_was_last_written() {
    let (mut m, a) = world();
    set(&mut m, &a, running(false));
    assert_eq!(drain(&mut m), [SyncOutcome::Written]);
    set(&mut m, &a, running(true));
    assert_eq!(drain(&mut m), [SyncOutcome::Written]);
    let calls = m.imports_mut().take_calls();
    assert!(calls.iter().all(|c| c.verb == Verb::PatchPodStatus), "{calls:?}");
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.uid_precondition.as_deref() == Some("uid-a")));
    // The second patch carries only what changed since the first.
    let second = &calls[1].patch.as_ref().unwrap()["status"];
    assert!(second.get("phase").is_none() && second.get("startTime").is_none(), "{second}");
    assert_eq!(m.imports_mut().api_status("ns", "a")["containerStatuses"][0]["ready"], true);
    // The state document keeps the API server's status after the write, at version 2.
    let document: Value = serde_json::from_str(&m.save_state().unwrap()).unwrap();
    let written = &document["statuses"]["uid-a"]["lastWritten"];
    assert_eq!((written["uid"].as_str(), written["version"].as_u64()), (Some("uid-a"), Some(2)));
}

#[test]
fn a_recreated_pod_refuses_the_patch_and_only_then_is_the_pod_read() {
    let (mut m, a) = world();
    set(&mut m, &a, running(false));
    drain(&mut m);
    m.imports_mut().take_calls();
    m.imports_mut().remove_api_pod("ns", "a");
    m.imports_mut().add_api_pod(pod("ns", "a", "uid-a2", &["c"]));
    set(&mut m, &a, running(true));
    assert_eq!(drain(&mut m), [SyncOutcome::Recreated]);
    assert_eq!(m.imports_mut().take_verbs(), [Verb::PatchPodStatus, Verb::GetPod]);
    assert_eq!(m.get_pod_status("uid-a").unwrap(), None, "the old pod's status is dropped");
}

#[test]
fn a_conflict_reads_and_patches_again_from_the_pod_as_read() {
    let (mut m, a) = world();
    // Another writer's copy: the pod manager's is stale (a status the API server no
    // longer has), so is the shortcut's; the server says conflict once.
    m.imports_mut().fail(Verb::PatchPodStatus, ApiError::Conflict("injected".into()));
    set(&mut m, &a, running(true));
    // The fake fails every patch until healed: the fallback's patch fails too.
    assert_eq!(drain(&mut m), [SyncOutcome::WriteFailed]);
    assert_eq!(m.imports_mut().take_verbs(), [Verb::PatchPodStatus, Verb::GetPod, Verb::PatchPodStatus]);
    m.imports_mut().heal(Verb::PatchPodStatus);
    m.sync_batch();
    assert_eq!(m.imports_mut().take_verbs(), [Verb::PatchPodStatus]);
    assert_eq!(m.imports_mut().api_status("ns", "a")["containerStatuses"][0]["ready"], true);
}

#[test]
fn a_missing_pod_ends_the_sync_without_a_read() {
    let (mut m, a) = world();
    m.imports_mut().remove_api_pod("ns", "a");
    set(&mut m, &a, running(true));
    assert_eq!(drain(&mut m), [SyncOutcome::PodNotFound]);
    assert_eq!(m.imports_mut().take_verbs(), [Verb::PatchPodStatus]);
    assert!(m.get_pod_status("uid-a").unwrap().is_some(), "dropped by remove-orphaned-statuses, as in v2");
}

#[test]
fn a_record_another_version_wrote_over_is_not_trusted() {
    let (mut m, a) = world();
    set(&mut m, &a, running(false));
    drain(&mut m);
    // v1 takes over, writes a newer version (a PUT of the whole status), hands back.
    let mut world = m.imports_mut().clone();
    world.allow_puts = true;
    let mut v1 = podstatus_logic_v1::Manager::new(world);
    v1.load_state(&m.save_state().unwrap()).unwrap();
    let failed = json!({"phase": "Failed", "containerStatuses": [v2::container("c", false)]});
    v1.set_pod_status(&a.to_string(), &failed.to_string()).unwrap();
    v1.sync_batch();
    let mut back = Manager::new(v1.imports_mut().clone());
    back.load_state(&v1.save_state().unwrap()).unwrap();
    back.imports_mut().take_calls();
    // Back to what v3 last wrote: against its record there is nothing to send, but the
    // record is void (v1 wrote version 2), so the patch is made from the pod manager's
    // copy, which has Failed.
    set(&mut back, &a, running(false));
    assert_eq!(drain(&mut back), [SyncOutcome::Written]);
    assert_eq!(back.imports_mut().take_verbs(), [Verb::PatchPodStatus]);
    assert_eq!(back.imports_mut().api_status("ns", "a")["phase"], "Running");
}
