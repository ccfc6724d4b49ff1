//! The thread-safe handle agents use, and the scheduler that drains the sync queue and
//! runs the periodic batch sync.
//!
//! One plugin instance is entered by one thread at a time (a mutex); the scheduler
//! waits on the queue without holding it, so callers and the scheduler interleave call
//! by call, as the seed's lock and sync goroutine do.
//!
//! A 0.2.0 plugin is entered only to compute: the scheduler plans a request's or a
//! batch's syncs, and API-call workers make each sync's calls holding nothing and
//! resume it under the lock for a moment ([`crate::sync_runner`]), so many pods' syncs
//! overlap and no caller waits for the network. A 0.1.x plugin calls the API server
//! inside `sync-pod`, while it holds the mutex, so anything such a call waits for is
//! waited for by every other thread too. For those the scheduler waits for the API
//! client's rate limit *before* it takes the lock ([`SchedulerConfig::admission`]); the
//! client itself keeps the waits inside short (see `podstatus_agent::kube_client`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::bindings::{BatchReport, CachedStatus, Contract, SyncOutcome, SyncRequest, UpdateOutcome};
use crate::plugin::split_sync::{DEFAULT_BATCH_SLICE_PODS, plan_in_slices};
use crate::plugin::{Plugin, Result};
use crate::swap::{SwapError, SwapReport, load_checked, move_changes};
use crate::sync_runner::{PluginHost, SyncRunner, run_planned};
use podstatus_backends::host_view::Accepted;
use podstatus_backends::{HostView, NodeReport, SyncQueue, Wait};

/// Change sets moved before the pause at most, during a swap.
const PRECOPY_ROUNDS: usize = 4;
/// A change set this small moves during the pause without another round first.
const PRECOPY_DONE_BYTES: usize = 64 * 1024;

/// The seed's batch sync period.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(10);

/// API calls one `sync-pod` makes at most: the GET of the pod, the status write, and the
/// DELETE of a terminated pod whose resources are reclaimed (without the third token, a
/// deletion right after a write would be throttled and wait for the next batch).
pub const SYNC_POD_CALLS: u32 = 3;
/// What the scheduler asks the admission for before a batch sync, whose calls it cannot
/// count beforehand: one pod's sync. Not more: a batch usually writes nothing, and while
/// the scheduler waits here the queue waits too (waiting for a full bucket held every
/// queued write up to a second at a busy churn). A batch that runs out of tokens has
/// its remaining writes refused at once (see `KubeClientConfig::throttle_wait`); the
/// next batch takes them.
pub const SYNC_BATCH_CALLS: u32 = SYNC_POD_CALLS;
/// The longest the scheduler waits for admission before a sync; then it syncs anyway
/// (a throttled write fails fast, its status stays cached, and a later sync retries).
/// Short, so that batch syncs and shutdown are not held up.
pub const ADMISSION_WAIT_MAX: Duration = Duration::from_secs(1);

/// Waits, outside any lock, until a piece of work is likely to get the API calls it
/// needs. The scheduler calls it before it takes the plugin lock (see
/// [`SchedulerConfig::admission`]).
pub trait Admission: Send + Sync {
    /// Waits until `calls` calls could start now (at most as many as can ever be ready
    /// at once: `u32::MAX` asks for a full bucket), or until `deadline`. Takes nothing:
    /// the calls themselves take their tokens. Returns whether they are ready.
    fn wait_ready(&self, calls: u32, deadline: Instant) -> bool;
}

/// API calls a 0.2.0 plugin's syncs have in flight at most, by default: at 20 ms a
/// call, 64 carry over 3,000 calls a second.
pub const DEFAULT_MAX_CALLS_IN_FLIGHT: usize = 64;

/// How long a 0.2.0 plugin's sync may wait for the API client's rate limit before its
/// call, by default: the kubelet's client waits for its token; this bounds it as the
/// call timeout does.
pub const DEFAULT_CALL_PATIENCE: Duration = Duration::from_secs(5);

/// The longest a swap waits for a 0.2.0 plugin's syncs in flight to finish before it
/// gives up (the old plugin keeps serving).
pub const SWAP_DRAIN_MAX: Duration = Duration::from_secs(10);

