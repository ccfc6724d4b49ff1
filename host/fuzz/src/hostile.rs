//! The hostile-plugin fuzzer (issue 47): a scripted hostile guest whose plans, calls,
//! cursors, outcomes and state documents are drawn at random from a seed (the
//! trespasser of `tests/programs`, with `podstatus.test/seed`), run as the agent runs
//! a plugin (supervised, behind the reach guard, observed by the host's view), while
//! the host hands it statuses, terminates, orphans, recreates and marks pods for
//! deletion, swaps it for a fresh one and makes it crash, all drawn from the same seed.
//!
//! After every step the writes that reached the API server are held against an oracle
//! kept here, apart from the host's own record: each must be of a pod whose status the
//! harness handed (a static pod's for its mirror pod) and has not dropped (or dropped
//! by orphan removal while a request of it was queued, written by that request's sync,
//! as the host allows: see `HandedPods`), with a phase it handed for that pod (`Failed`
//! once it terminated it, or the phase the API server had), and with only IPs it
//! handed; a delete must be of such a pod. At the end of a
//! trace the hostile plugin is swapped for an honest one, held against the host's
//! record: every status the host recorded the plugin accepted must be in the honest
//! plugin as recorded (nothing accepted was lost).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::rng::{Entropy, SplitMix64};
use podstatus_backends::{
    ApiServer, DeleteOptions, FixedDeletionSafety, HostView, MemoryApiServer, PodManager, Result as ApiResult,
    StatusPatch, StatusUpdate, SyncQueue, SystemClock, host_view::ips_of,
};
use podstatus_runtime::{CallError, Plugin, PluginExt, PluginImage, ResizeCondition, SupervisedPlugin, World};
use serde_json::{Value, json};

use crate::Limit;

/// The node every trace's pods are bound to.
const NODE: &str = "node-1";

/// What the hostile fuzzer ran, for its summary and docs/sandbox.md.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostileFigures {
    /// Traces run.
    pub traces: u64,
    /// Steps run.
    pub steps: u64,
    /// Plugin calls answered with a fault, by fault kind (the host's refusals of the
    /// plugin's reach are `foreign-uid` and `content`).
    pub faults: BTreeMap<&'static str, u64>,
    /// Calls the reach guard refused (forbidden), which the plugin got as an answer.
    pub guard_refusals: u64,
    /// Writes and deletes that reached the API server (each held against the rule).
    pub writes: u64,
    /// Writes that reached the API server beyond the rule: always 0, or the run fails.
    pub beyond_rule: u64,
}

impl HostileFigures {
    /// All faults.
    pub fn refusals(&self) -> u64 {
        self.faults.values().sum()
    }
}

/// A write beyond the rule, or an accepted status lost: the trace (by seed) and step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trace seed {seed}, step {step}: {what}")]
pub struct Trespass {
    /// The trace's seed (`podstatus fuzz --hostile --seed S --traces 1` runs it again).
    pub seed: u64,
    /// The step after which it was seen.
    pub step: usize,
    /// What happened.
    pub what: String,
}

/// Runs hostile traces of `steps` steps from `seed` (trace i from `seed + i`) until
/// `limit`, the hostile guest `hostile`, the honest `honest` at each trace's end;
/// `progress` sees the figures after each trace.
pub fn run_hostile(
    hostile: &PluginImage,
    honest: &PluginImage,
    seed: u64,
    steps: usize,
    limit: Limit,
    progress: &mut dyn FnMut(&HostileFigures),
) -> Result<HostileFigures, Trespass> {
    let started = Instant::now();
    let mut figures = HostileFigures::default();
    for i in 0.. {
        let done = match limit {
            Limit::Traces(n) => i >= n,
            Limit::Duration(d) => started.elapsed() >= d,
        };
        if done {
            break;
        }
        hostile_trace(hostile, honest, seed.wrapping_add(i), steps, &mut figures)?;
        progress(&figures);
    }
    Ok(figures)
}

