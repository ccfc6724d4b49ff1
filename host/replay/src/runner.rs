//! Running a checked trace against a plugin.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use std::time::Duration;

use serde_json::Value;

use crate::held_calls::HeldCalls;
use crate::recorder::RecordingApiServer;
use crate::report::{Call, Fault, Report};
use crate::trace::{PodRef, Problem, Step, Trace, TraceError};
use podstatus_backends::FixedDeletionSafety;
use podstatus_backends::MemoryApiServer;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;
use podstatus_backends::VirtualClock;
use podstatus_backends::{ApiServer, GuardedApiServer, HostView};
use podstatus_runtime::World;
use podstatus_runtime::{CallError, LoadError, Plugin, PluginExt, split_sync};

/// Makes the plugin under test for a world (a component instance, or native logic).
pub type PluginFactory<'a> = dyn Fn(World) -> Result<Box<dyn Plugin>, LoadError> + 'a;

/// Loads the plugin file a `swap` step names (already resolved against the trace's
/// directory) for a world; an error is a refused swap.
pub type SwapLoader<'a> = dyn Fn(&std::path::Path, World) -> Result<Box<dyn Plugin>, LoadError> + 'a;

/// A finished replay.
#[derive(Debug)]
pub struct ReplayOutcome {
    /// The report to print.
    pub report: Report,
}

impl ReplayOutcome {
    /// Whether the plugin faulted (the replay's exit code 1).
    pub fn faulted(&self) -> bool {
        self.report.fault.is_some()
    }
}

/// The scripted world of one replay.
struct Scene {
    store: Arc<MemoryApiServer>,
    recorder: Arc<RecordingApiServer>,
    pod_manager: Arc<PodManager>,
    clock: Arc<VirtualClock>,
    deletion_safety: Arc<FixedDeletionSafety>,
    /// What the host knows in a replay with `--node`: the statuses the trace's
    /// `set-pod-status` and `terminate-pod` steps gave (their IPs), and `deletion_safe`
    /// as "no container can run". A trace with `swap` steps keeps one too, for its
    /// record of what the plugin accepted (see `swap_record`), guard or not. `None`
    /// otherwise.
    host_view: Option<Arc<HostView>>,
    /// Whether the view records what the plugin accepts: the trace has `swap` steps,
    /// which are held against that record as the agent's are.
    records_accepted: bool,
    queue: Arc<SyncQueue>,
    /// The last full object the trace gave for each UID, for a step that names a pod
    /// by a UID that neither the pod manager nor the API server holds any more.
    last_seen: BTreeMap<String, Arc<Pod>>,
}

impl Scene {
    fn new(trace: &Trace) -> Result<Scene, TraceError> {
        let store = Arc::new(MemoryApiServer::new());
        for (i, pod) in trace.apiserver.iter().enumerate() {
            store.put_pod(pod.clone()).map_err(|e| TraceError::World {
                list: "apiserver",
                index: i,
                problem: Problem::Store(e),
            })?;
        }
        let pod_manager = Arc::new(PodManager::new());
        for pod in &trace.pod_manager {
            pod_manager.add_pod(pod.clone());
        }
        // From here on the pod manager follows the API server like a watch.
        pod_manager.follow_api_server(&store);
        let mut last_seen = BTreeMap::new();
        let step_pods = trace.steps.iter().filter_map(|step| match step {
            Step::PodManagerAdd { pod } | Step::ApiserverPut { pod } => Some(pod),
            _ => None,
        });
        for pod in trace.apiserver.iter().chain(&trace.pod_manager).chain(step_pods) {
            if let Some(uid) = &pod.metadata.uid {
                last_seen.entry(uid.clone()).or_insert_with(|| Arc::new(pod.clone()));
            }
        }
        let deletion_safety = Arc::new(FixedDeletionSafety::new(trace.deletion_safe));
        // With --node the plugin's calls go through the agent's reach guard: the
        // recorder in front of it records them as the plugin made them (refusals
        // included), and the guard reads the store directly.
        let records_accepted = trace.steps.iter().any(|step| matches!(step, Step::Swap { .. }));
        let (behind_recorder, host_view): (Arc<dyn ApiServer>, _) = match &trace.guard_node {
            None if records_accepted => (store.clone(), Some(Arc::new(HostView::new(deletion_safety.clone())))),
            None => (store.clone(), None),
            Some(node) => {
                let host_view = Arc::new(HostView::new(deletion_safety.clone()));
                let guard = GuardedApiServer::new(
                    store.clone(),
                    Arc::clone(&pod_manager),
                    Some(node.clone()),
                    Arc::clone(&host_view),
                );
                (Arc::new(guard), Some(host_view))
            }
        };
        Ok(Scene {
            last_seen,
            recorder: Arc::new(RecordingApiServer::new(behind_recorder)),
            store,
            pod_manager,
            clock: Arc::new(VirtualClock::new(trace.clock)),
            deletion_safety,
            host_view,
            records_accepted,
            queue: Arc::new(SyncQueue::default()),
        })
    }

