//! The node's view of its pods (the kubelet's pod manager), static and mirror pods
//! included. Pairing follows `shared/reference/helpers.md`: only static pods pair with
//! mirror pods of the same full name, and the pairing is worked out from the pods held
//! now, so removing a static pod leaves no stale pairing behind.
//!
//! Pods are held as their compact JSON ([`CompactPod`]), shared as `Arc`s with the API
//! server's events when it is in the process, and handed to readers without copying; a
//! held pod is only ever replaced, never changed. The plugin is handed that JSON as it
//! is; a reader that needs a k8s-openapi `Pod` parses it. (Held as `Pod` trees, a
//! fleet's 100,000 pods took 7 KB each here.)

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::core::v1::Pod;

use super::pod_identity::{compact_identity, identity, is_mirror_pod, is_static_pod};
use crate::api_server::memory::{MemoryApiServer, PodEvent};
use crate::compact_pod::CompactPod;

/// Pods keyed by UID. Thread-safe; every method takes `&self`.
///
/// When several pods of one kind share a full name, the one with the smallest UID is the
/// one paired (the map is ordered by UID, so the first found is it).
#[derive(Debug, Default)]
pub struct PodManager {
    pods: RwLock<Held>,
}

/// The pods, and which of them bear each full name: the reach guard asks by name on
/// every API call, and pairing static and mirror pods is by name, so neither scans
/// every pod.
#[derive(Debug, Default)]
struct Held {
    /// UID -> pod. A pod without a UID is held under the empty UID.
    by_uid: BTreeMap<String, Arc<CompactPod>>,
    /// (namespace, name) -> the UIDs of the held pods of that full name.
    by_name: BTreeMap<(String, String), BTreeSet<String>>,
    /// The UIDs of the static and mirror pods: the only ones UID translations name
    /// (asked for by every batch slice).
    paired: BTreeSet<String>,
    /// Bytes the pods and the indexes hold, kept as they come and go: the memory
    /// account's counter ([`PodManager::held_bytes`]).
    bytes: usize,
}

/// What an entry of `by_uid` holds besides the pod: the entry, its key and the `Arc`.
fn uid_entry_bytes(uid: &str) -> usize {
    std::mem::size_of::<(String, Arc<CompactPod>)>() + uid.len() + crate::compact_pod::ARC_COUNTS_BYTES
}

/// What a UID in a set holds.
fn uid_bytes(uid: &str) -> usize {
    std::mem::size_of::<String>() + uid.len()
}

/// What an entry of `by_name` holds besides its UIDs.
fn name_entry_bytes(key: &(String, String)) -> usize {
    std::mem::size_of::<((String, String), BTreeSet<String>)>() + key.0.len() + key.1.len()
}

impl Held {
    /// Holds `pod` under `uid`, replacing (and returning) the pod held there.
    fn insert(&mut self, uid: String, pod: Arc<CompactPod>) -> Option<Arc<CompactPod>> {
        let (namespace, name) = compact_identity(&pod);
        self.name(namespace, name, &uid);
        let pairs = pod.is_static() || pod.is_mirror();
        if pairs && self.paired.insert(uid.clone()) {
            self.bytes += uid_bytes(&uid);
        } else if !pairs && self.paired.remove(&uid) {
            self.bytes -= uid_bytes(&uid);
        }
        self.bytes += pod.held_bytes();
        let entry = uid_entry_bytes(&uid);
        let Some(replaced) = self.by_uid.insert(uid.clone(), pod) else {
            self.bytes += entry;
            return None;
        };
        self.bytes -= replaced.held_bytes();
        if compact_identity(&replaced) != compact_identity(&self.by_uid[&uid]) {
            self.unname(&replaced, &uid);
        }
        Some(replaced)
    }

