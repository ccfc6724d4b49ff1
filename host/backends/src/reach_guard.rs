//! The plugin's reach, enforced by the host: a [`GuardedApiServer`] stands between the
//! plugin's `api-server` imports and the real server and refuses, with
//! [`ApiError::Forbidden`], every call that would touch a pod that is not this node's,
//! delete a pod the kubelet may not delete yet, or write into a status what only the
//! node may say. The plugin is untrusted: what it may do must not depend on it behaving,
//! so every decision below rests on what the host knows (its [`PodManager`], the API
//! server as the guard reads it, and its [`HostView`]), never on what the plugin says.
//!
//! The rules (issue "What a plugin may touch", and issue 11 points 4 to 6):
//!
//! - A pod is **the node's** when the node's [`PodManager`] holds a pod of that
//!   namespace and name (static, mirror or regular), or, when a node name is configured,
//!   when the API server's pod of that namespace and name is bound to the node
//!   (`spec.nodeName` is the node's name).
//! - `get` and the status writes (update and patch) reach only the node's pods. A
//!   status write changes only `status`: a [`StatusUpdate`] carries nothing else and
//!   every backend replaces only `status`. A [`StatusPatch`] is a JSON patch of the
//!   whole pod, and a real API server's `pods/status` endpoint does take label and
//!   annotation changes, so the guard forwards only a patch that holds nothing but
//!   `status` and `metadata.uid` (the UID precondition, as the kubelet sends it).
//! - **Every write is pinned to a UID the node owns.** A UID precondition (a status
//!   write's, beside a patch or as its `metadata.uid`, or a delete's) must name a pod
//!   the node owns: the UID of a pod in the pod manager, or of the pod being written
//!   when the API server has it bound to the node. A status write without one is
//!   pinned by the guard: to the UID of the pod manager's only pod of that name, or
//!   else to the API server's pod of that name when it is bound to the node; when
//!   neither names one pod, the write is refused. So a pod recreated under the same
//!   name on another node is never written by a stale name: the write fails its
//!   precondition at the API server.
//! - **What carries identity is the node's to say.** A status write may carry only pod
//!   and host IPs (`podIP`, `podIPs`, `hostIP`, `hostIPs`) that the node reported for
//!   that pod (a static pod's for its mirror pod; see [`HostView`]): Endpoints are built
//!   from pod IPs, and a forged one would redirect a Service's traffic. Clearing an IP
//!   is allowed. A write may not take a pod out of a terminal phase (`Succeeded`,
//!   `Failed`, as the pod manager's or the checked copy has it), as upstream's status
//!   manager and API server refuse too.
//! - **Deletion is the host's decision.** A `delete` must carry a UID precondition
//!   naming a pod the node owns (above), and is forwarded only when the pod is being
//!   deleted (the pod manager's copy or the API server's has a `deletionTimestamp`), is
//!   not a mirror pod (the kubelet never deletes those: their lifecycle is the static
//!   pod's), and the host's own view says no container of it can run
//!   ([`HostView::no_container_can_run`]: the deletion-safety backend asked with the
//!   node's reported status, not the plugin's). The grace period is the host's: the
//!   guard sends `0` whatever the plugin asked for, as the kubelet's status manager
//!   does once a pod may go (a longer one would only delay what the host has already
//!   judged safe; a refusal would fail an honest plugin that sends none).
//!
//! Every refusal is logged (a `tracing` warning with target [`TARGET`]) and counted per
//! verb ([`GuardedApiServer::refusals`]), for metrics. Names, UIDs and IPs the plugin
//! chose are cut to [`MAX_SHOWN`] characters in messages and logs.
//!
//! # The guard's own reads
//!
//! Whether a pod is bound to the node, and whether the API server's copy of a pod is
//! being deleted, are questions for the API server. The guard asks it through its
//! *lookup*, an [`ApiServer`] whose [`ApiServer::get_pod`] it calls: by default the
//! inner server itself. These reads are the guard's, not the plugin's: they are never
//! refused nor counted as refusals. When the inner server records the plugin's calls or
//! injects failures into them, give the guard the store behind it with
//! [`GuardedApiServer::with_lookup`], so that its reads are neither recorded nor failed
//! on the plugin's behalf. A lookup answered "forbidden" counts as "not found": a node's
//! own credential reads only the pods bound to the node (kube-apiserver's Node
//! authorizer answers 403 for any other name, absent ones included), so the pod is not
//! the node's by its binding, and the call is refused (and counted) as any other that
//! reaches beyond the node. A lookup that fails for another reason is returned as is
//! (the call is neither forwarded nor counted as a refusal): the guard cannot tell
//! whether the call may go, and the plugin sees the server's trouble, which it retries,
//! not a refusal.
//!
//! The pod manager's pods are known without asking the API server, so an honest
//! plugin's writes (which carry their pod's UID) cost no lookup; a delete costs one
//! only when the pod manager's copy is not yet marked for deletion.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::{Pod, PodStatus};

use serde_json::Value;

use crate::api_server::interface::{ApiError, ApiServer, DeleteOptions, Result, StatusPatch, StatusUpdate};
use crate::compact_pod::{CompactPod, PodField};
use crate::host_view::{HostView, ips_of};
use crate::pod_identity::compact_identity;
use crate::pod_manager::PodManager;
use crate::status_claims::is_terminal;

/// The `tracing` target of refusals, so they can be filtered apart.
pub const TARGET: &str = "podstatus::reach";

/// Characters of a plugin-chosen name, UID or IP shown in a refusal at most.
pub const MAX_SHOWN: usize = 64;

/// Why a pod is the node's.
enum Owner {
    /// The pod manager holds a pod of this namespace and name.
    PodManager,
    /// The API server's pod of this namespace and name is bound to the node; this is
    /// the pod as the lookup read it.
    Bound(Arc<CompactPod>),
}

impl Owner {
    /// The checked API server copy, if the pod is the node's by its binding.
    fn bound(&self) -> Option<&Arc<CompactPod>> {
        match self {
            Owner::Bound(pod) => Some(pod),
            Owner::PodManager => None,
        }
    }
}

/// The calls the guard checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Get,
    UpdateStatus,
    PatchStatus,
    Delete,
}

impl Verb {
    /// How refusal messages name the call.
    fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::UpdateStatus => "status update",
            Verb::PatchStatus => "status patch",
            Verb::Delete => "delete",
        }
    }

    fn index(self) -> usize {
        match self {
            Verb::Get => 0,
            Verb::UpdateStatus => 1,
            Verb::PatchStatus => 2,
            Verb::Delete => 3,
        }
    }
}

/// How many calls the guard refused, per verb (a snapshot; see
/// [`GuardedApiServer::refusals`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Refused `get-pod` calls.
    pub get: u64,
    /// Refused `update-pod-status` calls.
    pub update_status: u64,
    /// Refused `patch-pod-status` calls.
    pub patch_status: u64,
    /// Refused `delete-pod` calls.
    pub delete: u64,
}

impl Refusals {
    /// All refusals, whatever the verb.
    pub fn total(&self) -> u64 {
        self.get + self.update_status + self.patch_status + self.delete
    }
}

/// What a status write sets, as far as the guard checks it.
struct Written<'a> {
    /// The new phase: `None` leaves it as it is (a patch without `phase`), `Some("")`
    /// clears it.
    phase: Option<&'a str>,
    /// The pod and host IPs the write sets.
    ips: Vec<&'a str>,
    /// The status written (a patch's `status`), as JSON, for its claims
    /// ([`HostView::unhanded_claim`]); `None` when it writes none.
    status: Option<String>,
}

