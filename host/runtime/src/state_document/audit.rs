//! Holding a plugin's state against the host's own record of what it accepted.
//!
//! A plugin's `save-state` and `save-state-changes` are its word; the host's record
//! ([`HostView::accepted_records_where`]) is what the plugin answered right after each call it
//! accepted (its `get-pod-status`, asked by the host), kept outside the plugin. A state
//! that leaves out an accepted status, holds it altered, or holds a status of a pod the
//! node never handed over is repaired from the record before another instance serves
//! from it: the statuses the record holds go back in as the record has them, the
//! invented ones (and their queued requests) go out. Why repair and not refuse: the
//! running plugin is the one that lied, and refusing would keep it serving; the record
//! holds every accepted status whole (body, version, pod, whether it is finished), so
//! what the node was told is accepted is exactly what the new instance holds.
//!
//! Statuses a plugin drops as it should are not held against it: the host forgets a
//! record when a sync reports the pod deleted or recreated, and a record whose pod the
//! pod manager no longer holds, or that the plugin's record of handed pods dropped (a
//! pod deleted or found recreated in a 0.1.x batch sync, whose outcome the host does
//! not see but whose calls it made), is not restored.

use std::collections::{BTreeMap, BTreeSet};

use podstatus_backends::host_view::Accepted;
use podstatus_backends::{AcceptedRecord, HostView, PodManager};

use crate::handed::HandedPods;
use serde_json::value::RawValue;

use super::entries::{CHANGES_FORMAT, ChangesEntries, Entries, same_json, shown};

/// The state format version whose change sets carry `podIsFinished`.
const STATE_VERSION: u32 = 2;

/// The statuses a state document holds (and the pods of its queued requests),
/// followed through later change sets: what an instance that took the document and
/// the changes holds.
#[derive(Debug, Default)]
pub struct HeldState {
    statuses: BTreeMap<String, Held>,
    /// Queued request ID (as the document keys it) -> its pod's UID.
    pending: BTreeMap<String, String>,
    /// The next request ID the state would hand out (a change set carries it).
    next_request_id: u64,
    /// Pods whose status changed since the last audit.
    touched: BTreeSet<String>,
}

#[derive(Debug)]
struct Held {
    version: Option<u64>,
    status: Option<Box<RawValue>>,
}

/// A queued request's entry, read for its pod only.
#[derive(serde::Deserialize)]
struct PendingPod {
    #[serde(default, rename = "podUid")]
    pod_uid: String,
}

impl HeldState {
    /// What `document` (a `save-state` answer) holds; `None` when it is not the state
    /// format.
    pub fn from_state(document: &str) -> Option<Self> {
        let entries: Entries<'_> = serde_json::from_str(document).ok()?;
        let mut held = HeldState::default();
        held.overlay(&entries, false);
        Some(held)
    }

