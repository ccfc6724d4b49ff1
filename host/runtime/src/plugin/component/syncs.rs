//! The syncs a 0.2.0 instance planned and has not ended, as the host saw them.
//!
//! The plugin names its syncs and says what each did; the host takes its word for
//! none of it. Each planned sync gets an ID of the host's own, unique in the process:
//! the plugin's IDs start again at 1 in every instance, so without it a step of a sync
//! of a faulted instance (a worker's answer coming back after the recovery) would reach
//! the replacement's sync of the same number, another pod's. The ledger keeps what the
//! host saw of each sync (its pod, where it stands, how many calls it asked for), and
//! checks the host's steps against it before the plugin is entered (a sync is started
//! once, resumed only while it waits for an answer; any other ID is refused as the
//! contract refuses it, `unknown-sync`) and the plugin's steps after:
//!
//! - a plan names each pod at most once and no ID of a sync not yet ended;
//! - a call is on the sync's own pod (its namespace and name, as the host handed it
//!   when the sync was planned), a write or delete pinned to its UID and a write's
//!   phase one the host handed ([`crate::reach`]), and a sync asks for at most
//!   [`Limits::sync_calls`](crate::plugin::Limits::sync_calls) calls;
//! - `deleted` ends a sync only right after a delete the API server answered, and
//!   `recreated` only right after a read that found another pod under the name: the
//!   host forgets its record of a pod's accepted status on either word, and the pod
//!   leaves its record of handed pods.
//!
//! A breach is a fault ([`Breach`]): the instance is not entered again.

use crate::shown::shown;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::bindings::{ApiCall, ApiReply, PodSync, SyncOutcome, SyncStep};
use crate::handed::HandedPods;
use crate::imports::HostState;
use crate::limits::FaultKind;
use crate::reach::{Access, check_claims, check_phase, patch_phase, pin, reply_phase, update_phase};
use crate::world::World;
use podstatus_backends::pod_identity::uid_in_json;

/// The next host ID of a sync, across every instance of the process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fault a plan or a step committed: which kind, and what happened.
pub(super) type Breach = (FaultKind, String);

/// The live syncs of one instance, by host ID.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    live: HashMap<u64, Live>,
    /// The plugin's ID of each live sync to its host ID.
    by_plugin: HashMap<u64, u64>,
}

#[derive(Debug)]
struct Live {
    plugin_id: u64,
    pod_uid: Box<str>,
    /// The pod's namespace and name as the host handed it: the only pod the sync may
    /// call on, even if the host drops the pod while the sync runs (upstream's
    /// `syncPod` runs on with the status it was given).
    namespace: Box<str>,
    name: Box<str>,
    /// The call it waits for an answer to; `None` while planned.
    waiting: Option<Verb>,
    /// Calls it asked for so far.
    calls: u32,
    /// It syncs the pod of the request the host handed to `sync-pod`: the request was
    /// queued with the status handed then, which it may write even if the pod was
    /// dropped and handed again since (what was handed before the drop counts too).
    of_request: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Get,
    Write,
    Delete,
}

