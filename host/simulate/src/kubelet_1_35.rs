//! What a Kubernetes 1.35 kubelet and its users add to the simulated pods, so that a
//! plugin whose logic has in-place resize (logic v4) runs its new paths: pods carry a
//! `metadata.generation` that their owners bump when they resize them, some pods have
//! a sidecar (a restartable init container), resizes go through the plugin's resize
//! calls, and every status the simulated kubelet sets carries what 1.35's
//! `generateAPIPodStatus` puts there (PodReadyToStartContainers, each kubelet
//! condition's observedGeneration, the sidecar's status, the pod's resize conditions as
//! the plugin holds them).
//!
//! [`PodLife`] knows none of this: the driver asks [`Kubelet135`] to decorate the
//! manifests and statuses a life makes, and to take some steps of its own (an owner's
//! resize, the kubelet's answer to it, a sidecar's probe). Its draws come from a
//! generator of its own, so a run without it draws the same lives as before.
//!
//! Resizes patch the pod's spec through the API server's main resource with the new
//! generation: the embedded server keeps what its users write, where a real one bumps
//! the generation itself and takes resizes only through the `resize` subresource (such
//! a patch is refused there, logged, and the pod is not resized).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use serde::Serialize;
use serde_json::{Value, json};

use crate::owners::{OwnerError, Owners};
use podstatus_agent::metrics::TimedManager;
use podstatus_agent::node::{LifeStage as Stage, PodKind as Kind, PodLife};
use podstatus_backends::pod_identity::uid_of;
use podstatus_backends::rng::{Entropy, SplitMix64};
use podstatus_runtime::bindings::UpdateOutcome;
use podstatus_runtime::{CallError, ResizeCondition};

/// The sidecar's name: first among the init containers, as a service mesh's proxy is.
const SIDECAR: &str = "mesh";
/// The CPU request every simulated `app` container starts with.
const INITIAL_CPU: &str = "100m";
/// CPU requests an owner resizes to that the node can give.
const FEASIBLE_CPU: [&str; 3] = ["200m", "250m", "500m"];
/// A CPU request no simulated node can give: the kubelet finds it infeasible.
const INFEASIBLE_CPU: &str = "64";
/// Mixed into the run's seed for this generator's own draws.
const SEED_SALT: u64 = 0x1_35;

/// Where a pod's in-place resize stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resize {
    /// None asked for.
    Idle,
    /// The owner asked for one (at this generation); the kubelet has not answered.
    Asked(i64),
    /// PodResizePending, reason Deferred: it may fit later.
    Deferred,
    /// PodResizePending, reason Infeasible: it never will; the owner takes it back.
    Infeasible,
    /// The owner took back an infeasible resize (at this generation).
    Reverted(i64),
    /// PodResizeInProgress: admitted, being actuated.
    InProgress,
}

/// What one pod has beyond its [`PodLife`].
#[derive(Clone, Debug)]
struct Extras {
    sidecar: bool,
    sidecar_ready: bool,
    /// The generation the owner last wrote (1 at creation; 0 for static pods).
    generation: i64,
    /// The app container's CPU request in the spec.
    desired_cpu: String,
    /// The app container's CPU as the runtime has it (reported in its status).
    actual_cpu: String,
    resize: Resize,
}

impl Extras {
    fn none() -> Self {
        Extras {
            sidecar: false,
            sidecar_ready: false,
            generation: 0,
            desired_cpu: INITIAL_CPU.to_owned(),
            actual_cpu: INITIAL_CPU.to_owned(),
            resize: Resize::Idle,
        }
    }
}

