//! The host's record of what a plugin accepted ([`HostView::accept`]), fed after each
//! call that changed a status: by the handle for a node, by replay for a trace, so a
//! swap or a recovery is held against the same record either way.

use podstatus_backends::HostView;
use podstatus_backends::host_view::Accepted;

use super::TARGET;
use crate::bindings::UpdateOutcome;
use crate::calls::Reply;
use crate::plugin::{Plugin, PluginExt, Result};

/// Records in `view` what `plugin` now holds for `uid` after it answered a status
/// update with `outcome`: asked of the plugin (`get-pod-status`), not taken from its
/// change set, since the record must not rest on the channel it is held against. A
/// plugin that accepted a status and holds none is held to `reported` (the status the
/// node handed it, as version 0) when there is one. Only an accepted change is noted.
pub fn note_accepted(
    view: &HostView,
    plugin: &mut dyn Plugin,
    uid: Option<&str>,
    reported: Option<&str>,
    outcome: &Result<Reply>,
) {
    let Some(uid) = uid else { return };
    if !matches!(outcome, Ok(Reply::Update(UpdateOutcome::Queued | UpdateOutcome::QueueFull))) {
        return;
    }
    match plugin.get_pod_status(uid) {
        Ok(Some(cached)) => view.accept(uid, Accepted { version: cached.version, status: cached.status }),
        // The plugin accepted a status it does not hold: the final check will show it.
        Ok(None) => {
            tracing::warn!(target: TARGET, pod = %uid, "the plugin accepted a status and does not hold it");
            if let Some(status) = reported {
                view.accept(uid, Accepted { version: 0, status: status.to_owned() });
            }
        }
        Err(e) => tracing::warn!(target: TARGET, pod = %uid, "reading back an accepted status: {e}"),
    }
}