/// How the scheduler runs.
#[derive(Clone)]
pub struct SchedulerConfig {
    /// Time between batch syncs.
    pub sync_period: Duration,
    /// API calls a 0.2.0 plugin's syncs have in flight at most (worker threads).
    pub max_calls_in_flight: usize,
    /// How long one of those calls may wait for a rate-limit token (bounded by the
    /// client's call timeout too).
    pub call_patience: Duration,
    /// Pods a 0.2.0 plugin's batch sync decides per call: the plugin lock is taken
    /// for one slice at a time, so callers wait behind a slice, not a whole batch.
    pub batch_slice_pods: u32,
    /// Waited on, without the plugin lock, before each sync (typically the API client's
    /// rate limiter, [`podstatus_backends::KubeApiServer::rate_limiter`]);
    /// `None` syncs at once (the in-memory API server needs no pacing).
    pub admission: Option<Arc<dyn Admission>>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            sync_period: DEFAULT_SYNC_PERIOD,
            max_calls_in_flight: DEFAULT_MAX_CALLS_IN_FLIGHT,
            call_patience: DEFAULT_CALL_PATIENCE,
            batch_slice_pods: DEFAULT_BATCH_SLICE_PODS,
            admission: None,
        }
    }
}

impl std::fmt::Debug for SchedulerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerConfig")
            .field("sync_period", &self.sync_period)
            .field("max_calls_in_flight", &self.max_calls_in_flight)
            .field("call_patience", &self.call_patience)
            .field("batch_slice_pods", &self.batch_slice_pods)
            .field("admission", &self.admission.as_ref().map(|_| "..."))
            .finish()
    }
}

struct Shared {
    plugin: Mutex<Box<dyn Plugin>>,
    queue: Arc<SyncQueue>,
    stopping: AtomicBool,
    /// See [`SchedulerConfig::admission`]; shared with `Scheduler::shutdown`.
    admission: Option<Arc<dyn Admission>>,
    /// Fed with what the node reports and what the plugin accepts (see
    /// [`ManagerHandle::observe`]).
    host_view: OnceLock<Arc<HostView>>,
    /// A 0.2.0 plugin's syncs in flight.
    runner: SyncRunner,
    /// Callers of the Manager operations waiting for the plugin lock: sync steps give
    /// way to them (see [`Shared::plugin_for_steps`]).
    callers_waiting: AtomicUsize,
    /// Taken by a sync step (or a plan) before the plugin lock and kept while it holds
    /// it: at most one step contends with the callers for the plugin at a time (see
    /// [`Shared::plugin_for_steps`]).
    step_turn: Mutex<()>,
    /// See [`SchedulerConfig::batch_slice_pods`].
    batch_slice_pods: u32,
    /// See [`SchedulerConfig::sync_period`].
    sync_period: Duration,
    /// Where the last periodic batch stopped before its end (see `batch_sync`).
    batch_resume: Mutex<Option<String>>,
    /// Whether the running plugin plans its syncs (0.2.0): its requests are taken off
    /// the queue newest first once it backs up ([`QUEUE_LIFO_AFTER`]); a 0.1.x plugin's
    /// are taken in order, as before.
    split_syncs: AtomicBool,
}

/// How long the oldest queued request may have waited before the scheduler takes the
/// newest first (see [`SyncQueue::pop_until_adaptive`]): a queue that backs up longer
/// than this is past the client's budget.
pub const QUEUE_LIFO_AFTER: Duration = Duration::from_secs(1);

/// The longest a sync step gives way to waiting callers before it takes its turn.
const STEP_YIELD_MAX: Duration = Duration::from_millis(2);

impl PluginHost for Shared {
    fn plugin(&self) -> StepGuard<'_> {
        self.plugin_for_steps()
    }

    fn runner(&self) -> &SyncRunner {
        &self.runner
    }
}