/// What the new paths did over a run, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NewPaths {
    /// Pods created with a sidecar (a restartable init container).
    pub sidecar_pods: u64,
    /// Readiness probe results of sidecars handed to the plugin.
    pub sidecar_readiness: u64,
    /// Spec changes the owners made (each bumping the pod's generation).
    pub spec_changes: u64,
    /// Resize conditions set through the plugin, by `type/reason` (`type` alone
    /// without a reason).
    pub resize_conditions_set: BTreeMap<String, u64>,
    /// Resize conditions cleared through the plugin that it held.
    pub resize_conditions_cleared: u64,
    /// Resizes the kubelet finished (actuated).
    pub resizes_done: u64,
    /// Statuses set with the plugin's resize conditions in them.
    pub statuses_with_resize_conditions: u64,
    /// Pods in the API server at the end whose status has an `observedGeneration`.
    pub api_pods_with_observed_generation: u64,
    /// Pods in the API server at the end with a PodReadyToStartContainers condition.
    pub api_pods_ready_to_start_containers: u64,
    /// Pods in the API server at the end that report a sidecar's status.
    pub api_pods_with_sidecar_status: u64,
}

impl NewPaths {
    /// The summary table's rows for these counts.
    pub fn rows(&self) -> Vec<(String, String)> {
        let set: u64 = self.resize_conditions_set.values().sum();
        let by_kind = self.resize_conditions_set.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ");
        vec![
            ("sidecars".into(), format!("{} pods, {} readiness results", self.sidecar_pods, self.sidecar_readiness)),
            (
                "resizes".into(),
                format!(
                    "{} spec changes, {} done; conditions set {set} ({by_kind}), cleared {}; in {} statuses",
                    self.spec_changes,
                    self.resizes_done,
                    self.resize_conditions_cleared,
                    self.statuses_with_resize_conditions
                ),
            ),
            (
                "api pods (1.35)".into(),
                format!(
                    "observedGeneration {}, PodReadyToStartContainers {}, sidecar status {}",
                    self.api_pods_with_observed_generation,
                    self.api_pods_ready_to_start_containers,
                    self.api_pods_with_sidecar_status
                ),
            ),
        ]
    }

    /// Adds another node's counts to these (a fleet's summary).
    pub fn add(&mut self, other: &NewPaths) {
        self.sidecar_pods += other.sidecar_pods;
        self.sidecar_readiness += other.sidecar_readiness;
        self.spec_changes += other.spec_changes;
        for (kind, n) in &other.resize_conditions_set {
            *self.resize_conditions_set.entry(kind.clone()).or_default() += n;
        }
        self.resize_conditions_cleared += other.resize_conditions_cleared;
        self.resizes_done += other.resizes_done;
        self.statuses_with_resize_conditions += other.statuses_with_resize_conditions;
        self.api_pods_with_observed_generation += other.api_pods_with_observed_generation;
        self.api_pods_ready_to_start_containers += other.api_pods_ready_to_start_containers;
        self.api_pods_with_sidecar_status += other.api_pods_with_sidecar_status;
    }

    /// Counts, over the API server's pods at the end, those showing the new paths.
    pub fn count_api_pods<'a>(&mut self, pods: impl IntoIterator<Item = &'a Pod>) {
        for status in pods.into_iter().filter_map(|p| p.status.as_ref()) {
            if status.observed_generation.is_some_and(|g| g > 0) {
                self.api_pods_with_observed_generation += 1;
            }
            if status.conditions.iter().flatten().any(|c| c.type_ == "PodReadyToStartContainers") {
                self.api_pods_ready_to_start_containers += 1;
            }
            if status.init_container_statuses.iter().flatten().any(|c| c.name == SIDECAR) {
                self.api_pods_with_sidecar_status += 1;
            }
        }
    }
}

