//! Saving and loading the manager's state, natively over a fake world.

use podstatus_logic::{
    BatchReport, ManagerError, STATE_FORMAT, STATE_VERSION, StatusManager, SyncOutcome, SyncRequest, UpdateOutcome,
};
use podstatus_logic_testing::*;
use podstatus_logic_v1::Manager;
use serde_json::{Value, json};

type M = Manager<FakeWorld>;

const UIDS: [&str; 6] = ["uid-a", "uid-b", "uid-c", "uid-static", "uid-mirror", "uid-unknown"];

fn set(m: &mut M, pod: &Value, status: Value) -> UpdateOutcome {
    m.set_pod_status(&pod.to_string(), &status.to_string()).unwrap_or_else(|e| panic!("set_pod_status: {e}"))
}

fn container(name: &str, ready: bool) -> Value {
    json!({"name": name, "containerID": format!("containerd://{name}"), "image": "busybox", "imageID": "",
           "ready": ready, "restartCount": 0, "state": {"running": {"startedAt": rfc3339(T0, 0)}}})
}

/// A manager with a bit of everything: a pod written at version 2 with a stale request
/// for version 1 still queued (its snapshot differs from the cache), a pod never written
/// with its request queued, a static pod written to its mirror pod, a pod whose status
/// was dropped after it was written (an orphaned API version), and a pod cached while
/// the queue was full.
fn busy_manager() -> M {
    let mut world = FakeWorld::new();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["a", "b"]));
    let b = world.add_pod(pod("ns", "b", "uid-b", &["a", "b"]));
    let c = world.add_pod(pod("ns", "c", "uid-c", &["a"]));
    let d = world.add_pod(pod("ns", "d", "uid-d", &["a"]));
    let (s, mirror) = static_and_mirror("ns", "s", "uid-static", "uid-mirror", &["a"]);
    world.add_managed_pod(s.clone());
    world.add_pod(mirror);
    let mut m = Manager::new(world);

    // a: version 1 queued (stale), version 2 written.
    set(&mut m, &a, json!({"phase": "Pending", "containerStatuses": [container("a", false), container("b", false)]}));
    set(
        &mut m,
        &a,
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                            "containerStatuses": [container("b", true), container("a", false)]}),
    );
    let queue = m.imports_mut().take_queue();
    assert_eq!(m.sync_pod(&queue[1]), Ok(SyncOutcome::Written));
    m.imports_mut().queue.push_back(queue[0].clone());

    // the static pod, written to its mirror pod by a batch.
    set(&mut m, &s, json!({"phase": "Running"}));
    let request = m.imports_mut().queue.pop_back().unwrap();
    assert_eq!(m.sync_batch(), BatchReport { synced: 1, reconciled: 0, failed: 0 });
    m.imports_mut().queue.push_back(request);

    // c: written, then dropped.
    set(&mut m, &c, json!({"phase": "Succeeded"}));
    let request = m.imports_mut().queue.pop_back().unwrap();
    assert_eq!(m.sync_pod(&request), Ok(SyncOutcome::Written));
    assert_eq!(m.remove_orphaned_statuses(&["uid-a".into(), "uid-static".into(), "uid-d".into()]), 1);

    // b: queued, never written.
    set(&mut m, &b, json!({"phase": "Running", "containerStatuses": [container("a", true), container("b", false)]}));

    // d: cached while the queue was full.
    m.imports_mut().queue_capacity = m.imports_mut().queue.len();
    assert_eq!(set(&mut m, &d, json!({"phase": "Running"})), UpdateOutcome::QueueFull);
    m.imports_mut().queue_capacity = 1000;
    m
}

/// A fresh manager over a copy of `m`'s world, loaded with `m`'s saved state.
fn hand_over(m: &mut M) -> M {
    let document = m.save_state().expect("save_state");
    let mut loaded = Manager::new(m.imports_mut().clone());
    loaded.load_state(&document).expect("load_state");
    loaded
}

