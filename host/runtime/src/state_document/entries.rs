//! Reading the state format's entries as a swap's checks and the audit need them: each
//! entry kept as a slice of its document, no tree of the whole state built.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

pub(super) use crate::shown::shown;

/// Names the state format's change sets (the one format every logic version reads and
/// writes, `save-state-changes`).
pub(crate) const CHANGES_FORMAT: &str = "podstatus.kubelet.io/state-changes";

/// A status entry of the state format, its body left as text.
#[derive(serde::Deserialize)]
pub(crate) struct StatusEntry<'a> {
    #[serde(default)]
    pub(crate) version: Option<u64>,
    /// Since state version 2; absent is false.
    #[serde(default, rename = "podIsFinished")]
    pub(crate) finished: Option<bool>,
    #[serde(default, borrow)]
    pub(crate) status: Option<&'a RawValue>,
}

impl StatusEntry<'_> {
    fn same(&self, other: &StatusEntry<'_>) -> bool {
        self.version == other.version
            && self.finished.unwrap_or(false) == other.finished.unwrap_or(false)
            && same_json(self.status, other.status)
    }
}

/// Equal as JSON: the same text, or (rarely: another plugin's formatting) the same
/// value once this one entry is parsed.
pub(crate) fn same_json(a: Option<&RawValue>, b: Option<&RawValue>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.get() == b.get()
                || matches!(
                    (serde_json::from_str::<serde_json::Value>(a.get()), serde_json::from_str::<serde_json::Value>(b.get())),
                    (Ok(a), Ok(b)) if a == b
                )
        }
        _ => false,
    }
}

/// The entries of a state document (or of a change set's patch: `None` removes).
#[derive(serde::Deserialize)]
pub(crate) struct Entries<'a> {
    #[serde(default, borrow)]
    pub(crate) statuses: BTreeMap<String, Option<StatusEntry<'a>>>,
    #[serde(default, borrow, rename = "apiStatusVersions")]
    pub(crate) written: BTreeMap<String, Option<&'a RawValue>>,
    #[serde(default, borrow)]
    pub(crate) pending: BTreeMap<String, Option<&'a RawValue>>,
    #[serde(default, rename = "nextRequestId")]
    pub(crate) next_request_id: Option<u64>,
}

#[derive(serde::Deserialize)]
pub(crate) struct ChangesEntries<'a> {
    #[serde(borrow)]
    pub(crate) patch: Entries<'a>,
}

impl Entries<'_> {
    /// The first entry `actual` does not hold as `self` has it, if any.
    pub(crate) fn difference(&self, actual: &Entries<'_>) -> Option<String> {
        for (uid, entry) in &self.statuses {
            let same = match (entry, actual.statuses.get(uid)) {
                (Some(a), Some(Some(b))) => a.same(b),
                (None, None | Some(None)) => true,
                _ => false,
            };
            if !same {
                return Some(format!("the status of pod {:?}", shown(uid)));
            }
        }
        if let Some(uid) = actual.statuses.keys().find(|uid| !self.statuses.contains_key(*uid)) {
            return Some(format!("a status of pod {:?} it was not given", shown(uid)));
        }
        for (uid, version) in &self.written {
            let same = match (version, actual.written.get(uid)) {
                (Some(a), Some(Some(b))) => same_json(Some(a), Some(b)),
                (None, None | Some(None)) => true,
                _ => false,
            };
            if !same {
                return Some(format!("the written version of pod {:?}", shown(uid)));
            }
        }
        for (id, entry) in &self.pending {
            if entry.is_some() != actual.pending.get(id).is_some_and(Option::is_some) {
                return Some(format!("pending request {:?}", shown(id)));
            }
        }
        if actual.written.len() != self.written.len() || actual.pending.len() != self.pending.len() {
            return Some("entries it was not given".into());
        }
        None
    }
}
