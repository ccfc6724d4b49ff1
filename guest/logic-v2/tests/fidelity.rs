//! Where logic v2 once differed from upstream 1.27 (kubernetes commit 0033cb0a) and now
//! does what upstream does: the write starts from the API server's status as read, and
//! the patch is empty only when Go's JSON of both statuses is the same.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::v2::*;
use podstatus_logic_testing::*;
use podstatus_logic_v2::{Manager, SyncOutcome};
use serde_json::{Value, json};

use Verb::{GetPod as GET, PatchPodStatus as PATCH};

/// A world whose API server holds `pod` with `api_status`; the status is then set to
/// `status` and synced. Returns the manager, the outcomes and the patches sent.
fn sync_over(pod: Value, api_status: Value, status: Value) -> (M, Vec<SyncOutcome>, Vec<Value>) {
    let mut world = FakeWorld::v2();
    let pod = world.add_pod(with_status(pod, api_status));
    let mut m = Manager::new(world);
    set(&mut m, &pod, &status);
    let outcomes = drain(&mut m);
    let patches = m.imports_mut().patches();
    (m, outcomes, patches)
}

#[test]
fn a_misordered_api_copy_gets_one_patch_that_corrects_it() {
    let start = rfc3339(T0, 0);
    let long = "é".repeat(7000); // 14000 bytes: over the 12 KiB budget
    let mut a = container("a", true);
    a["lastState"] = json!({"terminated": {"exitCode": 1, "message": long}});
    let api = json!({"phase": "Running", "startTime": start, "containerStatuses": [container("b", true), a]});
    let (mut m, outcomes, patches) = sync_over(pod("ns", "p", "uid-p", &["a", "b"]), api.clone(), api);
    assert_eq!(outcomes, [SyncOutcome::Written]);
    assert_eq!(patches.len(), 1);
    let written = m.imports_mut().api_status("ns", "p");
    let names: Vec<&str> =
        written["containerStatuses"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    let message = written["containerStatuses"][0]["lastState"]["terminated"]["message"].as_str().unwrap();
    assert_eq!(message.len(), 6144, "cut to its share (12 KiB / 2) at a character boundary");
    // The next sync finds the API server's copy as the cache has it.
    assert_eq!(m.sync_batch(), podstatus_logic_v2::BatchReport::default());
}

#[test]
fn init_statuses_out_of_spec_order_are_patched_into_it() {
    let done = |name: &str| container_in(name, json!({"terminated": {"exitCode": 0, "reason": "Completed"}}));
    let api = json!({"phase": "Running", "startTime": rfc3339(T0, 0),
                     "initContainerStatuses": [done("second"), done("first")]});
    let pod = with_init_containers(pod("ns", "p", "uid-p", &["app"]), &["first", "second"]);
    let (mut m, outcomes, _) = sync_over(pod, api.clone(), api);
    assert_eq!(outcomes, [SyncOutcome::Written]);
    let written = m.imports_mut().api_status("ns", "p");
    assert_eq!(written["initContainerStatuses"][0]["name"], "first");
    assert_eq!(written["initContainerStatuses"][1]["name"], "second");
}

#[test]
fn quantities_compare_as_go_writes_them() {
    let status = |memory: &str| {
        let mut c = container("app", true);
        c["allocatedResources"] = json!({"memory": memory});
        json!({"phase": "Running", "startTime": rfc3339(T0, 0), "containerStatuses": [c]})
    };
    // Equal values written differently by Go ("1Ki", "1024"): a patch.
    let (mut m, outcomes, patches) = sync_over(pod("ns", "p", "uid-p", &["app"]), status("1Ki"), status("1024"));
    assert_eq!(outcomes, [SyncOutcome::Written]);
    assert_eq!(m.imports_mut().take_verbs(), [GET, PATCH]);
    assert_eq!(patches[0]["status"]["containerStatuses"][0]["allocatedResources"]["memory"], "1024");

    // Written the same by Go ("1"): nothing to send.
    let (mut m, outcomes, patches) = sync_over(pod("ns", "p", "uid-p", &["app"]), status("1000m"), status("1"));
    assert_eq!(outcomes, [SyncOutcome::UpToDate]);
    assert_eq!(m.imports_mut().take_verbs(), [GET]);
    assert!(patches.is_empty());

    // What is sent is Go's form: 2048Ki is "2Mi".
    let (_, _, patches) = sync_over(pod("ns", "p", "uid-p", &["app"]), status("1Ki"), status("2048Ki"));
    assert_eq!(patches[0]["status"]["containerStatuses"][0]["allocatedResources"]["memory"], "2Mi");
}
