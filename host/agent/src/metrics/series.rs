//! Which series a node's samples go to ([`SeriesLabels`], [`CurrentSeries`]), and the
//! per-group figures a rollout compares ([`GroupTally`], [`GroupSnapshot`]).
//!
//! A single agent's samples carry no label of their own ([`SeriesLabels::none`]): its
//! metrics read as they always have. A fleet's nodes (issue 28) label theirs with
//! their `group` and the `logic` it runs now (the plugin's file stem, or
//! `podstatus-v2`), so an operator and the rollout can tell a canary from the rest.
//! That is a few series per group, not per node: a `node` label is added only when
//! asked for ([`MetricsScope::labelled`]), as it multiplies every family by the number
//! of nodes.
//!
//! A node records through its scope (`super::MetricsScope`), whose labels change while
//! it runs:
//! `logic` when the node swaps its plugin, `group` when a canary takes the node and
//! when it gives it back. Beside the families (which Prometheus reads, and which
//! cannot be read back here), each group keeps a [`GroupTally`]: counters and a
//! propagation histogram that the rollout snapshots and subtracts, so it compares
//! the samples since a canary started and not since the process did.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabel, EncodeLabelSet, LabelSetEncoder};

use super::latency::LatencyHistogram;

/// The labels a node's samples carry: none (a single agent), or its group and logic
/// (and its name, when asked for). Cheap to clone: the values are shared.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SeriesLabels(Option<Arc<LabelValues>>);

#[derive(Debug, PartialEq, Eq, Hash)]
struct LabelValues {
    group: String,
    logic: String,
    node: Option<String>,
}

impl SeriesLabels {
    /// No label: a single agent's series, as they have always read.
    pub fn none() -> Self {
        SeriesLabels(None)
    }

    /// `group` and `logic`, and `node` if given.
    pub fn new(group: &str, logic: &str, node: Option<&str>) -> Self {
        SeriesLabels(Some(Arc::new(LabelValues {
            group: group.to_owned(),
            logic: logic.to_owned(),
            node: node.map(str::to_owned),
        })))
    }

    /// The group, if labelled.
    pub fn group(&self) -> Option<&str> {
        self.0.as_ref().map(|v| v.group.as_str())
    }

    /// The logic, if labelled.
    pub fn logic(&self) -> Option<&str> {
        self.0.as_ref().map(|v| v.logic.as_str())
    }

    /// The node, if labelled with it.
    pub fn node(&self) -> Option<&str> {
        self.0.as_ref().and_then(|v| v.node.as_deref())
    }

    /// The same labels without the node's name: what a per-group count is keyed by.
    pub(super) fn without_node(&self) -> SeriesLabels {
        match &self.0 {
            Some(values) if values.node.is_some() => SeriesLabels::new(&values.group, &values.logic, None),
            _ => self.clone(),
        }
    }
}

impl EncodeLabelSet for SeriesLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), fmt::Error> {
        let Some(values) = &self.0 else { return Ok(()) };
        ("group", values.group.as_str()).encode(encoder.encode_label())?;
        ("logic", values.logic.as_str()).encode(encoder.encode_label())?;
        if let Some(node) = &values.node {
            ("node", node.as_str()).encode(encoder.encode_label())?;
        }
        Ok(())
    }
}

/// What a group's nodes counted, live: the rollout's inputs. Counters only grow.
#[derive(Debug, Default)]
pub struct GroupTally {
    pub(super) updates: AtomicU64,
    pub(super) versions: AtomicU64,
    pub(super) faults: AtomicU64,
    pub(super) recoveries: AtomicU64,
    pub(super) api_calls: AtomicU64,
    pub(super) plugin_nanos: AtomicU64,
    /// One per group, not per node: an HDR histogram is a few hundred KiB.
    pub(super) propagation: Mutex<LatencyHistogram>,
}

impl GroupTally {
    /// What was counted up to now.
    pub fn snapshot(&self) -> GroupSnapshot {
        GroupSnapshot {
            updates: self.updates.load(Ordering::Relaxed),
            versions: self.versions.load(Ordering::Relaxed),
            faults: self.faults.load(Ordering::Relaxed),
            recoveries: self.recoveries.load(Ordering::Relaxed),
            api_calls: self.api_calls.load(Ordering::Relaxed),
            plugin_time: Duration::from_nanos(self.plugin_nanos.load(Ordering::Relaxed)),
            propagation: self.propagation.lock().unwrap_or_else(PoisonError::into_inner).clone(),
        }
    }
}

/// A group's counts at one moment, or over a window ([`GroupSnapshot::since`]), or
/// several groups' added up ([`GroupSnapshot::add`]).
#[derive(Clone, Debug, Default)]
pub struct GroupSnapshot {
    /// Status updates handed to the plugin (set, readiness, startup, terminate).
    pub updates: u64,
    /// Of them, those that made a new status version.
    pub versions: u64,
    /// Plugin calls that faulted (trap or limit).
    pub faults: u64,
    /// Plugin instances the supervisor restored after a fault.
    pub recoveries: u64,
    /// API calls the plugin made, every verb and outcome.
    pub api_calls: u64,
    /// Time spent in plugin calls.
    pub plugin_time: Duration,
    /// Status set until written, per pod write.
    pub propagation: LatencyHistogram,
}

impl GroupSnapshot {
    /// What was counted between `before` (an earlier snapshot of the same groups) and
    /// this one.
    pub fn since(&self, before: &GroupSnapshot) -> GroupSnapshot {
        GroupSnapshot {
            updates: self.updates.saturating_sub(before.updates),
            versions: self.versions.saturating_sub(before.versions),
            faults: self.faults.saturating_sub(before.faults),
            recoveries: self.recoveries.saturating_sub(before.recoveries),
            api_calls: self.api_calls.saturating_sub(before.api_calls),
            plugin_time: self.plugin_time.saturating_sub(before.plugin_time),
            propagation: self.propagation.since(&before.propagation),
        }
    }

    /// Adds another group's counts.
    pub fn add(&mut self, other: &GroupSnapshot) {
        self.updates += other.updates;
        self.versions += other.versions;
        self.faults += other.faults;
        self.recoveries += other.recoveries;
        self.api_calls += other.api_calls;
        self.plugin_time += other.plugin_time;
        self.propagation.add(&other.propagation);
    }
}

/// Where one node's samples go now: its labels and its group's tally. Changed at a swap
/// (the logic) and when a canary takes or gives back the node (the group); read at
/// every sample, so a read lock, uncontended but for those moments.
#[derive(Debug)]
pub struct CurrentSeries(RwLock<Series>);

/// A node's labels and the tally of their group.
#[derive(Clone, Debug)]
pub struct Series {
    /// The labels its samples carry.
    pub labels: SeriesLabels,
    /// Its group's tally.
    pub tally: Arc<GroupTally>,
}

impl CurrentSeries {
    /// Starting with `series`.
    pub(super) fn new(series: Series) -> Self {
        CurrentSeries(RwLock::new(series))
    }

    /// The series now.
    pub fn get(&self) -> Series {
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Changes the labels with `change` (the new group's tally from `tally_of`),
    /// unless there are none (a single agent's stay unlabelled).
    pub(super) fn relabel(
        &self,
        change: impl FnOnce(&SeriesLabels) -> SeriesLabels,
        tally_of: impl FnOnce(&SeriesLabels) -> Arc<GroupTally>,
    ) {
        let mut series = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if series.labels == SeriesLabels::none() {
            return;
        }
        let labels = change(&series.labels);
        let tally = tally_of(&labels);
        *series = Series { labels, tally };
    }
}
