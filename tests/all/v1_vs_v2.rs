//! Logic v1 (the 2017 kubelet) and logic v2 (Kubernetes 1.27) replay the same traces.
//!
//! `fixtures/v1-vs-v2.md` tabulates every behaviour in which their reports differ, with
//! the traces that show it, and lists the traces whose reports are identical. These tests
//! replay every fixture (`fixtures/replay/`, whose golden reports are v1's, and
//! `fixtures/replay-v2/`, traces added for behaviours no v1 fixture shows) through both
//! components and hold the table to what the replays say, so it cannot go stale; check
//! that v2 never faults and writes only UID-guarded patches; and swap v1 → v2 → v1 in the
//! middle of replays.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use podstatus_tests::version_fixtures::{
    Fixture, Outcome, assert_no_fault_and_only_uid_guarded_patches, calls, check_added_traces, expectation_failure,
    replayed_through, table_row, traces_in,
};
use podstatus_tests::{fixtures_dir, replay_component_with, v1_image, v2_image, workspace_dir};
use serde_json::{Value, json};

/// The table, beside the fixtures.
const TABLE: &str = "v1-vs-v2.md";
/// The folder of the traces added for v2 (no golden reports: each carries its own
/// `expect_v1` / `expect_v2` blocks).
const V2_FOLDER: &str = "replay-v2";
/// The table's row whose traces are exactly those in which either version writes.
const WRITES_ROW: &str = "Status writes";

struct Run {
    fixture: Fixture,
    v1: Outcome,
    v2: Outcome,
}

impl Run {
    fn differs(&self) -> bool {
        self.v1 != self.v2
    }
}

/// Every fixture through both versions, once per test binary.
fn runs() -> &'static [Run] {
    static RUNS: OnceLock<Vec<Run>> = OnceLock::new();
    RUNS.get_or_init(|| {
        replayed_through(&[("replay", ""), (V2_FOLDER, "replay-v2/")], v1_image(), v2_image())
            .into_iter()
            .map(|(fixture, v1, v2)| Run { fixture, v1, v2 })
            .collect()
    })
}

/// One row of the table.
struct Row {
    behaviour: String,
    traces: Vec<String>,
}

/// The table's rows and the list of traces identical under both versions.
fn read_table() -> (Vec<Row>, Vec<String>) {
    let text = fs::read_to_string(fixtures_dir().join(TABLE)).expect("fixtures/v1-vs-v2.md exists");
    let mut rows = Vec::new();
    let mut identical = Vec::new();
    let mut in_table = false;
    let mut in_identical = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            in_identical = line.to_lowercase().contains("identical");
            continue;
        }
        if line == "| behaviour | v1 | v2 | traces |" {
            in_table = true;
            continue;
        }
        if in_table && line.starts_with('|') {
            if line.starts_with("|---") {
                continue;
            }
            let (behaviour, traces) = table_row(line);
            rows.push(Row { behaviour, traces });
            continue;
        }
        in_table = false;
        if in_identical && line.starts_with("- ") {
            identical.extend(traces_in(line));
        }
    }
    (rows, identical)
}

fn key_set<'a>(keys: impl IntoIterator<Item = &'a String>) -> BTreeSet<String> {
    keys.into_iter().cloned().collect()
}

fn list(keys: &BTreeSet<String>) -> String {
    keys.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
}

