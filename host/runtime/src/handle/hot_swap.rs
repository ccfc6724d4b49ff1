//! The handle's side of a hot swap: when the running plugin's state moves (see
//! [`crate::swap`] for how), what keeps serving meanwhile, and when calls are held.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::TARGET;
use super::shared::Shared;
use crate::plugin::{Plugin, PluginExt};
use crate::state_document::{Findings, HeldState};
use crate::swap::{SwapError, SwapReport, apply_checked, load_checked, repair_from_record};

/// Change sets moved before the pause at most, during a swap.
const PRECOPY_ROUNDS: usize = 4;
/// A change set this small moves during the pause without another round first.
const PRECOPY_DONE_BYTES: usize = 64 * 1024;

/// The longest a swap waits for a 0.2.0 plugin's syncs in flight to finish before it
/// gives up (the old plugin keeps serving).
pub const SWAP_DRAIN_MAX: Duration = Duration::from_secs(10);

/// Replaces the running plugin with `new`, carrying its state over (see
/// [`ManagerHandle::swap`](super::manager::ManagerHandle::swap)).
pub(super) fn swap(shared: &Shared, mut new: Box<dyn Plugin>) -> Result<SwapReport, SwapError> {
    let start = Instant::now();
    // The new plugin reaches by the running one's record of handed pods, from before
    // its first state: the old plugin's calls meanwhile reach it too.
    let handed = shared.plugin.lock().handed();
    if let Some(record) = &handed {
        new.carry_handed(Arc::clone(record));
    }
    // The bulk: saving it is one call like any other (others wait only for it);
    // loading it into the new plugin happens while the old one serves.
    // Records that change after this mark may be newer than the saved state: traffic,
    // not lies. The bulk is judged without them; the switch looks at them again.
    let view = shared.host_view.get();
    let mark = view.map_or(0, |view| view.change_mark());
    let state = shared.plugin.lock().save_state().map_err(SwapError::Source)?;
    let save = start.elapsed();
    // Held against the host's record before the new plugin sees it (while the old one
    // serves): a state that lies is repaired first, so that what is loaded is whole. At
    // the switch only what changed since is looked at again.
    let (state, mut held, early) = match view.zip(HeldState::from_state(&state)) {
        Some((view, mut held)) => {
            let pods = Arc::clone(&shared.plugin.lock().world().pod_manager);
            let findings = held.audit(view, &pods, handed.as_deref()).without(&view.changed_since(mark));
            if findings.is_empty() {
                (state, Some(held), Some((mark, findings)))
            } else {
                let repaired = findings.repair_document(&state).map_err(|e| findings.untrusted(e.to_string()))?;
                let held = HeldState::from_state(&repaired);
                (repaired, held, Some((mark, findings)))
            }
        }
        None => (state, None, None),
    };
    load_checked(new.as_mut(), &state)?;
    // Pre-copy, as live migration does: while moving the last change set took
    // long enough for much to change again, move the next one without pausing.
    for _ in 0..PRECOPY_ROUNDS {
        let changes = shared.plugin.lock().save_state_changes().map_err(SwapError::Source)?;
        apply_checked(new.as_mut(), &changes)?;
        held.as_mut().map(|held| held.apply_changes(&changes));
        if changes.len() <= PRECOPY_DONE_BYTES {
            break;
        }
    }
    let bulk = start.elapsed();

    // A 0.2.0 plugin's syncs in flight are not state: no new one is planned from
    // here on, and those in flight finish on the old plugin (calls keep being served
    // meanwhile). Requests still queued are in the state and go to the new plugin.
    let _gate = shared.runner.gate();
    if !shared.runner.wait_idle(Instant::now() + SWAP_DRAIN_MAX) {
        return Err(SwapError::Busy { pending: shared.runner.pending(), waited: SWAP_DRAIN_MAX });
    }
    let mut running = shared.plugin.lock();
    let paused = Instant::now();
    let changes = running.save_state_changes().map_err(SwapError::Source)?;
    apply_checked(new.as_mut(), &changes)?;
    // No call comes in now: the record is the one the old plugin's answers made.
    let repaired = match (view, held.as_mut(), early) {
        (Some(view), Some(held), Some((mark, mut earlier))) => {
            held.apply_changes(&changes);
            let findings = held.audit_again(view, &running.world().pod_manager, handed.as_deref(), &earlier, mark);
            earlier.merge(repair_from_record(new.as_mut(), findings)?);
            earlier
        }
        _ => Findings::default(),
    };
    if let Some(view) = view {
        new.observe(Arc::clone(view));
    }
    // The swap's checks made the new plugin keep its changes for a follower: none.
    new.stop_following();
    let from = running.contract();
    let to = new.contract();
    shared.split_syncs.store(to.has_split_syncs(), Ordering::SeqCst);
    // A cursor into the old plugin's batch means nothing to the new one.
    *shared.batch_resume.lock().unwrap_or_else(|p| p.into_inner()) = None;
    let old = std::mem::replace(&mut *running, new);
    let pause = paused.elapsed();
    drop(running);
    drop(old);
    let report = SwapReport {
        from,
        to,
        state_bytes: state.len(),
        changes_bytes: changes.len(),
        save,
        bulk,
        pause,
        total: start.elapsed(),
        repaired,
    };
    tracing::info!(target: TARGET, ?report, "plugin swapped");
    Ok(report)
}