/// One call the kubelet's side made, for the driver to count.
pub enum Call {
    /// A status update (`set-pod-status`, `set-container-readiness`).
    Update(&'static str, Result<UpdateOutcome, CallError>),
    /// A resize call that failed.
    Failed(&'static str, CallError),
}

/// The 1.35 kubelet's additions over every pod of a run.
pub struct Kubelet135 {
    rng: SplitMix64,
    pods: Vec<Extras>,
    /// What happened so far.
    pub counts: NewPaths,
}

impl Kubelet135 {
    /// For a run with this seed.
    pub fn new(seed: u64) -> Self {
        Kubelet135 { rng: SplitMix64::new(seed ^ SEED_SALT), pods: Vec::new(), counts: NewPaths::default() }
    }

    /// Bytes its additions hold, one entry per pod slot, for the memory account.
    pub fn held_bytes(&self) -> usize {
        let texts: usize = self.pods.iter().map(|extras| extras.desired_cpu.len() + extras.actual_cpu.len()).sum();
        self.pods.len() * std::mem::size_of::<Extras>() + texts
    }

    /// The generator, as the lives' helpers (`chance`, `pick`) take it.
    fn rng(&mut self) -> &mut dyn Entropy {
        &mut self.rng
    }

    fn extras(&mut self, slot: usize) -> &mut Extras {
        if self.pods.len() <= slot {
            self.pods.resize_with(slot + 1, Extras::none);
        }
        &mut self.pods[slot]
    }

    /// The pod `life`'s owner creates: at generation 1, with a CPU request to resize,
    /// and for some pods a sidecar.
    pub fn manifest(&mut self, life: &PodLife, mut pod: Pod) -> Pod {
        let sidecar = life.kind != Kind::Static && self.rng().chance(40);
        *self.extras(life.slot) = Extras { sidecar, sidecar_ready: true, generation: 1, ..Extras::none() };
        pod.metadata.generation = Some(1);
        if let Some(spec) = pod.spec.as_mut() {
            if let Some(app) = spec.containers.first_mut() {
                app.resources = Some(cpu_request(INITIAL_CPU));
            }
            if sidecar {
                let mesh = serde_json::from_value(json!({
                    "name": SIDECAR,
                    "image": "registry.example/mesh:1.0",
                    "restartPolicy": "Always",
                    "readinessProbe": {"periodSeconds": 5, "tcpSocket": {"port": 15021}},
                }))
                .expect("the sidecar is a valid Container");
                spec.init_containers.get_or_insert_with(Vec::new).insert(0, mesh);
            }
        }
        pod
    }

    /// Whether the pod in `slot` was created with a sidecar (counted once it exists).
    pub fn created(&mut self, slot: usize) {
        if self.extras(slot).sidecar {
            self.counts.sidecar_pods += 1;
        }
    }

    /// `status` as a 1.35 kubelet generates it for `pod` (the pod manager's copy): the
    /// sidecar's status, PodReadyToStartContainers, the kubelet conditions'
    /// observedGeneration, the app's resources as actuated, and the resize conditions
    /// the plugin holds (asked of it, as upstream's `generateAPIPodStatus` does).
    pub fn status(
        &mut self,
        life: &PodLife,
        pod: &Pod,
        status: PodStatus,
        now: &str,
        handle: &TimedManager,
        calls: &mut Vec<Call>,
    ) -> PodStatus {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let resize = match handle.get_pod_resize_conditions(&uid) {
            Ok(conditions) => conditions,
            Err(e) => {
                calls.push(Call::Failed("get-pod-resize-conditions", e));
                Vec::new()
            }
        };
        let extras = self.extras(life.slot).clone();
        let mut status = decorate(life, &extras, pod.metadata.generation.unwrap_or(0), status, now);
        // The QoS class as the API server computed it from the spec at creation (the
        // kubelet computes the same): a CPU request makes the pod Burstable, and
        // kube-apiserver refuses a status that changes it (the field is immutable).
        if let Some(qos) = pod.status.as_ref().and_then(|s| s.qos_class.clone()) {
            status.qos_class = Some(qos);
        }
        let resize: Vec<PodCondition> = resize.iter().filter_map(|c| serde_json::from_str(c).ok()).collect();
        if !resize.is_empty() {
            self.counts.statuses_with_resize_conditions += 1;
            status.conditions.get_or_insert_with(Vec::new).extend(resize);
        }
        status
    }

    /// Maybe one step of the new paths for a running pod instead of its life's next
    /// event: the kubelet's answer to a resize it has seen, an owner's resize, a
    /// sidecar's probe. `None` leaves the turn to the life.
    pub fn step(
        &mut self,
        life: &PodLife,
        pod: &Pod,
        now: &str,
        handle: &TimedManager,
        owners: &dyn Owners,
    ) -> Option<Vec<Call>> {
        if life.kind == Kind::Static || life.stage != Stage::Running {
            return None;
        }
        let ctx = Ctx { life, pod, handle, owners };
        let seen = pod.metadata.generation.unwrap_or(0);
        let extras = self.extras(life.slot).clone();
        let mut calls = Vec::new();
        match extras.resize {
            // The kubelet acts once the watch brought the generation the owner wrote.
            Resize::Asked(generation) | Resize::Reverted(generation) if seen < generation => return None,
            Resize::Asked(_) => self.admit(&ctx, &mut calls),
            Resize::Reverted(_) => {
                self.clear(&ctx, ResizeCondition::Pending, &mut calls);
                self.extras(life.slot).resize = Resize::Idle;
            }
            Resize::Deferred if self.rng().chance(50) => {
                self.clear(&ctx, ResizeCondition::Pending, &mut calls);
                self.set(&ctx, ResizeCondition::InProgress, "", "", &mut calls);
                self.extras(life.slot).resize = Resize::InProgress;
            }
            Resize::Infeasible if self.rng().chance(50) => {
                self.change_spec(&ctx, &extras.actual_cpu, Resize::Reverted);
                return Some(calls);
            }
            Resize::InProgress if self.rng().chance(15) => {
                let message = "the runtime failed to update the container's resources";
                self.set(&ctx, ResizeCondition::InProgress, "Error", message, &mut calls);
            }
            Resize::InProgress => {
                self.clear(&ctx, ResizeCondition::InProgress, &mut calls);
                let extras = self.extras(life.slot);
                extras.actual_cpu = extras.desired_cpu.clone();
                extras.resize = Resize::Idle;
                self.counts.resizes_done += 1;
            }
            Resize::Idle if self.rng().chance(12) => {
                let cpu = if self.rng().chance(20) { INFEASIBLE_CPU } else { *self.rng().pick(&FEASIBLE_CPU) };
                self.change_spec(&ctx, cpu, Resize::Asked);
                return Some(calls);
            }
            Resize::Idle | Resize::Deferred | Resize::Infeasible if extras.sidecar && self.rng().chance(10) => {
                let ready = !extras.sidecar_ready;
                self.extras(life.slot).sidecar_ready = ready;
                let outcome = handle.set_container_readiness(uid_of(pod), &sidecar_id(&life.name()), ready);
                calls.push(Call::Update("set-container-readiness", outcome));
                self.counts.sidecar_readiness += 1;
                return Some(calls);
            }
            Resize::Idle | Resize::Deferred | Resize::Infeasible => return None,
        }
        // As the pod worker syncs after the resize moved: the status, with the plugin's
        // resize conditions in it.
        let status = self.status(life, pod, life.status(now), now, handle, &mut calls);
        let pod_json = serde_json::to_string(pod).unwrap_or_default();
        let status_json = serde_json::to_string(&status).unwrap_or_default();
        calls.push(Call::Update("set-pod-status", handle.set_pod_status(&pod_json, &status_json)));
        Some(calls)
    }

    /// The kubelet's answer to a resize it has just seen: infeasible, deferred, or
    /// admitted and in progress.
    fn admit(&mut self, ctx: &Ctx<'_>, calls: &mut Vec<Call>) {
        let desired = self.extras(ctx.life.slot).desired_cpu.clone();
        let next = if desired == INFEASIBLE_CPU {
            let message = format!("Node didn't have enough capacity: cpu, requested: {desired}, capacity: 4");
            self.set(ctx, ResizeCondition::Pending, "Infeasible", &message, calls);
            Resize::Infeasible
        } else if self.rng().chance(30) {
            self.set(ctx, ResizeCondition::Pending, "Deferred", "Node didn't have enough resource: cpu", calls);
            Resize::Deferred
        } else {
            self.set(ctx, ResizeCondition::InProgress, "", "", calls);
            Resize::InProgress
        };
        self.extras(ctx.life.slot).resize = next;
    }

    /// Sets a resize condition through the plugin, at the pod's generation.
    fn set(&mut self, ctx: &Ctx<'_>, condition: ResizeCondition, reason: &str, message: &str, calls: &mut Vec<Call>) {
        let (uid, generation) = (uid_of(ctx.pod), ctx.pod.metadata.generation.unwrap_or(0));
        match ctx.handle.set_pod_resize_condition(uid, condition, reason, message, generation) {
            Ok(()) => {
                let name = condition_type(condition);
                let key = if reason.is_empty() { name.to_owned() } else { format!("{name}/{reason}") };
                *self.counts.resize_conditions_set.entry(key).or_default() += 1;
            }
            Err(e) => calls.push(Call::Failed("set-pod-resize-condition", e)),
        }
    }

    /// Clears a resize condition through the plugin.
    fn clear(&mut self, ctx: &Ctx<'_>, condition: ResizeCondition, calls: &mut Vec<Call>) {
        match ctx.handle.clear_pod_resize_condition(uid_of(ctx.pod), condition) {
            Ok(true) => self.counts.resize_conditions_cleared += 1,
            Ok(false) => {}
            Err(e) => calls.push(Call::Failed("clear-pod-resize-condition", e)),
        }
    }

    /// The owner sets the app container's CPU request to `cpu` (a spec change: the
    /// generation moves); `next` is the resize's stage once the API server took it.
    fn change_spec(&mut self, ctx: &Ctx<'_>, cpu: &str, next: fn(i64) -> Resize) {
        let generation = ctx.pod.metadata.generation.unwrap_or(0).max(self.extras(ctx.life.slot).generation) + 1;
        let Some(spec) = ctx.pod.spec.as_ref() else { return };
        let mut containers = spec.containers.clone();
        if let Some(app) = containers.first_mut() {
            app.resources = Some(cpu_request(cpu));
        }
        let patch = json!({
            "metadata": {"uid": uid_of(ctx.pod), "generation": generation},
            "spec": {"containers": containers},
        });
        let namespace = ctx.pod.metadata.namespace.as_deref().unwrap_or_default();
        match ctx.owners.patch(namespace, &ctx.life.name(), &patch) {
            Ok(()) => {
                let extras = self.extras(ctx.life.slot);
                extras.generation = generation;
                extras.desired_cpu = cpu.to_owned();
                extras.resize = next(generation);
                self.counts.spec_changes += 1;
            }
            Err(e) => log_owner_error(&ctx.life.name(), &e),
        }
    }
}

/// What one step works on.
struct Ctx<'a> {
    life: &'a PodLife,
    pod: &'a Pod,
    handle: &'a TimedManager,
    owners: &'a dyn Owners,
}

fn log_owner_error(pod: &str, error: &OwnerError) {
    tracing::warn!(pod, "resizing: {error}");
}

fn condition_type(condition: ResizeCondition) -> &'static str {
    match condition {
        ResizeCondition::Pending => "PodResizePending",
        ResizeCondition::InProgress => "PodResizeInProgress",
    }
}

