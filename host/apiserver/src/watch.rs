//! Watches: a hub that hears every write of the store (in write order), keeps a bounded
//! history of them for resumes, and fans them out to the open watch streams.
//!
//! A watch of one node's pods (`spec.nodeName=NODE`, as every kubelet's) hears only the
//! changes of pods on that node, before or after the write, as kube-apiserver's watch
//! cache triggers watches by its `spec.nodeName` index: a thousand nodes' watches cost
//! a write one hand-over, not a thousand.
//!
//! Writers never wait for a watcher: each watcher has a bounded buffer, and one that
//! falls behind is cut off with a 410 `Expired` error event, after which the client
//! lists again (kube-rs' watcher and kubectl both do).
//!
//! What one watch costs is bounded whatever its client does: events are encoded one
//! at a time as the client takes them (a watch from "now" holds the list as shared
//! `Arc`s, never encoded whole), at most `watcher_buffer_bytes` of encoded events wait
//! for the client, and a client that takes nothing for `slow_watcher_timeout` has its
//! stream closed, as kube-apiserver closes an unresponsive watcher.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::response::{SendFailed, StreamSender};
use crate::selectors::{Selector, selectable_part};
use crate::status_body::Failure;
use crate::stopping::stopped;
use crate::table::{self, IncludeObject};
use podstatus_backends::{CompactPod, MemoryApiServer, PodEvent, PodField};

/// One write, as the hub records it.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    /// The resourceVersion the write gave.
    resource_version: u64,
    /// What happened.
    kind: ChangeKind,
    /// The pod after the write (for a deletion, its last state).
    pod: Arc<CompactPod>,
    /// What a selector sees of the pod before the write, if it existed
    /// ([`selectable_part`]): a selector watch needs it to tell a pod that stopped
    /// matching (DELETED for that watch) from one that never did.
    previous: Option<Arc<CompactPod>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// The hub: shared by the server's request handlers, fed by a store listener.
pub(crate) struct WatchHub {
    state: Mutex<HubState>,
    /// The resourceVersion of the last write handed to the watchers (set under the
    /// lock, after the hand-over): what a watch that heard nothing since is up to.
    heard: Arc<AtomicU64>,
    /// Each watcher's buffer, in changes.
    watcher_buffer: usize,
}

struct HubState {
    /// The store as of `resource_version`, to start watches from (and to know each
    /// change's previous object).
    pods: BTreeMap<(String, String), Arc<CompactPod>>,
    resource_version: u64,
    /// The latest changes, oldest first; every change after `history_start` is here.
    history: VecDeque<Change>,
    history_start: u64,
    history_capacity: usize,
    /// Watchers that may select a pod on any node.
    watchers: Vec<WatcherSlot>,
    /// Watchers of one node's pods, by the node.
    by_node: HashMap<String, Vec<WatcherSlot>>,
}

struct WatcherSlot {
    sender: mpsc::Sender<Change>,
    /// Set when the watcher's buffer overflowed and it was cut off.
    lagged: Arc<AtomicBool>,
}

/// Where a new watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// ADDED for every current pod, then live (resourceVersion unset or "0").
    Now,
    /// The changes after this resourceVersion, then live.
    After(u64),
}

/// A registered watch: what to send first, then the live changes.
pub(crate) struct Subscription {
    /// Pods to announce as ADDED first (for [`Start::Now`]).
    initial: Vec<Arc<CompactPod>>,
    /// Changes to replay first (for [`Start::After`]).
    replay: Vec<Change>,
    /// Changes with a resourceVersion at or below this were covered by the above.
    covered: u64,
    receiver: mpsc::Receiver<Change>,
    lagged: Arc<AtomicBool>,
    /// The hub's [`WatchHub::heard`]: a bookmark's resourceVersion.
    heard: Arc<AtomicU64>,
}

