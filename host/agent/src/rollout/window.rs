//! A `PluginRollout`'s numbers as the rollout judges them: a window of a set of nodes'
//! tallies carried between processes ([`window_of`], [`snapshot_of`]: the propagation
//! histogram by its buckets, so that the leader adds shards' windows up exactly as one
//! process adds its nodes'), and the policy its spec describes ([`policy_of`]).

use std::time::Duration;

use podstatus_rollout_api::{PluginRolloutSpec, Window, parse_go_duration};

use super::verdict::RolloutPolicy;
use crate::metrics::{GroupSnapshot, LatencyHistogram};

/// `snapshot` as a shard reports it.
pub fn window_of(snapshot: &GroupSnapshot) -> Window {
    Window {
        updates: snapshot.updates,
        versions: snapshot.versions,
        faults: snapshot.faults,
        recoveries: snapshot.recoveries,
        api_calls: snapshot.api_calls,
        plugin_micros: u64::try_from(snapshot.plugin_time.as_micros()).unwrap_or(u64::MAX),
        propagation: snapshot.propagation.buckets(),
    }
}

/// The tallies a shard's `window` reports.
pub fn snapshot_of(window: &Window) -> GroupSnapshot {
    GroupSnapshot {
        updates: window.updates,
        versions: window.versions,
        faults: window.faults,
        recoveries: window.recoveries,
        api_calls: window.api_calls,
        plugin_time: Duration::from_micros(window.plugin_micros),
        propagation: LatencyHistogram::from_buckets(&window.propagation),
    }
}

/// The policy `spec` describes: its watch and thresholds, `podstatus fleet`'s defaults
/// where it says nothing (a spec that passed validation parses).
pub fn policy_of(spec: &PluginRolloutSpec) -> RolloutPolicy {
    let defaults = RolloutPolicy::default();
    let duration =
        |text: &Option<String>, default| text.as_deref().and_then(|t| parse_go_duration(t).ok()).unwrap_or(default);
    let criteria = &spec.criteria;
    RolloutPolicy {
        watch: duration(&spec.watch, defaults.watch),
        automatic: !spec.manual,
        min_samples: criteria.min_samples.unwrap_or(defaults.min_samples),
        max_p99_ratio: criteria.max_p99_ratio.unwrap_or(defaults.max_p99_ratio),
        p99_margin: duration(&criteria.p99_margin, defaults.p99_margin),
        max_calls_per_version_ratio: criteria
            .max_calls_per_version_ratio
            .unwrap_or(defaults.max_calls_per_version_ratio),
        max_fault_rate: criteria.max_fault_rate.unwrap_or(defaults.max_fault_rate),
        max_slowdown: criteria.max_slowdown.unwrap_or(defaults.max_slowdown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_round_trips_and_windows_add_up() {
        let mut propagation = LatencyHistogram::new();
        for ms in [3, 5, 8, 200] {
            propagation.record(Duration::from_millis(ms));
        }
        let snapshot = GroupSnapshot {
            updates: 40,
            versions: 20,
            faults: 1,
            recoveries: 1,
            api_calls: 41,
            plugin_time: Duration::from_micros(1234),
            propagation,
        };
        let back = snapshot_of(&serde_json::from_value(serde_json::to_value(window_of(&snapshot)).unwrap()).unwrap());
        assert_eq!((back.updates, back.versions, back.api_calls), (40, 20, 41));
        assert_eq!(back.plugin_time, Duration::from_micros(1234));
        // The buckets cross exactly; the largest latency crosses as its bucket's top (the
        // exact one stays with the shard), so a quantile can rise by the histogram's
        // resolution (three significant digits) and no more.
        assert_eq!(back.propagation.buckets(), snapshot.propagation.buckets());
        let (p99, sent) = (back.propagation.summary().p99, snapshot.propagation.summary().p99);
        assert!(p99 >= sent && p99 - sent <= sent / 1000, "p99 {p99:?} after crossing, {sent:?} before");
        let mut two = back.clone();
        two.add(&back);
        assert_eq!((two.updates, two.propagation.count()), (80, 8));
    }

    #[test]
    fn the_spec_gives_the_policy_and_the_rest_is_the_fleets_default() {
        let spec: PluginRolloutSpec = serde_json::from_value(serde_json::json!({
            "fleet": "f", "plugin": {"sha256": "0".repeat(64), "file": "/p.wasm"}, "canary": "10%",
            "watch": "5s", "manual": true, "criteria": {"maxCallsPerVersionRatio": 1.2, "minSamples": 3, "p99Margin": "10ms"}
        }))
        .unwrap();
        let policy = policy_of(&spec);
        assert_eq!((policy.watch, policy.automatic, policy.min_samples), (Duration::from_secs(5), false, 3));
        assert_eq!((policy.max_calls_per_version_ratio, policy.p99_margin), (1.2, Duration::from_millis(10)));
        assert_eq!(policy.max_p99_ratio, RolloutPolicy::default().max_p99_ratio);
    }
}