impl<'a> Written<'a> {
    fn of_status(status: &'a PodStatus) -> Self {
        Written {
            phase: Some(status.phase.as_deref().unwrap_or("")),
            ips: ips_of(status).collect(),
            status: serde_json::to_string(status).ok(),
        }
    }

    fn of_patch(patch: &'a Value) -> Self {
        let Some(status) = patch.get("status").and_then(Value::as_object) else {
            return Written { phase: None, ips: Vec::new(), status: None };
        };
        let phase = status.get("phase").map(|phase| phase.as_str().unwrap_or(""));
        let mut ips = Vec::new();
        for key in ["podIP", "hostIP"] {
            ips.extend(status.get(key).and_then(Value::as_str));
        }
        for key in ["podIPs", "hostIPs", "$setElementOrder/podIPs", "$setElementOrder/hostIPs"] {
            let items = status.get(key).and_then(Value::as_array).into_iter().flatten();
            // An item `{"ip": X, "$patch": "delete"}` removes X: no IP is written.
            let set = items.filter(|item| item.get("$patch").is_none());
            ips.extend(set.filter_map(|item| item.get("ip").and_then(Value::as_str)));
        }
        ips.retain(|ip| !ip.is_empty());
        Written { phase, ips, status: serde_json::to_string(status).ok() }
    }
}

/// An [`ApiServer`] that forwards only the calls the plugin may make (see the module
/// documentation) and refuses the others with [`ApiError::Forbidden`]. Thread-safe;
/// every method takes `&self`.
pub struct GuardedApiServer {
    /// Where allowed calls go.
    inner: Arc<dyn ApiServer>,
    /// The node's pods.
    pod_manager: Arc<PodManager>,
    /// The node's name; `None`: only the pod manager's pods are the node's.
    node_name: Option<String>,
    /// Where the guard reads pods to check their binding and deletion (the inner server
    /// unless [`GuardedApiServer::with_lookup`] says otherwise).
    lookup: Arc<dyn ApiServer>,
    /// What the node reported: the IPs a status may carry, whether a pod may go.
    host_view: Arc<HostView>,
    /// Refusals, indexed by [`Verb::index`].
    refusals: [AtomicU64; 4],
}

impl GuardedApiServer {
    /// A guard in front of `inner` for the node whose pods `pod_manager` holds and whose
    /// reports `host_view` keeps. With a `node_name`, pods the API server has bound to
    /// that node are the node's too; the guard then reads them through `inner`'s
    /// [`ApiServer::get_pod`] (see [`GuardedApiServer::with_lookup`]).
    pub fn new(
        inner: Arc<dyn ApiServer>,
        pod_manager: Arc<PodManager>,
        node_name: Option<String>,
        host_view: Arc<HostView>,
    ) -> Self {
        GuardedApiServer {
            lookup: Arc::clone(&inner),
            inner,
            pod_manager,
            node_name: node_name.filter(|name| !name.is_empty()),
            host_view,
            refusals: Default::default(),
        }
    }

    /// Reads pods for the guard's checks through `lookup` instead of the inner server:
    /// for an inner server whose `get_pod` must see only the plugin's calls (one that
    /// records them or injects failures), pass the store behind it.
    #[must_use]
    pub fn with_lookup(mut self, lookup: Arc<dyn ApiServer>) -> Self {
        self.lookup = lookup;
        self
    }

    /// The node's name, if one is configured.
    pub fn node_name(&self) -> Option<&str> {
        self.node_name.as_deref()
    }

    /// The host's view the guard consults.
    pub fn host_view(&self) -> &Arc<HostView> {
        &self.host_view
    }

    /// How many calls were refused so far, per verb.
    pub fn refusals(&self) -> Refusals {
        let count = |verb: Verb| self.refusals[verb.index()].load(Ordering::Relaxed);
        Refusals {
            get: count(Verb::Get),
            update_status: count(Verb::UpdateStatus),
            patch_status: count(Verb::PatchStatus),
            delete: count(Verb::Delete),
        }
    }

    /// The pod manager's pods of `namespace/name` (several while a recreated pod's old
    /// copy is still held).
    fn held(&self, namespace: &str, name: &str) -> Vec<Arc<CompactPod>> {
        self.pod_manager.named(namespace, name)
    }

    /// The pod manager's pod with `uid`, if it is `namespace/name`.
    fn held_by_uid(&self, namespace: &str, name: &str, uid: &str) -> Option<Arc<CompactPod>> {
        self.pod_manager.get_any(uid).filter(|pod| compact_identity(pod) == (namespace, name))
    }

    /// Why the pod `namespace/name` is the node's, or `None` when it is not. `Err` only
    /// when the lookup failed for another reason than the pod being absent.
    fn owner(&self, namespace: &str, name: &str) -> Result<Option<Owner>> {
        if !self.pod_manager.named(namespace, name).is_empty() {
            return Ok(Some(Owner::PodManager));
        }
        Ok(self.bound_pod(namespace, name)?.map(Owner::Bound))
    }

