//! Logic v1's syncs driven one API call at a time (contract 0.2.0): planned by
//! `plan_sync_pod` and `plan_sync_batch`, run by `start_sync` and `resume_sync` with the
//! host's answers.

use podstatus_logic::{
    ApiCall, ApiError, ApiReply, BatchReport, BatchSlice, Level, ManagerError, StatusManager, SyncOrigin, SyncOutcome,
    SyncRequest, SyncStep,
};
use podstatus_logic_testing::split::*;
use podstatus_logic_testing::*;
use podstatus_logic_v1::{Manager, V1};
use serde_json::{Value, json};

type M = Manager<FakeWorld>;

/// Writes, a deletion, a pod gone from the API server, drift, a failed GET, garbage
/// from the API server (a request's and a batch's error) and a recreated pod: what each
/// sync returned.
fn scenario(m: &mut M, sync_pod: SyncPod<V1>, sync_batch: SyncBatch<V1>) -> Vec<String> {
    let world = m.imports_mut();
    world.reclaimed = true;
    let [a, b, c] = world.add_pods_a_b_c();
    let drain = |m: &mut M, seen: &mut Vec<String>| drain_requests(m, sync_pod, seen);

    let mut seen = Vec::new();
    set(m, &a, running("Running", false));
    set(m, &b, running("Succeeded", false));
    set(m, &c, running("Pending", false));
    drain(m, &mut seen);

    m.imports_mut().drift_status("ns", "a", json!({"phase": "Pending"}));
    seen.push(format!("{:?}", sync_batch(m)));

    m.imports_mut().fail(Verb::GetPod, ApiError::Other("the server is unhappy".into()));
    set(m, &a, running("Running", true));
    drain(m, &mut seen);
    m.imports_mut().heal(Verb::GetPod);

    m.imports_mut().answer_garbage(Verb::GetPod, "not a pod");
    set(m, &a, running("Failed", false));
    drain(m, &mut seen);
    seen.push(format!("{:?}", sync_batch(m)));
    m.imports_mut().heal(Verb::GetPod);

    // The read finds another UID.
    recreate_a(m, &a, running("Running", false), sync_pod, sync_batch, &mut seen);
    seen
}

#[test]
fn immediate_answers_make_the_calls_and_imports_of_the_blocking_path() {
    let blocking = blocking_and_split_agree(FakeWorld::new, scenario);
    // The scenario reaches every path it means to.
    let seen = blocking.seen.join(" ");
    for outcome in ["Written", "Deleted", "PodNotFound", "GetFailed", "InvalidPod", "Recreated", "reconciled: 1"] {
        assert!(seen.contains(outcome), "{outcome} missing from {seen}");
    }
    assert!(
        blocking.logs.iter().any(|(_, line)| line.starts_with("batch sync of pod uid-a failed")),
        "{:?}",
        blocking.logs
    );
}

#[test]
fn a_sync_waiting_for_its_get_lets_the_manager_serve_everything_else() {
    let statuses = [("a", running("Pending", false)), ("b", running("Running", true))];
    let (mut m, [a, _]): (M, _) = caching(FakeWorld::new(), statuses);
    let [ra, rb] = <[SyncRequest; 2]>::try_from(m.imports_mut().take_queue()).expect("two requests");

    let syncs = m.plan_sync_pod(&ra).unwrap();
    assert_eq!(syncs.len(), 1);
    assert_eq!((syncs[0].pod_uid.as_str(), syncs[0].origin), ("uid-a", SyncOrigin::Request));
    let id = syncs[0].id;
    let get = call_of(m.start_sync(id), "a's sync reads the pod first");
    assert_eq!(get, ApiCall::GetPod { namespace: "ns".into(), name: "a".into() });
    assert_eq!(m.syncs_in_flight(), 1);

    // Meanwhile: a newer status of the same pod, and another pod's whole sync.
    set(&mut m, &a, running("Running", true));
    assert_eq!(m.get_pod_status("uid-a").unwrap().unwrap().version, 2);
    let b_sync = m.plan_sync_pod(&rb).unwrap()[0].id;
    assert_eq!(drive(&mut m, b_sync), Ok(SyncOutcome::Written));
    assert_eq!(m.imports_mut().api_status("ns", "b")["phase"], "Running");

    // a's sync goes on with the snapshot it was queued with (logic v1 writes snapshots).
    let put = call_of(resume_answered(&mut m, id, get), "a's sync writes");
    let ApiCall::UpdatePodStatus(update) = &put else { panic!("v1 puts: {put:?}") };
    assert_eq!(serde_json::from_str::<Value>(&update.status).unwrap()["phase"], "Pending");
    assert_eq!(resume_answered(&mut m, id, put), Ok(SyncStep::Done(SyncOutcome::Written)));
    assert_eq!(m.syncs_in_flight(), 0);

    // The newer version's own request writes it.
    let request = m.imports_mut().pop_request().expect("version 2's request");
    assert_eq!(request.version, 2);
    assert_eq!(m.sync_pod(&request), Ok(SyncOutcome::Written));
    assert_eq!(m.imports_mut().api_status("ns", "a")["phase"], "Running");
    // The host made a's GET only after b's sync (b's calls come first).
    let verbs = m.imports_mut().take_verbs();
    use Verb::{GetPod as G, UpdatePodStatus as U};
    assert_eq!(verbs, [G, U, G, U, G, U]);
}

