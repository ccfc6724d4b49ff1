//! A fleet run's nodes added up at its end: each node's check (from one list of the
//! API server's pods, [`check_fleet`]), counts, plugin time and client refusals into
//! the run's, and into the figures of the node's group.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::NodeGroup;
use crate::driver::Driver;
use crate::driver::DriverCounts;
use crate::fleet_check::{CheckedNode, check_fleet};
use crate::kubelet_1_35::NewPaths;
use crate::observed::per_update_us;
use crate::owners::KubeOwners;
use crate::summary::{Check, GroupFigures};
use podstatus_agent::Fleet;

/// One node's driver after the churn, and the plugin time it held.
pub(crate) struct NodeRun {
    pub(crate) driver: Driver,
    pub(crate) plugin_busy: Duration,
}

/// What a fleet's nodes add up to.
pub(crate) struct FleetTally {
    pub(crate) check: Check,
    pub(crate) counts: DriverCounts,
    pub(crate) new_paths: Option<NewPaths>,
    pub(crate) plugin_busy: Duration,
    pub(crate) static_pods: usize,
    pub(crate) client_refusals: BTreeMap<String, u64>,
    pub(crate) lease_renewals: u64,
    pub(crate) leases_late: u64,
    /// The fleet's pods in the API server, by phase.
    pub(crate) pods_by_phase: BTreeMap<String, u64>,
    /// Each group's figures so far, and its plugin time and the updates handed to it.
    by_group: Vec<(GroupFigures, (Duration, u64))>,
}

impl FleetTally {
    /// Checks every node of `fleet` (node `i` of `groups[group_of[i]]`, which ran
    /// `runs[i]`) against the API server and adds them up.
    pub(crate) fn of(
        owners: &KubeOwners,
        fleet: &Fleet,
        groups: &[NodeGroup],
        group_of: &[usize],
        runs: &[NodeRun],
    ) -> FleetTally {
        let agents = fleet.agents();
        let count_paths = runs.iter().any(|run| run.driver.new_paths().is_some());
        let checked_nodes: Vec<CheckedNode<'_>> = agents
            .iter()
            .zip(fleet.names())
            .map(|(agent, name)| CheckedNode { name, handle: agent.handle(), pods: agent.pod_manager() })
            .collect();
        let mut checked = check_fleet(owners, &checked_nodes, count_paths);
        let mut tally = FleetTally {
            check: Check::default(),
            counts: DriverCounts::default(),
            new_paths: None,
            plugin_busy: Duration::ZERO,
            static_pods: 0,
            client_refusals: BTreeMap::new(),
            lease_renewals: 0,
            leases_late: 0,
            pods_by_phase: std::mem::take(&mut checked.pods_by_phase),
            by_group: groups
                .iter()
                .map(|group| {
                    let figures = GroupFigures {
                        name: group.name.clone(),
                        plugin: group.image.contract().to_string(),
                        nodes: group.nodes,
                        ..GroupFigures::default()
                    };
                    (figures, (Duration::ZERO, 0u64))
                })
                .collect(),
        };
        for (i, (agent, run)) in agents.iter().zip(runs).enumerate() {
            let node_check = std::mem::take(&mut checked.nodes[i]);
            let (group, busy) = &mut tally.by_group[group_of[i]];
            group.add(&run.driver.counts, &node_check);
            group.plugin = agent.handle().contract().to_string();
            busy.0 += run.plugin_busy;
            busy.1 += run.driver.counts.updates.values().sum::<u64>();
            tally.check.compared += node_check.compared;
            tally.check.differing.extend(node_check.differing);
            tally.counts.add(&run.driver.counts);
            if let Some(paths) = run.driver.new_paths() {
                tally.new_paths.get_or_insert_with(NewPaths::default).add(&paths);
            }
            tally.plugin_busy += run.plugin_busy;
            tally.static_pods += run.driver.static_pods();
            for (outcome, n) in agent.client_refusals() {
                *tally.client_refusals.entry(outcome).or_default() += n;
            }
            if let Some(registration) = agent.registration() {
                tally.lease_renewals += registration.lease_renewals();
                tally.leases_late += registration.late_renewals();
            }
        }
        if let Some(paths) = tally.new_paths.as_mut() {
            paths.add(&checked.api_paths);
        }
        tally
    }

    /// Each group's figures, with what its nodes counted into `fleet`'s metrics, the
    /// final flush included (read now).
    pub(crate) fn group_figures(self, fleet: &Fleet) -> Vec<GroupFigures> {
        self.by_group
            .into_iter()
            .map(|(group, (busy, updates))| {
                let tally = fleet.metrics().group_snapshot(&group.name);
                GroupFigures {
                    plugin_busy_us_per_update: per_update_us(busy, updates),
                    propagation_ms: tally.propagation.summary().into(),
                    api_calls_per_version: podstatus_agent::rollout::Figures::of(&tally).api_calls_per_version,
                    recoveries: tally.recoveries,
                    ..group
                }
            })
            .collect()
    }
}
