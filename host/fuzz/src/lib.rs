//! `podstatus fuzz`: random valid traces against the status manager, checked against
//! invariants after every step, in the sandbox or natively; a violation is shrunk to a
//! small trace and written where `podstatus replay` can run it.
//!
//! - [`generate`]: seeded, structure-aware traces (the replay's own [`Trace`] type).
//! - [`invariants`]: what must hold after every step, and at the end.
//! - [`exec`]: one trace run under the invariants (and differential runs).
//! - [`shrink`]: delta debugging of a failing trace.
//! - [`final_state`]: the differential that compares only what two plugins leave
//!   behind.
//! - [`hostile`]: the hostile-plugin fuzzer, a guest drawing its answers at random,
//!   every write that reaches the API server held against what the host handed.
//!
//! The invariants, with their names in findings:
//! (a) `version-monotonic`, (b) `write-own-pod`, (c) `delete-precondition`,
//! (d) `no-rollback`, (e) `quiescence`, (f) `no-fault`, (g) `deterministic`; and
//! `same-report` for the differential mode, `same-final-state` for its final-state
//! variant.
//!
//! (b) and (d) tell which pod a write belongs to by its content: the status written
//! must be one the plugin had cached. That is logic v1's contract (it writes its cached
//! status as it is). Logic v2 merges the API server's status into what it writes, as
//! Kubernetes 1.27 does (a finished pod is written not ready, a terminal phase waits
//! while containers may run), so against v2 these invariants and (e) report those
//! designed differences; compare the versions with `--against` instead.

mod byte_entropy;
mod exec;
mod final_state;
mod generate;
pub mod hostile;
mod invariants;
mod kubelet_135;
mod shrink;
mod unread_classes;
mod upstream;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub use byte_entropy::ByteEntropy;
pub use exec::{
    CheckOutcome, Differential, FinalRules, PluginMaker, Target, check_trace, compare_targets, compare_targets_with,
    report_difference, report_difference_with,
};
pub use final_state::{Difference, FinalState, Place, StaleCopies, differences, final_difference, recreated_unseen};
pub use generate::{GenConfig, generate, generate_with};
pub use invariants::{Invariant, KnownIssue, Violation, WriteSemantics};
pub use shrink::{ShrinkBudget, Shrunk, shrink};
pub use unread_classes::UnreadClass;
pub use upstream::{compare_with_upstream, replay_against_upstream, without_split_messages};

use podstatus_replay::{Trace, TraceError};
use podstatus_runtime::{Limits, RuntimeConfig};
use podstatus_upstream::Oracle;
use std::sync::Arc;

/// Fuel per plugin call in the sandbox: far above what any call of a fuzz trace needs,
/// so that only a runaway loop runs out, and deterministically (the same trace always
/// runs out at the same instruction).
pub const CALL_FUEL: u64 = 2_000_000_000;

/// The runtime configuration the fuzzer runs components with: fuel per call.
pub fn runtime_config(cache_dir: Option<PathBuf>) -> RuntimeConfig {
    RuntimeConfig {
        cache_dir,
        limits: Limits { call_fuel: Some(CALL_FUEL), ..Limits::default() },
        ..RuntimeConfig::default()
    }
}

/// What a differential campaign compares the plugin under test with.
#[derive(Clone)]
pub enum Reference {
    /// Another plugin (or native logic).
    Plugin(Target),
    /// Kubernetes' own status manager of a release, through the upstream oracle.
    Upstream(Arc<Oracle>),
}

impl Reference {
    /// Whether the reference can run traces that script interleavings (upstream's
    /// calls cannot be held).
    fn can_interleave(&self) -> bool {
        match self {
            Reference::Plugin(target) => target.can_interleave(),
            Reference::Upstream(_) => false,
        }
    }
}

/// When a campaign stops.
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// After this many traces.
    Traces(u64),
    /// After this much time.
    Duration(Duration),
}

/// A fuzzing campaign.
#[derive(Clone)]
pub struct Campaign {
    /// Trace `i` of the campaign is generated from seed `seed + i`.
    pub seed: u64,
    /// When to stop (if no violation stops it first).
    pub limit: Limit,
    /// Steps per trace.
    pub steps: usize,
    /// The plugin under test.
    pub target: Target,
    /// Differential mode: what to compare with (instead of the invariants).
    pub against: Option<Reference>,
    /// How the differential compares calls.
    pub differential: Differential,
    /// Fail on [`KnownIssue`]s too.
    pub strict: bool,
    /// How much shrinking a violation may cost.
    pub shrink: ShrinkBudget,
    /// Count the traces that break the check and go on, instead of stopping at the
    /// first and shrinking it: what measuring how often two versions differ needs.
    pub tally: bool,
}

