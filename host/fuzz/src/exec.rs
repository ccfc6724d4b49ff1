//! Running one trace under the invariants: the replay's own stepper, the plugin's
//! cache read after every step, the statuses it writes caught from the API server's
//! change events, and a quiet ending (faults removed, the queue drained, one batch
//! sync) before the final comparison.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::{Pod, PodStatus};

use crate::final_state::{
    Difference, FinalState, StaleCopies, differences, final_difference, read_cache as read_final_cache,
    recreated_unseen,
};
use crate::invariants::{
    CacheView, Cached, Checker, Invariant, KnownIssue, Violation, Write, WriteSemantics, check_deterministic,
    check_quiescence, first_difference,
};
use crate::unread_classes::UnreadClass;
use podstatus_backends::{ApiServer, DeleteOptions, PodEvent, StatusUpdate};
use podstatus_plugins::{LogicVersion, NativePlugin};
use podstatus_replay::{Call, FailError, FailVerb, PodRef, Report, Step, Stepper, Trace, TraceError};
use podstatus_runtime::World;
use podstatus_runtime::{CallError, LoadError, Plugin, PluginExt, PluginImage};

/// Makes a plugin over a world: any [`Plugin`], e.g. one with a planted bug in a test.
pub type PluginMaker = Arc<dyn Fn(World) -> Result<Box<dyn Plugin>, LoadError> + Send + Sync>;

/// The plugin under test.
#[derive(Clone)]
pub enum Target {
    /// A logic version linked natively (no sandbox).
    Native(LogicVersion),
    /// A component in the sandbox.
    Component(Box<PluginImage>),
    /// Whatever the function makes.
    Custom(PluginMaker),
}

impl Target {
    /// A fresh plugin over `world`.
    pub fn instantiate(&self, world: World) -> Result<Box<dyn Plugin>, LoadError> {
        match self {
            Target::Native(version) => Ok(Box::new(NativePlugin::new(world, *version))),
            Target::Component(image) => image.instantiate(world).map(|p| Box::new(p) as Box<dyn Plugin>),
            Target::Custom(make) => make(world),
        }
    }

    /// Whether the target's syncs can be held (contract 0.2.0), so its traces may script
    /// interleavings. A custom maker is asked by instantiating it once.
    pub fn can_interleave(&self) -> bool {
        match self {
            Target::Native(_) => false,
            Target::Component(image) => image.contract().has_split_syncs(),
            Target::Custom(make) => make(throwaway_world()).is_ok_and(|p| p.contract().has_split_syncs()),
        }
    }
}

/// An empty world, for asking a custom plugin maker what it makes.
fn throwaway_world() -> World {
    World {
        api_server: Arc::new(podstatus_backends::MemoryApiServer::new()),
        pod_manager: Arc::new(podstatus_backends::PodManager::new()),
        deletion_safety: Arc::new(podstatus_backends::FixedDeletionSafety::new(true)),
        clock: Arc::new(podstatus_backends::SystemClock),
        queue: Arc::new(podstatus_backends::SyncQueue::default()),
    }
}

/// The steps the fuzzer appends to every trace to make it quiet: before them the
/// armed faults are removed; then the queue is drained and one batch sync runs, the
/// calls held (if the trace holds them; else a no-op) are made, and one more batch
/// sync runs. The release comes after the first two so they keep their places in
/// recorded findings; the last batch is the kubelet's next periodic one, which repairs
/// what a held write landing late left behind (a status written from a snapshot older
/// than the cache, as upstream's late write would be) - without it the trace is not
/// quiet yet.
pub fn quiescence_steps() -> [Step; 4] {
    [Step::Sync, Step::SyncBatch, Step::ReleaseApi, Step::SyncBatch]
}

/// `trace` with the quiescence steps appended.
pub fn with_quiescence(trace: &Trace) -> Trace {
    let mut full = trace.clone();
    full.steps.extend(quiescence_steps());
    full
}

