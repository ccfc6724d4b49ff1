//! The node's view of its pods (the kubelet's pod manager), static and mirror pods
//! included. Pairing follows `shared/reference/helpers.md`: only static pods pair with
//! mirror pods of the same full name, and the pairing is worked out from the pods held
//! now, so removing a static pod leaves no stale pairing behind.
//!
//! Pods are held as `Arc<Pod>`, shared with the API server's events and handed to
//! readers without copying; a held pod is only ever replaced, never changed in place.
//! The JSON of the pods read last is kept a while ([`PodManager::json_of`]): the
//! plugin's periodic batch reads a pod twice in a row (can it be deleted, has it
//! drifted), and a status report hands the pod over right after reading it. Not every
//! pod's: at 100 pods a node and a thousand nodes, a JSON per held pod was 450 MiB.

use std::collections::VecDeque;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::core::v1::Pod;

use super::pod_identity::{identity, is_mirror_pod, is_static_pod, uid_of};
use crate::api_server::memory::{MemoryApiServer, PodEvent};

/// Pods keyed by UID. Thread-safe; every method takes `&self`.
///
/// When several pods of one kind share a full name, the one with the smallest UID is the
/// one paired (the map is ordered by UID, so the first found is it).
#[derive(Debug, Default)]
pub struct PodManager {
    pods: RwLock<Held>,
    /// The JSON of the pods serialised last, newest last, at most [`RECENT_JSON`]: each
    /// with its pod (the very object: a pod is only ever replaced, never changed).
    recent_json: Mutex<VecDeque<(Arc<Pod>, Arc<str>)>>,
}

/// Pods whose JSON is kept after it was asked for.
const RECENT_JSON: usize = 8;

/// The pods, and which of them bear each full name: the reach guard asks by name on
/// every API call, and pairing static and mirror pods is by name, so neither scans
/// every pod.
#[derive(Debug, Default)]
struct Held {
    /// UID -> pod. A pod without a UID is held under the empty UID.
    by_uid: BTreeMap<String, HeldPod>,
    /// (namespace, name) -> the UIDs of the held pods of that full name.
    by_name: BTreeMap<(String, String), BTreeSet<String>>,
    /// The UIDs of the static and mirror pods: the only ones UID translations name
    /// (asked for by every batch slice).
    paired: BTreeSet<String>,
}

/// A held pod.
#[derive(Debug)]
struct HeldPod {
    pod: Arc<Pod>,
}

impl HeldPod {
    fn new(pod: Arc<Pod>) -> Self {
        HeldPod { pod }
    }
}

impl Held {
    /// Holds `pod` under `uid`, replacing (and returning) the pod held there.
    fn insert(&mut self, uid: String, pod: Arc<Pod>) -> Option<Arc<Pod>> {
        let (namespace, name) = identity(&pod);
        self.by_name.entry((namespace.to_owned(), name.to_owned())).or_default().insert(uid.clone());
        if is_static_pod(&pod) || is_mirror_pod(&pod) {
            self.paired.insert(uid.clone());
        } else {
            self.paired.remove(&uid);
        }
        let replaced = self.by_uid.insert(uid.clone(), HeldPod::new(pod))?.pod;
        if identity(&replaced) != identity(&self.by_uid[&uid].pod) {
            self.unname(&replaced, &uid);
        }
        Some(replaced)
    }

    fn remove(&mut self, uid: &str) -> Option<Arc<Pod>> {
        let removed = self.by_uid.remove(uid)?.pod;
        self.unname(&removed, uid);
        self.paired.remove(uid);
        Some(removed)
    }

    /// Forgets that `uid` bears `pod`'s full name.
    fn unname(&mut self, pod: &Pod, uid: &str) {
        let (namespace, name) = identity(pod);
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(uids) = self.by_name.get_mut(&key) {
            uids.remove(uid);
            if uids.is_empty() {
                self.by_name.remove(&key);
            }
        }
    }

