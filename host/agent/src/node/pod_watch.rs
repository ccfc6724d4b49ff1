//! The node's pods from the API server: kube-runtime's [`watcher`] of the pods bound to
//! the node (`spec.nodeName`), feeding the [`PodManager`] as the kubelet's API source
//! feeds its pod manager. A fleet's nodes share one watch ([`PodWatch::start_routed`]),
//! as a shared informer serves many consumers: one list and one watch for all of them,
//! each pod handed to the pod manager of the node it is bound to ([`PodRoutes`]).
//!
//! The watcher lists once, then watches from the list's resourceVersion; a watch that
//! ends or breaks is resumed from the last resourceVersion seen, and only a `410 Gone`
//! (the version is too old) makes it list again. Errors are retried with its default
//! backoff (exponential from 0.8 s to 30 s, with jitter). After each (re)list, pods it
//! added that the list lacks are removed; pods it did not add (static pods from the
//! manifest folder, which the API server never has) are never touched.

use std::collections::{HashMap, HashSet};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};

use podstatus_backends::PodManager;
use podstatus_backends::pod_identity::uid_of;

/// How long one watch request may stay open before it is renewed from the last
/// resourceVersion seen (the API server caps it too).
const WATCH_TIMEOUT_SECONDS: u32 = 290;

/// How a fleet's nodes get their pods from the API server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WatchScope {
    /// One watch of every pod of the cluster, each handed to its node's pod manager (a
    /// shared informer): one connection, but every pod of the cluster crosses it,
    /// other processes' nodes' pods too.
    #[default]
    Shared,
    /// A watch of each node's own pods (`spec.nodeName`), as every kubelet watches: a
    /// connection per node, and only this process's nodes' pods cross them (a shard of
    /// a fleet receives its share's pods alone).
    PerNode,
}

/// Which pod manager a watched pod goes to: its node's, by `spec.nodeName`. Pods of
/// nodes it does not name are not the watch's to hand over. Add every node before the
/// watch starts: a node added later gets its pods from their next change on.
#[derive(Debug, Default)]
pub struct PodRoutes {
    nodes: RwLock<HashMap<String, Arc<PodManager>>>,
}

impl PodRoutes {
    /// Routes with no node yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The pods bound to `node` go to `pod_manager`.
    pub fn add(&self, node: &str, pod_manager: Arc<PodManager>) {
        self.nodes.write().unwrap_or_else(PoisonError::into_inner).insert(node.to_owned(), pod_manager);
    }

    /// The pod manager of `node`, if it is routed.
    fn get(&self, node: &str) -> Option<Arc<PodManager>> {
        self.nodes.read().unwrap_or_else(PoisonError::into_inner).get(node).cloned()
    }

    /// The only node routed, if there is exactly one (its watch can ask the API server
    /// for that node's pods alone).
    fn only(&self) -> Option<String> {
        let nodes = self.nodes.read().unwrap_or_else(PoisonError::into_inner);
        (nodes.len() == 1).then(|| nodes.keys().next().cloned()).flatten()
    }
}

/// A running watch of the node's pods. Stops when [`PodWatch::stop`] is called or it is
/// dropped; the pods it added stay in the pod manager.
#[derive(Debug)]
pub struct PodWatch {
    task: tokio::task::JoinHandle<()>,
    synced: Arc<Synced>,
}

/// Set once the first list is in the pod manager; waited on by [`PodWatch::wait_synced`].
#[derive(Debug, Default)]
struct Synced {
    done: Mutex<bool>,
    changed: Condvar,
    /// Complete lists so far: the first, then one per relist after a 410.
    lists: AtomicU64,
    /// The last failure of the watch, as one line (cleared by the next event).
    last_error: Mutex<Option<String>>,
    /// The API server's final refusal of the first list, as one line: set once, and the
    /// watch stops (what the credentials may not list, they will not list on a retry).
    refusal: Mutex<Option<String>>,
}

impl PodWatch {
    /// Starts listing and watching the pods with `spec.nodeName` = `node_name` on
    /// `runtime`, adding, replacing (by UID) and removing them in `pod_manager`;
    /// `server` (the API server's URL) names it in its warnings.
    pub fn start(
        client: kube::Client,
        server: &str,
        node_name: &str,
        pod_manager: Arc<PodManager>,
        runtime: &tokio::runtime::Handle,
    ) -> PodWatch {
        let routes = PodRoutes::new();
        routes.add(node_name, pod_manager);
        Self::start_routed(client, server, Arc::new(routes), runtime)
    }

