//! The operations bench's floor of the sandbox (`SERDE_FLOOR`) does what the bench's
//! native floor does: the status parsed into k8s-openapi's `PodStatus` and written again
//! by serde_json, in the sandbox, and nothing else.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_runtime::bindings::{ManagerError, UpdateOutcome};
use podstatus_runtime::{CallError, PluginExt, PluginRuntime, RuntimeConfig};
use podstatus_test_programs::SERDE_FLOOR;
use podstatus_tests::cache_dir;

const POD: &str = r#"{"metadata": {"uid": "u1", "name": "a", "namespace": "n"}}"#;

#[test]
fn the_serde_floor_writes_what_serde_json_writes_natively() {
    let config = RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() };
    let runtime = PluginRuntime::new(&config).unwrap();
    let world = podstatus_tests::memory_world([], true, podstatus_backends::DEFAULT_CAPACITY).1;
    let mut plugin = runtime.load(SERDE_FLOOR).unwrap().instantiate(world).unwrap();
    // Keys out of order, a fraction of a second, an unknown field: what serde does to
    // them (not what the status manager's normalisation would) is what comes back.
    let status = r#"{"phase":"Running","unknown":1,"conditions":[{"type":"Ready","status":"True",
        "lastTransitionTime":"2026-01-01T00:00:00.5Z"}],"hostIP":"10.0.0.1","message":"a \"b\"\n"}"#;
    assert_eq!(plugin.set_pod_status(POD, status).unwrap(), UpdateOutcome::Unchanged);
    let parsed: PodStatus = serde_json::from_str(status).unwrap();
    let written = plugin.get_pod_status("u1").unwrap().expect("the text it wrote");
    assert_eq!(written.status, serde_json::to_string(&parsed).unwrap());
    let refused = plugin.set_pod_status(POD, r#"{"conditions": 5}"#);
    assert!(matches!(refused, Err(CallError::Rejected { error: ManagerError::InvalidStatus(_), .. })), "{refused:?}");
}