/// One hostile trace (see the module documentation).
pub fn hostile_trace(
    hostile: &PluginImage,
    honest: &PluginImage,
    seed: u64,
    steps: usize,
    figures: &mut HostileFigures,
) -> Result<(), Trespass> {
    let mut trace = HostileTrace::new(hostile, seed);
    for step in 0..steps {
        trace.step(hostile);
        figures.steps += 1;
        trace.check(figures).map_err(|what| Trespass { seed, step, what })?;
    }
    figures.guard_refusals += trace.guard.refusals().total();
    for (kind, n) in std::mem::take(&mut trace.faults) {
        *figures.faults.entry(kind).or_default() += n;
    }
    trace.check_nothing_lost(honest).map_err(|what| Trespass { seed, step: steps, what })?;
    figures.traces += 1;
    Ok(())
}

/// What the harness handed of a pod: its phases, IPs, conditions (type and status), and
/// whether it terminated it.
#[derive(Clone, Debug, Default)]
struct Handed {
    phases: BTreeSet<String>,
    ips: BTreeSet<String>,
    conditions: BTreeSet<(String, String)>,
    terminated: bool,
}

impl Handed {
    /// Adds what `other` allows.
    fn merge(&mut self, other: Handed) {
        self.phases.extend(other.phases);
        self.ips.extend(other.ips);
        self.conditions.extend(other.conditions);
        self.terminated |= other.terminated;
    }

    /// Whether a write may set the condition `type_` to `status`: handed so, or the
    /// readiness conditions false once the pod terminated or was handed a terminal phase.
    fn allows_condition(&self, type_: &str, status: &str) -> bool {
        let terminal = self.terminated || self.phases.iter().any(|p| p == "Succeeded" || p == "Failed");
        self.conditions.contains(&(type_.to_owned(), status.to_owned()))
            || (terminal && matches!(type_, "Ready" | "ContainersReady") && status == "False")
    }
}

/// A write that reached the API server: the pod before and after, and the pod of the
/// request whose sync made it, if a request's.
#[derive(Debug)]
struct Reached {
    verb: &'static str,
    before: Option<Arc<Pod>>,
    after: Option<Arc<Pod>>,
    syncing: Option<String>,
}

/// The API server behind the guard: forwards everything, noting what reached it.
struct Witness {
    store: Arc<MemoryApiServer>,
    reached: Mutex<Vec<Reached>>,
    /// The pod of the request the harness is syncing now.
    syncing: Mutex<Option<String>>,
}

impl Witness {
    fn note(
        &self,
        verb: &'static str,
        namespace: &str,
        name: &str,
        write: impl FnOnce() -> ApiResult<Arc<Pod>>,
    ) -> ApiResult<Arc<Pod>> {
        let before = self.store.get_pod(namespace, name).ok();
        let result = write();
        if let Ok(after) = &result {
            let after = (verb != "delete").then(|| Arc::clone(after));
            let syncing = self.syncing.lock().unwrap_or_else(PoisonError::into_inner).clone();
            self.reached.lock().unwrap_or_else(PoisonError::into_inner).push(Reached { verb, before, after, syncing });
        }
        result
    }
}

impl ApiServer for Witness {
    fn get_pod(&self, namespace: &str, name: &str) -> ApiResult<Arc<Pod>> {
        self.store.get_pod(namespace, name)
    }

    fn update_pod_status(&self, update: StatusUpdate) -> ApiResult<Arc<Pod>> {
        let (namespace, name) = (update.namespace.clone(), update.name.clone());
        self.note("update", &namespace, &name, || self.store.update_pod_status(update))
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> ApiResult<Arc<Pod>> {
        let (namespace, name) = (patch.namespace.clone(), patch.name.clone());
        self.note("patch", &namespace, &name, || self.store.patch_pod_status(patch))
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> ApiResult<Arc<Pod>> {
        self.note("delete", namespace, name, || self.store.delete_pod(namespace, name, options))
    }
}

/// One trace's world, plugin and oracle.
struct HostileTrace {
    rng: SplitMix64,
    seed: u64,
    store: Arc<MemoryApiServer>,
    pods: Arc<PodManager>,
    witness: Arc<Witness>,
    guard: Arc<podstatus_backends::GuardedApiServer>,
    view: Arc<HostView>,
    world: World,
    plugin: Box<dyn Plugin>,
    /// The pods of the trace, as the node holds them: (namespace, name, uid), the
    /// static pod's own UID for it (its mirror pod is in the API server).
    node_pods: Vec<(String, String, String)>,
    /// The oracle: what the harness handed, by UID.
    handed: BTreeMap<String, Handed>,
    /// What the harness handed of the pods it dropped as orphans: a request of such a
    /// pod queued before the drop may still write it, with what was handed.
    orphaned: BTreeMap<String, Handed>,
    faults: BTreeMap<&'static str, u64>,
    /// Pods recreated so far (each a new UID).
    recreated: u64,
}

fn pod(namespace: &str, name: &str, uid: &str, annotations: Value, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"namespace": namespace, "name": name, "uid": uid, "annotations": annotations},
        "spec": {"nodeName": NODE, "containers": [{"name": "app", "image": "app:1"}]},
        "status": {"phase": phase},
    }))
    .expect("a valid pod")
}

