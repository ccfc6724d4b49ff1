//! What must hold after every step of every trace, whatever the trace does.
//!
//! The checks are plain functions over what a step did (its API calls, the statuses it
//! wrote, what the plugin has cached afterwards) so that tests can feed them hand-made
//! worlds; [`Checker`] keeps the little history they need between steps.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podstatus_core::{PodView, normalize_status, status_equal};
use serde_json::Value;

use podstatus_backends::MemoryApiServer;
use podstatus_backends::PodManager;
use podstatus_replay::Call;

/// The invariants, each with a stable name (the shrunk trace files carry it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    /// (a) While a pod's status stays cached, its version never decreases.
    VersionMonotonic,
    /// (b) A status is only ever written to its own pod (or its static pod's mirror).
    WriteOwnPod,
    /// (c) Every delete carries its target's UID as precondition and grace period 0.
    DeletePrecondition,
    /// (d) The API server's status of a pod never goes back to an older version than
    /// one already written to it.
    NoRollback,
    /// (e) Once quiet (faults gone, queue drained, one batch sync), every cached pod
    /// still in the API server has its cached status there.
    Quiescence,
    /// (f) The plugin never faults.
    NoFault,
    /// (g) The same trace gives byte-identical reports.
    Deterministic,
    /// Differential mode: two plugins give the same report for the same trace.
    SameReport,
    /// Final-state differential mode: two plugins leave the same API server pods and
    /// the same cache once the trace is quiet, whatever calls got them there.
    SameFinalState,
}

impl Invariant {
    /// Every invariant, in the order of the issue's list.
    pub const ALL: [Invariant; 9] = [
        Invariant::VersionMonotonic,
        Invariant::WriteOwnPod,
        Invariant::DeletePrecondition,
        Invariant::NoRollback,
        Invariant::Quiescence,
        Invariant::NoFault,
        Invariant::Deterministic,
        Invariant::SameReport,
        Invariant::SameFinalState,
    ];

    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::VersionMonotonic => "version-monotonic",
            Invariant::WriteOwnPod => "write-own-pod",
            Invariant::DeletePrecondition => "delete-precondition",
            Invariant::NoRollback => "no-rollback",
            Invariant::Quiescence => "quiescence",
            Invariant::NoFault => "no-fault",
            Invariant::Deterministic => "deterministic",
            Invariant::SameReport => "same-report",
            Invariant::SameFinalState => "same-final-state",
        }
    }

    /// The invariant of a name.
    pub fn from_name(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A broken invariant: which, at which step (0-based, in the trace as run, quiescence
/// steps included), and what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: Invariant,
    /// At which step.
    pub step: usize,
    /// What was seen.
    pub message: String,
    /// The known issue this is an instance of (reported only by a strict checker).
    pub known: Option<KnownIssue>,
}

impl Violation {
    /// A violation of `invariant` at `step`, not (yet) known as an issue.
    pub fn new(invariant: Invariant, step: usize, message: impl Into<String>) -> Self {
        Violation { invariant, step, message: message.into(), known: None }
    }

    /// Whether `other` is the same kind of failure (what shrinking preserves).
    pub fn same_kind(&self, other: &Violation) -> bool {
        self.invariant == other.invariant && self.known == other.known
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at step {}: {}", self.invariant, self.step, self.message)?;
        match self.known {
            Some(issue) => write!(f, " (known issue {issue})"),
            None => Ok(()),
        }
    }
}

/// A violation the fuzzer found in the logic and that is recorded rather than fixed
/// (its shrunk trace is in `tests/fixtures/fuzz-findings/`). A tolerant [`Checker`]
/// counts these instead of failing on them, so that fuzzing can look for other bugs;
/// a strict one fails on them like on any other violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KnownIssue {
    /// (d) on a static pod's mirror pod: the sync of a queued request checks the
    /// version written under the static pod's UID, but a successful write records it
    /// under the mirror pod's UID (as the 2017 Go code does), so every queued status of
    /// a static pod is written, even one older than a status a batch sync already
    /// wrote to the mirror pod.
    StaticPodQueuedRollback,
    /// (d) on a pod being deleted: once a pod can be deleted, the sync's "needs update"
    /// says yes whatever the version (as the 2017 Go code does), so a stale queued
    /// status is written over a newer one (just before the pod is deleted, or for good
    /// when the delete fails).
    StaleWriteBeforeDelete,
    /// (d) with a status whose cache entry is gone: queued snapshots outlive
    /// `remove-orphaned-statuses` (as the 2017 Go code's channel does) and are still
    /// written, although the batch sync has forgotten the version written for the pod
    /// or a new cache entry for it has started its versions again at 1.
    OrphanedQueuedWrite,
    /// (d) after a failed reconcile: a batch sync that finds the API server's status
    /// drifted forgets the version written, to force its write (as the 2017 Go code
    /// does); when that write fails, nothing records a written version any more, and a
    /// stale queued snapshot is written over the newer status.
    FailedReconcileQueuedWrite,
}

