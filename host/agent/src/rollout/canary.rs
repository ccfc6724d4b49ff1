//! A canary rollout across a fleet, by hot swap (issue 28). Some of the nodes (the
//! canary) move to another plugin while the rest keep theirs; the canary's samples are
//! counted in the group [`CANARY_GROUP`] while it is watched, so it can be compared with
//! the rest over the same window: the samples since the canary started, not since the
//! process did. Then either every other node moves too (promoted) or the canary's
//! nodes move back to their group's plugin (rolled back): by an operator
//! ([`Rollout::promote`], [`Rollout::roll_back`]) or by the rollout itself at the end
//! of the watch ([`Rollout::tick`]), by [`crate::rollout::judge`] (propagation p99, API calls
//! per status version, faults and plugin time per update, each with its threshold and
//! a minimum of samples). At the end of the watch, any judged criterion that is worse
//! rolls the canary back; else, if at least one was judged, the canary is promoted;
//! else the rollout keeps watching until there are samples enough (or an operator
//! decides).
//!
//! Every swap hands the node's statuses to the new instance ([`NodeAgent::swap_to_image`]),
//! so nothing accepted is lost whichever way the rollout goes.
//!
//! [`NodeAgent::swap_to_image`]: crate::NodeAgent::swap_to_image

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use super::verdict::{RolloutPolicy, Verdict, judge};
use crate::fleet::{CANARY_GROUP, Fleet, SwapOutcome};
use crate::metrics::GroupSnapshot;
use podstatus_runtime::PluginImage;

/// A canary to start: its nodes, and the plugin they move to.
#[derive(Clone)]
pub struct CanaryPlan {
    /// The nodes, by index (see [`crate::fleet::canary_nodes`] for a share of the fleet).
    pub nodes: Vec<usize>,
    /// The plugin they move to.
    pub image: PluginImage,
    /// Its `logic` label.
    pub logic: String,
}

/// Who decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// An operator (the control endpoint, a caller).
    Operator,
    /// The rollout, at the end of the watch or because the canary did not swap.
    Automatic,
}

/// Which way a canary went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every node runs the canary's plugin.
    Promoted,
    /// The canary's nodes run their group's plugin again.
    RolledBack,
}

/// What a decided canary did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// Promoted or rolled back.
    pub outcome: Outcome,
    /// By whom.
    pub by: DecidedBy,
    /// Why, in a line.
    pub reason: String,
    /// The plugin the canary ran (its `logic` label).
    pub to: String,
    /// Nodes in the canary.
    pub canary_nodes: usize,
    /// How long the canary ran before the decision, in seconds.
    pub watched_seconds: f64,
    /// How long the canary's nodes took to swap at its start, in milliseconds.
    pub canary_swap_ms: f64,
    /// How long the decision's swaps took (every other node, or the canary's), in
    /// milliseconds.
    pub decision_swap_ms: f64,
    /// The longest pause of one node's status manager in the decision's swaps, in
    /// milliseconds.
    pub decision_max_pause_ms: f64,
    /// Nodes whose swap failed at the decision (each kept its plugin).
    pub swap_errors: usize,
    /// The comparison when it was decided.
    pub verdict: Verdict,
}

/// Why a rollout command was refused.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    /// A canary is running: it must be decided before another starts.
    #[error("a canary of {nodes} nodes on {logic} is being watched: promote it or roll it back first")]
    AlreadyWatching {
        /// Its nodes.
        nodes: usize,
        /// Its plugin.
        logic: String,
    },
    /// There is no canary to decide.
    #[error("no canary is being watched")]
    NotWatching,
    /// A canary needs one node at least and one outside it.
    #[error("a canary needs at least one node and one left outside it ({asked} of {nodes} nodes asked for)")]
    CanarySize {
        /// Nodes asked for.
        asked: usize,
        /// Nodes in the fleet.
        nodes: usize,
    },
    /// A node asked for is not one of the fleet's, or is asked for twice.
    #[error("node number {0} is not in the fleet, or is named twice")]
    NoSuchNode(usize),
    /// A node outside the canary belongs to a group named [`CANARY_GROUP`], whose
    /// samples would be counted as the canary's.
    #[error("node {0} is in the group named {CANARY_GROUP:?} but not in the canary: rename the group")]
    CanaryGroupTaken(String),
    /// Some canary nodes did not take the new plugin; those that did were moved back.
    #[error("{failed} of {nodes} canary nodes failed to swap ({first}); the canary was rolled back")]
    CanarySwapFailed {
        /// Nodes that failed.
        failed: usize,
        /// Nodes in the canary.
        nodes: usize,
        /// The first failure.
        first: String,
    },
}