    /// Records in the view what the plugin now holds for `uid` after a step's status
    /// update answered `outcome` (only when the trace swaps: see `records_accepted`).
    fn note_accepted(
        &self,
        plugin: &mut dyn Plugin,
        uid: Option<&str>,
        reported: Option<&str>,
        outcome: &Result<podstatus_runtime::bindings::UpdateOutcome, CallError>,
    ) {
        if let (Some(view), true, Ok(outcome)) = (&self.host_view, self.records_accepted, outcome) {
            let reply = Ok(podstatus_runtime::Reply::Update(*outcome));
            podstatus_runtime::note_accepted(view, plugin, uid, reported, &reply);
        }
    }

    /// A sync of `uid` ended with `outcome`: a status the plugin dropped as it should
    /// (the pod deleted, or recreated) leaves the record of accepted statuses too.
    fn note_outcome(&self, uid: &str, outcome: podstatus_runtime::bindings::SyncOutcome) {
        use podstatus_runtime::bindings::SyncOutcome;
        if let (Some(view), true, SyncOutcome::Deleted | SyncOutcome::Recreated) =
            (&self.host_view, self.records_accepted, outcome)
        {
            view.forget_accepted(uid);
        }
    }

    fn world(&self) -> World {
        World {
            api_server: self.recorder.clone(),
            pod_manager: self.pod_manager.clone(),
            deletion_safety: self.deletion_safety.clone(),
            clock: self.clock.clone(),
            queue: self.queue.clone(),
        }
    }

    /// The JSON of the pod a step names. A UID means the pod manager's current copy;
    /// a UID the pod manager no longer holds falls back to the API server's object,
    /// then to the trace's first object with that UID (the check up front guarantees
    /// there is one).
    fn pod_json(&self, pod: &PodRef, step: usize) -> Result<String, TraceError> {
        let uid = match pod {
            PodRef::Object(json) => return Ok(json.clone()),
            PodRef::Uid(uid) => uid,
        };
        // The pod manager keeps its pods' JSON; k8s-openapi's types always serialise.
        if let Some(held) = self.pod_manager.get_any(uid) {
            return Ok(held.json().to_owned());
        }
        let pod = self
            .store
            .get_pod_by_uid(uid)
            .or_else(|| self.last_seen.get(uid).cloned())
            .ok_or_else(|| TraceError::Step { step, problem: Problem::PodGone(uid.clone()) })?;
        Ok(serde_json::to_string(&*pod).unwrap_or_default())
    }
}

/// Runs `trace` against the plugin `make_plugin` builds. An unusable trace (including
/// steps this plugin cannot run) is an error before anything runs; a plugin fault ends
/// the run with the report so far.
pub fn run(trace: &Trace, make_plugin: &PluginFactory<'_>) -> Result<ReplayOutcome, TraceError> {
    let mut replay = Stepper::new(trace, make_plugin)?;
    while replay.step()?.is_some() {}
    Ok(replay.finish())
}

/// [`run`], with `swap` steps loading plugins through `loader`.
pub fn run_with_swaps<'t>(
    trace: &'t Trace,
    make_plugin: &PluginFactory<'_>,
    loader: &'t SwapLoader<'t>,
) -> Result<ReplayOutcome, TraceError> {
    let mut replay = Stepper::new(trace, make_plugin)?.with_swap_loader(loader);
    while replay.step()?.is_some() {}
    Ok(replay.finish())
}

