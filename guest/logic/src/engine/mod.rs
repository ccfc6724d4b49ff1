//! The engine every logic version runs on: the cache of versioned statuses, the
//! written versions, the queued snapshots and the syncs in flight, with the bookkeeping
//! that keeps them in step ([`Engine`]); the sync skeleton and the batch ([`syncs`],
//! [`batch`]) and the state document ([`state`]).
//!
//! A logic version does not own any of this: it is a [`crate::Policy`] that decides,
//! through the narrow methods here, what an update caches and how a sync writes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp as JiffTimestamp;

use crate::error::{ManagerError, Result};
use crate::imports::{Imports, Level, SyncRequest};
use crate::jobs::Job;
use crate::outcomes::{CachedStatus, UpdateOutcome};
use crate::resize::ResizeConditions;
use crate::status::{LastWritten, PendingSync, VersionedStatus};

mod batch;
mod batch_reads;
mod resize;
#[cfg(test)]
mod resize_tests;
pub(crate) mod state;
mod status_json;
pub(crate) mod sync_policy;
mod syncs;
mod updates;

/// The status manager's state and bookkeeping. All state is in ordered maps: a batch
/// sync visits pods in UID order and nothing depends on hash order.
pub struct Engine<I: Imports> {
    imports: I,
    /// Pod UID (a static pod's own UID) to its latest status. `Arc`: a queued snapshot
    /// and the cache usually share one status. Newer logic reads it through
    /// [`Engine::cached`] and changes it through the methods that record changes.
    statuses: BTreeMap<String, Arc<VersionedStatus>>,
    /// (Mirror) pod UID to the latest version written to the API server.
    api_versions: BTreeMap<String, u64>,
    /// The cached pods whose latest version is not written under their own UID: what a
    /// pass plans besides the static and mirror pods. A pass runs for every signal,
    /// and finding these by walking every cached pod took a sixth of the agent's CPU at
    /// 500 statuses a second; kept in step by [`Engine::reindex`] wherever `statuses`
    /// or `api_versions` change.
    unwritten: BTreeSet<String>,
    /// Snapshots referred to by requests in the host's queue, by request ID.
    pending: BTreeMap<u64, PendingSync>,
    next_request_id: u64,
    /// Pod UID (as `statuses`) to what was last written for it, for logic that patches
    /// without reading first. Dropped with the pod's status.
    last_written: BTreeMap<String, Arc<LastWritten>>,
    /// Pod UID (never translated) to its in-place resize conditions, apart from the
    /// statuses as upstream keeps them (the kubelet sets them before and between status
    /// updates); an entry is dropped with the pod's status, and none is empty.
    resize_conditions: BTreeMap<String, ResizeConditions>,
    /// What changed since the state was last saved, for `save_state_changes`.
    changes: Changes,
    /// Syncs planned or suspended in a call, by ID (in order). Not part of the state.
    syncs: BTreeMap<u64, Job>,
    /// The ID of the next planned sync.
    next_sync_id: u64,
    /// The pod whose update [`Engine::cache_if_changed`] last found equal to its cached
    /// status, for the manager to remember that call (`crate::repeats`).
    found_unchanged: Option<String>,
    /// The JSON of the statuses cached last, for the change set, the record and the
    /// syncs that ask right after an update (not state).
    status_json: status_json::StatusJson,
    /// What the batch learnt from the pods it read, by their digests (not state).
    batch_reads: batch_reads::BatchReads,
}

/// Keys changed since the last save, so a host can follow the state call by call
/// without copying all of it.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub statuses: BTreeSet<String>,
    pub api_versions: BTreeSet<String>,
    pub pending: BTreeSet<u64>,
    pub resize_conditions: BTreeSet<String>,
}

impl<I: Imports> Engine<I> {
    /// An empty engine over `imports`.
    pub fn new(imports: I) -> Self {
        Engine {
            imports,
            statuses: BTreeMap::new(),
            api_versions: BTreeMap::new(),
            unwritten: BTreeSet::new(),
            pending: BTreeMap::new(),
            next_request_id: 1,
            last_written: BTreeMap::new(),
            resize_conditions: BTreeMap::new(),
            changes: Changes::default(),
            syncs: BTreeMap::new(),
            next_sync_id: 1,
            found_unchanged: None,
            status_json: status_json::StatusJson::default(),
            batch_reads: batch_reads::BatchReads::default(),
        }
    }

    /// The imports, for callers that own the world behind them (tests, benchmarks).
    pub fn imports_mut(&mut self) -> &mut I {
        &mut self.imports
    }

    /// The JSON of `status`'s PodStatus for a sync's write: the text written already for
    /// the update's change set or record when it is kept, else written now.
    pub fn status_text(&self, status: &VersionedStatus) -> Result<String> {
        match self.status_json.kept(status) {
            Some(text) => Ok(text.get().to_string()),
            None => {
                podstatus_core::status_to_json(&status.status).map_err(|e| ManagerError::InvalidStatus(e.to_string()))
            }
        }
    }

