//! Logic v2's state is v1's document: a running agent swaps v1 -> v2 -> v1 without
//! losing anything, and v2 keeps nothing beside the document.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::v2::*;
use podstatus_logic_testing::*;
use podstatus_logic_v2::{Manager, SyncOutcome, UpdateOutcome};
use serde_json::{Value, json};

/// Pods a and b, and a static pod s with its mirror pod m.
fn world() -> (FakeWorld, Value, Value, Value) {
    let mut world = FakeWorld::v2();
    let (a, b) = world.add_pods_a_and_b();
    let (s, mirror) = static_and_mirror("ns", "s", "uid-s", "uid-m", &["c"]);
    world.add_managed_pod(s.clone());
    world.add_pod(mirror);
    world.allow_puts = true;
    (world, a, b, s)
}

fn parse(document: &str) -> Value {
    serde_json::from_str(document).unwrap()
}

fn v1_set(m: &mut V1, pod: &Value, status: Value) -> UpdateOutcome {
    m.set_pod_status(&pod.to_string(), &status.to_string()).unwrap()
}

/// Every cached status of the three pods, as `get-pod-status` returns them.
fn statuses_v1(m: &mut V1) -> Vec<Option<(u64, String)>> {
    ["uid-a", "uid-b", "uid-s"]
        .iter()
        .map(|uid| m.get_pod_status(uid).unwrap().map(|c| (c.version, c.status)))
        .collect()
}

fn statuses_v2(m: &mut M) -> Vec<Option<(u64, String)>> {
    ["uid-a", "uid-b", "uid-s"]
        .iter()
        .map(|uid| m.get_pod_status(uid).unwrap().map(|c| (c.version, c.status)))
        .collect()
}

#[test]
fn the_state_document_is_v1s_both_ways() {
    let (world, a, b, s) = world();
    let mut old = podstatus_logic_v1::Manager::new(world);
    v1_set(&mut old, &a, json!({"phase": "Pending"}));
    v1_set(&mut old, &a, json!({"phase": "Running"}));
    v1_set(&mut old, &b, json!({"phase": "Running"}));
    v1_set(&mut old, &s, json!({"phase": "Running"}));
    let first = old.save_state().unwrap();
    let keys = |document: &Value| -> Vec<String> { document.as_object().unwrap().keys().cloned().collect() };

    // v1 -> v2: the same statuses, and v1's queued requests are v2's to handle: the
    // first one's pass writes every pod, the others find them written.
    let mut new = Manager::new(old.imports_mut().clone());
    new.load_state(&first).unwrap();
    assert_eq!(statuses_v2(&mut new), statuses_v1(&mut old));
    assert_eq!(
        drain(&mut new),
        [SyncOutcome::Written, SyncOutcome::UpToDate, SyncOutcome::UpToDate, SyncOutcome::UpToDate]
    );
    assert_eq!(new.imports_mut().api_status("ns", "a")["phase"], "Running");
    assert_eq!(new.imports_mut().api_status("ns", "s")["phase"], "Running", "the static pod's, on its mirror pod");
    set(&mut new, &a, &json!({"phase": "Succeeded"}));
    set(&mut new, &a, &json!({"phase": "Succeeded", "message": "done"}));
    let second = new.save_state().unwrap();
    assert_eq!(keys(&parse(&second)), keys(&parse(&first)), "no field of v2's own");

    // v2 -> v1: the same statuses, and v2's queued request is v1's to handle.
    let mut back = podstatus_logic_v1::Manager::new(new.imports_mut().clone());
    back.load_state(&second).unwrap();
    assert_eq!(statuses_v1(&mut back), statuses_v2(&mut new));
    let request = back.imports_mut().pop_request().unwrap();
    assert_eq!((request.pod_uid.as_str(), request.version), ("uid-a", 3), "queued with version 3; 4 rode on it");
    assert_eq!(back.sync_pod(&request), Ok(podstatus_logic::SyncOutcome::Written));
    assert_eq!(back.imports_mut().api_status("ns", "a")["phase"], "Succeeded");
    // v1 writes the snapshot the request was queued with; its batch writes the rest.
    back.sync_batch();
    assert_eq!(back.imports_mut().api_status("ns", "a")["message"], "done");
    assert_eq!(back.save_state().map(|d| keys(&parse(&d))), Ok(keys(&parse(&first))));
}