/// A replay driven one step at a time, for callers that look at the world between
/// steps (the fuzzer checks its invariants after every step). [`run`] is a stepper
/// driven to the end, so both produce the same report.
pub struct Stepper<'t> {
    trace: &'t Trace,
    scene: Scene,
    plugin: Box<dyn Plugin>,
    /// The next step to run.
    next: usize,
    results: Vec<Value>,
    /// Calls of the steps run so far (taken from the recorder after each step, so a
    /// caller can tell which calls a step made).
    calls: Vec<Call>,
    fault: Option<Fault>,
    swap_loader: Option<&'t SwapLoader<'t>>,
    /// Since a `hold-api` step (until `release-api`): the calls held for the trace.
    held: Option<HeldCalls>,
}

impl<'t> Stepper<'t> {
    /// Checks `trace` and sets up its world and plugin; nothing runs yet.
    pub fn new(trace: &'t Trace, make_plugin: &PluginFactory<'_>) -> Result<Self, TraceError> {
        let scene = Scene::new(trace)?;
        let plugin = make_plugin(scene.world()).map_err(TraceError::Plugin)?;
        Ok(Stepper {
            trace,
            scene,
            plugin,
            next: 0,
            results: Vec::with_capacity(trace.steps.len()),
            calls: Vec::new(),
            fault: None,
            swap_loader: None,
            held: None,
        })
    }

    /// Lets `swap` steps load plugins with `loader`; without one they are unusable.
    pub fn with_swap_loader(mut self, loader: &'t SwapLoader<'t>) -> Self {
        self.swap_loader = Some(loader);
        self
    }

    /// Runs the next step and returns its index; None once the trace has ended or the
    /// plugin has faulted.
    pub fn step(&mut self) -> Result<Option<usize>, TraceError> {
        if self.fault.is_some() {
            return Ok(None);
        }
        let Some(step) = self.trace.steps.get(self.next) else {
            return Ok(None);
        };
        let i = self.next;
        self.next += 1;
        self.scene.recorder.set_step(i);
        let outcome = match step {
            Step::Swap { plugin } => self.swap(plugin, i),
            Step::HoldApi | Step::CompleteApi { .. } | Step::ReleaseApi | Step::Sync | Step::SyncBatch
                if self.held.is_some() || matches!(step, Step::HoldApi | Step::CompleteApi { .. }) =>
            {
                self.held_step(step, i)
            }
            Step::ReleaseApi => Ok(Ok(Value::Null)),
            step => run_step(&self.scene, self.plugin.as_mut(), step, i),
        };
        self.calls.extend(self.scene.recorder.take_calls());
        match outcome? {
            Ok(result) => self.results.push(result),
            Err(CallError::Fault { call, message, .. }) => {
                self.results.push(Value::Null);
                self.fault = Some(Fault { step: i, message: format!("{call}: {message}") });
            }
            Err(refused) => self.results.push(serde_json::json!({ "error": refused.to_string() })),
        }
        Ok(Some(i))
    }

    /// The steps that hold, make and release calls, and `sync` and `sync-batch` while
    /// calls are held: they plan and start syncs, whose calls are held.
    fn held_step(&mut self, step: &Step, index: usize) -> Result<Result<Value, CallError>, TraceError> {
        let plugin = self.plugin.as_mut();
        if !plugin.contract().has_split_syncs() {
            let problem = Problem::Unsupported(format!(
                "{}: the plugin in use implements {}, whose syncs call the API server themselves",
                step_op(step),
                plugin.contract()
            ));
            return Err(TraceError::Step { step: index, problem });
        }
        // `complete-api` before any `hold-api` finds nothing held and holds nothing.
        if self.held.is_none() && matches!(step, Step::CompleteApi { .. }) {
            return Ok(Ok(serde_json::json!({ "completed": false, "held": 0 })));
        }
        let held = self.held.get_or_insert_with(HeldCalls::default);
        let world = self.scene.world();
        let recorder = &self.scene.recorder;
        let result = match step {
            Step::HoldApi => Ok(()),
            Step::CompleteApi { uid } => {
                return Ok(held
                    .complete(plugin, &world, recorder, uid.as_deref())
                    .map(|completed| serde_json::json!({ "completed": completed, "held": held.len() })));
            }
            Step::ReleaseApi => {
                let released = held.release(plugin, &world, recorder);
                self.held = None;
                released
            }
            Step::Sync => (|| {
                while let Some(request) = self.scene.queue.pop() {
                    match plugin.plan_sync_pod(&request) {
                        Ok(syncs) => held.run_planned(plugin, syncs)?,
                        Err(e @ CallError::Fault { .. }) => return Err(e),
                        Err(e) => tracing::warn!("sync of {}: {e}", request.pod_uid),
                    }
                }
                Ok(())
            })(),
            Step::SyncBatch => split_sync::plan_whole_batch(plugin, split_sync::DEFAULT_BATCH_SLICE_PODS)
                .and_then(|plan| held.run_planned(plugin, plan.syncs)),
            _ => unreachable!("only the steps above are held steps"),
        };
        Ok(result.map(|()| Value::Null))
    }

