//! Differential runs against Kubernetes' own status manager: the trace runs through
//! the plugin under test and through the upstream oracle of a release
//! ([`podstatus_upstream::Oracle`]), and the two reports are compared in the canonical
//! form that makes Go's and podstatus's JSON of the same thing one
//! ([`podstatus_upstream::canonical`]), with the calls of each sync step in pod order
//! (upstream's batch visits pods in Go's map order, which it leaves free).

use std::collections::BTreeMap;

use podstatus_replay::{Trace, TraceError};
use podstatus_upstream::{Oracle, OracleError, canonical};

use crate::exec::{CheckOutcome, Differential, Options, Target, comparable, guarded, report_difference_with, with_quiescence};
use crate::invariants::{Invariant, Violation};

/// Runs `trace` (quiescence appended) through `target` and through `oracle`, and
/// returns the first step where their canonical reports differ, as `mode` compares
/// calls ([`Differential::UnreadWrites`] for a logic version that writes without a GET,
/// against upstream's GET and PATCH).
pub fn compare_with_upstream(
    trace: &Trace,
    target: &Target,
    oracle: &Oracle,
    mode: Differential,
) -> Result<CheckOutcome, TraceError> {
    let trace = &comparable(trace, mode);
    let full = with_quiescence(trace);
    let quiet_from = trace.steps.len();
    let ours = guarded(&full, quiet_from, target, Options::default())?;
    let outcome = |violation| Ok(CheckOutcome { violation, steps: ours.steps * 2, known: BTreeMap::new() });
    if ours.violation.is_some() {
        return outcome(ours.violation.clone());
    }
    let theirs = match oracle.replay(&full, Some(quiet_from)) {
        Ok(report) => report,
        Err(e @ OracleError::Refused { .. }) => {
            return outcome(Some(Violation::new(Invariant::SameReport, 0, e.to_string())));
        }
        Err(e) => return outcome(Some(Violation::new(Invariant::SameReport, 0, format!("the oracle failed: {e}")))),
    };
    outcome(report_difference_with(&canonical(&ours.parsed, &full), &canonical(&theirs, &full), mode))
}
