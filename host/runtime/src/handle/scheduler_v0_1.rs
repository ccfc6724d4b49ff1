//! The scheduler's work for a 0.1.x plugin, which syncs start to end inside `sync-pod`
//! and `sync-batch`.
//!
//! Such a plugin calls the API server inside the call, while it holds the plugin lock,
//! so anything such a call waits for is waited for by every other thread too. For
//! those the scheduler waits for the API client's rate limit *before* it takes the
//! lock ([`SchedulerConfig::admission`](super::config::SchedulerConfig::admission));
//! the client itself keeps the waits inside short (see `podstatus_agent::kube_client`).
//! Its requests are taken off the queue in order.

use super::TARGET;
use crate::bindings::{SyncOutcome, SyncRequest};
use crate::plugin::{Plugin, PluginExt, Result};

/// Syncs a request taken off the queue, under the lock `plugin` is held by; its
/// outcome, when it had one.
pub(super) fn sync_request(plugin: &mut dyn Plugin, request: &SyncRequest) -> Option<SyncOutcome> {
    let outcome = plugin.sync_pod(request);
    log_sync(request, &outcome);
    outcome.ok()
}

/// One batch sync (`what` names it in the log), under the lock `plugin` is held by.
pub(super) fn sync_batch(plugin: &mut dyn Plugin, what: &str) {
    if let Err(e) = plugin.sync_batch() {
        tracing::error!(target: TARGET, "{what}: {e}");
    }
}

fn log_sync(request: &SyncRequest, outcome: &Result<SyncOutcome>) {
    match outcome {
        Ok(outcome) => {
            tracing::debug!(target: TARGET, pod = %request.pod_uid, version = request.version, ?outcome, "synced")
        }
        Err(e) => tracing::error!(target: TARGET, pod = %request.pod_uid, version = request.version, "sync: {e}"),
    }
}
