//! A hostile plugin of contract 0.2.0 (`SPLIT_ADVERSARY`, its attack chosen by the name
//! of the pod it is handed) against what the host takes from a split sync: a batch
//! cursor must name a pod the host handed over and move forward, a plan must name
//! such pods, and a call must fit the boundary. Each breach is a named fault, the
//! instance is not entered again, and a running handle's batch ends.
//!
//! The host also keeps its own ledger of the syncs it runs: a sync ID the host never
//! planned, or whose sync ended, is refused without asking the plugin; a plan names a
//! pod once and no ID still in use; a sync calls only on its own pod, at most
//! `Limits::sync_calls` times, and claims `deleted` or `recreated` only where its calls
//! show it.

use podstatus_backends::SyncRequest;
use podstatus_runtime::bindings::{ApiError, ApiReply, BatchSlice, ManagerError, SyncOutcome, SyncStep, UpdateOutcome};
use podstatus_runtime::split_sync::plan_whole_batch;
use podstatus_runtime::{CallError, ComponentPlugin, FaultKind, ManagerHandle, Plugin, PluginExt, SchedulerConfig};
use podstatus_test_programs::SPLIT_ADVERSARY;
use podstatus_tests::{fault, load, memory_world};

fn adversary(attack: &str) -> ComponentPlugin {
    let world = memory_world([], true, podstatus_backends::DEFAULT_CAPACITY).1;
    let mut plugin = load(SPLIT_ADVERSARY).instantiate(world).unwrap();
    hand(&mut plugin, attack);
    plugin
}

/// Hands the plugin the pod `ns/name` (UID `uid-NAME`), which picks the attack.
fn hand(plugin: &mut ComponentPlugin, name: &str) {
    let pod = format!(r#"{{"metadata":{{"uid":"uid-{name}","name":"{name}","namespace":"ns"}}}}"#);
    assert_eq!(plugin.set_pod_status(&pod, "{}").unwrap(), UpdateOutcome::Queued);
}

/// The sync request of the attack's pod.
fn request(attack: &str) -> SyncRequest {
    SyncRequest { id: 1, pod_uid: format!("uid-{attack}"), version: 1 }
}

fn unknown_sync<T: std::fmt::Debug>(result: Result<T, CallError>, id: u64) -> bool {
    matches!(result, Err(CallError::Rejected { error: ManagerError::UnknownSync(n), .. }) if n == id)
}

#[test]
fn a_batch_cursor_that_stands_still_faults_the_plugin() {
    let mut plugin = adversary("stuck-cursor");
    // The first slice's cursor is a handed-over pod after the start: taken.
    let first = plugin.plan_sync_batch(&BatchSlice { after: None, max_pods: 8 }).unwrap();
    assert_eq!(first.next.as_deref(), Some("uid-stuck-cursor"));
    // The second names the same pod again: the batch would never end.
    let (_, kind, message) = fault(plugin.plan_sync_batch(&BatchSlice { after: first.next, max_pods: 8 }));
    assert_eq!(kind, FaultKind::Cursor, "{message}");
    assert!(message.contains("not after the slice's start"), "{message}");
    assert!(matches!(plugin.get_pod_status("uid-stuck-cursor"), Err(CallError::Fault { .. })), "not entered again");

    // The host's own loop over slices ends with the fault too.
    let (_, kind, _) = fault(plan_whole_batch(&mut adversary("stuck-cursor"), 8));
    assert_eq!(kind, FaultKind::Cursor);
}

#[test]
fn a_made_up_batch_cursor_or_planned_pod_faults_the_plugin() {
    let (_, kind, message) = fault(plan_whole_batch(&mut adversary("made-up-cursor"), 8));
    assert_eq!(kind, FaultKind::ForeignUid, "{message}");
    assert!(message.contains("continued a batch after pod \"uid-the-host-never-handed-over\""), "{message}");

    let (_, kind, message) = fault(plan_whole_batch(&mut adversary("foreign-plan"), 8));
    assert_eq!(kind, FaultKind::ForeignUid, "{message}");
    assert!(message.contains("planned a sync of pod"), "{message}");

    let mut plugin = adversary("foreign-plan");
    let request = SyncRequest { id: 1, pod_uid: "uid-foreign-plan".into(), version: 1 };
    let (_, kind, _) = fault(plugin.plan_sync_pod(&request));
    assert_eq!(kind, FaultKind::ForeignUid);
}

#[test]
fn a_call_over_the_boundary_limit_faults_the_plugin() {
    let mut plugin = adversary("huge-call");
    let request = SyncRequest { id: 1, pod_uid: "uid-huge-call".into(), version: 1 };
    let syncs = plugin.plan_sync_pod(&request).unwrap();
    let (_, kind, message) = fault(plugin.start_sync(syncs[0].id));
    assert_eq!(kind, FaultKind::Oversized, "{message}");
    assert!(message.contains("an API call"), "{message}");
}

#[test]
fn a_running_handle_survives_a_batch_whose_cursor_stands_still() {
    let plugin = adversary("stuck-cursor");
    let queue = plugin.world().queue.clone();
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), queue, SchedulerConfig::default());
    let (_, kind, _) = fault(manager.sync_batch());
    assert_eq!(kind, FaultKind::Cursor);
    // Every later call is refused as the faulted instance's, and the host goes on.
    assert!(matches!(manager.get_pod_status("uid-stuck-cursor"), Err(CallError::Fault { .. })));
    assert_eq!(scheduler.shutdown(std::time::Duration::from_secs(5)), 0);
}

