//! What the host itself knows about the node's pods, apart from anything the plugin
//! says: the statuses the node reported (the pod and host IPs in them, whether the
//! pod's containers were terminated), and which statuses the plugin accepted.
//!
//! The reach guard ([`crate::GuardedApiServer`]) consults it for the decisions that must
//! not rest on the plugin's word: which IPs a status may carry, and whether a pod's
//! containers can still run when the plugin asks to delete it. Whoever hands the plugin
//! its statuses feeds it *before* the plugin sees them: the agent's manager handle (for
//! every `set-pod-status` and `terminate-pod`), replay (for those steps).
//!
//! Entries are keyed by the UID of the pod the node reported (a static pod's, not its
//! mirror pod's); [`HostView::retain`] forgets the pods the node no longer has, as
//! `remove-orphaned-statuses` does for the plugin's cache.
//!
//! A report is kept as the JSON it came in, with what is asked of it at every call read
//! out at once (the pod's identity, the IPs): the view is on the path of every status
//! the node reports, and a node of a fleet holds one per pod, so it parses neither the
//! pod nor the status whole (about 40 µs and 12 KiB a pod as k8s-openapi objects). The
//! rare question that needs them whole, whether a container can still run, reads them
//! then.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodStatus};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::compact_pod::CompactPod;
use crate::deletion_safety::DeletionSafety;
use crate::handed_claims::{HandedClaims, first_beyond};
use crate::pod_identity::PodIdentity;
use crate::pod_manager::PodManager;
use crate::status_claims::{Claim, ClaimDigest, StatusClaims, is_terminal};

/// Distinct pod and host IPs remembered per pod at most (the oldest go first): a pod
/// has one or two of each in its life; the bound keeps a flood of reports small.
pub const MAX_IPS_PER_POD: usize = 16;

/// A status the plugin accepted, as it reported it right after accepting it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The plugin's version of the status.
    pub version: u64,
    /// The status, as JSON.
    pub status: String,
}

/// A status the plugin accepted, with what the host knows of its pod: enough to hand
/// the status back to a plugin that lost it (a state entry names the pod and whether
/// it is finished).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcceptedRecord {
    /// The pod's UID (the node's pod: a static pod's, not its mirror pod's).
    pub uid: String,
    /// The status, as the plugin answered right after accepting it.
    pub accepted: Accepted,
    /// The pod's name, as the node reported it.
    pub pod_name: String,
    /// The pod's namespace, as the node reported it.
    pub pod_namespace: String,
    /// The node terminated the pod (upstream's `podIsFinished`: the status came from
    /// TerminatePod or followed one).
    pub finished: bool,
}

/// Why the host's view does not let a pod go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotSafe {
    /// The node never reported a status for the pod.
    Unreported,
    /// By the node's own report, a container of the pod may still run.
    ContainersMayRun,
}

impl NotSafe {
    /// The reason, as refusals word it.
    pub fn as_str(self) -> &'static str {
        match self {
            NotSafe::Unreported => "the node never reported this pod's status",
            NotSafe::ContainersMayRun => "by the node's own report a container of the pod may still run",
        }
    }
}

#[derive(Debug, Default)]
struct Reported {
    /// The pod as the node last handed it over, as JSON.
    pod: Option<ReportedPod>,
    /// Its namespace and name (empty until the node reports the pod).
    namespace: String,
    name: String,
    /// The status the node last reported.
    status: Option<LastStatus>,
    /// Every pod and host IP the node reported for the pod, oldest first.
    ips: Vec<String>,
    /// What the host handed for the pod that a status write may carry
    /// ([`HostView::unhanded_claim`]).
    claims: HandedClaims,
    /// The last status the plugin accepted.
    accepted: Option<Accepted>,
    /// The view's change count when `accepted` last changed (see [`HostView::change_mark`]).
    accepted_at: u64,
    /// The node terminated the pod at some point.
    terminated: bool,
    /// The digest of the pod and status JSON of the node's last report, when that was
    /// a status ([`report_digest`]): the same report again records nothing new.
    report_digest: Option<u128>,
}

/// The pod of a report, as JSON. When the node handed over exactly the pod manager's
/// copy (a kubelet reports the pod it holds), the view points at that copy instead of
/// keeping the text again, and only while the pod manager holds it: the status write
/// that follows a report brings the pod manager a newer copy, and a strong reference
/// here would keep every pod's previous version alive (1.5 KB a pod in a fleet).
/// Once the pod manager moved on, the pod the node now holds is the caller's copy
/// ([`HostView::no_container_can_run`]).
#[derive(Debug)]
enum ReportedPod {
    Held(Weak<CompactPod>),
    Own(Box<str>),
}

impl ReportedPod {
    /// The pod parsed, if the view still has its text (kept, or the pod manager still
    /// holds it); `Err` when the text is not a pod's.
    fn parse(&self) -> Option<Result<Pod, serde_json::Error>> {
        match self {
            ReportedPod::Held(pod) => pod.upgrade().map(|pod| serde_json::from_str(pod.json())),
            ReportedPod::Own(json) => Some(serde_json::from_str(json)),
        }
    }

    /// The bytes this view holds for it.
    fn held_bytes(&self) -> usize {
        match self {
            ReportedPod::Held(_) => 0,
            ReportedPod::Own(json) => json.len(),
        }
    }
}

/// A status the node reported, as JSON.
#[derive(Debug)]
struct LastStatus {
    json: Box<str>,
    /// Read with every container terminated: the node terminated the pod since it
    /// reported this status (TerminatePod stops them all).
    stopped: bool,
}

/// Names of forgotten pods remembered at most (the oldest go first). A pod the node
/// no longer has is forgotten at once ([`HostView::retain`]), but a sync the plugin
/// queued for it before may still read it; its name keeps that read the API server's
/// answer (NotFound) instead of a refusal. A queued sync runs within seconds, and a
/// node sees far fewer than this many pods go in that time.
pub const FORGOTTEN_NAMES_KEPT: usize = 4_096;

/// Pods whose handed claims are kept after they are forgotten, at most (the oldest go
/// first): a queued sync runs within seconds of the drop, and a node forgets far fewer
/// pods than this in that time. Each costs its claims, 8 bytes apiece.
pub const FORGOTTEN_CLAIMS_KEPT: usize = 64;

