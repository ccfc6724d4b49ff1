//! Recovery with nothing lost: a plugin instance that faults is replaced by a fresh one
//! holding the state the old one had accepted.
//!
//! A trapped instance cannot be entered again, and its state cannot be read out of it.
//! So the supervisor keeps its own copy of the plugin's state document (the versioned
//! format of `save-state`), brought up to date after every call that may change it
//! from the plugin's change set (`save-state-changes`: only what changed, so the cost
//! follows the call, not the size of the state). A call counts as accepted only once
//! its changes are in that copy: when the change set cannot be taken, the call reports
//! the fault instead of success. After a fault the supervisor instantiates the plugin
//! again (backing off when it keeps failing) and loads the copy into it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use podstatus_backends::HostView;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::bindings::{Contract, SyncRequest, UpdateOutcome};
use crate::calls::{Call, Effect, Reply};
use crate::handed::HandedPods;
use crate::limits::FaultKind;
use crate::plugin::call_error::{CallError, Result};
use crate::plugin::component::ComponentPlugin;
use crate::plugin::plugin_ext::PluginExt;
use crate::plugin::plugin_trait::Plugin;
use crate::plugin::runtime::PluginImage;
use crate::state_document::{CHANGES_FORMAT, HeldState};
use crate::world::World;

/// Backoff between recovery attempts that keep failing.
#[derive(Clone, Debug)]
pub struct Backoff {
    /// The wait before the second consecutive attempt.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
    /// Attempts per recovery before giving up until the next call.
    pub attempts: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { initial: Duration::from_millis(10), max: Duration::from_secs(2), attempts: 6 }
    }
}

/// What the supervisor has seen, for logs and metrics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecoveryStats {
    /// Faults by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Faults by the call that faulted.
    pub faults_by_call: BTreeMap<&'static str, u64>,
    /// Instances restored.
    pub recoveries: u64,
    /// Recoveries that failed every attempt.
    pub failed_recoveries: u64,
    /// How long the latest recovery took (instantiation and state load).
    pub last_recovery: Option<Duration>,
    /// The longest recovery so far.
    pub max_recovery: Option<Duration>,
    /// Statuses a restored instance was given from the host's record because the
    /// state copy (the plugin's own change sets) did not hold them as accepted, and
    /// invented ones taken out of it.
    pub repaired_from_record: u64,
}

/// A component plugin that recovers from faults without losing accepted state.
pub struct SupervisedPlugin {
    image: PluginImage,
    world: World,
    /// None while no healthy instance could be made.
    instance: Option<ComponentPlugin>,
    /// The last accepted state, as the plugin's own document.
    shadow: StateShadow,
    /// Changes since the caller last saved the state or took its changes: the plugin's
    /// own change sets go to the shadow, so the supervisor answers
    /// `save-state-changes` itself (a hot swap follows the state that way). Kept only
    /// while someone follows (from a `save-state` on), and only up to the state cap:
    /// an agent that never swaps keeps nothing here, however long it runs.
    unsaved: ChangeSet,
    /// Whether `unsaved` is being kept: set by `save-state`; cleared when the changes
    /// outgrew the cap (the follower must save the whole state again).
    following: Following,
    backoff: Backoff,
    stats: RecoveryStats,
    /// The host's view, with its record of accepted statuses, once observed: a
    /// restored instance is held against it (its own change sets built the copy).
    record: Option<Arc<HostView>>,
    /// The host's record of the pods handed to the plugin: every restored instance
    /// reaches by it (the copy of the state narrows it, never widens it).
    handed: Arc<HandedPods>,
}

