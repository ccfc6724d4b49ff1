//! What a `PluginRollout` must be before anyone stores or acts on it, field by field, as
//! a CRD's schema and a validating webhook would say it: the embedded API server
//! answers a write that fails this with 422 `Invalid` and a cause per field, and a
//! shard refuses a rollout that fails it (a real cluster's CRD schema checks the
//! shapes; this checks the meaning too).

use crate::go_duration;
use crate::types::{PluginRollout, RolloutPhase};

/// The most shard reports a status holds (a fleet has at most 1,000 shards).
pub const MAX_SHARD_REPORTS: usize = 1000;
/// The most propagation buckets one window carries (a window's samples at three
/// significant digits fill a few hundred).
pub const MAX_HISTOGRAM_BUCKETS: usize = 4096;

/// One field that is not what it must be.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    /// The field's path (`spec.plugin.sha256`).
    pub field: String,
    /// Why.
    pub message: String,
}

/// `10%` or `0.1` as a share above 0 and below 1; `None` otherwise.
pub fn parse_share(text: &str) -> Option<f64> {
    let share = match text.trim().strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().ok()? / 100.0,
        None => text.trim().parse::<f64>().ok()?,
    };
    (share > 0.0 && share < 1.0).then_some(share)
}

/// Every field of `rollout` that is not what it must be (empty: valid).
pub fn validate(rollout: &PluginRollout) -> Vec<Invalid> {
    let mut invalid = Vec::new();
    let mut bad = |field: &str, message: &str| invalid.push(Invalid { field: field.into(), message: message.into() });
    let spec = &rollout.spec;
    if spec.fleet.is_empty() || spec.fleet.len() > 253 || !spec.fleet.bytes().all(dns_byte) {
        bad("spec.fleet", "the fleet's node name prefix: 1 to 253 lower case letters, digits, '-' or '.'");
    }
    let plugin = &spec.plugin;
    if plugin.sha256.len() != 64 || !plugin.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        bad("spec.plugin.sha256", "64 lower case hex digits: the SHA-256 of the plugin's bytes");
    }
    match (&plugin.file, &plugin.url) {
        (Some(_), Some(_)) | (None, None) => bad("spec.plugin", "exactly one of file and url"),
        (Some(file), None) if !file.starts_with('/') || file.len() > 4096 => {
            bad("spec.plugin.file", "an absolute path of at most 4096 bytes")
        }
        (None, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() > 2048 => {
            bad("spec.plugin.url", "an http:// or https:// URL of at most 2048 bytes")
        }
        _ => {}
    }
    if let Some(name) = &plugin.name
        && (name.is_empty()
            || name.len() > 63
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)))
    {
        bad("spec.plugin.name", "1 to 63 letters, digits, '-', '_' or '.' (a metrics label value)");
    }
    if parse_share(&spec.canary).is_none() {
        bad("spec.canary", "a share of the nodes above 0 and below 100%: \"10%\" or \"0.1\"");
    }
    if let Some(watch) = &spec.watch
        && go_duration::parse(watch).is_err()
    {
        bad("spec.watch", "a duration: 60s, 2m, 1m30s");
    }
    if let Some(decision) = &spec.decision
        && !matches!(decision.as_str(), "Promote" | "RollBack")
    {
        bad("spec.decision", "Promote or RollBack");
    }
    let criteria = &spec.criteria;
    for (field, ratio) in [
        ("spec.criteria.maxP99Ratio", criteria.max_p99_ratio),
        ("spec.criteria.maxCallsPerVersionRatio", criteria.max_calls_per_version_ratio),
        ("spec.criteria.maxSlowdown", criteria.max_slowdown),
    ] {
        if ratio.is_some_and(|r| !(r.is_finite() && r >= 1.0)) {
            bad(field, "a factor of 1 or more");
        }
    }
    if criteria.max_fault_rate.is_some_and(|r| !(0.0..=1.0).contains(&r)) {
        bad("spec.criteria.maxFaultRate", "a fraction from 0 to 1");
    }
    if criteria.min_samples == Some(0) {
        bad("spec.criteria.minSamples", "at least 1");
    }
    if let Some(margin) = &criteria.p99_margin
        && go_duration::parse(margin).is_err()
    {
        bad("spec.criteria.p99Margin", "a duration: 50ms");
    }
    if let Some(status) = &rollout.status {
        if status.shards.len() > MAX_SHARD_REPORTS {
            bad("status.shards", "at most 1000 shard reports");
        }
        let windows = status.shards.iter().flat_map(|s| [&s.canary, &s.rest]).flatten();
        if windows.clone().any(|w| w.propagation.len() > MAX_HISTOGRAM_BUCKETS) {
            bad("status.shards.propagation", "at most 4096 buckets");
        }
        if let Some(decision) = &status.decision
            && decision.outcome.is_none_or(|outcome| outcome == RolloutPhase::Canary)
        {
            bad("status.decision.outcome", "Promoted, RolledBack or Refused");
        }
    }
    invalid
}