impl Shared {
    fn plugin(&self) -> MutexGuard<'_, Box<dyn Plugin>> {
        // A panic while the lock was held happened in host code between plugin calls;
        // the plugin itself reports faults as values, so its state is still coherent.
        self.plugin.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lock for a caller of a Manager operation: counted as waiting until it has
    /// it, so that the syncs' steps (dozens of workers' resumes) let it go first.
    fn plugin_for_caller(&self) -> MutexGuard<'_, Box<dyn Plugin>> {
        self.callers_waiting.fetch_add(1, Ordering::SeqCst);
        let plugin = self.plugin();
        self.callers_waiting.fetch_sub(1, Ordering::SeqCst);
        plugin
    }

    /// The lock for a sync's step or a plan. A mutex is not fair: with dozens of API
    /// workers resuming at once, a caller that found them all blocked on the plugin
    /// lock would wait behind several steps. So steps take turns first (one at a time
    /// contends for the plugin, the others wait for their turn without touching it),
    /// and the one whose turn it is gives way while callers wait, at most
    /// [`STEP_YIELD_MAX`], so steps are never starved. A caller then waits for at most
    /// the step or call that holds the plugin.
    fn plugin_for_steps(&self) -> StepGuard<'_> {
        let turn = self.step_turn.lock().unwrap_or_else(|p| p.into_inner());
        let until = Instant::now() + STEP_YIELD_MAX;
        while self.callers_waiting.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_micros(50));
        }
        StepGuard { plugin: self.plugin(), _turn: turn }
    }

    /// Waits (without the plugin lock) until `calls` API calls may go, at most until
    /// `deadline` and [`ADMISSION_WAIT_MAX`] from now.
    fn admit(&self, calls: u32, deadline: Instant) -> bool {
        let Some(admission) = &self.admission else { return true };
        let deadline = deadline.min(Instant::now() + ADMISSION_WAIT_MAX);
        let admitted = admission.wait_ready(calls, deadline);
        if !admitted {
            tracing::debug!(calls, "API calls not admitted in time");
        }
        admitted
    }

    /// Waits for a request's admission, at most until `deadline`; whether to shed it.
    /// With the queue backed up past the client's budget, a 0.2.0 plugin's request
    /// whose calls the client does not admit at once is shed: planned, and its syncs
    /// dropped unstarted, its status left unwritten for a later request or the batch
    /// sync (which writes each pod's latest status once), as a 0.1.x plugin's
    /// fail-fast client left it. Waiting instead lines every request up behind the
    /// backlog: measured at twice the budget, the median status then waited 15 s
    /// instead of 2 (README, "Figures").
    fn admit_request(&self, deadline: Instant) -> bool {
        let backed_up = self.split_syncs.load(Ordering::SeqCst) && self.queue.backed_up(QUEUE_LIFO_AFTER);
        let deadline = if backed_up { Instant::now() } else { deadline };
        let admitted = self.admit(SYNC_POD_CALLS, deadline);
        backed_up && !admitted
    }
}

/// The plugin locked for a sync step or a plan, with the steps' turn: the plugin is
/// unlocked first (fields drop in order), so that the next step, given its turn, sees
/// the callers that waited meanwhile and lets them go first.
pub(crate) struct StepGuard<'a> {
    plugin: MutexGuard<'a, Box<dyn Plugin>>,
    _turn: MutexGuard<'a, ()>,
}

impl std::ops::Deref for StepGuard<'_> {
    type Target = Box<dyn Plugin>;
    fn deref(&self) -> &Self::Target {
        &self.plugin
    }
}

impl std::ops::DerefMut for StepGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.plugin
    }
}

/// The status manager as other threads see it: cheap to clone, every Manager operation
/// callable from any thread.
///
/// Start one over a plugin and the world its imports reach, hand it statuses, shut it
/// down (which writes what is still queued):
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use podstatus_backends::{FixedDeletionSafety, MemoryApiServer, PodManager, SyncQueue, SystemClock};
/// use podstatus_runtime::{ManagerHandle, PluginRuntime, RuntimeConfig, SchedulerConfig, World};
/// use podstatus_plugins::PODSTATUS_V1;
///
/// let world = World {
///     api_server: Arc::new(MemoryApiServer::new()),
///     pod_manager: Arc::new(PodManager::new()),
///     deletion_safety: Arc::new(FixedDeletionSafety::new(true)),
///     clock: Arc::new(SystemClock),
///     queue: Arc::new(SyncQueue::new(1000)),
/// };
/// let runtime = PluginRuntime::new(&RuntimeConfig::default())?;
/// let plugin = runtime.load(PODSTATUS_V1)?.instantiate(world.clone())?;
/// let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), SchedulerConfig::default());
///
/// let pod = r#"{"metadata": {"name": "web", "namespace": "default", "uid": "u1"},
///               "spec": {"containers": [{"name": "app"}]}}"#;
/// manager.set_pod_status(pod, r#"{"phase": "Running"}"#)?;
/// let cached = manager.get_pod_status("u1")?.expect("cached");
/// assert_eq!(cached.version, 1);
///
/// let unwritten = scheduler.shutdown(Duration::from_secs(5));
/// assert_eq!(unwritten, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ManagerHandle {
    shared: Arc<Shared>,
}