    /// The API server's pod `namespace/name`, as the guard's lookup reads it; `None`
    /// when it is absent, or when the lookup may not read it (a node's credential reads
    /// only its own pods: see the module documentation).
    fn api_copy(&self, namespace: &str, name: &str) -> Result<Option<Arc<CompactPod>>> {
        match self.lookup.get_pod_compact(namespace, name) {
            Ok(pod) => Ok(Some(pod)),
            Err(ApiError::NotFound { .. } | ApiError::Forbidden { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The API server's pod `namespace/name` if it is bound to the node (never asked
    /// when no node name is configured).
    fn bound_pod(&self, namespace: &str, name: &str) -> Result<Option<Arc<CompactPod>>> {
        let Some(node_name) = self.node_name.as_deref() else {
            return Ok(None);
        };
        let pod = self.api_copy(namespace, name)?;
        Ok(pod.filter(|pod| pod.field(PodField::NodeName) == Some(node_name)))
    }

    /// Whether `uid`, a UID precondition of a call on `namespace/name`, names a pod the
    /// node owns: a pod-manager pod, or the pod being written when it is bound to the
    /// node. (Only the named pod is asked about: a precondition naming another pod
    /// could only fail.)
    fn owns_uid(&self, namespace: &str, name: &str, uid: &str, owner: &Owner) -> Result<bool> {
        if self.pod_manager.get_any(uid).is_some() {
            return Ok(true);
        }
        let bound = match owner {
            Owner::Bound(pod) => Some(Arc::clone(pod)),
            // The name is the pod manager's; the API server's pod of that name may
            // still be a newer one bound to the node.
            Owner::PodManager => self.bound_pod(namespace, name)?,
        };
        Ok(bound.is_some_and(|pod| pod.uid() == Some(uid)))
    }

    /// The UID a status write of `namespace/name` is pinned to: its own preconditions
    /// when they name pods the node owns, else the one the guard chooses (see the
    /// module documentation). `Err` is the refusal, or a failed lookup.
    fn pin(&self, verb: Verb, namespace: &str, name: &str, given: &[Option<&str>], owner: &Owner) -> Result<Pinned> {
        let given: Vec<&str> = given.iter().flatten().copied().filter(|uid| !uid.is_empty()).collect();
        for uid in &given {
            if !self.owns_uid(namespace, name, uid, owner)? {
                let why = format_args!("UID precondition {} is not a pod of this node", shown(uid));
                return Err(self.refuse(verb, namespace, name, why));
            }
        }
        if let Some(uid) = given.first() {
            return Ok(Pinned { uid: (*uid).to_owned(), added: false });
        }
        let chosen = match owner {
            Owner::Bound(pod) => pod.uid().map(str::to_owned),
            // A static pod is never in the API server: its name's object is its mirror pod.
            Owner::PodManager => match self
                .held(namespace, name)
                .into_iter()
                .filter(|pod| pod.is_mirror() || !pod.is_static())
                .collect::<Vec<_>>()
                .as_slice()
            {
                [only] => only.uid().map(str::to_owned),
                _ => self.bound_pod(namespace, name)?.and_then(|pod| pod.uid().map(str::to_owned)),
            },
        };
        match chosen.filter(|uid| !uid.is_empty()) {
            Some(uid) => Ok(Pinned { uid, added: true }),
            None => {
                let why = format_args!("no UID precondition, and no one pod of this node has that name");
                Err(self.refuse(verb, namespace, name, why))
            }
        }
    }

    /// Checks what a status write of the pod `uid` (`namespace/name`) sets against what
    /// the host knows: IPs the node reported, no terminal phase left.
    fn check_written(
        &self,
        verb: Verb,
        namespace: &str,
        name: &str,
        uid: &str,
        owner: &Owner,
        written: &Written<'_>,
    ) -> Result<()> {
        // A mirror pod carries its static pod's status: the node reported that one.
        let reported_as = self.pod_manager.translate_pod_uid(uid);
        if let Some(ip) = written.ips.iter().find(|ip| !self.host_view.reported_ip(&reported_as, ip)) {
            let why = format_args!("IP {} was not reported by the node for this pod", shown(ip));
            return Err(self.refuse(verb, namespace, name, why));
        }
        if let Some(new) = written.phase {
            let stored = self
                .held_by_uid(namespace, name, uid)
                .or_else(|| owner.bound().filter(|pod| pod.uid() == Some(uid)).cloned());
            let old = stored.as_ref().and_then(|pod| pod.field(PodField::Phase));
            if let Some(old) = old.filter(|old| is_terminal(old) && *old != new) {
                let why = format_args!("phase {old} is terminal, it does not go back to {:?}", shown(new));
                return Err(self.refuse(verb, namespace, name, why));
            }
        }
        // The guard cannot tell a request's sync from another write: what was handed
        // before a drop counts (the runtime holds a plugin's syncs to the stricter rule).
        if let Some(status) = &written.status
            && let Err(why) = self.claims_handed(namespace, name, uid, owner.bound(), true, status)
        {
            return Err(self.refuse(verb, namespace, name, format_args!("{why}")));
        }
        Ok(())
    }

    /// `Err` naming the first claim of `status` (a status write of `namespace/name`,
    /// UID `uid`) that the node never reported for the pod, nor the API server's copy
    /// carries ([`HostView::unhanded_claim`], `of_request` as there); the copies are
    /// read only then: the pod manager's, the one the binding was checked on (`bound`),
    /// the lookup's now.
    fn claims_handed(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        bound: Option<&Arc<CompactPod>>,
        of_request: bool,
        status: &str,
    ) -> std::result::Result<(), String> {
        // A mirror pod carries its static pod's status: the node reported that one.
        let reported_as = self.pod_manager.translate_pod_uid(uid);
        // Read one at a time, the lookup's (a GET) only if the others leave a claim.
        let held = std::iter::once_with(|| self.held_by_uid(namespace, name, uid));
        let bound = std::iter::once_with(|| bound.filter(|pod| pod.uid() == Some(uid)).cloned());
        let looked_up =
            std::iter::once_with(|| self.api_copy(namespace, name).ok().flatten().filter(|pod| pod.uid() == Some(uid)));
        let api = held.chain(bound).chain(looked_up).flatten().filter_map(|pod| status_text(&pod));
        match self.host_view.unhanded_claim(&reported_as, status, of_request, api) {
            Ok(None) => Ok(()),
            Ok(Some(claim)) => Err(format!(
                "the status has {claim}, which no status the node reported for this pod carries (nor the API \
                 server's copy)"
            )),
            Err(unreadable) => Err(format!("the status written: {unreadable}")),
        }
    }

    /// Logs and counts a refusal; the error to return.
    fn refuse(&self, verb: Verb, namespace: &str, name: &str, why: fmt::Arguments<'_>) -> ApiError {
        self.refusals[verb.index()].fetch_add(1, Ordering::Relaxed);
        let (namespace, name) = (shown(namespace), shown(name));
        let message = format!("{} of pod {namespace}/{name} refused: {why}", verb.as_str());
        tracing::warn!(target: TARGET, verb = verb.as_str(), %namespace, %name, "{message}");
        ApiError::Forbidden { message }
    }

    /// The refusal of a pod that is not the node's.
    fn not_ours(&self, verb: Verb, namespace: &str, name: &str) -> ApiError {
        self.refuse(verb, namespace, name, format_args!("not a pod of this node"))
    }

    /// A GET of `namespace/name` may go on: a pod of the node's.
    fn admit_get(&self, namespace: &str, name: &str) -> Result<()> {
        match self.owner(namespace, name)? {
            Some(_) => Ok(()),
            // A pod the node itself reported, gone from the API server and then from
            // the pod manager (deleted, by this node's status manager say): the API
            // server's answer, as for a pod-manager pod that is gone. It tells the
            // plugin nothing the node had not handed it.
            None if self.host_view.reported_name(namespace, name) && self.api_copy(namespace, name)?.is_none() => {
                Ok(())
            }
            None => Err(self.not_ours(Verb::Get, namespace, name)),
        }
    }

    /// A PUT of a status, if it may go on: of a pod of the node's, pinned to its UID,
    /// claiming nothing the host did not hand.
    fn admit_update(&self, mut update: StatusUpdate) -> Result<StatusUpdate> {
        let verb = Verb::UpdateStatus;
        let Some(owner) = self.owner(&update.namespace, &update.name)? else {
            return Err(self.not_ours(verb, &update.namespace, &update.name));
        };
        let pinned = self.pin(verb, &update.namespace, &update.name, &[update.uid_precondition.as_deref()], &owner)?;
        let written = Written::of_status(&update.status);
        self.check_written(verb, &update.namespace, &update.name, &pinned.uid, &owner, &written)?;
        if pinned.added {
            update.uid_precondition = Some(pinned.uid);
        }
        Ok(update)
    }

    /// A status PATCH, if it may go on: as [`Self::admit_update`], and only of status.
    fn admit_patch(&self, mut patch: StatusPatch) -> Result<StatusPatch> {
        let verb = Verb::PatchStatus;
        let Some(owner) = self.owner(&patch.namespace, &patch.name)? else {
            return Err(self.not_ours(verb, &patch.namespace, &patch.name));
        };
        if let Some(field) = beyond_status(&patch.patch) {
            let why = format_args!("the patch changes {}, not only status", shown(&field));
            return Err(self.refuse(verb, &patch.namespace, &patch.name, why));
        }
        let inside = patch.patch.pointer("/metadata/uid").and_then(Value::as_str);
        let given = [patch.uid_precondition.as_deref(), inside];
        let pinned = self.pin(verb, &patch.namespace, &patch.name, &given, &owner)?;
        let written = Written::of_patch(&patch.patch);
        self.check_written(verb, &patch.namespace, &patch.name, &pinned.uid, &owner, &written)?;
        if pinned.added {
            patch.uid_precondition = Some(pinned.uid);
        }
        Ok(patch)
    }
}

/// A status write's UID.
struct Pinned {
    uid: String,
    /// Whether the guard chose it (the write carried none).
    added: bool,
}

/// A plugin-chosen string as messages show it: at most [`MAX_SHOWN`] characters.
fn shown(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_SHOWN) {
        Some((at, _)) => Cow::Owned(format!("{}...", &text[..at])),
        None => Cow::Borrowed(text),
    }
}

/// The status of a pod the API server answered, as JSON.
fn status_text(pod: &CompactPod) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Status<'a> {
        #[serde(default, borrow)]
        status: Option<&'a serde_json::value::RawValue>,
    }
    let status = serde_json::from_str::<Status<'_>>(pod.json()).ok()?.status?;
    Some(status.get().to_owned())
}

impl ApiServer for GuardedApiServer {
    fn judge_status_write(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        of_request: bool,
        status: &dyn Fn() -> Option<String>,
    ) -> Option<Result<(), String>> {
        let judged = |status: String| self.claims_handed(namespace, name, uid, None, of_request, &status);
        Some(status().map_or(Ok(()), judged))
    }

    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
        self.admit_get(namespace, name)?;
        self.inner.get_pod(namespace, name)
    }

    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
        let update = self.admit_update(update)?;
        self.inner.update_pod_status(update)
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
        let patch = self.admit_patch(patch)?;
        self.inner.patch_pod_status(patch)
    }

    fn get_pod_compact(&self, namespace: &str, name: &str) -> Result<Arc<CompactPod>> {
        self.admit_get(namespace, name)?;
        self.inner.get_pod_compact(namespace, name)
    }

    fn update_pod_status_compact(&self, update: StatusUpdate) -> Result<Arc<CompactPod>> {
        let update = self.admit_update(update)?;
        self.inner.update_pod_status_compact(update)
    }

    fn patch_pod_status_compact(&self, patch: StatusPatch) -> Result<Arc<CompactPod>> {
        let patch = self.admit_patch(patch)?;
        self.inner.patch_pod_status_compact(patch)
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
        let verb = Verb::Delete;
        let Some(owner) = self.owner(namespace, name)? else {
            return Err(self.not_ours(verb, namespace, name));
        };
        let Some(uid) = options.uid_precondition.as_deref().filter(|uid| !uid.is_empty()) else {
            return Err(self.refuse(verb, namespace, name, format_args!("no UID precondition")));
        };
        if !self.owns_uid(namespace, name, uid, &owner)? {
            let why = format_args!("UID precondition {} is not a pod of this node", shown(uid));
            return Err(self.refuse(verb, namespace, name, why));
        }
        // The host's copies of the pod the precondition names: the pod manager's, and
        // the API server's unless the pod manager's already settles it.
        let held = self.held_by_uid(namespace, name, uid);
        let being_deleted = |pod: &CompactPod| pod.is_being_deleted();
        let api = match (&held, owner.bound()) {
            (Some(pod), _) if being_deleted(pod) => None,
            (_, Some(pod)) => Some(Arc::clone(pod)),
            _ => self.api_copy(namespace, name)?,
        };
        let api = api.filter(|pod| pod.uid() == Some(uid));
        let copies: Vec<&Arc<CompactPod>> = held.iter().chain(api.iter()).collect();
        if copies.iter().any(|pod| pod.is_mirror()) {
            let why = format_args!("a mirror pod is its static pod's to remove, not the status manager's");
            return Err(self.refuse(verb, namespace, name, why));
        }
        let Some(pod) = copies.iter().find(|pod| being_deleted(pod)) else {
            let why = format_args!("the pod is not being deleted (no deletionTimestamp)");
            return Err(self.refuse(verb, namespace, name, why));
        };
        // Parsed only here: a deletion's last check reads the node's copy whole.
        let pod = pod.pod().map_err(|e| ApiError::Internal { message: e.to_string() })?;
        if let Err(not_safe) = self.host_view.no_container_can_run(&self.pod_manager.translate_pod_uid(uid), &pod) {
            return Err(self.refuse(verb, namespace, name, format_args!("{}", not_safe.as_str())));
        }
        // The grace period is the host's (see the module documentation).
        let options = DeleteOptions { grace_period_seconds: Some(0), ..options.clone() };
        self.inner.delete_pod(namespace, name, &options)
    }
}