/// One run of a trace.
#[derive(Debug)]
pub struct Run {
    /// The report, compact JSON (what determinism compares).
    pub report: Vec<u8>,
    /// The report itself.
    pub parsed: Report,
    /// The first invariant broken, when the run checked them.
    pub violation: Option<Violation>,
    /// Steps run (quiescence included).
    pub steps: usize,
    /// Known issues seen (when checking, not strictly).
    pub known: BTreeMap<KnownIssue, usize>,
    /// The plugin's cache after the last step, when the run was asked to read it
    /// (None also when the plugin faulted).
    pub cache: Option<BTreeMap<String, serde_json::Value>>,
}

impl Run {
    /// What the run left behind.
    pub fn final_state(&self) -> FinalState {
        FinalState::of(&self.parsed, self.cache.clone())
    }
}

/// Checks `trace` (without its quiescence steps, which this adds) against every
/// invariant: one observed run, then a second for determinism. Known issues fail the
/// check only when `strict`. `Err` only for a trace the replay refuses.
pub fn check_trace(trace: &Trace, target: &Target, strict: bool) -> Result<CheckOutcome, TraceError> {
    let full = with_quiescence(trace);
    let checking = Options { checks: Some(strict), ..Options::default() };
    let first = guarded(&full, trace.steps.len(), target, checking)?;
    if first.violation.is_some() {
        return Ok(CheckOutcome {
            violation: first.violation,
            steps: first.steps,
            known: first.known,
            ..CheckOutcome::default()
        });
    }
    let second = guarded(&full, trace.steps.len(), target, Options::default())?;
    let violation = check_deterministic(&first.report, &second.report).err();
    Ok(CheckOutcome { violation, steps: first.steps + second.steps, known: first.known, ..CheckOutcome::default() })
}

/// What checking a trace found.
#[derive(Debug, Default)]
pub struct CheckOutcome {
    /// The first invariant broken, if any.
    pub violation: Option<Violation>,
    /// Steps run in all (both runs).
    pub steps: usize,
    /// Known issues seen (tolerated).
    pub known: BTreeMap<KnownIssue, usize>,
    /// Against upstream, for a logic that writes without a GET: the documented classes
    /// that explain the difference found (then no violation).
    pub explained: BTreeSet<UnreadClass>,
}

/// How a differential run compares the two plugins' calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Differential {
    /// The same calls, step by step.
    #[default]
    Exact,
    /// The first plugin writes without reading first (logic v3) and the second reads
    /// before each write (logic v2): the second's GETs that the first does not make are
    /// accepted, and so is a patch of the first that the API server refused with a
    /// conflict (the shortcut not holding: the GET that follows is the second's); a
    /// patch answered 404 stands for the second's GET answered 404.
    /// Everything else (results, the other calls, the final API server) must match.
    UnreadWrites,
    /// Only what the two leave behind is compared ([`crate::final_state`]): the API
    /// server's pods and each plugin's cache after the quiescence steps, not the
    /// results or calls in between; a difference is a finding unless `accept` accepts
    /// it.
    FinalState(FinalRules),
}

/// Which final-state differences [`Differential::FinalState`] accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalRules {
    /// None: the two must leave the same state.
    Equal,
    /// The first plugin writes without reading first (logic v3) and the second reads
    /// before each write (logic v2): a difference is accepted only where the pod
    /// manager's copy the first plugin wrote from was not the API server's (the one
    /// thing a write without a GET cannot know), which [`StaleCopies`] tells by
    /// running the trace again with copies that follow the API server. The faults the
    /// two cannot meet alike are left out of the trace, as for
    /// [`Differential::UnreadWrites`].
    UnreadWrites,
    /// [`FinalRules::UnreadWrites`] for logic v4 (Kubernetes 1.35, writing as v3 does)
    /// against v2 (1.27), and 1.35's own classes: a trace that meets one (init
    /// container statuses that are not the spec's; readiness of an init container) is
    /// not compared ([`crate::kubelet_135`]).
    Kubelet135,
}

impl FinalRules {
    /// Whether the first plugin writes without reading first.
    pub(crate) fn unread(self) -> bool {
        matches!(self, FinalRules::UnreadWrites | FinalRules::Kubelet135)
    }
}

