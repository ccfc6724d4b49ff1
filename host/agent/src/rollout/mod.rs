//! Moving a fleet to another plugin: a canary share of its nodes hot-swapped
//! ([`Rollout`], planned by [`CanaryPlan`]), judged against the rest ([`judge`], by the
//! criteria of a [`RolloutPolicy`]) and promoted or rolled back, by itself or by command
//! through the fleet's HTTP control endpoint ([`ControlServer`], whose commands the
//! fleet's loop runs: [`serve_commands`]).

mod canary;
mod commands;
mod control_server;
mod verdict;

pub use canary::{
    CanaryPlan, CanaryStatus, DecidedBy, Decision, GroupStatus, Outcome, Rollout, RolloutError, RolloutStatus,
};
pub use commands::{PluginCatalog, serve_commands};
pub use control_server::{
    ControlAnswer, ControlCommand, ControlError, ControlLimits, ControlRequest, ControlServeError, ControlServer,
    StartCanary, parse_share,
};
pub use verdict::{Criterion, Figures, RolloutPolicy, Verdict, judge};