/// The running scheduler; dropping it stops the thread (without flushing).
pub struct Scheduler {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl ManagerHandle {
    /// Starts the scheduler over `plugin`, whose sync requests arrive in `queue` (the queue
    /// of the plugin's world), and returns the handle and the scheduler.
    pub fn start(
        plugin: Box<dyn Plugin>,
        queue: Arc<SyncQueue>,
        config: SchedulerConfig,
    ) -> (ManagerHandle, Scheduler) {
        let split_syncs = plugin.contract().has_split_syncs();
        let shared = Arc::new(Shared {
            plugin: Mutex::new(plugin),
            queue,
            stopping: AtomicBool::new(false),
            admission: config.admission.clone(),
            host_view: OnceLock::new(),
            runner: SyncRunner::new(config.max_calls_in_flight, config.call_patience),
            callers_waiting: AtomicUsize::new(0),
            step_turn: Mutex::new(()),
            sync_period: config.sync_period,
            batch_resume: Mutex::new(None),
            split_syncs: AtomicBool::new(split_syncs),
            batch_slice_pods: config.batch_slice_pods,
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("podstatus-sync".into())
            .spawn(move || run_scheduler(&worker, &config))
            .expect("spawning the scheduler thread");
        (ManagerHandle { shared: Arc::clone(&shared) }, Scheduler { shared, thread: Some(thread) })
    }
}

fn run_scheduler(shared: &Arc<Shared>, config: &SchedulerConfig) {
    let mut next_batch = Instant::now() + config.sync_period;
    while !shared.stopping.load(Ordering::SeqCst) {
        let popped = if shared.split_syncs.load(Ordering::SeqCst) {
            shared.queue.pop_until_adaptive(next_batch, QUEUE_LIFO_AFTER)
        } else {
            shared.queue.pop_until(next_batch)
        };
        match popped {
            Wait::Request(request) => handle_request(shared, &request, next_batch),
            Wait::TimedOut => {
                batch_sync(shared, Instant::now() + config.sync_period, Batch::Periodic);
                next_batch = Instant::now() + config.sync_period;
            }
            Wait::Closed => break,
        }
    }
}

/// Plans a 0.2.0 plugin's batch sync slice by slice (see
/// [`SchedulerConfig::batch_slice_pods`]), taking the plugin lock for one slice at a
/// time and giving way to waiting callers first, and starts each slice's syncs as soon
/// as it is planned; `between` runs after each slice but the last. Returns the plan's
/// report, summed over the slices.
fn run_batch_in_slices(
    shared: &Arc<Shared>,
    after: Option<String>,
    mut between: impl FnMut() -> bool,
) -> Result<(BatchReport, Option<String>)> {
    plan_in_slices(
        shared.batch_slice_pods,
        after,
        |slice| shared.plugin_for_steps().plan_sync_batch(slice),
        |syncs, more| {
            run_planned(shared, syncs);
            !more || between()
        },
    )
}

/// What the scheduler does with a request taken off the queue: a 0.2.0 plugin plans its
/// syncs, which run overlapped; a 0.1.x plugin syncs it under the lock, once the API
/// client is likely to admit its calls (waiting at most until `deadline`).
///
/// Either way the scheduler first waits (holding nothing) until the API client is
/// likely to admit the calls: planning syncs faster than the budget carries only plans
/// calls that are throttled (a 0.2.0 sync whose token would come after its call timeout
/// fails at once, and logic v2's next request plans the same pods again).
fn handle_request(shared: &Arc<Shared>, request: &SyncRequest, deadline: Instant) {
    let shed = shared.admit_request(deadline);
    let _gate = shared.runner.gate();
    plan_request(shared, request, shed);
}

/// [`handle_request`] once admitted, with the runner's gate held.
fn plan_request(shared: &Arc<Shared>, request: &SyncRequest, shed: bool) {
    let mut plugin = shared.plugin_for_steps();
    if !plugin.contract().has_split_syncs() {
        log_sync(request, plugin.sync_pod(request));
        return;
    }
    let planned = plugin.plan_sync_pod(request);
    drop(plugin);
    let mut syncs = match planned {
        Ok(syncs) => syncs,
        Err(e) => return tracing::error!(pod = %request.pod_uid, version = request.version, "sync: {e}"),
    };
    // A shed request starts none of its syncs. A pass (logic v2, v3) plans every
    // unwritten pod; past the client's budget only what it admits now starts, and the
    // others are dropped unstarted and stay unwritten for the next pass, as 1.27's
    // throttled writes do: started, they would line up behind the rate limit and hold
    // every later change of theirs behind them.
    let admitted = if shed { 0 } else { admitted_syncs(shared, syncs.len()) };
    if admitted < syncs.len() {
        let mut plugin = shared.plugin_for_steps();
        for sync in syncs.drain(admitted..) {
            if let Err(e) = plugin.drop_sync(sync.id) {
                tracing::warn!(pod = %sync.pod_uid, sync = sync.id, "dropping a sync past the budget: {e}");
            }
        }
    }
    if shed {
        tracing::debug!(pod = %request.pod_uid, version = request.version, "shed past the client's budget");
    }
    run_planned(shared, syncs);
}

/// How many of `planned` syncs of one request the client admits now: the first always
/// (the request was admitted), each further one while the bucket holds its calls too.
/// Asked without the plugin lock; within the budget one question answers it.
fn admitted_syncs(shared: &Shared, planned: usize) -> usize {
    let Some(admission) = &shared.admission else { return planned };
    let now = Instant::now();
    let ready = |syncs: usize| {
        admission.wait_ready(u32::try_from(syncs).unwrap_or(u32::MAX).saturating_mul(PASS_SYNC_CALLS), now)
    };
    if planned <= 1 || ready(planned) {
        return planned;
    }
    (1..planned).find(|&n| !ready(n + 1)).unwrap_or(planned)
}

/// The API calls a pass counts per pod it writes: the read and the write.
const PASS_SYNC_CALLS: u32 = 2;

/// One periodic batch sync (`what` names it in the log), as [`handle_request`] does a
/// request.
fn batch_sync(shared: &Arc<Shared>, deadline: Instant, batch: Batch) {
    let what = match batch {
        Batch::Periodic => "batch sync",
        Batch::Final => "final batch sync",
    };
    shared.admit(SYNC_BATCH_CALLS, deadline);
    let _gate = shared.runner.gate();
    let mut plugin = shared.plugin();
    if !plugin.contract().has_split_syncs() {
        if let Err(e) = plugin.sync_batch() {
            tracing::error!("{what}: {e}");
        }
        return;
    }
    drop(plugin);
    // Requests queued meanwhile are planned between the slices, one per gap: a batch
    // over thousands of pods must not hold up the writes of the statuses that just
    // changed, and a queue that never empties (past the client's budget) must not
    // hold up the batch either.
    //
    // Past the client's budget the batch is a share of it, not all of it: each slice
    // waits for its calls' admission (planning faster only lines syncs up behind the
    // rate limit, where the statuses that change meanwhile wait behind them), and a
    // batch that has run for a fifth of the sync period stops, to go on from the same pod
    // next period. So the writes of what just changed keep going during a batch over
    // a long backlog, and every pod still comes round.
    let started = Instant::now();
    let time_box = match batch {
        Batch::Periodic => shared.sync_period / 5,
        Batch::Final => Duration::MAX,
    };
    let between = || {
        if let Some(request) = shared.queue.pop_adaptive(QUEUE_LIFO_AFTER) {
            let shed = shared.admit_request(deadline);
            plan_request(shared, &request, shed);
        }
        if started.elapsed() >= time_box {
            return false;
        }
        shared.admit(shared.batch_slice_pods.saturating_mul(SYNC_POD_CALLS), deadline);
        true
    };
    let resume = shared.batch_resume.lock().unwrap_or_else(|p| p.into_inner()).take();
    let after = if batch == Batch::Final { None } else { resume };
    match run_batch_in_slices(shared, after, between) {
        Ok((report, resume)) => {
            tracing::debug!(?report, resume = resume.is_some(), "{what} planned");
            *shared.batch_resume.lock().unwrap_or_else(|p| p.into_inner()) = resume;
        }
        Err(e) => tracing::error!("{what}: {e}"),
    }
}

/// Which batch [`batch_sync`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Batch {
    /// The scheduler's, every sync period: time-boxed, resumed where the last stopped.
    Periodic,
    /// Shutdown's last one: whole.
    Final,
}

fn log_sync(request: &SyncRequest, outcome: Result<SyncOutcome>) {
    match outcome {
        Ok(outcome) => tracing::debug!(pod = %request.pod_uid, version = request.version, ?outcome, "synced"),
        Err(e) => tracing::error!(pod = %request.pod_uid, version = request.version, "sync: {e}"),
    }
}

impl Scheduler {
    /// Stops taking work, hands every queued request to the plugin (until `timeout`),
    /// runs one last batch sync if time is left, lets the syncs in flight finish, and
    /// joins the threads. Returns how many queued requests and syncs were left
    /// unhandled.
    pub fn shutdown(mut self, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.queue.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let left = loop {
            if Instant::now() >= deadline {
                break self.shared.queue.len();
            }
            let Some(request) = self.shared.queue.pop() else {
                // Everything queued was handed over: the last batch once its syncs ran.
                self.shared.runner.wait_idle(deadline);
                if Instant::now() < deadline {
                    batch_sync(&self.shared, deadline, Batch::Final);
                }
                break 0;
            };
            handle_request(&self.shared, &request, deadline);
        };
        self.shared.runner.wait_idle(deadline);
        let in_flight = self.shared.runner.pending();
        self.shared.runner.stop();
        left + in_flight
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.queue.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.shared.runner.stop();
    }
}

impl ManagerHandle {
    /// Feeds `view` from now on, for the reach guard and the final check: every status
    /// and termination the node reports, before the plugin sees it, and every status
    /// the plugin accepts (as its `get-pod-status` gives it right after accepting,
    /// while no other call can come in between). A handle observes one view: later
    /// calls are ignored (returns whether this one took).
    pub fn observe(&self, view: Arc<HostView>) -> bool {
        self.shared.host_view.set(view).is_ok()
    }