impl KnownIssue {
    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            KnownIssue::StaticPodQueuedRollback => "static-pod-queued-rollback",
            KnownIssue::StaleWriteBeforeDelete => "stale-write-before-delete",
            KnownIssue::OrphanedQueuedWrite => "orphaned-queued-write",
            KnownIssue::FailedReconcileQueuedWrite => "failed-reconcile-queued-write",
        }
    }

    /// Every known issue.
    pub const ALL: [KnownIssue; 4] = [
        KnownIssue::StaticPodQueuedRollback,
        KnownIssue::StaleWriteBeforeDelete,
        KnownIssue::OrphanedQueuedWrite,
        KnownIssue::FailedReconcileQueuedWrite,
    ];

    /// The known issue of a name.
    pub fn from_name(name: &str) -> Option<KnownIssue> {
        KnownIssue::ALL.into_iter().find(|i| i.name() == name)
    }

    /// Its finding, under `tests/fixtures/fuzz-findings/`.
    pub fn fixture(self) -> &'static str {
        match self {
            KnownIssue::StaticPodQueuedRollback => "no-rollback-static-pod-queued-write.trace.json",
            KnownIssue::StaleWriteBeforeDelete => "no-rollback-stale-write-before-delete.trace.json",
            KnownIssue::OrphanedQueuedWrite => "no-rollback-orphaned-queued-write.trace.json",
            KnownIssue::FailedReconcileQueuedWrite => "no-rollback-failed-reconcile-queued-write.trace.json",
        }
    }
}

impl fmt::Display for KnownIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A status the plugin wrote, as the API server stored it (normalised for its pod, see
/// [`Write::of`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub namespace: String,
    pub name: String,
    /// The UID of the object the write changed.
    pub target_uid: String,
    /// Whether that object is being deleted (has a deletionTimestamp).
    pub target_deleting: bool,
    /// Whether the write was made while draining the sync queue (a `sync` step), i.e.
    /// of a queued snapshot, rather than by a batch sync of the latest status.
    pub from_queue: bool,
    pub status: PodStatus,
    /// The status the object had just before (normalised likewise), if it was known.
    pub before: Option<PodStatus>,
}

impl Write {
    /// The write that left `pod` in the API server: its status normalised for its spec,
    /// so that it compares with cached statuses as the plugin compares them (a logic
    /// version that patches may leave an empty list out, or a time at sub-second
    /// precision).
    pub fn of(pod: &Pod) -> Write {
        let mut status = pod.status.clone().unwrap_or_default();
        if let Ok(view) = PodView::parse_with_uid(&serde_json::to_string(pod).unwrap_or_default()) {
            normalize_status(&view.spec, &mut status);
        }
        Write {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            target_uid: pod.metadata.uid.clone().unwrap_or_default(),
            target_deleting: pod.metadata.deletion_timestamp.is_some(),
            from_queue: false,
            status,
            before: None,
        }
    }
}

/// A status the plugin has cached, as `get-pod-status` returned it.
#[derive(Clone, Debug, PartialEq)]
pub struct Cached {
    pub version: u64,
    pub status: PodStatus,
}

/// What the plugin has cached after a step: for each pod (by the UID the cache keys it
/// under: a mirror pod's UID is translated to its static pod's), its status or None.
pub type CacheView = BTreeMap<String, Option<Cached>>;

/// How a logic version turns its cached status into what the API server stores, which
/// is what its writes and the API server are compared with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WriteSemantics {
    /// The cached status replaces the API server's (logic v1, the 2017 Go code).
    #[default]
    Replace,
    /// Merged as upstream 1.27 merges (logic v2 and v3, contract 0.1.1): conditions the
    /// kubelet does not own stay as the API server has them, a terminal phase (with its
    /// reason and message) waits while the pod's containers could still run, and a
    /// terminal phase turns Ready and ContainersReady false. v3 patches against what it
    /// last wrote (or the pod manager's copy), so fields its status leaves out keep what
    /// other writers put there: the stored status holds the cached one, not only it.
    Merge,
}

impl WriteSemantics {
    /// The semantics of `plugin`, before it has run anything: contract
    /// 0.1.0 is logic v1 (replace), 0.1.1 is logic v2 or v3 (merge). A 0.2.0 plugin may
    /// be any logic version; logic v1 is the one without startup probes, so a plugin
    /// that answers `set-container-startup` with `unsupported` replaces, the others
    /// merge. (Asking about a pod nobody knows changes nothing.)
    pub fn of(plugin: &mut dyn podstatus_runtime::Plugin) -> Self {
        use podstatus_runtime::{CallError, Contract, PluginExt};
        match plugin.contract() {
            Contract::V0_1_0 => WriteSemantics::Replace,
            Contract::V0_1_1 => WriteSemantics::Merge,
            Contract::V0_2_0 | Contract::V0_2_1 => match plugin.set_container_startup("", "", false) {
                Err(CallError::Unsupported { .. }) => WriteSemantics::Replace,
                _ => WriteSemantics::Merge,
            },
        }
    }

    /// Whether `stored` (in the API server) is what writing `cached` leaves there once
    /// the writes have settled (after quiescence).
    pub fn stores(self, cached: &PodStatus, stored: &PodStatus) -> bool {
        match self {
            WriteSemantics::Replace => status_equal(cached, stored),
            WriteSemantics::Merge => {
                let (cached, stored) = merge_projection(cached, stored);
                status_equal(&cached, &only_fields_of(&stored, &cached))
            }
        }
    }

