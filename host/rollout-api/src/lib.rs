//! The `PluginRollout` resource (`podstatus.io/v1alpha1`, issue 51): a rollout of a
//! plugin over a whole fleet, every shard of it, declared as a Kubernetes object.
//!
//! The spec names the plugin by its SHA-256 and where its bytes are (a file in a
//! mounted volume, or a URL), the canary's share, the watch and the criteria it is
//! judged by ([`PluginRolloutSpec`]). Each shard reports into the status what its
//! canary and other nodes did over the window ([`ShardReport`], [`Window`]); the
//! shards' leader judges the whole fleet's figures and writes the decision
//! ([`RolloutDecision`]) that every shard then carries out.
//!
//! Served by the embedded API server (`podstatus-apiserver`, which checks every write
//! with [`validate`]) and by a real cluster through the CRD in `host/deploy/`; carried
//! out by `podstatus-agent`'s shards. The types keep unknown fields out, as a
//! structural schema prunes them.

mod go_duration;
mod types;
mod validation;

pub use go_duration::{GoDurationError, parse as parse_go_duration};
pub use types::{
    API_VERSION, Criteria, GROUP, KIND, PLURAL, PluginRollout, PluginRolloutSpec, PluginRolloutStatus, PluginSource,
    RolloutDecision, RolloutPhase, ShardReport, VERSION, Window,
};
pub use validation::{Invalid, MAX_HISTOGRAM_BUCKETS, MAX_SHARD_REPORTS, parse_share, refusal, validate};
