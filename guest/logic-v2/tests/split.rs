//! Logic v2's pass and batch driven one API call at a time (contract 0.2.0): a request
//! plans a sync of its pod and of every other cached pod, each checked when it starts.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::split::*;
use podstatus_logic_testing::*;
use podstatus_logic_v2::{
    ApiCall, ApiReply, BatchReport, BatchSlice, Level, Manager, ManagerError, SyncOrigin, SyncOutcome, SyncStep,
};
use serde_json::Value;

type M = Manager<FakeWorld>;

/// Pods ns/a and ns/b, both cached Running and ready: the one request they queue (v2
/// signals once) plans a sync of each.
fn two_running() -> M {
    let statuses = [("a", running("Running", true)), ("b", running("Running", true))];
    caching(FakeWorld::v2(), statuses).0
}

#[test]
fn immediate_answers_make_the_calls_and_imports_of_the_blocking_path() {
    let scenario = |m: &mut M, sync_pod, sync_batch| pass_scenario(m, sync_pod, sync_batch, Verb::GetPod, "c");
    let blocking = blocking_and_split_agree(FakeWorld::v2, scenario);
    let seen = blocking.seen.join(" ");
    for outcome in ["Written", "GetFailed", "InvalidPod", "Recreated", "reconciled: 1"] {
        assert!(seen.contains(outcome), "{outcome} missing from {seen}");
    }
    let logs = &blocking.logs;
    for line in ["sync of pod uid-c failed", "batch sync of pod uid-a failed", "fully terminated", "no mirror pod yet"]
    {
        assert!(logs.iter().any(|(_, l)| l.contains(line)), "{line} missing from {logs:?}");
    }
}

#[test]
fn a_request_plans_its_pod_first_then_every_other_cached_pod() {
    let statuses = ["c", "a", "b"].map(|n| (n, running("Running", true)));
    let (mut m, _): (M, _) = caching(FakeWorld::v2(), statuses);
    let request = m.imports_mut().pop_request().expect("one signal");
    assert_eq!(m.imports_mut().pop_request(), None);
    let planned: Vec<(String, SyncOrigin)> =
        m.plan_sync_pod(&request).unwrap().into_iter().map(|s| (s.pod_uid, s.origin)).collect();
    let expected = [("uid-c", SyncOrigin::Request), ("uid-a", SyncOrigin::Pass), ("uid-b", SyncOrigin::Pass)];
    assert_eq!(planned, expected.map(|(u, o)| (u.to_string(), o)));
    assert_eq!(m.syncs_in_flight(), 3);
    // The request is used up.
    assert_eq!(m.plan_sync_pod(&request), Err(ManagerError::UnknownRequest(request.id)));
}

#[test]
fn a_pass_plans_no_sync_of_a_pod_whose_latest_status_is_written() {
    let statuses = ["a", "b", "c"].map(|n| (n, running("Running", true)));
    let (mut m, pods): (M, _) = caching(FakeWorld::v2(), statuses);
    let request = m.imports_mut().pop_request().unwrap();
    split_sync_pod(&mut m, &request).unwrap();
    // b changes again: the next pass plans a's request sync and b's, not c's (written).
    set(&mut m, &pods[1], running("Running", false));
    let request = m.imports_mut().pop_request().unwrap();
    assert_eq!(request.pod_uid, "uid-b");
    let planned: Vec<String> = m.plan_sync_pod(&request).unwrap().into_iter().map(|s| s.pod_uid).collect();
    assert_eq!(planned, ["uid-b"]);

    // A static pod is planned whatever is written (its status lives under its mirror's
    // UID), and so is a mirror pod.
    let mut world = FakeWorld::v2();
    let (static_pod, mirror) = static_and_mirror("ns", "s", "uid-s", "uid-m", &["c"]);
    world.add_managed_pod(static_pod.clone());
    world.add_pod(mirror);
    let other = world.add_pod(pod("ns", "o", "uid-o", &["c"]));
    let mut m = Manager::new(world);
    set(&mut m, &static_pod, running("Running", true));
    set(&mut m, &other, running("Running", true));
    let request = m.imports_mut().pop_request().unwrap();
    split_sync_pod(&mut m, &request).unwrap();
    set(&mut m, &other, running("Running", false));
    let request = m.imports_mut().pop_request().unwrap();
    let planned: Vec<String> = m.plan_sync_pod(&request).unwrap().into_iter().map(|s| s.pod_uid).collect();
    assert_eq!(planned, ["uid-o", "uid-s"]);
}

#[test]
fn a_pass_sync_checks_when_it_starts_whether_its_pod_still_needs_writing() {
    let mut m = two_running();
    let syncs = plan_next_request(&mut m);

    // Before they start, a batch writes both pods and a's status is dropped.
    let report = m.sync_batch();
    assert_eq!(report, BatchReport { synced: 2, reconciled: 0, failed: 0 });
    assert_eq!(m.remove_orphaned_statuses(&["uid-b".to_string()]), 1);
    m.imports_mut().take_calls();
    for sync in syncs {
        assert_eq!(m.start_sync(sync.id), Ok(SyncStep::Done(SyncOutcome::UpToDate)), "{sync:?}");
    }
    assert_eq!(m.imports_mut().take_calls(), []);
    assert_eq!(m.syncs_in_flight(), 0);
}

