//! Differential runs that compare only what two plugins leave behind: the API server's
//! pods and each plugin's cache once the trace is quiet, not the calls that got there.
//!
//! Two plugins that write alike in the end but by other calls (logic v3's one PATCH
//! where v2 GETs and PATCHes, a repair one batch later) give different reports step by
//! step; what a node's users see is the API server's pods, and what the next sync
//! starts from is the cache. So this mode compares those two, after the fuzzer's
//! quiescence steps (faults removed, the queue drained, one batch sync, held calls
//! made, one more batch sync), and a difference is the finding, shrunk and written as any other.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::invariants::{Invariant, Violation, first_difference};
use k8s_openapi::api::core::v1::Pod;
use podstatus_replay::{Report, Step, Stepper, Trace};
use podstatus_runtime::{CallError, PluginExt};

/// What a run left behind.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalState {
    /// The API server's pods by `namespace/name`, each as the report has it without
    /// `metadata.resourceVersion` (which counts writes, not what they wrote).
    pub apiserver: BTreeMap<String, Value>,
    /// The plugin's cache by the UID asked: `{"version", "status"}`, or null when
    /// nothing is cached. None when the plugin faulted (it answers nothing more).
    pub cache: Option<BTreeMap<String, Value>>,
    /// The plugin's fault, if it faulted: `step: message`.
    pub fault: Option<String>,
}

impl FinalState {
    /// The state of a finished run: `report`'s API server and fault, and `cache` as
    /// [`read_cache`] read it before the run finished.
    pub fn of(report: &Report, cache: Option<BTreeMap<String, Value>>) -> FinalState {
        let apiserver = report
            .apiserver
            .iter()
            .filter_map(|pod| {
                let mut value = serde_json::to_value(pod).ok()?;
                if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.remove("resourceVersion");
                }
                let key = format!(
                    "{}/{}",
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    pod.metadata.name.as_deref().unwrap_or_default()
                );
                Some((key, value))
            })
            .collect();
        let fault = report.fault.as_ref().map(|f| format!("{}: {}", f.step, f.message));
        FinalState { apiserver, cache, fault }
    }
}

/// The plugin's cache for each of `uids`, as `get-pod-status` answers (the status
/// parsed, so that a difference names its field); None once the plugin faults.
pub fn read_cache<'a>(
    stepper: &mut Stepper<'_>,
    uids: impl IntoIterator<Item = &'a String>,
) -> Option<BTreeMap<String, Value>> {
    let mut cache = BTreeMap::new();
    for uid in uids {
        let entry = match stepper.plugin().get_pod_status(uid) {
            Ok(None) => Value::Null,
            Ok(Some(found)) => {
                let status = serde_json::from_str(&found.status).unwrap_or(Value::String(found.status));
                serde_json::json!({"version": found.version, "status": status})
            }
            Err(CallError::Fault { .. }) => return None,
            Err(e) => Value::String(format!("refused: {e}")),
        };
        cache.insert(uid.clone(), entry);
    }
    Some(cache)
}

/// One difference between two final states: where, and both sides (null for a side
/// that has nothing there).
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// `apiserver` or `cache`.
    pub place: Place,
    /// The pod's `namespace/name` (API server) or UID (cache).
    pub key: String,
    /// The first plugin's.
    pub a: Value,
    /// The second plugin's.
    pub b: Value,
}

/// Where a [`Difference`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// A pod in the API server.
    ApiServer,
    /// An entry of the plugin's cache.
    Cache,
}

impl Difference {
    /// The first field that differs, as a path from the place (`apiserver[ns/name].status.hostIP: ...`).
    pub fn describe(&self) -> String {
        let place = match self.place {
            Place::ApiServer => "apiserver",
            Place::Cache => "cache",
        };
        first_difference(&self.a, &self.b, &format!("{place}[{}]", self.key))
            .unwrap_or_else(|| format!("{place}[{}]", self.key))
    }
}

/// Every pod and cache entry whose final state differs, API server first, each in key
/// order.
pub fn differences(a: &FinalState, b: &FinalState) -> Vec<Difference> {
    let mut found = Vec::new();
    let mut each = |place: Place, x: &BTreeMap<String, Value>, y: &BTreeMap<String, Value>| {
        let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
        for key in keys {
            let (l, r) = (x.get(key).unwrap_or(&Value::Null), y.get(key).unwrap_or(&Value::Null));
            if l != r {
                found.push(Difference { place, key: key.clone(), a: l.clone(), b: r.clone() });
            }
        }
    };
    each(Place::ApiServer, &a.apiserver, &b.apiserver);
    let empty = BTreeMap::new();
    each(Place::Cache, a.cache.as_ref().unwrap_or(&empty), b.cache.as_ref().unwrap_or(&empty));
    found
}

