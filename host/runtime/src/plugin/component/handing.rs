//! What the host hands an instance beside `set-pod-status` (whose noting is
//! `HostState::note_status`'s), noted in the host's record of handed pods
//! ([`crate::handed`]) before the plugin sees it, and what a state document does to the
//! pods the instance may reach (it narrows them, never widens them).

use super::ComponentPlugin;
use crate::handed::{HandedPod, pod_phase};
use podstatus_backends::pod_identity::PodIdentity;

impl ComponentPlugin {
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
        let state = self.store.data_mut();
        state.narrowed = Some(state_uids(document).into_iter().map(String::into_boxed_str).collect());
        state.digests.clear();
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
