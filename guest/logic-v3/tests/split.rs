//! Logic v3's syncs driven one API call at a time (contract 0.2.0): the first call is
//! the patch sent without reading, and a refused patch goes on with v2's read.

use podstatus_logic_testing::*;
use podstatus_logic::StatusManager;
use podstatus_logic_v3::{ApiCall, ApiError, ApiReply, Level, Manager, SyncOutcome, SyncStep};
use serde_json::json;

podstatus_logic_testing::split_sync_drivers!(Manager<FakeWorld>);

/// Patches, a deletion after terminate-pod, a pod gone from the API server, static
/// pods with and without mirror pod, drift, a failed GET, garbage from the API server
/// (a request's, a pass's and a batch's error) and a recreated pod.
fn scenario(m: &mut M, sync_pod: SyncPod, sync_batch: SyncBatch) -> Vec<String> {
    let mut seen = Vec::new();
    let world = m.imports_mut();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    let b = world.add_pod(deleting(pod("ns", "b", "uid-b", &["c"])));
    let c = pod("ns", "c", "uid-c", &["c"]);
    world.add_managed_pod(c.clone());
    let (s, mirror) = static_and_mirror("ns", "s", "uid-s", "uid-sm", &["c"]);
    world.add_managed_pod(s.clone());
    world.add_pod(mirror);
    let (t, _) = static_and_mirror("ns", "t", "uid-t", "uid-tm", &["c"]);
    world.add_managed_pod(t.clone());
    let drain = |m: &mut M, seen: &mut Vec<String>| {
        while let Some(request) = m.imports_mut().pop_request() {
            seen.push(format!("{:?}", sync_pod(m, &request)));
        }
    };

    set(m, &a, running("Running", false));
    set(m, &c, running("Pending", false));
    set(m, &s, running("Running", true));
    set(m, &t, running("Running", true));
    m.terminate_pod(&b.to_string()).unwrap();
    drain(m, &mut seen);

    m.imports_mut().drift_status("ns", "a", json!({"phase": "Pending"}));
    seen.push(format!("{:?}", sync_batch(m)));

    m.imports_mut().fail(Verb::GetPod, ApiError::Other("the server is unhappy".into()));
    set(m, &a, running("Running", true));
    drain(m, &mut seen);
    m.imports_mut().heal(Verb::GetPod);

    // v3 reads only after a refused patch: garbage comes as the patch's answer.
    m.imports_mut().answer_garbage(Verb::PatchPodStatus, "not a pod");
    set(m, &a, running("Running", false));
    set(m, &s, running("Running", false));
    drain(m, &mut seen);
    seen.push(format!("{:?}", sync_batch(m)));
    m.imports_mut().heal(Verb::PatchPodStatus);

    // Recreated under the same name: the patch's UID precondition fails, then the read
    // finds the new pod.
    m.imports_mut().remove_api_pod("ns", "a");
    m.imports_mut().add_api_pod(pod("ns", "a", "uid-a2", &["c"]));
    set(m, &a, running("Failed", false));
    drain(m, &mut seen);
    seen.push(format!("{:?}", sync_batch(m)));
    seen
}

#[test]
fn immediate_answers_make_the_calls_and_imports_of_the_blocking_path() {
    let mut blocking = Manager::new(FakeWorld::v2());
    let seen = scenario(&mut blocking, |m, r| m.sync_pod(r), |m| m.sync_batch());
    let blocking = observed(&mut blocking, seen);

    let mut split = Manager::new(FakeWorld::v2());
    let seen = scenario(&mut split, split_sync_pod, split_sync_batch);
    assert_eq!(split.syncs_in_flight(), 0);
    let split = observed(&mut split, seen);

    assert_eq!(split, blocking);
    let seen = blocking.seen.join(" ");
    for outcome in ["Written", "InvalidPod", "Recreated", "reconciled: 1"] {
        assert!(seen.contains(outcome), "{outcome} missing from {seen}");
    }
    let logs = &blocking.logs;
    for line in ["sync of pod uid-s failed", "batch sync of pod", "fully terminated", "no mirror pod yet", "refused"] {
        assert!(logs.iter().any(|(_, l)| l.contains(line)), "{line} missing from {logs:?}");
    }
}

#[test]
fn the_first_call_is_the_patch_and_a_refused_one_goes_on_with_a_read() {
    let mut world = FakeWorld::v2();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    let b = world.add_pod(pod("ns", "b", "uid-b", &["c"]));
    let mut m = Manager::new(world);
    set(&mut m, &a, running("Running", true));
    set(&mut m, &b, running("Running", true));
    let request = m.imports_mut().pop_request().unwrap();
    let [a_sync, b_sync] = <[_; 2]>::try_from(m.plan_sync_pod(&request).unwrap()).unwrap();

    let SyncStep::Call(patch) = m.start_sync(a_sync.id).unwrap() else { panic!("v3 patches first") };
    let ApiCall::PatchPodStatus(body) = &patch else { panic!("v3 patches without reading: {patch:?}") };
    assert_eq!(body.uid_precondition.as_deref(), Some("uid-a"));
    // While a's patch is out, b's sync runs to its end.
    assert_eq!(drive(&mut m, b_sync.id), Ok(SyncOutcome::Written));

    // The API server refuses a's patch: the sync reads, then patches what it read.
    let refused = ApiReply::Pod(Err(ApiError::Conflict("the object has been modified".into())));
    let SyncStep::Call(get) = m.resume_sync(a_sync.id, refused).unwrap() else { panic!("reads") };
    assert_eq!(get, ApiCall::GetPod { namespace: "ns".into(), name: "a".into() });
    let reply = m.imports_mut().answer(get);
    let SyncStep::Call(patch) = m.resume_sync(a_sync.id, reply).unwrap() else { panic!("patches") };
    let reply = m.imports_mut().answer(patch);
    assert_eq!(m.resume_sync(a_sync.id, reply), Ok(SyncStep::Done(SyncOutcome::Written)));
    assert_eq!(m.imports_mut().api_status("ns", "a")["phase"], "Running");
    use Verb::{GetPod as G, PatchPodStatus as P};
    assert_eq!(m.imports_mut().take_verbs(), [P, G, P]);
    assert_eq!(m.syncs_in_flight(), 0);
}

#[test]
fn a_reply_that_does_not_fit_the_patch_sent_without_reading_is_a_failed_write() {
    let mut world = FakeWorld::v2();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    let mut m = Manager::new(world);
    set(&mut m, &a, running("Running", true));
    let request = m.imports_mut().pop_request().unwrap();
    let id = m.plan_sync_pod(&request).unwrap()[0].id;
    let SyncStep::Call(ApiCall::PatchPodStatus(_)) = m.start_sync(id).unwrap() else { panic!("patches first") };
    assert_eq!(m.resume_sync(id, ApiReply::Deleted(Ok(()))), Ok(SyncStep::Done(SyncOutcome::WriteFailed)));
    let (level, line) = m.imports_mut().logs.last().cloned().unwrap();
    assert_eq!(level, Level::Warn);
    assert!(line.contains("reply does not fit the call"), "{line}");
    assert!(!m.drop_sync(id));
}