    /// Whether one write that left `written` in the API server, over `before`, can have
    /// been of `cached`. Under [`WriteSemantics::Merge`], every value written must be
    /// `cached`'s or `before`'s (lists merged by their keys, as strategic merge does):
    /// v3 patches only what changed since its last write, so a value another writer
    /// put there meanwhile stays until the batch repairs it.
    pub fn wrote(self, cached: &PodStatus, written: &PodStatus, before: Option<&PodStatus>) -> bool {
        match self {
            WriteSemantics::Replace => status_equal(cached, written),
            WriteSemantics::Merge => {
                if self.stores(cached, written) {
                    return true;
                }
                let (cached, written) = merge_projection(cached, written);
                let value = |s: &PodStatus| serde_json::to_value(s).unwrap_or_default();
                let before = before.map(|b| merge_projection(b, &written).0).map(|b| value(&b)).unwrap_or_default();
                merged_from(&value(&written), &value(&cached), &before)
            }
        }
    }
}

/// `cached` and `stored` as a merging write relates them: what upstream's merge keeps
/// from the API server (conditions the kubelet does not own, a terminal phase held
/// back, Ready and ContainersReady forced false in a terminal phase) left out of both,
/// and condition times left out (upstream's isPodStatusByKubeletEqual compares a
/// condition by status, reason and message: a changed time alone is not drift).
fn merge_projection(cached: &PodStatus, stored: &PodStatus) -> (PodStatus, PodStatus) {
    let terminal = |phase: &Option<String>| matches!(phase.as_deref(), Some("Succeeded" | "Failed"));
    let (mut cached, mut stored) = (cached.clone(), stored.clone());
    if terminal(&cached.phase) && !terminal(&stored.phase) {
        cached.phase = stored.phase.clone();
        cached.reason = stored.reason.clone();
        cached.message = stored.message.clone();
    }
    // Ready and ContainersReady come first in the list: a terminal phase forces them.
    let compared = if terminal(&stored.phase) { &KUBELET_CONDITIONS[2..] } else { &KUBELET_CONDITIONS[..] };
    for status in [&mut cached, &mut stored] {
        if let Some(conditions) = &mut status.conditions {
            conditions.retain(|c| compared.contains(&c.type_.as_str()));
            for condition in conditions.iter_mut() {
                condition.last_transition_time = None;
                condition.last_probe_time = None;
            }
        }
    }
    (cached, stored)
}

/// Whether every value in `written` is `cached`'s or `before`'s, objects compared key by
/// key and lists of named items (conditions by type, container statuses by name) item
/// by item, as a strategic merge patch of part of `cached` onto `before` leaves them.
fn merged_from(written: &Value, cached: &Value, before: &Value) -> bool {
    if written == cached || written == before {
        return true;
    }
    let field = |v: &'_ Value, key: &str| v.get(key).cloned().unwrap_or(Value::Null);
    match written {
        Value::Object(fields) => {
            fields.iter().all(|(key, value)| merged_from(value, &field(cached, key), &field(before, key)))
        }
        Value::Array(items) => {
            let key_of = |item: &Value| ["type", "name"].into_iter().find_map(|k| item.get(k).cloned());
            let find = |list: &Value, key: &Value| {
                list.as_array()
                    .and_then(|l| l.iter().find(|i| key_of(i).as_ref() == Some(key)).cloned())
                    .unwrap_or(Value::Null)
            };
            items.iter().all(|item| match key_of(item) {
                Some(key) => merged_from(item, &find(cached, &key), &find(before, &key)),
                None => false,
            })
        }
        _ => false,
    }
}

/// `stored` with only the fields `cached` sets, only the conditions of the types
/// `cached` has, and only the fields of each that `cached`'s sets (a reason another
/// writer added to the kubelet's condition stays: v3 does not read it back).
fn only_fields_of(stored: &PodStatus, cached: &PodStatus) -> PodStatus {
    // (`stored` and `cached` are any two statuses: the first is cut to the second's.)
    let (Ok(Value::Object(mut stored_fields)), Ok(Value::Object(cached_fields))) =
        (serde_json::to_value(stored), serde_json::to_value(cached))
    else {
        return stored.clone();
    };
    stored_fields.retain(|key, _| cached_fields.contains_key(key));
    // Conditions: only the types `cached` has, each with only the fields it sets there.
    let cached_conditions = cached_fields.get("conditions").and_then(Value::as_array);
    if let (Some(Value::Array(conditions)), Some(cached_conditions)) =
        (stored_fields.get_mut("conditions"), cached_conditions)
    {
        conditions.retain_mut(|condition| {
            let same_type = cached_conditions.iter().find(|c| c.get("type") == condition.get("type"));
            match (same_type.and_then(Value::as_object), condition.as_object_mut()) {
                (Some(cached_condition), Some(fields)) => {
                    fields.retain(|key, _| cached_condition.contains_key(key));
                    true
                }
                _ => false,
            }
        });
    }
    serde_json::from_value(Value::Object(stored_fields)).unwrap_or_default()
}