    /// Follows a change set (a `save-state-changes` answer); false when it is not
    /// the change set format (nothing changes then).
    pub fn apply_changes(&mut self, changes: &str) -> bool {
        match serde_json::from_str::<ChangesEntries<'_>>(changes) {
            Ok(changes) => {
                self.overlay(&changes.patch, true);
                true
            }
            Err(_) => false,
        }
    }

    /// Takes `entries` on top of what is held; `touch`: note the statuses as changed
    /// since the last audit (a change set's; a whole document is all new anyway).
    fn overlay(&mut self, entries: &Entries<'_>, touch: bool) {
        for (uid, entry) in &entries.statuses {
            if touch {
                self.touched.insert(uid.clone());
            }
            match entry {
                Some(entry) => {
                    let status = entry.status.map(|raw| raw.to_owned());
                    self.statuses.insert(uid.clone(), Held { version: entry.version, status });
                }
                None => {
                    self.statuses.remove(uid);
                }
            }
        }
        self.next_request_id = self.next_request_id.max(entries.next_request_id.unwrap_or(0));
        for (id, entry) in &entries.pending {
            let pod = entry.and_then(|raw| serde_json::from_str::<PendingPod>(raw.get()).ok());
            match pod {
                Some(pod) => self.pending.insert(id.clone(), pod.pod_uid),
                None => self.pending.remove(id),
            };
        }
    }

    /// Holds this state against the host's record: `view`'s accepted statuses, `pods`
    /// for which pods the node still has, and `handed` (the plugin's record of handed
    /// pods, when it keeps one) for which the host saw go. Forgets, in `view`, the
    /// records of pods the pod manager no longer holds, or the host dropped, that this
    /// state dropped (dropped as they should be).
    pub fn audit(&mut self, view: &HostView, pods: &PodManager, handed: Option<&HandedPods>) -> Findings {
        self.touched.clear();
        self.audit_pods(view, pods, handed, None)
    }

    /// [`HeldState::audit`] again, after `earlier` (taken when `view` stood at `mark`),
    /// looking only at what may have changed since: the pods `earlier` found, those
    /// whose status this state took since, and those whose record changed since. The
    /// cost follows the changes, not the state: a swap checks its bulk while the old
    /// plugin serves and only this while calls are held.
    pub fn audit_again(
        &mut self,
        view: &HostView,
        pods: &PodManager,
        handed: Option<&HandedPods>,
        earlier: &Findings,
        mark: u64,
    ) -> Findings {
        let mut only = std::mem::take(&mut self.touched);
        only.extend(view.changed_since(mark));
        only.extend(earlier.missing.iter().chain(&earlier.altered).chain(&earlier.invented).cloned());
        self.audit_pods(view, pods, handed, Some(&only))
    }

    fn audit_pods(
        &self,
        view: &HostView,
        pods: &PodManager,
        handed: Option<&HandedPods>,
        only: Option<&BTreeSet<String>>,
    ) -> Findings {
        let mut findings = Findings { next_request_id: self.next_request_id, ..Findings::default() };
        let differs = |uid: &str, accepted: &Accepted| match self.statuses.get(uid) {
            None => true,
            Some(held) => {
                held.version != Some(accepted.version) || !same_text(held.status.as_deref(), &accepted.status)
            }
        };
        // The host saw the pod go: gone from the node, or dropped from its record of
        // handed pods (deleted at the plugin's request, found recreated by a read the
        // host made, orphaned), so the plugin dropped its status as it should.
        let gone = |uid: &str| pods.get_any(uid).is_none() || handed.is_some_and(|handed| !handed.contains(uid));
        for record in view.accepted_records_where(only, differs) {
            match self.statuses.get(&record.uid) {
                None if gone(&record.uid) => view.forget_accepted(&record.uid),
                None => {
                    findings.missing.push(record.uid.clone());
                    findings.restore.push(record);
                }
                Some(_) => {
                    findings.altered.push(record.uid.clone());
                    findings.restore.push(record);
                }
            }
        }
        let held: Box<dyn Iterator<Item = &String>> = match only {
            Some(only) => Box::new(only.iter().filter(|uid| self.statuses.contains_key(*uid))),
            None => Box::new(self.statuses.keys()),
        };
        // A pod the node never reported is one whose status the host never handed the
        // plugin: its status is invented, even of a pod the pod manager holds (a ghost
        // that would have the new plugin sync a pod it may not reach, issue 47).
        for uid in held {
            if !view.knows(uid) {
                findings.invented.push(uid.clone());
            }
        }
        findings.drop_pending =
            self.pending.iter().filter(|(_, uid)| findings.invented.contains(uid)).map(|(id, _)| id.clone()).collect();
        findings
    }
}

/// Whether a held status is the recorded one: the same text (an honest plugin writes
/// both alike), or the same JSON once both are parsed (only then).
fn same_text(held: Option<&RawValue>, recorded: &str) -> bool {
    let Some(held) = held else { return false };
    held.get() == recorded || RawValue::from_string(recorded.to_owned()).is_ok_and(|r| same_json(Some(held), Some(&r)))
}

