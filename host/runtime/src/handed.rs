//! [`HandedPods`]: the host's own record of the pods whose status it handed a plugin,
//! the only pods the plugin may plan a sync of, or ask the API server about.
//!
//! Upstream's manager writes only the pods in its own status cache: `syncBatch` ranges
//! over `m.podStatuses`, which only `SetPodStatus`, `SetContainerReadiness`,
//! `SetContainerStartup` (for a pod already cached) and `TerminatePod` fill. The host
//! keeps the same set itself, from the calls it makes, never from anything the plugin
//! says: a pod enters when the host hands its status (`set-pod-status`,
//! `terminate-pod`), and leaves when the host drops it (`remove-orphaned-statuses`), when
//! the API server deleted it at the plugin's request, or when a sync found it recreated
//! (the plugin then drops its status, as upstream's `deletePodStatus` does; taking its
//! word there only narrows). A resize condition, a readiness or startup change for a
//! pod never handed, a sync request, a state document: none of them adds a pod.
//!
//! The record belongs to the host, not to one instance: a hot swap and a recovery give
//! the new instance the running one's record ([`Plugin::carry_handed`]), so the old
//! plugin's calls during a swap's pre-copy reach the new one's reach too. A state
//! document loaded into an instance can only narrow what that instance may reach (see
//! `HostState::may_reach`).
//!
//! Beside the set, the record keeps what the host handed of each pod that a write of
//! its status may carry: its namespace and name (the only pod a call may name), the
//! phases its statuses carried and whether the host terminated it (see
//! [`HandedPods::phase_allowed`], and docs/sandbox.md for the rule field by field).
//!
//! [`Plugin::carry_handed`]: crate::Plugin::carry_handed

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Distinct phases remembered per pod at most (the oldest go first). A pod has at most
/// five in its life (Pending, Running, Succeeded, Failed, Unknown, or none): the bound
/// only keeps a host handing invented phases from growing the record.
pub const MAX_PHASES_PER_POD: usize = 8;

/// The phase a terminated pod may be written with although no status handed it:
/// upstream's `TerminatePod` marks a pod that is not terminal yet `Failed`.
const TERMINATED_PHASE: &str = "Failed";

/// The pods a host handed a plugin, by UID. Thread-safe; every method takes `&self`.
#[derive(Debug, Default)]
pub struct HandedPods {
    record: RwLock<Record>,
    /// How many times a pod left the record: an instance that remembers which pods it
    /// noted already (by digest) starts over when this moves.
    drops: AtomicU64,
}

/// name -> the UIDs handed under that name, in one namespace.
type UidsByName = HashMap<Box<str>, Vec<Box<str>>>;

#[derive(Debug, Default)]
struct Record {
    pods: HashMap<Box<str>, Handed>,
    /// namespace -> name -> the UIDs handed under that name (a recreated pod's old
    /// and new UID, while both are held).
    names: HashMap<Box<str>, UidsByName>,
    /// The last [`DROPPED_KEPT`] pods dropped, oldest first: a 0.2.0 sync planned before
    /// its pod was dropped may still write it (upstream's `syncPod` runs on with the
    /// status it was given), and what the host handed for it is still the rule for
    /// that write. Nothing is planned or read for them any more.
    dropped: VecDeque<(Box<str>, Handed)>,
}

/// Dropped pods whose content is kept for the syncs still in flight (see
/// `Record::dropped`): a node drops far fewer pods than this while one sync runs.
const DROPPED_KEPT: usize = 1024;

/// What the host handed of one pod.
#[derive(Debug)]
struct Handed {
    namespace: Box<str>,
    name: Box<str>,
    /// The phases of the statuses handed, oldest first (`""`: a status without one).
    phases: Vec<Box<str>>,
    /// The host terminated the pod (`terminate-pod`).
    terminated: bool,
}

/// A pod as the host handed it: what `HandedPods::hand` records.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HandedPod<'a> {
    pub uid: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The phase of the status handed; `None` when the call handed no status.
    pub phase: Option<&'a str>,
    /// The call terminated the pod.
    pub terminated: bool,
}