impl SupervisedPlugin {
    /// A supervised instance of `image` over `world`, starting from the empty state.
    pub fn new(image: PluginImage, world: World) -> Result<Self, crate::plugin::runtime::LoadError> {
        let mut instance = image.instantiate(world.clone())?;
        let handed = Plugin::handed(&instance).unwrap_or_default();
        let document = instance
            .save_state()
            .map_err(|e| crate::plugin::runtime::LoadError::Instantiate(wasmtime::format_err!("{e}")))?;
        let shadow = StateShadow::parse(&document)
            .map_err(|e| crate::plugin::runtime::LoadError::Instantiate(wasmtime::format_err!("{e}")))?;
        Ok(SupervisedPlugin {
            image,
            world,
            instance: Some(instance),
            shadow,
            unsaved: ChangeSet::default(),
            following: Following::No,
            backoff: Backoff::default(),
            stats: RecoveryStats::default(),
            record: None,
            handed,
        })
    }

    /// Sets how recovery backs off.
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// What happened so far.
    pub fn stats(&self) -> &RecoveryStats {
        &self.stats
    }

    /// The state a replacement instance would be given now.
    pub fn accepted_state(&self) -> String {
        self.shadow.document()
    }

    /// Bytes the supervisor holds for the plugin: its copy of the state and the
    /// changes kept for a follower.
    pub fn held_bytes(&self) -> usize {
        self.shadow.bytes + self.unsaved.bytes
    }

    /// The instance serving now, if a healthy one exists.
    pub fn instance(&self) -> Option<&ComponentPlugin> {
        self.instance.as_ref()
    }

    /// Runs a call on the instance; one that may change the plugin's state brings the
    /// copy up to date afterwards from its change set, checked against its answer.
    ///
    /// A status update's change set is taken, and checked against its answer, unless
    /// the plugin answered that the update changed nothing (the kubelet's common call:
    /// a change set then is a crossing and a parse for an empty document). A plugin
    /// that changed its state all the same only delays its change to the next change
    /// set, which holds everything since the last; the host's record of accepted
    /// statuses is not touched by an unchanged answer either way.
    fn run(&mut self, call: Call<'_>) -> Result<Reply> {
        let mutating = |result: &Result<Reply>| match call.effect() {
            Effect::Reads => false,
            Effect::Writes => true,
            Effect::Updates => !matches!(result, Ok(Reply::Update(outcome)) if changes_nothing(outcome)),
        };
        let check = |reply: &Reply, changes: &ChangeSet| match reply {
            Reply::Update(outcome) => claims_a_status(outcome, changes),
            _ => Ok(()),
        };
        self.run_checked(call.name(), mutating, |p| p.call(call), check)
    }

    /// `save-state-changes`, answered from the copy: the plugin's change sets all went
    /// to it; the caller gets what accumulated since it last saved.
    fn unsaved_changes(&mut self) -> Result<String> {
        match self.following {
            Following::Yes => {}
            Following::No | Following::Lost => {
                let why = if self.following == Following::No {
                    "no saved state to follow: save-state first"
                } else {
                    "the changes since the last save outgrew the state limit and were not kept: save-state again"
                };
                return Err(CallError::Rejected {
                    call: "save-state-changes",
                    error: crate::bindings::ManagerError::InvalidState(why.into()),
                });
            }
        }
        let mut changes = std::mem::take(&mut self.unsaved);
        if changes.next_request_id.is_none() {
            changes.next_request_id = self.shadow.header.get("nextRequestId").cloned();
        }
        Ok(changes.document())
    }

