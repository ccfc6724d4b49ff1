//! An API server held in memory, with Kubernetes' semantics for pods: objects keyed by
//! namespace and name, a resourceVersion that changes on every write, preconditions that
//! fail with a conflict, and change events for watchers.
//!
//! Pods are stored as their compact JSON ([`CompactPod`]), shared as `Arc`s: a read, the
//! value a write returns and the event it sends share the stored object instead of
//! copying it, and the HTTP server answers with its bytes. A stored object never
//! changes: a write replaces the entry. The typed methods ([`ApiServer`]'s, and those
//! taking or returning a `Pod`) parse the object they return; the `*_compact` ones do
//! not. A pod stored so keeps times to the second, as Kubernetes stores them
//! (`metav1.Time` is written to the second, in JSON and in protobuf alike).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::interface::{ApiError, ApiServer, DeleteOptions, Result, StatusPatch, StatusUpdate};
use crate::compact_pod::{CompactPod, CompactPodError};

/// The namespace the API server gives a pod that names none.
const DEFAULT_NAMESPACE: &str = "default";

/// A change to a stored pod, carrying the object as stored after the change (shared
/// with the store: cloning the `Arc` is how a watcher keeps it).
#[derive(Clone, Debug, PartialEq)]
pub enum PodEvent {
    /// A pod was created.
    Added(Arc<CompactPod>),
    /// A pod was replaced or its status written.
    Modified(Arc<CompactPod>),
    /// A pod was deleted; its last state, stamped with the deletion's resourceVersion.
    Deleted(Arc<CompactPod>),
}

impl PodEvent {
    /// The pod the event carries.
    pub fn pod(&self) -> &Arc<CompactPod> {
        match self {
            Self::Added(pod) | Self::Modified(pod) | Self::Deleted(pod) => pod,
        }
    }
}

/// A watcher called after each successful change. It may read the store but must not
/// write to it or subscribe (writes wait for listeners, so that would deadlock).
pub type PodListener = Box<dyn Fn(&PodEvent) + Send + Sync>;

/// The stored pod as the check of a status write sees it
/// ([`MemoryApiServer::update_pod_status_checked`]): the object, and its status parsed
/// when the check asks for it (a check that does not ask, as a store without checks,
/// pays no parse: a status is a few kilobytes, and a write parses the new one already).
#[derive(Debug)]
pub struct StoredStatus<'a> {
    /// The stored object.
    pub pod: &'a CompactPod,
    status: std::cell::OnceCell<Option<PodStatus>>,
}

impl<'a> StoredStatus<'a> {
    /// The stored `pod`, its status to be parsed on first ask.
    fn of(pod: &'a CompactPod) -> Self {
        StoredStatus { pod, status: std::cell::OnceCell::new() }
    }

    /// The stored `pod` whose status is `status`, parsed already.
    fn parsed(pod: &'a CompactPod, status: Option<PodStatus>) -> Self {
        StoredStatus { pod, status: std::cell::OnceCell::from(status) }
    }

    /// The stored status, parsed (None when the pod has none). A stored text that does
    /// not parse is the store's own bug: the API server's internal error.
    pub fn status(&self) -> Result<Option<&PodStatus>> {
        if let Some(status) = self.status.get() {
            return Ok(status.as_ref());
        }
        let parsed = self.pod.status().map_err(internal)?;
        Ok(self.status.get_or_init(|| parsed).as_ref())
    }
}

/// The in-memory API server. Thread-safe; every method takes `&self`.
///
/// By default deletion is immediate: a grace period is accepted and recorded nowhere (no
/// `deletionTimestamp`, no finalizers), as the replay world specifies. A store made with
/// [`MemoryApiServer::with_graceful_deletion`] deletes like Kubernetes instead (what the
/// embedded HTTP server and a real status manager need; see there).
#[derive(Default)]
pub struct MemoryApiServer {
    /// The objects and the resourceVersion counter; never held while listeners run, so a
    /// listener may read the store.
    store: Mutex<Store>,
    /// Held by every write from before its change until its listeners return: writes
    /// are thus serialised, and listeners see the changes in the order they happened even
    /// when several threads write.
    listeners: Mutex<Vec<PodListener>>,
    /// Kubernetes' graceful deletion of bound pods (off: deletion is immediate).
    graceful_deletion: bool,
    /// A status write that leaves the status as stored is not persisted (off: every
    /// write gets a new resourceVersion, as the replay world specifies).
    skip_unchanged_writes: bool,
}

#[derive(Default)]
struct Store {
    /// (namespace, name) -> pod; a BTreeMap so that listing order is deterministic.
    pods: BTreeMap<(String, String), Arc<CompactPod>>,
    /// The resourceVersion of the latest write (0: nothing written yet).
    resource_version: u64,
    /// Bytes the entries hold ([`entry_bytes`] and each object's
    /// [`CompactPod::held_bytes`]), kept as they come and go: the memory account's
    /// counter.
    held: usize,
}

/// What an entry of the store holds besides its object: the entry, its key's text and
/// the object's `Arc` (its counts).
fn entry_bytes(key: &(String, String)) -> usize {
    std::mem::size_of::<((String, String), Arc<CompactPod>)>()
        + key.0.len()
        + key.1.len()
        + crate::compact_pod::ARC_COUNTS_BYTES
}

impl Store {
    /// Gives `pod` the next resourceVersion: every write gets a new one, changed or not.
    fn stamp(&mut self, mut pod: Pod) -> Result<Arc<CompactPod>> {
        let version = next_resource_version(&mut self.resource_version);
        pod.metadata.resource_version = Some(version);
        Ok(Arc::new(CompactPod::from_pod(&pod).map_err(internal)?))
    }

    fn get(&self, namespace: &str, name: &str) -> Result<&Arc<CompactPod>> {
        self.pods.get(&(namespace.to_owned(), name.to_owned())).ok_or_else(|| not_found(namespace, name))
    }

