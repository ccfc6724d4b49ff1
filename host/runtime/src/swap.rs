//! Moving a running status manager's state into another plugin: hot swap.
//!
//! No plugin host we know of moves live state between versions of a component; here
//! the state travels in the plugin's own versioned format. The bulk (`save-state`,
//! `load-state`) moves while the old plugin keeps serving; only what changed since
//! (`save-state-changes`, `apply-state-changes`) moves while calls are held, so the
//! pause follows the traffic during the swap, not the size of the state.

use std::time::Duration;

use crate::bindings::Contract;
use crate::plugin::{CallError, Plugin};

/// Why a swap did not happen. The running plugin keeps serving in every case.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    /// The running plugin could not hand over its state.
    #[error("the running plugin could not hand over its state: {0}")]
    Source(#[source] CallError),
    /// The new plugin refused the state (a format version it does not read, say) or
    /// faulted taking it.
    #[error("the new plugin refused the state: {0}")]
    Refused(#[source] CallError),
    /// The new plugin could not be loaded or instantiated.
    #[error("the new plugin could not be loaded: {0}")]
    Load(String),
}

/// What a swap moved and how long it took.
#[derive(Clone, Debug, PartialEq)]
pub struct SwapReport {
    /// The contract the old plugin implemented.
    pub from: Contract,
    /// The contract the new plugin implements.
    pub to: Contract,
    /// Size of the state document moved before the pause.
    pub state_bytes: usize,
    /// Size of the change set moved during the pause.
    pub changes_bytes: usize,
    /// The old plugin saving the bulk: one call, which other calls wait for as they
    /// wait for any call (a batch sync, say).
    pub save: Duration,
    /// Saving, loading and checking the bulk and the pre-copied change sets (the old
    /// plugin served meanwhile, between calls).
    pub bulk: Duration,
    /// How long calls were held.
    pub pause: Duration,
    /// From the start to the switch.
    pub total: Duration,
}

/// Moves the bulk of `old`'s state into `new` and checks that `new` holds it; returns
/// the document's size. `old` keeps serving afterwards; what changes from here on moves
/// with [`move_changes`].
pub fn move_bulk(old: &mut dyn Plugin, new: &mut dyn Plugin) -> Result<usize, SwapError> {
    let state = old.save_state().map_err(SwapError::Source)?;
    load_checked(new, &state)?;
    Ok(state.len())
}

/// Loads `state` into `new` and checks, from `new`'s own saved state, that it took
/// every status (with its version and whether it is finished, `podIsFinished`), every
/// written version and every pending request: a plugin that answers "ok" and drops the
/// state must not take over.
pub fn load_checked(new: &mut dyn Plugin, state: &str) -> Result<(), SwapError> {
    new.load_state(state).map_err(SwapError::Refused)?;
    let held = new.save_state().map_err(SwapError::Refused)?;
    let summary = |doc: &str| -> Option<StateSummary> {
        let doc: serde_json::Value = serde_json::from_str(doc).ok()?;
        let keys = |map: &str| -> Option<Vec<String>> { Some(doc.get(map)?.as_object()?.keys().cloned().collect()) };
        let versions = doc
            .get("statuses")?
            .as_object()?
            .iter()
            .map(|(uid, entry)| {
                let version = entry.get("version").and_then(serde_json::Value::as_u64);
                // Since state version 2; absent is false.
                let finished = entry.get("podIsFinished").and_then(serde_json::Value::as_bool).unwrap_or(false);
                (uid.clone(), version, finished)
            })
            .collect();
        Some(StateSummary { versions, written: doc.get("apiStatusVersions").cloned(), pending: keys("pending")? })
    };
    let (Some(expected), Some(actual)) = (summary(state), summary(&held)) else {
        return Err(SwapError::Refused(CallError::Rejected {
            call: "save-state",
            error: crate::bindings::ManagerError::InvalidState("the new plugin's state cannot be read back".into()),
        }));
    };
    if expected != actual {
        return Err(SwapError::Refused(CallError::Rejected {
            call: "load-state",
            error: crate::bindings::ManagerError::InvalidState(
                "the new plugin answered ok but does not hold the state it was given".into(),
            ),
        }));
    }
    Ok(())
}

/// What must survive a hand-over, compared after loading.
#[derive(PartialEq)]
struct StateSummary {
    /// Per status: UID, version, finished.
    versions: Vec<(String, Option<u64>, bool)>,
    written: Option<serde_json::Value>,
    pending: Vec<String>,
}

/// Moves what changed in `old` since its last save into `new`; returns the change
/// set's size.
pub fn move_changes(old: &mut dyn Plugin, new: &mut dyn Plugin) -> Result<usize, SwapError> {
    let changes = old.save_state_changes().map_err(SwapError::Source)?;
    new.apply_state_changes(&changes).map_err(SwapError::Refused)?;
    Ok(changes.len())
}
