//! The lives `podstatus simulate` (the `podstatus-simulate` crate's driver) gives its
//! pods: what a node's container runtime and its users would do to them, one event at a
//! time, decided by a seeded generator so a run can be repeated.
//!
//! A pod is a long-running service (restart policy `Always`: readiness flips, container
//! restarts, deletion by its owner) or a job (`OnFailure`/`Never`: it runs, then
//! succeeds or fails, and is cleaned up). Static pods are services that are never
//! deleted. The model knows nothing of the plugin: it says what the kubelet would report,
//! and the driver makes the calls.
//!
//! `podstatus agent` runs the same lives for pods someone else created
//! ([`PodLife::of_pod`]: containers, init containers and restart policy from the pod's
//! spec), stepping them on a schedule ([`crate::node::PodRunner`]) through the same
//! transitions ([`PodLife::advance`], [`PodLife::set_ready`], [`PodLife::exit_all`],
//! [`PodLife::kill`]) instead of the generator's draws.

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus, Probe, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use podstatus_backends::rng::Entropy;

/// What a pod is for, which decides how its life goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A long-running service: restart policy `Always`.
    Service,
    /// A batch job: restart policy `OnFailure` or `Never`.
    Job,
    /// A static pod from the manifest folder: a service nobody deletes.
    Static,
}

/// Where a pod is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Created in the API server; the node has not reported anything yet.
    Created,
    /// Reported `Pending`, containers being created.
    Pending,
    /// The init container runs.
    Initializing,
    /// Containers run; readiness and restarts come and go.
    Running,
    /// A job whose containers all stopped; waits to be cleaned up.
    Finished,
    /// Its owner asked the API server to delete it; the node has not seen it yet.
    DeleteRequested,
    /// The node killed its containers and told the status manager; waiting for the
    /// status manager to delete it from the API server.
    Terminated,
    /// Gone from the API server and the node.
    Gone,
}

/// What the node (or the pod's owner) does next to one pod.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Report this status (`set-pod-status`).
    SetStatus(PodStatus),
    /// A readiness probe result (`set-container-readiness`).
    Readiness {
        /// The container's runtime ID, as in its status.
        container_id: String,
        /// The probe's verdict.
        ready: bool,
    },
    /// The owner deletes the pod with a grace period (through the API server).
    RequestDeletion,
    /// The node saw the deletion: it reports the stopped containers, then tells the
    /// status manager the pod is terminated (`terminate-pod`).
    Kill(PodStatus),
    /// Nothing this time (waiting for the API server or the watch).
    Wait,
}

/// One container as the runtime sees it.
#[derive(Clone, Debug)]
struct ContainerRun {
    name: String,
    image: String,
    /// Bumped on each restart so the runtime ID changes, as it does in a real runtime.
    instance: u32,
    restarts: i32,
    ready: bool,
    /// Exit code once stopped.
    exited: Option<i32>,
    /// The previous run's exit code, reported as `lastState`.
    last_exit: Option<i32>,
    started_at: String,
}

/// One simulated pod's life.
#[derive(Clone, Debug)]
pub struct PodLife {
    /// Index of the pod in the simulation (names derive from it).
    pub slot: usize,
    /// How many pods this slot has had before this one.
    pub generation: u32,
    /// What the pod is for.
    pub kind: Kind,
    /// Where it is in its life.
    pub stage: Stage,
    /// The pod's UID once the API server (or the manifest source) gave it one.
    pub uid: Option<String>,
    name: String,
    restart_policy: String,
    /// Init containers, (name, image); they run one stage together.
    inits: Vec<(String, String)>,
    containers: Vec<ContainerRun>,
    pod_ip: String,
    /// The node's IP, reported as `hostIP`.
    host_ip: String,
    start_time: String,
}

/// The `hostIP` pods report unless told otherwise ([`PodLife::with_host_ip`]).
pub const DEFAULT_HOST_IP: &str = "10.0.0.10";

/// Namespace of the simulated pods.
pub const NAMESPACE: &str = "sim";

impl PodLife {
    /// Bytes the life holds, itself and its texts, for the memory account.
    pub fn held_bytes(&self) -> usize {
        use std::mem::size_of;
        let containers: usize = self
            .containers
            .iter()
            .map(|c| size_of::<ContainerRun>() + c.name.len() + c.image.len() + c.started_at.len())
            .sum();
        let inits: usize =
            self.inits.iter().map(|(name, image)| size_of::<(String, String)>() + name.len() + image.len()).sum();
        size_of::<PodLife>()
            + self.uid.as_ref().map_or(0, String::len)
            + self.name.len()
            + self.restart_policy.len()
            + inits
            + containers
            + self.pod_ip.len()
            + self.host_ip.len()
            + self.start_time.len()
    }

