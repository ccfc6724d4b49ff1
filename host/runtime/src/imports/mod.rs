//! The plugin's imports: one module per WIT interface, each only forwarding to the
//! [`World`]'s backends.
//!
//! The functions that do the forwarding work on JSON text and WIT types and are shared
//! with the native plugin, so the component and the native build see the same host.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::StatusManager;
use crate::hand_digests::HandDigests;
use crate::handed::{HandedPod, HandedPods};
use crate::limits::Sandbox;
use crate::world::World;

pub mod api_server;
pub mod clock;
pub mod deletion_safety;
pub mod logging;
pub mod pod_manager;
pub mod sync_queue;

/// What a plugin instance's store holds: the world its imports reach and the
/// sandbox's accounting.
pub struct HostState {
    pub(crate) world: World,
    pub(crate) sandbox: Sandbox,
    /// The host's record of the pods whose status it handed the plugin (shared with
    /// the instances a swap or a recovery puts in this one's place): the only pods it
    /// may queue, plan or ask the API server about ([`HostState::may_reach`]).
    pub(crate) handed: Arc<HandedPods>,
    /// The pods of the last state document this instance loaded and those handed to it
    /// since: a state document narrows what the instance may reach within the record,
    /// never widens it (`None`: no document loaded, the whole record).
    pub(crate) narrowed: Option<HashSet<Box<str>>>,
    /// The pod of the sync request the host has a 0.1.x plugin sync now: reachable by
    /// its calls even if the host dropped it since the request was queued.
    pub(crate) syncing: Option<Box<str>>,
    /// What `set-pod-status` handed already, by digest.
    pub(crate) digests: HandDigests,
    /// The pod and status of the `set-pod-status` call in progress, not noted in the
    /// record yet ([`HostState::note_pending`]).
    pub(crate) pending_hand: Option<Arc<(String, String)>>,
    /// The plugin's log budget.
    pub(crate) log: LogBucket,
}

/// The longest pod UID the host accepts from the plugin (Kubernetes' are 36-byte UUIDs;
/// a name is at most 253 bytes).
pub const MAX_UID_BYTES: usize = 253;

impl HostState {
    /// The state of an instance that will reach `world` within `sandbox`'s limits.
    pub fn new(world: World, sandbox: Sandbox) -> Self {
        let log = LogBucket::new(sandbox.limits.log_burst, sandbox.limits.log_per_second);
        HostState {
            world,
            sandbox,
            handed: Arc::new(HandedPods::new()),
            narrowed: None,
            syncing: None,
            digests: HandDigests::default(),
            pending_hand: None,
            log,
        }
    }

    /// Traps when a string or list the plugin passed to `import` is over the limit.
    pub(crate) fn check_arg(&mut self, import: &str, what: &str, len: usize) -> wasmtime::Result<()> {
        self.sandbox.check_arg(import, what, len)
    }

    /// Counts one import call and the bytes of its arguments against the export call's
    /// budget; traps past it.
    pub(crate) fn charge(&mut self, import: &str, bytes: usize) -> wasmtime::Result<()> {
        self.sandbox.charge_import(import, bytes)
    }

    /// Admits one call of `import` whose arguments are `args` (each named, by its length):
    /// [`Self::charge`]s their bytes together, then [`Self::check_arg`]s each in turn.
    pub(crate) fn admit(&mut self, import: &str, args: &[(&str, usize)]) -> wasmtime::Result<()> {
        self.charge(import, args.iter().map(|(_, len)| len).sum())?;
        for (what, len) in args {
            self.check_arg(import, what, *len)?;
        }
        Ok(())
    }

    /// Counts the bytes of an import's result.
    pub(crate) fn charge_result(&mut self, import: &str, bytes: usize) -> wasmtime::Result<()> {
        self.sandbox.charge_bytes(import, bytes)
    }

    /// Notes a pod whose status the host handed the plugin.
    pub(crate) fn hand(&mut self, pod: HandedPod<'_>) {
        note(&self.handed, &mut self.narrowed, pod);
    }

    /// `set-pod-status` handed `status` for `pod`: the pod and the status's phase are
    /// noted (and the pod is the instance's to reach again if a state document narrowed
    /// it out), unless these very bytes were.
    pub(crate) fn note_status(&mut self, pod: &str, status: &str) {
        let drops = self.handed.drops();
        if let Some(noted) = self.digests.unnoted(drops, pod, status) {
            note(&self.handed, &mut self.narrowed, noted);
        }
    }

    /// Notes what the `set-pod-status` call in progress handed, if it is not noted yet:
    /// before the plugin's first ask that the record decides (a push, an API call). A
    /// call the plugin answers without asking anything is noted when it ends, and only
    /// if it changed the plugin's cache (see `ComponentPlugin::call_set_pod_status`).
    pub(crate) fn note_pending(&mut self) {
        if let Some(pending) = self.pending_hand.take() {
            self.note_status(&pending.0, &pending.1);
        }
    }