/// A violation found, shrunk.
#[derive(Debug)]
pub struct Finding {
    /// The seed of the failing trace (`--seed` it with `--traces 1` to see it again).
    pub seed: u64,
    /// Steps per trace of the campaign.
    pub steps_per_trace: usize,
    /// The violation of the trace as generated.
    pub original: Violation,
    /// Its length.
    pub original_steps: usize,
    /// The shrunk trace and its violation.
    pub shrunk: Shrunk,
}

/// What a campaign did.
#[derive(Debug)]
pub struct Summary {
    /// Traces run.
    pub traces: u64,
    /// Steps run (each trace's steps and quiescence steps, in every run of it).
    pub steps: u64,
    /// Time taken.
    pub elapsed: Duration,
    /// The violation that ended the campaign, shrunk.
    pub finding: Option<Finding>,
    /// Known issues seen (not failed on): in how many traces each.
    pub known: BTreeMap<KnownIssue, u64>,
    /// In a [`Campaign::tally`]: each trace that broke the check, by seed, with its
    /// violation (unshrunk).
    pub tallied: Vec<(u64, Violation)>,
    /// Against upstream, for a logic that writes without a GET: the traces whose
    /// difference a documented class explains (not failed on), by seed, with the
    /// classes.
    pub explained: Vec<(u64, BTreeSet<UnreadClass>)>,
}

