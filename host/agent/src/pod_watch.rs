//! The node's pods from the API server: a list of the pods bound to the node, then a
//! watch from the list's resourceVersion, feeding the [`PodManager`] as the kubelet's
//! API source feeds its pod manager.
//!
//! Hand-rolled list + watch on `kube::Api` rather than kube-runtime's watcher: the loop
//! is short, and kube-runtime would add build time for little else. On any watch error,
//! a `410 Gone` included, it lists again and reconciles: pods it added that the new list
//! lacks are removed. Pods it did not add (static pods from the manifest folder, which
//! the API server never has) are never touched.

use std::collections::HashSet;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};

use podstatus_backends::PodManager;

/// How long one watch request may stay open before it is renewed from the last
/// resourceVersion seen (the API server caps it too).
const WATCH_TIMEOUT_SECONDS: u32 = 290;
/// The first pause after a failed list or watch; doubled per failure up to
/// [`MAX_BACKOFF`], reset by a successful list.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between retries.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

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
    /// Successful lists so far: the first, then one per relist after a watch error.
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
    /// relist after a broken or expired watch (for logs and tests).
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

/// Why a watch session ended.
enum Ended {
    /// The request timed out or the stream closed: watch again from this version.
    Renew(String),
    /// The version is gone or the stream failed: list again.
    Relist,
}

impl Follower {
    async fn run(mut self) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let version = match self.list().await {
                Ok(version) => {
                    backoff = FIRST_BACKOFF;
                    version
                }
                Err(error) => {
                    tracing::warn!(node = %self.node, %error, "listing the node's pods failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            let mut version = version;
            while let Ended::Renew(latest) = self.watch(&version).await {
                version = latest;
            }
            // A watch that fails at once would otherwise relist in a tight loop.
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    fn selector(&self) -> String {
        format!("spec.nodeName={}", self.node)
    }

    /// Lists the node's pods into the pod manager, removing the ones of ours that are
    /// gone; returns the list's resourceVersion.
    async fn list(&mut self) -> Result<String, kube::Error> {
        let list = self.api.list(&ListParams::default().fields(&self.selector())).await?;
        let mut listed = HashSet::new();
        for pod in list.items {
            if !self.on_node(&pod) {
                continue;
            }
            listed.insert(uid_of(&pod).to_owned());
            self.add(pod);
        }
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
        Ok(list.metadata.resource_version.unwrap_or_default())
    }

    /// One watch request from `version`, applied event by event.
    async fn watch(&mut self, version: &str) -> Ended {
        let params = WatchParams::default().fields(&self.selector()).timeout(WATCH_TIMEOUT_SECONDS);
        let stream = match self.api.watch(&params, version).await {
            Ok(stream) => stream,
            Err(error) => {
                tracing::warn!(node = %self.node, %error, "watching the node's pods failed; listing again");
                return Ended::Relist;
            }
        };
        let mut stream = pin!(stream);
        let mut latest = version.to_owned();
        while let Some(event) = stream.next().await {
            match event {
                Ok(WatchEvent::Added(pod) | WatchEvent::Modified(pod)) => {
                    latest = version_of(&pod).unwrap_or(latest);
                    if self.on_node(&pod) {
                        self.add(pod);
                    } else {
                        self.remove(&pod);
                    }
                }
                Ok(WatchEvent::Deleted(pod)) => {
                    latest = version_of(&pod).unwrap_or(latest);
                    self.remove(&pod);
                }
                Ok(WatchEvent::Bookmark(bookmark)) => latest = bookmark.metadata.resource_version,
                Ok(WatchEvent::Error(status)) => {
                    // 410 Gone: the version is too old to watch from; anything else is
                    // as bad. Either way the list is the truth.
                    tracing::debug!(node = %self.node, code = status.code, message = %status.message, "watch error event; listing again");
                    return Ended::Relist;
                }
                Err(error) => {
                    tracing::warn!(node = %self.node, %error, "the pod watch broke; listing again");
                    return Ended::Relist;
                }
            }
        }
        Ended::Renew(latest)
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

fn version_of(pod: &Pod) -> Option<String> {
    pod.metadata.resource_version.clone().filter(|version| !version.is_empty())
}
