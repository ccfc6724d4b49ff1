//! Random but valid traces, built from a model of a node: regular pods, static pods and
//! their mirror pods, pods recreated under a new UID, pods being deleted, realistic
//! statuses, a moving clock and a flaky API server.
//!
//! Every trace the generator makes is one `podstatus replay` accepts: each UID a step
//! names was introduced before (by the starting world or an earlier step), and every pod
//! and status is a valid core/v1 object. The same seed always makes the same trace.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value, json};

use podstatus_backends::rng::{Entropy, SplitMix64};
use podstatus_replay::{FailError, FailVerb, PodRef, Step, Trace};
use podstatus_runtime::bindings::Timestamp;

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Steps per trace (the fuzzer's quiescence steps come on top).
    pub steps: usize,
    /// Script interleavings too (`hold-api`, `complete-api`, `release-api`): for
    /// plugins whose syncs the host drives (contract 0.2.0).
    pub interleave: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig { steps: 40, interleave: false }
    }
}

/// The trace of `seed`: always the same for the same seed and config.
pub fn generate(seed: u64, config: &GenConfig) -> Trace {
    generate_with(&mut SplitMix64::new(seed), config)
}

/// A trace whose every choice comes from `entropy` (a PRNG, or a fuzzer's bytes).
pub fn generate_with(entropy: &mut dyn Entropy, config: &GenConfig) -> Trace {
    let mut generator = Generator::new(entropy);
    generator.interleave = config.interleave;
    generator.trace(config.steps)
}

const CONFIG_SOURCE: &str = "kubernetes.io/config.source";
const CONFIG_MIRROR: &str = "kubernetes.io/config.mirror";
const CONFIG_HASH: &str = "kubernetes.io/config.hash";
/// 2026-01-01T00:00:00Z, the replay's default clock.
const EPOCH_2026: i64 = 1_767_225_600;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Regular,
    Static,
    Mirror,
}

/// What the generator believes about one pod object (one UID). Beliefs about the API
/// server can be wrong (the plugin deletes pods): steps stay valid either way, since
/// a UID once introduced stays known.
#[derive(Clone, Debug)]
struct PodModel {
    uid: String,
    namespace: String,
    name: String,
    kind: Kind,
    init_containers: Vec<String>,
    containers: Vec<String>,
    restart_policy: Option<&'static str>,
    /// Regular pods: whether they carry `config.source: api`; mirror pods: whether they
    /// carry their static pod's `config.source: file` too.
    source_annotation: bool,
    hash: String,
    deletion_timestamp: Option<String>,
    in_api: bool,
    in_pod_manager: bool,
    /// Container name -> its current container ID and restart count.
    runtime: BTreeMap<String, (String, i32)>,
    /// The last status set for the pod, to repeat or nudge.
    last_status: Option<Value>,
}

struct Generator<'e> {
    r: &'e mut dyn Entropy,
    pods: Vec<PodModel>,
    /// The virtual clock, as the replay will have it at the step being generated.
    now_seconds: i64,
    now_nanos: u32,
    next_id: u32,
    next_container: u32,
    steps: Vec<Step>,
    /// See [`GenConfig::interleave`].
    interleave: bool,
}

const NAMESPACES: &[&str] = &["default", "kube-system", "web", "batch"];
const APPS: &[&str] = &["web", "api", "db", "cache", "worker", "kube-proxy", "etcd", "ingress"];
const CONTAINERS: &[&str] = &["app", "sidecar", "proxy", "logger", "metrics", "main"];
const INIT_CONTAINERS: &[&str] = &["init-db", "setup", "migrate", "wait-for-it"];
const IMAGES: &[&str] = &["nginx:1.27", "registry.k8s.io/pause:3.10", "busybox:1.36", "ghcr.io/acme/app:v2.3.1"];

impl<'e> Generator<'e> {
    fn new(r: &'e mut dyn Entropy) -> Self {
        Generator {
            r,
            pods: Vec::new(),
            now_seconds: 0,
            now_nanos: 0,
            next_id: 0,
            next_container: 0,
            steps: Vec::new(),
            interleave: false,
        }
    }

