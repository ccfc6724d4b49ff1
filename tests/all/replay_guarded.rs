//! Every trace under `fixtures/replay-guarded/` replayed with the agent's reach guard
//! for node `node-1` (`podstatus replay --node node-1`): its report must equal the stored
//! `.report.json` byte for byte (`PODSTATUS_BLESS=1` rewrites them) and satisfy the
//! trace's `expect` block. Traces named `prober-*` run the prober (its probe chosen by
//! the pods' `podstatus.test/probe` annotation), the others the real v1 component.
//!
//! Each refusal is recorded with `outcome: "error"` and the guard's reason in
//! `refused`; and since the same trace without the guard lets the prober's forbidden
//! call through, the guard is what stopped it.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use podstatus_runtime::PluginImage;
use podstatus_test_programs::PROBER;
use podstatus_tests::{
    fixture_failures, fixture_traces, load, replay_component_guarded, replay_component_with, v1_image,
};

/// The node the fixtures' pods are bound to.
const NODE: &str = "node-1";

fn prober() -> &'static PluginImage {
    static IMAGE: OnceLock<PluginImage> = OnceLock::new();
    IMAGE.get_or_init(|| load(PROBER))
}

fn traces() -> Vec<PathBuf> {
    fixture_traces("replay-guarded")
}

fn image_for(trace: &Path) -> &'static PluginImage {
    if trace.file_name().is_some_and(|name| name.to_string_lossy().starts_with("prober-")) {
        prober()
    } else {
        v1_image()
    }
}

#[test]
fn every_guarded_fixture_matches_its_report_and_expectations() {
    let traces = traces();
    assert!(traces.len() >= 5, "fixtures missing");
    let failures = fixture_failures(&traces, |trace, text| {
        replay_component_guarded(image_for(trace), text, trace.parent().unwrap(), NODE)
    });
    assert!(failures.is_empty(), "{} of {} fixtures failed:\n{}", failures.len(), traces.len(), failures.join("\n"));
}

#[test]
fn without_the_guard_the_probers_forbidden_calls_reach_the_api_server() {
    for trace in traces().iter().filter(|t| t.is_file()) {
        let name = trace.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("prober-") {
            continue;
        }
        let text = fs::read_to_string(trace).unwrap();
        let guarded = replay_component_guarded(prober(), &text, trace.parent().unwrap(), NODE).unwrap();
        let open = replay_component_with(prober(), &text, trace.parent().unwrap()).unwrap();
        assert!(open.report.calls.iter().all(|call| call.refused.is_none()), "{name}: no guard, no refusal");
        if name.contains("stale-name") {
            // A write without a UID precondition is pinned to the handed pod by the
            // plugin's runtime on every path (issue 47), guard or not: it fails its
            // precondition either way.
            assert!(open.report.calls.iter().all(|call| call.outcome != "ok"), "{name}: {:?}", open.report.calls);
            continue;
        }
        // A call the guard stopped (refused, or pinned so that it failed) went through
        // without it.
        let stopped = guarded.report.calls.iter().zip(&open.report.calls).any(|(guarded, open)| {
            (guarded.step, guarded.verb) == (open.step, open.verb) && guarded.outcome != "ok" && open.outcome == "ok"
        });
        assert!(stopped, "{name}: the guard stopped nothing\n{:?}\n{:?}", guarded.report.calls, open.report.calls);
    }
}
