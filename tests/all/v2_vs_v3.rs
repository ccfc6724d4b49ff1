//! Logic v2 (Kubernetes 1.27) and logic v3 (v2 writing each version with one PATCH, no
//! GET) replay the same traces.
//!
//! `fixtures/v2-vs-v3.md` lists the traces whose statuses differ (in the API server or
//! the cache), with the reason; these tests replay every fixture through both components
//! and hold the table to what the replays say, check that v3 reads only after a refused
//! patch and writes no more often than v2 reads where no fault is injected, and check
//! the `replay-v3/` traces' expectations.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::sync::OnceLock;

use podstatus_tests::version_fixtures::{
    Fixture, Outcome, assert_no_fault_and_only_uid_guarded_patches, calls, check_added_traces, expectation_failure,
    replayed_through, table_row,
};
use podstatus_tests::{fixtures_dir, v2_image, v3_image};
use serde_json::{Value, json};

const TABLE: &str = "v2-vs-v3.md";

struct Run {
    fixture: Fixture,
    v2: Outcome,
    v3: Outcome,
}

fn runs() -> &'static [Run] {
    static RUNS: OnceLock<Vec<Run>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let folders = [("replay", ""), ("replay-v2", "replay-v2/"), ("replay-v3", "replay-v3/")];
        replayed_through(&folders, v2_image(), v3_image())
            .into_iter()
            .map(|(fixture, v2, v3)| Run { fixture, v2, v3 })
            .collect()
    })
}

/// What a replay leaves behind: each API server pod's UID and status, and the results.
fn left_behind(report: &Value) -> Value {
    let pods: Vec<Value> = report["apiserver"]
        .as_array()
        .expect("apiserver is a list")
        .iter()
        .map(|pod| {
            json!({"namespace": pod["metadata"]["namespace"], "name": pod["metadata"]["name"],
                   "uid": pod["metadata"]["uid"], "status": pod["status"]})
        })
        .collect();
    json!({"apiserver": pods, "results": report["results"], "fault": report["fault"]})
}

fn table_traces() -> BTreeSet<String> {
    let text = fs::read_to_string(fixtures_dir().join(TABLE)).expect("fixtures/v2-vs-v3.md exists");
    let mut traces = BTreeSet::new();
    let mut in_table = false;
    for line in text.lines().map(str::trim) {
        if line == "| behaviour | v2 | v3 | traces |" {
            in_table = true;
            continue;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        for trace in table_row(line).1 {
            assert!(traces.insert(trace.clone()), "{trace} is listed twice");
        }
    }
    traces
}

#[test]
fn the_table_lists_exactly_the_traces_whose_statuses_differ() {
    let mut differing = BTreeSet::new();
    for run in runs() {
        let key = &run.fixture.key;
        let v2 = run.v2.as_ref().unwrap_or_else(|e| panic!("{key}: v2 cannot run it: {e}"));
        let v3 = run.v3.as_ref().unwrap_or_else(|e| panic!("{key}: v3 cannot run it: {e}"));
        if left_behind(v2) != left_behind(v3) {
            differing.insert(key.clone());
        }
    }
    let listed = table_traces();
    let all: BTreeSet<String> = runs().iter().map(|r| r.fixture.key.clone()).collect();
    let unknown: Vec<&String> = listed.difference(&all).collect();
    assert!(unknown.is_empty(), "fixtures/{TABLE} names traces that do not exist: {unknown:?}");
    assert_eq!(listed, differing, "fixtures/{TABLE} is stale: the traces whose statuses differ are {differing:?}");
}

#[test]
fn without_faults_v3_reads_only_after_a_refused_patch_and_writes_at_most_once_per_version() {
    let mut checked = 0;
    for run in runs().iter().filter(|r| !r.fixture.key.starts_with("replay-v3/")) {
        let key = &run.fixture.key;
        let trace: Value = serde_json::from_str(&run.fixture.text).unwrap();
        if trace["steps"].as_array().unwrap().iter().any(|s| s["op"] == "fail") {
            continue;
        }
        checked += 1;
        let (v2, v3) = (run.v2.as_ref().unwrap(), run.v3.as_ref().unwrap());
        let v3_calls = calls(v3);
        for (i, call) in v3_calls.iter().enumerate() {
            if call["verb"] == "get" {
                let refused = v3_calls[..i]
                    .iter()
                    .rev()
                    .take_while(|c| c["step"] == call["step"])
                    .any(|c| c["verb"] == "patch" && c["outcome"] == "conflict" && c["name"] == call["name"]);
                assert!(refused, "{key}: v3 read {} without a refused patch first", call["name"]);
            }
        }
        // v2 reads once per version it syncs; v3 writes instead.
        let count = |report: &Value, verb: &str| -> BTreeMap<String, usize> {
            let mut counts = BTreeMap::new();
            for c in calls(report).iter().filter(|c| c["verb"] == verb) {
                *counts.entry(format!("{}/{}", c["namespace"], c["name"])).or_default() += 1;
            }
            counts
        };
        let (patches, reads) = (count(v3, "patch"), count(v2, "get"));
        for (pod, n) in &patches {
            let read = reads.get(pod).copied().unwrap_or(0);
            assert!(*n <= read, "{key}: v3 patched {pod} {n} times, v2 synced it {read} times");
        }
    }
    assert!(checked > 50, "only {checked} fixtures without faults");
}

#[test]
fn v3_never_faults_and_every_write_is_a_patch_guarded_by_the_pods_uid() {
    for run in runs() {
        assert_no_fault_and_only_uid_guarded_patches("v3", &run.fixture, &run.v3);
    }
}

#[test]
fn every_v3_trace_shows_what_it_claims_under_both_versions() {
    let added = runs().iter().filter(|r| r.fixture.key.starts_with("replay-v3/"));
    let added = added.map(|run| (&run.fixture, [("v2", &run.v2), ("v3", &run.v3)]));
    check_added_traces(added, "replay-v3", 4, |key, doc, side, outcome| match doc.get(format!("expect_{side}")) {
        None => vec![format!("{key}: no expect_{side} block")],
        Some(expected) => expectation_failure(key, side, expected, outcome).into_iter().collect(),
    });
}
