//! Differential runs against Kubernetes' own status manager: the trace runs through
//! the plugin under test and through the upstream oracle of a release
//! ([`podstatus_upstream::Oracle`]), and the two reports are compared in the canonical
//! form that makes Go's and podstatus's JSON of the same thing one
//! ([`podstatus_upstream::canonical`]), with the calls of each sync step in pod order
//! (upstream's batch visits pods in Go's map order, which it leaves free).
//!
//! One class of difference is podstatus's by design and is left out of the traces
//! compared ([`without_split_messages`]): upstream cuts an over-long termination message
//! at a byte count and may split a UTF-8 character; its cache then holds the broken
//! bytes while the API server holds U+FFFD, so every later batch finds them apart and
//! reads the pod again, for ever. podstatus cuts at the character boundary before the
//! budget (docs/logic-versions.md, "Against upstream").

use std::collections::BTreeMap;

use podstatus_replay::{Trace, TraceError};
use podstatus_upstream::{Oracle, OracleError, canonical};
use serde_json::Value;

use crate::exec::{
    CheckOutcome, Differential, Options, Target, comparable, guarded, report_difference_with, with_quiescence,
};
use crate::invariants::{Invariant, Violation};

/// Runs `trace` (quiescence appended) through `target` and through `oracle`, and
/// returns the first step where their canonical reports differ, as `mode` compares
/// calls ([`Differential::UnreadWrites`] for a logic version that writes without a GET,
/// against upstream's GET and PATCH; [`Differential::FinalState`] for what the two
/// decided alone: the results and the API server's pods in the end, not the calls).
pub fn compare_with_upstream(
    trace: &Trace,
    target: &Target,
    oracle: &Oracle,
    mode: Differential,
) -> Result<CheckOutcome, TraceError> {
    let trace = without_split_messages(&comparable(trace, mode));
    let quiet_from = trace.steps.len();
    compare(&with_quiescence(&trace), Some(quiet_from), target, oracle, mode)
}

/// [`compare_with_upstream`] for a trace as it is (a fixture), without the fuzzer's
/// quiescence steps: the first difference, if any.
pub fn replay_against_upstream(
    trace: &Trace,
    target: &Target,
    oracle: &Oracle,
    mode: Differential,
) -> Result<Option<Violation>, TraceError> {
    let trace = without_split_messages(&comparable(trace, mode));
    Ok(compare(&trace, None, target, oracle, mode)?.violation)
}

fn compare(
    full: &Trace,
    quiet_from: Option<usize>,
    target: &Target,
    oracle: &Oracle,
    mode: Differential,
) -> Result<CheckOutcome, TraceError> {
    let ours = guarded(full, quiet_from.unwrap_or(usize::MAX), target, Options::default())?;
    let outcome = |violation| Ok(CheckOutcome { violation, steps: ours.steps * 2, known: BTreeMap::new() });
    if ours.violation.is_some() {
        return outcome(ours.violation.clone());
    }
    let theirs = match oracle.replay(full, quiet_from) {
        Ok(report) => report,
        Err(e @ OracleError::Refused { .. }) => {
            return outcome(Some(Violation::new(Invariant::SameReport, 0, e.to_string())));
        }
        Err(e) => return outcome(Some(Violation::new(Invariant::SameReport, 0, format!("the oracle failed: {e}")))),
    };
    let (mut ours, mut theirs) = (canonical(&ours.parsed, full), canonical(&theirs, full));
    if let Differential::FinalState(_) = mode {
        // What the two decided, not how they wrote it: the cache each step reads and
        // the API server's pods in the end.
        ours.calls.clear();
        theirs.calls.clear();
    }
    outcome(report_difference_with(&ours, &theirs, mode))
}

/// The kubelet's budget for all termination messages of a pod, shared by its containers
/// (`MaxPodTerminationMessageLogLength`).
const MESSAGE_BUDGET: usize = 12 * 1024;

/// `trace` with every termination message cut (at a character boundary) to the
/// smallest budget any pod of the trace gives a container, so that no normalisation
/// cuts one again, inside a character or not.
pub fn without_split_messages(trace: &Trace) -> Trace {
    let mut doc = trace.to_value();
    let containers = most_containers(&doc).max(1);
    let budget = MESSAGE_BUDGET / containers;
    let mut cut = false;
    cut_messages(&mut doc, budget, &mut cut);
    if !cut {
        return trace.clone();
    }
    let base_dir = trace.base_dir.clone();
    match Trace::from_value(doc) {
        Ok(shorter) => Trace { base_dir, guard_node: trace.guard_node.clone(), ..shorter },
        Err(_) => trace.clone(),
    }
}

/// The most containers (regular, init and ephemeral) any pod spec in `value` has.
fn most_containers(value: &Value) -> usize {
    match value {
        Value::Object(members) => {
            let here = ["containers", "initContainers", "ephemeralContainers"]
                .iter()
                .filter_map(|key| members.get(*key).and_then(Value::as_array).map(Vec::len))
                .sum::<usize>();
            members.values().map(most_containers).fold(here, usize::max)
        }
        Value::Array(items) => items.iter().map(most_containers).max().unwrap_or(0),
        // A step's status is JSON text.
        Value::String(text) if text.starts_with('{') => {
            serde_json::from_str::<Value>(text).map_or(0, |v| most_containers(&v))
        }
        _ => 0,
    }
}

fn cut_messages(value: &mut Value, budget: usize, cut: &mut bool) {
    match value {
        Value::Object(members) => {
            if let Some(Value::String(message)) = members.get_mut("terminated").and_then(|t| t.get_mut("message"))
                && message.len() > budget
            {
                let mut end = budget;
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                message.truncate(end);
                *cut = true;
            }
            members.values_mut().for_each(|v| cut_messages(v, budget, cut));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| cut_messages(v, budget, cut)),
        Value::String(text) if text.starts_with('{') => {
            if let Ok(mut inner) = serde_json::from_str::<Value>(text) {
                let mut inner_cut = false;
                cut_messages(&mut inner, budget, &mut inner_cut);
                if inner_cut {
                    *text = inner.to_string();
                    *cut = true;
                }
            }
        }
        _ => {}
    }
}