    /// Runs `f` on the instance (recovering one first if there is none); when
    /// `mutating` says so of the result, takes the change set, checks it against the
    /// answer with `check` (a plugin whose change set does not hold what it answered is
    /// faulted, not believed) and follows it in the copy.
    fn run_checked<T>(
        &mut self,
        call: &'static str,
        mutating: impl FnOnce(&Result<T>) -> bool,
        f: impl FnOnce(&mut ComponentPlugin) -> Result<T>,
        check: impl FnOnce(&T, &ChangeSet) -> std::result::Result<(), String>,
    ) -> Result<T> {
        let instance = match self.instance.as_mut() {
            Some(instance) => instance,
            None => {
                self.recover(call)?;
                self.instance.as_mut().expect("recovered")
            }
        };
        let result = f(instance);
        if let Err(CallError::Fault { kind, .. }) = &result {
            self.note_fault(call, *kind);
            // The call failed; its caller hears so. Restore for the next one.
            let _ = self.recover(call);
            return result;
        }
        if mutating(&result) {
            let instance = self.instance.as_mut().expect("healthy after the call");
            let max_state = self.image.limits().max_state_bytes;
            let shadow = &self.shadow;
            let taken = instance.save_state_changes().and_then(|changes| {
                let changes = ChangeSet::parse(&changes).map_err(|message| CallError::Fault {
                    call: "save-state-changes",
                    kind: FaultKind::Trap,
                    message: message.to_string(),
                })?;
                if let Ok(value) = &result {
                    check(value, &changes).map_err(|message| CallError::Fault {
                        call: "save-state-changes",
                        kind: FaultKind::Trap,
                        message: format!("the change set contradicts the call's answer: {message}"),
                    })?;
                }
                let after = shadow.bytes_after(&changes);
                if after > max_state {
                    return Err(CallError::Fault {
                        call: "save-state-changes",
                        kind: FaultKind::StateSize,
                        message: format!(
                            "the state would grow to {after} bytes, over the limit of {max_state} bytes: the call is \
                             not accepted"
                        ),
                    });
                }
                Ok(changes)
            });
            match taken.map(|changes| {
                if self.following == Following::Yes {
                    self.shadow.apply(changes.clone());
                    self.unsaved.merge(changes);
                    // A follower that never comes back (a swap that failed) costs at
                    // most an eighth of the state limit.
                    if self.unsaved.bytes > max_state / 8 {
                        tracing::warn!(
                            bytes = self.unsaved.bytes,
                            "changes kept for a follower (a swap) outgrew the state limit: dropped, the follower \
                             must save the state again"
                        );
                        self.unsaved = ChangeSet::default();
                        self.following = Following::Lost;
                    }
                } else {
                    self.shadow.apply(changes);
                }
            }) {
                Ok(()) => {}
                Err(e) => {
                    // Without its changes the call is not durable: report it as failed.
                    let kind = match &e {
                        CallError::Fault { kind, .. } => *kind,
                        _ => FaultKind::Trap,
                    };
                    self.note_fault("save-state-changes", kind);
                    let _ = self.recover(call);
                    return Err(CallError::Fault {
                        call,
                        kind,
                        message: format!("its changes could not be saved: {e}"),
                    });
                }
            }
        }
        result
    }

    fn note_fault(&mut self, call: &'static str, kind: FaultKind) {
        *self.stats.faults.entry(kind.as_str()).or_default() += 1;
        *self.stats.faults_by_call.entry(call).or_default() += 1;
        self.instance = None;
    }

    /// Holds the state `instance` was just restored from (`document`, the copy) against
    /// the host's record, and gives the instance (and the copy) the record's statuses
    /// where they disagree (see [`crate::state_document::Findings`]). A plugin that lied in its
    /// change sets is not believed after a fault either.
    fn repair_from_record(&mut self, instance: &mut ComponentPlugin, document: &str) {
        let Some(view) = &self.record else { return };
        let Some(mut held) = HeldState::from_state(document) else { return };
        let findings = held.audit(view, &self.world.pod_manager, Some(&self.handed));
        if findings.is_empty() {
            return;
        }
        let repaired = findings.repair().map_err(|e| e.to_string()).and_then(|repair| {
            instance.apply_state_changes(&repair).map_err(|e| e.to_string())?;
            ChangeSet::parse(&repair).map_err(|e| e.to_string())
        });
        match repaired {
            Ok(changes) => {
                if self.following == Following::Yes {
                    self.unsaved.merge(changes.clone());
                }
                self.shadow.apply(changes);
                let count = findings.missing.len() + findings.altered.len() + findings.invented.len();
                self.stats.repaired_from_record += count as u64;
                tracing::warn!(
                    pods = %findings.pods_shown(8),
                    "the state copy disagreed with the host's record of accepted statuses: the restored instance \
                     holds the record's"
                );
            }
            Err(e) => tracing::error!(
                pods = %findings.pods_shown(8),
                "the state copy disagrees with the host's record of accepted statuses, and the record could not be \
                 restored: {e}"
            ),
        }
    }