/// A canary being watched.
struct Watch {
    plan: CanaryPlan,
    started: Instant,
    swap: SwapOutcome,
    /// The tallies when it started: the window's beginning.
    canary_base: GroupSnapshot,
    rest_base: GroupSnapshot,
}

/// The rollout of a fleet; see the module documentation. Driven by its owner's loop
/// ([`Rollout::tick`]) and by commands.
pub struct Rollout {
    policy: RolloutPolicy,
    watch: Option<Watch>,
    last: Option<Decision>,
}

/// The rollout as the control endpoint reports it (`GET /rollout`).
#[derive(Clone, Debug, Serialize)]
pub struct RolloutStatus {
    /// `idle` (no canary yet), `watching`, `promoted` or `rolled_back` (the last
    /// canary's outcome).
    pub state: &'static str,
    /// The fleet's groups: each one's plugin and nodes (a canary's nodes counted in
    /// their own group).
    pub groups: Vec<GroupStatus>,
    /// The nodes by the plugin each runs now.
    pub nodes_by_logic: BTreeMap<String, usize>,
    /// The canary being watched.
    pub canary: Option<CanaryStatus>,
    /// The last decided canary.
    pub last_decision: Option<Decision>,
    /// How canaries are judged.
    pub policy: RolloutPolicy,
}

/// A fleet group in [`RolloutStatus`].
#[derive(Clone, Debug, Serialize)]
pub struct GroupStatus {
    /// Its name.
    pub name: String,
    /// The plugin it runs (its nodes outside a canary).
    pub logic: String,
    /// Its nodes.
    pub nodes: usize,
}

/// The canary being watched, in [`RolloutStatus`].
#[derive(Clone, Debug, Serialize)]
pub struct CanaryStatus {
    /// Its nodes.
    pub nodes: usize,
    /// The plugin they run.
    pub to: String,
    /// How long it has run, in seconds.
    pub watched_seconds: f64,
    /// How long its nodes took to swap, in milliseconds.
    pub swap_ms: f64,
    /// The comparison so far.
    pub verdict: Verdict,
    /// What the automatic decision would be now, or why it waits.
    pub outlook: String,
}

impl Rollout {
    /// No canary yet.
    pub fn new(policy: RolloutPolicy) -> Self {
        Rollout { policy, watch: None, last: None }
    }

    /// How canaries are judged.
    pub fn policy(&self) -> &RolloutPolicy {
        &self.policy
    }

    /// Whether a canary is being watched.
    pub fn watching(&self) -> bool {
        self.watch.is_some()
    }

    /// The last decided canary.
    pub fn last_decision(&self) -> Option<&Decision> {
        self.last.as_ref()
    }

