//! The documented classes of difference between a logic version that writes without a
//! GET (v3, v4: one PATCH per status version) and Kubernetes' own status manager, which
//! reads the pod before every write (`syncPod`: `Get`, `mergePodStatus` over the status
//! read, `PatchPodStatus`). Each class is what that GET shows and nothing else does, so
//! the one-call design cannot avoid it (docs/logic-versions.md, "Against upstream").
//!
//! A difference is put in a class by a counterfactual run, never by its look: the trace
//! is changed so that the class's cause is gone, on both sides alike, and run again
//! through the plugin and through upstream; the difference is explained when nothing
//! differs any more. Classes combine (a trace may meet two), so the smallest set of
//! counterfactuals that together leave no difference is the explanation; a trace that
//! no set explains is a difference still to be understood.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::Pod;
use podstatus_replay::{Call, FailVerb, Report, Step, Trace};

/// A class of difference a write without a GET cannot avoid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnreadClass {
    /// The pod manager's copy of a pod is not the API server's (it lacks a field, a
    /// condition or a reason the API server holds): the plugin computes its patch from
    /// the copy and cannot clear what the copy does not show; upstream computes it from
    /// the status it read. Counterfactual: copies that follow the API server from the
    /// start, as a watch with no delay gives them.
    StaleCopy,
    /// A pod recreated under its name (a new UID) while the plugin had nothing to send
    /// or its write failed: upstream's GET sees the new UID and drops the cached status
    /// (`syncPod`: `translatedUID != uid`, then `deletePodStatus`); the plugin keeps it
    /// until a refused patch or `remove-orphaned-statuses` tells it. Counterfactual: the
    /// recreation is a removal.
    RecreatedUnseen,
    /// An injected write fault meets a PATCH the plugin sends to a pod the API server no
    /// longer has, where upstream's GET got the 404 and sent nothing; the next write,
    /// upstream's, meets the fault instead. Counterfactual: no write faults.
    WriteFaultElsewhere,
}

impl UnreadClass {
    /// Every class, in the order counterfactuals are tried.
    pub const ALL: [UnreadClass; 3] =
        [UnreadClass::StaleCopy, UnreadClass::RecreatedUnseen, UnreadClass::WriteFaultElsewhere];

    /// The stable name (the one `tests/fixtures/upstream/v4-vs-1.35-seeds.txt` uses).
    pub fn name(self) -> &'static str {
        match self {
            UnreadClass::StaleCopy => "stale-copy",
            UnreadClass::RecreatedUnseen => "recreated-unseen",
            UnreadClass::WriteFaultElsewhere => "write-faults",
        }
    }

    /// Its shrunk example, under `tests/fixtures/upstream/`.
    pub fn fixture(self) -> &'static str {
        match self {
            UnreadClass::StaleCopy => "v4-stale-copy.trace.json",
            UnreadClass::RecreatedUnseen => "v4-recreated-unseen.trace.json",
            UnreadClass::WriteFaultElsewhere => "v4-write-faults.trace.json",
        }
    }

    /// The class of a name.
    pub fn from_name(name: &str) -> Option<UnreadClass> {
        UnreadClass::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether `trace` has this class's cause at all (a counterfactual that changes
    /// nothing explains nothing).
    pub(crate) fn applies(self, trace: &Trace) -> bool {
        match self {
            UnreadClass::StaleCopy => true,
            UnreadClass::RecreatedUnseen => !recreations(trace).is_empty(),
            UnreadClass::WriteFaultElsewhere => trace.steps.iter().any(is_write_fault),
        }
    }

    /// Whether the two runs show this class's evidence, so that a counterfactual that
    /// happens to hide a difference does not explain it: for a recreation, upstream
    /// read the recreated pod at a step where the plugin made no call for it, before
    /// the plugin learned of it (a write under the old UID refused); for write faults, a write of the plugin failed (a fault injected
    /// with any error is used up by it, even on a pod the API server no longer has) at
    /// a step where upstream sent no such write (its GET ended that sync).
    pub(crate) fn seen_in(self, trace: &Trace, ours: &Report, theirs: &Report) -> bool {
        match self {
            UnreadClass::StaleCopy => true,
            UnreadClass::RecreatedUnseen => !unseen_recreations(trace, ours, theirs).is_empty(),
            UnreadClass::WriteFaultElsewhere => ours.calls.iter().any(|write| {
                is_write(write)
                    && !matches!(write.outcome, "ok" | "conflict")
                    && !theirs.calls.iter().any(|other| {
                        is_write(other)
                            && other.step == write.step
                            && (&other.namespace, &other.name) == (&write.namespace, &write.name)
                            && precondition(other) == precondition(write)
                    })
            }),
        }
    }

    /// `trace` without this class's cause, for the trace-shaped counterfactuals (the
    /// stale copy's is a way of running, [`UnreadClass::StaleCopy`] changes nothing
    /// here). Only the recreations upstream saw and the plugin did not are undone.
    pub(crate) fn counterfactual(self, trace: &mut Trace, ours: &Report, theirs: &Report) {
        match self {
            UnreadClass::StaleCopy => {}
            UnreadClass::RecreatedUnseen => {
                for (index, (namespace, name), _) in unseen_recreations(trace, ours, theirs) {
                    trace.steps[index] = Step::ApiserverDelete { namespace, name };
                }
            }
            UnreadClass::WriteFaultElsewhere => {
                for step in &mut trace.steps {
                    if is_write_fault(step) {
                        // A no-op in its place keeps the step indices.
                        *step = Step::AdvanceClock { ms: 0 };
                    }
                }
            }
        }
    }
}