impl WatchHub {
    /// Attaches a hub to `store`: from now on it hears every write. The listener holds
    /// the hub weakly, so a stopped server leaves only an idle closure behind.
    pub fn attach(store: &MemoryApiServer, history_capacity: usize, watcher_buffer: usize) -> Arc<Self> {
        let hub = Arc::new(Self {
            state: Mutex::new(HubState {
                pods: BTreeMap::new(),
                resource_version: 0,
                history: VecDeque::new(),
                history_start: 0,
                history_capacity: history_capacity.max(1),
                watchers: Vec::new(),
                by_node: HashMap::new(),
            }),
            heard: Arc::new(AtomicU64::new(0)),
            watcher_buffer: watcher_buffer.max(1),
        });
        let weak: Weak<Self> = Arc::downgrade(&hub);
        // The hub is locked across the registration, so the listener's first call waits
        // until the hub holds the snapshot; the snapshot is taken atomically with the
        // registration, so the hub starts exact. (Lock order: hub, then the store's
        // listeners; a writer holds the listeners and then takes the hub only once this
        // registration is done, so they cannot wait on each other.)
        {
            let mut state = hub.lock();
            let (resource_version, pods) = store.subscribe_with_snapshot(Box::new(move |event| {
                if let Some(hub) = weak.upgrade() {
                    hub.record(event);
                }
            }));
            state.pods = pods.into_iter().map(|pod| (key(&pod), pod)).collect();
            state.resource_version = resource_version;
            state.history_start = resource_version;
            hub.heard.store(resource_version, Ordering::SeqCst);
        }
        hub
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records one write and hands it to every watcher that has room; a watcher without
    /// room is cut off (it will report 410 and end).
    fn record(&self, event: &PodEvent) {
        let pod = Arc::clone(event.pod());
        let resource_version = pod.resource_version().and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut state = self.lock();
        let previous = match event {
            PodEvent::Added(_) | PodEvent::Modified(_) => state.pods.insert(key(&pod), Arc::clone(&pod)),
            PodEvent::Deleted(_) => state.pods.remove(&key(&pod)),
        };
        let kind = match event {
            PodEvent::Added(_) => ChangeKind::Added,
            PodEvent::Modified(_) => ChangeKind::Modified,
            PodEvent::Deleted(_) => ChangeKind::Deleted,
        };
        // A part that cannot be written (no pod fails to) is the whole previous pod.
        let previous =
            previous.map(|previous| selectable_part(&previous).map(Arc::new).unwrap_or_else(|_| Arc::clone(&previous)));
        let change = Change { resource_version, kind, pod, previous };
        state.resource_version = state.resource_version.max(resource_version);
        state.history.push_back(change.clone());
        while state.history.len() > state.history_capacity {
            if let Some(dropped) = state.history.pop_front() {
                state.history_start = dropped.resource_version;
            }
        }
        let nodes =
            [change.pod.field(PodField::NodeName), change.previous.as_ref().and_then(|p| p.field(PodField::NodeName))];
        let state = &mut *state;
        offer(&mut state.watchers, &change);
        for (i, node) in nodes.iter().enumerate() {
            let Some(node) = node.filter(|node| !nodes[..i].contains(&Some(node))) else { continue };
            if let Some(watchers) = state.by_node.get_mut(node) {
                offer(watchers, &change);
                if watchers.is_empty() {
                    state.by_node.remove(node);
                }
            }
        }
        self.heard.store(state.resource_version, Ordering::SeqCst);
    }

    /// Bytes the hub holds beside the store, for the memory account: its own map of
    /// the pods (entries and keys; the objects are the store's), and its history: each
    /// change's entry, the object it carries when that is no longer the current one
    /// (else the store's), and what a selector sees of the previous pod.
    pub fn held_bytes(&self) -> usize {
        use std::mem::size_of;
        let state = self.lock();
        let map: usize = state
            .pods
            .keys()
            .map(|(namespace, name)| size_of::<((String, String), Arc<CompactPod>)>() + namespace.len() + name.len())
            .sum();
        let history: usize = state
            .history
            .iter()
            .map(|change| {
                let current = state.pods.get(&key(&change.pod)).is_some_and(|pod| Arc::ptr_eq(pod, &change.pod));
                let superseded = if current { 0 } else { change.pod.held_bytes() };
                size_of::<Change>() + superseded + change.previous.as_ref().map_or(0, |part| part.held_bytes())
            })
            .sum();
        map + history
    }

    /// Registers a watch starting at `start`, atomically with respect to writes, of the
    /// pods of `node` alone when it names one (it then hears only changes of pods on
    /// that node, before or after); a resume from before the kept history is refused
    /// with 410.
    pub fn subscribe(&self, start: Start, node: Option<&str>) -> Result<Subscription, Failure> {
        let mut state = self.lock();
        let (initial, replay, covered) = match start {
            Start::Now => (state.pods.values().cloned().collect(), Vec::new(), state.resource_version),
            Start::After(from) if from < state.history_start => {
                return Err(Failure::expired(from, state.history_start + 1));
            }
            Start::After(from) => {
                let replay: Vec<_> = state.history.iter().filter(|c| c.resource_version > from).cloned().collect();
                // A resume from the future waits for that version, like Kubernetes.
                (Vec::new(), replay, state.resource_version.max(from))
            }
        };
        let (sender, receiver) = mpsc::channel(self.watcher_buffer);
        let lagged = Arc::new(AtomicBool::new(false));
        let slot = WatcherSlot { sender, lagged: Arc::clone(&lagged) };
        // Watches that ended are dropped here too: a node whose pods do not change
        // would otherwise keep one slot per renewal of its watch.
        let watchers = match node {
            Some(node) => state.by_node.entry(node.to_owned()).or_default(),
            None => &mut state.watchers,
        };
        watchers.retain(|watcher| !watcher.sender.is_closed());
        watchers.push(slot);
        Ok(Subscription { initial, replay, covered, receiver, lagged, heard: Arc::clone(&self.heard) })
    }

    /// Open watch slots: of any node's pods, and of one node's (for tests).
    #[cfg(test)]
    fn slots(&self) -> (usize, usize) {
        let state = self.lock();
        (state.watchers.len(), state.by_node.values().map(Vec::len).sum())
    }
}

/// Hands `change` to every watcher of `watchers` that has room; a watcher without room
/// is cut off (it will report 410 and end), a closed one dropped.
fn offer(watchers: &mut Vec<WatcherSlot>, change: &Change) {
    watchers.retain(|watcher| match watcher.sender.try_send(change.clone()) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            watcher.lagged.store(true, Ordering::SeqCst);
            false
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    });
}