const PHASES: [&str; 4] = ["Pending", "Running", "Succeeded", "Failed"];

impl HostileTrace {
    fn new(hostile: &PluginImage, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let store = Arc::new(MemoryApiServer::new());
        let pods = Arc::new(PodManager::new());
        let mut node_pods = Vec::new();
        let count = 2 + (&mut rng as &mut dyn Entropy).below(4);
        for i in 0..count {
            let (name, uid) = (format!("p{i}"), format!("u{i}"));
            let phase = *(&mut rng as &mut dyn Entropy).pick(&PHASES[..2]);
            let p = pod("ns", &name, &uid, json!({}), phase);
            store.put_pod(p.clone()).expect("put");
            pods.add_pod(p);
            node_pods.push(("ns".to_owned(), name, uid));
        }
        // A static pod, its mirror pod the API server's copy.
        let source = podstatus_backends::pod_identity::CONFIG_SOURCE_ANNOTATION;
        let mirror = podstatus_backends::pod_identity::CONFIG_MIRROR_ANNOTATION;
        pods.add_pod(pod("kube-system", "etcd-node-1", "s1", json!({ source: "file" }), "Running"));
        let mirror_pod = pod("kube-system", "etcd-node-1", "m1", json!({ source: "file", mirror: "h" }), "Running");
        store.put_pod(mirror_pod.clone()).expect("put");
        pods.add_pod(mirror_pod);
        node_pods.push(("kube-system".into(), "etcd-node-1".into(), "s1".into()));
        pods.follow_api_server(&store);

        let deletion_safety = Arc::new(FixedDeletionSafety::new(true));
        let view = Arc::new(HostView::new(deletion_safety.clone()));
        let witness =
            Arc::new(Witness { store: Arc::clone(&store), reached: Mutex::default(), syncing: Mutex::default() });
        let guard = Arc::new(
            podstatus_backends::GuardedApiServer::new(
                witness.clone(),
                Arc::clone(&pods),
                Some(NODE.into()),
                Arc::clone(&view),
            )
            .with_lookup(store.clone()),
        );
        let world = World {
            api_server: guard.clone(),
            pod_manager: Arc::clone(&pods),
            deletion_safety,
            clock: Arc::new(SystemClock),
            queue: Arc::new(SyncQueue::new(1000)),
        };
        let mut plugin = Self::instantiate(hostile, &world);
        plugin.observe(Arc::clone(&view));
        HostileTrace {
            rng,
            seed,
            store,
            pods,
            witness,
            guard,
            view,
            world,
            plugin,
            node_pods,
            handed: BTreeMap::new(),
            orphaned: BTreeMap::new(),
            faults: BTreeMap::new(),
            recreated: 0,
        }
    }

    fn instantiate(image: &PluginImage, world: &World) -> Box<dyn Plugin> {
        Box::new(SupervisedPlugin::new(image.clone(), world.clone()).expect("the hostile guest instantiates"))
    }

    fn entropy(&mut self) -> &mut dyn Entropy {
        &mut self.rng
    }

    /// One of the first `len` pods of the node.
    fn pick_pod(&mut self, len: usize) -> usize {
        self.entropy().index(len)
    }