    fn remove(&mut self, uid: &str) -> Option<Arc<CompactPod>> {
        let removed = self.by_uid.remove(uid)?;
        self.bytes -= uid_entry_bytes(uid) + removed.held_bytes();
        self.unname(&removed, uid);
        if self.paired.remove(uid) {
            self.bytes -= uid_bytes(uid);
        }
        Some(removed)
    }

    /// Notes that `uid` bears the full name `namespace/name`.
    fn name(&mut self, namespace: &str, name: &str, uid: &str) {
        let key = (namespace.to_owned(), name.to_owned());
        let entry = name_entry_bytes(&key);
        let uids = self.by_name.entry(key).or_insert_with(|| {
            self.bytes += entry;
            BTreeSet::new()
        });
        if uids.insert(uid.to_owned()) {
            self.bytes += uid_bytes(uid);
        }
    }

    /// Forgets that `uid` bears `pod`'s full name.
    fn unname(&mut self, pod: &CompactPod, uid: &str) {
        let (namespace, name) = compact_identity(pod);
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(uids) = self.by_name.get_mut(&key) {
            if uids.remove(uid) {
                self.bytes -= uid_bytes(uid);
            }
            if uids.is_empty() {
                self.bytes -= name_entry_bytes(&key);
                self.by_name.remove(&key);
            }
        }
    }

    /// The held pods of the full name `namespace/name`, in UID order.
    fn named_as<'a>(&'a self, namespace: &str, name: &str) -> impl Iterator<Item = &'a Arc<CompactPod>> + 'a {
        // Borrowed-tuple lookups are not possible on a map of owned tuples; the key is
        // built once per lookup.
        let key = (namespace.to_owned(), name.to_owned());
        self.by_name.get(&key).into_iter().flatten().filter_map(|uid| self.by_uid.get(uid))
    }
}

impl PodManager {
    /// An empty pod manager.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the pod, replacing one with the same UID. A pod that does not serialise (no
    /// k8s-openapi pod fails to) is logged and not held.
    pub fn add_pod(&self, pod: Pod) {
        match CompactPod::from_pod(&pod) {
            Ok(compact) => self.add(Arc::new(compact)),
            Err(error) => tracing::warn!(uid = ?pod.metadata.uid, "a pod the pod manager cannot hold: {error}"),
        }
    }

    /// Adds the pod as it is, replacing one with the same UID.
    pub fn add(&self, pod: Arc<CompactPod>) {
        let uid = pod.uid().unwrap_or_default().to_owned();
        let replaced = self.write().insert(uid, pod);
        // Freed, if it is the last copy, after the lock is released.
        drop(replaced);
    }

    /// Removes the pod with this UID, returning it.
    pub fn remove_pod(&self, uid: &str) -> Option<Arc<CompactPod>> {
        self.write().remove(uid)
    }

    /// The pod with this UID, mirror pods included.
    pub fn get_any(&self, uid: &str) -> Option<Arc<CompactPod>> {
        self.read().by_uid.get(uid).cloned()
    }

    /// All pods, sorted by UID.
    pub fn pods(&self) -> Vec<Arc<CompactPod>> {
        self.read().by_uid.values().cloned().collect()
    }

    /// The UIDs of all pods, sorted.
    pub fn uids(&self) -> Vec<String> {
        self.read().by_uid.keys().cloned().collect()
    }

    /// How many pods are held, mirror pods included.
    pub fn len(&self) -> usize {
        self.read().by_uid.len()
    }

    /// Whether no pod is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pods of the full name `namespace/name` (several while a recreated pod's old
    /// copy is still held), sorted by UID. A pod without namespace is in `default`, so
    /// none is in the empty one.
    pub fn named(&self, namespace: &str, name: &str) -> Vec<Arc<CompactPod>> {
        self.read().named_as(namespace, name).cloned().collect()
    }

    /// The pod with this UID; mirror pods are not found this way (the status manager
    /// relies on that to skip them).
    pub fn get_pod_by_uid(&self, uid: &str) -> Option<Arc<CompactPod>> {
        self.read().by_uid.get(uid).filter(|pod| !pod.is_mirror()).cloned()
    }

