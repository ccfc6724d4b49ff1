//! Every trace under `fixtures/replay/` run through the real component: its report must
//! equal the stored `.report.json` byte for byte (set `PODSTATUS_BLESS=1` to rewrite
//! them after a deliberate change, then review the diff), and satisfy the trace's own
//! `expect` block, written by hand from the upstream test the trace reproduces.

use std::fs;
use std::path::PathBuf;

use podstatus_tests::{
    check_fixture_report, fixture_failures, fixture_traces, fixtures_dir, render, replay_component, replay_native,
};

fn traces() -> Vec<PathBuf> {
    fixture_traces("replay")
}

#[test]
fn every_fixture_matches_its_report_and_expectations() {
    let traces = traces();
    assert!(!traces.is_empty(), "no fixtures found");
    let failures = fixture_failures(&traces, |trace, text| replay_component(text, trace.parent().unwrap()));
    assert!(failures.is_empty(), "{} of {} fixtures failed:\n{}", failures.len(), traces.len(), failures.join("\n"));
}

#[test]
fn the_component_and_the_native_logic_agree_on_every_fixture() {
    for trace in traces() {
        let text = fs::read_to_string(&trace).unwrap();
        let component = replay_component(&text, trace.parent().unwrap()).unwrap();
        let native = replay_native(&text, trace.parent().unwrap()).unwrap();
        assert_eq!(render(&component), render(&native), "{}", trace.display());
    }
}

#[test]
fn replaying_twice_gives_identical_bytes() {
    for trace in traces() {
        let text = fs::read_to_string(&trace).unwrap();
        let first = render(&replay_component(&text, trace.parent().unwrap()).unwrap());
        let second = render(&replay_component(&text, trace.parent().unwrap()).unwrap());
        assert_eq!(first, second, "{}", trace.display());
    }
}

/// The traces of `fixtures/replay-interleaved/`: interleavings scripted with
/// `hold-api`, `complete-api` and `release-api`, run through the 0.2.0 plugin of the
/// logic version their name starts with.
#[test]
fn every_interleaved_fixture_matches_its_report_and_0_1_plugins_refuse_it() {
    let dir = fixtures_dir().join("replay-interleaved");
    let mut traces: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("fixtures/replay-interleaved exists")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".trace.json"))
        .collect();
    traces.sort();
    assert!(!traces.is_empty(), "no interleaved fixtures");
    let mut failures = Vec::new();
    for trace in &traces {
        let name = trace.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(trace).unwrap();
        let (image, legacy) = if name.starts_with("v2-") {
            (podstatus_tests::v2_image(), podstatus_plugins::PODSTATUS_V2_ON_0_1)
        } else {
            (podstatus_tests::v1_image(), podstatus_plugins::PODSTATUS_V1_ON_0_1)
        };
        match podstatus_tests::replay_component_with(image, &text, &dir) {
            Ok(outcome) => failures.extend(check_fixture_report(trace, &text, &render(&outcome))),
            Err(e) => failures.push(format!("{name}: unusable trace: {e}")),
        }
        let refused = podstatus_tests::replay_component_with(&podstatus_tests::load(legacy), &text, &dir);
        match refused {
            Err(e) => assert!(e.to_string().contains("hold-api"), "{name}: {e}"),
            Ok(_) => failures.push(format!("{name}: a 0.1.x plugin ran a trace that holds calls")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
