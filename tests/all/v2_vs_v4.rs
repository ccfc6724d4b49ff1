//! Logic v2 (Kubernetes 1.27) and logic v4 (1.35, writing as v3 does) replay the
//! `replay-v4/` traces, one per behaviour v4 adds (docs/logic-versions.md, "Logic v4"):
//! each trace's `expect_v2` and `expect_v4` blocks must match what the two components
//! report.

use podstatus_plugins::PODSTATUS_V4;
use podstatus_runtime::PluginImage;
use podstatus_tests::version_fixtures::{
    assert_no_fault_and_only_uid_guarded_patches, check_added_traces, expectation_failure, replay_report,
    trace_fixtures,
};
use podstatus_tests::{load, v2_image};
use std::sync::OnceLock;

/// The v4 plugin (logic v4 on contract `kubelet:status@0.2.1`), compiled once.
fn v4_image() -> &'static PluginImage {
    static IMAGE: OnceLock<PluginImage> = OnceLock::new();
    IMAGE.get_or_init(|| load(PODSTATUS_V4))
}

#[test]
fn every_v4_trace_shows_what_it_claims_under_v2_and_v4() {
    let runs: Vec<_> = trace_fixtures(&[("replay-v4", "replay-v4/")])
        .into_iter()
        .map(|fixture| {
            let (v2, v4) = (replay_report(v2_image(), &fixture), replay_report(v4_image(), &fixture));
            (fixture, v2, v4)
        })
        .collect();
    for (fixture, _, v4) in &runs {
        assert_no_fault_and_only_uid_guarded_patches("v4", fixture, v4);
    }
    let added = runs.iter().map(|(fixture, v2, v4)| (fixture, [("v2", v2), ("v4", v4)]));
    check_added_traces(added, "replay-v4", 3, |key, doc, side, outcome| match doc.get(format!("expect_{side}")) {
        None => vec![format!("{key}: no expect_{side} block")],
        Some(expected) => expectation_failure(key, side, expected, outcome).into_iter().collect(),
    });
}