/// The condition types the kubelet owns (upstream's `PodConditionByKubelet`), Ready and
/// ContainersReady first.
const KUBELET_CONDITIONS: [&str; 5] =
    ["Ready", "ContainersReady", "Initialized", "PodReadyToStartContainers", "PodHasNetwork"];

/// The history the per-step invariants need.
#[derive(Debug, Default)]
pub struct Checker {
    /// Whether known issues are violations too.
    strict: bool,
    /// How the plugin's writes relate to its cached statuses.
    semantics: WriteSemantics,
    /// Known issues seen (not failed on when not strict), with how often.
    known: BTreeMap<KnownIssue, usize>,
    /// Cache key -> the current incarnation of its cache entry. An entry that
    /// disappears and comes back starts a new incarnation (its versions start over).
    entries: BTreeMap<String, Entry>,
    /// Cache key -> every (incarnation, version, status) seen cached.
    history: BTreeMap<String, Vec<(u32, u64, PodStatus)>>,
    /// (object UID, cache key) -> the newest (incarnation, version) written to it.
    written: BTreeMap<(String, String), (u32, u64)>,
    /// (namespace, name), or ("", pod UID) for a held sync's call -> the call that wrote the pod's status in the sync still
    /// going on for it (see [`SyncWrites`]).
    sync_writes: SyncWrites,
    /// Mirror pod UID -> every static pod UID the pod manager ever translated it to. A
    /// sync planned while a static pod was held may write after the pod manager has
    /// let it go (a held call released later), so a write is judged by the pairings
    /// seen up to it, not only by today's.
    mirror_pairs: BTreeMap<String, BTreeSet<String>>,
}

/// The status write of each pod's sync in progress, across steps: a sync whose calls
/// a trace holds (`hold-api`) may write in one step and delete in a later one. A GET
/// starts a sync (logic v1 and v2 read first; v3 reads only after a refused patch) and
/// forgets the pod's earlier write; a delete ends it. Per-pod order (one sync of a pod
/// in flight) makes the write found the same sync's.
pub type SyncWrites = BTreeMap<(String, String), Call>;

#[derive(Debug, Default)]
struct Entry {
    incarnation: u32,
    /// The version cached now; None while the pod has no cached status.
    version: Option<u64>,
}

impl Checker {
    /// A checker that has seen nothing yet and counts [`KnownIssue`]s without failing.
    pub fn new() -> Self {
        Self::default()
    }

    /// A checker that fails on known issues too.
    pub fn strict() -> Self {
        Checker { strict: true, ..Self::default() }
    }

    /// This checker, for a plugin whose writes have `semantics`.
    pub fn with_semantics(self, semantics: WriteSemantics) -> Self {
        Checker { semantics, ..self }
    }

    /// The known issues seen so far, with how often.
    pub fn known_issues(&self) -> &BTreeMap<KnownIssue, usize> {
        &self.known
    }

    /// Records the pod manager's mirror-to-static UID translations as they are now
    /// (`get-uid-translations`' second map). Called before the first step and after
    /// each one, so every pairing a planned sync could have seen is known.
    pub fn note_mirror_pairs(&mut self, mirror_to_static: &BTreeMap<String, String>) {
        for (mirror, static_uid) in mirror_to_static {
            self.mirror_pairs.entry(mirror.clone()).or_default().insert(static_uid.clone());
        }
    }

    /// Checks one step: its calls and writes against what was cached before it (every
    /// status written must have been cached by an earlier step), then what is cached
    /// after it. A write to a mirror pod may carry the status of any static pod it was
    /// paired with so far ([`Checker::note_mirror_pairs`]).
    pub fn step(&mut self, step: usize, calls: &[Call], writes: &[Write], cached: &CacheView) -> Result<(), Violation> {
        check_deletes(step, calls, self.semantics, &mut self.sync_writes)?;
        for write in writes {
            self.check_write(step, write)?;
        }
        self.observe(step, cached)
    }

    /// (a): records what is cached after `step`, checking that no version went down.
    pub fn observe(&mut self, step: usize, cached: &CacheView) -> Result<(), Violation> {
        for (key, found) in cached {
            let entry = self.entries.entry(key.clone()).or_default();
            match found {
                None => {
                    if entry.version.take().is_some() {
                        entry.incarnation += 1;
                    }
                }
                Some(now) => {
                    if let Some(before) = entry.version
                        && now.version < before
                    {
                        return Err(Violation::new(
                            Invariant::VersionMonotonic,
                            step,
                            format!("the cached status of pod {key} went from version {before} to {}", now.version),
                        ));
                    }
                    entry.version = Some(now.version);
                    let incarnation = entry.incarnation;
                    let history = self.history.entry(key.clone()).or_default();
                    if !history.iter().any(|(i, v, _)| *i == incarnation && *v == now.version) {
                        history.push((incarnation, now.version, now.status.clone()));
                    }
                }
            }
        }
        Ok(())
    }

