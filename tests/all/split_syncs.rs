//! The contract 0.2.0 plugins this checkout builds, through the real runtime: each plans
//! a request's sync, asks for its API calls one at a time (which the host makes) and
//! ends once they are answered; steps out of turn are refused with `unknown-sync`; a
//! batch's syncs may be dropped unstarted; logic v1 has no startup probes.

use podstatus_backends::ApiServer;
use podstatus_plugins::{PODSTATUS_V1, PODSTATUS_V2, PODSTATUS_V3};
use podstatus_runtime::bindings::{
    ApiCall, BatchSlice, ManagerError, SyncOrigin, SyncOutcome, SyncStep, UpdateOutcome,
};
use podstatus_runtime::{CallError, Contract, PluginExt, api};
use podstatus_tests::{TestPod, load, memory_world};

/// One request's sync of a fresh pod through `plugin`: the verbs of the calls it asked
/// for, in order; then what `set-container-startup` answers.
fn sync_one_pod(plugin: &[u8]) -> (Vec<&'static str>, Result<UpdateOutcome, CallError>) {
    let pod = TestPod::new("a", "uid-a").container("app").build();
    let (api_server, world) = memory_world([pod.clone()], false, 100);
    let image = load(plugin);
    assert_eq!(image.contract(), Contract::V0_2_0);
    let mut plugin = image.instantiate(world.clone()).unwrap();
    let pod_json = serde_json::to_string(&pod).unwrap();
    assert_eq!(plugin.set_pod_status(&pod_json, r#"{"phase":"Running"}"#).unwrap(), UpdateOutcome::Queued);
    let request = world.queue.pop().expect("a sync request");

    let syncs = plugin.plan_sync_pod(&request).unwrap();
    assert_eq!(syncs.len(), 1);
    assert_eq!((syncs[0].pod_uid.as_str(), syncs[0].origin), ("uid-a", SyncOrigin::Request));
    let id = syncs[0].id;

    let mut verbs = Vec::new();
    let mut step = plugin.start_sync(id).unwrap();
    let twice = plugin.start_sync(id);
    assert!(
        matches!(twice, Err(CallError::Rejected { error: ManagerError::UnknownSync(n), .. }) if n == id),
        "{twice:?}"
    );
    let outcome = loop {
        match step {
            SyncStep::Done(outcome) => break outcome,
            SyncStep::Call(call) => {
                if let ApiCall::UpdatePodStatus(u) = &call {
                    assert_eq!(u.uid_precondition.as_deref(), Some("uid-a"));
                }
                if let ApiCall::PatchPodStatus(p) = &call {
                    assert_eq!(p.uid_precondition.as_deref(), Some("uid-a"));
                }
                verbs.push(api::verb(&call));
                step = plugin.resume_sync(id, &api::perform(&world, call)).unwrap();
            }
        }
    };
    assert_eq!(outcome, SyncOutcome::Written);
    assert!(!plugin.drop_sync(id).unwrap(), "a finished sync is gone");
    let stored = api_server.get_pod("ns", "a").unwrap();
    assert_eq!(stored.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Running"));

    // The batch finds nothing to write; another version makes a sync it may drop.
    assert!(plugin.plan_sync_batch(&BatchSlice { after: None, max_pods: 100 }).unwrap().syncs.is_empty());
    assert_eq!(plugin.set_pod_status(&pod_json, r#"{"phase":"Failed"}"#).unwrap(), UpdateOutcome::Queued);
    let plan = plugin.plan_sync_batch(&BatchSlice { after: None, max_pods: 100 }).unwrap();
    assert_eq!(plan.syncs.len(), 1);
    assert_eq!(plan.syncs[0].origin, SyncOrigin::Batch);
    assert!(plugin.drop_sync(plan.syncs[0].id).unwrap());

    (verbs, plugin.set_container_startup("uid-a", "containerd://c", true))
}

#[test]
fn logic_v1_puts_after_a_read_and_has_no_startup_probes() {
    let (verbs, startup) = sync_one_pod(PODSTATUS_V1);
    assert_eq!(verbs, ["get", "update"]);
    assert!(matches!(startup, Err(CallError::Unsupported { .. })), "{startup:?}");
}

#[test]
fn logic_v2_patches_after_a_read() {
    let (verbs, startup) = sync_one_pod(PODSTATUS_V2);
    assert_eq!(verbs, ["get", "patch"]);
    assert_eq!(startup.unwrap(), UpdateOutcome::UnknownContainer);
}

#[test]
fn logic_v3_patches_without_reading() {
    let (verbs, startup) = sync_one_pod(PODSTATUS_V3);
    assert_eq!(verbs, ["patch"]);
    assert_eq!(startup.unwrap(), UpdateOutcome::UnknownContainer);
}

/// Issue 27: the host notes a pod handed in the same bytes only once; once
/// `remove-orphaned-statuses` made it forget the pod, the same bytes handed again are
/// noted again, so the pod's next sync is one of a pod handed over (here the pod
/// manager no longer has it, so only the note can say so).
#[test]
fn a_pod_forgotten_as_an_orphan_and_handed_again_in_the_same_bytes_is_reachable() {
    let pod = TestPod::new("a", "uid-a").container("app").build();
    let (_api_server, world) = memory_world([pod.clone()], false, 100);
    let mut plugin = load(PODSTATUS_V2).instantiate(world.clone()).unwrap();
    let pod_json = serde_json::to_string(&pod).unwrap();
    assert_eq!(plugin.set_pod_status(&pod_json, r#"{"phase":"Pending"}"#).unwrap(), UpdateOutcome::Queued);
    let first = world.queue.pop().expect("a sync request");
    for sync in plugin.plan_sync_pod(&first).unwrap() {
        assert!(plugin.drop_sync(sync.id).unwrap());
    }
    assert_eq!(plugin.remove_orphaned_statuses(&[]).unwrap(), 1);
    world.pod_manager.remove_pod("uid-a").expect("the pod manager had it");
    assert_eq!(plugin.set_pod_status(&pod_json, r#"{"phase":"Running"}"#).unwrap(), UpdateOutcome::Queued);
    let request = world.queue.pop().expect("a sync request");
    let syncs = plugin.plan_sync_pod(&request).unwrap();
    let id = syncs[0].id;
    let mut step = plugin.start_sync(id).unwrap();
    let outcome = loop {
        match step {
            SyncStep::Done(outcome) => break outcome,
            SyncStep::Call(call) => step = plugin.resume_sync(id, &api::perform(&world, call)).unwrap(),
        }
    };
    assert_eq!(outcome, SyncOutcome::Written);
}