    /// The held pods of `pod`'s full name, in UID order.
    fn named<'a>(&'a self, pod: &Pod) -> impl Iterator<Item = &'a HeldPod> + 'a {
        let (namespace, name) = identity(pod);
        self.named_as(namespace, name)
    }

    /// The held pods of the full name `namespace/name`, in UID order.
    fn named_as<'a>(&'a self, namespace: &str, name: &str) -> impl Iterator<Item = &'a HeldPod> + 'a {
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

    /// Adds the pod, replacing one with the same UID.
    pub fn add_pod(&self, pod: Pod) {
        let uid = uid_of(&pod).to_owned();
        let replaced = self.write().insert(uid, Arc::new(pod));
        // Freed, if it is the last copy, after the lock is released.
        drop(replaced);
    }

    /// Removes the pod with this UID, returning it.
    pub fn remove_pod(&self, uid: &str) -> Option<Arc<Pod>> {
        self.write().remove(uid)
    }

    /// The pod with this UID, mirror pods included.
    pub fn get_any(&self, uid: &str) -> Option<Arc<Pod>> {
        self.read().by_uid.get(uid).map(|held| Arc::clone(&held.pod))
    }

    /// All pods, sorted by UID.
    pub fn pods(&self) -> Vec<Arc<Pod>> {
        self.read().by_uid.values().map(|held| Arc::clone(&held.pod)).collect()
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
    pub fn named(&self, namespace: &str, name: &str) -> Vec<Arc<Pod>> {
        self.read().named_as(namespace, name).map(|held| Arc::clone(&held.pod)).collect()
    }

    /// The pod with this UID; mirror pods are not found this way (the status manager
    /// relies on that to skip them).
    pub fn get_pod_by_uid(&self, uid: &str) -> Option<Arc<Pod>> {
        self.read().by_uid.get(uid).filter(|held| !is_mirror_pod(&held.pod)).map(|held| Arc::clone(&held.pod))
    }

    /// [`PodManager::get_pod_by_uid`], with the pod's JSON (serialised once per pod).
    pub fn get_pod_json_by_uid(&self, uid: &str) -> Option<(Arc<Pod>, Arc<str>)> {
        let pod = self.get_pod_by_uid(uid)?;
        let json = self.json_of(&pod);
        Some((pod, json))
    }

    /// The mirror pod of `pod`, which need not be held here: only a static pod has one.
    pub fn get_mirror_pod_by_pod(&self, pod: &Pod) -> Option<Arc<Pod>> {
        if !is_pairable_static(pod) {
            return None;
        }
        mirror_of(&self.read(), pod).map(|held| Arc::clone(&held.pod))
    }

    /// The JSON of [`PodManager::get_mirror_pod_by_pod`] (serialised once per pod).
    pub fn get_mirror_pod_json_by_pod(&self, pod: &Pod) -> Option<Arc<str>> {
        if !is_pairable_static(pod) {
            return None;
        }
        let mirror = mirror_of(&self.read(), pod).map(|held| Arc::clone(&held.pod))?;
        Some(self.json_of(&mirror))
    }

    /// `pod`'s JSON: kept from a recent ask for this very object, else serialised now
    /// (and kept for the next ask).
    pub fn json_of(&self, pod: &Arc<Pod>) -> Arc<str> {
        let mut recent = self.recent_json.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, json)) = recent.iter().find(|(held, _)| Arc::ptr_eq(held, pod)) {
            return Arc::clone(json);
        }
        let json: Arc<str> = serde_json::to_string(&**pod).unwrap_or_default().into();
        if recent.len() == RECENT_JSON {
            recent.pop_front();
        }
        recent.push_back((Arc::clone(pod), Arc::clone(&json)));
        json
    }

    /// Bytes the pod manager holds, for the memory account: each held pod as measured
    /// on the heap ([`crate::heap_meter`]; nothing without its allocator) with its
    /// `Arc`, the entries of its indexes with their keys' text, and the JSON kept of
    /// the pods read last. Measured from a copy of the held `Arc`s, so no lock is held
    /// while it measures.
    pub fn held_bytes(&self) -> usize {
        use crate::heap_meter::{arc_bytes, heap_bytes_of};
        use std::mem::size_of;
        let (pods, indexes) = {
            let held = self.read();
            let pods: Vec<Arc<Pod>> = held.by_uid.values().map(|held| Arc::clone(&held.pod)).collect();
            let by_uid: usize = held.by_uid.keys().map(|uid| size_of::<(String, HeldPod)>() + uid.len()).sum();
            let by_name: usize = held
                .by_name
                .iter()
                .map(|((namespace, name), uids)| {
                    size_of::<((String, String), BTreeSet<String>)>()
                        + namespace.len()
                        + name.len()
                        + uids.iter().map(|uid| size_of::<String>() + uid.len()).sum::<usize>()
                })
                .sum();
            let paired: usize = held.paired.iter().map(|uid| size_of::<String>() + uid.len()).sum();
            (pods, by_uid + by_name + paired)
        };
        let objects: usize = pods.iter().map(|pod| arc_bytes::<Pod>() + heap_bytes_of(&**pod)).sum();
        let recent: usize = self
            .recent_json
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, json)| arc_bytes::<()>() + json.len())
            .sum();
        objects + indexes + recent
    }

    /// A mirror pod's UID becomes its static pod's UID; any other UID, unknown ones
    /// included, is returned unchanged.
    pub fn translate_pod_uid(&self, uid: &str) -> String {
        let pods = self.read();
        pods.by_uid
            .get(uid)
            .filter(|held| is_mirror_pod(&held.pod))
            .and_then(|mirror| static_of(&pods, &mirror.pod))
            .map_or_else(|| uid.to_owned(), |held| uid_of(&held.pod).to_owned())
    }

    /// (static UID -> mirror UID, `""` when it has no mirror pod yet, for every static
    /// pod; mirror UID -> static UID for every mirror pod that has a static pod).
    pub fn get_uid_translations(&self) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        let pods = self.read();
        let mut static_to_mirror = BTreeMap::new();
        let mut mirror_to_static = BTreeMap::new();
        for (uid, held) in pods.paired.iter().filter_map(|uid| Some((uid, pods.by_uid.get(uid)?))) {
            let pod = &held.pod;
            if is_mirror_pod(pod) {
                if let Some(static_pod) = static_of(&pods, pod) {
                    mirror_to_static.insert(uid.clone(), uid_of(&static_pod.pod).to_owned());
                }
            } else if is_static_pod(pod) {
                let mirror_uid = mirror_of(&pods, pod).map_or("", |mirror| uid_of(&mirror.pod));
                static_to_mirror.insert(uid.clone(), mirror_uid.to_owned());
            }
        }
        (static_to_mirror, mirror_to_static)
    }

    /// Follows the API server's copy of a pod: if a pod with its UID is held, it is
    /// replaced by this copy; otherwise nothing happens (the API server does not add
    /// pods to the node, and a deletion there does not remove one: only the kubelet
    /// removes pods). The copy is shared, not duplicated.
    pub fn follow(&self, pod: &Arc<Pod>) {
        let mut held = self.write();
        let replaced = if held.by_uid.contains_key(uid_of(pod)) {
            held.insert(uid_of(pod).to_owned(), Arc::clone(pod))
        } else {
            None
        };
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
fn is_pairable_static(pod: &Pod) -> bool {
    is_static_pod(pod) && !is_mirror_pod(pod)
}

/// The mirror pod with the smallest UID sharing `pod`'s full name.
fn mirror_of<'a>(pods: &'a Held, pod: &Pod) -> Option<&'a HeldPod> {
    pods.named(pod).find(|other| is_mirror_pod(&other.pod))
}