/// The first field of a pod patch beyond `status` and `metadata.uid` (directives such
/// as `$patch` included), as a path; `None` when the patch is a status patch.
fn beyond_status(patch: &Value) -> Option<String> {
    let Value::Object(fields) = patch else {
        return Some("the whole pod".into());
    };
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("status", _) => {}
            ("metadata", Value::Object(metadata)) => {
                if let Some(other) = metadata.keys().find(|key| *key != "uid") {
                    return Some(format!("metadata.{other}"));
                }
            }
            _ => return Some(key.clone()),
        }
    }
    None
}

impl fmt::Debug for GuardedApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedApiServer")
            .field("node_name", &self.node_name)
            .field("host_view", &self.host_view)
            .field("refusals", &self.refusals())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api_server::memory::MemoryApiServer;
    use crate::deletion_safety::FixedDeletionSafety;
    use crate::pod_identity::{CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION};
    use crate::testing;
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;
    use std::sync::Mutex;

    const NODE: &str = "node-1";

    fn pod(namespace: &str, name: &str, uid: &str, node: &str) -> Pod {
        testing::pod(name, uid).namespace(namespace).node(node).build()
    }

    fn annotated(mut pod: Pod, annotations: &[(&str, &str)]) -> Pod {
        pod.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        pod
    }

    fn phase(phase: &str) -> PodStatus {
        PodStatus { phase: Some(phase.into()), ..Default::default() }
    }

    fn update(namespace: &str, name: &str, uid: Option<&str>) -> StatusUpdate {
        StatusUpdate {
            namespace: namespace.into(),
            name: name.into(),
            uid_precondition: uid.map(Into::into),
            resource_version_precondition: None,
            status: phase("Running"),
        }
    }

    fn patch(namespace: &str, name: &str, uid: Option<&str>, body: Value) -> StatusPatch {
        StatusPatch {
            namespace: namespace.into(),
            name: name.into(),
            uid_precondition: uid.map(Into::into),
            patch: body,
        }
    }

    fn precondition(uid: Option<&str>) -> DeleteOptions {
        DeleteOptions { uid_precondition: uid.map(Into::into), grace_period_seconds: Some(0), ..Default::default() }
    }

    fn forbidden<T: fmt::Debug>(result: Result<T>) -> String {
        match result {
            Err(ApiError::Forbidden { message }) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// The node's world: `ns/a` (`ua`) in the pod manager, the static pod `ns/web`
    /// (`s1`) with its mirror pod (`m1`), `ns/b` (`ub`) bound to the node but not (yet)
    /// in the pod manager, and `kube-system/etcd` (`ue`) of another node.
    struct Node {
        store: Arc<MemoryApiServer>,
        pod_manager: Arc<PodManager>,
        safety: Arc<FixedDeletionSafety>,
        host_view: Arc<HostView>,
    }

    impl Node {
        fn new() -> Node {
            let store = Arc::new(MemoryApiServer::new());
            let pod_manager = Arc::new(PodManager::new());
            let static_pod = annotated(pod("ns", "web", "s1", NODE), &[(CONFIG_SOURCE_ANNOTATION, "file")]);
            let mirror_pod = annotated(
                pod("ns", "web", "m1", NODE),
                &[(CONFIG_SOURCE_ANNOTATION, "file"), (CONFIG_MIRROR_ANNOTATION, "hash")],
            );
            for pod in [pod("ns", "a", "ua", NODE), static_pod, mirror_pod.clone()] {
                pod_manager.add_pod(pod);
            }
            for pod in [pod("ns", "a", "ua", NODE), mirror_pod, pod("ns", "b", "ub", NODE)] {
                store.create_pod(pod).expect("create");
            }
            store.create_pod(pod("kube-system", "etcd", "ue", "node-2")).expect("create");
            let safety = Arc::new(FixedDeletionSafety::new(true));
            let host_view = Arc::new(HostView::new(safety.clone()));
            Node { store, pod_manager, safety, host_view }
        }

        fn guard(&self, node_name: Option<&str>) -> GuardedApiServer {
            self.guard_over(self.store.clone(), node_name)
        }

        /// The node's guard in front of `inner` (rather than the node's store).
        fn guard_over(&self, inner: Arc<dyn ApiServer>, node_name: Option<&str>) -> GuardedApiServer {
            GuardedApiServer::new(
                inner,
                Arc::clone(&self.pod_manager),
                node_name.map(Into::into),
                Arc::clone(&self.host_view),
            )
        }

        /// The API server's `namespace/name` is being deleted, and the node has
        /// terminated it.
        fn deleting(&self, namespace: &str, name: &str) {
            let mut pod = (*self.store.get_pod(namespace, name).expect("stored")).clone();
            pod.metadata.deletion_timestamp = Some(deletion_timestamp());
            self.host_view.report_termination(&pod);
            self.store.put_pod(pod).expect("put");
        }
    }

    #[test]
    fn get_reaches_only_the_nodes_pods() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let message = forbidden(guard.get_pod("kube-system", "etcd"));
        assert_eq!(message, "get of pod kube-system/etcd refused: not a pod of this node");
        for (namespace, name) in [("ns", "a"), ("ns", "web"), ("ns", "b")] {
            assert!(guard.get_pod(namespace, name).is_ok(), "{namespace}/{name}");
        }
        // A name in no one's hands is refused, not reported missing: the plugin learns
        // nothing of pods that are not the node's.
        forbidden(guard.get_pod("ns", "nowhere"));
        // A pod-manager pod gone from the API server is the API server's answer.
        node.store.remove_pod("ns", "a").expect("remove");
        assert_eq!(guard.get_pod("ns", "a").map_err(|e| e.reason()), Err("NotFound"));
        // Gone from the pod manager too (a pod deleted and forgotten): refused, unless
        // the node reported it, which makes it the API server's answer again; never
        // once another pod of that name is in the API server (on another node).
        let a = node.pod_manager.remove_pod("ua").expect("held");
        forbidden(guard.get_pod("ns", "a"));
        node.host_view.report_status(&a.pod().expect("parses"), &Default::default());
        assert_eq!(guard.get_pod("ns", "a").map_err(|e| e.reason()), Err("NotFound"));
        // The view forgetting the pod (housekeeping) leaves a sync queued before it the
        // same answer.
        node.host_view.retain(&[]);
        assert_eq!(guard.get_pod("ns", "a").map_err(|e| e.reason()), Err("NotFound"));
        node.store.create_pod(pod("ns", "a", "ua2", "node-2")).expect("create");
        forbidden(guard.get_pod("ns", "a"));
        // Without a node name only the pod manager's pods are the node's.
        let guard = node.guard(None);
        forbidden(guard.get_pod("ns", "b"));
        assert!(guard.get_pod("ns", "web").is_ok());
        assert_eq!(guard.refusals(), Refusals { get: 1, ..Refusals::default() });
    }

    /// A status write of each kind (`what`) through the node's guard: refused for
    /// `kube-system/etcd` (`refused`), which stays untouched, and writing Running to each
    /// of the node's pods (`owned`, given namespace, name and UID). The node and its guard.
    fn writes_reach_only_the_nodes_pods(
        what: &str,
        refused: impl Fn(&GuardedApiServer) -> Result<Arc<Pod>>,
        owned: impl Fn(&GuardedApiServer, &str, &str, &str) -> Result<Arc<Pod>>,
    ) -> (Node, GuardedApiServer) {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let before = node.store.get_pod("kube-system", "etcd").expect("get");
        let message = forbidden(refused(&guard));
        assert_eq!(message, format!("{what} of pod kube-system/etcd refused: not a pod of this node"));
        assert_eq!(node.store.get_pod("kube-system", "etcd").expect("get"), before, "untouched");
        for (namespace, name, uid) in [("ns", "a", "ua"), ("ns", "web", "m1"), ("ns", "b", "ub")] {
            let written = owned(&guard, namespace, name, uid).expect("owned");
            assert_eq!(written.status, Some(phase("Running")), "{namespace}/{name}");
        }
        (node, guard)
    }

    #[test]
    fn status_writes_reach_only_the_nodes_pods() {
        let (node, _) = writes_reach_only_the_nodes_pods(
            "status update",
            |guard| guard.update_pod_status(update("kube-system", "etcd", Some("ue"))),
            |guard, namespace, name, uid| guard.update_pod_status(update(namespace, name, Some(uid))),
        );
        forbidden(node.guard(None).update_pod_status(update("ns", "b", None)));
    }

    #[test]
    fn a_status_write_through_the_guard_changes_only_status() {
        let node = Node::new();
        let mut full = testing::pod("full", "uf")
            .node(NODE)
            .labels(&[("app", "x")])
            .annotations(&[("note", "y")])
            .container("c")
            .build();
        full.metadata.generate_name = Some("full-".into());
        full.status = Some(phase("Pending"));
        node.pod_manager.add_pod(full.clone());
        let before = node.store.create_pod(full).expect("create");
        let written = node.guard(Some(NODE)).update_pod_status(update("ns", "full", Some("uf"))).expect("write");
        assert_eq!(written.spec, before.spec);
        let strip = |pod: &Pod| ObjectMeta { resource_version: None, ..pod.metadata.clone() };
        assert_eq!(strip(&written), strip(&before), "metadata is kept, but for the resourceVersion");
        assert_ne!(written.metadata.resource_version, before.metadata.resource_version);
        assert_eq!(written.status, Some(phase("Running")));
        let body = json!({"metadata": {"uid": "uf"}, "status": {"phase": "Succeeded"}});
        let patched = node.guard(Some(NODE)).patch_pod_status(patch("ns", "full", None, body)).expect("patch");
        assert_eq!((patched.spec.clone(), strip(&patched)), (before.spec.clone(), strip(&before)));
        assert_eq!(patched.status, Some(phase("Succeeded")));
    }

    #[test]
    fn status_patches_reach_only_the_nodes_pods() {
        let (_, guard) = writes_reach_only_the_nodes_pods(
            "status patch",
            |guard| {
                let body = json!({"metadata": {"uid": "ue"}, "status": {"phase": "Failed"}});
                guard.patch_pod_status(patch("kube-system", "etcd", None, body))
            },
            |guard, namespace, name, uid| {
                let body = json!({"metadata": {"uid": uid}, "status": {"phase": "Running"}});
                guard.patch_pod_status(patch(namespace, name, Some(uid), body))
            },
        );
        assert_eq!(guard.refusals(), Refusals { patch_status: 1, ..Refusals::default() });
    }

    #[test]
    fn a_status_patch_that_reaches_beyond_status_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let before = node.store.get_pod("ns", "a").expect("get");
        let cases = [
            (json!({"metadata": {"uid": "ua", "labels": {"x": "y"}}, "status": {}}), "metadata.labels"),
            (json!({"metadata": {"annotations": {"x": "y"}}}), "metadata.annotations"),
            (json!({"spec": {"nodeName": "node-2"}, "status": {}}), "spec"),
            (json!({"$patch": "replace", "status": {}}), "$patch"),
            (json!({"metadata": null, "status": {}}), "metadata"),
            (json!(["status"]), "the whole pod"),
        ];
        for (body, field) in cases {
            let message = forbidden(guard.patch_pod_status(patch("ns", "a", Some("ua"), body)));
            assert_eq!(
                message,
                format!("status patch of pod ns/a refused: the patch changes {field}, not only status")
            );
        }
        assert_eq!(node.store.get_pod("ns", "a").expect("get"), before, "untouched");
        assert_eq!(guard.refusals().patch_status, 6);
    }

    #[test]
    fn deleting_a_pod_of_another_node_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let message = forbidden(guard.delete_pod("kube-system", "etcd", &precondition(Some("ue"))));
        assert_eq!(message, "delete of pod kube-system/etcd refused: not a pod of this node");
        assert!(node.store.get_pod("kube-system", "etcd").is_ok(), "still there");
    }

    #[test]
    fn deleting_without_a_uid_precondition_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        for uid in [None, Some("")] {
            let message = forbidden(guard.delete_pod("ns", "a", &precondition(uid)));
            assert_eq!(message, "delete of pod ns/a refused: no UID precondition");
        }
        assert!(node.store.get_pod("ns", "a").is_ok(), "still there");
        assert_eq!(guard.refusals(), Refusals { delete: 2, ..Refusals::default() });
    }

    #[test]
    fn deleting_with_a_uid_precondition_the_node_does_not_own_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        for uid in ["u9", "ue"] {
            let message = forbidden(guard.delete_pod("ns", "a", &precondition(Some(uid))));
            assert_eq!(
                message,
                format!("delete of pod ns/a refused: UID precondition {uid} is not a pod of this node")
            );
        }
        // A node-bound pod's UID is the node's only when the API server has it bound.
        forbidden(node.guard(None).delete_pod("ns", "a", &precondition(Some("ub"))));
        assert!(node.store.get_pod("ns", "a").is_ok(), "still there");
    }

    fn deletion_timestamp() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
        serde_json::from_value(json!("2026-01-01T00:00:00Z")).expect("a time")
    }

    #[test]
    fn deletes_of_the_nodes_pods_with_their_uid_are_forwarded() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        node.deleting("ns", "a");
        node.deleting("ns", "b");
        // A pod-manager UID naming another pod is no copy of this one being deleted.
        forbidden(guard.delete_pod("ns", "a", &precondition(Some("s1"))));
        guard.delete_pod("ns", "a", &precondition(Some("ua"))).expect("pod manager's pod");
        guard.delete_pod("ns", "b", &precondition(Some("ub"))).expect("bound to the node");
        // A pod recreated under a pod-manager name and bound to the node: its new UID is
        // the node's although the pod manager does not hold it yet.
        node.store.create_pod(pod("ns", "a", "ua2", NODE)).expect("recreate");
        node.deleting("ns", "a");
        guard.delete_pod("ns", "a", &precondition(Some("ua2"))).expect("recreated, bound to the node");
        assert_eq!(guard.refusals(), Refusals { delete: 1, ..Refusals::default() });
    }

    #[test]
    fn deleting_a_pod_that_is_not_being_deleted_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        // Terminated by the node, but nobody asked for its deletion: a force-delete.
        node.host_view.report_termination(&node.store.get_pod("ns", "a").expect("get"));
        let message = forbidden(guard.delete_pod("ns", "a", &precondition(Some("ua"))));
        assert_eq!(message, "delete of pod ns/a refused: the pod is not being deleted (no deletionTimestamp)");
        // The pod manager's copy marked is enough (the API server's may lag behind a watch).
        let mut held = node.pod_manager.get_any("ua").expect("held").pod().expect("parses");
        held.metadata.deletion_timestamp = Some(deletion_timestamp());
        node.pod_manager.add_pod(held);
        guard.delete_pod("ns", "a", &precondition(Some("ua"))).expect("being deleted");
    }

    #[test]
    fn deleting_a_mirror_pod_is_refused() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        node.deleting("ns", "web");
        let message = forbidden(guard.delete_pod("ns", "web", &precondition(Some("m1"))));
        assert_eq!(
            message,
            "delete of pod ns/web refused: a mirror pod is its static pod's to remove, not the status manager's"
        );
        assert!(node.store.get_pod("ns", "web").is_ok(), "still there");
    }

    #[test]
    fn deleting_is_refused_until_the_hosts_view_says_no_container_can_run() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let mut pod = (*node.store.get_pod("ns", "a").expect("stored")).clone();
        pod.metadata.deletion_timestamp = Some(deletion_timestamp());
        node.store.put_pod(pod.clone()).expect("put");
        let message = forbidden(guard.delete_pod("ns", "a", &precondition(Some("ua"))));
        assert_eq!(message, "delete of pod ns/a refused: the node never reported this pod's status");
        node.host_view.report_status(&pod, &phase("Running"));
        node.safety.set(false);
        let message = forbidden(guard.delete_pod("ns", "a", &precondition(Some("ua"))));
        assert_eq!(
            message,
            "delete of pod ns/a refused: by the node's own report a container of the pod may still run"
        );
        node.safety.set(true);
        guard.delete_pod("ns", "a", &precondition(Some("ua"))).expect("safe by the host's view");
        assert_eq!(guard.refusals().delete, 2);
    }

    #[test]
    fn the_grace_period_is_the_hosts() {
        let node = Node::new();
        let inner = Spy::new(Arc::clone(&node.store), None);
        let guard = node.guard_over(inner.clone(), Some(NODE));
        node.deleting("ns", "a");
        let options = DeleteOptions { grace_period_seconds: Some(3600), ..precondition(Some("ua")) };
        guard.delete_pod("ns", "a", &options).expect("deleted");
        assert_eq!(inner.calls(), ["get ns/a", "delete ns/a grace Some(0)"]);
    }

    /// `ns/a` as the node reported it: pod IP `10.0.0.1` (and `fd00::1`), host IP
    /// `192.168.0.1`; the static pod `s1` with pod IP `192.168.0.1`.
    fn reported(node: &Node) {
        let status: PodStatus = serde_json::from_value(json!({
            "phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
            "hostIP": "192.168.0.1", "hostIPs": [{"ip": "192.168.0.1"}],
        }))
        .expect("status");
        node.host_view.report_status(&node.pod_manager.get_any("ua").expect("held").pod().expect("parses"), &status);
        let status = PodStatus { pod_ip: Some("192.168.0.1".into()), ..phase("Running") };
        node.host_view.report_status(&node.pod_manager.get_any("s1").expect("held").pod().expect("parses"), &status);
    }

    #[test]
    fn a_status_may_carry_only_the_ips_the_node_reported() {
        let node = Node::new();
        reported(&node);
        let guard = node.guard(Some(NODE));
        let with_ip = |ip: &str| StatusUpdate {
            status: PodStatus { pod_ip: Some(ip.into()), host_ip: Some("192.168.0.1".into()), ..phase("Running") },
            ..update("ns", "a", Some("ua"))
        };
        guard.update_pod_status(with_ip("10.0.0.1")).expect("reported");
        guard.update_pod_status(with_ip("")).expect("cleared");
        let message = forbidden(guard.update_pod_status(with_ip("10.9.9.9")));
        assert_eq!(message, "status update of pod ns/a refused: IP 10.9.9.9 was not reported by the node for this pod");
        // Another pod's IP is as forged as an invented one.
        let message = forbidden(guard.update_pod_status(update_ips("ns", "b", "ub", "10.0.0.1")));
        assert!(message.ends_with("IP 10.0.0.1 was not reported by the node for this pod"), "{message}");
        // The mirror pod carries its static pod's reported IP.
        guard.update_pod_status(update_ips("ns", "web", "m1", "192.168.0.1")).expect("the static pod's IP");
        forbidden(guard.update_pod_status(update_ips("ns", "web", "m1", "10.0.0.1")));
        let stored = node.store.get_pod("ns", "a").expect("get");
        assert_eq!(stored.status.as_ref().and_then(|s| s.pod_ip.as_deref()), Some(""), "the last allowed write");

        let patches = [
            (json!({"status": {"podIP": "10.9.9.9"}}), false),
            (json!({"status": {"podIPs": [{"ip": "10.9.9.9"}]}}), false),
            (json!({"status": {"hostIPs": [{"ip": "10.9.9.9"}]}}), false),
            (json!({"status": {"$setElementOrder/podIPs": [{"ip": "10.9.9.9"}], "podIPs": []}}), false),
            (json!({"status": {"podIP": "10.0.0.1", "podIPs": [{"ip": "fd00::1"}]}}), true),
            (json!({"status": {"podIPs": [{"ip": "10.9.9.9", "$patch": "delete"}], "podIP": null}}), true),
        ];
        for (body, allowed) in patches {
            let result = guard.patch_pod_status(patch("ns", "a", Some("ua"), body.clone()));
            assert_eq!(result.is_ok(), allowed, "{body}: {result:?}");
        }
        assert_eq!(guard.refusals(), Refusals { update_status: 3, patch_status: 4, ..Refusals::default() });
    }

    fn update_ips(namespace: &str, name: &str, uid: &str, ip: &str) -> StatusUpdate {
        let status =
            PodStatus { pod_ips: Some(vec![k8s_openapi::api::core::v1::PodIP { ip: ip.into() }]), ..phase("Running") };
        StatusUpdate { status, ..update(namespace, name, Some(uid)) }
    }

    #[test]
    fn a_terminal_phase_does_not_go_back() {
        let node = Node::new();
        let mut done = node.pod_manager.get_any("ua").expect("held").pod().expect("parses");
        done.status = Some(phase("Succeeded"));
        node.pod_manager.add_pod(done);
        let guard = node.guard(Some(NODE));
        let message = forbidden(guard.update_pod_status(update("ns", "a", Some("ua"))));
        assert_eq!(
            message,
            r#"status update of pod ns/a refused: phase Succeeded is terminal, it does not go back to "Running""#
        );
        let back = json!({"status": {"phase": "Pending"}});
        forbidden(guard.patch_pod_status(patch("ns", "a", Some("ua"), back)));
        let cleared = json!({"status": {"phase": null}});
        forbidden(guard.patch_pod_status(patch("ns", "a", Some("ua"), cleared)));
        // The same terminal phase, or a patch that leaves the phase alone, goes through.
        let same = StatusUpdate { status: phase("Succeeded"), ..update("ns", "a", Some("ua")) };
        guard.update_pod_status(same).expect("same phase");
        let start = json!({"status": {"startTime": "2026-12-07T00:00:00Z"}});
        guard.patch_pod_status(patch("ns", "a", Some("ua"), start)).expect("no phase");
    }

    /// `ns/a` reported running with its container `app` not ready yet.
    fn reported_unready(node: &Node) {
        let status: PodStatus = serde_json::from_value(json!({
            "phase": "Running", "qosClass": "BestEffort",
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "False"}],
            "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0, "image": "nginx",
                "imageID": "sha256:1", "containerID": "containerd://1", "started": true,
                "state": {"running": {"startedAt": "2026-12-07T00:00:00Z"}}}],
        }))
        .expect("status");
        node.host_view.report_status(&node.pod_manager.get_any("ua").expect("held").pod().expect("parses"), &status);
    }

    #[test]
    fn a_status_may_claim_only_what_the_node_reported_or_the_api_server_has() {
        let node = Node::new();
        reported_unready(&node);
        let guard = node.guard(Some(NODE));
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let message = forbidden(guard.patch_pod_status(patch("ns", "a", Some("ua"), ready.clone())));
        assert_eq!(
            message,
            "status patch of pod ns/a refused: the status has condition \"Ready\" with status \"True\", which no \
             status the node reported for this pod carries (nor the API server's copy)"
        );
        let container_ready = json!({"status": {"containerStatuses": [{"name": "app", "ready": true,
            "image": "nginx", "imageID": "sha256:1", "containerID": "containerd://1", "started": true,
            "state": {"running": {}}}]}});
        let message = forbidden(guard.patch_pod_status(patch("ns", "a", Some("ua"), container_ready.clone())));
        assert!(message.contains(r#"ready "true" of "app" in containerStatuses"#), "{message}");
        let exit_code = json!({"status": {"containerStatuses": [{"name": "app", "image": "nginx",
            "imageID": "sha256:1", "containerID": "containerd://1", "started": true,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        forbidden(guard.patch_pod_status(patch("ns", "a", Some("ua"), exit_code)));
        let update = StatusUpdate {
            status: PodStatus { message: Some("evicted".into()), ..phase("Running") },
            ..update("ns", "a", Some("ua"))
        };
        assert!(forbidden(guard.update_pod_status(update)).contains(r#"message "evicted""#));
        let twice = r#"{"status": {"reason": "a", "reason": "b"}}"#;
        let twice: Value = serde_json::from_str(twice).expect("serde_json keeps the last");
        guard.patch_pod_status(patch("ns", "a", Some("ua"), twice)).expect_err("an unreported reason");

        // The API server's copy has a condition a controller set: a write may keep it.
        let mut stored = (*node.store.get_pod("ns", "a").expect("stored")).clone();
        let gate = json!({"conditions": [{"type": "example.com/gate", "status": "True"}]});
        stored.status = Some(serde_json::from_value(gate.clone()).expect("status"));
        node.store.put_pod(stored).expect("put");
        guard.patch_pod_status(patch("ns", "a", Some("ua"), json!({"status": gate}))).expect("the API server's");

        // The host made the container ready: the container and the conditions may say so.
        node.host_view.report_readiness("ua", "containerd://1", true);
        guard.patch_pod_status(patch("ns", "a", Some("ua"), container_ready)).expect("readiness the host set");
        guard.patch_pod_status(patch("ns", "a", Some("ua"), ready)).expect("readiness the host set");
        let stored = node.store.get_pod("ns", "a").expect("get");
        let conditions = stored.status.as_ref().and_then(|s| s.conditions.as_ref()).expect("conditions");
        assert!(conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"), "{conditions:?}");
        assert_eq!(guard.refusals(), Refusals { update_status: 1, patch_status: 4, ..Refusals::default() });
    }

    #[test]
    fn a_write_by_a_stale_name_is_pinned_to_the_uid_the_host_knows() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        // `ns/a` recreated on another node: the pod manager still holds the old `ua`.
        node.store.remove_pod("ns", "a").expect("remove");
        node.store.create_pod(pod("ns", "a", "ua2", "node-2")).expect("recreate");
        let before = node.store.get_pod("ns", "a").expect("get");
        assert_eq!(guard.update_pod_status(update("ns", "a", None)).map_err(|e| e.reason()), Err("Conflict"));
        let body = json!({"status": {"phase": "Failed"}});
        assert_eq!(guard.patch_pod_status(patch("ns", "a", None, body)).map_err(|e| e.reason()), Err("Conflict"));
        // Naming the new pod's UID is naming a pod of another node.
        let message = forbidden(guard.update_pod_status(update("ns", "a", Some("ua2"))));
        assert_eq!(message, "status update of pod ns/a refused: UID precondition ua2 is not a pod of this node");
        let inside = json!({"metadata": {"uid": "ua2"}, "status": {"phase": "Failed"}});
        forbidden(guard.patch_pod_status(patch("ns", "a", None, inside)));
        assert_eq!(node.store.get_pod("ns", "a").expect("get"), before, "untouched");
    }

    #[test]
    fn a_write_to_a_static_pods_name_is_pinned_to_its_mirror_pod() {
        let node = Node::new();
        let before = node.store.get_pod("ns", "web").expect("get");
        let written = node.guard(None).update_pod_status(update("ns", "web", None)).expect("pinned to m1");
        assert_eq!(written.metadata.uid.as_deref(), Some("m1"));
        assert_ne!(written.metadata.resource_version, before.metadata.resource_version);
    }

    #[test]
    fn plugin_chosen_names_are_cut_in_refusals() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let long = "n".repeat(10_000);
        let message = forbidden(guard.get_pod(&long, &long));
        assert!(message.len() < 3 * MAX_SHOWN + 64, "{} bytes", message.len());
        assert!(message.contains(&format!("{}.../{}...", "n".repeat(MAX_SHOWN), "n".repeat(MAX_SHOWN))), "{message}");
    }

    #[test]
    fn refusals_are_counted_per_verb() {
        let node = Node::new();
        let guard = node.guard(Some(NODE));
        let _ = guard.get_pod("kube-system", "etcd");
        let _ = guard.get_pod("kube-system", "etcd");
        let _ = guard.update_pod_status(update("kube-system", "etcd", None));
        let _ = guard.patch_pod_status(patch("ns", "a", None, json!({"spec": {}})));
        let _ = guard.delete_pod("ns", "a", &precondition(None));
        let _ = guard.delete_pod("ns", "a", &precondition(Some("u9")));
        let _ = guard.delete_pod("kube-system", "etcd", &precondition(Some("ue")));
        let refusals = guard.refusals();
        assert_eq!(refusals, Refusals { get: 2, update_status: 1, patch_status: 1, delete: 3 });
        assert_eq!(refusals.total(), 7);
        assert!(format!("{guard:?}").contains("delete: 3"), "{guard:?}");
    }

    /// An inner server that counts the calls it gets, or fails them all.
    struct Spy {
        store: Arc<MemoryApiServer>,
        calls: Mutex<Vec<String>>,
        fail: Option<ApiError>,
    }

    impl Spy {
        fn new(store: Arc<MemoryApiServer>, fail: Option<ApiError>) -> Arc<Spy> {
            Arc::new(Spy { store, calls: Mutex::new(Vec::new()), fail })
        }

        fn calls(&self) -> Vec<String> {
            self.calls.lock().expect("calls").clone()
        }

        fn call<T>(&self, call: String, forward: impl FnOnce() -> Result<T>) -> Result<T> {
            self.calls.lock().expect("calls").push(call);
            match &self.fail {
                Some(error) => Err(error.clone()),
                None => forward(),
            }
        }
    }

    impl ApiServer for Spy {
        fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
            self.call(format!("get {namespace}/{name}"), || self.store.get_pod(namespace, name))
        }

        fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
            let call = format!("update {}/{} uid {:?}", update.namespace, update.name, update.uid_precondition);
            self.call(call, || self.store.update_pod_status(update))
        }

        fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
            let call = format!("patch {}/{} uid {:?}", patch.namespace, patch.name, patch.uid_precondition);
            self.call(call, || self.store.patch_pod_status(patch))
        }

        fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
            let call = format!("delete {namespace}/{name} grace {:?}", options.grace_period_seconds);
            self.call(call, || self.store.delete_pod(namespace, name, options))
        }
    }

    #[test]
    fn the_guards_lookups_are_not_the_plugins_calls() {
        let node = Node::new();
        let inner = Spy::new(Arc::clone(&node.store), None);
        let guard = node.guard_over(inner.clone(), Some(NODE)).with_lookup(node.store.clone());
        node.deleting("ns", "b");
        guard.get_pod("ns", "b").expect("bound");
        forbidden(guard.get_pod("kube-system", "etcd"));
        guard.delete_pod("ns", "b", &precondition(Some("ub"))).expect("bound");
        // Only the calls forwarded reach the inner server: no lookups, no refusals.
        assert_eq!(inner.calls(), ["get ns/b", "delete ns/b grace Some(0)"]);
        assert_eq!(guard.node_name(), Some(NODE));
    }

    #[test]
    fn a_failed_lookup_is_the_servers_error_not_a_refusal() {
        let node = Node::new();
        let unavailable = ApiError::Unavailable { message: "down".into() };
        let lookup = Spy::new(Arc::clone(&node.store), Some(unavailable.clone()));
        let guard = node.guard(Some(NODE)).with_lookup(lookup);
        assert_eq!(guard.get_pod("ns", "b"), Err(unavailable.clone()));
        assert_eq!(guard.update_pod_status(update("ns", "b", None)), Err(unavailable));
        // The pod manager's pods need no lookup.
        assert!(guard.get_pod("ns", "a").is_ok());
        assert_eq!(guard.refusals(), Refusals::default());
    }

    #[test]
    fn a_lookup_the_server_forbids_is_a_pod_not_of_this_node() {
        // A node's credential reads only its own pods: kube-apiserver's Node authorizer
        // answers 403 for any other name. That is the guard's refusal, counted.
        let node = Node::new();
        let denied =
            ApiError::Forbidden { message: "no relationship found between node 'node-1' and this object".into() };
        let guard = node.guard(Some(NODE)).with_lookup(Spy::new(Arc::clone(&node.store), Some(denied)));
        assert_eq!(forbidden(guard.get_pod("ns", "b")), "get of pod ns/b refused: not a pod of this node");
        let message = forbidden(guard.patch_pod_status(patch("ns", "b", None, json!({"status": {}}))));
        assert_eq!(message, "status patch of pod ns/b refused: not a pod of this node");
        forbidden(guard.delete_pod("ns", "b", &precondition(Some("ub"))));
        // The pod manager's pods need no lookup; one not marked for deletion is not
        // deleted on the strength of a copy the guard may not read.
        assert!(guard.get_pod("ns", "a").is_ok());
        let message = forbidden(guard.delete_pod("ns", "a", &precondition(Some("ua"))));
        assert_eq!(message, "delete of pod ns/a refused: the pod is not being deleted (no deletionTimestamp)");
        assert_eq!(guard.refusals(), Refusals { get: 1, patch_status: 1, delete: 2, ..Refusals::default() });
    }

    #[test]
    fn a_write_allowed_by_the_binding_is_pinned_to_the_pod_checked() {
        // The lookup saw `ns/b` bound to the node; by the time of the write the name
        // holds a pod of another node: the write fails its precondition.
        let node = Node::new();
        let inner = Spy::new(Arc::new(MemoryApiServer::new()), None);
        inner.store.create_pod(pod("ns", "b", "other", "node-2")).expect("create");
        let guard = node.guard_over(inner.clone(), Some(NODE)).with_lookup(node.store.clone());
        let error = guard.update_pod_status(update("ns", "b", None)).expect_err("pinned");
        assert_eq!(error.reason(), "Conflict");
        let error = guard.patch_pod_status(patch("ns", "b", None, json!({"status": {}}))).expect_err("pinned");
        assert_eq!(error.reason(), "Conflict");
        // A patch carrying its UID inside is pinned by it already.
        let inside = json!({"metadata": {"uid": "ub"}, "status": {}});
        let error = guard.patch_pod_status(patch("ns", "b", None, inside)).expect_err("pinned inside");
        assert_eq!(error.reason(), "Conflict");
        let calls = [r#"update ns/b uid Some("ub")"#, r#"patch ns/b uid Some("ub")"#, "patch ns/b uid None"];
        assert_eq!(inner.calls(), calls);
        assert_eq!(inner.store.get_pod("ns", "b").expect("get").status, None, "untouched");
    }

    #[test]
    fn a_pod_manager_pod_without_namespace_is_in_default() {
        let node = Node::new();
        let mut no_namespace = pod("", "d", "ud", NODE);
        no_namespace.metadata.namespace = None;
        node.pod_manager.add_pod(no_namespace.clone());
        node.store.create_pod(no_namespace).expect("create");
        let guard = node.guard(None);
        assert!(guard.get_pod("default", "d").is_ok());
        forbidden(guard.get_pod("other", "d"));
    }
}