fn key(pod: &CompactPod) -> (String, String) {
    (pod.namespace().unwrap_or_default().to_owned(), pod.name().unwrap_or_default().to_owned())
}

/// How events are written for one watch request.
#[derive(Clone, Debug)]
pub(crate) struct WatchFormat {
    /// Only these pods (and DELETED when a pod stops matching).
    pub selector: Selector,
    /// Only this namespace, when the path names one.
    pub namespace: Option<String>,
    /// Event objects as one-row `Table`s (kubectl `get -w`), else pods.
    pub table: Option<IncludeObject>,
    /// End the stream after this long (`timeoutSeconds`).
    pub timeout: Option<Duration>,
    /// Send a BOOKMARK marking the end of the initial events (`sendInitialEvents=true`).
    pub initial_events_bookmark: bool,
    /// Send BOOKMARKs (`allowWatchBookmarks=true`) as kube-apiserver's watch cache
    /// does: only to a watch with a timeout, every [`BOOKMARK_EVERY`] and once
    /// [`BOOKMARK_BEFORE_TIMEOUT`] before it ends, so that the client resumes from there
    /// instead of from its last event.
    pub bookmarks: bool,
}

/// How often a watch with bookmarks gets one (kube-apiserver's `bookmarkFrequency`).
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);
/// How long before its timeout a watch with bookmarks gets its last one.
const BOOKMARK_BEFORE_TIMEOUT: Duration = Duration::from_secs(2);

/// When a watch ending at `deadline` gets its next bookmark after `now`, as
/// kube-apiserver's `nextBookmarkTime` says: the sooner of a period from now and a
/// little before the end, if that is not already past.
fn next_bookmark(now: tokio::time::Instant, deadline: tokio::time::Instant) -> Option<tokio::time::Instant> {
    let periodic = now.checked_add(BOOKMARK_EVERY)?;
    let before_end = deadline.checked_sub(BOOKMARK_BEFORE_TIMEOUT)?;
    let at = periodic.min(before_end);
    (at > now).then_some(at)
}

impl WatchFormat {
    fn selects(&self, pod: &CompactPod) -> bool {
        self.namespace.as_deref().is_none_or(|ns| pod.namespace() == Some(ns)) && self.selector.matches(pod)
    }

    /// The event this watch sees of `change`, if any.
    fn event_of(&self, change: &Change) -> Option<Bytes> {
        let now_matches = change.kind != ChangeKind::Deleted && self.selects(&change.pod);
        let matched = change.previous.as_deref().is_some_and(|pod| self.selects(pod));
        let kind = match (matched, now_matches) {
            (true, true) => "MODIFIED",
            (false, true) => "ADDED",
            (true, false) => "DELETED",
            (false, false) => return None,
        };
        Some(self.line(kind, &change.pod))
    }