#[test]
fn a_dropped_sync_writes_nothing_and_its_id_is_unknown() {
    let (mut m, _): (M, _) = caching(FakeWorld::new(), [("a", running("Running", true))]);
    let id = plan_next_request(&mut m)[0].id;

    // Planned, then dropped.
    assert!(m.drop_sync(id));
    assert!(!m.drop_sync(id));
    assert_eq!(m.start_sync(id), Err(ManagerError::UnknownSync(id)));

    // Suspended in its GET, then dropped.
    let id = m.plan_sync_batch(&BatchSlice::WHOLE).syncs[0].id;
    let get = call_of(m.start_sync(id), "the batch's sync reads first");
    assert!(m.drop_sync(id));
    assert_eq!(resume_answered(&mut m, id, get), Err(ManagerError::UnknownSync(id)));
    assert_eq!(m.syncs_in_flight(), 0);
    assert_eq!(m.imports_mut().take_verbs(), [Verb::GetPod]);
    assert!(m.imports_mut().api_status("ns", "a").get("phase").is_none());
}

#[test]
fn unknown_ids_and_steps_out_of_turn_are_refused_and_change_nothing() {
    let mut world = FakeWorld::new();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["c"]));
    let mut m = Manager::new(world);
    assert_eq!(m.start_sync(7), Err(ManagerError::UnknownSync(7)));
    assert_eq!(m.resume_sync(7, ApiReply::Deleted(Ok(()))), Err(ManagerError::UnknownSync(7)));
    assert!(!m.drop_sync(7));

    set(&mut m, &a, running("Running", true));
    let id = plan_next_request(&mut m)[0].id;
    // Not started: nothing to resume.
    assert_eq!(m.resume_sync(id, ApiReply::Pod(Ok("{}".into()))), Err(ManagerError::UnknownSync(id)));
    let get = call_of(m.start_sync(id), "reads first");
    // Started: not again.
    assert_eq!(m.start_sync(id), Err(ManagerError::UnknownSync(id)));
    assert_eq!(m.syncs_in_flight(), 1);
    let put = call_of(resume_answered(&mut m, id, get), "writes");
    assert_eq!(resume_answered(&mut m, id, put), Ok(SyncStep::Done(SyncOutcome::Written)));
    // A request's ID is not a sync's, and the sync's is gone once done.
    assert_eq!(m.resume_sync(id, ApiReply::Pod(Ok("{}".into()))), Err(ManagerError::UnknownSync(id)));
    // Each planned sync gets a new ID.
    set(&mut m, &a, running("Running", false));
    let request = m.imports_mut().pop_request().unwrap();
    assert!(m.plan_sync_pod(&request).unwrap()[0].id > id);
}

#[test]
fn a_reply_that_does_not_fit_the_call_is_a_failed_call() {
    let mut world = FakeWorld::new();
    let a = world.add_pod(deleting(pod("ns", "a", "uid-a", &["c"])));
    world.reclaimed = true;
    let mut m = Manager::new(world);
    set(&mut m, &a, running("Succeeded", false));
    let request = m.imports_mut().pop_request().unwrap();

    // A delete's answer to the GET: the GET failed.
    let id = m.plan_sync_pod(&request).unwrap()[0].id;
    assert!(matches!(m.start_sync(id), Ok(SyncStep::Call(ApiCall::GetPod { .. }))));
    assert_eq!(m.resume_sync(id, ApiReply::Deleted(Ok(()))), Ok(SyncStep::Done(SyncOutcome::GetFailed)));
    let (level, line) = m.imports_mut().logs.last().cloned().unwrap();
    assert_eq!(level, Level::Warn);
    assert!(line.contains("reply does not fit the call"), "{line}");

    // A pod as the answer to the DELETE: the delete failed.
    let id = m.plan_sync_batch(&BatchSlice::WHOLE).syncs[0].id;
    let mut step = m.start_sync(id).unwrap();
    while let SyncStep::Call(call) = step {
        let reply = match call {
            ApiCall::DeletePod { .. } => ApiReply::Pod(Ok("{}".into())),
            call => m.imports_mut().answer(call),
        };
        step = m.resume_sync(id, reply).unwrap();
    }
    assert_eq!(step, SyncStep::Done(SyncOutcome::DeleteFailed));
    assert!(m.imports_mut().api_pod("ns", "a").is_some(), "the pod was not deleted");
    assert!(m.get_pod_status("uid-a").unwrap().is_some(), "its status stays for a later sync");
}