    /// A fresh instance with the accepted state, retried with backoff.
    fn recover(&mut self, call: &'static str) -> Result<()> {
        let start = Instant::now();
        let document = self.shadow.document();
        let mut wait = self.backoff.initial;
        let mut last_error = String::new();
        for attempt in 1..=self.backoff.attempts.max(1) {
            if attempt > 1 {
                std::thread::sleep(wait);
                wait = (wait * 2).min(self.backoff.max);
            }
            let restored =
                self.image.instantiate(self.world.clone()).map_err(|e| e.to_string()).and_then(|mut instance| {
                    instance.carry_handed(Arc::clone(&self.handed));
                    instance.load_state(&document).map(|()| instance).map_err(|e| e.to_string())
                });
            match restored {
                Ok(mut instance) => {
                    self.repair_from_record(&mut instance, &document);
                    // Requests the faulted instance queued for changes that were never
                    // accepted refer to nothing the restored state holds; requests the
                    // restored state holds pending and the queue no longer has (the one
                    // a faulted sync-pod was handed) are queued again, so that the
                    // queue and the state agree, as the kubelet's one channel and its
                    // manager always do.
                    let shadow = &self.shadow;
                    let mut queued = BTreeSet::new();
                    self.world.queue.retain(|request| {
                        queued.insert(request.id);
                        shadow.has_pending(request.id)
                    });
                    for request in self.shadow.pending_requests() {
                        if !queued.contains(&request.id) {
                            self.world.queue.push(request);
                        }
                    }
                    let took = start.elapsed();
                    self.instance = Some(instance);
                    self.stats.recoveries += 1;
                    self.stats.last_recovery = Some(took);
                    self.stats.max_recovery = self.stats.max_recovery.max(Some(took));
                    tracing::warn!(
                        after = call,
                        attempts = attempt,
                        took_ms = took.as_secs_f64() * 1e3,
                        "plugin instance restored"
                    );
                    return Ok(());
                }
                Err(e) => {
                    tracing::error!(after = call, attempt, "restoring the plugin failed: {e}");
                    last_error = e;
                }
            }
        }
        self.stats.failed_recoveries += 1;
        Err(CallError::Fault { call, kind: FaultKind::Trap, message: format!("no healthy instance: {last_error}") })
    }
}

impl Plugin for SupervisedPlugin {
    fn call(&mut self, call: Call<'_>) -> Result<Reply> {
        match call {
            // The copy is the accepted state: no need to ask the plugin (a hot swap moves
            // the bulk this way without holding calls for the plugin to serialise it).
            Call::SaveState {} => {
                self.unsaved = ChangeSet::default();
                self.following = Following::Yes;
                Ok(Reply::Document(self.shadow.document()))
            }
            Call::LoadState { state } => {
                // The document replaces the copy whole: no change set to follow.
                let loaded = self.run_checked(call.name(), |_| false, |p| p.call(call), |_, _| Ok(()))?;
                self.shadow = StateShadow::parse(state).map_err(|message| CallError::Fault {
                    call: call.name(),
                    kind: FaultKind::Trap,
                    message: message.to_string(),
                })?;
                Ok(loaded)
            }
            Call::SaveStateChanges {} => self.unsaved_changes().map(Reply::Document),
            // Syncs in flight are not state: after a fault the restored instance knows none
            // of them, and the host's next step for one is refused (`unknown-sync`), which
            // ends it. What each step changed (a request taken, a version written, a status
            // dropped) is followed like any other call's changes, and so are a resize
            // condition's set and clear, so that a restored instance and a swap's new
            // plugin keep them.
            _ => self.run(call),
        }
    }

