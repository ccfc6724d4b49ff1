//! A hostile plugin of contract 0.2.1 that reaches for pods of its node whose status the
//! host never handed it. It holds statuses as an honest plugin would (each
//! `set-pod-status` is queued, its sync reads the pod and patches the status handed),
//! and the annotation `podstatus.test/attack` of the pod it was handed last picks what
//! else it does with the pod named by `podstatus.test/victim` (`namespace/name/uid`):
//!
//! - `unhanded-plan`: every plan (a request's, a batch's) adds a sync of the victim,
//!   which patches its phase to `Failed`;
//! - `ghost-state`: its state documents and change sets hold an invented status of the
//!   victim, and a batch plans a sync of every pod its state holds (the ghost too);
//! - `resize-only`: a pod named in `set-pod-resize-condition` is planned in every batch
//!   as if it were handed (the victim's resize makes it one);
//! - `forge-phase`: the sync of a handed pod patches its phase to `Failed`;
//! - `forge-ready`: the sync of a handed pod patches the status handed with a Ready
//!   condition `True` that no status handed carries (a pod claimed ready for traffic);
//! - `other-uid`: the sync of a handed pod patches it with the victim's UID as the UID
//!   precondition (a pod recreated under the name, say);
//! - `random`: with the annotation `podstatus.test/seed` (a number), every answer is
//!   drawn from a generator seeded by it: plans of any pod it has heard of
//!   (`podstatus.test/targets`, `namespace/name/uid` separated by spaces) or invented,
//!   calls on any of them with any UID precondition, phase and Ready condition, state documents and
//!   change sets holding any of them, cursors, outcomes. The hostile fuzzer's guest
//!   (`podstatus_fuzz::hostile`).
//!
//! Anything else (or no annotation) is honest. Asked for the resize conditions of the
//! pod `crash`, it answers what the contract forbids, so a test can fault it at will.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::{Value, json};

wit_bindgen::generate!({
    world: "status-manager",
    path: "../../../../wit/status@0.2.1",
});

use exports::kubelet::status::manager::{
    ApiCall, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, Guest, ManagerError, PodSync, ResizeCondition,
    SyncOrigin, SyncOutcome, SyncStep, UpdateOutcome,
};
use kubelet::status::api::{DeleteOptions, PodDeletion, PodName, StatusPatch, StatusUpdate};
use kubelet::status::types::SyncRequest;

const ATTACK: &str = "podstatus.test/attack";
const VICTIM: &str = "podstatus.test/victim";
const SEED: &str = "podstatus.test/seed";
const TARGETS: &str = "podstatus.test/targets";

/// A pod: namespace, name, UID.
#[derive(Clone, Debug, Default, PartialEq)]
struct PodRef {
    namespace: String,
    name: String,
    uid: String,
}

impl PodRef {
    fn parse(text: &str) -> Option<PodRef> {
        let mut parts = text.splitn(3, '/');
        let (namespace, name, uid) = (parts.next()?, parts.next()?, parts.next()?);
        Some(PodRef { namespace: namespace.into(), name: name.into(), uid: uid.into() })
    }
}

/// A status it holds, as the state format writes its entry.
#[derive(Clone, Debug)]
struct Held {
    pod: PodRef,
    version: u64,
    status: Value,
}

impl Held {
    fn entry(&self) -> Value {
        json!({
            "version": self.version, "status": self.status, "podName": self.pod.name,
            "podNamespace": self.pod.namespace, "podIsFinished": false,
        })
    }
}

#[derive(Default)]
struct Plugin {
    attack: String,
    victim: Option<PodRef>,
    /// Every pod it heard of: handed, targets, victims.
    known: Vec<PodRef>,
    held: BTreeMap<String, Held>,
    /// UIDs named in resize calls.
    resized: Vec<String>,
    /// UIDs whose entry changed since the last change set (`None`: removed).
    changed: BTreeMap<String, Option<Value>>,
    /// Live syncs: ID -> pod UID, and the pod read last.
    syncs: BTreeMap<u64, (String, Option<Value>)>,
    next_id: u64,
    rng: Option<u64>,
}

thread_local! {
    static PLUGIN: RefCell<Plugin> = RefCell::new(Plugin { next_id: 1, ..Plugin::default() });
}

fn with<T>(f: impl FnOnce(&mut Plugin) -> T) -> T {
    PLUGIN.with(|p| f(&mut p.borrow_mut()))
}

