//! A plugin reaches only the pods the host handed it (issue 47). The trespasser
//! (`tests/programs/guests/trespasser`, contract 0.2.1, its attack picked by an
//! annotation of the pod it is handed) reaches for `ns/victim`, a pod of its node in
//! the pod manager and the API server whose status the host never handed it: a plan
//! naming it, a ghost status of it in the state a swap or a recovery loads, a resize
//! condition of it. Each attack runs as the agent runs a plugin (metered into the
//! agent's metrics, a handle over the reach guard, observed by the host's view) and
//! supervised; each is a `ForeignUid` fault the agent's metrics count (or a status the
//! swap's audit repairs out), and the victim's status in the API server stays what it
//! was. A write whose phase the host never handed is a `Content` fault. A liar's swap in
//! `replay` is held against the record of what the trace handed, as the agent's is.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podstatus_agent::metrics::MeteredPlugin;
use podstatus_agent::metrics::Metrics;
use podstatus_backends::{ApiServer, HostView, MemoryApiServer};
use podstatus_plugins::PODSTATUS_V1;
use podstatus_replay::{Trace, run_with_swaps};
use podstatus_runtime::bindings::UpdateOutcome;
use podstatus_runtime::{
    CallError, FaultKind, ManagerHandle, Plugin, ResizeCondition, SchedulerConfig, SupervisedPlugin, World,
};
use podstatus_test_programs::{LIAR, TRESPASSER};
use podstatus_tests::{load, memory_world};
use serde_json::{Value, json};

const NODE: &str = "node-1";
const VICTIM: &str = "ns/victim/uid-victim";

fn pod(name: &str, annotations: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"uid": format!("uid-{name}"), "name": name, "namespace": "ns", "annotations": annotations},
        "spec": {"nodeName": NODE, "containers": [{"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running"},
    }))
    .unwrap()
}

/// How the trespasser runs: alone, or under a supervisor.
#[derive(Clone, Copy, Debug)]
enum Run {
    Alone,
    Supervised,
}

impl Run {
    fn instantiate(self, world: &World) -> Box<dyn Plugin> {
        match self {
            Run::Alone => Box::new(load(TRESPASSER).instantiate(world.clone()).unwrap()),
            Run::Supervised => Box::new(SupervisedPlugin::new(load(TRESPASSER), world.clone()).unwrap()),
        }
    }
}

/// A node as the agent runs it: the plugin metered into the agent's metrics, the handle
/// over the reach guard, observed by the host's view (or, `unobserved`, a handle over
/// the bare API server, as a test or an embedder may run one); `ns/own` is the pod
/// handed, `ns/victim` the one never handed.
struct Node {
    api: Arc<MemoryApiServer>,
    world: World,
    metrics: Arc<Metrics>,
    manager: ManagerHandle,
    scheduler: podstatus_runtime::Scheduler,
}

impl Node {
    fn start(run: Run) -> Node {
        Node::start_as(run, true)
    }

    fn unobserved(run: Run) -> Node {
        Node::start_as(run, false)
    }