    /// Stores `pod` under `key`, replacing (and returning) the pod there.
    fn insert(&mut self, key: (String, String), pod: Arc<CompactPod>) -> Option<Arc<CompactPod>> {
        let entry = entry_bytes(&key);
        self.held += entry + pod.held_bytes();
        let replaced = self.pods.insert(key, pod)?;
        self.held -= entry + replaced.held_bytes();
        Some(replaced)
    }

    fn remove(&mut self, key: &(String, String)) -> Option<Arc<CompactPod>> {
        let removed = self.pods.remove(key)?;
        self.held -= entry_bytes(key) + removed.held_bytes();
        Some(removed)
    }
}

impl MemoryApiServer {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that deletes pods gracefully, as Kubernetes does: the status
    /// manager deletes a pod only once it has a `deletionTimestamp`, so a store that
    /// removes pods at once would never let it do its part.
    ///
    /// A DELETE of a pod bound to a node (`spec.nodeName` set), not in a terminal phase,
    /// whose grace period (the request's, else the pod's
    /// `spec.terminationGracePeriodSeconds`, else 30) is above 0 only marks it:
    /// `metadata.deletionTimestamp` (now + grace) and `deletionGracePeriodSeconds` are
    /// set and a [`PodEvent::Modified`] is sent; the object stays until a DELETE with
    /// grace 0. A later DELETE with a shorter grace period brings the timestamp forward;
    /// one with a longer or equal period changes nothing. An unbound or finished pod, or
    /// grace 0, is removed at once: as kube-apiserver does, it is first marked
    /// (`deletionTimestamp` now, or brought forward, and `deletionGracePeriodSeconds` 0;
    /// a [`PodEvent::Modified`]) and then removed ([`PodEvent::Deleted`] of the marked
    /// pod), so a watcher sees both. Marking a pod the first time adds one to its
    /// `metadata.generation` (when it has one), as kube-apiserver does. Preconditions are
    /// checked either way.
    pub fn with_graceful_deletion() -> Self {
        Self { graceful_deletion: true, ..Self::default() }
    }

    /// This store, with status writes that change nothing not persisted, as
    /// kube-apiserver's etcd3 store does (`GuaranteedUpdate` returns early when the
    /// updated object's bytes are the stored ones): the stored pod is the answer, with
    /// its resourceVersion, and no watcher hears of it. Preconditions are checked
    /// first all the same. Without it every write gets a new resourceVersion and an
    /// event, changed or not (the replay world's contract). What it saves: a node that
    /// writes again what it wrote (a resync, a reconcile after its copy of the pod lags)
    /// costs watchers nothing.
    pub fn skipping_unchanged_writes(mut self) -> Self {
        self.skip_unchanged_writes = true;
        self
    }

    /// Whether this store deletes gracefully (see [`MemoryApiServer::with_graceful_deletion`]).
    pub fn graceful_deletion(&self) -> bool {
        self.graceful_deletion
    }

    /// Every stored pod (sorted by namespace then name) with the resourceVersion of the
    /// latest write, taken together: a list that a watch can resume from exactly.
    pub fn snapshot(&self) -> (u64, Vec<Arc<CompactPod>>) {
        let store = lock(&self.store);
        (store.resource_version, store.pods.values().cloned().collect())
    }

    /// Registers a watcher like [`MemoryApiServer::subscribe`] and returns the
    /// [`snapshot`](MemoryApiServer::snapshot) taken at that very point: no write falls
    /// between the two, so the listener hears of exactly the writes after the snapshot's
    /// resourceVersion. A watch cache needs this to start consistent.
    pub fn subscribe_with_snapshot(&self, listener: PodListener) -> (u64, Vec<Arc<CompactPod>>) {
        let mut listeners = lock(&self.listeners);
        let snapshot = self.snapshot();
        listeners.push(listener);
        snapshot
    }

    /// The resourceVersion of the latest successful write (0 before any).
    pub fn resource_version(&self) -> u64 {
        lock(&self.store).resource_version
    }

    /// Registers a watcher, called for every later change (see [`PodListener`]).
    pub fn subscribe(&self, listener: PodListener) {
        lock(&self.listeners).push(listener);
    }

    /// GET the pod `namespace/name`, as stored.
    pub fn get_compact(&self, namespace: &str, name: &str) -> Result<Arc<CompactPod>> {
        lock(&self.store).get(namespace, name).cloned()
    }

    /// POST: stores a new pod. It must have a name and a UID (this store does not invent
    /// UIDs); a missing namespace becomes `default`. A taken name is
    /// [`ApiError::AlreadyExists`].
    pub fn create_pod(&self, pod: Pod) -> Result<Arc<Pod>> {
        typed(self.create_compact(pod)?)
    }

    /// [`MemoryApiServer::create_pod`], answered with the pod as stored.
    pub fn create_compact(&self, pod: Pod) -> Result<Arc<CompactPod>> {
        let (key, pod) = normalise(pod)?;
        if pod.metadata.uid.as_deref().is_none_or(str::is_empty) {
            return Err(invalid(&key.1, "metadata.uid: Required value"));
        }
        self.write(|store| {
            if store.pods.contains_key(&key) {
                return Err(ApiError::AlreadyExists { namespace: key.0, name: key.1 });
            }
            let pod = store.stamp(pod)?;
            store.insert(key, Arc::clone(&pod));
            Ok((Arc::clone(&pod), PodEvent::Added(pod)))
        })
    }

    /// An outside writer creates or replaces the pod, status included, with no
    /// preconditions. A pod without a UID keeps the stored one's; a new pod needs one.
    pub fn put_pod(&self, pod: Pod) -> Result<Arc<Pod>> {
        let (key, mut pod) = normalise(pod)?;
        let stored = self.write(|store| {
            let existing = store.pods.get(&key);
            if pod.metadata.uid.as_deref().is_none_or(str::is_empty) {
                pod.metadata.uid = existing.and_then(|old| old.uid().map(str::to_owned));
            }
            if pod.metadata.uid.is_none() {
                return Err(invalid(&key.1, "metadata.uid: Required value"));
            }
            let created = existing.is_none();
            let pod = store.stamp(pod)?;
            store.insert(key, Arc::clone(&pod));
            let event = if created { PodEvent::Added(Arc::clone(&pod)) } else { PodEvent::Modified(Arc::clone(&pod)) };
            Ok((pod, event))
        })?;
        typed(stored)
    }

