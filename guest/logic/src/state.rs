//! The manager's whole state as a versioned JSON document.
//!
//! A host moves state between instances with it: after a fault (a trapped instance
//! cannot be entered again) and when hot-swapping logic versions. The document is a
//! format of its own, not a dump of internal types, so a newer plugin can read an
//! older plugin's state and an older one can refuse a newer document clearly.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;
use serde::{Deserialize, Serialize};

use crate::error::{ManagerError, Result};
use crate::imports::Imports;
use crate::manager::{Manager, PendingSync, VersionedStatus};

/// Names the document format.
pub const STATE_FORMAT: &str = "podstatus.kubelet.io/state";
/// The newest format version this code writes and reads.
pub const STATE_VERSION: u32 = 1;

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
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusEntry {
    version: u64,
    pod_name: String,
    pod_namespace: String,
    status: PodStatus,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PendingEntry {
    pod_uid: String,
    version: u64,
    pod_name: String,
    pod_namespace: String,
    /// Absent when the snapshot is the pod's cached status of the same version, which
    /// is the common case and keeps the document small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<PodStatus>,
}

/// Just the header, read first so an unknown format is refused with a clear message
/// rather than a parse error deep in the document.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

impl<I: Imports> Manager<I> {
    /// The whole state as a JSON document `load_state` accepts.
    pub fn save_state(&self) -> Result<String> {
        let statuses = self
            .statuses
            .iter()
            .map(|(uid, s)| {
                let entry = StatusEntry {
                    version: s.version,
                    pod_name: s.pod_name.clone(),
                    pod_namespace: s.pod_namespace.clone(),
                    status: s.status.clone(),
                };
                (uid.clone(), entry)
            })
            .collect();
        let pending = self
            .pending
            .iter()
            .map(|(id, p)| {
                let shared = self.statuses.get(&p.pod_uid).is_some_and(|s| Arc::ptr_eq(s, &p.status));
                let entry = PendingEntry {
                    pod_uid: p.pod_uid.clone(),
                    version: p.status.version,
                    pod_name: p.status.pod_name.clone(),
                    pod_namespace: p.status.pod_namespace.clone(),
                    status: (!shared).then(|| p.status.status.clone()),
                };
                (*id, entry)
            })
            .collect();
        let document = StateDocument {
            format: STATE_FORMAT.to_string(),
            version: STATE_VERSION,
            statuses,
            api_status_versions: self.api_versions.clone(),
            pending,
            next_request_id: self.next_request_id,
        };
        serde_json::to_string(&document).map_err(|e| ManagerError::InvalidState(format!("cannot serialise state: {e}")))
    }

    /// Replaces the whole state with `document`; on error nothing changes.
    pub fn load_state(&mut self, document: &str) -> Result<()> {
        let header: Header = serde_json::from_str(document)
            .map_err(|e| ManagerError::InvalidState(format!("not a state document: {e}")))?;
        if header.format != STATE_FORMAT {
            return Err(ManagerError::InvalidState(format!("format {:?} is not {STATE_FORMAT:?}", header.format)));
        }
        if header.version > STATE_VERSION {
            return Err(ManagerError::InvalidState(format!(
                "state format version {} is newer than this plugin reads ({STATE_VERSION})",
                header.version
            )));
        }
        let doc: StateDocument =
            serde_json::from_str(document).map_err(|e| ManagerError::InvalidState(format!("malformed state: {e}")))?;

        let statuses: BTreeMap<String, Arc<VersionedStatus>> = doc
            .statuses
            .into_iter()
            .map(|(uid, e)| {
                let status = VersionedStatus {
                    status: e.status,
                    version: e.version,
                    pod_name: e.pod_name,
                    pod_namespace: e.pod_namespace,
                };
                (uid, Arc::new(status))
            })
            .collect();
        let mut pending = BTreeMap::new();
        for (id, e) in doc.pending {
            let status = match e.status {
                Some(status) => Arc::new(VersionedStatus {
                    status,
                    version: e.version,
                    pod_name: e.pod_name,
                    pod_namespace: e.pod_namespace,
                }),
                None => match statuses.get(&e.pod_uid) {
                    Some(cached) if cached.version == e.version => Arc::clone(cached),
                    _ => {
                        return Err(ManagerError::InvalidState(format!(
                            "pending request {id} refers to version {} of pod {}, which the state does not hold",
                            e.version, e.pod_uid
                        )));
                    }
                },
            };
            pending.insert(id, PendingSync { pod_uid: e.pod_uid, status });
        }
        let floor = pending.keys().next_back().map_or(1, |id| id + 1);
        self.statuses = statuses;
        self.api_versions = doc.api_status_versions;
        self.pending = pending;
        // IDs must stay unique for this instance's lifetime, including IDs it handed out
        // before the load.
        self.next_request_id = doc.next_request_id.max(floor).max(self.next_request_id);
        Ok(())
    }
}