    /// The watch's last failure, as one line with its causes, while it has not
    /// recovered (what an agent waiting for its first list says it waits on).
    pub fn last_error(&self) -> Option<String> {
        self.synced.last_error.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The API server's final refusal of the first list (a 4xx other than a conflict,
    /// an expired version or too many requests: [`refuses_for_good`]), as one line: an
    /// agent waiting for the list stops on it rather than retrying forever.
    pub fn refusal(&self) -> Option<String> {
        self.synced.refusal.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Starts one watch for every node `routes` names, on `runtime`: of that node's pods
    /// alone (a field selector) when it names one, else of every pod, each handed to its
    /// node's pod manager; `server` (the API server's URL) names it in its warnings.
    pub fn start_routed(
        client: kube::Client,
        server: &str,
        routes: Arc<PodRoutes>,
        runtime: &tokio::runtime::Handle,
    ) -> PodWatch {
        let synced = Arc::new(Synced::default());
        let follower = Follower {
            server: server.to_owned(),
            api: Api::all(client),
            selector: routes.only().map(|node| format!("spec.nodeName={node}")),
            routes,
            ours: HashMap::new(),
            synced: Arc::clone(&synced),
        };
        PodWatch { task: runtime.spawn(follower.run()), synced }
    }

    /// Blocks the calling thread (not a runtime worker) until the first list is in the
    /// pod manager, or `timeout` passes: true when it is in.
    pub fn wait_synced(&self, timeout: Duration) -> bool {
        let done = self.synced.done.lock().unwrap_or_else(PoisonError::into_inner);
        let (done, _) = self
            .synced
            .changed
            .wait_timeout_while(done, timeout, |done| !*done)
            .unwrap_or_else(PoisonError::into_inner);
        *done
    }

    /// Whether the first list is in, without waiting.
    pub fn is_synced(&self) -> bool {
        *self.synced.done.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many times the node's pods were listed: 1 for the first list, plus one per
    /// relist after an expired watch (410); a broken watch is resumed, not relisted
    /// (for logs and tests).
    pub fn lists(&self) -> u64 {
        self.synced.lists.load(Ordering::Relaxed)
    }

    /// Stops watching. The pod manager keeps the pods as they were last seen.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether the watcher's `error` is the API server's final answer to the first list: a
/// refusal [`is_permanent`](crate::node::is_permanent) (403 for credentials that may not
/// list these pods, 404, 400) but for 410 Gone, which only asks for a fresh list.
fn refuses_for_good(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(error) => {
            crate::node::is_permanent(error) && !matches!(error, kube::Error::Api(status) if status.code == 410)
        }
        _ => false,
    }
}

/// The task's state.
struct Follower {
    /// The API server's URL, for the warnings.
    server: String,
    api: Api<Pod>,
    /// The field selector of the watch, if it asks for one node's pods.
    selector: Option<String>,
    routes: Arc<PodRoutes>,
    /// UIDs this watch put in a pod manager, with their node: the only ones a relist
    /// may remove.
    ours: HashMap<String, String>,
    synced: Arc<Synced>,
}

impl Follower {
    async fn run(mut self) {
        let mut config = watcher::Config::default().timeout(WATCH_TIMEOUT_SECONDS);
        if let Some(selector) = &self.selector {
            config = config.fields(selector);
        }
        let mut events = pin!(watcher(self.api.clone(), config).default_backoff());
        // UIDs listed since the (re)list began.
        let mut listed = HashSet::new();
        while let Some(event) = events.next().await {
            if event.is_ok() {
                self.set_last_error(None);
            }
            match event {
                Ok(Event::Init) => listed.clear(),
                Ok(Event::InitApply(pod)) => {
                    if let Some(pod_manager) = self.route(&pod) {
                        listed.insert(uid_of(&pod).to_owned());
                        self.add(&pod_manager, pod);
                    }
                }
                Ok(Event::InitDone) => self.listed(std::mem::take(&mut listed)),
                Ok(Event::Apply(pod)) => match self.route(&pod) {
                    Some(pod_manager) => self.add(&pod_manager, pod),
                    None => self.remove(&pod),
                },
                Ok(Event::Delete(pod)) => self.remove(&pod),
                // The watcher retries by itself (resume, or relist after a 410) once its
                // backoff has passed (0.8 s, doubling to 30 s).
                Err(error) => {
                    if !self.is_synced() && refuses_for_good(&error) {
                        let error = crate::client::error_line(&error);
                        tracing::error!(selector = ?self.selector, "the API server at {} refused the pod watch: {error}", self.server);
                        *self.synced.refusal.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
                        return;
                    }
                    let error = crate::client::error_line(&error);
                    tracing::warn!(
                        selector = ?self.selector,
                        "the pod watch of {} failed; retrying with backoff: {error}",
                        self.server
                    );
                    self.set_last_error(Some(error));
                }
            }
        }
    }

    fn is_synced(&self) -> bool {
        *self.synced.done.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_last_error(&self, error: Option<String>) {
        *self.synced.last_error.lock().unwrap_or_else(PoisonError::into_inner) = error;
    }

    /// A (re)list is complete: pods of ours it lacks are gone.
    fn listed(&mut self, listed: HashSet<String>) {
        self.ours.retain(|uid, node| {
            let kept = listed.contains(uid);
            if let (false, Some(pod_manager)) = (kept, self.routes.get(node)) {
                pod_manager.remove_pod(uid);
            }
            kept
        });
        self.synced.lists.fetch_add(1, Ordering::Relaxed);
        let mut done = self.synced.done.lock().unwrap_or_else(PoisonError::into_inner);
        if !*done {
            *done = true;
            self.synced.changed.notify_all();
        }
    }

    /// The pod manager of the node `pod` is bound to, if the watch serves that node (a
    /// field selector should ensure it; a server that ignores it must not fill a pod
    /// manager with other nodes' pods).
    fn route(&self, pod: &Pod) -> Option<Arc<PodManager>> {
        self.routes.get(pod.spec.as_ref()?.node_name.as_deref()?)
    }

    fn add(&mut self, pod_manager: &PodManager, pod: Pod) {
        let uid = uid_of(&pod);
        let node = pod.spec.as_ref().and_then(|spec| spec.node_name.clone()).unwrap_or_default();
        if uid.is_empty() {
            tracing::warn!(%node, name = ?pod.metadata.name, "ignoring a pod without UID from the API server");
            return;
        }
        self.ours.insert(uid.to_owned(), node);
        pod_manager.add_pod(pod);
    }

    fn remove(&mut self, pod: &Pod) {
        let uid = uid_of(pod);
        if let Some(pod_manager) = self.ours.remove(uid).and_then(|node| self.routes.get(&node)) {
            pod_manager.remove_pod(uid);
        }
    }
}