    /// Starts a canary: its nodes are counted in [`CANARY_GROUP`] and swap to its
    /// plugin. When some cannot swap, the others swap back at once and the canary is
    /// rolled back.
    pub fn start(&mut self, fleet: &Fleet, plan: CanaryPlan) -> Result<RolloutStatus, RolloutError> {
        if let Some(watch) = &self.watch {
            return Err(RolloutError::AlreadyWatching {
                nodes: watch.plan.nodes.len(),
                logic: watch.plan.logic.clone(),
            });
        }
        check_canary(fleet, &plan.nodes)?;
        for &node in &plan.nodes {
            fleet.lend_to(node, CANARY_GROUP);
        }
        let (image, logic) = (plan.image.clone(), plan.logic.clone());
        let swap = fleet.swap_nodes(&plan.nodes, &|_| (image.clone(), logic.clone()));
        tracing::info!(nodes = plan.nodes.len(), to = %plan.logic, took = ?swap.took, "canary started");
        let watch = Watch {
            canary_base: fleet.metrics().group_snapshot(CANARY_GROUP),
            rest_base: rest_snapshot(fleet),
            started: Instant::now(),
            swap,
            plan,
        };
        if let Some((_, first)) = watch.swap.failed.first() {
            let error = RolloutError::CanarySwapFailed {
                failed: watch.swap.failed.len(),
                nodes: watch.plan.nodes.len(),
                first: first.clone(),
            };
            self.watch = Some(watch);
            self.decide(fleet, Outcome::RolledBack, DecidedBy::Automatic, Some(error.to_string()));
            return Err(error);
        }
        self.watch = Some(watch);
        Ok(self.status(fleet))
    }

    /// Promotes the canary: every other node swaps to its plugin, which every group
    /// runs from now on.
    pub fn promote(&mut self, fleet: &Fleet) -> Result<RolloutStatus, RolloutError> {
        self.decide_now(fleet, Outcome::Promoted)
    }

    /// Rolls the canary back: its nodes swap back to their group's plugin.
    pub fn roll_back(&mut self, fleet: &Fleet) -> Result<RolloutStatus, RolloutError> {
        self.decide_now(fleet, Outcome::RolledBack)
    }

    fn decide_now(&mut self, fleet: &Fleet, outcome: Outcome) -> Result<RolloutStatus, RolloutError> {
        if self.watch.is_none() {
            return Err(RolloutError::NotWatching);
        }
        self.decide(fleet, outcome, DecidedBy::Operator, None);
        Ok(self.status(fleet))
    }

    /// Decides by itself when the watch is over (see the module documentation):
    /// returns the decision it made, if it made one now.
    pub fn tick(&mut self, fleet: &Fleet) -> Option<&Decision> {
        let watch = self.watch.as_ref()?;
        if !self.policy.automatic || watch.started.elapsed() < self.policy.watch {
            return None;
        }
        let verdict = self.verdict(fleet)?;
        let outcome = if verdict.worse().is_some() {
            Outcome::RolledBack
        } else if verdict.judged() {
            Outcome::Promoted
        } else {
            return None;
        };
        self.decide(fleet, outcome, DecidedBy::Automatic, None);
        self.last.as_ref()
    }

    /// The comparison of the canary being watched with the rest, over the window.
    pub fn verdict(&self, fleet: &Fleet) -> Option<Verdict> {
        let watch = self.watch.as_ref()?;
        let canary = fleet.metrics().group_snapshot(CANARY_GROUP).since(&watch.canary_base);
        let rest = rest_snapshot(fleet).since(&watch.rest_base);
        Some(judge(&canary, &rest, &self.policy))
    }

    fn decide(&mut self, fleet: &Fleet, outcome: Outcome, by: DecidedBy, reason: Option<String>) {
        let Some(verdict) = self.verdict(fleet) else { return };
        let Some(watch) = self.watch.take() else { return };
        let canary: std::collections::HashSet<usize> = watch.plan.nodes.iter().copied().collect();
        let swap = match outcome {
            Outcome::Promoted => {
                let rest: Vec<usize> = (0..fleet.len()).filter(|node| !canary.contains(node)).collect();
                let (image, logic) = (watch.plan.image.clone(), watch.plan.logic.clone());
                let swap = fleet.swap_nodes(&rest, &|_| (image.clone(), logic.clone()));
                for group in 0..fleet.group_names().len() {
                    fleet.set_group_plugin(group, &watch.plan.image, &watch.plan.logic);
                }
                swap
            }
            Outcome::RolledBack => {
                // Only the nodes that took the canary's plugin move back.
                let failed: std::collections::HashSet<usize> = watch.swap.failed.iter().map(|(n, _)| *n).collect();
                let moved: Vec<usize> = watch.plan.nodes.iter().copied().filter(|n| !failed.contains(n)).collect();
                fleet.swap_nodes(&moved, &|node| fleet.group_plugin(fleet.home_group(node)))
            }
        };
        for &node in &watch.plan.nodes {
            fleet.return_home(node);
        }
        let reason = reason.unwrap_or_else(|| match by {
            DecidedBy::Operator => "decided by an operator".to_owned(),
            DecidedBy::Automatic => verdict.reason(),
        });
        let decision = Decision {
            outcome,
            by,
            reason,
            to: watch.plan.logic.clone(),
            canary_nodes: watch.plan.nodes.len(),
            watched_seconds: watch.started.elapsed().as_secs_f64(),
            canary_swap_ms: watch.swap.took.as_secs_f64() * 1000.0,
            decision_swap_ms: swap.took.as_secs_f64() * 1000.0,
            decision_max_pause_ms: swap.max_pause.as_secs_f64() * 1000.0,
            swap_errors: swap.failed.len(),
            verdict,
        };
        tracing::info!(outcome = ?decision.outcome, by = ?decision.by, reason = %decision.reason, "canary decided");
        self.last = Some(decision);
    }