    /// The view this handle feeds, if any.
    pub fn host_view(&self) -> Option<&Arc<HostView>> {
        self.shared.host_view.get()
    }

    /// Records, when observing, what the plugin now holds for `uid` after it accepted
    /// a change (`outcome`). A plugin that accepted a status and holds none is held to
    /// `reported` (the status the node handed it, as version 0) when there is one.
    fn note_accepted(
        &self,
        plugin: &mut dyn Plugin,
        uid: Option<&str>,
        reported: Option<&str>,
        outcome: &Result<UpdateOutcome>,
    ) {
        let (Some(view), Some(uid)) = (self.shared.host_view.get(), uid) else { return };
        if !matches!(outcome, Ok(UpdateOutcome::Queued | UpdateOutcome::QueueFull)) {
            return;
        }
        match plugin.accepted_status(uid) {
            Ok(Some(cached)) => view.accept(uid, Accepted { version: cached.version, status: cached.status }),
            // The plugin accepted a status it does not hold: the final check will show it.
            Ok(None) => {
                tracing::warn!(pod = %uid, "the plugin accepted a status and does not hold it");
                if let Some(status) = reported {
                    view.accept(uid, Accepted { version: 0, status: status.to_owned() });
                }
            }
            Err(e) => tracing::warn!(pod = %uid, "reading back an accepted status: {e}"),
        }
    }