impl HandedPods {
    /// An empty record.
    pub fn new() -> Self {
        HandedPods::default()
    }

    /// Whether the host handed the pod `uid` and has not dropped it since.
    pub fn contains(&self, uid: &str) -> bool {
        self.read().pods.contains_key(uid)
    }

    /// How many pods the record holds.
    pub fn len(&self) -> usize {
        self.read().pods.len()
    }

    /// Whether the record holds no pod.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The UIDs of the pods held, sorted (for checks and reports).
    pub fn uids(&self) -> Vec<String> {
        let mut uids: Vec<String> = self.read().pods.keys().map(|uid| uid.to_string()).collect();
        uids.sort_unstable();
        uids
    }

    /// How many times a pod left the record so far.
    pub fn drops(&self) -> u64 {
        self.drops.load(Ordering::Relaxed)
    }

    /// The namespace and name the host handed the pod `uid` under.
    pub fn name_of(&self, uid: &str) -> Option<(Box<str>, Box<str>)> {
        self.read().pods.get(uid).map(|pod| (pod.namespace.clone(), pod.name.clone()))
    }

    /// The namespace and name of the pod `uid`, held or dropped lately (a request queued
    /// before the drop may still sync it).
    pub(crate) fn lately_named(&self, uid: &str) -> Option<(Box<str>, Box<str>)> {
        let record = self.read();
        let pod =
            record.pods.get(uid).or_else(|| record.dropped.iter().rev().find(|(d, _)| **d == *uid).map(|(_, p)| p));
        pod.map(|pod| (pod.namespace.clone(), pod.name.clone()))
    }

    /// The UIDs handed under `namespace/name`.
    pub(crate) fn named(&self, namespace: &str, name: &str) -> Vec<Box<str>> {
        let record = self.read();
        record.names.get(namespace).and_then(|names| names.get(name)).cloned().unwrap_or_default()
    }

    /// Whether a status write of the pod `uid` may set `phase`: a phase of a status the
    /// host handed for it (upstream's `syncPod` writes the cached status, merged), or
    /// `Failed` once the host terminated it (upstream's `TerminatePod`). The phase the
    /// API server's copy has already is the caller's to allow (upstream's merge keeps it
    /// while containers may still run). A pod dropped lately is judged by what was
    /// handed for it before the drop (a sync planned before the drop may still write
    /// it); and so is a pod handed again since, for the sync of a request queued before
    /// the drop (`of_request`: it writes the status it was queued with).
    pub fn phase_allowed(&self, uid: &str, phase: &str, of_request: bool) -> bool {
        let allows = |pod: &Handed| {
            pod.phases.iter().any(|handed| &**handed == phase) || (pod.terminated && phase == TERMINATED_PHASE)
        };
        let record = self.read();
        let before_drop = || record.dropped.iter().any(|(dropped, pod)| **dropped == *uid && allows(pod));
        match record.pods.get(uid) {
            Some(pod) => allows(pod) || (of_request && before_drop()),
            None => before_drop(),
        }
    }

    /// Notes a pod the host handed: a read lock only when the record holds it as
    /// handed already (the kubelet hands the same pod over and over).
    pub(crate) fn hand(&self, pod: HandedPod<'_>) {
        let namespace = default_namespace(pod.namespace);
        let known = self.read().pods.get(pod.uid).is_some_and(|held| {
            *held.namespace == *namespace
                && *held.name == *pod.name
                && (held.terminated || !pod.terminated)
                && pod.phase.is_none_or(|phase| held.phases.iter().any(|p| &**p == phase))
        });
        if known {
            return;
        }
        let mut record = self.write();
        let renamed =
            record.pods.get(pod.uid).is_some_and(|held| *held.namespace != *namespace || *held.name != *pod.name);
        if renamed {
            // A pod's name never changes; a host that says otherwise is believed, and
            // the old name goes.
            record.remove(pod.uid);
        }
        if !record.pods.contains_key(pod.uid) {
            let handed =
                Handed { namespace: namespace.into(), name: pod.name.into(), phases: Vec::new(), terminated: false };
            record.pods.insert(pod.uid.into(), handed);
            let uids = record.names.entry(namespace.into()).or_default().entry(pod.name.into()).or_default();
            uids.push(pod.uid.into());
        }
        let held = record.pods.get_mut(pod.uid).expect("inserted above");
        held.terminated |= pod.terminated;
        if let Some(phase) = pod.phase
            && !held.phases.iter().any(|p| &**p == phase)
        {
            if held.phases.len() == MAX_PHASES_PER_POD {
                held.phases.remove(0);
            }
            held.phases.push(phase.into());
        }
    }