    /// PUT `.../pods/NAME` by a client. The pod's UID and resourceVersion, when set, are
    /// preconditions. As in Kubernetes, the main resource does not carry status: the
    /// stored status is kept (status is written through [`ApiServer::update_pod_status`]).
    pub fn update_pod(&self, pod: Pod) -> Result<Arc<Pod>> {
        typed(self.update_pod_checked(pod, |_, _| Ok::<(), ApiError>(()))?)
    }

    /// [`MemoryApiServer::update_pod`] that first hands `check` the stored pod (parsed)
    /// and the pod as it would be stored, under the store's lock, so that nothing
    /// changes between the check and the write: `check` may still adjust the new pod
    /// (fields the server keeps from the stored one) or refuse the write. It must be
    /// cheap (linear at most): every other write waits for it. Answered with the pod as
    /// stored.
    pub fn update_pod_checked<E: From<ApiError>>(
        &self,
        pod: Pod,
        check: impl FnOnce(&Pod, &mut Pod) -> Result<(), E>,
    ) -> Result<Arc<CompactPod>, E> {
        let (key, mut pod) = normalise(pod)?;
        self.write(|store| {
            let stored = store.get(&key.0, &key.1)?;
            check_uid(stored, &key.1, pod.metadata.uid.as_deref())?;
            check_resource_version(stored, &key.1, pod.metadata.resource_version.as_deref())?;
            let stored = stored.pod().map_err(internal)?;
            pod.metadata.uid = stored.metadata.uid.clone();
            pod.status = stored.status.clone();
            check(&stored, &mut pod)?;
            let pod = store.stamp(pod)?;
            store.insert(key, Arc::clone(&pod));
            Ok((Arc::clone(&pod), PodEvent::Modified(pod)))
        })
    }

    /// [`ApiServer::update_pod_status`] that first asks `check` (the stored pod, the new
    /// status, which it may adjust) under the store's lock; see
    /// [`MemoryApiServer::update_pod_checked`]. Answered with the pod as stored.
    pub fn update_pod_status_checked<E: From<ApiError>>(
        &self,
        update: StatusUpdate,
        check: impl FnOnce(&StoredStatus<'_>, &mut PodStatus) -> Result<(), E>,
    ) -> Result<Arc<CompactPod>, E> {
        let StatusUpdate { namespace, name, uid_precondition, resource_version_precondition, mut status } = update;
        let key = (namespace, name);
        self.write_if(|store| {
            let stored = store.get(&key.0, &key.1)?;
            check_uid(stored, &key.1, uid_precondition.as_deref())?;
            check_resource_version(stored, &key.1, resource_version_precondition.as_deref())?;
            check(&StoredStatus::of(stored), &mut status)?;
            Ok(self.write_status(store, key, status)?)
        })
    }

    /// [`ApiServer::patch_pod_status`] that first asks `check` (the stored pod, the
    /// patched status, which it may adjust) under the store's lock; see
    /// [`MemoryApiServer::update_pod_checked`]. Answered with the pod as stored.
    pub fn patch_pod_status_checked<E: From<ApiError>>(
        &self,
        patch: StatusPatch,
        check: impl FnOnce(&StoredStatus<'_>, &mut PodStatus) -> Result<(), E>,
    ) -> Result<Arc<CompactPod>, E> {
        let StatusPatch { namespace, name, uid_precondition, patch } = patch;
        let key = (namespace, name);
        self.write_if(|store| {
            let stored = store.get(&key.0, &key.1)?;
            check_uid(stored, &key.1, uid_precondition.as_deref())?;
            // The kubelet's patch carries the UID inside too: Kubernetes checks it.
            check_uid(stored, &key.1, patch.pointer("/metadata/uid").and_then(serde_json::Value::as_str))?;
            let stored_status = stored.status().map_err(internal)?;
            let mut status = podstatus_core::apply_status_patch(stored_status.as_ref(), &patch)
                .map_err(|e| invalid(&key.1, &e.to_string()))?;
            check(&StoredStatus::parsed(stored, stored_status), &mut status)?;
            Ok(self.write_status(store, key, status)?)
        })
    }

    /// Gives the pod at `key` the new `status` and the next resourceVersion (its spec
    /// kept byte for byte), and the event that tells of it; none when the status is the
    /// stored one and this store skips such writes
    /// ([`MemoryApiServer::skipping_unchanged_writes`]).
    fn write_status(
        &self,
        store: &mut Store,
        key: (String, String),
        status: PodStatus,
    ) -> Result<(Arc<CompactPod>, Option<PodEvent>)> {
        let stored = Arc::clone(store.get(&key.0, &key.1)?);
        let written = serde_json::to_string(&status).map_err(|e| internal(e.into()))?;
        // The stored text is what the stored status serialised to, so equal texts are
        // equal statuses.
        if self.skip_unchanged_writes && stored.status_json() == Some(written.as_str()) {
            return Ok((stored, None));
        }
        let version = next_resource_version(&mut store.resource_version);
        let pod = Arc::new(stored.restamped(&version, Some((&written, &status))).map_err(internal)?);
        store.insert(key, Arc::clone(&pod));
        Ok((Arc::clone(&pod), Some(PodEvent::Modified(pod))))
    }

    /// An outside writer deletes the pod, with no preconditions. Returns its last state
    /// (with the deletion's resourceVersion), or `None` when there was no such pod.
    pub fn remove_pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.delete_pod(namespace, name, &DeleteOptions::default()).ok()
    }

    /// A copy of all pods, sorted by namespace then name (parsed; one that does not
    /// parse, which only a bug would store, is left out).
    pub fn list_pods(&self) -> Vec<Pod> {
        let (_, pods) = self.snapshot();
        pods.iter().filter_map(|pod| pod.pod().ok()).collect()
    }

    /// Bytes the store holds for its pods, for the memory account: each entry with its
    /// key's text and the object's ([`CompactPod::held_bytes`]), counted as entries come
    /// and go.
    pub fn held_bytes(&self) -> usize {
        lock(&self.store).held
    }

    /// The stored pod with this UID, if any.
    pub fn get_pod_by_uid(&self, uid: &str) -> Option<Arc<Pod>> {
        let found = lock(&self.store).pods.values().find(|pod| pod.uid() == Some(uid)).cloned()?;
        typed(found).ok()
    }

    /// Runs one write: `change` edits the store and says what happened; on success the
    /// listeners hear of it after the store lock is released.
    fn write<T, E: From<ApiError>>(&self, change: impl FnOnce(&mut Store) -> Result<(T, PodEvent), E>) -> Result<T, E> {
        self.write_if(|store| change(store).map(|(value, event)| (value, Some(event))))
    }

    /// Like [`MemoryApiServer::write`], for a change that may turn out to change nothing
    /// (no event, no new resourceVersion).
    fn write_if<T, E: From<ApiError>>(
        &self,
        change: impl FnOnce(&mut Store) -> Result<(T, Option<PodEvent>), E>,
    ) -> Result<T, E> {
        self.write_all(|store| change(store).map(|(value, event)| (value, event.into_iter().collect())))
    }

    /// Like [`MemoryApiServer::write`], for a change that is several writes at once
    /// (a mark, then a removal): the listeners hear of each, in order.
    fn write_all<T, E: From<ApiError>>(
        &self,
        change: impl FnOnce(&mut Store) -> Result<(T, Vec<PodEvent>), E>,
    ) -> Result<T, E> {
        let listeners = lock(&self.listeners);
        let (value, events) = {
            let mut store = lock(&self.store);
            change(&mut store)?
        };
        for event in &events {
            for listener in listeners.iter() {
                listener(event);
            }
        }
        Ok(value)
    }

    /// [`ApiServer::delete_pod`], answered with the pod as stored last.
    pub fn delete_compact(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<CompactPod>> {
        self.write_all(|store| {
            let stored = store.get(namespace, name)?;
            check_uid(stored, name, options.uid_precondition.as_deref())?;
            check_resource_version(stored, name, options.resource_version_precondition.as_deref())?;
            let key = (namespace.to_owned(), name.to_owned());
            let mut pod = stored.pod().map_err(internal)?;
            let mut events = Vec::new();
            if self.graceful_deletion {
                let (at, grace) = match graceful_mark(&pod, options.grace_period_seconds, jiff::Timestamp::now()) {
                    GracefulStep::Unchanged => return Ok((Arc::clone(stored), Vec::new())),
                    GracefulStep::Mark { at, grace } => (at, grace),
                    GracefulStep::Remove { at } => (at, 0),
                };
                mark_for_deletion(&mut pod, at, grace);
                let marked = store.stamp(pod.clone())?;
                store.insert(key.clone(), Arc::clone(&marked));
                if grace > 0 {
                    return Ok((Arc::clone(&marked), vec![PodEvent::Modified(marked)]));
                }
                events.push(PodEvent::Modified(marked));
            }
            if store.remove(&key).is_none() {
                return Err(not_found(namespace, name));
            }
            // The last state, stamped with the deletion's resourceVersion.
            let pod = store.stamp(pod)?;
            events.push(PodEvent::Deleted(Arc::clone(&pod)));
            Ok((pod, events))
        })
    }
}

impl ApiServer for MemoryApiServer {
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
        typed(self.get_compact(namespace, name)?)
    }

    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
        typed(self.update_pod_status_compact(update)?)
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
        typed(self.patch_pod_status_compact(patch)?)
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
        typed(self.delete_compact(namespace, name, options)?)
    }

