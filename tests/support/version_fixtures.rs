//! The replay fixtures that the logic-version comparisons (`tests/all/v1_vs_v2.rs`,
//! `v2_vs_v3.rs`) run through two plugins: read once, replayed to JSON reports.

use std::fs;
use std::path::PathBuf;

use podstatus_runtime::PluginImage;
use serde_json::Value;

use crate::{fixtures_dir, partial_match, replay_component_with};

/// A replay fixture, named as the comparison tables name it.
pub struct Fixture {
    /// The file name for `replay/`, `<folder>/<file name>` for the other folders.
    pub key: String,
    /// Where the trace is.
    pub path: PathBuf,
    /// The trace.
    pub text: String,
}

/// A replay's report as JSON, or why the trace is unusable with that plugin.
pub type Outcome = Result<Value, String>;

/// Every trace of `folders` (each a fixtures folder and the prefix of its keys), in
/// key order.
pub fn trace_fixtures(folders: &[(&str, &str)]) -> Vec<Fixture> {
    let mut fixtures = Vec::new();
    for (folder, prefix) in folders {
        let dir = fixtures_dir().join(folder);
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("readable dir entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".trace.json") {
                let text = fs::read_to_string(&path).unwrap();
                fixtures.push(Fixture { key: format!("{prefix}{name}"), path, text });
            }
        }
    }
    fixtures.sort_by(|a, b| a.key.cmp(&b.key));
    fixtures
}

/// `fixture` replayed through `image`: its report as JSON.
pub fn replay_report(image: &PluginImage, fixture: &Fixture) -> Outcome {
    replay_component_with(image, &fixture.text, fixture.path.parent().unwrap())
        .map(|outcome| serde_json::to_value(&outcome.report).expect("the report serialises"))
        .map_err(|e| e.to_string())
}

/// The API calls a replay's report records.
pub fn calls(report: &Value) -> &[Value] {
    report["calls"].as_array().expect("calls is a list")
}

/// Checks that `version`'s replay of `fixture` ran, never faulted, and wrote only
/// status patches guarded by the UID of the pod they patched (v2 and v3 promise this;
/// v1 PUTs): the check each comparison makes of its newer side.
pub fn assert_no_fault_and_only_uid_guarded_patches(version: &str, fixture: &Fixture, outcome: &Outcome) {
    let key = &fixture.key;
    let report = outcome.as_ref().unwrap_or_else(|e| panic!("{key}: {version} cannot run the trace: {e}"));
    assert_eq!(report["fault"], Value::Null, "{key}: {version} faulted");
    for call in calls(report) {
        match call["verb"].as_str() {
            Some("get" | "delete") => {}
            Some("patch") => {
                assert_eq!(call["subresource"], "status", "{key}: {call}");
                assert!(call["precondition_uid"].is_string(), "{key}: a patch without UID precondition: {call}");
                if call["outcome"] == "ok" {
                    assert_eq!(call["precondition_uid"], call["target_uid"], "{key}: patched another pod: {call}");
                }
            }
            _ => panic!("{key}: {version} made a call other than get, patch or delete: {call}"),
        }
    }
}

/// One row of a comparison table (`| behaviour | <one> | <other> | traces |`): its
/// behaviour and the traces its last cell names. Panics unless the row has four cells
/// and names its behaviour and both sides.
pub fn table_row(line: &str) -> (String, Vec<String>) {
    let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
    assert_eq!(cells.len(), 4, "a table row has four cells: {line}");
    assert!(cells[..3].iter().all(|c| !c.is_empty()), "a row names its behaviour and both sides: {line}");
    (cells[0].to_owned(), traces_in(cells[3]))
}

/// The traces (`*.trace.json`, in backticks) a piece of a table's text names.
pub fn traces_in(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).filter(|t| t.ends_with(".trace.json")).map(str::to_owned).collect()
}

/// A trace's `expect_<side>` block checked against `side`'s outcome: what failed, if
/// anything (a missing block is the caller's to judge).
pub fn expectation_failure(key: &str, side: &str, expected: &Value, outcome: &Outcome) -> Option<String> {
    match outcome {
        Ok(report) => {
            partial_match(expected, report, "report").err().map(|e| format!("{key}: {side}: expectation failed at {e}"))
        }
        Err(e) => Some(format!("{key}: {side} cannot run the trace: {e}")),
    }
}

/// Every trace of `folders` (as [`trace_fixtures`]) replayed through `first`, then
/// `second`: each fixture with both outcomes. More than 60 of them, as every
/// comparison expects.
pub fn replayed_through(
    folders: &[(&str, &str)],
    first: &PluginImage,
    second: &PluginImage,
) -> Vec<(Fixture, Outcome, Outcome)> {
    let runs: Vec<_> = trace_fixtures(folders)
        .into_iter()
        .map(|fixture| {
            let (first, second) = (replay_report(first, &fixture), replay_report(second, &fixture));
            (fixture, first, second)
        })
        .collect();
    assert!(runs.len() > 60, "found only {} fixtures", runs.len());
    runs
}

/// What each trace the comparison added (`added`: a fixture and its two plugins'
/// outcomes, each named by its side) claims, checked: a description, and for each side
/// `check(key, document, side, outcome)`'s failures. Panics with every failure, or when
/// fewer than `at_least` traces are in `folder`.
pub fn check_added_traces<'a>(
    added: impl IntoIterator<Item = (&'a Fixture, [(&'a str, &'a Outcome); 2])>,
    folder: &str,
    at_least: usize,
    check: impl Fn(&str, &Value, &str, &Outcome) -> Vec<String>,
) {
    let mut failures = Vec::new();
    let mut count = 0;
    for (fixture, sides) in added {
        count += 1;
        let key = &fixture.key;
        let doc: Value = serde_json::from_str(&fixture.text).unwrap();
        assert!(doc["description"].is_string(), "{key}: no description");
        for (side, outcome) in sides {
            failures.extend(check(key, &doc, side, outcome));
        }
    }
    assert!(count >= at_least, "too few traces in fixtures/{folder}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