    /// Forgets every pod whose UID `keep` does not hold (`remove-orphaned-statuses`).
    pub(crate) fn retain(&self, keep: &HashSet<&str>) {
        let mut record = self.write();
        let gone: Vec<Box<str>> = record.pods.keys().filter(|uid| !keep.contains(&***uid)).cloned().collect();
        for uid in &gone {
            record.remove(uid);
        }
        drop(record);
        if !gone.is_empty() {
            self.drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Forgets the pod `uid` (deleted from the API server, or found recreated).
    pub(crate) fn drop_pod(&self, uid: &str) {
        if self.write().remove(uid) {
            self.drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Record> {
        self.record.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Record> {
        self.record.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Record {
    /// Removes `uid` and its name (keeping what was handed, see [`Record::dropped`]);
    /// whether it was held.
    fn remove(&mut self, uid: &str) -> bool {
        let Some((uid, pod)) = self.pods.remove_entry(uid) else { return false };
        if let Some(names) = self.names.get_mut(&pod.namespace) {
            if let Some(uids) = names.get_mut(&pod.name) {
                uids.retain(|held| **held != *uid);
                if uids.is_empty() {
                    names.remove(&pod.name);
                }
            }
            if names.is_empty() {
                self.names.remove(&pod.namespace);
            }
        }
        if self.dropped.len() == DROPPED_KEPT {
            self.dropped.pop_front();
        }
        self.dropped.push_back((uid, pod));
        true
    }
}

/// Kubernetes' namespace of a pod that names none.
pub(crate) fn default_namespace(namespace: &str) -> &str {
    if namespace.is_empty() { "default" } else { namespace }
}

/// The phase of a status the host hands (`""` when it has none), found without parsing
/// the status: this is on the path of every changed status the kubelet reports, and
/// parsing costs more than the plugin's answer. The status is the host's own JSON, not
/// the plugin's: a key is never written with escapes, and every quote inside a string
/// is escaped, so `"phase"` followed by a colon is a key. PodStatus has one `phase` key
/// and none of its nested objects has one (their map keys are resource names); should
/// a status hold several, the first is taken.
pub(crate) fn status_phase(status: &str) -> &str {
    const KEY: &str = "\"phase\"";
    let mut rest = status;
    while let Some(at) = rest.find(KEY) {
        rest = &rest[at + KEY.len()..];
        let Some(after_colon) = rest.trim_start().strip_prefix(':') else { continue };
        let Some(value) = after_colon.trim_start().strip_prefix('"') else { return "" };
        return value.find('"').map_or("", |end| &value[..end]);
    }
    ""
}

/// The phase of a pod's own status, as the pod the host hands in `terminate-pod` has it
/// (parsed: a pod's labels and annotations are its author's, and may have any key).
pub(crate) fn pod_phase(pod: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Pod {
        #[serde(default)]
        status: Option<Status>,
    }
    #[derive(serde::Deserialize)]
    struct Status {
        #[serde(default)]
        phase: Option<String>,
    }
    serde_json::from_str::<Pod>(pod).ok().and_then(|pod| pod.status?.phase).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod<'a>(uid: &'a str, name: &'a str, phase: Option<&'a str>) -> HandedPod<'a> {
        HandedPod { uid, namespace: "ns", name, phase, terminated: false }
    }

    #[test]
    fn a_pod_is_held_from_its_handing_until_it_is_dropped() {
        let record = HandedPods::new();
        assert!(!record.contains("ua"));
        record.hand(pod("ua", "a", Some("Running")));
        record.hand(pod("ub", "b", Some("Pending")));
        assert!(record.contains("ua") && record.contains("ub"));
        assert_eq!(record.name_of("ua"), Some(("ns".into(), "a".into())));
        assert_eq!(record.lately_named("ua"), Some(("ns".into(), "a".into())));
        assert_eq!(record.named("ns", "a"), vec![Box::from("ua")]);
        record.retain(&HashSet::from(["ub"]));
        assert_eq!(record.uids(), ["ub"]);
        assert!(record.named("ns", "a").is_empty(), "the name goes with the pod");
        assert_eq!(record.drops(), 1);
        record.drop_pod("ub");
        record.drop_pod("ub");
        assert!(record.is_empty());
        assert_eq!(record.lately_named("ua"), Some(("ns".into(), "a".into())), "dropped lately");
        assert_eq!(record.drops(), 2, "only a pod that was held counts");
    }

    #[test]
    fn a_recreated_pod_is_a_second_uid_under_the_name() {
        let record = HandedPods::new();
        record.hand(pod("old", "web", None));
        record.hand(pod("new", "web", None));
        assert_eq!(record.named("ns", "web"), vec![Box::from("old"), Box::from("new")]);
        record.drop_pod("old");
        assert_eq!(record.named("ns", "web"), vec![Box::from("new")]);
        let unnamed = HandedPod { namespace: "", ..pod("d", "d", None) };
        record.hand(unnamed);
        assert_eq!(record.name_of("d"), Some(("default".into(), "d".into())));
    }

    #[test]
    fn a_phase_is_allowed_once_handed_and_failed_once_terminated() {
        let record = HandedPods::new();
        record.hand(pod("ua", "a", Some("Pending")));
        record.hand(pod("ua", "a", Some("Running")));
        assert!(record.phase_allowed("ua", "Pending", false) && record.phase_allowed("ua", "Running", false));
        assert!(!record.phase_allowed("ua", "Failed", false));
        assert!(!record.phase_allowed("ub", "Running", false), "a pod never handed");
        record.hand(HandedPod { terminated: true, ..pod("ua", "a", None) });
        assert!(record.phase_allowed("ua", "Failed", false));
        assert!(!record.phase_allowed("ua", "Succeeded", false));
        for i in 0..20 {
            record.hand(pod("ua", "a", Some(&format!("Invented{i}"))));
        }
        assert!(!record.phase_allowed("ua", "Pending", false), "bounded: the oldest went");
        assert!(record.phase_allowed("ua", "Failed", false), "terminated stays");
        record.drop_pod("ua");
        assert!(!record.contains("ua"));
        assert!(record.phase_allowed("ua", "Failed", false), "a sync in flight writes by what was handed");
        record.hand(pod("ua", "a", Some("Running")));
        assert!(!record.phase_allowed("ua", "Failed", false), "handed again: a batch writes what is handed now");
        assert!(record.phase_allowed("ua", "Failed", true), "a request queued before the drop writes what it carried");
    }

    #[test]
    fn the_phase_of_the_hosts_status_is_found_without_parsing_it() {
        assert_eq!(status_phase(r#"{"phase":"Running","podIP":"10.0.0.1"}"#), "Running");
        assert_eq!(status_phase("{\n  \"conditions\": [],\n  \"phase\" : \"Failed\"\n}"), "Failed");
        assert_eq!(status_phase(r#"{"message":"the \"phase\": is","phase":"Pending"}"#), "Pending");
        assert_eq!(status_phase(r#"{"reason":"phase"}"#), "");
        assert_eq!(status_phase("{}"), "");
        assert_eq!(pod_phase(r#"{"metadata":{"labels":{"phase":"Failed"}},"status":{"phase":"Running"}}"#), "Running");
        assert_eq!(pod_phase(r#"{"metadata":{"labels":{"phase":"Failed"}}}"#), "");
    }
}