/// Runs `trace` (quiescence appended) through two plugins and returns the first step
/// whose results or calls differ, as a [`Invariant::SameReport`] violation.
pub fn compare_targets(trace: &Trace, a: &Target, b: &Target) -> Result<CheckOutcome, TraceError> {
    compare_targets_with(trace, a, b, Differential::Exact)
}

/// [`compare_targets`], comparing calls as `mode` says.
pub fn compare_targets_with(
    trace: &Trace,
    a: &Target,
    b: &Target,
    mode: Differential,
) -> Result<CheckOutcome, TraceError> {
    if mode == Differential::FinalState(FinalRules::Kubelet135) && crate::kubelet_135::meets_a_135_class(trace) {
        return Ok(CheckOutcome::default());
    }
    let trace = &comparable(trace, mode);
    let full = with_quiescence(trace);
    let quiet_from = trace.steps.len();
    let options = Options { read_cache: matches!(mode, Differential::FinalState(_)), ..Options::default() };
    let first = guarded(&full, quiet_from, a, options)?;
    let second = guarded(&full, quiet_from, b, options)?;
    let mut steps = first.steps + second.steps;
    let violation = match mode {
        Differential::FinalState(rules) => {
            let (fa, fb) = (first.final_state(), second.final_state());
            let last = full.steps.len().saturating_sub(1);
            let found = differences(&fa, &fb);
            // Only a difference needs the counterfactual run.
            let stale = if rules.unread() && !found.is_empty() {
                let watched = Options { watched_copies: true, ..options };
                let (wa, wb) = (guarded(&full, quiet_from, a, watched)?, guarded(&full, quiet_from, b, watched)?);
                steps += wa.steps + wb.steps;
                Some(StaleCopies::between(&wa.final_state(), &wb.final_state()))
            } else {
                None
            };
            let accepted = |d: &Difference| match &stale {
                Some(stale) => stale.explains(d) || recreated_unseen(trace, &fa, &fb, d),
                None => false,
            };
            final_difference(&fa, &fb, last, &accepted)
        }
        _ => report_difference_with(&first.parsed, &second.parsed, mode),
    };
    Ok(CheckOutcome { violation, steps, ..CheckOutcome::default() })
}

/// `trace` as `mode` can compare it. For [`Differential::UnreadWrites`], the injected
/// faults the two plugins cannot meet alike become no-ops (a clock step of 0 ms, so the
/// step indices stay): a fault on GETs (or on any call) is used up by a GET the first
/// plugin does not make, so the calls after it would fail on one side only; and a
/// conflict on a write sends the first plugin to read and write again, where the second
/// gives up until its next sync. Faults of writes and deletes with other errors stay,
/// except in [`FinalRules::UnreadWrites`] when the trace holds calls (`hold-api`): a held
/// sync of the first plugin is one call ahead of the second's at every `complete-api`
/// (its write is its first call, the second's is its GET), so the write a fault meets
/// is another write on either side.
pub(crate) fn comparable(trace: &Trace, mode: Differential) -> Trace {
    let mut trace = trace.clone();
    let unread = match mode {
        Differential::UnreadWrites => true,
        Differential::FinalState(rules) => rules.unread(),
        Differential::Exact => false,
    };
    if unread {
        let holds = mode != Differential::UnreadWrites && trace.steps.iter().any(|s| matches!(s, Step::HoldApi));
        for step in &mut trace.steps {
            if let Step::Fail { verb, error, .. } = step
                && (holds || matches!(verb, FailVerb::Get | FailVerb::Any) || *error == FailError::Conflict)
            {
                *step = Step::AdvanceClock { ms: 0 };
            }
        }
    }
    trace
}

/// The first step where two reports differ (its result, its calls, or a fault there),
/// else a difference in the final API server.
pub fn report_difference(a: &Report, b: &Report) -> Option<Violation> {
    report_difference_with(a, b, Differential::Exact)
}