#[test]
fn the_table_lists_exactly_the_traces_whose_reports_differ() {
    let runs = runs();
    let (rows, identical) = read_table();
    assert!(!rows.is_empty(), "no rows in fixtures/{TABLE}");

    let all: BTreeSet<String> = runs.iter().map(|r| r.fixture.key.clone()).collect();
    let differing: BTreeSet<String> = runs.iter().filter(|r| r.differs()).map(|r| r.fixture.key.clone()).collect();

    let mut behaviours = BTreeSet::new();
    let mut listed = BTreeSet::new();
    for row in &rows {
        assert!(behaviours.insert(row.behaviour.clone()), "behaviour {:?} has two rows", row.behaviour);
        assert!(!row.traces.is_empty(), "row {:?} names no trace", row.behaviour);
        let traces = key_set(&row.traces);
        assert_eq!(traces.len(), row.traces.len(), "row {:?} names a trace twice", row.behaviour);
        let unknown: BTreeSet<String> = traces.difference(&all).cloned().collect();
        assert!(unknown.is_empty(), "row {:?} names traces that do not exist: {}", row.behaviour, list(&unknown));
        listed.extend(traces);
    }

    let unlisted: BTreeSet<String> = differing.difference(&listed).cloned().collect();
    let same_but_listed: BTreeSet<String> = listed.difference(&differing).cloned().collect();
    assert!(
        unlisted.is_empty() && same_but_listed.is_empty(),
        "fixtures/{TABLE} is stale.\nreports differ, but no row names the trace: {}\nreports are identical, but a row names the trace: {}",
        list(&unlisted),
        list(&same_but_listed)
    );

    let identical = key_set(&identical);
    let expected_identical: BTreeSet<String> = all.difference(&differing).cloned().collect();
    assert_eq!(identical, expected_identical, "the list of traces identical under both versions is stale");

    // The row of the status writes names every trace in which either version writes.
    let writes_row = rows.iter().find(|r| r.behaviour == WRITES_ROW).expect("a row for the status writes");
    let writing: BTreeSet<String> = runs
        .iter()
        .filter(|r| {
            let (Ok(v1), Ok(v2)) = (&r.v1, &r.v2) else { return false };
            calls(v1).iter().any(|c| c["verb"] == "update") || calls(v2).iter().any(|c| c["verb"] == "patch")
        })
        .map(|r| r.fixture.key.clone())
        .collect();
    assert_eq!(
        key_set(&writes_row.traces),
        writing,
        "the {WRITES_ROW:?} row does not name exactly the traces that write"
    );
}

#[test]
fn every_added_trace_shows_what_it_claims_under_both_versions() {
    let added = runs().iter().filter(|r| r.fixture.key.starts_with("replay-v2/"));
    let added = added.map(|run| (&run.fixture, [("v1", &run.v1), ("v2", &run.v2)]));
    check_added_traces(added, V2_FOLDER, 1, |key, doc, side, outcome| {
        match (outcome, doc.get(format!("expect_{side}_error")), doc.get(format!("expect_{side}"))) {
            (Err(e), Some(Value::String(expected)), _) if e.contains(expected.as_str()) => vec![],
            (outcome, Some(expected), _) => {
                vec![format!("{key}: {side} should refuse the trace with {expected}, gave {outcome:?}")]
            }
            (Ok(_), None, Some(expected)) => expectation_failure(key, side, expected, outcome).into_iter().collect(),
            (Err(e), None, _) => vec![format!("{key}: {side} cannot run the trace: {e}")],
            (Ok(_), None, None) => vec![format!("{key}: no expect_{side} block")],
        }
    });
}

#[test]
fn v2_never_faults_and_every_write_is_a_patch_guarded_by_the_pods_uid() {
    for run in runs() {
        assert_no_fault_and_only_uid_guarded_patches("v2", &run.fixture, &run.v2);
    }
}

// ---- swapping logic versions in the middle of a replay ----

/// Fixtures with statuses cached, static/mirror pairs, readiness changes, deletion and
/// dropped statuses, swapped v1 → v2 → v1 part-way through.
const SWAPPED: [&str; 7] = [
    "example-web-readiness.trace.json",
    "seed-delete-once-resources-reclaimed.trace.json",
    "seed-remove-orphaned-statuses.trace.json",
    "seed-static-pod-status-on-mirror.trace.json",
    "seed-versions-per-pod.trace.json",
    "upstream-set-container-readiness.trace.json",
    "upstream-static-pod.trace.json",
];

fn plugin_file(name: &str) -> PathBuf {
    let path = workspace_dir().join("target").join("guest").join(name);
    assert!(path.is_file(), "{} is missing (the host's build script writes it)", path.display());
    path
}

/// The UIDs a trace knows before step `upto`: its starting world's and those its
/// earlier steps name (getting any other would make the trace unusable).
fn known_uids(trace: &Value, upto: usize) -> BTreeSet<String> {
    let mut uids = BTreeSet::new();
    let mut add_pod = |pod: &Value| match pod {
        Value::String(uid) => {
            uids.insert(uid.clone());
        }
        pod => {
            if let Some(uid) = pod["metadata"]["uid"].as_str() {
                uids.insert(uid.to_owned());
            }
        }
    };
    for key in ["apiserver", "pod_manager"] {
        trace[key].as_array().into_iter().flatten().for_each(&mut add_pod);
    }
    for step in trace["steps"].as_array().unwrap().iter().take(upto) {
        if let Some(pod) = step.get("pod") {
            add_pod(pod);
        }
        if let Some(uid) = step.get("uid") {
            add_pod(uid);
        }
    }
    uids
}

