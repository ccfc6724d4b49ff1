//! `podstatus agent`'s container runtime: it runs the pods the node is given (by the
//! pod watch, or the manifest folder) through the lives `simulate` plays
//! ([`PodLife`]), on a schedule instead of a generator's draws, and reports every
//! status through the status manager as the kubelet's pod workers do
//! ([`report`]).
//!
//! A pod goes Pending, through its init containers, to Running, then each container
//! passes its readiness probe. Its containers run for as long as the annotation
//! [`RUN_FOR_ANNOTATION`] says (a Go duration; by default for ever under restart
//! policy `Always`, 10 s otherwise) and then exit with [`EXIT_CODE_ANNOTATION`] (0 by
//! default): a job ends Succeeded or Failed (`OnFailure` restarts a failed one), an
//! `Always` pod's containers restart. A pod with a `deletionTimestamp` has its
//! containers stopped and is handed to `terminate-pod`; the status manager deletes it
//! from the API server once it may.
//!
//! One runner thread may run the pods of several nodes ([`PodRunner::start_many`]): a
//! fleet (`podstatus fleet`) shares its nodes out over a few runners instead of
//! starting a thread per node. A node whose plugin is slow to answer (a hostile one
//! looping until its CPU budget stops it) then delays the next reports of the nodes on
//! its runner, not what those reports measure: each node's calls are timed, and its
//! propagation clocks started, when its own calls are made.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::lifecycle::{Event, PodLife, Stage};
use crate::metrics::TimedManager;
use podstatus_backends::{CompactPod, PodManager};
use podstatus_runtime::CallError;
use podstatus_runtime::bindings::UpdateOutcome;

/// How long a container runs before it exits (a Go duration: `30s`, `1m`).
pub const RUN_FOR_ANNOTATION: &str = "podstatus.io/run-for";
/// The exit code of a container that exits (an integer).
pub const EXIT_CODE_ANNOTATION: &str = "podstatus.io/exit-code";
/// How long a job's containers run when [`RUN_FOR_ANNOTATION`] does not say.
const JOB_RUN_FOR: Duration = Duration::from_secs(10);
/// The pause between two steps of a pod's start (pulling, creating, probing).
const STEP: Duration = Duration::from_millis(300);
/// How often the runner looks at the node's pods.
const TICK: Duration = Duration::from_millis(50);
/// How often statuses of pods the node no longer has are dropped (the kubelet's
/// housekeeping, every 2 s).
const HOUSEKEEPING: Duration = Duration::from_secs(2);

/// The running runtime: a thread. [`PodRunner::stop`] (or dropping it) stops it; the
/// pods it ran keep their last status.
pub struct PodRunner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PodRunner {
    /// Runs the pods of `pods` through `handle` (every call timed, as the node's side's
    /// calls are: [`crate::NodeAgent::node_side`]), reporting `host_ip` as their host.
    pub fn start(handle: TimedManager, pods: Arc<PodManager>, host_ip: String) -> Self {
        Self::start_many(vec![(handle, pods)], host_ip)
    }

    /// Runs the pods of several nodes on one thread: each node's pods through its own
    /// status manager, one node after another at every tick.
    pub fn start_many(nodes: Vec<(TimedManager, Arc<PodManager>)>, host_ip: String) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let nodes: Vec<Runtime> = nodes
            .into_iter()
            .map(|(handle, pods)| Runtime {
                handle,
                pods,
                host_ip: host_ip.clone(),
                running: BTreeMap::new(),
                slots: 0,
            })
            .collect();
        let thread =
            std::thread::Builder::new().name("podstatus-pods".into()).spawn(move || run(nodes, &stopping)).ok();
        if thread.is_none() {
            tracing::error!("could not start the pod runner's thread");
        }
        PodRunner { stop, thread }
    }

    /// Stops taking work: no pod is started or stepped once this returns.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the pod runner's thread panicked");
        }
    }
}