/// Digests of status reports in the index at most; past it the index starts over (it
/// is a hint, checked against each pod's own digest, so forgetting costs a parse).
const REPORT_DIGESTS_KEPT: usize = 65_536;

/// A pod's namespace, as the API server defaults it.
fn namespace_of(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

/// The digest of a status report's pod and status JSON (the pod's length first, so no
/// two pairs of texts run together into the same input).
fn report_digest(pod: &str, status: &str) -> u128 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&(pod.len() as u64).to_le_bytes());
    hasher.update(pod.as_bytes());
    hasher.update(status.as_bytes());
    hasher.digest128()
}

/// A SetPodStatus report read before any lock is taken ([`HostView::prepare_status`]):
/// parsed, or known by its digest as a repeat of a pod's last report.
#[derive(Debug)]
pub struct PreparedStatus {
    digest: u128,
    read: Read,
}

#[derive(Debug)]
enum Read {
    Parsed(Box<NodeReport>),
    /// The digest was this pod's last report when prepared (checked again on record).
    RepeatOf(String),
}

/// A report of the node's, read from a manager call's JSON: reading takes longer
/// than recording, so a caller reads before it takes any lock and records
/// ([`HostView::record`]) right before the plugin sees the call.
#[derive(Debug)]
pub struct NodeReport {
    /// The pod's UID; None when it has none (nothing is recorded then).
    uid: Option<String>,
    namespace: String,
    name: String,
    pod: Box<str>,
    /// None: the node terminated the pod.
    status: Option<ReportedStatus>,
}

#[derive(Debug)]
struct ReportedStatus {
    json: Box<str>,
    /// What the status says, read at once (see [`StatusClaims`]).
    read: ReadStatus,
}

/// What a reported status is read for when it comes.
#[derive(Debug, Default)]
struct ReadStatus {
    ips: Vec<String>,
    /// Its claims, as digests, and whether its phase is terminal.
    claims: Vec<ClaimDigest>,
    terminal: bool,
}

impl ReadStatus {
    /// `json`'s IPs and claims; None when it is not a JSON object. A status whose
    /// claims do not read (a field of the wrong type) gives its IPs and no claim: the
    /// plugin refuses it, and a write of it would not read either.
    fn of(json: &str) -> Option<Self> {
        let Ok(status) = StatusClaims::read(json) else {
            return Some(ReadStatus { ips: StatusIps::read(json)?.ips(), ..ReadStatus::default() });
        };
        Some(ReadStatus {
            ips: status.ips(),
            claims: status.claims().iter().map(Claim::digest).collect(),
            terminal: status.phase().is_some_and(is_terminal),
        })
    }
}

impl NodeReport {
    /// SetPodStatus's pod and status; None when either is not a JSON object (the
    /// plugin refuses it too). Only the pod's identity and the status's IPs and claims
    /// ([`StatusClaims`]) are read.
    pub fn status(pod: &str, status: &str) -> Option<Self> {
        let read = ReadStatus::of(status)?;
        let mut report = Self::termination(pod)?;
        report.status = Some(ReportedStatus { json: status.into(), read });
        Some(report)
    }

    /// TerminatePod's pod; None when it is not a JSON object.
    pub fn termination(pod: &str) -> Option<Self> {
        let metadata = PodReport::read(pod)?.metadata.unwrap_or_default();
        Some(NodeReport {
            uid: metadata.uid.map(Cow::into_owned),
            namespace: metadata.namespace.map_or_else(|| "default".to_owned(), Cow::into_owned),
            name: metadata.name.map(Cow::into_owned).unwrap_or_default(),
            pod: pod.into(),
            status: None,
        })
    }

    /// The report of a pod and status the caller holds as objects.
    fn of(pod: &Pod, status: Option<&PodStatus>) -> Self {
        let json = serde_json::to_string(pod).unwrap_or_default();
        let status = status.map(|status| {
            let json = serde_json::to_string(status).unwrap_or_default();
            let read = ReadStatus::of(&json).unwrap_or_default();
            ReportedStatus { json: json.into(), read }
        });
        NodeReport {
            uid: pod.metadata.uid.clone(),
            namespace: namespace_of(pod).to_owned(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            pod: json.into(),
            status,
        }
    }
}

/// What a report's pod is read for at once: whose it is, and its own status (the one a
/// termination stops when the node reported none before).
#[derive(Deserialize)]
struct PodReport<'a> {
    #[serde(default, borrow)]
    metadata: Option<PodIdentity<'a>>,
    #[serde(default, borrow)]
    status: Option<&'a RawValue>,
}

impl<'a> PodReport<'a> {
    /// `json`'s identity and status, if it is a JSON object (serde would take a list of
    /// the fields' values too, which no client sends for a pod).
    fn read(json: &'a str) -> Option<Self> {
        json.trim_start().starts_with('{').then(|| serde_json::from_str(json).ok()).flatten()
    }
}

/// The IPs a status carries, read without the rest of it: what a report whose checked
/// fields do not read as a status's still gives ([`ReadStatus::of`]); every other
/// report's IPs come from [`StatusClaims`], in the same pass as its claims.
#[derive(Deserialize)]
struct StatusIps<'a> {
    #[serde(default, borrow, rename = "podIP")]
    pod_ip: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "hostIP")]
    host_ip: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "podIPs")]
    pod_ips: Option<Vec<IpEntry<'a>>>,
    #[serde(default, borrow, rename = "hostIPs")]
    host_ips: Option<Vec<IpEntry<'a>>>,
}

#[derive(Deserialize)]
struct IpEntry<'a> {
    #[serde(default, borrow)]
    ip: Option<Cow<'a, str>>,
}

impl<'a> StatusIps<'a> {
    fn read(json: &'a str) -> Option<Self> {
        json.trim_start().starts_with('{').then(|| serde_json::from_str(json).ok()).flatten()
    }

