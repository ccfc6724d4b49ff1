//! The kubelet's common call, answered without parsing: `SetPodStatus` with the very
//! bytes of a call that changed nothing, while nothing else changed the pod's status.
//!
//! The kubelet calls `SetPodStatus` on every pod sync, and most calls change nothing.
//! The semantic path parses the pod and the whole status, normalises the status and
//! compares it with the cached one: tens of microseconds in the sandbox. But an update
//! is a function of three things only once the pod's status is cached: the pod's
//! bytes, the status's bytes and the cached status (the clock only dates a status that
//! differs, the pod manager is asked only about pods not cached yet, and the sync
//! queue only once a status is new). So a call whose pod and status digests match the
//! last call of that pod that the semantic path found unchanged, over the very same
//! cached status (the same allocation, held weakly: any other update, a drop, a load
//! or a change set replaces it), is unchanged too, and is answered from the digests.
//!
//! Only unchanged answers are remembered: a call that caches a new version is followed
//! by one more semantic call (the next identical call finds it equal), and a forced
//! update (a pod being deleted) is never unchanged, so never remembered.
//!
//! The digest is XXH3's 128 bits. The bytes come from the node agent (the pod from the
//! API server through its pod manager); a collision would make one update read as
//! unchanged, and 128 bits make that a matter of chance no workload meets. Nothing of
//! this is in the state document: a new instance starts without it and pays one
//! semantic call per pod.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use xxhash_rust::xxh3::xxh3_128;

use crate::status::VersionedStatus;

/// One `SetPodStatus` call's digests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallDigest {
    pod: u128,
    status: u128,
}

impl CallDigest {
    /// The digests of a call's two arguments.
    pub(crate) fn of(pod_json: &str, status_json: &str) -> Self {
        CallDigest { pod: xxh3_128(pod_json.as_bytes()), status: xxh3_128(status_json.as_bytes()) }
    }
}

/// The last unchanged call of a pod.
#[derive(Debug)]
struct Seen {
    uid: String,
    status: u128,
    /// The cached status it was found equal to.
    cached: Weak<VersionedStatus>,
}

/// The last unchanged `SetPodStatus` call of each pod, found by its pod's digest.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    by_pod: BTreeMap<u128, Seen>,
    /// Each pod's entry in `by_pod`: one per pod, replaced by its next unchanged call.
    by_uid: BTreeMap<String, u128>,
}

impl Repeats {
    /// Whether `call` repeats the last unchanged call of its pod over the status the
    /// pod still has cached (`cached` looks it up by UID).
    pub(crate) fn is_repeat<'a>(
        &self,
        call: CallDigest,
        cached: impl FnOnce(&str) -> Option<&'a Arc<VersionedStatus>>,
    ) -> bool {
        let Some(seen) = self.by_pod.get(&call.pod) else {
            return false;
        };
        seen.status == call.status
            && cached(&seen.uid).is_some_and(|now| std::ptr::eq(seen.cached.as_ptr(), Arc::as_ptr(now)))
    }

    /// Remembers `call` as `uid`'s last unchanged call, equal to `cached`.
    pub(crate) fn note_unchanged(&mut self, call: CallDigest, uid: &str, cached: &Arc<VersionedStatus>) {
        if let Some(old) = self.by_uid.insert(uid.to_string(), call.pod)
            && old != call.pod
        {
            self.by_pod.remove(&old);
        }
        // Another pod's entry under the same pod digest (identical pod bytes under two
        // UIDs cannot be; a collision could) loses its index.
        let seen = Seen { uid: uid.to_string(), status: call.status, cached: Arc::downgrade(cached) };
        if let Some(replaced) = self.by_pod.insert(call.pod, seen)
            && replaced.uid != uid
        {
            self.by_uid.remove(&replaced.uid);
        }
    }

    /// Forgets the pods not in `keep` (their statuses were dropped as orphans).
    pub(crate) fn retain(&mut self, keep: &[String]) {
        let by_pod = &mut self.by_pod;
        self.by_uid.retain(|uid, pod| {
            let kept = keep.iter().any(|k| k == uid);
            if !kept {
                by_pod.remove(pod);
            }
            kept
        });
    }

    /// Forgets everything (the state was replaced).
    pub(crate) fn clear(&mut self) {
        self.by_pod.clear();
        self.by_uid.clear();
    }

    /// How many pods have an unchanged call remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        debug_assert_eq!(self.by_pod.len(), self.by_uid.len());
        self.by_uid.len()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodStatus;

    use super::*;

    fn status(version: u64) -> Arc<VersionedStatus> {
        VersionedStatus::for_tests(PodStatus::default(), version)
    }

    #[test]
    fn a_repeat_needs_the_same_bytes_and_the_same_cached_status() {
        let mut repeats = Repeats::default();
        let cached = status(1);
        let call = CallDigest::of(r#"{"metadata":{"uid":"u"}}"#, r#"{"phase":"Running"}"#);
        assert!(!repeats.is_repeat(call, |_| Some(&cached)), "nothing remembered yet");
        repeats.note_unchanged(call, "u", &cached);
        assert!(repeats.is_repeat(call, |uid| (uid == "u").then_some(&cached)));

        let other_status = CallDigest::of(r#"{"metadata":{"uid":"u"}}"#, r#"{"phase":"Failed"}"#);
        assert!(!repeats.is_repeat(other_status, |_| Some(&cached)), "another status");
        let other_pod = CallDigest::of(r#"{"metadata":{"uid":"u","generation":2}}"#, r#"{"phase":"Running"}"#);
        assert!(!repeats.is_repeat(other_pod, |_| Some(&cached)), "another pod");

        // An equal status of another allocation is another update's: not a repeat.
        let replaced = status(1);
        assert!(!repeats.is_repeat(call, |_| Some(&replaced)));
        assert!(!repeats.is_repeat(call, |_| None), "the status was dropped");
    }

    #[test]
    fn one_entry_per_pod_and_orphans_are_forgotten() {
        let mut repeats = Repeats::default();
        let (a, b) = (status(1), status(1));
        let first = CallDigest::of("pod-a-1", "s");
        repeats.note_unchanged(first, "a", &a);
        let second = CallDigest::of("pod-a-2", "s");
        repeats.note_unchanged(second, "a", &a);
        assert_eq!(repeats.len(), 1, "the pod's newer call replaces its older one");
        assert!(!repeats.is_repeat(first, |_| Some(&a)));
        assert!(repeats.is_repeat(second, |_| Some(&a)));

        repeats.note_unchanged(CallDigest::of("pod-b", "s"), "b", &b);
        assert_eq!(repeats.len(), 2);
        repeats.retain(&["b".to_string()]);
        assert_eq!(repeats.len(), 1);
        assert!(!repeats.is_repeat(second, |_| Some(&a)));
        repeats.clear();
        assert_eq!(repeats.len(), 0);
    }
}