#[test]
fn swapping_v1_to_v2_and_back_mid_trace_keeps_every_cached_status() {
    let to_v2 = json!({"op": "swap", "plugin": plugin_file("podstatus-v2-on-0-1.wasm")});
    let to_v1 = json!({"op": "swap", "plugin": plugin_file("podstatus-v1-on-0-1.wasm")});
    let mut statuses_carried = 0;
    for name in SWAPPED {
        let path = fixtures_dir().join("replay").join(name);
        let trace: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        let steps = trace["steps"].as_array().unwrap().clone();
        // Swap to v2 a third of the way in, but after the first status is cached; swap
        // back two thirds of the way in.
        let first_status = steps.iter().position(|s| s["op"] == "set-pod-status").expect("a status") + 1;
        let first_swap = first_status.max(steps.len() / 3);
        let second_swap = (first_swap + 1).max(steps.len() * 2 / 3).min(steps.len());

        // Around each swap, get-pod-status of every UID known by then, before and after.
        let mut new_steps = Vec::new();
        let mut probes = Vec::new(); // (index of the swap step, UIDs probed on each side)
        for (i, step) in steps.iter().enumerate() {
            if i == first_swap || i == second_swap {
                let uids = known_uids(&trace, i);
                let swap = if i == first_swap { &to_v2 } else { &to_v1 };
                new_steps.extend(uids.iter().map(|uid| json!({"op": "get-pod-status", "uid": uid})));
                probes.push((new_steps.len(), uids.clone()));
                new_steps.push(swap.clone());
                new_steps.extend(uids.iter().map(|uid| json!({"op": "get-pod-status", "uid": uid})));
            }
            new_steps.push(step.clone());
        }
        if second_swap == steps.len() {
            let uids = known_uids(&trace, steps.len());
            new_steps.extend(uids.iter().map(|uid| json!({"op": "get-pod-status", "uid": uid})));
            probes.push((new_steps.len(), uids.clone()));
            new_steps.push(to_v1.clone());
            new_steps.extend(uids.iter().map(|uid| json!({"op": "get-pod-status", "uid": uid})));
        }
        let mut swapped = trace.clone();
        swapped["steps"] = Value::Array(new_steps);

        let outcome = replay_component_with(v1_image(), &swapped.to_string(), path.parent().unwrap())
            .unwrap_or_else(|e| panic!("{name}: unusable after inserting swaps: {e}"));
        let report = serde_json::to_value(&outcome.report).unwrap();
        assert_eq!(report["fault"], Value::Null, "{name}: a plugin faulted");
        let results = report["results"].as_array().unwrap();
        assert_eq!(results.len(), swapped["steps"].as_array().unwrap().len(), "{name}: the replay stopped early");
        assert_eq!(probes.len(), 2, "{name}");
        for (swap, uids) in probes {
            assert_eq!(results[swap], json!({"swapped": true}), "{name}: step {swap}");
            let n = uids.len();
            let before = &results[swap - n..swap];
            let after = &results[swap + 1..swap + 1 + n];
            for ((uid, before), after) in uids.iter().zip(before).zip(after) {
                let found = |r: &Value| r["found"].as_bool().unwrap_or_else(|| panic!("{name}: not a get result: {r}"));
                assert_eq!(found(after), found(before), "{name}: {uid} across the swap at step {swap}");
                if found(before) {
                    statuses_carried += 1;
                    assert_eq!(after["version"], before["version"], "{name}: {uid}'s version across step {swap}");
                    assert_eq!(after["status"], before["status"], "{name}: {uid}'s status across step {swap}");
                }
            }
        }
        // Nothing after the swaps was refused or faulted: every result is a step's own.
        let refused: BTreeMap<usize, &Value> =
            results.iter().enumerate().filter(|(_, r)| r.get("error").is_some()).collect();
        assert!(refused.is_empty(), "{name}: refused calls {refused:?}");
    }
    assert!(statuses_carried >= SWAPPED.len(), "too few cached statuses crossed a swap ({statuses_carried})");
}