    /// The cached status of a pod.
    pub fn get_pod_status(&self, uid: &str) -> Result<Option<CachedStatus>> {
        self.shared.plugin_for_caller().get_pod_status(uid)
    }

    /// Caches a pod's status and queues its write when it changed.
    pub fn set_pod_status(&self, pod: &str, status: &str) -> Result<UpdateOutcome> {
        // Parsed before the plugin is locked: other callers need not wait for it.
        let view = self.host_view();
        let report = view.and_then(|_| NodeReport::status(pod, status));
        let mut plugin = self.shared.plugin_for_caller();
        let uid = view.zip(report).and_then(|(view, report)| view.record(report));
        let outcome = plugin.set_pod_status(pod, status);
        self.note_accepted(plugin.as_mut(), uid.as_deref(), Some(status), &outcome);
        outcome
    }

    /// Sets a container's readiness.
    pub fn set_container_readiness(&self, pod_uid: &str, container_id: &str, ready: bool) -> Result<UpdateOutcome> {
        let mut plugin = self.shared.plugin_for_caller();
        let outcome = plugin.set_container_readiness(pod_uid, container_id, ready);
        self.note_accepted(plugin.as_mut(), Some(pod_uid), None, &outcome);
        outcome
    }

    /// Sets whether a container passed its startup probe (plugins of contract 0.1.1
    /// and later; see [`crate::Plugin::set_container_startup`]).
    pub fn set_container_startup(&self, pod_uid: &str, container_id: &str, started: bool) -> Result<UpdateOutcome> {
        let mut plugin = self.shared.plugin_for_caller();
        let outcome = plugin.set_container_startup(pod_uid, container_id, started);
        self.note_accepted(plugin.as_mut(), Some(pod_uid), None, &outcome);
        outcome
    }