    fn observe(&mut self, view: Arc<HostView>) {
        self.record = Some(view);
    }

    fn handed(&self) -> Option<Arc<HandedPods>> {
        Some(Arc::clone(&self.handed))
    }

    fn carry_handed(&mut self, record: Arc<HandedPods>) {
        if let Some(instance) = &mut self.instance {
            instance.carry_handed(Arc::clone(&record));
        }
        self.handed = record;
    }

    fn world(&self) -> &World {
        &self.world
    }

    fn stop_following(&mut self) {
        self.unsaved = ChangeSet::default();
        self.following = Following::No;
    }

    fn memory(&self) -> crate::plugin::PluginMemory {
        let linear = self.instance.as_ref().map_or(0, |instance| instance.memory().linear);
        crate::plugin::PluginMemory { linear, accepted_state: self.held_bytes() }
    }

    fn contract(&self) -> Contract {
        self.image.contract()
    }
}

/// Whether the supervisor keeps the changes since a `save-state` for a follower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Following {
    /// Nobody saved the state: nothing is kept.
    No,
    /// Kept since the last `save-state`.
    Yes,
    /// They outgrew the cap and were dropped: the follower must save again.
    Lost,
}

/// A call that answered "a new status version was cached" must hand over a status.
/// Whether an update's answer says it changed nothing in the plugin's state.
fn changes_nothing(outcome: &UpdateOutcome) -> bool {
    matches!(
        outcome,
        UpdateOutcome::Unchanged
            | UpdateOutcome::PodNotFound
            | UpdateOutcome::NotCached
            | UpdateOutcome::UnknownContainer
    )
}

fn claims_a_status(outcome: &UpdateOutcome, changes: &ChangeSet) -> std::result::Result<(), String> {
    let claims = matches!(outcome, UpdateOutcome::Queued | UpdateOutcome::QueueFull);
    if claims && !changes.maps[0].values().any(Option::is_some) {
        return Err(format!("it answered {outcome:?} but its change set holds no status"));
    }
    Ok(())
}

/// A JSON value kept as text: the supervisor moves entries around, it never looks
/// inside them, so they are not parsed into trees (a status is hundreds of nodes).
type Raw = Box<RawValue>;

/// The host's copy of a plugin's state document: its maps and a counter, each entry
/// kept as the plugin wrote it, so any plugin version writing the documented format
/// can be followed.
#[derive(Clone, Debug)]
struct StateShadow {
    /// Every key of the document but the maps (format, version, counters).
    header: BTreeMap<String, Raw>,
    /// statuses, apiStatusVersions, pending, podResizeConditions ([`MAPS`]).
    maps: [BTreeMap<String, Raw>; MAP_COUNT],
    /// The maps' keys and entries, in bytes (about the document's size).
    bytes: usize,
}

fn entry_bytes(key: &str, value: &Raw) -> usize {
    key.len() + value.get().len() + 4
}

/// How many maps the state format has.
const MAP_COUNT: usize = 4;

/// The state format's maps, by key. The first three are in every document; the last,
/// logic v4's in-place resize conditions by pod UID, is optional and absent when
/// empty (so every document of a version that never sets one reads, and is written
/// back, as it was before it existed).
const MAPS: [&str; MAP_COUNT] = ["statuses", "apiStatusVersions", "pending", "podResizeConditions"];

/// Whether the map `key` may be absent (and is left out when empty).
fn optional_map(key: &str) -> bool {
    key == "podResizeConditions"
}