    fn get_pod_compact(&self, namespace: &str, name: &str) -> Result<Arc<CompactPod>> {
        self.get_compact(namespace, name)
    }

    fn update_pod_status_compact(&self, update: StatusUpdate) -> Result<Arc<CompactPod>> {
        self.update_pod_status_checked(update, |_, _| Ok::<(), ApiError>(()))
    }

    fn patch_pod_status_compact(&self, patch: StatusPatch) -> Result<Arc<CompactPod>> {
        self.patch_pod_status_checked(patch, |_, _| Ok::<(), ApiError>(()))
    }
}

/// The typed pod of a stored one (a parse).
fn typed(pod: Arc<CompactPod>) -> Result<Arc<Pod>> {
    Ok(Arc::new(pod.pod().map_err(internal)?))
}

/// A stored object that does not serialise or parse: a bug of the store, reported as
/// the API server's own failure.
fn internal(error: CompactPodError) -> ApiError {
    ApiError::Internal { message: error.to_string() }
}

/// What a graceful DELETE does to a stored pod.
enum GracefulStep {
    /// Remove it now, once marked with this deletion timestamp and grace 0.
    Remove {
        /// The `deletionTimestamp` of the last mark: now, or the current one brought
        /// forward by its whole grace period.
        at: jiff::Timestamp,
    },
    /// It is already terminating with a period no longer than asked: nothing to write.
    Unchanged,
    /// Keep it, marked with this deletion timestamp and grace period.
    Mark {
        /// The new `deletionTimestamp`.
        at: jiff::Timestamp,
        /// The new `deletionGracePeriodSeconds`.
        grace: i64,
    },
}

