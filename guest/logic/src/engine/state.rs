//! The manager's whole state as a versioned JSON document.
//!
//! A host moves state between instances with it: after a fault (a trapped instance
//! cannot be entered again) and when hot-swapping logic versions. The document is a
//! format of its own, not a dump of internal types, so a newer plugin can read an
//! older plugin's state and an older one can refuse a newer document clearly.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{Changes, Engine};
use crate::error::{ManagerError, Result};
use crate::imports::Imports;
use crate::resize::{ResizeCondition, ResizeConditions, check_resize_text};
use crate::status::{LastWritten, PendingSync, VersionedStatus};

/// Names the document format.
pub const STATE_FORMAT: &str = "podstatus.kubelet.io/state";
/// Names the format of a change set (what changed since the last save).
pub const STATE_CHANGES_FORMAT: &str = "podstatus.kubelet.io/state-changes";
/// The newest format version this code writes and reads. Version 2 added the optional
/// `podIsFinished` of a status (and of a snapshot); a version 1 document is version 2
/// without it, so it loads as it is. The optional `lastWritten` of a status (logic v3's
/// base for its next patch) came later without a new version: a reader that drops it
/// loses only that shortcut (v3 then patches from the pod manager's copy), where one that
/// dropped `podIsFinished` would never delete the pod. So did the optional top-level
/// `podResizeConditions` (logic v4's in-place resize conditions, absent when none is
/// set): a reader that drops it forgets conditions the kubelet sets again at its next
/// resize decision, and no other version reads them. And the optional `resourceVersion`
/// of `lastWritten` (logic v4's, absent from v3's records): a reader that drops it
/// patches from its last write where v4 would see a newer pod manager copy.
pub const STATE_VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateDocument {
    format: String,
    version: u32,
    /// Pod UID to its cached status.
    statuses: BTreeMap<String, StatusEntry>,
    /// (Mirror) pod UID to the version last written to the API server.
    api_status_versions: BTreeMap<String, u64>,
    /// Queued sync requests by ID, with their snapshots.
    pending: BTreeMap<u64, PendingEntry>,
    next_request_id: u64,
    /// Pod UID to its in-place resize conditions (logic v4); absent when there are
    /// none, so every document of a version that never sets them is as it was.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pod_resize_conditions: BTreeMap<String, ResizeEntry>,
}

/// One pod's resize conditions, each absent until set.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResizeEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod_resize_pending: Option<PodCondition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod_resize_in_progress: Option<PodCondition>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusEntry {
    version: u64,
    pod_name: String,
    pod_namespace: String,
    /// Since version 2: the status came from TerminatePod or followed one (upstream's
    /// `podIsFinished`). Written only when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pod_is_finished: bool,
    status: PodStatus,
    /// Logic v3's record of what it last wrote for the pod; every version keeps it as
    /// it is (it is void once another version writes, see `Engine::written_base`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_written: Option<LastWrittenEntry>,
}

/// A status entry as written: [`StatusEntry`]'s fields in its order, borrowed from the
/// cache rather than copied out of it, the status as the memo's text when there is one.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusEntryOut<'a> {
    version: u64,
    pod_name: &'a str,
    pod_namespace: &'a str,
    #[serde(skip_serializing_if = "is_false")]
    pod_is_finished: bool,
    status: StatusOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_written: Option<LastWrittenOut<'a>>,
}

