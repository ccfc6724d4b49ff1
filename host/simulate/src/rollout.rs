//! A canary rollout across a fleet, by hot swap: a group of nodes (the canary) moves to
//! a new plugin while the rest keep theirs. The rollout then watches both for a while
//! and compares them by what each node's driver saw, counted as it happens: faults per
//! update and plugin time per update. A canary that is worse than the rest by more
//! than the thresholds is rolled back (swapped back to its group's plugin); otherwise
//! every other node is promoted to the new plugin. A swap hands each node's statuses to
//! the new instance, so nothing is lost either way; the final check proves it.
//!
//! Latency is not among the criteria yet: the nodes share one metrics registry, so
//! propagation cannot be told apart per group (see docs/fleet.md).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::driver::LiveCounts;
use crate::summary::RolloutSummary;
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
    /// How long the canary is compared with the rest before the decision.
    pub watch: Duration,
    /// The canary may fault on this share of its updates more than the rest does.
    pub max_fault_rate: f64,
    /// The canary's plugin time per update may be this many times the rest's.
    pub max_slowdown: f64,
}

/// What a set of nodes counted up to a moment.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    updates: u64,
    faults: u64,
    busy: Duration,
}

impl Tally {
    /// What happened between `before` and `self`: faults per update and plugin time
    /// per update in microseconds (both 0 without updates), and the updates.
    fn since(self, before: Tally) -> (f64, f64, u64) {
        let updates = self.updates.saturating_sub(before.updates);
        if updates == 0 {
            return (0.0, 0.0, 0);
        }
        let faults = self.faults.saturating_sub(before.faults) as f64 / updates as f64;
        let busy = self.busy.saturating_sub(before.busy).as_secs_f64() * 1e6 / updates as f64;
        (faults, busy, updates)
    }
}

/// Where the rollout is.
enum Stage {
    /// Before [`CanaryConfig::at`].
    Waiting,
    /// The canary runs the new plugin; the tallies when it started.
    Watching { since: Instant, canary: Tally, rest: Tally },
    /// Promoted or rolled back (or the canary's swap failed).
    Done,
}

/// A rollout in progress; see the module documentation.
pub(crate) struct Rollout {
    config: CanaryConfig,
    image: PluginImage,
    /// The canary's nodes, and every other node.
    canary: Vec<usize>,
    rest: Vec<usize>,
    stage: Stage,
    summary: RolloutSummary,
}

/// What the rollout acts on: each node's agent, what its driver counts, and the plugin
/// its group runs.
pub(crate) struct Fleet<'a> {
    pub agents: &'a [podstatus_agent::NodeAgent],
    pub live: &'a [Arc<LiveCounts>],
    pub group_images: Vec<&'a PluginImage>,
}

impl Rollout {
    /// A rollout of `image` to `canary`'s nodes first, then to `rest`'s.
    pub(crate) fn new(config: CanaryConfig, image: PluginImage, canary: Vec<usize>, rest: Vec<usize>) -> Self {
        let summary = RolloutSummary {
            group: config.group.clone(),
            to: config.plugin.display().to_string(),
            canary_nodes: canary.len(),
            decision: "not decided (the churn ended first)".into(),
            ..RolloutSummary::default()
        };
        Rollout { config, image, canary, rest, stage: Stage::Waiting, summary }
    }

