//! A shard's part in a fleet-wide rollout (issue 51): it reads its fleet's
//! `PluginRollout` objects, and for the one being rolled out
//!
//! 1. has the plugin's bytes and checks them against the digest (refusing, and saying
//!    so in its report, bytes that do not match);
//! 2. swaps its share of the canary (the rollout's share of its own nodes, spread over
//!    them as [`crate::fleet::canary_nodes`] spreads a fleet's: so the canary spans
//!    every shard), counting their samples in the canary group from then on;
//! 3. reports its canary's and its other nodes' window into the object's status
//!    ([`ShardReport`]), for the leader to add up over every shard and judge
//!    ([`super::RolloutLeader`]);
//! 4. carries out the decision once the leader wrote it: promoted, every node swaps to
//!    the plugin (a node still busy with syncs after a few attempts is swapped again at
//!    the next look, while looks make progress) and every group runs it from then on;
//!    rolled back or refused, the canary's nodes swap back to their group's plugin.
//!
//! A fleet started again on another share (a shard came or went) starts a new
//! `SharedRollout`: its nodes start on the last promoted plugin (the groups' plugins the
//! last fleet ended with; any node still behind is swapped at the first look), and a
//! canary being watched is taken up again over its new nodes (their window
//! starting then).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podstatus_rollout_api::{PluginRollout, RolloutPhase, ShardReport, parse_share, refusal};
use podstatus_runtime::{PluginImage, PluginRuntime};

use super::canary::rest_snapshot;
use super::objects::{RolloutObjects, current};
use super::plugin_fetch::fetch_verified;
use super::window::window_of;
use crate::fleet::{CANARY_GROUP, Fleet, canary_nodes};
use crate::metrics::GroupSnapshot;

/// Who the shard is.
#[derive(Clone, Debug)]
pub struct ShardRolloutConfig {
    /// The fleet's name (`spec.fleet` of its rollouts).
    pub fleet: String,
    /// The shard's ordinal.
    pub ordinal: u32,
    /// Its identity.
    pub identity: String,
    /// How often it looks at the rollouts (and reports).
    pub poll: Duration,
}

/// A canary this shard carries.
struct Active {
    uid: String,
    name: String,
    /// The canary's nodes here, by position.
    canary: Vec<usize>,
    /// Of them, those whose swap failed.
    failed: Vec<usize>,
    /// Why the plugin was refused (then nothing was swapped).
    refused: Option<String>,
    canary_base: GroupSnapshot,
    rest_base: GroupSnapshot,
}

/// A shard's part in its fleet's rollouts; see the module documentation.
pub struct SharedRollout {
    objects: RolloutObjects,
    config: ShardRolloutConfig,
    plugins: PluginRuntime,
    runtime: tokio::runtime::Handle,
    active: Option<Active>,
    /// Plugins had and checked, by rollout UID (with their label).
    images: HashMap<String, (PluginImage, String)>,
    /// Decided rollouts this fleet has carried out (or had nothing to do for).
    settled: HashSet<String>,
    next: Instant,
}

impl SharedRollout {
    /// The part of the shard `config` describes, with `objects` in its namespace.
    pub fn new(
        objects: RolloutObjects,
        config: ShardRolloutConfig,
        plugins: PluginRuntime,
        runtime: tokio::runtime::Handle,
    ) -> SharedRollout {
        SharedRollout {
            objects,
            config,
            plugins,
            runtime,
            active: None,
            images: HashMap::new(),
            settled: HashSet::new(),
            next: Instant::now(),
        }
    }

    /// Looks at the rollouts when due and does its part; a line for each thing done.
    pub fn tick(&mut self, fleet: &Fleet) -> Vec<String> {
        if Instant::now() < self.next {
            return Vec::new();
        }
        self.next = Instant::now() + self.config.poll;
        let rollouts = match self.objects.list(&self.config.fleet) {
            Ok(rollouts) => rollouts,
            Err(error) => {
                tracing::warn!(%error, "reading the fleet's rollouts; trying again");
                return Vec::new();
            }
        };
        let mut said = Vec::new();
        let phase = |r: &PluginRollout| r.status.as_ref().and_then(|s| s.phase);
        let uid = |r: &PluginRollout| r.metadata.uid.clone().unwrap_or_default();
        // The last promotion is what every node runs; older ones were overtaken.
        let promoted = rollouts
            .iter()
            .filter(|r| phase(r) == Some(RolloutPhase::Promoted))
            .max_by_key(|r| r.status.as_ref().and_then(|s| s.decision.as_ref()?.at.as_ref().map(|t| t.0)));
        if let Some(rollout) = promoted
            && !self.settled.contains(&uid(rollout))
        {
            said.extend(self.promote(fleet, rollout));
        }
        for rollout in rollouts.iter().filter(|r| phase(r).is_some_and(RolloutPhase::is_final)) {
            if !self.settled.contains(&uid(rollout)) {
                said.extend(self.settle(fleet, rollout));
            }
        }
        if let Some(rollout) = current(&rollouts) {
            if self.active.as_ref().is_none_or(|active| active.uid != uid(rollout)) {
                self.back_out(fleet);
                said.push(self.begin(fleet, rollout));
            }
            self.report(fleet, None);
        } else if let Some(active) = &self.active
            && !rollouts.iter().any(|r| uid(r) == active.uid)
        {
            // Deleted before it was decided: nothing will decide it, so its canary goes
            // back now rather than at the next rollout or restart.
            said.push(format!(
                "rollout {}: deleted: the canary's nodes are back on their groups' plugins",
                active.name
            ));
            self.back_out(fleet);
        }
        said
    }

