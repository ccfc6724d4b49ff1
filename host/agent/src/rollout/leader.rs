//! The one shard that decides a fleet-wide rollout ([`RolloutLeader`]): elected through
//! a `coordination.k8s.io` Lease (`FLEET-rollout-leader` in the fleet's namespace), as
//! client-go's leader election elects, one holder at a time and taken over once the
//! holder stops renewing it for its duration. Every shard runs one; only the holder
//! acts. For each rollout being watched it
//!
//! - starts the window (`status.startedAt`, phase `Canary`) when it first sees it;
//! - refuses it when a shard could not have its plugin (the bytes do not match the
//!   digest, or cannot be read), and rolls it back when a shard's canary did not swap;
//! - carries out an operator's `spec.decision`;
//! - once the watch is over (and `spec.manual` is not set), adds up every live shard's
//!   canary and rest windows and judges them with the criteria of a single fleet
//!   ([`super::judge`]): any judged criterion worse rolls back, else one judged
//!   promotes, else it waits for samples; a shard that has not reported yet is waited
//!   for, unless its share holds no node (more shards than nodes).
//!
//! The decision is written once into the status; every shard carries it out
//! ([`super::SharedRollout`]). A leader that dies mid-rollout leaves the status as it
//! was: the next one takes the Lease once it expires and goes on from `startedAt`.

use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_rollout_api::{PluginRollout, RolloutDecision, RolloutPhase, refusal};

use super::objects::{RolloutObjects, current};
use super::verdict::judge;
use super::window::{policy_of, snapshot_of};
use crate::metrics::GroupSnapshot;
use crate::shard::{HeldLease, LeaseClaims, LeaseState, share};

/// How often the leader looks at the rollouts (its Lease is renewed by a task of its
/// own every quarter of its duration, whatever the shard's loop is doing).
const LOOK: Duration = Duration::from_secs(1);

/// The leader's election and its judging; see the module documentation.
pub struct RolloutLeader {
    lease: HeldLease,
    holder: String,
    objects: RolloutObjects,
    fleet: String,
    /// The whole fleet's nodes: a member whose share holds none has nothing to report.
    total_nodes: usize,
    leading: bool,
    next: Instant,
}

impl RolloutLeader {
    /// A candidate for `fleet`'s leadership (of `total_nodes` nodes), seeking the Lease
    /// through `claims` (its identity, namespace and duration) on `runtime` from now on,
    /// judging `objects`.
    pub fn new(
        claims: LeaseClaims,
        objects: RolloutObjects,
        fleet: &str,
        total_nodes: usize,
        runtime: tokio::runtime::Handle,
    ) -> RolloutLeader {
        let holder = claims.holder().to_owned();
        let lease = HeldLease::keep(claims, &format!("{fleet}-rollout-leader"), Default::default(), &runtime);
        let fleet = fleet.to_owned();
        RolloutLeader { lease, holder, objects, fleet, total_nodes, leading: false, next: Instant::now() }
    }

    /// Whether it leads now.
    pub fn leading(&self) -> bool {
        self.leading
    }

    /// Renews (or seeks) the leadership when due and, leading, judges the rollouts
    /// being watched, with `members` the live shards' ordinals; a line for each thing
    /// it did (won or lost the lead, decided).
    pub fn tick(&mut self, members: &[u32]) -> Vec<String> {
        if Instant::now() < self.next {
            return Vec::new();
        }
        self.next = Instant::now() + LOOK;
        let mut said = Vec::new();
        // A renewal that failed may still hold until the Lease expires, but another
        // holder may also have it by then: only a Lease renewed at the last attempt leads.
        let leading = self.lease.state() == LeaseState::Held;
        if leading != self.leading {
            said.push(if leading { "leads the fleet's rollouts".to_owned() } else { "no longer leads".to_owned() });
            self.leading = leading;
        }
        if !leading {
            return said;
        }
        let rollouts = match self.objects.list(&self.fleet) {
            Ok(rollouts) => rollouts,
            Err(error) => {
                tracing::warn!(%error, "the leader reading the fleet's rollouts");
                return said;
            }
        };
        // The shards carry one rollout at a time, the oldest undecided: the leader
        // watches that one, so a later rollout's watch starts only once the shards
        // carry it.
        if let Some(rollout) = current(&rollouts) {
            said.extend(self.lead(rollout, members));
        }
        said
    }

    /// Lets go of the leadership (a shard stopping cleanly): the next candidate takes it
    /// at once instead of once the Lease expires.
    pub fn release(self) -> Result<(), kube::Error> {
        self.lease.release()
    }