/// The first difference between two final states that `accepted` does not accept, as a
/// [`Invariant::SameFinalState`] violation at `step` (the last step run); a fault on
/// one side only, or two different faults, is one too.
pub fn final_difference(
    a: &FinalState,
    b: &FinalState,
    step: usize,
    accepted: &dyn Fn(&Difference) -> bool,
) -> Option<Violation> {
    if a.fault != b.fault {
        let message = format!("faults differ: {:?} vs {:?}", a.fault, b.fault);
        return Some(Violation::new(Invariant::SameFinalState, step, message));
    }
    differences(a, b)
        .into_iter()
        .find(|d| !accepted(d))
        .map(|d| Violation::new(Invariant::SameFinalState, step, format!("the final states differ: {}", d.describe())))
}

/// The class of final-state differences between logic v3 (no GET before its writes)
/// and logic v2 (1.27's GET and PATCH) that no write without a GET can avoid: v3
/// computes a patch from the pod manager's copy of the pod where v2 computes it from
/// the API server's, so when that copy is not the API server's (a trace's starting
/// world or a `pod-manager-add` whose status is not the API server's; in a kubelet, a
/// watch that has not delivered the latest write yet), the patch names what the copy
/// lacks and misses what only the API server has.
///
/// Which differences these are is decided by a counterfactual run: the same trace
/// with copies that follow the API server from the start (the starting copies, and
/// each one the pod manager adds, replaced by the API server's of the same UID). A
/// difference at a pod or cache entry that the two plugins no longer have there is
/// explained by the stale copy; anything else is not.
#[derive(Clone, Debug)]
pub struct StaleCopies {
    /// Where the two plugins still differ with copies that follow the API server.
    still_differ: BTreeSet<(Place, String)>,
}

impl StaleCopies {
    /// The differences that remain between `a` and `b`, the two plugins' final states
    /// in the counterfactual run.
    pub fn between(a: &FinalState, b: &FinalState) -> StaleCopies {
        let still_differ = differences(a, b).into_iter().map(|d| (d.place, d.key)).collect();
        StaleCopies { still_differ }
    }

    /// Whether `difference` goes away with copies that follow the API server.
    pub fn explains(&self, difference: &Difference) -> bool {
        !self.still_differ.contains(&(difference.place, difference.key.clone()))
    }
}

/// The second class no write without a GET can avoid: a pod recreated in the API
/// server (same name, new UID) while logic v3 had nothing to send for the old one. v2
/// GETs at every sync, sees the new UID and drops the old pod's status; v3 learns of
/// the recreation only from a patch the API server refuses, and sends none when its
/// patch is empty, so the old pod's status stays cached (and unwritten anywhere) until
/// `remove-orphaned-statuses` clears it. So: a cache entry of `uid` that only `a` (v3)
/// keeps, whose pod's name the API server holds under another UID at the end on both
/// sides.
pub fn recreated_unseen(trace: &Trace, a: &FinalState, b: &FinalState, difference: &Difference) -> bool {
    if difference.place != Place::Cache || difference.a.is_null() || !difference.b.is_null() {
        return false;
    }
    let Some(name) = known_pods(trace).find(|p| p.metadata.uid.as_deref() == Some(&difference.key)).map(|p| {
        format!(
            "{}/{}",
            p.metadata.namespace.as_deref().unwrap_or_default(),
            p.metadata.name.as_deref().unwrap_or_default()
        )
    }) else {
        return false;
    };
    let recreated = |state: &FinalState| {
        state.apiserver.get(&name).and_then(|pod| pod["metadata"]["uid"].as_str()).is_some_and(|u| u != difference.key)
    };
    recreated(a) && recreated(b)
}

/// Every pod object a trace names: its starting worlds and the pods its steps put or
/// add.
fn known_pods(trace: &Trace) -> impl Iterator<Item = &Pod> {
    let stepped = trace.steps.iter().filter_map(|step| match step {
        Step::PodManagerAdd { pod } | Step::ApiserverPut { pod } => Some(pod),
        _ => None,
    });
    trace.apiserver.iter().chain(&trace.pod_manager).chain(stepped)
}