/// Why the supervisor could not read what the plugin handed it.
#[derive(Debug, thiserror::Error)]
enum ShadowError {
    /// Not the JSON the contract's state format says.
    #[error("{what}{}: {source}", .key.map(|k| format!(": {k}")).unwrap_or_default())]
    Json {
        /// A state document or a change set.
        what: &'static str,
        /// The map at fault, if one.
        key: Option<&'static str>,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A state document without one of its maps.
    #[error("state document: no {0}")]
    Missing(&'static str),
    /// A change set of another format.
    #[error("change set: format is not {CHANGES_FORMAT:?}")]
    Format,
}

impl StateShadow {
    fn parse(document: &str) -> std::result::Result<StateShadow, ShadowError> {
        let what = "state document";
        let mut header: BTreeMap<String, Raw> =
            serde_json::from_str(document).map_err(|source| ShadowError::Json { what, key: None, source })?;
        let mut maps: [BTreeMap<String, Raw>; MAP_COUNT] = Default::default();
        for (slot, key) in maps.iter_mut().zip(MAPS) {
            let raw = match header.remove(key) {
                Some(raw) => raw,
                None if optional_map(key) => continue,
                None => return Err(ShadowError::Missing(key)),
            };
            *slot =
                serde_json::from_str(raw.get()).map_err(|source| ShadowError::Json { what, key: Some(key), source })?;
        }
        let bytes = maps.iter().flatten().map(|(k, v)| entry_bytes(k, v)).sum();
        Ok(StateShadow { header, maps, bytes })
    }

    /// The size after `changes`.
    fn bytes_after(&self, changes: &ChangeSet) -> usize {
        let mut bytes = self.bytes as isize;
        for (target, entries) in self.maps.iter().zip(&changes.maps) {
            for (key, value) in entries {
                if let Some(old) = target.get(key) {
                    bytes -= entry_bytes(key, old) as isize;
                }
                if let Some(value) = value {
                    bytes += entry_bytes(key, value) as isize;
                }
            }
        }
        bytes.max(0) as usize
    }

    /// Applies a change set: each entry replaces the copy's entry whole, null removes it.
    /// Its entries move into the copy (a status is kilobytes: a caller that keeps the
    /// change set too clones it first).
    fn apply(&mut self, changes: ChangeSet) {
        let ChangeSet { maps, next_request_id, .. } = changes;
        for (target, entries) in self.maps.iter_mut().zip(maps) {
            for (key, value) in entries {
                let old = match value {
                    Some(value) => {
                        self.bytes += entry_bytes(&key, &value);
                        target.insert(key.clone(), value).map(|old| entry_bytes(&key, &old))
                    }
                    None => target.remove(&key).map(|old| entry_bytes(&key, &old)),
                };
                if let Some(old) = old {
                    self.bytes -= old;
                }
            }
        }
        if let Some(next) = next_request_id {
            self.header.insert("nextRequestId".into(), next);
        }
    }

    fn has_pending(&self, id: u64) -> bool {
        self.maps[2].contains_key(&id.to_string())
    }

    /// The pending requests of the copy, by id (an entry it cannot read is left out:
    /// the batch sync writes its pod).
    fn pending_requests(&self) -> Vec<SyncRequest> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Pending {
            pod_uid: String,
            version: u64,
        }
        let mut requests: Vec<SyncRequest> = self.maps[2]
            .iter()
            .filter_map(|(id, entry)| {
                let pending: Pending = serde_json::from_str(entry.get()).ok()?;
                Some(SyncRequest { id: id.parse().ok()?, pod_uid: pending.pod_uid, version: pending.version })
            })
            .collect();
        requests.sort_by_key(|r| r.id);
        requests
    }

    fn document(&self) -> String {
        let mut out = String::from("{");
        let mut first = true;
        let mut push = |key: &str, value: &str| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            out.push_str(&Value::from(key).to_string());
            out.push(':');
            out.push_str(value);
        };
        for (key, value) in &self.header {
            push(key, value.get());
        }
        for (key, map) in MAPS.into_iter().zip(&self.maps) {
            if map.is_empty() && optional_map(key) {
                continue;
            }
            push(key, &serde_json::to_string(map).unwrap_or_else(|_| "{}".into()));
        }
        out.push('}');
        out
    }
}