    /// The pod JSON the harness hands: the node's copy, with the guest's seed and the
    /// pods it may aim at (every pod of the node, and one of another node).
    fn pod_json(&mut self, index: usize) -> (String, String) {
        let uid = self.node_pods[index].2.clone();
        let held = self.pods.get_any(&uid).expect("the node holds its pods");
        let mut value: serde_json::Value = serde_json::from_str(held.json()).expect("a held pod's JSON");
        let targets: Vec<String> = self
            .node_pods
            .iter()
            .map(|(ns, n, u)| format!("{ns}/{n}/{u}"))
            .chain(["kube-system/etcd-node-1/m1".to_owned(), "other/elsewhere/u-elsewhere".to_owned()])
            .collect();
        let mut annotations = value["metadata"]["annotations"].as_object_mut().map(std::mem::take).unwrap_or_default();
        annotations.insert("podstatus.test/attack".into(), "random".into());
        annotations.insert("podstatus.test/seed".into(), self.seed.to_string().into());
        annotations.insert("podstatus.test/targets".into(), targets.join(" ").into());
        value["metadata"]["annotations"] = Value::Object(annotations);
        (value.to_string(), uid)
    }

    /// Records what the plugin now holds for `uid` after it answered an update, as the
    /// agent's handle does.
    fn note_accepted(
        &mut self,
        uid: Option<&str>,
        reported: Option<&str>,
        outcome: &Result<podstatus_runtime::bindings::UpdateOutcome, CallError>,
    ) {
        if let Ok(outcome) = outcome {
            let reply = Ok(podstatus_runtime::Reply::Update(*outcome));
            podstatus_runtime::note_accepted(&self.view, self.plugin.as_mut(), uid, reported, &reply);
        }
    }

    fn note(&mut self, result: Result<(), CallError>) {
        if let Err(CallError::Fault { kind, .. }) = result {
            *self.faults.entry(kind.as_str()).or_default() += 1;
        }
    }

    fn any_uid(&mut self) -> String {
        let mut uids: Vec<String> = self.node_pods.iter().map(|(_, _, uid)| uid.clone()).collect();
        uids.extend(["m1".to_owned(), "u-elsewhere".to_owned(), "crash".to_owned()]);
        self.entropy().pick(&uids).clone()
    }