/// A status to write: serialised from the cache, or the text serialised already (the
/// same bytes: compact JSON does not depend on where it is embedded).
#[derive(Serialize)]
#[serde(untagged)]
enum StatusOut<'a> {
    Cached(&'a PodStatus),
    Text(&'a RawValue),
}

/// [`LastWrittenEntry`] as written, borrowed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LastWrittenOut<'a> {
    uid: &'a str,
    version: u64,
    status: &'a PodStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_version: Option<&'a str>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LastWrittenEntry {
    uid: String,
    version: u64,
    status: PodStatus,
    /// Logic v4's: absent from v3's records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource_version: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PendingEntry {
    pod_uid: String,
    version: u64,
    pod_name: String,
    pod_namespace: String,
    /// Since version 2, as a status entry's; only with a snapshot of its own.
    #[serde(default, skip_serializing_if = "is_false")]
    pod_is_finished: bool,
    /// Absent when the snapshot is the pod's cached status of the same version, which
    /// is the common case and keeps the document small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<PodStatus>,
}

/// What changed since the last save: each entry replaces the full document's entry
/// of the same key whole; `null` removes it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatePatch {
    statuses: BTreeMap<String, Option<StatusEntry>>,
    api_status_versions: BTreeMap<String, Option<u64>>,
    pending: BTreeMap<u64, Option<PendingEntry>>,
    next_request_id: u64,
    /// As the document's; a pod's entry replaces its conditions whole, `null` (or an
    /// empty entry) drops them. Absent when none changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pod_resize_conditions: BTreeMap<String, Option<ResizeEntry>>,
}

/// [`StateDocument`] as written, its statuses borrowed from the cache (a swap of a
/// large state no longer copies every status before serialising it).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateDocumentOut<'a> {
    format: &'static str,
    version: u32,
    statuses: BTreeMap<&'a str, StatusEntryOut<'a>>,
    api_status_versions: &'a BTreeMap<String, u64>,
    pending: BTreeMap<u64, PendingEntry>,
    next_request_id: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pod_resize_conditions: BTreeMap<String, ResizeEntry>,
}

/// [`StatePatch`] as written, its statuses borrowed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatePatchOut<'a> {
    statuses: BTreeMap<&'a str, Option<StatusEntryOut<'a>>>,
    api_status_versions: BTreeMap<String, Option<u64>>,
    pending: BTreeMap<u64, Option<PendingEntry>>,
    next_request_id: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pod_resize_conditions: BTreeMap<String, Option<ResizeEntry>>,
}

/// [`ChangesDocument`] as written.
#[derive(Serialize)]
struct ChangesDocumentOut<'a> {
    format: &'static str,
    version: u32,
    patch: StatePatchOut<'a>,
}

#[derive(Serialize, Deserialize)]
struct ChangesDocument {
    format: String,
    version: u32,
    patch: StatePatch,
}

/// Just the header, read first so an unknown format is refused with a clear message
/// rather than a parse error deep in the document.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

impl<I: Imports> Engine<I> {
    /// The whole state as a JSON document `load_state` accepts. Saving also starts a
    /// new change set: `save_state_changes` then reports what changed after this.
    pub fn save_state(&mut self) -> Result<String> {
        let statuses = self
            .statuses
            .iter()
            .map(|(uid, s)| {
                (uid.as_str(), status_entry_out(s, StatusOut::Cached(&s.status), self.last_written.get(uid)))
            })
            .collect();
        let pending = self.pending.iter().map(|(id, p)| (*id, self.pending_entry(p))).collect();
        let document = StateDocumentOut {
            format: STATE_FORMAT,
            version: STATE_VERSION,
            statuses,
            api_status_versions: &self.api_versions,
            pending,
            next_request_id: self.next_request_id,
            pod_resize_conditions: self
                .resize_conditions
                .iter()
                .map(|(uid, c)| (uid.clone(), resize_entry(c)))
                .collect(),
        };
        let text = serde_json::to_string(&document)
            .map_err(|e| ManagerError::InvalidState(format!("cannot serialise state: {e}")))?;
        self.changes = Changes::default();
        Ok(text)
    }