    /// The mirror pod of `pod`, which need not be held here: only a static pod has one.
    pub fn get_mirror_pod_by_pod(&self, pod: &Pod) -> Option<Arc<CompactPod>> {
        if !is_static_pod(pod) || is_mirror_pod(pod) {
            return None;
        }
        let (namespace, name) = identity(pod);
        mirror_named(&self.read(), namespace, name).cloned()
    }

    /// [`PodManager::get_mirror_pod_by_pod`] of a pod held as its JSON.
    pub fn get_mirror_of(&self, pod: &CompactPod) -> Option<Arc<CompactPod>> {
        if !is_pairable_static(pod) {
            return None;
        }
        mirror_of(&self.read(), pod).cloned()
    }

    /// A mirror pod's UID becomes its static pod's UID; any other UID, unknown ones
    /// included, is returned unchanged.
    pub fn translate_pod_uid(&self, uid: &str) -> String {
        let pods = self.read();
        pods.by_uid
            .get(uid)
            .filter(|held| held.is_mirror())
            .and_then(|mirror| static_of(&pods, mirror))
            .map_or_else(|| uid.to_owned(), |held| held.uid().unwrap_or_default().to_owned())
    }

    /// (static UID -> mirror UID, `""` when it has no mirror pod yet, for every static
    /// pod; mirror UID -> static UID for every mirror pod that has a static pod).
    pub fn get_uid_translations(&self) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        let pods = self.read();
        let mut static_to_mirror = BTreeMap::new();
        let mut mirror_to_static = BTreeMap::new();
        for (uid, pod) in pods.paired.iter().filter_map(|uid| Some((uid, pods.by_uid.get(uid)?))) {
            if pod.is_mirror() {
                if let Some(static_pod) = static_of(&pods, pod) {
                    mirror_to_static.insert(uid.clone(), static_pod.uid().unwrap_or_default().to_owned());
                }
            } else if pod.is_static() {
                let mirror_uid = mirror_of(&pods, pod).map_or("", |mirror| mirror.uid().unwrap_or_default());
                static_to_mirror.insert(uid.clone(), mirror_uid.to_owned());
            }
        }
        (static_to_mirror, mirror_to_static)
    }

    /// Follows the API server's copy of a pod: if a pod with its UID is held, it is
    /// replaced by this copy; otherwise nothing happens (the API server does not add
    /// pods to the node, and a deletion there does not remove one: only the kubelet
    /// removes pods). The copy is shared, not duplicated.
    pub fn follow(&self, pod: &Arc<CompactPod>) {
        let uid = pod.uid().unwrap_or_default();
        let mut held = self.write();
        let replaced = if held.by_uid.contains_key(uid) { held.insert(uid.to_owned(), Arc::clone(pod)) } else { None };
        drop(held);
        // Freed, if it is the last copy, after the lock is released.
        drop(replaced);
    }

    /// Makes this pod manager follow `api` like a watch with no delay: every pod the API
    /// server adds or changes is passed to [`PodManager::follow`]; deletions are ignored.
    /// The subscription holds only a weak reference, so it does not keep the pod manager
    /// alive.
    pub fn follow_api_server(self: &Arc<Self>, api: &MemoryApiServer) {
        let manager = Arc::downgrade(self);
        api.subscribe(Box::new(move |event| match event {
            PodEvent::Added(pod) | PodEvent::Modified(pod) => {
                if let Some(manager) = manager.upgrade() {
                    manager.follow(pod);
                }
            }
            PodEvent::Deleted(_) => {}
        }));
    }

    /// Bytes the pod manager holds, for the memory account: each pod's JSON
    /// ([`CompactPod::held_bytes`]; a pod shared with an in-process API server counts in
    /// both) and the entries of its indexes with their keys' text, counted as they come
    /// and go.
    pub fn held_bytes(&self) -> usize {
        self.read().bytes
    }

    fn read(&self) -> RwLockReadGuard<'_, Held> {
        // Writers replace whole entries, so a panic elsewhere leaves the map consistent.
        self.pods.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Held> {
        self.pods.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A pod with both annotations is the API server's copy, so it counts as a mirror pod
/// only (a mirror pod may carry its static pod's config source).
fn is_pairable_static(pod: &CompactPod) -> bool {
    pod.is_static() && !pod.is_mirror()
}

/// The mirror pod with the smallest UID of the full name `namespace/name`.
fn mirror_named<'a>(pods: &'a Held, namespace: &str, name: &str) -> Option<&'a Arc<CompactPod>> {
    pods.named_as(namespace, name).find(|other| other.is_mirror())
}