/// A parsed change set (`save-state-changes`): for each of the document's maps, the
/// entries that changed (None: removed), and the request counter.
#[derive(Clone, Debug, Default)]
struct ChangeSet {
    maps: [BTreeMap<String, Option<Raw>>; MAP_COUNT],
    next_request_id: Option<Raw>,
    /// The format version of the change sets seen, to write them back.
    version: Option<Raw>,
    /// Keys and entries, in bytes.
    bytes: usize,
}

/// A change set as the plugin writes it, read in one pass: each map's entries kept as
/// text, so the host validates the document once and builds no trees.
#[derive(serde::Deserialize)]
struct ChangesDocument {
    format: String,
    version: Option<Raw>,
    patch: PatchDocument,
}

/// A change set's `patch`: the state format's maps ([`MAPS`], each absent when nothing
/// in it changed) and the request counter; other keys are ignored, as before.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PatchDocument {
    #[serde(default)]
    statuses: BTreeMap<String, Option<Raw>>,
    #[serde(default)]
    api_status_versions: BTreeMap<String, Option<Raw>>,
    #[serde(default)]
    pending: BTreeMap<String, Option<Raw>>,
    #[serde(default)]
    pod_resize_conditions: BTreeMap<String, Option<Raw>>,
    next_request_id: Option<Raw>,
}

impl ChangeSet {
    fn parse(text: &str) -> std::result::Result<ChangeSet, ShadowError> {
        let doc: ChangesDocument =
            serde_json::from_str(text).map_err(|source| ShadowError::Json { what: "change set", key: None, source })?;
        if doc.format != CHANGES_FORMAT {
            return Err(ShadowError::Format);
        }
        let patch = doc.patch;
        let maps = [patch.statuses, patch.api_status_versions, patch.pending, patch.pod_resize_conditions];
        let bytes = maps.iter().flatten().map(|(k, v)| k.len() + v.as_ref().map_or(4, |v| v.get().len()) + 4).sum();
        Ok(ChangeSet { maps, next_request_id: patch.next_request_id, version: doc.version, bytes })
    }

    /// Adds later changes on top of these.
    fn merge(&mut self, later: ChangeSet) {
        // Approximate (a replaced entry is counted twice): a bound, not a measure.
        self.bytes += later.bytes;
        for (slot, entries) in self.maps.iter_mut().zip(later.maps) {
            slot.extend(entries);
        }
        if later.next_request_id.is_some() {
            self.next_request_id = later.next_request_id;
        }
        if later.version.is_some() {
            self.version = later.version;
        }
    }

    fn document(&self) -> String {
        let mut patch = String::from("{");
        for (i, (key, entries)) in MAPS.into_iter().zip(&self.maps).enumerate() {
            if entries.is_empty() && optional_map(key) {
                continue;
            }
            if i > 0 {
                patch.push(',');
            }
            patch.push_str(&format!(
                "{}:{}",
                Value::from(key),
                serde_json::to_string(entries).unwrap_or_else(|_| "{}".into())
            ));
        }
        if let Some(next) = &self.next_request_id {
            patch.push_str(&format!(",\"nextRequestId\":{}", next.get()));
        }
        patch.push('}');
        let version = self.version.as_ref().map_or("1", |v| v.get());
        format!("{{\"format\":{},\"version\":{version},\"patch\":{patch}}}", Value::from(CHANGES_FORMAT))
    }
}

#[cfg(test)]
mod tests {
    use super::{ChangeSet, StateShadow};