    /// Where the rollout stands.
    pub fn status(&self, fleet: &Fleet) -> RolloutStatus {
        let names = fleet.group_names();
        let mut groups: Vec<GroupStatus> = names
            .iter()
            .enumerate()
            .map(|(g, name)| GroupStatus { name: name.clone(), logic: fleet.group_plugin(g).1, nodes: 0 })
            .collect();
        let mut nodes_by_logic = BTreeMap::new();
        for node in 0..fleet.len() {
            groups[fleet.home_group(node)].nodes += 1;
            *nodes_by_logic.entry(fleet.node_logic(node)).or_default() += 1;
        }
        let canary = self.watch.as_ref().map(|watch| {
            let verdict = self.verdict(fleet).unwrap_or_default();
            let outlook = match (verdict.worse(), verdict.judged()) {
                (Some(_), _) => format!("would roll back: {}", verdict.reason()),
                (None, true) => format!("would promote: {}", verdict.reason()),
                (None, false) => format!("waiting: {}", verdict.reason()),
            };
            CanaryStatus {
                nodes: watch.plan.nodes.len(),
                to: watch.plan.logic.clone(),
                watched_seconds: watch.started.elapsed().as_secs_f64(),
                swap_ms: watch.swap.took.as_secs_f64() * 1000.0,
                verdict,
                outlook,
            }
        });
        let state = match (&self.watch, &self.last) {
            (Some(_), _) => "watching",
            (None, Some(d)) if d.outcome == Outcome::Promoted => "promoted",
            (None, Some(_)) => "rolled_back",
            (None, None) => "idle",
        };
        RolloutStatus {
            state,
            groups,
            nodes_by_logic,
            canary,
            last_decision: self.last.clone(),
            policy: self.policy.clone(),
        }
    }
}

/// Every group's tally but the canary's, added up: the rest of the fleet.
pub(super) fn rest_snapshot(fleet: &Fleet) -> GroupSnapshot {
    let mut rest = GroupSnapshot::default();
    for name in fleet.group_names().iter().filter(|name| *name != CANARY_GROUP) {
        rest.add(&fleet.metrics().group_snapshot(name));
    }
    rest
}

/// A canary's nodes: in the fleet, each once, at least one and not all; no other node
/// counted as the canary's.
fn check_canary(fleet: &Fleet, nodes: &[usize]) -> Result<(), RolloutError> {
    if nodes.is_empty() || nodes.len() >= fleet.len() {
        return Err(RolloutError::CanarySize { asked: nodes.len(), nodes: fleet.len() });
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(&node) = nodes.iter().find(|&&node| node >= fleet.len() || !seen.insert(node)) {
        return Err(RolloutError::NoSuchNode(node));
    }
    let names = fleet.group_names();
    let outside = (0..fleet.len()).find(|node| !seen.contains(node) && names[fleet.home_group(*node)] == CANARY_GROUP);
    match outside {
        Some(node) => Err(RolloutError::CanaryGroupTaken(fleet.names()[node].clone())),
        None => Ok(()),
    }
}
