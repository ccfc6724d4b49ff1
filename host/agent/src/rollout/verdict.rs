//! How a canary is judged against the rest of the fleet ([`judge`]): the four criteria
//! of [`RolloutPolicy`], each with its threshold and a minimum of samples on both sides.
//!
//! | criterion | the canary is worse when |
//! |---|---|
//! | propagation p99 | above the rest's × `max_p99_ratio` and above the rest's + `p99_margin` |
//! | API calls per status version | above the rest's × `max_calls_per_version_ratio` |
//! | faults per update | above the rest's + `max_fault_rate` |
//! | plugin time per update | above the rest's × `max_slowdown` |
//!
//! A criterion is judged only when the canary and the rest each have at least
//! `min_samples` of what it divides by (propagation samples, status versions, updates),
//! and the rest's figure is above zero for a ratio: fewer would judge noise. Pure
//! arithmetic over two [`GroupSnapshot`]s, so every case is a unit test.

use std::time::Duration;

use serde::Serialize;

use crate::metrics::GroupSnapshot;

/// How a canary is watched and judged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RolloutPolicy {
    /// How long the canary runs before the rollout decides by itself.
    #[serde(rename = "watch_seconds", serialize_with = "seconds")]
    pub watch: Duration,
    /// Whether the rollout decides by itself; without, only an operator does.
    pub automatic: bool,
    /// Samples the canary and the rest each need for a criterion to be judged.
    pub min_samples: u64,
    /// The canary's propagation p99 may be this many times the rest's...
    pub max_p99_ratio: f64,
    /// ...or exceed it by this much, whichever is more: at a few milliseconds, a ratio
    /// alone judges noise.
    #[serde(rename = "p99_margin_ms", serialize_with = "milliseconds")]
    pub p99_margin: Duration,
    /// The canary's API calls per status version may be this many times the rest's.
    pub max_calls_per_version_ratio: f64,
    /// The canary may fault on this share of its updates more than the rest does.
    pub max_fault_rate: f64,
    /// The canary's plugin time per update may be this many times the rest's.
    pub max_slowdown: f64,
}

impl Default for RolloutPolicy {
    fn default() -> Self {
        RolloutPolicy {
            watch: Duration::from_secs(60),
            automatic: true,
            min_samples: 20,
            max_p99_ratio: 2.0,
            p99_margin: Duration::from_millis(50),
            max_calls_per_version_ratio: 1.5,
            max_fault_rate: 0.01,
            max_slowdown: 2.0,
        }
    }
}

/// A set of nodes' figures over a window, as the rollout compares them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Status updates handed to the plugin.
    pub updates: u64,
    /// Of them, new status versions.
    pub versions: u64,
    /// Plugin calls that faulted.
    pub faults: u64,
    /// Instances the supervisor restored.
    pub recoveries: u64,
    /// API calls the plugins made.
    pub api_calls: u64,
    /// Statuses written, timed from their first unwritten change.
    pub propagation_samples: u64,
    /// The 99th percentile of those, in milliseconds.
    pub propagation_p99_ms: f64,
    /// API calls per status version.
    pub api_calls_per_version: f64,
    /// Faults per update.
    pub faults_per_update: f64,
    /// Time in plugin calls per update, in microseconds.
    pub plugin_us_per_update: f64,
}

impl Figures {
    /// The figures of `snapshot`.
    pub fn of(snapshot: &GroupSnapshot) -> Figures {
        let per = |n: f64, d: u64| if d == 0 { 0.0 } else { n / d as f64 };
        Figures {
            updates: snapshot.updates,
            versions: snapshot.versions,
            faults: snapshot.faults,
            recoveries: snapshot.recoveries,
            api_calls: snapshot.api_calls,
            propagation_samples: snapshot.propagation.count(),
            propagation_p99_ms: snapshot.propagation.summary().p99.as_secs_f64() * 1000.0,
            api_calls_per_version: per(snapshot.api_calls as f64, snapshot.versions),
            faults_per_update: per(snapshot.faults as f64, snapshot.updates),
            plugin_us_per_update: per(snapshot.plugin_time.as_secs_f64() * 1e6, snapshot.updates),
        }
    }
}

/// One criterion of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Criterion {
    /// Which (`propagation_p99_ms`, `api_calls_per_version`, `faults_per_update`,
    /// `plugin_us_per_update`).
    pub name: &'static str,
    /// The canary's figure.
    pub canary: f64,
    /// The rest's.
    pub rest: f64,
    /// The canary is worse above this.
    pub limit: f64,
    /// Whether both sides had samples enough for it to count.
    pub judged: bool,
    /// Judged, and the canary above the limit.
    pub worse: bool,
    /// The fewer of the two sides' samples (what `judged` is decided by).
    pub samples: u64,
}

/// The comparison of a canary with the rest.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Verdict {
    /// The canary's figures over the window.
    pub canary: Figures,
    /// The rest's, over the same window.
    pub rest: Figures,
    /// Each criterion.
    pub criteria: Vec<Criterion>,
}