    /// What changed since the last `save_state` or `save_state_changes`, as a change set
    /// for `apply_state_changes` (or for a host that keeps its own copy of the document:
    /// each entry replaces the document's entry whole, `null` removes it).
    pub fn save_state_changes(&mut self) -> Result<String> {
        let changes = std::mem::take(&mut self.changes);
        // The changed statuses' text first (usually serialised already, for the call
        // that changed them), then the document borrowing it.
        let mut texts = Vec::with_capacity(changes.statuses.len());
        for uid in &changes.statuses {
            let text = match self.statuses.get(uid) {
                Some(status) => Some(self.status_json.of(status)?),
                None => None,
            };
            texts.push(text);
        }
        let statuses = changes
            .statuses
            .iter()
            .zip(&texts)
            .map(|(uid, text)| {
                let entry = match (self.statuses.get(uid), text) {
                    (Some(s), Some(text)) => {
                        Some(status_entry_out(s, StatusOut::Text(text), self.last_written.get(uid)))
                    }
                    _ => None,
                };
                (uid.as_str(), entry)
            })
            .collect();
        let patch = StatePatchOut {
            statuses,
            api_status_versions: changes
                .api_versions
                .into_iter()
                .map(|uid| {
                    let version = self.api_versions.get(&uid).copied();
                    (uid, version)
                })
                .collect(),
            pending: changes
                .pending
                .into_iter()
                .map(|id| (id, self.pending.get(&id).map(|p| self.pending_entry(p))))
                .collect(),
            next_request_id: self.next_request_id,
            pod_resize_conditions: changes
                .resize_conditions
                .into_iter()
                .map(|uid| {
                    let entry = self.resize_conditions.get(&uid).map(resize_entry);
                    (uid, entry)
                })
                .collect(),
        };
        let document = ChangesDocumentOut { format: STATE_CHANGES_FORMAT, version: STATE_VERSION, patch };
        serde_json::to_string(&document)
            .map_err(|e| ManagerError::InvalidState(format!("cannot serialise state changes: {e}")))
    }

    /// Applies a change set from `save_state_changes` of another instance whose state
    /// this one took over; on error nothing changes.
    pub fn apply_state_changes(&mut self, document: &str) -> Result<()> {
        let header: Header = serde_json::from_str(document)
            .map_err(|e| ManagerError::InvalidState(format!("not a state change set: {e}")))?;
        check_header(&header, STATE_CHANGES_FORMAT)?;
        let doc: ChangesDocument = serde_json::from_str(document)
            .map_err(|e| ManagerError::InvalidState(format!("malformed state changes: {e}")))?;
        let patch = doc.patch;

        // Check every pending entry resolves against the statuses as they will be,
        // before changing anything.
        let status_after = |uid: &str| match patch.statuses.get(uid) {
            Some(Some(entry)) => Some(entry.version),
            Some(None) => None,
            None => self.statuses.get(uid).map(|s| s.version),
        };
        for (id, entry) in &patch.pending {
            if let Some(entry) = entry
                && entry.status.is_none()
                && status_after(&entry.pod_uid) != Some(entry.version)
            {
                return Err(dangling(*id, entry));
            }
        }
        let mut resize_conditions = Vec::with_capacity(patch.pod_resize_conditions.len());
        for (uid, entry) in patch.pod_resize_conditions {
            let conditions = entry.map(|e| resize_conditions_of(&uid, e)).transpose()?;
            resize_conditions.push((uid, conditions));
        }

        for (uid, entry) in patch.statuses {
            match entry {
                Some(mut entry) => {
                    match entry.last_written.take() {
                        Some(written) => self.last_written.insert(uid.clone(), Arc::new(last_written(written))),
                        None => self.last_written.remove(&uid),
                    };
                    self.statuses.insert(uid.clone(), Arc::new(versioned(entry)))
                }
                None => {
                    self.last_written.remove(&uid);
                    self.statuses.remove(&uid)
                }
            };
            self.reindex(&uid);
            self.changes.statuses.insert(uid);
        }
        for (uid, version) in patch.api_status_versions {
            match version {
                Some(version) => self.api_versions.insert(uid.clone(), version),
                None => self.api_versions.remove(&uid),
            };
            self.reindex(&uid);
            self.changes.api_versions.insert(uid);
        }
        for (id, entry) in patch.pending {
            match entry {
                Some(entry) => {
                    let pending = resolve_pending(id, entry, &self.statuses)?;
                    self.pending.insert(id, pending)
                }
                None => self.pending.remove(&id),
            };
            self.changes.pending.insert(id);
        }
        for (uid, conditions) in resize_conditions {
            match conditions.filter(|c| !c.is_empty()) {
                Some(conditions) => self.resize_conditions.insert(uid.clone(), conditions),
                None => self.resize_conditions.remove(&uid),
            };
            self.changes.resize_conditions.insert(uid);
        }
        self.next_request_id = self.next_request_id.max(patch.next_request_id);
        Ok(())
    }