    /// The cached status of `uid` (a mirror pod's UID finds its static pod's status).
    pub fn get_pod_status(&mut self, uid: &str) -> Result<Option<CachedStatus>> {
        let uid = self.imports.translate_pod_uid(uid);
        match self.statuses.get(&uid) {
            None => Ok(None),
            Some(cached) => {
                let text = self.status_json.of(cached)?;
                Ok(Some(CachedStatus { version: cached.version, status: text.get().to_string() }))
            }
        }
    }

    /// Caches `status` for `pod`, forcing an update when the pod is being deleted (a pod
    /// that no longer runs must still be able to trigger its update and deletion).
    /// Drops every cached status whose pod UID is not in `keep`; returns how many.
    pub fn remove_orphaned_statuses(&mut self, keep: &[String]) -> u32 {
        let keep: BTreeSet<&str> = keep.iter().map(String::as_str).collect();
        let orphans: Vec<String> = self.statuses.keys().filter(|uid| !keep.contains(uid.as_str())).cloned().collect();
        for uid in &orphans {
            self.drop_status(uid);
        }
        u32::try_from(orphans.len()).unwrap_or(u32::MAX)
    }

    /// Handles one request the host took off the sync queue: writes the snapshot it
    /// was queued with ([`Engine::plan_sync_pod`], run to its end).
    /// Pushes a sync request; when the queue is full the batch sync will catch up.
    pub fn enqueue(&mut self, uid: &str, status: Arc<VersionedStatus>) -> UpdateOutcome {
        let id = self.next_request_id;
        self.next_request_id += 1;
        let request = SyncRequest { id, pod_uid: uid.to_string(), version: status.version };
        self.pending.insert(id, PendingSync { pod_uid: uid.to_string(), status });
        self.changes.pending.insert(id);
        if self.imports.push_sync_request(request) {
            UpdateOutcome::Queued
        } else {
            self.drop_pending(id);
            self.log(Level::Debug, || format!("sync queue full; pod {uid} waits for the batch sync"));
            UpdateOutcome::QueueFull
        }
    }

    /// The cached status of `uid` (a static pod's own UID), if any.
    pub fn cached(&self, uid: &str) -> Option<Arc<VersionedStatus>> {
        self.statuses.get(uid).cloned()
    }

    /// [`Engine::cached`] without a new reference, for a look that keeps nothing.
    pub(crate) fn cached_ref(&self, uid: &str) -> Option<&Arc<VersionedStatus>> {
        self.statuses.get(uid)
    }

    /// The pod whose update was last found unchanged since the previous take, if any.
    pub(crate) fn take_found_unchanged(&mut self) -> Option<String> {
        self.found_unchanged.take()
    }

    /// Whether `version` (or a later one) was written to the API server for `uid` (a
    /// mirror pod's UID for a static pod).
    pub fn is_written(&self, uid: &str, version: u64) -> bool {
        self.api_versions.get(uid).is_some_and(|&written| written >= version)
    }

    /// The cached pods other than `except`, in UID order, that a pass plans a sync of:
    /// all but those whose sync would find the latest status written however the pass's
    /// other syncs go, that is, pods that are neither static nor any static pod's mirror
    /// pod (whose written version another pod's sync may record) and whose latest
    /// version is written under their own UID (written versions only grow outside a
    /// batch). Read off [`Engine::unwritten`] and the pairs, not a walk over every
    /// cached pod: a pass runs for every signal.
    pub fn unwritten_for_pass(&self, pod_to_mirror: &BTreeMap<String, String>, except: &str) -> Vec<String> {
        let paired = pod_to_mirror.iter().flat_map(|(pod, mirror)| [pod, mirror]);
        let mut planned: BTreeSet<&str> = self.unwritten.iter().map(String::as_str).collect();
        planned.extend(paired.filter(|uid| self.statuses.contains_key(*uid)).map(String::as_str));
        planned.remove(except);
        let planned: Vec<String> = planned.into_iter().map(str::to_string).collect();
        debug_assert_eq!(planned, self.unwritten_walked(pod_to_mirror, except), "the unwritten index is out of step");
        planned
    }

    /// [`Engine::unwritten_for_pass`] by its definition, a walk over every cached pod:
    /// what debug builds check the index against.
    fn unwritten_walked(&self, pod_to_mirror: &BTreeMap<String, String>, except: &str) -> Vec<String> {
        let paired = |uid: &str| pod_to_mirror.contains_key(uid) || pod_to_mirror.values().any(|m| m == uid);
        self.statuses
            .iter()
            .filter(|(uid, status)| *uid != except && (paired(uid) || self.is_unwritten(uid, status)))
            .map(|(uid, _)| uid.clone())
            .collect()
    }

    /// Puts `uid` in [`Engine::unwritten`] or takes it out, after its cached status or
    /// its written version changed.
    pub(crate) fn reindex(&mut self, uid: &str) {
        let unwritten = self.statuses.get(uid).is_some_and(|status| self.is_unwritten(uid, status));
        if !unwritten {
            self.unwritten.remove(uid);
        } else if !self.unwritten.contains(uid) {
            self.unwritten.insert(uid.to_string());
        }
    }