/// Where a plugin's state and the host's record disagree, pod by pod (UIDs, sorted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    /// Accepted statuses the state leaves out, of pods the node still has.
    pub missing: Vec<String>,
    /// Accepted statuses the state holds with another version or body.
    pub altered: Vec<String>,
    /// Statuses of pods the node never handed over (never reported, whether the pod
    /// manager holds the pod or not).
    pub invented: Vec<String>,
    /// The records that go back in.
    restore: Vec<AcceptedRecord>,
    /// Queued requests of invented pods, which go out with them.
    drop_pending: Vec<String>,
    /// The state's next request ID, which the repair carries unchanged.
    next_request_id: u64,
}

/// Why the host's record could not be handed to a plugin.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RepairError {
    /// The host knows no pod name for an accepted status (it accepted one of a pod the
    /// node never reported), so a state entry for it cannot be written.
    #[error("the host knows no pod name for the accepted status of pod {0:?}")]
    UnnamedPod(String),
    /// The accepted status, as the plugin answered it, is not JSON.
    #[error("the accepted status of pod {0:?} is not JSON")]
    NotJson(String),
    /// The document to repair is not a state document.
    #[error("the state is not a state document")]
    NotAState,
}

impl Findings {
    /// Whether the state holds exactly what the record does.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.altered.is_empty() && self.invented.is_empty()
    }

    /// Every pod named, for messages: at most `limit` UIDs (each cut to 64 bytes) and
    /// how many more there are.
    pub fn pods_shown(&self, limit: usize) -> String {
        let all: Vec<&String> = self.missing.iter().chain(&self.altered).chain(&self.invented).collect();
        let mut shown_pods: Vec<String> = all.iter().take(limit).map(|uid| format!("{:?}", shown(uid))).collect();
        if all.len() > limit {
            shown_pods.push(format!("and {} more", all.len() - limit));
        }
        shown_pods.join(", ")
    }

    /// The change set that makes a state hold what the record does: each missing or
    /// altered status as the record has it, each invented one and its queued requests
    /// removed. The written versions stay as they are: a restored status the API
    /// server does not have yet is older than nothing written, so the batch writes it.
    pub fn repair(&self) -> Result<String, RepairError> {
        let mut statuses = self.restored_entries()?;
        for uid in &self.invented {
            statuses.insert(uid.clone(), serde_json::Value::Null);
        }
        let pending: serde_json::Map<String, serde_json::Value> =
            self.drop_pending.iter().map(|id| (id.clone(), serde_json::Value::Null)).collect();
        let changes = serde_json::json!({
            "format": CHANGES_FORMAT,
            "version": STATE_VERSION,
            "patch": {"statuses": statuses, "apiStatusVersions": {}, "pending": pending,
                "nextRequestId": self.next_request_id},
        });
        Ok(changes.to_string())
    }

    /// `document` (a whole state, the one these findings were taken of) as it must be
    /// before another instance loads it: the record's statuses in, the invented ones and
    /// their queued requests out. A state that left a status out may still hold the
    /// request queued for it, which no plugin loads; so the bulk is repaired before it is
    /// handed over, not after. Parses the whole document: only when there are findings.
    pub fn repair_document(&self, document: &str) -> Result<String, RepairError> {
        let mut doc: serde_json::Value = serde_json::from_str(document).map_err(|_| RepairError::NotAState)?;
        let restored = self.restored_entries()?;
        let statuses =
            doc.get_mut("statuses").and_then(serde_json::Value::as_object_mut).ok_or(RepairError::NotAState)?;
        statuses.extend(restored);
        for uid in &self.invented {
            statuses.remove(uid);
        }
        if let Some(pending) = doc.get_mut("pending").and_then(serde_json::Value::as_object_mut) {
            for id in &self.drop_pending {
                pending.remove(id);
            }
        }
        Ok(doc.to_string())
    }

    /// These findings but for the statuses of `pods` (whose record moved on since the
    /// state was taken: newer, not altered).
    pub fn without(mut self, pods: &BTreeSet<String>) -> Findings {
        self.missing.retain(|uid| !pods.contains(uid));
        self.altered.retain(|uid| !pods.contains(uid));
        self.restore.retain(|record| !pods.contains(&record.uid));
        self
    }

    /// Adds what `later` found (a later look at the same swap), each pod once.
    pub fn merge(&mut self, later: Findings) {
        for (mine, theirs) in [
            (&mut self.missing, later.missing),
            (&mut self.altered, later.altered),
            (&mut self.invented, later.invented),
        ] {
            mine.extend(theirs);
            mine.sort_unstable();
            mine.dedup();
        }
        self.restore.extend(later.restore);
        self.drop_pending.extend(later.drop_pending);
        self.next_request_id = self.next_request_id.max(later.next_request_id);
    }

    /// The state entries of the statuses that go back in, by UID.
    fn restored_entries(&self) -> Result<serde_json::Map<String, serde_json::Value>, RepairError> {
        let mut statuses = serde_json::Map::new();
        for record in &self.restore {
            if record.pod_name.is_empty() {
                return Err(RepairError::UnnamedPod(shown(&record.uid).to_owned()));
            }
            let status: serde_json::Value = serde_json::from_str(&record.accepted.status)
                .map_err(|_| RepairError::NotJson(shown(&record.uid).to_owned()))?;
            let mut entry = serde_json::json!({
                "version": record.accepted.version,
                "podName": record.pod_name,
                "podNamespace": record.pod_namespace,
                "status": status,
            });
            if record.finished {
                entry["podIsFinished"] = true.into();
            }
            statuses.insert(record.uid.clone(), entry);
        }
        Ok(statuses)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use podstatus_backends::ContainersStopped;

    use super::*;

    fn pod(name: &str, uid: &str) -> k8s_openapi::api::core::v1::Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name, "namespace": "ns", "uid": uid}})).unwrap()
    }

    fn state(statuses: serde_json::Value, pending: serde_json::Value) -> String {
        serde_json::json!({"format": "podstatus.kubelet.io/state", "version": 2, "statuses": statuses,
            "apiStatusVersions": {}, "pending": pending, "nextRequestId": 3})
        .to_string()
    }

    /// A view that accepted `{"phase":"Running"}` as version 1 of pods a and b, whose
    /// pods the pod manager holds.
    fn world() -> (HostView, PodManager) {
        let view = HostView::new(Arc::new(ContainersStopped));
        let pods = PodManager::new();
        for (name, uid) in [("a", "ua"), ("b", "ub")] {
            view.report_status(&pod(name, uid), &Default::default());
            view.accept(uid, Accepted { version: 1, status: r#"{"phase":"Running"}"#.into() });
            pods.add_pod(pod(name, uid));
        }
        (view, pods)
    }

    #[test]
    fn a_state_that_holds_the_record_has_no_findings() {
        let (view, pods) = world();
        let entry =
            serde_json::json!({"version": 1, "podName": "a", "podNamespace": "ns", "status": {"phase": "Running"}});
        let held = HeldState::from_state(&state(serde_json::json!({"ua": entry, "ub": entry}), serde_json::json!({})));
        let findings = held.expect("the state format").audit(&view, &pods, None);
        assert!(findings.is_empty(), "{findings:?}");
    }

    #[test]
    fn omitted_altered_and_invented_statuses_are_found_and_repaired() {
        let (view, pods) = world();
        let altered =
            serde_json::json!({"version": 1, "podName": "b", "podNamespace": "ns", "status": {"phase": "Failed"}});
        let invented = serde_json::json!({"version": 9, "podName": "x", "podNamespace": "ns", "status": {}});
        let document = state(
            serde_json::json!({"ub": altered, "u-invented": invented}),
            serde_json::json!({"7": {"podUid": "u-invented", "version": 9, "podName": "x", "podNamespace": "ns"}}),
        );
        let findings = HeldState::from_state(&document).unwrap().audit(&view, &pods, None);
        assert_eq!(findings.missing, ["ua"]);
        assert_eq!(findings.altered, ["ub"]);
        assert_eq!(findings.invented, ["u-invented"]);
        assert_eq!(findings.pods_shown(2), r#""ua", "ub", and 1 more"#);

        let repair: serde_json::Value = serde_json::from_str(&findings.repair().unwrap()).unwrap();
        let patch = &repair["patch"];
        assert_eq!(patch["statuses"]["ua"]["status"], serde_json::json!({"phase": "Running"}));
        assert_eq!(patch["statuses"]["ua"]["podName"], "a");
        assert_eq!(patch["statuses"]["ub"]["version"], 1);
        assert_eq!(patch["statuses"]["u-invented"], serde_json::Value::Null);
        assert_eq!(patch["pending"]["7"], serde_json::Value::Null);
        assert!(patch["statuses"]["ua"].get("podIsFinished").is_none());
        assert_eq!(patch["nextRequestId"], 3, "the request counter stays where it was");
    }

    #[test]
    fn a_change_set_moves_what_the_state_holds() {
        let (view, pods) = world();
        let entry =
            serde_json::json!({"version": 1, "podName": "a", "podNamespace": "ns", "status": {"phase": "Running"}});
        let mut held = HeldState::from_state(&state(serde_json::json!({"ua": entry}), serde_json::json!({}))).unwrap();
        assert_eq!(held.audit(&view, &pods, None).missing, ["ub"]);
        let newer =
            serde_json::json!({"version": 2, "podName": "b", "podNamespace": "ns", "status": {"phase": "Running"}});
        let changes = serde_json::json!({"format": CHANGES_FORMAT, "version": 2,
            "patch": {"statuses": {"ub": newer, "ua": null}, "apiStatusVersions": {}, "pending": {}, "nextRequestId": 3}});
        assert!(held.apply_changes(&changes.to_string()));
        assert!(!held.apply_changes("{not a change set"));
        let findings = held.audit(&view, &pods, None);
        assert_eq!((findings.missing, findings.altered), (vec!["ua".to_string()], vec!["ub".to_string()]));
    }

    #[test]
    fn a_dropped_status_of_a_pod_the_node_no_longer_has_is_no_finding_and_its_record_goes() {
        let (view, pods) = world();
        pods.remove_pod("ua");
        let entry =
            serde_json::json!({"version": 1, "podName": "b", "podNamespace": "ns", "status": {"phase": "Running"}});
        let mut held = HeldState::from_state(&state(serde_json::json!({"ub": entry}), serde_json::json!({}))).unwrap();
        assert!(held.audit(&view, &pods, None).is_empty());
        assert_eq!(view.accepted("ua"), None, "the record of the dropped status is forgotten");
    }

    #[test]
    fn an_audit_again_looks_at_what_changed_since_and_what_it_found() {
        let (view, pods) = world();
        let entry = |name: &str, version: u64| serde_json::json!({"version": version, "podName": name, "podNamespace": "ns", "status": {"phase": "Running"}});
        let mut held =
            HeldState::from_state(&state(serde_json::json!({"ua": entry("a", 1)}), serde_json::json!({}))).unwrap();
        let earlier = held.audit(&view, &pods, None);
        assert_eq!(earlier.missing, ["ub"]);
        let mark = view.change_mark();
        // Since: the record of a moves on (the plugin accepted version 2), the state
        // takes b, and takes an invented pod.
        view.accept("ua", Accepted { version: 2, status: r#"{"phase":"Running"}"#.into() });
        let changes = serde_json::json!({"format": CHANGES_FORMAT, "version": 2, "patch": {"statuses":
            {"ub": entry("b", 1), "u-new": entry("x", 1)}, "apiStatusVersions": {}, "pending": {}, "nextRequestId": 3}});
        assert!(held.apply_changes(&changes.to_string()));
        let again = held.audit_again(&view, &pods, None, &earlier, mark);
        assert_eq!(
            (again.missing.len(), again.altered.clone(), again.invented.clone()),
            (0, vec!["ua".into()], vec!["u-new".into()])
        );
        // Nothing changed since that: only what it found is looked at, and found again.
        let mark = view.change_mark();
        let third = held.audit_again(&view, &pods, None, &again, mark);
        assert_eq!(third, again);
    }

    #[test]
    fn a_state_that_left_out_a_status_but_kept_its_request_is_repaired_whole() {
        let (view, pods) = world();
        let entry =
            serde_json::json!({"version": 1, "podName": "b", "podNamespace": "ns", "status": {"phase": "Running"}});
        let invented = serde_json::json!({"version": 1, "podName": "x", "podNamespace": "ns", "status": {}});
        // ua left out, its queued request kept; an invented pod with a request of its own.
        let document = state(
            serde_json::json!({"ub": entry, "u-x": invented}),
            serde_json::json!({"4": {"podUid": "ua", "version": 1, "podName": "a", "podNamespace": "ns"},
                "5": {"podUid": "u-x", "version": 1, "podName": "x", "podNamespace": "ns"}}),
        );
        let mut held = HeldState::from_state(&document).unwrap();
        let findings = held.audit(&view, &pods, None);
        let repaired: serde_json::Value = serde_json::from_str(&findings.repair_document(&document).unwrap()).unwrap();
        assert_eq!(repaired["statuses"]["ua"]["status"], serde_json::json!({"phase": "Running"}));
        assert_eq!(repaired["statuses"]["ua"]["version"], 1, "the kept request refers to it again");
        assert!(repaired["statuses"].get("u-x").is_none() && repaired["pending"].get("5").is_none());
        assert!(repaired["pending"].get("4").is_some());
        assert!(HeldState::from_state(&repaired.to_string()).unwrap().audit(&view, &pods, None).is_empty());
        // Judged without ua (its record moved on since the save), only the invention is left.
        let rest = findings.clone().without(&BTreeSet::from(["ua".to_string()]));
        assert_eq!((rest.missing.len(), rest.invented.clone()), (0, vec!["u-x".to_string()]));
        // Two looks at one swap name each pod once.
        let mut merged = findings.clone();
        merged.merge(findings);
        assert_eq!(merged.missing, ["ua"]);
    }

    #[test]
    fn a_status_of_a_pod_never_reported_is_invented_though_the_pod_manager_holds_it() {
        let (view, pods) = world();
        pods.add_pod(pod("c", "uc"));
        let entry =
            serde_json::json!({"version": 1, "podName": "a", "podNamespace": "ns", "status": {"phase": "Running"}});
        let ghost =
            serde_json::json!({"version": 1, "podName": "c", "podNamespace": "ns", "status": {"phase": "Failed"}});
        let document = state(serde_json::json!({"ua": entry, "ub": entry, "uc": ghost}), serde_json::json!({}));
        let findings = HeldState::from_state(&document).unwrap().audit(&view, &pods, None);
        assert_eq!(findings.invented, ["uc"]);
    }

    #[test]
    fn a_record_without_a_pod_name_cannot_be_repaired() {
        let view = HostView::new(Arc::new(ContainersStopped));
        view.accept("ua", Accepted { version: 1, status: "{}".into() });
        let pods = PodManager::new();
        pods.add_pod(pod("a", "ua"));
        let findings = HeldState::from_state(&state(serde_json::json!({}), serde_json::json!({})))
            .unwrap()
            .audit(&view, &pods, None);
        assert_eq!(findings.missing, ["ua"]);
        assert_eq!(findings.repair(), Err(RepairError::UnnamedPod("ua".into())));
        assert!(HeldState::from_state("{not json").is_none());
    }
}