impl Drop for PodRunner {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One pod being run.
struct Running {
    life: PodLife,
    /// When its next step is due.
    next: Instant,
    /// Containers passed their readiness probe.
    ready: bool,
    /// When its containers exit, if they do.
    exits_at: Option<Instant>,
}

/// One node's pods, as its runner sees them.
struct Runtime {
    handle: TimedManager,
    pods: Arc<PodManager>,
    host_ip: String,
    running: BTreeMap<String, Running>,
    /// Pods started so far: each its own slot (and pod IP).
    slots: usize,
}

/// A runner's loop: every node's pods stepped at each tick, their orphans dropped at
/// each housekeeping.
fn run(mut nodes: Vec<Runtime>, stop: &AtomicBool) {
    let mut next_housekeeping = Instant::now() + HOUSEKEEPING;
    while !stop.load(Ordering::SeqCst) {
        let housekeeping = Instant::now() >= next_housekeeping;
        for node in &mut nodes {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            node.tick(housekeeping);
        }
        if housekeeping {
            next_housekeeping = Instant::now() + HOUSEKEEPING;
        }
        std::thread::sleep(TICK);
    }
}

impl Runtime {
    /// Steps the pods that are due; drops the statuses of pods gone when `housekeeping`.
    fn tick(&mut self, housekeeping: bool) {
        // Mirror pods are not the node's to run.
        let held: Vec<Arc<CompactPod>> = self.pods.pods().into_iter().filter(|pod| !pod.is_mirror()).collect();
        let now = Instant::now();
        for pod in &held {
            let uid = pod.uid().unwrap_or_default();
            if uid.is_empty() {
                continue;
            }
            if !self.running.contains_key(uid) {
                // A new pod is read whole once, for its containers.
                let Ok(typed) = pod.pod() else { continue };
                let life = PodLife::of_pod(&typed, self.slots).with_host_ip(&self.host_ip);
                self.slots += 1;
                tracing::debug!(pod = %life.name(), "starting the pod");
                self.running.insert(uid.to_owned(), Running { life, next: now, ready: false, exits_at: None });
            }
            if let Some(running) = self.running.get_mut(uid)
                && running.next <= now
                && let Some(event) = step(running, pod, now)
            {
                for (op, outcome) in report(&self.handle, pod, &event) {
                    if let Err(error) = outcome {
                        tracing::warn!(pod = %running.life.name(), "{op}: {error}");
                    }
                }
            }
        }
        // Pods the node no longer has: deleted by the status manager, or elsewhere.
        self.running.retain(|uid, _| held.iter().any(|pod| pod.uid() == Some(uid.as_str())));
        if housekeeping {
            let keep: Vec<String> = self.pods.uids();
            if let Err(error) = self.handle.remove_orphaned_statuses(&keep) {
                tracing::warn!("remove-orphaned-statuses: {error}");
            }
        }
    }
}

/// The pod's next event, if one is due now; sets when the one after is due.
fn step(running: &mut Running, pod: &CompactPod, now: Instant) -> Option<Event> {
    let at = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let life = &mut running.life;
    running.next = now + STEP;
    if pod.is_being_deleted() {
        return match life.stage {
            Stage::Terminated | Stage::Gone => {
                running.next = now + Duration::from_secs(3600);
                None
            }
            _ => Some(life.kill(&at)),
        };
    }
    match life.stage {
        Stage::Created | Stage::Pending | Stage::Initializing => {
            let event = life.advance(&at);
            if life.stage == Stage::Running {
                running.exits_at = run_for(pod, life.restart_policy()).map(|d| now + d);
            }
            Some(event)
        }
        Stage::Running if !running.ready => {
            // One container's probe passes per step; the pod is Ready after the last.
            let next = (0..life.container_count()).find(|&i| !life.is_ready(i));
            match next {
                Some(i) => Some(life.set_ready(i, true)),
                None => {
                    running.ready = true;
                    None
                }
            }
        }
        Stage::Running if running.exits_at.is_some_and(|at| at <= now) => {
            let code = exit_code(pod);
            let event = if life.restart_policy() == "Always" {
                // The runtime restarts each container; the probes pass again.
                let mut event = None;
                for i in 0..life.container_count() {
                    event = Some(life.restart(i, code, &at));
                }
                event
            } else {
                Some(life.exit_all(code, &at))
            };
            running.ready = false;
            running.exits_at =
                if life.stage == Stage::Running { run_for(pod, life.restart_policy()).map(|d| now + d) } else { None };
            event
        }
        _ => {
            running.next =
                running.exits_at.unwrap_or(now + Duration::from_secs(3600)).min(now + Duration::from_secs(1));
            None
        }
    }
}

/// How long the pod's containers run: the annotation, else 10 s for a job, for ever
/// under `Always`. An annotation that does not parse is logged and ignored.
fn run_for(pod: &CompactPod, restart_policy: &str) -> Option<Duration> {
    match annotation(pod, RUN_FOR_ANNOTATION) {
        Some(text) => match crate::parse_go_duration(&text) {
            Ok(duration) => Some(duration),
            Err(error) => {
                tracing::warn!(pod = ?pod.name(), "{RUN_FOR_ANNOTATION}: {error}; ignored");
                default_run_for(restart_policy)
            }
        },
        None => default_run_for(restart_policy),
    }
}

fn default_run_for(restart_policy: &str) -> Option<Duration> {
    (restart_policy != "Always").then_some(JOB_RUN_FOR)
}

fn exit_code(pod: &CompactPod) -> i32 {
    annotation(pod, EXIT_CODE_ANNOTATION).and_then(|code| code.trim().parse().ok()).unwrap_or(0)
}

/// An annotation of the pod: its metadata is parsed for it (when a pod starts running
/// or its containers exit, not at every step).
fn annotation(pod: &CompactPod, key: &str) -> Option<String> {
    pod.metadata().ok()?.annotations?.remove(key)
}

/// Tells the status manager what `event` says of `pod`, as the kubelet's pod workers do:
/// a status (`set-pod-status`), a probe's verdict (`set-container-readiness`), or the
/// stopped containers followed by `terminate-pod`. Returns each call made with its
/// outcome (nothing for events that are not the node's to report). Shared by the
/// simulation's driver and `podstatus agent`'s pod runner.
pub fn report(
    handle: &TimedManager,
    pod: &CompactPod,
    event: &Event,
) -> Vec<(&'static str, Result<UpdateOutcome, CallError>)> {
    let set_status = |status: &k8s_openapi::api::core::v1::PodStatus| {
        report_status_json(handle, pod, &serde_json::to_string(status).unwrap_or_default())
    };
    match event {
        Event::SetStatus(status) => vec![set_status(status)],
        Event::Readiness { container_id, ready } => {
            let uid = pod.uid().unwrap_or_default();
            vec![("set-container-readiness", handle.set_container_readiness(uid, container_id, *ready))]
        }
        Event::Kill(status) => {
            let stopped = set_status(status);
            vec![stopped, ("terminate-pod", handle.terminate_pod(pod.json()))]
        }
        Event::RequestDeletion | Event::Wait => Vec::new(),
    }
}

/// The `set-pod-status` of [`report`], for a status already serialised (one the caller
/// keeps to send again, as the kubelet's resyncs do).
pub fn report_status_json(
    handle: &TimedManager,
    pod: &CompactPod,
    status: &str,
) -> (&'static str, Result<UpdateOutcome, CallError>) {
    report_pod_status_json(handle, pod.json(), status)
}

/// [`report_status_json`] for a pod the caller holds as JSON already (the pod manager
/// keeps each pod's: [`podstatus_backends::PodManager::json_of`]).
pub fn report_pod_status_json(
    handle: &TimedManager,
    pod_json: &str,
    status: &str,
) -> (&'static str, Result<UpdateOutcome, CallError>) {
    ("set-pod-status", handle.set_pod_status(pod_json, status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, PodStatus};

    fn pod(restart_policy: &str, annotations: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "annotations": annotations},
            "spec": {"restartPolicy": restart_policy, "containers": [{"name": "app", "image": "app:1"}]}
        }))
        .expect("a pod")
    }

    /// Steps the pod through `seconds` of its life, one step a second; the last status.
    fn live(pod: &Pod, seconds: u64) -> PodStatus {
        let life = PodLife::of_pod(pod, 0);
        let compact = CompactPod::from_pod(pod).expect("compact");
        let start = Instant::now();
        let mut running = Running { life, next: start, ready: false, exits_at: None };
        let mut last = None;
        for second in 0..seconds {
            let now = start + Duration::from_secs(second);
            if running.next > now {
                continue;
            }
            if let Some(Event::SetStatus(status) | Event::Kill(status)) = step(&mut running, &compact, now) {
                last = Some(status);
            }
        }
        last.expect("a status")
    }

    fn phase(status: &PodStatus) -> &str {
        status.phase.as_deref().unwrap_or_default()
    }

    #[test]
    fn jobs_end_as_their_restart_policy_and_annotations_say() {
        let exits = |code: &str| serde_json::json!({RUN_FOR_ANNOTATION: "5s", EXIT_CODE_ANNOTATION: code});
        assert_eq!(phase(&live(&pod("Never", exits("0")), 30)), "Succeeded");
        assert_eq!(phase(&live(&pod("Never", exits("3")), 30)), "Failed");
        assert_eq!(phase(&live(&pod("OnFailure", serde_json::json!({})), 30)), "Succeeded", "10 s by default");
        let restarted = live(&pod("OnFailure", exits("1")), 30);
        assert_eq!(phase(&restarted), "Running", "OnFailure restarts a failed job");
        assert!(restarted.container_statuses.unwrap()[0].restart_count >= 2);
    }

    #[test]
    fn an_always_pod_runs_on_restarts_if_told_to_exit_and_stops_when_deleted() {
        let forever = live(&pod("Always", serde_json::json!({})), 60);
        let restarts = forever.container_statuses.as_ref().map(|c| c[0].restart_count);
        assert_eq!((phase(&forever), restarts), ("Running", Some(0)));
        let crashing =
            live(&pod("Always", serde_json::json!({RUN_FOR_ANNOTATION: "5s", EXIT_CODE_ANNOTATION: "1"})), 30);
        let container = &crashing.container_statuses.unwrap()[0];
        assert!(container.restart_count >= 2, "{container:?}");
        let exit = container.last_state.as_ref().and_then(|s| s.terminated.as_ref()).map(|t| t.exit_code);
        assert_eq!(exit, Some(1));

        let mut deleted = pod("Always", serde_json::json!({}));
        deleted.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()));
        // Deleted before it started (the first step sees the deletion) or while running.
        for seconds in [1, 5] {
            let killed = live(&deleted, seconds);
            let state = killed.container_statuses.unwrap()[0].state.clone().unwrap();
            assert_eq!(state.terminated.map(|t| t.exit_code), Some(143), "stopped by SIGTERM");
        }
    }
}