    /// The IPs, as [`ips_of`] lists them.
    fn ips(self) -> Vec<String> {
        let singles = [self.pod_ip, self.host_ip].into_iter().flatten();
        let lists = self.pod_ips.into_iter().flatten().chain(self.host_ips.into_iter().flatten());
        singles.chain(lists.filter_map(|entry| entry.ip)).filter(|ip| !ip.is_empty()).map(Cow::into_owned).collect()
    }
}

/// The host's own view of the node's pods. Thread-safe; every method takes `&self`.
pub struct HostView {
    /// Asked with the host's copy of a pod and status, never the plugin's.
    deletion_safety: Arc<dyn DeletionSafety>,
    /// UID -> what the node reported.
    pods: RwLock<HashMap<String, Reported>>,
    /// Counts the changes of accepted records, so a check can look again at only those
    /// that changed since it last looked.
    changes: std::sync::atomic::AtomicU64,
    /// Digest of a pod's last status report -> its UID: the kubelet reports the same
    /// status over and over, and reading a pod and status again costs more than the
    /// plugin's answer to them ([`HostView::prepare_status`]).
    report_digests: RwLock<HashMap<u128, String>>,
    /// `(namespace, name)` of the pods [`HostView::retain`] forgot, newest last, at most
    /// [`FORGOTTEN_NAMES_KEPT`].
    forgotten_names: RwLock<VecDeque<(String, String)>>,
    /// The claims handed for the last [`FORGOTTEN_CLAIMS_KEPT`] pods forgotten, by UID,
    /// newest last: a sync queued before the pod was forgotten may still write it, held
    /// to what was handed (as the runtime's record keeps its phases).
    forgotten_claims: RwLock<VecDeque<(String, HandedClaims)>>,
    /// The node's pod manager, when the view shares its copies of the pods
    /// ([`HostView::sharing_pods_with`]).
    pod_manager: Option<Arc<PodManager>>,
}

impl HostView {
    /// An empty view whose "can a container of this pod still run" is `deletion_safety`'s
    /// answer for the node's own copy of the pod and status.
    pub fn new(deletion_safety: Arc<dyn DeletionSafety>) -> Self {
        HostView {
            deletion_safety,
            pods: RwLock::default(),
            changes: Default::default(),
            report_digests: RwLock::default(),
            forgotten_names: RwLock::default(),
            forgotten_claims: RwLock::default(),
            pod_manager: None,
        }
    }

    /// This view, pointing at `pods`' own copy of a reported pod when the node handed
    /// over exactly that copy's JSON (compared byte for byte), instead of keeping a
    /// second copy of the text (see `ReportedPod`): a fleet's view held each pod's JSON
    /// again (1.5 KB a pod).
    #[must_use]
    pub fn sharing_pods_with(mut self, pods: Arc<PodManager>) -> Self {
        self.pod_manager = Some(pods);
        self
    }

    /// The node reported `status` for `pod` (SetPodStatus), before the plugin sees it.
    pub fn report_status(&self, pod: &Pod, status: &PodStatus) {
        self.record(NodeReport::of(pod, Some(status)));
    }

    /// The node terminated `pod` (TerminatePod): every container of it is stopped.
    pub fn report_termination(&self, pod: &Pod) {
        self.record(NodeReport::of(pod, None));
    }

    /// Records a report parsed beforehand ([`NodeReport::status`],
    /// [`NodeReport::termination`]); returns the pod's UID, None when it has none.
    pub fn record(&self, report: NodeReport) -> Option<String> {
        self.record_digested(report, None)
    }

    /// Reads a SetPodStatus report before any lock is taken, as [`NodeReport::status`]
    /// does, unless its bytes digest to a pod's last status report: then it is not
    /// parsed, and [`HostView::record_prepared`] finds it has nothing new to record.
    /// None when it does not parse (the plugin refuses it too).
    pub fn prepare_status(&self, pod: &str, status: &str) -> Option<PreparedStatus> {
        let digest = report_digest(pod, status);
        let repeat_of = self.report_digests.read().unwrap_or_else(PoisonError::into_inner).get(&digest).cloned();
        let read = match repeat_of {
            Some(uid) => Read::RepeatOf(uid),
            None => Read::Parsed(Box::new(NodeReport::status(pod, status)?)),
        };
        Some(PreparedStatus { digest, read })
    }

    /// Records a report from [`HostView::prepare_status`] of `pod` and `status` (the
    /// same texts); returns the pod's UID. A repeat of the pod's last report, still its
    /// last, records nothing: the view already holds exactly that. One whose pod was
    /// reported otherwise since is read and recorded after all.
    pub fn record_prepared(&self, prepared: PreparedStatus, pod: &str, status: &str) -> Option<String> {
        let PreparedStatus { digest, read } = prepared;
        let report = match read {
            Read::Parsed(report) => *report,
            Read::RepeatOf(uid) if self.read(&uid, |reported| reported.report_digest == Some(digest)) => {
                return Some(uid);
            }
            Read::RepeatOf(_) => NodeReport::status(pod, status)?,
        };
        self.record_digested(report, Some(digest))
    }

    fn record_digested(&self, report: NodeReport, digest: Option<u128>) -> Option<String> {
        let NodeReport { uid, namespace, name, pod, status } = report;
        let uid = uid?;
        // The pod's own status, for a termination the node reported no status before.
        let own_status = || PodReport::read(&pod).and_then(|p| p.status).map_or("{}".into(), |s| s.get().into());
        let own_status: Option<Box<str>> = status.is_none().then(own_status);
        let pod = match self.pod_manager.as_ref().and_then(|pods| pods.get_any(&uid)) {
            Some(held) if held.json() == &*pod => ReportedPod::Held(Arc::downgrade(&held)),
            _ => ReportedPod::Own(pod),
        };
        let mut pods = self.pods.write().unwrap_or_else(PoisonError::into_inner);
        let entry = pods.entry(uid.clone()).or_default();
        let status = match status {
            Some(ReportedStatus { json, read }) => {
                for ip in &read.ips {
                    remember(&mut entry.ips, ip);
                }
                entry.claims.add_status(read.claims, read.terminal);
                LastStatus { json, stopped: false }
            }
            None => {
                entry.terminated = true;
                // The status the node reported last, else the pod's own (handed with the
                // pod: its claims are the host's too), all stopped.
                let json = match entry.status.take() {
                    Some(last) => last.json,
                    None => {
                        let own = own_status.unwrap_or_else(|| "{}".into());
                        if let Some(read) = ReadStatus::of(&own) {
                            entry.claims.add_status(read.claims, read.terminal);
                        }
                        own
                    }
                };
                entry.claims.add_termination();
                LastStatus { json, stopped: true }
            }
        };
        entry.status = Some(status);
        entry.pod = Some(pod);
        (entry.namespace, entry.name) = (namespace, name);
        let replaced = std::mem::replace(&mut entry.report_digest, digest);
        drop(pods);
        if replaced.is_some() || digest.is_some() {
            let mut digests = self.report_digests.write().unwrap_or_else(PoisonError::into_inner);
            if let Some(old) = replaced {
                digests.remove(&old);
            }
            if let Some(digest) = digest {
                if digests.len() >= REPORT_DIGESTS_KEPT {
                    digests.clear();
                }
                digests.insert(digest, uid.clone());
            }
        }
        Some(uid)
    }