    /// Moves the rollout on, `elapsed` into the churn.
    pub(crate) fn tick(&mut self, elapsed: Duration, fleet: &Fleet<'_>) {
        match &self.stage {
            Stage::Waiting if elapsed >= self.config.at => {
                self.summary.started_at_seconds = elapsed.as_secs_f64();
                let (took, errors) = swap(fleet, &self.canary, |_| &self.image);
                self.summary.canary_swap_ms = took.as_secs_f64() * 1000.0;
                self.summary.swap_errors += errors;
                self.stage = if errors > 0 {
                    // A canary that did not take its plugin is rolled back at once.
                    self.decide(elapsed, fleet, false, format!("{errors} canary nodes failed to swap"));
                    Stage::Done
                } else {
                    Stage::Watching {
                        since: Instant::now(),
                        canary: tally(fleet, &self.canary),
                        rest: tally(fleet, &self.rest),
                    }
                };
            }
            Stage::Watching { since, canary, rest } if since.elapsed() >= self.config.watch => {
                let (canary_faults, canary_busy, canary_updates) = tally(fleet, &self.canary).since(*canary);
                let (rest_faults, rest_busy, _) = tally(fleet, &self.rest).since(*rest);
                self.summary.canary_fault_rate = canary_faults;
                self.summary.rest_fault_rate = rest_faults;
                self.summary.canary_plugin_us_per_update = canary_busy;
                self.summary.rest_plugin_us_per_update = rest_busy;
                let worse = if canary_updates == 0 {
                    Some("the canary handled no update while it was watched".to_owned())
                } else if canary_faults > rest_faults + self.config.max_fault_rate {
                    Some(format!("faults per update {canary_faults:.4} against {rest_faults:.4}"))
                } else if rest_busy > 0.0 && canary_busy > rest_busy * self.config.max_slowdown {
                    Some(format!("plugin time per update {canary_busy:.1} us against {rest_busy:.1} us"))
                } else {
                    None
                };
                match worse {
                    Some(reason) => self.decide(elapsed, fleet, false, reason),
                    None => self.decide(elapsed, fleet, true, "within the thresholds".into()),
                }
                self.stage = Stage::Done;
            }
            _ => {}
        }
    }

    /// Promotes (every other node swaps to the new plugin) or rolls back (the canary
    /// swaps back to its group's plugin).
    fn decide(&mut self, elapsed: Duration, fleet: &Fleet<'_>, promote: bool, reason: String) {
        let (took, errors) = if promote {
            swap(fleet, &self.rest, |_| &self.image)
        } else {
            let groups = &fleet.group_images;
            swap(fleet, &self.canary, |node| groups[node])
        };
        self.summary.decided_at_seconds = elapsed.as_secs_f64();
        self.summary.decision = if promote { "promoted" } else { "rolled back" }.into();
        self.summary.reason = reason;
        self.summary.decision_swap_ms = took.as_secs_f64() * 1000.0;
        self.summary.swap_errors += errors;
        tracing::info!(decision = %self.summary.decision, reason = %self.summary.reason, "canary decided");
    }

    /// What the rollout did.
    pub(crate) fn summary(self) -> RolloutSummary {
        self.summary
    }
}

/// What `nodes` counted so far.
fn tally(fleet: &Fleet<'_>, nodes: &[usize]) -> Tally {
    let mut tally = Tally::default();
    for &node in nodes {
        tally.updates += fleet.live[node].updates.load(Ordering::Relaxed);
        tally.faults += fleet.live[node].faults.load(Ordering::Relaxed);
        tally.busy += fleet.agents[node].handle().plugin_busy();
    }
    tally
}

/// Swaps each of `nodes` to the plugin `image_of` names for it, one after another:
/// how long that took and how many swaps failed (those nodes keep their plugin).
fn swap<'i>(fleet: &Fleet<'_>, nodes: &[usize], image_of: impl Fn(usize) -> &'i PluginImage) -> (Duration, usize) {
    let began = Instant::now();
    let mut errors = 0;
    for &node in nodes {
        if let Err(e) = fleet.agents[node].swap_to_image(image_of(node)) {
            tracing::error!(node, "swap failed, the node keeps its plugin: {e}");
            errors += 1;
        }
    }
    (began.elapsed(), errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_reads_rates_over_the_interval_only() {
        let before = Tally { updates: 100, faults: 50, busy: Duration::from_millis(100) };
        let after = Tally { updates: 300, faults: 52, busy: Duration::from_millis(300) };
        let (faults, busy, updates) = after.since(before);
        assert_eq!(updates, 200);
        assert!((faults - 0.01).abs() < 1e-9, "{faults}");
        assert!((busy - 1000.0).abs() < 1e-6, "{busy}");
        assert_eq!(before.since(before), (0.0, 0.0, 0), "no update, no rate");
    }
}
