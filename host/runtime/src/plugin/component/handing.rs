//! What the host hands an instance, noted in the host's record of handed pods
//! ([`crate::handed`]) before the plugin sees it, and what a state document does to
//! the pods the instance may reach (it narrows them, never widens them).
//!
//! The kubelet hands the same pod, and mostly the same status, over and over (issue 27:
//! its common call should cost no allocation on the host's side either), so what was
//! noted already is known by digest and not read again: a pod's bytes name its
//! identity, a pod's and status's bytes together its phase too.

use std::collections::{HashMap, HashSet};

use xxhash_rust::xxh3::{xxh3_128, xxh3_128_with_seed};

use super::ComponentPlugin;
use crate::handed::{HandedPod, pod_phase, status_phase};
use podstatus_backends::pod_identity::PodIdentity;

/// How many digests of each kind an instance keeps before it starts over.
const DIGESTS_KEPT: usize = 4096;

/// A pod's UID, namespace and name, as noted.
type Identity = (Box<str>, Box<str>, Box<str>);

/// What the instance noted already, by digest; forgotten whenever the record drops a
/// pod (a pod handed again must then be noted again) or a state document narrows the
/// instance's reach.
#[derive(Debug, Default)]
pub(super) struct Digests {
    /// A pod's bytes -> its UID, namespace and name.
    pods: HashMap<u128, Identity>,
    /// A pod's and status's bytes, noted together.
    statuses: HashSet<u128>,
    /// The record's drop count when these were noted.
    drops: u64,
}

impl Digests {
    fn clear(&mut self) {
        self.pods.clear();
        self.statuses.clear();
    }
}

impl ComponentPlugin {
    /// `set-pod-status` hands `status` for `pod`: the pod and the status's phase are
    /// noted, unless these very bytes were.
    pub(super) fn hand_status(&mut self, pod: &str, status: &str) {
        self.forget_digests_after_drops();
        let pod_digest = xxh3_128(pod.as_bytes());
        let both = xxh3_128_with_seed(status.as_bytes(), pod_digest as u64 ^ (pod_digest >> 64) as u64);
        if self.handed.statuses.contains(&both) {
            return;
        }
        if !self.handed.pods.contains_key(&pod_digest) {
            let Some(PodIdentity { uid: Some(uid), namespace, name }) = PodIdentity::read(pod) else { return };
            let noted = (uid.into(), namespace.unwrap_or_default().into(), name.unwrap_or_default().into());
            if self.handed.pods.len() >= DIGESTS_KEPT {
                self.handed.pods.clear();
            }
            self.handed.pods.insert(pod_digest, noted);
        }
        let (uid, namespace, name) = &self.handed.pods[&pod_digest];
        let phase = Some(status_phase(status));
        self.store.data_mut().hand(HandedPod { uid, namespace, name, phase, terminated: false });
        if self.handed.statuses.len() >= DIGESTS_KEPT {
            self.handed.statuses.clear();
        }
        self.handed.statuses.insert(both);
    }

    /// `terminate-pod` hands `pod`: its own status's phase is what upstream's
    /// `TerminatePod` starts from when nothing was cached, and `Failed` is what it may
    /// end in. Rare: read each time.
    pub(super) fn hand_termination(&mut self, pod: &str) {
        let Some(PodIdentity { uid: Some(uid), namespace, name }) = PodIdentity::read(pod) else { return };
        let phase = pod_phase(pod);
        let (namespace, name) = (namespace.unwrap_or_default(), name.unwrap_or_default());
        let (uid, namespace, name) = (&*uid, &*namespace, &*name);
        let handed = HandedPod { uid, namespace, name, phase: Some(&phase), terminated: true };
        self.store.data_mut().hand(handed);
    }

    /// A state document was loaded: the instance may reach only the pods it names (and
    /// those handed from now on), within the record.
    pub(super) fn narrow_to_state(&mut self, document: &str) {
        self.store.data_mut().narrowed = Some(state_uids(document).into_iter().map(String::into_boxed_str).collect());
        self.handed.clear();
    }

    /// A change set was applied: the pods it names are the instance's to reach again
    /// (within the record: a change set widens nothing the host did not hand).
    pub(super) fn widen_to_changes(&mut self, changes: &str) {
        if self.store.data().narrowed.is_none() {
            return;
        }
        for uid in state_uids(changes) {
            self.store.data_mut().widen_narrowed(&uid);
        }
    }

    fn forget_digests_after_drops(&mut self) {
        let drops = self.store.data().handed.drops();
        if drops != self.handed.drops {
            self.handed.clear();
            self.handed.drops = drops;
        }
    }
}

/// The pod UIDs a state document or change set names (its statuses' and written
/// versions' keys), read without building a tree of the entries.
fn state_uids(document: &str) -> Vec<String> {
    use serde::de::IgnoredAny;
    use std::collections::BTreeMap;
    #[derive(serde::Deserialize, Default)]
    struct Maps {
        #[serde(default)]
        statuses: BTreeMap<String, IgnoredAny>,
        #[serde(default, rename = "apiStatusVersions")]
        api_status_versions: BTreeMap<String, IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    struct Document {
        #[serde(default)]
        statuses: BTreeMap<String, IgnoredAny>,
        #[serde(default, rename = "apiStatusVersions")]
        api_status_versions: BTreeMap<String, IgnoredAny>,
        #[serde(default)]
        patch: Option<Maps>,
    }
    let Ok(doc) = serde_json::from_str::<Document>(document) else { return Vec::new() };
    let top = Maps { statuses: doc.statuses, api_status_versions: doc.api_status_versions };
    [top, doc.patch.unwrap_or_default()]
        .into_iter()
        .flat_map(|m| m.statuses.into_keys().chain(m.api_status_versions.into_keys()))
        .collect()
}