/// `status` with what a 1.35 kubelet generates beyond what `life` knows, for a pod at
/// `generation`.
fn decorate(life: &PodLife, extras: &Extras, generation: i64, status: PodStatus, now: &str) -> PodStatus {
    let mut value = serde_json::to_value(&status).unwrap_or_default();
    let running = matches!(life.stage, Stage::Initializing | Stage::Running);
    if extras.sidecar {
        let sidecar_ready = running && extras.sidecar_ready;
        let id = sidecar_id(&life.name());
        let state = match life.stage {
            Stage::Created | Stage::Pending => json!({"waiting": {"reason": "PodInitializing"}}),
            // After the regular containers: SIGTERM, as the kubelet stops a sidecar.
            Stage::Terminated => json!({"terminated": {"exitCode": 143, "reason": "Error", "containerID": id}}),
            Stage::Finished | Stage::DeleteRequested | Stage::Gone => {
                json!({"terminated": {"exitCode": 0, "reason": "Completed", "containerID": id}})
            }
            Stage::Initializing | Stage::Running => json!({"running": {}}),
        };
        let mut mesh = json!({
            "name": SIDECAR,
            "image": "registry.example/mesh:1.0",
            "imageID": "registry.example/mesh@sha256:0",
            "ready": sidecar_ready,
            "restartCount": 0,
            "started": running,
            "state": state,
        });
        if !matches!(life.stage, Stage::Created | Stage::Pending) {
            mesh["containerID"] = json!(id);
        }
        let inits = value.as_object_mut().and_then(|o| {
            o.entry("initContainerStatuses").or_insert_with(|| json!([])).as_array_mut().map(std::mem::take)
        });
        let mut all = vec![mesh];
        all.extend(inits.unwrap_or_default());
        value["initContainerStatuses"] = Value::Array(all);
        // The pod is ready only with its sidecar ready; it is initialized once the
        // sidecar started (with no other init container, the life knows neither).
        if let Some(conditions) = value["conditions"].as_array_mut() {
            for c in conditions.iter_mut() {
                let kind = c["type"].as_str().unwrap_or_default().to_owned();
                if (kind == "Ready" || kind == "ContainersReady") && !sidecar_ready {
                    c["status"] = json!("False");
                }
                if kind == "Initialized" && matches!(life.stage, Stage::Created | Stage::Pending) {
                    c["status"] = json!("False");
                }
            }
        }
    }
    if let Some(app) = value["containerStatuses"].as_array_mut().and_then(|c| c.first_mut()) {
        let cpu = extras.actual_cpu.clone();
        if running && life.kind != Kind::Static {
            app["allocatedResources"] = json!({"cpu": cpu});
            app["resources"] = json!({"requests": {"cpu": cpu}});
        }
    }
    // The sandbox is up from the first start to the end of the containers.
    let sandbox = running || life.stage == Stage::Finished;
    let ready_to_start = json!({
        "type": "PodReadyToStartContainers",
        "status": if sandbox { "True" } else { "False" },
        "lastProbeTime": null,
        "lastTransitionTime": now,
    });
    if let Some(conditions) = value["conditions"].as_array_mut() {
        conditions.insert(0, ready_to_start);
        if generation > 0 {
            for c in conditions.iter_mut() {
                c["observedGeneration"] = json!(generation);
            }
        }
    }
    serde_json::from_value(value).unwrap_or(status)
}