    /// The plugin of `rollout`, had and checked once.
    fn image(&mut self, rollout: &PluginRollout) -> Result<(PluginImage, String), String> {
        let uid = rollout.metadata.uid.clone().unwrap_or_default();
        if let Some(image) = self.images.get(&uid) {
            return Ok(image.clone());
        }
        let bytes = fetch_verified(&rollout.spec.plugin, &self.plugins, &self.runtime).map_err(|e| e.to_string())?;
        let image = self.plugins.load(&bytes).map_err(|e| format!("loading the plugin: {e}"))?;
        let loaded = (image, rollout.spec.plugin.label());
        self.images.insert(uid, loaded.clone());
        Ok(loaded)
    }

    /// Starts its share of `rollout`'s canary.
    fn begin(&mut self, fleet: &Fleet, rollout: &PluginRollout) -> String {
        let name = rollout.metadata.name.clone().unwrap_or_default();
        // Each shard's share of the canary is the rollout's share of its own nodes,
        // spread over them: the canary spans every shard (a shard of one node has no
        // canary: it could not compare it with the rest), whatever the node numbers'
        // pattern against the count of shards.
        let share = parse_share(&rollout.spec.canary).unwrap_or(0.0);
        let canary = canary_nodes(fleet.len(), share);
        let mut active = Active {
            uid: rollout.metadata.uid.clone().unwrap_or_default(),
            name: name.clone(),
            canary,
            failed: Vec::new(),
            refused: None,
            canary_base: GroupSnapshot::default(),
            rest_base: GroupSnapshot::default(),
        };
        // A cluster's CRD schema checks shapes only; a rollout whose fields mean nothing
        // is refused here as the embedded server would refuse it, never guessed at.
        let checked = match refusal(rollout) {
            Some(invalid) => Err(invalid),
            None => self.image(rollout),
        };
        let said = match checked {
            Err(refused) => {
                let said = format!("rollout {name}: refused: {refused}");
                active.refused = Some(refused);
                said
            }
            Ok((image, label)) => {
                for &node in &active.canary {
                    fleet.lend_to(node, CANARY_GROUP);
                }
                let swap = fleet.swap_nodes(&active.canary, &|_| (image.clone(), label.clone()));
                active.failed = swap.failed.iter().map(|(node, _)| *node).collect();
                active.canary_base = fleet.metrics().group_snapshot(CANARY_GROUP);
                active.rest_base = rest_snapshot(fleet);
                match swap.failed.first() {
                    Some((_, why)) => format!("rollout {name}: {} canary nodes did not swap: {why}", swap.failed.len()),
                    None => {
                        format!("rollout {name}: {} canary nodes on {label} in {:?}", active.canary.len(), swap.took)
                    }
                }
            }
        };
        self.active = Some(active);
        said
    }

    /// Puts the canary being carried back on its groups' plugins (a rollout that was
    /// decided or replaced while this fleet carried it).
    fn back_out(&mut self, fleet: &Fleet) {
        let Some(active) = self.active.take() else { return };
        if active.refused.is_none() {
            let moved: Vec<usize> = active.canary.iter().copied().filter(|n| !active.failed.contains(n)).collect();
            fleet.swap_nodes(&moved, &|node| fleet.group_plugin(fleet.home_group(node)));
        }
        for &node in &active.canary {
            fleet.return_home(node);
        }
    }