    fn start_as(run: Run, observed: bool) -> Node {
        let (api, world) = memory_world([pod("own", json!({})), pod("victim", json!({}))], true, 1000);
        let view = Arc::new(HostView::new(world.deletion_safety.clone()));
        let world = if observed { world.guarded(Some(NODE.into()), view.clone()) } else { world };
        let metrics = Arc::new(Metrics::new());
        let plugin = MeteredPlugin::new(run.instantiate(&world), Arc::clone(&metrics));
        let config = SchedulerConfig { sync_period: Duration::from_secs(3600), ..SchedulerConfig::default() };
        let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), config);
        if observed {
            assert!(manager.observe(view));
        }
        Node { api, world, metrics, manager, scheduler }
    }

    /// A new instance for a swap, metered as the running one.
    fn metered(&self, run: Run) -> Box<dyn Plugin> {
        Box::new(MeteredPlugin::new(run.instantiate(&self.world), Arc::clone(&self.metrics)))
    }

    /// Hands `ns/own` Running, with `attack` against the victim.
    fn hand(&self, attack: &str) -> Result<UpdateOutcome, CallError> {
        let own = pod("own", json!({"podstatus.test/attack": attack, "podstatus.test/victim": VICTIM}));
        self.manager.set_pod_status(&serde_json::to_string(&own).unwrap(), r#"{"phase":"Running"}"#)
    }

    /// [`Node::stop`], and asserts that the agent's metrics counted a fault of `kind`.
    /// A plugin that faulted alone answers every later call with the first fault's
    /// message.
    fn stop_untouched(self, kind: FaultKind) -> Result<(), CallError> {
        let (metrics, batch) = (Arc::clone(&self.metrics), self.stop());
        let counted = metrics.render().lines().any(|line| {
            line.starts_with("podstatus_plugin_faults_total{")
                && line.contains(&format!("kind=\"{}\"", kind.as_str()))
                && !line.ends_with(" 0")
        });
        assert!(counted, "a {kind:?} fault counted in the agent's metrics:\n{}", metrics.render());
        batch
    }

    /// Drains the queue, runs a batch, stops; asserts that the victim is untouched and
    /// that the plugin's own pod holds the phase the host handed. The answer of a call
    /// after the batch (a fault in a 0.2.1 sync step is not the batch's answer: its
    /// steps run beside it), else the batch's.
    fn stop(self) -> Result<(), CallError> {
        let batch = self.manager.sync_batch().map(drop);
        assert_eq!(self.scheduler.shutdown(Duration::from_secs(10)), 0);
        assert_eq!(phase(&self.api, "victim").as_deref(), Some("Running"), "the victim's status is untouched");
        assert_eq!(phase(&self.api, "own").as_deref(), Some("Running"), "the pod handed holds the phase handed");
        self.manager.get_pod_status("uid-own").map(drop).and(batch)
    }
}

/// The phase of `ns/NAME` in the API server.
fn phase(api: &MemoryApiServer, name: &str) -> Option<String> {
    api.get_pod("ns", name).unwrap().status.as_ref().and_then(|s| s.phase.clone())
}

/// The message of the fault a plugin that faulted alone answers with ever after.
fn first_fault(batch: Result<(), CallError>) -> String {
    let (_, _, message) = podstatus_tests::fault(batch);
    assert!(message.starts_with("instance is unusable after an earlier fault: "), "{message}");
    message
}

fn unhanded_plan(run: Run) {
    let node = Node::start(run);
    node.hand("unhanded-plan").unwrap();
    let batch = node.stop_untouched(FaultKind::ForeignUid);
    if let Run::Alone = run {
        let message = first_fault(batch);
        let rule = "planned a sync of pod \"uid-victim\", which is not a pod whose status the host handed it";
        assert!(message.contains(rule), "{message}");
    }
}

#[test]
fn a_plan_naming_a_pod_never_handed_is_a_fault_and_writes_nothing() {
    unhanded_plan(Run::Alone);
}

#[test]
fn a_supervised_plan_naming_a_pod_never_handed_is_a_fault_and_writes_nothing() {
    unhanded_plan(Run::Supervised);
}

/// The agent's swap holds the state against the host's record: the ghost is a status
/// of a pod the node never reported, invented, and goes. Without the record (a handle
/// nobody observes), the new plugin takes the ghost, and may not reach its pod.
#[test]
fn a_ghost_status_in_the_state_a_swap_hands_over_opens_no_pod() {
    for run in [Run::Alone, Run::Supervised] {
        let node = Node::start(run);
        node.hand("ghost-state").unwrap();
        let report = node.manager.swap(node.metered(run)).expect("swapped");
        assert_eq!(report.repaired.invented, ["uid-victim"], "{run:?}");
        node.stop().expect("the new plugin serves");

        let node = Node::unobserved(run);
        node.hand("ghost-state").unwrap();
        assert!(node.manager.swap(node.metered(run)).expect("swapped").repaired.is_empty());
        let batch = node.stop_untouched(FaultKind::ForeignUid);
        if let Run::Alone = run {
            assert!(first_fault(batch).contains("\"uid-victim\", which is not a pod whose status"));
        }
    }
}