impl Verdict {
    /// The first criterion the canary is worse by, if any.
    pub fn worse(&self) -> Option<&Criterion> {
        self.criteria.iter().find(|c| c.worse)
    }

    /// Whether any criterion had samples enough to count.
    pub fn judged(&self) -> bool {
        self.criteria.iter().any(|c| c.judged)
    }

    /// One line: what made it worse, or what was within the thresholds.
    pub fn reason(&self) -> String {
        if let Some(c) = self.worse() {
            return format!("{} {:.3} against {:.3} (limit {:.3})", c.name, c.canary, c.rest, c.limit);
        }
        let judged: Vec<&str> = self.criteria.iter().filter(|c| c.judged).map(|c| c.name).collect();
        let unjudged: Vec<&str> = self.criteria.iter().filter(|c| !c.judged).map(|c| c.name).collect();
        match (judged.is_empty(), unjudged.is_empty()) {
            (true, _) => "too few samples to judge any criterion".to_owned(),
            (false, true) => format!("within the thresholds ({})", judged.join(", ")),
            (false, false) => {
                format!("within the thresholds ({}; too few samples for {})", judged.join(", "), unjudged.join(", "))
            }
        }
    }
}

/// Compares `canary` with `rest` (each over the same window) by `policy`'s criteria;
/// see the module documentation.
pub fn judge(canary: &GroupSnapshot, rest: &GroupSnapshot, policy: &RolloutPolicy) -> Verdict {
    let (c, r) = (Figures::of(canary), Figures::of(rest));
    let enough = |a: u64, b: u64| (a.min(b), a >= policy.min_samples && b >= policy.min_samples);
    let margin_ms = policy.p99_margin.as_secs_f64() * 1000.0;
    let mut criteria = Vec::with_capacity(4);
    let mut add = |name, canary: f64, rest: f64, limit: f64, (samples, judged): (u64, bool)| {
        criteria.push(Criterion { name, canary, rest, limit, judged, worse: judged && canary > limit, samples });
    };
    add(
        "propagation_p99_ms",
        c.propagation_p99_ms,
        r.propagation_p99_ms,
        (r.propagation_p99_ms * policy.max_p99_ratio).max(r.propagation_p99_ms + margin_ms),
        enough(c.propagation_samples, r.propagation_samples),
    );
    let (samples, judged) = enough(c.versions, r.versions);
    add(
        "api_calls_per_version",
        c.api_calls_per_version,
        r.api_calls_per_version,
        r.api_calls_per_version * policy.max_calls_per_version_ratio,
        (samples, judged && r.api_calls_per_version > 0.0),
    );
    add(
        "faults_per_update",
        c.faults_per_update,
        r.faults_per_update,
        r.faults_per_update + policy.max_fault_rate,
        enough(c.updates, r.updates),
    );
    let (samples, judged) = enough(c.updates, r.updates);
    add(
        "plugin_us_per_update",
        c.plugin_us_per_update,
        r.plugin_us_per_update,
        r.plugin_us_per_update * policy.max_slowdown,
        (samples, judged && r.plugin_us_per_update > 0.0),
    );
    Verdict { canary: c, rest: r, criteria }
}

fn seconds<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

