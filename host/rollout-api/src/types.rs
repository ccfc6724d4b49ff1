//! The resource's types, as JSON spells them (camelCase), with what each field means
//! to the fleet.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Serialize};

/// The API group.
pub const GROUP: &str = "podstatus.io";
/// The version.
pub const VERSION: &str = "v1alpha1";
/// `group/version`.
pub const API_VERSION: &str = "podstatus.io/v1alpha1";
/// The kind.
pub const KIND: &str = "PluginRollout";
/// The resource's plural name (paths, RBAC).
pub const PLURAL: &str = "pluginrollouts";

/// A rollout of one plugin over one fleet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginRollout {
    /// [`API_VERSION`].
    #[serde(default)]
    pub api_version: String,
    /// [`KIND`].
    #[serde(default)]
    pub kind: String,
    /// Name, namespace (the fleet's), and the rest.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What to roll out, and how.
    pub spec: PluginRolloutSpec,
    /// How it goes (written by the shards and their leader, through `/status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PluginRolloutStatus>,
}

/// What to roll out, over which fleet, and how it is judged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginRolloutSpec {
    /// The fleet: its nodes' name prefix (`podstatus fleet --node-name`).
    pub fleet: String,
    /// The plugin.
    pub plugin: PluginSource,
    /// The canary's share of the nodes: `"10%"` or `"0.1"`, above 0 and below 1. Each
    /// shard takes that share of its own nodes (rounded up, spread over them), so the
    /// canary spans every shard.
    pub canary: String,
    /// How long the canary runs before the leader decides (a Go duration; `60s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<String>,
    /// Only an operator decides ([`PluginRolloutSpec::decision`]); the leader never does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub manual: bool,
    /// An operator's decision: `Promote` or `RollBack`. The leader writes it as the
    /// decision, whatever the figures say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// The criteria's thresholds (each defaults to `podstatus fleet`'s).
    #[serde(default)]
    pub criteria: Criteria,
}

/// The plugin, named by digest: bytes that do not match are refused.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSource {
    /// SHA-256 of the component's bytes, 64 lowercase hex digits.
    pub sha256: String,
    /// The plugin's label in metrics (`logic`); by default `sha256-` and 12 digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A file on each shard (a mounted volume: a ConfigMap, an image volume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// A URL each shard fetches (`http://` or `https://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl PluginSource {
    /// The label the plugin's nodes carry in metrics.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| format!("sha256-{}", self.sha256.get(..12).unwrap_or(&self.sha256)))
    }
}

/// The thresholds of today's four criteria (`podstatus fleet --canary-*`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Criteria {
    /// The canary's propagation p99 may be this many times the rest's (2)...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p99_ratio: Option<f64>,
    /// ...or above it by this much, whichever is more (a Go duration; `50ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_margin: Option<String>,
    /// API calls per status version, as a ratio to the rest's (1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls_per_version_ratio: Option<f64>,
    /// Faults per update above the rest's (0.01).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_fault_rate: Option<f64>,
    /// Plugin time per update, as a ratio to the rest's (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_slowdown: Option<f64>,
    /// Samples each side needs for a criterion to be judged (20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_samples: Option<u64>,
}

/// Where a rollout stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RolloutPhase {
    /// The canary runs, the leader watches.
    Canary,
    /// Every node runs the plugin.
    Promoted,
    /// The canary's nodes run their group's plugin again.
    RolledBack,
    /// The plugin was refused (its bytes do not match the digest, or cannot be had):
    /// no node runs it.
    Refused,
}

impl RolloutPhase {
    /// Whether nothing more will happen to the rollout.
    pub fn is_final(self) -> bool {
        !matches!(self, RolloutPhase::Canary)
    }
}

/// How the rollout goes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginRolloutStatus {
    /// Where it stands (absent until the leader first sees it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RolloutPhase>,
    /// When the leader first saw it: the watch counts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// The leader that last wrote the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
    /// One report per shard, by ordinal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardReport>,
    /// The decision, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<RolloutDecision>,
    /// A line on where it stands (the outlook while it is watched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What one shard did of the rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardReport {
    /// The shard's ordinal.
    pub ordinal: u32,
    /// Its identity (a shard started again is another).
    pub identity: String,
    /// The nodes it runs.
    pub nodes: u32,
    /// Of them, in the canary.
    pub canary_nodes: u32,
    /// Its canary nodes run the plugin.
    #[serde(default)]
    pub swapped: bool,
    /// Why it refused the rollout (the digest does not match, the bytes cannot be
    /// read, its canary did not swap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Why its canary nodes did not all take the plugin (those that did went back):
    /// the leader rolls the rollout back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The decision it carried out (`Promoted`, `RolledBack`), once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<RolloutPhase>,
    /// Its canary nodes' figures since they swapped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Window>,
    /// Its other nodes' figures over the same window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest: Option<Window>,
    /// When it last reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_at: Option<Time>,
}

/// A set of nodes' counts over a window: what the criteria divide, summed over shards
/// by the leader (the propagation histogram's buckets added).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Window {
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
    /// Time in plugin calls, in microseconds.
    pub plugin_micros: u64,
    /// Propagation latencies: `[nanoseconds, count]` for each bucket that has any.
    #[serde(default)]
    pub propagation: Vec<[u64; 2]>,
}

/// The decision on a rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutDecision {
    /// `Promoted`, `RolledBack` or `Refused`.
    pub outcome: Option<RolloutPhase>,
    /// `leader` (the figures), or `operator` (`spec.decision`).
    pub by: String,
    /// Why, in a line.
    pub reason: String,
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Time>,
    /// The leader that wrote it.
    pub leader: String,
    /// The whole fleet's comparison then (canary, rest, each criterion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<serde_json::Value>,
}