impl Ledger {
    /// Takes a plan, each of whose pods `handed` holds (or held lately, for the pod of
    /// the `request` planned for): each sync under a new host ID, or the breach.
    pub(super) fn plan(
        &mut self,
        syncs: Vec<PodSync>,
        handed: &HandedPods,
        request: Option<&str>,
    ) -> Result<Vec<PodSync>, Breach> {
        let mut ids = HashSet::new();
        let mut pods = HashSet::new();
        let mut names = Vec::with_capacity(syncs.len());
        for sync in &syncs {
            if self.by_plugin.contains_key(&sync.id) || !ids.insert(sync.id) {
                return Err((FaultKind::Plan, format!("planned sync {} again before it ended", sync.id)));
            }
            if !pods.insert(sync.pod_uid.as_str()) {
                let uid = shown(&sync.pod_uid);
                return Err((FaultKind::Plan, format!("planned two syncs of pod {uid:?} in one plan")));
            }
            let name = match request {
                Some(uid) if uid == sync.pod_uid => handed.lately_named(uid),
                _ => handed.name_of(&sync.pod_uid),
            };
            let Some(name) = name else {
                let uid = shown(&sync.pod_uid);
                return Err((FaultKind::ForeignUid, format!("planned a sync of pod {uid:?}, which the host dropped")));
            };
            names.push(name);
        }
        Ok(syncs
            .into_iter()
            .zip(names)
            .map(|(sync, (namespace, name))| {
                let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                self.by_plugin.insert(sync.id, id);
                let live = Live {
                    plugin_id: sync.id,
                    pod_uid: sync.pod_uid.as_str().into(),
                    namespace,
                    name,
                    waiting: None,
                    calls: 0,
                    of_request: request.is_some_and(|uid| uid == sync.pod_uid),
                };
                self.live.insert(id, live);
                PodSync { id, ..sync }
            })
            .collect())
    }

    /// The plugin's ID of the sync `id` when it may be started (`waiting` false) or
    /// resumed (`waiting` true) now.
    pub(super) fn plugin_id(&self, id: u64, waiting: bool) -> Option<u64> {
        self.live.get(&id).filter(|live| live.waiting.is_some() == waiting).map(|live| live.plugin_id)
    }

    /// The sync `id` is over (done, failed or dropped); its plugin ID, if it was live.
    pub(super) fn end(&mut self, id: u64) -> Option<u64> {
        let live = self.live.remove(&id)?;
        self.by_plugin.remove(&live.plugin_id);
        Some(live.plugin_id)
    }

    /// Checks the step the live sync `id` took, `reply` being the answer it was handed
    /// (none when it started), and notes it: a sync that is done is over. A write or
    /// delete that carries no UID precondition gets its pod's here.
    pub(super) fn step(
        &mut self,
        id: u64,
        step: &mut SyncStep,
        reply: Option<&ApiReply>,
        state: &HostState,
        max_calls: u32,
    ) -> Result<(), Breach> {
        let Some(live) = self.live.get(&id) else { return Ok(()) };
        match step {
            SyncStep::Call(call) => {
                let (verb, namespace, name) = target(call);
                let (own_ns, own_name) = (&*live.namespace, &*live.name);
                if default_namespace(namespace) != own_ns || name != own_name {
                    let message = format!(
                        "sync of pod {:?} ({own_ns}/{own_name}) asked for a call on pod {:?}/{:?}",
                        shown(&live.pod_uid),
                        shown(namespace),
                        shown(name)
                    );
                    return Err((FaultKind::WrongPod, message));
                }
                if verb != Verb::Get {
                    held_to_its_pod(call, &live.pod_uid, live.of_request, reply, state)?;
                }
                if live.calls >= max_calls {
                    let message =
                        format!("sync of pod {:?} asked for more than {max_calls} API calls", shown(&live.pod_uid));
                    return Err((FaultKind::SyncCalls, message));
                }
                let live = self.live.get_mut(&id).expect("looked up above");
                live.calls += 1;
                live.waiting = Some(verb);
                Ok(())
            }
            SyncStep::Done(outcome) => {
                let shown = shown(&live.pod_uid).to_owned();
                let world = &state.world;
                let fits = match outcome {
                    SyncOutcome::Deleted => {
                        live.waiting == Some(Verb::Delete) && matches!(reply, Some(ApiReply::Deleted(Ok(()))))
                    }
                    SyncOutcome::Recreated => {
                        live.waiting == Some(Verb::Get) && reply.is_some_and(|r| found_another(r, &live.pod_uid, world))
                    }
                    _ => true,
                };
                let dropped = matches!(outcome, SyncOutcome::Deleted | SyncOutcome::Recreated);
                if fits && dropped {
                    // The plugin drops the pod's status (upstream's `deletePodStatus`): the
                    // host's record of handed pods drops it too.
                    state.handed.drop_pod(&live.pod_uid);
                }
                self.end(id);
                if !fits {
                    let message = format!("sync of pod {shown:?} ended {outcome:?}, which its calls do not show");
                    return Err((FaultKind::Outcome, message));
                }
                Ok(())
            }
        }
    }
}

