//! A hostile plugin of contract 0.2.0 (`SPLIT_ADVERSARY`, its attack chosen by the name
//! of the pod it is handed) against what the host takes from a split sync: a batch
//! cursor must name a pod the host handed over and move forward, a plan must name
//! such pods, and a call must fit the boundary. Each breach is a named fault, the
//! instance is not entered again, and a running handle's batch ends.

use podstatus_backends::SyncRequest;
use podstatus_runtime::bindings::{BatchSlice, UpdateOutcome};
use podstatus_runtime::split_sync::plan_whole_batch;
use podstatus_runtime::{CallError, ComponentPlugin, FaultKind, ManagerHandle, Plugin, SchedulerConfig};
use podstatus_test_programs::SPLIT_ADVERSARY;
use podstatus_tests::{fault, load, memory_world};

fn adversary(attack: &str) -> ComponentPlugin {
    let world = memory_world([], true, podstatus_backends::DEFAULT_CAPACITY).1;
    let mut plugin = load(SPLIT_ADVERSARY).instantiate(world).unwrap();
    let pod = format!(r#"{{"metadata":{{"uid":"uid-{attack}","name":"{attack}","namespace":"ns"}}}}"#);
    assert_eq!(plugin.set_pod_status(&pod, "{}").unwrap(), UpdateOutcome::Unchanged);
    plugin
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
