//! Moving a fleet to another plugin: a canary share of its nodes hot-swapped
//! ([`Rollout`], planned by [`CanaryPlan`]), judged against the rest ([`judge`], by the
//! criteria of a [`RolloutPolicy`]) and promoted or rolled back, by itself or by command
//! through the fleet's HTTP control endpoint ([`ControlServer`], whose commands the
//! fleet's loop runs: [`serve_commands`]), guarded by a [`ControlAccess`] (a token file,
//! or TokenReview and SubjectAccessReview through [`KubernetesReviewer`], and
//! [`ControlTls`]).

mod canary;
mod commands;
mod control_access;
mod control_server;
mod control_tls;
mod kube_reviews;
mod resource;
mod verdict;

pub use canary::{
    CanaryPlan, CanaryStatus, DecidedBy, Decision, GroupStatus, Outcome, Rollout, RolloutError, RolloutStatus,
};
pub use commands::{PluginCatalog, serve_commands};
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
pub use resource::{ROLLOUT_GROUP, ROLLOUT_KIND, ROLLOUT_RESOURCE, ROLLOUT_VERSION};
pub use verdict::{Criterion, Figures, RolloutPolicy, Verdict, judge};