    /// A new pod for `slot`, its shape drawn from `rng`.
    pub fn new(slot: usize, generation: u32, kind: Kind, rng: &mut dyn Entropy) -> Self {
        let restart_policy = match kind {
            Kind::Service | Kind::Static => "Always",
            Kind::Job => *rng.pick(&["OnFailure", "Never"]),
        };
        let count = if kind != Kind::Static && rng.chance(30) { 2 } else { 1 };
        let containers = (0..count)
            .map(|i| {
                let name = if i == 0 { "app" } else { "sidecar" };
                ContainerRun::new(name, &format!("registry.example/{name}:1.0"))
            })
            .collect();
        let has_init = kind != Kind::Static && rng.chance(40);
        let prefix = match kind {
            Kind::Service => "web",
            Kind::Job => "job",
            Kind::Static => "static",
        };
        PodLife {
            slot,
            generation,
            kind,
            stage: Stage::Created,
            uid: None,
            name: format!("{prefix}-{slot:04}-{generation}"),
            restart_policy: restart_policy.to_owned(),
            inits: if has_init { vec![("init".into(), "registry.example/init:1.0".into())] } else { Vec::new() },
            containers,
            pod_ip: pod_ip(slot),
            host_ip: DEFAULT_HOST_IP.to_owned(),
            start_time: String::new(),
        }
    }

    /// The life of a pod someone else created, as `podstatus agent` runs it: its
    /// containers, init containers and restart policy from its spec (`Always` when
    /// unset, as the API server defaults it); a static pod (from a manifest folder) is
    /// a [`Kind::Static`], other pods a service or a job by their restart policy. `slot`
    /// numbers the pod on the node (its IP derives from it).
    pub fn of_pod(pod: &Pod, slot: usize) -> Self {
        let spec = pod.spec.clone().unwrap_or_default();
        let restart_policy = spec.restart_policy.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "Always".into());
        let is_static = pod
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.get("kubernetes.io/config.source").is_some_and(|source| source != "api"));
        let kind = match restart_policy.as_str() {
            _ if is_static => Kind::Static,
            "Always" => Kind::Service,
            _ => Kind::Job,
        };
        let image = |c: &Container| c.image.clone().unwrap_or_default();
        PodLife {
            slot,
            generation: 0,
            kind,
            stage: Stage::Created,
            uid: pod.metadata.uid.clone(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            restart_policy,
            inits: spec.init_containers.iter().flatten().map(|c| (c.name.clone(), image(c))).collect(),
            containers: spec.containers.iter().map(|c| ContainerRun::new(&c.name, &image(c))).collect(),
            pod_ip: pod_ip(slot),
            host_ip: DEFAULT_HOST_IP.to_owned(),
            start_time: String::new(),
        }
    }

    /// The same life on a node at `ip` (its pods' `hostIP`).
    pub fn with_host_ip(self, ip: &str) -> Self {
        PodLife { host_ip: ip.to_owned(), ..self }
    }

    /// The same life with `prefix-` before its name: the pods of a fleet's nodes share
    /// one namespace, so each node's slots are told apart by their node's prefix.
    pub fn with_name_prefix(self, prefix: &str) -> Self {
        PodLife { name: format!("{prefix}-{}", self.name), ..self }
    }

    /// The restart policy the life follows.
    pub fn restart_policy(&self) -> &str {
        &self.restart_policy
    }

    /// Whether container `i` is ready (passed its probe and runs).
    pub fn is_ready(&self, i: usize) -> bool {
        self.containers.get(i).is_some_and(|c| c.ready && c.exited.is_none())
    }

    /// How many regular containers the pod has.
    pub fn container_count(&self) -> usize {
        self.containers.len()
    }

    fn has_init(&self) -> bool {
        !self.inits.is_empty()
    }
}

impl ContainerRun {
    fn new(name: &str, image: &str) -> Self {
        ContainerRun {
            name: name.to_owned(),
            image: image.to_owned(),
            instance: 0,
            restarts: 0,
            ready: false,
            exited: None,
            last_exit: None,
            started_at: String::new(),
        }
    }
}

/// The pod IP of the pod in `slot`: 10.244.x.y, unique for 64,000 slots.
fn pod_ip(slot: usize) -> String {
    format!("10.244.{}.{}", (slot / 250) % 256, slot % 250 + 2)
}