    /// Marks every container of the pod terminated.
    pub fn terminate_pod(&self, pod: &str) -> Result<UpdateOutcome> {
        let view = self.host_view();
        let report = view.and_then(|_| NodeReport::termination(pod));
        let mut plugin = self.shared.plugin_for_caller();
        let uid = view.zip(report).and_then(|(view, report)| view.record(report));
        let outcome = plugin.terminate_pod(pod);
        self.note_accepted(plugin.as_mut(), uid.as_deref(), None, &outcome);
        outcome
    }

    /// Drops the statuses of pods not in `keep` (and, when observing, the view's
    /// records of them).
    pub fn remove_orphaned_statuses(&self, keep: &[String]) -> Result<u32> {
        let mut plugin = self.shared.plugin_for_caller();
        if let Some(view) = self.host_view() {
            view.retain(keep);
        }
        plugin.remove_orphaned_statuses(keep)
    }

    /// Runs a batch sync now, outside the schedule. A 0.2.0 plugin's batch is planned
    /// and its syncs run overlapped, by the API-call workers (which wait for their
    /// rate-limit tokens like any client); it waits for syncs in flight before planning
    /// and returns once none is (each wait at most [`SWAP_DRAIN_MAX`]). The report is the plan's: its `failed` counts
    /// the pods the batch skipped while deciding, not syncs that then failed.
    pub fn sync_batch(&self) -> Result<BatchReport> {
        let gate = self.shared.runner.gate();
        if !self.shared.plugin().contract().has_split_syncs() {
            return self.shared.plugin().sync_batch();
        }
        // Syncs still in flight (an earlier batch's) finish first: a batch planned over
        // them plans again what they are writing, and each such sync would cost a GET.
        self.shared.runner.wait_idle(Instant::now() + SWAP_DRAIN_MAX);
        let (report, _) = run_batch_in_slices(&self.shared, None, || true)?;
        drop(gate);
        self.shared.runner.wait_idle(Instant::now() + SWAP_DRAIN_MAX);
        Ok(report)
    }

    /// Requests waiting in the sync queue.
    pub fn queue_len(&self) -> usize {
        self.shared.queue.len()
    }

    /// The contract the running plugin implements.
    pub fn contract(&self) -> Contract {
        self.shared.plugin().contract()
    }