    fn pending_entry(&self, p: &PendingSync) -> PendingEntry {
        let shared = self.statuses.get(&p.pod_uid).is_some_and(|s| Arc::ptr_eq(s, &p.status));
        PendingEntry {
            pod_uid: p.pod_uid.clone(),
            version: p.status.version,
            pod_name: p.status.pod_name.clone(),
            pod_namespace: p.status.pod_namespace.clone(),
            pod_is_finished: !shared && p.status.pod_is_finished,
            status: (!shared).then(|| p.status.status.clone()),
        }
    }

    /// Replaces the whole state with `document`; on error nothing changes.
    pub fn load_state(&mut self, document: &str) -> Result<()> {
        let header: Header = serde_json::from_str(document)
            .map_err(|e| ManagerError::InvalidState(format!("not a state document: {e}")))?;
        check_header(&header, STATE_FORMAT)?;
        let doc: StateDocument =
            serde_json::from_str(document).map_err(|e| ManagerError::InvalidState(format!("malformed state: {e}")))?;

        let mut written = BTreeMap::new();
        let statuses: BTreeMap<String, Arc<VersionedStatus>> = doc
            .statuses
            .into_iter()
            .map(|(uid, mut e)| {
                if let Some(w) = e.last_written.take() {
                    written.insert(uid.clone(), Arc::new(last_written(w)));
                }
                (uid, Arc::new(versioned(e)))
            })
            .collect();
        let mut pending = BTreeMap::new();
        for (id, entry) in doc.pending {
            pending.insert(id, resolve_pending(id, entry, &statuses)?);
        }
        let mut resize_conditions = BTreeMap::new();
        for (uid, entry) in doc.pod_resize_conditions {
            let conditions = resize_conditions_of(&uid, entry)?;
            if !conditions.is_empty() {
                resize_conditions.insert(uid, conditions);
            }
        }
        let floor = pending.keys().next_back().map_or(1, |id| id + 1);
        self.statuses = statuses;
        self.status_json.clear();
        self.resize_conditions = resize_conditions;
        self.last_written = written;
        self.api_versions = doc.api_status_versions;
        self.reindex_all();
        self.pending = pending;
        // IDs must stay unique for this instance's lifetime, including IDs it handed out
        // before the load.
        self.next_request_id = doc.next_request_id.max(floor).max(self.next_request_id);
        self.changes = Changes::default();
        Ok(())
    }
}

fn status_entry_out<'a>(
    s: &'a VersionedStatus,
    status: StatusOut<'a>,
    written: Option<&'a Arc<LastWritten>>,
) -> StatusEntryOut<'a> {
    StatusEntryOut {
        version: s.version,
        pod_name: &s.pod_name,
        pod_namespace: &s.pod_namespace,
        pod_is_finished: s.pod_is_finished,
        status,
        last_written: written.map(|w| LastWrittenOut {
            uid: &w.uid,
            version: w.version,
            status: &w.status,
            resource_version: w.resource_version.as_deref(),
        }),
    }
}

fn last_written(e: LastWrittenEntry) -> LastWritten {
    LastWritten { uid: e.uid, version: e.version, status: e.status, resource_version: e.resource_version }
}

fn versioned(e: StatusEntry) -> VersionedStatus {
    VersionedStatus {
        status: e.status,
        version: e.version,
        pod_name: e.pod_name,
        pod_namespace: e.pod_namespace,
        pod_is_finished: e.pod_is_finished,
    }
}

fn resize_entry(c: &ResizeConditions) -> ResizeEntry {
    ResizeEntry { pod_resize_pending: c.pending.clone(), pod_resize_in_progress: c.in_progress.clone() }
}