    const DOCUMENT: &str = r#"{"format":"podstatus.kubelet.io/state","version":2,"statuses":{},"apiStatusVersions":{},"pending":{},"nextRequestId":1}"#;

    /// A document without resize conditions (every v1-v3 document) is written back
    /// without the map, and one with them keeps them through a change set and a removal.
    #[test]
    fn resize_conditions_are_followed_and_absent_when_empty() {
        let mut shadow = StateShadow::parse(DOCUMENT).expect("a document");
        assert!(!shadow.document().contains("podResizeConditions"), "{}", shadow.document());
        let set = ChangeSet::parse(
            r#"{"format":"podstatus.kubelet.io/state-changes","version":2,"patch":{"statuses":{},"apiStatusVersions":{},"pending":{},"nextRequestId":1,"podResizeConditions":{"uid-a":{"podResizePending":{"type":"PodResizePending","status":"True","reason":"Deferred"}}}}}"#,
        )
        .expect("a change set");
        shadow.apply(set.clone());
        let held = shadow.document();
        assert!(held.contains(r#""podResizeConditions":{"uid-a":{"podResizePending""#), "{held}");
        assert!(set.document().contains(r#""podResizeConditions":{"uid-a""#), "{}", set.document());
        let reparsed = StateShadow::parse(&held).expect("the copy reads back");
        assert_eq!(reparsed.document(), held);
        let cleared = ChangeSet::parse(
            r#"{"format":"podstatus.kubelet.io/state-changes","version":2,"patch":{"podResizeConditions":{"uid-a":null}}}"#,
        )
        .expect("a change set");
        shadow.apply(cleared);
        assert!(!shadow.document().contains("podResizeConditions"), "{}", shadow.document());
        assert!(!ChangeSet::default().document().contains("podResizeConditions"));
    }

    /// A change set is read in one pass: absent maps are empty, keys outside the format
    /// are ignored, entries stay the plugin's text, removals are None, and a set of
    /// another format or with a malformed entry is refused.
    #[test]
    fn a_change_set_reads_in_one_pass_and_refuses_what_is_not_one() {
        let set = ChangeSet::parse(
            r#"{"format":"podstatus.kubelet.io/state-changes","version":2,"patch":{"statuses":{"u1":{"version":3,"status":{"phase":"Running"}},"u2":null},"extra":{"x":1},"nextRequestId":7}}"#,
        )
        .expect("a change set");
        assert_eq!(
            set.maps[0]["u1"].as_ref().map(|raw| raw.get()),
            Some(r#"{"version":3,"status":{"phase":"Running"}}"#)
        );
        assert!(set.maps[0]["u2"].is_none(), "a removal");
        assert!(set.maps[1].is_empty() && set.maps[2].is_empty() && set.maps[3].is_empty());
        assert_eq!(set.next_request_id.as_ref().map(|raw| raw.get()), Some("7"));
        assert_eq!(set.version.as_ref().map(|raw| raw.get()), Some("2"));
        let mut shadow = StateShadow::parse(DOCUMENT).expect("a document");
        shadow.apply(set.clone());
        assert!(shadow.document().contains(r#""statuses":{"u1":{"version":3,"status":{"phase":"Running"}}}"#));
        assert!(shadow.document().contains(r#""nextRequestId":7"#), "{}", shadow.document());

        let other = r#"{"format":"podstatus.kubelet.io/state","version":2,"patch":{}}"#;
        assert!(matches!(ChangeSet::parse(other), Err(super::ShadowError::Format)));
        let malformed = r#"{"format":"podstatus.kubelet.io/state-changes","version":2,"patch":{"pending":[]}}"#;
        assert!(matches!(ChangeSet::parse(malformed), Err(super::ShadowError::Json { .. })));
        assert!(
            ChangeSet::parse(r#"{"format":"podstatus.kubelet.io/state-changes","patch":{"statuses":{"u1":tru}}}"#)
                .is_err()
        );
    }
}