    /// (b) and (d) for one write.
    fn check_write(&mut self, step: usize, write: &Write) -> Result<(), Violation> {
        let target = &write.target_uid;
        let object = format!("{}/{} (UID {target})", write.namespace, write.name);
        // Every pod that ever had this status cached (equal as the plugin compares
        // statuses), with every version that had it (a status can come back: A, B, A).
        let mut sources: BTreeMap<&str, Vec<(u32, u64)>> = BTreeMap::new();
        for (key, seen) in &self.history {
            for (incarnation, version, status) in seen {
                if self.semantics.wrote(status, &write.status, write.before.as_ref()) {
                    sources.entry(key.as_str()).or_default().push((*incarnation, *version));
                }
            }
        }
        if sources.is_empty() {
            return Err(Violation::new(
                Invariant::WriteOwnPod,
                step,
                format!("a status was written to {object} that no pod ever had cached"),
            ));
        }
        let statics = self.mirror_pairs.get(target.as_str());
        let own: Vec<(&str, Vec<(u32, u64)>)> = sources
            .iter()
            .filter(|(key, _)| **key == target.as_str() || statics.is_some_and(|s| s.contains(**key)))
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        if own.is_empty() {
            let owners: Vec<&str> = sources.keys().copied().collect();
            return Err(Violation::new(
                Invariant::WriteOwnPod,
                step,
                format!(
                    "the status of pod {} was written to {object}, which is not that pod nor its mirror pod",
                    owners.join(", ")
                ),
            ));
        }
        // (d): the write is taken to be the oldest version with this content that is
        // not older than what was written before (the choice that leaves the most room
        // for later writes); only when every version with this content is older, for
        // every candidate owner, is it a rollback.
        let mut rollback = None;
        let mut forward = false;
        for (key, versions) in &own {
            let slot = (target.clone(), key.to_string());
            let before = self.written.get(&slot).copied();
            match versions.iter().filter(|v| before.is_none_or(|b| **v >= b)).min() {
                Some(now) => {
                    forward = true;
                    self.written.insert(slot, *now);
                }
                None => {
                    let newest = versions.iter().max().copied().unwrap_or_default();
                    rollback.get_or_insert((key.to_string(), before.unwrap_or_default(), newest));
                }
            }
        }
        let (false, Some((key, before, now))) = (forward, rollback) else { return Ok(()) };
        // Every known issue is a stale queued snapshot written by the queue's sync; a
        // rollback by a batch sync (which writes the latest status) would be new.
        let known = write.from_queue.then(|| {
            let entry = self.entries.get(&key);
            let orphaned = entry.is_none_or(|e| e.version.is_none() || now.0 < e.incarnation);
            if key != *target {
                KnownIssue::StaticPodQueuedRollback
            } else if write.target_deleting {
                KnownIssue::StaleWriteBeforeDelete
            } else if orphaned {
                KnownIssue::OrphanedQueuedWrite
            } else {
                KnownIssue::FailedReconcileQueuedWrite
            }
        });
        if let Some(issue) = known
            && !self.strict
        {
            *self.known.entry(issue).or_default() += 1;
            return Ok(());
        }
        let message = format!(
            "{object} went back from {} to {} of pod {key}'s status",
            describe_version(before),
            describe_version(now)
        );
        Err(Violation { known, ..Violation::new(Invariant::NoRollback, step, message) })
    }
}

fn describe_version((incarnation, version): (u32, u64)) -> String {
    if incarnation == 0 {
        format!("version {version}")
    } else {
        format!("version {version} (cache entry #{})", incarnation + 1)
    }
}