    /// [`HostView::report_status`] for the JSON a manager call carries, prepared and
    /// recorded at once ([`HostView::prepare_status`]: a repeat is not parsed again);
    /// returns the pod's UID. JSON that does not parse is not recorded (the plugin
    /// refuses it too).
    pub fn report_status_json(&self, pod: &str, status: &str) -> Option<String> {
        let prepared = self.prepare_status(pod, status)?;
        self.record_prepared(prepared, pod, status)
    }

    /// [`HostView::report_termination`] for the JSON a manager call carries; returns
    /// the pod's UID.
    pub fn report_termination_json(&self, pod: &str) -> Option<String> {
        self.record(NodeReport::termination(pod)?)
    }

    /// The plugin accepted a change of the status of `uid` and now holds `accepted`.
    pub fn accept(&self, uid: &str, accepted: Accepted) {
        let mut pods = self.pods.write().unwrap_or_else(PoisonError::into_inner);
        let reported = pods.entry(uid.to_owned()).or_default();
        reported.accepted = Some(accepted);
        reported.accepted_at = self.next_change();
    }

    fn next_change(&self) -> u64 {
        self.changes.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }

    /// Where the record stands now: [`HostView::changed_since`] a mark names the
    /// accepted records that changed after it was taken.
    pub fn change_mark(&self) -> u64 {
        self.changes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The UIDs whose accepted record changed (or went) after `mark`.
    pub fn changed_since(&self, mark: u64) -> BTreeSet<String> {
        let pods = self.pods.read().unwrap_or_else(PoisonError::into_inner);
        pods.iter().filter(|(_, reported)| reported.accepted_at > mark).map(|(uid, _)| uid.clone()).collect()
    }

    /// The last status the plugin accepted for `uid`.
    pub fn accepted(&self, uid: &str) -> Option<Accepted> {
        self.read(uid, |reported| reported.accepted.clone())
    }

    /// The statuses the plugin accepted for which `differs` is true, by UID, among
    /// `only` (all when None): where a plugin's state disagrees with the host's record,
    /// which a swap and a recovery hold it against. Only those are copied out (the
    /// check may run while calls are held).
    pub fn accepted_records_where(
        &self,
        only: Option<&BTreeSet<String>>,
        mut differs: impl FnMut(&str, &Accepted) -> bool,
    ) -> Vec<AcceptedRecord> {
        let pods = self.pods.read().unwrap_or_else(PoisonError::into_inner);
        let entries: Box<dyn Iterator<Item = (&String, &Reported)>> = match only {
            Some(only) => Box::new(only.iter().filter_map(|uid| pods.get_key_value(uid))),
            None => Box::new(pods.iter()),
        };
        let mut records: Vec<AcceptedRecord> = entries
            .filter_map(|(uid, reported)| {
                let accepted = reported.accepted.as_ref().filter(|accepted| differs(uid, accepted))?.clone();
                Some(AcceptedRecord {
                    uid: uid.clone(),
                    accepted,
                    pod_name: reported.name.clone(),
                    pod_namespace: reported.namespace.clone(),
                    finished: reported.terminated,
                })
            })
            .collect();
        records.sort_unstable_by(|a, b| a.uid.cmp(&b.uid));
        records
    }

    /// The plugin dropped the status of `uid` as it should (the pod was deleted from
    /// the API server, or deleted and recreated): the record of it goes too.
    pub fn forget_accepted(&self, uid: &str) {
        if let Some(reported) = self.pods.write().unwrap_or_else(PoisonError::into_inner).get_mut(uid) {
            reported.accepted = None;
            reported.accepted_at = self.next_change();
        }
    }

    /// Whether the node ever reported the pod `uid` or the plugin accepted a status of
    /// it (and the view has not forgotten it since).
    pub fn knows(&self, uid: &str) -> bool {
        self.pods.read().unwrap_or_else(PoisonError::into_inner).contains_key(uid)
    }

    /// Whether the node reported a pod named `namespace/name`: one the view holds, or
    /// one of the last [`FORGOTTEN_NAMES_KEPT`] it forgot. Scans the view: asked only of
    /// a name the pod manager no longer holds.
    pub fn reported_name(&self, namespace: &str, name: &str) -> bool {
        let pods = self.pods.read().unwrap_or_else(PoisonError::into_inner);
        let held = pods
            .values()
            .any(|reported| reported.pod.is_some() && reported.name == name && reported.namespace == namespace);
        held || self
            .forgotten_names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|(ns, n)| ns == namespace && n == name)
    }