#[test]
fn change_sets_are_v1s_both_ways() {
    let (world, a, b, _) = world();
    let mut old = podstatus_logic_v1::Manager::new(world);
    v1_set(&mut old, &a, json!({"phase": "Pending"}));
    let base = old.save_state().unwrap();

    let mut new = Manager::new(old.imports_mut().clone());
    new.load_state(&base).unwrap();
    set(&mut new, &a, &json!({"phase": "Running"}));
    set(&mut new, &b, &json!({"phase": "Running"}));
    drain(&mut new);
    new.remove_orphaned_statuses(&["uid-b".to_string()]);
    let changes = new.save_state_changes().unwrap();

    // A v1 following v2's changes ends with v2's state, and the other way round.
    old.apply_state_changes(&changes).unwrap();
    assert_eq!(parse(&old.save_state().unwrap()), parse(&new.save_state().unwrap()));

    v1_set(&mut old, &b, json!({"phase": "Succeeded"}));
    let changes = old.save_state_changes().unwrap();
    new.apply_state_changes(&changes).unwrap();
    assert_eq!(parse(&new.save_state().unwrap()), parse(&old.save_state().unwrap()));
}

#[test]
fn v2_keeps_nothing_beside_the_state_document() {
    /// The outcomes, API calls, API server's pod and cached status of what comes next.
    type Rest = (Vec<SyncOutcome>, Vec<Call>, Value, Option<(u64, Value)>);

    // What one instance does next, and another that loaded its state does.
    fn rest(m: &mut M, a: &Value) -> Rest {
        m.imports_mut().running = false;
        let outcomes = drain(m);
        m.sync_batch();
        set(m, a, &json!({"phase": "Failed", "message": "again"}));
        let mut outcomes2 = drain(m);
        let mut all = outcomes;
        all.append(&mut outcomes2);
        let calls = m.imports_mut().take_calls();
        let api = m.imports_mut().api_pod("ns", "a").cloned().unwrap_or(Value::Null);
        (all, calls, api, cached(m, "uid-a"))
    }

    let mut world = FakeWorld::v2();
    world.reclaimed = true;
    world.running = true;
    let a = world.add_pod(deleting(pod("ns", "a", "uid-a", &["c"])));
    let mut first = Manager::new(world);
    set(&mut first, &a, &json!({"phase": "Running", "containerStatuses": [container("c", true)]}));
    drain(&mut first);
    // Terminated while a container may still run: the phase waits, the delete too.
    terminate(&mut first, &a);
    first.imports_mut().take_calls();

    let mut second = Manager::new(first.imports_mut().clone());
    second.load_state(&first.save_state().unwrap()).unwrap();
    let (from_first, from_second) = (rest(&mut first, &a), rest(&mut second, &a));
    assert_eq!(from_first, from_second);
    assert!(from_first.1.iter().any(|c| c.verb == Verb::DeletePod), "the rest deletes the pod: {:?}", from_first.1);
}

#[test]
fn a_pass_after_a_load_or_a_change_set_plans_the_pods_unwritten_in_the_state_it_took() {
    let (world, a, b, s) = world();
    let mut first = Manager::new(world);
    set(&mut first, &a, &json!({"phase": "Running"}));
    set(&mut first, &b, &json!({"phase": "Running"}));
    set(&mut first, &s, &json!({"phase": "Running"}));
    drain(&mut first);
    set(&mut first, &a, &json!({"phase": "Succeeded"}));
    let document = first.save_state().unwrap();
    let request = first.imports_mut().pop_request().expect("a's request");

    // Loaded: a's new version is unwritten, b's is written; the static pod s is always
    // planned (its written version is kept under its mirror pod's UID).
    let mut second = Manager::new(first.imports_mut().clone());
    second.load_state(&document).unwrap();
    let planned = |m: &mut M, request| -> Vec<String> {
        let syncs = m.plan_sync_pod(request).unwrap();
        let uids = syncs.iter().map(|sync| sync.pod_uid.clone()).collect();
        for sync in syncs {
            m.drop_sync(sync.id);
        }
        uids
    };
    assert_eq!(planned(&mut second, &request), ["uid-a", "uid-s"]);

    // Followed: the first instance writes a, then b changes; both arrive in a change
    // set, and only b is unwritten there.
    first.sync_pod(&request).unwrap();
    set(&mut first, &b, &json!({"phase": "Failed"}));
    let changes = first.save_state_changes().unwrap();
    second.apply_state_changes(&changes).unwrap();
    let request = first.imports_mut().pop_request().expect("b's request");
    assert_eq!(planned(&mut second, &request), ["uid-b", "uid-s"]);
}