/// The static pod with the smallest UID sharing `mirror`'s full name.
fn static_of<'a>(pods: &'a Held, mirror: &Pod) -> Option<&'a HeldPod> {
    pods.named(mirror).find(|other| is_pairable_static(&other.pod))
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

    fn uid(pod: Option<Arc<Pod>>) -> Option<String> {
        pod.and_then(|pod| pod.metadata.uid.clone())
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// The account follows the pods held and the JSON kept of the last read.
    #[test]
    fn held_bytes_follow_the_pods_held() {
        let manager = PodManager::new();
        assert_eq!(manager.held_bytes(), 0);
        manager.add_pod(api_pod("a", "ua"));
        let one = manager.held_bytes();
        assert!(one > std::mem::size_of::<Pod>(), "{one}");
        let (_, json) = manager.get_pod_json_by_uid("ua").expect("held");
        assert_eq!(manager.held_bytes(), one + json.len() + 16, "the JSON kept of the last read");
        manager.remove_pod("ua");
        assert_eq!(manager.held_bytes(), json.len() + 16, "the JSON of the last read stays a while");
    }

    /// A pod read twice in a row is serialised once; a replaced pod is serialised anew;
    /// only the last few are kept.
    #[test]
    fn the_json_of_the_pods_read_last_is_kept_a_while() {
        let manager = PodManager::new();
        manager.add_pod(api_pod("a", "ua"));
        let (pod, first) = manager.get_pod_json_by_uid("ua").expect("held");
        let (_, again) = manager.get_pod_json_by_uid("ua").expect("held");
        assert!(Arc::ptr_eq(&first, &again), "the same object: serialised once");
        assert_eq!(serde_json::from_str::<Pod>(&first).unwrap(), *pod);

        let mut relabelled = api_pod("a", "ua");
        relabelled.metadata.labels = Some([("app".to_owned(), "x".to_owned())].into());
        manager.add_pod(relabelled.clone());
        let (_, after) = manager.get_pod_json_by_uid("ua").expect("held");
        assert_eq!(serde_json::from_str::<Pod>(&after).unwrap(), relabelled, "the new pod's JSON");

        for i in 0..RECENT_JSON {
            manager.add_pod(api_pod(&format!("p{i}"), &format!("u{i}")));
            manager.get_pod_json_by_uid(&format!("u{i}")).expect("held");
        }
        assert_eq!(manager.recent_json.lock().unwrap().len(), RECENT_JSON, "bounded");
        let (_, later) = manager.get_pod_json_by_uid("ua").expect("held");
        assert!(!Arc::ptr_eq(&after, &later), "pushed out, serialised again");
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
        let uids = |pods: Vec<Arc<Pod>>| pods.into_iter().filter_map(|p| p.metadata.uid.clone()).collect::<Vec<_>>();
        assert_eq!(uids(manager.named("ns", "web")), ["u1", "u2"], "in UID order");
        // A replacement under the same UID with another name moves it.
        manager.add_pod(api_pod("db", "u2"));
        assert_eq!(uids(manager.named("ns", "web")), ["u1"]);
        assert_eq!(uids(manager.named("ns", "db")), ["u2", "u3"]);
        manager.remove_pod("u1");
        assert!(manager.named("ns", "web").is_empty());
        assert!(manager.named("", "db").is_empty(), "no pod is in the empty namespace");
        // Following the API server keeps the index too.
        manager.follow(&Arc::new(api_pod("cache", "u3")));
        assert_eq!(uids(manager.named("ns", "cache")), ["u3"]);
        assert_eq!(uids(manager.named("ns", "db")), ["u2"]);
    }

    #[test]
    fn get_pod_by_uid_hides_mirror_pods() {
        let manager = manager_with(&[("web", "s1")], &[("web", "m1")], &[]);
        assert_eq!(uid(manager.get_pod_by_uid("s1")), Some("s1".into()));
        assert_eq!(manager.get_pod_by_uid("m1"), None);
        assert_eq!(uid(manager.get_any("m1")), Some("m1".into()));
        let uids: Vec<_> = manager.pods().into_iter().filter_map(|p| p.metadata.uid.clone()).collect();
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
        let newer = Arc::new(newer);
        manager.follow(&newer);
        manager.follow(&Arc::new(api_pod("stranger", "x1")));
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
        let written = api.update_pod_status(update).expect("update");
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
        manager.follow(&Arc::new(Pod::default()));
        assert_eq!(manager.get_mirror_pod_by_pod(&Pod::default()), None);
        assert_eq!(manager.translate_pod_uid(""), "");
        assert_eq!(manager.pods().len(), 1);
    }
}