impl Summary {
    /// Traces per second of the campaign.
    pub fn traces_per_second(&self) -> f64 {
        self.traces as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Steps per second of the campaign.
    pub fn steps_per_second(&self) -> f64 {
        self.steps as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// A bug of the fuzzer itself: the replay refused a trace the generator made.
#[derive(Debug, thiserror::Error)]
#[error("seed {seed}: the replay refused a generated trace: {source}")]
pub struct GeneratorBug {
    /// The seed of the refused trace.
    pub seed: u64,
    /// Why the replay refused it.
    #[source]
    pub source: TraceError,
}

/// Why a finding file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FindingError {
    /// Not JSON.
    #[error("not JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// Not a trace the replay runs.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// Checks one trace: the invariants, or in differential mode the other plugin's report.
pub fn check(
    trace: &Trace,
    target: &Target,
    against: Option<(&Reference, Differential)>,
    strict: bool,
) -> Result<CheckOutcome, TraceError> {
    match against {
        Some((Reference::Plugin(other), mode)) => compare_targets_with(trace, target, other, mode),
        Some((Reference::Upstream(oracle), mode)) => {
            let mut outcome = compare_with_upstream(trace, target, oracle, mode)?;
            if strict && !outcome.explained.is_empty() {
                let classes: Vec<&str> = outcome.explained.iter().map(|c| c.name()).collect();
                let message = format!("a documented class of difference (--strict): {}", classes.join(", "));
                outcome.violation = Some(Violation::new(Invariant::SameReport, 0, message));
            }
            Ok(outcome)
        }
        None => check_trace(trace, target, strict),
    }
}

/// Runs a campaign until its limit or the first violation (which is then shrunk).
/// `progress` is called now and then with the running totals. `Err` only when the
/// generator made a trace the replay refuses (a bug of the fuzzer itself).
pub fn run_campaign(campaign: &Campaign, progress: &mut dyn FnMut(&Summary)) -> Result<Summary, GeneratorBug> {
    let started = Instant::now();
    let mut summary = Summary {
        traces: 0,
        steps: 0,
        elapsed: Duration::ZERO,
        finding: None,
        known: BTreeMap::new(),
        tallied: Vec::new(),
        explained: Vec::new(),
    };
    // Interleavings only where every plugin compared can hold its calls.
    let interleave =
        campaign.target.can_interleave() && campaign.against.as_ref().is_none_or(Reference::can_interleave);
    let config = GenConfig { steps: campaign.steps, interleave };
    let mut last_progress = Instant::now();
    loop {
        match campaign.limit {
            Limit::Traces(n) if summary.traces >= n => break,
            Limit::Duration(d) if started.elapsed() >= d => break,
            _ => {}
        }
        let seed = campaign.seed.wrapping_add(summary.traces);
        let trace = generate(seed, &config);
        let against = campaign.against.as_ref().map(|t| (t, campaign.differential));
        let outcome = check(&trace, &campaign.target, against, campaign.strict)
            .map_err(|source| GeneratorBug { seed, source })?;
        summary.traces += 1;
        summary.steps += outcome.steps as u64;
        for issue in outcome.known.keys() {
            *summary.known.entry(*issue).or_default() += 1;
        }
        if !outcome.explained.is_empty() {
            summary.explained.push((seed, outcome.explained));
        }
        match outcome.violation {
            Some(violation) if campaign.tally => summary.tallied.push((seed, violation)),
            Some(violation) => {
                summary.elapsed = started.elapsed();
                let shrunk = shrink_violation(
                    &trace,
                    violation.clone(),
                    &campaign.target,
                    against,
                    campaign.strict,
                    campaign.shrink,
                );
                summary.finding = Some(Finding {
                    seed,
                    steps_per_trace: campaign.steps,
                    original: violation,
                    original_steps: trace.steps.len(),
                    shrunk,
                });
                return Ok(summary);
            }
            None => {}
        }
        if last_progress.elapsed() >= Duration::from_secs(5) {
            last_progress = Instant::now();
            summary.elapsed = started.elapsed();
            progress(&summary);
        }
    }
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Shrinks a failing trace under the same check that found it.
pub fn shrink_violation(
    trace: &Trace,
    violation: Violation,
    target: &Target,
    against: Option<(&Reference, Differential)>,
    strict: bool,
    budget: ShrinkBudget,
) -> Shrunk {
    let mut recheck = |t: &Trace| check(t, target, against, strict).ok().and_then(|o| o.violation);
    shrink(&trace.to_value(), violation, &mut recheck, budget)
}

/// The file of a finding: the shrunk trace with the quiescence steps written out
/// (`quiescence_from_step` says where they start; the fuzzer removed any fault still
/// armed before them), and the fuzzer's keys in front, which `podstatus replay`
/// ignores.
pub fn finding_document(finding: &Finding, plugins: &[String]) -> Value {
    let mut doc = finding.shrunk.doc.clone();
    let quiet_from = doc["steps"].as_array().map_or(0, Vec::len);
    if let Some(steps) = doc["steps"].as_array_mut() {
        steps.extend(exec::quiescence_steps().iter().map(|step| serde_json::to_value(step).unwrap_or(Value::Null)));
    }
    let mut extra = Map::new();
    extra.insert(
        "description".into(),
        format!(
            "Found by `podstatus fuzz` (seed {}, {} steps per trace) and shrunk from {} steps; originally: {}",
            finding.seed, finding.steps_per_trace, finding.original_steps, finding.original
        )
        .into(),
    );
    extra.insert("steps_per_trace".into(), finding.steps_per_trace.into());
    extra.insert("quiescence_from_step".into(), quiet_from.into());
    if !plugins.is_empty() {
        extra.insert("plugins".into(), json!(plugins));
    }
    shrink::finding_document(&doc, &finding.shrunk.violation, Some(finding.seed), extra)
}

/// Writes a finding into `dir` (created if need be) and returns the file's path.
pub fn write_finding(finding: &Finding, plugins: &[String], dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{}-seed-{}.trace.json", finding.shrunk.violation.invariant, finding.seed));
    let mut text = serde_json::to_string_pretty(&finding_document(finding, plugins)).map_err(std::io::Error::other)?;
    text.push('\n');
    std::fs::write(&path, text)?;
    Ok(path)
}

/// The trace of a finding file, without its quiescence steps (which the fuzzer's
/// checks add back), and the violation it records.
pub fn read_finding(text: &str) -> Result<(Trace, Option<Violation>), FindingError> {
    let mut doc: Value = serde_json::from_str(text).map_err(FindingError::Json)?;
    if let Some(from) = doc.get("quiescence_from_step").and_then(Value::as_u64)
        && let Some(steps) = doc.get_mut("steps").and_then(Value::as_array_mut)
    {
        steps.truncate(from as usize);
    }
    let violation = doc.get("violation").and_then(|v| {
        let known = v.get("known_issue").and_then(Value::as_str).and_then(KnownIssue::from_name);
        Some(Violation {
            known,
            ..Violation::new(
                Invariant::from_name(v.get("invariant")?.as_str()?)?,
                v.get("step")?.as_u64()? as usize,
                v.get("message").and_then(Value::as_str).unwrap_or_default(),
            )
        })
    });
    Ok((Trace::from_value(doc)?, violation))
}
