//! What the periodic batch learnt from the pods it read, so that a pod read again in the
//! same bytes is not parsed again.
//!
//! Every batch asks, for every cached status that is written, whether its pod can be
//! deleted and whether the API server's copy drifted from the cache. Both answers come
//! from the pod manager's pod (and a static pod's mirror pod), read through the
//! imports as JSON: a parse of the pod, then of its status, in the sandbox, for every
//! pod every ten seconds, which made the batch the largest cost of a node with a
//! hundred idle pods. Yet both answers are functions of the bytes read:
//!
//! - a pod the API server is not deleting (or a mirror pod) cannot be deleted, whatever
//!   else it says (every version's `canBeDeleted` starts so, and asks nothing);
//! - drift is the normalised API status against the cached one, by the version's
//!   equality: a function of the pod's bytes, its mirror pod's bytes and the cached
//!   status.
//!
//! So a read whose XXH3-128 digests match the last read that found "cannot be deleted"
//! or "no drift", over the very same cached status (the same allocation, held weakly,
//! as the repeats of `SetPodStatus` are), gets the same answer without a parse. The
//! imports are made as before: only the parsing is saved. Only those answers are
//! remembered; a pod being deleted, or one that drifted, is read the full way every
//! time. Nothing of this is state: a new instance starts without it.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use crate::status::VersionedStatus;

/// A pod's bytes, as the batch read them.
pub(crate) fn digest(json: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(json.as_bytes())
}

/// The batch's last reads that settled a question, by pod UID.
#[derive(Debug, Default)]
pub(crate) struct BatchReads {
    /// UID (as the API server knows it) -> the digest of a pod that cannot be deleted.
    undeletable: BTreeMap<String, u128>,
    /// UID (the cache's) -> the reads that found no drift.
    agreed: BTreeMap<String, Agreed>,
}

/// Reads that found the API server's status equal to a cached one.
#[derive(Debug)]
struct Agreed {
    pod: u128,
    /// For a static pod: its mirror pod's digest (its status lives there).
    mirror: Option<u128>,
    cached: Weak<VersionedStatus>,
}

/// What an earlier read settled for a pod read in the same bytes again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Agreement {
    /// No drift: the pod is not static, and its status was found equal.
    Plain,
    /// A static pod, whose mirror pod in these bytes had no drift.
    Static { mirror: u128 },
}

impl BatchReads {
    /// Whether a pod read as `pod` under `uid` was found undeletable before.
    pub(crate) fn undeletable(&self, uid: &str, pod: u128) -> bool {
        self.undeletable.get(uid) == Some(&pod)
    }

    /// Remembers that the pod `uid` in the bytes `pod` cannot be deleted.
    pub(crate) fn note_undeletable(&mut self, uid: &str, pod: u128) {
        self.undeletable.insert(uid.to_owned(), pod);
    }

    /// What the last read of `uid` in the bytes `pod` found against `cached`, if it
    /// found no drift and `cached` is still the very status it compared.
    pub(crate) fn agreement(&self, uid: &str, pod: u128, cached: &Arc<VersionedStatus>) -> Option<Agreement> {
        let agreed =
            self.agreed.get(uid).filter(|a| a.pod == pod && std::ptr::eq(a.cached.as_ptr(), Arc::as_ptr(cached)))?;
        Some(match agreed.mirror {
            None => Agreement::Plain,
            Some(mirror) => Agreement::Static { mirror },
        })
    }

    /// Remembers that `uid`, read as `pod` (and `mirror` for a static pod), had no drift
    /// from `cached`.
    pub(crate) fn note_agreed(&mut self, uid: &str, pod: u128, mirror: Option<u128>, cached: &Arc<VersionedStatus>) {
        self.agreed.insert(uid.to_owned(), Agreed { pod, mirror, cached: Arc::downgrade(cached) });
    }

    /// Forgets a drifted or unreadable pod: its next read is a full one.
    pub(crate) fn forget_agreement(&mut self, uid: &str) {
        self.agreed.remove(uid);
    }

    /// Keeps only the pods `keep` names (so the reads are bounded by the cache).
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.undeletable.retain(|uid, _| keep(uid));
        self.agreed.retain(|uid, _| keep(uid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodStatus;

    fn status(version: u64) -> Arc<VersionedStatus> {
        VersionedStatus::for_tests(PodStatus::default(), version)
    }

    #[test]
    fn an_agreement_holds_for_the_same_bytes_over_the_same_cached_status_only() {
        let mut reads = BatchReads::default();
        let (cached, pod) = (status(1), digest("{\"pod\":1}"));
        assert_eq!(reads.agreement("ua", pod, &cached), None);
        reads.note_agreed("ua", pod, None, &cached);
        assert_eq!(reads.agreement("ua", pod, &cached), Some(Agreement::Plain));
        assert_eq!(reads.agreement("ua", digest("{\"pod\":2}"), &cached), None, "other bytes");
        assert_eq!(reads.agreement("ua", pod, &status(1)), None, "an equal status, but another allocation");
        assert_eq!(reads.agreement("ub", pod, &cached), None, "another pod");
        reads.note_agreed("ua", pod, Some(7), &cached);
        assert_eq!(reads.agreement("ua", pod, &cached), Some(Agreement::Static { mirror: 7 }));
        reads.forget_agreement("ua");
        assert_eq!(reads.agreement("ua", pod, &cached), None);

        reads.note_agreed("ua", pod, None, &cached);
        drop(cached);
        let later = status(2);
        assert_eq!(reads.agreement("ua", pod, &later), None, "the compared status is gone");
    }

    #[test]
    fn reads_are_kept_for_the_pods_still_cached_only() {
        let mut reads = BatchReads::default();
        let cached = status(1);
        reads.note_undeletable("ua", 1);
        reads.note_undeletable("ub", 2);
        reads.note_agreed("ub", 3, None, &cached);
        assert!(reads.undeletable("ua", 1) && !reads.undeletable("ua", 2));
        reads.retain(|uid| uid == "ub");
        assert!(!reads.undeletable("ua", 1));
        assert!(reads.undeletable("ub", 2));
        assert_eq!(reads.agreement("ub", 3, &cached), Some(Agreement::Plain));
    }
}
