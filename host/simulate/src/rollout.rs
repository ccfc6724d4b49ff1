//! A canary rollout during a simulated fleet's churn (`simulate --canary`): the fleet's
//! `canary` group moves to another plugin at [`CanaryConfig::at`], and the rollout
//! ([`podstatus_agent::Rollout`], the same one `podstatus fleet` runs) compares it with
//! the rest and promotes it or rolls it back by itself after the watch. What it did
//! goes into the summary ([`RolloutSummary`]); the final check proves nothing was lost.

use std::path::PathBuf;
use std::time::Duration;

use crate::summary::RolloutSummary;
use podstatus_agent::rollout::{CanaryPlan, DecidedBy, Decision, Outcome, RolloutPolicy};
use podstatus_agent::{Fleet, Rollout};
use podstatus_runtime::PluginImage;

/// How a canary rollout runs.
#[derive(Clone, Debug)]
pub struct CanaryConfig {
    /// The group of nodes that goes first.
    pub group: String,
    /// The plugin it moves to.
    pub plugin: PathBuf,
    /// How far into the churn the canary moves.
    pub at: Duration,
    /// How it is watched and judged (its watch, thresholds and minimum of samples).
    pub policy: RolloutPolicy,
}

/// A rollout during the churn: when it starts, what it did.
pub(crate) struct SimulatedRollout {
    config: CanaryConfig,
    /// Taken when the canary starts.
    plan: Option<CanaryPlan>,
    canary_nodes: usize,
    rollout: Rollout,
    started_at: Option<Duration>,
    decided_at: Option<Duration>,
    start_error: Option<String>,
}

impl SimulatedRollout {
    /// A rollout of `image` (labelled `logic`) to `canary`'s nodes first.
    pub(crate) fn new(config: CanaryConfig, image: PluginImage, logic: String, canary: Vec<usize>) -> Self {
        let rollout = Rollout::new(config.policy.clone());
        let canary_nodes = canary.len();
        let plan = Some(CanaryPlan { nodes: canary, image, logic });
        SimulatedRollout { config, plan, canary_nodes, rollout, started_at: None, decided_at: None, start_error: None }
    }

    /// Moves the rollout on, `elapsed` into the churn.
    pub(crate) fn tick(&mut self, elapsed: Duration, fleet: &Fleet) {
        if elapsed >= self.config.at
            && let Some(plan) = self.plan.take()
        {
            self.started_at = Some(elapsed);
            if let Err(e) = self.rollout.start(fleet, plan) {
                tracing::error!("the canary did not start: {e}");
                self.start_error = Some(e.to_string());
                self.decided_at = Some(elapsed);
            }
            return;
        }
        if self.rollout.tick(fleet).is_some() {
            self.decided_at = Some(elapsed);
        }
    }

    /// What the rollout did, the comparison so far when it was not decided.
    pub(crate) fn summary(&self, fleet: &Fleet) -> RolloutSummary {
        let mut summary = RolloutSummary {
            group: self.config.group.clone(),
            to: self.config.plugin.display().to_string(),
            canary_nodes: self.canary_nodes,
            started_at_seconds: self.started_at.map_or(0.0, |at| at.as_secs_f64()),
            decided_at_seconds: self.decided_at.map_or(0.0, |at| at.as_secs_f64()),
            decision: "not decided (the churn ended first)".into(),
            ..RolloutSummary::default()
        };
        let verdict = match self.rollout.last_decision() {
            Some(decision) => {
                fill(&mut summary, decision);
                if let Some(error) = &self.start_error {
                    summary.reason = error.clone();
                }
                decision.verdict.clone()
            }
            None => self.rollout.verdict(fleet).unwrap_or_default(),
        };
        summary.canary_fault_rate = verdict.canary.faults_per_update;
        summary.rest_fault_rate = verdict.rest.faults_per_update;
        summary.canary_plugin_us_per_update = verdict.canary.plugin_us_per_update;
        summary.rest_plugin_us_per_update = verdict.rest.plugin_us_per_update;
        summary.canary_p99_ms = verdict.canary.propagation_p99_ms;
        summary.rest_p99_ms = verdict.rest.propagation_p99_ms;
        summary.canary_api_calls_per_version = verdict.canary.api_calls_per_version;
        summary.rest_api_calls_per_version = verdict.rest.api_calls_per_version;
        summary.verdict = Some(verdict);
        summary
    }
}

/// A decision's figures in the summary.
fn fill(summary: &mut RolloutSummary, decision: &Decision) {
    summary.canary_nodes = decision.canary_nodes;
    summary.decision = match decision.outcome {
        Outcome::Promoted => "promoted",
        Outcome::RolledBack => "rolled back",
    }
    .into();
    summary.decided_by = match decision.by {
        DecidedBy::Operator => "operator",
        DecidedBy::Automatic => "automatic",
    }
    .into();
    summary.reason = decision.reason.clone();
    summary.canary_swap_ms = decision.canary_swap_ms;
    summary.decision_swap_ms = decision.decision_swap_ms;
    summary.decision_max_pause_ms = decision.decision_max_pause_ms;
    summary.swap_errors = decision.swap_errors;
}
