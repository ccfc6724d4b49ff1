//! The node's pods from the API server: kube-runtime's [`watcher`] of the pods bound to
//! the node (`spec.nodeName`), feeding the [`PodManager`] as the kubelet's API source
//! feeds its pod manager.
//!
//! The watcher lists once, then watches from the list's resourceVersion; a watch that
//! ends or breaks is resumed from the last resourceVersion seen, and only a `410 Gone`
//! (the version is too old) makes it list again. Errors are retried with its default
//! backoff (exponential from 0.8 s to 30 s, with jitter). After each (re)list, pods it
//! added that the list lacks are removed; pods it did not add (static pods from the
//! manifest folder, which the API server never has) are never touched.

use std::collections::HashSet;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};

use podstatus_backends::PodManager;

/// How long one watch request may stay open before it is renewed from the last
/// resourceVersion seen (the API server caps it too).
const WATCH_TIMEOUT_SECONDS: u32 = 290;

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
}

impl PodWatch {
    /// Starts listing and watching the pods with `spec.nodeName` = `node_name` on
    /// `runtime`, adding, replacing (by UID) and removing them in `pod_manager`.
    pub fn start(
        client: kube::Client,
        node_name: &str,
        pod_manager: Arc<PodManager>,
        runtime: &tokio::runtime::Handle,
    ) -> PodWatch {
        let synced = Arc::new(Synced::default());
        let follower = Follower {
            api: Api::all(client),
            node: node_name.to_owned(),
            pod_manager,
            ours: HashSet::new(),
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

/// The task's state.
struct Follower {
    api: Api<Pod>,
    node: String,
    pod_manager: Arc<PodManager>,
    /// UIDs this watch put in the pod manager: the only ones a relist may remove.
    ours: HashSet<String>,
    synced: Arc<Synced>,
}

impl Follower {
    async fn run(mut self) {
        let config =
            watcher::Config::default().fields(&format!("spec.nodeName={}", self.node)).timeout(WATCH_TIMEOUT_SECONDS);
        let mut events = pin!(watcher(self.api.clone(), config).default_backoff());
        // UIDs listed since the (re)list began.
        let mut listed = HashSet::new();
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Init) => listed.clear(),
                Ok(Event::InitApply(pod)) => {
                    if self.on_node(&pod) {
                        listed.insert(uid_of(&pod).to_owned());
                        self.add(pod);
                    }
                }
                Ok(Event::InitDone) => self.listed(std::mem::take(&mut listed)),
                Ok(Event::Apply(pod)) => {
                    if self.on_node(&pod) {
                        self.add(pod);
                    } else {
                        self.remove(&pod);
                    }
                }
                Ok(Event::Delete(pod)) => self.remove(&pod),
                // The watcher retries by itself (resume, or relist after a 410) once its
                // backoff has passed.
                Err(error) => tracing::warn!(node = %self.node, %error, "the pod watch failed; retrying"),
            }
        }
    }

    /// A (re)list is complete: pods of ours it lacks are gone.
    fn listed(&mut self, listed: HashSet<String>) {
        for vanished in self.ours.iter().filter(|uid| !listed.contains(*uid)) {
            self.pod_manager.remove_pod(vanished);
        }
        self.ours = listed;
        self.synced.lists.fetch_add(1, Ordering::Relaxed);
        let mut done = self.synced.done.lock().unwrap_or_else(PoisonError::into_inner);
        if !*done {
            *done = true;
            self.synced.changed.notify_all();
        }
    }

    /// The field selector should ensure it; a server that ignores it must not fill the
    /// pod manager with other nodes' pods.
    fn on_node(&self, pod: &Pod) -> bool {
        pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()) == Some(self.node.as_str())
    }

    fn add(&mut self, pod: Pod) {
        let uid = uid_of(&pod);
        if uid.is_empty() {
            tracing::warn!(node = %self.node, name = ?pod.metadata.name, "ignoring a pod without UID from the API server");
            return;
        }
        self.ours.insert(uid.to_owned());
        self.pod_manager.add_pod(pod);
    }

    fn remove(&mut self, pod: &Pod) {
        let uid = uid_of(pod);
        if self.ours.remove(uid) {
            self.pod_manager.remove_pod(uid);
        }
    }
}

fn uid_of(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}