    /// Rebuilds [`Engine::unwritten`] after the whole state was replaced.
    pub(crate) fn reindex_all(&mut self) {
        self.unwritten = self
            .statuses
            .iter()
            .filter(|(uid, status)| self.is_unwritten(uid, status))
            .map(|(uid, _)| uid.clone())
            .collect();
    }

    /// Whether `status`, cached for `uid`, is newer than what was written under `uid`
    /// itself: what puts a pod in [`Engine::unwritten`].
    fn is_unwritten(&self, uid: &str, status: &VersionedStatus) -> bool {
        !self.is_written(uid, status.version)
    }

    /// The pods that sync requests queued in the host refer to, in request order.
    pub fn queued_pods(&self) -> Vec<String> {
        self.pending.values().map(|p| p.pod_uid.clone()).collect()
    }

    /// The snapshot `request` refers to, taken out of the state (a request is handled
    /// once): an error unless this manager queued exactly that request.
    pub fn take_request(&mut self, request: &SyncRequest) -> Result<PendingSync> {
        match self.pending.get(&request.id) {
            Some(p) if p.pod_uid == request.pod_uid && p.status.version == request.version => {}
            _ => return Err(ManagerError::UnknownRequest(request.id)),
        }
        self.drop_pending(request.id).ok_or(ManagerError::UnknownRequest(request.id))
    }

    /// Caches `status` for `uid`, noting the change.
    pub fn put_status(&mut self, uid: &str, status: Arc<VersionedStatus>) {
        self.statuses.insert(uid.to_string(), status);
        self.reindex(uid);
        self.note_status_change(uid);
    }

    /// Drops the cached status of `uid` (with what was last written for it and its
    /// resize conditions), noting the change.
    pub(crate) fn drop_status(&mut self, uid: &str) {
        for job in self.syncs.values_mut() {
            job.note_status_dropped(uid);
        }
        self.drop_resize_conditions(uid);
        let written = self.last_written.remove(uid).is_some();
        if self.statuses.remove(uid).is_some() || written {
            self.reindex(uid);
            self.note_status_change(uid);
        }
    }

    /// Records what was written for `uid` (a cached pod's own UID), noting the change;
    /// ignored when nothing is cached for it.
    pub fn set_last_written(&mut self, uid: &str, written: LastWritten) {
        if self.statuses.contains_key(uid) {
            self.last_written.insert(uid.to_string(), Arc::new(written));
            self.note_status_change(uid);
        }
    }

    /// What was last written for `uid` (a cached pod's own UID), if it is still the
    /// API server's status as far as this manager knows: written to `status_uid` (the
    /// pod's, or its mirror pod's, UID) at the version still recorded as written there.
    pub fn written_base(&self, uid: &str, status_uid: &str) -> Option<Arc<LastWritten>> {
        let written = self.last_written.get(uid)?;
        (written.uid == status_uid && self.api_versions.get(status_uid) == Some(&written.version))
            .then(|| Arc::clone(written))
    }

    /// A queued snapshot of `uid` that shared the cached status no longer does, so a
    /// saved change must now carry that snapshot itself.
    fn note_status_change(&mut self, uid: &str) {
        self.changes.statuses.insert(uid.to_string());
        let queued = self.pending.iter().filter(|(_, p)| p.pod_uid == uid).map(|(id, _)| *id);
        self.changes.pending.extend(queued);
    }

    /// Records `version` as written to the API server for `uid`, noting the change.
    pub(crate) fn set_api_version(&mut self, uid: &str, version: u64) {
        self.api_versions.insert(uid.to_string(), version);
        self.reindex(uid);
        self.changes.api_versions.insert(uid.to_string());
    }

    /// Forgets the version written for `uid`, noting the change.
    pub(crate) fn drop_api_version(&mut self, uid: &str) {
        if self.api_versions.remove(uid).is_some() {
            self.reindex(uid);
            self.changes.api_versions.insert(uid.to_string());
        }
    }

    /// Drops the snapshot of request `id`, noting the change.
    pub(crate) fn drop_pending(&mut self, id: u64) -> Option<PendingSync> {
        let pending = self.pending.remove(&id)?;
        self.changes.pending.insert(id);
        Some(pending)
    }

    /// The host's time, read at most once per update so that every time set by one
    /// update is the same instant.
    pub fn now_cached(&mut self, now: &mut Option<Time>) -> Time {
        now.get_or_insert_with(|| {
            let ts = self.imports.now();
            let nanos = i32::try_from(ts.nanoseconds).unwrap_or(0);
            Time(JiffTimestamp::new(ts.seconds, nanos).unwrap_or(JiffTimestamp::UNIX_EPOCH))
        })
        .clone()
    }

    /// Logs through the imports, building the message only when the level is enabled.
    pub fn log(&mut self, level: Level, message: impl FnOnce() -> String) {
        if self.imports.log_enabled(level) {
            let message = message();
            self.imports.log(level, &message);
        }
    }
}