/// The mirror pod with the smallest UID sharing `pod`'s full name.
fn mirror_of<'a>(pods: &'a Held, pod: &CompactPod) -> Option<&'a Arc<CompactPod>> {
    let (namespace, name) = compact_identity(pod);
    mirror_named(pods, namespace, name)
}

/// The static pod with the smallest UID sharing `mirror`'s full name.
fn static_of<'a>(pods: &'a Held, mirror: &CompactPod) -> Option<&'a Arc<CompactPod>> {
    let (namespace, name) = compact_identity(mirror);
    pods.named_as(namespace, name).find(|other| is_pairable_static(other))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api_server::interface::ApiServer;
    use crate::pod_identity::{CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION};
    use crate::testing::{pod, running_update};

    fn static_pod(name: &str, uid: &str) -> Pod {
        pod(name, uid).annotations(&[(CONFIG_SOURCE_ANNOTATION, "file")]).build()
    }

    fn mirror_pod(name: &str, uid: &str) -> Pod {
        pod(name, uid).annotations(&[(CONFIG_SOURCE_ANNOTATION, "api"), (CONFIG_MIRROR_ANNOTATION, "hash")]).build()
    }

    fn api_pod(name: &str, uid: &str) -> Pod {
        pod(name, uid).annotations(&[(CONFIG_SOURCE_ANNOTATION, "api")]).build()
    }

    /// A pod manager holding static pods, then mirror pods, then API pods, each given
    /// as (name, UID) and added in this order.
    fn manager_with(statics: &[(&str, &str)], mirrors: &[(&str, &str)], api: &[(&str, &str)]) -> PodManager {
        let manager = PodManager::new();
        let pods = statics
            .iter()
            .map(|(name, uid)| static_pod(name, uid))
            .chain(mirrors.iter().map(|(name, uid)| mirror_pod(name, uid)))
            .chain(api.iter().map(|(name, uid)| api_pod(name, uid)));
        for pod in pods {
            manager.add_pod(pod);
        }
        manager
    }

    fn uid(pod: Option<Arc<CompactPod>>) -> Option<String> {
        pod.and_then(|pod| pod.uid().map(str::to_owned))
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// The held pods, made of JSON.
    fn compact(pod: Pod) -> Arc<CompactPod> {
        Arc::new(CompactPod::from_pod(&pod).expect("compact"))
    }

    /// What the pods and indexes hold, summed afresh: what the counter must say.
    fn counted_afresh(manager: &PodManager) -> usize {
        let held = manager.read();
        let pods: usize = held.by_uid.iter().map(|(uid, pod)| uid_entry_bytes(uid) + pod.held_bytes()).sum();
        let names: usize = held
            .by_name
            .iter()
            .map(|(key, uids)| name_entry_bytes(key) + uids.iter().map(|uid| uid_bytes(uid)).sum::<usize>())
            .sum();
        pods + names + held.paired.iter().map(|uid| uid_bytes(uid)).sum::<usize>()
    }

    /// The account's counter is what the pods and indexes hold, through adds,
    /// replacements (under another name too), follows and removals; nothing at the end.
    #[test]
    fn held_bytes_follow_the_pods_held() {
        let manager = PodManager::new();
        assert_eq!(manager.held_bytes(), 0);
        manager.add_pod(api_pod("a", "ua"));
        let one = manager.held_bytes();
        let json = manager.get_pod_by_uid("ua").expect("held").json().len();
        assert!(one > json && one < json + 600, "the JSON and little else: {one} for {json}");
        let steps: [&dyn Fn(&PodManager); 5] = [
            &|m| m.add_pod(static_pod("web", "s1")),
            &|m| m.add_pod(mirror_pod("web", "m1")),
            &|m| m.add_pod(api_pod("renamed", "ua")),
            &|m| m.follow(&compact(api_pod("renamed-again", "ua"))),
            &|m| drop(m.remove_pod("m1")),
        ];
        for step in steps {
            step(&manager);
            assert_eq!(manager.held_bytes(), counted_afresh(&manager));
        }
        for uid in ["ua", "s1"] {
            manager.remove_pod(uid);
        }
        assert_eq!(manager.held_bytes(), 0);
    }

    /// The plugin is handed the JSON k8s-openapi writes for the pod, byte for byte.
    #[test]
    fn the_json_handed_over_is_what_k8s_openapi_writes() {
        let manager = PodManager::new();
        let pod = api_pod("a", "ua");
        manager.add_pod(pod.clone());
        let held = manager.get_pod_by_uid("ua").expect("held");
        assert_eq!(held.json(), serde_json::to_string(&pod).expect("JSON"));
        assert_eq!(held.pod().expect("parses"), pod);
    }

    #[test]
    fn mirror_lookup_needs_a_static_pod_not_held_here() {
        let manager = PodManager::new();
        manager.add_pod(mirror_pod("web", "m1"));
        assert_eq!(uid(manager.get_mirror_pod_by_pod(&static_pod("web", "s1"))), Some("m1".into()));
        assert_eq!(manager.get_mirror_pod_by_pod(&api_pod("web", "a1")), None);
        assert_eq!(manager.get_mirror_pod_by_pod(&static_pod("other", "s2")), None);
    }

    #[test]
    fn pods_are_found_by_full_name_through_replacements_and_removals() {
        let manager = manager_with(&[], &[], &[("web", "u2"), ("web", "u1"), ("db", "u3")]);
        let uids = |pods: Vec<Arc<CompactPod>>| {
            pods.into_iter().filter_map(|p| p.uid().map(str::to_owned)).collect::<Vec<_>>()
        };
        assert_eq!(uids(manager.named("ns", "web")), ["u1", "u2"], "in UID order");
        // A replacement under the same UID with another name moves it.
        manager.add_pod(api_pod("db", "u2"));
        assert_eq!(uids(manager.named("ns", "web")), ["u1"]);
        assert_eq!(uids(manager.named("ns", "db")), ["u2", "u3"]);
        manager.remove_pod("u1");
        assert!(manager.named("ns", "web").is_empty());
        assert!(manager.named("", "db").is_empty(), "no pod is in the empty namespace");
        // Following the API server keeps the index too.
        manager.follow(&compact(api_pod("cache", "u3")));
        assert_eq!(uids(manager.named("ns", "cache")), ["u3"]);
        assert_eq!(uids(manager.named("ns", "db")), ["u2"]);
    }

    #[test]
    fn get_pod_by_uid_hides_mirror_pods() {
        let manager = manager_with(&[("web", "s1")], &[("web", "m1")], &[]);
        assert_eq!(uid(manager.get_pod_by_uid("s1")), Some("s1".into()));
        assert_eq!(manager.get_pod_by_uid("m1"), None);
        assert_eq!(uid(manager.get_any("m1")), Some("m1".into()));
        let uids: Vec<_> = manager.pods().into_iter().filter_map(|p| p.uid().map(str::to_owned)).collect();
        assert_eq!(uids, ["m1", "s1"]);
    }

    #[test]
    fn translate_pod_uid() {
        let manager = manager_with(&[("web", "s1")], &[("web", "m1"), ("lonely", "m2")], &[("api", "a1")]);
        assert_eq!(manager.translate_pod_uid("m1"), "s1");
        assert_eq!(manager.translate_pod_uid("m2"), "m2");
        assert_eq!(manager.translate_pod_uid("s1"), "s1");
        assert_eq!(manager.translate_pod_uid("a1"), "a1");
        assert_eq!(manager.translate_pod_uid("unknown"), "unknown");
    }

    #[test]
    fn translations_with_and_without_mirror() {
        let manager = manager_with(&[("web", "s1"), ("db", "s2")], &[("web", "m1")], &[("web", "a1")]);
        assert_eq!(manager.get_uid_translations(), (map(&[("s1", "m1"), ("s2", "")]), map(&[("m1", "s1")])));
    }

    #[test]
    fn smallest_uid_wins_among_namesakes() {
        let manager = manager_with(&[("web", "s2"), ("web", "s1")], &[("web", "m2"), ("web", "m1")], &[]);
        assert_eq!(manager.translate_pod_uid("m2"), "s1");
        assert_eq!(
            manager.get_uid_translations(),
            (map(&[("s1", "m1"), ("s2", "m1")]), map(&[("m1", "s1"), ("m2", "s1")]))
        );
    }

    #[test]
    fn pairing_is_recomputed_after_the_static_pod_leaves() {
        let manager = manager_with(&[("web", "s1")], &[("web", "m1")], &[]);
        assert_eq!(uid(manager.remove_pod("s1")), Some("s1".into()));
        assert_eq!(manager.translate_pod_uid("m1"), "m1");
        assert_eq!(manager.get_uid_translations(), (map(&[]), map(&[])));
        manager.add_pod(static_pod("web", "s3"));
        assert_eq!(manager.translate_pod_uid("m1"), "s3");
    }

    #[test]
    fn follow_replaces_only_held_uids() {
        let manager = PodManager::new();
        manager.add_pod(api_pod("web", "a1"));
        let mut newer = api_pod("web", "a1");
        newer.metadata.resource_version = Some("7".into());
        let newer = compact(newer);
        manager.follow(&newer);
        manager.follow(&compact(api_pod("stranger", "x1")));
        let held = manager.pods();
        assert_eq!(held, [Arc::clone(&newer)]);
        assert!(Arc::ptr_eq(&held[0], &newer), "the followed copy is shared, not duplicated");
    }

    #[test]
    fn follows_api_server_writes_but_not_deletions() {
        let api = MemoryApiServer::new();
        let manager = Arc::new(PodManager::new());
        manager.follow_api_server(&api);
        manager.add_pod(api_pod("web", "a1"));
        api.create_pod(api_pod("web", "a1")).expect("create");
        api.create_pod(api_pod("other", "a2")).expect("create");
        let update = running_update("ns", "web");
        let written = api.update_pod_status_compact(update).expect("update");
        let held = manager.get_any("a1").expect("held");
        assert!(Arc::ptr_eq(&held, &written), "the pod manager holds the API server's object");
        assert_eq!(manager.get_any("a1"), Some(written.clone()));
        assert_eq!(manager.get_any("a2"), None);
        api.remove_pod("ns", "web").expect("remove");
        assert_eq!(manager.get_any("a1"), Some(written));
    }

    #[test]
    fn pods_without_metadata_do_not_panic() {
        let manager = PodManager::new();
        manager.add_pod(Pod::default());
        manager.follow(&compact(Pod::default()));
        assert_eq!(manager.get_mirror_pod_by_pod(&Pod::default()), None);
        assert_eq!(manager.translate_pod_uid(""), "");
        assert_eq!(manager.pods().len(), 1);
    }
}