    /// The event line of `pod`: its stored bytes as the object, or (for `kubectl get
    /// -w`) a one-row table of it parsed.
    fn line(&self, kind: &str, pod: &CompactPod) -> Bytes {
        match self.table {
            Some(include) => match pod.pod() {
                Ok(pod) => {
                    let version = crate::server_fields::version_of(&pod);
                    event_line(kind, &table::table([&pod], version, include, jiff::Timestamp::now()))
                }
                Err(error) => {
                    let failure = Failure::from(podstatus_backends::ApiError::Internal { message: error.to_string() });
                    event_line("ERROR", &failure.to_status())
                }
            },
            None => raw_event_line(kind, pod.json()),
        }
    }
}

/// One newline-delimited watch event of an object already written as JSON: the bytes
/// [`event_line`] writes for it, the object copied as it is.
fn raw_event_line(kind: &str, object: &str) -> Bytes {
    const OBJECT: &str = ",\"object\":";
    let kind = serde_json::to_string(kind).unwrap_or_default();
    let mut line = Vec::with_capacity(9 + kind.len() + OBJECT.len() + object.len() + 2);
    line.extend_from_slice(b"{\"type\":");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(OBJECT.as_bytes());
    line.extend_from_slice(object.as_bytes());
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

/// One newline-delimited watch event.
fn event_line(kind: &str, object: &impl Serialize) -> Bytes {
    #[derive(Serialize)]
    struct Event<'a, T> {
        #[serde(rename = "type")]
        kind: &'a str,
        object: &'a T,
    }
    let mut line = serde_json::to_vec(&Event { kind, object }).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// Runs one watch: writes its events to `out` (the response body) until the client
/// goes, the timeout passes, the server stops (`stopping`), the client takes nothing
/// for `patience` (the stream is closed), or the watcher falls behind the writes
/// (then a 410 ERROR event ends it). Counts the pod events it sent in `sent`.
pub(crate) async fn stream(
    subscription: Subscription,
    format: WatchFormat,
    out: StreamSender,
    patience: Duration,
    mut stopping: tokio::sync::watch::Receiver<bool>,
    sent: &AtomicUsize,
) -> Result<(), SendFailed> {
    // A timeout past what the clock can hold (a client may ask for u64::MAX seconds) is
    // no deadline: `Instant + Duration` would panic on it.
    let deadline = format.timeout.and_then(|timeout| tokio::time::Instant::now().checked_add(timeout));
    let sleep = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    let ended = tokio::select! {
        ended = events(subscription, &format, &out, patience, deadline.filter(|_| format.bookmarks), sent) => ended,
        () = sleep => Ok(()),
        () = stopped(&mut stopping) => Ok(()),
        () = out.closed() => Ok(()),
    };
    if ended == Err(SendFailed::Stalled) {
        tracing::debug!(
            patience_ms = patience.as_millis(),
            "embedded API server: closing a watch whose client does not read"
        );
    }
    ended
}

/// The events of one watch, sent as the client takes them (pod events counted in
/// `sent`), with bookmarks before `bookmark_deadline` when there is one; returns how it
/// ended.
async fn events(
    subscription: Subscription,
    format: &WatchFormat,
    out: &StreamSender,
    patience: Duration,
    bookmark_deadline: Option<tokio::time::Instant>,
    sent: &AtomicUsize,
) -> Result<(), SendFailed> {
    let Subscription { initial, replay, covered, mut receiver, lagged, heard } = subscription;
    // One event at a time: encoded only when there is room for it.
    for pod in initial.iter().filter(|pod| format.selects(pod)) {
        out.send(format.line("ADDED", pod), patience).await?;
        sent.fetch_add(1, Ordering::Relaxed);
    }
    drop(initial);
    for change in &replay {
        if let Some(line) = format.event_of(change) {
            out.send(line, patience).await?;
            sent.fetch_add(1, Ordering::Relaxed);
        }
    }
    drop(replay);
    if format.initial_events_bookmark {
        let bookmark = Pod {
            metadata: ObjectMeta {
                resource_version: Some(covered.to_string()),
                annotations: Some([("k8s.io/initial-events-end".to_owned(), "true".to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        out.send(event_line("BOOKMARK", &bookmark), patience).await?;
    }
    // The resourceVersion this watch is up to: every change it heard of, sent or not.
    let mut latest = covered;
    let mut bookmark_at = bookmark_deadline.and_then(|deadline| next_bookmark(tokio::time::Instant::now(), deadline));
    loop {
        let bookmark_due = async {
            match bookmark_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let received = tokio::select! {
            received = receiver.recv() => received,
            () = bookmark_due => {
                // Up to every write the hub handed out so far, this watch's included: a
                // watch of a quiet node hears nothing, yet is as current as the hub.
                let hub_version = heard.load(Ordering::SeqCst);
                while let Ok(change) = receiver.try_recv() {
                    pass(&change, covered, &mut latest, format, out, patience, sent).await?;
                }
                if lagged.load(Ordering::SeqCst) {
                    // Cut off: the changes it missed end it with a 410 below, never a
                    // bookmark past them.
                    bookmark_at = None;
                    continue;
                }
                latest = latest.max(hub_version);
                let bookmark = Pod {
                    metadata: ObjectMeta { resource_version: Some(latest.to_string()), ..ObjectMeta::default() },
                    ..Pod::default()
                };
                out.send(event_line("BOOKMARK", &bookmark), patience).await?;
                let now = tokio::time::Instant::now();
                bookmark_at = bookmark_deadline.and_then(|deadline| next_bookmark(now, deadline));
                continue;
            }
        };
        let Some(change) = received else {
            if lagged.load(Ordering::SeqCst) {
                let status = Failure::fell_behind().to_status();
                out.send(event_line("ERROR", &status), patience).await?;
            }
            return Ok(());
        };
        pass(&change, covered, &mut latest, format, out, patience, sent).await?;
    }
}

/// Sends the event this watch sees of `change` (counted in `sent`), if any and if the
/// start (up to `covered`) did not already; `latest` is the resourceVersion the watch
/// is up to.
async fn pass(
    change: &Change,
    covered: u64,
    latest: &mut u64,
    format: &WatchFormat,
    out: &StreamSender,
    patience: Duration,
    sent: &AtomicUsize,
) -> Result<(), SendFailed> {
    if change.resource_version <= covered {
        return Ok(());
    }
    *latest = (*latest).max(change.resource_version);
    if let Some(line) = format.event_of(change) {
        out.send(line, patience).await?;
        sent.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// The 410 of a resume from too old a resourceVersion, as the single event of a watch
/// response (how Kubernetes reports it once the watch has started).
pub(crate) fn expired_event(failure: &Failure) -> Bytes {
    event_line("ERROR", &failure.to_status())
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_backends::testing::pod;

    #[test]
    fn history_is_bounded_and_resumes_too_old_are_refused() {
        let store = MemoryApiServer::new();
        store.create_pod(pod("a", "ua").build()).expect("create");
        let hub = WatchHub::attach(&store, 2, 16);
        assert_eq!(hub.subscribe(Start::After(0), None).err().map(|f| f.code), Some(410), "before the hub");
        for name in ["b", "c", "d"] {
            store.create_pod(pod(name, name).build()).expect("create");
        }
        // rv 2..4 happened; only 3 and 4 are kept.
        assert_eq!(hub.subscribe(Start::After(1), None).err().map(|f| f.reason), Some("Expired"));
        let resumed = hub.subscribe(Start::After(2), None).expect("kept");
        let replayed: Vec<_> = resumed.replay.iter().map(|c| c.resource_version).collect();
        assert_eq!(replayed, [3, 4]);
        let now = hub.subscribe(Start::Now, None).expect("now");
        assert_eq!((now.initial.len(), now.covered), (4, 4));
    }

    /// A watch event of a stored pod is the line serialising the pod would make, byte
    /// for byte: the object is the stored text.
    #[test]
    fn an_event_of_stored_bytes_is_the_serialised_event() {
        let typed = pod("a", "ua").build();
        let compact = CompactPod::from_pod(&typed).expect("compact");
        for kind in ["ADDED", "MODIFIED", "DELETED"] {
            assert_eq!(raw_event_line(kind, compact.json()), event_line(kind, &typed));
        }
    }

    #[test]
    fn bookmarks_come_every_minute_and_once_shortly_before_the_timeout() {
        let now = tokio::time::Instant::now();
        let after = |seconds| now + Duration::from_secs(seconds);
        assert_eq!(next_bookmark(now, after(3)), Some(after(1)), "2 s before the end");
        assert_eq!(next_bookmark(now, after(600)), Some(after(60)), "a minute first");
        assert_eq!(next_bookmark(now, after(2)), None, "too late for one");
        assert_eq!(next_bookmark(after(1), after(3)), None, "the last one was sent");
    }

    #[test]
    fn a_watcher_that_falls_behind_is_cut_off_without_blocking_writers() {
        let store = MemoryApiServer::new();
        let hub = WatchHub::attach(&store, 100, 2);
        let subscription = hub.subscribe(Start::Now, None).expect("subscribe");
        for name in ["a", "b", "c", "d"] {
            store.create_pod(pod(name, name).build()).expect("writers go on");
        }
        assert!(subscription.lagged.load(Ordering::SeqCst));
        assert!(hub.lock().watchers.is_empty());
    }

    /// The first event a watch of `subscription` written as `format` sends.
    fn first_event(
        runtime: &tokio::runtime::Runtime,
        subscription: Subscription,
        format: WatchFormat,
    ) -> serde_json::Value {
        let (out, response) = crate::response::streaming_response(1024);
        let (_stop, stopping) = tokio::sync::watch::channel(false);
        let first = runtime.block_on(async move {
            let sent = AtomicUsize::new(0);
            let watch = tokio::spawn(async move {
                stream(subscription, format, out, Duration::from_secs(5), stopping, &sent).await
            });
            let mut body = response.into_body();
            let first = http_body_util::BodyExt::frame(&mut body).await;
            watch.abort();
            first.and_then(Result::ok).and_then(|frame| frame.into_data().ok())
        });
        serde_json::from_slice(&first.expect("the watch runs and sends an event")).expect("JSON")
    }

    /// The resourceVersions a subscription's channel holds now.
    fn heard(subscription: &mut Subscription) -> Vec<u64> {
        std::iter::from_fn(|| subscription.receiver.try_recv().ok()).map(|change| change.resource_version).collect()
    }

    #[test]
    fn a_nodes_watch_hears_only_the_changes_of_its_nodes_pods() {
        let store = MemoryApiServer::new();
        let hub = WatchHub::attach(&store, 100, 16);
        let mut one = hub.subscribe(Start::Now, Some("node-1")).expect("subscribe");
        let mut two = hub.subscribe(Start::Now, Some("node-2")).expect("subscribe");
        let mut all = hub.subscribe(Start::Now, None).expect("subscribe");
        store.create_pod(pod("a", "ua").node("node-1").build()).expect("rv 1");
        store.create_pod(pod("b", "ub").node("node-2").build()).expect("rv 2");
        store.create_pod(pod("c", "uc").build()).expect("rv 3, unbound");
        podstatus_backends::ApiServer::delete_pod(&store, "ns", "a", &Default::default()).expect("rv 4");
        assert_eq!(heard(&mut one), [1, 4], "its pod's creation and deletion");
        assert_eq!(heard(&mut two), [2]);
        assert_eq!(heard(&mut all), [1, 2, 3, 4]);
        // A node's watch renewed every few minutes leaves no slot behind per renewal.
        assert_eq!(hub.slots(), (1, 2));
        drop(one);
        let _renewed = hub.subscribe(Start::After(4), Some("node-1")).expect("resume");
        assert_eq!(hub.slots(), (1, 2), "the ended watch's slot went with the new one");
    }

    #[test]
    fn a_quiet_nodes_watch_is_bookmarked_at_the_hubs_version() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let store = MemoryApiServer::new();
        let hub = WatchHub::attach(&store, 100, 16);
        let subscription = hub.subscribe(Start::Now, Some("quiet")).expect("subscribe");
        for name in ["a", "b", "c"] {
            store.create_pod(pod(name, name).node("busy").build()).expect("create");
        }
        // A 3 s watch with bookmarks gets one 2 s before its end.
        let format = WatchFormat {
            selector: Selector::parse(Some("spec.nodeName=quiet"), None).expect("parses"),
            namespace: None,
            table: None,
            timeout: Some(Duration::from_secs(3)),
            initial_events_bookmark: false,
            bookmarks: true,
        };
        let first = first_event(&runtime, subscription, format);
        assert_eq!(first["type"], "BOOKMARK", "{first}");
        assert_eq!(first.pointer("/object/metadata/resourceVersion").and_then(|v| v.as_str()), Some("3"));
    }

    #[test]
    fn a_timeout_too_large_for_the_clock_is_no_deadline_not_a_panic() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let store = MemoryApiServer::new();
        store.create_pod(pod("a", "ua").build()).expect("create");
        let hub = WatchHub::attach(&store, 16, 16);
        let subscription = hub.subscribe(Start::Now, None).expect("subscribe");
        // `?timeoutSeconds=18446744073709551615`: a request may ask for it.
        let format = WatchFormat {
            selector: Selector::default(),
            namespace: None,
            table: None,
            timeout: Some(Duration::from_secs(u64::MAX)),
            initial_events_bookmark: false,
            bookmarks: false,
        };
        let first = first_event(&runtime, subscription, format);
        assert_eq!(first["type"], "ADDED");
    }
}