/// A supervisor's copy takes the ghost from the change sets; a fault makes it restore a
/// fresh instance from that copy: held against the record, the ghost goes; without a
/// record, the restored instance takes it and may not reach its pod.
#[test]
fn a_ghost_status_in_the_state_a_recovery_restores_opens_no_pod() {
    for observed in [true, false] {
        let node = Node::start_as(Run::Supervised, observed);
        node.hand("ghost-state").unwrap();
        let (_, kind, _) = podstatus_tests::fault(node.manager.get_pod_resize_conditions("crash"));
        assert_eq!(kind, FaultKind::ResizeConditions);
        match observed {
            true => node.stop().expect("the restored instance serves"),
            false => drop(node.stop_untouched(FaultKind::ForeignUid)),
        }
    }
}

fn resize_only(run: Run) {
    let node = Node::start(run);
    node.hand("resize-only").unwrap();
    node.manager.set_pod_resize_condition("uid-victim", ResizeCondition::Pending, "Deferred", "", 1).unwrap();
    let batch = node.stop_untouched(FaultKind::ForeignUid);
    if let Run::Alone = run {
        assert!(first_fault(batch).contains("\"uid-victim\", which is not a pod whose status"));
    }
}

#[test]
fn a_pod_named_only_in_a_resize_call_is_not_handed() {
    resize_only(Run::Alone);
}

#[test]
fn a_supervised_plugin_given_a_resize_call_only_may_not_write_the_pod() {
    resize_only(Run::Supervised);
}

#[test]
fn a_phase_the_host_never_handed_is_a_content_fault() {
    for run in [Run::Alone, Run::Supervised] {
        let node = Node::start(run);
        node.hand("forge-phase").unwrap();
        let batch = node.stop_untouched(FaultKind::Content);
        if let Run::Alone = run {
            let message = first_fault(batch);
            let rule = "it sets phase \"Failed\" on pod \"uid-own\", which no status the host handed for it carries";
            assert!(message.contains(rule), "{message}");
        }
    }
}

/// A Ready condition no status the host handed carries (nor the API server's copy) is
/// a content fault: the pod is not claimed ready for traffic.
#[test]
fn a_condition_the_host_never_handed_is_a_content_fault() {
    for run in [Run::Alone, Run::Supervised] {
        let node = Node::start(run);
        node.hand("forge-ready").unwrap();
        let api = Arc::clone(&node.api);
        let batch = node.stop_untouched(FaultKind::Content);
        let own = api.get_pod("ns", "own").unwrap();
        let conditions = own.status.as_ref().and_then(|status| status.conditions.as_ref());
        assert!(conditions.is_none_or(|c| c.is_empty()), "nothing written: {conditions:?}");
        if let Run::Alone = run {
            let message = first_fault(batch);
            let rule = "the status has condition \"Ready\" with status \"True\", which no status the node reported \
                        for this pod carries";
            assert!(message.contains(rule), "{message}");
        }
    }
}

/// A write of the handed pod under another pod's UID precondition (the victim's, as if
/// the pod had been recreated) is a reach fault: a write is pinned to the handed pod.
#[test]
fn a_write_pinned_to_another_pods_uid_is_a_reach_fault() {
    for run in [Run::Alone, Run::Supervised] {
        let node = Node::start(run);
        node.hand("other-uid").unwrap();
        let batch = node.stop_untouched(FaultKind::ForeignUid);
        if let Run::Alone = run {
            let message = first_fault(batch);
            let rule = "its UID precondition \"uid-victim\" is not pod \"uid-own\" (nor its mirror pod)";
            assert!(message.contains(rule), "{message}");
        }
    }
}

#[test]
fn an_honest_trespasser_writes_what_it_was_handed() {
    let node = Node::start(Run::Alone);
    assert_eq!(node.hand("none").unwrap(), UpdateOutcome::Queued);
    let metrics = Arc::clone(&node.metrics);
    node.stop().expect("no fault");
    assert!(!metrics.render().contains("podstatus_plugin_faults_total{"), "{}", metrics.render());
}