    fn trace(mut self, steps: usize) -> Trace {
        // The clock starts somewhere in 2026, sometimes at a fraction of a second.
        self.now_seconds = EPOCH_2026 + self.r.below(86_400 * 60) as i64;
        self.now_nanos = if self.r.chance(30) { self.r.below(1_000_000_000) as u32 } else { 0 };
        let clock = Timestamp { seconds: self.now_seconds, nanoseconds: self.now_nanos };

        let mut apiserver = Vec::new();
        let mut pod_manager = Vec::new();
        let logical = self.r.range(1, 4);
        for _ in 0..logical {
            self.initial_pod(&mut apiserver, &mut pod_manager);
        }
        let deletion_safe = self.r.chance(75);

        while self.steps.len() < steps {
            self.step();
        }
        self.steps.truncate(steps);
        Trace {
            clock,
            apiserver,
            pod_manager,
            deletion_safe,
            steps: self.steps,
            base_dir: std::path::PathBuf::from("."),
            guard_node: None,
        }
    }

    // ---- the starting world ----

    fn initial_pod(&mut self, apiserver: &mut Vec<Pod>, pod_manager: &mut Vec<Pod>) {
        let deleting = self.r.chance(10);
        if self.r.chance(60) {
            let mut pod = self.new_pod(Kind::Regular, None);
            if deleting {
                pod.deletion_timestamp = Some(self.past_time(true));
            }
            pod.in_api = self.r.chance(95);
            pod.in_pod_manager = !pod.in_api || self.r.chance(92);
            if pod.in_api {
                // Sometimes the API server already has a status from before.
                let status = if self.r.chance(30) { Some(self.status_for(&mut pod)) } else { None };
                apiserver.push(self.object(&pod, status.as_ref()));
            }
            if pod.in_pod_manager {
                pod_manager.push(self.object(&pod, None));
            }
            self.pods.push(pod);
        } else {
            let mut static_pod = self.new_pod(Kind::Static, None);
            static_pod.in_pod_manager = true;
            pod_manager.push(self.object(&static_pod, None));
            let static_index = self.pods.len();
            self.pods.push(static_pod);
            if self.r.chance(70) {
                let mut mirror = self.mirror_of(static_index);
                if deleting {
                    mirror.deletion_timestamp = Some(self.past_time(true));
                }
                mirror.in_api = true;
                mirror.in_pod_manager = self.r.chance(90);
                apiserver.push(self.object(&mirror, None));
                if mirror.in_pod_manager {
                    pod_manager.push(self.object(&mirror, None));
                }
                self.pods.push(mirror);
            }
        }
    }

    fn new_uid(&mut self) -> String {
        self.next_id += 1;
        format!("{:08x}-{:04}", self.r.next_u64() as u32, self.next_id)
    }

    fn new_pod(&mut self, kind: Kind, like: Option<&PodModel>) -> PodModel {
        let uid = self.new_uid();
        if let Some(like) = like {
            return PodModel {
                uid,
                kind,
                deletion_timestamp: None,
                in_api: false,
                in_pod_manager: false,
                runtime: BTreeMap::new(),
                last_status: None,
                ..like.clone()
            };
        }
        let namespace = if kind == Kind::Static { "kube-system" } else { *self.r.pick(NAMESPACES) };
        let name = format!("{}-{}", self.r.pick(APPS), self.next_id);
        let init_count = if self.r.chance(40) { self.r.range(1, 3) } else { 0 };
        let mut init_containers: Vec<String> = Vec::new();
        while (init_containers.len() as u64) < init_count {
            let name = self.r.pick(INIT_CONTAINERS).to_string();
            if !init_containers.contains(&name) {
                init_containers.push(name);
            }
        }
        let count = self.r.range(1, 3);
        let mut containers: Vec<String> = Vec::new();
        while (containers.len() as u64) < count {
            let name = self.r.pick(CONTAINERS).to_string();
            if !containers.contains(&name) {
                containers.push(name);
            }
        }
        let restart_policy = match self.r.below(4) {
            0 => None,
            1 => Some("OnFailure"),
            2 => Some("Never"),
            _ => Some("Always"),
        };
        PodModel {
            uid,
            namespace: namespace.to_string(),
            name,
            kind,
            init_containers,
            containers,
            restart_policy,
            source_annotation: self.r.chance(50),
            hash: format!("{:08x}", self.r.next_u64() as u32),
            deletion_timestamp: None,
            in_api: false,
            in_pod_manager: false,
            runtime: BTreeMap::new(),
            last_status: None,
        }
    }

    fn mirror_of(&mut self, static_index: usize) -> PodModel {
        let static_pod = self.pods[static_index].clone();
        let mut mirror = self.new_pod(Kind::Mirror, Some(&static_pod));
        mirror.source_annotation = self.r.chance(60);
        mirror
    }