/// Kubernetes' graceful deletion of a pod (its `CheckGracefulDelete` and the registry's
/// `BeforeDelete`): bound pods that are not finished get a deletion timestamp; a repeated
/// DELETE can only shorten the period; grace 0 removes.
fn graceful_mark(stored: &Pod, requested: Option<i64>, now: jiff::Timestamp) -> GracefulStep {
    let spec = stored.spec.as_ref();
    let bound = spec.and_then(|spec| spec.node_name.as_deref()).is_some_and(|node| !node.is_empty());
    let phase = stored.status.as_ref().and_then(|status| status.phase.as_deref());
    let finished = matches!(phase, Some("Succeeded" | "Failed"));
    let grace = requested.or_else(|| spec.and_then(|spec| spec.termination_grace_period_seconds)).unwrap_or(30);
    let metadata = &stored.metadata;
    let deadline = |from: jiff::Timestamp, seconds: i64| {
        from.checked_add(jiff::SignedDuration::from_secs(seconds)).unwrap_or(jiff::Timestamp::MAX)
    };
    if !bound || finished || grace <= 0 {
        // kube-apiserver's grace 0: the deadline is now, or the current one brought
        // forward by its whole period (never later than now).
        let at = match (&metadata.deletion_timestamp, metadata.deletion_grace_period_seconds) {
            (Some(at), Some(current)) => {
                at.0.checked_sub(jiff::SignedDuration::from_secs(current.max(0))).ok().map_or(now, |at| at.min(now))
            }
            _ => now,
        };
        return GracefulStep::Remove { at };
    }
    let deletion_timestamp = match (&metadata.deletion_timestamp, metadata.deletion_grace_period_seconds) {
        (None, _) => deadline(now, grace),
        (Some(_), Some(current)) if grace >= current => return GracefulStep::Unchanged,
        (Some(_), None) => return GracefulStep::Unchanged,
        // Shortened: the deadline moves back by the difference, as in Kubernetes, and
        // is never later than now + grace: a deadline that saturated (grace i64::MAX
        // reaches year 9999) would otherwise never come forward.
        (Some(at), Some(current)) => {
            let earlier = at.0.checked_sub(jiff::SignedDuration::from_secs(current - grace)).ok();
            let latest = deadline(now, grace);
            earlier.map_or(latest, |earlier| earlier.min(latest))
        }
    };
    GracefulStep::Mark { at: deletion_timestamp, grace }
}

/// Marks `pod` for deletion at `at` with `grace` seconds; the first mark adds one to its
/// generation (when it has one), as kube-apiserver's `BeforeDelete` does.
fn mark_for_deletion(pod: &mut Pod, at: jiff::Timestamp, grace: i64) {
    let metadata = &mut pod.metadata;
    if metadata.deletion_timestamp.is_none() {
        metadata.generation =
            metadata.generation.map(|generation| if generation > 0 { generation + 1 } else { generation });
    }
    metadata.deletion_timestamp = Some(Time(at));
    metadata.deletion_grace_period_seconds = Some(grace);
}

impl fmt::Debug for MemoryApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let store = lock(&self.store);
        f.debug_struct("MemoryApiServer")
            .field("pods", &store.pods.keys().collect::<Vec<_>>())
            .field("resource_version", &store.resource_version)
            .finish_non_exhaustive()
    }
}

/// The next resourceVersion: every write gets a new one, changed or not.
fn next_resource_version(counter: &mut u64) -> String {
    *counter += 1;
    counter.to_string()
}

/// A listener that panicked poisons nothing that matters: the store is only changed
/// before listeners run, so its data is consistent and we carry on.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The pod's key, with its namespace defaulted (and written back) as the API server does.
fn normalise(mut pod: Pod) -> Result<((String, String), Pod)> {
    let Some(name) = pod.metadata.name.clone().filter(|name| !name.is_empty()) else {
        return Err(ApiError::Invalid { message: "metadata.name: Required value".into() });
    };
    let namespace = match pod.metadata.namespace.as_deref() {
        Some(namespace) if !namespace.is_empty() => namespace.to_owned(),
        _ => DEFAULT_NAMESPACE.to_owned(),
    };
    pod.metadata.namespace = Some(namespace.clone());
    Ok(((namespace, name), pod))
}

/// Kubernetes reads an empty precondition as none.
fn check_uid(stored: &CompactPod, name: &str, precondition: Option<&str>) -> Result<()> {
    let actual = stored.uid().unwrap_or_default();
    match precondition {
        Some(wanted) if !wanted.is_empty() && wanted != actual => Err(ApiError::uid_mismatch(name, wanted, actual)),
        _ => Ok(()),
    }
}

fn check_resource_version(stored: &CompactPod, name: &str, precondition: Option<&str>) -> Result<()> {
    match precondition {
        Some(wanted) if !wanted.is_empty() && Some(wanted) != stored.resource_version() => {
            Err(ApiError::modified(name))
        }
        _ => Ok(()),
    }
}

fn not_found(namespace: &str, name: &str) -> ApiError {
    ApiError::NotFound { namespace: namespace.to_owned(), name: name.to_owned() }
}