/// `b`'s calls of one step as `a`'s should be under `mode`: for
/// [`Differential::UnreadWrites`], without the GETs `a` does not make, and `a`'s
/// without the patches the API server refused with a conflict. Aligned greedily: equal
/// calls pair up; an unpaired GET of `b` or conflict patch of `a` is dropped.
fn aligned(
    a: Vec<serde_json::Value>,
    b: Vec<serde_json::Value>,
    mode: Differential,
) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    if mode != Differential::UnreadWrites {
        return (a, b);
    }
    let is_get = |c: &serde_json::Value| c["verb"] == "get";
    let is_refused_patch = |c: &serde_json::Value| c["verb"] == "patch" && c["outcome"] == "conflict";
    let (mut kept_a, mut kept_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                kept_a.push(x.clone());
                kept_b.push(y.clone());
                i += 1;
                j += 1;
            }
            (Some(x), _) if is_refused_patch(x) => i += 1,
            // A pod missing from the API server: v2's GET and v3's patch both meet the
            // 404 that ends the sync.
            (Some(x), Some(y))
                if is_get(y)
                    && x["verb"] == "patch"
                    && x["outcome"] == "not-found"
                    && y["outcome"] == "not-found"
                    && (&x["namespace"], &x["name"]) == (&y["namespace"], &y["name"]) =>
            {
                i += 1;
                j += 1;
            }
            (_, Some(y)) if is_get(y) => j += 1,
            (x, y) => {
                kept_a.extend(x.cloned());
                kept_b.extend(y.cloned());
                i += 1;
                j += 1;
            }
        }
    }
    (kept_a, kept_b)
}

/// [`report_difference`], comparing calls as `mode` says.
pub fn report_difference_with(a: &Report, b: &Report, mode: Differential) -> Option<Violation> {
    let differ = |step: usize, message: String| Some(Violation::new(Invariant::SameReport, step, message));
    let steps = a.results.len().max(b.results.len());
    let calls_of = |r: &Report, step: usize| -> Vec<serde_json::Value> {
        r.calls.iter().filter(|c| c.step == step).map(|c| serde_json::to_value(c).unwrap_or_default()).collect()
    };
    for step in 0..steps {
        let (ra, rb) = (a.results.get(step), b.results.get(step));
        if ra != rb {
            let (ra, rb) = (ra.cloned().unwrap_or_default(), rb.cloned().unwrap_or_default());
            let at = first_difference(&ra, &rb, "result").unwrap_or_default();
            return differ(step, format!("the results differ: {at}"));
        }
        let (ca, cb) = aligned(calls_of(a, step), calls_of(b, step), mode);
        if ca != cb {
            let at = first_difference(&ca.into(), &cb.into(), "calls").unwrap_or_else(|| "calls".into());
            return differ(step, format!("the calls differ: {at}"));
        }
        let fault_at = |r: &Report| r.fault.as_ref().filter(|f| f.step == step).map(|f| f.message.clone());
        if fault_at(a) != fault_at(b) {
            return differ(step, format!("faults differ: {:?} vs {:?}", fault_at(a), fault_at(b)));
        }
    }
    let (pa, pb) = (serde_json::to_value(&a.apiserver).ok()?, serde_json::to_value(&b.apiserver).ok()?);
    first_difference(&pa, &pb, "apiserver").map(|at| {
        Violation::new(Invariant::SameReport, steps.saturating_sub(1), format!("the API servers differ: {at}"))
    })
}

/// [`execute`], with a panic of native logic (a host bug or a logic bug: there is no
/// sandbox to catch it) reported as a fault.
pub(crate) fn guarded(full: &Trace, quiet_from: usize, target: &Target, options: Options) -> Result<Run, TraceError> {
    match catch_unwind(AssertUnwindSafe(|| execute(full, quiet_from, target, options))) {
        Ok(run) => run,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            Ok(Run {
                report: Vec::new(),
                parsed: Report { results: Vec::new(), calls: Vec::new(), apiserver: Vec::new(), fault: None },
                violation: Some(Violation::new(
                    Invariant::NoFault,
                    CURRENT_STEP.get(),
                    format!("the native logic panicked: {message}"),
                )),
                steps: 0,
                known: BTreeMap::new(),
                cache: None,
            })
        }
    }
}

