//! An honest plugin never meets the content rule (docs/sandbox.md, "Only the pods the
//! host handed"): the traces the fuzzer's honest runs replay (fixed seeds, statuses
//! with conditions, containers, restarts, readiness and startup changes, terminations,
//! API-server-side changes), replayed behind the reach guard for their node as the agent
//! runs a plugin, through the components of every logic version. (Run with 2,000
//! seeds for v1 and v4 and 1,000 for v2 and v3 when the rule was written, 2026-12-07:
//! the three false refusals found then are the rule's cases of a pod forgotten and
//! handed again, a readiness change of an init container, and a container found by
//! ID; none since.) No write is refused for a claim
//! the host never handed, and nothing faults for one.

use podstatus_fuzz::{GenConfig, generate};
use podstatus_plugins::{PODSTATUS_V2, PODSTATUS_V3, PODSTATUS_V4};
use podstatus_replay::{self as replay, Trace};
use podstatus_runtime::{Plugin, PluginImage};
use podstatus_tests::{load, v1_image};

/// Seeds replayed per logic (`CONTENT_RULE_SEEDS` sets another count).
const SEEDS: u64 = 100;

/// What the rule's refusals and faults say.
const BREACHES: [&str; 3] = ["the status has", "no status the host handed", "not a pod whose status the host handed"];

/// Replays `seeds` generated traces through `image` behind the guard; the status writes
/// that reached the API server.
fn writes_behind_the_guard(image: &PluginImage, logic: &str, seeds: u64) -> usize {
    let mut written = 0;
    for seed in 0..seeds {
        let trace = Trace { guard_node: Some("node-1".into()), ..generate(seed, &GenConfig::default()) };
        let outcome = replay::run(&trace, &|world| image.instantiate(world).map(|p| Box::new(p) as Box<dyn Plugin>))
            .unwrap_or_else(|e| panic!("{logic}, seed {seed}: {e}"));
        let report = outcome.report;
        if let Some(fault) = &report.fault {
            if std::env::var_os("CONTENT_RULE_DUMP").is_some() {
                std::fs::write(format!("/tmp/content-{logic}-{seed}.trace.json"), trace.to_value().to_string())
                    .unwrap();
            }
            let breach = BREACHES.iter().any(|rule| fault.message.contains(rule));
            assert!(!breach, "{logic}, seed {seed}: an honest plugin faulted on the rule: {}", fault.message);
        }
        for call in &report.calls {
            let refused = call.refused.as_deref().unwrap_or("");
            assert!(!refused.contains("the status has"), "{logic}, seed {seed}, step {}: {refused}", call.step);
        }
        written += report.calls.iter().filter(|c| matches!(c.verb, "update" | "patch") && c.outcome == "ok").count();
    }
    written
}

#[test]
fn honest_plugins_claim_only_what_the_host_handed() {
    let seeds = std::env::var("CONTENT_RULE_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(SEEDS);
    let v1 = writes_behind_the_guard(v1_image(), "v1", seeds);
    for (logic, bytes) in [("v2", PODSTATUS_V2), ("v3", PODSTATUS_V3), ("v4", PODSTATUS_V4)] {
        let written = writes_behind_the_guard(&load(bytes), logic, seeds);
        assert!(written > seeds as usize, "status writes of {logic} held to the rule: {written}");
    }
    assert!(v1 > seeds as usize, "status writes of v1 held to the rule: {v1}");
}