/// Why `rollout` is refused when it breaks a rule of [`validate`] (every field, in one
/// line: `invalid: spec.canary: …; spec.watch: …`); None when it is valid. What the
/// leader and the shards say of a rollout a cluster's CRD schema let through.
pub fn refusal(rollout: &PluginRollout) -> Option<String> {
    let invalid = validate(rollout);
    (!invalid.is_empty())
        .then(|| format!("invalid: {}", invalid.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")))
}

/// A byte of a DNS-1123 subdomain.
fn dns_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{PluginRolloutSpec, PluginSource};

    fn rollout() -> PluginRollout {
        PluginRollout {
            spec: PluginRolloutSpec {
                fleet: "podstatus-fleet".into(),
                plugin: PluginSource {
                    sha256: "a".repeat(64),
                    name: Some("podstatus-v3".into()),
                    file: Some("/plugins/v3.wasm".into()),
                    url: None,
                },
                canary: "10%".into(),
                watch: Some("1m".into()),
                ..PluginRolloutSpec::default()
            },
            ..PluginRollout::default()
        }
    }

    #[test]
    fn a_whole_rollout_is_valid() {
        assert_eq!(validate(&rollout()), []);
        let from_yaml_like: PluginRollout = serde_json::from_value(serde_json::json!({
            "apiVersion": "podstatus.io/v1alpha1", "kind": "PluginRollout",
            "metadata": {"name": "v3", "namespace": "podstatus"},
            "spec": {"fleet": "f", "plugin": {"sha256": "0".repeat(64), "url": "https://example.com/v3.wasm"},
                     "canary": "0.25", "criteria": {"maxP99Ratio": 3, "minSamples": 5}, "unknown": 1}
        }))
        .expect("unknown fields are dropped, as a structural schema prunes them");
        assert_eq!(validate(&from_yaml_like), []);
        assert_eq!(from_yaml_like.spec.plugin.label(), "sha256-000000000000");
    }

    #[test]
    fn a_refusal_names_every_broken_field_in_one_line() {
        assert_eq!(refusal(&rollout()), None);
        let mut broken = rollout();
        broken.spec.canary = "150%".into();
        broken.spec.watch = Some("soon".into());
        let reason = refusal(&broken).expect("refused");
        assert!(reason.starts_with("invalid: spec.canary: "), "{reason}");
        assert!(reason.contains("; spec.watch: "), "{reason}");
    }

    #[test]
    fn every_field_says_what_it_must_be() {
        /// A field and how to break it.
        type Case = (&'static str, Box<dyn Fn(&mut PluginRollout)>);
        let cases: Vec<Case> = vec![
            ("spec.fleet", Box::new(|r| r.spec.fleet = "Fleet".into())),
            ("spec.plugin.sha256", Box::new(|r| r.spec.plugin.sha256 = "A".repeat(64))),
            ("spec.plugin.sha256", Box::new(|r| r.spec.plugin.sha256 = "a".repeat(63))),
            ("spec.plugin", Box::new(|r| r.spec.plugin.url = Some("https://x/p.wasm".into()))),
            ("spec.plugin", Box::new(|r| r.spec.plugin.file = None)),
            ("spec.plugin.file", Box::new(|r| r.spec.plugin.file = Some("relative.wasm".into()))),
            ("spec.plugin.name", Box::new(|r| r.spec.plugin.name = Some("a b".into()))),
            ("spec.canary", Box::new(|r| r.spec.canary = "100%".into())),
            ("spec.canary", Box::new(|r| r.spec.canary = "0".into())),
            ("spec.watch", Box::new(|r| r.spec.watch = Some("soon".into()))),
            ("spec.decision", Box::new(|r| r.spec.decision = Some("Maybe".into()))),
            ("spec.criteria.maxP99Ratio", Box::new(|r| r.spec.criteria.max_p99_ratio = Some(0.5))),
            ("spec.criteria.maxFaultRate", Box::new(|r| r.spec.criteria.max_fault_rate = Some(2.0))),
            ("spec.criteria.minSamples", Box::new(|r| r.spec.criteria.min_samples = Some(0))),
            ("spec.criteria.p99Margin", Box::new(|r| r.spec.criteria.p99_margin = Some("-1s".into()))),
        ];
        for (field, break_it) in cases {
            let mut broken = rollout();
            break_it(&mut broken);
            let invalid = validate(&broken);
            assert_eq!(invalid.len(), 1, "{field}: {invalid:?}");
            assert_eq!(invalid[0].field, field, "{invalid:?}");
        }
    }

    #[test]
    fn a_status_is_bounded() {
        use crate::types::{PluginRolloutStatus, ShardReport, Window};
        let mut big = rollout();
        let window = Window { propagation: vec![[1, 1]; MAX_HISTOGRAM_BUCKETS + 1], ..Window::default() };
        big.status = Some(PluginRolloutStatus {
            shards: vec![ShardReport { canary: Some(window), ..ShardReport::default() }],
            ..PluginRolloutStatus::default()
        });
        assert_eq!(validate(&big)[0].field, "status.shards.propagation");
        let many = vec![ShardReport::default(); MAX_SHARD_REPORTS + 1];
        big.status = Some(PluginRolloutStatus { shards: many, ..PluginRolloutStatus::default() });
        assert_eq!(validate(&big)[0].field, "status.shards");
    }
}