    /// The full object of a pod, with `status` if given.
    fn object(&self, pod: &PodModel, status: Option<&Value>) -> Pod {
        serde_json::from_value(self.object_json(pod, status)).expect("generated pods are valid")
    }

    fn object_json(&self, pod: &PodModel, status: Option<&Value>) -> Value {
        let mut annotations = Map::new();
        match pod.kind {
            Kind::Regular => {
                if pod.source_annotation {
                    annotations.insert(CONFIG_SOURCE.into(), "api".into());
                }
            }
            Kind::Static => {
                annotations.insert(CONFIG_SOURCE.into(), "file".into());
                annotations.insert(CONFIG_HASH.into(), pod.hash.clone().into());
            }
            Kind::Mirror => {
                if pod.source_annotation {
                    annotations.insert(CONFIG_SOURCE.into(), "file".into());
                }
                annotations.insert(CONFIG_HASH.into(), pod.hash.clone().into());
                annotations.insert(CONFIG_MIRROR.into(), pod.hash.clone().into());
            }
        }
        let mut metadata = json!({
            "uid": pod.uid,
            "name": pod.name,
            "namespace": pod.namespace,
        });
        if !annotations.is_empty() {
            metadata["annotations"] = Value::Object(annotations);
        }
        if let Some(ts) = &pod.deletion_timestamp {
            metadata["deletionTimestamp"] = ts.clone().into();
            metadata["deletionGracePeriodSeconds"] = 30.into();
        }
        let container = |name: &String, i: usize| json!({ "name": name, "image": IMAGES[i % IMAGES.len()] });
        let mut spec = json!({
            "nodeName": "node-1",
            "containers": pod.containers.iter().enumerate().map(|(i, c)| container(c, i)).collect::<Vec<_>>(),
        });
        if !pod.init_containers.is_empty() {
            spec["initContainers"] =
                pod.init_containers.iter().enumerate().map(|(i, c)| container(c, i + 1)).collect::<Vec<_>>().into();
        }
        if let Some(policy) = pod.restart_policy {
            spec["restartPolicy"] = policy.into();
        }
        let mut object = json!({ "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec });
        if let Some(status) = status {
            object["status"] = status.clone();
        }
        object
    }

    // ---- steps ----

    fn push(&mut self, step: Step) {
        self.steps.push(step);
    }

    /// One of the pods for which `holds`, at random: its index; `None` (and nothing
    /// drawn) when there is none.
    fn pick_where(&mut self, holds: fn(&PodModel) -> bool) -> Option<usize> {
        let candidates: Vec<usize> = (0..self.pods.len()).filter(|&i| holds(&self.pods[i])).collect();
        if candidates.is_empty() {
            return None;
        }
        Some(*self.r.pick(&candidates))
    }

    /// The pod manager forgets pod `i`.
    fn pod_manager_remove(&mut self, i: usize) {
        self.pods[i].in_pod_manager = false;
        let uid = self.pods[i].uid.clone();
        self.push(Step::PodManagerRemove { uid });
    }

    /// Pod `i` is deleted from the API server.
    fn apiserver_delete(&mut self, i: usize) {
        self.pods[i].in_api = false;
        let (namespace, name) = (self.pods[i].namespace.clone(), self.pods[i].name.clone());
        self.push(Step::ApiserverDelete { namespace, name });
    }

    /// `pod` is written to the API server and, by `chance` in a hundred, added to the
    /// pod manager.
    fn put(&mut self, pod: &mut PodModel, chance: u64) {
        pod.in_api = true;
        let object = self.object(pod, None);
        self.push(Step::ApiserverPut { pod: object.clone() });
        if self.r.chance(chance) {
            pod.in_pod_manager = true;
            self.push(Step::PodManagerAdd { pod: object });
        }
    }

    fn step(&mut self) {
        // One step in five scripts an interleaving: calls are held for a while, some
        // made out of order (by pod), while the rest of the script goes on.
        if self.interleave && self.r.chance(20) {
            return self.interleaving();
        }
        const WEIGHTS: &[u64] = &[
            22, // set-pod-status
            10, // set-container-readiness
            4,  // terminate-pod
            3,  // remove-orphaned-statuses
            5,  // get-pod-status
            14, // sync
            10, // sync-batch
            8,  // advance-clock
            12, // the node's pods change
            7,  // fail
            3,  // set-deletion-safe
        ];
        match self.r.weighted(WEIGHTS) {
            0 => self.set_pod_status(),
            1 => self.set_container_readiness(),
            2 => self.terminate_pod(),
            3 => self.remove_orphaned_statuses(),
            4 => {
                let uid = self.any_uid();
                self.push(Step::GetPodStatus { uid });
            }
            5 => self.push(Step::Sync),
            6 => self.push(Step::SyncBatch),
            7 => self.advance_clock(),
            8 => self.world_event(),
            9 => self.fail(),
            _ => {
                let value = self.r.chance(70);
                self.push(Step::SetDeletionSafe { value });
            }
        }
    }

    fn interleaving(&mut self) {
        match self.r.weighted(&[2, 10, 2]) {
            0 => self.push(Step::HoldApi),
            1 => {
                let uid = self.r.chance(60).then(|| self.any_uid());
                self.push(Step::CompleteApi { uid });
            }
            _ => self.push(Step::ReleaseApi),
        }
    }

    fn any_uid(&mut self) -> String {
        let i = self.r.index(self.pods.len());
        self.pods[i].uid.clone()
    }

    /// A pod the kubelet would report a status for: a regular or static pod, usually
    /// one the pod manager holds.
    fn kubelet_pod(&mut self) -> Option<usize> {
        let candidates: Vec<usize> = (0..self.pods.len())
            .filter(|&i| self.pods[i].kind != Kind::Mirror && (self.pods[i].in_pod_manager || self.r.chance(15)))
            .collect();
        if candidates.is_empty() { None } else { Some(*self.r.pick(&candidates)) }
    }

    /// How a step names a pod: mostly by UID (the pod manager's copy), sometimes the
    /// full object as the kubelet holds it.
    fn pod_ref(&mut self, index: usize) -> PodRef {
        if self.r.chance(70) {
            PodRef::Uid(self.pods[index].uid.clone())
        } else {
            PodRef::Object(self.object_json(&self.pods[index], None).to_string())
        }
    }

    fn set_pod_status(&mut self) {
        let Some(i) = self.kubelet_pod() else { return self.push(Step::SyncBatch) };
        let status = match self.pods[i].last_status.clone() {
            // The same status again (a no-op), or the same with only sub-second changes.
            Some(last) if self.r.chance(12) => last,
            Some(last) if self.r.chance(10) => self.nudge_subseconds(last),
            _ => {
                let mut pod = self.pods[i].clone();
                let status = self.status_for(&mut pod);
                self.pods[i] = pod;
                status
            }
        };
        self.pods[i].last_status = Some(status.clone());
        let pod = self.pod_ref(i);
        self.push(Step::SetPodStatus { pod, status: status.to_string() });
    }

    fn set_container_readiness(&mut self) {
        let index = if self.r.chance(10) {
            // Any pod, mirror pods included: readiness by a mirror UID.
            self.r.index(self.pods.len())
        } else {
            match self.kubelet_pod() {
                Some(i) => i,
                None => return self.push(Step::Sync),
            }
        };
        let pod = &self.pods[index];
        let uid = pod.uid.clone();
        let ids: Vec<String> = pod.runtime.values().map(|(id, _)| id.clone()).collect();
        let container_id = if ids.is_empty() || self.r.chance(8) {
            format!("containerd://{:012x}", self.r.next_u64() & 0xffff_ffff_ffff)
        } else {
            self.r.pick(&ids).clone()
        };
        let ready = self.r.chance(60);
        self.push(Step::SetContainerReadiness { uid, container_id, ready });
    }

    fn terminate_pod(&mut self) {
        let Some(i) = self.kubelet_pod() else { return self.push(Step::Sync) };
        let pod = self.pod_ref(i);
        self.push(Step::TerminatePod { pod });
    }

    fn remove_orphaned_statuses(&mut self) {
        let mut keep: Vec<String> = Vec::new();
        for i in 0..self.pods.len() {
            let pod = &self.pods[i];
            let kept = match pod.kind {
                Kind::Mirror => self.r.chance(20),
                _ => pod.in_pod_manager && !self.r.chance(15),
            };
            if kept {
                keep.push(self.pods[i].uid.clone());
            }
        }
        self.push(Step::RemoveOrphanedStatuses { keep });
    }

    fn advance_clock(&mut self) {
        let ms = match self.r.below(5) {
            0 => self.r.below(1000),
            1 => 10_000,
            2 => self.r.range(1000, 15_000),
            3 => self.r.range(1, 120) * 1000,
            _ => self.r.range(1, 5000),
        };
        let total = u64::from(self.now_nanos) + (ms % 1000) * 1_000_000;
        self.now_seconds += (ms / 1000) as i64 + (total / 1_000_000_000) as i64;
        self.now_nanos = (total % 1_000_000_000) as u32;
        self.push(Step::AdvanceClock { ms });
    }

    fn fail(&mut self) {
        let verb = *self.r.pick(&[FailVerb::Get, FailVerb::Write, FailVerb::Delete, FailVerb::Any]);
        let error =
            *self.r.pick(&[FailError::NotFound, FailError::Conflict, FailError::Internal, FailError::Unavailable]);
        let times = [1, 1, 1, 1, 2, 2, 3][self.r.index(7)];
        self.push(Step::Fail { verb, error, times });
    }

    /// Something happens to the node's pods: a new pod, a recreated one, a deletion
    /// starting, an outside writer changing a status, a mirror pod appearing, the
    /// kubelet forgetting a pod.
    fn world_event(&mut self) {
        const EVENTS: &[u64] = &[
            3, // a new regular pod
            3, // a regular pod recreated under a new UID
            3, // a pod starts being deleted
            3, // an outside writer changes a pod's status
            2, // a static pod gets (or changes) its mirror pod
            2, // the kubelet forgets a pod
            2, // an outside writer deletes a pod
            1, // the pod manager re-adds a pod it knows
            1, // a new static pod
        ];
        match self.r.weighted(EVENTS) {
            0 => self.new_regular_pod(),
            1 => self.recreate(),
            2 => self.start_deletion(),
            3 => self.outside_status_write(),
            4 => self.new_mirror(),
            5 => match self.pick_where(|pod| pod.in_pod_manager) {
                None => self.push(Step::SyncBatch),
                Some(i) => self.pod_manager_remove(i),
            },
            6 => match self.pick_where(|pod| pod.in_api) {
                None => self.push(Step::SyncBatch),
                Some(i) => self.apiserver_delete(i),
            },
            7 => {
                let i = self.r.index(self.pods.len());
                self.pods[i].in_pod_manager = true;
                let pod = self.object(&self.pods[i], None);
                self.push(Step::PodManagerAdd { pod });
            }
            _ => {
                let mut pod = self.new_pod(Kind::Static, None);
                pod.in_pod_manager = true;
                let object = self.object(&pod, None);
                self.pods.push(pod);
                self.push(Step::PodManagerAdd { pod: object });
            }
        }
    }

    fn new_regular_pod(&mut self) {
        let mut pod = self.new_pod(Kind::Regular, None);
        pod.in_api = true;
        pod.in_pod_manager = true;
        let object = self.object(&pod, None);
        self.pods.push(pod);
        self.push(Step::ApiserverPut { pod: object.clone() });
        self.push(Step::PodManagerAdd { pod: object });
    }

    fn recreate(&mut self) {
        let candidates: Vec<usize> = (0..self.pods.len()).filter(|&i| self.pods[i].kind == Kind::Regular).collect();
        if candidates.is_empty() {
            return self.new_regular_pod();
        }
        let old = *self.r.pick(&candidates);
        if self.pods[old].in_api && self.r.chance(50) {
            self.apiserver_delete(old);
        }
        let old_model = self.pods[old].clone();
        let mut pod = self.new_pod(Kind::Regular, Some(&old_model));
        for other in self.pods.iter_mut().filter(|p| p.namespace == pod.namespace && p.name == pod.name) {
            other.in_api = false;
        }
        self.put(&mut pod, 80);
        if self.r.chance(50) && self.pods[old].in_pod_manager {
            self.pod_manager_remove(old);
        }
        self.pods.push(pod);
    }

    fn start_deletion(&mut self) {
        let candidates: Vec<usize> =
            (0..self.pods.len()).filter(|&i| self.pods[i].deletion_timestamp.is_none()).collect();
        if candidates.is_empty() {
            return self.push(Step::SyncBatch);
        }
        let i = *self.r.pick(&candidates);
        self.pods[i].deletion_timestamp = Some(self.now_text(false));
        let pod = self.pods[i].clone();
        if pod.kind == Kind::Static {
            // Only the kubelet knows a static pod: the deletion shows in its pod manager.
            self.pods[i].in_pod_manager = true;
            let object = self.object(&pod, None);
            return self.push(Step::PodManagerAdd { pod: object });
        }
        // The API server's copy (the pod manager follows it), keeping the status the
        // kubelet last reported when there is one, as a graceful deletion does.
        let status = if self.r.chance(70) { pod.last_status.clone() } else { None };
        self.pods[i].in_api = true;
        let object = self.object(&pod, status.as_ref());
        self.push(Step::ApiserverPut { pod: object });
    }

    fn outside_status_write(&mut self) {
        let candidates: Vec<usize> =
            (0..self.pods.len()).filter(|&i| self.pods[i].in_api && self.pods[i].kind != Kind::Static).collect();
        if candidates.is_empty() {
            return self.push(Step::Sync);
        }
        let i = *self.r.pick(&candidates);
        let mut pod = self.pods[i].clone();
        let status = match self.r.below(3) {
            0 => None,
            1 => pod.last_status.clone(),
            _ => Some(self.status_for(&mut pod)),
        };
        let object = self.object(&self.pods[i], status.as_ref());
        self.push(Step::ApiserverPut { pod: object });
    }

    fn new_mirror(&mut self) {
        let statics: Vec<usize> = (0..self.pods.len()).filter(|&i| self.pods[i].kind == Kind::Static).collect();
        if statics.is_empty() {
            return self.push(Step::Sync);
        }
        let s = *self.r.pick(&statics);
        let (namespace, name) = (self.pods[s].namespace.clone(), self.pods[s].name.clone());
        let old: Vec<usize> = (0..self.pods.len())
            .filter(|&i| {
                self.pods[i].kind == Kind::Mirror && self.pods[i].namespace == namespace && self.pods[i].name == name
            })
            .collect();
        for &o in &old {
            if self.pods[o].in_api {
                self.pods[o].in_api = false;
                self.push(Step::ApiserverDelete { namespace: namespace.clone(), name: name.clone() });
            }
            if self.pods[o].in_pod_manager && self.r.chance(70) {
                self.pod_manager_remove(o);
            }
        }
        let mut mirror = self.mirror_of(s);
        self.put(&mut mirror, 85);
        self.pods.push(mirror);
    }

    // ---- statuses ----

    /// A realistic status for `pod` now; restarts containers now and then (new IDs).
    fn status_for(&mut self, pod: &mut PodModel) -> Value {
        let phase = ["Pending", "Running", "Running", "Running", "Succeeded", "Failed", "Unknown"][self.r.index(7)];
        let mut status = Map::new();
        if !self.r.chance(3) {
            status.insert("phase".into(), phase.into());
        }

        let mut conditions = Vec::new();
        for condition in ["PodScheduled", "Initialized", "Ready"] {
            if self.r.chance(85) {
                conditions.push(self.condition(condition, phase));
            }
        }
        if self.r.chance(20) {
            self.shuffle(&mut conditions);
        }
        if !conditions.is_empty() || self.r.chance(30) {
            status.insert("conditions".into(), conditions.into());
        }
        if self.r.chance(80) {
            status.insert("hostIP".into(), "10.0.0.11".into());
        }
        if phase != "Pending" && self.r.chance(80) {
            status.insert("podIP".into(), format!("10.244.{}.{}", self.r.below(4), self.r.range(2, 250)).into());
        }
        if self.r.chance(70) {
            let fraction = self.r.chance(50);
            status.insert("startTime".into(), self.past_time(fraction).into());
        }
        if self.r.chance(50) {
            status.insert("qosClass".into(), (*self.r.pick(&["BestEffort", "Burstable", "Guaranteed"])).into());
        }
        if phase == "Failed" && self.r.chance(50) {
            status.insert("reason".into(), "Evicted".into());
            status.insert("message".into(), "The node was low on resource: memory.".into());
        }

        let init: Vec<String> = pod.init_containers.clone();
        let init_statuses = self.container_statuses(pod, &init, true, phase);
        if !init.is_empty() && (init_statuses.is_some() || self.r.chance(20)) {
            status.insert("initContainerStatuses".into(), init_statuses.unwrap_or_default().into());
        }
        let containers: Vec<String> = pod.containers.clone();
        match self.container_statuses(pod, &containers, false, phase) {
            Some(statuses) => {
                status.insert("containerStatuses".into(), statuses.into());
            }
            // Absent (nil) and empty differ for the Ready condition.
            None if self.r.chance(30) => {
                status.insert("containerStatuses".into(), Value::Array(Vec::new()));
            }
            None => {}
        }
        Value::Object(status)
    }

    fn condition(&mut self, type_: &str, phase: &str) -> Value {
        let status = match (type_, phase) {
            (_, "Unknown") => "Unknown",
            ("PodScheduled", _) => "True",
            (_, "Running") if self.r.chance(70) => "True",
            // The kubelet reports a finished pod not ready (reason PodCompleted); now
            // and then a status says otherwise.
            ("Ready", "Succeeded" | "Failed") if self.r.chance(90) => "False",
            _ => *self.r.pick(&["True", "False", "False", "Unknown"]),
        };
        let mut condition = json!({ "type": type_, "status": status });
        if self.r.chance(40) {
            condition["lastProbeTime"] = Value::Null;
        }
        if self.r.chance(50) {
            let fraction = self.r.chance(40);
            condition["lastTransitionTime"] = self.past_time(fraction).into();
        }
        if status == "False" && self.r.chance(50) {
            condition["reason"] = "ContainersNotReady".into();
            condition["message"] = "containers with unready status: [app]".into();
        }
        condition
    }

    /// Statuses for some of `names` (None: none at all), in spec order or shuffled.
    fn container_statuses(
        &mut self,
        pod: &mut PodModel,
        names: &[String],
        init: bool,
        phase: &str,
    ) -> Option<Vec<Value>> {
        if names.is_empty() || self.r.chance(12) {
            return None;
        }
        let mut statuses = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if self.r.chance(8) {
                continue;
            }
            let restart = self.r.chance(12);
            let entry = pod.runtime.entry(name.clone()).or_insert_with(|| (String::new(), 0));
            if entry.0.is_empty() || restart {
                if !entry.0.is_empty() {
                    entry.1 += 1;
                }
                self.next_container += 1;
                entry.0 = format!(
                    "containerd://{}-{}-{}",
                    pod.uid.split('-').next().unwrap_or("c"),
                    name,
                    self.next_container
                );
            }
            let (id, restarts) = entry.clone();
            statuses.push(self.container_status(name, &id, restarts, i, init, phase, names.len()));
        }
        if self.r.chance(30) {
            self.shuffle(&mut statuses);
        }
        Some(statuses)
    }

    #[allow(clippy::too_many_arguments)]
    fn container_status(
        &mut self,
        name: &str,
        id: &str,
        restarts: i32,
        index: usize,
        init: bool,
        phase: &str,
        containers: usize,
    ) -> Value {
        let state_kind = match (init, phase) {
            (true, "Running" | "Succeeded") if self.r.chance(80) => 2,
            (false, "Running") if self.r.chance(75) => 1,
            (false, "Succeeded" | "Failed") if self.r.chance(80) => 2,
            _ => self.r.below(3),
        };
        let state = match state_kind {
            0 => {
                let (reason, message) = *self.r.pick(&[
                    ("ContainerCreating", ""),
                    ("PodInitializing", ""),
                    ("CrashLoopBackOff", "back-off 10s restarting failed container"),
                    ("ImagePullBackOff", "Back-off pulling image \"ghcr.io/acme/app:v2.3.1\""),
                ]);
                let mut waiting = json!({ "reason": reason });
                if !message.is_empty() {
                    waiting["message"] = message.into();
                }
                json!({ "waiting": waiting })
            }
            1 => {
                let fraction = self.r.chance(50);
                json!({ "running": { "startedAt": self.past_time(fraction) } })
            }
            _ => json!({ "terminated": self.terminated(id, containers) }),
        };
        let ready = state_kind == 1 && self.r.chance(70);
        let mut status = json!({
            "name": name,
            "image": IMAGES[index % IMAGES.len()],
            "imageID": format!("docker-pullable://{}@sha256:{:016x}", IMAGES[index % IMAGES.len()], self.r.next_u64()),
            "containerID": id,
            "ready": ready,
            "restartCount": restarts,
            "state": state,
        });
        if restarts > 0 && self.r.chance(70) {
            status["lastState"] = json!({ "terminated": self.terminated(id, containers) });
        } else if self.r.chance(20) {
            status["lastState"] = json!({});
        }
        if !init && self.r.chance(30) {
            status["started"] = (state_kind == 1).into();
        }
        status
    }

    fn terminated(&mut self, id: &str, containers: usize) -> Value {
        let exit_code = *self.r.pick(&[0, 0, 0, 1, 137, 143]);
        let reason = match exit_code {
            0 => "Completed",
            137 => "OOMKilled",
            _ => "Error",
        };
        let fraction = self.r.chance(50);
        let started = self.past_time(fraction);
        let mut terminated = json!({
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": started,
            "finishedAt": self.past_time(fraction),
            "containerID": id,
        });
        if self.r.chance(35) {
            terminated["message"] = self.message(containers).into();
        }
        terminated
    }

    /// A termination message, sometimes longer than the container's share of the
    /// 12 KiB budget and with multi-byte characters around the cut.
    fn message(&mut self, containers: usize) -> String {
        if self.r.chance(70) {
            return (*self.r.pick(&["panic: runtime error", "done", "exit status 1", "Killed — out of memory"]))
                .to_string();
        }
        let budget = 12 * 1024 / containers.max(1);
        let len = match self.r.below(3) {
            0 => budget.saturating_sub(1),
            1 => budget + 1,
            _ => self.r.range(1, 9000) as usize,
        };
        let mut text = String::with_capacity(len + 4);
        let pieces = ["log line ", "é", "✓", "𝄞", "\n", "abc"];
        while text.len() < len {
            let piece = pieces[self.r.index(pieces.len())];
            text.push_str(piece);
        }
        text
    }

    /// The same status with every fractional time moved within its second (equal after
    /// normalisation).
    fn nudge_subseconds(&mut self, mut status: Value) -> Value {
        fn walk(value: &mut Value, r: &mut dyn Entropy) {
            match value {
                Value::Object(map) => {
                    for (key, v) in map.iter_mut() {
                        if let Value::String(text) = v
                            && (key.ends_with("Time") || key.ends_with("At"))
                            && let Ok(ts) = text.parse::<jiff::Timestamp>()
                            && let Ok(moved) = jiff::Timestamp::new(ts.as_second(), r.below(1_000_000_000) as i32)
                        {
                            *text = moved.to_string();
                        } else {
                            walk(v, r);
                        }
                    }
                }
                Value::Array(items) => items.iter_mut().for_each(|v| walk(v, r)),
                _ => {}
            }
        }
        walk(&mut status, self.r);
        status
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.r.index(i + 1);
            items.swap(i, j);
        }
    }