thread_local! {
    /// The step [`execute`] is at, for naming the step of a panic.
    static CURRENT_STEP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How [`execute`] runs a trace.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Options {
    /// `Some(strict)`: check the per-step invariants after every step and quiescence at
    /// the end, stopping at the first violation.
    pub(crate) checks: Option<bool>,
    /// Read the plugin's cache for every UID the trace names after the last step (for
    /// [`Differential::FinalState`]).
    pub(crate) read_cache: bool,
    /// The counterfactual world of [`StaleCopies`]: the pod manager's copies carry the
    /// API server's status from the start, and a pod the pod manager adds takes the
    /// status the API server holds for that UID, as the kubelet's watch delivers them.
    pub(crate) watched_copies: bool,
}

/// Runs `full` (a trace whose steps from `quiet_from` on are the quiescence steps) as
/// `options` say.
fn execute(full: &Trace, quiet_from: usize, target: &Target, options: Options) -> Result<Run, TraceError> {
    let Options { checks, read_cache, watched_copies } = options;
    let watched;
    let full = if watched_copies {
        watched = with_watched_copies(full);
        &watched
    } else {
        full
    };
    let observe = checks.is_some();
    let mut stepper = Stepper::new(full, &|world| target.instantiate(world))?;
    let events: Arc<Mutex<Vec<PodEvent>>> = Arc::default();
    if observe {
        let sink = Arc::clone(&events);
        stepper.store().subscribe(Box::new(move |event| {
            sink.lock().unwrap_or_else(PoisonError::into_inner).push(event.clone());
        }));
    }
    let uids = known_uids(full);
    let semantics = WriteSemantics::of(stepper.plugin());
    let checker = if checks == Some(true) { Checker::strict() } else { Checker::new() };
    let mut checker = checker.with_semantics(semantics);
    checker.note_mirror_pairs(&stepper.pod_manager().get_uid_translations().1);
    let mut observer = CacheObserver::default();
    let mut api_statuses: BTreeMap<String, PodStatus> = full
        .apiserver
        .iter()
        .map(|pod| (pod.metadata.uid.clone().unwrap_or_default(), Write::of(pod).status))
        .collect();
    let mut violation = None;
    let mut cache = CacheView::new();
    let mut steps = 0;
    loop {
        if stepper.next_step() == quiet_from {
            remove_armed_faults(&stepper, full);
        }
        let before = stepper.calls().len();
        CURRENT_STEP.set(stepper.next_step());
        let Some(step) = stepper.step()? else { break };
        steps += 1;
        if watched_copies && let Step::PodManagerAdd { pod } = &full.steps[step] {
            take_api_status(&stepper, pod);
        }
        if let Some(fault) = stepper.fault() {
            violation =
                Some(Violation::new(Invariant::NoFault, step, format!("the plugin faulted: {}", fault.message)));
            break;
        }
        if !observe {
            continue;
        }
        let calls: Vec<Call> = stepper.calls()[before..].to_vec();
        let events = std::mem::take(&mut *events.lock().unwrap_or_else(PoisonError::into_inner));
        // A held call may belong to a queued sync or a batch's: counted as the queue's
        // (whose stale snapshots are the known issues), so only strict mode fails them.
        let from_queue = matches!(full.steps[step], Step::Sync | Step::CompleteApi { .. } | Step::ReleaseApi);
        let writes = match writes_of(step, &calls, &events, from_queue, &mut api_statuses) {
            Ok(writes) => writes,
            Err(v) => {
                violation = Some(v);
                break;
            }
        };
        cache = match observer.observe(&mut stepper, &uids, step) {
            Ok(cache) => cache,
            Err(v) => {
                violation = Some(v);
                break;
            }
        };
        checker.note_mirror_pairs(&stepper.pod_manager().get_uid_translations().1);
        if let Err(v) = checker.step(step, &calls, &writes, &cache) {
            violation = Some(v);
            break;
        }
    }
    if observe && violation.is_none() && steps == full.steps.len() && quiet_from < full.steps.len() {
        violation =
            check_quiescence(full.steps.len() - 1, &cache, stepper.pod_manager(), stepper.store(), semantics).err();
    }
    let cache = (read_cache && stepper.fault().is_none()).then(|| read_final_cache(&mut stepper, &uids)).flatten();
    let outcome = stepper.finish();
    let report = serde_json::to_vec(&outcome.report).unwrap_or_default();
    Ok(Run { report, parsed: outcome.report, violation, steps, known: checker.known_issues().clone(), cache })
}

/// `full` with each of the pod manager's starting copies carrying the status the API
/// server holds for the same UID, if it has one (only the status: a copy's identity,
/// its mirror annotation among it, stays as the trace gives it).
fn with_watched_copies(full: &Trace) -> Trace {
    let mut watched = full.clone();
    for pod in &mut watched.pod_manager {
        if let Some(api) =
            full.apiserver.iter().find(|a| a.metadata.uid.is_some() && a.metadata.uid == pod.metadata.uid)
        {
            pod.status = api.status.clone();
        }
    }
    watched
}

/// After `pod-manager-add` of `pod`: the pod manager's copy carries the status the API
/// server holds for its UID instead, if the API server has it. (An `apiserver-put`
/// reaches the copy of its UID in every world: the pod manager follows the API server.)
fn take_api_status(stepper: &Stepper<'_>, pod: &Pod) {
    if let Some(api) = pod.metadata.uid.as_deref().and_then(|uid| stepper.store().get_pod_by_uid(uid)) {
        let copy = Pod { status: api.status.clone(), ..pod.clone() };
        // k8s-openapi's pods always serialise.
        if let Ok(copy) = podstatus_backends::CompactPod::from_pod(&copy) {
            stepper.pod_manager().follow(&Arc::new(copy));
        }
    }
}

/// The statuses a step wrote, from the store's change events: each successful write
/// call of the step made one `Modified` event, in order.
/// `api_statuses` (UID -> the status the API server holds) follows every event, so that
/// each write carries the status it was written over.
fn writes_of(
    step: usize,
    calls: &[Call],
    events: &[PodEvent],
    from_queue: bool,
    api_statuses: &mut BTreeMap<String, PodStatus>,
) -> Result<Vec<Write>, Violation> {
    let mut modified = Vec::new();
    for event in events {
        // The stored pod, parsed (no stored pod fails to).
        let Ok(pod) = event.pod().pod() else { continue };
        let write = Write::of(&pod);
        let before = match event {
            PodEvent::Deleted(_) => api_statuses.remove(&write.target_uid),
            _ => api_statuses.insert(write.target_uid.clone(), write.status.clone()),
        };
        if matches!(event, PodEvent::Modified(_)) {
            modified.push(Write { from_queue, before, ..write });
        }
    }
    let mut modified = modified.into_iter();
    let mut writes = Vec::new();
    for call in calls.iter().filter(|c| matches!(c.verb, "update" | "patch") && c.outcome == "ok") {
        let Some(write) = modified.next() else {
            return Err(Violation::new(
                Invariant::WriteOwnPod,
                step,
                format!("a write to {}/{} succeeded but the API server saw no change", call.namespace, call.name),
            ));
        };
        writes.push(write);
    }
    Ok(writes)
}

/// Reads the plugin's cache for every UID the trace knows, parsing a status only when
/// it changed since the last look.
#[derive(Default)]
struct CacheObserver {
    /// UID asked -> (version, JSON, parsed) of the last answer.
    last: BTreeMap<String, (u64, String, PodStatus)>,
}

impl CacheObserver {
    fn observe(
        &mut self,
        stepper: &mut Stepper<'_>,
        uids: &BTreeSet<String>,
        step: usize,
    ) -> Result<CacheView, Violation> {
        let mut view = CacheView::new();
        for uid in uids {
            let key = stepper.pod_manager().translate_pod_uid(uid);
            let found = match stepper.plugin().get_pod_status(uid) {
                Ok(found) => found,
                Err(e @ CallError::Fault { .. }) => {
                    return Err(Violation::new(Invariant::NoFault, step, format!("reading the cache: {e}")));
                }
                Err(e) => {
                    return Err(Violation::new(
                        Invariant::NoFault,
                        step,
                        format!("get-pod-status({uid}) was refused: {e}"),
                    ));
                }
            };
            let Some(found) = found else {
                self.last.remove(uid);
                view.entry(key).or_insert(None);
                continue;
            };
            let status = match self.last.get(uid) {
                Some((version, json, status)) if *version == found.version && *json == found.status => status.clone(),
                _ => {
                    let status: PodStatus = serde_json::from_str(&found.status).map_err(|e| {
                        Violation::new(
                            Invariant::NoFault,
                            step,
                            format!("get-pod-status({uid}) returned a bad status: {e}"),
                        )
                    })?;
                    self.last.insert(uid.clone(), (found.version, found.status, status.clone()));
                    status
                }
            };
            view.insert(key, Some(Cached { version: found.version, status }));
        }
        Ok(view)
    }
}

/// Every UID the trace names anywhere.
pub fn known_uids(trace: &Trace) -> BTreeSet<String> {
    let mut uids = BTreeSet::new();
    let add_pod = |pod: &Pod, uids: &mut BTreeSet<String>| {
        if let Some(uid) = &pod.metadata.uid {
            uids.insert(uid.clone());
        }
    };
    for pod in trace.apiserver.iter().chain(&trace.pod_manager) {
        add_pod(pod, &mut uids);
    }
    for step in &trace.steps {
        match step {
            Step::SetPodStatus { pod, .. } | Step::TerminatePod { pod } => match pod {
                PodRef::Uid(uid) => {
                    uids.insert(uid.clone());
                }
                PodRef::Object(json) => {
                    if let Ok(pod) = serde_json::from_str::<Pod>(json) {
                        add_pod(&pod, &mut uids);
                    }
                }
            },
            Step::PodManagerAdd { pod } | Step::ApiserverPut { pod } => add_pod(pod, &mut uids),
            Step::SetContainerReadiness { uid, .. }
            | Step::GetPodStatus { uid }
            | Step::PodManagerRemove { uid }
            | Step::SetContainerStartup { uid, .. } => {
                uids.insert(uid.clone());
            }
            Step::RemoveOrphanedStatuses { keep } => uids.extend(keep.iter().cloned()),
            _ => {}
        }
    }
    uids
}

/// Removes the faults still armed, by using them up with calls of their verb on an
/// object that does not exist, then forgetting those calls. The recorder's rule queue
/// is worked out from the trace's `fail` steps and the calls made so far, exactly as
/// the recorder consumes it.
fn remove_armed_faults(stepper: &Stepper<'_>, full: &Trace) {
    struct Rule {
        verb: FailVerb,
        remaining: u64,
    }
    let mut rules: Vec<Rule> = Vec::new();
    let calls = stepper.calls();
    let mut next_call = 0;
    for (i, step) in full.steps.iter().enumerate().take(stepper.next_step()) {
        if let Step::Fail { verb, times, .. } = step
            && *times > 0
        {
            rules.push(Rule { verb: *verb, remaining: *times });
        }
        while next_call < calls.len() && calls[next_call].step == i {
            let verb = match calls[next_call].verb {
                "get" => FailVerb::Get,
                "delete" => FailVerb::Delete,
                _ => FailVerb::Write,
            };
            if let Some(index) = rules.iter().position(|r| r.verb == verb || r.verb == FailVerb::Any) {
                rules[index].remaining -= 1;
                if rules[index].remaining == 0 {
                    rules.remove(index);
                }
            }
            next_call += 1;
        }
    }
    let api = stepper.recorder();
    const NOWHERE: &str = "\u{0}podstatus-fuzz";
    let mut budget: u64 = 1_000_000;
    for rule in rules {
        for _ in 0..rule.remaining.min(budget) {
            budget -= 1;
            match rule.verb {
                FailVerb::Get | FailVerb::Any => drop(api.get_pod(NOWHERE, NOWHERE)),
                FailVerb::Write => drop(api.update_pod_status(StatusUpdate {
                    namespace: NOWHERE.into(),
                    name: NOWHERE.into(),
                    ..Default::default()
                })),
                FailVerb::Delete => drop(api.delete_pod(NOWHERE, NOWHERE, &DeleteOptions::default())),
            }
        }
    }
    api.take_calls();
}