    /// A pod handed again, or carried by a change set, is this instance's to reach again
    /// when a state document narrowed it out (the record must hold it as well).
    pub(crate) fn widen_narrowed(&mut self, uid: &str) {
        widen(&mut self.narrowed, uid);
    }

    /// Whether the plugin may name the pod `uid` in a sync request, a plan, a batch
    /// cursor or an API call: the host handed its status and has not dropped it (the
    /// record), and the last state document loaded did not leave it out.
    pub(crate) fn may_reach(&self, uid: &str) -> bool {
        uid.len() <= MAX_UID_BYTES
            && self.narrowed.as_ref().is_none_or(|narrowed| narrowed.contains(uid))
            && self.handed.contains(uid)
    }
}

/// Notes `pod` in the host's `record` (a UID over the limit is no pod of the host's) and
/// makes it the instance's to reach again if a state document `narrowed` it out.
fn note(record: &HandedPods, narrowed: &mut Option<HashSet<Box<str>>>, pod: HandedPod<'_>) {
    if pod.uid.is_empty() || pod.uid.len() > MAX_UID_BYTES {
        return;
    }
    record.hand(pod);
    widen(narrowed, pod.uid);
}

/// Adds `uid` to what a state document narrowed an instance's reach to, if one did.
fn widen(narrowed: &mut Option<HashSet<Box<str>>>, uid: &str) {
    if let Some(narrowed) = narrowed
        && !narrowed.contains(uid)
    {
        narrowed.insert(uid.into());
    }
}

/// The `tracing` target of everything the plugin logs, so it can be filtered apart
/// from the host's own messages (`RUST_LOG=crate::plugin=debug`). Here, not in
/// [`logging`], because the [`LogBucket`] warns under it too and `logging` builds on
/// [`HostState`]: this module imports none of its children.
pub const TARGET: &str = "podstatus::plugin";

/// A token bucket: how many lines the plugin may still log, refilled with time; what
/// it drops is counted, and said at most once a second (so the host's own warnings
/// about the flood are bounded too).
#[derive(Debug)]
pub(crate) struct LogBucket {
    tokens: f64,
    burst: f64,
    per_second: f64,
    refilled: Instant,
    /// Lines dropped since the instance started.
    pub(crate) dropped: u64,
    /// When the host last said it drops lines.
    warned: Option<Instant>,
}

impl LogBucket {
    fn new(burst: u32, per_second: u32) -> Self {
        LogBucket {
            tokens: f64::from(burst),
            burst: f64::from(burst),
            per_second: f64::from(per_second),
            refilled: Instant::now(),
            dropped: 0,
            warned: None,
        }
    }

    /// Whether a line of `len` bytes may be logged now (one token per started KiB).
    pub(crate) fn take(&mut self, len: usize) -> bool {
        let now = Instant::now();
        let elapsed = now.duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        let cost = (len / 1024 + 1) as f64;
        if self.tokens >= cost {
            self.tokens -= cost;
            return true;
        }
        self.dropped += 1;
        if self.warned.is_none_or(|at| now.duration_since(at).as_secs() >= 1) {
            self.warned = Some(now);
            tracing::warn!(
                target: TARGET,
                dropped = self.dropped,
                burst = self.burst,
                per_second = self.per_second,
                "the plugin logs faster than its rate limit: its lines are dropped (counted)"
            );
        }
        false
    }
}

impl crate::bindings::kubelet::status::types::Host for HostState {}
impl crate::bindings::kubelet::status::api::Host for HostState {}
impl crate::bindings::v0_1_1::kubelet::status::types::Host for HostState {}

/// Adds every import of the `status-manager` world to `linker`: the newest contract's,
/// and 0.1.1's (which 0.1.0 plugins match by semver).
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    StatusManager::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)?;
    crate::bindings::v0_1_1::StatusManager::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
}

/// Parses what the plugin handed an import. The plugin is untrusted: text that is not
/// even JSON of the expected shape is a plugin bug, so the call traps with a message
/// naming the import.
pub(crate) fn parse_from_plugin<T: serde::de::DeserializeOwned>(
    import: &str,
    what: &str,
    json: &str,
) -> wasmtime::Result<T> {
    serde_json::from_str(json)
        .map_err(|e| wasmtime::format_err!("{import}: the plugin passed {what} that is not usable JSON: {e}"))
}

/// A pod as far as identity goes. The plugin may hand back a pod whose spec is not
/// fully valid (it was given that pod); only its metadata matters to the imports.
#[derive(serde::Deserialize)]
pub(crate) struct PodMeta {
    #[serde(default)]
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    /// Kept only when it is a valid status; a backend may look at it.
    #[serde(default)]
    pub status: Option<serde_json::Value>,
}

impl PodMeta {
    pub(crate) fn into_pod(self) -> k8s_openapi::api::core::v1::Pod {
        let status = self.status.and_then(|status| serde_json::from_value(status).ok());
        k8s_openapi::api::core::v1::Pod { metadata: self.metadata, status, ..Default::default() }
    }
}
