//! Moving a fleet to another plugin: a canary share of its nodes hot-swapped
//! ([`Rollout`], planned by [`CanaryPlan`]), judged against the rest ([`judge`], by the
//! criteria of a [`RolloutPolicy`]) and promoted or rolled back, by itself or by command
//! through the fleet's HTTP control endpoint ([`ControlServer`], whose commands the
//! fleet's loop runs: [`serve_commands`]), guarded by a [`ControlAccess`] (a token file,
//! or TokenReview and SubjectAccessReview through [`KubernetesReviewer`], and
//! [`ControlTls`]).
//!
//! A fleet of shards rolls out by `PluginRollout` object instead (issue 51): each
//! shard does its part ([`SharedRollout`]: the plugin checked against its digest, its
//! share of the canary swapped, its figures reported), and the shards' elected leader
//! ([`RolloutLeader`]) judges every shard's figures together and writes the decision
//! that each carries out.

mod canary;
mod commands;
mod control_access;
mod control_server;
mod control_tls;
mod kube_reviews;
mod leader;
mod objects;
mod plugin_fetch;
mod resource;
mod shared_rollout;
mod verdict;
mod window;

pub use canary::{
    CanaryPlan, CanaryStatus, DecidedBy, Decision, GroupStatus, Outcome, Rollout, RolloutError, RolloutStatus,
};
pub use commands::{PluginCatalog, serve_commands, serve_shard_commands};
pub use control_access::{
    Access, AccessDenied, AccessReviewer, AuthenticatedBy, ControlAccess, ControlAction, ControlToken,
    ControlTokenError, Identity, MAX_BEARER_BYTES, MAX_TOKEN_FILE_BYTES, ReviewError, TOKEN_FILE_USER, UnguardedListen,
};
pub use control_server::{
    ControlAnswer, ControlCommand, ControlError, ControlLimits, ControlRequest, ControlServeError, ControlServer,
    StartCanary, parse_share,
};
pub use control_tls::{ControlTls, ControlTlsError, MAX_PEM_BYTES};
pub use kube_reviews::{KubernetesReviewer, REVIEW_TIMEOUT};
pub use leader::RolloutLeader;
pub use objects::{RolloutObjectError, RolloutObjects};
pub use plugin_fetch::{FETCH_TIMEOUT, FetchError, fetch_verified};
pub use resource::{ROLLOUT_GROUP, ROLLOUT_KIND, ROLLOUT_RESOURCE, ROLLOUT_VERSION};
pub use shared_rollout::{ShardRolloutConfig, SharedRollout};
pub use verdict::{Criterion, Figures, RolloutPolicy, Verdict, judge};
pub use window::{policy_of, snapshot_of, window_of};