    fn step(&mut self, hostile: &PluginImage) {
        let weights = [30, 5, 4, 6, 15, 15, 4, 3, 3, 3, 4, 3];
        match self.entropy().weighted(&weights) {
            0 => {
                let index = self.pick_pod(self.node_pods.len());
                let (pod, uid) = self.pod_json(index);
                let phase = (*self.entropy().pick(&PHASES)).to_owned();
                let mut status = json!({ "phase": phase });
                let entry = self.handed.entry(uid.clone()).or_default();
                entry.phases.insert(phase);
                if self.rng.next_u64().is_multiple_of(2) {
                    let ip = format!("10.0.0.{}", index + 1);
                    status["podIP"] = json!(ip);
                    self.handed.get_mut(&uid).expect("noted").ips.insert(ip);
                }
                if self.rng.next_u64().is_multiple_of(3) {
                    let ready = if self.rng.next_u64().is_multiple_of(2) { "True" } else { "False" };
                    status["conditions"] = json!([{ "type": "Ready", "status": ready }]);
                    let conditions = &mut self.handed.get_mut(&uid).expect("noted").conditions;
                    conditions.insert(("Ready".to_owned(), ready.to_owned()));
                }
                let status = status.to_string();
                let reported = self.view.report_status_json(&pod, &status);
                let outcome = self.plugin.set_pod_status(&pod, &status);
                self.note_accepted(reported.as_deref(), Some(&status), &outcome);
                self.note(outcome.map(drop));
            }
            1 => {
                let index = self.pick_pod(self.node_pods.len());
                let (pod, uid) = self.pod_json(index);
                let own = self
                    .pods
                    .get_any(&uid)
                    .and_then(|p| p.field(podstatus_backends::PodField::Phase).map(str::to_owned))
                    .unwrap_or_default();
                let entry = self.handed.entry(uid).or_default();
                entry.terminated = true;
                entry.phases.insert(own);
                let reported = self.view.report_termination_json(&pod);
                let outcome = self.plugin.terminate_pod(&pod);
                self.note_accepted(reported.as_deref(), None, &outcome);
                self.note(outcome.map(drop));
            }
            2 => {
                let keep: Vec<String> =
                    self.handed.keys().filter(|_| !self.rng.next_u64().is_multiple_of(3)).cloned().collect();
                let (kept, orphaned) =
                    std::mem::take(&mut self.handed).into_iter().partition(|(uid, _)| keep.contains(uid));
                self.handed = kept;
                self.orphaned.extend(orphaned);
                self.view.retain(&keep);
                let outcome = self.plugin.remove_orphaned_statuses(&keep);
                self.note(outcome.map(drop));
            }
            3 => {
                let uid = self.any_uid();
                let outcome = self.plugin.set_pod_resize_condition(&uid, ResizeCondition::Pending, "Deferred", "", 1);
                self.note(outcome);
            }
            4 => {
                while let Some(request) = self.world.queue.pop() {
                    *self.witness.syncing.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(request.pod_uid.clone());
                    let outcome = self.plugin.sync_pod(&request);
                    *self.witness.syncing.lock().unwrap_or_else(PoisonError::into_inner) = None;
                    if let Ok(
                        podstatus_runtime::bindings::SyncOutcome::Deleted
                        | podstatus_runtime::bindings::SyncOutcome::Recreated,
                    ) = &outcome
                    {
                        self.view.forget_accepted(&request.pod_uid);
                    }
                    self.note(outcome.map(drop));
                }
            }
            5 => {
                let outcome = self.plugin.sync_batch();
                self.note(outcome.map(drop));
            }
            6 => {
                let mut new = Self::instantiate(hostile, &self.world);
                let pods = Arc::clone(&self.pods);
                match podstatus_replay::swap_held(self.plugin.as_mut(), new.as_mut(), Some(&self.view), &pods) {
                    Ok(_) => {
                        new.observe(Arc::clone(&self.view));
                        self.plugin = new;
                    }
                    Err(podstatus_runtime::SwapError::Source(e) | podstatus_runtime::SwapError::Refused(e)) => {
                        self.note(Err(e))
                    }
                    Err(_) => {}
                }
            }
            7 => {
                let outcome = self.plugin.get_pod_resize_conditions("crash");
                self.note(outcome.map(drop));
            }
            8 => {
                // Marked for deletion in the API server (and the pod manager follows).
                let index = self.pick_pod(self.node_pods.len());
                let (namespace, name, _) = self.node_pods[index].clone();
                if let Ok(current) = self.store.get_pod(&namespace, &name) {
                    let mut marked = (*current).clone();
                    marked.metadata.deletion_timestamp =
                        Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).expect("a time"));
                    let _ = self.store.put_pod(marked);
                }
            }
            9 => {
                // Recreated under the same name, with a new UID (not a static pod).
                let index = self.pick_pod(self.node_pods.len() - 1);
                let (namespace, name, old) = self.node_pods[index].clone();
                self.recreated += 1;
                let uid = format!("{old}-r{}", self.recreated);
                self.store.remove_pod(&namespace, &name);
                self.pods.remove_pod(&old);
                let fresh = pod(&namespace, &name, &uid, json!({}), "Pending");
                let _ = self.store.put_pod(fresh.clone());
                self.pods.add_pod(fresh);
                self.node_pods[index].2 = uid;
            }
            10 => {
                let uid = self.any_uid();
                let outcome = self.plugin.get_pod_status(&uid);
                self.note(outcome.map(drop));
            }
            _ => {
                let uid = self.any_uid();
                let outcome = self.plugin.set_container_readiness(&uid, "containerd://app", true);
                self.note(outcome.map(drop));
            }
        }
    }

    /// Holds every write that reached the API server since the last check against the
    /// oracle (see the module documentation).
    fn check(&mut self, figures: &mut HostileFigures) -> Result<(), String> {
        let reached = std::mem::take(&mut *self.witness.reached.lock().unwrap_or_else(PoisonError::into_inner));
        for write in reached {
            figures.writes += 1;
            let pod = write.after.as_ref().or(write.before.as_ref()).expect("a write of a pod that was there");
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let handed_as = self.pods.translate_pod_uid(&uid);
            let requested = |key: &String| write.syncing.as_ref() == Some(key);
            let orphaned =
                [&handed_as, &uid].into_iter().find(|key| requested(key)).and_then(|key| self.orphaned.get(key));
            let live = self.handed.get(&handed_as).or_else(|| self.handed.get(&uid)).cloned();
            // A request's sync queued before its pod was dropped writes what was handed
            // then, even once the pod is handed again.
            let handed = match (live, orphaned.cloned()) {
                (Some(mut live), Some(before)) => {
                    live.merge(before);
                    Some(live)
                }
                (live, before) => live.or(before),
            };
            let Some(handed) = handed else {
                figures.beyond_rule += 1;
                return Err(format!("a {} of pod {uid} ({handed_as}), whose status was never handed", write.verb));
            };
            if write.verb == "delete" {
                self.handed.remove(&handed_as);
                continue;
            }
            let after = write.after.as_ref().and_then(|p| p.status.clone()).unwrap_or_default();
            let before = write.before.as_ref().and_then(|p| p.status.clone()).unwrap_or_default();
            let phase = after.phase.clone().unwrap_or_default();
            let allowed = handed.phases.contains(&phase)
                || (handed.terminated && phase == "Failed")
                || before.phase.clone().unwrap_or_default() == phase;
            if !allowed {
                figures.beyond_rule += 1;
                return Err(format!(
                    "a {} of pod {uid} set phase {phase:?}, never handed ({:?})",
                    write.verb, handed.phases
                ));
            }
            let known: BTreeSet<&str> = ips_of(&before).collect();
            if let Some(ip) = ips_of(&after).find(|ip| !handed.ips.contains(*ip) && !known.contains(ip)) {
                figures.beyond_rule += 1;
                return Err(format!("a {} of pod {uid} carried IP {ip}, never handed", write.verb));
            }
            let had = |type_: &str, status: &str| {
                before.conditions.iter().flatten().any(|c| c.type_ == type_ && c.status == status)
            };
            let conditions = after.conditions.iter().flatten();
            if let Some(c) =
                conditions.filter(|c| !had(&c.type_, &c.status)).find(|c| !handed.allows_condition(&c.type_, &c.status))
            {
                figures.beyond_rule += 1;
                return Err(format!(
                    "a {} of pod {uid} set condition {} {}, never handed",
                    write.verb, c.type_, c.status
                ));
            }
        }
        Ok(())
    }

    /// Swaps the hostile plugin for `honest`, held against the host's record, and checks
    /// that the honest plugin holds every status the record says was accepted.
    fn check_nothing_lost(mut self, honest: &PluginImage) -> Result<(), String> {
        let mut new: Box<dyn Plugin> =
            Box::new(honest.instantiate(self.world.clone()).map_err(|e| format!("the honest plugin: {e}"))?);
        let pods = Arc::clone(&self.pods);
        match podstatus_replay::swap_held(self.plugin.as_mut(), new.as_mut(), Some(&self.view), &pods) {
            Ok(_) => {}
            // The hostile plugin could not hand over a state at all (it faulted, or its
            // document is no state): nothing was moved, nothing to hold.
            Err(podstatus_runtime::SwapError::Source(_)) => return Ok(()),
            Err(e) => return Err(format!("the swap to the honest plugin: {e}")),
        }
        for record in self.view.accepted_records_where(None, |_, _| true) {
            if self.pods.get_any(&record.uid).is_none() {
                continue;
            }
            let held = new.get_pod_status(&record.uid).map_err(|e| format!("reading {}: {e}", record.uid))?;
            let held = held.map(|cached| (cached.version, cached.status));
            if held.as_ref().map(|(v, _)| *v) != Some(record.accepted.version) {
                return Err(format!(
                    "pod {}: the host recorded version {} accepted, the honest plugin holds {held:?}",
                    record.uid, record.accepted.version
                ));
            }
        }
        Ok(())
    }
}