    /// A `swap` step: the new plugin takes the running one's state, or the swap is
    /// refused and the running plugin stays. A fault of the running plugin while it
    /// hands over its state is its fault, like any other. Held calls are made first,
    /// oldest first (syncs in flight finish on the plugin that started them, as in the
    /// agent); holding goes on if the new plugin's syncs can be held.
    fn swap(&mut self, file: &std::path::Path, index: usize) -> Result<Result<Value, CallError>, TraceError> {
        let Some(loader) = self.swap_loader else {
            let problem = Problem::Unsupported("swap: this replay cannot load plugins".into());
            return Err(TraceError::Step { step: index, problem });
        };
        if let Some(held) = &mut self.held
            && let Err(fault) = held.release(self.plugin.as_mut(), &self.scene.world(), &self.scene.recorder)
        {
            return Ok(Err(fault));
        }
        let refused = |error: String| Ok(Ok(serde_json::json!({ "swapped": false, "error": error })));
        let mut new = match loader(&self.trace.base_dir.join(file), self.scene.world()) {
            Ok(new) => new,
            Err(e) => return refused(format!("loading {}: {e}", file.display())),
        };
        let record = self.scene.host_view.as_ref().filter(|_| self.scene.records_accepted);
        let moved =
            crate::swap_record::swap(self.plugin.as_mut(), new.as_mut(), record.map(|v| &**v), &self.scene.pod_manager);
        match moved {
            Ok(repaired) => {
                if !new.contract().has_split_syncs() {
                    self.held = None;
                }
                if let Some(view) = record {
                    new.observe(Arc::clone(view));
                }
                self.plugin = new;
                Ok(Ok(crate::swap_record::swapped(&repaired)))
            }
            Err(podstatus_runtime::SwapError::Source(fault @ CallError::Fault { .. })) => Ok(Err(fault)),
            Err(e) => refused(e.to_string()),
        }
    }

    /// The index of the next step to run.
    pub fn next_step(&self) -> usize {
        self.next
    }

    /// The plugin, for calls between steps (they are not recorded as steps; API calls
    /// they make are, attributed to the last step run).
    pub fn plugin(&mut self) -> &mut dyn Plugin {
        self.plugin.as_mut()
    }

    /// The API server's store behind the recorder.
    pub fn store(&self) -> &Arc<MemoryApiServer> {
        &self.scene.store
    }

    /// The recorder in front of the store: the plugin's API server.
    pub fn recorder(&self) -> &Arc<RecordingApiServer> {
        &self.scene.recorder
    }

    /// The node's pod manager.
    pub fn pod_manager(&self) -> &Arc<PodManager> {
        &self.scene.pod_manager
    }

    /// The results of the steps run so far.
    pub fn results(&self) -> &[Value] {
        &self.results
    }

    /// The API calls of the steps run so far.
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// The plugin's fault, once it has faulted.
    pub fn fault(&self) -> Option<&Fault> {
        self.fault.as_ref()
    }