    /// Forgets every pod whose UID is not in `keep` (remembering the names of those
    /// the node had handed over, for [`HostView::reported_name`]).
    pub fn retain(&self, keep: &[String]) {
        let keep: std::collections::HashSet<&str> = keep.iter().map(String::as_str).collect();
        let (mut forgotten, mut claims) = (Vec::new(), Vec::new());
        self.pods.write().unwrap_or_else(PoisonError::into_inner).retain(|uid, reported| {
            let kept = keep.contains(uid.as_str());
            if !kept && reported.pod.is_some() {
                forgotten.push((std::mem::take(&mut reported.namespace), std::mem::take(&mut reported.name)));
            }
            if !kept {
                claims.push((uid.clone(), std::mem::take(&mut reported.claims)));
            }
            kept
        });
        if !claims.is_empty() {
            let mut kept = self.forgotten_claims.write().unwrap_or_else(PoisonError::into_inner);
            kept.extend(claims);
            let excess = kept.len().saturating_sub(FORGOTTEN_CLAIMS_KEPT);
            kept.drain(..excess);
        }
        if !forgotten.is_empty() {
            let mut names = self.forgotten_names.write().unwrap_or_else(PoisonError::into_inner);
            names.extend(forgotten);
            let excess = names.len().saturating_sub(FORGOTTEN_NAMES_KEPT);
            names.drain(..excess);
        }
        self.report_digests
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, uid| keep.contains(uid.as_str()));
    }

    /// The host changed the readiness of the container `container_id` of `uid`
    /// (SetContainerReadiness), before the plugin sees it: by ID, as upstream finds it
    /// in its cache, so a write may give the entry of that ID this readiness.
    pub fn report_readiness(&self, uid: &str, container_id: &str, ready: bool) {
        self.report_container(uid, |claims| claims.add_readiness(container_id, ready));
    }

    /// The host changed whether the container `container_id` of `uid` started
    /// (SetContainerStartup), before the plugin sees it.
    pub fn report_startup(&self, uid: &str, container_id: &str, started: bool) {
        self.report_container(uid, |claims| claims.add_startup(container_id, started));
    }

    /// Notes a change of a container of `uid`, a pod the node reported (upstream
    /// changes only a pod it caches).
    fn report_container(&self, uid: &str, note: impl FnOnce(&mut HandedClaims)) {
        if let Some(reported) = self.pods.write().unwrap_or_else(PoisonError::into_inner).get_mut(uid) {
            note(&mut reported.claims);
        }
    }

    /// The first claim of the status write `written` (a status, or a patch's
    /// `status`) of the pod `uid` that the host never handed for it: `Ok(None)` when it
    /// carries none, `Err` when it does not read as a status. `api` gives the API
    /// server's copies of the pod's status, taken one at a time and only while a claim
    /// is left that nothing handed allows (see [`crate::handed_claims`] for the rule).
    /// What was handed before the pod was last forgotten counts for a pod the view no
    /// longer holds (a sync planned before) and, `of_request`, for the sync of a request
    /// queued before, once the pod is handed again.
    pub fn unhanded_claim(
        &self,
        uid: &str,
        written: &str,
        of_request: bool,
        api: impl IntoIterator<Item = String>,
    ) -> Result<Option<String>, String> {
        let written = StatusClaims::read(written)?;
        let mut unhanded = written.claims();
        let held = match self.pods.read().unwrap_or_else(PoisonError::into_inner).get(uid) {
            Some(reported) => {
                reported.claims.retain_unhanded(&mut unhanded);
                true
            }
            None => false,
        };
        if !unhanded.is_empty() && (!held || of_request) {
            let forgotten = self.forgotten_claims.read().unwrap_or_else(PoisonError::into_inner);
            for (_, claims) in forgotten.iter().filter(|(forgotten, _)| forgotten == uid) {
                claims.retain_unhanded(&mut unhanded);
            }
        }
        // The API server's copies are read with no lock held: one may be a lookup.
        Ok(first_beyond(unhanded, api).map(|claim| claim.to_string()))
    }

    /// Whether the node reported `ip` as a pod or host IP of `uid`.
    pub fn reported_ip(&self, uid: &str, ip: &str) -> bool {
        self.read(uid, |reported| reported.ips.iter().any(|known| known == ip))
    }

    /// `Ok` when, by the node's own report, no container of `uid` can run any more:
    /// the deletion-safety backend asked with the node's last status for it (all
    /// containers terminated once the node terminated it) and the node's copy of the
    /// pod (`pod` when the node handed over none, or, in a view sharing the pod
    /// manager's pods, when the pod manager holds a newer copy than the one the node
    /// handed over: the pod the node holds now). A report that does not read as a pod
    /// and status counts as none.
    pub fn no_container_can_run(&self, uid: &str, pod: &Pod) -> Result<(), NotSafe> {
        let (reported_pod, status) = {
            let pods = self.pods.read().unwrap_or_else(PoisonError::into_inner);
            let Some(Reported { pod: reported_pod, status: Some(status), .. }) = pods.get(uid) else {
                return Err(NotSafe::Unreported);
            };
            let reported_pod =
                reported_pod.as_ref().and_then(ReportedPod::parse).transpose().map_err(|_| NotSafe::Unreported)?;
            let parsed: PodStatus = serde_json::from_str(&status.json).map_err(|_| NotSafe::Unreported)?;
            (reported_pod, if status.stopped { terminated(parsed) } else { parsed })
        };
        let pod = reported_pod.as_ref().unwrap_or(pod);
        if self.deletion_safety.pod_resources_are_reclaimed(pod, &status) {
            Ok(())
        } else {
            Err(NotSafe::ContainersMayRun)
        }
    }

    /// Bytes the view holds, for the memory account: every entry with the texts it
    /// keeps (the pod and status reported, the accepted status, names and IPs), the
    /// index of report digests and the names of forgotten pods.
    pub fn held_bytes(&self) -> usize {
        use std::mem::size_of;
        let pods: usize = self
            .pods
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(uid, reported)| {
                size_of::<(String, Reported)>()
                    + uid.len()
                    + reported.pod.as_ref().map_or(0, ReportedPod::held_bytes)
                    + reported.namespace.len()
                    + reported.name.len()
                    + reported.status.as_ref().map_or(0, |status| status.json.len())
                    + reported.ips.iter().map(|ip| size_of::<String>() + ip.len()).sum::<usize>()
                    + reported.claims.held_bytes()
                    + reported.accepted.as_ref().map_or(0, |accepted| accepted.status.len())
            })
            .sum();
        let digests: usize = self
            .report_digests
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|uid| size_of::<(u128, String)>() + uid.len())
            .sum();
        let forgotten: usize = self
            .forgotten_names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(namespace, name)| size_of::<(String, String)>() + namespace.len() + name.len())
            .sum();
        let forgotten_claims: usize = self
            .forgotten_claims
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(uid, claims)| size_of::<(String, HandedClaims)>() + uid.len() + claims.held_bytes())
            .sum();
        pods + digests + forgotten + forgotten_claims
    }

    /// How many pods the view holds.
    pub fn len(&self) -> usize {
        self.pods.read().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether the view holds no pod.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read<T: Default>(&self, uid: &str, f: impl FnOnce(&Reported) -> T) -> T {
        self.pods.read().unwrap_or_else(PoisonError::into_inner).get(uid).map(f).unwrap_or_default()
    }
}