    /// Every node onto the promoted `rollout`'s plugin, every group on it from now on.
    fn promote(&mut self, fleet: &Fleet, rollout: &PluginRollout) -> Vec<String> {
        let uid = rollout.metadata.uid.clone().unwrap_or_default();
        let name = rollout.metadata.name.clone().unwrap_or_default();
        let (image, label) = match self.image(rollout) {
            Ok(image) => image,
            Err(why) => {
                tracing::error!(rollout = %name, "the promoted plugin cannot be had: {why}");
                return vec![format!("rollout {name}: promoted, but its plugin cannot be had here: {why}")];
            }
        };
        let behind: Vec<usize> = (0..fleet.len()).filter(|&node| fleet.node_logic(node) != label).collect();
        let swap = fleet.swap_nodes(&behind, &|_| (image.clone(), label.clone()));
        for group in 0..fleet.group_names().len() {
            fleet.set_group_plugin(group, &image, &label);
        }
        if self.active.as_ref().is_some_and(|active| active.uid == uid)
            && let Some(active) = self.active.take()
        {
            for &node in &active.canary {
                fleet.return_home(node);
            }
        }
        let done = format!("rollout {name}: promoted: {} nodes swapped to {label}", swap.swapped);
        if !swap.busy.is_empty() && swap.busy.len() < behind.len() {
            // Not settled: the next look swaps the nodes still behind again (their
            // running plugin's syncs did not drain in time, as on a node just started
            // with all its pods to write, on a loaded machine), while a look swaps some:
            // one that swaps none (an API server out of reach) settles it as it is.
            return vec![format!("{done}, {} still busy; trying again", swap.busy.len())];
        }
        self.settled.insert(uid);
        self.report(fleet, Some((rollout, RolloutPhase::Promoted)));
        vec![format!("{done} ({} failed) in {:?}", swap.failed.len(), swap.took)]
    }

    /// A rollout decided otherwise (or promoted and overtaken): its canary, if this
    /// fleet carries it, goes back.
    fn settle(&mut self, fleet: &Fleet, rollout: &PluginRollout) -> Option<String> {
        let uid = rollout.metadata.uid.clone().unwrap_or_default();
        self.settled.insert(uid.clone());
        let carried = self.active.as_ref().is_some_and(|active| active.uid == uid);
        if !carried {
            return None;
        }
        let phase = rollout.status.as_ref().and_then(|s| s.phase).unwrap_or(RolloutPhase::RolledBack);
        self.back_out(fleet);
        self.report(fleet, Some((rollout, phase)));
        let name = rollout.metadata.name.clone().unwrap_or_default();
        Some(format!("rollout {name}: {phase:?}: the canary's nodes are back on their groups' plugins"))
    }

    /// Writes its report into the active rollout's status, or (`applied`) into a decided
    /// one's: what it carried out.
    fn report(&self, fleet: &Fleet, applied: Option<(&PluginRollout, RolloutPhase)>) {
        let name = match (applied, &self.active) {
            (Some((rollout, _)), _) => rollout.metadata.name.clone().unwrap_or_default(),
            (None, Some(active)) => active.name.clone(),
            (None, None) => return,
        };
        let mut report = ShardReport {
            ordinal: self.config.ordinal,
            identity: self.config.identity.clone(),
            nodes: u32::try_from(fleet.len()).unwrap_or(u32::MAX),
            reported_at: Some(Time(jiff::Timestamp::now())),
            applied: applied.map(|(_, phase)| phase),
            ..ShardReport::default()
        };
        if let (None, Some(active)) = (applied, &self.active) {
            report.canary_nodes = u32::try_from(active.canary.len()).unwrap_or(u32::MAX);
            report.refused = active.refused.clone();
            report.swapped = active.refused.is_none() && active.failed.is_empty();
            report.failed = (!active.failed.is_empty())
                .then(|| format!("{} of {} canary nodes did not swap", active.failed.len(), active.canary.len()));
            if report.swapped {
                let canary = fleet.metrics().group_snapshot(CANARY_GROUP).since(&active.canary_base);
                report.canary = Some(window_of(&canary));
                report.rest = Some(window_of(&rest_snapshot(fleet).since(&active.rest_base)));
            }
        }
        let written = self.objects.update_status(&name, |rollout| {
            let status = rollout.status.get_or_insert_with(Default::default);
            if applied.is_none() && status.phase.is_some_and(RolloutPhase::is_final) {
                return false;
            }
            match status.shards.iter_mut().find(|r| r.ordinal == report.ordinal) {
                Some(entry) if applied.is_some() => {
                    entry.applied = report.applied;
                    entry.reported_at = report.reported_at.clone();
                }
                Some(entry) => *entry = report.clone(),
                None => {
                    status.shards.push(report.clone());
                    status.shards.sort_by_key(|r| r.ordinal);
                }
            }
            true
        });
        if let Err(error) = written {
            tracing::warn!(rollout = %name, %error, "reporting to the rollout; trying again at the next look");
        }
    }
}
