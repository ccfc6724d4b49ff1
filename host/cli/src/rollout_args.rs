//! The options of a canary rollout that `podstatus simulate` and `podstatus fleet`
//! share: its thresholds and its minimum of samples (each command has its own watch
//! and its own way to start a canary).

use std::time::Duration;

use podstatus_agent::rollout::RolloutPolicy;

/// How a canary is judged against the other nodes (see docs/fleet.md).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Canary rollout")]
pub struct RolloutArgs {
    /// Roll back when the canary's propagation p99 is this many times the other
    /// nodes'...
    #[arg(long, value_name = "FACTOR", default_value_t = 2.0, value_parser = factor)]
    pub canary_max_p99_ratio: f64,
    /// ...and above theirs by more than this (at a few milliseconds a ratio alone
    /// judges noise).
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = crate::input::duration)]
    pub canary_p99_margin: Duration,
    /// Roll back when the canary makes this many times the other nodes' API calls per
    /// status version.
    #[arg(long, value_name = "FACTOR", default_value_t = 1.5, value_parser = factor)]
    pub canary_max_calls_ratio: f64,
    /// Roll back when the canary faults on this share of its updates more than the
    /// other nodes do.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.01, value_parser = fraction)]
    pub canary_max_fault_rate: f64,
    /// Roll back when the canary's plugin time per update is this many times the other
    /// nodes'.
    #[arg(long, value_name = "FACTOR", default_value_t = 2.0, value_parser = factor)]
    pub canary_max_slowdown: f64,
    /// Judge a criterion only when the canary and the other nodes each have this many
    /// samples of it (status writes, versions, updates) since the canary started; at
    /// least 1.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub canary_min_samples: u64,
}

impl RolloutArgs {
    /// The policy these options describe, watching for `watch`, deciding by itself
    /// when `automatic`.
    pub fn policy(&self, watch: Duration, automatic: bool) -> RolloutPolicy {
        RolloutPolicy {
            watch,
            automatic,
            min_samples: self.canary_min_samples,
            max_p99_ratio: self.canary_max_p99_ratio,
            p99_margin: self.canary_p99_margin,
            max_calls_per_version_ratio: self.canary_max_calls_ratio,
            max_fault_rate: self.canary_max_fault_rate,
            max_slowdown: self.canary_max_slowdown,
        }
    }
}

/// A factor of 1 or more (a finite number).
fn factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(factor) if factor.is_finite() && factor >= 1.0 => Ok(factor),
        _ => Err(format!("{text:?} is not a factor of 1 or more")),
    }
}

use crate::input::fraction;

/// A share of the nodes: `10%` or `0.1`, above 0 and below 1.
pub fn canary_share(text: &str) -> Result<f64, String> {
    podstatus_agent::rollout::parse_share(text)
        .ok_or_else(|| format!("{text:?} is not a share of the nodes above 0 and below 100%"))
}
