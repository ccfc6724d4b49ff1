//! A `swap` step held against the host's record of what the plugin accepted, as the
//! agent's hot swap holds it: the running plugin's state is audited against the record
//! (fed by the trace's steps, see `Scene::note_accepted`) and repaired from it before
//! the new plugin loads it, so a plugin whose `save-state` leaves out, alters or
//! invents statuses hands over what the host recorded, not its word. The new plugin
//! reaches by the running one's record of handed pods (`move_bulk` carries it).

use podstatus_backends::{HostView, PodManager};
use podstatus_runtime::{
    Findings, HeldState, Plugin, PluginExt, SwapError, apply_checked, load_checked, move_bulk, move_changes,
    repair_from_record,
};
use serde_json::{Value, json};

/// Moves `old`'s state into `new`: held against `record` when there is one (repairs
/// returned), as before otherwise. A single-threaded driver's swap (replay's, the
/// hostile fuzzer's); a running node's is `ManagerHandle::swap`.
pub fn swap(
    old: &mut dyn Plugin,
    new: &mut dyn Plugin,
    record: Option<&HostView>,
    pods: &PodManager,
) -> Result<Findings, SwapError> {
    let Some(view) = record else {
        move_bulk(old, new)?;
        move_changes(old, new)?;
        return Ok(Findings::default());
    };
    let handed = old.handed();
    if let Some(record) = &handed {
        new.carry_handed(std::sync::Arc::clone(record));
    }
    let mark = view.change_mark();
    let state = old.save_state().map_err(SwapError::Source)?;
    let (state, mut held, mut findings) = match HeldState::from_state(&state) {
        Some(mut held) => {
            let findings = held.audit(view, pods, handed.as_deref());
            if findings.is_empty() {
                (state, Some(held), findings)
            } else {
                let repaired = findings.repair_document(&state).map_err(|e| findings.untrusted(e.to_string()))?;
                let held = HeldState::from_state(&repaired);
                (repaired, held, findings)
            }
        }
        None => (state, None, Findings::default()),
    };
    load_checked(new, &state)?;
    // What changed since the save moves too, and is held against the record again: a
    // change set can lie as a state document can.
    let changes = old.save_state_changes().map_err(SwapError::Source)?;
    apply_checked(new, &changes)?;
    if let Some(held) = held.as_mut() {
        held.apply_changes(&changes);
        let again = held.audit_again(view, pods, handed.as_deref(), &findings, mark);
        findings.merge(repair_from_record(new, again)?);
    }
    // The checks made the new plugin keep its changes for a follower: none.
    new.stop_following();
    if !findings.is_empty() {
        tracing::warn!(
            target: "podstatus::swap",
            pods = %findings.pods_shown(8),
            "the plugin's state disagreed with the record of accepted statuses: repaired from the record"
        );
    }
    Ok(findings)
}

/// A swap step's result: `{"swapped": true}`, with what was repaired from the record
/// when anything was (so an honest trace's report reads as before).
pub(crate) fn swapped(repaired: &Findings) -> Value {
    if repaired.is_empty() {
        return json!({ "swapped": true });
    }
    json!({
        "swapped": true,
        "repaired": {"missing": repaired.missing, "altered": repaired.altered, "invented": repaired.invented},
    })
}