/// `resources` asking for `cpu`.
fn cpu_request(cpu: &str) -> k8s_openapi::api::core::v1::ResourceRequirements {
    serde_json::from_value(json!({"requests": {"cpu": cpu}})).expect("valid resources")
}

/// The sidecar's runtime ID in a pod named `pod`.
fn sidecar_id(pod: &str) -> String {
    format!("containerd://{pod}-{SIDECAR}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";

    /// A service with one init container and one app container, at the stage `steps`
    /// advances give (1: Pending, 2: Initializing, 3: Running).
    fn life(steps: usize) -> PodLife {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "sim", "uid": "u1"},
            "spec": {"restartPolicy": "Always", "initContainers": [{"name": "init", "image": "init:1"}],
                     "containers": [{"name": "app", "image": "app:1"}]}
        }))
        .unwrap();
        let mut life = PodLife::of_pod(&pod, 0);
        for _ in 0..steps {
            life.advance(NOW);
        }
        if steps >= 3 {
            life.set_ready(0, true);
        }
        life
    }

    fn extras(sidecar_ready: bool) -> Extras {
        Extras { sidecar: true, sidecar_ready, generation: 3, ..Extras::none() }
    }

    fn condition<'a>(status: &'a PodStatus, kind: &str) -> &'a PodCondition {
        status.conditions.iter().flatten().find(|c| c.type_ == kind).unwrap_or_else(|| panic!("{kind}: {status:?}"))
    }

    #[test]
    fn the_sidecar_comes_first_among_the_init_statuses_and_holds_the_pod_ready() {
        let running = life(3);
        let ready = decorate(&running, &extras(true), 3, running.status(NOW), NOW);
        let inits = ready.init_container_statuses.as_ref().unwrap();
        assert_eq!(inits.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), [SIDECAR, "init"], "spec order");
        assert_eq!((inits[0].started, inits[0].ready), (Some(true), true));
        assert_eq!(inits[0].container_id.as_deref(), Some("containerd://web-mesh"));
        assert_eq!(condition(&ready, "Ready").status, "True");

        let unready = decorate(&running, &extras(false), 3, running.status(NOW), NOW);
        assert!(!unready.init_container_statuses.as_ref().unwrap()[0].ready);
        assert_eq!(condition(&unready, "Ready").status, "False", "a sidecar not ready holds the pod");
        assert_eq!(condition(&unready, "ContainersReady").status, "False");

        let pending = life(1);
        let waiting = decorate(&pending, &extras(true), 3, pending.status(NOW), NOW);
        let mesh = &waiting.init_container_statuses.as_ref().unwrap()[0];
        assert_eq!((mesh.started, mesh.ready, mesh.container_id.as_deref()), (Some(false), false, None));
        assert_eq!(condition(&waiting, "Initialized").status, "False");
    }

    #[test]
    fn kubelet_conditions_carry_the_generation_and_ready_to_start_containers_follows_the_sandbox() {
        let plain = Extras::none();
        for (steps, sandbox) in [(1, "False"), (2, "True"), (3, "True")] {
            let life = life(steps);
            let status = decorate(&life, &plain, 3, life.status(NOW), NOW);
            assert_eq!(condition(&status, "PodReadyToStartContainers").status, sandbox, "after {steps} steps");
            assert!(status.conditions.iter().flatten().all(|c| c.observed_generation == Some(3)), "{status:?}");
            assert!(status.init_container_statuses.iter().flatten().all(|c| c.name != SIDECAR), "no sidecar asked");
        }
        let mut killed = life(3);
        let stopped = match killed.kill(NOW) {
            podstatus_agent::node::LifeEvent::Kill(status) => status,
            other => panic!("{other:?}"),
        };
        let stopped = decorate(&killed, &extras(true), 0, stopped, NOW);
        assert_eq!(condition(&stopped, "PodReadyToStartContainers").status, "False", "the sandbox is gone");
        assert!(stopped.conditions.iter().flatten().all(|c| c.observed_generation.is_none()), "generation 0");
        let mesh = &stopped.init_container_statuses.as_ref().unwrap()[0];
        assert_eq!(mesh.state.as_ref().and_then(|s| s.terminated.as_ref()).map(|t| t.exit_code), Some(143));
    }

    #[test]
    fn manifests_start_at_generation_one_with_a_cpu_request_and_some_have_a_sidecar_first() {
        let mut kubelet = Kubelet135::new(7);
        let mut sidecars = 0;
        for slot in 0..40 {
            let mut rng = SplitMix64::new(slot as u64);
            let life = PodLife::new(slot, 0, Kind::Service, &mut rng);
            let pod = kubelet.manifest(&life, life.manifest("node"));
            assert_eq!(pod.metadata.generation, Some(1));
            let spec = pod.spec.unwrap();
            let cpu =
                spec.containers[0].resources.as_ref().and_then(|r| r.requests.as_ref()).map(|r| r["cpu"].0.clone());
            assert_eq!(cpu.as_deref(), Some(INITIAL_CPU));
            if let Some(first) = spec.init_containers.as_ref().and_then(|i| i.first()).filter(|c| c.name == SIDECAR) {
                assert_eq!(
                    first.restart_policy.as_deref(),
                    Some("Always"),
                    "a sidecar is a restartable init container"
                );
                sidecars += 1;
            }
            kubelet.created(slot);
        }
        assert!((1..40).contains(&sidecars), "some pods, not all: {sidecars}");
        assert_eq!(kubelet.counts.sidecar_pods, sidecars);
    }
}