#[test]
fn a_sync_that_fails_is_gone_and_logged_as_its_origin_says() {
    let mut world = FakeWorld::new();
    world.answer_garbage(Verb::GetPod, "not a pod");
    let (mut m, _): (M, _) = caching(world, [("a", running("Running", true))]);

    // The request's: the error is the caller's to report; nothing is logged.
    let id = plan_next_request(&mut m)[0].id;
    let get = call_of(m.start_sync(id), "reads first");
    m.imports_mut().logs.clear();
    assert!(matches!(resume_answered(&mut m, id, get), Err(ManagerError::InvalidPod(_))));
    assert_eq!(m.imports_mut().logs, []);
    assert_eq!(m.syncs_in_flight(), 0);
    assert_eq!(m.resume_sync(id, ApiReply::Pod(Ok("{}".into()))), Err(ManagerError::UnknownSync(id)));

    // The batch's: logged as the batch logged it.
    let plan = m.plan_sync_batch(&BatchSlice::WHOLE);
    assert_eq!(plan.report, BatchReport { synced: 1, reconciled: 0, failed: 0 });
    let id = plan.syncs[0].id;
    let get = call_of(m.start_sync(id), "reads first");
    let Err(e) = resume_answered(&mut m, id, get) else { panic!("garbage fails the sync") };
    let (level, line) = m.imports_mut().logs.last().cloned().unwrap();
    assert_eq!((level, line), (Level::Error, format!("batch sync of pod uid-a failed: {e}")));
    assert_eq!(m.syncs_in_flight(), 0);
}

#[test]
fn a_version_written_after_its_status_was_dropped_is_not_recorded() {
    let (mut m, [a]): (M, _) = caching(FakeWorld::new(), [("a", running("Running", true))]);
    let id = plan_next_request(&mut m)[0].id;
    let get = call_of(m.start_sync(id), "reads first");

    // The pod's status is dropped, and cached again (its versions start again at 1).
    assert_eq!(m.remove_orphaned_statuses(&[]), 1);
    set(&mut m, &a, running("Pending", false));
    assert_eq!(m.get_pod_status("uid-a").unwrap().unwrap().version, 1);

    let put = call_of(resume_answered(&mut m, id, get), "writes its snapshot");
    assert_eq!(resume_answered(&mut m, id, put), Ok(SyncStep::Done(SyncOutcome::Written)));
    // The new version 1 is not taken as written: its own request writes it.
    let state: Value = serde_json::from_str(&m.save_state().unwrap()).unwrap();
    assert_eq!(state["apiStatusVersions"], json!({}));
    let request = m.imports_mut().pop_request().unwrap();
    assert_eq!(m.sync_pod(&request), Ok(SyncOutcome::Written));
    assert_eq!(m.imports_mut().api_status("ns", "a")["phase"], "Pending");
}

#[test]
fn a_batch_planned_in_slices_decides_each_cached_status_once_in_uid_order() {
    let mut world = FakeWorld::new();
    let pods: Vec<Value> =
        ["d", "a", "c", "b", "e"].iter().map(|n| world.add_pod(pod("ns", n, &format!("uid-{n}"), &["c"]))).collect();
    let early = world.add_pod(pod("ns", "early", "uid-0", &["c"]));
    let late = world.add_pod(pod("ns", "late", "uid-bb", &["c"]));
    let mut m = Manager::new(world);
    for p in &pods {
        set(&mut m, p, running("Running", true));
    }
    let uids = |plan: &podstatus_logic::BatchPlan| plan.syncs.iter().map(|s| s.pod_uid.clone()).collect::<Vec<_>>();

    let first = m.plan_sync_batch(&BatchSlice::first(2));
    assert_eq!(uids(&first), ["uid-a", "uid-b"]);
    assert_eq!(first.next.as_deref(), Some("uid-b"));
    assert_eq!(first.report, BatchReport { synced: 2, reconciled: 0, failed: 0 });

    // Cached between slices: after the cursor, this batch decides it; before it, the
    // next batch does.
    set(&mut m, &late, running("Running", true));
    set(&mut m, &early, running("Running", true));
    let second = m.plan_sync_batch(&BatchSlice { after: first.next.clone(), max_pods: 2 });
    assert_eq!(uids(&second), ["uid-bb", "uid-c"]);
    assert_eq!(second.next.as_deref(), Some("uid-c"));

    // 0 counts as 1; the last slice says the batch is over.
    let third = m.plan_sync_batch(&BatchSlice { after: second.next.clone(), max_pods: 0 });
    assert_eq!((uids(&third), third.next.as_deref()), (vec!["uid-d".to_string()], Some("uid-d")));
    let last = m.plan_sync_batch(&BatchSlice { after: third.next.clone(), max_pods: 10 });
    assert_eq!((uids(&last), last.next), (vec!["uid-e".to_string()], None));

    // Nothing after the last UID: an empty slice that ends the batch.
    let past = m.plan_sync_batch(&BatchSlice { after: Some("uid-z".into()), max_pods: 10 });
    assert_eq!((past.syncs.len(), past.next), (0, None));
    let whole = m.plan_sync_batch(&BatchSlice::WHOLE);
    assert_eq!(uids(&whole), ["uid-0", "uid-a", "uid-b", "uid-bb", "uid-c", "uid-d", "uid-e"]);
    assert_eq!(whole.next, None);
}