fn text<'a>(value: &'a Value, path: &str) -> &'a str {
    value.pointer(path).and_then(Value::as_str).unwrap_or_default()
}

const PHASES: [&str; 7] = ["Pending", "Running", "Succeeded", "Failed", "Unknown", "", "Hijacked"];
const OUTCOMES: [SyncOutcome; 8] = [
    SyncOutcome::UpToDate,
    SyncOutcome::PodNotFound,
    SyncOutcome::GetFailed,
    SyncOutcome::Recreated,
    SyncOutcome::WriteFailed,
    SyncOutcome::Written,
    SyncOutcome::Deleted,
    SyncOutcome::DeleteFailed,
];

impl Plugin {
    /// The next number of the generator (splitmix64); None when not random.
    fn draw(&mut self, below: u64) -> u64 {
        let Some(state) = &mut self.rng else { return 0 };
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % below.max(1)
    }

    fn random(&self) -> bool {
        self.rng.is_some()
    }

    /// Any pod it heard of, or an invented one.
    fn any_pod(&mut self) -> PodRef {
        let n = self.known.len() as u64;
        match self.draw(n + 2) {
            i if i < n => self.known[i as usize].clone(),
            i if i == n => PodRef { namespace: "ns".into(), name: "invented".into(), uid: "uid-invented".into() },
            _ => PodRef { namespace: "kube-system".into(), name: "etcd".into(), uid: "uid-etcd".into() },
        }
    }