    /// A time up to ten minutes before now, at a fraction of a second if `fraction`.
    fn past_time(&mut self, fraction: bool) -> String {
        let seconds = self.now_seconds - self.r.below(600) as i64;
        let nanos = if fraction { self.r.below(1_000_000_000) as i32 } else { 0 };
        jiff::Timestamp::new(seconds, nanos).map(|t| t.to_string()).unwrap_or_default()
    }

    fn now_text(&mut self, fraction: bool) -> String {
        let nanos = if fraction { self.now_nanos as i32 } else { 0 };
        jiff::Timestamp::new(self.now_seconds, nanos).map(|t| t.to_string()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_trace_and_different_seeds_differ() {
        let config = GenConfig { steps: 30, ..GenConfig::default() };
        let a = generate(42, &config).to_value();
        let b = generate(42, &config).to_value();
        assert_eq!(a, b);
        assert_ne!(a, generate(43, &config).to_value());
        assert_eq!(a["steps"].as_array().unwrap().len(), 30);
    }

    #[test]
    fn generated_traces_parse_and_round_trip() {
        for seed in 0..200 {
            let trace = generate(seed, &GenConfig { steps: 50, ..GenConfig::default() });
            let doc = trace.to_value();
            let parsed = Trace::from_value(doc.clone()).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{doc:#}"));
            assert_eq!(parsed.to_value(), doc, "seed {seed}");
        }
    }

    #[test]
    fn the_generator_covers_the_interesting_shapes() {
        let mut ops = std::collections::BTreeSet::new();
        let mut statics = false;
        let mut mirrors = false;
        let mut deleting = false;
        for seed in 0..100 {
            let doc = generate(seed, &GenConfig { steps: 60, ..GenConfig::default() }).to_value();
            let text = doc.to_string();
            statics |= text.contains("\"kubernetes.io/config.source\":\"file\"");
            mirrors |= text.contains("kubernetes.io/config.mirror");
            deleting |= text.contains("deletionTimestamp");
            for step in doc["steps"].as_array().unwrap() {
                ops.insert(step["op"].as_str().unwrap().to_string());
            }
        }
        assert!(statics && mirrors && deleting);
        for op in [
            "set-pod-status",
            "set-container-readiness",
            "terminate-pod",
            "remove-orphaned-statuses",
            "get-pod-status",
            "sync",
            "sync-batch",
            "advance-clock",
            "pod-manager-add",
            "pod-manager-remove",
            "apiserver-put",
            "apiserver-delete",
            "fail",
            "set-deletion-safe",
        ] {
            assert!(ops.contains(op), "{op} never generated");
        }
    }
}