fn milliseconds<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::LatencyHistogram;

    /// A window of `updates` updates, `versions` versions, `calls` API calls, `faults`
    /// faults, `us` µs of plugin time per update and `samples` propagation samples of
    /// `ms` each.
    fn window(updates: u64, versions: u64, calls: u64, faults: u64, us: u64, samples: u64, ms: u64) -> GroupSnapshot {
        let mut propagation = LatencyHistogram::new();
        for _ in 0..samples {
            propagation.record(Duration::from_millis(ms));
        }
        GroupSnapshot {
            updates,
            versions,
            faults,
            recoveries: faults,
            api_calls: calls,
            plugin_time: Duration::from_micros(us * updates),
            propagation,
        }
    }

    fn policy() -> RolloutPolicy {
        RolloutPolicy { min_samples: 20, ..RolloutPolicy::default() }
    }

    fn criterion<'v>(verdict: &'v Verdict, name: &str) -> &'v Criterion {
        verdict.criteria.iter().find(|c| c.name == name).expect(name)
    }

    #[test]
    fn a_canary_like_the_rest_is_within_every_threshold() {
        let rest = window(1000, 500, 1000, 0, 40, 500, 5);
        let canary = window(100, 50, 100, 0, 45, 50, 6);
        let verdict = judge(&canary, &rest, &policy());
        assert!(verdict.criteria.iter().all(|c| c.judged && !c.worse), "{verdict:#?}");
        assert_eq!(verdict.worse(), None);
        assert!(verdict.reason().starts_with("within the thresholds"), "{}", verdict.reason());
        assert_eq!(verdict.canary.api_calls_per_version, 2.0);
        assert_eq!(verdict.canary.plugin_us_per_update, 45.0);
    }

    #[test]
    fn each_criterion_alone_rolls_a_canary_back() {
        let rest = window(1000, 500, 1000, 0, 40, 500, 100);
        let cases = [
            ("propagation_p99_ms", window(100, 50, 100, 0, 40, 50, 400)),
            ("api_calls_per_version", window(100, 50, 200, 0, 40, 50, 100)),
            ("faults_per_update", window(100, 50, 100, 5, 40, 50, 100)),
            ("plugin_us_per_update", window(100, 50, 100, 0, 200, 50, 100)),
        ];
        for (name, canary) in cases {
            let verdict = judge(&canary, &rest, &policy());
            let worse = verdict.worse().unwrap_or_else(|| panic!("{name}: {verdict:#?}"));
            assert_eq!(worse.name, name, "{verdict:#?}");
            assert_eq!(verdict.criteria.iter().filter(|c| c.worse).count(), 1, "{name} alone: {verdict:#?}");
            assert!(verdict.reason().starts_with(name), "{}", verdict.reason());
        }
    }

    #[test]
    fn latency_needs_both_the_ratio_and_the_margin() {
        // 3 ms against 1 ms is three times as slow, but within 50 ms: noise at this scale.
        let verdict = judge(&window(100, 50, 100, 0, 40, 50, 3), &window(1000, 500, 1000, 0, 40, 500, 1), &policy());
        let p99 = criterion(&verdict, "propagation_p99_ms");
        assert!(p99.judged && !p99.worse, "{p99:?}");
        assert!((p99.limit - (p99.rest + 50.0)).abs() < 1e-9, "{p99:?}");
        // 900 ms against 400 ms is more than 50 ms more but not twice as slow.
        let verdict =
            judge(&window(100, 50, 100, 0, 40, 50, 700), &window(1000, 500, 1000, 0, 40, 500, 400), &policy());
        assert!(!criterion(&verdict, "propagation_p99_ms").worse, "{verdict:#?}");
    }

    #[test]
    fn too_few_samples_are_not_judged() {
        let rest = window(1000, 500, 1000, 0, 40, 500, 5);
        // 19 updates, 19 versions and 19 writes: one short of the minimum for each, so
        // a canary that faulted on every update and is ten times as slow is not judged.
        let canary = window(19, 19, 95, 19, 400, 19, 900);
        let verdict = judge(&canary, &rest, &policy());
        assert!(verdict.criteria.iter().all(|c| !c.judged && !c.worse), "{verdict:#?}");
        assert!(!verdict.judged());
        assert_eq!(verdict.reason(), "too few samples to judge any criterion");
        assert_eq!(criterion(&verdict, "faults_per_update").samples, 19);
        // One more of each and every criterion counts.
        let canary = window(20, 20, 100, 20, 400, 20, 900);
        let verdict = judge(&canary, &rest, &policy());
        assert!(verdict.criteria.iter().all(|c| c.judged && c.worse), "{verdict:#?}");
        // The rest needs samples too.
        let verdict = judge(&window(100, 50, 100, 0, 40, 50, 6), &window(5, 5, 5, 0, 40, 5, 5), &policy());
        assert!(!verdict.judged(), "{verdict:#?}");
    }

    #[test]
    fn some_criteria_judged_and_none_worse_promote_and_say_what_was_not_judged() {
        // Updates enough, but no status written yet: latency and calls are not judged.
        let canary = window(100, 10, 0, 0, 40, 0, 0);
        let rest = window(1000, 100, 0, 0, 40, 0, 0);
        let verdict = judge(&canary, &rest, &policy());
        assert!(verdict.judged() && verdict.worse().is_none(), "{verdict:#?}");
        assert!(!criterion(&verdict, "api_calls_per_version").judged, "the rest made no call: no ratio");
        let reason = verdict.reason();
        assert!(reason.contains("too few samples for propagation_p99_ms, api_calls_per_version"), "{reason}");
    }

    #[test]
    fn a_rest_that_never_faults_still_leaves_the_fault_rate_its_margin() {
        let rest = window(1000, 500, 1000, 0, 40, 500, 5);
        let one_in_200 = judge(&window(200, 100, 200, 1, 40, 100, 5), &rest, &policy());
        assert!(!criterion(&one_in_200, "faults_per_update").worse, "0.005 is within 0.01");
        let one_in_50 = judge(&window(200, 100, 200, 4, 40, 100, 5), &rest, &policy());
        assert!(criterion(&one_in_50, "faults_per_update").worse, "0.02 is not");
    }

    #[test]
    fn the_policy_serialises_in_seconds_and_milliseconds() {
        let json = serde_json::to_value(RolloutPolicy::default()).expect("serialises");
        assert_eq!(json["watch_seconds"], 60.0);
        assert_eq!(json["p99_margin_ms"], 50.0);
        assert_eq!(json["min_samples"], 20);
    }
}