    /// One rollout's next step.
    fn lead(&self, rollout: &PluginRollout, members: &[u32]) -> Option<String> {
        let name = rollout.metadata.name.clone().unwrap_or_default();
        let status = rollout.status.clone().unwrap_or_default();
        // A cluster's CRD schema checks shapes only: a rollout whose fields mean nothing
        // (a share of 150%, a watch of "soon") is refused, not guessed at.
        if let Some(reason) = refusal(rollout) {
            return self.decide(&name, RolloutPhase::Refused, "leader", reason, None);
        }
        let Some(started) = status.started_at.as_ref().map(|t| t.0) else {
            self.write(&name, |status| {
                status.phase = Some(RolloutPhase::Canary);
                status.started_at = Some(Time(jiff::Timestamp::now()));
                status.message = Some("canary started".into());
            });
            return Some(format!("rollout {name}: watching its canary"));
        };
        let reports: Vec<_> = status.shards.iter().filter(|r| members.contains(&r.ordinal)).collect();
        if let Some(report) = reports.iter().find(|r| r.refused.is_some()) {
            let reason = format!("shard {}: {}", report.ordinal, report.refused.as_deref().unwrap_or_default());
            return self.decide(&name, RolloutPhase::Refused, "leader", reason, None);
        }
        if let Some(report) = reports.iter().find(|r| r.failed.is_some()) {
            let reason = format!("shard {}: {}", report.ordinal, report.failed.as_deref().unwrap_or_default());
            return self.decide(&name, RolloutPhase::RolledBack, "leader", reason, None);
        }
        match rollout.spec.decision.as_deref() {
            Some("Promote") => {
                return self.decide(&name, RolloutPhase::Promoted, "operator", "decided by an operator".into(), None);
            }
            Some("RollBack") => {
                return self.decide(&name, RolloutPhase::RolledBack, "operator", "decided by an operator".into(), None);
            }
            _ => {}
        }
        let policy = policy_of(&rollout.spec);
        let waiting: Vec<u32> = reporting(self.total_nodes, members)
            .into_iter()
            .filter(|m| !reports.iter().any(|r| r.ordinal == *m && r.swapped))
            .collect();
        let message = if !policy.automatic {
            "waiting for an operator's decision (spec.manual)".to_owned()
        } else if jiff::Timestamp::now().duration_since(started).as_secs_f64() < policy.watch.as_secs_f64() {
            format!("watching for {:?}", policy.watch)
        } else if !waiting.is_empty() {
            format!("waiting for the reports of shards {waiting:?}")
        } else {
            let (mut canary, mut rest) = (GroupSnapshot::default(), GroupSnapshot::default());
            for report in &reports {
                canary.add(&report.canary.as_ref().map(snapshot_of).unwrap_or_default());
                rest.add(&report.rest.as_ref().map(snapshot_of).unwrap_or_default());
            }
            let verdict = judge(&canary, &rest, &policy);
            let shards = reports.len();
            let json = serde_json::to_value(&verdict).ok();
            if verdict.worse().is_some() {
                let reason = format!("{} (over {shards} shards)", verdict.reason());
                return self.decide(&name, RolloutPhase::RolledBack, "leader", reason, json);
            }
            if verdict.judged() {
                let reason = format!("{} (over {shards} shards)", verdict.reason());
                return self.decide(&name, RolloutPhase::Promoted, "leader", reason, json);
            }
            format!("waiting: {}", verdict.reason())
        };
        if status.message.as_deref() != Some(message.as_str()) {
            self.write(&name, |status| status.message = Some(message.clone()));
        }
        None
    }

    fn decide(
        &self,
        name: &str,
        outcome: RolloutPhase,
        by: &str,
        reason: String,
        verdict: Option<serde_json::Value>,
    ) -> Option<String> {
        let decision = RolloutDecision {
            outcome: Some(outcome),
            by: by.to_owned(),
            reason: reason.clone(),
            at: Some(Time(jiff::Timestamp::now())),
            leader: self.holder.clone(),
            verdict,
        };
        self.write(name, |status| {
            status.phase = Some(outcome);
            status.decision = Some(decision.clone());
            status.message = Some(reason.clone());
        });
        Some(format!("rollout {name}: {outcome:?} by the {by}: {reason}"))
    }

    /// Changes the status of `name` (unless decided meanwhile), noting itself as leader.
    fn write(&self, name: &str, change: impl Fn(&mut podstatus_rollout_api::PluginRolloutStatus)) {
        let written = self.objects.update_status(name, |rollout| {
            let status = rollout.status.get_or_insert_with(Default::default);
            if status.phase.is_some_and(RolloutPhase::is_final) {
                return false;
            }
            change(status);
            status.leader = Some(self.holder.clone());
            true
        });
        if let Err(error) = written {
            tracing::warn!(rollout = %name, %error, "the leader writing the rollout's status");
        }
    }
}

/// The members a rollout waits for: those whose share of `total_nodes` holds a node (a
/// StatefulSet of more replicas than nodes leaves the last with none, and they would
/// never report a canary).
fn reporting(total_nodes: usize, members: &[u32]) -> Vec<u32> {
    members.iter().copied().filter(|&m| !share(total_nodes, m, members).is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::reporting;

    #[test]
    fn a_member_whose_share_holds_no_node_is_not_waited_for() {
        assert_eq!(reporting(1000, &[0, 1, 2, 3]), [0, 1, 2, 3]);
        assert_eq!(reporting(2, &[0, 3, 5]), [0, 3], "the third member has no node of two");
        assert_eq!(reporting(0, &[0]), Vec::<u32>::new());
    }
}