#[test]
fn a_sync_waiting_for_its_get_lets_the_manager_serve_everything_else() {
    let statuses = [("a", running("Pending", false)), ("b", running("Running", true))];
    let (mut m, [a, _]): (M, _) = caching(FakeWorld::v2(), statuses);
    let [a_sync, b_sync] = <[_; 2]>::try_from(plan_next_request(&mut m)).unwrap();
    assert_eq!((a_sync.pod_uid.as_str(), b_sync.pod_uid.as_str()), ("uid-a", "uid-b"));

    let get = call_of(m.start_sync(a_sync.id), "v2 reads first");
    // Meanwhile a newer status of a (a new signal: the last was taken), and b's whole sync.
    set(&mut m, &a, running("Running", true));
    assert_eq!(m.imports_mut().queue.len(), 1);
    assert_eq!(drive(&mut m, b_sync.id), Ok(SyncOutcome::Written));
    assert_eq!(m.syncs_in_flight(), 1);

    // a's sync writes the version that was latest when it started.
    let patch = call_of(resume_answered(&mut m, a_sync.id, get), "v2 patches");
    let ApiCall::PatchPodStatus(body) = &patch else { panic!("v2 patches: {patch:?}") };
    assert_eq!(serde_json::from_str::<Value>(&body.patch).unwrap()["status"]["phase"], "Pending");
    assert_eq!(resume_answered(&mut m, a_sync.id, patch), Ok(SyncStep::Done(SyncOutcome::Written)));

    // The new signal's pass writes the newer version; b is written, so not planned.
    let request = m.imports_mut().pop_request().unwrap();
    let outcomes: Vec<_> = m.plan_sync_pod(&request).unwrap().into_iter().map(|s| drive(&mut m, s.id)).collect();
    assert_eq!(outcomes, [Ok(SyncOutcome::Written)]);
    assert_eq!(m.imports_mut().api_status("ns", "a")["phase"], "Running");
    // The host made a's GET only after b's sync (b's calls come first).
    use Verb::{GetPod as G, PatchPodStatus as P};
    assert_eq!(m.imports_mut().take_verbs(), [G, P, G, P, G, P]);
}

#[test]
fn a_pass_sync_that_fails_is_logged_as_the_pass_logged_it() {
    let mut m = two_running();
    let b_sync = plan_next_request(&mut m)[1].clone();
    assert_eq!(b_sync.origin, SyncOrigin::Pass);
    call_of(m.start_sync(b_sync.id), "reads first");
    let Err(e) = m.resume_sync(b_sync.id, ApiReply::Pod(Ok("not a pod".into()))) else { panic!("garbage fails") };
    assert!(matches!(e, ManagerError::InvalidPod(_)));
    let last = m.imports_mut().logs.last().cloned().unwrap();
    assert_eq!(last, (Level::Error, format!("sync of pod uid-b failed: {e}")));
    assert_eq!(m.syncs_in_flight(), 1, "a's sync still waits to start");
}

#[test]
fn a_reply_that_does_not_fit_the_patch_is_a_failed_write() {
    let (mut m, _): (M, _) = caching(FakeWorld::v2(), [("a", running("Running", true))]);
    let id = plan_next_request(&mut m)[0].id;
    let get = call_of(m.start_sync(id), "reads first");
    let ApiCall::PatchPodStatus(_) = call_of(resume_answered(&mut m, id, get), "patches") else { panic!("patches") };
    assert_eq!(m.resume_sync(id, ApiReply::Deleted(Ok(()))), Ok(SyncStep::Done(SyncOutcome::WriteFailed)));
    let (level, line) = m.imports_mut().logs.last().cloned().unwrap();
    assert_eq!(level, Level::Warn);
    assert!(line.starts_with("failed to patch status of pod ns/a") && line.contains("reply does not fit the call"));
    // Nothing is recorded as written: the next batch writes it.
    assert_eq!(m.plan_sync_batch(&BatchSlice::WHOLE).syncs.len(), 1);
}

#[test]
fn a_request_whose_pod_is_gone_plans_only_the_others() {
    let mut m = two_running();
    let request = m.imports_mut().pop_request().unwrap();
    assert_eq!(request.pod_uid, "uid-a");
    m.remove_orphaned_statuses(&["uid-b".to_string()]);
    let syncs = m.plan_sync_pod(&request).unwrap();
    assert_eq!(syncs.iter().map(|s| (s.pod_uid.as_str(), s.origin)).collect::<Vec<_>>(), [("uid-b", SyncOrigin::Pass)]);
    assert_eq!(drive(&mut m, syncs[0].id), Ok(SyncOutcome::Written));
    assert_eq!(m.imports_mut().take_verbs(), [Verb::GetPod, Verb::PatchPodStatus]);
}

#[test]
fn the_blocking_pass_reports_a_request_whose_pod_is_gone_as_up_to_date() {
    let (mut m, _): (M, _) = caching(FakeWorld::v2(), [("a", running("Running", true))]);
    let request = m.imports_mut().pop_request().unwrap();
    m.remove_orphaned_statuses(&[]);
    assert_eq!(m.sync_pod(&request), Ok(SyncOutcome::UpToDate));
    assert_eq!(m.imports_mut().take_calls(), []);
}