/// Holds a sync's write or delete of its pod `uid` to the rule ([`crate::reach`]): its
/// UID precondition names the pod (one the call lacks is added), and a write's phase
/// is one the host handed for it (or the API server's, as the sync's read answered it,
/// `reply`).
fn held_to_its_pod(
    call: &mut ApiCall,
    uid: &str,
    of_request: bool,
    reply: Option<&ApiReply>,
    state: &HostState,
) -> Result<(), Breach> {
    let pods = &state.world.pod_manager;
    let given = match call {
        ApiCall::GetPod(_) => return Ok(()),
        ApiCall::UpdatePodStatus(u) => &mut u.uid_precondition,
        ApiCall::PatchPodStatus(p) => &mut p.uid_precondition,
        ApiCall::DeletePod(d) => &mut d.options.uid_precondition,
    };
    let refused =
        |why: String| (FaultKind::ForeignUid, format!("sync of pod {:?} asked for a call: {why}", shown(uid)));
    if let Some(pinned) = pin(pods, uid, given.as_deref()).map_err(refused)? {
        *given = Some(pinned);
    }
    let api_uid = given.clone().unwrap_or_default();
    let call = &*call;
    let written = match call {
        ApiCall::UpdatePodStatus(u) => update_phase(&u.status).map(Some),
        ApiCall::PatchPodStatus(p) => patch_phase(&p.patch),
        ApiCall::GetPod(_) | ApiCall::DeletePod(_) => Ok(None),
    };
    let read = || match reply {
        Some(ApiReply::Pod(Ok(pod))) => reply_phase(pod),
        _ => None,
    };
    let (namespace, name, access) = match call {
        ApiCall::UpdatePodStatus(u) => (&u.namespace, &u.name, Access::Update(&u.status)),
        ApiCall::PatchPodStatus(p) => (&p.namespace, &p.name, Access::Patch(&p.patch)),
        ApiCall::GetPod(_) | ApiCall::DeletePod(_) => return Ok(()),
    };
    written
        .and_then(|phase| check_phase(&state.handed, pods, uid, &api_uid, phase.as_deref(), of_request, read))
        .and_then(|()| check_claims(&*state.world.api_server, namespace, name, &api_uid, of_request, access))
        .map_err(|why| (FaultKind::Content, format!("sync of pod {:?} asked for a write: {why}", shown(uid))))
}

/// Kubernetes' namespace of a pod that names none.
fn default_namespace(namespace: &str) -> &str {
    crate::handed::default_namespace(namespace)
}

/// What a call does and the pod it names.
fn target(call: &ApiCall) -> (Verb, &str, &str) {
    match call {
        ApiCall::GetPod(p) => (Verb::Get, &p.namespace, &p.name),
        ApiCall::UpdatePodStatus(u) => (Verb::Write, &u.namespace, &u.name),
        ApiCall::PatchPodStatus(p) => (Verb::Write, &p.namespace, &p.name),
        ApiCall::DeletePod(d) => (Verb::Delete, &d.namespace, &d.name),
    }
}

/// Whether `reply` (to a read) is a pod that is not `uid`'s, nor its mirror pod: the
/// pod was deleted and recreated, as the plugin checks it.
fn found_another(reply: &ApiReply, uid: &str, world: &World) -> bool {
    let ApiReply::Pod(Ok(pod)) = reply else { return false };
    let Some(found) = uid_in_json(pod) else { return false };
    let translated = world.pod_manager.translate_pod_uid(&found);
    !translated.is_empty() && translated != uid
}