    /// The report of the steps run so far. Calls still held are made first, oldest
    /// first (recorded with the last step run).
    pub fn finish(mut self) -> ReplayOutcome {
        if let Some(mut held) = self.held.take()
            && !held.is_empty()
            && self.fault.is_none()
            && let Err(e) = held.release(self.plugin.as_mut(), &self.scene.world(), &self.scene.recorder)
        {
            let step = self.next.saturating_sub(1);
            if let CallError::Fault { call, message, .. } = e {
                self.fault = Some(Fault { step, message: format!("{call}: {message}") });
            }
        }
        self.calls.extend(self.scene.recorder.take_calls());
        let report = Report {
            results: self.results,
            calls: self.calls,
            apiserver: self.scene.store.list_pods(),
            fault: self.fault,
        };
        ReplayOutcome { report }
    }
}

type StepResult = Result<Value, CallError>;

/// Steps whose result the report records as null.
fn null<T>(result: Result<T, CallError>) -> StepResult {
    result.map(|_| Value::Null)
}

fn run_step(scene: &Scene, plugin: &mut dyn Plugin, step: &Step, index: usize) -> Result<StepResult, TraceError> {
    Ok(match step {
        Step::SetPodStatus { pod, status } => {
            let pod = scene.pod_json(pod, index)?;
            let uid = scene.host_view.as_ref().and_then(|view| view.report_status_json(&pod, status));
            let outcome = plugin.set_pod_status(&pod, status);
            scene.note_accepted(plugin, uid.as_deref(), Some(status), &outcome);
            null(outcome)
        }
        Step::SetContainerReadiness { uid, container_id, ready } => {
            if let Some(view) = &scene.host_view {
                view.report_readiness(uid, container_id, *ready);
            }
            let outcome = plugin.set_container_readiness(uid, container_id, *ready);
            scene.note_accepted(plugin, Some(uid), None, &outcome);
            null(outcome)
        }
        Step::TerminatePod { pod } => {
            let pod = scene.pod_json(pod, index)?;
            let uid = scene.host_view.as_ref().and_then(|view| view.report_termination_json(&pod));
            let outcome = plugin.terminate_pod(&pod);
            scene.note_accepted(plugin, uid.as_deref(), None, &outcome);
            null(outcome)
        }
        Step::RemoveOrphanedStatuses { keep } => {
            if let Some(view) = &scene.host_view {
                view.retain(keep);
            }
            null(plugin.remove_orphaned_statuses(keep))
        }
        Step::GetPodStatus { uid } => plugin.get_pod_status(uid).and_then(|found| get_result(found.as_ref())),
        Step::Sync => sync_queued(scene, plugin),
        Step::SyncBatch => null(plugin.sync_batch()),
        Step::AdvanceClock { ms } => {
            scene.clock.advance(Duration::from_millis(*ms));
            Ok(Value::Null)
        }
        Step::PodManagerAdd { pod } => {
            scene.pod_manager.add_pod(pod.clone());
            Ok(Value::Null)
        }
        Step::PodManagerRemove { uid } => {
            scene.pod_manager.remove_pod(uid);
            Ok(Value::Null)
        }
        Step::ApiserverPut { pod } => {
            scene
                .store
                .put_pod(pod.clone())
                .map_err(|e| TraceError::Step { step: index, problem: Problem::Store(e) })?;
            Ok(Value::Null)
        }
        Step::ApiserverDelete { namespace, name } => {
            scene.store.remove_pod(namespace, name);
            Ok(Value::Null)
        }
        Step::Fail { verb, error, times } => {
            scene.recorder.arm(*verb, *error, *times);
            Ok(Value::Null)
        }
        Step::SetDeletionSafe { value } => {
            scene.deletion_safety.set(*value);
            Ok(Value::Null)
        }
        Step::SetContainerStartup { uid, container_id, started } => {
            if let Some(view) = &scene.host_view {
                view.report_startup(uid, container_id, *started);
            }
            match plugin.set_container_startup(uid, container_id, *started) {
                Err(CallError::Unsupported { contract, .. }) => {
                    let problem = Problem::Unsupported(format!(
                        "set-container-startup: the plugin in use implements {contract}, which does not export it"
                    ));
                    return Err(TraceError::Step { step: index, problem });
                }
                result => {
                    scene.note_accepted(plugin, Some(uid), None, &result);
                    null(result)
                }
            }
        }
        Step::SetPodResizeCondition { uid, condition, reason, message, observed_generation } => resize_step(
            index,
            "set-pod-resize-condition",
            plugin.set_pod_resize_condition(uid, resize_condition(*condition), reason, message, *observed_generation),
            |()| Value::Null,
        )?,
        Step::ClearPodResizeCondition { uid, condition } => resize_step(
            index,
            "clear-pod-resize-condition",
            plugin.clear_pod_resize_condition(uid, resize_condition(*condition)),
            |cleared| serde_json::json!({ "cleared": cleared }),
        )?,
        Step::GetPodResizeConditions { uid } => {
            match resize_step(index, "get-pod-resize-conditions", plugin.get_pod_resize_conditions(uid), |c| c)? {
                Ok(conditions) => conditions_result(&conditions),
                Err(e) => Err(e),
            }
        }
        Step::Swap { .. } | Step::HoldApi | Step::CompleteApi { .. } | Step::ReleaseApi => {
            unreachable!("the stepper swaps plugins and holds calls itself")
        }
    })
}

