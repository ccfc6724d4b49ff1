//! What `set-pod-status` handed an instance already, by digest, so that noting it in
//! the host's record of handed pods ([`crate::handed`]) costs no parse and no lock when
//! the kubelet hands the same pod, and mostly the same status, over and over (issue
//! 27: its common call should cost no allocation on the host's side either): a pod's
//! bytes name its identity, a pod's and status's bytes together its phase too.

use std::collections::{HashMap, HashSet};

use xxhash_rust::xxh3::{xxh3_128, xxh3_128_with_seed};

use crate::handed::{HandedPod, status_phase};
use podstatus_backends::pod_identity::PodIdentity;

/// How many digests of each kind an instance keeps before it starts over.
const DIGESTS_KEPT: usize = 4096;

/// A pod's UID, namespace and name, as noted.
type Identity = (Box<str>, Box<str>, Box<str>);

/// What the instance noted already, by digest; forgotten whenever the record drops a
/// pod (a pod handed again must then be noted again) or a state document narrows the
/// instance's reach.
#[derive(Debug, Default)]
pub(crate) struct HandDigests {
    /// A pod's bytes -> its UID, namespace and name.
    pods: HashMap<u128, Identity>,
    /// A pod's and status's bytes, noted together.
    statuses: HashSet<u128>,
    /// The record's drop count when these were noted.
    drops: u64,
}

impl HandDigests {
    /// Forgets everything noted.
    pub(crate) fn clear(&mut self) {
        self.pods.clear();
        self.statuses.clear();
    }

    /// What to note of `status` handed for `pod`, given the record's drop count
    /// `drops`: `None` when these very bytes were noted since the last drop (or the pod
    /// has no UID to note it by).
    pub(crate) fn unnoted<'a>(&'a mut self, drops: u64, pod: &str, status: &'a str) -> Option<HandedPod<'a>> {
        if drops != self.drops {
            self.clear();
            self.drops = drops;
        }
        let pod_digest = xxh3_128(pod.as_bytes());
        let both = xxh3_128_with_seed(status.as_bytes(), pod_digest as u64 ^ (pod_digest >> 64) as u64);
        if self.statuses.contains(&both) {
            return None;
        }
        if !self.pods.contains_key(&pod_digest) {
            let PodIdentity { uid: Some(uid), namespace, name } = PodIdentity::read(pod)? else { return None };
            let noted = (uid.into(), namespace.unwrap_or_default().into(), name.unwrap_or_default().into());
            if self.pods.len() >= DIGESTS_KEPT {
                self.pods.clear();
            }
            self.pods.insert(pod_digest, noted);
        }
        if self.statuses.len() >= DIGESTS_KEPT {
            self.statuses.clear();
        }
        self.statuses.insert(both);
        let (uid, namespace, name) = &self.pods[&pod_digest];
        Some(HandedPod { uid, namespace, name, phase: Some(status_phase(status)), terminated: false })
    }
}
