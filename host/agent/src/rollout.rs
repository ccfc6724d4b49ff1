//! A canary rollout across a fleet, by hot swap (issue 28). Some of the nodes (the
//! canary) move to another plugin while the rest keep theirs; the canary's samples are
//! counted in the group [`CANARY_GROUP`] while it is watched, so it can be compared with
//! the rest over the same window: the samples since the canary started, not since the
//! process did. Then either every other node moves too (promoted) or the canary's
//! nodes move back to their group's plugin (rolled back): by an operator
//! ([`Rollout::promote`], [`Rollout::roll_back`]) or by the rollout itself at the end
//! of the watch ([`Rollout::tick`]), by [`judge`]:
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
//! and the rest's figure is above zero for a ratio: fewer would judge noise. At the
//! end of the watch, any judged criterion that is worse rolls the canary back; else,
//! if at least one was judged, the canary is promoted; else the rollout keeps watching
//! until there are samples enough (or an operator decides).
//!
//! Every swap hands the node's statuses to the new instance ([`NodeAgent::swap_to_image`]),
//! so nothing accepted is lost whichever way the rollout goes.
//!
//! [`NodeAgent::swap_to_image`]: crate::NodeAgent::swap_to_image

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::fleet::{CANARY_GROUP, Fleet, SwapOutcome};
use crate::metrics::GroupSnapshot;
use podstatus_runtime::PluginImage;

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

/// A canary to start: its nodes, and the plugin they move to.
#[derive(Clone)]
pub struct CanaryPlan {
    /// The nodes, by index (see [`crate::canary_nodes`] for a share of the fleet).
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
fn rest_snapshot(fleet: &Fleet) -> GroupSnapshot {
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