/// A step's `op`, for messages.
fn step_op(step: &Step) -> String {
    serde_json::to_value(step)
        .ok()
        .and_then(|v| v.get("op").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

/// What the scheduler does for each request taken off the queue, until it is empty.
fn sync_queued(scene: &Scene, plugin: &mut dyn Plugin) -> StepResult {
    while let Some(request) = scene.queue.pop() {
        match plugin.sync_pod(&request) {
            Ok(outcome) => scene.note_outcome(&request.pod_uid, outcome),
            Err(e @ CallError::Fault { .. }) => return Err(e),
            // A refused request (the plugin does not know it) is logged, as the
            // scheduler does, and the queue goes on.
            Err(e) => tracing::warn!("sync of {}: {e}", request.pod_uid),
        }
    }
    Ok(Value::Null)
}

/// A resize step's answer: a plugin that does not export the call (an older contract,
/// or a logic without in-place resize) makes the trace unusable, as
/// `set-container-startup` does on contract 0.1.0; anything else is the step's result.
fn resize_step<T, R>(
    index: usize,
    op: &str,
    answer: Result<T, CallError>,
    result: impl FnOnce(T) -> R,
) -> Result<Result<R, CallError>, TraceError> {
    match answer {
        Err(CallError::Unsupported { contract, .. }) => {
            let problem = Problem::Unsupported(format!(
                "{op}: the plugin in use implements {contract} without in-place resize, which does not export it"
            ));
            Err(TraceError::Step { step: index, problem })
        }
        answer => Ok(answer.map(result)),
    }
}

/// The trace's name of a resize condition as the host's.
fn resize_condition(name: crate::trace::ResizeConditionName) -> podstatus_runtime::ResizeCondition {
    match name {
        crate::trace::ResizeConditionName::Pending => podstatus_runtime::ResizeCondition::Pending,
        crate::trace::ResizeConditionName::InProgress => podstatus_runtime::ResizeCondition::InProgress,
    }
}

/// `get-pod-resize-conditions`' result, recorded as `get-pod-status`'s is: each
/// condition as JSON (the host has checked their shape and size already).
fn conditions_result(conditions: &[String]) -> StepResult {
    let parsed: Result<Vec<Value>, _> = conditions.iter().map(|c| serde_json::from_str::<Value>(c)).collect();
    let conditions = parsed.map_err(|e| CallError::Fault {
        kind: podstatus_runtime::FaultKind::ResizeConditions,
        call: "get-pod-resize-conditions",
        message: format!("returned a condition that is not JSON: {e}"),
    })?;
    Ok(serde_json::json!({ "conditions": conditions }))
}

fn get_result(found: Option<&podstatus_runtime::bindings::CachedStatus>) -> StepResult {
    let Some(cached) = found else {
        return Ok(serde_json::json!({ "found": false }));
    };
    // A status that is not JSON at all is the plugin's fault, not the trace's.
    let status: Value = serde_json::from_str(&cached.status).map_err(|e| CallError::Fault {
        kind: podstatus_runtime::FaultKind::Trap,
        call: "get-pod-status",
        message: format!("returned a status that is not JSON: {e}"),
    })?;
    Ok(serde_json::json!({ "found": true, "version": cached.version, "status": status }))
}