/// A document's resize entry for `uid`, refused unless each condition has its slot's
/// type and the reason and message bounds a set would have enforced.
fn resize_conditions_of(uid: &str, entry: ResizeEntry) -> Result<ResizeConditions> {
    let conditions = ResizeConditions { pending: entry.pod_resize_pending, in_progress: entry.pod_resize_in_progress };
    for which in [ResizeCondition::Pending, ResizeCondition::InProgress] {
        let Some(condition) = conditions.get(which) else { continue };
        if condition.type_ != which.condition_type() {
            return Err(ManagerError::InvalidState(format!(
                "resize condition {} of pod {uid} has type {:?}",
                which.condition_type(),
                condition.type_
            )));
        }
        let (reason, message) = (condition.reason.as_deref(), condition.message.as_deref());
        check_resize_text(which, reason.unwrap_or_default(), message.unwrap_or_default())
            .map_err(|e| ManagerError::InvalidState(format!("pod {uid}: {e}")))?;
    }
    Ok(conditions)
}

fn is_false(flag: &bool) -> bool {
    !flag
}

fn dangling(id: u64, entry: &PendingEntry) -> ManagerError {
    ManagerError::InvalidState(format!(
        "pending request {id} refers to version {} of pod {}, which the state does not hold",
        entry.version, entry.pod_uid
    ))
}

/// Refuses another format, and versions newer than this code reads.
fn check_header(header: &Header, format: &str) -> Result<()> {
    if header.format != format {
        return Err(ManagerError::InvalidState(format!("format {:?} is not {format:?}", header.format)));
    }
    if header.version > STATE_VERSION {
        return Err(ManagerError::InvalidState(format!(
            "state format version {} is newer than this plugin reads ({STATE_VERSION})",
            header.version
        )));
    }
    Ok(())
}

/// A pending entry as a snapshot: its own status, or the cached status it shares.
fn resolve_pending(
    id: u64,
    entry: PendingEntry,
    statuses: &BTreeMap<String, Arc<VersionedStatus>>,
) -> Result<PendingSync> {
    let status = match entry.status {
        Some(status) => Arc::new(VersionedStatus {
            status,
            version: entry.version,
            pod_name: entry.pod_name,
            pod_namespace: entry.pod_namespace,
            pod_is_finished: entry.pod_is_finished,
        }),
        None => match statuses.get(&entry.pod_uid) {
            Some(cached) if cached.version == entry.version => Arc::clone(cached),
            _ => return Err(dangling(id, &entry)),
        },
    };
    Ok(PendingSync { pod_uid: entry.pod_uid, status })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The borrowed entry writes the very bytes the owned one (the reader's type) does,
    /// the status inlined or as text alike, so documents stay as they were.
    #[test]
    fn a_borrowed_entry_writes_what_the_owned_one_does() {
        let status: PodStatus =
            serde_json::from_str(r#"{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}"#).unwrap();
        // Version 4's record carries a resourceVersion (v4's), version 3's none (v3's).
        for (finished, written) in [(false, None), (true, Some(("uid-m", 3))), (false, Some(("uid-m", 4)))] {
            let versioned = VersionedStatus {
                status: status.clone(),
                version: 4,
                pod_name: "web".into(),
                pod_namespace: "ns".into(),
                pod_is_finished: finished,
            };
            let last = written.map(|(uid, version)| {
                let resource_version = (version % 2 == 0).then(|| format!("{version}0"));
                Arc::new(LastWritten { uid: uid.into(), version, status: status.clone(), resource_version })
            });
            let owned = StatusEntry {
                version: 4,
                pod_name: "web".into(),
                pod_namespace: "ns".into(),
                pod_is_finished: finished,
                status: status.clone(),
                last_written: last.as_ref().map(|w| LastWrittenEntry {
                    uid: w.uid.clone(),
                    version: w.version,
                    status: w.status.clone(),
                    resource_version: w.resource_version.clone(),
                }),
            };
            let expected = serde_json::to_string(&owned).unwrap();
            let inline = status_entry_out(&versioned, StatusOut::Cached(&versioned.status), last.as_ref());
            assert_eq!(serde_json::to_string(&inline).unwrap(), expected);
            let text = serde_json::value::to_raw_value(&status).unwrap();
            let as_text = status_entry_out(&versioned, StatusOut::Text(&text), last.as_ref());
            assert_eq!(serde_json::to_string(&as_text).unwrap(), expected);
        }
    }
}