/// A trace that hands the liar (logic v1 on contract 0.1.0, lying about each pod as
/// its name says: `omit-…` left out of its state, `alter-…` altered; `-in-changes-` in
/// its change sets only) the pods `names`, swaps to the honest v1, and reads each back.
fn liar_trace(names: &[&str], node: Option<&str>) -> Trace {
    let pods: Vec<Value> = names
        .iter()
        .map(|name| {
            json!({"metadata": {"uid": format!("uid-{name}"), "name": name, "namespace": "default"},
                   "spec": {"nodeName": NODE, "containers": [{"name": "app", "image": "app:1"}]}})
        })
        .collect();
    let mut steps: Vec<Value> = names
        .iter()
        .map(|name| json!({"op": "set-pod-status", "pod": format!("uid-{name}"), "status": {"phase": "Running"}}))
        .collect();
    steps.push(json!({"op": "swap", "plugin": "honest.wasm"}));
    steps.extend(names.iter().map(|name| json!({"op": "get-pod-status", "uid": format!("uid-{name}")})));
    let text = json!({"apiserver": pods, "pod_manager": pods, "steps": steps}).to_string();
    let trace = Trace::parse(&text, Path::new(".").to_path_buf()).unwrap();
    Trace { guard_node: node.map(str::to_owned), ..trace }
}

/// Replays the liar's swap, alone or supervised (a supervisor answers `save-state`
/// from its copy, built from the change sets: the liar lies there, and a change set
/// that drops the status its call accepted is refused at the call, so only the
/// alteration rides along), and checks what the swap repaired and that the honest
/// plugin holds every status as the trace handed it.
fn replay_liar_swap(run: Run, node: Option<&str>) {
    let (names, missing, altered): (&[&str], &[&str], &[&str]) = match run {
        Run::Alone => (&["omit-omit", "alter-alter", "honest"], &["uid-omit-omit"], &["uid-alter-alter"]),
        Run::Supervised => (&["alter-in-changes-alter", "honest"], &[], &["uid-alter-in-changes-alter"]),
    };
    let trace = liar_trace(names, node);
    let make = |world: World| -> Result<Box<dyn Plugin>, podstatus_runtime::LoadError> {
        Ok(match run {
            Run::Alone => Box::new(load(LIAR).instantiate(world)?),
            Run::Supervised => Box::new(SupervisedPlugin::new(load(LIAR), world)?),
        })
    };
    let loader = |path: &Path, world: World| -> Result<Box<dyn Plugin>, podstatus_runtime::LoadError> {
        assert_eq!(path.file_name().and_then(|n| n.to_str()), Some("honest.wasm"));
        Ok(Box::new(load(PODSTATUS_V1).instantiate(world)?))
    };
    let report = run_with_swaps(&trace, &make, &loader).unwrap().report;
    let results = serde_json::to_value(&report.results).unwrap();
    let swap = &results[names.len()];
    assert_eq!(swap["swapped"], true, "{run:?} {node:?}: {results}");
    assert_eq!(swap["repaired"]["missing"], json!(missing), "{run:?} {node:?}: {results}");
    assert_eq!(swap["repaired"]["altered"], json!(altered), "{run:?} {node:?}: {results}");
    for (i, name) in names.iter().enumerate() {
        let read = &results[names.len() + 1 + i];
        assert_eq!(read["found"], true, "{name}: {results}");
        assert_eq!(read["status"]["phase"], "Running", "{name}: the status the host recorded, {results}");
    }
}

#[test]
fn a_replayed_swap_from_a_liar_hands_over_the_traces_record() {
    for run in [Run::Alone, Run::Supervised] {
        for node in [None, Some(NODE)] {
            replay_liar_swap(run, node);
        }
    }
}

/// The hostile fuzzer for a fixed seed: the trespasser draws every answer at random,
/// and no write that reaches the API server goes beyond what the host handed, nor is
/// an accepted status lost. (`podstatus fuzz --hostile --duration N` runs it longer.)
#[test]
fn the_hostile_fuzzer_finds_no_write_beyond_the_rule() {
    let (hostile, honest) = (load(TRESPASSER), load(PODSTATUS_V1));
    let limit = podstatus_fuzz::Limit::Traces(8);
    let figures = podstatus_fuzz::hostile::run_hostile(&hostile, &honest, 47, 40, limit, &mut |_| {})
        .unwrap_or_else(|trespass| panic!("{trespass}"));
    assert_eq!((figures.traces, figures.steps, figures.beyond_rule), (8, 320, 0), "{figures:?}");
    assert!(figures.faults.get("foreign-uid").is_some_and(|n| *n > 0), "the guest reached beyond: {figures:?}");
    assert!(figures.writes > 0, "writes reached the API server and were held to the rule: {figures:?}");
}
