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
//!
//! Against a logic that writes without a GET (`--final-state`), a difference that a
//! documented class explains ([`crate::UnreadClass`], found by counterfactual runs) is
//! not a violation; the outcome names the classes.

use podstatus_replay::{Report, Trace, TraceError};
use podstatus_upstream::{Oracle, OracleError, canonical};
use serde_json::Value;

use crate::exec::{
    CheckOutcome, Differential, Options, Target, comparable, guarded, report_difference_with, with_quiescence,
};
use crate::invariants::{Invariant, Violation};
use crate::unread_classes::{UnreadClass, candidate_sets};

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
/// quiescence steps: the first difference not explained, if any, and the documented
/// classes that explain one.
pub fn replay_against_upstream(
    trace: &Trace,
    target: &Target,
    oracle: &Oracle,
    mode: Differential,
) -> Result<CheckOutcome, TraceError> {
    let trace = without_split_messages(&comparable(trace, mode));
    compare(&trace, None, target, oracle, mode)
}

fn compare(
    full: &Trace,
    quiet_from: Option<usize>,
    target: &Target,
    oracle: &Oracle,
    mode: Differential,
) -> Result<CheckOutcome, TraceError> {
    let run = |trace: &Trace, watched_copies: bool| run_both(trace, quiet_from, target, oracle, watched_copies);
    let (steps, found) = match run(full, false)? {
        Compared::Broken { steps, violation } => {
            return Ok(CheckOutcome { violation: Some(violation), steps, ..CheckOutcome::default() });
        }
        Compared::Reports { steps, mut ours, mut theirs } => {
            (steps, (difference(&mut ours, &mut theirs, mode), ours, theirs))
        }
    };
    let (violation, ours, theirs) = found;
    let mut outcome = CheckOutcome { violation, steps, ..CheckOutcome::default() };
    let unread = matches!(mode, Differential::FinalState(rules) if rules.unread());
    if outcome.violation.is_some() && unread {
        for classes in candidate_sets() {
            if !classes.iter().all(|c| c.applies(full) && c.seen_in(full, &ours, &theirs)) {
                continue;
            }
            let mut counterfactual = full.clone();
            classes.iter().for_each(|c| c.counterfactual(&mut counterfactual, &ours, &theirs));
            let watched = classes.contains(&UnreadClass::StaleCopy);
            // A counterfactual the replay refuses (a later step names the pod it
            // removed) explains nothing.
            let Ok(Compared::Reports { steps, mut ours, mut theirs }) = run(&counterfactual, watched) else {
                continue;
            };
            outcome.steps += steps;
            if difference(&mut ours, &mut theirs, mode).is_none() {
                outcome.violation = None;
                outcome.explained = classes;
                break;
            }
        }
    }
    Ok(outcome)
}

/// The first difference of two canonical reports as `mode` compares them.
fn difference(ours: &mut Report, theirs: &mut Report, mode: Differential) -> Option<Violation> {
    if let Differential::FinalState(_) = mode {
        // What the two decided, not how they wrote it: the cache each step reads and
        // the API server's pods in the end (the calls are put back for the classes).
        let calls = (std::mem::take(&mut ours.calls), std::mem::take(&mut theirs.calls));
        let found = report_difference_with(ours, theirs, mode);
        (ours.calls, theirs.calls) = calls;
        return found;
    }
    report_difference_with(ours, theirs, mode)
}

/// One trace run through the plugin and through upstream.
enum Compared {
    /// The two reports in canonical form, and the steps run.
    Reports { steps: usize, ours: Report, theirs: Report },
    /// The plugin broke (a fault, a panic) or the oracle refused the trace.
    Broken { steps: usize, violation: Violation },
}

/// Runs `full` through `target` and `oracle`; with `watched_copies`, in the
/// counterfactual world of copies that follow the API server (for both alike).
fn run_both(
    full: &Trace,
    quiet_from: Option<usize>,
    target: &Target,
    oracle: &Oracle,
    watched_copies: bool,
) -> Result<Compared, TraceError> {
    let options = Options { watched_copies, ..Options::default() };
    let ours = guarded(full, quiet_from.unwrap_or(usize::MAX), target, options)?;
    let steps = ours.steps * 2;
    if let Some(violation) = ours.violation {
        return Ok(Compared::Broken { steps, violation });
    }
    let theirs = match oracle.replay_with(full, quiet_from, watched_copies) {
        Ok(report) => report,
        Err(e @ OracleError::Refused { .. }) => {
            return Ok(Compared::Broken { steps, violation: Violation::new(Invariant::SameReport, 0, e.to_string()) });
        }
        Err(e) => {
            let violation = Violation::new(Invariant::SameReport, 0, format!("the oracle failed: {e}"));
            return Ok(Compared::Broken { steps, violation });
        }
    };
    Ok(Compared::Reports { steps, ours: canonical(&ours.parsed, full), theirs: canonical(&theirs, full) })
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