    /// Replaces the running plugin with `new` (already compiled and instantiated:
    /// nothing slow happens while calls wait), carrying its state over: the bulk moves
    /// while the old plugin keeps serving, then calls are held while what changed since
    /// moves and the new plugin takes over. Calls that arrive meanwhile wait and go to
    /// the new plugin; none is lost or runs twice. On any failure the old plugin keeps
    /// serving and the error says why. A 0.2.0 plugin's syncs in flight finish on it
    /// first (none is planned meanwhile), so none is lost or runs twice.
    pub fn swap(&self, mut new: Box<dyn Plugin>) -> std::result::Result<SwapReport, SwapError> {
        let start = Instant::now();
        // The bulk: saving it is one call like any other (others wait only for it);
        // loading it into the new plugin happens while the old one serves.
        let state = self.shared.plugin().save_state().map_err(SwapError::Source)?;
        let save = start.elapsed();
        load_checked(new.as_mut(), &state)?;
        // Pre-copy, as live migration does: while moving the last change set took
        // long enough for much to change again, move the next one without pausing.
        for _ in 0..PRECOPY_ROUNDS {
            let changes = self.shared.plugin().save_state_changes().map_err(SwapError::Source)?;
            crate::swap::apply_checked(new.as_mut(), &changes)?;
            if changes.len() <= PRECOPY_DONE_BYTES {
                break;
            }
        }
        let bulk = start.elapsed();

        // A 0.2.0 plugin's syncs in flight are not state: no new one is planned from
        // here on, and those in flight finish on the old plugin (calls keep being served
        // meanwhile). Requests still queued are in the state and go to the new plugin.
        let _gate = self.shared.runner.gate();
        if !self.shared.runner.wait_idle(Instant::now() + SWAP_DRAIN_MAX) {
            return Err(SwapError::Busy { pending: self.shared.runner.pending(), waited: SWAP_DRAIN_MAX });
        }
        let mut running = self.shared.plugin();
        let paused = Instant::now();
        let changes_bytes = move_changes(running.as_mut(), new.as_mut())?;
        // The swap's checks made the new plugin keep its changes for a follower: none.
        new.stop_following();
        let from = running.contract();
        let to = new.contract();
        self.shared.split_syncs.store(to.has_split_syncs(), Ordering::SeqCst);
        // A cursor into the old plugin's batch means nothing to the new one.
        *self.shared.batch_resume.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let old = std::mem::replace(&mut *running, new);
        let pause = paused.elapsed();
        drop(running);
        drop(old);
        let report =
            SwapReport { from, to, state_bytes: state.len(), changes_bytes, save, bulk, pause, total: start.elapsed() };
        tracing::info!(?report, "plugin swapped");
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::NativePlugin;
    use crate::world::World;
    use podstatus_backends::{FixedDeletionSafety, MemoryApiServer, PodManager, SystemClock};

    fn shared() -> (Arc<Shared>, Scheduler) {
        let queue = Arc::new(SyncQueue::new(10));
        let world = World {
            api_server: Arc::new(MemoryApiServer::new()),
            pod_manager: Arc::new(PodManager::new()),
            deletion_safety: Arc::new(FixedDeletionSafety::new(true)),
            clock: Arc::new(SystemClock),
            queue: queue.clone(),
        };
        let config = SchedulerConfig { sync_period: Duration::from_secs(3600), ..SchedulerConfig::default() };
        let (handle, scheduler) =
            ManagerHandle::start(Box::new(NativePlugin::new(world, crate::LogicVersion::V1)), queue, config);
        // The scheduler thread only waits for the queue; the test drives the locks.
        (handle.shared, scheduler)
    }

    /// Eight sync steps wait for the plugin while one holds it; a caller comes along
    /// after them. The caller gets the plugin next (at most one step may slip in,
    /// should the caller be slow to wake), not behind the eight.
    #[test]
    fn a_caller_waits_for_the_step_that_holds_the_plugin_not_for_every_step_waiting() {
        let (shared, _scheduler) = shared();
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = shared.plugin_for_steps();
        let steps: Vec<_> = (0..8)
            .map(|_| {
                let (shared, order) = (Arc::clone(&shared), Arc::clone(&order));
                std::thread::spawn(move || {
                    let _plugin = shared.plugin_for_steps();
                    order.lock().unwrap().push("step");
                    std::thread::sleep(Duration::from_millis(2));
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let caller = {
            let (shared, order) = (Arc::clone(&shared), Arc::clone(&order));
            std::thread::spawn(move || {
                let _plugin = shared.plugin_for_caller();
                order.lock().unwrap().push("caller");
            })
        };
        while shared.callers_waiting.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(held);
        caller.join().unwrap();
        steps.into_iter().for_each(|s| s.join().unwrap());
        let order = order.lock().unwrap();
        let position = order.iter().position(|who| *who == "caller").unwrap();
        assert!(position <= 1, "the caller came after {position} steps: {order:?}");
        assert_eq!(order.len(), 9);
    }
}