impl PodLife {
    /// The pod's name in the API server.
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The pod object its owner creates, bound to `node`.
    pub fn manifest(&self, node: &str) -> Pod {
        let containers = self
            .containers
            .iter()
            .map(|c| Container {
                name: c.name.clone(),
                image: Some(c.image.clone()),
                // A probe needs a handler: kube-apiserver refuses a pod whose probe has
                // none (the simulation's every pod, against a real server).
                readiness_probe: Some(Probe {
                    period_seconds: Some(5),
                    tcp_socket: Some(TCPSocketAction { port: IntOrString::Int(8080), host: None }),
                    ..Probe::default()
                }),
                ..Container::default()
            })
            .collect();
        let init_containers = self.has_init().then(|| {
            self.inits
                .iter()
                .map(|(name, image)| Container {
                    name: name.clone(),
                    image: Some(image.clone()),
                    ..Container::default()
                })
                .collect()
        });
        Pod {
            metadata: ObjectMeta {
                name: Some(self.name()),
                namespace: Some(NAMESPACE.into()),
                labels: Some([("app".to_owned(), "podstatus-sim".to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                restart_policy: Some(self.restart_policy.clone()),
                termination_grace_period_seconds: Some(30),
                containers,
                init_containers,
                ..PodSpec::default()
            }),
            status: None,
        }
    }

    /// The next event of this pod's life at time `now` (RFC 3339), given whether the
    /// node sees a deletion timestamp on it and whether it is still in the API server.
    pub fn next(&mut self, rng: &mut dyn Entropy, now: &str, deleting: bool, present: bool) -> Event {
        match self.stage {
            Stage::Created | Stage::Pending | Stage::Initializing => self.advance(now),
            _ if deleting && matches!(self.stage, Stage::Running | Stage::Finished | Stage::DeleteRequested) => {
                self.kill(now)
            }
            Stage::Running => self.while_running(rng, now),
            Stage::Finished => {
                self.stage = Stage::DeleteRequested;
                Event::RequestDeletion
            }
            // A finished pod is removed by the API server at once (no grace period for
            // a terminal phase, as in Kubernetes): nothing is left for the node to do.
            Stage::DeleteRequested if !present => {
                self.stage = Stage::Gone;
                Event::Wait
            }
            Stage::DeleteRequested => Event::Wait,
            Stage::Terminated if !present => {
                self.stage = Stage::Gone;
                Event::Wait
            }
            Stage::Terminated | Stage::Gone => Event::Wait,
        }
    }

    fn while_running(&mut self, rng: &mut dyn Entropy, now: &str) -> Event {
        // Readiness flips most often; restarts, completions and deletions are rarer.
        let weights: &[u64] = match self.kind {
            Kind::Service => &[70, 12, 0, 0, 8],
            Kind::Static => &[75, 12, 0, 0, 0],
            Kind::Job => &[50, 0, 25, 8, 0],
        };
        match rng.weighted(weights) {
            0 => {
                let i = rng.index(self.containers.len());
                let ready = !self.containers[i].ready;
                self.set_ready(i, ready)
            }
            1 => {
                let i = rng.index(self.containers.len());
                let code = *rng.pick(&[1, 137, 143]);
                self.restart(i, code, now)
            }
            2 | 3 => {
                let code = if rng.chance(85) { 0 } else { 1 };
                self.exit_all(code, now)
            }
            _ => {
                self.stage = Stage::DeleteRequested;
                Event::RequestDeletion
            }
        }
    }

    /// The next step of a pod's start: Created -> Pending (containers being created)
    /// -> Initializing (when it has init containers) -> Running (containers started,
    /// not ready yet). Elsewhere in its life, a report of the status as it is.
    pub fn advance(&mut self, now: &str) -> Event {
        match self.stage {
            Stage::Created => {
                self.stage = Stage::Pending;
                self.start_time = now.to_owned();
            }
            Stage::Pending if self.has_init() => self.stage = Stage::Initializing,
            Stage::Pending | Stage::Initializing => {
                self.stage = Stage::Running;
                for c in &mut self.containers {
                    c.started_at = now.to_owned();
                }
            }
            _ => {}
        }
        Event::SetStatus(self.status(now))
    }

    /// A readiness probe's verdict on container `i`.
    pub fn set_ready(&mut self, i: usize, ready: bool) -> Event {
        let name = self.name();
        let c = &mut self.containers[i];
        c.ready = ready;
        Event::Readiness { container_id: container_id(&name, c), ready: c.ready }
    }

    /// Container `i` exited with `code` and the runtime started it again (a restart,
    /// whatever the policy: the caller decides that the policy allows it).
    pub fn restart(&mut self, i: usize, code: i32, now: &str) -> Event {
        let c = &mut self.containers[i];
        c.last_exit = Some(code);
        c.restarts += 1;
        c.instance += 1;
        c.ready = false;
        c.started_at = now.to_owned();
        Event::SetStatus(self.status(now))
    }

    /// Every container exited with `code`: a job's end. `OnFailure` restarts them after
    /// a failure; otherwise the pod is finished (Succeeded or Failed by the code).
    pub fn exit_all(&mut self, code: i32, now: &str) -> Event {
        for c in &mut self.containers {
            c.exited = Some(code);
            c.ready = false;
        }
        if code != 0 && self.restart_policy == "OnFailure" {
            // OnFailure: the runtime restarts a failed container.
            for c in &mut self.containers {
                c.last_exit = c.exited.take();
                c.restarts += 1;
                c.instance += 1;
                c.started_at = now.to_owned();
            }
        } else {
            self.stage = Stage::Finished;
        }
        Event::SetStatus(self.status(now))
    }

    /// The node kills what still runs (exit 143 after SIGTERM) and reports it.
    pub fn kill(&mut self, now: &str) -> Event {
        // A pod deleted before it started (`podstatus agent` sees such pods) has no
        // start times yet: its containers stop as they start.
        if self.start_time.is_empty() {
            self.start_time = now.to_owned();
        }
        for c in &mut self.containers {
            if c.started_at.is_empty() {
                c.started_at = now.to_owned();
            }
        }
        for c in &mut self.containers {
            if c.exited.is_none() {
                c.exited = Some(143);
            }
            c.ready = false;
        }
        self.stage = Stage::Terminated;
        Event::Kill(self.status(now))
    }

    /// The status the kubelet would generate now.
    pub fn status(&self, now: &str) -> PodStatus {
        let name = self.name();
        let running = matches!(self.stage, Stage::Running | Stage::Finished | Stage::Terminated);
        let all_stopped = running && self.containers.iter().all(|c| c.exited.is_some());
        let phase = match self.stage {
            Stage::Created | Stage::Pending | Stage::Initializing => "Pending",
            _ if all_stopped && self.restart_policy != "Always" => {
                if self.containers.iter().all(|c| c.exited == Some(0)) { "Succeeded" } else { "Failed" }
            }
            _ if all_stopped => "Failed",
            _ => "Running",
        };
        let ready = running && !all_stopped && self.containers.iter().all(|c| c.ready && c.exited.is_none());
        let initialized =
            !matches!(self.stage, Stage::Created | Stage::Pending | Stage::Initializing) || !self.has_init();
        let condition = |kind: &str, ok: bool| json!({"type": kind, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": now});
        let containers: Vec<_> = self.containers.iter().map(|c| self.container_status(&name, c, now)).collect();
        let mut status = json!({
            "phase": phase,
            "conditions": [
                condition("Initialized", initialized),
                condition("Ready", ready),
                condition("ContainersReady", ready),
                condition("PodScheduled", true),
            ],
            "hostIP": self.host_ip,
            "startTime": self.start_time,
            "qosClass": "BestEffort",
            "containerStatuses": containers,
        });
        if running {
            status["podIP"] = json!(self.pod_ip);
            status["podIPs"] = json!([{"ip": self.pod_ip}]);
        }
        if self.has_init() {
            let init_state = match self.stage {
                Stage::Created | Stage::Pending => json!({"waiting": {"reason": "PodInitializing"}}),
                Stage::Initializing => json!({"running": {"startedAt": now}}),
                _ => {
                    json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": self.start_time, "finishedAt": self.start_time}})
                }
            };
            let ready = matches!(self.stage, Stage::Running | Stage::Finished | Stage::Terminated);
            let inits: Vec<_> = self
                .inits
                .iter()
                .map(|(init, image)| {
                    json!({
                        "name": init,
                        "image": image,
                        "imageID": format!("{}@sha256:0", image.split(':').next().unwrap_or_default()),
                        "containerID": format!("containerd://{name}-{init}"),
                        "ready": ready,
                        "restartCount": 0,
                        "state": init_state,
                    })
                })
                .collect();
            status["initContainerStatuses"] = json!(inits);
        }
        serde_json::from_value(status).expect("the simulated status is a valid PodStatus")
    }

    fn container_status(&self, pod: &str, c: &ContainerRun, now: &str) -> serde_json::Value {
        let (state, started) = match (self.stage, c.exited) {
            (Stage::Created | Stage::Pending | Stage::Initializing, _) => {
                let reason = if self.has_init() { "PodInitializing" } else { "ContainerCreating" };
                (json!({"waiting": {"reason": reason}}), false)
            }
            (_, Some(code)) => {
                let reason = if code == 0 { "Completed" } else { "Error" };
                let state = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": c.started_at, "finishedAt": now, "containerID": container_id(pod, c)}});
                (state, false)
            }
            _ => (json!({"running": {"startedAt": c.started_at}}), true),
        };
        let mut status = json!({
            "name": c.name,
            "image": c.image,
            "imageID": format!("{}@sha256:0", c.image.split(':').next().unwrap_or_default()),
            "ready": c.ready && c.exited.is_none(),
            "restartCount": c.restarts,
            "started": started,
            "state": state,
        });
        if !matches!(self.stage, Stage::Created | Stage::Pending | Stage::Initializing) {
            status["containerID"] = json!(container_id(pod, c));
        }
        if let Some(code) = c.last_exit {
            status["lastState"] =
                json!({"terminated": {"exitCode": code, "reason": "Error", "finishedAt": c.started_at}});
        }
        status
    }
}

/// The runtime ID of a container's current run.
fn container_id(pod: &str, c: &ContainerRun) -> String {
    format!("containerd://{pod}-{}-{}", c.name, c.instance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_backends::rng::SplitMix64;

    const NOW: &str = "2026-11-30T12:00:00Z";

    fn life(kind: Kind, seed: u64) -> (PodLife, SplitMix64) {
        let mut rng = SplitMix64::new(seed);
        (PodLife::new(3, 0, kind, &mut rng), rng)
    }

    #[test]
    fn a_service_goes_pending_then_running_then_is_killed_when_deleted() {
        let (mut pod, mut rng) = life(Kind::Service, 7);
        let Event::SetStatus(first) = pod.next(&mut rng, NOW, false, true) else { panic!("first event reports") };
        assert_eq!(first.phase.as_deref(), Some("Pending"));
        while pod.stage != Stage::Running {
            pod.next(&mut rng, NOW, false, true);
        }
        let Event::Kill(killed) = pod.next(&mut rng, NOW, true, true) else { panic!("a deletion kills") };
        assert_eq!(killed.phase.as_deref(), Some("Failed"), "Always pods killed report Failed");
        let all_stopped =
            killed.container_statuses.unwrap().iter().all(|c| c.state.as_ref().unwrap().terminated.is_some());
        assert!(all_stopped);
        assert_eq!(pod.next(&mut rng, NOW, true, true), Event::Wait, "waits for the status manager to delete");
        pod.next(&mut rng, NOW, true, false);
        assert_eq!(pod.stage, Stage::Gone);
    }

    #[test]
    fn jobs_finish_in_a_terminal_phase_and_ask_to_be_deleted() {
        for seed in 0..50 {
            let (mut pod, mut rng) = life(Kind::Job, seed);
            let mut last = None;
            for _ in 0..500 {
                match pod.next(&mut rng, NOW, false, true) {
                    Event::SetStatus(status) => last = Some(status),
                    Event::RequestDeletion => break,
                    _ => {}
                }
            }
            assert_eq!(pod.stage, Stage::DeleteRequested, "seed {seed}");
            let phase = last.unwrap().phase.unwrap();
            assert!(phase == "Succeeded" || phase == "Failed", "seed {seed}: {phase}");
        }
    }

    #[test]
    fn a_finished_job_the_api_server_removed_at_once_is_gone() {
        let (mut pod, mut rng) = life(Kind::Job, 3);
        while pod.stage != Stage::DeleteRequested {
            pod.next(&mut rng, NOW, false, true);
        }
        assert_eq!(pod.next(&mut rng, NOW, false, true), Event::Wait, "waits while the pod is there");
        assert_eq!(pod.stage, Stage::DeleteRequested);
        // A terminal pod has no grace period: the owner's DELETE removed it, and the
        // node never sees a deletion timestamp.
        assert_eq!(pod.next(&mut rng, NOW, false, false), Event::Wait);
        assert_eq!(pod.stage, Stage::Gone, "the slot is free for a new pod");
    }

    #[test]
    fn readiness_events_name_the_container_in_the_last_status() {
        let (mut pod, mut rng) = life(Kind::Static, 11);
        let mut ids = Vec::new();
        for _ in 0..200 {
            match pod.next(&mut rng, NOW, false, true) {
                Event::SetStatus(status) => {
                    ids = status.container_statuses.unwrap().into_iter().filter_map(|c| c.container_id).collect()
                }
                Event::Readiness { container_id, .. } => assert!(ids.contains(&container_id), "{container_id}"),
                other => panic!("a static pod only reports: {other:?}"),
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_life() {
        let run = |seed| {
            let (mut pod, mut rng) = life(Kind::Service, seed);
            (0..100).map(|i| pod.next(&mut rng, NOW, i > 90, true)).collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