    fn any_phase(&mut self) -> &'static str {
        PHASES[self.draw(PHASES.len() as u64) as usize]
    }

    fn know(&mut self, pod: PodRef) {
        if !pod.uid.is_empty() && !self.known.contains(&pod) {
            self.known.push(pod);
        }
    }

    fn note_pod(&mut self, pod: &Value) -> PodRef {
        let annotation =
            |key: &str| pod.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str);
        if let Some(attack) = annotation(ATTACK) {
            self.attack = attack.to_owned();
        }
        if let Some(victim) = annotation(VICTIM).and_then(PodRef::parse) {
            self.know(victim.clone());
            self.victim = Some(victim);
        }
        if let (Some(seed), None) = (annotation(SEED).and_then(|s| s.parse().ok()), self.rng) {
            self.rng = Some(seed);
        }
        for target in annotation(TARGETS).unwrap_or_default().split_whitespace().filter_map(PodRef::parse) {
            self.know(target);
        }
        let namespace = Some(text(pod, "/metadata/namespace")).filter(|ns| !ns.is_empty()).unwrap_or("default");
        let handed = PodRef {
            namespace: namespace.into(),
            name: text(pod, "/metadata/name").into(),
            uid: text(pod, "/metadata/uid").into(),
        };
        self.know(handed.clone());
        handed
    }

    fn hold(&mut self, pod: PodRef, status: Value) -> u64 {
        let version = self.held.get(&pod.uid).map_or(1, |held| held.version + 1);
        let held = Held { pod, version, status };
        self.changed.insert(held.pod.uid.clone(), Some(held.entry()));
        self.held.insert(held.pod.uid.clone(), held);
        version
    }

    fn ghost(&self) -> Option<Held> {
        let victim = self.victim.clone().filter(|_| self.attack == "ghost-state")?;
        Some(Held { pod: victim, version: 1, status: json!({"phase": "Failed", "message": "a ghost"}) })
    }

    fn plan(&mut self, uids: Vec<String>, origin: SyncOrigin) -> Vec<PodSync> {
        let mut syncs = Vec::new();
        for uid in uids {
            if syncs.iter().any(|s: &PodSync| s.pod_uid == uid) {
                continue;
            }
            let id = self.next_id;
            self.next_id += 1;
            self.syncs.insert(id, (uid.clone(), None));
            syncs.push(PodSync { id, pod_uid: uid, origin });
        }
        syncs
    }

    /// The pods a batch plans: those held, and what the attack adds.
    fn batch_pods(&mut self) -> Vec<String> {
        let mut uids: Vec<String> = self.held.keys().cloned().collect();
        match self.attack.as_str() {
            "unhanded-plan" | "ghost-state" => uids.extend(self.victim.iter().map(|v| v.uid.clone())),
            "resize-only" => uids.extend(self.resized.iter().cloned()),
            _ => {}
        }
        if self.random() {
            for _ in 0..self.draw(3) {
                let pod = self.any_pod();
                uids.push(pod.uid);
            }
        }
        uids
    }

    /// The pod a sync's UID names, as far as it knows it.
    fn pod_of(&self, uid: &str) -> PodRef {
        self.held
            .get(uid)
            .map(|h| h.pod.clone())
            .or_else(|| self.known.iter().find(|p| p.uid == uid).cloned())
            .unwrap_or(PodRef { namespace: "ns".into(), name: "unknown".into(), uid: uid.into() })
    }

    fn patch(pod: &PodRef, uid: Option<String>, status: Value) -> SyncStep {
        let patch = json!({ "status": status }).to_string();
        SyncStep::Call(ApiCall::PatchPodStatus(StatusPatch {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
            uid_precondition: uid,
            patch,
        }))
    }

    fn get(pod: &PodRef) -> SyncStep {
        SyncStep::Call(ApiCall::GetPod(PodName { namespace: pod.namespace.clone(), name: pod.name.clone() }))
    }

    /// A random step of a sync.
    fn random_step(&mut self, own: &PodRef) -> SyncStep {
        let pod = if self.draw(2) == 0 { own.clone() } else { self.any_pod() };
        let uid = match self.draw(4) {
            0 => None,
            1 => Some(pod.uid.clone()),
            2 => Some(own.uid.clone()),
            _ => Some(self.any_pod().uid),
        };
        match self.draw(6) {
            0 => Self::get(&pod),
            1 => {
                let phase = self.any_phase();
                let mut status = json!({ "phase": phase });
                if self.draw(2) == 0 {
                    let ready = ["True", "False"][self.draw(2) as usize];
                    status["conditions"] = json!([{ "type": "Ready", "status": ready }]);
                }
                Self::patch(&pod, uid, status)
            }
            2 => {
                let phase = self.any_phase();
                SyncStep::Call(ApiCall::UpdatePodStatus(StatusUpdate {
                    namespace: pod.namespace,
                    name: pod.name,
                    uid_precondition: uid,
                    resource_version_precondition: None,
                    status: json!({ "phase": phase, "podIP": "10.66.6.6" }).to_string(),
                }))
            }
            3 => SyncStep::Call(ApiCall::DeletePod(PodDeletion {
                namespace: pod.namespace,
                name: pod.name,
                options: DeleteOptions { uid_precondition: uid, grace_period_seconds: Some(0) },
            })),
            4 => {
                let status = self.held.get(&own.uid).map(|h| h.status.clone()).unwrap_or(json!({}));
                Self::patch(own, Some(own.uid.clone()), status)
            }
            _ => SyncStep::Done(OUTCOMES[self.draw(OUTCOMES.len() as u64) as usize]),
        }
    }

    /// The first step of the sync of `uid`.
    fn start(&mut self, id: u64) -> SyncStep {
        let Some((uid, _)) = self.syncs.get(&id).cloned() else { return SyncStep::Done(SyncOutcome::UpToDate) };
        let pod = self.pod_of(&uid);
        if self.random() {
            return self.random_step(&pod);
        }
        Self::get(&pod)
    }

    /// The step after `reply` of the sync `id`.
    fn resume(&mut self, id: u64, reply: ApiReply) -> SyncStep {
        let Some((uid, read)) = self.syncs.get(&id).cloned() else { return SyncStep::Done(SyncOutcome::UpToDate) };
        let pod = self.pod_of(&uid);
        if self.random() {
            return self.random_step(&pod);
        }
        if read.is_some() {
            // The write was answered.
            self.syncs.remove(&id);
            return SyncStep::Done(SyncOutcome::Written);
        }
        let ApiReply::Pod(Ok(found)) = reply else {
            self.syncs.remove(&id);
            return SyncStep::Done(SyncOutcome::GetFailed);
        };
        let found: Value = serde_json::from_str(&found).unwrap_or_default();
        let found_uid = text(&found, "/metadata/uid").to_owned();
        self.syncs.insert(id, (uid.clone(), Some(found)));
        let victim = self.victim.clone().unwrap_or_default();
        let status = self.held.get(&uid).map(|h| h.status.clone());
        let failed = json!({ "phase": "Failed", "reason": "Trespassed" });
        match (self.attack.as_str(), status) {
            (_, None) => Self::patch(&pod, Some(found_uid), failed),
            ("forge-phase", Some(_)) => Self::patch(&pod, Some(found_uid), failed),
            ("forge-ready", Some(mut status)) => {
                status["conditions"] = json!([{ "type": "Ready", "status": "True" }]);
                Self::patch(&pod, Some(found_uid), status)
            }
            ("other-uid", Some(status)) => Self::patch(&pod, Some(victim.uid), status),
            (_, Some(status)) => Self::patch(&pod, Some(found_uid), status),
        }
    }

    fn state(&mut self) -> Value {
        let mut statuses: serde_json::Map<String, Value> =
            self.held.iter().map(|(uid, held)| (uid.clone(), held.entry())).collect();
        if let Some(ghost) = self.ghost() {
            statuses.insert(ghost.pod.uid.clone(), ghost.entry());
        }
        if self.random() {
            for _ in 0..self.draw(3) {
                let pod = self.any_pod();
                let phase = self.any_phase();
                let entry = Held { pod, version: 1 + self.draw(5), status: json!({ "phase": phase }) };
                statuses.insert(entry.pod.uid.clone(), entry.entry());
            }
        }
        json!({
            "format": "podstatus.kubelet.io/state", "version": 2, "statuses": statuses,
            "apiStatusVersions": {}, "pending": {}, "nextRequestId": self.next_id,
        })
    }

    fn load(&mut self, statuses: Option<&serde_json::Map<String, Value>>) {
        for (uid, entry) in statuses.into_iter().flatten() {
            let Some(entry) = entry.as_object() else {
                self.held.remove(uid);
                continue;
            };
            let pod = PodRef {
                namespace: entry.get("podNamespace").and_then(Value::as_str).unwrap_or("default").into(),
                name: entry.get("podName").and_then(Value::as_str).unwrap_or_default().into(),
                uid: uid.clone(),
            };
            let version = entry.get("version").and_then(Value::as_u64).unwrap_or(1);
            let status = entry.get("status").cloned().unwrap_or(json!({}));
            self.know(pod.clone());
            self.held.insert(uid.clone(), Held { pod, version, status });
        }
    }
}