impl std::fmt::Debug for HostView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostView").field("pods", &self.len()).finish_non_exhaustive()
    }
}

/// The pod and host IPs a status carries (empty ones left out).
pub fn ips_of(status: &PodStatus) -> impl Iterator<Item = &str> {
    let singles = [status.pod_ip.as_deref(), status.host_ip.as_deref()].into_iter().flatten();
    let pod_ips = status.pod_ips.iter().flatten().map(|ip| ip.ip.as_str());
    let host_ips = status.host_ips.iter().flatten().map(|ip| ip.ip.as_str());
    singles.chain(pod_ips).chain(host_ips).filter(|ip| !ip.is_empty())
}

fn remember(ips: &mut Vec<String>, ip: &str) {
    if ips.iter().any(|known| known == ip) {
        return;
    }
    if ips.len() == MAX_IPS_PER_POD {
        ips.remove(0);
    }
    ips.push(ip.to_owned());
}

/// `status` with every container that is not terminated marked terminated, as
/// TerminatePod does.
fn terminated(mut status: PodStatus) -> PodStatus {
    let stop = |c: &mut ContainerStatus| {
        if c.state.as_ref().is_none_or(|s| s.terminated.is_none()) {
            c.state = Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: 137,
                    reason: Some("ContainerStatusUnknown".into()),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
    };
    status.container_statuses.iter_mut().flatten().for_each(stop);
    status.init_container_statuses.iter_mut().flatten().for_each(stop);
    status.ephemeral_container_statuses.iter_mut().flatten().for_each(stop);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deletion_safety::{ContainersStopped, FixedDeletionSafety};
    use crate::testing;
    use serde_json::json;

    fn status(value: serde_json::Value) -> PodStatus {
        serde_json::from_value(value).expect("a status")
    }

    /// The account holds the texts the view keeps: the pod and status reported, the
    /// accepted status; a forgotten pod leaves only its name.
    #[test]
    fn held_bytes_count_the_texts_kept() {
        let view = HostView::new(Arc::new(ContainersStopped));
        assert_eq!(view.held_bytes(), 0);
        let pod = serde_json::to_string(&testing::pod("a", "ua").build()).expect("JSON");
        let status = r#"{"phase":"Running","podIP":"10.0.0.1"}"#;
        view.report_status_json(&pod, status);
        let reported = view.held_bytes();
        assert!(reported >= pod.len() + status.len() + "10.0.0.1".len(), "{reported}");
        view.accept("ua", Accepted { version: 1, status: status.into() });
        assert_eq!(view.held_bytes(), reported + status.len());
        view.retain(&[]);
        let forgotten = view.held_bytes();
        assert!(forgotten > 0 && forgotten < 200, "the name alone: {forgotten}");
    }

    /// A view sharing the pod manager's pods keeps its copy of a pod reported as the
    /// pod manager holds it (and counts it once, there), and its own of any other.
    #[test]
    fn a_pod_reported_as_the_pod_manager_holds_it_is_kept_once() {
        let pods = Arc::new(PodManager::new());
        let big = "x".repeat(2_000);
        pods.add_pod(testing::pod("a", "ua").annotations(&[("big", &big)]).build());
        let view = HostView::new(Arc::new(ContainersStopped)).sharing_pods_with(Arc::clone(&pods));
        let held = pods.get_any("ua").expect("held");
        let status = r#"{"phase":"Running"}"#;
        view.report_status_json(held.json(), status);
        let shared = view.held_bytes();
        assert!(shared < held.json().len(), "not a copy: {shared}");
        let mut other = testing::pod("a", "ua").build();
        other.metadata.labels = Some([("app".to_owned(), "x".to_owned())].into());
        let other = serde_json::to_string(&other).expect("JSON");
        view.report_status_json(&other, status);
        assert!(view.held_bytes() >= shared + other.len(), "its own copy");
        assert_eq!(view.no_container_can_run("ua", &testing::pod("a", "ua").build()), Ok(()), "its copy reads");
        // The pod manager moving on (a newer copy) lets the reported one go: the view
        // then reads the pod the node holds, the caller's.
        view.report_status_json(held.json(), status);
        assert_eq!(view.held_bytes(), shared);
        pods.remove_pod("ua");
        drop(held);
        assert_eq!(view.held_bytes(), shared, "nothing kept alive");
        assert_eq!(view.no_container_can_run("ua", &testing::pod("a", "ua").build()), Ok(()), "the caller's copy");
    }

    #[test]
    fn remembers_the_ips_the_node_reported() {
        let view = HostView::new(Arc::new(ContainersStopped));
        let pod = testing::pod("a", "ua").build();
        view.report_status(
            &pod,
            &status(json!({"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "hostIP": "192.168.0.1"})),
        );
        view.report_status(&pod, &status(json!({"podIP": "10.0.0.2"})));
        for ip in ["10.0.0.1", "fd00::1", "192.168.0.1", "10.0.0.2"] {
            assert!(view.reported_ip("ua", ip), "{ip}");
        }
        assert!(!view.reported_ip("ua", "10.9.9.9"));
        assert!(!view.reported_ip("ub", "10.0.0.1"), "another pod's IP");
        for i in 0..100 {
            view.report_status(&pod, &status(json!({"podIP": format!("10.1.0.{i}")})));
        }
        assert!(view.reported_ip("ua", "10.1.0.99"));
        assert!(!view.reported_ip("ua", "10.0.0.1"), "bounded: the oldest went");
    }

    /// A pod's last status report again in the same bytes is known by its digest and
    /// records nothing new; once the pod was reported otherwise (terminated, or
    /// forgotten), the same bytes are read and recorded again.
    #[test]
    fn a_repeated_status_report_is_known_by_its_digest_until_the_pod_is_reported_otherwise() {
        let view = HostView::new(Arc::new(ContainersStopped));
        let pod = serde_json::to_string(&testing::pod("a", "ua").build()).unwrap();
        let running = r#"{"podIP":"10.0.0.1","containerStatuses":[{"name":"c","state":{"running":{}}}]}"#;
        assert_eq!(view.report_status_json(&pod, running).as_deref(), Some("ua"));
        let repeat = view.prepare_status(&pod, running).expect("prepared");
        assert!(matches!(repeat.read, Read::RepeatOf(_)), "a repeat is not parsed");
        assert_eq!(view.record_prepared(repeat, &pod, running).as_deref(), Some("ua"));
        assert!(view.reported_ip("ua", "10.0.0.1"));
        let held: Pod = serde_json::from_str(&pod).unwrap();
        assert_eq!(view.no_container_can_run("ua", &held), Err(NotSafe::ContainersMayRun));

        // Terminated: the same status bytes again are news (the container runs again by
        // the node's word), so they are read and recorded.
        view.report_termination(&held);
        assert_eq!(view.no_container_can_run("ua", &held), Ok(()));
        assert_eq!(view.report_status_json(&pod, running).as_deref(), Some("ua"));
        assert_eq!(view.no_container_can_run("ua", &held), Err(NotSafe::ContainersMayRun));

        // Forgotten: the digest goes with the pod, and the report is recorded anew.
        view.retain(&[]);
        assert!(!view.knows("ua"));
        let after = view.prepare_status(&pod, running).expect("prepared");
        assert!(matches!(after.read, Read::Parsed(_)), "the digest went with the pod");
        assert_eq!(view.record_prepared(after, &pod, running).as_deref(), Some("ua"));
        assert!(view.knows("ua") && view.reported_ip("ua", "10.0.0.1"));
        assert_eq!(view.prepare_status("{", running).map(|p| matches!(p.read, Read::Parsed(_))), None, "not JSON");
    }

    /// The IPs read without parsing the status are the ones the parsed status carries,
    /// escapes and all; a report that reads as JSON but not as a status is recorded,
    /// and counts as no report where the status must be read whole.
    #[test]
    fn a_report_is_read_only_as_far_as_asked() {
        let text = r#"{"phase":"Running","hostIP":"192.168.0.1","hostIPs":[{"ip":"192.168.0.1"},{"ip":"fd00::\u0031"}],
            "podIP":"","podIPs":[{"ip":"10.0.0.1"},{}],"containerStatuses":[{"name":"c","ready":true}]}"#;
        let parsed: PodStatus = serde_json::from_str(text).unwrap();
        let typed: Vec<&str> = ips_of(&parsed).collect();
        assert_eq!(StatusIps::read(text).unwrap().ips(), typed);
        assert_eq!(StatusClaims::read(text).unwrap().ips(), typed);
        assert_eq!(typed, ["192.168.0.1", "10.0.0.1", "192.168.0.1", "fd00::1"]);

        let view = HostView::new(Arc::new(ContainersStopped));
        let pod = serde_json::to_string(&testing::pod("a", "ua").build()).unwrap();
        let odd = r#"{"podIP": "10.0.0.9", "containerStatuses": "none"}"#;
        assert_eq!(view.report_status_json(&pod, odd).as_deref(), Some("ua"));
        assert!(view.reported_ip("ua", "10.0.0.9"));
        let held: Pod = serde_json::from_str(&pod).unwrap();
        assert_eq!(view.no_container_can_run("ua", &held), Err(NotSafe::Unreported));
    }

    #[test]
    fn no_container_can_run_by_the_nodes_report_only() {
        let view = HostView::new(Arc::new(ContainersStopped));
        let pod = testing::pod("a", "ua").build();
        assert_eq!(view.no_container_can_run("ua", &pod), Err(NotSafe::Unreported));
        view.report_status(&pod, &status(json!({"containerStatuses": [{"name": "c", "state": {"running": {}}}]})));
        assert_eq!(view.no_container_can_run("ua", &pod), Err(NotSafe::ContainersMayRun));
        // The pod the plugin would show (all stopped) changes nothing.
        let mut claimed = pod.clone();
        claimed.status = Some(status(json!({"containerStatuses": []})));
        assert_eq!(view.no_container_can_run("ua", &claimed), Err(NotSafe::ContainersMayRun));
        view.report_termination(&pod);
        assert_eq!(view.no_container_can_run("ua", &pod), Ok(()));
        let fixed = Arc::new(FixedDeletionSafety::new(false));
        let view = HostView::new(fixed.clone());
        view.report_termination(&pod);
        assert_eq!(view.no_container_can_run("ua", &pod), Err(NotSafe::ContainersMayRun));
        fixed.set(true);
        assert_eq!(view.no_container_can_run("ua", &pod), Ok(()));
    }

    #[test]
    fn accepted_statuses_are_kept_until_the_pod_is_forgotten() {
        let view = HostView::new(Arc::new(ContainersStopped));
        view.accept("ua", Accepted { version: 1, status: "{}".into() });
        view.accept("ua", Accepted { version: 2, status: "{\"phase\":\"Running\"}".into() });
        view.accept("ub", Accepted { version: 1, status: "{}".into() });
        assert_eq!(view.accepted("ua").map(|a| a.version), Some(2));
        let uids: Vec<String> = view.accepted_records_where(None, |_, _| true).into_iter().map(|r| r.uid).collect();
        assert_eq!(uids, ["ua", "ub"]);
        let newer: Vec<String> =
            view.accepted_records_where(None, |_, a| a.version > 1).into_iter().map(|r| r.uid).collect();
        assert_eq!(newer, ["ua"]);
        let only_b = BTreeSet::from(["ub".to_string(), "unknown".to_string()]);
        let of_b: Vec<String> =
            view.accepted_records_where(Some(&only_b), |_, _| true).into_iter().map(|r| r.uid).collect();
        assert_eq!(of_b, ["ub"]);
        let mark = view.change_mark();
        assert!(view.changed_since(mark).is_empty());
        view.forget_accepted("ub");
        assert_eq!(view.changed_since(mark), BTreeSet::from(["ub".to_string()]), "a forgotten record changed");
        assert_eq!(view.accepted("ub"), None);
        assert!(view.knows("ub"), "the pod itself is still known");
        view.accept("ub", Accepted { version: 1, status: "{}".into() });
        view.retain(&["ub".to_string()]);
        assert_eq!(view.accepted("ua"), None);
        assert_eq!(view.len(), 1);
        assert!(format!("{view:?}").contains("pods: 1"));
    }

    #[test]
    fn an_accepted_record_names_its_pod_and_whether_the_node_terminated_it() {
        let view = HostView::new(Arc::new(ContainersStopped));
        let pod = testing::pod("a", "ua").build();
        view.report_status(&pod, &status(json!({"phase": "Running"})));
        view.accept("ua", Accepted { version: 1, status: "{}".into() });
        let record = view.accepted_records_where(None, |_, _| true).pop().expect("one record");
        assert_eq!((record.pod_name.as_str(), record.pod_namespace.as_str()), ("a", "ns"));
        assert!(!record.finished);
        view.report_termination(&pod);
        view.report_status(&pod, &status(json!({"phase": "Succeeded"})));
        assert!(
            view.accepted_records_where(None, |_, _| true)[0].finished,
            "a status after TerminatePod is finished too"
        );
        assert!(!view.knows("ub"));
        assert!(view.reported_name("ns", "a"));
        assert!(!view.reported_name("ns", "b"));
        assert!(!view.reported_name("other", "a"));
    }

    /// A sync the plugin queued before a pod was forgotten may still read it: the name
    /// outlives the pod's record, for the last [`FORGOTTEN_NAMES_KEPT`] pods forgotten.
    #[test]
    fn a_forgotten_pods_claims_hold_a_write_queued_before_it_was_forgotten() {
        let view = HostView::new(Arc::new(ContainersStopped));
        let pod = serde_json::to_string(&testing::pod("a", "ua").build()).unwrap();
        let ready = r#"{"conditions":[{"type":"Ready","status":"True"}]}"#;
        view.report_status_json(&pod, ready);
        assert_eq!(view.unhanded_claim("ua", ready, false, []), Ok(None));
        view.retain(&[]);
        assert!(!view.knows("ua"));
        assert_eq!(view.unhanded_claim("ua", ready, false, []), Ok(None), "handed before it was forgotten");
        view.report_status_json(&pod, "{}");
        assert!(view.unhanded_claim("ua", ready, false, []).unwrap().is_some(), "handed again: what is now");
        assert_eq!(view.unhanded_claim("ua", ready, true, []), Ok(None), "a request queued before the drop");
        view.retain(&[]);
        for i in 0..FORGOTTEN_CLAIMS_KEPT {
            let other = serde_json::to_string(&testing::pod("b", &format!("u{i}")).build()).unwrap();
            view.report_status_json(&other, "{}");
            view.retain(&[]);
        }
        let refused = view.unhanded_claim("ua", ready, true, []).unwrap();
        assert_eq!(refused.as_deref(), Some("condition \"Ready\" with status \"True\""), "bounded: the oldest went");
    }

    #[test]
    fn a_forgotten_pods_name_is_remembered_for_the_last_pods_forgotten() {
        let view = HostView::new(Arc::new(ContainersStopped));
        view.report_status(&testing::pod("a", "ua").build(), &Default::default());
        view.report_status(&testing::pod("b", "ub").build(), &Default::default());
        view.retain(&["ub".to_owned()]);
        assert!(!view.knows("ua"));
        assert!(view.reported_name("ns", "a"), "forgotten, its name remembered");
        assert!(view.reported_name("ns", "b"), "held");
        assert!(!view.reported_name("other", "a"));
        // The bound: once as many other pods are forgotten after it, its name goes.
        for i in 0..FORGOTTEN_NAMES_KEPT - 1 {
            let uid = format!("u{i}");
            view.report_status(&testing::pod(&format!("p{i}"), &uid).build(), &Default::default());
        }
        view.retain(&["ub".to_owned()]);
        assert!(view.reported_name("ns", "a"), "the oldest of exactly FORGOTTEN_NAMES_KEPT");
        view.report_status(&testing::pod("c", "uc").build(), &Default::default());
        view.retain(&["ub".to_owned()]);
        assert!(!view.reported_name("ns", "a"), "one past the bound");
        assert!(view.reported_name("ns", "c") && view.reported_name("ns", "p0"));
        assert_eq!(view.forgotten_names.read().unwrap().len(), FORGOTTEN_NAMES_KEPT);
    }

    #[test]
    fn a_report_parsed_beforehand_records_what_the_json_says() {
        let view = HostView::new(Arc::new(ContainersStopped));
        let pod = serde_json::to_string(&testing::pod("a", "ua").build()).unwrap();
        let running = r#"{"podIP": "10.0.0.7", "containerStatuses": [{"name": "c", "state": {"running": {}}}]}"#;
        let report = NodeReport::status(&pod, running).expect("parses");
        // Nothing is recorded until the report is.
        assert!(!view.reported_ip("ua", "10.0.0.7"));
        assert_eq!(view.record(report).as_deref(), Some("ua"));
        assert!(view.reported_ip("ua", "10.0.0.7"));
        let parsed = testing::pod("a", "ua").build();
        assert_eq!(view.no_container_can_run("ua", &parsed), Err(NotSafe::ContainersMayRun));
        assert_eq!(view.record(NodeReport::termination(&pod).expect("parses")).as_deref(), Some("ua"));
        assert_eq!(view.no_container_can_run("ua", &parsed), Ok(()));
        assert!(view.reported_ip("ua", "10.0.0.7"), "termination keeps what was reported");
        // What does not parse is no report; a pod without a UID is not recorded.
        assert!(NodeReport::status(&pod, "{not json").is_none());
        assert!(NodeReport::status("[]", running).is_none());
        assert!(NodeReport::termination("{").is_none());
        let anonymous = NodeReport::status(r#"{"metadata": {"name": "x"}}"#, running).expect("parses");
        assert_eq!(view.record(anonymous), None);
        assert_eq!(view.len(), 1);
    }
}