#[test]
fn a_batch_cursor_behind_where_the_host_resumes_faults_the_plugin() {
    // The host resumes a periodic batch after where the last one stopped; a cursor
    // before it would walk the pods again.
    let mut plugin = adversary("stuck-cursor");
    let after = Some("uid-zzz".to_string());
    let (_, kind, message) = fault(plugin.plan_sync_batch(&BatchSlice { after, max_pods: 8 }));
    assert_eq!(kind, FaultKind::Cursor, "{message}");
}

#[test]
fn a_sync_id_never_planned_or_already_over_is_refused_without_asking_the_plugin() {
    // The adversary answers any ID it is asked about with `done`.
    let mut plugin = adversary("honest");
    assert!(unknown_sync(plugin.start_sync(424_242), 424_242), "never planned");
    let id = plugin.plan_sync_pod(&request("honest")).unwrap()[0].id;
    let reply = || ApiReply::Pod(Err(ApiError::Other("an answer to nothing".into())));
    assert!(unknown_sync(plugin.resume_sync(id, &reply()), id), "planned: it waits for no answer");
    assert!(matches!(plugin.start_sync(id), Ok(SyncStep::Done(SyncOutcome::UpToDate))));
    assert!(unknown_sync(plugin.start_sync(id), id), "done: not started again");
    assert!(unknown_sync(plugin.resume_sync(id, &reply()), id), "done: not resumed");
    assert!(!plugin.drop_sync(id).unwrap(), "done: nothing to drop");

    // Another instance numbers its syncs from 1 again (as one restored after a fault
    // does): the host's IDs differ, so a step of one instance's sync never reaches the
    // other's sync of the same number, another pod's.
    let mut other = adversary("honest");
    let theirs = other.plan_sync_pod(&request("honest")).unwrap()[0].id;
    let ours = plugin.plan_sync_pod(&request("honest")).unwrap()[0].id;
    assert_ne!(theirs, ours);
    assert!(unknown_sync(plugin.start_sync(theirs), theirs));
    assert!(!plugin.drop_sync(theirs).unwrap());
    assert!(matches!(plugin.start_sync(ours), Ok(SyncStep::Done(_))), "its own sync runs");
}

#[test]
fn a_plan_reusing_a_live_id_or_naming_a_pod_twice_faults_the_plugin() {
    let mut plugin = adversary("reused-id");
    plugin.plan_sync_pod(&request("reused-id")).unwrap();
    let (_, kind, message) = fault(plugin.plan_sync_pod(&request("reused-id")));
    assert_eq!(kind, FaultKind::Plan, "{message}");
    assert!(message.contains("planned sync 7 again before it ended"), "{message}");

    let (_, kind, message) = fault(adversary("repeat-plan").plan_sync_pod(&request("repeat-plan")));
    assert_eq!(kind, FaultKind::Plan, "{message}");
    assert!(message.contains("two syncs of pod \"uid-repeat-plan\""), "{message}");

    // A million syncs do not fit the boundary (17 bytes or more each).
    let (_, kind, message) = fault(adversary("million-plan").plan_sync_pod(&request("million-plan")));
    assert_eq!(kind, FaultKind::Oversized, "{message}");
}

#[test]
fn a_sync_that_never_ends_faults_at_its_call_limit() {
    // `sync-pod` of 0.1.x runs the sync to its end, each call answered at once: without
    // the bound it would never return (and a worker would spin on it, holding its pod).
    let mut plugin = adversary("endless-sync");
    let (call, kind, message) = fault(plugin.sync_pod(&request("endless-sync")));
    assert_eq!((call, kind), ("resume-sync", FaultKind::SyncCalls), "{message}");
    assert!(message.contains("more than 16 API calls"), "{message}");
}

#[test]
fn a_sync_calling_on_another_pod_faults_the_plugin_before_the_call() {
    let mut plugin = load(SPLIT_ADVERSARY).instantiate(memory_world([], true, 16).1).unwrap();
    hand(&mut plugin, "bystander");
    hand(&mut plugin, "wrong-pod");
    let id = plugin.plan_sync_pod(&request("wrong-pod")).unwrap()[0].id;
    let (call, kind, message) = fault(plugin.start_sync(id));
    assert_eq!((call, kind), ("start-sync", FaultKind::WrongPod), "{message}");
    assert!(message.contains("(ns/wrong-pod) asked for a call on pod \"ns\"/\"bystander\""), "{message}");

    // A name with a path in it names another pod too (and is no pod name at all).
    let mut plugin = adversary("traversal");
    let id = plugin.plan_sync_pod(&request("traversal")).unwrap()[0].id;
    let (_, kind, message) = fault(plugin.start_sync(id));
    assert_eq!(kind, FaultKind::WrongPod, "{message}");
}

#[test]
fn a_sync_claiming_a_deletion_or_recreation_its_calls_do_not_show_faults_the_plugin() {
    // The host forgets its record of a pod's accepted status on either word, so a lie
    // would let a later swap lose it. Here the API server answers `not-found` to both.
    for attack in ["fake-deleted", "fake-recreated"] {
        let (call, kind, message) = fault(adversary(attack).sync_pod(&request(attack)));
        assert_eq!((call, kind), ("resume-sync", FaultKind::Outcome), "{attack}: {message}");
        assert!(message.contains("which its calls do not show"), "{message}");
    }
}