/// (c): every delete of `calls` carries a UID precondition, the UID of the object the
/// same sync just wrote the status of, and grace period 0.
pub fn check_deletes(
    step: usize,
    calls: &[Call],
    semantics: WriteSemantics,
    sync_writes: &mut SyncWrites,
) -> Result<(), Violation> {
    for call in calls {
        // A held call names its sync's pod: two pods of one name (one recreated) may
        // have syncs in flight at once.
        let key = match &call.sync {
            Some(uid) => (String::new(), uid.clone()),
            None => (call.namespace.clone(), call.name.clone()),
        };
        match call.verb {
            "get" => {
                sync_writes.remove(&key);
                continue;
            }
            "update" | "patch" if call.outcome == "ok" => {
                sync_writes.insert(key, call.clone());
                continue;
            }
            "delete" => {}
            _ => continue,
        }
        let object = format!("{}/{}", call.namespace, call.name);
        let fail = |message: String| Err(Violation::new(Invariant::DeletePrecondition, step, message));
        if call.grace_period_seconds != Some(Some(0)) {
            return fail(format!(
                "the delete of {object} asked for grace period {:?}, not 0",
                call.grace_period_seconds.flatten()
            ));
        }
        let precondition = match &call.precondition_uid {
            Some(Some(uid)) if !uid.is_empty() => uid,
            _ => return fail(format!("the delete of {object} carries no UID precondition")),
        };
        let written = sync_writes.remove(&key);
        match written.and_then(|c| c.target_uid.clone().flatten()) {
            // Upstream 1.27 sends no patch when the status is unchanged, so a pod whose
            // terminal status is already written is deleted straight away: the
            // precondition must then name the pod the delete found.
            None if semantics == WriteSemantics::Merge => match call.target_uid.clone().flatten() {
                Some(target) if &target != precondition => {
                    return fail(format!(
                        "the delete of {object} has precondition UID {precondition}, but the pod there was {target}"
                    ));
                }
                _ => {}
            },
            None => return fail(format!("{object} was deleted without its status being written first")),
            Some(target) if &target != precondition => {
                return fail(format!(
                    "the delete of {object} has precondition UID {precondition}, but the pod written was {target}"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// (e): after quiescence, every cached pod that the pod manager still holds and the API
/// server still has under the same UID (for a static pod: its mirror pod) has an API
/// status semantically equal to the cached one.
pub fn check_quiescence(
    step: usize,
    cached: &CacheView,
    pod_manager: &PodManager,
    store: &MemoryApiServer,
    semantics: WriteSemantics,
) -> Result<(), Violation> {
    for (key, found) in cached {
        let Some(cached) = found else { continue };
        // A pod the kubelet no longer knows is not the status manager's to reconcile.
        let Some(pod) = pod_manager.get_any(key) else { continue };
        if pod.is_mirror() {
            continue;
        }
        let target_uid = if pod.is_static() {
            match pod_manager.get_mirror_of(&pod).and_then(|m| m.uid().map(str::to_owned)) {
                Some(uid) => uid,
                None => continue,
            }
        } else {
            key.clone()
        };
        let Some(api_pod) = store.get_pod_by_uid(&target_uid) else { continue };
        if let Some(difference) = status_difference(&api_pod, &cached.status, semantics) {
            return Err(Violation::new(
                Invariant::Quiescence,
                step,
                format!(
                    "after quiescence the API server's status of {}/{} (UID {target_uid}) differs from pod {key}'s cached status (version {}): {difference}",
                    api_pod.metadata.namespace.as_deref().unwrap_or_default(),
                    api_pod.metadata.name.as_deref().unwrap_or_default(),
                    cached.version
                ),
            ));
        }
    }
    Ok(())
}

/// None when `api_pod`'s status equals `cached` after normalisation (with the plugin's
/// own normalisation and Go-semantic equality), else where they first differ.
pub fn status_difference(api_pod: &Pod, cached: &PodStatus, semantics: WriteSemantics) -> Option<String> {
    let json = serde_json::to_string(api_pod).unwrap_or_default();
    let view = match PodView::parse_with_uid(&json) {
        Ok(view) => view,
        Err(e) => return Some(format!("the API server's pod does not parse: {e}")),
    };
    let mut api_status = api_pod.status.clone().unwrap_or_default();
    normalize_status(&view.spec, &mut api_status);
    let mut cached = cached.clone();
    normalize_status(&view.spec, &mut cached);
    if semantics.stores(&cached, &api_status) {
        return None;
    }
    let api = without_empty(serde_json::to_value(&api_status).unwrap_or_default());
    let cache = without_empty(serde_json::to_value(&cached).unwrap_or_default());
    Some(first_difference(&api, &cache, "status").unwrap_or_else(|| "they differ semantically".into()))
}

/// `value` without null fields and empty lists, which Go reads as equal to absent (so
/// that a difference message points at a real difference).
fn without_empty(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
                .map(|(k, v)| (k, without_empty(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_empty).collect()),
        other => other,
    }
}

/// The first path where two JSON values differ, with both sides.
pub fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (l, r) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                first_difference(l, r, &format!("{path}.{k}"))
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (l, r))| first_difference(l, r, &format!("{path}[{i}]")))
        }
        _ if a == b => None,
        _ => Some(format!("{path}: {} vs {}", abbreviate(a), abbreviate(b))),
    }
}

fn abbreviate(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.len() <= 160 {
        return text;
    }
    let mut cut = 157;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

/// (g): two runs' reports must be the same bytes.
pub fn check_deterministic(first: &[u8], second: &[u8]) -> Result<(), Violation> {
    if first == second {
        return Ok(());
    }
    let a = String::from_utf8_lossy(first);
    let b = String::from_utf8_lossy(second);
    let position = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let step = step_of_report_position(&a, position);
    let around = |s: &str| {
        let start = s.floor_char_boundary(position.saturating_sub(60));
        let end = s.ceil_char_boundary((position + 60).min(s.len()));
        s[start..end].to_string()
    };
    Err(Violation::new(
        Invariant::Deterministic,
        step,
        format!("two runs of the same trace gave different reports: ...{}... vs ...{}...", around(&a), around(&b)),
    ))
}

/// Which step a byte of a compact report belongs to, as near as can be told (the
/// `"step":N` of the call it is in, else 0).
fn step_of_report_position(report: &str, position: usize) -> usize {
    let before = &report[..report.floor_char_boundary(position)];
    before
        .rfind("\"step\":")
        .and_then(|i| before[i + 7..].split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(verb: &'static str, name: &str) -> Call {
        Call {
            step: 0,
            verb,
            subresource: None,
            namespace: "ns".into(),
            name: name.into(),
            target_uid: None,
            precondition_uid: None,
            grace_period_seconds: None,
            outcome: "ok",
            refused: None,
            sync: None,
        }
    }

    fn update(name: &str, target: &str) -> Call {
        Call { subresource: Some("status"), target_uid: Some(Some(target.into())), ..call("update", name) }
    }

    fn delete(name: &str, precondition: Option<&str>, grace: Option<i64>) -> Call {
        Call {
            precondition_uid: Some(precondition.map(str::to_string)),
            grace_period_seconds: Some(grace),
            ..call("delete", name)
        }
    }

    fn status(phase: &str) -> PodStatus {
        PodStatus { phase: Some(phase.into()), ..Default::default() }
    }

    fn json_status(value: serde_json::Value) -> PodStatus {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_merging_write_may_keep_what_another_writer_put_there() {
        let cached = json_status(serde_json::json!({"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": "Ready", "status": "False"}]}));
        let before = json_status(serde_json::json!({"startTime": "2026-01-01T00:00:09Z",
            "conditions": [{"type": "Ready", "status": "True", "reason": "Foreign"}]}));
        // v3 patched the phase and Ready's status; the start time and Ready's reason
        // stayed as the other writer left them.
        let written = json_status(serde_json::json!({"phase": "Running", "startTime": "2026-01-01T00:00:09Z",
            "conditions": [{"type": "Ready", "status": "False", "reason": "Foreign"}]}));
        assert!(WriteSemantics::Merge.wrote(&cached, &written, Some(&before)));
        assert!(!WriteSemantics::Replace.wrote(&cached, &written, Some(&before)));
        // A value neither had is no merge of them.
        let forged = json_status(serde_json::json!({"phase": "Failed", "startTime": "2026-01-01T00:00:09Z"}));
        assert!(!WriteSemantics::Merge.wrote(&cached, &forged, Some(&before)));
    }

    #[test]
    fn a_merging_write_holds_a_terminal_phase_back_and_keeps_foreign_conditions() {
        let cached = json_status(
            serde_json::json!({"phase": "Succeeded", "conditions": [{"type": "Initialized", "status": "True"}]}),
        );
        let stored = json_status(serde_json::json!({"phase": "Running", "conditions": [
            {"type": "example.com/gate", "status": "True"}, {"type": "Initialized", "status": "True"}]}));
        assert!(WriteSemantics::Merge.stores(&cached, &stored));
        assert!(!WriteSemantics::Replace.stores(&cached, &stored));
    }

    fn cached(entries: &[(&str, Option<(u64, &str)>)]) -> CacheView {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(|(version, phase)| Cached { version, status: status(phase) })))
            .collect()
    }

    fn write(name: &str, target: &str, phase: &str) -> Write {
        Write {
            namespace: "ns".into(),
            name: name.into(),
            target_uid: target.into(),
            target_deleting: false,
            from_queue: false,
            status: status(phase),
            before: None,
        }
    }

    #[test]
    fn names_round_trip() {
        for i in Invariant::ALL {
            assert_eq!(Invariant::from_name(i.name()), Some(i));
        }
    }

    #[test]
    fn a_version_going_down_is_caught_but_a_new_cache_entry_starts_over() {
        let mut c = Checker::new();
        c.observe(0, &cached(&[("u1", Some((3, "Running")))])).unwrap();
        let v = c.observe(1, &cached(&[("u1", Some((2, "Running")))])).unwrap_err();
        assert_eq!(v.invariant, Invariant::VersionMonotonic);
        assert_eq!(v.step, 1);

        let mut c = Checker::new();
        c.observe(0, &cached(&[("u1", Some((3, "Running")))])).unwrap();
        c.observe(1, &cached(&[("u1", None)])).unwrap();
        c.observe(2, &cached(&[("u1", Some((1, "Pending")))])).unwrap();
    }

    #[test]
    fn a_write_on_another_pods_uid_is_caught() {
        let mut c = Checker::new();
        c.observe(0, &cached(&[("old-uid", Some((1, "Running")))])).unwrap();
        // The pod was recreated: the old pod's status lands on the new object.
        let v = c.step(1, &[update("web", "new-uid")], &[write("web", "new-uid", "Running")], &CacheView::new());
        let v = v.unwrap_err();
        assert_eq!(v.invariant, Invariant::WriteOwnPod);
        assert!(v.message.contains("old-uid"), "{}", v.message);
        // On its own UID it is fine; on a mirror pod that translated to it too.
        let mut c = Checker::new();
        c.observe(0, &cached(&[("static", Some((1, "Running")))])).unwrap();
        let unpaired = c.step(1, &[update("web", "mirror")], &[write("web", "mirror", "Running")], &CacheView::new());
        assert_eq!(unpaired.unwrap_err().invariant, Invariant::WriteOwnPod);
        c.note_mirror_pairs(&BTreeMap::from([("mirror".to_string(), "static".to_string())]));
        c.step(2, &[update("web", "mirror")], &[write("web", "mirror", "Running")], &CacheView::new()).unwrap();
        // A status nobody had cached is caught too.
        let v = c.step(3, &[], &[write("web", "mirror", "Failed")], &CacheView::new()).unwrap_err();
        assert_eq!(v.invariant, Invariant::WriteOwnPod);
    }

    #[test]
    fn a_held_write_may_land_on_a_mirror_pod_after_its_static_pod_left() {
        // The pairing was seen while the static pod was held; a sync planned then and
        // released after the pod manager let the static pod go still writes its status
        // to that mirror pod, as the kubelet's in-flight sync does.
        let mut c = Checker::new();
        c.observe(0, &cached(&[("static", Some((1, "Running")))])).unwrap();
        c.note_mirror_pairs(&BTreeMap::from([("mirror".to_string(), "static".to_string())]));
        c.note_mirror_pairs(&BTreeMap::new());
        c.step(1, &[update("web", "mirror")], &[write("web", "mirror", "Running")], &CacheView::new()).unwrap();
        // Another static pod's status was never paired with that mirror pod.
        c.observe(2, &cached(&[("other", Some((1, "Failed")))])).unwrap();
        let v = c.step(3, &[update("web", "mirror")], &[write("web", "mirror", "Failed")], &CacheView::new());
        assert_eq!(v.unwrap_err().invariant, Invariant::WriteOwnPod);
    }

    #[test]
    fn deletes_need_the_written_uid_and_grace_zero() {
        let ok = [update("a", "u1"), delete("a", Some("u1"), Some(0))];
        check_deletes(0, &ok, WriteSemantics::Replace, &mut SyncWrites::new()).unwrap();
        for calls in [
            vec![update("a", "u1"), delete("a", None, Some(0))],
            vec![update("a", "u1"), delete("a", Some(""), Some(0))],
            vec![update("a", "u1"), delete("a", Some("u1"), Some(30))],
            vec![update("a", "u1"), delete("a", Some("u1"), None)],
            vec![update("a", "u1"), delete("a", Some("u2"), Some(0))],
            vec![delete("a", Some("u1"), Some(0))],
        ] {
            let v = check_deletes(4, &calls, WriteSemantics::Replace, &mut SyncWrites::new()).unwrap_err();
            assert_eq!((v.invariant, v.step), (Invariant::DeletePrecondition, 4), "{calls:?}");
        }
    }

    #[test]
    fn an_older_version_written_after_a_newer_one_is_a_rollback() {
        let mut c = Checker::new();
        c.observe(0, &cached(&[("u1", Some((1, "Pending")))])).unwrap();
        c.observe(1, &cached(&[("u1", Some((2, "Running")))])).unwrap();
        c.step(2, &[update("a", "u1")], &[write("a", "u1", "Running")], &CacheView::new()).unwrap();
        // Rewriting the same version is fine (a reconcile).
        c.step(3, &[update("a", "u1")], &[write("a", "u1", "Running")], &CacheView::new()).unwrap();
        let v = c.step(4, &[update("a", "u1")], &[write("a", "u1", "Pending")], &CacheView::new()).unwrap_err();
        assert_eq!(v.invariant, Invariant::NoRollback);
        assert!(v.message.contains("version 2 to version 1"), "{}", v.message);
    }

    #[test]
    fn a_stale_queued_write_is_a_known_issue_unless_strict() {
        let run = |mut c: Checker| {
            c.observe(0, &cached(&[("u1", Some((1, "Pending")))])).unwrap();
            c.observe(1, &cached(&[("u1", Some((2, "Running")))])).unwrap();
            c.step(2, &[update("a", "u1")], &[write("a", "u1", "Running")], &CacheView::new()).unwrap();
            let stale = Write { from_queue: true, ..write("a", "u1", "Pending") };
            let result = c.step(3, &[update("a", "u1")], &[stale], &CacheView::new());
            (c, result)
        };
        let (tolerant, result) = run(Checker::new());
        result.unwrap();
        assert_eq!(tolerant.known_issues().get(&KnownIssue::FailedReconcileQueuedWrite), Some(&1));
        let (_, result) = run(Checker::strict());
        let v = result.unwrap_err();
        assert_eq!((v.invariant, v.known), (Invariant::NoRollback, Some(KnownIssue::FailedReconcileQueuedWrite)));
    }

    #[test]
    fn quiescence_compares_semantically() {
        let store = MemoryApiServer::new();
        let pm = PodManager::new();
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"uid": "u1", "name": "a", "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running", "conditions": [], "startTime": "2026-01-01T00:00:00.5Z"}
        }))
        .unwrap();
        store.put_pod(pod.clone()).unwrap();
        pm.add_pod(pod);
        let mut equal = status("Running");
        equal.start_time = Some(serde_json::from_value(serde_json::json!("2026-01-01T00:00:00Z")).unwrap());
        let view: CacheView = [("u1".to_string(), Some(Cached { version: 1, status: equal }))].into();
        check_quiescence(9, &view, &pm, &store, WriteSemantics::Replace).unwrap();
        let view = cached(&[("u1", Some((1, "Failed")))]);
        let v = check_quiescence(9, &view, &pm, &store, WriteSemantics::Replace).unwrap_err();
        assert_eq!(v.invariant, Invariant::Quiescence);
        assert!(v.message.contains("status.phase"), "{}", v.message);
        // A pod the pod manager no longer holds is not checked.
        pm.remove_pod("u1");
        check_quiescence(9, &view, &pm, &store, WriteSemantics::Replace).unwrap();
    }

    #[test]
    fn different_reports_name_the_step() {
        check_deterministic(b"same", b"same").unwrap();
        let a = br#"{"calls":[{"step":3,"verb":"get"},{"step":7,"verb":"update"}]}"#;
        let b = br#"{"calls":[{"step":3,"verb":"get"},{"step":7,"verb":"delete"}]}"#;
        let v = check_deterministic(a, b).unwrap_err();
        assert_eq!((v.invariant, v.step), (Invariant::Deterministic, 7));
    }
}
