//! Moving a running status manager's state into another plugin: hot swap.
//!
//! No plugin host we know of moves live state between versions of a component; here
//! the state travels in the plugin's own versioned format. The bulk (`save-state`,
//! `load-state`) moves while the old plugin keeps serving; only what changed since
//! (`save-state-changes`, `apply-state-changes`) moves while calls are held, so the
//! pause follows the traffic during the swap, not the size of the state.

use std::time::Duration;

use crate::bindings::Contract;
use crate::plugin::{CallError, Plugin, PluginExt};
use crate::state_document::{ChangesEntries, Entries, Findings};

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
    /// The running plugin's state does not hold the statuses the host recorded it
    /// accepted (left out, altered, or of pods never handed over: see [`Findings`]),
    /// and the host's record could not be restored into the new plugin.
    #[error(
        "the running plugin's state disagrees with the host's record of accepted statuses for pods {pods}, and the \
         record could not be restored into the new plugin: {reason}"
    )]
    Untrusted {
        /// The pods whose statuses disagree (at most eight named).
        pods: String,
        /// Why the record could not be restored.
        reason: String,
    },
    /// The running plugin's syncs in flight did not finish in time (the API server is
    /// slow or unreachable); nothing was handed over.
    #[error("{pending} syncs of the running plugin were still in flight after {waited:?}")]
    Busy {
        /// Syncs still in flight or waiting.
        pending: usize,
        /// How long the swap waited for them.
        waited: std::time::Duration,
    },
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
    /// Where the old plugin's state disagreed with the host's record of accepted
    /// statuses, repaired from the record in the new plugin (empty for an honest
    /// plugin, and when the handle observes no host view).
    pub repaired: Findings,
}

/// Moves the bulk of `old`'s state into `new` and checks that `new` holds it; returns
/// the document's size. `new` reaches by `old`'s record of handed pods from here on
/// ([`Plugin::carry_handed`]). `old` keeps serving afterwards; what changes from here
/// on moves with [`move_changes`].
pub fn move_bulk(old: &mut dyn Plugin, new: &mut dyn Plugin) -> Result<usize, SwapError> {
    if let Some(record) = old.handed() {
        new.carry_handed(record);
    }
    let state = old.save_state().map_err(SwapError::Source)?;
    load_checked(new, &state)?;
    Ok(state.len())
}

/// Loads `state` into `new` and checks, from `new`'s own saved state, that it took
/// every status (its body, its version and whether it is finished, `podIsFinished`),
/// every written version and every pending request: a plugin that answers "ok" and
/// drops or alters the state must not take over. The documents are compared entry by
/// entry, each entry kept as a slice of its document (no tree of the whole state is
/// built; only a status whose text differs is parsed, alone, to compare it as JSON).
pub fn load_checked(new: &mut dyn Plugin, state: &str) -> Result<(), SwapError> {
    new.load_state(state).map_err(SwapError::Refused)?;
    let held = new.save_state().map_err(SwapError::Refused)?;
    let expected: Entries<'_> = serde_json::from_str(state).map_err(|_| unreadable("save-state", "the state"))?;
    let actual: Entries<'_> =
        serde_json::from_str(&held).map_err(|_| unreadable("save-state", "the new plugin's state"))?;
    match expected.difference(&actual) {
        Some(difference) => {
            Err(invalid_state("load-state", format!("does not hold the state it was given: {difference}")))
        }
        None => Ok(()),
    }
}

/// Applies `changes` to `new` and checks, from `new`'s own change set, that it holds
/// each changed entry as given (and removed each removed one).
pub fn apply_checked(new: &mut dyn Plugin, changes: &str) -> Result<(), SwapError> {
    new.apply_state_changes(changes).map_err(SwapError::Refused)?;
    let held = new.save_state_changes().map_err(SwapError::Refused)?;
    let call = "save-state-changes";
    let expected: ChangesEntries<'_> = serde_json::from_str(changes).map_err(|_| unreadable(call, "the change set"))?;
    let actual: ChangesEntries<'_> =
        serde_json::from_str(&held).map_err(|_| unreadable(call, "the new plugin's changes"))?;
    match expected.patch.difference(&actual.patch) {
        Some(difference) => {
            Err(invalid_state("apply-state-changes", format!("does not hold the changes it was given: {difference}")))
        }
        None => Ok(()),
    }
}

/// The new plugin's `call` answered a document that is not the state format.
fn unreadable(call: &'static str, what: &str) -> SwapError {
    SwapError::Refused(CallError::Rejected {
        call,
        error: crate::bindings::ManagerError::InvalidState(format!("{what} cannot be read back")),
    })
}

/// The new plugin answered `call` with ok but does not hold what it was given.
fn invalid_state(call: &'static str, what: String) -> SwapError {
    SwapError::Refused(CallError::Rejected {
        call,
        error: crate::bindings::ManagerError::InvalidState(format!("the new plugin answered ok but {what}")),
    })
}

/// Repairs `new` from the host's record where `findings` (what it was given, held
/// against the record: [`HeldState::audit`](crate::HeldState::audit)) say they disagree
/// (the state document's audit says what counts, and why it is repaired rather than
/// refused). Returns what was repaired.
pub fn repair_from_record(new: &mut dyn Plugin, findings: Findings) -> Result<Findings, SwapError> {
    if findings.is_empty() {
        return Ok(findings);
    }
    let repair = findings.repair().map_err(|e| findings.untrusted(e.to_string()))?;
    apply_checked(new, &repair).map_err(|e| findings.untrusted(e.to_string()))?;
    tracing::warn!(
        target: "podstatus::swap",
        missing = findings.missing.len(),
        altered = findings.altered.len(),
        invented = findings.invented.len(),
        pods = %findings.pods_shown(8),
        "the plugin's state disagreed with the host's record of accepted statuses: repaired from the record"
    );
    Ok(findings)
}

impl Findings {
    /// The swap's refusal when these findings cannot be repaired, for `reason`.
    pub fn untrusted(&self, reason: String) -> SwapError {
        SwapError::Untrusted { pods: self.pods_shown(8), reason }
    }
}

/// Moves what changed in `old` since its last save into `new`; returns the change
/// set's size.
pub fn move_changes(old: &mut dyn Plugin, new: &mut dyn Plugin) -> Result<usize, SwapError> {
    let changes = old.save_state_changes().map_err(SwapError::Source)?;
    apply_checked(new, &changes)?;
    Ok(changes.len())
}
