//! Bad input gets a typed error and changes nothing; the plugin keeps serving.

use std::sync::Arc;

use podstatus_backends::FixedDeletionSafety;
use podstatus_backends::MemoryApiServer;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;
use podstatus_backends::SystemClock;
use podstatus_runtime::World;
use podstatus_runtime::bindings::{ManagerError, SyncRequest, UpdateOutcome};
use podstatus_runtime::{CallError, Plugin, PluginExt};
use podstatus_tests::v1_image;

const POD: &str =
    r#"{"metadata": {"uid": "u1", "name": "a", "namespace": "n"}, "spec": {"containers": [{"name": "c"}]}}"#;

fn plugin() -> Box<dyn Plugin> {
    let world = World {
        api_server: Arc::new(MemoryApiServer::new()),
        pod_manager: Arc::new(PodManager::new()),
        deletion_safety: Arc::new(FixedDeletionSafety::new(true)),
        clock: Arc::new(SystemClock),
        queue: Arc::new(SyncQueue::default()),
    };
    Box::new(v1_image().instantiate(world).unwrap())
}

fn rejection(result: Result<UpdateOutcome, CallError>) -> ManagerError {
    match result {
        Err(CallError::Rejected { error, .. }) => error,
        other => panic!("expected a typed refusal, got {other:?}"),
    }
}

#[test]
fn malformed_pods_and_statuses_are_refused_with_a_reason() {
    let mut plugin = plugin();
    let cases = [
        ("{", "{}", "invalid pod"),
        ("[1, 2]", "{}", "invalid pod"),
        (r#"{"metadata": {"name": "a", "namespace": "n"}}"#, "{}", "n/a has no metadata.uid"),
        (POD, "{", "invalid status"),
        (POD, r#"{"containerStatuses": "nope"}"#, "invalid status"),
        (POD, r#"{"startTime": "yesterday"}"#, "invalid status"),
    ];
    for (pod, status, expected) in cases {
        let error = rejection(plugin.set_pod_status(pod, status));
        let text = podstatus_runtime::describe(&error);
        assert!(text.contains(expected), "{pod} / {status}: {text}");
    }
    assert!(matches!(rejection(plugin.terminate_pod("null")), ManagerError::InvalidPod(_)));
    // Nothing was cached, and the plugin still works.
    assert!(plugin.get_pod_status("u1").unwrap().is_none());
    assert_eq!(plugin.set_pod_status(POD, "{}").unwrap(), UpdateOutcome::Queued);
    assert_eq!(plugin.get_pod_status("u1").unwrap().unwrap().version, 1);
}

#[test]
fn a_request_the_plugin_never_queued_is_refused() {
    let mut plugin = plugin();
    let forged = SyncRequest { id: 42, pod_uid: "u1".into(), version: 1 };
    match plugin.sync_pod(&forged) {
        Err(CallError::Rejected { error: ManagerError::UnknownRequest(42), call: "sync-pod" }) => {}
        other => panic!("expected unknown-request, got {other:?}"),
    }
}

#[test]
fn unknown_uids_are_not_errors_but_not_found() {
    let mut plugin = plugin();
    assert!(plugin.get_pod_status("nobody").unwrap().is_none());
    assert_eq!(plugin.set_container_readiness("nobody", "containerd://x", true).unwrap(), UpdateOutcome::PodNotFound);
    assert_eq!(plugin.remove_orphaned_statuses(&["nobody".into()]).unwrap(), 0);
}