struct Trespasser;

impl Guest for Trespasser {
    fn get_pod_status(uid: String) -> Option<CachedStatus> {
        with(|p| p.held.get(&uid).map(|h| CachedStatus { version: h.version, status: h.status.to_string() }))
    }

    fn set_pod_status(pod: String, status: String) -> Result<UpdateOutcome, ManagerError> {
        let pod: Value = serde_json::from_str(&pod).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        let status: Value = serde_json::from_str(&status).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        with(|p| {
            let handed = p.note_pod(&pod);
            let mut uid = handed.uid.clone();
            if p.random() && p.draw(4) == 0 {
                uid = p.any_pod().uid;
            }
            if p.held.get(&handed.uid).is_some_and(|held| held.status == status) {
                return Ok(UpdateOutcome::Unchanged);
            }
            let version = p.hold(handed, status);
            let id = p.next_id;
            p.next_id += 1;
            let request = SyncRequest { id, pod_uid: uid, version };
            Ok(if kubelet::status::sync_queue::push(&request) {
                UpdateOutcome::Queued
            } else {
                UpdateOutcome::QueueFull
            })
        })
    }

    fn set_container_readiness(_: String, _: String, _: bool) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::NotCached)
    }

    fn set_container_startup(_: String, _: String, _: bool) -> Result<UpdateOutcome, ManagerError> {
        Ok(UpdateOutcome::NotCached)
    }

    fn terminate_pod(pod: String) -> Result<UpdateOutcome, ManagerError> {
        let pod: Value = serde_json::from_str(&pod).map_err(|e| ManagerError::InvalidPod(e.to_string()))?;
        with(|p| {
            p.note_pod(&pod);
        });
        Ok(UpdateOutcome::Unchanged)
    }

    fn remove_orphaned_statuses(keep: Vec<String>) -> u32 {
        with(|p| {
            let gone: Vec<String> = p.held.keys().filter(|uid| !keep.contains(uid)).cloned().collect();
            for uid in &gone {
                p.held.remove(uid);
                p.changed.insert(uid.clone(), None);
            }
            gone.len() as u32
        })
    }

    fn sync_pod(request: SyncRequest) -> Result<Vec<PodSync>, ManagerError> {
        with(|p| {
            let mut uids = vec![request.pod_uid];
            if p.attack == "unhanded-plan" {
                uids.extend(p.victim.iter().map(|v| v.uid.clone()));
            }
            if p.random() {
                for _ in 0..p.draw(3) {
                    let pod = p.any_pod();
                    uids.push(pod.uid);
                }
            }
            Ok(p.plan(uids, SyncOrigin::Request))
        })
    }

    fn sync_batch(slice: BatchSlice) -> BatchPlan {
        with(|p| {
            let report = BatchReport { synced: 0, reconciled: 0, failed: 0 };
            let mut uids = p.batch_pods();
            uids.retain(|uid| slice.after.as_ref().is_none_or(|after| uid > after));
            uids.sort();
            let next = match p.random() {
                true if p.draw(4) == 0 => Some(p.any_pod().uid),
                _ => None,
            };
            BatchPlan { report, syncs: p.plan(uids, SyncOrigin::Batch), next }
        })
    }

    fn start_sync(sync: u64) -> Result<SyncStep, ManagerError> {
        with(|p| match p.syncs.contains_key(&sync) {
            true => Ok(p.start(sync)),
            false => Err(ManagerError::UnknownSync(sync)),
        })
    }

    fn resume_sync(sync: u64, reply: ApiReply) -> Result<SyncStep, ManagerError> {
        with(|p| match p.syncs.contains_key(&sync) {
            true => {
                let step = p.resume(sync, reply);
                if matches!(step, SyncStep::Done(_)) {
                    p.syncs.remove(&sync);
                }
                Ok(step)
            }
            false => Err(ManagerError::UnknownSync(sync)),
        })
    }

    fn drop_sync(sync: u64) -> bool {
        with(|p| p.syncs.remove(&sync).is_some())
    }

    fn set_pod_resize_condition(
        pod_uid: String,
        _condition: ResizeCondition,
        _reason: String,
        _message: String,
        _observed_generation: i64,
    ) -> Result<(), ManagerError> {
        with(|p| {
            if !p.resized.contains(&pod_uid) {
                p.resized.push(pod_uid);
            }
        });
        Ok(())
    }

    fn clear_pod_resize_condition(pod_uid: String, _condition: ResizeCondition) -> Result<bool, ManagerError> {
        Ok(with(|p| p.resized.contains(&pod_uid)))
    }

    /// Asked about the pod `crash`, it answers what the contract does not allow: the host
    /// faults the instance (a test's way to make a supervisor restore it).
    fn get_pod_resize_conditions(pod_uid: String) -> Result<Vec<String>, ManagerError> {
        Ok(if pod_uid == "crash" { vec!["not a condition".into()] } else { Vec::new() })
    }

    fn save_state() -> String {
        with(|p| {
            p.changed.clear();
            p.state().to_string()
        })
    }

    fn load_state(state: String) -> Result<(), ManagerError> {
        let state: Value = serde_json::from_str(&state).map_err(|e| ManagerError::InvalidState(e.to_string()))?;
        with(|p| {
            p.held.clear();
            p.load(state.get("statuses").and_then(Value::as_object));
            p.next_id = p.next_id.max(state.get("nextRequestId").and_then(Value::as_u64).unwrap_or(1));
        });
        Ok(())
    }

    fn save_state_changes() -> String {
        with(|p| {
            let mut statuses: serde_json::Map<String, Value> = std::mem::take(&mut p.changed)
                .into_iter()
                .map(|(uid, entry)| (uid, entry.unwrap_or(Value::Null)))
                .collect();
            if let Some(ghost) = p.ghost() {
                statuses.insert(ghost.pod.uid.clone(), ghost.entry());
            }
            if p.random() && p.draw(3) == 0 {
                let pod = p.any_pod();
                let entry = Held { pod, version: 1, status: json!({ "phase": "Failed" }) };
                statuses.insert(entry.pod.uid.clone(), entry.entry());
            }
            json!({
                "format": "podstatus.kubelet.io/state-changes", "version": 2,
                "patch": { "statuses": statuses, "nextRequestId": p.next_id },
            })
            .to_string()
        })
    }

    fn apply_state_changes(changes: String) -> Result<(), ManagerError> {
        let changes: Value = serde_json::from_str(&changes).map_err(|e| ManagerError::InvalidState(e.to_string()))?;
        with(|p| {
            let statuses = changes.pointer("/patch/statuses").and_then(Value::as_object);
            p.load(statuses);
            // What it took is what changed, as its next change set says.
            for (uid, entry) in statuses.into_iter().flatten() {
                p.changed.insert(uid.clone(), Some(entry.clone()).filter(|e| !e.is_null()));
            }
        });
        Ok(())
    }
}

export!(Trespasser);