fn invalid(name: &str, detail: &str) -> ApiError {
    ApiError::Invalid { message: format!("Pod \"{name}\" is invalid: {detail}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use k8s_openapi::api::core::v1::PodStatus;
    use std::sync::Arc;

    fn pod(namespace: &str, name: &str, uid: &str) -> Pod {
        testing::pod(name, uid).namespace(namespace).node("node").build()
    }

    fn phase(phase: &str) -> PodStatus {
        PodStatus { phase: Some(phase.into()), ..Default::default() }
    }

    fn status_update(uid: Option<&str>, rv: Option<&str>, status: PodStatus) -> StatusUpdate {
        StatusUpdate {
            namespace: "ns".into(),
            name: "a".into(),
            uid_precondition: uid.map(Into::into),
            resource_version_precondition: rv.map(Into::into),
            status,
        }
    }

    fn rv(pod: &Pod) -> &str {
        pod.metadata.resource_version.as_deref().unwrap_or_default()
    }

    /// `at` as a stored time has it: to the second (`metav1.Time`).
    fn to_the_second(at: jiff::Timestamp) -> jiff::Timestamp {
        jiff::Timestamp::from_second(at.as_second()).expect("in range")
    }

    fn stored_rv(pod: &CompactPod) -> &str {
        pod.resource_version().unwrap_or_default()
    }

    fn server_with_a() -> MemoryApiServer {
        let api = MemoryApiServer::new();
        api.create_pod(pod("ns", "a", "uid-a")).expect("create");
        api
    }

    #[test]
    fn every_write_gets_a_new_resource_version_even_unchanged() {
        let api = server_with_a();
        let first = api.get_pod("ns", "a").expect("get");
        assert_eq!(rv(&first), "1");
        let update = status_update(None, None, phase("Running"));
        let second = api.update_pod_status(update.clone()).expect("update");
        let third = api.update_pod_status(update).expect("same update again");
        assert_eq!((rv(&second), rv(&third)), ("2", "3"));
        let put = api.put_pod(Pod::clone(&third)).expect("put");
        assert_eq!(rv(&put), "4");
        let deleted = api.delete_pod("ns", "a", &DeleteOptions::default()).expect("delete");
        assert_eq!(rv(&deleted), "5");
        assert_eq!(api.resource_version(), 5);
    }

    #[test]
    fn a_store_that_skips_unchanged_writes_persists_only_changes() {
        let api = MemoryApiServer::new().skipping_unchanged_writes();
        api.create_pod(pod("ns", "a", "uid-a")).expect("create");
        let events = Arc::new(Mutex::new(0));
        let heard = Arc::clone(&events);
        api.subscribe(Box::new(move |_| *lock(&heard) += 1));
        let running = status_update(None, None, phase("Running"));
        let written = api.update_pod_status(running.clone()).expect("a change");
        assert_eq!((rv(&written), *lock(&events)), ("2", 1));

        // The same status again, by update and by patch: the stored pod, as it was.
        let again = api.update_pod_status(running).expect("the same status");
        assert_eq!((rv(&again), *lock(&events)), ("2", 1));
        let patch = StatusPatch {
            namespace: "ns".into(),
            name: "a".into(),
            uid_precondition: Some("uid-a".into()),
            patch: serde_json::json!({"status": {"phase": "Running"}}),
        };
        let patched = api.patch_pod_status(patch.clone()).expect("a patch that changes nothing");
        assert_eq!((rv(&patched), *lock(&events), api.resource_version()), ("2", 1, 2));

        // Preconditions still hold a write that would change nothing.
        let stale = status_update(Some("uid-a"), Some("1"), phase("Running"));
        assert_eq!(api.update_pod_status(stale).map_err(|e| e.reason()), Err("Conflict"));
        let other = StatusPatch { uid_precondition: Some("uid-b".into()), ..patch };
        assert_eq!(api.patch_pod_status(other).map_err(|e| e.reason()), Err("Conflict"));

        // A change is a write again.
        let failed = api.update_pod_status(status_update(None, None, phase("Failed"))).expect("a change");
        assert_eq!((rv(&failed), *lock(&events)), ("3", 2));
    }

    /// The account's counter is what the entries hold, summed afresh, through creates,
    /// status writes, replacements and deletions (graceful ones too); nothing at the end.
    #[test]
    fn held_bytes_follow_the_pods_held() {
        let afresh = |api: &MemoryApiServer| {
            let store = lock(&api.store);
            store.pods.iter().map(|(key, pod)| entry_bytes(key) + pod.held_bytes()).sum::<usize>()
        };
        for api in [MemoryApiServer::new(), MemoryApiServer::with_graceful_deletion()] {
            assert_eq!(api.held_bytes(), 0);
            api.create_pod(pod("ns", "a", "uid-a")).expect("create");
            let one = api.held_bytes();
            let json = api.get_compact("ns", "a").expect("get").json().len();
            assert!(one > json && one < json + 600, "the JSON and little else: {one} for {json}");
            api.create_pod(pod("ns", "b", "uid-b")).expect("create");
            let mut status = phase("Running");
            status.message = Some("m".repeat(1000));
            api.update_pod_status(status_update(None, None, status)).expect("update");
            assert!(api.held_bytes() >= 2 * one + 1000, "{}", api.held_bytes());
            assert_eq!(api.held_bytes(), afresh(&api));
            api.put_pod(pod("ns", "b", "uid-b")).expect("put");
            api.delete_pod("ns", "b", &DeleteOptions::default()).expect("delete or mark");
            assert_eq!(api.held_bytes(), afresh(&api));
            let now = DeleteOptions { grace_period_seconds: Some(0), ..DeleteOptions::default() };
            for name in ["a", "b"] {
                let _ = api.delete_pod("ns", name, &now);
            }
            assert_eq!(api.held_bytes(), 0);
        }
    }

    /// A status write changes only the status and the resourceVersion: the text is the
    /// one the whole pod so changed serialises to, its spec's bytes kept.
    #[test]
    fn a_status_write_is_the_whole_pod_written_anew() {
        let api = server_with_a();
        let before = api.get_pod("ns", "a").expect("get");
        let written = api.update_pod_status_compact(status_update(None, None, phase("Running"))).expect("update");
        let mut expected = Pod::clone(&before);
        expected.metadata.resource_version = Some("2".into());
        expected.status = Some(phase("Running"));
        assert_eq!(written.json(), serde_json::to_string(&expected).expect("JSON"));
    }

    #[test]
    fn status_update_keeps_spec_and_metadata() {
        let api = MemoryApiServer::new();
        let mut original = pod("ns", "a", "uid-a");
        original.metadata.labels = Some([("app".to_owned(), "x".to_owned())].into());
        original.status = Some(phase("Pending"));
        api.create_pod(original.clone()).expect("create");
        let written = api.update_pod_status(status_update(Some("uid-a"), Some("1"), phase("Running"))).expect("update");
        assert_eq!(written.spec, original.spec);
        assert_eq!(written.metadata.labels, original.metadata.labels);
        assert_eq!(written.metadata.uid.as_deref(), Some("uid-a"));
        assert_eq!(written.status, Some(phase("Running")));
        assert_eq!(api.get_pod("ns", "a").expect("get"), written);
    }

    #[test]
    fn a_write_shares_one_object_between_store_result_and_event() {
        let api = server_with_a();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        api.subscribe(Box::new(move |event| lock(&log).push(Arc::clone(event.pod()))));
        let written = api.update_pod_status_compact(status_update(None, None, phase("Running"))).expect("update");
        let stored = api.get_compact("ns", "a").expect("get");
        assert!(Arc::ptr_eq(&written, &stored));
        assert!(Arc::ptr_eq(&written, &lock(&seen)[0]));
        let by_uid = api.get_pod_by_uid("uid-a").expect("by uid");
        assert_eq!(*by_uid, written.pod().expect("parses"));
    }

    #[test]
    fn objects_handed_out_never_change() {
        let api = server_with_a();
        let before = api.get_pod("ns", "a").expect("get");
        // Shared: the write makes a new object and leaves the one handed out alone.
        let held = api.get_compact("ns", "a").expect("get");
        let shared = api.update_pod_status(status_update(None, None, phase("Running"))).expect("update");
        assert_eq!((rv(&before), before.status.clone()), ("1", None));
        assert_eq!((held.resource_version(), held.status().expect("status")), (Some("1"), None));
        assert_eq!((rv(&shared), shared.status.clone()), ("2", Some(phase("Running"))));
        drop((before, shared, held));
        let unique = api.update_pod_status(status_update(Some("uid-a"), Some("2"), phase("Failed"))).expect("update");
        assert_eq!((rv(&unique), unique.status.clone()), ("3", Some(phase("Failed"))));
        assert_eq!(unique.spec, pod("ns", "a", "uid-a").spec);
        let deleted = api.delete_pod("ns", "a", &DeleteOptions::default()).expect("delete");
        assert_eq!((rv(&unique), rv(&deleted)), ("3", "4"));
        assert_eq!(deleted.status, Some(phase("Failed")));
    }

    #[test]
    fn uid_precondition_conflicts_on_update_and_delete() {
        let api = server_with_a();
        let error =
            api.update_pod_status(status_update(Some("other"), None, phase("Running"))).expect_err("uid differs");
        assert_eq!(error.reason(), "Conflict");
        assert!(
            error.to_string().contains("Precondition failed: UID in precondition: other, UID in object meta: uid-a"),
            "{error}"
        );
        let options = DeleteOptions {
            uid_precondition: Some("other".into()),
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        let error = api.delete_pod("ns", "a", &options).expect_err("uid differs");
        assert_eq!(error.code(), 409);
        // Failed writes change nothing, not even the resourceVersion.
        assert_eq!(api.resource_version(), 1);
        let options = DeleteOptions {
            uid_precondition: Some("uid-a".into()),
            grace_period_seconds: Some(30),
            ..Default::default()
        };
        api.delete_pod("ns", "a", &options).expect("uid matches");
        assert!(api.list_pods().is_empty(), "deletion is immediate");
    }

    #[test]
    fn resource_version_precondition_conflicts() {
        let api = server_with_a();
        api.update_pod_status(status_update(None, Some("1"), phase("Running"))).expect("current");
        let error = api.update_pod_status(status_update(None, Some("1"), phase("Failed"))).expect_err("stale");
        assert!(error.to_string().contains("the object has been modified"), "{error}");
        let mut stale = pod("ns", "a", "uid-a");
        stale.metadata.resource_version = Some("1".into());
        assert_eq!(api.update_pod(stale).map_err(|e| e.reason()), Err("Conflict"));
        // An empty precondition is no precondition, as in Kubernetes.
        api.update_pod_status(status_update(Some(""), Some(""), phase("Failed"))).expect("none");
    }

    #[test]
    fn update_pod_replaces_spec_but_keeps_status() {
        let api = server_with_a();
        api.update_pod_status(status_update(None, None, phase("Running"))).expect("status");
        let mut replacement = pod("ns", "a", "");
        replacement.spec = None;
        let stored = api.update_pod(replacement).expect("update");
        assert_eq!(stored.spec, None);
        assert_eq!(stored.status, Some(phase("Running")));
        assert_eq!(stored.metadata.uid.as_deref(), Some("uid-a"));
    }

    #[test]
    fn missing_pods_are_not_found() {
        let api = MemoryApiServer::new();
        let not_found = ApiError::NotFound { namespace: "ns".into(), name: "a".into() };
        assert_eq!(api.get_pod("ns", "a"), Err(not_found.clone()));
        assert_eq!(api.update_pod_status(status_update(None, None, phase("Running"))), Err(not_found.clone()));
        assert_eq!(api.delete_pod("ns", "a", &DeleteOptions::default()), Err(not_found.clone()));
        assert_eq!(api.update_pod(pod("ns", "a", "uid-a")), Err(not_found));
        assert_eq!(api.remove_pod("ns", "a"), None);
        assert_eq!(api.resource_version(), 0);
    }

    #[test]
    fn create_validates_and_refuses_taken_names() {
        let api = server_with_a();
        let error = api.create_pod(pod("ns", "a", "uid-b")).expect_err("taken");
        assert_eq!((error.code(), error.reason()), (409, "AlreadyExists"));
        assert_eq!(api.create_pod(pod("ns", "b", "")).map_err(|e| e.reason()), Err("Invalid"));
        assert_eq!(api.create_pod(pod("ns", "", "u")).map_err(|e| e.code()), Err(422));
        let mut no_namespace = pod("ns", "c", "uid-c");
        no_namespace.metadata.namespace = None;
        let created = api.create_pod(no_namespace).expect("create");
        assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
        assert!(api.get_pod("default", "c").is_ok());
    }

    #[test]
    fn lists_sorted_and_finds_by_uid() {
        let api = MemoryApiServer::new();
        for (namespace, name, uid) in [("b", "x", "1"), ("a", "y", "2"), ("a", "x", "3")] {
            api.put_pod(pod(namespace, name, uid)).expect("put");
        }
        let keys: Vec<_> = api
            .list_pods()
            .into_iter()
            .map(|p| (p.metadata.namespace.unwrap_or_default(), p.metadata.name.unwrap_or_default()))
            .collect();
        let expected = [("a", "x"), ("a", "y"), ("b", "x")].map(|(n, m)| (n.to_owned(), m.to_owned()));
        assert_eq!(keys, expected);
        assert_eq!(api.get_pod_by_uid("2").and_then(|p| p.metadata.name.clone()), Some("y".into()));
        assert_eq!(api.get_pod_by_uid("9"), None);
    }

    #[test]
    fn graceful_deletion_marks_bound_pods_then_grace_zero_removes() {
        let api = MemoryApiServer::with_graceful_deletion();
        let mut bound = pod("ns", "a", "uid-a");
        bound.spec.as_mut().expect("spec").termination_grace_period_seconds = Some(10);
        bound.metadata.generation = Some(1);
        api.create_pod(bound).expect("create");
        let events = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&events);
        api.subscribe(Box::new(move |event| lock(&log).push(matches!(event, PodEvent::Deleted(_)))));
        // Times are stored to the second, as Kubernetes stores them.
        let before = to_the_second(jiff::Timestamp::now());
        let marked = api.delete_pod("ns", "a", &DeleteOptions::default()).expect("graceful");
        assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(10), "the pod's own grace period");
        assert_eq!(marked.metadata.generation, Some(2), "the first mark adds one");
        let at = marked.metadata.deletion_timestamp.as_ref().expect("deletionTimestamp").0;
        assert!(at >= before.checked_add(jiff::SignedDuration::from_secs(10)).expect("time"));
        assert_eq!(rv(&marked), "2");
        // A longer period changes nothing; a shorter one brings the deadline forward.
        let again = api.delete_pod("ns", "a", &DeleteOptions { grace_period_seconds: Some(60), ..Default::default() });
        assert_eq!(again.map(|p| rv(&p).to_owned()), Ok("2".to_owned()));
        let shorter = api
            .delete_pod("ns", "a", &DeleteOptions { grace_period_seconds: Some(4), ..Default::default() })
            .expect("shorter");
        assert_eq!(shorter.metadata.deletion_grace_period_seconds, Some(4));
        assert_eq!(shorter.metadata.generation, Some(2), "a later mark adds nothing");
        assert_eq!(
            shorter.metadata.deletion_timestamp.as_ref().map(|t| t.0),
            at.checked_sub(jiff::SignedDuration::from_secs(6)).ok()
        );
        // Preconditions hold either way.
        let stale = DeleteOptions {
            resource_version_precondition: Some("2".into()),
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        assert_eq!(api.delete_pod("ns", "a", &stale).map_err(|e| e.reason()), Err("Conflict"));
        let now = DeleteOptions {
            uid_precondition: Some("uid-a".into()),
            grace_period_seconds: Some(0),
            resource_version_precondition: Some("3".into()),
        };
        let removed = api.delete_pod("ns", "a", &now).expect("grace 0 removes");
        assert!(api.list_pods().is_empty());
        // Marked first (grace 0, the deadline brought forward by the 4 s left), then
        // removed: watchers hear both, as from kube-apiserver.
        assert_eq!(removed.metadata.deletion_grace_period_seconds, Some(0));
        assert_eq!(
            removed.metadata.deletion_timestamp.as_ref().map(|t| t.0),
            at.checked_sub(jiff::SignedDuration::from_secs(10)).ok()
        );
        assert_eq!(rv(&removed), "5");
        assert_eq!(*lock(&events), [false, false, false, true]);
        // Unbound and finished pods go at once.
        let mut unbound = pod("ns", "u", "uid-u");
        unbound.spec = None;
        api.create_pod(unbound).expect("create");
        api.delete_pod("ns", "u", &DeleteOptions::default()).expect("delete");
        let mut finished = pod("ns", "f", "uid-f");
        finished.status = Some(phase("Succeeded"));
        api.create_pod(finished).expect("create");
        api.delete_pod("ns", "f", &DeleteOptions::default()).expect("delete");
        assert!(api.list_pods().is_empty());
    }

    #[test]
    fn a_shorter_grace_period_after_a_saturated_deadline_comes_forward() {
        let api = MemoryApiServer::with_graceful_deletion();
        api.create_pod(pod("ns", "a", "uid-a")).expect("create");
        let forever = DeleteOptions { grace_period_seconds: Some(i64::MAX), ..Default::default() };
        let marked = api.delete_pod("ns", "a", &forever).expect("marked");
        assert_eq!(marked.metadata.deletion_timestamp.as_ref().map(|t| t.0), Some(to_the_second(jiff::Timestamp::MAX)));
        let before = to_the_second(jiff::Timestamp::now());
        let short = DeleteOptions { grace_period_seconds: Some(5), ..Default::default() };
        let shortened = api.delete_pod("ns", "a", &short).expect("shortened");
        let at = shortened.metadata.deletion_timestamp.as_ref().expect("deletionTimestamp").0;
        let latest = jiff::Timestamp::now().checked_add(jiff::SignedDuration::from_secs(5)).expect("time");
        assert!(at >= before && at <= latest, "{at}");
        assert_eq!(shortened.metadata.deletion_grace_period_seconds, Some(5));
    }

    #[test]
    fn subscribe_with_snapshot_starts_where_the_snapshot_ends() {
        let api = server_with_a();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let (version, pods) =
            api.subscribe_with_snapshot(Box::new(move |event| lock(&log).push(stored_rv(event.pod()).to_owned())));
        assert_eq!((version, pods.len()), (1, 1));
        api.update_pod_status(status_update(None, None, phase("Running"))).expect("update");
        assert_eq!(*lock(&seen), ["2"]);
    }

    #[test]
    fn listeners_see_events_in_order_and_may_read_the_store() {
        let api = Arc::new(MemoryApiServer::new());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (reader, log) = (Arc::downgrade(&api), Arc::clone(&seen));
        api.subscribe(Box::new(move |event| {
            let kind = match event {
                PodEvent::Added(_) => "added",
                PodEvent::Modified(_) => "modified",
                PodEvent::Deleted(_) => "deleted",
            };
            // Reading the store from a listener must not deadlock.
            let stored = reader.upgrade().map(|api| api.resource_version());
            lock(&log).push((kind, stored_rv(event.pod()).to_owned(), stored));
        }));
        api.create_pod(pod("ns", "a", "uid-a")).expect("create");
        api.update_pod_status(status_update(None, None, phase("Running"))).expect("update");
        let _ = api.update_pod_status(status_update(Some("x"), None, phase("Failed")));
        api.put_pod(pod("ns", "a", "uid-a")).expect("put");
        api.remove_pod("ns", "a").expect("remove");
        let expected = [("added", 1), ("modified", 2), ("modified", 3), ("deleted", 4)]
            .map(|(kind, n)| (kind, n.to_string(), Some(n)));
        assert_eq!(*lock(&seen), expected);
    }
}