impl fmt::Display for UnreadClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every non-empty set of classes, smallest first (then in [`UnreadClass::ALL`]'s
/// order): the order explanations are tried in.
pub(crate) fn candidate_sets() -> Vec<BTreeSet<UnreadClass>> {
    let n = UnreadClass::ALL.len();
    let mut sets: Vec<BTreeSet<UnreadClass>> = (1u32..1 << n)
        .map(|bits| {
            UnreadClass::ALL.into_iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, c)| c).collect()
        })
        .collect();
    sets.sort_by_key(BTreeSet::len);
    sets
}

fn is_write_fault(step: &Step) -> bool {
    matches!(step, Step::Fail { verb: FailVerb::Write, .. })
}

/// The [`recreations`] upstream saw and the plugin did not: upstream read the name
/// after the recreation at a step where the plugin made no call for it, before any
/// write of the plugin under the old UID was refused.
fn unseen_recreations(trace: &Trace, ours: &Report, theirs: &Report) -> Vec<(usize, (String, String), String)> {
    let mut found = recreations(trace);
    found.retain(|(at, (namespace, name), old_uid)| {
        let of = |call: &Call| (&call.namespace, &call.name) == (namespace, name) && call.step > *at;
        let learned = ours
            .calls
            .iter()
            .filter(|c| of(c) && c.outcome == "conflict" && precondition(c) == Some(old_uid.as_str()))
            .map(|c| c.step)
            .min()
            .unwrap_or(usize::MAX);
        theirs.calls.iter().any(|read| {
            of(read)
                && read.verb == "get"
                && read.outcome == "ok"
                && read.step < learned
                && !ours.calls.iter().any(|c| of(c) && c.step == read.step)
        })
    });
    found
}

fn is_write(call: &Call) -> bool {
    matches!(call.verb, "patch" | "update")
}

fn precondition(call: &Call) -> Option<&str> {
    call.precondition_uid.as_ref().and_then(Option::as_deref)
}

/// The `apiserver-put` steps that put a pod under a name the trace held under another
/// UID before (its starting API server, or an earlier put): recreations, by index, with
/// the name and the UID it replaced.
fn recreations(trace: &Trace) -> Vec<(usize, (String, String), String)> {
    let key =
        |pod: &Pod| (pod.metadata.namespace.clone().unwrap_or_default(), pod.metadata.name.clone().unwrap_or_default());
    let mut held: BTreeMap<(String, String), Option<String>> =
        trace.apiserver.iter().map(|pod| (key(pod), pod.metadata.uid.clone())).collect();
    let mut found = Vec::new();
    for (index, step) in trace.steps.iter().enumerate() {
        if let Step::ApiserverPut { pod } = step {
            let name = key(pod);
            if let Some(Some(before)) = held.get(&name)
                && pod.metadata.uid.as_ref() != Some(before)
            {
                found.push((index, name.clone(), before.clone()));
            }
            held.insert(name, pod.metadata.uid.clone());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_tried_smallest_first() {
        let sets = candidate_sets();
        assert_eq!(sets.len(), 7);
        assert!(sets.windows(2).all(|w| w[0].len() <= w[1].len()));
        assert_eq!(sets[0], BTreeSet::from([UnreadClass::StaleCopy]));
    }

    #[test]
    fn names_read_back() {
        for class in UnreadClass::ALL {
            assert_eq!(UnreadClass::from_name(class.name()), Some(class));
        }
    }
}