/// Everything observable about a manager: its statuses (through every UID, the
/// mirror pod's included) and its state document.
fn snapshot(m: &mut M) -> (Vec<Option<(u64, String)>>, String) {
    let statuses = UIDS
        .iter()
        .chain(["uid-d"].iter())
        .map(|uid| m.get_pod_status(uid).unwrap().map(|c| (c.version, c.status)))
        .collect();
    (statuses, m.save_state().unwrap())
}

/// Drives `m` through the same script and describes everything it did.
fn drive(m: &mut M) -> Vec<String> {
    let mut log = Vec::new();
    while let Some(request) = m.imports_mut().pop_request() {
        log.push(format!("{request:?} -> {:?}", m.sync_pod(&request)));
    }
    log.push(format!("batch {:?}", m.sync_batch()));
    m.imports_mut().set_now(T0 + 5000, 0);
    let a = m.imports_mut().pods["uid-a"].clone();
    log.push(format!("set a {:?}", m.set_pod_status(&a.to_string(), r#"{"phase":"Failed"}"#)));
    log.push(format!("ready b {:?}", m.set_container_readiness("uid-b", "containerd://b", true)));
    let s = m.imports_mut().pods["uid-static"].clone();
    log.push(format!("terminate s {:?}", m.terminate_pod(&s.to_string())));
    log.push(format!("pushed {:?}", m.imports_mut().pushed));
    while let Some(request) = m.imports_mut().pop_request() {
        log.push(format!("{request:?} -> {:?}", m.sync_pod(&request)));
    }
    log.push(format!("batch {:?}", m.sync_batch()));
    log.push(format!("calls {:?}", m.imports_mut().calls));
    log.push(format!("api {:?}", m.imports_mut().api));
    log.push(format!("state {}", m.save_state().unwrap()));
    log
}

#[test]
fn a_loaded_manager_reproduces_every_status() {
    let mut old = busy_manager();
    let mut new = hand_over(&mut old);
    let (old_statuses, old_document) = snapshot(&mut old);
    let (new_statuses, new_document) = snapshot(&mut new);
    assert_eq!(new_statuses, old_statuses);
    assert_eq!(new_document, old_document, "save, load, save is the same document");
    // The fixture really holds something for each kind of pod.
    let versions: Vec<Option<u64>> = old_statuses.iter().map(|s| s.as_ref().map(|(v, _)| *v)).collect();
    assert_eq!(versions, [Some(2), Some(1), None, Some(1), Some(1), None, Some(1)]);
}

#[test]
fn a_loaded_manager_behaves_as_the_saved_one_would_have() {
    let mut old = busy_manager();
    let mut new = hand_over(&mut old);
    let old_log = drive(&mut old);
    let new_log = drive(&mut new);
    assert_eq!(new_log, old_log);
    // The script did exercise the hand-over: every pending request was accepted.
    assert!(!old_log.iter().any(|line| line.contains("UnknownRequest")), "{old_log:#?}");
}

#[test]
fn pending_requests_and_api_versions_survive_the_hand_over() {
    let mut old = busy_manager();
    let mut new = hand_over(&mut old);
    let queue = new.imports_mut().take_queue();
    let outcomes: Vec<(String, u64, SyncOutcome)> = queue
        .iter()
        .map(|r| (r.pod_uid.clone(), r.version, new.sync_pod(r).expect("the loaded manager knows the request")))
        .collect();
    assert_eq!(
        outcomes,
        [
            // Version 2 of a is written already: its stale request is up to date.
            ("uid-a".to_string(), 1, SyncOutcome::UpToDate),
            // A static pod's own UID has no version of its own: written again.
            ("uid-static".to_string(), 1, SyncOutcome::Written),
            ("uid-b".to_string(), 1, SyncOutcome::Written),
        ]
    );
    assert_eq!(
        new.imports_mut().api_status("ns", "b"),
        serde_json::from_str::<Value>(&new.get_pod_status("uid-b").unwrap().unwrap().status).unwrap()
    );
    // The versions written before the save hold: only d (queue was full) is left.
    new.imports_mut().take_calls();
    assert_eq!(new.sync_batch(), BatchReport { synced: 1, reconciled: 0, failed: 0 });
    let written: Vec<String> = new.imports_mut().calls_of(Verb::UpdatePodStatus).into_iter().map(|c| c.name).collect();
    assert_eq!(written, ["d"]);
}

#[test]
fn a_stale_snapshot_is_written_as_it_was() {
    let (world, p) = {
        let mut world = FakeWorld::new();
        let p = world.add_pod(pod("ns", "a", "uid-a", &["a"]));
        (world, p)
    };
    let mut old = Manager::new(world);
    set(&mut old, &p, json!({"phase": "Pending"}));
    set(&mut old, &p, json!({"phase": "Running"}));
    let mut new = hand_over(&mut old);
    let first = new.imports_mut().pop_request().unwrap();
    assert_eq!(first.version, 1);
    assert_eq!(new.sync_pod(&first), Ok(SyncOutcome::Written));
    assert_eq!(new.imports_mut().api_status("ns", "a")["phase"], "Pending", "the snapshot, not the cache");
    let second = new.imports_mut().pop_request().unwrap();
    assert_eq!(new.sync_pod(&second), Ok(SyncOutcome::Written));
    assert_eq!(new.imports_mut().api_status("ns", "a")["phase"], "Running");
}

#[test]
fn request_ids_never_collide_across_a_hand_over() {
    let mut old = busy_manager();
    let seen: Vec<u64> = old.imports_mut().pushed.iter().map(|r| r.id).collect();
    let mut new = hand_over(&mut old);
    let a = new.imports_mut().pods["uid-a"].clone();
    set(&mut new, &a, json!({"phase": "Unknown"}));
    let id = new.imports_mut().pushed.last().unwrap().id;
    assert!(seen.iter().all(|&old_id| old_id < id), "{id} after {seen:?}");
    assert_eq!(id, seen.iter().max().unwrap() + 1);
}

#[test]
fn request_ids_stay_above_every_pending_request_even_if_the_document_says_otherwise() {
    let mut old = busy_manager();
    let mut document: Value = serde_json::from_str(&old.save_state().unwrap()).unwrap();
    let highest_pending: u64 =
        document["pending"].as_object().unwrap().keys().map(|k| k.parse::<u64>().unwrap()).max().unwrap();
    document["nextRequestId"] = json!(1);
    let mut new = Manager::new(old.imports_mut().clone());
    new.load_state(&document.to_string()).unwrap();
    let a = new.imports_mut().pods["uid-a"].clone();
    set(&mut new, &a, json!({"phase": "Unknown"}));
    let id = new.imports_mut().pushed.last().unwrap().id;
    assert!(id > highest_pending, "{id} <= {highest_pending}");
    // Every request queued before the save is still handled exactly once.
    for request in new.imports_mut().take_queue() {
        assert!(new.sync_pod(&request).is_ok(), "{request:?}");
    }
}

#[test]
fn the_document_names_its_format_and_version() {
    let mut m = busy_manager();
    let document: Value = serde_json::from_str(&m.save_state().unwrap()).unwrap();
    assert_eq!(document["format"], STATE_FORMAT);
    assert_eq!(document["version"], STATE_VERSION);
    assert_eq!(STATE_FORMAT, "podstatus.kubelet.io/state");
}

#[test]
fn an_empty_state_round_trips_and_replaces_a_full_one() {
    let mut empty = Manager::new(FakeWorld::new());
    let document = empty.save_state().unwrap();
    let mut full = busy_manager();
    let queued = full.imports_mut().take_queue();
    full.load_state(&document).unwrap();
    // Everything but the request counter, which never goes back for one instance.
    let mut saved: Value = serde_json::from_str(&full.save_state().unwrap()).unwrap();
    let mut expected: Value = serde_json::from_str(&document).unwrap();
    assert!(saved["nextRequestId"].as_u64() > expected["nextRequestId"].as_u64());
    saved["nextRequestId"] = Value::Null;
    expected["nextRequestId"] = Value::Null;
    assert_eq!(saved, expected);
    for uid in UIDS {
        assert_eq!(full.get_pod_status(uid).unwrap(), None, "{uid}");
    }
    for request in queued {
        assert_eq!(full.sync_pod(&request), Err(ManagerError::UnknownRequest(request.id)));
    }
}

#[test]
fn load_state_refuses_what_it_cannot_read_and_changes_nothing() {
    let mut m = busy_manager();
    let good: Value = serde_json::from_str(&m.save_state().unwrap()).unwrap();
    let edit = |f: fn(&mut Value)| {
        let mut document = good.clone();
        f(&mut document);
        document.to_string()
    };
    // (case, document, text the error must name)
    let cases: Vec<(&str, String, &str)> = vec![
        ("another format", edit(|d| d["format"] = json!("example.com/other")), "example.com/other"),
        ("a newer version", edit(|d| d["version"] = json!(STATE_VERSION + 6)), "is newer than this plugin reads"),
        ("a huge version", edit(|d| d["version"] = json!(u64::MAX)), ""),
        ("not JSON", "{\"format\": ".to_string(), ""),
        ("empty", String::new(), ""),
        ("not an object", "42".to_string(), ""),
        ("no header", "{}".to_string(), ""),
        ("version as text", edit(|d| d["version"] = json!("1")), ""),
        ("statuses not a map", edit(|d| d["statuses"] = json!(5)), ""),
        ("a status of the wrong shape", edit(|d| d["statuses"]["uid-a"]["status"] = json!({"conditions": 5})), ""),
        ("a version of the wrong type", edit(|d| d["statuses"]["uid-a"]["version"] = json!(-1)), ""),
        (
            "no statuses",
            edit(|d| {
                d.as_object_mut().unwrap().remove("statuses");
            }),
            "",
        ),
        (
            "a pending request for a version the state lacks",
            edit(|d| {
                let pending = d["pending"].as_object_mut().unwrap();
                let (_, entry) = pending.iter_mut().find(|(_, e)| e["podUid"] == "uid-b").unwrap();
                entry["version"] = json!(9);
            }),
            "version 9",
        ),
        (
            "a pending request for a pod the state lacks",
            edit(|d| {
                d["pending"]["77"] = json!({"podUid": "uid-zzz", "version": 1, "podName": "z", "podNamespace": "ns"});
            }),
            "uid-zzz",
        ),
    ];
    let before = snapshot(&mut m);
    for (name, document, names) in cases {
        let result = m.load_state(&document);
        match &result {
            Err(ManagerError::InvalidState(message)) => {
                assert!(message.contains(names), "{name}: {message}")
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(snapshot(&mut m), before, "{name}: state unchanged");
    }
    // And the manager still handles its own requests.
    for request in m.imports_mut().take_queue() {
        assert!(m.sync_pod(&request).is_ok(), "{request:?}");
    }
}

#[test]
fn an_older_or_equal_version_is_read() {
    let mut old = busy_manager();
    let document = old.save_state().unwrap();
    let mut new = Manager::new(old.imports_mut().clone());
    assert_eq!(new.load_state(&document), Ok(()));
    assert!(document.contains(&format!("\"version\":{STATE_VERSION}")));
}

#[test]
fn a_queued_request_is_unknown_to_a_manager_that_never_loaded_it() {
    let mut old = busy_manager();
    let request = old.imports_mut().queue.front().unwrap().clone();
    let mut stranger = Manager::new(old.imports_mut().clone());
    assert_eq!(stranger.sync_pod(&request), Err(ManagerError::UnknownRequest(request.id)));
    let forged = SyncRequest { version: request.version + 1, ..request.clone() };
    let mut new = hand_over(&mut old);
    assert_eq!(new.sync_pod(&forged), Err(ManagerError::UnknownRequest(request.id)));
    assert!(new.sync_pod(&request).is_ok());
}

/// The contract (types.wit, sync-request.id): "unique for the plugin's lifetime (and
/// across state hand-overs)". `load_state` sets the next ID from the document (raised
/// only above the document's own pending requests), so an instance that already handed
/// out IDs and then loads an older or another instance's document hands the same IDs
/// out again (state.rs, load_state: `doc.next_request_id.max(floor)` ignores
/// `self.next_request_id`).
#[test]
fn load_state_never_reuses_request_ids_this_instance_handed_out() {
    let empty = Manager::new(FakeWorld::new()).save_state().unwrap();
    let mut m = busy_manager();
    let handed_out: Vec<u64> = m.imports_mut().pushed.iter().map(|r| r.id).collect();
    m.load_state(&empty).unwrap();
    let a = m.imports_mut().pods["uid-a"].clone();
    set(&mut m, &a, json!({"phase": "Unknown"}));
    let id = m.imports_mut().pushed.last().unwrap().id;
    assert!(!handed_out.contains(&id), "request ID {id} was already handed out: {handed_out:?}");
}

/// A follower that starts from a full save and then applies only the change set after
/// every call ends up with exactly the leader's state, whatever the calls did.
#[test]
fn change_sets_after_every_call_rebuild_the_same_state() {
    let mut world = FakeWorld::new();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["a", "b"]));
    let b = world.add_pod(pod("ns", "b", "uid-b", &["a"]));
    let (s, mirror) = static_and_mirror("ns", "s", "uid-static", "uid-mirror", &["a"]);
    world.add_managed_pod(s.clone());
    world.add_pod(mirror);
    let mut leader = Manager::new(world);
    let mut follower = Manager::new(FakeWorld::new());
    follower.load_state(&leader.save_state().unwrap()).unwrap();

    type Step = Box<dyn Fn(&mut M)>;
    let (a2, b2, s2) = (a.clone(), b.clone(), s.clone());
    let steps: Vec<(&str, Step)> = vec![
        (
            "set a v1",
            Box::new(move |m| {
                ignore(set(
                    m,
                    &a,
                    json!({"phase": "Pending", "containerStatuses": [container("a", false), container("b", false)]}),
                ))
            }),
        ),
        (
            "set a v2 (v1 still queued)",
            Box::new(move |m| {
                ignore(set(
                    m,
                    &a2,
                    json!({"phase": "Running", "containerStatuses": [container("a", true), container("b", false)]}),
                ))
            }),
        ),
        ("readiness of b", Box::new(|m| ignore(m.set_container_readiness("uid-a", "containerd://b", true).unwrap()))),
        ("set b", Box::new(move |m| ignore(set(m, &b, json!({"phase": "Running"}))))),
        ("set the static pod", Box::new(move |m| ignore(set(m, &s, json!({"phase": "Running"}))))),
        (
            "sync the oldest request",
            Box::new(|m| {
                let request = m.imports_mut().pop_request().unwrap();
                m.sync_pod(&request).unwrap();
            }),
        ),
        ("batch sync", Box::new(|m| ignore(m.sync_batch()))),
        ("terminate b", Box::new(move |m| ignore(m.terminate_pod(&b2.to_string()).unwrap()))),
        (
            "drop every status but the static pod's",
            Box::new(|m| ignore(m.remove_orphaned_statuses(&["uid-static".into()]))),
        ),
        (
            "drain the queue",
            Box::new(|m| {
                for request in m.imports_mut().take_queue() {
                    let _ = m.sync_pod(&request);
                }
            }),
        ),
        ("batch sync again", Box::new(|m| ignore(m.sync_batch()))),
        ("set the static pod again", Box::new(move |m| ignore(set(m, &s2, json!({"phase": "Succeeded"}))))),
    ];
    for (name, step) in steps {
        step(&mut leader);
        let changes = leader.save_state_changes().unwrap();
        follower.apply_state_changes(&changes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(follower.save_state().unwrap(), leader.save_state().unwrap(), "after {name}");
    }
}

#[test]
fn a_change_set_is_refused_whole_when_it_does_not_fit() {
    let mut world = FakeWorld::new();
    let a = world.add_pod(pod("ns", "a", "uid-a", &["a"]));
    let mut leader = Manager::new(world);
    set(&mut leader, &a, json!({"phase": "Pending"}));
    let changes: Value = serde_json::from_str(&leader.save_state_changes().unwrap()).unwrap();

    // Without the status entry, the queued request refers to a status the follower
    // lacks: the whole change set is refused and nothing changes.
    let mut broken = changes.clone();
    broken["patch"]["statuses"] = json!({});
    let mut follower = Manager::new(FakeWorld::new());
    let before = follower.save_state().unwrap();
    let err = follower.apply_state_changes(&broken.to_string()).unwrap_err();
    assert!(matches!(&err, ManagerError::InvalidState(m) if m.contains("refers to version 1 of pod uid-a")), "{err}");
    assert_eq!(follower.save_state().unwrap(), before);

    let mut newer = changes.clone();
    newer["version"] = json!(STATE_VERSION + 1);
    assert!(follower.apply_state_changes(&newer.to_string()).is_err());
    let mut full_document = changes;
    full_document["format"] = json!(STATE_FORMAT);
    assert!(follower.apply_state_changes(&full_document.to_string()).is_err(), "a full document is not a change set");
}

/// Steps run for their effect on the state; what they return does not matter here.
fn ignore<T>(_: T) {}

/// Version 2 of the document adds a status's optional `podIsFinished` (newer logic's
/// mark of a status from terminate-pod). v1 reads version 1 documents (no mark) and
/// version 2 ones, never sets the mark, and keeps it untouched: through save and load,
/// change sets, and its own new versions of that pod's status.
#[test]
fn the_finished_mark_of_newer_logic_is_carried_untouched() {
    let mut m = busy_manager();
    let mut document: Value = serde_json::from_str(&m.save_state().unwrap()).unwrap();
    assert_eq!(document["version"], STATE_VERSION);
    assert_eq!(STATE_VERSION, 2);
    assert!(document["statuses"].as_object().unwrap().values().all(|s| s.get("podIsFinished").is_none()));

    // A version 1 document is a version 2 document without the mark.
    document["version"] = json!(1);
    let mut old = Manager::new(m.imports_mut().clone());
    old.load_state(&document.to_string()).unwrap();
    document["version"] = json!(2);
    assert_eq!(serde_json::from_str::<Value>(&old.save_state().unwrap()).unwrap(), document);

    // Newer logic marked uid-a's status (and its stale snapshot's) finished.
    document["statuses"]["uid-a"]["podIsFinished"] = json!(true);
    let snapshot = document["pending"].as_object_mut().unwrap().values_mut().find(|p| p["podUid"] == "uid-a").unwrap();
    assert!(snapshot.get("status").is_some(), "the stale snapshot has a status of its own");
    snapshot["podIsFinished"] = json!(true);
    let mut m = Manager::new(m.imports_mut().clone());
    m.load_state(&document.to_string()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&m.save_state().unwrap()).unwrap(), document, "kept as loaded");

    // A new version of uid-a's status keeps the mark, and so does its change set.
    let a = m.imports_mut().pods["uid-a"].clone();
    assert_eq!(set(&mut m, &a, json!({"phase": "Failed"})), UpdateOutcome::Queued);
    let changes: Value = serde_json::from_str(&m.save_state_changes().unwrap()).unwrap();
    assert_eq!(changes["version"], STATE_VERSION);
    assert_eq!(changes["patch"]["statuses"]["uid-a"]["podIsFinished"], true);
    let saved: Value = serde_json::from_str(&m.save_state().unwrap()).unwrap();
    assert_eq!(saved["statuses"]["uid-a"]["version"], 3);
    assert_eq!(saved["statuses"]["uid-a"]["podIsFinished"], true);
    assert!(saved["statuses"]["uid-b"].get("podIsFinished").is_none());

    // Another instance following by change sets has it too.
    let mut follower = Manager::new(m.imports_mut().clone());
    follower.load_state(&document.to_string()).unwrap();
    follower.apply_state_changes(&changes.to_string()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&follower.save_state().unwrap()).unwrap(), saved);
}
